//! `rttfairctl demo`: the main job a newcomer runs first.
//!
//! Loads the project's CCAs, starts the metrics daemon, and runs the
//! embedded two-flow scenario (10 ms vs 50 ms RTT through a deep drop-tail
//! buffer) once per congestion control: qfair (the project's RTT-fair CCA)
//! first, then what it is measured against: native bbr, bbr3 (BBR v3 as a
//! BPF CCA), cubic, bbr1, and the published fixes FaiRTT and Ad-BBR. Prints the side-by-side table,
//! where the plots are, and leaves the host as it found it unless asked to
//! keep the CCAs loaded.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rttfair_lab::net::ccas::CcaSession;
use rttfair_lab::net::daemon_child::{free_loopback_port, DaemonChild};
use rttfair_lab::run::{self, RunOptions};
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
}

/// The CCAs the demo compares, in the order shown.
pub const CCAS: [&str; 7] = ["qfair", "bbr", "bbr3", "cubic", "bbr1", "fairtt", "adbbr"];

/// The project CCAs among them, loaded for the demo.
const PROJECT: [&str; 5] = ["qfair", "bbr3", "bbr1", "fairtt", "adbbr"];

pub fn run(fs: &BpfFs, opts: &DemoOptions) -> Result<()> {
    let scenario = scenario(opts.seconds)?;
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
        "scenario: {} ({} s per CCA; buffer {} kB)",
        scenario.description,
        scenario.duration_s,
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

/// The seconds per CCA `demo --seconds` accepts: at least a few round
/// trips of the 50 ms flow after the warm-up, and at most ten minutes per
/// CCA (seven CCAs run one after the other); whole seconds (iperf3's
/// `-t`). The only bound on the option.
pub const SECONDS: std::ops::RangeInclusive<f64> = 5.0..=600.0;

/// The demo's scenario (the embedded two-flow-deep), `seconds` long per
/// CCA when given; refused, before anything is loaded, if `seconds` is
/// outside [`SECONDS`].
fn scenario(seconds: Option<f64>) -> Result<Scenario> {
    let mut scenario = builtin::resolve("two-flow-deep")?;
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
        .map_err(|e| anyhow::anyhow!("two-flow-deep: {e}"))?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use rttfair_lab::run::Summary;

    use super::{scenario, CCAS};
    use crate::lab::{runs_json, RunDoc};

    /// `demo --json` prints one array with a `{cca, dir, reps, scenario,
    /// summary, worst}` object per CCA, in the order of the table, and the
    /// summary reads back as the lab's `Summary`. Built from the demo's own scenario and the
    /// document type `report` prints, so no run (and no kernel) is needed.
    #[test]
    fn json_document_is_one_object_per_cca_in_table_order() {
        let s = scenario(Some(8.0)).unwrap();
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
        for bad in [0.0, -1.0, 4.9, 600.5, 4000.0, 12.5, f64::NAN, f64::INFINITY] {
            let e = scenario(Some(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with("--seconds must be whole seconds between 5 and 600, got "),
                "{bad}: {e}"
            );
        }
        for good in [5.0, 600.0] {
            assert_eq!(scenario(Some(good)).unwrap().duration_s, good);
        }
        assert_eq!(scenario(None).unwrap().name, "two-flow-deep");
    }
}
