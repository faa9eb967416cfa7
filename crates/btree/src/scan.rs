//! Scans, through the read gate that decides which records a read may return (T18,
//! [`ReadGate`]).
//!
//! A scan copies the records of one leaf at a time out under its shared latch; the next leaf is
//! found by a fresh descent from the root (no sibling links, T1). With a [`ReadGate`] that
//! checks, every key the scan meets is offered to the gate while its leaf is latched, and so is
//! the *closing key* of every gap the scan covers: the first key after the gap (the first key
//! past the range's end, or the end of the tree). That is what lets the engine hide uncommitted
//! records and make a transaction's range read phantom-free with next-key locking (LOCKS.md).
//!
//! A gap's closing key can sit in a later leaf than the gap's start. The scan then checks, after
//! the closing key passed, that the leaves holding the gap did not change since it read them
//! (same page LSN and record count); if one did, it reads again from just after the last record
//! it returned.

use std::ops::Bound;
use swizzledb_buffer::{FrameId, PageId, Shared, SharedGuard};

use crate::error::{Result, TreeError};
use crate::node;
use crate::tree::{NoGate, ReadGate, Tree};

/// What a range read returns in place of the tree's records (T27): the engine's snapshot
/// reads. The scan reads the tree with no gate and asks the overlay, for each record it
/// returns, which value the reader sees, and for each stretch between two records it passed,
/// which records the reader sees there that the tree no longer holds.
pub trait Overlay: Send + Sync {
    /// What the reader sees for `key`, which the tree held as `value` when the scan read it.
    ///
    /// # Errors
    /// The read must fail (the reader's snapshot ended).
    fn rebuild(&self, key: &[u8], value: &[u8]) -> Result<Rebuilt>;

    /// The records strictly inside `(lo, hi)` that the reader sees although the scan found
    /// none there, in ascending key order. Asked only after the scan passed that stretch.
    ///
    /// # Errors
    /// As [`Overlay::rebuild`].
    fn between(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<Vec<Entry>>;
}

/// What an [`Overlay`] makes of a record the tree holds.
#[derive(Debug)]
pub enum Rebuilt {
    /// The tree's value is the reader's.
    Keep,
    /// The reader does not see the key.
    Hide,
    /// The reader sees this value instead.
    Value(Vec<u8>),
}

/// One record of a scan: key and value.
type Entry = (Vec<u8>, Vec<u8>);

/// The records a scan copied out of a leaf and has not returned yet, in one byte buffer: a
/// record costs an allocation only when it is returned as an [`Entry`] (none through
/// `next_with`), so a scan that stops after a few records pays little for the rest of the leaf.
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Per record: where its key starts in `bytes`, key length, value length (value follows).
    items: Vec<(usize, usize, usize)>,
    /// The next record to return.
    pos: usize,
}

/// The first reservation of a [`Batch`]: bytes, and records.
const FIRST_BATCH_BYTES: usize = 1024;
const FIRST_BATCH_RECORDS: usize = 16;

impl Batch {
    fn is_empty(&self) -> bool {
        self.pos == self.items.len()
    }

    /// Records copied in and not returned yet.
    fn len(&self) -> usize {
        self.items.len() - self.pos
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.pos = 0;
    }

    fn push_back(&mut self, k: &[u8], v: &[u8]) {
        if self.is_empty() && self.pos > 0 {
            self.clear();
        }
        if self.bytes.capacity() == 0 {
            // One allocation for a short scan's records, where growing from nothing took a
            // chain of reallocations, each copying what was in.
            self.bytes.reserve(FIRST_BATCH_BYTES.max(k.len() + v.len()));
            self.items.reserve(FIRST_BATCH_RECORDS);
        }
        self.items.push((self.bytes.len(), k.len(), v.len()));
        self.bytes.extend_from_slice(k);
        self.bytes.extend_from_slice(v);
    }

    fn record(&self, i: usize) -> (&[u8], &[u8]) {
        let (at, kl, vl) = self.items[i];
        (&self.bytes[at..at + kl], &self.bytes[at + kl..at + kl + vl])
    }

    /// The key of the last record copied in.
    fn back_key(&self) -> Option<&[u8]> {
        (!self.is_empty()).then(|| self.record(self.items.len() - 1).0)
    }

    /// Calls `f` with the next record and moves past it.
    fn pop_front_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<R> {
        if self.is_empty() {
            return None;
        }
        let (k, v) = self.record(self.pos);
        let r = f(k, v);
        self.pos += 1;
        Some(r)
    }
}

/// Copies record `i` of the latched leaf `g` into `buf`, a large value read from its overflow
/// chain (T22) while the leaf stays latched.
fn push_record(tree: &Tree, buf: &mut Batch, g: &SharedGuard<'_>, i: usize) -> Result<()> {
    let k = node::key(g, i);
    if node::is_stub(&**g, i) {
        let mut v = Vec::new();
        tree.read_large(node::value(g, i), g.page_id(), &mut v)?;
        buf.push_back(k, &v);
    } else {
        buf.push_back(k, node::value(g, i));
    }
    Ok(())
}

/// A leaf as a scan read it, to check later that it did not change: its frame and the frame's
/// latch version under the scan's shared latch (buffer B35).
#[derive(Clone, Copy, Debug)]
struct Seen {
    page: PageId,
    frame: FrameId,
    version: u64,
}

impl Seen {
    fn of(g: &SharedGuard<'_>) -> Seen {
        Seen { page: g.page_id(), frame: g.frame(), version: g.latch_version() }
    }
}

