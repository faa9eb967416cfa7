//! The tree's side of write-ahead logging (README T11–T13): what a change to a leaf record is,
//! how to redo one on a page, and the [`ChangeLog`] the engine implements over its log.
//!
//! The tree knows nothing of log records, LSNs or transactions: it tells the log *what* it is
//! about to change (a leaf record) or *what it has just changed* (the pages of a structure
//! change, each as a [`NodeChange`] or as a whole), while it holds the exclusive latches of
//! those pages. The log decides how to record it and stamps the page LSNs.
//!
//! Every change is described so that redo needs the one page it changes and nothing else
//! (T12, T13): [`redo`] and [`redo_node`] take the page's state before the change and produce
//! its state after it.

use swizzledb_buffer::page;
use swizzledb_buffer::{ExclusiveGuard, PageId, Swip};
use swizzledb_sync::Lsn;

pub use crate::error::LogFailure;
pub use crate::overflow::stored_form;
use crate::{node, overflow};

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
/// history that produced the page; the key must lie in the page's own range (T1). A large new
/// value is stored as the stub of its chain `chain` (T22; the chain's own pages are redone
/// from their images, [`overflow::page_image`]). A page where that fails was not the page the
/// change was logged for (a corrupted log or page); nothing is changed then.
///
/// # Errors
/// What did not match, for the caller to report with the record's LSN and page.
pub fn redo(page: &mut [u8], change: &LeafChange<'_>, chain: &[PageId]) -> Result<(), String> {
    if !node::is_leaf(page) {
        return Err("a leaf change on a page that is not a leaf".into());
    }
    let k = change.key();
    if node::low_fence(page).is_some_and(|l| k < l) || node::own_high(page).is_some_and(|h| k >= h) {
        return Err("the key lies outside the page's own range".into());
    }
    let ps = page.len();
    let mut stub = [0u8; overflow::STUB_LEN];
    match (*change, node::search(page, change.key())) {
        (LeafChange::Insert { key, value }, Err(i)) => {
            let (v, is_stub) = stored_form(ps, value, chain, &mut stub)?;
            node::insert_leaf_as(page, i, key, v, is_stub)
                .then_some(())
                .ok_or_else(|| "the record does not fit".into())
        }
        (LeafChange::Update { new, .. }, Ok(i)) => {
            let (v, is_stub) = stored_form(ps, new, chain, &mut stub)?;
            node::update_value_as(page, i, v, is_stub)
                .then_some(())
                .ok_or_else(|| "the new value does not fit".into())
        }
        (LeafChange::Delete { .. }, Ok(i)) => {
            node::remove(page, i);
            Ok(())
        }
        (LeafChange::Insert { .. }, Ok(_)) => Err("the inserted key is already on the page".into()),
        (_, Err(_)) => Err("the updated or deleted key is not on the page".into()),
    }
}

/// A logical change a structure change made to one node (T13), which [`redo_node`] repeats on
/// that node alone. Children are named by page id, never by frame (a logged swip is always a
/// page id). Structure changes not listed here (root growth, merges, new nodes) are logged as
/// the node's whole contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeChange<'a> {
    /// A split of this node (T2): its records from `key` on (the key's own record included)
    /// left it, and `key` → `right` became its foster key and foster child. (The new node
    /// `right`, which holds those records and took over this node's foster child, is logged as
    /// a whole.)
    Split {
        /// The separator: the first key that moved.
        key: &'a [u8],
        /// The new foster child.
        right: PageId,
    },
    /// Adoption, in the parent (T3): the record `key` → `child` was inserted.
    Adopt {
        /// The adopted node's low fence (its former foster key).
        key: &'a [u8],
        /// The adopted node.
        child: PageId,
    },
    /// Adoption, in the former foster parent (T3): its foster key became its high fence, and
    /// its foster child `child` left it.
    Adopted {
        /// The foster child the parent adopted.
        child: PageId,
    },
    /// A merge of siblings, in the parent (T4): the record `key` → `child` was removed (the
    /// child's records moved into its left sibling, which is logged as a whole).
    Unlink {
        /// The removed record's key.
        key: &'a [u8],
        /// The merged (freed) child.
        child: PageId,
    },
}

