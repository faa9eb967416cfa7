//! `swizzledb dump` then `swizzledb load`: every form (csv and jsonl, hex and base64) round-trips
//! every tree of a database made by the library, tree by tree, into a new database and into an
//! existing tree; a malformed line (one not UTF-8 too) stops the load at a batch boundary,
//! naming the line; a missing database is made only on `--create`, and not for a bad tree name
//! or an input that is a directory; `--batch` sets no allocation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use swizzledb::Database;

const BIN: &str = env!("CARGO_BIN_EXE_swizzledb");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("RUST_LOG").stdin(Stdio::null()).output().expect("run swizzledb")
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `swizzledb load DB --create --tree t --input INPUT --format jsonl --batch BATCH`.
fn load_jsonl_creating(db: &Path, input: &Path, batch: &str) -> Output {
    run(&[
        "load",
        arg(db),
        "--create",
        "--tree",
        "t",
        "--input",
        arg(input),
        "--format",
        "jsonl",
        "--batch",
        batch,
    ])
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

type Records = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every record of every tree of the database at `path`, through the library.
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

/// A database with two trees of awkward records: every byte value, commas, newlines, quotes,
/// empty values and a large value; and an empty tree, whose dump (a header, or nothing) loads
/// back as an empty tree.
fn source(path: &Path) -> BTreeMap<String, Records> {
    let db = Database::builder().create(path).unwrap();
    let mut x = 0x9E37_79B9_u64;
    for (name, n) in [("users", 700u32), ("blobs", 40), ("empty", 0)] {
        let tree = db.create_tree(name).unwrap();
        let mut txn = db.begin();
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key: Vec<u8> = (0..1 + x % 30).map(|j| (x >> (j % 8 * 8)) as u8 ^ b',').collect();
            let value = match i % 7 {
                0 => Vec::new(),
                1 if name == "blobs" => vec![(i % 251) as u8; 60_000],
                _ => format!("v,{i}\n\"{x}\"\0\u{e9}").into_bytes(),
            };
            txn.put(&tree, &key, &value).unwrap();
        }
        txn.commit().unwrap();
    }
    db.close().unwrap();
    contents(path)
}

/// A scratch directory holding the input `in.csv` with `records`; the directory, the path of a
/// database `d.swz` in it (not made) and the input's path.
fn with_input(records: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (path, input) = (dir.path().join("d.swz"), dir.path().join("in.csv"));
    std::fs::write(&input, records).unwrap();
    (dir, path, input)
}

#[test]
fn dump_then_load_round_trips_every_tree_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.swz");
    let want = source(&src);
    for format in ["csv", "jsonl"] {
        for encoding in ["hex", "base64"] {
            let dst = dir.path().join(format!("dst-{format}-{encoding}.swz"));
            for tree in want.keys() {
                let o = run(&["dump", arg(&src), "--tree", tree, "--format", format, "--encoding", encoding]);
                assert_eq!(code(&o), 0, "{}", stderr(&o));
                let file = dir.path().join(format!("{tree}.{format}.{encoding}"));
                std::fs::write(&file, &o.stdout).unwrap();
                let o = run(&[
                    "load",
                    arg(&dst),
                    "--create",
                    "--tree",
                    tree,
                    "--input",
                    arg(&file),
                    "--format",
                    format,
                    "--encoding",
                    encoding,
                    "--batch",
                    "7",
                ]);
                assert_eq!(code(&o), 0, "{format} {encoding}: {}", stderr(&o));
                let said = String::from_utf8_lossy(&o.stdout).into_owned();
                assert!(
                    said.starts_with(&format!("loaded {} records into tree {tree}", want[tree].len())),
                    "{said}"
                );
            }
            assert_eq!(contents(&dst), want, "{format} {encoding}: tree by tree");
        }
    }
}

#[test]
fn load_into_an_existing_tree_replaces_equal_keys_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let db = Database::builder().create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    t.insert(b"a", b"old").unwrap();
    t.insert(b"z", b"kept").unwrap();
    db.close().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "key,value\n61,6e6577\n\n62,\n").unwrap();
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&input)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want: Records =
        [(b"a".to_vec(), b"new".to_vec()), (b"b".to_vec(), Vec::new()), (b"z".to_vec(), b"kept".to_vec())]
            .into();
    assert_eq!(contents(&path)["t"], want);
}

#[test]
fn a_bad_line_stops_the_load_at_its_batch_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let input = dir.path().join("in.jsonl");
    let mut text = String::new();
    for i in 0..10u8 {
        text.push_str(&format!("{{\"key\":\"{i:02x}\",\"value\":\"ff\"}}\n"));
    }
    text.push_str("{\"key\":\"0g\",\"value\":\"ff\"}\n");
    std::fs::write(&input, text).unwrap();
    let o = load_jsonl_creating(&path, &input, "4");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("line 11: key: not a hex byte"), "{err}");
    assert!(err.contains("8 records in 2 transactions were loaded"), "{err}");
    // Lines 9 and 10 shared a batch with the bad line 11: not loaded.
    let got = &contents(&path)["t"];
    assert_eq!(got.len(), 8);
    assert!(got.keys().all(|k| k[0] < 8));
    // A key over the tree's limit rolls its batch back too.
    let long = dir.path().join("long.csv");
    std::fs::write(&long, format!("01,00\n{},00\n", "ab".repeat(4096))).unwrap();
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&long)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("the batch from line 1 was rolled back"), "{}", stderr(&o));
    assert_eq!(contents(&path)["t"].len(), 8);
}

