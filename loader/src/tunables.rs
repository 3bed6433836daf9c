//! Runtime tunables of the CCAs: `rttfairctl set fairtt.beta 0.7`.
//!
//! Each CCA reads its tunables from a pinned one-entry ARRAY map (fairtt and
//! qfair once per round trip, adbbr per ACK: bpf/adbbr.bpf.c says why), so
//! a change applies to every flow within an RTT, with no reload. A stored 0 means "built-in default" (a fresh map is valid); values
//! are validated here, before anything is written.

use libbpf_rs::{MapCore, MapFlags};

use crate::abi::{maps, RawAdbbrTunables, RawFairttTunables, RawQfairTunables};
use crate::bpffs::BpfFs;
use crate::cca::Cca;
use crate::error::{Error, Result};

/// How a tunable is stored: the user's number times `scale` as a u32.
#[derive(Debug, Clone, Copy)]
pub struct Tunable {
    pub cca: Cca,
    /// Name after the CCA's, e.g. "beta" in "fairtt.beta".
    pub name: &'static str,
    pub help: &'static str,
    pub unit: &'static str,
    pub min: f64,
    pub max: f64,
    pub default: f64,
    /// Stored value = value x scale (1e6 for ppm fields, 1 for integers).
    scale: f64,
    /// Which u32 of the CCA's tunables struct holds it (every field of those
    /// structs is a u32; the index comes from the generated type's layout).
    field: usize,
    integer: bool,
}

/// The u32 index of `$field` in the generated tunables struct `$ty`.
macro_rules! field {
    ($ty:ty, $field:ident) => {
        std::mem::offset_of!($ty, $field) / 4
    };
}

/// The pinned map and the struct size of a CCA's tunables, if it has any.
fn tunables_map(cca: Cca) -> Option<(&'static str, usize)> {
    use std::mem::size_of;
    match cca.base() {
        Cca::Fairtt => Some((maps::FAIRTT_TUNABLES, size_of::<RawFairttTunables>())),
        Cca::Adbbr => Some((maps::ADBBR_TUNABLES, size_of::<RawAdbbrTunables>())),
        Cca::Qfair => Some((maps::QFAIR_TUNABLES, size_of::<RawQfairTunables>())),
        Cca::Bbr1 | Cca::BbrNative | Cca::Bbr3 | Cca::QfairAs(_) => None,
    }
}

/// Where `cca`'s tunables are pinned: the map's own name, or for a second
/// name (`qfair_b`) that name after it, so each name has its own.
pub(crate) fn pin_of(cca: Cca) -> Option<String> {
    let (map, _) = tunables_map(cca)?;
    Some(match cca {
        Cca::QfairAs(name) => format!("{map}_{name}"),
        _ => map.to_string(),
    })
}

/// The rules of qfair's law that `qfair.rules_off` can switch off, for
/// ablation experiments, each with its bit's value in that mask (the
/// `QF_RULE_*` defines of bpf/qfair.bpf.c; docs/algorithms.md, "Ablation
/// switches"). A test holds the defines, the tunable's help and
/// scripts/ablation.sh to this table.
pub const QFAIR_RULES: &[(&str, u32)] = &[
    ("noise", 1 << 0),
    ("excess", 1 << 1),
    ("velocity", 1 << 2),
    ("offset", 1 << 3),
    ("burst_room", 1 << 4),
    ("path_step", 1 << 5),
    ("long_streak", 1 << 6),
    ("drain_spread", 1 << 7),
    ("cut_spacing", 1 << 8),
    ("loss_in_rate", 1 << 9),
    ("app_limited", 1 << 10),
    ("startup_exit", 1 << 11),
    ("rto_restore", 1 << 12),
    ("end_check", 1 << 13),
    ("skip_round", 1 << 14),
];

