//! BBR's RTprop rule checked against one flow's export records.
//!
//! The rule (bbr_core.h, bbr_update_min_rtt, as tcp_bbr.c): every refresh of
//! the minimum RTT restarts a 10 s clock, and the first ACK after the clock
//! runs out enters ProbeRTT. The clock restarts when a sample is lower than
//! the minimum (a new record), when it runs out (the minimum is replaced by
//! the current sample) and when ProbeRTT ends. How many ProbeRTTs a run
//! holds therefore depends on how many records it met: on an emulated path
//! a loaded machine delays some RTT samples, a ProbeRTT dwell then reads a
//! minimum a few tens of microseconds above the path's floor, and a later
//! sample that beats it restarts the clock -- so counting entries in a fixed
//! run time tests the load, not the rule.
//!
//! What the export shows is enough to check the rule itself: the minimum RTT
//! only changes when the clock restarts (a record, or the replacement when
//! it ran out), a ProbeRTT exit is the mode leaving ProbeRTT, an entry is
//! the entry counter rising, and every record carries the time it was
//! written on the kernel's clock. Between two records read back, each of
//! these is known to lie in (earlier record, later record]; [`account`]
//! checks both directions of the rule with those bounds:
//! - no early entry: an entry comes more than 10 s after the last refresh;
//! - no missed one: a record written more than 10 s after the last refresh
//!   (or entry) that could have happened shows a refresh or an entry.

use std::time::Duration;

use rttfair_loader::export::Mode;
use rttfair_loader::Flow;

/// BBR's RTprop window (BBR_MIN_RTT_WIN_MS).
pub const WINDOW: Duration = Duration::from_secs(10);

/// The granularity of the rule as the export shows it: BBR's clock is in
/// whole milliseconds (the refresh stamp and the time it is compared with
/// are both truncated, up to 2 ms together), and a record is stamped a few
/// microseconds after the ACK that wrote it.
pub const CLOCK_GRAIN: Duration = Duration::from_millis(3);

/// One flow's ProbeRTTs set against the refreshes of its minimum RTT.
/// Times are seconds since the flow started (its CCA's init).
#[derive(Debug, Default)]
pub struct Account {
    /// Distinct records read (two reads of one record count once).
    pub records: usize,
    /// When the last of them was written.
    pub last_at: f64,
    /// ProbeRTT entries (the counter in the last record).
    pub entries: u32,
    /// Refreshes seen: changes of the minimum RTT and ProbeRTT exits.
    pub refreshes: usize,
    /// Entries less than [`WINDOW`] after the last refresh before them:
    /// (entry seen by, last refresh not before).
    pub early: Vec<(f64, f64)>,
    /// Windows that ran out with neither an entry nor a refresh: (the
    /// record written after the window ran out, last refresh or entry not
    /// after). Each counts once: the next window starts at that record.
    pub missed: Vec<(f64, f64)>,
    /// (time, min RTT us, entries, mode) at each change, for a failure's
    /// message.
    pub timeline: Vec<(f64, u128, u32, Mode)>,
}

impl Account {
    /// Whether the records follow the rule in both directions.
    pub fn follows_rule(&self) -> bool {
        self.early.is_empty() && self.missed.is_empty()
    }
}

/// Check one flow's records, in the order they were read, against the rule.
/// All records must be of one flow.
pub fn account(flow_records: &[&Flow]) -> Account {
    let mut acc = Account::default();
    let Some(first) = flow_records.first() else {
        return acc;
    };
    assert!(
        flow_records.iter().all(|f| f.id == first.id),
        "records of more than one flow"
    );
    let at = |f: &Flow| f.exported_at.saturating_sub(f.started_at).as_secs_f64();
    let mut recs: Vec<&Flow> = Vec::new();
    for f in flow_records {
        if recs.last().is_none_or(|p| p.exported_at != f.exported_at) {
            recs.push(f);
        }
    }
    acc.records = recs.len();
    let (window, grain) = (WINDOW.as_secs_f64(), CLOCK_GRAIN.as_secs_f64());
    // The last certain refresh is no earlier than `refreshed_lo`; the last
    // refresh or entry that may have happened is no later than `due_from`.
    // Init stamps the clock; before the first record read, nothing is known,
    // so one may have happened up to it.
    let mut refreshed_lo = 0.0;
    let mut due_from = at(first);
    // A record past the window that showed nothing: the ACK that wrote it
    // may have been the one a restart from idle spared (BBR skips ProbeRTT
    // on the first ACK after an idle restart, and replaces nothing when that
    // ACK carries no usable RTT sample), so the miss stands only if the next
    // record shows nothing either.
    let mut pending: Option<(f64, f64)> = None;
    let change = |f: &Flow| (at(f), f.min_rtt.as_micros(), f.probe_rtt_entries, f.mode);
    acc.timeline.push(change(first));
    for w in recs.windows(2) {
        let (prev, cur) = (w[0], w[1]);
        let (t0, t1) = (at(prev), at(cur));
        let entered = cur.probe_rtt_entries.wrapping_sub(prev.probe_rtt_entries) > 0;
        let exited = (prev.mode == Mode::ProbeRtt || entered) && cur.mode != Mode::ProbeRtt;
        let min_changed = cur.min_rtt != prev.min_rtt;
        if entered || exited || min_changed {
            acc.timeline.push(change(cur));
        }
        if entered && t1 < refreshed_lo + window - grain {
            acc.early.push((t1, refreshed_lo));
        }
        if exited || min_changed {
            acc.refreshes += 1;
            refreshed_lo = t0;
        }
        if entered || exited || min_changed {
            due_from = t1;
            pending = None;
            continue;
        }
        if let Some(miss) = pending.take() {
            acc.missed.push(miss);
            due_from = t0;
        } else if t1 > due_from + window + grain && cur.mode != Mode::ProbeRtt {
            pending = Some((t1, due_from));
        }
    }
    acc.entries = recs.last().unwrap().probe_rtt_entries;
    acc.last_at = at(recs.last().unwrap());
    acc
}
