//! Restart (RECOVERY.md R8–R10): analysis from the last complete checkpoint and redo of the
//! page changes since, on the page file directly, before the buffer pool opens. Undo of the
//! losers runs afterwards through the trees (`Database::open`), writing compensation records.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use swizzledb_buffer::page;
use swizzledb_buffer::{Allocation, DoubleWrite, PageFile, PageId};
use swizzledb_sync::{Lsn, TxnId};
use swizzledb_wal::{Archive, LogError, LogManager};

use crate::error::{Error, Result};
use crate::record::{AnalysisView, Checkpoint, Malformed, NodeLog, Record, RecordKind, TxnEntry, TxnState};
use crate::redo::{check_image, corrupted, redo_on_page, RedoTarget};

/// What analysis and redo found, for undo and the pool.
#[derive(Debug)]
pub(crate) struct Recovered {
    /// Page count, free pages and catalog after redo.
    pub(crate) allocation: Allocation,
    /// Transactions without an end record: undone (or, if committed, ended) by the caller.
    pub(crate) unfinished: Vec<TxnEntry>,
    /// One above the largest transaction number seen.
    pub(crate) next_txn: u64,
    /// Counters, for the restart benchmark.
    pub(crate) stats: RestartStats,
    /// R22: the analysis state at the end of the log, for the archiver to continue from.
    pub(crate) state: ArchivedState,
}

/// What a restart did.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartStats {
    /// Records read by analysis.
    pub analyzed: u64,
    /// Records redo applied to a page.
    pub redone: u64,
    /// Pages written back after redo.
    pub pages_written: u64,
    /// Transactions rolled back.
    pub losers: u64,
    /// Compensation records written while rolling them back. After an instant restart the
    /// losers are rolled back in the background, and this count grows as they are
    /// ([`crate::RedoProgress::losers`] says how many are left).
    pub compensations: u64,
    /// Pages redo found damaged in the file and rebuilt by single-page recovery (R18).
    pub pages_repaired: u64,
    /// Pages whose copy in the file failed its checksum (a write torn by the crash), put back
    /// from the double-write area with the log's later changes before anything read them
    /// (RECOVERY.md R3, buffer README F15).
    pub torn_pages_restored: u64,
    /// Whether the restart was instant (R22): analysis read the archive (`analyzed` counts
    /// the records of the log's unarchived tail), and redo was left to the pages' first fetch
    /// and the background ([`crate::Database::redo_progress`]).
    pub instant: bool,
    /// Pages an instant restart left to redo.
    pub pages_deferred: u64,
    /// Bytes the log's open cut as a torn tail: the unsynced end a crash leaves (wal README
    /// W7, RECOVERY.md R24); in a reused segment file, its old bytes beyond the end count too
    /// (wal W15). 0 after a clean close.
    pub log_torn_bytes: u64,
    /// With [`crate::LogRecovery::PointInTime`]: the LSN of the damaged durable frame the log
    /// was cut at (wal README W8, R24); every record from it on was dropped. `None` when the
    /// log was not damaged below a durable point.
    pub log_cut_at_damage: Option<u64>,
    /// The durable LSN a sync marker beyond the damage proved: acknowledged commits below it
    /// and at or above `log_cut_at_damage` were lost. 0 without a cut.
    pub log_lost_durable_to: u64,
    /// Valid log records found beyond the damage and dropped by the cut (a lower bound).
    pub log_records_dropped: u64,
    /// Log bytes from the damaged frame to the end of the last valid frame beyond it, dropped.
    pub log_bytes_dropped: u64,
    /// Pages redo rebuilt from a split's source (a split-off, RECOVERY.md R29), whose images
    /// restart logged before it wrote any page.
    pub derived_pages_imaged: u64,
}

impl RestartStats {
    /// Takes what the log's open cut (R24).
    pub(crate) fn note_log_open(&mut self, opened: &swizzledb_wal::OpenReport) {
        self.log_torn_bytes = opened.torn_bytes;
        if let Some(d) = &opened.damage {
            self.log_cut_at_damage = Some(d.lsn.0);
            self.log_lost_durable_to = d.durable.0;
            self.log_records_dropped = d.records_beyond;
            self.log_bytes_dropped = d.bytes_beyond;
            log::warn!(
                "point-in-time recovery cut the log at damaged durable frame {} ({}): {} records, {} bytes \
                 dropped, commits up to {} lost",
                d.lsn,
                d.reason,
                d.records_beyond,
                d.bytes_beyond,
                d.durable
            );
        }
    }
}

