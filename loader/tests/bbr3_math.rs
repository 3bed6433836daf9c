//! bbr3's send-time estimate (bpf/include/bbr3_math.h), compiled for the
//! host by build.rs: tp->lost when the ACKed packet left, interpolated
//! between the ring's snapshots either side of its send (docs/algorithms.md,
//! "bbr3", approximation 2).

use proptest::prelude::*;
// The host build of the math headers is linked into the loader crate.
extern crate rttfair_loader;

extern "C" {
    fn host_bbr3_interpolate(x: u32, x0: u32, y0: u32, x1: u32, y1: u32) -> u32;
    fn host_bbr3_lost_at_send(p: u32, d0: u32, l0: u32, d1: u32, l1: u32) -> u32;
}

fn interpolate(x: u32, x0: u32, y0: u32, x1: u32, y1: u32) -> u32 {
    // SAFETY: a pure C function of integers.
    unsafe { host_bbr3_interpolate(x, x0, y0, x1, y1) }
}

fn lost_at_send(p: u32, d0: u32, l0: u32, d1: u32, l1: u32) -> u32 {
    // SAFETY: a pure C function of integers.
    unsafe { host_bbr3_lost_at_send(p, d0, l0, d1, l1) }
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

proptest! {
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
