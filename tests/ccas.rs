//! FaiRTT and Ad-BBR in the kernel: the behaviour their papers define, read
//! back from the per-flow export while real flows cross the lab's dumbbell.

mod common;

use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use rttfair_lab::link::Bottleneck;
use rttfair_lab::topology::{Dumbbell, FlowPath, RECEIVER};
use rttfair_loader::export::Mode;
use rttfair_loader::flows::FlowReader;
use rttfair_loader::{BpfFs, Flow};

/// Start `n` sinks on the receiver, ports 6000.., each reading to EOF.
fn sinks(net: &Dumbbell, n: usize) -> Vec<std::thread::JoinHandle<anyhow::Result<u64>>> {
    (0..n)
        .map(|i| {
            let l = net
                .rcv
                .run(move || {
                    TcpListener::bind(SocketAddrV4::new(RECEIVER, 6000 + i as u16)).unwrap()
                })
                .unwrap();
            net.rcv.spawn(move || sink_once(l)).unwrap()
        })
        .collect()
}

/// A sender from flow `i`'s address with `cca`, sending for `dur`.
fn sender(
    net: &Dumbbell,
    i: usize,
    cca: &'static str,
    dur: Duration,
) -> std::thread::JoinHandle<anyhow::Result<u64>> {
    let src = net.sender(i);
    net.snd
        .spawn(move || {
            let mut s = connect_from(src, SocketAddr::from((RECEIVER, 6000 + i as u16)), cca);
            blast(&mut s, dur)
        })
        .unwrap()
}

/// Sample the export map every 100 ms until `stop`, keeping (t, flow index by
/// sender address, entry).
fn sample(
    fs: &BpfFs,
    net: &Dumbbell,
    n: usize,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(f64, usize, Flow)>> {
    let fs = fs.clone();
    let addrs: Vec<std::net::IpAddr> = (0..n).map(|i| net.sender(i).into()).collect();
    std::thread::spawn(move || {
        let reader = FlowReader::open(&fs).unwrap();
        let t0 = Instant::now();
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            for f in reader.flows().unwrap() {
                if let Some(i) = addrs.iter().position(|a| *a == f.local.ip()) {
                    out.push((t0.elapsed().as_secs_f64(), i, f));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        out
    })
}

#[test]
fn fairtt_shares_wfcount_host_wide_and_reduces_bdp_when_rtt_exceeds_alpha() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "fairtt"]));
    // Two distinct minRTT classes (10 ms and 40 ms) and a deep buffer, so
    // queueing pushes lastRTT above alpha for at least one flow.
    let net = Dumbbell::build(
        &[
            FlowPath {
                rtt: Duration::from_millis(10),
                loss_pct: 0.0,
            },
            FlowPath {
                rtt: Duration::from_millis(40),
                loss_pct: 0.0,
            },
        ],
        Bottleneck {
            rate_bit: 20_000_000,
            limit_bytes: 500_000,
        },
    )
    .unwrap();
    let sinks = sinks(&net, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let samples = sample(&t.fs, &net, 2, stop.clone());
    let a = sender(&net, 0, "fairtt", Duration::from_secs(12));
    let b = sender(&net, 1, "fairtt", Duration::from_secs(6));
    let sent_b = b.join().unwrap().unwrap();
    let sent_a = a.join().unwrap().unwrap();
    stop.store(true, Ordering::Relaxed);
    let samples = samples.join().unwrap();
    let got: Vec<u64> = sinks
        .into_iter()
        .map(|s| s.join().unwrap().unwrap())
        .collect();
    assert_eq!(got, vec![sent_a, sent_b], "bytes lost");

    // While both run (after both have refreshed the registry): Wfcount = 2.
    let both: Vec<_> = samples
        .iter()
        .filter(|(t, _, _)| (3.0..5.5).contains(t))
        .collect();
    assert!(!both.is_empty());
    for (t, i, f) in &both {
        assert_eq!(
            wfcount(f),
            2,
            "flow {i} at {t:.1}s saw Wfcount {}",
            wfcount(f)
        );
    }
    // After flow 1's socket is released (its class leaves at once): Wfcount =
    // 1 for flow 0. Release comes when its send buffer has drained, after
    // the sender stopped writing: take the last sample that still shows it.
    let b_gone = samples
        .iter()
        .filter(|(_, i, _)| *i == 1)
        .map(|(t, _, _)| *t)
        .fold(0.0, f64::max);
    println!("flow 1 last exported at {b_gone:.1}s");
    let after: Vec<_> = samples
        .iter()
        .filter(|(t, i, _)| *i == 0 && *t > b_gone + 0.5 && *t < 11.5)
        .collect();
    assert!(
        !after.is_empty(),
        "flow 1 was still exported at {b_gone:.1}s; no sample of flow 0 alone"
    );
    for (t, _, f) in &after {
        assert_eq!(wfcount(f), 1, "at {t:.1}s after the other flow ended");
    }
    // The adjustment is active exactly when lastRTT > alpha (in ProbeBW), and
    // then the coefficient is minRTT * gamma / lastRTT < 1.
    let mut active = 0;
    for (_, i, f) in &samples {
        let Some(ft) = f.fairtt() else { continue };
        if ft.active {
            active += 1;
            assert!(
                f.last_rtt > ft.alpha,
                "flow {i} active with lastRTT <= alpha"
            );
            assert_eq!(f.mode, Mode::ProbeBw);
            let want = (f.min_rtt.as_secs_f64() * 0.99 / f.last_rtt.as_secs_f64()).min(1.0);
            let got = ft.coefficient;
            assert!((got - want).abs() < 0.02, "coef {got} vs {want}");
        } else if f.mode == Mode::ProbeBw && !ft.alpha.is_zero() {
            // Exported at round starts: the snapshot's lastRTT and flag agree.
            assert!(f.last_rtt <= ft.alpha || ft.coefficient == 1.0);
        }
    }
    println!(
        "{} samples, {active} with the BDP reduction active",
        samples.len()
    );
    assert!(active > 0, "lastRTT never exceeded alpha in a deep buffer");
    assert!(wait_until(Duration::from_secs(10), || {
        rttfair_loader::flows::live_sockets(&t.fs, rttfair_loader::Cca::Fairtt).unwrap() == 0
    }));
    drop(net);
    assert_success(&t.run(&["unload", "fairtt"]));
}