/// The end record of the last checkpoint: the one the master record names (wal README W10),
/// or, without a master record, the last checkpoint end record in the log. A clean close
/// removes the master record (R25), leaving one segment that holds the checkpoint; a crash
/// between a checkpoint's end record and its master record leaves a complete checkpoint,
/// as good a start as the older one the master would name. `None`: the log holds none.
pub(crate) fn last_checkpoint_end(log: &LogManager) -> Result<Option<Lsn>> {
    if let Some(end) = log.read_master()? {
        return Ok(Some(end));
    }
    let mut last = None;
    for item in log.scan(log.oldest())? {
        let (lsn, body) = item?;
        if matches!(Record::decode(&body), Ok(Record::CheckpointEnd(_))) {
            last = Some(lsn);
        }
    }
    Ok(last)
}

/// The checkpoint restart starts from: the last one ([`last_checkpoint_end`]), or (none: a
/// crash before the first checkpoint completed) the state page 0 describes and the whole log.
fn last_checkpoint(log: &LogManager, meta: &swizzledb_buffer::Meta) -> Result<Checkpoint> {
    match last_checkpoint_end(log)? {
        Some(end) => read_checkpoint(log, end),
        None => Ok(Checkpoint {
            begin: Lsn(0),
            page_count: meta.page_count,
            catalog: meta.trees.clone().into_iter().collect(),
            ..Checkpoint::default()
        }),
    }
}

/// The checkpoint whose end record is at `end`, whole: a checkpoint in parts (R7) has them
/// gathered from the log between its begin and end records (the returned one counts none).
pub(crate) fn read_checkpoint(log: &LogManager, end: Lsn) -> Result<Checkpoint> {
    let body = log.read(end).map_err(|e| corrupted(end, format!("the last checkpoint: {e}")))?;
    let mut c = match Record::decode(&body) {
        Ok(Record::CheckpointEnd(c)) => *c,
        Ok(other) => {
            return Err(corrupted(end, format!("the master names a {other:?}, not a checkpoint end")))
        }
        Err(e) => return Err(corrupted(end, e.to_string())),
    };
    if c.parts == 0 {
        return Ok(c);
    }
    let mut found = 0;
    for item in log.scan(c.begin).map_err(|e| corrupted(c.begin, format!("the checkpoint's parts: {e}")))? {
        let (lsn, body) = item.map_err(|e| corrupted(c.begin, format!("the checkpoint's parts: {e}")))?;
        if lsn >= end {
            break;
        }
        if body.first() != Some(&u8::from(RecordKind::CheckpointPart)) {
            continue;
        }
        match Record::decode(&body) {
            Ok(Record::CheckpointPart(part)) if part.begin == c.begin => {
                let part = *part;
                c.dirty.extend(part.dirty);
                c.txns.extend(part.txns);
                c.free.extend(part.free);
                c.catalog.extend(part.catalog);
                found += 1;
            }
            Ok(_) => {}
            Err(e) => return Err(corrupted(lsn, e.to_string())),
        }
    }
    if found != c.parts {
        return Err(corrupted(
            end,
            format!("the checkpoint counts {} parts, the log holds {found}", c.parts),
        ));
    }
    c.parts = 0;
    Ok(c)
}

/// Analysis state (RECOVERY.md R8), also the decoupled checkpoint's (R19) and the archiver's
/// (R22).
#[derive(Clone)]
pub(crate) struct Analysis {
    dirty: HashMap<PageId, Lsn>,
    last_image: HashMap<PageId, Lsn>,
    txns: BTreeMap<TxnId, TxnEntry>,
    page_count: u64,
    free: BTreeSet<PageId>,
    catalog: BTreeMap<String, PageId>,
    max_txn: u64,
    /// R19: page-write records remove their page from the dirty page table (only when the
    /// data file is synced after the scan; restart's analysis does not trust them, R8).
    trust_page_writes: bool,
    /// The first record of each transaction the scan saw begin (R19's truncation bound).
    first: HashMap<TxnId, Lsn>,
    /// R19: the changes of each page the scan saw, in LSN order (only when page writes are
    /// trusted), and where the scan began.
    changes: HashMap<PageId, Vec<Lsn>>,
    scan_from: Lsn,
    /// R22: the archiver's analysis tracks no pages (no dirty page table, no images): only the
    /// transaction table and the allocation, which instant restart reads from the archive.
    track_pages: bool,
    /// R10: the first record that named a page no database could have reached then
    /// ([`implausible_page`]); restart refuses the log there.
    implausible: Option<(Lsn, String)>,
}

