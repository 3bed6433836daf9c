//! Time to fair: how long a flow whose situation changes mid-run (a late
//! joiner, or a flow whose path RTT changes) takes to get its fair share
//! of the link and keep it. The late-joiner and path-RTT-change tables of
//! docs/results.md report it; it was `scripts/qfair-time-to-fair.py`
//! until the lab computed it (the same rule, ported as it was):
//!
//! - the flow and its event: the first flow with an `rtt_change` and the
//!   change's time (a ramp's start, `at_s`); else the flow that starts
//!   last (the first of them on a tie) and its start. No event when that
//!   time is 0 (every flow starts together and no path changes);
//! - its fair share: the link's goodput capacity, rate x MSS / wire
//!   packet (1448/1514), over the flows running at the event (started at
//!   or before it, not yet stopped);
//! - time to fair: the first whole second k after the event from which
//!   the flow's per-interval goodput stays within [`TOLERANCE`] of the
//!   share for [`HOLD_S`] seconds of samples in a row ([`hold_samples`]
//!   of the scenario's `interval_s`: the samples ending at event + k ...
//!   event + k + 4 with 1 s intervals); "never" if no such k before the
//!   run ends. Samples ending within half a second of the
//!   event are left out (they hold mostly time before it).
//!
//! Computed from the per-interval goodput series a repetition's summary
//! already has ([`crate::results::summary::summarize`]), or read back from a run
//! folder's goodput.csv ([`of_rep_folder`], for folders written before
//! summaries held it).

use std::path::Path;

use anyhow::Result;

use crate::results::TimeToFair;
use crate::scenario::{Scenario, MSS, WIRE_PACKET};

/// How far from the share a sample may be and still count as fair: 20 %
/// of the share, either way.
pub const TOLERANCE: f64 = 0.20;

/// How long the samples in a row must be fair, seconds, so one lucky
/// second is not "fair".
pub const HOLD_S: f64 = 5.0;

/// How many samples in a row cover [`HOLD_S`] at a sample every
/// `interval_s` (the scenario's iperf3 interval): 5 at 1 s, 25 at 0.2 s,
/// 1 at 10 s; at least one.
pub fn hold_samples(interval_s: f64) -> usize {
    // Less a hair, so 5 / 0.2 (25.000000000000004 or so) is 25.
    ((HOLD_S / interval_s - 1e-9).ceil() as usize).max(1)
}

/// The event a scenario's time to fair is measured from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// The followed flow (its index in the run).
    pub flow: usize,
    /// When its path's RTT changes, else when it starts, s.
    pub at_s: f64,
    /// Its fair share at that time, bit/s of goodput.
    pub share_bps: f64,
    /// How long the run goes on after the event, s.
    pub watched_s: f64,
    /// How many samples in a row must be fair ([`hold_samples`] of the
    /// scenario's interval).
    pub hold_samples: usize,
}

/// The event of `scenario` (see the module doc); `None` when it has none.
pub fn event(scenario: &Scenario) -> Option<Event> {
    let flows = scenario.flows();
    let (flow, at_s) = match flows.iter().find_map(|f| f.rtt_change.map(|c| (f, c))) {
        Some((f, change)) => (f.index, change.at_s),
        None => {
            // The last to start; on a tie the first of them.
            let mut last = flows.first()?;
            for f in &flows {
                if f.start_s > last.start_s {
                    last = f;
                }
            }
            (last.index, last.start_s)
        }
    };
    if at_s <= 0.0 {
        return None;
    }
    let running = flows
        .iter()
        .filter(|f| f.start_s <= at_s && at_s < f.stop_s)
        .count();
    if running == 0 {
        return None;
    }
    let capacity = scenario.bottleneck.rate_mbit * 1e6 * MSS as f64 / WIRE_PACKET as f64;
    Some(Event {
        flow,
        at_s,
        share_bps: capacity / running as f64,
        watched_s: scenario.duration_s - at_s,
        hold_samples: hold_samples(scenario.interval_s),
    })
}

impl Event {
    /// The followed flow's time to fair from its goodput series
    /// (interval end time since the run's start, bit/s; any order).
    pub fn measure(&self, goodput: &[(f64, f64)]) -> TimeToFair {
        TimeToFair {
            flow: self.flow,
            event_s: self.at_s,
            share_mbit: self.share_bps / 1e6,
            seconds: first_fair_second(goodput, self.at_s, self.share_bps, self.hold_samples),
            watched_s: self.watched_s,
        }
    }
}

