//! The daemon under a real Prometheus: flows with known RTTs cross the lab,
//! Prometheus scrapes the daemon, its HTTP API returns each flow's min_rtt
//! and a Jain's index; promtool accepts the exposition; start-up errors are
//! one clear line.

mod common;

use std::io::Write;
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::daemon::{Daemon, Up};
use common::*;
use rttfair_lab::net::link::Bottleneck;
use rttfair_lab::net::topology::{Dumbbell, FlowPath, RECEIVER};

fn wait_http(port: u16, path: &str) -> bool {
    wait_until(Duration::from_secs(15), || {
        http_get(port, path).is_some_and(|(s, _)| s == 200)
    })
}

fn urlencode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus instant query -> (labels, value) pairs.
fn query(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let Some((200, body)) = http_get(port, &format!("/api/v1/query?query={}", urlencode(q))) else {
        return vec![];
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| Some((r["metric"].clone(), r["value"][1].as_str()?.parse().ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Every query of the shipped Grafana dashboard, with its `$cca` variable
/// set to match all CCAs.
fn dashboard_queries() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/grafana/rttfair-dashboard.json"
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            t["expr"]
                .as_str()
                .unwrap()
                .replace("$cca", ".*")
                .replace("$instance", ".*")
        })
        .collect()
}

/// `promtool check metrics` accepts `metrics` (an exposition body).
fn assert_promtool_accepts(metrics: &str) {
    let mut pt = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    pt.stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = pt.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Prometheus scraping the daemon on `dport` every second, serving its
/// API on `pport`, its config and storage in `tmp`; killed on drop
/// (common::Proc), on every way out of the test.
fn start_prometheus(tmp: &std::path::Path, dport: u16, pport: u16) -> Proc {
    std::fs::create_dir_all(tmp.join("data")).unwrap();
    std::fs::write(
        tmp.join("prometheus.yml"),
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rttfair\n    static_configs:\n      - targets: ['127.0.0.1:{dport}']\n"),
    )
    .unwrap();
    let prom = Proc(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                tmp.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus (apt package prometheus)"),
    );
    assert!(wait_http(pport, "/-/ready"), "prometheus did not come up");
    prom
}

/// The RTTs (ms) of [`FairttPair`]'s two flows, sender 0 first.
const FAIRTT_PAIR_RTTS_MS: [f64; 2] = [10.0, 40.0];

/// Two fairtt flows, 10 ms and 40 ms, through a 20 Mbit/s bottleneck,
/// sending for 14 s to receivers on ports `base_port` and `base_port + 1`.
struct FairttPair {
    net: Dumbbell,
    senders: Vec<std::thread::JoinHandle<anyhow::Result<u64>>>,
    sinks: Vec<std::thread::JoinHandle<anyhow::Result<u64>>>,
}

impl FairttPair {
    fn start(base_port: u16) -> FairttPair {
        let net = Dumbbell::build(
            &FAIRTT_PAIR_RTTS_MS.map(|r| FlowPath {
                rtt: Duration::from_secs_f64(r / 1e3),
                loss_pct: 0.0,
            }),
            Bottleneck {
                rate_bit: 20_000_000,
                limit_bytes: 100_000,
            },
        )
        .unwrap();
        let mut sinks = Vec::new();
        let mut senders = Vec::new();
        for i in 0..2 {
            let port = base_port + i;
            let l = net
                .rcv
                .run(move || TcpListener::bind(SocketAddrV4::new(RECEIVER, port)).unwrap())
                .unwrap();
            sinks.push(net.rcv.spawn(move || sink_once(l)).unwrap());
            let src = net.sender(i as usize);
            senders.push(
                net.snd
                    .spawn(move || {
                        let mut s = connect_from(src, SocketAddr::from((RECEIVER, port)), "fairtt");
                        blast(&mut s, Duration::from_secs(14))
                    })
                    .unwrap(),
            );
        }
        FairttPair {
            net,
            senders,
            sinks,
        }
    }

    /// Waits for both flows to end, and for both ends to finish closing
    /// (FIN exchange) before the links go away: a sender cut off mid-close
    /// sits in FIN_WAIT2 holding its CCA.
    fn finish(self, fs: &rttfair_loader::BpfFs) {
        for s in self.senders {
            s.join().unwrap().unwrap();
        }
        for s in self.sinks {
            s.join().unwrap().unwrap();
        }
        assert!(wait_until(Duration::from_secs(10), || {
            rttfair_loader::flows::live_sockets(fs, rttfair_loader::Cca::Fairtt).unwrap() == 0
        }));
        drop(self.net);
    }
}

#[test]
fn prometheus_scrapes_per_flow_min_rtt_and_fairness() {
    let t = KernelTest::new();
    let tmp_dir = rttfair_lab::testkit::temp_folder("prom");
    let tmp = tmp_dir.path();
    let (dport, pport) = (free_port(), free_port());
    std::fs::write(
        tmp.join("daemon.toml"),
        "load = [\"fairtt\"]\nmax_flows = 100\nper_flow = \"all\"\n",
    )
    .unwrap();
    let mut daemon = Daemon::start(
        &t.fs,
        &["--config", tmp.join("daemon.toml").to_str().unwrap()],
        dport,
        Up::Healthy,
    );
    assert!(
        registered("fairtt"),
        "daemon did not load fairtt from its config"
    );

    let _prom = start_prometheus(tmp, dport, pport);

    // Two fairtt flows, 10 ms and 40 ms, through a 20 Mbit/s bottleneck.
    let rtts = FAIRTT_PAIR_RTTS_MS;
    let flows = FairttPair::start(6100);

    // While they run, Prometheus must have each flow's min_rtt and a Jain's index.
    let deadline = Instant::now() + Duration::from_secs(12);
    let mut got = Vec::new();
    let mut jain = Vec::new();
    let dashboard = dashboard_queries();
    let mut dashboard_empty = dashboard.clone();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(2));
        got = query(
            pport,
            // The tuple lives in rttfair_flow_info; per-flow series join it on `flow`.
            "rttfair_flow_min_rtt_seconds * on(instance, flow) group_left(local_addr) rttfair_flow_info{local_addr=~\"10.10.1.*\"}",
        );
        jain = query(pport, "rttfair_jain_index_ratio{cca=\"fairtt\"}");
        dashboard_empty.retain(|q| query(pport, q).is_empty());
        if got.len() == 2 && !jain.is_empty() && dashboard_empty.is_empty() {
            break;
        }
    }
    let metrics = http_get(dport, "/metrics").unwrap().1;
    flows.finish(&t.fs);

    assert_eq!(
        got.len(),
        2,
        "per-flow min_rtt series from Prometheus: {got:?}"
    );
    // The shipped dashboard works against this daemon: every panel query
    // (fairtt flows only here, so the Ad-BBR half of the `or` is unused).
    assert!(dashboard.len() >= 5);
    assert!(
        dashboard_empty.is_empty(),
        "dashboard queries with no data: {dashboard_empty:?}"
    );
    for (labels, v) in &got {
        let addr = labels["local_addr"].as_str().unwrap();
        let i = if addr.ends_with(".1") { 0 } else { 1 };
        let want = rtts[i] / 1e3;
        println!(
            "{addr}: min_rtt {:.2} ms (configured {:.0} ms)",
            v * 1e3,
            rtts[i]
        );
        assert!(
            (v - want).abs() <= 0.2 * want,
            "{addr} min_rtt {v} vs {want}"
        );
    }
    assert!(!jain.is_empty(), "no Jain's index series");
    assert!(jain[0].1 > 0.0 && jain[0].1 <= 1.0, "jain {}", jain[0].1);

    // promtool accepts the exposition.
    assert_promtool_accepts(&metrics);

    // SIGTERM: the daemon stops and leaves the CCA registered.
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    let status = daemon.wait();
    assert!(status.success(), "daemon exit {status}");
    assert!(
        registered("fairtt"),
        "a daemon restart must not disturb traffic"
    );
    assert_success(&t.run(&["unload", "fairtt"]));
}

