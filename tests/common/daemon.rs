//! `rttfairctl daemon` under test: started on a test's bpffs root, up
//! before the test goes on, stopped on drop (also when the test panics).
//!
//! The spawn, the wait for /healthz and the stop are
//! `rttfair_lab::net::daemon_child`'s, the one place that starts the daemon;
//! this is its test face: it panics where that returns an error (with the
//! end of the daemon's stderr), and names the `rttfairctl` this test
//! build made.

use std::path::Path;
use std::process::ExitStatus;

use nix::sys::signal::Signal;
use rttfair_lab::net::daemon_child::DaemonChild;
use rttfair_loader::BpfFs;

/// What a daemon must answer before `Daemon::start` returns:
/// `Healthy` (200 on /readyz, its maps readable) or `Serving` (any
/// answer on /healthz).
pub use rttfair_lab::net::daemon_child::Ready as Up;

/// A running `rttfairctl daemon` of this test build.
pub struct Daemon(DaemonChild);

impl Daemon {
    /// Start `rttfairctl --bpffs <fs> daemon <args> --listen
    /// 127.0.0.1:<port>` and wait until /healthz answers as `up` says;
    /// panic, with the end of the daemon's stderr, if it does not within
    /// 15 s or exits first.
    pub fn start(fs: &BpfFs, args: &[&str], port: u16, up: Up) -> Daemon {
        let ctl = Path::new(env!("CARGO_BIN_EXE_rttfairctl"));
        match DaemonChild::launch(ctl, fs, port)
            .args(args)
            .ready(up)
            .start()
        {
            Ok(d) => Daemon(d),
            Err(e) => panic!("daemon on port {port} did not come up ({up:?}): {e:#}"),
        }
    }

    pub fn pid(&self) -> u32 {
        self.0.pid()
    }

    /// Send `signal` (SIGTERM to stop it cleanly, SIGKILL to crash it).
    pub fn signal(&mut self, signal: Signal) {
        self.0.signal(signal).expect("signal the daemon");
    }

    /// Wait for it to exit.
    pub fn wait(&mut self) -> ExitStatus {
        self.0.wait().expect("wait for the daemon")
    }

    /// Still running (not exited)?
    pub fn running(&mut self) -> bool {
        self.0.running()
    }

    /// All it has written to stderr so far (all of it, once it exited).
    pub fn stderr(&self) -> String {
        self.0.stderr().expect("read the daemon's stderr")
    }
}
