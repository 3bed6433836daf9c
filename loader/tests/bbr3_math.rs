//! bbr3's send-time estimates (bpf/include/bbr3_math.h), compiled for the
//! host by build.rs: tp->lost when the ACKed packet left, interpolated
//! between the ring's snapshots either side of its send (docs/algorithms.md,
//! "bbr3", approximation 2), and the one pass over the ring that finds
//! those snapshots and the inflight at the send (approximation 1).

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
// The host build of the math headers is linked into the loader crate.
extern crate rttfair_loader;

/// One slot of the ring, `struct bbr3_snap` (all zero: never written).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Snap {
    delivered: u32,
    lost: u32,
    inflight: u32,
}

/// `BBR3_RING`.
const RING: usize = 16;

extern "C" {
    fn host_bbr3_interpolate(x: u32, x0: u32, y0: u32, x1: u32, y1: u32) -> u32;
    fn host_bbr3_lost_at_send(p: u32, d0: u32, l0: u32, d1: u32, l1: u32) -> u32;
    fn host_bbr3_ring_tx(ring: *const Snap, p: u32, now_delivered: u32, now_lost: u32) -> i64;
}

fn interpolate(x: u32, x0: u32, y0: u32, x1: u32, y1: u32) -> u32 {
    // SAFETY: a pure C function of integers.
    unsafe { host_bbr3_interpolate(x, x0, y0, x1, y1) }
}

fn lost_at_send(p: u32, d0: u32, l0: u32, d1: u32, l1: u32) -> u32 {
    // SAFETY: a pure C function of integers.
    unsafe { host_bbr3_lost_at_send(p, d0, l0, d1, l1) }
}

/// The ACKed packet's (tx.in_flight, tx.lost) from `ring`, or None when no
/// slot was written.
fn ring_tx(ring: &[Snap; RING], p: u32, now_delivered: u32, now_lost: u32) -> Option<(u32, u32)> {
    // SAFETY: the C function reads exactly BBR3_RING slots of `ring`.
    let tx = unsafe { host_bbr3_ring_tx(ring.as_ptr(), p, now_delivered, now_lost) };
    (tx >= 0).then_some(((tx >> 32) as u32, tx as u32))
}

/// The reference: the two scans the single pass replaced (bbr3_ring_find,
/// then bbr3_ring_lost_before_send, as of commit 9445c79), written out
/// again over slot indices. The first finds the snapshot at or before the
/// send (else the oldest); the second the one after it, to interpolate
/// tp->lost at the send.
fn two_scans(ring: &[Snap; RING], p: u32, now_delivered: u32, now_lost: u32) -> Option<(u32, u32)> {
    let written = |s: &&Snap| s.delivered != 0 || s.inflight != 0;
    let (mut best, mut best_age, mut oldest, mut oldest_age) = (None, u32::MAX, None, 0);
    for (i, s) in ring.iter().enumerate().filter(|(_, s)| written(s)) {
        let age = p.wrapping_sub(s.delivered);
        if age as i32 >= 0 && age < best_age {
            (best, best_age) = (Some(i), age);
        }
        let age = now_delivered.wrapping_sub(s.delivered);
        if age >= oldest_age {
            (oldest, oldest_age) = (Some(i), age);
        }
    }
    let s0 = ring[best.or(oldest)?];
    let (mut d1, mut lost1, mut next_gap) = (now_delivered, now_lost, u32::MAX);
    for s in ring.iter().filter(written) {
        let gap = s.delivered.wrapping_sub(p);
        if gap as i32 > 0 && gap < next_gap {
            (d1, lost1, next_gap) = (s.delivered, s.lost, gap);
        }
    }
    let before_send = lost_at_send(p, s0.delivered, s0.lost, d1, lost1).wrapping_sub(s0.lost);
    Some((
        // The one difference: the packed answer caps tx.in_flight below 2^31.
        s0.inflight.min(i32::MAX as u32),
        now_lost.wrapping_sub(s0.lost).wrapping_sub(before_send),
    ))
}

