//! Accounting that adds up: goodput, utilization and (through the per-flow
//! goodputs) Jain's index over one window of run time, the same for every
//! flow, the warm-up excluded, from counters that cannot exceed the link:
//!
//! - per flow, the bytes of its data that reached the receivers for the
//!   first time inside the window, stamped as they arrived right after the
//!   bottleneck ([`crate::net::arrivals`]): retransmissions of bytes already
//!   there are not counted, and a byte lost before the window opens counts
//!   when its retransmission arrives, i.e. when it crossed the link;
//! - for the link, the bottleneck qdisc's sent-bytes counter, interpolated
//!   at the same two instants from the queue samples.
//!
//! Every goodput byte of the window crossed the link in it inside a packet
//! of at most MSS payload per 1514 wire bytes, so goodput / (capacity x
//! 1448/1514) <= link bytes / capacity, up to timing. The window's edges are
//! the instants the lab marked them (taken at the plan's warm-up end and run
//! end), exact for the arrival counter, which stamps each segment with the
//! same clock. The published measurement error `e` (a fraction of capacity
//! over the window) bounds what timing can add: the qdisc counter is
//! interpolated between samples (`g_a + g_b`, the sample gaps around the two
//! instants), a packet takes a moment `d` from the qdisc to the receivers'
//! interface (a veth hop; allowed 1 ms), HTB may send one burst `B` above its
//! rate at each end, and a counter read over a span (`u_a + u_b`, zero for the
//! arrival counter) adds its span:
//!
//! ```text
//!   e = [ (u_a + u_b + g_a + g_b + d) x rate/8 + 2 B ] / (rate/8 x T)
//! ```
//!
//! So `utilization <= link_utilization + e` and both are `<= 1 + e`. If the
//! arrival ring overflowed (`arrivals_lost` > 0), goodput is a lower bound.
//!
//! Cross-check: `in_order_utilization`, the same figure from the receivers'
//! in-order counters (`tcpi_bytes_received` via `ss`, [`crate::net::rcvbytes`]),
//! what goodput was computed from before. It is not bounded by the link:
//! bytes held out of order behind a hole when the window opens count when
//! the hole fills (at 200 ms RTT with ~6 % retransmissions it read 2.5-2.9 %
//! above capacity, docs/results.md).

use serde::Serialize;

use crate::net::qstats::{QdiscStats, QueueSample};
use crate::scenario::plan::Window;

/// A counter per flow at one end of the window.
#[derive(Debug, Clone, Default)]
pub struct EdgeCounts {
    /// When they were read, seconds since the run started.
    pub t_s: f64,
    /// Half the time the reading took (0 for counters stamped with the
    /// edge's own clock).
    pub uncertainty_s: f64,
    /// Per flow: its counter, `None` if it had no connection then (not
    /// started yet, or finished).
    pub per_flow: Vec<Option<u64>>,
}

/// What a flow's counter is known from besides the readings.
#[derive(Debug, Clone, Copy)]
pub struct FlowSpan {
    pub start_s: f64,
    /// Bytes the flow delivered in all (iperf3's receiver total).
    pub total_bytes: u64,
}

/// The bottleneck: its sent-bytes samples and its shape.
#[derive(Debug, Clone, Copy)]
pub struct Link<'q> {
    pub queue: &'q [QueueSample],
    pub rate_bit: u64,
    /// HTB's burst ([`crate::net::link::htb_burst_bytes`]).
    pub burst_bytes: u64,
    /// MSS over wire packet: the largest share of a wire byte that is
    /// payload.
    pub payload_share: f64,
}

/// Allowance for a packet's transit from the bottleneck qdisc to the
/// receivers' interface: one veth hop, done in the same or the next
/// softirq (microseconds); 1 ms bounds it on a loaded 2-core host.
pub const TRANSIT_S: f64 = 1e-3;

