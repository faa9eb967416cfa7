//! The WAL seam (README B18–B20): the pool flushes the log to a page's LSN before every page
//! write, keeps a recovery LSN per dirty frame, and reports every page write to the log.

mod common;

use std::sync::Arc;

use common::*;
use swizzledb_buffer::{BufferError, BufferPool, Exclusive, LogFlush, Lsn, PoolMode};
use swizzledb_io::fault::{FaultFs, Op};

/// A pool on a recording file system with the recorder as its log.
fn logged_pool(mode: PoolMode, frames: usize) -> (BufferPool, Arc<Recorder>, FaultFs) {
    let rec = Arc::new(Recorder::default());
    let fs = FaultFs::new();
    let vfs = Arc::new(RecordingFs::new(fs.clone(), rec.clone()));
    let log: Arc<dyn LogFlush> = rec.clone();
    let pool = create(&fs, &config(vfs, mode, frames, Some(log)));
    (pool, rec, fs)
}

/// A traditional-mode pool of 160 frames on a recording file system, with the recorder as its
/// log and a double-write area at `/t/dw` (F15).
fn double_write_pool() -> (BufferPool, Arc<Recorder>, FaultFs) {
    let rec = Arc::new(Recorder::default());
    let fs = FaultFs::new();
    let vfs: Arc<dyn swizzledb_io::Vfs> = Arc::new(RecordingFs::new(fs.clone(), rec.clone()));
    vfs.create_dir_all(std::path::Path::new("/t")).expect("mkdir");
    let area = swizzledb_buffer::DoubleWrite::open(&*vfs, std::path::Path::new("/t/dw"), PS).expect("area");
    let log: Arc<dyn LogFlush> = rec.clone();
    let config = swizzledb_buffer::PoolConfig {
        double_write: Some(Arc::new(area)),
        ..config(vfs, PoolMode::Traditional, 160, Some(log))
    };
    let pool = BufferPool::create(db_path(), &config, Arc::new(Owner)).expect("create pool");
    (pool, rec, fs)
}

#[test]
fn b18_every_page_write_follows_a_log_flush_to_its_lsn_in_every_path_and_mode() {
    for mode in PoolMode::ALL {
        let (frames, leaves) = if mode == PoolMode::MainMemory { (64, 40) } else { (16, 60) };
        let (pool, rec, _fs) = logged_pool(mode, frames);
        let mut lsns = Lsns::default();
        let root = make_root(&pool, &mut lsns);

        // Eviction path: more leaves than frames.
        for i in 0..leaves {
            add_leaf(&pool, root, i as u8, &mut lsns);
        }
        // Change every third leaf again (re-reading evicted ones), under new LSNs.
        for i in (0..leaves).step_by(3) {
            with_child(&pool, root, i, |c| {
                c[DATA] = c[DATA].wrapping_add(100);
                c.set_page_lsn(lsns.next());
            })
            .expect("touch");
        }
        let after_eviction = rec.writes();
        if mode == PoolMode::MainMemory {
            assert_eq!(after_eviction, 1, "{mode}: only the metadata page at create");
        } else {
            assert!(after_eviction > leaves / 2, "{mode}: eviction wrote only {after_eviction} pages");
        }

        // Sweep path (swizzling mode only).
        if mode == PoolMode::Swizzling {
            let freed = pool.sweep_evict(6).expect("sweep");
            assert!(freed > 0, "the sweep freed nothing");
            assert!(rec.writes() > after_eviction, "the sweep wrote no dirty leaf");
        }

        // Flush path.
        let before_flush = rec.writes();
        pool.flush().expect("flush");
        assert!(rec.writes() > before_flush + 1, "{mode}: flush wrote no data page");

        let events = rec.events();
        let logged = check_wal_order(&events);
        assert!(logged > 0, "{mode}: no page with an LSN was written");
        let stats = pool.stats();
        let flushed = events.iter().filter(|e| matches!(e, Event::Flushed(_))).count() as u64;
        let written = events.iter().filter(|e| matches!(e, Event::Written(..))).count() as u64;
        assert_eq!(stats.wal_flushes, flushed, "{mode}: every flush_to is counted");
        assert_eq!(stats.write_backs, written, "{mode}: every page write-back is reported once");
        assert!(pool.dirty_pages().is_empty(), "{mode}: nothing is dirty after a flush");
        pool.check_invariants().expect("invariants");

        // Every change survived: reopen and read every leaf.
        drop(pool);
        let vfs = Arc::new(RecordingFs::new(_fs.clone(), rec.clone()));
        let pool =
            BufferPool::open(db_path(), &config(vfs, mode, frames, None), Arc::new(Owner)).expect("reopen");
        let root = pool.load_root(pool.catalog_get("t").expect("catalog")).expect("root");
        for i in 0..leaves {
            let want = if i % 3 == 0 { (i as u8).wrapping_add(100) } else { i as u8 };
            let got = with_child(&pool, root, i, |c| c[DATA]).expect("read back");
            assert_eq!(got, want, "{mode}: leaf {i}");
        }
    }
}

