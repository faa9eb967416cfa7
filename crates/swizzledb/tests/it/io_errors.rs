//! I/O errors that are not crashes (a full disk, `ENOSPC`; a failing device, `EIO`) returned
//! to a live database, after which the process goes on (RECOVERY.md "Failure behaviour", wal
//! README W11, buffer README F4). Each operation is failed at its 1st, 2nd, ... call of each
//! kind in [`FAULTS`] (a one-shot rule; the space comes back after it), and then:
//! - the operation returned `Ok` (the fault met a call it got over, or a background thread's)
//!   or a typed error whose message names the file;
//! - the database afterwards either takes a write and keeps it, or refuses it with an error;
//! - a close (which may fail) and a reopen give every record acknowledged before and after the
//!   error, and the failed operation's changes all or not at all, in trees whose structure
//!   checks pass; and the database then takes writes again;
//! - the directory holds only the database's files (no debris of the failed operation).

use crate::common::FAULTS;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb::{Builder, CommitMode, Database, Error};
use swizzledb_io::{Fault, FaultFs, FaultRule, Op, Vfs};

type Records = BTreeMap<Vec<u8>, Vec<u8>>;
type Contents = BTreeMap<String, Records>;

const DIR: &str = "/d";
const PATH: &str = "/d/db";

fn path() -> &'static Path {
    Path::new(PATH)
}

/// Every record of every tree, after checking each tree's structure.
fn all_of(db: &Database, context: &str) -> Contents {
    let mut names = db.tree_names();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let t = db.tree(&name).unwrap_or_else(|e| panic!("{context}: tree {name}: {e}"));
            t.verify().unwrap_or_else(|e| panic!("{context}: tree {name}: structure: {e}"));
            let records = t
                .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                .map(|r| r.unwrap_or_else(|e| panic!("{context}: tree {name}: scan: {e}")))
                .collect();
            (name, records)
        })
        .collect()
}

/// A short description of how two states differ.
fn diff(got: &Contents, want: &Contents) -> String {
    let mut lines = Vec::new();
    for name in got.keys().chain(want.keys()).collect::<std::collections::BTreeSet<_>>() {
        match (got.get(name), want.get(name)) {
            (None, Some(_)) => lines.push(format!("tree {name} missing")),
            (Some(g), None) => lines.push(format!(
                "tree {name} unexpected, with {:?}",
                g.iter().take(4).map(|(k, v)| (String::from_utf8_lossy(k), v.len())).collect::<Vec<_>>()
            )),
            (Some(g), Some(w)) => {
                for (k, v) in w {
                    match g.get(k) {
                        None => lines.push(format!("{name}: missing {}", String::from_utf8_lossy(k))),
                        Some(x) if x != v => lines.push(format!(
                            "{name}: {} has {} bytes instead of {}",
                            String::from_utf8_lossy(k),
                            x.len(),
                            v.len()
                        )),
                        Some(_) => {}
                    }
                }
                for k in g.keys().filter(|k| !w.contains_key(*k)) {
                    lines.push(format!("{name}: unexpected {}", String::from_utf8_lossy(k)));
                }
            }
            (None, None) => {}
        }
    }
    lines.truncate(12);
    lines.join("\n")
}

/// Every name under `dir`, recursively, sorted.
fn names_under(fs: &FaultFs, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for p in fs.list(&d).unwrap_or_default() {
            if fs.list(&p).is_ok() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Names a database's directory may hold: the data file, its log directory and what the log
/// directory holds by design (segments, the master record, the identity file, the double-write
/// area, the archive's runs and the cleaner's progress). Anything else (a `.tmp`, a marker, a
/// half-made copy) is debris.
fn debris(fs: &FaultFs) -> Vec<PathBuf> {
    names_under(fs, Path::new(DIR))
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            let name = p.file_name().unwrap().to_string_lossy();
            !(s == PATH
                || s == "/d/db.wal"
                || (s.starts_with("/d/db.wal/")
                    && !name.ends_with(".tmp")
                    && (name.ends_with(".log")
                        || name == "master"
                        || name == "database-id"
                        || name == "doublewrite"
                        || s.starts_with("/d/db.wal/archive")
                        || name == "cleaned"
                        || name.contains("spare"))))
        })
        .collect()
}

