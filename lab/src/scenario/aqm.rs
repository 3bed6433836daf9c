//! The bottleneck's queue discipline (issue 44), as a scenario gives it in
//! its `[bottleneck]` table: `aqm = "fifo" | "codel" | "fq_codel" |
//! "ecn_step"` and each one's parameters, checked once with one line naming
//! the key. The programs that apply it are [`crate::net::aqm`]'s.
//!
//! | key | disciplines | default |
//! |---|---|---|
//! | `target_ms` | codel, fq_codel | 5 (RFC 8289) |
//! | `interval_ms` | codel, fq_codel | 100, at most 4000 |
//! | `ecn` | codel, fq_codel | false: mark ECT packets instead of dropping them |
//! | `quantum` | fq_codel | 1514 bytes |
//! | `flows` | fq_codel | 16 queues, 1..=64 (one HTB leaf each) |
//! | `k_packets` or `k_ms` | ecn_step (one of them) | none: mark above K |
//!
//! A discipline that marks (ecn_step, or `ecn = true`) needs the scenario's
//! `tcp_ecn = true` and CCAs that answer a CE echo ([`cca_uses_ecn`]).

use serde::Serialize;

/// RFC 8289's TARGET and INTERVAL.
pub const DEFAULT_TARGET_MS: f64 = 5.0;
pub const DEFAULT_INTERVAL_MS: f64 = 100.0;
/// RFC 8290's quantum (one MTU, bytes) and flow queues (1024); the lab
/// builds an HTB leaf class per queue, so it defaults to [`DEFAULT_FLOWS`]
/// and refuses more than [`MAX_FLOWS`] (the program's queue map).
pub const DEFAULT_QUANTUM: u32 = 1514;
pub const DEFAULT_FLOWS: u32 = 16;
pub const MAX_FLOWS: u32 = 64;
/// Largest interval the control law takes (its square in ns fits 64 bits).
const MAX_INTERVAL_MS: f64 = 4000.0;

/// The bottleneck's queue discipline, `[bottleneck] aqm = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(tag = "aqm", rename_all = "snake_case")]
pub enum Discipline {
    /// Drop-tail only (the lab's default); no program.
    #[default]
    Fifo,
    Codel {
        target_ms: f64,
        interval_ms: f64,
        ecn: bool,
    },
    FqCodel {
        target_ms: f64,
        interval_ms: f64,
        ecn: bool,
        quantum: u32,
        flows: u32,
    },
    /// Mark ECT packets whose sojourn exceeds K (K packets are turned into
    /// their time at the bottleneck's rate: `k_packets` x packet time).
    EcnStep { k: StepK },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepK {
    Packets(u32),
    Ms(f64),
}

impl Discipline {
    /// Whether the discipline marks packets (and so wants ECN negotiated).
    pub fn marks(&self) -> bool {
        match self {
            Discipline::Fifo => false,
            Discipline::Codel { ecn, .. } | Discipline::FqCodel { ecn, .. } => *ecn,
            Discipline::EcnStep { .. } => true,
        }
    }
}

/// Read the discipline from a scenario's `[bottleneck]` table. Errors are
/// one line naming the key.
pub fn parse(t: &toml::Table) -> std::result::Result<Discipline, String> {
    let name = match t.get("aqm") {
        None => return Ok(Discipline::Fifo),
        Some(v) => v
            .as_str()
            .ok_or("bottleneck.aqm: expected a string (fifo, codel, fq_codel, ecn_step)")?,
    };
    let float = |key: &str, default: f64| -> std::result::Result<f64, String> {
        match t.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .ok_or(format!("bottleneck.{key}: expected a number")),
        }
    };
    let uint = |key: &str, default: u32| -> std::result::Result<u32, String> {
        match t.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_integer()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or(format!("bottleneck.{key}: expected a whole number >= 0")),
        }
    };
    let ecn = match t.get("ecn") {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or("bottleneck.ecn: expected true or false")?,
    };
    let allowed: &[&str] = match name {
        "fifo" => &["aqm"],
        "codel" => &["aqm", "target_ms", "interval_ms", "ecn"],
        "fq_codel" => &["aqm", "target_ms", "interval_ms", "ecn", "quantum", "flows"],
        "ecn_step" => &["aqm", "k_packets", "k_ms"],
        other => {
            return Err(format!(
                "bottleneck.aqm: unknown discipline {other:?} (fifo, codel, fq_codel, ecn_step)"
            ))
        }
    };
    const AQM_KEYS: &[&str] = &[
        "target_ms",
        "interval_ms",
        "ecn",
        "quantum",
        "flows",
        "k_packets",
        "k_ms",
    ];
    for k in t.keys() {
        if AQM_KEYS.contains(&k.as_str()) && !allowed.contains(&k.as_str()) {
            return Err(format!("bottleneck.{k}: not a parameter of aqm = {name:?}"));
        }
    }
    let times = || -> std::result::Result<(f64, f64), String> {
        let target = float("target_ms", DEFAULT_TARGET_MS)?;
        let interval = float("interval_ms", DEFAULT_INTERVAL_MS)?;
        if !(target > 0.0 && target.is_finite()) {
            return Err(format!("bottleneck.target_ms: must be > 0 (got {target})"));
        }
        if !(interval > 0.0 && interval <= MAX_INTERVAL_MS) {
            return Err(format!(
                "bottleneck.interval_ms: must be in (0, {MAX_INTERVAL_MS}] (got {interval})"
            ));
        }
        if target >= interval {
            return Err(format!(
                "bottleneck.target_ms: must be below interval_ms ({target} >= {interval})"
            ));
        }
        Ok((target, interval))
    };
    Ok(match name {
        "fifo" => Discipline::Fifo,
        "codel" => {
            let (target_ms, interval_ms) = times()?;
            Discipline::Codel {
                target_ms,
                interval_ms,
                ecn,
            }
        }
        "fq_codel" => {
            let (target_ms, interval_ms) = times()?;
            let quantum = uint("quantum", DEFAULT_QUANTUM)?;
            if quantum == 0 {
                return Err("bottleneck.quantum: must be > 0".into());
            }
            let flows = uint("flows", DEFAULT_FLOWS)?;
            if flows == 0 || flows > MAX_FLOWS {
                return Err(format!(
                    "bottleneck.flows: must be 1..={MAX_FLOWS} (got {flows})"
                ));
            }
            Discipline::FqCodel {
                target_ms,
                interval_ms,
                ecn,
                quantum,
                flows,
            }
        }
        _ => {
            let k = match (t.contains_key("k_packets"), t.contains_key("k_ms")) {
                (true, true) => {
                    return Err("bottleneck.k_ms: give k_packets or k_ms, not both".into())
                }
                (false, false) => {
                    return Err("bottleneck.k_packets: ecn_step needs k_packets or k_ms".into())
                }
                (true, false) => {
                    let k = uint("k_packets", 0)?;
                    if k == 0 {
                        return Err("bottleneck.k_packets: must be > 0".into());
                    }
                    StepK::Packets(k)
                }
                (false, true) => {
                    let k = float("k_ms", 0.0)?;
                    if !(k > 0.0 && k.is_finite()) {
                        return Err(format!("bottleneck.k_ms: must be > 0 (got {k})"));
                    }
                    StepK::Ms(k)
                }
            };
            Discipline::EcnStep { k }
        }
    })
}

