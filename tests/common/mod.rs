//! Shared by the kernel integration tests.
//!
//! Tests that register a CCA touch one global kernel namespace of CCA names,
//! so they serialise on a host-wide lock. Each gets a private bpffs root;
//! whatever it pins there is removed on drop, on panic, and on Ctrl-C.

#![allow(dead_code)]

pub mod daemon;
pub mod dumbbell;
pub mod image;
pub mod rtprop;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use rttfair_loader::BpfFs;

static SEQ: AtomicU32 = AtomicU32::new(0);
static ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A test's claim on the kernel's CCA names plus its private bpffs root.
pub struct KernelTest {
    pub fs: BpfFs,
    _lock: Flock<File>,
}

impl KernelTest {
    pub fn new() -> KernelTest {
        assert!(
            nix::unistd::geteuid().is_root(),
            "kernel integration tests must run as root (they register CCAs and create namespaces)"
        );
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open("/run/rttfair-kernel-tests.lock")
            .expect("open test lock");
        let lock = Flock::lock(lock, FlockArg::LockExclusive).expect("lock");
        let root = PathBuf::from(format!(
            "/sys/fs/bpf/rttfair-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        ROOTS.lock().unwrap().push(root.clone());
        rttfair_lab::net::netns::on_signal_exit(remove_all_roots);
        for name in ["bbr1", "fairtt", "adbbr", "qfair", "bbr_native", "bbr3"] {
            assert!(
                !registered(name),
                "{name} is already registered on this host (by a real installation?); unload it before running the tests"
            );
        }
        KernelTest {
            fs: BpfFs::new(root),
            _lock: lock,
        }
    }

    /// `rttfairctl` with this test's bpffs root.
    pub fn ctl(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rttfairctl"));
        c.env("RTTFAIR_BPFFS", self.fs.root());
        c
    }

    /// Run rttfairctl with `args`, returning its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.ctl().args(args).output().expect("spawn rttfairctl")
    }

    /// The end of a test that ran flows on `cca`: its sockets close (so
    /// the CCA may go), then `network` is torn down, then the CCA is
    /// unloaded, and each step must succeed.
    pub fn unload_when_idle<N>(&self, cca: rttfair_loader::Cca, network: N) {
        assert!(
            self.sockets_closed(cca, Duration::from_secs(10)),
            "{} sockets still open 10 s after the flows ended",
            cca.name()
        );
        drop(network);
        assert_success(&self.run(&["unload", cca.name()]));
    }

    /// Whether every socket on `cca` is gone from its live count within
    /// `timeout` (closed sockets take a moment to leave the CCA).
    pub fn sockets_closed(&self, cca: rttfair_loader::Cca, timeout: Duration) -> bool {
        wait_until(timeout, || {
            rttfair_loader::flows::live_sockets(&self.fs, cca).unwrap() == 0
        })
    }

    /// Each `(name, value)` is refused by `rttfairctl set` with one line on
    /// stderr and a non-zero exit, and afterwards every tunable of `cca`
    /// still has its default: a refused value stores nothing.
    pub fn assert_tunables_refused(&self, cca: &str, bad: &[(&str, &str)]) {
        for (name, value) in bad {
            let out = self.run(&["set", name, value]);
            assert!(!out.status.success(), "{name} = {value} accepted");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
        let got = assert_success(&self.run(&["get", cca, "--json"]));
        let v: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert!(
            v.as_array()
                .unwrap()
                .iter()
                .all(|t| t["is_default"] == true),
            "a refused value changed something: {got}"
        );
    }
}

impl Drop for KernelTest {
    fn drop(&mut self) {
        remove_root(self.fs.root());
        ROOTS
            .lock()
            .map(|mut r| r.retain(|p| p != self.fs.root()))
            .ok();
    }
}

fn remove_all_roots() {
    let roots: Vec<PathBuf> = ROOTS.lock().map(|r| r.clone()).unwrap_or_default();
    for r in roots {
        remove_root(&r);
    }
}

/// Unpin links first (unregisters the CCAs), then maps and cgroup
/// attachments (detaches them), then directories.
pub fn remove_root(root: &Path) {
    for sub in ["links", "maps", "cgroups"] {
        if let Ok(entries) = std::fs::read_dir(root.join(sub)) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let _ = std::fs::remove_dir(root.join(sub));
    }
    let _ = std::fs::remove_dir(root);
    let _ = std::fs::remove_dir_all(rttfair_loader::lease::lease_dir(
        &rttfair_loader::BpfFs::new(root),
    ));
}

/// The lab namespaces the process `pid` made that are still there
/// (`netns`'s names start `rf-<pid>-`).
pub fn lab_namespaces(pid: u32) -> Vec<String> {
    let mine = format!("rf-{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&mine))
                .collect()
        })
        .unwrap_or_default()
}

/// Is `name` in tcp_available_congestion_control?
pub fn registered(name: &str) -> bool {
    rttfair_loader::kernel::is_registered(name).unwrap_or(false)
}

/// Assert a failed command: non-zero exit, one line on stderr containing
/// `needle`. Returns that line.
pub fn assert_one_line_error(out: &Output, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line of error, got: {stderr}");
    assert!(
        lines[0].contains(needle),
        "error {:?} does not mention {needle:?}",
        lines[0]
    );
    lines[0].to_string()
}

/// `name`'s entry in the `ccas` of `rttfairctl list --json`.
pub fn list_entry<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list["ccas"]
        .as_array()
        .expect("list --json has ccas")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {list}"))
}

