//! Sweep expansion: a scenario's `[sweep]` table and a list of CCAs become
//! one [`Plan`] per grid point, directly from the parsed scenario (no text
//! is printed and parsed again).

use serde::Serialize;

use crate::scenario::plan::Plan;
use crate::scenario::{Scenario, ScenarioError, Sweep};

/// Where a point sits in the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointKey {
    pub cca: String,
    pub x: f64,
    pub y: Option<f64>,
}

/// One point of the grid, ready to run.
#[derive(Debug, Clone)]
pub struct PointPlan {
    pub key: PointKey,
    pub plan: Plan,
}

/// Every point of `sweep` over `base`, for each CCA in `ccas`, in the
/// order a sweep runs them: CCA, then y, then x.
pub fn expand(
    base: &Scenario,
    sweep: &Sweep,
    ccas: &[String],
) -> Result<Vec<PointPlan>, ScenarioError> {
    let ys: Vec<Option<f64>> = match &sweep.y {
        Some(a) => a.values.iter().map(|v| Some(*v)).collect(),
        None => vec![None],
    };
    for cca in ccas {
        check_cca_name(base, cca)?;
    }
    let mut out = Vec::new();
    // Each CCA's points with its own tunables (inherited by every point).
    for (cca, with_cca) in ccas.iter().zip(base.with_ccas(ccas)?) {
        for y in &ys {
            for x in &sweep.x.values {
                let mut s = with_cca.with_param(&sweep.x.param, *x)?;
                if let (Some(a), Some(yv)) = (&sweep.y, y) {
                    s = s.with_param(&a.param, *yv)?;
                }
                s.name = match y {
                    Some(yv) => format!("{}-x{}-y{}", base.name, x, yv),
                    None => format!("{}-x{}", base.name, x),
                };
                out.push(PointPlan {
                    key: PointKey {
                        cca: cca.clone(),
                        x: *x,
                        y: *y,
                    },
                    plan: Plan::resolve(&s)?,
                });
            }
        }
    }
    Ok(out)
}

/// A `--cca` name the scenario refuses (`'a b'`, `''`), named by the
/// option that gave it: found per point, it was blamed on the first sweep
/// value it met ("bottleneck.buffer.bdp = 0.5 makes flows[0].cca: ...").
/// Other errors are left to the points, which name their axis.
fn check_cca_name(base: &Scenario, cca: &str) -> Result<(), ScenarioError> {
    match base.with_cca(cca).validate() {
        Err(e) if e.field == "cca" || e.field.ends_with(".cca") => Err(ScenarioError {
            field: "--cca".into(),
            line: None,
            reason: e.reason,
        }),
        _ => Ok(()),
    }
}

/// Seconds a point costs beyond its repetitions: building the network, the
/// self-check (RTT probes and a 4 s backlogged-rate load) and writing the
/// results, once per point; about 8 s on this project's VM (ci-smoke's
/// 10 s run takes about 18 s). Each repetition adds its duration and the
/// 0.5 s the run waits for the queue to drain.
pub const POINT_OVERHEAD_S: f64 = 8.0;

/// Machine time one point takes, seconds (an estimate: see
/// [`POINT_OVERHEAD_S`]).
pub fn point_seconds(p: &PointPlan) -> f64 {
    POINT_OVERHEAD_S + p.plan.repetitions as f64 * (p.plan.duration_s + 0.5)
}

/// Machine time of a list of points, hours.
pub fn machine_hours(points: &[PointPlan]) -> f64 {
    points.iter().map(point_seconds).sum::<f64>() / 3600.0
}

/// One machine's share of a sweep: `--shard I/N` runs the points whose
/// position in [`expand`]'s order is I modulo N (0-based I). Every point
/// is one plan with all its repetitions, so they stay together; the same
/// scenario and CCA list give every machine the same order, so N shards
/// partition the grid exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(spec: &str) -> Result<Shard, String> {
        let bad = |why: &str| format!("bad shard '{spec}': {why} (expected I/N with 0 <= I < N)");
        let (i, n) = spec.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: u32 = i.trim().parse().map_err(|_| bad("I is not a number"))?;
        let count: u32 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index >= count {
            return Err(bad("I must be less than N"));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The points of this shard, in their order.
    pub fn select(&self, points: Vec<PointPlan>) -> Vec<PointPlan> {
        points
            .into_iter()
            .enumerate()
            .filter(|(k, _)| self.holds(*k))
            .map(|(_, p)| p)
            .collect()
    }

    /// Whether the grid's `k`-th point (in [`expand`]'s order) is this
    /// shard's: the one rule that partitions a grid, for [`Shard::select`]
    /// and for test fixtures that must number the points they write.
    pub fn holds(&self, k: usize) -> bool {
        k as u64 % self.count as u64 == self.index as u64
    }
}

