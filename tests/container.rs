//! The image run as the manifests run it (needs the kernel and podman,
//! which `cargo xtask deps` installs):
//! - like the DaemonSet: host network, CAP_BPF + CAP_PERFMON only, seccomp
//!   and AppArmor unconfined, read-only root, the host's /sys/fs/bpf with
//!   HostToContainer (rslave) propagation and the DaemonSet's own
//!   daemon.toml: it loads the CCAs, is ready, and serves metrics that a
//!   scrape reads (its RSS is printed from `process_resident_memory_bytes`);
//! - like the lab sweep Job: privileged, its own network namespace, /run a
//!   tmpfs, /sys/fs/bpf and a results folder mounted: `rttfairctl lab run
//!   ci-smoke` runs to the end inside it, with every tool the lab calls.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::image::{podman_run, repo, xtask_image};
use common::*;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Removes the image and any container named after this test on drop.
struct Cleanup {
    image: String,
    containers: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("podman")
                .args(["rm", "-f", "-t", "2", c])
                .output();
        }
        let _ = Command::new("podman")
            .args(["rmi", "-f", &self.image])
            .output();
    }
}

/// The DaemonSet's ConfigMap daemon.toml, as the pod gets it.
fn daemonset_config() -> String {
    let yaml = std::fs::read_to_string(repo().join("deploy/kubernetes/daemonset.yaml")).unwrap();
    let start = yaml.find("daemon.toml: |\n").unwrap() + "daemon.toml: |\n".len();
    yaml[start..]
        .lines()
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or("")))
        .collect()
}

/// The CCAs a config's `load = [...]` names.
fn loads(config: &str) -> Vec<String> {
    let line = config
        .lines()
        .find(|l| l.starts_with("load = ["))
        .expect("the DaemonSet config loads CCAs");
    line["load = [".len()..line.find(']').unwrap()]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect()
}

#[test]
fn the_image_runs_as_the_daemonset_and_the_lab_job_run_it() {
    let t = KernelTest::new();
    let root = t.fs.root().to_str().unwrap().to_string();
    let tmp = rttfair_lab::testkit::temp_folder("container");

    // The image, from the binary under test.
    let id = std::process::id();
    let image = format!("localhost/rttfair-container-test:{id}");
    let daemon_name = format!("rttfair-test-daemon-{id}");
    let job_name = format!("rttfair-test-lab-{id}");
    let _cleanup = Cleanup {
        image: image.clone(),
        containers: vec![daemon_name.clone(), job_name.clone()],
    };
    let out = xtask_image(&image);
    assert!(out.status.success(), "cargo xtask image: {}", text(&out));
    let size = Command::new("podman")
        .args(["image", "inspect", "--format", "{{.Size}}", &image])
        .output()
        .unwrap();
    let size: u64 = String::from_utf8_lossy(&size.stdout)
        .trim()
        .parse()
        .unwrap();
    println!("image size: {:.1} MB", size as f64 / 1e6);

    // The DaemonSet's pod: its config, its privileges and mounts.
    let config = daemonset_config();
    let ccas = loads(&config);
    let etc = tmp.path().join("etc-rttfair");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join("daemon.toml"), &config).unwrap();
    let port = free_port();
    let out = podman_run()
        .args(["-d", "--name", &daemon_name, "--network", "host"])
        .args([
            "--cap-drop",
            "ALL",
            "--cap-add",
            "BPF",
            "--cap-add",
            "PERFMON",
        ])
        .args([
            "--security-opt",
            "seccomp=unconfined",
            "--security-opt",
            "apparmor=unconfined",
        ])
        .args([
            "--security-opt",
            "no-new-privileges",
            "--read-only",
            "--user",
            "0",
        ])
        .args(["-v", "/sys/fs/bpf:/sys/fs/bpf:rslave"])
        .arg("-v")
        .arg(format!("{}:/etc/rttfair:ro", etc.display()))
        .arg(&image)
        .args([
            "--bpffs",
            &root,
            "daemon",
            "--config",
            "/etc/rttfair/daemon.toml",
        ])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "podman run (daemon): {}", text(&out));
    let logs = || {
        text(
            &Command::new("podman")
                .args(["logs", &daemon_name])
                .output()
                .unwrap(),
        )
    };
    let ready = wait_until(Duration::from_secs(30), || {
        http_get(port, "/readyz").is_some_and(|(s, _)| s == 200)
    });
    assert!(
        ready,
        "the daemon in the container is not ready:\n{}",
        logs()
    );
    for cca in &ccas {
        assert!(
            registered(cca),
            "the containerised daemon did not load {cca}"
        );
    }
    // Two scrapes: the second sees the first's refresh, and the process.
    http_get(port, "/metrics").unwrap();
    let (status, metrics) = http_get(port, "/metrics").unwrap();
    assert_eq!(status, 200);
    for cca in &ccas {
        let line = format!("rttfair_cca_loaded{{cca=\"{cca}\"}} 1.0");
        assert!(metrics.contains(&line), "{line}:\n{metrics}");
    }
    assert!(
        metrics.lines().any(|l| l == "rttfair_ready 1.0"),
        "{metrics}"
    );
    let rss: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
        .expect("process_resident_memory_bytes")
        .parse()
        .unwrap();
    println!("daemon RSS in the container: {:.1} MiB", rss / 1048576.0);
    assert!(
        rss > 1e6 && rss < 128.0 * 1048576.0,
        "{rss} bytes: over the pod's limit"
    );
    let stop = Command::new("podman")
        .args(["stop", "-t", "10", &daemon_name])
        .output()
        .unwrap();
    assert!(stop.status.success(), "podman stop: {}", text(&stop));
    // unload_on_exit = false: the pod's end leaves the CCAs registered.
    for cca in &ccas {
        assert!(registered(cca), "{cca} went with the pod");
        assert_success(&t.run(&["unload", cca]));
    }

    // The lab sweep Job's pod: privileged, own network namespace, /run a
    // tmpfs (the Job's emptyDir), bpffs and a results folder.
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let out = podman_run()
        .args([
            "--rm",
            "--name",
            &job_name,
            "--network",
            "none",
            "--privileged",
        ])
        .args(["--tmpfs", "/run", "-v", "/sys/fs/bpf:/sys/fs/bpf"])
        .arg("-v")
        .arg(format!("{}:/results", results.display()))
        .arg(&image)
        .args([
            "--bpffs", &root, "lab", "run", "ci-smoke", "--quiet", "--out", "/results",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lab run ci-smoke in the container: {}",
        text(&out)
    );
    fn find(dir: &Path, name: &str) -> Option<PathBuf> {
        for e in std::fs::read_dir(dir).ok()? {
            let p = e.ok()?.path();
            if p.file_name().is_some_and(|n| n == name) {
                return Some(p);
            }
            if p.is_dir() {
                if let Some(f) = find(&p, name) {
                    return Some(f);
                }
            }
        }
        None
    }
    let provenance = find(&results, "provenance.json")
        .unwrap_or_else(|| panic!("no provenance.json under the results: {}", text(&out)));
    println!("lab run in the container wrote {}", provenance.display());
}
