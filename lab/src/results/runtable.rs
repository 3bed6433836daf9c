//! `rttfairctl lab table RUN_DIR...`: run folders of one scenario, as
//! `lab run` / `lab compare` wrote them (scenario.toml, summary.json,
//! `rep<N>/`), side by side in one Markdown table: a row per CCA, its
//! repetitions pooled over every folder given (e.g. the same compare run
//! twice into two `--out`s), each metric as the mean and, with several
//! repetitions, the worst (issue 14: "report mean and worst").
//!
//! The rules, checked before anything is printed; a refusal is one line:
//! - every folder holds a finished run: summary.json is there (a run
//!   writes it last);
//! - every folder ran the same scenario, its repetition count, its
//!   flows' CCAs and its `[tunables]` aside: else "different scenarios";
//! - no folder is given twice (its repetitions would count twice).
//!
//! A row is a CCA label with the tunables its runs set (the same CCA under
//! other tunables is a row of its own: qfair with `qfair.exit_drains` 1
//! and 2 beside cubic). The rows keep the order in which they first appear
//! in the folders given. Folders written before summaries held the time to fair get it
//! from their `rep<N>/goodput.csv` ([`crate::results::time_to_fair::of_rep_folder`]).
//! Unlike `lab merge` (sweep folders, one grid, a merged folder written),
//! this reads run folders and writes nothing.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::results::gridtable::{jain_cell, markdown};
use crate::results::summary::{mean_summary, worst_of};
use crate::results::time_to_fair;
use crate::results::{Summary, Worst};
use crate::scenario::plan::label_of;
use crate::scenario::Scenario;

/// One CCA's row: its repetitions, pooled from its folders.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The CCA label (as `lab compare` labels a run: its flows' CCAs),
    /// followed by the tunables its runs set, if any, in brackets
    /// ("qfair (qfair.exit_drains = 2)").
    pub cca: String,
    /// The folders the repetitions come from, in the order given.
    pub folders: Vec<PathBuf>,
    /// Every repetition's summary, folder by folder, each folder's in
    /// repetition order.
    pub reps: Vec<Summary>,
    /// Their mean ([`mean_summary`]).
    pub mean: Summary,
    /// Their worst ([`worst_of`]).
    pub worst: Option<Worst>,
}

/// The side-by-side table of one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The scenario's name and description (the first folder's).
    pub scenario: String,
    pub description: String,
    pub rows: Vec<Row>,
}

/// One run folder as read.
struct RunFolder {
    dir: PathBuf,
    scenario: Scenario,
    reps: Vec<Summary>,
}

impl RunFolder {
    fn load(dir: &Path) -> Result<RunFolder> {
        if !dir.join("summary.json").is_file() {
            bail!(
                "{}: no summary.json (not a finished run folder of `lab run` or `lab compare`)",
                dir.display()
            );
        }
        let scenario = Scenario::load(&dir.join("scenario.toml"))?;
        let stored = crate::results::files::read_run_summary(dir)?;
        let mut reps = stored.rep_summaries();
        for (n, s) in reps.iter_mut().enumerate() {
            if s.time_to_fair.is_none() {
                s.time_to_fair = time_to_fair::of_rep_folder(dir, &scenario, n)?;
            }
        }
        Ok(RunFolder {
            dir: dir.to_path_buf(),
            scenario,
            reps,
        })
    }
}

/// What must be equal for two run folders to be the same scenario: its
/// text with the repetitions, the flows' CCAs and the tunables (which go
/// with the CCAs: [`row_label`]) left out.
fn scenario_key(s: &Scenario) -> Result<String> {
    let mut s = s.with_cca("");
    s.repetitions = 1;
    s.tunables.clear();
    crate::results::provenance::scenario_text(&s)
}

/// A run's row: its CCA label, and the tunables it set in brackets
/// ("qfair (qfair.exit_drains = 2)"), so runs under other tunables are
/// not pooled.
fn row_label(s: &Scenario) -> String {
    let label = label_of(s);
    if s.tunables.is_empty() {
        return label;
    }
    format!(
        "{label} ({})",
        crate::scenario::tunables::listed(&s.tunables)
    )
}

