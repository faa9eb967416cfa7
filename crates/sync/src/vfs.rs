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

    /// Reserves the bytes `offset..offset + len` (V11): afterwards the file is at least
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

    /// Takes an exclusive advisory lock on the file without waiting (V10): `Ok(true)` if this
    /// handle holds it now, `Ok(false)` if another open file description holds it (in this or
    /// another process). The lock lasts until [`VfsFile::unlock`] or until the last clone of
    /// the handle is dropped (or its process ends). The default, for file systems that cannot
    /// lock (`FaultFs`), grants every request.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn try_lock(&self) -> io::Result<bool> {
        Ok(true)
    }

    /// Releases the lock of [`VfsFile::try_lock`] (nothing if it is not held).
    ///
    /// # Errors
    /// The underlying I/O error.
    fn unlock(&self) -> io::Result<()> {
        Ok(())
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

    /// Removes the file at `path`.
    ///
    /// # Errors
    /// `NotFound` or another I/O error.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing `to` atomically if it exists.
    ///
    /// # Errors
    /// The underlying I/O error.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

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
}

/// The operating system's file system.
#[derive(Copy, Clone, Debug, Default)]
pub struct OsFs;

#[derive(Debug)]
struct OsFile(File);

impl VfsFile for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    /// `fallocate` (mode 0) on Linux, where the file system supports it; elsewhere, or where it
    /// does not (`EOPNOTSUPP`), the default extension (V11).
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
                return Err(io::ErrorKind::InvalidInput.into());
            };
            // SAFETY: V11 — the descriptor belongs to the `File` borrowed for the whole call, so
            // it is open and refers to this file; `fallocate` takes no pointer.
            let rc = unsafe { libc::fallocate(self.0.as_raw_fd(), 0, off, n) };
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
        match self.0.try_lock() {
            Ok(()) => Ok(true),
            Err(fs::TryLockError::WouldBlock) => Ok(false),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn unlock(&self) -> io::Result<()> {
        self.0.unlock()
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
        Ok(Arc::new(OsFile(opts.open(path)?)))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
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

    #[test]
    fn v10_one_lock_holder_per_file_even_within_a_process() {
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
}
