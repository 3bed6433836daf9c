//! Sweeps: one scenario run over a grid of one or two parameters, for each
//! CCA, giving the papers' "metric vs buffer size" lines and heatmaps.
//! The grid comes from the scenario's `[sweep]` table (see
//! [`crate::scenario::Sweep`]), expanded to plans by [`crate::scenario::grid`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::results::provenance::{CcaObject, Environment, PointProvenance, SweepProvenance};
use crate::results::SweepPoint;
use crate::run::{self, RunOptions};
use crate::scenario::grid;
use crate::scenario::Scenario;

pub use crate::results::SweepPoint as Point;
pub use crate::scenario::{Axis, Sweep};

/// Run the grid for every CCA; writes sweep.csv, sweep.json and plots
/// under `out/<name>-sweep`, each point's run under its `runs/`.
pub fn run(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    opts: &RunOptions,
) -> Result<(Vec<SweepPoint>, PathBuf)> {
    run_shard(base, sweep, ccas, None, opts)
}

/// As [`run()`], only the points of `shard` (all of them with `None`). A
/// shard's folder holds its own points only.
pub fn run_shard(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    shard: Option<grid::Shard>,
    opts: &RunOptions,
) -> Result<(Vec<SweepPoint>, PathBuf)> {
    run_selected(
        base,
        sweep,
        ccas,
        Selection {
            shard,
            resume: false,
        },
        opts,
    )
}

/// Which points of the grid a sweep runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection {
    /// Only this shard's points (all with `None`).
    pub shard: Option<grid::Shard>,
    /// Keep the points the folder already holds complete results of (see
    /// [`crate::run::resume`]); run the others.
    pub resume: bool,
}

/// The folder a sweep (or a merge) of `base` writes under `out_dir`:
/// the scenario's name made path-safe as run folders' are
/// ([`crate::scenario::plan::sanitize`]), so a name with `/` or `..` cannot put it
/// (and the claims [`clear_outputs`] removes) outside `out_dir`.
pub fn dir_of(out_dir: &Path, base: &Scenario) -> PathBuf {
    out_dir.join(format!(
        "{}-sweep",
        crate::scenario::plan::sanitize(&base.name)
    ))
}

/// As [`run()`], the points `sel` selects; writes the sweep's files and its
/// provenance.json (one record per point).
pub fn run_selected(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    sel: Selection,
    opts: &RunOptions,
) -> Result<(Vec<SweepPoint>, PathBuf)> {
    let mut plans =
        grid::expand(base, sweep, ccas).map_err(|e| anyhow::anyhow!("{}: {e}", base.name))?;
    crate::net::ccas::check_available(ccas)?;
    if let Some(sh) = sel.shard {
        plans = sh.select(plans);
    }
    let dir = dir_of(&opts.out_dir, base);
    let mut build = crate::run::resume::Build::current();
    // With --resume, the CCAs are held registered for the whole sweep
    // (with the scenario's tunables) and their tunables read once, as the
    // runs will have them: a point kept must have run under the same ones
    // (each run takes its own lease too; the last one out unloads what a
    // lab loaded).
    let _held = if sel.resume {
        build.check_resumable(&dir.join("runs"))?;
        let session =
            crate::net::ccas::CcaSession::ensure_tuned(&opts.bpffs, ccas, &base.tunables)?;
        build.tunables = crate::results::provenance::tunables(&opts.bpffs, ccas)?;
        Some(session)
    } else {
        None
    };
    std::fs::create_dir_all(&dir)?;
    clear_outputs(&dir)?;
    let inner = RunOptions {
        out_dir: dir.join("runs"),
        ..opts.clone()
    };
    let mut points = Vec::new();
    let mut records = Vec::new();
    let mut ran = Vec::new();
    for p in &plans {
        let run_dir = p.plan.dir_name();
        let earlier = sel
            .resume
            .then(|| crate::run::resume::finished(&inner.out_dir.join(&run_dir), &p.plan, &build))
            .flatten();
        let (summary, worst, prov) = match earlier {
            Some(done) => {
                // Always said (on stderr, beside the progress bar; stdout may
                // be --json): a resumed sweep shows what it kept.
                eprintln!(
                    "{} x={} y={:?}: complete in {}, not rerun",
                    p.key.cca, p.key.x, p.key.y, run_dir
                );
                (done.summary, done.worst, done.provenance)
            }
            None => {
                let r = run::run_plan(&p.plan, &inner)?;
                if opts.verbose {
                    // stderr: stdout may be --json.
                    eprintln!(
                        "{} x={} y={:?}: {}",
                        p.key.cca,
                        p.key.x,
                        p.key.y,
                        run::one_line(&r.summary)
                    );
                }
                let reps: Vec<_> = r.reps.iter().map(|rep| rep.summary.clone()).collect();
                let worst = crate::results::summary::worst_of(&reps)
                    .ok_or_else(|| anyhow::anyhow!("{run_dir}: a run without repetitions"))?;
                (r.summary, worst, r.provenance)
            }
        };
        ran.extend(prov.ccas.iter().cloned());
        records.push(PointProvenance {
            cca: p.key.cca.clone(),
            x: p.key.x,
            y: p.key.y,
            run_dir,
            tunables: prov.tunables,
            self_check: prov.self_check,
        });
        points.push(SweepPoint {
            cca: p.key.cca.clone(),
            x: p.key.x,
            y: p.key.y,
            summary,
            worst: Some(worst),
        });
    }
    let provenance = SweepProvenance {
        environment: Environment::current(),
        ccas: ccas.iter().map(|c| object_run(c, &ran)).collect(),
        scenario: crate::results::provenance::scenario_text(base)?,
        shard: sel.shard,
        merged_from: Vec::new(),
        sources: Vec::new(),
        points: records,
    };
    write_outputs(&dir, base, sweep, ccas, &points, &provenance)?;
    Ok((points, dir))
}

