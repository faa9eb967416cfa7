//! The engine's write-ahead logging (RECOVERY.md): the log manager, the transaction table, the
//! [`ChangeLog`]s through which trees report their changes, and checkpoints.

use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use swizzledb_btree::log::LogFailure;
use swizzledb_btree::{ChangeLog, LeafChange, NodeChange, Overflow, PageChange};
use swizzledb_buffer::{BufferPool, ExclusiveGuard, PageId};
use swizzledb_sync::{Lsn, TxnId};
use swizzledb_wal::{Archive, ArchiveEntry, LogError, LogManager, RunSummary, FRAME_ROOM};

use crate::record::{Change, Checkpoint, Encode, LeafHead, LeafRecord, NodeLog, Record, TxnEntry, TxnState};
use crate::restart::{Analysis, ArchivedState};
use crate::version::{Key, UndoList, Writer};
use crate::versions::Versions;

/// When a commit returns.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CommitMode {
    /// After its commit record is durable (group commit: one fsync serves every commit waiting).
    #[default]
    Sync,
    /// At once; the log's background flusher makes the commit durable within its interval, so a
    /// crash can lose the last few milliseconds of commits, never a part of one.
    Async,
}

/// A running transaction, as the transaction table (and so a checkpoint) sees it.
#[derive(Debug)]
pub(crate) struct TxnShared {
    pub(crate) id: TxnId,
    /// Its newest record (0: none yet).
    pub(crate) last_lsn: AtomicU64,
    /// Its first record, which log truncation must keep (0: none yet).
    pub(crate) first_lsn: AtomicU64,
    /// The next record to undo (0: none).
    pub(crate) undo_next: AtomicU64,
    /// [`TxnState`] as a number.
    state: AtomicU8,
    /// Set from before the transaction appends a record until its entry shows it (R16).
    appending: std::sync::atomic::AtomicBool,
    /// The thread that last wrote through the transaction ([`thread_tag`]; 0: none yet), so a
    /// read outside transactions in that thread can tell it would wait for itself (K14).
    pub(crate) writer_thread: AtomicU64,
}

pub(crate) use crate::lock::thread_tag;

thread_local! {
    /// The entry of the thread's last transaction, for its next one ([`TxnShared::arc`]).
    static SPARE_SHARED: std::cell::Cell<Option<Arc<TxnShared>>> = const { std::cell::Cell::new(None) };
}

impl TxnShared {
    /// A fresh entry for transaction `id`: the thread's last transaction's, reset, if nothing
    /// holds that one any more (the log's table of running transactions let it go when the
    /// transaction ended, R16), else a new one.
    pub(crate) fn arc(id: TxnId) -> Arc<TxnShared> {
        crate::version::reuse(&SPARE_SHARED, |entry| *entry = TxnShared::new(id))
            .unwrap_or_else(|| Arc::new(TxnShared::new(id)))
    }

    /// Keeps a reference to a finished transaction's entry for [`TxnShared::arc`], which reuses
    /// it only once this is the last reference.
    fn keep(entry: &Arc<TxnShared>) {
        let _ = SPARE_SHARED.try_with(|s| s.set(Some(Arc::clone(entry))));
    }

    pub(crate) fn new(id: TxnId) -> TxnShared {
        TxnShared {
            id,
            last_lsn: AtomicU64::new(0),
            first_lsn: AtomicU64::new(0),
            undo_next: AtomicU64::new(0),
            state: AtomicU8::new(0),
            appending: std::sync::atomic::AtomicBool::new(false),
            writer_thread: AtomicU64::new(0),
        }
    }

    /// Waits until the transaction is not between appending a record and updating its entry
    /// (R16): at most one append, which never waits for a checkpoint.
    fn wait_not_appending(&self) {
        let mut spins = 0u32;
        while self.appending.load(Ordering::SeqCst) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }

    pub(crate) fn set_state(&self, state: TxnState) {
        let n = match state {
            TxnState::Active => 0,
            TxnState::Committed => 1,
            TxnState::Aborting => 2,
        };
        self.state.store(n, Ordering::Release);
    }

    fn state(&self) -> TxnState {
        match self.state.load(Ordering::Acquire) {
            0 => TxnState::Active,
            1 => TxnState::Committed,
            _ => TxnState::Aborting,
        }
    }

    pub(crate) fn last(&self) -> Lsn {
        Lsn(self.last_lsn.load(Ordering::Acquire))
    }
}

/// The log manager plus the transaction table: everything a logged database shares.
pub(crate) struct Wal {
    pub(crate) log: Arc<LogManager>,
    /// The transaction table, in shards by transaction number so that beginning and ending
    /// transactions on many threads share no lock.
    txns: Box<[TxnShard]>,
    pub(crate) commit_mode: CommitMode,
    /// Serializes checkpoints, and the decoupled cleaner's replays with them (R20).
    pub(crate) checkpointing: Mutex<()>,
    pub(crate) stats: WalStats,
    /// The highest commit record whose transaction released its locks before the record was
    /// durable (R2's early lock release); a later commit in sync mode waits until it is.
    released_commit: AtomicU64,
    /// The log archive, if the database keeps one (R17).
    pub(crate) archive: Option<Arc<Archive>>,
    /// Serializes archiving (runs must follow each other, wal README A1), and holds the
    /// archiver's analysis (R22) as of the LSN it names — the archive's end — when known.
    archiving: Mutex<Option<(Lsn, Analysis)>>,
    /// Bytes of entries an archiving holds before it spills (`ARCHIVE_MEMORY`, or
    /// `LabOptions::archive_memory`).
    pub(crate) archive_memory: usize,
    /// Serializes merges of the archive's runs (R17), which run beside archiving.
    merging: Mutex<()>,
    /// Set while the background merger runs: archiving then leaves merges to it.
    pub(crate) background_merges: std::sync::atomic::AtomicBool,
    /// Which checkpoints `checkpoint` takes (R7, R19).
    checkpoint_kind: CheckpointKind,
    /// R22: the pages instant restart left to redo, until the checkpoint that ends it.
    pub(crate) pending: Option<Arc<crate::instant::PendingRedo>>,
    /// R25: a clean close seals the newest segment and truncates the ones before it
    /// (`Builder::keep_log_on_close(false)`, the default).
    pub(crate) seal_on_close: bool,
    /// R29: splits log their new node as a split-off (`LabOptions::lazy_split_images`).
    pub(crate) lazy_split_images: bool,
    /// R29: the pool whose dependants (buffer B36) a structure change resolves, set once the
    /// database is made.
    pub(crate) pool: std::sync::OnceLock<std::sync::Weak<swizzledb_buffer::BufferPool>>,
    /// The database's page size: the archive's entries for a large value's overflow pages are
    /// their images (R17).
    pub(crate) page_size: usize,
}

/// How one archiving goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Archiving {
    /// Then merge by size tiers, unless the background merger does.
    Merged,
    /// No merge (restart: `open` never waits for one).
    Unmerged,
    /// The background archiver's: no run for a short stretch without page changes.
    SkipEmpty,
}

