//! Scenario files: what an experiment is, in TOML. The first stage of the
//! lab's pipeline, description and resolution, is this module and its
//! children: [`tunables`] (its `[tunables]` table), [`builtin`] (the
//! embedded scenarios, a name or a path resolved), [`plan`] (a scenario
//! resolved once for a run) and [`grid`] (a `[sweep]` table expanded to
//! one plan per point).
//!
//! ```toml
//! name = "fairtt-paper"
//! duration_s = 120
//! repetitions = 5
//! # optional (false when absent): the flows negotiate ECN (tcp_ecn = 1 in
//! # the sender and receiver namespaces); needed when the bottleneck marks
//! # tcp_ecn = true
//! # optional (the kernel's defaults when absent): the max (third) value of
//! # net.ipv4.tcp_wmem and tcp_rmem in the sender and receiver namespaces,
//! # MiB, 1..=1024 (their min and default are kept): the defaults (a 4 MiB
//! # send buffer, a 6 MiB receive buffer) cap a long-RTT flow's data in
//! # flight near 4 MB
//! # socket_buffer_mb = 64
//!
//! [bottleneck]
//! rate_mbit = 10
//! buffer = { bdp = 10.0, rtt_ms = 15.0 }   # or { bytes = 150000 } or { packets = 100 }
//! # optional (false when absent): the senders send GSO super-packets, cut
//! # into MTU packets on enqueue at the bottleneck (TBF + the same bfifo)
//! segment_gso = true
//! # optional: the queue discipline (issue 44; see [`aqm`] for every key):
//! # "fifo" (drop-tail, the default), "codel", "fq_codel", "ecn_step"
//! # (not with segment_gso)
//! # aqm = "codel"
//! # target_ms = 5.0      # codel, fq_codel: RFC 8289's target and interval
//! # interval_ms = 100.0
//! # ecn = true           # codel, fq_codel: CE-mark instead of drop (needs tcp_ecn)
//! # quantum = 1514       # fq_codel: bytes per DRR turn
//! # flows = 16           # fq_codel: flow queues, 1..=64
//! # k_packets = 20       # ecn_step: mark above K packets (or k_ms = 5.0)
//!
//! [[flows]]
//! group = "elephant"
//! cca = "fairtt"
//! rtt_ms = 15.0          # base round-trip time; or one_way_delay_ms
//!
//! [[flows]]
//! group = "mice"
//! cca = "fairtt"
//! rtt_ms = 5.0
//! # optional, per flow (delay element, ACK direction; off when absent):
//! jitter_ms = 5.0                          # + uniform 0..=5 ms per packet, no reordering in a flow
//! ack_batch_ms = 2.0                       # ACKs leave in batches every 2 ms
//! rtt_change = { at_s = 30.0, rtt_ms = 40.0 }  # base RTT becomes 40 ms at t = 30 s
//! # or as a ramp: from 5 ms at t = 30 s to 40 ms at t = 40 s, linearly, in
//! # steps of about 0.1 ms, never more than 1 ms (see crate::net::pathsched)
//! # rtt_change = { at_s = 30.0, rtt_ms = 40.0, over_s = 10.0 }
//!
//! # optional: CCA tunables for this experiment, as `rttfairctl set` names them
//! [tunables]
//! "fairtt.beta" = 0.7
//! ```
//!
//! The queue discipline runs in the lab's tc programs around the
//! bottleneck's HTB ([`crate::net::aqm`]); a discipline that marks needs
//! `tcp_ecn = true` and CCAs that answer CE ([`aqm::ecn_response`]:
//! cubic, reno, dctcp, qfair, bbr3), and
//! no discipline combines with `segment_gso`. The buffer stays the
//! drop-tail backstop behind it (per flow queue with fq_codel).
//!
//! Jitter, batching and the RTT change apply during each repetition (from
//! its start); the self-check before the run measures the plain base RTT.
//!
//! `segment_gso` ([`Bottleneck::segment_gso`]) is the lab's segmenting
//! option (`topology::Options::segment_at_bottleneck`): less host CPU per
//! byte near 1 Gbit/s, the same per-packet drop-tail buffer, but the
//! senders' TCP sends in GSO bursts as on a real host, so it is not the
//! default; it cannot be combined with `loss_pct`.
//!
//! `[tunables]` ([`tunables`]) are set by the lab after it loads the CCA,
//! for this experiment only; each must be a tunable of a CCA some flow runs
//! (after `--cca`: of a CCA `--cca` names; `lab compare` gives each CCA
//! its own). A CCA that is already registered is not retuned: tunables are
//! host-wide per CCA, so a run is refused unless another lab loaded it
//! with the same tunables (none included), or it was loaded outside the
//! lab and the scenario sets none. Sweep points inherit them.
//!
//! An optional `[sweep]` table turns the file into a grid of scenarios (see
//! [`Sweep`]); every point of the grid is validated when the file is read.
//!
//! Every problem is reported as `field (line N): reason`, e.g.
//! `flows[1].rtt_ms (line 14): must be between 0 and 2000 ms, got -3`; the
//! line is the one of the original text, also for a sweep point.
//!
//! Lines come from the TOML parser's own spans (toml_edit, which `toml`
//! parses with), not from serde_path_to_error: most errors are found by
//! [`Scenario::validate`] after deserialization, where only the document's
//! spans can turn a field path back into a line.

pub mod aqm;
pub mod builtin;
mod error;
pub mod grid;
pub mod plan;
pub mod tunables;

use std::path::Path;

use serde::{Deserialize, Serialize};

use self::error::err;
pub use self::error::ScenarioError;

/// Payload bytes per full-size segment on the emulated links (MTU 1500,
/// IPv4 + TCP with timestamps).
pub const MSS: u64 = 1448;

/// The largest drop-tail buffer, bytes: bfifo's (and TBF's) limit is a
/// 32-bit count, so a larger one would fail inside `tc` after the
/// namespaces are built.
pub const MAX_BUFFER_BYTES: u64 = u32::MAX as u64;

/// Bytes a full-size packet occupies in the bottleneck queue (skb->len,
/// including the Ethernet header).
pub const WIRE_PACKET: u64 = 1514;

/// The largest `socket_buffer_mb`, MiB.
pub const MAX_SOCKET_BUFFER_MB: i64 = 1024;

/// `socket_buffer_mb`'s value: any integer (the range is checked by
/// [`Scenario::validate`], which names the key's line); anything else is
/// refused here in the range check's words, not serde's.
fn socket_buffer_mb<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::Integer(mb) => Ok(Some(mb)),
        other => Err(serde::de::Error::custom(format!(
            "must be a whole number of MiB, 1..={MAX_SOCKET_BUFFER_MB}, got {other}"
        ))),
    }
}

