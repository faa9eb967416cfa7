//! A file system in memory (README IO8): the backing of in-memory databases
//! (`Builder::create_in_memory`). Every call succeeds or fails as on a POSIX file system, and
//! nothing is durable beyond the process: `sync` and `sync_dir` do nothing, and the files go
//! with the last clone of the `MemFs` and of their handles.
//!
//! Unlike [`FaultFs`](crate::FaultFs), which keeps a visible and a durable copy of every file
//! under one mutex so that it can crash, a `MemFs` file is one byte vector behind its own
//! reader-writer lock: reads of a file run in parallel, and files do not wait for each other.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::flock::Holders;
use crate::vfs::{FileId, OpenMode, Vfs, VfsFile};

/// A file system in memory. Clones share it.
#[derive(Clone, Default)]
pub struct MemFs {
    tree: Arc<Mutex<Tree>>,
}

/// A panic while a lock was held cannot leave the names or bytes half changed (each change is
/// one insert, remove or copy), so a poisoned lock is taken as it is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// The names: files by path, and directories.
struct Tree {
    files: HashMap<PathBuf, Arc<MemFile>>,
    dirs: BTreeSet<PathBuf>,
}

impl Default for Tree {
    fn default() -> Tree {
        // The roots of relative and absolute paths exist, as `FaultFs`'s do.
        Tree { files: HashMap::new(), dirs: [PathBuf::from(""), PathBuf::from("/")].into() }
    }
}

impl Tree {
    /// Renames the file or directory `from` to `to` (POSIX `rename(2)`, IO8).
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if self.dirs.contains(from) {
            return self.rename_dir(from, to);
        }
        if self.dirs.contains(to) {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        if !self.dirs.contains(&parent_of(to)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let file = self.files.remove(from).ok_or(io::ErrorKind::NotFound)?;
        self.files.insert(to.to_path_buf(), file);
        Ok(())
    }

    /// Renames the directory `from` and everything under it to `to`, which must be missing or
    /// an empty directory (POSIX `rename(2)`, IO8).
    fn rename_dir(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if from == to {
            return Ok(());
        }
        if to.starts_with(from) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        if self.files.contains_key(to) {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        if !self.dirs.contains(&parent_of(to)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let under = |p: &Path, dir: &Path| p != dir && p.starts_with(dir);
        if self.files.keys().any(|p| under(p, to)) || self.dirs.iter().any(|p| under(p, to)) {
            return Err(io::ErrorKind::DirectoryNotEmpty.into());
        }
        let moved = |p: PathBuf| match p.strip_prefix(from) {
            Ok(rest) if rest.as_os_str().is_empty() => to.to_path_buf(),
            Ok(rest) => to.join(rest),
            Err(_) => p,
        };
        self.dirs.remove(to);
        self.dirs = std::mem::take(&mut self.dirs).into_iter().map(moved).collect();
        self.files = std::mem::take(&mut self.files).into_iter().map(|(p, f)| (moved(p), f)).collect();
        Ok(())
    }
}

/// The parent directory of `path` (`""` for a bare relative name).
fn parent_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tree = lock(&self.tree);
        let mut files: Vec<_> = tree.files.keys().collect();
        files.sort();
        f.debug_struct("MemFs").field("files", &files).finish_non_exhaustive()
    }
}

impl MemFs {
    /// An empty file system: only the root directories `""` (relative paths) and `/` exist.
    #[must_use]
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// Bytes held by its files (their lengths, summed).
    #[must_use]
    pub fn bytes(&self) -> u64 {
        lock(&self.tree).files.values().map(|f| read(&f.data).len() as u64).sum()
    }
}

/// A file of a [`MemFs`]; a removed or replaced file lives on while a handle holds it (POSIX
/// unlink).
#[derive(Debug, Default)]
struct MemFile {
    data: RwLock<Vec<u8>>,
    /// Its advisory lock's holders (IO5).
    locks: Mutex<Holders>,
}

/// A handle of a [`MemFile`]: one open file description, which holds the file's lock (IO5)
/// until it unlocks or its last clone is dropped.
#[derive(Debug)]
struct MemHandle {
    file: Arc<MemFile>,
    description: u64,
}

impl Drop for MemHandle {
    fn drop(&mut self) {
        lock(&self.file.locks).unlock(self.description);
    }
}

/// Reads `bytes` from `offset` into `buf` as [`VfsFile::read_at`] does: as many as there are,
/// zero at or past the end. Shared with `FaultFs`, whose files are byte vectors too.
pub(crate) fn read_from(bytes: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let Ok(at) = usize::try_from(offset) else { return 0 };
    if at >= bytes.len() {
        return 0;
    }
    let n = buf.len().min(bytes.len() - at);
    buf[..n].copy_from_slice(&bytes[at..at + n]);
    n
}

/// Writes `data` into `bytes` at `at`, extending them with zeros as far as needed. Shared with
/// `FaultFs`; the caller has checked that `at + data.len()` does not overflow.
pub(crate) fn write_into(bytes: &mut Vec<u8>, at: usize, data: &[u8]) {
    let end = at + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[at..end].copy_from_slice(data);
}

fn too_long() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "offset past what an in-memory file can hold")
}

