//! Bad settings are refused before anything is written (RECOVERY.md R14, R22): a refused
//! `open` of a cleanly closed logged database leaves its file and log byte for byte as they
//! were (page 0 still says CLEAN, so read-only opens still work), and a refused `create`
//! leaves nothing behind, so the corrected create succeeds. A `create` that fails after it made
//! files removes what it made, and only that.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use swizzledb::{BufferError, Builder, Cleaner, Database, Error, LogError, PoolMode, RestartMode};
use swizzledb_io::{CrashMode, Fault, FaultFs, FaultRule, Op, Vfs};

use crate::common::Sites;

const RECORDS: u32 = 2000;

/// Every file under `dir` (recursively) with its bytes.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

/// What an error must be: its variant, and words its message holds.
type Expect = fn(&Error) -> bool;

fn config_error(e: &Error, words: &str) -> bool {
    matches!(e, Error::Buffer(BufferError::Config(reason)) if reason.contains(words))
}

fn log_config_error(e: &Error, words: &str) -> bool {
    matches!(e, Error::Log(LogError::BadConfig { reason }) if reason.contains(words))
}

/// The settings an `open` of a cleanly closed logged database of 8 KiB pages refuses.
fn refused_at_open() -> Vec<(&'static str, Builder, Expect)> {
    let b = Database::builder;
    vec![
        ("restart_mode(Instant) without log_archive", b().restart_mode(RestartMode::Instant), |e| {
            log_config_error(e, "log_archive")
        }),
        ("max_log_bytes under four segments", b().max_log_bytes(1 << 20), |e| {
            log_config_error(e, "max_log_bytes")
        }),
        ("page_size(16384) on a file of 8 KiB pages", b().page_size(16384), |e| {
            matches!(e, Error::Buffer(BufferError::PageSizeMismatch { found: 8192, requested: 16384, .. }))
        }),
        ("page_size(1000)", b().page_size(1000), |e| config_error(e, "unsupported page size 1000")),
        ("pool_bytes(0)", b().pool_bytes(0), |e| config_error(e, "raise pool_bytes")),
        ("pool_bytes(8192)", b().pool_bytes(8192), |e| config_error(e, "raise pool_bytes")),
        ("pool_bytes(usize::MAX)", b().pool_bytes(usize::MAX), |e| config_error(e, "lower pool_bytes")),
        ("main-memory mode with a 64 KiB pool", b().mode(PoolMode::MainMemory).pool_bytes(64 << 10), |e| {
            config_error(e, "raise pool_bytes")
        }),
        (
            "log_archive with lazy split images",
            b().log_archive(true).lab(|l| l.lazy_split_images(true)),
            |e| log_config_error(e, "lazy split images"),
        ),
        ("Cleaner::Decoupled without log_archive", b().lab(|l| l.cleaner(Cleaner::Decoupled)), |e| {
            log_config_error(e, "log_archive")
        }),
        ("an eviction batch of 0", b().lab(|l| l.eviction_batch(Some(0))), |e| {
            config_error(e, "eviction batch")
        }),
        (
            "a BP-Wrapper threshold above its queue",
            b().policy("bpw-2q".parse::<swizzledb::PolicySpec>().unwrap()).lab(|l| l.bp_queue(8, 16)),
            |e| config_error(e, "batch threshold"),
        ),
        (
            "a BP-Wrapper queue of usize::MAX entries",
            b().policy("bpw-2q".parse::<swizzledb::PolicySpec>().unwrap()).lab(|l| l.bp_queue(usize::MAX, 1)),
            |e| config_error(e, "queue size"),
        ),
    ]
}