/// Encodes `record` into this thread's buffer, after the log's room for the frame's checksum
/// (wal README W2), and appends it: no allocation per record, one checksum pass.
fn append_encoded(log: &LogManager, record: &impl Encode) -> Result<Lsn, LogError> {
    /// A buffer that grew past this for a large record is not kept.
    const KEEP: usize = 64 << 10;
    thread_local! {
        static BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut frame = BUF.take();
    frame.clear();
    frame.extend_from_slice(&[0; FRAME_ROOM]);
    let mut frame = record.encode_into(frame);
    let appended = log.append_framed(&mut frame);
    if frame.capacity() <= KEEP {
        BUF.set(frame);
    }
    appended
}

/// Shards of the transaction table.
const TXN_SHARDS: usize = 16;

/// One shard of the transaction table: the running transactions whose number it holds, on
/// cache lines of its own (a thread's transactions all use the shard of its lane,
/// `lock::txn_shard_of`; a neighbour on its line would pass it between the cores anyway).
#[derive(Default)]
#[repr(align(128))]
struct TxnShard(Mutex<rustc_hash::FxHashMap<TxnId, Arc<TxnShared>>>);

impl std::ops::Deref for TxnShard {
    type Target = Mutex<rustc_hash::FxHashMap<TxnId, Arc<TxnShared>>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Log bytes without page changes the background archiver leaves unarchived rather than add an
/// empty run.
const EMPTY_RUN_BYTES: u64 = 1 << 20;

/// Bytes of archive entries an archiving holds in memory before it spills a sorted chunk
/// (R17, wal README A4b).
const ARCHIVE_MEMORY: usize = 64 << 20;

/// Runs the archiver merges into one (R17; wal README A7; [`tier_merge`]).
const MERGE_RUNS: usize = 8;
/// Runs smaller than this count as this large when sizes are compared, so that tiny runs (a
/// checkpoint with little new log) merge with small ones instead of piling up.
const MERGE_FLOOR_BYTES: u64 = 64 << 10;
/// Runs past which an archiving merges by size tiers itself, background merger or not (R17):
/// the tiers keep few runs each, so only runs the merger has not reached
/// get here — those of processes killed before its first rounds, which the next ones add to.
const MAX_RUNS: usize = 2 * MERGE_RUNS * MERGE_RUNS;

/// The runs [`Wal::merge_tiers`] merges next, as (first, count), runs under MERGE_FLOOR_BYTES
/// counting as that much: the newest MERGE_RUNS if they are of about one size (the largest at
/// most four times the smallest: a tier), or if none of them holds more than half their bytes
/// and the oldest of them is not the largest (a larger run came after a smaller one: sizes
/// that vary from archiving to archiving, which no later archiving would sort into a tier);
/// either way the merged run is at least twice each of its inputs. Else, past MAX_RUNS runs,
/// the MERGE_RUNS adjacent runs of the fewest bytes, so that no pattern of sizes piles runs
/// up; else none. (Only the tier merged once: bursts of log between archivings of little put
/// a small and a large run among every newest eight, and nothing merged, ever.)
fn tier_merge(runs: &[RunSummary]) -> Option<(usize, usize)> {
    let bytes = |r: &RunSummary| r.bytes.max(MERGE_FLOOR_BYTES);
    let first = runs.len().checked_sub(MERGE_RUNS)?;
    let window = &runs[first..];
    let (mut sum, mut small, mut large) = (0u64, u64::MAX, 0u64);
    for b in window.iter().map(bytes) {
        (sum, small, large) = (sum.saturating_add(b), small.min(b), large.max(b));
    }
    let tier = large <= small.saturating_mul(4);
    let unsorted = large.saturating_mul(2) <= sum && bytes(&window[0]) < large;
    if tier || unsorted {
        return Some((first, MERGE_RUNS));
    }
    if runs.len() <= MAX_RUNS {
        return None;
    }
    let total = |w: &[RunSummary]| w.iter().map(bytes).fold(0u64, u64::saturating_add);
    let (at, _) = runs.windows(MERGE_RUNS).enumerate().min_by_key(|(_, w)| total(w))?;
    Some((at, MERGE_RUNS))
}

/// A node's disk image with its free gap zeroed, so that the record encoding leaves it out
/// (a node after a split is about half empty).
fn node_image(g: &ExclusiveGuard<'_>) -> Vec<u8> {
    let mut image = g.pool().disk_image(g);
    let gap = swizzledb_btree::node::free_gap(&image);
    image[gap].fill(0);
    image
}

fn failure(e: LogError) -> LogFailure {
    Box::new(e)
}

/// R17: the archive must continue the log: it may not end beyond the log's end, nor before
/// its oldest record (the records between would never be archived).
pub(crate) fn check_archive(log: &LogManager, archive: &Archive) -> Result<(), LogError> {
    if let Some(end) = archive.end() {
        let (oldest, log_end) = (log.oldest(), log.end());
        if end > log_end || end < oldest {
            return Err(LogError::ArchiveCorrupted {
                run: archive.dir().to_path_buf(),
                reason: format!(
                    "the archive ends at {end} but the log holds [{oldest}, {log_end}): it belongs to \
                     another log, or the log was truncated while the archive was off; move the \
                     archive away to start a new one"
                ),
            });
        }
    }
    Ok(())
}

impl Wal {
    pub(crate) fn new(log: Arc<LogManager>, commit_mode: CommitMode, page_size: usize) -> Wal {
        Wal {
            log,
            txns: (0..TXN_SHARDS).map(|_| TxnShard::default()).collect(),
            commit_mode,
            checkpointing: Mutex::new(()),
            stats: WalStats::default(),
            released_commit: AtomicU64::new(0),
            archive: None,
            archiving: Mutex::new(None),
            archive_memory: ARCHIVE_MEMORY,
            merging: Mutex::new(()),
            background_merges: std::sync::atomic::AtomicBool::new(false),
            checkpoint_kind: CheckpointKind::Classical,
            pending: None,
            seal_on_close: true,
            lazy_split_images: false,
            pool: std::sync::OnceLock::new(),
            page_size,
        }
    }

    /// R22: instant restart left `pending` to redo.
    pub(crate) fn with_pending(mut self, pending: Arc<crate::instant::PendingRedo>) -> Wal {
        self.pending = Some(pending);
        self
    }

    /// R22: no checkpoint ends while instant restart's redo is pending. Redoes what is left in
    /// the file (sharing the work with the background redo), syncs the file and takes the
    /// classical checkpoint that ends restart; returns its end record — `None` if restart had
    /// ended already (or was not instant).
    pub(crate) fn finish_restart(&self, pool: &BufferPool) -> crate::error::Result<Option<Lsn>> {
        let Some(pending) = &self.pending else { return Ok(None) };
        if pending.is_finished() {
            return Ok(None);
        }
        crate::instant::drain(
            &self.log,
            self.archive.as_deref(),
            pool,
            pending,
            &std::sync::atomic::AtomicBool::new(false),
        )
        // The checkpoint that ends restart failed before it began (`classical` counts its own).
        .inspect_err(|_| {
            self.stats.failed_checkpoints.fetch_add(1, Ordering::Relaxed);
        })?;
        let mut finished = pending.finished.lock();
        if *finished {
            return Ok(None);
        }
        let end = self.classical(pool)?;
        *finished = true;
        pending.finished_flag.store(true, Ordering::Release);
        Ok(Some(end))
    }

    /// Sets the kind of checkpoint `checkpoint` takes (R7, R19).
    pub(crate) fn with_checkpoint_kind(mut self, kind: CheckpointKind) -> Wal {
        self.checkpoint_kind = kind;
        self
    }

    /// Adds the log archive (R17), checked by [`check_archive`].
    pub(crate) fn with_archive(mut self, archive: Option<Arc<Archive>>) -> Wal {
        self.archive = archive;
        self
    }

    /// R22: the archiver's analysis is `state`, as of `state.at()` — the archive's end (or, for
    /// an empty archive, the log's oldest record): a new database's empty tables.
    pub(crate) fn seed_archiver(&self, state: &ArchivedState) {
        *self.archiving.lock() = Some((state.at(), Analysis::for_archiver(state)));
    }

    /// R22: the archiver's analysis state as of the archive's end, if known.
    pub(crate) fn archiver_state(&self) -> Option<ArchivedState> {
        let state = self.archiving.lock();
        state.as_ref().map(|(at, a)| a.archived_state(*at))
    }

    /// R17: sorts the page changes of the durable log not archived yet into one new run, and
    /// merges runs by size tiers (wal README A7). `None` if there is no archive or nothing new.
    /// R22: the run stores the archiver's analysis state as of its end, carried forward over
    /// the run's records (or none, if the state at its beginning is not known).
    pub(crate) fn archive_durable(&self) -> Result<Option<RunSummary>, crate::error::Error> {
        self.archive_with(None, Archiving::Merged)
    }

    /// The background archiver's [`Wal::archive_durable`]: a stretch of log without page
    /// changes (page-write records, say) shorter than 1 MiB waits for more rather than become
    /// an empty run — a run per interval of nothing would only cost syncs and merges. Checkpoints
    /// and the decoupled cleaner always archive: their truncation and page-write records need
    /// the archive's end to pass their own records (R19, R20).
    pub(crate) fn archive_background(&self) -> Result<Option<RunSummary>, crate::error::Error> {
        self.archive_with(None, Archiving::SkipEmpty)
    }

    /// [`Wal::archive_durable`] without merging (restart's: merges wait for the background
    /// merger or the next archiving, so that `open` never waits for one, R22).
    pub(crate) fn archive_durable_unmerged(&self) -> Result<Option<RunSummary>, crate::error::Error> {
        self.archive_with(None, Archiving::Unmerged)
    }

    /// R22: archives the durable log, which ends at `end.at` (restart's analysis end, before
    /// anything is appended), storing `end` with the run instead of analyzing the records
    /// again; the archiver continues from it.
    pub(crate) fn archive_restart_end(&self, end: &ArchivedState) -> Result<(), crate::error::Error> {
        self.archive_with(Some(end), Archiving::Unmerged)?;
        Ok(())
    }

    fn archive_with(
        &self,
        known_end: Option<&ArchivedState>,
        how: Archiving,
    ) -> Result<Option<RunSummary>, crate::error::Error> {
        let Some(archive) = &self.archive else { return Ok(None) };
        let mut state = self.archiving.lock();
        let from = archive.end().unwrap_or_else(|| self.log.oldest());
        let to = self.log.durable();
        let known_end = known_end.filter(|k| k.at() == to);
        if to <= from {
            if let Some(k) = known_end {
                *state = Some((k.at(), Analysis::for_archiver(k)));
            }
            return Ok(None);
        }
        // R22: carried forward over the run's records only from a state at its beginning.
        let mut analysis = match known_end {
            Some(_) => None,
            None => state.as_ref().filter(|(at, _)| *at == from).map(|(_, a)| a.clone()),
        };
        // R17: the stretch's entries are gathered within a budget; past it they are sorted and
        // spilled (wal README A4b), so archiving a long stretch does not hold it in memory.
        let mut entries = archive.run_builder(self.archive_memory);
        for item in self.log.scan(from)? {
            let (lsn, body) = item?;
            if lsn >= to {
                break;
            }
            let corrupted = |reason: String| LogError::Corrupted { lsn, reason };
            self.stats.archived_records.fetch_add(1, Ordering::Relaxed);
            if let Some(a) = analysis.as_mut() {
                a.record_body(lsn, &body).map_err(|e| corrupted(e.to_string()))?;
            }
            let pages = Record::pages_in(&body).map_err(|e| corrupted(e.to_string()))?;
            for (page, body) in crate::redo::archive_entries(body, &pages, self.page_size) {
                entries.push(ArchiveEntry { page: page.get(), lsn, body })?;
            }
        }
        // R10, R22: a record no engine wrote (a page far beyond the allocated ones or page 0,
        // an invalid tree name) is refused here as restart's analysis refuses it, before the
        // run is written: its state would otherwise carry the record's allocation to instant
        // restart, which grows the file to the state's page count.
        if let Some((lsn, why)) = analysis.as_ref().and_then(Analysis::implausible) {
            return Err(crate::error::Error::LogCorrupted { lsn: *lsn, reason: why.clone() });
        }
        if how == Archiving::SkipEmpty && entries.is_empty() && to.0 - from.0 < EMPTY_RUN_BYTES {
            return Ok(None);
        }
        let end_state = match known_end {
            Some(k) => Some(k.clone()),
            None => analysis.as_ref().map(|a| a.archived_state(to)),
        };
        let bytes = end_state.as_ref().map(ArchivedState::encode).unwrap_or_default();
        let run = entries.finish(from, to, &bytes)?;
        *state = match (known_end, analysis) {
            (Some(k), _) => Some((to, Analysis::for_archiver(k))),
            (None, Some(a)) => Some((to, a)),
            (None, None) => None,
        };
        drop(state);
        let behind = archive.runs().len() > MAX_RUNS;
        if how != Archiving::Unmerged && (behind || !self.background_merges.load(Ordering::Acquire)) {
            self.merge_tiers()?;
        }
        Ok(Some(run))
    }

    /// Merges the archive's runs by size tiers (wal README A7): whenever the newest MERGE_RUNS
    /// runs are of about one size, or of sizes in no order with none holding half their bytes,
    /// they become one run, which may complete a group of the next tier in turn
    /// ([`tier_merge`]). So each merge at least doubles the run every entry it rewrites is in
    /// (each entry is rewritten logarithmically often), and the archive keeps few runs per
    /// tier. Runs beside archiving (A8): by the background merger,
    /// or after each archiving when there is none.
    pub(crate) fn merge_tiers(&self) -> Result<(), crate::error::Error> {
        let Some(archive) = &self.archive else { return Ok(()) };
        let _one = self.merging.lock();
        while let Some((first, n)) = tier_merge(&archive.runs()) {
            archive.merge(first, n)?;
        }
        Ok(())
    }

    pub(crate) fn append(&self, record: &impl Encode) -> Result<Lsn, LogError> {
        let lsn = append_encoded(&self.log, record)?;
        test_point::reached(record);
        Ok(lsn)
    }

    fn txn_shard(&self, id: TxnId) -> &TxnShard {
        &self.txns[crate::lock::txn_shard_of(id, TXN_SHARDS)]
    }

    /// R2: a transaction releases its locks with its commit record at `lsn` not yet durable.
    pub(crate) fn released_early(&self, lsn: Lsn) {
        self.released_commit.fetch_max(lsn.0, Ordering::AcqRel);
    }

    /// R2: returns once every commit record whose transaction released its locks early is
    /// durable, so that a sync-mode commit never acknowledges what it read before the writer's
    /// commit is durable. Costs two loads when there is nothing to wait for.
    pub(crate) fn await_released(&self) -> Result<(), LogError> {
        let released = self.released_commit.load(Ordering::Acquire);
        if released == 0 || self.log.durable().0 > released {
            return Ok(());
        }
        self.log.flush(Lsn(released))
    }

    /// Registers a transaction under a given id (restart's losers).
    pub(crate) fn register(&self, id: TxnId) -> Arc<TxnShared> {
        let shared = TxnShared::arc(id);
        self.txn_shard(id).lock().insert(id, Arc::clone(&shared));
        shared
    }

    /// The entry of a running transaction.
    pub(crate) fn running(&self, id: TxnId) -> Option<Arc<TxnShared>> {
        self.txn_shard(id).lock().get(&id).cloned()
    }

    /// R15: the first record of the oldest running transaction that has logged one: truncation
    /// stops there until it ends.
    pub(crate) fn oldest_running_first(&self) -> Option<Lsn> {
        self.txns
            .iter()
            .flat_map(|shard| {
                shard.lock().values().map(|t| t.first_lsn.load(Ordering::Acquire)).filter(|&f| f != 0).min()
            })
            .min()
            .map(Lsn)
    }

    pub(crate) fn forget(&self, id: TxnId) {
        self.txn_shard(id).lock().remove(&id);
    }

    /// Logs a structure change (T13): each page by its logical change, or by its disk image
    /// when the tree gives none (a new page); and the freed pages. Each page holds a recovery
    /// LSN before the record exists (R3).
    pub(crate) fn log_structure(
        &self,
        changes: &[PageChange<'_, '_>],
        freed: &[PageId],
    ) -> Result<Lsn, LogError> {
        let pool = self.pool.get().and_then(std::sync::Weak::upgrade).filter(|_| self.lazy_split_images);
        // R29: the new node of a split in this change, and its source (with the pool to
        // register it in; before the database is made, images as always), unless the source
        // ends a chain of dependants as long as the pool allows (buffer B36).
        let split_off = |g: &ExclusiveGuard<'_>| {
            changes.iter().find_map(|(source, c)| match (c, &pool) {
                (Some(NodeChange::Split { right, .. }), Some(pool))
                    if *right == g.page_id() && pool.may_add_dependant(source.page_id()) =>
                {
                    Some(*source)
                }
                _ => None,
            })
        };
        if let Some(pool) = &pool {
            // R29, buffer B36: a page freed, or logged whole, here loses the history its
            // dependants are rebuilt from: they are resolved first (their images, when they
            // have not reached the file). Freed pages first: they are nobody's dependants then.
            let held: Vec<&ExclusiveGuard<'_>> = changes.iter().map(|(g, _)| *g).collect();
            let resolve = |page: PageId| {
                pool.resolve_dependants(page, true, &held).map_err(|e| {
                    self.log.poison(&format!("a split's new node could not be resolved: {e}"));
                    LogError::Failed { cause: e.to_string() }
                })
            };
            pool.freeing(freed);
            for &p in freed {
                resolve(p)?;
            }
            for (g, c) in changes {
                if c.is_none() && split_off(g).is_none() {
                    resolve(g.page_id())?;
                }
            }
        }
        let pages = changes
            .iter()
            .map(|(g, change)| {
                let node = match change {
                    Some(c) => NodeLog::of(c),
                    None if split_off(g).is_some() => NodeLog::SplitOff,
                    None => NodeLog::Image(node_image(g)),
                };
                (g.page_id(), node)
            })
            .collect();
        for (g, _) in changes {
            if let Some(source) = split_off(g) {
                let pool = pool.as_ref().expect("R29: a database with lazy split images has its pool");
                pool.add_dependant(source, g);
            }
        }
        let bound = self.log.end();
        for (g, _) in changes {
            g.hold_rec_lsn(bound);
        }
        // T13: the pages are changed already. If the log refuses their record (it may be too
        // large for the log's segments), the log is failed for good, so none of them, nor
        // anything after, reaches the file; the next open restarts from what was logged.
        self.append(&Record::Structure { pages, freed: freed.to_vec() }).inspect_err(|e| {
            self.log.poison(&format!("a structure change could not be logged: {e}"));
        })
    }

    /// Takes a checkpoint of the kind the database was configured with: classical (R7) or
    /// decoupled (R19).
    pub(crate) fn checkpoint(&self, pool: &BufferPool) -> crate::error::Result<Lsn> {
        match self.checkpoint_kind {
            CheckpointKind::Classical => self.checkpoint_classical(pool),
            CheckpointKind::Decoupled => self.checkpoint_decoupled(pool),
        }
    }

    /// Takes a decoupled (log-based) checkpoint (RECOVERY.md R19; Lersch 2015, ch. 3): the
    /// tables are those of the previous checkpoint carried forward by analysis of the log from
    /// its begin record to this one's — page-write records included — without reading the
    /// buffer pool, the transaction table or the pool's allocation. The data file is synced
    /// (so the page writes analysis trusted are durable) before the end record. Falls back to a
    /// classical checkpoint when there is no previous one.
    pub(crate) fn checkpoint_decoupled(&self, pool: &BufferPool) -> crate::error::Result<Lsn> {
        if let Some(end) = self.finish_restart(pool)? {
            return Ok(end);
        }
        let one = self.checkpointing.lock();
        let done = self.stats.checkpoints.load(Ordering::Relaxed);
        let result = match self.decoupled(pool) {
            // No previous checkpoint to carry forward: a classical one (which counts itself).
            Ok(None) => {
                drop(one);
                return self.classical(pool);
            }
            Ok(Some(end)) => Ok(end),
            Err(e) => Err(e),
        };
        self.count_failure(&result, done);
        result
    }

    /// [`Wal::checkpoint_decoupled`] with `checkpointing` held; `None` when there is no previous
    /// checkpoint to carry forward.
    fn decoupled(&self, pool: &BufferPool) -> crate::error::Result<Option<Lsn>> {
        let Some(prev_end) = crate::restart::last_checkpoint_end(&self.log)? else {
            return Ok(None);
        };
        let prev = crate::restart::read_checkpoint(&self.log, prev_end)?;
        let begin = self.append(&Record::CheckpointBegin)?;
        // Every record before the begin record is complete once the begin record is durable
        // (wal README W5), so the scan below sees them all.
        self.log.flush_urgent(begin)?;
        let mut a = crate::restart::Analysis::for_checkpoint(&prev);
        let mut scanned = 0u64;
        for item in self.log.scan(prev.begin)? {
            let (lsn, body) = item?;
            if lsn >= begin {
                break;
            }
            a.record_body(lsn, &body)
                .map_err(|e| crate::error::Error::LogCorrupted { lsn, reason: e.to_string() })?;
            scanned += body.len() as u64;
        }
        self.stats.decoupled_scanned_bytes.fetch_add(scanned, Ordering::Relaxed);
        pool.sync_file()?;
        // A transaction running since before the previous checkpoint began has its first record
        // somewhere in the log kept: keep all of it while such a transaction runs.
        let (checkpoint, keep) = a.into_checkpoint(begin, self.log.oldest());
        self.stats.decoupled_checkpoints.fetch_add(1, Ordering::Relaxed);
        self.finish_checkpoint(checkpoint, keep.0).map(Some)
    }

    /// Counts a checkpoint that failed (`CheckpointStats::failed`), whoever took it: the
    /// background thread, the page cleaner, `Database::checkpoint`, open or close. Called with
    /// `checkpointing` held, `done` the count of completed checkpoints when it was taken: one
    /// that completed and then failed its archiving (counted in `checkpoints` and
    /// `failed_archiving` by [`Wal::finish_checkpoint`]) is no failed checkpoint.
    fn count_failure(&self, result: &crate::error::Result<Lsn>, done: u64) {
        if result.is_err() && self.stats.checkpoints.load(Ordering::Relaxed) == done {
            self.stats.failed_checkpoints.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes a fuzzy checkpoint (RECOVERY.md R7) while transactions run, and truncates the log
    /// below what restart could need: begin record; dirty pages, transactions, allocation;
    /// data-file sync (pages seen clean are on disk); end record, durable; master record.
    pub(crate) fn checkpoint_classical(&self, pool: &BufferPool) -> crate::error::Result<Lsn> {
        match self.finish_restart(pool)? {
            Some(end) => Ok(end),
            None => self.classical(pool),
        }
    }

    fn classical(&self, pool: &BufferPool) -> crate::error::Result<Lsn> {
        let _one = self.checkpointing.lock();
        let done = self.stats.checkpoints.load(Ordering::Relaxed);
        let result = self.classical_locked(pool);
        self.count_failure(&result, done);
        result
    }

    /// [`Wal::classical`] with `checkpointing` held.
    fn classical_locked(&self, pool: &BufferPool) -> crate::error::Result<Lsn> {
        let begin = self.append(&Record::CheckpointBegin)?;
        // R16: a transaction whose record precedes the begin record is read only once its entry
        // shows that record; one that appends later may be read before or after, since analysis
        // reads its records from the begin record on.
        // Shard by shard: a transaction with a record before the begin record registered before
        // it, so its shard shows it unless it has ended.
        let mut listed: Vec<Arc<TxnShared>> =
            self.txns.iter().flat_map(|shard| shard.lock().values().cloned().collect::<Vec<_>>()).collect();
        listed.sort_unstable_by_key(|t| t.id);
        let mut txns = Vec::new();
        let mut oldest_txn: Option<u64> = None;
        for t in &listed {
            t.wait_not_appending();
            let first = t.first_lsn.load(Ordering::Acquire);
            if first != 0 {
                oldest_txn = Some(oldest_txn.map_or(first, |o| o.min(first)));
            }
            if t.last().0 != 0 {
                txns.push(TxnEntry {
                    txn: t.id,
                    state: t.state(),
                    last_lsn: t.last(),
                    undo_next: Lsn(t.undo_next.load(Ordering::Acquire)),
                });
            }
        }
        let dirty = pool.dirty_pages();
        // Buffer B37: a free or catalog change whose record precedes the begin record is made
        // before the allocation and the catalog are read; a later one's record is after it,
        // and analysis makes it again.
        pool.wait_announced();
        let allocation = pool.allocation();
        pool.sync_file()?;
        let keep = dirty.iter().map(|&(_, rec)| rec.0).chain(oldest_txn).fold(begin.0, u64::min);
        let checkpoint = Checkpoint {
            begin,
            dirty,
            txns,
            page_count: allocation.page_count,
            free: allocation.free_pages,
            catalog: allocation.trees.into_iter().collect(),
            parts: 0,
        };
        self.finish_checkpoint(checkpoint, keep)
    }

    /// R7: the checkpoint's end record, after as many parts as its tables need beyond one
    /// record: each record at most half the log's largest body, counting every entry at its
    /// longest encoding (varints of ten bytes). A dirty page table of a large pool, or the
    /// free pages of a file that shrank, outgrow one record; restart reads them whole
    /// (`restart::read_checkpoint`).
    fn append_checkpoint(&self, mut checkpoint: Checkpoint) -> Result<Lsn, LogError> {
        // The longest encoding of the record's own fields and of each entry.
        const FIXED: usize = 1 + 10 * 8;
        const DIRTY: usize = 20;
        const TXN: usize = 31;
        const FREE: usize = 10;
        fn tree(entry: &(String, PageId)) -> usize {
            20 + entry.0.len()
        }
        fn bytes(c: &Checkpoint) -> usize {
            FIXED
                + c.dirty.len() * DIRTY
                + c.txns.len() * TXN
                + c.free.len() * FREE
                + c.catalog.iter().map(tree).sum::<usize>()
        }
        /// Moves entries from the end of `from` to `to` while `room` lasts.
        fn take<T>(from: &mut Vec<T>, to: &mut Vec<T>, room: &mut usize, cost: impl Fn(&T) -> usize) {
            while let Some(last) = from.last() {
                let c = cost(last);
                if c > *room {
                    return;
                }
                *room -= c;
                to.push(from.pop().expect("looked at"));
            }
        }
        let budget = self.log.max_body() / 2;
        let mut parts = 0;
        while bytes(&checkpoint) > budget {
            let mut part = Checkpoint { begin: checkpoint.begin, ..Checkpoint::default() };
            let mut room = budget.saturating_sub(FIXED);
            take(&mut checkpoint.dirty, &mut part.dirty, &mut room, |_| DIRTY);
            take(&mut checkpoint.free, &mut part.free, &mut room, |_| FREE);
            take(&mut checkpoint.txns, &mut part.txns, &mut room, |_| TXN);
            take(&mut checkpoint.catalog, &mut part.catalog, &mut room, tree);
            if bytes(&part) == FIXED {
                break; // An entry larger than a part: the end record says what is too large.
            }
            self.append(&Record::CheckpointPart(Box::new(part)))?;
            parts += 1;
        }
        checkpoint.parts = parts;
        self.append(&Record::CheckpointEnd(Box::new(checkpoint)))
    }

    /// The end of both kinds of checkpoint (R7, R19): the end record, durable; the master
    /// record; archiving (R17); truncation below `keep` and the archive's end. Called with
    /// `checkpointing` held.
    fn finish_checkpoint(&self, checkpoint: Checkpoint, keep: u64) -> crate::error::Result<Lsn> {
        let end = self.append_checkpoint(checkpoint)?;
        self.log.write_master(end)?;
        // R17: the log is archived before it is truncated, and never truncated past the archive.
        let (keep, archived) = match &self.archive {
            Some(archive) => {
                let archived = self.archive_durable();
                (keep.min(archive.end().map_or(0, |e| e.0)), archived.map(|_| ()))
            }
            None => (keep, Ok(())),
        };
        self.log.truncate_before(Lsn(keep))?;
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        // The checkpoint is complete, but a failed archiving holds the log back: say so.
        archived.inspect_err(|_| {
            self.stats.failed_archiving.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(end)
    }
}

/// Shards of [`PoolLog`]'s table of page writes.
const WRITTEN_SHARDS: usize = 64;

/// Where the page LSN a page's copy must carry (R18) came from: a write of the page, a write
/// eviction left to the log (R21), or instant restart, which left the page to redo (R22). A
/// copy found stale below it is a lost write only in the first case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expected {
    Written,
    Elided,
    Restart,
}

/// One shard of [`PoolLog`]'s table of page writes: page → the page LSN its copy must carry,
/// and where that came from.
type WrittenShard = Mutex<rustc_hash::FxHashMap<u64, (Lsn, Expected)>>;

/// R18: `page`'s copy must carry at least `page_lsn` from now on (a newer version may have
/// been written or elided already: the larger stays, and an equal one takes the newer
/// origin).
fn raise_expected(
    shard: &mut rustc_hash::FxHashMap<u64, (Lsn, Expected)>,
    page: u64,
    page_lsn: Lsn,
    from: Expected,
) {
    let e = shard.entry(page).or_insert((page_lsn, from));
    if page_lsn >= e.0 {
        *e = (page_lsn, from);
    }
}

/// The pool's view of the log (buffer README B18, B20, B25): the WAL rule's flush, a page-write
/// record for every page written back, and single-page recovery (R18).
pub(crate) struct PoolLog {
    log: Arc<LogManager>,
    archive: Option<Arc<Archive>>,
    /// The page LSN of every page's newest write since open (R18's staleness test), sharded by
    /// page id, and where each came from.
    written: Box<[WrittenShard]>,
    /// R22: the pages instant restart left to redo.
    pending: Option<Arc<crate::instant::PendingRedo>>,
    /// B20, R19: whether the pool's page writes are logged. Only decoupled checkpoints read
    /// page-write records; restart's analysis does not trust them (R8).
    page_write_records: bool,
}

impl PoolLog {
    /// The pool's side of `log`; `page_write_records` when decoupled checkpoints will read
    /// them (R19).
    pub(crate) fn new(
        log: Arc<LogManager>,
        archive: Option<Arc<Archive>>,
        page_write_records: bool,
    ) -> PoolLog {
        let written = (0..WRITTEN_SHARDS).map(|_| Mutex::new(rustc_hash::FxHashMap::default())).collect();
        PoolLog { log, archive, written, pending: None, page_write_records }
    }

    /// R22: instant restart left `pages` (each with the page LSN of its newest change) to
    /// redo: their copies count as stale below those LSNs (B25), and a load takes them out of
    /// `pending`.
    pub(crate) fn with_pending(
        mut self,
        pending: Arc<crate::instant::PendingRedo>,
        pages: &[(PageId, Lsn)],
    ) -> PoolLog {
        for &(page, lsn) in pages {
            self.expect(page, lsn, Expected::Restart);
        }
        self.pending = Some(pending);
        self
    }

    fn shard(&self, page: PageId) -> &WrittenShard {
        &self.written[(page.get() as usize) % WRITTEN_SHARDS]
    }

    /// [`raise_expected`] for `page`.
    fn expect(&self, page: PageId, page_lsn: Lsn, from: Expected) {
        raise_expected(&mut self.shard(page).lock(), page.get(), page_lsn, from);
    }

    /// Where the page LSN a copy of `page` carrying `copy_lsn` falls short of came from;
    /// `None` if the copy is not stale.
    fn stale_from(&self, page: PageId, copy_lsn: Lsn) -> Option<Expected> {
        self.shard(page).lock().get(&page.get()).filter(|&&(lsn, _)| copy_lsn < lsn).map(|&(_, from)| from)
    }
}

impl swizzledb_buffer::LogFlush for PoolLog {
    fn flush_to(&self, lsn: Lsn) -> std::io::Result<()> {
        if lsn >= self.log.end() {
            // Not a record of this log's tail (restart's redo stamps record LSNs, which are
            // always below the end): flush everything appended.
            return self.log.flush_all().map_err(std::io::Error::other);
        }
        self.log.flush_urgent(lsn).map_err(std::io::Error::other)
    }

    fn page_written(&self, page: PageId, page_lsn: Lsn) {
        self.expect(page, page_lsn, Expected::Written);
        if !self.page_write_records {
            return;
        }
        // Best effort: a page-write record only helps later analysis (R8 does not rely on it).
        if let Err(e) = append_encoded(&self.log, &Record::PageWrite { page, page_lsn, decoupled: None }) {
            log::warn!("swizzledb: no page-write record for page {page} ({e}); restart redoes more of it");
        }
    }

    fn page_propagated(&self, page: PageId, page_lsn: Lsn, complete_below: Lsn) {
        self.expect(page, page_lsn, Expected::Written);
        // Best effort, as above: without it a decoupled checkpoint keeps the page dirty.
        let record = Record::PageWrite { page, page_lsn, decoupled: Some(complete_below) };
        if let Err(e) = append_encoded(&self.log, &record) {
            log::warn!("swizzledb: no page-write record for page {page} ({e}); checkpoints keep it dirty");
        }
    }

    fn log_end(&self) -> Lsn {
        self.log.end()
    }

    fn log_image(&self, page: PageId, image: &[u8]) -> std::io::Result<Lsn> {
        // R29: a split-off resolved by its image (buffer B36), as a structure record of its own.
        let record =
            Record::Structure { pages: vec![(page, NodeLog::Image(image.to_vec()))], freed: Vec::new() };
        append_encoded(&self.log, &record).map_err(std::io::Error::other)
    }

    fn elide_write(&self, page: PageId, page_lsn: Lsn, rec_lsn: Lsn) -> bool {
        // R21: the changes since the file's copy begin at `rec_lsn` with an image of the page
        // (R3), kept in the log or, once truncated, in the archive.
        let Some(archive) = &self.archive else { return false };
        if archive.begin().is_some_and(|b| b > rec_lsn) {
            return false;
        }
        self.expect(page, page_lsn, Expected::Elided);
        true
    }

    fn expected_page_lsn(&self, page: PageId) -> Option<Lsn> {
        self.shard(page).lock().get(&page.get()).map(|&(lsn, _)| lsn)
    }

    fn page_loaded(&self, page: PageId, _page_lsn: Lsn) {
        if let Some(pending) = &self.pending {
            pending.loaded(page);
        }
    }

    fn repair_page(&self, page: PageId, buf: &mut [u8], damage: &str) -> Result<(), String> {
        // A copy with a good checksum that is a node is only stale: the changes after it are
        // replayed onto it (R18, R22); a damaged one is rebuilt from the page's whole history.
        let copy = (swizzledb_buffer::page::verify(buf, page).is_ok()
            && swizzledb_btree::validate_page(buf).is_ok())
        .then(|| buf.to_vec());
        let stale_from =
            copy.as_ref().and_then(|c| self.stale_from(page, swizzledb_buffer::page::page_lsn(c)));
        // Asked before the repair: the background redo may finish the page while it runs.
        let pending = self.pending.as_ref().filter(|p| p.expected(page).is_some());
        let redone = crate::repair::redo_page(&self.log, self.archive.as_deref(), page, buf.len(), copy)
            .and_then(|p| {
                p.ok_or_else(|| crate::error::Error::PageUnrecoverable {
                    page,
                    reason: "the page is free at the end of its history".into(),
                })
            });
        match redone {
            Ok(rebuilt) => {
                buf.copy_from_slice(&rebuilt);
                let lsn = swizzledb_buffer::page::page_lsn(buf);
                match pending {
                    // R22: instant restart's redo on fetch, the normal course of things.
                    Some(pending) => {
                        pending.redone_on_fetch(page);
                        log::debug!("page {page} redone on fetch (instant restart), to page LSN {lsn}");
                    }
                    // R22: no longer pending — the fix read the copy (under the page's file
                    // lock, buffer B25) just before the background redo took the page and
                    // brought it forward in the file; both redid it.
                    None if stale_from == Some(Expected::Restart) => log::debug!(
                        "page {page} redone on fetch (instant restart; its copy was read just before the \
                         background redo wrote it), to page LSN {lsn}"
                    ),
                    // R21: its newest version was left to the log when it was evicted.
                    _ if stale_from == Some(Expected::Elided) => log::debug!(
                        "page {page} redone on fetch (its last write was elided), to page LSN {lsn}"
                    ),
                    _ => log::warn!(
                        "page {page} failed its check on load ({damage}); rebuilt by single-page recovery from the log, \
                         to page LSN {lsn}"
                    ),
                }
                Ok(())
            }
            Err(e) => {
                log::error!(
                    "page {page} failed its check on load ({damage}), and single-page recovery failed: {e}"
                );
                Err(e.to_string())
            }
        }
    }
}

/// The [`ChangeLog`] of structure changes made outside any transaction (creating a tree).
pub(crate) struct SystemLog<'a>(pub(crate) &'a Wal);

impl ChangeLog for SystemLog<'_> {
    fn leaf_change(
        &self,
        _tree: PageId,
        _leaf: &ExclusiveGuard<'_>,
        _change: &LeafChange<'_>,
        _overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        Err("a record change outside a transaction".into())
    }

    fn structure_change(&self, pages: &[PageChange<'_, '_>], freed: &[PageId]) -> Result<Lsn, LogFailure> {
        self.0.log_structure(pages, freed).map_err(failure)
    }
}

pub(crate) use crate::version::Undo;

/// An undo entry copied out of the writer's list, which readers share (K17): rollback works
/// on it without holding the list's mutex.
pub(crate) struct OwnedUndo {
    pub(crate) tree: PageId,
    pub(crate) key: Vec<u8>,
    pub(crate) old: Option<Vec<u8>>,
    pub(crate) prev: Lsn,
}

impl OwnedUndo {
    /// As the rollback's [`Undo`].
    pub(crate) fn as_undo(&self) -> Undo<'_> {
        Undo { tree: self.tree, old: self.old.as_deref(), key: &self.key, prev: self.prev }
    }
}

impl<'u> Undo<'u> {
    /// What restart's rollback reads from a logged change.
    /// `None` for a [`Change::Patch`], whose old value needs the value it was made on.
    pub(crate) fn of(tree: PageId, change: &'u Change, prev: Lsn) -> Option<Undo<'u>> {
        let change = change.borrow()?;
        Some(Undo { tree, old: change.old(), key: change.key(), prev })
    }
}

/// The [`ChangeLog`] of one transaction: chains its records, remembers what rollback needs,
/// and writes compensation records while `compensating` is set (RECOVERY.md R5). Without a log
/// (logging off) it only remembers the undo information.
pub(crate) struct TxnLog<'a> {
    pub(crate) wal: Option<&'a Wal>,
    pub(crate) shared: Arc<TxnShared>,
    /// On a database that keeps versions: the version store its versions go to when it ends
    /// (LOCKS.md K19), and the transaction as a writer — its state for snapshots, and its undo
    /// list, which holds what rollback needs (R5) and, shared with readers, its versions (K17).
    versioned: Option<(&'a Versions, Arc<Writer>)>,
    /// The undo list where no reader looks at it (no version store): no mutex to take.
    own_undo: RefCell<UndoList>,
    /// Whether the transaction changed anything (its undo list is not empty).
    changed: Cell<bool>,
    /// During rollback: the undo-next link of the compensation record being written.
    pub(crate) compensating: Cell<Option<Lsn>>,
    /// During rollback of a pair undone in one replace (`txn::compensate_pair`): the undo-next
    /// link of the records after the first, which the first record's write moves into
    /// `compensating`.
    pub(crate) compensating_then: Cell<Option<Lsn>>,
    /// K22: the keys whose chains hold this transaction's version (its deletes).
    chained: RefCell<Vec<Key>>,
    /// The version store has the transaction's versions, or none were kept: done once.
    retired: Cell<bool>,
    /// R2: the transaction commits with the last leaf change of its next operation (an
    /// auto-commit write: one operation, then commit), which then needs no `Commit` record.
    commit_with_last: Cell<bool>,
    /// R2: the LSN of the leaf record the transaction committed with, once it did.
    committed_by: Cell<Option<Lsn>>,
}

impl Drop for TxnLog<'_> {
    fn drop(&mut self) {
        if let Some((_, w)) = self.versioned.take() {
            Writer::keep(w);
        }
        TxnShared::keep(&self.shared);
    }
}

impl<'a> TxnLog<'a> {
    /// A transaction's log; with `versions`, a writer of versions there (LOCKS.md K17), whose
    /// undo list is the writer's, which readers share.
    pub(crate) fn new(
        wal: Option<&'a Wal>,
        shared: Arc<TxnShared>,
        versions: Option<&'a Versions>,
    ) -> TxnLog<'a> {
        TxnLog {
            wal,
            shared,
            versioned: versions.map(|v| (v, Writer::new())),
            // The writer's list keeps its buffers from one transaction to the next.
            own_undo: RefCell::new(if versions.is_some() {
                UndoList::default()
            } else {
                UndoList::take_spare()
            }),
            changed: Cell::new(false),
            compensating: Cell::new(None),
            compensating_then: Cell::new(None),
            chained: RefCell::new(Vec::new()),
            retired: Cell::new(false),
            commit_with_last: Cell::new(false),
            committed_by: Cell::new(None),
        }
    }

    /// R2: the transaction is one operation, to be committed at once (an auto-commit write):
    /// the operation's last leaf change, if the tree says it is the last
    /// ([`ChangeLog::last_leaf_change`]), commits it.
    pub(crate) fn commit_with_last_change(&self) {
        self.commit_with_last.set(true);
    }

    /// R2: the LSN of the leaf record the transaction committed with, if it did.
    pub(crate) fn committed_by(&self) -> Option<Lsn> {
        self.committed_by.get()
    }

    /// The transaction as a writer of versions, on a database that keeps them (K17).
    pub(crate) fn writer(&self) -> Option<&Arc<Writer>> {
        self.versioned.as_ref().map(|(_, w)| w)
    }

    /// `f` on the undo list, where it lives: the writer's (behind its mutex) on a database that
    /// keeps versions, else the transaction's own.
    fn with_undo<R>(&self, f: impl FnOnce(&mut UndoList) -> R) -> R {
        match &self.versioned {
            Some((_, w)) => f(&mut w.undo.lock()),
            None => f(&mut self.own_undo.borrow_mut()),
        }
    }

    /// K18: the transaction commits now (its commit record was appended, and none of its locks
    /// is released yet).
    pub(crate) fn commit_versions(&self) {
        if let (Some((v, w)), true) = (&self.versioned, self.changed.get()) {
            v.commit(w);
            COMMIT_POINT.reached(WriterAt::Committed);
        }
    }

    /// K19: the transaction ended, committed or rolled back, before its locks are released:
    /// the versions a snapshot may need go to the chains, and its undo list is emptied (its
    /// buffers kept for the thread's next transaction: in the writer, unless a chain holds
    /// it). Done once; later calls do nothing.
    pub(crate) fn finish_versions(&self) {
        if self.retired.replace(true) {
            return;
        }
        match &self.versioned {
            Some((v, w)) if self.changed.get() => {
                if let Some(list) = v.retire(w, self.chained.take()) {
                    list.recycle();
                }
                COMMIT_POINT.reached(WriterAt::Retired);
            }
            // A writer that changed nothing has an empty list.
            Some(_) => {}
            None => self.own_undo.take().recycle(),
        }
    }

    /// Entry `i` of the undo list (0 is the oldest), copied out, for rollback.
    pub(crate) fn undo_entry(&self, i: usize) -> OwnedUndo {
        self.with_undo(|list| {
            let u = list.get(i);
            OwnedUndo { tree: u.tree, key: u.key.to_vec(), old: u.old.map(<[u8]>::to_vec), prev: u.prev }
        })
    }

    /// How many changes the undo list holds.
    pub(crate) fn undo_len(&self) -> usize {
        self.with_undo(|list| list.len())
    }

    /// Appends one of this transaction's records, linking it to the previous one. Without a
    /// log, nothing is written and the LSN is 0.
    pub(crate) fn append<R: Encode>(&self, make: impl FnOnce(Lsn) -> R) -> Result<Lsn, LogError> {
        self.append_then(make, |_| {})
    }

    /// [`TxnLog::append`], then `update` of the transaction's entry with the record's LSN, the
    /// two marked as one step (R16): a checkpoint whose begin record follows the record waits
    /// until the entry shows it.
    pub(crate) fn append_then<R: Encode>(
        &self,
        make: impl FnOnce(Lsn) -> R,
        update: impl FnOnce(Lsn),
    ) -> Result<Lsn, LogError> {
        let Some(wal) = self.wal else { return Ok(Lsn(0)) };
        let prev = self.shared.last();
        let record = make(prev);
        // R16: marked before the record gets its LSN, cleared once the entry shows it.
        self.shared.appending.store(true, Ordering::SeqCst);
        let appended = wal.append(&record);
        if let Ok(lsn) = appended {
            test_point::reached(&record);
            self.shared.last_lsn.store(lsn.0, Ordering::Release);
            // Only this transaction's thread sets it; looked at first, because a
            // read-modify-write here would wait for the record's stores to drain (wal W5).
            if self.shared.first_lsn.load(Ordering::Relaxed) == 0 {
                self.shared.first_lsn.store(lsn.0, Ordering::Release);
            }
            update(lsn);
        }
        self.shared.appending.store(false, Ordering::Release);
        appended
    }
}