/// How a CCA answers a CE echo, decided from what its code does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnResponse {
    /// Cuts its window on ECE: the kernel's Reno and CUBIC
    /// (tcp_enter_cwr), DCTCP (by the marked fraction); qfair (a CE-marked
    /// packet halves alpha as a lost one does, Eq. 7).
    Reacts,
    /// The project's bbr3 (bpf/include/bbr3_core.h): ECE rounds cut
    /// inflight_lo by ecn_alpha / 3 (Eq. 3) and a high CE ratio ends
    /// Startup, but, as in BBRv3, only while its min_rtt is at most
    /// BBR3_ECN_MAX_RTT_US (5 ms); above that it ignores the marks.
    ReactsAtLowRtt,
    /// Anything else: the BBR v1 family (the kernel's bbr, the project's
    /// bbr1, bbr_native, fairtt, adbbr) keeps its model's cwnd whatever
    /// ECE says; an unknown CCA is not trusted to react.
    Ignores,
}

/// What `cca` does with a CE echo (see [`EcnResponse`]).
pub fn ecn_response(cca: &str) -> EcnResponse {
    match cca {
        "cubic" | "reno" | "dctcp" | "qfair" => EcnResponse::Reacts,
        "bbr3" => EcnResponse::ReactsAtLowRtt,
        _ => EcnResponse::Ignores,
    }
}

/// Whether a bottleneck that marks may run `cca`.
pub fn cca_uses_ecn(cca: &str) -> bool {
    matches!(
        ecn_response(cca),
        EcnResponse::Reacts | EcnResponse::ReactsAtLowRtt
    )
}

