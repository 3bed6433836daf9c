//! Foundation: `rttfairctl load bbr1` registers a working congestion control,
//! a real transfer through a bottleneck is controlled and exported by it, and
//! every error path is one clear line that changes nothing.

mod common;

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use common::*;
use rttfair_lab::net::link::{self, Bottleneck};
use rttfair_lab::net::netns::Netns;
use rttfair_lab::net::sock;
use rttfair_loader::flows::FlowReader;

const RATE_BIT: u64 = 50_000_000;

/// Two namespaces joined by a veth whose client side is a 50 Mbit/s HTB
/// bottleneck with a 100 kB bfifo.
fn bottleneck_pair() -> (Netns, Netns) {
    let client = Netns::create("cli").unwrap();
    let server = Netns::create("srv").unwrap();
    link::veth(&client, "v0", &server, "v1").unwrap();
    link::addr(&client, "v0", "10.77.0.1/24").unwrap();
    link::addr(&server, "v1", "10.77.0.2/24").unwrap();
    link::shape(
        &client,
        "v0",
        Bottleneck {
            rate_bit: RATE_BIT,
            limit_bytes: 100_000,
        },
    )
    .unwrap();
    (client, server)
}

#[test]
fn bbr1_controls_and_exports_a_real_transfer() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    assert!(
        registered("bbr1"),
        "bbr1 missing from tcp_available_congestion_control"
    );

    let (client, server) = bottleneck_pair();
    let addr: SocketAddr = "10.77.0.2:5001".parse().unwrap();
    let listener = server
        .run(move || TcpListener::bind(addr).unwrap())
        .unwrap();
    let sink = server.spawn(move || sink_once(listener)).unwrap();

    let fs = t.fs.clone();
    let (cca_seen, entry, sent, goodput_bps) = client
        .run(move || {
            let mut s = connect_with(addr, "bbr1");
            let t0 = std::time::Instant::now();
            let mut sent = blast(&mut s, Duration::from_secs(4));
            // What the sender pushed over 4 s: bounded by the 50 Mbit/s HTB
            // (plus what the send buffer holds), measured by the test itself.
            let goodput_bps = sent as f64 / t0.elapsed().as_secs_f64();
            let cca = sock::congestion(&s).unwrap();
            let reader = FlowReader::open(&fs).unwrap();
            let entry = reader
                .flows()
                .unwrap()
                .into_iter()
                .find(|f| f.peer.port() == 5001)
                .expect("no export entry for the flow");
            sent += blast(&mut s, Duration::from_millis(200));
            drop(s);
            (cca, entry, sent, goodput_bps)
        })
        .unwrap();
    let received = sink.join().unwrap().unwrap();
    assert_eq!(received, sent, "bytes lost");

    assert_eq!(cca_seen, "bbr1", "TCP_CONGESTION of the socket");
    assert_eq!(entry.cca, Some(rttfair_loader::Cca::Bbr1));
    let btlbw = entry.btlbw_bps as f64;
    println!(
        "btlbw {:.2} Mbit/s, sender's mean {:.2} Mbit/s, bottleneck {:.2} Mbit/s, min_rtt {} us, mode {}",
        btlbw * 8e-6,
        goodput_bps * 8e-6,
        RATE_BIT as f64 / 1e6,
        entry.min_rtt.as_micros(),
        entry.mode.name()
    );
    // Behaviour, not a figure (issue 20). BtlBw is a windowed MAX of
    // delivery-rate samples; on this 41 us path the window is ten rounds,
    // well under a millisecond, and HTB releases the queue in bursts, so
    // its value against the link rate is noise (+18 % .. +2080 % seen;
    // docs/results.md, "BtlBw at microsecond RTTs"). What must hold: the
    // estimate exists and is positive, the flow has left Startup (the model
    // found the pipe full), and a max of samples is not far below what the
    // flow really averaged: at least a quarter of the sender's own mean
    // (the mean itself is within 10 % of 50 Mbit/s in every run seen).
    assert!(btlbw > 0.0, "no BtlBw estimate");
    assert!(
        btlbw >= goodput_bps / 4.0,
        "BtlBw {:.2} Mbit/s is far below the flow's own mean {:.2} Mbit/s",
        btlbw * 8e-6,
        goodput_bps * 8e-6
    );
    assert!(
        matches!(
            entry.mode,
            rttfair_loader::export::Mode::ProbeBw | rttfair_loader::export::Mode::ProbeRtt
        ),
        "still in {} after 4 s at 50 Mbit/s",
        entry.mode.name()
    );
    assert!(!entry.min_rtt.is_zero() && entry.min_rtt < Duration::from_millis(100));
    assert_eq!(entry.abi_version, rttfair_loader::abi::ABI_VERSION);

    // Closed: release deleted the entry (the server side is closed by now too).
    let reader = FlowReader::open(&t.fs).unwrap();
    let id = entry.id;
    assert!(
        wait_until(Duration::from_secs(3), || reader
            .flows()
            .unwrap()
            .iter()
            .all(|f| f.id != id)),
        "flow entry leaked after close"
    );

    assert_success(&t.run(&["unload", "bbr1"]));
    assert!(!registered("bbr1"), "bbr1 still registered after unload");
    assert!(
        !t.fs.root().exists(),
        "unload of the last CCA left pins behind"
    );
}

