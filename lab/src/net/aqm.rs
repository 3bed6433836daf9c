//! Bottlenecks beyond drop-tail (issue 44): CoDel, FQ-CoDel and ECN step
//! marking at the dumbbell's bottleneck, from the lab's own tc-BPF
//! programs (`bpf/lab_aqm.bpf.c`; the decisions are `bpf/include/aqm_math.h`,
//! tested against RFC 8289's pseudocode in loader/tests/aqm_math.rs). The
//! discipline and its scenario keys are [`crate::scenario::aqm`]'s.
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

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};

use crate::net::link::{self, Bottleneck};
use crate::net::netns::Netns;
use crate::scenario::aqm::{Discipline, StepK, MAX_FLOWS};

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
        leaf_bfifo(ns, ifname, "add", minor, &limit)?;
    }
    Ok(())
}

/// `tc qdisc add|change` (`verb`) of the bfifo of limit `limit` bytes
/// under the HTB leaf class 1:`minor`.
fn leaf_bfifo(ns: &Netns, ifname: &str, verb: &str, minor: u32, limit: &str) -> Result<()> {
    let classid = format!("1:{minor:x}");
    let handle = format!("{minor:x}:");
    ns.exec(
        "tc",
        &[
            "qdisc", verb, "dev", ifname, "parent", &classid, "handle", &handle, "bfifo", "limit",
            limit,
        ],
    )?;
    Ok(())
}

/// Every flow queue's bfifo limit (see [`shape_fq`]).
pub fn set_fq_buffers(ns: &Netns, ifname: &str, flows: u32, limit_bytes: u64) -> Result<()> {
    let limit = limit_bytes.to_string();
    for i in 0..flows {
        leaf_bfifo(ns, ifname, "change", LEAF_MINOR_BASE + i, &limit)?;
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

    /// The writer, after the last row.
    pub fn into_inner(self) -> W {
        self.out
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

#[cfg(test)]
mod tests {
    use super::*;

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
