//! Bottlenecks beyond drop-tail (issue 44): CoDel, FQ-CoDel and ECN step
//! marking at the dumbbell's bottleneck, from the lab's own tc-BPF
//! programs (`bpf/lab_aqm.bpf.c`; the decisions are `bpf/include/aqm_math.h`,
//! tested against RFC 8289's pseudocode in loader/tests/aqm_math.rs).
//!
//! Where each piece runs (the programs' file comment says why):
//! - the rate limit and the drop-tail backstop stay HTB + bfifo on the
//!   router's `r1` egress ([`crate::net::link::shape`]); for FQ-CoDel the rate
//!   class gets one leaf class per flow queue, equal quantum, each with its
//!   own bfifo ([`shape_fq`]): HTB's DRR among backlogged leaves is
//!   FQ-CoDel's DRR among queues;
//! - `lab_aqm_enqueue` on `r1`'s tc egress stamps each packet's enqueue
//!   time (and picks its flow queue);
//! - `lab_aqm_dequeue` on the receivers' `c0` tc ingress, right after the
//!   bottleneck, computes the sojourn and drops or CE-marks.
//!
//! What RFC 8290 has that this does not: the new-flows list (a sparse
//! flow's first packets served ahead of the old flows; HTB has one DRR
//! round for all leaves) and the drop from the fattest queue on overflow
//! (each leaf's bfifo drops its own tail).

use std::net::Ipv4Addr;
use std::os::fd::AsFd;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};

use crate::net::link::{self, Bottleneck};
use crate::net::netns::Netns;

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

// bpf/include/lab_aqm.h
const MODE_FIFO: u32 = 0;
const MODE_CODEL: u32 = 1;
const MODE_FQ_CODEL: u32 = 2;
const MODE_ECN_STEP: u32 = 3;
/// HTB leaf of flow queue i: 1:(LEAF_MINOR_BASE + i).
const LEAF_MINOR_BASE: u32 = 0x100;
/// The tc filters' handle and priority: before the arrival counter's
/// (0x17) on c0's ingress, so a dropped packet never counts as goodput.
const TC_HANDLE: u32 = 0x44;
const TC_PRIORITY: u32 = 0x10;

/// The bottleneck's queue discipline, `[bottleneck] aqm = "..."`.
#[derive(Debug, Clone, PartialEq)]
pub enum Discipline {
    /// Drop-tail only (the lab's default); no program.
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

#[derive(Debug, Clone, Copy, PartialEq)]
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

/// CCAs whose response to ECN echoes the lab can rely on: the kernel's
/// Reno and CUBIC (tcp_enter_cwr). BBR v1 and the project's BBR-based
/// CCAs keep their model's cwnd whatever ECE says.
pub fn cca_uses_ecn(cca: &str) -> bool {
    matches!(cca, "cubic" | "reno")
}

/// The scenario-level check: a discipline that marks needs `tcp_ecn` on and
/// CCAs that react to marks; `tcp_ecn` without marks is allowed (it only
/// negotiates). One line naming the key.
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
    if let Some(c) = ccas.iter().find(|c| !cca_uses_ecn(c)) {
        return Err(format!(
            "bottleneck.ecn: CCA {c} does not react to ECN marks (only cubic, reno)"
        ));
    }
    Ok(())
}

/// `net.ipv4.tcp_ecn` in a namespace: 1 requests and accepts ECN, 2 (the
/// kernel's default) only accepts it.
pub fn set_tcp_ecn(ns: &Netns, on: bool) -> Result<()> {
    let v = if on { "1" } else { "2" };
    ns.exec("sysctl", &["-qw", &format!("net.ipv4.tcp_ecn={v}")])?;
    Ok(())
}

