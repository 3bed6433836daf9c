//! The metrics of a repetition, computed from its raw series, and their
//! mean and worst over repetitions.

use std::collections::BTreeMap;

use rttfair_loader::fairness as metrics;

use crate::net::qstats::QueueSample;
use crate::results::accounting::WindowAccounting;
use crate::results::{FlowResult, Summary, TimeToFair, Worst};
use crate::scenario::plan::{Plan, Window};
use crate::scenario::MSS;

/// The window every figure of a repetition is computed over: the edges
/// as the run marked them on the arrival counter (which goodput,
/// utilization and Jain come from), else, for accounting that has none
/// (no window), the plan's warm-up end to run end. The one place that
/// decides it: retransmissions, drops, RTT and queueing delay use the same.
pub fn window_of(plan: &Plan, acc: &WindowAccounting) -> Window {
    acc.window.unwrap_or(plan.window)
}

/// All metrics of one repetition, from its raw series and the window's
/// accounting (which gave each flow's `mean_goodput`), every one over
/// [`window_of`]. `random_loss_at_edges`: the random-loss drop counter at
/// the window's two edges (`None`: not known).
pub fn summarize(
    plan: &Plan,
    flows: &[FlowResult],
    queue: &[QueueSample],
    acc: &WindowAccounting,
    random_loss_at_edges: Option<[u64; 2]>,
) -> Summary {
    let w = window_of(plan, acc);
    let goodputs: Vec<f64> = flows.iter().map(|f| f.mean_goodput).collect();
    let groups = GroupGoodputs::of(flows);
    let mean_all = metrics::mean(&goodputs);
    let delivered_pkts = acc.flow_bytes.iter().sum::<u64>() as f64 / MSS as f64;
    let rtts: Vec<f64> = flows
        .iter()
        .flat_map(|f| {
            f.rtt_ms
                .iter()
                // A sample stands for the interval it ends: in the window
                // when most of that interval is (the interval ends and the
                // edges are both a few µs after whole seconds).
                .filter(|(t, _)| w.holds(t - plan.interval_s / 2.0))
                .map(|(_, r)| *r)
        })
        .collect();
    let qdelays = queueing_delays_ms(plan, queue, &w);
    let (times, series) = interval_goodputs(plan, flows);
    let (stdr, group_ratio) = groups.first_vs_second();
    Summary {
        jain: metrics::jain(&goodputs),
        jain_by_group: groups.map(metrics::jain),
        goodput_mbit_by_group: groups.map(|v| metrics::mean(v) / 1e6),
        rts_by_group: groups.map(|v| metrics::rts(v.iter().sum(), v.len(), mean_all)),
        stdr,
        group_ratio,
        utilization: acc.utilization,
        link_utilization: acc.link_utilization,
        utilization_error: acc.error,
        in_order_utilization: acc.in_order_utilization,
        arrivals_lost: acc.arrivals_lost,
        window: acc.window,
        retrans_ratio: match retransmits_in(flows, &w) {
            Some(retrans) => metrics::retransmission_ratio(retrans, delivered_pkts),
            None => f64::NAN,
        },
        rtt_mean_ms: metrics::mean(&rtts),
        rtt_p95_ms: metrics::percentile(&rtts, 95.0),
        qdelay_mean_ms: metrics::mean(&qdelays),
        qdelay_p95_ms: metrics::percentile(&qdelays, 95.0),
        queue_drops: queue_drops_in(queue, &w),
        random_loss_drops: random_loss_at_edges.map(|[a, b]| b.saturating_sub(a)),
        convergence_s: metrics::convergence_time(&times, &series, 0.95),
        flow_goodput_mbit: goodputs.iter().map(|g| g / 1e6).collect(),
        time_to_fair: crate::results::time_to_fair::event(&plan.scenario).map(|e| {
            let series = flows
                .iter()
                .find(|f| f.spec.index == e.flow)
                .map_or(&[][..], |f| &f.goodput[..]);
            e.measure(series)
        }),
    }
}