/// A whole experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Seconds of traffic per repetition.
    pub duration_s: f64,
    #[serde(default = "one")]
    pub repetitions: u32,
    /// Seconds at the start of a run left out of the summary (startup).
    #[serde(default)]
    pub warmup_s: f64,
    /// Queue sampling period (>= 100 Hz means <= 10 ms).
    #[serde(default = "ten")]
    pub queue_sample_ms: f64,
    /// Throughput/RTT reporting interval of the flows.
    #[serde(default = "one_f")]
    pub interval_s: f64,
    pub bottleneck: Bottleneck,
    pub flows: Vec<FlowGroup>,
    /// CCA tunables set for this experiment (see [`tunables`]); written
    /// back only when there are some, so other scenarios keep their text.
    #[serde(
        default,
        deserialize_with = "tunables::deserialize",
        skip_serializing_if = "tunables::Tunables::is_empty"
    )]
    pub tunables: tunables::Tunables,
    /// `net.ipv4.tcp_ecn = 1` in the sender and receiver namespaces: the
    /// flows negotiate ECN (needed when the bottleneck marks; see [`aqm`]).
    /// Written back only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tcp_ecn: bool,
    /// The max (third) value of `net.ipv4.tcp_wmem` and `net.ipv4.tcp_rmem`
    /// in the sender and receiver namespaces, MiB (1..=
    /// [`MAX_SOCKET_BUFFER_MB`]; see [`Scenario::socket_buffer_bytes`]):
    /// absent, the kernel's defaults (4 MiB and 6 MiB), which cap a flow's
    /// data in flight near 4 MB whatever its CCA. A whole number, read
    /// through [`socket_buffer_mb`] so a fraction or a string is one line
    /// naming the key; written back only when set.
    #[serde(
        default,
        deserialize_with = "socket_buffer_mb",
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_buffer_mb: Option<i64>,
    /// The grid, for `lab sweep`; a resolved point has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
}

/// One axis of a sweep: a scenario parameter and the values it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub param: String,
    pub values: Vec<f64>,
}

/// A `[sweep]` table: one scenario run over a grid of one or two
/// parameters (see [`Scenario::with_param`] for the parameters).
///
/// ```toml
/// [sweep]
/// x = { param = "bottleneck.buffer.bdp", values = [0.5, 1, 2, 5, 10] }
/// y = { param = "flows[1].rtt_ms", values = [2, 10, 50, 200] }   # optional
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub x: Axis,
    pub y: Option<Axis>,
}

fn one() -> u32 {
    1
}
fn ten() -> f64 {
    10.0
}
fn one_f() -> f64 {
    1.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bottleneck {
    pub rate_mbit: f64,
    pub buffer: Buffer,
    /// GSO from the senders to the bottleneck, which cuts super-packets
    /// into MTU packets on enqueue (TBF over the same bfifo; see
    /// `topology::Options::segment_at_bottleneck` and `link::shape_segmenting`).
    /// An option because the senders then send GSO bursts; written back only
    /// when set, so scenarios without it keep their text (and `lab merge`
    /// its comparisons).
    #[serde(default, skip_serializing_if = "is_false")]
    pub segment_gso: bool,
    /// The queue discipline (see [`aqm`]): `fifo` (drop-tail, the default),
    /// `codel`, `fq_codel`, `ecn_step`; the keys below are its parameters,
    /// read through [`aqm::parse`] ([`Bottleneck::discipline`]). All are
    /// written back only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_packets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_ms: Option<f64>,
}

impl Bottleneck {
    /// The queue discipline its keys give; errors are one line naming the
    /// key (`bottleneck.<key>: reason`).
    pub fn discipline(&self) -> Result<aqm::Discipline, String> {
        let mut t = toml::Table::new();
        let mut put = |k: &str, v: Option<toml::Value>| {
            if let Some(v) = v {
                t.insert(k.to_string(), v);
            }
        };
        put("aqm", self.aqm.clone().map(toml::Value::String));
        put("target_ms", self.target_ms.map(toml::Value::Float));
        put("interval_ms", self.interval_ms.map(toml::Value::Float));
        put("ecn", self.ecn.map(toml::Value::Boolean));
        put("quantum", self.quantum.map(toml::Value::Integer));
        put("flows", self.flows.map(toml::Value::Integer));
        put("k_packets", self.k_packets.map(toml::Value::Integer));
        put("k_ms", self.k_ms.map(toml::Value::Float));
        if self.aqm.is_none() && !t.is_empty() {
            let k = t.keys().next().cloned().unwrap_or_default();
            return Err(format!(
                "bottleneck.{k}: a parameter of a queue discipline, but bottleneck.aqm is not given"
            ));
        }
        aqm::parse(&t)
    }
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// Buffer size: exactly one way of saying it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    pub bytes: Option<u64>,
    pub packets: Option<u64>,
    /// Multiples of the bandwidth-delay product at `rtt_ms`.
    pub bdp: Option<f64>,
    /// The reference RTT of the BDP (required with `bdp`).
    pub rtt_ms: Option<f64>,
}

/// One or more identical flows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroup {
    #[serde(default)]
    pub group: String,
    #[serde(default = "one")]
    pub count: u32,
    pub cca: String,
    /// Base (propagation) round-trip time.
    pub rtt_ms: Option<f64>,
    /// Alternatively the one-way delay; the RTT is twice it.
    pub one_way_delay_ms: Option<f64>,
    /// Random loss of this group's data packets at the bottleneck entry.
    #[serde(default)]
    pub loss_pct: f64,
    #[serde(default)]
    pub start_s: f64,
    /// Stop time; the end of the run if absent.
    pub stop_s: Option<f64>,
    /// Per-packet delay jitter on this flow's path: uniform 0..=jitter_ms,
    /// without reordering within the flow (see `pathsched`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
    /// Release this flow's ACKs in batches every `ack_batch_ms` (0 = off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ack_batch_ms: f64,
    /// A change of this flow's base RTT at a given time of each repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_change: Option<RttChange>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The path's base RTT becomes `rtt_ms` at `at_s` seconds into a repetition
/// (packets already on the path keep their delay; nothing is reordered);
/// with `over_s`, it moves there linearly from the flow's `rtt_ms` between
/// `at_s` and `at_s + over_s`, in small steps (`pathsched`'s ramp rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttChange {
    pub at_s: f64,
    pub rtt_ms: f64,
    /// Seconds the change takes; 0 (the default) is a step. Written back
    /// only when set, so scenarios with a step keep their text (and their
    /// provenance compares equal to folders written before the ramp).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_s: f64,
}