#[test]
fn load_makes_a_database_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.swz");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "00,00\n").unwrap();
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&input)]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("pass --create"), "{}", stderr(&o));
    assert!(!path.exists());
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&dir.path().join("missing.csv"))]);
    assert_eq!(code(&o), 3, "an unreadable input");
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&input), "--format", "hex"]);
    assert_eq!(code(&o), 2);
    let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(&input), "--batch", "0"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn a_batch_larger_than_the_input_allocates_only_what_it_reads() {
    let (_dir, path, input) = with_input("01,0a\n02,0b\n");
    let o = run(&[
        "load",
        arg(&path),
        "--create",
        "--tree",
        "t",
        "--input",
        arg(&input),
        "--batch",
        "4294967295",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(contents(&path)["t"].len(), 2);
}

#[test]
fn an_input_that_is_not_a_file_is_unusable_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let o = run(&["load", arg(&path), "--create", "--tree", "t", "--input", arg(dir.path())]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    assert!(!path.exists(), "the database was made for an input that cannot be read");
}

#[test]
fn a_line_that_is_not_utf8_is_malformed_and_named() {
    let (_dir, path, input) = with_input(b"key,value\n01,0a\n02,0b\n03,0\xff\n04,0d\n");
    let o = run(&["load", arg(&path), "--create", "--tree", "t", "--input", arg(&input), "--batch", "2"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("line 4: not UTF-8"), "{err}");
    assert!(err.contains("2 records in 1 transactions were loaded"), "{err}");
    assert_eq!(contents(&path)["t"].len(), 2);
}

#[test]
fn a_bad_tree_name_is_refused_before_anything_is_written() {
    let (_dir, path, input) = with_input("01,0a\n");
    for (name, what) in [("", "empty"), (&*"n".repeat(65), "65 bytes")] {
        let o = run(&["load", arg(&path), "--create", "--tree", name, "--input", arg(&input)]);
        assert_eq!(code(&o), 2, "{name:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{name:?}: {}", stderr(&o));
        assert!(!path.exists(), "{name:?}: the database was made");
    }
}

/// A hex pair is two hex digits: Rust's integer parser also takes a sign (`+f` is 15), which
/// made `load` read `+f` as the byte 0f instead of refusing the line.
#[test]
fn a_signed_hex_pair_is_malformed() {
    let (_dir, path, input) = with_input("01,0a\n+f,00\n");
    let o = run(&["load", arg(&path), "--create", "--tree", "t", "--input", arg(&input)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2: key: not a hex byte at character 1"), "{}", stderr(&o));
    assert!(!path.exists(), "the database was made for a load that wrote nothing");
}

/// A load that commits no batch leaves the database as it was: the tree it was to make was made
/// (empty) before the first batch failed, and `--create` made the database file too.
#[test]
fn a_load_that_commits_nothing_leaves_the_database_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let db = Database::builder().create(&path).unwrap();
    db.create_tree("base").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let want = contents(&path);
    let malformed = dir.path().join("malformed.csv");
    std::fs::write(
        &malformed,
        "01,0a
0g,00
",
    )
    .unwrap();
    let too_long = dir.path().join("long.csv");
    std::fs::write(
        &too_long,
        format!(
            "01,00
{},00
",
            "ab".repeat(4096)
        ),
    )
    .unwrap();
    for input in [&malformed, &too_long] {
        let o = run(&["load", arg(&path), "--tree", "t", "--input", arg(input)]);
        assert_eq!(code(&o), 2, "{}: {}", input.display(), stderr(&o));
        assert_eq!(contents(&path), want, "{}: the database changed", input.display());
        // With --create and no database yet, none is made.
        let new = dir.path().join("new.swz");
        let o = run(&["load", arg(&new), "--create", "--tree", "t", "--input", arg(input)]);
        assert_eq!(code(&o), 2, "{}: {}", input.display(), stderr(&o));
        assert!(!new.exists(), "{}: the database was made", input.display());
        assert!(!swizzledb::wal_dir(&new).exists(), "{}: its log was made", input.display());
    }
    // A tree that was there stays, though the load wrote nothing to it.
    let o = run(&["load", arg(&path), "--tree", "base", "--input", arg(&malformed)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(contents(&path), want);
}

/// A jsonl line holds one object, as `--format`'s help and the README say: an array
/// `["KEY","VALUE"]` was read as a record (serde takes a struct from a sequence too).
#[test]
fn a_jsonl_line_that_is_not_an_object_is_malformed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.swz");
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, "{\"key\":\"01\",\"value\":\"0a\"}\n[\"02\",\"0b\"]\n").unwrap();
    let o = load_jsonl_creating(&path, &input, "1");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2: not a record object"), "{}", stderr(&o));
    assert!(stderr(&o).contains("an array"), "{}", stderr(&o));
    let want: Records = [(vec![1], vec![10])].into();
    assert_eq!(contents(&path)["t"], want, "only the batch before the array is loaded");
}
