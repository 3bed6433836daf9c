//! How things are shown: tables for people, serde structs for `--json`.

use std::fmt::Write;

use anyhow::Result;
use rttfair_loader::export::LongTermBw;
use rttfair_loader::fields::{Of, Value, FIELDS};
use rttfair_loader::flows::FlowReader;
use rttfair_loader::{kernel, lifecycle, BpfFs, Cca, Flow};
use serde::Serialize;

/// What `rttfairctl list` reports.
#[derive(Debug, Serialize)]
pub struct Status {
    pub ccas: Vec<CcaStatus>,
    pub kernel_default: String,
    pub available: Vec<String>,
    pub bpffs: String,
    pub flow_map_capacity: Option<u32>,
    pub tunables: Vec<rttfair_loader::tunables::Value>,
    pub cgroup_defaults: Vec<rttfair_loader::cgroup::Attachment>,
    /// Set when the counts cannot be read: this user cannot read the pins
    /// and maps (not root), or the loaded CCAs are of another ABI (the
    /// `installed::check` line, with its fix). It says what is missing;
    /// the counts are then null (`?` in the table), not 0.
    pub note: Option<String>,
}

/// One CCA's row. The counts are `None` when they cannot be read (see
/// [`Status::note`]): a CCA of another ABI carries traffic this build
/// cannot see, and "0 sockets" would invite `unload --force`.
#[derive(Debug, Serialize)]
pub struct CcaStatus {
    pub name: &'static str,
    pub loaded: bool,
    /// Sockets using it now (init minus release, exact).
    pub sockets: Option<u64>,
    /// Of those, sockets whose export entry is present.
    pub exported_flows: Option<usize>,
    /// Flows that could not get an export entry (map full).
    pub export_failed_total: Option<u64>,
    pub probe_rtt_entries_total: Option<u64>,
}

impl Status {
    pub fn gather(fs: &BpfFs) -> Result<Status> {
        let denied = fs.exists()
            && std::fs::read_dir(fs.root()).err().map(|e| e.kind())
                == Some(std::io::ErrorKind::PermissionDenied);
        let denied_note = denied.then(|| format!(
            "sockets, exported flows, tunables and cgroup defaults need CAP_BPF and access to {} (run as root)",
            fs.root().display()
        ));
        let note = match rttfair_loader::installed::check(fs) {
            Err(e) => Some(e.to_string()),
            Ok(()) => denied_note,
        };
        let known = note.is_none();
        let reader = FlowReader::open(fs).ok();
        let all_flows = reader
            .as_ref()
            .and_then(|r| r.flows().ok())
            .unwrap_or_default();
        let mut ccas = Vec::new();
        // Then the second names loaded (qfair_b), whose sockets and flows
        // count as their base's.
        let second = lifecycle::pinned(fs).into_iter().filter(|c| *c != c.base());
        for cca in Cca::ALL.into_iter().chain(second) {
            let known = known && cca == cca.base();
            let counters = reader
                .as_ref()
                .and_then(|r| r.counters(cca).ok())
                .unwrap_or_default();
            ccas.push(CcaStatus {
                name: cca.name(),
                // Without access to the pins, "registered with the kernel" is
                // the best available answer.
                loaded: if denied {
                    kernel::is_registered(cca.name()).unwrap_or(false)
                } else {
                    lifecycle::is_loaded(cca, fs)
                },
                sockets: known.then(|| counters.sockets()),
                exported_flows: known
                    .then(|| all_flows.iter().filter(|f| f.cca == Some(cca)).count()),
                export_failed_total: known.then_some(counters.export_failed),
                probe_rtt_entries_total: known.then_some(counters.probe_rtt_entries),
            });
        }
        Ok(Status {
            ccas,
            kernel_default: kernel::default_cca()?,
            available: kernel::available_ccas()?,
            bpffs: fs.root().display().to_string(),
            flow_map_capacity: reader.as_ref().map(|r| r.capacity()),
            tunables: rttfair_loader::tunables::get(fs, None).unwrap_or_default(),
            cgroup_defaults: rttfair_loader::cgroup::list(fs),
            note,
        })
    }

    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<8} {:<7} {:>8} {:>9}",
            "CCA", "LOADED", "SOCKETS", "EXPORTED"
        );
        for c in &self.ccas {
            let known = |n: Option<String>| n.unwrap_or_else(|| "?".into());
            let sockets = known(c.sockets.map(|n| n.to_string()));
            let exported = known(c.exported_flows.map(|n| n.to_string()));
            let _ = writeln!(
                s,
                "{:<8} {:<7} {:>8} {:>9}",
                c.name,
                if c.loaded { "yes" } else { "no" },
                sockets,
                exported
            );
        }
        let _ = writeln!(s, "kernel default: {}", self.kernel_default);
        let _ = writeln!(s, "available:      {}", self.available.join(" "));
        if let Some(n) = &self.note {
            let _ = writeln!(s, "note: {n}");
        }
        for a in &self.cgroup_defaults {
            let _ = writeln!(s, "cgroup default: {} -> {}", a.cgroup.display(), a.cca);
        }
        if !self.tunables.is_empty() {
            s.push_str(&tunables_table(&self.tunables));
        }
        s
    }
}