/// `name`'s row of `rttfairctl list`'s table, column by column.
pub fn list_row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&name))
        .unwrap_or_else(|| panic!("no {name} row in {table}"))
}

pub fn assert_success(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "command failed: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Poll `f` until it is true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// How long a test's connection may make no progress (nothing read, or a
/// write blocked) before the test fails instead of waiting on: longer than
/// any pause a test makes between writes, far shorter than a CI run. A
/// stalled path would otherwise leave the sink reading forever, since a
/// sender that gives up cannot tell it.
pub const STALL: Duration = Duration::from_secs(90);

/// A sink server: accepts one connection, reads to EOF, returns the byte
/// count; panics if nothing arrives for [`STALL`].
pub fn sink_once(listener: TcpListener) -> u64 {
    let (mut s, _) = listener.accept().expect("accept");
    s.set_read_timeout(Some(STALL)).expect("SO_RCVTIMEO");
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n as u64,
            Err(e) if is_timeout(&e) => panic!(
                "sink: nothing arrived for {STALL:?} after {total} bytes: the path stalled\n{}",
                stall_report()
            ),
            Err(e) => panic!("sink read: {e}"),
        }
    }
}

/// What a stalled connection's end can say about it, for the panic that
/// reports the stall: the TCP sockets of the calling thread's network
/// namespace (`ss -tinmoe`: window, backoff, retransmissions, memory) and
/// its nonzero TCP counters that explain a segment or an ACK dropped
/// (`nstat`). A child process starts in its parent thread's namespace, so
/// a sink or sender thread inside a lab namespace reports that namespace.
fn stall_report() -> String {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|e| format!("({cmd}: {e})\n"))
    };
    let counters: String = run("nstat", &["-asz"])
        .lines()
        .filter(|l| {
            let nonzero = l.split_whitespace().nth(1).is_some_and(|v| v != "0");
            nonzero && (l.starts_with("Tcp") || l.contains("Drop") || l.contains("Prune"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    format!(
        "ss -tinmoe:\n{}nstat (TCP, nonzero):\n{counters}",
        run("ss", &["-tinmoe"])
    )
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Connect to `addr` with congestion control `cca` set before the handshake.
pub fn connect_with(addr: SocketAddr, cca: &str) -> std::net::TcpStream {
    let sock =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    rttfair_lab::net::sock::set_congestion(&sock, cca).expect("setsockopt TCP_CONGESTION");
    sock.connect(&addr.into()).expect("connect");
    sock.into()
}

/// Write zeros for `dur`; panics if a write blocks for [`STALL`].
pub fn blast(s: &mut std::net::TcpStream, dur: Duration) -> u64 {
    s.set_write_timeout(Some(STALL)).expect("SO_SNDTIMEO");
    let buf = vec![0u8; 1 << 16];
    let end = Instant::now() + dur;
    let mut sent = 0u64;
    while Instant::now() < end {
        match s.write(&buf) {
            Ok(n) => sent += n as u64,
            Err(e) if is_timeout(&e) => panic!(
                "sender: a write blocked for {STALL:?} after {sent} bytes: the path stalled\n{}",
                stall_report()
            ),
            Err(e) => panic!("write: {e}"),
        }
    }
    sent
}

/// Where the cgroup v2 hierarchy is mounted (pure v2 at /sys/fs/cgroup, or
/// the hybrid layout's /sys/fs/cgroup/unified); mounts one under /run if
/// there is none.
pub fn cgroup2_root() -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if let Some(p) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
    }) {
        return p;
    }
    let p = PathBuf::from("/run/rttfair-cgroup2");
    std::fs::create_dir_all(&p).unwrap();
    nix::mount::mount(
        Some("none"),
        &p,
        Some("cgroup2"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .expect("mount cgroup2");
    p
}

/// Pin a small array map that is none of rttfair's objects at `path`: the
/// stand-in for a foreign or stale pin.
pub fn pin_foreign_map(path: &Path) -> libbpf_rs::MapHandle {
    let mut m = libbpf_rs::MapHandle::create(
        libbpf_rs::MapType::Array,
        Some("foreign"),
        4,
        8,
        1,
        &libbpf_rs::libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        },
    )
    .expect("create map");
    m.pin(path).expect("pin map");
    m
}

/// A child process killed on drop (also on panic).
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Minimal HTTP/1.0 GET on loopback (no Accept header: classic text
/// exposition); returns (status, body).
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    )
    .ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Connect from source address `src` to `dst` with `cca` set before the
/// handshake (a lab flow's socket).
pub fn connect_from(src: std::net::Ipv4Addr, dst: SocketAddr, cca: &str) -> std::net::TcpStream {
    let sock =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    rttfair_lab::net::sock::set_congestion(&sock, cca).expect("setsockopt TCP_CONGESTION");
    sock.bind(&SocketAddr::from((src, 0)).into()).expect("bind");
    sock.connect(&dst.into()).expect("connect");
    sock.into()
}

/// The value of one sample in a Prometheus text exposition: `series` is the
/// metric name with its label block exactly as exposed (`name` or
/// `name{cca="bbr1"}`). Only sample lines are searched, never HELP/TYPE
/// comments, whose text can contain the metric name followed by a digit.
pub fn sample(exposition: &str, series: &str) -> Option<f64> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (s, v) = l.rsplit_once(' ')?;
            (s == series).then(|| v.parse().ok()).flatten()
        })
}

