//! Hostile pages (btree README T5, T16, T17; RECOVERY.md R9): a page that
//! passes its checksum but is structurally wrong gives a typed error naming a page (or, at
//! restart, a log position), never a panic, a hang or a deadlock.
//!
//! A real database (4 KiB pages, a few thousand keys, two or more levels) is closed; then, for
//! many seeded random cases, one or two of its node pages are mutated (random bytes, header
//! fields set to boundary values, slots swapped, child references set to the page itself, an
//! ancestor, a sibling, 0 or a huge id, foster chains made to loop), the checksum is resealed,
//! and the database is reopened and driven — get, insert, upsert, delete, both scans, verify,
//! close — on a thread under a watchdog. Before that, the file is read through
//! `swizzledb::inspect` as `swizzledb stat`, `verify`, `dump` and `log` read it (`DatabaseFile`'s
//! `open`, `info`, `verify`, `dump`; `read_log`), under the same watchdog. The logged variant also appends a committed insert into
//! the mutated leaf (or the mutated image itself, as a structure record) to the log, so that
//! restart's redo meets the damage.
//!
//! Asserted: the thread finishes within the watchdog's limit and does not panic; every error is
//! `TreeError::Damaged`, `BufferError::Corrupted` (the load-time check, T17), `Error::LogCorrupted`
//! (restart) or `DuplicateKey`, possibly inside an auto-commit's `Transaction`; and keys whose
//! root-to-leaf path avoids every mutated page read back exactly as written (checked first,
//! before anything else loads a damaged page).

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound::Unbounded;
use std::path::{Path, PathBuf};
use std::time::Duration;
use swizzledb::inspect::{DatabaseFile, InspectError};
use swizzledb::lab::record::{Change, NodeLog, Record};
use swizzledb::lab::TreeExt as _;
use swizzledb::{BufferError, Database, Error, TreeError};
use swizzledb_btree::node;
use swizzledb_buffer::page;
use swizzledb_sync::{PageId, TxnId};
use swizzledb_wal::{LogConfig, LogManager};

const PS: usize = 4096;
const KEYS: u32 = 3000;
/// A case that has not finished after this long hangs.
const WATCHDOG: Duration = Duration::from_secs(10);

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let len = 20 + (i % 40) as usize;
    (0..len).map(|j| (i as usize + j) as u8).collect()
}

fn builder(logged: bool) -> swizzledb::Builder {
    Database::builder().page_size(PS).pool_bytes(32 * PS).logging(logged).checkpoint_interval(None)
}

/// Builds the database: keys inserted in a shuffled order, every seventh deleted (garbage,
/// half-full nodes). Returns the oracle.
fn build(path: &Path, logged: bool) -> (u64, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = builder(logged).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut order: Vec<u32> = (0..KEYS).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(7));
    let mut oracle = BTreeMap::new();
    if logged {
        // One transaction: thousands of auto-commits would each wait for the log.
        let mut tx = db.begin();
        for &i in &order {
            tx.insert(&t, &key(i), &value(i)).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        for &i in order.iter().filter(|i| *i % 7 == 3) {
            assert!(tx.delete(&t, &key(i)).unwrap());
        }
        tx.commit().unwrap();
    } else {
        for &i in &order {
            t.insert(&key(i), &value(i)).unwrap();
        }
        for &i in order.iter().filter(|i| *i % 7 == 3) {
            assert!(t.delete(&key(i)).unwrap());
        }
    }
    for i in (0..KEYS).filter(|i| i % 7 != 3) {
        oracle.insert(key(i), value(i));
    }
    assert_eq!(t.verify().unwrap().records, oracle.len());
    let root = t.root_page().get();
    drop(t);
    db.close().unwrap();
    (root, oracle)
}

pub(super) fn page_of(file: &[u8], id: u64) -> &[u8] {
    &file[id as usize * PS..(id as usize + 1) * PS]
}

fn child_ids(p: &[u8]) -> Vec<u64> {
    let mut offs = Vec::new();
    node::swip_offsets(p, &mut offs);
    offs.into_iter().map(|o| page::get_u64(p, o)).collect()
}

/// The intact tree, read from the closed file: every node page with its level, and for every
/// key the pages a descent to it passes (foster parents included).
pub(super) struct Shape {
    root: u64,
    pub(super) nodes: Vec<u64>,
    pub(super) level: HashMap<u64, u8>,
    /// The parent (or foster parent) of every node but the root.
    parent: HashMap<u64, u64>,
    path: BTreeMap<Vec<u8>, Vec<u64>>,
    /// The leaves' key ranges: (leaf, some key inside it not in the tree).
    pub(super) leaves: Vec<(u64, Vec<u8>)>,
}

