//! Reliability: churn leaves nothing behind, a full export map does not stop
//! control, the daemon can die at any time, a killed lab leaves no
//! namespaces, and read-only commands behave without root.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use common::daemon::{Daemon, Up};
use common::*;
use rttfair_lab::net::netns::{self, Netns};
use rttfair_lab::net::procfs::{kernel_warnings, rss_kib};
use rttfair_loader::flows::{live_sockets, FlowReader};
use rttfair_loader::Cca;

#[test]
fn churn_with_every_cca_leaks_nothing() {
    let t = KernelTest::new();
    let all: Vec<&str> = Cca::ALL.iter().map(|c| c.name()).collect();
    assert_success(&t.run(&[&["load"][..], &all].concat()));
    let port = free_port();
    let daemon = Daemon::start(&t.fs, &[], port, Up::Serving);
    let warn0 = kernel_warnings();
    let rss0 = rss_kib(daemon.pid());
    let ns = Netns::create("churn").unwrap();
    for cca in Cca::ALL {
        // The daemon scrapes throughout, as Prometheus would.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let scraper = std::thread::spawn(move || {
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = http_get(port, "/metrics");
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        let r =
            rttfair_lab::net::churn::run(&ns, cca.name(), Duration::from_secs(12), 4, 2).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        scraper.join().unwrap();
        println!(
            "{cca}: {} opened, {} closed, {} bytes verified, {} long-flow bytes, {} failures, {:.0} conn/s",
            r.opened,
            r.closed,
            r.bytes_verified,
            r.long_flow_bytes,
            r.failures,
            r.opened as f64 / r.seconds
        );
        assert_eq!(r.failures, 0, "{cca}: failed or unverified transfers");
        assert_eq!(r.opened, r.closed);
        assert!(r.opened > 1000, "{cca}: only {} connections", r.opened);
        // Every socket is gone: counters balance and the map holds none of them.
        assert!(
            wait_until(Duration::from_secs(10), || live_sockets(&t.fs, cca)
                .unwrap()
                == 0),
            "{cca}: {} sockets still counted live",
            live_sockets(&t.fs, cca).unwrap()
        );
        let left = FlowReader::open(&t.fs)
            .unwrap()
            .flows()
            .unwrap()
            .into_iter()
            .filter(|f| f.cca == Some(cca))
            .count();
        assert_eq!(left, 0, "{cca}: {left} export entries leaked");
    }
    let rss1 = rss_kib(daemon.pid());
    let warn1 = kernel_warnings();
    println!("daemon RSS {rss0} -> {rss1} KiB; kernel warnings {warn0} -> {warn1}");
    assert_eq!(warn1, warn0, "new kernel warnings during churn");
    assert!(
        rss1 < rss0 + 16 * 1024,
        "daemon RSS grew from {rss0} to {rss1} KiB"
    );
    drop(daemon);
    drop(ns);
    assert_success(&t.run(&[&["unload"][..], &all].concat()));
}

#[test]
fn a_full_export_map_keeps_control_and_counts_what_it_missed() {
    let t = KernelTest::new();
    // Through the library: a 4-entry map is below what `load --flows-max`
    // takes (lifecycle::FLOWS_MAX), and filling it is the point here.
    rttfair_loader::lifecycle::load(
        Cca::Bbr1,
        &t.fs,
        &rttfair_loader::lifecycle::LoadOptions {
            flows_max: Some(4),
            object: None,
        },
    )
    .expect("load bbr1 with a 4-entry flow map");
    let port = free_port();
    let _daemon = Daemon::start(&t.fs, &[], port, Up::Serving);
    let ns = Netns::create("full").unwrap();
    let ccas = ns.run(|| bbr1_pairs(10)).unwrap();
    // Every client socket runs bbr1 and moved its data.
    assert!(ccas.0.iter().all(|n| n == "bbr1"));
    let r = FlowReader::open(&t.fs).unwrap();
    assert_eq!(r.capacity(), 4);
    assert_eq!(r.flows().unwrap().len(), 4, "the map holds its capacity");
    let live = live_sockets(&t.fs, Cca::Bbr1).unwrap();
    assert!(live >= 10, "{live} bbr1 sockets");
    let failed = r.counters(Cca::Bbr1).unwrap().export_failed;
    assert_eq!(failed, live - 4, "{live} sockets, 4 exported");
    let metrics = http_get(port, "/metrics").unwrap().1;
    assert_eq!(
        sample(&metrics, "rttfair_export_failed_total{cca=\"bbr1\"}"),
        Some(failed as f64),
        "daemon does not expose the misses"
    );
    drop(ccas);
    drop(ns);
    assert!(t.sockets_closed(Cca::Bbr1, Duration::from_secs(5)));
    // Export recovers: with the map's entries freed, new flows are exported
    // again (by the daemon too) and nothing more is counted as missed.
    let ns = Netns::create("full2").unwrap();
    let again = ns.run(|| bbr1_pairs(3)).unwrap();
    assert_eq!(r.flows().unwrap().len(), 3, "new flows exported again");
    assert_eq!(r.counters(Cca::Bbr1).unwrap().export_failed, failed);
    let metrics = http_get(port, "/metrics").unwrap().1;
    assert_eq!(sample(&metrics, "rttfair_flows_read"), Some(3.0));
    assert_eq!(
        sample(&metrics, "rttfair_export_failed_total{cca=\"bbr1\"}"),
        Some(failed as f64)
    );
    drop(again);
    drop(ns);
    assert!(t.sockets_closed(Cca::Bbr1, Duration::from_secs(5)));
    assert_success(&t.run(&["unload", "bbr1"]));
}

