//! Deterministic tests of write-path races (RECOVERY.md R16): a pause point holds one thread
//! between appending a record and updating the transaction table while a checkpoint runs, then
//! the file system crashes and the database restarts. The same pause point stops a rollback
//! between the two records of one replace (R5).

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use swizzledb_io::{CrashMode, FaultFs, Vfs};

use crate::lab::DatabaseExt as _;
use crate::logging::{test_point, WriterAt, COMMIT_POINT};
use crate::record::Record;
use crate::versions::{ReadAt, READ_POINT};
use crate::{CommitMode, Database};

/// The name of the thread a hook pauses (other tests' threads pass through).
const PAUSED: &str = "race-test-paused";

/// The hook is global: the race tests run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// A stop for one thread: the returned function, called on the thread named `thread`, blocks
/// it the first time until the returned sender is used (or 10 s pass); the receiver says when
/// it stopped. Other threads, and later calls, pass.
fn stop_once(
    thread: &'static str,
) -> (impl Fn() + Send + Sync + 'static, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (reached_tx, reached_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let armed = parking_lot::Mutex::new(Some((reached_tx, go_rx)));
    let stop = move || {
        if std::thread::current().name() != Some(thread) {
            return;
        }
        if let Some((reached, go)) = armed.lock().take() {
            let _ = reached.send(());
            let _ = go.recv_timeout(Duration::from_secs(10));
        }
    };
    (stop, reached_rx, go_tx)
}

/// Installs a hook that stops the thread named [`PAUSED`] at the first record `pick` accepts
/// until the returned sender is used; the receiver says when it stopped.
fn pause_at(pick: fn(&Record) -> bool) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (stop, reached, go) = stop_once(PAUSED);
    *test_point::HOOK.lock() = Some(Arc::new(move |record| {
        if pick(record) {
            stop();
        }
    }));
    (reached, go)
}

/// Installs a hook that stops the thread named [`PAUSED`] the first time a plain read reaches
/// `at` (K18), as [`pause_at`] does.
fn pause_read_at(at: ReadAt) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (stop, reached, go) = stop_once(PAUSED);
    READ_POINT.set(Some(Arc::new(move |now| {
        if now == at {
            stop();
        }
    })));
    (reached, go)
}

/// Runs `f` in a scoped thread named [`PAUSED`], the one a [`pause_at`] hook stops.
fn spawn_paused<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new().name(PAUSED.into()).spawn_scoped(s, f).expect("a thread")
}

const PATH: &str = "/r/db";

/// A logged database on a fault-injecting file system (sync commits, no background checkpoints)
/// whose tree `t` holds `before`.
fn setup() -> (FaultFs, crate::Builder, Database) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/r")).unwrap();
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .commit_mode(CommitMode::Sync)
        .checkpoint_interval(None)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(Path::new(PATH)).unwrap();
    db.create_tree("t").unwrap().insert(b"before", b"1").unwrap();
    (fs, builder, db)
}

