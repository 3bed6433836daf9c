//! `bench lab-accuracy`: how exactly the lab's delay element and bottleneck
//! keep the configured RTT and rate, per rate, idle and under load.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rttfair_lab::net::iperf::{self, ClientSpec};

/// The lab's accuracy per bottleneck rate: the self-check's RTT and rate
/// errors on an idle lab, then the aggregate goodput of 10 cubic flows and,
/// while they run, the round trip the lab really gives their paths (ICMP
/// echo over the reverse path, which does not cross the bottleneck queue:
/// configured delay + whatever the element and the loaded stack add) and
/// how late the element's writers start their writes.
///
/// `lab-accuracy [--writers N] [--no-pin] [--receiver-gro]
/// [--segment-at-bottleneck] [--tun-rps] [RATE_MBIT...]`: the element's
/// threads (default: one pinned writer per core, at most two), GRO on the
/// receivers' interface, GSO from the senders to a bottleneck that
/// segments on enqueue (`topology::Options::segment_at_bottleneck`), and
/// RPS on the element's TUN device (`Dumbbell::tun_rps`).
pub fn run(args: &[String]) -> Result<()> {
    use rttfair_lab::net::delay::Threads;
    use rttfair_lab::net::link::Bottleneck;
    use rttfair_lab::net::selfcheck;
    use rttfair_lab::net::topology::{Dumbbell, FlowPath, Options};
    use std::sync::atomic::Ordering::Relaxed;

    const LOAD_FLOWS: usize = 10;
    const LOAD_RTT_MS: f64 = 20.0;
    const LOAD_S: f64 = 8.0;
    let idle_rtts = [2.0, 20.0, 200.0];
    let mut threads = Threads::default();
    let mut rates: Vec<u64> = Vec::new();
    let mut receiver_gro = false;
    let mut segment_at_bottleneck = false;
    let mut tun_rps = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--writers" => {
                threads.writers = it
                    .next()
                    .context("--writers needs a number")?
                    .parse()
                    .context("--writers needs a number")?;
                if threads.writers == 0 {
                    bail!("--writers must be at least 1");
                }
            }
            "--no-pin" => threads.pin = false,
            "--receiver-gro" => receiver_gro = true,
            "--segment-at-bottleneck" => segment_at_bottleneck = true,
            "--tun-rps" => tun_rps = true,
            r => rates.push(
                r.parse()
                    .with_context(|| format!("'{r}' is not a rate in Mbit/s"))?,
            ),
        }
    }
    if rates.is_empty() {
        rates = vec![20, 100, 200, 500, 1000];
    }
    println!("lab accuracy: idle RTT check at 2/20/200 ms (min of 5 handshakes, kernel tcpi_rtt),");
    println!("rate check (departure rate while backlogged), then {LOAD_FLOWS} cubic flows at {LOAD_RTT_MS} ms for {LOAD_S} s,");
    println!("buffer 1 BDP at {LOAD_RTT_MS} ms; goodput expected = rate x 1448/1514; lateness = writer start - due;");
    println!("path RTT = ICMP echo router -> load senders over the delayed path (s 1-7 of the load), mean / p99;");
    println!(
        "delay element: {} writer thread(s), pinned: {}; GRO on the receivers' interface: {receiver_gro}",
        threads.writers, threads.pin
    );
    println!("GSO from the senders, segmented at the bottleneck (TBF): {segment_at_bottleneck}; RPS on the element's TUN: {tun_rps}");
    println!(
        "{:>6} | {:>22} | {:>17} | {:>20} | {:>21} | {:>20} | {:>10}",
        "Mbit/s",
        "idle RTT err 2/20/200",
        "rate check",
        "aggregate goodput",
        "lateness mean / max",
        "path RTT @20 mean/p99",
        "RTT err @20"
    );
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
        let opts = Options {
            threads,
            segment_at_bottleneck,
            ..Options::default()
        };
        let net = Dumbbell::build_opts(&paths, b, opts)?;
        net.receiver_gro(receiver_gro)?;
        if tun_rps {
            net.tun_rps()?;
        }
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
        let (cpu0, threads0) = (cpu_jiffies()?, element_thread_jiffies());
        let softirqs0 = softirq_counts()?;
        let load_t0 = std::time::Instant::now();
        let queue0 = net.queue_reader()?.read()?;
        let handles: Vec<_> = (0..LOAD_FLOWS)
            .map(|i| {
                let spec = ClientSpec {
                    server: "10.20.0.1".into(),
                    port: 5201 + i as u16,
                    bind: Some(net.sender(idle_rtts.len() + i).to_string()),
                    cca: "cubic".into(),
                    seconds: LOAD_S,
                    interval: 1.0,
                };
                let snd = net.snd.name().to_string();
                std::thread::spawn(move || iperf::client_in(&snd, &spec))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(1));
        let targets = (0..LOAD_FLOWS)
            .map(|i| net.sender(idle_rtts.len() + i))
            .collect();
        let probe = rttfair_lab::net::pathprobe::ping_from_router(
            &net.router,
            targets,
            Duration::from_secs_f64(LOAD_S - 2.0),
            Duration::from_millis(5),
        )?;
        let mut total = 0.0;
        for h in handles {
            total += h
                .join()
                .map_err(|_| anyhow::anyhow!("client thread"))??
                .receiver_bits_per_second;
        }
        let (mut path_rtts, unanswered) = probe
            .join()
            .map_err(|_| anyhow::anyhow!("probe thread"))???;
        let (cpu1, threads1) = (cpu_jiffies()?, element_thread_jiffies());
        let softirqs1 = softirq_counts()?;
        let queue1 = net.queue_reader()?.read()?;
        drop(servers);
        let n = st.packets_out.load(Relaxed) - out0;
        let mean_late_ms =
            (st.lateness_sum_ns.load(Relaxed) - late0) as f64 / n.max(1) as f64 / 1e6;
        let max_late_ms = st.lateness_max_ns.load(Relaxed) as f64 / 1e6;
        let expected = mbit as f64 * 1e6 * 1448.0 / 1514.0;
        path_rtts.sort_by(f64::total_cmp);
        let path_mean = path_rtts.iter().sum::<f64>() / path_rtts.len().max(1) as f64;
        let path_p99 = path_rtts
            .get((path_rtts.len() as f64 * 0.99) as usize)
            .or(path_rtts.last())
            .copied()
            .unwrap_or(f64::NAN);
        println!(
            "{:>6} | {:>22} | {:>7.2} ({:+.2}%) | {:>8.1} ({:>6.1}%) | {:>8.3} / {:>7.3} ms | {:>7.2} / {:>7.2} ms | {:>+9.2}%",
            mbit,
            rtt_err.join("/") + " %",
            rate.measured_bit / 1e6,
            (rate.measured_bit / rate.configured_bit - 1.0) * 100.0,
            total / 1e6,
            total / expected * 100.0,
            mean_late_ms,
            max_late_ms,
            path_mean,
            path_p99,
            (path_mean / LOAD_RTT_MS - 1.0) * 100.0
        );
        if rate.busy_s < selfcheck::MIN_BUSY_S {
            println!("         (rate check: queue backlogged only {:.2} s: the load cannot fill this rate)", rate.busy_s);
        }
        if unanswered > 0 {
            println!(
                "         (path probe: {unanswered} of {} echo requests unanswered)",
                unanswered + path_rtts.len()
            );
        }
        let data_packets = queue1.packets.wrapping_sub(queue0.packets) as f64;
        println!(
            "         load: {:.2} packets through the element per packet through the bottleneck; {}; element threads (% of a core): {}",
            n as f64 / data_packets.max(1.0),
            cpu_split(&cpu0, &cpu1),
            thread_split(&threads0, &threads1, load_t0.elapsed().as_secs_f64())
        );
        println!(
            "         softirq handler runs per packet through the bottleneck: {}",
            softirq_split(&softirqs0, &softirqs1, data_packets)
        );
    }
    Ok(())
}

