//! RECOVERY.md R29, buffer README B36: lazy split images. A split logs its new node as a
//! split-off of the old one; the pool resolves it (its synced write, or its image) before the
//! old node's history is lost, and restart rebuilds an unresolved one from the old node.

use crate::common;

use common::*;
use proptest::prelude::*;
use std::sync::Arc;
use swizzledb::lab::record::{NodeLog, Record};
use swizzledb::{wal_dir, Error, PoolMode};
use swizzledb_io::{CrashMode, FaultFs};
use swizzledb_sync::Lsn;
use swizzledb_wal::{LogConfig, LogManager};

/// `common::builder` (4 KiB pages, a 16-frame pool: sources are evicted before their
/// dependants reach the file) with lazy split images.
fn lazy(mode: PoolMode, fs: &FaultFs) -> swizzledb::Builder {
    builder(mode, Arc::new(fs.clone())).lab(|l| l.lazy_split_images(true))
}

/// The log's records, read with a log manager of its own (segments of `common::SEGMENT`).
fn records(fs: &FaultFs) -> Vec<(Lsn, Record)> {
    records_in_segments(fs, Some(SEGMENT))
}

/// The log's records, its segments of `segment` bytes (`None`: the engine's default).
///
/// The log manager opens a copy of the log's directory in a file system of its own: some tests
/// read the log of a database that is still open, whose directory a second log manager would
/// change (its open removes the spare segments the first one's flusher prepared, W15, and its
/// close trims the newest segment, W13), which made the open database's close fail now and then.
fn records_in_segments(fs: &FaultFs, segment: Option<u64>) -> Vec<(Lsn, Record)> {
    use swizzledb_io::{OpenMode, Vfs};
    let dir = wal_dir(&db_path());
    let copy = FaultFs::new();
    copy.create_dir_all(&dir).unwrap();
    for path in fs.list(&dir).unwrap() {
        let Some(bytes) = fs.contents(&path) else { continue };
        let f = copy.open(&path, OpenMode::CREATE_NEW).unwrap();
        f.write_all_at(&bytes, 0).unwrap();
        f.sync().unwrap();
    }
    let mut config = LogConfig::new(dir);
    config.vfs = Arc::new(copy);
    if let Some(bytes) = segment {
        config.segment_bytes = bytes;
    }
    config.flush_interval = None;
    let log = LogManager::open(config).unwrap();
    let out = log
        .scan(Lsn(0))
        .unwrap()
        .map(|i| i.unwrap())
        .map(|(l, b)| (l, Record::decode(&b).unwrap()))
        .collect();
    log.close().unwrap();
    out
}

/// Split-offs, and images logged alone (the pool's resolution of a split-off, B36), in `records`.
fn count_split_offs_and_lone_images(records: &[(Lsn, Record)]) -> (usize, usize) {
    let mut split_offs = 0;
    let mut lone = 0;
    for (_, r) in records {
        if let Record::Structure { pages, freed } = r {
            split_offs += pages.iter().filter(|(_, n)| matches!(n, NodeLog::SplitOff)).count();
            lone +=
                usize::from(pages.len() == 1 && freed.is_empty() && matches!(pages[0].1, NodeLog::Image(_)));
        }
    }
    (split_offs, lone)
}

/// Splits in `records` that log their new node's image.
fn count_split_images(records: &[(Lsn, Record)]) -> usize {
    records
        .iter()
        .filter(|(_, r)| {
            matches!(r, Record::Structure { pages, .. }
            if pages.iter().any(|(_, n)| matches!(n, NodeLog::Split { .. }))
                && pages.iter().any(|(_, n)| matches!(n, NodeLog::Image(_))))
        })
        .count()
}

