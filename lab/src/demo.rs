//! The main job a newcomer runs first (`cargo xtask demo`).

use std::time::Duration;

use anyhow::Result;
use rttfair_loader::flows::FlowReader;
use rttfair_loader::BpfFs;

use crate::ccas::CcaSession;
use crate::iperf::{self, ClientSpec};
use crate::link::{self, Bottleneck};
use crate::netns::Netns;

/// Options of the demo.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub seconds: f64,
    pub keep_loaded: bool,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions { seconds: 6.0, keep_loaded: false }
    }
}

/// Load bbr1, push one flow each of native bbr and bbr1 through a 50 Mbit/s
/// bottleneck, show what the BPF CCA exported while it ran, unload.
pub fn run(fs: &BpfFs, opts: &DemoOptions) -> Result<()> {
    let mut session = CcaSession::ensure(fs, &["bbr1".into()])?;
    if opts.keep_loaded {
        session.keep();
    }
    let snd = Netns::create("dsnd")?;
    let rcv = Netns::create("drcv")?;
    link::veth(&snd, "v0", &rcv, "v1")?;
    link::addr(&snd, "v0", "10.66.0.1/24")?;
    link::addr(&rcv, "v1", "10.66.0.2/24")?;
    link::shape(&snd, "v0", Bottleneck { rate_bit: 50_000_000, limit_bytes: 125_000 })?;
    let _srv = iperf::Server::start(&rcv, "10.66.0.2", 5201)?;

    println!("bottleneck 50 Mbit/s, 125 kB drop-tail buffer, {} s per flow", opts.seconds);
    for cca in ["bbr", "bbr1"] {
        let spec = ClientSpec {
            server: "10.66.0.2".into(),
            port: 5201,
            bind: None,
            cca: cca.into(),
            seconds: opts.seconds,
            interval: 1.0,
        };
        let fs2 = fs.clone();
        let half = opts.seconds / 2.0;
        let watcher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(half));
            FlowReader::open(&fs2).and_then(|r| r.flows()).unwrap_or_default()
        });
        let r = iperf::client(&snd, &spec)?;
        let flows = watcher.join().unwrap_or_default();
        println!(
            "{cca:<5} goodput {:6.2} Mbit/s  retransmits {:4}  mean RTT {:.2} ms",
            r.receiver_bits_per_second / 1e6,
            r.retransmits,
            r.intervals.iter().map(|i| i.2 as f64).sum::<f64>() / r.intervals.len().max(1) as f64 / 1e3
        );
        for f in flows.iter().filter(|f| f.peer().port() == 5201) {
            println!(
                "      bbr1 export: btlbw {:.2} Mbit/s  min_rtt {} us  cwnd {}  mode {}",
                f.raw.btlbw_bps as f64 * 8.0 / 1e6,
                f.raw.min_rtt_us,
                f.raw.cwnd,
                f.mode()
            );
        }
    }
    Ok(())
}
