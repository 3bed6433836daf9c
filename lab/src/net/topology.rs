//! The dumbbell: senders -> router (bottleneck) -> receivers.
//!
//! ```text
//!  snd ns                      router ns                        rcv ns
//!  s0 10.10.0.1/16  <-veth->  r0 10.10.0.254/16
//!     + 10.10.1.N (flow N)    r1 10.20.0.254/24  <-veth->  c0 10.20.0.1/24
//!                             dly0 (TUN): reverse path to 10.10.1.0/24
//! ```
//! - Forward (data): s0 -> r0 -> r1 egress = HTB rate + bfifo drop-tail
//!   buffer -> c0. Random loss, if any, is a tc program on r0 ingress.
//! - Reverse (ACKs): c0 -> r1 -> route 10.10.1.0/24 dev dly0 -> the delay
//!   element -> back in through dly0 -> `ip rule iif dly0 lookup 100` ->
//!   r0 -> s0. Each flow has its own sender address, so its own delay.
//! - TSO/GSO/GRO are off on every veth: the bottleneck sees MTU packets.
//!   Option ([`Options::segment_at_bottleneck`]): GSO on `s0`, so the
//!   senders' super-packets cross s0 -> r0 -> r1 whole, and the bottleneck
//!   is TBF + the same bfifo, which cuts them into MTU packets on enqueue:
//!   the buffer still queues and drops MTU packets.
//! - Option ([`Options::aqm`]): a queue discipline at the bottleneck, the
//!   lab's tc programs (stamp on r1 egress, decision on c0 ingress; see
//!   [`crate::net::aqm`]); FQ-CoDel's flow queues are HTB leaves.
//! - Option ([`Options::socket_buffer_bytes`]): a larger max for the
//!   sender's and receiver's TCP socket buffers ([`crate::net::sockbuf`]).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, ObjectBuilder};

use crate::net::aqm::{self, Aqm};
use crate::net::delay::{self, DelayElement};
use crate::net::link::{self, Bottleneck};
use crate::net::netns::Netns;
use crate::net::qstats::QdiscReader;
use crate::net::sockbuf;
use crate::scenario::aqm::{check_build, Discipline};

/// Handle of the bfifo under the bottleneck's class 1:1 ("10:"; HTB, or TBF
/// with [`Options::segment_at_bottleneck`]).
pub const BUFFER_QDISC_HANDLE: u32 = 0x0010_0000; // tc handles are hex
/// Handle of the bottleneck's HTB root ("1:").
pub const HTB_ROOT_HANDLE: u32 = 0x0001_0000;
/// The router interface facing the receivers, where the bottleneck is.
pub const BOTTLENECK_IF: &str = "r1";
/// The receivers' interface, right after the bottleneck (where the
/// arrival counter, [`crate::net::arrivals`], watches data arrive).
pub const RECEIVER_IF: &str = "c0";
/// Receiver address.
pub const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 20, 0, 1);

/// What a flow needs from the network.
#[derive(Debug, Clone)]
pub struct FlowPath {
    pub rtt: Duration,
    pub loss_pct: f64,
}

/// A built dumbbell. Dropping it stops the delay element and deletes the
/// namespaces (which removes every link, qdisc and tc program in them).
pub struct Dumbbell {
    pub snd: Netns,
    pub router: Netns,
    pub rcv: Netns,
    pub delay: DelayElement,
    senders: Vec<Ipv4Addr>,
    _loss: Option<libbpf_rs::Object>,
    /// The AQM programs, when the bottleneck has a discipline.
    aqm: Option<Aqm>,
    discipline: Discipline,
}

/// The sender address of flow `i` (0-based).
pub fn sender_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 10, 1 + (i / 250) as u8, (i % 250 + 1) as u8)
}

