//! Connection churn: many short verified connections plus a few long ones,
//! over loopback inside one namespace, all on one congestion control.
//! Used by the reliability tests (short) and `cargo xtask soak` (long).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::net::netns::Netns;

/// Bytes each short connection sends and the server verifies.
const SHORT_BYTES: usize = 4096;
/// Listening ports (more 4-tuples than one port's ephemeral range: each
/// closed client connection holds its tuple in TIME_WAIT for 60 s).
const PORTS: u16 = 32;
/// Short connections per second per worker, at most (4 workers: ~4000/s,
/// ~240k tuples a minute, inside 32 ports x 28k ephemeral ports).
const PER_WORKER_RATE: u64 = 1000;
const BASE_PORT: u16 = 7100;

fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(131).wrapping_add(17) % 253) as u8
}

/// What a churn run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ChurnReport {
    pub opened: u64,
    pub closed: u64,
    pub bytes_verified: u64,
    /// Connections whose bytes did not verify, or that failed mid-way.
    pub failures: u64,
    pub long_flow_bytes: u64,
    pub seconds: f64,
}

#[derive(Default)]
struct Counters {
    opened: AtomicU64,
    closed: AtomicU64,
    verified: AtomicU64,
    failures: AtomicU64,
}

/// Run churn with `cca` for `dur` inside `ns`: `workers` client threads
/// opening short connections back to back, and `long_flows` connections
/// streaming for the whole run.
pub fn run(
    ns: &Netns,
    cca: &str,
    dur: Duration,
    workers: usize,
    long_flows: usize,
) -> Result<ChurnReport> {
    // TIME_WAIT reuse for the clients, in this namespace only.
    ns.exec("sysctl", &["-qw", "net.ipv4.tcp_tw_reuse=1"])?;
    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    // Servers stop only after every client has finished, so no connection in
    // flight at the end is cut off by the harness itself.
    let stop_servers = Arc::new(AtomicBool::new(false));
    let servers = start_short_servers(ns, &counters, &stop_servers)?;
    let long_rx = start_long_receivers(ns, long_flows)?;
    let t0 = Instant::now();
    let long_tx = start_long_senders(ns, cca, long_flows, &stop)?;
    let clients = start_churn_clients(ns, cca, workers, &counters, &stop)?;
    std::thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    for h in clients {
        let _ = h.join();
    }
    let mut long_sent = 0;
    for h in long_tx {
        long_sent += h
            .join()
            .map_err(|_| anyhow::anyhow!("long flow panicked"))???;
    }
    let mut long_ok = true;
    let mut long_got = 0;
    for h in long_rx {
        let (n, ok) = h
            .join()
            .map_err(|_| anyhow::anyhow!("long receiver panicked"))??;
        long_got += n;
        long_ok &= ok;
    }
    stop_servers.store(true, Ordering::Relaxed);
    for h in servers {
        let _ = h.join();
    }
    let mut r = ChurnReport {
        opened: counters.opened.load(Ordering::Relaxed),
        closed: counters.closed.load(Ordering::Relaxed),
        bytes_verified: counters.verified.load(Ordering::Relaxed),
        failures: counters.failures.load(Ordering::Relaxed),
        long_flow_bytes: long_got,
        seconds: t0.elapsed().as_secs_f64(),
    };
    if !long_ok || long_got != long_sent {
        r.failures += 1;
    }
    Ok(r)
}

type Handle<T> = std::thread::JoinHandle<Result<T>>;

