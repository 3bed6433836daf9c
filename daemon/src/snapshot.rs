//! One scrape's worth of data, read and labelled before anything is encoded:
//! what the family table ([`crate::families`]) reads its values from.

use std::collections::BTreeMap;

use rttfair_loader::export::Counters;
use rttfair_loader::{Cca, Flow};

use crate::labels::FlowLabels;

/// Whose flow an exported entry is.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A project CCA's own export.
    Project,
    /// A connection on a kernel CCA; `model` when the CCA is native bbr,
    /// whose BtlBw, RTprop, mode and gains were read from its state.
    Native { cca: String, model: bool },
}

/// One flow of a scrape.
#[derive(Debug)]
pub struct FlowSample {
    pub flow: Flow,
    /// Delivery rate between the flow's two latest exports seen, bytes/s.
    pub rate: f64,
    pub kind: Kind,
    /// The `cca` label: the project CCA's name, or the kernel CCA's.
    pub cca: String,
    /// The destination group (the peer's prefix, as configured), rendered
    /// as `peer_addresses` says.
    pub group: String,
    /// The `peer_addr` and `peer_port` label values (`peer_addresses`);
    /// empty, like `labels`, for a flow without per-flow series.
    pub peer_addr: String,
    pub peer_port: String,
    /// `cca` and `flow`, rendered once for every family of the flow; empty
    /// for a flow without per-flow series (rendering 10k label sets nobody
    /// reads would cost more than the aggregates).
    pub labels: FlowLabels,
}

impl FlowSample {
    /// A project CCA's own export.
    pub fn is_project(&self) -> bool {
        matches!(self.kind, Kind::Project)
    }

    /// Whether its CCA has a BBR model (project CCAs, native bbr).
    pub fn has_model(&self) -> bool {
        matches!(self.kind, Kind::Project | Kind::Native { model: true, .. })
    }
}

/// Everything one scrape exports.
#[derive(Debug)]
pub struct Snapshot {
    /// Every flow read, in the order per-flow series are granted: highest
    /// throughput first, ties by flow id. The aggregates cover all of them.
    pub flows: Vec<FlowSample>,
    /// How many of `flows`, from the front, get per-flow series.
    pub per_flow: usize,
    /// Whether kernel-CCA connections could be read, and why not.
    pub native_readable: Result<(), String>,
    /// Flows the per-flow cap denied series in this refresh.
    pub omitted: usize,
    pub counters: Vec<(Cca, Counters)>,
    pub loaded: Vec<(Cca, bool)>,
    pub capacity: u32,
    pub maps_present: bool,
    /// What /readyz answers, as far as this refresh can tell: the loaded
    /// CCAs are of this build's ABI and the pinned maps opened.
    pub ready: bool,
    pub previous_scrape_seconds: f64,
    /// Destination groups per CCA with their own series (config
    /// `max_groups`); the rest are summed into [`OTHER_GROUP`].
    pub max_groups: usize,
}

/// The `group` label of the flows whose destination groups are beyond a
/// CCA's `max_groups` fastest: no prefix (`a.b.c.d/n`), hash (`h...`) or the
/// empty label of `peer_addresses = "dropped"` can take this value.
pub const OTHER_GROUP: &str = "other";

/// Per-flow throughputs of the flows with a sample, grouped the two ways
/// the fairness families aggregate them. `per_group` has at most
/// `max_groups + 1` entries per CCA, whatever the number of distinct peer
/// prefixes: the fastest `max_groups` groups and [`OTHER_GROUP`].
#[derive(Debug, Default)]
pub struct Throughputs {
    pub per_cca: BTreeMap<String, CcaRates>,
    pub per_group: BTreeMap<(String, String), Vec<f64>>,
}

/// One CCA's active flows, for the per-CCA families.
#[derive(Debug, Default)]
pub struct CcaRates {
    /// Throughput of each of its flows with a sample.
    pub rates: Vec<f64>,
    /// How many of its destination groups were summed into [`OTHER_GROUP`].
    pub groups_folded: usize,
}

impl Snapshot {
    /// The flows that get per-flow series.
    pub fn exported(&self) -> &[FlowSample] {
        &self.flows[..self.per_flow.min(self.flows.len())]
    }

    /// The inputs of the fairness families: per CCA, its `max_groups`
    /// groups with the highest summed throughput (ties: lowest label) keep
    /// their own series and the others are summed into [`OTHER_GROUP`], so
    /// the series count does not grow with the number of peer prefixes.
    pub fn throughputs(&self) -> Throughputs {
        let mut t = Throughputs::default();
        let mut groups: BTreeMap<&str, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
        for s in self.flows.iter().filter(|s| s.rate > 0.0) {
            t.per_cca
                .entry(s.cca.clone())
                .or_default()
                .rates
                .push(s.rate);
            groups
                .entry(&s.cca)
                .or_default()
                .entry(&s.group)
                .or_default()
                .push(s.rate);
        }
        for (cca, by_group) in groups {
            // Each group's sum once, not per comparison (this runs per scrape).
            let mut ranked: Vec<(&str, Vec<f64>, f64)> = by_group
                .into_iter()
                .map(|(g, v)| {
                    let total = v.iter().sum::<f64>();
                    (g, v, total)
                })
                .collect();
            // Stable sort over the BTreeMap's label order: ties keep it.
            ranked.sort_by(|a, b| b.2.total_cmp(&a.2));
            let folded = ranked.split_off(ranked.len().min(self.max_groups));
            if !folded.is_empty() {
                t.per_cca.get_mut(cca).expect("counted above").groups_folded = folded.len();
                let other = folded.into_iter().flat_map(|(_, v, _)| v).collect();
                t.per_group
                    .insert((cca.to_string(), OTHER_GROUP.to_string()), other);
            }
            for (group, rates, _) in ranked {
                t.per_group
                    .insert((cca.to_string(), group.to_string()), rates);
            }
        }
        t
    }
}