/// What an operation acknowledged, and what its step under way makes.
#[derive(Clone, Debug)]
struct Track {
    acked: Contents,
    pending: Contents,
}

impl Track {
    fn ack(&mut self) {
        self.acked = self.pending.clone();
    }
}

/// One operation to fail at each of its calls.
struct Case<'a> {
    name: &'a str,
    /// The database's settings on a file system.
    builder: &'a dyn Fn(Arc<dyn Vfs>) -> Builder,
    /// Fills the new database (no fault armed).
    setup: &'a dyn Fn(&Database),
    /// The operation; before each step that changes records it changes `done.pending` into
    /// the state the step makes (an error may come after its changes are durable), and after
    /// each acknowledged step it calls `done.ack()`.
    op: &'a dyn Fn(&Database, &mut Track) -> Result<(), Error>,
    /// Only every `stride`-th write or sync is failed (the 1st, the `1 + stride`-th, ...), for
    /// an operation whose calls are too many to fail each within a test's time; calls of the
    /// other kinds, fewer, are failed at each.
    stride: u64,
    /// Whether an acknowledged commit is durable at once (`CommitMode::Sync`); with `Async` a
    /// log that fails may lose the commits acknowledged since its last sync, as a crash may.
    sync_commits: bool,
}

/// Whether `e` is one of the engine's typed I/O-path errors, with a message that says something.
fn typed(e: &Error, context: &str) {
    let message = e.to_string();
    assert!(!message.is_empty(), "{context}: an error without a message: {e:?}");
    assert!(
        matches!(e, Error::Log(_) | Error::Buffer(_) | Error::Tree(_) | Error::RollbackFailed { .. }),
        "{context}: an unexpected kind of error: {e:?}"
    );
}

/// A disk that stays full or failing: writes and length changes `ENOSPC`, syncs `EIO`.
const FULL: [(Op, Fault); 3] =
    [(Op::Write, Fault::Enospc), (Op::SetLen, Fault::Enospc), (Op::Sync, Fault::Eio)];

/// Ends the test process with a message if it is not dropped within `secs` seconds (a hang
/// becomes a failure, naming where).
struct Deadline(Arc<std::sync::atomic::AtomicBool>);

impl Deadline {
    fn new(context: &str, secs: u64) -> Deadline {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, context) = (Arc::clone(&done), context.to_owned());
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(secs));
            if !flag.load(std::sync::atomic::Ordering::SeqCst) {
                eprintln!("{context}: not finished after {secs} s (a hang?)");
                std::process::exit(101);
            }
        });
        Deadline(done)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Fails `case.op` at each call of each kind of [`FAULTS`], once; then from each call of each
/// kind of [`FULL`] on, at every later call of that kind (the disk stays full) through the
/// operation and the write after it; returns how many failures it made.
fn sweep(case: &Case) -> u64 {
    let mut failures = 0;
    let one_shot = FAULTS.iter().map(|&f| (f, false));
    for ((call, fault), full) in one_shot.chain(FULL.iter().map(|&f| (f, true))) {
        let stride = if matches!(call, Op::Write | Op::Sync) { case.stride } else { 1 };
        for n in (1..).step_by(stride as usize) {
            let context =
                format!("{}: {fault:?} at {call:?} call {n}{}", case.name, if full { " and on" } else { "" });
            let fs = FaultFs::new();
            fs.create_dir_all(Path::new(DIR)).unwrap();
            let b = (case.builder)(Arc::new(fs.clone()));
            let db = b.clone().create(path()).unwrap();
            (case.setup)(&db);
            let before = all_of(&db, &context);
            let mut done = Track { acked: before.clone(), pending: before.clone() };
            let calls = fs.calls(call, None);
            let rule = FaultRule::new(call, fault).nth(n);
            fs.fail_next(if full { rule.repeating() } else { rule });
            let deadline = Deadline::new(&context, 120);
            let result = (case.op)(&db, &mut done);
            let fired = fs.calls(call, None) - calls >= n;
            if !full {
                fs.clear_faults();
            }
            if !fired {
                result.unwrap_or_else(|e| panic!("{context}, never reached: {e}"));
                check_after(&fs, &b, db, &[done.pending], &context);
                drop(deadline);
                if std::env::var("IO_ERRORS_TRACE").is_ok() {
                    eprintln!("{context}: {} failures so far", failures);
                }
                break;
            }
            failures += 1;
            // What may be there after a reopen: with `Ok`, the operation's state (or, with async
            // commits and a log that failed in the background, what was durable before); with
            // an error, the state before or after it.
            let candidates = match &result {
                Ok(()) if case.sync_commits => vec![done.pending],
                Ok(()) => vec![done.pending, before],
                Err(e) => {
                    typed(e, &context);
                    vec![done.acked, done.pending]
                }
            };
            check_after(&fs, &b, db, &candidates, &format!("{context} ({result:?})"));
            drop(deadline);
        }
    }
    failures
}

