//! `rttfairctl lab resummarize FOLDER...`: a stored run folder's (or a
//! sweep or merge folder's) summaries computed again from the files it
//! holds, with this build's definitions ([`crate::results::summary::summarize`]).
//!
//! A run folder keeps every input of a repetition's summary: the marked
//! window and the window's per-flow goodput (the arrival counter's, in
//! each `rep<N>/summary.json`; the arrival records themselves are not
//! kept, so goodput, utilization, Jain and their error are taken as
//! stored), the flows' goodput, RTT and retransmission series
//! (summary.json) and the queue samples (`queue.csv`). Two
//! inputs only folders written since they were stored have:
//! - the senders' retransmissions per interval: without them
//!   `retrans_ratio` over the window cannot be known and is written as
//!   null (NaN), unless no flow retransmitted at all;
//! - the random-loss counter at the window's edges: without them
//!   `random_loss_drops` is written as null, unless no flow had random
//!   loss (then it is 0).
//!
//! Every other figure is recomputed, and each folder says on one note
//! line which figures it could not. A folder that lacks an input every
//! figure needs (scenario.toml, summary.json, a repetition's queue.csv,
//! a marked window) is refused in one line. Nothing is written
//! until every folder given has been computed, and each file is replaced
//! whole ([`crate::atomic::write_atomic`]): an interrupted or failed write
//! leaves the stored file as it was, not cut short.
//!
//! A sweep (or merge) folder: each point's run folder is resummarized,
//! then sweep.csv, sweep.json, compare.md and the plots are written again
//! by the sweep's own writer ([`crate::run::sweep::write_outputs`]); its
//! provenance.json is kept as it is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::net::qstats::{QdiscStats, QueueSample};
use crate::results::accounting::WindowAccounting;
use crate::results::{FlowResult, Summary, SweepPoint};
use crate::scenario::plan::Plan;
use crate::scenario::Scenario;

/// What was done to one folder given.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub dir: PathBuf,
    /// Run folders resummarized (1 for a run folder).
    pub runs: usize,
    /// The figures that could not be recomputed in some repetition
    /// (written as null), e.g. "retrans_ratio".
    pub not_known: Vec<&'static str>,
}

impl Outcome {
    /// One line on what was done (`done`) or would be (a check).
    pub fn note(&self, done: bool) -> String {
        let mut line = format!(
            "{}: {} run folder{} {}",
            self.dir.display(),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            if done {
                "resummarized"
            } else {
                "can be resummarized"
            }
        );
        if !self.not_known.is_empty() {
            line.push_str(&format!(
                "; not known (inputs not stored by the build that ran it), {} null: {}",
                if done { "written as" } else { "would be" },
                self.not_known.join(", ")
            ));
        }
        line
    }
}

/// Resummarize every folder of `dirs` (each a run folder or a sweep
/// folder); refuses, writing nothing, if any one cannot be.
pub fn resummarize(dirs: &[PathBuf]) -> Result<Vec<Outcome>> {
    let work: Vec<Work> = dirs
        .iter()
        .map(|d| Work::compute(d))
        .collect::<Result<_>>()?;
    work.iter().map(Work::write).collect()
}

/// As [`resummarize`], writing nothing: what it would do, or why it
/// would refuse (a check of stored folders that must not change).
pub fn check(dirs: &[PathBuf]) -> Result<Vec<Outcome>> {
    dirs.iter()
        .map(|d| Work::compute(d).map(|w| w.outcome()))
        .collect()
}

/// One folder's new files, computed.
enum Work {
    Run(RunUpdate),
    Sweep {
        folder: crate::run::merge::Folder,
        scenario: Scenario,
        runs: Vec<RunUpdate>,
        points: Vec<SweepPoint>,
    },
}