/// R10: how far beyond the pages allocated so far a record may name a page. Pages are
/// allocated one at a time, in order, and a page's allocation is logged with the change that
/// made it (R3), so the log can name pages out of order only by the allocations of changes
/// still running at once: a few pages each, a value's overflow chain at most
/// ([`swizzledb_btree::MAX_VALUE_LEN`]: about a thousand pages). 2^18 covers hundreds of
/// threads writing the longest values at once.
pub(crate) const PAGE_SLACK: u64 = 1 << 18;

/// R10: restart refuses a log or an archived state that names a transaction number at or
/// beyond this less one: no engine gives one.
const MAX_TXN: u64 = 1 << 62;

/// R10: the transaction number after `max_txn`, the largest a log or an archived state names;
/// the reason it cannot be one an engine wrote if it is beyond any this engine gives.
pub(crate) fn next_txn(max_txn: u64) -> std::result::Result<u64, String> {
    max_txn
        .checked_add(1)
        .filter(|&n| n < MAX_TXN)
        .ok_or_else(|| format!("transaction number {max_txn} is beyond any this engine gives"))
}

/// R10: why the checkpoint `c` cannot be one an engine wrote for a file whose page 0 and
/// length say `known_pages` pages: more pages than that by far, or a page of its tables at or
/// beyond that count, or page 0 among them ([`implausible_page`]), or a catalog that gives two
/// trees one root or lists a root free (buffer F16).
pub(crate) fn implausible_checkpoint(c: &Checkpoint, known_pages: u64) -> Option<String> {
    if c.page_count >= known_pages.saturating_add(PAGE_SLACK) {
        return Some(format!(
            "the checkpoint counts {} pages, and the file holds {known_pages}: no change reaches that far",
            c.page_count
        ));
    }
    let free: std::collections::HashSet<PageId> = c.free.iter().copied().collect();
    let catalog = c.catalog.iter().map(|(name, root)| (name.as_str(), *root));
    if let Err((root, why)) = swizzledb_buffer::Meta::check_roots(catalog, |p| free.contains(&p)) {
        return Some(format!("page {root}: {why} (in the checkpoint)"));
    }
    let pages = c.dirty.iter().map(|(p, _)| *p).chain(c.free.iter().copied());
    pages
        .chain(c.catalog.iter().map(|(_, root)| *root))
        .find_map(|p| {
            if p.get() >= c.page_count {
                Some(format!("the checkpoint lists page {p}, beyond its own {} pages", c.page_count))
            } else {
                implausible_page(p, c.page_count)
            }
        })
        .map(|why| format!("{why} (in the checkpoint)"))
}

/// R10: why a record that changes, writes or allocates `page` cannot be one an engine wrote,
/// with `page_count` pages allocated as far as the log has been read: page 0 (the file's
/// metadata, never logged), or a page far beyond the allocated ones (which restart would
/// otherwise grow the file to).
pub(crate) fn implausible_page(page: PageId, page_count: u64) -> Option<String> {
    if page == PageId::META {
        Some("a record changes page 0, the file's metadata, which no record changes".into())
    } else if page.get() >= page_count.saturating_add(PAGE_SLACK) {
        Some(format!(
            "a record names page {page}, {} pages beyond the {page_count} allocated so far: no change reaches that far",
            page.get() - page_count
        ))
    } else {
        None
    }
}

/// R22: the analysis state the archiver stores with each run, as of the run's end: the
/// transaction table, the allocation and the catalog (a checkpoint without dirty pages, whose
/// `begin` is the run's end), and the largest transaction number seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ArchivedState {
    pub(crate) max_txn: u64,
    pub(crate) tables: Checkpoint,
}

impl ArchivedState {
    /// R10: the transaction number after every one the state names ([`next_txn`]).
    pub(crate) fn next_txn(&self) -> std::result::Result<u64, String> {
        next_txn(self.tables.txns.iter().map(|t| t.txn.0).fold(self.max_txn, u64::max))
    }

