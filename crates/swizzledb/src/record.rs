//! Log records: what the engine writes to the log manager, as opaque bodies (record kinds in
//! RECOVERY.md "Vocabulary", what restart does with each in its rules R8–R10). Every integer —
//! transaction, LSN, page id, length, count — is an unsigned LEB128 varint (7 bits a byte, low
//! group first, at most 10 bytes), except the single bytes named below; byte strings (keys,
//! values, names) carry a varint length. The first byte of a body is its [`RecordKind`]:
//!
//! | kind | fields |
//! |---|---|
//! | 1 `Begin` | txn |
//! | 2 `Leaf` | flags byte (change: 1 insert, 2 update, 3 delete in bits 0–1; 4: CLR; 8: base image; 16: overflow pages), txn, prev, undo_next (CLR only), tree, page, new value's overflow chain and freed overflow pages (if flagged: count, ids, each), key, value (insert) / old, new (update) / old (delete) — whole values, large ones too — , base image (if flagged) |
//! | 3 `Commit` / 4 `Abort` / 5 `End` | txn, prev |
//! | 6 `Structure` | count, per page: page id, form byte and its fields (0 image: image; 1 split: separator key, new foster child; 2 adopt: separator key, child; 3 adopted: former foster child; 4 unlink: key, child); freed page ids (count, ids) |
//! | 7 `CreateTree` | name, root |
//! | 8 `CheckpointBegin` | — |
//! | 9 `CheckpointEnd` | begin LSN, dirty pages (page, rec LSN), transactions (txn, state byte, last LSN, undo-next), page count, free pages, catalog (name, root) |
//! | 10 `PageWrite` | page, page LSN, writer byte (0 the pool; 1 the decoupled cleaner, followed by the LSN below which the copy holds every change) |
//! | 11 `DropTree` | name, root |
//! | 12 `CheckpointPart` | as `CheckpointEnd`: part of the tables of the checkpoint whose begin LSN it names, appended between its begin and end records |
//! | 13 `CheckpointEnd` in parts | as 9, then the count (at least 1) of `CheckpointPart` records holding the rest of the tables |
//!
//! Every page change is **page-local** (RECOVERY.md R9): a `Leaf` change, and each page of a
//! `Structure` record ([`NodeLog`]), is redone from that page's state just before it (or from
//! nothing, when it carries the page's image), never by reading another page. So a split logs
//! the new foster child's image and the old node logically (truncate at the separator, set the
//! foster key and child); an adoption logs both nodes logically; a sibling merge logs the
//! parent logically (unlink the merged child) and the surviving node as an image; root growth,
//! a foster merge and new roots log images.
//!
//! A page image (structure images, base images) is stored without its longest run of zero
//! bytes — the engine zeroes a node's free gap first — as: length, run start, run length (three
//! varints), the bytes before and after the run.

use swizzledb_btree::{LeafChange, NodeChange};
use swizzledb_buffer::PageId;
use swizzledb_sync::{Lsn, TxnId};

/// A leaf change with owned bytes (the decoded form of [`LeafChange`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A new record.
    Insert {
        /// Its key.
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
    /// A value replaced.
    Update {
        /// The key.
        key: Vec<u8>,
        /// The value before.
        old: Vec<u8>,
        /// The value after.
        new: Vec<u8>,
    },
    /// A record removed.
    Delete {
        /// The key.
        key: Vec<u8>,
        /// The value before.
        old: Vec<u8>,
    },
    /// An update logged by the bytes that changed (RECOVERY.md R3): the value is its unchanged
    /// bytes with `edits` between them. Redo splices it into the value on the page, undo
    /// splices it back out ([`splice`]).
    Patch {
        /// The key.
        key: Vec<u8>,
        /// The changed ranges, in order.
        edits: Vec<Edit>,
    },
}

/// One changed range of a [`Change::Patch`]: after `gap` unchanged bytes (counted from the end
/// of the previous edit, or the value's start), the `old` bytes became `new`. The bytes after
/// the last edit are unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// Unchanged bytes before it.
    pub gap: usize,
    /// The bytes before.
    pub old: Vec<u8>,
    /// The bytes after.
    pub new: Vec<u8>,
}

/// An update is logged as a [`Change::Patch`] when the bytes it keeps come to at least this
/// many: below, the lengths it adds cost about what it saves.
const PATCH_MIN_KEPT: usize = 8;
/// Two changed ranges of a value closer than this are one edit: an edit's own lengths cost
/// about as much.
const EDIT_MIN_GAP: usize = 8;

/// Which side of each edit [`splice`] finds in the value and which it puts in its place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `old` → `new`: redo.
    Forward,
    /// `new` → `old`: undo.
    Backward,
}

/// `value` with every edit applied in `direction`; `None` if `value` does not hold the bytes an
/// edit replaces where it says (it is not the value the patch was made on).
#[must_use]
pub fn splice(value: &[u8], edits: &[Edit], direction: Direction) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(value.len());
    let mut pos = 0usize;
    for e in edits {
        let (from, to) = match direction {
            Direction::Forward => (&e.old, &e.new),
            Direction::Backward => (&e.new, &e.old),
        };
        let at = pos.checked_add(e.gap)?;
        let end = at.checked_add(from.len())?;
        if value.get(at..end)? != from.as_slice() {
            return None;
        }
        out.extend_from_slice(&value[pos..at]);
        out.extend_from_slice(to);
        pos = end;
    }
    out.extend_from_slice(&value[pos..]);
    Some(out)
}

/// One edit of a patch as ranges of the two values: `gap` unchanged bytes after the previous
/// edit (or the value's start), then `old[old]` became `new[new]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    gap: usize,
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
}

/// The edits that take `old` to `new`, found without allocating: for values of one length, each
/// run of differing bytes (runs closer than `EDIT_MIN_GAP` joined); else the one range between
/// their common prefix and suffix. Equal stretches are skipped a word at a time.
struct Spans<'a> {
    old: &'a [u8],
    new: &'a [u8],
    /// Where the search for the next differing byte starts.
    pos: usize,
    /// Where the last edit ended.
    end: usize,
    done: bool,
}

impl<'a> Spans<'a> {
    fn new(old: &'a [u8], new: &'a [u8]) -> Spans<'a> {
        Spans { old, new, pos: 0, end: 0, done: false }
    }

    /// The first differing byte at or after `i` (values of one length), or the length.
    fn next_diff(&self, mut i: usize) -> usize {
        // (`b` cut to `a`'s length, so that one bound covers both.)
        let (a, b) = (self.old, &self.new[..self.old.len()]);
        // Equal stretches 32 bytes at a time (a fixed-size compare, which the compiler makes
        // two vector compares), then the differing block a word at a time.
        let block = |s: &[u8], i: usize| -> [u8; 32] { s[i..i + 32].try_into().expect("32 bytes") };
        while i + 32 <= a.len() && block(a, i) == block(b, i) {
            i += 32;
        }
        let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
        while i + 8 <= a.len() {
            let x = word(a, i) ^ word(b, i);
            if x != 0 {
                // Little-endian: the lowest set bit is in the first differing byte.
                return i + x.trailing_zeros() as usize / 8;
            }
            i += 8;
        }
        if i < a.len() && a.len() >= 8 {
            // The last word, its bytes before `i` shifted out (they may differ: an edit ends
            // there).
            let last = a.len() - 8;
            let x = (word(a, last) ^ word(b, last)) >> (8 * (i - last));
            return if x == 0 { a.len() } else { i + x.trailing_zeros() as usize / 8 };
        }
        while i < a.len() && a[i] == b[i] {
            i += 1;
        }
        i
    }

    /// The first equal byte at or after `i` (values of one length), or the length.
    fn next_same(&self, mut i: usize) -> usize {
        let (a, b) = (self.old, &self.new[..self.old.len()]);
        let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
        const ONES: u64 = 0x0101_0101_0101_0101;
        while i + 8 <= a.len() {
            // An equal byte is a zero byte of the XOR. The borrow of the subtraction can mark a
            // byte above a zero byte falsely, never one below: the lowest mark is the first.
            let x = word(a, i) ^ word(b, i);
            let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
            if zero != 0 {
                return i + zero.trailing_zeros() as usize / 8;
            }
            i += 8;
        }
        while i < a.len() && a[i] != b[i] {
            i += 1;
        }
        i
    }
}

impl Iterator for Spans<'_> {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        if self.done {
            return None;
        }
        let (old, new) = (self.old, self.new);
        if old.len() != new.len() {
            self.done = true;
            let at = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let tail = old[at..].iter().rev().zip(new[at..].iter().rev()).take_while(|(a, b)| a == b).count();
            return Some(Span { gap: at, old: at..old.len() - tail, new: at..new.len() - tail });
        }
        let start = self.next_diff(self.pos);
        if start == old.len() {
            self.done = true;
            return None;
        }
        let mut end = self.next_same(start);
        loop {
            let next = self.next_diff(end);
            if next < old.len() && next - end < EDIT_MIN_GAP {
                end = self.next_same(next);
            } else {
                self.pos = next;
                break;
            }
        }
        let gap = start - self.end;
        self.end = end;
        Some(Span { gap, old: start..end, new: start..end })
    }
}

