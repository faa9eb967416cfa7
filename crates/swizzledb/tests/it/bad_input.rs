//! Bad input gives typed errors naming what is wrong, never a panic, and never damages what is
//! already in the file.

use std::io::{Seek, SeekFrom, Write};
use std::ops::Bound;
use swizzledb::lab::TreeExt as _;
use swizzledb::{
    max_inline_value_len, max_key_len, max_value_len, BufferError, Database, Error, PoolMode, TreeError,
};

fn small() -> swizzledb::Builder {
    Database::builder().page_size(4096).pool_bytes(64 * 4096)
}

fn filled(path: &std::path::Path, n: u32) {
    let db = small().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..n {
        t.insert(&i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    db.close().unwrap();
}

#[test]
fn not_a_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.bin");
    std::fs::write(&path, vec![0x42u8; 20000]).unwrap();
    let err = small().open(&path).unwrap_err();
    assert!(matches!(err, Error::Buffer(BufferError::NotADatabase { .. })), "{err:?}");
    assert!(err.to_string().contains("junk.bin"), "{err}");
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(small().open(&path), Err(Error::Buffer(BufferError::NotADatabase { .. }))));
}

#[test]
fn opening_a_missing_file_names_it_and_the_way_to_create_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing-here.db");
    let err = small().open(&path).unwrap_err();
    assert!(matches!(&err, Error::NotFound(p) if *p == path), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("nothing-here.db"), "{msg}");
    assert!(msg.contains("Builder::create") && msg.contains("Builder::open_or_create"), "{msg}");
    assert!(!path.exists(), "open created {}", path.display());
    // open_or_create still creates it.
    small().open_or_create(&path).unwrap().close().unwrap();
    small().open(&path).unwrap().close().unwrap();
}

#[test]
fn page_size_mismatch_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    filled(&path, 10);
    let err = small().page_size(8192).open(&path).unwrap_err();
    assert!(
        matches!(err, Error::Buffer(BufferError::PageSizeMismatch { found: 4096, requested: 8192, .. })),
        "{err:?}"
    );
}

#[test]
fn other_format_version_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    filled(&path, 10);
    // The format version follows the 8-byte magic after the 32-byte page header.
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(40)).unwrap();
    f.write_all(&99u32.to_le_bytes()).unwrap();
    drop(f);
    let err = small().open(&path).unwrap_err();
    // The checksum is checked before or after the version; either way it is not a panic and it
    // names the file.
    assert!(
        matches!(err, Error::Buffer(BufferError::FormatVersion { .. } | BufferError::Corrupted { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("db.swz"));
}

/// A damaged page of an unlogged database (nothing to rebuild it from) is an error naming the
/// file, the page and the checksum; a logged database puts it back from the double-write area
/// or rebuilds it from the log (RECOVERY.md R3, R18) and reads every record.
#[test]
fn corrupted_page_is_reported_with_file_and_page() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        for logging in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db.swz");
            // The log kept at close (R25), so that single-page recovery can rebuild from it.
            let db = small().logging(logging).keep_log_on_close(true).create(&path).unwrap();
            let t = db.create_tree("t").unwrap();
            for i in 0..3000u32 {
                t.insert(&i.to_be_bytes(), &[7u8; 100]).unwrap();
            }
            db.close().unwrap();
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.seek(SeekFrom::Start(5 * 4096 + 1000)).unwrap();
            f.write_all(&[0xFF; 16]).unwrap();
            drop(f);
            let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 16 * 4096 };
            let opened = Database::builder().page_size(4096).pool_bytes(pool).mode(mode).open(&path);
            if logging {
                let db = opened.unwrap();
                let t = db.tree("t").unwrap();
                let n = t.range(Bound::Unbounded, Bound::Unbounded).map(Result::unwrap).count();
                assert_eq!(n, 3000, "{mode}: every record reads back");
                // Page 5's last write is still in the double-write area, which puts it back at
                // open (buffer README F15); else single-page recovery rebuilds it.
                let fixed = db.stats().pages_repaired + db.restart_stats().torn_pages_restored;
                assert_eq!(fixed, 1, "{mode}: page 5 was put back or rebuilt");
                continue;
            }
            let err = match opened {
                // Main-memory mode loads every page at open.
                Err(e) => e,
                Ok(db) => {
                    let t = db.tree("t").unwrap();
                    let scan: Result<Vec<_>, _> = t.range(Bound::Unbounded, Bound::Unbounded).collect();
                    let e = scan.unwrap_err();
                    drop(db);
                    Error::Tree(e)
                }
            };
            let msg = err.to_string();
            assert!(msg.contains("db.swz") && msg.contains("page 5"), "{mode}: {msg}");
            assert!(msg.contains("checksum"), "{mode}: {msg}");
        }
    }
}

