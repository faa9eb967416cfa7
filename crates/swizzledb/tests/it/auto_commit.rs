//! An auto-commit write commits with its last leaf record (RECOVERY.md R2, btree README T11):
//! no `Commit` record follows a write that runs no maintenance pass after its change; one that
//! splits or passes a foster child logs its `Commit` as any transaction does. Restart keeps
//! both kinds of commit, also from a log that no checkpoint shortened.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::record::{Change, Record};
use swizzledb::{wal_dir, Cleaner, Database};
use swizzledb_io::{CrashMode, FaultFs, Vfs};
use swizzledb_sync::TxnId;
use swizzledb_wal::{LogConfig, LogManager};

/// Keys in random order (splitmix64).
fn mix(i: u64) -> [u8; 8] {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)).to_be_bytes()
}

/// What the log says of each transaction, oldest record first.
fn records_by_txn(fs: &FaultFs, path: &Path) -> HashMap<TxnId, Vec<Record>> {
    let mut config = LogConfig::new(wal_dir(path));
    config.vfs = Arc::new(fs.clone());
    let log = LogManager::open(config).unwrap();
    let mut txns: HashMap<TxnId, Vec<Record>> = HashMap::new();
    for item in log.scan(log.oldest()).unwrap() {
        let (_, body) = item.unwrap();
        let record = Record::decode(&body).unwrap();
        if let Some((txn, _)) = record.txn_link() {
            txns.entry(txn).or_default().push(record);
        }
    }
    txns
}

#[test]
fn r2_an_auto_commit_write_commits_with_its_leaf_record_and_restart_keeps_it() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let path = Path::new("/d/db");
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(16 << 20)
        .checkpoint_interval(None)
        .lab(|l| l.cleaner(Cleaner::None).vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..3000 {
        let key = mix(i);
        t.insert(&key, &[key[0]; 100]).unwrap();
        oracle.insert(key.to_vec(), vec![key[0]; 100]);
    }
    for i in (0..3000).step_by(10) {
        let key = mix(i);
        assert!(t.upsert(&key, b"replaced").unwrap());
        oracle.insert(key.to_vec(), b"replaced".to_vec());
    }
    for i in (5..3000).step_by(10) {
        assert!(t.delete(&mix(i)).unwrap());
        oracle.remove(&mix(i)[..]);
    }
    for i in (1..3000).step_by(50) {
        let key = mix(i);
        let old = oracle[&key[..]].clone();
        t.compare_and_swap(&key, Some(&old), Some(b"swapped")).unwrap().unwrap();
        oracle.insert(key.to_vec(), b"swapped".to_vec());
        // A mismatch changes nothing and logs nothing.
        assert!(t.compare_and_swap(&key, Some(b"stale"), Some(b"never")).unwrap().is_err());
    }
    // A large value in an overflow chain, then a small one in its place: the replacement logs
    // the removal and the insert (T22), and the insert commits.
    t.upsert(b"large", &vec![9; 10_000]).unwrap();
    t.upsert(b"large", b"small again").unwrap();
    oracle.insert(b"large".to_vec(), b"small again".to_vec());
    // The log and the pages are in the file; then a crash.
    db.flush().unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(t);
    drop(db);

    let txns = records_by_txn(&fs, path);
    let (mut by_leaf, mut by_commit) = (0, 0);
    for (txn, records) in &txns {
        let committing: Vec<usize> = (0..records.len())
            .filter(|&i| matches!(records[i], Record::Leaf { commits: true, .. }))
            .collect();
        let commits = records.iter().filter(|r| matches!(r, Record::Commit { .. })).count();
        match (committing.as_slice(), commits) {
            // The committing record is the transaction's last.
            ([i], 0) => {
                assert_eq!(*i, records.len() - 1, "txn {txn:?}: {records:?}");
                by_leaf += 1;
            }
            ([], 1) => {
                assert!(matches!(records.last(), Some(Record::Commit { .. })), "txn {txn:?}: {records:?}");
                by_commit += 1;
            }
            _ => panic!("txn {txn:?} commits {} times: {records:?}", committing.len() + commits),
        }
    }
    // Writes that split or passed a foster child commit with a `Commit`; the others (most)
    // with their leaf record.
    assert!(by_commit > 0 && by_leaf > 9 * by_commit, "{by_leaf} by a leaf record, {by_commit} by Commit");
    let large = txns
        .values()
        .find(|r| {
            r.len() == 2
                && matches!(&r[1], Record::Leaf { change: Change::Insert { key, .. }, .. } if key == b"large")
        })
        .expect("the large value's replacement");
    assert!(
        matches!(&large[0], Record::Leaf { change: Change::Delete { .. }, commits: false, .. }),
        "{large:?}"
    );
    assert!(matches!(&large[1], Record::Leaf { commits: true, .. }), "{large:?}");

    let db = builder.open(path).unwrap();
    let stats = db.restart_stats();
    assert_eq!(stats.losers, 0, "{stats:?}");
    let t = db.tree("t").unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
    assert_eq!(got.len(), oracle.len());
    assert!(got == oracle, "restart lost or kept the wrong values");
    db.close().unwrap();
}
