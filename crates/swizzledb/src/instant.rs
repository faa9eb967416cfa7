//! Instant restart (RECOVERY.md R22; Graefe, Guy and Sauer, as Lersch 2015 Sec. 2.1.1 describes it):
//! `open` reads the analysis state the archiver stored with its newest run instead of scanning
//! the log since the checkpoint, learns from the runs' indexes which pages changed since the
//! checkpoint's redo LSN and the LSN of each one's newest change, and returns. Redo happens per
//! page: on its first fetch (the pool finds the copy stale, buffer B25) or by a background
//! thread that brings the copies in the file forward. The losers' keys are locked at open and
//! the losers rolled back by a background thread (at open, without record locks), through the
//! trees, which fetch — and so redo — only the pages they touch.
//!
//! Until every pending page is redone, no checkpoint may end: the master record keeps naming
//! the checkpoint restart began from, so a crash meanwhile restarts from it again. The first
//! checkpoint asked for meanwhile first finishes the redo itself; the checkpoint that ends it
//! is classical (the one classical restart takes at its end).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use swizzledb_buffer::{page, BufferPool, PageId};
use swizzledb_sync::Lsn;
use swizzledb_wal::{Archive, LogManager};

use crate::error::Result;
use crate::record::TxnEntry;
use crate::restart::{implausible_checkpoint, implausible_page, read_checkpoint, ArchivedState};

/// How a logged database restarts after a crash.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestartMode {
    /// ARIES (RECOVERY.md R8–R10): analysis and redo of the log since the last checkpoint and
    /// undo of the losers, all before `open` returns. Open time grows with the log since the
    /// checkpoint.
    #[default]
    Classical,
    /// Instant restart (RECOVERY.md R22): `open` reads the log archive's analysis state and
    /// index instead of the log, locks the losers' keys and returns; pages are redone on their
    /// first fetch and by a background thread, and the losers rolled back by another (without
    /// record locks, before `open` returns). Needs [`crate::Builder::log_archive`]. When
    /// the archive cannot stand in for the log (it holds no analysis state — written by an
    /// older version, or its last archiving failed —, holds a state or index no engine wrote,
    /// or does not reach back to the checkpoint's redo LSN), restart is classical, and says
    /// so in a `log` message.
    Instant,
}

/// What instant restart needs to begin, read without scanning the log.
pub(crate) struct Plan {
    /// The checkpoint's redo LSN: the smallest recovery LSN of its dirty pages, or its begin.
    pub(crate) redo_from: Lsn,
    /// The archiver's analysis state at the archive's end.
    pub(crate) state: ArchivedState,
}

/// R22: whether instant restart can begin, and from what; `Ok(None)` (with the reason
/// logged) when it must be classical.
///
/// R22, R10: a state or an index no engine wrote — tables a checkpoint of a file of
/// `known_pages` pages could not hold ([`implausible_checkpoint`]), a transaction number beyond
/// any this engine gives, an index entry for page 0 or far beyond the state's pages — cannot
/// stand in for the log either: restart is classical, and reads the log.
///
/// # Errors
/// The checkpoint or the archive's newest run cannot be read.
pub(crate) fn plan(log: &LogManager, archive: Option<&Archive>, known_pages: u64) -> Result<Option<Plan>> {
    let refuse = |why: String| {
        log::info!("instant restart is not possible ({why}); restarting classically");
        Ok(None)
    };
    let Some(archive) = archive else { return refuse("the database keeps no log archive".into()) };
    let Some(master) = crate::restart::last_checkpoint_end(log)? else {
        return refuse("the log holds no checkpoint".into());
    };
    let checkpoint = read_checkpoint(log, master)?;
    let redo_from = checkpoint.dirty.iter().map(|&(_, rec)| rec).fold(checkpoint.begin, Lsn::min);
    match archive.begin() {
        Some(begin) if begin <= redo_from => {}
        begin => {
            return refuse(format!(
                "the log archive begins at {begin:?}, after the checkpoint's redo LSN {redo_from}"
            ))
        }
    }
    let Some((at, bytes)) = archive.newest_state()? else {
        return refuse("the archive's newest run holds no analysis state".into());
    };
    let state = match ArchivedState::decode(at, &bytes) {
        Ok(state) => state,
        Err(why) => return refuse(format!("the archive's analysis state at {at} is unreadable: {why}")),
    };
    if let Some(why) = implausible_checkpoint(&state.tables, known_pages) {
        return refuse(format!("the archive's analysis state at {at} is implausible: {why}"));
    }
    if let Err(why) = state.next_txn() {
        return refuse(format!("the archive's analysis state at {at} is implausible: {why}"));
    }
    let page_count = state.tables.page_count;
    let pages = archive.last_lsns_since(redo_from);
    if let Some(why) = pages.iter().find_map(|&(p, _)| match PageId::new(p) {
        Some(p) => implausible_page(p, page_count),
        None => Some("an entry names page 0".into()),
    }) {
        return refuse(format!("the archive's index is implausible: {why}"));
    }
    Ok(Some(Plan { redo_from, state }))
}

