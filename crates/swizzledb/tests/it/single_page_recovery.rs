//! Single-page recovery (RECOVERY.md R18; buffer README B25), through the public API: a page
//! whose copy in the file is damaged, or older than its last write, is rebuilt from the log
//! archive and the log when it is fetched — and by restart's redo when redo needs it — with
//! the committed data intact, the repair counted and written back.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{BufferError, Database, TreeError};
use swizzledb_buffer::page::{self, PageType};
use swizzledb_io::{CrashMode, FaultFs, OpenMode, Vfs};

const PS: usize = 4096;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    vec![(i + round) as u8; 40 + (i % 50) as usize]
}

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

/// 4 KiB pages, a pool of 48 of them (the tree is larger: pages are evicted and read back), no
/// background checkpoints.
fn builder(fs: &FaultFs, archive: bool) -> swizzledb::Builder {
    Database::builder()
        .page_size(PS)
        .pool_bytes(48 * PS)
        .checkpoint_interval(None)
        .log_archive(archive)
        .lab(|l| l.vfs(Arc::new(fs.clone())))
}

/// Writes `n` keys in transactions of 100, then rewrites every third and deletes every
/// eleventh; returns the oracle.
fn load(db: &Database, n: u32, round: u32, oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.tree("t").or_else(|_| db.create_tree("t")).unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        db.transact(|tx| {
            for &i in chunk {
                tx.put(&t, &key(i), &value(i, round))?;
            }
            Ok(())
        })
        .unwrap();
        for &i in chunk {
            oracle.insert(key(i), value(i, round));
        }
    }
    db.transact(|tx| {
        for i in (0..n).step_by(3) {
            tx.put(&t, &key(i), &value(i, round + 7))?;
        }
        for i in (0..n).step_by(11) {
            tx.delete(&t, &key(i))?;
        }
        Ok(())
    })
    .unwrap();
    for i in (0..n).step_by(3) {
        oracle.insert(key(i), value(i, round + 7));
    }
    for i in (0..n).step_by(11) {
        oracle.remove(&key(i));
    }
}

/// No archive; 64 KiB log segments and a 256 KiB log bound, so checkpoints truncate the log.
fn small_log(fs: &FaultFs) -> swizzledb::Builder {
    builder(fs, false).log_segment_bytes(64 << 10).max_log_bytes(256 << 10)
}

fn check(db: &Database, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.tree("t").unwrap();
    for (k, v) in oracle {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v), "key {}", String::from_utf8_lossy(k));
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scanned, want, "a full scan returns exactly the committed records");
    t.verify().unwrap();
}

/// The file's pages that are B-tree nodes (leaves and inner nodes), by id.
fn node_pages(fs: &FaultFs, path: &Path) -> Vec<u64> {
    pages_of(fs, path, |t| matches!(t, PageType::Leaf | PageType::Inner))
}

/// The file's sound pages whose type `keep` accepts, by id.
fn pages_of(fs: &FaultFs, path: &Path, keep: impl Fn(PageType) -> bool) -> Vec<u64> {
    let bytes = fs.contents(path).unwrap();
    (1..bytes.len() / PS)
        .filter(|&i| {
            let p = &bytes[i * PS..(i + 1) * PS];
            page::verify(p, swizzledb_sync::PageId::new(i as u64).unwrap()).is_ok()
                && page::page_type(p).is_some_and(&keep)
        })
        .map(|i| i as u64)
        .collect()
}

/// Overwrites 64 bytes in the middle of page `id` (its checksum then fails).
fn damage(fs: &FaultFs, path: &Path, id: u64) {
    let f = fs.open(path, OpenMode::EXISTING).unwrap();
    f.write_all_at(&[0xA5; 64], id * PS as u64 + 1500).unwrap();
    f.sync().unwrap();
}

/// R18: every node page of a closed database is damaged; reopened, every record reads back
/// exactly, each damaged page read is rebuilt from the archive once and written back, so the
/// next open finds a whole file.
#[test]
fn r18_pages_damaged_while_closed_are_rebuilt_on_fetch() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = BTreeMap::new();
    let db = builder(&fs, true).create(path).unwrap();
    load(&db, 3000, 0, &mut oracle);
    db.close().unwrap();
    let damaged = node_pages(&fs, path);
    assert!(damaged.len() > 48, "the tree ({} pages) is larger than the pool", damaged.len());
    for &id in &damaged {
        damage(&fs, path, id);
    }

    let db = builder(&fs, true).open(path).unwrap();
    check(&db, &oracle);
    // Pages whose last write is still in the double-write area are put back at open (R3, with
    // the archive's changes after that copy); the rest are rebuilt when read.
    let repaired = db.stats().pages_repaired + db.restart_stats().torn_pages_restored;
    assert!(repaired >= damaged.len() as u64, "every damaged page was read and repaired: {repaired}");
    db.close().unwrap();
    let whole = node_pages(&fs, path);
    assert!(damaged.iter().all(|id| whole.contains(id)), "the repairs were written back");

    let db = builder(&fs, true).open(path).unwrap();
    check(&db, &oracle);
    assert_eq!(db.stats().pages_repaired, 0, "nothing left to repair");
    db.close().unwrap();
}