impl Buffer {
    /// Exactly one way of giving the size, and a sensible one.
    fn validate(&self) -> Result<(), ScenarioError> {
        let ways = [
            self.bytes.is_some(),
            self.packets.is_some(),
            self.bdp.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if ways != 1 {
            return Err(err(
                "bottleneck.buffer",
                "give exactly one of bytes, packets, bdp",
            ));
        }
        if let Some(bdp) = self.bdp {
            in_range("bottleneck.buffer.bdp", bdp, 0.001, 1000.0, "")?;
            let rtt = self.rtt_ms.ok_or_else(|| {
                err(
                    "bottleneck.buffer.rtt_ms",
                    "required with bdp (the BDP's reference RTT)",
                )
            })?;
            in_range("bottleneck.buffer.rtt_ms", rtt, 0.01, 5000.0, " ms")?;
        } else if self.rtt_ms.is_some() {
            return Err(err("bottleneck.buffer.rtt_ms", "only meaningful with bdp"));
        }
        if self.bytes == Some(0) || self.packets == Some(0) {
            return Err(err("bottleneck.buffer", "must hold at least one packet"));
        }
        if let Some(b) = self.bytes.filter(|b| *b > MAX_BUFFER_BYTES) {
            return Err(err(
                "bottleneck.buffer.bytes",
                format!("must be at most {MAX_BUFFER_BYTES} (the qdisc's limit), got {b}"),
            ));
        }
        let max_packets = MAX_BUFFER_BYTES / WIRE_PACKET;
        if let Some(p) = self.packets.filter(|p| *p > max_packets) {
            return Err(err(
                "bottleneck.buffer.packets",
                format!(
                    "must be at most {max_packets} ({MAX_BUFFER_BYTES} bytes, the qdisc's limit), got {p}"
                ),
            ));
        }
        Ok(())
    }
}

impl FlowGroup {
    /// Check group `i` of a scenario lasting `duration_s`.
    fn validate(&self, i: usize, duration_s: f64) -> Result<(), ScenarioError> {
        let p = |name: &str| format!("flows[{i}].{name}");
        if self.count == 0 || self.count > 64 {
            return Err(err(
                p("count"),
                format!("must be 1..=64, got {}", self.count),
            ));
        }
        if self.cca.trim().is_empty()
            || self.cca.len() > 15
            || !self
                .cca
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(err(
                p("cca"),
                format!("not a congestion control name: {:?}", self.cca),
            ));
        }
        match (self.rtt_ms, self.one_way_delay_ms) {
            (Some(r), None) => in_range(&p("rtt_ms"), r, 0.0, 2000.0, " ms")?,
            (None, Some(d)) => in_range(&p("one_way_delay_ms"), d, 0.0, 1000.0, " ms")?,
            _ => {
                return Err(err(
                    p("rtt_ms"),
                    "give exactly one of rtt_ms, one_way_delay_ms",
                ))
            }
        }
        in_range(&p("loss_pct"), self.loss_pct, 0.0, 50.0, " %")?;
        in_range(&p("start_s"), self.start_s, 0.0, duration_s - 1.0, " s")?;
        whole_seconds(&p("start_s"), self.start_s)?;
        if let Some(stop) = self.stop_s {
            in_range(&p("stop_s"), stop, self.start_s + 1.0, duration_s, " s")?;
            whole_seconds(&p("stop_s"), stop)?;
        }
        in_range(&p("jitter_ms"), self.jitter_ms, 0.0, 1000.0, " ms")?;
        in_range(&p("ack_batch_ms"), self.ack_batch_ms, 0.0, 1000.0, " ms")?;
        if let Some(c) = self.rtt_change {
            in_range(&p("rtt_change.at_s"), c.at_s, 0.0, duration_s, " s")?;
            in_range(&p("rtt_change.rtt_ms"), c.rtt_ms, 0.0, 2000.0, " ms")?;
            in_range(&p("rtt_change.over_s"), c.over_s, 0.0, duration_s, " s")?;
            if c.at_s + c.over_s > duration_s {
                return Err(err(
                    p("rtt_change.over_s"),
                    format!(
                        "the change would end at {} s (at_s + over_s), after the run's {duration_s} s",
                        c.at_s + c.over_s
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// One flow after expanding groups.
#[derive(Debug, Clone, Serialize)]
pub struct FlowSpec {
    pub index: usize,
    pub group: String,
    pub cca: String,
    pub rtt_ms: f64,
    pub loss_pct: f64,
    pub start_s: f64,
    pub stop_s: f64,
    pub jitter_ms: f64,
    pub ack_batch_ms: f64,
    pub rtt_change: Option<RttChange>,
}

/// A time that sets an iperf3 client's length (`-t stop - start`): whole
/// seconds, because iperf3 reads `-t` with atoi() (12.5 runs 12 s, and
/// the flow would stop before the time the scenario says).
fn whole_seconds(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.fract() == 0.0 {
        Ok(())
    } else {
        Err(err(
            field,
            format!("must be whole seconds (iperf3 runs whole seconds), got {v}"),
        ))
    }
}

fn in_range(field: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ScenarioError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(err(
            field,
            format!("must be between {lo} and {hi}{unit}, got {v}"),
        ))
    }
}

impl Scenario {
    /// Parse and validate TOML text, including every point of its sweep.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
        s.validate()
            .and_then(|()| s.validate_sweep())
            .map_err(|e| with_line(text, e))?;
        Ok(s)
    }

    /// Read a scenario file.
    pub fn load(path: &Path) -> anyhow::Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read scenario {}: {e}", path.display()))?;
        Scenario::from_toml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Check every field of one scenario (not its sweep's points).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_timing()?;
        in_range(
            "bottleneck.rate_mbit",
            self.bottleneck.rate_mbit,
            0.1,
            10_000.0,
            " Mbit/s",
        )?;
        self.bottleneck.buffer.validate()?;
        if self.bottleneck.buffer.bdp.is_some() && self.buffer_bytes() > MAX_BUFFER_BYTES {
            return Err(err(
                "bottleneck.buffer.bdp",
                format!(
                    "gives {} bytes at this rate and RTT, more than the qdisc's limit of {MAX_BUFFER_BYTES}",
                    self.buffer_bytes()
                ),
            ));
        }
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow is needed"));
        }
        let mut total = 0u32;
        for (i, f) in self.flows.iter().enumerate() {
            f.validate(i, self.duration_s)?;
            total += f.count;
        }
        if total > 200 {
            return Err(err(
                "flows",
                format!("at most 200 flows in all, got {total}"),
            ));
        }
        self.validate_socket_buffer()?;
        let ccas: Vec<&str> = self.flows.iter().map(|f| f.cca.as_str()).collect();
        tunables::validate(&self.tunables, &ccas)?;
        self.validate_segment_gso()?;
        self.validate_aqm(&ccas)
    }

    /// The bottleneck's discipline: its parameters, ECN against `tcp_ecn`
    /// and the flows' CCAs, and what the dumbbell can build.
    fn validate_aqm(&self, ccas: &[&str]) -> Result<(), ScenarioError> {
        let keyed = |e: String| match e.split_once(": ") {
            Some((field, reason)) => err(field, reason),
            None => err("bottleneck.aqm", e),
        };
        let d = self.bottleneck.discipline().map_err(keyed)?;
        aqm::check_ecn(&d, self.tcp_ecn, ccas).map_err(keyed)?;
        aqm::check_build(&d, self.bottleneck.segment_gso).map_err(keyed)
    }

    /// `socket_buffer_mb`, when given: 1..=[`MAX_SOCKET_BUFFER_MB`].
    fn validate_socket_buffer(&self) -> Result<(), ScenarioError> {
        match self.socket_buffer_mb {
            Some(mb) if !(1..=MAX_SOCKET_BUFFER_MB).contains(&mb) => Err(err(
                "socket_buffer_mb",
                format!("must be a whole number of MiB, 1..={MAX_SOCKET_BUFFER_MB}, got {mb}"),
            )),
            _ => Ok(()),
        }
    }

    /// The max of the namespaces' TCP socket buffers, bytes
    /// (`socket_buffer_mb` MiB), or `None` for the kernel's defaults.
    pub fn socket_buffer_bytes(&self) -> Option<u64> {
        self.socket_buffer_mb
            .and_then(|mb| u64::try_from(mb).ok())
            .map(|mb| mb << 20)
    }

    /// `segment_gso` without random loss: the loss program sits before the
    /// bottleneck, where it would drop whole super-packets (the dumbbell
    /// refuses the pair too; here it is refused before anything is built).
    fn validate_segment_gso(&self) -> Result<(), ScenarioError> {
        if !self.bottleneck.segment_gso {
            return Ok(());
        }
        match self.flows.iter().position(|f| f.loss_pct > 0.0) {
            Some(i) => Err(err(
                "bottleneck.segment_gso",
                format!(
                    "cannot be combined with random loss (flows[{i}].loss_pct = {}): the loss program, before the bottleneck, would drop whole GSO super-packets",
                    self.flows[i].loss_pct
                ),
            )),
            None => Ok(()),
        }
    }

    /// Name, duration, repetitions and the sampling periods.
    fn validate_timing(&self) -> Result<(), ScenarioError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty"));
        }
        in_range("duration_s", self.duration_s, 1.0, 3600.0, " s")?;
        whole_seconds("duration_s", self.duration_s)?;
        if self.repetitions == 0 || self.repetitions > 100 {
            return Err(err(
                "repetitions",
                format!("must be 1..=100, got {}", self.repetitions),
            ));
        }
        in_range("warmup_s", self.warmup_s, 0.0, self.duration_s - 0.5, " s")?;
        in_range("queue_sample_ms", self.queue_sample_ms, 1.0, 1000.0, " ms")?;
        in_range("interval_s", self.interval_s, 0.1, 10.0, " s")
    }

    /// Every point of the `[sweep]` grid is a valid scenario; an error
    /// names the axis value that makes it invalid.
    fn validate_sweep(&self) -> Result<(), ScenarioError> {
        let Some(sweep) = &self.sweep else {
            return Ok(());
        };
        let check_axis =
            |base: &Scenario, name: &str, a: &Axis| -> Result<Vec<Scenario>, ScenarioError> {
                if a.values.is_empty() {
                    return Err(err(format!("sweep.{name}.values"), "must not be empty"));
                }
                // A repeated value is one point twice: the same run
                // folder, written over, and two rows in sweep.csv.
                for (j, v) in a.values.iter().enumerate() {
                    if let Some(i) = a.values[..j].iter().position(|u| u == v) {
                        return Err(err(
                            format!("sweep.{name}.values[{j}]"),
                            format!("repeats values[{i}] ({v}): each point once"),
                        ));
                    }
                }
                a.values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        base.with_param(&a.param, *v).map_err(|e| {
                            let field = if e.field == "sweep.param" {
                                format!("sweep.{name}.param")
                            } else {
                                format!("sweep.{name}.values[{i}]")
                            };
                            err(field, e.reason)
                        })
                    })
                    .collect()
            };
        if let Some(y) = sweep.y.as_ref().filter(|y| y.param == sweep.x.param) {
            return Err(err(
                "sweep.y.param",
                format!(
                    "is the x axis' parameter too ({}): y would overwrite x at every point",
                    y.param
                ),
            ));
        }
        for point in check_axis(self, "x", &sweep.x)? {
            if let Some(y) = &sweep.y {
                check_axis(&point, "y", y)?;
            }
        }
        Ok(())
    }

