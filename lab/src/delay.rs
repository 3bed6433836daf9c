//! The delay element: propagation delay per flow, in user space.
//!
//! This kernel has no netem, so delay cannot come from a qdisc. The lab
//! routes the *reverse* path (receiver -> sender: the ACKs) through a TUN
//! device in the router namespace; this element reads each packet, holds it
//! for the delay configured for its destination (the flow's sender address)
//! and writes it back, where policy routing (`iif <tun>`) sends it on to the
//! sender. A flow's whole base RTT is applied on that path, so:
//! - the bottleneck queue sees data packets exactly as the senders paced them
//!   (no user-space hop on the data path, no added jitter there), and
//! - the element carries only ACKs: one small packet per one or two data
//!   packets, which is what lets one thread keep up with hundreds of Mbit/s
//!   of data on a 2-core machine.
//!
//! TCP cannot tell on which direction of a path the propagation delay sits;
//! what it measures, and what BBR's model uses, is the round trip.
//!
//! Timing is sub-millisecond: one thread waits in poll(2) on the TUN fd and a
//! timerfd armed (CLOCK_MONOTONIC, absolute, nanoseconds) for the earliest
//! held packet. The thread asks for SCHED_FIFO so iperf3 on the same two
//! cores does not delay its wake-ups; if that is refused it runs anyway and
//! the lateness statistics show the cost.
//!
//! Each path's release time comes from [`crate::pathsched`]: base delay,
//! optional uniform jitter, ACK batching and a change of the base delay at a
//! given time, never reordering within a path. Paths can be replaced while
//! the element runs ([`DelayElement::set_path`]), e.g. at the start of each
//! repetition, on the element's clock ([`clock_ns`]).

use std::collections::{BinaryHeap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::netns::Netns;
use crate::pathsched::{PathDelay, PathSchedule};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const MAX_HELD: usize = 200_000;

/// Counters of a running element (all monotonic).
#[derive(Debug, Default)]
pub struct DelayStats {
    pub packets_in: AtomicU64,
    pub packets_out: AtomicU64,
    /// Dropped because more than MAX_HELD packets were held (never expected).
    pub overflow_drops: AtomicU64,
    /// Sum and max of (actual - scheduled) release time, nanoseconds.
    pub lateness_sum_ns: AtomicU64,
    pub lateness_max_ns: AtomicU64,
}

impl DelayStats {
    pub fn mean_lateness(&self) -> Duration {
        let n = self.packets_out.load(Ordering::Relaxed).max(1);
        Duration::from_nanos(self.lateness_sum_ns.load(Ordering::Relaxed) / n)
    }
}

/// A running delay element; stops and closes its TUN device on drop.
pub struct DelayElement {
    stop: Arc<AtomicBool>,
    control: std::sync::mpsc::Sender<(u32, PathDelay)>,
    thread: Option<JoinHandle<()>>,
    pub stats: Arc<DelayStats>,
}

/// Create TUN device `ifname` inside `ns` (not yet up).
pub fn create_tun(ns: &Netns, ifname: &str) -> Result<File> {
    let name = ifname.to_string();
    ns.run(move || -> Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")
            .context("open /dev/net/tun")?;
        let mut req = [0u8; 40];
        req[..name.len()].copy_from_slice(name.as_bytes());
        let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as u16;
        req[16..18].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads a struct ifreq, which `req` is laid out as.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, req.as_mut_ptr()) };
        if rc < 0 {
            bail!("TUNSETIFF {name}: {}", std::io::Error::last_os_error());
        }
        Ok(file)
    })?
}

#[derive(PartialEq, Eq)]
struct Held {
    due_ns: u64,
    seq: u64,
    packet: Vec<u8>,
}

impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // BinaryHeap is a max-heap: earliest due first, then FIFO.
        (other.due_ns, other.seq).cmp(&(self.due_ns, self.seq))
    }
}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The element's clock (CLOCK_MONOTONIC, ns): the time base of
/// [`PathDelay::change_at_ns`].
pub fn clock_ns() -> u64 {
    now_ns()
}

fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

impl DelayElement {
    /// Start forwarding packets read from `tun` back into it after the delay
    /// of their IPv4 destination (`default` for unknown destinations).
    pub fn start(
        tun: File,
        delays: HashMap<Ipv4Addr, Duration>,
        default: Duration,
    ) -> Result<Self> {
        let paths = delays
            .into_iter()
            .map(|(a, d)| {
                let d = PathDelay {
                    base_ns: d.as_nanos() as u64,
                    ..Default::default()
                };
                (a, d)
            })
            .collect();
        Self::start_with(tun, paths, default)
    }