/// The flows' retransmissions in `w`: each interval's count times the
/// share of it inside `w` (an interval runs from the previous one's end,
/// the first from the flow's start). `None` if a flow that retransmitted
/// at all has no per-interval counts (a folder written before they were
/// stored): the window's share cannot be known.
fn retransmits_in(flows: &[FlowResult], w: &Window) -> Option<f64> {
    let mut sum = 0.0;
    for f in flows {
        if f.retransmits_by_interval.is_empty() && f.retransmits > 0 {
            return None;
        }
        let mut from = f.spec.start_s;
        for &(to, n) in &f.retransmits_by_interval {
            sum += n as f64 * w.share_of(from, to);
            from = to;
        }
    }
    Some(sum)
}

/// Packets the bottleneck dropped in `w`: its drop counter at the end
/// edge minus at the start edge, each interpolated between the queue
/// samples around it (the first or last sample outside their span).
fn queue_drops_in(queue: &[QueueSample], w: &Window) -> u64 {
    let at = |t: f64| {
        crate::results::accounting::qdisc_counter_at(queue, t, |s| s.drops as u64).unwrap_or(0.0)
    };
    (at(w.end_s) - at(w.start_s)).max(0.0).round() as u64
}

/// Mean goodputs of the flows by group, groups in order of first appearance.
struct GroupGoodputs {
    order: Vec<String>,
    by_group: BTreeMap<String, Vec<f64>>,
}

impl GroupGoodputs {
    fn of(flows: &[FlowResult]) -> GroupGoodputs {
        let mut by_group: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for f in flows {
            if !order.contains(&f.spec.group) {
                order.push(f.spec.group.clone());
            }
            by_group
                .entry(f.spec.group.clone())
                .or_default()
                .push(f.mean_goodput);
        }
        GroupGoodputs { order, by_group }
    }

    /// A metric of each group's goodputs, by group name.
    fn map(&self, f: impl Fn(&[f64]) -> f64) -> BTreeMap<String, f64> {
        self.by_group
            .iter()
            .map(|(g, v)| (g.clone(), f(v)))
            .collect()
    }

    /// STDR and goodput ratio of the first group against the second
    /// (0 and 1 with one group).
    fn first_vs_second(&self) -> (f64, f64) {
        if self.order.len() < 2 {
            return (0.0, 1.0);
        }
        let mean = |g: &str| metrics::mean(&self.by_group[g]);
        let (a, b) = (mean(&self.order[0]), mean(&self.order[1]));
        (
            metrics::stdr(a, b),
            if b > 0.0 { a / b } else { f64::INFINITY },
        )
    }
}

/// Queueing delay at the bottleneck (backlog x 8 / rate) of every queue
/// sample in `w`, ms.
fn queueing_delays_ms(plan: &Plan, queue: &[QueueSample], w: &Window) -> Vec<f64> {
    queue
        .iter()
        .filter(|q| w.holds(q.t))
        .map(|q| q.stats.backlog_bytes as f64 * 8.0 / plan.rate_bit as f64 * 1e3)
        .collect()
}

/// For convergence: the interval end times of the longest flow and, for
/// each, the goodputs of the flows active in that interval.
fn interval_goodputs(plan: &Plan, flows: &[FlowResult]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut times = Vec::new();
    let mut series = Vec::new();
    let Some(longest) = flows.iter().max_by_key(|f| f.goodput.len()) else {
        return (times, series);
    };
    for &(t, _) in &longest.goodput {
        let active: Vec<f64> = flows
            .iter()
            .filter_map(|f| {
                f.goodput
                    .iter()
                    .find(|(tt, _)| (tt - t).abs() < plan.interval_s / 2.0)
                    .map(|x| x.1)
            })
            .collect();
        times.push(t);
        series.push(active);
    }
    (times, series)
}