/// How the dumbbell is built, beyond its flows and bottleneck. The default
/// is the lab's: the element's default threads, offloads off everywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Options {
    /// The delay element's threads.
    pub threads: delay::Threads,
    /// GSO from the senders to the bottleneck, which segments on enqueue
    /// (see [`link::shape_segmenting`]): the hops before the bottleneck and
    /// the senders' TCP work per super-packet, not per MTU packet (softirq
    /// 60 -> 53 % of the machine at 1 Gbit/s; after the bottleneck the work
    /// stays per packet, docs/results.md). The buffer still queues and drops
    /// MTU packets, but the senders' TCP sends in GSO bursts (up to ~1 ms
    /// of its pacing rate, as on a real host), so the CCAs' sending pattern
    /// is not the default lab's: an option, not the default. Refused with
    /// random loss, whose tc program (before the bottleneck) would drop
    /// whole super-packets.
    pub segment_at_bottleneck: bool,
    /// The bottleneck's queue discipline ([`crate::net::aqm`]): drop-tail
    /// (the default, no program), or CoDel, FQ-CoDel (one HTB leaf per
    /// flow queue, [`aqm::shape_fq`]), ECN step marking, from the lab's
    /// tc programs on `r1` egress and `c0` ingress. Refused with
    /// [`Options::segment_at_bottleneck`].
    pub aqm: Discipline,
    /// `net.ipv4.tcp_ecn = 1` in the sender and receiver namespaces (2, the
    /// kernel's default, otherwise: accept ECN, never ask for it).
    pub tcp_ecn: bool,
    /// The max (third) value of `net.ipv4.tcp_wmem` and `net.ipv4.tcp_rmem`
    /// in the sender and receiver namespaces, bytes, their min and default
    /// kept ([`sockbuf::set_tcp_buffer_max`]); `None` leaves the kernel's
    /// defaults (4 MiB and 6 MiB), which cap a flow's data in flight.
    pub socket_buffer_bytes: Option<u64>,
}

impl Dumbbell {
    pub fn build(flows: &[FlowPath], bottleneck: Bottleneck) -> Result<Dumbbell> {
        Self::build_with(flows, bottleneck, delay::Threads::default())
    }

    /// [`Dumbbell::build`] with the delay element's threads chosen (the
    /// lab-accuracy bench compares them).
    pub fn build_with(
        flows: &[FlowPath],
        bottleneck: Bottleneck,
        threads: delay::Threads,
    ) -> Result<Dumbbell> {
        let opts = Options {
            threads,
            ..Options::default()
        };
        Self::build_opts(flows, bottleneck, opts)
    }