pub(super) fn shape(file: &[u8], root: u64) -> Shape {
    let mut s = Shape {
        root,
        nodes: Vec::new(),
        level: HashMap::new(),
        parent: HashMap::new(),
        path: BTreeMap::new(),
        leaves: Vec::new(),
    };
    let mut stack = vec![(root, vec![root])];
    while let Some((id, path)) = stack.pop() {
        let p = page_of(file, id);
        // T17 accepts every page of an intact file.
        if let Err(e) = node::validate(p) {
            panic!("intact page {id} refused: {e}");
        }
        s.nodes.push(id);
        s.level.insert(id, node::level(p));
        for c in child_ids(p) {
            s.parent.insert(c, id);
            let mut cp = path.clone();
            cp.push(c);
            stack.push((c, cp));
        }
        if node::is_leaf(p) {
            for i in 0..node::count(p) {
                s.path.insert(node::key(p, i).to_vec(), path.clone());
            }
            if node::count(p) > 0 {
                let mut absent = node::key(p, 0).to_vec();
                absent.push(b'x');
                s.leaves.push((id, absent));
            }
        }
    }
    assert!(s.level[&root] >= 1, "the tree has at least two levels");
    s
}

/// One random mutation of node page `id` (already a copy of its intact bytes in `p`); returns
/// what was done. `others` may receive a second mutated page (a foster loop).
fn mutate(
    rng: &mut SmallRng,
    s: &Shape,
    file: &[u8],
    id: u64,
    p: &mut [u8],
    others: &mut Vec<(u64, Vec<u8>)>,
) -> String {
    let n = node::count(p);
    let slots_end = (64 + 12 * n).min(PS);
    let u16_fields = [32usize, 34, 36, 40, 42, 44, 46, 48, 50, 52];
    let boundary = |rng: &mut SmallRng| -> u16 {
        *[0u16, 1, 2, 63, 64, 65, (PS - 1) as u16, PS as u16, PS as u16 + 1, 0x7fff, 0xffff, rng.gen()]
            .choose(rng)
            .unwrap()
    };
    let mut ids: Vec<u64> =
        vec![id, s.root, 0, 1, u64::MAX >> 2, (file.len() / PS) as u64, (file.len() / PS + 7) as u64];
    ids.extend(s.nodes.choose_multiple(rng, 3));
    let mut anc = id;
    while let Some(&a) = s.parent.get(&anc) {
        ids.push(a);
        anc = a;
    }
    match rng.gen_range(0..11) {
        0 => {
            let k = rng.gen_range(1..=4);
            let mut at = Vec::new();
            for _ in 0..k {
                let o = rng.gen_range(32..slots_end.max(33));
                p[o] = rng.gen();
                at.push(o);
            }
            format!("random bytes at {at:?} (header/slots)")
        }
        1 => {
            let o = rng.gen_range(slots_end.min(PS - 1)..PS);
            let old = p[o];
            p[o] = rng.gen();
            format!("heap byte {o}: {old} -> {}", p[o])
        }
        2 => {
            let f = *u16_fields.choose(rng).unwrap();
            let v = boundary(rng);
            page::put_u16(p, f, v);
            format!("header field {f} = {v}")
        }
        3 => {
            let v: u8 = *[0u8, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, rng.gen()].choose(rng).unwrap();
            p[38] = v;
            format!("flags = {v:#x}")
        }
        4 => {
            let l = node::level(p);
            let v: u8 = *[0, 1, 2, l.wrapping_add(1), l.wrapping_sub(1), 33, 200, 255].choose(rng).unwrap();
            p[5] = v;
            format!("level {l} -> {v}")
        }
        5 if n >= 2 => {
            let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
            let (sa, sb) = (64 + 12 * a, 64 + 12 * b);
            let mut tmp = [0u8; 12];
            tmp.copy_from_slice(&p[sa..sa + 12]);
            p.copy_within(sb..sb + 12, sa);
            p[sb..sb + 12].copy_from_slice(&tmp);
            format!("slots {a} and {b} swapped")
        }
        6 | 7 => {
            let mut offs = Vec::new();
            node::swip_offsets(p, &mut offs);
            let v = *ids.choose(rng).unwrap();
            match offs.choose(rng) {
                Some(&o) => {
                    page::put_u64(p, o, v);
                    format!("swip at {o} = {v}")
                }
                None => {
                    // A leaf without a foster child: give it one, pointing at `v`, with its
                    // last key as foster key.
                    if n == 0 {
                        return "nothing (empty leaf)".into();
                    }
                    let (off, klen) =
                        (page::get_u16(p, 64 + 12 * (n - 1)), page::get_u16(p, 64 + 12 * (n - 1) + 2));
                    page::put_u16(p, 48, off + 2);
                    page::put_u16(p, 50, klen);
                    page::put_u64(p, 56, v);
                    p[38] |= 4;
                    format!("leaf given a foster child {v}")
                }
            }
        }
        8 if n >= 1 => {
            let i = rng.gen_range(0..n);
            let h: u64 = if rng.gen() { rng.gen() } else { 0 };
            page::put_u64(p, 64 + 12 * i + 4, h);
            format!("slot {i} head = {h:#x}")
        }
        9 => {
            // Two pages of one level whose foster swips point at each other (a foster loop),
            // each with its last key as foster key.
            let lvl = node::level(p);
            let Some(&other) = s.nodes.iter().find(|&&o| o != id && s.level[&o] == lvl) else {
                return "nothing (no other node at this level)".into();
            };
            let mut q = page_of(file, other).to_vec();
            for (pg, to) in [(&mut *p, other), (&mut q[..], id)] {
                let m = node::count(pg);
                if m == 0 {
                    continue;
                }
                let s0 = 64 + 12 * (m - 1);
                let (off, klen) = (page::get_u16(pg, s0), page::get_u16(pg, s0 + 2));
                let ks = if node::is_leaf(pg) { 2 } else { 8 };
                page::put_u16(pg, 48, off + ks);
                page::put_u16(pg, 50, klen);
                page::put_u64(pg, 56, to);
                pg[38] |= 4;
            }
            others.push((other, q));
            format!("foster loop {id} <-> {other}")
        }
        _ => {
            let o = rng.gen_range(52..54);
            let v = boundary(rng);
            page::put_u16(p, 52, v);
            format!("prefix length ({o}) = {v}")
        }
    }
}

