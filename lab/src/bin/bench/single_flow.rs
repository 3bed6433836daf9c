//! `bench single-flow [SECONDS [REPS]]`: the CPU cost of each CCA against
//! native bbr, one flow at full speed.

use std::time::Duration;

use anyhow::{bail, Result};
use rttfair_lab::net::ccas::CcaSession;
use rttfair_lab::net::iperf::{self, ClientSpec};
use rttfair_lab::net::link;
use rttfair_lab::net::netns::Netns;
use rttfair_loader::{BpfFs, Cca};

/// The kernel's own reference, run first in every repetition.
const REFERENCE: &str = "bbr";

/// One iperf3 run: the CCA, receiver bit/s, sender CPU-seconds per GB,
/// retransmits.
type Row<'a> = (&'a str, f64, f64, u64);

/// Native bbr vs the project CCAs, one flow over a veth pair with no
/// bottleneck, alternating CCAs within each repetition so drift hits all
/// alike. Ratios are against native bbr; the per-call cost of each project
/// CCA's cong_control comes from the kernel's BPF run-time stats.
pub fn run(args: &[String]) -> Result<()> {
    let secs: f64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(8.0);
    let reps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(3);
    // Native bbr first (the reference), then every CCA this build ships: a
    // new CCA joins the bench by joining `Cca::ALL`.
    let ccas: Vec<&str> = std::iter::once(REFERENCE)
        .chain(Cca::ALL.iter().map(|c| c.name()))
        .collect();
    let fs = BpfFs::from_env();
    let project: Vec<String> = ccas[1..].iter().map(|s| s.to_string()).collect();
    let _session = CcaSession::ensure(&fs, &project)?;
    let stats_prev =
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
    std::fs::write("/proc/sys/kernel/bpf_stats_enabled", "1")?;

    let (a, _b, _srv) = veth_pair()?;
    let mut rows: Vec<Row> = Vec::new();
    // (ns, calls) of cong_control per project CCA. All three programs are
    // named rf_cong_control and only one CCA runs at a time, so the change
    // of the sum over a run is that CCA's.
    let mut cc_runtime: Vec<(&str, u64, u64)> = Vec::new();
    for rep in 0..reps {
        for &cca in &ccas {
            let before = prog_stats("rf_cong_control");
            let row = one_run(&a, rep, cca, secs)?;
            if cca != REFERENCE {
                let after = prog_stats("rf_cong_control");
                cc_runtime.push((
                    cca,
                    after.0.saturating_sub(before.0),
                    after.1.saturating_sub(before.1),
                ));
            }
            rows.push(row);
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", stats_prev.trim());
    print_ratios(&ccas, &rows, &cc_runtime, reps, secs);
    Ok(())
}

/// Sender and receiver namespaces joined by a veth pair with offloads on,
/// and an iperf3 server on the receiver (all removed on drop).
fn veth_pair() -> Result<(Netns, Netns, iperf::Server)> {
    let a = Netns::create("bsnd")?;
    let b = Netns::create("brcv")?;
    link::veth(&a, "v0", &b, "v1")?;
    // Offloads back on: this benchmark is about raw speed and CPU per byte.
    for (ns, i) in [(&a, "v0"), (&b, "v1")] {
        ns.exec("ethtool", &["-K", i, "tso", "on", "gso", "on", "gro", "on"])?;
    }
    link::addr(&a, "v0", "10.88.0.1/24")?;
    link::addr(&b, "v1", "10.88.0.2/24")?;
    let srv = iperf::Server::start(&b, "10.88.0.2", 5201)?;
    Ok((a, b, srv))
}

/// One iperf3 flow from `snd` with `cca` for `secs`, its line printed.
fn one_run<'a>(snd: &Netns, rep: usize, cca: &'a str, secs: f64) -> Result<Row<'a>> {
    let r = iperf::client(
        snd,
        &ClientSpec {
            server: "10.88.0.2".into(),
            port: 5201,
            bind: None,
            cca: cca.into(),
            seconds: secs,
            interval: 1.0,
        },
    )?;
    if r.congestion != cca {
        bail!("iperf3 reports congestion {} for -C {cca}", r.congestion);
    }
    let cpu_s = r.sender_cpu_percent / 100.0 * r.seconds;
    let gb = r.sent_bytes as f64 / 1e9;
    println!(
        "rep {rep} {cca:<6} {:>8.2} Gbit/s  sender CPU {:>5.1}%  {:>6.3} CPU-s/GB  retrans {}",
        r.receiver_bits_per_second / 1e9,
        r.sender_cpu_percent,
        cpu_s / gb,
        r.retransmits
    );
    Ok((cca, r.receiver_bits_per_second, cpu_s / gb, r.retransmits))
}

/// The table of means over the repetitions, as ratios against the
/// reference, with each project CCA's mean ns per cong_control call.
fn print_ratios(
    ccas: &[&str],
    rows: &[Row],
    cc_runtime: &[(&str, u64, u64)],
    reps: usize,
    secs: f64,
) {
    let mean = |cca: &str, f: fn(&Row) -> f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 == cca).map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (tb, cb) = (mean(REFERENCE, |r| r.1), mean(REFERENCE, |r| r.2));
    println!();
    println!("single-flow over veth, {reps} x {secs} s each, alternating; ratios vs native bbr:");
    println!(
        "  {:<7} {:>12} {:>10} {:>12} {:>10} {:>16}",
        "cca", "Gbit/s", "x bbr", "CPU-s/GB", "x bbr", "ns/cong_control"
    );
    for &cca in ccas {
        let (t, c) = (mean(cca, |r| r.1), mean(cca, |r| r.2));
        let (ns, calls) = cc_runtime
            .iter()
            .filter(|r| r.0 == cca)
            .fold((0u64, 0u64), |a, r| (a.0 + r.1, a.1 + r.2));
        let per_call = if calls > 0 {
            format!("{:.0}", ns as f64 / calls as f64)
        } else {
            "-".into()
        };
        println!(
            "  {:<7} {:>12.2} {:>10.3} {:>12.3} {:>10.3} {:>16}",
            cca,
            t / 1e9,
            t / tb,
            c,
            c / cb,
            per_call
        );
    }
}

/// (run_time_ns, run_cnt) summed over loaded programs named `name`.
fn prog_stats(name: &str) -> (u64, u64) {
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy() == name)
        .fold((0, 0), |acc, p| (acc.0 + p.run_time_ns, acc.1 + p.run_cnt))
}
