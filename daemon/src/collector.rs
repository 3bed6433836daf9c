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
//! Beside the project CCAs' own exports, and if `native_flows` is set,
//! connections on kernel CCAs in the daemon's network namespace (cubic,
//! native bbr) are read with a BPF socket iterator (`rttfair_loader::sockets`)
//! and exported with what their CCA knows, so a migration or a
//! native-vs-rttfair comparison shows in one place.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::MetricType;
use rttfair_loader::flows::{self, Flow, FlowReader};
use rttfair_loader::sockets::SocketReader;
use rttfair_loader::{lifecycle, BpfFs, Cca};

type Labels = Vec<(&'static str, String)>;

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
    max_flows: usize,
    prefix_v4: u8,
    prefix_v6: u8,
    native_flows: bool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    reader: Option<ReaderBox>,
    /// The socket iterator for flows on kernel CCAs; opened on the first
    /// scrape, `Err` (with why) if it cannot be loaded.
    native: Option<Result<NativeBox, String>>,
    /// Keyed by (is a native socket, id or cookie): the id spaces differ.
    seen: HashMap<(bool, u64), Seen>,
    omitted_total: u64,
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

/// Whose flow an exported entry is.
#[derive(Debug, Clone)]
enum Kind {
    /// A project CCA's own export (bbr1, fairtt, adbbr).
    Project,
    /// A connection on a kernel CCA; `model` when the CCA is native bbr,
    /// whose BtlBw, RTprop, mode and gains were read from its state.
    Native { cca: String, model: bool },
}

impl std::fmt::Debug for ReaderBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlowReader")
    }
}

/// One scrape's worth of data, computed before anything is encoded.
struct Snapshot {
    flows: Vec<(Flow, f64)>,
    /// Parallel to `flows`.
    kinds: Vec<Kind>,
    /// Whether kernel-CCA connections could be read, and why not.
    native_readable: Result<(), String>,
    omitted: usize,
    omitted_total: u64,
    counters: Vec<(Cca, rttfair_loader::abi::RawCounters)>,
    loaded: Vec<(Cca, bool)>,
    capacity: u32,
    maps_present: bool,
    previous_scrape_seconds: f64,
}

impl FlowCollector {
    /// `native_flows`: also export connections on kernel CCAs (cubic,
    /// native bbr) of the daemon's network namespace.
    pub fn new(
        fs: BpfFs,
        max_flows: usize,
        prefix_v4: u8,
        prefix_v6: u8,
        native_flows: bool,
    ) -> Self {
        FlowCollector {
            fs,
            native_flows,
            max_flows,
            prefix_v4,
            prefix_v6,
            state: Mutex::new(State::default()),
        }
    }

