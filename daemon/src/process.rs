//! The daemon's own process, from /proc/self: the `process_*` families
//! every Prometheus exporter has, so its cost shows on the same dashboard.

/// What /proc says about this process; `None` where it cannot be read.
#[derive(Debug, Default, Clone, Copy)]
pub struct Process {
    /// User plus system CPU time, seconds.
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<f64>,
    pub open_fds: Option<f64>,
    /// Start time, seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

impl Process {
    /// Read it now (a few small files; done once per encode).
    pub fn read() -> Process {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let fields = stat.as_deref().and_then(stat_fields);
        let tick = clock_ticks();
        let cpu_seconds = fields
            .zip(tick)
            .map(|(f, t)| (f.utime + f.stime) as f64 / t);
        let start_time_seconds = fields
            .zip(tick)
            .zip(boot_time())
            .map(|((f, t), boot)| boot + f.starttime as f64 / t);
        let resident_bytes = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .zip(page_size())
            .map(|(pages, size)| (pages * size) as f64);
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            // The directory handle being read is one of them.
            .map(|d| d.count().saturating_sub(1) as f64);
        Process {
            cpu_seconds,
            resident_bytes,
            open_fds,
            start_time_seconds,
        }
    }
}

/// The fields of /proc/<pid>/stat we use, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatFields {
    utime: u64,
    stime: u64,
    starttime: u64,
}

/// Parse /proc/<pid>/stat. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses itself, so fields are counted from
/// the last `)`: state is field 3, utime 14, stime 15, starttime 22.
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3.
    let field = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(StatFields {
        utime: field(14)?,
        stime: field(15)?,
        starttime: field(22)?,
    })
}

/// `btime` of /proc/stat: boot time, seconds since the epoch.
fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
}

fn clock_ticks() -> Option<f64> {
    // SAFETY: sysconf reads a constant and has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (t > 0).then_some(t as f64)
}

fn page_size() -> Option<u64> {
    // SAFETY: as above.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (p > 0).then_some(p as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command name with spaces and a `)` does not shift the fields.
    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let stat = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 123456 10000 300 18446744073709551615";
        assert_eq!(
            stat_fields(stat),
            Some(StatFields {
                utime: 250,
                stime: 75,
                starttime: 123456
            })
        );
        assert_eq!(stat_fields("4242 (truncated"), None);
    }

    /// This test process has a start time in the past, some memory and
    /// open files (stdin/out/err at least).
    #[test]
    fn this_process_reads() {
        let p = Process::read();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = p.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86400.0 * 365.0,
            "{start}"
        );
        assert!(p.resident_bytes.unwrap() > 1e5);
        assert!(p.open_fds.unwrap() >= 3.0);
        assert!(p.cpu_seconds.unwrap() >= 0.0);
    }
}
