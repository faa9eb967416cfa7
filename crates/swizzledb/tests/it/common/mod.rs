//! Shared pieces of the integration tests. For the crash and fault-injection tests (`crash.rs`):
//! a workload of transactions over one tree with a `BTreeMap` oracle of the committed state, and
//! a `Vfs` wrapper that counts the I/O calls per site (operation and file class) and fails a
//! chosen one. For the snapshot tests: concurrent increments under snapshot isolation.

#![allow(dead_code)] // Not every piece is used by every test.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use swizzledb::{Builder, Database, Error, PoolMode, Transaction, Tree};
use swizzledb_io::{CrashMode, Fault, FaultFs, FaultRule, Op, OpenMode, Vfs, VfsFile};

/// The database file every test uses (its log is `<DB>.wal`).
pub const DB: &str = "/crash/t.swz";
/// The tree the workloads write.
pub const TREE: &str = "t";
/// Log segment size: small, so that workloads fill several segments and truncation removes some.
pub const SEGMENT: u64 = 32 * 1024;

/// The database path.
pub fn db_path() -> PathBuf {
    PathBuf::from(DB)
}

/// A fresh fault-injecting file system with the database's directory.
pub fn new_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/crash")).unwrap();
    fs
}

/// A logged database on `vfs`: 4 KiB pages, a pool of 16 frames (so pages are evicted and written
/// while transactions run; main-memory mode needs room for everything), sync commits.
pub fn builder(mode: PoolMode, vfs: Arc<dyn Vfs>) -> Builder {
    let pool = if mode == PoolMode::MainMemory { 32 << 20 } else { 16 * 4096 };
    Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(pool)
        .logging(true)
        .log_segment_bytes(SEGMENT)
        .lab(|l| l.vfs(vfs))
}

/// The key of key number `k`.
pub fn key(k: u16) -> Vec<u8> {
    format!("k{k:05}").into_bytes()
}

/// The value written for key `k` with tag `v`: 16 to 688 bytes, so that a few hundred keys fill
/// dozens of 4 KiB leaves (more than the pool holds) and changing tags makes leaves split and
/// merge; one value in 13 is large, 1,100 to 7,100 bytes in one or two overflow pages (btree
/// README T22; at most an eighth of the 16-frame pool).
pub fn value(k: u16, v: u8) -> Vec<u8> {
    if (usize::from(k) + usize::from(v)).is_multiple_of(13) {
        return (0..1100 + usize::from(k) * 37 % 6000).map(|i| v ^ (i as u8)).collect();
    }
    let len = 16 + (usize::from(k) * 7 + usize::from(v)) % 29 * 24;
    vec![v; len]
}

/// The committed state: key number -> tag.
pub type Model = BTreeMap<u16, u8>;

/// One write of a transaction.
#[derive(Clone, Debug)]
pub enum Write {
    /// Insert or replace.
    Put(u16, u8),
    /// Delete.
    Delete(u16),
}

/// How a transaction of the workload ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Commit (sync): acknowledged once `commit` returns `Ok`.
    Commit,
    /// Explicit abort.
    Abort,
    /// Dropped unfinished (rolled back by `Drop`).
    Drop,
    /// Left open until the crash.
    Open,
}

/// One step of a workload.
#[derive(Clone, Debug)]
pub enum Step {
    /// A transaction.
    Txn(Vec<Write>, End),
    /// `Database::checkpoint`.
    Checkpoint,
}

/// What a workload achieved before it stopped.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The state of every acknowledged commit.
    pub acked: Model,
    /// If a commit failed: the state had it reached the disk anyway (restart may keep it).
    pub in_doubt: Option<Model>,
    /// The error that stopped the workload.
    pub error: Option<Error>,
    /// Writes refused with a lock conflict (a later transaction meeting an open one's lock).
    pub lock_conflicts: usize,
}

