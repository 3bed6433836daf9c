//! The lab's AQM at a real bottleneck (issue 44): CoDel drops when the
//! sojourn stays over target; with ECN it marks and the marks reach the
//! sender. Kernel test: run under `flock /tmp/rttfair-kernel.lock`.

mod common;

use std::time::Duration;

use common::*;
use rttfair_lab::net::aqm::{self, Aqm};
use rttfair_lab::net::iperf::{self, ClientSpec};
use rttfair_lab::net::link::Bottleneck;
use rttfair_lab::net::topology::{self, Dumbbell, FlowPath};
use rttfair_lab::scenario::aqm::{parse, Discipline};

const RATE: u64 = 100_000_000;

/// One flow of `rtt` through a RATE bottleneck of `limit_bytes`.
fn one_flow(rtt: Duration, limit_bytes: u64) -> Dumbbell {
    Dumbbell::build(
        &[FlowPath { rtt, loss_pct: 0.0 }],
        Bottleneck {
            rate_bit: RATE,
            limit_bytes,
        },
    )
    .unwrap()
}

/// The lab's AQM programs under `d` at `net`'s bottleneck.
fn attach_at_bottleneck(net: &Dumbbell, d: &Discipline) -> Aqm {
    Aqm::attach(
        d,
        RATE,
        &net.router,
        topology::BOTTLENECK_IF,
        &net.rcv,
        topology::RECEIVER_IF,
    )
    .unwrap()
}

/// One cubic flow from the first sender to `srv` for 4 s (iperf3,
/// reports every second).
fn cubic_for_4s(net: &Dumbbell, srv: &iperf::Server) -> iperf::ClientResult {
    let spec = ClientSpec {
        server: topology::RECEIVER.to_string(),
        port: srv.port,
        bind: Some(net.sender(0).to_string()),
        cca: "cubic".into(),
        seconds: 4.0,
        interval: 1.0,
    };
    iperf::client(&net.snd, &spec).unwrap()
}

/// One cubic flow of `rtt` through a 100 Mbit/s bottleneck with a 4 MB
/// buffer (330 ms: drop-tail alone would let cubic build a standing
/// queue far above 5 ms) under `d`; returns the AQM's counters and the
/// sender's TcpExtTCPDeliveredCE.
fn run(d: &Discipline, tcp_ecn: bool) -> (Vec<aqm::QueueStats>, Vec<aqm::FlowStats>, u64) {
    let net = one_flow(Duration::from_millis(20), 4_000_000);
    aqm::set_tcp_ecn(&net.snd, tcp_ecn).unwrap();
    aqm::set_tcp_ecn(&net.rcv, tcp_ecn).unwrap();
    let a = attach_at_bottleneck(&net, d);
    let srv = iperf::Server::start(&net.rcv, &topology::RECEIVER.to_string(), 5201).unwrap();
    let r = cubic_for_4s(&net, &srv);
    println!(
        "goodput {:.1} Mbit/s, retransmits {}",
        r.receiver_bits_per_second / 1e6,
        r.retransmits
    );
    let ce = delivered_ce(&net);
    let fs: Vec<aqm::FlowStats> = a
        .flow_stats()
        .into_iter()
        .filter(|(addr, _)| *addr == net.sender(0))
        .map(|(_, s)| s)
        .collect();
    (a.queue_stats(1), fs, ce)
}

#[test]
fn codel_drops_a_standing_queue_and_ecn_marks_reach_the_sender() {
    let _t = KernelTest::new();
    let codel = parse(&"aqm = \"codel\"".parse().unwrap()).unwrap();
    let (q, f, _) = run(&codel, false);
    println!("codel: queue {q:?} flow {f:?}");
    assert_eq!(f.len(), 1, "the flow's counters");
    let f = f[0];
    // Cubic keeps the queue over 5 ms for more than 100 ms after slow start:
    // CoDel drops, and its own counter agrees with the flow's.
    assert!(f.drops > 0 && q[0].drops == f.drops, "{q:?} {f:?}");
    assert_eq!(f.marks, 0);
    // Nearly every packet carried a stamp across the veth.
    assert!(f.unstamped * 100 <= f.packets, "{f:?}");

    let codel_ecn = parse(&"aqm = \"codel\"\necn = true".parse().unwrap()).unwrap();
    let (q, f, ce) = run(&codel_ecn, true);
    println!("codel ecn: queue {q:?} flow {f:?} sender DeliveredCE {ce}");
    let f = f[0];
    assert!(f.marks > 0 && q[0].marks == f.marks, "{q:?} {f:?}");
    assert!(
        ce > 0,
        "the sender saw no CE echo (TcpExtTCPDeliveredCE {ce})"
    );
}

