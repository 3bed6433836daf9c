//! `rttfairctl demo`: the main job a newcomer runs first.
//!
//! Loads the project's CCAs, starts the metrics daemon, and runs the
//! embedded two-flow scenario (10 ms vs 50 ms RTT through a deep drop-tail
//! buffer) once per congestion control: qfair (the project's RTT-fair CCA)
//! first, then what it is measured against: native bbr, bbr3 (BBR v3 as a
//! BPF CCA), cubic, bbr1, and the published fixes FaiRTT and Ad-BBR. Prints the side-by-side table,
//! where the plots are, and leaves the host as it found it unless asked to
//! keep the CCAs loaded.
//!
//! `--aqm` runs the same two flows behind FQ-CoDel (RFC 8290's defaults,
//! 64 flow queues, ECN off: most of the CCAs shown ignore CE) instead of the drop-tail
//! buffer, and adds what the discipline did to each flow (drops and the
//! mean sojourn in its queue).

use std::path::PathBuf;

use anyhow::{Context, Result};
use rttfair_lab::net::ccas::CcaSession;
use rttfair_lab::net::daemon_child::{free_loopback_port, DaemonChild};
use rttfair_lab::results::AqmFlow;
use rttfair_lab::run::{self, RunOptions, RunResult};
use rttfair_lab::scenario::aqm::MAX_FLOWS;
use rttfair_lab::scenario::builtin;
use rttfair_lab::scenario::Scenario;
use rttfair_loader::BpfFs;

/// The demo's options.
pub struct DemoOptions {
    pub seconds: Option<f64>,
    pub keep_loaded: bool,
    pub out: PathBuf,
    /// Print only the results, as one JSON document (the tour's text and
    /// progress go to stderr).
    pub json: bool,
    /// The two flows behind FQ-CoDel instead of the drop-tail buffer.
    pub aqm: bool,
}

/// The CCAs the demo compares, in the order shown.
pub const CCAS: [&str; 7] = ["qfair", "bbr", "bbr3", "cubic", "bbr1", "fairtt", "adbbr"];

/// The project CCAs among them, loaded for the demo.
const PROJECT: [&str; 5] = ["qfair", "bbr3", "bbr1", "fairtt", "adbbr"];