/// Shards of the pending set.
const SHARDS: usize = 64;

/// R22: the pages whose copy in the file may lack changes, with the page LSN each must reach;
/// and the work list of the background redo.
pub(crate) struct PendingRedo {
    shards: Box<[Mutex<rustc_hash::FxHashMap<u64, Lsn>>]>,
    remaining: AtomicU64,
    queue: Mutex<Vec<PageId>>,
    /// Set once the redo is complete and the classical checkpoint that ends it is taken.
    pub(crate) finished: Mutex<bool>,
    pub(crate) finished_flag: AtomicBool,
    /// Pending pages redone on fetch (buffer B25).
    pub(crate) redone_on_fetch: AtomicU64,
    /// Pending pages brought forward in the file by the background redo (or a checkpoint that
    /// finished it).
    pub(crate) redone_in_file: AtomicU64,
    /// Pending pages whose copy turned out to be current, or free at the end of their history.
    pub(crate) current: AtomicU64,
    /// Pending pages a fix is redoing (buffer B25), until its load ends ([`PendingRedo::loaded`]).
    redoing_on_fetch: Mutex<rustc_hash::FxHashSet<u64>>,
    /// Losers still being rolled back in the background.
    pub(crate) losers: AtomicU64,
    /// Whether the background rollback ([`UndoThread`]) still runs; cleared when it ends, in
    /// success or failure, with `rolled_back` notified.
    rolling_back: Mutex<bool>,
    rolled_back: parking_lot::Condvar,
}

impl PendingRedo {
    /// `pages`: each page and the page LSN of its newest change.
    pub(crate) fn new(pages: &[(PageId, Lsn)]) -> PendingRedo {
        let shards: Box<[_]> = (0..SHARDS).map(|_| Mutex::new(rustc_hash::FxHashMap::default())).collect();
        for &(id, lsn) in pages {
            shards[id.get() as usize % SHARDS].lock().insert(id.get(), lsn);
        }
        // Page order: the background redo reads the file front to back.
        let mut queue: Vec<PageId> = pages.iter().map(|&(p, _)| p).collect();
        queue.sort_unstable_by(|a, b| b.cmp(a));
        let done = pages.is_empty();
        PendingRedo {
            shards,
            remaining: AtomicU64::new(pages.len() as u64),
            queue: Mutex::new(queue),
            finished: Mutex::new(done),
            finished_flag: AtomicBool::new(done),
            redone_on_fetch: AtomicU64::new(0),
            redone_in_file: AtomicU64::new(0),
            current: AtomicU64::new(0),
            redoing_on_fetch: Mutex::new(rustc_hash::FxHashSet::default()),
            losers: AtomicU64::new(0),
            rolling_back: Mutex::new(false),
            rolled_back: parking_lot::Condvar::new(),
        }
    }

    fn shard(&self, id: PageId) -> &Mutex<rustc_hash::FxHashMap<u64, Lsn>> {
        &self.shards[id.get() as usize % SHARDS]
    }

    /// The page LSN pending page `id` must reach, `None` if it is not pending.
    pub(crate) fn expected(&self, id: PageId) -> Option<Lsn> {
        if self.remaining.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.shard(id).lock().get(&id.get()).copied()
    }

    /// Page `id`'s copy (in the file, or in a frame loaded from it) is redone. Returns whether
    /// it was pending.
    pub(crate) fn done(&self, id: PageId) -> bool {
        if self.remaining.load(Ordering::Acquire) == 0 {
            return false;
        }
        let removed = self.shard(id).lock().remove(&id.get()).is_some();
        if removed {
            self.remaining.fetch_sub(1, Ordering::AcqRel);
        }
        removed
    }

    /// A fix is redoing pending page `id` (buffer B25); its load ([`PendingRedo::loaded`])
    /// then takes it out of the set and counts it as redone on fetch.
    pub(crate) fn redone_on_fetch(&self, id: PageId) {
        self.redoing_on_fetch.lock().insert(id.get());
    }

