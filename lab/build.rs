//! Records the git commit the lab is built from, for each results folder's
//! provenance.json (see src/provenance.rs).
//!
//! Order: `RTTFAIR_GIT_COMMIT` in the build environment (image builds
//! without a .git folder set it), else `git rev-parse HEAD` run here at
//! build time, else "unknown". The source is recorded next to the commit.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTTFAIR_GIT_COMMIT");
    let (commit, source, dirty) = match std::env::var("RTTFAIR_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => {
            (c.trim().to_string(), "env RTTFAIR_GIT_COMMIT", "unknown")
        }
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(c) => {
                // A new commit, checkout or staged change reruns this script.
                for p in ["HEAD", "logs/HEAD", "index"] {
                    if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
                let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
                    Some(s) if s.is_empty() => "no",
                    Some(_) => "yes",
                    None => "unknown",
                };
                (c, "git rev-parse HEAD at build time", dirty)
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