impl Work {
    fn compute(dir: &Path) -> Result<Work> {
        let is_sweep = dir.join(crate::results::files::SWEEP_JSON).is_file()
            && dir.join(crate::results::provenance::FILE).is_file();
        if is_sweep {
            return sweep(dir);
        }
        if dir.join("scenario.toml").is_file() {
            return RunUpdate::compute(dir).map(Work::Run);
        }
        bail!(
            "{}: neither a run folder (scenario.toml) nor a sweep folder ({}, {})",
            dir.display(),
            crate::results::files::SWEEP_JSON,
            crate::results::provenance::FILE
        )
    }

    fn write(&self) -> Result<Outcome> {
        match self {
            Work::Run(r) => r.write()?,
            Work::Sweep {
                folder,
                scenario,
                runs,
                points,
            } => {
                // The sweep's own files only once every run folder's are
                // in place: a failure before leaves them as they were.
                for r in runs {
                    r.write()?;
                }
                let sweep = scenario.sweep.as_ref().expect("checked in sweep()");
                crate::run::sweep::write_outputs(
                    &folder.dir,
                    scenario,
                    sweep,
                    &folder.provenance.cca_names(),
                    points,
                    &folder.provenance,
                )?;
            }
        }
        Ok(self.outcome())
    }

    fn outcome(&self) -> Outcome {
        let (dir, runs) = match self {
            Work::Run(r) => (&r.dir, std::slice::from_ref(r)),
            Work::Sweep { folder, runs, .. } => (&folder.dir, &runs[..]),
        };
        let not_known: BTreeSet<&'static str> = runs
            .iter()
            .flat_map(|r| r.not_known.iter().copied())
            .collect();
        Outcome {
            dir: dir.clone(),
            runs: runs.len(),
            not_known: not_known.into_iter().collect(),
        }
    }
}

/// A sweep folder's run folders resummarized and its points from them.
fn sweep(dir: &Path) -> Result<Work> {
    let folder = crate::run::merge::Folder::load(dir)?;
    let scenario = Scenario::from_toml(&folder.provenance.scenario)
        .map_err(|e| anyhow!("{}: its provenance's scenario: {e}", dir.display()))?;
    if scenario.sweep.is_none() {
        bail!("{}: its scenario has no [sweep] table", dir.display());
    }
    let mut runs = Vec::new();
    let mut points = Vec::new();
    for p in &folder.points {
        let record = folder
            .provenance
            .record_of(&p.cca, p.x, p.y)
            .ok_or_else(|| {
                anyhow!(
                    "{}: point {} x={} y={:?} has no record in {}",
                    dir.display(),
                    p.cca,
                    p.x,
                    p.y,
                    crate::results::provenance::FILE
                )
            })?;
        let run = RunUpdate::compute(&folder.dir.join("runs").join(&record.run_dir))?;
        points.push(SweepPoint {
            summary: run.summary.clone(),
            worst: crate::results::summary::worst_of(&run.rep_summaries()),
            ..p.clone()
        });
        runs.push(run);
    }
    Ok(Work::Sweep {
        folder,
        scenario,
        runs,
        points,
    })
}

/// A run's summary.json as written ([`crate::results::RunResult`]), every
/// field but the summaries kept as the exact text it was.
#[derive(Deserialize, Serialize)]
struct RawRun {
    scenario: Box<RawValue>,
    rtt_check: Box<RawValue>,
    rate_check_goodput_mbit: Box<RawValue>,
    reps: Vec<RawRep>,
    summary: Summary,
    dir: Box<RawValue>,
}

/// One repetition in it (and its rep<N>/summary.json).
#[derive(Deserialize, Serialize)]
struct RawRep {
    flows: Box<RawValue>,
    #[serde(default)]
    random_loss_at_edges: Option<[u64; 2]>,
    summary: Summary,
}

/// A flow of a stored repetition: the fields the summary reads but its
/// RTT series (see [`rtt_series`]).
#[derive(Deserialize)]
struct StoredFlow {
    index: usize,
    goodput: Vec<(f64, f64)>,
    retransmits: u64,
    #[serde(default)]
    retransmits_by_interval: Vec<(f64, u64)>,
    bytes_received: u64,
    mean_goodput: f64,
    congestion: String,
}

