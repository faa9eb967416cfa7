//! LMDB as an [`Engine`], through heed's safe API (the environment is created by
//! `swizzledb_peers::create_lmdb`, which holds the one `unsafe` call).
//!
//! LMDB has one writer at a time (a process-wide mutex) and lock-free snapshot readers, so:
//! - every write (update, insert, read-modify-write, a loading batch) is one write transaction,
//!   committed; a read-modify-write reads inside its write transaction, so it is atomic;
//! - every read and scan is one read-only transaction (a snapshot), tied to its thread (LMDB's
//!   default: each thread keeps one reader slot, so beginning a read transaction takes no lock);
//! - nothing is ever refused or retried: every operation reports 1 attempt.
//!
//! Durability follows SwizzleDB's logging setting (`swizzledb_peers::Durability`): logging on
//! (SwizzleDB commits asynchronously) is `MDB_NOSYNC`, logging off is `MDB_NOSYNC |
//! MDB_NOMETASYNC | MDB_WRITEMAP | MDB_MAPASYNC`. SwizzleDB's record locking has no LMDB
//! counterpart: LMDB's transactions are serializable whatever is set.

use std::ops::Bound::{Included, Unbounded};
use std::path::Path;

use swizzledb_peers::heed::types::Bytes;
use swizzledb_peers::heed::{self, CommitOrAbort, Database, Env, MdbError, PutFlags};
use swizzledb_peers::{create_lmdb, Durability, LmdbOptions, PeersError};

use super::{Engine, EngineName};
use crate::workload::WorkloadError;

/// A table of an LMDB environment (a named database of byte keys and values).
pub type LmdbTable = Database<'static, Bytes, Bytes>;

/// What went wrong in LMDB.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LmdbError {
    /// The environment could not be created.
    #[error(transparent)]
    Create(#[from] PeersError),
    /// The data outgrew the map.
    #[error(
        "LMDB's map of {map_mib} MiB is full: the data outgrew the size reserved for it; shorten the run \
         (--duration, --repeat, fewer inserting workloads) or report the sizing as a bug"
    )]
    MapFull {
        /// The map's size.
        map_mib: u64,
    },
    /// A table the workload needs is not there.
    #[error("LMDB: no table {0}; load the workload first")]
    NoTable(String),
    /// A table created twice.
    #[error("LMDB: the table {0} exists already")]
    TableExists(String),
    /// Any other error of LMDB or heed.
    #[error("LMDB: {0}")]
    Heed(#[from] heed::Error),
}

/// An LMDB environment as an [`Engine`].
pub struct Lmdb {
    env: Env,
    map_bytes: u64,
    logging: bool,
}

impl std::fmt::Debug for Lmdb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lmdb")
            .field("path", &self.env.path())
            .field("map_bytes", &self.map_bytes)
            .field("logging", &self.logging)
            .finish()
    }
}

impl Lmdb {
    /// Creates a new environment in the directory `dir` (which must not exist) with a map of
    /// `map_bytes`, `readers` reader slots (at least the threads that will read) and the
    /// durability matching SwizzleDB's `logging` setting (module documentation).
    ///
    /// # Errors
    /// [`LmdbError::Create`]: `dir` exists, or LMDB refused.
    pub fn create(dir: &Path, map_bytes: u64, readers: u32, logging: bool) -> Result<Lmdb, LmdbError> {
        let durability = if logging { Durability::NoSync } else { Durability::None };
        let options = LmdbOptions { map_bytes, max_readers: readers.max(126), max_dbs: 8, durability };
        let env = create_lmdb(dir, &options)?;
        Ok(Lmdb { env, map_bytes, logging })
    }

    /// The logging setting this environment stands for.
    #[must_use]
    pub fn logging(&self) -> bool {
        self.logging
    }

    /// Bytes of the map.
    #[must_use]
    pub fn map_bytes(&self) -> u64 {
        self.map_bytes
    }

    /// Bytes of the database file in use now (pages LMDB has handed out).
    #[must_use]
    pub fn used_bytes(&self) -> u64 {
        let info = self.env.info();
        let page = u64::from(self.env.unnamed_database_stat().page_size);
        (info.last_page_number as u64 + 1) * page
    }

    fn err(&self, e: heed::Error) -> WorkloadError {
        match e {
            heed::Error::Mdb(MdbError::MapFull) => {
                LmdbError::MapFull { map_mib: self.map_bytes >> 20 }.into()
            }
            e => LmdbError::Heed(e).into(),
        }
    }
}

impl Engine for Lmdb {
    type Table = LmdbTable;

    const ENGINE: EngineName = EngineName::Lmdb;

    /// Larger than SwizzleDB's: LMDB's cost of a commit is writing the pages it touched, and
    /// the inner pages of the tree are touched by every batch.
    const LOAD_BATCH: usize = 5_000;

    fn create_table(&self, name: &str) -> Result<LmdbTable, WorkloadError> {
        if self.table(name).is_ok() {
            return Err(LmdbError::TableExists(name.into()).into());
        }
        let w = self.env.write_txn().map_err(|e| self.err(e))?;
        let db = self
            .env
            .create_databases_and_commit(w, |o, w| {
                o.create_database::<Bytes, Bytes>(w, Some(name)).map(CommitOrAbort::<_, ()>::Commit)
            })
            .map_err(|e| self.err(e))?;
        match db {
            CommitOrAbort::Commit(db) => Ok(db),
            CommitOrAbort::Abort(()) => Err(LmdbError::NoTable(name.into()).into()),
        }
    }