    /// A copy with sweep parameter `param` set to `v`, validated. The
    /// parameters: `bottleneck.buffer.bdp`, `bottleneck.rate_mbit`,
    /// `flows[N].rtt_ms`, `flows[N].loss_pct`, `flows[N].jitter_ms`,
    /// `flows[N].ack_batch_ms`, `flows[N].count`, and of a flow with an
    /// `rtt_change`, `flows[N].rtt_change.at_s`, `.rtt_ms`, `.over_s`. An
    /// unknown parameter is an error of field `sweep.param`; an invalid
    /// result names the parameter and value.
    pub fn with_param(&self, param: &str, v: f64) -> Result<Scenario, ScenarioError> {
        let mut s = self.clone();
        s.sweep = None;
        let unsupported = |why: String| err("sweep.param", why);
        match param {
            "bottleneck.buffer.bdp" => {
                if s.bottleneck.buffer.bdp.is_none() {
                    return Err(unsupported(
                        "a sweep over bottleneck.buffer.bdp needs the base buffer given in bdp"
                            .into(),
                    ));
                }
                s.bottleneck.buffer.bdp = Some(v);
            }
            "bottleneck.rate_mbit" => s.bottleneck.rate_mbit = v,
            p if p.starts_with("flows[") => {
                let (idx, field) = p[6..]
                    .split_once("].")
                    .ok_or_else(|| unsupported(format!("not a sweep parameter: {p}")))?;
                let i: usize = idx
                    .parse()
                    .map_err(|_| unsupported(format!("not a flow index in {p}")))?;
                let f = s
                    .flows
                    .get_mut(i)
                    .ok_or_else(|| unsupported(format!("{p}: there is no flows[{i}]")))?;
                match field {
                    "rtt_ms" => {
                        f.rtt_ms = Some(v);
                        f.one_way_delay_ms = None;
                    }
                    "loss_pct" => f.loss_pct = v,
                    "jitter_ms" => f.jitter_ms = v,
                    "ack_batch_ms" => f.ack_batch_ms = v,
                    "rtt_change.at_s" | "rtt_change.rtt_ms" | "rtt_change.over_s" => {
                        let c = f.rtt_change.as_mut().ok_or_else(|| {
                            unsupported(format!(
                                "{p}: flows[{i}] has no rtt_change to vary (give it one in the scenario)"
                            ))
                        })?;
                        match field {
                            "rtt_change.at_s" => c.at_s = v,
                            "rtt_change.rtt_ms" => c.rtt_ms = v,
                            _ => c.over_s = v,
                        }
                    }
                    // A fraction would be cut to a whole count, and two
                    // points would run the same scenario.
                    "count" => {
                        if !(v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v)) {
                            return Err(err(
                                p,
                                format!("{p} must be a whole number of flows, got {v}"),
                            ));
                        }
                        f.count = v as u32;
                    }
                    _ => return Err(unsupported(format!("{p}: {field} cannot be swept"))),
                }
            }
            _ => return Err(unsupported(format!("not a sweep parameter: {param}"))),
        }
        s.validate()
            .map_err(|e| err(e.field.clone(), format!("{param} = {v} makes {e}")))?;
        Ok(s)
    }

    /// Groups expanded into individual flows.
    pub fn flows(&self) -> Vec<FlowSpec> {
        let mut out = Vec::new();
        for (gi, g) in self.flows.iter().enumerate() {
            for _ in 0..g.count {
                out.push(FlowSpec {
                    index: out.len(),
                    group: if g.group.is_empty() {
                        format!("g{gi}")
                    } else {
                        g.group.clone()
                    },
                    cca: g.cca.clone(),
                    rtt_ms: g
                        .rtt_ms
                        .unwrap_or_else(|| 2.0 * g.one_way_delay_ms.unwrap_or(0.0)),
                    loss_pct: g.loss_pct,
                    start_s: g.start_s,
                    stop_s: g.stop_s.unwrap_or(self.duration_s),
                    jitter_ms: g.jitter_ms,
                    ack_batch_ms: g.ack_batch_ms,
                    rtt_change: g.rtt_change,
                });
            }
        }
        out
    }

    /// Bottleneck rate in bit/s.
    pub fn rate_bit(&self) -> u64 {
        (self.bottleneck.rate_mbit * 1e6) as u64
    }

    /// The drop-tail buffer in bytes as the qdisc counts them (whole packets,
    /// at least two).
    pub fn buffer_bytes(&self) -> u64 {
        let b = &self.bottleneck.buffer;
        let bytes = if let Some(x) = b.bytes {
            x
        } else if let Some(p) = b.packets {
            // Validation bounds it; never wrap whatever the caller built.
            p.saturating_mul(WIRE_PACKET)
        } else {
            let bdp = self.rate_bit() as f64 / 8.0 * b.rtt_ms.unwrap_or(0.0) / 1e3;
            (bdp * b.bdp.unwrap_or(0.0)) as u64
        };
        bytes.max(2 * WIRE_PACKET)
    }

    /// Replace every flow's CCA; the tunables stay as they are (a tunable
    /// of a CCA no flow runs now is refused when it is validated).
    pub fn with_cca(&self, cca: &str) -> Scenario {
        let mut s = self.clone();
        for f in &mut s.flows {
            f.cca = cca.to_string();
        }
        s
    }

    /// One scenario per CCA of `--cca` (`lab run`, `lab compare`, `lab
    /// sweep`): every flow on that CCA, with that CCA's tunables only (a
    /// compare of qfair and cubic tunes the qfair run alone). A tunable of
    /// a CCA none of them is refused: it would set nothing.
    pub fn with_ccas(&self, ccas: &[String]) -> Result<Vec<Scenario>, ScenarioError> {
        tunables::check_ccas(&self.tunables, ccas)?;
        Ok(ccas
            .iter()
            .map(|c| Scenario {
                tunables: tunables::of_cca(&self.tunables, c),
                ..self.with_cca(c)
            })
            .collect())
    }

    /// Run for `seconds` instead (the command line's `--seconds` and
    /// `--duration`), the warm-up cut to at most a quarter of the run so a
    /// short run still measures something. Not validated here: the caller
    /// validates, and names its option in the error.
    pub fn set_duration(&mut self, seconds: f64) {
        self.duration_s = seconds;
        self.warmup_s = self.warmup_s.min(seconds / 4.0);
    }
}

