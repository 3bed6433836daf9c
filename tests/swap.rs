//! Changing congestion control under a live connection: migrate, swap in
//! place, unload, cgroup default. One long transfer carries a known byte
//! pattern that the receiver verifies; it must never reset or corrupt.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use rttfair_lab::net::link::Bottleneck;
use rttfair_lab::net::topology::{Dumbbell, FlowPath, RECEIVER};

const PORT: u16 = 6200;

fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(31).wrapping_add(7) % 251) as u8
}

/// Receiver: verifies every byte, records bytes received per 100 ms.
fn receive(listener: TcpListener, timeline: Arc<Mutex<Vec<(f64, u64)>>>) -> (u64, bool) {
    let (mut s, _) = listener.accept().unwrap();
    let t0 = Instant::now();
    let mut buf = vec![0u8; 1 << 16];
    let (mut total, mut ok) = (0u64, true);
    let mut last_mark = 0.0;
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => panic!("receiver: connection broke: {e}"),
        };
        for (k, b) in buf[..n].iter().enumerate() {
            if *b != pattern(total + k as u64) {
                ok = false;
            }
        }
        total += n as u64;
        let t = t0.elapsed().as_secs_f64();
        if t - last_mark >= 0.1 {
            timeline.lock().unwrap().push((t, total));
            last_mark = t;
        }
    }
    (total, ok)
}

fn cca_of(s: &TcpStream) -> String {
    rttfair_lab::net::sock::congestion(s).unwrap()
}

