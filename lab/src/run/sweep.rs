//! Sweeps: one scenario run over a grid of one or two parameters, for each
//! CCA, giving the papers' "metric vs buffer size" lines and heatmaps.
//! The grid comes from the scenario's `[sweep]` table (see
//! [`crate::scenario::Sweep`]), expanded to plans by [`crate::scenario::grid`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::results::provenance::{
    CcaObject, Environment, PointProvenance, SweepProgress, SweepProvenance,
};
use crate::results::SweepPoint;
use crate::run::{self, RunOptions};
use crate::scenario::grid;
use crate::scenario::Scenario;

pub use crate::results::SweepPoint as Point;
pub use crate::scenario::{Axis, Sweep};

/// Run the grid for every CCA; writes sweep.csv, sweep.json and plots
/// under `out/<name>-sweep`, each point's run under its `runs/`.
pub fn run(base: &Scenario, sweep: &Sweep, ccas: &[String], opts: &RunOptions) -> Result<Swept> {
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
) -> Result<Swept> {
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
) -> Result<Swept> {
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
    // The points kept are known before the first runs, so the ETA counts
    // only the points still to run.
    let earlier: Vec<_> = plans
        .iter()
        .map(|p| {
            let run_dir = inner.out_dir.join(p.plan.dir_name());
            sel.resume
                .then(|| crate::run::resume::finished(&run_dir, &p.plan, &build))
                .flatten()
        })
        .collect();
    let mut tally = Tally {
        total: plans.len(),
        resumed: earlier.iter().filter(|e| e.is_some()).count(),
        ran: 0,
        ran_s: 0.0,
    };
    let start = Instant::now();
    let mut points = Vec::new();
    let mut records = Vec::new();
    let mut ran = Vec::new();
    for (k, (p, earlier)) in plans.iter().zip(earlier).enumerate() {
        let run_dir = p.plan.dir_name();
        let at = format!("[{}/{}] {}", k + 1, tally.total, point_text(&p.key));
        let (summary, worst, prov) = match earlier {
            Some(done) => {
                // Always said (on stderr, beside the progress bar; stdout may
                // be --json): a resumed sweep shows what it kept.
                eprintln!("{at}: complete in {run_dir}, not rerun");
                (done.summary, done.worst, done.provenance)
            }
            None => {
                if opts.progress {
                    // A plain line, not a bar: it stays in a CI log.
                    eprintln!("{at} ... {}", tally.line(start.elapsed()));
                }
                let point_start = Instant::now();
                let r = run::run_plan(&p.plan, &inner)?;
                tally.ran += 1;
                tally.ran_s += point_start.elapsed().as_secs_f64();
                if opts.verbose {
                    // stderr: stdout may be --json.
                    eprintln!("{at}: {}", run::one_line(&r.summary));
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
    let elapsed = start.elapsed();
    let progress = tally.progress(elapsed);
    let provenance = SweepProvenance {
        environment: Environment::current(),
        ccas: ccas.iter().map(|c| object_run(c, &ran)).collect(),
        scenario: crate::results::provenance::scenario_text(base)?,
        shard: sel.shard,
        merged_from: Vec::new(),
        sources: Vec::new(),
        points: records,
        progress: Some(progress.clone()),
    };
    if opts.progress {
        eprintln!("{}", tally.done_line(elapsed));
    }
    write_outputs(&dir, base, sweep, ccas, &points, &provenance)?;
    Ok(Swept {
        points,
        dir,
        progress,
    })
}

/// What [`run_selected`] did: the points (in grid order), the folder it
/// wrote them to and how the sweep went.
#[derive(Debug)]
pub struct Swept {
    pub points: Vec<SweepPoint>,
    pub dir: PathBuf,
    pub progress: SweepProgress,
}

/// A point as the progress lines name it: `cubic x=10` or `cubic x=10 y=2`.
fn point_text(key: &grid::PointKey) -> String {
    match key.y {
        Some(y) => format!("{} x={} y={y}", key.cca, key.x),
        None => format!("{} x={}", key.cca, key.x),
    }
}

/// A sweep's count of its points as it goes: the ETA's arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tally {
    /// The points of the sweep.
    total: usize,
    /// The points `--resume` kept: done, but not in the mean time per point.
    resumed: usize,
    /// The points run so far, and the seconds they took.
    ran: usize,
    ran_s: f64,
}

impl Tally {
    /// The points still to run.
    fn left(&self) -> usize {
        self.total.saturating_sub(self.resumed + self.ran)
    }

    /// Seconds until the last point is done: the mean time of the points
    /// run so far times the points left; `None` (unknown) before the
    /// first one finished, unless none is left.
    fn eta_s(&self) -> Option<f64> {
        match (self.left(), self.ran) {
            (0, _) => Some(0.0),
            (_, 0) => None,
            (left, ran) => Some(self.ran_s / ran as f64 * left as f64),
        }
    }

    /// `elapsed HH:MM:SS, ETA HH:MM:SS` (ETA `unknown` before a point ran).
    fn line(&self, elapsed: Duration) -> String {
        let eta = self.eta_s().map_or_else(|| "unknown".to_string(), hms);
        format!("elapsed {}, ETA {eta}", hms(elapsed.as_secs_f64()))
    }

    /// The sweep's last line: what it ran and kept, in how long.
    fn done_line(&self, elapsed: Duration) -> String {
        format!(
            "[{n}/{n}] sweep done: {} run, {} kept, elapsed {}",
            self.ran,
            self.resumed,
            hms(elapsed.as_secs_f64()),
            n = self.total
        )
    }

    /// The record provenance.json keeps.
    fn progress(&self, elapsed: Duration) -> SweepProgress {
        SweepProgress {
            points_total: self.total,
            points_run: self.ran,
            points_resumed: self.resumed,
            elapsed_s: elapsed.as_secs_f64(),
        }
    }
}

/// `secs` (rounded to the second) as `HH:MM:SS`; hours past 99 widen.
fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
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

    fn tally(total: usize, resumed: usize, ran: usize, ran_s: f64) -> Tally {
        Tally {
            total,
            resumed,
            ran,
            ran_s,
        }
    }

    /// k of N points run in T seconds: T/k per point for the N-k left.
    #[test]
    fn the_eta_is_the_mean_point_time_times_the_points_left() {
        assert_eq!(tally(10, 0, 2, 60.0).eta_s(), Some(240.0));
        assert_eq!(tally(3, 0, 1, 45.5).eta_s(), Some(91.0));
        // All run: nothing left.
        assert_eq!(tally(4, 0, 4, 100.0).eta_s(), Some(0.0));
        let line = tally(10, 0, 2, 60.0).line(Duration::from_secs(61));
        assert_eq!(line, "elapsed 00:01:01, ETA 00:04:00");
    }

    /// Before the first point finished there is no mean: the ETA is unknown.
    #[test]
    fn the_eta_is_unknown_before_a_point_ran() {
        assert_eq!(tally(5, 0, 0, 0.0).eta_s(), None);
        assert_eq!(tally(5, 3, 0, 0.0).eta_s(), None);
        let line = tally(5, 0, 0, 0.0).line(Duration::from_millis(300));
        assert_eq!(line, "elapsed 00:00:00, ETA unknown");
        // An empty sweep, or one all kept by --resume, is done.
        assert_eq!(tally(0, 0, 0, 0.0).eta_s(), Some(0.0));
        assert_eq!(tally(4, 4, 0, 0.0).eta_s(), Some(0.0));
    }

    /// Points kept by --resume are done (not left) and took no time (not
    /// in the mean).
    #[test]
    fn resumed_points_are_neither_left_nor_in_the_mean() {
        // 10 points, 4 kept, 2 run in 60 s: 4 left at 30 s each, not
        // (60 s / 6 done) x 4 = 40 s.
        let t = tally(10, 4, 2, 60.0);
        assert_eq!(t.left(), 4);
        assert_eq!(t.eta_s(), Some(120.0));
        let p = t.progress(Duration::from_secs_f64(75.5));
        assert_eq!(
            (p.points_total, p.points_run, p.points_resumed, p.elapsed_s),
            (10, 2, 4, 75.5)
        );
        assert_eq!(
            t.done_line(Duration::from_secs(75)),
            "[10/10] sweep done: 2 run, 4 kept, elapsed 00:01:15"
        );
    }

    #[test]
    fn durations_read_as_hours_minutes_seconds() {
        assert_eq!(hms(0.0), "00:00:00");
        assert_eq!(hms(59.6), "00:01:00");
        assert_eq!(hms(3661.0), "01:01:01");
        assert_eq!(hms(100.0 * 3600.0 + 5.0), "100:00:05");
        assert_eq!(hms(-3.0), "00:00:00");
    }

    #[test]
    fn points_are_named_by_cca_and_coordinates() {
        let key = |y| grid::PointKey {
            cca: "cubic".into(),
            x: 10.0,
            y,
        };
        assert_eq!(point_text(&key(None)), "cubic x=10");
        assert_eq!(point_text(&key(Some(0.5))), "cubic x=10 y=0.5");
    }

    /// provenance.json keeps a sweep's progress; a folder without one (a
    /// merge, an older sweep) still reads.
    #[test]
    fn the_progress_survives_provenance_json() {
        let root_dir = testkit::temp_folder("sweep-progress");
        let base = Scenario::from_toml(&testkit::grid_toml("c", 1, None, &[10, 40])).unwrap();
        let ccas = ["cubic".to_string()];
        let point = |_: usize, _: &grid::PointPlan| {
            MadeUp::Repetitions(vec![crate::results::Summary::default()])
        };
        let progress = tally(2, 1, 1, 30.0).progress(Duration::from_secs(31));
        let kept = progress.clone();
        let dir = testkit::write_sweep_folder(root_dir.path(), &base, &ccas, None, point, |p| {
            p.progress = Some(kept)
        });
        let read: SweepProvenance = crate::results::provenance::read(&dir).unwrap();
        assert_eq!(read.progress, Some(progress));
        let text = std::fs::read_to_string(dir.join(crate::results::provenance::FILE)).unwrap();
        assert!(text.contains("\"points_resumed\": 1"), "{text}");

        let old = testkit::write_sweep_folder(
            &root_dir.path().join("old"),
            &base,
            &ccas,
            None,
            point,
            |_| {},
        );
        let text = std::fs::read_to_string(old.join(crate::results::provenance::FILE)).unwrap();
        assert!(!text.contains("progress"), "{text}");
        let read: SweepProvenance = crate::results::provenance::read(&old).unwrap();
        assert_eq!(read.progress, None);
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
