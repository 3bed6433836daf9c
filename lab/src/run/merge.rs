//! `rttfairctl lab merge DIR... --out DIR`: sweep folders of one grid
//! joined into one folder, written by the sweep's own writer
//! ([`crate::run::sweep::write_outputs`]) from the points in grid order; each
//! point's run folder is copied as it is. The folders may be shards of
//! one sweep (the result is exactly the folder one machine would have
//! written) or sweeps of the same grid for different CCAs, run at other
//! times by other builds (the result puts them side by side).
//!
//! The rules, checked before anything is written; a refusal is one line:
//! - every folder records the same scenario, its repetition count aside
//!   (`lab sweep --reps N` changes only that): else "mixed scenarios";
//! - per CCA, every folder that swept it was made by one build (commit
//!   and that CCA's BPF object hash) with one repetition count: else
//!   "mixed binaries" or "mixed repetitions". Different CCAs may come
//!   from different builds and repetition counts: each CCA's source
//!   (build, object, repetitions, folders) is recorded in the merged
//!   provenance.json (`sources`) and printed as one note line;
//! - per CCA, every point ran under the same tunables (provenance.json's
//!   per-point `tunables`): else "mixed tunables";
//! - every CCA any folder swept has every point of the grid, once: else
//!   "missing points" or "duplicate point";
//! - the CCAs keep the order in which they first appear in the folders
//!   given (see [`combine`]).
//!
//! - every point's run folder holds its complete run, the one rule
//!   `--resume` uses ([`crate::run::resume::complete`]), whose repetitions
//!   average to the point: else "point ... is not complete" (a sweep
//!   interrupted over an earlier sweep's folder; see [`check_runs`]).
//!
//! Folders written before sweep points carried the worst of their
//! repetitions (commit 54cb120 and older) merge too: each point's worst
//! is computed from its run folder's summary.json, which holds every
//! repetition's summary.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::results::provenance::{self, CcaObject, CcaSource, SweepProvenance};
use crate::results::SweepPoint;
use crate::scenario::grid::{self, PointKey};
use crate::scenario::Scenario;

/// One sweep folder as written: its provenance and its points.
#[derive(Debug, Clone)]
pub struct Folder {
    pub dir: PathBuf,
    pub provenance: SweepProvenance,
    pub points: Vec<SweepPoint>,
}

impl Folder {
    /// The sweep folder at `dir`: `dir` itself if it holds provenance.json,
    /// else its one `*-sweep` subfolder (a shard's `--out`).
    pub fn load(dir: &Path) -> Result<Folder> {
        let dir = sweep_dir(dir)?;
        let provenance: SweepProvenance = provenance::read(&dir)?;
        let path = dir.join(crate::results::files::SWEEP_JSON);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let points: Vec<SweepPoint> =
            serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        Ok(Folder {
            dir,
            provenance,
            points,
        })
    }
}

fn sweep_dir(dir: &Path) -> Result<PathBuf> {
    if dir.join(provenance::FILE).exists() {
        return Ok(dir.to_path_buf());
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("read folder {}", dir.display()))?;
    let found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with("-sweep"))
                && p.join(provenance::FILE).exists()
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "{}: no sweep folder with {} here or in a *-sweep subfolder",
            dir.display(),
            provenance::FILE
        ),
        _ => bail!(
            "{}: several sweep folders; name the one to merge",
            dir.display()
        ),
    }
}

/// The merged sweep, ready to write.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The first folder's scenario (its repetition count is its first
    /// CCA's; each CCA's own is in `provenance.sources`).
    pub scenario: Scenario,
    pub points: Vec<SweepPoint>,
    pub provenance: SweepProvenance,
    /// For each point, the folder holding its run.
    pub sources: Vec<PathBuf>,
    /// Differences worth a note that do not make the folders incomparable
    /// (kernel release, iperf3 version).
    pub warnings: Vec<String>,
}

impl Merged {
    /// The repetitions each point of `cca` has (its sweep's count).
    pub fn repetitions_of(&self, cca: &str) -> Option<u32> {
        self.provenance
            .sources
            .iter()
            .find(|s| s.name == cca)
            .map(|s| s.repetitions)
    }

    /// One line per CCA, in the merged order: the build its points come
    /// from (commit, object hash) and their repetitions, so a reader of
    /// the printed tables knows each column's source.
    pub fn source_lines(&self) -> Vec<String> {
        self.provenance.sources.iter().map(source_line).collect()
    }
}

/// "note: qfair from rttfair 54cb12040f9e, object 7dca4b9b8159, 3
/// repetitions per point, 4 folders" (hashes cut to 12 hex digits, as
/// git abbreviates; provenance.json keeps them whole).
fn source_line(s: &CcaSource) -> String {
    let short = |h: &str| h.chars().take(12).collect::<String>();
    let e = &s.environment;
    format!(
        "note: {} from rttfair {}{}, object {}, {} repetition{} per point, {} folder{}",
        s.name,
        short(&e.rttfair_commit),
        if e.rttfair_dirty == "yes" {
            " (dirty)"
        } else {
            ""
        },
        s.object_sha256
            .as_deref()
            .map_or("(kernel CCA)".to_string(), short),
        s.repetitions,
        if s.repetitions == 1 { "" } else { "s" },
        s.folders.len(),
        if s.folders.len() == 1 { "" } else { "s" },
    )
}

fn key_text(k: &PointKey) -> String {
    match k.y {
        Some(y) => format!("{} x={} y={}", k.cca, k.x, y),
        None => format!("{} x={}", k.cca, k.x),
    }
}

/// A scenario's text with the repetition count left out (set to 1): what
/// must be equal for two sweeps to be the same grid. Parsed and written
/// again, so builds that write the same scenario in other words (field
/// order, defaults) still compare equal.
fn grid_text(s: &Scenario) -> Result<String> {
    let mut s = s.clone();
    s.repetitions = 1;
    provenance::scenario_text(&s)
}

