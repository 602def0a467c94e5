//! Sets of byte ranges [start, end): the receiver's out-of-order data and
//! the sender's SACK scoreboard (RFC 6675 Section 3) use the same
//! structure. Ranges are kept disjoint and never touching; each query walks
//! only the ranges it needs.

use std::collections::{BTreeMap, VecDeque};

/// A set of disjoint, non-touching ranges, held in a ring sorted by start
/// (as Linux keeps its retransmission queue in sequence order and ns-3's
/// `TcpTxBuffer` its segment list): SACK blocks and arriving segments most
/// often extend the highest range or add one above it, and cumulative ACKs
/// and in-order delivery remove from the lowest, both O(1) at the ends of
/// the ring; lookups are binary searches. A change in the middle (a
/// retransmission filling a hole) shifts the shorter side of the ring;
/// holes are repaired from the lowest up, so that side is short.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// (start, end), ascending.
    ranges: VecDeque<(u64, u64)>,
    bytes: u64,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// Bytes covered.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn len(&self) -> usize {
        self.ranges.len()
    }
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.front().copied()
    }
    pub fn last(&self) -> Option<(u64, u64)> {
        self.ranges.back().copied()
    }
    /// Ranges from the highest down.
    pub fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().copied()
    }

    /// The number of ranges starting at or below `x`: the index of the
    /// first range starting above it. The highest range is tried first
    /// (most queries are at or above it).
    #[inline]
    fn after(&self, x: u64) -> usize {
        match self.ranges.back() {
            None => 0,
            Some(&(s, _)) if s <= x => self.ranges.len(),
            Some(_) => self.ranges.partition_point(|&(s, _)| s <= x),
        }
    }

    /// Add [start, end); returns the merged range that now contains it and
    /// the number of bytes that were not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> ((u64, u64), u64) {
        if start >= end {
            return ((start, end), 0);
        }
        let before = self.bytes;
        // The ranges starting in (start, end] merge into the new one.
        let i = self.after(start);
        let mut j = i;
        let mut new_end = end;
        while let Some(&(s, e)) = self.ranges.get(j).filter(|&&(s, _)| s <= end) {
            new_end = new_end.max(e);
            self.bytes -= e - s;
            j += 1;
        }
        // The range starting at or before `start` that reaches it grows in
        // place (a SACK block most often extends the range below it);
        // otherwise the new range takes the first merged one's place, or
        // goes in.
        let merged = match self.ranges.get_mut(i.wrapping_sub(1)) {
            Some(r) if r.1 >= start => {
                let old = r.1;
                r.1 = old.max(new_end);
                self.bytes += r.1 - old;
                let merged = *r;
                self.ranges.drain(i..j);
                merged
            }
            _ => {
                if j > i {
                    self.ranges[i] = (start, new_end);
                    self.ranges.drain(i + 1..j);
                } else {
                    self.ranges.insert(i, (start, new_end));
                }
                self.bytes += new_end - start;
                (start, new_end)
            }
        };
        (merged, self.bytes - before)
    }

    /// Forget everything below `x` (cumulatively acknowledged or
    /// delivered); returns the bytes forgotten.
    pub fn remove_below(&mut self, x: u64) -> u64 {
        let before = self.bytes;
        while let Some(r) = self.ranges.front_mut() {
            if r.0 >= x {
                break;
            }
            if r.1 > x {
                self.bytes -= x - r.0;
                r.0 = x;
                break;
            }
            self.bytes -= r.1 - r.0;
            self.ranges.pop_front();
        }
        before - self.bytes
    }

    /// The range containing byte `x`, if any.
    #[inline]
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        // Most sets are empty most of the time (no data out of order, no
        // SACK): answered without a search (the receiver asks for every
        // segment).
        if self.ranges.is_empty() {
            return None;
        }
        self.ranges.get(self.after(x).wrapping_sub(1)).filter(|&&(_, e)| e > x).copied()
    }

    /// Is [start, end) entirely covered?
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.containing(start).is_some_and(|(_, e)| e >= end)
    }

    /// Bytes of [a, b) that are covered.
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b || self.ranges.is_empty() {
            return 0;
        }
        // From the range starting at or below `a` (it may reach into [a, b)).
        let first = self.after(a).saturating_sub(1);
        let mut n = 0;
        for &(s, e) in self.ranges.range(first..).take_while(|&&(s, _)| s < b) {
            n += e.min(b).saturating_sub(s.max(a));
        }
        n
    }

    /// The first byte >= `x` that is not covered, and where the next covered
    /// range begins above it (u64::MAX if none).
    pub fn next_gap(&self, x: u64) -> (u64, u64) {
        if self.ranges.is_empty() {
            return (x, u64::MAX);
        }
        let i = self.after(x);
        match self.ranges.get(i.wrapping_sub(1)) {
            // `x` is covered: the gap starts at the range's end, and the
            // next range (if any) starts above it.
            Some(&(_, e)) if e > x => (e, self.ranges.get(i).map_or(u64::MAX, |r| r.0)),
            _ => (x, self.ranges.get(i).map_or(u64::MAX, |r| r.0)),
        }
    }
}

