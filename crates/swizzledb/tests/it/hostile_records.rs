//! Hostile log records (RECOVERY.md R10, R24): records that pass their checksum and decode,
//! but whose contents no engine wrote — a change of a page that is not a leaf of its tree, of
//! page 0 or of a page beyond the file, a key or value no page holds, an image of the wrong
//! page or of no page, a chain that names itself, a tree created twice or dropped while
//! absent, a free page that is in use — appended to the log of a cleanly closed database.
//!
//! For many seeded random cases the log is first read through `swizzledb::inspect` (as
//! `swizzledb stat`, `verify` and `log` do), then the database is opened (restart meets the
//! records) and driven: get, both scans, an insert, verify, close — on a thread under a
//! watchdog. Asserted: every step ends, none panics, the data file does not grow past a
//! bound (a record naming a page far beyond the file must not make restart write there), and
//! a classical open that fails names the damage (`Error::LogCorrupted`; an instant one, a
//! typed error of the place that met the record). Whether a case's open fails,
//! or a later step gives a typed error, or the database takes the records as written is
//! printed, not asserted: a well-formed record may be a change an engine could have made.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use swizzledb::lab::record::{Change, Checkpoint, Edit, NodeLog, Record, TxnEntry, TxnState};
use swizzledb::lab::TreeExt as _;
use swizzledb::Database;
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogManager};

use crate::hostile_pages::{copy_dir, page_of, shape, under_watchdog};

const PS: usize = 4096;
const KEYS: u32 = 2000;
/// The data file of a case may not grow past this (the intact one is well below a megabyte).
const MAX_FILE: u64 = 64 << 20;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn builder(instant: bool) -> swizzledb::Builder {
    let b = Database::builder().page_size(PS).pool_bytes(64 * PS).checkpoint_interval(None);
    if instant {
        // R22: the clean close archives the whole log; the hostile records appended after it
        // are the unarchived tail, which instant restart's archiver analyzes.
        b.log_archive(true).restart_mode(swizzledb::RestartMode::Instant).lab(|l| l.archive_interval(None))
    } else {
        b
    }
}

/// What the cases draw from: the intact file's pages, keys and LSNs.
struct World {
    file: Vec<u8>,
    root: u64,
    nodes: Vec<u64>,
    leaves: Vec<u64>,
    pages: u64,
    lsns: Vec<Lsn>,
}

fn build(path: &Path, instant: bool) -> World {
    let db = builder(instant).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut tx = db.begin();
    for i in 0..KEYS {
        tx.insert(&t, &key(i), format!("value {i}").as_bytes()).unwrap();
    }
    tx.commit().unwrap();
    db.create_tree("other").unwrap().insert(b"k", b"v").unwrap();
    let root = t.root_page().get();
    drop(t);
    db.close().unwrap();
    let file = std::fs::read(path).unwrap();
    let s = shape(&file, root);
    let lsns = swizzledb::inspect::read_log(path).unwrap().map(|e| e.unwrap().lsn).collect::<Vec<_>>();
    World {
        pages: (file.len() / PS) as u64,
        root,
        leaves: s.leaves.iter().map(|(l, _)| *l).collect(),
        nodes: s.nodes.clone(),
        file,
        lsns,
    }
}

fn page(rng: &mut SmallRng, w: &World) -> PageId {
    let raw = match rng.gen_range(0..10) {
        0 => 0,
        1 => w.root,
        2 => w.pages + rng.gen_range(0..4),
        3 => 1 << rng.gen_range(20..62),
        4 | 5 => *w.nodes.choose(rng).unwrap(),
        _ => *w.leaves.choose(rng).unwrap(),
    };
    PageId::new(raw).unwrap()
}

fn lsn(rng: &mut SmallRng, w: &World) -> Lsn {
    match rng.gen_range(0..6) {
        0 => Lsn(0),
        1 => Lsn(1 << rng.gen_range(20..62)),
        2 => Lsn(w.lsns.choose(rng).unwrap().0 + rng.gen_range(1..8)),
        _ => *w.lsns.choose(rng).unwrap(),
    }
}