/// Marks a dashboard panel that needs per-flow series (tests/deploy.rs
/// checks every such panel carries it).
const PER_FLOW_MARKER: &str = "(needs per_flow)";

/// The shipped dashboard's queries of panels that work with the shipped
/// default config (per_flow = "off"): (panel title, query).
fn dashboard_aggregate_queries() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/grafana/rttfair-dashboard.json"
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        let title = p["title"].as_str().unwrap();
        if title.ends_with(PER_FLOW_MARKER) {
            continue;
        }
        for t in p["targets"].as_array().unwrap() {
            let q = t["expr"].as_str().unwrap();
            out.push((
                title.to_string(),
                q.replace("$cca", ".*").replace("$instance", ".*"),
            ));
        }
    }
    out
}

/// Every alert of deploy/prometheus/rttfair-alerts.yml: (name, expression
/// with each comparison made `bool`, so it returns a series wherever its
/// inputs exist, firing or not).
fn alert_queries() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/prometheus/rttfair-alerts.yml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut name = String::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if let Some(n) = t.strip_prefix("- alert: ") {
            name = n.trim().to_string();
        }
        let Some(expr) = t.strip_prefix("expr: ") else {
            continue;
        };
        let expr = if expr.trim() == "|" {
            let indent = l.len() - t.len();
            lines[i + 1..]
                .iter()
                .take_while(|x| x.len() - x.trim_start().len() > indent)
                .map(|x| x.trim())
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            expr.trim().to_string()
        };
        let mut b = expr;
        for op in [" >= ", " <= ", " == ", " != ", " < ", " > "] {
            b = b.replace(op, &format!("{}bool ", op));
        }
        out.push((name.clone(), b));
    }
    out
}

