//! `cargo xtask <task>`: everything a developer or CI runs, in one place.
//!
//! - `deps`            install the Debian packages the build and tests need
//! - `build`           build everything (BPF objects are compiled by the
//!                     loader's build script), release profile
//! - `test`            deps + the whole test suite (unit and kernel integration)
//! - `demo`            deps + build + the main job (see README)
//! - `bench <name>`    benchmarks that print figures (never timed assertions)
//!
//! Tasks that need root say so before doing anything.

use std::env;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

/// Debian packages the project needs, with what needs them.
const PACKAGES: &[(&str, &str)] = &[
    ("clang", "compiles the BPF programs"),
    ("llvm", "llvm-strip for BPF objects"),
    ("libelf-dev", "libbpf (vendored) links libelf"),
    ("zlib1g-dev", "libbpf (vendored) links zlib"),
    ("pkg-config", "locating libelf/zlib"),
    ("bpftool", "generates vmlinux.h from kernel BTF"),
    ("iproute2", "namespaces, veth, tc"),
    ("ethtool", "turns off TSO/GSO/GRO on emulated links"),
    ("iperf3", "lab traffic"),
    (
        "prometheus",
        "daemon integration test (promtool, a real scraper)",
    ),
    ("fonts-dejavu-core", "text in the lab's plots"),
];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    match task {
        "deps" => deps(),
        "build" => {
            deps()?;
            cargo(&["build", "--release", "--workspace"])
        }
        "test" => test(rest),
        "demo" => demo(rest),
        "bench" => bench(rest),
        "soak" => {
            deps()?;
            cargo(&["build", "--release", "-p", "rttfairctl"])?;
            cargo_run_bin("rttfair-bench", &[&["soak"], &strs(rest)[..]].concat())
        }
        "help" | "--help" | "-h" => {
            println!("usage: cargo xtask <deps|build|test|demo|bench NAME|soak [SECONDS]>");
            println!("benches: single-flow, verifier, lab-accuracy, daemon");
            Ok(())
        }
        other => bail!("unknown task '{other}' (try: cargo xtask help)"),
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn require_root(what: &str) -> Result<()> {
    let uid = Command::new("id").arg("-u").output().context("run id -u")?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        bail!("{what} needs root (it installs packages, loads BPF and creates network namespaces)");
    }
    Ok(())
}

/// Install missing packages with apt-get; a no-op when all are present.
fn deps() -> Result<()> {
    require_root("installing system packages")?;
    let missing: Vec<&str> = PACKAGES
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("xtask: installing {}", missing.join(" "));
        sh(
            "apt-get",
            &["update", "-q"],
            &[("DEBIAN_FRONTEND", "noninteractive")],
        )?;
        let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
        args.extend(&missing);
        sh("apt-get", &args, &[("DEBIAN_FRONTEND", "noninteractive")])?;
    }
    // libbpf-cargo formats the generated skeletons with rustfmt.
    let have_rustfmt = Command::new("rustfmt")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_rustfmt {
        sh("rustup", &["component", "add", "rustfmt"], &[])?;
    }
    Ok(())
}

/// Run the suite, echoing it, and end with one plain summary line over all
/// test binaries ("N passed, N failed"), so a reader (or CI) does not have to
/// add up cargo's per-binary lines.
fn test(rest: &[String]) -> Result<()> {
    use std::io::{BufRead, BufReader};
    deps()?;
    // --no-fail-fast: one failing binary must not hide the others' results.
    let mut args = vec!["test", "--workspace", "--release", "--no-fail-fast"];
    args.extend(strs(rest));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(&cargo)
        .args(&args)
        .current_dir(workspace_root())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("spawn cargo test")?;
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line?;
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut it = part.split_whitespace().rev();
                let (Some(word), Some(n)) = (it.next(), it.next()) else {
                    continue;
                };
                let n: u64 = n.parse().unwrap_or(0);
                match word {
                    "passed" => passed += n,
                    "failed" => failed += n,
                    "ignored" => ignored += n,
                    _ => {}
                }
            }
        }
    }
    let status = child.wait()?;
    println!("{passed} passed, {failed} failed, {ignored} skipped");
    if !status.success() {
        bail!("cargo test failed ({status})");
    }
    if passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

fn demo(rest: &[String]) -> Result<()> {
    deps()?;
    cargo(&["build", "--release", "-p", "rttfairctl"])?;
    let bin = target_dir().join("release/rttfairctl");
    let mut args = vec!["demo"];
    args.extend(strs(rest));
    sh(bin.to_str().unwrap(), &args, &[])
}

fn bench(rest: &[String]) -> Result<()> {
    if rest.is_empty() {
        bail!("which benchmark? single-flow, verifier");
    }
    deps()?;
    if rest[0] == "daemon" {
        cargo(&["build", "--release", "-p", "rttfairctl"])?;
    }
    cargo_run_bin("rttfair-bench", &strs(rest))
}

fn cargo_run_bin(bin: &str, args: &[&str]) -> Result<()> {
    let mut full = vec!["run", "--release", "--quiet", "--bin", bin, "--"];
    full.extend_from_slice(args);
    cargo(&full)
}

fn cargo(args: &[&str]) -> Result<()> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    sh(&cargo, args, &[])
}

fn sh(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<()> {
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("spawn {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}
