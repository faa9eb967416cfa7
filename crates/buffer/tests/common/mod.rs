//! Shared by the pool's integration tests: a minimal page owner (a root whose body is a list of
//! swips, and leaves), a log that records what the pool asks of it, and a file system wrapper
//! that records every page write in the same event list, so a test can check the order of log
//! flushes and page writes as they reach the file.

#![allow(dead_code)] // each test file uses its own part

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use swizzledb_buffer::page::{self, get_u16, get_u64, put_u16, put_u64, PageType, HEADER_SIZE};
use swizzledb_buffer::{
    BufferError, BufferPool, Exclusive, ExclusiveGuard, FrameId, LogFlush, Lsn, PageId, PageOwner,
    PoolConfig, PoolMode,
};
use swizzledb_io::fault::FaultFs;
use swizzledb_io::{OpenMode, Vfs, VfsFile};

/// Page size of every test pool.
pub const PS: usize = 4096;
/// Where a root keeps its child count; its swips follow at `SWIPS`.
const COUNT: usize = HEADER_SIZE;
const SWIPS: usize = HEADER_SIZE + 8;
/// The byte of a leaf that tests change.
pub const DATA: usize = HEADER_SIZE + 100;

/// Inner pages hold a count and that many swips; leaves hold none.
pub struct Owner;

impl PageOwner for Owner {
    fn swip_offsets(&self, page: &[u8], out: &mut Vec<usize>) {
        if page::page_type(page) == Some(PageType::Inner) {
            let n = usize::from(get_u16(page, COUNT)).min((page.len() - SWIPS) / 8);
            out.extend((0..n).map(slot));
        }
    }

    fn check_page(&self, page: &[u8]) -> Result<(), String> {
        if page::page_type(page) == Some(PageType::Inner)
            && usize::from(get_u16(page, COUNT)) > (page.len() - SWIPS) / 8
        {
            return Err("child count beyond the page".into());
        }
        Ok(())
    }
}

/// Offset of the root's `i`th swip.
pub fn slot(i: usize) -> usize {
    SWIPS + 8 * i
}

/// What the log and the file saw, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `LogFlush::flush_to` returned `Ok`.
    Flushed(Lsn),
    /// A whole page reached the file carrying this page LSN (recorded as the write is issued).
    Write(PageId, Lsn),
    /// `LogFlush::page_written`.
    Written(PageId, Lsn),
}

/// A log that records the pool's calls and can be told to fail.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<Event>>,
    pub fail: AtomicBool,
    /// Called with the page of every page-sized write before it is made (a test's pause point).
    pub before_write: Mutex<Option<WriteHook>>,
    /// Called with the page and the bytes of every page-sized read once it is made.
    pub after_read: Mutex<Option<ReadHook>>,
    /// When set, the log knows every page's newest write (`expected_page_lsn`, B25), so a
    /// stale copy is found; like a damaged one it then fails the fix (the recorder repairs
    /// nothing).
    pub expected: Mutex<Option<std::collections::HashMap<PageId, Lsn>>>,
}

/// A test's hook on page writes (see `Recorder::before_write`).
pub type WriteHook = Arc<dyn Fn(PageId) + Send + Sync>;

/// A test's hook on page reads (see `Recorder::after_read`).
pub type ReadHook = Arc<dyn Fn(PageId, &mut [u8]) + Send + Sync>;

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    pub fn set_failing(&self, on: bool) {
        self.fail.store(on, Ordering::SeqCst);
    }

    pub fn writes(&self) -> usize {
        self.events().iter().filter(|e| matches!(e, Event::Write(..))).count()
    }
}

impl LogFlush for Recorder {
    fn flush_to(&self, lsn: Lsn) -> io::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc_eio()));
        }
        self.events.lock().unwrap().push(Event::Flushed(lsn));
        Ok(())
    }

    fn page_written(&self, page: PageId, page_lsn: Lsn) {
        if let Some(expected) = self.expected.lock().unwrap().as_mut() {
            let e = expected.entry(page).or_insert(page_lsn);
            *e = (*e).max(page_lsn);
        }
        self.events.lock().unwrap().push(Event::Written(page, page_lsn));
    }

    fn expected_page_lsn(&self, page: PageId) -> Option<Lsn> {
        self.expected.lock().unwrap().as_ref().and_then(|e| e.get(&page).copied())
    }
}

/// EIO on Linux.
pub fn libc_eio() -> i32 {
    5
}

/// The WAL rule checked on the event list (B18, B20): every page write carrying a non-zero page
/// LSN L comes after a successful `flush_to(L')` with L' >= L, and every `page_written(p, L)`
/// follows a write of `p` carrying L, with no other write of `p` in between (writes of one page
/// never overlap: each happens under the page's latch). Returns the number of page writes with
/// an LSN.
pub fn check_wal_order(events: &[Event]) -> usize {
    let mut durable = Lsn(0);
    let mut last_write = std::collections::HashMap::new();
    let mut logged_writes = 0;
    for (i, e) in events.iter().enumerate() {
        match *e {
            Event::Flushed(l) => durable = durable.max(l),
            Event::Write(p, l) => {
                if l != Lsn(0) {
                    assert!(
                        l <= durable,
                        "event {i}: {p:?} written with {l} but the log is durable only to {durable}"
                    );
                    logged_writes += 1;
                }
                last_write.insert(p, l);
            }
            Event::Written(p, l) => {
                assert_eq!(
                    last_write.get(&p),
                    Some(&l),
                    "event {i}: page_written({p:?}, {l}) without that write"
                );
            }
        }
    }
    logged_writes
}

