//! A receiver's scoreboard for one TCP connection: which bytes of the
//! sender's stream have arrived, so that each arriving segment can say how
//! many of its bytes arrive for the first time (the goodput it adds).
//!
//! Retransmissions of bytes that already arrived add nothing; a segment
//! after a hole adds its own bytes, and the hole's bytes count when the
//! retransmission that fills it arrives, not before. Sequence numbers are
//! unwrapped to a 64-bit offset from the first byte seen, with serial-number
//! arithmetic (RFC 1982) against the highest byte seen: any segment within
//! 2^31 bytes of it (every segment TCP can send) maps to the right offset,
//! across any number of wraps of the 32-bit space.
//!
//! The set of arrived ranges is a [`rangemap::RangeSet`] (a well-kept,
//! dependency-free interval set with gap queries) rather than hand-written
//! interval code: merging, splitting and gap-finding are where such code
//! goes wrong. It holds one range per hole, and holes close as
//! retransmissions arrive.

use rangemap::RangeSet;

/// One connection's arrived bytes.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    /// Sequence number of offset 0 (the first payload byte seen).
    base: u32,
    /// Offset just past the highest byte seen.
    high: i64,
    arrived: RangeSet<i64>,
}

impl Scoreboard {
    /// A scoreboard whose offsets count from `first_seq`, the first
    /// segment seen (earlier bytes, e.g. a lost first segment's, get
    /// negative offsets when they arrive).
    pub fn new(first_seq: u32) -> Scoreboard {
        Scoreboard {
            base: first_seq,
            high: 0,
            arrived: RangeSet::new(),
        }
    }

    /// Record a segment of `len` payload bytes starting at `seq`; returns
    /// how many of them had not arrived before.
    pub fn arrive(&mut self, seq: u32, len: u32) -> u64 {
        if len == 0 {
            return 0;
        }
        let start = self.offset_of(seq);
        let end = start + len as i64;
        let range = start..end;
        let new: i64 = self.arrived.gaps(&range).map(|g| g.end - g.start).sum();
        self.arrived.insert(range);
        self.high = self.high.max(end);
        new as u64
    }

    /// Bytes that arrived in all (the connection's unique payload so far).
    pub fn unique_bytes(&self) -> u64 {
        self.arrived.iter().map(|r| (r.end - r.start) as u64).sum()
    }

    /// The offset of `seq`: the one nearest the highest byte seen.
    fn offset_of(&self, seq: u32) -> i64 {
        let high_seq = self.base.wrapping_add(self.high as u32);
        self.high + seq.wrapping_sub(high_seq) as i32 as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    #[test]
    fn in_order_segments_count_once_and_duplicates_not_at_all() {
        let mut s = Scoreboard::new(1000);
        assert_eq!(s.arrive(1000, MSS), MSS as u64);
        assert_eq!(s.arrive(1000 + MSS, MSS), MSS as u64);
        // A spurious retransmission, and one overlapping new data.
        assert_eq!(s.arrive(1000, MSS), 0);
        assert_eq!(s.arrive(1000 + MSS + 100, MSS), 100);
        assert_eq!(s.unique_bytes(), 2 * MSS as u64 + 100);
    }

    #[test]
    fn a_hole_counts_when_it_is_filled_not_when_data_passes_it() {
        let mut s = Scoreboard::new(0);
        assert_eq!(s.arrive(0, MSS), MSS as u64);
        // Segments 1 and 2 lost; 3 and 4 arrive: only their own bytes.
        assert_eq!(s.arrive(3 * MSS, MSS), MSS as u64);
        assert_eq!(s.arrive(4 * MSS, MSS), MSS as u64);
        // The retransmissions fill the hole, in two pieces.
        assert_eq!(s.arrive(2 * MSS, MSS), MSS as u64);
        assert_eq!(s.arrive(MSS, MSS), MSS as u64);
        assert_eq!(s.arrive(MSS, 4 * MSS), 0);
        assert_eq!(s.unique_bytes(), 5 * MSS as u64);
    }

    #[test]
    fn a_gro_packet_is_its_segments_together() {
        let mut a = Scoreboard::new(0);
        let mut b = Scoreboard::new(0);
        let one_by_one: u64 = (0..10).map(|k| a.arrive(k * MSS, MSS)).sum();
        // The same bytes as one merged packet, then a partly new one.
        assert_eq!(b.arrive(0, 10 * MSS), one_by_one);
        assert_eq!(b.arrive(8 * MSS, 4 * MSS), 2 * MSS as u64);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let first = u32::MAX - 2 * MSS + 1;
        let mut s = Scoreboard::new(first);
        let mut seq = first;
        let mut total = 0;
        // Across the wrap, with a hole across it filled afterwards.
        for k in 0..6u32 {
            if k != 2 {
                total += s.arrive(seq, MSS);
            }
            seq = seq.wrapping_add(MSS);
        }
        assert_eq!(total, 5 * MSS as u64);
        assert_eq!(s.arrive(first.wrapping_add(2 * MSS), MSS), MSS as u64);
        assert_eq!(s.arrive(first.wrapping_add(2 * MSS), 2 * MSS), 0);
        assert_eq!(s.unique_bytes(), 6 * MSS as u64);
    }

    #[test]
    fn many_wraps_of_a_long_transfer() {
        // 10 GB in 64 KiB segments: the 32-bit space wraps twice; every
        // byte counts once.
        let mut s = Scoreboard::new(12345);
        let seg = 65536u32;
        let n = 10_000_000_000u64 / seg as u64;
        let mut seq = 12345u32;
        let mut total = 0u64;
        for _ in 0..n {
            total += s.arrive(seq, seg);
            seq = seq.wrapping_add(seg);
        }
        assert_eq!(total, n * seg as u64);
        assert_eq!(s.arrive(seq.wrapping_sub(seg), seg), 0);
    }

    #[test]
    fn bytes_before_the_first_seen_segment_count_when_they_arrive() {
        // The first segment was lost; the second arrived first.
        let mut s = Scoreboard::new(5000 + MSS);
        assert_eq!(s.arrive(5000 + MSS, MSS), MSS as u64);
        assert_eq!(s.arrive(5000, MSS), MSS as u64);
        assert_eq!(s.unique_bytes(), 2 * MSS as u64);
    }
}
