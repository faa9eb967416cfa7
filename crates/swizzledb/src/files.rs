//! What a database owns on disk besides its pages (RECOVERY.md R13, R14): the exclusive lock on
//! the data file, and the log directory's identity file, which names the database the log
//! belongs to and carries the log directory's lock. The log directory also holds the log's
//! segments and master record (wal README), the archive (R17), the decoupled cleaner's progress
//! (R20) and the double-write area, `doublewrite` (R3, buffer README F15): a copy of a logged
//! database is whole only with its `.wal` directory.
//!
//! ```text
//! <path>.wal/database-id   (created with the database, never rewritten)
//! offset 0   8 bytes  magic "SWZDBID1"
//! offset 8   u64 LE   database id (page 0 of the data file records the same id)
//! offset 16  u64 LE   the log's segment size in bytes (open uses it, whatever the builder says)
//! offset 24  u32 LE   CRC-32C of bytes 0..24
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb_io::{OpenMode, Vfs, VfsFile};

use crate::error::{Error, Result};

/// The identity file's name in the log directory.
pub(crate) const ID_FILE: &str = "database-id";
const ID_MAGIC: &[u8; 8] = b"SWZDBID1";
const ID_LEN: usize = 28;

/// An advisory lock held for the `Database`'s life (R13); released by [`FileLock::release`] or
/// when dropped.
pub(crate) struct FileLock {
    file: Option<Arc<dyn VfsFile>>,
}

impl FileLock {
    /// Locks `path` (which must exist), or fails with [`Error::AlreadyOpen`] naming `database`.
    pub(crate) fn acquire(vfs: &dyn Vfs, path: &Path, database: &Path) -> Result<FileLock> {
        FileLock::lock_named(vfs, path, database, false).map_err(|e| match e {
            // A file that must exist: its absence is the file system's error, as any other.
            Error::NotFound(p) => io(&p, std::io::ErrorKind::NotFound.into()),
            e => e,
        })
    }

    /// Locks the database file `path` for `open`: [`Error::NotFound`] if there is no file, else
    /// as [`FileLock::acquire`].
    pub(crate) fn open_database(vfs: &dyn Vfs, path: &Path) -> Result<FileLock> {
        FileLock::lock_named(vfs, path, path, false)
    }

    /// A shared lock on the database file `path` of `vfs`, for a database opened read-only: the
    /// file is opened for reading only (io README IO14), and any number of such locks may be
    /// held, but not with a `Database` opened read-write (its lock is exclusive), so neither
    /// changes the file under the other. [`Error::NotFound`] without a file;
    /// [`Error::AlreadyOpen`] while it is open read-write.
    pub(crate) fn shared(vfs: &dyn Vfs, path: &Path) -> Result<FileLock> {
        FileLock::lock_named(vfs, path, path, true)
    }

    /// Locks the open `file` (of `path`), or fails with [`Error::AlreadyOpen`] naming `database`.
    fn take(file: Arc<dyn VfsFile>, path: &Path, database: &Path) -> Result<FileLock> {
        match file.try_lock() {
            Ok(true) => Ok(FileLock { file: Some(file) }),
            Ok(false) => Err(Error::AlreadyOpen(database.to_path_buf())),
            Err(e) => Err(io(path, e)),
        }
    }

