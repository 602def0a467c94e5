//! Sets of byte ranges [start, end): the receiver's out-of-order data and
//! the sender's SACK scoreboard (RFC 6675 Section 3) use the same
//! structure. Ranges are kept disjoint and never touching; each query walks
//! only the ranges it needs.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end
    map: BTreeMap<u64, u64>,
    bytes: u64,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Bytes covered.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.first_key_value().map(|(&s, &e)| (s, e))
    }
    pub fn last(&self) -> Option<(u64, u64)> {
        self.map.last_key_value().map(|(&s, &e)| (s, e))
    }
    /// Ranges from the highest down.
    pub fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().rev().map(|(&s, &e)| (s, e))
    }

    /// Add [start, end); returns the merged range that now contains it and
    /// the number of bytes that were not covered before.
    pub fn insert(&mut self, mut start: u64, mut end: u64) -> ((u64, u64), u64) {
        if start >= end {
            return ((start, end), 0);
        }
        let before = self.bytes;
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.map.remove(&s);
                self.bytes -= e - s;
            }
        }
        while let Some((&s, &e)) = self.map.range(start..).next() {
            if s > end {
                break;
            }
            end = end.max(e);
            self.map.remove(&s);
            self.bytes -= e - s;
        }
        self.map.insert(start, end);
        self.bytes += end - start;
        ((start, end), self.bytes - before)
    }

    /// Forget everything below `x` (cumulatively acknowledged or delivered).
    pub fn remove_below(&mut self, x: u64) {
        while let Some((&s, &e)) = self.map.first_key_value() {
            if s >= x {
                break;
            }
            self.map.remove(&s);
            self.bytes -= e - s;
            if e > x {
                self.map.insert(x, e);
                self.bytes += e - x;
                break;
            }
        }
    }

    /// The range containing byte `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        self.map.range(..=x).next_back().filter(|&(_, &e)| e > x).map(|(&s, &e)| (s, e))
    }

    /// Is [start, end) entirely covered?
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.containing(start).is_some_and(|(_, e)| e >= end)
    }

    /// Bytes of [a, b) that are covered.
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut n = 0;
        let first = self.map.range(..=a).next_back().map_or(a, |(&s, _)| s);
        for (&s, &e) in self.map.range(first..b) {
            n += e.min(b).saturating_sub(s.max(a));
        }
        n
    }

    /// The first byte >= `x` that is not covered, and where the next covered
    /// range begins above it (u64::MAX if none).
    pub fn next_gap(&self, x: u64) -> (u64, u64) {
        let start = self.containing(x).map_or(x, |(_, e)| e);
        let next = self.map.range(start..).next().map_or(u64::MAX, |(&s, _)| s);
        (start, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts_new_bytes() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), ((10, 20), 10));
        assert_eq!(r.insert(30, 40), ((30, 40), 10));
        assert_eq!(r.insert(15, 35), ((10, 40), 10), "fills the gap 20..30 only");
        assert_eq!(r.insert(40, 50), ((10, 50), 10), "touching ranges merge");
        assert_eq!(r.insert(12, 18), ((10, 50), 0));
        assert_eq!((r.len(), r.bytes()), (1, 40));
    }

    #[test]
    fn queries() {
        let mut r = RangeSet::default();
        r.insert(10, 20);
        r.insert(30, 40);
        assert_eq!(r.covered_in(0, 100), 20);
        assert_eq!(r.covered_in(15, 35), 10);
        assert_eq!(r.covered_in(20, 30), 0);
        assert!(r.covers(12, 20) && !r.covers(12, 21));
        assert_eq!(r.next_gap(0), (0, 10));
        assert_eq!(r.next_gap(12), (20, 30));
        assert_eq!(r.next_gap(35), (40, u64::MAX));
        r.remove_below(15);
        assert_eq!((r.first(), r.bytes()), (Some((15, 20)), 15));
        r.remove_below(100);
        assert!(r.is_empty() && r.bytes() == 0);
    }
}