/// Adds the write of `k` (value `1`) to tree "post" in every candidate if it was acknowledged;
/// if it failed, each candidate stays and gains a twin with the write, since a commit whose
/// log flush failed is in doubt (`Transaction::commit`: restart decides).
fn written(candidates: &mut Vec<Contents>, k: &[u8], result: &Result<bool, Error>, context: &str) {
    let with = |c: &Contents| {
        let mut c = c.clone();
        c.entry("post".to_owned()).or_default().insert(k.to_vec(), b"1".to_vec());
        c
    };
    match result {
        Ok(_) => *candidates = candidates.iter().map(with).collect(),
        Err(e) => {
            typed(e, context);
            let twins: Vec<Contents> = candidates.iter().map(with).collect();
            candidates.extend(twins);
        }
    }
}

/// After an operation that may have failed: reads, a write (both still on a full disk if the
/// case's disk stays full; the space comes back after them), a close, a reopen, and the state
/// compared with `candidates` (plus the writes, if acknowledged).
fn check_after(fs: &FaultFs, b: &Builder, db: Database, candidates: &[Contents], context: &str) {
    let mut candidates = candidates.to_vec();
    // While the disk is still full (if it stays so): a write either refused, or kept.
    let full = db.tree_or_create("post").and_then(|t| t.upsert(b"full", b"1").map_err(Error::from));
    written(&mut candidates, b"full", &full, context);
    // Reads go on or fail with an error, never a panic.
    for name in db.tree_names() {
        if let Ok(t) = db.tree(&name) {
            for r in t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded) {
                if let Err(e) = r {
                    typed(&Error::from(e), context);
                    break;
                }
            }
        }
    }
    fs.clear_faults();
    // A write afterwards, with space: either refused, or kept.
    let post = db.tree_or_create("post").and_then(|t| t.upsert(b"after", b"1").map_err(Error::from));
    written(&mut candidates, b"after", &post, context);
    if post.is_ok() {
        // A database that takes writes takes a checkpoint too (the failed operation's debris,
        // a `master.tmp` say, is no obstacle), and the writes after it.
        db.checkpoint().unwrap_or_else(|e| panic!("{context}: a checkpoint after a write taken: {e}"));
        let t = db.tree("post").unwrap();
        t.upsert(b"after the checkpoint", b"1")
            .unwrap_or_else(|e| panic!("{context}: a write after that checkpoint: {e}"));
        written(&mut candidates, b"after the checkpoint", &Ok(true), context);
    }
    let closed = db.close();
    let db =
        b.clone().open(path()).unwrap_or_else(|e| panic!("{context}: reopen (close said {closed:?}): {e}"));
    let mut got = all_of(&db, context);
    // An empty "post" tree (its writes refused) is no record lost or gained.
    if got.get("post").is_some_and(BTreeMap::is_empty) {
        got.remove("post");
    }
    if !candidates.contains(&got) {
        panic!(
            "{context}: after the reopen (close said {closed:?}, the write on the full disk {full:?}, the write \
             after {post:?}) the state is none of the acknowledged ones:\n{}",
            diff(&got, &candidates[0])
        );
    }
    // The database takes writes again and closes cleanly.
    let t = db.tree_or_create("post").unwrap_or_else(|e| panic!("{context}: a tree after the reopen: {e}"));
    t.upsert(b"again", b"1").unwrap_or_else(|e| panic!("{context}: a write after the reopen: {e}"));
    drop(t);
    db.close().unwrap_or_else(|e| panic!("{context}: a close after the reopen: {e}"));
    let left = debris(fs);
    assert!(left.is_empty(), "{context}: files left beside the database: {left:?}");
}

