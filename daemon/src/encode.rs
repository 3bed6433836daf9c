//! Writing a [`Snapshot`] as OpenMetrics text, family by family, as the
//! table in [`crate::families`] says.
//!
//! prometheus-client writes counters and gauges; it has no gauge histogram,
//! so the table is cut into runs: each run of other families goes through
//! its text encoder, and each gauge histogram is written here by hand.

use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use rttfair_loader::fields::{Unit, Value};

use crate::families::{Covers, Family, Source, Type, FAMILIES};
use crate::labels::FlowLabels;
use crate::process::Process;
use crate::snapshot::{FlowSample, Snapshot, Throughputs};
use std::collections::BTreeMap;

type Labels = Vec<(&'static str, String)>;

/// What one encode reads: the scrape's data, and the process read once.
struct Data {
    snap: Snapshot,
    t: Throughputs,
    process: Process,
}

/// The families `range` of the table, as a prometheus-client collector.
struct Run {
    data: Arc<Data>,
    range: Range<usize>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Run({:?})", self.range)
    }
}

impl Collector for Run {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &FAMILIES[self.range.clone()] {
            family(&mut enc, f, &self.data)?;
        }
        Ok(())
    }
}

/// The whole OpenMetrics exposition of `snap`: every family of the table
/// in order, then `# EOF`.
pub fn exposition(out: &mut String, snap: Snapshot) -> Result<(), std::fmt::Error> {
    let data = Arc::new(Data {
        t: snap.throughputs(),
        snap,
        process: Process::read(),
    });
    let mut i = 0;
    while i < FAMILIES.len() {
        let f = &FAMILIES[i];
        if let (Type::GaugeHistogram, Source::Histogram(value, bounds)) = (f.ty, &f.source) {
            gauge_histograms(out, f, &data.snap, *value, bounds)?;
            i += 1;
            continue;
        }
        let end = FAMILIES[i..]
            .iter()
            .position(|f| f.ty == Type::GaugeHistogram)
            .map_or(FAMILIES.len(), |n| i + n);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Run {
            data: data.clone(),
            range: i..end,
        }));
        prometheus_client::encoding::text::encode_registry(out, &registry)?;
        i = end;
    }
    prometheus_client::encoding::text::encode_eof(out)
}

fn metric_type(ty: Type) -> MetricType {
    match ty {
        Type::Counter => MetricType::Counter,
        // Gauge histograms never get here (written by hand).
        Type::Gauge | Type::GaugeHistogram => MetricType::Gauge,
    }
}

fn family(enc: &mut DescriptorEncoder, f: &Family, d: &Data) -> Result<(), std::fmt::Error> {
    let (snap, t) = (&d.snap, &d.t);
    match &f.source {
        Source::FlowInfo => samples(enc, f, &info(snap)),
        Source::Flow(covers, value) => {
            let v: Vec<(&FlowLabels, f64)> = snap
                .exported()
                .iter()
                .filter(|s| covers.includes(s))
                .filter_map(|s| value(s).map(|x| (&s.labels, x)))
                .collect();
            samples(enc, f, &v)
        }
        Source::Field(field) if field.unit == Unit::State => {
            let (covers, label) = (Covers::from(field.of), field.key);
            let v: Vec<(FlowLabels, f64)> = snap
                .exported()
                .iter()
                .filter(|s| covers.includes(s))
                .filter_map(|s| match (field.value)(&s.flow) {
                    Some(Value::State(st)) => {
                        Some((s.labels.with(format_args!(",{label}=\"{st}\"")), 1.0))
                    }
                    _ => None,
                })
                .collect();
            samples(enc, f, &v)
        }
        Source::Field(field) => {
            let covers = Covers::from(field.of);
            let v: Vec<(&FlowLabels, f64)> = snap
                .exported()
                .iter()
                .filter(|s| covers.includes(s))
                .filter_map(|s| {
                    let x = (field.value)(&s.flow)?.number()?;
                    Some((&s.labels, x))
                })
                .collect();
            samples(enc, f, &v)
        }
        Source::Counters(value) => {
            let v: Vec<(Labels, f64)> = snap
                .counters
                .iter()
                .map(|(c, k)| (vec![("cca", c.name().to_string())], value(k)))
                .collect();
            samples(enc, f, &v)
        }
        Source::Loaded => {
            let v: Vec<(Labels, f64)> = snap
                .loaded
                .iter()
                .map(|(c, l)| (vec![("cca", c.name().to_string())], *l as u8 as f64))
                .collect();
            samples(enc, f, &v)
        }
        // Written by [`exposition`], not through prometheus-client.
        Source::Histogram(..) => Ok(()),
        Source::PerCca(agg) => {
            let v: Vec<(Labels, f64)> = t
                .per_cca
                .iter()
                .map(|(c, v)| (vec![("cca", c.clone())], agg(v)))
                .collect();
            samples(enc, f, &v)
        }
        Source::PerGroup(agg) => {
            let v: Vec<(Labels, f64)> = t
                .per_group
                .iter()
                .map(|((c, g), v)| (vec![("cca", c.clone()), ("group", g.clone())], agg(v)))
                .collect();
            samples(enc, f, &v)
        }
        Source::Host(value) => single(enc, f, value(snap)),
        Source::Process(value) => match value(&d.process) {
            Some(v) => single(enc, f, v),
            None => samples::<Labels>(enc, f, &[]),
        },
        Source::Build => {
            let labels: Labels = vec![
                ("version", env!("CARGO_PKG_VERSION").to_string()),
                ("commit", env!("RTTFAIR_BUILD_COMMIT").to_string()),
                ("abi", rttfair_loader::abi::ABI_VERSION.to_string()),
            ];
            samples(enc, f, &[(labels, 1.0)])
        }
    }
}

