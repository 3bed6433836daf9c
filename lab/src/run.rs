//! Running a scenario: build the dumbbell, check it, push the flows through
//! it, sample everything, compute the metrics, write the results folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rttfair_loader::fairness as metrics;
use rttfair_loader::flows::FlowReader;
use rttfair_loader::BpfFs;
use rttfair_loader::Flow;
use serde::Serialize;

use crate::ccas::CcaSession;
use crate::iperf::{self, ClientSpec};
use crate::link::Bottleneck;
use crate::qstats::{QueueSample, QueueSampler};
use crate::scenario::{FlowSpec, Scenario, MSS, WIRE_PACKET};
use crate::selfcheck::{self, RttCheck};
use crate::topology::{Dumbbell, FlowPath, RECEIVER};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Parent folder of the results folder.
    pub out_dir: PathBuf,
    /// Installation of the project's CCAs.
    pub bpffs: BpfFs,
    /// Show a progress bar.
    pub progress: bool,
    /// Print per-run lines.
    pub verbose: bool,
}

/// One BPF export sample of a flow: a row of `bpf.csv`, whose columns are
/// these fields, in this order. A projection of the loader's typed
/// [`Flow`] (units in the names); the fields of a CCA other than the flow's
/// are zero.
#[derive(Debug, Clone, Serialize)]
pub struct BpfSample {
    pub t: f64,
    pub flow: usize,
    pub mode: &'static str,
    pub btlbw_mbit: f64,
    pub min_rtt_ms: f64,
    pub last_rtt_ms: f64,
    pub cwnd: u32,
    pub pacing_mbit: f64,
    pub probe_rtt_entries: u32,
    pub fairtt_alpha_ms: f64,
    pub fairtt_coef: f64,
    pub fairtt_wfcount: u16,
    #[serde(serialize_with = "zero_one")]
    pub fairtt_active: bool,
    pub adbbr_nrtt_ms: f64,
    pub adbbr_regime: &'static str,
    pub adbbr_factor: f64,
    pub adbbr_rtt_std_ms: f64,
    pub qfair_alpha_pkts: f64,
    pub qfair_backlog_pkts: f64,
    pub qfair_qdelay_ms: f64,
    pub qfair_standing_rtt_ms: f64,
    /// x^, the smoothed per-round delivery rate.
    pub qfair_xhat_mbit: f64,
    pub qfair_gain: f64,
    pub qfair_target_cwnd: u32,
    #[serde(serialize_with = "zero_one")]
    pub qfair_competitive: bool,
    pub qfair_drains_ok: u32,
    pub qfair_drains_failed: u32,
    #[serde(serialize_with = "zero_one")]
    pub qfair_pacing_floor: bool,
}

impl BpfSample {
    /// The sample of `f` taken `t` seconds into the run, as lab flow `flow`.
    fn project(t: f64, flow: usize, f: &Flow) -> BpfSample {
        let ft = f.fairtt().copied().unwrap_or_default();
        let ab = f.adbbr().copied().unwrap_or_default();
        let q = f.qfair().copied().unwrap_or_default();
        let ms = |d: Duration| round(d.as_secs_f64() * 1e3, 3);
        let mbit = |bps: u64| round(bps as f64 * 8.0 / 1e6, 3);
        BpfSample {
            t: round(t, 2),
            flow,
            mode: f.mode.name(),
            btlbw_mbit: mbit(f.btlbw_bps),
            min_rtt_ms: ms(f.min_rtt),
            last_rtt_ms: ms(f.last_rtt),
            cwnd: f.cwnd,
            pacing_mbit: mbit(f.pacing_rate_bps),
            probe_rtt_entries: f.probe_rtt_entries,
            fairtt_alpha_ms: ms(ft.alpha),
            fairtt_coef: round(ft.coefficient, 4),
            fairtt_wfcount: ft.wfcount,
            fairtt_active: ft.active,
            adbbr_nrtt_ms: ms(ab.nrtt),
            adbbr_regime: ab.regime.name(),
            adbbr_factor: round(ab.factor, 4),
            adbbr_rtt_std_ms: ms(ab.rtt_std),
            qfair_alpha_pkts: round(q.alpha_pkts, 3),
            qfair_backlog_pkts: round(q.backlog_pkts, 3),
            qfair_qdelay_ms: ms(q.qdelay),
            qfair_standing_rtt_ms: ms(q.standing_rtt),
            qfair_xhat_mbit: mbit(q.rate_bps),
            qfair_gain: round(q.gain, 4),
            qfair_target_cwnd: q.target_cwnd,
            qfair_competitive: q.competitive,
            qfair_drains_ok: q.drains_ok,
            qfair_drains_failed: q.drains_failed,
            qfair_pacing_floor: q.pacing_floor,
        }
    }
}