/// What `lab run` and `lab compare` say of a scenario with a `[sweep]`
/// table (on stderr, before running): they run its base values, one
/// scenario, not the grid, and whether those are a point of the grid.
/// `None` without a `[sweep]` table. (A note, not a refusal: the
/// documented measurements run such scenarios' base with `lab compare`.)
pub fn base_note(s: &Scenario) -> Option<String> {
    let sweep = s.sweep.as_ref()?;
    let mut base = s.clone();
    base.sweep = None;
    let text = |s: &Scenario| toml::to_string(s).ok();
    let ys: Vec<Option<f64>> = match &sweep.y {
        Some(a) => a.values.iter().map(|v| Some(*v)).collect(),
        None => vec![None],
    };
    let is = |x: f64, y: Option<f64>| {
        let mut p = base.with_param(&sweep.x.param, x).ok()?;
        if let (Some(a), Some(yv)) = (&sweep.y, y) {
            p = p.with_param(&a.param, yv).ok()?;
        }
        (text(&p)? == text(&base)?).then_some(())
    };
    let point = ys
        .iter()
        .flat_map(|y| sweep.x.values.iter().map(move |x| (*x, *y)))
        .find(|(x, y)| is(*x, *y).is_some());
    let which = match point {
        Some((x, None)) => format!("the grid's point x={x}"),
        Some((x, Some(y))) => format!("the grid's point x={x} y={y}"),
        None => "not a point of its grid".to_string(),
    };
    Some(format!(
        "note: {} has a [sweep] table: this runs its base values only ({which}); `lab sweep` runs the grid",
        s.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_points_exactly() {
        let s = Scenario::from_toml(&grid()).unwrap();
        let ccas = ["bbr".to_string(), "cubic".to_string()];
        let all = expand(&s, s.sweep.as_ref().unwrap(), &ccas).unwrap();
        for n in 1..=14u32 {
            let mut seen: Vec<PointKey> = Vec::new();
            for i in 0..n {
                let shard: Shard = format!("{i}/{n}").parse().unwrap();
                let mine = shard.select(expand(&s, s.sweep.as_ref().unwrap(), &ccas).unwrap());
                // Balanced to within one point.
                assert!(mine.len().abs_diff(all.len() / n as usize) <= 1);
                seen.extend(mine.into_iter().map(|p| p.key));
            }
            assert_eq!(seen.len(), all.len(), "N = {n}");
            for p in &all {
                assert_eq!(seen.iter().filter(|k| **k == p.key).count(), 1, "N = {n}");
            }
        }
    }

    #[test]
    fn machine_hours_add_up_over_shards() {
        let s = Scenario::from_toml(&grid()).unwrap();
        let ccas = ["bbr".to_string()];
        let all = expand(&s, s.sweep.as_ref().unwrap(), &ccas).unwrap();
        // 6 points of 1 repetition of 10 s.
        let per_point = POINT_OVERHEAD_S + 10.5;
        assert!((machine_hours(&all) - 6.0 * per_point / 3600.0).abs() < 1e-9);
        let shards: f64 = (0..4)
            .map(|i| {
                machine_hours(
                    &Shard { index: i, count: 4 }
                        .select(expand(&s, s.sweep.as_ref().unwrap(), &ccas).unwrap()),
                )
            })
            .sum();
        assert!((shards - machine_hours(&all)).abs() < 1e-9);
    }

    /// A bad `--cca` name is named as one, before any point (it used to
    /// read "...: bottleneck.buffer.bdp = 0.5 makes flows[0].cca: ...").
    #[test]
    fn a_bad_cca_name_names_the_option() {
        let s = Scenario::from_toml(&grid()).unwrap();
        let sweep = s.sweep.as_ref().unwrap();
        for bad in ["a b", ""] {
            let e = expand(&s, sweep, &["cubic".into(), bad.into()]).unwrap_err();
            assert_eq!(e.field, "--cca", "{e}");
            let text = e.to_string();
            assert!(
                text.starts_with("--cca: not a congestion control name"),
                "{text}"
            );
            assert!(!text.contains("makes") && !text.contains("bdp"), "{text}");
        }
    }

    #[test]
    fn bad_shard_specs_are_one_clear_line() {
        for spec in ["3/2", "2/2", "1/0", "a/2", "1-2", "1/b", "-1/2", ""] {
            let e = spec.parse::<Shard>().unwrap_err();
            assert!(
                !e.contains('\n') && e.starts_with("bad shard"),
                "{spec}: {e}"
            );
        }
        assert_eq!("1/3".parse(), Ok(Shard { index: 1, count: 3 }));
    }

    /// The lab tests' grid (2 buffers x 3 RTTs of the second flow), one
    /// repetition, named "g".
    fn grid() -> String {
        crate::testkit::grid_toml("g", 1, None, &[10, 40, 80])
    }

    #[test]
    fn expands_every_point_to_a_resolved_plan() {
        let s = Scenario::from_toml(&grid()).unwrap();
        let ccas = ["bbr".to_string(), "cubic".to_string()];
        let points = expand(&s, s.sweep.as_ref().unwrap(), &ccas).unwrap();
        assert_eq!(points.len(), 2 * 3 * 2);
        let p = &points[7]; // cubic, y = 10, x = 2
        assert_eq!(
            p.key,
            PointKey {
                cca: "cubic".into(),
                x: 2.0,
                y: Some(10.0)
            }
        );
        assert_eq!(p.plan.scenario.name, "g-x2-y10");
        assert_eq!(p.plan.flows[1].rtt_ms, 10.0);
        assert_eq!(p.plan.flows[0].rtt_ms, 20.0);
        assert_eq!(p.plan.label, "cubic");
        // 2 BDP of 10 Mbit/s x 20 ms.
        assert_eq!(p.plan.buffer_bytes, 50_000);
        assert!(p.plan.scenario.sweep.is_none());
        assert_eq!(points[0].plan.label, "bbr");
    }

    /// A path-growth grid: the new RTT on x, the ramp's length on y, both
    /// fields of `flows[1].rtt_change`; every point resolves to a plan
    /// whose flow carries both, the rest of the change as written.
    #[test]
    fn a_sweep_over_an_rtt_change_resolves() {
        let text = r#"
name = "grow"
duration_s = 90
[bottleneck]
rate_mbit = 50
buffer = { bdp = 1.0, rtt_ms = 200.0 }
[[flows]]
cca = "qfair"
rtt_ms = 20
[[flows]]
cca = "qfair"
rtt_ms = 200
rtt_change = { at_s = 20.0, rtt_ms = 210.0 }
[sweep]
x = { param = "flows[1].rtt_change.rtt_ms", values = [210, 220, 230] }
y = { param = "flows[1].rtt_change.over_s", values = [0, 10] }
"#;
        let s = Scenario::from_toml(text).unwrap();
        let points = expand(&s, s.sweep.as_ref().unwrap(), &["cubic".to_string()]).unwrap();
        assert_eq!(points.len(), 6);
        for p in &points {
            let c = p.plan.flows[1].rtt_change.unwrap();
            assert_eq!(
                (c.at_s, c.rtt_ms, c.over_s),
                (20.0, p.key.x, p.key.y.unwrap())
            );
            assert_eq!(p.plan.flows[1].rtt_ms, 200.0);
            assert!(p.plan.flows[0].rtt_change.is_none());
        }
        assert_eq!(points[4].plan.scenario.name, "grow-x220-y10");
        // A ramp that would outlast the run is refused at its point.
        let e = Scenario::from_toml(&text.replace("[0, 10]", "[0, 71]")).unwrap_err();
        assert_eq!(e.field, "sweep.y.values[1]", "{e}");
        assert!(
            e.reason.contains("flows[1].rtt_change.over_s = 71 makes"),
            "{e}"
        );
    }

    /// Every point of a sweep inherits the scenario's tunables, each CCA's
    /// points their own CCA's only; a tunable of a CCA `--cca` does not
    /// name is refused before any point is made.
    #[test]
    fn points_inherit_their_ccas_tunables() {
        let text = grid().replace(
            "cca = \"cubic\"\nrtt_ms = 20\n[sweep]",
            "cca = \"qfair\"\nrtt_ms = 20\n[sweep]",
        ) + "[tunables]\n\"qfair.exit_drains\" = 3\n";
        let s = Scenario::from_toml(&text).unwrap();
        let sweep = s.sweep.as_ref().unwrap();
        let ccas = ["qfair".to_string(), "cubic".to_string()];
        let points = expand(&s, sweep, &ccas).unwrap();
        assert_eq!(points.len(), 2 * 2 * 3);
        let tuned = crate::scenario::tunables::Tunables::from([("qfair.exit_drains".into(), 3.0)]);
        for p in &points {
            let want = if p.key.cca == "qfair" {
                tuned.clone()
            } else {
                Default::default()
            };
            assert_eq!(p.plan.tunables, want, "{:?}", p.key);
            assert_eq!(p.plan.scenario.tunables, want, "{:?}", p.key);
        }
        let e = expand(&s, sweep, &["cubic".to_string()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tunables.\"qfair.exit_drains\": sets qfair, which --cca cubic does not run (a tunable applies only to its own CCA)"
        );
    }

    /// A scenario with a grid: `lab run` says it runs the base, and
    /// whether the base is one of the grid's points.
    #[test]
    fn the_base_of_a_grid_is_named_as_a_point_or_not() {
        let text = crate::testkit::grid_toml("g", 1, None, &[10, 40]);
        // Base: 1 BDP, flows[1] at 20 ms; the grid: 0.5/2 BDP x 10/40 ms.
        let s = Scenario::from_toml(&text).unwrap();
        let note = base_note(&s).unwrap();
        assert!(note.contains("not a point of its grid"), "{note}");
        let on =
            Scenario::from_toml(&text.replace("values = [10, 40]", "values = [10, 20]")).unwrap();
        let on = Scenario {
            bottleneck: crate::scenario::Bottleneck {
                buffer: crate::scenario::Buffer {
                    bdp: Some(2.0),
                    ..on.bottleneck.buffer.clone()
                },
                ..on.bottleneck.clone()
            },
            ..on
        };
        let note = base_note(&on).unwrap();
        assert!(note.contains("point x=2 y=20"), "{note}");
        let mut plain = s.clone();
        plain.sweep = None;
        assert_eq!(base_note(&plain), None);
    }
}