/// Check that `folders` are sweeps of one grid that together hold, for
/// every CCA any of them swept, every point once, each CCA's points made
/// by one build with one repetition count; the points in grid order.
///
/// The CCAs keep the order in which they first appear in `folders` (each
/// folder's own order within it): the caller decides the columns (e.g.
/// qfair's folder first), and shards of one sweep keep the sweep's order.
pub fn combine(folders: &[Folder]) -> Result<Merged> {
    let Some(first) = folders.first() else {
        bail!("nothing to merge: name at least one sweep folder");
    };
    let name = |f: &Folder| f.dir.display().to_string();
    let scenarios: Vec<Scenario> = folders
        .iter()
        .map(|f| {
            Scenario::from_toml(&f.provenance.scenario)
                .map_err(|e| anyhow!("{}: recorded scenario: {e}", name(f)))
        })
        .collect::<Result<_>>()?;
    let grid0 = grid_text(&scenarios[0])?;
    for (f, s) in folders.iter().zip(&scenarios).skip(1) {
        if grid_text(s)? != grid0 {
            bail!(
                "mixed scenarios: {} and {} record different scenarios (repetitions aside)",
                name(first),
                name(f)
            );
        }
    }

    // Each CCA's source, checked alike in every folder that swept it;
    // `seen_in[k]` is the first folder of `sources[k]`.
    let mut sources: Vec<CcaSource> = Vec::new();
    let mut seen_in: Vec<usize> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let e0 = &first.provenance.environment;
    for (i, (f, s)) in folders.iter().zip(&scenarios).enumerate() {
        for cca in f.provenance.cca_names() {
            let src = f
                .provenance
                .source_of(&cca, s.repetitions, &name(f))
                .expect("a CCA the folder lists");
            for (what, a, b) in [
                (
                    "kernel",
                    &e0.kernel_release,
                    &src.environment.kernel_release,
                ),
                (
                    "iperf3",
                    &e0.iperf3_version,
                    &src.environment.iperf3_version,
                ),
            ] {
                let note = format!(
                    "note: {} ran on {what} {a} and {} on {what} {b}",
                    name(first),
                    name(f)
                );
                if a != b && !warnings.contains(&note) {
                    warnings.push(note);
                }
            }
            if src.object_sha256.as_deref() == Some(crate::net::ccas::UNKNOWN_OBJECT) {
                bail!(
                    "unknown binaries: {cca} in {} ran an object registered before the lab, not by a lab, so which one is unknown",
                    name(f)
                );
            }
            match sources.iter().position(|k| k.name == cca) {
                None => {
                    sources.push(src);
                    seen_in.push(i);
                }
                Some(k) => {
                    let known = &mut sources[k];
                    let (a, b) = (name(&folders[seen_in[k]]), name(f));
                    same_source(known, &src, &a, &b)?;
                    known.folders.extend(src.folders);
                }
            }
        }
    }

    let scenario = scenarios[0].clone();
    let sweep = scenario
        .sweep
        .clone()
        .ok_or_else(|| anyhow!("{}: recorded scenario has no [sweep] table", name(first)))?;
    let ccas: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let grid = grid::expand(&scenario, &sweep, &ccas)
        .map_err(|e| anyhow!("{}: recorded scenario: {e}", name(first)))?;

    // Each point of each folder, with where it came from.
    let mut found: Vec<(usize, &SweepPoint)> = Vec::new();
    for (i, f) in folders.iter().enumerate() {
        if f.points.len() != f.provenance.points.len() {
            bail!(
                "{}: sweep.json has {} points and provenance.json {}",
                name(f),
                f.points.len(),
                f.provenance.points.len()
            );
        }
        for pt in &f.points {
            let key = PointKey {
                cca: pt.cca.clone(),
                x: pt.x,
                y: pt.y,
            };
            if !f.provenance.ccas.iter().any(|c| c.name == pt.cca)
                || !grid.iter().any(|g| g.key == key)
            {
                bail!(
                    "{}: point {} is not in the sweep's grid",
                    name(f),
                    key_text(&key)
                );
            }
            let reps = sources
                .iter()
                .find(|s| s.name == pt.cca)
                .expect("every listed CCA has a source")
                .repetitions;
            if let Some(w) = pt.worst.filter(|w| w.reps != reps) {
                bail!(
                    "{}: point {} has {} repetitions, its sweep {reps}",
                    name(f),
                    key_text(&key),
                    w.reps
                );
            }
            if let Some((j, _)) = found
                .iter()
                .find(|(_, q)| q.cca == pt.cca && q.x == pt.x && q.y == pt.y)
            {
                bail!(
                    "duplicate point {}: in {} and in {}",
                    key_text(&key),
                    name(&folders[*j]),
                    name(f)
                );
            }
            found.push((i, pt));
        }
    }
    let missing: Vec<&PointKey> = grid
        .iter()
        .map(|g| &g.key)
        .filter(|k| {
            !found
                .iter()
                .any(|(_, q)| q.cca == k.cca && q.x == k.x && q.y == k.y)
        })
        .collect();
    if let Some(k) = missing.first() {
        bail!(
            "missing points: {} of the grid's {} are in no folder, e.g. {}",
            missing.len(),
            grid.len(),
            key_text(k)
        );
    }

    let mut points = Vec::new();
    let mut records = Vec::new();
    let mut runs: Vec<PathBuf> = Vec::new();
    for g in &grid {
        let (i, pt) = found
            .iter()
            .find(|(_, q)| q.cca == g.key.cca && q.x == g.key.x && q.y == g.key.y)
            .expect("checked above");
        let f = &folders[*i];
        let record = f.provenance.record_of(&pt.cca, pt.x, pt.y).ok_or_else(|| {
            anyhow!(
                "{}: point {} is in sweep.json but not in provenance.json",
                name(f),
                key_text(&g.key)
            )
        })?;
        if let Some(other) = records
            .iter()
            .position(|r: &provenance::PointProvenance| r.run_dir == record.run_dir)
        {
            bail!(
                "{}: point {}'s run folder {} has the name of {}'s",
                name(f),
                key_text(&g.key),
                record.run_dir,
                runs[other].display()
            );
        }
        points.push((*pt).clone());
        records.push(record.clone());
        runs.push(f.dir.join("runs").join(&record.run_dir));
    }
    same_tunables(&records, &runs)?;
    let provenance = SweepProvenance {
        environment: sources[0].environment.clone(),
        ccas: sources
            .iter()
            .map(|s| CcaObject {
                name: s.name.clone(),
                object_sha256: s.object_sha256.clone(),
            })
            .collect(),
        scenario: first.provenance.scenario.clone(),
        shard: None,
        merged_from: folders.iter().map(name).collect(),
        sources,
        points: records,
        progress: None,
    };
    Ok(Merged {
        scenario,
        points,
        provenance,
        sources: runs,
        warnings,
    })
}