/// One flow, flattened for JSON and tables: its identity, then the
/// loader's per-flow fields ([`FIELDS`]) under their keys, the shared ones
/// at the top and a CCA's own in an object named after it ("qfair"), an
/// unset one null in that object (absent at the top: the BBR gains, where
/// none is in force).
#[derive(Debug, Serialize)]
pub struct FlowRow {
    pub id: u64,
    pub cca: String,
    pub local: String,
    pub peer: String,
    pub netns: u32,
    #[serde(flatten)]
    shared: Fields,
    /// BBR v1's long-term (policer) model, while it samples or is in use:
    /// whether the flow found a policer shows only here (`ss -ti` cannot
    /// show a BPF CCA's state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_term: Option<LongTermRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fairtt: Option<Fields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    adbbr: Option<Fields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    qfair: Option<Fields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bbr3: Option<Fields>,
    #[serde(skip)]
    flow: Flow,
}

/// The fields of a flow that `of` holds, as a JSON object.
#[derive(Debug)]
struct Fields {
    flow: Flow,
    of: Of,
}

impl Fields {
    /// `of`'s fields of `f`, if `f`'s CCA has them.
    fn of(f: &Flow, of: Of) -> Option<Fields> {
        of.holds(f).then_some(Fields { flow: *f, of })
    }
}

impl Serialize for Fields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let shared = self.of.cca().is_none();
        let mut map = s.serialize_map(None)?;
        for field in FIELDS.iter().filter(|f| f.of.cca() == self.of.cca()) {
            match (field.value)(&self.flow) {
                Some(Value::Int(v)) => map.serialize_entry(field.key, &v)?,
                Some(Value::Real(v)) => map.serialize_entry(field.key, &v)?,
                Some(Value::Flag(v)) => map.serialize_entry(field.key, &v)?,
                Some(Value::State(v)) => map.serialize_entry(field.key, v)?,
                None if shared => {}
                None => map.serialize_entry(field.key, &())?,
            }
        }
        map.end()
    }
}

/// The long-term (policer) model, as `rttfairctl flows --json` shows it.
#[derive(Debug, Serialize)]
pub struct LongTermRow {
    pub bw_bytes_per_second: u64,
    pub in_use: bool,
    pub sampling: bool,
    pub rounds: u8,
}

impl LongTermRow {
    /// The row of a flow whose model samples or uses lt_bw; `None` otherwise.
    fn of(lt: &LongTermBw) -> Option<LongTermRow> {
        (lt.in_use || lt.sampling).then_some(LongTermRow {
            bw_bytes_per_second: lt.bw_bps,
            in_use: lt.in_use,
            sampling: lt.sampling,
            rounds: lt.rounds,
        })
    }
}

/// An optional bound for the table: "-" while unset.
fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

impl From<&Flow> for FlowRow {
    fn from(f: &Flow) -> Self {
        FlowRow {
            id: f.id,
            cca: f.cca_name().to_string(),
            local: f.local.to_string(),
            peer: f.peer.to_string(),
            netns: f.netns,
            shared: Fields {
                flow: *f,
                of: Of::Every,
            },
            long_term: LongTermRow::of(&f.long_term),
            fairtt: Fields::of(f, Of::Fairtt),
            adbbr: Fields::of(f, Of::Adbbr),
            qfair: Fields::of(f, Of::Qfair),
            bbr3: Fields::of(f, Of::Bbr3),
            flow: *f,
        }
    }
}