/// `v` to `decimals` places, so the CSV holds what the sample resolves.
fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

/// Flags as 1/0 in the CSV.
fn zero_one<S: serde::Serializer>(v: &bool, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u8(*v as u8)
}

/// One flow's measurements in one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    #[serde(flatten)]
    pub spec: FlowSpec,
    /// Receiver-side goodput per interval: (end time since run start, bit/s).
    pub goodput: Vec<(f64, f64)>,
    /// Sender smoothed RTT at each interval end (TCP_INFO via iperf3), ms.
    pub rtt_ms: Vec<(f64, f64)>,
    pub retransmits: u64,
    pub bytes_received: u64,
    /// Mean goodput over the measurement window, bit/s.
    pub mean_goodput: f64,
    pub congestion: String,
}

/// Metrics of one repetition (or their mean over repetitions).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub jain: f64,
    pub jain_by_group: BTreeMap<String, f64>,
    pub goodput_mbit_by_group: BTreeMap<String, f64>,
    pub rts_by_group: BTreeMap<String, f64>,
    /// STDR of the first group against the second (0 with one group).
    pub stdr: f64,
    /// Mean goodput of the first group over the second (1 with one group).
    pub group_ratio: f64,
    /// Sum of goodputs over the goodput capacity rate x MSS / wire packet.
    pub utilization: f64,
    pub retrans_ratio: f64,
    pub rtt_mean_ms: f64,
    pub rtt_p95_ms: f64,
    /// Queueing delay at the bottleneck: backlog x 8 / rate.
    pub qdelay_mean_ms: f64,
    pub qdelay_p95_ms: f64,
    pub queue_drops: u64,
    pub random_loss_drops: u64,
    /// First time after which Jain's index of the interval goodputs stays >= 0.95.
    pub convergence_s: Option<f64>,
    pub flow_goodput_mbit: Vec<f64>,
}

/// One repetition.
#[derive(Debug, Clone, Serialize)]
pub struct RepResult {
    pub flows: Vec<FlowResult>,
    #[serde(skip)]
    pub queue: Vec<QueueSample>,
    #[serde(skip)]
    pub bpf: Vec<BpfSample>,
    pub summary: Summary,
}

/// A whole run of a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub scenario: Scenario,
    pub rtt_check: Vec<RttCheck>,
    pub rate_check_goodput_mbit: f64,
    pub reps: Vec<RepResult>,
    /// Mean of the repetitions' summaries.
    pub summary: Summary,
    pub dir: PathBuf,
}