#[test]
fn live_connection_survives_migrate_swap_unload_and_cgroup_default() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1", "fairtt", "adbbr"]));
    let net = Dumbbell::build(
        &[FlowPath {
            rtt: Duration::from_millis(20),
            loss_pct: 0.0,
        }],
        Bottleneck {
            rate_bit: 20_000_000,
            limit_bytes: 100_000,
        },
    )
    .unwrap();
    let l = net
        .rcv
        .run(|| TcpListener::bind(SocketAddrV4::new(RECEIVER, PORT)).unwrap())
        .unwrap();
    let timeline = Arc::new(Mutex::new(Vec::new()));
    let tl = timeline.clone();
    let rx = net.rcv.spawn(move || receive(l, tl)).unwrap();
    let t0 = Instant::now();

    let src = net.sender(0);
    let stream = net
        .snd
        .run(move || connect_from(src, SocketAddr::from((RECEIVER, PORT)), "bbr1"))
        .unwrap();
    let stream = Arc::new(stream);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let tx = {
        let (s, stop, sent) = (stream.clone(), stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let mut off = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (k, b) in buf.iter_mut().enumerate() {
                    *b = pattern(off + k as u64);
                }
                let n = (&*s).write(&buf).expect("sender: connection broke");
                // Keep the pattern aligned with what was actually written.
                off += n as u64;
                sent.store(off, Ordering::Relaxed);
            }
            s.shutdown(std::net::Shutdown::Write).unwrap();
        })
    };

    let mut steps: Vec<(&str, f64)> = Vec::new();
    let mut step = |name: &'static str, args: &[&str], expect_cca: &str| {
        std::thread::sleep(Duration::from_secs(3));
        let at = t0.elapsed().as_secs_f64();
        if !args.is_empty() {
            let out = assert_success(&t.run(args));
            print!("[{at:5.1}s] {name}: {out}");
        }
        assert_eq!(cca_of(&stream), expect_cca, "after {name}");
        let list = assert_success(&t.run(&["list"]));
        println!(
            "{}",
            list.lines()
                .filter(|l| !l.contains("="))
                .collect::<Vec<_>>()
                .join("\n")
        );
        steps.push((name, at));
    };
    step("start", &[], "bbr1");
    let port = PORT.to_string();
    step(
        "migrate bbr1 -> fairtt",
        &[
            "migrate", "--from", "bbr1", "--to", "fairtt", "--port", &port,
        ],
        "fairtt",
    );
    let obj = temp_file(
        "fairtt-rebuilt",
        ".o",
        rttfair_loader::objects::cca(rttfair_loader::Cca::Fairtt),
    );
    step(
        "swap fairtt",
        &["swap", "fairtt", "--object", obj.path().to_str().unwrap()],
        "fairtt",
    );
    drop(obj);
    step(
        "migrate fairtt -> adbbr",
        &[
            "migrate", "--from", "fairtt", "--to", "adbbr", "--port", &port,
        ],
        "adbbr",
    );
    step("unload fairtt", &["unload", "fairtt"], "adbbr");
    assert!(!registered("fairtt"));

    // A cgroup default: a new connection from a process in the cgroup gets it.
    let cgroup = TestCgroup::new("rttfair-test");
    let cg = &cgroup.path;
    step(
        "attach cgroup bbr1",
        &["attach", "--cgroup", cg.to_str().unwrap(), "bbr1"],
        "adbbr",
    );
    let srv =
        rttfair_lab::net::iperf::Server::start(&net.rcv, &RECEIVER.to_string(), 5301).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec ip netns exec {} iperf3 -c {} -p 5301 -t 1 -J",
            cg.display(),
            net.snd.name(),
            RECEIVER
        ))
        .output()
        .unwrap();
    drop(srv);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["end"]["sender_tcp_congestion"], "bbr1",
        "cgroup default not applied"
    );
    let list = assert_success(&t.run(&["list"]));
    assert!(
        list.contains(&format!("cgroup default: {} -> bbr1", cg.display())),
        "{list}"
    );

    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    tx.join().unwrap();
    let (received, intact) = rx.join().unwrap().unwrap();
    assert_eq!(received, sent.load(Ordering::Relaxed), "bytes lost");
    assert!(intact, "received bytes differ from the pattern");
    println!("{received} bytes delivered intact");

    // Throughput after each step, measured (not asserted): time until the
    // 500 ms rate is back at 80% of the rate before the step.
    let tl = timeline.lock().unwrap().clone();
    let rate = |a: f64, b: f64| -> f64 {
        let at = |t: f64| {
            tl.iter()
                .rev()
                .find(|(x, _)| *x <= t)
                .map(|p| p.1)
                .unwrap_or(0)
        };
        (at(b) as f64 - at(a) as f64) * 8.0 / (b - a) / 1e6
    };
    for (name, at) in steps.iter().skip(1) {
        let before = rate(at - 1.5, at - 0.5);
        let back = (0..30)
            .map(|k| at + k as f64 * 0.1)
            .find(|t| rate(*t, t + 0.5) >= 0.8 * before);
        match back {
            Some(tb) => println!(
                "{name}: {before:.1} Mbit/s before, back within {:.1} s",
                tb - at
            ),
            None => println!("{name}: {before:.1} Mbit/s before, not back within 3 s"),
        }
    }

    assert_success(&t.run(&["detach", "--cgroup", cg.to_str().unwrap()]));
    drop(cgroup);
    drop(stream);
    assert!(wait_until(Duration::from_secs(5), || {
        rttfair_loader::flows::live_sockets(&t.fs, rttfair_loader::Cca::Adbbr).unwrap() == 0
    }));
    drop(net);
    assert_success(&t.run(&["unload", "bbr1", "adbbr"]));
}

