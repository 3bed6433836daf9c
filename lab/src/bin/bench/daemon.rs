//! `bench daemon [FLOWS...]`: what a scrape of `rttfairctl daemon` costs
//! with many flows in the map.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::synthetic_daemon::{Daemon, SyntheticMaps};
use rttfair_lab::net::procfs::{cpu_ticks, rss_kib};

/// The daemon's per-flow settings measured: a name and the config lines.
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

/// Scrape latency, body size, series and RSS of `rttfairctl daemon` with 1k
/// and 10k synthetic flows in the map, for each per-flow setting: default
/// (aggregates only), every flow encoded at each scrape (`refresh_ms = 0`,
/// the old path) and every flow with the background refresh; 50 concurrent
/// scrapers at 10k flows; idle CPU at one scrape per second.
/// `daemon [FLOWS...]`: the flow counts to run (default 1000 and 10000).
/// With `RUST_LOG` set, the daemon's log (its per-phase timings at debug
/// level) goes to stderr, after the figures of each mode.
pub fn run(args: &[String]) -> Result<()> {
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
    for n in counts {
        let maps = SyntheticMaps::new(n)?;
        for (mode, extra) in MODES {
            measure(&ctl, &maps, mode, extra)?;
        }
    }
    Ok(())
}

/// One daemon on `maps` with the `extra` config of `mode`: 50 scrapes
/// plain and 50 gzipped, then at 10k flows 50 concurrent scrapers, and at
/// 1k flows in the default mode its CPU at one scrape a second.
fn measure(ctl: &Path, maps: &SyntheticMaps, mode: &str, extra: &str) -> Result<()> {
    let n = maps.n;
    let d = Daemon::start(ctl, maps, extra)?;
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
        idle_cpu(&d)?;
    }
    Ok(())
}

/// The daemon's CPU over 20 s of one scrape a second, in % of one core.
fn idle_cpu(d: &Daemon) -> Result<()> {
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
    Ok(())
}

/// The `p`th percentile (nearest rank) of `v`.
fn pct(v: &mut [f64], p: usize) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() * p / 100).min(v.len() - 1)]
}
