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
//!
//! Nearly every segment extends the stream at its top (at 1 Gbit/s, 83,000
//! a second per link). So the highest run of arrived bytes, `top..high`, is
//! kept out of the set, as two numbers: a segment that starts at `high`
//! extends it and one that starts above `high` opens a new top (the old one
//! goes into the set), with no search of the set. Only a segment that
//! starts below `high` (a retransmission, or data behind a hole) takes the
//! set's path. In a profile of a 1 Gbit/s run the set's searches and
//! inserts were most of the arrival consumer's time (docs/results.md,
//! "What arrival records cost at 1 Gbit/s").

use rangemap::RangeSet;

/// One connection's arrived bytes.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    /// Sequence number of offset 0 (the first payload byte seen).
    base: u32,
    /// Offset just past the highest byte seen.
    high: i64,
    /// Start of the top run: `top..high` has arrived, in full, and is not
    /// in `below` (empty when `top == high`).
    top: i64,
    /// The arrived bytes below `top`.
    below: RangeSet<i64>,
}

impl Scoreboard {
    /// A scoreboard whose offsets count from `first_seq`, the first
    /// segment seen (earlier bytes, e.g. a lost first segment's, get
    /// negative offsets when they arrive).
    pub fn new(first_seq: u32) -> Scoreboard {
        Scoreboard {
            base: first_seq,
            high: 0,
            top: 0,
            below: RangeSet::new(),
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
        if start == self.high {
            // The common case: the next bytes of the stream.
            self.high = end;
            return len as u64;
        }
        if start > self.high {
            // Past a hole: the old top run is now below it.
            if self.top < self.high {
                self.below.insert(self.top..self.high);
            }
            self.top = start;
            self.high = end;
            return len as u64;
        }
        if start >= self.top {
            // Inside the top run: only what reaches past it is new.
            let new = (end - self.high).max(0);
            self.high = self.high.max(end);
            return new as u64;
        }
        self.arrive_below_top(start..end)
    }

    /// A segment that starts below the top run: the set decides, then the
    /// highest range it holds becomes the top run again.
    fn arrive_below_top(&mut self, range: std::ops::Range<i64>) -> u64 {
        if self.top < self.high {
            self.below.insert(self.top..self.high);
        }
        let new: i64 = self.below.gaps(&range).map(|g| g.end - g.start).sum();
        self.high = self.high.max(range.end);
        self.below.insert(range);
        // The set is not empty (it just took `range`), and its highest
        // range ends at `high`, the highest byte seen.
        let last = self.below.last().cloned().unwrap_or(self.high..self.high);
        self.below.remove(last.clone());
        self.top = last.start;
        debug_assert_eq!(last.end, self.high);
        new as u64
    }

    /// Bytes that arrived in all (the connection's unique payload so far).
    #[cfg(test)]
    pub fn unique_bytes(&self) -> u64 {
        let below: u64 = self.below.iter().map(|r| (r.end - r.start) as u64).sum();
        below + (self.high - self.top) as u64
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

    /// The plain set model the fast paths must agree with: every segment
    /// through the range set, nothing kept aside.
    struct Reference {
        base: u32,
        high: i64,
        arrived: RangeSet<i64>,
    }

    impl Reference {
        fn arrive(&mut self, seq: u32, len: u32) -> u64 {
            let high_seq = self.base.wrapping_add(self.high as u32);
            let start = self.high + seq.wrapping_sub(high_seq) as i32 as i64;
            let range = start..start + len as i64;
            let new: i64 = self.arrived.gaps(&range).map(|g| g.end - g.start).sum();
            self.high = self.high.max(range.end);
            self.arrived.insert(range);
            new as u64
        }
    }

    proptest::proptest! {
        /// Segments of a stream in any order, lost, repeated and merged
        /// (as GRO would): the scoreboard counts exactly what the plain
        /// range set counts, segment by segment, across a wrap.
        #[test]
        fn fast_paths_count_what_the_plain_set_counts(
            first in proptest::prelude::any::<u32>(),
            segs in proptest::collection::vec((0u32..64, 1u32..4, 0u8..8), 1..300),
        ) {
            let mut fast = Scoreboard::new(first);
            let mut plain = Reference { base: first, high: 0, arrived: RangeSet::new() };
            for (i, &(at, n, kind)) in segs.iter().enumerate() {
                // Mostly in order (kind 0-4: the next segments), else a
                // segment from anywhere in a 64-segment window around the
                // stream's progress: a retransmission, a jump past a hole.
                let seg = if kind < 5 { i as u32 } else { (i as u32).saturating_sub(32) + at };
                let seq = first.wrapping_add(seg * MSS);
                let len = n * MSS - if kind == 7 { 100 } else { 0 };
                proptest::prop_assert_eq!(fast.arrive(seq, len), plain.arrive(seq, len));
            }
            let unique: u64 = plain.arrived.iter().map(|r| (r.end - r.start) as u64).sum();
            proptest::prop_assert_eq!(fast.unique_bytes(), unique);
        }
    }
}
