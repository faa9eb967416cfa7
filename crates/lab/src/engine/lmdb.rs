//! LMDB as an [`Engine`], through heed's safe API (the environment is created by
//! `swizzledb_peers::create_lmdb`, which holds the one `unsafe` call).
//!
//! LMDB has one writer at a time (a process-wide mutex) and lock-free snapshot readers, so:
//! - every write (update, insert, read-modify-write, a loading batch) is one write transaction,
//!   committed; a read-modify-write reads inside its write transaction, so it is atomic;
//! - every read and scan is one read-only transaction (a snapshot), tied to its thread (LMDB's
//!   default: each thread keeps one reader slot, so beginning a read transaction takes no lock);
//! - [`Engine::transact`] (a transaction over several tables) is one write transaction
//!   ([`LmdbWrite`]), committed if the body succeeds and aborted otherwise;
//!   [`Engine::transact_read`] one read-only transaction ([`LmdbRead`]);
//! - nothing is ever refused or retried: every operation reports 1 attempt.
//!
//! Durability follows SwizzleDB's logging setting (`swizzledb_peers::Durability`): logging on
//! (SwizzleDB commits asynchronously) is `MDB_NOSYNC`, logging off is `MDB_NOSYNC |
//! MDB_NOMETASYNC | MDB_WRITEMAP | MDB_MAPASYNC`. SwizzleDB's record locking has no LMDB
//! counterpart: LMDB's transactions are serializable whatever is set.

use std::ops::Bound::{self, Included, Unbounded};
use std::path::Path;

use swizzledb_peers::heed::types::Bytes;
use swizzledb_peers::heed::{self, CommitOrAbort, Database, Env, MdbError, PutFlags, RoTxn, RwTxn, WithTls};
use swizzledb_peers::{create_lmdb, Durability, LmdbOptions};

use super::contract::{Engine, EngineName, TxRead, TxWrite};
pub use super::lmdb_error::LmdbError;
use super::Abort;
use crate::workloads::WorkloadError;

/// A table of an LMDB environment (a named database of byte keys and values).
pub type LmdbTable = Database<'static, Bytes, Bytes>;

/// A read-only LMDB transaction of an environment, tied to the thread that began it.
pub type LmdbReadTxn<'e> = RoTxn<'e, WithTls>;

