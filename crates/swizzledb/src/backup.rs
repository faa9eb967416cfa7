//! Backup (RECOVERY.md R26): a consistent, compacted copy of a database, written as a new
//! database beside its target path and renamed into place only once it is complete and closed.

use std::ops::Bound::Unbounded;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use swizzledb_btree::TreeError;
use swizzledb_io::Vfs;

use crate::database::Database;
use crate::error::{Error, Result};
use crate::files::{self, io, wal_dir};

/// What [`Database::backup_to`] copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct BackupStats {
    /// Trees copied.
    pub trees: u64,
    /// Records copied, over all trees.
    pub records: u64,
    /// Bytes of keys and values copied.
    pub record_bytes: u64,
    /// The size of the source's file when the backup began (for an in-memory database, of
    /// its file in memory: page 0 and every page it allocated).
    pub source_file_bytes: u64,
    /// The size of the backup's file: the records in full leaves, without the free pages the
    /// source may hold.
    pub backup_file_bytes: u64,
}

impl Database {
    /// Writes a copy of the database to a new database at `path`, while writers go on, and
    /// returns what it copied. The copy is what a read transaction begun at the call sees
    /// ([`Database::begin_read`]): on a database that keeps versions (logged, with record
    /// locks: the defaults) exactly the transactions committed before it, none in part; on
    /// one that keeps none, writes that run meanwhile may be in it or not, so run it without
    /// writers there. It is compacted: every tree is rewritten in key order into full leaves,
    /// and freed pages are not copied.
    ///
    /// The copy has this database's page size and is logged if this one is, with log segments
    /// of the same size ([`Builder::log_segment_bytes`](crate::Builder::log_segment_bytes)), so
    /// the settings that open this database open it. It is closed cleanly, so it opens on its
    /// own, with its own small log directory (`path` and `<path>.wal`, or `path` alone for an
    /// unlogged database; README "Two things to copy").
    /// It is written under a temporary name in `path`'s directory, closed, and renamed to
    /// `path` last (its log directory first): until then nothing at `path` opens. An error
    /// removes the temporary files; a crash leaves them (`.<name>.backup-*`, with `<name>` cut
    /// short and followed by a hash where the whole would pass 251 bytes), and they may be removed;
    /// a crash between the renames leaves the copy's log directory at `<path>.wal`, which the
    /// next backup to `path` removes with the copy (RECOVERY.md R26).
    /// The copy is written on the database's own file system (the one
    /// [`LabOptions::vfs`](crate::lab::LabOptions::vfs) gives, by default the operating
    /// system's), a read-only open's too; an in-memory database is backed up to the operating
    /// system's.
    ///
    /// # Errors
    /// [`Error::BackupTargetInLog`] if `path` lies in this database's log directory
    /// (`<file>.wal`, however `path` spells it; the archive's directory in it too) or in
    /// another database's (a directory above `path` holds a log directory's identity file),
    /// which that database owns: a compaction removes what is there with the old log directory.
    /// [`Error::BackupTargetExists`] if `path` or `<path>.wal` exists, or the marker of a
    /// create at `path` that a crash cut short or of a compaction of `path` (`<path>.creating`,
    /// `<path>.compact`: an open of `path` would act on it, not open the copy), another backup to
    /// `path` runs in this process (however either spells it: `dir/copy`, `dir/./copy/`, or
    /// through `..` or a symbolic link; R26: two would race to the renames), or a backup of
    /// another process put its copy there first (the renames never replace); the errors of reading
    /// this database (a tree dropped during the backup, also one created again under its
    /// name meanwhile: [`Error::TreeNotFound`]; a read
    /// transaction ended for memory: [`Error::SnapshotTooOld`]) and of writing the copy. On
    /// an error nothing is left at `path`.
    pub fn backup_to(&self, path: impl AsRef<Path>) -> Result<BackupStats> {
        // `dir/copy/` and `dir/./copy` name `dir/copy`: a trailing slash passed the check below
        // for a file there (`stat` of `copy/` fails on a file) and named the log `copy/.wal`.
        let path: &Path = &path.as_ref().components().collect::<PathBuf>();
        self.check_outside_log(path)?;
        let _target = Claim::take(path)?;
        let logged = self.file_is_logged();
        let shared = self.backup_vfs();
        let vfs = &*shared;
        undo_half_renamed(vfs, path)?;
        // `<path>.wal` even for an unlogged copy: a log directory there would sit beside the
        // copy as if it were its log. And the markers an open of `path` acts on before it reads
        // the file: beside a create's (R14) the copy opened as `NotFound` and `open_or_create`
        // replaced it with an empty database; a compaction's (R28) swapped the copy it names
        // over this one.
        for p in
            [path.to_path_buf(), wal_dir(path), files::creating_marker(path), files::compaction_marker(path)]
        {
            if vfs.exists(&p) {
                return Err(Error::BackupTargetExists(p));
            }
        }
        let temp = temporary_path(path)?;
        let result = self.write_backup(&shared, &temp, logged);
        // The renames never replace (io IO15): a backup of another process (or one this process
        // could not tell names the same target) that got there first keeps its files, and this
        // one is refused as if it had found them.
        let renamed = result.and_then(|stats| {
            if logged {
                rename_into_place(vfs, &wal_dir(&temp), &wal_dir(path))?;
            }
            if let Err(e) = rename_into_place(vfs, &temp, path) {
                if logged {
                    // The log directory renamed a step before is this backup's.
                    let _ = files::remove_dir_all(vfs, &wal_dir(path));
                }
                return Err(e);
            }
            if let Err(e) = files::sync_dir_of(vfs, path) {
                // R26: the copy is complete, but its name may not survive a crash; the backup
                // failed, so nothing is left at the target (the target was free when it began).
                remove_database(vfs, path);
                return Err(e);
            }
            Ok(stats)
        });
        if renamed.is_err() {
            remove_database(vfs, &temp);
        }
        renamed
    }