#[test]
fn oversize_key_and_value_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = small().create(dir.path().join("db.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    t.insert(b"k", b"v").unwrap();
    let big_key = vec![1u8; max_key_len(4096) + 1];
    let big_val = vec![1u8; t.max_value_len() + 1];
    assert!(t.max_value_len() <= max_value_len(4096));
    assert!(matches!(t.insert(&big_key, b"v"), Err(TreeError::KeyTooLarge { .. })));
    assert!(matches!(t.upsert(b"k", &big_val), Err(TreeError::ValueTooLarge { .. })));
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // The largest allowed sizes work, many times over (splits must always succeed).
    let key = vec![2u8; max_key_len(4096)];
    for i in 0..50u8 {
        let mut k = key.clone();
        k[0] = i;
        t.insert(&k, &vec![i; max_inline_value_len(4096)]).unwrap();
    }
    assert_eq!(t.verify().unwrap().records, 51);
    // The longest value this tree takes goes to overflow pages (T22) and comes back whole.
    let longest: Vec<u8> = (0..t.max_value_len()).map(|i| (i % 251) as u8).collect();
    t.insert(b"longest", &longest).unwrap();
    assert_eq!(t.get(b"longest").unwrap(), Some(longest));
    assert_eq!(t.verify().unwrap().large_values, 1);
}

#[test]
fn missing_and_duplicate_tree_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = small().create(dir.path().join("db.swz")).unwrap();
    assert!(matches!(db.tree("nope"), Err(Error::TreeNotFound(n)) if n == "nope"));
    db.create_tree("a").unwrap();
    assert!(matches!(db.create_tree("a"), Err(Error::TreeExists(_))));
    assert!(matches!(db.create_tree(""), Err(Error::InvalidTreeName { .. })));
    assert!(matches!(db.create_tree(&"x".repeat(65)), Err(Error::InvalidTreeName { .. })));
}

/// A full catalog's error counts the trees it holds, not those it would hold with the refused
/// one: it said 633 trees after 632 were created.
#[test]
fn a_full_catalog_counts_the_trees_it_holds() {
    // Every tree's root stays in the pool: room for all of them.
    let db = Database::builder().page_size(4096).pool_bytes(2048 * 4096).create_in_memory().unwrap();
    let mut made = 0usize;
    let trees = loop {
        match db.create_tree(&format!("{made:0>20}")) {
            Ok(_) => made += 1,
            Err(Error::Buffer(BufferError::CatalogFull { trees })) => break trees,
            Err(e) => panic!("after {made} trees: {e}"),
        }
    };
    assert_eq!(trees, made, "the catalog holds {made} trees");
    assert_eq!(db.tree_names().len(), made);
    let err = db.create_tree(&"z".repeat(20)).unwrap_err();
    assert!(err.to_string().contains(&format!("({made} trees)")), "{err}");
}

/// An invalid tree name's error is bounded, however long the name: its first 64 characters
/// and its length. A name of 1 MiB made an error of 1 MiB.
#[test]
fn an_invalid_tree_name_is_named_in_a_bounded_error() {
    let db = small().create_in_memory().unwrap();
    let long = "x".repeat(1 << 20);
    let err = db.create_tree(&long).unwrap_err();
    match &err {
        Error::InvalidTreeName { name, reason } => {
            assert!(
                long.starts_with(name.trim_end_matches('…')) && name.chars().count() <= 65,
                "{}",
                name.len()
            );
            assert!(reason.contains(&(1usize << 20).to_string()), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let (shown, debugged) = (err.to_string(), format!("{err:?}"));
    assert!(shown.len() < 300 && debugged.len() < 300, "{} and {} bytes", shown.len(), debugged.len());
    // A short one is shown whole.
    let err = db.create_tree("").unwrap_err();
    assert!(matches!(&err, Error::InvalidTreeName { name, .. } if name.is_empty()), "{err:?}");
}

/// A partial page at the end of a file — what a crash during a write that extends the file
/// leaves (a torn extension, buffer README F10a) — holds no page the database uses: every open
/// ignores it, logged or not, read-write or read-only, and the pages written later replace
/// it. An unlogged file, and a logged one opened read-only, were refused as a torn extension
/// (`Corrupted`) while the logged one opened.
#[test]
fn a_partial_page_at_the_end_of_the_file_is_ignored_logged_or_not() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = small().logging(logged).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..500u32 {
            t.insert(&i.to_be_bytes(), &[7u8; 100]).unwrap();
        }
        db.close().unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0x5a; 1000]).unwrap();
        drop(f);
        let ro =
            small().read_only(true).open(&path).unwrap_or_else(|e| panic!("logged {logged}, read-only: {e}"));
        assert_eq!(ro.tree("t").unwrap().len().unwrap(), 500, "logged {logged}");
        ro.close().unwrap();
        let db = small().logging(logged).open(&path).unwrap_or_else(|e| panic!("logged {logged}: {e}"));
        let t = db.tree("t").unwrap();
        assert_eq!(t.len().unwrap(), 500, "logged {logged}");
        for i in 500..3000u32 {
            t.insert(&i.to_be_bytes(), &[8u8; 100]).unwrap();
        }
        db.close().unwrap();
        let db = small().logging(logged).open(&path).unwrap();
        let t = db.tree("t").unwrap();
        t.verify().unwrap();
        assert_eq!(t.len().unwrap(), 3000, "logged {logged}");
        db.close().unwrap();
    }
}

