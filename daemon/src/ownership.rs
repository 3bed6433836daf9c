//! Which CCAs this daemon registered itself, so that it gives back those
//! and only those.
//!
//! The daemon loads what its config's `load` names. A CCA that was already
//! registered when it started (by the operator with `rttfairctl load`, by
//! an earlier daemon, by a lab) is *adopted*: used as it is and never
//! unloaded by this daemon. Loading is all or nothing, as `rttfairctl load`
//! is: if one CCA fails to load, those this daemon registered before it are
//! unregistered again and the error is the only thing said.
//!
//! A CCA a running lab loaded is taken over the way `rttfairctl load` takes
//! it over ([`rttfair_loader::lease::adopt`]): from then on no lab unloads it
//! under the daemon. The lab would have unloaded it when done, so the daemon
//! counts it as its own and gives it back at exit instead.
//!
//! With `unload_on_exit`, the daemon's own CCAs are unloaded when [`Owned`]
//! is dropped: at a normal stop, after SIGTERM/SIGINT, when serving fails,
//! and on a panic. A CCA stays registered, with a warning, while sockets
//! use it or while a running lab holds a lease on it (labs between two
//! repetitions have no sockets on it, so the socket count alone would not
//! protect them).

use std::fs::File;

use nix::fcntl::{Flock, FlockArg};
use rttfair_loader::lifecycle::{self, LoadOptions, LoadOutcome};
use rttfair_loader::{BpfFs, Cca};

/// The CCAs this daemon registered (or took over from a lab), unloaded on
/// drop if `unload_on_exit`.
pub struct Owned {
    fs: BpfFs,
    ccas: Vec<Cca>,
    unload_on_exit: bool,
}

impl Owned {
    /// Load every CCA in `ccas`, all or nothing, and log what each needed.
    /// On an error nothing this call registered is left registered. A flow
    /// map this load creates gets `flows_max` entries (config
    /// `flow_map_entries`); one that already exists keeps its size, which
    /// is said if it differs.
    pub fn load(
        fs: &BpfFs,
        ccas: &[Cca],
        unload_on_exit: bool,
        flows_max: Option<u32>,
    ) -> anyhow::Result<Owned> {
        let mut owned = Owned {
            fs: fs.clone(),
            ccas: Vec::new(),
            // A panic half-way still gives back what was loaded.
            unload_on_exit: true,
        };
        let mut adopted = Vec::new();
        let opts = LoadOptions {
            flows_max,
            object: None,
        };
        for &cca in ccas {
            match lifecycle::load(cca, fs, &opts) {
                Ok(LoadOutcome::AlreadyLoaded) => adopted.push(cca),
                Ok(LoadOutcome::Loaded | LoadOutcome::Repaired) => owned.ccas.push(cca),
                Err(e) => {
                    owned.roll_back();
                    return Err(e.into());
                }
            }
        }
        owned.unload_on_exit = unload_on_exit;
        if let (Some(want), Ok(r)) = (flows_max, rttfair_loader::flows::FlowReader::open(fs)) {
            if r.capacity() != want {
                tracing::warn!(
                    "the flow map has {} entries, not flow_map_entries = {want}: it was created earlier, and keeps its size until every CCA is unloaded",
                    r.capacity()
                );
            }
        }
        // Said once all are in, so a failed start says nothing but its error.
        for &cca in &owned.ccas {
            tracing::info!("loaded {cca}");
        }
        for cca in adopted {
            match rttfair_loader::lease::adopt(fs, cca) {
                Ok(true) => {
                    tracing::info!("adopted {cca} (loaded by a running lab; now the daemon's)");
                    owned.ccas.push(cca);
                }
                Ok(false) => {
                    tracing::info!("adopted {cca} (already loaded; left registered at exit)")
                }
                Err(e) => tracing::warn!("{e:#}"),
            }
        }
        Ok(owned)
    }

    /// Undo a start that failed half-way: nothing can use a CCA that was
    /// registered a moment ago, so no socket count is asked.
    fn roll_back(&mut self) {
        for cca in std::mem::take(&mut self.ccas).into_iter().rev() {
            if let Err(e) = lifecycle::unregister(cca, &self.fs, true) {
                tracing::warn!("could not roll back {cca}: {e}");
            }
        }
    }

    /// Unload one of ours unless sockets or a lab still use it.
    fn give_back(&self, cca: Cca) {
        // Held exclusively while unloading: a lab that starts now waits for
        // its shared lease and then finds the CCA gone (and loads its own).
        let _lease = match File::open(rttfair_loader::lease::lease_path(&self.fs, cca)) {
            Ok(f) => match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
                Ok(held) => Some(held),
                Err(_) => {
                    tracing::warn!(
                        "kept {cca}: a running lab holds a lease on it (`rttfairctl unload {cca}` once it is done)"
                    );
                    return;
                }
            },
            // No lab has used it since boot.
            Err(_) => None,
        };
        match lifecycle::unregister(cca, &self.fs, false) {
            Ok(()) => tracing::info!("unloaded {cca}"),
            Err(e) => tracing::warn!("kept {cca}: {e}"),
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if self.unload_on_exit {
            for &cca in self.ccas.iter().rev() {
                self.give_back(cca);
            }
        }
    }
}