/// Every tunable of every CCA.
pub const ALL: &[Tunable] = &[
    Tunable { cca: Cca::Fairtt, name: "beta", help: "Eq. 6 balance factor between past and current minRTT", unit: "", min: 0.0, max: 1.0, default: 0.8, scale: 1e6, field: field!(RawFairttTunables, beta_ppm), integer: false },
    Tunable { cca: Cca::Fairtt, name: "gamma", help: "Alg. 1 discount factor of the BDP coefficient", unit: "", min: 0.5, max: 1.0, default: 0.99, scale: 1e6, field: field!(RawFairttTunables, gamma_ppm), integer: false },
    Tunable { cca: Cca::Fairtt, name: "window_ms", help: "a minRTT class counts in Wfcount while refreshed within this window", unit: "ms", min: 10.0, max: 60_000.0, default: 1000.0, scale: 1.0, field: field!(RawFairttTunables, window_ms), integer: true },
    Tunable { cca: Cca::Fairtt, name: "tolerance_pct", help: "minRTTs within this % of each other are one class", unit: "%", min: 1.0, max: 100.0, default: 10.0, scale: 1.0, field: field!(RawFairttTunables, tolerance_pct), integer: true },
    Tunable { cca: Cca::Fairtt, name: "scope", help: "whose minRTT classes Wfcount counts: 1 every flow on the host, 2 the flows of the same network namespace, 3 the flows of the same local address", unit: "", min: 1.0, max: 3.0, default: 1.0, scale: 1.0, field: field!(RawFairttTunables, scope), integer: true },
    Tunable { cca: Cca::Adbbr, name: "alpha", help: "Alg. 1 threshold: nRTT holds while rRTT > alpha x RTprop", unit: "", min: 1.0, max: 4.0, default: 1.25, scale: 1e6, field: field!(RawAdbbrTunables, alpha_ppm), integer: false },
    Tunable { cca: Cca::Adbbr, name: "hold_ms", help: "Alg. 1 over-threshold duration before nRTT is re-read", unit: "ms", min: 1.0, max: 60_000.0, default: 300.0, scale: 1.0, field: field!(RawAdbbrTunables, hold_ms), integer: true },
    Tunable { cca: Cca::Adbbr, name: "x", help: "Eq. 13 noise sensitivity X", unit: "", min: 0.01, max: 10.0, default: 0.5, scale: 1e6, field: field!(RawAdbbrTunables, x_ppm), integer: false },
    Tunable { cca: Cca::Adbbr, name: "zmin_us", help: "Eq. 13 protection threshold Z_min", unit: "us", min: 1.0, max: 1_000_000.0, default: 5000.0, scale: 1.0, field: field!(RawAdbbrTunables, zmin_us), integer: true },
    Tunable { cca: Cca::Adbbr, name: "probe_hold_ms", help: "Alg. 3: queue condition duration before ProbeRTT", unit: "ms", min: 100.0, max: 600_000.0, default: 10_000.0, scale: 1.0, field: field!(RawAdbbrTunables, probe_hold_ms), integer: true },
    Tunable { cca: Cca::Adbbr, name: "gamma_mode", help: "Eq. 12 interpretation: 1 ratio nRTT/rRTT, 2 normalized nRTT/(3 eta), 3 reference ref/eta", unit: "", min: 1.0, max: 3.0, default: 1.0, scale: 1.0, field: field!(RawAdbbrTunables, gamma_mode), integer: true },
    Tunable { cca: Cca::Qfair, name: "alpha0", help: "alpha_0: the backlog every flow keeps queued at low rates", unit: "packets", min: 1.0, max: 64.0, default: 3.0, scale: 1024.0, field: field!(RawQfairTunables, alpha0_x1024), integer: false },
    Tunable { cca: Cca::Qfair, name: "k_alpha", help: "k in alpha_d = alpha_0 + k sqrt(rate x 1 ms)", unit: "", min: 0.0009765625, max: 16.0, default: 1.0, scale: 1024.0, field: field!(RawQfairTunables, k_alpha_x1024), integer: false },
    Tunable { cca: Cca::Qfair, name: "tau_g_ms", help: "time scale of the rate correction g", unit: "ms", min: 50.0, max: 60_000.0, default: 1000.0, scale: 1.0, field: field!(RawQfairTunables, tau_g_ms), integer: true },
    Tunable { cca: Cca::Qfair, name: "g_cap", help: "bound on |g - 1| per round", unit: "", min: 0.00390625, max: 0.5, default: 0.125, scale: 256.0, field: field!(RawQfairTunables, g_cap_x256), integer: false },
    Tunable { cca: Cca::Qfair, name: "drain_period_ms", help: "time between drains (queue emptied to see the true minimum RTT)", unit: "ms", min: 1000.0, max: 600_000.0, default: 10_000.0, scale: 1.0, field: field!(RawQfairTunables, drain_period_ms), integer: true },
    Tunable { cca: Cca::Qfair, name: "drain_clock", help: "1 wall clock (drains at UTC multiples of the period plus drain_phase_ms, every sender at once), 2 local timer", unit: "", min: 1.0, max: 2.0, default: 1.0, scale: 1.0, field: field!(RawQfairTunables, drain_clock), integer: true },
    Tunable { cca: Cca::Qfair, name: "competitive", help: "1 competitive mode allowed when a drain finds a queue it does not own (cubic), 2 never (also ends an active one at the flow's next round)", unit: "", min: 1.0, max: 2.0, default: 1.0, scale: 1.0, field: field!(RawQfairTunables, competitive), integer: true },
    Tunable { cca: Cca::Qfair, name: "o_cap", help: "bound on |o|, Eq. 8b's integral term, as a fraction of alpha: o removes a steady offset of a packet or so between the backlog estimate and alpha; the bound keeps it from becoming a standing queue of its own and limits how far a transient winds it up (above 1, o below -alpha gives the window no backlog at all)", unit: "", min: 0.00390625, max: 2.0, default: 0.5, scale: 256.0, field: field!(RawQfairTunables, o_cap_x256), integer: false },
    Tunable { cca: Cca::Qfair, name: "exit_drains", help: "drains in a row that must find the queue emptied before competitive mode ends (1: the first, as always): a competitive flow shrinks a loss-based flow's window, and a drain can then pass on the queue that flow still holds", unit: "drains", min: 1.0, max: 8.0, default: 1.0, scale: 1.0, field: field!(RawQfairTunables, exit_drains), integer: true },
    Tunable { cca: Cca::Qfair, name: "drain_phase_ms", help: "drains fall at UTC multiples of drain_period_ms plus this phase: two groups of flows with different phases drain apart", unit: "ms", min: 0.0, max: 600_000.0, default: 0.0, scale: 1.0, field: field!(RawQfairTunables, drain_phase_ms), integer: true },
    Tunable { cca: Cca::Qfair, name: "tai_offset_s", help: "the host's CLOCK_TAI - UTC in seconds, which the wall-clock drains subtract to fall on UTC; `load` writes the kernel's (adjtimex), set it only to test", unit: "s", min: 0.0, max: 1000.0, default: 0.0, scale: 1.0, field: field!(RawQfairTunables, tai_offset_s), integer: true },
    Tunable { cca: Cca::Qfair, name: "rules_off", help: "for ablation experiments only (leave it 0, the whole law): the sum of the rules of qfair's law to switch off, each a bit: noise 1, excess 2, velocity 4, offset 8, burst_room 16, path_step 32, long_streak 64, drain_spread 128, cut_spacing 256, loss_in_rate 512, app_limited 1024, startup_exit 2048, rto_restore 4096, end_check 8192, skip_round 16384; docs/algorithms.md, \"Ablation switches\"", unit: "", min: 0.0, max: ((1u32 << QFAIR_RULES.len()) - 1) as f64, default: 0.0, scale: 1.0, field: field!(RawQfairTunables, rules_off), integer: true },
    Tunable { cca: Cca::Adbbr, name: "gamma_ref_us", help: "reference delay of gamma_mode 3", unit: "us", min: 1.0, max: 1_000_000.0, default: 1000.0, scale: 1.0, field: field!(RawAdbbrTunables, gamma_ref_us), integer: true },
    Tunable { cca: Cca::Adbbr, name: "eta_floor_us", help: "absolute floor on the queueing delay rRTT - nRTT that Alg. 1/2 react to (beta from 1x, gamma from 2x; 1 = the paper's ratios alone)", unit: "us", min: 1.0, max: 1_000_000.0, default: 1000.0, scale: 1.0, field: field!(RawAdbbrTunables, eta_floor_us), integer: true },
];

