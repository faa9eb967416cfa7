//! Buffer reference traces (rule B17 of the buffer README) recorded from real workloads: the
//! trace must agree with the pool's own counters and with the pool's rules (a fix is released
//! on the thread that took it, evicted pages were resident, lock coupling holds the parent).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{
    BufferError, Database, Error, EventKind, PoolMode, Stats, TraceError, TraceEvent, TraceReader,
};

const PAGE: usize = 4096;
const RECORDS: u64 = 3000;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64) -> Vec<u8> {
    vec![(i % 251) as u8; 100]
}

fn pool_bytes(mode: PoolMode) -> usize {
    // 32 frames: far below the ~100 pages of the tree, so eviction runs all the time.
    if mode == PoolMode::MainMemory {
        64 << 20
    } else {
        32 * PAGE
    }
}

fn open(mode: PoolMode, db_path: &Path, trace: &Path) -> Database {
    Database::builder()
        .mode(mode)
        .page_size(PAGE)
        .pool_bytes(pool_bytes(mode))
        .lab(|l| l.trace(trace))
        .create(db_path)
        .unwrap()
}

fn read(trace: &Path) -> Vec<TraceEvent> {
    TraceReader::open(trace).unwrap().collect::<Result<_, _>>().unwrap()
}

fn count(events: &[TraceEvent], kind: EventKind) -> u64 {
    events.iter().filter(|e| e.kind == kind).count() as u64
}

/// B17 + B12: the trace and the counters describe the same run.
fn check_counters(events: &[TraceEvent], s: &Stats) {
    assert_eq!(count(events, EventKind::Fix), s.fixes, "fix events = fixes");
    let misses = events.iter().filter(|e| e.kind == EventKind::Fix && e.hit == Some(false)).count() as u64;
    assert_eq!(misses, s.misses, "missed fixes = misses");
    assert_eq!(count(events, EventKind::Read), s.pages_read, "read events = pages read");
    assert_eq!(count(events, EventKind::Evict), s.evictions, "evict events = evictions");
}

/// Per thread, in recorded order: timestamps never go back; every unfix (and free) releases a
/// page this thread fixed (or allocated) and still holds; a fix through a parent happens while
/// the thread holds the parent (lock coupling, B10); at the end nothing is held.
fn check_per_thread(events: &[TraceEvent]) {
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut held: HashMap<u32, HashMap<u64, u32>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let t = last.entry(e.thread).or_insert(0);
        assert!(
            e.time_ns >= *t,
            "event {i} of thread {}: time went back from {} to {}",
            e.thread,
            t,
            e.time_ns
        );
        *t = e.time_ns;
        let held = held.entry(e.thread).or_default();
        match e.kind {
            EventKind::Fix | EventKind::Alloc => {
                if let Some(p) = e.parent {
                    assert!(
                        held.get(&p.get()).is_some_and(|&n| n > 0),
                        "event {i}: {:?} fixed through {p:?}, which thread {} does not hold",
                        e.page,
                        e.thread
                    );
                }
                *held.entry(e.page.get()).or_insert(0) += 1;
            }
            EventKind::Unfix | EventKind::Free => {
                let n = held.get_mut(&e.page.get()).filter(|n| **n > 0);
                let n = n.unwrap_or_else(|| {
                    panic!("event {i}: {} of {:?} without a fix on thread {}", e.kind, e.page, e.thread)
                });
                *n -= 1;
            }
            EventKind::Read | EventKind::Evict => {}
        }
    }
    for (t, pages) in held {
        assert!(pages.values().all(|&n| n == 0), "thread {t} ended holding {pages:?}");
    }
}

/// Single-threaded replay of residency: a page is read or allocated only while not resident,
/// fixed, evicted or freed only while resident, and never more pages are resident than frames.
fn check_residency(events: &[TraceEvent], frames: u32) {
    let mut resident = HashSet::new();
    for (i, e) in events.iter().enumerate() {
        let p = e.page.get();
        match e.kind {
            EventKind::Read | EventKind::Alloc => {
                assert!(resident.insert(p), "event {i}: {} of resident {:?}", e.kind, e.page);
            }
            EventKind::Evict | EventKind::Free => {
                assert!(resident.remove(&p), "event {i}: {} of {:?}, which was not resident", e.kind, e.page);
            }
            EventKind::Fix | EventKind::Unfix => {
                assert!(resident.contains(&p), "event {i}: {} of non-resident {:?}", e.kind, e.page);
            }
        }
        assert!(resident.len() <= frames as usize, "event {i}: more resident pages than frames");
    }
}

