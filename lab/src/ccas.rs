//! Making sure the CCAs an experiment names are registered, and leaving the
//! host as it was found: what this session loaded, it unloads (on drop, and
//! on Ctrl-C through the namespace watcher's exit hook).

use std::sync::Mutex;

use anyhow::{Context, Result};
use rttfair_loader::lifecycle::{self, LoadOptions};
use rttfair_loader::{kernel, BpfFs, Cca};

static LOADED_BY_SESSIONS: Mutex<Vec<(BpfFs, Cca)>> = Mutex::new(Vec::new());

/// CCAs registered for the duration of an experiment.
pub struct CcaSession {
    fs: BpfFs,
    loaded: Vec<Cca>,
    keep: bool,
}

impl CcaSession {
    /// Ensure every project CCA among `names` is registered. Native names
    /// (cubic, bbr, reno) must already be available. Uses the installation
    /// at `fs`; CCAs already loaded there are used as they are.
    pub fn ensure(fs: &BpfFs, names: &[String]) -> Result<CcaSession> {
        crate::netns::on_signal_exit(unload_all_sessions);
        let mut s = CcaSession {
            fs: fs.clone(),
            loaded: Vec::new(),
            keep: false,
        };
        for name in names {
            if let Ok(cca) = name.parse::<Cca>() {
                if lifecycle::is_loaded(cca, fs) {
                    continue;
                }
                lifecycle::load(cca, fs, &LoadOptions::default())
                    .with_context(|| format!("load {cca}"))?;
                LOADED_BY_SESSIONS.lock().unwrap().push((fs.clone(), cca));
                s.loaded.push(cca);
            } else if !kernel::is_registered(name)? {
                anyhow::bail!(
                    "congestion control '{name}' is neither one of rttfair's ({}) nor available in the kernel ({})",
                    Cca::valid_names(),
                    kernel::available_ccas()?.join(" ")
                );
            }
        }
        Ok(s)
    }

    /// Keep what was loaded registered after the session ends.
    pub fn keep(&mut self) {
        self.keep = true;
    }

    pub fn fs(&self) -> &BpfFs {
        &self.fs
    }
}

impl Drop for CcaSession {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for cca in self.loaded.drain(..) {
            let _ = lifecycle::unregister(cca, &self.fs, true);
            LOADED_BY_SESSIONS
                .lock()
                .map(|mut l| l.retain(|(_, c)| *c != cca))
                .ok();
        }
    }
}

fn unload_all_sessions() {
    let all: Vec<(BpfFs, Cca)> = LOADED_BY_SESSIONS
        .lock()
        .map(|l| l.clone())
        .unwrap_or_default();
    for (fs, cca) in all {
        let _ = lifecycle::unregister(cca, &fs, true);
    }
}