    /// Opens `path` and locks the handle, then makes sure the name still leads to the file
    /// locked (R13, io IO16): a compaction (R28) or a backup's rename that gave the name to
    /// another file between the open and the lock left the lock on the file it replaced, and
    /// the new one unlocked for a second opener. Such an open is made again.
    fn lock_named(vfs: &dyn Vfs, path: &Path, database: &Path, shared: bool) -> Result<FileLock> {
        const TRIES: usize = 64;
        for _ in 0..TRIES {
            let opened = if shared { vfs.open_read_only(path) } else { vfs.open(path, OpenMode::EXISTING) };
            let file = match opened {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::NotFound(path.to_path_buf()))
                }
                Err(e) => return Err(io(path, e)),
            };
            let locked = if shared { file.try_lock_shared() } else { file.try_lock() };
            match locked {
                Ok(true) => {}
                Ok(false) => return Err(Error::AlreadyOpen(database.to_path_buf())),
                Err(e) => return Err(io(path, e)),
            }
            let named = match (file.id(), vfs.file_id(path)) {
                (Ok(Some(held)), Ok(Some(now))) => held == now,
                // Renamed away, not yet replaced: open again (and fail with NotFound if gone).
                (_, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => false,
                // A file system that cannot tell files apart keeps the lock it took.
                _ => true,
            };
            if named {
                return Ok(FileLock { file: Some(file) });
            }
            let _ = file.unlock();
        }
        Err(io(
            path,
            std::io::Error::other(format!(
                "the file at this name was replaced {TRIES} times while it was being locked; \
                 stop what keeps renaming files over it (a compaction or backup loop?) and open again"
            )),
        ))
    }

    /// Gives the lock up now (a closed database can be opened again while handles of it live).
    pub(crate) fn release(&mut self) {
        if let Some(file) = self.file.take() {
            if let Err(e) = file.unlock() {
                // Harmless: the lock goes with the last handle of the file, dropped here.
                log::warn!("swizzledb: unlocking {file:?} failed ({e}); the lock ends as the file closes");
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        self.release();
    }
}

pub(crate) fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Buffer(swizzledb_buffer::BufferError::Io { file: path.to_path_buf(), source: e })
}

fn id_path(dir: &Path) -> PathBuf {
    dir.join(ID_FILE)
}

/// Whether `path` lies in a database's log directory on `vfs`: a directory above it holds the
/// identity file every log directory has, as `path` spells it or as the operating system
/// resolves it (`resolved` if the caller has it resolved already, else [`resolved_on_os`]).
/// The database owns what is there: a compaction (RECOVERY.md R28) removes its old log
/// directory whole, with whatever a backup (R26) or a create (R14) put in it.
pub(crate) fn in_a_log_directory(vfs: &dyn Vfs, path: &Path, resolved: Option<&Path>) -> bool {
    let resolved = resolved.map(Path::to_path_buf).or_else(|| resolved_on_os(path));
    let in_a_log =
        |p: &Path| p.ancestors().skip(1).any(|dir| !dir.as_os_str().is_empty() && vfs.exists(&id_path(dir)));
    in_a_log(path) || resolved.as_deref().is_some_and(in_a_log)
}

fn encode_id(id: u64, segment_bytes: u64) -> [u8; ID_LEN] {
    let mut b = [0u8; ID_LEN];
    b[..8].copy_from_slice(ID_MAGIC);
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b[16..24].copy_from_slice(&segment_bytes.to_le_bytes());
    let crc = crc32c::crc32c(&b[..24]);
    b[24..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Writes a new log directory's identity file (synced, with its directory) and returns it
/// locked (R13, R14).
pub(crate) fn create_identity(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    segment_bytes: u64,
    database: &Path,
) -> Result<FileLock> {
    let path = id_path(dir);
    let file = vfs.open(&path, OpenMode::CREATE_NEW).map_err(|e| io(&path, e))?;
    let lock = FileLock::take(Arc::clone(&file), &path, database)?;
    file.write_all_at(&encode_id(id, segment_bytes), 0).map_err(|e| io(&path, e))?;
    file.sync().map_err(|e| io(&path, e))?;
    vfs.sync_dir(dir).map_err(|e| io(dir, e))?;
    Ok(lock)
}

/// Checks that `dir` is the log of the logged database `database` whose page 0 records `id`,
/// and locks it (R14): a missing directory or identity file is [`Error::LogMissing`], another
/// id [`Error::ForeignLog`]. Returns the lock and the log's segment size. `closed_cleanly`:
/// page 0 says CLEAN (buffer F11: closed cleanly and not opened since), so a missing log is
/// one that was not copied with the file, and the error says so.
pub(crate) fn check_identity(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    database: &Path,
    closed_cleanly: bool,
) -> Result<(FileLock, u64)> {
    let missing = |reason: &str| Error::LogMissing {
        file: database.to_path_buf(),
        dir: dir.to_path_buf(),
        reason: reason.to_owned(),
    };
    if !vfs.exists(dir) {
        if vfs.is_symlink(database) {
            // The log lies beside the file the link leads to, not beside the link.
            return Err(missing(&format!(
                "{} is a link, and a database's log lies beside its file: open the database by the \
                 path of the file the link leads to (or link its directory instead)",
                database.display()
            )));
        }
        if closed_cleanly {
            return Err(missing(&format!(
                "the file was closed cleanly but its log directory is missing: a copy must take {} with it",
                dir.display()
            )));
        }
        return Err(missing("the directory does not exist"));
    }
    let path = id_path(dir);
    let file = match vfs.open(&path, OpenMode::EXISTING) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing("it holds no database-id file (empty, or not a SwizzleDB log)"))
        }
        Err(e) => return Err(io(&path, e)),
    };
    let lock = FileLock::take(Arc::clone(&file), &path, database)?;
    let mut b = [0u8; ID_LEN];
    let (found, segment_bytes) = match file.read_exact_at(&mut b, 0) {
        Ok(())
            if &b[..8] == ID_MAGIC
                && crc32c::crc32c(&b[..24]) == u32::from_le_bytes(b[24..].try_into().expect("4 bytes")) =>
        {
            (u64_at(&b, 8), u64_at(&b, 16))
        }
        Ok(()) | Err(_) => return Err(missing("its database-id file is damaged")),
    };
    if found != id {
        return Err(Error::ForeignLog { file: database.to_path_buf(), dir: dir.to_path_buf() });
    }
    Ok((lock, segment_bytes))
}

