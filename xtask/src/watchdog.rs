//! A guard on `cargo xtask test`: a test binary that prints nothing for
//! [`SILENCE`] is stuck (every test here ends in minutes and cargo prints a
//! line for each, plus one when a test passes 60 s). The guard then prints
//! what the stuck processes are waiting on, stops that binary (SIGTERM,
//! whose handler in the tests deletes their namespaces and bpffs roots;
//! SIGKILL 20 s later) and lets cargo go on to the next binary, which
//! reports the stopped one as failed. A stuck test costs the run minutes
//! and leaves the evidence in the log, rather than the whole CI budget and
//! no evidence.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a test binary may print nothing.
pub const SILENCE: Duration = Duration::from_secs(12 * 60);
/// Between SIGTERM and SIGKILL: time for the tests' cleanup.
pub const GRACE: Duration = Duration::from_secs(20);

/// Watches the output of the `cargo test` process `cargo_pid`.
pub struct Watchdog {
    t0: Instant,
    heard_ms: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub fn start(cargo_pid: u32, silence: Duration, grace: Duration) -> Watchdog {
        let t0 = Instant::now();
        let heard_ms = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let (h, d, f) = (heard_ms.clone(), done.clone(), fired.clone());
        let thread = std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                let now = t0.elapsed().as_millis() as u64;
                if now.saturating_sub(h.load(Ordering::Relaxed)) < silence.as_millis() as u64 {
                    continue;
                }
                stop_stuck_binary(cargo_pid, silence, grace, &f);
                // Whatever happened, the silence starts again.
                h.store(t0.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
        });
        Watchdog {
            t0,
            heard_ms,
            done,
            fired,
            thread: Some(thread),
        }
    }

    /// A line came from cargo: the run is alive.
    pub fn heard(&self) {
        self.heard_ms
            .store(self.t0.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Whether the guard stopped a binary.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One process as /proc tells it.
struct Proc {
    pid: u32,
    ppid: u32,
    state: char,
    comm: String,
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
            let (head, tail) = stat.rsplit_once(')')?;
            let comm = head.split_once('(')?.1.to_string();
            let mut f = tail.split_whitespace();
            let state = f.next()?.chars().next()?;
            let ppid = f.next()?.parse().ok()?;
            Some(Proc {
                pid,
                ppid,
                state,
                comm,
            })
        })
        .collect()
}

/// `root` and every process below it, parents first.
fn tree(all: &[Proc], root: u32) -> Vec<&Proc> {
    let mut out: Vec<&Proc> = all.iter().filter(|p| p.pid == root).collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].pid;
        out.extend(all.iter().filter(|p| p.ppid == parent));
        i += 1;
    }
    out
}

fn read(path: String) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Print the state of every process under cargo (each thread's wait
/// channel and kernel stack), then stop the test binaries among them,
/// raising `fired` if there was one.
fn stop_stuck_binary(cargo_pid: u32, silence: Duration, grace: Duration, fired: &AtomicBool) {
    let all = processes();
    let below = tree(&all, cargo_pid);
    println!(
        "xtask: no output for {} min: the test run is stuck; what its processes wait on follows",
        silence.as_secs() / 60
    );
    for p in &below {
        let cmdline = read(format!("/proc/{}/cmdline", p.pid)).replace('\0', " ");
        println!(
            "xtask:   pid {} (parent {}) {} [{}]: {}",
            p.pid,
            p.ppid,
            p.comm,
            p.state,
            cmdline.trim()
        );
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", p.pid)) else {
            continue;
        };
        for t in tasks.flatten() {
            let tid = t.file_name().to_string_lossy().to_string();
            let base = format!("/proc/{}/task/{tid}", p.pid);
            let stack: Vec<String> = read(format!("{base}/stack"))
                .lines()
                .take(8)
                .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
                .collect();
            println!(
                "xtask:     tid {tid} {}: wchan {} stack {}",
                read(format!("{base}/comm")).trim(),
                read(format!("{base}/wchan")).trim(),
                stack.join(" < ")
            );
        }
    }
    if let Ok(o) = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
    {
        println!(
            "xtask:   namespaces: {}",
            String::from_utf8_lossy(&o.stdout).replace('\n', " ")
        );
    }
    // The binaries cargo runs are its direct children; what they started
    // goes with them.
    let stuck: Vec<u32> = below
        .iter()
        .filter(|p| p.ppid == cargo_pid)
        .map(|p| p.pid)
        .collect();
    if stuck.is_empty() {
        println!("xtask: nothing under cargo to stop");
        return;
    }
    let victims: Vec<u32> = stuck
        .iter()
        .flat_map(|&s| tree(&all, s).into_iter().map(|p| p.pid))
        .collect();
    println!(
        "xtask: stopping {stuck:?} (SIGTERM, SIGKILL {} s later)",
        grace.as_secs()
    );
    fired.store(true, Ordering::Relaxed);
    signal(&stuck, "TERM");
    std::thread::sleep(grace);
    let alive: Vec<u32> = victims
        .into_iter()
        .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    signal(&alive, "KILL");
}

fn signal(pids: &[u32], sig: &str) {
    if pids.is_empty() {
        return;
    }
    let mut c = std::process::Command::new("kill");
    c.arg(format!("-{sig}")).arg("--");
    c.args(pids.iter().map(u32::to_string));
    let _ = c.output();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_child_is_stopped_and_a_talking_one_is_not() {
        // A stand-in for cargo: a shell whose child sleeps silently.
        let mut cargo = std::process::Command::new("sh")
            .args(["-c", "sleep 600 & wait"])
            .spawn()
            .unwrap();
        let dog = Watchdog::start(cargo.id(), Duration::from_secs(1), Duration::ZERO);
        let t0 = Instant::now();
        // Talking: heard every 100 ms for 2 s, never stopped.
        while t0.elapsed() < Duration::from_secs(2) {
            dog.heard();
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!dog.fired());
        assert!(cargo.try_wait().unwrap().is_none());
        // Silent: the sleeping child is stopped, the shell's wait returns.
        let status = cargo.wait().unwrap();
        assert!(dog.fired());
        assert!(status.success(), "{status}");
    }

    #[test]
    fn tree_lists_descendants_only() {
        let all = vec![
            Proc {
                pid: 1,
                ppid: 0,
                state: 'S',
                comm: "init".into(),
            },
            Proc {
                pid: 10,
                ppid: 1,
                state: 'S',
                comm: "cargo".into(),
            },
            Proc {
                pid: 11,
                ppid: 10,
                state: 'S',
                comm: "ccas".into(),
            },
            Proc {
                pid: 12,
                ppid: 11,
                state: 'S',
                comm: "iperf3".into(),
            },
            Proc {
                pid: 20,
                ppid: 1,
                state: 'S',
                comm: "other".into(),
            },
        ];
        let pids: Vec<u32> = tree(&all, 10).iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![10, 11, 12]);
    }
}
