//! Restart (RECOVERY.md R8–R10): analysis from the last complete checkpoint and redo of the
//! page changes since, on the page file directly, before the buffer pool opens. Undo of the
//! losers runs afterwards through the trees (`Database::open`), writing compensation records.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use swizzledb_btree::log::{redo, redo_node};
use swizzledb_btree::node;
use swizzledb_buffer::page;
use swizzledb_buffer::{Allocation, PageFile, PageId};
use swizzledb_sync::{Lsn, TxnId};
use swizzledb_wal::LogManager;

use crate::record::{Checkpoint, NodeLog, Record, TxnEntry, TxnState};
use crate::{Error, Result};

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
}

/// What a restart did.
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
    /// Compensation records written while rolling them back.
    pub compensations: u64,
}

fn corrupted(lsn: Lsn, reason: impl Into<String>) -> Error {
    Error::LogCorrupted { lsn, reason: reason.into() }
}

/// The checkpoint restart starts from: the one the master record names, or (no master: a crash
/// before the first checkpoint completed) the state page 0 describes and the whole log.
fn last_checkpoint(log: &LogManager, meta: &swizzledb_buffer::Meta) -> Result<Checkpoint> {
    match log.read_master()? {
        Some(end) => {
            let body = log.read(end).map_err(|e| corrupted(end, format!("the last checkpoint: {e}")))?;
            match Record::decode(&body) {
                Ok(Record::CheckpointEnd(c)) => Ok(*c),
                Ok(other) => {
                    Err(corrupted(end, format!("the master names a {other:?}, not a checkpoint end")))
                }
                Err(e) => Err(corrupted(end, e.to_string())),
            }
        }
        None => Ok(Checkpoint {
            begin: Lsn(0),
            page_count: meta.page_count,
            catalog: meta.trees.clone().into_iter().collect(),
            ..Checkpoint::default()
        }),
    }
}

/// Analysis state (RECOVERY.md R8).
struct Analysis {
    dirty: HashMap<PageId, Lsn>,
    last_image: HashMap<PageId, Lsn>,
    txns: BTreeMap<TxnId, TxnEntry>,
    page_count: u64,
    free: BTreeSet<PageId>,
    catalog: BTreeMap<String, PageId>,
    max_txn: u64,
}

impl Analysis {
    fn from_checkpoint(c: &Checkpoint) -> Analysis {
        Analysis {
            dirty: c.dirty.iter().copied().collect(),
            last_image: HashMap::new(),
            txns: c.txns.iter().map(|t| (t.txn, t.clone())).collect(),
            page_count: c.page_count,
            free: c.free.iter().copied().collect(),
            catalog: c.catalog.iter().cloned().collect(),
            max_txn: c.txns.iter().map(|t| t.txn.0).max().unwrap_or(0),
        }
    }

    fn touched(&mut self, page: PageId, lsn: Lsn) {
        self.dirty.entry(page).or_insert(lsn);
    }