/// R16: a checkpoint taken while a transaction has appended a change but not yet recorded it as
/// the next to undo must not list the transaction without it: restart would redo the change
/// and never undo it. Without the checkpoint's wait on the appending mark the uncommitted value
/// survives this test's crash.
#[test]
fn r16_a_checkpoint_between_change_record_and_undo_link_undoes_the_loser() {
    let _one = SERIAL.lock();
    let (fs, builder, db) = setup();
    let path = Path::new(PATH);
    let tree = db.tree("t").unwrap();

    let (reached, go) = pause_at(|r| matches!(r, Record::Leaf { .. }));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (crashed_tx, crashed_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let (db_ref, tree_ref) = (&db, &tree);
        let writer = spawn_paused(s, move || {
            let mut t = db_ref.begin();
            t.put(tree_ref, b"uncommitted", b"no").unwrap();
            done_tx.send(()).unwrap();
            // Never commits: the crash comes first.
            let _ = crashed_rx.recv_timeout(Duration::from_secs(10));
            std::mem::forget(t);
        });
        reached.recv_timeout(Duration::from_secs(10)).expect("the change reached its pause point");
        let checkpointer = s.spawn(|| db.checkpoint().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        go.send(()).unwrap();
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        checkpointer.join().unwrap();
        // The checkpoint made the change's record durable; the page holding it goes to the file
        // too, so redo has something to repeat and undo something to take back.
        db.flush().unwrap();
        fs.crash(CrashMode::DropUnsynced);
        crashed_tx.send(()).unwrap();
        writer.join().unwrap();
    });
    *test_point::HOOK.lock() = None;
    drop(tree);
    drop(db);

    let db = builder.open(path).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(b"uncommitted").unwrap(), None, "{:?}", db.restart_stats());
    assert_eq!(t.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

/// R16: a commit acknowledged while a checkpoint raced it survives a crash. `write` commits
/// `acked` = `yes` in a thread that pauses right after appending the record `pick` matches
/// (the one that commits it), before marking itself committed; a checkpoint starts meanwhile.
/// Without the checkpoint's wait on the appending mark it completes during the pause, lists the
/// transaction as active with its records behind the checkpoint's begin, and restart rolls the
/// acknowledged write back. The commit's end record is not durable (sync commit flushes only up
/// to the commit, and the checkpoint may have run before the end was appended).
fn checkpoint_racing_a_commit_keeps_it(
    before: impl FnOnce(&crate::Tree),
    pick: fn(&Record) -> bool,
    write: impl FnOnce(&Database, &crate::Tree) + Send,
) {
    let _one = SERIAL.lock();
    let (fs, builder, db) = setup();
    let tree = db.tree("t").unwrap();
    before(&tree);

    let (reached, go) = pause_at(pick);
    std::thread::scope(|s| {
        let committer = spawn_paused(s, || write(&db, &tree));
        reached.recv_timeout(Duration::from_secs(10)).expect("the commit reached its pause point");
        let checkpointer = s.spawn(|| db.checkpoint().unwrap());
        // Without the wait (R16) the checkpoint finishes now; with it, it waits for the commit.
        std::thread::sleep(Duration::from_millis(200));
        go.send(()).unwrap();
        committer.join().unwrap();
        checkpointer.join().unwrap();
    });
    *test_point::HOOK.lock() = None;
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db);

    let db = builder.open(Path::new(PATH)).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(b"acked").unwrap().as_deref(), Some(&b"yes"[..]), "{:?}", db.restart_stats());
    assert_eq!(t.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

/// R16: a transaction's commit record appended, its state not yet committed.
#[test]
fn r16_a_checkpoint_between_commit_record_and_state_keeps_the_commit() {
    checkpoint_racing_a_commit_keeps_it(
        |_| {},
        |r| matches!(r, Record::Commit { .. }),
        |db, tree| {
            let mut t = db.begin();
            t.put(tree, b"acked", b"yes").unwrap();
            t.commit().unwrap();
        },
    );
}

/// R16 with R2: an auto-commit write commits with its leaf record; that record appended, the
/// state not yet committed. The write replaces a large value, so it logs the removal of the
/// old value's chain first (btree T22): listed by a checkpoint with that record and not the
/// committing one, it would be a loser at restart. (A write of one record is never listed
/// before its entry shows the record, so it needs no wait.)
#[test]
fn r16_a_checkpoint_between_a_committing_leaf_record_and_state_keeps_the_commit() {
    checkpoint_racing_a_commit_keeps_it(
        |tree| tree.insert(b"acked", &[9; 10_000]).unwrap(),
        |r| matches!(r, Record::Leaf { commits: true, .. }),
        |_, tree| {
            tree.upsert(b"acked", b"yes").unwrap();
        },
    );
}

/// R5: a rollback undoes a key's delete-then-insert pair (here a small value replaced by a large
/// one, btree T22) in one replace, which logs two records; a crash with only the first durable
/// still gives the key its value back: the first record's undo-next is the delete, which
/// restart then undoes. Linked past the delete, as the second record is, the key would be lost.
#[test]
fn r5_a_crash_inside_the_replace_that_undoes_a_pair_restores_the_value() {
    let _one = SERIAL.lock();
    let (fs, builder, db) = setup();
    let path = Path::new(PATH);
    let tree = db.tree("t").unwrap();
    let other = db.create_tree("other").unwrap();
    tree.upsert(b"k", b"small").unwrap();

    // The rollback's first compensation record: a leaf record with an undo-next link.
    let (reached, go) = pause_at(|r| matches!(r, Record::Leaf { undo_next: Some(_), .. }));
    std::thread::scope(|s| {
        let (db_ref, tree_ref) = (&db, &tree);
        let writer = spawn_paused(s, move || {
            let mut t = db_ref.begin();
            t.put(tree_ref, b"k", &[7u8; 3000]).unwrap();
            // Fails once the file system has crashed under it.
            let _ = t.abort();
        });
        reached.recv_timeout(Duration::from_secs(10)).expect("the rollback reached its first record");
        // A synchronous commit in another tree (the paused thread holds `k`'s leaf) makes the
        // log durable through that first record and no further.
        other.insert(b"x", b"1").unwrap();
        fs.crash(CrashMode::DropUnsynced);
        go.send(()).unwrap();
        writer.join().unwrap();
    });
    *test_point::HOOK.lock() = None;
    drop((tree, other));
    drop(db);

    let db = builder.open(path).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"small"[..]), "{:?}", db.restart_stats());
    assert_eq!(db.tree("other").unwrap().get(b"x").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

/// K18: a plain read that copied its value from the leaf with no latch (an optimistic read,
/// btree T21) decides whether that value is committed after the copy. Its writer may make its
/// next change of the key, commit and let its lock go in between: the count of writers in the
/// key's bucket is then back to zero, and the value copied — the writer's first change of two —
/// was never committed. The read must see that a release came between and not return it.
#[test]
fn k18_a_plain_read_that_copied_an_uncommitted_value_does_not_return_it_after_its_commit() {
    let _one = SERIAL.lock();
    let (fs, builder, db) = setup();
    drop(db);
    // Reads that copy the leaf's value without latching it: a policy whose hits need no latch.
    let db = builder
        .mode(crate::PoolMode::Swizzling)
        .policy(crate::PolicyKind::Clock)
        .lab(|l| l.optimistic_leaf_reads(true))
        .open(Path::new(PATH))
        .unwrap();
    drop(fs);
    let tree = db.tree("t").unwrap();
    tree.upsert(b"k", b"v").unwrap();
    let mut writer = db.begin();
    writer.put(&tree, b"k", b"v1").unwrap();

    let (reached_rx, go_tx) = pause_read_at(ReadAt::Copied);
    let read = std::thread::scope(|s| {
        let reader = spawn_paused(s, || tree.get(b"k"));
        reached_rx.recv_timeout(Duration::from_secs(10)).expect("the read reached its pause point");
        // The read holds no latch (its copy was optimistic), so the writer goes on.
        writer.put(&tree, b"k", b"v12").unwrap();
        writer.commit().unwrap();
        go_tx.send(()).unwrap();
        reader.join().unwrap().unwrap()
    });
    READ_POINT.set(None);
    // The read overlapped the writer's commit: the value before it or the one it committed.
    assert!(
        matches!(read.as_deref(), Some(b"v" | b"v12")),
        "G1b: the read returned {:?}, the writer's first change of two",
        read.map(|v| String::from_utf8_lossy(&v).into_owned())
    );
    drop(tree);
    db.close().unwrap();
}

/// A plain read of `k` (holding `v`) that stops at `read_at` while its writer, which changed
/// `k` to `v1`, changes it again to `v12`, commits and stops at `writer_at`, its locks not let
/// go; the read then goes on. Returns what the read returned, once both are done.
fn read_beside_a_writers_end(read_at: ReadAt, writer_at: WriterAt) -> Option<Vec<u8>> {
    let _one = SERIAL.lock();
    let (_fs, _builder, db) = setup();
    let tree = db.tree("t").unwrap();
    tree.upsert(b"k", b"v").unwrap();
    let mut writer = db.begin();
    writer.put(&tree, b"k", b"v1").unwrap();

    let (read_rx, read_go_tx) = pause_read_at(read_at);
    const COMMITTING: &str = "race-test-committing";
    let (stop, commit_rx, commit_go_tx) = stop_once(COMMITTING);
    COMMIT_POINT.set(Some(Arc::new(move |at| {
        if at == writer_at {
            stop();
        }
    })));
    let read = std::thread::scope(|s| {
        let reader = spawn_paused(s, || tree.get(b"k"));
        read_rx.recv_timeout(Duration::from_secs(10)).expect("the read reached its pause point");
        // The read holds no latch now: the writer changes the key again and commits.
        writer.put(&tree, b"k", b"v12").unwrap();
        let committer = std::thread::Builder::new()
            .name(COMMITTING.into())
            .spawn_scoped(s, move || writer.commit())
            .expect("a thread");
        commit_rx.recv_timeout(Duration::from_secs(10)).expect("the writer reached its pause point");
        read_go_tx.send(()).unwrap();
        let read = reader.join().unwrap().unwrap();
        commit_go_tx.send(()).unwrap();
        committer.join().unwrap().unwrap();
        read
    });
    READ_POINT.set(None);
    COMMIT_POINT.set(None);
    assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&b"v12"[..]));
    drop(tree);
    db.close().unwrap();
    read
}

