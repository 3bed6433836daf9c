//! `rttfairctl lab ...`

use std::path::Path;

use anyhow::{bail, Result};
use rttfair_lab::run::{self, RunOptions, RunResult, Summary};
use rttfair_lab::scenario::builtin;
use rttfair_lab::scenario::plan::Plan;
use rttfair_lab::scenario::Scenario;
use rttfair_loader::BpfFs;

use crate::{LabArgs, LabCommand};

/// Runs a lab command. With `json`, what is printed is one JSON document
/// (the summaries and where the results are) instead of the tables.
pub fn run(fs: &BpfFs, cmd: LabCommand, json: bool) -> Result<()> {
    match cmd {
        LabCommand::Scenarios => {
            let mut list = Vec::new();
            for (name, _) in builtin::SCENARIOS {
                let s = builtin::resolve(name).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                if !json {
                    println!("{name:<24} {}", s.description);
                }
                list.push(serde_json::json!({ "name": name, "description": s.description }));
            }
            if json {
                println!("{}", serde_json::to_string(&list)?);
            }
            Ok(())
        }
        LabCommand::Run {
            scenario,
            cca,
            common,
        } => {
            let mut s = prepare(&scenario, &common)?;
            if let Some(c) = cca {
                s = s
                    .with_ccas(&[c])
                    .map_err(|e| anyhow::anyhow!("invalid scenario: {e}"))?
                    .remove(0);
            }
            if let Some(note) = rttfair_lab::scenario::grid::base_note(&s) {
                eprintln!("{note}");
            }
            let r = run::run(&s, &options(fs, &common))?;
            report(&[r], json)
        }
        LabCommand::Sweep {
            scenario,
            cca,
            shard,
            resume,
            dry_run,
            common,
        } => {
            let shard = shard
                .map(|spec| spec.parse::<rttfair_lab::scenario::grid::Shard>())
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let s = prepare(&scenario, &common)?;
            let sweep = s
                .sweep
                .clone()
                .ok_or_else(|| anyhow::anyhow!("{scenario} has no [sweep] table"))?;
            if dry_run {
                return dry_run_plan(&s, &sweep, &cca, shard, json);
            }
            let sel = rttfair_lab::run::sweep::Selection { shard, resume };
            let swept = rttfair_lab::run::sweep::run_selected(
                &s,
                &sweep,
                &cca,
                sel,
                &options(fs, &common),
            )?;
            report_sweep(&sweep, &cca, &swept, json)
        }
        LabCommand::Merge { dirs, out } => {
            let (merged, dir) = rttfair_lab::run::merge::merge(&dirs, &out)?;
            // Notes on stderr: stdout stays the tables, or one JSON value.
            for w in merged.warnings.iter().chain(&merged.source_lines()) {
                eprintln!("{w}");
            }
            if json {
                let doc = serde_json::json!({
                    "points": merged.points,
                    "dir": dir,
                    "sources": merged.provenance.sources,
                });
                println!("{}", serde_json::to_string(&doc)?);
                return Ok(());
            }
            let sweep = merged
                .scenario
                .sweep
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("{}: no [sweep] table", dir.display()))?;
            print!(
                "{}",
                rttfair_lab::results::gridtable::compare_tables(
                    sweep,
                    &merged.provenance.cca_names(),
                    &merged.points
                )
            );
            println!(
                "\nresults: {} (side by side: {})",
                dir.display(),
                rttfair_lab::run::sweep::COMPARE_FILE
            );
            Ok(())
        }
        LabCommand::Resummarize { dirs, check } => {
            let done = if check {
                rttfair_lab::run::resummarize::check(&dirs)?
            } else {
                rttfair_lab::run::resummarize::resummarize(&dirs)?
            };
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                for o in &done {
                    println!("{}", o.note(!check));
                }
            }
            Ok(())
        }
        LabCommand::Table { dirs } => {
            let table = rttfair_lab::results::runtable::load(&dirs)?;
            if json {
                println!("{}", serde_json::to_string(&table)?);
            } else {
                print!("{}", table.markdown());
            }
            Ok(())
        }
        LabCommand::Compare {
            scenario,
            cca,
            common,
        } => {
            let s = prepare(&scenario, &common)?;
            // Every CCA's scenario and availability before the first run.
            let plans: Vec<Plan> = s
                .with_ccas(&cca)
                .and_then(|each| each.iter().map(Plan::resolve).collect())
                .map_err(|e| anyhow::anyhow!("invalid scenario: {e}"))?;
            rttfair_lab::net::ccas::check_available(&cca)?;
            if let Some(note) = rttfair_lab::scenario::grid::base_note(&s) {
                eprintln!("{note}");
            }
            let mut results = Vec::new();
            for p in &plans {
                results.push(run::run_plan(p, &options(fs, &common))?);
            }
            report(&results, json)
        }
    }
}

