//! What a run produces, as types: per-flow series, per-repetition results,
//! the summary metrics, a whole run and a sweep point. The bottom of the
//! lab's result side (no network code), whose other modules are its
//! children:
//! - [`accounting`]: goodput and utilization over one window from
//!   counters that cannot exceed the link, with their measurement error.
//! - [`scoreboard`]: which bytes of a connection arrived, so each segment
//!   says how much goodput it adds (retransmissions and holes handled).
//! - [`summary`]: metrics of a repetition from its series, and their mean.
//! - [`time_to_fair`]: how long a late joiner (or a flow whose path RTT
//!   changes) takes to hold its fair share.
//! - [`drains`]: a row per judged qfair drain (R^ around it, its minimum m,
//!   the verdict, the mode), from the bpf samples: `drains.csv`.
//! - [`files`]: every CSV/JSON of the results folder.
//! - [`plot`]: PNG plots of a repetition and of a sweep.
//! - [`sweep_plots`]: which plots a sweep folder has: its metrics as data
//!   (title, colour scale, value, cell label), heatmaps or lines.
//! - [`gridtable`]: grid results as Markdown tables, one per metric (mean,
//!   Jain's worst repetition in brackets), for sweeps, fairness-grid and
//!   a sweep folder's compare.md (CCAs side by side).
//! - [`runtable`]: run folders of one scenario side by side in one
//!   Markdown table, repetitions pooled, mean and worst (`lab table`).
//! - [`provenance`]: provenance.json, what a folder was produced with.

pub(crate) mod accounting;
pub(crate) mod drains;
pub(crate) mod files;
pub mod gridtable;
pub(crate) mod plot;
pub mod provenance;
pub mod runtable;
pub(crate) mod scoreboard;
pub mod summary;
pub(crate) mod sweep_plots;
pub(crate) mod time_to_fair;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rttfair_loader::Flow;
use serde::{Deserialize, Serialize};

use crate::net::qstats::QueueSample;
use crate::net::selfcheck::RttCheck;
use crate::results::provenance::RunProvenance;
use crate::scenario::plan::Window;
use crate::scenario::{FlowSpec, Scenario};

/// One BPF export sample of a flow: a row of `bpf.csv`, whose columns are
/// these fields, in this order. A projection of the loader's typed
/// [`Flow`] (units in the names); the fields of a CCA other than the flow's
/// are zero.
#[derive(Debug, Clone, Serialize)]
pub struct BpfSample {
    pub t: f64,
    pub flow: usize,
    pub mode: &'static str,
    pub btlbw_mbit: f64,
    pub min_rtt_ms: f64,
    pub last_rtt_ms: f64,
    pub cwnd: u32,
    pub pacing_mbit: f64,
    pub probe_rtt_entries: u32,
    pub fairtt_alpha_ms: f64,
    pub fairtt_coef: f64,
    pub fairtt_wfcount: u16,
    #[serde(serialize_with = "zero_one")]
    pub fairtt_active: bool,
    pub adbbr_nrtt_ms: f64,
    pub adbbr_regime: &'static str,
    pub adbbr_factor: f64,
    pub adbbr_rtt_std_ms: f64,
    pub qfair_alpha_pkts: f64,
    pub qfair_backlog_pkts: f64,
    /// o, Eq. 8b's integral term (signed).
    pub qfair_offset_pkts: f64,
    pub qfair_qdelay_ms: f64,
    pub qfair_standing_rtt_ms: f64,
    /// x^, the smoothed per-round delivery rate.
    pub qfair_xhat_mbit: f64,
    pub qfair_gain: f64,
    pub qfair_target_cwnd: u32,
    #[serde(serialize_with = "zero_one")]
    pub qfair_competitive: bool,
    pub qfair_drains_ok: u32,
    pub qfair_drains_failed: u32,
    /// m, the lowest RTT of the flow's last judged drain (0: none yet), what
    /// the drain verdict and Eq. 10 compared with R^ (`min_rtt_ms`);
    /// [`crate::results::drains`] turns the samples into a row per drain.
    pub qfair_drain_min_ms: f64,
    /// nu, the flow's own delay noise, taken out of its queue estimate.
    pub qfair_noise_ms: f64,
    #[serde(serialize_with = "zero_one")]
    pub qfair_pacing_floor: bool,
    /// bbr3's ProbeBW phase ("cruise", ...; "" for other CCAs): with the
    /// bounds below, the time series that shows where a bbr3 flow's rate
    /// goes (issue 16: phase time shares, when the bounds are cut).
    pub bbr3_phase: &'static str,
    pub bbr3_bw_hi_mbit: f64,
    /// The short-term bounds; -1 while unset (v3's "infinity").
    pub bbr3_bw_lo_mbit: f64,
    pub bbr3_inflight_hi: i64,
    pub bbr3_inflight_lo: i64,
    /// The last round's loss rate, lost / (lost + delivered).
    pub bbr3_round_loss: f64,
    /// Probes ended by the loss/ECN bound so far (Eq. 1).
    pub bbr3_too_high_events: u32,
    /// Loss rounds that cut bw_lo / inflight_lo so far (Eq. 2).
    pub bbr3_lo_cuts: u32,
}

