//! The daemon under test of `bench daemon`: private pinned maps full of
//! synthetic flows, and an `rttfairctl daemon` serving them.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rttfair_lab::net::daemon_child::{free_loopback_port, DaemonChild, Ready};
use rttfair_loader::flows::write_synthetic;
use rttfair_loader::lifecycle::{create_shared_maps, remove_unused, LoadOptions};
use rttfair_loader::{BpfFs, Cca, Flow};

/// Private pinned maps holding `n` synthetic flows; removed on drop.
pub struct SyntheticMaps {
    pub fs: BpfFs,
    pub n: usize,
}

impl SyntheticMaps {
    /// `n` flows spread over three CCAs, addresses and ports, with rates
    /// and RTTs that differ per flow, so every per-flow series is distinct.
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

/// A running `rttfairctl daemon` (a [`DaemonChild`]: stopped and its
/// config removed on drop), with the scrapes the bench makes of it.
pub struct Daemon(DaemonChild);

impl Daemon {
    /// Start it on `maps` with `extra` config lines, and wait until its
    /// maps are readable (/readyz 200).
    pub fn start(ctl: &Path, maps: &SyntheticMaps, extra: &str) -> Result<Daemon> {
        let port = free_loopback_port(&[])?;
        // Only the synthetic flows: the host's own connections on kernel
        // CCAs would change the count from run to run.
        let config = format!("max_flows = {}\nnative_flows = false\n{extra}", maps.n + 1);
        let d = DaemonChild::launch(ctl, &maps.fs, port)
            .config(&config)
            .ready(Ready::Healthy)
            .start()?;
        Ok(Daemon(d))
    }

    /// Its process id, for reading its memory and CPU time.
    pub fn pid(&self) -> u32 {
        self.0.pid()
    }

    /// One OpenMetrics scrape: its time to the last byte, and the body.
    pub fn scrape(&self) -> Result<(Duration, Vec<u8>)> {
        scrape(self.0.port(), false)
    }

    /// One scrape as Prometheus makes it (gzip accepted): time and
    /// bytes on the wire.
    pub fn scrape_gzip(&self) -> Result<(Duration, usize)> {
        scrape(self.0.port(), true).map(|(t, b)| (t, b.len()))
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
        let port = self.0.port();
        let pid = self.pid();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let sampler = s.spawn(|| {
                let mut peak = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peak = peak.max(rttfair_lab::net::procfs::rss_kib(pid));
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
    /// With `RUST_LOG` set, its log (the per-phase timings at debug level)
    /// goes to stderr, after the figures of its mode.
    fn drop(&mut self) {
        if std::env::var_os("RUST_LOG").is_some() {
            if let Ok(log) = self.0.stderr() {
                eprint!("{log}");
            }
        }
    }
}

/// One GET /metrics in OpenMetrics (gzip accepted with `gzip`): its time
/// to the last byte, and the whole response.
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