/// What a forward scan's read of one leaf found (the leaf is unlatched again).
struct LeafRead {
    /// `Some(key)`: the gate refused `key` (`None`: the end of the tree).
    blocked: Option<Option<Vec<u8>>>,
    /// The range (or, gated, its closing key) ends in this leaf.
    ended: bool,
    /// A key (or the end of the tree) passed the gate.
    passed_any: bool,
    /// The first key that passed (`Some(None)`: the end of the tree), recorded only where it
    /// closes an open gap and the gate holds what passed (T18).
    closing: Option<Option<Vec<u8>>>,
    /// The visit stopped before the first large value it would copy, with the leaves of the
    /// open gap still to check (T18): the next visit starts at that value's key.
    stopped_for_gap: bool,
    here: Seen,
}

/// What a backward scan's read of one leaf found (the leaf is unlatched again).
struct BwdLeafRead {
    /// `Some(key)`: the gate refused `key` (`None`: the end of the tree).
    blocked: Option<Option<Vec<u8>>>,
    /// The range's start is in this leaf.
    ended: bool,
    /// The gap above this leaf's records is closed by a key in a later leaf: the first at or
    /// after this position, to check once the leaf is unlatched.
    probe_from: Option<Vec<u8>>,
    here: Seen,
}

/// What a gated look for the first key at or after a position found.
enum Probe {
    /// The key (or the end of the tree) passed the gate.
    Passed,
    /// The gate made the reader wait: what was read before may be stale.
    Waited,
}

/// The smallest key above `k` (keys are byte strings: `k` followed by a zero byte).
#[must_use]
pub fn key_after(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.extend_from_slice(k);
    v.push(0);
    v
}

/// [`key_after`] written into `out`, reusing its buffer.
fn key_after_into(out: &mut Vec<u8>, k: &[u8]) {
    out.clear();
    out.reserve(k.len() + 1);
    out.extend_from_slice(k);
    out.push(0);
}

/// A range's lower bound as the smallest key in it (`None`: unbounded).
fn lower_bound(start: Bound<&[u8]>) -> Option<Vec<u8>> {
    match start {
        Bound::Unbounded => None,
        Bound::Included(k) => Some(k.to_vec()),
        Bound::Excluded(k) => Some(key_after(k)),
    }
}

impl Tree {
    /// Records with keys in `range`, in key order, through this handle's read gate (T18). The
    /// iterator is double-ended: [`DoubleEndedIterator::next_back`] reads from the range's end,
    /// and the two ends stop where they meet.
    pub fn range<'t>(&'t self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'t> {
        self.range_gated(start, end, self.own_gate())
    }

    /// [`Tree::range`] through `gate` instead of the handle's own.
    pub fn range_gated<'t>(
        &'t self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        gate: &'t (dyn ReadGate + Sync),
    ) -> RangeIter<'t> {
        RangeIter {
            fwd: Fwd::new(self, gate, start, end),
            bwd: Bwd::new(self, gate, start, end),
            front_last: None,
            back_last: None,
            left: usize::MAX,
            done: false,
            overlay: None,
            refused: None,
        }
    }

    /// [`Tree::range`] as `overlay` rebuilds it (T27): the tree is read with no gate, and each
    /// record returned, and each stretch between them, is what the overlay makes of it.
    pub fn range_overlaid<'t>(
        &'t self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        overlay: Box<dyn Overlay + 't>,
    ) -> RangeIter<'t> {
        let mut r = self.range_gated(start, end, &NoGate);
        r.overlay = Some(Overlaid {
            overlay,
            front: std::collections::VecDeque::new(),
            middle: std::collections::VecDeque::new(),
            back: std::collections::VecDeque::new(),
            front_pos: start.map(<[u8]>::to_vec),
            back_pos: end.map(<[u8]>::to_vec),
            tree_done: false,
            spare: Vec::new(),
        });
        r
    }

    /// [`Tree::range_rev`] through `overlay` ([`Tree::range_overlaid`]).
    pub fn range_rev_overlaid<'t>(
        &'t self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        overlay: Box<dyn Overlay + 't>,
    ) -> RevRangeIter<'t> {
        RevRangeIter(self.range_overlaid(start, end, overlay))
    }

    /// Records with keys in `range`, in descending key order, through this handle's read gate:
    /// each step copies out the records of the leaf just below the current bound, then
    /// continues below that leaf's low fence. Double-ended like [`Tree::range`] (its
    /// `next_back` returns the smallest keys first).
    pub fn range_rev<'t>(&'t self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RevRangeIter<'t> {
        self.range_rev_gated(start, end, self.own_gate())
    }

    /// [`Tree::range_rev`] through `gate` instead of the handle's own.
    pub fn range_rev_gated<'t>(
        &'t self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        gate: &'t (dyn ReadGate + Sync),
    ) -> RevRangeIter<'t> {
        RevRangeIter(self.range_gated(start, end, gate))
    }

    /// The smallest key at or after `from`, or `None` past the last one. No gate: it sees
    /// uncommitted keys (the engine uses it to find the key whose lock guards a gap).
    ///
    /// # Errors
    /// I/O errors or corruption.
    pub fn first_key_from(&self, from: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        self.at_first_key_from(from, |k| k.map(<[u8]>::to_vec))
    }

    /// Calls `at` with the first key at or after `from` (`None`: the end of the tree) while the
    /// leaf whose range holds `from` is latched shared, if that leaf holds it (or its range has
    /// no upper bound); `Ok(None)`, without calling `at`, if the key lies in a later leaf. So
    /// no key can enter `[from, key)` while `at` runs (T28: a writer's gap lock taken there).
    ///
    /// # Errors
    /// I/O errors or corruption.
    pub fn at_first_key_in_leaf<R>(
        &self,
        from: &[u8],
        at: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<Option<R>> {
        self.check_open()?;
        let g = self.with_room(|| self.leaf_shared(from))?;
        let (Ok(i) | Err(i)) = node::search(&*g, from);
        if i < node::count(&g) {
            return Ok(Some(at(Some(node::key(&g, i)))));
        }
        Ok(node::own_high(&g).is_none().then(|| at(None)))
    }

    /// Calls `at` with the first key at or after `from` (`None`: the end of the tree) while its
    /// leaf is latched shared, walking right across leaves that hold no such key.
    fn at_first_key_from<R>(&self, from: &[u8], at: impl FnOnce(Option<&[u8]>) -> R) -> Result<R> {
        let mut from = from.to_vec();
        loop {
            let g = self.with_room(|| self.leaf_shared(&from))?;
            let (Ok(i) | Err(i)) = node::search(&*g, &from);
            if i < node::count(&g) {
                return Ok(at(Some(node::key(&g, i))));
            }
            match node::own_high(&g) {
                None => return Ok(at(None)),
                Some(h) if h <= from.as_slice() => return Err(fence_back(g.page_id())),
                Some(h) => from = h.to_vec(),
            }
        }
    }

    /// Finds the first key at or after `from` (or the end of the tree) and offers it to `gate`
    /// while its leaf is latched; waits, unlatched, if the gate says so.
    fn probe_gated(&self, gate: &dyn ReadGate, from: &[u8]) -> Result<Probe> {
        // `Ok(None)`: passed; `Ok(Some(key))`: refused at `key`.
        let refused = self.at_first_key_from(from, |k| {
            gate.try_pass(self, k).map(|passed| (!passed).then(|| k.map(<[u8]>::to_vec)))
        })??;
        match refused {
            None => Ok(Probe::Passed),
            Some(key) => {
                gate.wait(self, key.as_deref())?;
                Ok(Probe::Waited)
            }
        }
    }

    /// Whether the leaves a scan read are as it read them (T18): resident in the same frame, at
    /// the same latch version (buffer B35), which every change of the page moves, logged or
    /// not. A leaf no longer resident counts as changed: it may have been freed since, and a
    /// fix by id would read its stale image back into the pool (buffer B3a); the scan reads
    /// again through the tree.
    fn unchanged(&self, seen: &[Seen]) -> bool {
        for s in seen {
            let Some(g) = self.pool.fix_resident::<Shared>(s.page) else { return false };
            if g.frame() != s.frame || g.latch_version() != s.version {
                return false;
            }
        }
        true
    }
}

