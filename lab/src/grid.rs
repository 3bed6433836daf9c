//! Sweep expansion: a scenario's `[sweep]` table and a list of CCAs become
//! one [`Plan`] per grid point, directly from the parsed scenario (no text
//! is printed and parsed again).

use serde::Serialize;

use crate::plan::Plan;
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
    let mut out = Vec::new();
    for cca in ccas {
        let with_cca = base.with_cca(cca);
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

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
name = "g"
duration_s = 10
[bottleneck]
rate_mbit = 10
buffer = { bdp = 1.0, rtt_ms = 20.0 }
[[flows]]
cca = "cubic"
rtt_ms = 20
[[flows]]
cca = "cubic"
rtt_ms = 20
[sweep]
x = { param = "bottleneck.buffer.bdp", values = [0.5, 2] }
y = { param = "flows[1].rtt_ms", values = [10, 40, 80] }
"#;

    #[test]
    fn expands_every_point_to_a_resolved_plan() {
        let s = Scenario::from_toml(GRID).unwrap();
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
}