    /// The LSN the state is as of (the end of the records analyzed).
    pub(crate) fn at(&self) -> Lsn {
        self.tables.begin
    }

    /// The bytes stored in the run: the largest transaction number (u64 LE), then the tables as
    /// a checkpoint-end record body.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = self.max_txn.to_le_bytes().to_vec();
        out.extend_from_slice(&Record::CheckpointEnd(Box::new(self.tables.clone())).encode());
        out
    }

    /// The state stored with the run ending at `at`.
    ///
    /// # Errors
    /// The bytes are not a state of this format version.
    pub(crate) fn decode(at: Lsn, bytes: &[u8]) -> std::result::Result<ArchivedState, String> {
        let (max, body) = bytes.split_first_chunk::<8>().ok_or("shorter than its header")?;
        match Record::decode(body).map_err(|e| e.to_string())? {
            Record::CheckpointEnd(c) if c.dirty.is_empty() && c.begin == at => {
                Ok(ArchivedState { max_txn: u64::from_le_bytes(*max), tables: *c })
            }
            other => Err(format!("not an analysis state as of {at}: {other:?}")),
        }
    }
}

impl Analysis {
    /// R19: the analysis a decoupled checkpoint runs: page-write records are trusted.
    pub(crate) fn for_checkpoint(c: &Checkpoint) -> Analysis {
        Analysis { trust_page_writes: true, scan_from: c.begin, ..Analysis::from_checkpoint(c) }
    }

    /// The checkpoint of the state analyzed, as of the begin record `begin`, and the oldest LSN
    /// restart could need from it (R19): the smallest recovery LSN, the first record of every
    /// transaction still running, and `unknown_first` for a running transaction whose first
    /// record the scan did not see.
    pub(crate) fn into_checkpoint(self, begin: Lsn, unknown_first: Lsn) -> (Checkpoint, Lsn) {
        let mut keep = begin;
        for &rec in self.dirty.values() {
            keep = keep.min(rec);
        }
        for t in self.txns.keys() {
            keep = keep.min(self.first.get(t).copied().unwrap_or(unknown_first));
        }
        let mut dirty: Vec<(PageId, Lsn)> = self.dirty.into_iter().collect();
        dirty.sort_unstable();
        let checkpoint = Checkpoint {
            begin,
            dirty,
            txns: self.txns.into_values().collect(),
            page_count: self.page_count,
            free: self.free.into_iter().collect(),
            catalog: self.catalog.into_iter().collect(),
            parts: 0,
        };
        (checkpoint, keep)
    }

    /// R22: the archiver's analysis, continuing from `state`: transactions and allocation
    /// only.
    pub(crate) fn for_archiver(state: &ArchivedState) -> Analysis {
        let mut a = Analysis { track_pages: false, ..Analysis::from_checkpoint(&state.tables) };
        a.max_txn = a.max_txn.max(state.max_txn);
        a
    }

    /// R22: the state analyzed, as of `at` (the end of the records seen).
    pub(crate) fn archived_state(&self, at: Lsn) -> ArchivedState {
        ArchivedState {
            max_txn: self.max_txn,
            tables: Checkpoint {
                begin: at,
                dirty: Vec::new(),
                txns: self.txns.values().cloned().collect(),
                page_count: self.page_count,
                free: self.free.iter().copied().collect(),
                catalog: self.catalog.iter().map(|(n, p)| (n.clone(), *p)).collect(),
                parts: 0,
            },
        }
    }

    fn from_checkpoint(c: &Checkpoint) -> Analysis {
        Analysis {
            track_pages: true,
            trust_page_writes: false,
            first: HashMap::new(),
            changes: HashMap::new(),
            scan_from: c.begin,
            dirty: c.dirty.iter().copied().collect(),
            last_image: HashMap::new(),
            txns: c.txns.iter().map(|t| (t.txn, t.clone())).collect(),
            page_count: c.page_count,
            free: c.free.iter().copied().collect(),
            catalog: c.catalog.iter().cloned().collect(),
            max_txn: c.txns.iter().map(|t| t.txn.0).max().unwrap_or(0),
            implausible: None,
        }
    }

