//! The Prometheus collector: reads the pinned maps at scrape time.
//!
//! Throughput per flow is derived from the delivered-bytes counter the CCA
//! exports, as the difference between two *exports* (delivered_bytes and
//! last_ns of the entry) seen at consecutive scrapes: the BPF side refreshes
//! entries at most once per round trip, so differencing on the export's own
//! timestamp is exact for the interval it covers, whereas differencing on
//! scrape time would smear a stale entry. This keeps the per-ACK path in BPF
//! free of any EWMA. A flow seen for the first time gets its average since
//! start. Jain's index is computed over the flows with a throughput sample.
//!
//! Every flow feeds the per-CCA histograms and per-group aggregates; only
//! the first `per_flow` flows by throughput (see [`crate::config::PerFlow`])
//! get per-flow series, and the flows the cap leaves out are counted.
//!
//! Beside the project CCAs' own exports, and if `native_flows` is set,
//! connections on kernel CCAs in the daemon's network namespace (cubic,
//! native bbr) are read with a BPF socket iterator (`rttfair_loader::sockets`)
//! and exported with what their CCA knows, so a migration or a
//! native-vs-rttfair comparison shows in one place.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use rttfair_loader::abi::maps;
use rttfair_loader::flows::FlowReader;
use rttfair_loader::sockets::SocketReader;
use rttfair_loader::{lifecycle, BpfFs, Cca, Flow};

use crate::config::PerFlow;
use crate::labels::FlowLabels;
use crate::snapshot::{FlowSample, Kind, Snapshot};

/// Per-flow memory between scrapes.
#[derive(Debug, Clone, Copy)]
struct Seen {
    delivered: u64,
    last_ns: u64,
    rate: f64,
}

/// Reads the installation's maps on every scrape.
#[derive(Debug)]
pub struct FlowCollector {
    fs: BpfFs,
    /// Flows with per-flow series at most: `per_flow` bounded by `max_flows`.
    per_flow_limit: usize,
    /// Whether per-flow series are on at all (off is not a cap: nothing
    /// is counted as omitted).
    per_flow_on: bool,
    prefix_v4: u8,
    prefix_v6: u8,
    native_flows: bool,
    /// Per CCA, destination groups with their own series (`max_groups`).
    max_groups: usize,
    state: Mutex<State>,
    /// How peer addresses and groups are labelled (config `peer_addresses`).
    peer: crate::peer::PeerLabels,
}

#[derive(Debug, Default)]
struct State {
    reader: Option<ReaderBox>,
    /// The socket iterator for flows on kernel CCAs; opened on the first
    /// scrape, `Err` (with why) if it cannot be loaded.
    native: Option<Result<NativeBox, String>>,
    /// Keyed by (is a native socket, id or cookie): the id spaces differ.
    seen: HashMap<(bool, u64), Seen>,
    last_scrape_seconds: f64,
}

/// FlowReader is not Debug; this wrapper is.
struct ReaderBox(FlowReader);

/// SocketReader is not Debug; this wrapper is.
struct NativeBox(SocketReader);

impl std::fmt::Debug for NativeBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SocketReader")
    }
}

impl std::fmt::Debug for ReaderBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlowReader")
    }
}

impl FlowCollector {
    /// `native_flows`: also export connections on kernel CCAs (cubic,
    /// native bbr) of the daemon's network namespace.
    pub fn new(
        fs: BpfFs,
        per_flow: PerFlow,
        max_flows: usize,
        prefix_v4: u8,
        prefix_v6: u8,
        native_flows: bool,
    ) -> Self {
        FlowCollector {
            fs,
            native_flows,
            max_groups: crate::config::DEFAULT_MAX_GROUPS,
            per_flow_limit: per_flow.limit(max_flows),
            per_flow_on: per_flow != PerFlow::Off,
            prefix_v4,
            prefix_v6,
            state: Mutex::new(State::default()),
            peer: Default::default(),
        }
    }

    /// Give at most `n` destination groups per CCA their own series
    /// (default [`crate::config::DEFAULT_MAX_GROUPS`]).
    pub fn with_max_groups(mut self, n: usize) -> Self {
        self.max_groups = n;
        self
    }

    /// Render peer addresses and groups with `peer` (default: as they are).
    pub fn with_peer_labels(mut self, peer: crate::peer::PeerLabels) -> Self {
        self.peer = peer;
        self
    }