    /// R26: a target in a database's log directory (however spelled) is refused: the database
    /// owns what is there, and a compaction (R28) removed a backup written there with the old
    /// log directory. A log directory, this database's or another's, is known by the identity
    /// file it holds ([`files::in_a_log_directory`]), looked for on the backup's file system in
    /// each directory above the target, as given and as `Claim` resolves it (links, `..`).
    fn check_outside_log(&self, path: &Path) -> Result<()> {
        if files::in_a_log_directory(&*self.backup_vfs(), path, Some(&Claim::key(path))) {
            return Err(Error::BackupTargetInLog(path.to_path_buf()));
        }
        Ok(())
    }

    /// The file system a backup is written on: the database's own (a read-only open's too,
    /// which reads it through a view that cannot write), or the operating system's for an
    /// in-memory database (whose own is in memory).
    fn backup_vfs(&self) -> Arc<dyn Vfs> {
        if self.core.in_memory {
            Arc::new(swizzledb_io::OsFs)
        } else {
            Arc::clone(&self.core.vfs)
        }
    }

    /// The file's kind, not this open's: a read-only open reads a logged file without its log.
    fn file_is_logged(&self) -> bool {
        self.is_logged() || self.core.pool.file_is_logged()
    }

    /// The copy [`Database::backup_to`] makes, written at `temp` itself rather than under a
    /// temporary name of its own and renamed: a compaction's copy (R28), whose `temp` is
    /// already one ([`temporary_path`]), so that a kill while it copies leaves nothing but
    /// names the next compaction finds ([`abandoned_copies`]).
    pub(crate) fn backup_in_place(&self, temp: &Path) -> Result<BackupStats> {
        self.write_backup(&self.backup_vfs(), temp, self.file_is_logged())
    }