impl BpfSample {
    /// The sample of `f` taken `t` seconds into the run, as lab flow `flow`.
    pub fn project(t: f64, flow: usize, f: &Flow) -> BpfSample {
        let ft = f.fairtt().copied().unwrap_or_default();
        let ab = f.adbbr().copied().unwrap_or_default();
        let q = f.qfair().copied().unwrap_or_default();
        let b3 = f.bbr3().copied();
        let ms = |d: Duration| round(d.as_secs_f64() * 1e3, 3);
        let mbit = |bps: u64| round(bps as f64 * 8.0 / 1e6, 3);
        BpfSample {
            t: round(t, 2),
            flow,
            mode: f.mode.name(),
            btlbw_mbit: mbit(f.btlbw_bps),
            min_rtt_ms: ms(f.min_rtt),
            last_rtt_ms: ms(f.last_rtt),
            cwnd: f.cwnd,
            pacing_mbit: mbit(f.pacing_rate_bps),
            probe_rtt_entries: f.probe_rtt_entries,
            fairtt_alpha_ms: ms(ft.alpha),
            fairtt_coef: round(ft.coefficient, 4),
            fairtt_wfcount: ft.wfcount,
            fairtt_active: ft.active,
            adbbr_nrtt_ms: ms(ab.nrtt),
            adbbr_regime: ab.regime.name(),
            adbbr_factor: round(ab.factor, 4),
            adbbr_rtt_std_ms: ms(ab.rtt_std),
            qfair_alpha_pkts: round(q.alpha_pkts, 3),
            qfair_backlog_pkts: round(q.backlog_pkts, 3),
            qfair_offset_pkts: round(q.offset_pkts, 3),
            qfair_qdelay_ms: ms(q.qdelay),
            qfair_standing_rtt_ms: ms(q.standing_rtt),
            qfair_xhat_mbit: mbit(q.rate_bps),
            qfair_gain: round(q.gain, 4),
            qfair_target_cwnd: q.target_cwnd,
            qfair_competitive: q.competitive,
            qfair_drains_ok: q.drains_ok,
            qfair_drains_failed: q.drains_failed,
            qfair_drain_min_ms: q.drain_min_rtt.map_or(0.0, ms),
            qfair_noise_ms: ms(q.noise),
            qfair_pacing_floor: q.pacing_floor,
            bbr3_phase: b3.map_or("", |b| b.phase.name()),
            bbr3_bw_hi_mbit: b3.map_or(0.0, |b| mbit(b.bw_hi_bps)),
            bbr3_bw_lo_mbit: b3.map_or(0.0, |b| b.bw_lo_bps.map_or(-1.0, mbit)),
            bbr3_inflight_hi: b3.map_or(0, |b| b.inflight_hi.map_or(-1, i64::from)),
            bbr3_inflight_lo: b3.map_or(0, |b| b.inflight_lo.map_or(-1, i64::from)),
            bbr3_round_loss: b3.map_or(0.0, |b| round(b.round_loss, 6)),
            bbr3_too_high_events: b3.map_or(0, |b| b.too_high_events),
            bbr3_lo_cuts: b3.map_or(0, |b| b.lo_cuts),
        }
    }
}

/// `v` to `decimals` places, so the CSV holds what the sample resolves.
fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

/// Flags as 1/0 in the CSV.
fn zero_one<S: serde::Serializer>(v: &bool, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u8(*v as u8)
}

/// One flow's measurements in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    #[serde(flatten)]
    pub spec: FlowSpec,
    /// Receiver-side goodput per interval: (end time since run start, bit/s).
    pub goodput: Vec<(f64, f64)>,
    /// Sender smoothed RTT at each interval end (TCP_INFO via iperf3), ms.
    pub rtt_ms: Vec<(f64, f64)>,
    /// Sender retransmissions over the whole flow (iperf3's end total,
    /// warm-up included: not what the summary's ratio uses).
    pub retransmits: u64,
    /// Sender retransmissions per interval: (end time since run start,
    /// segments); the intervals follow each other from the flow's start.
    /// What [`Summary::retrans_ratio`] sums over the window; empty in
    /// folders written before it was stored.
    pub retransmits_by_interval: Vec<(f64, u64)>,
    pub bytes_received: u64,
    /// Goodput over the measurement window (the same for every flow), bit/s.
    pub mean_goodput: f64,
    pub congestion: String,
}