/// Applies a logical structure change to `page` during redo (T13), given the page's state just
/// before the change and nothing else: a split truncates the page at its separator (which must
/// be a record of the page, not its first) and sets the foster key and child; an adoption
/// inserts the separator (absent, inside the node's own range, and it must fit) into an inner
/// node; the adopted side needs a foster child that is the adopted page; an unlink removes an
/// inner record, not the first, whose key and child are the ones named. The result must be a
/// valid node (T17). A page where any of that fails is not the page the change was logged for
/// (a corrupted log or page): nothing is changed then.
///
/// # Errors
/// What did not match, for the caller to report with the record's LSN and page.
pub fn redo_node(page: &mut [u8], change: &NodeChange<'_>) -> Result<(), String> {
    let own = page::page_id(page);
    let mut p = page.to_vec();
    match *change {
        NodeChange::Split { key, right } => {
            if right.get() == own {
                return Err("a split names the page itself as its foster child".into());
            }
            let i = match node::search(&p, key) {
                Ok(i) if i > 0 => i,
                Ok(_) => return Err("the separator is the page's first record".into()),
                Err(_) => return Err("the separator is not a key of the page".into()),
            };
            node::truncate(&mut p, i);
            if !node::set_foster(&mut p, key, Swip::page(right)) {
                return Err("the foster key does not fit".into());
            }
        }
        NodeChange::Adopt { key, child } => {
            if node::is_leaf(&p) {
                return Err("an adoption into a leaf".into());
            }
            if child.get() == own {
                return Err("an adoption names the page itself as its child".into());
            }
            if node::own_high(&p).is_some_and(|h| key >= h) {
                return Err("the separator lies outside the page's own range".into());
            }
            let i = match node::search(&p, key) {
                Err(i) if i > 0 => i,
                Err(_) => return Err("the separator lies outside the page's own range".into()),
                Ok(_) => return Err("the separator is already on the page".into()),
            };
            if !node::insert_inner(&mut p, i, key, Swip::page(child)) {
                return Err("the separator does not fit".into());
            }
        }
        NodeChange::Adopted { child } => {
            if node::foster_swip(&p).map(Swip::raw) != Some(Swip::page(child).raw()) {
                return Err(format!("the page's foster child is not page {child}"));
            }
            node::foster_key_becomes_high_fence(&mut p);
        }
        NodeChange::Unlink { key, child } => {
            if node::is_leaf(&p) {
                return Err("an unlink in a leaf".into());
            }
            let i = match node::search(&p, key) {
                Ok(i) if i > 0 => i,
                Ok(_) => return Err("the unlinked record is the page's first".into()),
                Err(_) => return Err("the unlinked key is not on the page".into()),
            };
            if node::child_swip(&p, i).map(Swip::raw) != Some(Swip::page(child).raw()) {
                return Err(format!("the unlinked record's child is not page {child}"));
            }
            node::remove(&mut p, i);
        }
    }
    node::validate(&p).map_err(|e| format!("the change would leave a damaged node: {e}"))?;
    page.copy_from_slice(&p);
    Ok(())
}

/// Rebuilds the new node `right` of a split from `left`'s state just before the split (a
/// *split-off*, logged without its image): the records of `left` from `key` on (`key` must be
/// one of its records, not its first), `left`'s high fence and foster child, as the live split
/// made them ([`node::fill_split_off`]). `left` must be a valid node (T17); so is the result.
///
/// # Errors
/// What did not match, for the caller to report with the record's LSN and pages.
pub fn split_off(left: &[u8], key: &[u8], right: PageId) -> Result<Vec<u8>, String> {
    if right.get() == page::page_id(left) {
        return Err("a split names the page itself as its foster child".into());
    }
    let mid = match node::search(left, key) {
        Ok(i) if i > 0 => i,
        Ok(_) => return Err("the separator is the source's first record".into()),
        Err(_) => return Err("the separator is not a key of the source".into()),
    };
    let mut p = vec![0u8; left.len()];
    page::format(&mut p, right, page::PageType::Leaf, 0);
    if !node::fill_split_off(&mut p, left, mid) {
        return Err("the moved records do not fit a new node".into());
    }
    node::validate(&p).map_err(|e| format!("the split-off would be a damaged node: {e}"))?;
    Ok(p)
}

