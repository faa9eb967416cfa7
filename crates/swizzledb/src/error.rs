//! The engine's error type.

use std::path::PathBuf;

use swizzledb_btree::TreeError;
use swizzledb_buffer::{BufferError, TraceError};
use swizzledb_sync::{Lsn, PageId};
use swizzledb_wal::LogError;

use crate::lock;

/// Every error SwizzleDB returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tree of that name exists (the name as [`Error::InvalidTreeName`] shows it: cut to
    /// its first 64 characters and `…` when longer, as no tree's name is).
    #[error("no tree named {0:?}; create it with Database::create_tree")]
    TreeNotFound(String),
    /// The tree cannot be dropped now: a transaction kept running (or instant restart is still
    /// rolling back losers) for the two seconds [`Database::drop_tree`](crate::Database::drop_tree) waits.
    #[error(
        "the tree {0:?} cannot be dropped while transactions run; finish them (and any this thread \
         holds) and retry"
    )]
    TreeBusy(String),
    /// A tree of that name exists already.
    #[error("a tree named {0:?} exists already; open it with Database::tree")]
    TreeExists(String),
    /// The tree name is empty, too long or not valid.
    #[error("invalid tree name {name:?}: {reason}")]
    InvalidTreeName {
        /// The name given, or its first 64 characters followed by `…` when it is longer (its
        /// length is in `reason`): the error stays small whatever the name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A transaction was given a tree handle of another database, or of an earlier open of
    /// this one: nothing was read, locked or changed.
    #[error(
        "the tree handle belongs to another database than this transaction's; take the tree \
         from the transaction's own database (Database::tree)"
    )]
    ForeignTree,
    /// The code running in [`Database::transact`](crate::Database::transact) asked to roll back (it returned
    /// `Err(Error::Aborted(reason))`): the transaction was rolled back and not retried.
    #[error("the transaction rolled back at its own request: {0}")]
    Aborted(String),
    /// A tree operation failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The buffer pool or the file failed.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Writing the buffer reference trace failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The write-ahead log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A record lock could not be granted: abort the transaction and retry it (LOCKS.md).
    #[error(transparent)]
    Lock(lock::LockError),
    /// A request would have waited for a lock of a transaction whose rollback failed (the
    /// database's log or file failed): that transaction keeps its locks, so that no one reads
    /// its changes, until the database is reopened (RECOVERY.md R5a, LOCKS.md K9a). Not worth
    /// a retry: every later wait fails the same way.
    #[error(
        "a transaction could not be rolled back ({cause}), so it keeps its locks until the \
         database is reopened, and this request would have waited for one: close and reopen the \
         database (restart finishes the rollback)"
    )]
    RollbackFailed {
        /// The error that stopped the rollback.
        cause: String,
    },
    /// A log record restart needs is damaged or missing (RECOVERY.md R10).
    #[error("log corrupted at {lsn}: {reason}; restore the database and its log from a backup")]
    LogCorrupted {
        /// Where.
        lsn: Lsn,
        /// What was found.
        reason: String,
    },
    /// A page's copy in the file is damaged or older than its last write, and single-page
    /// recovery could not rebuild it from the log (RECOVERY.md R18), where the engine itself
    /// brings pages up to the log: the decoupled cleaner's propagation (R20) at a flush, a
    /// checkpoint or a close. A read of such a page through a tree fails instead with
    /// `Error::Tree(TreeError::Buffer(BufferError::Corrupted { .. }))`, which names the page
    /// and why it could not be rebuilt (R18).
    #[error(
        "page {page} is damaged and cannot be rebuilt from the log: {reason}; restore the database \
         from a backup (a log archive, Builder::log_archive, makes every page rebuildable)"
    )]
    PageUnrecoverable {
        /// The page.
        page: PageId,
        /// Why it could not be rebuilt.
        reason: String,
    },
    /// A new database's log directory exists already and holds files: they belong to another
    /// database and would be replayed onto this one.
    #[error("the log directory {0} exists and is not empty; remove it or choose another path")]
    StaleLog(std::path::PathBuf),
    /// [`Builder::create`](crate::Builder::create) was given a path in a directory that does
    /// not exist: nothing was made. A create makes the database's file and its log directory,
    /// never the directories they go in.
    #[error("the directory {0} does not exist; create it first, or choose a path in an existing directory")]
    DirectoryMissing(PathBuf),
    /// [`Builder::create`](crate::Builder::create) (or
    /// [`Builder::open_or_create`](crate::Builder::open_or_create) where it creates) was given
    /// a path in a database's log directory, which that database owns: a compaction removes
    /// what is there with the old log directory. Nothing was made.
    #[error(
        "{0} lies in a database's log directory, which that database owns (a compaction removes \
         everything in it); choose a path outside it"
    )]
    InLogDirectory(PathBuf),
    /// [`Database::backup_to`](crate::Database::backup_to) would overwrite something: its
    /// target, the target's log directory, or a create's or compaction's marker beside the
    /// target (`<target>.creating`, `<target>.compact`) exists, or another backup to the same
    /// target runs in this process.
    #[error(
        "the backup's target {0} exists already (or another backup in this process writes it); \
         choose a new path, or remove it (with the database's log directory)"
    )]
    BackupTargetExists(PathBuf),
    /// [`Database::backup_to`](crate::Database::backup_to) was given a target in a database's
    /// log directory: the source's own (`<file>.wal`, however the path spells it) or another
    /// one's, which that database owns: a compaction removes what is there with the old log
    /// directory. Nothing was written.
    #[error(
        "the backup's target {0} is in a database's log directory, which that database owns \
         (a compaction removes everything in it); choose a path outside it"
    )]
    BackupTargetInLog(PathBuf),
    /// A typed tree's codec could not encode an item, or decode stored bytes
    /// ([`crate::typed::Codec`]): the tree holds records written another way.
    #[error("a typed tree's codec failed: {reason}")]
    Codec {
        /// What did not fit the codec.
        reason: String,
    },
    /// [`Builder::read_only`](crate::Builder::read_only) found a logged database that was
    /// not closed cleanly, or a compaction a crash cut short (RECOVERY.md R28): restart, or
    /// finishing the compaction, would write to bring it back (RECOVERY.md R27).
    #[error("{0} was not closed cleanly, or a compaction of it was cut short, and needs restart, which writes: open it once without Builder::read_only (or with `swizzledb backup`), then read-only")]
    NeedsRestart(PathBuf),
    /// [`Builder::open`](crate::Builder::open) found no file at the path, or only what a
    /// create that a crash cut short left (RECOVERY.md R14), which the next create removes.
    #[error("no database at {0}; create it with Builder::create or Builder::open_or_create")]
    NotFound(PathBuf),
    /// The database file is open already, in this or another process (RECOVERY.md R13).
    #[error("{0} is open already (in this or another process); close it there before opening it again")]
    AlreadyOpen(PathBuf),
    /// A logged database's log directory is missing, empty or damaged (R14): without it the
    /// committed changes since the last checkpoint cannot be recovered.
    #[error(
        "{file} is a logged database but its log {dir} cannot be used: {reason}; restore the log \
         directory beside the file (or, if the database was being created when it stopped, remove \
         the file and its log directory and create it again)"
    )]
    LogMissing {
        /// The database file.
        file: PathBuf,
        /// Its log directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The log directory belongs to another database (R14).
    #[error("the log {dir} belongs to another database than {file}; put the file's own log beside it")]
    ForeignLog {
        /// The database file.
        file: PathBuf,
        /// The log directory found.
        dir: PathBuf,
    },
    /// `logging(true)` was asked of a database created without a log (R13).
    #[error(
        "{0} was created without a write-ahead log: open it without .logging(true), or convert it \
         with Builder::lab(|lab| lab.convert_to_logged(true))"
    )]
    NotLogged(PathBuf),
    /// An unlogged database was not closed cleanly (R13): its pages may be half-written and
    /// nothing can repair them. Also what [`Database::close`](crate::Database::close) of an
    /// unlogged database returns after a rollback failed (RECOVERY.md R5a): the changes it left
    /// are not written as if committed, and the file stays unclean.
    #[error(
        "{0} has no write-ahead log and was not closed cleanly, so it may be damaged and cannot be \
         recovered; restore it from a backup, or open it with Builder::discard_unclean(true) to \
         start over with an empty database"
    )]
    Unclean(PathBuf),
    /// A snapshot (a read-only or snapshot-isolation transaction's, or a range read's) was
    /// ended because the versions it needed outgrew
    /// [`Builder::version_memory`](crate::Builder::version_memory) (LOCKS.md K20).
    #[error(
        "the snapshot this read began with is too old: the changes made since it began outgrew \
         the version memory of {limit} bytes; end the transaction or the scan and begin a new \
         one, keep snapshots short, or raise Builder::version_memory"
    )]
    SnapshotTooOld {
        /// The bound that was passed.
        limit: usize,
    },
    /// A snapshot-isolation transaction wrote a key that another transaction changed and
    /// committed after the snapshot began (LOCKS.md K24, first updater wins): nothing changed;
    /// abort and retry it (`Database::transact_snapshot` does).
    #[error(
        "a key of tree {tree} was changed by a transaction that committed after this \
         snapshot-isolation transaction began (first updater wins): abort and retry it"
    )]
    WriteConflict {
        /// The tree (its root page).
        tree: u64,
        /// The key.
        key: Box<[u8]>,
    },
}

/// The characters of a name an error shows at most.
const SHOWN_NAME_CHARS: usize = 64;

/// `name` as an error shows it: whole, or its first 64 characters and `…`.
pub(crate) fn shown_name(name: &str) -> String {
    match name.char_indices().nth(SHOWN_NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name.to_owned(),
    }
}

/// Result alias with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<lock::LockError> for Error {
    /// A lock error as the engine reports it: a wait ended for a failed rollback is
    /// [`Error::RollbackFailed`], which no retry cures; every other is [`Error::Lock`].
    fn from(e: lock::LockError) -> Error {
        match e {
            lock::LockError::WaitsEnded { cause, .. } => Error::RollbackFailed { cause },
            e => Error::Lock(e),
        }
    }
}