fn fence_back(page: PageId) -> TreeError {
    TreeError::Damaged { page, reason: "a leaf's upper bound is not above the scan's position".into() }
}

/// The forward half of a [`RangeIter`]: reads leaves left to right.
struct Fwd<'t> {
    tree: &'t Tree,
    gate: &'t (dyn ReadGate + Sync),
    /// Inclusive lower bound of the next leaf to read; `None` when done.
    next: Option<Vec<u8>>,
    /// Where to read again after a wait or a changed leaf: just after the last record returned.
    resume: Vec<u8>,
    end: Bound<Vec<u8>>,
    /// The leaves read since the last key that passed the gate: the gap after that key is
    /// closed by a key in a later leaf, and holds only if these did not change meanwhile.
    open_gap: Vec<Seen>,
    /// A gap's closing key that passed a gate which holds it (a record lock kept to the
    /// transaction's end) when the open gap's check failed (T18): no key can enter the gap it
    /// closes any more, so a read of that gap closed by the same key needs no check. Without
    /// it a gap over more leaves than the pool's frames failed its check at every read, each
    /// read evicting the leaves the check needs, and the scan never ended.
    guarded: Option<Option<Vec<u8>>>,
    buf: Batch,
    /// The buffer of the last leaf's start, for the next leaf's.
    spare: Vec<u8>,
}

impl<'t> Fwd<'t> {
    fn new(tree: &'t Tree, gate: &'t (dyn ReadGate + Sync), start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let first = lower_bound(start).unwrap_or_default();
        Fwd {
            tree,
            gate,
            next: Some(first.clone()),
            resume: first,
            end: end.map(<[u8]>::to_vec),
            open_gap: Vec::new(),
            guarded: None,
            buf: Batch::default(),
            spare: Vec::new(),
        }
    }