    /// R10: notes the first record that names an implausible page ([`implausible_page`]).
    fn check_page(&mut self, page: PageId, lsn: Lsn) {
        if let Some(why) = implausible_page(page, self.page_count) {
            self.note_implausible(lsn, why);
        }
    }

    /// R10: keeps the first reason a record cannot be one an engine wrote.
    fn note_implausible(&mut self, lsn: Lsn, why: String) {
        self.implausible.get_or_insert((lsn, why));
    }

    /// R10: the first record that named a page no engine could have reached, and why.
    pub(crate) fn implausible(&self) -> Option<&(Lsn, String)> {
        self.implausible.as_ref()
    }

    fn touched(&mut self, page: PageId, lsn: Lsn) {
        if !self.track_pages {
            return;
        }
        self.dirty.entry(page).or_insert(lsn);
        if self.trust_page_writes {
            self.changes.entry(page).or_default().push(lsn);
        }
    }

    /// R19: page `page` reached the file carrying `page_lsn`. Written by the pool
    /// (`decoupled` is `None`), the record follows every change in the copy and precedes every
    /// later one (the write held the page's latch until it was appended, buffer B20): the page
    /// leaves the table unless its recovery LSN is later. Written by the decoupled cleaner
    /// (R20) with every change below `Some(l)`, later changes may precede the record: the
    /// recovery LSN becomes the page's first change at or after `l` — known only if `l` lies
    /// within the scan, which sees every change from `scan_from` on.
    fn page_written(&mut self, page: PageId, page_lsn: Lsn, decoupled: Option<Lsn>) {
        let Some(&rec) = self.dirty.get(&page) else { return };
        let Some(complete) = decoupled else {
            if rec <= page_lsn {
                self.dirty.remove(&page);
                self.changes.remove(&page);
            }
            return;
        };
        if complete < self.scan_from || rec >= complete {
            return;
        }
        let changes = self.changes.entry(page).or_default();
        changes.retain(|&l| l >= complete);
        match changes.first() {
            Some(&next) => {
                self.dirty.insert(page, next);
            }
            None => {
                self.dirty.remove(&page);
                self.changes.remove(&page);
            }
        }
    }

    fn allocated(&mut self, page: PageId, lsn: Lsn) {
        self.check_page(page, lsn);
        self.free.remove(&page);
        self.page_count = self.page_count.max(page.get() + 1);
    }

    /// A transaction's record at `lsn`: its entry's links move forward (a checkpoint may have
    /// seen a newer state of it than an older record in the scan).
    fn txn_record(&mut self, txn: TxnId, lsn: Lsn, undo_next: Option<Lsn>) -> &mut TxnEntry {
        self.max_txn = self.max_txn.max(txn.0);
        let entry = self.txns.entry(txn).or_insert(TxnEntry {
            txn,
            state: TxnState::Active,
            last_lsn: Lsn(0),
            undo_next: Lsn(0),
        });
        if lsn > entry.last_lsn {
            entry.last_lsn = lsn;
            if let Some(next) = undo_next {
                entry.undo_next = next;
            }
        }
        entry
    }

    /// [`Analysis::record`] of an encoded record, reading leaf and structure changes without
    /// copying their keys, values and images (`Record::analysis_view`): a decoupled checkpoint
    /// reads every record since the previous one (R19).
    ///
    /// # Errors
    /// The body is not a record of this format version.
    pub(crate) fn record_body(&mut self, lsn: Lsn, body: &[u8]) -> std::result::Result<(), Malformed> {
        match Record::analysis_view(body)? {
            Some(AnalysisView::Leaf { txn, prev, undo_next, page, base, chain, freed, commits }) => {
                self.leaf(lsn, txn, prev, undo_next, page, base);
                self.structure(lsn, chain.into_iter().map(|p| (p, true)), &freed);
                if commits {
                    self.committed(txn);
                }
            }
            Some(AnalysisView::Structure { pages, freed }) => self.structure(lsn, pages.into_iter(), &freed),
            None => self.record(lsn, &Record::decode(body)?),
        }
        Ok(())
    }

