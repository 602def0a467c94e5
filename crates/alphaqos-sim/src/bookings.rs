//! Bandwidth booked over time: the admission core that the engine's
//! `call_admission` agent (`control/admission.rs`) and the circuit
//! reservation service (`alphaqos circuits`, through `alphaqos._core`) share.
//!
//! Each link keeps its bookings as a step function of time: at every
//! change time, the change in bit/s (a signed sum, so two equal bookings
//! that start at the same instant count twice, unlike a set of events,
//! which is how ESnet OSCARS 1.x can overbook a port). The booked rate at
//! time `t` is the sum of the changes at times `<= t`; a booking of `r` over
//! the half-open interval `[start, end)` adds `+r` at `start` and `-r` at
//! `end`.
//!
//! "The most booked at any instant of `[a, b)`" is the level at `a` plus the
//! largest prefix sum of the changes strictly inside `(a, b)`, if positive.
//! [`Steps`] answers it in O(log n) expected time for `n` change times: a
//! treap (C. R. Aragon and R. Seidel, "Randomized search trees", FOCS 1989)
//! keyed by time, each node augmented with its subtree's sum of changes and
//! largest non-empty prefix sum, the augmentation of a segment tree for
//! "maximum prefix sum" (e.g. Cormen et al., *Introduction to Algorithms*,
//! 3rd ed., problem 14-1, the point of maximum overlap). Adding a change is
//! an O(log n) insert or update; a time whose changes cancel is removed.
//!
//! Times are integer nanoseconds, rates whole bit/s.
//!
//! Tests (below): every query and update against a brute-force scan of the
//! same changes on seeded random sequences.

use std::collections::HashMap;

const NIL: u32 = u32::MAX;
/// The largest prefix sum of an empty sequence: below any real one.
const NONE: i128 = i128::MIN / 4;

#[derive(Clone, Debug)]
struct Node {
    time: u64,
    delta: i128,
    prio: u64,
    left: u32,
    right: u32,
    sum: i128,
    max_prefix: i128,
}

/// One link's booked rate as a step function of time (see the module
/// documentation).
#[derive(Clone, Debug, Default)]
pub struct Steps {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u64,
    len: usize,
}

impl Steps {
    pub fn new() -> Steps {
        Steps { nodes: Vec::new(), free: Vec::new(), root: NIL, seed: 0x9E37_79B9_7F4A_7C15, len: 0 }
    }