/// Tables an environment may hold (TPC-C has 11).
const MAX_TABLES: u32 = 32;

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
        let options =
            LmdbOptions { map_bytes, max_readers: readers.max(126), max_dbs: MAX_TABLES, durability };
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

    /// Runs `f` on the value under `key` (`None` if absent) in a read-only transaction of its
    /// own (what [`Engine::read`] does, without its attempts and with an `f` that cannot fail).
    ///
    /// # Errors
    /// LMDB failed.
    #[inline]
    pub fn get_with<R>(
        &self,
        table: &LmdbTable,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        let v = table.get(&r, key).map_err(|e| self.err(e))?;
        Ok(f(v))
    }

    /// Begins a read-only transaction (a snapshot) of this environment, for
    /// [`Lmdb::get_in`]: one per thread at a time (LMDB's default, a reader slot per thread).
    ///
    /// # Errors
    /// LMDB failed.
    pub fn read_txn(&self) -> Result<LmdbReadTxn<'_>, WorkloadError> {
        self.env.read_txn().map_err(|e| self.err(e))
    }

    /// [`Lmdb::get_with`] in the read-only transaction `txn`, which may serve many lookups.
    ///
    /// # Errors
    /// LMDB failed.
    #[inline]
    pub fn get_in<R>(
        &self,
        txn: &LmdbReadTxn<'_>,
        table: &LmdbTable,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, WorkloadError> {
        let v = table.get(txn, key).map_err(|e| self.err(e))?;
        Ok(f(v))
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

    type ReadTx<'a> = LmdbRead<'a>;

    /// LMDB has no weaker read than its snapshot, which costs its writers nothing.
    type CommittedTx<'a> = LmdbRead<'a>;

    type Tx<'a> = LmdbWrite<'a>;

    fn transact<R>(
        &self,
        mut body: impl FnMut(&mut LmdbWrite<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        let txn = self.env.write_txn().map_err(|e| self.err(e))?;
        let mut tx = LmdbWrite { txn, lmdb: self, buf: Vec::new() };
        // Dropping the transaction without a commit aborts it.
        match body(&mut tx) {
            Ok(r) => {
                tx.txn.commit().map_err(|e| self.err(e))?;
                Ok((Some(r), 1))
            }
            Err(abort) => abort.ended(),
        }
    }

    fn transact_read<R>(
        &self,
        mut body: impl FnMut(&LmdbRead<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        let txn = self.env.read_txn().map_err(|e| self.err(e))?;
        let tx = LmdbRead { txn, lmdb: self };
        match body(&tx) {
            Ok(r) => Ok((Some(r), 1)),
            Err(abort) => abort.ended(),
        }
    }

    fn transact_read_committed<R>(
        &self,
        body: impl FnMut(&LmdbRead<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        self.transact_read(body)
    }

    /// Always: LMDB has one writer at a time, and readers see snapshots.
    fn isolates(&self) -> bool {
        true
    }

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

    /// A batch in ascending key order above every key of the table goes in with `MDB_APPEND`,
    /// which fills pages whole (LMDB's own bulk load, `mdb_load -a`), as SwizzleDB's splits
    /// leave ascending runs full (btree README T29); any other batch with `MDB_NOOVERWRITE`,
    /// whose splits leave pages half full. Either way an existing key fails the batch.
    fn load(&self, table: &LmdbTable, records: &[(Vec<u8>, Vec<u8>)]) -> Result<(), WorkloadError> {
        let mut w = self.env.write_txn().map_err(|e| self.err(e))?;
        let ascending = records.windows(2).all(|p| p[0].0 < p[1].0);
        let above = match (records.first(), table.last(&w).map_err(|e| self.err(e))?) {
            (Some((first, _)), Some((last, _))) => first.as_slice() > last,
            _ => true,
        };
        let flags = if ascending && above { PutFlags::APPEND } else { PutFlags::NO_OVERWRITE };
        for (k, v) in records {
            table.put_with_flags(&mut w, flags, k, v).map_err(|e| self.err(e))?;
        }
        w.commit().map_err(|e| self.err(e))
    }

    #[inline]
    fn read<R>(
        &self,
        table: &LmdbTable,
        key: &[u8],
        f: impl FnMut(Option<&[u8]>) -> Result<R, WorkloadError>,
    ) -> Result<(R, u32), WorkloadError> {
        Ok((self.get_with(table, key, f)??, 1))
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

    fn for_each_in(
        &self,
        table: &LmdbTable,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<(), WorkloadError> {
        let r = self.env.read_txn().map_err(|e| self.err(e))?;
        for item in table.range(&r, &(start, end)).map_err(|e| self.err(e))? {
            let (k, v) = item.map_err(|e| self.err(e))?;
            f(k, v)?;
        }
        Ok(())
    }
}

/// A read-only LMDB transaction (a snapshot), as [`Engine::transact_read`] gives it.
pub struct LmdbRead<'a> {
    txn: RoTxn<'a, WithTls>,
    lmdb: &'a Lmdb,
}

/// A read-write LMDB transaction, as [`Engine::transact`] gives it: it holds LMDB's writer
/// lock until it ends.
pub struct LmdbWrite<'a> {
    txn: RwTxn<'a>,
    lmdb: &'a Lmdb,
    /// The new value of [`TxWrite::update_with`], reused.
    buf: Vec<u8>,
}

/// The reads, on any LMDB transaction.
#[inline]
fn get_in<R>(
    lmdb: &Lmdb,
    txn: &RoTxn<'_>,
    table: &LmdbTable,
    key: &[u8],
    f: impl FnOnce(Option<&[u8]>) -> R,
) -> Result<R, Abort> {
    Ok(f(table.get(txn, key).map_err(|e| lmdb.err(e))?))
}

#[inline]
fn scan_in(
    lmdb: &Lmdb,
    txn: &RoTxn<'_>,
    table: &LmdbTable,
    range: (Bound<&[u8]>, Bound<&[u8]>),
    limit: usize,
    reverse: bool,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
) -> Result<(), Abort> {
    let err = |e| Abort::from(lmdb.err(e));
    if reverse {
        for item in table.rev_range(txn, &range).map_err(err)?.take(limit) {
            let (k, v) = item.map_err(err)?;
            f(k, v)?;
        }
    } else {
        for item in table.range(txn, &range).map_err(err)?.take(limit) {
            let (k, v) = item.map_err(err)?;
            f(k, v)?;
        }
    }
    Ok(())
}

/// The reads, the same on both kinds of LMDB transaction (a write transaction reads its own
/// writes).
macro_rules! lmdb_reads {
    ($t:ty) => {
        impl TxRead for $t {
            type Table = LmdbTable;

            #[inline]
            fn get_with<R>(
                &self,
                table: &LmdbTable,
                key: &[u8],
                f: impl FnOnce(Option<&[u8]>) -> R,
            ) -> Result<R, Abort> {
                get_in(self.lmdb, &self.txn, table, key, f)
            }

            #[inline]
            fn scan(
                &self,
                table: &LmdbTable,
                start: Bound<&[u8]>,
                end: Bound<&[u8]>,
                limit: usize,
                f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
            ) -> Result<(), Abort> {
                scan_in(self.lmdb, &self.txn, table, (start, end), limit, false, f)
            }

            #[inline]
            fn scan_rev(
                &self,
                table: &LmdbTable,
                start: Bound<&[u8]>,
                end: Bound<&[u8]>,
                limit: usize,
                f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
            ) -> Result<(), Abort> {
                scan_in(self.lmdb, &self.txn, table, (start, end), limit, true, f)
            }
        }
    };
}

lmdb_reads!(LmdbRead<'_>);
lmdb_reads!(LmdbWrite<'_>);

impl TxWrite for LmdbWrite<'_> {
    #[inline]
    fn insert(&mut self, table: &LmdbTable, key: &[u8], value: &[u8]) -> Result<(), Abort> {
        let lmdb = self.lmdb;
        table.put_with_flags(&mut self.txn, PutFlags::NO_OVERWRITE, key, value).map_err(|e| lmdb.err(e))?;
        Ok(())
    }

    #[inline]
    fn put(&mut self, table: &LmdbTable, key: &[u8], value: &[u8]) -> Result<bool, Abort> {
        let lmdb = self.lmdb;
        let existed = table.get(&self.txn, key).map_err(|e| lmdb.err(e))?.is_some();
        table.put(&mut self.txn, key, value).map_err(|e| lmdb.err(e))?;
        Ok(existed)
    }

    /// A lookup, `f` into a buffer, and a put of the buffer (LMDB writes a record by copying
    /// its page, so there is no cheaper in-place update).
    #[inline]
    fn update_with<R>(
        &mut self,
        table: &LmdbTable,
        key: &[u8],
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> R,
    ) -> Result<Option<R>, Abort> {
        let lmdb = self.lmdb;
        let mut new = std::mem::take(&mut self.buf);
        new.clear();
        let out = match table.get(&self.txn, key).map_err(|e| lmdb.err(e))? {
            Some(old) => f(old, &mut new),
            None => {
                self.buf = new;
                return Ok(None);
            }
        };
        let put = table.put(&mut self.txn, key, &new).map_err(|e| lmdb.err(e));
        self.buf = new;
        put?;
        Ok(Some(out))
    }

    #[inline]
    fn delete(&mut self, table: &LmdbTable, key: &[u8]) -> Result<bool, Abort> {
        let lmdb = self.lmdb;
        Ok(table.delete(&mut self.txn, key).map_err(|e| lmdb.err(e))?)
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
            crate::engine::contract::tests::contract(&e);
            crate::engine::contract::tests::tx_contract(&e);
            assert!(e.isolates());
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