    /// A leaf change (R8): its transaction moves forward (and begins here if the record has no
    /// previous one, R6), its page is touched, and a base image makes this the page's last image.
    fn leaf(&mut self, lsn: Lsn, txn: TxnId, prev: Lsn, undo_next: Option<Lsn>, page: PageId, base: bool) {
        self.txn_record(txn, lsn, Some(undo_next.unwrap_or(lsn)));
        self.check_page(page, lsn);
        if prev == Lsn(0) {
            self.first.entry(txn).or_insert(lsn);
        }
        self.touched(page, lsn);
        if base && self.track_pages {
            self.last_image.insert(page, lsn);
        }
    }

    /// A transaction committed (R8): by a `Commit` record, or by a leaf record that commits
    /// (R2). Its entry leaves the table.
    fn committed(&mut self, txn: TxnId) {
        self.max_txn = self.max_txn.max(txn.0);
        self.txns.remove(&txn);
        self.first.remove(&txn);
    }

    /// A structure change (R8): each page `(id, logged as an image)` is touched and allocated;
    /// freed pages return to the free set.
    fn structure(&mut self, lsn: Lsn, pages: impl Iterator<Item = (PageId, bool)>, freed: &[PageId]) {
        for (p, image) in pages {
            self.touched(p, lsn);
            // Only an image replaces the page; a logical change applies on top (R9).
            if image && self.track_pages {
                self.last_image.insert(p, lsn);
            }
            self.allocated(p, lsn);
        }
        for p in freed {
            self.check_page(*p, lsn);
            // Roots are never freed while their tree is in the catalog (buffer B5, R23).
            if let Some((name, _)) = self.catalog.iter().find(|(_, root)| *root == p) {
                let why =
                    format!("a record frees page {p}, the root of tree {name:?}, which no record dropped");
                self.note_implausible(lsn, why);
            }
            self.free.insert(*p);
            // R9, R19: a freed page's changes no longer matter (it comes back only with a new
            // image), and the pool no longer lists it as dirty: redo does not read it. Its copy
            // in the file may be stale or torn, and the log may no longer hold what it missed
            // (freeing drops its recovery LSN, buffer B19).
            self.dirty.remove(p);
            self.changes.remove(p);
        }
    }

    pub(crate) fn record(&mut self, lsn: Lsn, record: &Record) {
        match record {
            Record::Begin { txn } => {
                self.txn_record(*txn, lsn, None);
                self.first.entry(*txn).or_insert(lsn);
            }
            Record::Leaf { txn, prev, undo_next, page, base, chain, freed, commits, .. } => {
                self.leaf(lsn, *txn, *prev, *undo_next, *page, base.is_some());
                // T22: the new value's overflow pages are written whole, like new nodes.
                self.structure(lsn, chain.iter().map(|p| (*p, true)), freed);
                if *commits {
                    self.committed(*txn);
                }
            }
            // A commit ends its transaction (R2: no `End` follows it; logs written before
            // that have one, which then finds nothing to remove).
            Record::Commit { txn, .. } => self.committed(*txn),
            Record::Abort { txn, .. } => self.txn_record(*txn, lsn, None).state = TxnState::Aborting,
            Record::End { txn, .. } => {
                self.max_txn = self.max_txn.max(txn.0);
                self.txns.remove(txn);
                self.first.remove(txn);
            }
            Record::Structure { pages, freed } => {
                let pages = pages.iter().map(|(p, node)| (*p, node.replaces_page()));
                self.structure(lsn, pages, freed);
            }
            Record::CreateTree { name, root } => {
                if let Err(why) = swizzledb_buffer::validate_tree_name(name) {
                    self.note_implausible(
                        lsn,
                        format!("a record creates a tree whose name no engine takes: {why}"),
                    );
                }
                if let Some((other, _)) = self.catalog.iter().find(|(n, r)| *r == root && *n != name) {
                    let why = format!(
                        "a record creates tree {name:?} with root {root}, the root of tree {other:?}"
                    );
                    self.note_implausible(lsn, why);
                }
                self.catalog.insert(name.clone(), *root);
                self.allocated(*root, lsn);
            }
            // R23: the pages stay allocated until the structure records that free them.
            Record::DropTree { name, .. } => {
                self.catalog.remove(name);
            }
            // R19: trusted only by a decoupled checkpoint, which syncs the data file before it
            // ends; restart does not trust page writes: the data file is not synced when they
            // are logged (R8).
            Record::PageWrite { page, page_lsn, decoupled } if self.trust_page_writes => {
                self.page_written(*page, *page_lsn, *decoupled);
            }
            Record::PageWrite { .. } => {}
            Record::CheckpointBegin | Record::CheckpointEnd(_) | Record::CheckpointPart(_) => {}
        }
    }

