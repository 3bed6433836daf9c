//! The daemon's configuration file (TOML). Every key is optional.
//!
//! ```toml
//! listen = "127.0.0.1:9977"        # loopback by default: no endpoint changes state, but
//!                                  # flow tuples are sensitive; expose deliberately
//! bpffs = "/sys/fs/bpf/rttfair"
//! load = ["fairtt"]                # CCAs to load at start, all or nothing (already
//!                                  # loaded ones are adopted)
//! unload_on_exit = false           # false: leave every CCA registered when the daemon
//!                                  # stops. true: unload the ones this daemon loaded
//!                                  # (and any it took over from a running lab), never
//!                                  # ones that were registered before it started; one
//!                                  # that sockets or a running lab still use stays
//! per_flow = "off"                 # per-flow series: "off" (default: per-CCA and
//!                                  # per-group aggregates only), "all", or "top:N"
//!                                  # (the N flows with the highest throughput)
//! max_flows = 10000                # hard cap on flows with per-flow series (not on
//!                                  # the work: every refresh reads the whole flow map)
//! flow_map_entries = 65536         # capacity of the per-flow export map, which bounds
//!                                  # each refresh's work and memory (1024..=1048576);
//!                                  # applies when the maps are created (first load);
//!                                  # flows beyond it are controlled, not exported
//! max_groups = 20                  # per CCA, destination groups with their own
//!                                  # series (the fastest); the rest are summed
//!                                  # into group="other" (1..=10000)
//! refresh_ms = 0                   # 0: read and encode at every scrape (scrapes
//!                                  # arriving together share one encode); N: a
//!                                  # background task re-encodes every N ms while
//!                                  # scraped and scrapes get the latest body (up
//!                                  # to 2N ms old); set 1000 with per_flow = "all"
//!                                  # at thousands of flows
//! native_flows = false             # also export connections on kernel CCAs
//!                                  # (cubic, native bbr) of the daemon's netns;
//!                                  # off by default: on a busy server that is
//!                                  # every connection, up to max_flows series
//! group_prefix_v4 = 24             # destination prefix that defines a "group"
//! group_prefix_v6 = 64
//! peer_addresses = "full"          # or "hashed", "dropped": what the metrics
//!                                  # reveal of remote ends (crate::peer)
//! peer_hash_key_file = "/etc/rttfair/peer-hash-key"
//!                                  # only with "hashed": the key, 32 hex digits
//!                                  # (crate::peer), read once at start, so a
//!                                  # peer or group keeps its value across
//!                                  # restarts and on every host with this file.
//!                                  # Unset (default): a random key per start,
//!                                  # values change at every restart. Unreadable
//!                                  # or malformed: the daemon does not start
//! peer_hash_key_optional = false   # only with peer_hash_key_file: true means a
//!                                  # file that does not exist gives a random
//!                                  # key and a warning instead of no start (an
//!                                  # optional Kubernetes Secret); a file that
//!                                  # exists but is bad is still refused
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::peer::PeerAddresses;

/// `max_groups` by default: with 5 CCAs, 3 x 5 x 21 = 315 per-group series
/// at most, about as many as the per-CCA histograms.
pub const DEFAULT_MAX_GROUPS: usize = 20;