/// Refuse a CCA whose points in folder `b` (source `new`) were made by
/// another build, or with another repetition count, than in folder `a`
/// (source `known`): one CCA's grid is one sweep.
fn same_source(known: &CcaSource, new: &CcaSource, a: &str, b: &str) -> Result<()> {
    let cca = &known.name;
    let (ca, cb) = (
        &known.environment.rttfair_commit,
        &new.environment.rttfair_commit,
    );
    if ca != cb {
        bail!("mixed binaries: {cca} in {a} was made by rttfair {ca} and in {b} by {cb}");
    }
    if known.object_sha256 != new.object_sha256 {
        bail!(
            "mixed binaries: {cca}'s object in {a} has SHA-256 {} and in {b} {}",
            known.object_sha256.as_deref().unwrap_or("(kernel)"),
            new.object_sha256.as_deref().unwrap_or("(kernel)")
        );
    }
    if known.repetitions != new.repetitions {
        bail!(
            "mixed repetitions: {cca} in {a} ran {} per point and in {b} {}",
            known.repetitions,
            new.repetitions
        );
    }
    Ok(())
}

/// Refuse a CCA whose points ran under different tunables (a sweep
/// resumed after `rttfairctl set`, or shards on nodes set otherwise): one
/// CCA's grid is one law. `runs[k]` is where `records[k]` ran.
fn same_tunables(records: &[provenance::PointProvenance], runs: &[PathBuf]) -> Result<()> {
    for (k, r) in records.iter().enumerate() {
        let Some(first) = records[..k].iter().position(|q| q.cca == r.cca) else {
            continue;
        };
        let q = &records[first];
        if q.tunables == r.tunables {
            continue;
        }
        let value = |t: &std::collections::BTreeMap<String, f64>, name: &str| {
            t.get(name).map_or("unset".to_string(), |v| v.to_string())
        };
        let name = q
            .tunables
            .keys()
            .chain(r.tunables.keys())
            .find(|n| q.tunables.get(*n) != r.tunables.get(*n))
            .expect("the maps differ");
        bail!(
            "mixed tunables: {name} is {} in {} and {} in {}",
            value(&q.tunables, name),
            runs[first].display(),
            value(&r.tunables, name),
            runs[k].display()
        );
    }
    Ok(())
}

/// Merge the sweep folders `dirs` into `out/<name>-sweep` (which must not
/// exist yet); returns that folder. Nothing is written unless every check
/// passes.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<(Merged, PathBuf)> {
    let folders: Vec<Folder> = dirs
        .iter()
        .map(|d| Folder::load(d))
        .collect::<Result<_>>()?;
    let m = combine(&folders)?;
    let dir = crate::run::sweep::dir_of(out, &m.scenario);
    if dir.exists() {
        bail!("{} already exists; merge into a new folder", dir.display());
    }
    let mut m = m;
    check_runs(&mut m)?;
    write(&m, &dir)?;
    Ok((m, dir))
}

/// Check every point's run folder before anything is written: it holds
/// the point's complete run ([`crate::run::resume::complete`], the rule
/// `--resume` keeps a run by: summary.json with as many repetitions as
/// its CCA's sweep asks) and their mean Jain is the point's. So a sweep
/// folder an interrupted sweep left with some runs half-rewritten is
/// refused, naming the point, rather than merged as complete. A point
/// that lacks the worst of its repetitions (a sweep.json of an older
/// build) gets it from them.
pub fn check_runs(m: &mut Merged) -> Result<()> {
    let reps_of: Vec<u32> = m
        .points
        .iter()
        .map(|p| m.repetitions_of(&p.cca).unwrap_or(m.scenario.repetitions))
        .collect();
    for ((pt, src), &reps) in m.points.iter_mut().zip(&m.sources).zip(&reps_of) {
        let key = PointKey {
            cca: pt.cca.clone(),
            x: pt.x,
            y: pt.y,
        };
        let stored = crate::run::resume::complete(src, reps)
            .map_err(|e| anyhow!("point {} is not complete: {e:#}", key_text(&key)))?;
        let summaries = stored.rep_summaries();
        let (mean, point) = (
            crate::results::summary::mean_summary(&summaries).jain,
            pt.summary.jain,
        );
        // Through JSON and back a float may move by an ulp or so.
        if !((mean - point).abs() <= 1e-9 || (mean.is_nan() && point.is_nan())) {
            bail!(
                "{}: its repetitions' mean Jain is {mean:.6}, the point's in sweep.json {point:.6}",
                src.display()
            );
        }
        if pt.worst.is_none() {
            pt.worst = crate::results::summary::worst_of(&summaries);
        }
    }
    Ok(())
}