/// `n` loopback connections on bbr1 in the current namespace, each having
/// moved 50 kB: the CCA each client socket ended up with, and the sockets
/// (kept open by the caller).
fn bbr1_pairs(n: usize) -> (Vec<String>, Vec<(std::net::TcpStream, std::net::TcpStream)>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut keep = Vec::new();
    let mut names = Vec::new();
    for _ in 0..n {
        let mut c = connect_with(addr, "bbr1");
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[7u8; 50_000]).unwrap();
        let mut buf = vec![0u8; 50_000];
        s.read_exact(&mut buf).unwrap();
        names.push(rttfair_lab::net::sock::congestion(&c).unwrap());
        keep.push((c, s));
    }
    std::thread::sleep(Duration::from_millis(200));
    (names, keep)
}

#[test]
fn daemon_sigkill_does_not_disturb_flows_and_restart_adopts() {
    let t = KernelTest::new();
    let port = free_port();
    // Per-flow series on: the restart is checked flow by flow.
    let cfg = temp_file("adopt", ".toml", "load = [\"bbr1\"]\nper_flow = \"all\"\n");
    let args = ["--config", cfg.path().to_str().unwrap()];
    let spawn = || Daemon::start(&t.fs, &args, port, Up::Serving);
    let mut d1 = spawn();
    let ns = Netns::create("adopt").unwrap();
    let mut flow = LoopbackFlow::open(&ns, "bbr1");
    flow.blast(Duration::from_millis(500));
    d1.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = d1.wait();
    flow.blast(Duration::from_millis(500));
    assert!(
        registered("bbr1"),
        "SIGKILL of the daemon unregistered bbr1"
    );
    let mut d2 = spawn();
    let metrics = http_get(port, "/metrics").unwrap().1;
    let series: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("rttfair_flow_min_rtt_seconds{cca=\"bbr1\","))
        .collect();
    let live = live_sockets(&t.fs, Cca::Bbr1).unwrap() as usize;
    assert!(live >= 1);
    assert_eq!(
        series.len(),
        live,
        "one series per bbr1 socket, no duplicates: {series:?}"
    );
    let mut uniq = series.clone();
    uniq.dedup();
    assert_eq!(uniq.len(), series.len());
    flow.blast(Duration::from_millis(300));
    let (received, sent) = flow.finish();
    assert_eq!(received, sent);
    d2.signal(nix::sys::signal::Signal::SIGTERM);
    d2.wait();
    let err = d2.stderr();
    assert!(err.contains("adopted bbr1"), "restart did not adopt: {err}");
    drop(cfg);
    assert!(t.sockets_closed(Cca::Bbr1, Duration::from_secs(10)));
    drop(ns);
    assert_success(&t.run(&["unload", "bbr1"]));
}

/// `rttfairctl lab run ci-smoke` on bbr1 into `out`, for the tests that
/// end a lab run from outside (stdio and process group left to them).
fn ci_smoke_lab_run(t: &KernelTest, out: &std::path::Path) -> std::process::Command {
    let mut c = t.ctl();
    c.args([
        "lab", "run", "ci-smoke", "--cca", "bbr1", "--quiet", "--out",
    ])
    .arg(out);
    c
}

