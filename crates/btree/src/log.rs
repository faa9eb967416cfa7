//! The tree's side of write-ahead logging (README T11–T13): what a change to a leaf record is,
//! how to redo one on a page, and the [`ChangeLog`] the engine implements over its log.
//!
//! The tree knows nothing of log records, LSNs or transactions: it tells the log *what* it is
//! about to change (a leaf record) or *what it has just changed* (the pages of a structure
//! change), while it holds the exclusive latches of those pages. The log decides how to record
//! it and stamps the page LSNs.

use swizzledb_buffer::{ExclusiveGuard, PageId};
use swizzledb_sync::Lsn;

use crate::node;

/// A change to one record of a leaf, with what undoing it needs (T11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafChange<'a> {
    /// A new record.
    Insert {
        /// Its key.
        key: &'a [u8],
        /// Its value.
        value: &'a [u8],
    },
    /// A record's value replaced.
    Update {
        /// The record's key.
        key: &'a [u8],
        /// The value before.
        old: &'a [u8],
        /// The value after.
        new: &'a [u8],
    },
    /// A record removed.
    Delete {
        /// Its key.
        key: &'a [u8],
        /// Its value before.
        old: &'a [u8],
    },
}

impl<'a> LeafChange<'a> {
    /// The record's key.
    #[must_use]
    pub fn key(&self) -> &'a [u8] {
        match *self {
            LeafChange::Insert { key, .. }
            | LeafChange::Update { key, .. }
            | LeafChange::Delete { key, .. } => key,
        }
    }

    /// The value the change replaced or removed, `None` for an insert: with the key, all that
    /// undoing it logically needs (the inverse deletes the key or puts this value back).
    #[must_use]
    pub fn old(&self) -> Option<&'a [u8]> {
        match *self {
            LeafChange::Insert { .. } => None,
            LeafChange::Update { old, .. } | LeafChange::Delete { old, .. } => Some(old),
        }
    }

    /// The change that undoes this one: an insert's inverse deletes the record, a delete's
    /// re-inserts the old value, an update's restores it.
    #[must_use]
    pub fn inverse(&self) -> LeafChange<'a> {
        match *self {
            LeafChange::Insert { key, value } => LeafChange::Delete { key, old: value },
            LeafChange::Update { key, old, new } => LeafChange::Update { key, old: new, new: old },
            LeafChange::Delete { key, old } => LeafChange::Insert { key, value: old },
        }
    }
}

/// Applies `change` to the leaf `page` during redo (T12): the record must be absent for an
/// insert and present for an update or delete, and it must fit, because redo repeats the
/// history that produced the page; the key must lie in the page's own range (T1). A page where
/// that fails was not the page the change was logged for (a corrupted log or page); nothing is
/// changed then.
///
/// # Errors
/// What did not match, for the caller to report with the record's LSN and page.
pub fn redo(page: &mut [u8], change: &LeafChange<'_>) -> Result<(), String> {
    if !node::is_leaf(page) {
        return Err("a leaf change on a page that is not a leaf".into());
    }
    let k = change.key();
    if node::low_fence(page).is_some_and(|l| k < l) || node::own_high(page).is_some_and(|h| k >= h) {
        return Err("the key lies outside the page's own range".into());
    }
    match (*change, node::search(page, change.key())) {
        (LeafChange::Insert { key, value }, Err(i)) => node::insert_leaf(page, i, key, value)
            .then_some(())
            .ok_or_else(|| "the record does not fit".into()),
        (LeafChange::Update { new, .. }, Ok(i)) => {
            node::update_value(page, i, new).then_some(()).ok_or_else(|| "the new value does not fit".into())
        }
        (LeafChange::Delete { .. }, Ok(i)) => {
            node::remove(page, i);
            Ok(())
        }
        (LeafChange::Insert { .. }, Ok(_)) => Err("the inserted key is already on the page".into()),
        (_, Err(_)) => Err("the updated or deleted key is not on the page".into()),
    }
}

/// A failure to log, from the engine's log; the operation that met it fails with
/// [`crate::TreeError::Log`].
pub type LogFailure = Box<dyn std::error::Error + Send + Sync>;

