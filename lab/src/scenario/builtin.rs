//! The scenarios in `scenarios/`, every one embedded so `rttfairctl lab
//! run NAME` works from an installed binary with no checkout (the docs
//! cite them by name); a unit test keeps the list and the folder equal.

use crate::scenario::{Scenario, Sweep};

/// (name, TOML text) of every embedded scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "two-flow-deep",
        include_str!("../../../scenarios/two-flow-deep.toml"),
    ),
    (
        "fairtt-paper",
        include_str!("../../../scenarios/fairtt-paper.toml"),
    ),
    (
        "adbbr-fairness",
        include_str!("../../../scenarios/adbbr-fairness.toml"),
    ),
    (
        "adbbr-fairness-shallow",
        include_str!("../../../scenarios/adbbr-fairness-shallow.toml"),
    ),
    (
        "shallow-10flows",
        include_str!("../../../scenarios/shallow-10flows.toml"),
    ),
    ("ci-smoke", include_str!("../../../scenarios/ci-smoke.toml")),
    (
        "fairtt-buffer-sweep",
        include_str!("../../../scenarios/fairtt-buffer-sweep.toml"),
    ),
    (
        "fairtt-rtt-sweep",
        include_str!("../../../scenarios/fairtt-rtt-sweep.toml"),
    ),
    (
        "shallow-grid",
        include_str!("../../../scenarios/shallow-grid.toml"),
    ),
    (
        "seed000-grid",
        include_str!("../../../scenarios/seed000-grid.toml"),
    ),
    (
        "seed000-column",
        include_str!("../../../scenarios/seed000-column.toml"),
    ),
    (
        "qfair-grid-20m",
        include_str!("../../../scenarios/qfair-grid-20m.toml"),
    ),
    (
        "qfair-grid-100m",
        include_str!("../../../scenarios/qfair-grid-100m.toml"),
    ),
    (
        "adbbr-loss",
        include_str!("../../../scenarios/adbbr-loss.toml"),
    ),
    (
        "adbbr-flows",
        include_str!("../../../scenarios/adbbr-flows.toml"),
    ),
    (
        "qfair-three-flows",
        include_str!("../../../scenarios/qfair-three-flows.toml"),
    ),
    (
        "qfair-late-joiner",
        include_str!("../../../scenarios/qfair-late-joiner.toml"),
    ),
    (
        "qfair-loss",
        include_str!("../../../scenarios/qfair-loss.toml"),
    ),
    (
        "qfair-vs-cubic",
        include_str!("../../../scenarios/qfair-vs-cubic.toml"),
    ),
    (
        "accounting-long-rtt",
        include_str!("../../../scenarios/accounting-long-rtt.toml"),
    ),
    (
        "adbbr-one-long",
        include_str!("../../../scenarios/adbbr-one-long.toml"),
    ),
    (
        "adbbr-three-rtts",
        include_str!("../../../scenarios/adbbr-three-rtts.toml"),
    ),
    (
        "bbr3-loss",
        include_str!("../../../scenarios/bbr3-loss.toml"),
    ),
    (
        "bbr3-shallow",
        include_str!("../../../scenarios/bbr3-shallow.toml"),
    ),
    (
        "bbr3-vs-cubic",
        include_str!("../../../scenarios/bbr3-vs-cubic.toml"),
    ),
    (
        "fairtt-paper-topology",
        include_str!("../../../scenarios/fairtt-paper-topology.toml"),
    ),
    (
        "fairtt-paper-topology-buffer-sweep",
        include_str!("../../../scenarios/fairtt-paper-topology-buffer-sweep.toml"),
    ),
    (
        "fairtt-paper-topology-rtt-sweep",
        include_str!("../../../scenarios/fairtt-paper-topology-rtt-sweep.toml"),
    ),
    (
        "qfair-0.3bdp-10v20",
        include_str!("../../../scenarios/qfair-0.3bdp-10v20.toml"),
    ),
    (
        "qfair-0.3bdp-20v20",
        include_str!("../../../scenarios/qfair-0.3bdp-20v20.toml"),
    ),
    (
        "qfair-100m",
        include_str!("../../../scenarios/qfair-100m.toml"),
    ),
    (
        "qfair-100m-1bdp",
        include_str!("../../../scenarios/qfair-100m-1bdp.toml"),
    ),
    (
        "qfair-100m-shallow",
        include_str!("../../../scenarios/qfair-100m-shallow.toml"),
    ),
    (
        "qfair-20m-10ms-0.3bdp",
        include_str!("../../../scenarios/qfair-20m-10ms-0.3bdp.toml"),
    ),
    (
        "qfair-grid-20m-0.3bdp",
        include_str!("../../../scenarios/qfair-grid-20m-0.3bdp.toml"),
    ),
    (
        "qfair-jitter",
        include_str!("../../../scenarios/qfair-jitter.toml"),
    ),
    (
        "qfair-late-joiner-long",
        include_str!("../../../scenarios/qfair-late-joiner-long.toml"),
    ),
    (
        "qfair-pair-cubic-leaves",
        include_str!("../../../scenarios/qfair-pair-cubic-leaves.toml"),
    ),
    (
        "qfair-rtt-change",
        include_str!("../../../scenarios/qfair-rtt-change.toml"),
    ),
    (
        "qfair-rtt-change-long",
        include_str!("../../../scenarios/qfair-rtt-change-long.toml"),
    ),
    (
        "qfair-rtt-change-small",
        include_str!("../../../scenarios/qfair-rtt-change-small.toml"),
    ),
    (
        "qfair-ten-flows",
        include_str!("../../../scenarios/qfair-ten-flows.toml"),
    ),
    (
        "real-jitter-short",
        include_str!("../../../scenarios/real-jitter-short.toml"),
    ),
    (
        "real-jitter-long",
        include_str!("../../../scenarios/real-jitter-long.toml"),
    ),
    (
        "real-ackagg-short",
        include_str!("../../../scenarios/real-ackagg-short.toml"),
    ),
    (
        "real-ackagg-long",
        include_str!("../../../scenarios/real-ackagg-long.toml"),
    ),
    (
        "real-vs-cubic",
        include_str!("../../../scenarios/real-vs-cubic.toml"),
    ),
    (
        "real-drain-groups",
        include_str!("../../../scenarios/real-drain-groups.toml"),
    ),
    (
        "real-path-growth-200",
        include_str!("../../../scenarios/real-path-growth-200.toml"),
    ),
    (
        "real-path-growth-50",
        include_str!("../../../scenarios/real-path-growth-50.toml"),
    ),
    ("aqm-fifo", include_str!("../../../scenarios/aqm-fifo.toml")),
    (
        "aqm-codel",
        include_str!("../../../scenarios/aqm-codel.toml"),
    ),
    (
        "aqm-fq-codel",
        include_str!("../../../scenarios/aqm-fq-codel.toml"),
    ),
    (
        "aqm-ecn-step",
        include_str!("../../../scenarios/aqm-ecn-step.toml"),
    ),
    (
        "aqm-three-fifo",
        include_str!("../../../scenarios/aqm-three-fifo.toml"),
    ),
    (
        "aqm-three-codel",
        include_str!("../../../scenarios/aqm-three-codel.toml"),
    ),
    (
        "aqm-three-fq-codel",
        include_str!("../../../scenarios/aqm-three-fq-codel.toml"),
    ),
    (
        "aqm-three-ecn-step",
        include_str!("../../../scenarios/aqm-three-ecn-step.toml"),
    ),
];

