//! A repetition's qfair drains, one row each: `rep<N>/drains.csv`.
//!
//! Both of qfair's drain decisions (the verdict, and Eq. 10's longer-path
//! rule that can raise R^) turn on the drain's minimum RTT m, which the flow
//! exports since ABI 7 (`qfair_drain_min_ms` in bpf.csv). Reading a drain
//! off bpf.csv by hand means finding where `qfair_drains_ok` or
//! `_failed` stepped and reading R^, m and the competitive flag around it;
//! this does it once, from the samples the repetition already has
//! ([`crate::results::BpfSample`], every 100 ms), so a run's drains read as
//! one line each ("failed, m 40.08 ms over R^ 10.06 ms, turned competitive").
//!
//! A row per judged drain of each flow, found where the flow's drain
//! counters rose between two consecutive samples:
//! - `t`: the first sample showing the verdict (within a sample period after
//!   the drain's end), and `flow`;
//! - `verdict`: ok (the drain emptied the queue, or Eq. 10 raised R^) or
//!   failed (it found a queue the flow does not own);
//! - `drain_min_ms`: m, the drain's minimum;
//! - `min_rtt_before_ms` / `min_rtt_after_ms`: R^ in the sample before and
//!   in that one, so an Eq. 10 raise shows as after > before;
//! - `competitive_before` / `competitive_after`: the mode around it.
//!
//! Between two samples there is normally at most one drain (10 s apart,
//! samples 100 ms apart). If the counters rose by more (a stalled sampler),
//! each drain still gets a row, ok ones first, and only the "after" fields
//! that are the gap's own (t, R^ after, competitive after) are filled: m is
//! the last drain's alone, so it is left empty, as are the "before" fields
//! of a flow's first sample. So the rows of a flow count exactly its
//! exported `qfair_drains_ok` and `_failed`; a counter that goes down is a
//! new socket under the same lab flow, counted from zero again.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::results::{ms, BpfSample};

/// One judged drain: a row of `drains.csv`, whose columns are these fields
/// in this order ([`Around`]'s two each). Only written: the CSV is what
/// readers get.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drain {
    /// The first sample showing the verdict, s into the run.
    t: f64,
    /// The lab flow.
    flow: usize,
    /// Which counter rose.
    verdict: Verdict,
    /// m, the drain's lowest RTT (empty when not this drain's alone).
    drain_min_ms: Option<f64>,
    /// R^: above before after it when Eq. 10 raised it.
    min_rtt_ms: Around<f64>,
    /// Competitive mode, 1/0: a failed drain turns it on.
    competitive: Around<u8>,
}

/// A value in the sample before the drain's verdict and in the one that
/// shows it; "before" is empty when that sample is not this drain's alone
/// (the flow's first sample, or several drains in one gap).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Around<T> {
    before: Option<T>,
    after: T,
}

/// The CSV header: [`Drain`]'s fields, [`Around`]'s flattened.
const HEADER: [&str; 8] = [
    "t",
    "flow",
    "verdict",
    "drain_min_ms",
    "min_rtt_before_ms",
    "min_rtt_after_ms",
    "competitive_before",
    "competitive_after",
];

/// A drain's verdict as its counters show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// `qfair_drains_ok` rose: the queue emptied (or Eq. 10 raised R^).
    Ok,
    /// `qfair_drains_failed` rose: a queue the flow does not own.
    Failed,
}