#[test]
fn b19_recovery_lsn_is_the_oldest_unwritten_change_and_resets_on_write() {
    let (pool, rec, _fs) = logged_pool(PoolMode::Traditional, 16);
    let mut g = pool.allocate_page().expect("page");
    let p1 = g.page_id();
    g.set_page_lsn(Lsn(10));
    assert_eq!(g.page_lsn(), Lsn(10));
    drop(g);
    assert_eq!(pool.dirty_pages(), vec![(p1, Lsn(10))]);
    let mut g = pool.fix_page::<Exclusive>(p1).expect("fix");
    g.set_page_lsn(Lsn(20));
    assert_eq!(g.page_lsn(), Lsn(20), "the page LSN is the newest change");
    drop(g);
    assert_eq!(pool.dirty_pages(), vec![(p1, Lsn(10))], "the recovery LSN is the oldest");

    // A page changed without an LSN is dirty but has no recovery LSN ("unknown").
    let p2 = pool.allocate_page().expect("page").page_id();
    assert_eq!(pool.dirty_pages(), vec![(p1, Lsn(10))]);

    pool.flush().expect("flush");
    assert!(pool.dirty_pages().is_empty(), "a write resets the recovery LSN");
    assert!(rec.events().contains(&Event::Written(p1, Lsn(20))));
    assert!(rec.events().contains(&Event::Written(p2, Lsn(0))), "pages without an LSN are reported too");
    assert!(!rec.events().contains(&Event::Flushed(Lsn(0))), "no flush_to for LSN 0");

    let mut g = pool.fix_page::<Exclusive>(p1).expect("fix");
    g.set_page_lsn(Lsn(30));
    drop(g);
    assert_eq!(pool.dirty_pages(), vec![(p1, Lsn(30))], "the next change after a write starts anew");

    // Eviction writes p1 and resets its recovery LSN with the frame.
    let mut lsns = Lsns(100);
    let mut others = Vec::new();
    while !rec.events().contains(&Event::Written(p1, Lsn(30))) {
        let mut g = pool.allocate_page().expect("allocate");
        g.set_page_lsn(lsns.next());
        others.push(g.page_id());
        assert!(others.len() < 200, "p1 was never evicted");
    }
    assert!(pool.dirty_pages().iter().all(|&(p, _)| p != p1), "an evicted page is not listed");
    assert!(pool.dirty_pages().iter().all(|&(_, l)| l > Lsn(100)), "only the new pages are dirty");
    check_wal_order(&rec.events());
    // Read back: the LSN went to the file with the page; the frame starts clean.
    let g = pool.fix_page::<Exclusive>(p1).expect("re-read");
    assert_eq!(g.page_lsn(), Lsn(30));
    drop(g);
    assert!(pool.dirty_pages().iter().all(|&(p, _)| p != p1));
    pool.check_invariants().expect("invariants");
}