#[test]
fn adbbr_skips_probe_rtt_on_a_stable_path_where_bbr1_probes_every_10s() {
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1", "adbbr"]));
    // Two separate dumbbells, one flow each, run side by side: 20 ms, 2 BDP.
    let path = [FlowPath {
        rtt: Duration::from_millis(20),
        loss_pct: 0.0,
    }];
    let bn = Bottleneck {
        rate_bit: 20_000_000,
        limit_bytes: 100_000,
    };
    let nets = [
        Dumbbell::build(&path, bn).unwrap(),
        Dumbbell::build(&path, bn).unwrap(),
    ];
    let mut sinks_all = Vec::new();
    let mut senders = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    let mut samplers = Vec::new();
    for (net, cca) in nets.iter().zip(["bbr1", "adbbr"]) {
        sinks_all.push(sinks(net, 1));
        samplers.push(sample(&t.fs, net, 1, stop.clone()));
        senders.push(sender(net, 0, cca, Duration::from_secs(31)));
    }
    for s in senders {
        s.join().unwrap().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let mut entries = Vec::new();
    for (s, cca) in samplers.into_iter().zip(["bbr1", "adbbr"]) {
        let samples = s.join().unwrap();
        // Both samplers see both flows (same sender address in two netns):
        // keep this CCA's.
        let last = samples
            .iter()
            .filter(|(_, _, f)| f.cca.map(|c| c.name()) == Some(cca))
            .map(|(_, _, f)| f.probe_rtt_entries)
            .max()
            .unwrap_or(0);
        println!("{cca}: {last} ProbeRTT entries in 31 s");
        entries.push(last);
    }
    for s in sinks_all.into_iter().flatten() {
        s.join().unwrap().unwrap();
    }
    assert!(
        (2..=4).contains(&entries[0]),
        "bbr1 entered ProbeRTT {} times in 31 s",
        entries[0]
    );
    assert_eq!(entries[1], 0, "adbbr entered ProbeRTT on a stable path");
    // Closing sockets release their CCA asynchronously (FIN exchange): wait
    // while the links still exist.
    for cca in [rttfair_loader::Cca::Bbr1, rttfair_loader::Cca::Adbbr] {
        assert!(wait_until(
            Duration::from_secs(10),
            || rttfair_loader::flows::live_sockets(&t.fs, cca).unwrap() == 0
        ));
    }
    drop(nets);
    assert_success(&t.run(&["unload", "bbr1", "adbbr"]));
}

/// FaiRTT's Wfcount as the flow exported it (0 for another CCA's flow).
fn wfcount(f: &Flow) -> u16 {
    f.fairtt().map_or(0, |ft| ft.wfcount)
}