/// Where the daemon looks for its config when none is given.
pub const DEFAULT_PATH: &str = "/etc/rttfair/daemon.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub listen: SocketAddr,
    pub bpffs: PathBuf,
    /// CCAs to load at start, all or nothing ([`crate::ownership`]).
    pub load: Vec<String>,
    /// At exit, unload the CCAs this daemon loaded itself, and only those
    /// ([`crate::ownership`]); false leaves everything registered.
    pub unload_on_exit: bool,
    /// Which flows get per-flow series (see [`PerFlow`]).
    pub per_flow: PerFlow,
    pub max_flows: usize,
    /// Capacity of the per-flow export map when this daemon's load creates
    /// it (`LoadOptions::flows_max`; None: the BPF side's 65536). Every
    /// refresh reads every entry, so this, not `max_flows`, bounds the
    /// daemon's work and memory for project flows.
    pub flow_map_entries: Option<u32>,
    /// Per CCA, how many destination groups (the ones with the highest
    /// summed throughput) get their own per-group series; the others are
    /// summed into `group="other"`. What bounds the per-group series, which
    /// would otherwise grow with the number of distinct peer prefixes.
    pub max_groups: usize,
    /// How old a served exposition may be, in ms: while scrapers come, a
    /// background task re-reads and re-encodes at this interval and scrapes
    /// are answered from the latest body, so concurrent or slow scrapers
    /// never wait for an encode. 0 (the default) encodes at every scrape.
    pub refresh_ms: u64,
    /// Also export connections on kernel CCAs, read with a BPF socket
    /// iterator, so they can be compared with rttfair's flows.
    pub native_flows: bool,
    pub group_prefix_v4: u8,
    pub group_prefix_v6: u8,
    /// What the metrics reveal of each flow's remote end ([`crate::peer`]).
    pub peer_addresses: PeerAddresses,
    /// The key of `hashed`, read at start ([`crate::peer::PeerKey`]): the
    /// same file gives the same values at every start and on every host,
    /// so series survive restarts and groups add up across a fleet. None:
    /// a random key per start.
    pub peer_hash_key_file: Option<PathBuf>,
    /// Whether a `peer_hash_key_file` that does not exist means a random
    /// key (with a warning) rather than a refused start: for a key mounted
    /// from an optional Kubernetes Secret. Off by default, so a typo in the
    /// path never silently brings back values that change at each restart.
    pub peer_hash_key_optional: bool,
}

impl Config {
    /// How peer addresses and groups are labelled, with the hash key read
    /// if `hashed` (a bad key file is refused here).
    pub fn peer_labels(&self) -> Result<crate::peer::PeerLabels> {
        crate::peer::PeerLabels::from_settings(
            self.peer_addresses,
            self.peer_hash_key_file.as_deref(),
            self.peer_hash_key_optional,
        )
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:9977".parse().unwrap(),
            bpffs: PathBuf::from(rttfair_loader::BpfFs::DEFAULT_ROOT),
            load: Vec::new(),
            unload_on_exit: false,
            per_flow: PerFlow::Off,
            max_flows: 10_000,
            flow_map_entries: None,
            max_groups: DEFAULT_MAX_GROUPS,
            refresh_ms: 0,
            native_flows: false,
            group_prefix_v4: 24,
            group_prefix_v6: 64,
            peer_addresses: Default::default(),
            peer_hash_key_file: None,
            peer_hash_key_optional: false,
        }
    }
}