/// A deserialization error: the key on the offending line (when the line
/// starts with one) and the line.
fn syntax_error(text: &str, e: &toml::de::Error) -> ScenarioError {
    let line = e.span().map(|sp| line_at(text, sp.start));
    let key = line
        .and_then(|l| text.lines().nth(l - 1))
        .and_then(|l| l.split('=').next())
        .map(|k| k.trim().trim_matches(['[', ']']).to_string())
        .unwrap_or_default();
    // Only name a key that looks like one; otherwise point at the line.
    let is_key = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-\"".contains(c));
    let reason = match e.message().trim() {
        "" => "not valid TOML".to_string(),
        m => m.replace('\n', " "),
    };
    ScenarioError {
        field: if is_key { key } else { "scenario".into() },
        line,
        reason,
    }
}

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// `e` with the line of its field in `text`: the field's value if the file
/// has it, else the nearest enclosing table that it has (a missing key is
/// missing from that table).
fn with_line(text: &str, mut e: ScenarioError) -> ScenarioError {
    if let Ok(doc) = toml_edit::ImDocument::parse(text) {
        e.line = span_of(doc.as_table(), &e.field).map(|start| line_at(text, start));
    }
    e
}

/// Start offset of the deepest node of the document that exists along a
/// field path such as `flows[1].rtt_ms` or `sweep.x.values[2]`.
fn span_of(root: &toml_edit::Table, path: &str) -> Option<usize> {
    span_in_table(root, &path_segments(path))
}

