//! The TCP socket buffers' limit in a namespace (a scenario's
//! `socket_buffer_mb`).
//!
//! A fresh network namespace starts from the kernel's defaults,
//! `net.ipv4.tcp_wmem = 4096 16384 4194304` and `net.ipv4.tcp_rmem = 4096
//! 131072 6291456` (both per namespace). The third value is the most the
//! kernel's autotuning grows a socket's buffer to: the sender's caps its
//! unacknowledged data (data in flight can never exceed the send buffer),
//! the receiver's caps the window it advertises. So a flow's data in
//! flight stays near 4 MB whatever its CCA: a 200 ms flow at 100 Mbit/s
//! (BDP 2.5 MB) runs close to that cap, and at 1 Gbit/s every long-RTT
//! flow is limited by its send buffer, not by its congestion control.
//! Raising the max, min and default kept, lets the CCA decide.

use anyhow::{Context, Result};

use crate::net::netns::Netns;

/// The sysctls [`set_tcp_buffer_max`] sets: the send buffer's and the
/// receive buffer's (min, default, max) in bytes.
pub const TCP_BUFFER_SYSCTLS: [&str; 2] = ["net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"];

/// Set the max (third) value of `net.ipv4.tcp_wmem` and `net.ipv4.tcp_rmem`
/// in `ns` to `max_bytes`, keeping the namespace's own min and default:
/// each triple is read with `sysctl -n` and written back with its third
/// field replaced ([`with_max`]). Called for the sender and the receiver
/// namespaces: the send buffer caps the data in flight, the receive
/// buffer the advertised window (see the module's doc).
pub fn set_tcp_buffer_max(ns: &Netns, max_bytes: u64) -> Result<()> {
    for key in TCP_BUFFER_SYSCTLS {
        let out = ns.exec("sysctl", &["-n", key])?;
        let current = String::from_utf8_lossy(&out.stdout);
        let value = with_max(&current, max_bytes)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{key} in namespace {}", ns.name()))?;
        ns.exec("sysctl", &["-qw", &format!("{key}={value}")])?;
    }
    Ok(())
}

/// A `tcp_wmem`/`tcp_rmem` triple as `sysctl -n` prints it ("4096\t16384\t
/// 4194304\n") with its third value replaced by `max`, space-separated
/// as `sysctl -w` takes it. Refused: anything but three whole numbers, and
/// a max below the default (the kernel would take it, and new sockets
/// would start above their own limit).
pub fn with_max(triple: &str, max: u64) -> Result<String, String> {
    let fields: Vec<&str> = triple.split_whitespace().collect();
    let [min, default, _] = fields[..] else {
        return Err(format!(
            "expected three values (min default max), got {:?}",
            triple.trim()
        ));
    };
    let number = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("not a number of bytes: {v:?} in {:?}", triple.trim()))
    };
    let (min, default) = (number(min)?, number(default)?);
    number(fields[2])?;
    if max < default {
        return Err(format!(
            "a max of {max} bytes is below the default of {default} bytes"
        ));
    }
    Ok(format!("{min} {default} {max}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's defaults as `sysctl -n` prints them: the max replaced,
    /// min and default kept.
    #[test]
    fn replaces_the_third_value_and_keeps_min_and_default() {
        assert_eq!(
            with_max("4096\t16384\t4194304\n", 64 << 20).unwrap(),
            "4096 16384 67108864"
        );
        assert_eq!(
            with_max("4096\t131072\t6291456\n", 64 << 20).unwrap(),
            "4096 131072 67108864"
        );
        // A namespace's own values, spaces or tabs; a lower max too.
        assert_eq!(
            with_max("  8192 87380  16777216 ", 1 << 20).unwrap(),
            "8192 87380 1048576"
        );
        // The max equal to the default is allowed.
        assert_eq!(
            with_max("4096 16384 4194304", 16384).unwrap(),
            "4096 16384 16384"
        );
    }

    #[test]
    fn refuses_what_is_not_a_triple_or_a_max_below_the_default() {
        for (text, says) in [
            ("", "three values"),
            ("4096 16384", "three values"),
            ("4096 16384 4194304 1", "three values"),
            ("4096 lots 4194304", "not a number of bytes: \"lots\""),
            ("4096 16384 -1", "not a number of bytes: \"-1\""),
        ] {
            let e = with_max(text, 64 << 20).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{text:?}: {e}");
        }
        let e = with_max("4096 131072 6291456", 65536).unwrap_err();
        assert!(e.contains("below the default of 131072"), "{e}");
    }
}
