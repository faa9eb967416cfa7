//! An in-memory, deterministic [`Vfs`] for crash and fault tests (README "Fault injection",
//! IO9–IO13).
//!
//! [`FaultFs`] keeps, for every file, the bytes a read sees (*visible*), the bytes that would
//! survive a power loss (*durable*, as of the last successful `sync`), and the writes and length
//! changes since then, in order (*unsynced*). Directory entries are visible at once and durable
//! after `sync_dir` of their directory (IO2). [`FaultFs::crash`] turns the visible state into what
//! a machine would find after power loss, per [`CrashMode`]; [`FaultFs::fail_next`] makes a
//! chosen call fail; [`FaultFs::calls`] counts calls so that a test can first run a workload to
//! count the I/O sites and then inject a fault at each one.
//!
//! Cloning a `FaultFs` gives another handle on the same file system.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::flock::Holders;
use crate::vfs::{FileId, OpenMode, Vfs, VfsFile};

/// The unit a torn write is cut into (IO10): each 512-byte sector of the file that an unsynced
/// write touches survives a `Torn` crash or not, on its own.
pub const SECTOR: u64 = 512;

/// Alignment of offsets, lengths and buffers that direct handles demand (IO4).
pub const DIRECT_ALIGN: u64 = 4096;

/// Largest file a `FaultFs` holds (1 GiB); a write or `set_len` beyond it fails with `EFBIG`
/// instead of exhausting memory.
pub const MAX_FILE_LEN: u64 = 1 << 30;

/// The operations a [`FaultRule`] can target and [`FaultFs::calls`] counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// [`Vfs::open`].
    Open,
    /// [`VfsFile::read_at`] (and every read of `read_exact_at`).
    Read,
    /// [`VfsFile::write_all_at`].
    Write,
    /// [`VfsFile::sync`].
    Sync,
    /// [`VfsFile::set_len`].
    SetLen,
    /// [`VfsFile::len`].
    Len,
    /// [`Vfs::remove`] and [`Vfs::remove_dir`].
    Remove,
    /// [`Vfs::rename`] (its filter matches the source or the target path).
    Rename,
    /// [`Vfs::list`].
    List,
    /// [`Vfs::sync_dir`].
    SyncDir,
}

/// The error an injected fault returns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `EIO`: the device failed.
    Eio,
    /// `ENOSPC`: the device is full. A failing write stores a prefix first (IO12).
    Enospc,
    /// Any other error, by kind.
    Kind(io::ErrorKind),
}

impl Fault {
    /// The I/O error this fault produces.
    #[must_use]
    pub fn to_io_error(self) -> io::Error {
        match self {
            Fault::Eio => io::Error::from_raw_os_error(libc::EIO),
            Fault::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
            Fault::Kind(kind) => io::Error::new(kind, "injected fault"),
        }
    }
}

/// Which call to fail, and how (IO11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The operation.
    pub op: Op,
    /// Only calls whose path contains this substring match (`None`: every path). A file handle's
    /// path is the one it was opened under.
    pub path: Option<String>,
    /// The `nth` matching call from when the rule is armed fails (1-based; 0 is treated as 1).
    pub nth: u64,
    /// The error returned.
    pub fault: Fault,
    /// Whether every later matching call fails too.
    pub repeat: bool,
}

impl FaultRule {
    /// Fails the next call of `op` (any path) with `fault`, once.
    #[must_use]
    pub fn new(op: Op, fault: Fault) -> FaultRule {
        FaultRule { op, path: None, nth: 1, fault, repeat: false }
    }

    /// Only calls on paths containing `filter` match.
    #[must_use]
    pub fn on_path(mut self, filter: impl Into<String>) -> FaultRule {
        self.path = Some(filter.into());
        self
    }

    /// The `n`th matching call fails instead of the first (1-based).
    #[must_use]
    pub fn nth(mut self, n: u64) -> FaultRule {
        self.nth = n;
        self
    }

    /// Every matching call from the `nth` on fails.
    #[must_use]
    pub fn repeating(mut self) -> FaultRule {
        self.repeat = true;
        self
    }
}

/// What survives a crash besides the durable state (IO10).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// No unsynced write or length change survives.
    DropUnsynced,
    /// Every unsynced write and length change survives (the device wrote its cache in time).
    KeepUnsynced,
    /// Each 512-byte sector of each unsynced write, and each unsynced length change, survives
    /// or not by a coin flip of a random generator seeded with `seed`, applied in write order.
    Torn {
        /// Seed of the coin flips: the same seed on the same history gives the same result.
        seed: u64,
    },
}

/// One unsynced change of a file, kept in order until a sync or a crash.
#[derive(Clone, Debug)]
enum Change {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

/// A file's contents, independent of its names.
#[derive(Clone, Debug, Default)]
struct Inode {
    visible: Vec<u8>,
    durable: Vec<u8>,
    unsynced: Vec<Change>,
}

#[derive(Debug)]
struct Armed {
    rule: FaultRule,
    seen: u64,
}

/// A counted call: the operation and the path (two for a rename).
type CallKey = (Op, PathBuf, Option<PathBuf>);

#[derive(Debug)]
struct State {
    /// Incremented by every crash; a handle from an older epoch fails every call (IO10).
    epoch: u64,
    next_inode: u64,
    inodes: BTreeMap<u64, Inode>,
    /// Visible directory entries (file path -> inode).
    names: BTreeMap<PathBuf, u64>,
    /// Entries as of the last `sync_dir` of their directory.
    durable_names: BTreeMap<PathBuf, u64>,
    /// Directories (durable as soon as created, see IO9).
    dirs: BTreeSet<PathBuf>,
    rules: Vec<Armed>,
    calls: HashMap<CallKey, u64>,
    /// Between `power_off` and `power_on`: every call fails with `EIO` (IO10).
    down: bool,
    /// The advisory locks held, by inode (IO5); a crash ends them with the process that held
    /// them.
    locks: HashMap<u64, Holders>,
}

fn matches(filter: Option<&str>, path: &Path, other: Option<&Path>) -> bool {
    match filter {
        None => true,
        Some(f) => {
            path.to_string_lossy().contains(f) || other.is_some_and(|o| o.to_string_lossy().contains(f))
        }
    }
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// The directory a path's entry lives in (`""` for a bare file name).
fn parent_of(path: &Path) -> PathBuf {
    path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

/// `end` of a change at `offset` of `len` bytes, or `EFBIG` beyond [`MAX_FILE_LEN`].
fn checked_end(offset: u64, len: usize) -> io::Result<usize> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= MAX_FILE_LEN => Ok(end as usize),
        _ => Err(errno(libc::EFBIG)),
    }
}

/// Applies a write whose end was checked by [`checked_end`].
fn apply_write(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    crate::mem::write_into(bytes, offset as usize, data);
}

fn apply(bytes: &mut Vec<u8>, change: &Change) {
    match change {
        Change::Write { offset, data } => apply_write(bytes, *offset, data),
        Change::SetLen(len) => bytes.resize(*len as usize, 0),
    }
}

impl State {
    fn new() -> State {
        State {
            epoch: 0,
            next_inode: 1,
            inodes: BTreeMap::new(),
            names: BTreeMap::new(),
            durable_names: BTreeMap::new(),
            dirs: [PathBuf::new(), PathBuf::from("/")].into_iter().collect(),
            rules: Vec::new(),
            calls: HashMap::new(),
            down: false,
            locks: HashMap::new(),
        }
    }