/// Wait until the lab process `pid` has built its three namespaces (so its
/// signal watcher is installed and its CCA loaded).
fn wait_for_lab_namespaces(pid: u32) {
    assert!(
        wait_until(Duration::from_secs(15), || lab_namespaces(pid).len() >= 3),
        "lab never built its namespaces"
    );
}

#[test]
fn a_killed_lab_run_leaves_nothing_the_next_run_does_not_clean() {
    let t = KernelTest::new();
    let tmp = rttfair_lab::testkit::temp_folder("killed");
    let out = tmp.path().join("out");
    let mut child = ci_smoke_lab_run(&t, &out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mine = || lab_namespaces(pid);
    wait_for_lab_namespaces(pid);
    child.kill().unwrap(); // SIGKILL: no cleanup handler can run
    child.wait().unwrap();
    assert!(!mine().is_empty(), "expected leftovers after SIGKILL");
    let reaped = netns::reap_stale();
    println!("reaped {reaped:?}");
    assert!(mine().is_empty(), "leftovers remain: {:?}", mine());
    // The killed lab had loaded bbr1; the next lab to use it unloads it when
    // it ends (its lease marker outlives the kill).
    assert!(
        registered("bbr1"),
        "expected the killed lab's bbr1 to stay registered"
    );
    drop(rttfair_lab::net::ccas::CcaSession::ensure(&t.fs, &["bbr1".to_string()]).unwrap());
    assert!(
        !registered("bbr1"),
        "the next lab left the killed lab's bbr1 registered"
    );
}

/// Ctrl-C during a lab run (SIGINT to its whole process group, as a
/// terminal sends it, so iperf3 gets it too): the run ends with one error
/// line that says it was interrupted, a shell's exit code for SIGINT, its
/// namespaces gone and the CCA it loaded unloaded. Before, the watcher
/// exited without a word, or, when something running in a namespace it had
/// just deleted failed first, that failure was the line (`ss failed: Cannot
/// open network namespace`) and the exit code 1.
#[test]
fn a_lab_run_ended_by_ctrl_c_says_so_in_one_line_and_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    let t = KernelTest::new();
    let tmp = rttfair_lab::testkit::temp_folder("ctrl-c");
    let out = tmp.path().join("out");
    let child = ci_smoke_lab_run(&t, &out)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mine = || lab_namespaces(pid);
    wait_for_lab_namespaces(pid);
    assert!(registered("bbr1"), "the run did not load bbr1");
    // Into the measurement: the samplers and iperf3 are running.
    std::thread::sleep(Duration::from_secs(3));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    println!("stderr: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("interrupted by SIGINT"), "{stderr}");
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(mine().is_empty(), "namespaces left: {:?}", mine());
    assert!(
        !registered("bbr1"),
        "the interrupted lab left bbr1 registered"
    );
}

/// Two labs at once using one project CCA: the first to finish must not
/// unload it under the second; the last one out unloads what a lab loaded;
/// nothing the operator loaded is ever unloaded by a lab.
#[test]
fn concurrent_labs_share_a_cca_and_the_last_one_out_unloads_it() {
    use rttfair_lab::net::ccas::CcaSession;
    let t = KernelTest::new();
    let bbr1 = ["bbr1".to_string()];
    let a = CcaSession::ensure(&t.fs, &bbr1).unwrap();
    assert!(registered("bbr1"));
    let b = CcaSession::ensure(&t.fs, &bbr1).unwrap();
    assert!(
        a.shared_with_other_labs().is_empty() && b.shared_with_other_labs().is_empty(),
        "this process's own leases are not another lab"
    );
    drop(a);
    assert!(
        registered("bbr1"),
        "the first lab to finish unloaded bbr1 under the second"
    );
    drop(b);
    assert!(!registered("bbr1"), "the last lab out left bbr1 registered");

    // Operator-loaded: a lab uses it and leaves it.
    assert_success(&t.run(&["load", "bbr1"]));
    drop(CcaSession::ensure(&t.fs, &bbr1).unwrap());
    assert!(registered("bbr1"), "a lab unloaded the operator's bbr1");
    assert_success(&t.run(&["unload", "bbr1"]));

    // Loaded by a lab, then claimed by the operator: the lab leaves it.
    let c = CcaSession::ensure(&t.fs, &bbr1).unwrap();
    let said = assert_success(&t.run(&["load", "bbr1"]));
    assert!(said.contains("now yours"), "{said}");
    drop(c);
    assert!(
        registered("bbr1"),
        "a lab unloaded bbr1 after the operator claimed it"
    );
    assert_success(&t.run(&["unload", "bbr1"]));

    // Another holder of the lease (another lab; here a flock of the test's
    // own on a separate open file, which is what another process holds):
    // the session sees it, and leaves the CCA to that holder when it ends.
    let lease = rttfair_loader::lease::lease_path(&t.fs, Cca::Bbr1);
    let holder = nix::fcntl::Flock::lock(
        std::fs::File::open(&lease).unwrap(),
        nix::fcntl::FlockArg::LockSharedNonblock,
    )
    .unwrap();
    let d = CcaSession::ensure(&t.fs, &bbr1).unwrap();
    assert_eq!(d.shared_with_other_labs(), [rttfair_loader::Cca::Bbr1]);
    drop(d);
    assert!(
        registered("bbr1"),
        "unloaded while another lab holds a lease"
    );
    drop(holder);
    drop(CcaSession::ensure(&t.fs, &bbr1).unwrap());
    assert!(!registered("bbr1"), "the last lab out left bbr1 registered");
}

#[test]
fn read_only_commands_without_root() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "fairtt"]));
    let as_nobody = |args: &[&str]| {
        use std::os::unix::process::CommandExt;
        t.ctl().args(args).uid(65534).gid(65534).output().unwrap()
    };
    let out = as_nobody(&["list"]);
    let text = assert_success(&out);
    assert!(text.contains("fairtt   yes"), "{text}");
    assert!(
        text.contains("need CAP_BPF"),
        "list must say what it cannot show: {text}"
    );
    assert_one_line_error(&as_nobody(&["flows"]), "CAP_BPF");
    assert_one_line_error(&as_nobody(&["get"]), "CAP_BPF");
    assert_one_line_error(&as_nobody(&["set", "fairtt.beta", "0.5"]), "CAP_BPF");
    assert_one_line_error(&as_nobody(&["unload", "fairtt"]), "CAP_BPF");
    assert!(registered("fairtt"));
    // Pins are private to root.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(t.fs.root()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // Bad tunable values change nothing.
    for bad in ["NaN", "-1", "2", "x", ""] {
        assert_one_line_error(&t.run(&["set", "fairtt.beta", bad]), "fairtt.beta");
    }
    let v = assert_success(&t.run(&["get", "fairtt.beta"]));
    assert!(v.contains("0.8") && v.contains("(default)"), "{v}");
    assert_success(&t.run(&["set", "fairtt.beta", "0.7"]));
    assert!(assert_success(&t.run(&["get", "fairtt.beta"])).contains("0.7"));
    assert_success(&t.run(&["unload", "fairtt"]));
}