/// The read overlapped the writer's commit: it returns the value before it or the one it
/// committed, never the writer's first change of two.
fn assert_committed(read: Option<Vec<u8>>) {
    assert!(
        matches!(read.as_deref(), Some(b"v" | b"v12")),
        "G1b: the read returned {:?}, the writer's first change of two",
        read.map(|v| String::from_utf8_lossy(&v).into_owned())
    );
}

/// K18: a plain read that found the key's writer counted asks the writer. The writer may have
/// changed the key again since the read's copy (under the leaf's latch or not) and committed,
/// its locks not yet let go: the copy is then its first change of two, never committed, and
/// no release has come to tell the read. A committed writer must not make the read keep its
/// copy. (The G1b read of `histories::r10_r22_...` on 2026-12-04, LOCKS.md K18.)
#[test]
fn k18_a_plain_read_does_not_keep_a_change_its_writer_changed_again_before_committing() {
    assert_committed(read_beside_a_writers_end(ReadAt::Settling, WriterAt::Committed));
}

/// K18: a plain read that found the key's writer running looks for the writer's first change of
/// the key next. In between, the writer may change the key again, commit and empty its undo
/// list (`Versions::retire`), its locks not let go yet: the read then finds no entry, and its
/// copy — the writer's first change of two — was never committed. The writer's state, read
/// again, says that it ended; the read must not keep its copy.
#[test]
fn k18_a_plain_read_that_finds_its_writers_list_emptied_by_its_commit_does_not_keep_its_copy() {
    assert_committed(read_beside_a_writers_end(ReadAt::Asked, WriterAt::Retired));
}

