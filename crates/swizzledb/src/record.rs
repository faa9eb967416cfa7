//! Log records: what the engine writes to the log manager, as opaque bodies (record kinds in
//! RECOVERY.md "Vocabulary", what restart does with each in its rules R8–R10). Every integer is
//! little endian; byte strings carry a u32 length. The first byte of a body is its
//! [`RecordKind`]:
//!
//! | kind | fields |
//! |---|---|
//! | 1 `Begin` | txn |
//! | 2 `Leaf` | txn, prev, undo_next (0 = not a CLR), tree, page, change, base image (optional) |
//! | 3 `Commit` / 4 `Abort` / 5 `End` | txn, prev |
//! | 6 `Structure` | images (page id, bytes), freed page ids |
//! | 7 `CreateTree` | name, root |
//! | 8 `CheckpointBegin` | — |
//! | 9 `CheckpointEnd` | begin LSN, dirty pages, transactions, page count, free pages, catalog |
//! | 10 `PageWrite` | page, page LSN, then (written by the decoupled cleaner only) the LSN below which the copy holds every change |
//!
//! A page image (structure images, base images) is stored without its longest run of zero
//! bytes — the engine zeroes a node's free gap first — as: length, run start, run length, the
//! bytes before and after the run.

use swizzledb_btree::LeafChange;
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

    /// The borrowed form the tree works with.
    #[must_use]
    pub fn borrow(&self) -> LeafChange<'_> {
        match self {
            Change::Insert { key, value } => LeafChange::Insert { key, value },
            Change::Update { key, old, new } => LeafChange::Update { key, old, new },
            Change::Delete { key, old } => LeafChange::Delete { key, old },
        }
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
}

/// A log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A transaction's first record (logged with its first change; read-only transactions log
    /// nothing).
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
    /// The transaction is finished (committed and released, or fully rolled back).
    End {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Lsn,
    },
    /// A structure change (a system transaction, never undone): page images and freed pages.
    Structure {
        /// Disk images of the pages written.
        images: Vec<(PageId, Vec<u8>)>,
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
    /// A checkpoint began.
    CheckpointBegin,
    /// A checkpoint's contents.
    CheckpointEnd(Box<Checkpoint>),
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

/// A body that is not a record of this format version.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
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
}

impl RecordKind {
    /// Every kind, in byte order.
    pub const ALL: [RecordKind; 10] = [
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
    ];
}