impl VfsFile for MemHandle {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        Ok(read_from(&read(&self.file.data), buf, offset))
    }

    fn id(&self) -> io::Result<Option<FileId>> {
        Ok(Some(mem_id(&self.file)))
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let at = usize::try_from(offset).map_err(|_| too_long())?;
        at.checked_add(buf.len()).ok_or_else(too_long)?;
        write_into(&mut write(&self.file.data), at, buf);
        Ok(())
    }

    /// Nothing to do: nothing outlives the process (IO8).
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(read(&self.file.data).len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| too_long())?;
        let mut data = write(&self.file.data);
        data.resize(len, 0);
        if data.capacity() > 2 * len.max(4096) {
            data.shrink_to_fit();
        }
        Ok(())
    }

    fn try_lock(&self) -> io::Result<bool> {
        Ok(lock(&self.file.locks).try_lock(self.description))
    }

    fn try_lock_shared(&self) -> io::Result<bool> {
        Ok(lock(&self.file.locks).try_lock_shared(self.description))
    }

    fn unlock(&self) -> io::Result<()> {
        lock(&self.file.locks).unlock(self.description);
        Ok(())
    }
}

/// A new open file description of `file`.
fn handle(file: &Arc<MemFile>) -> Arc<dyn VfsFile> {
    Arc::new(MemHandle { file: Arc::clone(file), description: crate::flock::new_description() })
}

