//! The Count-Sketch of M. Charikar, K. Chen and M. Farach-Colton, "Finding
//! frequent items in data streams" (ICALP 2002), over flows (5-tuples), as
//! YAQS estimates a flow's bytes in its fast queue with it (`yaqs.rs`).
//!
//! `rows` × `buckets` signed counters; row `i` maps a flow `x` to bucket
//! `h_i(x)` with sign `s_i(x) = ±1`; adding `d` bytes adds `s_i(x) d` to
//! `C[i][h_i(x)]` in every row, and the estimate of `x` is the median over
//! rows of `s_i(x) C[i][h_i(x)]`. The sketch is linear: after adding and
//! taking away the same packets it equals the sketch of what remains. The
//! hash seeds are drawn from the caller's random stream.
//!
//! Tests: below (the error within Charikar et al.'s bound on Zipf streams;
//! decrements leaving the sketch of what is queued; parameters checked).

use crate::error::ConfigError;
use crate::packet::Packet;
use crate::rng::Rng;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A flow as a router sees it: the 5-tuple.
pub type FlowKey = u128;

/// The 5-tuple of `pkt` as one key.
#[inline]
pub fn flow_key(pkt: &Packet) -> FlowKey {
    ((pkt.src_ip as u128) << 96) | ((pkt.dst_ip as u128) << 64) | ((pkt.src_port as u128) << 48) | ((pkt.dst_port as u128) << 32) | pkt.proto as u128
}

/// SplitMix64's finalizer: a strong 64-bit mixer.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
fn fold(key: FlowKey) -> u64 {
    mix(key as u64 ^ mix((key >> 64) as u64))
}

/// A hasher for the exact maps (keys are already well spread 5-tuples).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0 ^ b as u64);
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = fold(k);
    }
}

pub type KeyMap<V> = HashMap<FlowKey, V, BuildHasherDefault<KeyHasher>>;

/// Most rows a sketch may have (the median is taken on the stack).
pub const MAX_ROWS: usize = 31;

/// Charikar, Chen & Farach-Colton's Count-Sketch of signed byte counts.
#[derive(Clone, Debug)]
pub struct CountSketch {
    rows: usize,
    buckets: usize,
    seeds: Vec<u64>,
    table: Vec<i64>,
}

impl CountSketch {
    /// `rows` × `buckets` counters with hash seeds drawn from `rng`.
    /// A problem is located at YAQS's field (`sketch_rows`, `sketch_buckets`).
    pub fn new(rows: usize, buckets: usize, rng: &mut Rng) -> Result<Self, ConfigError> {
        if rows == 0 || rows > MAX_ROWS {
            return Err(ConfigError::at("sketch_rows", format!("must be in 1..={MAX_ROWS}, got {rows}")));
        }
        if buckets == 0 {
            return Err(ConfigError::at("sketch_buckets", "must be positive, got 0"));
        }
        let seeds = (0..rows).map(|_| rng.next_u64()).collect();
        Ok(CountSketch { rows, buckets, seeds, table: vec![0; rows * buckets] })
    }

    /// Row `i`'s counter index and sign for `x`.
    #[inline]
    fn cell(&self, i: usize, x: u64) -> (usize, i64) {
        let h = mix(x ^ self.seeds[i]);
        // Bucket from the high bits (multiply-shift), sign from the lowest.
        let b = ((h as u128 * self.buckets as u128) >> 64) as usize;
        (i * self.buckets + b, if h & 1 == 0 { 1 } else { -1 })
    }

    /// Add `delta` bytes to flow `key`'s count.
    #[inline]
    pub fn add(&mut self, key: FlowKey, delta: i64) {
        let x = fold(key);
        for i in 0..self.rows {
            let (c, s) = self.cell(i, x);
            self.table[c] += s * delta;
        }
    }

