//! `cargo xtask <task>`: everything a developer or CI runs, in one place.
//!
//! - `deps [--print] [--distro debian|ubuntu|fedora] [--no-install]`:
//!   install the packages the build and tests need (apt), or print them
//!   for this (or the named) distribution; `--no-install` (also for
//!   `test` and `demo`) installs nothing when the tools are there
//! - `build`: build everything (BPF objects are compiled by the loader's
//!   build script), release profile
//! - `test [--repeat N]`: deps + the whole test suite (unit and kernel
//!   integration); N runs with per-test pass counts
//! - `demo`: deps + build + the main job (see README)
//! - `bench <name>`: benchmarks that print figures (never timed assertions)
//! - `bench fairness-grid --cca LIST [--rate R] [--quick] [--reps N]
//!   [--socket-buffer-mb N] [--out DIR]`: issue 14's two-flow grid,
//!   side-by-side tables per CCA (`--socket-buffer-mb`: the max of the
//!   namespaces' TCP socket buffers, MiB; the kernel's defaults otherwise)
//! - `man [DIR]`: man pages of rttfairctl (clap_mangen), default target/man
//! - `deb`: the Debian package (cargo-deb): binary, unit, config,
//!   completions, man
//! - `image`: deps + build + the container image, offline, FROM scratch
//!   (image.rs)
//!
//! Tasks that need root say so before doing anything.

use std::env;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

mod deps;
mod image;
mod watchdog;

use deps::Set;

/// The benches rttfair-bench runs (lab/src/bin/bench.rs): what `help` lists
/// and what `bench` accepts before it installs anything.
const BENCHES: &[&str] = &[
    "single-flow",
    "verifier",
    "lab-accuracy",
    "daemon",
    "soak",
    "fairness-grid",
];

/// The pip requirements file pinning kubernetes-validate (it validates
/// deploy/kubernetes offline); tests/deploy.rs reads the same file.
const KUBERNETES_VALIDATE_PIN: &str = "deploy/kubernetes/validate-requirements.txt";

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
        "deps" => deps_command(rest),
        "build" => {
            deps(Set::Build, false)?;
            cargo(&["build", "--release", "--workspace"])
        }
        "test" => test(rest),
        "demo" => demo(rest),
        "bench" => bench(rest),
        "image" => {
            let args = image::ImageArgs::parse(rest)?;
            deps(Set::All, false)?;
            let binary = match args.binary {
                Some(b) => b,
                None => {
                    cargo(&["build", "--release", "-p", "rttfairctl"])?;
                    target_dir().join("release/rttfairctl")
                }
            };
            let archive = image::build(
                &workspace_root(),
                &target_dir().join("image"),
                &binary,
                &args.tag,
            )?;
            println!(
                "image {} (podman), OCI archive {}",
                args.tag,
                archive.display()
            );
            Ok(())
        }
        "soak" => {
            deps(Set::Demo, false)?;
            cargo(&["build", "--release", "-p", "rttfairctl"])?;
            cargo_run_bin("rttfair-bench", &[&["soak"], &strs(rest)[..]].concat())
        }
        "man" => {
            let dir = rest.first().map(PathBuf::from);
            man(&dir.unwrap_or_else(|| target_dir().join("man")))
        }
        "deb" => deb(),
        "help" | "--help" | "-h" => {
            println!(
                "usage: cargo xtask <deps|build|test|demo|bench NAME|image|soak [SECONDS]|man [DIR]|deb>"
            );
            println!("  deps [--print] [--distro debian|ubuntu|fedora] [--no-install]; test/demo [--no-install]");
            println!("benches: {}", BENCHES.join(", "));
            println!("  fairness-grid --cca LIST [--rate MBIT] [--quick] [--reps N] [--socket-buffer-mb N] [--out DIR]");
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

/// `deps [--print] [--distro D] [--no-install]`.
fn deps_command(rest: &[String]) -> Result<()> {
    let mut print = false;
    let mut no_install = false;
    let mut distro = None;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--print" => print = true,
            "--no-install" => no_install = true,
            "--distro" => {
                let d = it
                    .next()
                    .context("--distro needs debian, ubuntu or fedora")?;
                distro = Some(deps::Distro::parse(d)?);
            }
            other => bail!("deps: unknown argument '{other}' (--print, --distro D, --no-install)"),
        }
    }
    if print {
        let distro = match distro {
            Some(d) => d,
            None => deps::detect()?,
        };
        println!(
            "{}",
            deps::print_line(&distro, Set::All, &deps::kernel_release())
        );
        return Ok(());
    }
    if distro.is_some() {
        bail!(
            "--distro only names the packages to print (with --print); installing uses this host's"
        );
    }
    deps(Set::All, no_install)
}

