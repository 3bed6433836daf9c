//! Scenario files: what an experiment is, in TOML.
//!
//! ```toml
//! name = "fairtt-paper"
//! duration_s = 120
//! repetitions = 5
//!
//! [bottleneck]
//! rate_mbit = 10
//! buffer = { bdp = 10.0, rtt_ms = 15.0 }   # or { bytes = 150000 } or { packets = 100 }
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
//! ```
//!
//! Jitter, batching and the RTT change apply during each repetition (from
//! its start); the self-check before the run measures the plain base RTT.
//!
//! Every problem is reported as `field: reason`, e.g.
//! `flows[1].rtt_ms: must be > 0 and <= 2000 ms, got -3`.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Payload bytes per full-size segment on the emulated links (MTU 1500,
/// IPv4 + TCP with timestamps).
pub const MSS: u64 = 1448;
/// Bytes a full-size packet occupies in the bottleneck queue (skb->len,
/// including the Ethernet header).
pub const WIRE_PACKET: u64 = 1514;

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
/// (packets already on the path keep their delay; nothing is reordered).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttChange {
    pub at_s: f64,
    pub rtt_ms: f64,
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

/// A scenario error: the field path and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ScenarioError {
    pub field: String,
    pub reason: String,
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> ScenarioError {
    ScenarioError {
        field: field.into(),
        reason: reason.into(),
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
    /// Parse and validate TOML text.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| {
            let field = e
                .span()
                .map(|sp| locate(text, sp.start))
                .unwrap_or_default();
            let msg = match e.message().trim() {
                "" => "not valid TOML".to_string(),
                m => m.replace('\n', " "),
            };
            err(
                if field.is_empty() {
                    "scenario".to_string()
                } else {
                    field
                },
                msg,
            )
        })?;
        s.validate()?;
        Ok(s)
    }

    /// Read a scenario file.
    pub fn load(path: &Path) -> anyhow::Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read scenario {}: {e}", path.display()))?;
        Scenario::from_toml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty"));
        }
        in_range("duration_s", self.duration_s, 1.0, 3600.0, " s")?;
        if self.repetitions == 0 || self.repetitions > 100 {
            return Err(err(
                "repetitions",
                format!("must be 1..=100, got {}", self.repetitions),
            ));
        }
        in_range("warmup_s", self.warmup_s, 0.0, self.duration_s - 0.5, " s")?;
        in_range("queue_sample_ms", self.queue_sample_ms, 1.0, 1000.0, " ms")?;
        in_range("interval_s", self.interval_s, 0.1, 10.0, " s")?;
        in_range(
            "bottleneck.rate_mbit",
            self.bottleneck.rate_mbit,
            0.1,
            10_000.0,
            " Mbit/s",
        )?;
        let b = &self.bottleneck.buffer;
        let ways = [b.bytes.is_some(), b.packets.is_some(), b.bdp.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if ways != 1 {
            return Err(err(
                "bottleneck.buffer",
                "give exactly one of bytes, packets, bdp",
            ));
        }
        if let Some(bdp) = b.bdp {
            in_range("bottleneck.buffer.bdp", bdp, 0.001, 1000.0, "")?;
            let rtt = b.rtt_ms.ok_or_else(|| {
                err(
                    "bottleneck.buffer.rtt_ms",
                    "required with bdp (the BDP's reference RTT)",
                )
            })?;
            in_range("bottleneck.buffer.rtt_ms", rtt, 0.01, 5000.0, " ms")?;
        } else if b.rtt_ms.is_some() {
            return Err(err("bottleneck.buffer.rtt_ms", "only meaningful with bdp"));
        }
        if b.bytes == Some(0) || b.packets == Some(0) {
            return Err(err("bottleneck.buffer", "must hold at least one packet"));
        }
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow is needed"));
        }
        let mut total = 0u32;
        for (i, f) in self.flows.iter().enumerate() {
            let p = |name: &str| format!("flows[{i}].{name}");
            if f.count == 0 || f.count > 64 {
                return Err(err(p("count"), format!("must be 1..=64, got {}", f.count)));
            }
            total += f.count;
            if f.cca.trim().is_empty()
                || f.cca.len() > 15
                || !f.cca.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(err(
                    p("cca"),
                    format!("not a congestion control name: {:?}", f.cca),
                ));
            }
            match (f.rtt_ms, f.one_way_delay_ms) {
                (Some(r), None) => in_range(&p("rtt_ms"), r, 0.0, 2000.0, " ms")?,
                (None, Some(d)) => in_range(&p("one_way_delay_ms"), d, 0.0, 1000.0, " ms")?,
                _ => {
                    return Err(err(
                        p("rtt_ms"),
                        "give exactly one of rtt_ms, one_way_delay_ms",
                    ))
                }
            }
            in_range(&p("loss_pct"), f.loss_pct, 0.0, 50.0, " %")?;
            in_range(&p("start_s"), f.start_s, 0.0, self.duration_s - 1.0, " s")?;
            if let Some(stop) = f.stop_s {
                in_range(&p("stop_s"), stop, f.start_s + 1.0, self.duration_s, " s")?;
            }
            in_range(&p("jitter_ms"), f.jitter_ms, 0.0, 1000.0, " ms")?;
            in_range(&p("ack_batch_ms"), f.ack_batch_ms, 0.0, 1000.0, " ms")?;
            if let Some(c) = f.rtt_change {
                in_range(&p("rtt_change.at_s"), c.at_s, 0.0, self.duration_s, " s")?;
                in_range(&p("rtt_change.rtt_ms"), c.rtt_ms, 0.0, 2000.0, " ms")?;
            }
        }
        if total > 200 {
            return Err(err(
                "flows",
                format!("at most 200 flows in all, got {total}"),
            ));
        }
        Ok(())
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
            p * WIRE_PACKET
        } else {
            let bdp = self.rate_bit() as f64 / 8.0 * b.rtt_ms.unwrap_or(0.0) / 1e3;
            (bdp * b.bdp.unwrap_or(0.0)) as u64
        };
        bytes.max(2 * WIRE_PACKET)
    }

    /// Replace every flow's CCA (for `compare` and `--cca`).
    pub fn with_cca(&self, cca: &str) -> Scenario {
        let mut s = self.clone();
        for f in &mut s.flows {
            f.cca = cca.to_string();
        }
        s
    }
}

/// "line N" for a byte offset, to point at the offending TOML.
fn locate(text: &str, offset: usize) -> String {
    let line = text[..offset.min(text.len())].matches('\n').count() + 1;
    let key = text
        .lines()
        .nth(line - 1)
        .and_then(|l| l.split('=').next())
        .map(|k| k.trim().trim_matches(['[', ']']).to_string())
        .unwrap_or_default();
    // Only name a key that looks like one; otherwise point at the line.
    let is_key = key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if key.is_empty() || !is_key {
        format!("line {line}")
    } else {
        format!("{key} (line {line})")
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

    fn error_of(text: &str) -> ScenarioError {
        Scenario::from_toml(text).unwrap_err()
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
                rtt_ms: 80.0
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
    }
}
