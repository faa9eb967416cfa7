//! A policy together with the wrappers around it: what a pool is configured with.

use std::fmt;
use std::str::FromStr;

use crate::{BpConfig, BpConfigError, BpWrapper, LeafOnly, PolicyKind, UnknownPolicy, Variant};

use crate::policy::Policy;

/// The prefix that restricts a policy to the leaves of the cached subtree.
const LEAF_PREFIX: &str = "leaf-";

/// A replacement policy and how it is wrapped. Parses as a [`PolicyKind`] spelling, optionally
/// prefixed with a BP-Wrapper prefix ([`BpWrapper`]: `bpw-` batching and prefetching, `bpw-batch-`,
/// `bpw-pref-`, or `locked-` for the same lock taken on every access) and, before that, with
/// `leaf-` for the structure-aware variant ([`LeafOnly`]): `gclock`, `leaf-lru`, `bpw-2q`,
/// `locked-lru`, `leaf-bpw-2q`, `leaf-gclock:4`. The prefixes read from the outside in: in `leaf-bpw-2q`,
/// `LeafOnly` wraps `BpWrapper`, which wraps 2Q. Displays as the built policy's [`Policy::name`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct PolicySpec {
    /// The policy proper.
    pub kind: PolicyKind,
    /// Restrict the policy to frames without swizzled children (R8, [`LeafOnly`]).
    pub leaf_only: bool,
    /// Wrap the policy in [`BpWrapper`] with this variant (and the default S and T).
    pub bp_wrapper: Option<Variant>,
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
        let d = BpConfig::default();
        self.build_with_queue(capacity, seed, d.queue_size, d.batch_threshold)
            .expect("default S and T are valid")
    }

    /// [`PolicySpec::build`] with BP-Wrapper's queue size S and batch threshold T instead of the
    /// defaults (64 and 32); both are ignored unless the policy is wrapped (`bpw-`, `bpw-batch-`,
    /// `bpw-pref-`, `locked-`; the unbatched variants hold no queue).
    ///
    /// # Errors
    /// [`BpConfigError::Threshold`] unless `1 <= batch_threshold <= queue_size`, and
    /// [`BpConfigError::QueueSize`] above [`MAX_QUEUE_SIZE`](crate::MAX_QUEUE_SIZE), for a
    /// wrapped policy.
    ///
    /// # Panics
    /// As [`PolicyKind::build`].
    pub fn build_with_queue(
        &self,
        capacity: usize,
        seed: u64,
        queue_size: usize,
        batch_threshold: usize,
    ) -> Result<Box<dyn Policy>, BpConfigError> {
        let mut policy = self.kind.build(capacity, seed);
        if let Some(variant) = self.bp_wrapper {
            let config = BpConfig { variant, queue_size, batch_threshold };
            policy = Box::new(BpWrapper::with_config(policy, capacity, config)?);
        }
        if self.leaf_only {
            policy = Box::new(LeafOnly::new(policy, capacity));
        }
        Ok(policy)
    }
}

impl From<PolicyKind> for PolicySpec {
    fn from(kind: PolicyKind) -> PolicySpec {
        PolicySpec { kind, leaf_only: false, bp_wrapper: None }
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.leaf_only {
            f.write_str(LEAF_PREFIX)?;
        }
        if let Some(variant) = self.bp_wrapper {
            f.write_str(variant.prefix())?;
        }
        self.kind.fmt(f)
    }
}

/// Splits `prefix` (ASCII, matched case-insensitively) off `input`.
fn strip_prefix_ignore_case<'a>(input: &'a str, prefix: &str) -> Option<&'a str> {
    let head = input.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &input[prefix.len()..])
}

impl FromStr for PolicySpec {
    type Err = UnknownPolicy;

