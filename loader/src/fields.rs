//! Every per-flow field the tools show, as data: one table ([`FIELDS`]) of
//! what each field is called in `rttfairctl flows --json`, in the daemon's
//! metrics and in the lab's `bpf.csv`, its unit, its help and how to read it
//! from a decoded [`Flow`]. The CLI's JSON, the daemon's per-flow families
//! (and so `docs/metrics.md`) and the lab's CSV iterate over it, so a new
//! field is its ABI member, its decode in [`crate::export`] and one row
//! here.
//!
//! Names are data, not derived: each output kept the names it had before
//! the table (some differ between outputs: qfair's x^ is `rate_*` in JSON
//! and metrics, `qfair_xhat_mbit` in the CSV), and a reader of any of them
//! goes by name.

use crate::export::{CcaState, Flow};

/// Which flows have a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// Every flow: the project CCAs' and connections on kernel CCAs.
    Every,
    /// Flows with a BBR model: the project CCAs' and native bbr's.
    Model,
    /// The project CCAs' flows.
    Project,
    /// Flows of one project CCA, whose own state ([`CcaState`]) holds it.
    Fairtt,
    Adbbr,
    Qfair,
    Bbr3,
}

impl Of {
    /// The CCA whose state holds the field, by the name of its object in
    /// `flows --json` ("qfair"); `None` for the fields every CCA shares.
    pub fn cca(self) -> Option<&'static str> {
        match self {
            Of::Every | Of::Model | Of::Project => None,
            Of::Fairtt => Some("fairtt"),
            Of::Adbbr => Some("adbbr"),
            Of::Qfair => Some("qfair"),
            Of::Bbr3 => Some("bbr3"),
        }
    }

    /// Whether `f` carries the CCA's state this field belongs to (always
    /// true for the shared fields: which flows those cover is the
    /// reader's to say, from what else it knows of the flow).
    pub fn holds(self, f: &Flow) -> bool {
        match self {
            Of::Every | Of::Model | Of::Project => true,
            Of::Fairtt => matches!(f.state, CcaState::Fairtt(_)),
            Of::Adbbr => matches!(f.state, CcaState::Adbbr(_)),
            Of::Qfair => matches!(f.state, CcaState::Qfair(_)),
            Of::Bbr3 => matches!(f.state, CcaState::Bbr3(_)),
        }
    }
}

/// A field's unit, SI: what [`Value`]s of the field are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    BytesPerSecond,
    Bytes,
    Packets,
    Segments,
    /// A dimensionless ratio (gains, factors, loss rate).
    Ratio,
    /// Events or items.
    Count,
    /// 1 or 0.
    Flag,
    /// A state's name ("probe_bw"); a metric of it is a series per flow
    /// labelled with the state, value 1.
    State,
}

impl Unit {
    /// The unit as the metrics reference names it ("" for counts, flags
    /// and states).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::BytesPerSecond => "bytes/s",
            Unit::Bytes => "bytes",
            Unit::Packets => "packets",
            Unit::Segments => "segments",
            Unit::Ratio => "ratio",
            Unit::Count | Unit::Flag | Unit::State => "",
        }
    }
}

/// A field's value on one flow, in the field's [`Unit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(u64),
    Real(f64),
    Flag(bool),
    State(&'static str),
}

impl Value {
    /// The value as a number (flags 1 or 0); `None` for a state.
    pub fn number(self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(v as f64),
            Value::Real(v) => Some(v),
            Value::Flag(v) => Some(v as u8 as f64),
            Value::State(_) => None,
        }
    }
}

/// A field's metric family in the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// As exposed, less a counter's `_total`.
    pub name: &'static str,
    /// Only goes up while the flow lives (else a gauge).
    pub counter: bool,
}

const fn gauge(name: &'static str) -> Option<Metric> {
    Some(Metric {
        name,
        counter: false,
    })
}

const fn counter(name: &'static str) -> Option<Metric> {
    Some(Metric {
        name,
        counter: true,
    })
}