#[test]
fn a_foreign_pin_is_refused_and_left_alone() {
    let t = KernelTest::new();
    t.fs.ensure().unwrap();
    // A map of the wrong shape where rttfair expects its flow map.
    let _bogus = pin_foreign_map(&t.fs.map_pin(rttfair_loader::abi::maps::FLOWS));
    let line = assert_one_line_error(&t.run(&["load", "bbr1"]), "does not match this build");
    assert!(line.contains(rttfair_loader::abi::maps::FLOWS), "{line}");
    assert!(!registered("bbr1"));
    assert!(
        t.fs.map_pin(rttfair_loader::abi::maps::FLOWS).exists(),
        "a foreign pin was removed"
    );
}

/// A link pin whose registration is gone (what an rttfairctl killed between
/// steps, or an outside detach, leaves behind): the next load detects it,
/// removes it and registers again.
#[test]
fn a_stale_link_pin_is_repaired_by_the_next_load() {
    let t = KernelTest::new();
    t.fs.ensure().unwrap();
    // Any pinned object that is not a live bbr1 registration stands in for it.
    let _leftover = pin_foreign_map(&t.fs.link_pin(Cca::Bbr1));
    assert!(!registered("bbr1"));
    let out = assert_success(&t.run(&["load", "bbr1"]));
    assert!(out.contains("repaired"), "{out}");
    assert!(registered("bbr1"));
    assert_success(&t.run(&["unload", "bbr1"]));
}