/// The table of the run folders `dirs` (see the module doc for what is
/// refused).
pub fn load(dirs: &[PathBuf]) -> Result<Table> {
    let mut folders: Vec<RunFolder> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let canonical = d
            .canonicalize()
            .with_context(|| format!("read folder {}", d.display()))?;
        if seen.contains(&canonical) {
            bail!(
                "{}: given twice (its repetitions would count twice)",
                d.display()
            );
        }
        seen.push(canonical);
        folders.push(RunFolder::load(d)?);
    }
    let Some(first) = folders.first() else {
        bail!("no run folders given");
    };
    let key = scenario_key(&first.scenario)?;
    for f in &folders[1..] {
        if scenario_key(&f.scenario)? != key {
            bail!(
                "different scenarios: {} ran {} and {} ran {}{}; `lab table` puts one scenario's runs side by side",
                first.dir.display(),
                first.scenario.name,
                f.dir.display(),
                f.scenario.name,
                if f.scenario.name == first.scenario.name {
                    " with other settings (scenario.toml differs beyond repetitions and CCAs)"
                } else {
                    ""
                }
            );
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for f in &folders {
        let cca = row_label(&f.scenario);
        let at = match rows.iter().position(|r| r.cca == cca) {
            Some(i) => i,
            None => {
                rows.push(Row {
                    cca,
                    folders: vec![],
                    reps: vec![],
                    mean: Summary::default(),
                    worst: None,
                });
                rows.len() - 1
            }
        };
        rows[at].folders.push(f.dir.clone());
        rows[at].reps.extend(f.reps.iter().cloned());
    }
    for r in &mut rows {
        r.mean = mean_summary(&r.reps);
        r.worst = worst_of(&r.reps);
    }
    Ok(Table {
        scenario: first.scenario.name.clone(),
        description: first.scenario.description.clone(),
        rows,
    })
}

/// Utilization as a cell: the mean, and the lowest repetition in
/// brackets when there were several ("98.9 % (98.1)").
pub fn utilization_cell(s: &Summary, w: Option<&Worst>) -> String {
    match w {
        Some(w) if w.reps > 1 => format!(
            "{:.1} % ({:.1})",
            s.utilization * 100.0,
            w.utilization * 100.0
        ),
        _ => format!("{:.1} %", s.utilization * 100.0),
    }
}

/// Whether any repetition has a time to fair (the scenario has a late
/// joiner or an RTT change): the tables then have its column.
pub fn has_time_to_fair<'a>(reps: impl IntoIterator<Item = &'a Summary>) -> bool {
    reps.into_iter().any(|s| s.time_to_fair.is_some())
}

/// Each repetition's time to fair in one cell ("1 s / never (60 s)").
pub fn time_to_fair_cell<'a>(reps: impl IntoIterator<Item = &'a Summary>) -> String {
    let all: Vec<_> = reps.into_iter().map(|s| s.time_to_fair).collect();
    time_to_fair::cells(&all)
}