/// A field's column in the lab's `bpf.csv`: seconds in ms, rates in
/// Mbit/s, other numbers as they are; flags 1/0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub name: &'static str,
    /// Decimal places kept (what the record resolves) of a real number;
    /// `None`: the unit's (3 for ms, Mbit/s and packets, 4 for ratios).
    pub decimals: Option<i32>,
    /// What the column holds while the flow's CCA leaves the field unset
    /// (an optional value that is `None`).
    pub unset: f64,
}

const fn column(name: &'static str) -> Option<Column> {
    Some(Column {
        name,
        decimals: None,
        unset: 0.0,
    })
}

/// One per-flow field.
pub struct Field {
    pub of: Of,
    /// Its key in `rttfairctl flows --json` (in the CCA's object for a
    /// CCA's own field); for a [`Unit::State`] also the label of its
    /// metric's series.
    pub key: &'static str,
    pub unit: Unit,
    /// What it is: the help of its metric.
    pub help: &'static str,
    /// Its value on `f`; `None` where `f` has none: a flow of another CCA,
    /// or an optional value unset (a bound not yet set, no drain yet).
    pub value: fn(&Flow) -> Option<Value>,
    /// Its metric family, if the daemon exports one.
    pub metric: Option<Metric>,
    /// Its column of `bpf.csv`, if the lab records it.
    pub column: Option<Column>,
}

fn secs(d: std::time::Duration) -> Option<Value> {
    Some(Value::Real(d.as_secs_f64()))
}

fn int(v: impl Into<u64>) -> Option<Value> {
    Some(Value::Int(v.into()))
}

fn real(v: f64) -> Option<Value> {
    Some(Value::Real(v))
}

fn flag(v: bool) -> Option<Value> {
    Some(Value::Flag(v))
}

fn state(v: &'static str) -> Option<Value> {
    Some(Value::State(v))
}

use Unit::{Bytes, BytesPerSecond, Count, Flag, Packets, Ratio, Seconds, Segments, State};

