//! Running a plan: build the dumbbell, check it, push the flows through
//! it, sample everything, summarize, write the results folder.
//!
//! The execution stage; what is built on runs are its children:
//! - [`sweep`]: runs every point of a grid and writes the sweep's files.
//! - [`resume`]: which points of an interrupted sweep are done.
//! - [`resummarize`]: a stored run or sweep folder's summaries computed
//!   again from its files with this build's definitions.
//! - [`merge`]: shard folders joined into the folder one machine writes,
//!   and sweeps of one grid for different CCAs (other builds, other
//!   repetition counts) joined side by side, each CCA's source kept.
//! - [`fairness_grid`]: issue 14's two-flow grid, every CCA back to back at
//!   each point, printed side by side (`cargo xtask bench fairness-grid`).

pub mod fairness_grid;
pub mod merge;
pub(crate) mod resume;
pub mod resummarize;
pub mod sweep;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rttfair_loader::flows::FlowReader;
use rttfair_loader::BpfFs;

use crate::net::aqm::{AqmCsv, FlowStats};
use crate::net::arrivals::ArrivalCounter;
use crate::net::ccas::CcaSession;
use crate::net::iperf::{self, ClientSpec};
use crate::net::link::Bottleneck;
use crate::net::qstats::QueueSampler;
use crate::net::rcvbytes;
use crate::net::selfcheck::{self, RttCheck};
use crate::net::topology::{Dumbbell, FlowPath, Options, RECEIVER, RECEIVER_IF};
use crate::results::accounting::{self, EdgeCounts, FlowSpan};
use crate::results::provenance::{Environment, RunProvenance, SelfCheck};
use crate::results::{AqmFlow, BpfSample, FlowResult};
use crate::scenario::plan::Plan;
use crate::scenario::{FlowSpec, Scenario, MSS, WIRE_PACKET};

pub use crate::results::summary::{mean_summary, one_line, summarize, worst_of};
pub use crate::results::{RepResult, RunResult, Summary};
pub use crate::scenario::plan::label_of;

/// How often a run with a queue discipline writes a row per flow to its
/// aqm.csv (the main thread's wake-ups, which drain the arrival counter at
/// least every 0.25 s).
const AQM_SAMPLE: Duration = Duration::from_millis(250);

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

/// Run `scenario` end to end and write its results folder.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<RunResult> {
    let plan = Plan::resolve(scenario).map_err(|e| anyhow::anyhow!("invalid scenario: {e}"))?;
    run_plan(&plan, opts)
}

/// Run a resolved plan end to end and write its results folder.
pub fn run_plan(plan: &Plan, opts: &RunOptions) -> Result<RunResult> {
    let session = CcaSession::ensure_tuned(&opts.bpffs, &plan.ccas, &plan.tunables)?;
    // Provenance records the maps as read back, not the scenario's text:
    // what the flows run with, which must be what the scenario set and,
    // for the rest of a CCA a lab loaded, what the lab left.
    let tunables = crate::results::provenance::tunables(&opts.bpffs, &plan.ccas)?;
    crate::scenario::tunables::check_read_back(
        &session.expected_tunables(&plan.tunables),
        &tunables,
    )?;
    let (net, rtt_check) = build_checked_network(plan)?;
    let servers: Vec<iperf::Server> = (0..plan.flows.len())
        .map(|i| iperf::Server::start(&net.rcv, &RECEIVER.to_string(), 5201 + i as u16))
        .collect::<Result<_>>()?;
    let rate_check = check_rate(&net, plan)?;

    let dir = opts.out_dir.join(plan.dir_name());
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    crate::results::files::clear_run_outputs(&dir)?;
    crate::results::files::write_scenario(&dir, plan)?;
    let provenance = RunProvenance {
        environment: Environment::current(),
        // What is registered, which need not be this build's object.
        ccas: session.objects(&plan.ccas),
        tunables,
        scenario: crate::results::provenance::scenario_text(&plan.scenario)?,
        self_check: SelfCheck {
            rtt: rtt_check.clone(),
            rate: rate_check.clone(),
        },
    };
    crate::results::provenance::write(&dir, &provenance)?;
    let counter = ArrivalCounter::attach(&net.rcv, RECEIVER_IF)?;
    let reps = run_reps(plan, &net, &counter, opts, &dir)?;
    drop(counter);
    drop(servers);
    let summary = mean_summary(&reps.iter().map(|r| r.summary.clone()).collect::<Vec<_>>());
    let result = RunResult {
        scenario: plan.scenario.clone(),
        rtt_check,
        rate_check_goodput_mbit: rate_check.goodput_bit() / 1e6,
        reps,
        summary,
        dir,
        provenance,
    };
    crate::results::files::write_run_summary(&result)?;
    Ok(result)
}

