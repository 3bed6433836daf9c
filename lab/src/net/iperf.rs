//! iperf3 as the lab's traffic: servers and clients run inside namespaces,
//! results come back as parsed JSON.

use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::net::netns::Netns;

/// An `iperf3 -s` inside a namespace; killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    pub fn start(ns: &Netns, bind: &str, port: u16) -> Result<Server> {
        let child = ns
            .command("iperf3")
            .args(["-s", "-J", "-B", bind, "-p", &port.to_string()]) // -J: clients get server_output_json
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start iperf3 server (is iperf3 installed?)")?;
        // Wait until it accepts connections.
        let addr = format!("{bind}:{port}");
        let ok = ns.run(move || {
            for _ in 0..100 {
                if std::net::TcpStream::connect_timeout(
                    &addr.parse().unwrap(),
                    Duration::from_millis(50),
                )
                .is_ok()
                {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        })?;
        if !ok {
            bail!("iperf3 server on {bind}:{port} did not come up");
        }
        // Give the server a moment to finish with the probe connection.
        std::thread::sleep(Duration::from_millis(100));
        Ok(Server { child, port })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one client run reports.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ClientResult {
    pub sent_bytes: u64,
    pub received_bytes: u64,
    pub sender_bits_per_second: f64,
    pub receiver_bits_per_second: f64,
    pub retransmits: u64,
    /// CPU of the sending iperf3 process (user+system), % of one core.
    pub sender_cpu_percent: f64,
    pub seconds: f64,
    /// Per-interval receiver-side... as seen by the sender: (t_end, bits/s, rtt_us, cwnd_bytes).
    pub intervals: Vec<(f64, f64, u64, u64)>,
    /// Retransmissions per interval, as the sender counted them: (interval
    /// end in seconds since the client started, segments). What a window's
    /// retransmission ratio is summed from (the end totals cover the whole
    /// test, warm-up included).
    pub interval_retransmits: Vec<(f64, u64)>,
    pub congestion: String,
}

/// Client options.
#[derive(Debug, Clone)]
pub struct ClientSpec {
    pub server: String,
    pub port: u16,
    pub bind: Option<String>,
    pub cca: String,
    pub seconds: f64,
    pub interval: f64,
}

/// Run `iperf3 -c` to completion and parse its JSON.
pub fn client(ns: &Netns, spec: &ClientSpec) -> Result<ClientResult> {
    client_in(ns.name(), spec)
}

/// As [`client`], by namespace name (for use from other threads).
pub fn client_in(ns: &str, spec: &ClientSpec) -> Result<ClientResult> {
    Ok(client_with_server_output(ns, spec)?.client)
}

fn parse(v: &Value) -> Result<ClientResult> {
    let end = &v["end"];
    let f = |p: &Value| p.as_f64().unwrap_or(0.0);
    let u = |p: &Value| p.as_u64().unwrap_or(0);
    let intervals = v["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let s = i["streams"].get(0)?;
                    Some((
                        f(&s["end"]),
                        f(&s["bits_per_second"]),
                        u(&s["rtt"]),
                        u(&s["snd_cwnd"]),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let interval_retransmits = v["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let s = &i["sum"];
                    Some((s["end"].as_f64()?, s["retransmits"].as_u64()?))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ClientResult {
        sent_bytes: u(&end["sum_sent"]["bytes"]),
        received_bytes: u(&end["sum_received"]["bytes"]),
        sender_bits_per_second: f(&end["sum_sent"]["bits_per_second"]),
        receiver_bits_per_second: f(&end["sum_received"]["bits_per_second"]),
        retransmits: u(&end["sum_sent"]["retransmits"]),
        sender_cpu_percent: f(&end["cpu_utilization_percent"]["host_total"]),
        seconds: f(&end["sum_sent"]["seconds"]),
        intervals,
        interval_retransmits,
        congestion: end["sender_tcp_congestion"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    })
}

/// A client run plus the receiver's own per-interval goodput.
#[derive(Debug, Clone, Default)]
pub struct FullResult {
    pub client: ClientResult,
    /// (interval end in seconds since the client started, bit/s) as the
    /// receiving iperf3 counted it.
    pub receiver_intervals: Vec<(f64, f64)>,
}

/// Run a client with `--get-server-output`, so goodput is measured where the
/// data arrives.
pub fn client_with_server_output(ns: &str, spec: &ClientSpec) -> Result<FullResult> {
    client_streams(ns, spec, 1)
}

/// As [`client_in`] with `streams` parallel connections (`iperf3 -P`), all
/// from the same address: a load that one flow's ramp and backoff cannot
/// leave idle (the self-check's rate load at high rates). The result sums
/// the streams.
pub fn client_streams_in(ns: &str, spec: &ClientSpec, streams: usize) -> Result<ClientResult> {
    Ok(client_streams(ns, spec, streams.max(1))?.client)
}

fn client_streams(ns: &str, spec: &ClientSpec, streams: usize) -> Result<FullResult> {
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", ns, "iperf3", "--get-server-output"]);
    cmd.args([
        "-c",
        &spec.server,
        "-p",
        &spec.port.to_string(),
        "-J",
        "-C",
        &spec.cca,
    ])
    .args([
        "-t",
        &format!("{}", spec.seconds),
        "-i",
        &format!("{}", spec.interval),
    ]);
    if let Some(b) = &spec.bind {
        cmd.args(["-B", b]);
    }
    if streams > 1 {
        cmd.args(["-P", &streams.to_string()]);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .context("run iperf3 client")?;
    let v: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "iperf3 output is not JSON: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        bail!("iperf3 -C {}: {e}", spec.cca);
    }
    let client = parse(&v)?;
    let receiver_intervals = v["server_output_json"]["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let s = &i["sum"];
                    // Drop the trailing partial interval: its rate is noise.
                    if s["seconds"].as_f64()? < 0.5 * spec.interval {
                        return None;
                    }
                    Some((s["end"].as_f64()?, s["bits_per_second"].as_f64()?))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(FullResult {
        client,
        receiver_intervals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each interval's retransmissions are kept (what a window's ratio is
    /// summed from), beside the end total over the whole test.
    #[test]
    fn parse_keeps_each_intervals_retransmissions() {
        let v = serde_json::json!({
            "intervals": [
                { "streams": [{ "end": 1.0, "bits_per_second": 5e6, "rtt": 21000, "snd_cwnd": 9000 }],
                  "sum": { "end": 1.0, "retransmits": 40 } },
                { "streams": [{ "end": 2.0, "bits_per_second": 6e6, "rtt": 22000, "snd_cwnd": 9500 }],
                  "sum": { "end": 2.0, "retransmits": 1 } }
            ],
            "end": { "sum_sent": { "retransmits": 41, "bytes": 1000 } }
        });
        let r = parse(&v).unwrap();
        assert_eq!(r.interval_retransmits, [(1.0, 40), (2.0, 1)]);
        assert_eq!(r.retransmits, 41);
        assert_eq!(r.intervals.len(), 2);
    }
}
