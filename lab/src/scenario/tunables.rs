//! A scenario's `[tunables]` table: the CCA tunables an experiment runs
//! with, part of its definition (versioned with it, so a run can be made
//! again from its scenario.toml) instead of an `rttfairctl set` before it.
//!
//! ```toml
//! [tunables]
//! "qfair.exit_drains" = 2
//! qfair.k_alpha = 0.5          # the same without quotes: TOML's dotted keys
//! ```
//!
//! A name is written quoted (one key) or bare (TOML reads `qfair.k_alpha`
//! as the table `qfair` holding `k_alpha`, as does `[tunables.qfair]`);
//! both mean the same entry, kept and written back by its quoted name.
//!
//! Names and values are what `rttfairctl set` takes; what is valid is the
//! loader's to say (`rttfair_loader::tunables::ALL`: names, ranges, units,
//! whole numbers), so an entry is checked by the loader's own lookup and
//! parser, given the text `rttfairctl set` would get. The lab sets them
//! after it loads the CCA (`ccas::CcaSession`), and provenance records
//! them as read back from the CCA's map.

use std::collections::BTreeMap;
use std::fmt;

use rttfair_loader::tunables::Tunable;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::error::{err, ScenarioError};

/// "qfair.exit_drains" -> 2: the names as `rttfairctl set` takes them.
pub type Tunables = BTreeMap<String, f64>;

/// An entry's field in errors: its key path in the TOML text.
pub fn field(name: &str) -> String {
    format!("tunables.\"{name}\"")
}