/// Runs `steps` on `tree` starting from the committed state `start`, stopping at the first error
/// other than a lock conflict. Transactions ending in [`End::Open`] are pushed to `open`, so they
/// stay unfinished (and keep their locks) until the caller drops them.
pub fn run_steps<'db>(
    db: &'db Database,
    tree: &Tree,
    steps: &[Step],
    start: &Model,
    open: &mut Vec<Transaction<'db>>,
) -> Outcome {
    let mut out = Outcome { acked: start.clone(), ..Outcome::default() };
    for step in steps {
        match step {
            Step::Checkpoint => {
                if let Err(e) = db.checkpoint() {
                    out.error = Some(e);
                    return out;
                }
            }
            Step::Txn(writes, end) => {
                let mut t = db.begin();
                let mut local = out.acked.clone();
                for w in writes {
                    let result = match *w {
                        Write::Put(k, v) => t.put(tree, &key(k), &value(k, v)).map(|existed| {
                            assert_eq!(existed, local.insert(k, v).is_some(), "put {k}: existed");
                        }),
                        Write::Delete(k) => t.delete(tree, &key(k)).map(|existed| {
                            assert_eq!(existed, local.remove(&k).is_some(), "delete {k}: existed");
                        }),
                    };
                    match result {
                        Ok(()) => {}
                        // An open transaction (older) holds the key: this younger one dies on that
                        // write and stays as it was (LOCKS.md).
                        Err(Error::Lock(_)) => out.lock_conflicts += 1,
                        Err(e) => {
                            out.error = Some(e);
                            return out;
                        }
                    }
                }
                match end {
                    End::Commit => match t.commit() {
                        Ok(()) => out.acked = local,
                        Err(e) => {
                            out.in_doubt = Some(local);
                            out.error = Some(e);
                            return out;
                        }
                    },
                    End::Abort => {
                        if let Err(e) = t.abort() {
                            out.error = Some(e);
                            return out;
                        }
                    }
                    End::Drop => drop(t),
                    End::Open => open.push(t),
                }
            }
        }
    }
    out
}

/// Every record of `tree`, after checking its structure.
pub fn contents(tree: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    tree.verify().unwrap_or_else(|e| panic!("tree structure: {e}"));
    tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(|r| r.unwrap()).collect()
}

/// The records the model stands for.
pub fn expected(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model.iter().map(|(&k, &v)| (key(k), value(k, v))).collect()
}

/// Asserts that the database's tree holds exactly `model` and is structurally valid.
pub fn assert_state(db: &Database, model: &Model, context: &str) {
    let tree = db.tree(TREE).unwrap_or_else(|e| panic!("{context}: tree {TREE}: {e}"));
    let got = contents(&tree);
    let want = expected(model);
    if got != want {
        panic!("{context}: state differs from the oracle\n{}", diff(&got, &want));
    }
}

/// A short description of how two record lists differ.
pub fn diff(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) -> String {
    let g: BTreeMap<_, _> = got.iter().cloned().collect();
    let w: BTreeMap<_, _> = want.iter().cloned().collect();
    let mut lines = Vec::new();
    for (k, v) in &w {
        match g.get(k) {
            None => lines.push(format!("missing {}", String::from_utf8_lossy(k))),
            Some(x) if x != v => lines.push(format!(
                "{}: tag {:?} (len {}) instead of {:?} (len {})",
                String::from_utf8_lossy(k),
                x.first(),
                x.len(),
                v.first(),
                v.len()
            )),
            Some(_) => {}
        }
    }
    for k in g.keys().filter(|k| !w.contains_key(*k)) {
        lines.push(format!("unexpected {}", String::from_utf8_lossy(k)));
    }
    lines.truncate(20);
    lines.join("\n")
}

/// The file class of a path, for counting and targeting I/O sites.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// The page file.
    Data,
    /// A log segment (`<lsn>.log`).
    Segment,
    /// The master record or its temporary file.
    Master,
    /// A run of the log archive (`<path>.wal/archive/`) or its temporary file.
    Archive,
    /// A directory (`list`, `sync_dir`).
    Dir,
}

fn classify(path: &Path) -> Class {
    let s = path.to_string_lossy();
    if s == DB {
        Class::Data
    } else if s.contains("/archive/") {
        Class::Archive
    } else if s.ends_with(".log") {
        Class::Segment
    } else if s.contains("master") {
        Class::Master
    } else {
        Class::Dir
    }
}

/// A fault to inject at the `nth` call (1-based) of `op` on a file of class `class`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The operation.
    pub op: Op,
    /// The file class.
    pub class: Class,
    /// Which call, counted from when it is armed.
    pub nth: u64,
    /// The error.
    pub fault: Fault,
}

#[derive(Debug, Default)]
struct SiteState {
    counts: BTreeMap<(Op, Class), u64>,
    armed: Option<(Site, u64)>,
    fired: bool,
    /// [`Sites::kill_at`]: calls left before the kill, and how it treats unsynced writes.
    kill: Option<(u64, CrashMode)>,
    killed: bool,
}