#[test]
fn b18_failing_flush_keeps_the_page_dirty_and_unwritten_on_flush() {
    let (pool, rec, _fs) = logged_pool(PoolMode::Swizzling, 16);
    let mut g = pool.allocate_page().expect("page");
    let p = g.page_id();
    g.set_page_lsn(Lsn(5));
    drop(g);
    rec.set_failing(true);
    let writes = rec.writes();
    match pool.flush() {
        Err(BufferError::Wal { page, lsn, source, .. }) => {
            assert_eq!((page, lsn), (p, Lsn(5)));
            assert_eq!(source.raw_os_error(), Some(libc_eio()));
        }
        other => panic!("expected a Wal error, got {other:?}"),
    }
    assert_eq!(rec.writes(), writes, "nothing was written");
    assert_eq!(pool.dirty_pages(), vec![(p, Lsn(5))], "the page stays dirty with its recovery LSN");
    rec.set_failing(false);
    pool.flush().expect("a WAL failure is not sticky: the file was never touched");
    assert!(pool.dirty_pages().is_empty());
    assert!(rec.events().contains(&Event::Write(p, Lsn(5))));
    check_wal_order(&rec.events());
}

#[test]
fn b18_failing_flush_rejects_eviction_victims_and_the_sweep() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let (pool, rec, _fs) = logged_pool(mode, 16);
        let mut lsns = Lsns::default();
        let root = make_root(&pool, &mut lsns);
        for i in 0..10 {
            add_leaf(&pool, root, i, &mut lsns);
        }
        rec.set_failing(true);
        let writes = rec.writes();
        // Every resident page is dirty with an LSN: nothing can be evicted, and the error says why.
        let err = (0..40).find_map(|i| {
            let mut g = match pool.allocate_page() {
                Ok(g) => g,
                Err(e) => return Some(e),
            };
            g[DATA] = i;
            g.set_page_lsn(lsns.next());
            None
        });
        assert!(matches!(err, Some(BufferError::Wal { .. })), "{mode}: expected a Wal error, got {err:?}");
        assert_eq!(rec.writes(), writes, "{mode}: no page was written while the log failed");
        assert!(pool.stats().rejected_wal > 0, "{mode}");
        pool.check_invariants().expect("the victims keep their pages");
        if mode == PoolMode::Swizzling {
            assert!(
                matches!(pool.sweep_evict(4), Err(BufferError::Wal { .. })),
                "the sweep writes nothing either"
            );
            assert_eq!(rec.writes(), writes);
        }
        let dirty = pool.dirty_pages().len();
        assert_eq!(dirty, pool.resident_pages(), "{mode}: every resident page is still dirty");

        rec.set_failing(false);
        pool.allocate_page().expect("eviction works again once the log does");
        assert!(rec.writes() > writes);
        check_wal_order(&rec.events());
        pool.check_invariants().expect("invariants");
    }
}

#[test]
fn b18_logging_off_makes_no_log_call() {
    let fs = FaultFs::new();
    let pool = create(&fs, &config(Arc::new(fs.clone()), PoolMode::Swizzling, 16, None));
    let mut lsns = Lsns::default();
    let root = make_root(&pool, &mut lsns);
    for i in 0..40 {
        add_leaf(&pool, root, i, &mut lsns);
    }
    pool.flush().expect("flush");
    let stats = pool.stats();
    assert!(stats.write_backs > 20);
    assert_eq!((stats.wal_flushes, stats.rejected_wal), (0, 0));
}