fn small(vfs: Arc<dyn Vfs>) -> Builder {
    crate::common::small_on(vfs, true, 32).checkpoint_interval(None)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// 40 records in tree "t".
fn forty(db: &Database) {
    let t = db.create_tree("t").unwrap();
    for i in 0..40 {
        t.upsert(&key(i), &[i as u8; 50]).unwrap();
    }
}

fn put(done: &mut Track, tree: &str, k: Vec<u8>, v: Vec<u8>) {
    done.pending.entry(tree.to_owned()).or_default().insert(k, v);
}

/// A sync commit of one transaction's few writes.
#[test]
fn a_failed_sync_commit_loses_nothing_acknowledged() {
    let n = sweep(&Case {
        name: "commit",
        builder: &small,
        setup: &forty,
        op: &|db, done| {
            for i in 35..45 {
                put(done, "t", key(i), vec![7; 80]);
            }
            let t = db.tree("t")?;
            db.transact(|tx| {
                for i in 35..45 {
                    tx.put(&t, &key(i), &[7; 80])?;
                }
                Ok(())
            })
        },
        stride: 1,
        sync_commits: true,
    });
    assert!(n > 3, "{n} failures");
}

/// The same, with async commits and an explicit flush after them.
#[test]
fn a_failed_async_commit_and_flush_lose_nothing_flushed() {
    let async_small = |vfs| small(vfs).commit_mode(CommitMode::Async);
    let n = sweep(&Case {
        name: "async commit",
        builder: &async_small,
        setup: &|db| {
            forty(db);
            db.flush().unwrap();
        },
        op: &|db, done| {
            for i in 35..45 {
                put(done, "t", key(i), vec![7; 80]);
            }
            let t = db.tree("t")?;
            db.transact(|tx| {
                for i in 35..45 {
                    tx.put(&t, &key(i), &[7; 80])?;
                }
                Ok(())
            })?;
            db.flush()
        },
        stride: 1,
        sync_commits: false,
    });
    assert!(n > 3, "{n} failures");
}

/// An auto-commit write.
#[test]
fn a_failed_auto_commit_upsert_loses_nothing_acknowledged() {
    let n = sweep(&Case {
        name: "upsert",
        builder: &small,
        setup: &forty,
        op: &|db, done| {
            put(done, "t", key(3), vec![9; 300]);
            db.tree("t")?.upsert(&key(3), &[9; 300]).map(drop).map_err(Error::from)
        },
        stride: 1,
        sync_commits: true,
    });
    assert!(n > 2, "{n} failures");
}

/// A transaction of 1,500 writes in a 32-frame pool (evictions write pages, the log rolls over
/// several 64 KiB segments), a checkpoint (which truncates the log, keeping spares), and another
/// such transaction (which reuses them). Every 7th call only.
#[test]
fn a_failed_big_transaction_with_segment_rollover_and_recycling_loses_nothing() {
    let n = sweep(&Case {
        name: "big transactions",
        builder: &small,
        setup: &forty,
        op: &|db, done| {
            for i in 0..1500 {
                put(done, "t", key(i), vec![i as u8; 60]);
            }
            let t = db.tree("t")?;
            db.transact(|tx| {
                for i in 0..1500 {
                    tx.put(&t, &key(i), &[i as u8; 60])?;
                }
                Ok(())
            })?;
            done.ack();
            db.checkpoint()?;
            for i in (0..1500).step_by(3) {
                put(done, "t", key(i), vec![1; 90]);
            }
            db.transact(|tx| {
                for i in (0..1500).step_by(3) {
                    tx.put(&t, &key(i), &[1; 90])?;
                }
                Ok(())
            })
        },
        stride: 7,
        sync_commits: true,
    });
    assert!(n > 20, "{n} failures");
}

/// A value of 1 MiB (overflow pages; the file grows) in a 16 MiB pool, failed at every call.
#[test]
fn a_failed_large_value_loses_nothing_acknowledged() {
    let big = |vfs| small(vfs).pool_bytes(16 << 20).log_segment_bytes(4 << 20);
    let n = sweep(&Case {
        name: "large value",
        builder: &big,
        setup: &forty,
        op: &|db, done| {
            let v: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
            put(done, "t", key(5), v.clone());
            db.tree("t")?.upsert(&key(5), &v)?;
            done.ack();
            db.checkpoint()
        },
        stride: 1,
        sync_commits: true,
    });
    assert!(n > 10, "{n} failures");
}

/// `create_tree`, `tree_or_create` and `drop_tree` (of a tree with records).
#[test]
fn a_failed_create_or_drop_of_a_tree_loses_nothing() {
    let n = sweep(&Case {
        name: "create_tree",
        builder: &small,
        setup: &forty,
        op: &|db, done| {
            done.pending.insert("new".into(), Records::new());
            db.create_tree("new").map(drop)
        },
        stride: 1,
        sync_commits: true,
    }) + sweep(&Case {
        name: "tree_or_create",
        builder: &small,
        setup: &forty,
        op: &|db, done| {
            done.pending.insert("new".into(), Records::new());
            db.tree_or_create("new").map(drop)
        },
        stride: 1,
        sync_commits: true,
    }) + sweep(&Case {
        name: "drop_tree",
        builder: &small,
        setup: &|db| {
            forty(db);
            let g = db.create_tree("gone").unwrap();
            for i in 0..300 {
                g.upsert(&key(i), &[3; 100]).unwrap();
            }
        },
        op: &|db, done| {
            done.pending.remove("gone");
            db.drop_tree("gone").map(drop)
        },
        stride: 1,
        sync_commits: true,
    });
    assert!(n > 5, "{n} failures");
}

/// `checkpoint` with dirty pages (written back, the file synced, the master record replaced,
/// the log truncated).
#[test]
fn a_failed_checkpoint_loses_nothing() {
    let n = sweep(&Case {
        name: "checkpoint",
        builder: &small,
        setup: &|db| {
            let t = db.create_tree("t").unwrap();
            for i in 0..800 {
                t.upsert(&key(i), &[i as u8; 100]).unwrap();
            }
        },
        op: &|db, _| db.checkpoint(),
        stride: 2,
        sync_commits: true,
    });
    assert!(n > 5, "{n} failures");
}

/// Reads in a 64-frame pool full of dirty pages: each miss evicts one, so the reads write
/// pages (and force the log first).
#[test]
fn a_failed_write_during_an_eviction_of_a_read_loses_nothing() {
    let tiny = |vfs| small(vfs).pool_bytes(64 * 4096);
    let n = sweep(&Case {
        name: "reads that evict",
        builder: &tiny,
        setup: &|db| {
            let t = db.create_tree("t").unwrap();
            for i in 0..3000 {
                t.upsert(&key(i), &[i as u8; 100]).unwrap();
            }
            db.checkpoint().unwrap();
            for i in (0..3000).step_by(7) {
                t.upsert(&key(i), &[1; 100]).unwrap();
            }
        },
        op: &|db, _| {
            let t = db.tree("t")?;
            for i in (0..3000).rev() {
                t.get(&key(i))?;
            }
            Ok(())
        },
        stride: 1,
        sync_commits: true,
    });
    assert!(n > 5, "{n} failures");
}

/// The log archive: `archive_log` and a checkpoint (which archives too) after changes.
#[test]
fn a_failed_archive_loses_nothing() {
    let archived = |vfs| small(vfs).log_archive(true);
    let n = sweep(&Case {
        name: "archive",
        builder: &archived,
        setup: &|db| {
            let t = db.create_tree("t").unwrap();
            for i in 0..300 {
                t.upsert(&key(i), &[i as u8; 100]).unwrap();
            }
        },
        op: &|db, done| {
            db.archive_log()?;
            let t = db.tree("t")?;
            for i in 0..100 {
                put(done, "t", key(i), vec![2; 100]);
                t.upsert(&key(i), &[2; 100])?;
                done.ack();
            }
            db.checkpoint()
        },
        stride: 3,
        sync_commits: true,
    });
    assert!(n > 10, "{n} failures");
}

/// The decoupled cleaner (R20) over the log archive: changes, the archive, and a `flush`
/// (which brings the file up to date).
#[test]
fn a_failed_decoupled_cleaner_loses_nothing() {
    let decoupled = |vfs| small(vfs).log_archive(true).lab(|l| l.cleaner(swizzledb::Cleaner::Decoupled));
    let n = sweep(&Case {
        name: "decoupled cleaner",
        builder: &decoupled,
        setup: &|db| {
            let t = db.create_tree("t").unwrap();
            for i in 0..300 {
                t.upsert(&key(i), &[i as u8; 100]).unwrap();
            }
        },
        op: &|db, done| {
            let t = db.tree("t")?;
            for i in 0..100 {
                put(done, "t", key(i), vec![2; 100]);
            }
            db.transact(|tx| {
                for i in 0..100 {
                    tx.put(&t, &key(i), &[2; 100])?;
                }
                Ok(())
            })?;
            done.ack();
            db.archive_log()?;
            db.flush()
        },
        stride: 3,
        sync_commits: true,
    });
    assert!(n > 10, "{n} failures");
}

/// `close` (every page written, the file synced, the log's end made its checkpoint: R25) at
/// each call, logged and not: whatever close said, the next open holds every record (an
/// unlogged database whose close failed may instead be refused as `Unclean`, RECOVERY.md's
/// failure table), and nothing is left beside the database.
#[test]
fn a_failed_close_loses_nothing() {
    let mut failures = 0;
    for logged in [true, false] {
        for &(call, fault) in &FAULTS {
            for n in 1.. {
                let context = format!("logged: {logged}: {fault:?} at {call:?} call {n}");
                let fs = FaultFs::new();
                fs.create_dir_all(Path::new(DIR)).unwrap();
                let b = crate::common::small_on(Arc::new(fs.clone()), logged, 32).checkpoint_interval(None);
                let db = b.clone().create(path()).unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..500 {
                    t.upsert(&key(i), &[i as u8; 100]).unwrap();
                }
                if !logged {
                    db.flush().unwrap();
                }
                drop(t);
                let want = all_of(&db, &context);
                let calls = fs.calls(call, None);
                fs.fail_next(FaultRule::new(call, fault).nth(n));
                let closed = db.close();
                let fired = fs.calls(call, None) - calls >= n;
                fs.clear_faults();
                if fired {
                    failures += 1;
                    if let Err(e) = &closed {
                        typed(e, &context);
                    }
                } else if let Err(e) = &closed {
                    panic!("{context}, never reached: {e}");
                }
                let db = match b.clone().open(path()) {
                    Ok(db) => {
                        let got = all_of(&db, &context);
                        assert!(
                            got == want,
                            "{context}: after the reopen (close said {closed:?}):\n{}",
                            diff(&got, &want)
                        );
                        db
                    }
                    Err(Error::Unclean(_)) if !logged && closed.is_err() => {
                        let db = b.clone().discard_unclean(true).open(path()).unwrap();
                        db.create_tree("t").unwrap();
                        db
                    }
                    Err(e) => panic!("{context}: reopen (close said {closed:?}): {e}"),
                };
                db.tree("t").unwrap().upsert(b"again", b"1").unwrap();
                db.close().unwrap_or_else(|e| panic!("{context}: the next close: {e}"));
                let left = debris(&fs);
                assert!(left.is_empty(), "{context}: files left beside the database: {left:?}");
                if !fired {
                    break;
                }
            }
        }
    }
    assert!(failures > 20, "{failures} failures");
}

/// `backup_to` on a live database, logged and not: the call returns `Ok` and the copy holds
/// every record, or a typed error and nothing is left at the target nor beside it (its
/// temporary files removed); the source keeps every record, takes writes, and a backup after
/// it succeeds.
#[test]
fn a_failed_backup_leaves_the_source_whole_and_nothing_at_the_target() {
    let target = Path::new("/d/copy");
    let mut failures = 0;
    for logged in [true, false] {
        for &(call, fault) in &FAULTS {
            for n in 1.. {
                let context = format!("logged: {logged}: {fault:?} at {call:?} call {n}");
                let fs = FaultFs::new();
                fs.create_dir_all(Path::new(DIR)).unwrap();
                let b = crate::common::small_on(Arc::new(fs.clone()), logged, 32).checkpoint_interval(None);
                let db = b.clone().create(path()).unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..300 {
                    t.upsert(&key(i), &[i as u8; 100]).unwrap();
                }
                let want = all_of(&db, &context);
                let calls = fs.calls(call, None);
                fs.fail_next(FaultRule::new(call, fault).nth(n));
                let result = db.backup_to(target);
                let fired = fs.calls(call, None) - calls >= n;
                fs.clear_faults();
                match &result {
                    Ok(_) => {
                        let copy =
                            b.clone().open(target).unwrap_or_else(|e| panic!("{context}: the copy: {e}"));
                        assert!(all_of(&copy, &context) == want, "{context}: the copy's records");
                        copy.close().unwrap();
                        for p in fs.list(Path::new(DIR)).unwrap() {
                            let name = p.file_name().unwrap().to_string_lossy().into_owned();
                            assert!(!name.contains("backup"), "{context}: left {name}");
                        }
                        fs.remove(target).unwrap();
                        if logged {
                            for p in fs.list(&swizzledb::wal_dir(target)).unwrap() {
                                fs.remove(&p).unwrap();
                            }
                            fs.remove_dir(&swizzledb::wal_dir(target)).unwrap();
                        }
                    }
                    Err(e) => {
                        assert!(fired, "{context}: failed without the fault: {e}");
                        typed(e, &context);
                    }
                }
                if fired {
                    failures += 1;
                }
                let left = debris(&fs);
                assert!(left.is_empty(), "{context} ({result:?}): files left beside the database: {left:?}");
                // The source goes on: its records, a write, and a backup.
                assert!(all_of(&db, &context) == want, "{context}: the source's records");
                t.upsert(b"after", b"the backup").unwrap_or_else(|e| panic!("{context}: a write after: {e}"));
                db.backup_to(target).unwrap_or_else(|e| panic!("{context}: the next backup: {e}"));
                drop(t);
                db.close().unwrap_or_else(|e| panic!("{context}: close: {e}"));
                let copy = b.clone().open(target).unwrap_or_else(|e| panic!("{context}: the next copy: {e}"));
                assert_eq!(
                    copy.tree("t").unwrap().get(b"after").unwrap().as_deref(),
                    Some(&b"the backup"[..]),
                    "{context}"
                );
                copy.close().unwrap();
                if !fired {
                    break;
                }
            }
        }
    }
    assert!(failures > 20, "{failures} failures");
}

/// RECOVERY.md R12, `Tree::insert`'s errors: an auto-commit write whose commit record was
/// written but whose flush failed returns the log's error and is in doubt, as a failed
/// `Transaction::commit` is: this open's reads see it, and restart keeps it if its record
/// reached the disk (here, without a power loss, it did) and drops it if not (a power loss that
/// drops unsynced writes). The tree's rustdoc said "nothing changes then" of every error.
#[test]
fn r12_an_auto_commit_write_whose_flush_fails_is_in_doubt() {
    for crash in [false, true] {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new(DIR)).unwrap();
        let b = small(Arc::new(fs.clone()));
        let db = b.clone().create(path()).unwrap();
        let t = db.create_tree("t").unwrap();
        t.upsert(b"k", b"old").unwrap();
        fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).on_path(".log"));
        let e = t.upsert(b"k", b"new").expect_err("the commit's flush failed");
        fs.clear_faults();
        assert!(matches!(e, swizzledb::TreeError::Log(_)), "the log's error: {e:?}");
        assert!(e.to_string().contains(".log"), "it names the file: {e}");
        assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"new"[..]), "this open reads the write");
        assert!(t.upsert(b"other", b"1").is_err(), "the log refuses every later change (W11)");
        drop(t);
        if crash {
            fs.crash(swizzledb_io::CrashMode::DropUnsynced);
        }
        drop(db);
        let db = b.clone().open(path()).unwrap();
        let want: &[u8] = if crash { b"old" } else { b"new" };
        assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(want), "crash: {crash}");
        db.close().unwrap();
    }
}