#[test]
fn failed_swap_leaves_the_old_implementation() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    let map_pins = || {
        let mut v: Vec<_> = std::fs::read_dir(t.fs.maps_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let pinned = map_pins();
    let obj = rejected_object("reject-swap");
    let out = t.run(&["swap", "bbr1", "--object", obj.path().to_str().unwrap()]);
    assert_one_line_error(&out, "verifier rejected bbr1");
    assert!(registered("bbr1"));
    assert_eq!(map_pins(), pinned, "a failed swap left maps pinned");
    // Another CCA's object is the object's fault, said before the kernel
    // sees it (not "kernel cannot register"), and pins nothing.
    let qfair = temp_file(
        "qfair-as-bbr1",
        ".o",
        rttfair_loader::objects::cca(rttfair_loader::Cca::Qfair),
    );
    let line = assert_one_line_error(
        &t.run(&["swap", "bbr1", "--object", qfair.path().to_str().unwrap()]),
        "--object",
    );
    assert!(
        line.contains("bbr1_ops") && !line.contains("kernel"),
        "{line}"
    );
    assert_eq!(map_pins(), pinned, "a refused swap left maps pinned");
    // The old implementation still controls and exports new connections.
    let ns = rttfair_lab::net::netns::Netns::create("swapf").unwrap();
    let fs = t.fs.clone();
    let seen = ns
        .run(move || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = connect_with(l.local_addr().unwrap(), "bbr1");
            let (_s, _) = l.accept().unwrap();
            c.write_all(&[1u8; 100_000]).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            rttfair_loader::flows::FlowReader::open(&fs)
                .unwrap()
                .flows()
                .unwrap()
                .len()
        })
        .unwrap();
    assert!(seen >= 1, "bbr1 no longer exports after a failed swap");
    // Bad input for every command of the issue: one line, nothing changed.
    assert_one_line_error(&t.run(&["swap", "fairtt"]), "fairtt is not loaded");
    assert_one_line_error(
        &t.run(&["migrate", "--from", "bbr1", "--to", "cubic", "--port", "1"]),
        "no open connection",
    );
    assert_one_line_error(
        &t.run(&["migrate", "--from", "nope", "--to", "bbr1"]),
        "nope",
    );
    assert_one_line_error(
        &t.run(&[
            "migrate",
            "--from",
            "bbr1",
            "--to",
            "bbr1",
            "--netns",
            "rf-no-such-ns",
        ]),
        "rf-no-such-ns",
    );
    let missing = cgroup2_root().join("no-such-cgroup");
    assert_one_line_error(
        &t.run(&["attach", "--cgroup", missing.to_str().unwrap(), "bbr1"]),
        "no-such-cgroup",
    );
    assert_one_line_error(&t.run(&["default", "nope"]), "nope");
    assert_one_line_error(
        &t.run(&["default", "bbr1", "--netns", "rf-no-such-ns"]),
        "rf-no-such-ns",
    );
    assert!(registered("bbr1"));
    drop(ns);
    assert_success(&t.run(&["unload", "bbr1"]));
}