    /// Counts the call and returns the fault it must fail with, if an armed rule says so (IO11).
    fn check(&mut self, op: Op, path: &Path, other: Option<&Path>) -> Option<Fault> {
        if self.down {
            return Some(Fault::Eio);
        }
        *self.calls.entry((op, path.to_path_buf(), other.map(Path::to_path_buf))).or_insert(0) += 1;
        let mut fault = None;
        self.rules.retain_mut(|armed| {
            if armed.rule.op != op || !matches(armed.rule.path.as_deref(), path, other) {
                return true;
            }
            armed.seen += 1;
            let nth = armed.rule.nth.max(1);
            let fires = armed.seen == nth || (armed.rule.repeat && armed.seen > nth);
            if fires && fault.is_none() {
                fault = Some(armed.rule.fault);
            }
            // A one-shot rule is done once it fired.
            !fires || armed.rule.repeat
        });
        fault
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }

    /// Renames the file or directory `from` to `to` (one `Op::Rename` call), or fails with
    /// `AlreadyExists` where `no_replace` and something is at `to` (IO15).
    fn rename(&mut self, from: &Path, to: &Path, no_replace: bool) -> io::Result<()> {
        if let Some(f) = self.check(Op::Rename, from, Some(to)) {
            return Err(f.to_io_error());
        }
        if no_replace && (self.names.contains_key(to) || self.is_dir(to)) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        if self.is_dir(from) {
            return self.rename_dir(from, to);
        }
        if self.is_dir(to) {
            return Err(errno(libc::EISDIR));
        }
        if !self.is_dir(&parent_of(to)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let ino = self.names.remove(from).ok_or(io::ErrorKind::NotFound)?;
        self.names.insert(to.to_path_buf(), ino);
        Ok(())
    }

    /// Renames the directory `from` to `to`, which must not exist or be an empty directory
    /// (replaced), with everything under it (IO9: at once durable, as directories are).
    fn rename_dir(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if to.starts_with(from) {
            return Err(errno(libc::EINVAL));
        }
        if self.names.contains_key(to) {
            return Err(errno(libc::ENOTDIR));
        }
        if !self.is_dir(&parent_of(to)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let under = |p: &Path, dir: &Path| p != dir && p.starts_with(dir);
        if self.names.keys().any(|p| under(p, to)) || self.dirs.iter().any(|p| under(p, to)) {
            return Err(io::ErrorKind::DirectoryNotEmpty.into());
        }
        let moved = |p: &Path| p.strip_prefix(from).map(|rest| to.join(rest)).ok();
        self.dirs.remove(to);
        self.dirs = std::mem::take(&mut self.dirs).into_iter().map(|d| moved(&d).unwrap_or(d)).collect();
        for names in [&mut self.names, &mut self.durable_names] {
            *names =
                std::mem::take(names).into_iter().map(|(p, ino)| (moved(&p).unwrap_or(p), ino)).collect();
        }
        Ok(())
    }

    fn crash(&mut self, how: CrashMode) {
        let seed = match how {
            CrashMode::Torn { seed } => seed,
            CrashMode::DropUnsynced | CrashMode::KeepUnsynced => 0,
        };
        let mut rng = SmallRng::seed_from_u64(seed);
        let live: BTreeSet<u64> = self.durable_names.values().copied().collect();
        self.inodes.retain(|ino, _| live.contains(ino));
        for inode in self.inodes.values_mut() {
            let mut bytes = std::mem::take(&mut inode.durable);
            for change in inode.unsynced.drain(..) {
                match (how, change) {
                    (CrashMode::DropUnsynced, _) => {}
                    (CrashMode::KeepUnsynced, change) => apply(&mut bytes, &change),
                    (CrashMode::Torn { .. }, change @ Change::SetLen(_)) => {
                        if rng.gen_bool(0.5) {
                            apply(&mut bytes, &change);
                        }
                    }
                    (CrashMode::Torn { .. }, Change::Write { offset, data }) => {
                        // Cut the write at the file's sector boundaries.
                        let mut at = 0usize;
                        while at < data.len() {
                            let pos = offset + at as u64;
                            let room = (SECTOR - pos % SECTOR) as usize;
                            let piece = &data[at..(at + room).min(data.len())];
                            if rng.gen_bool(0.5) {
                                apply_write(&mut bytes, pos, piece);
                            }
                            at += piece.len();
                        }
                    }
                }
            }
            inode.visible.clone_from(&bytes);
            inode.durable = bytes;
        }
        self.names = self.durable_names.clone();
        self.locks.clear();
        self.epoch += 1;
    }
}

/// An in-memory file system that can crash and fail chosen calls (module docs; README IO9–IO13).
#[derive(Clone, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

impl Default for State {
    fn default() -> State {
        State::new()
    }
}

impl fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: formatting must not wait for (or deadlock with) a call in progress.
        match self.state.try_lock() {
            Ok(st) => f
                .debug_struct("FaultFs")
                .field("files", &st.names.keys().collect::<Vec<_>>())
                .field("epoch", &st.epoch)
                .finish_non_exhaustive(),
            Err(_) => f.write_str("FaultFs { <busy> }"),
        }
    }
}

impl FaultFs {
    /// An empty file system: only the root directories `""` (relative paths) and `/` exist.
    #[must_use]
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the state from the others.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Simulates power loss (IO10): the visible state becomes the durable names and durable bytes
    /// plus, per `how`, the unsynced changes that survive. Every handle opened before the call
    /// fails every later call with `EIO`.
    pub fn crash(&self, how: CrashMode) {
        self.lock().crash(how);
    }

