//! Test fixtures of the lab's result side: run folders and sweep folders
//! as `lab run` / `lab sweep` leave them, from made-up results, and the
//! grid scenario those tests sweep.
//!
//! Every file goes through the lab's own writers ([`crate::results::files`],
//! [`crate::results::provenance::write`], [`crate::run::sweep::write_outputs`]), so a
//! change of a format changes the fixtures with it: a reader's test can
//! not pass against a layout the lab no longer writes.
//!
//! Compiled for the crate's own unit tests and, behind the `testkit`
//! cargo feature, for the workspace's integration tests (rttfairctl's
//! dev-dependency enables it). A feature rather than a `#[doc(hidden)]`
//! public module: code that panics on any error and writes under the temp
//! folder stays out of the shipped binaries and out of the public API
//! unless a crate asks for it by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::net::selfcheck::RateCheck;
use crate::results::provenance::{
    self, CcaObject, Environment, PointProvenance, RunProvenance, SelfCheck, SweepProvenance,
};
use crate::results::{RepResult, RunResult, Summary, SweepPoint};
use crate::scenario::grid::{self, PointPlan, Shard};
use crate::scenario::plan::Plan;
use crate::scenario::Scenario;

/// An empty folder `rttfair-<tag>-...` under the temp dir, removed when
/// the returned handle drops (also when the test panics).
pub fn temp_folder(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rttfair-{tag}-"))
        .tempdir()
        .unwrap()
}

/// The two-flow grid the lab's sweep tests use: two cubic flows of 20 ms
/// for 10 s through 10 Mbit/s, `repetitions` per point, in `groups` if
/// given; swept over x = the buffer (0.5 and 2 BDP of 20 ms) and, unless
/// `rtts_ms` is empty, y = the second flow's RTT over `rtts_ms`.
pub fn grid_toml(
    name: &str,
    repetitions: u32,
    groups: Option<[&str; 2]>,
    rtts_ms: &[u32],
) -> String {
    let flow = |i: usize| {
        let group = groups.map_or(String::new(), |g| format!("group = \"{}\"\n", g[i]));
        format!("[[flows]]\ncca = \"cubic\"\nrtt_ms = 20\n{group}")
    };
    let y = if rtts_ms.is_empty() {
        String::new()
    } else {
        let values: Vec<String> = rtts_ms.iter().map(|v| v.to_string()).collect();
        format!(
            "y = {{ param = \"flows[1].rtt_ms\", values = [{}] }}\n",
            values.join(", ")
        )
    };
    format!(
        "name = \"{name}\"\nduration_s = 10\nrepetitions = {repetitions}\n\
         [bottleneck]\nrate_mbit = 10\nbuffer = {{ bdp = 1.0, rtt_ms = 20.0 }}\n\
         {}{}\
         [sweep]\nx = {{ param = \"bottleneck.buffer.bdp\", values = [0.5, 2] }}\n{y}",
        flow(0),
        flow(1)
    )
}

/// A self-check that passed: the rate of a 10 Mbit/s bottleneck measured
/// as configured over 3 s backlogged (no RTT checks recorded).
pub fn passed_self_check() -> SelfCheck {
    SelfCheck {
        rtt: vec![],
        rate: RateCheck {
            configured_bit: 1e7,
            measured_bit: 1e7,
            busy_s: 3.0,
            ok: true,
        },
    }
}

/// The repetitions of a finished run and the mean its summary.json
/// states (a test may state one that is not their mean).
pub struct Finished<'a> {
    pub reps: &'a [Summary],
    pub mean: &'a Summary,
}

/// A run folder of `plan` as `run_plan` leaves it: scenario.toml and
/// `prov` as provenance.json, then, if the run finished, each repetition's
/// folder and summary.json (the repetitions have no flows; no plots).
pub fn write_run_folder(dir: &Path, plan: &Plan, prov: &RunProvenance, finished: Option<Finished>) {
    std::fs::create_dir_all(dir).unwrap();
    crate::results::files::write_scenario(dir, plan).unwrap();
    provenance::write(dir, prov).unwrap();
    if let Some(f) = finished {
        write_run_summary(dir, &plan.scenario, prov, f);
    }
}

