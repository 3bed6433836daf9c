//! The kernel's own view of congestion control: what is registered and what
//! new sockets get by default (per network namespace, as the sysctls are).

use std::fs;

use crate::error::{Error, Result};

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const DEFAULT: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// Names the kernel can currently give a socket.
pub fn available_ccas() -> Result<Vec<String>> {
    let s = fs::read_to_string(AVAILABLE).map_err(|e| Error::io(format!("read {AVAILABLE}"), e))?;
    Ok(s.split_whitespace().map(str::to_string).collect())
}

/// Whether `name` is registered with the kernel.
pub fn is_registered(name: &str) -> Result<bool> {
    Ok(available_ccas()?.iter().any(|n| n == name))
}

/// The default congestion control of this network namespace.
pub fn default_cca() -> Result<String> {
    let s = fs::read_to_string(DEFAULT).map_err(|e| Error::io(format!("read {DEFAULT}"), e))?;
    Ok(s.trim().to_string())
}