fn workload_then_crash(mode: PoolMode, steps: &[Step], crash: CrashMode) -> swizzledb::RestartStats {
    let fs = new_fs();
    let db = lazy(mode, &fs).create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    db.checkpoint().unwrap();
    let mut open = Vec::new();
    let out = run_steps(&db, &tree, steps, &Model::new(), &mut open);
    assert!(out.error.is_none(), "workload before the crash: {:?}", out.error);
    fs.crash(crash);
    drop(open);
    drop(tree);
    drop(db);
    let db = lazy(mode, &fs).open(db_path()).unwrap();
    let stats = db.restart_stats();
    assert_state(&db, &out.acked, &format!("after the crash ({crash:?})"));
    let tree = db.tree(TREE).unwrap();
    let more = [Step::Txn((0..200).map(|k| Write::Put(k * 3, 0x5A)).collect(), End::Commit)];
    let after = run_steps(&db, &tree, &more, &out.acked, &mut Vec::new());
    assert!(after.error.is_none(), "after restart: {:?}", after.error);
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db);
    let db = lazy(mode, &fs).open(db_path()).unwrap();
    assert_state(&db, &after.acked, "after a second crash");
    db.close().unwrap();
    stats
}

fn write_strategy() -> impl Strategy<Value = Write> {
    prop_oneof![
        4 => (0u16..2000, any::<u8>()).prop_map(|(k, v)| Write::Put(k, v)),
        1 => (0u16..2000).prop_map(Write::Delete),
    ]
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (prop::collection::vec(write_strategy(), 1..80), prop_oneof![4 => Just(End::Commit), 1 => Just(End::Abort), 1 => Just(End::Open)])
            .prop_map(|(w, e)| Step::Txn(w, e)),
        1 => Just(Step::Checkpoint),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10)
    ))]

    /// R29, R10: with lazy split images, a crash in any mode keeps exactly the acknowledged
    /// commits, the tree stays valid, and the database works on and survives a second crash.
    #[test]
    fn r29_a_crash_with_lazy_split_images_keeps_exactly_the_acknowledged_commits(
        mode in prop_oneof![Just(PoolMode::Traditional), Just(PoolMode::Swizzling), Just(PoolMode::MainMemory)],
        steps in prop::collection::vec(step_strategy(), 1..25),
        crash in prop_oneof![
            Just(CrashMode::DropUnsynced),
            Just(CrashMode::KeepUnsynced),
            any::<u64>().prop_map(|seed| CrashMode::Torn { seed }),
        ],
    ) {
        workload_then_crash(mode, &steps, crash);
    }
}

/// Inserts of 1,500 keys in random order, 30 to a transaction, into a 16-frame pool.
fn inserts() -> Vec<Step> {
    let mut keys: Vec<u16> = (0..1500).collect();
    let mut x = 0x9E37_79B9u32;
    for i in (1..keys.len()).rev() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        keys.swap(i, x as usize % (i + 1));
    }
    keys.chunks(30).map(|c| Step::Txn(c.iter().map(|&k| Write::Put(k, 7)).collect(), End::Commit)).collect()
}

/// [`inserts`] into a new database `b` makes on `fs`, then a power loss: the acknowledged
/// state and the log the power loss left.
fn inserts_then_power_loss(b: swizzledb::Builder, fs: &FaultFs) -> (Model, Vec<(Lsn, Record)>) {
    let db = b.create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let out = run_steps(&db, &tree, &inserts(), &Model::new(), &mut Vec::new());
    assert!(out.error.is_none(), "{:?}", out.error);
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db);
    (out.acked, records(fs))
}

/// R29: splits log split-offs, not images; the 16-frame pool evicts old nodes before their new
/// nodes reach the file and a sync, so some are resolved by their images (B36); after a power
/// loss restart derives the unresolved ones from their old nodes, logs their images before it
/// writes a page, and loses nothing.
#[test]
fn r29_splits_log_split_offs_resolved_by_images_or_rebuilt_by_restart() {
    let fs = new_fs();
    let (acked, log) = inserts_then_power_loss(lazy(PoolMode::Swizzling, &fs), &fs);
    let (split_offs, lone_images) = count_split_offs_and_lone_images(&log);
    assert!(split_offs > 20, "R29: splits log split-offs ({split_offs})");
    assert!(lone_images > 0, "B36: evictions resolved some split-offs by their images");
    assert_eq!(count_split_images(&log), 0, "R29: no split logs its new node's image");
    let db = lazy(PoolMode::Swizzling, &fs).open(db_path()).unwrap();
    assert_state(&db, &acked, "after the power loss");
    db.close().unwrap();
}