/// One value under `[tunables]`: a number, or (a name written as TOML
/// dotted keys, `qfair.exit_drains = 2`) a table of numbers.
enum Entry {
    Number(f64),
    Table(BTreeMap<String, f64>),
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number (a tunable's value)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Entry, E> {
                Ok(Entry::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Entry, E> {
                Ok(Entry::Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Entry, E> {
                Ok(Entry::Number(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
                // Each value through f64's own Deserialize, so a bad one is
                // reported at its own line.
                let mut out = BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, f64>()? {
                    out.insert(k, v);
                }
                Ok(Entry::Table(out))
            }
        }
        d.deserialize_any(EntryVisitor)
    }
}

/// `[tunables]` as [`Tunables`]: quoted names as they are, bare dotted
/// names (`qfair.exit_drains = 2`, TOML's nested table) joined back to
/// the name `rttfairctl set` takes.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Tunables, D::Error> {
    let mut out = Tunables::new();
    for (key, entry) in BTreeMap::<String, Entry>::deserialize(d)? {
        let flat = match entry {
            Entry::Number(v) => vec![(key, v)],
            Entry::Table(t) => t
                .into_iter()
                .map(|(k, v)| (format!("{key}.{k}"), v))
                .collect(),
        };
        for (name, v) in flat {
            if out.insert(name.clone(), v).is_some() {
                return Err(de::Error::custom(format!(
                    "{name} is set twice (once quoted, once as dotted keys)"
                )));
            }
        }
    }
    Ok(out)
}

/// The CCA an entry belongs to ("qfair" of "qfair.exit_drains").
pub fn cca_of(name: &str) -> &str {
    name.split_once('.').map_or(name, |(cca, _)| cca)
}

/// `v` as the text `rttfairctl set` gets (the shortest that reads back as
/// `v`: 2 for 2.0, 0.7 for 0.7).
pub fn text(v: f64) -> String {
    format!("{v}")
}

/// The entries as a list ("qfair.exit_drains = 2, qfair.k_alpha = 0.5"),
/// as a table's row and a refusal name them.
pub fn listed(tunables: &Tunables) -> String {
    let set: Vec<String> = tunables
        .iter()
        .map(|(name, v)| format!("{name} = {}", text(*v)))
        .collect();
    set.join(", ")
}

/// The loader's tunable `name`, and `v` as it stores it; refused with the
/// loader's own reason.
fn stored(name: &str, v: f64) -> Result<(&'static Tunable, u32), ScenarioError> {
    let refused = |e: rttfair_loader::Error| {
        let reason = match e {
            rttfair_loader::Error::InvalidValue { reason, .. } => reason,
            other => other.to_string(),
        };
        err(field(name), reason)
    };
    let t = Tunable::find(name).map_err(refused)?;
    let raw = t.parse(&text(v)).map_err(refused)?;
    Ok((t, raw))
}

/// Every entry a tunable of rttfair's with a value it accepts, of a CCA
/// one of the flows runs (`flow_ccas`): one no flow runs would set nothing.
pub fn validate(tunables: &Tunables, flow_ccas: &[&str]) -> Result<(), ScenarioError> {
    for (name, v) in tunables {
        stored(name, *v)?;
        let cca = cca_of(name);
        if !flow_ccas.contains(&cca) {
            let mut run = flow_ccas.to_vec();
            run.sort();
            run.dedup();
            return Err(err(
                field(name),
                format!(
                    "sets {cca}, which no flow runs (the flows run {})",
                    run.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every entry's CCA is one of `ccas` (the CCAs of `--cca`): an entry of
/// another CCA would set nothing.
pub fn check_ccas(tunables: &Tunables, ccas: &[String]) -> Result<(), ScenarioError> {
    match tunables
        .keys()
        .find(|name| !ccas.iter().any(|c| c == cca_of(name)))
    {
        Some(name) => Err(err(
            field(name),
            format!(
                "sets {}, which --cca {} does not run (a tunable applies only to its own CCA)",
                cca_of(name),
                ccas.join(",")
            ),
        )),
        None => Ok(()),
    }
}

/// The entries of `cca` alone.
pub fn of_cca(tunables: &Tunables, cca: &str) -> Tunables {
    tunables
        .iter()
        .filter(|(name, _)| cca_of(name) == cca)
        .map(|(name, v)| (name.clone(), *v))
        .collect()
}

/// Every entry of `expected` (what a lab loaded the CCAs with: the
/// scenario's, the lab's own, the defaults; `CcaSession::expected_tunables`)
/// has that value in `read` (the maps as read back,
/// [`crate::results::provenance::tunables`]): the stored value, which may round the
/// scenario's (qfair.k_alpha is kept in 1/1024ths). A difference means
/// someone else set it after the lab loaded the CCA.
pub fn check_read_back(expected: &Tunables, read: &BTreeMap<String, f64>) -> anyhow::Result<()> {
    for (name, v) in expected {
        let (t, raw) = stored(name, *v).map_err(|e| anyhow::anyhow!("{e}"))?;
        let expected = t.display(raw);
        match read.get(name) {
            Some(got) if *got == expected => {}
            got => anyhow::bail!(
                "{name} reads back {} from {}'s map, not the {expected} a lab loaded it with: something else changed it; no results reported",
                got.map_or("nothing".to_string(), |g| g.to_string()),
                cca_of(name)
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// A cubic flow and a qfair pair; `[tunables]` on line 14, its first
    /// entry on line 15.
    fn with_tunables(entries: &str) -> String {
        format!(
            r#"
name = "t"
duration_s = 10
[bottleneck]
rate_mbit = 10
buffer = {{ bdp = 2.0, rtt_ms = 20.0 }}
[[flows]]
cca = "cubic"
rtt_ms = 20
[[flows]]
cca = "qfair"
count = 2
rtt_ms = 10
[tunables]
{entries}"#
        )
    }

    fn error_of(entries: &str) -> String {
        Scenario::from_toml(&with_tunables(entries))
            .unwrap_err()
            .to_string()
    }

    /// Parsed into the scenario, written back as set (and read again the
    /// same), absent from the text of a scenario without any.
    #[test]
    fn tunables_parse_and_are_written_back_only_when_set() {
        let s = Scenario::from_toml(&with_tunables(
            "\"qfair.exit_drains\" = 2\n\"qfair.k_alpha\" = 0.5\n",
        ))
        .unwrap();
        let want = Tunables::from([
            ("qfair.exit_drains".to_string(), 2.0),
            ("qfair.k_alpha".to_string(), 0.5),
        ]);
        assert_eq!(s.tunables, want);
        let text = toml::to_string_pretty(&s).unwrap();
        assert!(text.contains("[tunables]"), "{text}");
        assert_eq!(Scenario::from_toml(&text).unwrap().tunables, want);
        let mut plain = s.clone();
        plain.tunables.clear();
        let text = toml::to_string_pretty(&plain).unwrap();
        assert!(!text.contains("tunables"), "{text}");
    }

    /// A name written bare is TOML's dotted keys (a nested table), and
    /// `[tunables.qfair]` the same table: both are the quoted name's entry,
    /// written back quoted; a refusal points at the entry's own line, and a
    /// name set both ways, or a value that is not a number, is refused.
    #[test]
    fn bare_dotted_names_are_the_quoted_names() {
        let quoted = Scenario::from_toml(&with_tunables(
            "\"qfair.exit_drains\" = 2\n\"qfair.k_alpha\" = 0.5\n",
        ))
        .unwrap();
        let bare = Scenario::from_toml(&with_tunables(
            "qfair.exit_drains = 2\nqfair.k_alpha = 0.5\n",
        ))
        .unwrap();
        assert_eq!(bare.tunables, quoted.tunables);
        let table = Scenario::from_toml(&with_tunables(
            "\n[tunables.qfair]\nexit_drains = 2\nk_alpha = 0.5\n",
        ))
        .unwrap();
        assert_eq!(table.tunables, quoted.tunables);
        let text = toml::to_string_pretty(&bare).unwrap();
        assert!(text.contains("\"qfair.exit_drains\" = 2"), "{text}");

        assert_eq!(
            error_of("qfair.alpha0 = 3\nqfair.exit_drains = 9\n"),
            "tunables.\"qfair.exit_drains\" (line 16): must be between 1 and 8 drains, got 9"
        );
        let e = error_of("qfair.exit_drains = 2\n\"qfair.exit_drains\" = 3\n");
        assert!(e.contains("qfair.exit_drains is set twice"), "{e}");
        let e = error_of("qfair.exit_drains = \"two\"\n");
        assert!(e.contains("(line 15): invalid type: string"), "{e}");
        let e = error_of("qfair.x.y = 1\n");
        assert!(e.contains("invalid type: map"), "{e}");
    }

    /// Every refusal is the entry's key path, its line and the loader's
    /// own reason: an unknown tunable lists its CCA's, a CCA without any
    /// (or a kernel one) says so, a value outside the range gives the
    /// range with its unit, a fraction of a whole-number tunable is
    /// refused, and so is a tunable of a CCA no flow runs.
    #[test]
    fn refusals_name_the_entry_its_line_and_the_loaders_reason() {
        let qfair: Vec<String> = rttfair_loader::tunables::ALL
            .iter()
            .filter(|t| t.cca == rttfair_loader::Cca::Qfair)
            .map(|t| t.full_name())
            .collect();
        assert_eq!(
            error_of("\"qfair.exit_drains\" = 2\n\"qfair.exit_drain\" = 2\n"),
            format!(
                "tunables.\"qfair.exit_drain\" (line 16): no such tunable of qfair; its tunables: {}",
                qfair.join(", ")
            )
        );
        assert_eq!(
            error_of("\"bbr1.beta\" = 0.5\n"),
            "tunables.\"bbr1.beta\" (line 15): bbr1 has no tunables; CCAs with tunables: fairtt, adbbr, qfair"
        );
        assert_eq!(
            error_of("\"cubic.beta\" = 0.5\n"),
            "tunables.\"cubic.beta\" (line 15): cubic has no tunables; CCAs with tunables: fairtt, adbbr, qfair"
        );
        assert_eq!(
            error_of("\"qfair.exit_drains\" = 9\n"),
            "tunables.\"qfair.exit_drains\" (line 15): must be between 1 and 8 drains, got 9"
        );
        assert_eq!(
            error_of("\"qfair.exit_drains\" = 2.5\n"),
            "tunables.\"qfair.exit_drains\" (line 15): must be a whole number, got 2.5"
        );
        assert_eq!(
            error_of("\"qfair.alpha0\" = 3\n\"fairtt.beta\" = 0.7\n"),
            "tunables.\"fairtt.beta\" (line 16): sets fairtt, which no flow runs (the flows run cubic, qfair)"
        );
        let e = error_of("\"qfair.exit_drains\" = \"two\"\n");
        assert!(
            e.starts_with("\"qfair.exit_drains\" (line 15): invalid type: string"),
            "{e}"
        );
    }

    /// `--cca` keeps a tunable only for its own CCA: one of a CCA `--cca`
    /// does not name is refused in one line before anything runs; with
    /// several CCAs each scenario gets its own CCA's tunables alone.
    #[test]
    fn cca_override_gives_each_cca_its_own_tunables_and_refuses_the_rest() {
        let s = Scenario::from_toml(&with_tunables("\"qfair.exit_drains\" = 3\n")).unwrap();
        let e = s.with_ccas(&["cubic".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tunables.\"qfair.exit_drains\": sets qfair, which --cca cubic does not run (a tunable applies only to its own CCA)"
        );
        let e = s.with_ccas(&["bbr".into(), "cubic".into()]).unwrap_err();
        assert!(e.reason.contains("--cca bbr,cubic does not run"), "{e}");
        let each = s.with_ccas(&["cubic".into(), "qfair".into()]).unwrap();
        assert_eq!(each[0].tunables, Tunables::new());
        assert_eq!(
            each[1].tunables,
            Tunables::from([("qfair.exit_drains".to_string(), 3.0)])
        );
        for (c, one) in ["cubic", "qfair"].iter().zip(&each) {
            assert!(one.flows.iter().all(|f| f.cca == *c));
            one.validate().unwrap();
        }
        // Without `--cca`'s filtering, every flow on cubic keeps a qfair
        // tunable that sets nothing: refused when validated.
        let e = s.with_cca("cubic").validate().unwrap_err();
        assert_eq!(
            e.reason,
            "sets qfair, which no flow runs (the flows run cubic)"
        );
    }

    /// The read-back check takes the value as stored (k_alpha in 1/1024ths)
    /// and refuses another value or none, naming the tunable.
    #[test]
    fn read_back_must_be_the_stored_value() {
        let set = Tunables::from([("qfair.k_alpha".to_string(), 0.3)]);
        let read = |v: f64| BTreeMap::from([("qfair.k_alpha".to_string(), v)]);
        check_read_back(&set, &read(307.0 / 1024.0)).unwrap();
        let e = check_read_back(&set, &read(1.0)).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "qfair.k_alpha reads back 1 from qfair's map, not the 0.2998046875 a lab loaded it with"
            ),
            "{e}"
        );
        let e = check_read_back(&set, &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("qfair.k_alpha reads back nothing"), "{e}");
        check_read_back(&Tunables::new(), &read(1.0)).unwrap();
    }

    /// A fresh map reads back every default as the check expects it, so
    /// a CCA the lab loaded can be checked whole.
    #[test]
    fn a_fresh_map_reads_back_the_defaults() {
        for t in rttfair_loader::tunables::ALL {
            let name = t.full_name();
            check_read_back(
                &Tunables::from([(name.clone(), t.default)]),
                &BTreeMap::from([(name, t.display(0))]),
            )
            .unwrap();
        }
    }
}
