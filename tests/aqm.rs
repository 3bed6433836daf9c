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

/// One cubic flow of `rtt` through a 100 Mbit/s bottleneck with a 4 MB
/// buffer (330 ms: drop-tail alone would let cubic build a standing
/// queue far above 5 ms) under `d`; returns the AQM's counters and the
/// sender's TcpExtTCPDeliveredCE.
fn run(d: &Discipline, tcp_ecn: bool) -> (Vec<aqm::QueueStats>, Vec<aqm::FlowStats>, u64) {
    let flows = [FlowPath {
        rtt: Duration::from_millis(20),
        loss_pct: 0.0,
    }];
    let net = Dumbbell::build(
        &flows,
        Bottleneck {
            rate_bit: RATE,
            limit_bytes: 4_000_000,
        },
    )
    .unwrap();
    aqm::set_tcp_ecn(&net.snd, tcp_ecn).unwrap();
    aqm::set_tcp_ecn(&net.rcv, tcp_ecn).unwrap();
    let a = Aqm::attach(
        d,
        RATE,
        &net.router,
        topology::BOTTLENECK_IF,
        &net.rcv,
        topology::RECEIVER_IF,
    )
    .unwrap();
    let srv = iperf::Server::start(&net.rcv, &topology::RECEIVER.to_string(), 5201).unwrap();
    let spec = ClientSpec {
        server: topology::RECEIVER.to_string(),
        port: srv.port,
        bind: Some(net.sender(0).to_string()),
        cca: "cubic".into(),
        seconds: 4.0,
        interval: 1.0,
    };
    let r = iperf::client(&net.snd, &spec).unwrap();
    println!(
        "goodput {:.1} Mbit/s, retransmits {}",
        r.receiver_bits_per_second / 1e6,
        r.retransmits
    );
    let out = net
        .snd
        .exec("nstat", &["-az", "TcpExtTCPDeliveredCE"])
        .unwrap();
    let ce = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next()? == "TcpExtTCPDeliveredCE").then(|| f.next()?.parse().ok())?
        })
        .unwrap_or(0);
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
    let flows = [FlowPath {
        rtt: Duration::from_millis(2),
        loss_pct: 0.0,
    }];
    let net = Dumbbell::build(
        &flows,
        Bottleneck {
            rate_bit: RATE,
            limit_bytes: 1_000_000,
        },
    )
    .unwrap();
    let a = Aqm::attach(
        &Discipline::Fifo,
        RATE,
        &net.router,
        topology::BOTTLENECK_IF,
        &net.rcv,
        topology::RECEIVER_IF,
    )
    .unwrap();
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
        let spec = ClientSpec {
            server: topology::RECEIVER.to_string(),
            port: srv.port,
            bind: Some(net.sender(0).to_string()),
            cca: "cubic".into(),
            seconds: 4.0,
            interval: 1.0,
        };
        let tcp = iperf::client(&net.snd, &spec).unwrap();
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
