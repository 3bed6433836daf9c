//! Goodput as data arrives at the receivers: the counter the window's
//! goodput comes from (see [`crate::results::accounting`]).
//!
//! A tc ingress program on the receivers' interface (`c0`, right after the
//! bottleneck; `bpf/lab_arrivals.bpf.c`) stamps every segment that carries
//! data into a ring buffer: time, 4-tuple, first sequence number, payload
//! length. Here each connection has a [`Scoreboard`] of the bytes that
//! arrived, and each sender's first-time bytes are added up between the
//! window's edges by their arrival time. So a window's goodput is bytes that
//! crossed the bottleneck in that window, retransmissions excluded, and over
//! a whole run it is every connection's unique payload.
//!
//! Why not a cheaper counter:
//! - the receivers' in-order counter (`tcpi_bytes_received`, [`crate::net::rcvbytes`],
//!   kept as a cross-check) credits bytes held out of order behind a hole
//!   when the hole fills: with a 200 ms flow in loss recovery as the window
//!   opens that put goodput 2.5-2.9 % above the link (docs/results.md);
//! - the advance of the highest sequence number per connection, kept in a
//!   BPF map, credits a hole as soon as data after it arrives, before the
//!   retransmission crosses the link, so a window that ends with holes open
//!   still reads above the link;
//! - an exact scoreboard in BPF would need one entry per hole, and their
//!   number is not bounded (a full drop-tail queue drops about every other
//!   packet of a flow in startup).
//!
//! Hence: BPF records, user space decides. One record per packet (per GRO
//! packet where GRO is on) costs a ring-buffer reservation in the kernel and
//! a range-set update here; the lab drains the ring every 250 ms or less.
//! A record lost to a full ring is counted ([`ArrivalCounter::finish`]): it
//! can only make goodput smaller, since its bytes count only if they arrive
//! again.
//!
//! Every connection of a sender counts (iperf3's control connection too: a
//! few hundred bytes at the start and the end of a test), each with its own
//! scoreboard, so their sequence spaces never mix.

use std::cell::{Cell, RefCell};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};
use std::rc::Rc;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, RingBuffer, RingBufferBuilder};
use rttfair_loader::lab_arrival::Arrival;
use rustc_hash::FxHashMap;

use crate::net::netns::Netns;
use crate::results::scoreboard::Scoreboard;

/// First-time bytes per sender, split at the window's edges by arrival
/// time. Pure bookkeeping (no kernel), so it is tested on its own.
#[derive(Debug, Default)]
pub struct Tally {
    /// The edges marked so far, CLOCK_MONOTONIC ns, non-decreasing.
    edges_ns: Vec<u64>,
    /// Looked up once per arriving packet, so with rustc-hash's Fx hash
    /// (a few instructions for these 12-byte keys) rather than the
    /// standard SipHash, which cost more than the scoreboard itself at
    /// 1 Gbit/s; the keys are the lab's own addresses, so SipHash's
    /// resistance to chosen keys buys nothing here.
    connections: FxHashMap<(SocketAddrV4, SocketAddrV4), Scoreboard>,
    /// Per sender: first-time bytes before the first edge, between each
    /// pair of edges, after the last.
    spans: FxHashMap<Ipv4Addr, Vec<u64>>,
}

impl Tally {
    /// Count an arrival: its first-time bytes go to the span its time
    /// falls in.
    pub fn add(&mut self, a: &Arrival) {
        let new = self
            .connections
            .entry((a.src, a.dst))
            .or_insert_with(|| Scoreboard::new(a.seq))
            .arrive(a.seq, a.len);
        if new == 0 {
            return;
        }
        let span = self.edges_ns.partition_point(|&e| e <= a.t_ns);
        let spans = self.spans.entry(*a.src.ip()).or_default();
        if spans.len() <= span {
            spans.resize(span + 1, 0);
        }
        spans[span] += new;
    }

    /// Mark an edge at `t_ns`. Arrivals are binned by their own time, so
    /// they may be added after the edge (the ring is drained later); an
    /// edge must not be marked after arrivals stamped later than it were
    /// added, which holds when it is marked at the time it names.
    pub fn mark_edge(&mut self, t_ns: u64) {
        let last = self.edges_ns.last().copied().unwrap_or(0);
        self.edges_ns.push(t_ns.max(last));
    }