impl Vfs for MemFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut tree = lock(&self.tree);
        if tree.dirs.contains(path) {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        match (tree.files.get(path), mode.create_new) {
            (Some(_), true) => Err(io::ErrorKind::AlreadyExists.into()),
            (Some(f), false) => Ok(handle(f)),
            (None, false) => Err(io::ErrorKind::NotFound.into()),
            (None, true) => {
                if !tree.dirs.contains(&parent_of(path)) {
                    return Err(io::ErrorKind::NotFound.into());
                }
                let file = Arc::new(MemFile::default());
                tree.files.insert(path.to_path_buf(), Arc::clone(&file));
                Ok(handle(&file))
            }
        }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut tree = lock(&self.tree);
        if tree.dirs.contains(path) {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        tree.files.remove(path).map(|_| ()).ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut tree = lock(&self.tree);
        if !tree.dirs.contains(dir) {
            return Err(if tree.files.contains_key(dir) {
                io::Error::from_raw_os_error(libc::ENOTDIR)
            } else {
                io::ErrorKind::NotFound.into()
            });
        }
        let holds = |p: &Path| p != dir && p.starts_with(dir);
        if tree.files.keys().any(|p| holds(p)) || tree.dirs.iter().any(|p| holds(p)) {
            return Err(io::ErrorKind::DirectoryNotEmpty.into());
        }
        tree.dirs.remove(dir);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        lock(&self.tree).rename(from, to)
    }

    fn rename_no_replace(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut tree = lock(&self.tree);
        if tree.files.contains_key(to) || tree.dirs.contains(to) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        tree.rename(from, to)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let tree = lock(&self.tree);
        if !tree.dirs.contains(dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let files = tree.files.keys().filter(|p| parent_of(p) == dir);
        let dirs = tree.dirs.iter().filter(|p| p.parent() == Some(dir) && p.as_os_str() != dir.as_os_str());
        Ok(files.chain(dirs).cloned().collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut tree = lock(&self.tree);
        if dir.ancestors().any(|d| tree.files.contains_key(d)) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        for d in dir.ancestors() {
            tree.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    /// Nothing to do but check the directory exists: nothing outlives the process (IO8).
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if lock(&self.tree).dirs.contains(dir) {
            Ok(())
        } else {
            Err(io::ErrorKind::NotFound.into())
        }
    }

    fn exists(&self, path: &Path) -> bool {
        let tree = lock(&self.tree);
        tree.files.contains_key(path) || tree.dirs.contains(path)
    }

    fn file_id(&self, path: &Path) -> io::Result<Option<FileId>> {
        let tree = lock(&self.tree);
        tree.files.get(path).map(|f| Some(mem_id(f))).ok_or_else(|| io::ErrorKind::NotFound.into())
    }
}

/// A [`MemFile`]'s identity (IO16): its address, which no other file has while a handle or a
/// name holds it.
fn mem_id(file: &Arc<MemFile>) -> FileId {
    FileId(0, Arc::as_ptr(file) as usize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io8_positional_io_extends_with_zeros_and_reads_short_at_the_end() {
        let fs = MemFs::new();
        let f = fs.open(Path::new("/a"), OpenMode::CREATE_NEW).unwrap();
        f.write_all_at(b"xyz", 5).unwrap();
        assert_eq!(f.len().unwrap(), 8);
        let mut buf = [9u8; 10];
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 8);
        assert_eq!(&buf[..8], b"\0\0\0\0\0xyz");
        assert_eq!(f.read_at(&mut buf, 8).unwrap(), 0, "at the end");
        f.set_len(6).unwrap();
        let mut two = [0u8; 2];
        assert!(f.read_exact_at(&mut two, 5).is_err(), "cut to 6 bytes");
        f.allocate(0, 100).unwrap();
        assert_eq!(f.len().unwrap(), 100);
        f.read_exact_at(&mut two, 4).unwrap();
        assert_eq!(two, [0, b'x'], "allocate keeps the bytes written (IO6)");
        f.sync().unwrap();
        let got = f.write_all_at_batch(&[(b"ab", 0), (b"cd", 50)]);
        assert!(got.iter().all(Result::is_ok));
        f.read_exact_at(&mut two, 50).unwrap();
        assert_eq!(&two, b"cd");
    }

    #[test]
    fn io8_names_behave_as_posix_ones() {
        let fs = MemFs::new();
        let kind = |r: io::Result<Arc<dyn VfsFile>>| r.map(|_| ()).unwrap_err().kind();
        assert_eq!(
            kind(fs.open(Path::new("/d/a"), OpenMode::CREATE_NEW)),
            io::ErrorKind::NotFound,
            "no such dir"
        );
        fs.create_dir_all(Path::new("/d/e")).unwrap();
        assert!(fs.exists(Path::new("/d")) && fs.exists(Path::new("/d/e")));
        let a = fs.open(Path::new("/d/a"), OpenMode::CREATE_NEW).unwrap();
        a.write_all_at(b"old", 0).unwrap();
        assert_eq!(kind(fs.open(Path::new("/d/a"), OpenMode::CREATE_NEW)), io::ErrorKind::AlreadyExists);
        assert_eq!(kind(fs.open(Path::new("/d/b"), OpenMode::EXISTING)), io::ErrorKind::NotFound);
        let b = fs.open(Path::new("/d/b"), OpenMode::CREATE_NEW).unwrap();
        b.write_all_at(b"new", 0).unwrap();
        fs.rename(Path::new("/d/b"), Path::new("/d/a")).unwrap();
        let mut buf = [0u8; 3];
        fs.open(Path::new("/d/a"), OpenMode::EXISTING).unwrap().read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"new", "rename replaces (IO3)");
        a.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"old", "a replaced file lives on in its handle");
        let mut names = fs.list(Path::new("/d")).unwrap();
        names.sort();
        assert_eq!(names, [PathBuf::from("/d/a"), PathBuf::from("/d/e")]);
        fs.remove(Path::new("/d/a")).unwrap();
        assert_eq!(fs.remove(Path::new("/d/a")).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(fs.sync_dir(Path::new("/d")).is_ok());
        assert_eq!(fs.sync_dir(Path::new("/nowhere")).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(fs.bytes(), 0, "the only file left is removed");
    }

    /// A directory renames with everything under it, onto a missing or empty directory, as
    /// POSIX `rename(2)` does: a backup renames its copy's log directory (it failed with
    /// `EISDIR`).
    #[test]
    fn io8_a_directory_renames_with_what_it_holds() {
        let fs = MemFs::new();
        let p = Path::new;
        fs.create_dir_all(p("/d/x.wal/archive")).unwrap();
        fs.open(p("/d/x.wal/seg"), OpenMode::CREATE_NEW).unwrap().write_all_at(b"log", 0).unwrap();
        fs.open(p("/d/x.wal/archive/run"), OpenMode::CREATE_NEW).unwrap();
        fs.rename(p("/d/x.wal"), p("/d/y.wal")).unwrap();
        assert!(!fs.exists(p("/d/x.wal")) && !fs.exists(p("/d/x.wal/seg")));
        let mut names = fs.list(p("/d/y.wal")).unwrap();
        names.sort();
        assert_eq!(names, [PathBuf::from("/d/y.wal/archive"), PathBuf::from("/d/y.wal/seg")]);
        assert_eq!(fs.list(p("/d/y.wal/archive")).unwrap(), [PathBuf::from("/d/y.wal/archive/run")]);
        let mut buf = [0u8; 3];
        fs.open(p("/d/y.wal/seg"), OpenMode::EXISTING).unwrap().read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"log");
        // Onto an empty directory: replaced; onto one that holds something, or a file: refused.
        fs.create_dir_all(p("/d/empty")).unwrap();
        fs.rename(p("/d/y.wal"), p("/d/empty")).unwrap();
        assert!(fs.exists(p("/d/empty/seg")) && !fs.exists(p("/d/y.wal")));
        fs.create_dir_all(p("/d/full/z")).unwrap();
        let err = |r: io::Result<()>| r.unwrap_err().kind();
        assert_eq!(err(fs.rename(p("/d/empty"), p("/d/full"))), io::ErrorKind::DirectoryNotEmpty);
        fs.open(p("/d/f"), OpenMode::CREATE_NEW).unwrap();
        assert_eq!(err(fs.rename(p("/d/empty"), p("/d/f"))), io::ErrorKind::NotADirectory);
        assert_eq!(err(fs.rename(p("/d/empty"), p("/d/empty/in"))), io::ErrorKind::InvalidInput);
        assert_eq!(err(fs.rename(p("/d/empty"), p("/nowhere/x"))), io::ErrorKind::NotFound);
        assert!(fs.exists(p("/d/empty/archive/run")), "a refused rename moves nothing");
    }
}