/// The daemon as shipped (deploy/systemd/daemon.toml: fairtt, adbbr and
/// bbr1 loaded, per_flow off) under a real Prometheus scraping every
/// second, while two lab flows run: every aggregate panel of the shipped
/// dashboard and every shipped alert's expression returns data through
/// Prometheus' query API (per-flow panels are marked and skipped: the
/// shipped config has no per-flow series). The scraped body passes
/// promtool, and the gauge histograms arrive typed as such.
#[test]
fn shipped_config_feeds_every_aggregate_panel_and_alert() {
    let t = KernelTest::new();
    let tmp_dir = rttfair_lab::testkit::temp_folder("prom-shipped");
    let tmp = tmp_dir.path();
    let (dport, pport) = (free_port(), free_port());
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/systemd/daemon.toml");
    let config = std::fs::read_to_string(shipped).unwrap();
    assert!(
        config.contains("per_flow = \"off\""),
        "the shipped default changed"
    );
    let daemon = Daemon::start(&t.fs, &["--config", shipped], dport, Up::Healthy);
    for cca in ["fairtt", "adbbr", "bbr1"] {
        assert!(registered(cca), "the shipped config did not load {cca}");
    }
    let _prom = start_prometheus(tmp, dport, pport);

    // Two fairtt flows, 10 ms and 40 ms, through a 20 Mbit/s bottleneck.
    let flows = FairttPair::start(6200);
    let panels = dashboard_aggregate_queries();
    let alerts = alert_queries();
    assert!(panels.len() >= 10, "{panels:?}");
    assert_eq!(alerts.len(), 5, "{alerts:?}");
    let mut empty: Vec<(String, String)> = panels.iter().chain(&alerts).cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(12);
    while Instant::now() < deadline && !empty.is_empty() {
        std::thread::sleep(Duration::from_secs(2));
        empty.retain(|(_, q)| query(pport, q).is_empty());
    }
    let metrics = http_get(dport, "/metrics").unwrap().1;
    let metadata = http_get(pport, "/api/v1/metadata?metric=rttfair_cca_min_rtt_seconds")
        .map(|(_, b)| b)
        .unwrap_or_default();
    flows.finish(&t.fs);
    drop(daemon);

    assert!(empty.is_empty(), "no data for: {empty:#?}");
    // Scraped as OpenMetrics, the per-CCA distributions are gauge
    // histograms, not histograms whose counters go down.
    assert!(metadata.contains("gaugehistogram"), "{metadata}");
    // The classic body (no OpenMetrics Accept) passes promtool's linter.
    assert_promtool_accepts(&metrics);
    for cca in ["fairtt", "adbbr", "bbr1"] {
        assert_success(&t.run(&["unload", cca]));
    }
}

