//! Naming and building policies from configuration strings (command lines, benchmark configs).

use std::fmt;
use std::str::FromStr;

use crate::{
    ArcPolicy, Car, Clock, ClockPro, Fifo, Gclock, GclockSweep, HotCold, Lirs, Lru, LruK, Mq, Mru,
    RandomPolicy, S3Fifo, Sieve, TwoQ,
};

use crate::policy::Policy;

/// The accepted spellings, for error messages.
const ACCEPTED: &str = "random, fifo, clock, lru, sieve, gclock, gclock:K, gclock(k=K), gclock-sweep, \
     gclock-sweep:K, gclock-sweep(k=K) with 1 <= K <= 65534, mru, lru-k, lru-k:K, lru-k(k=K) with \
     1 <= K <= 8, 2q, hot-cold, mq, arc, car, s3-fifo, lirs, clock-pro";

/// Which replacement policy to build. Parses case-insensitively from the names in `ACCEPTED`
/// (see the crate README); displays as the canonical spelling (`random`, `fifo`, `gclock(k=10)`,
/// `lru-k(k=2)`, ...), which is also the built policy's [`Policy::name`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum PolicyKind {
    /// [`RandomPolicy`].
    Random,
    /// [`Gclock`] with hit weight `k` (1..=[`Gclock::MAX_K`]).
    Gclock {
        /// The counter value a hit sets.
        k: u16,
    },
    /// [`Fifo`].
    Fifo,
    /// [`Clock`] (second chance).
    Clock,
    /// [`Lru`] (exact; locks on every hit).
    Lru,
    /// [`Sieve`].
    Sieve,
    /// [`GclockSweep`]: Graefe's GCLOCK with the depth-first sweep first.
    GclockSweep {
        /// The counter value a hit sets.
        k: u16,
    },
    /// [`ArcPolicy`] (locks on every hit).
    Arc,
    /// [`Car`].
    Car,
    /// [`S3Fifo`].
    S3Fifo,
    /// [`Mru`] (most recently used; locks on every hit).
    Mru,
    /// [`LruK`] with history depth `k` (1..=[`LruK::MAX_K`]; locks on every hit).
    LruK {
        /// How many most recent references are kept per page.
        k: u8,
    },
    /// [`TwoQ`] (full version, default sizes; locks on every hit).
    TwoQ,
    /// [`HotCold`] (hot FIFO region of half the frames, cold LRU region; locks on cold hits).
    HotCold,
    /// [`Mq`] (default parameters; locks on every hit).
    Mq,
    /// [`Lirs`] (locks on every hit).
    Lirs,
    /// [`ClockPro`] (adaptive).
    ClockPro,
}

/// A policy name [`PolicyKind`] does not accept.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("unknown replacement policy {input:?}; accepted: {ACCEPTED}")]
pub struct UnknownPolicy {
    /// The rejected input, as given.
    pub input: String,
}

impl PolicyKind {
    /// Every policy with its default parameters, for sweeps over all policies.
    #[must_use]
    pub fn all() -> Vec<PolicyKind> {
        vec![
            PolicyKind::Random,
            PolicyKind::default(),
            PolicyKind::Fifo,
            PolicyKind::Clock,
            PolicyKind::Lru,
            PolicyKind::Sieve,
            PolicyKind::GclockSweep { k: Gclock::DEFAULT_K },
            PolicyKind::Arc,
            PolicyKind::Car,
            PolicyKind::S3Fifo,
            PolicyKind::Mru,
            PolicyKind::LruK { k: LruK::DEFAULT_K as u8 },
            PolicyKind::TwoQ,
            PolicyKind::HotCold,
            PolicyKind::Mq,
            PolicyKind::Lirs,
            PolicyKind::ClockPro,
        ]
    }