/// Whether an update of `old` to `new` is logged as a patch ([`Change::logged`]): the bytes its
/// edits keep come to at least `PATCH_MIN_KEPT`.
fn patch_pays(old: &[u8], new: &[u8]) -> bool {
    let changed: usize = Spans::new(old, new).map(|s| s.old.len()).sum();
    old.len() - changed >= PATCH_MIN_KEPT
}

/// The edits that take `old` to `new` ([`Spans`]), owned.
fn diff(old: &[u8], new: &[u8]) -> Vec<Edit> {
    Spans::new(old, new)
        .map(|s| Edit { gap: s.gap, old: old[s.old].to_vec(), new: new[s.new].to_vec() })
        .collect()
}

impl Change {
    /// The owned copy of `c`.
    #[must_use]
    pub fn of(c: &LeafChange<'_>) -> Change {
        match *c {
            LeafChange::Insert { key, value } => Change::Insert { key: key.to_vec(), value: value.to_vec() },
            LeafChange::Update { key, old, new } => {
                Change::Update { key: key.to_vec(), old: old.to_vec(), new: new.to_vec() }
            }
            LeafChange::Delete { key, old } => Change::Delete { key: key.to_vec(), old: old.to_vec() },
        }
    }

    /// The form a leaf record logs `c` in: an update of a value stored in the leaf (`inline`)
    /// as a [`Change::Patch`] of the bytes that changed when it keeps enough of them, else as
    /// [`Change::of`].
    #[must_use]
    pub fn logged(c: &LeafChange<'_>, inline: bool) -> Change {
        match *c {
            LeafChange::Update { key, old, new } if inline && patch_pays(old, new) => {
                Change::Patch { key: key.to_vec(), edits: diff(old, new) }
            }
            _ => Change::of(c),
        }
    }

    /// The key changed.
    #[must_use]
    pub fn key(&self) -> &[u8] {
        match self {
            Change::Insert { key, .. }
            | Change::Update { key, .. }
            | Change::Delete { key, .. }
            | Change::Patch { key, .. } => key,
        }
    }

    /// The borrowed form the tree works with; `None` for a [`Change::Patch`], whose values
    /// need the value it was made on ([`splice`]).
    #[must_use]
    pub fn borrow(&self) -> Option<LeafChange<'_>> {
        match self {
            Change::Insert { key, value } => Some(LeafChange::Insert { key, value }),
            Change::Update { key, old, new } => Some(LeafChange::Update { key, old, new }),
            Change::Delete { key, old } => Some(LeafChange::Delete { key, old }),
            Change::Patch { .. } => None,
        }
    }
}

/// How a structure change logs one page it wrote (btree README T13): the page's disk image, or
/// a logical change redo repeats on the page's state before it (the owned form of
/// [`NodeChange`]). Every form is page-local (R9): it needs no other page to redo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeLog {
    /// The page's disk image after the change (new pages, root growth, merges, a new root, and
    /// any page whose state before the change the log does not hold, R3).
    Image(Vec<u8>),
    /// [`NodeChange::Split`]: truncate at `key`, foster key `key`, foster child `right`.
    Split {
        /// The separator.
        key: Vec<u8>,
        /// The new foster child.
        right: PageId,
    },
    /// [`NodeChange::Adopt`]: insert the record `key` → `child`.
    Adopt {
        /// The separator.
        key: Vec<u8>,
        /// The adopted child.
        child: PageId,
    },
    /// [`NodeChange::Adopted`]: the foster key becomes the high fence; `child` leaves.
    Adopted {
        /// The foster child that was adopted.
        child: PageId,
    },
    /// [`NodeChange::Unlink`]: remove the record `key` → `child`.
    Unlink {
        /// The removed record's key.
        key: Vec<u8>,
        /// The merged child.
        child: PageId,
    },
    /// The new node of a split, logged without its image (RECOVERY.md R29, only with
    /// `LabOptions::lazy_split_images`): the records of the page whose [`NodeLog::Split`] in the
    /// same record names this page, from its separator on, with its high fence and foster
    /// child, as that page stood just before the record (`swizzledb_btree::log::split_off`).
    SplitOff,
}

impl NodeLog {
    /// The owned copy of `c`.
    #[must_use]
    pub fn of(c: &NodeChange<'_>) -> NodeLog {
        match *c {
            NodeChange::Split { key, right } => NodeLog::Split { key: key.to_vec(), right },
            NodeChange::Adopt { key, child } => NodeLog::Adopt { key: key.to_vec(), child },
            NodeChange::Adopted { child } => NodeLog::Adopted { child },
            NodeChange::Unlink { key, child } => NodeLog::Unlink { key: key.to_vec(), child },
        }
    }

    /// The logical change, or the image.
    ///
    /// # Errors
    /// The page's image, for a [`NodeLog::Image`].
    pub fn change(&self) -> Result<NodeChange<'_>, &[u8]> {
        match self {
            NodeLog::Image(image) => Err(image),
            NodeLog::Split { key, right } => Ok(NodeChange::Split { key, right: *right }),
            NodeLog::Adopt { key, child } => Ok(NodeChange::Adopt { key, child: *child }),
            NodeLog::Adopted { child } => Ok(NodeChange::Adopted { child: *child }),
            NodeLog::Unlink { key, child } => Ok(NodeChange::Unlink { key, child: *child }),
            NodeLog::SplitOff => Err(&[]),
        }
    }

    /// Whether redo rebuilds the page from this entry alone, without its state before the
    /// record: an image, or a split-off (its page's creation, R29). Analysis makes the record
    /// the page's last image (R8).
    #[must_use]
    pub fn replaces_page(&self) -> bool {
        matches!(self, NodeLog::Image(_) | NodeLog::SplitOff)
    }
}

/// Where a transaction stands in a checkpoint's transaction table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxnState {
    /// Running: undone at restart (a loser).
    Active,
    /// Its commit record is logged; only its end record is missing.
    Committed,
    /// Rolling back: restart finishes the rollback.
    Aborting,
}

/// A transaction in a checkpoint's table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnEntry {
    /// The transaction.
    pub txn: TxnId,
    /// Its state.
    pub state: TxnState,
    /// Its newest record (the head of its undo chain).
    pub last_lsn: Lsn,
    /// The next record to undo (`Lsn(0)`: nothing left).
    pub undo_next: Lsn,
}

/// A checkpoint's contents, taken while transactions run (fuzzy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint's begin record: analysis starts there.
    pub begin: Lsn,
    /// Dirty pages and their recovery LSNs.
    pub dirty: Vec<(PageId, Lsn)>,
    /// Transactions not yet ended.
    pub txns: Vec<TxnEntry>,
    /// Pages in the file, allocated or free.
    pub page_count: u64,
    /// The free-page set.
    pub free: Vec<PageId>,
    /// Tree names and root pages.
    pub catalog: Vec<(String, PageId)>,
    /// In an end record, how many [`Record::CheckpointPart`] records between the begin record
    /// and it hold the rest of the tables (RECOVERY.md R7): a checkpoint whose tables do not
    /// fit one record goes out in parts. 0 in a part, and in a checkpoint read whole.
    pub parts: u64,
}

/// A log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A transaction's first record, in logs written before RECOVERY.md R6 made a transaction's
    /// first change (`prev = 0`) its first record; still read, no longer written.
    Begin {
        /// The transaction.
        txn: TxnId,
    },
    /// A change to a leaf record; a compensation record (CLR) if `undo_next` is set.
    Leaf {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Lsn,
        /// For a CLR, the next record to undo (`Lsn(0)`: none left); `None` for a forward change.
        undo_next: Option<Lsn>,
        /// The tree's root page (its identity).
        tree: PageId,
        /// The leaf changed.
        page: PageId,
        /// What changed.
        change: Change,
        /// The leaf's disk image before the change, when this is the first change since the page
        /// was last written (so redo never needs the page from disk, RECOVERY.md R3).
        base: Option<Vec<u8>>,
        /// The overflow chain the new value was written to (btree README T22), in order; redo
        /// rebuilds each page from the value. Empty for a value stored in the leaf.
        chain: Vec<PageId>,
        /// The overflow pages of the replaced or removed value, returned to the free-page set.
        freed: Vec<PageId>,
        /// The transaction commits with this record, its last (RECOVERY.md R2): an
        /// auto-commit write's one change logs no `Commit` after it. Never on a CLR.
        commits: bool,
    },
    /// The transaction committed.
    Commit {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Lsn,
    },
    /// The transaction began rolling back.
    Abort {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Lsn,
    },
    /// The transaction is finished: fully rolled back, or (restart, R10) a committed one a
    /// checkpoint listed. A commit logs no `End` (R2).
    End {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Lsn,
    },
    /// A structure change (a system transaction, never undone): each page it wrote, as an
    /// image or a logical node change, and the pages it freed.
    Structure {
        /// The pages written, each as redo repeats it on that page alone (R9).
        pages: Vec<(PageId, NodeLog)>,
        /// Pages returned to the free-page set.
        freed: Vec<PageId>,
    },
    /// A tree was created.
    CreateTree {
        /// Its name.
        name: String,
        /// Its root page.
        root: PageId,
    },
    /// A tree was dropped: its name leaves the catalog. Its pages, root included, are freed by
    /// `Structure` records after this one (RECOVERY.md R23).
    DropTree {
        /// Its name.
        name: String,
        /// Its root page.
        root: PageId,
    },
    /// A checkpoint began.
    CheckpointBegin,
    /// A checkpoint's contents.
    CheckpointEnd(Box<Checkpoint>),
    /// Part of the tables of the checkpoint that began at its `begin` (its end record counts
    /// the parts).
    CheckpointPart(Box<Checkpoint>),
    /// A page reached disk carrying this page LSN.
    PageWrite {
        /// The page.
        page: PageId,
        /// Its page LSN when written.
        page_lsn: Lsn,
        /// `Some(l)`: written from outside the pool (the decoupled cleaner, RECOVERY.md R20),
        /// the copy holding every change of the page below `l`; changes at or after `l` may
        /// precede this record in the log. `None`: the pool wrote it and appended this record
        /// before releasing the page's latch (buffer B20), so every change before this record
        /// is in the copy written.
        decoupled: Option<Lsn>,
    },
}

