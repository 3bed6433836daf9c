//! What the daemon reveals of the remote end of each flow.
//!
//! `rttfair_flow_info` carries the peer's address and port, and the
//! `group` label of `rttfair_flow_info` and `rttfair_group_jain_index_ratio`
//! the peer's prefix: who this host talks to. Where the scrape leaves the
//! host, `peer_addresses` in the config chooses:
//!
//! - `full` (default): as they are;
//! - `hashed`: `h` and 16 hex digits, a keyed hash (SipHash-2-4, 128-bit
//!   key) of the address or group, so flows to the same peer or group share
//!   a label value but the value cannot be reversed by hashing all IPv4
//!   addresses without the key. The port stays as it is;
//! - `dropped`: no peer address or port; the group label is empty, so
//!   per-group fairness becomes one group per CCA.
//!
//! The key of `hashed` ([`PeerKey`]):
//!
//! - with `peer_hash_key_file`, read once at start from that file: a value
//!   is the same across restarts and on every host with the same file, so
//!   Prometheus keeps one series per peer or group through a rollout and
//!   groups can be summed across a fleet;
//! - without it, drawn at random at each start: values change at every
//!   restart (each restart starts new series) and differ between hosts.
//!
//! The key file holds exactly 32 hex digits (128 bits, either case),
//! optionally followed by one newline; make one with
//! `umask 077; od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > FILE`. A file
//! that cannot be read or holds anything else is refused at start, naming
//! the file (with `peer_hash_key_optional`, one that does not exist means a
//! random key and a warning instead: an optional Kubernetes Secret). A file
//! readable by every user is used but warned about: whoever reads the key
//! can reverse the values by hashing candidate addresses.
//!
//! What is hashed is a fixed byte string, not std's `Hash` of `IpAddr` or
//! `String` (whose bytes Rust does not promise to keep), so a key gives the
//! same values across daemon builds: a tag (`addr:` or `group:`, which
//! differ in their first byte, so an address and a group never hash the
//! same input) followed by the address's 4 (IPv4) or 16 (IPv6) octets or
//! the group's UTF-8 text. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
//! an IPv4 peer of a dual-stack socket) is hashed as its IPv4 form, as its
//! group already is ([`crate::collector`]), so one peer has one value
//! whichever socket reached it.

use std::hash::Hasher;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use siphasher::sip::SipHasher24;

/// The config's `peer_addresses`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerAddresses {
    #[default]
    Full,
    Hashed,
    Dropped,
}

/// The 128-bit key of `hashed`. Its Debug never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct PeerKey([u8; 16]);

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

/// Longest key file accepted: 32 hex digits and "\r\n". Reading stops
/// past it, so a key file pointed at a device or a huge file is refused
/// without reading it all.
const KEY_FILE_MAX: u64 = 34;

impl PeerKey {
    /// A key from the OS's random source: values hashed with it change
    /// when the daemon restarts and differ between hosts.
    pub fn random() -> Result<PeerKey> {
        let mut k = [0u8; 16];
        getrandom::getrandom(&mut k).map_err(|e| anyhow!("cannot draw a peer hash key: {e}"))?;
        Ok(PeerKey(k))
    }

    /// A key file's contents: exactly 32 hex digits, optionally followed
    /// by "\n" or "\r\n". The reason for a refusal never quotes the file.
    pub fn parse(text: &[u8]) -> std::result::Result<PeerKey, String> {
        let digits = text
            .strip_suffix(b"\n")
            .map(|t| t.strip_suffix(b"\r").unwrap_or(t))
            .unwrap_or(text);
        if let Some(i) = digits.iter().position(|b| !b.is_ascii_hexdigit()) {
            return Err(format!(
                "must hold 32 hex digits and at most a newline, found another character at byte {i}"
            ));
        }
        if digits.len() != 32 {
            return Err(format!(
                "must hold 32 hex digits (a 128-bit key), found {}",
                digits.len()
            ));
        }
        let mut k = [0u8; 16];
        for (byte, pair) in k.iter_mut().zip(digits.chunks_exact(2)) {
            // Both are ASCII hex digits (checked above).
            let pair = std::str::from_utf8(pair).expect("ASCII");
            *byte = u8::from_str_radix(pair, 16).expect("hex digits");
        }
        Ok(PeerKey(k))
    }