/// Reads the identity file of the log directory `dir` without locking or changing anything
/// (the `inspect` module): `(database id, segment size in bytes)`, or what is wrong with it.
pub(crate) fn read_identity(vfs: &dyn Vfs, dir: &Path) -> std::result::Result<(u64, u64), String> {
    let path = id_path(dir);
    let file = vfs.open_read_only(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "it holds no database-id file (not a SwizzleDB log)".to_owned(),
        _ => format!("its database-id file cannot be read: {e}"),
    })?;
    let mut b = [0u8; ID_LEN];
    match file.read_exact_at(&mut b, 0) {
        Ok(())
            if &b[..8] == ID_MAGIC
                && crc32c::crc32c(&b[..24]) == u32::from_le_bytes(b[24..].try_into().expect("4 bytes")) =>
        {
            Ok((u64_at(&b, 8), u64_at(&b, 16)))
        }
        Ok(()) | Err(_) => Err("its database-id file is damaged".to_owned()),
    }
}

/// The log archive's directory of the database file at `path`: `<path>.wal/archive` (R17).
#[must_use]
pub fn archive_dir(path: &Path) -> std::path::PathBuf {
    wal_dir(path).join("archive")
}

/// Whether the database file at `path` keeps a log archive (R17): its archive directory
/// holds a run. Such a database archives whatever the builder says.
pub(crate) fn keeps_archive(vfs: &dyn Vfs, path: &Path) -> bool {
    vfs.list(&archive_dir(path))
        .is_ok_and(|files| files.iter().any(|f| f.extension().is_some_and(|e| e == "run")))
}

/// The double-write area of the logged database file at `path` (buffer README F15):
/// `<path>.wal/doublewrite`.
pub fn double_write_path(path: &Path) -> std::path::PathBuf {
    wal_dir(path).join("doublewrite")
}

/// The longest file name, in bytes, that the file systems a database lives on take (Linux's
/// `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// `path` with its directory resolved on the operating system's file system (symbolic links,
/// `.` and `..`; a relative path against the working directory) and its file name kept: one
/// spelling per place, whether or not the file exists. `None` where the directory cannot be
/// resolved there (missing, or a path of a file system in memory) or `path` names no file.
pub(crate) fn resolved_on_os(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let name = absolute.file_name()?;
    Some(std::fs::canonicalize(absolute.parent()?).ok()?.join(name))
}

