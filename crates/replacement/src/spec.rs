//! A policy together with the wrappers around it: what a pool is configured with.

use std::fmt;
use std::str::FromStr;

use crate::{LeafOnly, Policy, PolicyKind, UnknownPolicy};

/// The prefix that restricts a policy to the leaves of the cached subtree.
const LEAF_PREFIX: &str = "leaf-";

/// A replacement policy and how it is wrapped. Parses as a [`PolicyKind`] spelling, optionally
/// prefixed with `leaf-` for the structure-aware variant ([`LeafOnly`]): `gclock`, `leaf-lru`,
/// `leaf-gclock:4`. Displays as the built policy's [`Policy::name`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct PolicySpec {
    /// The policy proper.
    pub kind: PolicyKind,
    /// Restrict the policy to frames without swizzled children (R8, [`LeafOnly`]).
    pub leaf_only: bool,
}

impl PolicySpec {
    /// Every policy of [`PolicyKind::all`], unwrapped.
    #[must_use]
    pub fn all() -> Vec<PolicySpec> {
        PolicyKind::all().into_iter().map(PolicySpec::from).collect()
    }

    /// Builds the (wrapped) policy over frames `0..capacity`; see [`PolicyKind::build`].
    ///
    /// # Panics
    /// As [`PolicyKind::build`].
    #[must_use]
    pub fn build(&self, capacity: usize, seed: u64) -> Box<dyn Policy> {
        let policy = self.kind.build(capacity, seed);
        if self.leaf_only {
            Box::new(LeafOnly::new(policy, capacity))
        } else {
            policy
        }
    }
}

impl From<PolicyKind> for PolicySpec {
    fn from(kind: PolicyKind) -> PolicySpec {
        PolicySpec { kind, leaf_only: false }
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.leaf_only {
            f.write_str(LEAF_PREFIX)?;
        }
        self.kind.fmt(f)
    }
}

impl FromStr for PolicySpec {
    type Err = UnknownPolicy;

    fn from_str(input: &str) -> Result<PolicySpec, UnknownPolicy> {
        let trimmed = input.trim();
        let lower = trimmed.to_ascii_lowercase();
        let (leaf_only, rest) = match lower.strip_prefix(LEAF_PREFIX) {
            Some(_) => (true, &trimmed[LEAF_PREFIX.len()..]),
            None => (false, trimmed),
        };
        let kind = rest.parse::<PolicyKind>().map_err(|_| UnknownPolicy { input: input.to_owned() })?;
        Ok(PolicySpec { kind, leaf_only })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling round-trips through Display, which equals the built policy's name.
    #[test]
    fn display_parses_back_and_names_the_policy() {
        for kind in PolicyKind::all() {
            for leaf_only in [false, true] {
                let spec = PolicySpec { kind, leaf_only };
                let shown = spec.to_string();
                assert_eq!(shown.parse::<PolicySpec>(), Ok(spec));
                assert_eq!(spec.build(8, 1).name(), shown);
            }
        }
        assert_eq!(" Leaf-GCLOCK:4 ".parse::<PolicySpec>().unwrap().to_string(), "leaf-gclock(k=4)");
    }

    #[test]
    fn unknown_names_are_refused_with_the_input() {
        for bad in ["leaf-", "leaf-leaf-lru", "leafy", ""] {
            let err = bad.parse::<PolicySpec>().unwrap_err();
            assert_eq!(err.input, bad);
        }
    }
}
