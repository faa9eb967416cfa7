//! The SwizzleDB adapter: [`Engine`] for `swizzledb::Database`, and [`TxRead`] and [`TxWrite`]
//! for its `Transaction` itself.

use std::ops::Bound::{self, Included, Unbounded};
use swizzledb::{Database, ReadTransaction, Transaction, Tree};

use super::contract::{Engine, EngineName, TxRead, TxWrite};
use super::Abort;
use crate::workloads::txn::transact;
use crate::workloads::WorkloadError;

/// SwizzleDB: each operation is one [`Database::transact`] (through the lab's `transact`,
/// which counts attempts and carries the workload's own errors), in whatever buffer mode,
/// logging and locking the database was created with. On a logged database a read is a plain
/// [`Tree::get_with`], as a user reads one key: with record locking it takes no lock, registers
/// no snapshot and waits for no writer (LOCKS.md K18). A scan, and a read of an unlogged
/// database (whose plain reads see uncommitted changes, K14), reads through
/// [`Database::begin_read_committed`] (K25): the newest committed value, and a scan at a
/// snapshot of its start, as LMDB's read transactions see them, without a transaction's begin
/// and end.
impl Engine for Database {
    type Table = Tree;

    const ENGINE: EngineName = EngineName::SwizzleDb;

    const LOAD_BATCH: usize = 500;

    type ReadTx<'a> = Transaction<'a>;

    type CommittedTx<'a> = ReadTransaction<'a>;

    type Tx<'a> = Transaction<'a>;