/// The window's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WindowAccounting {
    pub window: Option<Window>,
    /// Per flow: first-time bytes that arrived in the window.
    pub flow_bytes: Vec<u64>,
    /// Per flow: goodput over the window, bit/s.
    pub flow_goodput_bps: Vec<f64>,
    /// Sum of goodputs over the goodput capacity (rate x MSS / wire packet).
    pub utilization: f64,
    /// Bytes the bottleneck sent in the window over rate x window.
    pub link_utilization: f64,
    /// The measurement error `e` of both utilizations (a fraction).
    pub error: f64,
    /// Cross-check: utilization from the receivers' in-order counters (not
    /// bounded by the link; see the module doc).
    pub in_order_utilization: Option<f64>,
    /// Arrival records the kernel could not hand over (ring full): goodput
    /// is a lower bound when this is not 0.
    pub arrivals_lost: u64,
}

/// A flow's counter at an edge: the reading if its connection was there;
/// else nothing yet if the edge is before (or just at) its start, and all
/// of it if after (its connection had finished).
fn counter_at(edge: &EdgeCounts, i: usize, f: &FlowSpan) -> u64 {
    match edge.per_flow.get(i).copied().flatten() {
        Some(b) => b,
        None if edge.t_s < f.start_s + 0.5 => 0,
        None => f.total_bytes,
    }
}

/// Per flow, what its counter advanced by between `a` and `b`.
fn advance(flows: &[FlowSpan], a: &EdgeCounts, b: &EdgeCounts) -> Vec<u64> {
    flows
        .iter()
        .enumerate()
        .map(|(i, f)| counter_at(b, i, f).saturating_sub(counter_at(a, i, f)))
        .collect()
}

/// The qdisc's sent-bytes counter at `t`, linearly interpolated between
/// the samples around it, and the gap between those samples (the
/// interpolation's uncertainty). `None` outside the sampled span.
pub fn link_counter_at(queue: &[QueueSample], t: f64) -> Option<(f64, f64)> {
    interpolate(queue, t, |s| s.bytes)
}

/// A qdisc counter (`field` of its samples) at `t`, interpolated as
/// [`link_counter_at`]; before the first sample the first one's value,
/// after the last the last one's (the counter did not move that we know
/// of). `None` without samples.
pub fn qdisc_counter_at(
    queue: &[QueueSample],
    t: f64,
    field: impl Fn(&QdiscStats) -> u64,
) -> Option<f64> {
    let (first, last) = (queue.first()?, queue.last()?);
    if t <= first.t {
        return Some(field(&first.stats) as f64);
    }
    if t >= last.t {
        return Some(field(&last.stats) as f64);
    }
    interpolate(queue, t, field).map(|(c, _)| c)
}

/// `field` of the samples at `t`, linearly interpolated, and the gap
/// between the two samples around it; `None` outside the sampled span.
fn interpolate(
    queue: &[QueueSample],
    t: f64,
    field: impl Fn(&QdiscStats) -> u64,
) -> Option<(f64, f64)> {
    let k = queue.iter().position(|q| q.t >= t)?;
    let hi = &queue[k];
    if k == 0 {
        return (hi.t - t <= 1e-9).then_some((field(&hi.stats) as f64, 0.0));
    }
    let lo = &queue[k - 1];
    let span = hi.t - lo.t;
    let f = if span > 0.0 { (t - lo.t) / span } else { 1.0 };
    let (a, b) = (field(&lo.stats), field(&hi.stats));
    let delta = b.saturating_sub(a) as f64;
    Some((a as f64 + f * delta, span))
}