#[test]
fn b19_concurrent_changes_evictions_and_flushes_keep_the_wal_order_and_lose_nothing() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (pool, rec, fs) = logged_pool(PoolMode::Traditional, 16);
    let pages: Vec<_> = (0..40)
        .map(|_| {
            let mut g = pool.allocate_page().expect("page");
            g.set_page_lsn(Lsn(1));
            g.page_id()
        })
        .collect();
    let next_lsn = AtomicU64::new(2);
    let done = AtomicBool::new(false);
    let finals: Vec<Vec<(usize, u8)>> = std::thread::scope(|s| {
        let flusher = s.spawn(|| {
            let mut flushes = 0;
            while !done.load(Ordering::Relaxed) || flushes == 0 {
                pool.flush().expect("concurrent flush");
                flushes += 1;
            }
        });
        let workers: Vec<_> = (0..2)
            .map(|t| {
                let (pool, pages, next_lsn) = (&pool, &pages, &next_lsn);
                s.spawn(move || {
                    let mut last = Vec::new();
                    for round in 0..300usize {
                        let i = (round * 7 + t) % pages.len();
                        if i % 2 != t {
                            continue;
                        }
                        let mut g = pool.fix_page::<Exclusive>(pages[i]).expect("fix");
                        let v = (round % 251) as u8;
                        g[DATA] = v;
                        // Logged and applied under the one exclusive latch (B19's obligation).
                        g.set_page_lsn(Lsn(next_lsn.fetch_add(1, Ordering::Relaxed)));
                        last.push((i, v));
                    }
                    last
                })
            })
            .collect();
        let finals = workers.into_iter().map(|w| w.join().expect("worker")).collect();
        done.store(true, Ordering::Relaxed);
        flusher.join().expect("flusher");
        finals
    });
    pool.flush().expect("final flush");
    check_wal_order(&rec.events());
    pool.check_invariants().expect("invariants");
    drop(pool);

    let mut want = std::collections::HashMap::new();
    for (i, v) in finals.into_iter().flatten() {
        want.insert(i, v);
    }
    let vfs = Arc::new(RecordingFs::new(fs.clone(), rec.clone()));
    let pool = BufferPool::open(db_path(), &config(vfs, PoolMode::Traditional, 16, None), Arc::new(Owner))
        .expect("reopen");
    for (&i, &v) in &want {
        assert_eq!(pool.fix_page::<Exclusive>(pages[i]).expect("read")[DATA], v, "page {i} lost an update");
    }
}

