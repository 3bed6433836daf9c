//! `provenance.json`: what a results folder was produced with, so a reader
//! (and `lab merge`, and `--resume`) can tell whether two folders are
//! comparable: the kernel, iperf3, the rttfair build, each CCA's BPF object
//! (SHA-256 of the bytes the loader registers) and tunables, the scenario
//! text, the shard and the self-check the network passed.
//!
//! Hashing is the `sha2` crate (RustCrypto, the usual choice): a digest is
//! not something to hand-write.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use rttfair_loader::{BpfFs, Cca};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::net::selfcheck::{RateCheck, RttCheck};
use crate::scenario::grid::Shard;
use crate::scenario::Scenario;

/// The file name inside a results folder.
pub const FILE: &str = "provenance.json";

/// The software a folder was produced with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_release: String,
    /// First line of `iperf3 --version`.
    pub iperf3_version: String,
    pub rttfair_version: String,
    pub rttfair_commit: String,
    /// Where the commit came from (see lab/build.rs): the build
    /// environment, `git rev-parse` at build time, or none.
    pub rttfair_commit_source: String,
    /// Whether the tracked files `rttfairctl` is built from (lab/build.rs,
    /// `INPUTS`) differed from the commit at build time: "no", "yes", or
    /// "unknown" (commit from `RTTFAIR_GIT_COMMIT`, or no git).
    pub rttfair_dirty: String,
}

impl Environment {
    /// This host and this build.
    pub fn current() -> Environment {
        let kernel_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let iperf3_version = std::process::Command::new("iperf3")
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .map(|l| l.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Environment {
            kernel_release,
            iperf3_version,
            rttfair_version: env!("CARGO_PKG_VERSION").into(),
            rttfair_commit: env!("RTTFAIR_BUILD_COMMIT").into(),
            rttfair_commit_source: env!("RTTFAIR_BUILD_COMMIT_SOURCE").into(),
            rttfair_dirty: env!("RTTFAIR_BUILD_DIRTY").into(),
        }
    }
}

/// One CCA a folder's runs used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CcaObject {
    pub name: String,
    /// SHA-256 (hex) of the BPF object the loader embeds and registers;
    /// `None` for a kernel CCA (cubic, bbr, reno).
    pub object_sha256: Option<String>,
}

impl CcaObject {
    /// `name` as this build would load it.
    pub fn of(name: &str) -> CcaObject {
        CcaObject {
            name: name.to_string(),
            object_sha256: name
                .parse::<Cca>()
                .ok()
                .map(|c| sha256_hex(rttfair_loader::objects::cca(c))),
        }
    }
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The self-check a run passed before it reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelfCheck {
    pub rtt: Vec<RttCheck>,
    pub rate: RateCheck,
}

/// The tunables of the project CCAs among `names` as loaded at `fs` right
/// now ("fairtt.beta" -> value); CCAs without tunables add nothing.
pub fn tunables(fs: &BpfFs, names: &[String]) -> Result<BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    for name in names {
        let Ok(cca) = name.parse::<Cca>() else {
            continue;
        };
        if !rttfair_loader::tunables::ALL
            .iter()
            .any(|t| t.cca == cca.base())
        {
            continue;
        }
        for v in rttfair_loader::tunables::get(fs, Some(cca.name()))
            .with_context(|| format!("read the tunables of {cca}"))?
        {
            out.insert(v.name, v.value);
        }
    }
    Ok(out)
}

