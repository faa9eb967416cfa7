//! YCSB's request distributions: the zipfian generator of Gray et al. (SIGMOD 1994) as YCSB's
//! `ZipfianGenerator` implements it, scrambled so the popular items are spread over the key
//! space, and `latest`, which makes the most recently inserted records the most popular.
//!
//! **Growing item counts.** Inserts (workloads D and E) add items while the generators run.
//! As YCSB does, a [`Zipfian`] asked for more items than it has extends its zeta sum by the new
//! terms (a few nanoseconds per inserted item) instead of summing from scratch; unlike YCSB
//! (which keeps `eta` of the first count), `eta` is recomputed for the new count, so the
//! distribution is exactly zipfian over the current items.
//!
//! **Scrambling.** YCSB's `ScrambledZipfianGenerator` draws a rank from a zipfian over a fixed
//! 10^10 (now 10^16) items and returns `fnv64(rank) % items`. Here the rank is drawn over the
//! current item count, as the zipfian constant then means what it says for this many items,
//! and the hashed rank is placed by jump consistent hashing (Lamping and Veach, 2014) instead
//! of `%`: when an insert adds an item, only the ranks that move to the new item change place
//! (1 in `items` of them), so a run of workload E, which inserts while it scans, keeps its hot
//! items, where `% items` would reshuffle them on every insert. Like YCSB's, the scramble is
//! not a permutation: about a third of the items are nobody's rank and are never chosen, and
//! some take two or more ranks.

use rand::Rng;

/// YCSB's default zipfian constant.
pub const DEFAULT_THETA: f64 = 0.99;

/// `sum(1 / i^theta)` for `i` in `from + 1 ..= to`, added to `sum`.
#[must_use]
pub fn zeta(from: u64, to: u64, theta: f64, sum: f64) -> f64 {
    (from..to).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// YCSB's zipfian generator: item 0 the most popular, then 1, and so on.
#[derive(Clone, Debug)]
pub struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    /// `1 + 0.5^theta`.
    second: f64,
    /// The item count `zetan` and `eta` belong to.
    items: u64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// A generator over `items` items (at least 1) with constant `theta` (in (0, 1)), given
    /// `zetan = zeta(0, items, theta, 0.0)`, which takes a while for many items.
    #[must_use]
    pub fn with_zeta(theta: f64, items: u64, zetan: f64) -> Zipfian {
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta, 0.0),
            second: 1.0 + 0.5f64.powf(theta),
            items: items.max(1),
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for(z.items);
        z
    }

    /// A generator over `items` items, computing zeta.
    #[must_use]
    pub fn new(theta: f64, items: u64) -> Zipfian {
        Zipfian::with_zeta(theta, items, zeta(0, items.max(1), theta, 0.0))
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// The item count it draws from now.
    #[must_use]
    pub fn items(&self) -> u64 {
        self.items
    }

    /// An item in `0..items` (`items` at least 1). A count above the last one extends zeta by
    /// the new terms; a smaller one sums it again from scratch.
    pub fn next(&mut self, rng: &mut impl Rng, items: u64) -> u64 {
        let n = items.max(1);
        if n != self.items {
            self.zetan = if n > self.items {
                zeta(self.items, n, self.theta, self.zetan)
            } else {
                zeta(0, n, self.theta, 0.0)
            };
            self.items = n;
            self.eta = self.eta_for(n);
        }
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 || n == 1 {
            return 0;
        }
        if uz < self.second {
            return 1;
        }
        ((n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(n - 1)
    }
}

/// FNV-1a over the eight bytes of `v`, least significant first (YCSB's `Utils.fnvhash64`
/// without its final `Math.abs`).
#[must_use]
pub fn fnv64(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xFF;
        h = h.wrapping_mul(0x100_0000_01B3);
        v >>= 8;
    }
    h
}

/// Jump consistent hash (Lamping and Veach 2014): `key`'s bucket among `buckets` (at least 1);
/// going to `buckets + 1` moves only the keys that land in the new bucket.
#[must_use]
pub fn jump(mut key: u64, buckets: u64) -> u64 {
    let (mut b, mut j) = (0u64, 0u64);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as u64;
    }
    b
}

/// Where the requests of a workload go.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Scrambled zipfian: a zipfian rank over the current records, hashed and placed by
    /// [`jump`].
    Zipfian(Zipfian),
    /// YCSB's `latest`: a zipfian rank counted back from the newest record.
    Latest(Zipfian),
}

impl KeyChooser {
    /// The ordinal of a record in `0..records`.
    pub fn next(&mut self, rng: &mut impl Rng, records: u64) -> u64 {
        match self {
            KeyChooser::Zipfian(z) => jump(fnv64(z.next(rng, records)), records.max(1)),
            KeyChooser::Latest(z) => records.max(1) - 1 - z.next(rng, records),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn fnv_matches_ycsb_and_jump_is_stable_under_growth() {
        // FNV-1a of eight zero bytes.
        assert_eq!(fnv64(0), 0xA8C7_F832_281A_39C5);
        let n = 1000;
        let moved = (0..100_000u64).filter(|&r| jump(fnv64(r), n) != jump(fnv64(r), n + 1)).count();
        // 1 in 1001 expected to move: about 100.
        assert!((50..200).contains(&moved), "{moved}");
        for r in 0..1000 {
            assert!(jump(fnv64(r), n) < n);
        }
        assert_eq!(jump(12345, 1), 0);
    }

    #[test]
    fn zipfian_stays_in_range_and_extends_zeta_exactly() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut z = Zipfian::new(0.99, 1000);
        for n in [1000, 1500, 1, 2, 700] {
            for _ in 0..2000 {
                assert!(z.next(&mut rng, n) < n);
            }
        }
        let mut grown = Zipfian::new(0.99, 100);
        grown.next(&mut rng, 5000);
        let direct = Zipfian::new(0.99, 5000);
        assert!((grown.zetan - direct.zetan).abs() < 1e-9 && (grown.eta - direct.eta).abs() < 1e-12);
    }
}
