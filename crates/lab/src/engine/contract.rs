//! What a workload needs of a storage engine: the traits [`Engine`], [`TxRead`] and
//! [`TxWrite`], and the engines by name ([`EngineName`]). The module `engine` says how each
//! engine implements them.

use std::ops::Bound::{self, Unbounded};

use super::Abort;
use crate::workloads::WorkloadError;

/// The reads of a transaction over several tables. Closures given to it run while the engine
/// holds the record in place (SwizzleDB: under the leaf's latch), so they must not call into
/// the engine.
pub trait TxRead {
    /// A table handle ([`Engine::Table`]).
    type Table;

    /// Runs `f` on the value under `key` (`None` if absent), borrowed in place.
    ///
    /// # Errors
    /// The engine refused (SwizzleDB: a deadlock's victim, retried) or failed.
    fn get_with<R>(
        &self,
        table: &Self::Table,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Abort>;

    /// Runs `f` on the value under `key` (`None` if absent) as the engine's own single-key read
    /// outside any transaction sees it, not through the transaction's isolation: for fields
    /// that no transaction of the workload changes (TPC-C's item prices, `W_TAX`,
    /// `C_DISCOUNT`), which every version of the record holds alike, so that reading them
    /// without a lock is as serializable as a locking read. It does not see the transaction's
    /// own writes. SwizzleDB reads as [`swizzledb::Tree::get_with`] does, with no record lock
    /// and no wait (LOCKS.md K14, K18): the last committed value on a logged database, as
    /// InnoDB's consistent reads in a read-write transaction; on an unlogged one the latest,
    /// committed or not, which holds the same unchanged fields. By default, and on LMDB (one
    /// writer at a time), the transaction's own read ([`TxRead::get_with`]).
    ///
    /// # Errors
    /// The engine refused or failed.
    fn get_committed_with<R>(
        &self,
        table: &Self::Table,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Abort> {
        self.get_with(table, key, f)
    }

    /// Runs `f` on up to `limit` records with keys between `start` and `end`, in ascending key
    /// order.
    ///
    /// # Errors
    /// `f`'s error (which ends the scan), or the engine refused or failed.
    fn scan(
        &self,
        table: &Self::Table,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort>;

    /// [`TxRead::scan`] in descending key order (from `end` down to `start`).
    ///
    /// # Errors
    /// As [`TxRead::scan`].
    fn scan_rev(
        &self,
        table: &Self::Table,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), Abort>,
    ) -> Result<(), Abort>;
}

/// The writes of a transaction over several tables; it reads its own writes.
pub trait TxWrite: TxRead {
    /// Inserts a new record.
    ///
    /// # Errors
    /// The key exists, or the engine refused or failed.
    fn insert(&mut self, table: &Self::Table, key: &[u8], value: &[u8]) -> Result<(), Abort>;

    /// Inserts or replaces; returns whether the key existed.
    ///
    /// # Errors
    /// The engine refused or failed.
    fn put(&mut self, table: &Self::Table, key: &[u8], value: &[u8]) -> Result<bool, Abort>;

    /// Replaces the value under `key` with what `f` writes into the (empty) buffer it gets
    /// beside the current value. Returns `f`'s result, or `None` if the key is absent (then
    /// nothing changes and `f` is not called). Atomic in every engine, also without record
    /// locks: no other writer changes the record between the read and the write (SwizzleDB
    /// holds the leaf's exclusive latch throughout; LMDB has one writer at a time).
    ///
    /// # Errors
    /// The engine refused or failed.
    fn update_with<R>(
        &mut self,
        table: &Self::Table,
        key: &[u8],
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> R,
    ) -> Result<Option<R>, Abort>;

    /// Deletes `key`; returns whether it existed.
    ///
    /// # Errors
    /// The engine refused or failed.
    fn delete(&mut self, table: &Self::Table, key: &[u8]) -> Result<bool, Abort>;
}

/// A storage engine as a key-value workload sees it. Every method is one atomic operation
/// (SwizzleDB: one transaction, retried after a refused lock; LMDB: one transaction).
pub trait Engine: Send + Sync {
    /// A handle on one table, held by each thread.
    type Table: Send;

    /// Which engine this is (what the `engine` column of result files names).
    const ENGINE: EngineName;

    /// Records per loading transaction.
    const LOAD_BATCH: usize;

    /// A read-only transaction ([`Engine::transact_read`]).
    type ReadTx<'a>: TxRead<Table = Self::Table>
    where
        Self: 'a;

    /// A read-only transaction at read committed ([`Engine::transact_read_committed`]).
    type CommittedTx<'a>: TxRead<Table = Self::Table>
    where
        Self: 'a;

    /// A read-write transaction ([`Engine::transact`]).
    type Tx<'a>: TxWrite<Table = Self::Table>
    where
        Self: 'a;

    /// Runs `body` as one transaction and commits it. [`Abort::Rollback`] rolls it back and
    /// returns `None`; any other error rolls it back and is returned. Returns the body's result
    /// and the attempts (SwizzleDB runs the body again after a refused lock).
    ///
    /// # Errors
    /// The body's error, or the engine failed (or, on LMDB, its map is full).
    fn transact<R>(
        &self,
        body: impl FnMut(&mut Self::Tx<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError>;

    /// Runs `body` as one read-only transaction (LMDB: a snapshot; SwizzleDB: a snapshot where
    /// the database keeps versions, else a transaction that logs nothing), as
    /// [`Engine::transact`] does.
    ///
    /// # Errors
    /// As [`Engine::transact`].
    fn transact_read<R>(
        &self,
        body: impl FnMut(&Self::ReadTx<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError>;

    /// Runs `body` as one read-only transaction at read committed: each read sees what was
    /// committed when that read began, never an uncommitted change (SwizzleDB:
    /// `Database::begin_read_committed`, which holds no snapshot between its reads, so writers
    /// keep no versions for it; LMDB: its read snapshot, as [`Engine::transact_read`]).
    ///
    /// # Errors
    /// As [`Engine::transact`].
    fn transact_read_committed<R>(
        &self,
        body: impl FnMut(&Self::CommittedTx<'_>) -> Result<R, Abort>,
    ) -> Result<(Option<R>, u32), WorkloadError>;

    /// Whether the engine keeps concurrent transactions apart by itself (SwizzleDB with record
    /// locking, LMDB always: it has one writer at a time). If not, a workload that reads a
    /// record and writes it back in two calls must latch the pair itself
    /// ([`TxWrite::update_with`] needs no latch).
    fn isolates(&self) -> bool;

    /// Creates the table `name`.
    ///
    /// # Errors
    /// It exists, or the engine failed.
    fn create_table(&self, name: &str) -> Result<Self::Table, WorkloadError>;

    /// The table `name`, created before.
    ///
    /// # Errors
    /// It does not exist, or the engine failed.
    fn table(&self, name: &str) -> Result<Self::Table, WorkloadError>;

    /// Inserts `records` (keys not in the table yet) in one transaction.
    ///
    /// # Errors
    /// A key exists, or the engine failed; nothing of the batch is written then.
    fn load(&self, table: &Self::Table, records: &[(Vec<u8>, Vec<u8>)]) -> Result<(), WorkloadError>;

    /// Runs `f` on the value under `key` (`None` if absent), borrowed in place, as a read-only
    /// transaction or the engine's own single-key read sees it (the last committed value). An
    /// error of `f` ends the read and is returned. Returns `f`'s result and the attempts (`f`
    /// runs once per attempt).
    ///
    /// # Errors
    /// `f`'s error, or the engine failed.
    fn read<R>(
        &self,
        table: &Self::Table,
        key: &[u8],
        f: impl FnMut(Option<&[u8]>) -> Result<R, WorkloadError>,
    ) -> Result<(R, u32), WorkloadError>;

    /// Replaces the value of an existing `key`. Returns whether it existed (if not, nothing is
    /// written) and the attempts.
    ///
    /// # Errors
    /// The engine failed.
    fn update(&self, table: &Self::Table, key: &[u8], value: &[u8]) -> Result<(bool, u32), WorkloadError>;

    /// Inserts a new `key`. Returns the attempts.
    ///
    /// # Errors
    /// The key exists, or the engine failed.
    fn insert(&self, table: &Self::Table, key: &[u8], value: &[u8]) -> Result<u32, WorkloadError>;

    /// Runs `f` on up to `limit` records from `start` on (inclusive), in key order, in one
    /// read-only transaction. Returns the attempts.
    ///
    /// # Errors
    /// `f`'s error (which ends the scan), or the engine failed.
    fn scan(
        &self,
        table: &Self::Table,
        start: &[u8],
        limit: usize,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<u32, WorkloadError>;

    /// One atomic read-modify-write of `key`: `read` sees the stored value in place (`None` if
    /// absent) and copies what it keeps into `value`; then `modify` changes `value`, and `value`
    /// is written back under `key`; no other write to `key` comes between. Both may run while
    /// the engine holds the record (SwizzleDB: under the leaf's latch), so keep them short and
    /// out of the engine. Returns the attempts.
    ///
    /// # Errors
    /// `read`'s error (nothing is written then), or the engine failed.
    fn read_modify_write(
        &self,
        table: &Self::Table,
        key: &[u8],
        value: &mut Vec<u8>,
        read: impl FnMut(Option<&[u8]>, &mut Vec<u8>) -> Result<(), WorkloadError>,
        modify: impl FnMut(&mut Vec<u8>),
    ) -> Result<u32, WorkloadError>;

    /// Runs `f` on every record of the table in key order; call it while nothing writes.
    ///
    /// # Errors
    /// `f`'s error (which ends the walk), or the engine failed.
    fn for_each(
        &self,
        table: &Self::Table,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<(), WorkloadError> {
        self.for_each_in(table, Unbounded, Unbounded, f)
    }

    /// Runs `f` on every record with a key between `start` and `end`, in key order; call it
    /// while nothing writes.
    ///
    /// # Errors
    /// `f`'s error (which ends the walk), or the engine failed.
    fn for_each_in(
        &self,
        table: &Self::Table,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
    ) -> Result<(), WorkloadError>;
}

/// The engines a bench can run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineName {
    /// SwizzleDB, in any of its buffer modes.
    SwizzleDb,
    /// LMDB, through heed (feature `lmdb`).
    Lmdb,
}

impl EngineName {
    /// Every engine, in table order.
    pub const ALL: [EngineName; 2] = [EngineName::SwizzleDb, EngineName::Lmdb];

    /// `swizzledb` or `lmdb`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EngineName::SwizzleDb => "swizzledb",
            EngineName::Lmdb => "lmdb",
        }
    }

    /// Whether this build has the engine (LMDB needs the `lmdb` feature, on by default in the
    /// `swizzledb` command).
    #[must_use]
    pub fn built(self) -> bool {
        match self {
            EngineName::SwizzleDb => true,
            EngineName::Lmdb => cfg!(feature = "lmdb"),
        }
    }

    /// Parses `swizzledb` or `lmdb` (either case) and checks that this build has it.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad name, or the missing feature.
    pub fn parse(s: &str) -> Result<EngineName, WorkloadError> {
        let t = s.trim();
        let Some(e) = EngineName::ALL.into_iter().find(|e| e.name().eq_ignore_ascii_case(t)) else {
            return Err(WorkloadError::Config(format!(
                "unknown engine {t:?}; the engines are swizzledb and lmdb"
            )));
        };
        if !e.built() {
            return Err(WorkloadError::Config(format!(
                "--engine {}: this build has no LMDB; build the swizzledb command with the lmdb feature \
                 (on by default)",
                e.name()
            )));
        }
        Ok(e)
    }
}

impl std::fmt::Display for EngineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::ops::Bound::Included;

    #[test]
    fn engine_names_parse_and_print() {
        assert_eq!(EngineName::parse(" SwizzleDB ").unwrap(), EngineName::SwizzleDb);
        assert_eq!(EngineName::SwizzleDb.to_string(), "swizzledb");
        for bad in ["", "rocksdb", "lmdb,swizzledb"] {
            match EngineName::parse(bad) {
                Err(WorkloadError::Config(m)) => assert!(m.contains("unknown engine"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        match EngineName::parse("LMDB") {
            Ok(e) => assert!(cfg!(feature = "lmdb") && e == EngineName::Lmdb),
            Err(WorkloadError::Config(m)) => {
                assert!(!cfg!(feature = "lmdb") && m.contains("lmdb feature"), "{m}")
            }
            Err(other) => panic!("{other}"),
        }
    }

    /// The transactions over several tables, checked on any engine: reads see the
    /// transaction's own writes, a rollback or an error leaves nothing behind, scans keep
    /// their bounds, limit and order.
    pub(crate) fn tx_contract<E: Engine>(e: &E) {
        let (a, b) = (e.create_table("a").unwrap(), e.create_table("b").unwrap());
        let (r, attempts) = e
            .transact(|tx| {
                for i in 0..10u8 {
                    tx.insert(&a, &[i], &[i; 4])?;
                }
                tx.insert(&b, b"x", b"1")?;
                assert!(!tx.put(&b, b"y", b"2")?, "a new key");
                assert!(tx.put(&b, b"y", b"3")?, "an existing key");
                assert_eq!(tx.get_with(&b, b"y", |v| v.map(<[u8]>::to_vec))?, Some(b"3".to_vec()));
                let out = tx.update_with(&a, &[3], |old, new| {
                    new.extend_from_slice(old);
                    new.push(9);
                    old.len()
                })?;
                assert_eq!(out, Some(4));
                assert_eq!(tx.update_with(&a, &[99], |_, _| unreachable!("absent"))?, None);
                assert!(tx.delete(&a, &[5])? && !tx.delete(&a, &[5])?);
                Ok(7)
            })
            .unwrap();
        assert_eq!((r, attempts), (Some(7), 1));
        let keys = |tx: &E::ReadTx<'_>, s: Bound<&[u8]>, t: Bound<&[u8]>, n: usize, rev: bool| {
            let mut seen = Vec::new();
            let f = |k: &[u8], _: &[u8]| {
                seen.push(k[0]);
                Ok(())
            };
            if rev {
                tx.scan_rev(&a, s, t, n, f)?;
            } else {
                tx.scan(&a, s, t, n, f)?;
            }
            Ok::<_, Abort>(seen)
        };
        let (seen, _) = e
            .transact_read(|tx| {
                assert_eq!(tx.get_with(&a, &[3], |v| v.map(<[u8]>::len))?, Some(5));
                assert!(tx.get_with(&a, &[5], |v| v.is_none())?);
                Ok(vec![
                    keys(tx, Unbounded, Unbounded, usize::MAX, false)?,
                    keys(tx, Included(&[2]), Bound::Excluded(&[7]), usize::MAX, false)?,
                    keys(tx, Bound::Excluded(&[2]), Included(&[7]), 2, false)?,
                    keys(tx, Included(&[2]), Included(&[7]), 2, true)?,
                    keys(tx, Included(&[2]), Bound::Excluded(&[7]), 1, true)?,
                    keys(tx, Included(&[20]), Unbounded, 5, false)?,
                ])
            })
            .unwrap();
        assert_eq!(
            seen.unwrap(),
            [vec![0, 1, 2, 3, 4, 6, 7, 8, 9], vec![2, 3, 4, 6], vec![3, 4], vec![7, 6], vec![6], vec![]]
        );
        // A requested rollback and an error both leave nothing behind.
        let (r, _) = e
            .transact(|tx| {
                tx.insert(&a, &[50], b"gone")?;
                tx.delete(&b, b"x")?;
                Err::<(), _>(Abort::Rollback)
            })
            .unwrap();
        assert!(r.is_none());
        let failed = e.transact(|tx| {
            tx.insert(&a, &[51], b"gone")?;
            tx.insert(&a, &[0], b"duplicate")
        });
        assert!(failed.is_err(), "a duplicate insert fails the transaction");
        let failed = e.transact(|tx| {
            tx.insert(&a, &[52], b"gone")?;
            Err::<(), _>(Abort::Workload(WorkloadError::Config("stop".into())))
        });
        assert!(matches!(failed, Err(WorkloadError::Config(m)) if m == "stop"));
        let mut all = Vec::new();
        e.for_each(&a, |k, _| {
            all.push(k[0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(all, [0, 1, 2, 3, 4, 6, 7, 8, 9]);
        assert!(e.read(&b, b"x", |v| Ok(v == Some(&b"1"[..]))).unwrap().0);
        let mut some = Vec::new();
        e.for_each_in(&a, Bound::Excluded(&[1]), Included(&[4]), |k, _| {
            some.push(k[0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(some, [2, 3, 4]);
    }

    /// The contract, checked on any engine.
    pub(crate) fn contract<E: Engine>(e: &E) {
        assert!(e.table("t").is_err(), "no table yet");
        let t = e.create_table("t").unwrap();
        let records: Vec<(Vec<u8>, Vec<u8>)> =
            (0..10u8).map(|i| (vec![b'k', b'0' + i], vec![i; 10])).collect();
        e.load(&t, &records).unwrap();
        assert!(e.load(&t, &records[3..4]).is_err(), "a duplicate key fails the batch");
        let t = e.table("t").unwrap();
        let (v, attempts) = e.read(&t, b"k3", |v| Ok(v.map(<[u8]>::to_vec))).unwrap();
        assert_eq!((v, attempts), (Some(vec![3; 10]), 1));
        assert!(e.read(&t, b"nope", |v| Ok(v.is_none())).unwrap().0);
        let refused = e.read(&t, b"k3", |_| Err::<(), _>(WorkloadError::Config("no".into())));
        assert!(matches!(refused, Err(WorkloadError::Config(m)) if m == "no"));

        assert!(e.update(&t, b"k4", b"four").unwrap().0);
        assert!(!e.update(&t, b"k99", b"new").unwrap().0, "an update does not insert");
        assert!(e.read(&t, b"k99", |v| Ok(v.is_none())).unwrap().0);
        e.insert(&t, b"k99", b"new").unwrap();
        assert!(e.insert(&t, b"k99", b"again").is_err(), "an insert does not overwrite");

        let mut seen = Vec::new();
        e.scan(&t, b"k35", 3, |k, v| {
            seen.push((k.to_vec(), v.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(b"k4".to_vec(), 4), (b"k5".to_vec(), 10), (b"k6".to_vec(), 10)]);

        let mut buf = Vec::new();
        let copy = |v: Option<&[u8]>, buf: &mut Vec<u8>| {
            let v = v.ok_or_else(|| WorkloadError::Config("missing".into()))?;
            buf.clear();
            buf.extend_from_slice(v);
            Ok(())
        };
        e.read_modify_write(&t, b"k5", &mut buf, copy, |b| b[0] = 55).unwrap();
        assert_eq!(e.read(&t, b"k5", |v| Ok(v.unwrap()[..2].to_vec())).unwrap().0, [55, 5]);
        let missing = e.read_modify_write(&t, b"k77", &mut buf, copy, |b| b[0] = 77);
        assert!(matches!(missing, Err(WorkloadError::Config(m)) if m == "missing"));
        assert!(e.read(&t, b"k77", |v| Ok(v.is_none())).unwrap().0, "nothing written");

        let mut keys = Vec::new();
        e.for_each(&t, |k, _| {
            keys.push(k.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(keys.len(), 11);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order");
    }
}
