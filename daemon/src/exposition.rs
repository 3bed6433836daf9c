//! The `/metrics` body, encoded off the scrape path.
//!
//! At 10k flows with per-flow series on, reading the maps and encoding ~180k
//! samples takes tens of milliseconds, and 50 scrapers at once each paid it.
//! Here one body is shared: while scrapers keep coming, a background task
//! re-reads and re-encodes every `refresh` and a scrape only copies the
//! latest body out; concurrent scrapes that find it too old wait for one
//! encode together instead of starting one each. When no scrape came for
//! [`IDLE_AFTER`] the task stops working, so an unscraped daemon stays idle.
//!
//! Prometheus asks for gzip: a body is compressed once (on the first such
//! request, or right after its encode once a scraper has asked for gzip)
//! and every scraper gets the same bytes; 11.8 MB of text is ~1 MB gzipped.
//!
//! Freshness: a served body was started at most `2 * refresh` before the
//! request (the period plus the encode racing it); with `refresh` 0 a body is
//! served only if its encode started after the request arrived.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::collector::FlowCollector;

/// No scrape for this long: the background refresh pauses.
pub const IDLE_AFTER: Duration = Duration::from_secs(120);

/// One encoded exposition.
pub struct Body {
    /// When its encode started (the data are at least this recent).
    started: Instant,
    /// OpenMetrics text, as encoded.
    pub openmetrics: Bytes,
    /// The classic Prometheus text, converted on first request.
    classic: OnceLock<Bytes>,
    /// `openmetrics` gzipped, compressed on first request.
    gzip: OnceLock<Bytes>,
}

impl Body {
    /// The body in Prometheus text format 0.0.4 (converted once per body).
    pub fn classic(&self) -> Bytes {
        self.classic
            .get_or_init(|| {
                let om = std::str::from_utf8(&self.openmetrics).unwrap_or_default();
                Bytes::from(to_prometheus_text(om))
            })
            .clone()
    }
}

impl Body {
    /// The OpenMetrics body gzipped (compressed once per body; the fast
    /// level: most of the size goes, for a fraction of the CPU).
    pub fn gzip(&self) -> Bytes {
        self.gzip
            .get_or_init(|| {
                let mut z = flate2::write::GzEncoder::new(
                    Vec::with_capacity(self.openmetrics.len() / 8),
                    flate2::Compression::fast(),
                );
                // Writing to a Vec cannot fail.
                let _ = z.write_all(&self.openmetrics);
                Bytes::from(z.finish().unwrap_or_default())
            })
            .clone()
    }
}

/// The collector and the latest body encoded from it.
pub struct Exposition {
    collector: Arc<FlowCollector>,
    refresh: Duration,
    latest: Mutex<Option<Arc<Body>>>,
    /// Held while encoding: one encode at a time, waiters share its result.
    encoding: tokio::sync::Mutex<()>,
    last_request: Mutex<Instant>,
    /// Size of the previous body. At 10k flows the body is ~10 MB, and
    /// growing a String to that size by doubling spent a fifth of the encode
    /// in memmove; the next body is allocated at about this size.
    last_len: AtomicUsize,
    /// A scraper asked for gzip: the background encode compresses too.
    pub gzip_wanted: AtomicBool,
}

/// Encoding failed (a collector returned fmt::Error).
#[derive(Debug)]
pub struct EncodeFailed;

impl Exposition {
    pub fn new(collector: Arc<FlowCollector>, refresh: Duration) -> Arc<Self> {
        Arc::new(Exposition {
            collector,
            refresh,
            latest: Mutex::new(None),
            encoding: tokio::sync::Mutex::new(()),
            last_request: Mutex::new(Instant::now()),
            last_len: AtomicUsize::new(0),
            gzip_wanted: AtomicBool::new(false),
        })
    }

    /// A body fresh enough for a request that arrived now.
    pub async fn get(self: &Arc<Self>) -> Result<Arc<Body>, EncodeFailed> {
        let arrived = Instant::now();
        *self.last_request.lock().unwrap() = arrived;
        if let Some(b) = self.fresh(arrived) {
            return Ok(b);
        }
        let _one = self.encoding.lock().await;
        // Whoever held the lock may just have encoded a body we can use.
        if let Some(b) = self.fresh(arrived) {
            return Ok(b);
        }
        self.encode().await
    }

    /// Keep the body fresh while scrapers come (no-op with refresh 0).
    pub fn spawn_refresher(self: &Arc<Self>) {
        if self.refresh.is_zero() {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.refresh);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if me.last_request.lock().unwrap().elapsed() > IDLE_AFTER {
                    continue;
                }
                let _one = me.encoding.lock().await;
                let _ = me.encode().await;
            }
        });
    }

    fn fresh(&self, arrived: Instant) -> Option<Arc<Body>> {
        let latest = self.latest.lock().unwrap();
        let b = latest.as_ref()?;
        (b.started + 2 * self.refresh >= arrived).then(|| b.clone())
    }

    /// Encode now (caller holds `encoding`); map reads are syscalls, so
    /// this runs on the blocking pool, off the async workers.
    async fn encode(self: &Arc<Self>) -> Result<Arc<Body>, EncodeFailed> {
        let me = self.clone();
        let body = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let hint = me.last_len.load(Relaxed);
            let mut text = String::with_capacity(hint + hint / 8);
            me.collector.encode(&mut text).ok()?;
            me.last_len.store(text.len(), Relaxed);
            let body = Arc::new(Body {
                started,
                openmetrics: Bytes::from(text),
                classic: OnceLock::new(),
                gzip: OnceLock::new(),
            });
            let encoded = started.elapsed();
            if me.gzip_wanted.load(Relaxed) {
                body.gzip();
            }
            tracing::debug!(
                bytes = body.openmetrics.len(),
                encode_ms = encoded.as_secs_f64() * 1e3,
                gzip_ms = (started.elapsed() - encoded).as_secs_f64() * 1e3,
                "body encoded"
            );
            Some(body)
        })
        .await
        .ok()
        .flatten()
        .ok_or(EncodeFailed)?;
        *self.latest.lock().unwrap() = Some(body.clone());
        Ok(body)
    }
}