impl Tunable {
    /// "fairtt.beta"
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.cca, self.name)
    }

    /// Look up "cca.name" (a second name's, "qfair_b.alpha0", is qfair's
    /// tunable). An unknown name is refused listing the CCA's own
    /// tunables, or, for a CCA without any (or not one of rttfair's),
    /// saying so and naming the CCAs that have some.
    pub fn find(full: &str) -> Result<&'static Tunable> {
        resolve(full).map(|(_, t)| t)
    }
}

/// "cca.name" as the CCA it names (a second name as itself) and the tunable.
fn resolve(full: &str) -> Result<(Cca, &'static Tunable)> {
    let bad = |reason: String| Error::InvalidValue {
        name: full.to_string(),
        reason,
    };
    let names = |of: &dyn Fn(&Tunable) -> bool| {
        ALL.iter()
            .filter(|t| of(t))
            .map(Tunable::full_name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (cca, name) = full.split_once('.').ok_or_else(|| {
        bad(format!(
            "expected <cca>.<tunable>; tunables: {}",
            names(&|_| true)
        ))
    })?;
    let cca = cca
        .parse::<Cca>()
        .ok()
        .filter(|c| ALL.iter().any(|t| t.cca == c.base()))
        .ok_or_else(|| {
            let with: Vec<&str> = Cca::ALL
                .into_iter()
                .filter(|c| tunables_map(*c).is_some())
                .map(Cca::name)
                .collect();
            bad(format!(
                "{cca} has no tunables; CCAs with tunables: {}",
                with.join(", ")
            ))
        })?;
    ALL.iter()
        .find(|t| t.cca == cca.base() && t.name == name)
        .map(|t| (cca, t))
        .ok_or_else(|| {
            bad(format!(
                "no such tunable of {cca}; its tunables: {}",
                names(&|t| t.cca == cca.base())
                    .replace(&format!("{}.", cca.base()), &format!("{cca}."))
            ))
        })
}

impl Tunable {
    /// Parse and validate a user's value into the stored u32.
    pub fn parse(&self, text: &str) -> Result<u32> {
        let bad = |reason: String| Error::InvalidValue {
            name: self.full_name(),
            reason,
        };
        let v: f64 = text
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{text}' is not a number")))?;
        if !v.is_finite() {
            return Err(bad(format!("'{text}' is not a finite number")));
        }
        if self.integer && v.fract() != 0.0 {
            return Err(bad(format!("must be a whole number, got {text}")));
        }
        if v < self.min || v > self.max {
            let unit = match self.unit {
                "" => String::new(),
                u => format!(" {u}"),
            };
            return Err(bad(format!(
                "must be between {} and {}{unit}, got {text}",
                self.min, self.max
            )));
        }
        let stored = (v * self.scale).round();
        // 0 is "the default" in the map: fine where the default is 0.
        if stored < 1.0 && self.default != 0.0 {
            return Err(bad(format!(
                "{text} is too small to store (0 means default)"
            )));
        }
        Ok(stored as u32)
    }

    /// The stored u32 as the user's number.
    pub fn display(&self, stored: u32) -> f64 {
        if stored == 0 {
            self.default
        } else {
            stored as f64 / self.scale
        }
    }
}

/// One tunable's current value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Value {
    pub name: String,
    pub value: f64,
    pub is_default: bool,
    pub unit: &'static str,
    pub help: &'static str,
}

/// `cca`'s whole tunables entry (`t` is one of its tunables) as its u32
/// fields.
fn read_raw(fs: &BpfFs, cca: Cca, t: &Tunable) -> Result<Vec<u32>> {
    let map = open_map(fs, cca, t)?;
    let size = tunables_map(t.cca).map_or(0, |(_, size)| size);
    let bytes = map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| Error::bpf("read tunables", e))?
        .filter(|b| b.len() == size)
        .unwrap_or_else(|| vec![0; size]);
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect())
}

