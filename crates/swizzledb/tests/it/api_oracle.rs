//! Random sequences of every public operation, checked against a `BTreeMap` oracle, in every
//! configuration a user can pick: three buffer modes × logged or not × record locks on or off ×
//! 4, 8, 16 and 32 KiB pages × a pool of 48 pages (constant eviction) or a large one — 96 in all.
//!
//! The keys and values sit at the edges: the empty key, keys of `0xff` bytes, keys of the
//! largest length that differ only in their last bytes, values of the largest inline length and
//! one byte more, large values up to the tree's limit. The operations: the map calls, scans
//! with every kind of bound read from both ends at once, prefix scans, compare-and-swap,
//! transactions (serializable and snapshot) that commit, roll back or are dropped, a `transact`
//! whose closure fails, snapshots and read-committed readers across commits, a scan held
//! open across writes, the typed wrapper, a second tree created and dropped, bulk inserts and
//! deletes, close or drop and reopen, and a reopen in another buffer mode. After each reopen,
//! and at random, the whole tree is compared with the oracle from both ends and verified. This
//! test found btree T29's split that lost records next to keys of the largest length.
//!
//! A second test runs the same operations with one more setting each ([`Extra`]: every
//! replacement policy and wrapper, the smallest pool, asynchronous commits, sleeping commit
//! waits, the log archive, instant restart, checkpoints every millisecond or never, the
//! smallest log segments and log bound, a tiny version memory, `keep_log_on_close`, wait-die,
//! and the lab's decoupled cleaner, decoupled checkpoints, one-victim eviction, optimistic leaf
//! reads, a spilling archive and on-demand instant redo) over a few of the configurations
//! above, with three more steps: a backup opened with the run's settings, a compaction, and a
//! power loss followed by a restart that must keep every commit that returned.
//!
//! Each run's file lives on an in-memory file system, which a read-only open reads through a
//! view that cannot write (RECOVERY.md R27); `read_only.rs` and `adv_api.rs` check read-only
//! opens further. `SWIZZLEDB_API_ORACLE_SEEDS=n` runs n
//! seeds per configuration (default 1) and `SWIZZLEDB_API_ORACLE_STEPS=n` n operations per run
//! (default 200).

use std::collections::btree_map::{BTreeMap, Entry};
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::path::PathBuf;
use std::sync::Arc;

use swizzledb::typed::{Bytes, TypedTree};
use swizzledb::{Builder, Database, Error, PoolMode, Tree, TreeError};
use swizzledb_io::{CrashMode, FaultFs, MemFs, Vfs};

use crate::common::XorShift;

pub(crate) type Map = BTreeMap<Vec<u8>, Vec<u8>>;
pub(crate) type Record = (Vec<u8>, Vec<u8>);

#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(crate) mode: PoolMode,
    pub(crate) logged: bool,
    pub(crate) locking: bool,
    pub(crate) page: usize,
    pub(crate) small_pool: bool,
    /// One setting beside the defaults ([`Extra`]; `Extra::None` in [`Config::all`]).
    pub(crate) extra: Extra,
}

/// One more setting a user can pick, beside the five dimensions of [`Config::all`]: each is
/// run over a few of those (`every_operation_with_each_setting_matches_a_btreemap`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Extra {
    None,
    /// A replacement policy, by its spelling (`PolicySpec`'s `FromStr`).
    Policy(&'static str),
    /// The smallest pool the builder accepts (16 frames; not in main-memory mode, where the
    /// pool is the memory limit).
    MinPool,
    AsyncCommit,
    SleepWait,
    LogArchive,
    /// Instant restart, with the log archive it needs.
    Instant,
    /// A checkpoint every millisecond.
    TinyCheckpoints,
    NoCheckpoints,
    /// Log segments of the fewest pages allowed, and a log bound of four of them.
    SmallLog,
    /// A version memory of this many bytes (snapshots may end: `SnapshotTooOld`).
    VersionMemory(usize),
    KeepLogOnClose,
    WaitDie,
    /// Lab: Lersch's decoupled cleaner with write elision (and the archive they need).
    DecoupledCleaner,
    /// Lab: decoupled checkpoints.
    DecoupledCheckpoints,
    /// Lab: one victim per eviction, no background evictor.
    EvictOne,
    /// Lab: optimistic leaf reads.
    OptimisticLeafReads,
    /// Lab: an archive that spills every entry, archived only at checkpoints.
    ArchiveSpill,
    /// Lab: instant restart without background redo.
    InstantOnDemand,
}

impl Extra {
    pub(crate) fn all() -> Vec<Extra> {
        let mut all: Vec<Extra> = [
            "random",
            "fifo",
            "clock",
            "lru",
            "sieve",
            "gclock-sweep",
            "arc",
            "car",
            "s3-fifo",
            "mru",
            "lru-k:2",
            "2q",
            "hot-cold",
            "mq",
            "lirs",
            "clock-pro",
            "leaf-lru",
            "bpw-2q",
            "leaf-gclock:4",
            "locked-lru",
        ]
        .into_iter()
        .map(Extra::Policy)
        .collect();
        all.extend([
            Extra::MinPool,
            Extra::AsyncCommit,
            Extra::SleepWait,
            Extra::LogArchive,
            Extra::Instant,
            Extra::TinyCheckpoints,
            Extra::NoCheckpoints,
            Extra::SmallLog,
            Extra::VersionMemory(4096),
            Extra::KeepLogOnClose,
            Extra::WaitDie,
            Extra::DecoupledCleaner,
            Extra::DecoupledCheckpoints,
            Extra::EvictOne,
            Extra::OptimisticLeafReads,
            Extra::ArchiveSpill,
            Extra::InstantOnDemand,
        ]);
        all
    }