    fn past_end(&self, k: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => false,
            Bound::Included(e) => node::cmp_keys(k, e) == std::cmp::Ordering::Greater,
            Bound::Excluded(e) => node::cmp_keys(k, e) != std::cmp::Ordering::Less,
        }
    }

    /// Reads again from just after the last record returned.
    fn restart(&mut self) {
        self.buf.clear();
        self.open_gap.clear();
        self.next = Some(self.resume.clone());
    }

    /// `left`: records the scan may still return ([`RangeIter::limit`]).
    fn fill(&mut self, left: usize) -> Result<()> {
        let gated = self.gate.checks();
        while self.buf.is_empty() {
            let Some(start) = self.next.take() else {
                return Ok(());
            };
            // T26: a leaf read that ran out of frames (for the leaf, or for a large value's
            // chain) is read again from the same position once frames were freed with no latch
            // held, as a point read is: nothing of it was returned, so nothing is skipped or
            // returned twice.
            let tree = self.tree;
            let LeafRead { blocked, ended, passed_any, closing, stopped_for_gap, here } =
                tree.with_room(|| {
                    self.buf.clear();
                    self.next = None;
                    self.read_leaf(&start, left)
                })?;
            if let Some(key) = blocked {
                self.buf.clear();
                self.gate.wait(self.tree, key.as_deref())?;
                self.restart();
                continue;
            }
            if passed_any {
                // This leaf's first key closed the gap left open by the leaves before it.
                let open = std::mem::take(&mut self.open_gap);
                let guarded = std::mem::take(&mut self.guarded);
                let held = guarded.is_some() && guarded == closing;
                if !held && !self.tree.unchanged(&open) {
                    // The closing key stays passed: the gap it closes is read once more, and
                    // then holds as read (a key inserted before the key passed is found then).
                    self.guarded = closing;
                    self.restart();
                    continue;
                }
            }
            // A visit that stopped for the gap reads this leaf on from the stop: the leaf is
            // not part of a gap yet.
            if gated && !ended && !stopped_for_gap {
                self.open_gap.push(here);
            }
            if ended {
                self.next = None;
            }
            if let Some(k) = self.buf.back_key() {
                key_after_into(&mut self.resume, k);
            }
            self.spare = start;
        }
        Ok(())
    }

    /// Reads the leaf holding `start` from there on under its shared latch, copying what is in
    /// range into the buffer and setting where the next leaf starts (T18, T19).
    fn read_leaf(&mut self, start: &[u8], left: usize) -> Result<LeafRead> {
        let gated = self.gate.checks();
        let g = self.tree.leaf_shared(start)?;
        let (Ok(mut i) | Err(mut i)) = node::search(&*g, start);
        // `Some(key)`: the gate refused `key` (`None`: the end of the tree).
        let mut blocked: Option<Option<Vec<u8>>> = None;
        let mut ended = false;
        let mut passed_any = false;
        // The key closing the open gap is kept where a gate holds it (`Fwd::guarded`).
        let note_closing = gated && !self.open_gap.is_empty() && self.gate.holds();
        let mut closing = None;
        // A limited scan copies, and asks the gate for, no more than it will return (T19).
        let mut capped = false;
        let mut stopped_for_gap = false;
        while i < node::count(&g) {
            if self.buf.len() >= left {
                capped = true;
                break;
            }
            let k = node::key(&g, i);
            if gated {
                if !self.gate.try_pass(self.tree, Some(k))? {
                    blocked = Some(Some(k.to_vec()));
                    break;
                }
                if note_closing && !passed_any {
                    closing = Some(Some(k.to_vec()));
                }
                passed_any = true;
            }
            if self.past_end(k) {
                ended = true;
                break;
            }
            // T18: the open gap's leaves are checked before a large value's chain is read, whose
            // pages could evict them (a leaf's chains can outnumber the pool's frames, and the
            // check would then fail at every visit). The key passed; the gap is checked once
            // the leaf is unlatched, and the next visit copies from this key on.
            if gated && !self.open_gap.is_empty() && node::is_stub(&*g, i) {
                stopped_for_gap = true;
                break;
            }
            push_record(self.tree, &mut self.buf, &g, i)?;
            i += 1;
        }
        if stopped_for_gap {
            let mut next = std::mem::take(&mut self.spare);
            next.clear();
            next.extend_from_slice(node::key(&g, i));
            self.next = Some(next);
        } else if capped {
            if let Some(k) = self.buf.back_key() {
                self.next = Some(key_after(k));
            }
        } else if blocked.is_none() && !ended {
            match node::own_high(&g) {
                None => {
                    if gated && !self.gate.try_pass(self.tree, None)? {
                        blocked = Some(None);
                    } else {
                        if note_closing && !passed_any {
                            closing = Some(None);
                        }
                        passed_any = true;
                        ended = true;
                    }
                }
                Some(h) if h <= start => {
                    // T1 says the next leaf starts above this one; a damaged tree could send
                    // the scan back forever. What this leaf gave is not returned.
                    self.buf.clear();
                    return Err(fence_back(g.page_id()));
                }
                // Without a gate the scan ends at the range's end; with one it goes on to
                // the first key past it, which closes the range's last gap.
                Some(h) if !gated && self.past_end(h) => ended = true,
                Some(h) => {
                    let mut next = std::mem::take(&mut self.spare);
                    next.clear();
                    next.extend_from_slice(h);
                    self.next = Some(next);
                }
            }
        }
        let here = Seen::of(&g);
        Ok(LeafRead { blocked, ended, passed_any, closing, stopped_for_gap, here })
    }
}

/// The common end of both scans' `next`: after a refill, the next buffered record; a failed
/// refill is returned once and ends the scan (`stop`), dropping what was buffered.
fn next_entry<R>(
    filled: Result<()>,
    buf: &mut Batch,
    stop: impl FnOnce(),
    f: impl FnOnce(&[u8], &[u8]) -> R,
) -> Option<Result<R>> {
    match filled {
        Err(e) => {
            buf.clear();
            stop();
            Some(Err(e))
        }
        Ok(()) => buf.pop_front_with(f).map(Ok),
    }
}

