//! `swizzledb stat`, `verify`, `dump` and `log` on databases made by the library: the fields
//! are right, damage is found and named, records round-trip, bad input is one line on stderr
//! with its exit code, and no command changes a file (bytes and mtime), even read-only ones.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use swizzledb::Database;

const BIN: &str = env!("CARGO_BIN_EXE_swizzledb");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("RUST_LOG").output().expect("run swizzledb")
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// `stat`'s `name: value` lines (the `tree:` lines apart).
fn fields(o: &Output) -> HashMap<String, String> {
    stdout(o)
        .lines()
        .filter(|l| !l.starts_with("tree: ") && !l.starts_with("log_tree: "))
        .filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}

/// Every file under `path` with its bytes and modification time.
fn snapshot(path: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&p) else { continue };
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if meta.is_file() {
            out.push((p.clone(), std::fs::read(&p).unwrap(), meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}

/// Runs `args` and checks that nothing under `paths` changed.
fn run_unchanged(args: &[&str], paths: &[&Path]) -> Output {
    let before: Vec<_> = paths.iter().map(|p| snapshot(p)).collect();
    let out = run(args);
    let after: Vec<_> = paths.iter().map(|p| snapshot(p)).collect();
    assert!(before == after, "{args:?} changed a file");
    out
}

fn wal(path: &Path) -> PathBuf {
    swizzledb::wal_dir(path)
}

/// Copies a database file and its log directory (a crash image when the database is open).
fn copy_db(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let (wf, wt) = (wal(from), wal(to));
    if wf.is_dir() {
        std::fs::create_dir_all(&wt).unwrap();
        for e in std::fs::read_dir(&wf).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), wt.join(e.file_name())).unwrap();
            }
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn stat_reports_format_trees_and_logging() {
    let dir = tempfile::tempdir().unwrap();
    let logged = dir.path().join("logged.swz");
    let db = Database::builder().page_size(4096).create(&logged).unwrap();
    db.create_tree("alpha").unwrap().insert(b"a", b"1").unwrap();
    db.create_tree("beta").unwrap();
    db.close().unwrap();
    let o = run_unchanged(&["stat", arg(&logged)], &[&logged, &wal(&logged)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!(f["format_version"], "2");
    assert_eq!(f["page_size"], "4096");
    assert_eq!(f["logged"], "yes");
    assert_eq!(f["clean"], "yes");
    assert_eq!(f["trees"], "2");
    assert_eq!(f["log_records_after_checkpoint"], "0");
    assert_eq!(f["log_trees"], "2");
    let text = stdout(&o);
    let trees: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("tree: ")).collect();
    assert!(trees.len() == 2 && trees[0].starts_with("alpha root=") && trees[1].starts_with("beta root="));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));

    let scratch = dir.path().join("scratch.swz");
    let db = Database::builder().logging(false).create(&scratch).unwrap();
    let t = db.create_tree("only").unwrap();
    for i in 0..2000 {
        t.insert(&key(i), &[7u8; 100]).unwrap();
    }
    for i in 0..2000 {
        t.delete(&key(i)).unwrap();
    }
    db.close().unwrap();
    let o = run_unchanged(&["stat", arg(&scratch)], &[&scratch]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!((f["logged"].as_str(), f["clean"].as_str(), f["page_size"].as_str()), ("no", "yes", "8192"));
    assert!(!f.contains_key("log_dir"));
    let pages: u64 = f["page_count"].parse().unwrap();
    let free: u64 = f["free_pages"].parse().unwrap();
    assert!(pages > 3 && free > 0 && free < pages, "{f:?}");
    assert_eq!(f["file_bytes"].parse::<u64>().unwrap(), pages * 8192);
}

/// A tree name may hold any UTF-8 (1 to 64 bytes): `stat` prints each tree on one line, a name's
/// newline, tab or backslash escaped (`\n`, `\t`, `\\`), so a line-by-line reader of its output
/// sees every tree once and every other field as it is. A newline in a name broke the tree's
/// line in two, the second half a line of its own.
#[test]
fn stat_prints_each_tree_on_one_line_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.swz");
    let db = Database::builder().page_size(4096).create(&path).unwrap();
    for name in ["two\nlines", "tab\there", "back\\slash", "plain, with comma"] {
        db.create_tree(name).unwrap();
    }
    db.close().unwrap();
    let o = run_unchanged(&["stat", arg(&path)], &[&path, &wal(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.lines().all(|l| l.contains(": ")), "a line that is no field: {text}");
    for prefix in ["tree: ", "log_tree: "] {
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|l| l.rsplit_once(" root=").expect("root=").0)
            .collect();
        names.sort_unstable();
        assert_eq!(names, [r"back\\slash", "plain, with comma", r"tab\there", r"two\nlines"], "{text}");
    }
}

#[test]
fn unclean_files_are_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    // A logged database that never closed, copied as a crash would leave it.
    let live = dir.path().join("live.swz");
    let db = Database::builder().create(&live).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..50 {
        t.insert(&key(i), b"v").unwrap();
    }
    // Its pages reach the file; page 0, written only at a clean close, does not know the tree.
    db.flush().unwrap();
    let crashed = dir.path().join("crashed.swz");
    copy_db(&live, &crashed);
    std::mem::forget(t);
    // The original is open (its lock held): read with a warning.
    let o = run(&["stat", arg(&live)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(fields(&o)["clean"], "no");
    assert!(stderr(&o).contains("is open in a Database"), "{}", stderr(&o));
    drop(db);

    let o = run_unchanged(&["stat", arg(&crashed)], &[&crashed, &wal(&crashed)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!((f["logged"].as_str(), f["clean"].as_str()), ("yes", "no"), "{f:?}");
    assert!(f["log_records_after_checkpoint"].parse::<u64>().unwrap() >= 50, "{f:?}");
    assert_eq!(f["free_pages"], "unknown");
    // Page 0 has not caught up with the tree yet; the log has.
    assert_eq!(f["log_trees"], "1");
    assert!(stdout(&o).lines().any(|l| l.starts_with("log_tree: t root=")), "{}", stdout(&o));
    assert!(stderr(&o).contains("not closed cleanly"), "{}", stderr(&o));
    assert_eq!(f["trees"], "0");
    // verify and dump read the trees the log knows, as far as the file holds pages.
    let o = run_unchanged(&["verify", arg(&crashed)], &[&crashed, &wal(&crashed)]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("tree \"t\": ok") && stdout(&o).contains(" 50 records"), "{}", stdout(&o));
    assert!(stderr(&o).contains("not closed cleanly"));
    let o = run_unchanged(&["dump", arg(&crashed), "--tree", "t"], &[&crashed, &wal(&crashed)]);
    assert_eq!((code(&o), stdout(&o).lines().count()), (0, 51), "{}", stderr(&o));

    // An unlogged one whose pages were written after its open, then never closed.
    let scratch = dir.path().join("scratch.swz");
    let db = Database::builder().logging(false).create(&scratch).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.flush().unwrap();
    let copy = dir.path().join("scratch-crashed.swz");
    copy_db(&scratch, &copy);
    drop(db);
    let o = run_unchanged(&["stat", arg(&copy)], &[&copy]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!((f["logged"].as_str(), f["clean"].as_str()), ("no", "no"), "{f:?}");
}

/// A closed database with one tree of `n` records over several pages.
fn make_db(path: &Path, n: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Database::builder().page_size(4096).create(path).unwrap();
    let t = db.create_tree("data").unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..n {
        oracle.insert(key(i), vec![(i % 251) as u8; 40 + (i % 60) as usize]);
    }
    let records: Vec<_> = oracle.iter().collect();
    for batch in records.chunks(100) {
        db.transact(|tx| batch.iter().try_for_each(|(k, v)| tx.put(&t, k, v).map(|_| ()))).unwrap();
    }
    db.close().unwrap();
    oracle
}

#[test]
fn verify_finds_a_flipped_page_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.swz");
    make_db(&path, 3000);
    let o = run_unchanged(&["verify", arg(&path)], &[&path, &wal(&path)]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("0 damaged pages, 0 damaged trees"), "{}", stdout(&o));
    assert!(stdout(&o).contains("tree \"data\": ok"), "{}", stdout(&o));
    assert!(stdout(&o).contains("3000 records"), "{}", stdout(&o));

    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    assert!(pages > 10);
    let victim = pages / 2;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(victim * 4096 + 2000) as usize] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let o = run_unchanged(&["verify", arg(&path)], &[&path, &wal(&path)]);
    assert_eq!(code(&o), 1, "{} {}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let damaged: Vec<&str> = out.lines().filter(|l| l.starts_with("page ")).collect();
    assert_eq!(damaged.len(), 1, "{out}");
    assert!(damaged[0].starts_with(&format!("page {victim}: checksum mismatch")), "{out}");
    assert!(out.contains("1 damaged pages"), "{out}");
    // Reading the tree stops at the damaged page: one line, exit 1.
    let o = run_unchanged(&["dump", arg(&path), "--tree", "data"], &[&path]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("page {victim} is corrupted")), "{}", stderr(&o));
    // A damaged page 0 stops every command.
    bytes[100] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    for args in
        [vec!["stat", arg(&path)], vec!["verify", arg(&path)], vec!["dump", arg(&path), "--tree", "data"]]
    {
        let o = run_unchanged(&args, &[&path]);
        assert_eq!((code(&o), stdout(&o).as_str()), (1, ""), "{args:?}");
        assert!(stderr(&o).contains("page 0: checksum mismatch"), "{}", stderr(&o));
    }
}

/// CSV fields back to bytes.
fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "{s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn dump_csv_round_trips_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let db = Database::builder().create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    db.create_tree("empty").unwrap();
    let mut oracle = BTreeMap::new();
    let mut writes = Vec::new();
    let mut x = 0x1234_5678_u64;
    for i in 0..1500u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Any bytes: commas, newlines, quotes, zeros.
        let k: Vec<u8> = (0..1 + x % 24).map(|j| (x >> (j % 8 * 8)) as u8 ^ b',').collect();
        let v: Vec<u8> = format!("v,{i}\n\"{x}\"\0").into_bytes();
        writes.push((k.clone(), v.clone()));
        oracle.insert(k, v);
    }
    for batch in writes.chunks(100) {
        db.transact(|tx| batch.iter().try_for_each(|(k, v)| tx.put(&t, k, v).map(|_| ()))).unwrap();
    }
    let gone: Vec<Vec<u8>> = oracle.keys().step_by(3).cloned().collect();
    db.transact(|tx| gone.iter().try_for_each(|k| tx.delete(&t, k).map(|_| ()))).unwrap();
    for k in &gone {
        oracle.remove(k);
    }
    db.close().unwrap();

    let o = run_unchanged(&["dump", arg(&path), "--tree", "t"], &[&path, &wal(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("key,value"));
    let dumped: Vec<(Vec<u8>, Vec<u8>)> = lines
        .map(|l| {
            let (k, v) = l.split_once(',').unwrap();
            (unhex(k), unhex(v))
        })
        .collect();
    assert_eq!(dumped, oracle.into_iter().collect::<Vec<_>>());

    let o = run(&["dump", arg(&path), "--tree", "empty"]);
    assert_eq!((code(&o), stdout(&o).as_str()), (0, "key,value\n"));
    let o = run(&["dump", arg(&path), "--tree", "t", "--format", "hex"]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o).lines().filter(|l| l.starts_with("record ")).count(), dumped.len());
    let o = run_unchanged(&["dump", arg(&path), "--tree", "nope"], &[&path]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("no tree named \"nope\"") && stderr(&o).contains("empty, t"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn log_lists_the_records_of_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("l.swz");
    let db = Database::builder().checkpoint_interval(None).create(&live).unwrap();
    let t = db.create_tree("accounts").unwrap();
    for round in 0..3u32 {
        db.transact(|tx| {
            for i in 0..4 {
                tx.put(&t, &key(round * 10 + i), b"value")?;
            }
            Ok(())
        })
        .unwrap();
    }
    let copy = dir.path().join("copy.swz");
    copy_db(&live, &copy);
    drop(t);
    db.close().unwrap();

    let o = run_unchanged(&["log", arg(&copy)], &[&copy, &wal(&copy)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let kind = |k: &str| out.lines().filter(|l| l.contains(&format!(" kind={k} "))).count();
    assert!(out.lines().all(|l| l.starts_with("lsn=") && l.contains(" bytes=")), "{out}");
    assert_eq!(kind("CreateTree"), 1, "{out}");
    assert!(out.contains("name=\"accounts\""));
    assert_eq!(kind("Commit"), 3, "{out}");
    let inserts: Vec<&str> = out.lines().filter(|l| l.contains("change=insert")).collect();
    assert_eq!(inserts.len(), 12, "{out}");
    assert!(inserts.iter().all(|l| l.contains(" key=9B value=5B")), "{out}");
    // Each commit's transaction has its four inserts.
    for commit in out.lines().filter(|l| l.contains(" kind=Commit ")) {
        let txn = commit.split(' ').find(|f| f.starts_with("txn=")).unwrap();
        assert_eq!(inserts.iter().filter(|l| l.contains(&format!(" {txn} "))).count(), 4, "{out}");
    }
    // LSNs ascend; the directory reads the same as the file.
    let lsns: Vec<u64> = out.lines().map(|l| l[4..l.find(' ').unwrap()].parse().unwrap()).collect();
    assert!(lsns.windows(2).all(|w| w[0] < w[1]));
    let by_dir = run(&["log", arg(&wal(&copy))]);
    assert_eq!(stdout(&by_dir), out);
}

#[test]
fn bad_inputs_are_one_line_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.swz");
    make_db(&good, 2000);
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let text = dir.path().join("text");
    std::fs::write(&text, "not a database\n".repeat(1000)).unwrap();
    let short = dir.path().join("short.swz");
    std::fs::write(&short, &std::fs::read(&good).unwrap()[..1000]).unwrap();
    let truncated = dir.path().join("truncated.swz");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let missing = dir.path().join("missing.swz");
    let sub = dir.path().join("a-directory");
    std::fs::create_dir(&sub).unwrap();
    // A named pipe: opening it for reading waited for a writer, and the command never ended.
    let fifo = dir.path().join("a-pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());

    let cases: [(&Path, i32); 7] =
        [(&missing, 3), (&sub, 3), (&fifo, 3), (&empty, 3), (&text, 3), (&short, 3), (&truncated, 1)];
    for (path, expected) in cases {
        for command in [vec!["stat"], vec!["verify"], vec!["dump", "--tree", "data"]] {
            let mut args = vec![command[0], arg(path)];
            args.extend(&command[1..]);
            let o = run_unchanged(&args, &[path]);
            assert_eq!(code(&o), expected, "{args:?}: {}", stderr(&o));
            assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).starts_with("error: "), "{args:?}: {}", stderr(&o));
            assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        }
    }
    assert!(stderr(&run(&["verify", arg(&truncated)])).contains("truncated"));

    // Logs: a directory that is none, an unlogged file's, a damaged identity file.
    for path in [&sub, &text] {
        let o = run_unchanged(&["log", arg(path)], &[path]);
        assert_eq!((code(&o), stderr(&o).lines().count()), (3, 1), "{}", stderr(&o));
    }
    let id = wal(&good).join("database-id");
    let mut b = std::fs::read(&id).unwrap();
    b[10] ^= 1;
    std::fs::write(&id, &b).unwrap();
    let o = run_unchanged(&["log", arg(&good)], &[&good, &wal(&good)]);
    assert_eq!((code(&o), stderr(&o).lines().count()), (3, 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("damaged"), "{}", stderr(&o));
    let o = run_unchanged(&["stat", arg(&good)], &[&good, &wal(&good)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(fields(&o)["clean"], "no");
}

#[test]
fn read_only_files_can_be_inspected() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.swz");
    let oracle = make_db(&path, 500);
    let mut files = vec![path.clone()];
    files.extend(std::fs::read_dir(wal(&path)).unwrap().map(|e| e.unwrap().path()));
    for f in &files {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    for args in [
        vec!["stat", arg(&path)],
        vec!["verify", arg(&path)],
        vec!["dump", arg(&path), "--tree", "data"],
        vec!["log", arg(&path)],
    ] {
        let o = run_unchanged(&args, &[&path, &wal(&path)]);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    }
    let o = run(&["dump", arg(&path), "--tree", "data"]);
    assert_eq!(stdout(&o).lines().count(), oracle.len() + 1);
}

#[test]
fn log_damage_is_reported_and_a_torn_tail_is_only_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("seg.swz");
    let db = Database::builder().log_segment_bytes(16 << 10).checkpoint_interval(None).create(&live).unwrap();
    let t = db.create_tree("t").unwrap();
    for batch in 0..20 {
        db.transact(|tx| {
            for i in 0..50 {
                tx.put(&t, &key(batch * 50 + i), &[b'v'; 40])?;
            }
            Ok(())
        })
        .unwrap();
    }
    let (torn, gap) = (dir.path().join("torn.swz"), dir.path().join("gap.swz"));
    copy_db(&live, &torn);
    copy_db(&live, &gap);
    drop(t);
    db.close().unwrap();
    let mut segments: Vec<PathBuf> = std::fs::read_dir(wal(&torn))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 4, "{segments:?}");
    let whole = run(&["log", arg(&torn)]);
    assert_eq!(code(&whole), 0, "{}", stderr(&whole));
    assert!(stderr(&whole).is_empty(), "{}", stderr(&whole));

    // Garbage after the last record: the records, and a warning; nothing cut on disk. (The
    // copy of a live log's newest segment is allocated whole, wal README W13: zeros after the
    // last record.)
    let last = segments.last().unwrap();
    let mut bytes = std::fs::read(last).unwrap();
    let written = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes.truncate(written);
    bytes.extend_from_slice(&[0xab; 100]);
    assert!(bytes.len() <= 16 << 10, "the garbage fits the segment");
    std::fs::write(last, &bytes).unwrap();
    let o = run_unchanged(&["log", arg(&torn)], &[&torn, &wal(&torn)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&whole));
    assert!(stderr(&o).contains("torn tail"), "{}", stderr(&o));

    // A segment missing before valid ones: damage, one line, exit 1.
    let name = segments[segments.len() / 2].file_name().unwrap().to_owned();
    std::fs::remove_file(wal(&gap).join(name)).unwrap();
    let o = run_unchanged(&["log", arg(&gap)], &[&gap, &wal(&gap)]);
    assert_eq!(code(&o), 1, "{} {}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("is damaged") && stderr(&o).contains("missing"), "{}", stderr(&o));
    let o = run_unchanged(&["stat", arg(&gap)], &[&gap, &wal(&gap)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(fields(&o)["clean"], "no");
    assert!(fields(&o)["log_problem"].contains("missing"), "{}", stdout(&o));
}

/// A crashed logged database whose new tree never reached the file: `verify` counts the pages
/// restart rebuilds from the log apart and exits 0 (`swizzledb::inspect` module docs), `dump`
/// exits 4 (the file is not at rest), and open recovers every row.
#[test]
fn verify_says_restart_will_rebuild_pages_the_log_holds() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.swz");
    let db = Database::builder().page_size(4096).create(&live).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..2000 {
        t.insert(&key(i), &[5u8; 100]).unwrap();
    }
    let crashed = dir.path().join("crashed.swz");
    copy_db(&live, &crashed);
    drop(t);
    drop(db);
    let o = run_unchanged(&["verify", arg(&crashed)], &[&crashed, &wal(&crashed)]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(!text.contains("corrupted") && text.contains(" 0 damaged pages, 0 damaged trees"), "{text}");
    let rebuilt = text
        .lines()
        .find_map(|l| l.strip_prefix("restart will rebuild "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok());
    assert!(rebuilt.is_some_and(|n| n > 10), "{text}");
    assert!(stderr(&o).contains("not closed cleanly"), "{}", stderr(&o));
    // `dump` cannot read the tree's pages that only the log holds: the file is not at rest,
    // as `verify` just said (exit 4, not 1's "damage found"), and nothing is printed.
    let o = run_unchanged(&["dump", arg(&crashed), "--tree", "t"], &[&crashed, &wal(&crashed)]);
    assert_eq!(code(&o), 4, "{} {}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("needs restart"), "{}", stderr(&o));
    let db = Database::builder().page_size(4096).open(&crashed).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..2000 {
        assert_eq!(t.get(&key(i)).unwrap().as_deref(), Some(&[5u8; 100][..]), "key {i}");
    }
}

/// A cleanly closed logged database copied without its log directory: `stat` says it was
/// closed cleanly and its log is missing, not that it was not closed cleanly.
#[test]
fn stat_says_a_clean_copy_without_its_log_is_clean_and_missing_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let copy = dir.path().join("copy.swz");
    std::fs::copy(&path, &copy).unwrap();
    let o = run_unchanged(&["stat", arg(&copy)], &[&copy]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!((f["closed_cleanly"].as_str(), f["log_missing"].as_str()), ("yes", "yes"), "{f:?}");
    let err = stderr(&o);
    assert!(!err.contains("not closed cleanly"), "{err}");
    assert!(err.contains("was closed cleanly") && err.contains("copy.swz.wal is missing"), "{err}");
}

/// A database file beside another database's log directory (both closed cleanly): `open`
/// refuses it (`Error::ForeignLog`), so `stat` must not call it clean nor show that log's
/// checkpoint as its own, and `log FILE` must not print another database's records as the
/// file's. Before, `stat` said `clean: yes` with the other log's fields, and `log` printed them.
#[test]
fn another_databases_log_beside_a_file_is_not_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.swz"), dir.path().join("b.swz"));
    make_db(&a, 300);
    make_db(&b, 10);
    std::fs::remove_dir_all(wal(&a)).unwrap();
    std::fs::rename(wal(&b), wal(&a)).unwrap();
    assert!(matches!(Database::builder().open(&a), Err(swizzledb::Error::ForeignLog { .. })));

    let o = run_unchanged(&["stat", arg(&a)], &[&a, &wal(&a)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = fields(&o);
    assert_eq!((f["closed_cleanly"].as_str(), f["clean"].as_str()), ("yes", "no"), "{f:?}");
    assert!(f["log_problem"].contains("belongs to another database"), "{f:?}");
    assert!(!f.contains_key("log_checkpoint"), "{f:?}");
    let err = stderr(&o);
    assert!(!err.contains("not closed cleanly"), "{err}");
    assert!(err.contains("was closed cleanly, but its log") && err.contains("another database"), "{err}");

    let o = run_unchanged(&["log", arg(&a)], &[&a, &wal(&a)]);
    assert_eq!((code(&o), stderr(&o).lines().count()), (3, 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("belongs to another database than"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    // The directory itself is still a log to read.
    let o = run_unchanged(&["log", arg(&wal(&a))], &[&a, &wal(&a)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The file's own pages are whole: verify finds nothing wrong, and dump reads them.
    let o = run_unchanged(&["verify", arg(&a)], &[&a, &wal(&a)]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    let o = run_unchanged(&["dump", arg(&a), "--tree", "data"], &[&a, &wal(&a)]);
    assert_eq!((code(&o), stdout(&o).lines().count()), (0, 301), "{}", stderr(&o));
}

/// `verify` found damage and exited 0 when its reader had closed the pipe (`| head`): the
/// closed pipe ended the output and, with it, the exit code that said the file is damaged.
/// The code is what verify found, whoever reads the lines.
#[test]
fn verify_of_a_damaged_file_exits_1_when_stdout_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.swz");
    make_db(&path, 3000);
    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[((pages / 2) * 4096 + 2000) as usize] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let closed = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Command::new(BIN).args(args).env_remove("RUST_LOG").stdout(writer).output().unwrap()
    };
    let o = closed(&["verify", arg(&path)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    // A sound file is still 0, and stat's output ends quietly.
    make_db(&dir.path().join("w.swz"), 10);
    let o = closed(&["verify", arg(&dir.path().join("w.swz"))]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = closed(&["stat", arg(&path)]);
    assert_eq!((code(&o), stderr(&o).as_str()), (0, ""));
}
