//! The plan of a run: a validated [`Scenario`] resolved once into the
//! concrete quantities the run uses (bit rate, buffer bytes, one entry per
//! flow with its RTT, CCA, start and stop, the measurement window, the
//! repetitions). Nothing after this stage goes back to the scenario to
//! recompute them.

use std::time::Duration;

use serde::Serialize;

use crate::scenario::aqm::Discipline;
use crate::scenario::{FlowSpec, Scenario, ScenarioError, MSS, WIRE_PACKET};

/// The part of every repetition the summary measures: the same interval of
/// run time for every flow, the warm-up excluded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Window {
    /// Seconds since the run started.
    pub start_s: f64,
    pub end_s: f64,
}

impl Window {
    pub fn seconds(&self) -> f64 {
        self.end_s - self.start_s
    }

    /// Whether a sample stamped `t` (seconds since the run started) falls
    /// in the window: after its start, up to and including its end, the
    /// interval the counters' goodput covers.
    pub fn holds(&self, t: f64) -> bool {
        t > self.start_s && t <= self.end_s
    }

    /// How much of the span `(from, to]` lies in the window, as a fraction
    /// of the span (0 for an empty span): a per-interval count's share.
    pub fn share_of(&self, from: f64, to: f64) -> f64 {
        let overlap = to.min(self.end_s) - from.max(self.start_s);
        if to <= from || overlap <= 0.0 {
            0.0
        } else {
            overlap / (to - from)
        }
    }
}

/// A scenario resolved for running.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The scenario this plan came from (written to the results folder).
    pub scenario: Scenario,
    /// The CCA label of the run: the CCA if all flows share one, else the
    /// CCAs joined by `+`.
    pub label: String,
    /// Bottleneck rate, bit/s.
    pub rate_bit: u64,
    /// Drop-tail buffer as the qdisc counts it (whole packets, >= 2).
    pub buffer_bytes: u64,
    /// GSO from the senders, segmented at the bottleneck (the scenario's
    /// `bottleneck.segment_gso`).
    pub segment_gso: bool,
    /// The bottleneck's queue discipline (the scenario's `[bottleneck]`
    /// `aqm` and its keys, see [`crate::scenario::aqm`]).
    pub aqm: Discipline,
    /// ECN negotiated by the flows (the scenario's `tcp_ecn`).
    pub tcp_ecn: bool,
    /// The max of the sender and receiver namespaces' TCP socket buffers
    /// (`tcp_wmem`, `tcp_rmem`), bytes: the scenario's `socket_buffer_mb`
    /// in MiB, or `None` for the kernel's defaults.
    pub socket_buffer_bytes: Option<u64>,
    pub flows: Vec<FlowSpec>,
    /// The distinct CCAs of the flows, sorted.
    pub ccas: Vec<String>,
    /// The tunables the lab sets for the run, each of a CCA in `ccas`
    /// (the scenario's `[tunables]`, validated).
    pub tunables: crate::scenario::tunables::Tunables,
    pub window: Window,
    pub repetitions: u32,
    pub duration_s: f64,
    pub interval_s: f64,
    #[serde(skip)]
    pub queue_sample: Duration,
}

impl Plan {
    /// Resolve a scenario (validated again: a scenario built in code, e.g.
    /// by `with_cca`, has not been through the parser).
    pub fn resolve(s: &Scenario) -> Result<Plan, ScenarioError> {
        s.validate()?;
        let flows = s.flows();
        let mut ccas: Vec<String> = flows.iter().map(|f| f.cca.clone()).collect();
        ccas.sort();
        ccas.dedup();
        let mut scenario = s.clone();
        scenario.sweep = None;
        // Validated above, so this parses; an error still names its key.
        let aqm = s
            .bottleneck
            .discipline()
            .map_err(|e| match e.split_once(": ") {
                Some((field, reason)) => crate::scenario::error::err(field, reason),
                None => crate::scenario::error::err("bottleneck.aqm", e),
            })?;
        Ok(Plan {
            label: ccas.join("+"),
            rate_bit: s.rate_bit(),
            buffer_bytes: s.buffer_bytes(),
            segment_gso: s.bottleneck.segment_gso,
            aqm,
            tcp_ecn: s.tcp_ecn,
            socket_buffer_bytes: s.socket_buffer_bytes(),
            flows,
            ccas,
            tunables: s.tunables.clone(),
            window: Window {
                start_s: s.warmup_s,
                end_s: s.duration_s,
            },
            repetitions: s.repetitions,
            duration_s: s.duration_s,
            interval_s: s.interval_s,
            queue_sample: Duration::from_secs_f64(s.queue_sample_ms / 1e3),
            scenario,
        })
    }

