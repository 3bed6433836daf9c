//! Every metric family the daemon exports, as data: one table ([`FAMILIES`])
//! of name, help, unit, type and how to read the value from a flow or from
//! the scrape's aggregates. Registration order, encoding ([`crate::encode`])
//! and the reference in `docs/metrics.md` ([`reference`]) all come from it,
//! so a new family is one entry and the docs cannot drift (a unit test
//! compares the file with the generated text).

use rttfair_loader::export::{Counters, Flow};

use crate::process::Process;
use crate::snapshot::{CcaRates, FlowSample, Snapshot};

/// A family's OpenMetrics type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Only goes up (while the process and the flow live).
    Counter,
    Gauge,
    /// A histogram of what is there now (OpenMetrics `gaugehistogram`:
    /// `_bucket`, `_gcount`, `_gsum`), whose buckets may go down. The
    /// per-CCA distributions are of the current flows, not of events, so a
    /// `histogram`, whose buckets and `_count` are counters, would tell
    /// `rate()` that a flow ending is a counter reset. prometheus-client
    /// 0.22 has no such type: [`crate::encode`] writes these by hand.
    GaugeHistogram,
}

impl Type {
    /// The name in `# TYPE` lines and in the reference.
    pub fn name(self) -> &'static str {
        match self {
            Type::Counter => "counter",
            Type::Gauge => "gauge",
            Type::GaugeHistogram => "gaugehistogram",
        }
    }
}

/// Which flows a per-flow family covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Covers {
    /// Every exported flow, project CCAs' and kernel CCAs' alike.
    All,
    /// Flows with a BBR model: the project CCAs' and native bbr's.
    Model,
    /// The project CCAs' own exports only.
    Project,
}

impl Covers {
    /// Whether the family has a series for `s`.
    pub fn includes(self, s: &FlowSample) -> bool {
        match self {
            Covers::All => true,
            Covers::Model => s.has_model(),
            Covers::Project => s.is_project(),
        }
    }

    fn doc(self) -> &'static str {
        match self {
            Covers::All => "every flow",
            Covers::Model => "flows with a BBR model",
            Covers::Project => "project CCAs' flows",
        }
    }
}

/// Where a family's samples come from.
pub enum Source {
    /// One series per flow: 1, with the 4-tuple, destination group and
    /// netns as labels (joined to the other families on `flow` in PromQL).
    FlowInfo,
    /// One series per covered flow for which `value` gives a number.
    Flow(Covers, fn(&FlowSample) -> Option<f64>),
    /// One series per covered flow with an extra label `label` holding the
    /// flow's current state, value 1 (not a state set: one line per flow).
    FlowState(Covers, &'static str, fn(&Flow) -> Option<&'static str>),
    /// Per project CCA, from its host-wide counters.
    Counters(fn(&Counters) -> f64),
    /// Per project CCA: 1 if this installation registered it.
    Loaded,
    /// Per CCA, a histogram over every flow read (capped or not) for which
    /// `value` gives a number, with these bucket upper bounds (+Inf added).
    Histogram(fn(&FlowSample) -> Option<f64>, &'static [f64]),
    /// Per CCA, over its active flows (and how its groups were folded).
    PerCca(fn(&CcaRates) -> f64),
    /// Per CCA and destination group, over the throughputs of its active
    /// flows: the CCA's `max_groups` fastest groups and `group="other"`.
    PerGroup(fn(&[f64]) -> f64),
    /// One unlabelled value for the whole host.
    Host(fn(&Snapshot) -> f64),
    /// One unlabelled value about the daemon's own process, read from
    /// /proc/self at each encode (the standard `process_*` names); no
    /// series if /proc cannot say.
    Process(fn(&Process) -> Option<f64>),
    /// `rttfair_build_info`: 1, labelled with what this daemon was built
    /// from (version, git commit, BPF ABI).
    Build,
}

impl Source {
    /// The labels its series carry, for the reference.
    fn labels(&self) -> String {
        match self {
            Source::FlowInfo => {
                "cca, flow, local_addr, local_port, peer_addr, peer_port, group, netns".into()
            }
            Source::Flow(..) => "cca, flow".into(),
            Source::FlowState(_, label, _) => format!("cca, flow, {label}"),
            Source::Counters(_) | Source::Loaded | Source::PerCca(_) => "cca".into(),
            Source::Histogram(..) => "cca, le".into(),
            Source::PerGroup(_) => "cca, group".into(),
            Source::Host(_) | Source::Process(_) => String::new(),
            Source::Build => "version, commit, abi".into(),
        }
    }