/// Run `scenario` end to end and write its results folder.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<RunResult> {
    scenario
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid scenario: {e}"))?;
    let flows = scenario.flows();
    let mut ccas: Vec<String> = flows.iter().map(|f| f.cca.clone()).collect();
    ccas.sort();
    ccas.dedup();
    let _session = CcaSession::ensure(&opts.bpffs, &ccas)?;

    let paths: Vec<FlowPath> = flows
        .iter()
        .map(|f| FlowPath {
            rtt: Duration::from_secs_f64(f.rtt_ms / 1e3),
            loss_pct: f.loss_pct,
        })
        .collect();
    let bottleneck = Bottleneck {
        rate_bit: scenario.rate_bit(),
        limit_bytes: scenario.buffer_bytes(),
    };
    let net = Dumbbell::build(&paths, bottleneck)?;

    // Self-check: the network must be the one configured.
    let configured: Vec<f64> = flows.iter().map(|f| f.rtt_ms).collect();
    let rtt_check = selfcheck::measure_rtts(&net, &configured, 5)?;
    if let Some(bad) = rtt_check.iter().find(|c| !c.ok) {
        bail!(
            "self-check failed: flow {} base RTT measured {:.3} ms, configured {:.3} ms (tolerance +-5% or +-0.3 ms); no results reported",
            bad.flow,
            bad.measured_ms,
            bad.configured_ms
        );
    }
    let servers: Vec<iperf::Server> = (0..flows.len())
        .map(|i| iperf::Server::start(&net.rcv, &RECEIVER.to_string(), 5201 + i as u16))
        .collect::<Result<_>>()?;
    let rate_check = check_rate(&net, scenario)?;

    let label = label_of(scenario);
    let dir = opts
        .out_dir
        .join(format!("{}-{}", sanitize(&scenario.name), label));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    std::fs::write(dir.join("scenario.toml"), toml::to_string_pretty(scenario)?)?;

    let bar = progress_bar(opts.progress, scenario, &label);
    let mut reps = Vec::new();
    for rep in 0..scenario.repetitions {
        let base = rep as u64 * scenario.duration_s.ceil() as u64;
        let r = run_rep(
            scenario,
            &flows,
            &net,
            &opts.bpffs,
            bar.as_ref().map(|b| (b, base)),
        )?;
        let rep_dir = dir.join(format!("rep{rep}"));
        write_rep(&rep_dir, &r)?;
        if rep == 0 {
            crate::plot::throughput(&rep_dir.join("throughput.png"), scenario, &r)?;
            crate::plot::queue(&rep_dir.join("queue.png"), scenario, &r)?;
        }
        if opts.verbose {
            println!("  rep {rep}: {}", one_line(&r.summary));
        }
        reps.push(r);
        std::thread::sleep(Duration::from_millis(500)); // let the queue drain
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    drop(servers);
    let summary = mean_summary(&reps.iter().map(|r| r.summary.clone()).collect::<Vec<_>>());
    let result = RunResult {
        scenario: scenario.clone(),
        rtt_check,
        rate_check_goodput_mbit: rate_check / 1e6,
        reps,
        summary,
        dir: dir.clone(),
    };
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&result)?,
    )?;
    Ok(result)
}

/// The CCA label of a run: the CCA if all flows share one, else "mixed".
pub fn label_of(s: &Scenario) -> String {
    let mut c: Vec<&str> = s.flows.iter().map(|f| f.cca.as_str()).collect();
    c.sort();
    c.dedup();
    if c.len() == 1 {
        c[0].to_string()
    } else {
        c.join("+")
    }
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn progress_bar(on: bool, s: &Scenario, label: &str) -> Option<indicatif::ProgressBar> {
    if !on {
        return None;
    }
    let total = (s.duration_s * s.repetitions as f64).ceil() as u64;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} s  {msg}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{} {label}", s.name));
    Some(bar)
}

