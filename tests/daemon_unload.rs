//! What the daemon leaves registered: with `unload_on_exit` it unloads the
//! CCAs it loaded itself and nothing else (not the operator's, not one a
//! running lab uses), and a start whose load fails leaves nothing of its
//! own registered.

mod common;

use std::path::PathBuf;

use common::daemon::{Daemon, Up};
use common::*;
use nix::sys::signal::Signal;
use rttfair_lab::net::ccas::CcaSession;
use rttfair_loader::BpfFs;

/// A daemon config file with unload_on_exit and these CCAs to load.
fn unloading_config(load: &[&str]) -> tempfile::NamedTempFile {
    let names: Vec<String> = load.iter().map(|n| format!("\"{n}\"")).collect();
    temp_file(
        "daemon-unload",
        ".toml",
        format!("load = [{}]\nunload_on_exit = true\n", names.join(", ")),
    )
}

/// Stop the daemon with SIGTERM; it must exit 0. Returns its stderr.
fn stop(mut daemon: Daemon) -> String {
    daemon.signal(Signal::SIGTERM);
    let status = daemon.wait();
    let said = daemon.stderr();
    assert!(status.success(), "daemon exited with {status}: {said}");
    said
}

#[test]
fn unload_on_exit_unloads_only_what_the_daemon_loaded() {
    let t = KernelTest::new();
    // A: the operator's, loaded by hand before the daemon; the daemon's
    // config names it too, so it is adopted, not loaded.
    assert_success(&t.run(&["load", "fairtt"]));
    let cfg = unloading_config(&["fairtt", "bbr1"]);
    let daemon = Daemon::start(
        &t.fs,
        &["--config", cfg.path().to_str().unwrap()],
        free_port(),
        Up::Healthy,
    );
    assert!(registered("bbr1"), "the daemon did not load bbr1");
    let said = stop(daemon);
    assert!(
        registered("fairtt"),
        "the daemon unloaded the operator's fairtt: {said}"
    );
    assert!(
        !registered("bbr1"),
        "the daemon left its own bbr1 registered: {said}"
    );
    assert!(said.contains("unloaded bbr1"), "{said}");
    assert_success(&t.run(&["unload", "fairtt"]));
}

#[test]
fn unload_on_exit_keeps_a_cca_a_running_lab_holds_a_lease_on() {
    let t = KernelTest::new();
    let cfg = unloading_config(&["bbr1"]);
    let daemon = Daemon::start(
        &t.fs,
        &["--config", cfg.path().to_str().unwrap()],
        free_port(),
        Up::Healthy,
    );
    // A lab starts while the daemon runs: it finds bbr1 loaded and leases
    // it. Between repetitions it has no socket on it.
    let lab = CcaSession::ensure(&t.fs, &["bbr1".to_string()]).expect("lab lease on bbr1");
    let said = stop(daemon);
    assert!(
        registered("bbr1"),
        "the daemon unloaded bbr1 under a running lab: {said}"
    );
    assert!(
        said.contains("kept bbr1") && said.contains("lease"),
        "{said}"
    );
    drop(lab);
    assert_success(&t.run(&["unload", "bbr1"]));
}

/// A second installation (bpffs root) beside the test's, removed with its
/// pins on drop, also when the test panics.
struct OtherRoot(BpfFs);

impl OtherRoot {
    /// `rttfairctl <args>` on this installation; it must succeed.
    fn run(&self, t: &KernelTest, args: &[&str]) {
        let out = t
            .ctl()
            .env("RTTFAIR_BPFFS", self.0.root())
            .args(args)
            .output()
            .unwrap();
        assert_success(&out);
    }
}

impl Drop for OtherRoot {
    fn drop(&mut self) {
        remove_root(self.0.root());
    }
}

#[test]
fn a_failed_load_at_start_rolls_back_and_is_one_line() {
    let t = KernelTest::new();
    // qfair registered by another installation: in the test's root the name
    // parses and has no pin, but loading it fails (the kernel has the name).
    let other = OtherRoot(BpfFs::new(PathBuf::from(format!(
        "{}-other",
        t.fs.root().display()
    ))));
    other.run(&t, &["load", "qfair"]);
    let cfg = unloading_config(&["bbr1", "qfair"]);
    let out = t
        .ctl()
        .args([
            "daemon",
            "--config",
            cfg.path().to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "qfair");
    assert!(!registered("bbr1"), "the failed start left bbr1 registered");
    let pins = std::fs::read_dir(t.fs.links_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(pins, 0, "the failed start left a pin");
    assert!(registered("qfair"), "the other installation's qfair went");
    other.run(&t, &["unload", "qfair"]);
}
