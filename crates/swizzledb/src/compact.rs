//! Compaction (RECOVERY.md R28): a database is rewritten by a backup (R26) beside it, and the
//! copy replaces it under a marker file that makes the swap of file and log directory finish
//! at the next open if a crash stops it half-way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use swizzledb_io::Vfs;

use crate::backup::{abandoned_copies, remove_database, temporary_path};
use crate::builder::Builder;
use crate::error::Result;
use crate::files::{self, io, wal_dir};

/// What [`Builder::compact`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct CompactStats {
    /// The file's size before, after a clean close.
    pub file_bytes_before: u64,
    /// The file's size after.
    pub file_bytes_after: u64,
    /// Trees rewritten.
    pub trees: u64,
    /// Records rewritten, over all trees.
    pub records: u64,
}

/// The marker of a compaction in progress (`files::compaction_marker`).
fn marker(path: &Path) -> PathBuf {
    files::compaction_marker(path)
}

/// Where a marker is written before it is renamed to [`marker`]: `<path>.compact-new`.
fn marker_being_written(path: &Path) -> PathBuf {
    files::name_beside(path, "", ".compact-new", files::NAME_MAX)
}

/// Where the replaced log directory waits to be removed: `<path>.wal-replaced` (cut short
/// with a hash like the marker).
fn replaced_wal(path: &Path) -> PathBuf {
    files::name_beside(path, "", ".wal-replaced", files::NAME_MAX)
}

