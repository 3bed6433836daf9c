#!/usr/bin/env python3
"""An independent computation of the daemon's `peer_addresses = "hashed"`
values (daemon/src/peer.rs), to cross-check the values its tests pin.

SipHash-2-4 written from its paper (Aumasson and Bernstein, "SipHash: a
fast short-input PRF", 2012), not from the Rust crate the daemon uses, and
checked here against the paper's test vector. Label = "h" + 16 hex digits
of SipHash-2-4(key, tag + bytes): tag b"addr:" then the IPv4 (4) or IPv6
(16) octets, an IPv4-mapped IPv6 address as its IPv4 octets; tag b"group:"
then the group's UTF-8 text.

usage: peer-hash-reference.py [KEY_HEX] (default: 000102...0f)
"""
import ipaddress
import sys

M = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def siphash24(key, msg):
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:], "little")
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & M; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & M; v[3] = rotl(v[3], 16); v[3] ^= v[2]
            v[0] = (v[0] + v[3]) & M; v[3] = rotl(v[3], 21); v[3] ^= v[0]
            v[2] = (v[2] + v[1]) & M; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32)

    tail = len(msg) % 8
    padded = msg[:len(msg) - tail] + msg[len(msg) - tail:] + bytes(7 - tail) + bytes([len(msg) & 0xFF])
    for i in range(0, len(padded), 8):
        m = int.from_bytes(padded[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def addr(key, text):
    ip = ipaddress.ip_address(text)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return f"h{siphash24(key, b'addr:' + ip.packed):016x}"


def group(key, text):
    return f"h{siphash24(key, b'group:' + text.encode()):016x}"


assert siphash24(bytes(range(16)), bytes(range(15))) == 0xA129CA6149BE45E5, "paper's vector"
key = bytes.fromhex(sys.argv[1]) if len(sys.argv) > 1 else bytes(range(16))
assert len(key) == 16, "a key is 32 hex digits"
print("203.0.113.7", addr(key, "203.0.113.7"))
print("2001:db8::1", addr(key, "2001:db8::1"))
print("203.0.113.0/24", group(key, "203.0.113.0/24"))
print("2001:db8::/64", group(key, "2001:db8::/64"))
