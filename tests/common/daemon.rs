//! `rttfairctl daemon` under test: spawned with the caller's environment
//! (a test's bpffs root), up before the test goes on, killed on drop.
//!
//! One type for what the daemon and reliability tests each spelled out: the
//! spawn, the wait for /healthz with a deadline, the kill at the end. Its
//! stderr goes to an unlinked temporary file (tempfile), which a test can
//! read at any time and which, unlike a pipe nobody reads, never blocks the
//! daemon; a daemon that does not come up is reported with what it said.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::{http_get, wait_until};

/// How long a daemon may take to come up on a busy two-core machine.
const UP_WITHIN: Duration = Duration::from_secs(15);

/// What a daemon must answer on /healthz before `Daemon::start` returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Up {
    /// 200: serving, and the maps it exports are readable.
    Healthy,
    /// Any answer: serving, with or without readable maps (503 before any
    /// CCA has created them).
    Serving,
}

/// A running `rttfairctl daemon`, killed (SIGKILL) and reaped on drop, also
/// when the test panics.
pub struct Daemon {
    child: Child,
    stderr: File,
    /// The loopback port it listens on.
    pub port: u16,
}

impl Daemon {
    /// Spawn `ctl daemon <args> --listen 127.0.0.1:<port>` (`ctl`: the
    /// rttfairctl command with its environment, e.g. `KernelTest::ctl`) and
    /// wait until /healthz answers as `up` says; panic, with the daemon's
    /// stderr, if it does not within 15 s or exits first.
    pub fn start(mut ctl: Command, args: &[&str], port: u16, up: Up) -> Daemon {
        let stderr = tempfile::tempfile().expect("temporary file for the daemon's stderr");
        let child = ctl
            .arg("daemon")
            .args(args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stderr(stderr.try_clone().expect("dup stderr file"))
            .spawn()
            .expect("spawn rttfairctl daemon");
        let mut daemon = Daemon {
            child,
            stderr,
            port,
        };
        let answered = wait_until(UP_WITHIN, || {
            !daemon.running()
                || http_get(port, "/healthz")
                    .is_some_and(|(status, _)| up == Up::Serving || status == 200)
        });
        assert!(
            answered && daemon.running(),
            "daemon on port {port} did not come up ({up:?} within {UP_WITHIN:?}); its stderr:\n{}",
            daemon.stderr()
        );
        daemon
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `signal` (SIGTERM to stop it cleanly, SIGKILL to crash it).
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal).expect("signal the daemon");
    }

    /// Wait for it to exit.
    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().expect("wait for the daemon")
    }

    /// Still running (not exited)?
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("poll the daemon").is_none()
    }

    /// All it has written to stderr so far (all of it, once it exited).
    pub fn stderr(&self) -> String {
        let len = self.stderr.metadata().map_or(0, |m| m.len());
        let mut buf = vec![0u8; len as usize];
        self.stderr
            .read_exact_at(&mut buf, 0)
            .expect("read the daemon's stderr");
        String::from_utf8_lossy(&buf).into_owned()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