/// A scan of a closed (T15) or dropped (T25) tree: `Closed` or `Dropped` once, if anything was
/// left to return, then the end; `None` while the tree is open.
fn closed_scan<R>(tree: &Tree, buf: &mut Batch, more: bool) -> Option<Option<Result<R>>> {
    let Err(e) = tree.check_open() else { return None };
    let left = more || !buf.is_empty();
    buf.clear();
    Some(left.then_some(Err(e)))
}

impl Fwd<'_> {
    /// The next record given to `f`; a closed tree ends the scan (T15).
    fn next_with<R>(&mut self, left: usize, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        if let Some(closed) = closed_scan(self.tree, &mut self.buf, self.next.is_some()) {
            self.next = None;
            return closed;
        }
        let filled = self.fill(left);
        next_entry(filled, &mut self.buf, || self.next = None, f)
    }

    fn stop(&mut self) {
        self.next = None;
        self.buf.clear();
    }
}

/// The backward half of a [`RangeIter`]: reads leaves right to left.
struct Bwd<'t> {
    tree: &'t Tree,
    gate: &'t (dyn ReadGate + Sync),
    /// Exclusive upper bound of the next leaf to read (`Some(None)`: +inf); `None` when done.
    next: Option<Option<Vec<u8>>>,
    /// Where to read again after a wait or a changed leaf: the last record returned (exclusive).
    resume: Option<Vec<u8>>,
    /// Whether the next leaf read is the scan's first since it (re)started.
    first: bool,
    /// Inclusive lower bound.
    start: Option<Vec<u8>>,
    buf: Batch,
}

impl<'t> Bwd<'t> {
    fn new(tree: &'t Tree, gate: &'t (dyn ReadGate + Sync), start: Bound<&[u8]>, end: Bound<&[u8]>) -> Self {
        let bound = match end {
            Bound::Unbounded => None,
            Bound::Excluded(k) => Some(k.to_vec()),
            Bound::Included(k) => Some(key_after(k)),
        };
        Bwd {
            tree,
            gate,
            next: Some(bound.clone()),
            resume: bound,
            first: true,
            start: lower_bound(start),
            buf: Batch::default(),
        }
    }

    fn before_start(&self, k: &[u8]) -> bool {
        self.start.as_deref().is_some_and(|s| k < s)
    }

    fn restart(&mut self) {
        self.buf.clear();
        self.first = true;
        self.next = Some(self.resume.clone());
    }

    /// `left`: records the scan may still return ([`RangeIter::limit`]).
    fn fill(&mut self, left: usize) -> Result<()> {
        while self.buf.is_empty() {
            let Some(bound) = self.next.take() else {
                return Ok(());
            };
            // T26, as in the forward scan.
            let tree = self.tree;
            let BwdLeafRead { blocked, ended, probe_from, here } = tree.with_room(|| {
                self.buf.clear();
                self.next = None;
                self.read_leaf(bound.as_deref(), left)
            })?;
            if let Some(key) = blocked {
                self.buf.clear();
                self.gate.wait(self.tree, key.as_deref())?;
                self.restart();
                continue;
            }
            if let Some(from) = probe_from {
                // The closing key is in a later leaf: it must pass now, and this leaf must be as
                // it was read.
                let passed = matches!(self.tree.probe_gated(self.gate, &from)?, Probe::Passed);
                if !passed || !self.tree.unchanged(&[here]) {
                    self.restart();
                    continue;
                }
            }
            self.first = false;
            if ended {
                self.next = None;
            }
            if let Some(k) = self.buf.back_key() {
                self.resume = Some(k.to_vec());
            }
        }
        Ok(())
    }

    /// Reads the leaf holding the greatest keys below `bound` (`None`: +inf) downwards from
    /// there under its shared latch, copying what is in range into the buffer and setting the
    /// bound of the next leaf (T18, T19).
    fn read_leaf(&mut self, bound: Option<&[u8]>, left: usize) -> Result<BwdLeafRead> {
        let gated = self.gate.checks();
        let g = self.tree.leaf_before(bound)?;
        let top = match bound {
            None => node::count(&g),
            Some(b) => {
                let (Ok(i) | Err(i)) = node::search(&*g, b);
                i
            }
        };
        let mut blocked: Option<Option<Vec<u8>>> = None;
        // The gap above this leaf's records in range is closed by the first key at or
        // after the bound. A gate that holds what passed has it already, unless this is
        // the first leaf; otherwise check it: here if this leaf has it, else after.
        let mut probe_from: Option<Vec<u8>> = None;
        if gated && (self.first || !self.gate.holds()) {
            if top < node::count(&g) {
                let k = node::key(&g, top);
                if !self.gate.try_pass(self.tree, Some(k))? {
                    blocked = Some(Some(k.to_vec()));
                }
            } else {
                match node::own_high(&g) {
                    None => {
                        if !self.gate.try_pass(self.tree, None)? {
                            blocked = Some(None);
                        }
                    }
                    Some(h) => probe_from = Some(h.to_vec()),
                }
            }
        }
        let mut i = top;
        let mut ended = false;
        // A limited scan copies, and asks the gate for, no more than it will return (T19).
        let mut capped = false;
        while blocked.is_none() && i > 0 {
            if self.buf.len() >= left {
                capped = true;
                break;
            }
            i -= 1;
            let k = node::key(&g, i);
            if self.before_start(k) {
                ended = true;
                break;
            }
            if gated && !self.gate.try_pass(self.tree, Some(k))? {
                blocked = Some(Some(k.to_vec()));
                break;
            }
            push_record(self.tree, &mut self.buf, &g, i)?;
        }
        if capped {
            if let Some(k) = self.buf.back_key() {
                self.next = Some(Some(k.to_vec()));
            }
        } else if blocked.is_none() && !ended {
            // Keys left of this leaf are below its low fence; done if that is -inf or the
            // fence is at or below the start.
            self.next = match node::low_fence(&g) {
                Some(l) if self.start.as_deref().is_none_or(|s| l > s) => Some(Some(l.to_vec())),
                _ => None,
            };
            if let (Some(Some(l)), Some(b)) = (&self.next, bound) {
                if l.as_slice() >= b {
                    // The mirror image of the forward scan's guard (T1).
                    self.buf.clear();
                    return Err(TreeError::Damaged {
                        page: g.page_id(),
                        reason: "a leaf's low fence is not below the scan's position".into(),
                    });
                }
            }
        }
        let here = Seen::of(&g);
        Ok(BwdLeafRead { blocked, ended, probe_from, here })
    }
}

