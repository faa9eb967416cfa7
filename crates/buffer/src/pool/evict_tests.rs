//! B29: dirty eviction victims are written after the eviction lock is released, under a shared
//! latch, and nothing they held is lost.

use super::race_tests::{smallest_config, Owner};
use super::*;
use crate::page::{self, PageType, HEADER_SIZE};
use std::sync::{OnceLock, Weak};
use swizzledb_io::{FaultFs, Vfs};
use swizzledb_sync::Lsn;

/// A log that checks, at every page write the pool reports (B20), whether the writing thread
/// could take the eviction lock: in a single-threaded test, a held lock is held by the writer.
#[derive(Default)]
struct LockProbe {
    pool: OnceLock<Weak<BufferPool>>,
    writes: Mutex<Vec<(PageId, bool)>>,
}

impl LogFlush for LockProbe {
    fn flush_to(&self, _lsn: Lsn) -> std::io::Result<()> {
        Ok(())
    }

    fn page_written(&self, page: PageId, _page_lsn: Lsn) {
        let pool = self.pool.get().and_then(Weak::upgrade).expect("the pool is alive");
        let under_lock = pool.evict_lock.try_lock().is_none();
        self.writes.lock().push((page, under_lock));
    }
}

const DATA: usize = HEADER_SIZE + 8;

fn pool_with_probe(mode: PoolMode) -> (Arc<BufferPool>, Arc<LockProbe>) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/e")).unwrap();
    let probe = Arc::new(LockProbe::default());
    let config = smallest_config(&fs, mode, Some(probe.clone()));
    let pool = Arc::new(BufferPool::create(Path::new("/e/db"), &config, Arc::new(Owner)).unwrap());
    probe.pool.set(Arc::downgrade(&pool)).ok().unwrap();
    (pool, probe)
}

#[test]
fn b29_dirty_victims_are_written_after_the_eviction_lock_is_released() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let (pool, probe) = pool_with_probe(mode);
        // Four times as many dirty pages as frames: every allocation past the first few evicts.
        let pages: Vec<PageId> = (0..4 * MIN_FRAMES as u8)
            .map(|i| {
                let mut g = pool.allocate_page().unwrap();
                g[DATA] = i;
                g.page_id()
            })
            .collect();
        let s = pool.stats();
        assert!(s.deferred_writes > 0, "{mode}: no dirty victim was deferred: {s:?}");
        assert!(s.victim_writes > 0, "{mode}: no deferred victim was written: {s:?}");
        assert!(s.evictions >= (3 * MIN_FRAMES) as u64, "{mode}: {s:?}");
        let writes = probe.writes.lock().clone();
        assert_eq!(writes.len() as u64, s.write_backs, "{mode}: every write reported once (B20)");
        let under: Vec<_> = writes.iter().filter(|w| w.1).collect();
        assert!(under.is_empty(), "{mode}: pages written under the eviction lock: {under:?}");
        // Nothing was lost: every page reads back with its byte, through evictions again.
        for (i, &pid) in pages.iter().enumerate() {
            let g = pool.fix_page::<crate::guard::Shared>(pid).unwrap();
            assert_eq!(page::page_type(&g), Some(PageType::Leaf));
            assert_eq!(g[DATA], i as u8, "{mode}: page {pid} lost its change");
        }
        pool.check_invariants().unwrap();
    }
}

/// B29: a victim latched by the evicting thread itself cannot be written by it; when nothing
/// else can be freed the fix fails with `PoolExhausted` (the tree's retry, B13) instead of
/// spinning, and succeeds once the latches are released.
#[test]
fn b29_victims_latched_by_the_evicting_thread_give_pool_exhausted_not_a_hang() {
    let (pool, _probe) = pool_with_probe(PoolMode::Traditional);
    let mut held = Vec::new();
    let err = loop {
        match pool.allocate_page() {
            Ok(mut g) => {
                g[DATA] = 1;
                held.push(g);
            }
            Err(e) => break e,
        }
        assert!(held.len() <= MIN_FRAMES, "more pages latched than frames");
    };
    assert!(matches!(err, BufferError::PoolExhausted { .. }), "{err}");
    drop(held);
    pool.make_room().unwrap();
    let g = pool.allocate_page().unwrap();
    drop(g);
    pool.check_invariants().unwrap();
}

