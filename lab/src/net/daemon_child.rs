//! `rttfairctl daemon` as a child process: the one place that starts it
//! (on a loopback port, with a config text or arguments of the caller's),
//! waits until /healthz (or /readyz) answers, keeps its stderr, and stops it on drop.
//! Its users: `rttfairctl demo`, the soak and daemon benches, and the
//! kernel integration tests (tests/common/daemon.rs).
//!
//! Why here: each of those spawned, polled and killed the daemon with its
//! own copy of this; the cli and the tests depend on this crate, not the
//! other way round, so this is the one crate all reach. It runs the daemon
//! as a process (the `rttfairctl` binary the caller names), so the lab
//! takes no dependency on the daemon crate.
//!
//! The probe is one HTTP/1.0 GET over loopback read up to its
//! status line, with std's `TcpStream`: the workspace has no HTTP client,
//! and one (ureq, reqwest) would bring its dependency tree into the lab for
//! these few lines.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;
use rttfair_loader::BpfFs;

/// How long the daemon may take to answer /healthz on a busy two-core host
/// (unless [`Launch::up_within`] says otherwise).
pub const UP_WITHIN: Duration = Duration::from_secs(15);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// What the daemon must answer before `start` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// Any answer on /healthz (liveness): it is serving, with or without
    /// readable maps. What a tool that loads CCAs later needs.
    Serving,
    /// 200 on /readyz (readiness): serving, and the maps it exports are
    /// of this build's ABI and readable. What a caller that scrapes flows
    /// at once needs.
    Healthy,
}

impl Ready {
    /// The path probed.
    fn path(self) -> &'static str {
        match self {
            Ready::Serving => "/healthz",
            Ready::Healthy => "/readyz",
        }
    }

    /// Does an answer with `status` mean the daemon is ready?
    fn met_by(self, status: u16) -> bool {
        self == Ready::Serving || status == 200
    }
}

/// How to start one daemon: made by [`DaemonChild::launch`], adjusted by
/// its methods, run by [`Launch::start`]. A builder because callers differ
/// in a few of these (a config text or a file of their own, extra
/// arguments, how ready, how long to wait) and share the rest.
#[must_use = "a Launch does nothing until start"]
pub struct Launch<'a> {
    ctl: &'a Path,
    fs: &'a BpfFs,
    port: u16,
    config: Option<&'a str>,
    args: Vec<OsString>,
    ready: Ready,
    up_within: Duration,
}

impl<'a> Launch<'a> {
    /// Give the daemon this config (TOML text; written to a temporary file
    /// passed as `--config`, removed with the daemon). Without it the
    /// daemon reads its default config path, as installed.
    pub fn config(mut self, toml: &'a str) -> Self {
        self.config = Some(toml);
        self
    }

    /// More arguments after `daemon` (e.g. `--config` with a file of the
    /// caller's own).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// What the daemon must answer before [`Launch::start`] returns
    /// (default [`Ready::Serving`]).
    pub fn ready(mut self, ready: Ready) -> Self {
        self.ready = ready;
        self
    }

    /// How long it may take to be ready (default [`UP_WITHIN`]).
    pub fn up_within(mut self, limit: Duration) -> Self {
        self.up_within = limit;
        self
    }