/// The bottleneck's departure rate while backlogged vs the configured rate
/// (see [`selfcheck::measure_rate`]), returned as goodput.
fn check_rate(net: &Dumbbell, s: &Scenario) -> Result<f64> {
    let b = Bottleneck {
        rate_bit: s.rate_bit(),
        limit_bytes: s.buffer_bytes(),
    };
    let rtt0 = Duration::from_secs_f64(s.flows()[0].rtt_ms / 1e3);
    let c = selfcheck::measure_rate(net, b, rtt0, 5201, 4.0)?;
    // With loss configured for flow 0 the load would measure the loss, not the rate.
    if s.flows().first().is_some_and(|f| f.loss_pct == 0.0) && !c.ok {
        bail!(
            "self-check failed: bottleneck sends {:.2} Mbit/s while backlogged for {:.2} s, configured {:.2} (tolerance 3%, at least {} s backlogged); no results reported",
            c.measured_bit / 1e6,
            c.busy_s,
            c.configured_bit / 1e6,
            selfcheck::MIN_BUSY_S
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    Ok(c.goodput_bit())
}

fn run_rep(
    s: &Scenario,
    flows: &[FlowSpec],
    net: &Dumbbell,
    fs: &BpfFs,
    bar: Option<(&indicatif::ProgressBar, u64)>,
) -> Result<RepResult> {
    let reader = net.queue_reader()?;
    let drops_before = {
        let mut r = net.queue_reader()?;
        r.read()?.drops
    };
    let loss_before = net.random_loss_drops();
    let t0 = Instant::now();
    // Jitter, ACK batching and RTT changes run on this repetition's clock.
    let start_ns = crate::delay::clock_ns();
    for f in flows {
        let d = crate::pathsched::PathDelay::for_flow(f, start_ns);
        if d.varies() {
            net.delay.set_path(net.sender(f.index), d)?;
        }
    }
    let sampler = QueueSampler::start(reader, Duration::from_secs_f64(s.queue_sample_ms / 1e3));
    let stop = Arc::new(AtomicBool::new(false));
    let bpf_thread = spawn_bpf_sampler(fs, flows, net, t0, stop.clone());

    let mut handles = Vec::new();
    for f in flows {
        let spec = ClientSpec {
            server: RECEIVER.to_string(),
            port: 5201 + f.index as u16,
            bind: Some(net.sender(f.index).to_string()),
            cca: f.cca.clone(),
            seconds: f.stop_s - f.start_s,
            interval: s.interval_s,
        };
        let ns = net.snd.name().to_string();
        let start = Duration::from_secs_f64(f.start_s);
        handles.push(std::thread::spawn(move || {
            let now = t0.elapsed();
            if start > now {
                std::thread::sleep(start - now);
            }
            iperf::client_with_server_output(&ns, &spec)
        }));
    }
    if let Some((b, base)) = bar {
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(250));
            b.set_position(base + (t0.elapsed().as_secs_f64().min(s.duration_s)) as u64);
        }
    }
    let mut results = Vec::new();
    for (h, f) in handles.into_iter().zip(flows) {
        let r = h
            .join()
            .map_err(|_| anyhow::anyhow!("flow {} thread panicked", f.index))??;
        results.push((f.clone(), r));
    }
    stop.store(true, Ordering::Relaxed);
    let queue = sampler.finish();
    let bpf = bpf_thread.join().unwrap_or_default();
    if let Some((b, base)) = bar {
        b.set_position(base + s.duration_s.ceil() as u64);
    }
    let drops = queue
        .last()
        .map(|q| q.stats.drops.saturating_sub(drops_before))
        .unwrap_or(0) as u64;
    let loss_drops = net.random_loss_drops() - loss_before;

    let flows_out: Vec<FlowResult> = results
        .into_iter()
        .map(|(spec, r)| {
            let goodput: Vec<(f64, f64)> = r
                .receiver_intervals
                .iter()
                .map(|(t, b)| (t + spec.start_s, *b))
                .collect();
            let rtt_ms: Vec<(f64, f64)> = r
                .client
                .intervals
                .iter()
                .map(|i| (i.0 + spec.start_s, i.2 as f64 / 1e3))
                .collect();
            let lo = s.warmup_s.max(spec.start_s);
            let window: Vec<f64> = goodput
                .iter()
                .filter(|(t, _)| *t > lo + 1e-9)
                .map(|(_, b)| *b)
                .collect();
            FlowResult {
                mean_goodput: metrics::mean(&window),
                goodput,
                rtt_ms,
                retransmits: r.client.retransmits,
                bytes_received: r.client.received_bytes,
                congestion: r.client.congestion.clone(),
                spec,
            }
        })
        .collect();
    for f in &flows_out {
        if f.congestion != f.spec.cca {
            bail!(
                "flow {} ran {} instead of {}",
                f.spec.index,
                f.congestion,
                f.spec.cca
            );
        }
    }
    let summary = summarize(s, &flows_out, &queue, drops, loss_drops);
    Ok(RepResult {
        flows: flows_out,
        queue,
        bpf,
        summary,
    })
}