/// R18: a crash, then every node page in the file damaged: restart and the reads after it
/// rebuild what they need from the archive and the log, and no committed change is lost. (Redo
/// itself rarely reads a page from the file — the first change after a page's last write
/// carries its image, R3 — so most repairs happen on fetch.)
#[test]
fn r18_after_a_crash_damaged_pages_are_rebuilt_and_no_commit_is_lost() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = BTreeMap::new();
    let db = builder(&fs, true).create(path).unwrap();
    load(&db, 2000, 0, &mut oracle);
    db.pool().flush().unwrap();
    db.checkpoint().unwrap();
    // Changes to the first keys after the checkpoint, some pages written again, then the
    // crash: the pages of the other keys are clean in the file.
    load(&db, 300, 1, &mut oracle);
    db.pool().sweep_evict(16).unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    for id in node_pages(&fs, path) {
        damage(&fs, path, id);
    }
    let db = builder(&fs, true).open(path).unwrap();
    check(&db, &oracle);
    let repaired = db.restart_stats().pages_repaired + db.stats().pages_repaired;
    assert!(repaired > 0, "{:?}", db.restart_stats());
    db.close().unwrap();
}

/// R18, B25: a write the device acknowledged but lost leaves an older, valid copy of the page;
/// the next read finds it below the page LSN of its last write and rebuilds the page.
#[test]
fn r18_a_lost_write_is_found_stale_and_rebuilt() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = BTreeMap::new();
    let db = builder(&fs, true).create(path).unwrap();
    load(&db, 3000, 0, &mut oracle);
    db.pool().flush().unwrap();
    let old = fs.contents(path).unwrap();
    load(&db, 3000, 1, &mut oracle);
    db.pool().flush().unwrap();
    // Every page write since the copy is lost: the file holds the old, valid pages again.
    let f = fs.open(path, OpenMode::EXISTING).unwrap();
    let len = (f.len().unwrap() as usize).min(old.len());
    f.write_all_at(&old[PS..len], PS as u64).unwrap();
    f.sync().unwrap();
    // Evict what can be evicted, so that reads go to the file.
    db.pool().sweep_evict(1 << 20).unwrap();
    check(&db, &oracle);
    assert!(db.stats().pages_repaired > 0, "stale pages were found and rebuilt");
    db.close().unwrap();
}

