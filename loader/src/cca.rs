//! The congestion controls this build carries.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use crate::abi;
use crate::error::Error;

/// A congestion control shipped by rttfair. The kernel name is what sockets
/// select (`setsockopt(TCP_CONGESTION)`, `iperf3 -C`, sysctl).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cca {
    /// BBR v1, the baseline built on the shared core.
    Bbr1,
    /// FaiRTT ("FaiRTT: An Empirical Approach for Enhanced RTT Fairness and
    /// Bottleneck Throughput in BBR"): RTT-dependent BDP reduction in ProbeBW.
    Fairtt,
    /// Ad-BBR ("Ad-BBR: Enhancing Round-Trip Time Fairness and Transmission
    /// Stability in TCP-BBR"): nRTT, RTT-ratio pacing regulation, adaptive
    /// ProbeRTT.
    Adbbr,
    /// qfair, the project's own: a fixed backlog per flow, so equal rates
    /// whatever the RTT (docs/algorithms.md, "qfair").
    Qfair,
    /// The kernel's own bbr, called through kfuncs and exported like the
    /// others: the native reference in every table.
    BbrNative,
    /// BBR v3 (google/bbr v3, IETF draft-ietf-ccwg-bbr) on a stock kernel:
    /// loss/ECN-bounded operating range, the baseline v3 users ask for
    /// (docs/algorithms.md, "bbr3").
    Bbr3,
    /// qfair's object registered a second time under another name
    /// (`rttfairctl load qfair --name qfair_b`, or `load qfair_b`), with
    /// tunables of its own: two groups of qfair flows whose drains fall
    /// apart (`drain_phase_ms`). The name is `qfair_<suffix>`, so every
    /// tool (the lab, `unload`, `set`) tells from the name alone which
    /// object it is ([`Cca::second_name`]). Its flows export as qfair's.
    QfairAs(&'static str),
}

/// The CCAs that can be loaded under a second name: those whose behaviour
/// a second set of tunables makes worth running twice side by side.
const TAKE_SECOND_NAMES: [Cca; 1] = [Cca::Qfair];

/// The kernel's TCP_CA_NAME_MAX less the terminating NUL.
const NAME_MAX: usize = 15;

impl Cca {
    /// Every CCA of this build, in a stable order.
    pub const ALL: [Cca; 6] = [
        Cca::Bbr1,
        Cca::Fairtt,
        Cca::Adbbr,
        Cca::Qfair,
        Cca::BbrNative,
        Cca::Bbr3,
    ];

    /// The name registered with the kernel.
    pub fn name(self) -> &'static str {
        match self {
            Cca::Bbr1 => "bbr1",
            Cca::Fairtt => "fairtt",
            Cca::Adbbr => "adbbr",
            Cca::Qfair => "qfair",
            Cca::BbrNative => "bbr_native",
            Cca::Bbr3 => "bbr3",
            Cca::QfairAs(name) => name,
        }
    }

    /// The CCA whose object this one runs: itself, or qfair for its second
    /// names.
    pub fn base(self) -> Cca {
        match self {
            Cca::QfairAs(_) => Cca::Qfair,
            c => c,
        }
    }

    /// `self` loaded under `name` instead (`load qfair --name qfair_b`).
    /// Refused in one line: a CCA that takes no second name, its own name,
    /// a name the kernel cannot register (1 to 15 of a-z, 0-9, _), or one
    /// not of the form `<base>_<suffix>`. A name taken by a congestion
    /// control already registered is refused when loading.
    pub fn second_name(self, name: &str) -> Result<Cca, Error> {
        let bad = |reason: String| Error::InvalidValue {
            name: format!("--name {name}"),
            reason,
        };
        let base = self.base();
        if !TAKE_SECOND_NAMES.contains(&base) {
            return Err(bad(format!(
                "only {} can be loaded under a second name, not {self}",
                TAKE_SECOND_NAMES.map(Cca::name).join(", ")
            )));
        }
        if name == base.name() {
            return Err(bad(format!(
                "that is {base}'s own name; a second name is {base}_<suffix>, e.g. {base}_b"
            )));
        }
        if name.is_empty()
            || name.len() > NAME_MAX
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(bad(format!(
                "a congestion control's name is 1 to {NAME_MAX} of a-z, 0-9 and _"
            )));
        }
        match name.strip_prefix(base.name()).and_then(|r| r.strip_prefix('_')) {
            Some(suffix) if !suffix.is_empty() => Ok(Cca::QfairAs(intern(name))),
            _ => Err(bad(format!(
                "a second name of {base} is {base}_<suffix> (e.g. {base}_b), so every tool knows it for {base}'s from the name alone"
            ))),
        }
    }

    /// The id used in the BPF maps (`enum rttfair_cca_id`).
    pub fn abi_id(self) -> u32 {
        match self {
            Cca::Bbr1 => abi::CCA_BBR1,
            Cca::Fairtt => abi::CCA_FAIRTT,
            Cca::Adbbr => abi::CCA_ADBBR,
            Cca::Qfair => abi::CCA_QFAIR,
            Cca::BbrNative => abi::CCA_BBR_NATIVE,
            Cca::Bbr3 => abi::CCA_BBR3,
            Cca::QfairAs(_) => abi::CCA_QFAIR,
        }
        .into()
    }

    /// The inverse of [`Cca::abi_id`].
    pub(crate) fn from_abi_id(id: u32) -> Option<Cca> {
        Cca::ALL.into_iter().find(|c| c.abi_id() == id)
    }

    /// Name of the `.struct_ops.link` map in the object.
    pub(crate) fn ops_map(self) -> String {
        format!("{}_ops", self.base().name())
    }

    /// "bbr1, fairtt, adbbr, qfair, bbr_native, bbr3", for error messages.
    pub fn valid_names() -> String {
        Cca::ALL.map(Cca::name).join(", ")
    }
}

