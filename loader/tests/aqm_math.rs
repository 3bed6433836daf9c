//! The lab's AQM decisions (bpf/include/aqm_math.h), compiled for the host
//! by build.rs, against an independent reference: RFC 8289's pseudocode
//! (section 5) written out as it stands, with f64 for the control law's
//! square root, run on a simulated queue. Both are driven by the same
//! packet traces through the same queue; the drop and mark decisions and
//! their times must be identical.

use std::collections::VecDeque;

use proptest::prelude::*;
// The host build of the math headers is linked into the loader crate.
extern crate rttfair_loader;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Params {
    target_ns: u64,
    interval_ns: u64,
    maxpacket: u32,
    ecn: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Vars {
    first_above_time: u64,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: u32,
    pending: u32,
}

extern "C" {
    fn host_aqm_codel_packet(
        v: *mut Vars,
        p: *const Params,
        now: u64,
        sojourn: u64,
        backlog: u64,
        ect: i32,
    ) -> u32;
    fn host_aqm_codel_empty(v: *mut Vars);
    fn host_aqm_codel_control_law(t: u64, interval: u64, count: u32) -> u64;
    fn host_aqm_step_packet(sojourn: u64, ahead: u32, k: u32, k_ns: u64, ect: i32) -> u32;
    fn host_aqm_pkts_to_ns(pkts: u32, wire: u32, rate: u64) -> u64;
    fn host_aqm_fq_queue(hash: u32, flows: u32) -> u32;
    fn host_aqm_codel_vars_size() -> u32;
    fn host_aqm_codel_params_size() -> u32;
}

const PASS: u32 = 0;
const DROP: u32 = 1;
const MARK: u32 = 2;
const MTU: u32 = 1514;
const MS: u64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
struct Pkt {
    id: usize,
    tstamp: u64,
    bytes: u32,
    ect: bool,
}

/// A drop or mark: packet id, time of the decision, verdict.
type Event = (usize, u64, u32);

/// A CoDel dequeue over a FIFO: returns the packet it sends, logging the
/// packets it drops or marks.
trait Dequeue {
    fn dequeue(&mut self, q: &mut Fifo, now: u64, log: &mut Vec<Event>) -> Option<Pkt>;
}

/// A FIFO that keeps its byte count.
#[derive(Default)]
struct Fifo {
    pkts: VecDeque<Pkt>,
    bytes: u64,
}

impl Fifo {
    fn push_back(&mut self, p: Pkt) {
        self.bytes += p.bytes as u64;
        self.pkts.push_back(p);
    }
    fn pop_front(&mut self) -> Option<Pkt> {
        let p = self.pkts.pop_front()?;
        self.bytes -= p.bytes as u64;
        Some(p)
    }
}

fn backlog(q: &Fifo) -> u64 {
    q.bytes
}

/// RFC 8289 section 5, line by line (the Linux count reuse the RFC gives),
/// plus ECN as the RFC's text describes it and Linux does it: mark an ECT
/// packet instead of dropping it, keep it, and end this dequeue.
struct Rfc {
    target: u64,
    interval: u64,
    maxpacket: u64,
    ecn: bool,
    first_above_time: u64,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

impl Rfc {
    fn new(p: &Params) -> Rfc {
        Rfc {
            target: p.target_ns,
            interval: p.interval_ns,
            maxpacket: p.maxpacket as u64,
            ecn: p.ecn != 0,
            first_above_time: 0,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
        }
    }

    fn control_law(&self, t: u64, count: u32) -> u64 {
        t + (self.interval as f64 / (count as f64).sqrt()).floor() as u64
    }

    /// dodequeue(): (packet, ok_to_drop).
    fn dodequeue(&mut self, q: &mut Fifo, now: u64) -> (Option<Pkt>, bool) {
        let Some(p) = q.pop_front() else {
            self.first_above_time = 0;
            return (None, false);
        };
        let sojourn = now - p.tstamp;
        let mut ok = false;
        if sojourn < self.target || backlog(q) <= self.maxpacket {
            self.first_above_time = 0;
        } else if self.first_above_time == 0 {
            self.first_above_time = now + self.interval;
        } else if now >= self.first_above_time {
            ok = true;
        }
        (Some(p), ok)
    }
}

impl Dequeue for Rfc {
    fn dequeue(&mut self, q: &mut Fifo, now: u64, log: &mut Vec<Event>) -> Option<Pkt> {
        let (mut p, mut ok) = self.dodequeue(q, now);
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while now >= self.drop_next && self.dropping {
                let pk = p.unwrap();
                self.count += 1;
                if self.ecn && pk.ect {
                    log.push((pk.id, now, MARK));
                    self.drop_next = self.control_law(self.drop_next, self.count);
                    return p;
                }
                log.push((pk.id, now, DROP));
                (p, ok) = self.dodequeue(q, now);
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                }
            }
        } else if ok {
            let pk = p.unwrap();
            if self.ecn && pk.ect {
                log.push((pk.id, now, MARK));
            } else {
                log.push((pk.id, now, DROP));
                (p, _) = self.dodequeue(q, now);
            }
            self.dropping = true;
            let delta = self.count - self.lastcount;
            self.count = 1;
            if delta > 1 && now.wrapping_sub(self.drop_next) < 16 * self.interval {
                self.count = delta;
            }
            self.drop_next = self.control_law(now, self.count);
            self.lastcount = self.count;
        }
        p
    }
}

