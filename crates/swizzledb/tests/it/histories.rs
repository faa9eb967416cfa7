//! Whole histories checked for isolation anomalies (LOCKS.md K16, K18, K24), the way Elle checks
//! them (Kingsbury and Alvaro, VLDB 2020), through the public API only.
//!
//! Every value is a list that transactions append elements to, and no element is appended
//! twice in a run. The final lists give each key's order of versions; every read names the
//! version it saw (its last element); so the history's dependencies between committed
//! transactions are known exactly: write-write (`WW`: appended next after the other),
//! write-read (`WR`: read the other's version), read-write (`RW`, an anti-dependency: read the
//! version before the other's) and real time (`RT`: began after the other returned, or ran
//! after it in the same thread). In Adya's terms:
//!
//! - a read of an element that no committed transaction appended is G1a (an aborted read);
//! - a read that stops between two appends of one transaction is G1b (an intermediate read);
//! - an element committed and missing from the final list is a lost update;
//! - a cycle of the graph is G0, G1c or G2: a serializable history has none;
//! - under snapshot isolation a cycle needs at least two anti-dependencies (write skew and the
//!   read-only anomaly are allowed); a cycle with fewer is G0, G1c or G-single (a lost update
//!   or a read skew), which snapshot isolation excludes.
//!
//! Phantoms: transactions also insert fresh ids into a registry that nothing deletes from, and
//! read ranges of it. An id's versions are "absent" and "inserted", so a range read that misses
//! an id of its range read the version before its inserter's, and a phantom is a cycle too.
//!
//! The real-time edges make the check strict: a transaction or snapshot that began after a
//! commit returned must see it (K18: "the last committed state as of its start").
//!
//! Across a power loss (RECOVERY.md R10, R22) the recovered lists and registry take the place of
//! the final ones: every commit that returned must be there, nothing of a transaction left
//! open, and each write the power loss cut short wholly or not at all.
//! `HISTORY_SECS` lengthens each configuration's run (default: 0.4 s).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::too_old;
use swizzledb::{Database, Error, PoolMode, Transaction, Tree};

/// Keys `k0`..`k7`: few, so that transactions meet often.
const KEYS: usize = 8;

fn key(i: usize) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

/// Filler records between the lists' keys (`k3~017` sorts between `k3` and `k4`): they spread
/// the lists over leaves, so that range reads cross leaves and close gaps in later ones (btree
/// T18), and transactions insert and delete them, so that those leaves split and merge.
const FILLERS: usize = 40;

fn filler(gap: usize, j: usize) -> Vec<u8> {
    format!("k{gap}~{j:03}").into_bytes()
}

/// The list a key of the tree is (`None`: a filler).
fn key_index(k: &[u8]) -> Option<usize> {
    std::str::from_utf8(&k[1..]).ok().and_then(|s| s.parse().ok())
}