/// R14, R22: every refused `open` of a cleanly closed logged database leaves its file and its
/// log directory byte for byte as they were: a read-only open still finds it closed cleanly,
/// and the default settings open it with every record.
#[test]
fn r14_a_refused_open_leaves_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    for k in 0..RECORDS {
        tree.upsert(&k.to_be_bytes(), b"value-value-value").unwrap();
    }
    drop(tree);
    db.close().unwrap();
    for (name, builder, expect) in refused_at_open() {
        let before = files_under(dir.path());
        let refused = builder.open(&path).map(|db| db.close());
        let after = files_under(dir.path());
        match refused {
            Err(e) => assert!(expect(&e), "{name}: refused with an unexpected error: {e:?}"),
            Ok(_) => panic!("{name}: the open was not refused"),
        }
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            "{name}: files came or went"
        );
        for (file, bytes) in &before {
            assert!(after[file] == *bytes, "{name}: {} changed", file.display());
        }
        let ro = Database::builder()
            .read_only(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{name}: read-only open after the refusal: {e}"));
        assert_eq!(ro.tree("t").unwrap().len().unwrap(), RECORDS as usize, "{name}");
        ro.close().unwrap();
    }
    let db = Database::builder().open(&path).unwrap();
    assert_eq!(db.tree("t").unwrap().len().unwrap(), RECORDS as usize);
    db.close().unwrap();
}

/// R14, buffer B15: a main-memory pool too small for the pages a cleanly closed database uses
/// is refused before anything is written, logged or not: the files stay byte for byte as they
/// were (page 0 still says CLEAN, so a read-only open works), and a pool that holds them opens.
/// (The open used to run restart first — page 0's CLEAN cleared, a checkpoint and a new log
/// segment written — and fail only when it loaded the trees.)
#[test]
fn r14_a_main_memory_pool_too_small_for_a_closed_file_is_refused_before_anything_is_written() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = Database::builder().logging(logged).create(&path).unwrap();
        let tree = db.create_tree("t").unwrap();
        for k in 0..RECORDS {
            tree.upsert(&k.to_be_bytes(), &[k as u8; 200]).unwrap();
        }
        drop(tree);
        db.close().unwrap();
        let before = files_under(dir.path());
        // 16 frames of 8 KiB against some 60 pages of records.
        let refused = Database::builder().mode(PoolMode::MainMemory).pool_bytes(16 * 8192).open(&path);
        assert!(
            matches!(refused, Err(Error::Buffer(BufferError::MemoryLimit { frames: 16, .. }))),
            "logged: {logged}: {:?}",
            refused.map(|_| ())
        );
        assert!(files_under(dir.path()) == before, "logged: {logged}: the refused open changed the files");
        let ro = Database::builder().read_only(true).open(&path).unwrap();
        assert_eq!(ro.tree("t").unwrap().len().unwrap(), RECORDS as usize, "logged: {logged}");
        ro.close().unwrap();
        let db = Database::builder().mode(PoolMode::MainMemory).pool_bytes(8 << 20).open(&path).unwrap();
        assert_eq!(db.tree("t").unwrap().len().unwrap(), RECORDS as usize, "logged: {logged}");
        db.close().unwrap();
    }
}

/// The check above counts the pages in use, not the free ones: a file whose deletes freed most
/// of its pages opens in main-memory mode with a pool that holds what is left (its free pages
/// are counted in page 0's page count, and lie in the free chain, not in any tree).
#[test]
fn r14_a_main_memory_pool_that_holds_the_pages_in_use_opens_a_file_with_many_free_pages() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = Database::builder().logging(logged).create(&path).unwrap();
        let tree = db.create_tree("t").unwrap();
        let n = 20 * RECORDS;
        let mut tx = db.begin();
        for k in 0..n {
            tx.put(&tree, &k.to_be_bytes(), &[k as u8; 200]).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        for k in 10..n {
            tx.delete(&tree, &k.to_be_bytes()).unwrap();
        }
        tx.commit().unwrap();
        drop(tree);
        db.close().unwrap();
        // Some 1,200 pages were written, nearly all free now: 64 frames hold what is in use.
        let db = Database::builder().mode(PoolMode::MainMemory).pool_bytes(64 * 8192).open(&path);
        let db = db.unwrap_or_else(|e| panic!("logged: {logged}: {e}"));
        assert_eq!(db.tree("t").unwrap().len().unwrap(), 10, "logged: {logged}");
        db.close().unwrap();
    }
}