/// A bpffs instance of the test's own, unmounted (lazily) and removed on
/// drop, so a failing assertion cannot leave a mount or a registration.
struct PrivateBpffs(std::path::PathBuf);

impl PrivateBpffs {
    fn mount() -> PrivateBpffs {
        let mnt =
            std::path::PathBuf::from(format!("/run/rttfair-test-bpffs-{}", std::process::id()));
        std::fs::create_dir_all(&mnt).unwrap();
        let g = PrivateBpffs(mnt);
        g.remount();
        g
    }
    fn remount(&self) {
        nix::mount::mount(
            Some("bpf"),
            &self.0,
            Some("bpf"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .unwrap();
    }
    fn unmount(&self) {
        nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH).unwrap();
    }
}

impl Drop for PrivateBpffs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// bpffs unmounted under a running daemon. The pins go with the mount, and
/// with the link pin the registration (the kernel drops a struct_ops link
/// whose last reference was its pin). The daemon must keep serving, say the
/// maps and the CCA are gone, and pick them up again after a remount and a
/// fresh load.
#[test]
fn daemon_survives_bpffs_unmount() {
    let t = KernelTest::new();
    let fs = PrivateBpffs::mount();
    let root = fs.0.join("rttfair");
    let root = root.to_str().unwrap();
    let port = free_port();
    let mut d = Daemon::start(&rttfair_loader::BpfFs::new(root), &[], port, Up::Serving);
    let metric = |series: &str| http_get(port, "/metrics").and_then(|m| sample(&m.1, series));
    let ctl = |args: &[&str]| {
        t.ctl()
            .args(args)
            .env("RTTFAIR_BPFFS", root)
            .output()
            .unwrap()
    };
    let loaded = "rttfair_cca_loaded{cca=\"bbr1\"}";
    assert_success(&ctl(&["load", "bbr1"]));
    assert!(wait_until(Duration::from_secs(10), || metric(
        "rttfair_maps_present"
    ) == Some(1.0)));
    assert_eq!(metric(loaded), Some(1.0));

    fs.unmount();
    assert!(
        wait_until(Duration::from_secs(5), || !registered("bbr1")),
        "bbr1 outlived its pins"
    );
    assert_eq!(
        metric("rttfair_maps_present"),
        Some(0.0),
        "daemon did not notice the maps went"
    );
    assert_eq!(
        metric(loaded),
        Some(0.0),
        "daemon still reports bbr1 loaded"
    );
    // The operator sees the same through the CLI.
    let list = assert_success(&ctl(&["list"]));
    assert_eq!(list_row(&list, "bbr1")[1], "no", "{list}");

    // Recovery: remount, load again; the same daemon adopts the new maps.
    fs.remount();
    assert_success(&ctl(&["load", "bbr1"]));
    assert!(
        wait_until(Duration::from_secs(10), || metric("rttfair_maps_present")
            == Some(1.0)),
        "daemon did not adopt the new maps"
    );
    assert_eq!(metric(loaded), Some(1.0));
    assert!(d.running(), "daemon exited");
    assert_success(&ctl(&["unload", "bbr1"]));
}

/// `set` rewrites a CCA's whole tunables entry, so it waits for the
/// installation lock: held by another command, the write does not happen
/// until that command lets go, and then it does (not lost, not refused).
#[test]
fn set_waits_for_the_installation_lock() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "fairtt"]));
    let held =
        t.fs.lock(Duration::ZERO)
            .expect("take the installation lock");
    let fs = t.fs.clone();
    let setter =
        std::thread::spawn(move || rttfair_loader::tunables::set(&fs, "fairtt.beta", "0.7"));
    std::thread::sleep(Duration::from_millis(700));
    assert!(!setter.is_finished(), "set did not wait for the lock");
    let beta = || rttfair_loader::tunables::get(&t.fs, Some("fairtt.beta")).unwrap()[0].value;
    assert_eq!(beta(), 0.8, "set wrote while another command held the lock");
    drop(held);
    let v = setter.join().unwrap().expect("set once the lock is free");
    assert_eq!(v.value, 0.7);
    assert_eq!(beta(), 0.7);
    assert_success(&t.run(&["unload", "fairtt"]));
}