/// A CCA registered by a build of another ABI (simulated by renaming its
/// pinned maps to the previous version) is not adopted: `load` refuses
/// naming both ABIs and the fix, `unload` refuses rather than count zero
/// sockets, `flows`, `get` and `set` refuse on the same line, `list` shows
/// it as its note with the sockets unknown, and a daemon told to load it
/// serves with /readyz failing on the same line. `swap` is the fix, and a
/// plain unload works after it.
#[test]
fn a_cca_of_another_abi_is_neither_adopted_nor_counted_idle() {
    use common::daemon::{Daemon, Up};
    use rttfair_loader::abi::ABI_VERSION;
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "fairtt"]));
    let (this, old) = (format!("_v{ABI_VERSION}"), format!("_v{}", ABI_VERSION - 1));
    for e in std::fs::read_dir(t.fs.maps_dir()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let base = name.strip_suffix(&this).expect("a map of this ABI");
        std::fs::rename(e.path(), t.fs.map_pin(&format!("{base}{old}"))).unwrap();
    }
    let want = format!(
        "fairtt loaded by a build of ABI v{}; this build is ABI v{ABI_VERSION}",
        ABI_VERSION - 1
    );
    let line = assert_one_line_error(&t.run(&["load", "fairtt"]), &want);
    assert!(line.contains("rttfairctl swap"), "{line}");
    assert_one_line_error(&t.run(&["load", "bbr1"]), &want);
    assert!(
        !registered("bbr1"),
        "loading beside it would hide the mismatch"
    );
    assert_one_line_error(&t.run(&["unload", "fairtt"]), &want);
    assert!(registered("fairtt"));
    // The views give the same line, not "nothing loaded", "no tunables"
    // or "not loaded"; `list` shows it as its note, sockets unknown, not 0.
    for args in [
        &["flows"][..],
        &["get"],
        &["get", "fairtt.beta"],
        &["set", "fairtt.beta", "0.7"],
    ] {
        let line = assert_one_line_error(&t.run(args), &want);
        assert!(line.contains("rttfairctl swap"), "{args:?}: {line}");
    }
    let list = assert_success(&t.run(&["list", "--json"]));
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert!(list["note"].as_str().unwrap().contains(&want), "{list}");
    let fairtt = list_entry(&list, "fairtt");
    assert_eq!(fairtt["loaded"], true, "{fairtt}");
    assert!(fairtt["sockets"].is_null(), "{fairtt}");
    assert!(fairtt["exported_flows"].is_null(), "{fairtt}");
    let table = assert_success(&t.run(&["list"]));
    assert_eq!(
        list_row(&table, "fairtt"),
        ["fairtt", "yes", "?", "?"],
        "{table}"
    );
    assert!(table.contains(&format!("note: {want}")), "{table}");

    let cfg = temp_file("abi", ".toml", "load = [\"fairtt\"]\n");
    let port = free_port();
    let daemon = Daemon::start(
        &t.fs,
        &["--config", cfg.path().to_str().unwrap()],
        port,
        Up::Serving,
    );
    // Alive (a restart would not help) but not ready, with the reason.
    let (status, body) = http_get(port, "/healthz").expect("/healthz answers");
    assert_eq!(status, 200, "{body}");
    let (status, body) = http_get(port, "/readyz").expect("/readyz answers");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(&want), "{body}");
    drop(daemon);

    let swapped = assert_success(&t.run(&["swap", "fairtt"]));
    assert!(swapped.contains("uncounted"), "{swapped}");
    assert_success(&t.run(&["unload", "fairtt"]));
    assert!(!registered("fairtt"));
    // The last CCA out removed the old build's maps with this build's.
    let old_flows = t.fs.map_pin(&format!("rttfair_flows{old}"));
    assert!(!old_flows.exists(), "{} left", old_flows.display());
}

/// `unload --migrate-to` reaches this namespace and those in /run/netns
/// only: with a socket of the CCA in an unshared namespace it refuses
/// before moving anything (the reachable socket stays on the CCA too),
/// naming how many it cannot reach.
#[test]
fn unload_migrate_to_refuses_before_moving_when_a_socket_is_out_of_reach() {
    use std::sync::mpsc;
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    // One connection here, where the migration reaches...
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let here = connect_with(l.local_addr().unwrap(), "bbr1");
    let (_here_peer, _) = l.accept().unwrap();
    // ... and one in a namespace of its own, in no /run/netns.
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let away = std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        // A child of this thread runs in its namespace.
        let up = std::process::Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .unwrap();
        assert!(up.success());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = connect_with(l.local_addr().unwrap(), "bbr1");
        let (s, _) = l.accept().unwrap();
        ready_tx.send(()).unwrap();
        let _ = done_rx.recv();
        drop((c, s));
    });
    ready_rx.recv().unwrap();
    // Only the connecting ends set bbr1 (accepted ones get the listener's
    // default), so bbr1 has 2 sockets, 1 of them out of reach.
    let out = t.run(&["unload", "bbr1", "--migrate-to", "cubic"]);
    assert_one_line_error(
        &out,
        "bbr1: 1 of its 2 socket(s) are in network namespaces --migrate-to does not reach",
    );
    assert_eq!(cca_of(&here), "bbr1", "a refused migration moved a socket");
    assert!(registered("bbr1"));
    done_tx.send(()).unwrap();
    away.join().unwrap();
    // With the unreachable one gone, the same command moves and unloads.
    assert_success(&t.run(&["unload", "bbr1", "--migrate-to", "cubic"]));
    assert_eq!(cca_of(&here), "cubic");
    assert!(!registered("bbr1"));
}