    /// Bytes `sender` delivered for the first time before edge `k`.
    pub fn before_edge(&self, sender: Ipv4Addr, k: usize) -> u64 {
        self.spans
            .get(&sender)
            .map(|s| s.iter().take(k + 1).sum())
            .unwrap_or(0)
    }
}

/// The arrival counter attached to one interface for a run; each
/// repetition is one count ([`ArrivalCounter::restart`] ..
/// [`ArrivalCounter::take`]). Dropping it detaches the program.
pub struct ArrivalCounter<'n> {
    // Field order is drop order: the ring before the object whose map it
    // reads.
    ring: RingBuffer<'static>,
    tally: Rc<RefCell<Tally>>,
    /// The lost-records counter when the current count started.
    lost_at_restart: Cell<u64>,
    obj: Object,
    /// Where the program is attached (the interface's index in `ns`).
    ifindex: i32,
    prog_fd: OwnedFd,
    ns: &'n Netns,
}

/// The tc filter's handle and priority on the receivers' ingress (the
/// random-loss program uses 1/1 on the router's).
const TC_HANDLE: u32 = 0x17;
const TC_PRIORITY: u32 = 0x17;

impl<'n> ArrivalCounter<'n> {
    /// Load the program and attach it to `ifname`'s ingress in `ns`.
    pub fn attach(ns: &'n Netns, ifname: &str) -> Result<ArrivalCounter<'n>> {
        let obj = ObjectBuilder::default()
            .open_memory(rttfair_loader::objects::lab::ARRIVALS)
            .context("open arrivals program")?
            .load()
            .context("load arrivals program")?;
        let tally = Rc::new(RefCell::new(Tally::default()));
        let ring = {
            let map = obj
                .maps()
                .find(|m| m.name() == "lab_arrivals")
                .context("arrivals ring")?;
            let sink = tally.clone();
            let mut b = RingBufferBuilder::new();
            b.add(&map, move |bytes: &[u8]| {
                if let Some(a) = Arrival::decode(bytes) {
                    sink.borrow_mut().add(&a);
                }
                0
            })?;
            b.build().context("arrivals ring buffer")?
        };
        let prog = obj
            .progs()
            .find(|p| p.name() == "lab_count_arrivals")
            .context("arrivals program")?;
        let prog_fd = prog.as_fd().try_clone_to_owned()?;
        let fd = prog_fd.try_clone()?;
        let name = ifname.to_string();
        let ifindex = ns.run(move || -> Result<i32> {
            let idx = ifindex(&name)?;
            let mut hook = tc_hook(fd.as_fd(), idx);
            hook.create().context("create clsact")?;
            hook.attach().context("attach arrivals program")?;
            Ok(idx)
        })??;
        Ok(ArrivalCounter {
            ring,
            tally,
            lost_at_restart: Cell::new(0),
            obj,
            ifindex,
            prog_fd,
            ns,
        })
    }

    /// Count what the ring holds now.
    pub fn drain(&self) -> Result<()> {
        self.ring.consume().context("drain arrivals ring")
    }

    /// Mark a window edge now-ish: at `t_ns` (CLOCK_MONOTONIC), which must
    /// not be earlier than the last [`ArrivalCounter::drain`].
    pub fn mark_edge(&self, t_ns: u64) {
        self.tally.borrow_mut().mark_edge(t_ns);
    }

    /// Start a new count (a repetition): what arrived before is dropped.
    pub fn restart(&self) -> Result<()> {
        self.drain()?;
        *self.tally.borrow_mut() = Tally::default();
        self.lost_at_restart.set(self.lost_total());
        Ok(())
    }

    /// Drain the ring and return the count since [`ArrivalCounter::restart`]
    /// and how many records were lost to a full ring meanwhile.
    pub fn take(&self) -> Result<(Tally, u64)> {
        self.drain()?;
        let tally = std::mem::take(&mut *self.tally.borrow_mut());
        Ok((tally, self.lost_total() - self.lost_at_restart.get()))
    }

    /// Records lost since the program was loaded.
    fn lost_total(&self) -> u64 {
        self.obj
            .maps()
            .find(|m| m.name() == "lab_arrivals_lost")
            .and_then(|m| m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok().flatten())
            .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap()))
            .unwrap_or(0)
    }
}