/// The tunables in `all` (as [`tunables`] returns them) of the CCAs among
/// `names`: what a run of those CCAs records.
pub fn tunables_of(all: &BTreeMap<String, f64>, names: &[String]) -> BTreeMap<String, f64> {
    all.iter()
        .filter(|(k, _)| {
            k.split_once('.')
                .is_some_and(|(cca, _)| names.iter().any(|n| n == cca))
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The provenance of one run's folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProvenance {
    pub environment: Environment,
    pub ccas: Vec<CcaObject>,
    /// Tunables in effect when the flows started.
    pub tunables: BTreeMap<String, f64>,
    /// The scenario as run (scenario.toml's text).
    pub scenario: String,
    pub self_check: SelfCheck,
}

/// One point of a sweep folder: where it sits, and its run's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointProvenance {
    pub cca: String,
    pub x: f64,
    pub y: Option<f64>,
    /// The point's folder under `runs/`.
    pub run_dir: String,
    pub tunables: BTreeMap<String, f64>,
    pub self_check: SelfCheck,
}

/// The provenance of a sweep folder (a shard's, a whole one, or a merge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepProvenance {
    pub environment: Environment,
    /// The CCAs of the sweep, in the order given (the grid's order).
    pub ccas: Vec<CcaObject>,
    /// The base scenario with its `[sweep]` table, as TOML.
    pub scenario: String,
    /// The shard this folder holds; `None` for the whole grid.
    pub shard: Option<Shard>,
    /// The folders a merged sweep was made of (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// A merged sweep's source per CCA, in `ccas` order: each CCA's points
    /// may come from another build and repetition count than the
    /// others', so every figure keeps its own (empty for a sweep that
    /// ran: there `environment`, `ccas` and `scenario` say it all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<CcaSource>,
    /// Every point in the folder, in the grid's order.
    pub points: Vec<PointProvenance>,
    /// How the sweep that wrote the folder went (`None` for a merge, and
    /// in folders from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<SweepProgress>,
}

/// A sweep's points and time, as recorded at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepProgress {
    /// The points of the grid (of the shard) the sweep covers.
    pub points_total: usize,
    /// The points it ran.
    pub points_run: usize,
    /// The points `--resume` kept from an earlier sweep.
    pub points_resumed: usize,
    /// Wall-clock seconds from the first point to the last.
    pub elapsed_s: f64,
}

/// Where one CCA's points of a sweep folder came from: the build that ran
/// them, the CCA's object and how many repetitions each point has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CcaSource {
    pub name: String,
    pub environment: Environment,
    /// As [`CcaObject::object_sha256`].
    pub object_sha256: Option<String>,
    pub repetitions: u32,
    /// The folders its points were read from.
    pub folders: Vec<String>,
}

impl SweepProvenance {
    /// The CCA names in grid order.
    pub fn cca_names(&self) -> Vec<String> {
        self.ccas.iter().map(|c| c.name.clone()).collect()
    }

    /// The record of the point of `cca` at (`x`, `y`), if the folder has
    /// it (where its run is, what it ran with).
    pub fn record_of(&self, cca: &str, x: f64, y: Option<f64>) -> Option<&PointProvenance> {
        self.points
            .iter()
            .find(|r| r.cca == cca && r.x == x && r.y == y)
    }

    /// The source of `cca`'s points in this folder: its entry in `sources`
    /// (a merged folder), else this folder's build, `cca`'s object and
    /// `repetitions` (the scenario's, which the caller parsed); `None` if
    /// the folder did not sweep `cca`. `folder` names the folder.
    pub fn source_of(&self, cca: &str, repetitions: u32, folder: &str) -> Option<CcaSource> {
        if let Some(s) = self.sources.iter().find(|s| s.name == cca) {
            return Some(s.clone());
        }
        let object = self.ccas.iter().find(|c| c.name == cca)?;
        Some(CcaSource {
            name: cca.to_string(),
            environment: self.environment.clone(),
            object_sha256: object.object_sha256.clone(),
            repetitions,
            folders: vec![folder.to_string()],
        })
    }
}

/// A scenario as the TOML text provenance records.
pub fn scenario_text(s: &Scenario) -> Result<String> {
    Ok(toml::to_string_pretty(s)?)
}

/// Write `value` as `dir/provenance.json`.
pub fn write<T: Serialize>(dir: &Path, value: &T) -> Result<()> {
    crate::atomic::write_file(&dir.join(FILE), serde_json::to_string_pretty(value)?)
}

/// Read `dir/provenance.json`.
pub fn read<T: serde::de::DeserializeOwned>(dir: &Path) -> Result<T> {
    let path = dir.join(FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_hash_is_the_sha256_of_the_embedded_bytes() {
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let o = CcaObject::of("fairtt");
        assert_eq!(
            o.object_sha256.as_deref(),
            Some(sha256_hex(rttfair_loader::objects::cca(Cca::Fairtt)).as_str())
        );
        assert_ne!(o.object_sha256, CcaObject::of("bbr1").object_sha256);
        assert_eq!(CcaObject::of("cubic").object_sha256, None);
    }

    #[test]
    fn environment_names_this_build() {
        let e = Environment::current();
        assert_eq!(e.rttfair_version, env!("CARGO_PKG_VERSION"));
        assert!(!e.rttfair_commit.is_empty());
        assert!(!e.kernel_release.is_empty());
    }
}
