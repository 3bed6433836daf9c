//! `bench soak [SECONDS]` (also `cargo xtask soak`): long churn with every
//! project CCA while the daemon is scraped.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Result};
use rttfair_lab::net::ccas::CcaSession;
use rttfair_lab::net::daemon_child::{free_loopback_port, DaemonChild};
use rttfair_lab::net::netns::Netns;
use rttfair_loader::flows::{live_sockets, FlowReader};
use rttfair_loader::{BpfFs, Cca};

use rttfair_lab::net::procfs::{kernel_warnings, rss_kib};

/// Long churn with every project CCA while the daemon is scraped: the
/// figures the reliability issue asks for. Fails if any export entry or
/// socket leaked, or the kernel logged a warning meanwhile.
pub fn run(args: &[String]) -> Result<()> {
    let secs: f64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(60.0);
    let fs = BpfFs::from_env();
    let names: Vec<String> = Cca::ALL.iter().map(|c| c.name().to_string()).collect();
    let _session = CcaSession::ensure(&fs, &names)?;
    // `rttfairctl` beside this binary, killed on drop so an error part-way
    // through does not leave it running.
    let ctl = std::env::current_exe()?.with_file_name("rttfairctl");
    let port = free_loopback_port(&[])?;
    let daemon = DaemonChild::start(&ctl, &fs, port, "")?;
    let (w0, rss0) = (kernel_warnings(), rss_kib(daemon.pid()));
    let stop = Arc::new(AtomicBool::new(false));
    let scraper = scrape_every_second(port, stop.clone());
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
        leaked_total += churn(&ns, &fs, cca, secs)?;
    }
    stop.store(true, Ordering::Relaxed);
    let _ = scraper.join();
    let (w1, rss1) = (kernel_warnings(), rss_kib(daemon.pid()));
    drop(daemon);
    println!("entries leaked: {leaked_total} (must be 0)");
    println!("dmesg warnings: {} (must be 0)", w1.saturating_sub(w0));
    println!("daemon RSS: start {rss0} KiB, end {rss1} KiB");
    if leaked_total != 0 || w1 != w0 {
        bail!("soak failed");
    }
    Ok(())
}

/// A thread that scrapes /metrics on `port` once a second until `stop`.
fn scrape_every_second(port: u16, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = write!(s, "GET /metrics HTTP/1.0\r\n\r\n");
                let mut b = Vec::new();
                let _ = s.read_to_end(&mut b);
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// `secs` of connection churn with `cca` in `ns`, its row printed; returns
/// what leaked: sockets still open 10 s later plus export entries left.
fn churn(ns: &Netns, fs: &BpfFs, cca: Cca, secs: f64) -> Result<u64> {
    let r = rttfair_lab::net::churn::run(ns, cca.name(), Duration::from_secs_f64(secs), 4, 2)?;
    let mut live = u64::MAX;
    for _ in 0..100 {
        live = live_sockets(fs, cca)?;
        if live == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let entries = FlowReader::open(fs)?
        .flows()?
        .into_iter()
        .filter(|f| f.cca == Some(cca))
        .count() as u64;
    let leaked = live + entries;
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
    Ok(leaked)
}