/// The scenario-level check: a discipline that marks needs `tcp_ecn` on and
/// CCAs that react to marks; `tcp_ecn` without marks is allowed (it only
/// negotiates). One line naming the key: `bottleneck.ecn`, or for ecn_step
/// (which always marks) `bottleneck.aqm`.
pub fn check_ecn(d: &Discipline, tcp_ecn: bool, ccas: &[&str]) -> std::result::Result<(), String> {
    if !d.marks() {
        return Ok(());
    }
    if !tcp_ecn {
        return Err(
            "tcp_ecn: the bottleneck marks ECN (bottleneck.ecn or ecn_step), set tcp_ecn = true"
                .into(),
        );
    }
    let key = match d {
        Discipline::EcnStep { .. } => "bottleneck.aqm",
        _ => "bottleneck.ecn",
    };
    for c in ccas {
        match ecn_response(c) {
            EcnResponse::Reacts | EcnResponse::ReactsAtLowRtt => {}
            EcnResponse::Ignores => {
                return Err(format!(
                "{key}: CCA {c} does not react to ECN marks (only cubic, reno, dctcp, qfair, bbr3)"
            ))
            }
        }
    }
    Ok(())
}

/// Refuse a discipline the dumbbell cannot build, before anything runs.
pub fn check_build(d: &Discipline, segment_at_bottleneck: bool) -> Result<(), String> {
    if segment_at_bottleneck && *d != Discipline::Fifo {
        return Err("bottleneck.aqm: cannot be combined with segment_gso (the GSO super-packets would be stamped whole, before TBF cuts them)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    #[test]
    fn defaults_are_the_rfcs() {
        assert_eq!(parse(&table("")).unwrap(), Discipline::Fifo);
        assert_eq!(
            parse(&table("aqm = \"codel\"")).unwrap(),
            Discipline::Codel {
                target_ms: 5.0,
                interval_ms: 100.0,
                ecn: false
            }
        );
        assert_eq!(
            parse(&table("aqm = \"fq_codel\"\necn = true\nflows = 8")).unwrap(),
            Discipline::FqCodel {
                target_ms: 5.0,
                interval_ms: 100.0,
                ecn: true,
                quantum: 1514,
                flows: 8
            }
        );
        assert_eq!(
            parse(&table("aqm = \"ecn_step\"\nk_packets = 65")).unwrap(),
            Discipline::EcnStep {
                k: StepK::Packets(65)
            }
        );
    }

    #[test]
    fn bad_parameters_name_the_key() {
        for (s, key) in [
            ("aqm = \"red\"", "bottleneck.aqm"),
            ("aqm = 3", "bottleneck.aqm"),
            ("aqm = \"ecn_step\"\nk_packets = 0", "bottleneck.k_packets"),
            ("aqm = \"ecn_step\"\nk_ms = 0", "bottleneck.k_ms"),
            ("aqm = \"ecn_step\"", "bottleneck.k_packets"),
            (
                "aqm = \"ecn_step\"\nk_ms = 1\nk_packets = 3",
                "bottleneck.k_ms",
            ),
            ("aqm = \"codel\"\ntarget_ms = 0", "bottleneck.target_ms"),
            (
                "aqm = \"codel\"\ninterval_ms = 5000",
                "bottleneck.interval_ms",
            ),
            ("aqm = \"codel\"\ntarget_ms = 200", "bottleneck.target_ms"),
            ("aqm = \"codel\"\nflows = 4", "bottleneck.flows"),
            ("aqm = \"fq_codel\"\nflows = 0", "bottleneck.flows"),
            ("aqm = \"fq_codel\"\nflows = 65", "bottleneck.flows"),
            ("aqm = \"fq_codel\"\nquantum = 0", "bottleneck.quantum"),
            ("aqm = \"fifo\"\necn = true", "bottleneck.ecn"),
        ] {
            let e = parse(&table(s)).unwrap_err();
            assert!(e.starts_with(&format!("{key}:")), "{s:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn ecn_needs_tcp_ecn_and_a_cca_that_reacts() {
        let codel_ecn = parse(&table("aqm = \"codel\"\necn = true")).unwrap();
        assert!(check_ecn(&codel_ecn, true, &["cubic", "reno"]).is_ok());
        assert!(check_ecn(&codel_ecn, false, &["cubic"])
            .unwrap_err()
            .starts_with("tcp_ecn:"));
        assert!(check_ecn(&codel_ecn, true, &["cubic", "bbr1"])
            .unwrap_err()
            .starts_with("bottleneck.ecn:"));
        assert!(check_ecn(&codel_ecn, true, &["bbr3", "cubic"]).is_ok());
        assert!(check_ecn(&codel_ecn, true, &["qfair", "cubic"]).is_ok());
        let e = check_ecn(&codel_ecn, true, &["qfair", "adbbr"]).unwrap_err();
        assert!(
            e.starts_with("bottleneck.ecn:") && e.contains("adbbr"),
            "{e}"
        );
        let step = parse(&table("aqm = \"ecn_step\"\nk_ms = 1")).unwrap();
        assert!(check_ecn(&step, true, &["fairtt"])
            .unwrap_err()
            .starts_with("bottleneck.aqm:"));
        let codel = parse(&table("aqm = \"codel\"")).unwrap();
        assert!(check_ecn(&codel, false, &["bbr1"]).is_ok());
    }
}
