//! Links between namespaces: veth pairs with addresses, offloads off, and a
//! rate limit with a drop-tail buffer (HTB + bfifo) where a bottleneck is;
//! or, for the lab's segmenting option, GSO on a sender's link and a
//! bottleneck (TBF + bfifo) that cuts GSO super-packets into MTU packets
//! before they reach the buffer.

use anyhow::{Context, Result};

use crate::net::netns::Netns;

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
    add_buffer(ns, ifname, &limit)
}

/// The drop-tail buffer both bottleneck shapes queue into: bfifo `10:`
/// under class `1:1`, where [`set_buffer`] and the queue readers find it.
fn add_buffer(ns: &Netns, ifname: &str, limit: &str) -> Result<()> {
    ns.exec(
        "tc",
        &[
            "qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:", "bfifo", "limit",
            limit,
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

/// GSO (and TSO, which is what lets the veth carry GSO packets unsegmented)
/// back on for `ifname`: TCP over it builds super-packets of up to 64 kB,
/// and they cross the next hops as one skb each until something segments
/// them ([`shape_segmenting`] does at the bottleneck).
pub fn gso_on(ns: &Netns, ifname: &str) -> Result<()> {
    ns.exec("ethtool", &["-K", ifname, "tso", "on", "gso", "on"])
        .with_context(|| format!("ethtool -K {ifname} tso on gso on"))?;
    Ok(())
}

/// Largest packet the segmenting bottleneck queues whole: one full-size
/// frame. TBF segments every GSO packet longer than this on enqueue.
pub const SEGMENT_BYTES: u64 = crate::scenario::WIRE_PACKET;

/// Peak rate of the segmenting bottleneck's one-frame peak bucket: the
/// bucket is there only to set TBF's largest packet ([`SEGMENT_BYTES`]); at
/// 100 Gbit/s it holds a packet back at most 121 ns after the one before
/// (1 % of a frame's time at 1 Gbit/s), so a burst leaves about as fast as
/// it does from HTB.
pub fn tbf_peak_bit(rate_bit: u64) -> u64 {
    100_000_000_000u64.max(rate_bit.saturating_mul(2))
}

/// The bottleneck as TBF (rate, same burst as HTB's) + the same bfifo
/// (handle "10:", under class 1:1, so [`set_buffer`] and the queue readers
/// work unchanged), for links that carry GSO packets.
///
/// Why TBF: HTB queues a GSO packet whole, so a 64 kB super-packet would
/// be one drop-tail decision and one dequeue. TBF compares each packet
/// with its largest size (the smaller of its burst and its peak bucket)
/// and, if a GSO packet is larger, segments it on enqueue
/// (`sch_tbf.c: tbf_enqueue -> tbf_segment`) and enqueues each segment in
/// the bfifo on its own: the buffer holds, counts and drops MTU packets
/// exactly as with HTB. A one-frame peak bucket makes that size one frame
/// whatever the burst is.
pub fn shape_segmenting(ns: &Netns, ifname: &str, b: Bottleneck) -> Result<()> {
    let rate = format!("{}bit", b.rate_bit);
    let burst = htb_burst_bytes(b.rate_bit).to_string();
    let peak = format!("{}bit", tbf_peak_bit(b.rate_bit));
    let mtu = SEGMENT_BYTES.to_string();
    let limit = b.limit_bytes.to_string();
    ns.exec(
        "tc",
        &[
            "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "tbf", "rate", &rate,
            "burst", &burst, "peakrate", &peak, "mtu", &mtu, "limit", &limit,
        ],
    )?;
    add_buffer(ns, ifname, &limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmenting_peak_rate_is_above_every_rate() {
        // TBF refuses a peak rate at or below its rate (EINVAL).
        for rate in [10_000_000, 1_000_000_000, 40_000_000_000, 100_000_000_000] {
            assert!(tbf_peak_bit(rate) > rate, "{rate}");
        }
        // A frame at the peak rate takes at most 1 % of its time at 1 Gbit/s.
        assert!(SEGMENT_BYTES * 8 * 1_000_000_000 / tbf_peak_bit(1_000_000_000) <= 121);
    }
}