/// The name of the map of `cca`'s tunables in its object, if it has any
/// (pinned at [`pin_of`]: its own, so it goes when `cca` is unloaded
/// (`lifecycle::unregister`) and a reload starts from the defaults).
pub(crate) fn map_of(cca: Cca) -> Option<&'static str> {
    tunables_map(cca).map(|(name, _)| name)
}

/// `t`'s CCA must be loaded: a map pin alone (a CCA being unloaded) is not.
/// A read-modify-write of the whole struct with one field changed; the
/// caller holds the installation lock.
fn write_field(fs: &BpfFs, cca: Cca, t: &Tunable, stored: u32) -> Result<()> {
    let map = open_map(fs, cca, t)?;
    let mut fields = read_raw(fs, cca, t)?;
    fields[t.field] = stored;
    let bytes: Vec<u8> = fields.iter().flat_map(|v| v.to_ne_bytes()).collect();
    map.update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY)
        .map_err(|e| Error::bpf("write tunables", e))
}

/// The kernel's TAI offset (CLOCK_TAI - UTC, whole seconds) as adjtimex
/// reads it: 37 s where chrony runs with a leap-second table, 0 where
/// timesyncd or ntpd without one keeps the clock.
pub fn host_tai_offset_s() -> Result<u32> {
    // SAFETY: adjtimex with modes = 0 only reads into the zeroed struct.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    if unsafe { libc::adjtimex(&mut tx) } < 0 {
        return Err(Error::io("adjtimex", std::io::Error::last_os_error()));
    }
    Ok(tx.tai.max(0) as u32)
}