fn single_thread_run(mode: PoolMode) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.swzt");
    let db = open(mode, &dir.path().join("db"), &trace);
    let tree = db.create_tree("t").unwrap();
    let mut rng = SmallRng::seed_from_u64(7);
    for i in 0..RECORDS {
        let k = rng.gen_range(0..RECORDS * 4);
        tree.upsert(&key(k), &value(k)).unwrap();
        if i % 3 == 0 {
            tree.get(&key(rng.gen_range(0..RECORDS * 4))).unwrap();
        }
    }
    // Emptying a key range merges leaves and frees pages (B11).
    for k in 0..RECORDS * 2 {
        tree.delete(&key(k)).unwrap();
    }
    let stats = db.stats();
    let frames = db.pool().capacity() as u32;
    drop(tree);
    db.close().unwrap();

    let reader = TraceReader::open(&trace).unwrap();
    let h = *reader.header();
    assert_eq!((h.mode, h.page_size as usize, h.frames), (mode, PAGE, frames));
    let events = read(&trace);
    check_counters(&events, &stats);
    check_per_thread(&events);
    check_residency(&events, frames);
    assert!(events.iter().all(|e| e.thread == 0));
    assert!(count(&events, EventKind::Alloc) > 10, "the tree grew");
    assert!(count(&events, EventKind::Free) > 0, "deleting merged leaves and freed pages");
    if mode != PoolMode::MainMemory {
        assert!(stats.evictions > 100, "the small pool evicted ({} evictions)", stats.evictions);
    }
    if mode == PoolMode::Swizzling {
        let through_parent = events.iter().filter(|e| e.kind == EventKind::Fix && e.parent.is_some()).count();
        assert!(through_parent as u64 > stats.fixes / 2, "most fixes go through fix_child");
    }
}

#[test]
fn b17_traditional_trace_matches_counters_and_rules() {
    single_thread_run(PoolMode::Traditional);
}

#[test]
fn b17_swizzling_trace_matches_counters_and_rules() {
    single_thread_run(PoolMode::Swizzling);
}

#[test]
fn b17_main_memory_trace_matches_counters_and_rules() {
    single_thread_run(PoolMode::MainMemory);
}

/// Four threads on one small pool: every thread's events are complete and well formed, and
/// the total matches the counters, although each thread flushes its own blocks.
#[test]
fn b17_threads_record_their_own_events() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("mt.swzt");
        let db = open(mode, &dir.path().join("db"), &trace);
        let tree = db.create_tree("t").unwrap();
        for k in 0..RECORDS {
            tree.insert(&key(k), &value(k)).unwrap();
        }
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let tree = tree.clone();
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t);
                    // Enough events that every thread fills several 64 KiB blocks.
                    for _ in 0..20_000 {
                        let k = rng.gen_range(0..RECORDS);
                        assert_eq!(tree.get(&key(k)).unwrap(), Some(value(k)));
                    }
                });
            }
        });
        let stats = db.stats();
        drop(tree);
        db.close().unwrap();
        let events = read(&trace);
        check_counters(&events, &stats);
        check_per_thread(&events);
        let threads: HashSet<u32> = events.iter().map(|e| e.thread).collect();
        assert_eq!(threads.len(), 5, "{mode}: the loading thread and four readers");
        let refs = swizzledb_buffer::page_references(&trace).unwrap();
        assert_eq!(refs.len() as u64, stats.fixes);
    }
}

/// A trace that cannot be created fails `create` with the trace's I/O error, naming the file.
#[test]
fn b17_unwritable_trace_path_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("no-such-dir").join("t.swzt");
    let r = Database::builder().pool_bytes(1 << 20).lab(|l| l.trace(&bad)).create(dir.path().join("db"));
    match r {
        Err(Error::Buffer(BufferError::Trace(TraceError::Io { file, .. }))) => assert_eq!(file, bad),
        other => panic!("expected a trace I/O error, got {other:?}"),
    }
}

