//! `lab sweep --resume`: which points of an interrupted sweep are already
//! done. A point is done when its run folder holds a complete result of the
//! same plan made by the same binaries; anything else is run again.

use std::path::Path;

use anyhow::{bail, Result};

use crate::files::StoredRun;
use crate::plan::Plan;
use crate::provenance::{self, CcaObject, RunProvenance};
use crate::results::{Summary, Worst};

/// What a kept result must have been made with: this build.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    pub commit: String,
}

impl Build {
    /// The running build.
    pub fn current() -> Build {
        Build {
            commit: provenance::Environment::current().rttfair_commit,
        }
    }
}

/// A complete earlier run of a point.
#[derive(Debug, Clone)]
pub struct Finished {
    pub summary: Summary,
    /// The worst of its repetitions, from their summaries.
    pub worst: Worst,
    pub provenance: RunProvenance,
}

/// The result in `run_dir` if the run finished: its summary.json (written
/// last by a run, and removed when a run starts) holds `repetitions`
/// repetitions. The one rule for "this run folder is complete", used by
/// `--resume` ([`finished`]) and `lab merge` alike; the error says in one
/// line what is missing.
pub fn complete(run_dir: &Path, repetitions: u32) -> Result<StoredRun> {
    if !run_dir.is_dir() {
        bail!("run folder {} missing", run_dir.display());
    }
    if !run_dir.join("summary.json").is_file() {
        bail!(
            "{} has no summary.json (its run did not finish)",
            run_dir.display()
        );
    }
    let stored = crate::files::read_run_summary(run_dir)?;
    if stored.reps.len() != repetitions as usize {
        bail!(
            "{}: summary.json holds {} of {repetitions} repetitions",
            run_dir.display(),
            stored.reps.len()
        );
    }
    Ok(stored)
}

/// The earlier run in `run_dir` if it is complete ([`complete`]) and
/// comparable: its provenance.json names the same scenario text, commit
/// and BPF objects (hashes of this build's).
pub fn finished(run_dir: &Path, plan: &Plan, build: &Build) -> Option<Finished> {
    let prov: RunProvenance = provenance::read(run_dir).ok()?;
    let objects: Vec<CcaObject> = plan.ccas.iter().map(|c| CcaObject::of(c)).collect();
    if prov.scenario != provenance::scenario_text(&plan.scenario).ok()?
        || prov.environment.rttfair_commit != build.commit
        || prov.ccas != objects
    {
        return None;
    }
    let stored = complete(run_dir, plan.repetitions).ok()?;
    let worst = crate::summary::worst_of(&stored.rep_summaries())?;
    Some(Finished {
        summary: stored.summary,
        worst,
        provenance: prov,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Environment;
    use crate::scenario::Scenario;
    use crate::testkit;

    const SCENARIO: &str = r#"
name = "r"
duration_s = 10
repetitions = 2
[bottleneck]
rate_mbit = 10
buffer = { bdp = 1.0, rtt_ms = 20.0 }
[[flows]]
cca = "fairtt"
rtt_ms = 20
[[flows]]
cca = "cubic"
rtt_ms = 40
"#;

    fn plan() -> Plan {
        Plan::resolve(&Scenario::from_toml(SCENARIO).unwrap()).unwrap()
    }

    fn build() -> Build {
        Build {
            commit: "c0ffee".into(),
        }
    }

    fn run_provenance(plan: &Plan) -> RunProvenance {
        let mut environment = Environment::current();
        environment.rttfair_commit = "c0ffee".into();
        RunProvenance {
            environment,
            ccas: plan.ccas.iter().map(|c| CcaObject::of(c)).collect(),
            tunables: Default::default(),
            scenario: provenance::scenario_text(&plan.scenario).unwrap(),
            self_check: testkit::passed_self_check(),
        }
    }

    /// A run folder of the test's plan as run_plan leaves it: provenance,
    /// then (if it finished) `reps` repetitions and their summary.json.
    fn folder(name: &str, prov: &RunProvenance, reps: Option<usize>) -> tempfile::TempDir {
        let dir = testkit::temp_folder(&format!("resume-{name}"));
        // Repetition k's Jain is 0.75 - 0.25 k; the stated mean's 0.75.
        let summaries: Vec<Summary> = (0..reps.unwrap_or(0))
            .map(|k| Summary {
                jain: 0.75 - 0.25 * k as f64,
                ..Summary::default()
            })
            .collect();
        let mean = Summary {
            jain: 0.75,
            ..Summary::default()
        };
        let finished = reps.map(|_| testkit::Finished {
            reps: &summaries,
            mean: &mean,
        });
        testkit::write_run_folder(dir.path(), &plan(), prov, finished);
        dir
    }

    #[test]
    fn a_complete_run_of_the_same_plan_and_binaries_is_kept() {
        let p = plan();
        let tmp = folder("complete", &run_provenance(&p), Some(2));
        let dir = tmp.path();
        let f = finished(dir, &p, &build()).expect("kept");
        assert_eq!(f.summary.jain, 0.75);
        assert_eq!((f.worst.jain, f.worst.reps), (0.5, 2));
        assert_eq!(f.provenance, run_provenance(&p));
    }

    #[test]
    fn anything_else_is_run_again() {
        let p = plan();
        let good = run_provenance(&p);
        let cases: Vec<(&str, RunProvenance, Option<usize>)> = vec![
            ("interrupted", good.clone(), None),
            ("one-rep-short", good.clone(), Some(1)),
            (
                "other-scenario",
                RunProvenance {
                    scenario: good.scenario.replace("duration_s = 10", "duration_s = 11"),
                    ..good.clone()
                },
                Some(2),
            ),
            (
                "other-commit",
                RunProvenance {
                    environment: Environment {
                        rttfair_commit: "deadbeef".into(),
                        ..good.environment.clone()
                    },
                    ..good.clone()
                },
                Some(2),
            ),
            (
                "other-object",
                RunProvenance {
                    ccas: good
                        .ccas
                        .iter()
                        .map(|c| CcaObject {
                            object_sha256: c.object_sha256.as_ref().map(|_| "00".repeat(32)),
                            ..c.clone()
                        })
                        .collect(),
                    ..good.clone()
                },
                Some(2),
            ),
        ];
        assert!(good.scenario.contains("duration_s = 10"));
        for (name, prov, reps) in cases {
            let tmp = folder(name, &prov, reps);
            let dir = tmp.path();
            assert!(finished(dir, &p, &build()).is_none(), "{name} was kept");
        }
        let tmp = testkit::temp_folder("resume-none");
        let empty = tmp.path().join("none");
        assert!(finished(&empty, &p, &build()).is_none());
    }
}