/// Mean of several summaries, field by field.
pub fn mean_summary(all: &[Summary]) -> Summary {
    if all.is_empty() {
        return Summary::default();
    }
    let m = |f: &dyn Fn(&Summary) -> f64| metrics::mean(&all.iter().map(f).collect::<Vec<_>>());
    let mean_map = |f: &dyn Fn(&Summary) -> &BTreeMap<String, f64>| {
        let mut out = BTreeMap::new();
        for k in f(&all[0]).keys() {
            out.insert(
                k.clone(),
                metrics::mean(
                    &all.iter()
                        .filter_map(|s| f(s).get(k).copied())
                        .collect::<Vec<_>>(),
                ),
            );
        }
        out
    };
    let conv: Vec<f64> = all.iter().filter_map(|s| s.convergence_s).collect();
    let n_flows = all[0].flow_goodput_mbit.len();
    Summary {
        jain: m(&|s| s.jain),
        jain_by_group: mean_map(&|s| &s.jain_by_group),
        goodput_mbit_by_group: mean_map(&|s| &s.goodput_mbit_by_group),
        rts_by_group: mean_map(&|s| &s.rts_by_group),
        stdr: m(&|s| s.stdr),
        group_ratio: m(&|s| s.group_ratio),
        utilization: m(&|s| s.utilization),
        link_utilization: m(&|s| s.link_utilization),
        utilization_error: m(&|s| s.utilization_error),
        in_order_utilization: {
            let v: Vec<f64> = all.iter().filter_map(|s| s.in_order_utilization).collect();
            (v.len() == all.len()).then(|| metrics::mean(&v))
        },
        arrivals_lost: all.iter().map(|s| s.arrivals_lost).sum(),
        window: all[0].window,
        retrans_ratio: m(&|s| s.retrans_ratio),
        rtt_mean_ms: m(&|s| s.rtt_mean_ms),
        rtt_p95_ms: m(&|s| s.rtt_p95_ms),
        qdelay_mean_ms: m(&|s| s.qdelay_mean_ms),
        qdelay_p95_ms: m(&|s| s.qdelay_p95_ms),
        queue_drops: m(&|s| s.queue_drops as f64) as u64,
        random_loss_drops: {
            let v: Vec<f64> = all
                .iter()
                .filter_map(|s| s.random_loss_drops.map(|d| d as f64))
                .collect();
            (v.len() == all.len()).then(|| metrics::mean(&v) as u64)
        },
        convergence_s: (conv.len() == all.len()).then(|| metrics::mean(&conv)),
        flow_goodput_mbit: (0..n_flows)
            .map(|i| {
                metrics::mean(
                    &all.iter()
                        .filter_map(|s| s.flow_goodput_mbit.get(i).copied())
                        .collect::<Vec<_>>(),
                )
            })
            .collect(),
        time_to_fair: mean_time_to_fair(all),
    }
}

/// The repetitions' time to fair: the first's event and share, the mean
/// of their seconds, `None` seconds if any never got there (as
/// `convergence_s`); `None` without an event. One repetition: its own.
fn mean_time_to_fair(all: &[Summary]) -> Option<TimeToFair> {
    let first = all.first()?.time_to_fair?;
    let seconds: Vec<f64> = all
        .iter()
        .filter_map(|s| s.time_to_fair.and_then(|t| t.seconds))
        .collect();
    Some(TimeToFair {
        seconds: (seconds.len() == all.len()).then(|| metrics::mean(&seconds)),
        ..first
    })
}

/// The worst of the repetitions' summaries, metric by metric (see
/// [`Worst`]); `None` without repetitions. A NaN metric (no samples) is
/// skipped, so it never hides a real value; all NaN gives NaN.
pub fn worst_of(all: &[Summary]) -> Option<Worst> {
    if all.is_empty() {
        return None;
    }
    let lowest = |f: fn(&Summary) -> f64| all.iter().map(f).fold(f64::NAN, f64::min);
    let highest = |f: fn(&Summary) -> f64| all.iter().map(f).fold(f64::NAN, f64::max);
    Some(Worst {
        jain: lowest(|s| s.jain),
        utilization: lowest(|s| s.utilization),
        qdelay_mean_ms: highest(|s| s.qdelay_mean_ms),
        retrans_ratio: highest(|s| s.retrans_ratio),
        reps: all.len() as u32,
    })
}