impl From<RecordKind> for u8 {
    fn from(kind: RecordKind) -> u8 {
        kind as u8
    }
}

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
    /// RECOVERY.md R17): a leaf change's leaf; a structure change's pages and freed pages.
    #[must_use]
    pub fn pages_changed(&self) -> Vec<PageId> {
        match self {
            Record::Leaf { page, .. } => vec![*page],
            Record::Structure { images, freed } => {
                images.iter().map(|(p, _)| *p).chain(freed.iter().copied()).collect()
            }
            Record::Begin { .. }
            | Record::Commit { .. }
            | Record::Abort { .. }
            | Record::End { .. }
            | Record::CreateTree { .. }
            | Record::CheckpointBegin
            | Record::CheckpointEnd(_)
            | Record::PageWrite { .. } => Vec::new(),
        }
    }

    /// [`Record::pages_changed`] of an encoded record, read without decoding the rest (no
    /// keys, values or images are copied): what the log archiver needs of every record.
    ///
    /// # Errors
    /// [`Malformed`] if the body is not a record of this format version.
    pub fn pages_in(body: &[u8]) -> Result<Vec<PageId>, Malformed> {
        let mut r = Reader(body);
        let page = |v: u64| PageId::new(v).ok_or(Malformed("page id"));
        match RecordKind::try_from(r.u8()?)? {
            RecordKind::Leaf => {
                r.take(16)?; // txn, prev
                if r.u8()? != 0 {
                    r.take(8)?; // undo_next
                }
                r.take(8)?; // tree
                Ok(vec![page(r.u64()?)?])
            }
            RecordKind::Structure => {
                let n = r.count(8)?;
                let mut pages = Vec::with_capacity(n + 1);
                for _ in 0..n {
                    pages.push(page(r.u64()?)?);
                    let (len, _start, zeros) = (r.u32()?, r.u32()?, r.u32()?);
                    r.take(len.checked_sub(zeros).ok_or(Malformed("zero run beyond the image"))?)?;
                }
                let freed = r.count(8)?;
                for _ in 0..freed {
                    pages.push(page(r.u64()?)?);
                }
                Ok(pages)
            }
            RecordKind::Begin
            | RecordKind::Commit
            | RecordKind::Abort
            | RecordKind::End
            | RecordKind::CreateTree
            | RecordKind::CheckpointBegin
            | RecordKind::CheckpointEnd
            | RecordKind::PageWrite => Ok(Vec::new()),
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
            Record::CheckpointBegin => RecordKind::CheckpointBegin,
            Record::CheckpointEnd(_) => RecordKind::CheckpointEnd,
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
            | Record::CheckpointBegin
            | Record::CheckpointEnd(_)
            | Record::PageWrite { .. } => None,
        }
    }

    /// Encodes the record as a log body.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64));
        w.u8(self.kind().into());
        match self {
            Record::Begin { txn } => w.u64(txn.0),
            Record::Leaf { txn, prev, undo_next, tree, page, change, base } => {
                w.u64(txn.0);
                w.u64(prev.0);
                match undo_next {
                    None => w.u8(0),
                    Some(l) => {
                        w.u8(1);
                        w.u64(l.0);
                    }
                }
                w.u64(tree.get());
                w.u64(page.get());
                match change {
                    Change::Insert { key, value } => {
                        w.u8(1);
                        w.bytes(key);
                        w.bytes(value);
                    }
                    Change::Update { key, old, new } => {
                        w.u8(2);
                        w.bytes(key);
                        w.bytes(old);
                        w.bytes(new);
                    }
                    Change::Delete { key, old } => {
                        w.u8(3);
                        w.bytes(key);
                        w.bytes(old);
                    }
                }
                match base {
                    None => w.u8(0),
                    Some(b) => {
                        w.u8(1);
                        w.image(b);
                    }
                }
            }
            Record::Commit { txn, prev } | Record::Abort { txn, prev } | Record::End { txn, prev } => {
                w.u64(txn.0);
                w.u64(prev.0);
            }
            Record::Structure { images, freed } => {
                w.u32(images.len());
                for (page, image) in images {
                    w.u64(page.get());
                    w.image(image);
                }
                w.pages(freed);
            }
            Record::CreateTree { name, root } => {
                w.bytes(name.as_bytes());
                w.u64(root.get());
            }
            Record::CheckpointBegin => {}
            Record::CheckpointEnd(c) => {
                w.u64(c.begin.0);
                w.u32(c.dirty.len());
                for (page, rec) in &c.dirty {
                    w.u64(page.get());
                    w.u64(rec.0);
                }
                w.u32(c.txns.len());
                for t in &c.txns {
                    w.u64(t.txn.0);
                    w.u8(match t.state {
                        TxnState::Active => 0,
                        TxnState::Committed => 1,
                        TxnState::Aborting => 2,
                    });
                    w.u64(t.last_lsn.0);
                    w.u64(t.undo_next.0);
                }
                w.u64(c.page_count);
                w.pages(&c.free);
                w.u32(c.catalog.len());
                for (name, root) in &c.catalog {
                    w.bytes(name.as_bytes());
                    w.u64(root.get());
                }
            }
            Record::PageWrite { page, page_lsn, decoupled } => {
                w.u64(page.get());
                w.u64(page_lsn.0);
                if let Some(l) = decoupled {
                    w.u64(l.0);
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
        let record = match RecordKind::try_from(r.u8()?)? {
            RecordKind::Begin => Record::Begin { txn: TxnId(r.u64()?) },
            RecordKind::Leaf => {
                let txn = TxnId(r.u64()?);
                let prev = Lsn(r.u64()?);
                let undo_next = match r.u8()? {
                    0 => None,
                    1 => Some(Lsn(r.u64()?)),
                    _ => return Err(Malformed("CLR flag")),
                };
                let tree = r.page()?;
                let page = r.page()?;
                let change = match r.u8()? {
                    1 => Change::Insert { key: r.bytes()?, value: r.bytes()? },
                    2 => Change::Update { key: r.bytes()?, old: r.bytes()?, new: r.bytes()? },
                    3 => Change::Delete { key: r.bytes()?, old: r.bytes()? },
                    _ => return Err(Malformed("leaf change kind")),
                };
                let base = match r.u8()? {
                    0 => None,
                    1 => Some(r.image()?),
                    _ => return Err(Malformed("base image flag")),
                };
                Record::Leaf { txn, prev, undo_next, tree, page, change, base }
            }
            RecordKind::Commit => {
                let (txn, prev) = (TxnId(r.u64()?), Lsn(r.u64()?));
                Record::Commit { txn, prev }
            }
            RecordKind::Abort => {
                let (txn, prev) = (TxnId(r.u64()?), Lsn(r.u64()?));
                Record::Abort { txn, prev }
            }
            RecordKind::End => {
                let (txn, prev) = (TxnId(r.u64()?), Lsn(r.u64()?));
                Record::End { txn, prev }
            }
            RecordKind::Structure => {
                let n = r.count(8)?;
                let mut images = Vec::with_capacity(n);
                for _ in 0..n {
                    images.push((r.page()?, r.image()?));
                }
                Record::Structure { images, freed: r.pages()? }
            }
            RecordKind::CreateTree => Record::CreateTree { name: r.string()?, root: r.page()? },
            RecordKind::CheckpointBegin => Record::CheckpointBegin,
            RecordKind::CheckpointEnd => {
                let begin = Lsn(r.u64()?);
                let n = r.count(16)?;
                let mut dirty = Vec::with_capacity(n);
                for _ in 0..n {
                    dirty.push((r.page()?, Lsn(r.u64()?)));
                }
                let n = r.count(25)?;
                let mut txns = Vec::with_capacity(n);
                for _ in 0..n {
                    let txn = TxnId(r.u64()?);
                    let state = match r.u8()? {
                        0 => TxnState::Active,
                        1 => TxnState::Committed,
                        2 => TxnState::Aborting,
                        _ => return Err(Malformed("transaction state")),
                    };
                    txns.push(TxnEntry { txn, state, last_lsn: Lsn(r.u64()?), undo_next: Lsn(r.u64()?) });
                }
                let page_count = r.u64()?;
                let free = r.pages()?;
                let n = r.count(12)?;
                let mut catalog = Vec::with_capacity(n);
                for _ in 0..n {
                    catalog.push((r.string()?, r.page()?));
                }
                Record::CheckpointEnd(Box::new(Checkpoint { begin, dirty, txns, page_count, free, catalog }))
            }
            RecordKind::PageWrite => {
                let (page, page_lsn) = (r.page()?, Lsn(r.u64()?));
                let decoupled = if r.0.is_empty() { None } else { Some(Lsn(r.u64()?)) };
                Record::PageWrite { page, page_lsn, decoupled }
            }
        };
        if !r.0.is_empty() {
            return Err(Malformed("trailing bytes"));
        }
        Ok(record)
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    fn u32(&mut self, v: usize) {
        let v = u32::try_from(v).expect("a log record field under 4 GiB");
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len());
        self.0.extend_from_slice(b);
    }

    /// A page image without its longest run of zero bytes: length, where the run starts, how
    /// long it is, then the bytes before and after it.
    fn image(&mut self, image: &[u8]) {
        let (start, len) = longest_zero_run(image);
        self.u32(image.len());
        self.u32(start);
        self.u32(len);
        self.0.extend_from_slice(&image[..start]);
        self.0.extend_from_slice(&image[start + len..]);
    }

    fn pages(&mut self, pages: &[PageId]) {
        self.u32(pages.len());
        for p in pages {
            self.u64(p.get());
        }
    }
}

/// Where the longest run of zero bytes starts and how long it is (the first of equal runs).
fn longest_zero_run(bytes: &[u8]) -> (usize, usize) {
    let (mut best, mut run_start, mut run) = ((0, 0), 0, 0);
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

    fn u32(&mut self) -> Result<usize, Malformed> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    /// A count of items of at least `min_size` bytes each, checked against what is left, so a
    /// corrupted count cannot make the decoder allocate without bound.
    fn count(&mut self, min_size: usize) -> Result<usize, Malformed> {
        let n = self.u32()?;
        if n.saturating_mul(min_size) > self.0.len() {
            return Err(Malformed("count beyond the record"));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, Malformed> {
        let n = self.u32()?;
        Ok(self.take(n)?.to_vec())
    }

    fn image(&mut self) -> Result<Vec<u8>, Malformed> {
        let (len, start, zeros) = (self.u32()?, self.u32()?, self.u32()?);
        if len > swizzledb_buffer::page::MAX_PAGE_SIZE {
            return Err(Malformed("an image larger than any page"));
        }
        let end =
            start.checked_add(zeros).filter(|&e| e <= len).ok_or(Malformed("zero run beyond the image"))?;
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
        PageId::new(self.u64()?).ok_or(Malformed("page id out of range"))
    }

    fn pages(&mut self) -> Result<Vec<PageId>, Malformed> {
        let n = self.count(8)?;
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
        )
            .prop_map(|(begin, dirty, txns, page_count, free, catalog)| {
                Record::CheckpointEnd(Box::new(Checkpoint { begin, dirty, txns, page_count, free, catalog }))
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
                prop::option::of(bytes())
            )
                .prop_map(|(txn, prev, undo_next, tree, page, change, base)| Record::Leaf {
                    txn,
                    prev,
                    undo_next,
                    tree,
                    page,
                    change,
                    base
                }),
            (txn.clone(), lsn.clone()).prop_map(|(txn, prev)| Record::Commit { txn, prev }),
            (txn.clone(), lsn.clone()).prop_map(|(txn, prev)| Record::Abort { txn, prev }),
            (txn, lsn.clone()).prop_map(|(txn, prev)| Record::End { txn, prev }),
            (prop::collection::vec((page.clone(), bytes()), 0..4), prop::collection::vec(page.clone(), 0..4))
                .prop_map(|(images, freed)| Record::Structure { images, freed }),
            ("[a-z]{1,12}", page.clone()).prop_map(|(name, root)| Record::CreateTree { name, root }),
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

    /// Images leave out their longest zero run and come back byte for byte.
    #[test]
    fn images_elide_their_longest_zero_run() {
        let mut image = vec![7u8; 4096];
        image[100..3000].fill(0);
        image[3100..3200].fill(0);
        assert_eq!(longest_zero_run(&image), (100, 2900));
        let rec = Record::Structure { images: vec![(pid(3), image)], freed: vec![] };
        let body = rec.encode();
        assert!(body.len() < 4096 - 2900 + 64, "{} bytes", body.len());
        assert_eq!(Record::decode(&body), Ok(rec));
        assert_eq!(longest_zero_run(&[1, 2]), (0, 0));
    }

    /// Every kind round-trips through its byte; every other byte is a typed error, which a
    /// decoder reports as a malformed record.
    #[test]
    fn record_kinds_round_trip_through_their_byte() {
        for kind in RecordKind::ALL {
            assert_eq!(RecordKind::try_from(u8::from(kind)), Ok(kind));
        }
        let bytes: Vec<u8> = RecordKind::ALL.iter().map(|&k| u8::from(k)).collect();
        assert_eq!(bytes, (1..=10).collect::<Vec<u8>>(), "kinds are numbered 1.. in table order");
        for byte in (0..=u8::MAX).filter(|b| !bytes.contains(b)) {
            assert_eq!(RecordKind::try_from(byte), Err(UnknownRecordKind(byte)));
            assert_eq!(Record::decode(&[byte]), Err(Malformed("record kind")));
        }
    }

    #[test]
    fn change_borrow_round_trips() {
        let c = Change::Update { key: b"k".to_vec(), old: b"o".to_vec(), new: b"n".to_vec() };
        assert_eq!(Change::of(&c.borrow()), c);
        assert_eq!(Record::decode(&[200]), Err(Malformed("record kind")));
    }
}