/// A field path's keys: split at the dots outside quotes, quotes removed
/// (`tunables."qfair.exit_drains"` is two keys).
fn path_segments(path: &str) -> Vec<&str> {
    let mut segs = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in path.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => {
                segs.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    segs.push(&path[start..]);
    segs.into_iter().map(|s| s.trim_matches('"')).collect()
}

fn span_in_table(t: &toml_edit::Table, segs: &[&str]) -> Option<usize> {
    let here = t.span().map(|s| s.start);
    let Some((seg, rest)) = segs.split_first() else {
        return here;
    };
    let (key, index) = split_index(seg);
    let Some(child) = t.get(key) else {
        // A quoted name in the path ("qfair.exit_drains") that the file
        // writes as TOML dotted keys (qfair.exit_drains = 2): nested tables.
        return match (index, key.split_once('.')) {
            (None, Some((head, tail))) if t.contains_key(head) => {
                let segs: Vec<&str> = [head, tail]
                    .into_iter()
                    .chain(rest.iter().copied())
                    .collect();
                span_in_table(t, &segs)
            }
            _ => None,
        }
        .or(here);
    };
    span_below(child, index, rest).or(here)
}

fn span_below(child: &toml_edit::Item, index: Option<usize>, rest: &[&str]) -> Option<usize> {
    let here = child.span().map(|s| s.start);
    let deeper = match (index, child) {
        (Some(i), toml_edit::Item::ArrayOfTables(a)) => {
            a.get(i).and_then(|t| span_in_table(t, rest))
        }
        (Some(i), toml_edit::Item::Value(toml_edit::Value::Array(a))) => {
            a.get(i).and_then(|v| v.span()).map(|s| s.start)
        }
        (Some(_), _) => None,
        (None, toml_edit::Item::Table(t)) => span_in_table(t, rest),
        (None, item) => rest.split_first().and_then(|(seg, rest)| {
            let (key, index) = split_index(seg);
            item.get(key).and_then(|c| span_below(c, index, rest))
        }),
    };
    deeper.or(here)
}

/// `flows[2]` -> (`flows`, Some(2)); `rtt_ms` -> (`rtt_ms`, None).
fn split_index(seg: &str) -> (&str, Option<usize>) {
    match seg.split_once('[') {
        Some((k, i)) => (k, i.trim_end_matches(']').parse().ok()),
        None => (seg, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
name = "t"
duration_s = 10
[bottleneck]
rate_mbit = 10
buffer = { bdp = 2.0, rtt_ms = 20.0 }
[[flows]]
cca = "cubic"
rtt_ms = 20
[[flows]]
cca = "bbr"
count = 2
one_way_delay_ms = 5
"#;

    #[test]
    fn parses_and_expands() {
        let s = Scenario::from_toml(OK).unwrap();
        let f = s.flows();
        assert_eq!(f.len(), 3);
        assert_eq!(f[1].rtt_ms, 10.0);
        assert_eq!(f[2].index, 2);
        // 10 Mbit/s x 20 ms = 25 000 B; x2 = 50 000.
        assert_eq!(s.buffer_bytes(), 50_000);
    }

    /// The example at the top of this module is a valid scenario, its
    /// `[tunables]` included: the documentation stays current.
    #[test]
    fn the_module_docs_example_parses() {
        let doc: Vec<&str> = include_str!("scenario.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        let start = doc.iter().position(|l| *l == "```toml").unwrap() + 1;
        let len = doc[start..].iter().position(|l| *l == "```").unwrap();
        let s = Scenario::from_toml(&doc[start..start + len].join("\n")).unwrap();
        assert!(s.bottleneck.segment_gso && s.flows[1].rtt_change.is_some());
        assert_eq!(s.tunables.get("fairtt.beta"), Some(&0.7));
    }

    /// A shorter run keeps its warm-up to a quarter of the run; a longer
    /// one keeps the warm-up it had.
    #[test]
    fn set_duration_caps_the_warmup_at_a_quarter() {
        let mut s = Scenario::from_toml(OK).unwrap();
        s.warmup_s = 5.0;
        s.set_duration(8.0);
        assert_eq!((s.duration_s, s.warmup_s), (8.0, 2.0));
        s.set_duration(40.0);
        assert_eq!((s.duration_s, s.warmup_s), (40.0, 2.0));
        let mut s = Scenario::from_toml(OK).unwrap();
        s.warmup_s = 5.0;
        s.set_duration(40.0);
        assert_eq!((s.duration_s, s.warmup_s), (40.0, 5.0));
        s.validate().unwrap();
    }

    fn error_of(text: &str) -> ScenarioError {
        Scenario::from_toml(text).unwrap_err()
    }

    /// The queue discipline's keys in `[bottleneck]`: read through
    /// aqm::parse, checked against tcp_ecn, the CCAs and segment_gso before
    /// anything runs, each error one line naming its key and line.
    #[test]
    fn bottleneck_aqm_keys_are_checked_with_their_line() {
        let cubic = OK.replace("cca = \"bbr\"", "cca = \"cubic\"");
        let with =
            |keys: &str| cubic.replace("rate_mbit = 10\n", &format!("rate_mbit = 10\n{keys}\n"));
        let s = Scenario::from_toml(&with("aqm = \"fq_codel\"\nflows = 8")).unwrap();
        assert_eq!(
            s.bottleneck.discipline().unwrap(),
            aqm::Discipline::FqCodel {
                target_ms: 5.0,
                interval_ms: 100.0,
                ecn: false,
                quantum: 1514,
                flows: 8
            }
        );
        // Written back as given: the run folder's scenario.toml reads back.
        let again = Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(again.bottleneck.discipline(), s.bottleneck.discipline());
        for (keys, field, line) in [
            ("aqm = \"red\"", "bottleneck.aqm", 6),
            ("aqm = \"codel\"\ntarget_ms = 0", "bottleneck.target_ms", 7),
            ("aqm = \"fq_codel\"\nflows = 100", "bottleneck.flows", 7),
            ("target_ms = 3", "bottleneck.target_ms", 6),
            // A missing key: the line of the table it is missing from.
            ("aqm = \"codel\"\necn = true", "tcp_ecn", 1),
            ("aqm = \"ecn_step\"\nk_ms = 2", "tcp_ecn", 1),
            ("aqm = \"codel\"\nsegment_gso = true", "bottleneck.aqm", 6),
        ] {
            let e = error_of(&with(keys));
            assert_eq!(
                (e.field.as_str(), e.line),
                (field, Some(line)),
                "{keys}: {e}"
            );
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let ecn = |cca: &str| {
            OK.replace("cca = \"bbr\"", &format!("cca = \"{cca}\""))
                .replace("duration_s = 10\n", "duration_s = 10\ntcp_ecn = true\n")
                .replace(
                    "rate_mbit = 10\n",
                    "rate_mbit = 10\naqm = \"codel\"\necn = true\n",
                )
        };
        Scenario::from_toml(&ecn("bbr3")).unwrap();
        Scenario::from_toml(&ecn("qfair")).unwrap();
        let e = error_of(&ecn("bbr"));
        assert_eq!(e.field, "bottleneck.ecn", "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        let e = error_of(&OK.replace("rtt_ms = 20\n", "rtt_ms = -3\n"));
        assert_eq!(e.field, "flows[0].rtt_ms", "{e}");
        let e = error_of(&OK.replace(
            "buffer = { bdp = 2.0, rtt_ms = 20.0 }",
            "buffer = { bdp = 2.0 }",
        ));
        assert_eq!(e.field, "bottleneck.buffer.rtt_ms");
        let e = error_of(&OK.replace(
            "buffer = { bdp = 2.0, rtt_ms = 20.0 }",
            "buffer = { bdp = 2.0, rtt_ms = 20.0, bytes = 5 }",
        ));
        assert_eq!(e.field, "bottleneck.buffer");
        let e = error_of(&OK.replace("duration_s = 10", "duration_s = nan"));
        assert!(e.field.contains("duration_s"), "{e}");
        let e = error_of(&OK.replace("cca = \"cubic\"", "cca = \"cu bic\""));
        assert_eq!(e.field, "flows[0].cca");
        let e = error_of(&OK.replace("rate_mbit = 10", "rate_mbit = 10\nburst = 3"));
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = error_of(&OK.replace("rtt_ms = 20\n", "rtt_ms = 20\none_way_delay_ms = 3\n"));
        assert_eq!(e.field, "flows[0].rtt_ms");
        let e = error_of(&OK.replace("count = 2", "count = 0"));
        assert_eq!(e.field, "flows[1].count");
        let e = error_of("name = 3");
        assert!(e.field.contains("name"), "{e}");
        let e = error_of(&OK.replace("rtt_ms = 20\n", "rtt_ms = 20\njitter_ms = -1\n"));
        assert_eq!(e.field, "flows[0].jitter_ms", "{e}");
        let e = error_of(&OK.replace("rtt_ms = 20\n", "rtt_ms = 20\nack_batch_ms = nan\n"));
        assert_eq!(e.field, "flows[0].ack_batch_ms", "{e}");
        let e = error_of(&OK.replace(
            "rtt_ms = 20\n",
            "rtt_ms = 20\nrtt_change = { at_s = 11.0, rtt_ms = 5 }\n",
        ));
        assert_eq!(e.field, "flows[0].rtt_change.at_s", "{e}");
        let e = error_of(&OK.replace(
            "rtt_ms = 20\n",
            "rtt_ms = 20\nrtt_change = { at_s = 1.0, rtt = 5 }\n",
        ));
        assert!(e.reason.contains("unknown field"), "{e}");
    }

    /// A ramp's length: not negative, a number, and over before the run
    /// ends (at_s + over_s <= duration_s); each refused naming over_s.
    #[test]
    fn a_ramps_length_is_checked_against_the_run() {
        let with = |change: &str| {
            OK.replace(
                "rtt_ms = 20\n",
                &format!("rtt_ms = 20\nrtt_change = {{ {change} }}\n"),
            )
        };
        let s = Scenario::from_toml(&with("at_s = 4.0, rtt_ms = 30, over_s = 6")).unwrap();
        assert_eq!(s.flows()[0].rtt_change.unwrap().over_s, 6.0);
        for (bad, why) in [
            ("over_s = -1", "between 0 and 10 s, got -1"),
            ("over_s = nan", "got NaN"),
            ("over_s = inf", "got inf"),
            (
                "over_s = 6.5",
                "would end at 10.5 s (at_s + over_s), after the run's 10 s",
            ),
        ] {
            let e = error_of(&with(&format!("at_s = 4.0, rtt_ms = 30, {bad}")));
            assert_eq!(
                (e.field.as_str(), e.line),
                ("flows[0].rtt_change.over_s", Some(10)),
                "{bad}: {e}"
            );
            assert!(e.reason.contains(why), "{bad}: {e}");
            assert_eq!(e.to_string().lines().count(), 1, "{e}");
        }
        // --duration shortens the run under a ramp: refused the same way.
        let mut s = Scenario::from_toml(&with("at_s = 4.0, rtt_ms = 30, over_s = 6")).unwrap();
        s.set_duration(9.0);
        assert_eq!(
            s.validate().unwrap_err().field,
            "flows[0].rtt_change.over_s"
        );
    }

    /// A ramp's fields are sweep parameters of a flow that has an
    /// `rtt_change`, validated like the file's; a flow without one is no
    /// such parameter.
    #[test]
    fn an_rtt_change_is_swept_by_its_fields() {
        let base = Scenario::from_toml(&OK.replace(
            "rtt_ms = 20\n",
            "rtt_ms = 20\nrtt_change = { at_s = 2.0, rtt_ms = 22 }\n",
        ))
        .unwrap();
        let c = |s: Scenario| s.flows[0].rtt_change.unwrap();
        let p = base.with_param("flows[0].rtt_change.over_s", 5.0).unwrap();
        assert_eq!((c(p.clone()).over_s, c(p).rtt_ms), (5.0, 22.0));
        let p = base.with_param("flows[0].rtt_change.rtt_ms", 23.0).unwrap();
        assert_eq!((c(p.clone()).rtt_ms, c(p).over_s), (23.0, 0.0));
        assert_eq!(
            c(base.with_param("flows[0].rtt_change.at_s", 3.0).unwrap()).at_s,
            3.0
        );
        let e = base
            .with_param("flows[0].rtt_change.over_s", 9.0)
            .unwrap_err();
        assert_eq!(e.field, "flows[0].rtt_change.over_s", "{e}");
        assert!(
            e.reason.starts_with("flows[0].rtt_change.over_s = 9 makes"),
            "{e}"
        );
        let e = base
            .with_param("flows[1].rtt_change.over_s", 5.0)
            .unwrap_err();
        assert_eq!(e.field, "sweep.param", "{e}");
        assert!(e.reason.contains("flows[1] has no rtt_change"), "{e}");
        let e = base
            .with_param("flows[0].rtt_change.bogus", 5.0)
            .unwrap_err();
        assert_eq!(e.field, "sweep.param", "{e}");
        // In a [sweep] table, the axis is named.
        let e = error_of(&format!(
            "{}\n[sweep]\nx = {{ param = \"flows[1].rtt_change.rtt_ms\", values = [10] }}\n",
            OK
        ));
        assert_eq!(e.field, "sweep.x.param", "{e}");
    }

    #[test]
    fn path_variations_parse_and_expand() {
        let s = Scenario::from_toml(&OK.replace(
            "rtt_ms = 20\n",
            "rtt_ms = 20\njitter_ms = 5\nack_batch_ms = 2\nrtt_change = { at_s = 4.0, rtt_ms = 80 }\n",
        ))
        .unwrap();
        let f = s.flows();
        assert_eq!((f[0].jitter_ms, f[0].ack_batch_ms), (5.0, 2.0));
        assert_eq!(
            f[0].rtt_change,
            Some(RttChange {
                at_s: 4.0,
                rtt_ms: 80.0,
                over_s: 0.0
            })
        );
        assert_eq!(
            (f[1].jitter_ms, f[1].ack_batch_ms, f[1].rtt_change),
            (0.0, 0.0, None)
        );
        // Absent fields stay absent when the scenario is written back.
        let text = toml::to_string_pretty(&Scenario::from_toml(OK).unwrap()).unwrap();
        assert!(
            !text.contains("jitter_ms") && !text.contains("rtt_change"),
            "{text}"
        );
        // A step is written as before the ramp existed; a ramp with its length.
        let text = toml::to_string_pretty(&s).unwrap();
        assert!(
            text.contains("rtt_change") && !text.contains("over_s"),
            "{text}"
        );
        let mut ramp = s.clone();
        ramp.flows[0].rtt_change.as_mut().unwrap().over_s = 3.0;
        let text = toml::to_string_pretty(&ramp).unwrap();
        assert!(text.contains("over_s = 3.0"), "{text}");
        let back = Scenario::from_toml(&text).unwrap();
        assert_eq!(back.flows[0].rtt_change, ramp.flows[0].rtt_change);
    }

    /// `socket_buffer_mb`: absent by default and then not written back;
    /// a whole number of MiB, 1..=1024, kept through the scenario.toml a
    /// run folder gets and a sweep's points; anything else one line naming
    /// the key and its line.
    #[test]
    fn socket_buffer_mb_is_a_whole_number_of_mib_named_in_its_errors() {
        let s = Scenario::from_toml(OK).unwrap();
        assert_eq!((s.socket_buffer_mb, s.socket_buffer_bytes()), (None, None));
        let text = toml::to_string_pretty(&s).unwrap();
        assert!(!text.contains("socket_buffer_mb"), "{text}");
        let with = |v: &str| {
            OK.replace(
                "duration_s = 10\n",
                &format!("duration_s = 10\nsocket_buffer_mb = {v}\n"),
            )
        };
        for (mb, bytes) in [(1, 1 << 20), (64, 64 << 20), (1024, 1 << 30)] {
            let s = Scenario::from_toml(&with(&mb.to_string())).unwrap();
            assert_eq!(
                (s.socket_buffer_mb, s.socket_buffer_bytes()),
                (Some(mb), Some(bytes))
            );
            let text = toml::to_string_pretty(&s).unwrap();
            assert!(text.contains(&format!("socket_buffer_mb = {mb}")), "{text}");
            let back = Scenario::from_toml(&text).unwrap();
            assert_eq!(back.socket_buffer_mb, Some(mb));
        }
        // A sweep's points keep it.
        let swept = Scenario::from_toml(&with("64"))
            .unwrap()
            .with_param("flows[0].rtt_ms", 200.0)
            .unwrap();
        assert_eq!(swept.socket_buffer_bytes(), Some(64 << 20));
        for (bad, got) in [
            ("0", "got 0"),
            ("-1", "got -1"),
            ("1025", "got 1025"),
            ("9223372036854775807", "got 9223372036854775807"),
            ("64.5", "got 64.5"),
            ("64.0", "got 64.0"),
            ("\"64\"", "got \"64\""),
            ("true", "got true"),
        ] {
            let e = error_of(&with(bad));
            assert_eq!(
                (e.field.as_str(), e.line),
                ("socket_buffer_mb", Some(4)),
                "{bad}: {e}"
            );
            assert!(
                e.reason
                    .starts_with("must be a whole number of MiB, 1..=1024, ")
                    && e.reason.ends_with(got),
                "{bad}: {e}"
            );
            assert_eq!(e.to_string().lines().count(), 1, "{e}");
        }
        // Misspelt: the unknown-field error, as for any key.
        let e = error_of(&OK.replace(
            "duration_s = 10\n",
            "duration_s = 10\nsocket_buffers_mb = 64\n",
        ));
        assert!(e.reason.contains("unknown field"), "{e}");
    }

    #[test]
    fn segment_gso_parses_defaults_off_and_is_written_back_only_when_set() {
        assert!(!Scenario::from_toml(OK).unwrap().bottleneck.segment_gso);
        let on = Scenario::from_toml(
            &OK.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment_gso = true\n"),
        )
        .unwrap();
        assert!(on.bottleneck.segment_gso);
        let text = toml::to_string_pretty(&on).unwrap();
        assert!(text.contains("segment_gso = true"), "{text}");
        assert!(Scenario::from_toml(&text).unwrap().bottleneck.segment_gso);
        let off = OK.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment_gso = false\n");
        let text = toml::to_string_pretty(&Scenario::from_toml(&off).unwrap()).unwrap();
        assert!(!text.contains("segment_gso"), "{text}");
    }

    #[test]
    fn segment_gso_is_refused_with_loss_and_misspelt_or_mistyped() {
        let gso = OK.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment_gso = true\n");
        let e = error_of(&gso.replace(
            "one_way_delay_ms = 5\n",
            "one_way_delay_ms = 5\nloss_pct = 1\n",
        ));
        assert_eq!(
            (e.field.as_str(), e.line),
            ("bottleneck.segment_gso", Some(6)),
            "{e}"
        );
        assert!(e.reason.contains("flows[1].loss_pct = 1"), "{e}");
        // A sweep that adds loss to a point is refused naming the value.
        let e = error_of(&format!(
            "{gso}\n[sweep]\nx = {{ param = \"flows[0].loss_pct\", values = [0, 2] }}\n"
        ));
        assert_eq!(e.field, "sweep.x.values[1]", "{e}");
        assert!(e.reason.contains("segment_gso"), "{e}");
        let e = error_of(&OK.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment = true\n"));
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = error_of(&OK.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment_gso = 1\n"));
        assert_eq!(e.field, "segment_gso", "{e}");
    }

    #[test]
    fn errors_name_the_line_of_the_text() {
        // OK's lines: 1 is empty, `rtt_ms = 20` is line 9, `count = 2` 12.
        let e = error_of(&OK.replace("rtt_ms = 20\n", "rtt_ms = -3\n"));
        assert_eq!(
            (e.field.as_str(), e.line),
            ("flows[0].rtt_ms", Some(9)),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("flows[0].rtt_ms (line 9): "),
            "{e}"
        );
        let e = error_of(&OK.replace("count = 2", "count = 0"));
        assert_eq!(e.line, Some(12), "{e}");
        // A missing key: the line of the table it is missing from.
        let e = error_of(&OK.replace(
            "buffer = { bdp = 2.0, rtt_ms = 20.0 }",
            "buffer = { bdp = 2.0 }",
        ));
        assert_eq!(e.line, Some(6), "{e}");
        // A type error found by the deserializer.
        let e = error_of(&OK.replace("duration_s = 10", "duration_s = \"long\""));
        assert_eq!((e.field.as_str(), e.line), ("duration_s", Some(3)), "{e}");
    }

    /// A sweep over a group's flow count takes whole numbers only: 1.5
    /// is refused with the parameter and value (and, in a `[sweep]`
    /// table, the value's position), not cut to 1.
    #[test]
    fn a_swept_flow_count_must_be_whole() {
        let base = Scenario::from_toml(OK).unwrap();
        assert_eq!(
            base.with_param("flows[1].count", 3.0).unwrap().flows[1].count,
            3
        );
        for bad in [1.5, 0.1, -1.0, f64::NAN, f64::INFINITY, 1e10] {
            let e = base.with_param("flows[1].count", bad).unwrap_err();
            assert_eq!(
                e.reason,
                format!("flows[1].count must be a whole number of flows, got {bad}"),
                "{e}"
            );
        }
        let e = error_of(&format!(
            "{OK}\n[sweep]\nx = {{ param = \"flows[0].count\", values = [1, 1.5] }}\n"
        ));
        assert_eq!(e.field, "sweep.x.values[1]", "{e}");
        assert!(e.reason.contains("whole number of flows, got 1.5"), "{e}");
    }

    #[test]
    fn sweep_point_errors_name_the_value_and_its_line() {
        let with_sweep = format!(
            "{OK}\n[sweep]\nx = {{ param = \"bottleneck.buffer.bdp\", values = [1, 2] }}\n[sweep.y]\nparam = \"flows[1].rtt_ms\"\nvalues = [10,\n 5000]\n"
        );
        let s = Scenario::from_toml(&with_sweep.replace("5000", "50")).unwrap();
        assert_eq!(s.sweep.as_ref().unwrap().x.values, [1.0, 2.0]);
        let last = with_sweep.lines().count();
        let e = error_of(&with_sweep);
        assert_eq!(e.field, "sweep.y.values[1]", "{e}");
        assert_eq!(e.line, Some(last), "{e}");
        assert!(e.reason.contains("flows[1].rtt_ms = 5000"), "{e}");
        let e = error_of(&with_sweep.replace("flows[1].rtt_ms", "flows[7].rtt_ms"));
        assert_eq!(e.field, "sweep.y.param", "{e}");
        assert_eq!(e.line, Some(last - 2), "{e}");
        let e = error_of(&with_sweep.replace("[1, 2]", "[1, 0]"));
        assert_eq!(e.field, "sweep.x.values[1]", "{e}");
        assert_eq!(e.line, Some(last - 4), "{e}");
    }

    /// A grid with a point twice (a repeated value, 1 and 1.0 alike) or
    /// one parameter on both axes is refused naming the field.
    #[test]
    fn a_grid_with_a_point_twice_is_refused() {
        let grid = |x: &str, y: &str| {
            format!(
                "{OK}\n[sweep]\nx = {{ param = \"bottleneck.buffer.bdp\", values = {x} }}\n\
                 y = {{ param = \"{y}\", values = [10, 50] }}\n"
            )
        };
        Scenario::from_toml(&grid("[1, 2]", "flows[1].rtt_ms")).unwrap();
        let e = error_of(&grid("[1, 1.0, 2]", "flows[1].rtt_ms"));
        assert_eq!(e.field, "sweep.x.values[1]", "{e}");
        assert!(e.reason.contains("repeats values[0]"), "{e}");
        let e = error_of(&grid("[1, 2]", "bottleneck.buffer.bdp"));
        assert_eq!(e.field, "sweep.y.param", "{e}");
        assert!(e.reason.contains("overwrite"), "{e}");
    }

    /// A buffer the qdisc cannot hold is refused naming the field, in
    /// bytes, in packets (whose bytes once wrapped to a 2-packet buffer)
    /// and from a BDP; the largest one is accepted.
    #[test]
    fn a_buffer_beyond_the_qdiscs_limit_is_refused() {
        let with = |buffer: &str| OK.replace("buffer = { bdp = 2.0, rtt_ms = 20.0 }", buffer);
        assert!(OK.contains("buffer = { bdp = 2.0, rtt_ms = 20.0 }"));
        let e = error_of(&with("buffer = { bytes = 5000000000 }"));
        assert_eq!(e.field, "bottleneck.buffer.bytes", "{e}");
        let e = error_of(&with("buffer = { packets = 12184111013018198 }"));
        assert_eq!(e.field, "bottleneck.buffer.packets", "{e}");
        let e = error_of(
            &with("buffer = { bdp = 1000, rtt_ms = 5000 }")
                .replace("rate_mbit = 10\n", "rate_mbit = 10000\n"),
        );
        assert_eq!(e.field, "bottleneck.buffer.bdp", "{e}");
        let max = Scenario::from_toml(&with(&format!("buffer = {{ bytes = {MAX_BUFFER_BYTES} }}")))
            .unwrap();
        assert_eq!(max.buffer_bytes(), MAX_BUFFER_BYTES);
    }

    /// A flow length iperf3 would cut to whole seconds is refused, from
    /// the duration, a start or a stop (a sweep point's too).
    #[test]
    fn a_fractional_flow_length_is_refused() {
        let e = error_of(&OK.replace("duration_s = 10", "duration_s = 12.5"));
        assert_eq!(e.field, "duration_s", "{e}");
        assert!(e.reason.contains("whole seconds"), "{e}");
        let e = error_of(&OK.replace("count = 2\n", "count = 2\nstart_s = 2.5\n"));
        assert_eq!(e.field, "flows[1].start_s", "{e}");
        let e = error_of(&OK.replace("count = 2\n", "count = 2\nstop_s = 8.5\n"));
        assert_eq!(e.field, "flows[1].stop_s", "{e}");
        Scenario::from_toml(&OK.replace("count = 2\n", "count = 2\nstart_s = 2\nstop_s = 8.0\n"))
            .unwrap();
        let mut s = Scenario::from_toml(OK).unwrap();
        s.set_duration(7.5);
        assert_eq!(s.validate().unwrap_err().field, "duration_s");
    }
}
