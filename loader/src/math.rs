//! Tests of the BPF programs' fixed-point math against f64 references.
//!
//! `bpf/include/fairtt_math.h`, `adbbr_math.h` and the shared `rf_math.h`
//! (the integer square root) are compiled for the host
//! by build.rs (`bpf/host/math_host.c`), so what these wrappers run is the
//! exact source the CCAs run in the kernel. The tests compare it with an f64
//! reference of each equation on edge cases and on random inputs. Nothing
//! outside the tests calls the wrappers, so the module is built for tests
//! only.

mod ffi {
    extern "C" {
        pub fn host_fairtt_wminrtt_us(sum_us: u64, n: u32, cur_us: u32, beta_ppm: u32) -> u32;
        pub fn host_fairtt_alpha_us(wfcount: u32, window_sum_us: u64, w: u32) -> u32;
        pub fn host_fairtt_coef_x1024(min_rtt_us: u32, last_rtt_us: u32, gamma_ppm: u32) -> u32;
        pub fn host_fairtt_adjust_active(last_rtt_us: u32, alpha_us: u32) -> i32;
        pub fn host_fairtt_scaled_bdp(bdp: u64, coef_x1024: u32) -> u64;
        pub fn host_fairtt_same_class(a_us: u32, b_us: u32, tol_pct: u32) -> i32;
        pub fn host_adbbr_regime(rrtt_us: u32, nrtt_us: u32, floor_us: u32) -> u32;
        pub fn host_adbbr_beta_x1024(rrtt_us: u32, nrtt_us: u32) -> u32;
        pub fn host_adbbr_gamma_x1024(rrtt_us: u32, nrtt_us: u32, mode: u32, ref_us: u32) -> u32;
        pub fn host_adbbr_pacing_factor_x1024(
            rrtt_us: u32,
            nrtt_us: u32,
            mode: u32,
            ref_us: u32,
            floor_us: u32,
        ) -> u32;
        pub fn host_adbbr_alpha_threshold_us(rtprop_us: u32, alpha_ppm: u32, floor_us: u32) -> u64;
        pub fn host_adbbr_apply_factor(rate: u64, factor_x1024: u32) -> u64;
        pub fn host_rf_isqrt(x: u64) -> u64;
        pub fn host_adbbr_std_us(sum: u64, sum_sq: u64, n: u32) -> u32;
        pub fn host_adbbr_y_us(std_us: u32, x_ppm: u32, zmin_us: u32) -> u32;
    }
}