/// The first whole second k after `event_s` from which `hold` samples in
/// a row are within [`TOLERANCE`] of `share` (see the module doc); `None`
/// if there is none. `samples`: (interval end, bit/s).
pub fn first_fair_second(
    samples: &[(f64, f64)],
    event_s: f64,
    share: f64,
    hold: usize,
) -> Option<f64> {
    let mut after: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t > event_s + 0.5)
        .collect();
    after.sort_by(|a, b| a.0.total_cmp(&b.0));
    let fair: Vec<bool> = after
        .iter()
        .map(|(_, bps)| (bps - share).abs() <= TOLERANCE * share)
        .collect();
    fair.windows(hold.max(1))
        .position(|w| w.iter().all(|&f| f))
        // Ties to even, as the script's Python round() did.
        .map(|i| (after[i].0 - event_s).round_ties_even())
}

/// The time to fair of repetition `rep` of the run folder `run_dir`
/// (which ran `scenario`), from its `rep<rep>/goodput.csv`: for folders
/// whose summary.json predates the field. `Ok(None)` when the scenario
/// has no event (the file is then not read).
pub fn of_rep_folder(
    run_dir: &Path,
    scenario: &Scenario,
    rep: usize,
) -> Result<Option<TimeToFair>> {
    let Some(e) = event(scenario) else {
        return Ok(None);
    };
    let path = run_dir.join(format!("rep{rep}")).join("goodput.csv");
    let series = crate::results::files::read_goodput_of(&path, e.flow)?;
    Ok(Some(e.measure(&series)))
}

/// A time to fair as a table cell: "3 s", or "never (60 s)" with how
/// long the run watched after the event.
pub fn cell(t: &TimeToFair) -> String {
    match t.seconds {
        Some(s) => format!("{s:.0} s"),
        None => format!("never ({:.0} s)", t.watched_s),
    }
}