    /// The read transaction a backup copies through, and a handle of every tree it sees (R26).
    /// The handles are taken before the snapshot, and the names read again after it: a tree
    /// created in between is looked up on another round, and one dropped from the handles on
    /// fails the backup when its handle refuses ([`Error::TreeNotFound`]). Handles looked up by
    /// name later, as each tree's turn came, took a tree dropped and created again meanwhile
    /// for the one the snapshot saw, and copied the new tree's records instead: the copy lost
    /// the records the dropped tree held when the backup began.
    fn trees_at_snapshot(&self) -> Result<(crate::ReadTransaction<'_>, Vec<(String, crate::Tree)>)> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut names = self.tree_names();
            let mut trees = Vec::with_capacity(names.len());
            for name in &names {
                match self.tree(name) {
                    Ok(tree) => trees.push((name.clone(), tree)),
                    // Dropped before the snapshot: not part of it.
                    Err(Error::TreeNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            let snapshot = self.begin_read();
            let mut now = self.tree_names();
            names.sort();
            now.sort();
            // Trees created and dropped without end by other threads: after a few rounds a tree
            // created between the handles and the snapshot is left out, as if created after it.
            if now == names || attempts == 8 {
                return Ok((snapshot, trees));
            }
        }
    }

    /// Copies every tree through one read transaction into a new database at `temp`, and
    /// closes it. The copy is written unlogged, so that until it is complete it is a file no
    /// open accepts (an unlogged database not closed cleanly is `Unclean`); a logged source's
    /// copy is then converted to a logged database (a new log with a first checkpoint, R13) and
    /// closed again.
    fn write_backup(&self, vfs: &Arc<dyn Vfs>, temp: &Path, logged: bool) -> Result<BackupStats> {
        let (snapshot, trees) = self.trees_at_snapshot()?;
        // Through the database's own file system: an in-memory database's file is in memory.
        let source = self.core.pool.path();
        let source_file_bytes =
            self.core.vfs.open_read_only(source).and_then(|f| f.len()).map_err(|e| io(source, e))?;
        let mut stats = BackupStats { source_file_bytes, ..BackupStats::default() };
        let on_vfs = |mut builder: crate::Builder| {
            builder.config.vfs = Arc::clone(vfs);
            builder
        };
        let mut builder = on_vfs(Database::builder().page_size(self.core.pool.page_size()).logging(false));
        // Not CLEAN until its close: a copy left half-written by a crash never opens.
        builder.config.create_unclean = true;
        let copy = builder.create(temp)?;
        for (name, from) in &trees {
            let to = copy.create_tree(name)?;
            for record in snapshot.range(from, Unbounded, Unbounded) {
                let (k, v) = record.map_err(|e| match e {
                    // Dropped while it was copied: the error of one dropped before it was found.
                    TreeError::Dropped => Error::TreeNotFound(crate::error::shown_name(name)),
                    e => crate::isolation::engine_error(e),
                })?;
                to.insert(&k, &v)?;
                stats.records += 1;
                stats.record_bytes += (k.len() + v.len()) as u64;
            }
            stats.trees += 1;
        }
        drop(snapshot);
        copy.close()?;
        if logged {
            // The source's segment size (R14: fixed when a log is created), so that the
            // settings that open the source open the copy: its log bound was checked against
            // that size. A read-only open has no log: the log directory's identity file says it.
            let segment_bytes = match &self.core.wal {
                Some(wal) => Some(wal.log.segment_bytes()),
                None => files::read_identity(&*self.core.vfs, &wal_dir(self.core.pool.path()))
                    .ok()
                    .map(|(_, bytes)| bytes),
            };
            let mut convert = on_vfs(Database::builder().logging(true).lab(|l| l.convert_to_logged(true)));
            // A log made before segments had to hold two pages gets the least that does.
            let least = crate::MIN_SEGMENT_PAGES * self.core.pool.page_size() as u64;
            if let Some(bytes) = segment_bytes.map(|bytes| bytes.max(least)) {
                convert = convert
                    .log_segment_bytes(bytes)
                    .max_log_bytes(crate::DEFAULT_MAX_LOG_BYTES.max(4 * bytes));
            }
            convert.open(temp)?.close()?;
        }
        stats.backup_file_bytes = files::file_len(&**vfs, temp)?;
        Ok(stats)
    }
}

/// The targets of the backups running in this process (R26).
static TARGETS: parking_lot::Mutex<Vec<PathBuf>> = parking_lot::Mutex::new(Vec::new());

/// A running backup's hold on its target (R26): while it lives, another backup to the same
/// path in this process is refused with [`Error::BackupTargetExists`]. Without it two backups
/// to one path both found it free, and raced to the renames: the second file's rename replaced
/// the first copy while both returned `Ok`, or the second log directory's rename failed with
/// an I/O error, whose clean-up could remove the first copy's log directory between its two
/// renames.
struct Claim(PathBuf);

impl Claim {
    fn take(path: &Path) -> Result<Claim> {
        let target = Claim::key(path);
        let mut targets = TARGETS.lock();
        if targets.contains(&target) {
            return Err(Error::BackupTargetExists(path.to_path_buf()));
        }
        targets.push(target.clone());
        Ok(Claim(target))
    }

    /// One spelling per target: the path resolved on the operating system's file system
    /// ([`files::resolved_on_os`]), else (a file system in memory has no links) taken against
    /// the working directory with `.` and `..` dropped as written. Keyed by the path as given,
    /// `dir/copy`, `dir/sub/../copy` and `link/copy` were three targets, whose backups raced to
    /// the renames.
    fn key(path: &Path) -> PathBuf {
        files::resolved_on_os(path).unwrap_or_else(|| {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            let mut resolved = PathBuf::new();
            for part in absolute.components() {
                match part {
                    std::path::Component::ParentDir => {
                        resolved.pop();
                    }
                    std::path::Component::CurDir => {}
                    part => resolved.push(part),
                }
            }
            resolved
        })
    }
}

/// Renames a backup's file or log directory from its temporary name to its name at the
/// target, where nothing may be (io IO15): something there is another backup's, which got
/// there first, and the error is [`Error::BackupTargetExists`].
fn rename_into_place(vfs: &dyn Vfs, from: &Path, to: &Path) -> Result<()> {
    vfs.rename_no_replace(from, to).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::DirectoryNotEmpty => {
            Error::BackupTargetExists(to.to_path_buf())
        }
        _ => io(to, e),
    })
}