/// A row of queue.csv, as [`crate::results::files::write_rep`] writes it.
#[derive(Deserialize)]
struct QueueRow {
    t: f64,
    backlog_bytes: u32,
    qlen_packets: u32,
    drops: u32,
    sent_bytes: u64,
    sent_packets: u32,
}

/// A run folder's new summaries, computed.
struct RunUpdate {
    dir: PathBuf,
    raw: RawRun,
    /// The mean of the new repetition summaries.
    summary: Summary,
    not_known: BTreeSet<&'static str>,
}

impl RunUpdate {
    fn compute(dir: &Path) -> Result<RunUpdate> {
        let d = dir.display();
        let toml_path = dir.join("scenario.toml");
        let text = std::fs::read_to_string(&toml_path)
            .with_context(|| format!("read {}", toml_path.display()))?;
        let scenario = Scenario::from_toml(&text).map_err(|e| anyhow!("{d}/scenario.toml: {e}"))?;
        let plan = Plan::resolve(&scenario).map_err(|e| anyhow!("{d}/scenario.toml: {e}"))?;
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("read {} (a run that did not finish?)", path.display()))?;
        let mut raw: RawRun =
            serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        let mut not_known = BTreeSet::new();
        for (n, rep) in raw.reps.iter_mut().enumerate() {
            let rep_dir = dir.join(format!("rep{n}"));
            let (summary, unknown) = resummarize_rep(&plan, &rep_dir, rep)?;
            not_known.extend(unknown);
            rep.summary = summary;
        }
        if raw.reps.is_empty() {
            bail!("{d}: summary.json holds no repetitions");
        }
        let reps: Vec<Summary> = raw.reps.iter().map(|r| r.summary.clone()).collect();
        let summary = crate::results::summary::mean_summary(&reps);
        raw.summary = summary.clone();
        Ok(RunUpdate {
            dir: dir.to_path_buf(),
            raw,
            summary,
            not_known,
        })
    }

    fn rep_summaries(&self) -> Vec<Summary> {
        self.raw.reps.iter().map(|r| r.summary.clone()).collect()
    }

    /// Each rep<N>/summary.json, then the run's summary.json (last, as a
    /// run writes it).
    fn write(&self) -> Result<()> {
        for (n, rep) in self.raw.reps.iter().enumerate() {
            let path = self.dir.join(format!("rep{n}")).join("summary.json");
            crate::atomic::write_file(&path, serde_json::to_string_pretty(rep)?)?;
        }
        let path = self.dir.join("summary.json");
        crate::atomic::write_file(&path, serde_json::to_string_pretty(&self.raw)?)
    }
}