/// The counter's tc hook on interface `ifindex`'s ingress.
fn tc_hook(prog: std::os::fd::BorrowedFd<'_>, ifindex: i32) -> libbpf_rs::TcHook {
    libbpf_rs::TcHookBuilder::new(prog)
        .ifindex(ifindex)
        .replace(true)
        .handle(TC_HANDLE)
        .priority(TC_PRIORITY)
        .hook(libbpf_rs::TC_INGRESS)
}

/// The index of interface `name` in the calling thread's namespace.
fn ifindex(name: &str) -> Result<i32> {
    let idx =
        nix::net::if_::if_nametoindex(name).with_context(|| format!("no interface {name}"))?;
    Ok(idx as i32)
}

impl Drop for ArrivalCounter<'_> {
    fn drop(&mut self) {
        // Best effort: deleting the namespace removes the filter anyway.
        if let Ok(fd) = self.prog_fd.try_clone() {
            let idx = self.ifindex;
            let _ = self.ns.run(move || tc_hook(fd.as_fd(), idx).detach());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(t_ns: u64, src: &str, seq: u32, len: u32) -> Arrival {
        Arrival {
            t_ns,
            src: src.parse().unwrap(),
            dst: "10.20.0.1:5201".parse().unwrap(),
            seq,
            len,
        }
    }

    #[test]
    fn bytes_go_to_the_span_of_their_arrival_time() {
        let mut t = Tally::default();
        let s1: Ipv4Addr = "10.10.1.1".parse().unwrap();
        t.add(&arrival(10, "10.10.1.1:4000", 0, 1000));
        t.mark_edge(100);
        // Added after the edge but stamped before it: before the edge.
        t.add(&arrival(99, "10.10.1.1:4000", 1000, 1000));
        t.add(&arrival(100, "10.10.1.1:4000", 2000, 1000));
        t.mark_edge(200);
        t.add(&arrival(150, "10.10.1.1:4000", 3000, 500));
        t.add(&arrival(250, "10.10.1.1:4000", 3500, 500));
        assert_eq!(t.before_edge(s1, 0), 2000);
        assert_eq!(t.before_edge(s1, 1), 3500);
        assert_eq!(t.before_edge(s1, 2), 4000);
        assert_eq!(t.before_edge("10.10.1.9".parse().unwrap(), 1), 0);
    }

    #[test]
    fn a_window_counts_a_hole_when_its_retransmission_arrives() {
        // A segment lost before the window opens, retransmitted inside it:
        // the window gets the retransmission (it crossed the link then), the
        // data after the hole stays before the window.
        let mut t = Tally::default();
        let s: Ipv4Addr = "10.10.1.2".parse().unwrap();
        t.add(&arrival(1, "10.10.1.2:4000", 0, 1000));
        t.add(&arrival(2, "10.10.1.2:4000", 2000, 5000));
        t.mark_edge(10);
        t.add(&arrival(11, "10.10.1.2:4000", 1000, 1000));
        t.add(&arrival(12, "10.10.1.2:4000", 2000, 1000)); // spurious
        t.mark_edge(20);
        assert_eq!(t.before_edge(s, 0), 6000);
        assert_eq!(t.before_edge(s, 1) - t.before_edge(s, 0), 1000);
    }

    #[test]
    fn connections_of_one_sender_have_their_own_sequence_spaces() {
        let mut t = Tally::default();
        let s: Ipv4Addr = "10.10.1.1".parse().unwrap();
        // Control connection and data connection with overlapping numbers.
        t.add(&arrival(1, "10.10.1.1:4000", 500, 300));
        t.add(&arrival(2, "10.10.1.1:4001", 500, 1448));
        t.add(&arrival(3, "10.10.1.1:4001", 500, 1448));
        t.mark_edge(5);
        assert_eq!(t.before_edge(s, 0), 1748);
    }
}