/// R29: in a pool that never writes a page, no split-off is resolved before the power loss:
/// restart derives every one from its old node, logs their images before it writes a page, and
/// a crash right after that restart needs no derivation.
#[test]
fn r29_restart_derives_unresolved_split_offs_and_logs_their_images_first() {
    let fs = new_fs();
    let big = |fs: &FaultFs| lazy(PoolMode::Swizzling, fs).pool_bytes(64 << 20);
    let db = big(&fs).create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let out = run_steps(&db, &tree, &inserts(), &Model::new(), &mut Vec::new());
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(db.stats().write_backs, 0, "nothing written before the power loss");
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db);
    let db = big(&fs).open(db_path()).unwrap();
    let stats = db.restart_stats();
    assert!(
        stats.derived_pages_imaged > 20,
        "R29: restart rebuilt split-offs from their old nodes: {stats:?}"
    );
    assert_state(&db, &out.acked, "after the power loss");
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    // R11: the images restart logged stand in for the derivations.
    let db = big(&fs).open(db_path()).unwrap();
    assert_eq!(db.restart_stats().derived_pages_imaged, 0, "R29: nothing left to derive");
    assert_state(&db, &out.acked, "after a crash right after restart");
    db.close().unwrap();
}

/// R29: the same inserts log split-offs by default (no archive, classical checkpoints), and
/// every new node's image with the option off: the baseline it saves against. Read from the
/// log a power loss left (a close would truncate it).
#[test]
fn r29_split_offs_by_default_and_images_with_the_option_off() {
    for lazy in [None, Some(false)] {
        let fs = new_fs();
        let b = builder(PoolMode::Swizzling, Arc::new(fs.clone()));
        let b = match lazy {
            Some(on) => b.lab(|l| l.lazy_split_images(on)),
            None => b,
        };
        let (_, log) = inserts_then_power_loss(b, &fs);
        let (split_offs, _) = count_split_offs_and_lone_images(&log);
        let split_images = count_split_images(&log);
        if lazy.is_none() {
            assert!(
                split_offs > 20 && split_images == 0,
                "{split_offs} split-offs, {split_images} split images"
            );
        } else {
            assert!(
                split_offs == 0 && split_images > 20,
                "{split_offs} split-offs, {split_images} split images"
            );
        }
    }
}

/// R29 rule 7: a database written with split-offs, crashed, and opened with the log archive
/// (which turns them off) restarts exactly, archives the split-offs with the rest of its log,
/// and restarts exactly again after a second crash, instantly from that archive.
#[test]
fn r29_a_database_written_with_split_offs_opens_with_the_archive() {
    let fs = new_fs();
    let (acked, log) = inserts_then_power_loss(lazy(PoolMode::Traditional, &fs), &fs);
    assert!(count_split_offs_and_lone_images(&log).0 > 20, "split-offs before the crash");
    let archived = |restart| {
        builder(PoolMode::Traditional, Arc::new(fs.clone())).log_archive(true).restart_mode(restart)
    };
    let db = archived(swizzledb::RestartMode::Classical).open(db_path()).unwrap();
    assert_state(&db, &acked, "after the crash, opened with the archive");
    let tree = db.tree(TREE).unwrap();
    let more = [Step::Txn((0..300).map(|k| Write::Put(k * 5, 0x3C)).collect(), End::Commit)];
    let after = run_steps(&db, &tree, &more, &acked, &mut Vec::new());
    assert!(after.error.is_none(), "{:?}", after.error);
    db.archive_log().unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db);
    let db = archived(swizzledb::RestartMode::Instant).open(db_path()).unwrap();
    assert_state(&db, &after.acked, "after a second crash, restarted instantly");
    db.close().unwrap();
}