/// Metrics of one repetition (or their mean over repetitions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub jain: f64,
    pub jain_by_group: BTreeMap<String, f64>,
    pub goodput_mbit_by_group: BTreeMap<String, f64>,
    pub rts_by_group: BTreeMap<String, f64>,
    /// STDR of the first group against the second (0 with one group).
    pub stdr: f64,
    /// Mean goodput of the first group over the second (1 with one group;
    /// infinite, null in JSON, when the second got none).
    #[serde(deserialize_with = "null_as_infinity")]
    pub group_ratio: f64,
    /// Sum of goodputs over the goodput capacity rate x MSS / wire packet,
    /// over the window, goodput counted as data arrives at the receivers
    /// for the first time (see [`crate::results::accounting`]).
    pub utilization: f64,
    /// Bytes the bottleneck sent over rate x window.
    pub link_utilization: f64,
    /// Timing error of both utilizations (a fraction): neither exceeds 1,
    /// nor goodput the link, by more than this.
    pub utilization_error: f64,
    /// Cross-check: `utilization` from the receivers' in-order counters,
    /// as computed before the arrival counter; can exceed the link (bytes
    /// held out of order when the window opens). `None` in folders written
    /// before it existed.
    #[serde(default)]
    pub in_order_utilization: Option<f64>,
    /// Arrival records lost to a full ring: goodput is a lower bound when
    /// this is not 0.
    #[serde(default)]
    pub arrivals_lost: u64,
    /// The window every figure of the summary is computed over: the
    /// edges as marked (see [`crate::results::summary::window_of`]).
    pub window: Option<Window>,
    /// Retransmitted segments over retransmitted plus delivered ones, in
    /// the window: the senders' per-interval retransmissions (prorated at
    /// the edges) against the window's first-time bytes / MSS. NaN (null
    /// in JSON) where not known: a folder resummarized from files that
    /// lack the per-interval retransmissions.
    #[serde(deserialize_with = "null_as_nan")]
    pub retrans_ratio: f64,
    /// Sender smoothed RTT of the interval samples in the window (those
    /// whose interval's midpoint is in it), ms.
    pub rtt_mean_ms: f64,
    pub rtt_p95_ms: f64,
    /// Queueing delay at the bottleneck (backlog x 8 / rate) of the queue
    /// samples in the window, ms.
    pub qdelay_mean_ms: f64,
    pub qdelay_p95_ms: f64,
    /// Packets the bottleneck dropped in the window (its drop counter
    /// interpolated at the two edges).
    pub queue_drops: u64,
    /// Packets random loss dropped in the window (its counter read at the
    /// edges); `None` where not known (a folder resummarized from files
    /// that lack those readings, for a scenario with random loss).
    pub random_loss_drops: Option<u64>,
    /// First time after which Jain's index of the interval goodputs stays >= 0.95.
    pub convergence_s: Option<f64>,
    pub flow_goodput_mbit: Vec<f64>,
    /// How long the flow with an event (a late joiner, or a path whose
    /// RTT changes) took to reach its fair share (see
    /// [`crate::results::time_to_fair`]); `None` when the scenario has no such
    /// event, and in folders written before it existed (`lab table`
    /// recomputes it there from goodput.csv). In a run's mean summary:
    /// the mean of the repetitions' seconds, `None` seconds if any
    /// repetition never got there (as `convergence_s`).
    #[serde(default)]
    pub time_to_fair: Option<TimeToFair>,
}

impl Summary {
    /// The groups as tables and CSV columns list them: in natural order, so
    /// "2ms, 5ms, 10ms, 100ms" reads as the RTTs grow (the map's own order
    /// would put "100ms" before "10ms"). alphanumeric-sort compares digit
    /// runs as numbers; a hand-written comparator would be the same code.
    pub fn groups(&self) -> Vec<String> {
        let mut g: Vec<String> = self.goodput_mbit_by_group.keys().cloned().collect();
        g.sort_by(|a, b| alphanumeric_sort::compare_str(a, b));
        g
    }
}

