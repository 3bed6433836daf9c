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

use anyhow::Result;
use rttfair_loader::fields::{Column, Field, Unit, Value, FIELDS};
use rttfair_loader::Flow;
use serde::{Deserialize, Serialize};

use crate::net::qstats::QueueSample;
use crate::net::selfcheck::RttCheck;
use crate::results::provenance::RunProvenance;
use crate::scenario::plan::Window;
use crate::scenario::{FlowSpec, Scenario};

/// One BPF export sample of a flow: a row of `bpf.csv`. Its columns are
/// `t`, `flow`, then the loader's per-flow fields that have one
/// ([`rttfair_loader::fields::FIELDS`], in that order): seconds in ms,
/// rates in Mbit/s, flags 1/0; a field of a CCA other than the flow's is 0
/// (or empty, for a state), an unset one its column's `unset` (0, or -1 for
/// bbr3's bounds).
#[derive(Debug, Clone)]
pub struct BpfSample {
    /// Seconds into the run, to 10 ms.
    pub t: f64,
    /// The lab flow.
    pub flow: usize,
    /// The flow's export, as the loader decoded it.
    pub export: Flow,
}

/// A cell of `bpf.csv`, written as serde writes its type (so 0.0 reads
/// "0.0", as before the field table).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
enum Cell {
    Int(i64),
    Real(f64),
    Text(&'static str),
}

impl BpfSample {
    /// The sample of `f` taken `t` seconds into the run, as lab flow `flow`.
    pub fn new(t: f64, flow: usize, f: &Flow) -> BpfSample {
        BpfSample {
            t: round(t, 2),
            flow,
            export: *f,
        }
    }

    /// The columns of `bpf.csv`.
    pub(crate) fn header() -> impl Iterator<Item = &'static str> {
        ["t", "flow"]
            .into_iter()
            .chain(FIELDS.iter().filter_map(|f| f.column).map(|c| c.name))
    }

    /// Its row of `bpf.csv`, under [`BpfSample::header`].
    fn cells(&self) -> Vec<Cell> {
        let mut row = vec![Cell::Real(self.t), Cell::Int(self.flow as i64)];
        for field in FIELDS {
            if let Some(c) = field.column {
                row.push(cell(field, &c, &self.export));
            }
        }
        row
    }

    /// Write `samples` as `bpf.csv` to `out`.
    pub(crate) fn write_csv(out: impl std::io::Write, samples: &[BpfSample]) -> Result<()> {
        let mut csv = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(out);
        csv.write_record(BpfSample::header())?;
        for s in samples {
            csv.serialize(s.cells())?;
        }
        csv.flush()?;
        Ok(())
    }
}

/// `field` of `f` in its column `c`.
fn cell(field: &Field, c: &Column, f: &Flow) -> Cell {
    // the column's unit, and whether it holds a real number
    let (scale, real, decimals): (fn(f64) -> f64, bool, i32) = match field.unit {
        Unit::Seconds => (|s| s * 1e3, true, 3),
        Unit::BytesPerSecond => (|b| b * 8.0 / 1e6, true, 3),
        Unit::Packets => (|p| p, true, 3),
        Unit::Ratio => (|r| r, true, 4),
        Unit::Bytes | Unit::Segments | Unit::Count | Unit::Flag => (|n| n, false, 0),
        Unit::State => {
            return match (field.value)(f) {
                Some(Value::State(s)) => Cell::Text(s),
                _ => Cell::Text(""),
            };
        }
    };
    let v = match (field.value)(f) {
        Some(v) => scale(v.number().unwrap_or(0.0)),
        None if field.of.holds(f) => c.unset,
        None => 0.0,
    };
    if real {
        Cell::Real(round(v, c.decimals.unwrap_or(decimals)))
    } else {
        Cell::Int(v as i64)
    }
}

/// A duration in ms as `bpf.csv` holds it.
pub(crate) fn ms(d: Duration) -> f64 {
    round(d.as_secs_f64() * 1e3, 3)
}

/// `v` to `decimals` places, so the CSV holds what the sample resolves.
fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
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

    /// bpf.csv by column: units in the names, a bbr3 bound unset is -1,
    /// qfair's m before a drain 0, another CCA's fields 0 or empty.
    #[test]
    fn bpf_csv_columns_hold_their_units_and_sentinels() {
        use rttfair_loader::export::{Bbr3, CcaState, Qfair};
        let flow = |state| Flow {
            min_rtt: Duration::from_micros(20_013),
            pacing_rate_bps: 1_250_000,
            state,
            ..Flow::default()
        };
        let bbr3 = flow(CcaState::Bbr3(Bbr3 {
            inflight_hi: Some(83),
            ..Bbr3::default()
        }));
        let qfair = flow(CcaState::Qfair(Qfair {
            noise: Duration::from_micros(2_251),
            ..Qfair::default()
        }));
        let samples = [
            BpfSample::new(1.234, 0, &bbr3),
            BpfSample::new(1.3, 1, &qfair),
        ];
        let mut out = Vec::new();
        BpfSample::write_csv(&mut out, &samples).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut rows = csv::Reader::from_reader(text.as_bytes());
        let header = rows.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
        let cell = |row: usize, name: &str| {
            let i = header.iter().position(|h| h == name).unwrap();
            rows[row][i].to_string()
        };
        assert_eq!((cell(0, "t"), cell(0, "flow")), ("1.23".into(), "0".into()));
        assert_eq!(cell(0, "min_rtt_ms"), "20.013");
        assert_eq!(cell(0, "pacing_mbit"), "10.0");
        assert_eq!(cell(0, "bbr3_phase"), "startup");
        assert_eq!(cell(0, "bbr3_inflight_hi"), "83");
        assert_eq!(cell(0, "bbr3_inflight_lo"), "-1");
        assert_eq!(cell(0, "bbr3_bw_lo_mbit"), "-1.0");
        assert_eq!(cell(0, "qfair_noise_ms"), "0.0");
        assert_eq!(cell(0, "adbbr_regime"), "");
        assert_eq!(cell(1, "qfair_noise_ms"), "2.251");
        assert_eq!(cell(1, "qfair_drain_min_ms"), "0.0");
        assert_eq!(cell(1, "qfair_competitive"), "0");
        assert_eq!(cell(1, "bbr3_phase"), "");
        assert_eq!(cell(1, "bbr3_inflight_lo"), "0");
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