    /// The most goodput the bottleneck can carry, bit/s: its rate times the
    /// payload share of a full-size packet.
    pub fn goodput_capacity_bps(&self) -> f64 {
        self.rate_bit as f64 * MSS as f64 / WIRE_PACKET as f64
    }

    /// Name of the results folder: the scenario name made safe for a path,
    /// and the CCA label.
    pub fn dir_name(&self) -> String {
        // The label keeps its `+` (folder names have always carried it).
        format!("{}-{}", sanitize(&self.scenario.name), self.label)
    }
}

/// The CCA label of a scenario (see [`Plan::label`]).
pub fn label_of(s: &Scenario) -> String {
    let mut c: Vec<&str> = s.flows.iter().map(|f| f.cca.as_str()).collect();
    c.sort();
    c.dedup();
    c.join("+")
}

/// Path-safe: anything but ASCII alphanumerics, `-` and `_` becomes `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
name = "p"
duration_s = 20
warmup_s = 5
[bottleneck]
rate_mbit = 10
buffer = { packets = 10 }
[[flows]]
group = "a"
cca = "cubic"
rtt_ms = 20
[[flows]]
cca = "bbr"
count = 2
one_way_delay_ms = 5
start_s = 3
stop_s = 15
"#;

    #[test]
    fn resolves_every_quantity_once() {
        let p = Plan::resolve(&Scenario::from_toml(TWO).unwrap()).unwrap();
        assert_eq!(p.rate_bit, 10_000_000);
        assert_eq!(p.buffer_bytes, 10 * WIRE_PACKET);
        assert!(!p.segment_gso);
        assert_eq!((p.aqm, p.tcp_ecn), (Discipline::Fifo, false));
        assert_eq!(p.socket_buffer_bytes, None);
        assert_eq!(p.label, "bbr+cubic");
        assert_eq!(p.ccas, ["bbr", "cubic"]);
        assert_eq!(p.flows.len(), 3);
        assert_eq!(p.flows[1].group, "g1");
        assert_eq!(p.flows[2].rtt_ms, 10.0);
        assert_eq!((p.flows[2].start_s, p.flows[2].stop_s), (3.0, 15.0));
        assert_eq!((p.flows[0].start_s, p.flows[0].stop_s), (0.0, 20.0));
        assert_eq!(
            p.window,
            Window {
                start_s: 5.0,
                end_s: 20.0
            }
        );
        assert_eq!(p.queue_sample, Duration::from_millis(10));
        assert_eq!(p.dir_name(), "p-bbr+cubic");
        let gso = TWO.replace("rate_mbit = 10\n", "rate_mbit = 10\nsegment_gso = true\n");
        assert!(
            Plan::resolve(&Scenario::from_toml(&gso).unwrap())
                .unwrap()
                .segment_gso
        );
        let big = TWO.replace(
            "duration_s = 20\n",
            "duration_s = 20\nsocket_buffer_mb = 64\n",
        );
        assert_eq!(
            Plan::resolve(&Scenario::from_toml(&big).unwrap())
                .unwrap()
                .socket_buffer_bytes,
            Some(64 * 1024 * 1024)
        );
        let codel = TWO.replace(
            "rate_mbit = 10\n",
            "rate_mbit = 10\naqm = \"codel\"\ntarget_ms = 2\n",
        );
        let p = Plan::resolve(&Scenario::from_toml(&codel).unwrap()).unwrap();
        assert_eq!(
            p.aqm,
            Discipline::Codel {
                target_ms: 2.0,
                interval_ms: 100.0,
                ecn: false
            }
        );
    }
}