impl Bwd<'_> {
    /// The next record (descending) given to `f`; a closed tree ends the scan (T15).
    fn next_with<R>(&mut self, left: usize, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        if let Some(closed) = closed_scan(self.tree, &mut self.buf, self.next.is_some()) {
            self.next = None;
            return closed;
        }
        let filled = self.fill(left);
        next_entry(filled, &mut self.buf, || self.next = None, f)
    }

    fn stop(&mut self) {
        self.next = None;
        self.buf.clear();
    }
}

/// Iterator over a key range; see [`Tree::range`]. Double-ended: [`Iterator::next`] reads
/// upwards from the range's start, [`DoubleEndedIterator::next_back`] downwards from its end,
/// each half as [`Tree::range`] and [`Tree::range_rev`] describe, and the iterator ends when the
/// two meet: no record is returned twice, and every record of the range that neither half
/// skipped over is returned once. (Records written into the range while it is read may or may
/// not be seen, as for a one-ended scan.) `Send` and `Sync`.
pub struct RangeIter<'t> {
    fwd: Fwd<'t>,
    bwd: Bwd<'t>,
    /// The key `next` returned last (`None`: none yet): `next_back` stops at or below it.
    front_last: Option<Vec<u8>>,
    /// The key `next_back` returned last: `next` stops at or above it.
    back_last: Option<Vec<u8>>,
    /// Records still to return, from either end ([`RangeIter::limit`]); `usize::MAX`: no limit.
    left: usize,
    /// The ends met, one ran out, or the limit was reached.
    done: bool,
    /// T27: what the reader sees instead of the tree's records, if anything.
    overlay: Option<Overlaid<'t>>,
    /// The error the iterator returns next, once, and then ends ([`RangeIter::refused`]).
    refused: Option<TreeError>,
}

/// A range read through an [`Overlay`] (T27): the records it rebuilt and has not returned, in
/// ascending key order in three runs — what the front half gathered, what lay between the
/// halves when the tree ran out, what the back half gathered — and the bounds each half passed.
struct Overlaid<'t> {
    overlay: Box<dyn Overlay + 't>,
    front: std::collections::VecDeque<Entry>,
    middle: std::collections::VecDeque<Entry>,
    back: std::collections::VecDeque<Entry>,
    /// Below it the front half has gathered everything.
    front_pos: Bound<Vec<u8>>,
    /// Above it the back half has gathered everything.
    back_pos: Bound<Vec<u8>>,
    /// The tree's records are all read: only the three runs are left.
    tree_done: bool,
    /// Emptied key and value buffers of records `next_with` gave to its caller and of hidden
    /// records, for the next records the scan copies out of the tree: a scan read through
    /// `next_with` allocates only while its buffers grow.
    spare: Vec<Entry>,
}

/// Buffers an overlaid scan keeps for reuse ([`Overlaid::spare`]).
const SPARE_ENTRIES: usize = 4;

impl Overlaid<'_> {
    /// A record's key and value copied into spare buffers, or new ones.
    fn copy(spare: &mut Vec<Entry>, k: &[u8], v: &[u8]) -> Entry {
        let (mut key, mut value) = spare.pop().unwrap_or_default();
        key.extend_from_slice(k);
        value.extend_from_slice(v);
        (key, value)
    }

    /// T27 for record `k` (value `v`) that one half read: what the overlay makes of it and of
    /// the stretch that half passed before it. Kept as the tree holds it with nothing in the
    /// stretch, it goes to `f` in place, if `f` is there (`Some`, no copy); otherwise both are
    /// gathered on the half's side, in key order (`None`).
    fn take<R, F: FnOnce(&[u8], &[u8]) -> R>(
        &mut self,
        forward: bool,
        k: &[u8],
        v: &[u8],
        f: &mut Option<F>,
    ) -> Result<Option<R>> {
        let rebuilt = self.overlay.rebuild(k, v)?;
        let between = if forward {
            self.overlay.between(as_ref(&self.front_pos), Bound::Excluded(k))?
        } else {
            self.overlay.between(Bound::Excluded(k), as_ref(&self.back_pos))?
        };
        pass(if forward { &mut self.front_pos } else { &mut self.back_pos }, k);
        if between.is_empty() && matches!(rebuilt, Rebuilt::Keep) {
            if let Some(f) = f.take() {
                return Ok(Some(f(k, v)));
            }
        }
        let record = match rebuilt {
            Rebuilt::Keep => Some(Overlaid::copy(&mut self.spare, k, v)),
            Rebuilt::Hide => None,
            Rebuilt::Value(new) => {
                let (mut key, spare_value) = self.spare.pop().unwrap_or_default();
                key.extend_from_slice(k);
                self.recycle((Vec::new(), spare_value));
                Some((key, new))
            }
        };
        if forward {
            self.front.extend(between);
            self.front.extend(record);
        } else {
            for e in between.into_iter().rev() {
                self.back.push_front(e);
            }
            if let Some(r) = record {
                self.back.push_front(r);
            }
        }
        Ok(None)
    }

    /// Keeps a record's buffers, emptied, for the next copy.
    fn recycle(&mut self, (mut key, mut value): Entry) {
        if self.spare.len() < SPARE_ENTRIES {
            key.clear();
            value.clear();
            self.spare.push((key, value));
        }
    }
}