/// A second name as a `&'static str`, so [`Cca`] stays `Copy` with a
/// `name()` like the others'; each distinct name is kept once (a few bytes
/// per name a process ever parses).
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.into());
    names.push(n);
    n
}

/// As its name, like [`fmt::Display`].
impl serde::Serialize for Cca {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for Cca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Cca {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(c) = Cca::ALL.into_iter().find(|c| c.name() == s) {
            return Ok(c);
        }
        // `qfair_b`: a second name of the CCA whose name it extends.
        if let Some(base) = TAKE_SECOND_NAMES
            .into_iter()
            .find(|b| s.strip_prefix(b.name()).is_some_and(|r| r.starts_with('_')))
        {
            return base.second_name(s);
        }
        Err(Error::UnknownCca {
            name: s.to_string(),
            valid: Cca::valid_names(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Cca;

    /// `qfair_b` is qfair's object under a second name: same object, ops
    /// map and export id, its own name; every other name is refused in one
    /// line saying why, and the base names parse as before.
    #[test]
    fn second_names_are_qfair_underscore_something_and_nothing_else() {
        let b: Cca = "qfair_b".parse().unwrap();
        assert_eq!(b, Cca::QfairAs("qfair_b"));
        assert_eq!(
            (b.name(), b.base(), b.ops_map()),
            ("qfair_b", Cca::Qfair, "qfair_ops".into())
        );
        assert_eq!(b.abi_id(), Cca::Qfair.abi_id());
        assert_eq!(Cca::Qfair.second_name("qfair_b").unwrap(), b);
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"qfair_b\"");
        assert_eq!(
            serde_json::to_string(&Cca::BbrNative).unwrap(),
            "\"bbr_native\""
        );
        for c in Cca::ALL {
            assert_eq!(c.name().parse::<Cca>().unwrap(), c);
        }
        let refusal = |base: Cca, name: &str| base.second_name(name).unwrap_err().to_string();
        assert!(refusal(Cca::Qfair, "qfair").contains("qfair's own name"));
        assert!(refusal(Cca::Qfair, "qfair_").contains("qfair_<suffix>"));
        assert!(refusal(Cca::Qfair, "cubic").contains("qfair_<suffix>"));
        assert!(refusal(Cca::Qfair, "qfair_B").contains("1 to 15 of a-z"));
        assert!(refusal(Cca::Qfair, "qfair_0123456789").contains("1 to 15 of a-z"));
        assert!(refusal(Cca::Qfair, "").contains("1 to 15 of a-z"));
        assert!(refusal(Cca::Fairtt, "fairtt_b")
            .starts_with("invalid value for --name fairtt_b: only qfair"));
        assert_eq!(b.second_name("qfair_c").unwrap(), Cca::QfairAs("qfair_c"));
        for line in ["qfair", "qfair_", "cubic", "qfair_B"].map(|n| refusal(Cca::Qfair, n)) {
            assert!(!line.contains('\n'), "{line}");
        }
        assert!("qfair_0123456789".parse::<Cca>().is_err());
        assert!("qfairx".parse::<Cca>().is_err());
        assert!("bbr1_b".parse::<Cca>().is_err());
    }
}