#[test]
fn load_survives_the_cli_and_is_idempotent() {
    let t = KernelTest::new();
    assert!(assert_success(&t.run(&["load", "bbr1"])).contains("loaded"));
    // A second process sees it and does not register twice.
    assert!(assert_success(&t.run(&["load", "bbr1"])).contains("already loaded"));
    let list = assert_success(&t.run(&["list", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    let bbr1 = list_entry(&v, "bbr1");
    assert_eq!(bbr1["loaded"], true, "{list}");
    assert!(v["available"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "bbr1"));
    assert_success(&t.run(&["unload", "bbr1"]));
    assert!(!registered("bbr1"));
}

#[test]
fn unknown_cca_is_refused_with_the_valid_names() {
    let t = KernelTest::new();
    let line = assert_one_line_error(&t.run(&["load", "bbr1", "nope"]), "unknown CCA 'nope'");
    assert!(line.contains("bbr1"), "valid names missing: {line}");
    assert!(!registered("bbr1"), "a failed load left bbr1 registered");
    assert!(!t.fs.root().exists());
}

#[test]
fn not_root_is_refused() {
    let t = KernelTest::new();
    let out = {
        use std::os::unix::process::CommandExt;
        t.ctl()
            .args(["load", "bbr1"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    };
    assert_one_line_error(&out, "CAP_BPF");
    assert!(!registered("bbr1"));
}

#[test]
fn missing_btf_is_refused() {
    let t = KernelTest::new();
    let out = t
        .ctl()
        .args(["load", "bbr1"])
        .env("RTTFAIR_KERNEL_BTF", "/nonexistent/btf")
        .output()
        .unwrap();
    assert_one_line_error(&out, "no BTF");
    assert!(!registered("bbr1"));
}

#[test]
fn bpffs_that_cannot_be_used_is_refused() {
    let t = KernelTest::new();
    let tmp = rttfair_lab::testkit::temp_folder("notbpf");
    let dir = tmp.path().join("notbpf");
    let out = t
        .ctl()
        .args(["load", "bbr1"])
        .env("RTTFAIR_BPFFS", dir.join("root"))
        .output()
        .unwrap();
    assert_one_line_error(&out, "not on a bpf filesystem");
    assert!(!registered("bbr1"));
    assert!(!dir.exists(), "created directories outside bpffs");
}

#[test]
fn a_name_taken_by_another_registrant_is_refused() {
    let owner = KernelTest::new();
    assert_success(&owner.run(&["load", "bbr1"]));
    // Same name, different installation: must not replace or touch it.
    // A root in the same bpffs, in a folder removed on drop (also on panic).
    let other_dir = tempfile::Builder::new()
        .prefix("rttfair-test-other-")
        .tempdir_in("/sys/fs/bpf")
        .unwrap();
    let other = other_dir.path().join("root");
    let from_other = |command: &str| {
        let out = owner
            .ctl()
            .args([command, "bbr1"])
            .env("RTTFAIR_BPFFS", &other)
            .output()
            .unwrap();
        assert_one_line_error(&out, "already registered by another");
    };
    from_other("load");
    assert!(registered("bbr1"), "the owner's registration was disturbed");
    from_other("unload");
    assert!(registered("bbr1"));
    assert_success(&owner.run(&["unload", "bbr1"]));
}

#[test]
fn verifier_rejection_prints_the_verifier_and_registers_nothing() {
    let t = KernelTest::new();
    let obj = rejected_object("reject");
    let out = t.run(&["load", "bbr1", "--object", obj.path().to_str().unwrap()]);
    let line = assert_one_line_error(&out, "verifier rejected bbr1");
    assert!(
        line.contains("no write support"),
        "verifier's reason missing: {line}"
    );
    assert!(!registered("bbr1"));
    assert!(
        !t.fs.root().exists(),
        "a failed load left pins: {:?}",
        t.fs.root()
    );
}

#[test]
fn unload_is_refused_while_sockets_use_the_cca() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    let ns = Netns::create("busy").unwrap();
    let (listener, client, server) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let c = connect_with(l.local_addr().unwrap(), "bbr1");
            let (s, _) = l.accept().unwrap();
            (l, c, s)
        })
        .unwrap();
    assert_eq!(sock::congestion(&client).unwrap(), "bbr1");
    let line = assert_one_line_error(&t.run(&["unload", "bbr1"]), "used by");
    assert!(
        line.contains("1 socket") || line.contains("2 socket"),
        "{line}"
    );
    assert!(registered("bbr1"), "a refused unload unregistered anyway");
    drop((listener, client, server));
    assert!(t.sockets_closed(rttfair_loader::Cca::Bbr1, Duration::from_secs(3)));
    assert_success(&t.run(&["unload", "bbr1"]));
    assert!(!registered("bbr1"));
}

#[test]
fn forced_unload_leaves_open_connections_working() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    let ns = Netns::create("force").unwrap();
    let mut flow = LoopbackFlow::open(&ns, "bbr1");
    flow.blast(Duration::from_millis(300));
    assert_success(&t.run(&["unload", "bbr1", "--force"]));
    assert!(!registered("bbr1"));
    flow.blast(Duration::from_millis(300));
    let (received, sent) = flow.finish();
    assert_eq!(received, sent, "connection broke after a forced unload");
}

/// rttfairctl with `args`, for checks that need no root and no kernel: its
/// bpffs root is a path that does not exist, so nothing real is read.
fn host_run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rttfairctl"))
        .env("RTTFAIR_BPFFS", "/nonexistent/rttfair-host-test")
        .args(args)
        .output()
        .expect("spawn rttfairctl")
}

