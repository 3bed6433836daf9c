//! Property tests of the scenario parser: whatever the input, it returns a
//! scenario or an error naming a field, and never panics. The corpus in
//! tests/corpus/ holds inputs that once looked dangerous; every one is run.

use proptest::prelude::*;
use rttfair_lab::scenario::Scenario;

const VALID: &str = r#"
name = "p"
duration_s = 10
[bottleneck]
rate_mbit = 10
buffer = { bdp = 2.0, rtt_ms = 20.0 }
[[flows]]
cca = "cubic"
rtt_ms = 20
loss_pct = 1
"#;

fn check(text: &str) {
    match Scenario::from_toml(text) {
        Ok(s) => {
            // Whatever parsed is valid and usable.
            s.validate().unwrap();
            assert!(s.buffer_bytes() >= 3028);
            assert!(!s.flows().is_empty());
        }
        Err(e) => assert!(!e.field.is_empty() && !e.reason.is_empty(), "{e:?}"),
    }
}

#[test]
fn corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        check(&String::from_utf8_lossy(&bytes));
        n += 1;
    }
    assert!(n >= 5);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,400}") {
        check(&s);
    }

    #[test]
    fn any_value_in_any_numeric_field_is_handled(
        field in prop::sample::select(vec!["duration_s = 10", "rate_mbit = 10", "bdp = 2.0", "rtt_ms = 20.0", "rtt_ms = 20\n", "loss_pct = 1"]),
        value in prop_oneof![
            any::<f64>().prop_map(|v| format!("{v:?}")),
            any::<i64>().prop_map(|v| v.to_string()),
            Just("nan".to_string()), Just("inf".to_string()), Just("-inf".to_string()),
            Just("\"10\"".to_string()), Just("[]".to_string()), Just("{}".to_string()),
        ],
    ) {
        let key = field.split('=').next().unwrap().trim();
        let replaced = VALID.replacen(field.trim_end(), &format!("{key} = {value}"), 1);
        check(&replaced);
    }
}