/// A sweep's points and folder: one JSON document with `json` (each point
/// with its mean summary and worst repetition, and the sweep's progress
/// as provenance.json records it), else a Markdown table per metric (per
/// CCA for a 2-D grid: rows y, columns x; Jain as "mean (worst)") and the
/// folder.
fn report_sweep(
    sweep: &rttfair_lab::scenario::Sweep,
    ccas: &[String],
    swept: &rttfair_lab::run::sweep::Swept,
    json: bool,
) -> Result<()> {
    let (points, dir) = (&swept.points, &swept.dir);
    if json {
        let doc = serde_json::json!({
            "points": points,
            "dir": dir,
            "progress": swept.progress,
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(());
    }
    print!(
        "{}",
        rttfair_lab::results::gridtable::sweep_tables(sweep, ccas, points)
    );
    println!("\nresults: {}", dir.display());
    Ok(())
}

fn prepare(arg: &str, a: &LabArgs) -> Result<Scenario> {
    let mut s = builtin::resolve(arg)?;
    if let Some(d) = a.duration {
        s.set_duration(d);
    }
    if let Some(r) = a.reps {
        s.repetitions = r;
    }
    if let Err(e) = s.validate() {
        bail!("{arg}: {e}");
    }
    Ok(s)
}

fn options(fs: &BpfFs, a: &LabArgs) -> RunOptions {
    RunOptions {
        out_dir: a.out.clone(),
        bpffs: fs.clone(),
        progress: !a.quiet,
        verbose: !a.quiet,
    }
}

/// `lab sweep --dry-run`: every point with its estimated machine time, the
/// total, and with a shard spec every shard's share (the one asked for
/// marked). Runs and touches nothing.
fn dry_run_plan(
    s: &Scenario,
    sweep: &rttfair_lab::scenario::Sweep,
    ccas: &[String],
    shard: Option<rttfair_lab::scenario::grid::Shard>,
    json: bool,
) -> Result<()> {
    use rttfair_lab::scenario::grid::{self, Shard};
    let expand = || grid::expand(s, sweep, ccas).map_err(|e| anyhow::anyhow!("{}: {e}", s.name));
    let all = expand()?;
    rttfair_lab::net::ccas::check_available(ccas)?;
    let count = shard.map_or(1, |sh| sh.count);
    let mut shards = Vec::new();
    for index in 0..count {
        let mine = Shard { index, count }.select(expand()?);
        shards.push(serde_json::json!({
            "shard": format!("{index}/{count}"),
            "points": mine.len(),
            "machine_hours": grid::machine_hours(&mine),
            "selected": shard.is_some_and(|sh| sh.index == index),
        }));
    }
    if json {
        let points: Vec<_> = all
            .iter()
            .map(|p| serde_json::json!({ "point": p.key, "seconds": grid::point_seconds(p) }))
            .collect();
        let doc = serde_json::json!({
            "scenario": s.name,
            "points": points,
            "machine_hours": grid::machine_hours(&all),
            "shards": shards,
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(());
    }
    println!(
        "{:<8} {:>10} {:>8} {:>6} {:>10}",
        "cca", "x", "y", "reps", "seconds"
    );
    for p in &all {
        println!(
            "{:<8} {:>10} {:>8} {:>6} {:>10.0}",
            p.key.cca,
            p.key.x,
            p.key.y.map(|v| v.to_string()).unwrap_or_default(),
            p.plan.repetitions,
            grid::point_seconds(p)
        );
    }
    println!(
        "{}: {} points, about {:.1} machine-hours (x = {}, y = {})",
        s.name,
        all.len(),
        grid::machine_hours(&all),
        sweep.x.param,
        sweep.y.as_ref().map_or("-", |a| a.param.as_str())
    );
    if shard.is_some() {
        for sh in &shards {
            println!(
                "  shard {:>7}: {:>5} points, {:>7.1} h{}",
                sh["shard"].as_str().unwrap_or_default(),
                sh["points"],
                sh["machine_hours"].as_f64().unwrap_or_default(),
                if sh["selected"] == true {
                    "  <- this shard"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// The runs as a table, or with `json` as one array of [`RunDoc`]s.
pub fn report(results: &[RunResult], json: bool) -> Result<()> {
    if json {
        let docs: Vec<RunDoc> = results.iter().map(RunDoc::of).collect();
        println!("{}", runs_json(&docs)?);
    } else {
        print_table(results);
    }
    Ok(())
}

/// The `--json` text of `runs`: one array, every object's keys in name
/// order at every level. Through a `Value` (whose maps are sorted) because
/// that is how it has always been printed, summary included.
pub fn runs_json(runs: &[RunDoc]) -> Result<String> {
    Ok(serde_json::to_string(&serde_json::to_value(runs)?)?)
}

/// One run as `--json` prints it (`lab run`, `lab compare`, `demo`): the
/// CCA label, the scenario's name, the summary (the mean of the
/// repetitions), each repetition's summary, the worst of them, and the
/// folder that holds the full per-repetition data. A type of its own, so
/// the document's shape is fixed in one place and testable without
/// running anything. Fields in name order: the order the document had as
/// a `serde_json::json!` map.
#[derive(Debug, serde::Serialize)]
pub struct RunDoc<'a> {
    /// Each repetition's discipline counters per flow (drops, marks,
    /// sojourn); left out when the bottleneck has no discipline.
    #[serde(skip_serializing_if = "no_aqm")]
    pub aqm: Vec<&'a [rttfair_lab::results::AqmFlow]>,
    pub cca: String,
    pub dir: &'a Path,
    /// Each repetition's summary, in order (time to fair included).
    pub reps: Vec<&'a Summary>,
    pub scenario: &'a str,
    pub summary: &'a Summary,
    /// The worst of the repetitions, metric by metric.
    pub worst: Option<rttfair_lab::results::Worst>,
}

impl<'a> RunDoc<'a> {
    /// The document of a finished run.
    pub fn of(r: &'a RunResult) -> RunDoc<'a> {
        let reps = r.reps.iter().map(|x| &x.summary).collect();
        RunDoc {
            aqm: r.reps.iter().map(|x| x.aqm.as_slice()).collect(),
            ..RunDoc::new(&r.scenario, &r.summary, reps, &r.dir)
        }
    }

    /// The document of a run of `scenario` whose repetitions gave `reps`,
    /// their mean `summary`, in `dir`.
    pub fn new(
        scenario: &'a Scenario,
        summary: &'a Summary,
        reps: Vec<&'a Summary>,
        dir: &'a Path,
    ) -> RunDoc<'a> {
        let owned: Vec<Summary> = reps.iter().map(|s| (*s).clone()).collect();
        RunDoc {
            aqm: Vec::new(),
            cca: run::label_of(scenario),
            dir,
            reps,
            scenario: &scenario.name,
            summary,
            worst: run::worst_of(&owned),
        }
    }
}

fn no_aqm(aqm: &[&[rttfair_lab::results::AqmFlow]]) -> bool {
    aqm.iter().all(|a| a.is_empty())
}

/// One row per run: per-group goodput, ratio, fairness, utilization, delay.
pub fn print_table(results: &[RunResult]) {
    let rows: Vec<TableRun> = results.iter().map(TableRun::of).collect();
    print!("{}", table_text(&rows));
}

/// What a row of the runs' table shows of one run.
struct TableRun<'a> {
    label: String,
    /// The mean of the repetitions' summaries.
    mean: &'a Summary,
    /// Each repetition's summary.
    reps: Vec<&'a Summary>,
    dir: &'a Path,
}

impl<'a> TableRun<'a> {
    fn of(r: &'a RunResult) -> TableRun<'a> {
        TableRun {
            label: run::label_of(&r.scenario),
            mean: &r.summary,
            reps: r.reps.iter().map(|x| &x.summary).collect(),
            dir: &r.dir,
        }
    }
}

/// The runs' table as printed, with the folders after it. When a run has
/// several repetitions, Jain and utilization are "mean (worst)" (the
/// lowest repetition's); when the scenario has a late joiner or an RTT
/// change, a last column gives each repetition's time to fair. One
/// repetition without such an event: the table as it always was.
fn table_text(results: &[TableRun]) -> String {
    use rttfair_lab::results::runtable::{has_time_to_fair, time_to_fair_cell};
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(first) = results.first() else {
        return out;
    };
    let several = results.iter().any(|r| r.reps.len() > 1);
    let ttf = has_time_to_fair(results.iter().flat_map(|r| r.reps.iter().copied()));
    let (jw, uw) = if several { (13, 15) } else { (6, 7) };
    let groups: Vec<String> = first.mean.groups();
    let _ = write!(out, "{:<10}", "cca");
    for g in &groups {
        let _ = write!(out, " {:>12}", format!("{g} Mb/s"));
    }
    let _ = write!(
        out,
        " {:>6} {:>jw$} {:>6} {:>uw$} {:>9} {:>8} {:>8}",
        "ratio", "jain", "stdr", "util", "qdelay", "rtt p95", "retrans"
    );
    if ttf {
        out.push_str("  time to fair");
    }
    out.push('\n');
    for r in results {
        let s = r.mean;
        let reps: Vec<Summary> = r.reps.iter().map(|x| (*x).clone()).collect();
        let worst = run::worst_of(&reps);
        let _ = write!(out, "{:<10}", r.label);
        for g in &groups {
            let _ = write!(
                out,
                " {:>12.2}",
                s.goodput_mbit_by_group.get(g).copied().unwrap_or(0.0)
            );
        }
        let util = match worst {
            Some(w) if w.reps > 1 => format!(
                "{:.1}% ({:.1}%)",
                s.utilization * 100.0,
                w.utilization * 100.0
            ),
            _ => format!("{:.1}%", s.utilization * 100.0),
        };
        let _ = write!(
            out,
            " {:>6.2} {:>jw$} {:>6.2} {:>uw$} {:>7.1}ms {:>6.1}ms {:>7.2}%",
            s.group_ratio,
            rttfair_lab::results::gridtable::jain_cell(s, worst.as_ref()),
            s.stdr,
            util,
            s.qdelay_mean_ms,
            s.rtt_p95_ms,
            s.retrans_ratio * 100.0
        );
        if ttf {
            let _ = write!(out, "  {}", time_to_fair_cell(r.reps.iter().copied()));
        }
        out.push('\n');
    }
    for r in results {
        let _ = writeln!(out, "results: {}", r.dir.display());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;

    fn summary(jain: f64, util: f64) -> Summary {
        Summary {
            jain,
            utilization: util,
            group_ratio: 1.08,
            stdr: 0.04,
            qdelay_mean_ms: 4.6,
            rtt_p95_ms: 55.4,
            retrans_ratio: 0.0001,
            goodput_mbit_by_group: BTreeMap::from([
                ("long".to_string(), 9.13),
                ("short".to_string(), 9.82),
            ]),
            ..Summary::default()
        }
    }

    /// With one repetition per run, the table `lab compare` and the demo
    /// print (the demo's rows in README.md have this layout).
    #[test]
    fn one_repetition_prints_the_table_as_it_was() {
        let (q, b) = (summary(0.999, 0.99), summary(0.724, 0.984));
        let dir = PathBuf::from("lab-out/two-flow-deep-qfair");
        let rows = [
            TableRun {
                label: "qfair".into(),
                mean: &q,
                reps: vec![&q],
                dir: &dir,
            },
            TableRun {
                label: "bbr".into(),
                mean: &b,
                reps: vec![&b],
                dir: &dir,
            },
        ];
        assert_eq!(
            table_text(&rows),
            "cca           long Mb/s   short Mb/s  ratio   jain   stdr    util    qdelay  rtt p95  retrans\n\
             qfair              9.13         9.82   1.08  0.999   0.04   99.0%     4.6ms   55.4ms    0.01%\n\
             bbr                9.13         9.82   1.08  0.724   0.04   98.4%     4.6ms   55.4ms    0.01%\n\
             results: lab-out/two-flow-deep-qfair\n\
             results: lab-out/two-flow-deep-qfair\n"
        );
    }

    /// Three repetitions of a late joiner: Jain and utilization as mean
    /// (worst), each repetition's time to fair last; a run with one
    /// repetition shows its mean alone.
    #[test]
    fn several_repetitions_print_mean_worst_and_time_to_fair() {
        let with_ttf = |jain: f64, util: f64, seconds: Option<f64>| Summary {
            time_to_fair: Some(rttfair_lab::testkit::late_joiner_time_to_fair(0, seconds)),
            ..summary(jain, util)
        };
        let reps = [
            with_ttf(0.999, 0.99, Some(1.0)),
            with_ttf(0.93, 0.97, Some(10.0)),
            with_ttf(0.98, 0.98, None),
        ];
        let mean = rttfair_lab::results::summary::mean_summary(&reps);
        let one = with_ttf(0.7, 0.984, None);
        let dir = PathBuf::from("out");
        let rows = [
            TableRun {
                label: "qfair".into(),
                mean: &mean,
                reps: reps.iter().collect(),
                dir: &dir,
            },
            TableRun {
                label: "bbr".into(),
                mean: &one,
                reps: vec![&one],
                dir: &dir,
            },
        ];
        let text = table_text(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "cca           long Mb/s   short Mb/s  ratio          jain   stdr            util    qdelay  rtt p95  retrans  time to fair",
                "qfair              9.13         9.82   1.08 0.970 (0.930)   0.04   98.0% (97.0%)     4.6ms   55.4ms    0.01%  1 s / 10 s / never (60 s)",
                "bbr                9.13         9.82   1.08         0.700   0.04           98.4%     4.6ms   55.4ms    0.01%  never (60 s)",
            ]
        );
    }
}