    /// Builds the policy over frames `0..capacity`. `seed` feeds policies that draw random
    /// numbers; the others ignore it.
    ///
    /// # Panics
    /// If `k` is outside 1..=[`Gclock::MAX_K`] or, for LRU-K, 1..=[`LruK::MAX_K`] (impossible
    /// for a parsed kind), or if
    /// `capacity - 1` does not fit a frame id.
    #[must_use]
    pub fn build(&self, capacity: usize, seed: u64) -> Box<dyn Policy> {
        match *self {
            PolicyKind::Random => Box::new(RandomPolicy::new(capacity, seed)),
            PolicyKind::Gclock { k } => Box::new(Gclock::new(capacity, k)),
            PolicyKind::Fifo => Box::new(Fifo::new(capacity)),
            PolicyKind::Clock => Box::new(Clock::new(capacity)),
            PolicyKind::Lru => Box::new(Lru::new(capacity)),
            PolicyKind::Sieve => Box::new(Sieve::new(capacity)),
            PolicyKind::GclockSweep { k } => Box::new(GclockSweep::new(capacity, k)),
            PolicyKind::Arc => Box::new(ArcPolicy::new(capacity)),
            PolicyKind::Car => Box::new(Car::new(capacity)),
            PolicyKind::S3Fifo => Box::new(S3Fifo::new(capacity)),
            PolicyKind::Mru => Box::new(Mru::new(capacity)),
            PolicyKind::LruK { k } => Box::new(LruK::new(capacity, usize::from(k))),
            PolicyKind::TwoQ => Box::new(TwoQ::new(capacity)),
            PolicyKind::HotCold => Box::new(HotCold::new(capacity)),
            PolicyKind::Mq => Box::new(Mq::new(capacity)),
            PolicyKind::Lirs => Box::new(Lirs::new(capacity)),
            PolicyKind::ClockPro => Box::new(ClockPro::new(capacity)),
        }
    }
}

impl Default for PolicyKind {
    fn default() -> PolicyKind {
        PolicyKind::Gclock { k: Gclock::DEFAULT_K }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyKind::Random => f.write_str("random"),
            PolicyKind::Gclock { k } => write!(f, "gclock(k={k})"),
            PolicyKind::Fifo => f.write_str("fifo"),
            PolicyKind::Clock => f.write_str("clock"),
            PolicyKind::Lru => f.write_str("lru"),
            PolicyKind::Sieve => f.write_str("sieve"),
            PolicyKind::GclockSweep { k } => write!(f, "gclock-sweep(k={k})"),
            PolicyKind::Arc => f.write_str("arc"),
            PolicyKind::Car => f.write_str("car"),
            PolicyKind::S3Fifo => f.write_str("s3-fifo"),
            PolicyKind::Mru => f.write_str("mru"),
            PolicyKind::LruK { k } => write!(f, "lru-k(k={k})"),
            PolicyKind::TwoQ => f.write_str("2q"),
            PolicyKind::HotCold => f.write_str("hot-cold"),
            PolicyKind::Mq => f.write_str("mq"),
            PolicyKind::Lirs => f.write_str("lirs"),
            PolicyKind::ClockPro => f.write_str("clock-pro"),
        }
    }
}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;

    fn from_str(input: &str) -> Result<PolicyKind, UnknownPolicy> {
        let unknown = || UnknownPolicy { input: input.to_owned() };
        let name = input.trim().to_ascii_lowercase();
        match name.as_str() {
            "random" => return Ok(PolicyKind::Random),
            "fifo" => return Ok(PolicyKind::Fifo),
            "clock" => return Ok(PolicyKind::Clock),
            "lru" => return Ok(PolicyKind::Lru),
            "sieve" => return Ok(PolicyKind::Sieve),
            "arc" => return Ok(PolicyKind::Arc),
            "car" => return Ok(PolicyKind::Car),
            "s3-fifo" => return Ok(PolicyKind::S3Fifo),
            "mru" => return Ok(PolicyKind::Mru),
            "2q" => return Ok(PolicyKind::TwoQ),
            "hot-cold" => return Ok(PolicyKind::HotCold),
            "mq" => return Ok(PolicyKind::Mq),
            "lirs" => return Ok(PolicyKind::Lirs),
            "clock-pro" => return Ok(PolicyKind::ClockPro),
            _ => {}
        }
        if let Some(rest) = name.strip_prefix("lru-k") {
            return parse_lru_k(rest).ok_or_else(unknown);
        }
        let (sweep, rest) = match name.strip_prefix("gclock-sweep") {
            Some(rest) => (true, rest),
            None => (false, name.strip_prefix("gclock").ok_or_else(unknown)?),
        };
        let k = if rest.is_empty() {
            Gclock::DEFAULT_K
        } else {
            let digits = rest
                .strip_prefix(':')
                .or_else(|| rest.strip_prefix("(k=")?.strip_suffix(')'))
                .ok_or_else(unknown)?;
            digits.trim().parse::<u16>().map_err(|_| unknown())?
        };
        if (1..=Gclock::MAX_K).contains(&k) {
            Ok(if sweep { PolicyKind::GclockSweep { k } } else { PolicyKind::Gclock { k } })
        } else {
            Err(unknown())
        }
    }
}

