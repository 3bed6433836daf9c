//! Every table that docs/results.md and README.md mark as computed from
//! data (`<!-- table: ... -->`) recomputes from the per-run summaries under
//! docs/data, and every docs/data path the pages name exists
//! (scripts/results-tables.py --check, which the pages' readers run too).

use std::path::Path;
use std::process::Command;

#[test]
fn results_tables_recompute_from_their_data() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new("python3")
        .arg(root.join("scripts/results-tables.py"))
        .arg("--check")
        .current_dir(root)
        .output()
        .expect("run python3 scripts/results-tables.py --check");
    assert!(
        out.status.success(),
        "results-tables.py --check failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("tables match docs/data"), "{said}");
}
