//! The delay a loaded lab really adds to its flows' round trips, measured
//! end to end rather than from the element's own bookkeeping.
//!
//! The element's lateness statistics only see when a writer starts a write;
//! whatever the kernel does after that (or whatever runs the stack in some
//! other thread) is invisible to them. This probe sends ICMP echo requests
//! from the router to a flow's sender address: the request takes the
//! reverse path through the delay element exactly as that flow's ACKs do
//! (route to the TUN, held, written back, forwarded to the sender), and the
//! sender's kernel answers straight to the router, so the reply does not
//! cross the bottleneck queue. Round trip = the path's configured delay +
//! everything the element and the loaded stack add to it. Both ends are
//! timestamped where the kernel sees the packet (send: just before
//! sendto(2), which queues the request on the TUN within the call; receive:
//! SO_TIMESTAMPNS), so the prober's own wake-ups are not counted.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::socket::{
    bind, recvmsg, sendto, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned,
    MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn,
};
use nix::sys::time::TimeVal;

use crate::net::netns::Netns;

/// The router's address on the senders' side: replies come back to it
/// directly over the senders' link.
pub const ROUTER_SENDER_SIDE: Ipv4Addr = Ipv4Addr::new(10, 10, 0, 254);

/// The probe's thread: round trips (ms) and requests left unanswered.
pub type ProbeThread = std::thread::JoinHandle<Result<Result<(Vec<f64>, usize)>>>;

/// Round trips (ms) of echo requests sent from the router to `targets` in
/// turn, one every `gap`, for `duration`; a request without a reply within
/// one second is left out (counted in the second value).
pub fn ping_from_router(
    router: &Netns,
    targets: Vec<Ipv4Addr>,
    duration: Duration,
    gap: Duration,
) -> Result<ProbeThread> {
    router.spawn(move || -> Result<(Vec<f64>, usize)> {
        crate::net::clock::realtime_priority(10);
        let sock = open()?;
        let id = (std::process::id() & 0xffff) as u16;
        let end = Instant::now() + duration;
        let (mut rtts, mut lost) = (Vec::new(), 0);
        let mut seq = 0u16;
        while Instant::now() < end {
            let target = targets[seq as usize % targets.len()];
            match echo(&sock, target, id, seq)? {
                Some(ms) => rtts.push(ms),
                None => lost += 1,
            }
            seq = seq.wrapping_add(1);
            std::thread::sleep(gap);
        }
        Ok((rtts, lost))
    })
}

fn open() -> Result<OwnedFd> {
    let fd = socket(
        AddressFamily::Inet,
        SockType::Raw,
        SockFlag::empty(),
        SockProtocol::Icmp,
    )
    .context("raw ICMP socket (needs root)")?;
    bind(
        fd.as_raw_fd(),
        &SockaddrIn::from(SocketAddrV4::new(ROUTER_SENDER_SIDE, 0)),
    )
    .context("bind the probe to the router's sender-side address")?;
    setsockopt(&fd, sockopt::ReceiveTimestampns, &true).context("SO_TIMESTAMPNS")?;
    setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(0, 100_000)).context("SO_RCVTIMEO")?;
    Ok(fd)
}

/// One echo request and its reply's round trip (ms), None if none came.
fn echo(sock: &OwnedFd, target: Ipv4Addr, id: u16, seq: u16) -> Result<Option<f64>> {
    let request = echo_request(id, seq);
    let sent = realtime_ns();
    sendto(
        sock.as_raw_fd(),
        &request,
        &SockaddrIn::from(SocketAddrV4::new(target, 0)),
        MsgFlags::empty(),
    )
    .with_context(|| format!("ICMP echo to {target}"))?;
    let give_up = Instant::now() + Duration::from_secs(1);
    let mut buf = [0u8; 1500];
    while Instant::now() < give_up {
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
        let Ok(msg) = recvmsg::<SockaddrIn>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::empty(),
        ) else {
            continue; // timeout (EAGAIN) or EINTR: look at the deadline again
        };
        let stamp = msg.cmsgs()?.find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(ts) => {
                Some(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
            }
            _ => None,
        });
        let n = msg.bytes;
        if is_reply_to(&buf[..n], id, seq) {
            let got = stamp.unwrap_or_else(realtime_ns);
            return Ok(Some(got.saturating_sub(sent) as f64 / 1e6));
        }
    }
    Ok(None)
}

/// An ICMP echo request with 16 bytes of payload.
fn echo_request(id: u16, seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 24];
    p[0] = 8; // echo request, code 0
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    let c = internet_checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// True if `ip_packet` (as a raw socket delivers it: IPv4 header first) is
/// the echo reply to request (`id`, `seq`).
fn is_reply_to(ip_packet: &[u8], id: u16, seq: u16) -> bool {
    let Some(&first) = ip_packet.first() else {
        return false;
    };
    let ihl = (first & 0x0f) as usize * 4;
    let Some(icmp) = ip_packet.get(ihl..ihl + 8) else {
        return false;
    };
    icmp[0] == 0 && icmp[4..6] == id.to_be_bytes() && icmp[6..8] == seq.to_be_bytes()
}

/// RFC 1071 checksum.
fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn realtime_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap();
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_request_checksums_to_zero() {
        let p = echo_request(0x1234, 7);
        assert_eq!(internet_checksum(&p), 0);
        assert_eq!(p[0], 8);
    }

    #[test]
    fn reply_matching_reads_past_the_ip_header() {
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        let mut reply = echo_request(0x1234, 7);
        reply[0] = 0;
        ip.extend_from_slice(&reply);
        assert!(is_reply_to(&ip, 0x1234, 7));
        assert!(!is_reply_to(&ip, 0x1234, 8));
        assert!(!is_reply_to(&ip[..24], 0x1234, 7));
        ip[20] = 8; // a request is not a reply
        assert!(!is_reply_to(&ip, 0x1234, 7));
    }
}