/// Every per-flow field, in the order of `bpf.csv`'s columns (the other
/// outputs follow it too): the shared ones, then each CCA's.
#[rustfmt::skip]
pub static FIELDS: &[Field] = &[
    // Shared: the BBR core every project CCA has, and what the kernel keeps for every flow.
    Field { of: Of::Model, key: "mode", unit: State, help: "BBR state of the flow: the series with the current mode label is 1", value: |f| state(f.mode.name()), metric: gauge("rttfair_flow_mode"), column: column("mode") },
    Field { of: Of::Model, key: "btlbw_bytes_per_second", unit: BytesPerSecond, help: "BBR bottleneck bandwidth estimate of the flow: the windowed max delivery rate (the policed rate while policed); for bbr3 min(bw_hi, bw_lo), whose max is rttfair_bbr3_bw_hi_bytes_per_second", value: |f| int(f.btlbw_bps), metric: gauge("rttfair_flow_btlbw_bytes_per_second"), column: column("btlbw_mbit") },
    Field { of: Of::Every, key: "min_rtt_seconds", unit: Seconds, help: "Minimum RTT of the flow: BBR's RTprop estimate for rttfair's CCAs and native bbr, the kernel's windowed min RTT for other kernel CCAs", value: |f| secs(f.min_rtt), metric: gauge("rttfair_flow_min_rtt_seconds"), column: column("min_rtt_ms") },
    Field { of: Of::Project, key: "last_rtt_seconds", unit: Seconds, help: "RTT of the flow's latest rate sample", value: |f| secs(f.last_rtt), metric: gauge("rttfair_flow_last_rtt_seconds"), column: column("last_rtt_ms") },
    Field { of: Of::Every, key: "srtt_seconds", unit: Seconds, help: "Kernel smoothed RTT (srtt) of the flow", value: |f| secs(f.srtt), metric: gauge("rttfair_flow_smoothed_rtt_seconds"), column: None },
    Field { of: Of::Every, key: "cwnd_segments", unit: Segments, help: "Congestion window of the flow, in segments", value: |f| int(f.cwnd), metric: gauge("rttfair_flow_cwnd_segments"), column: column("cwnd") },
    Field { of: Of::Every, key: "pacing_rate_bytes_per_second", unit: BytesPerSecond, help: "Pacing rate of the flow", value: |f| int(f.pacing_rate_bps), metric: gauge("rttfair_flow_pacing_rate_bytes_per_second"), column: column("pacing_mbit") },
    Field { of: Of::Model, key: "pacing_gain", unit: Ratio, help: "BBR pacing gain in force (1 = BtlBw); no series while none is (qfair in cruise: its Eq. 9 sets the rate)", value: |f| f.pacing_gain.map(Value::Real), metric: gauge("rttfair_flow_pacing_gain_ratio"), column: None },
    Field { of: Of::Model, key: "cwnd_gain", unit: Ratio, help: "BBR cwnd gain in force (x BDP); no series while none is (qfair in cruise: its Eq. 1 sets the window)", value: |f| f.cwnd_gain.map(Value::Real), metric: gauge("rttfair_flow_cwnd_gain_ratio"), column: None },
    Field { of: Of::Every, key: "delivered_bytes", unit: Bytes, help: "Bytes the flow delivered (acknowledged)", value: |f| int(f.delivered_bytes), metric: counter("rttfair_flow_delivered_bytes"), column: None },
    Field { of: Of::Every, key: "retrans_bytes", unit: Bytes, help: "Bytes the flow retransmitted", value: |f| int(f.retrans_bytes), metric: counter("rttfair_flow_retransmitted_bytes"), column: None },
    Field { of: Of::Project, key: "probe_rtt_entries", unit: Count, help: "ProbeRTT entries of the flow", value: |f| int(f.probe_rtt_entries), metric: counter("rttfair_flow_probe_rtt_entries"), column: column("probe_rtt_entries") },
    Field { of: Of::Project, key: "age_seconds", unit: Seconds, help: "Time from the flow's start to its latest export", value: |f| secs(f.age()), metric: None, column: None },
    // FaiRTT.
    Field { of: Of::Fairtt, key: "alpha_seconds", unit: Seconds, help: "FaiRTT RTT fairness threshold alpha_t (Eq. 5)", value: |f| f.fairtt().and_then(|s| secs(s.alpha)), metric: gauge("rttfair_fairtt_alpha_seconds"), column: column("fairtt_alpha_ms") },
    Field { of: Of::Fairtt, key: "wminrtt_seconds", unit: Seconds, help: "FaiRTT windowed minRTT WminRTT_t (Eq. 6)", value: |f| f.fairtt().and_then(|s| secs(s.wminrtt)), metric: None, column: None },
    Field { of: Of::Fairtt, key: "coefficient", unit: Ratio, help: "FaiRTT BDP coefficient minRTT*gamma/lastRTT applied (1 = none)", value: |f| f.fairtt().and_then(|s| real(s.coefficient)), metric: gauge("rttfair_fairtt_bdp_coefficient_ratio"), column: column("fairtt_coef") },
    Field { of: Of::Fairtt, key: "wfcount", unit: Count, help: "FaiRTT Wfcount: distinct minRTT classes the flow saw active", value: |f| f.fairtt().and_then(|s| int(s.wfcount)), metric: gauge("rttfair_fairtt_wfcount"), column: column("fairtt_wfcount") },
    Field { of: Of::Fairtt, key: "active", unit: Flag, help: "1 while FaiRTT's BDP reduction applies to the flow", value: |f| f.fairtt().and_then(|s| flag(s.active)), metric: gauge("rttfair_fairtt_adjust_active"), column: column("fairtt_active") },
    // Ad-BBR.
    Field { of: Of::Adbbr, key: "nrtt_seconds", unit: Seconds, help: "Ad-BBR reference RTT nRTT (Alg. 1)", value: |f| f.adbbr().and_then(|s| secs(s.nrtt)), metric: gauge("rttfair_adbbr_nrtt_seconds"), column: column("adbbr_nrtt_ms") },
    Field { of: Of::Adbbr, key: "regime", unit: State, help: "Ad-BBR rate regulation regime (Alg. 2): the series with the current regime label is 1", value: |f| f.adbbr().and_then(|s| state(s.regime.name())), metric: gauge("rttfair_adbbr_regime"), column: column("adbbr_regime") },
    Field { of: Of::Adbbr, key: "factor", unit: Ratio, help: "Ad-BBR pacing factor applied (1 = none; 1/beta or gamma)", value: |f| f.adbbr().and_then(|s| real(s.factor)), metric: gauge("rttfair_adbbr_pacing_factor_ratio"), column: column("adbbr_factor") },
    Field { of: Of::Adbbr, key: "rtt_std_seconds", unit: Seconds, help: "Ad-BBR standard deviation of the RTT history (Alg. 3)", value: |f| f.adbbr().and_then(|s| secs(s.rtt_std)), metric: gauge("rttfair_adbbr_rtt_stddev_seconds"), column: column("adbbr_rtt_std_ms") },
    // qfair.
    Field { of: Of::Qfair, key: "alpha_packets", unit: Packets, help: "qfair backlog target alpha of the flow", value: |f| f.qfair().and_then(|s| real(s.alpha_pkts)), metric: gauge("rttfair_qfair_alpha_packets"), column: column("qfair_alpha_pkts") },
    Field { of: Of::Qfair, key: "backlog_packets", unit: Packets, help: "qfair estimate of the flow's own backlog at the bottleneck (a^ = x^ q^)", value: |f| f.qfair().and_then(|s| real(s.backlog_pkts)), metric: gauge("rttfair_qfair_backlog_packets"), column: column("qfair_backlog_pkts") },
    Field { of: Of::Qfair, key: "offset_packets", unit: Packets, help: "qfair integral term o of Eq. 8b, signed, at most qfair.o_cap x alpha in magnitude (default alpha/2) (w = g x^ R^ + alpha + o)", value: |f| f.qfair().and_then(|s| real(s.offset_pkts)), metric: gauge("rttfair_qfair_offset_packets"), column: column("qfair_offset_pkts") },
    Field { of: Of::Qfair, key: "qdelay_seconds", unit: Seconds, help: "qfair queueing delay estimate q^ = D - R^", value: |f| f.qfair().and_then(|s| secs(s.qdelay)), metric: gauge("rttfair_qfair_qdelay_seconds"), column: column("qfair_qdelay_ms") },
    Field { of: Of::Qfair, key: "standing_rtt_seconds", unit: Seconds, help: "qfair standing RTT D (mean of 8 ms bucket minima)", value: |f| f.qfair().and_then(|s| secs(s.standing_rtt)), metric: gauge("rttfair_qfair_standing_rtt_seconds"), column: column("qfair_standing_rtt_ms") },
    Field { of: Of::Qfair, key: "rate_bytes_per_second", unit: BytesPerSecond, help: "qfair smoothed per-round sending rate x^ ((delivered + lost) per round)", value: |f| f.qfair().and_then(|s| int(s.rate_bps)), metric: gauge("rttfair_qfair_rate_bytes_per_second"), column: column("qfair_xhat_mbit") },
    Field { of: Of::Qfair, key: "gain", unit: Ratio, help: "qfair rate correction g of the last round (1 = none)", value: |f| f.qfair().and_then(|s| real(s.gain)), metric: gauge("rttfair_qfair_gain_ratio"), column: column("qfair_gain") },
    Field { of: Of::Qfair, key: "target_cwnd_segments", unit: Segments, help: "qfair target window w = g x^ R^ + alpha + o", value: |f| f.qfair().and_then(|s| int(s.target_cwnd)), metric: gauge("rttfair_qfair_target_cwnd_segments"), column: column("qfair_target_cwnd") },
    Field { of: Of::Qfair, key: "competitive", unit: Flag, help: "1 while the qfair flow is in competitive mode (a queue it does not own)", value: |f| f.qfair().and_then(|s| flag(s.competitive)), metric: gauge("rttfair_qfair_competitive"), column: column("qfair_competitive") },
    Field { of: Of::Qfair, key: "drains_ok", unit: Count, help: "qfair synchronised drains that emptied the queue", value: |f| f.qfair().and_then(|s| int(s.drains_ok)), metric: counter("rttfair_qfair_drains_ok"), column: column("qfair_drains_ok") },
    Field { of: Of::Qfair, key: "drains_failed", unit: Count, help: "qfair drains that did not empty the queue (a queue qfair does not own)", value: |f| f.qfair().and_then(|s| int(s.drains_failed)), metric: counter("rttfair_qfair_drains_failed"), column: column("qfair_drains_failed") },
    Field { of: Of::Qfair, key: "drain_min_rtt_seconds", unit: Seconds, help: "qfair lowest RTT of the flow's last judged drain, m, which the drain verdict and Eq. 10 compare with R^ (no series before the first drain)", value: |f| f.qfair().and_then(|s| s.drain_min_rtt).and_then(secs), metric: gauge("rttfair_qfair_drain_min_rtt_seconds"), column: column("qfair_drain_min_ms") },
    Field { of: Of::Qfair, key: "noise_seconds", unit: Seconds, help: "qfair delay noise nu of the flow's own path: how far its bucket estimator reads above R^ with the queue empty (from emptied drains), taken out of q^", value: |f| f.qfair().and_then(|s| secs(s.noise)), metric: gauge("rttfair_qfair_noise_seconds"), column: column("qfair_noise_ms") },
    Field { of: Of::Qfair, key: "pipe_seconds", unit: Seconds, help: "qfair pipe P = R^ + nu + eps the window carries besides the backlog (eps: the flow's mean RTT above its bucket minima, read in emptied drains)", value: |f| f.qfair().and_then(|s| secs(s.pipe)), metric: gauge("rttfair_qfair_pipe_seconds"), column: column("qfair_pipe_ms") },
    Field { of: Of::Qfair, key: "pacing_floor", unit: Flag, help: "1 when the qfair window with its burst room is below 6 packets, so pacing rather than cwnd limits the flow", value: |f| f.qfair().and_then(|s| flag(s.pacing_floor)), metric: gauge("rttfair_qfair_pacing_floor"), column: column("qfair_pacing_floor") },
    // bbr3 (unset bounds: null in JSON, no series, -1 in the CSV).
    Field { of: Of::Bbr3, key: "phase", unit: State, help: "BBRv3 phase of the flow (startup, drain, down, cruise, refill, up, probe_rtt): the series with the current phase label is 1", value: |f| f.bbr3().and_then(|s| state(s.phase.name())), metric: gauge("rttfair_bbr3_phase"), column: column("bbr3_phase") },
    Field { of: Of::Bbr3, key: "bw_hi_bytes_per_second", unit: BytesPerSecond, help: "BBRv3 long-term max delivery rate bw_hi (last 1-2 ProbeBW cycles)", value: |f| f.bbr3().and_then(|s| int(s.bw_hi_bps)), metric: gauge("rttfair_bbr3_bw_hi_bytes_per_second"), column: column("bbr3_bw_hi_mbit") },
    Field { of: Of::Bbr3, key: "bw_lo_bytes_per_second", unit: BytesPerSecond, help: "BBRv3 short-term lower bound bw_lo (set by loss outside probes)", value: |f| f.bbr3().and_then(|s| s.bw_lo_bps).and_then(int), metric: gauge("rttfair_bbr3_bw_lo_bytes_per_second"), column: unset(column("bbr3_bw_lo_mbit"), -1.0) },
    Field { of: Of::Bbr3, key: "inflight_hi_segments", unit: Segments, help: "BBRv3 upper bound inflight_hi (where a probe's loss rate passed 2 % or CE ratio 50 %)", value: |f| f.bbr3().and_then(|s| s.inflight_hi).and_then(int), metric: gauge("rttfair_bbr3_inflight_hi_segments"), column: unset(column("bbr3_inflight_hi"), -1.0) },
    Field { of: Of::Bbr3, key: "inflight_lo_segments", unit: Segments, help: "BBRv3 short-term lower bound inflight_lo", value: |f| f.bbr3().and_then(|s| s.inflight_lo).and_then(int), metric: gauge("rttfair_bbr3_inflight_lo_segments"), column: unset(column("bbr3_inflight_lo"), -1.0) },
    Field { of: Of::Bbr3, key: "round_loss_ratio", unit: Ratio, help: "BBRv3 loss rate of the flow's last round trip, lost / (lost + delivered)", value: |f| f.bbr3().and_then(|s| real(s.round_loss)), metric: gauge("rttfair_bbr3_round_loss_ratio"), column: decimals(column("bbr3_round_loss"), 6) },
    Field { of: Of::Bbr3, key: "too_high_events", unit: Count, help: "BBRv3 bandwidth probes ended by the loss/ECN bound (inflight_hi set there)", value: |f| f.bbr3().and_then(|s| int(s.too_high_events)), metric: counter("rttfair_bbr3_inflight_too_high"), column: column("bbr3_too_high_events") },
    Field { of: Of::Bbr3, key: "lo_cuts", unit: Count, help: "BBRv3 loss rounds outside probes that cut bw_lo and inflight_lo", value: |f| f.bbr3().and_then(|s| int(s.lo_cuts)), metric: counter("rttfair_bbr3_lower_bound_cuts"), column: column("bbr3_lo_cuts") },
    Field { of: Of::Bbr3, key: "extra_acked_segments", unit: Segments, help: "BBRv3 ACK-aggregation cwnd allowance extra_acked", value: |f| f.bbr3().and_then(|s| int(s.extra_acked)), metric: gauge("rttfair_bbr3_extra_acked_segments"), column: None },
    Field { of: Of::Bbr3, key: "ecn_alpha", unit: Ratio, help: "BBRv3 EWMA of the CE-marked fraction (1 until ECN is in use)", value: |f| f.bbr3().and_then(|s| real(s.ecn_alpha)), metric: gauge("rttfair_bbr3_ecn_alpha_ratio"), column: None },
    Field { of: Of::Bbr3, key: "ecn_eligible", unit: Flag, help: "1 while ECN drives the BBRv3 model (negotiated and min RTT <= 5 ms)", value: |f| f.bbr3().and_then(|s| flag(s.ecn_eligible)), metric: None, column: None },
];