/// The stamp path's own cost: with no queue (UDP datagrams of 1 kB, one
/// per 10 ms at 100 Mbit/s), what is measured is the veth hop and the two
/// programs alone (HTB sends an idle link's packet at once, within its
/// burst; the veth does not serialise): 8 us mean, 19 us max when written.
#[test]
fn stamp_path_adds_microseconds_on_an_idle_link() {
    let _t = KernelTest::new();
    let net = one_flow(Duration::from_millis(2), 1_000_000);
    let a = attach_at_bottleneck(&net, &Discipline::Fifo);
    let src = std::net::SocketAddr::from((net.sender(0), 0));
    let dst = std::net::SocketAddr::from((topology::RECEIVER, 9));
    net.snd
        .run(move || {
            let s = std::net::UdpSocket::bind(src).unwrap();
            for _ in 0..100 {
                s.send_to(&[0u8; 1000], dst).unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .unwrap();
    let f = a
        .flow_stats()
        .into_iter()
        .find(|(addr, _)| *addr == net.sender(0))
        .map(|(_, s)| s)
        .expect("the datagrams' counters");
    let judged = f.packets - f.unstamped;
    let mean_us = f.sojourn_sum_ns as f64 / judged as f64 / 1e3;
    println!(
        "idle link: {judged} packets, sojourn mean {mean_us:.1} us max {:.1} us",
        f.sojourn_max_ns as f64 / 1e3
    );
    assert!(judged >= 100 && f.drops == 0, "{f:?}");
    assert!(mean_us < 500.0, "{mean_us} us");
}

/// Full-size UDP datagrams from [`rateload::LOAD_SOURCE`] (no flow's
/// address), one every packet time of `rate_bit`, evenly paced (not in
/// bursts as the rate check's load), for `len`.
fn paced_udp(
    net: &Dumbbell,
    rate_bit: u64,
    len: Duration,
) -> std::thread::JoinHandle<anyhow::Result<std::io::Result<()>>> {
    use rttfair_lab::net::rateload::LOAD_SOURCE;
    let gap = Duration::from_nanos(1514 * 8 * 1_000_000_000 / rate_bit);
    let dst = std::net::SocketAddr::from((topology::RECEIVER, 9));
    net.snd
        .spawn(move || -> std::io::Result<()> {
            let s = std::net::UdpSocket::bind((LOAD_SOURCE, 0))?;
            let buf = [0u8; 1472];
            let t0 = std::time::Instant::now();
            let mut next = t0;
            while t0.elapsed() < len {
                if let Some(d) = next.checked_duration_since(std::time::Instant::now()) {
                    std::thread::sleep(d);
                }
                // ECONNREFUSED from an earlier ICMP port unreachable: go on.
                let _ = s.send_to(&buf, dst);
                next += gap;
            }
            Ok(())
        })
        .unwrap()
}

/// FQ-CoDel with 64 queues: a UDP flow paced at 20 Mbit/s (its own source
/// address) beside an unlimited cubic flow at 100
/// Mbit/s. They hash to different flow queues (HTB leaves), and the DRR
/// among the leaves serves the sparse flow at its rate without the cubic
/// flow's queue: no drop of it, a lower mean sojourn than cubic's, and
/// cubic takes the rest of the link. A hash collision (1 in 64) is
/// retried with new ports.
#[test]
fn fq_codel_puts_flows_in_their_own_queues_and_serves_the_sparse_one_first() {
    use rttfair_lab::net::rateload;
    use rttfair_lab::net::topology::Options;
    let _t = KernelTest::new();
    let fq = parse(&"aqm = \"fq_codel\"\nflows = 64".parse().unwrap()).unwrap();
    for attempt in 0..3 {
        let flows = [FlowPath {
            rtt: Duration::from_millis(20),
            loss_pct: 0.0,
        }];
        let opts = Options {
            aqm: fq,
            ..Options::default()
        };
        let net = Dumbbell::build_opts(
            &flows,
            Bottleneck {
                rate_bit: RATE,
                limit_bytes: 4_000_000,
            },
            opts,
        )
        .unwrap();
        let srv = iperf::Server::start(&net.rcv, &topology::RECEIVER.to_string(), 5201).unwrap();
        let udp_bit: u64 = 20_000_000;
        let load = paced_udp(&net, udp_bit, Duration::from_secs(4));
        let tcp = cubic_for_4s(&net, &srv);
        load.join().unwrap().unwrap().unwrap();
        let aqm = net.aqm().expect("the AQM programs");
        let busy: Vec<(usize, aqm::QueueStats)> = aqm
            .queue_stats(64)
            .into_iter()
            .enumerate()
            .filter(|(_, q)| q.packets > 1000)
            .collect();
        let stats = aqm.flow_stats();
        let of = |a| {
            stats
                .iter()
                .find(|(x, _)| *x == a)
                .map(|(_, s)| *s)
                .expect("the flow's counters")
        };
        let (u, c) = (of(rateload::LOAD_SOURCE), of(net.sender(0)));
        let mean_ms = |s: aqm::FlowStats| {
            s.sojourn_sum_ns as f64 / (s.packets - s.unstamped).max(1) as f64 / 1e6
        };
        println!(
            "attempt {attempt}: busy queues {busy:?}\nudp {u:?} mean {:.3} ms\ncubic {c:?} mean {:.3} ms, goodput {:.1} Mbit/s",
            mean_ms(u),
            mean_ms(c),
            tcp.receiver_bits_per_second / 1e6
        );
        if busy.len() < 2 {
            // Both flows hashed to one queue: new ports, new hash.
            continue;
        }
        assert_eq!(busy.len(), 2, "two flows, two busy queues: {busy:?}");
        assert_eq!(u.drops, 0, "the sparse flow lost packets: {u:?}");
        assert!(
            mean_ms(u) < mean_ms(c),
            "the sparse flow waited behind cubic's queue: {:.3} >= {:.3} ms",
            mean_ms(u),
            mean_ms(c)
        );
        // Cubic gets the link the UDP flow leaves (minus headers and
        // start-up): the scheduler does not hold the backlogged queue back.
        assert!(
            tcp.receiver_bits_per_second > 0.6 * (RATE - udp_bit) as f64,
            "cubic {:.1} Mbit/s",
            tcp.receiver_bits_per_second / 1e6
        );
        return;
    }
    panic!("the two flows shared a queue three times in a row");
}

/// qfair answers CE marks (issue 44): behind an ECN step at K = 1 packet,
/// with ECN negotiated, a queue of more than one packet is marked, and
/// Eq. 7 halves alpha per marked packet (at most once per 100 ms), so alpha
/// stays near its floor of one packet. Without marks it would sit at
/// alpha_d >= alpha_0 = 3 (a lone flow in a 200 ms buffer loses nothing,
/// and alpha climbs 4 pkt/s from 1 to 3 in half a second). The marks reach
/// the sender (TcpExtTCPDeliveredCE), and the flow still fills the link
/// (its window carries the pipe; only the backlog is cut).
#[test]
fn qfair_holds_alpha_down_under_ce_marks() {
    use rttfair_lab::net::topology::Options;
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "qfair"]));
    let step = parse(&"aqm = \"ecn_step\"\nk_packets = 1".parse().unwrap()).unwrap();
    let net = Dumbbell::build_opts(
        &[FlowPath {
            rtt: Duration::from_millis(20),
            loss_pct: 0.0,
        }],
        dumbbell::bottleneck(500_000),
        Options {
            aqm: step,
            ..Options::default()
        },
    )
    .unwrap();
    aqm::set_tcp_ecn(&net.snd, true).unwrap();
    aqm::set_tcp_ecn(&net.rcv, true).unwrap();
    let mut flows = dumbbell::Transfers::sampling(&t.fs, 1);
    flows.flow(&net, 0, "qfair", Duration::from_secs(10));
    let done = flows.finish();
    let ce = delivered_ce(&net);
    let marks: u64 = net
        .aqm()
        .expect("the AQM programs")
        .flow_stats()
        .into_iter()
        .filter(|(a, _)| *a == net.sender(0))
        .map(|(_, s)| s.marks)
        .sum();
    let mut alpha: Vec<f64> = done
        .samples
        .iter()
        .filter(|(t, _, f)| *t > 5.0 && f.qfair().is_some_and(|q| q.target_cwnd > 0))
        .map(|(_, _, f)| f.qfair().unwrap().alpha_pkts)
        .collect();
    alpha.sort_by(f64::total_cmp);
    let median = alpha.get(alpha.len() / 2).copied().unwrap_or(f64::NAN);
    let mbit = done.received[0] as f64 * 8.0 / 10.0 / 1e6;
    println!(
        "qfair behind ecn_step K=1: marks {marks}, sender DeliveredCE {ce}, alpha median {median:.2} over {} samples, {mbit:.1} Mbit/s",
        alpha.len()
    );
    assert!(marks > 0, "the step marked nothing");
    assert!(ce > 0, "no CE echo reached the sender");
    assert!(alpha.len() >= 20, "too few cruise samples: {}", alpha.len());
    assert!(
        median < 2.0,
        "alpha's median {median:.2} is not held below alpha_0 = 3 by the marks"
    );
    // 10 s at 20 Mbit/s is 25 MB; a flow cut to its minimum window by the
    // marks would move a fraction of it.
    assert!(mbit > 10.0, "qfair moved only {mbit:.1} Mbit/s");
    t.unload_when_idle(rttfair_loader::Cca::Qfair, net);
}

/// The sender namespace's TcpExtTCPDeliveredCE.
fn delivered_ce(net: &Dumbbell) -> u64 {
    let out = net
        .snd
        .exec("nstat", &["-az", "TcpExtTCPDeliveredCE"])
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next()? == "TcpExtTCPDeliveredCE").then(|| f.next()?.parse().ok())?
        })
        .unwrap_or(0)
}
