//! What deploy/ ships, checked offline: the systemd unit's hardening score
//! and its capabilities against what the preflight checks require; a missing
//! capability is refused in one line naming it, before anything is touched.
//! (No kernel state changes here, so no KernelTest lock.)

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::image::{repo, target_dir, xtask_image};
use common::*;

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

/// What `rttfairctl daemon --check-config --config PATH` did.
fn check_config_output(config: &std::path::Path) -> Output {
    ctl()
        .args(["daemon", "--check-config", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

/// `rttfairctl daemon --check-config --config PATH`, which must succeed; its
/// stdout (what the config loads and which capabilities it needs).
fn check_config(config: &std::path::Path) -> String {
    assert_success(&check_config_output(config))
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
    assert!(
        Command::new("systemd-analyze")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "systemd-analyze is not installed (Debian package systemd; `cargo xtask deps` installs it)"
    );
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
    let text = check_config(&config);
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

/// Following the unit's own install comment gives the daemon the config
/// its ExecStart names (an explicit --config that is missing is an error,
/// which Restart=on-failure would turn into a restart loop), and the file
/// installed there is a valid config.
#[test]
fn systemd_unit_install_steps_provide_the_config_it_names() {
    let text = std::fs::read_to_string(unit_path()).unwrap();
    let exec = unit_values("ExecStart");
    let config = exec
        .iter()
        .position(|a| a == "--config")
        .map(|i| exec[i + 1].clone())
        .expect("ExecStart names its config");
    let install: String = text
        .lines()
        .skip_while(|l| !l.starts_with("# Install:"))
        .take_while(|l| l.starts_with("# ") && !l.starts_with("# ExecStart"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        install.contains(&format!("daemon.toml {config}")),
        "the install steps do not put daemon.toml at {config}:\n{install}"
    );
    check_config(&repo().join("deploy/systemd/daemon.toml"));
}

/// The unit leaves the labs' lease folder writable: taking over a CCA a
/// lab loaded removes the lab's marker there, and under ProtectSystem=strict
/// a read-only /run left the marker, so the lab unloaded the daemon's CCA.
#[test]
fn systemd_unit_lets_the_daemon_take_over_a_lab_loaded_cca() {
    let leases = rttfair_loader::lease::lease_dir(&rttfair_loader::BpfFs::new(
        rttfair_loader::BpfFs::DEFAULT_ROOT,
    ));
    let writable = unit_values("ReadWritePaths");
    assert!(
        writable
            .iter()
            .any(|p| leases.starts_with(p.trim_start_matches('-'))),
        "{} is not under ReadWritePaths {writable:?}",
        leases.display()
    );
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
    let out = check_config_output(&config);
    assert_one_line_error(&out, "cubic");
}

/// The image `cargo xtask image` builds, under the name podman gives it
/// and a node importing its archive keeps (deploy manifests must name it).
const IMAGE: &str = concat!("localhost/rttfair:", env!("CARGO_PKG_VERSION"));

/// The venv under target/ holding kubernetes-validate at the version
/// deploy/kubernetes/validate-requirements.txt pins (`cargo xtask deps`
/// installs it there, and reinstalls it when the pin changes).
fn k8s_venv() -> PathBuf {
    let venv = target_dir().join("tools/k8s-venv");
    let pin = std::fs::read_to_string(repo().join("deploy/kubernetes/validate-requirements.txt"))
        .unwrap();
    let want = pin
        .lines()
        .find_map(|l| l.trim().strip_prefix("kubernetes-validate=="))
        .expect("validate-requirements.txt pins kubernetes-validate==VERSION");
    let have = Command::new(venv.join("bin/kubernetes-validate"))
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert!(
        have.as_deref() == Some(want),
        "kubernetes-validate in {} is {}, not the pinned {want}: run `cargo xtask deps`",
        venv.display(),
        have.as_deref().unwrap_or("missing")
    );
    venv
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "daemonset and lab sweep job expected: {v:?}");
    v
}

fn semantics(venv: &Path, files: &[PathBuf]) -> Output {
    Command::new(venv.join("bin/python"))
        .arg(repo().join("tests/k8s_semantics.py"))
        .arg(IMAGE)
        .args(files)
        .output()
        .unwrap()
}

#[test]
fn kubernetes_manifests_pass_the_api_schemas_and_its_rules() {
    let venv = k8s_venv();
    let files = manifests();
    let out = Command::new(venv.join("bin/kubernetes-validate"))
        .args(["--strict", "--quiet"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubernetes-validate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = semantics(&venv, &files);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The rules do refuse what the API refuses: issue 18's DaemonSet asked
    // for Bidirectional propagation without privileged.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("ds.yaml");
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes/daemonset.yaml")).unwrap();
    assert!(text.contains("mountPropagation: HostToContainer"));
    std::fs::write(
        &broken,
        text.replace(
            "mountPropagation: HostToContainer",
            "mountPropagation: Bidirectional",
        ),
    )
    .unwrap();
    let out = semantics(&venv, std::slice::from_ref(&broken));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("needs privileged: true"));
    // A node-critical pod outside kube-system without its ResourceQuota
    // (refused by GKE's admission), a DaemonSet that runs on the lab pool
    // the sweep selects, and a rollout one node at a time are refused too.
    let job = repo().join("deploy/kubernetes/lab-sweep-job.yaml");
    for (from, to, says) in [
        (
            "kind: ResourceQuota",
            "kind: LimitRange",
            "needs a ResourceQuota",
        ),
        ("operator: NotIn", "operator: In", "runs on the lab pool"),
        (
            "maxUnavailable: 10%",
            "maxUnavailable: 1",
            "use a percentage",
        ),
        // An optional Secret holds the key: without it, a daemon that
        // requires its key file would never start.
        (
            "peer_hash_key_optional = true",
            "peer_hash_key_optional = false",
            "no Secret, no daemon",
        ),
        // Readiness on /healthz would keep an ABI-mismatched pod "ready";
        // the default AppArmor profile denies the pins; every taint
        // tolerated; an image name the runtime reads as docker.io's.
        (
            "httpGet: {path: /readyz, port: metrics}",
            "httpGet: {path: /healthz, port: metrics}",
            "readinessProbe must probe the daemon's /readyz",
        ),
        (
            "appArmorProfile: {type: Unconfined}",
            "appArmorProfile: {type: RuntimeDefault}",
            "AppArmor must be Unconfined",
        ),
        (
            "      affinity:\n        nodeAffinity:",
            "      tolerations: [{operator: Exists}]\n      affinity:\n        nodeAffinity:",
            "tolerates every taint",
        ),
        (
            "{key: kubernetes.io/arch, operator: In, values: [amd64]}",
            "{key: kubernetes.io/os, operator: In, values: [linux]}",
            "kubernetes.io/arch In [amd64]",
        ),
        (
            "image: localhost/rttfair:",
            "image: rttfair:",
            "is not the one `cargo xtask image` builds",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&broken, text.replace(from, to)).unwrap();
        let out = semantics(&venv, &[broken.clone(), job.clone()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success() && stdout.contains(says),
            "{from}: {stdout}"
        );
    }
}

/// Prometheus' `promtool` (Debian package prometheus, which `cargo xtask
/// deps` installs).
fn promtool() -> Command {
    let ok = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "no promtool: run `cargo xtask deps` (Debian package prometheus)"
    );
    Command::new("promtool")
}

/// The shipped alert rules parse, their unit tests pass (each alert fires
/// where it should and not where it should not), and the shipped
/// prometheus.yml, which loads them, is a valid config.
#[test]
fn prometheus_alert_rules_pass_their_promtool_unit_tests() {
    let dir = repo().join("deploy/prometheus");
    for args in [
        &["check", "rules", "rttfair-alerts.yml"][..],
        &["test", "rules", "rttfair-alerts.test.yml"],
        &["check", "config", "prometheus.yml"],
    ] {
        let out = promtool().args(args).current_dir(&dir).output().unwrap();
        assert!(
            out.status.success(),
            "promtool {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The tests do test: an alert whose threshold no longer matches what
    // they expect fails them.
    let tmp = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(dir.join("rttfair-alerts.yml")).unwrap();
    assert!(rules.contains("rttfair_ready == 0"));
    std::fs::write(
        tmp.path().join("rttfair-alerts.yml"),
        rules.replace("rttfair_ready == 0", "rttfair_ready == 1"),
    )
    .unwrap();
    std::fs::copy(
        dir.join("rttfair-alerts.test.yml"),
        tmp.path().join("rttfair-alerts.test.yml"),
    )
    .unwrap();
    let out = promtool()
        .args(["test", "rules", "rttfair-alerts.test.yml"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "a broken rule passed its tests");
}

/// What ends the title of a dashboard panel that needs per-flow series
/// (`per_flow` other than "off"): empty with the shipped default config.
const PER_FLOW_MARKER: &str = "(needs per_flow)";

/// The `on(...)` label lists of every vector match in `promql`.
fn on_clauses(promql: &str) -> Vec<String> {
    promql
        .match_indices("on(")
        .filter(|(i, _)| {
            // `on(` as a keyword, not the end of another word.
            *i == 0 || !promql.as_bytes()[i - 1].is_ascii_alphanumeric()
        })
        .map(|(i, _)| promql[i + 3..].split(')').next().unwrap().to_string())
        .collect()
}

#[test]
fn grafana_dashboard_is_well_formed_and_joins_flows_per_host() {
    let path = repo().join("deploy/grafana/rttfair-dashboard.json");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("dashboard JSON");
    for key in ["uid", "title", "schemaVersion"] {
        assert!(!d[key].is_null(), "dashboard has no {key}");
    }
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(vars.contains(&"instance"), "no per-host variable: {vars:?}");
    let panels = d["panels"].as_array().unwrap();
    let mut ids: Vec<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), panels.len(), "panel ids repeat");
    for p in panels {
        let title = p["title"].as_str().unwrap();
        assert!(p["gridPos"].is_object(), "{title}: no gridPos");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}: no query");
        for t in targets {
            let expr = t["expr"].as_str().unwrap();
            for var in expr.split('$').skip(1) {
                let name: String = var
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(vars.contains(&name.as_str()), "{title}: ${name} undefined");
            }
            for on in on_clauses(expr) {
                assert!(on.contains("instance"), "{title}: on({on}) mixes hosts");
            }
            if expr.contains("rttfair_flow") {
                let legend = t["legendFormat"].as_str().unwrap_or("");
                assert!(
                    legend.contains("{{instance}}"),
                    "{title}: legend hides the host"
                );
            }
        }
    }
    // Panels that read per-flow families (docs/metrics.md: labels with
    // `flow`) say so in their title, and come after every aggregate panel,
    // which is what the shipped default config (per_flow = "off") draws.
    let reference = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    let per_flow_families: Vec<&str> = reference
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            (cols.len() > 5 && cols[4].split(", ").any(|x| x == "flow"))
                .then(|| cols[1].trim_matches('`'))
        })
        .collect();
    assert!(per_flow_families.contains(&"rttfair_flow_info"));
    let mut seen_per_flow = false;
    for p in panels {
        let title = p["title"].as_str().unwrap();
        let reads_flows = p["targets"].as_array().unwrap().iter().any(|t| {
            let expr = t["expr"].as_str().unwrap();
            per_flow_families.iter().any(|f| {
                expr.match_indices(f).any(|(i, _)| {
                    !expr[i + f.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        });
        let marked = title.ends_with(PER_FLOW_MARKER);
        assert_eq!(reads_flows, marked, "{title}: per-flow marker");
        assert!(
            marked || !seen_per_flow,
            "{title}: an aggregate panel after the per-flow ones"
        );
        seen_per_flow |= marked;
    }
    assert!(seen_per_flow, "no per-flow panel");
    // The documented example queries too.
    for doc in ["README.md", "docs/metrics.md", "docs/kubernetes.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        for on in on_clauses(&text) {
            assert!(on.contains("instance"), "{doc}: on({on}) mixes hosts");
        }
    }
}

/// `podman run`, removed after, without a network; the caller adds
/// options, the image and its arguments.
fn podman_run_command() -> Command {
    let mut c = common::image::podman_run();
    c.args(["--rm", "--network=none"]);
    c
}

/// `image` run with `args` (see [`podman_run_command`]).
fn podman_run(image: &str, args: &[&str]) -> Output {
    podman_run_command().arg(image).args(args).output().unwrap()
}

#[test]
fn container_image_builds_offline_and_its_entrypoint_runs() {
    // `cargo xtask image` itself, on the binary under test.
    let tag = format!("localhost/rttfair-test:{}", std::process::id());
    let out = xtask_image(&tag);
    let podman_ok = Command::new("podman")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        podman_ok,
        "no container runtime: `cargo xtask image` could not install podman: {}",
        String::from_utf8_lossy(&out.stderr)
            .trim()
            .lines()
            .last()
            .unwrap_or("")
    );
    struct Rmi(String);
    impl Drop for Rmi {
        fn drop(&mut self) {
            let _ = Command::new("podman").args(["rmi", "-f", &self.0]).output();
        }
    }
    let _rmi = Rmi(tag.clone());
    assert!(
        out.status.success(),
        "cargo xtask image failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // FROM scratch: exactly one layer, ours.
    let inspect = Command::new("podman")
        .args([
            "image",
            "inspect",
            "--format",
            "{{len .RootFS.Layers}}",
            &tag,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&inspect.stdout).trim(), "1");

    let version = assert_success(&podman_run(&tag, &["--version"]));
    assert_eq!(
        version.trim(),
        concat!("rttfairctl ", env!("CARGO_PKG_VERSION"))
    );
    let check = assert_success(&podman_run(&tag, &["daemon", "--check-config"]));
    assert!(
        check.starts_with("config ok:") && check.contains("needs CAP_BPF + CAP_PERFMON"),
        "{check}"
    );
    assert_one_line_error(
        &podman_run(
            &tag,
            &["daemon", "--check-config", "--config", "/nope.toml"],
        ),
        "/nope.toml",
    );
    // The lab's tools are inside and their libraries resolve.
    for (tool, arg) in [
        ("/usr/bin/iperf3", "--version"),
        ("/usr/sbin/tc", "-V"),
        ("/usr/sbin/ip", "-V"),
        // lab/src/rcvbytes.rs reads the receivers' byte counts with ss.
        ("/usr/bin/ss", "-V"),
        ("/usr/bin/dmesg", "-V"),
    ] {
        let out = podman_run_command()
            .args(["--entrypoint", tool, &tag, arg])
            .output()
            .unwrap();
        assert_success(&out);
    }
}

/// The DaemonSet's embedded daemon.toml (its ConfigMap) is a valid config:
/// the pod would otherwise crash-loop on a typo no schema can see.
#[test]
fn daemonset_config_passes_check_config() {
    let yaml = std::fs::read_to_string(repo().join("deploy/kubernetes/daemonset.yaml")).unwrap();
    let start = yaml
        .find("daemon.toml: |\n")
        .expect("the ConfigMap carries daemon.toml")
        + "daemon.toml: |\n".len();
    let toml: String = yaml[start..]
        .lines()
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or("")))
        .collect();
    assert!(toml.contains("bpffs"), "extracted:\n{toml}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("daemon.toml");
    std::fs::write(&config, &toml).unwrap();
    let text = check_config(&config);
    assert!(text.contains("load [qfair"), "{text}");
    // Its peer hash key comes from an optional Secret: absent (as here),
    // the daemon starts with a key of its own and says so.
    let key_file = "/etc/rttfair-peer-hash-key/key";
    assert!(toml.contains(key_file), "extracted:\n{toml}");
    let out = check_config_output(&config);
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not exist"), "{stderr}");
    // Present, its key is used; malformed, it is refused, Secret or not.
    let key = dir.path().join("key");
    std::fs::write(&config, toml.replace(key_file, key.to_str().unwrap())).unwrap();
    std::fs::write(&key, "000102030405060708090a0b0c0d0e0f\n").unwrap();
    check_config(&config);
    std::fs::write(&key, "0001020304050607\n").unwrap();
    let out = check_config_output(&config);
    assert_one_line_error(&out, key.to_str().unwrap());
}

/// A peer hash key file the daemon cannot use stops it in one line naming
/// the file, before it binds or touches BPF: here it holds no capability
/// at all, and the error is the key's, not a missing capability.
#[test]
fn a_bad_peer_hash_key_file_stops_the_daemon_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("peer-hash-key");
    let config = dir.path().join("d.toml");
    let port = free_port();
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\npeer_addresses = \"hashed\"\n\
             peer_hash_key_file = {:?}\n",
            key.to_str().unwrap()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    for (contents, says) in [
        (None, "No such file"),
        (Some("00010203"), "found 8"),
        (
            Some("not a key at all, not hex digits"),
            "another character",
        ),
    ] {
        if let Some(c) = contents {
            std::fs::write(&key, c).unwrap();
        }
        for check in [false, true] {
            let mut args = vec!["daemon", "--config", config];
            if check {
                args.push("--check-config");
            }
            let line = assert_one_line_error(&ctl_with_caps("+net_admin", &args), says);
            assert!(line.contains(key.to_str().unwrap()), "{line}");
            assert!(
                !line.contains("CAP_"),
                "checked before the capabilities: {line}"
            );
        }
    }
}