/// B19, B23 (the write-back race): while a write-back is between claiming a page (clearing
/// its dirty flag) and writing it, a checkpoint's `dirty_pages` must still list the page, or the
/// checkpoint would truncate log the page still needs if the write never reaches the disk. A
/// file system hook holds the write of one page while the test reads `dirty_pages`, for the
/// flush, the cleaner's write-back and eviction.
#[test]
fn b19_a_page_being_written_stays_in_the_dirty_page_table_until_written() {
    for path in ["flush", "write_back_older", "eviction"] {
        let (pool, rec, _fs) = logged_pool(PoolMode::Traditional, 16);
        let mut lsns = Lsns::default();
        let root = make_root(&pool, &mut lsns);
        let leaf = add_leaf(&pool, root, 1, &mut lsns);
        let rec_lsn = pool.dirty_pages().into_iter().find(|&(p, _)| p == leaf).expect("dirty").1;
        let (reached_tx, reached_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let held = std::sync::Mutex::new(Some((reached_tx, go_rx)));
        *rec.before_write.lock().unwrap() = Some(Arc::new(move |page| {
            if page == leaf {
                if let Some((reached, go)) = held.lock().unwrap().take() {
                    reached.send(()).unwrap();
                    go.recv().unwrap();
                }
            }
        }));
        std::thread::scope(|s| {
            let writer = s.spawn(|| match path {
                "flush" => pool.flush().map(|_| ()),
                "write_back_older" => pool.write_back_older(Lsn(u64::MAX), usize::MAX).map(|_| ()),
                _ => {
                    for i in 0..40 {
                        add_leaf(&pool, root, i as u8, &mut Lsns(1000 + i));
                    }
                    Ok(())
                }
            });
            reached_rx.recv().unwrap();
            let dpt = pool.dirty_pages();
            go_tx.send(()).unwrap();
            writer.join().unwrap().expect("write-back");
            assert!(dpt.contains(&(leaf, rec_lsn)), "{path}: page {leaf} missing from {dpt:?}");
        });
        *rec.before_write.lock().unwrap() = None;
        assert!(!pool.dirty_pages().iter().any(|&(p, _)| p == leaf), "{path}: written, so no longer listed");
    }
}

/// B23 with the double-write area (F15): the cleaner's write-back writes its pages in batches
/// of one region, so 100 dirty pages cost a few syncs of the area, not one per page; and a
/// page whose latch is held while the batches run is written after them, once it is free.
#[test]
fn b23_write_back_goes_in_double_write_batches_and_writes_a_busy_page_after_them() {
    let (pool, rec, fs) = double_write_pool();
    let mut lsns = Lsns::default();
    let root = make_root(&pool, &mut lsns);
    for i in 0..100u8 {
        add_leaf(&pool, root, i, &mut lsns);
    }
    let dirty = pool.dirty_pages().len();
    assert!(dirty >= 100, "{dirty} dirty pages");
    let syncs_before = fs.calls(Op::Sync, Some("/t/dw"));
    // Hold leaf 7 exclusively until the batches have been written.
    let busy = with_child(&pool, root, 7, |c| c.page_id()).expect("leaf 7");
    let pool = &pool;
    let written = std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let holder = s.spawn(move || {
            with_child(pool, root, 7, |c| {
                held_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                c[DATA] = 207;
                c.set_page_lsn(Lsn(10_000));
            })
            .expect("hold leaf 7")
        });
        held_rx.recv().unwrap();
        let cleaner = s.spawn(move || pool.write_back_older(Lsn(u64::MAX), usize::MAX).expect("write-back"));
        // The batches go first; the cleaner then waits for the held latches. (A write-back
        // that waited for them first would write nothing until the deadline.)
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut batches_first = false;
        while !batches_first && std::time::Instant::now() < deadline {
            batches_first = rec.events().iter().any(|e| matches!(e, Event::Written(p, _) if *p != busy));
            std::thread::yield_now();
        }
        go_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(batches_first, "the write-back waited for a held latch before writing the free pages");
        cleaner.join().unwrap()
    });
    assert_eq!(written, dirty, "every dirty page is written, the busy one included");
    assert!(pool.dirty_pages().is_empty(), "nothing stays dirty");
    let syncs = fs.calls(Op::Sync, Some("/t/dw")) - syncs_before;
    // Two batches of up to 64 pages, then leaf 7 and the root (the holder latched both) alone.
    assert!(syncs <= 4, "{dirty} pages cost {syncs} syncs of the double-write area");
    let got = with_child(pool, root, 7, |c| c[DATA]).expect("leaf 7");
    assert_eq!(got, 207, "the busy page's change is kept");
    assert!(
        rec.events().iter().any(|e| matches!(e, Event::Written(p, l) if *p == busy && *l == Lsn(10_000))),
        "the busy page was written with the change made while the batches ran"
    );
}