    fn allocated(&mut self, page: PageId) {
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

    fn record(&mut self, lsn: Lsn, record: &Record) {
        match record {
            Record::Begin { txn } => {
                self.txn_record(*txn, lsn, None);
            }
            Record::Leaf { txn, undo_next, page, base, .. } => {
                self.txn_record(*txn, lsn, Some(undo_next.unwrap_or(lsn)));
                self.touched(*page, lsn);
                if base.is_some() {
                    self.last_image.insert(*page, lsn);
                }
            }
            Record::Commit { txn, .. } => self.txn_record(*txn, lsn, None).state = TxnState::Committed,
            Record::Abort { txn, .. } => self.txn_record(*txn, lsn, None).state = TxnState::Aborting,
            Record::End { txn, .. } => {
                self.max_txn = self.max_txn.max(txn.0);
                self.txns.remove(txn);
            }
            Record::Structure { pages, freed } => {
                for (p, node) in pages {
                    self.touched(*p, lsn);
                    // Only an image replaces the page; a logical change applies on top (R9).
                    if let NodeLog::Image(_) = node {
                        self.last_image.insert(*p, lsn);
                    }
                    self.allocated(*p);
                }
                for p in freed {
                    self.free.insert(*p);
                }
            }
            Record::CreateTree { name, root } => {
                self.catalog.insert(name.clone(), *root);
                self.allocated(*root);
            }
            // Page writes are not trusted to shrink the dirty page table: the data file is not
            // synced when they are logged (R8).
            Record::CheckpointBegin | Record::CheckpointEnd(_) | Record::PageWrite { .. } => {}
        }
    }

    /// Whether redo must apply the record at `lsn` to `page` (R9): the page is dirty from
    /// `rec_lsn` on, and no later image replaces the page anyway.
    fn wants(&self, page: PageId, lsn: Lsn) -> bool {
        self.dirty.get(&page).is_some_and(|&rec| lsn >= rec)
            && self.last_image.get(&page).is_none_or(|&img| lsn >= img)
    }
}

/// Where page-local redo finds the page a record applies to, and puts an image (R9).
pub(crate) trait RedoTarget {
    /// The page's current state, for a change on top of it; `lsn` names the record that needs
    /// it, for errors.
    ///
    /// # Errors
    /// The page is not available (damaged on disk, or no image precedes the record).
    fn page(&mut self, id: PageId, lsn: Lsn) -> Result<&mut Vec<u8>>;

    /// Makes `image` the page's state, stamped with `lsn` (`Lsn(0)` for a base image, which
    /// precedes its record's change).
    ///
    /// # Errors
    /// The image is not a valid node of this page (R9).
    fn install(&mut self, id: PageId, image: &[u8], lsn: Lsn) -> Result<()>;
}

/// Checks an image from the log before anything uses it (R9): its size, its node structure
/// (btree README T17) and the page id it names.
pub(crate) fn check_image(id: PageId, image: &[u8], page_size: usize, lsn: Lsn) -> Result<()> {
    if image.len() != page_size {
        return Err(corrupted(lsn, format!("an image of page {id} of {} bytes", image.len())));
    }
    node::validate(image).map_err(|e| corrupted(lsn, format!("the image of page {id} is damaged: {e}")))?;
    if page::page_id(image) != id.get() {
        return Err(corrupted(lsn, format!("the image of page {id} names page {}", page::page_id(image))));
    }
    Ok(())
}

/// Page-local redo (R9): what the record at `lsn` does to page `id`, given only that page's
/// state before it (or nothing, when the record carries the page's image). Restart applies it
/// to every page of its dirty page table; single-page recovery (R18) to one page. Returns
/// whether the record changed the page (a change already in the page, by its page LSN, is
/// skipped).
///
/// # Errors
/// The page is missing or damaged, or the change does not match it (`LogCorrupted`).
pub(crate) fn redo_on_page(
    target: &mut impl RedoTarget,
    id: PageId,
    lsn: Lsn,
    record: &Record,
) -> Result<bool> {
    match record {
        Record::Leaf { page: leaf, change, base, .. } if *leaf == id => {
            if let Some(image) = base {
                target.install(id, image, Lsn(0))?;
            }
            let p = target.page(id, lsn)?;
            if page::page_lsn(p) >= lsn {
                return Ok(false);
            }
            redo(p, &change.borrow()).map_err(|e| corrupted(lsn, format!("redo on page {id}: {e}")))?;
            page::set_page_lsn(p, lsn);
            Ok(true)
        }
        Record::Structure { pages, .. } => {
            match pages.iter().find(|(p, _)| *p == id).map(|(_, n)| n.change()) {
                Some(Err(image)) => {
                    target.install(id, image, lsn)?;
                    Ok(true)
                }
                // A logical change, on the page's state before it (R9).
                Some(Ok(change)) => {
                    let p = target.page(id, lsn)?;
                    if page::page_lsn(p) >= lsn {
                        return Ok(false);
                    }
                    redo_node(p, &change).map_err(|e| corrupted(lsn, format!("redo on page {id}: {e}")))?;
                    page::set_page_lsn(p, lsn);
                    Ok(true)
                }
                // A freed page: its contents no longer matter (it is allocated again only with
                // a new image).
                None => Ok(false),
            }
        }
        // Records that change no page, or not this one.
        Record::Leaf { .. }
        | Record::Begin { .. }
        | Record::Commit { .. }
        | Record::Abort { .. }
        | Record::End { .. }
        | Record::CreateTree { .. }
        | Record::CheckpointBegin
        | Record::CheckpointEnd(_)
        | Record::PageWrite { .. } => Ok(false),
    }
}

/// The pages redo works on: read from the file on first use, written back at the end.
struct RedoPages<'f> {
    file: &'f PageFile,
    pages: HashMap<PageId, Vec<u8>>,
}

