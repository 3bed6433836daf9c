//! Bottleneck queue occupancy, sampled over rtnetlink.
//!
//! Forking `tc -s qdisc` 100 times a second would cost a large part of one of
//! this machine's two cores; a netlink socket opened inside the router
//! namespace answers an RTM_GETQDISC dump in microseconds. Only the few
//! attributes needed are parsed: TCA_STATS2 -> TCA_STATS_BASIC (bytes,
//! packets sent) and TCA_STATS_QUEUE (qlen, backlog, drops).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::net::netns::Netns;

const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;

/// One reading of a qdisc's counters.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct QdiscStats {
    pub bytes: u64,
    pub packets: u32,
    pub qlen: u32,
    pub backlog_bytes: u32,
    pub drops: u32,
}

/// A netlink socket bound to one namespace, reading one qdisc.
pub struct QdiscReader {
    fd: OwnedFd,
    ifindex: i32,
    handle: u32,
    seq: u32,
    buf: Vec<u8>,
}

impl QdiscReader {
    /// Reader for the qdisc with `handle` (e.g. 0x0010_0000 for tc's hex "10:") on
    /// `ifname` inside `ns`.
    pub fn open(ns: &Netns, ifname: &str, handle: u32) -> Result<QdiscReader> {
        let name = ifname.to_string();
        let (fd, ifindex) = ns.run(move || -> Result<(OwnedFd, i32)> {
            let cname = std::ffi::CString::new(name.clone())?;
            // SAFETY: valid C string.
            let idx = unsafe { libc::if_nametoindex(cname.as_ptr()) };
            if idx == 0 {
                anyhow::bail!("no interface {name}");
            }
            // SAFETY: plain socket(2).
            let fd = unsafe {
                libc::socket(
                    libc::AF_NETLINK,
                    libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                    libc::NETLINK_ROUTE,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error()).context("netlink socket");
            }
            // SAFETY: fd is a fresh, owned descriptor.
            Ok((unsafe { OwnedFd::from_raw_fd(fd) }, idx as i32))
        })??;
        Ok(QdiscReader {
            fd,
            ifindex,
            handle,
            seq: 1,
            buf: vec![0u8; 65536],
        })
    }

    /// Current counters of the qdisc.
    pub fn read(&mut self) -> Result<QdiscStats> {
        self.seq += 1;
        let mut req = [0u8; 36];
        req[0..4].copy_from_slice(&36u32.to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETQDISC.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        // tcmsg: family AF_UNSPEC, ifindex (the kernel filters dumps by it).
        req[20..24].copy_from_slice(&self.ifindex.to_ne_bytes());
        // SAFETY: sending a byte buffer on an owned netlink socket.
        let rc = unsafe { libc::send(self.fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error()).context("netlink send");
        }
        let mut found = None;
        loop {
            // SAFETY: receiving into an owned buffer.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error()).context("netlink recv");
            }
            let mut off = 0usize;
            let n = n as usize;
            let mut done = false;
            while off + 16 <= n {
                let len = u32::from_ne_bytes(self.buf[off..off + 4].try_into().unwrap()) as usize;
                let ty = u16::from_ne_bytes(self.buf[off + 4..off + 6].try_into().unwrap());
                if len < 16 || off + len > n {
                    break;
                }
                match ty {
                    NLMSG_DONE => done = true,
                    NLMSG_ERROR => anyhow::bail!("netlink error reply to RTM_GETQDISC"),
                    RTM_NEWQDISC => {
                        if let Some(s) =
                            parse_qdisc(&self.buf[off + 16..off + len], self.ifindex, self.handle)
                        {
                            found = Some(s);
                        }
                    }
                    _ => {}
                }
                off += (len + 3) & !3;
            }
            if done {
                break;
            }
        }
        found.with_context(|| {
            format!(
                "qdisc {:x}: not found on ifindex {}",
                self.handle >> 16,
                self.ifindex
            )
        })
    }
}

fn parse_qdisc(body: &[u8], ifindex: i32, handle: u32) -> Option<QdiscStats> {
    if body.len() < 20 {
        return None;
    }
    let idx = i32::from_ne_bytes(body[4..8].try_into().ok()?);
    let h = u32::from_ne_bytes(body[8..12].try_into().ok()?);
    if idx != ifindex || h != handle {
        return None;
    }
    let mut stats = QdiscStats::default();
    for (ty, payload) in attrs(&body[20..]) {
        if ty == TCA_STATS2 {
            for (t, p) in attrs(payload) {
                match t {
                    TCA_STATS_BASIC if p.len() >= 12 => {
                        stats.bytes = u64::from_ne_bytes(p[0..8].try_into().ok()?);
                        stats.packets = u32::from_ne_bytes(p[8..12].try_into().ok()?);
                    }
                    TCA_STATS_QUEUE if p.len() >= 20 => {
                        stats.qlen = u32::from_ne_bytes(p[0..4].try_into().ok()?);
                        stats.backlog_bytes = u32::from_ne_bytes(p[4..8].try_into().ok()?);
                        stats.drops = u32::from_ne_bytes(p[8..12].try_into().ok()?);
                    }
                    _ => {}
                }
            }
        }
    }
    Some(stats)
}

/// Iterate (type, payload) of netlink attributes.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = &b[((len + 3) & !3).min(b.len())..];
        Some((ty, payload))
    })
}

/// One sample of the sampler: seconds since its start and the counters.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct QueueSample {
    pub t: f64,
    #[serde(flatten)]
    pub stats: QdiscStats,
}

/// Samples a qdisc every `period` on its own thread until stopped.
pub struct QueueSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<QueueSample>>>,
}

impl QueueSampler {
    /// Start sampling; sample times are seconds since `t0` (the run's
    /// clock, on which the accounting window's edges are taken too).
    pub fn start(mut reader: QdiscReader, period: Duration, t0: Instant) -> QueueSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut next = Instant::now();
            while !stop2.load(Ordering::Relaxed) {
                if let Ok(stats) = reader.read() {
                    out.push(QueueSample {
                        t: t0.elapsed().as_secs_f64(),
                        stats,
                    });
                }
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now; // fell behind: do not burst to catch up
                }
            }
            out
        });
        QueueSampler {
            stop,
            thread: Some(thread),
        }
    }

    /// Stop and return the samples.
    pub fn finish(mut self) -> Vec<QueueSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for QueueSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