#[test]
fn pool_too_small_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Database::builder().page_size(4096).pool_bytes(4 * 4096).create(dir.path().join("db.swz"));
    assert!(matches!(err, Err(Error::Buffer(BufferError::Config(_)))), "{err:?}");
    let err = Database::builder().page_size(5000).create(dir.path().join("db2.swz"));
    assert!(matches!(err, Err(Error::Buffer(BufferError::Config(_)))), "{err:?}");
}

#[test]
fn main_memory_limit_is_a_clear_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder()
        .mode(PoolMode::MainMemory)
        .page_size(4096)
        .pool_bytes(32 * 4096)
        .create(&path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut inserted = 0u32;
    let err = loop {
        match t.insert(&inserted.to_be_bytes(), &[3u8; 200]) {
            Ok(()) => inserted += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, TreeError::Buffer(BufferError::MemoryLimit { .. })), "{err:?}");
    assert!(err.to_string().contains("main-memory"));
    for i in 0..inserted {
        assert!(t.get(&i.to_be_bytes()).unwrap().is_some(), "record {i} lost after the limit was hit");
    }
    assert_eq!(t.verify().unwrap().records, inserted as usize);
    db.close().unwrap();
    // A bigger limit (or another mode) reads everything back.
    let db = Database::builder()
        .mode(PoolMode::Swizzling)
        .page_size(4096)
        .pool_bytes(16 * 4096)
        .open(&path)
        .unwrap();
    assert_eq!(db.tree("t").unwrap().verify().unwrap().records, inserted as usize);
}

/// Hostile pages: a closed database whose root's first child reference names the
/// root itself (checksum resealed) is refused when the root is loaded (T17: `Corrupted` naming
/// the root) instead of looping or waiting on its own latch — or, logged, rebuilt from the log
/// (RECOVERY.md R18), since the page fails its structure check; the descent guard behind it
/// (T16) is tested on pages damaged in memory in the btree crate's `tests/damage.rs`.
#[test]
fn t16_t17_a_child_reference_back_up_the_tree_is_damage_not_a_hang() {
    for (mode, logging) in [(PoolMode::Traditional, false), (PoolMode::Swizzling, true)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        // The log kept at close (R25), so that single-page recovery can rebuild from it.
        let db = Database::builder()
            .logging(logging)
            .mode(mode)
            .page_size(4096)
            .keep_log_on_close(true)
            .create(&path)
            .unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..20_000u32 {
            t.upsert(&i.to_be_bytes(), &[1; 40]).unwrap();
        }
        let root = t.root_page();
        drop(t);
        db.close().unwrap();
        // Point the root's first child at the root itself; keep the checksum valid.
        let mut file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut page = vec![0u8; 4096];
        use std::io::Read;
        file.seek(SeekFrom::Start(root.get() * 4096)).unwrap();
        file.read_exact(&mut page).unwrap();
        assert!(swizzledb_btree::node::level(&page) > 0, "the tree has inner nodes");
        let off = swizzledb_btree::node::child_swip_off(&page, 0);
        page[off..off + 8].copy_from_slice(&root.get().to_le_bytes());
        swizzledb_buffer::page::seal(&mut page);
        file.seek(SeekFrom::Start(root.get() * 4096)).unwrap();
        file.write_all(&page).unwrap();
        drop(file);

        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let db = Database::builder().mode(mode).open(&p).unwrap();
            tx.send(db.tree("t").map(|_| ())).unwrap();
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("no hang");
        if logging {
            assert!(opened.is_ok(), "{mode:?}: the root was rebuilt from the log: {opened:?}");
            continue;
        }
        assert!(
            matches!(&opened, Err(Error::Tree(TreeError::Buffer(BufferError::Corrupted { page, reason, .. })))
                if *page == root && reason.contains("itself")),
            "{mode:?}: {opened:?}"
        );
    }
}