/// The part of a `Leaf` or `Structure` record analysis uses ([`Record::analysis_view`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AnalysisView {
    /// A leaf change: its transaction, the transaction's previous record (0: this is its first,
    /// R6), a CLR's undo-next, its page, whether it carries the page's base image; the overflow
    /// pages it writes (as images) and frees; whether the transaction commits with it (R2).
    Leaf {
        txn: TxnId,
        prev: Lsn,
        undo_next: Option<Lsn>,
        page: PageId,
        base: bool,
        chain: Vec<PageId>,
        freed: Vec<PageId>,
        commits: bool,
    },
    /// A structure change: each page and whether it is logged as an image; the freed pages.
    Structure { pages: Vec<(PageId, bool)>, freed: Vec<PageId> },
}

/// A body that is not a record of this format version.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed log record: {0}")]
pub struct Malformed(pub &'static str);

/// A record's kind: the first byte of its body (the table in the module doc). Every match over
/// kinds or records in the engine is exhaustive, so a new kind cannot be forgotten by analysis,
/// redo or undo.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    /// [`Record::Begin`].
    Begin = 1,
    /// [`Record::Leaf`].
    Leaf = 2,
    /// [`Record::Commit`].
    Commit = 3,
    /// [`Record::Abort`].
    Abort = 4,
    /// [`Record::End`].
    End = 5,
    /// [`Record::Structure`].
    Structure = 6,
    /// [`Record::CreateTree`].
    CreateTree = 7,
    /// [`Record::CheckpointBegin`].
    CheckpointBegin = 8,
    /// [`Record::CheckpointEnd`].
    CheckpointEnd = 9,
    /// [`Record::PageWrite`].
    PageWrite = 10,
    /// [`Record::DropTree`].
    DropTree = 11,
    /// [`Record::CheckpointPart`].
    CheckpointPart = 12,
}

impl RecordKind {
    /// Every kind, in byte order.
    pub const ALL: [RecordKind; 12] = [
        RecordKind::Begin,
        RecordKind::Leaf,
        RecordKind::Commit,
        RecordKind::Abort,
        RecordKind::End,
        RecordKind::Structure,
        RecordKind::CreateTree,
        RecordKind::CheckpointBegin,
        RecordKind::CheckpointEnd,
        RecordKind::PageWrite,
        RecordKind::DropTree,
        RecordKind::CheckpointPart,
    ];
}

impl From<RecordKind> for u8 {
    fn from(kind: RecordKind) -> u8 {
        kind as u8
    }
}

/// The first byte of a [`Record::CheckpointEnd`] whose checkpoint went out in parts (RECOVERY.md
/// R7): its body ends with the count of parts, which a checkpoint in one record's lacks, so
/// that every body a log holds decodes as it did.
const PARTED_END: u8 = 13;

/// A byte that names no [`RecordKind`].
#[derive(Copy, Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown log record kind {0}")]
pub struct UnknownRecordKind(pub u8);

impl TryFrom<u8> for RecordKind {
    type Error = UnknownRecordKind;

    fn try_from(byte: u8) -> Result<RecordKind, UnknownRecordKind> {
        Ok(match byte {
            1 => RecordKind::Begin,
            2 => RecordKind::Leaf,
            3 => RecordKind::Commit,
            4 => RecordKind::Abort,
            5 => RecordKind::End,
            6 => RecordKind::Structure,
            7 => RecordKind::CreateTree,
            8 => RecordKind::CheckpointBegin,
            9 => RecordKind::CheckpointEnd,
            10 => RecordKind::PageWrite,
            11 => RecordKind::DropTree,
            12 => RecordKind::CheckpointPart,
            PARTED_END => RecordKind::CheckpointEnd,
            other => return Err(UnknownRecordKind(other)),
        })
    }
}

impl From<UnknownRecordKind> for Malformed {
    fn from(_: UnknownRecordKind) -> Malformed {
        Malformed("record kind")
    }
}

impl Record {
    /// The pages whose contents the record changes (what the log archive files it under,
    /// RECOVERY.md R17): a leaf change's leaf, the new value's overflow chain and the freed
    /// overflow pages; a structure change's pages and freed pages.
    #[must_use]
    pub fn pages_changed(&self) -> Vec<PageId> {
        match self {
            Record::Leaf { page, chain, freed, .. } => {
                std::iter::once(*page).chain(chain.iter().copied()).chain(freed.iter().copied()).collect()
            }
            Record::Structure { pages, freed } => {
                pages.iter().map(|(p, _)| *p).chain(freed.iter().copied()).collect()
            }
            Record::Begin { .. }
            | Record::Commit { .. }
            | Record::Abort { .. }
            | Record::End { .. }
            | Record::CreateTree { .. }
            | Record::DropTree { .. }
            | Record::CheckpointBegin
            | Record::CheckpointEnd(_)
            | Record::CheckpointPart(_)
            | Record::PageWrite { .. } => Vec::new(),
        }
    }

    /// R29: if this record makes page `id` as a split-off, the split's source page and
    /// separator (the source's `Split` entry naming `id`).
    #[must_use]
    pub fn split_off_source(&self, id: PageId) -> Option<(PageId, &[u8])> {
        let Record::Structure { pages, .. } = self else { return None };
        if !pages.iter().any(|(p, n)| *p == id && matches!(n, NodeLog::SplitOff)) {
            return None;
        }
        pages.iter().find_map(|(p, n)| match n {
            NodeLog::Split { key, right } if *right == id => Some((*p, &key[..])),
            _ => None,
        })
    }

    /// R29: whether this record makes page `id` as a split-off, or makes a split-off of it.
    #[must_use]
    pub fn derives(&self, id: PageId) -> bool {
        let Record::Structure { pages, .. } = self else { return false };
        pages.iter().any(|(p, n)| match n {
            NodeLog::SplitOff => *p == id || self.split_off_source(*p).is_some_and(|(s, _)| s == id),
            _ => false,
        })
    }

    /// [`Record::pages_changed`] of an encoded record, read without decoding the rest (no
    /// keys, values or images are copied): what the log archiver needs of every record.
    ///
    /// # Errors
    /// [`Malformed`] if the body is not a record of this format version.
    pub fn pages_in(body: &[u8]) -> Result<Vec<PageId>, Malformed> {
        let mut r = Reader(body);
        match RecordKind::try_from(r.u8()?)? {
            RecordKind::Leaf => {
                let flags = r.u8()?;
                r.var()?; // txn
                r.var()?; // prev
                if flags & LEAF_CLR != 0 {
                    r.var()?; // undo_next
                }
                r.var()?; // tree
                let mut pages = vec![r.page()?];
                if flags & LEAF_OVERFLOW != 0 {
                    pages.extend(r.pages()?);
                    pages.extend(r.pages()?);
                }
                Ok(pages)
            }
            RecordKind::Structure => {
                let n = r.count(2)?;
                let mut pages = Vec::with_capacity(n + 1);
                for _ in 0..n {
                    pages.push(r.page()?);
                    match r.u8()? {
                        NODE_IMAGE => r.skip_image()?,
                        NODE_SPLIT | NODE_ADOPT | NODE_UNLINK => {
                            r.skip_bytes()?;
                            r.var()?;
                        }
                        NODE_ADOPTED => {
                            r.var()?;
                        }
                        NODE_SPLIT_OFF => {}
                        _ => return Err(Malformed("structure page form")),
                    }
                }
                let freed = r.count(1)?;
                for _ in 0..freed {
                    pages.push(r.page()?);
                }
                Ok(pages)
            }
            RecordKind::Begin
            | RecordKind::Commit
            | RecordKind::Abort
            | RecordKind::End
            | RecordKind::CreateTree
            | RecordKind::DropTree
            | RecordKind::CheckpointBegin
            | RecordKind::CheckpointEnd
            | RecordKind::CheckpointPart
            | RecordKind::PageWrite => Ok(Vec::new()),
        }
    }

