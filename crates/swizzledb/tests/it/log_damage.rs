//! Damage in the durable log (wal README W8, RECOVERY.md R24), through the public API: a
//! crashed database whose log is damaged below its last acknowledged commit is refused with a
//! typed error naming the LSN, opens at the last consistent point only when asked to, and a
//! torn tail (the unsynced end a crash leaves) still opens silently.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb::{wal_dir, Database, Error, LogError, LogRecovery};
use swizzledb_io::{CrashMode, FaultFs, OpenMode, Vfs};

const ROWS: u32 = 1000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} of the one big transaction").into_bytes()
}

/// A logged database with the defaults, 1,000 rows committed in one transaction, then killed:
/// every write the process made survives (the operating system had it), nothing else happens.
fn commit_then_kill() -> (FaultFs, PathBuf) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let path = PathBuf::from("/d/db");
    let db = Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    db.transact(|tx| {
        for i in 0..ROWS {
            tx.put(&t, &key(i), &value(i))?;
        }
        Ok(())
    })
    .unwrap();
    // A kill: what was written stays, and the dead instance's threads can change nothing more.
    fs.power_off(CrashMode::KeepUnsynced);
    drop(t);
    drop(db);
    fs.power_on();
    (fs, path)
}

/// The log's one segment file.
fn segment(fs: &FaultFs, path: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = fs
        .list(&wal_dir(path))
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 1, "the defaults keep this log in one segment: {logs:?}");
    logs.pop().unwrap()
}

/// Flips 16 bytes at two thirds of what the log wrote in the segment file (wal README W13: the
/// file is allocated whole, zeros after the log's end); returns that offset.
fn flip_16_bytes_at_two_thirds(fs: &FaultFs, file: &Path) -> u64 {
    let f = fs.open(file, OpenMode::EXISTING).unwrap();
    let all = fs.contents(file).unwrap();
    let written = all.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1) as u64;
    let at = written * 2 / 3;
    let mut bytes = [0u8; 16];
    f.read_at(&mut bytes, at).unwrap();
    for b in &mut bytes {
        *b ^= 0xFF;
    }
    f.write_all_at(&bytes, at).unwrap();
    f.sync().unwrap();
    at
}

fn rows(db: &Database) -> usize {
    let t = db.tree("t").unwrap();
    t.verify().unwrap();
    (0..ROWS).filter(|&i| t.get(&key(i)).unwrap().is_some()).count()
}

#[test]
fn r23_damage_before_the_last_commit_is_refused_naming_the_lsn() {
    let (fs, path) = commit_then_kill();
    let file = segment(&fs, &path);
    let at = flip_16_bytes_at_two_thirds(&fs, &file);
    let before = fs.contents(&file).unwrap();

    let err =
        Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).open(&path).expect_err("open must refuse");
    let Error::Log(LogError::DurableDamage(damage)) = &err else {
        panic!("expected Error::Log(LogError::DurableDamage), got {err:?}")
    };
    // The damaged frame holds the flipped bytes (frames are at most a few hundred bytes here).
    assert!(damage.lsn.0 <= at && at - damage.lsn.0 < 64 << 10, "{damage:?} vs offset {at}");
    assert!(damage.durable > damage.lsn, "a sync made a point above the damage durable");
    assert!(damage.records_beyond > 0 && damage.bytes_beyond > 0, "{damage:?}");
    let message = err.to_string();
    assert!(message.contains(&damage.lsn.to_string()), "the message names the LSN: {message}");
    assert!(message.contains("backup") && message.contains("PointInTime"), "and what to do: {message}");
    assert_eq!(fs.contents(&file).unwrap(), before, "a refused open changes nothing");

    // Refused again, the same way: nothing was cut.
    let again =
        Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).open(&path).expect_err("still refused");
    assert!(matches!(again, Error::Log(LogError::DurableDamage(d)) if d.lsn == damage.lsn));
}

#[test]
fn r23_point_in_time_opens_at_the_last_consistent_point_and_says_so() {
    let (fs, path) = commit_then_kill();
    let at = flip_16_bytes_at_two_thirds(&fs, &segment(&fs, &path));
    let Error::Log(LogError::DurableDamage(damage)) =
        Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).open(&path).expect_err("refused")
    else {
        panic!("expected DurableDamage")
    };

    let db = Database::builder()
        .lab(|l| l.vfs(Arc::new(fs.clone())))
        .log_recovery(LogRecovery::PointInTime)
        .open(&path)
        .unwrap();
    let stats = db.restart_stats();
    assert_eq!(stats.log_cut_at_damage, Some(damage.lsn.0), "the cut is reported at the damaged LSN");
    assert!(stats.log_cut_at_damage.unwrap() <= at);
    assert_eq!(stats.log_lost_durable_to, damage.durable.0);
    assert!(stats.log_records_dropped > 0 && stats.log_bytes_dropped > 0, "{stats:?}");
    // The commit record lay beyond the damage: the transaction is rolled back as a whole.
    assert_eq!(rows(&db), 0, "all or nothing of the one transaction");
    let t = db.tree("t").unwrap();
    t.upsert(b"after", b"the cut").unwrap();
    drop(t);
    db.close().unwrap();

    // The cut log is consistent: a strict open accepts it and reports nothing.
    let db = Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).open(&path).unwrap();
    assert_eq!(db.restart_stats().log_cut_at_damage, None);
    assert_eq!(db.tree("t").unwrap().get(b"after").unwrap(), Some(b"the cut".to_vec()));
    assert_eq!(rows(&db), 0);
    db.close().unwrap();
}

