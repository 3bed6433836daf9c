//! Every file in `scenarios/` parses and validates, sweep points included.
//!
//! By path, as `rttfairctl lab compare scenarios/X.toml` (the qfair tables
//! of docs/results.md) reads them: a typo would otherwise only show when a
//! kernel run of several minutes starts. (Every file is also embedded:
//! `builtin`'s unit tests check that and the embedded texts.)

use rttfair_lab::scenario::Scenario;

#[test]
fn every_scenario_file_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.flows().is_empty(), "{}: no flows", path.display());
        checked.push(s.name);
    }
    // The directory holds at least every embedded scenario.
    for (name, _) in rttfair_lab::scenario::builtin::SCENARIOS {
        assert!(
            checked.iter().any(|n| n == name),
            "embedded scenario {name} has no file in {}",
            dir.display()
        );
    }
}
