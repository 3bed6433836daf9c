//! What deploy/ ships, checked offline: the systemd unit's hardening score
//! and its capabilities against what the preflight checks require; a missing
//! capability is refused in one line naming it, before anything is touched.
//! (No kernel state changes here, so no KernelTest lock.)

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn ctl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rttfairctl"))
}

/// `rttfairctl ARGS` with only the capabilities `caps` (setpriv syntax,
/// "+bpf,+perfmon"), as root: exec gives root exactly its bounding set.
fn ctl_with_caps(caps: &str, args: &[&str]) -> Output {
    Command::new("setpriv")
        .arg(format!("--bounding-set=-all,{caps}"))
        .args(["--inh-caps=-all", "--"])
        .arg(env!("CARGO_BIN_EXE_rttfairctl"))
        .args(args)
        .output()
        .expect("setpriv (util-linux)")
}

fn unit_path() -> PathBuf {
    repo().join("deploy/systemd/rttfair-daemon.service")
}

/// The unit's value of `key=` lines, space-joined.
fn unit_values(key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(unit_path()).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .flat_map(|v| v.split_whitespace().map(String::from).collect::<Vec<_>>())
        .collect()
}

#[test]
fn systemd_unit_scores_at_most_3_in_systemd_analyze_security() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: systemd-analyze is not installed on this host");
        return;
    }
    // --offline reads the unit file itself, so it needs no running systemd.
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(unit_path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let score: f64 = text
        .lines()
        .find_map(|l| l.split("rttfair-daemon.service: ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no exposure level in systemd-analyze output: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    println!("systemd-analyze security: {score}");
    assert!(score <= 3.0, "exposure {score} > 3.0:\n{text}");
}

#[test]
fn systemd_unit_grants_exactly_what_the_shipped_config_needs() {
    let config = repo().join("deploy/systemd/daemon.toml");
    let out = ctl()
        .args(["daemon", "--check-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text = assert_success(&out);
    let needs: Vec<String> = text
        .split("needs ")
        .nth(1)
        .unwrap_or_else(|| panic!("--check-config names no capabilities: {text}"))
        .trim()
        .split(" + ")
        .map(String::from)
        .collect();
    let mut needs = needs;
    needs.sort();
    for key in ["AmbientCapabilities", "CapabilityBoundingSet"] {
        let mut granted = unit_values(key);
        granted.sort();
        assert_eq!(granted, needs, "{key} differs from the preflight's needs");
    }
}

#[test]
fn a_missing_capability_is_named_in_one_line_before_anything_is_done() {
    // Loading a CCA: CAP_NET_ADMIN does not stand in for CAP_PERFMON.
    let line = assert_one_line_error(
        &ctl_with_caps("+bpf,+net_admin", &["load", "qfair"]),
        "CAP_PERFMON",
    );
    assert!(!line.contains("CAP_BPF"), "CAP_BPF is held: {line}");
    // Nothing at all: both named.
    let line = assert_one_line_error(&ctl_with_caps("+net_admin", &["load", "qfair"]), "CAP_BPF");
    assert!(line.contains("CAP_PERFMON"), "{line}");
    // The daemon checks what its config asks for before it binds or loads.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("d.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{}\"\nnative_flows = true\n",
            free_port()
        ),
    )
    .unwrap();
    let line = assert_one_line_error(
        &ctl_with_caps("+bpf", &["daemon", "--config", config.to_str().unwrap()]),
        "CAP_PERFMON",
    );
    assert!(line.contains("rttfair-daemon"), "{line}");
}

#[test]
fn check_config_refuses_a_bad_config_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("d.toml");
    std::fs::write(&config, "load = [\"cubic\"]\n").unwrap();
    let out = ctl()
        .args(["daemon", "--check-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_one_line_error(&out, "cubic");
}