impl FlowRow {
    /// The EXTRA column of the table: the CCA's own internals.
    fn extra(&self) -> String {
        let f = &self.flow;
        if let Some(ft) = f.fairtt() {
            return format!(
                "alpha={:.1}ms coef={:.3} wf={} {}",
                ms(ft.alpha),
                ft.coefficient,
                ft.wfcount,
                if ft.active { "active" } else { "idle" }
            );
        }
        if let Some(ab) = f.adbbr() {
            return format!(
                "nrtt={:.1}ms std={:.2}ms {} x{:.3}",
                ms(ab.nrtt),
                ms(ab.rtt_std),
                ab.regime.name(),
                ab.factor
            );
        }
        if let Some(q) = f.qfair() {
            return format!(
                "x={} alpha={:.1} backlog={:.1} o={:+.2} q={:.2}ms D={:.2}ms g={:.3} w={} drains={}/{} m={}{}{}",
                human_rate(q.rate_bps),
                q.alpha_pkts,
                q.backlog_pkts,
                q.offset_pkts,
                ms(q.qdelay),
                ms(q.standing_rtt),
                q.gain,
                q.target_cwnd,
                q.drains_ok,
                q.drains_failed,
                q.drain_min_rtt
                    .map_or_else(|| "-".to_string(), |m| format!("{:.2}ms", ms(m))),
                if q.competitive { " competitive" } else { "" },
                if q.pacing_floor { " floor" } else { "" }
            );
        }
        if let Some(b) = f.bbr3() {
            return format!(
                "{} bw_hi={} bw_lo={} inflight_hi={} inflight_lo={} loss={:.2}% too_high={} lo_cuts={} extra_acked={} ecn_alpha={:.2}{}",
                b.phase.name(),
                human_rate(b.bw_hi_bps),
                b.bw_lo_bps.map_or_else(|| "-".to_string(), human_rate),
                or_dash(b.inflight_hi),
                or_dash(b.inflight_lo),
                b.round_loss * 100.0,
                b.too_high_events,
                b.lo_cuts,
                b.extra_acked,
                b.ecn_alpha,
                if b.ecn_eligible { " ecn" } else { "" }
            );
        }
        if let Some(lt) = self.long_term.as_ref().filter(|lt| lt.in_use) {
            return format!("policed lt_bw={}", human_rate(lt.bw_bytes_per_second));
        }
        String::new()
    }
}

/// A duration in ms, for the table.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `flows` table.
pub fn flows_table(flows: &[Flow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>6} {:<6} {:<22} {:<22} {:<9} {:>11} {:>9} {:>9} {:>6} {:>6}  EXTRA",
        "ID", "CCA", "LOCAL", "PEER", "MODE", "BTLBW", "MINRTT", "LASTRTT", "CWND", "GAIN"
    );
    for f in flows {
        let row = FlowRow::from(f);
        let extra = row.extra();
        let _ = writeln!(
            s,
            "{:>6} {:<6} {:<22} {:<22} {:<9} {:>11} {:>9} {:>9} {:>6} {:>6}  {}",
            row.id,
            row.cca,
            row.local,
            row.peer,
            f.mode.name(),
            human_rate(f.btlbw_bps),
            format!("{:.2}ms", ms(f.min_rtt)),
            format!("{:.2}ms", ms(f.last_rtt)),
            f.cwnd,
            or_dash(f.pacing_gain.map(|g| format!("{g:.2}"))),
            extra
        );
    }
    if flows.is_empty() {
        let _ = writeln!(s, "(no flows on rttfair CCAs)");
    }
    s
}

/// bytes/s as bit/s with a unit.
pub fn human_rate(bytes_per_sec: u64) -> String {
    let bits = bytes_per_sec as f64 * 8.0;
    if bits >= 1e9 {
        format!("{:.2}Gbit/s", bits / 1e9)
    } else if bits >= 1e6 {
        format!("{:.2}Mbit/s", bits / 1e6)
    } else {
        format!("{:.0}kbit/s", bits / 1e3)
    }
}