    /// What analysis needs of an encoded `Leaf` or `Structure` record, read without copying
    /// keys, values or images (a decoupled checkpoint reads every record since the previous
    /// one, R19); `None` for the other kinds, which are small and decoded whole.
    ///
    /// # Errors
    /// [`Malformed`] if the body is not a record of this format version.
    pub(crate) fn analysis_view(body: &[u8]) -> Result<Option<AnalysisView>, Malformed> {
        let mut r = Reader(body);
        match RecordKind::try_from(r.u8()?)? {
            RecordKind::Leaf => {
                let flags = r.u8()?;
                let txn = TxnId(r.var()?);
                let prev = Lsn(r.var()?);
                let undo_next = if flags & LEAF_CLR != 0 { Some(Lsn(r.var()?)) } else { None };
                r.var()?; // tree
                let page = r.page()?;
                let (chain, freed) = if flags & LEAF_OVERFLOW != 0 {
                    (r.pages()?, r.pages()?)
                } else {
                    (Vec::new(), Vec::new())
                };
                Ok(Some(AnalysisView::Leaf {
                    txn,
                    prev,
                    undo_next,
                    page,
                    base: flags & LEAF_BASE != 0,
                    chain,
                    freed,
                    commits: flags & LEAF_COMMITS != 0,
                }))
            }
            RecordKind::Structure => {
                let n = r.count(2)?;
                let mut pages = Vec::with_capacity(n);
                for _ in 0..n {
                    let page = r.page()?;
                    let form = r.u8()?;
                    match form {
                        NODE_IMAGE => r.skip_image()?,
                        NODE_SPLIT | NODE_ADOPT | NODE_UNLINK => {
                            r.skip_bytes()?;
                            r.var()?;
                        }
                        NODE_ADOPTED => {
                            r.var()?;
                        }
                        NODE_SPLIT_OFF => {}
                        _ => return Err(Malformed("structure page form")),
                    }
                    pages.push((page, form == NODE_IMAGE || form == NODE_SPLIT_OFF));
                }
                let freed = r.pages()?;
                Ok(Some(AnalysisView::Structure { pages, freed }))
            }
            RecordKind::Begin
            | RecordKind::Commit
            | RecordKind::Abort
            | RecordKind::End
            | RecordKind::CreateTree
            | RecordKind::DropTree
            | RecordKind::CheckpointBegin
            | RecordKind::CheckpointEnd
            | RecordKind::CheckpointPart
            | RecordKind::PageWrite => Ok(None),
        }
    }

    /// The record's kind (its first byte when encoded).
    #[must_use]
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::Begin { .. } => RecordKind::Begin,
            Record::Leaf { .. } => RecordKind::Leaf,
            Record::Commit { .. } => RecordKind::Commit,
            Record::Abort { .. } => RecordKind::Abort,
            Record::End { .. } => RecordKind::End,
            Record::Structure { .. } => RecordKind::Structure,
            Record::CreateTree { .. } => RecordKind::CreateTree,
            Record::DropTree { .. } => RecordKind::DropTree,
            Record::CheckpointBegin => RecordKind::CheckpointBegin,
            Record::CheckpointEnd(_) => RecordKind::CheckpointEnd,
            Record::CheckpointPart(_) => RecordKind::CheckpointPart,
            Record::PageWrite { .. } => RecordKind::PageWrite,
        }
    }

    /// The transaction and previous-record link of a transaction's record.
    #[must_use]
    pub fn txn_link(&self) -> Option<(TxnId, Lsn)> {
        match *self {
            Record::Leaf { txn, prev, .. }
            | Record::Commit { txn, prev }
            | Record::Abort { txn, prev }
            | Record::End { txn, prev } => Some((txn, prev)),
            Record::Begin { txn } => Some((txn, Lsn(0))),
            Record::Structure { .. }
            | Record::CreateTree { .. }
            | Record::DropTree { .. }
            | Record::CheckpointBegin
            | Record::CheckpointEnd(_)
            | Record::CheckpointPart(_)
            | Record::PageWrite { .. } => None,
        }
    }

    /// Encodes the record as a log body.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        self.encode_into(Vec::with_capacity(64))
    }

    /// Appends the record's log body to `buf` and returns it: the logged path reuses one
    /// buffer per thread instead of allocating per record, and puts the body after the log's
    /// room in front of it (`append_encoded`).
    pub(crate) fn encode_into(&self, buf: Vec<u8>) -> Vec<u8> {
        let mut w = Writer(buf);
        match self {
            Record::CheckpointEnd(c) if c.parts > 0 => w.u8(PARTED_END),
            _ => w.u8(self.kind().into()),
        }
        match self {
            Record::Begin { txn } => w.var(txn.0),
            Record::Leaf { txn, prev, undo_next, tree, page, change, base, chain, freed, commits } => {
                let form = match change {
                    Change::Insert { .. } => LEAF_INSERT,
                    Change::Update { .. } => LEAF_UPDATE,
                    Change::Delete { .. } => LEAF_DELETE,
                    Change::Patch { .. } => LEAF_UPDATE | LEAF_PATCH,
                };
                let head = LeafHead {
                    txn: *txn,
                    prev: *prev,
                    undo_next: *undo_next,
                    tree: *tree,
                    page: *page,
                    chain,
                    freed,
                    commits: *commits,
                };
                head.write(&mut w, form, base.is_some());
                match change {
                    Change::Insert { key, value } => {
                        w.bytes(key);
                        w.bytes(value);
                    }
                    Change::Update { key, old, new } => {
                        w.bytes(key);
                        w.bytes(old);
                        w.bytes(new);
                    }
                    Change::Delete { key, old } => {
                        w.bytes(key);
                        w.bytes(old);
                    }
                    Change::Patch { key, edits } => {
                        w.bytes(key);
                        w.len(edits.len());
                        for e in edits {
                            w.len(e.gap);
                            w.bytes(&e.old);
                            w.bytes(&e.new);
                        }
                    }
                }
                if let Some(b) = base {
                    w.image(b);
                }
            }
            Record::Commit { txn, prev } | Record::Abort { txn, prev } | Record::End { txn, prev } => {
                w.var(txn.0);
                w.var(prev.0);
            }
            Record::Structure { pages, freed } => {
                w.len(pages.len());
                for (page, node) in pages {
                    w.var(page.get());
                    match node {
                        NodeLog::Image(image) => {
                            w.u8(NODE_IMAGE);
                            w.image(image);
                        }
                        NodeLog::Split { key, right } => {
                            w.u8(NODE_SPLIT);
                            w.bytes(key);
                            w.var(right.get());
                        }
                        NodeLog::Adopt { key, child } => {
                            w.u8(NODE_ADOPT);
                            w.bytes(key);
                            w.var(child.get());
                        }
                        NodeLog::Adopted { child } => {
                            w.u8(NODE_ADOPTED);
                            w.var(child.get());
                        }
                        NodeLog::Unlink { key, child } => {
                            w.u8(NODE_UNLINK);
                            w.bytes(key);
                            w.var(child.get());
                        }
                        NodeLog::SplitOff => w.u8(NODE_SPLIT_OFF),
                    }
                }
                w.pages(freed);
            }
            Record::CreateTree { name, root } | Record::DropTree { name, root } => {
                w.bytes(name.as_bytes());
                w.var(root.get());
            }
            Record::CheckpointBegin => {}
            Record::CheckpointEnd(c) | Record::CheckpointPart(c) => {
                w.var(c.begin.0);
                w.len(c.dirty.len());
                for (page, rec) in &c.dirty {
                    w.var(page.get());
                    w.var(rec.0);
                }
                w.len(c.txns.len());
                for t in &c.txns {
                    w.var(t.txn.0);
                    w.u8(match t.state {
                        TxnState::Active => 0,
                        TxnState::Committed => 1,
                        TxnState::Aborting => 2,
                    });
                    w.var(t.last_lsn.0);
                    w.var(t.undo_next.0);
                }
                w.var(c.page_count);
                w.pages(&c.free);
                w.len(c.catalog.len());
                for (name, root) in &c.catalog {
                    w.bytes(name.as_bytes());
                    w.var(root.get());
                }
                // Only where there are parts (the record then begins with `PARTED_END`): an end
                // record of a checkpoint in one record is as it was before parts existed.
                if c.parts > 0 {
                    w.var(c.parts);
                }
            }
            Record::PageWrite { page, page_lsn, decoupled } => {
                w.var(page.get());
                w.var(page_lsn.0);
                match decoupled {
                    None => w.u8(0),
                    Some(l) => {
                        w.u8(1);
                        w.var(l.0);
                    }
                }
            }
        }
        w.0
    }

    /// Decodes a log body. Bodies come from checksummed frames, but a record is still read as
    /// untrusted bytes: every length is checked, nothing panics.
    ///
    /// # Errors
    /// [`Malformed`] naming what did not decode.
    pub fn decode(body: &[u8]) -> Result<Record, Malformed> {
        let mut r = Reader(body);
        let first = r.u8()?;
        let record = match RecordKind::try_from(first)? {
            RecordKind::Begin => Record::Begin { txn: TxnId(r.var()?) },
            RecordKind::Leaf => {
                let flags = r.u8()?;
                if flags & !(LEAF_FORM | LEAF_CLR | LEAF_BASE | LEAF_OVERFLOW | LEAF_PATCH | LEAF_COMMITS)
                    != 0
                {
                    return Err(Malformed("leaf record flags"));
                }
                if flags & LEAF_COMMITS != 0 && flags & LEAF_CLR != 0 {
                    return Err(Malformed("a compensation record that commits"));
                }
                if flags & LEAF_PATCH != 0 && flags & LEAF_FORM != LEAF_UPDATE {
                    return Err(Malformed("a patch that is not an update"));
                }
                let txn = TxnId(r.var()?);
                let prev = Lsn(r.var()?);
                let undo_next = if flags & LEAF_CLR != 0 { Some(Lsn(r.var()?)) } else { None };
                let tree = r.page()?;
                let page = r.page()?;
                let (chain, freed) = if flags & LEAF_OVERFLOW != 0 {
                    (r.pages()?, r.pages()?)
                } else {
                    (Vec::new(), Vec::new())
                };
                if flags & LEAF_OVERFLOW != 0 && chain.is_empty() && freed.is_empty() {
                    return Err(Malformed("leaf record flagged with overflow pages names none"));
                }
                let change = match flags & LEAF_FORM {
                    LEAF_INSERT => Change::Insert { key: r.bytes()?, value: r.bytes()? },
                    LEAF_UPDATE if flags & LEAF_PATCH != 0 => {
                        let key = r.bytes()?;
                        let n = r.count(3)?;
                        let mut edits = Vec::with_capacity(n);
                        for _ in 0..n {
                            edits.push(Edit { gap: r.value_len()?, old: r.bytes()?, new: r.bytes()? });
                        }
                        Change::Patch { key, edits }
                    }
                    LEAF_UPDATE => Change::Update { key: r.bytes()?, old: r.bytes()?, new: r.bytes()? },
                    LEAF_DELETE => Change::Delete { key: r.bytes()?, old: r.bytes()? },
                    _ => return Err(Malformed("leaf change kind")),
                };
                let base = if flags & LEAF_BASE != 0 { Some(r.image()?) } else { None };
                let commits = flags & LEAF_COMMITS != 0;
                Record::Leaf { txn, prev, undo_next, tree, page, change, base, chain, freed, commits }
            }
            RecordKind::Commit => {
                let (txn, prev) = (TxnId(r.var()?), Lsn(r.var()?));
                Record::Commit { txn, prev }
            }
            RecordKind::Abort => {
                let (txn, prev) = (TxnId(r.var()?), Lsn(r.var()?));
                Record::Abort { txn, prev }
            }
            RecordKind::End => {
                let (txn, prev) = (TxnId(r.var()?), Lsn(r.var()?));
                Record::End { txn, prev }
            }
            RecordKind::Structure => {
                let n = r.count(2)?;
                let mut pages = Vec::with_capacity(n);
                for _ in 0..n {
                    let page = r.page()?;
                    let node = match r.u8()? {
                        NODE_IMAGE => NodeLog::Image(r.image()?),
                        NODE_SPLIT => NodeLog::Split { key: r.bytes()?, right: r.page()? },
                        NODE_ADOPT => NodeLog::Adopt { key: r.bytes()?, child: r.page()? },
                        NODE_ADOPTED => NodeLog::Adopted { child: r.page()? },
                        NODE_UNLINK => NodeLog::Unlink { key: r.bytes()?, child: r.page()? },
                        NODE_SPLIT_OFF => NodeLog::SplitOff,
                        _ => return Err(Malformed("structure page form")),
                    };
                    pages.push((page, node));
                }
                Record::Structure { pages, freed: r.pages()? }
            }
            RecordKind::CreateTree => Record::CreateTree { name: r.string()?, root: r.page()? },
            RecordKind::DropTree => Record::DropTree { name: r.string()?, root: r.page()? },
            RecordKind::CheckpointBegin => Record::CheckpointBegin,
            kind @ (RecordKind::CheckpointEnd | RecordKind::CheckpointPart) => {
                let begin = Lsn(r.var()?);
                let n = r.count(2)?;
                let mut dirty = Vec::with_capacity(n);
                for _ in 0..n {
                    dirty.push((r.page()?, Lsn(r.var()?)));
                }
                let n = r.count(4)?;
                let mut txns = Vec::with_capacity(n);
                for _ in 0..n {
                    let txn = TxnId(r.var()?);
                    let state = match r.u8()? {
                        0 => TxnState::Active,
                        1 => TxnState::Committed,
                        2 => TxnState::Aborting,
                        _ => return Err(Malformed("transaction state")),
                    };
                    txns.push(TxnEntry { txn, state, last_lsn: Lsn(r.var()?), undo_next: Lsn(r.var()?) });
                }
                let page_count = r.var()?;
                let free = r.pages()?;
                let n = r.count(2)?;
                let mut catalog = Vec::with_capacity(n);
                for _ in 0..n {
                    catalog.push((r.string()?, r.page()?));
                }
                let parts = if first == PARTED_END {
                    match r.var()? {
                        0 => return Err(Malformed("a checkpoint in parts counts none")),
                        n => n,
                    }
                } else {
                    0
                };
                let c = Box::new(Checkpoint { begin, dirty, txns, page_count, free, catalog, parts });
                if kind == RecordKind::CheckpointEnd {
                    Record::CheckpointEnd(c)
                } else {
                    Record::CheckpointPart(c)
                }
            }
            RecordKind::PageWrite => {
                let (page, page_lsn) = (r.page()?, Lsn(r.var()?));
                let decoupled = match r.u8()? {
                    0 => None,
                    1 => Some(Lsn(r.var()?)),
                    _ => return Err(Malformed("page-write kind")),
                };
                Record::PageWrite { page, page_lsn, decoupled }
            }
        };
        if !r.0.is_empty() {
            return Err(Malformed("trailing bytes"));
        }
        Ok(record)
    }
}