fn spawn_bpf_sampler(
    fs: &BpfFs,
    flows: &[FlowSpec],
    net: &Dumbbell,
    t0: Instant,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<BpfSample>> {
    let project = flows
        .iter()
        .any(|f| f.cca.parse::<rttfair_loader::Cca>().is_ok());
    let fs = fs.clone();
    let addrs: Vec<std::net::IpAddr> = (0..flows.len()).map(|i| net.sender(i).into()).collect();
    // Every lab uses the same addresses inside its own namespaces, and the
    // export map is host-wide: only this run's sender namespace counts.
    let netns = net.snd.inode().ok();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if !project {
            return out;
        }
        let Ok(reader) = FlowReader::open(&fs) else {
            return out;
        };
        while !stop.load(Ordering::Relaxed) {
            let t = t0.elapsed().as_secs_f64();
            for f in reader.flows().unwrap_or_default() {
                if netns.is_some_and(|ino| ino != f.netns) {
                    continue;
                }
                if let Some(idx) = addrs.iter().position(|a| *a == f.local.ip()) {
                    out.push(BpfSample::project(t, idx, &f));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        out
    })
}

/// All metrics of one repetition, from its raw series.
pub fn summarize(
    s: &Scenario,
    flows: &[FlowResult],
    queue: &[QueueSample],
    queue_drops: u64,
    random_loss_drops: u64,
) -> Summary {
    let goodputs: Vec<f64> = flows.iter().map(|f| f.mean_goodput).collect();
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for f in flows {
        if !order.contains(&f.spec.group) {
            order.push(f.spec.group.clone());
        }
        groups
            .entry(f.spec.group.clone())
            .or_default()
            .push(f.mean_goodput);
    }
    let mean_all = metrics::mean(&goodputs);
    let group_mean = |g: &str| metrics::mean(&groups[g]);
    let (stdr, group_ratio) = if order.len() >= 2 {
        let (a, b) = (group_mean(&order[0]), group_mean(&order[1]));
        (
            metrics::stdr(a, b),
            if b > 0.0 { a / b } else { f64::INFINITY },
        )
    } else {
        (0.0, 1.0)
    };
    let capacity = s.rate_bit() as f64 * MSS as f64 / WIRE_PACKET as f64;
    let delivered_pkts: f64 = flows
        .iter()
        .map(|f| f.bytes_received as f64 / MSS as f64)
        .sum();
    let retrans: f64 = flows.iter().map(|f| f.retransmits as f64).sum();
    let lo = s.warmup_s;
    let rtts: Vec<f64> = flows
        .iter()
        .flat_map(|f| f.rtt_ms.iter().filter(|(t, _)| *t > lo).map(|(_, r)| *r))
        .collect();
    let qdelays: Vec<f64> = queue
        .iter()
        .filter(|q| q.t > lo)
        .map(|q| q.stats.backlog_bytes as f64 * 8.0 / s.rate_bit() as f64 * 1e3)
        .collect();
    // Convergence over interval goodputs of the flows active in each interval.
    let n_int = flows.iter().map(|f| f.goodput.len()).max().unwrap_or(0);
    let mut times = Vec::new();
    let mut series = Vec::new();
    if let Some(longest) = flows.iter().max_by_key(|f| f.goodput.len()) {
        for k in 0..n_int {
            let t = longest.goodput[k].0;
            let active: Vec<f64> = flows
                .iter()
                .filter_map(|f| {
                    f.goodput
                        .iter()
                        .find(|(tt, _)| (tt - t).abs() < s.interval_s / 2.0)
                        .map(|x| x.1)
                })
                .collect();
            times.push(t);
            series.push(active);
        }
    }
    Summary {
        jain: metrics::jain(&goodputs),
        jain_by_group: groups
            .iter()
            .map(|(g, v)| (g.clone(), metrics::jain(v)))
            .collect(),
        goodput_mbit_by_group: groups
            .iter()
            .map(|(g, v)| (g.clone(), metrics::mean(v) / 1e6))
            .collect(),
        rts_by_group: groups
            .iter()
            .map(|(g, v)| (g.clone(), metrics::rts(v.iter().sum(), v.len(), mean_all)))
            .collect(),
        stdr,
        group_ratio,
        utilization: goodputs.iter().sum::<f64>() / capacity,
        retrans_ratio: metrics::retransmission_ratio(retrans, delivered_pkts),
        rtt_mean_ms: metrics::mean(&rtts),
        rtt_p95_ms: metrics::percentile(&rtts, 95.0),
        qdelay_mean_ms: metrics::mean(&qdelays),
        qdelay_p95_ms: metrics::percentile(&qdelays, 95.0),
        queue_drops,
        random_loss_drops,
        convergence_s: metrics::convergence_time(&times, &series, 0.95),
        flow_goodput_mbit: goodputs.iter().map(|g| g / 1e6).collect(),
    }
}

/// Mean of several summaries, field by field.
pub fn mean_summary(all: &[Summary]) -> Summary {
    if all.is_empty() {
        return Summary::default();
    }
    let m = |f: &dyn Fn(&Summary) -> f64| metrics::mean(&all.iter().map(f).collect::<Vec<_>>());
    let mean_map = |f: &dyn Fn(&Summary) -> &BTreeMap<String, f64>| {
        let mut out = BTreeMap::new();
        for k in f(&all[0]).keys() {
            out.insert(
                k.clone(),
                metrics::mean(
                    &all.iter()
                        .filter_map(|s| f(s).get(k).copied())
                        .collect::<Vec<_>>(),
                ),
            );
        }
        out
    };
    let conv: Vec<f64> = all.iter().filter_map(|s| s.convergence_s).collect();
    let n_flows = all[0].flow_goodput_mbit.len();
    Summary {
        jain: m(&|s| s.jain),
        jain_by_group: mean_map(&|s| &s.jain_by_group),
        goodput_mbit_by_group: mean_map(&|s| &s.goodput_mbit_by_group),
        rts_by_group: mean_map(&|s| &s.rts_by_group),
        stdr: m(&|s| s.stdr),
        group_ratio: m(&|s| s.group_ratio),
        utilization: m(&|s| s.utilization),
        retrans_ratio: m(&|s| s.retrans_ratio),
        rtt_mean_ms: m(&|s| s.rtt_mean_ms),
        rtt_p95_ms: m(&|s| s.rtt_p95_ms),
        qdelay_mean_ms: m(&|s| s.qdelay_mean_ms),
        qdelay_p95_ms: m(&|s| s.qdelay_p95_ms),
        queue_drops: m(&|s| s.queue_drops as f64) as u64,
        random_loss_drops: m(&|s| s.random_loss_drops as f64) as u64,
        convergence_s: (conv.len() == all.len()).then(|| metrics::mean(&conv)),
        flow_goodput_mbit: (0..n_flows)
            .map(|i| {
                metrics::mean(
                    &all.iter()
                        .filter_map(|s| s.flow_goodput_mbit.get(i).copied())
                        .collect::<Vec<_>>(),
                )
            })
            .collect(),
    }
}

/// A summary in one line.
pub fn one_line(s: &Summary) -> String {
    format!(
        "jain {:.3}  ratio {:.2}  util {:.1}%  retrans {:.2}%  rtt {:.1}/{:.1} ms  qdelay {:.1} ms",
        s.jain,
        s.group_ratio,
        s.utilization * 100.0,
        s.retrans_ratio * 100.0,
        s.rtt_mean_ms,
        s.rtt_p95_ms,
        s.qdelay_mean_ms
    )
}

fn write_rep(dir: &Path, r: &RepResult) -> Result<()> {
    use std::fmt::Write as _;
    std::fs::create_dir_all(dir)?;
    let mut csv = String::from("t,flow,group,cca,goodput_bps\n");
    for f in &r.flows {
        for (t, b) in &f.goodput {
            let _ = writeln!(
                csv,
                "{t:.3},{},{},{},{b:.0}",
                f.spec.index, f.spec.group, f.spec.cca
            );
        }
    }
    std::fs::write(dir.join("goodput.csv"), csv)?;
    let mut csv = String::from("t,flow,srtt_ms\n");
    for f in &r.flows {
        for (t, v) in &f.rtt_ms {
            let _ = writeln!(csv, "{t:.3},{},{v:.3}", f.spec.index);
        }
    }
    std::fs::write(dir.join("rtt.csv"), csv)?;
    let mut csv = String::from("t,backlog_bytes,qlen_packets,drops,sent_bytes,sent_packets\n");
    for q in &r.queue {
        let st = &q.stats;
        let _ = writeln!(
            csv,
            "{:.4},{},{},{},{},{}",
            q.t, st.backlog_bytes, st.qlen, st.drops, st.bytes, st.packets
        );
    }
    std::fs::write(dir.join("queue.csv"), csv)?;
    if !r.bpf.is_empty() {
        let mut csv = csv::Writer::from_path(dir.join("bpf.csv"))?;
        for b in &r.bpf {
            csv.serialize(b)?;
        }
        csv.flush()?;
    }
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(r)?)?;
    Ok(())
}