/// A ring as bbr3_ring_push leaves it after `snaps` pushes, oldest first
/// (slot 0 first, wrapping after 16).
fn pushed(snaps: &[(u32, u32, u32)]) -> [Snap; RING] {
    let mut ring = [Snap::default(); RING];
    for (i, &(delivered, lost, inflight)) in snaps.iter().enumerate() {
        ring[i % RING] = Snap {
            delivered,
            lost,
            inflight,
        };
    }
    ring
}

/// The single pass gives what the two scans gave.
fn agree(
    ring: &[Snap; RING],
    p: u32,
    now_delivered: u32,
    now_lost: u32,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        ring_tx(ring, p, now_delivered, now_lost),
        two_scans(ring, p, now_delivered, now_lost)
    );
    Ok(())
}

/// A ring's 16 slots (delivered, lost, inflight), p, tp->delivered and
/// tp->lost at the ACK.
type Case = (Vec<(u32, u32, u32)>, u32, u32, u32);

/// Any values at all.
fn any_values() -> impl Strategy<Value = Case> {
    let slot = (any::<u32>(), any::<u32>(), any::<u32>());
    let slots = prop::collection::vec(slot, RING);
    (slots, any::<u32>(), any::<u32>(), any::<u32>())
}

/// Small values, so that slots tie (equal delivered counts), sit at 0 or
/// are never written: the same snapshot must win every tie.
fn small_values() -> impl Strategy<Value = Case> {
    let slots = prop::collection::vec((0u32..6, 0u32..6, 0u32..3), RING);
    (slots, 0u32..8, 0u32..8, 0u32..8)
}

#[test]
fn endpoints_and_midpoints() {
    assert_eq!(
        interpolate(100, 100, 7, 120, 11),
        7,
        "at the snapshot before"
    );
    assert_eq!(interpolate(120, 100, 7, 120, 11), 11, "at the point after");
    assert_eq!(interpolate(110, 100, 7, 120, 11), 9, "halfway");
    assert_eq!(interpolate(105, 100, 7, 120, 11), 8, "a quarter: 8, not 7");
    assert_eq!(
        interpolate(110, 100, 170, 120, 150),
        160,
        "a falling value (inflight)"
    );
    // Outside [x0, x1] (cannot happen from the ring, but must stay bounded).
    assert_eq!(interpolate(90, 100, 7, 120, 11), 7);
    assert_eq!(interpolate(130, 100, 7, 120, 11), 11);
    // No span (the point after is the snapshot itself): the snapshot.
    assert_eq!(interpolate(100, 100, 7, 100, 11), 7);
}

/// tp->delivered and tp->lost wrap; the estimate follows them through 2^32.
#[test]
fn wraps_with_the_counters() {
    let d0 = u32::MAX - 9;
    assert_eq!(
        interpolate(d0.wrapping_add(10), d0, 0, d0.wrapping_add(20), 4),
        2
    );
    let l0 = u32::MAX - 1;
    assert_eq!(
        lost_at_send(
            d0.wrapping_add(10),
            d0,
            l0,
            d0.wrapping_add(20),
            l0.wrapping_add(4)
        ),
        l0.wrapping_add(2)
    );
}

/// What the change is for: a loss marked just after the snapshot before
/// the send was, with the old estimate (that snapshot as is), counted as a
/// loss of the packet's flight. Now only the share of the marks up to the
/// send is taken as marked before it, and none if the packet left right at
/// the snapshot.
#[test]
fn losses_between_snapshots_are_split_at_the_send() {
    // Snapshot before: delivered 1000, lost 50; after: delivered 1020,
    // lost 52 (two losses marked in between).
    assert_eq!(
        lost_at_send(1000, 1000, 50, 1020, 52),
        50,
        "left at the snapshot"
    );
    assert_eq!(lost_at_send(1010, 1000, 50, 1020, 52), 51, "left halfway");
    assert_eq!(
        lost_at_send(1019, 1000, 50, 1020, 52),
        52,
        "left just before the next"
    );
    assert_eq!(
        lost_at_send(1010, 1000, 50, 1020, 50),
        50,
        "no marks in between"
    );
}

