//! The scenarios in `scenarios/`, embedded so `rttfairctl lab run NAME`
//! works from an installed binary with no checkout.

/// (name, TOML text) of every embedded scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "two-flow-deep",
        include_str!("../../scenarios/two-flow-deep.toml"),
    ),
    (
        "fairtt-paper",
        include_str!("../../scenarios/fairtt-paper.toml"),
    ),
    (
        "adbbr-fairness",
        include_str!("../../scenarios/adbbr-fairness.toml"),
    ),
    (
        "adbbr-fairness-shallow",
        include_str!("../../scenarios/adbbr-fairness-shallow.toml"),
    ),
    (
        "shallow-10flows",
        include_str!("../../scenarios/shallow-10flows.toml"),
    ),
    ("ci-smoke", include_str!("../../scenarios/ci-smoke.toml")),
    (
        "fairtt-buffer-sweep",
        include_str!("../../scenarios/fairtt-buffer-sweep.toml"),
    ),
    (
        "fairtt-rtt-sweep",
        include_str!("../../scenarios/fairtt-rtt-sweep.toml"),
    ),
    (
        "shallow-grid",
        include_str!("../../scenarios/shallow-grid.toml"),
    ),
    (
        "adbbr-loss",
        include_str!("../../scenarios/adbbr-loss.toml"),
    ),
    (
        "adbbr-flows",
        include_str!("../../scenarios/adbbr-flows.toml"),
    ),
    (
        "qfair-three-flows",
        include_str!("../../scenarios/qfair-three-flows.toml"),
    ),
    (
        "qfair-late-joiner",
        include_str!("../../scenarios/qfair-late-joiner.toml"),
    ),
    (
        "qfair-loss",
        include_str!("../../scenarios/qfair-loss.toml"),
    ),
    (
        "qfair-vs-cubic",
        include_str!("../../scenarios/qfair-vs-cubic.toml"),
    ),
];

/// Resolve a scenario argument: a file path if it exists, else an embedded name.
pub fn resolve(arg: &str) -> anyhow::Result<crate::scenario::Scenario> {
    Ok(resolve_with_sweep(arg)?.0)
}

/// As [`resolve`], also returning the file's `[sweep]` table, if any.
pub fn resolve_with_sweep(
    arg: &str,
) -> anyhow::Result<(crate::scenario::Scenario, Option<crate::sweep::Sweep>)> {
    let path = std::path::Path::new(arg);
    let (origin, text) =
        if path.exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read scenario {}: {e}", path.display()))?;
            (path.display().to_string(), text)
        } else {
            match SCENARIOS.iter().find(|(n, _)| *n == arg) {
                Some((n, text)) => (format!("embedded scenario {n}"), text.to_string()),
                None => {
                    anyhow::bail!(
                "no scenario file '{arg}' and no embedded scenario of that name (embedded: {})",
                SCENARIOS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
                }
            }
        };
    let (base, sweep) = match crate::sweep::split(&text) {
        Ok(x) => x,
        // Not even TOML: let the scenario parser name the line.
        Err(_) => (text.clone(), None),
    };
    let s = crate::scenario::Scenario::from_toml(&base)
        .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok((s, sweep))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_embedded_scenario_is_valid() {
        for (name, _) in super::SCENARIOS {
            let (s, sweep) =
                super::resolve_with_sweep(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Some(sw) = sweep {
                for x in &sw.x.values {
                    let p = crate::sweep::apply(&s, &sw.x.param, *x)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    if let Some(y) = &sw.y {
                        for v in &y.values {
                            crate::sweep::apply(&p, &y.param, *v)
                                .unwrap_or_else(|e| panic!("{name}: {e}"));
                        }
                    }
                }
            }
        }
    }
}