    /// A power loss that keeps the power off (IO10): [`FaultFs::crash`], and then every call —
    /// by handle or by path, from any thread — fails with `EIO` until [`FaultFs::power_on`]. So
    /// threads of the dead engine instance that are still running (a checkpointer, a cleaner,
    /// the drop of the database) cannot remove, rename or create files in the state that
    /// survived, which no real process could do after a power loss.
    pub fn power_off(&self, how: CrashMode) {
        let mut st = self.lock();
        st.crash(how);
        st.down = true;
    }

    /// Ends [`FaultFs::power_off`]: calls work again (handles opened before it stay dead).
    pub fn power_on(&self) {
        self.lock().down = false;
    }

    /// Arms a fault rule (IO11). Rules stay armed until they fire (or forever if repeating) or
    /// [`FaultFs::clear_faults`] is called; several may be armed at once.
    pub fn fail_next(&self, rule: FaultRule) {
        self.lock().rules.push(Armed { rule, seen: 0 });
    }

    /// Disarms every fault rule.
    pub fn clear_faults(&self) {
        self.lock().rules.clear();
    }

    /// How many calls of `op` on paths containing `filter` (`None`: any path) were made since
    /// this file system was created, failed ones included; calls on stale handles are not counted.
    #[must_use]
    pub fn calls(&self, op: Op, filter: Option<&str>) -> u64 {
        self.lock()
            .calls
            .iter()
            .filter(|((o, p, q), _)| *o == op && matches(filter, p, q.as_deref()))
            .map(|(_, n)| n)
            .sum()
    }

    /// The visible bytes of the file at `path`, or `None` if there is none (for inspection).
    #[must_use]
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        st.names.get(path).map(|ino| st.inodes[ino].visible.clone())
    }

    /// How many unsynced changes (writes, length changes) the file at `path` has.
    #[must_use]
    pub fn unsynced_changes(&self, path: &Path) -> usize {
        let st = self.lock();
        st.names.get(path).map_or(0, |ino| st.inodes[ino].unsynced.len())
    }
}