/// A repetition's summary from its stored inputs, and the figures that
/// could not be known.
fn resummarize_rep(
    plan: &Plan,
    rep_dir: &Path,
    rep: &RawRep,
) -> Result<(Summary, Vec<&'static str>)> {
    let d = rep_dir.display();
    let old = &rep.summary;
    let window = old.window.ok_or_else(|| {
        anyhow!("{d}: no marked window in its summary (written before the lab marked one)")
    })?;
    let stored: Vec<StoredFlow> = serde_json::from_str(rep.flows.get())
        .with_context(|| format!("{d}: parse the flows of summary.json"))?;
    if stored.len() != plan.flows.len() || stored.iter().enumerate().any(|(i, f)| f.index != i) {
        bail!(
            "{d}: summary.json holds {} flows, its scenario.toml {}",
            stored.len(),
            plan.flows.len()
        );
    }
    let rtts = rtt_series(rep.flows.get()).with_context(|| format!("{d}: summary.json"))?;
    let queue = read_queue(&rep_dir.join("queue.csv"))?;
    let flows: Vec<FlowResult> = stored
        .into_iter()
        .map(|f| FlowResult {
            spec: plan.flows[f.index].clone(),
            goodput: f.goodput,
            rtt_ms: rtts[f.index].clone(),
            retransmits: f.retransmits,
            retransmits_by_interval: f.retransmits_by_interval,
            bytes_received: f.bytes_received,
            mean_goodput: f.mean_goodput,
            congestion: f.congestion,
        })
        .collect();
    // The window's accounting as the run computed it (its arrival records
    // are not stored): each flow's first-time bytes from its goodput.
    let acc = WindowAccounting {
        window: Some(window),
        flow_bytes: flows
            .iter()
            .map(|f| (f.mean_goodput * window.seconds() / 8.0).round() as u64)
            .collect(),
        flow_goodput_bps: flows.iter().map(|f| f.mean_goodput).collect(),
        utilization: old.utilization,
        link_utilization: old.link_utilization,
        error: old.utilization_error,
        in_order_utilization: old.in_order_utilization,
        arrivals_lost: old.arrivals_lost,
    };
    let random_loss = rep.random_loss_at_edges.or_else(|| {
        plan.flows
            .iter()
            .all(|f| f.loss_pct == 0.0)
            .then_some([0, 0])
    });
    let summary = crate::results::summary::summarize(plan, &flows, &queue, &acc, random_loss);
    let mut unknown = Vec::new();
    if summary.retrans_ratio.is_nan() {
        unknown.push("retrans_ratio");
    }
    if summary.random_loss_drops.is_none() {
        unknown.push("random_loss_drops");
    }
    Ok((summary, unknown))
}

/// Each flow's RTT series, at full precision (rtt.csv rounds its times
/// to the millisecond, which moves samples across an edge a few µs
/// away). In summary.json the series' key `rtt_ms` follows the configured
/// RTT's (the flow spec is flattened into the flow): the later one is the
/// series, which a JSON map keeps.
fn rtt_series(flows_json: &str) -> Result<Vec<Vec<(f64, f64)>>> {
    let flows: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(flows_json)?;
    flows
        .into_iter()
        .map(|f| {
            let v = f.get("rtt_ms").cloned().unwrap_or_default();
            serde_json::from_value(v).context("a flow's rtt_ms is not its RTT series")
        })
        .collect()
}

fn read_queue(path: &Path) -> Result<Vec<QueueSample>> {
    let rows: Vec<QueueRow> = read_csv(path)?;
    Ok(rows
        .into_iter()
        .map(|r| QueueSample {
            t: r.t,
            stats: QdiscStats {
                bytes: r.sent_bytes,
                packets: r.sent_packets,
                qlen: r.qlen_packets,
                backlog_bytes: r.backlog_bytes,
                drops: r.drops,
            },
        })
        .collect())
}