/// Per-CPU-state jiffies summed over all cores (`/proc/stat` "cpu" line:
/// user nice system idle iowait irq softirq steal).
fn cpu_jiffies() -> Result<Vec<u64>> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().context("empty /proc/stat")?;
    Ok(line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().unwrap_or(0))
        .collect())
}

/// Where the machine's CPU went between two [`cpu_jiffies`] readings, in %
/// of all cores.
fn cpu_split(a: &[u64], b: &[u64]) -> String {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y - x) as f64).collect();
    let total: f64 = d.iter().sum::<f64>().max(1.0);
    let pct = |i: usize| d.get(i).copied().unwrap_or(0.0) / total * 100.0;
    format!(
        "cpu user {:.0}% sys {:.0}% softirq {:.0}% idle {:.0}% steal {:.0}%",
        pct(0) + pct(1),
        pct(2) + pct(5),
        pct(6),
        pct(3) + pct(4),
        pct(7)
    )
}

/// utime+stime jiffies of this process's delay element threads, by name.
fn element_thread_jiffies() -> Vec<(String, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out: Vec<(String, u64)> = dir
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.split_once(") ")?;
            if !name.starts_with("rttfair-dly") {
                return None;
            }
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|v| v.parse().unwrap_or(0))
                .collect();
            // After "(comm) ": state is field 3, utime 14 and stime 15.
            Some((name.to_string(), f.get(11)? + f.get(12)?))
        })
        .collect();
    out.sort();
    out
}

/// Each element thread's CPU between two [`element_thread_jiffies`]
/// readings `secs` apart, in % of one core.
fn thread_split(a: &[(String, u64)], b: &[(String, u64)], secs: f64) -> String {
    let hz = 100.0; // USER_HZ
    b.iter()
        .map(|(name, j)| {
            let j0 = a.iter().find(|(n, _)| n == name).map_or(0, |x| x.1);
            format!(
                "{} {:.0}",
                name.trim_start_matches("rttfair-dly-"),
                (j - j0) as f64 / hz / secs * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Softirq handler runs so far, per kind, summed over all cores
/// (`/proc/softirqs`): how batched the stack's work is (NET_RX = receive
/// paths, NET_TX = deferred qdisc runs, HRTIMER = qdisc watchdogs, TCP
/// pacing), each run handling one or many packets.
fn softirq_counts() -> Result<Vec<(String, u64)>> {
    let text = std::fs::read_to_string("/proc/softirqs")?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (name, counts) = l.split_once(':')?;
            let sum = counts
                .split_whitespace()
                .map(|v| v.parse::<u64>().unwrap_or(0))
                .sum();
            Some((name.trim().to_string(), sum))
        })
        .collect())
}

/// The network and timer softirqs between two [`softirq_counts`]
/// readings, per packet through the bottleneck.
fn softirq_split(a: &[(String, u64)], b: &[(String, u64)], packets: f64) -> String {
    ["NET_RX", "NET_TX", "HRTIMER", "TIMER"]
        .iter()
        .map(|kind| {
            let at = |v: &[(String, u64)]| v.iter().find(|(n, _)| n == kind).map_or(0, |x| x.1);
            let d = at(b).saturating_sub(at(a));
            format!("{kind} {:.2}", d as f64 / packets.max(1.0))
        })
        .collect::<Vec<_>>()
        .join(" ")
}