/// R29: the option is refused with the log archive, whose page-local redo cannot follow a
/// split-off, and with decoupled checkpoints.
#[test]
fn r29_lazy_split_images_are_refused_with_the_log_archive() {
    let fs = new_fs();
    let err = lazy(PoolMode::Swizzling, &fs).log_archive(true).create(db_path()).map(drop).unwrap_err();
    assert!(matches!(&err, Error::Log(_)) && err.to_string().contains("archive"), "{err}");
    let err = lazy(PoolMode::Swizzling, &fs)
        .lab(|l| l.checkpoint_kind(swizzledb::CheckpointKind::Decoupled))
        .create(db_path())
        .map(drop)
        .unwrap_err();
    assert!(matches!(&err, Error::Log(_)) && err.to_string().contains("classical checkpoints"), "{err}");
}

/// B36, R29: ascending inserts split the rightmost leaf again and again, each split's new node
/// the source of the next: a chain of dependants as long as the run, with nothing written
/// while the pool holds it all. Resolving the chain (the close's writes), and restart deriving
/// it after a crash, must not go deeper on the stack with its length.
#[test]
fn r29_a_long_chain_of_split_offs_resolves_and_restarts() {
    for crash in [false, true] {
        let fs = new_fs();
        let b = || {
            swizzledb::Database::builder()
                .page_size(4096)
                .pool_bytes(64 << 20)
                .checkpoint_interval(None)
                .lab(|l| l.vfs(Arc::new(fs.clone())).lazy_split_images(true))
        };
        let db = b().create(db_path()).unwrap();
        let tree = db.create_tree(TREE).unwrap();
        const N: u32 = 150_000;
        for chunk in (0..N).collect::<Vec<_>>().chunks(5000) {
            db.transact(|tx| {
                for &i in chunk {
                    tx.insert(&tree, &i.to_be_bytes(), &[7u8; 100])?;
                }
                Ok(())
            })
            .unwrap();
        }
        drop(tree);
        if crash {
            fs.crash(CrashMode::DropUnsynced);
            drop(db);
            let (split_offs, _) = count_split_offs_and_lone_images(&records_in_segments(&fs, None));
            assert!(split_offs > 3000, "{split_offs} split-offs");
        } else {
            db.close().unwrap();
        }
        let db = b().open(db_path()).unwrap();
        let tree = db.tree(TREE).unwrap();
        assert_eq!(tree.len().unwrap(), N as usize, "crash {crash}");
        tree.verify().unwrap();
        drop(tree);
        db.close().unwrap();
    }
}

/// B36 rule 5: a write-back of the whole pool (the page cleaner's round, here through
/// `Database::flush`) writes every chain of split-offs deepest first, each depth in batches of
/// its own, so every source finds its dependants written and pays a sync, never an image —
/// chains included, whose middle pages are sources and dependants at once.
#[test]
fn r29_b36_a_write_back_resolves_chains_of_split_offs_without_images() {
    let fs = new_fs();
    let db = swizzledb::Database::builder()
        .page_size(4096)
        .pool_bytes(64 << 20)
        .checkpoint_interval(None)
        .lab(|l| l.vfs(Arc::new(fs.clone())).lazy_split_images(true))
        .create(db_path())
        .unwrap();
    let tree = db.create_tree(TREE).unwrap();
    // Ascending keys split the rightmost leaf again and again: chains of dependants up to
    // eight long, and interleaved random keys make dependants with none of their own.
    // (The scattered keys are 0xff and a bijection of the counter: distinct, and after every
    // ascending one.)
    for chunk in (0..40_000u32).collect::<Vec<_>>().chunks(2000) {
        db.transact(|tx| {
            for &i in chunk {
                tx.insert(&tree, &i.to_be_bytes(), &[7u8; 100])?;
                if i % 4 == 0 {
                    let scattered = [&[0xff][..], &i.wrapping_mul(0x9e37_79b1).to_be_bytes()].concat();
                    tx.insert(&tree, &scattered, &[9u8; 100])?;
                }
            }
            Ok(())
        })
        .unwrap();
    }
    let before = count_split_offs_and_lone_images(&records_in_segments(&fs, None));
    assert!(before.0 > 400, "{} split-offs: too few to make chains", before.0);
    db.flush().unwrap();
    let after = count_split_offs_and_lone_images(&records_in_segments(&fs, None));
    assert_eq!(
        after.1 - before.1,
        0,
        "B36 rule 5: {} dependants resolved by their images in a write-back",
        after.1 - before.1
    );
    drop(tree);
    db.close().unwrap();
    let db = swizzledb::Database::builder()
        .page_size(4096)
        .lab(|l| l.vfs(Arc::new(fs.clone())))
        .open(db_path())
        .unwrap();
    let tree = db.tree(TREE).unwrap();
    assert_eq!(tree.len().unwrap(), 50_000);
    tree.verify().unwrap();
    drop(tree);
    db.close().unwrap();
}