/// The settings a `create` refuses, logged (`logging` unsaid) and unlogged.
fn refused_at_create() -> Vec<(String, Builder)> {
    let mut cases = Vec::new();
    for logged in [true, false] {
        let b = move || if logged { Database::builder() } else { Database::builder().logging(false) };
        let mut add =
            |name: String, builder: Builder| cases.push((format!("{name}, logged: {logged}"), builder));
        for size in [0, 1000, 2048, 12288, 65536] {
            add(format!("page_size({size})"), b().page_size(size));
        }
        for bytes in [0, 8192, usize::MAX] {
            add(format!("pool_bytes({bytes})"), b().pool_bytes(bytes));
        }
        add(
            "main-memory mode with a 64 KiB pool".into(),
            b().mode(PoolMode::MainMemory).pool_bytes(64 << 10),
        );
        add("an eviction batch of 0".into(), b().lab(|l| l.eviction_batch(Some(0))));
        // Rounding S up to a power of two overflowed (a panic that left the files and the
        // create's marker behind); 2^17 entries in each of 64 queues is past the bound too.
        for size in [usize::MAX, 1 << 17] {
            add(
                format!("bp_queue({size}, 1)"),
                b().policy("bpw-2q".parse::<swizzledb::PolicySpec>().unwrap()).lab(|l| l.bp_queue(size, 1)),
            );
        }
        add("max_log_bytes under four segments".into(), b().max_log_bytes(1 << 20));
        // Past the log's range: four of them overflowed the bound's check (a panic).
        for bytes in [1 << 62, u64::MAX] {
            add(format!("log_segment_bytes({bytes})"), b().log_segment_bytes(bytes));
        }
    }
    cases.push((
        "restart_mode(Instant) without log_archive".into(),
        Database::builder().restart_mode(RestartMode::Instant),
    ));
    cases.push(("log_segment_bytes under two pages".into(), Database::builder().log_segment_bytes(8192)));
    cases
}

/// R14: a refused `create` makes no file and no directory, and the corrected create — here
/// `open_or_create` with the default settings — succeeds.
#[test]
fn r14_a_refused_create_leaves_nothing_and_the_corrected_create_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (name, builder)) in refused_at_create().into_iter().enumerate() {
        let path = dir.path().join(format!("db{i}.swz"));
        let refused = builder.create(&path);
        assert!(
            matches!(
                refused,
                Err(Error::Buffer(BufferError::Config(_)) | Error::Log(LogError::BadConfig { .. }))
            ),
            "{name}: {:?}",
            refused.map(|_| ())
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "{name}: left behind {left:?}");
        let db =
            Database::builder().open_or_create(&path).unwrap_or_else(|e| panic!("{name}: the retry: {e}"));
        db.close().unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_dir_all(dir.path().join(format!("db{i}.swz.wal"))).ok();
    }
}

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

/// The files (not directories) under `dir` on `fs`.
fn fault_files(fs: &FaultFs, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs.list(dir).unwrap() {
        if fs.contents(&entry).is_some() {
            out.push(entry);
        } else {
            out.extend(fault_files(fs, &entry));
        }
    }
    out
}

fn on(fs: &FaultFs) -> Builder {
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    Database::builder().page_size(4096).pool_bytes(64 * 4096).lab(|l| l.vfs(vfs))
}