pub fn run(fs: &BpfFs, opts: &DemoOptions) -> Result<()> {
    let scenario = scenario(opts.seconds, opts.aqm)?;
    // With --json, stdout carries only the JSON document.
    let say = |line: String| {
        if opts.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    say(
        "rttfair demo: qfair, RTT-fair congestion control, against BBR (v1, v3), cubic, FaiRTT and Ad-BBR"
            .to_string(),
    );
    say(format!(
        "scenario: {} ({} s per CCA; {} {} kB)",
        scenario.description,
        scenario.duration_s,
        if opts.aqm {
            "drop-tail backstop per queue"
        } else {
            "buffer"
        },
        scenario.buffer_bytes() / 1000
    ));
    let names: Vec<String> = PROJECT.map(String::from).to_vec();
    let mut session = CcaSession::ensure(fs, &names)?;
    if opts.keep_loaded {
        session.keep();
    }
    // The live metrics are a view on the demo, not part of it: without
    // them the demo runs on.
    let daemon = match start_daemon(fs) {
        Ok(d) => {
            let port = d.port();
            say(format!("live per-flow metrics while it runs: http://127.0.0.1:{port}/metrics  (try: curl -s 127.0.0.1:{port}/metrics | grep rttfair_flow_throughput)"));
            Some(d)
        }
        Err(e) => {
            say(format!("(no live metrics: {e:#})"));
            None
        }
    };
    let ropts = RunOptions {
        out_dir: opts.out.clone(),
        bpffs: fs.clone(),
        progress: true,
        verbose: false,
    };
    let mut results = Vec::new();
    for cca in CCAS {
        results.push(
            run::run(&scenario.with_cca(cca), &ropts).with_context(|| format!("run with {cca}"))?,
        );
    }
    drop(daemon);
    if opts.json {
        return crate::lab::report(&results, true);
    }
    println!();
    crate::lab::print_table(&results);
    println!();
    println!("How to read it: 'short'/'long' are the mean goodputs of the 10 ms and 50 ms flows;");
    println!("ratio = short/long (1.0 is fair, < 1 means the long-RTT flow takes more); jain is");
    println!("Jain's index (1 = fair, 0.5 = one flow has everything); util is the share of the");
    println!(
        "bottleneck's goodput capacity used; qdelay the mean queueing delay at the bottleneck."
    );
    if opts.aqm {
        println!();
        let groups = results
            .first()
            .map(|r| r.summary.groups())
            .unwrap_or_default();
        let rows: Vec<AqmRow> = results.iter().map(AqmRow::of).collect();
        print!("{}", aqm_table_text(&groups, &rows));
        println!();
        println!("{AQM_READING}");
    }
    println!("Plots (goodput per flow, queue over time): <results>/rep0/throughput.png, queue.png");
    if opts.keep_loaded {
        println!(
            "{} stay loaded (--keep-loaded); `rttfairctl unload {}` removes them.",
            PROJECT.join(", "),
            PROJECT.join(" ")
        );
    }
    Ok(())
}

/// How to read `--aqm`'s second table.
const AQM_READING: &str = "\
FQ-CoDel gives each flow its own queue and serves the queues in turn (the split is
the scheduler's), and starts dropping from a queue once its packets' sojourn has
stayed over 5 ms for 100 ms (ECN off: most of these CCAs ignore CE marks). 'drops'
counts those per flow, 'sojourn' is the mean time a flow's packets waited in its
queue, both over the window of the table above.";

/// The seconds per CCA `demo --seconds` accepts: at least a few round
/// trips of the 50 ms flow after the warm-up, and at most ten minutes per
/// CCA (seven CCAs run one after the other); whole seconds (iperf3's
/// `-t`). The only bound on the option.
pub const SECONDS: std::ops::RangeInclusive<f64> = 5.0..=600.0;

/// The name `--aqm` gives the demo's scenario (its run folders'
/// prefix, so they sit beside the drop-tail demo's, not over them).
const AQM_NAME: &str = "two-flow-deep-fq-codel";

/// The demo's scenario (the embedded two-flow-deep), `seconds` long per
/// CCA when given, with `aqm` behind FQ-CoDel at RFC 8290's defaults but
/// 64 flow queues (the scenario's buffer stays as each queue's drop-tail
/// backstop);
/// refused, before anything is loaded, if `seconds` is outside
/// [`SECONDS`].
fn scenario(seconds: Option<f64>, aqm: bool) -> Result<Scenario> {
    let mut scenario = builtin::resolve("two-flow-deep")?;
    if aqm {
        scenario.name = AQM_NAME.to_string();
        scenario.description = format!("{}, behind FQ-CoDel", scenario.description);
        scenario.bottleneck.aqm = Some("fq_codel".to_string());
        // The lab's most flow queues (RFC 8290 has 1024): the two flows
        // share one only if they hash to it, 1 in 64.
        scenario.bottleneck.flows = Some(i64::from(MAX_FLOWS));
    }
    if let Some(s) = seconds {
        if !SECONDS.contains(&s) || s.fract() != 0.0 {
            anyhow::bail!(
                "--seconds must be whole seconds between {} and {}, got {s}",
                SECONDS.start(),
                SECONDS.end()
            );
        }
        scenario.set_duration(s);
    }
    // Any duration in SECONDS makes a valid scenario; this guards the
    // embedded scenario itself.
    scenario
        .validate()
        .map_err(|e| anyhow::anyhow!("{}: {e}", scenario.name))?;
    Ok(scenario)
}

/// `rttfairctl daemon` (this binary) for the demo's duration, on 9977 or
/// another free loopback port, with per-flow series on (the demo has two
/// flows at a time, and the point is to watch them); answering when this
/// returns, so the address printed works at once.
fn start_daemon(fs: &BpfFs) -> Result<DaemonChild> {
    let port = free_loopback_port(&[9977])?;
    DaemonChild::start(&std::env::current_exe()?, fs, port, "per_flow = \"all\"\n")
}

/// What the discipline did to one run's flows: its label and, per flow
/// of each repetition, the flow's group and counters.
struct AqmRow {
    label: String,
    flows: Vec<(String, AqmFlow)>,
}

impl AqmRow {
    fn of(r: &RunResult) -> AqmRow {
        let group = |rep: &rttfair_lab::run::RepResult, flow: usize| {
            rep.flows
                .iter()
                .find(|f| f.spec.index == flow)
                .map(|f| f.spec.group.clone())
                .unwrap_or_default()
        };
        AqmRow {
            label: run::label_of(&r.scenario),
            flows: r
                .reps
                .iter()
                .flat_map(|rep| rep.aqm.iter().map(move |a| (group(rep, a.flow), a.clone())))
                .collect(),
        }
    }
}

/// What the discipline did to each flow, one row per CCA: per group (in
/// the main table's order, `groups`) its drops and mean sojourn over the
/// measured window, summed (drops) or averaged (sojourn, weighted by the
/// packets judged) over the repetitions and the group's flows; `-` for a
/// group with no packet judged. No marks: the demo runs FQ-CoDel with
/// ECN off.
fn aqm_table_text(groups: &[String], rows: &[AqmRow]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = write!(out, "{:<10}", "cca");
    for g in groups {
        let _ = write!(
            out,
            " {:>12} {:>14}",
            format!("{g} drops"),
            format!("{g} sojourn")
        );
    }
    out.push('\n');
    for r in rows {
        let _ = write!(out, "{:<10}", r.label);
        for g in groups {
            let (mut drops, mut judged, mut sojourn) = (0u64, 0u64, 0.0);
            for (_, a) in r.flows.iter().filter(|(fg, _)| fg == g) {
                let n = a.packets.saturating_sub(a.unstamped);
                drops += a.drops;
                judged += n;
                sojourn += a.mean_sojourn_ms * n as f64;
            }
            let sojourn = if judged > 0 {
                format!("{:.1}ms", sojourn / judged as f64)
            } else {
                "-".to_string()
            };
            let _ = write!(out, " {drops:>12} {sojourn:>14}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use rttfair_lab::run::Summary;

    use rttfair_lab::results::AqmFlow;
    use rttfair_lab::scenario::aqm::{self, Discipline};

    use super::{aqm_table_text, scenario, AqmRow, AQM_NAME, CCAS};
    use crate::lab::{runs_json, RunDoc};

    /// `demo --json` prints one array with a `{cca, dir, reps, scenario,
    /// summary, worst}` object per CCA, in the order of the table, and the
    /// summary reads back as the lab's `Summary`. Built from the demo's own scenario and the
    /// document type `report` prints, so no run (and no kernel) is needed.
    #[test]
    fn json_document_is_one_object_per_cca_in_table_order() {
        let s = scenario(Some(8.0), false).unwrap();
        let summary = Summary {
            jain: 0.999,
            group_ratio: 1.05,
            goodput_mbit_by_group: BTreeMap::from([
                ("long".to_string(), 9.24),
                ("short".to_string(), 9.70),
            ]),
            utilization: 0.99,
            qdelay_mean_ms: 4.9,
            ..Summary::default()
        };
        let runs: Vec<_> = CCAS
            .iter()
            .map(|c| (s.with_cca(c), PathBuf::from(format!("lab-out/demo/{c}"))))
            .collect();
        let docs: Vec<RunDoc> = runs
            .iter()
            .map(|(sc, dir)| RunDoc::new(sc, &summary, vec![&summary], dir))
            .collect();
        let text = runs_json(&docs).unwrap();
        // Keys in name order at every level, the summary's too.
        assert!(
            text.starts_with(r#"[{"cca":"qfair","dir":"#)
                && text.contains(r#""summary":{"arrivals_lost":"#),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let runs = v.as_array().expect("one JSON array");
        assert_eq!(runs.len(), CCAS.len(), "{text}");
        for (doc, cca) in runs.iter().zip(CCAS) {
            let keys: Vec<&str> = doc
                .as_object()
                .expect("each run is an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                ["cca", "dir", "reps", "scenario", "summary", "worst"],
                "{doc}"
            );
            assert_eq!(doc["cca"], cca);
            assert_eq!(doc["scenario"], "two-flow-deep");
            assert_eq!(doc["dir"], format!("lab-out/demo/{cca}"));
            let back: Summary = serde_json::from_value(doc["summary"].clone()).unwrap();
            assert_eq!(back, summary);
            // One repetition: it is the summary, and its own worst.
            let reps: Vec<Summary> = serde_json::from_value(doc["reps"].clone()).unwrap();
            assert_eq!(reps, std::slice::from_ref(&summary));
            assert_eq!(doc["worst"]["jain"], summary.jain);
            assert_eq!(doc["worst"]["reps"], 1);
        }
    }

    /// `--seconds` outside 5..=600 (NaN too) or not whole (iperf3 would
    /// cut it) is refused by the one check,
    /// before the demo loads anything, naming the option and its range;
    /// both ends are accepted and set the scenario's duration.
    #[test]
    fn a_bad_duration_is_refused_naming_the_option() {
        for aqm in [false, true] {
            for bad in [0.0, -1.0, 4.9, 600.5, 4000.0, 12.5, f64::NAN, f64::INFINITY] {
                let e = scenario(Some(bad), aqm).unwrap_err().to_string();
                assert!(
                    e.starts_with("--seconds must be whole seconds between 5 and 600, got ")
                        && !e.contains('\n'),
                    "{bad}: {e}"
                );
            }
            for good in [5.0, 600.0] {
                assert_eq!(scenario(Some(good), aqm).unwrap().duration_s, good);
            }
        }
        assert_eq!(scenario(None, false).unwrap().name, "two-flow-deep");
        assert_eq!(scenario(None, true).unwrap().name, AQM_NAME);
    }

    /// `--aqm` is the plain demo's two flows (RTTs, groups, rate, buffer,
    /// duration) behind FQ-CoDel at RFC 8290's defaults (the lab's 64
    /// queues for its 1024) with ECN off, so
    /// every CCA the demo shows may run it; the plain demo has no
    /// discipline; the two write to different run folders.
    #[test]
    fn aqm_is_the_same_two_flows_behind_fq_codel() {
        let plain = scenario(Some(20.0), false).unwrap();
        let fq = scenario(Some(20.0), true).unwrap();
        assert_eq!(plain.bottleneck.discipline().unwrap(), Discipline::Fifo);
        assert_eq!(
            fq.bottleneck.discipline().unwrap(),
            Discipline::FqCodel {
                target_ms: aqm::DEFAULT_TARGET_MS,
                interval_ms: aqm::DEFAULT_INTERVAL_MS,
                ecn: false,
                quantum: aqm::DEFAULT_QUANTUM,
                flows: aqm::MAX_FLOWS,
            }
        );
        let flows = |s: &rttfair_lab::scenario::Scenario| {
            s.flows()
                .iter()
                .map(|f| (f.group.clone(), f.rtt_ms))
                .collect::<Vec<_>>()
        };
        assert_eq!(flows(&fq), flows(&plain));
        assert_eq!(fq.bottleneck.rate_mbit, plain.bottleneck.rate_mbit);
        assert_eq!(fq.buffer_bytes(), plain.buffer_bytes());
        assert_eq!(
            (fq.duration_s, fq.warmup_s),
            (plain.duration_s, plain.warmup_s)
        );
        assert!(!fq.tcp_ecn);
        assert_ne!(fq.name, plain.name);
        for cca in CCAS {
            fq.with_cca(cca)
                .validate()
                .unwrap_or_else(|e| panic!("{cca}: {e}"));
        }
    }

    /// The discipline's table: per group, the drops of its flows over the
    /// repetitions added up and their sojourn weighted by the packets
    /// judged (unstamped ones are not); a group with no packet judged
    /// shows `-`.
    #[test]
    fn aqm_table_adds_up_each_group_over_repetitions() {
        let flow = |flow, packets, unstamped, drops, sojourn| AqmFlow {
            flow,
            packets,
            drops,
            marks: 0,
            unstamped,
            mean_sojourn_ms: sojourn,
        };
        let rows = [
            AqmRow {
                label: "qfair".into(),
                flows: vec![
                    ("short".into(), flow(0, 1000, 0, 3, 2.0)),
                    ("long".into(), flow(1, 1000, 0, 1, 4.0)),
                    // A second repetition.
                    ("short".into(), flow(0, 3010, 10, 5, 6.0)),
                    ("long".into(), flow(1, 0, 0, 0, 0.0)),
                ],
            },
            AqmRow {
                label: "cubic".into(),
                flows: vec![("short".into(), flow(0, 10, 0, 0, 1.5))],
            },
        ];
        let groups = ["long".to_string(), "short".to_string()];
        let text = aqm_table_text(&groups, &rows);
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines,
            [
                vec![
                    "cca", "long", "drops", "long", "sojourn", "short", "drops", "short", "sojourn"
                ],
                // short: (1000 x 2 + 3000 x 6) / 4000 = 5 ms; 8 drops.
                vec!["qfair", "1", "4.0ms", "8", "5.0ms"],
                vec!["cubic", "0", "-", "0", "1.5ms"],
            ],
            "{text}"
        );
    }

    /// `demo --aqm --json` (and `lab run --json` of a run behind a
    /// discipline) carries each repetition's counters per flow under
    /// `aqm`, first in name order; a run without a discipline has no such
    /// key (the plain demo's document is unchanged).
    #[test]
    fn json_document_carries_the_discipline_counters() {
        let s = scenario(Some(8.0), true).unwrap();
        let summary = Summary::default();
        let flows = [AqmFlow {
            flow: 1,
            packets: 100,
            drops: 2,
            mean_sojourn_ms: 3.5,
            ..AqmFlow::default()
        }];
        let dir = PathBuf::from("lab-out/demo/qfair");
        let doc = RunDoc {
            aqm: vec![&flows],
            ..RunDoc::new(&s, &summary, vec![&summary], &dir)
        };
        let text = runs_json(&[doc]).unwrap();
        assert!(
            text.starts_with(
                r#"[{"aqm":[[{"drops":2,"flow":1,"marks":0,"mean_sojourn_ms":3.5,"packets":100,"unstamped":0}]],"cca":"bbr","#
            ),
            "{text}"
        );
        let plain = RunDoc {
            aqm: vec![&[]],
            ..RunDoc::new(&s, &summary, vec![&summary], &dir)
        };
        assert!(runs_json(&[plain]).unwrap().starts_with(r#"[{"cca":"#));
    }
}