/// Every judged drain in `samples` (a repetition's bpf samples, in time
/// order, flows interleaved), ordered by time, then flow.
pub fn of_samples(samples: &[BpfSample]) -> Vec<Drain> {
    let flows: std::collections::BTreeSet<usize> = samples.iter().map(|s| s.flow).collect();
    let mut out = Vec::new();
    // a sample's qfair state (zeros for another CCA's flow: no drains)
    let q = |s: &BpfSample| s.export.qfair().copied().unwrap_or_default();
    for flow in flows {
        let mut prev: Option<&BpfSample> = None;
        for s in samples.iter().filter(|s| s.flow == flow) {
            let now = q(s);
            // a counter that went down: a new socket, its drains from zero
            let before = prev.filter(|p| {
                let p = q(p);
                p.drains_ok <= now.drains_ok && p.drains_failed <= now.drains_failed
            });
            let (ok0, failed0) = before.map_or((0, 0), |p| (q(p).drains_ok, q(p).drains_failed));
            let ok = now.drains_ok - ok0;
            let failed = now.drains_failed - failed0;
            let single = ok + failed == 1;
            let verdicts = std::iter::repeat_n(Verdict::Ok, ok as usize)
                .chain(std::iter::repeat_n(Verdict::Failed, failed as usize));
            for verdict in verdicts {
                let mine = before.filter(|_| single);
                out.push(Drain {
                    t: s.t,
                    flow,
                    verdict,
                    drain_min_ms: now.drain_min_rtt.filter(|_| single).map(ms),
                    min_rtt_ms: Around {
                        before: mine.map(|p| ms(p.export.min_rtt)),
                        after: ms(s.export.min_rtt),
                    },
                    competitive: Around {
                        before: mine.map(|p| q(p).competitive as u8),
                        after: now.competitive as u8,
                    },
                });
            }
            prev = Some(s);
        }
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.flow.cmp(&b.flow)));
    out
}

