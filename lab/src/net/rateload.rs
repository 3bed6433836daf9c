//! The rate check's load: UDP datagrams paced at [`OVERLOAD`] x the
//! bottleneck's rate, so its queue stays backlogged by construction and the
//! check ([`crate::net::selfcheck::measure_rate`]) measures the link, not a
//! congestion control.
//!
//! Why not TCP: an ACK-clocked load (cubic, one or several streams through
//! the delay element) refills the queue only as fast as the host turns ACKs
//! into data; at 1 Gbit/s on a 2-core host that kept the queue backlogged
//! for >= 1 s in only some runs (0.16-2.83 s, docs/results.md, issue 17),
//! so the check refused working labs. A sender that is not clocked by
//! anything the link does overfills the queue at any rate the host can send.
//! The same load is used at every rate: one meaning of "rate checked".
//!
//! Where it is sent from: the sender namespace's own address on `s0`
//! ([`LOAD_SOURCE`], 10.10.0.1, which is no flow's address), through the
//! router to the receiver, i.e. the forward path every flow's data takes
//! (veth s0 -> r0, forwarding, the bottleneck on r1, veth r1 -> c0). Sent
//! from the router itself it would skip those hops and be throttled by its
//! socket's send buffer (a local socket owns its packets while they sit in
//! the local qdisc); from the sender namespace the veth hands them over and
//! pacing alone sets the rate. Not a flow address, so the random-loss
//! program (it matches flows' source addresses) leaves the load alone and
//! the delay element (it delays the reverse path to flow addresses) never
//! sees it. Nothing listens on the destination port: the receiver drops the
//! datagrams after the bottleneck has counted them.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::net::netns::Netns;
use crate::scenario::WIRE_PACKET;

/// The load's rate over the bottleneck's, in wire bytes: enough that the
/// excess builds a queue that covers the host's scheduling gaps (5 % of
/// 1 Gbit/s is 6.25 kB per ms), no more, because every excess packet costs
/// the whole forward path before the full buffer drops it. At 1.1 the
/// queue stayed backlogged as well but the departure rate at 1 Gbit/s read
/// 952-1000 Mbit/s (five runs, a compiler busy on the other core); at 1.05
/// 999.6-1000.1 (docs/results.md).
pub const OVERLOAD: f64 = 1.05;
/// Source of the load: the sender namespace's base address on `s0`
/// (see [`crate::net::topology`]), used by no flow.
pub const LOAD_SOURCE: Ipv4Addr = Ipv4Addr::new(10, 10, 0, 1);
/// UDP payload of one datagram, so that it leaves as one full-size frame
/// (IPv4 20 + UDP 8 + Ethernet 14 bytes of headers).
const PAYLOAD: usize = WIRE_PACKET as usize - 14 - 20 - 8;
/// Datagrams per send call: one UDP GSO super-datagram (`UDP_SEGMENT`) of
/// 44 x [`PAYLOAD`] = 64768 bytes (the most under IP's 64 kB), which the
/// kernel cuts into full-size frames at `s0` (or at a segmenting
/// bottleneck). One datagram per `send` reached only 0.99 Gbit/s here, and
/// the queue at 1 Gbit/s never held more than a packet.
const SEGMENTS: usize = 44;
/// How far the sender may run ahead of its pace before it sleeps.
const AHEAD_MAX: Duration = Duration::from_micros(200);

/// What the load sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSent {
    /// Full-size datagrams handed to the kernel.
    pub datagrams: u64,
    /// Their wire bytes x 8 per second of sending.
    pub wire_bit: f64,
}

/// Start sending UDP from `ns` ([`LOAD_SOURCE`]) to `dst` for `seconds` at
/// [`OVERLOAD`] x `rate_bit` of wire bytes, on a thread of its own (the
/// caller samples the queue meanwhile); join it for what was sent.
pub fn spawn(
    ns: &Netns,
    dst: SocketAddrV4,
    rate_bit: u64,
    seconds: f64,
) -> Result<JoinHandle<Result<Result<LoadSent>>>> {
    ns.spawn(move || paced_send(dst, rate_bit, seconds))
}

/// The sending loop: datagrams back to back while behind the pace
/// ([`wire_bytes_due`]), a short sleep when ahead of it.
fn paced_send(dst: SocketAddrV4, rate_bit: u64, seconds: f64) -> Result<LoadSent> {
    let sock = UdpSocket::bind(SocketAddr::from((LOAD_SOURCE, 0)))
        .with_context(|| format!("bind the rate check's UDP load to {LOAD_SOURCE}"))?;
    nix::sys::socket::setsockopt(
        &sock,
        nix::sys::socket::sockopt::UdpGsoSegment,
        &(PAYLOAD as i32),
    )
    .context("UDP_SEGMENT on the rate check's load")?;
    let buf = vec![0u8; PAYLOAD * SEGMENTS];
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(seconds);
    let mut sent: u64 = 0;
    loop {
        let elapsed = t0.elapsed();
        if elapsed >= end {
            break;
        }
        let due = wire_bytes_due(rate_bit, elapsed);
        if sent * WIRE_PACKET >= due {
            std::thread::sleep(AHEAD_MAX);
            continue;
        }
        match sock.send_to(&buf, dst) {
            Ok(_) => sent += SEGMENTS as u64,
            // A full device queue on the way (the bottleneck drops when its
            // buffer is full; that is the point): the pace goes on.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(e).context("rate check's UDP load"),
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    Ok(LoadSent {
        datagrams: sent,
        wire_bit: (sent * WIRE_PACKET) as f64 * 8.0 / dt,
    })
}

/// Wire bytes the load should have sent after `elapsed`: [`OVERLOAD`] x the
/// rate, plus [`AHEAD_MAX`] of it so a sleep never leaves it behind (a
/// send call is [`SEGMENTS`] frames, so the load runs up to that far ahead).
pub fn wire_bytes_due(rate_bit: u64, elapsed: Duration) -> u64 {
    let bytes_per_s = rate_bit as f64 / 8.0 * OVERLOAD;
    (bytes_per_s * (elapsed + AHEAD_MAX).as_secs_f64()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_is_one_full_size_frame() {
        assert_eq!(PAYLOAD + 14 + 20 + 8, 1514);
    }

    #[test]
    fn the_pace_is_five_percent_above_the_rate_and_starts_ahead() {
        let at = |ms| wire_bytes_due(1_000_000_000, Duration::from_millis(ms)) as i64;
        // 1 Gbit/s x 1.05 = 131.25 MB per second of sending.
        assert!((at(2000) - at(1000) - 131_250_000).abs() <= 1);
        // 200 us of that before the first send: 26.25 kB.
        assert!((at(0) - 26_250).abs() <= 1);
    }
}