fn read_csv<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("read {}", path.display()))?;
    r.deserialize()
        .collect::<std::result::Result<Vec<T>, _>>()
        .with_context(|| format!("parse {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{RepResult, RunResult};
    use crate::scenario::plan::Window;
    use crate::testkit::{self, MadeUp};

    const SCENARIO: &str = "name = \"rs\"\nduration_s = 60\nwarmup_s = 20\n\
        [bottleneck]\nrate_mbit = 8\nbuffer = { packets = 100 }\n\
        [[flows]]\ncca = \"cubic\"\nrtt_ms = 10\n";

    /// The window the fixture's run marked.
    const W: Window = Window {
        start_s: 20.1,
        end_s: 60.2,
    };

    /// A repetition as a run of `plan` stores it, 1 s intervals to 62 s
    /// (the clients exit after the window's end): 1000 bytes of backlog
    /// in the window (1 ms at 8 Mbit/s), 9000 outside it; 300 drops in
    /// the warm-up, 4 in the window; 50 retransmissions a second in the
    /// warm-up, 1 after. `per_interval`: the retransmissions per interval
    /// stored (a folder of this build), else only their total (older).
    /// Its summary is the one an older build computed (made up).
    fn stored_rep(plan: &Plan, per_interval: bool) -> RepResult {
        let secs: Vec<f64> = (1..=62).map(f64::from).collect();
        let by_interval: Vec<(f64, u64)> = secs
            .iter()
            .map(|&t| (t, if t <= 20.0 { 50 } else { 1 }))
            .collect();
        let flows = plan
            .flows
            .iter()
            .map(|spec| FlowResult {
                spec: spec.clone(),
                goodput: secs.iter().map(|&t| (t, 7e6)).collect(),
                rtt_ms: secs
                    .iter()
                    .map(|&t| (t, if W.holds(t) { 20.0 } else { 90.0 }))
                    .collect(),
                retransmits: by_interval.iter().map(|x| x.1).sum(),
                retransmits_by_interval: if per_interval {
                    by_interval.clone()
                } else {
                    vec![]
                },
                bytes_received: 60_000_000,
                mean_goodput: 7e6,
                congestion: spec.cca.clone(),
            })
            .collect();
        let queue = (0..=620)
            .map(|k| {
                let t = k as f64 / 10.0;
                QueueSample {
                    t,
                    stats: QdiscStats {
                        backlog_bytes: if W.holds(t) { 1000 } else { 9000 },
                        drops: (t.min(20.0) * 15.0) as u32 + if t >= 30.0 { 4 } else { 0 },
                        bytes: (t * 1e6) as u64,
                        ..Default::default()
                    },
                }
            })
            .collect();
        // As an older build summarized it (made up).
        let summary = Summary {
            jain: 1.0,
            utilization: 0.97,
            window: Some(W),
            retrans_ratio: 0.5,
            qdelay_mean_ms: 7.0,
            rtt_mean_ms: 60.0,
            queue_drops: 304,
            random_loss_drops: Some(0),
            flow_goodput_mbit: vec![7.0],
            ..Summary::default()
        };
        RepResult {
            summary,
            random_loss_at_edges: None,
            bpf: vec![],
            queue,
            flows,
            aqm: vec![],
        }
    }

    /// A finished run folder of `plan` in `dir`, by the lab's writers.
    fn write_stored_run(dir: &Path, plan: &Plan, reps: usize, per_interval: bool) {
        std::fs::create_dir_all(dir).unwrap();
        crate::results::files::write_scenario(dir, plan).unwrap();
        let reps: Vec<RepResult> = (0..reps).map(|_| stored_rep(plan, per_interval)).collect();
        for (n, r) in reps.iter().enumerate() {
            crate::results::files::write_rep(&dir.join(format!("rep{n}")), r).unwrap();
        }
        let summary = crate::results::summary::mean_summary(
            &reps.iter().map(|r| r.summary.clone()).collect::<Vec<_>>(),
        );
        crate::results::files::write_run_summary(&RunResult {
            scenario: plan.scenario.clone(),
            rtt_check: vec![],
            rate_check_goodput_mbit: 8.0,
            reps,
            summary,
            dir: dir.to_path_buf(),
            provenance: crate::results::provenance::RunProvenance {
                environment: crate::results::provenance::Environment::current(),
                ccas: vec![],
                tunables: Default::default(),
                scenario: String::new(),
                self_check: testkit::passed_self_check(),
            },
        })
        .unwrap();
    }

    fn plan() -> Plan {
        Plan::resolve(&Scenario::from_toml(SCENARIO).unwrap()).unwrap()
    }

    /// The fixture's figures over the window, as this build defines them.
    fn check_over_the_window(s: &Summary, retrans_known: bool) {
        assert!(
            (s.qdelay_mean_ms - 1.0).abs() < 1e-9,
            "{}",
            s.qdelay_mean_ms
        );
        assert_eq!(s.rtt_mean_ms, 20.0);
        assert_eq!(s.queue_drops, 4);
        assert_eq!(s.random_loss_drops, Some(0));
        // Taken as stored: the arrival counter's figures.
        assert_eq!((s.jain, s.utilization, s.window), (1.0, 0.97, Some(W)));
        if retrans_known {
            // (20, 21] is 90 % inside, (60, 61] 20 %: 0.9 + 39 + 0.2.
            let retrans = 40.1;
            let pkts = (7e6 * W.seconds() / 8.0).round() / crate::scenario::MSS as f64;
            let expect = retrans / (retrans + pkts);
            assert!(
                (s.retrans_ratio - expect).abs() < 1e-12,
                "{}",
                s.retrans_ratio
            );
        } else {
            assert!(s.retrans_ratio.is_nan());
        }
    }

    /// A stored run folder of `reps` repetitions (with the per-interval
    /// retransmissions or not), resummarized: the temp folder holding it,
    /// the run folder, what resummarize said.
    fn resummarized(reps: usize, per_interval: bool) -> (tempfile::TempDir, PathBuf, Outcome) {
        let tmp = testkit::temp_folder("resummarize");
        let dir = tmp.path().join("rs-cubic");
        write_stored_run(&dir, &plan(), reps, per_interval);
        let mut out = resummarize(std::slice::from_ref(&dir)).unwrap();
        (tmp, dir, out.remove(0))
    }

    #[test]
    fn a_run_folder_gets_every_figure_over_its_window() {
        let (_tmp, dir, out) = resummarized(2, true);
        assert_eq!((out.runs, out.not_known.len()), (1, 0));
        let stored = crate::results::files::read_run_summary(&dir).unwrap();
        check_over_the_window(&stored.summary, true);
        for (n, rep) in stored.reps.iter().enumerate() {
            check_over_the_window(&rep.summary, true);
            let text = std::fs::read_to_string(dir.join(format!("rep{n}/summary.json"))).unwrap();
            let own: crate::results::files::StoredRep = serde_json::from_str(&text).unwrap();
            assert_eq!(own.summary, rep.summary);
        }
        // Everything else in summary.json is kept as it was written.
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["rate_check_goodput_mbit"], 8.0);
        assert_eq!(v["reps"][0]["flows"][0]["retransmits"], 50 * 20 + 42);
        // Again: the same files.
        resummarize(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("summary.json")).unwrap(),
            text
        );
    }

    #[test]
    fn an_older_folder_gets_the_others_and_says_retransmissions_are_not_known() {
        let (_tmp, dir, out) = resummarized(1, false);
        assert_eq!(out.not_known, ["retrans_ratio"]);
        assert!(
            out.note(true).contains("retrans_ratio"),
            "{}",
            out.note(true)
        );
        let stored = crate::results::files::read_run_summary(&dir).unwrap();
        check_over_the_window(&stored.summary, false);
    }

    /// Set in the child [`an_interrupted_write_leaves_the_stored_summaries_whole`]
    /// starts: the run folder it resummarizes.
    const CHILD_DIR: &str = "RTTFAIR_TEST_RESUMMARIZE_CHILD";

    /// A resummarize killed in mid-write (the review's `prlimit
    /// --fsize=64`: the child, this test binary running this test again,
    /// may write files of at most 64 bytes, and SIGXFSZ kills it at the
    /// first byte past that) leaves every stored summary.json whole and
    /// as it was. Written in place, rep0/summary.json was truncated and
    /// cut to 64 bytes: the stored goodput in it was lost for good.
    #[test]
    fn an_interrupted_write_leaves_the_stored_summaries_whole() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        if let Some(dir) = std::env::var_os(CHILD_DIR) {
            let _ = resummarize(&[PathBuf::from(dir)]);
            return;
        }
        let tmp = testkit::temp_folder("resummarize-killed");
        let dir = tmp.path().join("rs-cubic");
        write_stored_run(&dir, &plan(), 1, true);
        let files = [dir.join("summary.json"), dir.join("rep0/summary.json")];
        let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "run::resummarize::tests::an_interrupted_write_leaves_the_stored_summaries_whole",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, &dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: setrlimit is async-signal-safe and touches no memory of
        // the parent's.
        unsafe {
            child.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 64,
                    rlim_max: 64,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let status = child.status().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{status:?}");
        for (f, old) in files.iter().zip(&before) {
            assert_eq!(&std::fs::read(f).unwrap(), old, "{}", f.display());
        }
        // And the folder still resummarizes.
        resummarize(std::slice::from_ref(&dir)).unwrap();
    }

    #[test]
    fn a_folder_missing_an_input_is_refused_and_nothing_is_written() {
        let tmp = testkit::temp_folder("resummarize-refuse");
        let good = tmp.path().join("good");
        let bad = tmp.path().join("bad");
        write_stored_run(&good, &plan(), 1, true);
        write_stored_run(&bad, &plan(), 1, true);
        std::fs::remove_file(bad.join("rep0/queue.csv")).unwrap();
        let before = std::fs::read_to_string(good.join("summary.json")).unwrap();
        let e = resummarize(&[good.clone(), bad]).unwrap_err();
        assert!(format!("{e:#}").contains("queue.csv"), "{e:#}");
        assert_eq!(
            std::fs::read_to_string(good.join("summary.json")).unwrap(),
            before
        );
        // A check says the same and writes nothing either.
        let e = check(&[good.clone(), tmp.path().join("bad")]).unwrap_err();
        assert!(format!("{e:#}").contains("queue.csv"), "{e:#}");
        let fine = check(std::slice::from_ref(&good)).unwrap();
        assert_eq!(fine[0].runs, 1);
        assert_eq!(
            std::fs::read_to_string(good.join("summary.json")).unwrap(),
            before
        );
        let e = resummarize(&[tmp.path().join("nothing")]).unwrap_err();
        assert!(e.to_string().contains("neither a run folder"), "{e}");
    }

    #[test]
    fn a_sweep_folder_gets_its_runs_and_its_table_again() {
        let tmp = testkit::temp_folder("resummarize-sweep");
        let base = Scenario::from_toml(&testkit::grid_toml("g", 1, None, &[])).unwrap();
        let ccas = ["cubic".to_string()];
        let made_up = |_: usize, _: &crate::scenario::grid::PointPlan| {
            MadeUp::Repetitions(vec![Summary {
                qdelay_mean_ms: 7.0,
                ..Summary::default()
            }])
        };
        let dir = testkit::write_sweep_folder(tmp.path(), &base, &ccas, None, made_up, |_| {});
        let folder = crate::run::merge::Folder::load(&dir).unwrap();
        // Each point's run as a run of this build stores it.
        for record in &folder.provenance.points {
            let plans =
                crate::scenario::grid::expand(&base, base.sweep.as_ref().unwrap(), &ccas).unwrap();
            let p = plans.iter().find(|p| p.key.x == record.x).unwrap();
            let mut plan = p.plan.clone();
            plan.window = W;
            let run_dir = dir.join("runs").join(&record.run_dir);
            std::fs::remove_dir_all(&run_dir).unwrap();
            write_stored_run(&run_dir, &plan, 1, true);
        }
        let out = resummarize(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(out[0].runs, 2);
        let again = crate::run::merge::Folder::load(&dir).unwrap();
        // 1000 bytes of backlog at the grid's 10 Mbit/s: 0.8 ms.
        for p in &again.points {
            assert!((p.summary.qdelay_mean_ms - 0.8).abs() < 1e-9, "{p:?}");
            assert!((p.worst.unwrap().qdelay_mean_ms - 0.8).abs() < 1e-9);
        }
        let csv = std::fs::read_to_string(dir.join(crate::results::files::SWEEP_CSV)).unwrap();
        assert!(csv.lines().skip(1).all(|l| l.contains(",0.800,")), "{csv}");
    }
}
