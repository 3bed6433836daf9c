//! The HTTP side: /metrics, /healthz and /readyz on a tokio runtime (axum),
//! and the daemon's life: load, serve, stop on a signal, give back what it
//! loaded ([`crate::ownership`]).
//!
//! Liveness and readiness differ: `/healthz` answers 200 whenever the
//! process serves (a restart would not fix anything else), `/readyz` only
//! while what it exports is right: 503 with the reason when the loaded CCAs
//! are of another build's ABI (whose maps this build cannot read) or when
//! the kernel refuses to open or read the pinned maps.

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rttfair_loader::{BpfFs, Cca};

use crate::collector::FlowCollector;
use crate::config::Config;
use crate::exposition::Exposition;
use crate::ownership::Owned;
use crate::peer::PeerLabels;

struct App {
    exposition: Arc<Exposition>,
    collector: Arc<FlowCollector>,
    /// Why the start left the daemon unready for good (an ABI mismatch
    /// found while loading: nothing was loaded or adopted).
    start_error: Option<String>,
}

/// Run the daemon until SIGTERM/SIGINT.
pub fn run(config: Config) -> Result<()> {
    // The hash key first: a bad key file is refused before anything starts.
    let peer = config.peer_labels()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start tokio runtime")?;
    rt.block_on(serve(config, peer))
}

async fn serve(config: Config, peer: PeerLabels) -> Result<()> {
    // Every capability the config needs, named if missing, before anything.
    rttfair_loader::preflight::require("rttfair-daemon", &config.required_caps())?;
    // Bind first: a taken port is reported before anything is loaded.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    // Caught from here on: a signal while the CCAs load ends in the same
    // clean stop (and unload) as one while serving.
    let stop = Shutdown::install()?;
    let fs = BpfFs::new(&config.bpffs);
    let ccas = config
        .load
        .iter()
        .map(|n| n.parse::<Cca>())
        .collect::<rttfair_loader::Result<Vec<_>>>()?;
    // Dropped on every way out of this function below: unloads what this
    // daemon loaded if the config says unload_on_exit.
    let (owned, start_error) =
        match Owned::load(&fs, &ccas, config.unload_on_exit, config.flow_map_entries) {
            Ok(owned) => (Some(owned), None),
            // CCAs of another build's ABI are registered: nothing was loaded
            // or adopted. Serve anyway, alive but not ready, with /readyz
            // failing on the same line, so probes and dashboards show it
            // rather than a restart loop.
            Err(e) if is_abi_mismatch(&e) => (None, Some(format!("{e:#}"))),
            Err(e) => return Err(e),
        };
    if let Err(e) = rttfair_loader::installed::check(&fs) {
        tracing::error!("{e} (then restart the daemon); /readyz fails until then");
    }
    let served = serve_until(&config, peer, fs, listener, stop, start_error).await;
    drop(owned);
    served?;
    tracing::info!("stopped");
    Ok(())
}

fn is_abi_mismatch(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<rttfair_loader::Error>(),
        Some(rttfair_loader::Error::AbiMismatch { .. })
    )
}

/// Serve /metrics, /healthz and /readyz until `stop` fires.
async fn serve_until(
    config: &Config,
    peer: PeerLabels,
    fs: BpfFs,
    listener: tokio::net::TcpListener,
    stop: Shutdown,
    start_error: Option<String>,
) -> Result<()> {
    let collector = Arc::new(
        FlowCollector::new(
            fs,
            config.per_flow,
            config.max_flows,
            config.group_prefix_v4,
            config.group_prefix_v6,
            config.native_flows,
        )
        .with_peer_labels(peer)
        .with_max_groups(config.max_groups),
    );
    let exposition = Exposition::new(
        collector.clone(),
        std::time::Duration::from_millis(config.refresh_ms),
    );
    exposition.spawn_refresher();
    let app = Arc::new(App {
        exposition,
        collector,
        start_error,
    });
    let router = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(app);
    tracing::info!(
        per_flow = ?config.per_flow,
        refresh_ms = config.refresh_ms,
        "serving http://{}/metrics",
        config.listen
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(stop.wait())
        .await
        .context("serve")
}

async fn metrics(State(app): State<Arc<App>>, headers: axum::http::HeaderMap) -> Response {
    // Prometheus asks for OpenMetrics; curl, promtool and older scrapers get
    // the classic text format.
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let gzip = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("gzip"));
    if gzip && openmetrics {
        app.exposition
            .gzip_wanted
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let arrived = std::time::Instant::now();
    let got = app.exposition.get().await;
    tracing::debug!(
        body_ready_ms = arrived.elapsed().as_secs_f64() * 1e3,
        gzip,
        "scrape"
    );
    match got {
        Ok(body) if openmetrics && gzip => {
            match tokio::task::spawn_blocking(move || body.gzip()).await {
                Ok(z) => (
                    [
                        (
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        ),
                        (header::CONTENT_ENCODING, "gzip"),
                    ],
                    z,
                )
                    .into_response(),
                Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n").into_response(),
            }
        }
        Ok(body) if openmetrics => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body.openmetrics.clone(),
        )
            .into_response(),
        // The conversion of a large body is CPU work: off the async workers.
        Ok(body) => match tokio::task::spawn_blocking(move || body.classic()).await {
            Ok(text) => (
                [(
                    header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                text,
            )
                .into_response(),
            Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n").into_response(),
        },
        Err(_) => {
            tracing::error!("encoding /metrics failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n").into_response()
        }
    }
}

/// Liveness: the process serves HTTP. Nothing a restart would fix is
/// checked here (an ABI mismatch survives restarts; restarting on it would
/// only loop).
async fn healthz() -> Response {
    (StatusCode::OK, "ok\n").into_response()
}

/// Readiness: the maps it exports are of this build's ABI and readable.
async fn readyz(State(app): State<Arc<App>>) -> Response {
    if let Some(e) = &app.start_error {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}\n")).into_response();
    }
    match tokio::task::spawn_blocking(move || app.collector.healthy()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready\n").into_response(),
        Ok(Err(e)) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}\n")).into_response()
        }
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "check failed\n").into_response(),
    }
}

/// SIGTERM and SIGINT, caught from [`Shutdown::install`] on.
struct Shutdown {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Shutdown {
    fn install() -> Result<Shutdown> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Shutdown {
            term: signal(SignalKind::terminate()).context("catch SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("catch SIGINT")?,
        })
    }

    /// Until either arrives (at once if one arrived since `install`).
    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
