//! Transactions (RECOVERY.md R4–R6): point reads and writes on any of the database's trees,
//! committed or rolled back as a whole.

use std::sync::Arc;
use swizzledb_btree::{LeafChange, Tree, TreeError};
use swizzledb_sync::{Lsn, TxnId};

use crate::lock::LockMode;
use crate::logging::{TxnLog, TxnShared, Undo, Wal};
use crate::record::{Record, TxnState};
use crate::{CommitMode, Core, Error, Result};

/// A transaction: point reads and writes on the database's trees, under record locks held
/// until it ends (shared for reads, exclusive for writes; LOCKS.md), so concurrent transactions
/// are serializable for point operations. [`Transaction::commit`] makes its writes durable,
/// [`Transaction::abort`] — or dropping the transaction unfinished — undoes them. A lock that
/// cannot be granted ([`crate::Error::Lock`]: wait-die chose this transaction) leaves the
/// transaction as it was; abort it and retry.
pub struct Transaction<'db> {
    db: &'db Core,
    log: TxnLog<'db>,
    done: bool,
}

impl<'db> Transaction<'db> {
    pub(crate) fn new(db: &'db Core, wal: Option<&'db Wal>, shared: Arc<TxnShared>) -> Transaction<'db> {
        Transaction { db, log: TxnLog::new(wal, shared), done: false }
    }

    /// The transaction's number.
    #[must_use]
    pub fn id(&self) -> TxnId {
        self.log.shared.id
    }

    /// The value stored under `key` in `tree`.
    ///
    /// # Errors
    /// I/O errors or corruption.
    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.lock(self.id(), tree, key, LockMode::Shared)?;
        Ok(tree.get(key)?)
    }

    /// Inserts or replaces; returns true if the key existed.
    ///
    /// # Errors
    /// Oversize key or value, pool or I/O errors, or the log failed; nothing changes then, and
    /// the transaction can still commit or abort.
    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<bool> {
        self.db.lock(self.id(), tree, key, LockMode::Exclusive)?;
        Ok(tree.put_logged(key, value, true, &self.log)?)
    }

    /// Inserts a new record; fails with [`TreeError::DuplicateKey`] if the key exists.
    ///
    /// # Errors
    /// As [`Transaction::put`], and the duplicate key.
    pub fn insert(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.lock(self.id(), tree, key, LockMode::Exclusive)?;
        tree.put_logged(key, value, false, &self.log)?;
        Ok(())
    }

    /// Deletes `key`; returns true if it existed.
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<bool> {
        self.db.lock(self.id(), tree, key, LockMode::Exclusive)?;
        Ok(tree.delete_logged(key, &self.log)?)
    }

    /// Commits: logs the commit record and, in [`CommitMode::Sync`], returns once it is durable.
    /// A transaction that changed nothing logs nothing.
    ///
    /// # Errors
    /// The log failed: the commit is not acknowledged, and restart decides (a commit record that
    /// reached the disk commits; otherwise the transaction is rolled back).
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        let result = self.log_commit();
        // The transaction ends here even if its commit failed: commit fails only on a log
        // failure, which is sticky (wal README W11), so nothing can commit after reading what it
        // leaves in place, and restart decides its fate. Keeping its locks would block the
        // others forever.
        self.db.finish_txn(self.id());
        result
    }

    fn log_commit(&self) -> Result<()> {
        let Some(wal) = self.log.wal else { return Ok(()) };
        if self.log.shared.last() != Lsn(0) {
            let txn = self.id();
            let lsn = self.log.append_then(
                |prev| Record::Commit { txn, prev },
                |_| self.log.shared.set_state(TxnState::Committed),
            )?;
            if wal.commit_mode == CommitMode::Sync {
                wal.log.flush(lsn)?;
            }
            self.log.append(|prev| Record::End { txn, prev })?;
        }
        Ok(())
    }

    /// Rolls back every change, newest first, logging a compensation record for each (R5).
    ///
    /// # Errors
    /// The log or the pool failed midway; restart finishes the rollback.
    pub fn abort(mut self) -> Result<()> {
        self.done = true;
        self.rollback()
    }

    fn rollback(&mut self) -> Result<()> {
        let result = self.undo_all();
        match &result {
            // A failed log is sticky (wal README W11): no one can commit after seeing what the
            // rollback left in place, no checkpoint can drop its records, and restart finishes
            // the rollback. So the transaction ends and releases its locks.
            Ok(()) | Err(Error::Log(_) | Error::Tree(TreeError::Log(_))) => self.db.finish_txn(self.id()),
            // Otherwise (the pool failed) it keeps its locks and its entry in the transaction
            // table, so its uncommitted changes stay hidden and its records stay in the log.
            Err(_) => {}
        }
        result
    }

    fn undo_all(&mut self) -> Result<()> {
        let txn = self.id();
        let logged = self.log.wal.is_some() && self.log.shared.last() != Lsn(0);
        if logged {
            self.log.append_then(
                |prev| Record::Abort { txn, prev },
                |_| self.log.shared.set_state(TxnState::Aborting),
            )?;
        }
        let undo = std::mem::take(&mut *self.log.undo.borrow_mut());
        for entry in undo.iter().rev() {
            let tree = self.db.tree_by_root(entry.tree)?;
            compensate(&tree, &self.log, entry)?;
        }
        if logged {
            self.log.append(|prev| Record::End { txn, prev })?;
        }
        Ok(())
    }
}

/// Undoes one change through the tree, logging a compensation record whose undo-next link is
/// the undone record's previous one (R5). The inverse is applied logically, by key: the record
/// may have moved to another page since (splits and merges are never undone, T13).
pub(crate) fn compensate(tree: &Tree, log: &TxnLog<'_>, entry: &Undo) -> Result<()> {
    log.compensating.set(Some(entry.prev));
    let result = match entry.change.borrow().inverse() {
        LeafChange::Delete { key, .. } => tree.delete_logged(key, log).map(|_| ()),
        LeafChange::Insert { key, value } | LeafChange::Update { key, new: value, .. } => {
            tree.put_logged(key, value, true, log).map(|_| ())
        }
    };
    log.compensating.set(None);
    match result {
        Ok(()) | Err(TreeError::DuplicateKey) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl Drop for Transaction<'_> {
    /// An unfinished transaction is rolled back; errors are ignored (restart finishes the job).
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            let _ = self.rollback();
        }
    }
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction").field("id", &self.id()).finish_non_exhaustive()
    }
}