/// B29, F14: the third write of the file fails (EIO), in the middle of a batch of victims. The
/// miss that wrote the batch gets the typed error; the file refuses writes from then on (F4);
/// every victim of the failed batch is still resident with its change, and the pool's
/// invariants hold.
#[test]
fn b29_a_failed_write_in_a_victim_batch_reaches_the_miss_and_loses_no_page() {
    use swizzledb_io::fault::{Fault, FaultRule, Op};
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/e")).unwrap();
    let config = smallest_config(&fs, PoolMode::Traditional, None);
    let pool = BufferPool::create(Path::new("/e/db"), &config, Arc::new(Owner)).unwrap();
    fs.fail_next(FaultRule::new(Op::Write, Fault::Eio).on_path("/e/db").nth(3));
    let mut pages = Vec::new();
    let err = loop {
        match pool.allocate_page() {
            Ok(mut g) => {
                g[DATA] = pages.len() as u8;
                pages.push(g.page_id());
            }
            Err(e) => break e,
        }
        assert!(pages.len() < 4 * MIN_FRAMES, "no eviction write failed");
    };
    assert!(
        matches!(&err, BufferError::Io { source, .. } if source.raw_os_error() == Some(libc::EIO)),
        "{err}"
    );
    assert!(pool.stats().deferred_writes > 0);
    pool.check_invariants().unwrap();
    // Eviction goes on: a victim of the failed batch must still count as dirty, or it would be
    // evicted now without a write.
    // (Several batches, so the policy's clock reaches every frame.)
    for _ in 0..20 {
        assert!(pool.make_room().is_err(), "every resident page is dirty and the file refuses writes");
    }
    // Nothing evicted unwritten: every page reads back, from its frame or from a write that
    // completed before the failure.
    for (i, &pid) in pages.iter().enumerate() {
        let g = pool.fix_page::<crate::guard::Shared>(pid).unwrap();
        assert_eq!(g[DATA], i as u8, "page {pid}");
    }
    assert!(matches!(pool.flush(), Err(BufferError::PreviousIoError { .. })), "sticky (F4)");
    pool.check_invariants().unwrap();
}

/// B13: `PoolConfig::eviction_batch = Some(1)` frees one victim per evictioner call, where the
/// default watermarks free several; `Some(0)` is refused.
#[test]
fn b13_an_eviction_batch_of_one_frees_one_victim_per_call() {
    // Victims freed per eviction round, over reads of clean pages four times the pool.
    let per_round = |batch: Option<usize>, mode: PoolMode| {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/e")).unwrap();
        let config = PoolConfig { eviction_batch: batch, ..smallest_config(&fs, mode, None) };
        let pool = BufferPool::create(Path::new("/e/db"), &config, Arc::new(Owner)).unwrap();
        let pages: Vec<PageId> = (0..4 * MIN_FRAMES as u8)
            .map(|i| {
                let mut g = pool.allocate_page().unwrap();
                g[DATA] = i;
                g.page_id()
            })
            .collect();
        pool.flush().unwrap();
        let before = pool.stats();
        for (i, &pid) in pages.iter().enumerate() {
            let g = pool.fix_page::<crate::guard::Shared>(pid).unwrap();
            assert_eq!(g[DATA], i as u8, "{mode}: page {pid} lost its change");
        }
        let s = pool.stats();
        let (evictions, rounds) =
            (s.evictions - before.evictions, s.eviction_rounds - before.eviction_rounds);
        assert!(evictions >= (3 * MIN_FRAMES) as u64, "{mode}, {batch:?}: {s:?}");
        pool.check_invariants().unwrap();
        evictions as f64 / rounds as f64
    };
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        assert_eq!(per_round(Some(1), mode), 1.0, "{mode}: one victim per call");
        let default = per_round(None, mode);
        assert!(default >= 2.0, "{mode}: the default batch freed {default} victims per call");
    }
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/e")).unwrap();
    let config = PoolConfig { eviction_batch: Some(0), ..smallest_config(&fs, PoolMode::Swizzling, None) };
    let err = BufferPool::create(Path::new("/e/db"), &config, Arc::new(Owner)).err().unwrap();
    assert!(matches!(err, BufferError::Config(_)), "{err}");
}