    /// How many change times are stored.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn sum(&self, n: u32) -> i128 {
        if n == NIL { 0 } else { self.nodes[n as usize].sum }
    }
    fn max_prefix(&self, n: u32) -> i128 {
        if n == NIL { NONE } else { self.nodes[n as usize].max_prefix }
    }
    fn pull(&mut self, n: u32) {
        let (l, r, d) = {
            let x = &self.nodes[n as usize];
            (x.left, x.right, x.delta)
        };
        let sl = self.sum(l);
        let through = sl + d;
        let mut best = self.max_prefix(l).max(through);
        if r != NIL {
            best = best.max(through + self.max_prefix(r));
        }
        let total = through + self.sum(r);
        let x = &mut self.nodes[n as usize];
        x.sum = total;
        x.max_prefix = best;
    }
    /// splitmix64 (Steele, Lea and Flood, OOPSLA 2014): the treap's priorities.
    fn next_prio(&mut self) -> u64 {
        self.seed = self.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Split `n` into the times `< t` and those `>= t`.
    fn split(&mut self, n: u32, t: u64) -> (u32, u32) {
        if n == NIL {
            return (NIL, NIL);
        }
        if self.nodes[n as usize].time < t {
            let (a, b) = self.split(self.nodes[n as usize].right, t);
            self.nodes[n as usize].right = a;
            self.pull(n);
            (n, b)
        } else {
            let (a, b) = self.split(self.nodes[n as usize].left, t);
            self.nodes[n as usize].left = b;
            self.pull(n);
            (a, n)
        }
    }
    /// Join two treaps, every time of `a` before every time of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.pull(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.pull(b);
            b
        }
    }

    /// Add `delta` bit/s to the booked rate from `time` on.
    pub fn add(&mut self, time: u64, delta: i128) {
        if delta == 0 {
            return;
        }
        let (lo, rest) = self.split(self.root, time);
        let (mid, hi) = self.split(rest, time.saturating_add(1));
        let mid = if mid == NIL {
            let prio = self.next_prio();
            let node = Node { time, delta, prio, left: NIL, right: NIL, sum: delta, max_prefix: delta };
            self.len += 1;
            match self.free.pop() {
                Some(i) => {
                    self.nodes[i as usize] = node;
                    i
                }
                None => {
                    self.nodes.push(node);
                    (self.nodes.len() - 1) as u32
                }
            }
        } else {
            self.nodes[mid as usize].delta += delta;
            if self.nodes[mid as usize].delta == 0 {
                self.free.push(mid);
                self.len -= 1;
                NIL
            } else {
                self.pull(mid);
                mid
            }
        };
        let left = self.merge(lo, mid);
        self.root = self.merge(left, hi);
    }

    /// Book `delta` (negative: release) over `[start, end)`; nothing if empty.
    pub fn change(&mut self, start: u64, end: u64, delta: i128) {
        if start >= end || delta == 0 {
            return;
        }
        self.add(start, delta);
        self.add(end, -delta);
    }

    /// The booked rate at `time`.
    pub fn level(&self, time: u64) -> i128 {
        let mut n = self.root;
        let mut acc = 0;
        while n != NIL {
            let x = &self.nodes[n as usize];
            if x.time <= time {
                acc += self.sum(x.left) + x.delta;
                n = x.right;
            } else {
                n = x.left;
            }
        }
        acc
    }

    /// The largest non-empty prefix sum of the changes at times in
    /// `(after, before)`, walking down from `n` whose subtree holds times in
    /// `(lo, hi)` as given by `bounded`; `NONE` if there are none.
    fn max_prefix_between(&self, n: u32, after: u64, before: u64) -> i128 {
        // Go down to the node whose time first falls inside the range.
        let mut n = n;
        while n != NIL {
            let t = self.nodes[n as usize].time;
            if t <= after {
                n = self.nodes[n as usize].right;
            } else if t >= before {
                n = self.nodes[n as usize].left;
            } else {
                break;
            }
        }
        if n == NIL {
            return NONE;
        }
        // Left side: the part of the left subtree after `after`, as a suffix
        // (its sum and max prefix), then the node, then the right part.
        let x = &self.nodes[n as usize];
        let (ls, lmp) = self.suffix_after(x.left, after);
        let through = ls + x.delta;
        let rmp = self.prefix_before(x.right, before);
        let mut best = lmp.max(through);
        if rmp != NONE {
            best = best.max(through + rmp);
        }
        best
    }
    /// (sum, max prefix) of the times `> after` in the subtree `n`.
    fn suffix_after(&self, mut n: u32, after: u64) -> (i128, i128) {
        // Collect the pieces left to right: each kept node with its right subtree.
        let mut pieces: Vec<(i128, u32)> = Vec::new();
        while n != NIL {
            let x = &self.nodes[n as usize];
            if x.time <= after {
                n = x.right;
            } else {
                pieces.push((x.delta, x.right));
                n = x.left;
            }
        }
        // `pieces` is from the last (largest) ancestor to the first: fold right to left.
        let (mut sum, mut mp) = (0i128, NONE);
        for &(d, r) in pieces.iter() {
            // Sequence so far (sum, mp) comes after node d and its right subtree r.
            let head_sum = d + self.sum(r);
            let mut head_mp = d;
            if r != NIL {
                head_mp = head_mp.max(d + self.max_prefix(r));
            }
            let new_mp = if mp == NONE { head_mp } else { head_mp.max(head_sum + mp) };
            sum += head_sum;
            mp = new_mp;
        }
        (sum, mp)
    }
    /// Max prefix of the times `< before` in the subtree `n`.
    fn prefix_before(&self, mut n: u32, before: u64) -> i128 {
        let mut best = NONE;
        let mut acc = 0i128;
        while n != NIL {
            let x = &self.nodes[n as usize];
            if x.time < before {
                if x.left != NIL {
                    best = best.max(acc + self.max_prefix(x.left));
                }
                acc += self.sum(x.left) + x.delta;
                best = best.max(acc);
                n = x.right;
            } else {
                n = x.left;
            }
        }
        best
    }

    /// The most booked at any instant of `[start, end)` (0 if empty).
    pub fn peak(&self, start: u64, end: u64) -> i128 {
        let level = self.level(start);
        if end <= start.saturating_add(1) {
            return level;
        }
        let inside = self.max_prefix_between(self.root, start, end);
        if inside == NONE { level } else { level + inside.max(0) }
    }

    /// The step function over `[from, to)`: `(time, booked rate from then on)`
    /// at `from` and at every change inside.
    pub fn steps(&self, from: u64, to: u64) -> Vec<(u64, i128)> {
        let mut out = Vec::new();
        if from >= to {
            return out;
        }
        let mut level = self.level(from);
        out.push((from, level));
        let mut stack = Vec::new();
        let mut n = self.root;
        while n != NIL || !stack.is_empty() {
            while n != NIL {
                stack.push(n);
                n = if self.nodes[n as usize].time > from { self.nodes[n as usize].left } else { NIL };
            }
            let Some(m) = stack.pop() else { break };
            let x = &self.nodes[m as usize];
            if x.time >= to {
                break;
            }
            if x.time > from {
                level += x.delta;
                out.push((x.time, level));
            }
            n = x.right;
        }
        out
    }
}

