//! The lab checks its own emulation before it reports anything: each flow's
//! base RTT and the bottleneck rate are measured and compared with the
//! scenario. A run whose network is not the one configured refuses to report.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::netns::Netns;
use crate::topology::{Dumbbell, RECEIVER};

/// Port of the RTT probe listener on the receiver.
const PROBE_PORT: u16 = 9;

/// Measured base RTT of one flow path.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RttCheck {
    pub flow: usize,
    pub configured_ms: f64,
    pub measured_ms: f64,
    pub ok: bool,
}

/// Tolerance of the RTT check: +-5 % or +-0.3 ms, whichever is larger.
pub fn rtt_within_tolerance(configured_ms: f64, measured_ms: f64) -> bool {
    (measured_ms - configured_ms).abs() <= (0.05 * configured_ms).max(0.3)
}

/// Tolerance of the rate check: +-3 %.
pub fn rate_within_tolerance(expected: f64, measured: f64) -> bool {
    expected > 0.0 && ((measured - expected) / expected).abs() <= 0.03
}

/// Minimum TCP handshake time from each sender address to the receiver
/// (SYN -> SYN/ACK is one round trip through the whole path), over `probes`
/// connections.
pub fn measure_rtts(net: &Dumbbell, configured_ms: &[f64], probes: usize) -> Result<Vec<RttCheck>> {
    let listener = net
        .rcv
        .run(|| TcpListener::bind(SocketAddrV4::new(RECEIVER, PROBE_PORT)))?
        .context("bind RTT probe listener")?;
    listener.set_nonblocking(true)?;
    let acceptor = net.rcv.spawn(move || {
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            match listener.accept() {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(_) => break,
            }
        }
    })?;
    let mut out = Vec::new();
    for (i, &cfg) in configured_ms.iter().enumerate() {
        let src = net.sender(i);
        let measured = probe(&net.snd, src, probes)?;
        out.push(RttCheck {
            flow: i,
            configured_ms: cfg,
            measured_ms: measured,
            ok: rtt_within_tolerance(cfg, measured),
        });
    }
    drop(acceptor); // it exits on its own deadline; namespace teardown ends it sooner
    Ok(out)
}

fn probe(ns: &Netns, src: Ipv4Addr, probes: usize) -> Result<f64> {
    ns.run(move || -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..probes {
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
            s.bind(&SocketAddr::from((src, 0)).into())?;
            let t = Instant::now();
            s.connect_timeout(
                &SocketAddr::from((RECEIVER, PROBE_PORT)).into(),
                Duration::from_secs(5),
            )
            .with_context(|| format!("RTT probe from {src}"))?;
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(best)
    })?
}
