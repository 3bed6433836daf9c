"""qfair's drain tests as the committed readers apply them to drains.csv
rows (lab/src/results/drains.rs), restated once from bpf/include/qfair_math.h:
imported by qfair-drain-raises.py and qfair-path-change.py, which run from
any directory (each puts its own folder on sys.path)."""


def margin_ms(rtprop_ms):
    """Eq. 10's 'longer path' margin, max(2 ms, R^/8) (qf_drain_saw_longer_path)."""
    return max(2.0, rtprop_ms / 8)


def saw_longer_path(row):
    """Whether a drain's minimum lies above its R^ by more than the margin."""
    before = float(row["min_rtt_before_ms"])
    return float(row["drain_min_ms"]) > before + margin_ms(before)


def raised(row):
    """Whether the drain raised R^ by more than the margin (P2 or Eq. 10)."""
    before = float(row["min_rtt_before_ms"])
    return float(row["min_rtt_after_ms"]) > before + margin_ms(before)


def agree(a, b):
    """Two minima within 10 % of the lower (qf_minima_agree)."""
    hi, lo = max(a, b), min(a, b)
    return (hi - lo) * 10 <= lo