/// Figures over the window between the arrival counters' edges `a` and
/// `b`; `in_order`, the receivers' in-order counters read at (about) the
/// same edges, gives the cross-check.
pub fn account(
    flows: &[FlowSpan],
    (a, b): (&EdgeCounts, &EdgeCounts),
    in_order: Option<(&EdgeCounts, &EdgeCounts)>,
    link: &Link,
) -> WindowAccounting {
    let seconds = b.t_s - a.t_s;
    if seconds <= 0.0 || link.rate_bit == 0 {
        return WindowAccounting::default();
    }
    let flow_bytes = advance(flows, a, b);
    let flow_goodput_bps: Vec<f64> = flow_bytes
        .iter()
        .map(|b| *b as f64 * 8.0 / seconds)
        .collect();
    let rate_bytes = link.rate_bit as f64 / 8.0;
    let capacity = rate_bytes * seconds;
    let goodput_capacity = capacity * link.payload_share;
    let edges = link_counter_at(link.queue, a.t_s).zip(link_counter_at(link.queue, b.t_s));
    let (link_bytes, gaps) = edges
        .map(|((ca, ga), (cb, gb))| (cb - ca, ga + gb))
        .unwrap_or((f64::NAN, f64::NAN));
    let timing = a.uncertainty_s + b.uncertainty_s + gaps + TRANSIT_S;
    let in_order_utilization = in_order.map(|(ia, ib)| {
        let bytes: u64 = advance(flows, ia, ib).iter().sum();
        let span = ib.t_s - ia.t_s;
        bytes as f64 / (rate_bytes * span * link.payload_share)
    });
    WindowAccounting {
        window: Some(Window {
            start_s: a.t_s,
            end_s: b.t_s,
        }),
        utilization: flow_bytes.iter().sum::<u64>() as f64 / goodput_capacity,
        link_utilization: link_bytes / capacity,
        error: (timing * rate_bytes + 2.0 * link.burst_bytes as f64) / capacity,
        flow_bytes,
        flow_goodput_bps,
        in_order_utilization,
        arrivals_lost: 0,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, VecDeque};

    use rttfair_loader::lab_arrival::Arrival;

    use super::*;
    use crate::net::arrivals::Tally;

    const RATE: u64 = 20_000_000;
    const BURST: u64 = 10_000;
    const MSS: u32 = 1448;
    const WIRE: u64 = 1514;
    const SHARE: f64 = 1448.0 / 1514.0;

    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as f64 / (1u64 << 31) as f64
        }
    }

    fn link(queue: &[QueueSample]) -> Link<'_> {
        Link {
            queue,
            rate_bit: RATE,
            burst_bytes: BURST,
            payload_share: SHARE,
        }
    }

    /// A link running flat out: qdisc samples every ~10 ms with jitter,
    /// the counter at rate x t plus up to one burst early.
    fn saturated_queue(seconds: f64, seed: u64) -> Vec<QueueSample> {
        let mut rnd = lcg(seed);
        let mut out = Vec::new();
        let mut t = 0.0;
        while t < seconds {
            let bytes = (RATE as f64 / 8.0 * t + rnd() * BURST as f64) as u64;
            out.push(QueueSample {
                t,
                stats: QdiscStats {
                    bytes,
                    ..Default::default()
                },
            });
            t += 0.008 + 0.004 * rnd();
        }
        out
    }

    fn edge(t: f64, bytes: &[Option<u64>]) -> EdgeCounts {
        EdgeCounts {
            t_s: t,
            uncertainty_s: 0.002,
            per_flow: bytes.to_vec(),
        }
    }

    #[test]
    fn one_window_for_every_flow_from_the_counters() {
        let flows = [
            FlowSpan {
                start_s: 0.0,
                total_bytes: 9_000_000,
            },
            // A late joiner: no connection at the window start.
            FlowSpan {
                start_s: 5.0,
                total_bytes: 4_000_000,
            },
            // Finished before the window end.
            FlowSpan {
                start_s: 0.0,
                total_bytes: 3_000_000,
            },
        ];
        let a = edge(3.0, &[Some(1_000_000), None, Some(2_000_000)]);
        let b = edge(13.0, &[Some(8_000_000), Some(4_000_000), None]);
        let q = saturated_queue(14.0, 1);
        let w = account(&flows, (&a, &b), Some((&a, &b)), &link(&q));
        assert_eq!(w.flow_bytes, [7_000_000, 4_000_000, 1_000_000]);
        assert_eq!(
            w.window,
            Some(Window {
                start_s: 3.0,
                end_s: 13.0
            })
        );
        assert!((w.flow_goodput_bps[0] - 5.6e6).abs() < 1e-6);
        let expect = 12_000_000.0 / (2.5e6 * 10.0 * SHARE);
        assert!((w.utilization - expect).abs() < 1e-12);
        assert_eq!(w.in_order_utilization, Some(w.utilization));
    }

    #[test]
    fn a_saturated_link_never_reads_above_capacity_plus_the_error() {
        for seed in 0..200 {
            let q = saturated_queue(12.0, seed);
            let a = 3.0 + (seed % 7) as f64 * 0.0013;
            let b = 11.9 - (seed % 5) as f64 * 0.0017;
            let w = account(&[], (&edge(a, &[]), &edge(b, &[])), None, &link(&q));
            assert!(w.error > 0.0 && w.error < 0.01, "{}", w.error);
            assert!(
                w.link_utilization <= 1.0 + w.error,
                "seed {seed}: {} > 1 + {}",
                w.link_utilization,
                w.error
            );
            assert!(w.link_utilization >= 1.0 - w.error, "seed {seed}");
        }
    }

    /// Packet by packet, two flows sharing a saturated link: the link sends
    /// one full packet per slot; a new segment lost before the link (drop-
    /// tail or random loss) is retransmitted one RTT later, ahead of new
    /// data. Returns the arrivals at the receiver, the qdisc samples, and
    /// per flow the receiver's in-order counter at `edges_s`.
    struct Trace {
        arrivals: Vec<Arrival>,
        queue: Vec<QueueSample>,
        in_order_at: Vec<Vec<u64>>,
    }

    fn trace(seconds: f64, loss: impl Fn(f64) -> f64, edges_s: &[f64], seed: u64) -> Trace {
        let mut rnd = lcg(seed);
        let slot = WIRE as f64 * 8.0 / RATE as f64;
        let rtt = 0.2;
        let first_seq = [u32::MAX - 40 * MSS, 7]; // flow 0 wraps
        let mut next = [0u32; 2]; // next new segment, per flow
        let mut got: [BTreeSet<u32>; 2] = Default::default();
        let mut rcv_nxt = [0u32; 2];
        let mut retx: VecDeque<(f64, usize, u32)> = VecDeque::new();
        let mut out = Trace {
            arrivals: Vec::new(),
            queue: Vec::new(),
            in_order_at: vec![Vec::new(); edges_s.len()],
        };
        let (mut sent, mut k, mut next_sample) = (0u64, 0u64, 0.0);
        let mut edge = 0;
        loop {
            let t = k as f64 * slot;
            if t >= seconds {
                break;
            }
            while edge < edges_s.len() && t >= edges_s[edge] {
                out.in_order_at[edge] = rcv_nxt.iter().map(|n| *n as u64 * MSS as u64).collect();
                edge += 1;
            }
            if t >= next_sample {
                out.queue.push(QueueSample {
                    t,
                    stats: QdiscStats {
                        bytes: sent,
                        ..Default::default()
                    },
                });
                next_sample = t + 0.008 + 0.004 * rnd();
            }
            let (f, seg) = match retx.front() {
                Some(&(due, f, seg)) if due <= t => {
                    retx.pop_front();
                    (f, seg)
                }
                _ => {
                    let f = (k % 2) as usize;
                    let seg = next[f];
                    next[f] += 1;
                    if rnd() < loss(t) {
                        retx.push_back((t + rtt, f, seg));
                        continue; // lost before the link: the slot is free
                    }
                    (f, seg)
                }
            };
            sent += WIRE;
            out.arrivals.push(Arrival {
                t_ns: ((t + slot) * 1e9) as u64,
                src: format!("10.10.1.{}:40000", f + 1).parse().unwrap(),
                dst: "10.20.0.1:5201".parse().unwrap(),
                seq: first_seq[f].wrapping_add(seg * MSS),
                len: MSS,
            });
            got[f].insert(seg);
            while got[f].contains(&rcv_nxt[f]) {
                rcv_nxt[f] += 1;
            }
            k += 1;
        }
        out
    }

    /// The run-time figures of a trace over `[a, b]`, the way the lab
    /// computes them.
    fn account_trace(tr: &Trace, a: f64, b: f64) -> WindowAccounting {
        let mut tally = Tally::default();
        tally.mark_edge((a * 1e9) as u64);
        tally.mark_edge((b * 1e9) as u64);
        for x in &tr.arrivals {
            tally.add(x);
        }
        let senders: Vec<std::net::Ipv4Addr> = vec![[10, 10, 1, 1].into(), [10, 10, 1, 2].into()];
        let arrivals = |k: usize, t: f64| EdgeCounts {
            t_s: t,
            uncertainty_s: 0.0,
            per_flow: senders
                .iter()
                .map(|s| Some(tally.before_edge(*s, k)))
                .collect(),
        };
        let in_order = |k: usize, t: f64| EdgeCounts {
            t_s: t,
            uncertainty_s: 0.0,
            per_flow: tr.in_order_at[k].iter().map(|b| Some(*b)).collect(),
        };
        let flows = [FlowSpan {
            start_s: 0.0,
            total_bytes: 0,
        }; 2];
        account(
            &flows,
            (&arrivals(0, a), &arrivals(1, b)),
            Some((&in_order(0, a), &in_order(1, b))),
            &link(&tr.queue),
        )
    }

    #[test]
    fn goodput_from_arrivals_stays_under_the_link_where_in_order_counters_do_not() {
        // Heavy loss in the last RTT before the window opens, none at its
        // end: the receivers hold out-of-order data behind holes when the
        // window opens (what put goodput 2.5-2.9 % above the link at 200 ms
        // RTT), and the retransmissions fill them inside the window.
        let (a, b) = (3.0, 11.0);
        let burst = |t: f64| if (2.8..3.0).contains(&t) { 0.3 } else { 0.0 };
        let tr = trace(12.0, burst, &[a, b], 1);
        let w = account_trace(&tr, a, b);
        assert!(w.error > 0.0 && w.error < 0.01, "{}", w.error);
        assert!(w.utilization <= w.link_utilization + w.error, "{w:?}");
        assert!(w.link_utilization <= 1.0 + w.error, "{w:?}");
        // Every slot carried new data or a needed retransmission.
        assert!(w.utilization >= 1.0 - w.error, "{w:?}");
        let old = w.in_order_utilization.unwrap();
        assert!(old > 1.0 + w.error, "in-order {old} vs error {}", w.error);
    }

    #[test]
    fn goodput_from_arrivals_never_reads_above_the_link() {
        // Random loss everywhere and bursts at either edge, jittered edges.
        for seed in 0..40 {
            let p = 0.005 + 0.02 * (seed % 4) as f64;
            let (a, b) = (2.0 + 0.37 * (seed % 3) as f64, 5.5 + 0.011 * seed as f64);
            let loss = move |t: f64| {
                if (a - 0.2..a).contains(&t) || (b - 0.2..b).contains(&t) {
                    0.3
                } else {
                    p
                }
            };
            let tr = trace(6.5, loss, &[a, b], seed);
            let w = account_trace(&tr, a, b);
            assert!(
                w.utilization <= w.link_utilization + w.error,
                "seed {seed}: goodput {} link {} error {}",
                w.utilization,
                w.link_utilization,
                w.error
            );
            assert!(w.utilization <= 1.0 + w.error, "seed {seed}: {w:?}");
        }
    }

    #[test]
    fn interpolates_the_link_counter_and_refuses_outside_the_samples() {
        let q: Vec<QueueSample> = [(1.0, 100u64), (1.01, 200), (1.03, 200)]
            .iter()
            .map(|&(t, bytes)| QueueSample {
                t,
                stats: QdiscStats {
                    bytes,
                    ..Default::default()
                },
            })
            .collect();
        let (c, gap) = link_counter_at(&q, 1.005).unwrap();
        assert!((c - 150.0).abs() < 1e-9 && (gap - 0.01).abs() < 1e-12);
        assert_eq!(link_counter_at(&q, 1.0), Some((100.0, 0.0)));
        assert_eq!(link_counter_at(&q, 0.5), None);
        assert_eq!(link_counter_at(&q, 2.0), None);
    }
}