/// R14: an `open` with a trace that cannot be created (its directory is missing, or it names a
/// directory) is refused with the trace's I/O error before anything is written: the database
/// file and its log stay byte for byte as they were, page 0 still says CLEAN (a read-only open
/// works), and no trace file is left. (The open used to run restart first — page 0's CLEAN
/// cleared, a double-write area made — and fail when the pool created the trace, so read-only
/// opens were then refused with `NeedsRestart`.)
#[test]
fn b17_r14_an_open_with_a_trace_it_cannot_create_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    for i in 0..500 {
        tree.insert(&key(i), &value(i)).unwrap();
    }
    drop(tree);
    db.close().unwrap();
    let files = |dir: &Path| {
        let mut all = std::collections::BTreeMap::new();
        for entry in walk(dir) {
            all.insert(entry.clone(), std::fs::read(&entry).unwrap());
        }
        all
    };
    fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }
    let before = files(dir.path());
    std::fs::create_dir(dir.path().join("a-directory")).unwrap();
    for trace in [dir.path().join("no-such-dir").join("t.swzt"), dir.path().join("a-directory")] {
        for mode in [PoolMode::Swizzling, PoolMode::MainMemory] {
            let opened =
                Database::builder().mode(mode).pool_bytes(8 << 20).lab(|l| l.trace(&trace)).open(&path);
            match opened {
                Err(Error::Buffer(BufferError::Trace(TraceError::Io { file, .. }))) => {
                    assert_eq!(file, trace)
                }
                other => panic!("{trace:?} {mode}: expected a trace I/O error, got {:?}", other.map(|_| ())),
            }
            let mut after = files(dir.path());
            assert!(after.remove(&dir.path().join("a-directory")).is_none());
            assert!(after == before, "{trace:?} {mode}: the refused open changed the files");
            let ro = Database::builder().read_only(true).open(&path).unwrap();
            assert_eq!(ro.tree("t").unwrap().len().unwrap(), 500);
            ro.close().unwrap();
        }
    }
}

/// Without `trace`, nothing is recorded and the pool reports no trace file.
#[test]
fn b17_no_trace_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().pool_bytes(1 << 20).create(dir.path().join("db")).unwrap();
    assert_eq!(db.pool().trace_path(), None);
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["db", "db.wal"], "only the database file and its log");
}

/// A trace aimed at the database's own file, or into its log directory, is refused before
/// anything is written, by `open` (read-only too) and `create`: recording it truncated the
/// file, and the next open found page 0 damaged, every committed record gone.
#[test]
fn a_trace_over_the_database_or_its_log_is_refused_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    for i in 0..500 {
        tree.insert(&key(i), &value(i)).unwrap();
    }
    drop(tree);
    db.close().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let file = std::fs::read(&path).unwrap();
    let refused =
        |e: &Error| matches!(e, Error::Buffer(BufferError::Config(reason)) if reason.contains("trace"));
    for trace in [
        path.clone(),
        dir.path().join("sub").join("..").join("db.swz"),
        swizzledb::wal_dir(&path),
        swizzledb::wal_dir(&path).join("t.trace"),
    ] {
        for read_only in [false, true] {
            let opened = Database::builder().read_only(read_only).lab(|l| l.trace(&trace)).open(&path);
            match opened {
                Err(e) => assert!(refused(&e), "{trace:?} read-only {read_only}: {e:?}"),
                Ok(_) => panic!("{trace:?} read-only {read_only}: the open was not refused"),
            }
            assert!(std::fs::read(&path).unwrap() == file, "{trace:?}: the file changed");
        }
    }
    let db = Database::builder().open(&path).unwrap();
    assert_eq!(db.tree("t").unwrap().len().unwrap(), 500);
    db.close().unwrap();
    let new = dir.path().join("new.swz");
    let created = Database::builder().lab(|l| l.trace(&new)).create(&new);
    assert!(matches!(&created, Err(e) if refused(e)), "{:?}", created.map(|_| ()));
    assert!(!new.exists() && !swizzledb::wal_dir(&new).exists(), "the refused create made files");
}
