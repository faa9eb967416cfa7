//! The file-system seam: every byte SwizzleDB stores (the page file, the log segments, the master
//! record) goes through a [`Vfs`], so that tests can swap the operating system's file system for
//! one that loses unsynced writes, tears pages or fails chosen calls (README "Files").
//!
//! [`OsFs`] is the real file system with positional I/O (`pread`/`pwrite`), and optionally
//! `O_DIRECT`. Paths are ordinary paths; a `Vfs` decides what they mean.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to open a file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenMode {
    /// Create the file; fail with `AlreadyExists` if it exists.
    pub create_new: bool,
    /// Bypass the page cache (`O_DIRECT`): offsets, lengths and buffers must be multiples of
    /// 4 KiB. A file system that cannot do it fails the open with `EINVAL`.
    pub direct: bool,
}

impl OpenMode {
    /// Open an existing file for reading and writing.
    pub const EXISTING: OpenMode = OpenMode { create_new: false, direct: false };
    /// Create a new file for reading and writing.
    pub const CREATE_NEW: OpenMode = OpenMode { create_new: true, direct: false };
}

/// An open file. Every method takes `&self` and uses explicit offsets (no shared cursor), so one
/// file may be used by many threads at once; the caller orders writes of the same bytes.
pub trait VfsFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only at the
    /// end of the file).
    ///
    /// # Errors
    /// The underlying I/O error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `offset`, extending the file if needed. Not durable before
    /// [`VfsFile::sync`].
    ///
    /// # Errors
    /// The underlying I/O error (e.g. `ENOSPC`); the bytes written so far are unspecified.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// Makes every write and length change before this call durable (`fdatasync`).
    ///
    /// # Errors
    /// The underlying I/O error; after a failed sync the unsynced writes may be lost.
    fn sync(&self) -> io::Result<()>;

    /// The file's length in bytes.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn len(&self) -> io::Result<u64>;

    /// Truncates or extends (with zeros) the file to `len` bytes; durable after a sync.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Writes every `(bytes, offset)` of `writes` as [`VfsFile::write_all_at`] would, but lets a
    /// file system have them in flight together (IO7). Returns one result per write, in order;
    /// the caller must not give two writes of the same bytes. Returns only once no write of the
    /// batch is in progress. The default writes them one after the other.
    fn write_all_at_batch(&self, writes: &[(&[u8], u64)]) -> Vec<io::Result<()>> {
        writes.iter().map(|&(buf, off)| self.write_all_at(buf, off)).collect()
    }

    /// Reads every `(buf, offset)` of `reads` as [`VfsFile::read_exact_at`] would, but lets a
    /// file system have them in flight together (IO7). Returns one result per read, in order;
    /// the buffers must not overlap. Returns only once no read of the batch is in progress.
    /// The default reads them one after the other.
    fn read_exact_at_batch(&self, reads: &mut [(&mut [u8], u64)]) -> Vec<io::Result<()>> {
        reads.iter_mut().map(|(buf, off)| self.read_exact_at(buf, *off)).collect()
    }

    /// Reserves the bytes `offset..offset + len` (IO6): afterwards the file is at least
    /// `offset + len` bytes long, reading zeros where nothing was written, and a file system
    /// that can has allocated the space, so later writes there are overwrites. Durable after a
    /// sync, like [`VfsFile::set_len`]. The default extends with [`VfsFile::set_len`] when the
    /// file is shorter.
    ///
    /// # Errors
    /// The underlying I/O error (e.g. `ENOSPC`).
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        let end = offset.checked_add(len).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if self.len()? < end {
            self.set_len(end)?;
        }
        Ok(())
    }

    /// Takes an exclusive advisory lock on the file without waiting (IO5): `Ok(true)` if this
    /// handle holds it now, `Ok(false)` if another open file description holds it (in this or
    /// another process). The lock lasts until [`VfsFile::unlock`] or until the last clone of
    /// the handle is dropped (or its process ends). The default, for file systems that cannot
    /// lock, grants every request (`MemFs` and `FaultFs` lock).
    ///
    /// # Errors
    /// The underlying I/O error.
    fn try_lock(&self) -> io::Result<bool> {
        Ok(true)
    }

    /// Takes a shared advisory lock on the file without waiting (IO5): `Ok(true)` if this
    /// handle holds it now, `Ok(false)` if another open file description holds the exclusive
    /// lock. Any number of handles may hold it together; [`VfsFile::try_lock`] refuses while
    /// one does. It lasts as the exclusive lock does, and [`VfsFile::unlock`] releases it. The
    /// default, for file systems that cannot lock, grants every request.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn try_lock_shared(&self) -> io::Result<bool> {
        Ok(true)
    }

    /// Releases the lock of [`VfsFile::try_lock`] or [`VfsFile::try_lock_shared`] (nothing if
    /// it is not held).
    ///
    /// # Errors
    /// The underlying I/O error.
    fn unlock(&self) -> io::Result<()> {
        Ok(())
    }

    /// Which file this handle reads and writes (IO16), to compare with [`Vfs::file_id`] of a
    /// name: a handle keeps its file after the name was given to another. `None` where the file
    /// system cannot tell (the default).
    ///
    /// # Errors
    /// The underlying I/O error.
    fn id(&self) -> io::Result<Option<FileId>> {
        Ok(None)
    }

    /// Whether the file is empty.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    /// `UnexpectedEof` if the file ends first, or the underlying I/O error.
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A file system: opens files and changes directories. Creating, removing and renaming a file is
/// durable only after [`Vfs::sync_dir`] of its directory.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Opens (or creates, per `mode`) the file at `path` for reading and writing.
    ///
    /// # Errors
    /// `NotFound`, `AlreadyExists` (with `create_new`), `EINVAL` for `direct` where unsupported,
    /// or another I/O error.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>>;

    /// Opens the existing file at `path` for reading only (IO14): a file or directory that
    /// forbids writing still opens, and nothing is written through the handle. The default
    /// opens it as [`Vfs::open`] does, for file systems whose files are always writable.
    ///
    /// # Errors
    /// `NotFound`, an error for a directory, or another I/O error.
    fn open_read_only(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        self.open(path, OpenMode::EXISTING)
    }

    /// Removes the file at `path`.
    ///
    /// # Errors
    /// `NotFound` or another I/O error.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Removes the empty directory `dir`.
    ///
    /// # Errors
    /// `NotFound`, `DirectoryNotEmpty`, or another I/O error.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing `to` atomically if it exists.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Renames `from` to `to` only if nothing is at `to` (IO15): where something is, fails
    /// with `AlreadyExists` and changes nothing. The default checks [`Vfs::exists`] and then
    /// calls [`Vfs::rename`], which is atomic only against the callers that do not run between
    /// the two; `OsFs`, `MemFs` and `FaultFs` decide it in one step.
    ///
    /// # Errors
    /// `AlreadyExists`, or the errors of [`Vfs::rename`].
    fn rename_no_replace(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.exists(to) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        self.rename(from, to)
    }

    /// The paths of the files in directory `dir` (not recursive), in no particular order.
    ///
    /// # Errors
    /// `NotFound` or another I/O error.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;

    /// Creates `dir` and its missing parents.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Makes the creations, removals and renames of entries in `dir` durable.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;

    /// Which file `path` names now (IO16): equal to [`VfsFile::id`] of a handle of that file.
    /// `None` where the file system cannot tell (the default).
    ///
    /// # Errors
    /// `NotFound` if no file has that name, or the underlying I/O error.
    fn file_id(&self, _path: &Path) -> io::Result<Option<FileId>> {
        Ok(None)
    }

    /// Whether `path` is a symbolic link itself (IO17), not followed: a directory removal then
    /// removes the link, not what it leads to. `false` where the file system has no links (the
    /// default; `MemFs`, `FaultFs`).
    fn is_symlink(&self, _path: &Path) -> bool {
        false
    }

    /// `path` as it names the same file from any current directory (IO18): a relative path
    /// joined to the current directory on a file system that has one (`OsFs`), else `path`
    /// itself (the default; `MemFs`, `FaultFs`). An empty path stays empty.
    ///
    /// # Errors
    /// The current directory cannot be read.
    fn anchored(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }
}

