//! Cost of one buffer-pool hit (`fix` + unfix), per buffer mode and latch mode, in ns per fix:
//! the fix()-cost comparison of Graefe et al. 2014 (VLDB, "In-memory performance for big data")
//! and Gilbert 2017 — a swizzled hit, a page-table hit and main-memory style references.
//!
//! Setup, once per mode: 200k records (8-byte keys, 120-byte values) in a database of 8 KiB pages
//! with a pool that holds all of it, then every key read once, so that in the swizzling modes the
//! root's child references are swizzled. The root is then latched shared for the whole run and
//! the measured routine fixes one of its children (round-robin) and drops the guard:
//!
//! * `fix_child/<mode>/<shared|exclusive>`: `BufferPool::fix_child` through the root's swip. In
//!   traditional mode every fix goes through the page table; in swizzling mode it follows the
//!   frame reference and tells the replacement policy; in main-memory mode it follows the frame
//!   reference only.
//! * `fix_page/<mode>`: `BufferPool::fix_page` by page id (always the page table), shared, on the
//!   same children, as the page-table baseline in every mode.
//!
//! Run: `cargo bench -p swizzledb-benches --bench fix` (about a minute; criterion's own command-line
//! options such as `--measurement-time` or a name filter go after `--`).

#![forbid(unsafe_code)]

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use swizzledb::lab::{DatabaseExt as _, TreeExt as _};
use swizzledb::{Database, PoolMode, Stats, Tree};
use swizzledb_btree::node;
use swizzledb_buffer::page::get_u64;
use swizzledb_buffer::{Exclusive, LatchKind, PageId, Shared, SharedGuard, Swip};

const RECORDS: u64 = 200_000;
const VALUE_LEN: usize = 120;
const PAGE_SIZE: usize = 8 << 10;
const POOL_BYTES: usize = 128 << 20;
/// Fixes done outside criterion to check that each routine takes the path it is named after.
const PROBE_FIXES: u64 = 1_000;

/// Key `i`: a bijective scramble of `i` (odd multiplier), so inserts arrive in random order and
/// leave nodes filled as in a steady state, without a random-number generator.
fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

/// One database per mode, built and warmed before any measurement.
struct Bed {
    mode: PoolMode,
    db: Database,
    tree: Tree,
    _dir: tempfile::TempDir,
}

impl Bed {
    fn new(mode: PoolMode) -> Bed {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = Database::builder()
            .mode(mode)
            .page_size(PAGE_SIZE)
            .pool_bytes(POOL_BYTES)
            .create(dir.path().join("fix.swz"))
            .expect("create database");
        let tree = db.create_tree("bench").expect("create tree");
        let value = [0xA5u8; VALUE_LEN];
        for i in 0..RECORDS {
            tree.insert(&key(i), &value).expect("insert");
        }
        // Warm: one read of every key swizzles every reference on the way (swizzling mode).
        for i in 0..RECORDS {
            let found = tree.get_with(&key(i), |v| v.is_some()).expect("get");
            assert!(found, "key {i} missing after insert");
        }
        let shape = tree.verify().expect("tree verifies");
        assert_eq!(shape.records as u64, RECORDS);
        assert!(db.stats().evictions == 0, "{mode}: the pool must hold the whole tree");
        let bed = Bed { mode, db, tree, _dir: dir };
        let root = bed.root();
        let children = child_offsets(&root).len();
        eprintln!(
            "{mode}: height {}, {} nodes ({} leaves), root has {children} children, {} of {} frames used",
            shape.height,
            shape.nodes,
            shape.leaves,
            bed.db.pool().resident_pages(),
            bed.db.pool().capacity(),
        );
        drop(root);
        bed
    }

    /// The root, latched shared. `Tree` does not expose the root's frame, but the root is always
    /// resident and in the page table, so a fix by page id yields the same guard `fix_root` would.
    fn root(&self) -> SharedGuard<'_> {
        self.db.pool().fix_page::<Shared>(self.tree.root_page()).expect("fix root")
    }

    fn stats(&self) -> Stats {
        self.db.stats()
    }
}

