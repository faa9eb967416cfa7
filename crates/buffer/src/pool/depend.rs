//! Write dependencies (B36): a page whose contents redo rebuilds from another page's history —
//! the new node of a split logged without its image (the engine's lazy split images) — must be
//! *resolved* before that history is lost: before its source's in-place write, free, or image.
//! It is resolved by its own write once a sync of the data file that began after that write
//! has completed, or else by its image, logged now.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use swizzledb_sync::{Lsn, PageId};

use super::{BufferPool, RESIDENT};
use crate::error::{BufferError, Result};
use crate::guard::PageGuard;
use crate::Exclusive;

/// The dependencies of the resident pages (B36).
#[derive(Default)]
pub(crate) struct Dependants {
    /// How many dependants are unresolved: the write paths look no further while it is 0.
    count: AtomicUsize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Source page → its unresolved dependants.
    by_source: FxHashMap<u64, Vec<u64>>,
    /// Dependant page → what the registry knows of it.
    state: FxHashMap<u64, Dependant>,
}

/// One unresolved dependant.
#[derive(Copy, Clone)]
struct Dependant {
    source: u64,
    /// The sync ticket of its write, if it was written.
    written: Option<u64>,
    /// Its place in a chain of dependants: 1 if its source is no dependant (when it was made),
    /// else one more than its source's. Never less than the chain's depth today, as
    /// resolutions only shorten chains.
    depth: u32,
}

/// B36: the longest chain of dependants, each the source of the next (a split of a page that
/// is itself an unresolved split-off). Resolving a dependant resolves its own dependants
/// first, so a chain is resolved as deep as it is long; ascending inserts, which split the
/// newest leaf again and again, would otherwise make a chain of every split of the run.
pub(crate) const MAX_DEPENDANT_DEPTH: u32 = 8;

impl Inner {
    fn remove(&mut self, dependant: u64) -> bool {
        let Some(Dependant { source, .. }) = self.state.remove(&dependant) else { return false };
        if let Some(list) = self.by_source.get_mut(&source) {
            list.retain(|d| *d != dependant);
            if list.is_empty() {
                self.by_source.remove(&source);
            }
        }
        true
    }
}

impl Dependants {
    fn any(&self) -> bool {
        self.count.load(SeqCst) != 0
    }
}

impl BufferPool {
    /// B36: whether any dependant is unresolved (the write paths look no further if not).
    pub(super) fn deps_any(&self) -> bool {
        self.deps.any()
    }

