//! Bulk flows across the lab's dumbbell, with the per-flow export sampled
//! while they run: the scaffolding of the CCA behaviour tests.
//!
//! A test builds its dumbbell(s), starts [`Transfers`], adds each flow (a
//! sink on the receiver, then a sender from the flow's address with its
//! CCA), does whatever it checks mid-run, and calls [`Transfers::finish`]
//! for the bytes each side counted and the export samples.

use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rttfair_lab::net::link::Bottleneck;
use rttfair_lab::net::topology::{sender_addr, Dumbbell, FlowPath, RECEIVER};
use rttfair_loader::flows::FlowReader;
use rttfair_loader::{BpfFs, Flow};

use super::{blast, connect_from, sink_once};

/// The bottleneck rate of every CCA behaviour test: low enough that the
/// lab's delay element is exact on a loaded 2-core machine.
pub const RATE_BIT: u64 = 20_000_000;

/// A 20 Mbit/s bottleneck with a drop-tail buffer of `buffer_bytes`.
pub fn bottleneck(buffer_bytes: u64) -> Bottleneck {
    Bottleneck {
        rate_bit: RATE_BIT,
        limit_bytes: buffer_bytes,
    }
}

/// A dumbbell with one lossless path per RTT of `rtts_ms` (flow `i` is the
/// `i`th sender address) through [`bottleneck`]`(buffer_bytes)`.
pub fn dumbbell(rtts_ms: &[u64], buffer_bytes: u64) -> Dumbbell {
    let paths: Vec<FlowPath> = rtts_ms
        .iter()
        .map(|&ms| FlowPath {
            rtt: Duration::from_millis(ms),
            loss_pct: 0.0,
        })
        .collect();
    Dumbbell::build(&paths, bottleneck(buffer_bytes)).expect("build dumbbell")
}

/// One export record seen while the flows ran: seconds since sampling
/// started, the flow's index (by its sender address), the record.
pub type Sample = (f64, usize, Flow);

/// The receiver port of flow `i`.
fn port(i: usize) -> u16 {
    6000 + i as u16
}

/// A thread that returns how many bytes it moved.
pub type Counted = JoinHandle<anyhow::Result<u64>>;

/// A sink for flow `i` on `net`'s receiver (port 6000 + `i`), reading to
/// EOF; listening when this returns.
pub fn sink(net: &Dumbbell, i: usize) -> Counted {
    let l = net
        .rcv
        .run(move || TcpListener::bind(SocketAddrV4::new(RECEIVER, port(i))).unwrap())
        .unwrap();
    net.rcv.spawn(move || sink_once(l)).unwrap()
}

/// A sender from flow `i`'s address on `net` to its sink, with `cca`,
/// writing for `dur`.
pub fn sender(net: &Dumbbell, i: usize, cca: &'static str, dur: Duration) -> Counted {
    let src = net.sender(i);
    net.snd
        .spawn(move || {
            let mut s = connect_from(src, SocketAddr::from((RECEIVER, port(i))), cca);
            blast(&mut s, dur)
        })
        .unwrap()
}

/// Flows in flight plus a sampler of their export records.
pub struct Transfers {
    sinks: Vec<Counted>,
    senders: Vec<Counted>,
    stop: Arc<AtomicBool>,
    sampler: JoinHandle<Vec<Sample>>,
    t0: Instant,
}

/// What the flows did, in the order they were added.
pub struct Finished {
    /// Bytes each sender wrote.
    pub sent: Vec<u64>,
    /// Bytes each sink read to EOF.
    pub received: Vec<u64>,
    /// Every 100 ms, the export records of the sampled flows.
    pub samples: Vec<Sample>,
}

impl Transfers {
    /// Start sampling the export map (pinned under `fs`) every 100 ms,
    /// keeping the records of flows from the first `sampled` sender
    /// addresses, in any namespace.
    pub fn sampling(fs: &BpfFs, sampled: usize) -> Transfers {
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let sampler = sample(fs.clone(), sampled, stop.clone(), t0);
        Transfers {
            sinks: Vec::new(),
            senders: Vec::new(),
            stop,
            sampler,
            t0,
        }
    }

    /// Seconds since sampling started, on the samples' clock: a test that
    /// changes something mid-run records when, and picks the samples after.
    pub fn elapsed_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// Flow `i` of `net`: a sink on the receiver (port 6000 + `i`) reading
    /// to EOF, and a sender from the flow's address writing with `cca` for
    /// `dur`, starting now.
    pub fn flow(&mut self, net: &Dumbbell, i: usize, cca: &'static str, dur: Duration) {
        self.sinks.push(sink(net, i));
        self.senders.push(sender(net, i, cca, dur));
    }

    /// Wait for every sender, stop sampling, wait for every sink.
    pub fn finish(self) -> Finished {
        let sent = self.senders.into_iter().map(joined).collect();
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.sampler.join().unwrap();
        let received = self.sinks.into_iter().map(joined).collect();
        Finished {
            sent,
            received,
            samples,
        }
    }
}

fn joined(h: Counted) -> u64 {
    h.join().unwrap().unwrap()
}

/// Sample the export map every 100 ms until `stop`, keeping the flows whose
/// local address is one of the first `n` sender addresses; each sample is
/// stamped in seconds since `t0`, just after it was read.
pub fn sample(fs: BpfFs, n: usize, stop: Arc<AtomicBool>, t0: Instant) -> JoinHandle<Vec<Sample>> {
    let addrs: Vec<std::net::IpAddr> = (0..n).map(|i| sender_addr(i).into()).collect();
    std::thread::spawn(move || {
        let reader = FlowReader::open(&fs).unwrap();
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            for f in reader.flows().unwrap() {
                if let Some(i) = addrs.iter().position(|a| *a == f.local.ip()) {
                    out.push((t0.elapsed().as_secs_f64(), i, f));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        out
    })
}