/// The dumbbell of `plan` (with its build options, e.g. the segmenting
/// bottleneck of `segment_gso`), after the self-check that each flow's base
/// RTT is the one configured. Public so a test can look at the network a
/// plan gets.
pub fn build_checked_network(plan: &Plan) -> Result<(Dumbbell, Vec<RttCheck>)> {
    let paths: Vec<FlowPath> = plan
        .flows
        .iter()
        .map(|f| FlowPath {
            rtt: Duration::from_secs_f64(f.rtt_ms / 1e3),
            loss_pct: f.loss_pct,
        })
        .collect();
    let bottleneck = Bottleneck {
        rate_bit: plan.rate_bit,
        limit_bytes: plan.buffer_bytes,
    };
    let opts = Options {
        segment_at_bottleneck: plan.segment_gso,
        aqm: plan.aqm,
        tcp_ecn: plan.tcp_ecn,
        socket_buffer_bytes: plan.socket_buffer_bytes,
        ..Options::default()
    };
    let net = Dumbbell::build_opts(&paths, bottleneck, opts)?;
    let configured: Vec<f64> = plan.flows.iter().map(|f| f.rtt_ms).collect();
    let rtt_check = selfcheck::measure_rtts(&net, &configured, 5)?;
    if let Some(bad) = rtt_check.iter().find(|c| !c.ok) {
        bail!(
            "self-check failed: flow {} base RTT measured {:.3} ms, configured {:.3} ms (tolerance +-5% or +-0.3 ms); no results reported",
            bad.flow,
            bad.measured_ms,
            bad.configured_ms
        );
    }
    Ok((net, rtt_check))
}

/// Every repetition of `plan`, each written to `dir/rep<N>` (plots for the
/// first).
fn run_reps(
    plan: &Plan,
    net: &Dumbbell,
    counter: &ArrivalCounter,
    opts: &RunOptions,
    dir: &std::path::Path,
) -> Result<Vec<RepResult>> {
    let bar = progress_bar(opts.progress, plan);
    let mut reps = Vec::new();
    for rep in 0..plan.repetitions {
        let base = rep as u64 * plan.duration_s.ceil() as u64;
        let (r, aqm_csv) = run_rep(
            plan,
            net,
            counter,
            &opts.bpffs,
            bar.as_ref().map(|b| (b, base)),
        )?;
        let rep_dir = dir.join(format!("rep{rep}"));
        crate::results::files::write_rep(&rep_dir, &r)?;
        if let Some(csv) = aqm_csv {
            crate::atomic::write_file(&rep_dir.join("aqm.csv"), csv)?;
        }
        if rep == 0 {
            crate::results::plot::throughput(&rep_dir.join("throughput.png"), plan, &r)?;
            crate::results::plot::queue(&rep_dir.join("queue.png"), plan, &r)?;
        }
        if opts.verbose {
            eprintln!("  rep {rep}: {}", one_line(&r.summary));
        }
        reps.push(r);
        std::thread::sleep(Duration::from_millis(500)); // let the queue drain
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(reps)
}

fn progress_bar(on: bool, plan: &Plan) -> Option<indicatif::ProgressBar> {
    if !on {
        return None;
    }
    let total = (plan.duration_s * plan.repetitions as f64).ceil() as u64;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} s  {msg}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{} {}", plan.scenario.name, plan.label));
    Some(bar)
}

