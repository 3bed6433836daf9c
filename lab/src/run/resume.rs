//! `lab sweep --resume`: which points of an interrupted sweep are already
//! done. A point is done when its run folder holds a complete result of the
//! same plan made by the same binaries; anything else is run again.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};

use crate::results::files::StoredRun;
use crate::results::provenance::{self, CcaObject, RunProvenance};
use crate::results::{Summary, Worst};
use crate::scenario::plan::Plan;

/// What a kept result must have been made with: this build, and the
/// tunables the project CCAs have now.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    pub commit: String,
    /// "no", "yes" (uncommitted changes when the lab was built) or
    /// "unknown" (the commit came from `RTTFAIR_GIT_COMMIT`, or no git).
    pub dirty: String,
    /// The sweep's project CCAs' tunables as the runs will have them
    /// ("qfair.exit_drains" -> value; [`provenance::tunables`]): a point
    /// run under other values (`rttfairctl set` between the interrupted
    /// sweep and the resumed one) is run again.
    pub tunables: BTreeMap<String, f64>,
}

impl Build {
    /// The running build.
    pub fn current() -> Build {
        let e = provenance::Environment::current();
        Build {
            commit: e.rttfair_commit,
            dirty: e.rttfair_dirty,
            tunables: BTreeMap::new(),
        }
    }

    /// Refuse to keep earlier results in `runs_dir` (`--resume`) if this
    /// build cannot be told from another: a dirty build of commit C and
    /// the clean one record the same commit, and every build without git
    /// or `RTTFAIR_GIT_COMMIT` records "unknown". A commit stated by
    /// `RTTFAIR_GIT_COMMIT` (image builds; dirtiness unknown) is taken at
    /// its word. With no run folder there, nothing would be kept and
    /// `--resume` is allowed (a Job passes it on every attempt).
    pub fn check_resumable(&self, runs_dir: &Path) -> Result<()> {
        let has_runs = std::fs::read_dir(runs_dir).is_ok_and(|mut d| d.next().is_some());
        if !has_runs {
            return Ok(());
        }
        if self.commit == "unknown" {
            bail!(
                "--resume: this build's commit is unknown (no git, no RTTFAIR_GIT_COMMIT), so the results in {} cannot be told from another build's; set RTTFAIR_GIT_COMMIT when building, or sweep into a new --out",
                runs_dir.display()
            );
        }
        if self.dirty == "yes" {
            bail!(
                "--resume: this build of {} has uncommitted changes, so the results in {} cannot be told from the commit's own; commit and rebuild, or sweep into a new --out",
                self.commit,
                runs_dir.display()
            );
        }
        Ok(())
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
    let stored = crate::results::files::read_run_summary(run_dir)?;
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
/// comparable: its provenance.json names the same scenario text, commit,
/// BPF objects (hashes of this build's) and the tunables of its CCAs
/// `build` has now.
pub fn finished(run_dir: &Path, plan: &Plan, build: &Build) -> Option<Finished> {
    let prov: RunProvenance = provenance::read(run_dir).ok()?;
    let objects: Vec<CcaObject> = plan.ccas.iter().map(|c| CcaObject::of(c)).collect();
    if prov.scenario != provenance::scenario_text(&plan.scenario).ok()?
        || prov.environment.rttfair_commit != build.commit
        || prov.ccas != objects
        || prov.tunables != provenance::tunables_of(&build.tunables, &plan.ccas)
    {
        return None;
    }
    let stored = complete(run_dir, plan.repetitions).ok()?;
    let worst = crate::results::summary::worst_of(&stored.rep_summaries())?;
    Some(Finished {
        summary: stored.summary,
        worst,
        provenance: prov,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::provenance::Environment;
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

    /// This build, with a tunable of a CCA the plan does not run (which
    /// must not matter).
    fn build() -> Build {
        Build {
            commit: "c0ffee".into(),
            dirty: "no".into(),
            tunables: BTreeMap::from([("qfair.exit_drains".to_string(), 2.0)]),
        }
    }

    /// `--resume` over earlier runs needs a build that can be told from
    /// others: a dirty one or one of unknown commit is refused in one
    /// line; a clean one, one whose commit came from RTTFAIR_GIT_COMMIT,
    /// and any build over a folder with no runs yet are not.
    #[test]
    fn resume_refuses_a_build_it_cannot_tell_apart() {
        let tmp = testkit::temp_folder("resume-build");
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let runs = tmp.path().join("runs");
        std::fs::create_dir_all(runs.join("a-run")).unwrap();
        let with = |commit: &str, dirty: &str| Build {
            commit: commit.into(),
            dirty: dirty.into(),
            tunables: BTreeMap::new(),
        };
        for (b, expect) in [
            (with("c0ffee", "yes"), "has uncommitted changes"),
            (with("unknown", "unknown"), "commit is unknown"),
        ] {
            let e = format!("{:#}", b.check_resumable(&runs).unwrap_err());
            assert!(e.starts_with("--resume: ") && e.contains(expect), "{e}");
            assert!(!e.contains('\n'), "{e}");
            // Nothing to keep: allowed.
            b.check_resumable(&empty).unwrap();
            b.check_resumable(&tmp.path().join("none")).unwrap();
        }
        build().check_resumable(&runs).unwrap();
        with("c0ffee", "unknown").check_resumable(&runs).unwrap();
    }

    fn run_provenance(plan: &Plan) -> RunProvenance {
        let mut environment = Environment::current();
        environment.rttfair_commit = "c0ffee".into();
        RunProvenance {
            environment,
            ccas: plan.ccas.iter().map(|c| CcaObject::of(c)).collect(),
            tunables: BTreeMap::from([("fairtt.beta".to_string(), 0.8)]),
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
        let mut b = build();
        b.tunables.insert("fairtt.beta".into(), 0.8);
        let f = finished(dir, &p, &b).expect("kept");
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
        let mut b = build();
        b.tunables.insert("fairtt.beta".into(), 0.8);
        let tmp = folder("other-tunables", &good, Some(2));
        // The same run, the CCA's tunable set otherwise since.
        b.tunables.insert("fairtt.beta".into(), 0.5);
        assert!(
            finished(tmp.path(), &p, &b).is_none(),
            "other tunables kept"
        );
        b.tunables.insert("fairtt.beta".into(), 0.8);
        for (name, prov, reps) in cases {
            let tmp = folder(name, &prov, reps);
            let dir = tmp.path();
            assert!(finished(dir, &p, &b).is_none(), "{name} was kept");
        }
        let tmp = testkit::temp_folder("resume-none");
        let empty = tmp.path().join("none");
        assert!(finished(&empty, &p, &build()).is_none());
    }
}
