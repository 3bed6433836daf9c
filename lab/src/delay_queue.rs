//! The delay element on a multi-queue TUN device: one thread per queue,
//! pinned one per core, each reading, holding and writing back its own
//! queue's packets.
//!
//! The kernel spreads packets over the queues by flow (tun's automatic
//! queue selection keeps a flow on the queue that last wrote it), so a
//! flow's packets are read, held and written by one thread in order, and
//! the two cores each pay the kernel work of their writes (see
//! [`crate::delay_writer`] for what a write runs). Unlike the reader +
//! writers layout there is no hand-off between threads per packet: on a
//! saturated 2-core host a cross-core wake-up per ACK costs CPU that the
//! stack needs.
//!
//! Each queue keeps its own copy of the path schedules; path changes are
//! sent to every queue. Jitter never reorders a flow (each flow stays on one
//! queue); two flows to one sender address may draw different jitter.

use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::delay::DelayStats;
use crate::delay_writer::{Held, WriterPlace};
use crate::pathsched::{PathDelay, PathSchedule};

/// Everything one queue's thread owns.
pub struct Queue {
    pub tun: File,
    pub paths: HashMap<u32, PathSchedule>,
    pub updates: Receiver<(u32, PathDelay)>,
    pub default_ns: u64,
    /// Most packets this queue holds before it drops (never expected).
    pub max_held: usize,
    pub stop: Arc<AtomicBool>,
    pub stats: Arc<DelayStats>,
}

/// Serve one TUN queue until the element stops.
pub fn queue_loop(mut q: Queue, place: WriterPlace) {
    if place.pin {
        crate::delay_writer::pin_to_core(place.index);
    }
    crate::delay::realtime_priority(crate::delay::WRITER_PRIORITY);
    let Ok(timer) = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK) else {
        return;
    };
    let mut heap: BinaryHeap<Held> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut armed_for = u64::MAX;
    let mut buf = vec![0u8; 65536];
    while !q.stop.load(Ordering::Relaxed) {
        {
            let mut fds = [
                PollFd::new(q.tun.as_fd(), PollFlags::POLLIN),
                PollFd::new(timer.as_fd(), PollFlags::POLLIN),
            ];
            let _ = poll(&mut fds, PollTimeout::from(20u16));
        }
        while let Ok((dst, d)) = q.updates.try_recv() {
            q.paths
                .entry(dst)
                .and_modify(|p| p.delay = d)
                .or_insert_with(|| PathSchedule::new(d, dst as u64));
        }
        take_in(&mut q, &mut heap, &mut seq, &mut buf);
        release_due(&mut q, &mut heap);
        let _ = timer.wait(); // clears an expiry, non-blocking
        match heap.peek() {
            Some(next) if next.due_ns != armed_for => {
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
            Some(_) => {}
            None => armed_for = u64::MAX,
        }
    }
}

/// Read everything waiting on the queue, timestamp it and hold it.
fn take_in(q: &mut Queue, heap: &mut BinaryHeap<Held>, seq: &mut u64, buf: &mut [u8]) {
    loop {
        match q.tun.read(buf) {
            Ok(n) if n >= 20 => {
                q.stats.packets_in.fetch_add(1, Ordering::Relaxed);
                if heap.len() >= q.max_held {
                    q.stats.overflow_drops.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let dst = u32::from_be_bytes([buf[16], buf[17], buf[18], buf[19]]);
                let now = crate::delay::clock_ns();
                let due_ns = match q.paths.get_mut(&dst) {
                    Some(p) => p.due(now),
                    None => now + q.default_ns,
                };
                *seq += 1;
                heap.push(Held {
                    due_ns,
                    seq: *seq,
                    packet: buf[..n].to_vec(),
                });
            }
            Ok(_) => {}
            Err(_) => break, // WouldBlock: all read
        }
    }
}

/// Write every held packet that is due, earliest first; the clock is read
/// again for each (a write runs the stack and can take long).
fn release_due(q: &mut Queue, heap: &mut BinaryHeap<Held>) {
    loop {
        let now = crate::delay::clock_ns();
        if !heap.peek().is_some_and(|h| h.due_ns <= now) {
            break;
        }
        let h = heap.pop().unwrap();
        let late = now - h.due_ns;
        q.stats.lateness_sum_ns.fetch_add(late, Ordering::Relaxed);
        q.stats.lateness_max_ns.fetch_max(late, Ordering::Relaxed);
        if q.tun.write(&h.packet).is_ok() {
            q.stats.packets_out.fetch_add(1, Ordering::Relaxed);
        }
    }
}