/// The bottleneck for FQ-CoDel: HTB root 1:, rate class 1:1, and under it
/// `flows` leaves 1:(0x100 + i), each rate/flows guaranteed, ceil the
/// full rate, the same quantum, and a bfifo of the scenario's buffer (the
/// drop-tail backstop; CoDel keeps each queue far below it). Unclassified
/// packets (ARP) go to leaf 0.
pub fn shape_fq(ns: &Netns, ifname: &str, b: Bottleneck, flows: u32, quantum: u32) -> Result<()> {
    let rate = format!("{}bit", b.rate_bit);
    let burst = format!("{}b", link::htb_burst_bytes(b.rate_bit));
    let leaf_rate = format!("{}bit", (b.rate_bit / flows as u64).max(8));
    let default = format!("{:x}", LEAF_MINOR_BASE);
    ns.exec(
        "tc",
        &[
            "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "htb", "default", &default,
        ],
    )?;
    ns.exec(
        "tc",
        &[
            "class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", &rate,
            "ceil", &rate, "burst", &burst, "cburst", &burst,
        ],
    )?;
    let limit = b.limit_bytes.to_string();
    let quantum = quantum.to_string();
    for i in 0..flows {
        let minor = LEAF_MINOR_BASE + i;
        let classid = format!("1:{minor:x}");
        ns.exec(
            "tc",
            &[
                "class", "add", "dev", ifname, "parent", "1:1", "classid", &classid, "htb", "rate",
                &leaf_rate, "ceil", &rate, "burst", &burst, "cburst", &burst, "quantum", &quantum,
            ],
        )?;
        let handle = format!("{minor:x}:");
        ns.exec(
            "tc",
            &[
                "qdisc", "add", "dev", ifname, "parent", &classid, "handle", &handle, "bfifo",
                "limit", &limit,
            ],
        )?;
    }
    Ok(())
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawConfig {
    target_ns: u64,
    interval_ns: u64,
    k_ns: u64,
    mode: u32,
    ecn: u32,
    flows: u32,
    class_major: u32,
    class_minor_base: u32,
    pad: u32,
}

/// Counters of one sender address (one lab flow), from the dequeue side.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowStats {
    pub packets: u64,
    pub drops: u64,
    pub marks: u64,
    /// Packets without an enqueue stamp (passed unjudged).
    pub unstamped: u64,
    pub sojourn_sum_ns: u64,
    pub sojourn_max_ns: u64,
}

/// Counters of one flow queue (CoDel instance).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub packets: u64,
    pub drops: u64,
    pub marks: u64,
}

fn config_of(d: &Discipline, rate_bit: u64) -> RawConfig {
    let ms = |x: f64| (x * 1e6).round() as u64;
    let mut c = RawConfig {
        class_major: 1,
        class_minor_base: LEAF_MINOR_BASE,
        ..Default::default()
    };
    match *d {
        Discipline::Fifo => c.mode = MODE_FIFO,
        Discipline::Codel {
            target_ms,
            interval_ms,
            ecn,
        } => {
            c.mode = MODE_CODEL;
            c.target_ns = ms(target_ms);
            c.interval_ns = ms(interval_ms);
            c.ecn = ecn as u32;
        }
        Discipline::FqCodel {
            target_ms,
            interval_ms,
            ecn,
            flows,
            ..
        } => {
            c.mode = MODE_FQ_CODEL;
            c.target_ns = ms(target_ms);
            c.interval_ns = ms(interval_ms);
            c.ecn = ecn as u32;
            c.flows = flows;
        }
        Discipline::EcnStep { k } => {
            c.mode = MODE_ECN_STEP;
            c.ecn = 1;
            c.k_ns = match k {
                StepK::Ms(m) => ms(m),
                StepK::Packets(p) => {
                    p as u64 * crate::scenario::WIRE_PACKET * 8 * 1_000_000_000 / rate_bit.max(1)
                }
            };
        }
    }
    c
}

fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a #[repr(C)] plain-data struct without padding holes
    // that matter (the program reads the fields it wrote the layout for).
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

