//! When the delay element releases each packet of one path: the base
//! delay, optionally with uniform jitter, ACK batching and a change of the
//! base delay at a given time (a step, or a ramp over a given time). Pure
//! scheduling, no I/O, so it is tested without a kernel.
//!
//! Rules, in order, for a packet that arrives at `t`:
//! 1. base = the changed delay if a change is set and `t >= change_at`,
//!    else the configured one (a route change affects what enters the path
//!    after it; what is in flight keeps its delay). A change with a length
//!    (`change_over_ns`, the scenario's `rtt_change.over_s`) is a ramp: the
//!    base moves from the configured to the changed delay between
//!    `change_at` and `change_at + over` in equal steps ([`ramp_steps`]);
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
    /// How long the change takes, ns (0 = a step): a ramp from `base_ns`
    /// at `change_at_ns` to `changed_base_ns` this much later.
    pub change_over_ns: u64,
}

/// The height a ramp's steps aim at: about what the element's release
/// times resolve. Its wake-up and the stack add 0.1-0.3 ms to a held
/// packet on an idle host (tests/lab_selfcheck.rs), so a finer staircase is
/// lost in that noise and buys nothing but arithmetic.
pub const RAMP_STEP_NS: u64 = 100_000;

/// The least time between two steps: the element gives a packet the base
/// in force when it arrives, and ACKs arrive every 0.2-2 ms at the lab's
/// 10-100 Mbit/s, so a step sooner than this would mostly change the base
/// between two ACKs and no packet would carry it.
pub const RAMP_MIN_PERIOD_NS: u64 = 1_000_000;

/// The highest step a ramp may take: a jump of more than this is a small
/// step change of its own, which a ramp is meant not to be. It wins over
/// [`RAMP_MIN_PERIOD_NS`] for a ramp steeper than 1 ms per ms (which then
/// steps more often).
pub const RAMP_MAX_STEP_NS: u64 = 1_000_000;