/// One OpenMetrics gauge histogram per CCA over every flow read (not only
/// those with per-flow series), buckets as the table gives them plus +Inf:
/// cumulative `_bucket`s, then `_gcount` and `_gsum`.
fn gauge_histograms(
    out: &mut String,
    f: &Family,
    snap: &Snapshot,
    value: fn(&FlowSample) -> Option<f64>,
    bounds: &[f64],
) -> Result<(), std::fmt::Error> {
    // Per CCA: (sum, count, non-cumulative count per bucket, +Inf last).
    let mut per_cca: BTreeMap<&str, (f64, u64, Vec<u64>)> = BTreeMap::new();
    for s in &snap.flows {
        let Some(v) = value(s) else { continue };
        let (sum, count, buckets) = per_cca
            .entry(s.cca.as_str())
            .or_insert_with(|| (0.0, 0, vec![0; bounds.len() + 1]));
        *sum += v;
        *count += 1;
        buckets[bounds.partition_point(|b| *b < v)] += 1;
    }
    let name = f.name;
    writeln!(out, "# HELP {name} {}", f.help)?;
    writeln!(out, "# TYPE {name} gaugehistogram")?;
    // CCA names are label-safe (lowercase letters and digits).
    for (cca, (sum, count, counts)) in per_cca {
        let mut cumulative = 0;
        for (i, n) in counts.iter().enumerate() {
            cumulative += n;
            match bounds.get(i) {
                Some(b) => writeln!(
                    out,
                    "{name}_bucket{{cca=\"{cca}\",le=\"{b:?}\"}} {cumulative}"
                )?,
                None => writeln!(
                    out,
                    "{name}_bucket{{cca=\"{cca}\",le=\"+Inf\"}} {cumulative}"
                )?,
            }
        }
        writeln!(out, "{name}_gcount{{cca=\"{cca}\"}} {count}")?;
        writeln!(out, "{name}_gsum{{cca=\"{cca}\"}} {sum:?}")?;
    }
    Ok(())
}

/// `rttfair_flow_info`: the identity of every flow, once.
fn info(snap: &Snapshot) -> Vec<(FlowLabels, f64)> {
    snap.exported()
        .iter()
        .map(|s| {
            let l = s.flow.local;
            let more = format_args!(
                ",local_addr=\"{}\",local_port=\"{}\",peer_addr=\"{}\",peer_port=\"{}\",group=\"{}\",netns=\"{}\"",
                l.ip(),
                l.port(),
                s.peer_addr,
                s.peer_port,
                s.group,
                s.flow.netns
            );
            (s.labels.with(more), 1.0)
        })
        .collect()
}

