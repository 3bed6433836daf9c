//! What the CCAs export, with its meaning: the one place the per-flow record
//! (`struct rttfair_flow`) and the per-CCA counters are decoded.
//!
//! The BPF side writes integers in fixed point and mixed units (see the
//! header's unit rules); here they become a typed [`Flow`]: the BBR mode as an
//! enum, rates in bytes per second, times as [`Duration`], gains as `f64`, and
//! the fields only one CCA fills as a [`CcaState`] variant of that CCA. The
//! CLI, the daemon and the lab only project a `Flow`; a new field or a new CCA
//! is decoded here, once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::abi::{self, RawCounters, RawFlow};
use crate::cca::Cca;

/// The BBR state machine's mode, as a CCA last exported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
    /// A value this build does not know (a newer writer).
    Unknown,
}

impl Mode {
    /// The name used in tables, labels and CSV ("probe_bw").
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
            Mode::Unknown => "unknown",
        }
    }
}

/// Ad-BBR's rate-regulation regime (Ad-BBR Alg. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// rRTT < 1.25 nRTT: rate unchanged.
    #[default]
    Normal,
    /// 1.25 <= rRTT/nRTT < 1.5: rate divided by beta.
    Beta,
    /// rRTT >= 1.5 nRTT: rate scaled by gamma.
    Gamma,
    /// A value this build does not know.
    Unknown,
}

impl Regime {
    /// The name used in tables, labels and CSV ("beta").
    pub fn name(self) -> &'static str {
        match self {
            Regime::Normal => "normal",
            Regime::Beta => "beta",
            Regime::Gamma => "gamma",
            Regime::Unknown => "unknown",
        }
    }
}

/// FaiRTT's internals (FaiRTT paper Eq. 4-7).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Fairtt {
    /// alpha_t, the RTT fairness threshold (Eq. 5).
    pub alpha: Duration,
    /// WminRTT_t, the windowed minRTT (Eq. 6).
    pub wminrtt: Duration,
    /// minRTT x gamma / lastRTT applied to the BDP (1 = none).
    pub coefficient: f64,
    /// Wfcount: distinct minRTT classes seen active in the window.
    pub wfcount: u16,
    /// Whether the BDP reduction is applied.
    pub active: bool,
}

/// Ad-BBR's internals (Ad-BBR paper Alg. 1-3).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Adbbr {
    /// nRTT, the reference RTT (Alg. 1).
    pub nrtt: Duration,
    /// Standard deviation of the RTT history (Alg. 3).
    pub rtt_std: Duration,
    /// Pacing factor applied (1 = none; 1/beta or gamma).
    pub factor: f64,
    /// The rate-regulation regime (Alg. 2).
    pub regime: Regime,
}

/// qfair's internals (docs/algorithms.md, "qfair").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Qfair {
    /// x^: the smoothed per-round sending rate (delivered + lost), bytes/s.
    pub rate_bps: u64,
    /// alpha: the flow's backlog target, packets.
    pub alpha_pkts: f64,
    /// a^ = x^ q^: the flow's own backlog estimate, packets.
    pub backlog_pkts: f64,
    /// o: the slow integral term of Eq. 8b, packets, signed,
    /// |o| <= qfair.o_cap x alpha (default alpha/2).
    /// The window is w = g x^ R^ + alpha + o, so o is the steady offset
    /// between the backlog the window holds and the one a^ reads.
    pub offset_pkts: f64,
    /// q^ = D - R^: the queueing delay estimate.
    pub qdelay: Duration,
    /// D: the mean of 8 ms bucket minima of the RTT.
    pub standing_rtt: Duration,
    /// w = g x^ R^ + alpha + o, packets.
    pub target_cwnd: u32,
    /// Synchronised drains that emptied the queue.
    pub drains_ok: u32,
    /// Drains that did not (a queue qfair does not own).
    pub drains_failed: u32,
    /// m: the lowest RTT of the last drain that had a sample, the number
    /// both its verdict and Eq. 10's longer-path rule judged against R^;
    /// None before the flow's first such drain.
    pub drain_min_rtt: Option<Duration>,
    /// nu: the flow's own delay noise, how far its bucket estimator reads
    /// above R^ with the queue empty (measured in emptied drains and taken
    /// out of q^); zero on a clean path and before the first drain.
    pub noise: Duration,
    /// P = R^ + nu + eps: the pipe the window carries besides the backlog
    /// (eps: how far the flow's mean RTT lies above its bucket minima,
    /// read in emptied drains).
    pub pipe: Duration,
    /// g, the rate correction of the last round.
    pub gain: f64,
    /// Whether the flow is in competitive mode.
    pub competitive: bool,
    /// Whether w plus its burst room is below 6 packets (Eq. 9's floor),
    /// so pacing rather than cwnd limits the flow.
    pub pacing_floor: bool,
}