    fn apply(self, b: Builder, page: usize) -> Builder {
        use std::time::Duration;
        match self {
            Extra::None | Extra::MinPool => b,
            Extra::Policy(name) => {
                b.policy(name.parse::<swizzledb::PolicySpec>().unwrap_or_else(|e| panic!("{name}: {e}")))
            }
            Extra::AsyncCommit => b.commit_mode(swizzledb::CommitMode::Async),
            Extra::SleepWait => b.commit_wait(swizzledb::CommitWait::Sleep),
            Extra::LogArchive => b.log_archive(true),
            Extra::Instant => b.log_archive(true).restart_mode(swizzledb::RestartMode::Instant),
            Extra::TinyCheckpoints => b.checkpoint_interval(Some(Duration::from_millis(1))),
            Extra::NoCheckpoints => b.checkpoint_interval(None),
            Extra::SmallLog => {
                let segment = swizzledb::MIN_SEGMENT_PAGES * page as u64;
                b.log_segment_bytes(segment).max_log_bytes(4 * segment)
            }
            Extra::VersionMemory(bytes) => b.version_memory(bytes),
            Extra::KeepLogOnClose => b.keep_log_on_close(true),
            Extra::WaitDie => b.lab(|l| l.deadlock_policy(swizzledb::lock::DeadlockPolicy::WaitDie)),
            Extra::DecoupledCleaner => {
                b.log_archive(true).lab(|l| l.cleaner(swizzledb::Cleaner::Decoupled).write_elision(true))
            }
            Extra::DecoupledCheckpoints => b.lab(|l| l.checkpoint_kind(swizzledb::CheckpointKind::Decoupled)),
            Extra::EvictOne => b.lab(|l| l.eviction_batch(Some(1)).background_eviction(false)),
            Extra::OptimisticLeafReads => b.lab(|l| l.optimistic_leaf_reads(true)),
            Extra::ArchiveSpill => b.log_archive(true).lab(|l| l.archive_memory(0).archive_interval(None)),
            Extra::InstantOnDemand => b
                .log_archive(true)
                .restart_mode(swizzledb::RestartMode::Instant)
                .lab(|l| l.background_redo(false)),
        }
    }

    /// Whether every commit is durable when it returns, so that a crash loses none.
    fn durable_commits(self) -> bool {
        self != Extra::AsyncCommit
    }

    /// Whether a snapshot may end before it is done (K20).
    fn snapshots_may_end(self) -> bool {
        matches!(self, Extra::VersionMemory(_))
    }
}

impl Config {
    pub(crate) fn all() -> Vec<Config> {
        let mut all = Vec::new();
        for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
            for (logged, locking) in [(true, true), (true, false), (false, true), (false, false)] {
                for page in [4096, 8192, 16384, 32768] {
                    for small_pool in [true, false] {
                        all.push(Config { mode, logged, locking, page, small_pool, extra: Extra::None });
                    }
                }
            }
        }
        all
    }

    pub(crate) fn pool_bytes(&self) -> usize {
        match (self.mode, self.small_pool) {
            (PoolMode::Swizzling | PoolMode::Traditional, _) if self.extra == Extra::MinPool => {
                16 * self.page
            }
            (PoolMode::MainMemory, true) => 16 << 20,
            (PoolMode::MainMemory, false) => 128 << 20,
            (_, true) => 48 * self.page,
            (_, false) => 2048 * self.page,
        }
    }

    pub(crate) fn builder(&self, fs: &Arc<dyn Vfs>) -> Builder {
        let (locking, fs) = (self.locking, Arc::clone(fs));
        let b = Database::builder()
            .mode(self.mode)
            .page_size(self.page)
            .pool_bytes(self.pool_bytes())
            .logging(self.logged)
            .lab(move |l| l.locking(locking).vfs(fs));
        self.extra.apply(b, self.page)
    }

    /// Whether plain reads see only committed records (LOCKS.md K18): on a logged database
    /// with record locks; otherwise they see a running transaction's changes.
    pub(crate) fn committed_reads(&self) -> bool {
        self.logged && self.locking
    }

    /// Whether a snapshot keeps the state it began with (versions exist with record locks,
    /// K17); without them it reads the tree as it is.
    pub(crate) fn versions(&self) -> bool {
        self.locking
    }
}

/// Keys, values, bounds and prefixes at the edges of what a page of `page` bytes takes.
struct Gen {
    rng: XorShift,
    page: usize,
    max_value: usize,
}

impl Gen {
    /// A number below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.rng.next() % n
    }

    fn pattern(&mut self) -> u64 {
        self.rng.next()
    }

    fn key(&mut self) -> Vec<u8> {
        let longest = swizzledb::max_key_len(self.page);
        match self.below(20) {
            0 => vec![],
            1 => vec![0xff],
            2 => vec![0xff, 0xff],
            3 => vec![0xff; longest],
            4 => vec![0x00; longest],
            5 => {
                // Keys of the largest length that differ only near their ends.
                let mut k = vec![b'a'; longest];
                k[longest - 1] = self.below(3) as u8;
                if self.below(2) == 0 {
                    k[longest - 2] = self.below(256) as u8;
                    k[3] = self.below(4) as u8;
                }
                k
            }
            _ => {
                let len = 1 + self.below(4) as usize;
                (0..len).map(|_| [0x00, 0x01, b'a', b'b', 0xfe, 0xff][self.below(6) as usize]).collect()
            }
        }
    }

    fn value(&mut self) -> Vec<u8> {
        let inline = swizzledb::max_inline_value_len(self.page);
        let len = match self.below(24) {
            0 => 0,
            1 => inline,
            2 => inline + 1,
            3 => inline - 1,
            4 | 5 => inline + 1 + self.below((3 * self.page) as u64) as usize,
            6 => self
                .max_value
                .min(inline + 1 + self.below(self.max_value.min(16 * self.page) as u64) as usize),
            7 if self.below(8) == 0 => self.max_value,
            _ => self.below(40) as usize,
        }
        .min(self.max_value);
        let seed = self.below(251) as u8;
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    fn bound(&mut self) -> Bound<Vec<u8>> {
        match self.below(3) {
            0 => Unbounded,
            1 => Included(self.key()),
            _ => Excluded(self.key()),
        }
    }

    fn prefix(&mut self) -> Vec<u8> {
        match self.below(6) {
            0 => vec![],
            1 => vec![0xff],
            2 => vec![0xff, 0xff],
            3 => vec![b'a'],
            _ => {
                let k = self.key();
                let len = self.below(k.len() as u64 + 1) as usize;
                k[..len].to_vec()
            }
        }
    }
}