/// The header's per-packet CoDel, called once per packet leaving the queue.
struct Header {
    p: Params,
    v: Vars,
    /// (time, count) at each drop state entry.
    entries: Vec<(u64, u32)>,
}

impl Dequeue for Header {
    fn dequeue(&mut self, q: &mut Fifo, now: u64, log: &mut Vec<Event>) -> Option<Pkt> {
        loop {
            let Some(pk) = q.pop_front() else {
                unsafe { host_aqm_codel_empty(&mut self.v) };
                return None;
            };
            let was = self.v.dropping;
            let verdict = unsafe {
                host_aqm_codel_packet(
                    &mut self.v,
                    &self.p,
                    now,
                    now - pk.tstamp,
                    backlog(q),
                    pk.ect as i32,
                )
            };
            if was == 0 && self.v.dropping != 0 {
                self.entries.push((now, self.v.count));
            }
            match verdict {
                PASS => return Some(pk),
                MARK => {
                    log.push((pk.id, now, MARK));
                    return Some(pk);
                }
                DROP => log.push((pk.id, now, DROP)),
                v => panic!("verdict {v}"),
            }
        }
    }
}

/// Run arrivals (time-ordered) through a FIFO served at `rate_bit`: the
/// link takes the next packet as soon as it is free and the queue has one;
/// a dequeue that finds the queue empty when the link frees is made too.
fn simulate(arrivals: &[Pkt], rate_bit: u64, aqm: &mut dyn Dequeue) -> Vec<Event> {
    let mut log = Vec::new();
    let mut q = Fifo::default();
    let mut next = 0;
    let mut now = arrivals.first().map_or(0, |p| p.tstamp);
    loop {
        while next < arrivals.len() && arrivals[next].tstamp <= now {
            q.push_back(arrivals[next]);
            next += 1;
        }
        match aqm.dequeue(&mut q, now, &mut log) {
            Some(p) => now += p.bytes as u64 * 8 * 1_000_000_000 / rate_bit,
            None if next < arrivals.len() => now = now.max(arrivals[next].tstamp),
            None => break,
        }
    }
    log
}

/// Packets of `bytes` at `rate_bit` from `start` for `dur` ns.
fn cbr(start: u64, dur: u64, rate_bit: u64, bytes: u32, ect: bool, out: &mut Vec<Pkt>) {
    let gap = bytes as u64 * 8 * 1_000_000_000 / rate_bit;
    let mut t = start;
    while t < start + dur {
        out.push(Pkt {
            id: 0,
            tstamp: t,
            bytes,
            ect,
        });
        t += gap;
    }
}

fn number(mut v: Vec<Pkt>) -> Vec<Pkt> {
    v.sort_by_key(|p| p.tstamp);
    for (i, p) in v.iter_mut().enumerate() {
        p.id = i;
    }
    v
}

fn params(target: u64, interval: u64, ecn: bool) -> Params {
    Params {
        target_ns: target,
        interval_ns: interval,
        maxpacket: MTU,
        ecn: ecn as u32,
    }
}

fn both(arrivals: &[Pkt], rate: u64, p: Params) -> (Vec<Event>, Vec<Event>, Header) {
    let want = simulate(arrivals, rate, &mut Rfc::new(&p));
    let mut h = Header {
        p,
        v: Vars::default(),
        entries: Vec::new(),
    };
    let got = simulate(arrivals, rate, &mut h);
    (want, got, h)
}

/// Sojourn of each packet the link sends, with no AQM (for the traces'
/// own expectations).
fn first_time_over(arrivals: &[Pkt], rate: u64, target: u64) -> u64 {
    let mut free = 0u64;
    for p in arrivals {
        let start = free.max(p.tstamp);
        if start - p.tstamp >= target {
            return start;
        }
        free = start + p.bytes as u64 * 8 * 1_000_000_000 / rate;
    }
    u64::MAX
}