/// BBRv3's state-machine phase: the mode, with ProbeBW's four phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bbr3Phase {
    #[default]
    Startup,
    Drain,
    /// ProbeBW DOWN: pacing gain 0.91, draining what the probe queued.
    Down,
    /// ProbeBW CRUISE: gain 1.0, 15 % headroom below inflight_hi.
    Cruise,
    /// ProbeBW REFILL: gain 1.0 for a round, lower bounds reset.
    Refill,
    /// ProbeBW UP: gain 1.25, inflight_hi grows.
    Up,
    ProbeRtt,
    /// A value this build does not know.
    Unknown,
}

impl Bbr3Phase {
    /// The name used in tables, labels and CSV ("cruise").
    pub fn name(self) -> &'static str {
        match self {
            Bbr3Phase::Startup => "startup",
            Bbr3Phase::Drain => "drain",
            Bbr3Phase::Down => "down",
            Bbr3Phase::Cruise => "cruise",
            Bbr3Phase::Refill => "refill",
            Bbr3Phase::Up => "up",
            Bbr3Phase::ProbeRtt => "probe_rtt",
            Bbr3Phase::Unknown => "unknown",
        }
    }
}

/// BBRv3's internals (docs/algorithms.md, "bbr3"). The bounds are `None`
/// while unset (v3 keeps them at "infinity" until loss or ECN sets them).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bbr3 {
    pub phase: Bbr3Phase,
    /// Long-term max delivery rate (last 1-2 ProbeBW cycles), bytes/s.
    pub bw_hi_bps: u64,
    /// Short-term lower bound on the rate, bytes/s.
    pub bw_lo_bps: Option<u64>,
    /// Upper bound on inflight from the 2 % loss-rate / ECN test, packets.
    pub inflight_hi: Option<u32>,
    /// Short-term lower bound on inflight, packets.
    pub inflight_lo: Option<u32>,
    /// Loss rate of the last round trip, lost / (lost + delivered).
    pub round_loss: f64,
    /// Bandwidth probes the loss/ECN bound ended (inflight_hi set there).
    pub too_high_events: u32,
    /// Loss rounds outside probes that cut bw_lo / inflight_lo.
    pub lo_cuts: u32,
    /// ACK-aggregation cwnd allowance, packets.
    pub extra_acked: u32,
    /// EWMA of the CE-marked fraction (1.0 until ECN is in use).
    pub ecn_alpha: f64,
    /// Whether ECN drives the model (negotiated and min RTT <= 5 ms).
    pub ecn_eligible: bool,
}

/// The BBR v1 long-term (policer) model: bbr_core.h's and native
/// tcp_bbr.c's `bbr_lt_*`. A token-bucket policer lets bursts through at line
/// rate and drops the excess, so the max filter over-estimates BtlBw; two
/// lossy intervals with consistent rates make the flow use their mean as
/// BtlBw for 48 round trips. Every field is zero for CCAs without the model
/// (bbr3, kernel CCAs other than bbr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LongTermBw {
    /// Bytes/s: the policed rate while `in_use`, the rate of the last lossy
    /// interval while `sampling`, else 0.
    pub bw_bps: u64,
    /// Policed: `bw_bps` is the model's BtlBw and ProbeBW does not probe.
    pub in_use: bool,
    /// A long-term interval (from a loss, 4-16 round trips) is running.
    pub sampling: bool,
    /// Round trips in the running interval, or spent using `bw_bps`.
    pub rounds: u8,
}

/// The fields only one CCA fills, as that CCA's variant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CcaState {
    /// bbr1, and connections on kernel CCAs: nothing beyond the BBR core.
    #[default]
    None,
    Fairtt(Fairtt),
    Adbbr(Adbbr),
    Qfair(Qfair),
    Bbr3(Bbr3),
}