    #[inline]
    fn transact<R>(
        &self,
        body: impl FnMut(&mut Transaction<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        transact(self, body)
    }

    /// At a snapshot ([`Database::transact_snapshot`]): with logging and locking on, the reads
    /// take no locks and never wait for a writer, as LMDB's read transactions and InnoDB's
    /// consistent reads; elsewhere an ordinary transaction.
    #[inline]
    fn transact_read<R>(
        &self,
        mut body: impl FnMut(&Transaction<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        crate::workloads::txn::transact_snapshot(self, |tx| body(tx))
    }

    /// [`Database::begin_read_committed`] (LOCKS.md K25): no snapshot between its reads, no
    /// lock, no wait, and nothing to retry.
    #[inline]
    fn transact_read_committed<R>(
        &self,
        mut body: impl FnMut(&ReadTransaction<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError> {
        match body(&self.begin_read_committed()) {
            Ok(r) => Ok((Some(r), 1)),
            Err(abort) => abort.ended(),
        }
    }

    fn isolates(&self) -> bool {
        self.lock_stats().is_some()
    }

    fn create_table(&self, name: &str) -> Result<Tree, WorkloadError> {
        Ok(self.create_tree(name)?)
    }

    fn table(&self, name: &str) -> Result<Tree, WorkloadError> {
        Ok(self.tree(name)?)
    }

    fn load(&self, table: &Tree, records: &[(Vec<u8>, Vec<u8>)]) -> Result<(), WorkloadError> {
        self.transact(|tx| {
            for (k, v) in records {
                tx.insert(table, k, v)?;
            }
            Ok(())
        })?;
        Ok(())
    }

    #[inline]
    fn read<R>(
        &self,
        table: &Tree,
        key: &[u8],
        mut f: impl FnMut(Option<&[u8]>) -> Result<R, WorkloadError>,
    ) -> Result<(R, u32), WorkloadError> {
        if self.is_logged() {
            // A plain read (LOCKS.md K18): no transaction, no snapshot, never a retry.
            return Ok((table.get_with(key, &mut f).map_err(swizzledb::Error::from)??, 1));
        }
        // An unlogged database's plain reads see uncommitted changes (K14): a read-committed
        // read instead (K25), the same newest committed value without a transaction.
        Ok((self.begin_read_committed().get_with(table, key, &mut f)??, 1))
    }

    #[inline]
    fn update(&self, table: &Tree, key: &[u8], value: &[u8]) -> Result<(bool, u32), WorkloadError> {
        let (done, attempts) = transact(self, |tx| {
            if tx.put(table, key, value)? {
                Ok(())
            } else {
                // It inserted a record that was not there: roll that back.
                Err(Abort::Rollback)
            }
        })?;
        Ok((done.is_some(), attempts))
    }

    #[inline]
    fn insert(&self, table: &Tree, key: &[u8], value: &[u8]) -> Result<u32, WorkloadError> {
        let (_, attempts) = transact(self, |tx| Ok(tx.insert(table, key, value)?))?;
        Ok(attempts)
    }

    #[inline]
    fn scan(
        &self,
        table: &Tree,
        start: &[u8],
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<u32, WorkloadError> {
        // One range read at read committed (K25): at a snapshot of its start, as a read-only
        // transaction's, without the transaction.
        let reads = self.begin_read_committed();
        // Lent records, and no more of a leaf copied than the scan returns (T19).
        let mut records = reads.range(table, Included(start), Unbounded).limit(limit);
        while let Some(r) = records.next_with(&mut f) {
            r.map_err(swizzledb::Error::from)??;
        }
        Ok(1)
    }

    #[inline]
    fn read_modify_write(
        &self,
        table: &Tree,
        key: &[u8],
        value: &mut Vec<u8>,
        mut read: impl FnMut(Option<&[u8]>, &mut Vec<u8>) -> Result<(), WorkloadError>,
        mut modify: impl FnMut(&mut Vec<u8>),
    ) -> Result<u32, WorkloadError> {
        let (_, attempts) = transact(self, |tx| {
            // One descent under the record's exclusive lock from the start: a read under a
            // shared lock and then a write would have to upgrade it, a deadlock whenever another
            // reader upgrades too (LOCKS.md K23).
            let done = tx.update_with(table, key, |old, new| match read(Some(old), value) {
                Ok(()) => {
                    modify(value);
                    new.extend_from_slice(value);
                    Ok(())
                }
                Err(e) => {
                    // Nothing changes: the old value is written back, and the error ends the
                    // transaction (rolled back).
                    new.extend_from_slice(old);
                    Err(e)
                }
            })?;
            match done {
                Some(r) => Ok(r?),
                None => {
                    // Absent: `read` decides; if it makes a value, it is inserted.
                    read(None, value)?;
                    modify(value);
                    tx.put(table, key, value)?;
                    Ok(())
                }
            }
        })?;
        Ok(attempts)
    }

    fn for_each_in(
        &self,
        table: &Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<(), WorkloadError> {
        for r in table.range(start, end) {
            let (k, v) = r.map_err(swizzledb::Error::from)?;
            f(&k, &v)?;
        }
        Ok(())
    }
}

/// SwizzleDB's transaction is the transaction of the adapter: each call is the method of the
/// same name (a scan is `range` or `range_rev` read with `next_with`).
impl TxRead for Transaction<'_> {
    type Table = Tree;

    #[inline]
    fn get_with<R>(&self, table: &Tree, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, Abort> {
        Ok(Transaction::get_with(self, table, key, f)?)
    }

    /// The tree handle's own read ([`Tree::get_with`]): no record lock, no wait (LOCKS.md K14,
    /// K18).
    #[inline]
    fn get_committed_with<R>(
        &self,
        table: &Tree,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Abort> {
        Ok(table.get_with(key, f).map_err(swizzledb::Error::from)?)
    }

    #[inline]
    fn scan(
        &self,
        table: &Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort> {
        let mut records = self.range(table, start, end).limit(limit);
        lend_each(|f| records.next_with(f), f)
    }

    #[inline]
    fn scan_rev(
        &self,
        table: &Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort> {
        let mut records = self.range_rev(table, start, end).limit(limit);
        lend_each(|f| records.next_with(f), f)
    }
}

/// Lends each record of a scan read through `next_with` (`next`) to `f`, copying none; the
/// scan's first error, or `f`'s, ends it.
#[inline]
fn lend_each<E: Into<swizzledb::Error>, F: FnMut(&[u8], &[u8]) -> Result<(), Abort>>(
    mut next: impl FnMut(&mut F) -> Option<Result<Result<(), Abort>, E>>,
    mut f: F,
) -> Result<(), Abort> {
    while let Some(r) = next(&mut f) {
        r.map_err(Into::into)??;
    }
    Ok(())
}

/// A read-committed read-only transaction's reads (LOCKS.md K25).
impl TxRead for ReadTransaction<'_> {
    type Table = Tree;

    #[inline]
    fn get_with<R>(&self, table: &Tree, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, Abort> {
        Ok(ReadTransaction::get_with(self, table, key, f)?)
    }

    #[inline]
    fn scan(
        &self,
        table: &Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort> {
        let mut records = self.range(table, start, end).limit(limit);
        lend_each(|f| records.next_with(f), f)
    }

    #[inline]
    fn scan_rev(
        &self,
        table: &Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort> {
        let mut records = self.range_rev(table, start, end).limit(limit);
        lend_each(|f| records.next_with(f), f)
    }
}

impl TxWrite for Transaction<'_> {
    #[inline]
    fn insert(&mut self, table: &Tree, key: &[u8], value: &[u8]) -> Result<(), Abort> {
        Ok(Transaction::insert(self, table, key, value)?)
    }

    #[inline]
    fn put(&mut self, table: &Tree, key: &[u8], value: &[u8]) -> Result<bool, Abort> {
        Ok(Transaction::put(self, table, key, value)?)
    }

    #[inline]
    fn update_with<R>(
        &mut self,
        table: &Tree,
        key: &[u8],
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> R,
    ) -> Result<Option<R>, Abort> {
        Ok(Transaction::update_with(self, table, key, f)?)
    }

    #[inline]
    fn delete(&mut self, table: &Tree, key: &[u8]) -> Result<bool, Abort> {
        Ok(Transaction::delete(self, table, key)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::contract::tests::{contract, tx_contract};

    /// Every operation of the SwizzleDB adapter does what the contract says, including the
    /// cases the workloads only meet when something is wrong.
    #[test]
    fn swizzledb_adapter_keeps_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().logging(false).create(dir.path().join("e.swz")).unwrap();
        contract(&db);
        tx_contract(&db);
        db.close().unwrap();
        for locking in [false, true] {
            let db = Database::builder()
                .logging(locking)
                .lab(|l| l.locking(locking))
                .create(dir.path().join(format!("lock-{locking}.swz")))
                .unwrap();
            assert_eq!(db.isolates(), locking);
            tx_contract(&db);
            db.close().unwrap();
        }
    }

    /// A read and a scan are read-only transactions: on a database with record locks they
    /// return the committed value at once while another transaction holds an uncommitted
    /// change of the key (a locking read would wait for it, or time out and retry).
    #[test]
    fn reads_and_scans_wait_for_no_writer() {
        let dir = tempfile::tempdir().unwrap();
        for logging in [true, false] {
            let db = Database::builder()
                .logging(logging)
                .lab(|l| l.locking(true))
                .create(dir.path().join(format!("r-{logging}.swz")))
                .unwrap();
            let t = Engine::create_table(&db, "t").unwrap();
            Engine::load(&db, &t, &[(b"k".to_vec(), b"old".to_vec()), (b"l".to_vec(), b"1".to_vec())])
                .unwrap();
            let mut writer = db.begin();
            writer.put(&t, b"k", b"new").unwrap();
            let (done, got) = std::sync::mpsc::channel();
            std::thread::scope(|s| {
                s.spawn(|| {
                    let read = Engine::read(&db, &t, b"k", |v| Ok(v.map(<[u8]>::to_vec))).unwrap();
                    let mut scanned = Vec::new();
                    Engine::scan(&db, &t, b"", 10, |k, v| {
                        scanned.push((k.to_vec(), v.to_vec()));
                        Ok(())
                    })
                    .unwrap();
                    done.send((read, scanned)).unwrap();
                });
                let seen = got.recv_timeout(std::time::Duration::from_secs(20));
                writer.abort().unwrap();
                let ((value, attempts), scanned) = seen.expect("the read waited for the writer");
                assert_eq!((value.as_deref(), attempts), (Some(&b"old"[..]), 1), "logging {logging}");
                assert_eq!(scanned, [(b"k".to_vec(), b"old".to_vec()), (b"l".to_vec(), b"1".to_vec())]);
            });
            db.close().unwrap();
        }
    }
}