/// One loopback connection on a CCA inside a test's namespace, its
/// receiver a thread there counting bytes to EOF: a test writes with
/// [`LoopbackFlow::blast`] around what it does to the CCA, then
/// [`LoopbackFlow::finish`] says whether every byte sent arrived.
pub struct LoopbackFlow {
    client: std::net::TcpStream,
    sink: std::thread::JoinHandle<anyhow::Result<u64>>,
    sent: u64,
}

impl LoopbackFlow {
    /// Listen and connect on 127.0.0.1 inside `ns` (which must outlive
    /// the flow), `cca` set on the client before the handshake.
    pub fn open(ns: &rttfair_lab::net::netns::Netns, cca: &str) -> LoopbackFlow {
        let l = ns
            .run(|| TcpListener::bind("127.0.0.1:0").unwrap())
            .unwrap();
        let addr = l.local_addr().unwrap();
        let sink = ns.spawn(move || sink_once(l)).unwrap();
        let cca = cca.to_string();
        let client = ns.run(move || connect_with(addr, &cca)).unwrap();
        LoopbackFlow {
            client,
            sink,
            sent: 0,
        }
    }

    /// Write zeros for `dur` (see [`blast`]).
    pub fn blast(&mut self, dur: Duration) {
        self.sent += blast(&mut self.client, dur);
    }

    /// Close the connection: the bytes the receiver read, and those sent.
    pub fn finish(self) -> (u64, u64) {
        drop(self.client);
        (self.sink.join().unwrap().unwrap(), self.sent)
    }
}

/// An object file of bbr1 that the verifier rejects (the loader's test
/// data), in a temp file named after `tag` that is removed when dropped,
/// also when the test panics.
pub fn rejected_object(tag: &str) -> tempfile::NamedTempFile {
    let obj = tempfile::Builder::new()
        .prefix(&format!("rttfair-{tag}-"))
        .suffix(".o")
        .tempfile()
        .unwrap();
    std::fs::write(
        obj.path(),
        rttfair_loader::objects::testdata::REJECTED_BY_VERIFIER,
    )
    .unwrap();
    obj
}

/// A file `rttfair-<tag>-...<suffix>` under the temp dir holding `contents`
/// (a config or an object handed to rttfairctl or the daemon), removed when
/// the handle drops, also when the test panics.
pub fn temp_file(tag: &str, suffix: &str, contents: impl AsRef<[u8]>) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new()
        .prefix(&format!("rttfair-{tag}-"))
        .suffix(suffix)
        .tempfile()
        .unwrap();
    std::fs::write(file.path(), contents).unwrap();
    file
}

/// A cgroup made for one test, removed when the guard drops, also when the
/// test panics (a `TempDir` cannot remove one: its cleanup tries to delete
/// the kernel's control files). The name carries the pid, so two test
/// binaries never share it.
pub struct TestCgroup {
    pub path: PathBuf,
}

impl TestCgroup {
    pub fn new(tag: &str) -> Self {
        let path = cgroup2_root().join(format!("{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TestCgroup { path }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Fails only while a process is still in it; nothing more to do then.
        let _ = std::fs::remove_dir(&self.path);
    }
}