/// A `Vfs` over a [`FaultFs`] that counts calls per (operation, [`Class`]) and fails one chosen
/// call. The failure itself is produced by the `FaultFs` (a one-shot rule on the exact path armed
/// just before the call), so a failed call leaves what io README IO12 says it leaves.
#[derive(Clone, Debug)]
pub struct Sites {
    /// The file system underneath.
    pub fs: FaultFs,
    state: Arc<Mutex<SiteState>>,
}

impl Sites {
    /// Counts the calls on `fs`.
    pub fn new(fs: FaultFs) -> Sites {
        Sites { fs, state: Arc::default() }
    }

    /// Calls counted so far per site.
    pub fn counts(&self) -> BTreeMap<(Op, Class), u64> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).counts.clone()
    }

    /// Arms `site` (counting from now).
    pub fn arm(&self, site: Site) {
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let base = st.counts.get(&(site.op, site.class)).copied().unwrap_or(0);
        st.armed = Some((site, base));
        st.fired = false;
    }

    /// Whether the armed fault fired.
    pub fn fired(&self) -> bool {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).fired
    }

    /// Disarms (the `FaultFs` rules and a kill too).
    pub fn disarm(&self) {
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        st.armed = None;
        st.kill = None;
        self.fs.clear_faults();
    }

    /// Arms a kill (`CrashMode::KeepUnsynced`) or a power loss at the `nth` call (1-based,
    /// counted from now) of any kind, directory calls included: the file system powers off
    /// ([`FaultFs::power_off`]) before that call runs, so it and every later one fail, as
    /// nothing more happens in a killed process. [`FaultFs::power_on`] ends it.
    pub fn kill_at(&self, nth: u64, how: CrashMode) {
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        st.kill = Some((nth.max(1), how));
        st.killed = false;
    }

    /// Whether the armed kill happened.
    pub fn killed(&self) -> bool {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).killed
    }

    /// Counts a call towards an armed kill, and kills there.
    fn tick(&self, st: &mut SiteState) {
        if let Some((left, how)) = st.kill {
            if left == 1 {
                st.kill = None;
                st.killed = true;
                self.fs.power_off(how);
            } else {
                st.kill = Some((left - 1, how));
            }
        }
    }

    /// Counts a call and runs it; if it is the chosen one, a one-shot `FaultFs` rule on its exact
    /// path makes it fail. The state lock is held through the call, so that no other thread's call
    /// (the log's background flusher) can meet the rule instead.
    fn call<T>(&self, op: Op, path: &Path, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let class = classify(path);
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.tick(&mut st);
        let n = st.counts.entry((op, class)).or_insert(0);
        *n += 1;
        let n = *n;
        if let Some((site, base)) = st.armed {
            if site.op == op && site.class == class && n == base + site.nth.max(1) {
                st.armed = None;
                st.fired = true;
                self.fs.fail_next(FaultRule::new(op, site.fault).on_path(path.to_string_lossy()));
                let result = f();
                assert!(result.is_err(), "the armed fault did not fail {op:?} on {}", path.display());
                return result;
            }
        }
        f()
    }
}

#[derive(Debug)]
struct SiteFile {
    sites: Sites,
    path: PathBuf,
    inner: Arc<dyn VfsFile>,
}

impl VfsFile for SiteFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.sites.call(Op::Read, &self.path, || self.inner.read_at(buf, offset))
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.sites.call(Op::Write, &self.path, || self.inner.write_all_at(buf, offset))
    }

    fn sync(&self) -> io::Result<()> {
        self.sites.call(Op::Sync, &self.path, || self.inner.sync())
    }

    fn len(&self) -> io::Result<u64> {
        self.sites.call(Op::Len, &self.path, || self.inner.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.sites.call(Op::SetLen, &self.path, || self.inner.set_len(len))
    }
}