/// Emit one family: descriptor, then (labels, value) samples.
fn samples<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    f: &Family,
    samples: &[(L, f64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(f.name, f.help, None, metric_type(f.ty))?;
    for (labels, v) in samples {
        value(&mut m.encode_family(labels)?, f.ty, *v)?;
    }
    Ok(())
}

/// Emit one family with a single unlabelled sample, written bare (`name
/// value`; an empty label set would print as `name{}`, legal but a trap for
/// grep and naive parsers).
fn single(enc: &mut DescriptorEncoder, f: &Family, v: f64) -> Result<(), std::fmt::Error> {
    value(
        &mut enc.encode_descriptor(f.name, f.help, None, metric_type(f.ty))?,
        f.ty,
        v,
    )
}

fn value(e: &mut MetricEncoder, ty: Type, v: f64) -> Result<(), std::fmt::Error> {
    match ty {
        Type::Counter => e.encode_counter::<(), _, f64>(&v, None),
        _ => e.encode_gauge(&v),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rttfair_loader::export::{CcaState, Qfair};
    use rttfair_loader::{Cca, Flow};

    use super::*;
    use crate::snapshot::{FlowSample, Kind};

    /// The snapshot of a daemon with `cca` loaded and `flows` read
    /// (per-flow series for the first `per_flow`), its maps present,
    /// nothing omitted, no counters, kernel-CCA connections not read, the
    /// default `max_groups`.
    fn snapshot_of(cca: Cca, per_flow: usize, flows: Vec<FlowSample>) -> Snapshot {
        Snapshot {
            per_flow,
            flows,
            native_readable: Err("disabled".into()),
            omitted: 0,
            counters: vec![],
            loaded: vec![(cca, true)],
            capacity: 1024,
            maps_present: true,
            ready: true,
            previous_scrape_seconds: 0.0,
            max_groups: crate::config::DEFAULT_MAX_GROUPS,
        }
    }

    /// The OpenMetrics text a registry exposes that holds only `snap`.
    fn expose(snap: Snapshot) -> String {
        let mut text = String::new();
        exposition(&mut text, snap).unwrap();
        text
    }

    fn exposition_of(cca: Cca, per_flow: usize, flows: Vec<FlowSample>) -> String {
        expose(snapshot_of(cca, per_flow, flows))
    }

    /// A qfair flow gets the core families and qfair's own, and none of
    /// another CCA's; counters end in `_total`.
    #[test]
    fn a_qfair_flow_is_encoded_through_the_table() {
        let flow = Flow {
            id: 9,
            cca: Some(Cca::Qfair),
            min_rtt: Duration::from_millis(20),
            state: CcaState::Qfair(Qfair {
                alpha_pkts: 3.0,
                offset_pkts: -0.75,
                qdelay: Duration::from_millis(2),
                drains_ok: 4,
                drain_min_rtt: Some(Duration::from_micros(40_077)),
                ..Qfair::default()
            }),
            ..Flow::default()
        };
        let sample = FlowSample {
            flow,
            rate: 1e6,
            kind: Kind::Project,
            cca: "qfair".into(),
            group: "10.20.0.0/24".into(),
            peer_addr: "10.20.0.9".into(),
            peer_port: "5201".into(),
            labels: FlowLabels::new("qfair", format_args!("9")),
        };
        let text = exposition_of(Cca::Qfair, 1, vec![sample]);
        let has = |l: &str| text.lines().any(|x| x == l);
        assert!(
            has("rttfair_qfair_alpha_packets{cca=\"qfair\",flow=\"9\"} 3.0"),
            "{text}"
        );
        assert!(
            has("rttfair_qfair_offset_packets{cca=\"qfair\",flow=\"9\"} -0.75"),
            "{text}"
        );
        assert!(
            has("rttfair_qfair_qdelay_seconds{cca=\"qfair\",flow=\"9\"} 0.002"),
            "{text}"
        );
        assert!(
            has("rttfair_qfair_drains_ok_total{cca=\"qfair\",flow=\"9\"} 4.0"),
            "{text}"
        );
        assert!(
            has("rttfair_qfair_drain_min_rtt_seconds{cca=\"qfair\",flow=\"9\"} 0.040077"),
            "{text}"
        );
        assert!(
            has("rttfair_flow_min_rtt_seconds{cca=\"qfair\",flow=\"9\"} 0.02"),
            "{text}"
        );
        assert!(
            has("rttfair_flow_mode{cca=\"qfair\",flow=\"9\",mode=\"startup\"} 1.0"),
            "{text}"
        );
        assert!(has("rttfair_jain_index_ratio{cca=\"qfair\"} 1.0"), "{text}");
        assert!(!text.contains("rttfair_fairtt_alpha_seconds{"), "{text}");
        assert!(!text.contains("rttfair_adbbr_regime{"), "{text}");
    }

    /// With per-flow series off, flows still feed the per-CCA histograms
    /// (every flow, bucketed by its value) and the group aggregates.
    #[test]
    fn flows_without_per_flow_series_feed_the_histograms() {
        let sample = |id: u64, rtt_ms: u64, rate: f64| FlowSample {
            flow: Flow {
                id,
                cca: Some(Cca::Fairtt),
                min_rtt: Duration::from_millis(rtt_ms),
                cwnd: 20,
                ..Flow::default()
            },
            rate,
            kind: Kind::Project,
            cca: "fairtt".into(),
            group: "10.20.0.0/24".into(),
            peer_addr: String::new(),
            peer_port: String::new(),
            labels: FlowLabels::default(),
        };
        let text = exposition_of(Cca::Fairtt, 0, vec![sample(1, 15, 2e6), sample(2, 40, 1e6)]);
        let has = |l: &str| text.lines().any(|x| x == l);
        assert!(!text.contains("rttfair_flow_min_rtt_seconds{"), "{text}");
        assert!(!text.contains("rttfair_flow_info{"), "{text}");
        for line in [
            "# TYPE rttfair_cca_min_rtt_seconds gaugehistogram",
            "rttfair_cca_min_rtt_seconds_gcount{cca=\"fairtt\"} 2",
            "rttfair_cca_min_rtt_seconds_gsum{cca=\"fairtt\"} 0.055",
            "rttfair_cca_min_rtt_seconds_bucket{cca=\"fairtt\",le=\"0.01\"} 0",
            "rttfair_cca_min_rtt_seconds_bucket{cca=\"fairtt\",le=\"0.02\"} 1",
            "rttfair_cca_min_rtt_seconds_bucket{cca=\"fairtt\",le=\"0.05\"} 2",
            "rttfair_cca_min_rtt_seconds_bucket{cca=\"fairtt\",le=\"+Inf\"} 2",
            "rttfair_cca_cwnd_segments_bucket{cca=\"fairtt\",le=\"16.0\"} 0",
            "rttfair_cca_cwnd_segments_bucket{cca=\"fairtt\",le=\"64.0\"} 2",
            "rttfair_group_active_flows{cca=\"fairtt\",group=\"10.20.0.0/24\"} 2.0",
            "rttfair_group_throughput_bytes_per_second{cca=\"fairtt\",group=\"10.20.0.0/24\"} 3000000.0",
            "rttfair_flows_read 2.0",
            "rttfair_flows_exported 0.0",
        ] {
            assert!(has(line), "missing {line}:\n{text}");
        }
    }

    /// A flow of `cca` to the /24 `10.<g/256>.<g%256>.0/24` at `rate` bytes/s.
    fn grouped(id: u64, cca: Cca, g: u32, rate: f64) -> FlowSample {
        FlowSample {
            flow: Flow {
                id,
                cca: Some(cca),
                ..Flow::default()
            },
            rate,
            kind: Kind::Project,
            cca: cca.name().into(),
            group: format!("10.{}.{}.0/24", g / 256, g % 256),
            peer_addr: String::new(),
            peer_port: String::new(),
            labels: FlowLabels::default(),
        }
    }

    /// Per CCA, the per-group series are bounded by `max_groups`, not by
    /// the number of distinct peer prefixes: 1000 flows to 1000 /24s of
    /// each of two CCAs give `max_groups` groups plus `other` per CCA; the
    /// kept ones are the fastest, `other` sums the rest, and the folded
    /// groups are counted per CCA.
    #[test]
    fn per_group_series_are_bounded_by_max_groups() {
        let mut flows = Vec::new();
        for g in 0..1000u32 {
            // Group g's single flow runs at (g + 1) kB/s: 999 is the fastest.
            flows.push(grouped(g as u64, Cca::Qfair, g, (g + 1) as f64 * 1e3));
            flows.push(grouped(10_000 + g as u64, Cca::Fairtt, g, 5e3));
        }
        let mut snap = snapshot_of(Cca::Qfair, 0, flows);
        snap.max_groups = 3;
        let text = expose(snap);
        let series = |family: &str| {
            text.lines()
                .filter(|l| l.starts_with(&format!("{family}{{")))
                .count()
        };
        for family in [
            "rttfair_group_active_flows",
            "rttfair_group_throughput_bytes_per_second",
            "rttfair_group_jain_index_ratio",
        ] {
            assert_eq!(series(family), 2 * (3 + 1), "{family}:\n{text}");
        }
        let has = |l: &str| text.lines().any(|x| x == l);
        for line in [
            "rttfair_group_throughput_bytes_per_second{cca=\"qfair\",group=\"10.3.231.0/24\"} 1000000.0",
            "rttfair_group_throughput_bytes_per_second{cca=\"qfair\",group=\"10.3.229.0/24\"} 998000.0",
            // 1 + 2 + ... + 997 kB/s.
            "rttfair_group_throughput_bytes_per_second{cca=\"qfair\",group=\"other\"} 497503000.0",
            "rttfair_group_active_flows{cca=\"qfair\",group=\"other\"} 997.0",
            // Ties keep the lowest labels.
            "rttfair_group_active_flows{cca=\"fairtt\",group=\"10.0.0.0/24\"} 1.0",
            "rttfair_group_active_flows{cca=\"fairtt\",group=\"10.0.1.0/24\"} 1.0",
            "rttfair_groups_folded{cca=\"qfair\"} 997.0",
            "rttfair_groups_folded{cca=\"fairtt\"} 997.0",
            "rttfair_active_flows{cca=\"qfair\"} 1000.0",
        ] {
            assert!(has(line), "missing {line}:\n{text}");
        }
        assert!(!text.contains("group=\"10.0.5.0/24\""), "{text}");
    }
}