/// A `Leaf` record's flags byte: the change (insert, update, delete) in its low two bits, then
/// whether it is a CLR (an undo-next LSN follows `prev`), whether a base image ends it, whether
/// it names overflow pages, whether it is a patch, and whether its transaction commits with it.
const LEAF_FORM: u8 = 3;
const LEAF_INSERT: u8 = 1;
const LEAF_UPDATE: u8 = 2;
const LEAF_DELETE: u8 = 3;
const LEAF_CLR: u8 = 4;
const LEAF_OVERFLOW: u8 = 16;
const LEAF_BASE: u8 = 8;
/// With `LEAF_UPDATE`: the change is a [`Change::Patch`].
const LEAF_PATCH: u8 = 32;
/// The transaction commits with this record (R2).
const LEAF_COMMITS: u8 = 64;

/// How a `Structure` record logs one page ([`NodeLog`]).
const NODE_IMAGE: u8 = 0;
const NODE_SPLIT: u8 = 1;
const NODE_ADOPT: u8 = 2;
const NODE_ADOPTED: u8 = 3;
const NODE_UNLINK: u8 = 4;
const NODE_SPLIT_OFF: u8 = 5;

/// Bytes of a varint at most (a `u64` in 7-bit groups).
const MAX_VARINT: usize = 10;

/// What the log is handed: a value that encodes to a record's body.
pub(crate) trait Encode {
    /// Appends the log body to `buf` (its bytes so far stay in front) and returns it.
    fn encode_into(&self, buf: Vec<u8>) -> Vec<u8>;
}

impl Encode for Record {
    fn encode_into(&self, buf: Vec<u8>) -> Vec<u8> {
        Record::encode_into(self, buf)
    }
}

/// The fields of a `Leaf` body before its change: the flags byte, the links, the pages.
pub(crate) struct LeafHead<'a> {
    pub(crate) txn: TxnId,
    pub(crate) prev: Lsn,
    pub(crate) undo_next: Option<Lsn>,
    pub(crate) tree: PageId,
    pub(crate) page: PageId,
    pub(crate) chain: &'a [PageId],
    pub(crate) freed: &'a [PageId],
    /// The transaction commits with this record (R2).
    pub(crate) commits: bool,
}

impl LeafHead<'_> {
    /// Writes the head; `form` is the change's bits of the flags byte.
    fn write(&self, w: &mut Writer, form: u8, base: bool) {
        let clr = if self.undo_next.is_some() { LEAF_CLR } else { 0 };
        let has_base = if base { LEAF_BASE } else { 0 };
        let overflow = !(self.chain.is_empty() && self.freed.is_empty());
        debug_assert!(!(self.commits && self.undo_next.is_some()), "R2: a CLR never commits");
        let commits = if self.commits { LEAF_COMMITS } else { 0 };
        w.u8(form | clr | has_base | commits | if overflow { LEAF_OVERFLOW } else { 0 });
        w.var(self.txn.0);
        w.var(self.prev.0);
        if let Some(l) = self.undo_next {
            w.var(l.0);
        }
        w.var(self.tree.get());
        w.var(self.page.get());
        if overflow {
            w.pages(self.chain);
            w.pages(self.freed);
        }
    }
}

/// A transaction's leaf record in the borrowed form the tree hands over: it encodes to the
/// body of the [`Record::Leaf`] with `change: Change::logged(&change, inline)` and no base
/// image, without copying the key and values into a [`Change`] first (the logged write path).
pub(crate) struct LeafRecord<'a> {
    pub(crate) head: LeafHead<'a>,
    pub(crate) change: LeafChange<'a>,
    /// The value is stored in the leaf (no overflow chain): an update may log as a patch.
    pub(crate) inline: bool,
}