pub(crate) fn in_range(map: &Map, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> Vec<Record> {
    let after_start = |k: &Vec<u8>| match start {
        Unbounded => true,
        Included(b) => k >= b,
        Excluded(b) => k > b,
    };
    let before_end = |k: &Vec<u8>| match end {
        Unbounded => true,
        Included(b) => k <= b,
        Excluded(b) => k < b,
    };
    map.iter().filter(|(k, _)| after_start(k) && before_end(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(crate) fn with_prefix(map: &Map, prefix: &[u8]) -> Vec<Record> {
    map.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(crate) fn all_of(map: &Map) -> Vec<Record> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(crate) fn borrowed(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// Records as a failure message shows them: each key's first bytes and the value's length.
pub(crate) fn brief(records: &[Record]) -> Vec<(String, usize)> {
    records.iter().map(|(k, v)| (format!("{:02x?}", &k[..k.len().min(6)]), v.len())).collect()
}

/// Reads `scan` from both ends, the end of each step chosen by the bits of `pattern`; returns
/// the items in the scan's order.
pub(crate) fn from_both_ends<T, E: std::fmt::Debug>(
    mut scan: impl DoubleEndedIterator<Item = Result<T, E>>,
    mut pattern: u64,
    ctx: &str,
) -> Vec<T> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let from_back = pattern & 1 == 1;
        pattern = pattern.rotate_right(1);
        let item = if from_back { scan.next_back() } else { scan.next() };
        let Some(item) = item else { break };
        let item = item.unwrap_or_else(|e| panic!("{ctx}: a scan's item: {e:?}"));
        if from_back {
            back.push(item);
        } else {
            front.push(item);
        }
    }
    front.extend(back.into_iter().rev());
    front
}

pub(crate) fn assert_same(got: &[Record], want: &[Record], what: &str) {
    assert!(got == want, "{what}\n got {:?}\nwant {:?}", brief(got), brief(want));
}

/// The whole tree against the oracle: both directions, the map calls, and the verifier.
pub(crate) fn check_all(tree: &Tree, map: &Map, ctx: &str) {
    let want = all_of(map);
    let got: Vec<Record> = tree.range(Unbounded, Unbounded).map(Result::unwrap).collect();
    assert_same(&got, &want, &format!("{ctx}: the contents"));
    let mut got: Vec<Record> = tree.range_rev(Unbounded, Unbounded).map(Result::unwrap).collect();
    got.reverse();
    assert_same(&got, &want, &format!("{ctx}: the contents read backwards"));
    assert_eq!(tree.len().unwrap(), map.len(), "{ctx}: len");
    assert_eq!(tree.is_empty().unwrap(), map.is_empty(), "{ctx}: is_empty");
    assert_eq!(tree.first().unwrap(), want.first().cloned(), "{ctx}: first");
    assert_eq!(tree.last().unwrap(), want.last().cloned(), "{ctx}: last");
    tree.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
}

fn upsert(tree: &Tree, map: &mut Map, key: Vec<u8>, value: Vec<u8>, ctx: &str) {
    let existed = tree.upsert(&key, &value).unwrap_or_else(|e| {
        let bytes: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
        panic!(
            "{ctx}: upsert of {} bytes: {e}; the oracle holds {} records, {bytes} bytes",
            value.len(),
            map.len()
        )
    });
    assert_eq!(existed, map.insert(key, value).is_some(), "{ctx}: upsert found the key");
}

/// The oracle of the run's tree `t`, the configuration, and the generator: what the
/// operations below need beside the open database.
struct Oracle {
    cfg: Config,
    map: Map,
    g: Gen,
}

impl Oracle {
    fn upsert(&mut self, o: &Open, ctx: &str) {
        let (k, v) = (self.g.key(), self.g.value());
        upsert(&o.tree, &mut self.map, k, v, ctx);
    }

    fn delete(&mut self, o: &Open, ctx: &str) {
        let k = self.g.key();
        assert_eq!(o.tree.delete(&k).unwrap(), self.map.remove(&k).is_some(), "{ctx}: delete");
    }

    fn get(&mut self, o: &Open, ctx: &str) {
        let k = self.g.key();
        assert_eq!(o.tree.get(&k).unwrap(), self.map.get(&k).cloned(), "{ctx}: get");
        let len = o.tree.get_with(&k, |v| v.map(<[u8]>::len)).unwrap();
        assert_eq!(len, self.map.get(&k).map(Vec::len), "{ctx}: get_with");
    }

    fn insert(&mut self, o: &Open, ctx: &str) {
        let (k, v) = (self.g.key(), self.g.value());
        let r = o.tree.insert(&k, &v);
        match self.map.entry(k) {
            Entry::Occupied(_) => {
                assert!(matches!(r, Err(TreeError::DuplicateKey)), "{ctx}: insert of a present key: {r:?}");
            }
            Entry::Vacant(place) => {
                r.unwrap_or_else(|e| panic!("{ctx}: insert: {e}"));
                place.insert(v);
            }
        }
    }

    fn compare_and_swap(&mut self, o: &Open, ctx: &str) {
        let k = self.g.key();
        let current = self.map.get(&k).cloned();
        let expected = match self.g.below(3) {
            0 => current.clone(),
            1 => None,
            _ => Some(self.g.value()),
        };
        let new = if self.g.below(3) == 0 { None } else { Some(self.g.value()) };
        let r = o.tree.compare_and_swap(&k, expected.as_deref(), new.as_deref()).unwrap();
        if expected == current {
            assert!(r.is_ok(), "{ctx}: a swap from the current value was refused");
            match new {
                Some(v) => self.map.insert(k, v),
                None => self.map.remove(&k),
            };
        } else {
            assert_eq!(
                r.expect_err("a swap from another value").current,
                current,
                "{ctx}: the swap's current"
            );
        }
    }

    fn range(&mut self, o: &Open, ctx: &str) {
        let (start, end) = (self.g.bound(), self.g.bound());
        let want = in_range(&self.map, &start, &end);
        let pattern = self.g.pattern();
        let what = format!("{ctx}: range {start:?}..{end:?}");
        let got = from_both_ends(o.tree.range(borrowed(&start), borrowed(&end)), pattern, ctx);
        assert_same(&got, &want, &what);
        let mut got = from_both_ends(o.tree.range_rev(borrowed(&start), borrowed(&end)), pattern, ctx);
        got.reverse();
        assert_same(&got, &want, &format!("{what} backwards"));
        let n = self.g.below(4) as usize;
        let got: Vec<Record> =
            o.tree.range(borrowed(&start), borrowed(&end)).limit(n).map(Result::unwrap).collect();
        assert_same(&got, &want[..n.min(want.len())], &format!("{what} limited to {n}"));
    }

    fn prefix_scan(&mut self, o: &Open, ctx: &str) {
        let prefix = self.g.prefix();
        let want = with_prefix(&self.map, &prefix);
        let what = format!("{ctx}: prefix {prefix:02x?}");
        let got = from_both_ends(o.tree.scan_prefix(&prefix), self.g.pattern(), ctx);
        assert_same(&got, &want, &what);
        let mut got = from_both_ends(o.tree.scan_prefix_rev(&prefix), self.g.pattern(), ctx);
        got.reverse();
        assert_same(&got, &want, &format!("{what} backwards"));
    }

    /// A key or value one byte too long: a typed refusal, and nothing changes.
    fn oversize(&mut self, o: &Open, ctx: &str) {
        let tree = &o.tree;
        let long_key = vec![b'a'; swizzledb::max_key_len(self.cfg.page) + 1];
        assert!(matches!(tree.upsert(&long_key, b"x"), Err(TreeError::KeyTooLarge { .. })), "{ctx}");
        let long_value = vec![7; tree.max_value_len() + 1];
        let k = self.g.key();
        assert!(matches!(tree.upsert(&k, &long_value), Err(TreeError::ValueTooLarge { .. })), "{ctx}");
        assert!(matches!(tree.insert(&k, &long_value), Err(TreeError::ValueTooLarge { .. })), "{ctx}");
        let current = self.map.get(&k).cloned();
        let r = tree.compare_and_swap(&k, current.as_deref(), Some(&long_value));
        assert!(matches!(r, Err(TreeError::ValueTooLarge { .. })), "{ctx}: {r:?}");
        assert!(matches!(tree.get(&long_key), Ok(None)), "{ctx}");
        assert_eq!(tree.get(&k).unwrap(), current, "{ctx}: a refused write changed the value");
    }

    /// A transaction of a few operations (serializable, or snapshot isolation), checked against
    /// its own copy of the oracle, that commits, rolls back or is dropped.
    fn transaction(&mut self, o: &Open, ctx: &str) {
        let Oracle { cfg, map, g } = self;
        let Open { db, tree } = o;
        let mut t = if g.below(3) == 0 { db.begin_snapshot() } else { db.begin() };
        let mut mine = map.clone();
        for i in 0..1 + g.below(8) {
            let ctx = format!("{ctx}, the transaction's operation {i}");
            match g.below(10) {
                0 | 1 => {
                    let (k, v) = (g.key(), g.value());
                    let existed = t.put(tree, &k, &v).unwrap_or_else(|e| panic!("{ctx}: put: {e}"));
                    assert_eq!(existed, mine.insert(k, v).is_some(), "{ctx}: put found the key");
                }
                2 => {
                    let (k, v) = (g.key(), g.value());
                    let r = t.insert(tree, &k, &v);
                    match mine.entry(k) {
                        Entry::Occupied(_) => {
                            assert!(matches!(r, Err(Error::Tree(TreeError::DuplicateKey))), "{ctx}: {r:?}");
                        }
                        Entry::Vacant(place) => {
                            r.unwrap_or_else(|e| panic!("{ctx}: insert: {e}"));
                            place.insert(v);
                        }
                    }
                }
                3 => {
                    let k = g.key();
                    assert_eq!(t.delete(tree, &k).unwrap(), mine.remove(&k).is_some(), "{ctx}: delete");
                }
                4 => {
                    let k = g.key();
                    let current = mine.get(&k).cloned();
                    let expected = if g.below(2) == 0 { current.clone() } else { Some(g.value()) };
                    let new = if g.below(3) == 0 { None } else { Some(g.value()) };
                    let r = t.compare_and_swap(tree, &k, expected.as_deref(), new.as_deref()).unwrap();
                    if expected == current {
                        assert!(r.is_ok(), "{ctx}: a swap from the current value was refused");
                        match new {
                            Some(v) => mine.insert(k, v),
                            None => mine.remove(&k),
                        };
                    } else {
                        assert_eq!(r.unwrap_err().current, current, "{ctx}: the swap's current");
                    }
                }
                5 => {
                    let (k, v) = (g.key(), g.value());
                    let current = mine.get(&k).cloned();
                    let old_len = t
                        .update_with(tree, &k, |old, out| {
                            out.extend_from_slice(&v);
                            old.len()
                        })
                        .unwrap();
                    assert_eq!(old_len, current.as_ref().map(Vec::len), "{ctx}: update_with");
                    if current.is_some() {
                        mine.insert(k, v);
                    }
                }
                6 => {
                    let k = g.key();
                    assert_eq!(t.get(tree, &k).unwrap(), mine.get(&k).cloned(), "{ctx}: get");
                    let len = t.get_with(tree, &k, |v| v.map(<[u8]>::len)).unwrap();
                    assert_eq!(len, mine.get(&k).map(Vec::len), "{ctx}: get_with");
                }
                7 | 8 => {
                    let (start, end) = (g.bound(), g.bound());
                    let want = in_range(&mine, &start, &end);
                    let what = format!("{ctx}: range {start:?}..{end:?}");
                    let got =
                        from_both_ends(t.range(tree, borrowed(&start), borrowed(&end)), g.pattern(), &ctx);
                    assert_same(&got, &want, &what);
                    let mut got = from_both_ends(
                        t.range_rev(tree, borrowed(&start), borrowed(&end)),
                        g.pattern(),
                        &ctx,
                    );
                    got.reverse();
                    assert_same(&got, &want, &format!("{what} backwards"));
                }
                _ => {
                    // A plain read beside the open transaction.
                    let k = g.key();
                    let want = if cfg.committed_reads() { map.get(&k) } else { mine.get(&k) };
                    assert_eq!(
                        tree.get(&k).unwrap().as_ref(),
                        want,
                        "{ctx}: a plain get beside the transaction"
                    );
                }
            }
        }
        match g.below(3) {
            0 => {
                t.commit().unwrap_or_else(|e| panic!("{ctx}: commit: {e}"));
                *map = mine;
            }
            1 => t.abort().unwrap(),
            _ => drop(t),
        }
        if g.below(3) == 0 {
            check_all(tree, map, &format!("{ctx}, after the transaction"));
        }
    }

    /// `transact` whose closure fails: nothing of it stays.
    fn failed_transact(&mut self, o: &Open, ctx: &str) {
        let (k, v, other) = (self.g.key(), self.g.value(), self.g.key());
        let tree = &o.tree;
        let r: Result<(), Error> = o.db.transact(|t| {
            t.put(tree, &k, &v)?;
            t.delete(tree, &other)?;
            Err(Error::NotFound(PathBuf::from("the closure's own error")))
        });
        assert!(matches!(r, Err(Error::NotFound(_))), "{ctx}: {r:?}");
        check_all(tree, &self.map, ctx);
    }

    /// A snapshot (or read-committed) reader across a committed transaction: a snapshot sees
    /// the state it began with where versions exist, a read-committed reader the new one.
    fn reader(&mut self, o: &Open, ctx: &str) {
        let Oracle { cfg, map, g } = self;
        let Open { db, tree } = o;
        let read_committed = g.below(3) == 0;
        let before = map.clone();
        let reader = if read_committed { db.begin_read_committed() } else { db.begin_read() };
        let mut t = db.begin();
        for _ in 0..1 + g.below(5) {
            if g.below(3) == 0 {
                let k = g.key();
                t.delete(tree, &k).unwrap();
                map.remove(&k);
            } else {
                let (k, v) = (g.key(), g.value());
                t.put(tree, &k, &v).unwrap();
                map.insert(k, v);
            }
        }
        t.commit().unwrap();
        let sees = if !read_committed && cfg.versions() { &before } else { &*map };
        let ctx = format!("{ctx}: a reader (read committed: {read_committed})");
        let k = g.key();
        let got = reader.get(tree, &k);
        if cfg.extra.snapshots_may_end() && got.as_ref().is_err_and(crate::common::too_old) {
            // K20: the commit outgrew the version memory and ended the snapshot.
            return;
        }
        assert_eq!(got.unwrap(), sees.get(&k).cloned(), "{ctx}: get");
        for k in before.keys().chain(map.keys()).take(50) {
            assert_eq!(reader.get(tree, k).unwrap(), sees.get(k).cloned(), "{ctx}: get");
        }
        let (start, end) = (g.bound(), g.bound());
        let want = in_range(sees, &start, &end);
        let got = from_both_ends(reader.range(tree, borrowed(&start), borrowed(&end)), g.pattern(), &ctx);
        assert_same(&got, &want, &format!("{ctx}: range"));
        let mut got =
            from_both_ends(reader.range_rev(tree, borrowed(&start), borrowed(&end)), g.pattern(), &ctx);
        got.reverse();
        assert_same(&got, &want, &format!("{ctx}: range backwards"));
        let prefix = g.prefix();
        let got = from_both_ends(reader.scan_prefix(tree, &prefix), g.pattern(), &ctx);
        assert_same(&got, &with_prefix(sees, &prefix), &format!("{ctx}: prefix {prefix:02x?}"));
    }

    /// Scans dropped part way, then writes.
    fn dropped_scans(&mut self, o: &Open, ctx: &str) {
        let mut scan = o.tree.range(Unbounded, Unbounded);
        for _ in 0..self.g.below(5) {
            let _ = scan.next();
        }
        drop(scan);
        let _ = o.tree.scan_prefix_rev(&[]).next();
        for _ in 0..3 {
            let (k, v) = (self.g.key(), self.g.value());
            upsert(&o.tree, &mut self.map, k, v, ctx);
        }
        check_all(&o.tree, &self.map, ctx);
    }

    /// A plain scan begun before a committed transaction and auto-commits that delete and
    /// insert returns the records as they were when it began, read from both ends (K18).
    fn scan_across_writes(&mut self, o: &Open, ctx: &str) {
        let Oracle { cfg, map, g } = self;
        let Open { db, tree } = o;
        let (start, end) = (g.bound(), g.bound());
        let want = in_range(map, &start, &end);
        let backwards = g.below(2) == 0;
        let may_end = cfg.extra.snapshots_may_end();
        let mut ended = false;
        let mut pattern = g.pattern();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut forward_scan = tree.range(borrowed(&start), borrowed(&end));
        let mut backward_scan = tree.range_rev(borrowed(&start), borrowed(&end));
        // One item, from the front or the back of the range as `pattern` says; false at the end.
        let mut step = |front: &mut Vec<Record>, back: &mut Vec<Record>| -> bool {
            let from_back = pattern & 1 == 1;
            pattern = pattern.rotate_right(1);
            let item = match (backwards, from_back) {
                (false, false) => forward_scan.next(),
                (false, true) => forward_scan.next_back(),
                (true, false) => backward_scan.next_back(),
                (true, true) => backward_scan.next(),
            };
            let Some(item) = item else { return false };
            let item = match item {
                // K20: the writes outgrew the version memory and ended the scan's snapshot.
                Err(TreeError::Transaction(e))
                    if may_end && e.downcast_ref::<Error>().is_some_and(crate::common::too_old) =>
                {
                    ended = true;
                    return false;
                }
                item => item.unwrap(),
            };
            if from_back {
                back.push(item)
            } else {
                front.push(item)
            }
            true
        };
        for _ in 0..g.below(4) {
            step(&mut front, &mut back);
        }
        let mut t = db.begin();
        let deleted: Vec<Vec<u8>> = map.keys().filter(|_| g.below(3) == 0).cloned().collect();
        for k in &deleted {
            t.delete(tree, k).unwrap();
        }
        let mut added = Vec::new();
        for _ in 0..g.below(40) {
            let (k, v) = (g.key(), g.value());
            t.put(tree, &k, &v).unwrap();
            added.push((k, v));
        }
        t.commit().unwrap();
        for k in deleted {
            map.remove(&k);
        }
        map.extend(added);
        for _ in 0..4 {
            let (k, v) = (g.key(), g.value());
            upsert(tree, map, k, v, ctx);
            let k = g.key();
            assert_eq!(tree.delete(&k).unwrap(), map.remove(&k).is_some(), "{ctx}: delete");
        }
        while step(&mut front, &mut back) {}
        if ended {
            return;
        }
        front.extend(back.into_iter().rev());
        assert_same(
            &front,
            &want,
            &format!("{ctx}: a scan (backwards: {backwards}) across writes, {start:?}..{end:?}"),
        );
    }

    /// The typed wrapper over bytes, outside and inside a transaction.
    fn typed(&mut self, o: &Open, ctx: &str) {
        let Oracle { map, g, .. } = self;
        let Open { db, tree } = o;
        let typed: TypedTree<Bytes, Bytes> = TypedTree::new(tree.clone());
        let (k, v) = (g.key(), g.value());
        assert_eq!(typed.upsert(&k, &v).unwrap(), map.insert(k, v).is_some(), "{ctx}: typed upsert");
        let k = g.key();
        assert_eq!(typed.get(&k).unwrap(), map.get(&k).cloned(), "{ctx}: typed get");
        let k = g.key();
        assert_eq!(typed.delete(&k).unwrap(), map.remove(&k).is_some(), "{ctx}: typed delete");
        let want = all_of(map);
        let got: Vec<Record> = typed.iter().map(Result::unwrap).collect();
        assert_same(&got, &want, &format!("{ctx}: typed iter"));
        let mut got: Vec<Record> = typed.iter().rev().map(Result::unwrap).collect();
        got.reverse();
        assert_same(&got, &want, &format!("{ctx}: typed iter backwards"));
        assert_eq!(typed.first().unwrap(), want.first().cloned(), "{ctx}: typed first");
        assert_eq!(typed.last().unwrap(), want.last().cloned(), "{ctx}: typed last");
        let (start, end) = (g.bound(), g.bound());
        let got: Vec<Record> =
            typed.range(borrowed(&start), borrowed(&end)).unwrap().map(Result::unwrap).collect();
        assert_same(&got, &in_range(map, &start, &end), &format!("{ctx}: typed range"));
        let mut t = db.begin();
        let mut mine = map.clone();
        let (k, v) = (g.key(), g.value());
        assert_eq!(typed.put_in(&mut t, &k, &v).unwrap(), mine.contains_key(&k), "{ctx}: typed put_in");
        assert_eq!(typed.get_in(&t, &k).unwrap().as_deref(), Some(&v[..]), "{ctx}: typed get_in");
        mine.insert(k, v);
        let k = g.key();
        assert_eq!(typed.delete_in(&mut t, &k).unwrap(), mine.remove(&k).is_some(), "{ctx}: typed delete_in");
        if g.below(2) == 0 {
            t.commit().unwrap();
            *map = mine;
        } else {
            t.abort().unwrap();
        }
    }

    /// A second tree, written, then dropped or emptied; the first stays as it was.
    fn second_tree(&mut self, o: &Open, ctx: &str) {
        let u = o.db.tree_or_create("u").unwrap();
        let mut in_u = Map::new();
        for _ in 0..self.g.below(30) {
            let (k, v) = (self.g.key(), self.g.value());
            upsert(&u, &mut in_u, k, v, ctx);
        }
        check_all(&u, &in_u, &format!("{ctx}: tree u"));
        check_all(&o.tree, &self.map, &format!("{ctx}: t beside u"));
        if self.g.below(2) == 0 {
            assert!(o.db.drop_tree("u").unwrap());
            assert!(matches!(u.get(b"a"), Err(TreeError::Dropped)), "{ctx}");
            assert!(matches!(o.db.tree("u"), Err(Error::TreeNotFound(_))), "{ctx}");
        } else {
            for k in in_u.keys() {
                assert!(u.delete(k).unwrap());
            }
        }
        check_all(&o.tree, &self.map, &format!("{ctx}: t after u"));
    }

    /// Many keys, in a transaction that commits, rolls back or is dropped, or one by one.
    fn bulk_puts(&mut self, o: &Open, ctx: &str) {
        let Oracle { map, g, .. } = self;
        let Open { db, tree } = o;
        let (n, base, how) = (50 + g.below(600), g.below(1 << 20) as u32, g.below(3));
        let mut t = db.begin();
        let mut mine = map.clone();
        for i in 0..n as u32 {
            let mut k = b"b".to_vec();
            k.extend_from_slice(&base.wrapping_add(i.wrapping_mul(7919) % 5000).to_be_bytes());
            let v = vec![(i % 251) as u8; (g.below(3) * 40 + g.below(60)) as usize];
            if how == 2 {
                upsert(tree, map, k, v, ctx);
            } else {
                t.put(tree, &k, &v).unwrap_or_else(|e| panic!("{ctx}: put: {e}"));
                mine.insert(k, v);
            }
        }
        match how {
            0 => {
                t.commit().unwrap();
                *map = mine;
            }
            1 => t.abort().unwrap(),
            _ => drop(t),
        }
        check_all(tree, map, &format!("{ctx}: after many puts ({how})"));
    }

    /// A stretch of keys deleted, in a transaction that commits, rolls back or is dropped, or
    /// one by one.
    fn bulk_deletes(&mut self, o: &Open, ctx: &str) {
        let Oracle { map, g, .. } = self;
        let Open { db, tree } = o;
        let (start, end) = (g.bound(), g.bound());
        let (start, end) =
            if g.below(2) == 0 { (Included(b"b".to_vec()), Excluded(b"c".to_vec())) } else { (start, end) };
        let keys: Vec<Vec<u8>> = in_range(map, &start, &end).into_iter().map(|(k, _)| k).collect();
        let how = g.below(3);
        let mut t = db.begin();
        for k in &keys {
            if how == 2 {
                assert!(tree.delete(k).unwrap(), "{ctx}: delete of a present key");
                map.remove(k);
            } else {
                assert!(t.delete(tree, k).unwrap(), "{ctx}: delete of a present key");
            }
        }
        match how {
            0 => {
                t.commit().unwrap();
                for k in &keys {
                    map.remove(k);
                }
            }
            1 => t.abort().unwrap(),
            _ => drop(t),
        }
        check_all(tree, map, &format!("{ctx}: after the deletes ({how})"));
    }
}

/// The run's database and its tree `t`, while open.
struct Open {
    db: Database,
    tree: Tree,
}

/// Where each run's database lives, on the run's file system.
const PATH: &str = "/api-oracle.swz";

/// One run: a database in its configuration, and the oracle of its tree `t`.
struct Run {
    /// The run's own in-memory file system (io README IO8), as in `oracle.rs`: the run's many
    /// closes and opens would otherwise wait for the disk's syncs.
    fs: Arc<dyn Vfs>,
    /// The same file system where it can crash: the runs of [`Extra`] settings, which crash
    /// and restart as a step.
    fault: Option<FaultFs>,
    /// `None` only inside the operations that close and open the database.
    open: Option<Open>,
    oracle: Oracle,
}

impl Run {
    fn new(cfg: Config, seed: u64) -> Run {
        let fault = (cfg.extra != Extra::None).then(FaultFs::new);
        let fs: Arc<dyn Vfs> = match &fault {
            Some(fault) => Arc::new(fault.clone()),
            None => Arc::new(MemFs::new()),
        };
        let db = cfg.builder(&fs).create(PATH).unwrap_or_else(|e| panic!("{cfg:?}: create: {e}"));
        let tree = db.create_tree("t").unwrap();
        let g = Gen {
            rng: XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            page: cfg.page,
            max_value: tree.max_value_len(),
        };
        Run { fs, fault, open: Some(Open { db, tree }), oracle: Oracle { cfg, map: Map::new(), g } }
    }

    /// One operation, chosen at random.
    fn step(&mut self, ctx: &str) {
        let (oracle, open) = (&mut self.oracle, self.open.as_ref().expect("open between operations"));
        match oracle.g.below(42) {
            0..=5 => oracle.upsert(open, ctx),
            6 | 7 => oracle.insert(open, ctx),
            8..=10 => oracle.delete(open, ctx),
            11 | 12 => oracle.compare_and_swap(open, ctx),
            13 | 14 => oracle.get(open, ctx),
            15..=17 => oracle.range(open, ctx),
            18 | 19 => oracle.prefix_scan(open, ctx),
            20 => oracle.oversize(open, ctx),
            21..=24 => oracle.transaction(open, ctx),
            25 => oracle.failed_transact(open, ctx),
            26 | 27 => oracle.reader(open, ctx),
            28 => oracle.dropped_scans(open, ctx),
            29 if oracle.cfg.committed_reads() => oracle.scan_across_writes(open, ctx),
            30 => oracle.typed(open, ctx),
            31..=33 => self.reopen(ctx),
            34 => self.other_mode(ctx),
            35 => oracle.second_tree(open, ctx),
            36 | 37 => oracle.bulk_puts(open, ctx),
            38 | 39 => oracle.bulk_deletes(open, ctx),
            40 if self.fault.is_some() && oracle.g.below(2) == 0 => self.backup(ctx),
            40 if self.fault.is_some() => self.compact(ctx),
            41 if self.fault.is_some() => self.crash(ctx),
            _ => oracle.get(open, ctx),
        }
    }

    fn open_again(&mut self, ctx: &str) {
        let db =
            self.oracle.cfg.builder(&self.fs).open(PATH).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let tree = db.tree("t").unwrap();
        check_all(&tree, &self.oracle.map, &format!("{ctx}, reopened"));
        self.open = Some(Open { db, tree });
    }

    /// Closed, or (logged) dropped without a close, then opened again; a closed one is
    /// sometimes opened read-only first.
    fn reopen(&mut self, ctx: &str) {
        if self.oracle.cfg.logged && self.oracle.g.below(2) == 0 {
            self.open = None;
        } else {
            self.close(ctx);
            if self.oracle.g.below(3) == 0 {
                self.read_only(ctx);
            }
        }
        self.open_again(ctx);
    }

    /// A backup, opened with the run's settings: every record as the oracle says.
    fn backup(&mut self, ctx: &str) {
        let copy = format!("/copy-{}.swz", self.oracle.g.pattern());
        let open = self.open.as_ref().expect("open");
        open.db.backup_to(&copy).unwrap_or_else(|e| panic!("{ctx}: backup: {e}"));
        let db = self
            .oracle
            .cfg
            .builder(&self.fs)
            .open(&copy)
            .unwrap_or_else(|e| panic!("{ctx}: open the backup: {e}"));
        let tree = db.tree("t").unwrap();
        check_all(&tree, &self.oracle.map, &format!("{ctx}, the backup"));
        drop(tree);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close the backup: {e}"));
    }

    /// Closed, compacted with the run's settings, and opened again.
    fn compact(&mut self, ctx: &str) {
        self.close(ctx);
        self.oracle.cfg.builder(&self.fs).compact(PATH).unwrap_or_else(|e| panic!("{ctx}: compact: {e}"));
        self.open_again(&format!("{ctx}, compacted"));
    }

    /// A power loss, then an open. A logged database keeps every commit that returned (an
    /// asynchronous one once `flush` returned, which it is here); an unlogged one is refused
    /// as unclean, and opened empty with `discard_unclean`.
    fn crash(&mut self, ctx: &str) {
        let fault = self.fault.clone().expect("a file system that crashes");
        let cfg = self.oracle.cfg;
        let open = self.open.as_ref().expect("open");
        if !cfg.logged {
            // A change since the open (F11: a crash before the first one leaves the file as
            // the last close did, and it opens).
            let (k, v) = (self.oracle.g.key(), self.oracle.g.value());
            upsert(&open.tree, &mut self.oracle.map, k, v, ctx);
        }
        if !cfg.extra.durable_commits() {
            open.db.flush().unwrap_or_else(|e| panic!("{ctx}: flush: {e}"));
        }
        fault.power_off(CrashMode::DropUnsynced);
        self.open = None;
        fault.power_on();
        if !cfg.logged {
            let r = cfg.builder(&self.fs).open(PATH);
            assert!(matches!(r, Err(Error::Unclean(_))), "{ctx}: an unlogged open after a crash: {r:?}");
            let db = cfg
                .builder(&self.fs)
                .discard_unclean(true)
                .open(PATH)
                .unwrap_or_else(|e| panic!("{ctx}: open with discard_unclean: {e}"));
            assert!(db.tree_names().is_empty(), "{ctx}: a discarded database's trees");
            let tree = db.create_tree("t").unwrap();
            self.oracle.map.clear();
            self.open = Some(Open { db, tree });
            return;
        }
        self.open_again(&format!("{ctx}, after a crash"));
    }

    /// Opened read-only through the run's file system (RECOVERY.md R27): every record as the
    /// oracle says, every change refused.
    fn read_only(&mut self, ctx: &str) {
        let db = self
            .oracle
            .cfg
            .builder(&self.fs)
            .read_only(true)
            .open(PATH)
            .unwrap_or_else(|e| panic!("{ctx}: read-only open: {e}"));
        let tree = db.tree("t").unwrap();
        check_all(&tree, &self.oracle.map, &format!("{ctx}, opened read-only"));
        let (k, v) = (self.oracle.g.key(), self.oracle.g.value());
        assert!(matches!(tree.upsert(&k, &v), Err(TreeError::ReadOnly)), "{ctx}: upsert read-only");
        assert!(matches!(tree.delete(&k), Err(TreeError::ReadOnly)), "{ctx}: delete read-only");
        drop(tree);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close of the read-only open: {e}"));
    }

    /// Closes the run's database, so that another handle can open the file.
    fn close(&mut self, ctx: &str) {
        let Open { db, tree } = self.open.take().expect("open");
        drop(tree);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    }

    /// Opened in another buffer mode (with a pool at least as large), written, and opened in
    /// the run's own again.
    fn other_mode(&mut self, ctx: &str) {
        self.close(ctx);
        let mode = [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory]
            [self.oracle.g.below(3) as usize];
        let pool = if mode == PoolMode::MainMemory {
            self.oracle.cfg.pool_bytes().max(64 << 20)
        } else {
            self.oracle.cfg.pool_bytes()
        };
        let (locking, fs) = (self.oracle.cfg.locking, Arc::clone(&self.fs));
        let other = Database::builder()
            .mode(mode)
            .pool_bytes(pool)
            .lab(move |l| l.locking(locking).vfs(fs))
            .open(PATH)
            .unwrap_or_else(|e| panic!("{ctx}: open in {mode:?}: {e}"));
        let t = other.tree("t").unwrap();
        check_all(&t, &self.oracle.map, &format!("{ctx}, opened in {mode:?}"));
        for _ in 0..5 {
            let (k, v) = (self.oracle.g.key(), self.oracle.g.value());
            upsert(&t, &mut self.oracle.map, k, v, ctx);
            let k = self.oracle.g.key();
            assert_eq!(
                t.delete(&k).unwrap(),
                self.oracle.map.remove(&k).is_some(),
                "{ctx}: delete in {mode:?}"
            );
        }
        drop(t);
        other.close().unwrap();
        self.open_again(ctx);
    }

    /// The end of a run: the tree as the oracle says, after a close and an open too.
    fn finish(mut self, ctx: &str) {
        check_all(&self.open.as_ref().expect("open").tree, &self.oracle.map, ctx);
        self.close(ctx);
        self.open_again(ctx);
        self.close(ctx);
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// `SWIZZLEDB_API_ORACLE_FIRST_SEED=n` starts the seeds at n (default 1), so that a longer run
/// can try seeds no earlier run tried.
#[test]
fn every_operation_in_every_configuration_matches_a_btreemap() {
    let seeds = env_or("SWIZZLEDB_API_ORACLE_SEEDS", 1);
    let steps = env_or("SWIZZLEDB_API_ORACLE_STEPS", 200);
    let first = env_or("SWIZZLEDB_API_ORACLE_FIRST_SEED", 1);
    for cfg in Config::all() {
        for seed in first..first + seeds {
            let mut run = Run::new(cfg, seed);
            for step in 0..steps {
                run.step(&format!("{cfg:?}, seed {seed}, step {step}"));
            }
            run.finish(&format!("{cfg:?}, seed {seed}, the end"));
        }
    }
}

/// Every [`Extra`] setting over a few configurations of [`Config::all`] each (the buffer
/// modes in turn, logged or not, locks on or off, the page sizes in turn), with a crash and
/// restart among the steps. `SWIZZLEDB_API_ORACLE_SEEDS`, `_STEPS` and `_FIRST_SEED` as
/// above (default 48 steps here); `SWIZZLEDB_API_ORACLE_EXTRA_BASES=n` runs n base
/// configurations per setting (default 2, at most 24).
#[test]
fn every_operation_with_each_setting_matches_a_btreemap() {
    let seeds = env_or("SWIZZLEDB_API_ORACLE_SEEDS", 1);
    let steps = env_or("SWIZZLEDB_API_ORACLE_STEPS", 48);
    let first = env_or("SWIZZLEDB_API_ORACLE_FIRST_SEED", 1);
    let bases = env_or("SWIZZLEDB_API_ORACLE_EXTRA_BASES", 2) as usize;
    let modes = [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory];
    let pages = [4096, 8192, 16384, 32768];
    for (i, extra) in Extra::all().into_iter().enumerate() {
        for b in 0..bases.min(24) {
            let n = i * 7 + b * 5;
            let mode = modes[n % 3];
            if extra == Extra::MinPool && mode == PoolMode::MainMemory {
                continue;
            }
            let logged = b % 2 == 0 || !matches!(extra, Extra::Policy(_) | Extra::MinPool);
            let cfg = Config {
                mode,
                logged,
                locking: n % 4 != 1,
                page: pages[n % 4],
                small_pool: b % 3 != 2,
                extra,
            };
            for seed in first..first + seeds {
                let mut run = Run::new(cfg, seed);
                for step in 0..steps {
                    run.step(&format!("{cfg:?}, seed {seed}, step {step}"));
                }
                run.finish(&format!("{cfg:?}, seed {seed}, the end"));
            }
        }
    }
}