impl Builder {
    /// Compacts the database at `path`, which no process may have open: opens it with these
    /// settings (restarting it if it needs it), writes a compacted copy beside it
    /// ([`crate::Database::backup_to`]: every tree rewritten in key order into full leaves,
    /// no free pages), and replaces the file and its log directory with the copy's. The file
    /// shrinks by the pages that deletes and [`crate::Database::drop_tree`] freed.
    ///
    /// The swap renames the names at `path` and `<path>.wal`: where they are symbolic links,
    /// the compacted database takes their place, and the files they led to stay as they were
    /// (the old database, whole; RECOVERY.md R28).
    ///
    /// The log archive ([`Builder::log_archive`]) goes with the old log directory: its runs are
    /// histories of the old file's pages, which the copy does not have. The compacted database
    /// keeps no archive until it is opened with `log_archive(true)`, which starts a new one.
    ///
    /// The replacement is crash-safe (RECOVERY.md R28): a marker file, `<path>.compact`
    /// (a name too long for that is cut short and followed by a hash of it), written once
    /// the copy is complete, names it; a crash after that leaves the swap to the
    /// next open, which finishes it before anything else; a crash before it leaves the
    /// database as it was, beside temporary files (`.<name>.backup-*`) that may be removed,
    /// and that the next compaction removes where the system says their process is gone
    /// (`/proc`).
    ///
    /// # Errors
    /// As [`Builder::open`] and [`crate::Database::backup_to`]; [`crate::Error::AlreadyOpen`] if
    /// another process opened the database meanwhile (nothing is replaced then). A read-only
    /// builder ([`Builder::read_only`]) refuses before it opens anything, as compaction
    /// replaces the file: [`crate::Error::Tree`] holding
    /// [`TreeError::ReadOnly`](crate::TreeError::ReadOnly).
    pub fn compact(self, path: impl AsRef<Path>) -> Result<CompactStats> {
        let path = path.as_ref();
        if self.read_only {
            return Err(crate::Error::Tree(swizzledb_btree::TreeError::ReadOnly));
        }
        // Every step on the database's own file system, the copy's too (R26).
        let vfs = Arc::clone(&self.config.vfs);
        let vfs = &*vfs;
        let db = self.open(path)?;
        // R28: the copies of compactions killed before their commit point go (the open
        // finished any that passed it, and this one holds the database's lock).
        for copy in abandoned_copies(vfs, path) {
            remove_database(vfs, &copy);
        }
        // And the marker a compaction was writing when it was killed: a compaction writes it
        // under the lock this open holds, so none is writing it now, and it marks no commit
        // point until it is renamed.
        let (m, new) = (marker(path), marker_being_written(path));
        match vfs.remove(&new) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&new, e)),
            _ => {}
        }
        let temp = temporary_path(path)?;
        // Written at `temp` itself: through `backup_to`, under a temporary name of that
        // temporary name, a kill while copying left a copy no compaction recognized.
        let copied = db.backup_in_place(&temp);
        let closed = db.close();
        let stats = match (copied, closed) {
            (Ok(stats), Ok(())) => stats,
            (Err(e), _) | (Ok(_), Err(e)) => {
                remove_database(vfs, &temp);
                return Err(e);
            }
        };
        // No process may open the old file between the close and the swap (its writes would
        // be lost): its lock, held until the swap is done; a process that took it first wins.
        // The copy's file too: once the swap renames it over the old one, the database's name
        // leads to it, and an open meanwhile must find it locked rather than finish the swap
        // beside this one. Every error before the commit point removes the copy: left by an
        // error, it stayed for good, as no compaction removes the copy of a running process.
        let locked = files::FileLock::acquire(vfs, path, path)
            .and_then(|old| Ok((old, files::FileLock::acquire(vfs, &temp, path)?)))
            .and_then(|locks| Ok((locks, files::file_len(vfs, path)?)));
        let (locks, before) = match locked {
            Ok(locked) => locked,
            Err(e) => {
                remove_database(vfs, &temp);
                return Err(e);
            }
        };
        let name = temp.file_name().unwrap_or_default().to_string_lossy().into_owned();
        // The marker appears whole or not at all: written and synced under another name, then
        // renamed. Written in place, a crash between its creation and its write left it empty.
        let written = files::write_new_synced(vfs, &new, name.as_bytes())
            .and_then(|()| vfs.rename(&new, &m).map_err(|e| io(&m, e)));
        if let Err(e) = written {
            // Before the commit point: the database stays as it was, without the copy.
            let _ = vfs.remove(&new);
            remove_database(vfs, &temp);
            return Err(e);
        }
        files::sync_dir_of(vfs, path)?;
        // The commit point is behind us: the swap finishes, now or at the next open.
        finish(vfs, path)?;
        drop(locks);
        // The copy's length, now the file's: measured again here, an error would report a
        // compaction that is done as failed.
        Ok(CompactStats {
            file_bytes_before: before,
            file_bytes_after: stats.backup_file_bytes,
            trees: stats.trees,
            records: stats.records,
        })
    }
}

/// Whether a compaction's marker is beside `path` on `vfs` (R28).
pub(crate) fn is_pending(vfs: &dyn Vfs, path: &Path) -> bool {
    vfs.exists(&marker(path))
}

/// R28: finishes a compaction whose marker is at `path` on `vfs`, if there is one, under the
/// locks of the file at `path` and of the copy: a compaction still swapping holds both
/// ([`crate::Error::AlreadyOpen`]), and so does this call while it finishes the swap.
pub(crate) fn finish_pending(vfs: &dyn Vfs, path: &Path) -> Result<()> {
    if !is_pending(vfs, path) {
        return Ok(());
    }
    let _lock = files::FileLock::acquire(vfs, path, path)?;
    // A compaction that held the lock until now has finished its swap.
    let Some(copy) = copy_named(vfs, path)? else { return Ok(()) };
    let _copy = if vfs.exists(&copy) { Some(files::FileLock::acquire(vfs, &copy, path)?) } else { None };
    finish(vfs, path)
}