/// Resolve a scenario argument: a file path if it exists (read by
/// [`Scenario::load`]), else an embedded name. The text is parsed and
/// validated once, its `[sweep]` table (if any) included, so errors name
/// the line of the text as written.
pub fn resolve(arg: &str) -> anyhow::Result<Scenario> {
    let path = std::path::Path::new(arg);
    if path.exists() {
        return Scenario::load(path);
    }
    Scenario::from_toml(embedded(arg)?).map_err(|e| anyhow::anyhow!("embedded scenario {arg}: {e}"))
}

/// As [`resolve`], also returning the scenario's `[sweep]` table, if any.
pub fn resolve_with_sweep(arg: &str) -> anyhow::Result<(Scenario, Option<Sweep>)> {
    let s = resolve(arg)?;
    let sweep = s.sweep.clone();
    Ok((s, sweep))
}

/// The text of the embedded scenario named `arg`.
fn embedded(arg: &str) -> anyhow::Result<&'static str> {
    match SCENARIOS.iter().find(|(n, _)| *n == arg) {
        Some((_, text)) => Ok(text),
        None => anyhow::bail!(
            "no scenario file '{arg}' and no embedded scenario of that name (embedded: {})",
            SCENARIOS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_embedded_scenario_is_valid() {
        // Parsing validates every sweep point as well.
        for (name, _) in super::SCENARIOS {
            super::resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    /// Every scenarios/*.toml is embedded under its file's stem, and
    /// nothing else is: a scenario added to the folder but not here would
    /// be "no embedded scenario" from an installed binary (21 of 40 were).
    #[test]
    fn every_scenario_file_is_embedded_under_its_name() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut embedded: Vec<String> = super::SCENARIOS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        embedded.sort();
        assert_eq!(embedded, files);
        for (name, text) in super::SCENARIOS {
            let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(*text, file, "{name} embeds another file's text");
        }
    }

    /// The files of scenarios/' subfolders (one file per point, run by
    /// path with `lab run`, not embedded) are valid scenarios too.
    #[test]
    fn every_scenario_subfolder_file_is_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut n = 0;
        for sub in std::fs::read_dir(&dir).unwrap() {
            let sub = sub.unwrap().path();
            if !sub.is_dir() {
                continue;
            }
            for e in std::fs::read_dir(&sub).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    super::resolve(p.to_str().unwrap())
                        .unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
                    n += 1;
                }
            }
        }
        assert!(n > 0, "no scenario subfolder files");
    }

    /// The per-phase files of real-drain-groups (run by path, not
    /// embedded) are valid scenarios too.
    #[test]
    fn every_real_drain_groups_file_is_valid() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/real-drain-groups");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let s = super::resolve(p.to_str().unwrap())
                .unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            assert!(
                s.flows.iter().any(|f| f.cca == "qfair_b"),
                "{}",
                p.display()
            );
            n += 1;
        }
        assert_eq!(n, 12);
    }

    /// Each way a scenario argument fails names where the text came from,
    /// in the words `rttfairctl lab run` prints.
    #[test]
    fn errors_name_the_file_or_the_embedded_scenario() {
        let dir = crate::testkit::temp_folder("builtin-errors");
        let msg = |arg: &std::path::Path| {
            format!("{:#}", super::resolve(arg.to_str().unwrap()).unwrap_err())
        };
        // A path that exists but is not a readable file.
        let read = std::fs::read_to_string(dir.path()).unwrap_err();
        assert_eq!(
            msg(dir.path()),
            format!("cannot read scenario {}: {read}", dir.path().display())
        );
        // A file whose text is not a valid scenario: its path, then the
        // parser's error (field and line).
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "name = \"b\"\n").unwrap();
        let parse = super::Scenario::from_toml("name = \"b\"\n").unwrap_err();
        assert!(parse.to_string().contains("missing field `duration_s`"));
        assert_eq!(msg(&bad), format!("{}: {parse}", bad.display()));
        // Neither a file nor an embedded name: the embedded names listed.
        let m = format!("{:#}", super::resolve("no-such-scenario").unwrap_err());
        assert!(
            m.starts_with("no scenario file 'no-such-scenario' and no embedded scenario of that name (embedded: two-flow-deep, "),
            "{m}"
        );
    }
}