impl Vfs for Sites {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let inner = self.call(Op::Open, path, || self.fs.open(path, mode))?;
        Ok(Arc::new(SiteFile { sites: self.clone(), path: path.to_path_buf(), inner }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.call(Op::Remove, path, || self.fs.remove(path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.tick(&mut self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        self.fs.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.call(Op::Rename, to, || self.fs.rename(from, to))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.call(Op::List, dir, || self.fs.list(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.tick(&mut self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        self.fs.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.call(Op::SyncDir, dir, || self.fs.sync_dir(dir))
    }

    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
}

/// A `Vfs` over a [`FaultFs`] whose gate, while closed, holds every `sync` of a log segment
/// (a `.log` file) until it opens: a commit waiting for its flush stays waiting for as long as a
/// test needs.
#[derive(Clone, Debug)]
pub struct SyncGate {
    /// The file system underneath.
    pub fs: FaultFs,
    gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
    held: Arc<std::sync::atomic::AtomicU64>,
}

impl SyncGate {
    /// An open gate over `fs`.
    pub fn new(fs: FaultFs) -> SyncGate {
        SyncGate { fs, gate: Arc::new((Mutex::new(true), std::sync::Condvar::new())), held: Arc::default() }
    }

    /// Closes (`false`) or opens (`true`) the gate.
    pub fn set_open(&self, open: bool) {
        *self.gate.0.lock().unwrap() = open;
        self.gate.1.notify_all();
    }

    /// Segment syncs that met the gate closed so far.
    pub fn held(&self) -> u64 {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn pass(&self) {
        let mut open = self.gate.0.lock().unwrap();
        if !*open {
            self.held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        while !*open {
            open = self.gate.1.wait(open).unwrap();
        }
    }
}

#[derive(Debug)]
struct GatedFile {
    gate: Option<SyncGate>,
    inner: Arc<dyn VfsFile>,
}

impl VfsFile for GatedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn write_all_at_batch(&self, writes: &[(&[u8], u64)]) -> Vec<io::Result<()>> {
        self.inner.write_all_at_batch(writes)
    }
    fn sync(&self) -> io::Result<()> {
        if let Some(g) = &self.gate {
            g.pass();
        }
        self.inner.sync()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.allocate(offset, len)
    }
    fn try_lock(&self) -> io::Result<bool> {
        self.inner.try_lock()
    }
    fn unlock(&self) -> io::Result<()> {
        self.inner.unlock()
    }
}

impl Vfs for SyncGate {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let inner = self.fs.open(path, mode)?;
        let gate = path.to_string_lossy().ends_with(".log").then(|| self.clone());
        Ok(Arc::new(GatedFile { gate, inner }))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.fs.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.fs.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.fs.rename(from, to)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.fs.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.fs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.fs.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
}

/// K24: `threads` threads each add 1 to the big-endian `u64` under `n` in `t`, `each` times, in
/// snapshot-isolation transactions (`transact_snapshot` retries a write conflict); returns the
/// value they leave. No update may be lost: it must grow by `threads * each`.
pub fn increment_at_snapshots(db: &Database, t: &Tree, threads: u64, each: u64) -> u64 {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || {
                for _ in 0..each {
                    db.transact_snapshot(|tx| {
                        assert!(tx.is_snapshot());
                        let n = u64::from_be_bytes(tx.get(t, b"n")?.unwrap().try_into().unwrap());
                        tx.put(t, b"n", &(n + 1).to_be_bytes())?;
                        Ok(())
                    })
                    .unwrap();
                }
            });
        }
    });
    u64::from_be_bytes(t.get(b"n").unwrap().unwrap().try_into().unwrap())
}

/// LOCKS.md K20: `SnapshotTooOld`, met directly or as a range's iterator returns it (inside a
/// tree error).
pub fn too_old(e: &Error) -> bool {
    match e {
        Error::SnapshotTooOld { .. } => true,
        Error::Tree(swizzledb::TreeError::Transaction(inner)) => {
            inner.downcast_ref::<Error>().is_some_and(too_old)
        }
        _ => false,
    }
}

/// A small deterministic generator (xorshift), seeded by its one field.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A small database on `vfs`, logged or not, for the tests that kill an operation at each of its
/// file-system calls: 4 KiB pages, a pool of `frames` frames and 64 KiB log segments, so the
/// operation's calls stay few and every kind of them comes.
pub fn small_on(vfs: Arc<dyn Vfs>, logged: bool, frames: usize) -> Builder {
    Database::builder()
        .page_size(4096)
        .pool_bytes(frames * 4096)
        .logging(logged)
        .log_segment_bytes(64 << 10)
        .lab(|l| l.vfs(vfs))
}

/// The crash modes a kill at a file-system call is tried with: unsynced writes kept (a killed
/// process), dropped (a power loss), and kept sector by sector or not (a power loss in the
/// middle of the device's writes).
pub const KILLS: [CrashMode; 3] =
    [CrashMode::KeepUnsynced, CrashMode::DropUnsynced, CrashMode::Torn { seed: 5 }];

/// Kills `op` at its 1st, 2nd, ... file-system call ([`Sites::kill_at`]), in each of
/// `modes` (most tests give [`KILLS`]), until it runs to its end without meeting the kill; returns how many kills it
/// tried. Each try starts from a fresh file system that `setup` fills (unkilled); `op` runs on
/// the killable one and must succeed when the kill never came; `check` then runs, with the
/// power back on, after every try — the completed one too — given the fresh file system and
/// a context to name in its panics (mode, call number, and whether the kill came).
pub fn kill_at_every_call(
    modes: &[CrashMode],
    setup: impl Fn(&FaultFs),
    op: impl Fn(Arc<dyn Vfs>) -> Result<(), Error>,
    check: impl Fn(&FaultFs, &str),
) -> u64 {
    kill_at_every_nth_call(modes, 1, setup, op, check)
}

/// [`kill_at_every_call`] at every `stride`-th call only (the 1st, the `1 + stride`-th, ...),
/// for operations whose calls are too many to kill at each within a test's time; each mode
/// starts at a different offset, so that together they reach more of the calls.
pub fn kill_at_every_nth_call(
    modes: &[CrashMode],
    stride: u64,
    setup: impl Fn(&FaultFs),
    op: impl Fn(Arc<dyn Vfs>) -> Result<(), Error>,
    check: impl Fn(&FaultFs, &str),
) -> u64 {
    let mut kills = 0;
    for (m, &how) in modes.iter().enumerate() {
        for n in (1 + m as u64 % stride..).step_by(stride as usize) {
            let fs = FaultFs::new();
            setup(&fs);
            let sites = Sites::new(fs.clone());
            sites.kill_at(n, how);
            let done = op(Arc::new(sites.clone()));
            let killed = sites.killed();
            sites.disarm();
            fs.power_on();
            if !killed {
                done.unwrap_or_else(|e| panic!("{how:?}: the operation, not killed: {e}"));
                check(&fs, &format!("{how:?}, not killed"));
                break;
            }
            kills += 1;
            check(&fs, &format!("{how:?}, killed at call {n}"));
        }
    }
    kills
}

/// Runs `f` on a thread of its own and returns what it returns, failing the test if it has not
/// finished after `secs` seconds (a hang becomes a failure); a panic in `f` is the test's.
pub fn watchdog<R: Send + 'static>(what: &str, secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let r = f();
        let _ = done.send(());
        r
    });
    match finished.recv_timeout(std::time::Duration::from_secs(secs)) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: not finished after {secs} s (a hang?)")
        }
        _ => worker.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
    }
}