fn from_bytes<T: Copy + Default>(b: &[u8]) -> T {
    let mut v = T::default();
    let n = std::mem::size_of::<T>().min(b.len());
    // SAFETY: plain-data #[repr(C)] struct of u64s; n bytes at most.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), &mut v as *mut T as *mut u8, n) };
    v
}

/// The loaded programs, attached. The tc filters hold the programs (and
/// through them the maps) until the dumbbell's namespaces are deleted,
/// which removes them; this keeps the object for reading the counters.
pub struct Aqm {
    obj: Object,
}

impl Aqm {
    /// Load the programs for `d` and attach them: the enqueue stamp on
    /// `router`'s `bottleneck_if` egress, the decision on `rcv`'s
    /// `rcv_if` ingress.
    pub fn attach(
        d: &Discipline,
        rate_bit: u64,
        router: &Netns,
        bottleneck_if: &str,
        rcv: &Netns,
        rcv_if: &str,
    ) -> Result<Aqm> {
        let obj = ObjectBuilder::default()
            .open_memory(rttfair_loader::objects::lab::AQM)
            .context("open the AQM programs")?
            .load()
            .context("load the AQM programs")?;
        let cfg = config_of(d, rate_bit);
        obj.maps()
            .find(|m| m.name() == "aqm_config")
            .context("aqm_config map")?
            .update(&0u32.to_ne_bytes(), as_bytes(&cfg), MapFlags::ANY)
            .context("write the AQM config")?;
        let aqm = Aqm { obj };
        aqm.hook(
            router,
            bottleneck_if,
            "lab_aqm_enqueue",
            libbpf_rs::TC_EGRESS,
        )?;
        aqm.hook(rcv, rcv_if, "lab_aqm_dequeue", libbpf_rs::TC_INGRESS)?;
        Ok(aqm)
    }

    fn hook(
        &self,
        ns: &Netns,
        ifname: &str,
        prog: &str,
        point: libbpf_rs::TcAttachPoint,
    ) -> Result<()> {
        let fd = self
            .obj
            .progs()
            .find(|p| p.name() == prog)
            .with_context(|| format!("program {prog}"))?
            .as_fd()
            .try_clone_to_owned()?;
        let name = ifname.to_string();
        ns.run(move || -> Result<()> {
            let idx = nix::net::if_::if_nametoindex(name.as_str())
                .with_context(|| format!("no interface {name}"))? as i32;
            let mut hook = tc_hook(fd.as_fd(), idx, point);
            hook.create().context("create clsact")?;
            hook.attach().with_context(|| format!("attach {name}"))?;
            Ok(())
        })??;
        Ok(())
    }

    /// Counters per sender address.
    pub fn flow_stats(&self) -> Vec<(Ipv4Addr, FlowStats)> {
        let Some(map) = self.obj.maps().find(|m| m.name() == "aqm_flow_stats") else {
            return Vec::new();
        };
        let mut out: Vec<(Ipv4Addr, FlowStats)> = map
            .keys()
            .filter_map(|k| {
                let v = map.lookup(&k, MapFlags::ANY).ok().flatten()?;
                let a: [u8; 4] = k.get(..4)?.try_into().ok()?;
                Some((Ipv4Addr::from(a), from_bytes(&v)))
            })
            .collect();
        out.sort_by_key(|(a, _)| *a);
        out
    }

    /// Counters of the first `n` flow queues (1 for CoDel).
    pub fn queue_stats(&self, n: u32) -> Vec<QueueStats> {
        let Some(map) = self.obj.maps().find(|m| m.name() == "aqm_queue_stats") else {
            return Vec::new();
        };
        (0..n.min(MAX_FLOWS))
            .map(|i| {
                map.lookup(&i.to_ne_bytes(), MapFlags::ANY)
                    .ok()
                    .flatten()
                    .map(|v| from_bytes(&v))
                    .unwrap_or_default()
            })
            .collect()
    }
}

