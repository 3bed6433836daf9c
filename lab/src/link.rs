//! Links between namespaces: veth pairs with addresses, offloads off, and a
//! rate limit with a drop-tail buffer (HTB + bfifo) where a bottleneck is.

use anyhow::{Context, Result};

use crate::netns::Netns;

/// Create a veth pair `a_if` (in `a`) <-> `b_if` (in `b`), both up.
pub fn veth(a: &Netns, a_if: &str, b: &Netns, b_if: &str) -> Result<()> {
    a.ip(&[
        "link",
        "add",
        a_if,
        "type",
        "veth",
        "peer",
        "name",
        b_if,
        "netns",
        b.name(),
    ])
    .with_context(|| format!("veth {}:{a_if} <-> {}:{b_if}", a.name(), b.name()))?;
    a.ip(&["link", "set", a_if, "up"])?;
    b.ip(&["link", "set", b_if, "up"])?;
    offloads_off(a, a_if)?;
    offloads_off(b, b_if)?;
    Ok(())
}

/// Assign `cidr` (e.g. "10.1.0.1/24") to an interface.
pub fn addr(ns: &Netns, ifname: &str, cidr: &str) -> Result<()> {
    ns.ip(&["addr", "add", cidr, "dev", ifname])?;
    Ok(())
}

/// TSO/GSO/GRO off, so qdiscs and the delay element see MTU-size packets and
/// a bottleneck's buffer counts real packets.
pub fn offloads_off(ns: &Netns, ifname: &str) -> Result<()> {
    ns.exec(
        "ethtool",
        &["-K", ifname, "tso", "off", "gso", "off", "gro", "off"],
    )
    .with_context(|| format!("ethtool -K {ifname} (is ethtool installed?)"))?;
    Ok(())
}

/// A bottleneck: `rate_bit` bit/s, drop-tail buffer of `limit_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct Bottleneck {
    pub rate_bit: u64,
    pub limit_bytes: u64,
}

/// HTB's burst (and cburst) at `rate_bit`: at least one HZ tick of data
/// (HZ=250) so HTB can hold the rate. Over any span the bottleneck sends at
/// most rate x span + this many bytes.
pub fn htb_burst_bytes(rate_bit: u64) -> u64 {
    (rate_bit / 8 / 250).max(3000)
}

/// Install the bottleneck as HTB (rate) + bfifo (buffer) on `ifname`'s egress.
pub fn shape(ns: &Netns, ifname: &str, b: Bottleneck) -> Result<()> {
    let rate = format!("{}bit", b.rate_bit);
    let burst = format!("{}b", htb_burst_bytes(b.rate_bit));
    let limit = b.limit_bytes.to_string();
    ns.exec(
        "tc",
        &[
            "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "htb", "default", "1",
        ],
    )?;
    ns.exec(
        "tc",
        &[
            "class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", &rate,
            "ceil", &rate, "burst", &burst, "cburst", &burst,
        ],
    )?;
    ns.exec(
        "tc",
        &[
            "qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:", "bfifo", "limit",
            &limit,
        ],
    )?;
    Ok(())
}

/// Change the drop-tail buffer of a bottleneck built by [`shape`].
pub fn set_buffer(ns: &Netns, ifname: &str, limit_bytes: u64) -> Result<()> {
    let limit = limit_bytes.to_string();
    ns.exec(
        "tc",
        &[
            "qdisc", "change", "dev", ifname, "parent", "1:1", "handle", "10:", "bfifo", "limit",
            &limit,
        ],
    )?;
    Ok(())
}
