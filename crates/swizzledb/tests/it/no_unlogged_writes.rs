//! No unlogged write path on a logged database (RECOVERY.md R12): every way the public API
//! offers to change a logged database — a tree handle and its clones, a handle opened again,
//! compare-and-swap, transactions, `transact` — is logged, so a crash right after the calls
//! returned keeps all of it. (The engine tree's unlogged handle, which lost every row written
//! through it, is not reachable from the API at all: the `compile_fail` examples on
//! `swizzledb::Tree` check that.)

use std::path::Path;
use std::sync::Arc;
use swizzledb::{CommitMode, Database, PoolMode};
use swizzledb_io::{CrashMode, FaultFs, Vfs};

const ROWS: u32 = 2_000;

fn key(i: u32) -> Vec<u8> {
    format!("row{i:06}").into_bytes()
}

/// Writes `ROWS` rows through each public write path, crashes (unsynced writes lost), reopens
/// and checks every row.
fn every_write_path_survives_a_crash(mode: PoolMode, locking: bool) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let path = Path::new("/d/db");
    let builder = Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(256 * 4096)
        .commit_mode(CommitMode::Sync)
        .lab(|l| l.vfs(Arc::new(fs.clone())).locking(locking));
    let db = builder.clone().create(path).unwrap();
    assert!(db.is_logged());
    let tree = db.create_tree("t").unwrap();
    let quarter = ROWS / 4;
    // A clone of the handle (what the unlogged path was reached through).
    let clone = tree.clone();
    for i in 0..quarter {
        clone.upsert(&key(i), b"upsert").unwrap();
    }
    // A handle opened again by name, inserts and compare-and-swap.
    let again = db.tree("t").unwrap();
    for i in quarter..2 * quarter {
        again.insert(&key(i), b"insert").unwrap();
        again.compare_and_swap(&key(i), Some(b"insert"), Some(b"cas")).unwrap().unwrap();
    }
    // A transaction per hundred rows, and `transact`.
    for chunk in (2 * quarter..3 * quarter).collect::<Vec<_>>().chunks(100) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(&tree, &key(i), b"txn").unwrap();
        }
        tx.commit().unwrap();
    }
    db.transact(|tx| {
        for i in 3 * quarter..ROWS {
            tx.insert(&tree, &key(i), b"transact")?;
        }
        Ok(())
    })
    .unwrap();
    // Deletes are changes too.
    assert!(tree.delete(&key(0)).unwrap());
    fs.crash(CrashMode::DropUnsynced);
    drop((tree, clone, again));
    drop(db);

    let db = builder.open(path).unwrap();
    let tree = db.tree("t").unwrap();
    tree.verify().unwrap();
    let want = |i: u32| -> Option<&'static [u8]> {
        match i {
            0 => None,
            i if i < quarter => Some(b"upsert"),
            i if i < 2 * quarter => Some(b"cas"),
            i if i < 3 * quarter => Some(b"txn"),
            _ => Some(b"transact"),
        }
    };
    let mut lost = Vec::new();
    for i in 0..ROWS {
        if tree.get(&key(i)).unwrap().as_deref() != want(i) {
            lost.push(i);
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {ROWS} rows wrong after the crash ({mode:?}, locking {locking}): {lost:?}",
        lost.len()
    );
    assert_eq!(tree.len().unwrap(), ROWS as usize - 1);
    db.close().unwrap();
}

#[test]
fn r12_every_public_write_path_is_logged_swizzling() {
    every_write_path_survives_a_crash(PoolMode::Swizzling, true);
}

#[test]
fn r12_every_public_write_path_is_logged_without_record_locks() {
    every_write_path_survives_a_crash(PoolMode::Swizzling, false);
}

#[test]
fn r12_every_public_write_path_is_logged_traditional_and_main_memory() {
    every_write_path_survives_a_crash(PoolMode::Traditional, true);
    every_write_path_survives_a_crash(PoolMode::MainMemory, true);
}
