//! The daemon's config parser never panics and reports bad keys.

use proptest::prelude::*;
use rttfair_daemon::Config;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,300}") {
        let _ = Config::parse(&s);
    }

    #[test]
    fn arbitrary_values_are_validated(key in prop::sample::select(vec!["listen", "bpffs", "load", "unload_on_exit", "max_flows", "native_flows", "group_prefix_v4", "group_prefix_v6"]),
                                      value in prop_oneof![any::<i64>().prop_map(|v| v.to_string()), "\"[^\"]{0,20}\"", Just("[\"fairtt\", \"x\"]".to_string()), Just("true".to_string())]) {
        if let Ok(c) = Config::parse(&format!("{key} = {value}\n")) {
            prop_assert!(c.max_flows >= 1 && c.group_prefix_v4 <= 32 && c.group_prefix_v6 <= 128);
        }
    }
}