/// The repetitions' times to fair in one cell, in repetition order:
/// "1 s / 10 s / never (60 s)"; "-" for a repetition without one.
pub fn cells(reps: &[Option<TimeToFair>]) -> String {
    reps.iter()
        .map(|t| t.as_ref().map_or("-".to_string(), cell))
        .collect::<Vec<_>>()
        .join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded late joiner, the scenario these tables are for: two
    /// flows through 20 Mbit/s, flow 0 joining flow 1 at 20 s; 80 s runs.
    /// Each flow's share after the join is half the capacity.
    fn late_joiner() -> Scenario {
        crate::scenario::builtin::resolve("qfair-late-joiner").unwrap()
    }

    const HALF: f64 = 20e6 * 1448.0 / 1514.0 / 2.0;

    /// One sample per second, ending at `from + 1`, `from + 2`, ...
    fn series(from: f64, values: &[f64]) -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (from + 1.0 + i as f64, v))
            .collect()
    }

    #[test]
    fn the_joiner_is_the_flow_that_starts_last_and_shares_with_the_running_ones() {
        let e = event(&late_joiner()).unwrap();
        assert_eq!((e.flow, e.at_s, e.watched_s), (0, 20.0, 60.0));
        assert!((e.share_bps - HALF).abs() < 1e-6, "{}", e.share_bps);
    }

    #[test]
    fn a_joiner_fair_at_once_takes_one_second() {
        let e = event(&late_joiner()).unwrap();
        let t = e.measure(&series(20.0, &[HALF; 10]));
        assert_eq!(t.seconds, Some(1.0));
        assert_eq!(cell(&t), "1 s");
    }

    #[test]
    fn a_dip_restarts_the_count() {
        // Fair for 4 s, one sample 25 % low, then fair: the count starts
        // again after the dip, at the 6th sample (ending 26 s).
        let mut v = vec![HALF; 12];
        v[4] = HALF * 0.75;
        let t = event(&late_joiner()).unwrap().measure(&series(20.0, &v));
        assert_eq!(t.seconds, Some(6.0));
        // Less than 20 % off counts as fair.
        v[4] = HALF * 0.81;
        let t = event(&late_joiner()).unwrap().measure(&series(20.0, &v));
        assert_eq!(t.seconds, Some(1.0));
    }

    #[test]
    fn a_joiner_never_fair_says_so_with_how_long_it_was_watched() {
        // Fair only 4 s in a row at the end, too few.
        let mut v = vec![HALF * 0.3; 56];
        v.extend([HALF; 4]);
        let t = event(&late_joiner()).unwrap().measure(&series(20.0, &v));
        assert_eq!(t.seconds, None);
        assert_eq!(cell(&t), "never (60 s)");
        assert_eq!(cells(&[Some(t), None]), "never (60 s) / -");
    }

    #[test]
    fn samples_before_and_just_after_the_event_do_not_count() {
        // Fair before the join and in the sample ending 20.4 s; not after.
        let mut s = series(10.0, &[HALF; 10]);
        s.push((20.4, HALF));
        s.extend(series(20.0, &[0.0; 3]));
        s.extend(series(23.0, &[HALF; 6]));
        let t = first_fair_second(&s, 20.0, HALF, 5);
        assert_eq!(t, Some(4.0));
    }

    #[test]
    fn an_rtt_change_is_the_event_even_when_another_flow_joins_later() {
        let mut s = late_joiner();
        s.flows[1].rtt_change = Some(crate::scenario::RttChange {
            at_s: 40.0,
            rtt_ms: 100.0,
            over_s: 0.0,
        });
        let e = event(&s).unwrap();
        assert_eq!((e.flow, e.at_s, e.watched_s), (1, 40.0, 40.0));
        // Both flows run at 40 s: half the link each.
        assert!((e.share_bps - HALF).abs() < 1e-6);
        let mut v = vec![HALF * 1.5; 3];
        v.extend([HALF * 1.1; 5]);
        assert_eq!(e.measure(&series(40.0, &v)).seconds, Some(4.0));
    }

    #[test]
    fn flows_that_start_together_have_no_event() {
        let mut s = late_joiner();
        s.flows[0].start_s = 0.0;
        assert_eq!(event(&s), None);
    }

    #[test]
    fn a_flow_that_stopped_before_the_event_does_not_share() {
        // Three flows; the second stops at 10 s, so at 20 s two run.
        let mut s = late_joiner();
        let mut gone = s.flows[1].clone();
        gone.stop_s = Some(10.0);
        s.flows.push(gone);
        let e = event(&s).unwrap();
        assert!((e.share_bps - HALF).abs() < 1e-6);
    }

    /// The rule and scripts/qfair-time-to-fair.py agree on real runs:
    /// three run folders of `qfair-late-joiner` (session 12, /tmp/p12/
    /// nongrid/rep1, scenario.toml and rep0/goodput.csv copied into
    /// src/testdata/time_to_fair). The expected cells are what the script
    /// printed for them at commit acd4724, its last version (`python3
    /// scripts/qfair-time-to-fair.py lab/src/testdata/time_to_fair/*`):
    /// bbr never (60 s), cubic 40 s, qfair 10 s.
    #[test]
    fn agrees_with_the_script_on_real_run_folders() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/testdata/time_to_fair");
        for (cca, script_said) in [
            ("bbr", "never (60 s)"),
            ("cubic", "40 s"),
            ("qfair", "10 s"),
        ] {
            let dir = root.join(format!("late-joiner-{cca}"));
            let s = Scenario::load(&dir.join("scenario.toml")).unwrap();
            let t = of_rep_folder(&dir, &s, 0).unwrap().unwrap();
            assert_eq!(cell(&t), script_said, "{cca}");
            assert_eq!(t.flow, 0, "{cca}: the 10 ms joiner is flow 0");
        }
    }

    /// "Fair" means held for 5 s whatever the sampling interval: at 0.5 s
    /// that is 10 samples, so 4 s of fair samples (8) then a dip is not
    /// yet fair; at 10 s one sample is enough.
    #[test]
    fn the_hold_is_five_seconds_at_any_interval() {
        assert_eq!(
            [0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 10.0].map(hold_samples),
            [50, 25, 17, 10, 5, 3, 1]
        );
        let mut s = late_joiner();
        s.interval_s = 0.5;
        let e = event(&s).unwrap();
        assert_eq!(e.hold_samples, 10);
        // Samples every 0.5 s from 20.5 s: 8 fair, one low, then fair.
        let mut v: Vec<(f64, f64)> = (1..=40).map(|i| (20.0 + 0.5 * i as f64, HALF)).collect();
        v[8].1 = HALF * 0.5;
        // The first 10 fair in a row start at the sample ending 25 s.
        assert_eq!(e.measure(&v).seconds, Some(5.0));
    }
}
