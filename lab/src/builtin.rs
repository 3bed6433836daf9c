//! The scenarios in `scenarios/`, embedded so `rttfairctl lab run NAME`
//! works from an installed binary with no checkout.

/// (name, TOML text) of every embedded scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("two-flow-deep", include_str!("../../scenarios/two-flow-deep.toml")),
    ("fairtt-paper", include_str!("../../scenarios/fairtt-paper.toml")),
    ("adbbr-fairness", include_str!("../../scenarios/adbbr-fairness.toml")),
    ("adbbr-fairness-shallow", include_str!("../../scenarios/adbbr-fairness-shallow.toml")),
    ("shallow-10flows", include_str!("../../scenarios/shallow-10flows.toml")),
    ("ci-smoke", include_str!("../../scenarios/ci-smoke.toml")),
];

/// Resolve a scenario argument: a file path if it exists, else an embedded name.
pub fn resolve(arg: &str) -> anyhow::Result<crate::scenario::Scenario> {
    let path = std::path::Path::new(arg);
    if path.exists() {
        return crate::scenario::Scenario::load(path);
    }
    match SCENARIOS.iter().find(|(n, _)| *n == arg) {
        Some((n, text)) => crate::scenario::Scenario::from_toml(text)
            .map_err(|e| anyhow::anyhow!("embedded scenario {n}: {e}")),
        None => anyhow::bail!(
            "no scenario file '{arg}' and no embedded scenario of that name (embedded: {})",
            SCENARIOS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_embedded_scenario_is_valid() {
        for (name, text) in super::SCENARIOS {
            crate::scenario::Scenario::from_toml(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