/// Offsets of the root's child swips (foster swip included, if any), checked to be swizzled exactly
/// when the mode swizzles.
fn child_offsets(root: &SharedGuard<'_>) -> Vec<usize> {
    assert!(!node::is_leaf(root), "the root must be an inner node; add records");
    let mut offs = Vec::with_capacity(node::count(root) + 1);
    node::swip_offsets(root, &mut offs);
    assert!(offs.len() >= 2, "the root has {} children", offs.len());
    let swizzles = root.pool().mode().swizzles();
    for &o in &offs {
        let swip = Swip::from_raw(get_u64(root, o)).expect("valid swip");
        assert_eq!(swip.is_swizzled(), swizzles, "child swip at {o} after warm-up: {swip:?}");
    }
    offs
}

/// Page ids of the root's children (read while the root is latched, which keeps them resident).
fn child_pages(root: &SharedGuard<'_>, offs: &[usize]) -> Vec<PageId> {
    let pool = root.pool();
    offs.iter().map(|&o| pool.swip_page_id(Swip::from_raw(get_u64(root, o)).expect("valid swip"))).collect()
}

/// Round-robin position in a list of `len` entries, without a division on the measured path.
#[inline]
fn advance(i: &mut usize, len: usize) -> usize {
    let cur = *i;
    *i = if cur + 1 == len { 0 } else { cur + 1 };
    cur
}

fn latch_name<M: LatchKind>() -> &'static str {
    if std::any::TypeId::of::<M>() == std::any::TypeId::of::<Exclusive>() {
        "exclusive"
    } else {
        "shared"
    }
}

fn bench_fix_child<M: LatchKind>(group: &mut BenchmarkGroup<'_, WallTime>, bed: &Bed) {
    let pool = bed.db.pool();
    let mut root = bed.root();
    let offs = child_offsets(&root);
    // Check the path: page-table lookups only in traditional mode, no misses, no new swizzles.
    let before = bed.stats();
    let mut i = 0;
    for _ in 0..PROBE_FIXES {
        drop(pool.fix_child::<Shared, M>(&mut root, offs[advance(&mut i, offs.len())]).expect("fix child"));
    }
    let d = bed.stats().since(&before);
    let lookups = if bed.mode.swizzles() { 0 } else { PROBE_FIXES };
    assert_eq!((d.hits, d.misses, d.swizzles), (PROBE_FIXES, 0, 0), "{}: {d:?}", bed.mode);
    assert_eq!(d.page_table_lookups, lookups, "{}: {d:?}", bed.mode);

    group.bench_function(format!("{}/{}", bed.mode.name(), latch_name::<M>()), |b| {
        let mut i = 0;
        b.iter(|| {
            let off = offs[advance(&mut i, offs.len())];
            // The guard is dropped (unfix) inside the timed loop.
            pool.fix_child::<Shared, M>(&mut root, black_box(off)).expect("fix child")
        });
    });
}

fn bench_fix_page(group: &mut BenchmarkGroup<'_, WallTime>, bed: &Bed) {
    let pool = bed.db.pool();
    // Held only to mirror fix_child's setting (and to keep the children resident, B6).
    let root = bed.root();
    let pages = child_pages(&root, &child_offsets(&root));
    let before = bed.stats();
    let mut i = 0;
    for _ in 0..PROBE_FIXES {
        drop(pool.fix_page::<Shared>(pages[advance(&mut i, pages.len())]).expect("fix page"));
    }
    let d = bed.stats().since(&before);
    assert_eq!(
        (d.hits, d.misses, d.page_table_lookups),
        (PROBE_FIXES, 0, PROBE_FIXES),
        "{}: {d:?}",
        bed.mode
    );

    group.bench_function(bed.mode.name(), |b| {
        let mut i = 0;
        b.iter(|| {
            let pid = pages[advance(&mut i, pages.len())];
            pool.fix_page::<Shared>(black_box(pid)).expect("fix page")
        });
    });
    drop(root);
}

fn fix(c: &mut Criterion) {
    let beds: Vec<Bed> = PoolMode::ALL.into_iter().map(Bed::new).collect();

    let mut group = c.benchmark_group("fix_child");
    group.throughput(Throughput::Elements(1));
    for bed in &beds {
        bench_fix_child::<Shared>(&mut group, bed);
        bench_fix_child::<Exclusive>(&mut group, bed);
    }
    group.finish();

    let mut group = c.benchmark_group("fix_page");
    group.throughput(Throughput::Elements(1));
    for bed in &beds {
        bench_fix_page(&mut group, bed);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    targets = fix
}
criterion_main!(benches);