    /// [`Dumbbell::build`] with every build option chosen.
    pub fn build_opts(
        flows: &[FlowPath],
        bottleneck: Bottleneck,
        opts: Options,
    ) -> Result<Dumbbell> {
        check_build(&opts.aqm, opts.segment_at_bottleneck).map_err(anyhow::Error::msg)?;
        if opts.segment_at_bottleneck && flows.iter().any(|f| f.loss_pct > 0.0) {
            anyhow::bail!(
                "random loss cannot be combined with GSO to the bottleneck: it would drop whole super-packets"
            );
        }
        let threads = opts.threads;
        let snd = Netns::create("snd")?;
        let router = Netns::create("rtr")?;
        let rcv = Netns::create("rcv")?;

        link::veth(&snd, "s0", &router, "r0")?;
        link::veth(&router, "r1", &rcv, "c0")?;
        link::addr(&snd, "s0", "10.10.0.1/16")?;
        link::addr(&router, "r0", "10.10.0.254/16")?;
        link::addr(&router, "r1", "10.20.0.254/24")?;
        link::addr(&rcv, "c0", "10.20.0.1/24")?;
        snd.ip(&["route", "add", "default", "via", "10.10.0.254"])?;
        rcv.ip(&["route", "add", "default", "via", "10.20.0.254"])?;
        let senders: Vec<Ipv4Addr> = (0..flows.len()).map(sender_addr).collect();
        for a in &senders {
            link::addr(&snd, "s0", &format!("{a}/16"))?;
        }
        for (k, v) in [
            ("net.ipv4.ip_forward", "1"),
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
        ] {
            router.exec("sysctl", &["-qw", &format!("{k}={v}")])?;
        }

        // The reverse path through the delay element.
        let tun = delay::create_tun(&router, "dly0")?;
        router.ip(&["link", "set", "dly0", "mtu", "1500", "up"])?;
        router.exec("sysctl", &["-qw", "net.ipv4.conf.dly0.rp_filter=0"])?;
        // The path probe (crate::net::pathprobe) sends from the router itself: its
        // requests come back out of the element with a local source address.
        router.exec("sysctl", &["-qw", "net.ipv4.conf.dly0.accept_local=1"])?;
        let flow_nets: Vec<String> = flow_prefixes(senders.len());
        for net in &flow_nets {
            router.ip(&["route", "add", net, "dev", "dly0"])?;
        }
        router.ip(&["rule", "add", "iif", "dly0", "lookup", "100", "pref", "100"])?;
        router.ip(&["route", "add", "10.10.0.0/16", "dev", "r0", "table", "100"])?;
        let delays: HashMap<Ipv4Addr, Duration> = senders
            .iter()
            .copied()
            .zip(flows.iter().map(|f| f.rtt))
            .collect();
        let paths = delays
            .into_iter()
            .map(|(a, d)| {
                let d = crate::net::pathsched::PathDelay {
                    base_ns: d.as_nanos() as u64,
                    ..Default::default()
                };
                (a, d)
            })
            .collect();
        let delay = DelayElement::start_threads(tun, paths, Duration::ZERO, threads)?;

        if opts.segment_at_bottleneck {
            link::gso_on(&snd, "s0")?;
            link::shape_segmenting(&router, BOTTLENECK_IF, bottleneck)?;
        } else if let Discipline::FqCodel { flows, quantum, .. } = opts.aqm {
            aqm::shape_fq(&router, BOTTLENECK_IF, bottleneck, flows, quantum)?;
        } else {
            link::shape(&router, BOTTLENECK_IF, bottleneck)?;
        }
        aqm::set_tcp_ecn(&snd, opts.tcp_ecn)?;
        aqm::set_tcp_ecn(&rcv, opts.tcp_ecn)?;
        if let Some(max) = opts.socket_buffer_bytes {
            sockbuf::set_tcp_buffer_max(&snd, max)?;
            sockbuf::set_tcp_buffer_max(&rcv, max)?;
        }
        let aqm = match opts.aqm {
            Discipline::Fifo => None,
            d => Some(Aqm::attach(
                &d,
                bottleneck.rate_bit,
                &router,
                BOTTLENECK_IF,
                &rcv,
                RECEIVER_IF,
            )?),
        };

        let loss = if flows.iter().any(|f| f.loss_pct > 0.0) {
            Some(attach_loss(&router, "r0", &senders, flows)?)
        } else {
            None
        };
        Ok(Dumbbell {
            snd,
            router,
            rcv,
            delay,
            senders,
            _loss: loss,
            aqm,
            discipline: opts.aqm,
        })
    }

    /// GRO on the receivers' interface (after the bottleneck, so the queue
    /// still sees MTU packets): the receivers' TCP then takes merged
    /// segments and sends one ACK per merged packet, as a host with GRO
    /// does. Off by default (every veth has offloads off).
    pub fn receiver_gro(&self, on: bool) -> Result<()> {
        let v = if on { "on" } else { "off" };
        self.rcv.exec("ethtool", &["-K", "c0", "gro", v])?;
        Ok(())
    }