/// How many equal steps a ramp of `delta_ns` over `over_ns` takes: steps
/// of about [`RAMP_STEP_NS`], fewer if they would come sooner than
/// [`RAMP_MIN_PERIOD_NS`] apart, but never one higher than
/// [`RAMP_MAX_STEP_NS`]; at least one. E.g. 200 -> 230 ms over 10 s: 300
/// steps of 0.1 ms, every 33 ms; 50 -> 52.5 ms over 10 s: 25 steps of
/// 0.1 ms, every 0.4 s; 20 -> 200 ms over 0.1 s: 180 steps of 1 ms.
pub fn ramp_steps(delta_ns: u64, over_ns: u64) -> u64 {
    let fine = delta_ns / RAMP_STEP_NS;
    let paced = fine.min(over_ns / RAMP_MIN_PERIOD_NS);
    paced.max(delta_ns.div_ceil(RAMP_MAX_STEP_NS)).max(1)
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
            change_over_ns: flow.rtt_change.map(|c| ns(c.over_s * 1e3)).unwrap_or(0),
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
        let d = &self.delay;
        let Some(at) = d.change_at_ns.filter(|at| now_ns >= *at) else {
            return d.base_ns;
        };
        let since = now_ns - at;
        if since >= d.change_over_ns {
            return d.changed_base_ns;
        }
        // Within a ramp: the k-th of n equal steps is taken k/n of the way
        // through it (k = 0 at its start, the old base).
        let (from, to) = (d.base_ns, d.changed_base_ns);
        let n = u128::from(ramp_steps(from.abs_diff(to), d.change_over_ns));
        let k = u128::from(since) * n / u128::from(d.change_over_ns);
        let moved = (u128::from(from.abs_diff(to)) * k / n) as u64;
        if to >= from {
            from + moved
        } else {
            from - moved
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

    /// The base every 0.1 ms of a ramp's element clock, from `at` - 1 s to
    /// its end + 1 s.
    fn bases(d: PathDelay) -> Vec<u64> {
        let p = path(d);
        let at = d.change_at_ns.unwrap();
        (at - 1000 * MS..at + d.change_over_ns + 1000 * MS)
            .step_by(100_000)
            .map(|t| p.base_at(t))
            .collect()
    }

    /// The largest jump between two consecutive values.
    fn largest_jump(v: &[u64]) -> u64 {
        v.windows(2).map(|w| w[0].abs_diff(w[1])).max().unwrap()
    }

    #[test]
    fn ramp_steps_are_fine_paced_and_never_above_a_millisecond() {
        // 200 -> 230 ms over 10 s: 0.1 ms every 33 ms.
        assert_eq!(ramp_steps(30 * MS, 10_000 * MS), 300);
        // 50 -> 52.5 ms over 10 s: 0.1 ms every 0.4 s.
        assert_eq!(ramp_steps(2_500_000, 10_000 * MS), 25);
        // 10 ms over 50 ms: 0.1 ms steps would come every 0.5 ms; paced
        // to one a millisecond: 50 steps of 0.2 ms.
        assert_eq!(ramp_steps(10 * MS, 50 * MS), 50);
        // Steeper than 1 ms per ms: 1 ms steps, more often than 1 ms.
        assert_eq!(ramp_steps(180 * MS, 100 * MS), 180);
        // A change smaller than one step: one step.
        assert_eq!(ramp_steps(50_000, 10_000 * MS), 1);
        assert_eq!(ramp_steps(0, 10_000 * MS), 1);
    }

    #[test]
    fn a_ramp_moves_linearly_in_small_steps_from_the_old_base_to_the_new() {
        let at = 5_000 * MS;
        let d = PathDelay {
            base_ns: 200 * MS,
            change_at_ns: Some(at),
            changed_base_ns: 230 * MS,
            change_over_ns: 10_000 * MS,
            ..Default::default()
        };
        let p = path(d);
        assert_eq!(p.base_at(at - 1), 200 * MS);
        assert_eq!(p.base_at(at), 200 * MS, "a ramp starts at the old base");
        assert_eq!(p.base_at(at + 10_000 * MS), 230 * MS);
        assert_eq!(p.base_at(at + 99_000 * MS), 230 * MS);
        // Linear: within one step (0.1 ms) of the straight line throughout.
        for k in 0..=100u64 {
            let t = at + k * 100 * MS;
            let line = 200.0 + 30.0 * k as f64 / 100.0;
            let got = p.base_at(t) as f64 / MS as f64;
            assert!(
                got <= line + 1e-9 && got > line - 0.1 - 1e-9,
                "{k}: {got} vs {line}"
            );
        }
        let v = bases(d);
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "not monotone");
        assert_eq!(largest_jump(&v), 100_000);
        let mut levels = v.clone();
        levels.dedup();
        assert_eq!(levels.len(), 301, "300 steps");

        // Down, and steep: 1 ms steps at most, and packets still in order.
        let d = PathDelay {
            base_ns: 200 * MS,
            change_at_ns: Some(at),
            changed_base_ns: 20 * MS,
            change_over_ns: 100 * MS,
            ..Default::default()
        };
        let v = bases(d);
        assert!(v.windows(2).all(|w| w[0] >= w[1]), "not monotone");
        assert_eq!(largest_jump(&v), MS);
        assert_eq!((v[0], *v.last().unwrap()), (200 * MS, 20 * MS));
        let mut p = path(d);
        let mut last = 0;
        for t in (at - 10 * MS..at + 400 * MS).step_by(50_000) {
            let due = p.due(t);
            assert!(due >= last && due >= t + p.base_at(t));
            last = due;
        }
    }

    #[test]
    fn a_flows_rtt_change_becomes_its_paths_ramp() {
        let spec = |over_s: f64| crate::scenario::FlowSpec {
            index: 1,
            group: "g".into(),
            cca: "cubic".into(),
            rtt_ms: 50.0,
            loss_pct: 0.0,
            start_s: 0.0,
            stop_s: 90.0,
            jitter_ms: 0.0,
            ack_batch_ms: 0.0,
            rtt_change: Some(crate::scenario::RttChange {
                at_s: 20.0,
                rtt_ms: 57.5,
                over_s,
            }),
        };
        let d = PathDelay::for_flow(&spec(10.0), 7 * MS);
        assert_eq!(
            (
                d.base_ns,
                d.change_at_ns,
                d.changed_base_ns,
                d.change_over_ns
            ),
            (50 * MS, Some(20_007 * MS), 57_500_000, 10_000 * MS)
        );
        assert!(d.varies());
        assert_eq!(PathDelay::for_flow(&spec(0.0), 0).change_over_ns, 0);
    }
}