    /// Whether redo must apply the record at `lsn` to `page` (R9): the page is dirty from
    /// `rec_lsn` on, and no later image replaces the page anyway.
    fn wants(&self, page: PageId, lsn: Lsn) -> bool {
        self.dirty.get(&page).is_some_and(|&rec| lsn >= rec)
            && self.last_image.get(&page).is_none_or(|&img| lsn >= img)
    }
}

/// The pages redo works on: read from the file on first use, written back at the end.
struct RedoPages<'f> {
    file: &'f PageFile,
    log: &'f LogManager,
    archive: Option<&'f Archive>,
    pages: HashMap<PageId, Vec<u8>>,
    repaired: u64,
    /// R29: the pages redo rebuilt from a split's source and no image replaced since; their
    /// images are logged before any page is written.
    derived: std::collections::BTreeSet<PageId>,
}

impl RedoTarget for RedoPages<'_> {
    fn page(&mut self, id: PageId, lsn: Lsn) -> Result<&mut Vec<u8>> {
        if !self.pages.contains_key(&id) {
            let mut buf = vec![0u8; self.file.page_size()];
            let damaged =
                |e: String| corrupted(lsn, format!("redo needs page {id} from disk, and it is damaged: {e}"));
            // R9: redo works only on a page that is a well-formed node (btree README T17); a
            // damaged one is rebuilt from the log by single-page recovery (R18).
            // An I/O error is not damage: restart fails with it (R11 retries from the start).
            let read = match self.file.read_page(id, &mut buf) {
                Ok(()) => Ok(()),
                Err(e @ swizzledb_buffer::BufferError::Corrupted { .. }) => Err(e.to_string()),
                Err(e) => return Err(e.into()),
            };
            if let Err(damage) = read.and_then(|()| swizzledb_btree::validate_page(&buf)) {
                buf = crate::repair::rebuild_page(self.log, self.archive, id, self.file.page_size(), lsn)
                    .map_err(|e| damaged(format!("{damage}; single-page recovery failed: {e}")))?;
                log::warn!("restart: page {id} was damaged ({damage}); rebuilt by single-page recovery");
                self.repaired += 1;
            }
            self.pages.insert(id, buf);
        }
        Ok(self.pages.get_mut(&id).expect("just inserted"))
    }

    fn install(&mut self, id: PageId, image: &[u8], lsn: Lsn) -> Result<()> {
        check_image(id, image, self.file.page_size(), lsn)?;
        let mut p = image.to_vec();
        page::set_page_lsn(&mut p, lsn);
        self.pages.insert(id, p);
        self.derived.remove(&id);
        Ok(())
    }

    fn page_size(&self) -> usize {
        self.file.page_size()
    }

    fn holds_already(&mut self, id: PageId, lsn: Lsn) -> Result<bool> {
        if self.file.len_pages()? <= id.get() {
            return Ok(false);
        }
        let mut buf = vec![0u8; self.file.page_size()];
        match self.file.read_page(id, &mut buf) {
            Ok(()) => {}
            Err(swizzledb_buffer::BufferError::Corrupted { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        if swizzledb_btree::validate_page(&buf).is_err() || page::page_lsn(&buf) < lsn {
            return Ok(false);
        }
        self.pages.insert(id, buf);
        Ok(true)
    }
}

/// Analysis and redo (R8, R9): brings the page file to the state of the end of the durable
/// log and returns what undo needs. Writes only data pages (never page 0), then syncs.
pub(crate) fn analyze_and_redo(
    vfs: &dyn swizzledb_io::Vfs,
    path: &Path,
    direct: bool,
    log: &LogManager,
    archive: Option<&Archive>,
    area: &Arc<DoubleWrite>,
) -> Result<Recovered> {
    let (file, meta) = PageFile::open_logged(vfs, path, direct)?;
    file.use_double_write(Arc::clone(area));
    let checkpoint = last_checkpoint(log, &meta)?;
    if let Some(why) = implausible_checkpoint(&checkpoint, meta.page_count.max(file.len_pages()?)) {
        return Err(corrupted(checkpoint.begin, why));
    }
    let mut a = Analysis::from_checkpoint(&checkpoint);
    let mut stats = RestartStats::default();
    let decode = |lsn: Lsn, body: &[u8]| Record::decode(body).map_err(|e| corrupted(lsn, e.to_string()));

    // The checkpoint names where analysis begins (and its dirty pages where redo does): an LSN
    // the log never held is damage in the log, not a caller's mistake.
    // The scan reads its first record only when asked: its error is the same damage.
    let scan = |from: Lsn, what: &'static str| {
        let wrong = move |e: LogError| {
            corrupted(from, format!("the last checkpoint's {what} is no record of the log: {e}"))
        };
        let mut first = true;
        log.scan(from).map_err(wrong).map(|items| {
            items.map(move |item| {
                let at_first = std::mem::replace(&mut first, false);
                item.map_err(|e| match e {
                    // R24's damage below a durable point keeps its own error (and recovery).
                    e @ LogError::DurableDamage(_) => Error::from(e),
                    e if at_first => wrong(e),
                    e => Error::from(e),
                })
            })
        })
    };
    for item in scan(checkpoint.begin, "begin")? {
        let (lsn, body) = item?;
        a.record(lsn, &decode(lsn, &body)?);
        stats.analyzed += 1;
    }
    if let Some((lsn, why)) = a.implausible() {
        return Err(corrupted(*lsn, why.clone()));
    }
    let next_txn = next_txn(a.max_txn).map_err(|why| corrupted(checkpoint.begin, why))?;

    let mut pages = RedoPages {
        file: &file,
        log,
        archive,
        pages: HashMap::new(),
        repaired: 0,
        derived: std::collections::BTreeSet::new(),
    };
    if let Some(&start) = a.dirty.values().min() {
        for item in scan(start, "oldest recovery LSN")? {
            let (lsn, body) = item?;
            let record = decode(lsn, &body)?;
            let mut ids = record.pages_changed();
            // R29: a split-off is rebuilt from its source's state before the record, so before
            // the source's own change.
            ids.sort_by_key(|&id| record.split_off_source(id).is_none());
            for id in ids {
                if a.wants(id, lsn) && redo_on_page(&mut pages, id, lsn, &record)? {
                    stats.redone += 1;
                    if record.split_off_source(id).is_some() {
                        pages.derived.insert(id);
                    }
                }
            }
        }
    }
    // R29: the pages written below may include the source of a page redo derived; written
    // before the derived page, a crash between the two would leave neither rebuildable. So
    // each derived page's image is logged first, and made durable.
    if !pages.derived.is_empty() {
        for &id in &pages.derived {
            let image = pages.pages.get(&id).expect("a derived page is in memory").clone();
            let record = Record::Structure { pages: vec![(id, NodeLog::Image(image))], freed: Vec::new() };
            log.append(&record.encode())?;
        }
        log.flush_all()?;
        stats.derived_pages_imaged = pages.derived.len() as u64;
    }
    stats.pages_repaired = pages.repaired;
    let page_count = a.page_count.max(pages.pages.keys().map(|p| p.get() + 1).max().unwrap_or(0));
    // In batches: each batch costs one sync of the double-write area (F15). A batch is copied
    // into one aligned room, which direct I/O needs (F14).
    let mut redone: Vec<(PageId, Vec<u8>)> = pages.pages.into_iter().collect();
    redone.sort_unstable_by_key(|(id, _)| *id);
    let mut room = None;
    for batch in redone.chunks(64) {
        let batch: Vec<(PageId, &[u8])> = batch.iter().map(|(id, p)| (*id, p.as_slice())).collect();
        file.write_copies(&batch, &mut room)?;
        stats.pages_written += batch.len() as u64;
    }
    if file.len_pages()? < page_count {
        file.set_len_pages(page_count)?;
    }
    file.sync()?;

    let mut state = a.archived_state(log.durable());
    state.tables.page_count = page_count;
    state.tables.free.retain(|p| p.get() < page_count);
    let unfinished: Vec<TxnEntry> = a.txns.into_values().collect();
    Ok(Recovered {
        state,
        allocation: Allocation {
            page_count,
            free_pages: a.free.into_iter().filter(|p| p.get() < page_count).collect(),
            trees: a.catalog,
        },
        next_txn,
        unfinished,
        stats,
    })
}