impl Config {
    /// Read `path`; a missing file at the *default* path means defaults, any
    /// other unreadable file is an error.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let (path, explicit) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_PATH), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config::default())
            }
            Err(e) => bail!("cannot read config {}: {e}", path.display()),
        };
        Config::parse(&text).with_context(|| format!("config {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Config> {
        let c: Config = toml::from_str(text).map_err(|e| {
            // Name the key on the offending line, as "key: reason".
            let key = e
                .span()
                .and_then(|sp| {
                    text[..sp.start.min(text.len())]
                        .lines()
                        .last()
                        .map(|_| sp.start)
                })
                .and_then(|start| {
                    let line_start = text[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
                    text[line_start..]
                        .split('=')
                        .next()
                        .map(|k| k.trim().to_string())
                })
                .filter(|k| {
                    !k.is_empty()
                        && k.len() < 40
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            match key {
                Some(k) => anyhow::anyhow!("{k}: {}", e.message().trim()),
                None => anyhow::anyhow!("{}", e.message().trim().replace('\n', " ")),
            }
        })?;
        c.validate()?;
        Ok(c)
    }

    /// The capabilities this config needs at run time (loader::preflight
    /// has the measurements): CAP_BPF to read the maps, CAP_PERFMON as well
    /// to load CCAs or to read kernel-CCA sockets. Never CAP_NET_ADMIN or
    /// CAP_SYS_ADMIN (the latter only to mount bpffs where none is).
    pub fn required_caps(&self) -> Vec<rttfair_loader::preflight::Cap> {
        use rttfair_loader::preflight::{Cap, ITERATE_SOCKETS, READ_MAPS, REGISTER};
        let mut caps: Vec<Cap> = READ_MAPS.to_vec();
        let mut add = |set: &[Cap]| {
            for c in set {
                if !caps.contains(c) {
                    caps.push(*c);
                }
            }
        };
        if !self.load.is_empty() {
            add(REGISTER);
        }
        if self.native_flows {
            add(ITERATE_SOCKETS);
        }
        caps
    }

    pub fn validate(&self) -> Result<()> {
        for name in &self.load {
            name.parse::<rttfair_loader::Cca>()?;
        }
        if self.max_flows == 0 || self.max_flows > 1_000_000 {
            bail!("max_flows: must be 1..=1000000, got {}", self.max_flows);
        }
        if let Some(n) = self.flow_map_entries {
            let range = rttfair_loader::lifecycle::FLOWS_MAX;
            if !range.contains(&n) {
                bail!(
                    "flow_map_entries: must be {}..={}, got {n}",
                    range.start(),
                    range.end()
                );
            }
        }
        if self.max_groups == 0 || self.max_groups > 10_000 {
            bail!("max_groups: must be 1..=10000, got {}", self.max_groups);
        }
        if self.refresh_ms > 60_000 {
            bail!("refresh_ms: must be 0..=60000, got {}", self.refresh_ms);
        }
        if self.group_prefix_v4 > 32 {
            bail!(
                "group_prefix_v4: must be 0..=32, got {}",
                self.group_prefix_v4
            );
        }
        if self.group_prefix_v6 > 128 {
            bail!(
                "group_prefix_v6: must be 0..=128, got {}",
                self.group_prefix_v6
            );
        }
        // Settings that would do nothing are refused, as the lab's
        // scenarios refuse theirs: the operator meant something else.
        if let Some(f) = &self.peer_hash_key_file {
            if self.peer_addresses != PeerAddresses::Hashed {
                bail!("peer_hash_key_file: only meaningful with peer_addresses = \"hashed\"");
            }
            // The daemon's working directory is not the config's.
            if !f.is_absolute() {
                bail!(
                    "peer_hash_key_file: must be an absolute path, got {}",
                    f.display()
                );
            }
        } else if self.peer_hash_key_optional {
            bail!("peer_hash_key_optional: only meaningful with peer_hash_key_file");
        }
        Ok(())
    }
}

/// Which flows get per-flow series. Per-flow families times flows is ~18
/// series per flow (180k at 10k flows), more than a Prometheus operator
/// accepts by default: the aggregates are always there, per-flow series
/// are opt-in and capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum PerFlow {
    /// No per-flow series: per-CCA histograms and per-group aggregates only.
    Off,
    /// Every flow (up to `max_flows`).
    All,
    /// The N flows with the highest throughput (ties: lowest flow id first).
    Top(usize),
}

impl PerFlow {
    /// How many flows get per-flow series, given the hard cap `max_flows`.
    pub fn limit(self, max_flows: usize) -> usize {
        match self {
            PerFlow::Off => 0,
            PerFlow::All => max_flows,
            PerFlow::Top(n) => n.min(max_flows),
        }
    }
}

impl std::str::FromStr for PerFlow {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "off" => Ok(PerFlow::Off),
            "all" => Ok(PerFlow::All),
            _ => match s.strip_prefix("top:").map(str::parse::<usize>) {
                Some(Ok(n)) if (1..=1_000_000).contains(&n) => Ok(PerFlow::Top(n)),
                _ => bail!(
                    "expected \"off\", \"all\" or \"top:N\" with N in 1..=1000000, got \"{s}\""
                ),
            },
        }
    }
}

