//! Fairness and performance metrics: the one place they are computed, for the
//! daemon's live gauges and the lab's results alike (so a scrape and a lab
//! summary can never disagree on what "Jain's index" means).
//!
//! Definitions follow the shallow-buffer study of BBR's RTT fairness that the
//! lab's `shallow-*` scenarios reproduce, where it gives them:
//! - Jain's index (RFC 5166): (sum x)^2 / (n * sum x^2), 1 = perfectly fair.
//! - STDR, symmetric throughput difference ratio of flow (group) 1 against
//!   flow (group) 2: (x1 - x2) / (x1 + x2), in [-1, 1]; +1 when 1 takes all.
//!   (The study prints the formula as an image; this is the form whose range
//!   and sign match its description.)
//! - RTS, relative throughput share of group g: (T_g / n_g) / mean, as a
//!   ratio (1.0 = its proportional share).
//! - Utilization: sum of goodputs / capacity available to goodput.
//! - Retransmission ratio: retransmitted / (retransmitted + delivered) packets.

/// Jain's fairness index of non-negative values; 1.0 for an empty or all-zero set.
pub fn jain(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}

/// STDR of x1 against x2.
pub fn stdr(x1: f64, x2: f64) -> f64 {
    if x1 + x2 == 0.0 {
        0.0
    } else {
        (x1 - x2) / (x1 + x2)
    }
}

/// RTS of a group with total throughput `group_total` over `n` flows, given
/// the mean throughput over all flows.
pub fn rts(group_total: f64, n: usize, mean_all: f64) -> f64 {
    if n == 0 || mean_all == 0.0 {
        0.0
    } else {
        group_total / n as f64 / mean_all
    }
}

/// Ratio of the larger to the smaller (>= 1), or infinity if one is zero.
pub fn throughput_ratio(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == 0.0 {
        f64::INFINITY
    } else {
        hi / lo
    }
}

/// Arithmetic mean; 0.0 for an empty set.
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// The p-th percentile (0..=100), nearest-rank on a sorted copy.
pub fn percentile(x: &[f64], p: f64) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let mut v: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// Retransmitted / (retransmitted + delivered).
pub fn retransmission_ratio(retrans_pkts: f64, delivered_pkts: f64) -> f64 {
    if retrans_pkts + delivered_pkts == 0.0 {
        0.0
    } else {
        retrans_pkts / (retrans_pkts + delivered_pkts)
    }
}

/// Convergence time: the first time from which Jain's index over the per
/// interval throughputs stays >= `threshold` for the rest of the series.
/// `series[t]` holds the flows' throughputs in interval t (inactive flows
/// excluded by the caller); `None` if it never converges.
pub fn convergence_time(times: &[f64], series: &[Vec<f64>], threshold: f64) -> Option<f64> {
    let ok: Vec<bool> = series.iter().map(|x| jain(x) >= threshold).collect();
    let mut first_good = None;
    for (i, good) in ok.iter().enumerate() {
        if *good {
            first_good.get_or_insert(i);
        } else {
            first_good = None;
        }
    }
    first_good.and_then(|i| times.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes() {
        assert_eq!(jain(&[5.0, 5.0, 5.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
    }

    #[test]
    fn stdr_sign_and_range() {
        assert_eq!(stdr(1.0, 0.0), 1.0);
        assert_eq!(stdr(0.0, 1.0), -1.0);
        assert_eq!(stdr(2.0, 2.0), 0.0);
        assert!((stdr(3.0, 1.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn rts_is_share_of_proportional() {
        // Two groups of 1 flow: 30 and 10, mean 20.
        assert!((rts(30.0, 1, 20.0) - 1.5).abs() < 1e-12);
        assert!((rts(10.0, 1, 20.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn percentile_nearest_rank() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&x, 95.0), 95.0);
        assert_eq!(percentile(&x, 50.0), 50.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
    }

    #[test]
    fn convergence_needs_to_stay_fair() {
        let t = [1.0, 2.0, 3.0, 4.0];
        let s = vec![
            vec![9.0, 1.0],
            vec![5.0, 5.0],
            vec![9.0, 1.0],
            vec![5.0, 5.0],
        ];
        assert_eq!(convergence_time(&t, &s, 0.95), Some(4.0));
        let never = vec![vec![9.0, 1.0]; 4];
        assert_eq!(convergence_time(&t, &never, 0.95), None);
    }

    #[test]
    fn ratios() {
        assert_eq!(throughput_ratio(2.0, 4.0), 2.0);
        assert!(throughput_ratio(1.0, 0.0).is_infinite());
        assert!((retransmission_ratio(1.0, 99.0) - 0.01).abs() < 1e-12);
    }
}