/// The object `cca` ran in a sweep's points (`ran`: every point's run
/// record): the one they all recorded, [`crate::net::ccas::UNKNOWN_OBJECT`] if
/// they differ, this build's if no point recorded one.
fn object_run(cca: &str, ran: &[CcaObject]) -> CcaObject {
    let mut seen = ran.iter().filter(|o| o.name == cca);
    let Some(first) = seen.next() else {
        return CcaObject::of(cca);
    };
    if seen.all(|o| o == first) {
        first.clone()
    } else {
        CcaObject {
            name: cca.to_string(),
            object_sha256: Some(crate::net::ccas::UNKNOWN_OBJECT.to_string()),
        }
    }
}

/// The file beside sweep.csv with the CCAs side by side
/// ([`crate::results::gridtable::compare_tables`]).
pub const COMPARE_FILE: &str = "compare.md";

/// The files by which a sweep folder says its points are complete,
/// provenance.json (what `lab merge` loads a folder by) first.
const CLAIMS: [&str; 4] = [
    crate::results::provenance::FILE,
    crate::results::files::SWEEP_JSON,
    crate::results::files::SWEEP_CSV,
    COMPARE_FILE,
];

/// Remove an earlier sweep's claims from `dir` as a sweep starts: they
/// are written again at its end ([`write_outputs`], provenance.json
/// last), so a sweep interrupted over an earlier one's folder leaves no
/// sweep folder to merge, only run folders (`--resume` picks those up).
pub fn clear_outputs(dir: &Path) -> Result<()> {
    for name in CLAIMS {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("remove {}", path.display()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every file of a sweep folder from its points (in grid order): sweep.csv,
/// sweep.json, the plots, compare.md and provenance.json. The one writer
/// of a sweep folder, for a run and for a merge alike.
pub fn write_outputs(
    dir: &Path,
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
    points: &[SweepPoint],
    provenance: &SweepProvenance,
) -> Result<()> {
    crate::results::files::write_sweep(dir, sweep, points)?;
    crate::results::sweep_plots::plot(dir, base, sweep, ccas, points)?;
    crate::atomic::write_file(
        &dir.join(COMPARE_FILE),
        crate::results::gridtable::compare_tables(sweep, ccas, points),
    )?;
    crate::results::provenance::write(dir, provenance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, MadeUp};

    /// A sweep records the object its points ran, unknown if they differ.
    #[test]
    fn a_sweep_records_the_object_its_points_ran() {
        let other = |sha: &str| CcaObject {
            name: "qfair".into(),
            object_sha256: Some(sha.into()),
        };
        assert_eq!(object_run("qfair", &[]), CcaObject::of("qfair"));
        let unknown = other(crate::net::ccas::UNKNOWN_OBJECT);
        let ran = [other("ab"), CcaObject::of("cubic"), other("ab")];
        assert_eq!(object_run("qfair", &ran), other("ab"));
        assert_eq!(object_run("cubic", &ran), CcaObject::of("cubic"));
        assert_eq!(object_run("qfair", &[other("ab"), other("cd")]), unknown);
    }

    /// A scenario named to climb out of `--out` gets a folder inside it.
    #[test]
    fn a_sweep_folder_stays_inside_out() {
        let mut base = Scenario::from_toml(&testkit::grid_toml("c", 1, None, &[])).unwrap();
        base.name = "../../escape/dir".into();
        let out = Path::new("/srv/lab-out");
        let dir = dir_of(out, &base);
        assert_eq!(dir.parent(), Some(out));
        assert_eq!(dir, out.join("______escape_dir-sweep"));
    }

    /// An earlier sweep's folder after a new sweep's start: no
    /// provenance.json, sweep.json, sweep.csv or compare.md (so `lab
    /// merge` finds no sweep there), its run folders kept for `--resume`.
    #[test]
    fn a_sweep_start_removes_the_earlier_sweeps_claims() {
        let root_dir = testkit::temp_folder("sweep-clear");
        let base = Scenario::from_toml(&testkit::grid_toml("c", 1, None, &[10, 40])).unwrap();
        let ccas = ["cubic".to_string()];
        let point = |k: usize, _: &grid::PointPlan| {
            MadeUp::Repetitions(vec![crate::results::Summary {
                jain: 0.5 + 0.1 * k as f64,
                ..Default::default()
            }])
        };
        let dir = testkit::write_sweep_folder(root_dir.path(), &base, &ccas, None, point, |_| {});
        assert!(crate::run::merge::Folder::load(&dir).is_ok());
        for name in CLAIMS {
            assert!(dir.join(name).is_file(), "{name}");
        }
        let runs = std::fs::read_dir(dir.join("runs")).unwrap().count();
        clear_outputs(&dir).unwrap();
        for name in CLAIMS {
            assert!(!dir.join(name).exists(), "{name}");
        }
        assert!(crate::run::merge::Folder::load(&dir).is_err());
        assert_eq!(std::fs::read_dir(dir.join("runs")).unwrap().count(), runs);
        assert!(runs > 0);
        // Nothing to remove is no error (a first sweep).
        clear_outputs(&dir).unwrap();
    }
}