impl Drop for Claim {
    fn drop(&mut self) {
        TARGETS.lock().retain(|t| *t != self.0);
    }
}

/// A name for the backup in progress, in `path`'s directory: `.<name>.backup-<pid>-<nanos>`,
/// with `<name>` cut short and a hash of it where the name and its log directory's
/// (`.wal`) would pass the file system's limit (`files::name_beside`): a compaction backs
/// up to such a name, and so backs up from one.
pub(crate) fn temporary_path(path: &Path) -> Result<PathBuf> {
    if path.file_name().is_none() {
        return Err(io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the backup's path names no file"),
        ));
    }
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    Ok(temporary_name(path, std::process::id(), nanos))
}

/// The temporary name [`temporary_path`] gives a backup to `path` made by process `pid` at
/// `nanos`.
fn temporary_name(path: &Path, pid: u32, nanos: u128) -> PathBuf {
    let suffix = format!(".backup-{pid}-{nanos}");
    crate::files::name_beside(path, ".", &suffix, crate::files::NAME_MAX - ".wal".len())
}

/// The temporary copies beside `path` that backups to `path` left when their process died (a
/// kill before the rename): names [`temporary_path`] makes, with or without `.wal`, whose
/// process (the pid in the name) no longer runs. Empty where the system does not list its
/// processes in `/proc`: a copy whose process cannot be told dead is never named.
pub(crate) fn abandoned_copies(vfs: &dyn Vfs, path: &Path) -> Vec<PathBuf> {
    if !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let Ok(entries) = vfs.list(files::directory_of(path)) else { return Vec::new() };
    let mut copies: Vec<PathBuf> = entries
        .into_iter()
        .filter_map(|entry| {
            let name = entry.file_name()?.to_str()?.to_owned();
            let base = name.strip_suffix(".wal").unwrap_or(&name);
            let (_, tail) = base.rsplit_once(".backup-")?;
            let (pid, nanos) = tail.split_once('-')?;
            let (pid, nanos): (u32, u128) = (pid.parse().ok()?, nanos.parse().ok()?);
            let copy = temporary_name(path, pid, nanos);
            let dead = !Path::new("/proc").join(pid.to_string()).exists();
            (copy.file_name()? == base && dead).then_some(copy)
        })
        .collect();
    copies.sort();
    copies.dedup();
    copies
}

/// R26: a backup to `path` killed between its two renames left its copy's log directory at
/// `<path>.wal` and its file under its temporary name, and every later backup to `path` was
/// refused ([`Error::BackupTargetExists`]). When nothing is at `path`, and `<path>.wal` is the
/// log of such a copy — one whose process is gone ([`abandoned_copies`]), whose own log
/// directory is missing and whose page 0 names the database `<path>.wal`'s identity file names
/// — the backup never reached its commit point (the file's rename): both are removed.
fn undo_half_renamed(vfs: &dyn Vfs, path: &Path) -> Result<()> {
    let log = wal_dir(path);
    if vfs.exists(path) || !vfs.exists(&log) {
        return Ok(());
    }
    let Ok((id, _)) = files::read_identity(vfs, &log) else { return Ok(()) };
    let copy = abandoned_copies(vfs, path).into_iter().find(|copy| {
        !vfs.exists(&wal_dir(copy))
            && swizzledb_buffer::PageFile::open_logged(vfs, copy, false).is_ok_and(|(_, meta)| meta.id == id)
    });
    if let Some(copy) = copy {
        files::remove_dir_all(vfs, &log)?;
        vfs.remove(&copy).map_err(|e| io(&copy, e))?;
        files::sync_dir_of(vfs, path)?;
    }
    Ok(())
}

/// Removes a database file and its log directory on `vfs`, as far as they exist (best effort:
/// what is left has a temporary name that never opens as the backup).
pub(crate) fn remove_database(vfs: &dyn Vfs, path: &Path) {
    let _ = vfs.remove(path);
    let _ = files::remove_dir_all(vfs, &wal_dir(path));
}
