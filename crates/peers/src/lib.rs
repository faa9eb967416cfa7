//! The peer engines SwizzleDB is measured beside, opened here: LMDB through `heed`.
//!
//! heed marks two calls `unsafe`: [`heed::EnvOpenOptions::flags`] (flags such as `MDB_NOSYNC`
//! give up crash safety, and a database damaged by a crash can make later reads undefined) and
//! [`heed::EnvOpenOptions::open`] (the memory map is undefined behaviour if the file is changed
//! behind LMDB's back). The lab forbids `unsafe`, so both calls live in [`create_lmdb`], which
//! upholds their contract by one rule:
//!
//! **One process creates the environment once, in a directory that did not exist, and the file
//! is not opened elsewhere.** [`create_lmdb`] creates the directory itself (failing if it
//! exists), so no earlier environment, damaged or not, is ever opened, and no other process
//! knows the file; the caller must not open or change the files in it by any other means while
//! the environment lives, and must not open them again after it (it never does: the lab deletes
//! the directory when the run ends).
//!
//! Everything done with the environment afterwards (transactions, reads, writes) is heed's safe
//! API, used by the lab.

#![deny(unsafe_code)]

pub use heed;

use std::path::{Path, PathBuf};

use heed::{Env, EnvFlags, EnvOpenOptions};

/// How much of LMDB's durability an environment keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Durability {
    /// LMDB's default: every commit writes its pages and fsyncs the file twice (data, then the
    /// meta page). Durable and crash safe.
    Sync,
    /// `MDB_NOSYNC`: a commit writes its pages to the file (`pwrite`, into the operating
    /// system's cache) and never waits for the disk. A crash of the process loses nothing; a
    /// crash of the operating system loses the last commits (those not yet written back), never
    /// a part of one, on a file system that keeps the order of writes. The counterpart of an
    /// asynchronous commit with a write-ahead log.
    NoSync,
    /// `MDB_NOSYNC | MDB_NOMETASYNC | MDB_WRITEMAP | MDB_MAPASYNC`: no fsync at all, and writes go
    /// straight into the shared memory map instead of through `pwrite`. The fastest setting,
    /// with no durability: a crash of the operating system can leave the file damaged. The
    /// counterpart of running without a log.
    None,
}

impl Durability {
    /// The LMDB flags of this setting.
    #[must_use]
    pub fn flags(self) -> EnvFlags {
        match self {
            Durability::Sync => EnvFlags::empty(),
            Durability::NoSync => EnvFlags::NO_SYNC,
            Durability::None => {
                EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC | EnvFlags::WRITE_MAP | EnvFlags::MAP_ASYNC
            }
        }
    }
}

/// How to create an LMDB environment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LmdbOptions {
    /// Bytes of the memory map: the most the database may grow to (rounded up to whole MiB).
    /// Address space only: pages are backed as they are written.
    pub map_bytes: u64,
    /// Reader slots: at least the number of threads that read at once (each thread keeps one).
    pub max_readers: u32,
    /// Named databases (tables) the environment may hold.
    pub max_dbs: u32,
    /// Durability setting.
    pub durability: Durability,
}

/// Creating an LMDB environment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeersError {
    /// The directory could not be created (it exists, or its parent is missing or read-only).
    #[error("creating the LMDB directory {}: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The map is larger than this machine's address space.
    #[error("an LMDB map of {0} bytes does not fit in this machine's address space")]
    MapTooLarge(u64),
    /// LMDB refused to open the environment.
    #[error("opening LMDB in {}: {source}", path.display())]
    Open {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: heed::Error,
    },
}

/// Creates the directory `dir` (which must not exist) and a new LMDB environment in it.
/// Read transactions are tied to threads (LMDB's default): each thread keeps one reader slot.
///
/// # Errors
/// [`PeersError::Directory`] if `dir` exists or cannot be created, [`PeersError::MapTooLarge`],
/// or LMDB's own error.
#[allow(unsafe_code)]
pub fn create_lmdb(dir: &Path, options: &LmdbOptions) -> Result<Env, PeersError> {
    const MIB: u64 = 1 << 20;
    let map = options.map_bytes.max(1).div_ceil(MIB).checked_mul(MIB);
    let map = map.and_then(|m| usize::try_from(m).ok()).ok_or(PeersError::MapTooLarge(options.map_bytes))?;
    // create_dir, not create_dir_all: an existing directory is refused, so no earlier
    // environment is ever opened (the safety rule in the crate's documentation).
    std::fs::create_dir(dir).map_err(|source| PeersError::Directory { path: dir.to_path_buf(), source })?;
    let mut open = EnvOpenOptions::new();
    open.map_size(map).max_readers(options.max_readers.max(1)).max_dbs(options.max_dbs.max(1));
    // SAFETY: the flags only weaken durability after a crash of the operating system; the
    // environment is new and is never opened again after this process ends (crate rule), so a
    // file a crash damaged is never read.
    unsafe {
        open.flags(options.durability.flags());
    }
    // SAFETY: `dir` was created just above by this call, so the file is new and no other
    // process or earlier environment has it open; the caller opens it nowhere else while the
    // environment lives (crate rule).
    let env = unsafe { open.open(dir) };
    env.map_err(|source| PeersError::Open { path: dir.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use heed::types::Bytes;
    use heed::CommitOrAbort;

    fn options(durability: Durability) -> LmdbOptions {
        LmdbOptions { map_bytes: 10 << 20, max_readers: 8, max_dbs: 2, durability }
    }

    #[test]
    fn every_durability_setting_stores_and_reads_back() {
        let scratch = tempfile::tempdir().unwrap();
        for (i, d) in [Durability::Sync, Durability::NoSync, Durability::None].into_iter().enumerate() {
            let env = create_lmdb(&scratch.path().join(i.to_string()), &options(d)).unwrap();
            let flags = env.get_flags().unwrap();
            assert_eq!(flags & d.flags().bits(), d.flags().bits(), "{d:?}");
            let db = env
                .create_databases_and_commit(env.write_txn().unwrap(), |o, w| {
                    o.create_database::<Bytes, Bytes>(w, Some("t")).map(CommitOrAbort::<_, ()>::Commit)
                })
                .unwrap()
                .unwrap_commit();
            let mut w = env.write_txn().unwrap();
            db.put(&mut w, b"k", b"v").unwrap();
            w.commit().unwrap();
            let r = env.read_txn().unwrap();
            assert_eq!(db.get(&r, b"k").unwrap(), Some(&b"v"[..]));
        }
    }

    #[test]
    fn an_existing_directory_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("env");
        let env = create_lmdb(&dir, &options(Durability::NoSync)).unwrap();
        drop(env);
        let e = create_lmdb(&dir, &options(Durability::NoSync)).unwrap_err();
        assert!(matches!(e, PeersError::Directory { .. }), "{e}");
        assert!(e.to_string().contains("creating the LMDB directory"), "{e}");
        let e = create_lmdb(&scratch.path().join("missing/env"), &options(Durability::NoSync)).unwrap_err();
        assert!(matches!(e, PeersError::Directory { .. }), "{e}");
    }
}