impl TryFrom<String> for PerFlow {
    type Error = anyhow::Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_defaults_and_keys_are_checked() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9977");
        assert!(!c.unload_on_exit);
        assert!(Config::parse("listen = \"0.0.0.0:80\"\nload = [\"fairtt\"]").is_ok());
        for bad in [
            "load = [\"cubic\"]",
            "max_flows = 0",
            "listen = \"nope\"",
            "group_prefix_v4 = 33",
            "lsiten = \"x\"",
            "max_flows = -1",
            "per_flow = \"some\"",
            "per_flow = \"top:0\"",
            "per_flow = \"top:x\"",
            "per_flow = 5",
            "refresh_ms = 60001",
            "max_groups = 0",
            "flow_map_entries = 1023",
            "flow_map_entries = 1048577",
            "flow_map_entries = -1",
            "max_groups = 10001",
            "peer_addresses = \"masked\"",
            "peer_hash_key_file = 5",
        ] {
            assert!(Config::parse(bad).is_err(), "{bad} accepted");
        }
        let e = Config::parse("max_flows = \"many\"")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("max_flows: "), "{e}");
        let e = Config::parse("flow_map_entries = 100")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "flow_map_entries: must be 1024..=1048576, got 100");
        let c = Config::parse("flow_map_entries = 16384").unwrap();
        assert_eq!(c.flow_map_entries, Some(16384));
        let e = Config::parse("max_groups = 0").unwrap_err().to_string();
        assert_eq!(e, "max_groups: must be 1..=10000, got 0");
        assert_eq!(Config::parse("").unwrap().max_groups, DEFAULT_MAX_GROUPS);
        let e = Config::parse("per_flow = \"top:0\"")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("per_flow: "), "{e}");
    }

    #[test]
    fn a_peer_hash_key_file_is_only_for_hashed_and_absolute() {
        let c = Config::parse("peer_addresses = \"hashed\"\npeer_hash_key_file = \"/k\"").unwrap();
        assert_eq!(c.peer_hash_key_file.as_deref(), Some(Path::new("/k")));
        assert!(!c.peer_hash_key_optional);
        for (bad, says) in [
            (
                "peer_hash_key_file = \"/k\"",
                "peer_hash_key_file: only meaningful with peer_addresses = \"hashed\"",
            ),
            (
                "peer_addresses = \"dropped\"\npeer_hash_key_file = \"/k\"",
                "peer_hash_key_file: only meaningful with peer_addresses = \"hashed\"",
            ),
            (
                "peer_addresses = \"hashed\"\npeer_hash_key_file = \"k\"",
                "peer_hash_key_file: must be an absolute path, got k",
            ),
            (
                "peer_addresses = \"hashed\"\npeer_hash_key_optional = true",
                "peer_hash_key_optional: only meaningful with peer_hash_key_file",
            ),
        ] {
            assert_eq!(Config::parse(bad).unwrap_err().to_string(), says, "{bad}");
        }
    }

    #[test]
    fn per_flow_is_off_by_default_and_capped() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.per_flow, PerFlow::Off);
        assert_eq!(c.per_flow.limit(c.max_flows), 0);
        let c = Config::parse("per_flow = \"top:100\"\nmax_flows = 50").unwrap();
        assert_eq!(c.per_flow, PerFlow::Top(100));
        assert_eq!(c.per_flow.limit(c.max_flows), 50);
        let c = Config::parse("per_flow = \"all\"").unwrap();
        assert_eq!(c.per_flow.limit(c.max_flows), 10_000);
    }

    #[test]
    fn capabilities_follow_what_the_config_asks_for() {
        use rttfair_loader::preflight::Cap;
        let names = |t: &str| Config::parse(t).unwrap().required_caps();
        assert_eq!(names(""), vec![Cap::Bpf]);
        assert_eq!(names("load = [\"fairtt\"]"), vec![Cap::Bpf, Cap::Perfmon]);
        assert_eq!(names("native_flows = true"), vec![Cap::Bpf, Cap::Perfmon]);
    }

    #[test]
    fn missing_default_file_is_defaults_but_missing_explicit_file_is_an_error() {
        assert!(Config::load(Some(Path::new("/nonexistent/rttfair.toml"))).is_err());
    }
}