    /// A fix loaded page `id` into a frame (buffer B28): it is not pending any more. It is
    /// counted once, by whichever takes it out of the set, this load or the background redo
    /// ([`redo_in_file`]): as redone on fetch if the fix redid it, else as current.
    pub(crate) fn loaded(&self, id: PageId) {
        // Every load of the pool comes here while the database runs: once nothing is pending
        // (the usual case) it takes no mutex, as `done` takes none.
        if self.remaining.load(Ordering::Acquire) == 0 {
            return;
        }
        let redone = self.redoing_on_fetch.lock().remove(&id.get());
        if self.done(id) {
            let count = if redone { &self.redone_on_fetch } else { &self.current };
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Pages still pending.
    pub(crate) fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::Acquire)
    }

    /// Whether the redo is complete and its checkpoint taken.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished_flag.load(Ordering::Acquire)
    }

    /// Waits until the background rollback of the losers has ended (at once if there is none):
    /// it changes trees (its compensations, and the structure changes they cause), so whatever
    /// needs a tree no other thread changes (`Tree::verify`) waits for it first.
    pub(crate) fn wait_for_rollback(&self) {
        let mut running = self.rolling_back.lock();
        while *running {
            self.rolled_back.wait(&mut running);
        }
    }

    fn rollback_ended(&self) {
        *self.rolling_back.lock() = false;
        self.rolled_back.notify_all();
    }
}

/// What instant restart's redo has done so far.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedoProgress {
    /// Pages whose redo is still pending.
    pub pending: u64,
    /// Pending pages redone when a fix loaded them.
    pub redone_on_fetch: u64,
    /// Pending pages brought forward in the file by the background redo.
    pub redone_in_file: u64,
    /// Pending pages that needed no redo: their copy in the file turned out to be current
    /// (found by the background redo or by a fix that loaded the page), or the page is free at
    /// the end of its history. Once nothing is pending, `redone_on_fetch + redone_in_file +
    /// current` is [`RestartStats::pages_deferred`](crate::RestartStats::pages_deferred).
    pub current: u64,
    /// Whether the redo is complete and the checkpoint that ends restart is taken.
    pub finished: bool,
    /// Losers still being rolled back in the background (their keys locked until then).
    pub losers: u64,
}

impl PendingRedo {
    pub(crate) fn progress(&self) -> RedoProgress {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RedoProgress {
            pending: self.remaining(),
            redone_on_fetch: l(&self.redone_on_fetch),
            redone_in_file: l(&self.redone_in_file),
            current: l(&self.current),
            finished: self.is_finished(),
            losers: l(&self.losers),
        }
    }
}

