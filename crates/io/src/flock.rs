//! Advisory locks for the file systems in memory (README IO5): who holds a file's lock, by open
//! file description, as `flock(2)` keeps it for the operating system's files.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// The next open file description's number.
static NEXT_DESCRIPTION: AtomicU64 = AtomicU64::new(1);

/// A number for a new open file description (one `open`; its handle's clones share it).
pub(crate) fn new_description() -> u64 {
    NEXT_DESCRIPTION.fetch_add(1, Ordering::Relaxed)
}

/// The holders of one file's lock: one exclusive holder, or any number of shared ones.
#[derive(Debug, Default)]
pub(crate) struct Holders {
    exclusive: Option<u64>,
    shared: BTreeSet<u64>,
}

impl Holders {
    /// IO5's `try_lock` by description `by`: granted unless another description holds the lock
    /// in either mode; a shared hold of `by`'s own becomes the exclusive one.
    pub(crate) fn try_lock(&mut self, by: u64) -> bool {
        if self.exclusive.is_some_and(|h| h != by) || self.shared.iter().any(|&h| h != by) {
            return false;
        }
        self.shared.remove(&by);
        self.exclusive = Some(by);
        true
    }

    /// IO5's `try_lock_shared` by `by`: granted unless another description holds the lock
    /// exclusively; an exclusive hold of `by`'s own becomes a shared one.
    pub(crate) fn try_lock_shared(&mut self, by: u64) -> bool {
        if self.exclusive.is_some_and(|h| h != by) {
            return false;
        }
        self.exclusive = None;
        self.shared.insert(by);
        true
    }

    /// Whatever `by` holds is let go.
    pub(crate) fn unlock(&mut self, by: u64) {
        if self.exclusive == Some(by) {
            self.exclusive = None;
        }
        self.shared.remove(&by);
    }

    /// Whether nobody holds the lock.
    pub(crate) fn is_free(&self) -> bool {
        self.exclusive.is_none() && self.shared.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::Holders;

    #[test]
    fn io5_one_exclusive_or_many_shared_holders() {
        let mut h = Holders::default();
        assert!(h.try_lock(1) && h.try_lock(1), "a holder's request again is granted");
        assert!(!h.try_lock(2) && !h.try_lock_shared(2));
        assert!(h.try_lock_shared(1), "the holder's own lock becomes shared");
        assert!(h.try_lock_shared(2) && h.try_lock_shared(3));
        assert!(!h.try_lock(2), "not while another holds it shared");
        h.unlock(1);
        h.unlock(3);
        assert!(h.try_lock(2), "the last shared holder's lock becomes exclusive");
        h.unlock(2);
        assert!(h.is_free());
        h.unlock(7);
        assert!(h.is_free(), "letting go of what one does not hold changes nothing");
    }
}