/// What `get` prints: the table, or for a filter that selects no tunable
/// (a CCA without any: bbr1, bbr3, bbr_native) one line saying so, so that
/// "none" reads differently from a failed read or an unloaded CCA (which
/// are errors). With no filter, none means no loaded CCA has tunables.
pub fn tunables_text(filter: Option<&str>, values: &[rttfair_loader::tunables::Value]) -> String {
    if !values.is_empty() {
        return tunables_table(values).trim_end().to_string();
    }
    match filter {
        Some(cca) => format!("{cca} has no runtime tunables"),
        None => "no loaded CCA has runtime tunables".to_string(),
    }
}

/// Tunables as `name = value  (default)  help`.
pub fn tunables_table(values: &[rttfair_loader::tunables::Value]) -> String {
    let mut s = String::new();
    for v in values {
        let _ = writeln!(
            s,
            "{:<22} = {:<10} {:<9} {}",
            v.name,
            format!("{}{}", v.value, v.unit),
            if v.is_default { "(default)" } else { "" },
            v.help
        );
    }
    s
}

/// One connection on a kernel CCA, for `rttfairctl flows --native`.
#[derive(Debug, Serialize)]
pub struct NativeRow {
    pub cookie: u64,
    pub cca: String,
    pub local: String,
    pub peer: String,
    /// BBR state, BtlBw and gain: native bbr only (its own model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btlbw_bytes_per_second: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_gain: Option<f64>,
    /// RTprop for native bbr, the kernel's windowed min RTT otherwise.
    pub min_rtt_seconds: f64,
    pub srtt_seconds: f64,
    pub cwnd_segments: u32,
    pub pacing_rate_bytes_per_second: u64,
    pub delivered_bytes: u64,
    pub retrans_bytes: u64,
}

impl From<&rttfair_loader::sockets::NativeSocket> for NativeRow {
    fn from(s: &rttfair_loader::sockets::NativeSocket) -> Self {
        let (f, bbr) = (&s.flow, s.has_bbr_model());
        NativeRow {
            cookie: s.cookie,
            cca: s.cca.clone(),
            local: f.local.to_string(),
            peer: f.peer.to_string(),
            mode: bbr.then(|| f.mode.name()),
            btlbw_bytes_per_second: bbr.then_some(f.btlbw_bps),
            pacing_gain: f.pacing_gain.filter(|_| bbr),
            min_rtt_seconds: f.min_rtt.as_secs_f64(),
            srtt_seconds: f.srtt.as_secs_f64(),
            cwnd_segments: f.cwnd,
            pacing_rate_bytes_per_second: f.pacing_rate_bps,
            delivered_bytes: f.delivered_bytes,
            retrans_bytes: f.retrans_bytes,
        }
    }
}