/// The time-to-fair record of `qfair-late-joiner`'s joiner (`flow`,
/// joining at 20 s of 80, half of 20 Mbit/s's goodput capacity as its
/// share) with `seconds` as its figure: the one record the tests of
/// `lab table`, `lab compare`'s table and the mean summary build their
/// repetitions from.
pub fn late_joiner_time_to_fair(flow: usize, seconds: Option<f64>) -> crate::results::TimeToFair {
    crate::results::TimeToFair {
        flow,
        event_s: 20.0,
        share_mbit: 9.56,
        seconds,
        watched_s: 60.0,
    }
}

/// A finished run folder of `scenario` as `lab run` leaves it, with
/// these repetitions and their mean as its summary, this build's
/// environment and objects, a passed self-check: for the readers of run
/// folders (`lab table`).
pub fn write_finished_run(dir: &Path, scenario: &Scenario, reps: &[Summary]) {
    let plan = Plan::resolve(scenario).unwrap();
    let prov = RunProvenance {
        environment: Environment::current(),
        ccas: plan.ccas.iter().map(|c| CcaObject::of(c)).collect(),
        tunables: BTreeMap::new(),
        scenario: provenance::scenario_text(scenario).unwrap(),
        self_check: passed_self_check(),
    };
    let mean = crate::results::summary::mean_summary(reps);
    let finished = Finished { reps, mean: &mean };
    write_run_folder(dir, &plan, &prov, Some(finished));
}

/// Replace the repetitions of the finished run in `run_dir` (a folder
/// [`write_run_folder`] wrote): a run folder that disagrees with its
/// sweep's row.
pub fn rewrite_run_summary(run_dir: &Path, finished: Finished) {
    let text = std::fs::read_to_string(run_dir.join("scenario.toml")).unwrap();
    let scenario = Scenario::from_toml(&text).unwrap();
    let prov: RunProvenance = provenance::read(run_dir).unwrap();
    for e in std::fs::read_dir(run_dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() && e.file_name().to_string_lossy().starts_with("rep") {
            std::fs::remove_dir_all(e.path()).unwrap();
        }
    }
    write_run_summary(run_dir, &scenario, &prov, finished);
}

/// `rep<N>/` and summary.json, by the writers `run_plan` calls.
fn write_run_summary(dir: &Path, scenario: &Scenario, prov: &RunProvenance, f: Finished) {
    let reps: Vec<RepResult> = f
        .reps
        .iter()
        .map(|s| RepResult {
            flows: vec![],
            queue: vec![],
            bpf: vec![],
            random_loss_at_edges: None,
            summary: s.clone(),
            aqm: vec![],
        })
        .collect();
    for (n, r) in reps.iter().enumerate() {
        crate::results::files::write_rep(&dir.join(format!("rep{n}")), r).unwrap();
    }
    crate::results::files::write_run_summary(&RunResult {
        scenario: scenario.clone(),
        rtt_check: prov.self_check.rtt.clone(),
        rate_check_goodput_mbit: prov.self_check.rate.goodput_bit() / 1e6,
        reps,
        summary: f.mean.clone(),
        dir: dir.to_path_buf(),
        provenance: prov.clone(),
    })
    .unwrap();
}

/// What a fixture sweep made up for one of its points (a run that
/// finished: `lab merge` refuses a point without one).
pub enum MadeUp {
    /// A run that finished with these repetitions: its folder as
    /// [`write_run_folder`] writes it, the point's row their mean and
    /// worst as a sweep computes them.
    Repetitions(Vec<Summary>),
}