/// R22: redoes every pending page in the file (sharing the work with any other thread doing
/// the same), returning once none is pending — or at once, with `Ok(false)`, when `stop` is
/// set.
///
/// # Errors
/// A page could not be read, rebuilt or written; it stays pending (and queued for the next
/// try).
pub(crate) fn drain(
    log: &LogManager,
    archive: Option<&Archive>,
    pool: &BufferPool,
    pending: &PendingRedo,
    stop: &AtomicBool,
) -> Result<bool> {
    let mut buf = vec![0u8; pool.page_size()];
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(false);
        }
        let next = pending.queue.lock().pop();
        match next {
            Some(id) => {
                if let Err(e) = redo_in_file(log, archive, pool, pending, id, &mut buf) {
                    pending.queue.lock().push(id);
                    return Err(e);
                }
            }
            // Pages still pending and not queued are being redone by another thread.
            None if pending.remaining() == 0 => return Ok(true),
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

/// Brings the file's copy of pending page `id` forward under its file lock (buffer B26):
/// every change after the copy's page LSN, from the archive and the log (R18). A page the pool
/// loaded meanwhile is not pending any more; one free at the end of its history needs no
/// contents.
fn redo_in_file(
    log: &LogManager,
    archive: Option<&Archive>,
    pool: &BufferPool,
    pending: &PendingRedo,
    id: PageId,
    buf: &mut [u8],
) -> Result<()> {
    let file = pool.lock_file_page(id);
    let Some(expected) = pending.expected(id) else { return Ok(()) };
    let copy = file
        .read_unchecked(buf)
        .ok()
        .filter(|()| swizzledb_btree::validate_page(buf).is_ok())
        .map(|()| buf.to_vec());
    // Each page is counted once, by whichever takes it out of the set: this redo or a fix's
    // load that raced it ([`PendingRedo::loaded`]).
    if copy.as_ref().is_some_and(|c| page::page_lsn(c) >= expected) {
        if pending.done(id) {
            pending.current.fetch_add(1, Ordering::Relaxed);
        }
        return Ok(());
    }
    // The copy will hold every change of the page logged so far: no later one exists while
    // the page is pending (a change needs a fix, and a fix takes the page out of the set).
    let complete_below = log.durable();
    let count = if let Some(mut page) = crate::repair::redo_page(log, archive, id, pool.page_size(), copy)? {
        file.write(&mut page, complete_below)?;
        &pending.redone_in_file
    } else {
        // Free at the end of its history: nothing to redo, as for a current copy.
        &pending.current
    };
    if pending.done(id) {
        count.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The background redo thread (R22): drains the pending pages, then takes the checkpoint that
/// ends restart (`finish`: the log's `Wal::finish_restart`). A failure is logged; the next
/// checkpoint tries again.
pub(crate) struct RedoThread {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl RedoThread {
    pub(crate) fn start(
        log: Arc<LogManager>,
        archive: Option<Arc<Archive>>,
        pool: Arc<BufferPool>,
        pending: Arc<PendingRedo>,
        finish: impl FnOnce(&BufferPool) -> Result<()> + Send + 'static,
    ) -> RedoThread {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("swizzledb-redo".into())
            .spawn(move || {
                let finished = drain(&log, archive.as_deref(), &pool, &pending, &flag).and_then(|drained| {
                    if drained {
                        finish(&pool)?;
                    }
                    Ok(())
                });
                if let Err(e) = finished {
                    log::error!(
                        "instant restart's background redo failed ({e}); {} pages are still pending, \
                         and the next checkpoint tries again",
                        pending.remaining()
                    );
                }
            })
            .inspect_err(|e| {
                log::error!("instant restart's redo thread could not start ({e}); pages are redone on fetch")
            })
            .ok();
        RedoThread { stop, handle }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.stop.store(true, Ordering::Release);
            if handle.join().is_err() {
                log::error!(
                    "instant restart's redo thread panicked; the next checkpoint redoes what is pending"
                );
            }
        }
    }
}

impl Drop for RedoThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The background undo (R22): rolls back, one after the other, the losers instant restart
/// left holding their keys' locks (`roll_back`: the engine's `Core::finish_loser`), then
/// releases every one's locks (`release`: `Core::finish_txn`) — only once all are rolled
/// back, since a loser's gap may be closed by a key another loser holds. A failure is logged
/// and ends the thread: every loser keeps its locks, and the next restart rolls back those
/// left; `roll_back` has ended the lock waits then (RECOVERY.md R5a, LOCKS.md K9a).
pub(crate) struct UndoThread {
    handle: Option<std::thread::JoinHandle<()>>,
}

impl UndoThread {
    pub(crate) fn start(
        losers: Vec<TxnEntry>,
        pending: Arc<PendingRedo>,
        mut roll_back: impl FnMut(&TxnEntry) -> Result<()> + Send + 'static,
        mut release: impl FnMut(&TxnEntry) + Send + 'static,
    ) -> UndoThread {
        pending.losers.store(losers.len() as u64, Ordering::Release);
        *pending.rolling_back.lock() = true;
        let on_failure = Arc::clone(&pending);
        let handle = std::thread::Builder::new()
            .name("swizzledb-undo".into())
            .spawn(move || {
                // However the thread ends — a panic included — its end is signalled.
                struct Ended(Arc<PendingRedo>);
                impl Drop for Ended {
                    fn drop(&mut self) {
                        self.0.rollback_ended();
                    }
                }
                let ended = Ended(pending);
                let pending = &ended.0;
                for entry in &losers {
                    match roll_back(entry) {
                        Ok(()) => {
                            pending.losers.fetch_sub(1, Ordering::AcqRel);
                        }
                        Err(e) => {
                            log::error!(
                                "instant restart's background rollback of {} failed ({e}); its keys stay \
                                 locked, and the next restart rolls it back",
                                entry.txn
                            );
                            return;
                        }
                    }
                }
                for entry in &losers {
                    release(entry);
                }
            })
            .inspect_err(|e| {
                on_failure.rollback_ended();
                log::error!(
                    "instant restart's undo thread could not start ({e}); the losers stay locked until \
                     the next restart rolls them back"
                )
            })
            .ok();
        UndoThread { handle }
    }

    /// Waits until every loser is rolled back (or the rollback failed).
    pub(crate) fn finish(&mut self) {
        if let Some(handle) = self.handle.take() {
            if handle.join().is_err() {
                log::error!("instant restart's undo thread panicked; the next restart rolls the losers back");
            }
        }
    }
}

impl Drop for UndoThread {
    fn drop(&mut self) {
        self.finish();
    }
}