#[test]
fn daemon_start_errors_are_one_line() {
    let t = KernelTest::new();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = t
        .ctl()
        .args(["daemon", "--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cannot listen");
    let out = t
        .ctl()
        .args(["daemon", "--config", "/nonexistent/rttfair.toml"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cannot read config");
    let bad = temp_file("bad", ".toml", "max_flows = \"many\"\n");
    let out = t
        .ctl()
        .args(["daemon", "--config", bad.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_one_line_error(&out, "max_flows");
    assert!(!registered("fairtt"));
}

/// `flow_map_entries` sizes the flow map the daemon's load creates (what
/// bounds every refresh's work), and the capacity metric says so; the
/// daemon gives back what it loaded.
#[test]
fn flow_map_entries_sizes_the_map_the_daemon_creates() {
    let t = KernelTest::new();
    let cfg = temp_file(
        "mapsize",
        ".toml",
        "load = [\"bbr1\"]\nunload_on_exit = true\nflow_map_entries = 2048\n",
    );
    let port = free_port();
    let mut daemon = Daemon::start(
        &t.fs,
        &["--config", cfg.path().to_str().unwrap()],
        port,
        Up::Healthy,
    );
    let capacity = rttfair_loader::flows::FlowReader::open(&t.fs)
        .unwrap()
        .capacity();
    assert_eq!(capacity, 2048);
    let (status, body) = http_get(port, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    assert!(
        body.lines()
            .any(|l| l == "rttfair_flow_map_capacity 2048.0"),
        "{body}"
    );
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait().success(), "{}", daemon.stderr());
    assert!(!registered("bbr1"), "the daemon did not give bbr1 back");
}

/// Connections on kernel CCAs (cubic, native bbr) in the daemon's network
/// namespace are exported beside rttfair's own flows, each with what its CCA
/// knows: native bbr's own model (BtlBw, mode), cubic the generic TCP view.
#[test]
fn native_flows_are_exported_beside_project_flows() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    /// Stops the senders when dropped: after the last read of the live
    /// connections, or when an assertion before it fails.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let t = KernelTest::new();
    assert_success(&t.run(&["load", "bbr1"]));
    let port = free_port();
    let cfg = temp_file(
        "native",
        ".toml",
        "native_flows = true\nper_flow = \"all\"\n",
    );
    let _daemon = Daemon::start(
        &t.fs,
        &["--config", cfg.path().to_str().unwrap()],
        port,
        Up::Healthy,
    );
    let ccas = ["cubic", "bbr", "bbr1"];
    let (mut sinks, mut senders, mut ports) = (Vec::new(), Vec::new(), Vec::new());
    // The connections must be open through every read below, however long
    // the scrapes and the CLI's iterator take: they send until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_senders = StopOnDrop(stop.clone());
    for cca in ccas {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        sinks.push(std::thread::spawn(move || sink_once(l)));
        let mut s = connect_with(addr, cca);
        ports.push(s.local_addr().unwrap().port());
        let stop = stop.clone();
        senders.push(std::thread::spawn(move || {
            let mut sent = 0;
            while !stop.load(Ordering::Relaxed) {
                sent += blast(&mut s, Duration::from_millis(100));
            }
            sent
        }));
    }
    // Two scrapes a second apart while the flows run: the second has a
    // throughput sample for every flow.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(http_get(port, "/metrics").is_some());
    std::thread::sleep(Duration::from_secs(1));
    let m = http_get(port, "/metrics").unwrap().1;
    // The CLI shows the same connections.
    let cli = assert_success(&t.run(&["flows", "--native", "--json"]));
    drop(stop_senders);
    let for_port = |p: u16| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(&cli).unwrap();
        v["native"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["local"].as_str().unwrap().ends_with(&format!(":{p}")))
            .cloned()
            .unwrap_or_else(|| panic!("flows --native has no row for port {p}: {cli}"))
    };
    assert_eq!(for_port(ports[0])["cca"], "cubic");
    assert!(
        for_port(ports[0]).get("btlbw_bytes_per_second").is_none(),
        "cubic has no BtlBw"
    );
    assert_eq!(for_port(ports[1])["cca"], "bbr");
    assert!(
        for_port(ports[1])["btlbw_bytes_per_second"]
            .as_u64()
            .unwrap()
            > 0
    );
    for s in senders {
        assert!(s.join().unwrap() > 0);
    }
    for s in sinks {
        assert!(s.join().unwrap() > 0);
    }
    assert!(wait_until(Duration::from_secs(10), || {
        rttfair_loader::flows::live_sockets(&t.fs, rttfair_loader::Cca::Bbr1).unwrap() == 0
    }));
    assert_success(&t.run(&["unload", "bbr1"]));

    // (cca, flow) of the sender with local port `p`, from rttfair_flow_info.
    let flow_of = |p: u16| -> (String, String) {
        let line = m
            .lines()
            .find(|l| {
                l.starts_with("rttfair_flow_info{") && l.contains(&format!("local_port=\"{p}\""))
            })
            .unwrap_or_else(|| panic!("no rttfair_flow_info for local port {p}:\n{m}"));
        let label = |k: &str| {
            line.split(&format!("{k}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string()
        };
        (label("cca"), label("flow"))
    };
    let series = |name: &str, (cca, flow): &(String, String)| {
        sample(&m, &format!("{name}{{cca=\"{cca}\",flow=\"{flow}\"}}"))
    };
    let [cubic, bbr, bbr1] = [0, 1, 2].map(|i| flow_of(ports[i]));
    assert_eq!(
        (cubic.0.as_str(), bbr.0.as_str(), bbr1.0.as_str()),
        ("cubic", "bbr", "bbr1")
    );
    assert!(
        cubic.1.starts_with("sk") && bbr.1.starts_with("sk"),
        "{cubic:?} {bbr:?}"
    );
    assert!(
        bbr1.1.parse::<u64>().is_ok(),
        "project flows keep their numeric id: {bbr1:?}"
    );

    for f in [&cubic, &bbr, &bbr1] {
        let tput = series("rttfair_flow_throughput_bytes_per_second", f);
        assert!(tput.is_some_and(|v| v > 0.0), "{f:?} throughput {tput:?}");
        let cwnd = series("rttfair_flow_cwnd_segments", f);
        assert!(cwnd.is_some_and(|v| v >= 1.0), "{f:?} cwnd {cwnd:?}");
        // BBR's RTprop (native bbr's min_rtt_us, bbr1's on the shared core)
        // takes any RTT sample, 0 us included (a loopback round trip inside
        // one microsecond tick); the kernel's windowed min RTT that cubic's
        // row shows counts such a sample as 1 us.
        let floor = if f.0 == "cubic" { 1e-6 } else { 0.0 };
        let min_rtt = series("rttfair_flow_min_rtt_seconds", f);
        assert!(
            min_rtt.is_some_and(|v| v >= floor),
            "{f:?} min_rtt {min_rtt:?}"
        );
    }
    // Native bbr's model is read from its own state; cubic has none.
    let btlbw = series("rttfair_flow_btlbw_bytes_per_second", &bbr);
    assert!(btlbw.is_some_and(|v| v > 0.0), "native bbr BtlBw {btlbw:?}");
    assert!(m.lines().any(|l| l.starts_with(&format!(
        "rttfair_flow_mode{{cca=\"bbr\",flow=\"{}\",mode=",
        bbr.1
    ))));
    assert_eq!(
        series("rttfair_flow_btlbw_bytes_per_second", &cubic),
        None,
        "cubic has no BtlBw"
    );
    assert_eq!(series("rttfair_flow_last_rtt_seconds", &cubic), None);
    assert_eq!(sample(&m, "rttfair_native_flows_readable"), Some(1.0));
    println!(
        "cubic {cubic:?}, bbr {bbr:?} (BtlBw {:.2} Gbit/s), bbr1 {bbr1:?}",
        btlbw.unwrap() * 8e-9
    );
}

/// One OpenMetrics scrape with a timeout long enough for a 12 MB body on a
/// loaded machine: (status, body).
fn scrape_long(port: u16) -> std::io::Result<(u16, String)> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n\r\n"
    )?;
    let mut buf = String::new();
    s.read_to_string(&mut buf)?;
    let (head, body) = buf.split_once("\r\n\r\n").unwrap_or((&buf, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Limits under load (issue 18 item 8): 50 scrapers at once at 10k flows
/// with every per-flow series on all get the whole exposition and the
/// daemon's memory stays bounded (one shared body, not one per scraper);
/// killed mid-scrape and restarted, the daemon exports what the map holds
/// now, nothing of before.
#[test]
fn fifty_scrapers_at_10k_flows_then_killed_mid_scrape_and_restarted() {
    use libbpf_rs::MapCore;
    use rttfair_loader::lifecycle::{create_shared_maps, remove_unused, LoadOptions};
    use rttfair_loader::{Cca, Flow};

    let t = KernelTest::new();
    struct Maps<'a>(&'a rttfair_loader::BpfFs);
    impl Drop for Maps<'_> {
        fn drop(&mut self) {
            remove_unused(self.0);
        }
    }
    create_shared_maps(
        &t.fs,
        &LoadOptions {
            flows_max: Some(16_384),
            object: None,
        },
    )
    .unwrap();
    let _maps = Maps(&t.fs);
    let flows: Vec<Flow> = (1..=10_000u64)
        .map(|id| Flow {
            id,
            cca: Some(Cca::ALL[(id % 3) as usize]),
            local: ([10, 10, (id >> 8) as u8, id as u8], 10_000).into(),
            peer: ([10, 20, 0, (id % 200) as u8], 5201).into(),
            min_rtt: Duration::from_millis(10),
            delivered_bytes: id * 1000,
            started_at: Duration::from_secs(1),
            exported_at: Duration::from_secs(2),
            ..Flow::default()
        })
        .collect();
    rttfair_loader::flows::write_synthetic(&t.fs, &flows).unwrap();

    let cfg = temp_file(
        "50",
        ".toml",
        "per_flow = \"all\"\nmax_flows = 20000\nrefresh_ms = 1000\nnative_flows = false\n",
    );
    let port = free_port();
    let args = ["--config", cfg.path().to_str().unwrap()];
    let spawn = || Daemon::start(&t.fs, &args, port, Up::Healthy);
    let mut daemon = spawn();
    let pid = daemon.pid();

    let done = std::sync::atomic::AtomicBool::new(false);
    let (results, peak_kib) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rttfair_lab::net::procfs::rss_kib(pid));
                std::thread::sleep(Duration::from_millis(5));
            }
            peak
        });
        let scrapers: Vec<_> = (0..50).map(|_| s.spawn(|| scrape_long(port))).collect();
        let results: Vec<_> = scrapers.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (results, sampler.join().unwrap())
    });
    for r in &results {
        let (status, body) = r.as_ref().expect("scrape failed");
        assert_eq!(*status, 200);
        assert_eq!(sample(body, "rttfair_flows_read"), Some(10_000.0));
        assert_eq!(sample(body, "rttfair_flows_exported"), Some(10_000.0));
        assert!(body.ends_with("# EOF\n"), "truncated body");
    }
    println!("50 concurrent scrapers at 10k flows: peak daemon RSS {peak_kib} KiB");
    // One body is ~12 MB; a copy per scraper would be ~600 MB.
    assert!(peak_kib < 256 * 1024, "daemon RSS peaked at {peak_kib} KiB");

    // Kill it while scrapes are in flight.
    let inflight: Vec<_> = (0..10)
        .map(|_| std::thread::spawn(move || scrape_long(port)))
        .collect();
    std::thread::sleep(Duration::from_millis(30));
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = daemon.wait();
    for h in inflight {
        let _ = h.join().unwrap(); // cut off or complete: either is fine
    }
    // Half the flows close while it is down.
    let map = t.fs.open_map(rttfair_loader::abi::maps::FLOWS).unwrap();
    for id in 5_001..=10_000u64 {
        map.delete(&id.to_ne_bytes()).unwrap();
    }
    daemon = spawn();
    let (status, body) = scrape_long(port).unwrap();
    assert_eq!(status, 200);
    assert_eq!(sample(&body, "rttfair_flows_read"), Some(5_000.0));
    assert!(body.contains("flow=\"5000\""), "a live flow is missing");
    assert!(
        !body.contains("flow=\"5001\"") && !body.contains("flow=\"10000\""),
        "a closed flow's series survived the restart"
    );
    drop(daemon);
}