impl Table {
    /// The table as Markdown, after a line naming the scenario: a row per
    /// CCA with each group's mean goodput, Jain and utilization as mean
    /// (worst), mean queueing delay and retransmissions, each
    /// repetition's time to fair (when the scenario has an event) and the
    /// number of repetitions.
    pub fn markdown(&self) -> String {
        let groups: Vec<String> = self
            .rows
            .first()
            .map(|r| r.mean.groups())
            .unwrap_or_default();
        let ttf = has_time_to_fair(self.rows.iter().flat_map(|r| &r.reps));
        let mut head = vec!["cca".to_string()];
        head.extend(groups.iter().map(|g| format!("{g} Mb/s")));
        head.extend(
            [
                "Jain mean (worst)",
                "util mean (worst)",
                "qdelay",
                "retrans",
            ]
            .map(String::from),
        );
        if ttf {
            head.push("time to fair, per run".into());
        }
        head.push("runs".into());
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let s = &r.mean;
                let mut cells = vec![r.cca.clone()];
                cells.extend(groups.iter().map(|g| {
                    s.goodput_mbit_by_group
                        .get(g)
                        .map_or("-".to_string(), |v| format!("{v:.2}"))
                }));
                cells.push(jain_cell(s, r.worst.as_ref()));
                cells.push(utilization_cell(s, r.worst.as_ref()));
                cells.push(format!("{:.1} ms", s.qdelay_mean_ms));
                cells.push(crate::results::gridtable::retrans_cell(s));
                if ttf {
                    cells.push(time_to_fair_cell(&r.reps));
                }
                cells.push(r.reps.len().to_string());
                cells
            })
            .collect();
        let title = if self.description.is_empty() {
            self.scenario.clone()
        } else {
            format!("{}: {}", self.scenario, self.description)
        };
        format!("{title}\n\n{}", markdown(&head, &rows))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::testkit::{temp_folder, write_finished_run};

    /// The late-joiner scenario of the time-to-fair fixtures (a real run's
    /// scenario.toml: qfair, 10 ms joins 50 ms at 20 s, 80 s).
    fn late_joiner() -> Scenario {
        Scenario::load(&fixture("qfair").join("scenario.toml")).unwrap()
    }

    fn fixture(cca: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/testdata/time_to_fair")
            .join(format!("late-joiner-{cca}"))
    }

    fn rep(jain: f64, util: f64, joiner: f64, seconds: Option<f64>) -> Summary {
        Summary {
            jain,
            utilization: util,
            qdelay_mean_ms: 10.0 * jain,
            retrans_ratio: 0.001 * util,
            goodput_mbit_by_group: BTreeMap::from([
                ("first-50ms".to_string(), 19.0 - joiner),
                ("joiner-10ms".to_string(), joiner),
            ]),
            time_to_fair: Some(crate::testkit::late_joiner_time_to_fair(0, seconds)),
            ..Summary::default()
        }
    }

    /// qfair twice (two invocations, one repetition each) and bbr once,
    /// given in the order qfair, bbr, qfair: two rows, qfair first, its
    /// two repetitions pooled into mean (worst).
    #[test]
    fn pools_the_repetitions_of_one_cca_from_several_folders() {
        let tmp = temp_folder("runtable-pool");
        let (a, b, c) = (
            tmp.path().join("rep1/lj-qfair"),
            tmp.path().join("rep1/lj-bbr"),
            tmp.path().join("rep2/lj-qfair"),
        );
        let s = late_joiner();
        write_finished_run(&a, &s, &[rep(0.99, 0.99, 9.0, Some(1.0))]);
        write_finished_run(&b, &s.with_cca("bbr"), &[rep(0.7, 0.98, 3.0, None)]);
        write_finished_run(&c, &s, &[rep(0.95, 0.97, 8.0, Some(10.0))]);
        let t = load(&[a.clone(), b, c.clone()]).unwrap();
        assert_eq!(t.scenario, "qfair-late-joiner");
        let ccas: Vec<&str> = t.rows.iter().map(|r| r.cca.as_str()).collect();
        assert_eq!(ccas, ["qfair", "bbr"]);
        assert_eq!(t.rows[0].folders, [a, c]);
        assert_eq!(t.rows[0].reps.len(), 2);
        let md = t.markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines,
            [
                "qfair-late-joiner: 10 ms joins 50 ms at t = 20 s, 5 BDP(50 ms), 20 Mbit/s",
                "",
                "| cca | first-50ms Mb/s | joiner-10ms Mb/s | Jain mean (worst) | util mean (worst) \
                 | qdelay | retrans | time to fair, per run | runs |",
                "|---|---|---|---|---|---|---|---|---|",
                "| qfair | 10.50 | 8.50 | 0.970 (0.950) | 98.0 % (97.0) | 9.7 ms | 0.10 % \
                 | 1 s / 10 s | 2 |",
                "| bbr | 16.00 | 3.00 | 0.700 | 98.0 % | 7.0 ms | 0.10 % | never (60 s) | 1 |",
            ]
        );
    }

    /// One scenario under other tunables (and without) is one table: a
    /// row per CCA and tunables, labelled with them, none pooled with
    /// another's.
    #[test]
    fn runs_under_other_tunables_are_rows_of_their_own() {
        let tmp = temp_folder("runtable-tunables");
        let tuned = |v: f64| {
            let mut s = late_joiner();
            s.tunables.insert("qfair.exit_drains".into(), v);
            s
        };
        let p = |n: &str| tmp.path().join(n);
        let r = rep(0.9, 0.9, 9.0, Some(1.0));
        write_finished_run(&p("one"), &tuned(1.0), std::slice::from_ref(&r));
        write_finished_run(&p("two"), &tuned(2.0), std::slice::from_ref(&r));
        write_finished_run(&p("bbr"), &late_joiner().with_cca("bbr"), &[r]);
        let t = load(&[p("one"), p("two"), p("bbr")]).unwrap();
        let rows: Vec<(&str, usize)> = t
            .rows
            .iter()
            .map(|r| (r.cca.as_str(), r.reps.len()))
            .collect();
        assert_eq!(
            rows,
            [
                ("qfair (qfair.exit_drains = 1)", 1),
                ("qfair (qfair.exit_drains = 2)", 1),
                ("bbr", 1)
            ]
        );
    }

    /// Without an event (every flow starts together) the table has no
    /// time-to-fair column.
    #[test]
    fn no_event_no_time_to_fair_column() {
        let tmp = temp_folder("runtable-noevent");
        let mut s = late_joiner();
        s.flows[0].start_s = 0.0;
        let mut r = rep(0.99, 0.99, 9.0, None);
        r.time_to_fair = None;
        write_finished_run(&tmp.path().join("x"), &s, &[r]);
        let md = load(&[tmp.path().join("x")]).unwrap().markdown();
        assert!(!md.contains("time to fair"), "{md}");
        assert!(md.contains("| runs |"), "{md}");
    }

    /// A folder whose summary.json predates the field gets the time to
    /// fair from its goodput.csv: the script's 10 s for this real run.
    #[test]
    fn an_older_folder_gets_its_time_to_fair_from_goodput_csv() {
        let tmp = temp_folder("runtable-old");
        let dir = tmp.path().join("old");
        let mut r = rep(0.99, 0.99, 9.0, None);
        r.time_to_fair = None;
        write_finished_run(&dir, &late_joiner(), &[r]);
        std::fs::copy(
            fixture("qfair").join("rep0/goodput.csv"),
            dir.join("rep0/goodput.csv"),
        )
        .unwrap();
        let t = load(&[dir]).unwrap();
        let ttf = t.rows[0].reps[0].time_to_fair.unwrap();
        assert_eq!(time_to_fair::cell(&ttf), "10 s");
    }

    #[test]
    fn folders_of_different_scenarios_are_refused_in_one_line() {
        let tmp = temp_folder("runtable-mixed");
        let s = late_joiner();
        let mut other = s.clone();
        other.name = "qfair-late-joiner-long".into();
        let mut longer = s.clone();
        longer.duration_s = 90.0;
        // Repetitions differ: still the same scenario.
        let mut three = s.clone();
        three.repetitions = 3;
        let r = rep(0.9, 0.9, 9.0, Some(1.0));
        for (name, sc) in [("a", &s), ("b", &other), ("c", &longer), ("d", &three)] {
            write_finished_run(&tmp.path().join(name), sc, std::slice::from_ref(&r));
        }
        let p = |n: &str| tmp.path().join(n);
        let e = load(&[p("a"), p("b")]).unwrap_err().to_string();
        assert!(e.starts_with("different scenarios: "), "{e}");
        assert!(
            e.contains("qfair-late-joiner-long") && !e.contains('\n'),
            "{e}"
        );
        let e = load(&[p("a"), p("c")]).unwrap_err().to_string();
        assert!(e.contains("with other settings"), "{e}");
        assert_eq!(load(&[p("a"), p("d")]).unwrap().rows[0].reps.len(), 2);
    }

    #[test]
    fn a_folder_without_summary_json_or_given_twice_is_refused() {
        let tmp = temp_folder("runtable-unfinished");
        let dir = tmp.path().join("running");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            fixture("qfair").join("scenario.toml"),
            dir.join("scenario.toml"),
        )
        .unwrap();
        let e = load(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(e.contains("no summary.json"), "{e}");
        let done = tmp.path().join("done");
        write_finished_run(&done, &late_joiner(), &[rep(0.9, 0.9, 9.0, None)]);
        let e = load(&[done.clone(), done]).unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
    }
}