/// The covered bytes below a moving position, kept up to date as the set
/// changes, so that "how much below x is covered" costs no walk over the
/// set (the sender asks it for every ACK, and after a burst of losses the
/// scoreboard holds thousands of ranges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pos: u64,
    below: u64,
}

impl Cursor {
    pub fn pos(&self) -> u64 {
        self.pos
    }
    /// Covered bytes of `set` below `pos`.
    pub fn below(&self) -> u64 {
        self.below
    }
    /// Move to `to`, with `set` as it is now.
    pub fn move_to(&mut self, set: &RangeSet, to: u64) {
        if to >= self.pos {
            self.below += set.covered_in(self.pos, to);
        } else {
            self.below -= set.covered_in(to, self.pos);
        }
        self.pos = to;
    }
    /// Insert [start, end) into `set`, keeping every cursor right; returns
    /// the bytes newly covered.
    pub fn insert(set: &mut RangeSet, start: u64, end: u64, cursors: &mut [&mut Cursor]) -> u64 {
        // The bytes of [start, end) newly covered below a cursor: all of
        // them for a cursor at or above `end`, none for one at or below
        // `start`; only a cursor inside the block needs the set as it was
        // (at most four cursors, no allocation: this runs for every SACK
        // block).
        let mut inside = [0u64; 4];
        assert!(cursors.len() <= inside.len(), "at most {} cursors", inside.len());
        for (c, b) in cursors.iter().zip(inside.iter_mut()) {
            if start < c.pos && c.pos < end {
                *b = set.covered_in(start, c.pos);
            }
        }
        let added = set.insert(start, end).1;
        for (c, b) in cursors.iter_mut().zip(inside) {
            if c.pos >= end {
                c.below += added;
            } else if c.pos > start {
                c.below += c.pos - start - b;
            }
        }
        added
    }
    /// `set.remove_below(x)`, keeping every cursor right (a cursor below `x`
    /// moves up to it).
    pub fn remove_below(set: &mut RangeSet, x: u64, cursors: &mut [&mut Cursor]) {
        let removed = set.remove_below(x);
        for c in cursors.iter_mut() {
            if c.pos >= x {
                c.below -= removed;
            } else {
                **c = Cursor { pos: x, below: 0 };
            }
        }
    }
}

/// A receiver's out-of-order ranges in the order of their latest change,
/// newest first: the SACK blocks it reports (RFC 2018, Section 4: the first
/// block holds the most recently received segment's range, the others the
/// most recently changed ranges). The ranges are disjoint and never
/// touching, as the out-of-order [`RangeSet`] keeps them, so they are held
/// twice, by start and by the time of their change, and an update costs
/// O(log n) where a list in recency order costs O(n): after a burst of
/// losses in a large window the receiver holds thousands of ranges and
/// changes one with every segment (the list took 10 % of the reference
/// case's instructions).
#[derive(Clone, Debug, Default)]
pub struct Recent {
    /// start -> (end, stamp)
    by_start: BTreeMap<u64, (u64, u64)>,
    /// stamp -> (start, end); the highest stamp is the newest.
    by_stamp: BTreeMap<u64, (u64, u64)>,
    next_stamp: u64,
}

impl Recent {
    /// `r` (a range of the out-of-order set, just made or grown) is the
    /// newest; the ranges it overlaps or touches (merged into it) go.
    /// `same_count`: the set holds as many ranges as before the change.
    /// Then, if `r` starts where the newest range starts, it is that range
    /// grown at its end with nothing merged into it (a range made anew
    /// with one merged into it starts below the merged one): updated in
    /// place, the common case of in-order arrivals above a hole.
    pub fn touch(&mut self, r: (u64, u64), same_count: bool) {
        if same_count {
            if let Some(mut newest) = self.by_stamp.last_entry().filter(|n| n.get().0 == r.0) {
                *newest.get_mut() = r;
                self.by_start.get_mut(&r.0).expect("held by start too").0 = r.1;
                return;
            }
        }
        // Disjoint ranges sorted by start: those overlapping or touching
        // [r.0, r.1] are the one before r.0 if it reaches r.0, and those
        // starting in [r.0, r.1].
        if let Some((&s, &(e, _))) = self.by_start.range(..r.0).next_back() {
            if e >= r.0 {
                self.remove(s);
            }
        }
        while let Some((&s, _)) = self.by_start.range(r.0..=r.1).next() {
            self.remove(s);
        }
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.by_start.insert(r.0, (r.1, stamp));
        self.by_stamp.insert(stamp, r);
    }

    /// The ranges that end at or below `x` (delivered) go.
    pub fn drop_below(&mut self, x: u64) {
        // Disjoint and sorted by start, so sorted by end too.
        while let Some((&s, &(e, _))) = self.by_start.first_key_value() {
            if e > x {
                break;
            }
            self.remove(s);
        }
    }