impl Encode for LeafRecord<'_> {
    fn encode_into(&self, buf: Vec<u8>) -> Vec<u8> {
        let start = buf.len();
        let mut w = Writer(buf);
        w.u8(RecordKind::Leaf.into());
        let head = &self.head;
        match self.change {
            LeafChange::Update { key, old, new } => {
                if self.inline {
                    // One pass: the edits are written where they go, their count put in front
                    // of them once known (a byte or two moved), and all of it taken back if
                    // the patch does not pay (Change::logged).
                    head.write(&mut w, LEAF_UPDATE | LEAF_PATCH, false);
                    w.bytes(key);
                    let at = w.0.len();
                    let (mut count, mut changed) = (0, 0);
                    for span in Spans::new(old, new) {
                        count += 1;
                        changed += span.old.len();
                        w.len(span.gap);
                        w.bytes(&old[span.old]);
                        w.bytes(&new[span.new]);
                    }
                    if old.len() - changed >= PATCH_MIN_KEPT {
                        let edits_end = w.0.len();
                        w.len(count);
                        let count_len = w.0.len() - edits_end;
                        w.0[at..].rotate_right(count_len);
                        return w.0;
                    }
                    w.0.truncate(start);
                    w.u8(RecordKind::Leaf.into());
                }
                head.write(&mut w, LEAF_UPDATE, false);
                w.bytes(key);
                w.bytes(old);
                w.bytes(new);
            }
            LeafChange::Insert { key, value } => {
                head.write(&mut w, LEAF_INSERT, false);
                w.bytes(key);
                w.bytes(value);
            }
            LeafChange::Delete { key, old } => {
                head.write(&mut w, LEAF_DELETE, false);
                w.bytes(key);
                w.bytes(old);
            }
        }
        w.0
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    /// An unsigned LEB128 varint: 7 bits a byte, low group first, the high bit set on every
    /// byte but the last.
    #[inline]
    fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn len(&mut self, n: usize) {
        self.var(n as u64);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }

    /// A page image without its longest run of zero bytes: length, where the run starts, how
    /// long it is, then the bytes before and after it.
    fn image(&mut self, image: &[u8]) {
        let (start, len) = longest_zero_run(image);
        self.len(image.len());
        self.len(start);
        self.len(len);
        self.0.extend_from_slice(&image[..start]);
        self.0.extend_from_slice(&image[start + len..]);
    }

    fn pages(&mut self, pages: &[PageId]) {
        self.len(pages.len());
        for p in pages {
            self.var(p.get());
        }
    }
}