/// A `Vfs` that records every whole-page write into the recorder's event list.
#[derive(Debug, Clone)]
pub struct RecordingFs {
    pub inner: FaultFs,
    rec: Arc<RecorderHandle>,
}

/// `Recorder` behind a `Debug` wrapper (the `Vfs` traits need `Debug`).
pub struct RecorderHandle(pub Arc<Recorder>);

impl std::fmt::Debug for RecorderHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

impl RecordingFs {
    pub fn new(inner: FaultFs, rec: Arc<Recorder>) -> RecordingFs {
        RecordingFs { inner, rec: Arc::new(RecorderHandle(rec)) }
    }
}

#[derive(Debug)]
struct RecordingFile {
    inner: Arc<dyn VfsFile>,
    rec: Arc<RecorderHandle>,
}

impl VfsFile for RecordingFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        if buf.len() == PS && offset.is_multiple_of(PS as u64) {
            let hook = self.rec.0.after_read.lock().unwrap().clone();
            if let Some(hook) = hook {
                hook(PageId::new(offset / PS as u64).expect("small offset"), buf);
            }
        }
        Ok(n)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if buf.len() == PS && offset.is_multiple_of(PS as u64) {
            let page = PageId::new(offset / PS as u64).expect("small offset");
            let hook = self.rec.0.before_write.lock().unwrap().clone();
            if let Some(hook) = hook {
                hook(page);
            }
            self.rec.0.events.lock().unwrap().push(Event::Write(page, page::page_lsn(buf)));
        }
        self.inner.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}

impl Vfs for RecordingFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let inner = self.inner.open(path, mode)?;
        Ok(Arc::new(RecordingFile { inner, rec: self.rec.clone() }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
}

/// The database path every test uses.
pub fn db_path() -> &'static Path {
    Path::new("/t/db")
}

/// A pool config on `vfs` with `frames` frames of 4 KiB.
pub fn config(
    vfs: Arc<dyn Vfs>,
    mode: PoolMode,
    frames: usize,
    log: Option<Arc<dyn LogFlush>>,
) -> PoolConfig {
    PoolConfig { vfs, mode, pool_bytes: frames * PS, page_size: PS, log, ..PoolConfig::default() }
}

/// Creates the directory and a pool on `fs`.
pub fn create(fs: &FaultFs, config: &PoolConfig) -> BufferPool {
    fs.create_dir_all(Path::new("/t")).expect("mkdir");
    BufferPool::create(db_path(), config, Arc::new(Owner)).expect("create pool")
}

/// Hands out increasing LSNs.
#[derive(Default)]
pub struct Lsns(pub u64);

impl Lsns {
    pub fn next(&mut self) -> Lsn {
        self.0 += 1;
        Lsn(self.0)
    }
}

/// Makes a root (an inner page), records it in the catalog as `t` and keeps it resident.
pub fn make_root(pool: &BufferPool, lsns: &mut Lsns) -> FrameId {
    let mut g = pool.allocate_page().expect("root");
    let pid = g.page_id();
    page::format(&mut g, pid, PageType::Inner, 1);
    put_u16(&mut g, COUNT, 0);
    g.set_page_lsn(lsns.next());
    pool.make_root(&g);
    pool.catalog_insert("t", pid).expect("catalog");
    g.frame()
}

/// Adds a leaf under the root with `DATA` set to `value`, logged at a new LSN; the root's change
/// is logged too. Returns the leaf's page id.
pub fn add_leaf(pool: &BufferPool, root: FrameId, value: u8, lsns: &mut Lsns) -> PageId {
    let mut leaf = pool.allocate_page().expect("leaf");
    leaf[DATA] = value;
    leaf.set_page_lsn(lsns.next());
    let pid = leaf.page_id();
    let mut r = pool.fix_root::<Exclusive>(root);
    let n = usize::from(get_u16(&r, COUNT));
    let swip = pool.swip_for(&leaf, &r);
    put_u64(&mut r, slot(n), swip.raw());
    put_u16(&mut r, COUNT, u16::try_from(n + 1).expect("few children"));
    r.set_page_lsn(lsns.next());
    pid
}

/// Fixes the root's `i`th child exclusively and runs `f` on it, making room and retrying when
/// the pool is exhausted (B13: the latched root keeps its swizzled children resident).
pub fn with_child<T>(
    pool: &BufferPool,
    root: FrameId,
    i: usize,
    mut f: impl FnMut(&mut ExclusiveGuard<'_>) -> T,
) -> Result<T, BufferError> {
    loop {
        let mut r = pool.fix_root::<Exclusive>(root);
        match pool.fix_child::<Exclusive, Exclusive>(&mut r, slot(i)) {
            Ok(mut c) => return Ok(f(&mut c)),
            Err(BufferError::PoolExhausted { .. }) => {
                drop(r);
                pool.make_room()?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The raw swip in the root's slot `i` (a page id once unswizzled).
pub fn root_swip(pool: &BufferPool, root: FrameId, i: usize) -> u64 {
    get_u64(&pool.fix_root::<swizzledb_buffer::Shared>(root), slot(i))
}