/// The part of an LRU-K name after `lru-k`: empty, `:K` or `(k=K)`, with K in 1..=8.
fn parse_lru_k(rest: &str) -> Option<PolicyKind> {
    let k = if rest.is_empty() {
        LruK::DEFAULT_K
    } else {
        let digits = rest.strip_prefix(':').or_else(|| rest.strip_prefix("(k=")?.strip_suffix(')'))?;
        digits.trim().parse::<usize>().ok()?
    };
    (1..=LruK::MAX_K).contains(&k).then(|| PolicyKind::LruK { k: u8::try_from(k).expect("k <= 8") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_accepted_spelling() {
        let cases = [
            ("random", PolicyKind::Random),
            (" RANDOM ", PolicyKind::Random),
            ("gclock", PolicyKind::Gclock { k: 10 }),
            ("GClock:3", PolicyKind::Gclock { k: 3 }),
            ("gclock(k=65534)", PolicyKind::Gclock { k: 65534 }),
            ("GCLOCK(K=1)", PolicyKind::Gclock { k: 1 }),
            ("fifo", PolicyKind::Fifo),
            ("Clock", PolicyKind::Clock),
            (" LRU", PolicyKind::Lru),
            ("sieve", PolicyKind::Sieve),
            ("gclock-sweep", PolicyKind::GclockSweep { k: 10 }),
            ("GCLOCK-Sweep:2", PolicyKind::GclockSweep { k: 2 }),
            ("gclock-sweep(k=3)", PolicyKind::GclockSweep { k: 3 }),
            ("ARC", PolicyKind::Arc),
            (" car", PolicyKind::Car),
            ("S3-FIFO", PolicyKind::S3Fifo),
            ("MRU", PolicyKind::Mru),
            ("lru-k", PolicyKind::LruK { k: 2 }),
            ("LRU-K:3", PolicyKind::LruK { k: 3 }),
            ("lru-k(k=8)", PolicyKind::LruK { k: 8 }),
            (" Lru-K(K=1) ", PolicyKind::LruK { k: 1 }),
            ("2Q", PolicyKind::TwoQ),
            (" Hot-Cold", PolicyKind::HotCold),
            ("mq", PolicyKind::Mq),
            ("LIRS", PolicyKind::Lirs),
            (" Clock-Pro ", PolicyKind::ClockPro),
        ];
        for (input, expected) in cases {
            assert_eq!(input.parse::<PolicyKind>(), Ok(expected), "{input:?}");
        }
    }

    #[test]
    fn rejects_bad_names_and_weights() {
        for input in [
            "",
            "lru2",
            "clock:3",
            "sieve(k=1)",
            "fifo ish",
            "randomly",
            "gclock:",
            "gclock:0",
            "gclock(k=0)",
            "gclock:65535",
            "gclock:-1",
            "gclock(k=3",
            "gclock(3)",
            "gclock10",
            "gclock-sweep:0",
            "gclock-sweeps",
            "arc:2",
            "car(k=1)",
            "s3fifo",
            "s3-fifo:1",
            "lru-k:0",
            "lru-k:9",
            "lru-k(k=9)",
            "lru-k2",
            "lru-k(2)",
            "lru-2",
            "2q:1",
            "hotcold",
            "hot-cold:2",
            "mq(k=1)",
            "lirs:2",
            "clockpro",
            "clock-pro(k=1)",
        ] {
            let err = input.parse::<PolicyKind>().unwrap_err();
            assert_eq!(err.input, input);
            let message = err.to_string();
            assert!(message.contains(&format!("{input:?}")), "{message}");
            assert!(message.contains("gclock(k=K)") && message.contains("sieve"), "{message}");
            assert!(message.contains("lru-k(k=K)") && message.contains("2q"), "{message}");
        }
        assert!(ACCEPTED.contains(&Gclock::MAX_K.to_string()));
    }

    #[test]
    fn display_round_trips_and_matches_the_built_name() {
        for kind in
            PolicyKind::all().into_iter().chain([PolicyKind::Gclock { k: 7 }, PolicyKind::LruK { k: 5 }])
        {
            assert_eq!(kind.to_string().parse::<PolicyKind>(), Ok(kind));
            assert_eq!(kind.build(4, 0).name(), kind.to_string());
        }
    }

    #[test]
    fn default_is_gclock_10() {
        assert_eq!(PolicyKind::default(), PolicyKind::Gclock { k: 10 });
        assert_eq!(PolicyKind::default().to_string(), "gclock(k=10)");
    }
}
