//! Helpers shared by the log tests: a small configuration, a way to collect a scan, and a test
//! file system that wraps the real one and can fail the k-th write or sync, or hold syncs at a
//! gate until the test opens it.

#![allow(dead_code)] // each test file uses a different part

use parking_lot::{Condvar, Mutex};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use swizzledb_io::{OpenMode, OsFs, Vfs, VfsFile};
use swizzledb_wal::{LogConfig, LogManager, Lsn};

/// A configuration with small segments and buffer and no background flusher, so tests decide
/// when data reaches the files.
pub fn small_config(dir: &Path) -> LogConfig {
    LogConfig { segment_bytes: 4096, buffer_bytes: 8192, flush_interval: None, ..LogConfig::new(dir) }
}

/// Every record from the oldest on, panicking on any error.
pub fn scan_all(log: &LogManager) -> Vec<(Lsn, Vec<u8>)> {
    log.scan(Lsn(0)).expect("scan").collect::<Result<_, _>>().expect("scan item")
}

/// The segment files of a log directory, sorted by name.
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

/// What the test file system does; shared by all files it opens.
#[derive(Debug, Default)]
pub struct Faults {
    /// Writes and syncs so far (1-based counts after each call).
    pub writes: AtomicU64,
    pub syncs: AtomicU64,
    /// Calls of `allocate`.
    pub allocates: AtomicU64,
    /// Fail the write / sync with this number (0: never).
    pub fail_write_at: AtomicU64,
    pub fail_sync_at: AtomicU64,
    /// Syncs currently held at the gate.
    pub held: AtomicU64,
    gate_closed: Mutex<bool>,
    gate: Condvar,
}

impl Faults {
    /// Makes later syncs wait until [`Faults::open_gate`].
    pub fn close_gate(&self) {
        *self.gate_closed.lock() = true;
    }

    /// Lets held and later syncs through.
    pub fn open_gate(&self) {
        *self.gate_closed.lock() = false;
        self.gate.notify_all();
    }
}

/// The real file system with [`Faults`] applied to file writes and syncs.
#[derive(Debug, Default)]
pub struct TestFs {
    pub faults: Arc<Faults>,
}

#[derive(Debug)]
struct TestFile {
    inner: Arc<dyn VfsFile>,
    faults: Arc<Faults>,
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure"))
}

impl VfsFile for TestFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let n = self.faults.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.faults.fail_write_at.load(Ordering::SeqCst) {
            // Half of the bytes reach the file, as in a real short write.
            self.inner.write_all_at(&buf[..buf.len() / 2], offset)?;
            return Err(injected("write"));
        }
        self.inner.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        let n = self.faults.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        {
            let mut closed = self.faults.gate_closed.lock();
            if *closed {
                self.faults.held.fetch_add(1, Ordering::SeqCst);
                while *closed {
                    self.faults.gate.wait(&mut closed);
                }
                self.faults.held.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if n == self.faults.fail_sync_at.load(Ordering::SeqCst) {
            return Err(injected("sync"));
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
        self.faults.allocates.fetch_add(1, Ordering::SeqCst);
        self.inner.allocate(offset, len)
    }
}

impl Vfs for TestFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        Ok(Arc::new(TestFile { inner: OsFs.open(path, mode)?, faults: Arc::clone(&self.faults) }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        OsFs.remove(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        OsFs.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        OsFs.rename(from, to)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        OsFs.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        OsFs.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        OsFs.sync_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        OsFs.exists(path)
    }
}