const fn unset(c: Option<Column>, v: f64) -> Option<Column> {
    match c {
        Some(c) => Some(Column { unset: v, ..c }),
        None => None,
    }
}

const fn decimals(c: Option<Column>, d: i32) -> Option<Column> {
    match c {
        Some(c) => Some(Column {
            decimals: Some(d),
            ..c
        }),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(names: impl Iterator<Item = &'static str>) {
        let mut seen = std::collections::BTreeSet::new();
        for n in names {
            assert!(seen.insert(n), "{n} twice");
        }
    }

    /// A name is a reader's key: each is used once per output (JSON keys
    /// once per object).
    #[test]
    fn names_are_unique_per_output() {
        unique(FIELDS.iter().filter_map(|f| f.metric).map(|m| m.name));
        unique(FIELDS.iter().filter_map(|f| f.column).map(|c| c.name));
        for of in [Of::Every, Of::Fairtt, Of::Adbbr, Of::Qfair, Of::Bbr3] {
            unique(
                FIELDS
                    .iter()
                    .filter(|f| f.of.cca() == of.cca())
                    .map(|f| f.key),
            );
        }
    }

    /// A CCA's field reads only on that CCA's flows, a shared one on all.
    #[test]
    fn a_cca_field_reads_only_on_its_ccas_flows() {
        use crate::export::{Adbbr, Bbr3, Fairtt, Qfair};
        let states = [
            CcaState::None,
            CcaState::Fairtt(Fairtt::default()),
            CcaState::Adbbr(Adbbr::default()),
            CcaState::Qfair(Qfair {
                drain_min_rtt: Some(std::time::Duration::from_millis(10)),
                ..Qfair::default()
            }),
            CcaState::Bbr3(Bbr3 {
                bw_lo_bps: Some(1),
                inflight_hi: Some(1),
                inflight_lo: Some(1),
                ..Bbr3::default()
            }),
        ];
        for state in states {
            let f = Flow {
                state,
                pacing_gain: Some(1.0),
                cwnd_gain: Some(2.0),
                ..Flow::default()
            };
            for field in FIELDS {
                assert_eq!(
                    (field.value)(&f).is_some(),
                    field.of.holds(&f),
                    "{} on {state:?}",
                    field.key
                );
            }
        }
    }

    /// A state's value is a name, every other field's a number.
    #[test]
    fn only_states_have_names() {
        let f = Flow::default();
        for field in FIELDS {
            if let Some(v) = (field.value)(&f) {
                assert_eq!(v.number().is_none(), field.unit == State, "{}", field.key);
            }
        }
    }
}
