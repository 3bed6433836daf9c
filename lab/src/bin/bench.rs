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
        Some(other) => Err(anyhow::anyhow!("unknown benchmark '{other}' (single-flow, verifier)")),
        None => Err(anyhow::anyhow!("which benchmark? single-flow, verifier")),
    };
    if let Err(e) = res {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// Per-program verifier and JIT figures of every CCA.
fn verifier() -> Result<()> {
    let scratch = BpfFs::new(format!("/sys/fs/bpf/rttfair-bench-verifier-{}", std::process::id()));
    println!("{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}", "cca", "program", "insns", "verified", "xlated", "jited");
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
        println!("{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}   object {} bytes", cca.name(), "TOTAL", "", total, "", "", obj);
    }
    scratch.remove_if_empty();
    Ok(())
}

fn cca_object_size(cca: Cca) -> usize {
    rttfair_loader::lifecycle::object_bytes(cca).len()
}

/// Native bbr vs bbr1, one flow over a veth pair with no bottleneck.
fn single_flow(args: &[String]) -> Result<()> {
    let secs: f64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(8.0);
    let reps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(3);
    let fs = BpfFs::from_env();
    let _session = CcaSession::ensure(&fs, &["bbr1".to_string()])?;
    let stats_prev = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
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
    let mut cc_runtime = (0u64, 0u64);
    for rep in 0..reps {
        for cca in ["bbr", "bbr1"] {
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
            if cca == "bbr1" {
                let after = prog_stats("rf_cong_control");
                cc_runtime.0 += after.0.saturating_sub(before.0);
                cc_runtime.1 += after.1.saturating_sub(before.1);
            }
            if r.congestion != cca {
                bail!("iperf3 reports congestion {} for -C {cca}", r.congestion);
            }
            let cpu_s = r.sender_cpu_percent / 100.0 * r.seconds;
            let gb = r.sent_bytes as f64 / 1e9;
            println!(
                "rep {rep} {cca:<5} {:>8.2} Gbit/s  sender CPU {:>5.1}%  {:>6.3} CPU-s/GB  retrans {}",
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
    let (tb, t1) = (mean("bbr", |r| r.1), mean("bbr1", |r| r.1));
    let (cb, c1) = (mean("bbr", |r| r.2), mean("bbr1", |r| r.2));
    println!();
    println!("single-flow over veth, {reps} x {secs} s each, alternating:");
    println!("  throughput  native bbr {:.2} Gbit/s, bbr1 {:.2} Gbit/s, ratio bbr1/bbr = {:.3}", tb / 1e9, t1 / 1e9, t1 / tb);
    println!("  CPU per GB  native bbr {:.3} s, bbr1 {:.3} s, ratio bbr1/bbr = {:.3}", cb, c1, c1 / cb);
    if cc_runtime.1 > 0 {
        println!(
            "  bbr1 cong_control: {} calls, mean {:.0} ns per call (BPF run-time stats)",
            cc_runtime.1,
            cc_runtime.0 as f64 / cc_runtime.1 as f64
        );
    }
    Ok(())
}

/// (run_time_ns, run_cnt) summed over loaded programs named `name`.
fn prog_stats(name: &str) -> (u64, u64) {
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy() == name)
        .fold((0, 0), |acc, p| (acc.0 + p.run_time_ns, acc.1 + p.run_cnt))
}
