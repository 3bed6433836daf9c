//! `rttfairctl daemon` as a child of a lab tool (`rttfairctl demo`, the
//! soak bench): started on a loopback port with a config of the tool's,
//! answering /healthz before the tool goes on, stopped on drop.
//!
//! Why here: the demo (cli crate) and the soak bench (this crate's bench
//! binary) each spawned the daemon with their own copy of this; the cli
//! depends on this crate, not the other way round, so this is the one
//! crate both reach. It runs the daemon as a process (the `rttfairctl`
//! binary the caller names), so the lab takes no dependency on the daemon
//! crate.
//!
//! The /healthz probe is one HTTP/1.0 GET over loopback read up to its
//! status line, with std's `TcpStream`: the workspace has no HTTP client,
//! and one (ureq, reqwest) would bring its dependency tree into the lab for
//! these few lines.

use std::io::{Read, Seek, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rttfair_loader::BpfFs;

/// How long the daemon may take to answer /healthz on a busy two-core host.
pub const UP_WITHIN: Duration = Duration::from_secs(15);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// A running `rttfairctl daemon`: SIGTERM (it stops serving and leaves the
/// CCAs registered), then SIGKILL if it has not exited within 5 s, on
/// drop; its config file is removed with it.
pub struct DaemonChild {
    child: Child,
    port: u16,
    /// The config file it was given (a temporary file, removed on drop).
    _config: tempfile::NamedTempFile,
}

impl DaemonChild {
    /// Start `ctl --bpffs <fs> daemon --config <file with config_toml>
    /// --listen 127.0.0.1:<port>` and wait until it answers /healthz (any
    /// status: 503 only says the maps are not readable yet, the daemon is
    /// serving). An error, with what the daemon wrote to stderr, if it
    /// exits first or does not answer within [`UP_WITHIN`]; it is stopped
    /// then.
    pub fn start(ctl: &Path, fs: &BpfFs, port: u16, config_toml: &str) -> Result<DaemonChild> {
        let mut config = tempfile::Builder::new()
            .prefix("rttfair-daemon-")
            .suffix(".toml")
            .tempfile()
            .context("temporary config file for the daemon")?;
        config
            .write_all(config_toml.as_bytes())
            .context("write the daemon's config")?;
        // A file, not a pipe: nobody reads it while the daemon runs, and a
        // full pipe would block the daemon.
        let mut stderr = tempfile::tempfile().context("temporary file for the daemon's stderr")?;
        let child = Command::new(ctl)
            .args(["--bpffs", &fs.root().display().to_string(), "daemon"])
            .args(["--config", &config.path().display().to_string()])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(stderr.try_clone()?)
            .spawn()
            .with_context(|| format!("start {} daemon", ctl.display()))?;
        let mut daemon = DaemonChild {
            child,
            port,
            _config: config,
        };
        let deadline = Instant::now() + UP_WITHIN;
        loop {
            if let Some(status) = daemon.child.try_wait()? {
                bail!(
                    "the daemon exited ({status}) before answering /healthz on port {port}: {}",
                    said(&mut stderr)
                );
            }
            if healthz_status(port).is_some() {
                return Ok(daemon);
            }
            if Instant::now() >= deadline {
                bail!(
                    "the daemon did not answer /healthz on port {port} within {UP_WITHIN:?}: {}",
                    said(&mut stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id (for its memory and CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for DaemonChild {
    fn drop(&mut self) {
        // Not signalled once reaped: its pid may belong to another process.
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + STOP_WITHIN;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first of `preferred` that is free on loopback (0: any free port).
pub fn free_loopback_port(preferred: &[u16]) -> Result<u16> {
    preferred
        .iter()
        .chain(&[0])
        .find_map(|&p| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, p))
                .and_then(|l| l.local_addr())
                .ok()
                .map(|a| a.port())
        })
        .context("no free loopback port")
}

/// The status code of `GET /healthz` on loopback `port`, if it answered.
fn healthz_status(port: u16) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 16];
    let n = s.read(&mut head).ok()?;
    // "HTTP/1.x NNN ..."
    std::str::from_utf8(&head[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// What the daemon wrote to stderr, on one line (its last 400 bytes).
fn said(stderr: &mut std::fs::File) -> String {
    let mut text = String::new();
    let _ = stderr.rewind();
    let _ = stderr.read_to_string(&mut text);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().rev().nth(399) {
        Some((i, _)) => format!("...{}", &text[i..]),
        None if text.is_empty() => "(nothing on stderr)".into(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// An executable shell script in a temporary folder, as the "ctl".
    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        let p = dir.join("ctl");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_daemon_that_exits_is_reported_at_once_with_what_it_said() {
        let dir = tempfile::tempdir().unwrap();
        let ctl = script(
            dir.path(),
            "echo \"error: cannot listen on $7\" >&2; exit 3",
        );
        let port = free_loopback_port(&[]).unwrap();
        let t0 = Instant::now();
        let e = DaemonChild::start(&ctl, &BpfFs::new(dir.path()), port, "")
            .err()
            .expect("refused");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("exited (exit status: 3)")
                && msg.contains(&format!("cannot listen on 127.0.0.1:{port}")),
            "{msg}"
        );
        assert!(t0.elapsed() < UP_WITHIN / 2, "{:?}", t0.elapsed());
    }

    #[test]
    fn a_missing_ctl_is_an_error_naming_it() {
        let e = DaemonChild::start(
            Path::new("/nonexistent/rttfairctl"),
            &BpfFs::new("/nonexistent"),
            free_loopback_port(&[]).unwrap(),
            "",
        )
        .err()
        .expect("refused");
        assert!(
            format!("{e:#}").contains("/nonexistent/rttfairctl"),
            "{e:#}"
        );
    }

    #[test]
    fn a_taken_preferred_port_is_passed_over() {
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let p = taken.local_addr().unwrap().port();
        let got = free_loopback_port(&[p]).unwrap();
        assert_ne!(got, p);
        drop(taken);
        assert_eq!(free_loopback_port(&[p]).unwrap(), p);
    }
}