/// The folder `lab sweep` writes under `out` for `base` (a scenario with
/// a `[sweep]` table) over `ccas`, shard `shard` or the whole grid:
/// `point(k, p)` makes up the result of the grid's `k`-th point `p`, each
/// point's self-check passed ([`passed_self_check`]), this build's
/// environment and objects recorded. `edit` changes the sweep's
/// provenance (anything but its points) before anything is written; the
/// run folders record what it left. Returns the sweep folder.
pub fn write_sweep_folder(
    out: &Path,
    base: &Scenario,
    ccas: &[String],
    shard: Option<Shard>,
    point: impl Fn(usize, &PointPlan) -> MadeUp,
    edit: impl FnOnce(&mut SweepProvenance),
) -> PathBuf {
    let sweep = base.sweep.clone().expect("a scenario with a [sweep] table");
    let mine: Vec<(usize, PointPlan)> = grid::expand(base, &sweep, ccas)
        .unwrap()
        .into_iter()
        .enumerate()
        .filter(|(k, _)| shard.is_none_or(|s| s.holds(*k)))
        .collect();
    let mut prov = SweepProvenance {
        environment: Environment::current(),
        ccas: ccas.iter().map(|c| CcaObject::of(c)).collect(),
        scenario: provenance::scenario_text(base).unwrap(),
        shard,
        merged_from: vec![],
        sources: vec![],
        points: mine
            .iter()
            .map(|(_, p)| PointProvenance {
                cca: p.key.cca.clone(),
                x: p.key.x,
                y: p.key.y,
                run_dir: p.plan.dir_name(),
                tunables: BTreeMap::new(),
                self_check: passed_self_check(),
            })
            .collect(),
        progress: None,
    };
    edit(&mut prov);
    let dir = crate::run::sweep::dir_of(out, base);
    let points: Vec<SweepPoint> = mine
        .iter()
        .zip(&prov.points)
        .map(|((k, p), record)| {
            let run_dir = dir.join("runs").join(&record.run_dir);
            let (summary, worst) = match point(*k, p) {
                MadeUp::Repetitions(reps) => {
                    let mean = crate::results::summary::mean_summary(&reps);
                    let finished = Finished {
                        reps: &reps,
                        mean: &mean,
                    };
                    let run = run_provenance(&prov, &p.plan, record);
                    write_run_folder(&run_dir, &p.plan, &run, Some(finished));
                    (mean, crate::results::summary::worst_of(&reps))
                }
            };
            SweepPoint {
                cca: p.key.cca.clone(),
                x: p.key.x,
                y: p.key.y,
                summary,
                worst,
            }
        })
        .collect();
    crate::run::sweep::write_outputs(&dir, base, &sweep, ccas, &points, &prov).unwrap();
    dir
}

/// The provenance.json of a point's run in a sweep recorded as `sweep`.
fn run_provenance(sweep: &SweepProvenance, plan: &Plan, record: &PointProvenance) -> RunProvenance {
    RunProvenance {
        environment: sweep.environment.clone(),
        ccas: plan
            .ccas
            .iter()
            .map(|n| {
                let recorded = sweep.ccas.iter().find(|c| &c.name == n);
                recorded.cloned().unwrap_or_else(|| CcaObject::of(n))
            })
            .collect(),
        tunables: record.tunables.clone(),
        scenario: provenance::scenario_text(&plan.scenario).unwrap(),
        self_check: record.self_check.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid's text says what its doc says: the repetitions, groups and
    /// axes asked for, and no y axis without RTTs.
    #[test]
    fn grid_toml_is_the_grid_it_names() {
        let s = Scenario::from_toml(&grid_toml("n", 3, Some(["a", "b"]), &[10, 40])).unwrap();
        let sweep = s.sweep.clone().unwrap();
        assert_eq!((s.name.as_str(), s.repetitions), ("n", 3));
        assert_eq!(sweep.x.param, "bottleneck.buffer.bdp");
        assert_eq!(sweep.x.values, [0.5, 2.0]);
        let y = sweep.y.unwrap();
        assert_eq!(
            (y.param.as_str(), &y.values[..]),
            ("flows[1].rtt_ms", &[10.0, 40.0][..])
        );
        let groups: Vec<String> = s.flows().iter().map(|f| f.group.clone()).collect();
        assert_eq!(groups, ["a", "b"]);
        let one_d = Scenario::from_toml(&grid_toml("n", 1, None, &[])).unwrap();
        assert!(one_d.sweep.unwrap().y.is_none());
    }
}
