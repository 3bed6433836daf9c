//! Network namespaces that clean up after themselves.
//!
//! Names are `rf-<pid>-<seq>-<role>`: unique per process and sequence, so two
//! labs (or two tests) never collide, and any process can tell whether a
//! namespace's creator is still alive. Cleanup happens
//! - on drop (also while unwinding from a panic),
//! - on SIGINT/SIGTERM/SIGHUP, by a watcher thread that deletes every
//!   namespace this process still owns, runs the exit hooks, says in one
//!   line that the process was interrupted and exits with 128+signal (what
//!   fails elsewhere meanwhile because its namespace went is not an error
//!   to report: see [`signalled`]),
//! - and for a creator that died by SIGKILL, at the next creation of any lab
//!   namespace, which deletes `rf-*` namespaces whose creator is gone.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsFd;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Once};
use std::time::Duration;

use anyhow::{bail, Context, Result};

const NETNS_DIR: &str = "/run/netns";
const PREFIX: &str = "rf-";

static SEQ: AtomicU32 = AtomicU32::new(0);
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static WATCHER: Once = Once::new();
/// The signal that is ending the process (0: none), set in the signal
/// handler itself, so before the watcher deletes anything and before this
/// process can see a child the same Ctrl-C ended (iperf3 shares the
/// terminal's process group).
static SIGNALLED: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// A network namespace owned by this process; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create `rf-<pid>-<seq>-<role>` with loopback up.
    pub fn create(role: &str) -> Result<Netns> {
        install_signal_cleanup();
        reap_stale();
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PREFIX}{}-{seq}-{role}", std::process::id());
        run("ip", &["netns", "add", &name]).with_context(|| format!("create netns {name}"))?;
        LIVE.lock().unwrap().insert(name.clone());
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's inode number (what the CCAs export as `netns_ino`),
    /// which tells this namespace's sockets from another lab's with the same
    /// addresses.
    pub fn inode(&self) -> Result<u32> {
        use std::os::unix::fs::MetadataExt;
        let path = format!("{NETNS_DIR}/{}", self.name);
        Ok(std::fs::metadata(&path)
            .with_context(|| format!("stat {path}"))?
            .ino() as u32)
    }

    /// `ip -n <ns> args...`
    pub fn ip(&self, args: &[&str]) -> Result<Output> {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        run("ip", &full)
    }

    /// A command that will run inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Run a command inside the namespace and require success.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<Output> {
        let mut full = vec!["netns", "exec", self.name.as_str(), program];
        full.extend_from_slice(args);
        run("ip", &full)
    }

    /// Run `f` on a fresh thread that has entered this namespace; sockets it
    /// creates belong to the namespace for their whole life.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let file = self.open()?;
        let handle = std::thread::spawn(move || -> Result<T> {
            nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                .context("setns")?;
            Ok(f())
        });
        handle
            .join()
            .map_err(|_| anyhow::anyhow!("thread in netns panicked"))?
    }

    /// Spawn `f` on a thread inside the namespace without waiting for it.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<std::thread::JoinHandle<Result<T>>> {
        let file = self.open()?;
        Ok(std::thread::spawn(move || -> Result<T> {
            nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                .context("setns")?;
            Ok(f())
        }))
    }

    fn open(&self) -> Result<File> {
        File::open(format!("{NETNS_DIR}/{}", self.name))
            .with_context(|| format!("open netns {}", self.name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        delete(&self.name);
        LIVE.lock().map(|mut l| l.remove(&self.name)).ok();
    }
}

fn delete(name: &str) {
    // Killing what still runs inside lets the namespace go at once.
    let _ = Command::new("ip")
        .args(["netns", "pids", name])
        .output()
        .map(|o| {
            for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                if let Ok(pid) = pid.parse::<i32>() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        });
    let _ = Command::new("ip")
        .args(["netns", "del", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Namespaces of this project whose creating process no longer exists.
pub fn stale() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix(PREFIX)
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect()
}

/// Delete leftovers of killed runs; returns what was removed.
pub fn reap_stale() -> Vec<String> {
    let names = stale();
    for n in &names {
        delete(n);
    }
    names
}

/// Delete every namespace this process still owns (used on signals).
pub fn cleanup_all() {
    let names: Vec<String> = LIVE
        .lock()
        .map(|l| l.iter().cloned().collect())
        .unwrap_or_default();
    for n in names {
        delete(&n);
    }
}

fn install_signal_cleanup() {
    WATCHER.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register_usize(sig, SIGNALLED.clone(), sig as usize);
        }
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            std::thread::spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    SIGNALLED.store(sig as usize, Ordering::SeqCst);
                    cleanup_all();
                    for hook in EXIT_HOOKS.lock().map(|h| h.clone()).unwrap_or_default() {
                        hook();
                    }
                    eprintln!("{}", interrupted_line(&program_name(), sig));
                    std::process::exit(128 + sig);
                }
            });
        }
    });
}

static EXIT_HOOKS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// The signal that is ending this process through the watcher, if one is.
///
/// From the moment it is set, the watcher is deleting the lab's namespaces,
/// so a sampler or command that runs in one fails (`ss failed: Cannot open
/// network namespace`): that failure is the interruption, not a fault to
/// report. A caller that sees it set should say nothing of its own error
/// and [`await_signal_exit`]: returning from `main` would end the process
/// while the exit hooks (which unload the CCAs the lab loaded) still run.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

/// Block until the watcher ends the process (it exits once the namespaces
/// are gone and the hooks ran), or for `timeout` if it does not: a hook
/// that hangs must not hang the caller too.
pub fn await_signal_exit(timeout: Duration) {
    if signalled().is_some() {
        std::thread::sleep(timeout);
    }
}

/// The watcher's one line: the same shape as the CLI's errors
/// (`<program>: error: ...`), with the signal's name and what was cleaned
/// (the namespaces, and whatever the exit hooks end: the leases on the
/// CCAs the lab loaded, which unloads those no other lab holds).
fn interrupted_line(program: &str, sig: i32) -> String {
    let name = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    };
    format!("{program}: error: interrupted by {name} (its lab namespaces and CCAs are cleaned up)")
}

/// This process's name as it was started (its path's last part).
fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "rttfair".to_string())
}

/// Run `hook` too when a signal ends the process (e.g. to unload CCAs a test
/// loaded). Hooks run after the namespaces are gone.
pub fn on_signal_exit(hook: fn()) {
    install_signal_cleanup();
    EXIT_HOOKS.lock().unwrap().push(hook);
}

/// Run a command, turning a non-zero exit into an error with its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<Output> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("spawn {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// The line a signal ends the process with names the program and the
    /// signal, in the CLI's error shape, on one line.
    #[test]
    fn the_interrupted_line_names_the_program_and_the_signal() {
        let line = super::interrupted_line("rttfairctl", libc::SIGINT);
        assert!(
            line.starts_with("rttfairctl: error: interrupted by SIGINT"),
            "{line}"
        );
        assert!(!line.contains('\n'));
        assert!(super::interrupted_line("x", libc::SIGTERM).contains("by SIGTERM"));
        assert!(super::interrupted_line("x", libc::SIGHUP).contains("by SIGHUP"));
    }

    /// Without a signal nobody waits: callers check it on every error.
    #[test]
    fn no_signal_no_wait() {
        assert_eq!(super::signalled(), None);
        let t = std::time::Instant::now();
        super::await_signal_exit(std::time::Duration::from_secs(5));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }
}
