//! Naming and building policies from configuration strings (command lines, benchmark configs).

use std::fmt;
use std::str::FromStr;

use crate::{Clock, ClockPro, Fifo, Gclock, Lirs, Lru, Policy, RandomPolicy, Sieve};

/// The accepted spellings, for error messages.
const ACCEPTED: &str =
    "random, fifo, clock, lru, sieve, gclock, gclock:K, gclock(k=K) with 1 <= K <= 65534, lirs, clock-pro";

/// Which replacement policy to build. Parses case-insensitively from `random`, `fifo`, `clock`,
/// `lru`, `sieve`, `gclock`, `gclock:K`, `gclock(k=K)`, `lirs` and `clock-pro`; displays as the canonical spelling
/// (`random`, `fifo`, `gclock(k=10)`, ...), which is also the built policy's [`Policy::name`].
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
            PolicyKind::Lirs,
            PolicyKind::ClockPro,
        ]
    }

    /// Builds the policy over frames `0..capacity`. `seed` feeds policies that draw random
    /// numbers; the others ignore it.
    ///
    /// # Panics
    /// If `k` is outside 1..=[`Gclock::MAX_K`] (impossible for a parsed kind), or if
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
            "lirs" => return Ok(PolicyKind::Lirs),
            "clock-pro" => return Ok(PolicyKind::ClockPro),
            _ => {}
        }
        let Some(rest) = name.strip_prefix("gclock") else {
            return Err(unknown());
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
            Ok(PolicyKind::Gclock { k })
        } else {
            Err(unknown())
        }
    }
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
            "lirs:2",
            "clockpro",
            "clock-pro(k=1)",
        ] {
            let err = input.parse::<PolicyKind>().unwrap_err();
            assert_eq!(err.input, input);
            let message = err.to_string();
            assert!(message.contains(&format!("{input:?}")), "{message}");
            assert!(message.contains("gclock(k=K)") && message.contains("sieve"), "{message}");
        }
        assert!(ACCEPTED.contains(&Gclock::MAX_K.to_string()));
    }

    #[test]
    fn display_round_trips_and_matches_the_built_name() {
        for kind in PolicyKind::all().into_iter().chain([PolicyKind::Gclock { k: 7 }]) {
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
