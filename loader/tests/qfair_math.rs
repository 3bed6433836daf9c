//! qfair's fixed-point law (bpf/include/qfair_math.h), compiled for the host
//! by build.rs, against an f64 reference of docs/algorithms.md's equations.

use proptest::prelude::*;
// The host build of the math headers is linked into the loader crate.
extern crate rttfair_loader;

extern "C" {
    fn host_qf_isqrt(x: u64) -> u64;
    fn host_qf_alpha_d_x1024(bw: u64, alpha0_x1024: u32, k_x1024: u32) -> u32;
    fn host_qf_alpha_step_x1024(
        a: u32,
        dt_us: u64,
        lost: u32,
        ai_x1024: u32,
        hi: u32,
        since_cut_us: u64,
    ) -> u32;
    fn host_qf_alpha_after_halvings(a: u64, eff_us: u64) -> u64;
    fn host_qf_drain_saw_longer_path(m: u32, r: u32) -> i32;
    fn host_qf_minima_agree(a: u32, b: u32) -> i32;
    fn host_qf_gain_x256(d_us: u32, tau_us: u32, alpha: u32, backlog: u32, cap: u32) -> u32;
    fn host_qf_target_cwnd(bw: u64, rtprop_us: u32, g_x256: u32, alpha_x1024: u32) -> u32;
    fn host_qf_pacing_rate(w: u32, d_us: u32, mss: u32) -> u64;
    fn host_qf_rate_ewma(x: u64, s: u64) -> u64;
    fn host_qf_drain_emptied_queue(m: u32, r: u32, q: u32) -> i32;
}

/// Core rate unit (packets per µs << 24) for a rate in packets per second.
fn bw(pkts_per_s: f64) -> u64 {
    (pkts_per_s / 1e6 * (1u64 << 24) as f64) as u64
}

#[test]
fn isqrt_is_exact_floor() {
    for x in (0u64..5000).chain([
        1 << 40,
        (1 << 40) + 12345,
        (1u64 << 62) - 1,
        999_999_999_999,
    ]) {
        let r = unsafe { host_qf_isqrt(x) };
        assert!(r * r <= x && (r + 1) * (r + 1) > x, "isqrt({x}) = {r}");
    }
}

proptest! {
    #[test]
    fn isqrt_floor_everywhere(x in 0u64..(1u64 << 62)) {
        let r = unsafe { host_qf_isqrt(x) };
        prop_assert!(r * r <= x && (r + 1) as u128 * (r + 1) as u128 > x as u128);
    }

    /// Eq. 6: alpha_d = alpha_0 + k sqrt(x * 1 ms), within 0.1 packet.
    #[test]
    fn alpha_d_matches_eq6(pps in 10.0f64..2e6, a0 in 1.0f64..16.0, k in 0.0f64..4.0) {
        let got = unsafe { host_qf_alpha_d_x1024(bw(pps), (a0 * 1024.0) as u32, (k * 1024.0) as u32) } as f64 / 1024.0;
        let want = (a0 * 1024.0).floor() / 1024.0 + (k * 1024.0).floor() / 1024.0 * (pps / 1000.0).sqrt();
        prop_assert!((got - want).abs() < 0.1 + want * 1e-3, "got {got} want {want}");
    }

    /// Eq. 1: w = g x R + alpha, rounded up.
    #[test]
    fn target_cwnd_matches_eq1(pps in 10.0f64..1e6, r_us in 100u32..2_000_000, g in 200u32..300, a in 1024u32..65536) {
        let got = unsafe { host_qf_target_cwnd(bw(pps), r_us, g, a) } as f64;
        let want = (g as f64 / 256.0) * pps * r_us as f64 / 1e6 + a as f64 / 1024.0;
        prop_assert!(got >= want.floor() && got <= want.ceil() + 1.0 + want * 1e-3, "got {got} want {want}");
    }

    /// Eq. 7 never leaves [1, alpha_hi], grows without loss, shrinks with it.
    #[test]
    fn alpha_step_bounded_and_monotone(a in 1024u32..100_000, dt in 0u64..20_000_000, lost in 0u32..200, hi in 1024u32..100_000, since in 0u64..20_000_000) {
        let next = unsafe { host_qf_alpha_step_x1024(a, dt, lost, 4096, hi, since) };
        prop_assert!(next >= 1024 && next <= hi.max(1024));
        if lost == 0 && a <= hi { prop_assert!(next >= a.min(hi)); }
        if lost > 0 && dt < 1000 && since >= 10_000 { prop_assert!(next <= a.max(1024)); }
    }

    /// 2^(-t / 100 ms) in fixed point against f64: within 0.2 % of alpha.
    #[test]
    fn halvings_match_the_exponential(a in 0u64..(1u64 << 32), t in 0u64..12_000_000) {
        let got = unsafe { host_qf_alpha_after_halvings(a, t) } as f64;
        let want = a as f64 * (-(t.min(10_000_000) as f64) / 100_000.0).exp2();
        prop_assert!((got - want).abs() <= a as f64 * 2e-3 + 1.0, "a {a} t {t}: got {got} want {want}");
    }

    /// The RTT-neutrality of Eq. 7's cut: a flow cut at every round, whatever
    /// the rounds' length, keeps the same alpha after the same wall-clock
    /// time (one loss per round, rounds of r us, 1.2 s in all).
    #[test]
    fn alpha_cut_per_second_is_rtt_neutral(r in 2_000u64..300_000) {
        let total = 1_200_000u64;
        let (mut a, mut t) = (1u32 << 26, 0u64);
        while t + r <= total {
            a = unsafe { host_qf_alpha_step_x1024(a, r, 100, 0, u32::MAX, r) };
            t += r;
        }
        let want = (1u64 << 26) as f64 * (-(t as f64) / 100_000.0).exp2();
        prop_assert!((a as f64 - want).abs() <= want * 0.02 + 1024.0 * 1.01, "r {r}: {a} vs {want}");
    }
}