/// A transaction given a tree handle of another database refuses it before anything is read,
/// locked or logged: its locks, log records and versions would have gone to its own database
/// under the other's page ids (the other database then missed a committed write, and its own
/// log no longer replayed after a crash). Read-write and snapshot-isolation transactions,
/// read-only ones at a snapshot and at read committed; point reads, writes and range reads. A
/// handle of an earlier open of the same file is closed.
#[test]
fn a_transaction_refuses_a_tree_of_another_database() {
    let dir = tempfile::tempdir().unwrap();
    let a = small().create(dir.path().join("a.swz")).unwrap();
    let b = small().create(dir.path().join("b.swz")).unwrap();
    let ta = a.create_tree("ta").unwrap();
    let tb = b.create_tree("tb").unwrap();
    tb.insert(b"b0", b"B").unwrap();
    let foreign = |r: swizzledb::Result<()>| assert!(matches!(r, Err(Error::ForeignTree)), "{r:?}");
    let scan_refused = |items: Vec<swizzledb::Result<(Vec<u8>, Vec<u8>)>>| {
        assert_eq!(items.len(), 1, "one item, the refusal");
        assert!(matches!(items[0], Err(Error::ForeignTree)), "{:?}", items[0]);
    };
    for snapshot in [false, true] {
        let mut tx = if snapshot { a.begin_snapshot() } else { a.begin() };
        foreign(tx.get(&tb, b"b0").map(|_| ()));
        foreign(tx.get_with(&tb, b"b0", |_| ()));
        foreign(tx.put(&tb, b"foreign", b"x").map(|_| ()));
        foreign(tx.insert(&tb, b"foreign", b"x"));
        foreign(tx.delete(&tb, b"b0").map(|_| ()));
        foreign(tx.update_with(&tb, b"b0", |_, new| new.push(1)).map(|_| ()));
        foreign(tx.compare_and_swap(&tb, b"b0", Some(b"B"), None).map(|_| ()));
        scan_refused(tx.range(&tb, Bound::Unbounded, Bound::Unbounded).collect());
        scan_refused(tx.range_rev(&tb, Bound::Unbounded, Bound::Unbounded).collect());
        // The transaction goes on with its own database's trees.
        tx.put(&ta, format!("own-{snapshot}").as_bytes(), b"a").unwrap();
        tx.commit().unwrap();
    }
    for read in [a.begin_read(), a.begin_read_committed()] {
        foreign(read.get(&tb, b"b0").map(|_| ()));
        let items: Vec<_> = read.range(&tb, Bound::Unbounded, Bound::Unbounded).collect();
        assert_eq!(items.len(), 1, "one item, the refusal");
        match &items[0] {
            Err(TreeError::Transaction(e)) => assert!(e.to_string().contains("another database"), "{e}"),
            other => panic!("expected the refusal, got {other:?}"),
        }
        assert_eq!(read.scan_prefix(&tb, b"b").count(), 1);
        assert_eq!(read.range_rev(&tb, Bound::Unbounded, Bound::Unbounded).count(), 1);
        assert_eq!(read.get(&ta, b"own-false").unwrap().as_deref(), Some(&b"a"[..]));
    }
    assert_eq!(tb.get(b"foreign").unwrap(), None);
    assert_eq!(tb.get(b"b0").unwrap().as_deref(), Some(&b"B"[..]));
    b.close().unwrap();
    a.close().unwrap();

    // Both reopen (each log replays its own records only), and a handle of the earlier open
    // of a file is closed, not foreign.
    let a = small().open(dir.path().join("a.swz")).unwrap();
    let b = small().open(dir.path().join("b.swz")).unwrap();
    assert_eq!(a.tree("ta").unwrap().len().unwrap(), 2);
    b.tree("tb").unwrap().verify().unwrap();
    let mut tx = a.begin();
    let r = tx.put(&ta, b"k", b"v");
    assert!(matches!(r, Err(Error::Tree(TreeError::Closed))), "{r:?}");
    tx.abort().unwrap();
    drop(b);
    a.close().unwrap();
}