    /// The series it has, for the reference.
    fn scope(&self) -> String {
        match self {
            Source::FlowInfo => "every flow".into(),
            Source::Flow(c, _) | Source::FlowState(c, _, _) => c.doc().into(),
            Source::Counters(_) | Source::Loaded => "per project CCA".into(),
            Source::PerCca(_) => "per CCA with active flows".into(),
            Source::Histogram(_, b) => format!("per CCA with flows, {} buckets", b.len() + 1),
            Source::PerGroup(_) => {
                "per CCA and destination group, at most `max_groups` + 1 per CCA".into()
            }
            Source::Host(_) => "host".into(),
            Source::Process(_) | Source::Build => "the daemon".into(),
        }
    }
}

/// One metric family.
pub struct Family {
    /// The family's name as exposed (counters get `_total` appended by the
    /// encoder). The unit is part of the name, Prometheus style.
    pub name: &'static str,
    pub help: &'static str,
    /// The unit, for the reference ("" for counts and ratios without one).
    pub unit: &'static str,
    pub ty: Type,
    pub source: Source,
}

use Type::{Counter, Gauge, GaugeHistogram};

/// RTT buckets, seconds: 100 us (veth) to 5 s (satellite, bufferbloat).
pub static RTT_BUCKETS: &[f64] = &[
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
];
/// Rate buckets, bytes/s: 1 kB/s to 10 GB/s (80 Gbit/s), ~3 per decade.
pub static RATE_BUCKETS: &[f64] = &[
    1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9, 3e9, 1e10,
];
/// Window buckets, segments: powers of 4 from 1 to 65536.
pub static CWND_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0,
];

fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// Every family, in exposition order.
#[rustfmt::skip]
pub static FAMILIES: &[Family] = &[
    // Per flow: the BBR core every project CCA shares.
    Family { name: "rttfair_flow_info", help: "Identity of an exported flow (always 1): 4-tuple, destination group and network namespace inode, keyed by flow", unit: "", ty: Gauge, source: Source::FlowInfo },
    Family { name: "rttfair_flow_btlbw_bytes_per_second", help: "BBR bottleneck bandwidth estimate of the flow: the windowed max delivery rate (the policed rate while policed); for bbr3 min(bw_hi, bw_lo), whose max is rttfair_bbr3_bw_hi_bytes_per_second", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::Model, |s| Some(s.flow.btlbw_bps as f64)) },
    Family { name: "rttfair_flow_min_rtt_seconds", help: "Minimum RTT of the flow: BBR's RTprop estimate for rttfair's CCAs and native bbr, the kernel's windowed min RTT for other kernel CCAs", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(secs(s.flow.min_rtt))) },
    Family { name: "rttfair_flow_last_rtt_seconds", help: "RTT of the flow's latest rate sample", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| Some(secs(s.flow.last_rtt))) },
    Family { name: "rttfair_flow_smoothed_rtt_seconds", help: "Kernel smoothed RTT (srtt) of the flow", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(secs(s.flow.srtt))) },
    Family { name: "rttfair_flow_cwnd_segments", help: "Congestion window of the flow, in segments", unit: "segments", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(s.flow.cwnd as f64)) },
    Family { name: "rttfair_flow_pacing_rate_bytes_per_second", help: "Pacing rate of the flow", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(s.flow.pacing_rate_bps as f64)) },
    Family { name: "rttfair_flow_pacing_gain_ratio", help: "BBR pacing gain in force (1 = BtlBw); no series while none is (qfair in cruise: its Eq. 9 sets the rate)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Model, |s| s.flow.pacing_gain) },
    Family { name: "rttfair_flow_cwnd_gain_ratio", help: "BBR cwnd gain in force (x BDP); no series while none is (qfair in cruise: its Eq. 1 sets the window)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Model, |s| s.flow.cwnd_gain) },
    Family { name: "rttfair_flow_mode", help: "BBR state of the flow: the series with the current mode label is 1", unit: "", ty: Gauge, source: Source::FlowState(Covers::Model, "mode", |f| Some(f.mode.name())) },
    Family { name: "rttfair_flow_delivered_bytes", help: "Bytes the flow delivered (acknowledged)", unit: "bytes", ty: Counter, source: Source::Flow(Covers::All, |s| Some(s.flow.delivered_bytes as f64)) },
    Family { name: "rttfair_flow_retransmitted_bytes", help: "Bytes the flow retransmitted", unit: "bytes", ty: Counter, source: Source::Flow(Covers::All, |s| Some(s.flow.retrans_bytes as f64)) },
    Family { name: "rttfair_flow_probe_rtt_entries", help: "ProbeRTT entries of the flow", unit: "", ty: Counter, source: Source::Flow(Covers::Project, |s| Some(s.flow.probe_rtt_entries as f64)) },
    Family { name: "rttfair_flow_throughput_bytes_per_second", help: "Delivery rate of the flow between its two latest exports seen by scrapes", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(s.rate)) },
    // Per flow: FaiRTT.
    Family { name: "rttfair_fairtt_alpha_seconds", help: "FaiRTT RTT fairness threshold alpha_t (Eq. 5)", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.fairtt().map(|f| secs(f.alpha))) },
    Family { name: "rttfair_fairtt_bdp_coefficient_ratio", help: "FaiRTT BDP coefficient minRTT*gamma/lastRTT applied (1 = none)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.fairtt().map(|f| f.coefficient)) },
    Family { name: "rttfair_fairtt_wfcount", help: "FaiRTT Wfcount: distinct minRTT classes the flow saw active", unit: "", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.fairtt().map(|f| f.wfcount as f64)) },
    Family { name: "rttfair_fairtt_adjust_active", help: "1 while FaiRTT's BDP reduction applies to the flow", unit: "", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.fairtt().map(|f| f.active as u8 as f64)) },
    // Per flow: Ad-BBR.
    Family { name: "rttfair_adbbr_nrtt_seconds", help: "Ad-BBR reference RTT nRTT (Alg. 1)", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.adbbr().map(|a| secs(a.nrtt))) },
    Family { name: "rttfair_adbbr_pacing_factor_ratio", help: "Ad-BBR pacing factor applied (1 = none; 1/beta or gamma)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.adbbr().map(|a| a.factor)) },
    Family { name: "rttfair_adbbr_rtt_stddev_seconds", help: "Ad-BBR standard deviation of the RTT history (Alg. 3)", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.adbbr().map(|a| secs(a.rtt_std))) },
    Family { name: "rttfair_adbbr_regime", help: "Ad-BBR rate regulation regime (Alg. 2): the series with the current regime label is 1", unit: "", ty: Gauge, source: Source::FlowState(Covers::Project, "regime", |f| f.adbbr().map(|a| a.regime.name())) },
    // Per flow: qfair.
    Family { name: "rttfair_qfair_alpha_packets", help: "qfair backlog target alpha of the flow", unit: "packets", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.alpha_pkts)) },
    Family { name: "rttfair_qfair_backlog_packets", help: "qfair estimate of the flow's own backlog at the bottleneck (a^ = x^ q^)", unit: "packets", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.backlog_pkts)) },
    Family { name: "rttfair_qfair_offset_packets", help: "qfair integral term o of Eq. 8b, signed, at most qfair.o_cap x alpha in magnitude (default alpha/2) (w = g x^ R^ + alpha + o)", unit: "packets", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.offset_pkts)) },
    Family { name: "rttfair_qfair_qdelay_seconds", help: "qfair queueing delay estimate q^ = D - R^", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| secs(q.qdelay))) },
    Family { name: "rttfair_qfair_standing_rtt_seconds", help: "qfair standing RTT D (mean of 8 ms bucket minima)", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| secs(q.standing_rtt))) },
    Family { name: "rttfair_qfair_rate_bytes_per_second", help: "qfair smoothed per-round sending rate x^ ((delivered + lost) per round)", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.rate_bps as f64)) },
    Family { name: "rttfair_qfair_gain_ratio", help: "qfair rate correction g of the last round (1 = none)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.gain)) },
    Family { name: "rttfair_qfair_target_cwnd_segments", help: "qfair target window w = g x^ R^ + alpha + o", unit: "segments", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.target_cwnd as f64)) },
    Family { name: "rttfair_qfair_competitive", help: "1 while the qfair flow is in competitive mode (a queue it does not own)", unit: "", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.competitive as u8 as f64)) },
    Family { name: "rttfair_qfair_pacing_floor", help: "1 when the qfair window with its burst room is below 6 packets, so pacing rather than cwnd limits the flow", unit: "", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.pacing_floor as u8 as f64)) },
    Family { name: "rttfair_qfair_drains_ok", help: "qfair synchronised drains that emptied the queue", unit: "", ty: Counter, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.drains_ok as f64)) },
    Family { name: "rttfair_qfair_drain_min_rtt_seconds", help: "qfair lowest RTT of the flow's last judged drain, m, which the drain verdict and Eq. 10 compare with R^ (no series before the first drain)", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().and_then(|q| q.drain_min_rtt).map(secs)) },
    Family { name: "rttfair_qfair_noise_seconds", help: "qfair delay noise nu of the flow's own path: how far its bucket estimator reads above R^ with the queue empty (from emptied drains), taken out of q^", unit: "seconds", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| secs(q.noise))) },
    Family { name: "rttfair_qfair_drains_failed", help: "qfair drains that did not empty the queue (a queue qfair does not own)", unit: "", ty: Counter, source: Source::Flow(Covers::Project, |s| s.flow.qfair().map(|q| q.drains_failed as f64)) },
    // Per flow: bbr3 (unset bounds have no series).
    Family { name: "rttfair_bbr3_phase", help: "BBRv3 phase of the flow (startup, drain, down, cruise, refill, up, probe_rtt): the series with the current phase label is 1", unit: "", ty: Gauge, source: Source::FlowState(Covers::Project, "phase", |f| f.bbr3().map(|b| b.phase.name())) },
    Family { name: "rttfair_bbr3_bw_hi_bytes_per_second", help: "BBRv3 long-term max delivery rate bw_hi (last 1-2 ProbeBW cycles)", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.bw_hi_bps as f64)) },
    Family { name: "rttfair_bbr3_bw_lo_bytes_per_second", help: "BBRv3 short-term lower bound bw_lo (set by loss outside probes)", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().and_then(|b| b.bw_lo_bps).map(|v| v as f64)) },
    Family { name: "rttfair_bbr3_inflight_hi_segments", help: "BBRv3 upper bound inflight_hi (where a probe's loss rate passed 2 % or CE ratio 50 %)", unit: "segments", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().and_then(|b| b.inflight_hi).map(|v| v as f64)) },
    Family { name: "rttfair_bbr3_inflight_lo_segments", help: "BBRv3 short-term lower bound inflight_lo", unit: "segments", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().and_then(|b| b.inflight_lo).map(|v| v as f64)) },
    Family { name: "rttfair_bbr3_round_loss_ratio", help: "BBRv3 loss rate of the flow's last round trip, lost / (lost + delivered)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.round_loss)) },
    Family { name: "rttfair_bbr3_ecn_alpha_ratio", help: "BBRv3 EWMA of the CE-marked fraction (1 until ECN is in use)", unit: "ratio", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.ecn_alpha)) },
    Family { name: "rttfair_bbr3_extra_acked_segments", help: "BBRv3 ACK-aggregation cwnd allowance extra_acked", unit: "segments", ty: Gauge, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.extra_acked as f64)) },
    Family { name: "rttfair_bbr3_inflight_too_high", help: "BBRv3 bandwidth probes ended by the loss/ECN bound (inflight_hi set there)", unit: "", ty: Counter, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.too_high_events as f64)) },
    Family { name: "rttfair_bbr3_lower_bound_cuts", help: "BBRv3 loss rounds outside probes that cut bw_lo and inflight_lo", unit: "", ty: Counter, source: Source::Flow(Covers::Project, |s| s.flow.bbr3().map(|b| b.lo_cuts as f64)) },
    // Per CCA: distributions over the flows there now, whatever the
    // per_flow setting (gauge histograms: they go down when flows end).
    Family { name: "rttfair_cca_min_rtt_seconds", help: "Distribution of the flows' minimum RTT, per CCA", unit: "seconds", ty: GaugeHistogram, source: Source::Histogram(|s| Some(secs(s.flow.min_rtt)), RTT_BUCKETS) },
    Family { name: "rttfair_cca_smoothed_rtt_seconds", help: "Distribution of the flows' kernel smoothed RTT (srtt), per CCA", unit: "seconds", ty: GaugeHistogram, source: Source::Histogram(|s| Some(secs(s.flow.srtt)), RTT_BUCKETS) },
    Family { name: "rttfair_cca_throughput_bytes_per_second", help: "Distribution of the flows' delivery rate between their two latest exports, per CCA", unit: "bytes/s", ty: GaugeHistogram, source: Source::Histogram(|s| Some(s.rate), RATE_BUCKETS) },
    Family { name: "rttfair_cca_cwnd_segments", help: "Distribution of the flows' congestion window, per CCA", unit: "segments", ty: GaugeHistogram, source: Source::Histogram(|s| Some(s.flow.cwnd as f64), CWND_BUCKETS) },
    // Host level.
    Family { name: "rttfair_build_info", help: "What this daemon was built from (always 1): crate version, git commit, BPF ABI version of its maps", unit: "", ty: Gauge, source: Source::Build },
    Family { name: "rttfair_cca_loaded", help: "1 if the CCA is registered by this installation", unit: "", ty: Gauge, source: Source::Loaded },
    Family { name: "rttfair_sockets", help: "Sockets currently using the CCA (init minus release)", unit: "", ty: Gauge, source: Source::Counters(|c| c.sockets() as f64) },
    Family { name: "rttfair_flows_started", help: "Flows the CCA initialised", unit: "", ty: Counter, source: Source::Counters(|c| c.flows_started as f64) },
    Family { name: "rttfair_export_failed", help: "Flows left without a per-flow export entry (map full, or bbr3's per-flow storage, which holds the flow id, not allocated); they are still controlled", unit: "", ty: Counter, source: Source::Counters(|c| c.export_failed as f64) },
    Family { name: "rttfair_probe_rtt_entries", help: "ProbeRTT entries, all flows of the CCA", unit: "", ty: Counter, source: Source::Counters(|c| c.probe_rtt_entries as f64) },
    Family { name: "rttfair_flow_map_capacity", help: "Capacity of the per-flow export map", unit: "entries", ty: Gauge, source: Source::Host(|s| s.capacity as f64) },
    Family { name: "rttfair_flows_read", help: "Flows read this refresh (all feed the aggregates)", unit: "", ty: Gauge, source: Source::Host(|s| s.flows.len() as f64) },
    Family { name: "rttfair_flows_exported", help: "Flows with per-flow series this refresh (per_flow setting)", unit: "", ty: Gauge, source: Source::Host(|s| s.per_flow as f64) },
    // A gauge only: a sum over refreshes grew with every scrape, so its
    // rate() scaled with the number of scrapers (an HA pair doubled it).
    Family { name: "rttfair_flows_omitted_last_scrape", help: "Flows denied per-flow series by the cap (per_flow top:N, max_flows) in this refresh; 0 while per_flow is off", unit: "", ty: Gauge, source: Source::Host(|s| s.omitted as f64) },
    Family { name: "rttfair_native_flows_readable", help: "1 if connections on kernel CCAs (cubic, native bbr) could be read this scrape", unit: "", ty: Gauge, source: Source::Host(|s| s.native_readable.is_ok() as u8 as f64) },
    Family { name: "rttfair_ready", help: "1 if the daemon is ready (what /readyz answers): the loaded CCAs are of this build's ABI and the kernel let it open their maps; 0 on an ABI mismatch (rttfairctl swap) or a refused open", unit: "", ty: Gauge, source: Source::Host(|s| s.ready as u8 as f64) },
    Family { name: "rttfair_maps_present", help: "1 if the pinned maps exist (some CCA was loaded)", unit: "", ty: Gauge, source: Source::Host(|s| s.maps_present as u8 as f64) },
    Family { name: "rttfair_previous_scrape_duration_seconds", help: "Time the previous refresh spent reading the maps", unit: "seconds", ty: Gauge, source: Source::Host(|s| s.previous_scrape_seconds) },
    // Fairness: of per-flow throughput, over the flows with a sample.
    Family { name: "rttfair_jain_index_ratio", help: "Jain's fairness index of per-flow throughput over the CCA's active flows (1 = fair)", unit: "ratio", ty: Gauge, source: Source::PerCca(|c| rttfair_loader::fairness::jain(&c.rates)) },
    Family { name: "rttfair_group_active_flows", help: "Flows with a throughput sample, per CCA and destination group", unit: "", ty: Gauge, source: Source::PerGroup(|v| v.len() as f64) },
    Family { name: "rttfair_group_throughput_bytes_per_second", help: "Summed delivery rate of the group's active flows", unit: "bytes/s", ty: Gauge, source: Source::PerGroup(|v| v.iter().sum()) },
    Family { name: "rttfair_group_jain_index_ratio", help: "Jain's index of per-flow throughput within a destination group", unit: "ratio", ty: Gauge, source: Source::PerGroup(rttfair_loader::fairness::jain) },
    Family { name: "rttfair_active_flows", help: "Flows with a throughput sample, per CCA", unit: "", ty: Gauge, source: Source::PerCca(|c| c.rates.len() as f64) },
    // The daemon's own process, the names every exporter uses.
    Family { name: "process_cpu_seconds", help: "User and system CPU time the daemon spent", unit: "seconds", ty: Counter, source: Source::Process(|p| p.cpu_seconds) },
    Family { name: "process_resident_memory_bytes", help: "Resident memory of the daemon", unit: "bytes", ty: Gauge, source: Source::Process(|p| p.resident_bytes) },
    Family { name: "process_open_fds", help: "File descriptors the daemon holds open", unit: "", ty: Gauge, source: Source::Process(|p| p.open_fds) },
    Family { name: "process_start_time_seconds", help: "When the daemon started, seconds since the Unix epoch", unit: "seconds", ty: Gauge, source: Source::Process(|p| p.start_time_seconds) },
    Family { name: "rttfair_groups_folded", help: "Destination groups of the CCA beyond its max_groups fastest, summed into group=\"other\" this refresh", unit: "", ty: Gauge, source: Source::PerCca(|c| c.groups_folded as f64) },
];

