//! Every metric family the daemon exports, as data: one table ([`FAMILIES`])
//! of name, help, unit, type and how to read the value from a flow or from
//! the scrape's aggregates. Registration order, encoding ([`crate::encode`])
//! and the reference in `docs/metrics.md` ([`reference`]) all come from it,
//! so a new family is one entry and the docs cannot drift (a unit test
//! compares the file with the generated text). The families of the flows'
//! own fields are the loader's field table ([`rttfair_loader::fields`]),
//! one family per field with a metric: a new field is a row there.

use std::sync::LazyLock;

use rttfair_loader::export::Counters;
use rttfair_loader::fields::{Field, Of, Unit, FIELDS};

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

impl From<Of> for Covers {
    /// A CCA's own fields are of the project CCAs' flows.
    fn from(of: Of) -> Covers {
        match of {
            Of::Every => Covers::All,
            Of::Model => Covers::Model,
            Of::Project | Of::Fairtt | Of::Adbbr | Of::Qfair | Of::Bbr3 => Covers::Project,
        }
    }
}

/// Where a family's samples come from.
#[derive(Clone, Copy)]
pub enum Source {
    /// One series per flow: 1, with the 4-tuple, destination group and
    /// netns as labels (joined to the other families on `flow` in PromQL).
    FlowInfo,
    /// One series per covered flow for which `value` gives a number.
    Flow(Covers, fn(&FlowSample) -> Option<f64>),
    /// A field of the flow (the loader's table): one series per flow the
    /// field's [`Of`] covers and that has a value. A [`Unit::State`] field's
    /// series carry an extra label, the field's key, holding the flow's
    /// current state, value 1 (not a state set: one line per flow).
    Field(&'static Field),
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
            Source::Field(f) if f.unit == Unit::State => format!("cca, flow, {}", f.key),
            Source::Field(_) => "cca, flow".into(),
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
            Source::Flow(c, _) => c.doc().into(),
            Source::Field(f) => Covers::from(f.of).doc().into(),
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
#[derive(Clone)]
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

/// Every family, in exposition order: [`PER_FLOW`], a family per field of
/// the loader's table that has a metric, then [`AGGREGATES`].
pub static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| {
    let fields = FIELDS.iter().filter_map(|f| {
        let m = f.metric?;
        Some(Family {
            name: m.name,
            help: f.help,
            unit: f.unit.name(),
            ty: if m.counter { Counter } else { Gauge },
            source: Source::Field(f),
        })
    });
    PER_FLOW
        .iter()
        .cloned()
        .chain(fields)
        .chain(AGGREGATES.iter().cloned())
        .collect()
});

/// The per-flow families that are not a field of the flow.
#[rustfmt::skip]
static PER_FLOW: &[Family] = &[
    Family { name: "rttfair_flow_info", help: "Identity of an exported flow (always 1): 4-tuple, destination group and network namespace inode, keyed by flow", unit: "", ty: Gauge, source: Source::FlowInfo },
    Family { name: "rttfair_flow_throughput_bytes_per_second", help: "Delivery rate of the flow between its two latest exports seen by scrapes", unit: "bytes/s", ty: Gauge, source: Source::Flow(Covers::All, |s| Some(s.rate)) },
];

/// The families over many flows, the CCAs' counters, the host and the
/// daemon.
#[rustfmt::skip]
static AGGREGATES: &[Family] = &[
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
    for f in FAMILIES.iter() {
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
        for f in FAMILIES.iter() {
            if matches!(f.source, Source::Host(_)) {
                assert_eq!(f.ty, Type::Gauge, "{}", f.name);
            }
        }
    }

    /// The per-CCA distributions are of the flows there now: typed as
    /// gauge histograms, and only they are.
    #[test]
    fn distributions_are_gauge_histograms() {
        for f in FAMILIES.iter() {
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