fn bytes(rng: &mut SmallRng, existing_key: bool) -> Vec<u8> {
    match rng.gen_range(0..8) {
        0 => Vec::new(),
        1 => vec![0xAB; rng.gen_range(200..3000)],
        2 => vec![7; 100_000],
        3 | 4 if existing_key => key(rng.gen_range(0..KEYS)),
        _ => (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect(),
    }
}

fn image(rng: &mut SmallRng, w: &World) -> Vec<u8> {
    match rng.gen_range(0..5) {
        0 => (0..PS).map(|_| rng.gen()).collect(),
        1 => vec![0; PS],
        2 => page_of(&w.file, *w.nodes.choose(rng).unwrap())[..rng.gen_range(0..PS)].to_vec(),
        // Another page's intact image (its own id inside), or page 0's.
        3 => page_of(&w.file, 0).to_vec(),
        _ => page_of(&w.file, *w.nodes.choose(rng).unwrap()).to_vec(),
    }
}

fn pages(rng: &mut SmallRng, w: &World) -> Vec<PageId> {
    (0..rng.gen_range(0..3)).map(|_| page(rng, w)).collect()
}

fn change(rng: &mut SmallRng) -> Change {
    let key = bytes(rng, true);
    match rng.gen_range(0..4) {
        0 => Change::Insert { key, value: bytes(rng, false) },
        1 => Change::Update { key, old: bytes(rng, false), new: bytes(rng, false) },
        2 => Change::Delete { key, old: bytes(rng, false) },
        _ => Change::Patch {
            key,
            edits: (0..rng.gen_range(0..3))
                .map(|_| Edit {
                    gap: [0, 3, 5000, usize::MAX / 2][rng.gen_range(0..4)],
                    old: bytes(rng, false),
                    new: bytes(rng, false),
                })
                .collect(),
        },
    }
}

fn txn(rng: &mut SmallRng) -> TxnId {
    TxnId([0, 1 << 40, (1 << 40) + 64, u64::MAX][rng.gen_range(0..4)])
}

fn record(rng: &mut SmallRng, w: &World) -> Record {
    match rng.gen_range(0..20) {
        0..=9 => {
            let undo_next = rng.gen_bool(0.2).then(|| lsn(rng, w));
            Record::Leaf {
                txn: txn(rng),
                prev: lsn(rng, w),
                undo_next,
                tree: if rng.gen_bool(0.7) { PageId::new(w.root).unwrap() } else { page(rng, w) },
                page: page(rng, w),
                change: change(rng),
                base: rng.gen_bool(0.3).then(|| image(rng, w)),
                chain: if rng.gen_bool(0.2) { pages(rng, w) } else { Vec::new() },
                freed: if rng.gen_bool(0.2) { pages(rng, w) } else { Vec::new() },
                // The encoder refuses a committing CLR (R2).
                commits: undo_next.is_none() && rng.gen_bool(0.5),
            }
        }
        10..=12 => Record::Structure {
            pages: (0..rng.gen_range(0..3))
                .map(|_| {
                    let at = page(rng, w);
                    let log = match rng.gen_range(0..6) {
                        0..=2 => NodeLog::Image(image(rng, w)),
                        3 => NodeLog::Split { key: bytes(rng, true), right: page(rng, w) },
                        4 => NodeLog::Adopt { key: bytes(rng, true), child: page(rng, w) },
                        _ => NodeLog::Unlink { key: bytes(rng, true), child: page(rng, w) },
                    };
                    (at, log)
                })
                .collect(),
            freed: pages(rng, w),
        },
        13 => Record::CreateTree {
            name: ["t", "other", "new", ""][rng.gen_range(0..4)].to_string(),
            root: page(rng, w),
        },
        14 => Record::DropTree {
            name: ["t", "other", "absent"][rng.gen_range(0..3)].to_string(),
            root: page(rng, w),
        },
        15 => Record::Commit { txn: txn(rng), prev: lsn(rng, w) },
        16 => Record::Abort { txn: txn(rng), prev: lsn(rng, w) },
        17 => Record::End { txn: txn(rng), prev: lsn(rng, w) },
        18 => Record::PageWrite {
            page: page(rng, w),
            page_lsn: lsn(rng, w),
            decoupled: rng.gen_bool(0.5).then(|| lsn(rng, w)),
        },
        _ => Record::CheckpointEnd(Box::new(Checkpoint {
            begin: lsn(rng, w),
            dirty: (0..rng.gen_range(0..3)).map(|_| (page(rng, w), lsn(rng, w))).collect(),
            txns: (0..rng.gen_range(0..2))
                .map(|_| TxnEntry {
                    txn: txn(rng),
                    state: [TxnState::Active, TxnState::Committed, TxnState::Aborting][rng.gen_range(0..3)],
                    last_lsn: lsn(rng, w),
                    undo_next: lsn(rng, w),
                })
                .collect(),
            page_count: [0, w.pages, w.pages + 3, 1 << 30, 1 << 40][rng.gen_range(0..5)],
            free: pages(rng, w),
            catalog: vec![("t".into(), page(rng, w))],
            parts: [0, 0, 1, 1000][rng.gen_range(0..4)],
        })),
    }
}

/// Reads the log and the file as the inspection commands do, then opens the database and
/// drives it. `Err` for a result no engine may give; errors of the engine are outcomes.
fn drive(path: &Path, instant: bool) -> Result<String, String> {
    let mut out = String::new();
    if let Ok(records) = swizzledb::inspect::read_log(path) {
        for (n, r) in records.enumerate() {
            if n > 1_000_000 {
                return Err("the log read more than 1,000,000 records".into());
            }
            if r.is_err() {
                break;
            }
        }
    }
    if let Ok(file) = swizzledb::inspect::DatabaseFile::open(path) {
        let _ = file.verify();
    }
    let db = match builder(instant).open(path) {
        Ok(db) => {
            if instant && !db.restart_stats().instant {
                return Err("the restart was not instant".into());
            }
            db
        }
        // Classical restart refuses the log naming the record, as damage (R10), whatever the
        // record. Instant restart's archiver and on-demand redo meet the records elsewhere and
        // refuse them with the error of the place (a typed one).
        Err(e @ swizzledb::Error::LogCorrupted { .. }) => return Ok(format!("open: {}", kind(&e))),
        Err(e) if instant => return Ok(format!("open: {}", kind(&e))),
        Err(e) => return Err(format!("open refused the log with another error than LogCorrupted: {e:?}")),
    };
    let t = match db.tree("t") {
        Ok(t) => t,
        Err(e) => {
            out += &format!("tree: {}; ", kind(&e));
            return close(db, out);
        }
    };
    let mut errors = 0;
    for i in (0..KEYS).step_by(97) {
        errors += usize::from(t.get(&key(i)).is_err());
    }
    let cap = KEYS as usize * 4 + 1000;
    for (name, items) in [
        ("range", Box::new(t.range(Unbounded, Unbounded)) as Box<dyn Iterator<Item = _>>),
        ("range_rev", Box::new(t.range_rev(Unbounded, Unbounded))),
    ] {
        for (n, item) in items.enumerate() {
            if n > cap {
                return Err(format!("{name} returned more than {cap} records"));
            }
            if item.is_err() {
                errors += 1;
                break;
            }
        }
    }
    errors += usize::from(t.insert(b"after restart", b"v").is_err());
    let verified = t.verify().is_ok();
    out += &format!("{errors} errors, verify ok: {verified}; ");
    drop(t);
    close(db, out)
}

fn close(db: Database, out: String) -> Result<String, String> {
    match db.close() {
        Ok(()) => Ok(out + "closed"),
        Err(e) => Ok(out + &format!("close: {}", kind(&e))),
    }
}

/// An error's variant and the start of its message.
fn kind(e: &swizzledb::Error) -> String {
    let debug = format!("{e:?}");
    let variant = debug.split(['(', ' ', '{']).next().unwrap_or_default().to_string();
    format!("{variant}: {}", e.to_string().chars().take(90).collect::<String>())
}

fn run(cases: u64, seed: u64, instant: bool) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.swz");
    let w = build(&base, instant);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for case in 0..cases {
        let cdir = dir.path().join(format!("case{case}"));
        std::fs::create_dir_all(&cdir).unwrap();
        let path = cdir.join("db.swz");
        std::fs::copy(&base, &path).unwrap();
        copy_dir(&swizzledb::wal_dir(&base), &swizzledb::wal_dir(&path));
        let records: Vec<Record> = (0..rng.gen_range(1..4)).map(|_| record(&mut rng, &w)).collect();
        let what: Vec<String> =
            records.iter().map(|r| format!("{r:?}").chars().take(160).collect::<String>()).collect();
        let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(&path))).unwrap();
        for r in &records {
            log.append(&r.encode()).unwrap();
        }
        log.close().unwrap();
        let at = path.clone();
        match under_watchdog(move || drive(&at, instant)) {
            Ok(outcome) => {
                let len = std::fs::metadata(&path).map_or(0, |m| m.len());
                if len > MAX_FILE {
                    failures.push(format!("case {case}: the file grew to {len} bytes: {what:?}"));
                }
                *outcomes.entry(outcome.chars().take(140).collect()).or_default() += 1;
            }
            Err(e) => failures.push(format!("case {case}: {e}: {what:?}")),
        }
        let _ = std::fs::remove_dir_all(&cdir);
    }
    eprintln!("{cases} cases, outcomes:");
    for (o, n) in &outcomes {
        eprintln!("{n:5} {o}");
    }
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn r10_hostile_well_formed_records_end_in_a_result_never_a_panic_or_a_hang() {
    let cases = std::env::var("SWIZZLEDB_HOSTILE_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    run(cases, 0x10C5, false);
}

/// The same records under instant restart (R22), whose archiver analyzes them as the log's
/// unarchived tail and stores what it found as the state restart opens with.
#[test]
fn r22_hostile_well_formed_records_end_in_a_result_never_a_panic_or_a_hang() {
    let cases = std::env::var("SWIZZLEDB_HOSTILE_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    run(cases, 0x10C5, true);
}

/// Buffer F16, R10: records that would leave a catalog no engine keeps — a tree created with
/// another tree's root, the root of a tree in the catalog freed, a checkpoint whose catalog
/// gives two trees one root or lists a root free — are refused as damage naming the record,
/// by a classical restart and by an instant one (which reads no checkpoint of the tail, and
/// then opens with the intact catalog): kept, one tree's changes would overwrite another's, or
/// the next allocation would format a root over its tree.
#[test]
fn hostile_catalog_records_are_refused_naming_the_record() {
    for instant in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.swz");
        let w = build(&base, instant);
        let root = PageId::new(w.root).unwrap();
        let begin = *w.lsns.last().unwrap();
        let checkpoint = |catalog: Vec<(String, PageId)>, free: Vec<PageId>| {
            Record::CheckpointEnd(Box::new(Checkpoint {
                begin,
                dirty: Vec::new(),
                txns: Vec::new(),
                page_count: w.pages,
                free,
                catalog,
                parts: 0,
            }))
        };
        let cases = [
            ("a tree created with another's root", Record::CreateTree { name: "u".into(), root }),
            ("a root freed", Record::Structure { pages: Vec::new(), freed: vec![root] }),
            (
                "a checkpoint giving two trees one root",
                checkpoint(vec![("t".into(), root), ("u".into(), root)], vec![]),
            ),
            ("a checkpoint listing a root free", checkpoint(vec![("t".into(), root)], vec![root])),
        ];
        for (n, (what, record)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("case{n}.swz"));
            std::fs::copy(&base, &path).unwrap();
            copy_dir(&swizzledb::wal_dir(&base), &swizzledb::wal_dir(&path));
            let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(&path))).unwrap();
            let at = log.append(&record.encode()).unwrap();
            log.close().unwrap();
            match builder(instant).open(&path) {
                Err(swizzledb::Error::LogCorrupted { lsn, .. }) if lsn == at || lsn == begin => {}
                Err(e) => panic!("instant {instant}, {what}: {e:?}"),
                // Instant restart opens with the archived state: a checkpoint in the tail is
                // no state it reads. Opened, the catalog is one an engine keeps, and a tree's
                // new pages never land on another's.
                Ok(db) => {
                    let (t, other) = (db.tree("t").unwrap(), db.tree("other").unwrap());
                    assert!(instant && what.starts_with("a checkpoint"), "{what}: opened");
                    assert_ne!(t.root_page(), other.root_page(), "{what}");
                    assert!(!db.tree_names().contains(&"u".to_string()), "{what}");
                    for i in 0..500 {
                        other.insert(&key(i), b"other's").unwrap();
                    }
                    assert_eq!(t.range(Unbounded, Unbounded).count(), KEYS as usize, "{what}");
                    assert_eq!(t.get(&key(7)).unwrap().as_deref(), Some(&b"value 7"[..]), "{what}");
                    drop((t, other));
                    db.close().unwrap();
                }
            }
        }
    }
}