/// R29 rule 6, R18: without a log archive, a page made as a split-off is rebuilt from its
/// source's history before the split when its file copy is damaged, as a page made with its
/// image is rebuilt from that image: every node page of the file damaged while the database is
/// open (the log keeps its whole history: no checkpoint truncates it), and every record reads
/// back exactly.
#[test]
fn r29_single_page_recovery_derives_a_split_off_from_its_source() {
    use swizzledb::lab::DatabaseExt as _;
    use swizzledb_buffer::page::{self, PageType};
    use swizzledb_io::{OpenMode, Vfs};
    const PS: usize = 4096;
    let fs = new_fs();
    let path = db_path();
    let db = swizzledb::Database::builder()
        .page_size(PS)
        .pool_bytes(48 * PS)
        .checkpoint_interval(None)
        .max_log_bytes(1 << 30)
        .log_segment_bytes(SEGMENT)
        .lab(|l| l.vfs(Arc::new(fs.clone())).cleaner(swizzledb::Cleaner::None))
        .create(&path)
        .unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let mut oracle = std::collections::BTreeMap::new();
    let mut x = 0x2545_F491u32;
    for _ in 0..40 {
        db.transact(|tx| {
            for _ in 0..75 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let k = format!("key{:06}", x % 100_000).into_bytes();
                tx.put(&tree, &k, &[x as u8; 60])?;
                oracle.insert(k, vec![x as u8; 60]);
            }
            Ok(())
        })
        .unwrap();
    }
    db.pool().flush().unwrap();
    db.pool().sweep_evict(1 << 20).unwrap();
    let split_offs = count_split_offs_and_lone_images(&records(&fs)).0;
    assert!(split_offs > 20, "{split_offs} split-offs");
    let bytes = fs.contents(&path).unwrap();
    let nodes: Vec<u64> = (1..bytes.len() / PS)
        .filter(|&i| {
            let p = &bytes[i * PS..(i + 1) * PS];
            page::verify(p, swizzledb_sync::PageId::new(i as u64).unwrap()).is_ok()
                && matches!(page::page_type(p), Some(PageType::Leaf))
        })
        .map(|i| i as u64)
        .collect();
    assert!(nodes.len() > 48, "{} leaves", nodes.len());
    let f = fs.open(&path, OpenMode::EXISTING).unwrap();
    for &id in &nodes {
        f.write_all_at(&[0xA5; 64], id * PS as u64 + 1500).unwrap();
    }
    f.sync().unwrap();
    for (k, v) in &oracle {
        assert_eq!(tree.get(k).unwrap().as_ref(), Some(v), "key {}", String::from_utf8_lossy(k));
    }
    assert!(db.stats().pages_repaired >= nodes.len() as u64 - 48, "{:?}", db.stats().pages_repaired);
    tree.verify().unwrap();
    drop(tree);
    db.close().unwrap();
}
