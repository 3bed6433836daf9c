//! Whether the CCAs registered under an installation were built for this
//! build's ABI.
//!
//! The shared maps' names carry the ABI version ([`crate::abi::maps`]), so
//! a build of another ABI finds no maps of its own while the CCAs that
//! another build registered keep running on theirs. Adopting them then
//! would read nothing: no flows, and zero sockets for a CCA in use. Every
//! caller that would adopt or count asks [`check`] (or [`loaded_ccas_check`]
//! for one CCA) instead, and gets one line naming both ABIs and the fix:
//! `rttfairctl load`, the daemon's start and /healthz, the socket
//! count behind `unload` ([`crate::flows::live_sockets`]), and
//! rttfairctl's views (`flows`, `get`, `set`; `list` as its note).
//!
//! What it cannot see: once this build's maps exist (after a `swap` of one
//! CCA, say), a CCA still on another build's programs is not told apart,
//! since a link does not say which maps its programs use.

use std::path::Path;

use crate::abi::{maps, ABI_VERSION};
use crate::bpffs::BpfFs;
use crate::cca::Cca;
use crate::error::{Error, Result};
use crate::loaded;

/// The installation's loaded CCAs must be of this build's ABI: if any is
/// registered and pinned while this build's maps are absent, the error
/// names them, the ABI(s) whose maps are pinned and the fix.
pub fn check(fs: &BpfFs) -> Result<()> {
    let loaded: Vec<Cca> = loaded::pinned(fs)
        .into_iter()
        .filter(|c| loaded::is_loaded(*c, fs))
        .collect();
    loaded_ccas_check(fs, &loaded)
}

/// [`check`] for the given loaded CCAs only.
pub fn loaded_ccas_check(fs: &BpfFs, loaded: &[Cca]) -> Result<()> {
    if loaded.is_empty() {
        return Ok(());
    }
    verdict(
        loaded,
        fs.map_pin(maps::COUNTERS).exists(),
        &pinned_abis(&fs.maps_dir()),
        ABI_VERSION,
    )
}

/// The decision: `loaded` CCAs registered under this installation, whether
/// this build's maps (`this`) are pinned, and the ABI versions whose maps
/// are. Nothing loaded, or this build's maps present, is a match.
pub fn verdict(loaded: &[Cca], this_pinned: bool, pinned: &[u32], this: u32) -> Result<()> {
    if loaded.is_empty() || this_pinned {
        return Ok(());
    }
    let others: Vec<String> = pinned
        .iter()
        .filter(|v| **v != this)
        .map(|v| format!("v{v}"))
        .collect();
    let installed = if others.is_empty() {
        "an unknown ABI (no maps of a versioned ABI pinned)".to_string()
    } else {
        format!("ABI {}", others.join(", "))
    };
    Err(Error::AbiMismatch {
        ccas: loaded
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        installed,
        this,
    })
}

/// ABI versions of the maps pinned in `dir`, from the `_v<N>` ending of
/// their names, sorted, each once.
pub fn pinned_abis(dir: &Path) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| abi_of(&e.file_name().to_string_lossy()))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `N` of a map named `<base>_v<N>`.
fn abi_of(name: &str) -> Option<u32> {
    let (_, v) = name.rsplit_once("_v")?;
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing loaded, or this build's maps pinned, is a match; loaded CCAs
    /// without this build's maps are refused naming them, the ABI whose
    /// maps are there, this build's and the fix.
    #[test]
    fn loaded_ccas_without_this_builds_maps_are_a_mismatch() {
        verdict(&[], false, &[5], 6).unwrap();
        verdict(&[Cca::Qfair], true, &[5, 6], 6).unwrap();
        let e = verdict(&[Cca::Qfair, Cca::Bbr3], false, &[5], 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "qfair, bbr3 loaded by a build of ABI v5; this build is ABI v6 \
             and finds no maps of its own: run `rttfairctl swap <cca>` for each \
             (open sockets keep the old build), or `rttfairctl unload --force` \
             them and load again"
        );
        assert!(matches!(e, Error::AbiMismatch { this: 6, .. }));
        let e = verdict(&[Cca::Fairtt], false, &[], 6).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("fairtt loaded by a build of an unknown ABI"),
            "{e}"
        );
    }

    /// Versions are read from pinned maps' names, once each; other names
    /// (an unversioned map of an old build, a stray file) are not versions.
    #[test]
    fn pinned_abis_come_from_the_map_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "rttfair_flows_v5",
            "rttfair_counters_v5",
            "fairtt_registry_v4",
            "rttfair_flows",
            "notes_v",
            "x_v1a",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(pinned_abis(dir.path()), [4, 5]);
        assert_eq!(pinned_abis(&dir.path().join("absent")), Vec::<u32>::new());
    }
}