/// Buffer F16: an unlogged database whose page 0 gives two trees one root is refused at open
/// with `Corrupted` naming the root, before a change through one tree can overwrite the other.
#[test]
fn hostile_catalog_on_page_0_is_refused_naming_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().page_size(PS).logging(false).create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    t.insert(b"k", b"v").unwrap();
    let root = t.root_page();
    db.create_tree("other").unwrap().insert(b"o", b"w").unwrap();
    drop(t);
    db.close().unwrap();
    let mut file = std::fs::read(&path).unwrap();
    // The catalog's first entry (page 0 format, buffer meta.rs): "other" (name length, name),
    // then its root, which now names "t"'s.
    use swizzledb_buffer::page::{get_u16, get_u64, put_u64, HEADER_SIZE};
    let entry = HEADER_SIZE + 52;
    assert_eq!((get_u16(&file, entry), &file[entry + 2..entry + 7]), (5, &b"other"[..]));
    assert_ne!(get_u64(&file, entry + 7), root.get());
    put_u64(&mut file, entry + 7, root.get());
    swizzledb_buffer::page::seal(&mut file[..PS]);
    std::fs::write(&path, &file).unwrap();
    match Database::builder().page_size(PS).logging(false).open(&path) {
        Err(swizzledb::Error::Buffer(swizzledb_buffer::BufferError::Corrupted { page, reason, .. })) => {
            assert_eq!(page, root, "{reason}");
            assert!(reason.contains("root of both"), "{reason}");
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("a page 0 giving two trees one root was opened"),
    }
}

