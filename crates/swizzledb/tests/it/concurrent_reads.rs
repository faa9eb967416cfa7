//! Reads running beside writers, through the public API only: plain reads and scans (forward,
//! reverse, by prefix, from both ends, kept open across commits), read-only transactions at a
//! snapshot and at read committed, snapshot-isolation and serializable transactions' reads —
//! while writers move records to other keys, change their values, fill and empty runs of keys
//! (splits and merges of 4 KiB leaves) and commit or roll back. The writers keep an invariant
//! (a fixed set of accounts, whose amounts sum to a constant; a rolled-back transaction writes
//! poison values), so a read that sees a torn or uncommitted state fails; a read-only
//! transaction's reads, repeated after later commits, must be the same.
//!
//! And tree handles across lifecycles: a handle, its scans and a snapshot kept while the tree is
//! dropped and a tree of the same name made and written again.
//!
//! `CONCURRENT_READS_MS` sets how long each configuration's writers run (default 700 ms).

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use swizzledb::{Database, Error, PoolMode, Transaction, Tree, TreeError};

use crate::common::{self, XorShift};

type Rec = (Vec<u8>, Vec<u8>);

/// Accounts, each worth `START` at first.
const ACCOUNTS: u64 = 400;
const START: u64 = 1000;
const WRITERS: u64 = 2;

fn run_for() -> Duration {
    let ms = std::env::var("CONCURRENT_READS_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(700);
    Duration::from_millis(ms)
}

/// An account's key: a position (which moves) and the account's id.
fn account_key(pos: u64, id: u64) -> Vec<u8> {
    format!("k{pos:05}-a{id:04}").into_bytes()
}

/// An account's value: amount, id, then padding of a length that varies with `pad`.
fn account_value(amount: u64, id: u64, pad: u64) -> Vec<u8> {
    let mut v = format!("A{amount:08}|{id:04}|").into_bytes();
    v.resize(v.len() + (pad % 300) as usize, b'.');
    v
}

/// A filler's key: one of a run of consecutive keys a writer adds and removes as a whole.
/// The writer is part of the key: two writers' runs at one position would otherwise share keys,
/// and one writer's delete would take the other's filler.
fn filler_key(writer: u64, pos: u64, j: u64) -> Vec<u8> {
    format!("k{pos:05}-f{writer}-{j:04}").into_bytes()
}

const POISON: &[u8] = b"POISON";

/// The invariant a committed state keeps, checked on the records of a whole-tree read in
/// ascending order: strictly ascending keys, no poison, every account once, the amounts summing
/// to the total. Returns a description of the first violation.
fn check_state(rows: &[Rec]) -> Result<(), String> {
    if let Some(w) = rows.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(format!("keys out of order or twice: {:?} then {:?}", show(&w[0].0), show(&w[1].0)));
    }
    let mut ids = vec![false; ACCOUNTS as usize];
    let mut sum = 0;
    for (k, v) in rows {
        if v.starts_with(POISON) || k.ends_with(POISON) {
            return Err(format!("an uncommitted (rolled-back) record: {}", show(k)));
        }
        if v.starts_with(b"A") {
            let amount: u64 = std::str::from_utf8(&v[1..9]).unwrap().parse().unwrap();
            let id: usize = std::str::from_utf8(&v[10..14]).unwrap().parse().unwrap();
            if !k.ends_with(format!("-a{id:04}").as_bytes()) {
                return Err(format!("account {id} under another's key {}", show(k)));
            }
            if std::mem::replace(&mut ids[id], true) {
                return Err(format!("account {id} twice (a move seen half done)"));
            }
            sum += amount;
        } else if !v.starts_with(b"F") {
            return Err(format!("a value of no kind under {}", show(k)));
        }
    }
    if let Some(id) = ids.iter().position(|s| !s) {
        return Err(format!("account {id} missing (a move seen half done)"));
    }
    if sum != ACCOUNTS * START {
        return Err(format!(
            "the amounts sum to {sum}, not {} (a transfer seen half done)",
            ACCOUNTS * START
        ));
    }
    Ok(())
}

/// Checks the order only: what a read that may see uncommitted changes promises.
fn check_order(rows: &[Rec]) -> Result<(), String> {
    match rows.windows(2).find(|w| w[0].0 >= w[1].0) {
        Some(w) => Err(format!("keys out of order or twice: {} then {}", show(&w[0].0), show(&w[1].0))),
        None => Ok(()),
    }
}