    /// Like [`DelayElement::start`] with a full [`PathDelay`] per destination.
    pub fn start_with(
        tun: File,
        paths: HashMap<Ipv4Addr, PathDelay>,
        default: Duration,
    ) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(DelayStats::default());
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK)
            .context("timerfd_create")?;
        let (stop2, stats2) = (stop.clone(), stats.clone());
        let mut scheds: HashMap<u32, PathSchedule> = paths
            .into_iter()
            .map(|(a, d)| (u32::from(a), PathSchedule::new(d, u32::from(a) as u64)))
            .collect();
        let (control, updates) = std::sync::mpsc::channel();
        let default_ns = default.as_nanos() as u64;
        let thread = std::thread::Builder::new()
            .name("rttfair-delay".into())
            .spawn(move || {
                raise_priority();
                relay(
                    tun,
                    timer,
                    &mut scheds,
                    &updates,
                    default_ns,
                    &stop2,
                    &stats2,
                );
            })
            .context("spawn delay thread")?;
        Ok(DelayElement {
            stop,
            control,
            thread: Some(thread),
            stats,
        })
    }
}

impl DelayElement {
    /// Replace the delay of the path to `dst` (takes effect within one
    /// poll period, 20 ms at most; packets already held keep their times).
    pub fn set_path(&self, dst: Ipv4Addr, d: PathDelay) -> Result<()> {
        self.control
            .send((u32::from(dst), d))
            .map_err(|_| anyhow::anyhow!("delay element has stopped"))
    }
}

impl Drop for DelayElement {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn raise_priority() {
    let param = libc::sched_param { sched_priority: 20 };
    // SAFETY: plain syscall on the calling thread with a valid param.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
}

fn relay(
    mut tun: File,
    timer: TimerFd,
    paths: &mut HashMap<u32, PathSchedule>,
    updates: &std::sync::mpsc::Receiver<(u32, PathDelay)>,
    default_ns: u64,
    stop: &AtomicBool,
    stats: &DelayStats,
) {
    let mut heap: BinaryHeap<Held> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut armed_for = u64::MAX;
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        {
            let mut fds = [
                PollFd::new(tun.as_fd(), PollFlags::POLLIN),
                PollFd::new(timer.as_fd(), PollFlags::POLLIN),
            ];
            let _ = poll(&mut fds, PollTimeout::from(20u16));
        }
        while let Ok((dst, d)) = updates.try_recv() {
            paths
                .entry(dst)
                .and_modify(|p| p.delay = d)
                .or_insert_with(|| PathSchedule::new(d, dst as u64));
        }
        // Take in everything that arrived.
        loop {
            match tun.read(&mut buf) {
                Ok(n) if n >= 20 => {
                    stats.packets_in.fetch_add(1, Ordering::Relaxed);
                    let dst = u32::from_be_bytes([buf[16], buf[17], buf[18], buf[19]]);
                    if heap.len() >= MAX_HELD {
                        stats.overflow_drops.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let now = now_ns();
                    let due_ns = match paths.get_mut(&dst) {
                        Some(p) => p.due(now),
                        None => now + default_ns,
                    };
                    seq += 1;
                    heap.push(Held {
                        due_ns,
                        seq,
                        packet: buf[..n].to_vec(),
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        // Release everything due.
        let now = now_ns();
        while heap.peek().is_some_and(|h| h.due_ns <= now) {
            let h = heap.pop().unwrap();
            let late = now.saturating_sub(h.due_ns);
            stats.lateness_sum_ns.fetch_add(late, Ordering::Relaxed);
            stats.lateness_max_ns.fetch_max(late, Ordering::Relaxed);
            if tun.write(&h.packet).is_ok() {
                stats.packets_out.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Arm the timer for the next one.
        let _ = timer.wait(); // clears an expiry, non-blocking
        if let Some(next) = heap.peek() {
            if next.due_ns != armed_for {
                let ts = TimeSpec::new(
                    (next.due_ns / 1_000_000_000) as i64,
                    (next.due_ns % 1_000_000_000) as i64,
                );
                let _ = timer.set(
                    Expiration::OneShot(ts),
                    TimerSetTimeFlags::TFD_TIMER_ABSTIME,
                );
                armed_for = next.due_ns;
            }
        } else {
            armed_for = u64::MAX;
        }
    }
}