/// One flow as a CCA last exported it (or, for a connection on a kernel CCA,
/// as the socket iterator read it: see [`crate::sockets`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flow {
    /// Host-unique flow id (the map key), or the socket cookie.
    pub id: u64,
    /// `RTTFAIR_ABI_VERSION` of the writer.
    pub abi_version: u32,
    /// The project CCA that exported it; `None` for a kernel CCA's socket.
    pub cca: Option<Cca>,
    pub mode: Mode,
    /// ProbeBW phase: the v1 gain cycle's 0..7 (bbr1, fairtt, adbbr,
    /// qfair, native bbr); bbr3's 0..3 (UP, DOWN, CRUISE, REFILL).
    pub cycle_idx: u8,
    /// Inode number of the socket's network namespace.
    pub netns: u32,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    /// The model's bandwidth estimate (BtlBw), bytes/s: the windowed-max
    /// delivery rate (the v1 core's lt_bw while policed); for bbr3
    /// min(bw_hi, bw_lo) (rttfair_abi.h).
    pub btlbw_bps: u64,
    /// sk_pacing_rate, bytes/s.
    pub pacing_rate_bps: u64,
    /// The model's RTprop (for kernel CCAs other than bbr: the kernel's
    /// windowed min RTT).
    pub min_rtt: Duration,
    /// RTT of the latest rate sample.
    pub last_rtt: Duration,
    /// The kernel's smoothed RTT.
    pub srtt: Duration,
    /// snd_cwnd, segments.
    pub cwnd: u32,
    /// mss_cache, bytes.
    pub mss: u32,
    /// The BBR pacing gain in force (1 = BtlBw); None where no BBR gain
    /// sets the rate: qfair in cruise (its Eq. 9 does), kernel CCAs without
    /// a BBR model (a 0 in the record, its "none"). One meaning, not a
    /// ratio computed for CCAs that have no such gain.
    pub pacing_gain: Option<f64>,
    /// The BBR cwnd gain in force (x BDP); None as for `pacing_gain` (qfair
    /// in cruise: Eq. 1's w sets the window).
    pub cwnd_gain: Option<f64>,
    /// tcp_sock.bytes_acked.
    pub delivered_bytes: u64,
    /// tcp_sock.bytes_retrans.
    pub retrans_bytes: u64,
    /// tcp_sock.total_retrans, segments.
    pub total_retrans: u32,
    pub probe_rtt_entries: u32,
    /// Packet-timed round trips so far.
    pub rounds: u64,
    /// When the CCA initialised the flow, on the kernel's monotonic clock
    /// (bpf_ktime_get_ns); zero when unknown (kernel CCAs).
    pub started_at: Duration,
    /// When this record was written, on the same clock.
    pub exported_at: Duration,
    /// The long-term (policer) model of BBR v1 and the CCAs on its core.
    pub long_term: LongTermBw,
    /// What only this flow's CCA exports.
    pub state: CcaState,
}

impl Default for Flow {
    fn default() -> Self {
        let unspecified = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
        Flow {
            id: 0,
            abi_version: abi::ABI_VERSION,
            cca: None,
            mode: Mode::default(),
            cycle_idx: 0,
            netns: 0,
            local: unspecified,
            peer: unspecified,
            btlbw_bps: 0,
            pacing_rate_bps: 0,
            min_rtt: Duration::ZERO,
            last_rtt: Duration::ZERO,
            srtt: Duration::ZERO,
            cwnd: 0,
            mss: 0,
            pacing_gain: None,
            cwnd_gain: None,
            delivered_bytes: 0,
            retrans_bytes: 0,
            total_retrans: 0,
            probe_rtt_entries: 0,
            rounds: 0,
            started_at: Duration::ZERO,
            exported_at: Duration::ZERO,
            long_term: LongTermBw::default(),
            state: CcaState::None,
        }
    }
}