/// Whether `e` is one of the errors a damaged page may give.
fn typed(e: &Error) -> bool {
    match e {
        Error::Tree(t) => tree_typed(t),
        Error::Buffer(BufferError::Corrupted { .. }) | Error::LogCorrupted { .. } => true,
        _ => false,
    }
}

fn tree_typed(e: &TreeError) -> bool {
    match e {
        TreeError::Damaged { .. }
        | TreeError::Buffer(BufferError::Corrupted { .. })
        | TreeError::DuplicateKey => true,
        TreeError::Transaction(inner) => inner.downcast_ref::<Error>().is_some_and(typed),
        _ => false,
    }
}

/// Opens the mutated database and drives it. `Err` describes a wrong result or an untyped
/// error; panics and hangs are caught by the caller.
fn drive(
    path: &Path,
    logged: bool,
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
    untouched: &[Vec<u8>],
    mut rng: SmallRng,
) -> Result<String, String> {
    let check = |what: &str, e: &TreeError| {
        if tree_typed(e) {
            Ok(())
        } else {
            Err(format!("{what}: untyped error {e:?}"))
        }
    };
    let db = match builder(logged).open(path) {
        Ok(db) => db,
        Err(e) if typed(&e) => return Ok(format!("open: {e}")),
        Err(e) => return Err(format!("open: untyped error {e:?}")),
    };
    let t = match db.tree("t") {
        Ok(t) => t,
        Err(e) if typed(&e) => return Ok(format!("tree: {e}")),
        Err(e) => return Err(format!("tree: untyped error {e:?}")),
    };
    // Keys on intact paths first, while no damaged page is loaded.
    for k in untouched {
        match t.get(k) {
            Ok(v) if v.as_ref() == oracle.get(k) => {}
            other => return Err(format!("untouched key {:?}: {other:?}", String::from_utf8_lossy(k))),
        }
    }
    let mut errors = 0;
    let keys: Vec<&Vec<u8>> = oracle.keys().collect();
    for _ in 0..40 {
        let k = keys.choose(&mut rng).unwrap();
        let r = match rng.gen_range(0..4) {
            0 => t.get(k).map(|_| ()),
            1 => t.insert(&[k.as_slice(), b"+"].concat(), b"new").map(|_| ()),
            2 => t.upsert(k, b"upserted").map(|_| ()),
            _ => t.delete(k).map(|_| ()),
        };
        if let Err(e) = r {
            check("point operation", &e)?;
            errors += 1;
        }
    }
    let cap = oracle.len() * 4 + 1000;
    for (name, items) in [
        ("range", Box::new(t.range(Unbounded, Unbounded)) as Box<dyn Iterator<Item = _>>),
        ("range_rev", Box::new(t.range_rev(Unbounded, Unbounded))),
    ] {
        let mut n = 0;
        for item in items {
            n += 1;
            if n > cap {
                return Err(format!("{name} returned more than {cap} records"));
            }
            if let Err(e) = item {
                check(name, &e)?;
                errors += 1;
                break;
            }
        }
    }
    let verified = t.verify().is_ok();
    drop(t);
    match db.close() {
        Ok(()) => {}
        Err(e) if typed(&e) => errors += 1,
        Err(e) => return Err(format!("close: untyped error {e:?}")),
    }
    Ok(format!("{errors} typed errors, verify ok: {verified}"))
}