fn show(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

fn collect<E: std::fmt::Debug>(it: impl Iterator<Item = Result<Rec, E>>) -> Result<Vec<Rec>, String> {
    it.map(|r| r.map_err(|e| format!("{e:?}"))).collect()
}

/// Reads an iterator from both ends, alternating as `pattern`'s bits say, and returns the
/// records in ascending order.
fn both_ends<E: std::fmt::Debug>(
    mut it: impl DoubleEndedIterator<Item = Result<Rec, E>>,
    mut pattern: u64,
) -> Result<Vec<Rec>, String> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        pattern = pattern.rotate_left(1);
        let item =
            if pattern & 1 == 0 { it.next().map(|r| (true, r)) } else { it.next_back().map(|r| (false, r)) };
        match item {
            None => break,
            Some((side, r)) => {
                let r = r.map_err(|e| format!("{e:?}"))?;
                if side {
                    front.push(r);
                } else {
                    back.push(r);
                }
            }
        }
    }
    back.reverse();
    front.extend(back);
    Ok(front)
}

/// A writer's run of fillers: its first position and length.
type Fill = Option<(u64, u64)>;

/// What a writer knows of its own accounts: each one's position and amount.
#[derive(Clone)]
struct Owned {
    accounts: BTreeMap<u64, (u64, u64)>,
}

/// A writer's transaction: moves some of its accounts to new positions, transfers between two
/// of them, and fills or empties a run of filler keys; a quarter of the transactions also write
/// poison and roll back. Reads its accounts through the transaction first (they must be what it
/// last committed). Returns its accounts as committed, or the error that ended the attempt.
fn writer_txn(
    tx: &mut Transaction<'_>,
    t: &Tree,
    own: &Owned,
    rng: &mut XorShift,
    fill: Fill,
) -> swizzledb::Result<(Owned, Fill, bool)> {
    let mut next = own.clone();
    let ids: Vec<u64> = own.accounts.keys().copied().collect();
    let pick = |rng: &mut XorShift| ids[(rng.next() % ids.len() as u64) as usize];
    // A transfer of at most what `a` holds.
    let (a, b) = (pick(rng), pick(rng));
    if a != b {
        let n = (rng.next() % 50).min(own.accounts[&a].1);
        for (id, amount) in [(a, own.accounts[&a].1 - n), (b, own.accounts[&b].1 + n)] {
            let (pos, was) = own.accounts[&id];
            let k = account_key(pos, id);
            let v = tx.get(t, &k)?.unwrap_or_else(|| panic!("account {id} not where its writer put it"));
            let found: u64 = std::str::from_utf8(&v[1..9]).unwrap().parse().unwrap();
            assert_eq!(found, was, "a transaction read another amount than its writer committed");
            tx.put(t, &k, &account_value(amount, id, rng.next()))?;
            next.accounts.insert(id, (pos, amount));
        }
    }
    // Moves: delete under the old key, insert under a new one, in one transaction.
    for _ in 0..1 + rng.next() % 3 {
        let id = pick(rng);
        let (pos, amount) = next.accounts[&id];
        let to = rng.next() % 100_000;
        if to == pos {
            continue;
        }
        assert!(tx.delete(t, &account_key(pos, id))?, "account {id} to move is absent");
        tx.insert(t, &account_key(to, id), &account_value(amount, id, rng.next()))?;
        next.accounts.insert(id, (to, amount));
    }
    // A run of fillers: added (enough to split a leaf or two) or, once added, removed.
    let mut next_fill = fill;
    // Each writer owns the accounts of one residue (`under_writers`).
    let writer = own.accounts.keys().next().map_or(0, |id| id % WRITERS);
    match fill {
        None if rng.next().is_multiple_of(3) => {
            let pos = rng.next() % 100_000;
            let n = 20 + rng.next() % 40;
            for j in 0..n {
                tx.put(t, &filler_key(writer, pos, j), &[b'F'; 120])?;
            }
            next_fill = Some((pos, n));
        }
        Some((pos, n)) if rng.next().is_multiple_of(2) => {
            for j in 0..n {
                assert!(tx.delete(t, &filler_key(writer, pos, j))?, "a filler its writer added is absent");
            }
            next_fill = None;
        }
        _ => {}
    }
    let poison = rng.next().is_multiple_of(4);
    if poison {
        // Uncommitted values no reader may see: a poisoned account, a poisoned key, a delete.
        let id = pick(rng);
        let (pos, _) = next.accounts[&id];
        tx.put(t, &account_key(pos, id), POISON)?;
        let mut k = account_key(rng.next() % 100_000, 9999);
        k.extend_from_slice(POISON);
        tx.put(t, &k, b"A00000000|9999|")?;
        let other = pick(rng);
        let (pos, _) = next.accounts[&other];
        tx.delete(t, &account_key(pos, other))?;
    }
    Ok((next, next_fill, poison))
}