#[test]
fn r23_a_torn_tail_still_opens_silently() {
    let (fs, path) = commit_then_kill();
    // The end of the last write is cut short, as a crash during it leaves it (wal README W13:
    // zeros after it, where the file was allocated).
    let file = segment(&fs, &path);
    let f = fs.open(&file, OpenMode::EXISTING).unwrap();
    let written = fs.contents(&file).unwrap().iter().rposition(|&b| b != 0).unwrap() as u64 + 1;
    f.write_all_at(&[0; 5], written - 5).unwrap();
    f.sync().unwrap();
    drop(f);

    let db = Database::builder().lab(|l| l.vfs(Arc::new(fs.clone()))).open(&path).unwrap();
    let stats = db.restart_stats();
    assert_eq!(stats.log_cut_at_damage, None, "a torn tail is not damage");
    assert!(stats.log_torn_bytes > 0, "the torn tail is reported: {stats:?}");
    assert_eq!(rows(&db), ROWS as usize, "every committed row is there");
    db.close().unwrap();
}

/// How a crafted loser's undo chain goes wrong (R6, R10): every record passes its checksum.
#[derive(Clone, Copy, Debug)]
enum BadChain {
    /// A change names itself as its transaction's previous record.
    PrevIsItself,
    /// A change names a later record as its previous one.
    PrevIsLater,
    /// A compensation record names itself as the next record to undo.
    UndoNextIsItself,
    /// A change names another (committed) transaction's change as its previous record.
    PrevIsAnotherTransactions,
}

/// A cleanly closed logged database with a few committed rows, then a loser appended to its
/// log whose undo chain loops or runs forward (`bad`); every record well formed. Returns the
/// database's path and the crafted record's LSN.
fn loser_with_a_bad_chain(dir: &Path, bad: BadChain) -> (PathBuf, u64) {
    use swizzledb::lab::record::{Change, Record};
    use swizzledb::lab::TreeExt as _;
    use swizzledb_sync::{Lsn, TxnId};
    let path = dir.join("db.swz");
    let db = Database::builder().checkpoint_interval(None).create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..10 {
        t.upsert(&key(i), &value(i)).unwrap();
    }
    // Ten short records: the tree is its root leaf.
    let root = t.root_page();
    drop(t);
    db.close().unwrap();
    let log = swizzledb_wal::LogManager::open(swizzledb_wal::LogConfig::new(wal_dir(&path))).unwrap();
    let txn = TxnId(1 << 40);
    let leaf_of = |txn: TxnId, n: u32, prev: Lsn, undo_next: Option<Lsn>| Record::Leaf {
        txn,
        prev,
        undo_next,
        tree: root,
        page: root,
        change: Change::Insert { key: key(ROWS + n), value: b"loser".to_vec() },
        base: None,
        chain: vec![],
        freed: vec![],
        commits: false,
    };
    let leaf = |n: u32, prev: Lsn, undo_next: Option<Lsn>| leaf_of(txn, n, prev, undo_next);
    let clr = matches!(bad, BadChain::UndoNextIsItself);
    // Two records of the crafted one's size give the step between LSNs, so the crafted
    // record can name its own LSN (or the next one).
    let first = log.append(&leaf(0, Lsn(0), None).encode()).unwrap();
    let a = log.append(&leaf(1, first, clr.then_some(first)).encode()).unwrap();
    let b = log.append(&leaf(2, a, clr.then_some(first)).encode()).unwrap();
    let own = Lsn(b.0 + (b.0 - a.0));
    let crafted = match bad {
        BadChain::PrevIsItself => leaf(3, own, None),
        BadChain::PrevIsLater => leaf(3, Lsn(own.0 + (b.0 - a.0)), None),
        BadChain::UndoNextIsItself => leaf(3, b, Some(own)),
        BadChain::PrevIsAnotherTransactions => leaf(3, b, None),
    };
    let crafted = match bad {
        BadChain::PrevIsAnotherTransactions => {
            // Another transaction's committing change, then the loser's next change naming it.
            let mut other = leaf_of(TxnId((1 << 40) + 64), 5, Lsn(0), None);
            if let Record::Leaf { commits, .. } = &mut other {
                *commits = true;
            }
            let at = log.append(&other.encode()).unwrap();
            let next = log.append(&leaf(6, at, None).encode()).unwrap();
            log.close().unwrap();
            return (path, next.0);
        }
        _ => crafted,
    };
    assert_eq!(log.append(&crafted.encode()).unwrap(), own, "the step between LSNs held");
    if matches!(bad, BadChain::PrevIsLater) {
        // The record it names exists, and names the crafted one: a cycle of two.
        log.append(&leaf(4, own, None).encode()).unwrap();
    }
    log.close().unwrap();
    (path, own.0)
}

#[test]
fn r10_a_loser_whose_undo_chain_loops_is_refused_naming_the_lsn_not_followed_forever() {
    for bad in [
        BadChain::PrevIsItself,
        BadChain::PrevIsLater,
        BadChain::UndoNextIsItself,
        BadChain::PrevIsAnotherTransactions,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = loser_with_a_bad_chain(dir.path(), bad);
        let (tx, rx) = std::sync::mpsc::channel();
        let opening = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Database::builder().open(&opening).map(|db| db.close()));
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_else(|_| {
            panic!("{bad:?}: open did not return within 20 s (it follows the chain forever)")
        });
        match opened {
            Err(Error::LogCorrupted { reason, .. }) => {
                assert!(reason.contains("undo chain"), "{bad:?}: {reason}")
            }
            other => panic!("{bad:?}: expected LogCorrupted, got {other:?}"),
        }
        // Nothing was changed: the committed rows read back once the log is set aside.
        let file = swizzledb::inspect::DatabaseFile::open(&path).unwrap();
        let mut n = 0;
        file.dump("t", |_, _| n += 1).unwrap();
        assert!(n >= 10, "{bad:?}: {n} records");
    }
}
