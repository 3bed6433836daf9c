//! Writing a [`Snapshot`] as OpenMetrics text, family by family, as the
//! table in [`crate::families`] says.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder};
use prometheus_client::metrics::MetricType;

use crate::families::{Family, Source, FAMILIES};
use crate::labels::FlowLabels;
use crate::snapshot::{Snapshot, Throughputs};

type Labels = Vec<(&'static str, String)>;

/// Encode every family of the table.
pub fn snapshot(enc: &mut DescriptorEncoder, snap: &Snapshot) -> Result<(), std::fmt::Error> {
    let throughputs = snap.throughputs();
    for f in FAMILIES {
        family(enc, f, snap, &throughputs)?;
    }
    Ok(())
}

fn family(
    enc: &mut DescriptorEncoder,
    f: &Family,
    snap: &Snapshot,
    t: &Throughputs,
) -> Result<(), std::fmt::Error> {
    match &f.source {
        Source::FlowInfo => samples(enc, f, &info(snap)),
        Source::Flow(covers, value) => {
            let v: Vec<(&FlowLabels, f64)> = snap
                .flows
                .iter()
                .filter(|s| covers.includes(s))
                .filter_map(|s| value(s).map(|x| (&s.labels, x)))
                .collect();
            samples(enc, f, &v)
        }
        Source::FlowState(covers, label, state) => {
            let v: Vec<(FlowLabels, f64)> = snap
                .flows
                .iter()
                .filter(|s| covers.includes(s))
                .filter_map(|s| {
                    state(&s.flow).map(|st| (s.labels.with(format_args!(",{label}=\"{st}\"")), 1.0))
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
    }
}

/// `rttfair_flow_info`: the identity of every flow, once.
fn info(snap: &Snapshot) -> Vec<(FlowLabels, f64)> {
    snap.flows
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
    let mut m = enc.encode_descriptor(f.name, f.help, None, f.ty)?;
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
        &mut enc.encode_descriptor(f.name, f.help, None, f.ty)?,
        f.ty,
        v,
    )
}

fn value(e: &mut MetricEncoder, ty: MetricType, v: f64) -> Result<(), std::fmt::Error> {
    match ty {
        MetricType::Counter => e.encode_counter::<(), _, f64>(&v, None),
        _ => e.encode_gauge(&v),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::collector::Collector;
    use rttfair_loader::export::{CcaState, Qfair};
    use rttfair_loader::{Cca, Flow};

    use super::*;
    use crate::snapshot::{FlowSample, Kind};

    struct One(Snapshot);

    impl std::fmt::Debug for One {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("One")
        }
    }

    impl Collector for One {
        fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            snapshot(&mut enc, &self.0)
        }
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
                qdelay: Duration::from_millis(2),
                drains_ok: 4,
                ..Qfair::default()
            }),
            ..Flow::default()
        };
        let snap = Snapshot {
            flows: vec![FlowSample {
                flow,
                rate: 1e6,
                kind: Kind::Project,
                cca: "qfair".into(),
                group: "10.20.0.0/24".into(),
                peer_addr: "10.20.0.9".into(),
                peer_port: "5201".into(),
                labels: FlowLabels::new("qfair", format_args!("9")),
            }],
            native_readable: Err("disabled".into()),
            omitted: 0,
            omitted_total: 0,
            counters: vec![],
            loaded: vec![(Cca::Qfair, true)],
            capacity: 1024,
            maps_present: true,
            previous_scrape_seconds: 0.0,
        };
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(One(snap)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let has = |l: &str| text.lines().any(|x| x == l);
        assert!(
            has("rttfair_qfair_alpha_packets{cca=\"qfair\",flow=\"9\"} 3.0"),
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
}