/// R14: a `create` that fails after it made files — its log's identity file cannot be written,
/// or an unlogged file's first sync fails — removes the files it made, so the retry succeeds.
#[test]
fn r14_a_create_that_fails_after_making_files_removes_them() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    fs.fail_next(FaultRule::new(Op::Write, Fault::Eio).on_path("database-id"));
    assert!(on(&fs).create(path).is_err());
    fs.clear_faults();
    assert_eq!(fault_files(&fs, Path::new("/d")), Vec::<PathBuf>::new());
    let db = on(&fs).create(path).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = on(&fs).open(path).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();

    let unlogged = Path::new("/d/unlogged");
    fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).on_path("/d/unlogged"));
    assert!(on(&fs).logging(false).create(unlogged).is_err());
    fs.clear_faults();
    assert!(!fs.exists(unlogged), "the unlogged file was removed");
    on(&fs).logging(false).create(unlogged).unwrap().close().unwrap();
}

/// The removal takes only what the create made: a file already at the path, or files in a
/// non-empty log directory, stay as they were.
#[test]
fn r14_a_refused_create_never_removes_what_was_there() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let file = fs.open(path, swizzledb_io::OpenMode::CREATE_NEW).unwrap();
    file.write_all_at(b"not a database", 0).unwrap();
    drop(file);
    let refused = on(&fs).create(path);
    assert!(matches!(refused, Err(Error::Buffer(BufferError::Io { .. }))), "{:?}", refused.map(|_| ()));
    assert_eq!(fs.contents(path).as_deref(), Some(&b"not a database"[..]));

    let other = Path::new("/d/other");
    fs.create_dir_all(Path::new("/d/other.wal")).unwrap();
    let stale = Path::new("/d/other.wal/stale");
    let file = fs.open(stale, swizzledb_io::OpenMode::CREATE_NEW).unwrap();
    file.write_all_at(b"stale", 0).unwrap();
    drop(file);
    let refused = on(&fs).create(other);
    assert!(matches!(refused, Err(Error::StaleLog(_))), "{:?}", refused.map(|_| ()));
    assert_eq!(fs.contents(stale).as_deref(), Some(&b"stale"[..]));
    assert!(!fs.exists(other));
}

/// R14: a failed create removes the directories it made as well as the files — the log
/// directory and the archive's inside it — and keeps a log directory that was there, empty,
/// before it. It left the directories behind (the file system interface removed files only).
#[test]
fn r14_a_failed_create_removes_the_directories_it_made() {
    let fs = fault_fs();
    for (name, existed) in [("/d/db", false), ("/d/other", true)] {
        let path = Path::new(name);
        let wal = swizzledb::wal_dir(path);
        if existed {
            fs.create_dir_all(&wal).unwrap();
        }
        fs.fail_next(FaultRule::new(Op::Write, Fault::Eio).on_path("database-id"));
        assert!(on(&fs).log_archive(true).create(path).is_err(), "{name}");
        fs.clear_faults();
        assert!(!fs.exists(path), "{name}: the file was removed");
        if existed {
            assert_eq!(fs.list(&wal).unwrap(), Vec::<PathBuf>::new(), "{name}: what the create made in it");
        } else {
            assert!(!fs.exists(&wal), "{name}: the log directory the create made was removed");
        }
        on(&fs).log_archive(true).create(path).unwrap().close().unwrap();
    }
}

/// R14: a create in a directory that does not exist is refused, logged or not, naming the
/// directory, and makes nothing. A logged create made the directory (the log directory's
/// `create_dir_all` made its parents), while an unlogged one failed on the file.
#[test]
fn r14_a_create_in_a_missing_directory_is_refused_logged_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for logged in [true, false] {
        match Database::builder().logging(logged).create(missing.join("db.swz")) {
            Err(Error::DirectoryMissing(d)) => assert_eq!(d, missing, "logged: {logged}"),
            other => panic!("logged: {logged}: expected DirectoryMissing, got {:?}", other.map(|_| ())),
        }
        assert!(!missing.exists(), "logged: {logged}: the refused create made the directory");
    }
}