/// RECOVERY.md R17, wal A2: a record naming one page twice (here a structure record with a
/// leaf's own intact image twice, which redo may apply as often as it likes) is archived with
/// one entry for that page, and an instant restart opens with every record intact. Before the
/// fix the archiver's run had two entries of one page and LSN, and the open failed with the
/// archive's `BadConfig` ("archive entries out of (page, LSN) order"), no error of damage.
#[test]
fn r22_a_record_naming_a_page_twice_is_archived_once_per_page() {
    for instant in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let w = build(&path, instant);
        let leaf = w.leaves[w.leaves.len() / 2];
        let image = page_of(&w.file, leaf).to_vec();
        let p = PageId::new(leaf).unwrap();
        let record = Record::Structure {
            pages: vec![(p, NodeLog::Image(image.clone())), (p, NodeLog::Image(image))],
            freed: Vec::new(),
        };
        let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(&path))).unwrap();
        log.append(&record.encode()).unwrap();
        log.close().unwrap();
        let db = builder(instant).open(&path).unwrap_or_else(|e| panic!("instant {instant}: {e:?}"));
        let t = db.tree("t").unwrap();
        for i in 0..KEYS {
            let want = format!("value {i}");
            assert_eq!(
                t.get(&key(i)).unwrap().as_deref(),
                Some(want.as_bytes()),
                "instant {instant}, key {i}"
            );
        }
        t.verify().unwrap();
        drop(t);
        db.close().unwrap();
    }
}