#[test]
fn ring_tx_picks_the_snapshots_either_side_of_the_send() {
    assert_eq!(ring_tx(&pushed(&[]), 5, 10, 0), None, "empty ring");
    // (delivered, lost, inflight): two losses marked between the snapshots.
    let ring = pushed(&[(1000, 50, 30), (1020, 52, 31)]);
    assert_eq!(
        ring_tx(&ring, 1010, 1030, 53),
        Some((30, 2)),
        "sent halfway: inflight of the snapshot before, tp->lost 51 at the send"
    );
    assert_eq!(
        ring_tx(&ring, 1020, 1030, 53),
        Some((31, 1)),
        "sent at a snapshot: that one as is"
    );
    // No snapshot after the send: the current ACK is the point after.
    assert_eq!(
        ring_tx(&ring, 1025, 1030, 54),
        Some((31, 1)),
        "tp->lost 53 at the send (52 + 2 x 5/10, rounded)"
    );
    // Sent before the ring's reach: its oldest snapshot, as is.
    assert_eq!(ring_tx(&ring, 990, 1030, 53), Some((30, 3)));
    // 17 pushes: the ring wrapped, slot 0 holds the newest snapshot.
    let snaps: Vec<_> = (0..17u32).map(|k| (100 + 10 * k, k, 40 + k)).collect();
    let ring = pushed(&snaps);
    assert_eq!(ring[0].delivered, 260);
    assert_eq!(
        ring_tx(&ring, 265, 275, 20),
        Some((56, 3)),
        "between the newest (slot 0) and the ACK: tp->lost 17 at the send"
    );
    assert_eq!(
        ring_tx(&ring, 100, 275, 20),
        Some((41, 19)),
        "sent in the overwritten span: the oldest left (slot 1: delivered 110, lost 1)"
    );
}

proptest! {
    /// On rings as bbr3_ring_push fills them (delivered and lost rising,
    /// through the counters' wrap), the single pass finds what the two
    /// scans did, for sends before, inside and after the ring's span.
    #[test]
    fn ring_tx_agrees_with_the_two_scans_on_pushed_rings(
        start in any::<u32>(),
        lost_start in any::<u32>(),
        steps in prop::collection::vec((1u32..400, 0u32..6, 1u32..5000), 0..40),
        send_back in 0u32..8000,
        ack_ahead in 0u32..400,
        lost_ahead in 0u32..10,
    ) {
        let (mut d, mut l) = (start, lost_start);
        let snaps: Vec<_> = steps
            .iter()
            .map(|&(dd, dl, inflight)| {
                d = d.wrapping_add(dd);
                l = l.wrapping_add(dl);
                (d, l, inflight)
            })
            .collect();
        let ring = pushed(&snaps);
        let now_delivered = d.wrapping_add(ack_ahead);
        let p = now_delivered.wrapping_sub(send_back);
        let now_lost = l.wrapping_add(lost_ahead);
        agree(&ring, p, now_delivered, now_lost)?;
    }

    /// Within half a packet of the exact line (rounded to nearest), and
    /// never outside [min(y0, y1), max(y0, y1)].
    #[test]
    fn matches_the_line(
        x0 in any::<u32>(),
        span in 1u32..(1 << 30),
        frac in 0.0f64..=1.0,
        y0 in 0u32..(1 << 30),
        y1 in 0u32..(1 << 30),
    ) {
        let into = (span as f64 * frac) as u32;
        let x = x0.wrapping_add(into);
        let x1 = x0.wrapping_add(span);
        let got = interpolate(x, x0, y0, x1, y1) as f64;
        let want = y0 as f64 + (y1 as f64 - y0 as f64) * into as f64 / span as f64;
        prop_assert!((got - want).abs() <= 0.5 + 1e-9, "{got} vs {want}");
        prop_assert!(got >= y0.min(y1) as f64 && got <= y0.max(y1) as f64);
    }
}

proptest! {
    // Ties that change the answer are rare even among small values: many
    // cases (each takes a microsecond) so that every run meets some.
    #![proptest_config(ProptestConfig::with_cases(8192))]

    /// On any ring at all (stale, out of order, half a sequence space
    /// apart, crowded with ties), the same: the single pass changes the
    /// cost, not the answer.
    #[test]
    fn ring_tx_agrees_with_the_two_scans_on_any_ring(
        (slots, p, now_delivered, now_lost) in prop_oneof![any_values(), small_values()],
    ) {
        agree(&pushed(&slots), p, now_delivered, now_lost)?;
    }
}