/// R14: a create in a database's log directory (or below it: the archive's directory, or
/// through a symbolic link to it) is refused, logged or not, by `create` and `open_or_create`,
/// naming the path, and makes nothing there; the other database then compacts (R28) with its
/// own files alone. The create succeeded, and that compaction removed the new database with
/// the old log directory: it was lost without a word.
#[test]
fn r14_a_create_in_a_databases_log_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.swz");
    let db = Database::builder().log_archive(true).create(&other).unwrap();
    db.tree_or_create("t").unwrap().upsert(b"k", b"v").unwrap();
    db.close().unwrap();
    let log = swizzledb::wal_dir(&other);
    std::os::unix::fs::symlink(&log, dir.path().join("link")).unwrap();
    let before = files_under(&log);
    for path in [log.join("db.swz"), log.join("archive").join("db.swz"), dir.path().join("link/db.swz")] {
        for logged in [true, false] {
            for open_or_create in [false, true] {
                let builder = Database::builder().logging(logged);
                let r = if open_or_create { builder.open_or_create(&path) } else { builder.create(&path) };
                match r {
                    Err(Error::InLogDirectory(p)) => assert_eq!(p, path),
                    other => {
                        panic!("{}: expected InLogDirectory, got {:?}", path.display(), other.map(|_| ()))
                    }
                }
                assert!(!path.exists(), "{}: the file was made", path.display());
                assert_eq!(files_under(&log), before, "{}: something was made", path.display());
            }
        }
    }
    Database::builder().compact(&other).unwrap();
    let db = Database::builder().open(&other).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}

/// R14: a create at a path that ends with a separator (`dir/db.swz/`, `dir/db.swz/.`) is
/// refused with an I/O error of kind `InvalidInput`, logged or not, and makes nothing; the
/// create without the separator then succeeds. A logged create made the log directory
/// `dir/db.swz/.wal`, and so a directory `dir/db.swz`, then failed on the file (`EISDIR`) and
/// left the directory, which every later create of `dir/db.swz` met.
#[test]
fn r14_a_create_at_a_path_ending_with_a_separator_is_refused_and_makes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for logged in [true, false] {
        for tail in ["/", "/."] {
            let path = dir.path().join("db.swz");
            let spelled = format!("{}{tail}", path.display());
            match Database::builder().logging(logged).create(&spelled) {
                Err(Error::Buffer(BufferError::Io { source, .. })) => {
                    assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput, "logged {logged} {tail}")
                }
                other => panic!("logged {logged} {tail}: expected InvalidInput, got {:?}", other.map(|_| ())),
            }
            assert!(files_under(dir.path()).is_empty(), "logged {logged} {tail}: files left");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "logged {logged} {tail}: left");
            Database::builder().logging(logged).create(&path).unwrap().close().unwrap();
            std::fs::remove_file(&path).unwrap();
            let _ = std::fs::remove_dir_all(swizzledb::wal_dir(&path));
        }
    }
}

/// An open of an existing database spelled with a trailing separator (`db.swz/`) — read-write,
/// read-only or `open_or_create` — is refused as a create of it is (`InvalidInput`, saying to
/// drop the `/`), and leaves the database as it was: it failed with "not a directory", which
/// did not name the cause.
#[test]
fn an_open_at_a_path_ending_with_a_separator_says_what_is_wrong_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for logged in [true, false] {
        let path = dir.path().join(format!("db-{logged}.swz"));
        let db = Database::builder().logging(logged).create(&path).unwrap();
        db.tree_or_create("t").unwrap().upsert(b"k", b"v").unwrap();
        db.close().unwrap();
        let spelled = format!("{}/", path.display());
        let opens = [
            ("open", Database::builder().logging(logged).open(&spelled)),
            ("read-only", Database::builder().logging(logged).read_only(true).open(&spelled)),
            ("open_or_create", Database::builder().logging(logged).open_or_create(&spelled)),
        ];
        for (how, opened) in opens {
            match opened {
                Err(Error::Buffer(BufferError::Io { source, .. })) => {
                    assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput, "{how}, logged {logged}");
                    assert!(source.to_string().contains("trailing `/`"), "{how}, logged {logged}: {source}");
                }
                other => panic!("{how}, logged {logged}: expected InvalidInput, got {:?}", other.map(|_| ())),
            }
        }
        let db = Database::builder().logging(logged).open(&path).unwrap();
        assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        db.close().unwrap();
    }
}