/// Rate booked on each link (by index) as a step function ([`Steps`]).
#[derive(Clone, Debug, Default)]
pub struct Bookings {
    links: HashMap<u32, Steps>,
}

impl Bookings {
    /// The most booked on `link` at any instant of `[start, end)`.
    pub fn peak(&self, link: u32, start: u64, end: u64) -> u64 {
        self.links.get(&link).map_or(0, |s| s.peak(start, end) as u64)
    }
    /// Does `rate` fit on every `(link, capacity)` over `[start, end)`?
    pub fn fits(&self, links: &[(u32, u64)], start: u64, end: u64, rate: u64) -> bool {
        links.iter().all(|&(l, cap)| self.peak(l, start, end) as u128 + rate as u128 <= cap as u128)
    }
    pub fn book(&mut self, links: &[(u32, u64)], start: u64, end: u64, rate: u64) {
        self.change(links, start, end, rate as i128);
    }
    /// Add `delta` (negative: release) to the booking over `[start, end)`.
    pub fn change(&mut self, links: &[(u32, u64)], start: u64, end: u64, delta: i128) {
        if start >= end || delta == 0 {
            return;
        }
        for &(l, _) in links {
            self.links.entry(l).or_insert_with(Steps::new).change(start, end, delta);
        }
    }
    /// Does a step profile fit: `profile[i].1` bit/s from `profile[i].0` to
    /// the next time (the last one to `end`), times ascending?
    pub fn fits_profile(&self, links: &[(u32, u64)], profile: &[(u64, u64)], end: u64) -> bool {
        segments(profile, end).all(|(s, e, r)| self.fits(links, s, e, r))
    }
    /// Add (`sign` 1) or remove (`sign` -1) a step profile's booking.
    pub fn change_profile(&mut self, links: &[(u32, u64)], profile: &[(u64, u64)], end: u64, sign: i128) {
        for (s, e, r) in segments(profile, end) {
            self.change(links, s, e, sign * r as i128);
        }
    }
    /// The step function of `link` over `[from, to)` (see [`Steps::steps`]).
    pub fn steps(&self, link: u32, from: u64, to: u64) -> Vec<(u64, i128)> {
        match self.links.get(&link) {
            Some(s) => s.steps(from, to),
            None if from < to => vec![(from, 0)],
            None => Vec::new(),
        }
    }
}

