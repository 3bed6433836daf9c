//! `cargo xtask bench <name>`: benchmarks that print figures.
//!
//! Comparisons run side by side in one invocation, alternating the
//! contenders, and are reported as ratios. Nothing here asserts a time.

use std::time::Duration;

use anyhow::{bail, Result};
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
        Some("daemon") => daemon_bench(),
        Some("soak") => soak(&args[1..]),
        Some(other) => Err(anyhow::anyhow!(
            "unknown benchmark '{other}' (single-flow, verifier, lab-accuracy, daemon, soak)"
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
    let ccas = ["bbr", "bbr1", "fairtt", "adbbr", "qfair", "bbr_native"];
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
        for cca in ccas {
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
    for cca in ccas {
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

/// Scrape latency and RSS of `rttfairctl daemon` with 1k and 10k synthetic
/// flows in the map, and its idle CPU at one scrape per second.
fn daemon_bench() -> Result<()> {
    use rttfair_loader::flows::write_synthetic;
    use rttfair_loader::lifecycle::{create_shared_maps, LoadOptions};
    use rttfair_loader::Flow;
    use std::io::{Read, Write};

    let ctl = std::env::current_exe()?.with_file_name("rttfairctl");
    if !ctl.exists() {
        bail!(
            "{} not built (cargo build --release -p rttfairctl)",
            ctl.display()
        );
    }
    for n in [1_000usize, 10_000] {
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
        // Whatever happens below, the private maps and the daemon go.
        struct Cleanup {
            fs: BpfFs,
            cfg: std::path::PathBuf,
            child: Option<std::process::Child>,
        }
        impl Drop for Cleanup {
            fn drop(&mut self) {
                if let Some(c) = self.child.as_mut() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                let _ = std::fs::remove_file(&self.cfg);
                rttfair_loader::lifecycle::remove_unused(&self.fs);
            }
        }
        let cfg = std::env::temp_dir().join(format!("rttfair-bench-{n}.toml"));
        let mut cleanup = Cleanup {
            fs: fs.clone(),
            cfg: cfg.clone(),
            child: None,
        };
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
                delivered_bytes: i * 1000,
                started_at: Duration::from_nanos(1),
                exported_at: Duration::from_nanos(1_000_000_000 + i),
                ..Flow::default()
            })
            .collect();
        write_synthetic(&fs, &flows)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        // Only the synthetic flows: the host's own connections on kernel
        // CCAs would change the count from run to run.
        std::fs::write(
            &cfg,
            format!("max_flows = {}\nnative_flows = false\n", n + 1),
        )?;
        let child = std::process::Command::new(&ctl)
            .args([
                "daemon",
                "--config",
                cfg.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("RTTFAIR_BPFFS", fs.root())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let child = cleanup.child.insert(child);
        let get = || -> Result<(Duration, usize)> {
            let t = std::time::Instant::now();
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
            write!(
                s,
                "GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n\r\n"
            )?;
            // Sized for the largest body, so the client's own buffer growth
            // is not timed as the daemon's (Prometheus streams the body).
            let mut body = Vec::with_capacity(32 << 20);
            s.read_to_end(&mut body)?;
            Ok((t.elapsed(), body.len()))
        };
        let mut up = false;
        for _ in 0..100 {
            if get().is_ok() {
                up = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !up {
            bail!("daemon did not start");
        }
        let rss0 = rss_kib(child.id());
        {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
            write!(s, "GET /metrics HTTP/1.0\r\n\r\n")?;
            let mut body = String::new();
            s.read_to_string(&mut body)?;
            let series = body
                .lines()
                .filter(|l| l.starts_with("rttfair_flow_cwnd_segments{"))
                .count();
            if series != n {
                bail!("daemon exported {series} flows of {n}");
            }
        }
        let mut lat = Vec::new();
        let mut bytes = 0;
        for _ in 0..50 {
            let (d, b) = get()?;
            lat.push(d.as_secs_f64() * 1e3);
            bytes = b;
        }
        lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let rss1 = rss_kib(child.id());
        println!(
            "{n:>6} flows: scrape p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, {} kB per scrape; daemon RSS {} -> {} KiB",
            lat[lat.len() / 2],
            lat[lat.len() * 9 / 10],
            lat[(lat.len() * 99 / 100).min(lat.len() - 1)],
            bytes / 1000,
            rss0,
            rss1
        );
        if n == 1_000 {
            let cpu0 = cpu_ticks(child.id());
            let t0 = std::time::Instant::now();
            for _ in 0..20 {
                get()?;
                std::thread::sleep(Duration::from_secs(1));
            }
            let cpu = (cpu_ticks(child.id()) - cpu0) as f64 / 100.0; // USER_HZ
            println!(
                "  1k flows, 1 scrape/s for {:.0} s: daemon CPU {:.2}% of one core",
                t0.elapsed().as_secs_f64(),
                cpu / t0.elapsed().as_secs_f64() * 100.0
            );
        }
        drop(cleanup);
    }
    Ok(())
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
