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
            let (l, p) = (s.flow.local, s.flow.peer);
            let more = format_args!(
                ",local_addr=\"{}\",local_port=\"{}\",peer_addr=\"{}\",peer_port=\"{}\",group=\"{}\",netns=\"{}\"",
                l.ip(),
                l.port(),
                p.ip(),
                p.port(),
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