/// A file name in `path`'s directory made of `prefix`, `path`'s file name and `suffix`, at most
/// `limit` bytes long: as written where it fits, else with the file name cut short (at a
/// character) and followed by `~` and a hash of the whole name (FNV-1a, 64 bits, in hex), so
/// that the same `path` always leads to the same name (R28: an open finds a compaction's
/// files by it) and different long names to different ones.
pub(crate) fn name_beside(path: &Path, prefix: &str, suffix: &str, limit: usize) -> PathBuf {
    let name = path.file_name().unwrap_or_default();
    if prefix.len() + name.len() + suffix.len() <= limit {
        let mut whole = std::ffi::OsString::from(prefix);
        whole.push(name);
        whole.push(suffix);
        return path.with_file_name(whole);
    }
    let name = name.to_string_lossy();
    let hash =
        name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let tag = format!("~{hash:016x}");
    let mut keep = limit.saturating_sub(prefix.len() + tag.len() + suffix.len()).min(name.len());
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    path.with_file_name(format!("{prefix}{}{tag}{suffix}", &name[..keep]))
}

/// The log directory of the database file at `path`: `<path>.wal`.
#[must_use]
pub fn wal_dir(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".wal");
    name.into()
}

/// R14: the marker a `create` keeps beside the file while it makes the database:
/// `<path>.creating` (cut short with a hash where the name would be too long).
pub(crate) fn creating_marker(path: &Path) -> PathBuf {
    name_beside(path, "", ".creating", NAME_MAX)
}

/// R28: the marker of a compaction in progress: `<path>.compact`, holding the copy's file name
/// (a name too long for that is cut short with a hash, [`name_beside`]). Here, beside the
/// create's, for the backup that refuses a target either names (R26).
pub(crate) fn compaction_marker(path: &Path) -> PathBuf {
    name_beside(path, "", ".compact", NAME_MAX)
}

/// R14: a `create` in progress, or one a crash cut short. The marker is made (its directory
/// synced) before anything else of the database and removed (synced) once the database is
/// complete, and a create holds its lock meanwhile: a marker nobody holds belongs to a create
/// that never returned its database, so nothing it made holds data anyone was told is
/// committed.
pub(crate) struct Creating {
    marker: PathBuf,
    _lock: FileLock,
}

impl Creating {
    /// Claims `path` for a create: refused if a database is there ([`BufferError::Io`] of kind
    /// `AlreadyExists`) or another create is making it ([`Error::AlreadyOpen`]). What a create
    /// that a crash cut short left (the marker, the file, the log directory's contents) is
    /// removed first; the log directory itself stays, empty.
    ///
    /// [`BufferError::Io`]: swizzledb_buffer::BufferError::Io
    pub(crate) fn begin(vfs: &dyn Vfs, path: &Path) -> Result<Creating> {
        let marker = creating_marker(path);
        let cut_short = vfs.exists(&marker);
        if !cut_short && vfs.exists(path) {
            let source = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the database file exists");
            return Err(io(path, source));
        }
        let mode = if cut_short { OpenMode::EXISTING } else { OpenMode::CREATE_NEW };
        let file = vfs.open(&marker, mode).map_err(|e| match e.kind() {
            // Another create made it, or finished, since the check above.
            std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound => {
                Error::AlreadyOpen(path.to_path_buf())
            }
            _ => io(&marker, e),
        })?;
        let lock = FileLock::take(file, &marker, path)?;
        if cut_short {
            log::info!("{}: removing what a create that was cut short left", path.display());
            match vfs.remove(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(path, e)),
                _ => {}
            }
            let wal = wal_dir(path);
            remove_contents(vfs, &wal)?;
            if vfs.exists(&wal) {
                vfs.sync_dir(&wal).map_err(|e| io(&wal, e))?;
            }
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        vfs.sync_dir(dir).map_err(|e| io(dir, e))?;
        Ok(Creating { marker, _lock: lock })
    }

    /// The database is complete: the marker goes (its directory synced before the database is
    /// handed out, so that a crash never brings it back over committed data).
    pub(crate) fn finish(self, vfs: &dyn Vfs) -> Result<()> {
        vfs.remove(&self.marker).map_err(|e| io(&self.marker, e))?;
        let dir = self.marker.parent().unwrap_or(Path::new(""));
        vfs.sync_dir(dir).map_err(|e| io(dir, e))
    }
}