/// R7, buffer B37: a checkpoint reads the catalog and the free pages after its begin record; a
/// change of them whose record precedes the begin record must be made by then. `change` (run
/// in a thread that pauses right after appending the record `pick` matches) creates or drops
/// a tree; a checkpoint starts during the pause, the change ends, the file system crashes.
/// Restart reads the catalog from the checkpoint and the log from its begin record on, so
/// without the checkpoint's wait it lost a created tree (with its records) or brought back a
/// dropped one, whose freed pages stayed allocated.
fn checkpoint_racing_a_catalog_change(
    pick: fn(&Record) -> bool,
    change: impl FnOnce(&Database) + Send,
) -> (crate::Builder, Database) {
    let _one = SERIAL.lock();
    let (fs, builder, db) = setup();
    let gone = db.create_tree("gone").unwrap();
    for i in 0..300u32 {
        gone.insert(&i.to_be_bytes(), &[5u8; 200]).unwrap();
    }
    drop(gone);
    db.checkpoint().unwrap();
    let (reached, go) = pause_at(pick);
    std::thread::scope(|s| {
        let changer = spawn_paused(s, || change(&db));
        reached.recv_timeout(Duration::from_secs(10)).expect("the change reached its pause point");
        let checkpointer = s.spawn(|| db.checkpoint().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        go.send(()).unwrap();
        changer.join().unwrap();
        checkpointer.join().unwrap();
    });
    *test_point::HOOK.lock() = None;
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.clone().open(Path::new(PATH)).unwrap();
    (builder, db)
}

#[test]
fn r7_b37_a_checkpoint_beside_a_tree_being_created_keeps_it() {
    let (_builder, db) = checkpoint_racing_a_catalog_change(
        |r| matches!(r, Record::CreateTree { name, .. } if name == "new"),
        |db| {
            let t = db.create_tree("new").unwrap();
            t.insert(b"k", b"v").unwrap();
        },
    );
    let t = db.tree("new").expect("the created tree survives the crash");
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    t.verify().unwrap();
    db.close().unwrap();
}

#[test]
fn r7_b37_a_checkpoint_beside_a_tree_being_dropped_frees_its_pages() {
    let pages = std::sync::atomic::AtomicU64::new(0);
    let free_before = std::sync::atomic::AtomicU64::new(0);
    let (_builder, db) = checkpoint_racing_a_catalog_change(
        |r| matches!(r, Record::DropTree { name, .. } if name == "gone"),
        |db| {
            let gone = db.tree("gone").unwrap();
            pages.store(gone.verify().unwrap().nodes as u64, std::sync::atomic::Ordering::Relaxed);
            drop(gone);
            free_before
                .store(db.pool().allocation().free_pages.len() as u64, std::sync::atomic::Ordering::Relaxed);
            assert!(db.drop_tree("gone").unwrap());
        },
    );
    assert_eq!(db.tree_names(), vec!["t".to_string()], "the dropped tree stays dropped");
    let free = db.pool().allocation().free_pages.len() as u64;
    let (pages, free_before) = (pages.into_inner(), free_before.into_inner());
    assert!(pages > 5, "{pages}");
    assert!(free >= free_before + pages, "{free} free pages after restart, {free_before} + {pages} expected");
    db.close().unwrap();
}