/// A command line clap refuses (unknown subcommand, missing argument, bad
/// number, conflicting flags) is one line like every other error, with
/// clap's usage exit code; help and version still print in full and exit 0.
#[test]
fn a_refused_command_line_is_one_line_and_exit_code_2() {
    let cases: [(&[&str], &str); 5] = [
        (&["nosuchcmd"], "unrecognized subcommand 'nosuchcmd'"),
        (&["load"], "required arguments were not provided: <CCA>"),
        (
            &["flows", "--watch", "abc"],
            "invalid value 'abc' for '--watch",
        ),
        (
            &["migrate", "--from", "a", "--to", "b", "--port", "70000"],
            "70000",
        ),
        (
            &["unload", "x", "--force", "--migrate-to", "y"],
            "'--force' cannot be used with '--migrate-to",
        ),
    ];
    for (args, needle) in cases {
        let out = host_run(args);
        let line = assert_one_line_error(&out, needle);
        assert!(line.starts_with("rttfairctl: error: "), "{args:?}: {line}");
        assert!(!line.contains("error: error"), "{args:?}: {line}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {line}");
    }
    for args in [
        &["--help"][..],
        &["help"],
        &["load", "--help"],
        &["--version"],
    ] {
        let out = host_run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(!out.stdout.is_empty(), "{args:?}: nothing printed");
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
    }
}

/// `flows --watch` with an interval no `Duration` holds is refused in one
/// line before anything is read, instead of a panic after the first table.
#[test]
fn an_unbounded_watch_interval_is_one_line_not_a_panic() {
    for bad in ["1e20", "0.01", "NaN"] {
        let line = assert_one_line_error(&host_run(&["flows", "--watch", bad]), "--watch");
        assert!(
            line.contains("between 0.1 and 3600 seconds"),
            "{bad}: {line}"
        );
    }
}

/// `demo --seconds` has one valid range, checked in one place before the
/// demo loads anything, and the CLI reports that check's message. (Only
/// values the lab's scenario check refuses as well are tried here, so a
/// broken check cannot start a demo.)
#[test]
fn demo_seconds_outside_its_range_is_one_line_naming_the_range() {
    for bad in ["0", "4000", "NaN", "30.5"] {
        assert_one_line_error(
            &host_run(&["demo", "--seconds", bad, "--out", "/nonexistent/demo"]),
            "--seconds must be whole seconds between 5 and 600",
        );
    }
}

/// `unload A B --migrate-to X` checks its arguments before it reads or
/// moves anything: a CCA named twice, a target that is not registered or
/// is one of the CCAs going, each refused in one line. (The per-CCA checks
/// that also come first are unit tests of `lifecycle::check_unload_state`.)
#[test]
fn unload_with_migration_refuses_bad_arguments_before_moving_anything() {
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "unload",
                "fairtt",
                "adbbr",
                "fairtt",
                "--migrate-to",
                "reno",
            ],
            "fairtt is named twice",
        ),
        (
            &["unload", "fairtt", "adbbr", "--migrate-to", "nosuchcca"],
            "nosuchcca (the --migrate-to target) is not a registered congestion control",
        ),
        (
            &["unload", "fairtt", "adbbr", "--migrate-to", "adbbr"],
            "adbbr is one of the CCAs being unloaded",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(&host_run(args), needle);
    }
}