/// The name a family's samples carry (counters end in `_total`).
pub fn exposed_name(f: &Family) -> String {
    match f.ty {
        Type::Counter => format!("{}_total", f.name),
        _ => f.name.to_string(),
    }
}

/// The metrics reference, `docs/metrics.md`, generated from [`FAMILIES`].
pub fn reference() -> String {
    use std::fmt::Write;
    let mut s = String::from(
        "# Metrics reference\n\n\
         Generated from the daemon's family table (`daemon/src/families.rs`);\n\
         do not edit by hand: `RTTFAIR_BLESS=1 cargo test -p rttfair-daemon\n\
         metrics_reference` rewrites it, and the same test fails while it is\n\
         stale.\n\n\
         By default (`per_flow = \"off\"`) the daemon exports per-CCA\n\
         histograms and per-group aggregates over every flow, and no per-flow\n\
         series. `per_flow = \"top:N\"` adds per-flow series for the N flows\n\
         with the highest throughput (ties: lowest id), `per_flow = \"all\"`\n\
         for every flow up to `max_flows`; flows the cap leaves out are\n\
         counted in the gauge `rttfair_flows_omitted_last_scrape`.\n\n\
         The per-CCA distributions (`rttfair_cca_*`) are OpenMetrics gauge\n\
         histograms (`_bucket`, `_gcount`, `_gsum`): they describe the flows\n\
         there now, so a bucket goes down when a flow ends or moves, which a\n\
         `histogram`'s counters must not. Use them as they are or with\n\
         `histogram_quantile()`, never under `rate()`. Scraped as classic\n\
         text (no OpenMetrics `Accept`), they are untyped.\n\n\
         Series per host: about 20 (host, build and `process_*`) + 90 per CCA\n\
         with flows (4 gauge histograms of 10 to 16 buckets plus `_gsum` and\n\
         `_gcount`, counters) + 3 per CCA and\n\
         destination group kept. Per CCA, only the `max_groups` groups with\n\
         the highest summed throughput (default 20) keep their own group\n\
         series; the others are summed into `group=\"other\"` and counted in\n\
         `rttfair_groups_folded`. So by default a host exports at most\n\
         20 + (90 + 3 x (`max_groups` + 1)) per CCA with flows, about 0.8k\n\
         with 5 CCAs, whatever the number of flows and of distinct peer\n\
         prefixes. Each flow with per-flow series adds 8 (a kernel CCA's) to\n\
         26 (qfair's): info, core, mode and its CCA's own families; at 10k\n\
         flows ~180k with `per_flow = \"all\"`, ~1.8k with\n\
         `per_flow = \"top:100\"`.\n\n\
         Per-flow series carry only `cca` and `flow`; the 4-tuple, destination\n\
         group and network namespace are labels of `rttfair_flow_info`, to be\n\
         joined in PromQL on the scrape target and the flow (flow ids repeat\n\
         across hosts):\n\n\
         ```\n\
         rttfair_flow_min_rtt_seconds * on(instance, flow) group_left(peer_addr) rttfair_flow_info\n\
         ```\n\n\
         Connections on kernel CCAs (when `native_flows` is set) have `flow`\n\
         labels `sk<cookie>` and their CCA's name as `cca`.\n\n\
         | name | type | unit | labels | series | help |\n\
         |---|---|---|---|---|---|\n",
    );
    for f in FAMILIES {
        let ty = f.ty.name();
        let _ = writeln!(
            s,
            "| `{}` | {ty} | {} | {} | {} | {} |",
            exposed_name(f),
            f.unit,
            f.source.labels(),
            f.source.scope(),
            f.help
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/metrics.md is the generated reference; set RTTFAIR_BLESS=1 to
    /// rewrite it after changing the table.
    #[test]
    fn metrics_reference_is_up_to_date() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md");
        let want = reference();
        if std::env::var_os("RTTFAIR_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/metrics.md is stale: run RTTFAIR_BLESS=1 cargo test -p rttfair-daemon metrics_reference"
        );
    }

    /// A host value is what this refresh read, so it is a gauge: a sum
    /// kept over refreshes (the old `rttfair_flows_omitted_total`) grows
    /// with every scrape, and its rate() with the number of scrapers.
    #[test]
    fn host_families_are_gauges_not_sums_over_scrapes() {
        for f in FAMILIES {
            if matches!(f.source, Source::Host(_)) {
                assert_eq!(f.ty, Type::Gauge, "{}", f.name);
            }
        }
    }

    /// The per-CCA distributions are of the flows there now: typed as
    /// gauge histograms, and only they are.
    #[test]
    fn distributions_are_gauge_histograms() {
        for f in FAMILIES {
            assert_eq!(
                matches!(f.source, Source::Histogram(..)),
                f.ty == Type::GaugeHistogram,
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn family_names_are_unique() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
    }
}
