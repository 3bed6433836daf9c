//! When the delay element releases each packet of one path: the base
//! delay, optionally with uniform jitter, ACK batching and a change of the
//! base delay at a given time. Pure scheduling, no I/O, so it is tested
//! without a kernel.
//!
//! Rules, in order, for a packet that arrives at `t`:
//! 1. base = the changed delay if a change is set and `t >= change_at`,
//!    else the configured one (a route change affects what enters the path
//!    after it; what is in flight keeps its delay);
//! 2. due = t + base + U[0, jitter] (jitter drawn per packet);
//! 3. with batching of B, due is rounded *up* to the next multiple of B on
//!    the element's clock: every packet of the path due in one B-long slot
//!    leaves together, as from a receiver or middlebox that coalesces ACKs;
//! 4. due is never earlier than the previous packet's of the same path: no
//!    reordering within a flow. With jitter that is large against the packet
//!    spacing this shifts the distribution up (a packet waits behind a
//!    previous one that drew a larger delay), as a FIFO link with variable
//!    delay does; the mean added delay is then above J/2.

/// Static description of one path's delay.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathDelay {
    pub base_ns: u64,
    /// Maximum of the uniform jitter added per packet (0 = none).
    pub jitter_ns: u64,
    /// Release in batches every this many ns (0 = no batching).
    pub batch_ns: u64,
    /// From this element-clock time on, `changed_base_ns` replaces `base_ns`.
    pub change_at_ns: Option<u64>,
    pub changed_base_ns: u64,
}

impl PathDelay {
    /// The delay of `flow`'s path for a repetition that starts at `start_ns`
    /// on the element's clock.
    pub fn for_flow(flow: &crate::scenario::FlowSpec, start_ns: u64) -> PathDelay {
        let ns = |ms: f64| (ms * 1e6) as u64;
        PathDelay {
            base_ns: ns(flow.rtt_ms),
            jitter_ns: ns(flow.jitter_ms),
            batch_ns: ns(flow.ack_batch_ms),
            change_at_ns: flow.rtt_change.map(|c| start_ns + ns(c.at_s * 1e3)),
            changed_base_ns: flow.rtt_change.map(|c| ns(c.rtt_ms)).unwrap_or(0),
        }
    }

    /// True if the path is more than a fixed delay.
    pub fn varies(&self) -> bool {
        self.jitter_ns > 0 || self.batch_ns > 0 || self.change_at_ns.is_some()
    }
}

/// A path's delay plus the state that keeps it in order.
#[derive(Debug, Clone)]
pub struct PathSchedule {
    pub delay: PathDelay,
    last_due_ns: u64,
    rng: fastrand::Rng,
}

impl PathSchedule {
    /// `seed` makes jitter reproducible (tests) or per-path (the element).
    pub fn new(delay: PathDelay, seed: u64) -> Self {
        PathSchedule {
            delay,
            last_due_ns: 0,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// The base delay in force for a packet arriving at `now_ns`.
    pub fn base_at(&self, now_ns: u64) -> u64 {
        match self.delay.change_at_ns {
            Some(at) if now_ns >= at => self.delay.changed_base_ns,
            _ => self.delay.base_ns,
        }
    }

    /// Release time of a packet arriving at `now_ns` (rules 1-4 above).
    pub fn due(&mut self, now_ns: u64) -> u64 {
        let d = &self.delay;
        let jitter = if d.jitter_ns > 0 {
            self.rng.u64(0..=d.jitter_ns)
        } else {
            0
        };
        let mut due = now_ns + self.base_at(now_ns) + jitter;
        if d.batch_ns > 0 {
            due = due.div_ceil(d.batch_ns) * d.batch_ns;
        }
        due = due.max(self.last_due_ns);
        self.last_due_ns = due;
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn path(d: PathDelay) -> PathSchedule {
        PathSchedule::new(d, 7)
    }

    #[test]
    fn plain_delay_is_exact() {
        let mut p = path(PathDelay {
            base_ns: 20 * MS,
            ..Default::default()
        });
        assert_eq!(p.due(5), 20 * MS + 5);
        assert_eq!(p.due(100), 20 * MS + 100);
    }

    #[test]
    fn jitter_is_uniform_within_bounds_and_keeps_order() {
        let mut p = path(PathDelay {
            base_ns: 10 * MS,
            jitter_ns: 5 * MS,
            ..Default::default()
        });
        // Packets 10 ms apart: wider than the jitter, so order never binds
        // and the added delay is the drawn jitter: within [0, 5 ms], mean
        // about 2.5 ms, and it does vary.
        let mut added = Vec::new();
        let mut last = 0;
        for k in 0..2000u64 {
            let t = k * 10 * MS;
            let due = p.due(t);
            assert!(due >= last, "reordered");
            last = due;
            added.push(due - t - 10 * MS);
        }
        assert!(added.iter().all(|&a| a <= 5 * MS));
        let mean = added.iter().sum::<u64>() as f64 / added.len() as f64;
        assert!((mean / MS as f64 - 2.5).abs() < 0.15, "mean {mean}");
        assert!(added.iter().max().unwrap() - added.iter().min().unwrap() > 4 * MS);

        // Packets 10 us apart: order binds, no packet leaves before the one
        // ahead of it, and none earlier than its own base delay.
        let mut last = 0;
        for k in 0..2000u64 {
            let t = 100 * MS * 100 + k * 10_000;
            let due = p.due(t);
            assert!(due >= last && due >= t + 10 * MS);
            last = due;
        }
    }

    #[test]
    fn batching_releases_on_slot_boundaries() {
        let mut p = path(PathDelay {
            base_ns: 10 * MS,
            batch_ns: 4 * MS,
            ..Default::default()
        });
        // Arrivals at 0.5, 1, 3.9 ms are due at 10.5, 11, 13.9 -> all at 12
        // or 16 ms boundaries, never before their base delay.
        let dues: Vec<u64> = [MS / 2, MS, 3_900_000, 6 * MS]
            .iter()
            .map(|&t| p.due(t))
            .collect();
        assert_eq!(dues, vec![12 * MS, 12 * MS, 16 * MS, 16 * MS]);
    }

    #[test]
    fn rtt_change_applies_to_arrivals_after_it_without_reordering() {
        let mut p = path(PathDelay {
            base_ns: 50 * MS,
            change_at_ns: Some(100 * MS),
            changed_base_ns: 10 * MS,
            ..Default::default()
        });
        assert_eq!(p.due(99 * MS), 149 * MS);
        // Just after the change the new, shorter delay would overtake the
        // packet still held: it waits for it instead.
        assert_eq!(p.due(100 * MS), 149 * MS);
        // Once the old packets are out, the new delay holds exactly.
        assert_eq!(p.due(200 * MS), 210 * MS);
        // And a change upwards.
        let mut p = path(PathDelay {
            base_ns: 10 * MS,
            change_at_ns: Some(100 * MS),
            changed_base_ns: 80 * MS,
            ..Default::default()
        });
        assert_eq!(p.due(50 * MS), 60 * MS);
        assert_eq!(p.due(150 * MS), 230 * MS);
    }
}
