//! Hostile archive runs (RECOVERY.md R22, R10; wal README A9): runs that pass their checksums
//! but whose analysis state or index no engine wrote — a page count far beyond the file, a free
//! list or catalog naming page 0 or pages beyond the count, a transaction number at the end of
//! the range, a loser whose undo chain loops, index entries for page 0 or far beyond the file —
//! added with the archive's own writer after a clean close, before an instant restart.
//!
//! Asserted for each: the inspection readers and the open end (under a watchdog), the data file
//! stays small, and an open that succeeds holds every committed key: the state either stood in
//! for the log correctly, or restart was classical and read the log.

use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::record::{Checkpoint, NodeLog, Record, TxnEntry, TxnState};
use swizzledb::lab::TreeExt as _;
use swizzledb::{Archive, ArchiveEntry, Database, RestartMode};
use swizzledb_io::OsFs;
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogManager};

use crate::hostile_pages::under_watchdog;

const PS: usize = 4096;
const KEYS: u32 = 500;
const MAX_FILE: u64 = 64 << 20;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn builder() -> swizzledb::Builder {
    Database::builder()
        .page_size(PS)
        .pool_bytes(64 * PS)
        .checkpoint_interval(None)
        .log_archive(true)
        .restart_mode(RestartMode::Instant)
        .lab(|l| l.archive_interval(None))
}

fn page(p: u64) -> PageId {
    PageId::new(p).unwrap_or(PageId::META)
}

/// One hostile run: its state's tables (as of the run's end), its largest transaction number,
/// and its index entries' pages.
struct Case {
    name: &'static str,
    page_count: Option<u64>,
    free: Vec<u64>,
    root: Option<u64>,
    max_txn: u64,
    loser: bool,
    entries: Vec<u64>,
    /// Entries for the tree's root (a page the state counts) with these bodies.
    bodies: Vec<Vec<u8>>,
}

fn case(name: &'static str) -> Case {
    Case {
        name,
        page_count: None,
        free: Vec::new(),
        root: None,
        max_txn: 0,
        loser: false,
        entries: Vec::new(),
        bodies: Vec::new(),
    }
}

fn cases() -> Vec<Case> {
    vec![
        case("intact"),
        Case { page_count: Some(1 << 30), ..case("page count 2^30") },
        Case { page_count: Some(1 << 40), ..case("page count 2^40") },
        Case { free: vec![0], ..case("free page 0") },
        Case { free: vec![1 << 40], ..case("free page beyond the count") },
        Case { root: Some(0), ..case("catalog root page 0") },
        Case { root: Some(1 << 40), ..case("catalog root beyond the count") },
        Case { max_txn: u64::MAX, ..case("max_txn u64::MAX") },
        Case { max_txn: (1 << 62) - 1, ..case("max_txn 2^62 - 1") },
        Case { loser: true, ..case("a loser whose undo chain loops") },
        Case { entries: vec![0], ..case("an index entry for page 0") },
        Case { entries: vec![1 << 40], ..case("an index entry far beyond the file") },
        Case { bodies: vec![vec![0xAB; 40]], ..case("a root entry that is no record") },
        Case { bodies: vec![Vec::new()], ..case("an empty root entry") },
        Case {
            bodies: vec![Record::Structure {
                pages: vec![(page(2), NodeLog::Image(vec![0; PS]))],
                freed: Vec::new(),
            }
            .encode()],
            ..case("a root entry changing another page")
        },
        Case {
            bodies: vec![Record::Structure {
                pages: vec![(page(1), NodeLog::Image(vec![0; PS]))],
                freed: Vec::new(),
            }
            .encode()],
            ..case("a root entry that is a zero image")
        },
        Case {
            bodies: vec![Record::Structure { pages: Vec::new(), freed: vec![page(1)] }.encode()],
            ..case("a root entry freeing it")
        },
    ]
}

