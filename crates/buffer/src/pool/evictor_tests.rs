//! B31: the background evictor keeps free frames ready and writes the dirty victims, so that
//! misses neither evict nor write; it stops with the pool, and its failures lose nothing.

use super::race_tests::{smallest_config, Owner};
use super::*;
use crate::page::HEADER_SIZE;
use std::time::{Duration, Instant};
use swizzledb_io::{FaultFs, Vfs};

const DATA: usize = HEADER_SIZE + 8;

fn pool(fs: &FaultFs, mode: PoolMode, frames: usize) -> Arc<BufferPool> {
    fs.create_dir_all(Path::new("/b")).unwrap();
    let config = PoolConfig { pool_bytes: frames * 4096, ..smallest_config(fs, mode, None) };
    Arc::new(BufferPool::create(Path::new("/b/db"), &config, Arc::new(Owner)).unwrap())
}

/// Waits until `cond` holds, for at most 10 s.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// This thread's own counters (B12): what the misses of the test thread did, not the
/// evictor's.
fn mine(pool: &BufferPool) -> (u64, u64, u64) {
    pool.count(|b| (b.evictions.load(Relaxed), b.victim_writes.load(Relaxed), b.write_backs.load(Relaxed)))
}

#[test]
fn b31_with_the_evictor_keeping_up_a_miss_neither_evicts_nor_writes() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let fs = FaultFs::new();
        let pool = pool(&fs, mode, 256);
        let mut evictor = pool.start_evictor().unwrap().expect("a disk pool runs an evictor");
        assert!(pool.evictor_target() > pool.high_watermark && pool.high_watermark > pool.low_watermark);
        // Four times as many dirty pages as frames. Before each allocation the free frames are
        // at least the low watermark, so no miss of this thread has to evict (B13): the
        // evictor, nudged below the high watermark, has refilled them.
        let mut pages = Vec::new();
        for i in 0..4 * 256u32 {
            eventually("the evictor refilled the free frames", || {
                pool.free_count.load(Relaxed) >= pool.low_watermark
            });
            let mut g = pool.allocate_page().unwrap();
            g[DATA] = i as u8;
            pages.push(g.page_id());
        }
        assert_eq!(mine(&pool), (0, 0, 0), "{mode}: the test thread evicted or wrote");
        let s = pool.stats();
        assert!(s.evictor_rounds > 0 && s.evictor_evictions >= 3 * 256 - 16, "{mode}: {s:?}");
        assert!(s.evictor_writes > 0 && s.evictor_writes <= s.victim_writes, "{mode}: {s:?}");
        assert_eq!(s.free_frame_waits, 0, "{mode}: {s:?}");
        // Reading the pages back misses on most of them; still no eviction by this thread.
        for (i, &pid) in pages.iter().enumerate() {
            eventually("the evictor refilled the free frames", || {
                pool.free_count.load(Relaxed) >= pool.low_watermark
            });
            let g = pool.fix_page::<crate::guard::Shared>(pid).unwrap();
            assert_eq!(g[DATA], i as u8, "{mode}: page {pid} lost its change");
        }
        assert_eq!(mine(&pool).0, 0, "{mode}: the test thread evicted");
        evictor.stop();
        pool.check_invariants().unwrap();
    }
}

#[test]
fn b31_an_evictor_is_started_once_per_pool_and_never_for_main_memory() {
    let fs = FaultFs::new();
    let p = pool(&fs, PoolMode::Swizzling, 64);
    let first = p.start_evictor().unwrap().unwrap();
    assert!(matches!(p.start_evictor(), Err(BufferError::Config(_))), "a second evictor");
    drop(first); // stops and joins
    let again = p.start_evictor().unwrap();
    assert!(again.is_some(), "a stopped evictor can be started again");
    drop(again);
    let fs = FaultFs::new();
    assert!(pool(&fs, PoolMode::MainMemory, 64).start_evictor().unwrap().is_none());
}

/// B22, B31: `close` stops the evictor before its flush, so nothing is written after the file is
/// marked clean; the handle then joins at once, and the file reopens clean with every page.
#[test]
fn b31_close_stops_the_evictor_and_the_file_is_clean() {
    let fs = FaultFs::new();
    let p = pool(&fs, PoolMode::Swizzling, 64);
    let evictor = p.start_evictor().unwrap().unwrap();
    let pages: Vec<PageId> = (0..500u32)
        .map(|i| {
            let mut g = p.allocate_page().unwrap();
            g[DATA] = i as u8;
            g.page_id()
        })
        .collect();
    p.close().unwrap();
    assert!(!p.evictor.running.load(Relaxed));
    let writes = p.stats().pages_written;
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(p.stats().pages_written, writes, "a page written after close");
    drop(evictor);
    let config = PoolConfig { pool_bytes: 64 * 4096, ..smallest_config(&fs, PoolMode::Swizzling, None) };
    let reopened = BufferPool::open(Path::new("/b/db"), &config, Arc::new(Owner)).unwrap();
    assert!(reopened.file_state().clean);
    for (i, &pid) in pages.iter().enumerate() {
        let g = reopened.fix_page::<crate::guard::Shared>(pid).unwrap();
        assert_eq!(g[DATA], i as u8, "page {pid}");
    }
}

/// B31, F4: the file fails a write of the evictor's. The evictor counts the failure and backs
/// off; the next miss that needs a write gets the typed, sticky error; no page is lost (every
/// dirty page is still resident with its change) and the pool's invariants hold.
#[test]
fn b31_a_failed_write_of_the_evictor_loses_no_page_and_reaches_the_misses() {
    use swizzledb_io::fault::{Fault, FaultRule, Op};
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let fs = FaultFs::new();
        let pool = pool(&fs, mode, 64);
        fs.fail_next(FaultRule::new(Op::Write, Fault::Eio).on_path("/b/db").nth(5));
        let evictor = pool.start_evictor().unwrap().unwrap();
        let mut pages = Vec::new();
        let allocate = |pages: &mut Vec<PageId>| {
            let mut g = pool.allocate_page()?;
            g[DATA] = pages.len() as u8;
            pages.push(g.page_id());
            Ok::<_, BufferError>(())
        };
        // The evictor writes every victim (as in the test above) until its write fails; the
        // file refuses writes from then on (F4), and the misses find out when they must write
        // (or grow the file).
        let err = loop {
            eventually("the evictor refilled the free frames or failed", || {
                pool.free_count.load(Relaxed) >= pool.low_watermark || pool.stats().evictor_failures > 0
            });
            if let Err(e) = allocate(&mut pages) {
                break e;
            }
            assert!(pages.len() < 100 * 64, "{mode}: no miss saw the failed file");
        };
        eventually("the evictor counted its failure", || pool.stats().evictor_failures > 0);
        assert_eq!(mine(&pool).1, 0, "{mode}: the test thread wrote a victim");
        assert!(matches!(&err, BufferError::PreviousIoError { .. }), "{mode}: {err}");
        drop(evictor);
        pool.check_invariants().unwrap();
        for (i, &pid) in pages.iter().enumerate() {
            let g = pool.fix_page::<crate::guard::Shared>(pid).unwrap();
            assert_eq!(g[DATA], i as u8, "{mode}: page {pid}");
        }
        assert!(matches!(pool.flush(), Err(BufferError::PreviousIoError { .. })), "{mode}: sticky (F4)");
    }
}