/// Where a tree's changes are logged (T11–T13). Every call is made while the pages concerned
/// are latched exclusively; the tree stamps the returned LSN into them as their page LSN.
pub trait ChangeLog {
    /// Logs `change` to the record in `leaf` of the tree rooted at `tree`, **before** it is
    /// applied (the tree has checked that it fits); returns the record's LSN. On an error the
    /// tree does not apply the change.
    ///
    /// # Errors
    /// The log could not record the change.
    fn leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
    ) -> Result<Lsn, LogFailure>;

    /// Logs a structure change **after** it was made: the new contents of every page it wrote
    /// (`pages`, new pages included) and the pages it gave back to the free-page set (`freed`,
    /// still latched by the caller); returns the record's LSN. Structure changes are never
    /// undone (T13).
    ///
    /// # Errors
    /// The log could not record the change; the pages are changed in memory regardless, so the
    /// engine must stop writing pages (its log is then failed for good).
    fn structure_change(&self, pages: &[&ExclusiveGuard<'_>], freed: &[PageId]) -> Result<Lsn, LogFailure>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(records: &[(&[u8], &[u8])]) -> Vec<u8> {
        use swizzledb_buffer::page::{format, PageType};
        let mut page = vec![0u8; 4096];
        format(&mut page, PageId::new(5).unwrap(), PageType::Leaf, 0);
        node::init(&mut page, 0, None, None);
        for (i, (k, v)) in records.iter().enumerate() {
            assert!(node::insert_leaf(&mut page, i, k, v));
        }
        page
    }

    fn records(page: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..node::count(page)).map(|i| (node::key(page, i).to_vec(), node::value(page, i).to_vec())).collect()
    }

    /// T12: redo of each kind of change does what the change did, and redo of its inverse
    /// restores the page's records.
    #[test]
    fn t12_redo_and_inverse_round_trip() {
        let base = leaf(&[(b"a", b"1"), (b"c", b"3")]);
        let changes = [
            LeafChange::Insert { key: b"b", value: b"2" },
            LeafChange::Update { key: b"c", old: b"3", new: b"three" },
            LeafChange::Delete { key: b"a", old: b"1" },
        ];
        let expected: [&[(&[u8], &[u8])]; 3] =
            [&[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], &[(b"a", b"1"), (b"c", b"three")], &[(b"c", b"3")]];
        for (change, want) in changes.iter().zip(expected) {
            let mut page = base.clone();
            redo(&mut page, change).unwrap();
            let want: Vec<_> = want.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(records(&page), want, "{change:?}");
            redo(&mut page, &change.inverse()).unwrap();
            assert_eq!(records(&page), records(&base), "inverse of {change:?}");
        }
    }

    /// T12: a change that does not match the page is refused and changes nothing.
    #[test]
    fn t12_redo_refuses_a_mismatched_page() {
        let base = leaf(&[(b"a", b"1")]);
        for change in [
            LeafChange::Insert { key: b"a", value: b"x" },
            LeafChange::Update { key: b"b", old: b"", new: b"x" },
            LeafChange::Delete { key: b"b", old: b"" },
        ] {
            let mut page = base.clone();
            assert!(redo(&mut page, &change).is_err(), "{change:?}");
            assert_eq!(page, base);
        }
        let mut big = leaf(&[]);
        let value = vec![7u8; 1000];
        let mut n = 0u32;
        while node::leaf_insert_fits(&big, &n.to_be_bytes(), &value) {
            redo(&mut big, &LeafChange::Insert { key: &n.to_be_bytes(), value: &value }).unwrap();
            n += 1;
        }
        let before = big.clone();
        assert!(redo(&mut big, &LeafChange::Insert { key: &n.to_be_bytes(), value: &value }).is_err());
        assert_eq!(big, before, "a record that does not fit changes nothing");
    }

    /// The fit predicates agree with what insert and update then do.
    #[test]
    fn t11_fit_predicates_match_the_node_operations() {
        let mut page = leaf(&[]);
        let mut rng = 12345u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..2000 {
            let k = (next() % 64).to_be_bytes();
            let v = vec![1u8; (next() % 300) as usize];
            match node::search(&page, &k) {
                Ok(i) if next() % 3 == 0 => node::remove(&mut page, i),
                Ok(i) => {
                    let fits = node::leaf_update_fits(&page, i, &v);
                    assert_eq!(node::update_value(&mut page, i, &v), fits);
                }
                Err(i) => {
                    let fits = node::leaf_insert_fits(&page, &k, &v);
                    assert_eq!(node::insert_leaf(&mut page, i, &k, &v), fits);
                }
            }
        }
    }
}