    /// Whether the maps can be read (for /readyz): not when the loaded
    /// CCAs are of another build's ABI, whose maps this build cannot read
    /// (it would export no flows while they run).
    pub fn healthy(&self) -> Result<(), String> {
        if !self.fs.exists() {
            return Ok(()); // nothing loaded yet is a valid state
        }
        rttfair_loader::installed::check(&self.fs).map_err(|e| e.to_string())?;
        // Open the maps and read one value, not every flow: a probe every
        // few seconds must not cost a refresh.
        match FlowReader::open(&self.fs) {
            Ok(r) => r.counters(Cca::Bbr1).map(|_| ()).map_err(|e| e.to_string()),
            Err(rttfair_loader::Error::NothingLoaded { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Append the connections on kernel CCAs, if enabled; say why not if
    /// they cannot be read (the iterator is loaded on first use).
    fn read_native(&self, st: &mut State, into: &mut Vec<(Flow, Kind)>) -> Result<(), String> {
        if !self.native_flows {
            return Err("disabled (native_flows = false)".into());
        }
        let reader = st.native.get_or_insert_with(|| {
            SocketReader::open()
                .map(NativeBox)
                .map_err(|e| e.to_string())
        });
        let NativeBox(r) = reader.as_ref().map_err(|e| e.clone())?;
        let socks = r.read().map_err(|e| e.to_string())?;
        into.extend(socks.into_iter().map(|s| {
            let model = s.has_bbr_model();
            (s.flow, Kind::Native { cca: s.cca, model })
        }));
        Ok(())
    }

    /// Read the maps (and kernel-CCA sockets) into one scrape's data.
    pub fn snapshot(&self) -> Snapshot {
        let t0 = Instant::now();
        let mut st = self.state.lock().unwrap();
        // (Re)open the maps lazily: they may appear after the daemon starts,
        // and be replaced if every CCA was unloaded and loaded again.
        let pinned = self.fs.map_pin(maps::FLOWS).exists();
        if !pinned {
            st.reader = None;
        } else if st.reader.is_none() {
            st.reader = FlowReader::open(&self.fs).ok().map(ReaderBox);
        }
        let (mut all, counters, capacity) = match &st.reader {
            Some(ReaderBox(r)) => {
                let t = Instant::now();
                let flows = r.flows().unwrap_or_default();
                tracing::debug!(
                    entries = flows.len(),
                    map_read_ms = t.elapsed().as_secs_f64() * 1e3,
                    "read flows map"
                );
                let counters = Cca::ALL
                    .iter()
                    .map(|c| (*c, r.counters(*c).unwrap_or_default()))
                    .collect();
                (flows, counters, r.capacity())
            }
            None => (Vec::new(), Vec::new(), 0),
        };
        all.sort_by_key(|f| f.id);
        let mut all: Vec<(Flow, Kind)> = all.into_iter().map(|f| (f, Kind::Project)).collect();
        let native_readable = self.read_native(&mut st, &mut all);
        let flows = self.rate_and_label(&mut st, all);
        let (per_flow, omitted) = self.cap(flows.len());
        let previous = st.last_scrape_seconds;
        let loaded: Vec<(Cca, bool)> = Cca::ALL
            .iter()
            .map(|c| (*c, lifecycle::is_loaded(*c, &self.fs)))
            .collect();
        // What /readyz says, from what this refresh already read: the loaded
        // CCAs are of this build's ABI, and pinned maps opened.
        let registered: Vec<Cca> = loaded.iter().filter(|(_, l)| *l).map(|(c, _)| *c).collect();
        let ready = rttfair_loader::installed::loaded_ccas_check(&self.fs, &registered).is_ok()
            && (!pinned || st.reader.is_some());
        st.last_scrape_seconds = t0.elapsed().as_secs_f64();
        Snapshot {
            flows,
            per_flow,
            native_readable,
            omitted,
            counters,
            loaded,
            capacity,
            maps_present: pinned,
            ready,
            previous_scrape_seconds: previous,
            max_groups: self.max_groups,
        }
    }

    /// Of `n` flows read: how many get per-flow series, and how many the
    /// cap denies them (none while per-flow series are off: that is not a
    /// cap dropping series, it is the setting).
    fn cap(&self, n: usize) -> (usize, usize) {
        let per_flow = n.min(self.per_flow_limit);
        let omitted = if self.per_flow_on { n - per_flow } else { 0 };
        (per_flow, omitted)
    }

    /// Each flow's throughput from consecutive exports, in export order
    /// (highest throughput first, ties by kind and id), the first
    /// `per_flow_limit` with their labels. A flow seen for the first time
    /// gets its average since start; closed flows are forgotten here.
    fn rate_and_label(&self, st: &mut State, all: Vec<(Flow, Kind)>) -> Vec<FlowSample> {
        let mut seen = HashMap::with_capacity(all.len());
        let mut rated = Vec::with_capacity(all.len());
        for (f, kind) in all {
            let key = (matches!(kind, Kind::Native { .. }), f.id);
            let (delivered, last_ns) = (f.delivered_bytes, f.exported_at.as_nanos() as u64);
            let rate = match st.seen.get(&key) {
                Some(prev) if last_ns > prev.last_ns => {
                    delivered.saturating_sub(prev.delivered) as f64 * 1e9
                        / (last_ns - prev.last_ns) as f64
                }
                Some(prev) => prev.rate,
                // A project flow's export knows when it started; a socket
                // read by the iterator does not, so it waits for a second read.
                None if !f.age().is_zero() => delivered as f64 / f.age().as_secs_f64(),
                None => 0.0,
            };
            seen.insert(
                key,
                Seen {
                    delivered,
                    last_ns,
                    rate,
                },
            );
            rated.push((f, kind, rate));
        }
        st.seen = seen;
        let key = |(f, k, _): &(Flow, Kind, f64)| (matches!(k, Kind::Native { .. }), f.id);
        rated.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| key(a).cmp(&key(b))));
        rated
            .into_iter()
            .enumerate()
            .map(|(i, (f, kind, rate))| self.sample(f, rate, kind, i < self.per_flow_limit))
            .collect()
    }

    /// A flow with its labels. Per-flow series carry only `cca` and `flow`
    /// (the id `rttfairctl flows` shows); the 4-tuple, group and netns live
    /// once per flow in `rttfair_flow_info`. Putting the tuple on every
    /// sample made a 10k-flow scrape 25 MB.
    /// `labelled`: whether it gets per-flow series (else no label text).
    fn sample(&self, flow: Flow, rate: f64, kind: Kind, labelled: bool) -> FlowSample {
        let cca = match &kind {
            Kind::Project => flow.cca_name().to_string(),
            Kind::Native { cca, .. } => cca.clone(),
        };
        let labels = match &kind {
            _ if !labelled => FlowLabels::default(),
            Kind::Project => FlowLabels::new(&cca, format_args!("{}", flow.id)),
            // Cookies and rttfair ids are separate counters: a prefix keeps
            // the flow label unique across both.
            Kind::Native { .. } => FlowLabels::new(&cca, format_args!("sk{}", flow.id)),
        };
        // Only `rttfair_flow_info` of a flow with per-flow series shows the
        // peer: formatting (or hashing) 10k addresses nobody reads is skipped.
        let (peer_addr, peer_port) = if labelled {
            self.peer.address(flow.peer)
        } else {
            (String::new(), String::new())
        };
        FlowSample {
            group: self.peer.group(self.group_of(flow.peer.ip())),
            peer_addr,
            peer_port,
            flow,
            rate,
            kind,
            cca,
            labels,
        }
    }

    fn group_of(&self, ip: IpAddr) -> String {
        match ip {
            IpAddr::V4(a) => {
                let bits = self.prefix_v4 as u32;
                let mask = if bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - bits)
                };
                format!("{}/{}", std::net::Ipv4Addr::from(u32::from(a) & mask), bits)
            }
            IpAddr::V6(a) => {
                if let Some(v4) = a.to_ipv4_mapped() {
                    return self.group_of(IpAddr::V4(v4));
                }
                let bits = self.prefix_v6 as u32;
                let mask = if bits == 0 {
                    0
                } else {
                    u128::MAX << (128 - bits)
                };
                format!(
                    "{}/{}",
                    std::net::Ipv6Addr::from(u128::from(a) & mask),
                    bits
                )
            }
        }
    }
}

