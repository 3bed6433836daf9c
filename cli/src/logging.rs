//! Logs: `tracing` events to stderr, filtered by `RUST_LOG` (default
//! `info`), journald-friendly.
//!
//! Under systemd (`JOURNAL_STREAM` set) lines carry no timestamp and no
//! colour: journald stamps each line itself, and escape codes would end up
//! in the journal. Data a command prints goes to stdout, never through
//! here; errors from bad input stay one plain line on stderr (see main).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Install the subscriber. A malformed `RUST_LOG` is not fatal (logging
/// must not stop the daemon starting): it falls back to `info` and says so.
pub fn init() {
    let (filter, bad) = match std::env::var("RUST_LOG") {
        Ok(v) if !v.is_empty() => match EnvFilter::try_new(&v) {
            Ok(f) => (f, None),
            Err(e) => (
                EnvFilter::new("info"),
                Some(format!("RUST_LOG={v:?} ignored: {e}")),
            ),
        },
        _ => (EnvFilter::new("info"), None),
    };
    let journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(!journald && std::io::stderr().is_terminal());
    let installed = if journald {
        builder.without_time().try_init()
    } else {
        builder.try_init()
    };
    if installed.is_ok() {
        if let Some(w) = bad {
            tracing::warn!("{w}");
        }
    }
}