impl RedoTarget for RedoPages<'_> {
    fn page(&mut self, id: PageId, lsn: Lsn) -> Result<&mut Vec<u8>> {
        if !self.pages.contains_key(&id) {
            let mut buf = vec![0u8; self.file.page_size()];
            let damaged = |e: String| {
                corrupted(lsn, format!("redo needs page {id} from disk, and it is damaged ({e}) with no image in the log to replace it"))
            };
            self.file.read_page(id, &mut buf).map_err(|e| damaged(e.to_string()))?;
            // R9: redo works only on a page that is a well-formed node (btree README T17).
            node::validate(&buf).map_err(damaged)?;
            self.pages.insert(id, buf);
        }
        Ok(self.pages.get_mut(&id).expect("just inserted"))
    }

    fn install(&mut self, id: PageId, image: &[u8], lsn: Lsn) -> Result<()> {
        check_image(id, image, self.file.page_size(), lsn)?;
        let mut p = image.to_vec();
        page::set_page_lsn(&mut p, lsn);
        self.pages.insert(id, p);
        Ok(())
    }
}

/// Analysis and redo (R8, R9): brings the page file to the state of the end of the durable
/// log and returns what undo needs. Writes only data pages (never page 0), then syncs.
pub(crate) fn analyze_and_redo(
    vfs: &dyn swizzledb_sync::Vfs,
    path: &Path,
    direct: bool,
    log: &LogManager,
) -> Result<Recovered> {
    let (file, meta) = PageFile::open_logged(vfs, path, direct)?;
    let checkpoint = last_checkpoint(log, &meta)?;
    let mut a = Analysis::from_checkpoint(&checkpoint);
    let mut stats = RestartStats::default();
    let decode = |lsn: Lsn, body: &[u8]| Record::decode(body).map_err(|e| corrupted(lsn, e.to_string()));

    for item in log.scan(checkpoint.begin)? {
        let (lsn, body) = item?;
        a.record(lsn, &decode(lsn, &body)?);
        stats.analyzed += 1;
    }

    let mut pages = RedoPages { file: &file, pages: HashMap::new() };
    if let Some(&start) = a.dirty.values().min() {
        for item in log.scan(start)? {
            let (lsn, body) = item?;
            let record = decode(lsn, &body)?;
            for id in record.pages_changed() {
                if a.wants(id, lsn) && redo_on_page(&mut pages, id, lsn, &record)? {
                    stats.redone += 1;
                }
            }
        }
    }
    let page_count = a.page_count.max(pages.pages.keys().map(|p| p.get() + 1).max().unwrap_or(0));
    for (id, mut p) in pages.pages {
        file.write_page(id, &mut p)?;
        stats.pages_written += 1;
    }
    if file.len_pages()? < page_count {
        file.set_len_pages(page_count)?;
    }
    file.sync()?;

    let unfinished: Vec<TxnEntry> = a.txns.into_values().collect();
    Ok(Recovered {
        allocation: Allocation {
            page_count,
            free_pages: a.free.into_iter().filter(|p| p.get() < page_count).collect(),
            trees: a.catalog,
        },
        next_txn: a.max_txn + 1,
        unfinished,
        stats,
    })
}