/// Ctrl-C while `load fairtt qfair` verifies qfair (fairtt already pinned)
/// takes the rollback path: fairtt is unloaded again, nothing stays pinned,
/// the line says so and the exit code is a shell's for SIGINT. (The signal
/// is sent as soon as fairtt's pin appears, 1 ms polling, while qfair's
/// verification takes far longer: the process is always still loading.)
#[test]
fn an_interrupted_load_unloads_what_it_loaded() {
    let t = KernelTest::new();
    let child = t
        .ctl()
        .args(["load", "fairtt", "qfair"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pin = t.fs.link_pin(Cca::Fairtt);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pin.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(pin.exists(), "fairtt was never pinned");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let line = assert_one_line_error(&out, "interrupted by SIGINT");
    // qfair too, when its load finished before the signal was seen.
    assert!(line.contains("unloaded fairtt"), "{line}");
    assert_eq!(out.status.code(), Some(130));
    assert!(out.stdout.is_empty(), "a rolled-back load reported success");
    assert!(!registered("fairtt") && !registered("qfair"));
    assert!(
        !t.fs.root().exists(),
        "pins left: {:?}",
        std::fs::read_dir(t.fs.root()).map(|d| d.count())
    );
}

/// Shared maps with no CCA (what a load killed by SIGKILL during the
/// verifier leaves): `unload` removes them and says so, and so does the next
/// `load` before it creates its own.
#[test]
fn maps_an_interrupted_load_left_are_removed_by_the_next_load_or_unload() {
    use rttfair_loader::lifecycle::{create_shared_maps, LoadOptions};
    let t = KernelTest::new();
    let stale = || {
        create_shared_maps(
            &t.fs,
            &LoadOptions {
                flows_max: Some(2048),
                object: None,
            },
        )
        .unwrap();
        assert!(t.fs.map_pin(rttfair_loader::abi::maps::FLOWS).exists());
    };
    stale();
    let line = assert_one_line_error(&t.run(&["unload", "bbr1"]), "bbr1 is not loaded");
    assert!(line.contains("removed the shared maps"), "{line}");
    assert!(!t.fs.root().exists(), "unload left the stale maps");
    stale();
    let out = assert_success(&t.run(&["load", "bbr1"]));
    assert!(out.contains("interrupted run"), "{out}");
    // The stale 2048-entry flow map went: this load made a default one.
    let flows = t.fs.open_map(rttfair_loader::abi::maps::FLOWS).unwrap();
    use libbpf_rs::MapCore;
    assert_eq!(flows.max_entries(), 65_536);
    assert_success(&t.run(&["unload", "bbr1"]));
    assert!(!t.fs.root().exists());
}

/// A CCA's tunables go with it: set while loaded, gone from `get` once it
/// is unloaded (while another CCA keeps the shared maps), refused by
/// `get`/`set` then, and back at the defaults when it is loaded again.
#[test]
fn a_ccas_tunables_reset_when_it_is_unloaded() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "qfair", "fairtt"]));
    assert_success(&t.run(&["set", "fairtt.scope", "3"]));
    assert_success(&t.run(&["unload", "fairtt"]));
    let all = assert_success(&t.run(&["get"]));
    assert!(!all.contains("fairtt."), "{all}");
    assert!(all.contains("qfair."), "{all}");
    assert_one_line_error(&t.run(&["get", "fairtt.scope"]), "fairtt");
    assert_one_line_error(&t.run(&["get", "fairtt"]), "not loaded");
    assert_one_line_error(&t.run(&["set", "fairtt.beta", "0.7"]), "not loaded");
    assert_success(&t.run(&["load", "fairtt"]));
    let v: serde_json::Value =
        serde_json::from_str(&assert_success(&t.run(&["--json", "get", "fairtt.scope"]))).unwrap();
    assert_eq!(v[0]["is_default"], true, "{v}");
    assert_eq!(v[0]["value"], 1.0, "{v}");
    assert_success(&t.run(&["unload", "fairtt", "qfair"]));
}

/// Options a load cannot apply are said, not dropped: `--object` for a CCA
/// that is loaded is refused naming `swap`, and `--flows-max` for a flow
/// map that exists says the capacity in effect.
#[test]
fn load_options_it_cannot_apply_are_said() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "qfair"]));
    let out = assert_success(&t.run(&["load", "fairtt", "--flows-max", "2048"]));
    assert!(out.contains("fairtt: loaded"), "{out}");
    assert!(out.contains("keeps its 65536 entries"), "{out}");
    let obj = temp_file(
        "fairtt-again",
        ".o",
        rttfair_loader::objects::cca(Cca::Fairtt),
    );
    let line = assert_one_line_error(
        &t.run(&["load", "fairtt", "--object", obj.path().to_str().unwrap()]),
        "already loaded",
    );
    assert!(line.contains("swap fairtt"), "{line}");
    assert!(registered("fairtt"));
    assert_one_line_error(&t.run(&["load", "bbr1", "--flows-max", "4"]), "4");
    assert_success(&t.run(&["unload", "fairtt", "qfair"]));
}