    fn table(&self, name: &str) -> Result<LmdbTable, WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        let db = self
            .env
            .open_databases_and_commit(r, |o, r| {
                o.open_database::<Bytes, Bytes>(r, Some(name)).map(CommitOrAbort::<_, ()>::Commit)
            })
            .map_err(|e| self.err(e))?;
        match db {
            CommitOrAbort::Commit(Some(db)) => Ok(db),
            _ => Err(LmdbError::NoTable(name.into()).into()),
        }
    }

    fn load(&self, table: &LmdbTable, records: &[(Vec<u8>, Vec<u8>)]) -> Result<(), WorkloadError> {
        let mut w = self.env.write_txn().map_err(|e| self.err(e))?;
        for (k, v) in records {
            table.put_with_flags(&mut w, PutFlags::NO_OVERWRITE, k, v).map_err(|e| self.err(e))?;
        }
        w.commit().map_err(|e| self.err(e))
    }

    #[inline]
    fn read<R>(
        &self,
        table: &LmdbTable,
        key: &[u8],
        mut f: impl FnMut(Option<&[u8]>) -> Result<R, WorkloadError>,
    ) -> Result<(R, u32), WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        let v = table.get(&r, key).map_err(|e| self.err(e))?;
        Ok((f(v)?, 1))
    }

    #[inline]
    fn update(&self, table: &LmdbTable, key: &[u8], value: &[u8]) -> Result<(bool, u32), WorkloadError> {
        let mut w = self.env.write_txn().map_err(|e| self.err(e))?;
        if table.get(&w, key).map_err(|e| self.err(e))?.is_none() {
            // Dropping the transaction aborts it.
            return Ok((false, 1));
        }
        table.put(&mut w, key, value).map_err(|e| self.err(e))?;
        w.commit().map_err(|e| self.err(e))?;
        Ok((true, 1))
    }

    #[inline]
    fn insert(&self, table: &LmdbTable, key: &[u8], value: &[u8]) -> Result<u32, WorkloadError> {
        let mut w = self.env.write_txn().map_err(|e| self.err(e))?;
        table.put_with_flags(&mut w, PutFlags::NO_OVERWRITE, key, value).map_err(|e| self.err(e))?;
        w.commit().map_err(|e| self.err(e))?;
        Ok(1)
    }

    #[inline]
    fn scan(
        &self,
        table: &LmdbTable,
        start: &[u8],
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<u32, WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        let range = (Included(start), Unbounded);
        for item in table.range(&r, &range).map_err(|e| self.err(e))?.take(limit) {
            let (k, v) = item.map_err(|e| self.err(e))?;
            f(k, v)?;
        }
        Ok(1)
    }

    #[inline]
    fn read_modify_write(
        &self,
        table: &LmdbTable,
        key: &[u8],
        value: &mut Vec<u8>,
        mut read: impl FnMut(Option<&[u8]>, &mut Vec<u8>) -> Result<(), WorkloadError>,
        mut modify: impl FnMut(&mut Vec<u8>),
    ) -> Result<u32, WorkloadError> {
        let mut w = self.env.write_txn().map_err(|e| self.err(e))?;
        read(table.get(&w, key).map_err(|e| self.err(e))?, value)?;
        modify(value);
        table.put(&mut w, key, value).map_err(|e| self.err(e))?;
        w.commit().map_err(|e| self.err(e))?;
        Ok(1)
    }

    fn for_each(
        &self,
        table: &LmdbTable,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<(), WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        for item in table.iter(&r).map_err(|e| self.err(e))? {
            let (k, v) = item.map_err(|e| self.err(e))?;
            f(k, v)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lmdb_adapter_keeps_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        for logging in [true, false] {
            let e = Lmdb::create(&dir.path().join(format!("log-{logging}")), 16 << 20, 8, logging).unwrap();
            crate::engine::tests::contract(&e);
            assert!(matches!(e.create_table("t"), Err(WorkloadError::Lmdb(LmdbError::TableExists(_)))));
            assert!(e.used_bytes() > 0);
        }
    }

    #[test]
    fn a_full_map_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let e = Lmdb::create(&dir.path().join("small"), 1 << 20, 8, false).unwrap();
        let t = e.create_table("t").unwrap();
        let value = vec![7u8; 1000];
        let mut failed = None;
        for i in 0..10_000u32 {
            if let Err(err) = e.insert(&t, &i.to_be_bytes(), &value) {
                failed = Some(err);
                break;
            }
        }
        let err = failed.expect("a 1 MiB map cannot hold 10 MB");
        assert!(matches!(err, WorkloadError::Lmdb(LmdbError::MapFull { map_mib: 1 })), "{err}");
        assert!(err.to_string().contains("map of 1 MiB is full"), "{err}");
        // The environment stays usable for reads.
        assert_eq!(e.read(&t, &0u32.to_be_bytes(), |v| Ok(v.map(<[u8]>::len))).unwrap().0, Some(1000));
    }
}