    /// The key in `path`. `Ok(None)`: the file does not exist and
    /// `optional` allows that. Every refusal is one line naming the file.
    pub fn read(path: &Path, optional: bool) -> Result<Option<PeerKey>> {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => bail!("cannot read peer_hash_key_file {}: {e}", path.display()),
        };
        let mut text = Vec::new();
        file.take(KEY_FILE_MAX + 1)
            .read_to_end(&mut text)
            .map_err(|e| anyhow!("cannot read peer_hash_key_file {}: {e}", path.display()))?;
        let key = PeerKey::parse(&text)
            .map_err(|why| anyhow!("peer_hash_key_file {}: {why}", path.display()))?;
        if let Ok(meta) = std::fs::metadata(path) {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o004 != 0 {
                tracing::warn!(
                    "peer_hash_key_file {} is readable by every user (mode {mode:04o}): \
                     whoever reads the key can reverse the hashed peer_addr and group \
                     values by hashing candidate addresses; chmod 600 it",
                    path.display()
                );
            }
        }
        Ok(Some(key))
    }

    /// The key the config asks for: from `key_file` (`peer_hash_key_file`)
    /// if set (and there, unless `optional` and absent), else random.
    fn from_file_or_random(key_file: Option<&Path>, optional: bool) -> Result<PeerKey> {
        let Some(path) = key_file else {
            tracing::info!(
                "peer_addresses = \"hashed\" with a key drawn at this start (no \
                 peer_hash_key_file): hashed values change when the daemon restarts"
            );
            return PeerKey::random();
        };
        match PeerKey::read(path, optional)? {
            Some(key) => Ok(key),
            None => {
                tracing::warn!(
                    "peer_hash_key_file {} does not exist (peer_hash_key_optional): hashing \
                     with a key drawn at this start, so peer_addr and group values change \
                     when the daemon restarts and differ between hosts",
                    path.display()
                );
                PeerKey::random()
            }
        }
    }
}

/// Renders the peer labels under one mode, with one hash key per daemon.
#[derive(Clone, Default)]
pub struct PeerLabels {
    mode: PeerAddresses,
    /// Keyed once; each value hashes a copy. Unused unless `Hashed`.
    hasher: SipHasher24,
}

impl std::fmt::Debug for PeerLabels {
    // Not derived: SipHasher24's Debug would print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLabels")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl PeerLabels {
    pub fn new(mode: PeerAddresses, key: &PeerKey) -> Self {
        PeerLabels {
            mode,
            hasher: SipHasher24::new_with_key(&key.0),
        }
    }

    /// The labels the config's `peer_addresses`, `peer_hash_key_file` and
    /// `peer_hash_key_optional` ask for, reading the key only for `hashed`
    /// (what the daemon does at start, before it binds or touches BPF;
    /// [`crate::config::Config::peer_labels`]).
    pub fn from_settings(
        mode: PeerAddresses,
        key_file: Option<&Path>,
        key_optional: bool,
    ) -> Result<Self> {
        let key = match mode {
            PeerAddresses::Hashed => PeerKey::from_file_or_random(key_file, key_optional)?,
            // Never used: these modes hash nothing.
            PeerAddresses::Full | PeerAddresses::Dropped => PeerKey([0; 16]),
        };
        Ok(PeerLabels::new(mode, &key))
    }

    /// `h` and the 16 hex digits of SipHash-2-4 over `tag` then `bytes`.
    /// SipHash because it is a PRF made for short inputs, with a 128-bit
    /// key and a 64-bit output (the label's width), defined on bytes, and
    /// cheap enough for a group per flow at every scrape of 10k flows.
    fn hash(&self, tag: &[u8], bytes: &[u8]) -> String {
        let mut h = self.hasher;
        h.write(tag);
        h.write(bytes);
        format!("h{:016x}", h.finish())
    }

    fn hash_ip(&self, ip: IpAddr) -> String {
        match ip.to_canonical() {
            IpAddr::V4(a) => self.hash(b"addr:", &a.octets()),
            IpAddr::V6(a) => self.hash(b"addr:", &a.octets()),
        }
    }

    /// The `peer_addr` and `peer_port` label values.
    pub fn address(&self, peer: SocketAddr) -> (String, String) {
        match self.mode {
            PeerAddresses::Full => (peer.ip().to_string(), peer.port().to_string()),
            PeerAddresses::Hashed => (self.hash_ip(peer.ip()), peer.port().to_string()),
            PeerAddresses::Dropped => (String::new(), String::new()),
        }
    }