/// Moves the position a half has gathered to just past `k`, reusing its buffer.
fn pass(pos: &mut Bound<Vec<u8>>, k: &[u8]) {
    match pos {
        Bound::Excluded(b) | Bound::Included(b) => {
            b.clear();
            b.extend_from_slice(k);
            *pos = Bound::Excluded(std::mem::take(b));
        }
        Bound::Unbounded => *pos = Bound::Excluded(k.to_vec()),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Remembers `k` in `slot`, reusing its allocation.
fn remember(slot: &mut Option<Vec<u8>>, k: &[u8]) {
    let v = slot.get_or_insert_with(Vec::new);
    v.clear();
    v.extend_from_slice(k);
}

impl RangeIter<'_> {
    fn finish(&mut self) {
        self.done = true;
        self.fwd.stop();
        self.bwd.stop();
    }

    /// What `next_with`/`next_back_with` got from a half: `Some(Ok(None))` means the halves
    /// met, `None` that the half ran out; either ends the iterator.
    fn settle<R>(&mut self, r: Option<Result<Option<R>>>) -> Option<Result<R>> {
        match r {
            None | Some(Ok(None)) => {
                self.finish();
                None
            }
            Some(Ok(Some(r))) => {
                self.left -= 1;
                Some(Ok(r))
            }
            Some(Err(e)) => Some(Err(e)),
        }
    }

    /// The next record, as [`Iterator::next`] returns it, given to `f` as borrowed key and value
    /// instead of copied into two new vectors.
    pub fn next_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        if self.overlay.is_some() {
            return self.next_overlaid_with(true, f, |s, e, f| s.give_with(e, f));
        }
        if self.done || self.left == 0 {
            self.finish();
            return None;
        }
        let (back, front) = (&self.back_last, &mut self.front_last);
        let r = self.fwd.next_with(self.left, |k, v| {
            if back.as_deref().is_some_and(|b| k >= b) {
                return None;
            }
            remember(front, k);
            Some(f(k, v))
        });
        self.settle(r)
    }

    /// The next record from the back, as [`DoubleEndedIterator::next_back`] returns it, given
    /// to `f` as borrowed key and value.
    pub fn next_back_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        if self.overlay.is_some() {
            return self.next_overlaid_with(false, f, |s, e, f| s.give_with(e, f));
        }
        if self.done || self.left == 0 {
            self.finish();
            return None;
        }
        let (front, back) = (&self.front_last, &mut self.back_last);
        let r = self.bwd.next_with(self.left, |k, v| {
            if front.as_deref().is_some_and(|f| k <= f) {
                return None;
            }
            remember(back, k);
            Some(f(k, v))
        });
        self.settle(r)
    }

    /// T27: gives a rebuilt record to `f` and keeps its buffers for the scan's next copies.
    fn give_with<R>(&mut self, e: Entry, f: impl FnOnce(&[u8], &[u8]) -> R) -> R {
        let r = f(&e.0, &e.1);
        if let Some(o) = self.overlay.as_mut() {
            o.recycle(e);
        }
        r
    }

    /// T27: the next record from the front (`forward`) or the back, rebuilt by the overlay: one
    /// gathered before goes to `gathered` (with `f`), else the tree's next record from that end
    /// goes to `f` in place when the overlay keeps it and finds nothing in the stretch before
    /// it (a scan then copies what one without an overlay copies).
    fn next_overlaid_with<R, F: FnOnce(&[u8], &[u8]) -> R>(
        &mut self,
        forward: bool,
        f: F,
        gathered: impl FnOnce(&mut Self, Entry, F) -> R,
    ) -> Option<Result<R>> {
        let mut f = Some(f);
        loop {
            if self.left == 0 {
                return None;
            }
            if let Some(e) = self.take_gathered(forward) {
                self.left -= 1;
                let f = f.take().expect("f runs once");
                return Some(Ok(gathered(self, e, f)));
            }
            if self.overlay.as_ref().expect("an overlaid scan").tree_done {
                return None;
            }
            match self.gather(forward, &mut f) {
                Ok(Some(r)) => {
                    self.left -= 1;
                    return Some(Ok(r));
                }
                Ok(None) => {}
                Err(e) => {
                    // The error ends the scan (T27), from both ends: the records either end
                    // gathered and has not returned are dropped with it. Kept, they came after
                    // the error — from the other end's run too, past the stretch between the
                    // halves that was never read (test
                    // `a_snapshot_scan_ends_at_its_dropped_error_with_records_gathered_at_the_other_end`
                    // in the engine).
                    let o = self.overlay.as_mut().expect("an overlaid scan");
                    o.tree_done = true;
                    o.front.clear();
                    o.middle.clear();
                    o.back.clear();
                    self.finish();
                    return Some(Err(e));
                }
            }
        }
    }

    /// T27: the next record from one end as an owned entry ([`Iterator::next`]); a gathered
    /// record is owned already.
    fn next_overlaid(&mut self, forward: bool) -> Option<Result<Entry>> {
        self.next_overlaid_with(forward, |k, v| (k.to_vec(), v.to_vec()), |_, e, _| e)
    }

    /// T27: the next record gathered for this end, in key order: the end's own run, then, once
    /// the tree is read, the stretch between the halves and the other half's run.
    fn take_gathered(&mut self, forward: bool) -> Option<Entry> {
        let o = self.overlay.as_mut().expect("an overlaid scan");
        if forward {
            o.front.pop_front().or_else(|| {
                o.tree_done.then(|| o.middle.pop_front().or_else(|| o.back.pop_front())).flatten()
            })
        } else {
            o.back
                .pop_back()
                .or_else(|| o.tree_done.then(|| o.middle.pop_back().or_else(|| o.front.pop_back())).flatten())
        }
    }

    /// T27: reads the tree's next record from one end (with no gate) and asks the overlay about
    /// it and about the stretch the end passed before it. A record the overlay keeps, with
    /// nothing in that stretch, goes to `f` in place if `f` is there (`Ok(Some)`); otherwise
    /// what the overlay made of both is gathered, in order (`Ok(None)`). When the tree has no
    /// record left between the halves, gathers the stretch between them and ends the tree part.
    fn gather<R, F: FnOnce(&[u8], &[u8]) -> R>(
        &mut self,
        forward: bool,
        f: &mut Option<F>,
    ) -> Result<Option<R>> {
        let RangeIter { fwd, bwd, front_last, back_last, overlay, .. } = self;
        let o = overlay.as_mut().expect("an overlaid scan");
        let read = if forward {
            fwd.next_with(usize::MAX, |k, v| {
                if back_last.as_deref().is_some_and(|b| k >= b) {
                    return None;
                }
                remember(front_last, k);
                Some(o.take(true, k, v, f))
            })
        } else {
            bwd.next_with(usize::MAX, |k, v| {
                if front_last.as_deref().is_some_and(|l| k <= l) {
                    return None;
                }
                remember(back_last, k);
                Some(o.take(false, k, v, f))
            })
        };
        match read {
            Some(Err(e)) | Some(Ok(Some(Err(e)))) => Err(e),
            Some(Ok(Some(Ok(given)))) => Ok(given),
            None | Some(Ok(None)) => {
                let between = o.overlay.between(as_ref(&o.front_pos), as_ref(&o.back_pos))?;
                o.middle.extend(between);
                o.tree_done = true;
                self.fwd.stop();
                self.bwd.stop();
                Ok(None)
            }
        }
    }

    /// Counts the records left, copying none; the first error ends the count.
    ///
    /// # Errors
    /// The scan's first error.
    pub fn tally(mut self) -> Result<usize> {
        let mut n = 0;
        while let Some(r) = self.next_with(|_, _| ()) {
            r?;
            n += 1;
        }
        Ok(n)
    }

    /// Returns at most `n` more records, from both ends together (T19): the scan ends after
    /// them, and without a read gate that checks, it copies no more of a leaf than that — a
    /// scan for the first record of a range reads one record, not the rest of its leaf.
    #[must_use]
    pub fn limit(mut self, n: usize) -> Self {
        self.left = n;
        self
    }

    /// This scan refused: it reads nothing, returns `e` as its next item, from either end, and
    /// then ends. For a caller that finds the read must not run (a tree handle of another
    /// database) but returns the iterator type.
    #[must_use]
    pub fn refused(mut self, e: TreeError) -> Self {
        self.finish();
        self.overlay = None;
        self.refused = Some(e);
        self
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.overlay.is_some() {
            // T27: the rebuilt records are owned already.
            return self.next_overlaid(true);
        }
        self.next_with(|k, v| (k.to_vec(), v.to_vec()))
    }
}

