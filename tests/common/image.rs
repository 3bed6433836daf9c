//! What the container image tests share: the repository and target dir,
//! `cargo xtask image` on the binary under test, and `podman run` as this
//! kind of host allows it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
}

/// `cargo xtask image --binary <rttfairctl under test> --tag <tag>`: xtask
/// built into its own target dir (this cargo holds the workspace's), run
/// with the workspace's target dir. Panics if xtask does not build; the
/// image step's own output is the caller's to judge.
pub fn xtask_image(tag: &str) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let xtask_target = target_dir().join("tools/xtask-build");
    let built = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "xtask",
            "--target-dir",
        ])
        .arg(&xtask_target)
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(built.success(), "building xtask failed");
    Command::new(xtask_target.join("release/xtask"))
        .args([
            "image",
            "--binary",
            env!("CARGO_BIN_EXE_rttfairctl"),
            "--tag",
            tag,
        ])
        .env_remove("CARGO_TARGET_DIR")
        .current_dir(repo())
        .output()
        .unwrap()
}

/// `podman run` that works on this kind of host: runc (crun refuses hybrid
/// cgroup hierarchies) and rlimits no higher than ours (a sandbox without
/// CAP_SYS_RESOURCE cannot raise them to podman's defaults). The caller
/// adds options, the image and its arguments.
pub fn podman_run() -> Command {
    let mut c = Command::new("podman");
    c.args(["--runtime", "runc", "run"]).args([
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
    ]);
    c
}