    /// The `group` label value for the peer's prefix `group`.
    pub fn group(&self, group: String) -> String {
        match self.mode {
            PeerAddresses::Full => group,
            PeerAddresses::Hashed => self.hash(b"group:", group.as_bytes()),
            PeerAddresses::Dropped => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key 000102...0f, SipHash's own test key.
    fn test_key() -> PeerKey {
        PeerKey::parse(b"000102030405060708090a0b0c0d0e0f\n").unwrap()
    }

    fn hashed(key: &PeerKey) -> PeerLabels {
        PeerLabels::new(PeerAddresses::Hashed, key)
    }

    #[test]
    fn hashed_is_stable_per_key_and_hides_the_address() {
        let key = PeerKey::random().unwrap();
        let p = hashed(&key);
        let a: SocketAddr = "203.0.113.7:443".parse().unwrap();
        let b: SocketAddr = "203.0.113.7:8443".parse().unwrap();
        let (ha, port) = p.address(a);
        assert_eq!(ha, p.address(b).0, "same peer, same value");
        assert_eq!(port, "443");
        assert!(!ha.contains("203.0.113"), "{ha}");
        assert_ne!(ha, p.address("203.0.113.8:443".parse().unwrap()).0);
        // A restart, or another host, with the same key file.
        let again = hashed(&key);
        assert_eq!(again.address(a), p.address(a));
        assert_eq!(
            again.group("203.0.113.0/24".into()),
            p.group("203.0.113.0/24".into())
        );
        // A different key: a dictionary built under one key says nothing
        // about another.
        let other = hashed(&PeerKey::random().unwrap());
        assert_ne!(ha, other.address(a).0);
        assert_ne!(
            p.group("203.0.113.0/24".into()),
            other.group("203.0.113.0/24".into())
        );
    }

    #[test]
    fn an_address_and_a_group_of_the_same_text_differ() {
        let p = hashed(&test_key());
        for text in ["203.0.113.7", "2001:db8::1", "::ffff:203.0.113.7"] {
            let ip: IpAddr = text.parse().unwrap();
            assert_ne!(p.address(SocketAddr::new(ip, 1)).0, p.group(text.into()));
        }
    }

    #[test]
    fn an_ipv4_mapped_peer_is_its_ipv4_address() {
        let p = hashed(&test_key());
        let v4 = p.address("203.0.113.7:443".parse().unwrap()).0;
        let mapped = p.address("[::ffff:203.0.113.7]:443".parse().unwrap()).0;
        assert_eq!(v4, mapped);
        // Only mapped addresses: a real IPv6 peer keeps its own value.
        let v6 = p.address("[2001:db8::cb00:7107]:443".parse().unwrap()).0;
        assert_ne!(v4, v6);
    }

    /// The primitive is SipHash-2-4 as its authors define it: the paper's
    /// test vector (Aumasson and Bernstein, "SipHash: a fast short-input
    /// PRF", appendix A: key 00..0f, message 00..0e).
    #[test]
    fn the_hash_is_siphash_2_4() {
        let h = SipHasher24::new_with_key(&test_key().0);
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(h.hash(&msg), 0xa129ca6149be45e5);
    }

    /// Pinned values under a fixed key: a change here renames every hashed
    /// series of every fleet, so it must be deliberate. Computed with this
    /// code and, independently, with scripts/peer-hash-reference.py (a
    /// Python SipHash-2-4 written from the paper, checked against the
    /// paper's vector), which prints these four lines.
    #[test]
    fn values_under_a_fixed_key_are_pinned() {
        let p = hashed(&test_key());
        let addr = |s: &str| p.address(s.parse().unwrap()).0;
        assert_eq!(addr("203.0.113.7:443"), "h9ca503a8abd391d2");
        assert_eq!(addr("[2001:db8::1]:443"), "hc3a406b1a392e0fe");
        assert_eq!(p.group("203.0.113.0/24".into()), "h8d822c202d894ae6");
        assert_eq!(p.group("2001:db8::/64".into()), "h7608ad656cdab615");
    }

    #[test]
    fn key_files_are_32_hex_digits() {
        let k = |t: &[u8]| PeerKey::parse(t).map(|k| k.0);
        let want: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(k(b"000102030405060708090a0b0c0d0e0f"), Ok(want));
        assert_eq!(k(b"000102030405060708090A0B0C0D0E0F\r\n"), Ok(want));
        for bad in [
            &b""[..],
            b"\n",
            b"000102030405060708090a0b0c0d0e0",
            b"000102030405060708090a0b0c0d0e0f0",
            b"000102030405060708090a0b0c0d0e0f\n\n",
            b" 000102030405060708090a0b0c0d0e0f",
            b"000102030405060708090a0b0c0d0e0g",
            b"0x0102030405060708090a0b0c0d0e0f",
            &[0u8; 16][..],
        ] {
            assert!(k(bad).is_err(), "{bad:?} accepted");
        }
    }

    /// Every refused key file is one line naming the file, and says why
    /// without quoting the file's contents.
    #[test]
    fn refused_key_files_are_one_line_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let cases = [
            (write("short", b"00010203\n"), "found 8"),
            (write("long", &[b'a'; 4096]), "found 35"),
            (
                write("malformed", b"zz0102030405060708090a0b0c0d0e0f\n"),
                "another character at byte 0",
            ),
            (write("empty", b""), "found 0"),
            (dir.path().join("absent"), "No such file"),
            (dir.path().to_path_buf(), "cannot read"),
        ];
        for (path, why) in &cases {
            for optional in [false, true] {
                if optional && why == &"No such file" {
                    continue; // the one case optional allows
                }
                let e = PeerKey::read(path, optional).unwrap_err().to_string();
                assert!(!e.contains('\n'), "{e}");
                assert!(e.contains(&path.display().to_string()), "{e}");
                assert!(e.contains(why), "{e}");
                assert!(!e.contains("zz01"), "quotes the file: {e}");
            }
        }
    }

    #[test]
    fn an_optional_key_file_may_be_absent_but_not_bad() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("key");
        assert_eq!(PeerKey::read(&absent, true).unwrap(), None);
        assert!(PeerKey::read(&absent, false).is_err());
        std::fs::write(&absent, "00010203\n").unwrap();
        assert!(PeerKey::read(&absent, true).is_err());
        std::fs::write(&absent, "000102030405060708090a0b0c0d0e0f\n").unwrap();
        assert_eq!(PeerKey::read(&absent, true).unwrap(), Some(test_key()));
    }