/// R14: what `open` says of `path` while a create's marker is beside it: [`Error::AlreadyOpen`]
/// while a create holds it, else [`Error::NotFound`] (a create a crash cut short: no database
/// is there, and `create` or `open_or_create` makes one); `None` without a marker.
pub(crate) fn cut_short_create(vfs: &dyn Vfs, path: &Path) -> Option<Error> {
    let marker = creating_marker(path);
    if !vfs.exists(&marker) {
        return None;
    }
    match FileLock::acquire(vfs, &marker, path) {
        Ok(_) => Some(Error::NotFound(path.to_path_buf())),
        Err(e @ Error::AlreadyOpen(_)) => Some(e),
        // Gone since the check: its create finished.
        Err(_) => None,
    }
}

/// Removes every file and directory under `dir` (nothing where it cannot be listed), going on
/// past a failure: `left` hears of each entry that stays.
pub(crate) fn remove_under(vfs: &dyn Vfs, dir: &Path, left: &mut dyn FnMut(&Path, std::io::Error)) {
    let Ok(entries) = vfs.list(dir) else { return };
    for entry in entries {
        let removed = match vfs.remove(&entry) {
            Err(_) if vfs.list(&entry).is_ok() => {
                remove_under(vfs, &entry, left);
                vfs.remove_dir(&entry)
            }
            removed => removed,
        };
        if let Err(e) = removed {
            left(&entry, e);
        }
    }
}

/// Removes everything under `dir` on `vfs` (nothing where it cannot be listed); the first
/// entry that stays is the error.
fn remove_contents(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let mut failed = None;
    remove_under(vfs, dir, &mut |entry, e| {
        failed.get_or_insert_with(|| io(entry, e));
    });
    failed.map_or(Ok(()), Err)
}

/// Removes the directory `dir` and everything under it on `vfs`, as `std::fs::remove_dir_all`
/// does; the first entry that stays is the error. A `dir` that is a symbolic link (io IO17) is
/// removed as a link, as `std::fs::remove_dir_all` does:
/// what it leads to stays (R28: a compaction's swap through a linked log directory emptied the
/// directory the link led to, then failed on the link, and so did every open after it).
pub(crate) fn remove_dir_all(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    if vfs.is_symlink(dir) {
        return vfs.remove(dir).map_err(|e| io(dir, e));
    }
    remove_contents(vfs, dir)?;
    vfs.remove_dir(dir).map_err(|e| io(dir, e))
}

/// The length of the file at `path` on `vfs`.
pub(crate) fn file_len(vfs: &dyn Vfs, path: &Path) -> Result<u64> {
    vfs.open(path, OpenMode::EXISTING).and_then(|f| f.len()).map_err(|e| io(path, e))
}

/// The most of a small file (a compaction's marker, R28) that [`read_small`] reads: a file
/// name, at most 255 bytes on the usual file systems, with room to spare.
const SMALL_FILE_MAX: u64 = 4096;

/// The bytes of the small file at `path` on `vfs`, up to [`SMALL_FILE_MAX`] of them.
pub(crate) fn read_small(vfs: &dyn Vfs, path: &Path) -> std::io::Result<Vec<u8>> {
    let file = vfs.open(path, OpenMode::EXISTING)?;
    let mut bytes = vec![0; file.len()?.min(SMALL_FILE_MAX) as usize];
    let mut at = 0;
    while at < bytes.len() {
        match file.read_at(&mut bytes[at..], at as u64)? {
            0 => break,
            n => at += n,
        }
    }
    bytes.truncate(at);
    Ok(bytes)
}

/// Writes `bytes` into a new file at `path` on `vfs` and syncs it (not its directory).
pub(crate) fn write_new_synced(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> Result<()> {
    let file = vfs.open(path, OpenMode::CREATE_NEW).map_err(|e| io(path, e))?;
    file.write_all_at(bytes, 0).and_then(|()| file.sync()).map_err(|e| io(path, e))
}

/// Makes the entries of the directory `path` is in durable (renames, creates, removes).
pub(crate) fn sync_dir_of(vfs: &dyn Vfs, path: &Path) -> Result<()> {
    let dir = directory_of(path);
    vfs.sync_dir(dir).map_err(|e| io(dir, e))
}

/// The directory `path` is in (`.` for a bare file name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}