/// The `(start, end, rate)` segments of a step profile ending at `end`.
fn segments(profile: &[(u64, u64)], end: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    profile.iter().enumerate().map(move |(i, &(t, r))| (t, profile.get(i + 1).map_or(end, |n| n.0).min(end), r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::BTreeMap;

    /// The old scan over a sorted map of changes: the reference.
    fn brute_peak(m: &BTreeMap<u64, i128>, start: u64, end: u64) -> i128 {
        let mut level: i128 = m.range(..=start).map(|(_, d)| d).sum();
        let mut peak = level;
        if end > start + 1 {
            for (_, d) in m.range(start + 1..end) {
                level += d;
                peak = peak.max(level);
            }
        }
        peak
    }

    #[test]
    fn peak_level_and_steps_equal_a_brute_force_scan() {
        let mut rng = Rng::stream(11, "bookings");
        for case in 0..200 {
            let mut s = Steps::new();
            let mut m: BTreeMap<u64, i128> = BTreeMap::new();
            let span = 10 + rng.next_u64() % 500;
            for op in 0..120 {
                let a = rng.next_u64() % span;
                let b = a + rng.next_u64() % 60;
                let d = (rng.next_u64() % 2001) as i128 - 1000;
                s.change(a, b, d);
                if a < b && d != 0 {
                    *m.entry(a).or_default() += d;
                    *m.entry(b).or_default() -= d;
                    m.retain(|_, v| *v != 0);
                }
                assert_eq!(s.len(), m.len(), "case {case} op {op}");
                for _ in 0..5 {
                    let x = rng.next_u64() % (span + 70);
                    let y = x + rng.next_u64() % 80;
                    assert_eq!(s.peak(x, y.max(x + 1)), brute_peak(&m, x, y.max(x + 1)), "case {case} op {op} [{x},{y})");
                    assert_eq!(s.level(x), m.range(..=x).map(|(_, d)| d).sum::<i128>());
                    let want: Vec<(u64, i128)> = if x < y {
                        let mut l: i128 = m.range(..=x).map(|(_, d)| d).sum();
                        let mut v = vec![(x, l)];
                        for (&t, &d) in m.range(x + 1..y) {
                            l += d;
                            v.push((t, l));
                        }
                        v
                    } else {
                        vec![]
                    };
                    assert_eq!(s.steps(x, y), want, "case {case} op {op} steps [{x},{y})");
                }
            }
        }
    }

    #[test]
    fn equal_bookings_at_the_same_instant_count_twice_and_cancel_exactly() {
        let mut b = Bookings::default();
        let links = [(0, 100)];
        b.book(&links, 10, 20, 50);
        b.book(&links, 10, 20, 50);
        assert_eq!(b.peak(0, 0, 30), 100);
        assert!(!b.fits(&links, 15, 16, 1));
        b.change(&links, 10, 20, -50);
        b.change(&links, 10, 20, -50);
        assert_eq!(b.peak(0, 0, 30), 0);
        assert!(b.links[&0].is_empty());
    }

    #[test]
    fn profiles_fit_segment_by_segment() {
        let mut b = Bookings::default();
        let links = [(1, 100), (2, 100)];
        b.book(&[(1, 100)], 0, 10, 60);
        let p = [(0, 40), (10, 100), (20, 10)];
        assert!(b.fits_profile(&links, &p, 30));
        assert!(!b.fits_profile(&links, &[(0, 41)], 5));
        b.change_profile(&links, &p, 30, 1);
        // At 10 the first booking ends as the profile rises: the changes cancel, no step.
        assert_eq!(b.steps(1, 0, 40), vec![(0, 100), (20, 10), (30, 0)]);
        b.change_profile(&links, &p, 30, -1);
        assert_eq!(b.steps(2, 0, 40), vec![(0, 0)]);
    }

    #[test]
    fn a_long_sequence_stays_fast() {
        // 10^5 bookings; each query is O(log n): the whole loop is far below a second.
        let mut rng = Rng::stream(3, "bookings-big");
        let mut s = Steps::new();
        for _ in 0..100_000 {
            let a = rng.next_u64() % 1_000_000_000;
            s.change(a, a + 1 + rng.next_u64() % 10_000_000, 1 + (rng.next_u64() % 1000) as i128);
        }
        let t = std::time::Instant::now();
        let mut acc = 0i128;
        for i in 0..100_000u64 {
            acc += s.peak(i * 9_000, i * 9_000 + 5_000_000);
        }
        assert!(acc > 0);
        assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
    }
}