    /// The ranges, newest first.
    pub fn newest(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.by_stamp.values().rev().copied()
    }

    fn remove(&mut self, start: u64) {
        if let Some((_, stamp)) = self.by_start.remove(&start) {
            self.by_stamp.remove(&stamp);
        }
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
    fn insert_agrees_with_a_byte_map() {
        // Random blocks into a set and into one flag per byte: the same
        // ranges, bytes and answers.
        let (mut set, mut bytes) = (RangeSet::default(), vec![false; 600]);
        let mut x: u64 = 4242;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..5000 {
            let s = next() % 560;
            let e = s + next() % 40;
            let fresh = (s..e).filter(|&i| !bytes[i as usize]).count() as u64;
            (s..e).for_each(|i| bytes[i as usize] = true);
            let ((ms, me), added) = set.insert(s, e);
            assert_eq!(added, fresh, "step {step}");
            if s < e {
                assert!(ms <= s && me >= e && (ms..me).all(|i| bytes[i as usize]), "step {step}");
                assert!((ms == 0 || !bytes[ms as usize - 1]) && !bytes[me as usize], "step {step}: merged range not maximal");
            }
            let runs: Vec<(u64, u64)> = set.ranges.iter().copied().collect();
            let mut want = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] {
                    let j = (i..bytes.len()).find(|&j| !bytes[j]).unwrap_or(bytes.len());
                    want.push((i as u64, j as u64));
                    i = j;
                } else {
                    i += 1;
                }
            }
            assert_eq!(runs, want, "step {step}");
            assert_eq!(set.bytes(), bytes.iter().filter(|&&b| b).count() as u64);
            if step % 500 == 499 {
                (set, bytes) = (RangeSet::default(), vec![false; 600]);
            }
        }
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
        assert_eq!(r.remove_below(15), 5);
        assert_eq!((r.first(), r.bytes()), (Some((15, 20)), 15));
        r.remove_below(100);
        assert!(r.is_empty() && r.bytes() == 0);
    }

    #[test]
    fn cursors_agree_with_a_full_walk() {
        // A deterministic mix of inserts, removals and moves; after each step
        // every cursor's count equals covered_in(0, pos).
        let mut set = RangeSet::default();
        let (mut a, mut b) = (Cursor::default(), Cursor::default());
        let mut x: u64 = 12345;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut floor = 0;
        for step in 0..5000 {
            match next() % 4 {
                0 | 1 => {
                    let s = floor + next() % 1000;
                    let e = s + 1 + next() % 50;
                    Cursor::insert(&mut set, s, e, &mut [&mut a, &mut b]);
                }
                2 => {
                    let to = floor + next() % 1000;
                    if step % 2 == 0 { a.move_to(&set, to) } else { b.move_to(&set, to) }
                }
                _ => {
                    floor += next() % 20;
                    Cursor::remove_below(&mut set, floor, &mut [&mut a, &mut b]);
                }
            }
            for c in [&a, &b] {
                assert_eq!(c.below(), set.covered_in(0, c.pos()), "step {step}");
            }
        }
    }

    #[test]
    fn recent_keeps_the_order_a_list_in_recency_order_keeps() {
        // The receiver's former list (newest first; a change drops the
        // ranges the new one overlaps or touches, a delivery those ending
        // at or below rcv_nxt) against Recent, on a random arrival order.
        let (mut set, mut recent, mut list) = (RangeSet::default(), Recent::default(), Vec::<(u64, u64)>::new());
        let mut x: u64 = 987654321;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut rcv_nxt, mut most, mut last_end, mut grown) = (0, 0, 0, 0);
        for step in 0..20000 {
            // A third of the time the segment after the last one (a run arriving
            // above a hole: the newest range grows in place).
            let seq = if next() % 3 == 0 && last_end > rcv_nxt { last_end } else { rcv_nxt + (next() % 400) * 10 };
            let end = seq + 10;
            last_end = end;
            if seq > rcv_nxt {
                let count = set.len();
                let (range, _) = set.insert(seq, end);
                grown += (set.len() == count && list.first().is_some_and(|n| n.0 == range.0)) as u32;
                list.retain(|&(s, e)| e < range.0 || s > range.1);
                list.insert(0, range);
                recent.touch(range, set.len() == count);
            } else {
                rcv_nxt = end;
                if let Some((s, e)) = set.first() {
                    if s <= rcv_nxt {
                        rcv_nxt = rcv_nxt.max(e);
                    }
                }
                set.remove_below(rcv_nxt);
                list.retain(|&(_, e)| e > rcv_nxt);
                recent.drop_below(rcv_nxt);
            }
            assert!(recent.newest().eq(list.iter().copied()), "step {step}");
            most = most.max(list.len());
        }
        assert!(most > 50, "the walk held many ranges out of order at once ({most})");
        assert!(grown > 1000, "the newest range grew in place often ({grown})");
    }
}
