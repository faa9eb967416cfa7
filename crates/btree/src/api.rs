//! The map-like conveniences of a tree: size, first and last records, prefix scans and
//! compare-and-swap (T24). Each is built on the scans (`scan.rs`) or on one latched leaf visit
//! (`Tree::cas_once`), through the handle's read gate and auto-commit like the other reads and
//! writes.

use std::ops::Bound;

use crate::error::{CompareAndSwapError, Result};
use crate::log::ChangeLog;
use crate::scan::{RangeIter, RevRangeIter};
use crate::tree::{ungated, GapGate, Gated, Tree};

/// One key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// The first key past every key that starts with `prefix` (`None`: there is none, the prefix is
/// all `0xff`): the exclusive end of a prefix scan.
#[must_use]
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

impl Tree {
    /// The number of records. **O(n):** it counts them with a scan (through the handle's read
    /// gate, so on a logged database it waits for uncommitted changes in its way like any
    /// read). No count is kept: a counter every insert and delete updates would be one shared
    /// cache line for all writers of the tree, and would have to be logged and recovered with
    /// them. The count is exact only while no other thread writes the tree.
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn len(&self) -> Result<usize> {
        self.range(Bound::Unbounded, Bound::Unbounded).tally()
    }

    /// Whether the tree holds no record (reads at most one: O(log n)).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn is_empty(&self) -> Result<bool> {
        let mut scan = self.range(Bound::Unbounded, Bound::Unbounded).limit(1);
        scan.next_with(|_, _| ()).transpose().map(|r| r.is_none())
    }

    /// The record with the smallest key (`None`: the tree is empty).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn first(&self) -> Result<Option<KeyValue>> {
        self.range(Bound::Unbounded, Bound::Unbounded).limit(1).next().transpose()
    }

    /// The record with the greatest key (`None`: the tree is empty).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn last(&self) -> Result<Option<KeyValue>> {
        self.range_rev(Bound::Unbounded, Bound::Unbounded).limit(1).next().transpose()
    }

    /// The records whose keys start with `prefix`, in key order; double-ended like
    /// [`Tree::range`] (`.rev()` for descending order). An empty prefix scans the whole tree.
    pub fn scan_prefix(&self, prefix: &[u8]) -> RangeIter<'_> {
        let end = prefix_end(prefix);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.range(Bound::Included(prefix), end)
    }

    /// [`Tree::scan_prefix`] in descending key order.
    pub fn scan_prefix_rev(&self, prefix: &[u8]) -> RevRangeIter<'_> {
        let end = prefix_end(prefix);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.range_rev(Bound::Included(prefix), end)
    }

    /// Sets `key` to `new` if its value is `expected`, atomically (T24): `None` as `expected`
    /// means "absent", `None` as `new` deletes the key. Returns `Ok(Err(_))` with the value
    /// found when it is not `expected` (nothing changed then); retry from that value to build
    /// a read-modify-write loop.
    ///
    /// Atomic against every other writer: without a log, the comparison and the write happen
    /// under the leaf's exclusive latch; on a logged database the handle runs it as a
    /// transaction of its own (auto-commit, T14) that locks the key exclusively first, with
    /// record locks off under the leaf latch as well. Values are limited as for
    /// [`Tree::upsert`].
    ///
    /// ```
    /// # use swizzledb_btree::Tree;
    /// # fn incr(tree: &Tree, key: &[u8]) -> swizzledb_btree::Result<u64> {
    /// let mut current = tree.get(key)?;
    /// loop {
    ///     let n = current.as_deref().map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap())) + 1;
    ///     match tree.compare_and_swap(key, current.as_deref(), Some(&n.to_be_bytes()))? {
    ///         Ok(()) => return Ok(n),
    ///         Err(e) => current = e.current,
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    /// An oversize key or value, pool or I/O errors, or (logged) the transaction around it
    /// failed; nothing changes then.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        self.check_open()?;
        match self.auto_commit() {
            Some(ac) => ac.compare_and_swap(self, key, expected, new),
            None => self.cas(key, expected, new, None),
        }
    }

    /// [`Tree::compare_and_swap`] as one latched leaf visit, logging the change before it is
    /// made (T11) and every structure change (T13); what a transaction calls.
    ///
    /// # Errors
    /// As `compare_and_swap`, or the log failed (nothing changes then).
    pub fn compare_and_swap_logged(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        log: &dyn ChangeLog,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        self.check_open()?;
        self.cas(key, expected, new, Some(log))
    }

    /// [`Tree::compare_and_swap_logged`] for a writer that locks the gap it adds a key to or
    /// removes one from (T28), as [`Tree::put_gated`] and [`Tree::delete_gated`] do: once the
    /// comparison holds and the swap adds an absent key or removes a present one, `gate` is
    /// offered the gap's closing key with the leaf latched exclusively, before anything
    /// changes; on a refusal the writer unlatches, calls [`GapGate::wait`] and starts afresh
    /// (comparing again). A comparison that fails, or a swap that replaces a present value or
    /// deletes an absent key, asks nothing. [`Gated::Beyond`]: the closing key lies in a later
    /// leaf; nothing changed.
    ///
    /// # Errors
    /// As [`Tree::compare_and_swap_logged`], or the gate's.
    pub fn compare_and_swap_gated(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        log: &dyn ChangeLog,
        gate: &dyn GapGate,
    ) -> Result<Gated<std::result::Result<(), CompareAndSwapError>>> {
        self.check_open()?;
        self.check_sizes(key, new.unwrap_or_default())?;
        let gated = self.gated(gate, || self.cas_once(key, expected, new, Some(log), Some(gate)))?;
        Ok(match gated {
            Gated::Done(r) => Gated::Done(r.map_err(|current| CompareAndSwapError { current })),
            Gated::Beyond => Gated::Beyond,
        })
    }

    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        log: Option<&dyn ChangeLog>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        let _write = self.begin_write()?;
        // The limits a put meets: the tree's own value limit (pool and log), not only the
        // page size's.
        self.check_sizes(key, new.unwrap_or_default())?;
        let r = ungated(self.with_room(|| self.cas_once(key, expected, new, log, None))?);
        Ok(r.map_err(|current| CompareAndSwapError { current }))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_first_key_past_the_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
        assert_eq!(prefix_end(b"\x00"), Some(b"\x01".to_vec()));
    }
}