/// One page of a structure change: its latched page and, unless its new contents are to be
/// logged as a whole, the logical change made to it.
pub type PageChange<'g, 'c> = (&'g ExclusiveGuard<'g>, Option<NodeChange<'c>>);

/// The overflow pages of a leaf change (T22): the chain its new value was written to, and the
/// chain of the value it replaces or removes, which it frees.
#[derive(Clone, Copy)]
pub struct Overflow<'g, 'p> {
    /// The new value's chain, written and latched exclusively by the caller; empty when the
    /// new value (if any) is stored in the leaf. The log stamps nothing: the tree sets the
    /// pages' LSNs.
    pub chain: &'g [ExclusiveGuard<'p>],
    /// The pages of the old value's chain, still latched by the caller, freed once the change
    /// is logged.
    pub freed: &'g [PageId],
}

impl Overflow<'_, '_> {
    /// No overflow pages: a change of values stored in their leaf.
    pub const NONE: Overflow<'static, 'static> = Overflow { chain: &[], freed: &[] };
}

/// Where a tree's changes are logged (T11–T13). Every call is made while the pages concerned
/// are latched exclusively; the tree stamps the returned LSN into them as their page LSN.
pub trait ChangeLog {
    /// Logs `change` to the record in `leaf` of the tree rooted at `tree`, **before** it is
    /// applied (the tree has checked that it fits); returns the record's LSN. The change's
    /// values are whole values, also large ones; `overflow` names the chain the new value was
    /// written to and the chain the change frees (T22), all in the same record. On an error
    /// the tree does not apply the change.
    ///
    /// # Errors
    /// The log could not record the change.
    fn leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure>;