macro_rules! wrap {
    ($(#[$m:meta])* $name:ident => $host:ident ( $($a:ident : $t:ty),* ) -> $r:ty) => {
        $(#[$m])*
        pub fn $name($($a: $t),*) -> $r {
            // SAFETY: pure C functions of integers, no pointers.
            unsafe { ffi::$host($($a),*) }
        }
    };
}

wrap!(/// FaiRTT Eq. 6.
    fairtt_wminrtt_us => host_fairtt_wminrtt_us(sum_us: u64, n: u32, cur_us: u32, beta_ppm: u32) -> u32);
wrap!(/// FaiRTT Eq. 5.
    fairtt_alpha_us => host_fairtt_alpha_us(wfcount: u32, window_sum_us: u64, w: u32) -> u32);
wrap!(/// FaiRTT Alg. 1 line 8, x1024.
    fairtt_coef_x1024 => host_fairtt_coef_x1024(min_rtt_us: u32, last_rtt_us: u32, gamma_ppm: u32) -> u32);
wrap!(/// FaiRTT Eq. 4 scaled BDP.
    fairtt_scaled_bdp => host_fairtt_scaled_bdp(bdp: u64, coef_x1024: u32) -> u64);
wrap!(/// Ad-BBR Alg. 2 regime (0 normal, 1 beta, 2 gamma).
    adbbr_regime => host_adbbr_regime(rrtt_us: u32, nrtt_us: u32, floor_us: u32) -> u32);
wrap!(/// Ad-BBR Eq. 11, x1024.
    adbbr_beta_x1024 => host_adbbr_beta_x1024(rrtt_us: u32, nrtt_us: u32) -> u32);
wrap!(/// Ad-BBR Eq. 12 under an interpretation, x1024.
    adbbr_gamma_x1024 => host_adbbr_gamma_x1024(rrtt_us: u32, nrtt_us: u32, mode: u32, ref_us: u32) -> u32);
wrap!(/// Ad-BBR Alg. 2 pacing factor, x1024.
    adbbr_pacing_factor_x1024 => host_adbbr_pacing_factor_x1024(rrtt_us: u32, nrtt_us: u32, mode: u32, ref_us: u32, floor_us: u32) -> u32);
wrap!(/// Ad-BBR Alg. 1 threshold with the absolute floor.
    adbbr_alpha_threshold_us => host_adbbr_alpha_threshold_us(rtprop_us: u32, alpha_ppm: u32, floor_us: u32) -> u64);
wrap!(/// rate x factor/1024 without overflow.
    adbbr_apply_factor => host_adbbr_apply_factor(rate: u64, factor_x1024: u32) -> u64);
wrap!(/// floor(sqrt(x)) (rf_math.h, shared by qfair and Ad-BBR).
    isqrt => host_rf_isqrt(x: u64) -> u64);
wrap!(/// Population std-dev from sums.
    adbbr_std_us => host_adbbr_std_us(sum: u64, sum_sq: u64, n: u32) -> u32);
wrap!(/// Ad-BBR Eq. 13.
    adbbr_y_us => host_adbbr_y_us(std_us: u32, x_ppm: u32, zmin_us: u32) -> u32);

/// FaiRTT Alg. 1 line 7.
pub fn fairtt_adjust_active(last_rtt_us: u32, alpha_us: u32) -> bool {
    // SAFETY: pure C function of integers.
    unsafe { ffi::host_fairtt_adjust_active(last_rtt_us, alpha_us) != 0 }
}

/// Whether two minRTTs are the same class for Wfcount.
pub fn fairtt_same_class(a_us: u32, b_us: u32, tol_pct: u32) -> bool {
    // SAFETY: pure C function of integers.
    unsafe { ffi::host_fairtt_same_class(a_us, b_us, tol_pct) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(0x5eed_f417)
    }

    /// |fixed - reference| within `abs` or `rel` of the reference.
    fn close(fixed: f64, reference: f64, abs: f64, rel: f64) -> bool {
        (fixed - reference).abs() <= abs.max(rel * reference.abs())
    }

    // ---- FaiRTT -------------------------------------------------------------

    fn wminrtt_ref(sum: f64, n: u32, cur: f64, beta: f64) -> f64 {
        if n == 0 {
            cur
        } else {
            beta * (sum / n as f64) + (1.0 - beta) * cur
        }
    }

    #[test]
    fn fairtt_eq6_matches_reference() {
        let mut r = rng();
        for _ in 0..20_000 {
            let n = r.gen_range(0..10_000u32);
            let mean = r.gen_range(1..5_000_000u64);
            let sum = mean * n as u64;
            let cur = r.gen_range(0..5_000_000u32);
            let beta = r.gen_range(0..=1_000_000u32);
            let got = fairtt_wminrtt_us(sum, n, cur, beta) as f64;
            let want = wminrtt_ref(sum as f64, n, cur as f64, beta as f64 / 1e6);
            assert!(
                close(got, want, 1.0, 1e-9),
                "n={n} mean={mean} cur={cur} beta={beta}: {got} vs {want}"
            );
        }
        // Edges: no history, beta 0 and 1, overflow-sized sums, beta > 1 clamps.
        assert_eq!(fairtt_wminrtt_us(0, 0, 1234, 800_000), 1234);
        assert_eq!(fairtt_wminrtt_us(10_000, 2, 8_000, 0), 8_000);
        assert_eq!(fairtt_wminrtt_us(10_000, 2, 8_000, 1_000_000), 5_000);
        assert_eq!(
            fairtt_wminrtt_us(u32::MAX as u64 * 1000, 1000, u32::MAX, 800_000),
            u32::MAX
        );
        assert_eq!(fairtt_wminrtt_us(10_000, 2, 8_000, 5_000_000), 5_000);
    }

    #[test]
    fn fairtt_eq5_matches_reference() {
        let mut r = rng();
        for _ in 0..20_000 {
            let wf = r.gen_range(1..=32u32);
            let w = r.gen_range(1..=16u32);
            let sum = (0..w).map(|_| r.gen_range(1..2_000_000u64)).sum::<u64>();
            let got = fairtt_alpha_us(wf, sum, w) as f64;
            let want = wf as f64 * sum as f64 / w as f64;
            assert!(close(got, want, wf as f64, 1e-9), "{got} vs {want}");
        }
        assert_eq!(fairtt_alpha_us(2, 100, 0), 0, "empty window: never active");
        assert_eq!(fairtt_alpha_us(32, u64::MAX / 2, 1), u32::MAX, "saturates");
    }

    #[test]
    fn fairtt_coefficient_matches_reference_and_never_inflates() {
        let mut r = rng();
        for _ in 0..50_000 {
            let min = r.gen_range(1..1_000_000u32);
            let last = r.gen_range(1..4_000_000u32);
            let gamma = r.gen_range(500_000..=1_000_000u32);
            let got = fairtt_coef_x1024(min, last, gamma) as f64 / 1024.0;
            let want = (min as f64 * gamma as f64 / 1e6 / last as f64).min(1.0);
            assert!(
                close(got, want, 1.0 / 1024.0, 0.0),
                "min={min} last={last} g={gamma}: {got} vs {want}"
            );
        }
        // lastRTT < minRTT (stale minRTT): capped at 1, never above.
        assert_eq!(fairtt_coef_x1024(10_000, 5_000, 990_000), 1024);
        assert_eq!(
            fairtt_coef_x1024(10_000, 0, 990_000),
            1024,
            "no RTT sample: no change"
        );
        assert_eq!(fairtt_coef_x1024(0, 5_000, 990_000), 0);
        // Overflow-sized inputs stay exact.
        assert_eq!(fairtt_coef_x1024(u32::MAX, u32::MAX, 1_000_000), 1024);
        assert_eq!(fairtt_coef_x1024(u32::MAX / 2, u32::MAX, 1_000_000), 511);
    }

    #[test]
    fn fairtt_activation_and_scaling() {
        assert!(fairtt_adjust_active(30_001, 30_000));
        assert!(!fairtt_adjust_active(30_000, 30_000));
        assert!(
            !fairtt_adjust_active(1_000_000, 0),
            "alpha 0 (no window yet) never activates"
        );
        assert_eq!(fairtt_scaled_bdp(100, 512), 50);
        assert_eq!(fairtt_scaled_bdp(3, 1), 1, "never below one packet");
        assert_eq!(fairtt_scaled_bdp(101, 512), 51, "rounds up");
        let mut r = rng();
        for _ in 0..10_000 {
            let bdp = r.gen_range(1..1_000_000u64);
            let c = r.gen_range(0..=1024u32);
            let want = (bdp as f64 * c as f64 / 1024.0).ceil().max(1.0);
            assert_eq!(fairtt_scaled_bdp(bdp, c) as f64, want);
        }
    }

    #[test]
    fn fairtt_distinct_minrtt_tolerance() {
        assert!(fairtt_same_class(20_000, 21_000, 10));
        assert!(fairtt_same_class(21_000, 20_000, 10), "symmetric");
        assert!(!fairtt_same_class(5_000, 15_000, 10));
        assert!(fairtt_same_class(5_000, 5_000, 0));
        assert!(!fairtt_same_class(5_000, 5_001, 0));
        assert!(fairtt_same_class(u32::MAX, u32::MAX - 1, 1), "no overflow");
    }

    // ---- Ad-BBR -------------------------------------------------------------

    #[test]
    fn adbbr_regimes_follow_alg2_thresholds() {
        // floor 0: the paper's ratios alone.
        assert_eq!(adbbr_regime(12_499, 10_000, 0), 0);
        assert_eq!(adbbr_regime(12_500, 10_000, 0), 1);
        assert_eq!(adbbr_regime(14_999, 10_000, 0), 1);
        assert_eq!(adbbr_regime(15_000, 10_000, 0), 2);
        assert_eq!(adbbr_regime(5_000, 0, 0), 0, "no nRTT yet: no regulation");
        assert_eq!(adbbr_regime(u32::MAX, u32::MAX, 0), 0, "no overflow");
        // A 1 ms floor does not bind at nRTT = 10 ms (nRTT/4 = 2.5 ms > 1 ms).
        for rr in [12_499, 12_500, 14_999, 15_000, 40_000] {
            assert_eq!(adbbr_regime(rr, 10_000, 1_000), adbbr_regime(rr, 10_000, 0));
        }
        // At a 10 us nRTT the ratios call 30 us "gamma"; the floor says
        // that much queueing is noise: normal until 1 ms, gamma from 2 ms.
        assert_eq!(adbbr_regime(30, 10, 0), 2);
        assert_eq!(adbbr_regime(30, 10, 1_000), 0);
        assert_eq!(adbbr_regime(1_009, 10, 1_000), 0);
        assert_eq!(adbbr_regime(1_010, 10, 1_000), 1);
        assert_eq!(adbbr_regime(2_009, 10, 1_000), 1);
        assert_eq!(adbbr_regime(2_010, 10, 1_000), 2);
        assert_eq!(adbbr_pacing_factor_x1024(30, 10, 1, 1000, 1_000), 1024);
        assert_eq!(adbbr_regime(u32::MAX, 1, u32::MAX / 4), 2, "no overflow");
    }

    #[test]
    fn adbbr_alpha_threshold_has_the_same_floor() {
        assert_eq!(adbbr_alpha_threshold_us(10_000, 1_250_000, 0), 12_500);
        assert_eq!(adbbr_alpha_threshold_us(10_000, 1_250_000, 1_000), 12_500);
        assert_eq!(adbbr_alpha_threshold_us(10, 1_250_000, 1_000), 1_010);
        assert_eq!(
            adbbr_alpha_threshold_us(u32::MAX, 4_000_000, u32::MAX),
            u32::MAX as u64 * 4
        );
    }

    #[test]
    fn adbbr_beta_divides_rate_by_rrtt_over_nrtt() {
        let mut r = rng();
        for _ in 0..20_000 {
            let n = r.gen_range(100..1_000_000u32);
            let rr = r.gen_range(n..(n as u64 * 3 / 2).min(u32::MAX as u64) as u32 + 1);
            let beta = adbbr_beta_x1024(rr, n) as f64 / 1024.0;
            assert!(close(beta, rr as f64 / n as f64, 1.0 / 1024.0, 0.0));
            if adbbr_regime(rr, n, 0) == 1 {
                let f = adbbr_pacing_factor_x1024(rr, n, 2, 1000, 0) as f64 / 1024.0;
                assert!(close(f, n as f64 / rr as f64, 2.0 / 1024.0, 0.0), "{f}");
            }
        }
    }

    fn gamma_ref(rr: f64, n: f64, mode: u32, reference: f64) -> f64 {
        let eta = (rr - n).max(0.0);
        let g = match mode {
            1 => n / rr,
            3 => {
                if eta == 0.0 {
                    1.0
                } else {
                    reference / eta
                }
            }
            _ => {
                if eta == 0.0 {
                    1.0
                } else {
                    n / (3.0 * eta)
                }
            }
        };
        g.clamp(1.0 / 16.0, 2.0 / 3.0)
    }

    #[test]
    fn adbbr_gamma_interpretations_match_reference_and_stay_bounded() {
        let mut r = rng();
        for mode in [1u32, 2, 3] {
            for _ in 0..20_000 {
                let n = r.gen_range(100..500_000u32);
                let rr = r.gen_range(n + n / 2..n.saturating_mul(20).max(n + n / 2 + 1));
                let got = adbbr_gamma_x1024(rr, n, mode, 1000) as f64 / 1024.0;
                let want = gamma_ref(rr as f64, n as f64, mode, 1000.0);
                assert!(
                    close(got, want, 1.5 / 1024.0, 0.0),
                    "mode {mode} rr={rr} n={n}: {got} vs {want}"
                );
                assert!((1.0 / 16.0 - 1e-9..=2.0 / 3.0 + 1e-9).contains(&got));
            }
        }
        // Continuity at the 1.5 x nRTT boundary for the default interpretation.
        let below = adbbr_pacing_factor_x1024(14_999, 10_000, 2, 1000, 0);
        let at = adbbr_pacing_factor_x1024(15_000, 10_000, 2, 1000, 0);
        assert!((below as i64 - at as i64).abs() <= 2, "{below} vs {at}");
        // As printed (1/eta in seconds) gamma would be 100 for 10 ms: clamped.
        assert_eq!(
            adbbr_gamma_x1024(20_000, 10_000, 3, 1_000_000),
            1024 * 2 / 3
        );
    }

    #[test]
    fn adbbr_apply_factor_is_exact_enough() {
        let mut r = rng();
        for _ in 0..20_000 {
            let rate = r.gen_range(0..u64::MAX / 2048);
            let f = r.gen_range(0..=1024u32);
            let got = adbbr_apply_factor(rate, f) as f64;
            let want = rate as f64 * f as f64 / 1024.0;
            assert!(close(got, want, 1.0, 1e-12), "{rate} x {f}");
        }
        assert_eq!(
            adbbr_apply_factor(u64::MAX, 1024),
            u64::MAX - 1023 + 1023,
            "no overflow at full scale"
        );
    }

    #[test]
    fn isqrt_and_std_match_reference() {
        let mut r = rng();
        for _ in 0..50_000 {
            // Every bit length alike, not mostly 64-bit values.
            let x: u64 = r.gen::<u64>() >> r.gen_range(0..64);
            let s = isqrt(x) as u128;
            assert!(
                s * s <= x as u128 && (s + 1) * (s + 1) > x as u128,
                "isqrt({x}) = {s}"
            );
        }
        // Every small x, the squares and their neighbours at every bit
        // length (where Newton's last step decides), and the edges.
        let squares = (1..=32u32).flat_map(|b| {
            let root = (1u64 << b) - 1;
            [root * root - 1, root * root, root * root + 1, root << b]
        });
        for x in (0u64..5000).chain(squares).chain([
            (1 << 62) - 1,
            999_999_999_999,
            u32::MAX as u64,
            u64::MAX,
        ]) {
            let s = isqrt(x) as u128;
            assert!(
                s * s <= x as u128 && (s + 1) * (s + 1) > x as u128,
                "isqrt({x})"
            );
        }
        for _ in 0..5_000 {
            let n = r.gen_range(2..=16u32);
            let v: Vec<u64> = (0..n).map(|_| r.gen_range(1_000..2_000_000u64)).collect();
            let (sum, sq) = (v.iter().sum::<u64>(), v.iter().map(|x| x * x).sum::<u64>());
            let mean = sum as f64 / n as f64;
            let want =
                (v.iter().map(|x| (*x as f64 - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let got = adbbr_std_us(sum, sq, n) as f64;
            // Integer mean and floor sqrt: within a few us of the exact value.
            assert!(close(got, want, 3.0, 1e-3), "{v:?}: {got} vs {want}");
        }
        assert_eq!(adbbr_std_us(5, 25, 1), 0, "one sample: 0 (Alg. 3 line 4)");
        assert_eq!(adbbr_std_us(20, 200, 2), 0, "equal samples");
    }

    #[test]
    fn adbbr_eq13_y() {
        assert_eq!(adbbr_y_us(4_000, 500_000, 5_000), 5_000, "Z_min floor");
        assert_eq!(adbbr_y_us(30_000, 500_000, 5_000), 15_000);
        assert_eq!(adbbr_y_us(u32::MAX, 1_000_000, 0), u32::MAX);
    }
}