/// A file's identity on its file system (IO16): two handles, or a handle and a name, with equal
/// identities lead to the same file (on `OsFs`, the device and inode numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub u64, pub u64);

/// The operating system's file system.
#[derive(Copy, Clone, Debug, Default)]
pub struct OsFs;

/// A file of [`OsFs`].
#[derive(Debug)]
struct OsFile {
    file: File,
    /// Opened with `O_DIRECT`: IO7 batches its writes through `io_uring` only then.
    direct: bool,
}

impl VfsFile for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }

    fn id(&self) -> io::Result<Option<FileId>> {
        use std::os::unix::fs::MetadataExt;
        let m = self.file.metadata()?;
        Ok(Some(FileId(m.dev(), m.ino())))
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    /// With direct I/O on Linux (IO7): the whole batch submitted at once through `io_uring`,
    /// then awaited; otherwise, or where the kernel refuses `io_uring` (too old, or disabled),
    /// one write after the other.
    fn write_all_at_batch(&self, writes: &[(&[u8], u64)]) -> Vec<io::Result<()>> {
        #[cfg(target_os = "linux")]
        if self.direct && writes.len() > 1 {
            if let Some(results) = uring::write_batch(&self.file, writes) {
                return results;
            }
        }
        writes.iter().map(|&(buf, off)| self.write_all_at(buf, off)).collect()
    }

    /// As [`OsFile::write_all_at_batch`], for reads (IO7).
    fn read_exact_at_batch(&self, reads: &mut [(&mut [u8], u64)]) -> Vec<io::Result<()>> {
        #[cfg(target_os = "linux")]
        if self.direct && reads.len() > 1 {
            if let Some(results) = uring::read_batch(&self.file, reads) {
                return results;
            }
        }
        reads.iter_mut().map(|(buf, off)| self.read_exact_at(buf, *off)).collect()
    }

    /// `fallocate` (mode 0) on Linux, where the file system supports it; elsewhere, or where it
    /// does not (`EOPNOTSUPP`), the default extension (IO6).
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
                return Err(io::ErrorKind::InvalidInput.into());
            };
            // SAFETY: IO6 — the descriptor belongs to the `File` borrowed for the whole call, so
            // it is open and refers to this file; `fallocate` takes no pointer.
            let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, off, n) };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(e);
            }
        }
        let end = offset.checked_add(len).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if self.len()? < end {
            self.set_len(end)?;
        }
        Ok(())
    }

    fn try_lock(&self) -> io::Result<bool> {
        // `flock` on Linux: held by the open file description, so a second `open` of the same
        // file in this process conflicts just as another process does.
        match self.file.try_lock() {
            Ok(()) => Ok(true),
            Err(fs::TryLockError::WouldBlock) => Ok(false),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn try_lock_shared(&self) -> io::Result<bool> {
        match self.file.try_lock_shared() {
            Ok(()) => Ok(true),
            Err(fs::TryLockError::WouldBlock) => Ok(false),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn unlock(&self) -> io::Result<()> {
        self.file.unlock()
    }
}

/// `O_DIRECT` on Linux; other systems have no portable equivalent, and opening with `direct`
/// fails there with `Unsupported`.
fn direct_flag() -> io::Result<i32> {
    #[cfg(target_os = "linux")]
    {
        Ok(libc::O_DIRECT)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(io::ErrorKind::Unsupported.into())
    }
}

impl Vfs for OsFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        if mode.create_new {
            opts.create_new(true);
        }
        if mode.direct {
            opts.custom_flags(direct_flag()?);
        }
        Ok(Arc::new(OsFile { file: opts.open(path)?, direct: mode.direct }))
    }

    /// `O_RDONLY`, so a read-only file, or one in a read-only directory, opens (IO14).
    fn open_read_only(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        let file = File::open(path)?;
        if file.metadata()?.is_dir() {
            // `open(2)` opens a directory read-only; no file of a database is one.
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a directory, not a file"));
        }
        Ok(Arc::new(OsFile { file, direct: false }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    /// IO15: `renameat2(2)` with `RENAME_NOREPLACE`, one step in the kernel. Where the file
    /// system or the kernel lacks the flag: a file is linked at `to` (`link(2)` refuses an
    /// existing name, whoever made it) and then unlinked at `from`; a directory is renamed,
    /// which fails on a directory with entries or a file at `to`, after a check for an empty
    /// one. A file system without hard links gets the check and the rename.
    fn rename_no_replace(&self, from: &Path, to: &Path) -> io::Result<()> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            use std::os::unix::ffi::OsStrExt;
            let c_path = |p: &Path| {
                std::ffi::CString::new(p.as_os_str().as_bytes())
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
            };
            let (old, new) = (c_path(from)?, c_path(to)?);
            // SAFETY: IO15 — both pointers are NUL-terminated strings owned by `old` and `new`,
            // which live across the call; the kernel keeps neither after it returns.
            let rc = unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    old.as_ptr(),
                    libc::AT_FDCWD,
                    new.as_ptr(),
                    libc::RENAME_NOREPLACE,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            // EINVAL: a file system without the flag; ENOSYS: a kernel without the call.
            if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
                return Err(e);
            }
        }
        let exists = || to.symlink_metadata().is_ok();
        if fs::symlink_metadata(from)?.is_dir() {
            if exists() {
                return Err(io::ErrorKind::AlreadyExists.into());
            }
            return fs::rename(from, to);
        }
        match fs::hard_link(from, to) {
            // Where the old name stays, so does the file under it alone: a failed call leaves
            // the names as they were.
            Ok(()) => fs::remove_file(from).inspect_err(|_| {
                let _ = fs::remove_file(to);
            }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            Err(e)
                if [libc::EPERM, libc::EOPNOTSUPP, libc::EXDEV].contains(&e.raw_os_error().unwrap_or(0)) =>
            {
                if exists() {
                    return Err(io::ErrorKind::AlreadyExists.into());
                }
                fs::rename(from, to)
            }
            Err(e) => Err(e),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        match File::open(dir).and_then(|d| d.sync_all()) {
            // Some file systems cannot fsync a directory; there is nothing more to do there.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            r => r,
        }
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_id(&self, path: &Path) -> io::Result<Option<FileId>> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok(Some(FileId(m.dev(), m.ino())))
    }

    fn is_symlink(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

    fn anchored(&self, path: &Path) -> io::Result<PathBuf> {
        if path.is_relative() && !path.as_os_str().is_empty() {
            Ok(std::env::current_dir()?.join(path))
        } else {
            Ok(path.to_path_buf())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_fs_positional_io_roundtrip() {
        let dir = std::env::temp_dir().join(format!("swizzledb-vfs-{}", std::process::id()));
        OsFs.create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let _ = OsFs.remove(&path);
        let f = OsFs.open(&path, OpenMode::CREATE_NEW).unwrap();
        assert!(OsFs.open(&path, OpenMode::CREATE_NEW).is_err(), "create_new refuses an existing file");
        f.write_all_at(b"world", 6).unwrap();
        f.write_all_at(b"hello ", 0).unwrap();
        f.sync().unwrap();
        assert_eq!(f.len().unwrap(), 11);
        let mut buf = [0u8; 11];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello world");
        let mut short = [0u8; 8];
        assert_eq!(f.read_at(&mut short, 6).unwrap(), 5, "a read stops at the end of the file");
        assert_eq!(f.read_exact_at(&mut short, 6).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        f.set_len(5).unwrap();
        assert_eq!(f.len().unwrap(), 5);
        OsFs.rename(&path, &dir.join("g")).unwrap();
        assert!(!OsFs.exists(&path) && OsFs.exists(&dir.join("g")));
        assert_eq!(OsFs.list(&dir).unwrap(), vec![dir.join("g")]);
        OsFs.sync_dir(&dir).unwrap();
        OsFs.remove(&dir.join("g")).unwrap();
        fs::remove_dir(&dir).unwrap();
    }

    /// Runs `body` on a new file in a scratch directory named `name`, buffered and then with
    /// direct I/O where the file system allows it (not on tmpfs); removes both afterwards.
    fn on_both_kinds_of_file(name: &str, mut body: impl FnMut(&dyn VfsFile, bool)) {
        let dir = std::env::temp_dir().join(format!("swizzledb-vfs-{name}-{}", std::process::id()));
        OsFs.create_dir_all(&dir).unwrap();
        for direct in [false, true] {
            let path = dir.join(format!("f{direct}"));
            let _ = OsFs.remove(&path);
            let f = match OsFs.open(&path, OpenMode { create_new: true, direct }) {
                Ok(f) => f,
                Err(_) if direct => continue, // this file system refuses O_DIRECT (tmpfs)
                Err(e) => panic!("{e}"),
            };
            body(&*f, direct);
            drop(f);
            OsFs.remove(&path).unwrap();
        }
        let _ = fs::remove_dir(&dir);
    }

    /// IO6, IO7: a batch of writes, more than one ring holds, lands as the same writes one by
    /// one would, also with direct I/O where the file system allows it; `allocate` extends the
    /// file without changing a byte written before.
    #[test]
    fn io6_io7_batched_writes_and_reservations_land_as_single_writes_would() {
        on_both_kinds_of_file("batch", |f, direct| {
            const PAGE: usize = 4096;
            let n = 300;
            // One aligned region for the pages (direct I/O needs aligned buffers): page i is
            // filled with i, and written at slot (i * 7) % n, so the batch is not in file order.
            let layout = std::alloc::Layout::from_size_align(n * PAGE, PAGE).unwrap();
            let mut region = vec![0u8; n * PAGE + PAGE];
            let start = region.as_ptr().align_offset(PAGE);
            let bufs = &mut region[start..start + layout.size()];
            for (i, page) in bufs.chunks_mut(PAGE).enumerate() {
                page.fill((i % 251) as u8);
            }
            let writes: Vec<(&[u8], u64)> =
                bufs.chunks(PAGE).enumerate().map(|(i, b)| (b, ((i * 7) % n * PAGE) as u64)).collect();
            let results = f.write_all_at_batch(&writes);
            assert_eq!(results.len(), n);
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            f.allocate((n * PAGE) as u64, (8 * PAGE) as u64).unwrap();
            assert_eq!(f.len().unwrap(), ((n + 8) * PAGE) as u64);
            f.allocate(0, PAGE as u64).unwrap();
            assert_eq!(f.len().unwrap(), ((n + 8) * PAGE) as u64, "allocate never shrinks");
            let mut back = vec![0u8; 2 * PAGE];
            let at = back.as_ptr().align_offset(PAGE);
            for i in 0..n + 8 {
                let page = &mut back[at..at + PAGE];
                f.read_exact_at(page, (i * PAGE) as u64).unwrap();
                // Slot s holds page i with (i * 7) % n == s; the reserved pages read as zeros.
                let want = (0..n).find(|&j| (j * 7) % n == i).map_or(0, |j| (j % 251) as u8);
                assert!(page.iter().all(|&b| b == want), "direct {direct}: slot {i}");
            }
        });
    }

    /// IO7: a batch of reads, more than one ring holds and not in file order, returns what
    /// reads one by one would, also with direct I/O where the file system allows it; a read
    /// that meets the file's end fails alone, with `UnexpectedEof`.
    #[test]
    fn io7_batched_reads_return_what_single_reads_would() {
        on_both_kinds_of_file("readbatch", |f, direct| {
            const PAGE: usize = 4096;
            let n = 200;
            let mut region = vec![0u8; (n + 2) * PAGE];
            let start = region.as_ptr().align_offset(PAGE);
            let bufs = &mut region[start..start + (n + 1) * PAGE];
            for (i, page) in bufs.chunks_mut(PAGE).take(n).enumerate() {
                page.fill((i % 251) as u8);
                f.write_all_at(page, (i * PAGE) as u64).unwrap();
            }
            bufs.fill(0xEE);
            // Buffer j reads slot (j * 7) % n; the last one reads past the end.
            let mut reads: Vec<(&mut [u8], u64)> = bufs
                .chunks_mut(PAGE)
                .enumerate()
                .map(|(j, b)| (b, if j < n { ((j * 7) % n * PAGE) as u64 } else { (n * PAGE) as u64 }))
                .collect();
            let results = f.read_exact_at_batch(&mut reads);
            assert_eq!(results.len(), n + 1);
            for (j, ((buf, _), r)) in reads.iter().zip(&results).enumerate() {
                if j == n {
                    assert_eq!(
                        r.as_ref().unwrap_err().kind(),
                        io::ErrorKind::UnexpectedEof,
                        "direct {direct}"
                    );
                } else {
                    assert!(r.is_ok(), "direct {direct}: read {j}: {r:?}");
                    let want = ((j * 7) % n % 251) as u8;
                    assert!(buf.iter().all(|&b| b == want), "direct {direct}: read {j}");
                }
            }
        });
    }

    #[test]
    fn io5_one_lock_holder_per_file_even_within_a_process() {
        let dir = std::env::temp_dir().join(format!("swizzledb-vfs-lock-{}", std::process::id()));
        OsFs.create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let _ = OsFs.remove(&path);
        let a = OsFs.open(&path, OpenMode::CREATE_NEW).unwrap();
        let b = OsFs.open(&path, OpenMode::EXISTING).unwrap();
        assert!(a.try_lock().unwrap(), "the first handle gets the lock");
        assert!(!b.try_lock().unwrap(), "a second open file description is refused");
        a.unlock().unwrap();
        assert!(b.try_lock().unwrap(), "unlock hands the lock on");
        drop(b);
        let c = OsFs.open(&path, OpenMode::EXISTING).unwrap();
        assert!(c.try_lock().unwrap(), "dropping the holder releases the lock");
        drop((a, c));
        OsFs.remove(&path).unwrap();
        fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn io5_io14_read_only_handles_share_a_lock_that_excludes_the_exclusive_one() {
        let dir = std::env::temp_dir().join(format!("swizzledb-vfs-shared-{}", std::process::id()));
        OsFs.create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let _ = OsFs.remove(&path);
        OsFs.open(&path, OpenMode::CREATE_NEW).unwrap().write_all_at(b"bytes", 0).unwrap();
        let mut perms = fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&path, perms).unwrap();
        // A read-only file opens for reading only, and refuses a write through the handle.
        let a = OsFs.open_read_only(&path).unwrap();
        let b = OsFs.open_read_only(&path).unwrap();
        let mut buf = [0u8; 5];
        a.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"bytes");
        assert!(a.write_all_at(b"x", 0).is_err(), "opened O_RDONLY");
        assert!(a.try_lock_shared().unwrap() && b.try_lock_shared().unwrap(), "shared locks share");
        let c = OsFs.open_read_only(&path).unwrap();
        assert!(!c.try_lock().unwrap(), "a shared lock keeps the exclusive one out");
        a.unlock().unwrap();
        drop(b);
        assert!(c.try_lock().unwrap(), "and lets it in once released");
        assert!(!a.try_lock_shared().unwrap(), "the exclusive lock keeps shared ones out");
        let refused = OsFs.open_read_only(&dir).map(|_| ()).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "a directory is no file");
        drop((a, c));
        let mut perms = fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(&path, perms).unwrap();
        OsFs.remove(&path).unwrap();
        fs::remove_dir(&dir).unwrap();
    }
}

/// Batched writes and reads through `io_uring` (IO7).
#[cfg(target_os = "linux")]
mod uring {
    use io_uring::{opcode, types, IoUring};
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    /// Entries of one ring: a larger batch is submitted in rounds.
    const RING: u32 = 128;

    thread_local! {
        // This thread's ring, set up at its first batch and kept (IO7): setting a ring up and
        // tearing it down for every batch costs the kernel more than the writes, and its
        // deferred teardown work piles up under many writing threads.
        static THREAD_RING: std::cell::RefCell<Option<IoUring>> = const { std::cell::RefCell::new(None) };
    }

    /// Runs `f` on this thread's ring, set up at the thread's first batch. `None` if no ring
    /// could be set up (then nothing was submitted).
    fn with_ring<T>(f: impl FnOnce(&mut IoUring) -> T) -> Option<T> {
        THREAD_RING.with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if slot.is_none() {
                *slot = Some(IoUring::new(RING).ok()?);
            }
            Some(f(slot.as_mut()?))
        })
    }

    /// Writes the batch with the writes of each round in flight together. `None` if no ring
    /// could be set up (nothing was written then).
    pub(super) fn write_batch(file: &File, writes: &[(&[u8], u64)]) -> Option<Vec<io::Result<()>>> {
        with_ring(|ring| write_with(ring, file, writes))
    }

    /// Reads the batch with the reads of each round in flight together. `None` if no ring could
    /// be set up (nothing was read then).
    pub(super) fn read_batch(file: &File, reads: &mut [(&mut [u8], u64)]) -> Option<Vec<io::Result<()>>> {
        with_ring(|ring| read_with(ring, file, reads))
    }

    /// [`read_batch`] on `ring`, whose queues are empty, and left empty again.
    fn read_with(ring: &mut IoUring, file: &File, reads: &mut [(&mut [u8], u64)]) -> Vec<io::Result<()>> {
        let fd = types::Fd(file.as_raw_fd());
        let mut results: Vec<io::Result<()>> = Vec::with_capacity(reads.len());
        for round in reads.chunks_mut(RING as usize) {
            let base = results.len();
            results.extend(round.iter().map(|_| Ok(())));
            let mut done = vec![0usize; round.len()];
            for (i, (buf, off)) in round.iter_mut().enumerate() {
                let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
                let sqe =
                    opcode::Read::new(fd, buf.as_mut_ptr(), len).offset(*off).build().user_data(i as u64);
                // SAFETY: IO7 — `buf` is borrowed mutably from `reads` for the whole call, and the
                // call does not return before the kernel has completed this entry (the wait
                // below); the descriptor belongs to `file`, borrowed as long.
                if unsafe { ring.submission().push(&sqe) }.is_err() {
                    unreachable!("a round holds at most as many reads as the ring has entries");
                }
            }
            await_round(ring, round.len(), &mut done, &mut results[base..]);
            // A short read (the file's end, or a signal) is finished one read at a time, which
            // tells the end (`UnexpectedEof`) from an interruption.
            for (i, (buf, off)) in round.iter_mut().enumerate() {
                if results[base + i].is_ok() && done[i] < buf.len() {
                    results[base + i] = file.read_exact_at(&mut buf[done[i]..], *off + done[i] as u64);
                }
            }
        }
        results
    }

    /// Waits for the `pending` completions of a round whose entries are numbered by their index
    /// in `done` (bytes transferred) and `results` (errors), retrying the wait on any error:
    /// nothing submitted can be abandoned, since its buffer would be reused while the kernel
    /// still reads or writes it.
    fn await_round(
        ring: &mut IoUring,
        mut pending: usize,
        done: &mut [usize],
        results: &mut [io::Result<()>],
    ) {
        while pending > 0 {
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
                Err(_) => std::thread::sleep(std::time::Duration::from_micros(100)),
            }
            for cqe in ring.completion() {
                let i = usize::try_from(cqe.user_data()).unwrap_or(usize::MAX);
                let Some(d) = done.get_mut(i) else { continue };
                pending -= 1;
                match usize::try_from(cqe.result()) {
                    Ok(n) => *d = n,
                    Err(_) => results[i] = Err(io::Error::from_raw_os_error(-cqe.result())),
                }
            }
        }
    }

    /// [`write_batch`] on `ring`, whose queues are empty (every earlier call waited for all of
    /// its completions), and left empty again.
    fn write_with(ring: &mut IoUring, file: &File, writes: &[(&[u8], u64)]) -> Vec<io::Result<()>> {
        let entries = RING;
        let fd = types::Fd(file.as_raw_fd());
        let mut results: Vec<io::Result<()>> = Vec::with_capacity(writes.len());
        for round in writes.chunks(entries as usize) {
            let base = results.len();
            results.extend(round.iter().map(|_| Ok(())));
            let mut done = vec![0usize; round.len()];
            for (i, &(buf, off)) in round.iter().enumerate() {
                let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
                let sqe = opcode::Write::new(fd, buf.as_ptr(), len).offset(off).build().user_data(i as u64);
                // SAFETY: IO7 — `buf` is borrowed from `writes` for the whole call, and the call
                // does not return before the kernel has completed this entry (the wait below);
                // the descriptor belongs to `file`, borrowed as long.
                if unsafe { ring.submission().push(&sqe) }.is_err() {
                    unreachable!("a round holds at most as many writes as the ring has entries");
                }
            }
            await_round(ring, round.len(), &mut done, &mut results[base..]);
            // A short write (rare: a signal, a full device) is finished one write at a time.
            for (i, &(buf, off)) in round.iter().enumerate() {
                if results[base + i].is_ok() && done[i] < buf.len() {
                    results[base + i] = file.write_all_at(&buf[done[i]..], off + done[i] as u64);
                }
            }
        }
        results
    }
}
