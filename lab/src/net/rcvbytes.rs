//! The receivers' byte counters: `tcpi_bytes_received` of every TCP socket
//! in the receiver namespace, read with `ss`. The kernel counts a byte
//! when it arrives in order at the receiver, so what a window's two
//! readings differ by crossed the bottleneck by the window's end (not the
//! application's read timing, which iperf3's own interval reports follow),
//! but not necessarily inside the window: bytes held out of order behind a
//! hole when it opens count when the hole fills. Hence only the accounting's
//! cross-check (`in_order_utilization`); goodput comes from
//! [`crate::net::arrivals`].

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::net::netns::Netns;

/// One reading: bytes received per peer address (all of a peer's
/// connections together), and when it was taken.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RcvReading {
    /// Midpoint of the reading, seconds since the run started.
    pub t_s: f64,
    /// Half the time the reading took: the counters were read somewhere
    /// within `t_s +- uncertainty_s`.
    pub uncertainty_s: f64,
    #[serde(skip)]
    pub bytes_by_peer: HashMap<IpAddr, u64>,
}

/// Read the counters in `ns` now; `t0` is the run's start.
pub fn read(ns: &Netns, t0: Instant) -> Result<RcvReading> {
    let before = t0.elapsed().as_secs_f64();
    let out = ns
        .command("ss")
        .args(["-tinHO", "state", "established"])
        .output()
        .context("run ss in the receiver namespace")?;
    let after = t0.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "ss failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(RcvReading {
        t_s: (before + after) / 2.0,
        uncertainty_s: (after - before) / 2.0,
        bytes_by_peer: parse(&String::from_utf8_lossy(&out.stdout)),
    })
}

/// `ss -tinHO` lines to bytes received per peer address.
pub fn parse(text: &str) -> HashMap<IpAddr, u64> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let addrs: Vec<SocketAddr> = line
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        let bytes = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix("bytes_received:"))
            .and_then(|v| v.parse::<u64>().ok());
        if let ([_local, peer], Some(b)) = (addrs.as_slice(), bytes) {
            *out.entry(peer.ip()).or_insert(0) += b;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_bytes_received_per_peer() {
        let text = "\
0      0      10.20.0.1:5201 10.10.1.1:56262 cubic wscale:10,10 rto:200 bytes_received:50 segs_out:1
0      0      10.20.0.1:5201 10.10.1.1:56270 cubic rto:200 bytes_sent:9 bytes_received:1000000 segs_in:3
0      0      10.20.0.1:5202 10.10.1.2:40000 bbr rto:204 segs_out:1
0      0      10.20.0.1:5203 10.10.1.3:40001 bbr bytes_received:7
";
        let m = super::parse(text);
        assert_eq!(m[&"10.10.1.1".parse().unwrap()], 1_000_050);
        assert_eq!(m.get(&"10.10.1.2".parse().unwrap()), None);
        assert_eq!(m[&"10.10.1.3".parse().unwrap()], 7);
    }
}
