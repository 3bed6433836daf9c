//! `cargo xtask bench <name>`: benchmarks that print figures.
//!
//! Comparisons run side by side in one invocation, alternating the
//! contenders, and are reported as ratios. Nothing here asserts a time.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rttfair_lab::ccas::CcaSession;
use rttfair_lab::iperf::{self, ClientSpec};
use rttfair_lab::link;
use rttfair_lab::netns::Netns;
use rttfair_loader::lifecycle;
use rttfair_loader::{BpfFs, Cca};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("single-flow") => single_flow(&args[1..]),
        Some("verifier") => verifier(),
        Some("lab-accuracy") => lab_accuracy(&args[1..]),
        Some("daemon") => daemon_bench(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("fairness-grid") => fairness_grid(&args[1..]),
        Some(other) => Err(anyhow::anyhow!(
            "unknown benchmark '{other}' (single-flow, verifier, lab-accuracy, daemon, soak, fairness-grid)"
        )),
        None => Err(anyhow::anyhow!("which benchmark? single-flow, verifier")),
    };
    if let Err(e) = res {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// Per-program verifier and JIT figures of every CCA.
fn verifier() -> Result<()> {
    let scratch = BpfFs::new(format!(
        "/sys/fs/bpf/rttfair-bench-verifier-{}",
        std::process::id()
    ));
    println!(
        "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}",
        "cca", "program", "insns", "verified", "xlated", "jited"
    );
    for cca in Cca::ALL {
        let stats = lifecycle::inspect_programs(cca, &scratch)?;
        let mut total = 0u64;
        for p in &stats {
            total += p.verified_insns as u64;
            println!(
                "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}",
                cca.name(),
                p.name,
                p.insns,
                p.verified_insns,
                p.xlated_bytes,
                p.jited_bytes
            );
        }
        let obj = cca_object_size(cca);
        println!(
            "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}   object {} bytes",
            cca.name(),
            "TOTAL",
            "",
            total,
            "",
            "",
            obj
        );
    }
    scratch.remove_if_empty();
    Ok(())
}

fn cca_object_size(cca: Cca) -> usize {
    rttfair_loader::objects::cca(cca).len()
}

/// Native bbr vs the project CCAs, one flow over a veth pair with no
/// bottleneck, alternating CCAs within each repetition so drift hits all
/// alike. Ratios are against native bbr; the per-call cost of each project
/// CCA's cong_control comes from the kernel's BPF run-time stats.
fn single_flow(args: &[String]) -> Result<()> {
    let secs: f64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(8.0);
    let reps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(3);
    // Native bbr first (the reference), then every CCA this build ships: a
    // new CCA joins the bench by joining `Cca::ALL`.
    let ccas: Vec<&str> = std::iter::once("bbr")
        .chain(rttfair_loader::Cca::ALL.iter().map(|c| c.name()))
        .collect();
    let fs = BpfFs::from_env();
    let project: Vec<String> = ccas[1..].iter().map(|s| s.to_string()).collect();
    let _session = CcaSession::ensure(&fs, &project)?;
    let stats_prev =
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
    std::fs::write("/proc/sys/kernel/bpf_stats_enabled", "1")?;

    let a = Netns::create("bsnd")?;
    let b = Netns::create("brcv")?;
    link::veth(&a, "v0", &b, "v1")?;
    // Offloads back on: this benchmark is about raw speed and CPU per byte.
    for (ns, i) in [(&a, "v0"), (&b, "v1")] {
        ns.exec("ethtool", &["-K", i, "tso", "on", "gso", "on", "gro", "on"])?;
    }
    link::addr(&a, "v0", "10.88.0.1/24")?;
    link::addr(&b, "v1", "10.88.0.2/24")?;
    let _srv = iperf::Server::start(&b, "10.88.0.2", 5201)?;

    let mut rows: Vec<(&str, f64, f64, u64)> = Vec::new();
    // (ns, calls) of cong_control per project CCA. All three programs are
    // named rf_cong_control and only one CCA runs at a time, so the change
    // of the sum over a run is that CCA's.
    let mut cc_runtime: Vec<(&str, u64, u64)> = Vec::new();
    for rep in 0..reps {
        for &cca in &ccas {
            let before = prog_stats("rf_cong_control");
            let r = iperf::client(
                &a,
                &ClientSpec {
                    server: "10.88.0.2".into(),
                    port: 5201,
                    bind: None,
                    cca: cca.into(),
                    seconds: secs,
                    interval: 1.0,
                },
            )?;
            if cca != "bbr" {
                let after = prog_stats("rf_cong_control");
                cc_runtime.push((
                    cca,
                    after.0.saturating_sub(before.0),
                    after.1.saturating_sub(before.1),
                ));
            }
            if r.congestion != cca {
                bail!("iperf3 reports congestion {} for -C {cca}", r.congestion);
            }
            let cpu_s = r.sender_cpu_percent / 100.0 * r.seconds;
            let gb = r.sent_bytes as f64 / 1e9;
            println!(
                "rep {rep} {cca:<6} {:>8.2} Gbit/s  sender CPU {:>5.1}%  {:>6.3} CPU-s/GB  retrans {}",
                r.receiver_bits_per_second / 1e9,
                r.sender_cpu_percent,
                cpu_s / gb,
                r.retransmits
            );
            rows.push((cca, r.receiver_bits_per_second, cpu_s / gb, r.retransmits));
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", stats_prev.trim());

    let mean = |cca: &str, f: fn(&(&str, f64, f64, u64)) -> f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 == cca).map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (tb, cb) = (mean("bbr", |r| r.1), mean("bbr", |r| r.2));
    println!();
    println!("single-flow over veth, {reps} x {secs} s each, alternating; ratios vs native bbr:");
    println!(
        "  {:<7} {:>12} {:>10} {:>12} {:>10} {:>16}",
        "cca", "Gbit/s", "x bbr", "CPU-s/GB", "x bbr", "ns/cong_control"
    );
    for &cca in &ccas {
        let (t, c) = (mean(cca, |r| r.1), mean(cca, |r| r.2));
        let (ns, calls) = cc_runtime
            .iter()
            .filter(|r| r.0 == cca)
            .fold((0u64, 0u64), |a, r| (a.0 + r.1, a.1 + r.2));
        let per_call = if calls > 0 {
            format!("{:.0}", ns as f64 / calls as f64)
        } else {
            "-".into()
        };
        println!(
            "  {:<7} {:>12.2} {:>10.3} {:>12.3} {:>10.3} {:>16}",
            cca,
            t / 1e9,
            t / tb,
            c,
            c / cb,
            per_call
        );
    }
    Ok(())
}

/// The two-flow grid of issue 14 for each CCA of `--cca`, CCAs back to back
/// at each point; Markdown tables on stdout, one progress line per run on
/// stderr, every run's files under `--out` (default lab-out/fairness-grid).
fn fairness_grid(args: &[String]) -> Result<()> {
    use rttfair_lab::fairness_grid as grid;
    use rttfair_lab::run::RunOptions;

    let (g, out) = grid::parse_args(args)?;
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let pts = grid::points(g.quick);
    eprintln!(
        "fairness-grid: {} points x {} CCAs x {} rep(s) x {} s at {} Mbit/s (about {:.0} min)",
        pts.len(),
        g.ccas.len(),
        g.reps,
        grid::DURATION_S,
        g.rate_mbit,
        (pts.len() * g.ccas.len()) as f64 * g.reps as f64 * (grid::DURATION_S + 8.0) / 60.0
    );
    let opts = RunOptions {
        out_dir: out.unwrap_or_else(|| "lab-out/fairness-grid".into()).into(),
        bpffs: BpfFs::from_env(),
        progress: false,
        verbose: false,
    };
    let res = grid::run(&g, &opts, |line| eprintln!("  {line}"))?;
    println!(
        "fairness-grid at commit {commit}: 20 ms vs the second flow's RTT, buffer in BDP of 20 ms, {} Mbit/s, {} s per point ({} s left out), {} repetition(s), CCAs alternating per point",
        g.rate_mbit,
        grid::DURATION_S,
        grid::WARMUP_S,
        g.reps
    );
    print!("{}", grid::tables(&res));
    Ok(())
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
fn soak(args: &[String]) -> Result<()> {
    use rttfair_loader::flows::{live_sockets, FlowReader};
    let secs: f64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(60.0);
    let fs = BpfFs::from_env();
    let names: Vec<String> = Cca::ALL.iter().map(|c| c.name().to_string()).collect();
    let _session = CcaSession::ensure(&fs, &names)?;
    let ctl = std::env::current_exe()?.with_file_name("rttfairctl");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut daemon = std::process::Command::new(&ctl)
        .args([
            "--bpffs",
            &fs.root().display().to_string(),
            "daemon",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::sleep(Duration::from_secs(1));
    let warnings = || {
        std::process::Command::new("dmesg")
            .args(["--level=emerg,alert,crit,err,warn"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0)
    };
    let (w0, rss0) = (warnings(), rss_kib(daemon.id()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let scraper = std::thread::spawn(move || {
        use std::io::{Read, Write};
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = write!(s, "GET /metrics HTTP/1.0\r\n\r\n");
                let mut b = Vec::new();
                let _ = s.read_to_end(&mut b);
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let ns = Netns::create("soak")?;
    println!(
        "{:<7} {:>9} {:>9} {:>14} {:>15} {:>9} {:>7} {:>7}",
        "cca",
        "opened",
        "closed",
        "bytes verified",
        "long-flow bytes",
        "failures",
        "leaked",
        "conn/s"
    );
    let mut leaked_total = 0;
    for cca in Cca::ALL {
        let r = rttfair_lab::churn::run(&ns, cca.name(), Duration::from_secs_f64(secs), 4, 2)?;
        let mut live = u64::MAX;
        for _ in 0..100 {
            live = live_sockets(&fs, cca)?;
            if live == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let entries = FlowReader::open(&fs)?
            .flows()?
            .into_iter()
            .filter(|f| f.cca == Some(cca))
            .count() as u64;
        let leaked = live + entries;
        leaked_total += leaked;
        println!(
            "{:<7} {:>9} {:>9} {:>14} {:>15} {:>9} {:>7} {:>7.0}",
            cca.name(),
            r.opened,
            r.closed,
            r.bytes_verified,
            r.long_flow_bytes,
            r.failures,
            leaked,
            r.opened as f64 / r.seconds
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = scraper.join();
    let (w1, rss1) = (warnings(), rss_kib(daemon.id()));
    let _ = daemon.kill();
    let _ = daemon.wait();
    println!("entries leaked: {leaked_total} (must be 0)");
    println!("dmesg warnings: {} (must be 0)", w1.saturating_sub(w0));
    println!("daemon RSS: start {rss0} KiB, end {rss1} KiB");
    if leaked_total != 0 || w1 != w0 {
        bail!("soak failed");
    }
    Ok(())
}

/// Scrape latency, body size, series and RSS of `rttfairctl daemon` with 1k
/// and 10k synthetic flows in the map, for each per-flow setting: default
/// (aggregates only), every flow encoded at each scrape (`refresh_ms = 0`,
/// the old path) and every flow with the background refresh; 50 concurrent
/// scrapers at 10k flows; idle CPU at one scrape per second.
/// `daemon [FLOWS...]`: the flow counts to run (default 1000 and 10000).
/// With `RUST_LOG` set, the daemon's log (its per-phase timings at debug
/// level) goes to stderr.
fn daemon_bench(args: &[String]) -> Result<()> {
    let counts: Vec<usize> = if args.is_empty() {
        vec![1_000, 10_000]
    } else {
        args.iter()
            .map(|a| a.parse().with_context(|| format!("flow count '{a}'")))
            .collect::<Result<_>>()?
    };
    let ctl = std::env::current_exe()?.with_file_name("rttfairctl");
    if !ctl.exists() {
        bail!(
            "{} not built (cargo build --release -p rttfairctl)",
            ctl.display()
        );
    }
    const MODES: &[(&str, &str)] = &[
        ("default (per_flow off)", ""),
        (
            "per_flow all, refresh_ms 0",
            "per_flow = \"all\"\nrefresh_ms = 0\n",
        ),
        // refresh_ms is 0 by default: it must be set for this mode to
        // measure the cached body at all.
        (
            "per_flow all, refresh_ms 1000",
            "per_flow = \"all\"\nrefresh_ms = 1000\n",
        ),
    ];
    for n in counts {
        let maps = bench_daemon::SyntheticMaps::new(n)?;
        for (mode, extra) in MODES {
            let d = bench_daemon::Daemon::start(&ctl, &maps, extra)?;
            let read = d.sample("rttfair_flows_read")?;
            if read != n as f64 {
                bail!("daemon read {read} flows of {n}");
            }
            let rss0 = rss_kib(d.pid());
            let mut lat = Vec::new();
            let (mut bytes, mut series) = (0, 0);
            for _ in 0..50 {
                let (t, body) = d.scrape()?;
                lat.push(t.as_secs_f64() * 1e3);
                bytes = body.len();
                series = body
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty() && l[0] != b'#')
                    .count();
            }
            let mut zlat = Vec::new();
            let mut zbytes = 0;
            for _ in 0..50 {
                let (t, n) = d.scrape_gzip()?;
                zlat.push(t.as_secs_f64() * 1e3);
                zbytes = n;
            }
            let map_read_ms = d.sample("rttfair_previous_scrape_duration_seconds")? * 1e3;
            println!(
                "{n:>6} flows, {mode}: scrape p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms; {} kB, {series} series per scrape; snapshot (maps read, rated, labelled) {map_read_ms:.1} ms; daemon RSS {} -> {} KiB",
                pct(&mut lat, 50),
                pct(&mut lat, 90),
                pct(&mut lat, 99),
                bytes / 1000,
                rss0,
                rss_kib(d.pid())
            );
            println!(
                "  with gzip (as Prometheus scrapes): p50 {:.1} ms, p99 {:.1} ms, {} kB on the wire",
                pct(&mut zlat, 50),
                pct(&mut zlat, 99),
                zbytes / 1000
            );
            if n == 10_000 {
                // 50 scrapers at once (gzip, as Prometheus), 4 scrapes each.
                let (errors, mut lat, peak) = d.concurrent(50, 4)?;
                println!(
                    "  50 concurrent scrapers x 4: {errors} errors, p50 {:.1} ms, p99 {:.1} ms, peak daemon RSS {peak} KiB",
                    pct(&mut lat, 50),
                    pct(&mut lat, 99)
                );
            }
            if n == 1_000 && extra.is_empty() {
                let cpu0 = cpu_ticks(d.pid());
                let t0 = std::time::Instant::now();
                for _ in 0..20 {
                    d.scrape()?;
                    std::thread::sleep(Duration::from_secs(1));
                }
                let cpu = (cpu_ticks(d.pid()) - cpu0) as f64 / 100.0; // USER_HZ
                println!(
                    "  1k flows, 1 scrape/s for {:.0} s: daemon CPU {:.2}% of one core",
                    t0.elapsed().as_secs_f64(),
                    cpu / t0.elapsed().as_secs_f64() * 100.0
                );
            }
        }
    }
    Ok(())
}

/// The `p`th percentile (nearest rank) of `v`.
fn pct(v: &mut [f64], p: usize) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() * p / 100).min(v.len() - 1)]
}

/// A daemon over private maps of synthetic flows, for `daemon_bench`.
mod bench_daemon {
    use std::io::{Read, Write};
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use anyhow::{bail, Context, Result};
    use rttfair_loader::flows::write_synthetic;
    use rttfair_loader::lifecycle::{create_shared_maps, remove_unused, LoadOptions};
    use rttfair_loader::{BpfFs, Cca, Flow};

    /// Private pinned maps holding `n` synthetic flows; removed on drop.
    pub struct SyntheticMaps {
        pub fs: BpfFs,
        pub n: usize,
    }

    impl SyntheticMaps {
        pub fn new(n: usize) -> Result<Self> {
            let fs = BpfFs::new(format!(
                "/sys/fs/bpf/rttfair-bench-daemon-{}-{n}",
                std::process::id()
            ));
            create_shared_maps(
                &fs,
                &LoadOptions {
                    flows_max: Some(65_536),
                    object: None,
                },
            )?;
            let maps = SyntheticMaps { fs, n };
            let flows: Vec<Flow> = (0..n as u64)
                .map(|i| Flow {
                    id: i + 1,
                    cca: Some(Cca::ALL[(i % 3) as usize]),
                    local: (
                        [10, 10, (i >> 8) as u8, i as u8],
                        10_000 + (i % 50_000) as u16,
                    )
                        .into(),
                    peer: ([10, 20, 0, (i % 200) as u8], 5201).into(),
                    btlbw_bps: 1_250_000 + i,
                    min_rtt: Duration::from_micros(10_000 + i % 100),
                    srtt: Duration::from_micros(12_000 + i % 1000),
                    cwnd: 10 + (i % 500) as u32,
                    delivered_bytes: i * 1000,
                    started_at: Duration::from_nanos(1),
                    exported_at: Duration::from_nanos(1_000_000_000 + i),
                    ..Flow::default()
                })
                .collect();
            write_synthetic(&maps.fs, &flows)?;
            Ok(maps)
        }
    }

    impl Drop for SyntheticMaps {
        fn drop(&mut self) {
            remove_unused(&self.fs);
        }
    }

    /// A running `rttfairctl daemon`; killed and its config removed on drop.
    pub struct Daemon {
        child: std::process::Child,
        cfg: PathBuf,
        port: u16,
    }

    impl Daemon {
        /// Start it on `maps` with `extra` config lines, and wait until it
        /// answers.
        pub fn start(ctl: &Path, maps: &SyntheticMaps, extra: &str) -> Result<Daemon> {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            let cfg = std::env::temp_dir()
                .join(format!("rttfair-bench-{}-{port}.toml", std::process::id()));
            // Only the synthetic flows: the host's own connections on kernel
            // CCAs would change the count from run to run.
            std::fs::write(
                &cfg,
                format!("max_flows = {}\nnative_flows = false\n{extra}", maps.n + 1),
            )?;
            let child = std::process::Command::new(ctl)
                .args(["daemon", "--config", cfg.to_str().unwrap()])
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .env("RTTFAIR_BPFFS", maps.fs.root())
                .stderr(if std::env::var_os("RUST_LOG").is_some() {
                    std::process::Stdio::inherit()
                } else {
                    std::process::Stdio::null()
                })
                .spawn()?;
            let d = Daemon { child, cfg, port };
            for _ in 0..100 {
                if d.scrape().is_ok() {
                    return Ok(d);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            bail!("daemon did not start")
        }

        pub fn pid(&self) -> u32 {
            self.child.id()
        }

        /// One OpenMetrics scrape: its time to the last byte, and the body.
        pub fn scrape(&self) -> Result<(Duration, Vec<u8>)> {
            scrape(self.port, false)
        }

        /// One scrape as Prometheus makes it (gzip accepted): time and
        /// bytes on the wire.
        pub fn scrape_gzip(&self) -> Result<(Duration, usize)> {
            scrape(self.port, true).map(|(t, b)| (t, b.len()))
        }

        /// An unlabelled sample's value in a fresh scrape.
        pub fn sample(&self, name: &str) -> Result<f64> {
            let (_, body) = self.scrape()?;
            let text = String::from_utf8(body)?;
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .with_context(|| format!("no sample {name}"))
        }

        /// `clients` threads scraping `each` times at once: errors, latencies
        /// in ms, and the daemon's peak RSS (KiB) seen meanwhile.
        pub fn concurrent(&self, clients: usize, each: usize) -> Result<(usize, Vec<f64>, u64)> {
            let port = self.port;
            let pid = self.pid();
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let sampler = s.spawn(|| {
                    let mut peak = 0;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        peak = peak.max(super::rss_kib(pid));
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    peak
                });
                let workers: Vec<_> = (0..clients)
                    .map(|_| {
                        s.spawn(move || {
                            (0..each)
                                .map(|_| scrape(port, true).map(|(t, _)| t.as_secs_f64() * 1e3))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                let results: Vec<Result<f64>> = workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap())
                    .collect();
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                let peak = sampler.join().unwrap();
                let errors = results.iter().filter(|r| r.is_err()).count();
                let lat = results.into_iter().filter_map(Result::ok).collect();
                Ok((errors, lat, peak))
            })
        }
    }

    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_file(&self.cfg);
        }
    }

    fn scrape(port: u16, gzip: bool) -> Result<(Duration, Vec<u8>)> {
        let t = Instant::now();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        let enc = if gzip {
            "Accept-Encoding: gzip\r\n"
        } else {
            ""
        };
        write!(
            s,
            "GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n{enc}\r\n"
        )?;
        // Sized for the largest body, so the client's own buffer growth is
        // not timed as the daemon's (Prometheus streams the body).
        let mut body = Vec::with_capacity(32 << 20);
        s.read_to_end(&mut body)?;
        let elapsed = t.elapsed();
        if !body.starts_with(b"HTTP/1.1 200") && !body.starts_with(b"HTTP/1.0 200") {
            bail!(
                "scrape failed: {}",
                String::from_utf8_lossy(&body[..body.len().min(80)])
            );
        }
        Ok((elapsed, body))
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")
                    .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

fn cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

/// (run_time_ns, run_cnt) summed over loaded programs named `name`.
fn prog_stats(name: &str) -> (u64, u64) {
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy() == name)
        .fold((0, 0), |acc, p| (acc.0 + p.run_time_ns, acc.1 + p.run_cnt))
}