/// wal README W11 with async commits: when the log's background flusher meets a full disk, the
/// async commits after it are refused (never acknowledged and then lost), `flush` reports the
/// failure, and a reopen holds every commit up to the last flush that succeeded.
#[test]
fn w11_async_commits_after_the_flusher_fails_are_refused() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let b = small(Arc::new(fs.clone())).commit_mode(CommitMode::Async);
    let db = b.clone().create(path()).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..50 {
        t.upsert(&key(i), b"flushed").unwrap();
    }
    db.flush().unwrap();
    fs.fail_next(FaultRule::new(Op::Write, Fault::Enospc).on_path(".log").repeating());
    let started = std::time::Instant::now();
    let mut refused = None;
    let mut i = 50;
    while started.elapsed() < std::time::Duration::from_secs(5) {
        match t.upsert(&key(i), b"async") {
            Ok(_) => assert!(refused.is_none(), "commit {i} acknowledged after {refused:?}"),
            Err(e) => {
                refused.get_or_insert(i);
                assert!(e.to_string().contains("No space left"), "{e}");
                if i > refused.unwrap() + 20 {
                    break;
                }
            }
        }
        i += 1;
    }
    assert!(refused.is_some(), "no commit refused in 5 s of a failed log ({i} commits)");
    assert!(db.flush().is_err(), "flush reports the failed log");
    fs.clear_faults();
    drop(t);
    assert!(db.close().is_err());
    let db = b.open(path()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..50 {
        assert_eq!(t.get(&key(i)).unwrap().as_deref(), Some(&b"flushed"[..]), "key {i}");
    }
    t.verify().unwrap();
}