/// R18: without a log archive, a page whose last image left the log cannot be rebuilt: reading
/// it is a typed error naming the page and the failed recovery; nothing panics, other pages
/// read normally. (A page whose image the log still holds is rebuilt from the log.)
#[test]
fn r18_without_an_archive_an_unrebuildable_page_is_a_typed_error() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = BTreeMap::new();
    let db = small_log(&fs).create(path).unwrap();
    load(&db, 3000, 0, &mut oracle);
    // More log than the bound after the first load: the images of its pages leave the log.
    load(&db, 3000, 1, &mut oracle);
    load(&db, 3000, 2, &mut oracle);
    db.close().unwrap();
    let clean = fs.contents(path).unwrap();
    // A node page the tree still uses (not a freed one): the first whose damage some read meets.
    for victim in node_pages(&fs, path) {
        damage(&fs, path, victim);
        let restore = || {
            let f = fs.open(path, OpenMode::EXISTING).unwrap();
            f.write_all_at(&clean, 0).unwrap();
            f.sync().unwrap();
        };
        let db = small_log(&fs).open(path).unwrap();
        let t = match db.tree("t") {
            Ok(t) => t,
            Err(e) => {
                // The root is read when the tree is opened: that refuses, naming it.
                let text = e.to_string();
                assert!(
                    text.contains(&format!("page {victim}")) && text.contains("single-page recovery failed"),
                    "{text}"
                );
                drop(db);
                restore();
                continue;
            }
        };
        let (mut good, mut bad) = (0, 0);
        for (k, v) in &oracle {
            match t.get(k) {
                Ok(got) => {
                    assert_eq!(got.as_ref(), Some(v));
                    good += 1;
                }
                Err(TreeError::Buffer(BufferError::Corrupted { page, reason, .. })) => {
                    assert_eq!(page.get(), victim);
                    assert!(reason.contains("single-page recovery failed"), "{reason}");
                    assert!(
                        reason.contains("log archive"),
                        "the error says what would have helped: {reason}"
                    );
                    bad += 1;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        // A page whose image is still in the log is rebuilt from the log alone.
        let repaired = db.stats().pages_repaired;
        assert!(bad == 0 || repaired == 0, "a page is either rebuilt or refused");
        drop(db);
        if bad > 0 {
            assert!(good > 0, "keys on other pages read normally");
            return;
        }
        restore();
    }
    panic!("no damaged page was met");
}

/// R18 under faults: the write-back of a rebuilt page fails (a typed error, the fix fails), and
/// so does reading the archive during a repair; after the faults clear, a reopened database
/// rebuilds the page and every record reads back.
#[test]
fn r18_faults_during_a_repair_are_typed_errors_and_lose_nothing() {
    use swizzledb_io::{Fault, FaultRule, Op};
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = BTreeMap::new();
    let db = builder(&fs, true).create(path).unwrap();
    load(&db, 3000, 0, &mut oracle);
    db.close().unwrap();
    for id in node_pages(&fs, path) {
        damage(&fs, path, id);
    }
    for (rule, named) in [
        (FaultRule::new(Op::Write, Fault::Eio).on_path("/d/db").repeating(), "I/O error on /d/db"),
        (FaultRule::new(Op::Read, Fault::Eio).on_path(".run").repeating(), ".run"),
    ] {
        let db = builder(&fs, true).open(path).unwrap();
        fs.fail_next(rule);
        let err = db.tree("t").and_then(|t| {
            for k in oracle.keys() {
                t.get(k)?;
            }
            Ok(())
        });
        let err = err.expect_err("a repair met the fault");
        assert!(err.to_string().contains(named), "the error names the file that failed: {err}");
        drop(db);
        fs.clear_faults();
    }
    let db = builder(&fs, true).open(path).unwrap();
    check(&db, &oracle);
    assert!(db.stats().pages_repaired > 0);
    db.close().unwrap();
}

/// The file's overflow pages (large values' chains, btree T22), by id.
fn overflow_pages(fs: &FaultFs, path: &Path) -> Vec<u64> {
    pages_of(fs, path, |t| t == PageType::Overflow)
}

/// R17, R18: a record that writes a large value names every page of its overflow chain (and
/// of the chain it frees), and the archive keeps an entry per page named. Each entry holding
/// the whole record made a value's archive cost its size times its page count (a 600 KB value
/// of 4 KiB pages: 90 MB); the chain's and the freed pages' entries hold what their page needs,
/// so the archive grows with the values. The pages are still rebuilt from it: every overflow
/// page damaged while the database is closed reads back whole.
#[test]
fn r17_r18_a_large_values_archive_costs_its_size_and_rebuilds_its_pages() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let b = || builder(&fs, true).pool_bytes(2048 * PS);
    let big =
        |len: usize, seed: u8| -> Vec<u8> { (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect() };
    let db = b().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    db.archive_log().unwrap();
    let archived = |db: &Database, what: &str, values: usize| {
        let run = db.archive_log().unwrap().expect("a run");
        assert!(
            run.bytes < 3 * values as u64 + (64 << 10),
            "{what}: a run of {} bytes for {values} bytes of values ({} entries over {} pages)",
            run.bytes,
            run.entries,
            run.pages
        );
    };
    t.insert(b"a", &big(600_000, 1)).unwrap();
    t.insert(b"b", &big(300_000, 2)).unwrap();
    archived(&db, "two inserts", 900_000);
    t.upsert(b"a", &big(650_000, 3)).unwrap();
    archived(&db, "a replacement", 1_250_000);
    t.delete(b"b").unwrap();
    archived(&db, "a delete", 300_000);
    t.insert(b"c", &big(200_000, 4)).unwrap();
    db.close().unwrap();

    let damaged = overflow_pages(&fs, path);
    assert!(damaged.len() > 200, "{} overflow pages", damaged.len());
    for &id in &damaged {
        damage(&fs, path, id);
    }
    let db = b().open(path).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(b"a").unwrap(), Some(big(650_000, 3)));
    assert_eq!(t.get(b"b").unwrap(), None);
    assert_eq!(t.get(b"c").unwrap(), Some(big(200_000, 4)));
    assert!(db.stats().pages_repaired >= damaged.len() as u64, "{:?}", db.stats().pages_repaired);
    t.verify().unwrap();
    db.close().unwrap();
}