impl ChangeLog for TxnLog<'_> {
    fn leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        self.log_leaf(tree, leaf, change, overflow, false)
    }

    fn last_leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        // R2: a CLR never commits (rollback ends with its own record).
        let commits = self.commit_with_last.get() && self.compensating.get().is_none() && self.wal.is_some();
        self.log_leaf(tree, leaf, change, overflow, commits)
    }

    fn structure_change(&self, pages: &[PageChange<'_, '_>], freed: &[PageId]) -> Result<Lsn, LogFailure> {
        match self.wal {
            Some(wal) => wal.log_structure(pages, freed).map_err(failure),
            None => Ok(Lsn(0)),
        }
    }
}

impl TxnLog<'_> {
    /// A leaf change's record (T11); with `commits`, the transaction commits with it (R2): its
    /// state is committed from the record's LSN on, in the same step as its entry shows the
    /// record (R16).
    fn log_leaf(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
        commits: bool,
    ) -> Result<Lsn, LogFailure> {
        debug_assert!(self.committed_by.get().is_none(), "R2: no change after the record that committed");
        let txn = self.shared.id;
        let undo_next = self.compensating.get();
        if let Some(then) = self.compensating_then.take() {
            // R5: the second record of a pair's replace links past the pair.
            self.compensating.set(Some(then));
        }
        let page = leaf.page_id();
        // R3: the leaf holds a recovery LSN before the record exists. Its first change since it
        // was written carries no image: the file's copy is whole (the double-write area puts
        // back a torn write before restart reads it), and redo starts from it.
        if let Some(wal) = self.wal {
            if leaf.rec_lsn() == Lsn(0) {
                leaf.hold_rec_lsn(wal.log.end());
            }
        }
        // The new value's overflow pages hold a recovery LSN before the record exists (R3); redo
        // rebuilds them from the record (btree README T22).
        // (The log's end is read only when there is a chain: its cache line is the one every
        // append swaps.)
        if let (Some(wal), false) = (self.wal, overflow.chain.is_empty()) {
            let bound = wal.log.end();
            for g in overflow.chain {
                g.hold_rec_lsn(bound);
            }
        }
        let chain: Vec<PageId> = overflow.chain.iter().map(ExclusiveGuard::page_id).collect();
        let freed = overflow.freed;
        // A value in an overflow chain (new or replaced) is logged whole (T22).
        let inline = chain.is_empty() && freed.is_empty();
        let undo_prev = Cell::new(Lsn(0));
        let lsn = self
            .append_then(
                |prev| {
                    undo_prev.set(prev);
                    LeafRecord {
                        head: LeafHead { txn, prev, undo_next, tree, page, chain: &chain, freed, commits },
                        change: *change,
                        inline,
                    }
                },
                // A compensation record is never undone; the chain continues at its undo-next
                // link.
                |lsn| {
                    self.shared.undo_next.store(undo_next.unwrap_or(lsn).0, Ordering::Release);
                    if commits {
                        self.shared.set_state(TxnState::Committed);
                        self.committed_by.set(Some(lsn));
                    }
                },
            )
            .map_err(failure)?;
        if undo_next.is_none() {
            // K17: the value the change replaces, for rollback and for the snapshots that must
            // not see it; under the leaf's exclusive latch, before the change is made. The
            // key's lock head names this writer already (`LockManager::lock_to_write`).
            let (key, old) = (change.key(), change.old());
            self.with_undo(|list| list.push(tree, key, old, undo_prev.get()));
            self.changed.set(true);
            // K22: a delete puts the writer's version in the key's chain and the key in the
            // ordered index; its before-image (the first change's old value) stays in the list
            // pushed above until the writer ends (K17, K20).
            if let (Some((v, w)), LeafChange::Delete { .. }) = (&self.versioned, change) {
                if let Some(k) = v.record_delete(w, tree, key) {
                    self.chained.borrow_mut().push(k);
                }
            }
        }
        Ok(lsn)
    }
}