/// wal README W9, W15 and the failure table: segments that cannot be removed (`EIO` at every
/// removal) fail no commit (truncation keeps them as spares, or fails to remove them); the
/// clean close, which removes all but one segment and every spare, returns the error or
/// removed nothing it had to; the next open holds every record, and its clean close leaves one
/// segment and no spare.
#[test]
fn w15_spares_that_cannot_be_removed_fail_no_commit_and_are_removed_later() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let b = small(Arc::new(fs.clone()));
    let db = b.clone().create(path()).unwrap();
    let t = db.create_tree("t").unwrap();
    fs.fail_next(FaultRule::new(Op::Remove, Fault::Eio).on_path(".wal/").repeating());
    for round in 0..4u32 {
        db.transact(|tx| {
            for i in 0..1500 {
                tx.put(&t, &key(i), &[round as u8; 200])?;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("round {round}: a commit with removals failing: {e}"));
        // Every page written, so the checkpoint after it truncates the log.
        db.flush().unwrap_or_else(|e| panic!("round {round}: flush: {e}"));
    }
    let files = |fs: &FaultFs, ext: &str| {
        fs.list(&swizzledb::wal_dir(path()))
            .unwrap()
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(ext))
            .count()
    };
    drop(t);
    let removals = fs.calls(Op::Remove, Some(".wal/"));
    let closed = db.close();
    assert!(fs.calls(Op::Remove, Some(".wal/")) > removals, "the close tried to remove files");
    let spares = files(&fs, ".spare");
    assert!(closed.is_err() || spares == 0, "close said Ok and left {spares} spares");
    if let Err(e) = &closed {
        assert!(e.to_string().contains(".wal"), "the error names the file: {e}");
    }
    fs.clear_faults();
    let db = b.open(path()).unwrap_or_else(|e| panic!("reopen after close said {closed:?}: {e}"));
    let t = db.tree("t").unwrap();
    t.verify().unwrap();
    for i in 0..1500 {
        assert_eq!(t.get(&key(i)).unwrap(), Some(vec![3; 200]), "key {i}");
    }
    drop(t);
    db.close().unwrap();
    assert_eq!((files(&fs, ".spare"), files(&fs, ".log")), (0, 1), "R25 after the clean close");
    assert!(debris(&fs).is_empty(), "{:?}", debris(&fs));
}
