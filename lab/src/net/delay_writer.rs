//! The release side of the delay element: writer threads that hold packets
//! until they are due and write them back into the TUN device.
//!
//! Why a thread of its own: writing a packet into a TUN device runs the
//! receiving stack in the writer's own context (tun_get_user ->
//! netif_receive_skb under local_bh_disable). For an ACK that is the
//! sender's TCP, its next transmissions through two veths, the router and
//! the bottleneck's enqueue, often the bottleneck's dequeue and the
//! receiver's next ACK too: tens of microseconds per MTU packet. A thread
//! that both timed and wrote fell behind at 500 Mbit/s (4.8 ms late on
//! average). Here the reader ([`crate::net::delay`]) only reads, timestamps and
//! schedules; each writer holds its share of the paths (every packet of a
//! path goes to the same writer, so a path is never reordered) and pays that
//! kernel work, and with one writer pinned per core the two cores do it side
//! by side.

use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::net::clock::{clock_ns, realtime_priority};

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

/// SCHED_FIFO priority of the writers.
const WRITER_PRIORITY: i32 = 20;

/// How long a writer with nothing held waits before it looks at the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// A packet held by the element, with the time it is due.
#[derive(PartialEq, Eq)]
pub struct Held {
    pub due_ns: u64,
    /// Arrival order: equal due times leave first in, first out.
    pub seq: u64,
    pub packet: Vec<u8>,
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

/// Where a writer runs: its index picks its core when pinning is on.
#[derive(Debug, Clone, Copy)]
pub struct WriterPlace {
    pub index: usize,
    pub pin: bool,
}

/// Everything a writer shares with the reader.
pub struct WriterShared {
    pub tun: Arc<File>,
    pub stop: Arc<AtomicBool>,
    pub stats: Arc<DelayStats>,
    /// Packets held by all writers together (the reader's overflow guard).
    pub held: Arc<AtomicUsize>,
}

/// Hold the packets that arrive on `rx` until due and write them to the TUN
/// device; returns when the reader hangs up or the element stops.
pub fn write_loop(shared: WriterShared, rx: Receiver<Held>, place: WriterPlace) {
    if place.pin {
        pin_to_core(place.index);
    }
    realtime_priority(WRITER_PRIORITY);
    let mut heap: BinaryHeap<Held> = BinaryHeap::new();
    let mut tun: &File = &shared.tun;
    while !shared.stop.load(Ordering::Relaxed) {
        let wait = heap
            .peek()
            .map(|h| Duration::from_nanos(h.due_ns.saturating_sub(clock_ns())))
            .unwrap_or(IDLE_WAIT);
        match rx.recv_timeout(wait) {
            Ok(h) => {
                heap.push(h);
                heap.extend(rx.try_iter());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        release_due(&mut heap, &mut tun, &shared);
    }
}

/// Write every held packet that is due, earliest first.
fn release_due(heap: &mut BinaryHeap<Held>, tun: &mut &File, shared: &WriterShared) {
    let stats = &shared.stats;
    loop {
        // The clock is read again for each packet: a write can take long
        // (the stack runs in it), and lateness must include that wait.
        let now = clock_ns();
        if heap.peek().is_none_or(|h| h.due_ns > now) {
            break;
        }
        let h = heap.pop().unwrap();
        shared.held.fetch_sub(1, Ordering::Relaxed);
        let late = now - h.due_ns;
        stats.lateness_sum_ns.fetch_add(late, Ordering::Relaxed);
        stats.lateness_max_ns.fetch_max(late, Ordering::Relaxed);
        if tun.write(&h.packet).is_ok() {
            stats.packets_out.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Pin the calling thread to core `index` modulo the cores it may use.
/// Best effort: a refused affinity leaves the thread where the scheduler
/// puts it.
pub(crate) fn pin_to_core(index: usize) {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let Ok(allowed) = sched_getaffinity(Pid::from_raw(0)) else {
        return;
    };
    let cores: Vec<usize> = (0..CpuSet::count())
        .filter(|&c| allowed.is_set(c).unwrap_or(false))
        .collect();
    if cores.is_empty() {
        return;
    }
    let mut set = CpuSet::new();
    if set.set(cores[index % cores.len()]).is_ok() {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(due_ns: u64, seq: u64) -> Held {
        Held {
            due_ns,
            seq,
            packet: vec![seq as u8],
        }
    }

    #[test]
    fn heap_releases_earliest_due_first_and_ties_in_arrival_order() {
        let mut h = BinaryHeap::new();
        for (due, seq) in [(30, 1), (10, 2), (20, 3), (10, 4), (20, 5)] {
            h.push(held(due, seq));
        }
        let order: Vec<u64> = std::iter::from_fn(|| h.pop().map(|x| x.seq)).collect();
        assert_eq!(order, vec![2, 4, 3, 5, 1]);
    }
}