impl Flow {
    /// The CCA's name, or "unknown" for an id this build does not know.
    pub fn cca_name(&self) -> &'static str {
        self.cca.map_or("unknown", Cca::name)
    }

    /// Time from the flow's start to this export (zero when the start is
    /// unknown).
    pub fn age(&self) -> Duration {
        if self.started_at.is_zero() {
            return Duration::ZERO;
        }
        self.exported_at.saturating_sub(self.started_at)
    }

    /// FaiRTT's internals, if FaiRTT exported the flow.
    pub fn fairtt(&self) -> Option<&Fairtt> {
        match &self.state {
            CcaState::Fairtt(s) => Some(s),
            _ => None,
        }
    }

    /// Ad-BBR's internals, if Ad-BBR exported the flow.
    pub fn adbbr(&self) -> Option<&Adbbr> {
        match &self.state {
            CcaState::Adbbr(s) => Some(s),
            _ => None,
        }
    }

    /// qfair's internals, if qfair exported the flow.
    pub fn qfair(&self) -> Option<&Qfair> {
        match &self.state {
            CcaState::Qfair(s) => Some(s),
            _ => None,
        }
    }

    /// BBRv3's internals, if bbr3 exported the flow.
    pub fn bbr3(&self) -> Option<&Bbr3> {
        match &self.state {
            CcaState::Bbr3(s) => Some(s),
            _ => None,
        }
    }

    /// Decode a record.
    pub(crate) fn decode(id: u64, r: &RawFlow) -> Flow {
        Flow {
            id,
            abi_version: r.abi_version,
            cca: Cca::from_abi_id(r.cca as u32),
            mode: decode_mode(r.mode),
            cycle_idx: r.cycle_idx,
            netns: r.netns_ino,
            local: SocketAddr::new(decode_addr(r.family, &r.saddr), r.sport),
            peer: SocketAddr::new(decode_addr(r.family, &r.daddr), r.dport),
            btlbw_bps: r.btlbw_bps,
            pacing_rate_bps: r.pacing_rate_bps,
            min_rtt: us(r.min_rtt_us),
            last_rtt: us(r.last_rtt_us),
            srtt: us(r.srtt_us),
            cwnd: r.cwnd,
            mss: r.mss,
            pacing_gain: gain_in_force(r.pacing_gain_x256),
            cwnd_gain: gain_in_force(r.cwnd_gain_x256),
            delivered_bytes: r.delivered_bytes,
            retrans_bytes: r.retrans_bytes,
            total_retrans: r.total_retrans,
            probe_rtt_entries: r.probe_rtt_entries,
            rounds: r.rounds,
            started_at: Duration::from_nanos(r.first_ns),
            exported_at: Duration::from_nanos(r.last_ns),
            long_term: LongTermBw {
                bw_bps: r.lt_bw_bps,
                in_use: r.lt_use_bw != 0,
                sampling: r.lt_is_sampling != 0,
                rounds: r.lt_rtt_cnt,
            },
            state: decode_state(r),
        }
    }

    /// The record this flow decodes from (the inverse of decoding, for
    /// benchmarks and tests that fill the map with synthetic flows).
    pub(crate) fn encode(&self) -> RawFlow {
        let mut r = RawFlow {
            abi_version: self.abi_version,
            cca: self.cca.map_or(0, |c| c.abi_id() as u8),
            mode: encode_mode(self.mode),
            cycle_idx: self.cycle_idx,
            netns_ino: self.netns,
            sport: self.local.port(),
            dport: self.peer.port(),
            btlbw_bps: self.btlbw_bps,
            pacing_rate_bps: self.pacing_rate_bps,
            min_rtt_us: to_us(self.min_rtt),
            last_rtt_us: to_us(self.last_rtt),
            srtt_us: to_us(self.srtt),
            cwnd: self.cwnd,
            mss: self.mss,
            pacing_gain_x256: to_fixed(self.pacing_gain.unwrap_or(0.0), 256.0) as u16,
            cwnd_gain_x256: to_fixed(self.cwnd_gain.unwrap_or(0.0), 256.0) as u16,
            delivered_bytes: self.delivered_bytes,
            retrans_bytes: self.retrans_bytes,
            total_retrans: self.total_retrans,
            probe_rtt_entries: self.probe_rtt_entries,
            rounds: self.rounds,
            first_ns: self.started_at.as_nanos() as u64,
            last_ns: self.exported_at.as_nanos() as u64,
            lt_bw_bps: self.long_term.bw_bps,
            lt_use_bw: self.long_term.in_use as u8,
            lt_is_sampling: self.long_term.sampling as u8,
            lt_rtt_cnt: self.long_term.rounds,
            ..RawFlow::default()
        };
        r.family = encode_addr(self.local.ip(), &mut r.saddr);
        encode_addr(self.peer.ip(), &mut r.daddr);
        encode_state(&self.state, &mut r);
        r
    }
}

/// Per-CCA host-wide counters (`struct rttfair_counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// init calls.
    pub flows_started: u64,
    /// release calls.
    pub flows_released: u64,
    /// Flows that could not get a map entry (map full); still controlled.
    /// Flows left without an export entry: the map was full, or (bbr3)
    /// the sk_storage holding the flow id could not be allocated.
    pub export_failed: u64,
    /// Entries removed at release.
    pub export_deleted: u64,
    /// ProbeRTT entries, all flows.
    pub probe_rtt_entries: u64,
}