/// `--no-install` out of a task's arguments.
fn split_no_install(rest: &[String]) -> (bool, Vec<String>) {
    let no_install = rest.iter().any(|a| a == "--no-install");
    (
        no_install,
        rest.iter()
            .filter(|a| *a != "--no-install")
            .cloned()
            .collect(),
    )
}

/// Install what `set` needs with apt-get (a no-op when all are present).
/// With `no_install`, install nothing if the tools are there, and say
/// which are not. Where there is no apt, one line says what to install.
fn deps(set: Set, no_install: bool) -> Result<()> {
    if no_install {
        let missing = deps::missing_tools(set);
        if !missing.is_empty() {
            bail!(
                "--no-install, but missing: {} (`cargo xtask deps --print` lists the packages)",
                missing.join(", ")
            );
        }
    } else {
        install(set)?;
    }
    if set == Set::All {
        k8s_validate_venv()?;
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

fn install(set: Set) -> Result<()> {
    let distro = deps::detect()?;
    let kernel = deps::kernel_release();
    let have_apt = Command::new("apt-get").arg("--version").output().is_ok();
    if matches!(distro, deps::Distro::Fedora) || !have_apt {
        // Nothing installed here: the tools may already be there.
        if deps::missing_tools(set).is_empty() {
            return Ok(());
        }
        bail!(
            "no apt-get here; install the packages yourself, then run with --no-install: {}",
            deps::print_line(&distro, set, &kernel)
        );
    }
    let missing = deps::not_installed(&deps::packages(&distro, set, &kernel));
    if missing.is_empty() {
        return Ok(());
    }
    require_root("installing system packages")?;
    eprintln!("xtask: installing {}", missing.join(" "));
    sh(
        "apt-get",
        &["update", "-q"],
        &[("DEBIAN_FRONTEND", "noninteractive")],
    )?;
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().map(String::as_str));
    sh("apt-get", &args, &[("DEBIAN_FRONTEND", "noninteractive")])
}

/// kubernetes-validate in a venv under target/ (Debian's pip refuses
/// system-wide installs), at the version the pin file names: installed once
/// and again whenever the pin changes, then the tests run offline.
fn k8s_validate_venv() -> Result<()> {
    let venv = target_dir().join("tools/k8s-venv");
    let pin = workspace_root().join(KUBERNETES_VALIDATE_PIN);
    let text = std::fs::read_to_string(&pin).with_context(|| format!("read {}", pin.display()))?;
    let want = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("kubernetes-validate=="))
        .with_context(|| format!("{} pins no kubernetes-validate==VERSION", pin.display()))?;
    let installed = || {
        Command::new(venv.join("bin/kubernetes-validate"))
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let have = installed();
    if have.as_deref() == Some(want) {
        return Ok(());
    }
    eprintln!(
        "xtask: installing kubernetes-validate {want} into {} (installed: {})",
        venv.display(),
        have.as_deref().unwrap_or("none")
    );
    if !venv.join("bin/pip").exists() {
        sh("python3", &["-m", "venv", venv.to_str().unwrap()], &[])?;
    }
    let pip = venv.join("bin/pip");
    sh(
        pip.to_str().unwrap(),
        &["install", "--quiet", "-r", pin.to_str().unwrap()],
        &[],
    )?;
    match installed() {
        Some(v) if v == want => Ok(()),
        other => bail!(
            "kubernetes-validate in {} reports {} after installing {want}",
            venv.display(),
            other.as_deref().unwrap_or("no version")
        ),
    }
}

/// Run the suite, echoing it, and end with one plain summary line over all
/// test binaries ("N passed, N failed"), so a reader (or CI) does not have to
/// add up cargo's per-binary lines.
///
/// `--repeat N` runs the same suite N times (built once) and prints, before
/// the summary line (summed over all runs), each test's pass count: the
/// flakiness report issue 20 asks for. Any failed run fails the task.
fn test(rest: &[String]) -> Result<()> {
    let (no_install, rest) = split_no_install(rest);
    let (repeat, rest) = split_repeat(&rest)?;
    require_root("the test suite")?;
    deps(Set::All, no_install)?;
    ensure_cargo_deb()?; // the package test builds the .deb
    let mut total = Tally::default();
    let mut per_test: std::collections::BTreeMap<String, (u32, u32)> = Default::default();
    let mut any_failed = false;
    for run in 1..=repeat {
        if repeat > 1 {
            println!("xtask: run {run} of {repeat}");
        }
        let (tally, outcomes, ok) = run_suite(&rest)?;
        total.add(&tally);
        for (name, passed) in outcomes {
            let e = per_test.entry(name).or_default();
            if passed {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        any_failed |= !ok;
    }
    if repeat > 1 {
        println!("\nper-test results over {repeat} runs (passed/runs):");
        for (name, (p, f)) in &per_test {
            let mark = if *f > 0 { "  <-- FAILED" } else { "" };
            println!("  {p}/{}  {name}{mark}", p + f);
        }
    }
    println!(
        "{} passed, {} failed, {} skipped",
        total.passed, total.failed, total.ignored
    );
    if any_failed {
        bail!("cargo test failed");
    }
    if total.passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

/// `--repeat N` out of the arguments passed on to cargo test.
fn split_repeat(rest: &[String]) -> Result<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let mut repeat = 1;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        if a == "--repeat" {
            let n = it.next().context("--repeat needs a number")?;
            repeat = n
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("--repeat: '{n}' is not a whole number >= 1"))?;
        } else {
            out.push(a.clone());
        }
    }
    Ok((repeat, out))
}

#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.ignored += o.ignored;
    }
}