/// Pause points for the deterministic race tests (R16): a test installs a hook that runs where a
/// transaction has appended a record and not yet updated its table entry. Nothing outside unit
/// tests.
pub(crate) mod test_point {
    #[cfg(test)]
    use crate::record::{Encode, Record};

    #[cfg(test)]
    pub(crate) type Hook = std::sync::Arc<dyn Fn(&Record) + Send + Sync>;

    #[cfg(test)]
    pub(crate) static HOOK: parking_lot::Mutex<Option<Hook>> = parking_lot::Mutex::new(None);

    /// The hook sees the record as restart would decode it. It runs without the hook's mutex
    /// held, so that other threads append (and reach it) while it pauses one.
    #[cfg(test)]
    pub(crate) fn reached(record: &impl Encode) {
        let hook = HOOK.lock().clone();
        if let Some(h) = hook {
            let body = record.encode_into(Vec::new());
            h(&Record::decode(&body).expect("an encoded record decodes"));
        }
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn reached<R>(_: &R) {}
}

/// Where a writer that changed something is as it ends, for the race tests' pause point
/// [`COMMIT_POINT`] (K18, K19); it has let none of its locks go yet at either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriterAt {
    /// Committed: its state holds its commit timestamp.
    Committed,
    /// Ended (committed or rolled back) and its undo list emptied (`Versions::retire`).
    Retired,
}