impl DoubleEndedIterator for RangeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.overlay.is_some() {
            return self.next_overlaid(false);
        }
        self.next_back_with(|k, v| (k.to_vec(), v.to_vec()))
    }
}

impl std::iter::FusedIterator for RangeIter<'_> {}

/// Iterator over a key range in descending order; see [`Tree::range_rev`]. A [`RangeIter`]
/// read from its back: `next` is the range's `next_back` and the other way round.
pub struct RevRangeIter<'t>(RangeIter<'t>);

impl RevRangeIter<'_> {
    /// The next record, as [`Iterator::next`] returns it, given to `f` as borrowed key and value
    /// instead of copied into two new vectors.
    pub fn next_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        self.0.next_back_with(f)
    }

    /// [`DoubleEndedIterator::next_back`] (the smallest key left) given to `f`.
    pub fn next_back_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        self.0.next_with(f)
    }

    /// [`RangeIter::limit`] for the descending scan (T19).
    #[must_use]
    pub fn limit(self, n: usize) -> Self {
        RevRangeIter(self.0.limit(n))
    }

    /// [`RangeIter::refused`] for the descending scan.
    #[must_use]
    pub fn refused(self, e: TreeError) -> Self {
        RevRangeIter(self.0.refused(e))
    }
}

impl Iterator for RevRangeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}

impl DoubleEndedIterator for RevRangeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

impl std::iter::FusedIterator for RevRangeIter<'_> {}

impl std::fmt::Debug for RangeIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeIter").field("done", &self.done).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for RevRangeIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevRangeIter").field("done", &self.0.done).finish_non_exhaustive()
    }
}