    /// Whether the maps can be read (for /healthz).
    pub fn healthy(&self) -> Result<(), String> {
        if !self.fs.exists() {
            return Ok(()); // nothing loaded yet is a valid state
        }
        match FlowReader::open(&self.fs) {
            Ok(r) => r.flows().map(|_| ()).map_err(|e| e.to_string()),
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
            (s.as_flow(), Kind::Native { cca: s.cca, model })
        }));
        Ok(())
    }

    fn snapshot(&self) -> Snapshot {
        let t0 = Instant::now();
        let mut st = self.state.lock().unwrap();
        // (Re)open the maps lazily: they may appear after the daemon starts,
        // and be replaced if every CCA was unloaded and loaded again.
        let pinned = self.fs.map_pin(lifecycle::FLOWS_MAP).exists();
        if !pinned {
            st.reader = None;
        } else if st.reader.is_none() {
            st.reader = FlowReader::open(&self.fs).ok().map(ReaderBox);
        }
        let (mut all, counters, capacity) = match &st.reader {
            Some(ReaderBox(r)) => {
                let flows = r.flows().unwrap_or_default();
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
        // Throughput from consecutive exports.
        let mut seen = HashMap::with_capacity(all.len());
        let mut flows = Vec::with_capacity(all.len().min(self.max_flows));
        let mut kinds = Vec::with_capacity(flows.capacity());
        let omitted = all.len().saturating_sub(self.max_flows);
        for (f, kind) in all {
            let r = &f.raw;
            let key = (matches!(kind, Kind::Native { .. }), f.id);
            let rate = match st.seen.get(&key) {
                Some(prev) if r.last_ns > prev.last_ns => {
                    r.delivered_bytes.saturating_sub(prev.delivered) as f64 * 1e9
                        / (r.last_ns - prev.last_ns) as f64
                }
                Some(prev) => prev.rate,
                // A project flow's export knows when it started; a socket
                // read by the iterator does not, so it waits for a second read.
                None if r.first_ns > 0 && r.last_ns > r.first_ns => {
                    r.delivered_bytes as f64 * 1e9 / (r.last_ns - r.first_ns) as f64
                }
                None => 0.0,
            };
            seen.insert(
                key,
                Seen {
                    delivered: r.delivered_bytes,
                    last_ns: r.last_ns,
                    rate,
                },
            );
            if flows.len() < self.max_flows {
                flows.push((f, rate));
                kinds.push(kind);
            }
        }
        st.seen = seen; // closed flows are forgotten here
        st.omitted_total += omitted as u64;
        let previous = st.last_scrape_seconds;
        st.last_scrape_seconds = t0.elapsed().as_secs_f64();
        Snapshot {
            flows,
            kinds,
            native_readable,
            omitted,
            omitted_total: st.omitted_total,
            counters,
            loaded: Cca::ALL
                .iter()
                .map(|c| (*c, lifecycle::is_loaded(*c, &self.fs)))
                .collect(),
            capacity,
            maps_present: pinned,
            previous_scrape_seconds: previous,
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

fn cca_name(f: &Flow) -> String {
    f.cca()
        .map(|c| c.name().to_string())
        .unwrap_or_else(|| format!("id{}", f.raw.cca))
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

/// Emit one family: name, help, type, and (labels, value) samples.
fn family<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    ty: MetricType,
    samples: &[(L, f64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, ty)?;
    for (labels, v) in samples {
        encode_value(&mut m.encode_family(labels)?, ty, *v)?;
    }
    Ok(())
}

/// Emit one family with a single unlabelled sample, written bare (`name
/// value`; an empty label set would print as `name{}`, legal but a trap for
/// grep and naive parsers).
fn single(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    ty: MetricType,
    v: f64,
) -> Result<(), std::fmt::Error> {
    encode_value(&mut enc.encode_descriptor(name, help, None, ty)?, ty, v)
}

/// A flow's `cca` and `flow` labels, rendered once per scrape as
/// `cca="fairtt",flow="123"` and written with one write per sample.
///
/// At 10k flows the per-flow families are ~180k samples, and encoding two
/// labels pair by pair (five writes each) was a quarter of the scrape. The
/// text encoder writes `{`, then whatever the label set writes, then `}`; the
/// rendered text goes through the first label's key writer, which passes
/// text through unchanged. The values are label-safe by construction (CCA
/// names and decimal ids), so nothing needs escaping.
struct FlowLabels(String);

impl FlowLabels {
    fn new(cca: &str, flow: std::fmt::Arguments) -> Self {
        use std::fmt::Write;
        let mut s = String::with_capacity(32);
        let _ = write!(s, "cca=\"{cca}\",flow=\"{flow}\"");
        FlowLabels(s)
    }

    /// These labels plus more, given as `,key="value"...` (label-safe).
    fn with(&self, more: std::fmt::Arguments) -> Self {
        use std::fmt::Write;
        let mut s = self.0.clone();
        let _ = s.write_fmt(more);
        FlowLabels(s)
    }
}

impl EncodeLabelSet for FlowLabels {
    fn encode(&self, mut encoder: LabelSetEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder
            .encode_label()
            .encode_label_key()?
            .write_str(&self.0)
    }
}

impl EncodeLabelSet for &FlowLabels {
    fn encode(&self, encoder: LabelSetEncoder) -> Result<(), std::fmt::Error> {
        (*self).encode(encoder)
    }
}

fn encode_value(
    e: &mut prometheus_client::encoding::MetricEncoder,
    ty: MetricType,
    v: f64,
) -> Result<(), std::fmt::Error> {
    match ty {
        MetricType::Counter => e.encode_counter::<(), _, f64>(&v, None),
        _ => e.encode_gauge(&v),
    }
}

impl Collector for FlowCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.snapshot();
        // Per-flow series carry only `cca` and `flow` (the id `rttfairctl
        // flows` shows); the 4-tuple, destination group and netns live once
        // per flow in `rttfair_flow_info`, to be joined in PromQL:
        //   rttfair_flow_min_rtt_seconds * on(flow) group_left(peer_addr)
        //     rttfair_flow_info
        // Putting the tuple on every sample made a 10k-flow scrape 25 MB.
        let ccas: Vec<String> = snap
            .flows
            .iter()
            .zip(&snap.kinds)
            .map(|((f, _), k)| match k {
                Kind::Project => cca_name(f),
                Kind::Native { cca, .. } => cca.clone(),
            })
            .collect();
        let groups: Vec<String> = snap
            .flows
            .iter()
            .map(|(f, _)| self.group_of(f.peer().ip()))
            .collect();
        let rendered: Vec<FlowLabels> = snap
            .flows
            .iter()
            .zip(&snap.kinds)
            .zip(&ccas)
            .map(|(((f, _), k), cca)| match k {
                Kind::Project => FlowLabels::new(cca, format_args!("{}", f.id)),
                // Cookies and rttfair ids are separate counters: a prefix
                // keeps the flow label unique across both.
                Kind::Native { .. } => FlowLabels::new(cca, format_args!("sk{}", f.id)),
            })
            .collect();
        let info: Vec<(FlowLabels, f64)> = snap
            .flows
            .iter()
            .zip(&rendered)
            .zip(&groups)
            .map(|(((f, _), id), group)| {
                let (l, p) = (f.local(), f.peer());
                let more = format_args!(
                    ",local_addr=\"{}\",local_port=\"{}\",peer_addr=\"{}\",peer_port=\"{}\",group=\"{group}\",netns=\"{}\"",
                    l.ip(),
                    l.port(),
                    p.ip(),
                    p.port(),
                    f.raw.netns_ino
                );
                (id.with(more), 1.0)
            })
            .collect();
        // Which flows a family covers: every flow, those with a BBR model
        // (project CCAs and native bbr), or the project CCAs' own only.
        let has_model = |k: &Kind| matches!(k, Kind::Project | Kind::Native { model: true, .. });
        let is_project = |k: &Kind| matches!(k, Kind::Project);
        let select = |keep: &dyn Fn(&Kind) -> bool,
                      get: &dyn Fn(&Flow, f64) -> Option<f64>|
         -> Vec<(&FlowLabels, f64)> {
            snap.flows
                .iter()
                .zip(&snap.kinds)
                .zip(&rendered)
                .filter(|((_, k), _)| keep(k))
                .filter_map(|(((f, rate), _), l)| get(f, *rate).map(|v| (l, v)))
                .collect()
        };
        let per_flow = |get: &dyn Fn(&Flow, f64) -> Option<f64>| select(&|_| true, get);
        let per_model = |get: &dyn Fn(&Flow, f64) -> Option<f64>| select(&has_model, get);
        let per_project = |get: &dyn Fn(&Flow, f64) -> Option<f64>| select(&is_project, get);
        use MetricType::{Counter, Gauge};
        let us = |v: u32| v as f64 / 1e6;
        family(
            &mut enc,
            "rttfair_flow_info",
            "Identity of an exported flow (always 1): 4-tuple, destination group and network namespace inode, keyed by flow",
            Gauge,
            &info,
        )?;
        family(
            &mut enc,
            "rttfair_flow_btlbw_bytes_per_second",
            "BBR bottleneck bandwidth estimate (windowed max delivery rate) of the flow",
            Gauge,
            &per_model(&|f, _| Some(f.raw.btlbw_bps as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_min_rtt_seconds",
            "Minimum RTT of the flow: BBR's RTprop estimate for rttfair's CCAs and native bbr, the kernel's windowed min RTT for other kernel CCAs",
            Gauge,
            &per_flow(&|f, _| Some(us(f.raw.min_rtt_us))),
        )?;
        family(
            &mut enc,
            "rttfair_flow_last_rtt_seconds",
            "RTT of the flow's latest rate sample",
            Gauge,
            &per_project(&|f, _| Some(us(f.raw.last_rtt_us))),
        )?;
        family(
            &mut enc,
            "rttfair_flow_smoothed_rtt_seconds",
            "Kernel smoothed RTT (srtt) of the flow",
            Gauge,
            &per_flow(&|f, _| Some(us(f.raw.srtt_us))),
        )?;
        family(
            &mut enc,
            "rttfair_flow_cwnd_segments",
            "Congestion window of the flow, in segments",
            Gauge,
            &per_flow(&|f, _| Some(f.raw.cwnd as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_pacing_rate_bytes_per_second",
            "Pacing rate of the flow",
            Gauge,
            &per_flow(&|f, _| Some(f.raw.pacing_rate_bps as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_pacing_gain_ratio",
            "BBR pacing gain in effect (1 = BtlBw)",
            Gauge,
            &per_model(&|f, _| Some(f.raw.pacing_gain_x256 as f64 / 256.0)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_cwnd_gain_ratio",
            "BBR cwnd gain in effect (x BDP)",
            Gauge,
            &per_model(&|f, _| Some(f.raw.cwnd_gain_x256 as f64 / 256.0)),
        )?;
        // One series per flow, labelled with the current mode (not a 4-line
        // state set: at 10k flows every line per flow costs ~1.5 MB a scrape).
        family(
            &mut enc,
            "rttfair_flow_mode",
            "BBR state of the flow: the series with the current mode label is 1",
            Gauge,
            &snap
                .flows
                .iter()
                .enumerate()
                .filter(|(i, _)| has_model(&snap.kinds[*i]))
                .map(|(i, (f, _))| {
                    (
                        rendered[i].with(format_args!(",mode=\"{}\"", f.mode())),
                        1.0,
                    )
                })
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut enc,
            "rttfair_flow_delivered_bytes",
            "Bytes the flow delivered (acknowledged)",
            Counter,
            &per_flow(&|f, _| Some(f.raw.delivered_bytes as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_retransmitted_bytes",
            "Bytes the flow retransmitted",
            Counter,
            &per_flow(&|f, _| Some(f.raw.retrans_bytes as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_probe_rtt_entries",
            "ProbeRTT entries of the flow",
            Counter,
            &per_project(&|f, _| Some(f.raw.probe_rtt_entries as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_flow_throughput_bytes_per_second",
            "Delivery rate of the flow between its two latest exports seen by scrapes",
            Gauge,
            &per_flow(&|_, r| Some(r)),
        )?;

        let is = |f: &Flow, c: Cca| f.cca() == Some(c);
        family(
            &mut enc,
            "rttfair_fairtt_alpha_seconds",
            "FaiRTT RTT fairness threshold alpha_t (Eq. 5)",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Fairtt).then(|| us(f.raw.fairtt_alpha_us))),
        )?;
        family(
            &mut enc,
            "rttfair_fairtt_bdp_coefficient_ratio",
            "FaiRTT BDP coefficient minRTT*gamma/lastRTT applied (1 = none)",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Fairtt).then(|| f.raw.fairtt_coef_x1024 as f64 / 1024.0)),
        )?;
        family(
            &mut enc,
            "rttfair_fairtt_wfcount",
            "FaiRTT Wfcount: distinct minRTT classes the flow saw active",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Fairtt).then_some(f.raw.fairtt_wfcount as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_fairtt_adjust_active",
            "1 while FaiRTT's BDP reduction applies to the flow",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Fairtt).then_some(f.raw.fairtt_active as f64)),
        )?;
        family(
            &mut enc,
            "rttfair_adbbr_nrtt_seconds",
            "Ad-BBR reference RTT nRTT (Alg. 1)",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Adbbr).then(|| us(f.raw.adbbr_nrtt_us))),
        )?;
        family(
            &mut enc,
            "rttfair_adbbr_pacing_factor_ratio",
            "Ad-BBR pacing factor applied (1 = none; 1/beta or gamma)",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Adbbr).then(|| f.raw.adbbr_factor_x1024 as f64 / 1024.0)),
        )?;
        family(
            &mut enc,
            "rttfair_adbbr_rtt_stddev_seconds",
            "Ad-BBR standard deviation of the RTT history (Alg. 3)",
            Gauge,
            &per_flow(&|f, _| is(f, Cca::Adbbr).then(|| us(f.raw.adbbr_rtt_std_us))),
        )?;
        family(
            &mut enc,
            "rttfair_adbbr_regime",
            "Ad-BBR rate regulation regime (Alg. 2): the series with the current regime label is 1",
            Gauge,
            &snap
                .flows
                .iter()
                .enumerate()
                .filter(|(_, (f, _))| is(f, Cca::Adbbr))
                .map(|(i, (f, _))| {
                    let regime = flows::regime_name(f.raw.adbbr_regime);
                    (rendered[i].with(format_args!(",regime=\"{regime}\"")), 1.0)
                })
                .collect::<Vec<_>>(),
        )?;

        // Host level.
        let by_cca =
            |get: &dyn Fn(&rttfair_loader::abi::RawCounters) -> f64| -> Vec<(Labels, f64)> {
                snap.counters
                    .iter()
                    .map(|(c, k)| (vec![("cca", c.name().to_string())], get(k)))
                    .collect()
            };
        family(
            &mut enc,
            "rttfair_cca_loaded",
            "1 if the CCA is registered by this installation",
            Gauge,
            &snap
                .loaded
                .iter()
                .map(|(c, l)| (vec![("cca", c.name().to_string())], *l as u8 as f64))
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut enc,
            "rttfair_sockets",
            "Sockets currently using the CCA (init minus release)",
            Gauge,
            &by_cca(&|k| k.flows_started.saturating_sub(k.flows_released) as f64),
        )?;
        family(
            &mut enc,
            "rttfair_flows_started",
            "Flows the CCA initialised",
            Counter,
            &by_cca(&|k| k.flows_started as f64),
        )?;
        family(&mut enc, "rttfair_export_failed", "Flows that could not get a per-flow export entry (map full); they are still controlled", Counter, &by_cca(&|k| k.export_failed as f64))?;
        family(
            &mut enc,
            "rttfair_probe_rtt_entries",
            "ProbeRTT entries, all flows of the CCA",
            Counter,
            &by_cca(&|k| k.probe_rtt_entries as f64),
        )?;
        single(
            &mut enc,
            "rttfair_flow_map_capacity",
            "Capacity of the per-flow export map",
            Gauge,
            snap.capacity as f64,
        )?;
        single(
            &mut enc,
            "rttfair_flows_exported",
            "Per-flow series in this scrape",
            Gauge,
            snap.flows.len() as f64,
        )?;
        single(
            &mut enc,
            "rttfair_flows_omitted",
            "Flows left out of scrapes by the max_flows cap",
            Counter,
            snap.omitted_total as f64,
        )?;
        single(
            &mut enc,
            "rttfair_flows_omitted_last_scrape",
            "Flows left out of this scrape by the max_flows cap",
            Gauge,
            snap.omitted as f64,
        )?;
        single(
            &mut enc,
            "rttfair_native_flows_readable",
            "1 if connections on kernel CCAs (cubic, native bbr) could be read this scrape",
            Gauge,
            snap.native_readable.is_ok() as u8 as f64,
        )?;
        single(
            &mut enc,
            "rttfair_maps_present",
            "1 if the pinned maps exist (some CCA was loaded)",
            Gauge,
            snap.maps_present as u8 as f64,
        )?;
        single(
            &mut enc,
            "rttfair_previous_scrape_duration_seconds",
            "Time the previous scrape spent reading the maps",
            Gauge,
            snap.previous_scrape_seconds,
        )?;

        // Fairness: Jain's index of per-flow throughput, per CCA and per group.
        let mut per_cca: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut per_group: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
        for (((_, rate), cca), group) in snap.flows.iter().zip(&ccas).zip(&groups) {
            if *rate > 0.0 {
                per_cca.entry(cca.clone()).or_default().push(*rate);
                per_group
                    .entry((cca.clone(), group.clone()))
                    .or_default()
                    .push(*rate);
            }
        }
        family(
            &mut enc,
            "rttfair_jain_index_ratio",
            "Jain's fairness index of per-flow throughput over the CCA's active flows (1 = fair)",
            Gauge,
            &per_cca
                .iter()
                .map(|(c, v)| (vec![("cca", c.clone())], jain(v)))
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut enc,
            "rttfair_group_jain_index_ratio",
            "Jain's index of per-flow throughput within a destination group",
            Gauge,
            &per_group
                .iter()
                .map(|((c, g), v)| (vec![("cca", c.clone()), ("group", g.clone())], jain(v)))
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut enc,
            "rttfair_active_flows",
            "Flows with a throughput sample, per CCA",
            Gauge,
            &per_cca
                .iter()
                .map(|(c, v)| (vec![("cca", c.clone())], v.len() as f64))
                .collect::<Vec<_>>(),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no installation (no pinned maps), a scrape still renders, says so,
    /// and unlabelled samples are written bare (`name value`, not `name{}`).
    #[test]
    fn scrape_without_maps_reports_absence_with_bare_samples() {
        let dir =
            std::env::temp_dir().join(format!("rttfair-collector-test-{}", std::process::id()));
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(FlowCollector::new(
            BpfFs::new(&dir),
            100,
            24,
            64,
            false,
        )));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.lines().any(|l| l == "rttfair_maps_present 0.0"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "rttfair_flows_exported 0.0"),
            "{text}"
        );
        assert!(!text.contains("{}"), "{text}");
    }
}