#[test]
fn alpha_step_is_aimd_in_time() {
    // +4 pkt/s: one second from 2 packets gives 6.
    let a = unsafe { host_qf_alpha_step_x1024(2048, 1_000_000, 0, 4096, 1 << 20, 0) };
    assert_eq!(a, 6 * 1024);
    let step =
        |a, dt, lost, since| unsafe { host_qf_alpha_step_x1024(a, dt, lost, 0, 1 << 20, since) };
    // One loss halves it, whatever the round's length, if the last cut is
    // 100 ms or more ago (issue 14: the cap used to be per round).
    for dt in [5_000, 20_000, 67_000, 200_000] {
        assert_eq!(step(8192, dt, 1, 100_000), 4096, "round of {dt} us");
        assert_eq!(step(8192, dt, 1, 5_000_000), 4096, "round of {dt} us");
    }
    // Two losses: two halvings, if the time since the last cut allows.
    assert_eq!(step(8192, 20_000, 2, 200_000), 2048);
    // Many losses 50 ms after the last cut: alpha x 2^-0.5, not alpha/2.
    let a = step(10240, 10_000, 50, 50_000);
    assert!((7230..=7250).contains(&a), "{a}");
    // No time since the last cut: no further cut.
    assert_eq!(step(10240, 10_000, 50, 0), 10240);
}

#[test]
fn gain_is_one_inside_the_band_and_time_scaled_outside() {
    let g = |d, backlog| unsafe { host_qf_gain_x256(d, 1_000_000, 4096, backlog, 32) };
    for b in [4096, 6000, 8192] {
        assert_eq!(g(20_000, b), 256, "backlog {b} is inside [alpha, 2 alpha]");
    }
    // Below alpha it pushes up: half of alpha short, 20 ms rounds: 1 + 0.02 x 0.5.
    assert_eq!(g(20_000, 2048), 256 + 2);
    // No backlog at all: 1 + D/tau, i.e. 1.02 per 20 ms round, 1.125 (cap) at 200 ms.
    assert_eq!(g(20_000, 0), 256 + 5);
    assert_eq!(g(200_000, 0), 256 + 32);
    // Far above: down, never to zero.
    assert!(g(200_000, 100 * 4096) == 256 - 32);
    assert!(unsafe { host_qf_gain_x256(1_000_000, 1000, 4096, u32::MAX, 255) } >= 1);
}

#[test]
fn pacing_floor_below_six_packets() {
    let mss = 1448;
    let r5 = unsafe { host_qf_pacing_rate(5, 10_000, mss) };
    assert_eq!(r5, 5 * 1448 * 100, "w < 6: exactly w / D");
    let r10 = unsafe { host_qf_pacing_rate(10, 10_000, mss) };
    assert_eq!(r10, 10 * 1448 * 100 / 10 * 11, "w >= 6: 1.1 w / D");
    assert_eq!(unsafe { host_qf_pacing_rate(10, 0, mss) }, 0);
}

#[test]
fn ewma_quarter_gain_both_ways() {
    unsafe {
        assert_eq!(host_qf_rate_ewma(0, 800), 800);
        assert_eq!(host_qf_rate_ewma(800, 1600), 1000);
        assert_eq!(host_qf_rate_ewma(800, 0), 600);
    }
}

#[test]
fn drain_verdict() {
    unsafe {
        assert_eq!(
            host_qf_drain_emptied_queue(20_900, 20_000, 0),
            1,
            "within 1 ms"
        );
        assert_eq!(host_qf_drain_emptied_queue(21_100, 20_000, 0), 0);
        assert_eq!(
            host_qf_drain_emptied_queue(22_400, 20_000, 5_000),
            1,
            "within q/2"
        );
        assert_eq!(host_qf_drain_emptied_queue(23_000, 20_000, 5_000), 0);
    }
}

#[test]
fn longer_path_from_the_drain_minimum_alone() {
    unsafe {
        // A 10 ms path that became 40 ms: a longer path.
        assert_eq!(host_qf_drain_saw_longer_path(40_100, 10_070), 1);
        // Within max(2 ms, R/8) of R: not (a drain's usual residue, jitter).
        assert_eq!(host_qf_drain_saw_longer_path(11_900, 10_000), 0);
        assert_eq!(host_qf_drain_saw_longer_path(12_100, 10_000), 1);
        assert_eq!(host_qf_drain_saw_longer_path(56_000, 50_000), 0);
        assert_eq!(host_qf_drain_saw_longer_path(56_500, 50_000), 1);
        assert_eq!(host_qf_minima_agree(40_000, 43_900), 1);
        assert_eq!(host_qf_minima_agree(44_100, 40_000), 0);
    }
}