/// Runs `drive` on a thread under the watchdog; `Err` for a panic, a hang or a wrong result.
fn watched(
    path: PathBuf,
    logged: bool,
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
    untouched: Vec<Vec<u8>>,
    seed: u64,
) -> Result<String, String> {
    let oracle = oracle.clone();
    under_watchdog(move || drive(&path, logged, &oracle, &untouched, SmallRng::seed_from_u64(seed)))
}

/// Runs `case` on a thread of its own: its result, or `Err` for a panic or a hang (no result
/// after [`WATCHDOG`]).
pub(super) fn under_watchdog(
    case: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(case());
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(r) => {
            let _ = h.join();
            r
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!("hang: no result after {WATCHDOG:?}")),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(p) => Err(format!(
                "panic: {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
            Ok(()) => Err("the case thread ended without a result".into()),
        },
    }
}

/// Reads the mutated file as `swizzledb stat`, `verify`, `dump` and `log` do, through
/// `swizzledb::inspect`, before anything opens it: every call ends, with a typed error or a
/// result, and a dump stops within `cap` records. A tree whose dump fails is one that `verify`
/// reports: as damage, or (in a file restart would change) as a pending tree.
fn inspect_case(path: &Path, logged: bool, cap: usize) -> Result<String, String> {
    let file = match DatabaseFile::open(path) {
        Ok(f) => f,
        Err(e @ (InspectError::Unreadable { .. } | InspectError::NotADatabase { .. })) => {
            return Err(format!("open: the file is a database: {e}"))
        }
        Err(e) => return Ok(format!("open: {e}")),
    };
    let clean = file.info().clean;
    let report = file.verify();
    let mut n = 0usize;
    let mut over = false;
    let dumped = file.dump("t", |_, _| {
        n += 1;
        over |= n > cap;
    });
    if over {
        return Err(format!("dump returned {n} records, more than {cap}"));
    }
    if let Err(e) = &dumped {
        if matches!(e, InspectError::NoSuchTree { .. } | InspectError::Unreadable { .. }) {
            return Err(format!("dump: {e}"));
        }
        if report.is_clean() && report.pending_trees.is_empty() {
            return Err(format!("verify found nothing (clean file: {clean}), but dump failed: {e}"));
        }
    }
    let mut log_records = 0usize;
    if logged {
        match swizzledb::inspect::read_log(path) {
            Ok(records) => {
                for r in records {
                    log_records += 1;
                    if log_records > 1_000_000 {
                        return Err("the log returned more than 1,000,000 records".into());
                    }
                    if r.is_err() {
                        break;
                    }
                }
            }
            Err(e) => return Err(format!("read_log of an intact log: {e}")),
        }
    }
    Ok(format!(
        "inspect: verify {} damaged, dump {}",
        report.damage.len(),
        if dumped.is_ok() { "ok" } else { "failed" }
    ))
}