/// Write the host's facts a CCA needs into its tunables, right after it is
/// registered: qfair's TAI offset, so that its drains fall on UTC multiples
/// of the period on every host whatever its NTP daemon set (the caller
/// holds the installation lock). A no-op for the other CCAs.
pub(crate) fn write_host_facts(fs: &BpfFs, cca: Cca) -> Result<()> {
    if cca.base() != Cca::Qfair {
        return Ok(());
    }
    let t = Tunable::find("qfair.tai_offset_s")?;
    write_field(fs, cca, t, host_tai_offset_s()?)
}

fn check_loaded(fs: &BpfFs, cca: Cca) -> Result<()> {
    if !crate::loaded::is_loaded(cca, fs) {
        return Err(Error::NotLoaded {
            cca: format!("{cca} (its tunables exist while it is loaded)"),
        });
    }
    Ok(())
}

fn open_map(fs: &BpfFs, cca: Cca, t: &Tunable) -> Result<libbpf_rs::MapHandle> {
    let pin = pin_of(cca).unwrap_or_else(|| panic!("{} is not a tunable of {cca}", t.full_name()));
    if !fs.map_pin(&pin).exists() {
        return Err(Error::NotLoaded {
            cca: format!("{cca} (its tunables live in its pinned map)"),
        });
    }
    fs.open_map(&pin)
}

/// Current values of every tunable of `cca` (or all loaded CCAs, second
/// names too). Naming a CCA that is not loaded is an error.
pub fn get(fs: &BpfFs, filter: Option<&str>) -> Result<Vec<Value>> {
    fs.check_access("reading tunables")?;
    let of = |cca: Cca| {
        ALL.iter()
            .filter(move |t| t.cca == cca.base())
            .map(move |t| (cca, t))
    };
    let selected: Vec<(Cca, &Tunable)> = match filter {
        None => crate::loaded::pinned(fs)
            .into_iter()
            .filter(|c| crate::loaded::is_loaded(*c, fs))
            .flat_map(of)
            .collect(),
        Some(f) if f.contains('.') => vec![resolve(f)?],
        Some(f) => of(f.parse()?).collect(),
    };
    let mut out = Vec::new();
    for (cca, t) in selected {
        check_loaded(fs, cca)?;
        let stored = read_raw(fs, cca, t)?[t.field];
        out.push(Value {
            name: format!("{cca}.{}", t.name),
            value: t.display(stored),
            is_default: stored == 0,
            unit: t.unit,
            help: t.help,
        });
    }
    Ok(out)
}