/// The faults an operation is failed with at each of its calls ([`fail_at_every_call`]): `EIO`
/// at every kind of call that changes files (creates are `open`s), and `ENOSPC` where space
/// runs out (a write or a length change).
pub const FAULTS: [(Op, Fault); 8] = [
    (Op::Open, Fault::Eio),
    (Op::Write, Fault::Eio),
    (Op::Write, Fault::Enospc),
    (Op::SetLen, Fault::Enospc),
    (Op::Sync, Fault::Eio),
    (Op::Rename, Fault::Eio),
    (Op::Remove, Fault::Eio),
    (Op::SyncDir, Fault::Eio),
];

/// Fails `op` at its 1st, 2nd, ... call of each kind in `faults` (a one-shot
/// [`FaultRule`], so the calls after it succeed), until it makes fewer calls of that kind than
/// the rule waits for; returns how many failures it tried. Each try starts from a fresh file
/// system that `setup` fills; `op` runs on it and must succeed when the fault never came;
/// `check` then runs, the fault disarmed, after every try, given the file system, whether the
/// operation failed, and a context to name in its panics.
pub fn fail_at_every_call(
    faults: &[(Op, Fault)],
    setup: impl Fn(&FaultFs),
    op: impl Fn(Arc<dyn Vfs>) -> Result<(), Error>,
    check: impl Fn(&FaultFs, Option<&Error>, &str),
) -> u64 {
    let mut failures = 0;
    for &(call, fault) in faults {
        for n in 1.. {
            let fs = FaultFs::new();
            setup(&fs);
            let before = fs.calls(call, None);
            fs.fail_next(FaultRule::new(call, fault).nth(n));
            let done = op(Arc::new(fs.clone()));
            let fired = fs.calls(call, None) - before >= n;
            fs.clear_faults();
            let context = format!("{fault:?} at {call:?} call {n}");
            if !fired {
                done.unwrap_or_else(|e| panic!("{context}, never reached: the operation: {e}"));
                check(&fs, None, &format!("{context}, never reached"));
                break;
            }
            failures += 1;
            check(&fs, done.as_ref().err(), &context);
        }
    }
    failures
}