/// A summary in one line.
pub fn one_line(s: &Summary) -> String {
    format!(
        "jain {:.3}  ratio {:.2}  util {:.1}%  retrans {:.2}%  rtt {:.1}/{:.1} ms  qdelay {:.1} ms",
        s.jain,
        s.group_ratio,
        s.utilization * 100.0,
        s.retrans_ratio * 100.0,
        s.rtt_mean_ms,
        s.rtt_p95_ms,
        s.qdelay_mean_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(jain: f64, utilization: f64, qdelay_mean_ms: f64, retrans_ratio: f64) -> Summary {
        Summary {
            jain,
            utilization,
            qdelay_mean_ms,
            retrans_ratio,
            ..Summary::default()
        }
    }

    #[test]
    fn worst_is_the_lowest_jain_and_utilization_and_the_highest_delay_and_retransmissions() {
        // Each metric's worst is in a different repetition.
        let reps = [
            rep(0.91, 0.99, 4.0, 0.002),
            rep(0.97, 0.95, 9.5, 0.001),
            rep(0.88, 0.98, 6.0, 0.010),
        ];
        assert_eq!(
            worst_of(&reps),
            Some(Worst {
                jain: 0.88,
                utilization: 0.95,
                qdelay_mean_ms: 9.5,
                retrans_ratio: 0.010,
                reps: 3,
            })
        );
    }

    #[test]
    fn one_repetition_is_its_own_worst_and_none_is_none() {
        let one = rep(0.93, 0.97, 3.25, 0.004);
        assert_eq!(
            worst_of(std::slice::from_ref(&one)),
            Some(Worst {
                jain: one.jain,
                utilization: one.utilization,
                qdelay_mean_ms: one.qdelay_mean_ms,
                retrans_ratio: one.retrans_ratio,
                reps: 1,
            })
        );
        assert_eq!(worst_of(&[]), None);
    }

    fn ttf(seconds: Option<f64>) -> Summary {
        Summary {
            time_to_fair: Some(crate::testkit::late_joiner_time_to_fair(1, seconds)),
            ..Summary::default()
        }
    }

    #[test]
    fn the_mean_time_to_fair_is_the_mean_seconds_or_never_if_any_never() {
        let m = mean_summary(&[ttf(Some(1.0)), ttf(Some(4.0))])
            .time_to_fair
            .unwrap();
        assert_eq!((m.flow, m.event_s, m.seconds), (1, 20.0, Some(2.5)));
        let m = mean_summary(&[ttf(Some(1.0)), ttf(None)])
            .time_to_fair
            .unwrap();
        assert_eq!(m.seconds, None);
        assert_eq!(mean_summary(&[ttf(None)]), ttf(None));
        assert_eq!(mean_summary(&[Summary::default()]).time_to_fair, None);
    }

    /// A repetition's summary follows the scenario's late joiner (flow 0
    /// here, listed first) through its own goodput series: the other
    /// flow's series is fair throughout and must not be the one read.
    #[test]
    fn summarize_measures_the_time_to_fair_of_the_joiner() {
        let mut scenario = crate::scenario::Scenario::from_toml(
            "name = \"lj\"\nduration_s = 40\n\
             [bottleneck]\nrate_mbit = 20\nbuffer = { bdp = 1.0, rtt_ms = 50.0 }\n\
             [[flows]]\ncca = \"qfair\"\nrtt_ms = 10\nstart_s = 20\n\
             [[flows]]\ncca = \"qfair\"\nrtt_ms = 50\n",
        )
        .unwrap();
        let half = 20e6 * 1448.0 / 1514.0 / 2.0;
        let flows_of = |plan: &Plan| -> Vec<FlowResult> {
            plan.flows
                .iter()
                .map(|spec| {
                    let joiner = spec.index == 0;
                    let goodput = (1..=40)
                        .filter(|&t| !joiner || t > 20)
                        // The joiner is at a third of its share until 23 s.
                        .map(|t| (t as f64, if joiner && t <= 23 { half / 3.0 } else { half }))
                        .collect();
                    FlowResult {
                        spec: spec.clone(),
                        goodput,
                        rtt_ms: vec![],
                        retransmits: 0,
                        retransmits_by_interval: vec![],
                        bytes_received: 0,
                        mean_goodput: half,
                        congestion: "qfair".into(),
                    }
                })
                .collect()
        };
        let time_to_fair_of = |scenario: &crate::scenario::Scenario| {
            let plan = Plan::resolve(scenario).unwrap();
            let flows = flows_of(&plan);
            summarize(&plan, &flows, &[], &WindowAccounting::default(), None).time_to_fair
        };
        let t = time_to_fair_of(&scenario).unwrap();
        assert_eq!(
            (t.flow, t.event_s, t.seconds, t.watched_s),
            (0, 20.0, Some(4.0), 20.0)
        );
        // Both flows from the start: no event, no figure.
        scenario.flows[0].start_s = 0.0;
        assert_eq!(time_to_fair_of(&scenario), None);
    }

    /// A summary.json written before the field existed still reads, as
    /// "not known" (`lab table` then recomputes it from goodput.csv).
    #[test]
    fn a_summary_without_time_to_fair_reads_as_none() {
        let mut v = serde_json::to_value(ttf(Some(3.0))).unwrap();
        v.as_object_mut().unwrap().remove("time_to_fair").unwrap();
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back.time_to_fair, None);
    }

    /// The plan of one qfair flow of 10 ms through 8 Mbit/s for
    /// `duration_s` with `warmup_s` of warm-up (0: the default).
    fn one_flow(duration_s: u32, warmup_s: u32) -> Plan {
        let warmup = if warmup_s > 0 {
            format!("warmup_s = {warmup_s}\n")
        } else {
            String::new()
        };
        let text = format!(
            "name = \"w\"\nduration_s = {duration_s}\n{warmup}\
             [bottleneck]\nrate_mbit = 8\nbuffer = {{ packets = 100 }}\n\
             [[flows]]\ncca = \"qfair\"\nrtt_ms = 10\n"
        );
        Plan::resolve(&crate::scenario::Scenario::from_toml(&text).unwrap()).unwrap()
    }

    /// A repetition of 60 s with 20 s of warm-up, marked at 20.2 and
    /// 60.3 s: Startup's losses and drops before the start edge, a tail of
    /// queue and RTT samples after the end edge (the sampler runs until
    /// the clients exit). Every figure is over the marked window.
    #[test]
    fn every_figure_is_over_the_marked_window() {
        let plan = one_flow(60, 20);
        let w = Window {
            start_s: 20.2,
            end_s: 60.3,
        };
        // 1 s intervals to 61 s: 100 retransmissions a second in the
        // warm-up, 2 a second after it; RTT 80 ms in the warm-up and
        // after the window, 20 ms in it.
        let secs: Vec<f64> = (1..=61).map(f64::from).collect();
        let flow = FlowResult {
            spec: plan.flows[0].clone(),
            goodput: secs.iter().map(|&t| (t, 7e6)).collect(),
            rtt_ms: secs
                .iter()
                .map(|&t| (t, if w.holds(t) { 20.0 } else { 80.0 }))
                .collect(),
            retransmits: 0,
            retransmits_by_interval: secs
                .iter()
                .map(|&t| (t, if t <= 20.0 { 100 } else { 2 }))
                .collect(),
            bytes_received: 0,
            mean_goodput: 7e6,
            congestion: "qfair".into(),
        };
        let delivered = 35_000_000u64; // 7 Mbit/s over ~40 s
        let acc = WindowAccounting {
            window: Some(w),
            flow_bytes: vec![delivered],
            flow_goodput_bps: vec![7e6],
            ..WindowAccounting::default()
        };
        // Queue samples every 0.1 s to 64 s: 1000 bytes backlog in the
        // window, 9000 outside; 400 drops in the warm-up, 10 at 40 s.
        let queue: Vec<QueueSample> = (0..=640)
            .map(|k| {
                let t = k as f64 / 10.0;
                let drops = (t.min(20.0) * 20.0) as u32 + if t >= 40.0 { 10 } else { 0 };
                QueueSample {
                    t,
                    stats: crate::net::qstats::QdiscStats {
                        backlog_bytes: if w.holds(t) { 1000 } else { 9000 },
                        drops,
                        ..Default::default()
                    },
                }
            })
            .collect();
        let s = summarize(&plan, &[flow], &queue, &acc, Some([7, 19]));
        // 1000 bytes at 8 Mbit/s is 1 ms.
        assert!(
            (s.qdelay_mean_ms - 1.0).abs() < 1e-9,
            "{}",
            s.qdelay_mean_ms
        );
        assert!((s.qdelay_p95_ms - 1.0).abs() < 1e-9, "{}", s.qdelay_p95_ms);
        assert_eq!((s.rtt_mean_ms, s.rtt_p95_ms), (20.0, 20.0));
        assert_eq!(s.queue_drops, 10);
        assert_eq!(s.random_loss_drops, Some(12));
        // Interval (20, 21] is 80 % in the window, (60, 61] 30 %: 2 x
        // (0.8 + 39 + 0.3) retransmissions.
        let retrans = 2.0 * (0.8 + 39.0 + 0.3);
        let pkts = delivered as f64 / MSS as f64;
        let expect = retrans / (retrans + pkts);
        assert!(
            (s.retrans_ratio - expect).abs() < 1e-12,
            "{} vs {expect}",
            s.retrans_ratio
        );
        assert_eq!(s.window, Some(w));
    }

    /// An RTT sample counts by the interval it ends: the last interval
    /// of a run ends a few µs after the marked end (both fall just after
    /// whole seconds) and is inside the window all the same; the first,
    /// which ends just after the start edge, is mostly before it.
    #[test]
    fn an_rtt_sample_counts_where_its_interval_lies() {
        let plan = one_flow(6, 1);
        let acc = WindowAccounting {
            window: Some(Window {
                start_s: 1.000_100,
                end_s: 6.000_100,
            }),
            ..WindowAccounting::default()
        };
        let flow = FlowResult {
            spec: plan.flows[0].clone(),
            goodput: vec![],
            // Ends 16 µs after each whole second: 1 s is Startup (90 ms).
            rtt_ms: (1..=6)
                .map(|k| {
                    (
                        k as f64 + 0.000_116,
                        if k == 1 { 90.0 } else { 20.0 + k as f64 },
                    )
                })
                .collect(),
            retransmits: 0,
            retransmits_by_interval: vec![],
            bytes_received: 0,
            mean_goodput: 0.0,
            congestion: "qfair".into(),
        };
        let s = summarize(&plan, &[flow], &[], &acc, None);
        // 22..26 ms: the intervals (1, 2] ... (5, 6].
        assert_eq!((s.rtt_mean_ms, s.rtt_p95_ms), (24.0, 26.0));
    }

    /// Without the per-interval counts (a folder of an older build) the
    /// window's retransmissions are not known: NaN, null in JSON, and a
    /// summary with it reads back; a flow that never retransmitted needs
    /// none.
    #[test]
    fn retransmissions_without_per_interval_counts_are_not_known() {
        let plan = one_flow(10, 0);
        let flow = |retransmits| FlowResult {
            spec: plan.flows[0].clone(),
            goodput: vec![],
            rtt_ms: vec![],
            retransmits,
            retransmits_by_interval: vec![],
            bytes_received: 0,
            mean_goodput: 0.0,
            congestion: "qfair".into(),
        };
        let acc = WindowAccounting::default();
        let s = summarize(&plan, &[flow(3)], &[], &acc, None);
        assert!(s.retrans_ratio.is_nan());
        assert_eq!(s.random_loss_drops, None);
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"retrans_ratio\":null"), "{text}");
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert!(back.retrans_ratio.is_nan());
        let s = summarize(&plan, &[flow(0)], &[], &acc, None);
        assert_eq!(s.retrans_ratio, 0.0);
    }

    #[test]
    fn a_metric_without_samples_does_not_hide_the_others() {
        let w = worst_of(&[rep(0.9, 0.9, f64::NAN, 0.0), rep(0.8, 0.95, 2.0, 0.0)]).unwrap();
        assert_eq!((w.jain, w.qdelay_mean_ms), (0.8, 2.0));
    }
}
