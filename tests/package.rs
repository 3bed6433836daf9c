//! The Debian package: `cargo xtask deb` builds it, dpkg installs it (the
//! binary runs, the unit, default config, completions and man pages are
//! where Debian looks for them) and purges it without a trace.
//!
//! Guarded: it never touches a real installation. If the package, a
//! `rttfairctl` in /usr/bin or an /etc/rttfair exists before the test, it
//! stops with a message instead of installing over them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Purges the package on drop (also when an assertion fails midway).
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-P", "rttfair"]).output();
    }
}

#[test]
fn deb_installs_and_purges_cleanly() {
    // One package test at a time on the machine (dpkg has a single lock).
    let lock = std::fs::File::create("/run/rttfair-deb-test.lock").unwrap();
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .unwrap();
    let real = [
        Path::new("/usr/bin/rttfairctl"),
        Path::new("/etc/rttfair"),
        Path::new("/lib/systemd/system/rttfair-daemon.service"),
    ];
    if installed("rttfair") || real.iter().any(|p| p.exists()) {
        panic!(
            "refusing to run: an rttfair installation exists on this host (package or {:?}); \
             the test would overwrite and then remove it",
            real
        );
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(&cargo)
        .args(["xtask", "deb"])
        .current_dir(workspace()));
    let deb = std::fs::read_dir(workspace().join("target/debian"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("rttfair_{}-", env!("CARGO_PKG_VERSION")))
        })
        .expect("target/debian/rttfair_<version>-*.deb");

    let _purge = Purge;
    run(Command::new("dpkg").arg("-i").arg(&deb));
    assert!(installed("rttfair"));
    let files = run(Command::new("dpkg").args(["-L", "rttfair"]));
    for want in [
        "/usr/bin/rttfairctl",
        "/lib/systemd/system/rttfair-daemon.service",
        "/etc/rttfair/daemon.toml",
        "/usr/share/bash-completion/completions/rttfairctl",
        "/usr/share/zsh/vendor-completions/_rttfairctl",
        "/usr/share/fish/vendor_completions.d/rttfairctl.fish",
        "/usr/share/man/man1/rttfairctl.1.gz",
        "/usr/share/man/man1/rttfairctl-daemon.1.gz",
    ] {
        assert!(
            files.lines().any(|l| l == want),
            "{want} not installed:\n{files}"
        );
    }
    let version = run(Command::new("/usr/bin/rttfairctl").arg("--version"));
    assert_eq!(
        version.trim(),
        format!("rttfairctl {}", env!("CARGO_PKG_VERSION"))
    );
    let unit = std::fs::read_to_string("/lib/systemd/system/rttfair-daemon.service").unwrap();
    assert!(
        unit.contains("ExecStart=/usr/bin/rttfairctl daemon --config /etc/rttfair/daemon.toml"),
        "{unit}"
    );
    // The shipped config is one the daemon accepts.
    let config = std::fs::read_to_string("/etc/rttfair/daemon.toml").unwrap();
    rttfair_daemon::Config::parse(&config).expect("shipped daemon.toml");
    let conffiles = run(Command::new("dpkg-query").args(["-W", "-f=${Conffiles}", "rttfair"]));
    assert!(
        conffiles.contains("/etc/rttfair/daemon.toml"),
        "{conffiles}"
    );

    run(Command::new("dpkg").args(["-P", "rttfair"]));
    assert!(!installed("rttfair"));
    for gone in real {
        assert!(!gone.exists(), "{} left after purge", gone.display());
    }
}