    /// [`ChangeLog::leaf_change`] for the **last** change of its operation (T11): once it is
    /// logged, the operation applies it and returns success — it logs nothing more, runs no
    /// maintenance pass (T9) and nothing in it can fail. A log may therefore end the
    /// operation's transaction with this record. The default logs it as any leaf change.
    ///
    /// # Errors
    /// The log could not record the change.
    fn last_leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        self.leaf_change(tree, leaf, change, overflow)
    }

    /// Logs a structure change **after** it was made: every page it wrote (`pages`, new pages
    /// included), each with what happened to it — a [`NodeChange`], or `None` for new contents
    /// as a whole (the log then records the page's image) — and the pages it gave back to the
    /// free-page set (`freed`, still latched by the caller); returns the record's LSN. The log
    /// may record a page with a `NodeChange` by its image instead (it must, when the log does
    /// not hold the page's state before the change). Structure changes are never undone (T13).
    ///
    /// # Errors
    /// The log could not record the change; the pages are changed in memory regardless, so the
    /// engine must stop writing pages (its log is then failed for good).
    fn structure_change(&self, pages: &[PageChange<'_, '_>], freed: &[PageId]) -> Result<Lsn, LogFailure>;
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

    /// A leaf of 20 records `k0`..`k19` (one byte after the `k`), alone and with a foster child:
    /// the pages the split tests split at their record 7.
    fn leaves_to_split() -> [Vec<u8>; 2] {
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..20u8).map(|i| (vec![b'k', i], vec![i; 30])).collect();
        let borrowed: Vec<(&[u8], &[u8])> = records.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let base = leaf(&borrowed);
        let mut with_foster = base.clone();
        assert!(node::set_foster(&mut with_foster, b"l", Swip::page(pid(40))));
        [base, with_foster]
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
            redo(&mut page, change, &[]).unwrap();
            let want: Vec<_> = want.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(records(&page), want, "{change:?}");
            redo(&mut page, &change.inverse(), &[]).unwrap();
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
            assert!(redo(&mut page, &change, &[]).is_err(), "{change:?}");
            assert_eq!(page, base);
        }
        let mut big = leaf(&[]);
        let value = vec![7u8; 1000];
        let mut n = 0u32;
        while node::leaf_insert_fits(&big, &n.to_be_bytes(), &value) {
            redo(&mut big, &LeafChange::Insert { key: &n.to_be_bytes(), value: &value }, &[]).unwrap();
            n += 1;
        }
        let before = big.clone();
        assert!(redo(&mut big, &LeafChange::Insert { key: &n.to_be_bytes(), value: &value }, &[]).is_err());
        assert_eq!(big, before, "a record that does not fit changes nothing");
    }

    fn pid(n: u64) -> PageId {
        PageId::new(n).unwrap()
    }

    fn inner(seps: &[(&[u8], u64)]) -> Vec<u8> {
        use swizzledb_buffer::page::{format, PageType};
        let mut page = vec![0u8; 4096];
        format(&mut page, pid(5), PageType::Inner, 1);
        node::init(&mut page, 1, None, None);
        for (i, (k, child)) in seps.iter().enumerate() {
            assert!(node::insert_inner(&mut page, i, k, Swip::page(pid(*child))));
        }
        page
    }

    /// T13: redo of a split, on the page before it, gives the bytes of the tree's own steps
    /// (truncate at the separator, set the foster key and child), also when the page had a
    /// foster child already; a separator that is not a record of the page, or is its first,
    /// is refused and changes nothing.
    #[test]
    fn t13_redo_of_a_split_repeats_it_and_refuses_a_mismatch() {
        for before in leaves_to_split() {
            let mut made = before.clone();
            node::truncate(&mut made, 7);
            assert!(node::set_foster(&mut made, &[b'k', 7], Swip::page(pid(9))));
            let mut page = before.clone();
            redo_node(&mut page, &NodeChange::Split { key: &[b'k', 7], right: pid(9) }).unwrap();
            assert_eq!(page, made);
            assert_eq!(node::count(&page), 7);
            assert_eq!(node::foster_key(&page), Some(&[b'k', 7][..]));
            for bad in [
                NodeChange::Split { key: b"k", right: pid(9) },
                NodeChange::Split { key: &[b'k', 0], right: pid(9) },
                NodeChange::Split { key: &[b'k', 7], right: pid(5) },
                NodeChange::Split { key: b"z", right: pid(9) },
            ] {
                let mut page = before.clone();
                assert!(redo_node(&mut page, &bad).is_err(), "{bad:?}");
                assert_eq!(page, before, "a refused change changes nothing");
            }
        }
    }

    /// T13 (RECOVERY.md R29): the split-off rebuilt from the old node before the split is the
    /// new node as the live split makes it (`node::fill_split_off` on a fresh page): the
    /// records from the separator on, the fences `[separator, old high)`, the old node's foster
    /// key and child; together with the old node after its `Split`, the old node's records.
    /// Mismatches are refused.
    #[test]
    fn t13_a_split_off_is_the_new_node_the_split_made() {
        for before in leaves_to_split() {
            let mut live = vec![0u8; before.len()];
            page::format(&mut live, pid(9), page::PageType::Leaf, 0);
            assert!(node::fill_split_off(&mut live, &before, 7));
            let rebuilt = split_off(&before, &[b'k', 7], pid(9)).unwrap();
            assert_eq!(rebuilt, live, "the live split's new node, byte for byte");
            assert_eq!(page::page_id(&rebuilt), 9);
            assert_eq!(node::low_fence(&rebuilt), Some(&[b'k', 7][..]));
            assert_eq!(node::high_fence(&rebuilt), node::high_fence(&before));
            assert_eq!(node::foster_key(&rebuilt), node::foster_key(&before));
            let mut left = before.clone();
            redo_node(&mut left, &NodeChange::Split { key: &[b'k', 7], right: pid(9) }).unwrap();
            let mut both = super::tests::records(&left);
            both.extend(super::tests::records(&rebuilt));
            assert_eq!(both, super::tests::records(&before));
            for (key, right) in
                [(&b"k"[..], pid(9)), (&[b'k', 0][..], pid(9)), (&[b'k', 7][..], pid(5)), (&b"z"[..], pid(9))]
            {
                assert!(split_off(&before, key, right).is_err(), "{key:?} → {right}");
            }
        }
    }

    /// T13: redo of an adoption on the parent inserts the separator as the tree does; on the
    /// foster parent it turns the foster key into the high fence. Mismatches are refused and
    /// change nothing.
    #[test]
    fn t13_redo_of_an_adoption_repeats_it_and_refuses_a_mismatch() {
        let parent = inner(&[(b"", 10), (b"m", 11)]);
        let mut made = parent.clone();
        assert!(node::insert_inner(&mut made, 1, b"f", Swip::page(pid(12))));
        let mut page = parent.clone();
        redo_node(&mut page, &NodeChange::Adopt { key: b"f", child: pid(12) }).unwrap();
        assert_eq!(page, made);
        let mut bounded = parent.clone();
        assert!(node::set_foster(&mut bounded, b"t", Swip::page(pid(30))));
        for (before, bad) in [
            (&parent, NodeChange::Adopt { key: b"m", child: pid(12) }),
            (&parent, NodeChange::Adopt { key: b"f", child: pid(5) }),
            (&bounded, NodeChange::Adopt { key: b"u", child: pid(12) }),
            (&leaf(&[(b"a", b"1")]), NodeChange::Adopt { key: b"f", child: pid(12) }),
        ] {
            let mut page = before.clone();
            assert!(redo_node(&mut page, &bad).is_err(), "{bad:?}");
            assert_eq!(&page, before, "a refused change changes nothing");
        }
        let mut full = inner(&[(b"", 10)]);
        let mut n = 0u16;
        while node::insert_inner(
            &mut full,
            usize::from(n) + 1,
            &[&[1u8; 100][..], &n.to_be_bytes()].concat(),
            Swip::page(pid(100 + u64::from(n))),
        ) {
            n += 1;
        }
        let before = full.clone();
        assert!(
            redo_node(&mut full, &NodeChange::Adopt { key: &[2u8; 120], child: pid(99) }).is_err(),
            "no room"
        );
        assert_eq!(full, before);

        let mut foster_parent = leaf(&[(b"a", b"1"), (b"b", b"2")]);
        assert!(node::set_foster(&mut foster_parent, b"c", Swip::page(pid(12))));
        let mut made = foster_parent.clone();
        node::foster_key_becomes_high_fence(&mut made);
        let mut page = foster_parent.clone();
        redo_node(&mut page, &NodeChange::Adopted { child: pid(12) }).unwrap();
        assert_eq!(page, made);
        assert_eq!(node::high_fence(&page), Some(&b"c"[..]));
        for (before, child) in [(&foster_parent, 13), (&leaf(&[(b"a", b"1")]), 12)] {
            let mut page = before.clone();
            assert!(redo_node(&mut page, &NodeChange::Adopted { child: pid(child) }).is_err());
            assert_eq!(&page, before);
        }
    }

    /// T13: redo of an unlink removes the parent's record as a sibling merge does; a record
    /// that is absent, the first, or names another child is refused and changes nothing.
    #[test]
    fn t13_redo_of_an_unlink_repeats_it_and_refuses_a_mismatch() {
        let parent = inner(&[(b"", 10), (b"f", 12), (b"m", 11)]);
        let mut made = parent.clone();
        node::remove(&mut made, 1);
        let mut page = parent.clone();
        redo_node(&mut page, &NodeChange::Unlink { key: b"f", child: pid(12) }).unwrap();
        assert_eq!(page, made);
        for (before, bad) in [
            (&parent, NodeChange::Unlink { key: b"g", child: pid(12) }),
            (&parent, NodeChange::Unlink { key: b"", child: pid(10) }),
            (&parent, NodeChange::Unlink { key: b"f", child: pid(11) }),
            (&leaf(&[(b"f", b"1")]), NodeChange::Unlink { key: b"f", child: pid(12) }),
        ] {
            let mut page = before.clone();
            assert!(redo_node(&mut page, &bad).is_err(), "{bad:?}");
            assert_eq!(&page, before, "a refused change changes nothing");
        }
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