/// The lab tools' daemon child (`rttfair_lab::net::daemon_child`, used by
/// `rttfairctl demo` and the soak bench): the real daemon answers /healthz
/// when `start` returns, is gone from its port and the process table after
/// drop, and a config it refuses is an error with the daemon's own words.
#[test]
fn lab_daemon_child_is_up_on_return_and_gone_after_drop() {
    use rttfair_lab::net::daemon_child::{free_loopback_port, DaemonChild};
    let t = KernelTest::new();
    let ctl = std::path::Path::new(env!("CARGO_BIN_EXE_rttfairctl"));
    let port = free_loopback_port(&[]).unwrap();
    let d = DaemonChild::start(ctl, &t.fs, port, "per_flow = \"all\"\n").expect("daemon up");
    assert_eq!(d.port(), port);
    let pid = nix::unistd::Pid::from_raw(d.pid() as i32);
    assert!(
        http_get(port, "/healthz").is_some(),
        "no answer on /healthz after start returned"
    );
    drop(d);
    assert_eq!(
        nix::sys::signal::kill(pid, None),
        Err(nix::errno::Errno::ESRCH),
        "the daemon outlived its drop"
    );
    assert!(http_get(port, "/healthz").is_none());

    let e = DaemonChild::start(ctl, &t.fs, port, "per_flow = \"sometimes\"\n")
        .err()
        .expect("a refused config is an error");
    let msg = format!("{e:#}");
    println!("{msg}");
    assert!(msg.contains("exited") && msg.contains("per_flow"), "{msg}");
}
