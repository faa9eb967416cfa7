//! `swizzledb backup SRC DST` (RECOVERY.md R26): the copy holds every tree's records and opens
//! on its own; an existing target or a missing source is refused; a backup killed half-way
//! leaves nothing at the target, and the next one succeeds. `swizzledb compact PATH` (R28)
//! shrinks the file in place and keeps every record; a path it cannot open as a database is
//! refused (exit 3) untouched.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use swizzledb::Database;

const BIN: &str = env!("CARGO_BIN_EXE_swizzledb");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("RUST_LOG").stdin(Stdio::null()).output().expect("run swizzledb")
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

type Records = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(path: &Path) -> BTreeMap<String, Records> {
    let db = Database::builder().open(path).unwrap();
    let all = db
        .tree_names()
        .into_iter()
        .map(|name| {
            let tree = db.tree(&name).unwrap();
            let records = tree
                .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                .map(Result::unwrap)
                .collect();
            (name, records)
        })
        .collect();
    db.close().unwrap();
    all
}

/// A database of `n` records over two trees.
fn make(path: &Path, n: u32) {
    let db = Database::builder().create(path).unwrap();
    let a = db.create_tree("a").unwrap();
    let b = db.create_tree("b").unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(5000) {
        db.transact(|tx| {
            for &i in chunk {
                tx.insert(&a, &i.to_be_bytes(), &[1u8; 100])?;
                if i % 3 == 0 {
                    tx.insert(&b, format!("b{i}").as_bytes(), &i.to_le_bytes())?;
                }
            }
            Ok(())
        })
        .unwrap();
    }
    db.close().unwrap();
}

#[test]
fn backup_copies_every_tree_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.swz"), dir.path().join("dst.swz"));
    make(&src, 20_000);
    let out = run(&["backup", arg(&src), arg(&dst)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 trees, 26667 records"));
    assert_eq!(contents(&dst), contents(&src));
    let again = run(&["backup", arg(&src), arg(&dst)]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    let missing = run(&["backup", arg(&dir.path().join("none.swz")), arg(&dir.path().join("x.swz"))]);
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn a_backup_killed_half_way_leaves_nothing_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.swz"), dir.path().join("dst.swz"));
    make(&src, 300_000);
    let mut killed_early = false;
    for wait_ms in [30u64, 100, 250] {
        let mut child = Command::new(BIN)
            .args(["backup", arg(&src), arg(&dst)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(wait_ms));
        let finished = child.try_wait().unwrap().is_some();
        child.kill().ok();
        child.wait().unwrap();
        if finished {
            break;
        }
        killed_early = true;
        assert!(!dst.exists(), "a killed backup left {}", dst.display());
        assert!(Database::builder().open(&dst).is_err());
        // Nor does the copy it left half-written open, under its own name.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() && p != src {
                assert!(Database::builder().open(&p).is_err(), "{} opens as a database", p.display());
            }
        }
    }
    assert!(killed_early, "the backup finished before the first kill");
    let out = run(&["backup", arg(&src), arg(&dst)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(contents(&dst), contents(&src));
}

#[test]
fn compact_shrinks_a_database_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    make(&path, 30_000);
    {
        let db = Database::builder().open(&path).unwrap();
        db.drop_tree("a").unwrap();
        db.close().unwrap();
    }
    let want = contents(&path);
    let before = std::fs::metadata(&path).unwrap().len();
    let out = run(&["compact", arg(&path)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(after * 4 < before, "{before} bytes before, {after} after");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{before} bytes before, {after} after")));
    assert_eq!(contents(&path), want);
    let missing = run(&["compact", arg(&dir.path().join("none.swz"))]);
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn compact_refuses_what_it_cannot_open_as_unusable() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.swz");
    std::fs::write(&garbage, "garbage\n").unwrap();
    for (path, what) in [(dir.path(), "directory"), (&*garbage, "not a SwizzleDB database")] {
        let out = run(&["compact", arg(path)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{}: {err}", path.display());
        assert!(err.contains(what) && err.contains("cannot be opened"), "{}: {err}", path.display());
        assert!(!err.contains("swap"), "{}: {err}", path.display());
    }
    assert_eq!(std::fs::read(&garbage).unwrap(), b"garbage\n");
}

/// `--help` and the README: exit 2 when DEST "(or DEST.wal)" exists, whatever the source. An
/// unlogged source's backup went ahead beside a stale DEST.wal (another database's log, which
/// `swizzledb log DEST` then read as the copy's).
#[test]
fn an_unlogged_backup_refuses_a_log_directory_at_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.swz"), dir.path().join("dst.swz"));
    let db = Database::builder().logging(false).create(&src).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let stale = swizzledb::wal_dir(&dst);
    std::fs::create_dir(&stale).unwrap();
    let out = run(&["backup", arg(&src), arg(&dst)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("dst.swz.wal exists already"), "{err}");
    assert!(!dst.exists(), "a copy was written beside the stale log directory");
    std::fs::remove_dir(&stale).unwrap();
    let out = run(&["backup", arg(&src), arg(&dst)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stale.exists(), "an unlogged copy has no log directory");
    assert_eq!(contents(&dst), contents(&src));
}

/// A DEST whose directory does not exist (or is a file) is an output that cannot be created:
/// exit 3 (README "Exit codes"), before the source is opened. It was exit 1, "backing up ...
/// failed", after opening the source.
#[test]
fn a_backup_into_a_missing_directory_is_an_unusable_path() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.swz");
    make(&src, 100);
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for dest in [dir.path().join("none").join("dst.swz"), file.join("dst.swz")] {
        let out = run(&["backup", arg(&src), arg(&dest)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{}: {stderr}", dest.display());
        assert!(stderr.contains("not a directory"), "{}: {stderr}", dest.display());
        assert!(!dest.exists());
    }
    assert!(!dir.path().join("none").exists(), "the missing directory was made");
}

/// `backup`, `compact` and `load` print one line when their work is done; with the reader's
/// end of stdout closed (`| head -0`), `println!` panicked there ("failed printing to stdout:
/// Broken pipe", exit 101) after a successful run. They exit 0, the work done.
#[test]
fn a_closed_stdout_does_not_fail_a_finished_backup_compact_or_load() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.swz");
    make(&src, 2000);
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "6b,76\n").unwrap();
    let copy = dir.path().join("copy.swz");
    for args in [
        vec!["backup", arg(&src), arg(&copy)],
        vec!["compact", arg(&src)],
        vec!["load", arg(&src), "--tree", "c", "--input", arg(&input)],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(BIN).args(&args).env_remove("RUST_LOG").stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert_eq!(contents(&copy).len(), 2);
    let after = contents(&src);
    assert_eq!(after["c"], BTreeMap::from([(b"k".to_vec(), b"v".to_vec())]));
    assert_eq!(after["a"].len(), 2000);
}

/// `--help` and the README: exit 2 when DEST lies in SRC's log directory (R26,
/// `Error::BackupTargetInLog`), nothing written there. The copy was written into the log
/// directory and the backup exited 0, and the source's next `compact` removed it with the old
/// log directory.
#[test]
fn a_backup_into_the_sources_log_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.swz");
    make(&src, 100);
    let log = swizzledb::wal_dir(&src);
    let out = run(&["backup", arg(&src), arg(&log.join("copy.swz"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("log directory"), "{err}");
    // The log's own files only: its identity file and a segment.
    let names: Vec<String> =
        std::fs::read_dir(&log).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| n == "database-id" || n.ends_with(".log")), "{names:?}");
}
