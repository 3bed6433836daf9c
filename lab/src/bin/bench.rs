//! `cargo xtask bench <name>`: benchmarks that print figures.
//!
//! Comparisons run side by side in one invocation, alternating the
//! contenders, and are reported as ratios. Nothing here asserts a time.
//! Each bench is a module of its own under `bench/`; lab-accuracy is still
//! here, below, until the delay element's rework of it has been merged.

#[path = "bench/daemon.rs"]
mod daemon;
#[path = "bench/fairness_grid.rs"]
mod fairness_grid;
#[path = "bench/single_flow.rs"]
mod single_flow;
#[path = "bench/synthetic_daemon.rs"]
mod synthetic_daemon;
#[path = "bench/verifier.rs"]
mod verifier;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rttfair_lab::iperf::{self, ClientSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// The bench the first argument names, given the rest.
fn run(args: &[String]) -> Result<()> {
    let name = args
        .first()
        .context("which benchmark? single-flow, verifier")?;
    let rest = &args[1..];
    match name.as_str() {
        "single-flow" => single_flow::run(rest),
        "verifier" => verifier::run(),
        "lab-accuracy" => lab_accuracy(rest),
        "daemon" => daemon::run(rest),
        "soak" => soak::run(rest),
        "fairness-grid" => fairness_grid::run(rest),
        other => bail!(
            "unknown benchmark '{other}' (single-flow, verifier, lab-accuracy, daemon, soak, fairness-grid)"
        ),
    }
}

/// The lab's accuracy per bottleneck rate: the self-check's RTT and rate
/// errors on an idle lab, then the aggregate goodput of 10 cubic flows and
/// how late the delay element releases packets while they run (its lateness
/// is RTT error under load).
fn lab_accuracy(args: &[String]) -> Result<()> {
    use rttfair_lab::link::Bottleneck;
    use rttfair_lab::selfcheck;
    use rttfair_lab::topology::{Dumbbell, FlowPath};
    use std::sync::atomic::Ordering::Relaxed;

    const LOAD_FLOWS: usize = 10;
    const LOAD_RTT_MS: f64 = 20.0;
    let idle_rtts = [2.0, 20.0, 200.0];
    println!("lab accuracy: idle RTT check at 2/20/200 ms (min of 5 handshakes, kernel tcpi_rtt),");
    println!("rate check (departure rate while backlogged), then {LOAD_FLOWS} cubic flows at {LOAD_RTT_MS} ms for 8 s,");
    println!("buffer 1 BDP at {LOAD_RTT_MS} ms; goodput expected = rate x 1448/1514; lateness = element release - due");
    println!(
        "{:>6} | {:>22} | {:>17} | {:>20} | {:>21} | {:>10}",
        "Mbit/s",
        "idle RTT err 2/20/200",
        "rate check",
        "aggregate goodput",
        "lateness mean / max",
        "RTT err @20"
    );
    let rates: Vec<u64> = if args.is_empty() {
        vec![20, 100, 200, 500, 1000]
    } else {
        args.iter().map(|a| a.parse()).collect::<Result<_, _>>()?
    };
    for mbit in rates {
        let rtts: Vec<f64> = idle_rtts
            .iter()
            .copied()
            .chain(std::iter::repeat_n(LOAD_RTT_MS, LOAD_FLOWS))
            .collect();
        let paths: Vec<FlowPath> = rtts
            .iter()
            .map(|r| FlowPath {
                rtt: Duration::from_secs_f64(r / 1e3),
                loss_pct: 0.0,
            })
            .collect();
        let b = Bottleneck {
            rate_bit: mbit * 1_000_000,
            limit_bytes: ((mbit * 1_000_000) as f64 / 8.0 * LOAD_RTT_MS / 1e3) as u64,
        };
        let net = Dumbbell::build(&paths, b)?;
        let rtt = selfcheck::measure_rtts(&net, &idle_rtts, 5)?;
        let rtt_err: Vec<String> = rtt
            .iter()
            .map(|c| format!("{:+.1}", (c.measured_ms / c.configured_ms - 1.0) * 100.0))
            .collect();
        let servers: Vec<_> = (0..LOAD_FLOWS)
            .map(|i| iperf::Server::start(&net.rcv, "10.20.0.1", 5201 + i as u16))
            .collect::<Result<_>>()?;
        let rate = selfcheck::measure_rate(&net, b, Duration::from_millis(2), 5201, 4.0)?;
        std::thread::sleep(Duration::from_millis(500));
        let st = &net.delay.stats;
        let (out0, late0) = (
            st.packets_out.load(Relaxed),
            st.lateness_sum_ns.load(Relaxed),
        );
        st.lateness_max_ns.store(0, Relaxed);
        let handles: Vec<_> = (0..LOAD_FLOWS)
            .map(|i| {
                let spec = ClientSpec {
                    server: "10.20.0.1".into(),
                    port: 5201 + i as u16,
                    bind: Some(net.sender(idle_rtts.len() + i).to_string()),
                    cca: "cubic".into(),
                    seconds: 8.0,
                    interval: 1.0,
                };
                let snd = net.snd.name().to_string();
                std::thread::spawn(move || iperf::client_in(&snd, &spec))
            })
            .collect();
        let mut total = 0.0;
        for h in handles {
            total += h
                .join()
                .map_err(|_| anyhow::anyhow!("client thread"))??
                .receiver_bits_per_second;
        }
        drop(servers);
        let n = st.packets_out.load(Relaxed) - out0;
        let mean_late_ms =
            (st.lateness_sum_ns.load(Relaxed) - late0) as f64 / n.max(1) as f64 / 1e6;
        let max_late_ms = st.lateness_max_ns.load(Relaxed) as f64 / 1e6;
        let expected = mbit as f64 * 1e6 * 1448.0 / 1514.0;
        println!(
            "{:>6} | {:>22} | {:>7.2} ({:+.2}%) | {:>8.1} ({:>6.1}%) | {:>8.3} / {:>7.3} ms | {:>9.2}%",
            mbit,
            rtt_err.join("/") + " %",
            rate.measured_bit / 1e6,
            (rate.measured_bit / rate.configured_bit - 1.0) * 100.0,
            total / 1e6,
            total / expected * 100.0,
            mean_late_ms,
            max_late_ms,
            mean_late_ms / LOAD_RTT_MS * 100.0
        );
        if rate.busy_s < selfcheck::MIN_BUSY_S {
            println!("         (rate check: queue backlogged only {:.2} s: the load cannot fill this rate)", rate.busy_s);
        }
    }
    Ok(())
}

/// Long churn with every project CCA while the daemon is scraped: the
/// figures the reliability issue asks for.
#[path = "bench/soak.rs"]
mod soak;