/// Each test's outcome keyed "<test binary>::<name>" (true: passed).
type Outcomes = Vec<(String, bool)>;

/// One `cargo test` over the workspace, echoed; its tally, each test's
/// outcome, and whether cargo succeeded.
fn run_suite(rest: &[String]) -> Result<(Tally, Outcomes, bool)> {
    use std::io::{BufRead, BufReader};
    // --no-fail-fast: one failing binary must not hide the others' results.
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut args = vec![
        "test".to_string(),
        "--workspace".into(),
        "--release".into(),
        "--no-fail-fast".into(),
    ];
    args.extend(rest.iter().cloned());
    // cargo names each test binary on stderr ("Running tests/ccas.rs (...)")
    // and prints its tests on stdout: one stream keeps them in order.
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec '{cargo}' {} 2>&1", quoted.join(" ")))
        .current_dir(workspace_root())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("spawn cargo test")?;
    let dog = watchdog::Watchdog::start(child.id(), watchdog::SILENCE, watchdog::GRACE);
    let mut tally = Tally::default();
    let mut outcomes = Vec::new();
    let mut binary = String::from("?");
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line?;
        dog.heard();
        println!("{line}");
        let trimmed = line.trim_start();
        if let Some(r) = trimmed.strip_prefix("Running ") {
            // "unittests src/lib.rs (target/release/deps/rttfair_loader-1a2b)"
            // -> "rttfair_loader"; "tests/ccas.rs (...)" -> "ccas".
            binary = r
                .rsplit_once('(')
                .map(|(_, p)| p.trim_end_matches(')'))
                .and_then(|p| p.rsplit('/').next())
                .map(|f| f.rsplit_once('-').map_or(f, |(n, _)| n).to_string())
                .unwrap_or_else(|| r.to_string());
        } else if let Some(r) = trimmed.strip_prefix("Doc-tests ") {
            binary = format!("doc:{r}");
        } else if let Some(t) = trimmed.strip_prefix("test ") {
            if let Some(name) = t.strip_suffix(" ... ok") {
                outcomes.push((format!("{binary}::{name}"), true));
            } else if let Some(name) = t.strip_suffix(" ... FAILED") {
                outcomes.push((format!("{binary}::{name}"), false));
            }
        }
        if let Some(rest) = line.strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut it = part.split_whitespace().rev();
                let (Some(word), Some(n)) = (it.next(), it.next()) else {
                    continue;
                };
                let n: u64 = n.parse().unwrap_or(0);
                match word {
                    "passed" => tally.passed += n,
                    "failed" => tally.failed += n,
                    "ignored" => tally.ignored += n,
                    _ => {}
                }
            }
        }
    }
    let status = child.wait()?;
    let stopped = dog.fired();
    if stopped {
        println!("xtask: a stuck test binary was stopped (see the lines above)");
    }
    Ok((tally, outcomes, status.success() && !stopped))
}

fn demo(rest: &[String]) -> Result<()> {
    // Only what the demo runs: the build and the lab's tools.
    let (no_install, rest) = split_no_install(rest);
    require_root("the demo")?;
    deps(Set::Demo, no_install)?;
    cargo(&["build", "--release", "-p", "rttfairctl"])?;
    let bin = target_dir().join("release/rttfairctl");
    let mut args = vec!["demo"];
    args.extend(strs(&rest));
    sh(bin.to_str().unwrap(), &args, &[])
}