#[test]
fn layouts_match_the_header() {
    assert_eq!(
        unsafe { host_aqm_codel_vars_size() } as usize,
        std::mem::size_of::<Vars>()
    );
    assert_eq!(
        unsafe { host_aqm_codel_params_size() } as usize,
        std::mem::size_of::<Params>()
    );
}

#[test]
fn control_law_is_interval_over_sqrt_count_to_the_ns() {
    for c in [1u32, 2, 3, 4, 7, 100, 12345, u32::MAX] {
        for i in [1u64, 5 * MS, 100 * MS, 0xffff_ffff] {
            let got = unsafe { host_aqm_codel_control_law(1000, i, c) };
            let want = 1000 + (i as f64 / (c as f64).sqrt()).floor() as u64;
            assert_eq!(got, want, "interval {i} count {c}");
        }
    }
    // count 0 is taken as 1 (never divides by zero).
    assert_eq!(
        unsafe { host_aqm_codel_control_law(0, 100 * MS, 0) },
        100 * MS
    );
}

/// A sender 10 % over a 100 Mbit/s link for 1.5 s: once the sojourn has
/// stayed at or above 5 ms for 100 ms the first packet is dropped, and the
/// next drops follow at 100 ms / sqrt(count) from the previous scheduled
/// drop (each within one packet time of that schedule, the next dequeue).
#[test]
fn standing_queue_first_drop_after_an_interval_then_control_law() {
    let rate = 100_000_000;
    let mut a = Vec::new();
    cbr(MS, 1500 * MS, 110_000_000, 1514, false, &mut a);
    let a = number(a);
    let p = params(5 * MS, 100 * MS, false);
    let (want, got, _) = both(&a, rate, p);
    assert_eq!(got, want);
    let pkt_ns = 1514 * 8 * 1_000_000_000 / rate;
    let over = first_time_over(&a, rate, 5 * MS);
    // first_above_time is set at the first dequeue over target; the first
    // drop is the first dequeue at or after it plus the interval.
    let first = got[0].1;
    assert!(
        first >= over + 100 * MS && first < over + 100 * MS + pkt_ns,
        "{first} vs {over}"
    );
    let mut sched = first;
    for (k, e) in got.iter().enumerate().skip(1) {
        assert_eq!(e.2, DROP);
        sched += (100.0 * MS as f64 / (k as f64).sqrt()).floor() as u64;
        assert!(
            e.1 >= sched && e.1 < sched + pkt_ns,
            "drop {k} at {} vs {sched}",
            e.1
        );
    }
    assert!(got.len() > 10, "{} drops", got.len());
}

/// Overload, then a lull that drains the queue below target (the drop
/// state ends), then overload again: within 16 intervals the drop state is
/// re-entered with count = the last cycle's drops (count - lastcount), after
/// 16 intervals with count = 1.
#[test]
fn exit_below_target_and_count_reuse_within_16_intervals() {
    let rate = 100_000_000;
    for (gap, reuse) in [(300 * MS, true), (1700 * MS, false)] {
        let mut a = Vec::new();
        cbr(MS, 1200 * MS, 110_000_000, 1514, false, &mut a);
        // The lull: nothing arrives, the queue drains and empties.
        cbr(1201 * MS + gap, 1000 * MS, 110_000_000, 1514, false, &mut a);
        let a = number(a);
        let (want, got, h) = both(&a, rate, params(5 * MS, 100 * MS, false));
        assert_eq!(got, want, "gap {gap}");
        assert_eq!(h.entries.len(), 2, "two drop cycles: {:?}", h.entries);
        let first_cycle = got.iter().filter(|e| e.1 < 1201 * MS + gap).count() as u32;
        assert!(first_cycle > 2);
        // The first cycle entered with count 1 and dropped first_cycle packets.
        assert_eq!(h.entries[0].1, 1);
        let want_count = if reuse { first_cycle - 1 } else { 1 };
        assert_eq!(h.entries[1].1, want_count, "gap {gap}: {:?}", h.entries);
    }
}

