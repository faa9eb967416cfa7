//! The pool on a failing file system (README "Failure behaviour", F3, F4): read errors fail the
//! fix and change nothing; write and sync errors are sticky; a failed flush keeps pages dirty;
//! a torn page is reported where it is read.

mod common;

use std::sync::Arc;

use common::*;
use swizzledb_buffer::{BufferError, BufferPool, Exclusive, Lsn, PageId, PoolMode};
use swizzledb_io::fault::{CrashMode, Fault, FaultFs, FaultRule, Op};

/// A pool on `fs` with a root and `leaves` leaves, flushed; returns the pool and the root frame.
fn built(fs: &FaultFs, mode: PoolMode, leaves: u8) -> (BufferPool, swizzledb_buffer::FrameId, Vec<PageId>) {
    let pool = create(fs, &config(Arc::new(fs.clone()), mode, 16, None));
    let mut lsns = Lsns::default();
    let root = make_root(&pool, &mut lsns);
    let pids = (0..leaves).map(|i| add_leaf(&pool, root, i, &mut lsns)).collect();
    pool.flush().expect("flush");
    (pool, root, pids)
}

fn reopen(fs: &FaultFs, mode: PoolMode) -> (BufferPool, swizzledb_buffer::FrameId) {
    let pool = BufferPool::open(db_path(), &config(Arc::new(fs.clone()), mode, 16, None), Arc::new(Owner))
        .expect("open");
    let root = pool.load_root(pool.catalog_get("t").expect("catalog")).expect("root");
    (pool, root)
}

#[test]
fn read_error_fails_the_fix_and_leaves_the_pool_consistent() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let fs = FaultFs::new();
        drop(built(&fs, mode, 8));
        let (pool, root) = reopen(&fs, mode);
        let resident = pool.resident_pages();
        fs.fail_next(FaultRule::new(Op::Read, Fault::Eio).on_path("/t/db"));
        match with_child(&pool, root, 3, |c| c[DATA]) {
            Err(BufferError::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc_eio())),
            other => panic!("{mode}: expected EIO, got {other:?}"),
        }
        assert_eq!(pool.resident_pages(), resident, "{mode}: the frame went back to the free list");
        pool.check_invariants().expect("invariants after a failed read");
        assert_eq!(root_swip(&pool, root, 3) >> 63, 0, "{mode}: the swip was not swizzled");
        assert_eq!(with_child(&pool, root, 3, |c| c[DATA]).expect("retry"), 3, "read errors are not sticky");
        pool.flush().expect("the file is still usable");
    }
}

#[test]
fn write_errors_during_eviction_are_sticky_and_keep_the_victim() {
    for fault in [Fault::Eio, Fault::Enospc] {
        let fs = FaultFs::new();
        let pool = create(&fs, &config(Arc::new(fs.clone()), PoolMode::Swizzling, 16, None));
        let mut lsns = Lsns::default();
        make_root(&pool, &mut lsns);
        fs.fail_next(FaultRule::new(Op::Write, fault).on_path("/t/db"));
        // Fresh pages are dirty: once the pool is full, eviction must write one.
        let failed = (0..40u8).find_map(|i| match pool.allocate_page() {
            Ok(mut leaf) => {
                leaf[DATA] = i;
                None
            }
            Err(e) => Some(e),
        });
        let want = fault.to_io_error().raw_os_error();
        assert!(
            matches!(&failed, Some(BufferError::Io { source, .. }) if source.raw_os_error() == want),
            "{fault:?}: {failed:?}"
        );
        pool.check_invariants().expect("the victim keeps its page");
        assert!(matches!(pool.flush(), Err(BufferError::PreviousIoError { .. })), "{fault:?}: sticky");
    }
}

#[test]
fn flush_after_a_failed_write_or_sync_keeps_pages_dirty() {
    for (op, fault) in [(Op::Write, Fault::Eio), (Op::Write, Fault::Enospc), (Op::Sync, Fault::Eio)] {
        let fs = FaultFs::new();
        let (pool, root, _) = built(&fs, PoolMode::Swizzling, 4);
        with_child(&pool, root, 1, |c| {
            c[DATA] = 77;
            c.set_page_lsn(Lsn(1000));
        })
        .expect("change");
        let dirty = pool.dirty_pages();
        assert_eq!(dirty.len(), 1);
        fs.fail_next(FaultRule::new(op, fault).on_path("/t/db"));
        let err = pool.flush().expect_err("flush fails");
        assert!(matches!(err, BufferError::Io { .. }), "{op:?}/{fault:?}: {err:?}");
        if op == Op::Write {
            assert_eq!(pool.dirty_pages(), dirty, "{fault:?}: the page whose write failed is dirty again");
        }
        assert!(matches!(pool.flush(), Err(BufferError::PreviousIoError { .. })), "{op:?}: sticky");
        pool.check_invariants().expect("invariants");
    }
}

#[test]
fn a_torn_page_write_is_reported_as_corrupted_by_the_fix() {
    let mut outcomes = [0usize; 3];
    for seed in 0..16 {
        let fs = FaultFs::new();
        let (pool, root, pids) = built(&fs, PoolMode::Traditional, 4);
        with_child(&pool, root, 2, |c| c[DATA..].fill(0xEE)).expect("change");
        // Failing the resize after the data pages stops the flush before its sync: the page
        // write stays unsynced.
        fs.fail_next(FaultRule::new(Op::SetLen, Fault::Eio));
        pool.flush().expect_err("the flush stops before its sync");
        assert!(fs.unsynced_changes(db_path()) > 0);
        drop(pool);
        fs.crash(CrashMode::Torn { seed });
        // The metadata page was not rewritten after its last sync, so the file always opens.
        let (pool, root) = reopen(&fs, PoolMode::Traditional);
        match with_child(&pool, root, 2, |c| c[DATA]) {
            Ok(2) => outcomes[0] += 1,
            Ok(0xEE) => outcomes[1] += 1,
            Err(BufferError::Corrupted { page, reason, .. }) => {
                assert_eq!(page, pids[2], "seed {seed}: the torn page is named");
                assert!(reason.contains("checksum"), "{reason}");
                outcomes[2] += 1;
            }
            other => panic!("seed {seed}: {other:?}"),
        }
        pool.check_invariants().expect("invariants");
    }
    assert!(outcomes[2] > 0, "no seed tore the page: {outcomes:?}");
}

#[test]
fn an_exclusive_fix_after_failures_still_works_on_resident_pages() {
    let fs = FaultFs::new();
    let (pool, _root, pids) = built(&fs, PoolMode::Traditional, 4);
    fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).repeating());
    assert!(pool.flush().is_err());
    // Resident pages need no I/O: a fix still works, the data is intact in memory.
    let g = pool.fix_page::<Exclusive>(pids[0]).expect("resident");
    assert_eq!(g[DATA], 0);
}