    /// Start `ctl --bpffs <fs> daemon [--config <file>] <args> --listen
    /// 127.0.0.1:<port>` and wait until it answers as
    /// [`Launch::ready`] says. An error, with the end of what the daemon
    /// wrote to stderr, if it exits first or is not ready in time; it is
    /// stopped then.
    pub fn start(self) -> Result<DaemonChild> {
        let port = self.port;
        let config = self.config.map(config_file).transpose()?;
        // A file, not a pipe: nobody reads it while the daemon runs, and a
        // full pipe would block the daemon.
        let stderr = tempfile::tempfile().context("temporary file for the daemon's stderr")?;
        let mut cmd = Command::new(self.ctl);
        stop_with_parent(&mut cmd);
        cmd.arg("--bpffs").arg(self.fs.root()).arg("daemon");
        if let Some(c) = &config {
            cmd.arg("--config").arg(c.path());
        }
        let child = cmd
            .args(&self.args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(stderr.try_clone()?)
            .spawn()
            .with_context(|| format!("start {} daemon", self.ctl.display()))?;
        let mut daemon = DaemonChild {
            child,
            port,
            stderr,
            _config: config,
        };
        let deadline = Instant::now() + self.up_within;
        let mut last = None;
        loop {
            if let Some(status) = daemon.child.try_wait()? {
                bail!(
                    "the daemon exited ({status}) before answering {} on port {port}: {}",
                    self.ready.path(),
                    daemon.stderr_tail()
                );
            }
            last = http_status(port, self.ready.path()).or(last);
            if last.is_some_and(|s| self.ready.met_by(s)) {
                return Ok(daemon);
            }
            if Instant::now() >= deadline {
                let answer = match last {
                    Some(s) => format!(" with 200 (last answer {s})"),
                    None => String::new(),
                };
                bail!(
                    "the daemon did not answer {}{answer} on port {port} within {:?}: {}",
                    self.ready.path(),
                    self.up_within,
                    daemon.stderr_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// SIGTERM the child when this process ends, however it ends: a signal
/// whose handler exits without unwinding (the netns cleanup thread of
/// `demo`), or SIGKILL, skips [`DaemonChild`]'s drop, and an orphaned
/// daemon would keep serving on its port. (The kernel sends it when the
/// *thread* that spawned the child ends: each caller starts the daemon from
/// a thread that outlives it, its main thread or a test's.)
fn stop_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: between fork and exec only the prctl and getppid syscalls
    // run; nothing allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
            // The parent may have died before the prctl: then no signal
            // will come, so do not start at all.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// A running `rttfairctl daemon`: SIGTERM (it stops serving and leaves the
/// CCAs registered), then SIGKILL if it has not exited within 5 s, on
/// drop, also when the caller panics; its config file is removed with it.
pub struct DaemonChild {
    child: Child,
    port: u16,
    /// Its stderr (an unlinked temporary file), read with positioned reads:
    /// the daemon writes through a duplicate of this descriptor, which
    /// shares its file offset, so moving that offset would move the
    /// daemon's next write.
    stderr: File,
    /// The config file it was given, if any (removed on drop).
    _config: Option<tempfile::NamedTempFile>,
}

impl DaemonChild {
    /// Start `ctl --bpffs <fs> daemon --config <file with config_toml>
    /// --listen 127.0.0.1:<port>` and wait until it answers /healthz (any
    /// status): [`DaemonChild::launch`] with its defaults and a config.
    pub fn start(ctl: &Path, fs: &BpfFs, port: u16, config_toml: &str) -> Result<DaemonChild> {
        DaemonChild::launch(ctl, fs, port)
            .config(config_toml)
            .start()
    }

    /// How to start `ctl daemon` on bpffs root `fs`, listening on loopback
    /// `port`: no config of its own, ready on any /healthz answer within
    /// [`UP_WITHIN`], until the [`Launch`] methods say otherwise.
    pub fn launch<'a>(ctl: &'a Path, fs: &'a BpfFs, port: u16) -> Launch<'a> {
        Launch {
            ctl,
            fs,
            port,
            config: None,
            args: Vec::new(),
            ready: Ready::Serving,
            up_within: UP_WITHIN,
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

    /// Still running (not exited, or exited but not yet noticed)?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Send `signal` (SIGTERM to stop it cleanly, SIGKILL to crash it). An
    /// error once it has exited: its pid may be another process's by then.
    pub fn signal(&mut self, signal: Signal) -> Result<()> {
        if !self.running() {
            bail!("the daemon has exited; not sending {signal}");
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), signal)
            .with_context(|| format!("send {signal} to the daemon"))
    }

    /// Wait for it to exit.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        self.child.wait().context("wait for the daemon")
    }

    /// All it has written to stderr so far (all of it, once it exited).
    pub fn stderr(&self) -> Result<String> {
        let len = self.stderr.metadata()?.len();
        let mut buf = vec![0u8; len as usize];
        self.stderr
            .read_exact_at(&mut buf, 0)
            .context("read the daemon's stderr")?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// What it wrote to stderr, on one line (its last 400 characters), for
    /// an error message.
    fn stderr_tail(&self) -> String {
        let text = self.stderr().unwrap_or_default();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match text.char_indices().rev().nth(399) {
            Some((i, _)) => format!("...{}", &text[i..]),
            None if text.is_empty() => "(nothing on stderr)".into(),
            None => text,
        }
    }
}

impl Drop for DaemonChild {
    fn drop(&mut self) {
        // Not signalled once reaped: its pid may belong to another process.
        if !self.running() {
            return;
        }
        let _ = self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + STOP_WITHIN;
        while Instant::now() < deadline {
            if !self.running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toml` in a temporary file, for `--config`.
fn config_file(toml: &str) -> Result<tempfile::NamedTempFile> {
    let mut config = tempfile::Builder::new()
        .prefix("rttfair-daemon-")
        .suffix(".toml")
        .tempfile()
        .context("temporary config file for the daemon")?;
    config
        .write_all(toml.as_bytes())
        .context("write the daemon's config")?;
    Ok(config)
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

/// The status code of `GET <path>` on loopback `port`, if it answered.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// An executable shell script standing in for `rttfairctl`, in a
    /// temporary folder that is also the bpffs root it is given.
    struct FakeCtl {
        _dir: tempfile::TempDir,
        ctl: std::path::PathBuf,
        fs: BpfFs,
    }

    impl FakeCtl {
        fn new(body: &str) -> FakeCtl {
            let dir = tempfile::tempdir().unwrap();
            let ctl = dir.path().join("ctl");
            std::fs::write(&ctl, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o755)).unwrap();
            let fs = BpfFs::new(dir.path());
            FakeCtl { _dir: dir, ctl, fs }
        }

        fn launch(&self, port: u16) -> Launch<'_> {
            DaemonChild::launch(&self.ctl, &self.fs, port)
        }
    }

    #[test]
    fn a_daemon_that_exits_is_reported_at_once_with_what_it_said() {
        let fake = FakeCtl::new("echo \"error: cannot listen on $7\" >&2; exit 3");
        let port = free_loopback_port(&[]).unwrap();
        let t0 = Instant::now();
        let e = DaemonChild::start(&fake.ctl, &fake.fs, port, "")
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

    /// A stand-in for the daemon's HTTP side: a loopback port whose every
    /// request is answered with `status`, for the rest of the test run.
    fn answering(status: u16) -> u16 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                let _ = s.read(&mut [0u8; 512]);
                let _ = write!(s, "HTTP/1.0 {status} Whatever\r\n\r\n");
            }
        });
        port
    }

    /// Poll `f` for up to 10 s.
    fn within_10s(mut f: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        f()
    }

    #[test]
    fn extra_args_go_before_listen_and_no_config_is_passed_unless_given() {
        let fake = FakeCtl::new("echo \"$@\" >&2; exec sleep 30");
        let port = answering(200);
        let d = fake
            .launch(port)
            .args(["--config", "/etc/mine.toml"])
            .start()
            .unwrap();
        let want = format!(
            "--bpffs {} daemon --config /etc/mine.toml --listen 127.0.0.1:{port}\n",
            fake.fs.root().display()
        );
        assert!(
            within_10s(|| d.stderr().unwrap() == want),
            "{:?}",
            d.stderr()
        );
    }

    #[test]
    fn healthy_waits_for_200_where_serving_takes_any_answer() {
        let fake = FakeCtl::new("exec sleep 30");
        let port = answering(503);
        let d = fake
            .launch(port)
            .ready(Ready::Serving)
            .start()
            .expect("503 is serving");
        drop(d);
        let limit = Duration::from_millis(500);
        let t0 = Instant::now();
        let e = fake
            .launch(port)
            .ready(Ready::Healthy)
            .up_within(limit)
            .start()
            .err()
            .expect("503 is not healthy");
        assert!(t0.elapsed() >= limit, "{:?}", t0.elapsed());
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!(
                "did not answer /readyz with 200 (last answer 503) on port {port} within 500ms"
            )),
            "{msg}"
        );
        let ok = fake.launch(answering(200)).ready(Ready::Healthy).start();
        assert!(ok.is_ok(), "{:#}", ok.err().unwrap());
    }

    #[test]
    fn no_answer_within_the_limit_is_an_error_at_the_limit() {
        let fake = FakeCtl::new("exec sleep 30");
        let port = free_loopback_port(&[]).unwrap();
        let t0 = Instant::now();
        let e = fake
            .launch(port)
            .up_within(Duration::from_millis(300))
            .start()
            .err()
            .expect("nothing answers");
        // Not the default 15 s: the limit given applies.
        assert!(t0.elapsed() < UP_WITHIN / 2, "{:?}", t0.elapsed());
        assert!(
            format!("{e:#}").contains(&format!(
                "did not answer /healthz on port {port} within 300ms"
            )),
            "{e:#}"
        );
    }

    #[test]
    fn signal_wait_and_drop_end_the_child() {
        let fake = FakeCtl::new("exec sleep 30");
        let port = answering(200);
        let mut d = fake.launch(port).start().unwrap();
        assert!(d.running());
        d.signal(Signal::SIGTERM).unwrap();
        let status = d.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15)
        );
        assert!(!d.running());
        let e = d.signal(Signal::SIGKILL).expect_err("not sent");
        assert!(format!("{e:#}").contains("has exited"), "{e:#}");
        drop(d);

        let d = fake.launch(port).start().unwrap();
        let pid = nix::unistd::Pid::from_raw(d.pid() as i32);
        drop(d);
        assert_eq!(
            nix::sys::signal::kill(pid, None),
            Err(nix::errno::Errno::ESRCH),
            "the child outlived its drop"
        );
    }
}
