//! `rttfairctl doctor` on this machine, and with a faked older kernel or a
//! PATH without iperf3; `load` refusing with the doctor's line. Nothing
//! here loads BPF or creates a namespace (the refused `load` stops before
//! it touches anything), so no kernel lock is taken.

use std::path::Path;
use std::process::{Command, Output};

fn ctl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttfairctl"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The integration tests run as root on a kernel that has everything
/// (`cargo xtask test` installs the tools): every check passes.
#[test]
fn doctor_passes_on_this_machine() {
    let out = ctl().arg("doctor").output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    for name in [
        "capabilities",
        "kernel",
        "btf",
        "struct_ops",
        "bbr kfuncs",
        "bpffs",
        "tool iperf3",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{name}: ok ("))),
            "no ok line for {name}: {text}"
        );
    }
    assert!(!text.contains("missing"), "{text}");

    let out = ctl().args(["--json", "doctor"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&stdout(&out)).expect("stdout is one JSON value");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["for"], "all");
    assert!(doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
}

const OLD_KERNEL_LINE: &str = "kernel: missing: Linux 6.1.0 is older than 6.10, the first with \
     the 4-argument cong_control every rttfair CCA implements: upgrade to Linux 6.10 or later";

/// A kernel before 6.10 without BTF to prove otherwise fails, on the
/// kernel line.
#[test]
fn doctor_fails_on_an_older_kernel() {
    let out = ctl()
        .args(["doctor", "--for", "load"])
        .env("RTTFAIR_DOCTOR_KERNEL_RELEASE", "6.1.0")
        .env("RTTFAIR_KERNEL_BTF", "/nonexistent/btf")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(text.lines().any(|l| l == OLD_KERNEL_LINE), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("btf: missing: no BTF at /nonexistent/btf")),
        "{text}"
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("check(s) failed: kernel, btf"), "{err}");
}

/// A PATH with every lab tool but iperf3: the lab's check fails with the
/// tool's line, loading does not care.
#[test]
fn doctor_for_the_lab_needs_iperf3() {
    let dir = tempfile::tempdir().unwrap();
    for tool in ["ss", "tc", "ip", "ethtool"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{tool} not installed"));
        std::os::unix::fs::symlink(found, dir.path().join(tool)).unwrap();
    }
    let run = |what: &str| {
        ctl()
            .args(["doctor", "--for", what])
            .env("PATH", dir.path())
            .output()
            .unwrap()
    };
    let lab = run("lab");
    assert!(!lab.status.success());
    let missing: Vec<String> = stdout(&lab)
        .lines()
        .filter(|l| l.contains(": missing: "))
        .map(String::from)
        .collect();
    assert_eq!(
        missing,
        ["tool iperf3: missing: iperf3 not in PATH (the lab's traffic): install iperf3, or run `cargo xtask deps`"]
    );
    let load = run("load");
    assert!(load.status.success(), "{}", stdout(&load));
}

/// `load` runs the same checks first: one line, non-zero, nothing made.
#[test]
fn load_refuses_with_the_doctors_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let out = ctl()
        .args(["--bpffs", root.to_str().unwrap(), "load", "bbr1"])
        .env("RTTFAIR_DOCTOR_KERNEL_RELEASE", "6.1.0")
        .env("RTTFAIR_KERNEL_BTF", "/nonexistent/btf")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert_eq!(
        err.trim_end(),
        format!("rttfairctl: error: {OLD_KERNEL_LINE} (`rttfairctl doctor --for load` checks everything)")
    );
    assert!(!Path::new(&root).exists(), "load made its root");
}