    fn from_str(input: &str) -> Result<PolicySpec, UnknownPolicy> {
        let rest = input.trim();
        let (leaf_only, rest) = match strip_prefix_ignore_case(rest, LEAF_PREFIX) {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let (bp_wrapper, rest) = Variant::PREFIXES
            .iter()
            .find_map(|&(prefix, variant)| Some((Some(variant), strip_prefix_ignore_case(rest, prefix)?)))
            .unwrap_or((None, rest));
        let kind = rest.parse::<PolicyKind>().map_err(|_| UnknownPolicy { input: input.to_owned() })?;
        Ok(PolicySpec { kind, leaf_only, bp_wrapper })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// S and T reach the wrapper; a threshold above the queue size is refused for a wrapped
    /// policy and ignored for an unwrapped one.
    #[test]
    fn build_with_queue_checks_and_passes_s_and_t() {
        let bpw: PolicySpec = "bpw-batch-lru".parse().unwrap();
        assert!(matches!(
            bpw.build_with_queue(8, 1, 8, 16),
            Err(BpConfigError::Threshold { threshold: 16, size: 8 })
        ));
        assert!(bpw.build_with_queue(8, 1, 8, 0).is_err());
        assert!(PolicySpec::from(PolicyKind::Lru).build_with_queue(8, 1, 8, 16).is_ok());
        assert_eq!(bpw.build_with_queue(8, 1, 1, 1).unwrap().name(), "bpw-batch-lru");
        // T = 1: every access commits at once, so the lock is taken once per access.
        let policy = bpw.build_with_queue(8, 1, 1, 1).unwrap();
        let hooks: Vec<crate::policy::FrameHook> =
            (0..8).map(|_| crate::policy::FrameHook::default()).collect();
        for f in 0..8u32 {
            policy.on_insert(
                swizzledb_sync::FrameId(f),
                swizzledb_sync::PageId::new(u64::from(f) + 1).unwrap(),
                &hooks[f as usize],
            );
        }
        let stats = policy.lock_stats().unwrap();
        assert_eq!((stats.accesses, stats.lock_acquisitions), (8, 8));
    }

    /// Every spelling round-trips through Display, which equals the built policy's name.
    #[test]
    fn display_parses_back_and_names_the_policy() {
        for kind in PolicyKind::all() {
            for leaf_only in [false, true] {
                for bp_wrapper in [
                    None,
                    Some(Variant::None),
                    Some(Variant::Batching),
                    Some(Variant::Prefetching),
                    Some(Variant::Both),
                ] {
                    let spec = PolicySpec { kind, leaf_only, bp_wrapper };
                    let shown = spec.to_string();
                    assert_eq!(shown.parse::<PolicySpec>(), Ok(spec));
                    assert_eq!(spec.build(8, 1).name(), shown);
                }
            }
        }
        assert_eq!(" Leaf-GCLOCK:4 ".parse::<PolicySpec>().unwrap().to_string(), "leaf-gclock(k=4)");
        assert_eq!("LEAF-BPW-2Q".parse::<PolicySpec>().unwrap().to_string(), "leaf-bpw-2q");
        assert_eq!("bpw-lru".parse::<PolicySpec>().unwrap().to_string(), "bpw-lru");
        assert_eq!("Locked-LRU".parse::<PolicySpec>().unwrap().bp_wrapper, Some(Variant::None));
        assert_eq!("bpw-batch-2q".parse::<PolicySpec>().unwrap().bp_wrapper, Some(Variant::Batching));
        assert_eq!("leaf-bpw-pref-lru".parse::<PolicySpec>().unwrap().to_string(), "leaf-bpw-pref-lru");
    }

    /// Only one order of the prefixes is accepted (`leaf-bpw-`), each at most once.
    #[test]
    fn unknown_names_are_refused_with_the_input() {
        for bad in [
            "leaf-",
            "leaf-leaf-lru",
            "leafy",
            "",
            "bpw-",
            "bpw-leaf-lru",
            "bpw-bpw-lru",
            "leaf-bpw-",
            "locked-bpw-lru",
            "bpw-locked-lru",
            "bpw-batch-",
        ] {
            let err = bad.parse::<PolicySpec>().unwrap_err();
            assert_eq!(err.input, bad);
        }
    }
}