    /// The median over rows of `s_i(x) C[i][h_i(x)]` (the mean of the two
    /// middle values for an even number of rows).
    #[inline]
    pub fn estimate(&self, key: FlowKey) -> i64 {
        let x = fold(key);
        let mut v = [0i64; MAX_ROWS];
        for (i, slot) in v.iter_mut().enumerate().take(self.rows) {
            let (c, s) = self.cell(i, x);
            *slot = s * self.table[c];
        }
        let v = &mut v[..self.rows];
        if self.rows == 3 {
            // The common case: the median of three without sorting.
            let (a, b, c) = (v[0], v[1], v[2]);
            return a.max(b).min(a.min(b).max(c));
        }
        v.sort_unstable();
        let m = self.rows / 2;
        if self.rows % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]).div_euclid(2)
        }
    }

    /// Every counter (tests compare sketches).
    pub fn counters(&self) -> &[i64] {
        &self.table
    }
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn buckets(&self) -> usize {
        self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Zipf(s) weights over n items.
    fn zipf(n: usize, s: f64) -> Vec<f64> {
        let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
        let t: f64 = w.iter().sum();
        w.into_iter().map(|x| x / t).collect()
    }

    #[test]
    fn sketch_error_is_within_its_bound_on_skewed_streams() {
        // Charikar et al., Lemma 1: in one row the error on x has variance
        // at most F2(others) / b, so by Chebyshev |err| > 3 sqrt(F2 / b)
        // with probability at most 1/9; the median of 3 rows fails only if
        // two rows do: at most 3 (1/9)^2 < 4 %. Checked over every item of
        // Zipf streams of several skews and seeds.
        let (rows, b) = (3, 32);
        let (mut bad, mut total) = (0usize, 0usize);
        for seed in 0..8u64 {
            for s in [0.8, 1.1, 1.5] {
                let mut rng = Rng::stream(seed, "sketch");
                let mut cs = CountSketch::new(rows, b, &mut rng).unwrap();
                let n = 400;
                let counts: Vec<i64> = zipf(n, s).iter().map(|w| (w * 2_000_000.0).round() as i64 + 1).collect();
                for (k, &c) in counts.iter().enumerate() {
                    cs.add(k as u128 * 7919 + 3, c);
                }
                let f2: f64 = counts.iter().map(|&c| (c * c) as f64).sum();
                for (k, &c) in counts.iter().enumerate() {
                    let others = f2 - (c * c) as f64;
                    let bound = 3.0 * (others / b as f64).sqrt();
                    let err = (cs.estimate(k as u128 * 7919 + 3) - c).abs() as f64;
                    bad += (err > bound) as usize;
                    total += 1;
                }
                // The heaviest item is found almost exactly.
                let top = cs.estimate(3);
                assert!((top - counts[0]).abs() as f64 <= 3.0 * ((f2 - (counts[0] * counts[0]) as f64) / b as f64).sqrt());
            }
        }
        let frac = bad as f64 / total as f64;
        assert!(frac < 0.04, "{bad} of {total} estimates outside 3 sqrt(F2/b)");
    }

    #[test]
    fn decrements_keep_the_sketch_equal_to_the_sketch_of_what_is_queued() {
        // Property: after any interleaving of arrivals and departures, the
        // counters equal those of a fresh sketch (same seeds) fed only the
        // packets still queued, and an empty queue leaves all zeros.
        for seed in 0..40u64 {
            let mut rng = Rng::stream(seed, "prop");
            let mut hashes = Rng::stream(seed, "seeds");
            let mut cs = CountSketch::new(3, 32, &mut hashes.clone()).unwrap();
            let mut queued: VecDeque<(u128, i64)> = VecDeque::new();
            for _ in 0..2000 {
                if rng.uniform() < 0.55 || queued.is_empty() {
                    let k = (rng.next_u64() % 60) as u128;
                    let sz = 40 + (rng.next_u64() % 1461) as i64;
                    cs.add(k, sz);
                    queued.push_back((k, sz));
                } else {
                    let (k, sz) = queued.pop_front().unwrap();
                    cs.add(k, -sz);
                }
            }
            let mut fresh = CountSketch::new(3, 32, &mut hashes).unwrap();
            for &(k, sz) in &queued {
                fresh.add(k, sz);
            }
            assert_eq!(cs.counters(), fresh.counters(), "seed {seed}");
            while let Some((k, sz)) = queued.pop_front() {
                cs.add(k, -sz);
            }
            assert!(cs.counters().iter().all(|&c| c == 0));
        }
    }

    #[test]
    fn sketch_parameters_are_checked() {
        let mut rng = Rng::stream(1, "t");
        assert_eq!(CountSketch::new(0, 32, &mut rng).unwrap_err().path(), "sketch_rows");
        assert_eq!(CountSketch::new(3, 0, &mut rng).unwrap_err().path(), "sketch_buckets");
        let mut even = CountSketch::new(4, 64, &mut rng).unwrap();
        even.add(5, 1000);
        assert_eq!(even.estimate(5), 1000);
    }
}
