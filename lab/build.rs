//! Records the git commit the lab is built from, for each results folder's
//! provenance.json (see src/results/provenance.rs).
//!
//! Order: `RTTFAIR_GIT_COMMIT` in the build environment (image builds
//! without a .git folder set it), else `git rev-parse HEAD` run here at
//! build time, else "unknown". The source is recorded next to the commit.
//!
//! With git, the build is also marked dirty or not: whether the tracked
//! files of [`INPUTS`] differ from the commit. `lab sweep --resume` keeps
//! earlier results only from a clean build (src/run/resume.rs), so the mark
//! must follow the working tree: this script reruns when any of those
//! files changes, not only when HEAD or the index does (an edit made
//! after a clean build and never staged would otherwise still read
//! "no").

use std::path::Path;
use std::process::Command;

/// What `rttfairctl`, and so every lab result, is built from, relative to
/// the workspace root. The rest of the repository (docs, deploy, scripts,
/// tests, xtask, CI) cannot change a measurement, and leaving it out
/// keeps a docs edit from marking a build dirty or rebuilding the lab.
const INPUTS: &[&str] = &[
    "bpf",
    "loader",
    "lab",
    "cli",
    "daemon",
    "scenarios",
    "Cargo.toml",
    "Cargo.lock",
    ".cargo",
];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// "no" or "yes" by `git status` over [`INPUTS`] (untracked files
/// ignored: they are not part of the build unless a tracked file names
/// them), "unknown" if git cannot tell.
fn dirty(root: &Path) -> &'static str {
    let root = root.to_string_lossy();
    let mut args = vec![
        "-C",
        &*root,
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
    ];
    args.extend_from_slice(INPUTS);
    match git(&args) {
        Some(s) if s.is_empty() => "no",
        Some(_) => "yes",
        None => "unknown",
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTTFAIR_GIT_COMMIT");
    let (commit, source, dirty) = match std::env::var("RTTFAIR_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => {
            (c.trim().to_string(), "env RTTFAIR_GIT_COMMIT", "unknown")
        }
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(c) => {
                // INPUTS are relative to the workspace root, this crate's
                // parent: not git's top level, which is higher up when the
                // workspace sits inside a larger repository.
                let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
                let root = Path::new(&manifest).parent().expect("lab/ has a parent");
                // A new commit, checkout or staged change reruns this
                // script, and so does an edit to any input (cargo scans a
                // folder named here for any file newer than the last run).
                for p in ["HEAD", "logs/HEAD", "index"] {
                    if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
                for input in INPUTS {
                    println!("cargo:rerun-if-changed={}", root.join(input).display());
                }
                (c, "git rev-parse HEAD at build time", dirty(root))
            }
            None => (
                "unknown".to_string(),
                "none (no git, no RTTFAIR_GIT_COMMIT)",
                "unknown",
            ),
        },
    };
    println!("cargo:rustc-env=RTTFAIR_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=RTTFAIR_BUILD_COMMIT_SOURCE={source}");
    println!("cargo:rustc-env=RTTFAIR_BUILD_DIRTY={dirty}");
}
