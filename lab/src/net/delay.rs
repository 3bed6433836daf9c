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
//!   packets, which is what lets it keep up with 500 Mbit/s of data on a
//!   2-core machine (1 Gbit/s runs the stack out of CPU; docs/results.md).
//!
//! TCP cannot tell on which direction of a path the propagation delay sits;
//! what it measures, and what BBR's model uses, is the round trip.
//!
//! Threads (see [`crate::net::delay_writer`] for why): one reader waits in
//! poll(2) on the TUN fd, timestamps each packet as it arrives
//! (CLOCK_MONOTONIC, ns), computes its release time and hands it to the
//! writer of its path; each writer sleeps until its earliest held packet is
//! due and writes it back. Writing runs the kernel's receive path (and
//! everything it triggers) in the writer, so the reader's timestamps never
//! wait for that work, and with one writer pinned per core ([`Threads`]) the
//! two cores share it. All ask for SCHED_FIFO (the reader above the writers)
//! so iperf3 and compilers on the same two cores do not delay their
//! wake-ups; if that is refused they run anyway and the lateness statistics
//! show the cost.
//!
//! Each path's release time comes from [`crate::net::pathsched`]: base delay,
//! optional uniform jitter, ACK batching and a change of the base delay at a
//! given time (in one step or as a ramp), never reordering within a path. Paths can be replaced while
//! the element runs ([`DelayElement::set_path`]), e.g. at the start of each
//! repetition, on the element's clock ([`clock_ns`]).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::net::clock::{clock_ns, realtime_priority};
use crate::net::delay_writer::{self, DelayStats, Held, WriterPlace, WriterShared};
use crate::net::netns::Netns;
use crate::net::pathsched::{PathDelay, PathSchedule};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const MAX_HELD: usize = 200_000;

/// SCHED_FIFO priority of the reader: above the writers, so a packet's
/// arrival time is taken when it arrives even while a writer is busy.
const READER_PRIORITY: i32 = 30;
/// How the element spreads its work over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threads {
    /// Writer threads; paths are shared out among them by destination
    /// address. 1 = all kernel work of the writes on one thread.
    pub writers: usize,
    /// Pin writer k to the k-th core this process may use.
    pub pin: bool,
}

impl Default for Threads {
    /// One pinned writer per core, at most two: the measured best on the
    /// project's 2-core machines (docs/results.md, "Lab accuracy per rate").
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Threads {
            writers: cores.clamp(1, 2),
            pin: true,
        }
    }
}

/// A running delay element; stops and closes its TUN device on drop.
pub struct DelayElement {
    stop: Arc<AtomicBool>,
    /// Path changes, to the reader.
    control: Sender<(u32, PathDelay)>,
    threads: Vec<JoinHandle<()>>,
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
        Self::start_threads(tun, paths, default, Threads::default())
    }

    /// Like [`DelayElement::start_with`] with the threads chosen.
    pub fn start_threads(
        tun: File,
        paths: HashMap<Ipv4Addr, PathDelay>,
        default: Duration,
        threads: Threads,
    ) -> Result<Self> {
        if threads.writers == 0 {
            bail!("the delay element needs at least one writer thread");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(DelayStats::default());
        let tun = Arc::new(tun);
        let held = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        let mut writers = Vec::new();
        for index in 0..threads.writers {
            let (tx, rx) = std::sync::mpsc::channel::<Held>();
            let shared = WriterShared {
                tun: tun.clone(),
                stop: stop.clone(),
                stats: stats.clone(),
                held: held.clone(),
            };
            let place = WriterPlace {
                index,
                pin: threads.pin,
            };
            let h = std::thread::Builder::new()
                .name(format!("rttfair-dly-w{index}"))
                .spawn(move || delay_writer::write_loop(shared, rx, place))
                .context("spawn delay writer thread")?;
            handles.push(h);
            writers.push(tx);
        }
        let scheds: HashMap<u32, PathSchedule> = paths
            .into_iter()
            .map(|(a, d)| (u32::from(a), PathSchedule::new(d, u32::from(a) as u64)))
            .collect();
        let (control, updates) = std::sync::mpsc::channel();
        let reader = Reader {
            tun,
            paths: scheds,
            updates,
            default_ns: default.as_nanos() as u64,
            writers,
            held,
            stop: stop.clone(),
            stats: stats.clone(),
        };
        let h = std::thread::Builder::new()
            .name("rttfair-dly-r".into())
            .spawn(move || {
                realtime_priority(READER_PRIORITY);
                reader.run();
            })
            .context("spawn delay reader thread")?;
        handles.push(h);
        Ok(DelayElement {
            stop,
            control,
            threads: handles,
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
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The reading side: arrival time, release time, hand-off to a writer.
struct Reader {
    tun: Arc<File>,
    paths: HashMap<u32, PathSchedule>,
    updates: std::sync::mpsc::Receiver<(u32, PathDelay)>,
    default_ns: u64,
    writers: Vec<Sender<Held>>,
    held: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    stats: Arc<DelayStats>,
}

impl Reader {
    fn run(mut self) {
        let mut seq = 0u64;
        let mut buf = vec![0u8; 65536];
        let tun = self.tun.clone();
        let mut file: &File = &tun;
        while !self.stop.load(Ordering::Relaxed) {
            {
                let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::from(20u16));
            }
            while let Ok((dst, d)) = self.updates.try_recv() {
                self.paths
                    .entry(dst)
                    .and_modify(|p| p.delay = d)
                    .or_insert_with(|| PathSchedule::new(d, dst as u64));
            }
            // Take in everything that arrived.
            loop {
                match file.read(&mut buf) {
                    Ok(n) if n >= 20 => {
                        seq += 1;
                        self.schedule(&buf[..n], seq);
                    }
                    Ok(_) => {}
                    Err(_) => break, // WouldBlock: all read
                }
            }
        }
    }

    /// Timestamp one packet, compute its release time and hand it to the
    /// writer of its path.
    fn schedule(&mut self, packet: &[u8], seq: u64) {
        self.stats.packets_in.fetch_add(1, Ordering::Relaxed);
        if self.held.load(Ordering::Relaxed) >= MAX_HELD {
            self.stats.overflow_drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let dst = u32::from_be_bytes([packet[16], packet[17], packet[18], packet[19]]);
        let now = clock_ns();
        let due_ns = match self.paths.get_mut(&dst) {
            Some(p) => p.due(now),
            None => now + self.default_ns,
        };
        let writer = &self.writers[dst as usize % self.writers.len()];
        self.held.fetch_add(1, Ordering::Relaxed);
        let held = Held {
            due_ns,
            seq,
            packet: packet.to_vec(),
        };
        if writer.send(held).is_err() {
            self.held.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