    /// B36: the dependants of `source` that were not written yet.
    pub(super) fn unwritten_dependants(&self, source: PageId) -> Vec<PageId> {
        let inner = self.deps.inner.lock();
        inner
            .by_source
            .get(&source.get())
            .map(|l| {
                l.iter()
                    .filter(|d| inner.state.get(d).is_some_and(|s| s.written.is_none()))
                    .filter_map(|d| PageId::new(*d))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// B36 rule 5: fills in each page's depth in its chain of dependants (`Dependant::depth`; 0
    /// for a page that is no dependant), under one hold of the registry. A dependant is always
    /// deeper than its source: its depth was its source's plus one when it was made, and a
    /// source's depth only falls (to 0, when it is resolved).
    pub(super) fn dependant_depths(&self, pages: &mut [(u32, u64, usize)]) {
        let inner = self.deps.inner.lock();
        for (depth, page, _) in pages {
            *depth = inner.state.get(page).map_or(0, |d| d.depth);
        }
    }

    /// B36: `dependant` (just made, latched exclusively by the caller) is rebuilt by redo from
    /// `source`'s state before the record that made it, until it is resolved.
    pub fn add_dependant(&self, source: &PageGuard<'_, Exclusive>, dependant: &PageGuard<'_, Exclusive>) {
        let (s, d) = (source.page_id().get(), dependant.page_id().get());
        let mut inner = self.deps.inner.lock();
        let depth = inner.state.get(&s).map_or(1, |src| src.depth + 1);
        debug_assert!(depth <= MAX_DEPENDANT_DEPTH, "B36: a chain of dependants longer than its bound");
        if inner.state.insert(d, Dependant { source: s, written: None, depth }).is_none() {
            self.deps.count.fetch_add(1, SeqCst);
        } else {
            debug_assert!(false, "B36: page {d} was made twice");
        }
        inner.by_source.entry(s).or_default().push(d);
    }

    /// B36: `page` was written to the file (called before its frame's recovery LSN is reset).
    pub(super) fn note_dependant_written(&self, page: PageId) {
        if !self.deps.any() {
            return;
        }
        let ticket = self.file.sync_ticket();
        if let Some(dep) = self.deps.inner.lock().state.get_mut(&page.get()) {
            dep.written = Some(ticket);
        }
    }

    /// B36: `page` is freed: it is no longer anyone's dependant, nor anyone's source. Its
    /// dependants were resolved before its structure record was logged
    /// ([`BufferPool::resolve_dependants`]), unless the log failed on the way, which stops
    /// every page write for good (btree T13): then they are simply forgotten.
    pub(super) fn forget_dependant(&self, page: PageId) {
        if !self.deps.any() {
            return;
        }
        let mut inner = self.deps.inner.lock();
        let mut gone = usize::from(inner.remove(page.get()));
        for d in inner.by_source.remove(&page.get()).unwrap_or_default() {
            gone += usize::from(inner.state.remove(&d).is_some());
        }
        self.deps.count.fetch_sub(gone, SeqCst);
    }

    /// B36: `pages` are being freed (their structure record is about to be logged): none of
    /// them is a dependant any more. Their own dependants are resolved next, by the caller.
    pub fn freeing(&self, pages: &[PageId]) {
        if !self.deps.any() {
            return;
        }
        let mut inner = self.deps.inner.lock();
        for p in pages {
            if inner.remove(p.get()) {
                self.deps.count.fetch_sub(1, SeqCst);
            }
        }
    }

    /// B36: whether a split of `source` (latched exclusively by the caller) may make its new
    /// node a dependant of it: unless `source` is itself a dependant at the end of a chain of
    /// eight (`MAX_DEPENDANT_DEPTH`). Otherwise the split logs the new node's image.
    pub fn may_add_dependant(&self, source: PageId) -> bool {
        !self.deps.any()
            || self.deps.inner.lock().state.get(&source.get()).is_none_or(|s| s.depth < MAX_DEPENDANT_DEPTH)
    }

    /// B36: whether `page` is the source of unresolved dependants.
    pub(crate) fn has_dependants(&self, page: PageId) -> bool {
        self.deps.any() && self.deps.inner.lock().by_source.contains_key(&page.get())
    }

    /// B36: resolves every dependant of `source` — by its write, once a data-file sync that
    /// began after it completed (syncing the file if that is all that is missing), or else by
    /// logging its image, its own dependants first — before `source`'s history is lost (its
    /// in-place write, its free, its image). `held` are pages the caller holds latched
    /// exclusively: a dependant among them is read through its guard. With `wait` false a
    /// dependant's latch is only tried: returns `Ok(false)` if one was taken, and `source` must
    /// then not be written. With `wait` the caller holds no latch to the right of or below a
    /// dependant (btree T8: dependants lie to the right of their source, or below it).
    ///
    /// # Errors
    /// The log could not log or flush an image ([`BufferError::Wal`]), or the sync failed.
    pub fn resolve_dependants(
        &self,
        source: PageId,
        wait: bool,
        held: &[&PageGuard<'_, Exclusive>],
    ) -> Result<bool> {
        if !self.deps.any() {
            return Ok(true);
        }
        loop {
            let pending: Vec<(u64, Option<u64>)> = {
                let inner = self.deps.inner.lock();
                let Some(list) = inner.by_source.get(&source.get()) else { return Ok(true) };
                list.iter().map(|d| (*d, inner.state.get(d).and_then(|s| s.written))).collect()
            };
            let mut sync = false;
            for (d, written) in pending {
                match written {
                    Some(t) if self.file.synced_since(t) => self.resolved(d),
                    Some(_) => sync = true,
                    None => {
                        let d = PageId::new(d).expect("a dependant is a data page");
                        if !self.image_dependant(d, wait, held)? {
                            return Ok(false);
                        }
                    }
                }
            }
            if sync {
                self.file.sync()?;
            }
        }
    }

    fn resolved(&self, dependant: u64) {
        if self.deps.inner.lock().remove(dependant) {
            self.deps.count.fetch_sub(1, SeqCst);
        }
    }

    /// B36: logs `page`'s image (its dependants resolved first), raising its recovery LSN to
    /// the log's end before the append, and flushes the log past it. `Ok(true)` also when the
    /// page turned out written meanwhile (the caller looks again).
    fn image_dependant(&self, page: PageId, wait: bool, held: &[&PageGuard<'_, Exclusive>]) -> Result<bool> {
        let Some(log) = self.log.clone() else { return Ok(true) };
        if !self.resolve_dependants(page, wait, held)? {
            return Ok(false);
        }
        let wal_err = |lsn: Lsn, source: std::io::Error| BufferError::Wal {
            file: self.file.path().to_path_buf(),
            page,
            lsn,
            source,
        };
        if let Some(g) = held.iter().find(|g| g.page_id() == page) {
            // The caller holds it exclusively: no split of it can come between (B36).
            let image = self.disk_image(*g);
            let d = self.desc(g.frame());
            raise_rec_lsn(&d.rec_lsn, log.log_end());
            let lsn = log.log_image(page, &image).map_err(|e| wal_err(Lsn(0), e))?;
            log.flush_to(lsn).map_err(|e| wal_err(lsn, e))?;
            self.resolved(page.get());
            return Ok(true);
        }
        let Some(f) = self.table.get(page) else {
            // Not resident: it was written before it left (eviction writes dirty pages).
            self.settle_written(page);
            return Ok(true);
        };
        let d = self.desc(f);
        if wait {
            d.latch.lock_shared();
        } else if !d.latch.try_lock_shared() {
            return Ok(false);
        }
        let result = (|| {
            if d.state.load(Acquire) != RESIDENT || d.page_id.load(Relaxed) != page.get() {
                return Ok(false);
            }
            if self.has_dependants(page) {
                // Split again since its dependants were resolved: look again.
                return Ok(false);
            }
            if d.rec_lsn.load(Acquire) == 0 {
                // Clean: written, and its write noted (before the reset).
                return Ok(false);
            }
            let mut image = vec![0u8; self.page_size];
            // SAFETY: B1 — `f` is latched shared by this thread until the end of this closure.
            image.copy_from_slice(unsafe { self.page(f) });
            self.disk_form(&mut image, &mut Vec::new());
            raise_rec_lsn(&d.rec_lsn, log.log_end());
            let lsn = log.log_image(page, &image).map_err(|e| wal_err(Lsn(0), e))?;
            log.flush_to(lsn).map_err(|e| wal_err(lsn, e))?;
            Ok(true)
        })();
        d.latch.unlock_shared();
        match result {
            Ok(true) => {
                self.resolved(page.get());
                Ok(true)
            }
            // Looked at again by the caller's loop.
            Ok(false) => {
                self.settle_written(page);
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// A dependant found clean or gone: its write was noted, or it is no longer registered.
    fn settle_written(&self, page: PageId) {
        let inner = self.deps.inner.lock();
        debug_assert!(
            inner
                .state
                .get(&page.get())
                .is_none_or(|s| s.written.is_some() || inner.by_source.contains_key(&page.get())),
            "B36: a dependant leaves its frame only written"
        );
    }
}

/// B36: a page whose image is logged needs no redo before it: its recovery LSN moves up to
/// `end` (the log's end before the image's append), unless it is clean (0) or later already.
fn raise_rec_lsn(rec: &std::sync::atomic::AtomicU64, end: Lsn) {
    let mut cur = rec.load(Acquire);
    while cur != 0 && cur < end.0 {
        match rec.compare_exchange_weak(cur, end.0, SeqCst, Acquire) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}