/// The bottleneck's departure rate while backlogged vs the configured rate
/// (see [`selfcheck::measure_rate`]).
fn check_rate(net: &Dumbbell, plan: &Plan) -> Result<selfcheck::RateCheck> {
    let b = Bottleneck {
        rate_bit: plan.rate_bit,
        limit_bytes: plan.buffer_bytes,
    };
    let rtt0 = Duration::from_secs_f64(plan.flows[0].rtt_ms / 1e3);
    let c = selfcheck::measure_rate(net, b, rtt0, 5201, 4.0)?;
    // Enforced with random loss too: the load is sent from the sender
    // namespace's own address (rateload::LOAD_SOURCE), which the loss
    // program on r0 ingress does not match (it drops only packets from the
    // flows' addresses in its map), so the load measures the link, not the
    // loss.
    if !c.ok {
        bail!(
            "self-check failed: bottleneck sends {:.2} Mbit/s while backlogged for {:.2} s, configured {:.2} (tolerance 3%, at least {} s backlogged); no results reported",
            c.measured_bit / 1e6,
            c.busy_s,
            c.configured_bit / 1e6,
            selfcheck::MIN_BUSY_S
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    Ok(c)
}

/// One repetition: every flow from its start to its stop time, the queue
/// and the BPF export sampled meanwhile; with a queue discipline, also the
/// text of its aqm.csv.
fn run_rep(
    plan: &Plan,
    net: &Dumbbell,
    counter: &ArrivalCounter,
    fs: &BpfFs,
    bar: Option<(&indicatif::ProgressBar, u64)>,
) -> Result<(RepResult, Option<Vec<u8>>)> {
    let reader = net.queue_reader()?;
    let t0 = Instant::now();
    // Jitter, ACK batching and RTT changes run on this repetition's clock.
    let start_ns = crate::net::clock::clock_ns();
    for f in &plan.flows {
        let d = crate::net::pathsched::PathDelay::for_flow(f, start_ns);
        if d.varies() {
            net.delay.set_path(net.sender(f.index), d)?;
        }
    }
    let sampler = QueueSampler::start(reader, plan.queue_sample, t0);
    let stop = Arc::new(AtomicBool::new(false));
    let bpf_thread = spawn_bpf_sampler(fs, &plan.flows, net, t0, stop.clone());
    counter.restart()?;

    let mut aqm_csv = match net.aqm() {
        Some(_) => Some(AqmCsv::new(Vec::new())?),
        None => None,
    };
    let handles = start_flows(plan, net, t0);
    let clock = RunClock { t0, start_ns };
    let edges = read_window_edges(plan, net, clock, &handles, counter, bar, &mut aqm_csv)?;
    let mut runs = Vec::new();
    for (h, spec) in handles.into_iter().zip(&plan.flows) {
        let r = h
            .join()
            .map_err(|_| anyhow::anyhow!("flow {} thread panicked", spec.index))??;
        runs.push((spec.clone(), r));
    }
    stop.store(true, Ordering::Relaxed);
    let (tally, arrivals_lost) = counter.take()?;
    let queue = sampler.finish();
    let bpf = bpf_thread.join().unwrap_or_default();
    if let Some((b, base)) = bar {
        b.set_position(base + plan.duration_s.ceil() as u64);
    }
    let spans: Vec<FlowSpan> = runs
        .iter()
        .map(|(spec, r)| FlowSpan {
            start_s: spec.start_s,
            total_bytes: r.client.received_bytes,
        })
        .collect();
    // The arrival counters at the edges, on the edges' own clock.
    let arrivals_at = |k: usize| EdgeCounts {
        t_s: edges.t_s[k],
        uncertainty_s: 0.0,
        per_flow: plan
            .flows
            .iter()
            .map(|f| Some(tally.before_edge(net.sender(f.index), k)))
            .collect(),
    };
    let mut window = accounting::account(
        &spans,
        (&arrivals_at(0), &arrivals_at(1)),
        Some((&edges.in_order[0], &edges.in_order[1])),
        &accounting::Link {
            queue: &queue,
            rate_bit: plan.rate_bit,
            burst_bytes: crate::net::link::htb_burst_bytes(plan.rate_bit),
            payload_share: MSS as f64 / WIRE_PACKET as f64,
        },
    );
    window.arrivals_lost = arrivals_lost;
    let flows: Vec<FlowResult> = runs
        .into_iter()
        .enumerate()
        .map(|(i, (spec, r))| flow_result(spec, r, window.flow_goodput_bps[i]))
        .collect::<Result<_>>()?;
    let summary = summarize(plan, &flows, &queue, &window, Some(edges.random_loss));
    let aqm = match &edges.aqm {
        Some([a, b]) => {
            let rows = aqm_window(plan, net, a, b);
            check_aqm(&rows)?;
            rows
        }
        None => Vec::new(),
    };
    let rep = RepResult {
        flows,
        queue,
        bpf,
        random_loss_at_edges: Some(edges.random_loss),
        summary,
        aqm,
    };
    Ok((rep, aqm_csv.map(AqmCsv::into_inner)))
}

/// The discipline's counters of each flow between the window's edges.
fn aqm_window(
    plan: &Plan,
    net: &Dumbbell,
    a: &[(std::net::Ipv4Addr, FlowStats)],
    b: &[(std::net::Ipv4Addr, FlowStats)],
) -> Vec<AqmFlow> {
    let at = |v: &[(std::net::Ipv4Addr, FlowStats)], addr| {
        v.iter()
            .find(|(x, _)| *x == addr)
            .map(|(_, s)| *s)
            .unwrap_or_default()
    };
    plan.flows
        .iter()
        .map(|f| {
            let addr = net.sender(f.index);
            let (s0, s1) = (at(a, addr), at(b, addr));
            let judged = (s1.packets - s1.unstamped).saturating_sub(s0.packets - s0.unstamped);
            AqmFlow {
                flow: f.index,
                packets: s1.packets - s0.packets,
                drops: s1.drops - s0.drops,
                marks: s1.marks - s0.marks,
                unstamped: s1.unstamped - s0.unstamped,
                mean_sojourn_ms: if judged > 0 {
                    (s1.sojourn_sum_ns - s0.sojourn_sum_ns) as f64 / judged as f64 / 1e6
                } else {
                    0.0
                },
            }
        })
        .collect()
}

/// The discipline's self-check: the decision program saw the flows' packets,
/// and nearly all of them carried the enqueue stamp (an unstamped packet
/// passes unjudged, so more than 1 % would be a discipline not applied).
fn check_aqm(rows: &[AqmFlow]) -> Result<()> {
    let packets: u64 = rows.iter().map(|r| r.packets).sum();
    let unstamped: u64 = rows.iter().map(|r| r.unstamped).sum();
    if packets == 0 {
        bail!("self-check failed: the queue discipline's program saw no packet of the flows in the window; no results reported");
    }
    if unstamped * 100 > packets {
        bail!(
            "self-check failed: {unstamped} of {packets} packets reached the queue discipline's decision without an enqueue stamp (more than 1 %); no results reported"
        );
    }
    Ok(())
}

/// One iperf3 client thread per flow, each starting at its start time
/// after `t0`.
fn start_flows(
    plan: &Plan,
    net: &Dumbbell,
    t0: Instant,
) -> Vec<std::thread::JoinHandle<Result<iperf::FullResult>>> {
    plan.flows
        .iter()
        .map(|f| {
            let spec = ClientSpec {
                server: RECEIVER.to_string(),
                port: 5201 + f.index as u16,
                bind: Some(net.sender(f.index).to_string()),
                cca: f.cca.clone(),
                seconds: f.stop_s - f.start_s,
                interval: plan.interval_s,
            };
            let ns = net.snd.name().to_string();
            let start = Duration::from_secs_f64(f.start_s);
            std::thread::spawn(move || {
                let now = t0.elapsed();
                if start > now {
                    std::thread::sleep(start - now);
                }
                iperf::client_with_server_output(&ns, &spec)
            })
        })
        .collect()
}

/// A flow's series in run time with its goodput over the window; refuses
/// a flow that did not run the CCA it was given.
fn flow_result(spec: FlowSpec, r: iperf::FullResult, window_goodput: f64) -> Result<FlowResult> {
    if r.client.congestion != spec.cca {
        bail!(
            "flow {} ran {} instead of {}",
            spec.index,
            r.client.congestion,
            spec.cca
        );
    }
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
    Ok(FlowResult {
        mean_goodput: window_goodput,
        goodput,
        rtt_ms,
        retransmits: r.client.retransmits,
        retransmits_by_interval: r
            .client
            .interval_retransmits
            .iter()
            .map(|(t, n)| (t + spec.start_s, *n))
            .collect(),
        bytes_received: r.client.received_bytes,
        congestion: r.client.congestion.clone(),
        spec,
    })
}

/// A repetition's clock: `t0` and the same instant on CLOCK_MONOTONIC
/// (what the arrival counter stamps packets with).
#[derive(Clone, Copy)]
struct RunClock {
    t0: Instant,
    start_ns: u64,
}

/// The window's two edges as marked.
struct WindowEdges {
    /// When each edge was marked on the arrival counter, seconds since t0.
    t_s: [f64; 2],
    /// The receivers' in-order counters read right after (cross-check).
    in_order: [EdgeCounts; 2],
    /// The random-loss program's drop counter read right after.
    random_loss: [u64; 2],
    /// The queue discipline's per-sender counters read right after.
    aqm: Option<[Vec<(std::net::Ipv4Addr, FlowStats)>; 2]>,
}

/// Wait for the flows while draining the arrival counter and marking the
/// window's start and end on it (and reading the in-order counters there,
/// and moving the progress bar); with a queue discipline, a row of its
/// counters per flow into `aqm_csv` every [`AQM_SAMPLE`].
fn read_window_edges(
    plan: &Plan,
    net: &Dumbbell,
    clock: RunClock,
    flows: &[std::thread::JoinHandle<Result<iperf::FullResult>>],
    counter: &ArrivalCounter,
    bar: Option<(&indicatif::ProgressBar, u64)>,
    aqm_csv: &mut Option<AqmCsv<Vec<u8>>>,
) -> Result<WindowEdges> {
    let due = [plan.window.start_s, plan.window.end_s];
    let mut t_s = Vec::new();
    let mut in_order = Vec::new();
    let mut random_loss = Vec::new();
    let mut aqm_edges = Vec::new();
    let senders: Vec<std::net::Ipv4Addr> = plan.flows.iter().map(|f| net.sender(f.index)).collect();
    // Only the flows' senders (the self-check's load has its own address).
    let aqm_stats = || -> Option<Vec<(std::net::Ipv4Addr, FlowStats)>> {
        let mut v = net.aqm()?.flow_stats();
        v.retain(|(a, _)| senders.contains(a));
        Some(v)
    };
    let mut next_aqm = 0.0;
    let mut mark = |t_s: &mut Vec<f64>| -> Result<()> {
        // Marked before anything stamped later is drained (Tally::mark_edge).
        let ns = crate::net::clock::clock_ns();
        counter.mark_edge(ns);
        t_s.push(ns.saturating_sub(clock.start_ns) as f64 / 1e9);
        in_order.push(edge_counts(plan, net, clock.t0)?);
        random_loss.push(net.random_loss_drops());
        aqm_edges.push(aqm_stats());
        Ok(())
    };
    while !flows.iter().all(|h| h.is_finished()) || t_s.len() < due.len() {
        counter.drain()?;
        let now = clock.t0.elapsed().as_secs_f64();
        if let (Some(csv), Some(stats)) = (
            aqm_csv.as_mut(),
            (now >= next_aqm).then(aqm_stats).flatten(),
        ) {
            csv.sample(now, &stats)?;
            next_aqm = now + AQM_SAMPLE.as_secs_f64();
        }
        if let Some(&d) = due.get(t_s.len()) {
            if now >= d {
                mark(&mut t_s)?;
                continue;
            }
        }
        if flows.iter().all(|h| h.is_finished()) {
            // Every flow ended before this edge: its counters are final.
            mark(&mut t_s)?;
            continue;
        }
        let next_edge = due.get(t_s.len()).map(|d| d - now).unwrap_or(f64::MAX);
        std::thread::sleep(Duration::from_secs_f64(next_edge.clamp(0.0, 0.25)));
        if let Some((b, base)) = bar {
            b.set_position(base + (clock.t0.elapsed().as_secs_f64().min(plan.duration_s)) as u64);
        }
    }
    let [ia, ib]: [EdgeCounts; 2] = in_order
        .try_into()
        .map_err(|_| anyhow::anyhow!("window edges not read"))?;
    let aqm = match (
        aqm_edges.first().cloned().flatten(),
        aqm_edges.get(1).cloned().flatten(),
    ) {
        (Some(a), Some(b)) => Some([a, b]),
        _ => None,
    };
    Ok(WindowEdges {
        t_s: [t_s[0], t_s[1]],
        in_order: [ia, ib],
        random_loss: [random_loss[0], random_loss[1]],
        aqm,
    })
}

/// The receivers' counters now, per flow.
fn edge_counts(plan: &Plan, net: &Dumbbell, t0: Instant) -> Result<EdgeCounts> {
    let r = rcvbytes::read(&net.rcv, t0)?;
    Ok(EdgeCounts {
        t_s: r.t_s,
        uncertainty_s: r.uncertainty_s,
        per_flow: plan
            .flows
            .iter()
            .map(|f| {
                let addr: std::net::IpAddr = net.sender(f.index).into();
                r.bytes_by_peer.get(&addr).copied()
            })
            .collect(),
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
                    out.push(BpfSample::new(t, idx, &f));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        out
    })
}