/// B26 for a batch (the decoupled cleaner's `FilePages`): the copies read together are the
/// file's; the changed ones are written after one log flush to the highest page LSN, through
/// the double-write area a region (64 pages) at a time, each reported once; a page outside
/// the batch, or named twice, is refused and nothing is written; a pool write of a locked page
/// waits until the batch lets go.
#[test]
fn b26_a_locked_batch_reads_together_and_writes_after_one_log_flush_a_region_per_sync() {
    let (pool, rec, fs) = double_write_pool();
    let mut lsns = Lsns::default();
    let root = make_root(&pool, &mut lsns);
    let ids: Vec<_> = (0..70u8).map(|i| add_leaf(&pool, root, i, &mut lsns)).collect();
    pool.flush().expect("flush");

    let files = pool.lock_file_pages(&ids);
    assert_eq!(files.ids().len(), 70);
    let mut room = None;
    let reads = files.read_unchecked_all(&mut room).expect("room");
    assert!(reads.iter().all(Result::is_ok), "{reads:?}");
    let copies = room.as_ref().expect("room").as_slice();
    let mut pages: Vec<(swizzledb_buffer::PageId, Vec<u8>)> = Vec::new();
    for (i, id) in files.ids().iter().enumerate() {
        let mut copy = copies[i * PS..(i + 1) * PS].to_vec();
        assert_eq!(swizzledb_buffer::page::page_id(&copy), id.get(), "copy {i} is its page's");
        copy[DATA] = copy[DATA].wrapping_add(100);
        swizzledb_buffer::page::set_page_lsn(&mut copy, Lsn(50_000 + i as u64));
        pages.push((*id, copy));
    }
    let outsider = add_leaf(&pool, root, 200, &mut lsns);
    let mut scratch = None;
    let bad: Vec<_> = [(outsider, &pages[0].1[..])].into_iter().collect();
    assert!(matches!(files.write(&bad, Lsn(60_000), &mut scratch), Err(BufferError::Config(_))));
    let twice: Vec<_> = [(pages[0].0, &pages[0].1[..]), (pages[0].0, &pages[0].1[..])].into_iter().collect();
    assert!(matches!(files.write(&twice, Lsn(60_000), &mut scratch), Err(BufferError::Config(_))));

    let events_before = rec.events().len();
    let syncs_before = fs.calls(Op::Sync, Some("/t/dw"));
    let batch: Vec<_> = pages.iter().map(|(id, p)| (*id, &p[..])).collect();
    // A pool write of a page of the batch (a flush of its frame) waits until the batch is done.
    let pool = &pool;
    let first = pages[0].0;
    std::thread::scope(|s| {
        with_child(pool, root, 0, |c| {
            assert_eq!(c.page_id(), first);
            c[DATA] = 1;
            c.set_page_lsn(Lsn(70_000));
        })
        .expect("dirty leaf 0");
        let flusher = s.spawn(move || pool.flush().expect("flush"));
        std::thread::sleep(std::time::Duration::from_millis(50));
        files.write(&batch, Lsn(60_000), &mut scratch).expect("batch write");
        drop(files);
        flusher.join().unwrap();
    });
    let events = rec.events()[events_before..].to_vec();
    check_wal_order(&events);
    // The batch's one flush is to its highest page LSN (the pool's flushes are to 70,000, and
    // below 50,000 for the pages it changed before).
    let batch_flushes = events
        .iter()
        .filter(|e| matches!(e, Event::Flushed(l) if (Lsn(50_000)..Lsn(70_000)).contains(l)))
        .count();
    assert_eq!(batch_flushes, 1, "one log flush for the batch: {events:?}");
    let flush_at = events.iter().position(|e| matches!(e, Event::Flushed(l) if *l == Lsn(50_069)));
    let first_write = events
        .iter()
        .position(|e| matches!(e, Event::Write(p, _) if *p != first && pages.iter().any(|(q, _)| q == p)));
    assert!(flush_at.expect("flushed to 50,069") < first_write.expect("the batch wrote"));
    for (id, p) in &pages {
        let lsn = swizzledb_buffer::page::page_lsn(p);
        let reported =
            events.iter().filter(|e| matches!(e, Event::Written(q, l) if q == id && *l == lsn)).count();
        assert_eq!(reported, 1, "page {id} reported once with {lsn}");
    }
    // 70 pages take two regions of the area, one sync each (the pool's flush after adds its own).
    let batch_syncs = fs.calls(Op::Sync, Some("/t/dw")) - syncs_before;
    assert!(batch_syncs >= 2, "{batch_syncs} syncs of the area");
    // The pool's flush of leaf 0 came after the batch: the file holds the pool's newer copy, and
    // every other page the batch's.
    let last_write_of_first = events.iter().rposition(|e| matches!(e, Event::Write(p, _) if *p == first));
    assert!(matches!(events[last_write_of_first.unwrap()], Event::Write(_, l) if l == Lsn(70_000)));
    let after = pool.lock_file_pages(&ids);
    let mut room = None;
    assert!(after.read_unchecked_all(&mut room).expect("room").iter().all(Result::is_ok));
    let copies = room.as_ref().expect("room").as_slice();
    for (i, (id, p)) in pages.iter().enumerate().skip(1) {
        assert_eq!(&copies[i * PS..(i + 1) * PS][DATA], &p[DATA], "page {id}");
    }
}

