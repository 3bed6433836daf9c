//! The git commit the daemon is built from, for `rttfair_build_info`.
//!
//! `RTTFAIR_GIT_COMMIT` in the build environment (image and package builds
//! without a .git folder set it), else `git rev-parse HEAD` at build time,
//! else "unknown": the same order as lab/build.rs, without its dirty mark
//! (a metric label that changed with every edit would only add series).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTTFAIR_GIT_COMMIT");
    let commit = match std::env::var("RTTFAIR_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(c) => {
                // A new commit or checkout reruns this script.
                for p in ["HEAD", "logs/HEAD"] {
                    if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
                c
            }
            None => "unknown".to_string(),
        },
    };
    println!("cargo:rustc-env=RTTFAIR_BUILD_COMMIT={commit}");
}