/// Write the merged folder: runs copied, then the sweep's files.
fn write(m: &Merged, dir: &Path) -> Result<()> {
    let sweep = m.scenario.sweep.as_ref().expect("checked in combine");
    for src in &m.sources {
        let to = dir
            .join("runs")
            .join(src.file_name().expect("a run folder"));
        copy_tree(src, &to)?;
    }
    crate::run::sweep::write_outputs(
        dir,
        &m.scenario,
        sweep,
        &m.provenance.cca_names(),
        &m.points,
        &m.provenance,
    )
}

/// Copy the folder `from` to `to`, recursively (a run folder: plain files
/// and folders, a few MB; too small a need for a crate).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)
                .with_context(|| format!("copy {}", e.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::results::provenance::{CcaObject, Environment};
    use crate::results::Summary;
    use crate::scenario::grid::Shard;
    use crate::testkit::{self, MadeUp};

    /// The grid of these tests: 2 x 3 points of 3 repetitions, the flows
    /// in groups "short" and "long".
    fn grid_2d() -> String {
        testkit::grid_toml("m", 3, Some(["short", "long"]), &[10, 40, 80])
    }

    fn ccas() -> Vec<String> {
        vec!["fairtt".into(), "cubic".into()]
    }

    /// A test folder under the temp dir, empty, removed on drop.
    fn tmp(name: &str) -> tempfile::TempDir {
        testkit::temp_folder(&format!("merge-{name}"))
    }

    /// A distinct made-up summary for repetition `j` (0..3) of the k-th
    /// point of the grid. The worst Jain is repetition 2's, the worst
    /// utilization and retransmissions 1's, the worst delay 0's.
    fn summary(k: usize, j: usize) -> Summary {
        let k = k as f64;
        let mut s = Summary {
            jain: 0.5 + k * 0.037 - [0.0, 0.01, 0.02][j],
            stdr: -0.9 + k * 0.11,
            group_ratio: 1.0 + k * 0.3,
            utilization: 0.9 + k * 0.001 + [0.01, 0.0, 0.02][j],
            qdelay_mean_ms: k * 1.7 + [1.0, 0.5, 0.0][j],
            retrans_ratio: 0.001 * (1.0 + k) * [2.0, 3.0, 0.0][j],
            ..Summary::default()
        };
        s.goodput_mbit_by_group = BTreeMap::from([
            ("long".to_string(), 4.0 - k * 0.1),
            ("short".to_string(), 5.0 + k * 0.1 + j as f64 * 0.01),
        ]);
        s
    }

    /// The repetitions of the k-th point (the grid's 3).
    fn rep_summaries(k: usize) -> Vec<Summary> {
        (0..3).map(|j| summary(k, j)).collect()
    }

    /// What a sweep of `text` (shard `shard`, or all of it) writes under
    /// `out`, from made-up point results: the sweep's own writer, plus a
    /// run folder per point. `edit` changes the provenance before writing.
    fn write_sweep_folder(
        out: &Path,
        text: &str,
        shard: Option<Shard>,
        edit: impl FnOnce(&mut SweepProvenance),
    ) -> PathBuf {
        write_sweep_folder_of(out, text, &ccas(), shard, edit)
    }

    /// As [`write_sweep_folder`], a sweep of `ccas` with the scenario's
    /// repetitions (1 to 3) per point.
    fn write_sweep_folder_of(
        out: &Path,
        text: &str,
        ccas: &[String],
        shard: Option<Shard>,
        edit: impl FnOnce(&mut SweepProvenance),
    ) -> PathBuf {
        let base = Scenario::from_toml(text).unwrap();
        let reps = base.repetitions as usize;
        let point = |k: usize, _: &grid::PointPlan| {
            MadeUp::Repetitions(rep_summaries(k).into_iter().take(reps).collect())
        };
        testkit::write_sweep_folder(out, &base, ccas, shard, point, edit)
    }

    fn shard(i: u32, n: u32) -> Option<Shard> {
        Some(Shard { index: i, count: n })
    }

    /// Every file under `dir` (relative path -> bytes); a run's
    /// summary.json without its `dir`, the folder the run was written in
    /// (a shard's, kept as it was when the run is copied).
    fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                let mut bytes = std::fs::read(&p).unwrap();
                if rel.starts_with("runs")
                    && rel.components().count() == 3
                    && rel.ends_with("summary.json")
                {
                    let mut run: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                    assert!(run.as_object_mut().unwrap().remove("dir").is_some());
                    bytes = run.to_string().into_bytes();
                }
                out.insert(rel, bytes);
            }
        }
        out
    }

    #[test]
    fn merged_shards_are_what_one_machine_writes() {
        for (name, text) in [
            ("2d", grid_2d()),
            (
                "1d",
                testkit::grid_toml("m", 3, Some(["short", "long"]), &[]),
            ),
        ] {
            let root_dir = tmp(&format!("equal-{name}"));
            let root = root_dir.path().to_path_buf();
            let whole = write_sweep_folder(&root.join("whole"), &text, None, |_| {});
            let shards: Vec<PathBuf> = (0..3)
                .map(|i| {
                    write_sweep_folder(
                        &root.join(format!("shard-{i}")),
                        &text,
                        shard(i, 3),
                        |_| {},
                    );
                    // As the Kubernetes recipe names them: the shard's --out.
                    root.join(format!("shard-{i}"))
                })
                .collect();
            let (m, dir) = merge(&shards, &root.join("merged")).unwrap();
            assert!(m.warnings.is_empty());
            let (a, b) = (tree(&whole), tree(&dir));
            assert_eq!(
                a.keys().collect::<Vec<_>>(),
                b.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (path, bytes) in &a {
                if path.as_os_str() == provenance::FILE {
                    continue;
                }
                assert!(*bytes == b[path], "{name}: {} differs", path.display());
            }
            assert!(a.keys().any(|p| p.extension().is_some_and(|e| e == "png")));
            // Provenance: the whole grid, no shard, the folders named.
            let pw: SweepProvenance = provenance::read(&whole).unwrap();
            let pm: SweepProvenance = provenance::read(&dir).unwrap();
            assert_eq!(pm.shard, None);
            assert_eq!(pm.merged_from.len(), 3);
            assert_eq!(pm.points, pw.points);
            assert_eq!(pm.sources.len(), 2);
            assert!(pm.sources.iter().all(|s| s.folders.len() == 3
                && s.repetitions == 3
                && s.environment == pw.environment));
            assert_eq!(
                SweepProvenance {
                    merged_from: vec![],
                    sources: vec![],
                    ..pm
                },
                pw
            );
        }
    }

    /// Merging `dirs` fails with one line containing `expect`, and writes
    /// nothing.
    fn refused(root: &Path, dirs: &[PathBuf], expect: &str) {
        let out = root.join("merged");
        let e = format!("{:#}", merge(dirs, &out).unwrap_err());
        assert!(e.contains(expect), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(!out.exists(), "wrote {} on refusal", out.display());
    }

    #[test]
    fn refuses_mixed_scenarios() {
        let root_dir = tmp("mixed-scenario");
        let root = root_dir.path().to_path_buf();
        let other = grid_2d().replace("duration_s = 10", "duration_s = 12");
        let a = write_sweep_folder(&root.join("a"), &grid_2d(), shard(0, 2), |_| {});
        let b = write_sweep_folder(&root.join("b"), &other, shard(1, 2), |_| {});
        refused(&root, &[a.clone(), b], "mixed scenarios");
        // Another CCA's sweep of another scenario: refused alike, and the
        // repetition count is not what makes the difference.
        let other_reps1 = other.replace("repetitions = 3", "repetitions = 1");
        let c = write_sweep_folder_of(
            &root.join("c"),
            &other_reps1,
            &names(&["bbr"]),
            None,
            |_| {},
        );
        let whole = write_sweep_folder(&root.join("whole"), &grid_2d(), None, |_| {});
        refused(&root, &[whole, c], "mixed scenarios");
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The grid as `lab sweep --reps 1` records it.
    fn one_rep() -> String {
        grid_2d().replace("repetitions = 3", "repetitions = 1")
    }

    /// Issue 14's case: qfair swept in two shards with 3 repetitions by
    /// this build, bbr swept whole with 1 repetition by another build.
    /// They merge: both CCAs' points, each with its own repetitions, the
    /// sources recorded per CCA and printed as one note each, every plot
    /// and the side-by-side tables written.
    #[test]
    fn sweeps_of_other_ccas_merge_side_by_side() {
        let root_dir = tmp("side-by-side");
        let root = root_dir.path().to_path_buf();
        let q: Vec<PathBuf> = (0..2)
            .map(|i| {
                let out = root.join(format!("qfair-{i}"));
                write_sweep_folder_of(&out, &grid_2d(), &names(&["qfair"]), shard(i, 2), |_| {});
                out
            })
            .collect();
        let old = "54cb12040f9e7f392867d3258b461d774affad42";
        let b = write_sweep_folder_of(&root.join("bbr"), &one_rep(), &names(&["bbr"]), None, |p| {
            p.environment.rttfair_commit = old.into();
            p.environment.rttfair_dirty = "no".into();
        });
        let (m, dir) = merge(&[q[0].clone(), q[1].clone(), b.clone()], &root.join("m")).unwrap();
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        assert_eq!(m.provenance.cca_names(), names(&["qfair", "bbr"]));
        // Every point of both, from its own folder, with its repetitions.
        assert_eq!(m.points.len(), 12);
        let bbr = Folder::load(&b).unwrap();
        for p in &m.points {
            let reps = if p.cca == "qfair" { 3 } else { 1 };
            assert_eq!(p.worst.unwrap().reps, reps, "{p:?}");
            if p.cca == "bbr" {
                assert!(bbr.points.contains(p));
            }
        }
        // Per-CCA provenance: build, object, repetitions, folders.
        let back: SweepProvenance = provenance::read(&dir).unwrap();
        assert_eq!(back, m.provenance);
        let [sq, sb] = &back.sources[..] else {
            panic!("{:?}", back.sources)
        };
        assert_eq!(sq.environment, Environment::current());
        assert_eq!(sq.object_sha256, CcaObject::of("qfair").object_sha256);
        assert!(sq.object_sha256.is_some());
        assert_eq!((sq.repetitions, sq.folders.len()), (3, 2));
        assert_eq!(sb.environment.rttfair_commit, old);
        assert_eq!((sb.object_sha256.as_deref(), sb.repetitions), (None, 1));
        assert_eq!(
            sb.folders,
            [Folder::load(&b).unwrap().dir.display().to_string()]
        );
        assert_eq!(back.environment, sq.environment);
        let lines = m.source_lines();
        assert_eq!(lines.len(), 2);
        let sha = sq.object_sha256.as_deref().unwrap();
        let commit = &sq.environment.rttfair_commit;
        assert!(
            lines[0].starts_with(&format!(
                "note: qfair from rttfair {}",
                &commit[..commit.len().min(12)]
            )) && lines[0].ends_with(&format!(
                ", object {}, 3 repetitions per point, 2 folders",
                &sha[..12]
            )),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[1],
            "note: bbr from rttfair 54cb12040f9e, object (kernel CCA), 1 repetition per point, 1 folder"
        );
        // The folder: both CCAs' heatmaps and the side-by-side tables.
        for f in crate::results::sweep_plots::files(
            m.scenario.sweep.as_ref().unwrap(),
            &names(&["qfair", "bbr"]),
        ) {
            assert!(dir.join(&f).exists(), "{f}");
        }
        let compare = std::fs::read_to_string(dir.join(crate::run::sweep::COMPARE_FILE)).unwrap();
        assert!(
            compare.contains("| flows[1].rtt_ms | bottleneck.buffer.bdp | qfair | bbr |"),
            "{compare}"
        );
        assert_eq!(std::fs::read_dir(dir.join("runs")).unwrap().count(), 12);

        // The folders given decide the order.
        let folders: Vec<Folder> = [&b, &q[0], &q[1]]
            .iter()
            .map(|d| Folder::load(d).unwrap())
            .collect();
        assert_eq!(
            combine(&folders).unwrap().provenance.cca_names(),
            names(&["bbr", "qfair"])
        );

        // A merged folder merges again, its CCAs' sources kept.
        let c = write_sweep_folder_of(
            &root.join("cubic"),
            &one_rep(),
            &names(&["cubic"]),
            None,
            |_| {},
        );
        let (m2, _) = merge(&[root.join("m"), c], &root.join("m2")).unwrap();
        assert_eq!(m2.provenance.cca_names(), names(&["qfair", "bbr", "cubic"]));
        assert_eq!(m2.provenance.sources[..2], back.sources[..]);
        assert_eq!(m2.points.len(), 18);
    }

    /// One CCA's points stay one sweep: its folders from two builds, or
    /// with two repetition counts, are refused even beside another CCA;
    /// so is another CCA with a point missing.
    #[test]
    fn one_ccas_folders_must_agree_and_be_complete() {
        let root_dir = tmp("per-cca");
        let root = root_dir.path().to_path_buf();
        let qfair = names(&["qfair"]);
        let q0 = write_sweep_folder_of(&root.join("q0"), &grid_2d(), &qfair, shard(0, 2), |_| {});
        let bbr =
            write_sweep_folder_of(&root.join("bbr"), &one_rep(), &names(&["bbr"]), None, |p| {
                p.environment.rttfair_commit = "0123456789abcdef".into()
            });
        let q1_commit =
            write_sweep_folder_of(&root.join("q1c"), &grid_2d(), &qfair, shard(1, 2), |p| {
                p.environment.rttfair_commit = "0123456789abcdef".into()
            });
        refused(
            &root,
            &[q0.clone(), bbr.clone(), q1_commit],
            "mixed binaries: qfair in",
        );
        let q1_object =
            write_sweep_folder_of(&root.join("q1o"), &grid_2d(), &qfair, shard(1, 2), |p| {
                p.ccas[0].object_sha256 = Some("00".repeat(32))
            });
        refused(
            &root,
            &[q0.clone(), bbr.clone(), q1_object],
            "mixed binaries: qfair's object",
        );
        let q1_reps =
            write_sweep_folder_of(&root.join("q1r"), &one_rep(), &qfair, shard(1, 2), |_| {});
        refused(
            &root,
            &[q0.clone(), bbr.clone(), q1_reps],
            "mixed repetitions: qfair in",
        );
        // qfair whole, bbr only half its grid.
        let q1 = write_sweep_folder_of(&root.join("q1"), &grid_2d(), &qfair, shard(1, 2), |_| {});
        let half = write_sweep_folder_of(
            &root.join("half"),
            &one_rep(),
            &names(&["bbr"]),
            shard(0, 2),
            |_| {},
        );
        refused(
            &root,
            &[q0.clone(), q1.clone(), half],
            "missing points: 3 of the grid's 12 are in no folder, e.g. bbr x=2 y=10",
        );
        // The same CCA swept twice, whole.
        refused(&root, &[q0, q1, bbr.clone(), bbr], "duplicate point bbr");
    }

    #[test]
    fn refuses_mixed_binaries() {
        let root_dir = tmp("mixed-binaries");
        let root = root_dir.path().to_path_buf();
        let a = write_sweep_folder(&root.join("a"), &grid_2d(), shard(0, 2), |_| {});
        let b = write_sweep_folder(&root.join("b"), &grid_2d(), shard(1, 2), |p| {
            p.environment.rttfair_commit = "0123456789abcdef".into()
        });
        refused(&root, &[a.clone(), b], "mixed binaries");
        let c = write_sweep_folder(&root.join("c"), &grid_2d(), shard(1, 2), |p| {
            p.ccas[0].object_sha256 = Some("00".repeat(32))
        });
        refused(&root, &[a.clone(), c], "mixed binaries");
        // Another kernel is a note, not a refusal.
        let d = write_sweep_folder(&root.join("d"), &grid_2d(), shard(1, 2), |p| {
            p.environment.kernel_release = "6.1.0-other".into()
        });
        let folders = [Folder::load(&a).unwrap(), Folder::load(&d).unwrap()];
        let m = combine(&folders).unwrap();
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    }

    /// Shards whose fairtt points ran under different tunables are one
    /// grid under two laws: refused naming the tunable; the same values
    /// in both merge.
    #[test]
    fn refuses_mixed_tunables() {
        let root_dir = tmp("mixed-tunables");
        let root = root_dir.path().to_path_buf();
        let beta = |v: f64| {
            move |p: &mut SweepProvenance| {
                for r in p.points.iter_mut().filter(|r| r.cca == "fairtt") {
                    r.tunables.insert("fairtt.beta".into(), v);
                }
            }
        };
        let a = write_sweep_folder(&root.join("a"), &grid_2d(), shard(0, 2), beta(0.8));
        let b = write_sweep_folder(&root.join("b"), &grid_2d(), shard(1, 2), beta(0.5));
        refused(
            &root,
            &[a.clone(), b],
            "mixed tunables: fairtt.beta is 0.8 in",
        );
        let c = write_sweep_folder(&root.join("c"), &grid_2d(), shard(1, 2), beta(0.8));
        let folders = [Folder::load(&a).unwrap(), Folder::load(&c).unwrap()];
        combine(&folders).unwrap();
    }

    /// A sweep whose CCA ran an object the lab could not name (one the
    /// operator had registered) is refused, even alone.
    #[test]
    fn refuses_an_unknown_object() {
        let root_dir = tmp("unknown-object");
        let root = root_dir.path().to_path_buf();
        let a = write_sweep_folder(&root.join("a"), &grid_2d(), None, |p| {
            p.ccas[0].object_sha256 = Some(crate::net::ccas::UNKNOWN_OBJECT.into())
        });
        refused(&root, &[a], "unknown binaries: fairtt in");
    }

    #[test]
    fn refuses_missing_and_duplicate_points() {
        let root_dir = tmp("points");
        let root = root_dir.path().to_path_buf();
        let s: Vec<PathBuf> = (0..3)
            .map(|i| {
                write_sweep_folder(&root.join(format!("s{i}")), &grid_2d(), shard(i, 3), |_| {})
            })
            .collect();
        refused(&root, &s[..2], "missing points: 4 of the grid's 12");
        let again = write_sweep_folder(&root.join("again"), &grid_2d(), shard(1, 3), |_| {});
        refused(
            &root,
            &[s[0].clone(), s[1].clone(), again, s[2].clone()],
            "duplicate point",
        );
        // A whole sweep and one of its shards overlap too.
        let whole = write_sweep_folder(&root.join("whole"), &grid_2d(), None, |_| {});
        refused(&root, &[whole, s[0].clone()], "duplicate point");
        refused(&root, &[], "nothing to merge");
    }

    /// The reviewer's case: a sweep rerun over a finished shard's folder
    /// and interrupted leaves the earlier sweep.json and provenance.json
    /// beside a run folder without summary.json (or one with a
    /// repetition short). The merge is refused in one line naming the
    /// point and what is missing, nothing written; the complete shards
    /// merge.
    #[test]
    fn a_point_whose_run_is_not_complete_is_refused() {
        let root_dir = tmp("incomplete");
        let root = root_dir.path().to_path_buf();
        let s = [root.join("s0"), root.join("s1")];
        for (i, out) in (0..).zip(&s) {
            write_sweep_folder(out, &grid_2d(), shard(i, 2), |_| {});
        }
        let dir = Folder::load(&s[1]).unwrap().dir;
        let p = &Folder::load(&s[1]).unwrap().points[0];
        let key = key_text(&PointKey {
            cca: p.cca.clone(),
            x: p.x,
            y: p.y,
        });
        let run_name = &provenance::read::<SweepProvenance>(&dir).unwrap().points[0].run_dir;
        let run = dir.join("runs").join(run_name);
        let saved = tmp("incomplete-saved");
        copy_tree(&run, saved.path()).unwrap();

        // Interrupted in its second repetition: summary.json removed at
        // the run's start, rep1 half-written.
        std::fs::remove_file(run.join("summary.json")).unwrap();
        std::fs::remove_dir_all(run.join("rep1")).unwrap();
        refused(
            &root,
            &s,
            &format!(
                "point {key} is not complete: {} has no summary.json",
                run.display()
            ),
        );
        // A summary.json a repetition short.
        let reps = rep_summaries(0);
        let mean = crate::results::summary::mean_summary(&reps[..2]);
        testkit::rewrite_run_summary(
            &run,
            testkit::Finished {
                reps: &reps[..2],
                mean: &mean,
            },
        );
        refused(
            &root,
            &s,
            &format!(
                "point {key} is not complete: {}: summary.json holds 2 of 3 repetitions",
                run.display()
            ),
        );
        // No run folder at all.
        std::fs::remove_dir_all(&run).unwrap();
        refused(
            &root,
            &s,
            &format!("point {key} is not complete: run folder"),
        );
        // The run complete again: merged.
        copy_tree(saved.path(), &run).unwrap();
        let (m, _) = merge(&s, &root.join("merged")).unwrap();
        assert_eq!(m.points.len(), 12);
    }

    /// What commit 54cb120's `lab sweep` left for the same points: the
    /// folder this build writes, minus what that build did not write (the
    /// worst figures in sweep.json and sweep.csv, the new plots).
    fn write_old_sweep_folder(
        out: &Path,
        text: &str,
        shard: Option<Shard>,
        edit: impl FnOnce(&mut SweepProvenance),
    ) -> PathBuf {
        let dir = write_sweep_folder(out, text, shard, edit);
        let path = dir.join("sweep.json");
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for p in json.as_array_mut().unwrap() {
            assert!(p.as_object_mut().unwrap().remove("worst").is_some());
        }
        std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
        let csv_path = dir.join("sweep.csv");
        let old_csv: String = std::fs::read_to_string(&csv_path)
            .unwrap()
            .lines()
            .map(|l| {
                let cols: Vec<&str> = l.split(',').collect();
                format!("{}\n", cols[..cols.len() - 5].join(","))
            })
            .collect();
        assert!(old_csv.starts_with("cca,") && !old_csv.contains("worst"));
        std::fs::write(&csv_path, old_csv).unwrap();
        // A 2-D sweep's every-CCA panels (`<metric>.png`) are new too.
        let two_d = Scenario::from_toml(text)
            .unwrap()
            .sweep
            .unwrap()
            .y
            .is_some();
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let kept = ["jain-", "stdr-", "jain.png", "ratio.png"];
            let panel = two_d
                && crate::results::sweep_plots::METRICS
                    .iter()
                    .any(|m| name == format!("{}.png", m.name));
            if name.ends_with(".png")
                && (panel
                    || name.starts_with("jain-worst")
                    || !kept.iter().any(|k| name.starts_with(k)))
            {
                std::fs::remove_file(dir.join(name)).unwrap();
            }
        }
        dir
    }

    /// Width and height from a PNG's IHDR chunk.
    fn png_size(path: &Path) -> (u32, u32) {
        let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(b.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", path.display());
        let be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        (be(16), be(20))
    }

    /// The integrator's case: shards written by commit 54cb120 (no worst
    /// figures) merged by this build give each point the worst of its
    /// repetitions, from the run folders, and the folder this build
    /// writes for the whole sweep, every heatmap included.
    #[test]
    fn older_shards_merge_with_the_worst_of_their_repetitions() {
        let root_dir = tmp("old-format");
        let root = root_dir.path().to_path_buf();
        let shards: Vec<PathBuf> = (0..3)
            .map(|i| {
                let out = root.join(format!("shard-{i}"));
                let dir = write_old_sweep_folder(&out, &grid_2d(), shard(i, 3), |_| {});
                assert!(Folder::load(&dir)
                    .unwrap()
                    .points
                    .iter()
                    .all(|p| p.worst.is_none()));
                assert!(!dir.join("qdelay-fairtt.png").exists());
                assert!(!dir.join("jain.png").exists());
                out
            })
            .collect();
        let (m, dir) = merge(&shards, &root.join("merged")).unwrap();
        assert_eq!(m.points.len(), 12);
        for (k, p) in m.points.iter().enumerate() {
            let w = p.worst.expect("filled from the run folder");
            let reps = rep_summaries(k);
            let min = |f: fn(&Summary) -> f64| reps.iter().map(f).fold(f64::INFINITY, f64::min);
            let max = |f: fn(&Summary) -> f64| reps.iter().map(f).fold(0.0, f64::max);
            assert_eq!(w.jain, min(|s| s.jain), "point {k}");
            assert_eq!(w.utilization, min(|s| s.utilization), "point {k}");
            assert_eq!(w.qdelay_mean_ms, max(|s| s.qdelay_mean_ms), "point {k}");
            assert_eq!(w.retrans_ratio, max(|s| s.retrans_ratio), "point {k}");
            assert_eq!(w.reps, 3);
            assert!(w.jain < p.summary.jain && w.qdelay_mean_ms > p.summary.qdelay_mean_ms);
        }
        // Written: sweep.json with the worst figures, sweep.csv with their
        // columns, every plot.
        let back = Folder::load(&dir).unwrap();
        assert_eq!(back.points, m.points);
        let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
        let head = csv.lines().next().unwrap();
        assert!(
            head.ends_with(
                "jain_worst,utilization_worst,qdelay_mean_ms_worst,retrans_ratio_worst,reps"
            ),
            "{head}"
        );
        let first = csv.lines().nth(1).unwrap();
        let w0 = m.points[0].worst.unwrap();
        assert!(
            first.ends_with(&format!(
                ",{:.4},{:.4},{:.3},{:.5},3",
                w0.jain, w0.utilization, w0.qdelay_mean_ms, w0.retrans_ratio
            )),
            "{first}"
        );
        let sweep = m.scenario.sweep.clone().unwrap();
        let files = crate::results::sweep_plots::files(&sweep, &ccas());
        assert_eq!(files.len(), 6 * 3);
        for f in &files {
            let (w, h) = png_size(&dir.join(f));
            if ccas().iter().any(|c| f.ends_with(&format!("-{c}.png"))) {
                assert!(w >= 140 + 70 * 2 && h == 120 + 40 * 3, "{f}: {w} x {h}");
            } else {
                // Both CCAs' panels side by side, under a title.
                assert!(
                    w >= 2 * (140 + 70 * 2) && h == 40 + 120 + 40 * 3,
                    "{f}: {w} x {h}"
                );
            }
            assert!(std::fs::metadata(dir.join(f)).unwrap().len() > 1000, "{f}");
        }
        // Exactly what this build writes for the whole sweep on one machine.
        let whole = write_sweep_folder(&root.join("whole"), &grid_2d(), None, |_| {});
        let (a, b) = (tree(&whole), tree(&dir));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (path, bytes) in &a {
            if path.as_os_str() != provenance::FILE {
                assert!(*bytes == b[path], "{} differs", path.display());
            }
        }
    }

    /// Older shards of different builds are still refused, as are run
    /// folders that are not the points' runs.
    #[test]
    fn older_shards_are_checked_as_strictly() {
        let root_dir = tmp("old-refused");
        let root = root_dir.path().to_path_buf();
        let a = write_old_sweep_folder(&root.join("a"), &grid_2d(), shard(0, 2), |_| {});
        let b = write_old_sweep_folder(&root.join("b"), &grid_2d(), shard(1, 2), |p| {
            p.environment.rttfair_commit = "54cb120".into()
        });
        refused(&root, &[a.clone(), b], "mixed binaries");
        // A run folder whose repetitions do not average to its point.
        let c = write_old_sweep_folder(&root.join("c"), &grid_2d(), shard(1, 2), |_| {});
        let run = std::fs::read_dir(c.join("runs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let other = vec![Summary::default(); 3];
        let default = Summary::default();
        testkit::rewrite_run_summary(
            &run,
            testkit::Finished {
                reps: &other,
                mean: &default,
            },
        );
        refused(&root, &[a.clone(), c.clone()], "mean Jain");
        // One with a repetition short.
        testkit::rewrite_run_summary(
            &run,
            testkit::Finished {
                reps: &other[..2],
                mean: &default,
            },
        );
        refused(&root, &[a, c], "summary.json holds 2 of 3 repetitions");
    }
}