/// Runs the writers and `read` on two reader threads until the time is up; returns the writers'
/// commits and rollbacks and the reads made.
fn under_writers(
    db: &Database,
    t: &Tree,
    ctx: &str,
    read: impl Fn(&mut XorShift, u64) + Sync,
) -> (u64, u64, u64) {
    // Fund the accounts, each writer owning every WRITERS-th one.
    let mut owned: Vec<Owned> = (0..WRITERS).map(|_| Owned { accounts: BTreeMap::new() }).collect();
    let mut rng = XorShift(0x5eed);
    db.transact(|tx| {
        for id in 0..ACCOUNTS {
            let pos = rng.next() % 100_000;
            tx.insert(t, &account_key(pos, id), &account_value(START, id, id))?;
            owned[(id % WRITERS) as usize].accounts.insert(id, (pos, START));
        }
        Ok(())
    })
    .unwrap();
    check_state(&collect(db.begin_read().range(t, Unbounded, Unbounded)).unwrap()).unwrap();
    let stop = AtomicBool::new(false);
    let (commits, rollbacks, reads) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let deadline = Instant::now() + run_for();
    std::thread::scope(|s| {
        for (w, own) in owned.into_iter().enumerate() {
            let (stop, commits, rollbacks) = (&stop, &commits, &rollbacks);
            s.spawn(move || {
                let mut own = own;
                let mut fill = None;
                let mut rng = XorShift(0x1234 + w as u64);
                while !stop.load(Ordering::Relaxed) {
                    let seed = rng.next();
                    let result = db.transact(|tx| {
                        let mut r = XorShift(seed | 1);
                        let (next, next_fill, poison) = writer_txn(tx, t, &own, &mut r, fill)?;
                        if poison {
                            return Err(Error::Aborted("poison".into()));
                        }
                        Ok((next, next_fill))
                    });
                    match result {
                        Ok((next, next_fill)) => {
                            own = next;
                            fill = next_fill;
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Aborted(_)) => {
                            rollbacks.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                }
            });
        }
        for r in 0..2u64 {
            let (stop, reads, read) = (&stop, &reads, &read);
            s.spawn(move || {
                let mut rng = XorShift(0xabc + r);
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) {
                    read(&mut rng, round);
                    round += 1;
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
    });
    t.verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
    check_state(&collect(db.begin_read().range(t, Unbounded, Unbounded)).unwrap())
        .unwrap_or_else(|e| panic!("{ctx}: after the writers: {e}"));
    (commits.into_inner(), rollbacks.into_inner(), reads.into_inner())
}

fn db_for(dir: &std::path::Path, mode: PoolMode, logged: bool) -> Database {
    let frames = if mode == PoolMode::MainMemory { 4096 } else { 96 };
    Database::builder()
        .page_size(4096)
        .pool_bytes(frames * 4096)
        .mode(mode)
        .logging(logged)
        .create(dir.join("reads.swz"))
        .unwrap()
}

/// One read of the whole tree, of the kind `kind` picks, checked against the invariant; on a
/// logged database plain reads are snapshot reads too (K22), on an unlogged one they read the
/// raw tree, uncommitted changes included (K14, K21), and only the order is checked.
fn read_once(db: &Database, t: &Tree, logged: bool, rng: &mut XorShift, kind: u64) -> Result<(), String> {
    let whole = |rows: Vec<Rec>| if logged { check_state(&rows) } else { check_order(&rows) };
    match kind % 9 {
        0 => whole(collect(t.range(Unbounded, Unbounded))?),
        1 => {
            let mut rows = collect(t.range_rev(Unbounded, Unbounded))?;
            rows.reverse();
            whole(rows)
        }
        2 => whole(both_ends(t.range(Unbounded, Unbounded), rng.next())?),
        3 => {
            // Kept open across commits: the scan reads at the snapshot taken when it was made.
            let mut it = t.scan_prefix(b"k");
            let mut rows = collect(it.by_ref().take(150))?;
            std::thread::sleep(Duration::from_millis(3));
            rows.extend(collect(it)?);
            whole(rows)
        }
        4 => {
            // The same from the end, the reverse iterator read from both of its ends.
            let mut it = t.scan_prefix_rev(b"k");
            let mut back = collect(it.by_ref().take(100))?;
            std::thread::sleep(Duration::from_millis(3));
            let mut rows = both_ends(it.rev(), rng.next())?;
            back.reverse();
            rows.extend(back);
            whole(rows)
        }
        5 => read_transaction(db, t, rng),
        6 => {
            // Read committed: each range read is one committed state.
            let rc = db.begin_read_committed();
            let mut rows = collect(rc.range_rev(t, Unbounded, Unbounded))?;
            rows.reverse();
            check_state(&rows)?;
            check_state(&collect(rc.range(t, Unbounded, Unbounded))?)
        }
        7 => {
            // Snapshot isolation: reads of one snapshot, no locks.
            let tx = db.begin_snapshot();
            let rows = collect(tx.range(t, Unbounded, Unbounded))?;
            check_state(&rows)?;
            std::thread::sleep(Duration::from_millis(2));
            let again = both_ends(tx.range(t, Unbounded, Unbounded), rng.next())?;
            if again != rows {
                return Err("a snapshot transaction's second scan differs from its first".into());
            }
            for (k, v) in rows.iter().step_by(37) {
                if tx.get(t, k).map_err(|e| e.to_string())?.as_ref() != Some(v) {
                    return Err(format!("a snapshot transaction's get of {} differs from its scan", show(k)));
                }
            }
            Ok(())
        }
        _ => {
            // Serializable: shared locks on every key read; a deadlock's victim retries.
            let rows = db
                .transact(|tx| {
                    let rows: Vec<Rec> =
                        tx.range(t, Unbounded, Unbounded).collect::<swizzledb::Result<_>>()?;
                    let mut rev: Vec<Rec> =
                        tx.range_rev(t, Unbounded, Unbounded).collect::<swizzledb::Result<_>>()?;
                    rev.reverse();
                    assert!(rev == rows, "a serializable transaction's two scans differ");
                    Ok(rows)
                })
                .map_err(|e| e.to_string())?;
            check_state(&rows)
        }
    }
}

/// A read-only transaction: a whole scan, scans by prefix and bounded ranges that make up the
/// whole, a reverse scan, point reads, and the whole scan again after a pause in which writers
/// commit: all one state.
fn read_transaction(db: &Database, t: &Tree, rng: &mut XorShift) -> Result<(), String> {
    let rt = db.begin_read();
    let first = collect(rt.range(t, Unbounded, Unbounded))?;
    check_state(&first)?;
    let mut by_prefix = Vec::new();
    for d in 0..10 {
        by_prefix.extend(collect(rt.scan_prefix(t, format!("k{d}").as_bytes()))?);
    }
    if by_prefix != first {
        return Err("the prefix scans of a read-only transaction differ from its whole scan".into());
    }
    let cut = format!("k{:05}", rng.next() % 100_000).into_bytes();
    let (lo, hi) = if rng.next().is_multiple_of(2) {
        (Excluded(&cut[..]), Included(&cut[..]))
    } else {
        (Included(&cut[..]), Excluded(&cut[..]))
    };
    let mut halves = both_ends(rt.range(t, Unbounded, hi), rng.next())?;
    let mut upper = collect(rt.range_rev(t, lo, Unbounded))?;
    upper.reverse();
    halves.extend(upper);
    if halves != first {
        return Err(format!("two ranges split at {} differ from the whole scan", show(&cut)));
    }
    for (k, v) in first.iter().step_by(29) {
        if rt.get(t, k).map_err(|e| e.to_string())?.as_ref() != Some(v) {
            return Err(format!("a read-only transaction's get of {} differs from its scan", show(k)));
        }
    }
    std::thread::sleep(Duration::from_millis(3));
    let later = both_ends(rt.range(t, Unbounded, Unbounded), rng.next())?;
    if later != first {
        return Err("a read-only transaction's scan after later commits differs from its first".into());
    }
    Ok(())
}

fn readers_beside_writers(logged: bool) {
    for mode in PoolMode::ALL {
        let ctx = format!("{mode}, logged {logged}");
        let dir = tempfile::tempdir().unwrap();
        let db = db_for(dir.path(), mode, logged);
        let t = db.create_tree("t").unwrap();
        let ctx2 = ctx.clone();
        let (commits, rollbacks, reads) = under_writers(&db, &t, &ctx, |rng, round| {
            let kind = round.wrapping_add(rng.next() % 3);
            if let Err(e) = read_once(&db, &t, logged, rng, kind) {
                panic!("{ctx2}: read kind {}: {e}", kind % 9);
            }
        });
        eprintln!("{ctx}: {commits} commits, {rollbacks} rollbacks, {reads} reads");
        assert!(
            commits > 10 && rollbacks > 0 && reads > 10,
            "{ctx}: {commits} commits, {rollbacks} rollbacks, {reads} reads"
        );
        db.close().unwrap();
    }
}

/// K14, K18, K22, K24, K25, btree T27 and "Scans": every kind of read beside writers whose
/// transactions move records, fill and empty runs of keys (splits and merges) and commit or roll
/// back sees one whole committed state, each key once and in order, on a logged database.
#[test]
fn concurrent_reads_see_whole_commits_on_a_logged_database() {
    common::watchdog("concurrent reads, logged", 120, || readers_beside_writers(true));
}

/// The same on an unlogged database, whose transactions keep versions too (K21); its plain reads
/// read the raw tree, and are checked for order only.
#[test]
fn concurrent_reads_see_whole_commits_on_an_unlogged_database() {
    common::watchdog("concurrent reads, unlogged", 120, || readers_beside_writers(false));
}

// ---------------------------------------------------------------------------------------------
// Tree handles across lifecycles.

fn lkey(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The records a generation `g` of tree "t" holds after its first transaction (`updated`
/// false: every key, value `g<g>`) or after its second (every third key deleted, the others
/// `g<g>u`).
fn generation(g: u32, updated: bool, keys: u32) -> Vec<Rec> {
    (0..keys)
        .filter(|i| !updated || i % 3 != 0)
        .map(|i| (lkey(i), if updated { format!("g{g}u") } else { format!("g{g}") }.into_bytes()))
        .collect()
}

fn write_generation(db: &Database, t: &Tree, g: u32, updated: bool, keys: u32) {
    db.transact(|tx| {
        for i in 0..keys {
            if updated && i % 3 == 0 {
                tx.delete(t, &lkey(i))?;
            } else {
                let v = if updated { format!("g{g}u") } else { format!("g{g}") };
                tx.put(t, &lkey(i), v.as_bytes())?;
            }
        }
        Ok(())
    })
    .unwrap();
}

/// Drains a scan: the records it returned before its first error, and whether that error was
/// `Dropped` (any other error fails).
fn drain_until_dropped(it: impl Iterator<Item = Result<Rec, TreeError>>, ctx: &str) -> (Vec<Rec>, bool) {
    let mut rows = Vec::new();
    for item in it {
        match item {
            Ok(r) => rows.push(r),
            Err(TreeError::Dropped) => return (rows, true),
            Err(e) => panic!("{ctx}: {e:?}"),
        }
    }
    (rows, false)
}

/// R23, btree T25, LOCKS.md K19, K22: a read-only transaction and scans (its own and plain
/// ones, forward, reverse and from both ends) begun on a tree, partly read, kept while the tree
/// is changed, dropped, and a tree of the same name made and written (on the dropped tree's
/// freed pages): the scans return the records of their snapshot, in order, or `Dropped` — never
/// a record of the new tree; the snapshot reads the new tree, made after it began, as empty,
/// through every kind of read, and a snapshot begun after the new tree's first commit sees that
/// commit through the new tree's later changes.
#[test]
fn concurrent_reads_a_snapshot_and_scans_kept_across_a_drop_see_no_other_tree() {
    const KEYS: u32 = 1500;
    for mode in PoolMode::ALL {
        for logged in [true, false] {
            let ctx = format!("{mode}, logged {logged}");
            let dir = tempfile::tempdir().unwrap();
            let db = db_for(dir.path(), mode, logged);
            let t = db.create_tree("t").unwrap();
            write_generation(&db, &t, 1, false, KEYS);
            let at_first = generation(1, false, KEYS);
            let early = db.begin_read();
            let mut fwd = early.range(&t, Unbounded, Unbounded);
            let mut rev = early.range_rev(&t, Unbounded, Unbounded);
            let mut both = early.range(&t, Included(&lkey(100)[..]), Excluded(&lkey(1400)[..]));
            let mut pfwd = t.range(Unbounded, Unbounded);
            let mut prev = t.scan_prefix_rev(b"key0");
            let mut head: Vec<Vec<Rec>> = vec![Vec::new(); 5];
            for _ in 0..10 {
                head[0].push(fwd.next().unwrap().unwrap());
                head[1].push(rev.next().unwrap().unwrap());
                head[2].push(both.next().unwrap().unwrap());
                head[3].push(pfwd.next().unwrap().unwrap());
                head[4].push(prev.next().unwrap().unwrap());
            }
            let back = both.next_back().unwrap().unwrap();
            // Changed after the snapshot: versions the open scans need.
            write_generation(&db, &t, 1, true, KEYS);
            assert!(db.drop_tree("t").unwrap(), "{ctx}");
            let t2 = db.create_tree("t").unwrap();
            write_generation(&db, &t2, 2, false, KEYS);
            let middle = db.begin_read();
            write_generation(&db, &t2, 2, true, KEYS);

            // The open scans: the snapshot's records of the old tree, or `Dropped`.
            let ok_rows = |rows: &[Rec], want: &[Rec], what: &str| {
                for r in rows {
                    assert!(want.contains(r), "{ctx}: {what} returned {:?} = {:?}", show(&r.0), show(&r.1));
                }
                assert!(rows.windows(2).all(|w| w[0].0 < w[1].0) || rows.windows(2).all(|w| w[0].0 > w[1].0));
            };
            let (rows, _) = drain_until_dropped(fwd, &ctx);
            ok_rows(&rows, &at_first, "a read-only transaction's scan");
            let (rows, _) = drain_until_dropped(rev, &ctx);
            ok_rows(&rows, &at_first, "a read-only transaction's reverse scan");
            let (rows, _) = drain_until_dropped(both.by_ref(), &ctx);
            ok_rows(&rows, &at_first, "a read-only transaction's scan from both ends");
            assert!(at_first.contains(&back), "{ctx}");
            let (rows, _) = drain_until_dropped(pfwd, &ctx);
            // A plain scan on an unlogged database reads the raw tree: any of the old tree's states.
            let old_any: Vec<Rec> = at_first.iter().cloned().chain(generation(1, true, KEYS)).collect();
            ok_rows(&rows, if logged { &at_first } else { &old_any }, "a plain scan");
            let (rows, _) = drain_until_dropped(prev, &ctx);
            ok_rows(&rows, if logged { &at_first } else { &old_any }, "a plain reverse prefix scan");
            for (i, h) in head.iter().enumerate() {
                ok_rows(h, if logged || i < 3 { &at_first } else { &old_any }, "a scan before the drop");
            }

            // The old handle refuses; the snapshot reads the new tree as empty.
            assert!(matches!(t.get(&lkey(1)), Err(TreeError::Dropped)), "{ctx}");
            assert!(matches!(early.get(&t, &lkey(1)), Err(Error::Tree(TreeError::Dropped))), "{ctx}");
            for i in (0..KEYS).step_by(7) {
                assert_eq!(
                    early.get(&t2, &lkey(i)).unwrap(),
                    None,
                    "{ctx}: key {i} of a tree made after the snapshot"
                );
            }
            let seen = |it: &mut dyn Iterator<Item = Result<Rec, TreeError>>| -> Vec<Rec> {
                it.map(|r| r.unwrap_or_else(|e| panic!("{ctx}: {e:?}"))).collect()
            };
            assert_eq!(
                seen(&mut early.range(&t2, Unbounded, Unbounded)),
                vec![],
                "{ctx}: the new tree at an older snapshot"
            );
            assert_eq!(seen(&mut early.range_rev(&t2, Unbounded, Unbounded)), vec![], "{ctx}");
            assert_eq!(seen(&mut early.scan_prefix(&t2, b"key01")), vec![], "{ctx}");
            assert_eq!(
                seen(&mut early.range(&t2, Excluded(&lkey(3)[..]), Included(&lkey(900)[..])).rev()),
                vec![],
                "{ctx}"
            );
            // The snapshot between the new tree's two commits sees the first.
            let want = generation(2, false, KEYS);
            assert_eq!(
                seen(&mut middle.range(&t2, Unbounded, Unbounded)),
                want,
                "{ctx}: the new tree's first commit"
            );
            let mut r = seen(&mut middle.range_rev(&t2, Unbounded, Unbounded));
            r.reverse();
            assert_eq!(r, want, "{ctx}");
            for i in (0..KEYS).step_by(3) {
                assert_eq!(middle.get(&t2, &lkey(i)).unwrap(), Some(b"g2".to_vec()), "{ctx}: key {i}");
            }
            // And now: the new tree's second commit.
            let now = db.begin_read();
            assert_eq!(seen(&mut now.range(&t2, Unbounded, Unbounded)), generation(2, true, KEYS), "{ctx}");
            assert_eq!(seen(&mut t2.range(Unbounded, Unbounded)), generation(2, true, KEYS), "{ctx}");
            drop(both);
            drop((early, middle, now));
            t2.verify().unwrap();
            if let Some(v) = db.version_stats() {
                assert_eq!(v.bytes, 0, "{ctx}: versions left once no snapshot runs");
            }
            db.close().unwrap();
        }
    }
}

/// K19, K22, btree T25 under a race: one thread drops tree "t" and makes it again, over and
/// over, each generation written by two transactions; readers take read-only transactions and
/// scan (both directions) and read through whichever handle of "t" they get. Every read sees
/// one state of the handle's own generation — its first commit or its second — or stops with
/// `Dropped`; never a record of another generation, which may have had the same root page, nor
/// a mix of the two states: a read that met the drop after its leaf was read took the tree's
/// newest values for the snapshot's, and missed deleted keys, once the drop had dropped the
/// tree's versions (LOCKS.md K19). Point reads of the snapshot agree with its scan.
#[test]
fn concurrent_reads_snapshots_racing_drops_see_only_their_generation() {
    const KEYS: u32 = 300;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logged in [true, false] {
            let ctx = format!("{mode}, logged {logged}");
            let dir = tempfile::tempdir().unwrap();
            let db = db_for(dir.path(), mode, logged);
            let t = db.create_tree("t").unwrap();
            db.transact(|tx| tx.put(&t, b"!gen", &0u32.to_be_bytes()).map(|_| ())).unwrap();
            write_generation(&db, &t, 0, false, KEYS);
            drop(t);
            let stop = AtomicBool::new(false);
            let (scans, cut) = (AtomicU64::new(0), AtomicU64::new(0));
            std::thread::scope(|s| {
                for r in 0..2u64 {
                    let (db, stop, scans, cut, ctx) = (&db, &stop, &scans, &cut, &ctx);
                    s.spawn(move || {
                        let mut rng = XorShift(77 + r);
                        while !stop.load(Ordering::Relaxed) {
                            let Ok(h) = db.tree("t") else { continue };
                            // The handle's generation: a plain read, or `Dropped`.
                            let g = match db.begin_read_committed().get(&h, b"!gen") {
                                Ok(Some(v)) => u32::from_be_bytes(v.try_into().unwrap()),
                                Ok(None) => continue, // made, not yet written
                                Err(Error::Tree(TreeError::Dropped)) => continue,
                                Err(e) => panic!("{ctx}: {e}"),
                            };
                            let rt = db.begin_read();
                            let reverse = rng.next().is_multiple_of(2);
                            let (mut rows, dropped) = if reverse {
                                drain_until_dropped(rt.range_rev(&h, Unbounded, Unbounded), ctx)
                            } else {
                                drain_until_dropped(rt.range(&h, Unbounded, Unbounded), ctx)
                            };
                            if reverse {
                                rows.reverse();
                            }
                            scans.fetch_add(1, Ordering::Relaxed);
                            if dropped {
                                cut.fetch_add(1, Ordering::Relaxed);
                            }
                            if !dropped {
                                // Point reads of the same snapshot agree with its scan, or stop with
                                // `Dropped`.
                                for i in (u32::try_from(rng.next() % 7).unwrap()..KEYS).step_by(7) {
                                    let want = rows.iter().find(|(k, _)| *k == lkey(i)).map(|(_, v)| v);
                                    match rt.get(&h, &lkey(i)) {
                                        Ok(v) => assert_eq!(v.as_ref(), want, "{ctx}: generation {g}, key {i}"),
                                        Err(Error::Tree(TreeError::Dropped)) => break,
                                        Err(e) => panic!("{ctx}: {e}"),
                                    }
                                }
                            }
                            let records: Vec<Rec> = rows.iter().filter(|(k, _)| k != b"!gen").cloned().collect();
                            let fits = |want: &[Rec]| {
                                if dropped {
                                    // A run of the state, from the end the scan began at.
                                    if reverse {
                                        want.ends_with(&records)
                                    } else {
                                        want.starts_with(&records)
                                    }
                                } else {
                                    want == records
                                }
                            };
                            let ok = (dropped && records.is_empty())
                                || fits(&generation(g, false, KEYS))
                                || fits(&generation(g, true, KEYS));
                            assert!(
                                ok,
                                "{ctx}: a snapshot scan (reverse: {reverse}) of generation {g} (dropped: {dropped}) returned {} \
                                 records: {:?}",
                                records.len(),
                                records.iter().map(|(k, v)| format!("{}={}", show(k), show(v))).collect::<Vec<_>>()
                            );
                        }
                    });
                }
                let deadline = Instant::now() + run_for();
                let mut g = 0u32;
                while Instant::now() < deadline {
                    g += 1;
                    let h = match db.drop_tree("t") {
                        Ok(true) => db.create_tree("t").unwrap(),
                        Ok(false) => panic!("{ctx}: no tree to drop"),
                        Err(Error::TreeBusy(_)) => continue,
                        Err(e) => panic!("{ctx}: {e}"),
                    };
                    db.transact(|tx| {
                        tx.put(&h, b"!gen", &g.to_be_bytes())?;
                        for i in 0..KEYS {
                            tx.put(&h, &lkey(i), format!("g{g}").as_bytes())?;
                        }
                        Ok(())
                    })
                    .unwrap();
                    write_generation(&db, &h, g, true, KEYS);
                }
                stop.store(true, Ordering::Relaxed);
            });
            eprintln!("{ctx}: {} scans, {} cut by a drop", scans.into_inner(), cut.into_inner());
            db.close().unwrap();
        }
    }
}

/// K19 under a race of `create_tree` with `drop_tree`: one thread makes tree "t", fills it,
/// takes a snapshot, deletes the keys (versions the snapshot needs) and drops the tree; another
/// keeps trying to make "t" meanwhile. A tree it makes after the snapshot began — which may
/// take the dropped tree's root page — reads as empty at that snapshot, never as the dropped
/// tree's deleted keys.
#[test]
fn concurrent_reads_a_tree_made_while_another_is_dropped_has_none_of_its_versions() {
    for logged in [false, true] {
        let ctx = format!("logged {logged}");
        let dir = tempfile::tempdir().unwrap();
        let db = db_for(dir.path(), PoolMode::Swizzling, logged);
        let snap: std::sync::Mutex<Option<std::sync::Arc<swizzledb::ReadTransaction<'_>>>> =
            std::sync::Mutex::new(None);
        let stop = AtomicBool::new(false);
        let (made, checked) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            let (db, snap, stop, made, checked, ctx) = (&db, &snap, &stop, &made, &checked, &ctx);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(rt) = snap.lock().unwrap().clone() else { continue };
                    match db.create_tree("t") {
                        Ok(h) => {
                            made.fetch_add(1, Ordering::Relaxed);
                            let rows: Vec<Rec> =
                                rt.range(&h, Unbounded, Unbounded).filter_map(Result::ok).collect();
                            assert!(
                                rows.is_empty(),
                                "{ctx}: a tree made after the snapshot read {} records of a dropped tree",
                                rows.len()
                            );
                            checked.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::TreeExists(_)) => {}
                        Err(e) => panic!("{ctx}: {e}"),
                    }
                }
            });
            let deadline = Instant::now() + run_for();
            while Instant::now() < deadline {
                let h = db.tree_or_create("t").unwrap();
                db.transact(|tx| {
                    for i in 0..40 {
                        tx.put(&h, &lkey(i), b"old")?;
                    }
                    Ok(())
                })
                .unwrap();
                *snap.lock().unwrap() = Some(std::sync::Arc::new(db.begin_read()));
                db.transact(|tx| {
                    for i in 0..40 {
                        tx.delete(&h, &lkey(i))?;
                    }
                    Ok(())
                })
                .unwrap();
                match db.drop_tree("t") {
                    Ok(_) | Err(Error::TreeBusy(_)) => {}
                    Err(e) => panic!("{ctx}: {e}"),
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        eprintln!("{ctx}: {} trees made beside drops", made.into_inner());
        drop(snap);
        db.close().unwrap();
    }
}
