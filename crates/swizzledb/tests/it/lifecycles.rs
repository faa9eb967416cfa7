//! A database's life beside the process that holds it: what the process does meanwhile (change
//! its current directory) must not lead the database's files elsewhere.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use swizzledb::Database;

type Contents = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Every tree and record of the database at `path`, opened and closed again.
fn contents(path: &Path) -> Contents {
    let db = Database::builder().open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let all = db
        .tree_names()
        .into_iter()
        .map(|n| {
            let t = db.tree(&n).unwrap();
            t.verify().unwrap_or_else(|e| panic!("{}: tree {n}: {e}", path.display()));
            (n, t.range(Unbounded, Unbounded).map(Result::unwrap).collect())
        })
        .collect();
    db.close().unwrap();
    all
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The records the child writes through the relative path, after it left the directory.
fn written() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..3000u32).map(|i| (i.to_be_bytes().to_vec(), vec![2; 200])).collect();
    m.insert(b"first".to_vec(), b"1".to_vec());
    m
}

/// R13, io README IO18: a database opened (or created) by a relative path keeps using the
/// files it opened, whatever the process's current directory becomes. The path was kept as
/// given, and the log made its later segments and master record by that name: after a
/// `set_current_dir` into a directory holding another database of the same name, the first
/// database's commits went into the other's log directory and its checkpoint overwrote the
/// other's master record; reopened, the other database showed the first one's tree in place of
/// its own, and the first one had lost the acknowledged writes and failed `verify`. The
/// current directory is the process's, so the test runs in a child process (this test, run
/// again).
#[test]
fn r13_a_relative_path_stays_where_it_was_opened() {
    const CHILD: &str = "SWIZZLEDB_TEST_RELATIVE_CHILD";
    if let Some(dir) = std::env::var_os(CHILD) {
        let dir = Path::new(&dir);
        for create in [true, false] {
            std::env::set_current_dir(dir.join("a")).unwrap();
            let builder = Database::builder().page_size(4096).log_segment_bytes(64 << 10);
            let db = if create { builder.create("db.swz") } else { builder.open("db.swz") }.unwrap();
            let t = db.tree_or_create("t").unwrap();
            t.upsert(b"first", b"1").unwrap();
            std::env::set_current_dir(dir.join("b")).unwrap();
            for (k, v) in written() {
                t.upsert(&k, &v).unwrap();
            }
            db.checkpoint().unwrap();
            drop(t);
            db.close().unwrap();
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    // Another database of the same name where the child goes.
    let db =
        Database::builder().page_size(4096).log_segment_bytes(64 << 10).create(b.join("db.swz")).unwrap();
    db.create_tree("other").unwrap().upsert(b"b-key", b"b-value").unwrap();
    db.close().unwrap();
    let other_before = contents(&b.join("db.swz"));
    let other_log_before = names(&swizzledb::wal_dir(&b.join("db.swz")));
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lifecycles::r13_a_relative_path_stays_where_it_was_opened", "--nocapture"])
        .env(CHILD, dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "the child failed: {status}");
    assert_eq!(names(&b), ["db.swz", "db.swz.wal"], "something was made beside the other database");
    assert_eq!(
        names(&swizzledb::wal_dir(&b.join("db.swz"))),
        other_log_before,
        "the other database's log directory changed"
    );
    assert_eq!(contents(&b.join("db.swz")), other_before, "the other database changed");
    let expected: Contents = [("t".to_owned(), written())].into_iter().collect();
    assert_eq!(contents(&a.join("db.swz")), expected, "the database opened by a relative path lost writes");
}

/// LOCKS.md K23, `Transaction`'s docs: a transaction moved to another thread counts as its old
/// thread's until it makes a request from the new one. Until then, a transaction of the old
/// thread that would wait for one of its locks fails at once as a deadlock (the walk takes it
/// for a transaction that thread holds open, which cannot end while that thread waits); once
/// the moved transaction has made a request on its new thread, the same request waits for it
/// and is granted when it commits.
#[test]
fn k23_a_moved_transaction_counts_as_its_old_threads_until_its_next_request() {
    use std::sync::mpsc;
    use swizzledb::lock::LockError;
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create(dir.path().join("moved.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    t.upsert(b"k", b"0").unwrap();
    for request_on_new_thread in [false, true] {
        let mut moved = db.begin();
        moved.put(&t, b"k", b"moved").unwrap();
        let (asked, asked_rx) = mpsc::channel::<()>();
        let (ready, ready_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let t2 = &t;
            s.spawn(move || {
                if request_on_new_thread {
                    moved.get(t2, b"other").unwrap();
                }
                ready.send(()).unwrap();
                asked_rx.recv().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
                moved.commit().unwrap();
            });
            ready_rx.recv().unwrap();
            let mut tx = db.begin();
            // The moved transaction commits 100 ms after this: while the put waits, or after
            // it failed.
            let r = if request_on_new_thread {
                asked.send(()).unwrap();
                tx.put(&t, b"k", b"here")
            } else {
                let r = tx.put(&t, b"k", b"here");
                asked.send(()).unwrap();
                r
            };
            if request_on_new_thread {
                assert!(r.is_ok(), "waited for the moved transaction: {r:?}");
                tx.commit().unwrap();
            } else {
                assert!(matches!(r, Err(swizzledb::Error::Lock(LockError::Deadlock { .. }))), "{r:?}");
                tx.abort().unwrap();
            }
        });
        let expected: &[u8] = if request_on_new_thread { b"here" } else { b"moved" };
        assert_eq!(t.get(b"k").unwrap().as_deref(), Some(expected));
    }
    drop(t);
    db.close().unwrap();
}

/// R14: a database reached through a link to its file alone finds no log beside the link; the
/// error says that the path is a link and what to open instead (it said the file was copied
/// without its log, which nothing had done).
#[cfg(unix)]
#[test]
fn r14_a_link_to_the_file_alone_is_named_as_a_link_not_a_copy_without_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.swz");
    let db = swizzledb::Database::builder().create(&real).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let link = dir.path().join("link.swz");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    match swizzledb::Database::builder().open(&link) {
        Err(swizzledb::Error::LogMissing { reason, .. }) => {
            assert!(reason.contains("is a link") && !reason.contains("copy"), "{reason}")
        }
        other => panic!("expected LogMissing naming the link, got {:?}", other.map(|_| ())),
    }
    // The database itself is untouched and opens by its own path.
    let db = swizzledb::Database::builder().open(&real).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}