    #[test]
    fn the_config_chooses_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "000102030405060708090a0b0c0d0e0f\n").unwrap();
        let a: SocketAddr = "203.0.113.7:443".parse().unwrap();
        let labels = |file: Option<&Path>, optional: bool| {
            PeerLabels::from_settings(PeerAddresses::Hashed, file, optional)
                .unwrap()
                .address(a)
                .0
        };
        // The file's key: the same value at every start.
        assert_eq!(labels(Some(&file), false), hashed(&test_key()).address(a).0);
        assert_eq!(labels(Some(&file), false), labels(Some(&file), false));
        // No file: a new key at every start.
        assert_ne!(labels(None, false), labels(None, false));
        // Optional and absent: a random key, not a refused start.
        let absent = dir.path().join("absent");
        assert_ne!(labels(Some(&absent), true), labels(Some(&absent), true));
        let e = PeerLabels::from_settings(PeerAddresses::Hashed, Some(&absent), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent"), "{e}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let p = hashed(&test_key());
        let shown = format!("{p:?} {:?}", test_key());
        // k0 of that key, in hex and in decimal.
        assert!(!shown.contains("706050403020100"), "{shown}");
        assert!(
            !shown.contains(&0x0706050403020100u64.to_string()),
            "{shown}"
        );
        assert!(!shown.contains("k0") && !shown.contains("k1"), "{shown}");
    }

    #[test]
    fn dropped_and_full() {
        let a: SocketAddr = "[2001:db8::1]:80".parse().unwrap();
        let d = PeerLabels::new(PeerAddresses::Dropped, &test_key());
        assert_eq!(d.address(a), (String::new(), String::new()));
        assert_eq!(d.group("2001:db8::/64".into()), "");
        let f = PeerLabels::new(PeerAddresses::Full, &test_key());
        assert_eq!(f.address(a), ("2001:db8::1".into(), "80".into()));
    }
}