    /// Receive packet steering over every core on the delay element's TUN
    /// device: the kernel work a write starts (forwarding the ACK, the
    /// sender's TCP and what it transmits) is queued to the core RPS picks
    /// by flow hash and runs in that core's softirq, not in the writing
    /// thread. Off by default; the lab-accuracy bench measures it.
    pub fn tun_rps(&self) -> Result<()> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mask = if cores >= 32 {
            u32::MAX
        } else {
            (1u32 << cores) - 1
        };
        let cmd = format!("echo {mask:x} > /sys/class/net/dly0/queues/rx-0/rps_cpus");
        self.router
            .exec("sh", &["-c", &cmd])
            .context("RPS on the delay element's TUN device")?;
        Ok(())
    }

    pub fn sender(&self, i: usize) -> Ipv4Addr {
        self.senders[i]
    }

    /// A reader of the bottleneck buffer's counters: the bfifo `10:`, or
    /// with FQ-CoDel (one bfifo per flow queue, no `10:`) the HTB root
    /// `1:`, whose counters are its leaves' sums (HTB counts every packet
    /// it queues, sends and drops in its own qlen, backlog, bytes and
    /// drops).
    pub fn queue_reader(&self) -> Result<QdiscReader> {
        let handle = match self.discipline {
            Discipline::FqCodel { .. } => HTB_ROOT_HANDLE,
            _ => BUFFER_QDISC_HANDLE,
        };
        QdiscReader::open(&self.router, BOTTLENECK_IF, handle)
    }

    /// Change the drop-tail buffer (the self-check's rate measurement
    /// widens it): the bfifo `10:`, or every flow queue's.
    pub fn set_buffer(&self, limit_bytes: u64) -> Result<()> {
        match self.discipline {
            Discipline::FqCodel { flows, .. } => {
                aqm::set_fq_buffers(&self.router, BOTTLENECK_IF, flows, limit_bytes)
            }
            _ => link::set_buffer(&self.router, BOTTLENECK_IF, limit_bytes),
        }
    }

    /// The bottleneck's queue discipline.
    pub fn discipline(&self) -> &Discipline {
        &self.discipline
    }

    /// The AQM programs' handle (their counters), when there is a
    /// discipline.
    pub fn aqm(&self) -> Option<&Aqm> {
        self.aqm.as_ref()
    }
}

fn flow_prefixes(n: usize) -> Vec<String> {
    (0..n.div_ceil(250).max(1))
        .map(|k| format!("10.10.{}.0/24", k + 1))
        .collect()
}

/// Load the random-loss program and attach it to `ifname`'s ingress.
fn attach_loss(
    ns: &Netns,
    ifname: &str,
    senders: &[Ipv4Addr],
    flows: &[FlowPath],
) -> Result<libbpf_rs::Object> {
    let obj = ObjectBuilder::default()
        .open_memory(rttfair_loader::objects::lab::RANDOM_LOSS)
        .context("open loss program")?
        .load()
        .context("load loss program")?;
    {
        let map = obj
            .maps()
            .find(|m| m.name() == "loss_by_saddr")
            .context("loss map")?;
        for (a, f) in senders.iter().zip(flows) {
            if f.loss_pct > 0.0 {
                let p = ((f.loss_pct / 100.0) * u32::MAX as f64) as u32;
                map.update(&a.octets(), &p.to_ne_bytes(), MapFlags::ANY)?;
            }
        }
    }
    let prog = obj
        .progs()
        .find(|p| p.name() == "lab_random_loss")
        .context("loss prog")?;
    let fd = prog.as_fd().try_clone_to_owned()?;
    let name = ifname.to_string();
    ns.run(move || -> Result<()> {
        let cname = std::ffi::CString::new(name.clone())?;
        // SAFETY: valid C string.
        let idx = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        let mut hook = libbpf_rs::TcHookBuilder::new(fd.as_fd())
            .ifindex(idx)
            .replace(true)
            .handle(1)
            .priority(1)
            .hook(libbpf_rs::TC_INGRESS);
        hook.create().context("create clsact")?;
        hook.attach().context("attach loss program")?;
        let _ = fd.as_raw_fd();
        Ok(())
    })??;
    Ok(obj)
}

/// Packets the loss program dropped so far.
pub fn loss_drops(obj: &libbpf_rs::Object) -> u64 {
    obj.maps()
        .find(|m| m.name() == "loss_dropped")
        .and_then(|m| m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok().flatten())
        .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap()))
        .unwrap_or(0)
}

impl Dumbbell {
    /// Packets dropped by random loss so far.
    pub fn random_loss_drops(&self) -> u64 {
        self._loss.as_ref().map(loss_drops).unwrap_or(0)
    }
}