/// Where the longest run of zero bytes starts and how long it is (the first of equal runs).
/// Runs of at least 16 bytes hold an aligned zero word: those are found a word at a time and
/// widened byte by byte; only if there is none are the bytes read one by one.
fn longest_zero_run(bytes: &[u8]) -> (usize, usize) {
    let mut best = (0, 0);
    let words = bytes.len() / 8;
    let zero_word = |w: usize| u64::from_ne_bytes(bytes[8 * w..8 * w + 8].try_into().expect("8 bytes")) == 0;
    let mut w = 0;
    while w < words {
        if !zero_word(w) {
            w += 1;
            continue;
        }
        let mut end_word = w + 1;
        while end_word < words && zero_word(end_word) {
            end_word += 1;
        }
        let mut start = 8 * w;
        while start > 0 && bytes[start - 1] == 0 {
            start -= 1;
        }
        let mut end = 8 * end_word;
        while end < bytes.len() && bytes[end] == 0 {
            end += 1;
        }
        if end - start > best.1 {
            best = (start, end - start);
        }
        w = end_word;
    }
    if best.1 >= 16 {
        return best;
    }
    // Every run here is shorter than 16 bytes: search them all afresh, so that of equal runs
    // the first wins, also over one the word pass found later.
    let mut best = (0, 0);
    let (mut run_start, mut run) = (0, 0);
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 {
            if run == 0 {
                run_start = i;
            }
            run += 1;
            if run > best.1 {
                best = (run_start, run);
            }
        } else {
            run = 0;
        }
    }
    best
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    /// A varint ([`Writer::var`]); one that does not fit a `u64` is malformed.
    fn var(&mut self) -> Result<u64, Malformed> {
        let mut v = 0u64;
        for i in 0..MAX_VARINT {
            let b = self.u8()?;
            let group = u64::from(b & 0x7f);
            if i == MAX_VARINT - 1 && group > 1 {
                return Err(Malformed("varint beyond 64 bits"));
            }
            v |= group << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Malformed("varint beyond 64 bits"))
    }

    /// A length: at most what is left of the body (every length counts bytes or items of at
    /// least one byte that follow).
    fn len(&mut self) -> Result<usize, Malformed> {
        let n = self.var()?;
        usize::try_from(n).ok().filter(|&n| n <= self.0.len()).ok_or(Malformed("length beyond the record"))
    }

    /// A length of a value on a page (not of bytes in the record): at most a page.
    fn value_len(&mut self) -> Result<usize, Malformed> {
        usize::try_from(self.var()?)
            .ok()
            .filter(|&n| n <= swizzledb_buffer::page::MAX_PAGE_SIZE)
            .ok_or(Malformed("a patch keeping more than a page"))
    }

    /// A count of items of at least `min_size` bytes each, checked against what is left, so a
    /// corrupted count cannot make the decoder allocate without bound.
    fn count(&mut self, min_size: usize) -> Result<usize, Malformed> {
        let n = self.len()?;
        if n.saturating_mul(min_size) > self.0.len() {
            return Err(Malformed("count beyond the record"));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, Malformed> {
        let n = self.len()?;
        Ok(self.take(n)?.to_vec())
    }

    fn skip_bytes(&mut self) -> Result<(), Malformed> {
        let n = self.len()?;
        self.take(n).map(|_| ())
    }

    /// An image's length and where its zero run starts and ends, checked.
    fn image_parts(&mut self) -> Result<(usize, usize, usize), Malformed> {
        let run = Malformed("zero run beyond the image");
        let len = usize::try_from(self.var()?)
            .ok()
            .filter(|&l| l <= swizzledb_buffer::page::MAX_PAGE_SIZE)
            .ok_or(Malformed("an image larger than any page"))?;
        let start = usize::try_from(self.var()?).map_err(|_| run.clone())?;
        let zeros = usize::try_from(self.var()?).map_err(|_| run.clone())?;
        let end = start.checked_add(zeros).filter(|&e| e <= len).ok_or(run)?;
        Ok((len, start, end))
    }

    fn skip_image(&mut self) -> Result<(), Malformed> {
        let (len, start, end) = self.image_parts()?;
        self.take(start + (len - end)).map(|_| ())
    }

    fn image(&mut self) -> Result<Vec<u8>, Malformed> {
        let (len, start, end) = self.image_parts()?;
        let mut image = Vec::with_capacity(len);
        image.extend_from_slice(self.take(start)?);
        image.resize(end, 0);
        image.extend_from_slice(self.take(len - end)?);
        Ok(image)
    }

    fn string(&mut self) -> Result<String, Malformed> {
        String::from_utf8(self.bytes()?).map_err(|_| Malformed("name not UTF-8"))
    }

    fn page(&mut self) -> Result<PageId, Malformed> {
        PageId::new(self.var()?).ok_or(Malformed("page id out of range"))
    }

    fn pages(&mut self) -> Result<Vec<PageId>, Malformed> {
        let n = self.count(1)?;
        (0..n).map(|_| self.page()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pid(n: u64) -> PageId {
        PageId::new(n).unwrap()
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..40)
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (bytes(), bytes()).prop_map(|(key, value)| Change::Insert { key, value }),
            (bytes(), bytes(), bytes()).prop_map(|(key, old, new)| Change::Update { key, old, new }),
            (bytes(), bytes()).prop_map(|(key, old)| Change::Delete { key, old }),
            (bytes(), prop::collection::vec((0usize..9000, bytes(), bytes()), 0..4)).prop_map(|(key, e)| {
                let edits = e.into_iter().map(|(gap, old, new)| Edit { gap, old, new }).collect();
                Change::Patch { key, edits }
            }),
        ]
    }

    /// Every form a structure record gives a page.
    fn node_log() -> impl Strategy<Value = NodeLog> {
        let page = (0u64..1 << 40).prop_map(pid);
        prop_oneof![
            bytes().prop_map(NodeLog::Image),
            (bytes(), page.clone()).prop_map(|(key, right)| NodeLog::Split { key, right }),
            (bytes(), page.clone()).prop_map(|(key, child)| NodeLog::Adopt { key, child }),
            page.clone().prop_map(|child| NodeLog::Adopted { child }),
            (bytes(), page).prop_map(|(key, child)| NodeLog::Unlink { key, child }),
            Just(NodeLog::SplitOff),
        ]
    }

    fn record() -> impl Strategy<Value = Record> {
        let txn = any::<u64>().prop_map(TxnId);
        let lsn = any::<u64>().prop_map(Lsn);
        let page = (0u64..1 << 40).prop_map(pid);
        let state = prop_oneof![Just(TxnState::Active), Just(TxnState::Committed), Just(TxnState::Aborting)];
        let entry = (txn.clone(), state, lsn.clone(), lsn.clone())
            .prop_map(|(txn, state, last_lsn, undo_next)| TxnEntry { txn, state, last_lsn, undo_next });
        let checkpoint = (
            lsn.clone(),
            prop::collection::vec((page.clone(), lsn.clone()), 0..5),
            prop::collection::vec(entry, 0..4),
            any::<u64>(),
            prop::collection::vec(page.clone(), 0..5),
            prop::collection::vec(("[a-z]{1,8}", page.clone()), 0..3),
            0u64..3,
            any::<bool>(),
        )
            .prop_map(|(begin, dirty, txns, page_count, free, catalog, parts, part)| {
                // A part counts no parts (R7): its encoding has no room for the count.
                let (parts, page_count) = if part { (0, 0) } else { (parts, page_count) };
                let c = Box::new(Checkpoint { begin, dirty, txns, page_count, free, catalog, parts });
                if part {
                    Record::CheckpointPart(c)
                } else {
                    Record::CheckpointEnd(c)
                }
            });
        prop_oneof![
            txn.clone().prop_map(|txn| Record::Begin { txn }),
            (
                txn.clone(),
                lsn.clone(),
                prop::option::of(lsn.clone()),
                page.clone(),
                page.clone(),
                change(),
                prop::option::of(bytes()),
                prop::collection::vec(page.clone(), 0..3),
                prop::collection::vec(page.clone(), 0..3),
                any::<bool>(),
            )
                .prop_map(
                    |(txn, prev, undo_next, tree, page, change, base, chain, freed, commits)| {
                        // R2: a CLR never commits.
                        let commits = commits && undo_next.is_none();
                        Record::Leaf { txn, prev, undo_next, tree, page, change, base, chain, freed, commits }
                    }
                ),
            (txn.clone(), lsn.clone()).prop_map(|(txn, prev)| Record::Commit { txn, prev }),
            (txn.clone(), lsn.clone()).prop_map(|(txn, prev)| Record::Abort { txn, prev }),
            (txn, lsn.clone()).prop_map(|(txn, prev)| Record::End { txn, prev }),
            (
                prop::collection::vec((page.clone(), node_log()), 0..4),
                prop::collection::vec(page.clone(), 0..4)
            )
                .prop_map(|(pages, freed)| Record::Structure { pages, freed }),
            ("[a-z]{1,12}", page.clone()).prop_map(|(name, root)| Record::CreateTree { name, root }),
            ("[a-z]{1,12}", page.clone()).prop_map(|(name, root)| Record::DropTree { name, root }),
            Just(Record::CheckpointBegin),
            checkpoint,
            (page, lsn.clone(), proptest::option::of(lsn))
                .prop_map(|(page, page_lsn, decoupled)| Record::PageWrite { page, page_lsn, decoupled }),
        ]
    }

    proptest! {
        /// The archiver's reading of an encoded record's pages agrees with the decoded record.
        #[test]
        fn pages_in_reads_what_pages_changed_says(rec in record()) {
            prop_assert_eq!(Record::pages_in(&rec.encode()).unwrap(), rec.pages_changed());
        }

        /// The analysis view of an encoded record agrees with the decoded record (R19).
        #[test]
        fn analysis_view_agrees_with_decode(rec in record()) {
            let want = match &rec {
                Record::Leaf { txn, prev, undo_next, page, base, chain, freed, commits, .. } => {
                    Some(AnalysisView::Leaf {
                        txn: *txn,
                        prev: *prev,
                        undo_next: *undo_next,
                        page: *page,
                        base: base.is_some(),
                        chain: chain.clone(),
                        freed: freed.clone(),
                        commits: *commits,
                    })
                }
                Record::Structure { pages, freed } => Some(AnalysisView::Structure {
                    pages: pages.iter().map(|(p, n)| (*p, n.replaces_page())).collect(),
                    freed: freed.clone(),
                }),
                _ => None,
            };
            prop_assert_eq!(Record::analysis_view(&rec.encode()).unwrap(), want);
        }

        /// Every record decodes to itself, and its body starts with its kind's byte.
        #[test]
        fn records_round_trip(rec in record()) {
            let body = rec.encode();
            prop_assert_eq!(RecordKind::try_from(body[0]), Ok(rec.kind()));
            prop_assert_eq!(Record::decode(&body), Ok(rec));
        }

        /// Any strict prefix, and any body with a byte appended, is refused without panicking.
        #[test]
        fn truncated_or_extended_bodies_are_malformed(rec in record(), cut in any::<prop::sample::Index>()) {
            let body = rec.encode();
            let at = cut.index(body.len());
            prop_assert!(Record::decode(&body[..at]).is_err());
            let mut longer = body.clone();
            longer.push(0);
            prop_assert!(Record::decode(&longer).is_err());
        }

        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn garbage_never_panics(body in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = Record::decode(&body);
        }
    }

    /// Two runs of 12 zero bytes: the first holds no aligned word, the second does, so the word
    /// pass sees only the second; the first still wins the tie.
    #[test]
    fn of_equal_zero_runs_the_first_wins_also_over_one_the_word_pass_found() {
        let mut bytes = vec![1u8; 40];
        bytes[1..13].fill(0);
        bytes[20..32].fill(0);
        assert_eq!(longest_zero_run(&bytes), (1, 12));
    }

    proptest! {
        /// The word-at-a-time search finds the first longest run of zero bytes.
        #[test]
        fn the_longest_zero_run_is_the_first_longest_one(
            runs in prop::collection::vec((0usize..40, 0usize..40), 0..12),
        ) {
            let mut bytes = Vec::new();
            for (i, (zeros, ones)) in runs.iter().enumerate() {
                bytes.resize(bytes.len() + zeros, 0);
                bytes.extend(std::iter::repeat_n(1 + (i % 200) as u8, *ones));
            }
            // The first longest of the zero runs between non-zero bytes.
            let (mut want, mut at) = ((0, 0), 0);
            for zeros in bytes.split(|&b| b != 0) {
                if zeros.len() > want.1 {
                    want = (at, zeros.len());
                }
                at += zeros.len() + 1;
            }
            prop_assert_eq!(longest_zero_run(&bytes), want);
        }
    }

    /// Images leave out their longest zero run and come back byte for byte.
    #[test]
    fn images_elide_their_longest_zero_run() {
        let mut image = vec![7u8; 4096];
        image[100..3000].fill(0);
        image[3100..3200].fill(0);
        assert_eq!(longest_zero_run(&image), (100, 2900));
        let rec = Record::Structure { pages: vec![(pid(3), NodeLog::Image(image))], freed: vec![] };
        let body = rec.encode();
        assert!(body.len() < 4096 - 2900 + 64, "{} bytes", body.len());
        assert_eq!(Record::decode(&body), Ok(rec));
        assert_eq!(longest_zero_run(&[1, 2]), (0, 0));
    }

    /// Every kind round-trips through its byte; every other byte but a parted checkpoint end's
    /// is a typed error, which a decoder reports as a malformed record.
    #[test]
    fn record_kinds_round_trip_through_their_byte() {
        for kind in RecordKind::ALL {
            assert_eq!(RecordKind::try_from(u8::from(kind)), Ok(kind));
        }
        let bytes: Vec<u8> = RecordKind::ALL.iter().map(|&k| u8::from(k)).collect();
        let count = u8::try_from(RecordKind::ALL.len()).unwrap();
        assert_eq!(bytes, (1..=count).collect::<Vec<u8>>(), "kinds are numbered 1.. in table order");
        // A checkpoint's end record in parts has a byte of its own (R7).
        assert_eq!(RecordKind::try_from(PARTED_END), Ok(RecordKind::CheckpointEnd));
        assert_eq!(Record::decode(&[PARTED_END]), Err(Malformed("truncated")));
        for byte in (0..=u8::MAX).filter(|b| !bytes.contains(b) && *b != PARTED_END) {
            assert_eq!(RecordKind::try_from(byte), Err(UnknownRecordKind(byte)));
            assert_eq!(Record::decode(&[byte]), Err(Malformed("record kind")));
        }
    }

    /// The logical node changes convert to the tree's borrowed form and back.
    #[test]
    fn node_log_round_trips_through_the_tree_form() {
        for n in [
            NodeLog::Split { key: b"k".to_vec(), right: pid(4) },
            NodeLog::Adopt { key: b"".to_vec(), child: pid(5) },
            NodeLog::Adopted { child: pid(6) },
            NodeLog::Unlink { key: b"u".to_vec(), child: pid(7) },
        ] {
            assert_eq!(NodeLog::of(&n.change().unwrap()), n);
        }
        assert_eq!(NodeLog::Image(vec![1]).change(), Err(&[1u8][..]));
    }

    /// Varints: boundaries round-trip; one beyond 64 bits, or cut short, is malformed.
    #[test]
    fn varints_round_trip_and_refuse_overflow() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut w = Writer(Vec::new());
            w.var(v);
            assert!(w.0.len() <= MAX_VARINT);
            let mut r = Reader(&w.0);
            assert_eq!(r.var(), Ok(v));
            assert!(r.0.is_empty());
        }
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        assert_eq!(Reader(&too_big).var(), Err(Malformed("varint beyond 64 bits")));
        assert_eq!(Reader(&[0x80; 11]).var(), Err(Malformed("varint beyond 64 bits")));
        assert_eq!(Reader(&[0x80]).var(), Err(Malformed("truncated")));
    }

    proptest! {
        /// The varint writer writes unsigned LEB128 (the log's format) at every length, after
        /// whatever the buffer held, and the reader takes it back.
        #[test]
        fn varints_are_leb128_at_every_length(shift in 0u32..64, bits: u64, prefix in 0usize..20) {
            let v = bits >> shift;
            let mut want = vec![3; prefix];
            let mut x = v;
            while x >= 0x80 {
                want.push((x as u8) | 0x80);
                x >>= 7;
            }
            want.push(x as u8);
            let mut w = Writer(vec![3; prefix]);
            w.var(v);
            prop_assert_eq!(&w.0, &want);
            let mut r = Reader(&w.0[prefix..]);
            prop_assert_eq!(r.var(), Ok(v));
            prop_assert!(r.0.is_empty());
        }
    }

    /// The sizes that matter for the log's volume (docs/log-size.md): a 100-byte insert with an
    /// 8-byte key, a split's logical half and an adoption's two halves.
    #[test]
    fn common_records_are_small() {
        let leaf = Record::Leaf {
            txn: TxnId(12_000),
            prev: Lsn(40 << 20),
            undo_next: None,
            tree: pid(1),
            page: pid(4000),
            change: Change::Insert { key: vec![7; 8], value: vec![9; 100] },
            base: None,
            chain: vec![],
            freed: vec![],
            commits: false,
        };
        assert_eq!(leaf.encode().len(), 121, "kind, flags, 2+4+1+2 bytes of ids, 1+8 key, 1+100 value");
        let split = Record::Structure {
            pages: vec![(pid(4000), NodeLog::Split { key: vec![7; 8], right: pid(4001) })],
            freed: vec![],
        };
        assert_eq!(split.encode().len(), 17);
        let adopt = Record::Structure {
            pages: vec![
                (pid(30), NodeLog::Adopt { key: vec![7; 8], child: pid(4001) }),
                (pid(4000), NodeLog::Adopted { child: pid(4001) }),
            ],
            freed: vec![],
        };
        assert_eq!(adopt.encode().len(), 21);
    }

    #[test]
    fn change_borrow_round_trips() {
        let c = Change::Update { key: b"k".to_vec(), old: b"o".to_vec(), new: b"n".to_vec() };
        assert_eq!(Change::of(&c.borrow().unwrap()), c);
        assert_eq!(Record::decode(&[200]), Err(Malformed("record kind")));
    }

    proptest! {
        /// R3: an update logged as a patch splices the old value into the new one and the new
        /// one back into the old one; a value it was not made on is refused.
        #[test]
        fn a_patch_takes_old_to_new_and_back(
            key in bytes(),
            old in prop::collection::vec(any::<u8>(), 0..300),
            new in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let c = LeafChange::Update { key: &key, old: &old, new: &new };
            match Change::logged(&c, true) {
                Change::Patch { edits, .. } => {
                    let changed: usize = edits.iter().map(|e| e.old.len()).sum();
                    prop_assert!(old.len() - changed >= PATCH_MIN_KEPT);
                    prop_assert_eq!(splice(&old, &edits, Direction::Forward), Some(new.clone()));
                    prop_assert_eq!(splice(&new, &edits, Direction::Backward), Some(old.clone()));
                    // A value the patch was not made on: an edit's bytes are not where it says.
                    if let Some(e) = edits.iter().find(|e| !e.old.is_empty()) {
                        let at = edits.iter().take_while(|x| !std::ptr::eq(*x, e)).map(|x| x.gap + x.old.len()).sum::<usize>() + e.gap;
                        let mut other = old.clone();
                        other[at] ^= 1;
                        prop_assert_eq!(splice(&other, &edits, Direction::Forward), None);
                    }
                }
                whole => prop_assert_eq!(whole, Change::of(&c)),
            }
            prop_assert_eq!(Change::logged(&c, false), Change::of(&c));
        }
    }

    /// The byte-by-byte form of [`diff`]: the oracle its word-skipping search is checked against.
    fn diff_oracle(old: &[u8], new: &[u8]) -> Vec<Edit> {
        if old.len() != new.len() {
            let at = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let tail = old[at..].iter().rev().zip(new[at..].iter().rev()).take_while(|(a, b)| a == b).count();
            return vec![Edit {
                gap: at,
                old: old[at..old.len() - tail].to_vec(),
                new: new[at..new.len() - tail].to_vec(),
            }];
        }
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < old.len() {
            if old[i] == new[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < old.len() && old[i] != new[i] {
                i += 1;
            }
            match runs.last_mut() {
                Some(last) if start - last.1 < EDIT_MIN_GAP => last.1 = i,
                _ => runs.push((start, i)),
            }
        }
        let mut pos = 0;
        runs.into_iter()
            .map(|(a, b)| {
                let gap = a - pos;
                pos = b;
                Edit { gap, old: old[a..b].to_vec(), new: new[a..b].to_vec() }
            })
            .collect()
    }

    /// An old value and a new one that differs from it at a few places (runs of up to 12 bytes),
    /// or, one time in four, has another length.
    fn similar_values() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            prop::collection::vec(any::<u8>(), 0..400),
            prop::collection::vec((any::<prop::sample::Index>(), 1usize..12, any::<u8>()), 0..6),
            0u8..4,
            prop::collection::vec(any::<u8>(), 0..20),
        )
            .prop_map(|(old, changes, shape, extra)| {
                let mut new = old.clone();
                for (at, len, b) in changes {
                    if new.is_empty() {
                        break;
                    }
                    let at = at.index(new.len());
                    let end = (at + len).min(new.len());
                    new[at..end].iter_mut().for_each(|x| *x ^= b | 1);
                }
                if shape == 0 {
                    let at = new.len() / 2;
                    new.splice(at..at, extra);
                }
                (old, new)
            })
    }

    proptest! {
        /// The word-skipping edit search finds the edits the byte-by-byte one does.
        #[test]
        fn spans_find_the_edits_a_byte_by_byte_search_finds((old, new) in similar_values()) {
            prop_assert_eq!(diff(&old, &new), diff_oracle(&old, &new));
        }

        /// The logged write path's borrowed leaf record encodes to the bytes of the owned record
        /// restart decodes: every change form, patches or not, CLRs and overflow pages.
        #[test]
        fn a_borrowed_leaf_record_encodes_as_the_owned_one(
            (old, new) in similar_values(),
            key in bytes(),
            form in 0u8..3,
            inline in any::<bool>(),
            txn in any::<u64>(),
            prev in any::<u64>(),
            undo_next in prop::option::of(any::<u64>()),
            (tree, page) in (1u64..1 << 40, 1u64..1 << 40),
            chain in prop::collection::vec((1u64..1 << 40).prop_map(pid), 0..3),
            freed in prop::collection::vec((1u64..1 << 40).prop_map(pid), 0..3),
            commits in any::<bool>(),
        ) {
            let commits = commits && undo_next.is_none();
            let change = match form {
                0 => LeafChange::Insert { key: &key, value: &new },
                1 => LeafChange::Update { key: &key, old: &old, new: &new },
                _ => LeafChange::Delete { key: &key, old: &old },
            };
            let (txn, prev, undo_next, tree, page) = (TxnId(txn), Lsn(prev), undo_next.map(Lsn), pid(tree), pid(page));
            let owned = Record::Leaf {
                txn,
                prev,
                undo_next,
                tree,
                page,
                change: Change::logged(&change, inline),
                base: None,
                chain: chain.clone(),
                freed: freed.clone(),
                commits,
            };
            let head = LeafHead { txn, prev, undo_next, tree, page, chain: &chain, freed: &freed, commits };
            let borrowed = LeafRecord { head, change, inline };
            // Appended after what the buffer held, as the logged path appends it after the
            // log's room.
            let mut want = vec![7; 3];
            want.extend_from_slice(&owned.encode());
            prop_assert_eq!(borrowed.encode_into(vec![7; 3]), want);
        }
    }

    /// A typical row update (two fields at the two ends of a 300-byte row) logs the fields.
    #[test]
    fn a_field_update_logs_the_field() {
        let old = vec![b'a'; 300];
        let mut new = old.clone();
        new[0..4].copy_from_slice(b"0042");
        new[280..288].copy_from_slice(b"12345678");
        let record = Record::Leaf {
            txn: TxnId(9),
            prev: Lsn(1000),
            undo_next: None,
            tree: pid(3),
            page: pid(77),
            change: Change::logged(&LeafChange::Update { key: b"customer:0001", old: &old, new: &new }, true),
            base: None,
            chain: vec![],
            freed: vec![],
            commits: false,
        };
        let bytes = record.encode();
        // The 12 changed bytes twice (old and new), the 13-byte key, and the record's header.
        assert!(bytes.len() <= 2 * 12 + 13 + 20, "{} bytes", bytes.len());
        assert_eq!(Record::decode(&bytes).unwrap(), record);
    }
}