/// With ECN on, ECT packets are marked where non-ECT ones would be dropped,
/// at the same control-law times; non-ECT packets in the same queue are
/// still dropped.
#[test]
fn ecn_marks_ect_packets_instead_of_dropping() {
    let rate = 100_000_000;
    let mut a = Vec::new();
    cbr(MS, 800 * MS, 110_000_000, 1514, true, &mut a);
    let a = number(a);
    let (w_off, g_off, _) = both(&a, rate, params(5 * MS, 100 * MS, false));
    let (w_on, g_on, _) = both(&a, rate, params(5 * MS, 100 * MS, true));
    assert_eq!(g_off, w_off);
    assert_eq!(g_on, w_on);
    assert!(g_on.iter().all(|e| e.2 == MARK) && g_on.len() > 3);
    assert!(g_off.iter().all(|e| e.2 == DROP));
    // The first decision is at the same time either way.
    assert_eq!(g_on[0].1, g_off[0].1);

    let mut mixed = Vec::new();
    cbr(MS, 800 * MS, 60_000_000, 1514, true, &mut mixed);
    cbr(MS + 7, 800 * MS, 50_000_000, 1514, false, &mut mixed);
    let mixed = number(mixed);
    let (w, g, _) = both(&mixed, rate, params(5 * MS, 100 * MS, true));
    assert_eq!(g, w);
    assert!(g.iter().any(|e| e.2 == MARK) && g.iter().any(|e| e.2 == DROP));
    for e in &g {
        assert_eq!(e.2 == MARK, mixed[e.0].ect, "{e:?}");
    }
}

/// A sojourn below target never drops, however long; nor does a backlog of
/// at most one packet (the maxpacket guard), whatever the sojourn.
#[test]
fn no_drop_below_target_or_with_one_packet_queued() {
    let p = params(5 * MS, 100 * MS, false);
    let mut v = Vars::default();
    for i in 1..10_000u64 {
        let verdict = unsafe { host_aqm_codel_packet(&mut v, &p, i * MS, 5 * MS - 1, 1 << 20, 0) };
        assert_eq!(verdict, PASS);
        let verdict = unsafe { host_aqm_codel_packet(&mut v, &p, i * MS, 50 * MS, 1514, 0) };
        assert_eq!(verdict, PASS);
    }
}

/// The step threshold: more than K packets ahead, or a sojourn over K ns,
/// marks an ECT packet; non-ECT packets pass; a threshold of 0 is off.
#[test]
fn ecn_step_threshold() {
    let step = |s, ahead, k, k_ns, ect| unsafe { host_aqm_step_packet(s, ahead, k, k_ns, ect) };
    assert_eq!(step(0, 20, 20, 0, 1), PASS);
    assert_eq!(step(0, 21, 20, 0, 1), MARK);
    assert_eq!(step(0, 21, 20, 0, 0), PASS);
    assert_eq!(step(MS, 0, 0, MS, 1), PASS);
    assert_eq!(step(MS + 1, 0, 0, MS, 1), MARK);
    assert_eq!(step(u64::MAX, u32::MAX, 0, 0, 1), PASS);
    // K packets as sojourn: 65 packets of 1514 bytes at 100 Mbit/s.
    let k_ns = unsafe { host_aqm_pkts_to_ns(65, 1514, 100_000_000) };
    assert_eq!(k_ns, 65 * 1514 * 8 * 10);
    assert_eq!(unsafe { host_aqm_pkts_to_ns(65, 1514, 0) }, 0);
}

#[test]
fn fq_queue_index_is_in_range_and_spread() {
    let n = 16;
    let mut seen = vec![0u32; n as usize];
    let mut h = 0x9e37_79b9u32;
    for _ in 0..16_000 {
        h = h.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let i = unsafe { host_aqm_fq_queue(h, n) };
        assert!(i < n);
        seen[i as usize] += 1;
    }
    assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    assert_eq!(unsafe { host_aqm_fq_queue(u32::MAX, n) }, n - 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random on/off traffic of mixed sizes and ECN capability, random
    /// target and interval: the header and the RFC's pseudocode drop and
    /// mark the same packets at the same times.
    #[test]
    fn matches_rfc_pseudocode_on_random_traces(
        seed in any::<u64>(),
        target_us in 500u64..8000,
        interval_ms in 10u64..150,
        ecn in any::<bool>(),
        rate_mbit in 5u64..100,
    ) {
        let rate = rate_mbit * 1_000_000;
        let mut rng = fastrand_like(seed);
        let mut a = Vec::new();
        let mut t = 1_000u64;
        // ~1.5 s of bursts at 0.3x..2x the link rate, pauses between.
        while t < 1_500 * MS {
            let on = (rng() % 300 + 5) * MS;
            let load = 0.3 + (rng() % 1700) as f64 / 1000.0;
            let bytes = [576u32, 1514][(rng() % 2) as usize];
            cbr(t, on, (rate as f64 * load) as u64, bytes, rng() % 2 == 0, &mut a);
            t += on + (rng() % 80) * MS;
        }
        let a = number(a);
        let (want, got, _) = both(&a, rate, params(target_us * 1000, interval_ms * MS, ecn));
        prop_assert_eq!(got, want);
    }
}

/// A small xorshift, so the traces depend on the seed only.
fn fastrand_like(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}
