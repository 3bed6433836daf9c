//! Network namespaces that clean up after themselves.
//!
//! Names are `rf-<pid>-<seq>-<role>`: unique per process and sequence, so two
//! labs (or two tests) never collide, and any process can tell whether a
//! namespace's creator is still alive. Cleanup happens
//! - on drop (also while unwinding from a panic),
//! - on SIGINT/SIGTERM/SIGHUP, by a watcher thread that deletes every
//!   namespace this process still owns and exits with 128+signal,
//! - and for a creator that died by SIGKILL, at the next creation of any lab
//!   namespace, which deletes `rf-*` namespaces whose creator is gone.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsFd;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};

use anyhow::{bail, Context, Result};

const NETNS_DIR: &str = "/run/netns";
const PREFIX: &str = "rf-";

static SEQ: AtomicU32 = AtomicU32::new(0);
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static WATCHER: Once = Once::new();

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
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            std::thread::spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    cleanup_all();
                    for hook in EXIT_HOOKS.lock().map(|h| h.clone()).unwrap_or_default() {
                        hook();
                    }
                    std::process::exit(128 + sig);
                }
            });
        }
    });
}

static EXIT_HOOKS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

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