impl FlowCollector {
    /// Read the maps and write the whole exposition into `out`. The two
    /// phases are timed at debug level (`RUST_LOG=rttfair_daemon=debug`):
    /// reading the maps into a snapshot, and writing it as text.
    pub fn encode(&self, out: &mut String) -> Result<(), std::fmt::Error> {
        let t0 = Instant::now();
        let snap = self.snapshot();
        let flows = snap.flows.len();
        let t1 = Instant::now();
        let r = crate::encode::exposition(out, snap);
        tracing::debug!(
            flows,
            snapshot_ms = (t1 - t0).as_secs_f64() * 1e3,
            encode_ms = t1.elapsed().as_secs_f64() * 1e3,
            "collected"
        );
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no installation (no pinned maps), a scrape still renders, says so,
    /// and unlabelled samples are written bare (`name value`, not `name{}`).
    #[test]
    fn scrape_without_maps_reports_absence_with_bare_samples() {
        // A root that does not exist, inside a folder removed on drop.
        let tmp = tempfile::Builder::new()
            .prefix("rttfair-collector-test-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().join("bpffs");
        let collector = FlowCollector::new(BpfFs::new(&dir), PerFlow::All, 100, 24, 64, false);
        let mut text = String::new();
        collector.encode(&mut text).unwrap();
        assert!(
            text.lines().any(|l| l == "rttfair_maps_present 0.0"),
            "{text}"
        );
        // Nothing loaded is a valid state: ready.
        assert!(text.lines().any(|l| l == "rttfair_ready 1.0"), "{text}");
        assert!(
            text.lines().any(|l| l == "rttfair_flows_exported 0.0"),
            "{text}"
        );
        assert!(!text.contains("{}"), "{text}");
        // One exposition, one end, though encoded in runs.
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        // The build and the process are there without any flow.
        let build = format!(
            "rttfair_build_info{{version=\"{}\",commit=\"{}\",abi=\"{}\"}} 1.0",
            env!("CARGO_PKG_VERSION"),
            env!("RTTFAIR_BUILD_COMMIT"),
            rttfair_loader::abi::ABI_VERSION
        );
        assert!(text.lines().any(|l| l == build), "{build}:\n{text}");
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_open_fds ",
            "process_start_time_seconds ",
        ] {
            assert!(text.lines().any(|l| l.starts_with(name)), "{name}:\n{text}");
        }
    }

    fn flow(id: u64, delivered: u64) -> (Flow, Kind) {
        let f = Flow {
            id,
            cca: Some(Cca::Fairtt),
            delivered_bytes: delivered,
            started_at: std::time::Duration::from_secs(1),
            exported_at: std::time::Duration::from_secs(2),
            ..Flow::default()
        };
        (f, Kind::Project)
    }

    fn collector(per_flow: PerFlow) -> FlowCollector {
        FlowCollector::new(BpfFs::new("/nonexistent"), per_flow, 100, 24, 64, false)
    }

    /// top:N gives per-flow labels to the N fastest flows (ties: lowest id)
    /// and keeps every flow for the aggregates.
    #[test]
    fn top_n_labels_the_fastest_flows_and_keeps_all() {
        let c = collector(PerFlow::Top(2));
        let mut st = State::default();
        let all = vec![flow(1, 100), flow(2, 300), flow(3, 200), flow(4, 300)];
        let out = c.rate_and_label(&mut st, all);
        let ids: Vec<u64> = out.iter().map(|s| s.flow.id).collect();
        assert_eq!(ids, [2, 4, 3, 1]);
        let labelled: Vec<bool> = out
            .iter()
            .map(|s| s.labels != FlowLabels::default())
            .collect();
        assert_eq!(labelled, [true, true, false, false]);
    }

    /// The flows the cap leaves out are counted; with per_flow off nothing
    /// is a cap, so nothing is counted.
    #[test]
    fn the_cap_counts_omitted_flows_and_off_counts_none() {
        for (per_flow, want) in [
            (PerFlow::Top(1), (1, 2)),
            (PerFlow::Top(5), (3, 0)),
            (PerFlow::All, (3, 0)),
            (PerFlow::Off, (0, 0)),
        ] {
            assert_eq!(collector(per_flow).cap(3), want, "{per_flow:?}");
        }
        // max_flows (100) bounds "all" too.
        assert_eq!(collector(PerFlow::All).cap(150), (100, 50));
    }
}