/// Adds `c`'s run from the archive's end over a harmless record appended to the log (a page
/// write, which restart does not trust), so that the run ends where the log does.
fn add_hostile_run(path: &Path, c: &Case, pages: u64, root: u64) {
    let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(path))).unwrap();
    let at = log
        .append(&Record::PageWrite { page: page(root), page_lsn: Lsn(0), decoupled: None }.encode())
        .unwrap();
    log.flush_all().unwrap();
    let end = log.durable();
    log.close().unwrap();
    let archive = Archive::open(Arc::new(OsFs), swizzledb::archive_dir(path)).unwrap();
    // The clean close archived the log up to its last checkpoint, whose records hold no
    // page change: the run may cover them.
    let begin = archive.end().unwrap();
    assert!(begin <= at, "{begin:?} {at:?}");
    let txns = if c.loser {
        vec![TxnEntry { txn: TxnId(7), state: TxnState::Active, last_lsn: at, undo_next: at }]
    } else {
        Vec::new()
    };
    let tables = Checkpoint {
        begin: end,
        dirty: Vec::new(),
        txns,
        page_count: c.page_count.unwrap_or(pages),
        free: c.free.iter().map(|&p| page(p)).collect(),
        catalog: vec![("t".into(), page(c.root.unwrap_or(root)))],
        parts: 0,
    };
    let mut state = c.max_txn.max(7).to_le_bytes().to_vec();
    state.extend_from_slice(&Record::CheckpointEnd(Box::new(tables)).encode());
    let write = Record::PageWrite { page: page(root), page_lsn: Lsn(0), decoupled: None }.encode();
    let entries = c
        .entries
        .iter()
        .map(|&p| ArchiveEntry { page: p, lsn: at, body: write.clone() })
        .chain(c.bodies.iter().map(|b| ArchiveEntry { page: root, lsn: at, body: b.clone() }))
        .collect();
    archive.add_run_with_state(begin, end, entries, &state).unwrap();
}

/// The inspection readers, then an instant restart: every committed key, or a typed error.
fn drive(path: &Path, c: &Case) -> Result<String, String> {
    if let Ok(records) = swizzledb::inspect::read_log(path) {
        for r in records {
            if r.is_err() {
                break;
            }
        }
    }
    if let Ok(file) = swizzledb::inspect::DatabaseFile::open(path) {
        let _ = file.verify();
    }
    let db = match builder().open(path) {
        Ok(db) => db,
        Err(e) => return Ok(format!("open refused: {e}")),
    };
    let instant = db.restart_stats().instant;
    // A page the index names (plausibly) may fail its redo: a typed error then, never a
    // wrong answer; the pages the state and index cannot name fail nothing.
    let strict = c.bodies.is_empty();
    let typed = |what: &str, e: &dyn std::fmt::Display| {
        if strict {
            Err(format!("{what}: {e}"))
        } else {
            Ok(format!("opened, instant: {instant}; {what}: {e}"))
        }
    };
    let t = match db.tree("t") {
        Ok(t) => t,
        Err(e) => return typed("tree", &e),
    };
    for i in 0..KEYS {
        match t.get(&key(i)) {
            Ok(Some(v)) if v == format!("value {i}").as_bytes() => {}
            Err(e) => return typed("get", &e),
            other => return Err(format!("key {i} after the open: {other:?}")),
        }
    }
    // Inserts that allocate pages (from the free list the state gave), then every key again.
    for i in 0..300u32 {
        if let Err(e) = t.insert(format!("after{i:05}").as_bytes(), &[7; 100]) {
            return typed("insert", &e);
        }
    }
    for i in 0..KEYS {
        match t.get(&key(i)) {
            Ok(Some(v)) if v == format!("value {i}").as_bytes() => {}
            Err(e) => return typed("get after inserts", &e),
            other => return Err(format!("key {i} after the inserts: {other:?}")),
        }
    }
    if let Err(e) = t.verify() {
        return typed("verify", &e);
    }
    drop(t);
    if let Err(e) = db.close() {
        return typed("close", &e);
    }
    Ok(format!("opened, instant: {instant}"))
}

#[test]
fn r22_hostile_archive_states_and_indexes_end_in_a_result_never_a_wrong_database() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.swz");
    let db = builder().create(&base).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut tx = db.begin();
    for i in 0..KEYS {
        tx.insert(&t, &key(i), format!("value {i}").as_bytes()).unwrap();
    }
    tx.commit().unwrap();
    let root = t.root_page().get();
    drop(t);
    db.close().unwrap();
    let pages = std::fs::metadata(&base).unwrap().len() / PS as u64;
    let mut failures = Vec::new();
    for (n, c) in cases().iter().enumerate() {
        let cdir = dir.path().join(format!("case{n}"));
        std::fs::create_dir_all(&cdir).unwrap();
        let path = cdir.join("db.swz");
        std::fs::copy(&base, &path).unwrap();
        crate::hostile_pages::copy_dir(&swizzledb::wal_dir(&base), &swizzledb::wal_dir(&path));
        add_hostile_run(&path, c, pages, root);
        let at = path.clone();
        let this = Case { name: c.name, bodies: c.bodies.clone(), ..case(c.name) };
        match under_watchdog(move || drive(&at, &this)) {
            Ok(outcome) => {
                let len = std::fs::metadata(&path).map_or(0, |m| m.len());
                if len > MAX_FILE {
                    failures.push(format!("{}: the file grew to {len} bytes", c.name));
                }
                eprintln!("{}: {outcome}", c.name);
                if c.name == "intact" && outcome != "opened, instant: true" {
                    failures.push(format!("{}: {outcome}", c.name));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", c.name)),
        }
    }
    assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
}