/// The short connections' servers, one per port, until `stop`.
fn start_short_servers(
    ns: &Netns,
    counters: &Arc<Counters>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Handle<()>>> {
    let mut servers = Vec::new();
    for p in 0..PORTS {
        let l = ns
            .run(move || TcpListener::bind(("127.0.0.1", BASE_PORT + p)))?
            .context("bind churn server")?;
        l.set_nonblocking(true)?;
        let (c, stop) = (counters.clone(), stop.clone());
        servers.push(ns.spawn(move || serve(l, c, stop))?);
    }
    Ok(servers)
}

/// Receivers of the long flows: each returns the bytes it read and whether
/// every byte matched the pattern.
fn start_long_receivers(ns: &Netns, long_flows: usize) -> Result<Vec<Handle<(u64, bool)>>> {
    let long_listener = ns
        .run(|| TcpListener::bind("127.0.0.1:7099"))?
        .context("bind long-flow server")?;
    (0..long_flows)
        .map(|_| {
            let l = long_listener.try_clone()?;
            ns.spawn(move || -> (u64, bool) {
                let Ok((mut s, _)) = l.accept() else {
                    return (0, false);
                };
                let mut buf = vec![0u8; 1 << 16];
                let (mut total, mut ok) = (0u64, true);
                loop {
                    match s.read(&mut buf) {
                        Ok(0) => return (total, ok),
                        Ok(n) => {
                            ok &= buf[..n]
                                .iter()
                                .enumerate()
                                .all(|(k, b)| *b == pattern(total + k as u64));
                            total += n as u64;
                        }
                        Err(_) => return (total, false),
                    }
                }
            })
        })
        .collect()
}

/// Long flows on `cca`, writing the pattern until `stop`; each returns the
/// bytes it wrote.
fn start_long_senders(
    ns: &Netns,
    cca: &str,
    long_flows: usize,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Handle<Result<u64>>>> {
    let mut long_tx = Vec::new();
    for _ in 0..long_flows {
        let (cca, stop) = (cca.to_string(), stop.clone());
        long_tx.push(ns.spawn(move || -> Result<u64> {
            let mut s = connect(SocketAddr::from(([127, 0, 0, 1], 7099)), &cca)?;
            let mut buf = vec![0u8; 1 << 16];
            let mut off = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (k, b) in buf.iter_mut().enumerate() {
                    *b = pattern(off + k as u64);
                }
                off += s.write(&buf)? as u64;
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(off)
        })?);
    }
    Ok(long_tx)
}

/// `workers` clients, each opening PER_WORKER_RATE short connections a
/// second on `cca` (round robin over the servers' ports) until `stop`.
fn start_churn_clients(
    ns: &Netns,
    cca: &str,
    workers: usize,
    counters: &Arc<Counters>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Handle<()>>> {
    let mut clients = Vec::new();
    for w in 0..workers {
        let (cca, c, stop) = (cca.to_string(), counters.clone(), stop.clone());
        clients.push(ns.spawn(move || {
            let mut i = w as u64;
            let started = Instant::now();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let due = started + Duration::from_micros(n * 1_000_000 / PER_WORKER_RATE);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                let port = BASE_PORT + (i % PORTS as u64) as u16;
                i += 1;
                c.opened.fetch_add(1, Ordering::Relaxed);
                match short(SocketAddr::from(([127, 0, 0, 1], port)), &cca) {
                    Ok(()) => c.closed.fetch_add(1, Ordering::Relaxed),
                    Err(_) => c.failures.fetch_add(1, Ordering::Relaxed),
                };
            }
        })?);
    }
    Ok(clients)
}

fn connect(addr: SocketAddr, cca: &str) -> Result<TcpStream> {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    crate::net::sock::set_congestion(&sock, cca)?;
    sock.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    Ok(sock.into())
}

/// One short connection: send the pattern, wait for the 1-byte verdict.
fn short(addr: SocketAddr, cca: &str) -> Result<()> {
    let mut s = connect(addr, cca)?;
    let buf: Vec<u8> = (0..SHORT_BYTES as u64).map(pattern).collect();
    s.write_all(&buf)?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut verdict = [0u8; 1];
    s.read_exact(&mut verdict)?;
    anyhow::ensure!(verdict[0] == 1, "server rejected the bytes");
    Ok(())
}

fn serve(l: TcpListener, c: Arc<Counters>, stop: Arc<AtomicBool>) {
    let mut buf = vec![0u8; SHORT_BYTES + 1];
    while !stop.load(Ordering::Relaxed) {
        let (mut s, _) = match l.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            Err(_) => continue,
        };
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let mut got = 0usize;
        let ok = loop {
            match s.read(&mut buf[got..]) {
                Ok(0) => break got == SHORT_BYTES,
                Ok(n) => {
                    got += n;
                    if got > SHORT_BYTES {
                        break false;
                    }
                }
                Err(_) => break false,
            }
        } && buf[..SHORT_BYTES]
            .iter()
            .enumerate()
            .all(|(k, b)| *b == pattern(k as u64));
        if ok {
            c.verified.fetch_add(SHORT_BYTES as u64, Ordering::Relaxed);
        }
        let _ = s.write_all(&[ok as u8]);
    }
}
