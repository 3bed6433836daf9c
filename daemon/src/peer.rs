//! What the daemon reveals of the remote end of each flow.
//!
//! `rttfair_flow_info` carries the peer's address and port, and the
//! `group` label of `rttfair_flow_info` and `rttfair_group_jain_index_ratio`
//! the peer's prefix: who this host talks to. Where the scrape leaves the
//! host, `peer_addresses` in the config chooses:
//!
//! - `full` (default): as they are;
//! - `hashed`: a keyed hash (SipHash, std's `RandomState`, key drawn at
//!   start), so flows to the same peer or group still share a label value
//!   but the value cannot be reversed by hashing all IPv4 addresses; values
//!   change when the daemon restarts and differ between hosts;
//! - `dropped`: no peer address or port; the group label is empty, so
//!   per-group fairness becomes one group per CCA.

use std::hash::{BuildHasher, Hash};
use std::net::SocketAddr;

use serde::Deserialize;

/// The config's `peer_addresses`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerAddresses {
    #[default]
    Full,
    Hashed,
    Dropped,
}

/// Renders the peer labels under one mode, with one hash key per daemon.
#[derive(Debug, Default)]
pub struct PeerLabels {
    mode: PeerAddresses,
    key: std::hash::RandomState,
}

impl PeerLabels {
    pub fn new(mode: PeerAddresses) -> Self {
        PeerLabels {
            mode,
            key: std::hash::RandomState::new(),
        }
    }

    fn hash(&self, v: impl Hash) -> String {
        format!("h{:016x}", self.key.hash_one(v))
    }

    /// The `peer_addr` and `peer_port` label values.
    pub fn address(&self, peer: SocketAddr) -> (String, String) {
        match self.mode {
            PeerAddresses::Full => (peer.ip().to_string(), peer.port().to_string()),
            PeerAddresses::Hashed => (self.hash(peer.ip()), peer.port().to_string()),
            PeerAddresses::Dropped => (String::new(), String::new()),
        }
    }

    /// The `group` label value for the peer's prefix `group`.
    pub fn group(&self, group: String) -> String {
        match self.mode {
            PeerAddresses::Full => group,
            PeerAddresses::Hashed => self.hash(&group),
            PeerAddresses::Dropped => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_is_stable_per_daemon_and_hides_the_address() {
        let p = PeerLabels::new(PeerAddresses::Hashed);
        let a: SocketAddr = "203.0.113.7:443".parse().unwrap();
        let b: SocketAddr = "203.0.113.7:8443".parse().unwrap();
        let (ha, port) = p.address(a);
        assert_eq!(ha, p.address(b).0, "same peer, same value");
        assert_eq!(port, "443");
        assert!(!ha.contains("203.0.113"), "{ha}");
        assert_ne!(ha, p.address("203.0.113.8:443".parse().unwrap()).0);
        assert_ne!(
            ha,
            PeerLabels::new(PeerAddresses::Hashed).address(a).0,
            "keyed per daemon: not reversible by a dictionary"
        );
        assert_eq!(
            p.group("203.0.113.0/24".into()),
            p.group("203.0.113.0/24".into())
        );
    }

    #[test]
    fn dropped_and_full() {
        let a: SocketAddr = "[2001:db8::1]:80".parse().unwrap();
        let d = PeerLabels::new(PeerAddresses::Dropped);
        assert_eq!(d.address(a), (String::new(), String::new()));
        assert_eq!(d.group("2001:db8::/64".into()), "");
        let f = PeerLabels::new(PeerAddresses::Full);
        assert_eq!(f.address(a), ("2001:db8::1".into(), "80".into()));
    }
}
