//! The records of the lab's arrival counter (`bpf/lab_arrivals.bpf.c`):
//! one per data segment that reached the lab's receivers, decoded once here
//! from the generated mirror of `struct rttfair_lab_arrival` so the lab
//! never re-types the layout.

use std::net::{Ipv4Addr, SocketAddrV4};

use crate::abi::{self, RawLabArrival};

/// One data segment (or GRO packet) as it arrived at the receivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival time, CLOCK_MONOTONIC nanoseconds.
    pub t_ns: u64,
    /// The sender's end of the connection.
    pub src: SocketAddrV4,
    /// The receiver's end of the connection.
    pub dst: SocketAddrV4,
    /// Sequence number of the first payload byte.
    pub seq: u32,
    /// Payload bytes.
    pub len: u32,
}

impl Arrival {
    /// Decode one ring-buffer record; `None` if it is not one (wrong size).
    pub fn decode(bytes: &[u8]) -> Option<Arrival> {
        let r: RawLabArrival = abi::from_bytes(bytes)?;
        let addr =
            |a: u32, p: u16| SocketAddrV4::new(Ipv4Addr::from(u32::from_be(a)), u16::from_be(p));
        Some(Arrival {
            t_ns: r.t_ns,
            src: addr(r.saddr, r.sport),
            dst: addr(r.daddr, r.dport),
            seq: r.seq,
            len: r.len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_network_order_addresses_and_ports() {
        let raw = RawLabArrival {
            t_ns: 42,
            saddr: u32::from(Ipv4Addr::new(10, 10, 1, 2)).to_be(),
            daddr: u32::from(Ipv4Addr::new(10, 20, 0, 1)).to_be(),
            sport: 40000u16.to_be(),
            dport: 5201u16.to_be(),
            seq: 7,
            len: 1448,
            ..Default::default()
        };
        let a = Arrival::decode(&abi::to_bytes(&raw)).unwrap();
        assert_eq!(a.src, "10.10.1.2:40000".parse().unwrap());
        assert_eq!(a.dst, "10.20.0.1:5201".parse().unwrap());
        assert_eq!((a.t_ns, a.seq, a.len), (42, 7, 1448));
        assert_eq!(Arrival::decode(&[0u8; 5]), None);
    }
}