/// Validate and store one tunable; returns the value now in effect.
pub fn set(fs: &BpfFs, full: &str, text: &str) -> Result<Value> {
    crate::preflight::require(&format!("setting {full}"), crate::preflight::WRITE_TUNABLES)?;
    let (cca, t) = resolve(full)?;
    // A second name's refusal names it (`qfair_b.x`), not qfair's.
    let stored = t.parse(text).map_err(|e| match e {
        Error::InvalidValue { reason, .. } => Error::InvalidValue {
            name: full.to_string(),
            reason,
        },
        e => e,
    })?;
    check_loaded(fs, cca)?;
    // Under the installation lock, so a concurrent `set` of another field of
    // the same CCA is not lost.
    let _lock = fs.lock(crate::bpffs::LOCK_WAIT)?;
    write_field(fs, cca, t, stored)?;
    Ok(Value {
        name: format!("{cca}.{}", t.name),
        value: t.display(stored),
        is_default: false,
        unit: t.unit,
        help: t.help,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_validates_type_and_range() {
        let beta = Tunable::find("fairtt.beta").unwrap();
        assert_eq!(beta.parse("0.8").unwrap(), 800_000);
        for bad in ["NaN", "inf", "-0.1", "1.5", "abc", "", "0"] {
            assert!(beta.parse(bad).is_err(), "{bad} accepted");
        }
        let w = Tunable::find("fairtt.window_ms").unwrap();
        assert_eq!(w.parse("250").unwrap(), 250);
        assert!(
            w.parse("250.5").is_err(),
            "fraction accepted for an integer"
        );
        assert!(w.parse("5").is_err(), "below range accepted");
        let m = Tunable::find("adbbr.gamma_mode").unwrap();
        assert!(m.parse("4").is_err());
        assert!(Tunable::find("fairtt.nope").is_err());
        assert!(Tunable::find("cubic.beta").is_err());
        assert!(Tunable::find("beta").is_err());
    }

    /// A refusal names what there is: for an unknown tunable the CCA's own
    /// tunables (not every CCA's), for a CCA without any (or a kernel
    /// CCA) that it has none and which CCAs have some; a range with its
    /// unit apart from the number.
    #[test]
    fn refusals_name_what_there_is() {
        let reason = |r: Result<u32>| match r {
            Err(Error::InvalidValue { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        let unknown = reason(Tunable::find("qfair.exit_drain").map(|_| 0));
        assert!(
            unknown.starts_with("no such tunable of qfair; its tunables: qfair.alpha0, "),
            "{unknown}"
        );
        assert!(unknown.contains("qfair.exit_drains, "), "{unknown}");
        assert!(unknown.ends_with("qfair.rules_off"), "{unknown}");
        assert!(!unknown.contains("fairtt."), "{unknown}");
        for cca in ["bbr1", "cubic"] {
            assert_eq!(
                reason(Tunable::find(&format!("{cca}.beta")).map(|_| 0)),
                format!("{cca} has no tunables; CCAs with tunables: fairtt, adbbr, qfair")
            );
        }
        let drains = Tunable::find("qfair.exit_drains").unwrap();
        assert_eq!(
            reason(drains.parse("9")),
            "must be between 1 and 8 drains, got 9"
        );
        assert_eq!(
            reason(Tunable::find("fairtt.beta").unwrap().parse("2")),
            "must be between 0 and 1, got 2"
        );
    }

    const QFAIR_C: &str = include_str!("../../bpf/qfair.bpf.c");

    /// The value of `#define NAME VALUE` in the C source `src`: a number, a
    /// bit `(1U << N)`, or a define naming another define
    /// (ADBBR_GAMMA_NORMALIZED), looked up in `src` and the headers.
    fn define(src: &str, name: &str) -> f64 {
        let math = include_str!("../../bpf/include/adbbr_math.h");
        let abi = include_str!("../../bpf/include/rttfair_abi.h");
        let line = src
            .lines()
            .find(|l| l.starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("#define {name} missing"));
        let v = line.split_whitespace().nth(2).unwrap();
        if let Ok(n) = v.parse::<f64>() {
            return n;
        }
        if v == "(1U" {
            let shift = line
                .split_once("(1U << ")
                .and_then(|(_, rest)| rest.split_once(')'))
                .and_then(|(n, _)| n.trim().parse::<u32>().ok())
                .unwrap_or_else(|| panic!("#define {name}: expected (1U << N)"));
            return f64::from(1u32 << shift);
        }
        math.lines()
            .chain(src.lines())
            .chain(QFAIR_C.lines())
            .chain(abi.lines())
            .find(|l| l.starts_with(&format!("#define {v} ")))
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("cannot resolve {v}"))
    }

    /// The defaults shown to users are the ones the BPF programs apply when a
    /// field is 0: read them from the C sources' #defines.
    #[test]
    fn defaults_match_the_bpf_defaults() {
        let fairtt = include_str!("../../bpf/fairtt.bpf.c");
        let adbbr = include_str!("../../bpf/adbbr.bpf.c");
        let qfair = QFAIR_C;
        let expect = [
            ("fairtt.beta", define(fairtt, "FAIRTT_DEF_BETA_PPM")),
            ("fairtt.gamma", define(fairtt, "FAIRTT_DEF_GAMMA_PPM")),
            ("fairtt.window_ms", define(fairtt, "FAIRTT_DEF_WINDOW_MS")),
            ("fairtt.tolerance_pct", define(fairtt, "FAIRTT_DEF_TOL_PCT")),
            ("fairtt.scope", define(fairtt, "FAIRTT_DEF_SCOPE")),
            ("adbbr.alpha", define(adbbr, "ADBBR_DEF_ALPHA_PPM")),
            ("adbbr.hold_ms", define(adbbr, "ADBBR_DEF_HOLD_MS")),
            ("adbbr.x", define(adbbr, "ADBBR_DEF_X_PPM")),
            ("adbbr.zmin_us", define(adbbr, "ADBBR_DEF_ZMIN_US")),
            (
                "adbbr.probe_hold_ms",
                define(adbbr, "ADBBR_DEF_PROBE_HOLD_MS"),
            ),
            ("adbbr.gamma_mode", define(adbbr, "ADBBR_DEF_GAMMA_MODE")),
            (
                "adbbr.gamma_ref_us",
                define(adbbr, "ADBBR_DEF_GAMMA_REF_US"),
            ),
            (
                "adbbr.eta_floor_us",
                define(adbbr, "ADBBR_DEF_ETA_FLOOR_US"),
            ),
            ("qfair.alpha0", define(qfair, "QFAIR_DEF_ALPHA0_X1024")),
            ("qfair.k_alpha", define(qfair, "QFAIR_DEF_K_ALPHA_X1024")),
            ("qfair.tau_g_ms", define(qfair, "QFAIR_DEF_TAU_G_MS")),
            ("qfair.g_cap", define(qfair, "QFAIR_DEF_G_CAP_X256")),
            (
                "qfair.drain_period_ms",
                define(qfair, "QFAIR_DEF_DRAIN_PERIOD_MS"),
            ),
            ("qfair.drain_clock", define(qfair, "QFAIR_DEF_DRAIN_CLOCK")),
            ("qfair.competitive", define(qfair, "QFAIR_DEF_COMPETITIVE")),
            ("qfair.o_cap", define(qfair, "QFAIR_DEF_O_CAP_X256")),
            ("qfair.exit_drains", define(qfair, "QFAIR_DEF_EXIT_DRAINS")),
            (
                "qfair.drain_phase_ms",
                define(qfair, "QFAIR_DEF_DRAIN_PHASE_MS"),
            ),
            (
                "qfair.tai_offset_s",
                define(qfair, "QFAIR_DEF_TAI_OFFSET_S"),
            ),
            ("qfair.rules_off", define(qfair, "QFAIR_DEF_RULES_OFF")),
        ];
        assert_eq!(expect.len(), ALL.len());
        for (name, stored) in expect {
            let t = Tunable::find(name).unwrap();
            assert_eq!((t.default * t.scale).round(), stored, "{name}");
        }
    }

    /// The rules qfair.rules_off switches off are one table: its bits are
    /// 1, 2, 4, ... in order, the `#define QF_RULE_<NAME>` lines of
    /// bpf/qfair.bpf.c are exactly its names with the same bits, the
    /// tunable's range is every combination of them, and its help lists
    /// each name with its bit.
    #[test]
    fn qfair_rules_match_the_bpf_defines_and_the_help() {
        for (i, (name, bit)) in QFAIR_RULES.iter().enumerate() {
            assert_eq!(*bit, 1u32 << i, "{name}");
        }
        let defined: Vec<&str> = QFAIR_C
            .lines()
            .filter_map(|l| l.strip_prefix("#define QF_RULE_"))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let table: Vec<String> = QFAIR_RULES
            .iter()
            .map(|(name, _)| name.to_uppercase())
            .collect();
        assert_eq!(defined, table, "the QF_RULE_* defines, in order");
        for (name, bit) in QFAIR_RULES {
            let c = format!("QF_RULE_{}", name.to_uppercase());
            assert_eq!(define(QFAIR_C, &c), f64::from(*bit), "{c}");
        }
        let t = Tunable::find("qfair.rules_off").unwrap();
        assert_eq!(t.max, f64::from((1u32 << QFAIR_RULES.len()) - 1));
        assert_eq!((t.min, t.default, t.unit, t.integer), (0.0, 0.0, "", true));
        assert_eq!(t.parse("0").unwrap(), 0, "0 is the whole law");
        let all: u32 = QFAIR_RULES.iter().map(|(_, bit)| bit).sum();
        assert_eq!(t.parse(&all.to_string()).unwrap(), all);
        assert!(t.parse(&(all + 1).to_string()).is_err());
        let listed: Vec<&str> = t.help.split([':', ',', ';']).map(str::trim).collect();
        for (name, bit) in QFAIR_RULES {
            let entry = format!("{name} {bit}");
            assert!(
                listed.contains(&entry.as_str()),
                "{entry} not in: {}",
                t.help
            );
        }
    }

    /// scripts/ablation.sh runs one sweep per rule of the table, with the
    /// table's bit: its `RULES="name:bit ..."` line is the table.
    #[test]
    fn the_ablation_script_lists_the_rules_of_the_table() {
        let script = include_str!("../../scripts/ablation.sh");
        let line = script
            .lines()
            .find_map(|l| l.strip_prefix("RULES=\""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("scripts/ablation.sh: a RULES=\"name:bit ...\" line");
        let listed: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let table: Vec<String> = QFAIR_RULES
            .iter()
            .map(|(name, bit)| format!("{name}:{bit}"))
            .collect();
        assert_eq!(listed, table);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Any text for any tunable: an error, or a stored value inside the range.
        #[test]
        fn parse_never_panics_and_accepts_only_in_range(idx in 0..ALL.len(), text in prop_oneof![
            ".{0,24}",
            any::<f64>().prop_map(|v| format!("{v}")),
            any::<i64>().prop_map(|v| v.to_string()),
        ]) {
            let t = &ALL[idx];
            if let Ok(stored) = t.parse(&text) {
                let v = t.display(stored);
                prop_assert!(v >= t.min - 1e-6 && v <= t.max + 1e-6, "{} = {text} stored as {v}", t.full_name());
            }
        }
    }
}