/// An f64 that JSON may hold as null (how serde_json writes NaN): NaN.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// An f64 that JSON holds as null where it was infinite (serde_json
/// writes infinities as null): a ratio whose denominator was 0.
fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// The late-joiner / path-RTT-change metric of one repetition: which flow
/// was followed from which event, the share it should get, and the first
/// second after the event from which it held that share. Its own type
/// because "no event" (no value at all) and "never fair" (`seconds`
/// `None`) are different answers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeToFair {
    /// The followed flow's index in the run (goodput.csv's `flow`).
    pub flow: usize,
    /// When its event happened, s since the run's start: its path's RTT
    /// change, else its start.
    pub event_s: f64,
    /// Its fair share: the link's goodput capacity over the flows running
    /// at the event, Mbit/s.
    pub share_mbit: f64,
    /// Seconds after the event from which its per-second goodput stayed
    /// within the tolerance of the share; `None`: never within the run.
    pub seconds: Option<f64>,
    /// How long the run went on after the event (what "never" means), s.
    pub watched_s: f64,
}

/// One repetition.
#[derive(Debug, Clone, Serialize)]
pub struct RepResult {
    pub flows: Vec<FlowResult>,
    #[serde(skip)]
    pub queue: Vec<QueueSample>,
    #[serde(skip)]
    pub bpf: Vec<BpfSample>,
    /// The random-loss program's drop counter at the window's two edges
    /// (what [`Summary::random_loss_drops`] is the difference of); kept so
    /// the summary can be computed again from the folder.
    pub random_loss_at_edges: Option<[u64; 2]>,
    pub summary: Summary,
    /// The bottleneck discipline's counters per flow over the window
    /// (empty with drop-tail, and in a folder summarized again: they are
    /// read from the programs, not from the files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aqm: Vec<AqmFlow>,
}

/// What the bottleneck's discipline did to one flow between the window's
/// edges (the lab's AQM programs' counters, `crate::net::aqm`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AqmFlow {
    pub flow: usize,
    /// Packets that left the bottleneck (judged or not).
    pub packets: u64,
    pub drops: u64,
    /// CE marks.
    pub marks: u64,
    /// Packets without an enqueue stamp (passed unjudged).
    pub unstamped: u64,
    /// Mean time in the bottleneck queue of the judged packets, ms.
    pub mean_sojourn_ms: f64,
}

/// A whole run of a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub scenario: Scenario,
    pub rtt_check: Vec<RttCheck>,
    pub rate_check_goodput_mbit: f64,
    pub reps: Vec<RepResult>,
    /// Mean of the repetitions' summaries.
    pub summary: Summary,
    pub dir: PathBuf,
    /// What the run was produced with (its own provenance.json, not part
    /// of summary.json).
    #[serde(skip)]
    pub provenance: RunProvenance,
}

/// The worst of a point's repetitions, per headline metric (issue 14:
/// "report mean and worst"): the lowest Jain and utilization, the highest
/// mean queueing delay and retransmission ratio. Each is the worst
/// repetition of that metric, so two fields may come from different
/// repetitions. Computed by [`crate::results::summary::worst_of`], the one place
/// that decides what "worst" means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// Lowest Jain's index of the repetitions.
    pub jain: f64,
    /// Lowest utilization (as [`Summary::utilization`]).
    pub utilization: f64,
    /// Highest mean queueing delay, ms.
    pub qdelay_mean_ms: f64,
    /// Highest retransmission ratio (NaN, null in JSON, if none is known).
    #[serde(deserialize_with = "null_as_nan")]
    pub retrans_ratio: f64,
    /// How many repetitions this is the worst of.
    pub reps: u32,
}

/// One grid point of a sweep: its mean summary and the worst of its
/// repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub cca: String,
    pub x: f64,
    pub y: Option<f64>,
    /// Mean of the repetitions' summaries.
    pub summary: Summary,
    /// `None` only while reading a sweep.json written before it existed
    /// (`lab merge` fills it from the point's run folder).
    #[serde(default)]
    pub worst: Option<Worst>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary whose second group got nothing (ratio infinite, null in
    /// the JSON serde_json writes) reads back, as infinite.
    #[test]
    fn an_infinite_group_ratio_round_trips() {
        let s = Summary {
            group_ratio: f64::INFINITY,
            ..Summary::default()
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"group_ratio\":null"), "{text}");
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(back.group_ratio, f64::INFINITY);
    }

    #[test]
    fn groups_read_in_natural_order() {
        let s = Summary {
            goodput_mbit_by_group: ["100ms", "10ms", "2ms", "200ms", "50ms", "5ms"]
                .map(|g| (g.to_string(), 1.0))
                .into(),
            ..Summary::default()
        };
        assert_eq!(s.groups(), ["2ms", "5ms", "10ms", "50ms", "100ms", "200ms"]);
        let named = Summary {
            goodput_mbit_by_group: [("short".to_string(), 1.0), ("long".to_string(), 2.0)].into(),
            ..Summary::default()
        };
        assert_eq!(named.groups(), ["long", "short"]);
    }
}