/// B25, B26: a pool's read of a page takes no file lock, so a write from outside the pool
/// (a `FilePage` holder's) can overlap it: the read then holds a torn copy, or one the
/// outsider's write made stale the moment it was reported. Neither is damage in the file. The
/// load reads again under the page's file lock and takes that copy, with nothing to repair
/// (this log repairs nothing: without the second read both fixes fail as `Corrupted`).
#[test]
fn b26_a_load_overlapped_by_a_write_from_outside_reads_again_under_the_file_lock() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Barrier;

    let (pool, rec, _fs) = logged_pool(PoolMode::Traditional, 16);
    *rec.expected.lock().unwrap() = Some(Default::default());
    let mut lsns = Lsns::default();
    let root = make_root(&pool, &mut lsns);
    let leaves: Vec<_> = (0..40u8).map(|i| add_leaf(&pool, root, i, &mut lsns)).collect();
    pool.flush().expect("flush");
    let (torn, stale) = (leaves[0], leaves[1]);

    // A read of the first leaf overlapped by a write of it: the second half is the writer's.
    let torn_reads = Arc::new(AtomicUsize::new(0));
    let seen = torn_reads.clone();
    *rec.after_read.lock().unwrap() = Some(Arc::new(move |page, buf: &mut [u8]| {
        if page == torn && seen.fetch_add(1, SeqCst) == 0 {
            buf[PS / 2..].fill(0x5a);
        }
    }));
    assert_eq!(with_child(&pool, root, 0, |c| c[DATA]).expect("the torn read is read again"), 0);
    assert_eq!(torn_reads.load(SeqCst), 2, "the leaf was read twice");

    // A read of the second leaf that an outsider's write (of a newer copy) follows at once,
    // reported before the read is checked.
    let gate = Arc::new(Barrier::new(2));
    let stale_reads = Arc::new(AtomicUsize::new(0));
    let (seen, hook_gate) = (stale_reads.clone(), gate.clone());
    *rec.after_read.lock().unwrap() = Some(Arc::new(move |page, _buf: &mut [u8]| {
        if page == stale && seen.fetch_add(1, SeqCst) == 0 {
            hook_gate.wait(); // the outsider may write
            hook_gate.wait(); // it wrote and reported
        }
    }));
    let pool = &pool;
    let value = std::thread::scope(|s| {
        s.spawn(|| {
            gate.wait();
            let file = pool.lock_file_page(stale);
            let mut copy = vec![0; PS];
            file.read(&mut copy).expect("the outsider reads the copy");
            copy[DATA] = 77;
            swizzledb_buffer::page::set_page_lsn(&mut copy, Lsn(10_000));
            file.write(&mut copy, Lsn(10_000)).expect("the outsider writes");
            drop(file);
            gate.wait();
        });
        with_child(pool, root, 1, |c| c[DATA]).expect("the stale read is read again")
    });
    assert_eq!(value, 77, "the load took the outsider's copy");
    assert_eq!(stale_reads.load(SeqCst), 3, "the load read the leaf twice, the outsider once");
    assert_eq!(pool.stats().pages_repaired, 0);
    pool.check_invariants().expect("invariants");
}