fn tc_hook(
    prog: std::os::fd::BorrowedFd<'_>,
    ifindex: i32,
    point: libbpf_rs::TcAttachPoint,
) -> libbpf_rs::TcHook {
    libbpf_rs::TcHookBuilder::new(prog)
        .ifindex(ifindex)
        .replace(true)
        .handle(TC_HANDLE)
        .priority(TC_PRIORITY)
        .hook(point)
}

/// One CSV row per flow per sample: `t_s,flow,packets,drops,marks,unstamped,
/// sojourn_mean_ms,sojourn_max_ms`, the mean over the packets since the
/// previous sample.
pub struct AqmCsv<W: std::io::Write> {
    out: W,
    last: std::collections::HashMap<Ipv4Addr, FlowStats>,
}

impl<W: std::io::Write> AqmCsv<W> {
    pub fn new(mut out: W) -> Result<Self> {
        writeln!(
            out,
            "t_s,flow,packets,drops,marks,unstamped,sojourn_mean_ms,sojourn_max_ms"
        )?;
        Ok(AqmCsv {
            out,
            last: Default::default(),
        })
    }

    pub fn sample(&mut self, t_s: f64, stats: &[(Ipv4Addr, FlowStats)]) -> Result<()> {
        for (a, s) in stats {
            let prev = self.last.get(a).copied().unwrap_or_default();
            let judged = (s.packets - s.unstamped) - (prev.packets - prev.unstamped);
            let mean_ms = if judged > 0 {
                (s.sojourn_sum_ns - prev.sojourn_sum_ns) as f64 / judged as f64 / 1e6
            } else {
                0.0
            };
            writeln!(
                self.out,
                "{t_s:.3},{a},{},{},{},{},{mean_ms:.3},{:.3}",
                s.packets,
                s.drops,
                s.marks,
                s.unstamped,
                s.sojourn_max_ns as f64 / 1e6
            )?;
            self.last.insert(*a, *s);
        }
        Ok(())
    }
}

/// Refuse a discipline the dumbbell cannot build, before anything runs.
pub fn check_build(d: &Discipline, segment_at_bottleneck: bool) -> Result<()> {
    if segment_at_bottleneck && *d != Discipline::Fifo {
        bail!("bottleneck.aqm: cannot be combined with segment_at_bottleneck (GSO packets reach the stamp before TBF cuts them)");
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
        let codel = parse(&table("aqm = \"codel\"")).unwrap();
        assert!(check_ecn(&codel, false, &["bbr1"]).is_ok());
    }

    #[test]
    fn step_k_in_packets_is_their_time_at_the_rate() {
        let c = config_of(
            &Discipline::EcnStep {
                k: StepK::Packets(65),
            },
            100_000_000,
        );
        assert_eq!(c.k_ns, 65 * crate::scenario::WIRE_PACKET * 80);
        assert_eq!(c.mode, MODE_ECN_STEP);
        let c = config_of(&Discipline::EcnStep { k: StepK::Ms(1.5) }, 100_000_000);
        assert_eq!(c.k_ns, 1_500_000);
    }

    #[test]
    fn csv_rows_carry_the_mean_sojourn_since_the_last_sample() {
        let mut buf = Vec::new();
        {
            let mut w = AqmCsv::new(&mut buf).unwrap();
            let a = Ipv4Addr::new(10, 10, 1, 1);
            let s1 = FlowStats {
                packets: 10,
                sojourn_sum_ns: 10_000_000,
                sojourn_max_ns: 2_000_000,
                ..Default::default()
            };
            w.sample(0.5, &[(a, s1)]).unwrap();
            let s2 = FlowStats {
                packets: 20,
                drops: 1,
                sojourn_sum_ns: 60_000_000,
                sojourn_max_ns: 9_000_000,
                ..Default::default()
            };
            w.sample(1.0, &[(a, s2)]).unwrap();
        }
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "0.500,10.10.1.1,10,0,0,0,1.000,2.000");
        assert_eq!(lines[2], "1.000,10.10.1.1,20,1,0,0,5.000,9.000");
    }
}