/// The lists among a range read's records, by key.
fn lists_of(entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> Vec<Option<Vec<u32>>> {
    let mut seen = vec![None; KEYS];
    for (k, v) in entries {
        if let Some(i) = key_index(&k) {
            seen[i] = Some(decode(&v));
        }
    }
    seen
}

/// The length of a full list, in bytes: it takes no more elements (a list's value stays within
/// the tree's limit, `Tree::max_value_len`, however long the run).
const FULL: usize = 12 << 10;

/// A list: its elements, 4 bytes each.
fn decode(v: &[u8]) -> Vec<u32> {
    assert_eq!(v.len() % 4, 0, "a value torn: {} bytes", v.len());
    v.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

fn appended(old: &[u8], elem: u32) -> Vec<u8> {
    let mut v = old.to_vec();
    v.extend_from_slice(&elem.to_le_bytes());
    v
}

#[derive(Clone, Debug)]
enum Op {
    /// A read of `key`: the list it returned (empty: the key was absent).
    Read {
        key: usize,
        list: Vec<u32>,
    },
    Append {
        key: usize,
        elem: u32,
    },
    /// An insert of `id` into the registry.
    Register {
        id: u32,
    },
    /// A range read of the registry's ids `lo..hi`: the ids it returned.
    Scan {
        lo: u32,
        hi: u32,
        found: Vec<u32>,
    },
}

/// The registry: a set that transactions insert fresh ids into and never delete from, read by
/// range: each id's versions are "absent" and "inserted", so a range read that returns it
/// read its inserter's version, and one that does not read the version before it (an
/// anti-dependency). A phantom (K15, K16) is then a dependency cycle like any other.
struct Registry {
    tree: Tree,
    /// The next id: one counter for all threads, so that ranges read near it meet inserts.
    next: std::sync::atomic::AtomicU32,
}

/// Registry ids start here, above every list element (threads below 0xF0), so that one set of
/// rolled-back values covers both.
const FIRST_ID: u32 = 0xF000_0000;

fn scan_ids(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<u32> {
    entries.into_iter().map(|(k, _)| u32::from_be_bytes(k.try_into().expect("an id"))).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `Database::transact` (serializable) or `Database::transact_snapshot`.
    ReadWrite,
    /// `Database::begin_read`.
    ReadOnly,
    /// One read of `Database::begin_read_committed`: each stands alone (K25).
    ReadCommitted,
    /// `Tree::get`.
    PlainRead,
    /// `Tree::compare_and_swap` of what `Tree::get` returned.
    PlainCas,
    /// `Database::backup_to`: the copy's lists, read after the run.
    Backup,
    /// What a restart recovered: every element and id found after it, as one transaction
    /// that ended when the database opened.
    Recovered,
}

/// A committed transaction: what it did, and when. `start` is taken before the first read that
/// could see another's commit: before it began, or for a serializable transaction (whose reads
/// lock) at the start of its last attempt; `end` after it returned. Either way, a transaction
/// that returned before another's `start` must be seen by it.
#[derive(Clone, Debug)]
struct Txn {
    thread: usize,
    kind: Kind,
    start: Instant,
    end: Instant,
    ops: Vec<Op>,
}

/// The isolation level a history is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Serializable,
    Snapshot,
}

/// xorshift: variety, no statistical quality needed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A planned step of a read-write transaction.
#[derive(Clone, Copy)]
enum Step {
    Get(usize),
    /// `get`, then `put` of the list with one more element.
    Append(usize),
    /// `update_with` appending one element to a present key, else `insert`.
    Update(usize),
    /// A range read of keys `lo..hi`.
    Range(usize, usize),
    /// The same, backwards (`range_rev`).
    RangeRev(usize, usize),
    /// `get`, then `compare_and_swap` of the list with one more element: under the lock the
    /// read took (or at the snapshot, where a change since is a write conflict) the swap finds
    /// what the read returned.
    CasAppend(usize),
    Register,
    /// A range read of `span` registry ids from `back` before the next, of at most `limit` ids.
    Scan {
        back: u32,
        span: u32,
        limit: Option<usize>,
    },
}

fn plan(rng: &mut Rng) -> Vec<Step> {
    (0..1 + rng.below(4))
        .map(|_| {
            let k = rng.below(KEYS);
            let hi = k + 1 + rng.below(KEYS - k);
            match rng.below(14) {
                0..=2 => Step::Get(k),
                3..=4 => Step::Append(k),
                5 => Step::CasAppend(k),
                6..=7 => Step::Update(k),
                8 => Step::Range(k, hi),
                9 => Step::RangeRev(k, hi),
                10 => Step::Register,
                _ => Step::Scan {
                    back: rng.below(24) as u32,
                    span: 1 + rng.below(16) as u32,
                    limit: (rng.below(2) == 0).then(|| 1 + rng.below(4)),
                },
            }
        })
        .collect()
}

/// Runs `plan` in `tx`, recording what it read and appended into `ops`; `next` makes fresh
/// elements.
fn execute(
    tx: &mut Transaction<'_>,
    t: &Tree,
    reg: &Registry,
    plan: &[Step],
    ops: &mut Vec<Op>,
    next: &mut dyn FnMut() -> u32,
) -> swizzledb::Result<()> {
    for step in plan {
        match *step {
            Step::Get(k) => {
                let list = tx.get(t, &key(k))?.map(|v| decode(&v)).unwrap_or_default();
                ops.push(Op::Read { key: k, list });
            }
            Step::Append(k) => {
                let old = tx.get(t, &key(k))?.unwrap_or_default();
                ops.push(Op::Read { key: k, list: decode(&old) });
                if old.len() >= FULL {
                    continue;
                }
                let elem = next();
                ops.push(Op::Append { key: k, elem });
                tx.put(t, &key(k), &appended(&old, elem))?;
            }
            Step::Update(k) => {
                let elem = next();
                let read = tx.update_with(t, &key(k), |old, new| {
                    new.extend_from_slice(old);
                    if old.len() < FULL {
                        new.extend_from_slice(&elem.to_le_bytes());
                    }
                    decode(old)
                })?;
                match read {
                    Some(list) if list.len() * 4 >= FULL => {
                        // Full: rewritten as it was, no version of its order.
                        ops.push(Op::Read { key: k, list });
                        continue;
                    }
                    Some(list) => ops.push(Op::Read { key: k, list }),
                    None => {
                        // Absent: `update_with` locked the key, so the insert appends to the
                        // empty list it saw (under snapshot isolation a commit since the
                        // snapshot is a write conflict).
                        ops.push(Op::Read { key: k, list: Vec::new() });
                        tx.insert(t, &key(k), &elem.to_le_bytes())?;
                    }
                }
                ops.push(Op::Append { key: k, elem });
            }
            Step::Range(lo, hi) => {
                let seen = lists_of(
                    tx.range(t, Included(&key(lo)), Excluded(&key(hi))).collect::<Result<Vec<_>, _>>()?,
                );
                for (k, list) in seen.into_iter().enumerate().take(hi).skip(lo) {
                    ops.push(Op::Read { key: k, list: list.unwrap_or_default() });
                }
            }
            Step::RangeRev(lo, hi) => {
                let range = tx.range_rev(t, Included(&key(lo)), Excluded(&key(hi)));
                let seen = lists_of(range.collect::<Result<Vec<_>, _>>()?);
                for (k, list) in seen.into_iter().enumerate().take(hi).skip(lo) {
                    ops.push(Op::Read { key: k, list: list.unwrap_or_default() });
                }
            }
            Step::CasAppend(k) => {
                let old = tx.get(t, &key(k))?;
                let list = old.as_deref().map(decode).unwrap_or_default();
                ops.push(Op::Read { key: k, list });
                if old.as_ref().is_some_and(|v| v.len() >= FULL) {
                    continue;
                }
                let elem = next();
                ops.push(Op::Append { key: k, elem });
                let new = appended(old.as_deref().unwrap_or_default(), elem);
                if let Err(found) = tx.compare_and_swap(t, &key(k), old.as_deref(), Some(&new))? {
                    panic!(
                        "k{k}: a transaction's swap after its read found {:x?}",
                        found.current.map(|v| decode(&v))
                    );
                }
            }
            Step::Register => {
                let id = reg.next.fetch_add(1, Relaxed);
                ops.push(Op::Register { id });
                tx.insert(&reg.tree, &id.to_be_bytes(), b"")?;
            }
            Step::Scan { back, span, limit } => {
                let lo = reg.next.load(Relaxed).saturating_sub(back).max(FIRST_ID);
                let mut hi = lo + span;
                let range = tx.range(&reg.tree, Included(&lo.to_be_bytes()), Excluded(&hi.to_be_bytes()));
                let found = match limit {
                    Some(n) => {
                        let found = scan_ids(range.limit(n).collect::<Result<Vec<_>, _>>()?);
                        // btree T19: a scan that stopped at its limit saw the gaps up to its
                        // last id only.
                        if found.len() == n {
                            hi = found[n - 1] + 1;
                        }
                        found
                    }
                    None => scan_ids(range.collect::<Result<Vec<_>, _>>()?),
                };
                ops.push(Op::Scan { lo, hi, found });
            }
        }
    }
    Ok(())
}

/// What one thread did: its committed transactions in order, the elements and ids it wrote in
/// transactions that rolled back, and the write whose commit the power loss cut short (it may
/// have committed or not).
struct Done {
    txns: Vec<Txn>,
    failed: Vec<u32>,
    maybe: Vec<Txn>,
}

/// The elements appended and the ids registered.
fn written(ops: &[Op]) -> impl Iterator<Item = u32> + '_ {
    ops.iter().filter_map(|op| match op {
        Op::Append { elem, .. } => Some(*elem),
        Op::Register { id } => Some(*id),
        Op::Read { .. } | Op::Scan { .. } => None,
    })
}

/// One thread's mix: read-write transactions at `level` (retried until they commit), transactions
/// rolled back on purpose (by `abort`, by an error returned to `transact`, by a drop), read-only
/// and read-committed transactions, on a logged database plain reads and compare-and-swap
/// appends (an unlogged database's plain reads show uncommitted changes and its plain writes
/// are no transactions, K14, K21), and filler changes. An error other than those the level
/// allows fails the test, unless `down` says the power went (then the thread ends, and a
/// write whose commit did not return is reported as one that may have committed).
fn worker(db: &Database, t: &Tree, reg: &Registry, thread: usize, how: How, flags: &Flags) -> Done {
    let How { logging, level } = how;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((thread as u64 + 1) * 0x1234_5678_9ABC));
    let mut counter = 0u32;
    let mut next = move || {
        counter += 1;
        assert!(counter < 1 << 24, "elements ran out");
        ((thread as u32) << 24) | counter
    };
    let mut done = Done { txns: Vec::new(), failed: Vec::new(), maybe: Vec::new() };
    let read = |list: Option<Vec<u8>>| list.map(|v| decode(&v)).unwrap_or_default();
    let txn = |kind, start, ops| Txn { thread, kind, start, end: Instant::now(), ops };
    while !flags.stop.load(Relaxed) {
        let outcome: Result<(), Failure> = match rng.below(22) {
            0..=9 => {
                let plan = plan(&mut rng);
                let mut ops = Vec::new();
                let mut start = Instant::now();
                let result = match level {
                    // Its reads lock, so its last attempt's start may be taken in it.
                    Level::Serializable => db.transact(|tx| {
                        // A retry: the attempt before rolled back.
                        done.failed.extend(written(&ops));
                        ops.clear();
                        start = Instant::now();
                        execute(tx, t, reg, &plan, &mut ops, &mut next)
                    }),
                    // Its reads see its snapshot, so its start is taken before it begins.
                    Level::Snapshot => loop {
                        done.failed.extend(written(&ops));
                        ops.clear();
                        start = Instant::now();
                        let mut tx = db.begin_snapshot();
                        match execute(&mut tx, t, reg, &plan, &mut ops, &mut next) {
                            Ok(()) => break tx.commit(),
                            Err(Error::WriteConflict { .. } | Error::Lock(_)) => {}
                            Err(e) if too_old(&e) => {}
                            Err(e) => break Err(e),
                        }
                    },
                };
                match result {
                    Ok(()) => {
                        done.txns.push(txn(Kind::ReadWrite, start, ops));
                        Ok(())
                    }
                    Err(e) => Err(cut_short(e, txn(Kind::ReadWrite, start, ops))),
                }
            }
            10 => {
                let plan = plan(&mut rng);
                let mut ops = Vec::new();
                let result = match rng.below(3) {
                    0 => match db.transact(|tx| {
                        done.failed.extend(written(&ops));
                        ops.clear();
                        execute(tx, t, reg, &plan, &mut ops, &mut next)?;
                        Err::<(), _>(Error::Aborted("on purpose".into()))
                    }) {
                        Err(Error::Aborted(_)) => Ok(()),
                        Err(e) => Err(e),
                        Ok(()) => panic!("thread {thread}: committed"),
                    },
                    how => {
                        let mut tx = match level {
                            Level::Serializable => db.begin(),
                            Level::Snapshot => db.begin_snapshot(),
                        };
                        match execute(&mut tx, t, reg, &plan, &mut ops, &mut next) {
                            Ok(()) | Err(Error::Lock(_) | Error::WriteConflict { .. }) => Ok(()),
                            Err(e) if too_old(&e) => Ok(()),
                            Err(e) => Err(e),
                        }
                        .and_then(|()| {
                            if how == 1 {
                                return tx.abort();
                            }
                            drop(tx);
                            Ok(())
                        })
                    }
                };
                // Never committed, whatever the result.
                done.failed.extend(written(&ops));
                result.map_err(failure)
            }
            11..=13 => {
                let start = Instant::now();
                let r = db.begin_read();
                let mut ops = Vec::new();
                let whole = (0..1 + rng.below(3)).try_for_each(|_| {
                    let choice = rng.below(6);
                    if choice == 4 {
                        let lo = rng.below(KEYS);
                        let range = r.range_rev(t, Included(&key(lo)), Unbounded);
                        let seen = lists_of(range.collect::<Result<Vec<_>, _>>()?);
                        for (k, list) in seen.into_iter().enumerate().skip(lo) {
                            ops.push(Op::Read { key: k, list: list.unwrap_or_default() });
                        }
                    } else if choice == 5 {
                        // Every id: they share their first byte.
                        let found =
                            scan_ids(r.scan_prefix(&reg.tree, &[0xF0]).collect::<Result<Vec<_>, _>>()?);
                        ops.push(Op::Scan { lo: FIRST_ID, hi: 0xF100_0000, found });
                    } else if choice == 0 {
                        let lo = reg.next.load(Relaxed).saturating_sub(rng.below(24) as u32).max(FIRST_ID);
                        let hi = lo + 1 + rng.below(16) as u32;
                        let range =
                            r.range(&reg.tree, Included(&lo.to_be_bytes()), Excluded(&hi.to_be_bytes()));
                        let found = scan_ids(range.collect::<Result<Vec<_>, _>>()?);
                        ops.push(Op::Scan { lo, hi, found });
                    } else if choice == 1 {
                        let lo = rng.below(KEYS);
                        let seen = lists_of(
                            r.range(t, Included(&key(lo)), Unbounded).collect::<Result<Vec<_>, _>>()?,
                        );
                        for (k, list) in seen.into_iter().enumerate().skip(lo) {
                            ops.push(Op::Read { key: k, list: list.unwrap_or_default() });
                        }
                    } else {
                        let k = rng.below(KEYS);
                        ops.push(Op::Read { key: k, list: read(r.get(t, &key(k))?) });
                    }
                    Ok::<_, Error>(())
                });
                drop(r);
                match whole {
                    Ok(()) => {
                        done.txns.push(txn(Kind::ReadOnly, start, ops));
                        Ok(())
                    }
                    // K20: a snapshot ended for its versions' memory returns no value.
                    Err(e) if too_old(&e) => Ok(()),
                    Err(e) => Err(failure(e)),
                }
            }
            14 => {
                // Each point read, and each range read, sees the newest committed state when it
                // began: a transaction of its own.
                let reads = db.begin_read_committed();
                (0..1 + rng.below(3)).try_for_each(|_| {
                    let start = Instant::now();
                    let lo = rng.below(KEYS);
                    let ops = if rng.below(3) == 0 {
                        let seen = match reads
                            .range(t, Included(&key(lo)), Unbounded)
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(Error::from)
                        {
                            Ok(entries) => lists_of(entries),
                            // K20: a range read's own snapshot may end; it returns no value then.
                            Err(e) if too_old(&e) => return Ok(()),
                            Err(e) => return Err(failure(e)),
                        };
                        seen.into_iter()
                            .enumerate()
                            .skip(lo)
                            .map(|(k, l)| Op::Read { key: k, list: l.unwrap_or_default() })
                            .collect()
                    } else {
                        vec![Op::Read { key: lo, list: read(reads.get(t, &key(lo)).map_err(failure)?) }]
                    };
                    done.txns.push(txn(Kind::ReadCommitted, start, ops));
                    Ok(())
                })
            }
            15..=16 if logging => {
                let k = rng.below(KEYS);
                let start = Instant::now();
                t.get(&key(k)).map_err(failure).map(|list| {
                    let ops = vec![Op::Read { key: k, list: read(list) }];
                    done.txns.push(txn(Kind::PlainRead, start, ops));
                })
            }
            17..=19 if logging => {
                let k = rng.below(KEYS);
                let elem = next();
                loop {
                    let old = match t.get(&key(k)) {
                        Ok(old) => old,
                        Err(e) => break Err(failure(e)),
                    };
                    if old.as_ref().is_some_and(|v| v.len() >= FULL) {
                        break Ok(());
                    }
                    let new = appended(old.as_deref().unwrap_or_default(), elem);
                    // The swap is the transaction: it read `old` (still there) and appended.
                    let start = Instant::now();
                    let swapped = t.compare_and_swap(&key(k), old.as_deref(), Some(&new));
                    let ops = vec![Op::Read { key: k, list: read(old) }, Op::Append { key: k, elem }];
                    match swapped {
                        Ok(Ok(())) => {
                            done.txns.push(txn(Kind::PlainCas, start, ops));
                            break Ok(());
                        }
                        Ok(Err(_)) => {}
                        Err(e) => break Err(cut_short(e.into(), txn(Kind::PlainCas, start, ops))),
                    }
                }
            }
            20..=21 => {
                // A filler inserted or deleted: leaves split and merge under the lists.
                let f = filler(rng.below(KEYS), rng.below(FILLERS));
                db.transact(|tx| match tx.get(t, &f)? {
                    Some(_) => tx.delete(t, &f).map(drop),
                    None => tx.insert(t, &f, &[5; 100]),
                })
                .map_err(failure)
            }
            _ => Ok(()),
        };
        if let Err(failed) = outcome {
            let (e, maybe) = *failed;
            assert!(flags.down.load(Relaxed), "thread {thread}: {e:?}");
            done.maybe.extend(maybe);
            break;
        }
    }
    done
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edge {
    WW,
    WR,
    RW,
    RT,
}

/// Checks a history at `level`; `Err` names the first anomaly found. `finals` are the keys'
/// lists after the run, `registered` the registry's ids, `failed` the elements and ids of
/// transactions that rolled back.
fn check(
    txns: &[Txn],
    failed: &HashSet<u32>,
    finals: &[Vec<u32>],
    registered: &BTreeSet<u32>,
    level: Level,
) -> Result<(), String> {
    let show = |i: usize| {
        let t = &txns[i];
        format!("T{i} ({:?}, thread {}) [{}]", t.kind, t.thread, summary(&t.ops))
    };
    let mut writer: HashMap<u32, usize> = HashMap::new();
    for (i, t) in txns.iter().enumerate() {
        for e in written(&t.ops) {
            if writer.insert(e, i).is_some() {
                return Err(format!("{e:#x} written by two transactions"));
            }
            if failed.contains(&e) {
                return Err(format!("element {e:#x} both committed and rolled back"));
            }
        }
    }
    let mut seen = HashSet::new();
    for (k, list) in finals.iter().enumerate() {
        for e in list {
            if !seen.insert(*e) {
                return Err(format!("k{k}: element {e:#x} twice in the final lists"));
            }
            if !writer.contains_key(e) {
                let why = if failed.contains(e) { "G1a: rolled back" } else { "appended by nobody" };
                return Err(format!("k{k} ends with {e:#x} ({why})"));
            }
        }
    }
    for id in registered {
        if !writer.contains_key(id) {
            let why = if failed.contains(id) { "G1a: rolled back" } else { "registered by nobody" };
            return Err(format!("the registry holds {id:#x} ({why})"));
        }
    }
    for (i, t) in txns.iter().enumerate() {
        for op in &t.ops {
            match op {
                Op::Append { key, elem } if !finals[*key].contains(elem) => {
                    return Err(format!("lost update: k{key} lacks {elem:#x} of {}", show(i)));
                }
                Op::Register { id } if !registered.contains(id) => {
                    return Err(format!("lost insert: the registry lacks {id:#x} of {}", show(i)));
                }
                _ => {}
            }
        }
    }
    let reg_writer: BTreeMap<u32, usize> = registered.iter().map(|id| (*id, writer[id])).collect();
    let mut edges: Vec<Vec<(usize, Edge)>> = vec![Vec::new(); txns.len()];
    for list in finals {
        for w in list.windows(2) {
            let (a, b) = (writer[&w[0]], writer[&w[1]]);
            if a != b {
                edges[a].push((b, Edge::WW));
            }
        }
    }
    for (i, t) in txns.iter().enumerate() {
        // A read ends with the transaction's own appends to the key so far; what comes before
        // them is the version it read from others, which must be a prefix of the final list.
        let mut own: Vec<Vec<u32>> = vec![Vec::new(); KEYS];
        let mut own_ids = Vec::new();
        for op in &t.ops {
            let (key, list) = match op {
                Op::Append { key, elem } => {
                    own[*key].push(*elem);
                    continue;
                }
                Op::Register { id } => {
                    own_ids.push(*id);
                    continue;
                }
                Op::Scan { lo, hi, found } => {
                    // Every id it returned was registered, by a committed transaction or by
                    // itself before; every id of the range registered by another is a version
                    // it read or one it missed.
                    let found: HashSet<u32> = found.iter().copied().collect();
                    for id in &found {
                        if !(*lo..*hi).contains(id) || !reg_writer.contains_key(id) {
                            let why =
                                if failed.contains(id) { "G1a: rolled back" } else { "not in the registry" };
                            return Err(format!("a scan returned {id:#x} ({why}): {}", show(i)));
                        }
                    }
                    if let Some(id) =
                        own_ids.iter().find(|id| (*lo..*hi).contains(*id) && !found.contains(*id))
                    {
                        return Err(format!("own insert {id:#x} not read back by {}", show(i)));
                    }
                    for (id, &w) in reg_writer.range(*lo..*hi).filter(|&(_, &w)| w != i) {
                        if found.contains(id) {
                            edges[w].push((i, Edge::WR));
                        } else {
                            edges[i].push((w, Edge::RW));
                        }
                    }
                    continue;
                }
                Op::Read { key, list } => (*key, list),
            };
            let fin = &finals[key];
            if list.len() > fin.len() || fin[..list.len()] != list[..] {
                let bad: Vec<_> = list.iter().filter(|e| failed.contains(e)).collect();
                let what = if bad.is_empty() { "not a prefix of the final list" } else { "G1a" };
                return Err(format!(
                    "{what}: k{key} read as ..{:x?} (rolled back: {bad:x?}) by {}",
                    list.last(),
                    show(i)
                ));
            }
            let mine = &own[key];
            if list.len() < mine.len() || list[list.len() - mine.len()..] != mine[..] {
                return Err(format!("own appends {mine:x?} to k{key} not read back by {}", show(i)));
            }
            let external = list.len() - mine.len();
            let after = fin.get(external).map(|e| writer[e]);
            if let Some(e) = list[..external].last() {
                let w = writer[e];
                if w != i {
                    if after == Some(w) {
                        return Err(format!(
                            "G1b: k{key} read between two appends of {} by {}",
                            show(w),
                            show(i)
                        ));
                    }
                    edges[w].push((i, Edge::WR));
                }
            }
            if let Some(w) = after.filter(|&w| w != i && mine.is_empty()) {
                edges[i].push((w, Edge::RW));
            }
        }
    }
    // Real time: a thread's transactions in order, and each transaction after the last one of
    // every other thread that returned before it began.
    let threads = txns.iter().map(|t| t.thread + 1).max().unwrap_or(0);
    let mut by_thread: Vec<Vec<usize>> = vec![Vec::new(); threads];
    for (i, t) in txns.iter().enumerate() {
        by_thread[t.thread].push(i);
    }
    // One after the other in each thread: in the order they began.
    for list in &mut by_thread {
        list.sort_by_key(|&i| txns[i].start);
    }
    for list in &by_thread {
        for w in list.windows(2) {
            edges[w[0]].push((w[1], Edge::RT));
        }
    }
    for (i, t) in txns.iter().enumerate() {
        for list in by_thread.iter().filter(|l| l.first().is_some_and(|&j| txns[j].thread != t.thread)) {
            let before = list.partition_point(|&j| txns[j].end < t.start);
            if before > 0 {
                edges[list[before - 1]].push((i, Edge::RT));
            }
        }
    }
    let cycle = match level {
        Level::Serializable => find_cycle(&edges),
        Level::Snapshot => {
            let no_rw: Vec<Vec<(usize, Edge)>> = edges
                .iter()
                .map(|out| out.iter().copied().filter(|&(_, e)| e != Edge::RW).collect())
                .collect();
            find_cycle(&no_rw).or_else(|| find_single_rw_cycle(txns, &edges, &no_rw))
        }
    };
    match cycle {
        None => Ok(()),
        Some(cycle) => {
            let mut s = format!("a dependency cycle, not allowed at {level:?}:\n");
            for (i, e) in cycle {
                s += &format!("  {} --{e:?}-->\n", show(i));
            }
            Err(s)
        }
    }
}

/// Operations, each read as its key and the last element it saw (`-`: none).
fn summary(ops: &[Op]) -> String {
    let one = |op: &Op| match op {
        Op::Read { key, list } => match list.last() {
            Some(e) => format!("r k{key} ..{e:#x}"),
            None => format!("r k{key} -"),
        },
        Op::Append { key, elem } => format!("a k{key} {elem:#x}"),
        Op::Register { id } => format!("insert {id:#x}"),
        Op::Scan { lo, hi, found } => format!("scan {lo:#x}..{hi:#x} {found:x?}"),
    };
    ops.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// A cycle of the graph, as (node, edge to the next node), if there is one: an iterative
/// depth-first search.
fn find_cycle(edges: &[Vec<(usize, Edge)>]) -> Option<Vec<(usize, Edge)>> {
    const NEW: u8 = 0;
    const ON_STACK: u8 = 1;
    let mut colour = vec![NEW; edges.len()];
    let mut parent: Vec<Option<(usize, Edge)>> = vec![None; edges.len()];
    for root in 0..edges.len() {
        if colour[root] != NEW {
            continue;
        }
        colour[root] = ON_STACK;
        let mut stack = vec![(root, 0usize)];
        while let Some((v, next)) = stack.last_mut() {
            let v = *v;
            let Some(&(w, e)) = edges[v].get(*next) else {
                colour[v] = 2;
                stack.pop();
                continue;
            };
            *next += 1;
            match colour[w] {
                NEW => {
                    colour[w] = ON_STACK;
                    parent[w] = Some((v, e));
                    stack.push((w, 0));
                }
                ON_STACK => {
                    // v -> w closes a cycle along the stack from w to v.
                    let mut cycle = vec![(v, e)];
                    let mut x = v;
                    while x != w {
                        let (p, pe) = parent[x].expect("on the stack below w");
                        cycle.push((p, pe));
                        x = p;
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

/// G-single: an anti-dependency `u -RW-> v` closed by a path from `v` back to `u` of other
/// edges. Along such edges a transaction's point of commit (its snapshot, for a read-only one)
/// only grows, and each lies between its transaction's start and end, so the search from `v`
/// passes over transactions that started after `u` ended.
fn find_single_rw_cycle(
    txns: &[Txn],
    edges: &[Vec<(usize, Edge)>],
    no_rw: &[Vec<(usize, Edge)>],
) -> Option<Vec<(usize, Edge)>> {
    for (u, out) in edges.iter().enumerate() {
        for &(v, _) in out.iter().filter(|&&(_, e)| e == Edge::RW) {
            let mut from: HashMap<usize, (usize, Edge)> = HashMap::new();
            let mut queue = VecDeque::from([v]);
            while let Some(x) = queue.pop_front() {
                if x == u {
                    let mut path = vec![(u, Edge::RW)];
                    let mut y = u;
                    while y != v {
                        let (p, e) = from[&y];
                        path.push((p, e));
                        y = p;
                    }
                    path[1..].reverse();
                    return Some(path);
                }
                for &(y, e) in &no_rw[x] {
                    if y != v && txns[y].start <= txns[u].end && !from.contains_key(&y) {
                        from.insert(y, (x, e));
                        queue.push_back(y);
                    }
                }
            }
        }
    }
    None
}

/// A database to run histories on.
#[derive(Clone, Copy, Debug)]
struct Config {
    mode: PoolMode,
    logging: bool,
    /// `DeadlockPolicy::WaitDie` instead of deadlock detection.
    wait_die: bool,
    /// `Builder::version_memory`, small enough to end snapshots (K20), or the default.
    version_memory: Option<usize>,
    level: Level,
}

const fn config(mode: PoolMode, logging: bool, level: Level) -> Config {
    Config { mode, logging, wait_die: false, version_memory: None, level }
}

/// An error a worker met, and the write it cut short (one that may have committed).
type Failure = Box<(Error, Option<Txn>)>;

fn failure(e: impl Into<Error>) -> Failure {
    Box::new((e.into(), None))
}

fn cut_short(e: Error, txn: Txn) -> Failure {
    Box::new((e, Some(txn)))
}

/// What the workers do: on a logged database or not, at which level.
#[derive(Clone, Copy)]
struct How {
    logging: bool,
    level: Level,
}

/// When the workers stop, and whether the power went.
#[derive(Default)]
struct Flags {
    stop: AtomicBool,
    down: AtomicBool,
}

/// What a phase left: the committed transactions, the elements and ids of those rolled back,
/// the writes a power loss cut short, and the backups made (each with its call's start and
/// end).
#[derive(Default)]
struct Phase {
    txns: Vec<Txn>,
    failed: HashSet<u32>,
    maybe: Vec<Txn>,
    backups: Vec<(Instant, Instant, std::path::PathBuf)>,
}

/// Runs workers numbered `threads` beside one thread that checkpoints, flushes and (into
/// `backups_in`) backs the database up, for `HISTORY_SECS` (default 0.4 s); then calls
/// `power_loss`, if any, while they still run.
fn phase(
    db: &Arc<Database>,
    t: &Tree,
    reg: &Arc<Registry>,
    threads: std::ops::Range<usize>,
    how: How,
    backups_in: Option<&std::path::Path>,
    power_loss: Option<&dyn Fn()>,
) -> Phase {
    let secs: f64 = std::env::var("HISTORY_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(0.4);
    let flags = Arc::new(Flags::default());
    let workers: Vec<_> = threads
        .map(|th| {
            let (db, t, reg, flags) = (Arc::clone(db), t.clone(), Arc::clone(reg), Arc::clone(&flags));
            std::thread::spawn(move || worker(&db, &t, &reg, th, how, &flags))
        })
        .collect();
    let upkeep = {
        let (db, flags) = (Arc::clone(db), Arc::clone(&flags));
        let dir = backups_in.map(std::path::Path::to_owned);
        std::thread::spawn(move || {
            let mut backups = Vec::new();
            for round in 0.. {
                std::thread::sleep(Duration::from_millis(20));
                if flags.stop.load(Relaxed) {
                    break;
                }
                let result = match (round % 3, &dir) {
                    (0, _) => db.checkpoint(),
                    (2, Some(dir)) => {
                        let to = dir.join(format!("backup{round}.swz"));
                        let start = Instant::now();
                        match db.backup_to(&to) {
                            Ok(_) => {
                                backups.push((start, Instant::now(), to));
                                Ok(())
                            }
                            Err(e) if too_old(&e) => Ok(()),
                            Err(e) => Err(e),
                        }
                    }
                    _ => db.flush(),
                };
                if let Err(e) = result {
                    assert!(flags.down.load(Relaxed), "checkpoint, flush or backup: {e:?}");
                    break;
                }
            }
            backups
        })
    };
    std::thread::sleep(Duration::from_secs_f64(secs));
    if let Some(power_loss) = power_loss {
        flags.down.store(true, Relaxed);
        power_loss();
    }
    flags.stop.store(true, Relaxed);
    let mut phase =
        Phase { backups: upkeep.join().expect("checkpoints, flushes and backups"), ..Phase::default() };
    for w in workers {
        let done = w.join().expect("a worker panicked");
        phase.txns.extend(done.txns);
        phase.failed.extend(done.failed);
        phase.maybe.extend(done.maybe);
    }
    phase
}

/// Every key's list.
fn lists(t: &Tree) -> Vec<Vec<u32>> {
    (0..KEYS).map(|k| t.get(&key(k)).unwrap().map(|v| decode(&v)).unwrap_or_default()).collect()
}

/// Every id of the registry.
fn ids(t: &Tree) -> Vec<u32> {
    scan_ids(t.range(Unbounded, Unbounded).collect::<Result<Vec<_>, _>>().unwrap())
}

/// Makes the tree of lists with its fillers.
fn lists_tree(db: &Database) -> Tree {
    let t = db.create_tree("lists").unwrap();
    for gap in 0..KEYS {
        for j in (0..FILLERS).step_by(2) {
            t.upsert(&filler(gap, j), &[5; 100]).unwrap();
        }
    }
    t
}

/// Runs a phase of `threads` workers on a new database, then checks its history, its backups'
/// included.
fn run(c: Config, threads: usize) -> Result<String, String> {
    let Config { mode, logging, wait_die, version_memory, level } = c;
    let dir = tempfile::tempdir().unwrap();
    let frames = if mode == PoolMode::MainMemory { 4096 } else { 32 };
    let mut builder =
        Database::builder().page_size(4096).pool_bytes(frames * 4096).mode(mode).logging(logging);
    if wait_die {
        builder = builder.lab(|l| l.deadlock_policy(swizzledb::lock::DeadlockPolicy::WaitDie));
    }
    if let Some(bytes) = version_memory {
        builder = builder.version_memory(bytes);
    }
    let db = Arc::new(builder.create(dir.path().join("histories.swz")).unwrap());
    let t = lists_tree(&db);
    // Other records beside the lists, so that they span leaves the small pools evict.
    let other = db.create_tree("other").unwrap();
    for i in 0..300u32 {
        other.upsert(&i.to_be_bytes(), &[7; 100]).unwrap();
    }
    let reg = Arc::new(Registry { tree: db.create_tree("registry").unwrap(), next: FIRST_ID.into() });
    let Phase { mut txns, failed, backups, .. } =
        phase(&db, &t, &reg, 0..threads, How { logging, level }, Some(dir.path()), None);
    let locks = db.lock_stats().unwrap_or_default();
    let finals = lists(&t);
    let registered: BTreeSet<u32> = ids(&reg.tree).into_iter().collect();
    drop((t, other, reg));
    match Arc::try_unwrap(db) {
        Ok(db) => db.close().unwrap(),
        Err(_) => panic!("a handle outlived the workers"),
    }
    // A backup is what a read-only transaction begun at its call sees (R26).
    for (start, end, path) in &backups {
        let copy = Database::builder().page_size(4096).mode(mode).open(path).unwrap();
        let read = lists(&copy.tree("lists").unwrap());
        let mut ops: Vec<Op> =
            read.into_iter().enumerate().map(|(key, list)| Op::Read { key, list }).collect();
        ops.push(Op::Scan { lo: FIRST_ID, hi: u32::MAX, found: ids(&copy.tree("registry").unwrap()) });
        txns.push(Txn { thread: threads, kind: Kind::Backup, start: *start, end: *end, ops });
        copy.close().unwrap();
    }
    let context = format!("{c:?}");
    let appends: usize = finals.iter().map(Vec::len).sum();
    check(&txns, &failed, &finals, &registered, level).map_err(|e| format!("{context}: {e}"))?;
    assert!(appends > 0 && !txns.is_empty(), "{context}: no work done");
    Ok(format!(
        "{context}: {} transactions, {appends} appends, {} inserts, {} rolled back, {} backups; locks {locks:?}",
        txns.len(),
        registered.len(),
        failed.len(),
        backups.len()
    ))
}

/// Fails the test with the anomaly a run found; prints its counts with
/// `SWIZZLEDB_TEST_VERBOSE`.
fn passed(run: Result<String, String>) {
    let report = run.unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("SWIZZLEDB_TEST_VERBOSE").is_some() {
        println!("{report}");
    }
}

#[test]
fn k16_k18_list_append_histories_are_serializable_in_every_configuration() {
    let s = Level::Serializable;
    for c in [
        config(PoolMode::Swizzling, true, s),
        config(PoolMode::Traditional, true, s),
        config(PoolMode::MainMemory, true, s),
        config(PoolMode::Swizzling, false, s),
        Config { wait_die: true, ..config(PoolMode::Swizzling, true, s) },
        Config { version_memory: Some(16 << 10), ..config(PoolMode::Traditional, true, s) },
    ] {
        passed(run(c, 4));
    }
}

#[test]
fn k24_snapshot_isolation_histories_have_no_cycle_with_fewer_than_two_anti_dependencies() {
    let s = Level::Snapshot;
    for c in [
        config(PoolMode::Swizzling, true, s),
        config(PoolMode::Traditional, false, s),
        Config { version_memory: Some(16 << 10), ..config(PoolMode::MainMemory, true, s) },
    ] {
        passed(run(c, 4));
    }
}

/// The checker itself, on histories made by hand: each anomaly it looks for is found, and the
/// write skew snapshot isolation allows is found at serializable only.
#[test]
fn the_checker_finds_each_anomaly_it_looks_for() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let txn = |thread, from, to, ops: Vec<Op>| Txn {
        thread,
        kind: Kind::ReadWrite,
        start: at(from),
        end: at(to),
        ops,
    };
    let r = |key, list: &[u32]| Op::Read { key, list: list.to_vec() };
    let a = |key, elem| Op::Append { key, elem };
    let none = HashSet::new();
    let finals = |k0: &[u32], k1: &[u32]| {
        let mut f = vec![Vec::new(); KEYS];
        f[0] = k0.to_vec();
        f[1] = k1.to_vec();
        f
    };
    let no_ids = BTreeSet::new();
    let check = |history: &[Txn], failed: &HashSet<u32>, f: &[Vec<u32>], level: Level| {
        check(history, failed, f, &no_ids, level)
    };
    let expect =
        |what: &str, history: &[Txn], failed: &HashSet<u32>, f: &[Vec<u32>], level: Level| match check(
            history, failed, f, level,
        ) {
            Err(e) => assert!(e.contains(what), "expected {what}, got: {e}"),
            Ok(()) => panic!("{what} not found"),
        };
    // Two transactions in a row, in order: no anomaly at either level.
    let fine = [txn(0, 0, 1, vec![r(0, &[]), a(0, 1)]), txn(1, 2, 3, vec![r(0, &[1]), a(0, 2)])];
    for level in [Level::Serializable, Level::Snapshot] {
        assert_eq!(check(&fine, &none, &finals(&[1, 2], &[]), level), Ok(()));
    }
    // G1a: a read of a rolled-back element.
    let failed = HashSet::from([9]);
    expect("G1a", &[txn(0, 0, 1, vec![r(0, &[9])])], &failed, &finals(&[], &[]), Level::Snapshot);
    // G1b: a read between two appends of one transaction.
    let g1b = [txn(0, 0, 1, vec![a(0, 1), a(0, 2)]), txn(1, 0, 1, vec![r(0, &[1])])];
    expect("G1b", &g1b, &none, &finals(&[1, 2], &[]), Level::Snapshot);
    // A lost update: a committed append missing from the final list.
    let lost = [txn(0, 0, 1, vec![r(0, &[]), a(0, 1)]), txn(1, 0, 1, vec![r(0, &[]), a(0, 2)])];
    expect("lost update", &lost, &none, &finals(&[2], &[]), Level::Snapshot);
    // Both appended after reading the empty list: G-single at either level.
    expect("cycle", &lost, &none, &finals(&[1, 2], &[]), Level::Snapshot);
    // A stale read: a transaction begun after a commit returned does not see it.
    let stale = [txn(0, 0, 1, vec![a(0, 1)]), txn(1, 5, 6, vec![r(0, &[])])];
    expect("RT", &stale, &none, &finals(&[1], &[]), Level::Snapshot);
    // Write skew: each reads the key the other appends to. Snapshot isolation allows it.
    let skew = [txn(0, 0, 2, vec![r(1, &[]), a(0, 1)]), txn(1, 0, 2, vec![r(0, &[]), a(1, 2)])];
    expect("Serializable", &skew, &none, &finals(&[1], &[2]), Level::Serializable);
    assert_eq!(check(&skew, &none, &finals(&[1], &[2]), Level::Snapshot), Ok(()));
    // Read skew (G-single): one reads k0 before and k1 after another appended to both.
    let read_skew = [txn(0, 0, 2, vec![a(0, 1), a(1, 2)]), txn(1, 0, 2, vec![r(0, &[]), r(1, &[2])])];
    expect("Snapshot", &read_skew, &none, &finals(&[1], &[2]), Level::Snapshot);
    // The registry: a phantom (a scan begun after an insert returned misses it), a rolled-back
    // insert seen, a lost insert, and an insert and a scan that each miss the other's write
    // (write skew through a predicate).
    let (x, y) = (FIRST_ID + 5, FIRST_ID + 6);
    let ids = |set: &[u32]| set.iter().copied().collect::<BTreeSet<u32>>();
    let scan = |found: &[u32]| Op::Scan { lo: FIRST_ID, hi: FIRST_ID + 10, found: found.to_vec() };
    let empty = finals(&[], &[]);
    let phantom = [txn(0, 0, 1, vec![Op::Register { id: x }]), txn(1, 5, 6, vec![scan(&[])])];
    let found = |level| self::check(&phantom, &none, &empty, &ids(&[x]), level).unwrap_err();
    assert!(found(Level::Serializable).contains("RT") && found(Level::Snapshot).contains("RT"));
    let seen_rolled_back = [txn(0, 0, 1, vec![scan(&[x])])];
    let e =
        self::check(&seen_rolled_back, &HashSet::from([x]), &empty, &no_ids, Level::Snapshot).unwrap_err();
    assert!(e.contains("G1a"), "{e}");
    let e = self::check(&phantom[..1], &none, &empty, &no_ids, Level::Snapshot).unwrap_err();
    assert!(e.contains("lost insert"), "{e}");
    let predicate_skew = [
        txn(0, 0, 2, vec![scan(&[]), Op::Register { id: x }]),
        txn(1, 0, 2, vec![scan(&[]), Op::Register { id: y }]),
    ];
    let e = self::check(&predicate_skew, &none, &empty, &ids(&[x, y]), Level::Serializable).unwrap_err();
    assert!(e.contains("RW"), "{e}");
    assert_eq!(self::check(&predicate_skew, &none, &empty, &ids(&[x, y]), Level::Snapshot), Ok(()));
}

const SERIALIZABLE_LOGGED: How = How { logging: true, level: Level::Serializable };

/// Histories across a power loss (RECOVERY.md R10, R22), with synchronous commits: a phase of
/// workers, then three transactions left open (each has appended and inserted), then the power
/// loss and a restart, classical or instant. What the restart recovered must hold every commit
/// that returned and nothing of the open transactions, and the first phase with it must be
/// serializable; then a second phase of workers runs at once — beside instant restart's
/// redo and rollback in the background — from the recovered state, and must be serializable
/// too; after a clean close the file holds its final state.
/// Builder settings beyond the pool mode, restart and commit modes, with a name.
type Settings = (&'static str, fn(swizzledb::Builder) -> swizzledb::Builder);

/// The builder's defaults.
const DEFAULTS: Settings = ("defaults", |b| b);

/// The log archive with Lersch's decoupled cleaner and checkpoints, and write elision.
const DECOUPLED: Settings = ("decoupled cleaner and checkpoints, write elision", |b| {
    b.log_archive(true).lab(|l| {
        l.cleaner(swizzledb::Cleaner::Decoupled)
            .checkpoint_kind(swizzledb::CheckpointKind::Decoupled)
            .write_elision(true)
            .cleaner_interval(Some(Duration::from_millis(10)))
    })
});

/// A log of eight 64 KiB segments, kept within its bound by the cleaner.
const SMALL_LOG: Settings = ("a 512 KiB log", |b| {
    b.log_segment_bytes(64 << 10)
        .max_log_bytes(512 << 10)
        .lab(|l| l.cleaner_interval(Some(Duration::from_millis(10))))
});

fn run_across_crash(
    mode: PoolMode,
    restart: swizzledb::RestartMode,
    commit: swizzledb::CommitMode,
    settings: Settings,
    threads: usize,
) -> Result<String, String> {
    use swizzledb_io::{CrashMode, FaultFs, Vfs};
    let fs = FaultFs::new();
    fs.create_dir_all(std::path::Path::new("/h")).unwrap();
    let path = std::path::Path::new("/h/histories.swz");
    let frames = if mode == PoolMode::MainMemory { 4096 } else { 32 };
    let builder = || {
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let b = Database::builder()
            .page_size(4096)
            .pool_bytes(frames * 4096)
            .mode(mode)
            .log_archive(restart == swizzledb::RestartMode::Instant)
            .restart_mode(restart)
            .commit_mode(commit)
            .lab(|l| l.vfs(vfs));
        (settings.1)(b)
    };
    let context = format!("{mode:?}, {restart:?} restart, {commit:?} commits, {}", settings.0);
    let db = Arc::new(builder().create(path).unwrap());
    let t = lists_tree(&db);
    let reg = Arc::new(Registry { tree: db.create_tree("registry").unwrap(), next: FIRST_ID.into() });
    // The power goes while the workers run, with three more transactions open that have
    // appended and inserted (unless a deadlock chose them as victims).
    let loser_writes = std::sync::Mutex::new(Vec::new());
    let power_loss = || {
        let mut losers = Vec::new();
        for i in 0..3u32 {
            let (k, elem, id) = (i as usize, (0xE0 + i) << 24, reg.next.fetch_add(1, Relaxed));
            loser_writes.lock().unwrap().extend([elem, id]);
            let mut tx = db.begin();
            let wrote = tx.get(&t, &key(k)).and_then(|old| {
                tx.put(&t, &key(k), &appended(&old.unwrap_or_default(), elem))?;
                tx.insert(&reg.tree, &id.to_be_bytes(), b"")
            });
            match wrote {
                Ok(()) => losers.push(tx),
                Err(Error::Lock(_)) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        fs.power_off(CrashMode::DropUnsynced);
        drop(losers);
    };
    let Phase { mut txns, mut failed, maybe, .. } =
        phase(&db, &t, &reg, 0..threads, SERIALIZABLE_LOGGED, None, Some(&power_loss));
    failed.extend(loser_writes.into_inner().unwrap());
    let next_id = reg.next.load(Relaxed);
    drop((t, reg));
    match Arc::try_unwrap(db) {
        Ok(db) => drop(db),
        Err(_) => panic!("a handle outlived the workers"),
    }
    fs.power_on();
    let opened = Instant::now();
    let db = Arc::new(builder().open(path).map_err(|e| format!("{context}: restart: {e}"))?);
    let t = db.tree("lists").unwrap();
    let reg = Arc::new(Registry { tree: db.tree("registry").unwrap(), next: next_id.into() });
    let recovered = lists(&t);
    let recovered_ids: BTreeSet<u32> = ids(&reg.tree).into_iter().collect();
    // A write cut short committed wholly or not at all.
    let present: HashSet<u32> = recovered.iter().flatten().chain(&recovered_ids).copied().collect();
    let cut_short = maybe.len();
    // With asynchronous commits a commit that returned may be lost too, but only with every
    // later one: the log keeps a prefix.
    // A write cut short never returned: it precedes nothing in real time.
    let never = Instant::now() + Duration::from_secs(3600);
    let mut maybe: Vec<Txn> = maybe.into_iter().map(|m| Txn { end: never, ..m }).collect();
    if commit == swizzledb::CommitMode::Async {
        let (writes, reads): (Vec<Txn>, Vec<Txn>) =
            txns.drain(..).partition(|t| written(&t.ops).next().is_some());
        maybe.extend(writes);
        txns = reads;
    }
    let mut lost_writes = HashSet::new();
    let mut first_lost: Option<Instant> = None;
    let mut lost_txns = 0;
    let mut kept_writers = Vec::new();
    for m in maybe {
        let (kept, lost): (Vec<u32>, Vec<u32>) = written(&m.ops).partition(|e| present.contains(e));
        match (kept.is_empty(), lost.is_empty()) {
            (true, _) => {
                lost_txns += 1;
                lost_writes.extend(lost);
                first_lost = Some(first_lost.map_or(m.end, |f| f.min(m.end)));
            }
            (false, true) => {
                kept_writers.push(m.start);
                txns.push(m);
            }
            (false, false) => {
                return Err(format!("{context}: a transaction cut short kept {kept:x?} and lost {lost:x?}"))
            }
        }
    }
    if let Some(lost) = first_lost {
        if kept_writers.iter().any(|&start| start > lost) {
            return Err(format!("{context}: a commit begun after a lost one returned survived"));
        }
    }
    // A commit is seen once its record is appended (K18), before it is durable: a transaction
    // that wrote nothing, and so waited for no flush, may have seen one that the power loss
    // took. One that wrote waited for its own commit record, after the other's.
    let saw_lost = |t: &Txn| {
        t.ops.iter().any(|op| match op {
            Op::Read { list, .. } => list.iter().any(|e| lost_writes.contains(e)),
            Op::Scan { found, .. } => found.iter().any(|e| lost_writes.contains(e)),
            Op::Append { .. } | Op::Register { .. } => false,
        })
    };
    txns.retain(|t| written(&t.ops).next().is_some() || !saw_lost(t));
    failed.extend(&lost_writes);
    check(&txns, &failed, &recovered, &recovered_ids, Level::Serializable)
        .map_err(|e| format!("{context}, before the power loss: {e}"))?;
    let first = txns.len();
    let mut ops: Vec<Op> = recovered
        .iter()
        .enumerate()
        .flat_map(|(key, list)| list.iter().map(move |&elem| Op::Append { key, elem }))
        .collect();
    ops.extend(recovered_ids.iter().map(|&id| Op::Register { id }));
    let opened = Txn { thread: 2 * threads, kind: Kind::Recovered, start: opened, end: Instant::now(), ops };
    let second = phase(&db, &t, &reg, threads..2 * threads, SERIALIZABLE_LOGGED, None, None);
    failed.extend(second.failed);
    txns = std::iter::once(opened).chain(second.txns).collect();
    let finals = lists(&t);
    let registered: BTreeSet<u32> = ids(&reg.tree).into_iter().collect();
    check(&txns, &failed, &finals, &registered, Level::Serializable)
        .map_err(|e| format!("{context}, after the restart: {e}"))?;
    drop((t, reg));
    match Arc::try_unwrap(db) {
        Ok(db) => db.close().unwrap(),
        Err(_) => panic!("a handle outlived the workers"),
    }
    let db = builder().open(path).unwrap();
    assert_eq!(lists(&db.tree("lists").unwrap()), finals, "{context}: the lists after a clean close");
    let kept: BTreeSet<u32> = ids(&db.tree("registry").unwrap()).into_iter().collect();
    assert_eq!(kept, registered, "{context}: the registry after a clean close");
    db.close().unwrap();
    Ok(format!(
        "{context}: {first} transactions before the power loss ({cut_short} cut short by it, {lost_txns} writes \
         lost), {} after",
        txns.len() - 1
    ))
}

#[test]
fn r10_r22_histories_across_a_power_loss_are_serializable_and_lose_no_commit() {
    use swizzledb::CommitMode::{Async, Sync};
    use swizzledb::RestartMode::{Classical, Instant};
    for (mode, restart, commit, settings) in [
        (PoolMode::Swizzling, Classical, Sync, DEFAULTS),
        (PoolMode::Traditional, Instant, Sync, DEFAULTS),
        (PoolMode::MainMemory, Instant, Sync, DEFAULTS),
        (PoolMode::Swizzling, Instant, Async, DEFAULTS),
        (PoolMode::Traditional, Classical, Sync, DECOUPLED),
        (PoolMode::Swizzling, Classical, Sync, SMALL_LOG),
    ] {
        passed(run_across_crash(mode, restart, commit, settings, 4));
    }
}