/// The `flows --native` table: connections on kernel CCAs in this netns.
pub fn native_table(rows: &[NativeRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>8} {:<6} {:<22} {:<22} {:<9} {:>11} {:>9} {:>9} {:>6} {:>11}",
        "COOKIE", "CCA", "LOCAL", "PEER", "MODE", "BTLBW", "MINRTT", "SRTT", "CWND", "PACING"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>8} {:<6} {:<22} {:<22} {:<9} {:>11} {:>9} {:>9} {:>6} {:>11}",
            r.cookie,
            r.cca,
            r.local,
            r.peer,
            r.mode.unwrap_or("-"),
            r.btlbw_bytes_per_second
                .map(human_rate)
                .unwrap_or_else(|| "-".into()),
            format!("{:.2}ms", r.min_rtt_seconds * 1e3),
            format!("{:.2}ms", r.srtt_seconds * 1e3),
            r.cwnd_segments,
            human_rate(r.pacing_rate_bytes_per_second),
        );
    }
    if rows.is_empty() {
        let _ = writeln!(
            s,
            "(no connections on kernel CCAs in this network namespace)"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rttfair_loader::export::Qfair;

    use super::*;

    /// The long-term model shows only while it samples or is in use, and a
    /// policed flow says so in the table.
    #[test]
    fn long_term_model_shows_while_sampling_or_policed() {
        let quiet = Flow {
            cca: Some(Cca::Bbr1),
            ..Flow::default()
        };
        let json = serde_json::to_value(FlowRow::from(&quiet)).unwrap();
        assert!(json.get("long_term").is_none(), "{json}");
        assert!(!flows_table(&[quiet]).contains("policed"));

        let policed = Flow {
            long_term: LongTermBw {
                bw_bps: 1_195_000,
                in_use: true,
                sampling: true,
                rounds: 12,
            },
            ..quiet
        };
        let json = serde_json::to_value(FlowRow::from(&policed)).unwrap();
        assert_eq!(json["long_term"]["in_use"], true);
        assert_eq!(json["long_term"]["bw_bytes_per_second"], 1_195_000);
        assert!(flows_table(&[policed]).contains("policed lt_bw="));
    }

    /// qfair's integral term o is shown signed, in --json and in the table.
    #[test]
    fn qfair_offset_shows_signed() {
        let f = Flow {
            cca: Some(Cca::Qfair),
            state: rttfair_loader::export::CcaState::Qfair(Qfair {
                alpha_pkts: 4.0,
                offset_pkts: -1.25,
                ..Qfair::default()
            }),
            ..Flow::default()
        };
        let json = serde_json::to_value(FlowRow::from(&f)).unwrap();
        assert_eq!(json["qfair"]["offset_packets"], -1.25);
        let table = flows_table(&[f]);
        assert!(table.contains(" o=-1.25 "), "{table}");
    }

    /// The last drain's minimum m: "-" and null before the first drain,
    /// in ms in the table and seconds in --json after it.
    #[test]
    fn qfair_drain_minimum_shows_dash_until_a_drain() {
        let flow = |m: Option<Duration>| Flow {
            cca: Some(Cca::Qfair),
            state: rttfair_loader::export::CcaState::Qfair(Qfair {
                drain_min_rtt: m,
                ..Qfair::default()
            }),
            ..Flow::default()
        };
        // the last field of the EXTRA column, which ends the line
        let ends = |f: Flow, tail: &str| {
            let table = flows_table(&[f]);
            assert!(
                table.lines().any(|l| l.trim_end().ends_with(tail)),
                "{table}"
            );
        };
        let none = flow(None);
        ends(none, " m=-");
        assert!(serde_json::to_value(FlowRow::from(&none)).unwrap()["qfair"]
            ["drain_min_rtt_seconds"]
            .is_null());
        let drained = flow(Some(Duration::from_micros(40_077)));
        ends(drained, " m=40.08ms");
        assert_eq!(
            serde_json::to_value(FlowRow::from(&drained)).unwrap()["qfair"]
                ["drain_min_rtt_seconds"],
            0.040077
        );
    }

    /// `get` of a CCA without tunables says so in one line.
    #[test]
    fn get_of_a_cca_without_tunables_says_so() {
        assert_eq!(
            tunables_text(Some("bbr3"), &[]),
            "bbr3 has no runtime tunables"
        );
        assert_eq!(
            tunables_text(None, &[]),
            "no loaded CCA has runtime tunables"
        );
    }

    /// A flow with no BBR gain in force (qfair in cruise) shows "-" in the
    /// GAIN column and no gains in --json; one with a gain shows it.
    #[test]
    fn gains_show_only_where_in_force() {
        // (pacing gain, cwnd gain) in --json, and the table's GAIN column
        let shown = |pacing_gain, cwnd_gain| {
            let f = Flow {
                cca: Some(Cca::Qfair),
                pacing_gain,
                cwnd_gain,
                ..Flow::default()
            };
            let json = serde_json::to_value(FlowRow::from(&f)).unwrap();
            let table = flows_table(&[f]);
            let column = table.lines().nth(1).unwrap().split_whitespace().nth(9);
            (
                json.get("pacing_gain").map(|g| g.as_f64().unwrap()),
                json.get("cwnd_gain").map(|g| g.as_f64().unwrap()),
                column.unwrap().to_string(),
            )
        };
        assert_eq!(shown(None, None), (None, None, "-".to_string()));
        assert_eq!(
            shown(Some(1.25), Some(2.0)),
            (Some(1.25), Some(2.0), "1.25".to_string())
        );
    }
}