impl Counters {
    /// Sockets using the CCA now: started minus released. Exact even when
    /// the per-flow map is full (the counters do not depend on it).
    pub fn sockets(&self) -> u64 {
        self.flows_started.saturating_sub(self.flows_released)
    }

    pub(crate) fn decode(r: &RawCounters) -> Counters {
        Counters {
            flows_started: r.flows_started,
            flows_released: r.flows_released,
            export_failed: r.export_failed,
            export_deleted: r.export_deleted,
            probe_rtt_entries: r.probe_rtt_entries,
        }
    }
}

fn us(v: u32) -> Duration {
    Duration::from_micros(v as u64)
}

fn to_us(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

fn x256(v: u16) -> f64 {
    v as f64 / 256.0
}

/// A BBR gain of the record: 0 is "none in force" (rttfair_abi.h).
fn gain_in_force(v: u16) -> Option<f64> {
    (v != 0).then(|| x256(v))
}

fn x1024(v: u32) -> f64 {
    v as f64 / 1024.0
}

fn signed_x1024(v: i32) -> f64 {
    v as f64 / 1024.0
}

fn to_signed_fixed(v: f64, unit: f64) -> i32 {
    (v * unit).round().clamp(i32::MIN as f64, i32::MAX as f64) as i32
}

fn to_fixed(v: f64, unit: f64) -> u32 {
    (v * unit).round().clamp(0.0, u32::MAX as f64) as u32
}

fn decode_mode(m: u8) -> Mode {
    match m {
        abi::MODE_STARTUP => Mode::Startup,
        abi::MODE_DRAIN => Mode::Drain,
        abi::MODE_PROBE_BW => Mode::ProbeBw,
        abi::MODE_PROBE_RTT => Mode::ProbeRtt,
        _ => Mode::Unknown,
    }
}

fn encode_mode(m: Mode) -> u8 {
    match m {
        Mode::Startup => abi::MODE_STARTUP,
        Mode::Drain => abi::MODE_DRAIN,
        Mode::ProbeBw => abi::MODE_PROBE_BW,
        Mode::ProbeRtt => abi::MODE_PROBE_RTT,
        Mode::Unknown => u8::MAX,
    }
}

fn decode_regime(r: u8) -> Regime {
    match r {
        abi::REGIME_NORMAL => Regime::Normal,
        abi::REGIME_BETA => Regime::Beta,
        abi::REGIME_GAMMA => Regime::Gamma,
        _ => Regime::Unknown,
    }
}

fn encode_regime(r: Regime) -> u8 {
    match r {
        Regime::Normal => abi::REGIME_NORMAL,
        Regime::Beta => abi::REGIME_BETA,
        Regime::Gamma => abi::REGIME_GAMMA,
        Regime::Unknown => u8::MAX,
    }
}

fn decode_bbr3_phase(p: u8) -> Bbr3Phase {
    match p {
        abi::BBR3_STARTUP => Bbr3Phase::Startup,
        abi::BBR3_DRAIN => Bbr3Phase::Drain,
        abi::BBR3_DOWN => Bbr3Phase::Down,
        abi::BBR3_CRUISE => Bbr3Phase::Cruise,
        abi::BBR3_REFILL => Bbr3Phase::Refill,
        abi::BBR3_UP => Bbr3Phase::Up,
        abi::BBR3_PROBE_RTT => Bbr3Phase::ProbeRtt,
        _ => Bbr3Phase::Unknown,
    }
}

fn encode_bbr3_phase(p: Bbr3Phase) -> u8 {
    match p {
        Bbr3Phase::Startup => abi::BBR3_STARTUP,
        Bbr3Phase::Drain => abi::BBR3_DRAIN,
        Bbr3Phase::Down => abi::BBR3_DOWN,
        Bbr3Phase::Cruise => abi::BBR3_CRUISE,
        Bbr3Phase::Refill => abi::BBR3_REFILL,
        Bbr3Phase::Up => abi::BBR3_UP,
        Bbr3Phase::ProbeRtt => abi::BBR3_PROBE_RTT,
        Bbr3Phase::Unknown => u8::MAX,
    }
}

/// A bound the BPF side leaves at all ones while unset.
fn bound<T: PartialEq>(v: T, unset: T) -> Option<T> {
    (v != unset).then_some(v)
}

fn decode_addr(family: u8, bytes: &[u8; 16]) -> IpAddr {
    if family == libc::AF_INET6 as u8 {
        IpAddr::V6(Ipv6Addr::from(*bytes))
    } else {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    }
}

/// Write `ip` into an address field; returns its family.
fn encode_addr(ip: IpAddr, into: &mut [u8; 16]) -> u8 {
    match ip {
        IpAddr::V4(a) => {
            into[..4].copy_from_slice(&a.octets());
            libc::AF_INET as u8
        }
        IpAddr::V6(a) => {
            *into = a.octets();
            libc::AF_INET6 as u8
        }
    }
}

/// The variant of the CCA that wrote the record; its fields are zero for
/// every other CCA, so they are not read.
fn decode_state(r: &RawFlow) -> CcaState {
    match r.cca {
        abi::CCA_FAIRTT => CcaState::Fairtt(Fairtt {
            alpha: us(r.fairtt_alpha_us),
            wminrtt: us(r.fairtt_wminrtt_us),
            coefficient: x1024(r.fairtt_coef_x1024),
            wfcount: r.fairtt_wfcount,
            active: r.fairtt_active != 0,
        }),
        abi::CCA_ADBBR => CcaState::Adbbr(Adbbr {
            nrtt: us(r.adbbr_nrtt_us),
            rtt_std: us(r.adbbr_rtt_std_us),
            factor: x1024(r.adbbr_factor_x1024),
            regime: decode_regime(r.adbbr_regime),
        }),
        abi::CCA_QFAIR => CcaState::Qfair(Qfair {
            rate_bps: r.qfair_rate_bps,
            alpha_pkts: x1024(r.qfair_alpha_x1024),
            backlog_pkts: x1024(r.qfair_backlog_x1024),
            offset_pkts: signed_x1024(r.qfair_offset_x1024),
            qdelay: us(r.qfair_qdelay_us),
            standing_rtt: us(r.qfair_standing_rtt_us),
            target_cwnd: r.qfair_target_cwnd,
            drains_ok: r.qfair_drains_ok,
            drains_failed: r.qfair_drains_failed,
            drain_min_rtt: (r.qfair_drain_min_us != 0).then(|| us(r.qfair_drain_min_us)),
            noise: us(r.qfair_noise_us),
            pipe: us(r.qfair_pipe_us),
            gain: x256(r.qfair_gain_x256),
            competitive: r.qfair_competitive != 0,
            pacing_floor: r.qfair_pacing_floor != 0,
        }),
        abi::CCA_BBR3 => CcaState::Bbr3(Bbr3 {
            phase: decode_bbr3_phase(r.bbr3_phase),
            bw_hi_bps: r.bbr3_bw_hi_bps,
            bw_lo_bps: bound(r.bbr3_bw_lo_bps, u64::MAX),
            inflight_hi: bound(r.bbr3_inflight_hi, u32::MAX),
            inflight_lo: bound(r.bbr3_inflight_lo, u32::MAX),
            round_loss: r.bbr3_round_loss_ppm as f64 / 1e6,
            too_high_events: r.bbr3_too_high_events,
            lo_cuts: r.bbr3_lo_cuts,
            extra_acked: r.bbr3_extra_acked,
            ecn_alpha: x256(r.bbr3_ecn_alpha_x256),
            ecn_eligible: r.bbr3_ecn_eligible != 0,
        }),
        abi::CCA_BBR1 => CcaState::None,
        _ => CcaState::None,
    }
}

fn encode_state(s: &CcaState, r: &mut RawFlow) {
    match s {
        CcaState::None => {}
        CcaState::Fairtt(f) => {
            r.fairtt_alpha_us = to_us(f.alpha);
            r.fairtt_wminrtt_us = to_us(f.wminrtt);
            r.fairtt_coef_x1024 = to_fixed(f.coefficient, 1024.0);
            r.fairtt_wfcount = f.wfcount;
            r.fairtt_active = f.active as u8;
        }
        CcaState::Adbbr(a) => {
            r.adbbr_nrtt_us = to_us(a.nrtt);
            r.adbbr_rtt_std_us = to_us(a.rtt_std);
            r.adbbr_factor_x1024 = to_fixed(a.factor, 1024.0);
            r.adbbr_regime = encode_regime(a.regime);
        }
        CcaState::Qfair(q) => {
            r.qfair_rate_bps = q.rate_bps;
            r.qfair_alpha_x1024 = to_fixed(q.alpha_pkts, 1024.0);
            r.qfair_backlog_x1024 = to_fixed(q.backlog_pkts, 1024.0);
            r.qfair_offset_x1024 = to_signed_fixed(q.offset_pkts, 1024.0);
            r.qfair_qdelay_us = to_us(q.qdelay);
            r.qfair_standing_rtt_us = to_us(q.standing_rtt);
            r.qfair_target_cwnd = q.target_cwnd;
            r.qfair_drains_ok = q.drains_ok;
            r.qfair_drains_failed = q.drains_failed;
            r.qfair_drain_min_us = q.drain_min_rtt.map_or(0, to_us);
            r.qfair_noise_us = to_us(q.noise);
            r.qfair_pipe_us = to_us(q.pipe);
            r.qfair_gain_x256 = to_fixed(q.gain, 256.0) as u16;
            r.qfair_competitive = q.competitive as u8;
            r.qfair_pacing_floor = q.pacing_floor as u8;
        }
        CcaState::Bbr3(b) => {
            r.bbr3_phase = encode_bbr3_phase(b.phase);
            r.bbr3_bw_hi_bps = b.bw_hi_bps;
            r.bbr3_bw_lo_bps = b.bw_lo_bps.unwrap_or(u64::MAX);
            r.bbr3_inflight_hi = b.inflight_hi.unwrap_or(u32::MAX);
            r.bbr3_inflight_lo = b.inflight_lo.unwrap_or(u32::MAX);
            r.bbr3_round_loss_ppm = (b.round_loss * 1e6).round().clamp(0.0, u32::MAX as f64) as u32;
            r.bbr3_too_high_events = b.too_high_events;
            r.bbr3_lo_cuts = b.lo_cuts;
            r.bbr3_extra_acked = b.extra_acked;
            r.bbr3_ecn_alpha_x256 = to_fixed(b.ecn_alpha, 256.0) as u16;
            r.bbr3_ecn_eligible = b.ecn_eligible as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cca: Cca, state: CcaState) -> Flow {
        Flow {
            id: 7,
            cca: Some(cca),
            mode: Mode::ProbeBw,
            cycle_idx: 3,
            netns: 4026531840,
            local: "10.10.1.2:40000".parse().unwrap(),
            peer: "10.20.0.1:5201".parse().unwrap(),
            btlbw_bps: 1_250_000,
            pacing_rate_bps: 1_300_000,
            min_rtt: Duration::from_micros(20_000),
            last_rtt: Duration::from_micros(21_500),
            srtt: Duration::from_micros(22_000),
            cwnd: 40,
            mss: 1448,
            pacing_gain: Some(1.25),
            cwnd_gain: Some(2.0),
            delivered_bytes: 1 << 30,
            retrans_bytes: 4096,
            total_retrans: 3,
            probe_rtt_entries: 2,
            rounds: 900,
            started_at: Duration::from_nanos(1_000),
            exported_at: Duration::from_nanos(5_000_001_000),
            long_term: LongTermBw {
                bw_bps: 1_190_000,
                in_use: true,
                sampling: false,
                rounds: 17,
            },
            state,
            ..Flow::default()
        }
    }

    /// Every field survives encode then decode, for every CCA's variant
    /// (values chosen exact in the record's fixed point).
    #[test]
    fn records_round_trip_for_every_cca() {
        let cases = [
            (Cca::Bbr1, CcaState::None),
            (
                Cca::Fairtt,
                CcaState::Fairtt(Fairtt {
                    alpha: Duration::from_micros(30_000),
                    wminrtt: Duration::from_micros(25_000),
                    coefficient: 0.75,
                    wfcount: 2,
                    active: true,
                }),
            ),
            (
                Cca::Adbbr,
                CcaState::Adbbr(Adbbr {
                    nrtt: Duration::from_micros(12_000),
                    rtt_std: Duration::from_micros(800),
                    factor: 0.5,
                    regime: Regime::Gamma,
                }),
            ),
            (
                Cca::Qfair,
                CcaState::Qfair(Qfair {
                    rate_bps: 2_500_000,
                    alpha_pkts: 3.5,
                    backlog_pkts: 2.25,
                    offset_pkts: -1.375,
                    qdelay: Duration::from_micros(1_500),
                    standing_rtt: Duration::from_micros(21_500),
                    target_cwnd: 48,
                    drains_ok: 4,
                    drains_failed: 1,
                    drain_min_rtt: Some(Duration::from_micros(40_077)),
                    noise: Duration::from_micros(2_250),
                    pipe: Duration::from_micros(43_100),
                    gain: 1.125,
                    competitive: true,
                    pacing_floor: false,
                }),
            ),
            (
                Cca::Bbr3,
                CcaState::Bbr3(Bbr3 {
                    phase: Bbr3Phase::Cruise,
                    bw_hi_bps: 12_500_000,
                    bw_lo_bps: None,
                    inflight_hi: Some(83),
                    inflight_lo: None,
                    round_loss: 0.0125,
                    too_high_events: 3,
                    lo_cuts: 7,
                    extra_acked: 4,
                    ecn_alpha: 0.5,
                    ecn_eligible: false,
                }),
            ),
        ];
        for (cca, state) in cases {
            let f = sample(cca, state);
            assert_eq!(Flow::decode(7, &f.encode()), f, "{cca}");
        }
        let v6 = Flow {
            local: "[2001:db8::2]:40000".parse().unwrap(),
            peer: "[2001:db8::1]:5201".parse().unwrap(),
            ..sample(Cca::Bbr1, CcaState::None)
        };
        assert_eq!(Flow::decode(7, &v6.encode()), v6, "IPv6");
    }

    #[test]
    fn fixed_point_and_units_are_decoded() {
        let mut r = RawFlow {
            cca: abi::CCA_QFAIR,
            mode: abi::MODE_PROBE_RTT,
            family: libc::AF_INET as u8,
            min_rtt_us: 20_000,
            pacing_gain_x256: 320,
            qfair_alpha_x1024: 3072,
            qfair_offset_x1024: -512,
            qfair_gain_x256: 224,
            qfair_qdelay_us: 1_000,
            first_ns: 1_000_000_000,
            last_ns: 3_000_000_000,
            ..RawFlow::default()
        };
        r.saddr[..4].copy_from_slice(&[10, 0, 0, 1]);
        let f = Flow::decode(1, &r);
        assert_eq!(f.cca, Some(Cca::Qfair));
        assert_eq!(f.mode.name(), "probe_rtt");
        assert_eq!(f.local.ip(), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(f.min_rtt, Duration::from_millis(20));
        assert_eq!(f.pacing_gain, Some(1.25));
        assert_eq!(f.cwnd_gain, None, "0 in the record: no BBR gain in force");
        assert_eq!(f.age(), Duration::from_secs(2));
        let q = f.qfair().unwrap();
        assert_eq!((q.alpha_pkts, q.gain), (3.0, 0.875));
        assert_eq!(q.offset_pkts, -0.5, "o is signed");
        assert_eq!(q.qdelay, Duration::from_millis(1));
        assert_eq!(q.drain_min_rtt, None, "0 in the record: no drain yet");
        let drained = RawFlow {
            qfair_drain_min_us: 40_077,
            ..r
        };
        assert_eq!(
            Flow::decode(1, &drained).qfair().unwrap().drain_min_rtt,
            Some(Duration::from_micros(40_077))
        );
        assert!(f.fairtt().is_none() && f.adbbr().is_none());
    }

    /// bbr3's unset bounds (all ones in the record) decode as `None`, the
    /// loss rate from ppm, the phase by name.
    #[test]
    fn bbr3_bounds_and_units_are_decoded() {
        let r = RawFlow {
            cca: abi::CCA_BBR3,
            bbr3_phase: abi::BBR3_UP,
            bbr3_bw_lo_bps: u64::MAX,
            bbr3_inflight_hi: 120,
            bbr3_inflight_lo: u32::MAX,
            bbr3_round_loss_ppm: 20_000,
            bbr3_ecn_alpha_x256: 256,
            ..RawFlow::default()
        };
        let b = *Flow::decode(1, &r).bbr3().unwrap();
        assert_eq!(b.phase.name(), "up");
        assert_eq!(
            (b.bw_lo_bps, b.inflight_hi, b.inflight_lo),
            (None, Some(120), None)
        );
        assert_eq!((b.round_loss, b.ecn_alpha), (0.02, 1.0));
        let unknown = RawFlow {
            bbr3_phase: 99,
            ..r
        };
        assert_eq!(
            Flow::decode(1, &unknown).bbr3().unwrap().phase,
            Bbr3Phase::Unknown
        );
    }

    #[test]
    fn unknown_enum_values_decode_as_unknown() {
        let r = RawFlow {
            cca: 99,
            mode: 42,
            ..RawFlow::default()
        };
        let f = Flow::decode(1, &r);
        assert_eq!(
            (f.cca, f.mode, f.state),
            (None, Mode::Unknown, CcaState::None)
        );
        assert_eq!(f.cca_name(), "unknown");
    }
}