/// Write `drains.csv` at `path` from a repetition's bpf samples (a header
/// alone when no flow had a judged drain).
pub fn write(path: &Path, samples: &[BpfSample]) -> Result<()> {
    crate::atomic::write_atomic(path, |f| {
        let mut csv = csv::WriterBuilder::new().has_headers(false).from_writer(f);
        csv.write_record(HEADER)?;
        for d in of_samples(samples) {
            csv.serialize(d)?;
        }
        csv.flush()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rttfair_loader::export::{CcaState, Qfair};
    use rttfair_loader::{Cca, Flow};

    use super::*;

    /// A qfair flow's sample at `t`: R^
    /// and m in ms (m 0: no drain yet), the drain counters, the mode.
    fn at(t: f64, flow: usize, r: f64, m: f64, ok: u32, failed: u32, comp: bool) -> BpfSample {
        let ms = |v: f64| Duration::from_secs_f64(v / 1e3);
        let f = Flow {
            cca: Some(Cca::Qfair),
            min_rtt: ms(r),
            state: CcaState::Qfair(Qfair {
                drain_min_rtt: (m > 0.0).then(|| ms(m)),
                drains_ok: ok,
                drains_failed: failed,
                competitive: comp,
                ..Qfair::default()
            }),
            ..Flow::default()
        };
        BpfSample::new(t, flow, &f)
    }

    /// The path-RTT-change story of docs/results.md (flow 0's path goes
    /// from 10 to 40 ms): fail, fail, then Eq. 10 raises R^ at the third
    /// drain; flow 1 beside it passes each drain. Samples interleaved, as
    /// the lab takes them.
    fn rtt_change() -> Vec<BpfSample> {
        let mut s = Vec::new();
        let f0 = [
            (39.0, 10.056, 10.07, 3, 0, false),
            (45.9, 10.056, 10.07, 3, 0, false),
            (46.0, 10.056, 40.08, 3, 1, true),
            (55.9, 10.056, 40.08, 3, 1, true),
            (56.0, 10.056, 40.1, 3, 2, true),
            (65.9, 10.056, 40.1, 3, 2, true),
            (66.0, 40.054, 40.054, 4, 2, false),
            (70.0, 40.054, 40.054, 4, 2, false),
        ];
        let f1 = [
            (39.0, 50.049, 50.06, 4, 0),
            (46.0, 50.049, 50.07, 5, 0),
            (56.0, 50.049, 50.05, 6, 0),
            (66.0, 50.049, 50.06, 7, 0),
            (70.0, 50.049, 50.06, 7, 0),
        ];
        for (t, r, m, ok, failed, comp) in f0 {
            s.push(at(t, 0, r, m, ok, failed, comp));
            if let Some(&(t1, r1, m1, ok1, failed1)) = f1.iter().find(|f| f.0 == t) {
                s.push(at(t1, 1, r1, m1, ok1, failed1, false));
            }
        }
        s
    }

    #[test]
    fn a_path_change_reads_fail_fail_raise() {
        let d = of_samples(&rtt_change());
        let f0: Vec<_> = d.iter().filter(|d| d.flow == 0).collect();
        let row = |d: &Drain| {
            (
                d.t,
                d.min_rtt_ms.before,
                d.min_rtt_ms.after,
                d.drain_min_ms,
                d.verdict,
                d.competitive.before,
                d.competitive.after,
            )
        };
        assert_eq!(
            f0.iter().map(|d| row(d)).collect::<Vec<_>>(),
            [
                // drains before sampling began: counted, nothing "before"
                (39.0, None, 10.056, None, Verdict::Ok, None, 0),
                (39.0, None, 10.056, None, Verdict::Ok, None, 0),
                (39.0, None, 10.056, None, Verdict::Ok, None, 0),
                (
                    46.0,
                    Some(10.056),
                    10.056,
                    Some(40.08),
                    Verdict::Failed,
                    Some(0),
                    1
                ),
                (
                    56.0,
                    Some(10.056),
                    10.056,
                    Some(40.1),
                    Verdict::Failed,
                    Some(1),
                    1
                ),
                (
                    66.0,
                    Some(10.056),
                    40.054,
                    Some(40.054),
                    Verdict::Ok,
                    Some(1),
                    0
                ),
            ]
        );
        // ordered by time, then flow
        assert!(d
            .windows(2)
            .all(|w| (w[0].t, w[0].flow) <= (w[1].t, w[1].flow)));
        assert_eq!(d.iter().filter(|d| d.flow == 1).count(), 7);
    }

    /// The rows of each flow count exactly what its last sample's counters
    /// say, however the drains fall between samples (several in one gap,
    /// or counters restarting with a new socket count from the restart).
    #[test]
    fn rows_agree_with_the_exported_counters() {
        let mut s = rtt_change();
        // flow 2: two drains in one gap (a stalled sampler), then a new
        // socket whose counters start over
        s.push(at(10.0, 2, 20.0, 20.1, 1, 0, false));
        s.push(at(40.0, 2, 20.0, 20.2, 2, 1, true));
        s.push(at(50.0, 2, 20.0, 0.0, 0, 0, false));
        s.push(at(60.0, 2, 20.0, 20.3, 1, 0, false));
        let d = of_samples(&s);
        let count = |flow, v| {
            d.iter()
                .filter(|d| d.flow == flow && d.verdict == v)
                .count() as u32
        };
        for flow in [0, 1] {
            let last = s.iter().rev().find(|x| x.flow == flow).unwrap();
            assert_eq!(
                count(flow, Verdict::Ok),
                last.export.qfair().unwrap().drains_ok,
                "flow {flow}"
            );
            assert_eq!(
                count(flow, Verdict::Failed),
                last.export.qfair().unwrap().drains_failed,
                "flow {flow}"
            );
        }
        // flow 2: 1 + (1 ok, 1 failed) + 1 after the restart
        assert_eq!((count(2, Verdict::Ok), count(2, Verdict::Failed)), (3, 1));
        let gap: Vec<_> = d.iter().filter(|d| d.flow == 2 && d.t == 40.0).collect();
        assert_eq!(gap.len(), 2);
        assert!(
            gap.iter()
                .all(|d| d.drain_min_ms.is_none() && d.min_rtt_ms.before.is_none()),
            "m of a gap with two drains is the last one's alone"
        );
        let restart = d.iter().find(|d| d.flow == 2 && d.t == 60.0).unwrap();
        assert_eq!(
            (restart.min_rtt_ms.before, restart.drain_min_ms),
            (Some(20.0), Some(20.3))
        );
    }

    #[test]
    fn written_with_a_header_and_empty_cells_for_unknowns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("drains.csv");
        write(&path, &rtt_change()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(
            lines[0],
            "t,flow,verdict,drain_min_ms,min_rtt_before_ms,min_rtt_after_ms,competitive_before,competitive_after"
        );
        assert!(lines.contains(&"39.0,0,ok,,,10.056,,0"), "{text}");
        assert!(
            lines.contains(&"46.0,0,failed,40.08,10.056,10.056,0,1"),
            "{text}"
        );
        write(&path, &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    }
}