/// The race tests' pause point (`crate::pause`) in a writer's end.
pub(crate) static COMMIT_POINT: crate::pause::Point<WriterAt> = crate::pause::Point::new();

/// A background thread that runs a task every interval until stopped (by `Database::close` or
/// drop).
pub(crate) struct Periodic {
    stop: Arc<(Mutex<bool>, parking_lot::Condvar)>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Periodic {
    pub(crate) fn start(
        name: &str,
        every: std::time::Duration,
        mut task: impl FnMut() + Send + 'static,
    ) -> Periodic {
        let stop = Arc::new((Mutex::new(false), parking_lot::Condvar::new()));
        let signal = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || loop {
                {
                    let mut stopped = signal.0.lock();
                    if !*stopped {
                        signal.1.wait_for(&mut stopped, every);
                    }
                    if *stopped {
                        return;
                    }
                }
                task();
            })
            .inspect_err(|e| {
                log::error!("swizzledb: the {name} thread could not start ({e}); its work is not done")
            })
            .ok();
        Periodic { stop, handle }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            *self.stop.0.lock() = true;
            self.stop.1.notify_all();
            let name = handle.thread().name().unwrap_or("background").to_owned();
            if handle.join().is_err() {
                log::error!("swizzledb: the {name} thread panicked");
            }
        }
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The background checkpointer: a fuzzy checkpoint every interval (RECOVERY.md R7). A failed
/// checkpoint is counted and retried at the next interval; the log's own failure is sticky, so
/// nothing is lost by waiting.
pub(crate) fn start_checkpointer(
    wal: Arc<Wal>,
    pool: Arc<BufferPool>,
    every: std::time::Duration,
) -> Periodic {
    Periodic::start("swizzledb-checkpointer", every, move || {
        match wal.checkpoint(&pool) {
            Ok(_) => {
                log::debug!("swizzledb checkpointer: a checkpoint was taken");
                wal.stats.background_checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            // Counted in `failed` where it failed (`Wal::count_failure`).
            Err(e) => {
                log::warn!("swizzledb checkpointer: a checkpoint failed ({e}); retrying at the next interval")
            }
        }
    })
}

/// The background merger (R17): merges the archive's runs by size tiers every interval, beside
/// the archiver, so that a long merge never holds archiving up (wal README A8).
pub(crate) fn start_merger(wal: Arc<Wal>, every: std::time::Duration) -> Periodic {
    wal.background_merges.store(true, Ordering::Release);
    Periodic::start("swizzledb-merger", every, move || match wal.merge_tiers() {
        Ok(()) => log::trace!("swizzledb merger: a round ended"),
        Err(e) => {
            log::warn!("merging the log archive's runs failed ({e}); retrying at the next interval");
            wal.stats.failed_archiving.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// The background archiver (R17): archives the durable log every interval, so that the archive
/// — and with it the analysis state instant restart reads (R22) — trails the log by about one
/// interval, and checkpoints find little left to archive. A failure is counted and retried.
pub(crate) fn start_archiver(wal: Arc<Wal>, every: std::time::Duration) -> Periodic {
    Periodic::start("swizzledb-archiver", every, move || {
        match wal.archive_background() {
            Ok(Some(run)) => {
                log::debug!(
                    "swizzledb archiver: archived {}..{} ({} changes of {} pages)",
                    run.begin,
                    run.end,
                    run.entries,
                    run.pages
                );
                wal.stats.background_archivings.fetch_add(1, Ordering::Relaxed)
            }
            Ok(None) => {
                log::trace!("swizzledb archiver: nothing new to archive");
                0
            }
            Err(e) => {
                log::warn!("archiving the log failed ({e}); retrying at the next interval");
                wal.stats.failed_archiving.fetch_add(1, Ordering::Relaxed)
            }
        };
    })
}

/// Checkpoint counters.
#[derive(Debug, Default)]
pub(crate) struct WalStats {
    pub(crate) checkpoints: AtomicU64,
    pub(crate) background_checkpoints: AtomicU64,
    pub(crate) failed_checkpoints: AtomicU64,
    pub(crate) failed_archiving: AtomicU64,
    pub(crate) decoupled_checkpoints: AtomicU64,
    pub(crate) decoupled_scanned_bytes: AtomicU64,
    /// Records the archiver read from the log (R17, R22).
    pub(crate) archived_records: AtomicU64,
    /// Runs the background archiver added.
    pub(crate) background_archivings: AtomicU64,
}

/// Which checkpoints a logged database takes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointKind {
    /// Fuzzy checkpoints from the pool's descriptors and the transaction table (RECOVERY.md
    /// R7).
    #[default]
    Classical,
    /// Decoupled (log-based) checkpoints: the previous checkpoint carried forward by analysis
    /// of the log since (RECOVERY.md R19; Lersch 2015, ch. 3). They read no in-memory
    /// structure, at the cost of reading the log written since the previous checkpoint.
    Decoupled,
}

/// Checkpoints taken since the database opened.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointStats {
    /// Every checkpoint that completed (open, close, background, cleaner, explicit).
    pub checkpoints: u64,
    /// Those the background thread took.
    pub background: u64,
    /// Checkpoints that failed (not counted in `checkpoints`), whoever took them: the
    /// background thread, the page cleaner, [`Database::checkpoint`](crate::Database::checkpoint)
    /// or close. One that completed and only then failed to archive is counted in
    /// `checkpoints` and `failed_archiving`, not here.
    pub failed: u64,
    /// Archivings that failed (R17): a checkpoint's (which completed otherwise) or the
    /// background archiver's.
    pub failed_archiving: u64,
    /// Decoupled checkpoints (R19) among `checkpoints`.
    pub decoupled: u64,
    /// Bytes of log record bodies the decoupled checkpoints read.
    pub decoupled_scanned_bytes: u64,
}

impl WalStats {
    pub(crate) fn snapshot(&self) -> CheckpointStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CheckpointStats {
            checkpoints: l(&self.checkpoints),
            background: l(&self.background_checkpoints),
            failed: l(&self.failed_checkpoints),
            failed_archiving: l(&self.failed_archiving),
            decoupled: l(&self.decoupled_checkpoints),
            decoupled_scanned_bytes: l(&self.decoupled_scanned_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R17: archivings of any pattern of sizes, each followed by the tiers' merges: the runs
    /// stay few, and each merge at least doubles the run each rewritten byte is in (so each
    /// byte is rewritten logarithmically often). Among the patterns, a burst between archivings
    /// of little (every size ratio of the newest runs above four: the old rule never merged)
    /// and a burst every eighth archiving (one run always above half the newest eight).
    #[test]
    fn r17_tier_merges_keep_runs_few_for_any_pattern_of_sizes() {
        let run = |bytes: u64| RunSummary {
            begin: Lsn(0),
            end: Lsn(1),
            entries: 1,
            pages: 1,
            bytes,
            state_bytes: 0,
        };
        type Sizes = fn(u64) -> u64;
        let patterns: [(&str, Sizes); 4] = [
            ("even", |_| 100 << 10),
            ("alternating", |i| if i % 2 == 0 { 1 << 20 } else { 200 }),
            ("every eighth", |i| if i % 8 == 0 { 64 << 20 } else { 200 }),
            ("ragged", |i| (i.wrapping_mul(2_654_435_761) % 4_000_000).max(1)),
        ];
        for (name, size) in patterns {
            let mut runs: Vec<RunSummary> = Vec::new();
            let (mut written, mut rewritten) = (0u64, 0u64);
            for i in 0..5_000u64 {
                runs.push(run(size(i)));
                written += size(i);
                while let Some((first, n)) = tier_merge(&runs) {
                    let piled_up = runs.len() > MAX_RUNS;
                    let inputs: Vec<RunSummary> = runs.drain(first..first + n).collect();
                    let merged: u64 = inputs.iter().map(|r| r.bytes).sum();
                    if !piled_up {
                        let largest = inputs.iter().map(|r| r.bytes.max(MERGE_FLOOR_BYTES)).max().unwrap();
                        let floored: u64 = inputs.iter().map(|r| r.bytes.max(MERGE_FLOOR_BYTES)).sum();
                        assert!(2 * largest <= floored, "{name}: a merge of {inputs:?}");
                    }
                    rewritten += merged;
                    runs.insert(first, run(merged));
                }
                assert!(runs.len() <= MAX_RUNS, "{name}, archiving {i}: {} runs", runs.len());
            }
            // Past MAX_RUNS only for a burst every eighth archiving exactly; about four
            // rewrites per byte (log8 of 5,000 archivings), about five for that one.
            let few = if name == "every eighth" { MAX_RUNS } else { 16 };
            assert!(runs.len() <= few, "{name}: {} runs", runs.len());
            assert!(rewritten <= 6 * written, "{name}: {rewritten} bytes rewritten for {written}");
        }
    }

    /// A transaction's entry is reused by the thread's next transaction only once nothing else
    /// holds it (the log's table of running transactions, a checkpoint looking at it); reused,
    /// it starts as a new transaction's.
    #[test]
    fn a_transaction_entry_still_held_is_never_reused() {
        let first = TxnShared::arc(TxnId(64));
        first.last_lsn.store(500, Ordering::SeqCst);
        TxnShared::keep(&first);
        let next = TxnShared::arc(TxnId(128));
        assert!(!Arc::ptr_eq(&first, &next), "an entry still held went to the next transaction");
        assert_eq!((first.id, first.last_lsn.load(Ordering::SeqCst)), (TxnId(64), 500));

        next.last_lsn.store(700, Ordering::SeqCst);
        let at = Arc::as_ptr(&next);
        TxnShared::keep(&next);
        drop(next);
        assert!(crate::version::holds_spare(&SPARE_SHARED), "the finished transaction's entry was not kept");
        let again = TxnShared::arc(TxnId(192));
        assert_eq!(Arc::as_ptr(&again), at, "an entry nothing holds is kept for the thread");
        assert_eq!((again.id, again.last_lsn.load(Ordering::SeqCst)), (TxnId(192), 0));
    }

    /// R18: a page's expected LSN only rises, and says where it came from: an equal LSN takes
    /// the newer origin (an elided version later written, or a pending page written back).
    #[test]
    fn r18_the_expected_page_lsn_rises_and_keeps_its_origin() {
        let mut shard = rustc_hash::FxHashMap::default();
        raise_expected(&mut shard, 7, Lsn(100), Expected::Restart);
        raise_expected(&mut shard, 7, Lsn(90), Expected::Written);
        assert_eq!(shard[&7], (Lsn(100), Expected::Restart), "an older write changes nothing");
        raise_expected(&mut shard, 7, Lsn(100), Expected::Written);
        assert_eq!(shard[&7], (Lsn(100), Expected::Written));
        raise_expected(&mut shard, 7, Lsn(120), Expected::Elided);
        assert_eq!(shard[&7], (Lsn(120), Expected::Elided));
        raise_expected(&mut shard, 8, Lsn(5), Expected::Written);
        assert_eq!((shard[&7].0, shard[&8]), (Lsn(120), (Lsn(5), Expected::Written)));
    }

    #[test]
    fn r5_undo_list_keeps_keys_and_old_values_and_is_reused_empty() {
        let tree = PageId::new(7).unwrap();
        let mut list = UndoList::take_spare();
        list.push(tree, b"a", None, Lsn(1));
        list.push(tree, b"bb", Some(b"old"), Lsn(2));
        list.push(tree, b"", Some(b""), Lsn(3));
        assert_eq!(list.len(), 3);
        let got: Vec<_> = (0..3).map(|i| list.get(i)).map(|u| (u.key, u.old, u.prev, u.tree)).collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], None, Lsn(1), tree),
                (&b"bb"[..], Some(&b"old"[..]), Lsn(2), tree),
                (&b""[..], Some(&b""[..]), Lsn(3), tree),
            ]
        );
        list.recycle();
        let again = UndoList::take_spare();
        assert_eq!(again.len(), 0, "a reused list starts empty");
        assert!(again.capacity() > 0, "and keeps its buffer");
    }
}