/// The copy a compaction's marker at `path` names; `None` without a marker, and without an
/// empty one, which this removes: such a marker names no copy, so its compaction never reached
/// its commit point (a crash between the marker's creation and its write, when it was written in
/// place) and the database is the old one.
fn copy_named(vfs: &dyn Vfs, path: &Path) -> Result<Option<PathBuf>> {
    let m = marker(path);
    match files::read_small(vfs, &m) {
        Ok(name) if String::from_utf8_lossy(&name).trim().is_empty() => {
            vfs.remove(&m).map_err(|e| io(&m, e))?;
            files::sync_dir_of(vfs, path)?;
            Ok(None)
        }
        Ok(name) => Ok(Some(path.with_file_name(String::from_utf8_lossy(&name).trim()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&m, e)),
    }
}

/// The swap (R28): the old log directory aside, the copy's in its place, the copy's file over
/// the old one, the old log directory removed, the marker removed. Each step is skipped once
/// done, so a crash anywhere in here only repeats the rest at the next call.
fn finish(vfs: &dyn Vfs, path: &Path) -> Result<()> {
    let m = marker(path);
    let name = files::read_small(vfs, &m).map_err(|e| io(&m, e))?;
    let temp = path.with_file_name(String::from_utf8_lossy(&name).trim());
    let (old, new, replaced) = (wal_dir(path), wal_dir(&temp), replaced_wal(path));
    // An unlogged database's copy has no log directory: nothing to swap there.
    if vfs.exists(&new) {
        if vfs.exists(&old) {
            if vfs.exists(&replaced) {
                files::remove_dir_all(vfs, &replaced)?;
            }
            vfs.rename(&old, &replaced).map_err(|e| io(&old, e))?;
        }
        vfs.rename(&new, &old).map_err(|e| io(&new, e))?;
    }
    if vfs.exists(&temp) {
        vfs.rename(&temp, path).map_err(|e| io(path, e))?;
    }
    files::sync_dir_of(vfs, path)?;
    if vfs.exists(&replaced) {
        files::remove_dir_all(vfs, &replaced)?;
    }
    vfs.remove(&m).map_err(|e| io(&m, e))?;
    files::sync_dir_of(vfs, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R28: the swap finishes from every state a crash can leave it in, and ends with the
    /// copy's file and log directory in place, the old ones gone, and no marker; so it does
    /// for the longest name a logged database takes (its `.wal` fills the 255 bytes), whose
    /// marker, replaced log and copy have names cut short.
    #[test]
    fn r28_the_swap_finishes_from_every_step() {
        for name in ["db.swz".to_owned(), "n".repeat(251)] {
            for crash_after in 0..4 {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join(&name);
                let temp = temporary_path(&path).unwrap();
                std::fs::write(&path, b"old").unwrap();
                std::fs::create_dir(wal_dir(&path)).unwrap();
                std::fs::write(wal_dir(&path).join("x"), b"old log").unwrap();
                std::fs::write(&temp, b"new").unwrap();
                std::fs::create_dir(wal_dir(&temp)).unwrap();
                std::fs::write(wal_dir(&temp).join("x"), b"new log").unwrap();
                std::fs::write(marker(&path), temp.file_name().unwrap().as_encoded_bytes()).unwrap();
                // The steps `finish` takes, stopped after `crash_after` of them.
                let steps: [&dyn Fn(); 3] = [
                    &|| std::fs::rename(wal_dir(&path), replaced_wal(&path)).unwrap(),
                    &|| std::fs::rename(wal_dir(&temp), wal_dir(&path)).unwrap(),
                    &|| std::fs::rename(&temp, &path).unwrap(),
                ];
                for step in steps.iter().take(crash_after) {
                    step();
                }
                finish_pending(&swizzledb_io::OsFs, &path).unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), b"new", "after {crash_after} steps");
                assert_eq!(std::fs::read(wal_dir(&path).join("x")).unwrap(), b"new log");
                assert!(!marker(&path).exists() && !replaced_wal(&path).exists() && !temp.exists());
                finish_pending(&swizzledb_io::OsFs, &path).unwrap();
            }
        }
    }
}
