//! TPC-C's random choices (clause 2.1.6 and 4.3.2), with vmcache's constants for NURand.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::schema::Text;

/// NURand's run-time constant for customer last names (clause 2.1.6; vmcache's value). The load
/// constant differs from it by 66, inside the range [65, 119] clause 2.1.6.1 requires.
pub const C_LAST_RUN: u32 = 223;
/// NURand's load-time constant for customer last names.
pub const C_LAST_LOAD: u32 = 157;
/// NURand's constant for customer ids.
pub const C_ID: u32 = 259;
/// NURand's constant for item ids.
pub const OL_I_ID: u32 = 7911;

const SYLLABLES: [&[u8]; 10] =
    [b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING"];

/// A thread's random generator with TPC-C's distributions.
pub struct TpccRng(SmallRng);

impl TpccRng {
    /// Seeded (the same seed gives the same choices).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        TpccRng(SmallRng::seed_from_u64(seed))
    }

    /// Uniform in `[lo, hi]`.
    pub fn urand(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            lo
        } else {
            self.0.gen_range(lo..=hi)
        }
    }

    /// Uniform in `[lo, hi]` without `except` (when there is another choice).
    pub fn urand_except(&mut self, lo: u32, hi: u32, except: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        let r = self.urand(lo, hi - 1);
        if r >= except {
            r + 1
        } else {
            r
        }
    }

    /// `NURand(a, x, y)` with constant `c` (clause 2.1.6).
    pub fn nurand(&mut self, a: u32, x: u32, y: u32, c: u32) -> u32 {
        (((self.urand(0, a) | self.urand(x, y)) + c) % (y - x + 1)) + x
    }

    /// A random alphanumeric string of `min..=max` characters.
    pub fn astring<const N: usize>(&mut self, min: usize, max: usize) -> Text<N> {
        const CHARS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let len = self.0.gen_range(min..=max.min(N));
        let bytes: Vec<u8> = (0..len).map(|_| CHARS[self.0.gen_range(0..CHARS.len())]).collect();
        Text::new(&bytes)
    }

    /// A random numeric string of `len` digits.
    pub fn nstring<const N: usize>(&mut self, len: usize) -> Text<N> {
        let bytes: Vec<u8> = (0..len.min(N)).map(|_| b'0' + self.0.gen_range(0..10u8)).collect();
        Text::new(&bytes)
    }

    /// A zip code: 4 random digits and `11111` (clause 4.3.2.7).
    pub fn zip(&mut self) -> Text<9> {
        let mut z = self.nstring::<9>(4).as_bytes().to_vec();
        z.extend_from_slice(b"11111");
        Text::new(&z)
    }

    /// A data string of 26 to 50 characters (`max` 50 for stock and items), 10% of them with
    /// `ORIGINAL` somewhere (clause 4.3.3.1).
    pub fn data50(&mut self) -> Text<50> {
        let t: Text<50> = self.astring(26, 50);
        if self.0.gen_range(0..10) != 0 {
            return t;
        }
        let mut b = t.as_bytes().to_vec();
        let at = self.0.gen_range(0..=b.len() - 8);
        b[at..at + 8].copy_from_slice(b"ORIGINAL");
        Text::new(&b)
    }

    /// A value in `[lo, hi]` (for money in cents and rates in 1/10000).
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.gen_range(lo..=hi)
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.urand(1, 100) <= percent
    }
}

/// Customer last name number `n` (0..=999): three syllables (clause 4.3.2.3).
#[must_use]
pub fn last_name(n: u32) -> Text<16> {
    let mut b = Vec::with_capacity(16);
    for digit in [n / 100 % 10, n / 10 % 10, n % 10] {
        b.extend_from_slice(SYLLABLES[digit as usize]);
    }
    Text::new(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nurand_stays_in_range_and_names_are_syllables() {
        let mut r = TpccRng::new(1);
        for _ in 0..10_000 {
            let v = r.nurand(1023, 1, 3000, C_ID);
            assert!((1..=3000).contains(&v));
            let e = r.urand_except(1, 4, 2);
            assert!((1..=4).contains(&e) && e != 2);
        }
        assert_eq!(last_name(371).as_bytes(), b"PRICALLYOUGHT");
        assert_eq!(last_name(0).as_bytes(), b"BARBARBAR");
        let d = r.data50();
        assert!((26..=50).contains(&d.as_bytes().len()));
    }
}