fn bench(rest: &[String]) -> Result<()> {
    let name = bench_name(rest)?;
    deps(Set::Demo, false)?;
    if name == "daemon" {
        cargo(&["build", "--release", "-p", "rttfairctl"])?;
    }
    cargo_run_bin("rttfair-bench", &strs(rest))
}

/// The bench `rest` names first, if it is one of [`BENCHES`].
fn bench_name(rest: &[String]) -> Result<&str> {
    let list = BENCHES.join(", ");
    let name = rest
        .first()
        .with_context(|| format!("which benchmark? {list}"))?;
    if !BENCHES.contains(&name.as_str()) {
        bail!("unknown benchmark '{name}' ({list})");
    }
    Ok(name)
}

/// Build rttfairctl and write its man pages into `dir`.
fn man(dir: &std::path::Path) -> Result<()> {
    cargo(&["build", "--release", "-p", "rttfairctl"])?;
    let ctl = target_dir().join("release/rttfairctl");
    sh(ctl.to_str().unwrap(), &["man", dir.to_str().unwrap()], &[])?;
    println!("man pages in {}", dir.display());
    Ok(())
}

/// cargo-deb, installed with cargo if missing (a crates.io package; the
/// first install compiles it, a few minutes).
fn ensure_cargo_deb() -> Result<()> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let have = Command::new(&cargo)
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("xtask: installing cargo-deb");
        sh(&cargo, &["install", "--locked", "cargo-deb"], &[])?;
    }
    Ok(())
}

/// The .deb: the assets clap generates (completions, man pages) and the
/// unit pointed at /usr/bin are staged in target/deb-assets, then cargo-deb
/// packs what cli/Cargo.toml's [package.metadata.deb] lists.
fn deb() -> Result<()> {
    ensure_cargo_deb()?;
    cargo(&["build", "--release", "-p", "rttfairctl"])?;
    let ctl = target_dir().join("release/rttfairctl");
    let stage = target_dir().join("deb-assets");
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(stage.join("completions"))?;
    sh(
        ctl.to_str().unwrap(),
        &["man", stage.join("man").to_str().unwrap()],
        &[],
    )?;
    for (shell, file) in [
        ("bash", "rttfairctl"),
        ("zsh", "_rttfairctl"),
        ("fish", "rttfairctl.fish"),
    ] {
        let out = Command::new(&ctl)
            .args(["completions", shell])
            .output()
            .context("run rttfairctl completions")?;
        if !out.status.success() {
            bail!("rttfairctl completions {shell} failed");
        }
        std::fs::write(stage.join("completions").join(file), out.stdout)?;
    }
    // The unit in deploy/ documents a manual install to /usr/local/bin; the
    // package installs to /usr/bin.
    let unit =
        std::fs::read_to_string(workspace_root().join("deploy/systemd/rttfair-daemon.service"))?;
    std::fs::write(
        stage.join("rttfair-daemon.service"),
        unit.replace("/usr/local/bin/rttfairctl", "/usr/bin/rttfairctl"),
    )?;
    cargo(&["deb", "-p", "rttfairctl", "--no-build"])?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_bench_name_is_checked_against_all_six_benches() {
        for b in BENCHES {
            assert_eq!(bench_name(&args(&[b, "--quick"])).unwrap(), *b);
        }
        let e = bench_name(&args(&["single_flow"])).unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown benchmark 'single_flow' (single-flow, verifier, lab-accuracy, daemon, soak, fairness-grid)"
        );
        let e = bench_name(&[]).unwrap_err().to_string();
        assert!(
            e.starts_with("which benchmark?") && e.ends_with("soak, fairness-grid"),
            "{e}"
        );
    }

    #[test]
    fn repeat_must_be_a_whole_number_of_at_least_one() {
        let (n, rest) = split_repeat(&args(&["--repeat", "3", "--", "x"])).unwrap();
        assert_eq!((n, rest), (3, args(&["--", "x"])));
        for bad in ["x", "0", "-1", "1.5"] {
            let e = split_repeat(&args(&["--repeat", bad]))
                .unwrap_err()
                .to_string();
            assert_eq!(e, format!("--repeat: '{bad}' is not a whole number >= 1"));
        }
        assert!(split_repeat(&args(&["--repeat"])).is_err());
    }
}