/// A cgroup nested so deep that the pin name of one CCA fits bpffs's 255
/// bytes and that of a longer-named one does not: attaching the longer one
/// is refused before anything is loaded, naming the limit, and the earlier
/// attachment stays the cgroup's default. The cgroup's name has a dot, as
/// systemd's `.scope`s do, which bpffs refuses in a pin name unless
/// escaped. (The kernel's bbr and cubic stand in for the two CCA names: 3
/// and 5 bytes.)
#[test]
fn an_attachment_too_deep_to_pin_is_refused_and_keeps_the_earlier_one() {
    let t = KernelTest::new();
    let top = TestCgroup::new("rttfair-deep");
    struct Nested(Vec<std::path::PathBuf>);
    impl Drop for Nested {
        fn drop(&mut self) {
            for p in self.0.iter().rev() {
                let _ = std::fs::remove_dir(p);
            }
        }
    }
    // Grow the path until its escaped form ('/' is "%2F", '.' "%2E") is 250
    // bytes: "bbr@" + 250 = 254 fits, "cubic@" + 250 = 256 does not. It
    // ends in ".scope", as systemd's do (bpffs refuses a name with a dot).
    let escaped = |p: &std::path::Path| {
        let s = p.to_str().unwrap();
        s.len() + 2 * s.matches(['/', '.']).count()
    };
    let mut path = std::fs::canonicalize(&top.path).unwrap();
    let mut nested = Nested(Vec::new());
    let mut rem = 250 - escaped(&path);
    while rem > 74 {
        path.push("d".repeat(60));
        rem -= 63;
        std::fs::create_dir(&path).unwrap();
        nested.0.push(path.clone());
    }
    path.push(format!("{}.scope", "e".repeat(rem - 11)));
    std::fs::create_dir(&path).unwrap();
    nested.0.push(path.clone());
    assert_eq!(escaped(&path), 250);
    let cg = path.to_str().unwrap();
    assert_success(&t.run(&["attach", "--cgroup", cg, "bbr"]));
    let line = assert_one_line_error(&t.run(&["attach", "--cgroup", cg, "cubic"]), "255");
    assert!(line.contains("--cgroup"), "{line}");
    let list = assert_success(&t.run(&["list"]));
    assert!(
        list.contains(&format!("cgroup default: {cg} -> bbr")),
        "the earlier attachment went: {list}"
    );
    // Attaching again over it (same name) replaces it in place.
    assert_success(&t.run(&["attach", "--cgroup", cg, "bbr"]));
    assert_success(&t.run(&["detach", "--cgroup", cg]));
    drop(nested);
}

/// `demo` ended by SIGTERM sent to its pid alone (a service manager's or a
/// CI harness's kill, not a terminal's Ctrl-C to the whole group) takes its
/// `rttfairctl daemon` child with it: the port stops answering, and the
/// CCAs the demo loaded are unloaded.
#[test]
fn a_demo_ended_by_sigterm_leaves_no_daemon_behind() {
    use std::io::BufRead;
    let t = KernelTest::new();
    let out = tempfile::tempdir().unwrap();
    let mut demo = t
        .ctl()
        .args(["demo", "--seconds", "5", "--out"])
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(demo.stdout.take().unwrap()).lines();
    let port: u16 = lines
        .by_ref()
        .map_while(|l| l.ok())
        .find_map(|l| {
            let rest = l
                .split_once("live per-flow metrics while it runs: http://127.0.0.1:")?
                .1;
            rest.split('/').next()?.parse().ok()
        })
        .expect("the demo never said where its live metrics are");
    assert!(http_get(port, "/healthz").is_some(), "the daemon is not up");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(demo.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    drop(lines);
    demo.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(6), || std::net::TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_err()),
        "the demo's daemon still answers on port {port} after the demo ended"
    );
    for cca in ["qfair", "bbr3", "bbr1", "fairtt", "adbbr"] {
        assert!(!registered(cca), "{cca} stayed registered");
    }
}