impl Vfs for FaultFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut st = self.lock();
        if let Some(f) = st.check(Op::Open, path, None) {
            return Err(f.to_io_error());
        }
        if st.is_dir(path) {
            return Err(errno(libc::EISDIR));
        }
        let ino = match (st.names.get(path).copied(), mode.create_new) {
            (Some(_), true) => return Err(io::ErrorKind::AlreadyExists.into()),
            (Some(ino), false) => ino,
            (None, false) => return Err(io::ErrorKind::NotFound.into()),
            (None, true) => {
                if !st.is_dir(&parent_of(path)) {
                    return Err(io::ErrorKind::NotFound.into());
                }
                let ino = st.next_inode;
                st.next_inode += 1;
                st.inodes.insert(ino, Inode::default());
                st.names.insert(path.to_path_buf(), ino);
                ino
            }
        };
        Ok(Arc::new(FaultFile {
            fs: self.clone(),
            inode: ino,
            epoch: st.epoch,
            description: crate::flock::new_description(),
            path: path.to_path_buf(),
            direct: mode.direct,
        }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if let Some(f) = st.check(Op::Remove, path, None) {
            return Err(f.to_io_error());
        }
        if st.is_dir(path) {
            return Err(errno(libc::EISDIR));
        }
        // Open handles keep the contents (POSIX unlink); a crash drops them.
        st.names.remove(path).map(|_| ()).ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if let Some(f) = st.check(Op::Remove, dir, None) {
            return Err(f.to_io_error());
        }
        if !st.is_dir(dir) {
            return Err(if st.names.contains_key(dir) {
                errno(libc::ENOTDIR)
            } else {
                io::ErrorKind::NotFound.into()
            });
        }
        let holds = |p: &Path| p != dir && p.starts_with(dir);
        if st.names.keys().any(|p| holds(p)) || st.dirs.iter().any(|p| holds(p)) {
            return Err(io::ErrorKind::DirectoryNotEmpty.into());
        }
        st.dirs.remove(dir);
        // Durable at once (IO9), and so are the removals of the entries it held: no crash
        // brings back a file under a directory that is gone.
        st.durable_names.retain(|p, _| !p.starts_with(dir));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.lock().rename(from, to, false)
    }

    fn rename_no_replace(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.lock().rename(from, to, true)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut st = self.lock();
        if let Some(f) = st.check(Op::List, dir, None) {
            return Err(f.to_io_error());
        }
        if !st.is_dir(dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let files = st.names.keys().filter(|p| parent_of(p) == dir);
        let dirs = st.dirs.iter().filter(|p| p.parent() == Some(dir) && p.as_os_str() != dir.as_os_str());
        Ok(files.chain(dirs).cloned().collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if st.down {
            return Err(errno(libc::EIO));
        }
        for d in dir.ancestors() {
            if st.names.contains_key(d) {
                return Err(io::ErrorKind::AlreadyExists.into());
            }
        }
        for d in dir.ancestors() {
            st.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if let Some(f) = st.check(Op::SyncDir, dir, None) {
            return Err(f.to_io_error());
        }
        if !st.is_dir(dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let st = &mut *st;
        st.durable_names.retain(|p, _| parent_of(p) != dir);
        for (p, ino) in &st.names {
            if parent_of(p) == dir {
                st.durable_names.insert(p.clone(), *ino);
            }
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.lock();
        st.names.contains_key(path) || st.is_dir(path)
    }

    /// Not counted and taking no fault rule, as the lock calls (IO5, IO11).
    fn file_id(&self, path: &Path) -> io::Result<Option<FileId>> {
        let st = self.lock();
        st.names.get(path).map(|&ino| Some(FileId(0, ino))).ok_or_else(|| io::ErrorKind::NotFound.into())
    }
}

/// A handle on a [`FaultFs`] file.
struct FaultFile {
    fs: FaultFs,
    inode: u64,
    /// The crash epoch the handle was opened in (IO10).
    epoch: u64,
    /// Its open file description, which holds the file's lock (IO5).
    description: u64,
    path: PathBuf,
    direct: bool,
}

impl Drop for FaultFile {
    /// The last clone of the handle lets its lock go (IO5); a handle of a crashed epoch holds
    /// none.
    fn drop(&mut self) {
        let mut st = self.fs.lock();
        if st.epoch == self.epoch {
            release(&mut st, self.inode, self.description);
        }
    }
}

/// Lets `description`'s lock on `inode` go, forgetting the inode's holders once none is left.
fn release(st: &mut State, inode: u64, description: u64) {
    if let Some(holders) = st.locks.get_mut(&inode) {
        holders.unlock(description);
        if holders.is_free() {
            st.locks.remove(&inode);
        }
    }
}

impl fmt::Debug for FaultFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFile").field("path", &self.path).field("direct", &self.direct).finish()
    }
}

impl FaultFile {
    /// Locks the file system for a call of `op`: fails stale handles (IO10), then counts the call
    /// and applies the fault rules (IO11).
    fn enter(&self, op: Op) -> io::Result<(MutexGuard<'_, State>, Option<Fault>)> {
        let mut st = self.fs.lock();
        if st.epoch != self.epoch {
            return Err(errno(libc::EIO));
        }
        let fault = st.check(op, &self.path, None);
        Ok((st, fault))
    }

    /// The state for a lock call (IO5): stale handles and a powered-off file system fail with
    /// `EIO` as every call does (IO10); lock calls are not counted and take no fault rule.
    fn enter_lock(&self) -> io::Result<MutexGuard<'_, State>> {
        let st = self.fs.lock();
        if st.epoch != self.epoch || st.down {
            return Err(errno(libc::EIO));
        }
        Ok(st)
    }

    /// IO4: direct handles need aligned offsets, lengths and buffers.
    fn check_direct(&self, addr: usize, len: usize, offset: u64) -> io::Result<()> {
        let a = DIRECT_ALIGN as usize;
        if self.direct
            && (!addr.is_multiple_of(a) || !len.is_multiple_of(a) || !offset.is_multiple_of(DIRECT_ALIGN))
        {
            return Err(errno(libc::EINVAL));
        }
        Ok(())
    }
}

impl VfsFile for FaultFile {
    fn id(&self) -> io::Result<Option<FileId>> {
        Ok(Some(FileId(0, self.inode)))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let (st, fault) = self.enter(Op::Read)?;
        if let Some(f) = fault {
            return Err(f.to_io_error());
        }
        self.check_direct(buf.as_ptr() as usize, buf.len(), offset)?;
        Ok(crate::mem::read_from(&st.inodes[&self.inode].visible, buf, offset))
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let (mut st, fault) = self.enter(Op::Write)?;
        self.check_direct(buf.as_ptr() as usize, buf.len(), offset)?;
        checked_end(offset, buf.len())?;
        let data = match fault {
            None => buf,
            // IO12: a full device still took the write's first sector.
            Some(Fault::Enospc) => &buf[..buf.len().min((SECTOR - offset % SECTOR) as usize)],
            Some(f) => return Err(f.to_io_error()),
        };
        let inode = st.inodes.get_mut(&self.inode).expect("a handle's inode lives until a crash");
        apply_write(&mut inode.visible, offset, data);
        inode.unsynced.push(Change::Write { offset, data: data.to_vec() });
        match fault {
            Some(f) => Err(f.to_io_error()),
            None => Ok(()),
        }
    }

    fn sync(&self) -> io::Result<()> {
        let (mut st, fault) = self.enter(Op::Sync)?;
        let inode = st.inodes.get_mut(&self.inode).expect("a handle's inode lives until a crash");
        let changes = std::mem::take(&mut inode.unsynced);
        if let Some(f) = fault {
            // IO12: like Linux after a failed writeback, the unsynced changes stay visible but are
            // forgotten: no later sync makes them durable.
            return Err(f.to_io_error());
        }
        for change in &changes {
            apply(&mut inode.durable, change);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let (st, fault) = self.enter(Op::Len)?;
        if let Some(f) = fault {
            return Err(f.to_io_error());
        }
        Ok(st.inodes[&self.inode].visible.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let (mut st, fault) = self.enter(Op::SetLen)?;
        if let Some(f) = fault {
            return Err(f.to_io_error());
        }
        if len > MAX_FILE_LEN {
            return Err(errno(libc::EFBIG));
        }
        let inode = st.inodes.get_mut(&self.inode).expect("a handle's inode lives until a crash");
        apply(&mut inode.visible, &Change::SetLen(len));
        inode.unsynced.push(Change::SetLen(len));
        Ok(())
    }

    fn try_lock(&self) -> io::Result<bool> {
        let mut st = self.enter_lock()?;
        Ok(st.locks.entry(self.inode).or_default().try_lock(self.description))
    }

    fn try_lock_shared(&self) -> io::Result<bool> {
        let mut st = self.enter_lock()?;
        Ok(st.locks.entry(self.inode).or_default().try_lock_shared(self.description))
    }

    /// A crash let the locks of older handles go already: theirs does nothing.
    fn unlock(&self) -> io::Result<()> {
        let mut st = self.fs.lock();
        if st.epoch == self.epoch {
            release(&mut st, self.inode, self.description);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// IO15 on every file system of the crate: `rename_no_replace` moves a file or a directory
    /// onto a missing name, and refuses an existing file, an empty directory and one with
    /// entries with `AlreadyExists`, leaving both names as they were.
    #[test]
    fn io15_rename_no_replace_refuses_every_existing_name() {
        let scratch = std::env::temp_dir().join(format!("swizzledb-io15-{}", std::process::id()));
        let systems: [(&dyn Vfs, PathBuf); 3] = [
            (&crate::OsFs, scratch.clone()),
            (&crate::MemFs::new(), PathBuf::from("/d")),
            (&FaultFs::new(), PathBuf::from("/d")),
        ];
        for (vfs, dir) in systems {
            vfs.create_dir_all(&dir.join("log")).unwrap();
            vfs.open(&dir.join("log/segment"), OpenMode::CREATE_NEW).unwrap();
            vfs.create_dir_all(&dir.join("empty")).unwrap();
            vfs.open(&dir.join("file"), OpenMode::CREATE_NEW).unwrap().write_all_at(b"mine", 0).unwrap();
            vfs.open(&dir.join("other"), OpenMode::CREATE_NEW).unwrap().write_all_at(b"theirs", 0).unwrap();
            for (from, to) in
                [("file", "other"), ("file", "empty"), ("file", "log"), ("log", "other"), ("log", "empty")]
            {
                let e = vfs.rename_no_replace(&dir.join(from), &dir.join(to)).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{vfs:?}: {from} onto {to}");
                assert!(vfs.exists(&dir.join(from)), "{vfs:?}: {from} onto {to}");
            }
            let mut buf = [0u8; 6];
            vfs.open(&dir.join("other"), OpenMode::EXISTING).unwrap().read_exact_at(&mut buf, 0).unwrap();
            assert_eq!(&buf, b"theirs", "{vfs:?}");
            vfs.rename_no_replace(&dir.join("file"), &dir.join("moved")).unwrap();
            vfs.rename_no_replace(&dir.join("log"), &dir.join("moved-log")).unwrap();
            assert!(!vfs.exists(&dir.join("file")) && vfs.exists(&dir.join("moved")), "{vfs:?}");
            assert!(vfs.exists(&dir.join("moved-log/segment")) && !vfs.exists(&dir.join("log")), "{vfs:?}");
        }
        std::fs::remove_dir_all(&scratch).unwrap();
    }

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// IO5 on the file systems in memory, as on the operating system's: one exclusive holder or
    /// many shared ones per file, held by the open (its handle's clones share it), let go by
    /// `unlock` or the last clone's drop. They granted every request, so two read-write opens
    /// of one database on a `MemFs` or `FaultFs` both went on.
    #[test]
    fn io5_the_file_systems_in_memory_keep_one_lock_holder_per_file() {
        let fault = FaultFs::new();
        for vfs in [&crate::MemFs::new() as &dyn Vfs, &fault] {
            let path = Path::new("/f");
            let a = vfs.open(path, OpenMode::CREATE_NEW).unwrap();
            let b = vfs.open(path, OpenMode::EXISTING).unwrap();
            let a2 = Arc::clone(&a);
            assert!(a.try_lock().unwrap() && a2.try_lock().unwrap(), "the holder's clone holds it too");
            assert!(!b.try_lock().unwrap() && !b.try_lock_shared().unwrap(), "another open is refused");
            drop(a);
            assert!(!b.try_lock().unwrap(), "a clone still holds it");
            drop(a2);
            assert!(b.try_lock_shared().unwrap(), "the last clone's drop lets it go");
            let c = vfs.open_read_only(path).unwrap();
            assert!(c.try_lock_shared().unwrap(), "shared locks share");
            assert!(!c.try_lock().unwrap(), "not exclusive while another shares it");
            b.unlock().unwrap();
            assert!(c.try_lock().unwrap(), "unlock hands it on");
        }
        // A crash ends the crashed process's locks: a new open after it locks, the old
        // handle's unlock and drop change nothing of the new holder's.
        let old = fault.open(Path::new("/g"), OpenMode::CREATE_NEW).unwrap();
        fault.sync_dir(Path::new("/")).unwrap();
        assert!(old.try_lock().unwrap());
        fault.crash(CrashMode::DropUnsynced);
        let new = fault.open(Path::new("/g"), OpenMode::EXISTING).unwrap();
        assert!(new.try_lock().unwrap(), "the crash let the old lock go");
        old.unlock().unwrap();
        drop(old);
        let other = fault.open(Path::new("/g"), OpenMode::EXISTING).unwrap();
        assert!(!other.try_lock_shared().unwrap(), "the new holder still holds it");
    }

    /// A file system with directory `/d` and a synced file `/d/f` holding `init`.
    fn with_file(init: &[u8]) -> (FaultFs, Arc<dyn VfsFile>) {
        let fs = FaultFs::new();
        fs.create_dir_all(&p("/d")).unwrap();
        let f = fs.open(&p("/d/f"), OpenMode::CREATE_NEW).unwrap();
        f.write_all_at(init, 0).unwrap();
        f.sync().unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        (fs, f)
    }

    fn read_all(fs: &FaultFs, path: &str) -> Vec<u8> {
        let f = fs.open(&p(path), OpenMode::EXISTING).unwrap();
        let mut buf = vec![0u8; f.len().unwrap() as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    fn raw(e: &io::Error) -> Option<i32> {
        e.raw_os_error()
    }

    #[test]
    fn io10_drop_unsynced_keeps_exactly_the_synced_bytes() {
        let (fs, f) = with_file(b"synced data");
        f.write_all_at(b"LOST", 0).unwrap();
        f.write_all_at(b" and more", 11).unwrap();
        assert_eq!(read_all(&fs, "/d/f"), b"LOSTed data and more", "reads see unsynced writes");
        fs.crash(CrashMode::DropUnsynced);
        assert_eq!(read_all(&fs, "/d/f"), b"synced data");
    }

    #[test]
    fn io10_keep_unsynced_keeps_every_write_and_length_change() {
        let (fs, f) = with_file(b"synced data");
        f.write_all_at(b"KEPT", 0).unwrap();
        f.set_len(6).unwrap();
        f.write_all_at(b"!", 8).unwrap();
        fs.crash(CrashMode::KeepUnsynced);
        assert_eq!(read_all(&fs, "/d/f"), b"KEPTed\0\0!");
        assert_eq!(fs.unsynced_changes(&p("/d/f")), 0, "after a crash everything is on disk");
    }

    #[test]
    fn io10_torn_crash_keeps_or_drops_whole_sectors_and_is_deterministic() {
        let old = vec![0x11u8; 4096];
        let mut mixed = 0;
        for seed in 0..16 {
            let (fs, f) = with_file(&old);
            // An unaligned write covering parts of sectors 0 and 8 and all of 1..=7.
            f.write_all_at(&[0xAA; 4096], 100).unwrap();
            fs.crash(CrashMode::Torn { seed });
            let got = read_all(&fs, "/d/f");
            let mut kept = Vec::new();
            for (i, sector) in got.chunks(SECTOR as usize).enumerate() {
                let lo = if i == 0 { 100 } else { 0 };
                let part = &sector[lo..];
                assert!(
                    part.iter().all(|&b| b == 0xAA) || part.iter().all(|&b| b == 0x11 || b == 0),
                    "seed {seed}: sector {i} is torn inside itself"
                );
                assert!(sector[..lo].iter().all(|&b| b == 0x11), "bytes before the write are untouched");
                kept.push(part[0] == 0xAA);
            }
            if kept.iter().any(|&k| k) && kept.iter().any(|&k| !k) {
                mixed += 1;
            }
            // Same history, same seed: same result.
            let (fs2, f2) = with_file(&old);
            f2.write_all_at(&[0xAA; 4096], 100).unwrap();
            fs2.crash(CrashMode::Torn { seed });
            assert_eq!(read_all(&fs2, "/d/f"), got, "seed {seed} is not deterministic");
        }
        assert!(mixed > 0, "16 seeds never tore a 9-sector write");
    }

    #[test]
    fn io10_synced_data_survives_every_mode() {
        for how in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn { seed: 7 }] {
            let (fs, f) = with_file(&[5u8; 2048]);
            f.write_all_at(&[6u8; 1024], 4096).unwrap();
            f.sync().unwrap();
            f.write_all_at(&[9u8; 100], 5000).unwrap();
            fs.crash(how);
            let got = read_all(&fs, "/d/f");
            assert_eq!(&got[..2048], &[5u8; 2048][..], "{how:?}");
            assert_eq!(&got[4096..5000], &[6u8; 904][..], "{how:?}");
        }
    }

    #[test]
    fn io2_directory_entries_are_durable_only_after_sync_dir() {
        let (fs, f) = with_file(b"x");
        drop(f);
        let g = fs.open(&p("/d/new"), OpenMode::CREATE_NEW).unwrap();
        g.write_all_at(b"new", 0).unwrap();
        g.sync().unwrap();
        fs.rename(&p("/d/f"), &p("/d/renamed")).unwrap();
        assert!(fs.exists(&p("/d/renamed")) && !fs.exists(&p("/d/f")), "renames are visible at once");
        fs.crash(CrashMode::KeepUnsynced);
        assert!(!fs.exists(&p("/d/new")), "a synced file without sync_dir is lost");
        assert!(fs.exists(&p("/d/f")) && !fs.exists(&p("/d/renamed")), "the rename is undone");

        fs.rename(&p("/d/f"), &p("/d/renamed")).unwrap();
        let g = fs.open(&p("/d/new"), OpenMode::CREATE_NEW).unwrap();
        g.write_all_at(b"new", 0).unwrap();
        g.sync().unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        fs.crash(CrashMode::DropUnsynced);
        assert_eq!(read_all(&fs, "/d/renamed"), b"x");
        assert_eq!(read_all(&fs, "/d/new"), b"new");
        let mut listed = fs.list(&p("/d")).unwrap();
        listed.sort();
        assert_eq!(listed, vec![p("/d/new"), p("/d/renamed")]);

        fs.remove(&p("/d/new")).unwrap();
        fs.crash(CrashMode::DropUnsynced);
        assert!(fs.exists(&p("/d/new")), "a remove without sync_dir is undone");
        fs.remove(&p("/d/new")).unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        fs.crash(CrashMode::DropUnsynced);
        assert!(!fs.exists(&p("/d/new")));
    }

    /// IO9: a directory renames with everything under it, its files' durable state included,
    /// and the rename is durable at once, as a directory's creation is; a target that holds
    /// entries is refused.
    #[test]
    fn io9_a_directory_renames_with_its_files() {
        let fs = FaultFs::new();
        fs.create_dir_all(&p("/d/a/sub")).unwrap();
        for (name, bytes) in [("/d/a/f", &b"f"[..]), ("/d/a/sub/g", b"g")] {
            let file = fs.open(&p(name), OpenMode::CREATE_NEW).unwrap();
            file.write_all_at(bytes, 0).unwrap();
            file.sync().unwrap();
        }
        fs.sync_dir(&p("/d/a")).unwrap();
        fs.sync_dir(&p("/d/a/sub")).unwrap();
        fs.create_dir_all(&p("/d/full")).unwrap();
        fs.open(&p("/d/full/x"), OpenMode::CREATE_NEW).unwrap();
        assert_eq!(
            fs.rename(&p("/d/a"), &p("/d/full")).unwrap_err().kind(),
            io::ErrorKind::DirectoryNotEmpty
        );
        fs.create_dir_all(&p("/d/empty")).unwrap();
        fs.rename(&p("/d/a"), &p("/d/empty")).unwrap();
        fs.crash(CrashMode::DropUnsynced);
        assert!(!fs.exists(&p("/d/a")) && !fs.exists(&p("/d/a/f")));
        assert_eq!(read_all(&fs, "/d/empty/f"), b"f");
        assert_eq!(read_all(&fs, "/d/empty/sub/g"), b"g");
        assert_eq!(fs.list(&p("/d/empty")).unwrap(), vec![p("/d/empty/f"), p("/d/empty/sub")]);
    }

    #[test]
    fn io3_rename_replaces_the_target() {
        let (fs, f) = with_file(b"old");
        drop(f);
        let t = fs.open(&p("/d/tmp"), OpenMode::CREATE_NEW).unwrap();
        t.write_all_at(b"new", 0).unwrap();
        t.sync().unwrap();
        fs.rename(&p("/d/tmp"), &p("/d/f")).unwrap();
        assert_eq!(read_all(&fs, "/d/f"), b"new");
        assert_eq!(fs.list(&p("/d")).unwrap(), vec![p("/d/f")]);
        fs.sync_dir(&p("/d")).unwrap();
        fs.crash(CrashMode::DropUnsynced);
        assert_eq!(read_all(&fs, "/d/f"), b"new");
    }

    #[test]
    fn io10_handles_opened_before_a_crash_fail_with_eio() {
        let (fs, f) = with_file(b"data");
        fs.crash(CrashMode::KeepUnsynced);
        let mut buf = [0u8; 4];
        assert_eq!(raw(&f.read_at(&mut buf, 0).unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&f.write_all_at(b"zz", 0).unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&f.sync().unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&f.len().unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&f.set_len(0).unwrap_err()), Some(libc::EIO));
        assert_eq!(read_all(&fs, "/d/f"), b"data", "the dead handle changed nothing");
        let before = fs.calls(Op::Write, None);
        let _ = f.write_all_at(b"zz", 0);
        assert_eq!(fs.calls(Op::Write, None), before, "stale calls are not counted");
    }

    #[test]
    fn io11_each_operation_can_be_failed_once() {
        let ops = [
            Op::Open,
            Op::Read,
            Op::Write,
            Op::Sync,
            Op::SetLen,
            Op::Len,
            Op::Remove,
            Op::Rename,
            Op::List,
            Op::SyncDir,
        ];
        for op in ops {
            let (fs, f) = with_file(b"abc");
            fs.fail_next(FaultRule::new(op, Fault::Eio));
            let call = |fs: &FaultFs, f: &Arc<dyn VfsFile>| -> io::Result<()> {
                match op {
                    Op::Open => fs.open(&p("/d/f"), OpenMode::EXISTING).map(|_| ()),
                    Op::Read => f.read_at(&mut [0u8; 3], 0).map(|_| ()),
                    Op::Write => f.write_all_at(b"xyz", 0),
                    Op::Sync => f.sync(),
                    Op::SetLen => f.set_len(3),
                    Op::Len => f.len().map(|_| ()),
                    Op::Remove => fs.remove(&p("/d/f")),
                    Op::Rename => fs.rename(&p("/d/f"), &p("/d/g")),
                    Op::List => fs.list(&p("/d")).map(|_| ()),
                    Op::SyncDir => fs.sync_dir(&p("/d")),
                }
            };
            let err = call(&fs, &f).expect_err("the armed call fails");
            assert_eq!(raw(&err), Some(libc::EIO), "{op:?}");
            assert_eq!(
                fs.calls(op, None),
                if matches!(op, Op::Sync | Op::Write | Op::Open | Op::SyncDir) { 2 } else { 1 },
                "{op:?}: the failed call is counted"
            );
            call(&fs, &f).unwrap_or_else(|e| panic!("{op:?}: a one-shot rule fails once, got {e}"));
        }
    }

    #[test]
    fn io11_nth_repeat_and_path_filters() {
        let (fs, f) = with_file(b"abc");
        let other = fs.open(&p("/d/other"), OpenMode::CREATE_NEW).unwrap();
        fs.fail_next(
            FaultRule::new(Op::Write, Fault::Kind(io::ErrorKind::PermissionDenied)).on_path("/f").nth(3),
        );
        other.write_all_at(b"1", 0).unwrap();
        other.write_all_at(b"2", 0).unwrap();
        other.write_all_at(b"3", 0).unwrap();
        f.write_all_at(b"1", 0).unwrap();
        f.write_all_at(b"2", 0).unwrap();
        assert_eq!(f.write_all_at(b"3", 0).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        f.write_all_at(b"4", 0).unwrap();
        assert_eq!(fs.calls(Op::Write, Some("/d/f")), 5, "one initial write and four here");
        assert_eq!(fs.calls(Op::Write, Some("other")), 3);
        assert_eq!(fs.calls(Op::Write, None), 8);

        fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).nth(2).repeating());
        f.sync().unwrap();
        for _ in 0..3 {
            assert_eq!(raw(&f.sync().unwrap_err()), Some(libc::EIO));
        }
        fs.clear_faults();
        f.sync().unwrap();

        fs.fail_next(FaultRule::new(Op::Rename, Fault::Eio).on_path("target"));
        fs.rename(&p("/d/other"), &p("/d/o2")).unwrap();
        assert_eq!(raw(&fs.rename(&p("/d/o2"), &p("/d/target")).unwrap_err()), Some(libc::EIO));
        assert!(fs.exists(&p("/d/o2")), "a failed rename changes nothing");
        assert_eq!(fs.calls(Op::Rename, Some("o2")), 2, "a rename matches by source or target");
    }

    #[test]
    fn io12_enospc_write_stores_its_first_sector() {
        let (fs, f) = with_file(&[1u8; 4096]);
        fs.fail_next(FaultRule::new(Op::Write, Fault::Enospc));
        let err = f.write_all_at(&[2u8; 4096], 0).unwrap_err();
        assert_eq!(raw(&err), Some(libc::ENOSPC));
        let got = read_all(&fs, "/d/f");
        assert_eq!(&got[..512], &[2u8; 512][..]);
        assert_eq!(&got[512..], &[1u8; 3584][..]);
        // From an unaligned offset the prefix ends at the next sector boundary.
        fs.fail_next(FaultRule::new(Op::Write, Fault::Enospc));
        f.write_all_at(&[3u8; 1000], 1000).unwrap_err();
        let got = read_all(&fs, "/d/f");
        assert_eq!(&got[1000..1024], &[3u8; 24][..]);
        assert_eq!(got[1024], 1);
        // EIO writes nothing.
        fs.fail_next(FaultRule::new(Op::Write, Fault::Eio));
        f.write_all_at(&[4u8; 10], 0).unwrap_err();
        assert_eq!(read_all(&fs, "/d/f")[0], 2);
    }

    #[test]
    fn io12_failed_sync_forgets_the_unsynced_writes() {
        let (fs, f) = with_file(b"old!");
        f.write_all_at(b"new!", 0).unwrap();
        fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio));
        assert!(f.sync().is_err());
        assert_eq!(read_all(&fs, "/d/f"), b"new!", "still visible");
        f.sync().expect("a retry reports success, as Linux does");
        fs.crash(CrashMode::KeepUnsynced);
        assert_eq!(read_all(&fs, "/d/f"), b"old!", "but the write never became durable");
    }

    #[test]
    fn io4_direct_handles_reject_misaligned_calls() {
        let fs = FaultFs::new();
        let f = fs.open(&p("db"), OpenMode { create_new: true, direct: true }).unwrap();
        let mut region = vec![0u8; 3 * 4096];
        let start = region.as_ptr().align_offset(4096);
        let aligned = &mut region[start..start + 4096];
        aligned.fill(7);
        f.write_all_at(aligned, 4096).expect("aligned write");
        f.read_exact_at(aligned, 4096).expect("aligned read");
        assert_eq!(raw(&f.write_all_at(aligned, 100).unwrap_err()), Some(libc::EINVAL), "offset");
        assert_eq!(raw(&f.write_all_at(&aligned[..512], 0).unwrap_err()), Some(libc::EINVAL), "length");
        let misaligned = &mut region[start + 1..start + 1 + 4096];
        assert_eq!(raw(&f.read_at(misaligned, 0).unwrap_err()), Some(libc::EINVAL), "buffer");
        let plain = fs.open(&p("db"), OpenMode::EXISTING).unwrap();
        plain.write_all_at(b"any", 3).expect("buffered handles take anything");
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let fs = FaultFs::new();
        assert_eq!(
            fs.open(&p("/missing/f"), OpenMode::CREATE_NEW).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(fs.open(&p("f"), OpenMode::EXISTING).unwrap_err().kind(), io::ErrorKind::NotFound);
        let f = fs.open(&p("f"), OpenMode::CREATE_NEW).unwrap();
        assert_eq!(fs.open(&p("f"), OpenMode::CREATE_NEW).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(raw(&f.write_all_at(b"x", u64::MAX).unwrap_err()), Some(libc::EFBIG));
        assert_eq!(raw(&f.set_len(MAX_FILE_LEN + 1).unwrap_err()), Some(libc::EFBIG));
        assert_eq!(f.read_at(&mut [0u8; 4], u64::MAX).unwrap(), 0);
        assert!(fs.remove(&p("nope")).is_err() && fs.rename(&p("nope"), &p("x")).is_err());
        assert!(fs.list(&p("/nope")).is_err() && fs.sync_dir(&p("/nope")).is_err());
        assert_eq!(fs.list(&p("")).unwrap(), vec![p("f")]);
    }

    /// The model of one file: its visible and durable bytes.
    #[derive(Clone, Debug, Default)]
    struct ModelFile {
        visible: Vec<u8>,
        durable: Vec<u8>,
    }

    #[derive(Clone, Debug)]
    enum Step {
        Create(usize),
        Write(usize, u64, usize, u8),
        SetLen(usize, u64),
        Sync(usize),
        SyncDir,
        Rename(usize, usize),
        Remove(usize),
        Crash(bool),
    }

    const NAMES: [&str; 3] = ["/d/a", "/d/b", "/d/c"];

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..3usize).prop_map(Step::Create),
            (0..3usize, 0..3000u64, 1..1200usize, any::<u8>())
                .prop_map(|(f, o, l, b)| Step::Write(f, o, l, b)),
            (0..3usize, 0..5000u64).prop_map(|(f, l)| Step::SetLen(f, l)),
            (0..3usize).prop_map(Step::Sync),
            Just(Step::SyncDir),
            (0..3usize, 0..3usize).prop_map(|(a, b)| Step::Rename(a, b)),
            (0..3usize).prop_map(Step::Remove),
            any::<bool>().prop_map(Step::Crash),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Random operation sequences against a model of visible and durable names and bytes.
        #[test]
        fn io2_io10_random_histories_match_the_model(steps in proptest::collection::vec(step(), 1..40)) {
            let fs = FaultFs::new();
            fs.create_dir_all(&p("/d")).unwrap();
            let mut inodes: Vec<ModelFile> = Vec::new();
            let mut names: BTreeMap<&str, usize> = BTreeMap::new();
            let mut durable_names: BTreeMap<&str, usize> = BTreeMap::new();
            for s in steps {
                match s {
                    Step::Create(i) => {
                        let r = fs.open(&p(NAMES[i]), OpenMode::CREATE_NEW);
                        prop_assert_eq!(r.is_ok(), !names.contains_key(NAMES[i]));
                        if r.is_ok() {
                            inodes.push(ModelFile::default());
                            names.insert(NAMES[i], inodes.len() - 1);
                        }
                    }
                    Step::Write(i, off, len, b) => if let Some(&ino) = names.get(NAMES[i]) {
                        let f = fs.open(&p(NAMES[i]), OpenMode::EXISTING).unwrap();
                        f.write_all_at(&vec![b; len], off).unwrap();
                        apply_write(&mut inodes[ino].visible, off, &vec![b; len]);
                    },
                    Step::SetLen(i, len) => if let Some(&ino) = names.get(NAMES[i]) {
                        fs.open(&p(NAMES[i]), OpenMode::EXISTING).unwrap().set_len(len).unwrap();
                        inodes[ino].visible.resize(len as usize, 0);
                    },
                    Step::Sync(i) => if let Some(&ino) = names.get(NAMES[i]) {
                        fs.open(&p(NAMES[i]), OpenMode::EXISTING).unwrap().sync().unwrap();
                        inodes[ino].durable = inodes[ino].visible.clone();
                    },
                    Step::SyncDir => {
                        fs.sync_dir(&p("/d")).unwrap();
                        durable_names = names.clone();
                    }
                    Step::Rename(a, b) => {
                        let r = fs.rename(&p(NAMES[a]), &p(NAMES[b]));
                        prop_assert_eq!(r.is_ok(), names.contains_key(NAMES[a]));
                        if let Some(ino) = names.remove(NAMES[a]) {
                            names.insert(NAMES[b], ino);
                        }
                    }
                    Step::Remove(i) => {
                        prop_assert_eq!(fs.remove(&p(NAMES[i])).is_ok(), names.remove(NAMES[i]).is_some());
                    }
                    Step::Crash(keep) => {
                        fs.crash(if keep { CrashMode::KeepUnsynced } else { CrashMode::DropUnsynced });
                        names = durable_names.clone();
                        for m in &mut inodes {
                            if keep {
                                m.durable = m.visible.clone();
                            } else {
                                m.visible = m.durable.clone();
                            }
                        }
                    }
                }
                for name in NAMES {
                    prop_assert_eq!(fs.exists(&p(name)), names.contains_key(name), "{}", name);
                    if let Some(&ino) = names.get(name) {
                        prop_assert_eq!(&read_all(&fs, name), &inodes[ino].visible, "{}", name);
                    }
                }
            }
        }
    }

    #[test]
    fn io10_power_off_refuses_calls_by_path_until_power_on() {
        let fs = FaultFs::new();
        fs.create_dir_all(&p("/d")).unwrap();
        let f = fs.open(&p("/d/a"), OpenMode::CREATE_NEW).unwrap();
        fs.sync_dir(&p("/d")).unwrap();
        f.write_all_at(b"x", 0).unwrap();
        f.sync().unwrap();
        fs.power_off(CrashMode::DropUnsynced);
        // A dead instance's thread cannot remove, rename, create or sync by path.
        assert_eq!(raw(&fs.remove(&p("/d/a")).unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&fs.rename(&p("/d/a"), &p("/d/b")).unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&fs.open(&p("/d/c"), OpenMode::CREATE_NEW).err().unwrap()), Some(libc::EIO));
        assert_eq!(raw(&fs.sync_dir(&p("/d")).unwrap_err()), Some(libc::EIO));
        assert_eq!(raw(&fs.create_dir_all(&p("/e")).unwrap_err()), Some(libc::EIO));
        fs.power_on();
        assert_eq!(fs.contents(&p("/d/a")).as_deref(), Some(&b"x"[..]), "the durable state survived");
        assert_eq!(raw(&f.sync().unwrap_err()), Some(libc::EIO), "old handles stay dead");
        fs.remove(&p("/d/a")).unwrap();
    }
}
