//! The crates' layers: the loader at the bottom, the daemon and the lab
//! each on the loader only, rttfairctl on top, xtask on none of them
//! (it must build before the BPF toolchain is installed). Read from
//! `cargo metadata`, every kind of dependency (normal, build, dev), so a
//! `use` of a crate above cannot come in through a Cargo.toml edit.

use std::collections::BTreeMap;
use std::process::Command;

/// Each workspace package and the workspace packages it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("rttfair-loader", &[]),
    ("rttfair-lab", &["rttfair-loader"]),
    ("rttfair-daemon", &["rttfair-loader"]),
    (
        "rttfairctl",
        &["rttfair-loader", "rttfair-lab", "rttfair-daemon"],
    ),
    ("xtask", &[]),
];

/// Workspace package -> the workspace packages it depends on.
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .args(["--manifest-path", manifest])
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .map(|d| d["name"].as_str().expect("dependency name"))
                .filter(|d| names.contains(d))
                .map(String::from)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let deps = workspace_dependencies();
    let known: Vec<&str> = ALLOWED.iter().map(|(p, _)| *p).collect();
    let listed: Vec<&str> = deps.keys().map(String::as_str).collect();
    assert_eq!(
        listed,
        {
            let mut k = known.clone();
            k.sort();
            k
        },
        "a workspace package was added or renamed: give it its layer in ALLOWED"
    );
    for (package, allowed) in ALLOWED {
        let wrong: Vec<&String> = deps[*package]
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            wrong.is_empty(),
            "{package} depends on {wrong:?}; it may depend on {allowed:?} only (the layers: loader; lab, daemon; rttfairctl)"
        );
    }
}