/// OpenMetrics -> Prometheus text 0.0.4: counter families are named with
/// their `_total` samples' name, `# UNIT` and `# EOF` go, and a gauge
/// histogram, a type 0.0.4 lacks, becomes three untyped families
/// (`_bucket`, `_gcount`, `_gsum`, each with the help): a `histogram` type
/// would bring back the counter semantics its buckets do not have.
pub fn to_prometheus_text(om: &str) -> String {
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let gauge_histograms: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" gaugehistogram"))
        .collect();
    let mut out = String::with_capacity(om.len() + counters.len() * 16);
    // The gauge histogram being read: name, help, its samples by suffix.
    let mut block: Option<(&str, &str, [Vec<&str>; 3])> = None;
    const SUFFIXES: [&str; 3] = ["_bucket", "_gcount", "_gsum"];
    let flush = |out: &mut String, block: &mut Option<(&str, &str, [Vec<&str>; 3])>| {
        let Some((name, help, parts)) = block.take() else {
            return;
        };
        for (suffix, lines) in SUFFIXES.iter().zip(parts) {
            if lines.is_empty() {
                continue;
            }
            out.push_str(&format!("# HELP {name}{suffix} {help}\n"));
            out.push_str(&format!("# TYPE {name}{suffix} untyped\n"));
            for l in lines {
                out.push_str(l);
                out.push('\n');
            }
        }
    };
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush(&mut out, &mut block);
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if gauge_histograms.contains(name) {
                block = Some((name, help, Default::default()));
                continue;
            }
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split_once(' ').map_or(rest, |(n, _)| n);
            if gauge_histograms.contains(name) {
                // Its HELP opened the block (or it has none: open it here).
                if block.is_none() {
                    block = Some((name, "", Default::default()));
                }
                continue;
            }
            flush(&mut out, &mut block);
        } else if let Some((name, _, parts)) = &mut block {
            let rest = line.strip_prefix(*name).unwrap_or("");
            if let Some(i) = SUFFIXES.iter().position(|s| rest.starts_with(s)) {
                parts[i].push(line);
                continue;
            }
            flush(&mut out, &mut block);
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    flush(&mut out, &mut block);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gzipped body decompresses to the text, and is computed once.
    #[test]
    fn gzip_round_trips_and_is_shared() {
        let text = "# TYPE x gauge\nx 1.0\n".repeat(1000);
        let b = Body {
            started: Instant::now(),
            openmetrics: Bytes::from(text.clone()),
            classic: OnceLock::new(),
            gzip: OnceLock::new(),
        };
        let z = b.gzip();
        assert!(z.len() < text.len() / 10, "{} bytes", z.len());
        let mut out = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&z[..]), &mut out).unwrap();
        assert_eq!(out, text);
        assert_eq!(b.gzip().as_ptr(), z.as_ptr(), "compressed twice");
    }
}

#[cfg(test)]
mod classic_text_tests {
    #[test]
    fn counters_get_their_total_name_in_classic_text() {
        let om = "# HELP x_bytes Bytes.\n# TYPE x_bytes counter\nx_bytes_total{a=\"b\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        let t = super::to_prometheus_text(om);
        assert_eq!(t, "# HELP x_bytes_total Bytes.\n# TYPE x_bytes_total counter\nx_bytes_total{a=\"b\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n");
    }

    /// A gauge histogram of two label sets becomes three untyped
    /// families, each contiguous and described (promtool's linter asks for
    /// help text, and refuses `_bucket`/`le` on a gauge).
    #[test]
    fn gauge_histograms_are_untyped_families_in_classic_text() {
        let om = "# HELP h_seconds Now.\n# TYPE h_seconds gaugehistogram\n\
                  h_seconds_bucket{cca=\"a\",le=\"+Inf\"} 2\nh_seconds_gcount{cca=\"a\"} 2\nh_seconds_gsum{cca=\"a\"} 0.5\n\
                  h_seconds_bucket{cca=\"b\",le=\"+Inf\"} 1\nh_seconds_gcount{cca=\"b\"} 1\nh_seconds_gsum{cca=\"b\"} 0.25\n\
                  # HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        let t = super::to_prometheus_text(om);
        assert_eq!(
            t,
            "# HELP h_seconds_bucket Now.\n# TYPE h_seconds_bucket untyped\n\
             h_seconds_bucket{cca=\"a\",le=\"+Inf\"} 2\nh_seconds_bucket{cca=\"b\",le=\"+Inf\"} 1\n\
             # HELP h_seconds_gcount Now.\n# TYPE h_seconds_gcount untyped\n\
             h_seconds_gcount{cca=\"a\"} 2\nh_seconds_gcount{cca=\"b\"} 1\n\
             # HELP h_seconds_gsum Now.\n# TYPE h_seconds_gsum untyped\n\
             h_seconds_gsum{cca=\"a\"} 0.5\nh_seconds_gsum{cca=\"b\"} 0.25\n\
             # HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
    }
}
