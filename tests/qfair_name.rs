//! qfair under a second name (`rttfairctl load qfair --name qfair_b`): the
//! same object registered twice, each name with its own tunables, loaded
//! and unloaded apart; and the TAI offset `load` writes into qfair's
//! tunables, so its wall-clock drains fall on UTC.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::*;
use rttfair_loader::Cca;

/// `get NAME --json`'s value of one tunable.
fn value(t: &KernelTest, name: &str) -> f64 {
    let out = assert_success(&t.run(&["--json", "get", name]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("get --json");
    v[0]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: {out}"))
}

#[test]
fn a_second_name_has_its_own_tunables_and_comes_and_goes_alone() {
    let t = KernelTest::new();
    assert!(
        !registered("qfair_b"),
        "qfair_b is already registered on this host"
    );
    assert_success(&t.run(&["load", "qfair"]));
    assert_success(&t.run(&["load", "qfair", "--name", "qfair_b"]));
    assert!(registered("qfair") && registered("qfair_b"));
    assert!(t.fs.link_pin(Cca::QfairAs("qfair_b")).exists());

    // Its own tunables: setting qfair_b's leaves qfair's alone, and the
    // host's TAI offset is written into both.
    assert_success(&t.run(&["set", "qfair_b.drain_phase_ms", "1000"]));
    assert_eq!(value(&t, "qfair_b.drain_phase_ms"), 1000.0);
    assert_eq!(value(&t, "qfair.drain_phase_ms"), 0.0);
    let tai = rttfair_loader::tunables::host_tai_offset_s().unwrap() as f64;
    assert_eq!(value(&t, "qfair.tai_offset_s"), tai);
    assert_eq!(value(&t, "qfair_b.tai_offset_s"), tai);
    let all = assert_success(&t.run(&["get"]));
    assert!(
        all.contains("qfair.drain_phase_ms") && all.contains("qfair_b.drain_phase_ms"),
        "{all}"
    );
    let list = assert_success(&t.run(&["list"]));
    assert_eq!(list_row(&list, "qfair_b")[0], "qfair_b", "{list}");

    // Selectable like any CCA (setsockopt), and its sockets count as
    // qfair's object's.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let s = connect_with(listener.local_addr().unwrap(), "qfair_b");
    drop(s);
    drop(listener);
    assert!(t.sockets_closed(Cca::Qfair, Duration::from_secs(10)));

    // Bad names: one line each, and nothing registered or changed.
    for (args, needle) in [
        (
            &["load", "qfair", "--name", "qfair"][..],
            "qfair's own name",
        ),
        (&["load", "qfair", "--name", "cubic"], "qfair_<suffix>"),
        (&["load", "qfair", "--name", "qfair_B"], "1 to 15 of a-z"),
        (
            &["load", "qfair", "--name", "qfair_0123456789"],
            "1 to 15 of a-z",
        ),
        (&["load", "fairtt", "--name", "fairtt_b"], "only qfair"),
        (
            &["load", "qfair", "bbr1", "--name", "qfair_c"],
            "exactly one CCA",
        ),
        (&["set", "qfair_c.drain_phase_ms", "5"], "qfair_c"),
        (
            &["set", "qfair_b.drain_phase_ms", "-5"],
            "qfair_b.drain_phase_ms",
        ),
    ] {
        assert_one_line_error(&t.run(args), needle);
    }
    assert!(!registered("fairtt") && !registered("fairtt_b") && !registered("qfair_c"));
    assert!(!registered("bbr1"));
    assert_eq!(value(&t, "qfair_b.drain_phase_ms"), 1000.0);

    // Unloading qfair leaves qfair_b, tunables and all; a reloaded qfair
    // starts from the defaults.
    assert_success(&t.run(&["unload", "qfair"]));
    assert!(!registered("qfair") && registered("qfair_b"));
    assert_eq!(value(&t, "qfair_b.drain_phase_ms"), 1000.0);
    assert_success(&t.run(&["load", "qfair"]));
    assert_eq!(value(&t, "qfair.drain_phase_ms"), 0.0);
    // ... and unloading qfair_b leaves qfair.
    assert_success(&t.run(&["unload", "qfair_b"]));
    assert!(registered("qfair") && !registered("qfair_b"));
    assert_one_line_error(&t.run(&["get", "qfair_b.drain_phase_ms"]), "qfair_b");
    // Loaded again, qfair_b starts from the defaults too.
    assert_success(&t.run(&["load", "qfair_b"]));
    assert_eq!(value(&t, "qfair_b.drain_phase_ms"), 0.0);
    assert_success(&t.run(&["unload", "qfair", "qfair_b"]));
    assert!(!registered("qfair") && !registered("qfair_b"));
    assert!(
        !t.fs.root().exists(),
        "pins left under {}",
        t.fs.root().display()
    );
}

/// Sets the kernel's TAI offset (adjtimex ADJ_TAI) and puts the previous
/// one back when dropped, also when the test fails.
struct TaiOffset(i32);

impl TaiOffset {
    fn set(to: i32) -> TaiOffset {
        let before = rttfair_loader::tunables::host_tai_offset_s().unwrap() as i32;
        set_tai(to);
        TaiOffset(before)
    }
}

impl Drop for TaiOffset {
    fn drop(&mut self) {
        set_tai(self.0);
    }
}

fn set_tai(to: i32) {
    // SAFETY: a zeroed timex with only ADJ_TAI and its value set.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    tx.modes = libc::ADJ_TAI;
    tx.constant = to.into();
    assert!(
        unsafe { libc::adjtimex(&mut tx) } >= 0,
        "adjtimex ADJ_TAI {to}: {}",
        std::io::Error::last_os_error()
    );
}

#[test]
fn load_writes_the_hosts_tai_offset_and_a_reload_reads_a_new_one() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "qfair"]));
    let host = rttfair_loader::tunables::host_tai_offset_s().unwrap();
    assert_eq!(value(&t, "qfair.tai_offset_s"), f64::from(host));
    assert_success(&t.run(&["unload", "qfair"]));
    // Another offset than the host's (37 s is chrony's with a leap table).
    let other = if host == 37 { 36 } else { 37 };
    let restore = TaiOffset::set(other);
    assert_eq!(
        rttfair_loader::tunables::host_tai_offset_s().unwrap(),
        other as u32
    );
    assert_success(&t.run(&["load", "qfair"]));
    assert_eq!(value(&t, "qfair.tai_offset_s"), f64::from(other));
    assert_success(&t.run(&["unload", "qfair"]));
    drop(restore);
    assert_eq!(rttfair_loader::tunables::host_tai_offset_s().unwrap(), host);
}
