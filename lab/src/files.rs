//! The results folder: every CSV and JSON file the lab writes.
//!
//! CSV goes through the `csv` crate, so a field holding a comma or a quote
//! (a group name, say) is quoted and reads back as written; hand-joined
//! lines would split it.

use std::path::Path;

use anyhow::{Context, Result};

use crate::plan::Plan;
use crate::results::{RepResult, RunResult, SweepPoint};
use crate::scenario::Sweep;

/// A CSV file from a header and rows of already formatted fields.
fn write_csv<R, I>(path: &Path, header: &[String], rows: R) -> Result<()>
where
    R: IntoIterator<Item = I>,
    I: IntoIterator<Item = String>,
{
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("write {}", path.display()))?;
    w.write_record(header)?;
    for row in rows {
        w.write_record(row)?;
    }
    w.flush()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

fn header(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| c.to_string()).collect()
}

/// `rep<N>/`: goodput.csv, rtt.csv, queue.csv, bpf.csv (if the flows
/// exported samples) and the repetition's summary.json.
pub fn write_rep(dir: &Path, r: &RepResult) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    write_csv(
        &dir.join("goodput.csv"),
        &header(&["t", "flow", "group", "cca", "goodput_bps"]),
        r.flows.iter().flat_map(|f| {
            f.goodput.iter().map(move |(t, b)| {
                vec![
                    format!("{t:.3}"),
                    f.spec.index.to_string(),
                    f.spec.group.clone(),
                    f.spec.cca.clone(),
                    format!("{b:.0}"),
                ]
            })
        }),
    )?;
    write_csv(
        &dir.join("rtt.csv"),
        &header(&["t", "flow", "srtt_ms"]),
        r.flows.iter().flat_map(|f| {
            f.rtt_ms.iter().map(move |(t, v)| {
                vec![
                    format!("{t:.3}"),
                    f.spec.index.to_string(),
                    format!("{v:.3}"),
                ]
            })
        }),
    )?;
    write_csv(
        &dir.join("queue.csv"),
        &header(&[
            "t",
            "backlog_bytes",
            "qlen_packets",
            "drops",
            "sent_bytes",
            "sent_packets",
        ]),
        r.queue.iter().map(|q| {
            let st = &q.stats;
            vec![
                format!("{:.4}", q.t),
                st.backlog_bytes.to_string(),
                st.qlen.to_string(),
                st.drops.to_string(),
                st.bytes.to_string(),
                st.packets.to_string(),
            ]
        }),
    )?;
    if !r.bpf.is_empty() {
        let mut csv = csv::Writer::from_path(dir.join("bpf.csv"))?;
        for b in &r.bpf {
            csv.serialize(b)?;
        }
        csv.flush()?;
    }
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(r)?)?;
    Ok(())
}

/// The run's scenario.toml (the plan's scenario, as run).
pub fn write_scenario(dir: &Path, plan: &Plan) -> Result<()> {
    std::fs::write(
        dir.join("scenario.toml"),
        toml::to_string_pretty(&plan.scenario)?,
    )?;
    Ok(())
}

/// The run's summary.json.
pub fn write_run_summary(r: &RunResult) -> Result<()> {
    std::fs::write(r.dir.join("summary.json"), serde_json::to_string_pretty(r)?)?;
    Ok(())
}

/// sweep.csv (one row per point: its coordinates, the headline metrics and
/// each group's goodput) and sweep.json.
pub fn write_sweep(dir: &Path, sweep: &Sweep, points: &[SweepPoint]) -> Result<()> {
    let groups: Vec<String> = points
        .first()
        .map(|p| p.summary.goodput_mbit_by_group.keys().cloned().collect())
        .unwrap_or_default();
    let mut head = vec![
        "cca".to_string(),
        sweep.x.param.clone(),
        sweep
            .y
            .as_ref()
            .map(|a| a.param.clone())
            .unwrap_or_else(|| "-".into()),
    ];
    head.extend(header(&[
        "jain",
        "stdr",
        "group_ratio",
        "utilization",
        "qdelay_mean_ms",
        "rtt_p95_ms",
        "retrans_ratio",
    ]));
    head.extend(groups.iter().map(|g| format!("goodput_mbit_{g}")));
    let rows = points.iter().map(|p| {
        let s = &p.summary;
        let mut row = vec![
            p.cca.clone(),
            p.x.to_string(),
            p.y.map(|v| v.to_string()).unwrap_or_default(),
            format!("{:.4}", s.jain),
            format!("{:.4}", s.stdr),
            format!("{:.4}", s.group_ratio),
            format!("{:.4}", s.utilization),
            format!("{:.3}", s.qdelay_mean_ms),
            format!("{:.3}", s.rtt_p95_ms),
            format!("{:.5}", s.retrans_ratio),
        ];
        row.extend(groups.iter().map(|g| {
            format!(
                "{:.3}",
                s.goodput_mbit_by_group.get(g).copied().unwrap_or(0.0)
            )
        }));
        row
    });
    write_csv(&dir.join("sweep.csv"), &head, rows)?;
    std::fs::write(
        dir.join("sweep.json"),
        serde_json::to_string_pretty(points)?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{FlowResult, Summary};
    use crate::scenario::FlowSpec;

    fn flow(group: &str) -> FlowResult {
        FlowResult {
            spec: FlowSpec {
                index: 0,
                group: group.into(),
                cca: "cubic".into(),
                rtt_ms: 20.0,
                loss_pct: 0.0,
                start_s: 0.0,
                stop_s: 10.0,
                jitter_ms: 0.0,
                ack_batch_ms: 0.0,
                rtt_change: None,
            },
            goodput: vec![(1.0, 5e6), (2.0, 6e6)],
            rtt_ms: vec![(1.0, 21.5)],
            retransmits: 0,
            bytes_received: 0,
            mean_goodput: 5.5e6,
            congestion: "cubic".into(),
        }
    }

    fn read(path: &Path) -> Vec<Vec<String>> {
        csv::Reader::from_path(path)
            .unwrap()
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect()
    }

    #[test]
    fn a_group_name_with_a_comma_round_trips() {
        let dir = std::env::temp_dir().join(format!("rttfair-files-{}", std::process::id()));
        let group = "mice, \"short\" ones";
        let rep = RepResult {
            flows: vec![flow(group)],
            queue: vec![],
            bpf: vec![],
            summary: Summary::default(),
        };
        write_rep(&dir, &rep).unwrap();
        let rows = read(&dir.join("goodput.csv"));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], ["1.000", "0", group, "cubic", "5000000"]);

        let mut summary = Summary::default();
        summary.goodput_mbit_by_group.insert(group.into(), 5.5);
        let sweep: Sweep =
            toml::from_str("x = { param = \"bottleneck.buffer.bdp\", values = [1.0] }").unwrap();
        let point = SweepPoint {
            cca: "cubic".into(),
            x: 1.0,
            y: None,
            summary,
        };
        write_sweep(&dir, &sweep, &[point]).unwrap();
        let mut r = csv::Reader::from_path(dir.join("sweep.csv")).unwrap();
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(head.len(), 11, "{head:?}");
        assert_eq!(head[10], format!("goodput_mbit_{group}"));
        let row = r.records().next().unwrap().unwrap();
        assert_eq!(row.len(), 11);
        assert_eq!(&row[10], "5.500");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