/// R14: an empty path, or one ending with `..`, is refused as one ending with a separator
/// (`InvalidInput`, nothing made), with a message that says what is wrong with it: both were
/// told to "drop the trailing `/`", which neither has.
#[test]
fn r14_a_create_at_an_empty_path_or_dot_dot_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let up = dir.path().join("sub").join("..");
    for (path, words) in [(PathBuf::new(), "the path is empty"), (up, "ends with `..`")] {
        for create in [Database::builder().create(&path), Database::builder().open_or_create(&path)] {
            match create {
                Err(Error::Buffer(BufferError::Io { source, .. })) => {
                    assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput, "{path:?}");
                    let message = source.to_string();
                    assert!(message.contains(words), "{path:?}: {message}");
                    assert!(!message.contains("trailing"), "{path:?}: {message}");
                }
                other => panic!("{path:?}: expected InvalidInput, got {:?}", other.map(|_| ())),
            }
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the refused creates made something");
}

/// R14: a create killed (or cut by a power loss) at any file-system call leaves nothing that
/// the next `create`, `open_or_create` or `open` with the same settings refuses, logged or not:
/// `open` finds no database (`NotFound`) or the complete one, and `create` and `open_or_create`
/// make it, removing what the cut-short create left. A killed create left an empty or
/// half-made file, or a logged file whose log held no checkpoint, that every open refused
/// (`NotADatabase`, `LogMissing`) and every create too (the file, or `StaleLog`).
#[test]
fn r14_a_create_killed_at_any_call_leaves_nothing_the_next_create_refuses() {
    let path = Path::new("/d/db");
    for (name, logged, archive) in
        [("logged", true, false), ("archived", true, true), ("unlogged", false, false)]
    {
        for how in [CrashMode::KeepUnsynced, CrashMode::DropUnsynced] {
            for n in 1.. {
                let fs = fault_fs();
                let sites = Sites::new(fs.clone());
                let vfs: Arc<dyn Vfs> = Arc::new(sites.clone());
                let builder = || {
                    on(&fs)
                        .logging(logged)
                        .log_archive(archive)
                        .log_segment_bytes(64 << 10)
                        .max_log_bytes(1 << 20)
                        .lab(|l| l.vfs(Arc::clone(&vfs)))
                };
                sites.kill_at(n, how);
                let created = builder().create(path);
                let killed = sites.killed();
                sites.disarm();
                if !killed {
                    created.unwrap().close().unwrap();
                    break;
                }
                drop(created);
                fs.power_on();
                let context = format!("{name}, {how:?}, killed at call {n}");
                let db = match n % 3 {
                    0 => builder().create(path).map_err(|e| format!("create: {e}")),
                    1 => builder().open_or_create(path).map_err(|e| format!("open_or_create: {e}")),
                    _ => match builder().open(path) {
                        Err(Error::NotFound(_)) => builder().create(path).map_err(|e| format!("create: {e}")),
                        opened => opened.map_err(|e| format!("open: {e}")),
                    },
                }
                .unwrap_or_else(|e| panic!("{context}: {e}"));
                db.tree_or_create("t").unwrap().insert(b"k", b"v").unwrap();
                db.close().unwrap_or_else(|e| panic!("{context}: close: {e}"));
                let db = builder().open(path).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
                assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "{context}");
                db.close().unwrap();
                assert!(!fs.exists(Path::new("/d/db.creating")), "{context}: the marker stayed");
            }
        }
    }
}
