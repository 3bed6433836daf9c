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

/// Set the default congestion control of the calling thread's network
/// namespace (net.ipv4.tcp_congestion_control).
pub fn set_default_here(name: &str) -> Result<()> {
    if !is_registered(name)? {
        return Err(Error::NotLoaded {
            cca: name.to_string(),
        });
    }
    fs::write(DEFAULT, name).map_err(|e| Error::io(format!("write {DEFAULT}"), e))
}

/// Run `f` on a thread inside the named network namespace (/run/netns/NAME).
pub fn in_netns<T: Send + 'static>(
    netns: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    use std::os::fd::AsFd;
    let path = format!("/run/netns/{netns}");
    let file = fs::File::open(&path)
        .map_err(|e| Error::io(format!("network namespace {netns} ({path})"), e))?;
    std::thread::spawn(move || -> Result<T> {
        nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::io("setns", e.into()))?;
        f()
    })
    .join()
    .map_err(|_| Error::io("netns thread", std::io::Error::other("panicked")))?
}