/// Appends to the log of the (cleanly closed, logged) database at `path`: optionally a
/// structure record installing an image of a page, then a committed insert of `k` into page
/// `id` (without its end record), so that restart's redo works on that page.
fn append_redo(path: &Path, root: u64, image: Option<(u64, Vec<u8>)>, id: u64, k: &[u8]) {
    let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(path))).unwrap();
    let pid = PageId::new(id).unwrap();
    if let Some((at, image)) = image {
        let pages = vec![(PageId::new(at).unwrap(), NodeLog::Image(image))];
        log.append(&Record::Structure { pages, freed: vec![] }.encode()).unwrap();
    }
    let txn = TxnId(1 << 40);
    let begin = log.append(&Record::Begin { txn }.encode()).unwrap();
    let leaf = Record::Leaf {
        txn,
        prev: begin,
        undo_next: None,
        tree: PageId::new(root).unwrap(),
        page: pid,
        change: Change::Insert { key: k.to_vec(), value: b"redone".to_vec() },
        base: None,
        chain: vec![],
        freed: vec![],
        commits: false,
    };
    let at = log.append(&leaf.encode()).unwrap();
    log.append(&Record::Commit { txn, prev: at }.encode()).unwrap();
    log.close().unwrap();
}

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn run(logged: bool, cases: u64, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.swz");
    let (root, oracle) = build(&base, logged);
    let file = std::fs::read(&base).unwrap();
    let s = shape(&file, root);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for case in 0..cases {
        // Inner nodes are few: pick one a third of the time.
        let inner: Vec<u64> = s.nodes.iter().copied().filter(|n| s.level[n] > 0).collect();
        let id = if rng.gen_ratio(1, 3) {
            *inner.choose(&mut rng).unwrap()
        } else {
            *s.nodes.choose(&mut rng).unwrap()
        };
        let mut p = page_of(&file, id).to_vec();
        let mut others = Vec::new();
        let what = mutate(&mut rng, &s, &file, id, &mut p, &mut others);
        let mut mutated: Vec<(u64, Vec<u8>)> = vec![(id, p)];
        mutated.extend(others);
        let mut hit: HashSet<u64> = mutated.iter().map(|(i, _)| *i).collect();
        let cdir = dir.path().join(format!("case{case}"));
        std::fs::create_dir_all(&cdir).unwrap();
        let path = cdir.join("db.swz");
        let mut bytes = file.clone();
        // Logged: half the cases put the damaged page into the log as an image instead.
        let as_image = logged && rng.gen_bool(0.5);
        let mut image = None;
        for (i, pg) in &mut mutated {
            page::seal(pg);
            if as_image && *i == id {
                image = Some(pg.clone());
            } else {
                bytes[*i as usize * PS..(*i as usize + 1) * PS].copy_from_slice(pg);
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut what = what;
        if logged {
            copy_dir(&swizzledb::wal_dir(&base), &swizzledb::wal_dir(&path));
            // Redo an insert into the damaged page if it is a leaf (half the time), else into
            // another leaf.
            let own = s.leaves.iter().find(|(l, _)| *l == id).filter(|_| rng.gen_bool(0.5));
            let (redo_page, k) = own.unwrap_or_else(|| s.leaves.choose(&mut rng).unwrap()).clone();
            append_redo(&path, root, image.clone().map(|im| (id, im)), redo_page, &k);
            what = format!(
                "{what}; redo insert into {redo_page}{}",
                if image.is_some() { " (damaged image in the log)" } else { "" }
            );
            hit.insert(redo_page);
        }
        let untouched: Vec<Vec<u8>> = s
            .path
            .iter()
            .filter(|(_, path)| !path.iter().any(|p| hit.contains(p)))
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
            .choose_multiple(&mut rng, 30)
            .cloned()
            .collect();
        let cap = oracle.len() * 4 + 1000;
        let inspect_path = path.clone();
        match under_watchdog(move || inspect_case(&inspect_path, logged, cap)) {
            Ok(outcome) => *outcomes.entry(outcome.chars().take(150).collect()).or_default() += 1,
            Err(e) => failures.push(format!("case {case}: page {id} (level {}): {what}: {e}", s.level[&id])),
        }
        match watched(path, logged, &oracle, untouched, seed ^ case) {
            Ok(outcome) => {
                let kind = outcome.chars().take(150).collect::<String>();
                *outcomes.entry(kind).or_default() += 1;
            }
            Err(e) => failures.push(format!("case {case}: page {id} (level {}): {what}: {e}", s.level[&id])),
        }
        let _ = std::fs::remove_dir_all(&cdir);
    }
    eprintln!("{cases} cases, outcomes {outcomes:?}");
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn t17_mutated_pages_of_a_closed_file_give_typed_errors() {
    run(false, 500, 0xB0DE);
}

#[test]
fn t17_mutated_pages_met_by_restart_give_typed_errors() {
    run(true, 200, 0x5EED);
}
