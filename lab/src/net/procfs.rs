//! What the host says about a process the soak, the benches and the
//! reliability tests watch (its memory and CPU time, from /proc), and how
//! many warnings the kernel has logged (dmesg). Each reads 0 when the
//! source cannot be read: these feed figures and before/after comparisons,
//! never a decision that must fail closed.

use std::process::Command;

/// Resident set size of `pid` in KiB (VmRSS).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

/// User plus system CPU time of `pid` in clock ticks (USER_HZ, 100 a
/// second on Linux).
pub fn cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command name, which is in parentheses and
            // may itself hold spaces: utime and stime are the 12th and 13th.
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

/// Lines the kernel has logged at warning level or worse so far.
pub fn kernel_warnings() -> usize {
    Command::new("dmesg")
        .args(["--level=emerg,alert,crit,err,warn"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test process has memory and, once it has computed for a
    /// while, CPU time; a pid that cannot exist reads 0.
    #[test]
    fn reads_this_process_and_zero_for_no_process() {
        let me = std::process::id();
        // 8 MiB written, so resident.
        let big = std::hint::black_box(vec![1u8; 8 << 20]);
        assert!(rss_kib(me) >= 8 * 1024, "rss {} KiB", rss_kib(me));
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while cpu_ticks(me) == 0 && start.elapsed().as_secs() < 10 {
            for b in &big {
                x = x.wrapping_mul(31).wrapping_add(*b as u64);
            }
        }
        std::hint::black_box(x);
        assert!(cpu_ticks(me) > 0, "no CPU time after computing for 10 s");
        // Above the largest pid_max (2^22): never a process.
        assert_eq!(rss_kib(u32::MAX), 0);
        assert_eq!(cpu_ticks(u32::MAX), 0);
    }
}
