//! TPC-B as a [`Workload`]: the [`Tpcb`] workload, its load, its one transaction and its check.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU32, Ordering};
use swizzledb::{Database, Transaction, Tree};

use super::check;
use super::config::{t, TpcbConfig, TELLERS};
use super::schema::{history_key, id_key, History, Row, HISTORY_SIZE, TREES};
use crate::workloads::txn::{transact, Abort, Latches};
use crate::workloads::{Outcome, Workload, WorkloadError};

/// The one operation kind.
pub const KINDS: [&str; 1] = ["transaction"];

/// TPC-B over one database (or several: nothing here belongs to one database).
pub struct Tpcb {
    config: TpcbConfig,
    /// Latches for read-modify-writes with locking off (see the module docs).
    latches: Latches,
    /// History key streams handed out, one per worker.
    streams: AtomicU32,
}

/// A thread's state.
pub struct TpcbWorker {
    trees: [Tree; 4],
    rng: SmallRng,
    /// History key: this worker's stream and its next sequence number.
    stream: u32,
    sequence: u32,
    /// Locking is off: read-modify-writes take the workload's latches.
    latch: bool,
}

fn open_trees(db: &Database) -> Result<[Tree; 4], WorkloadError> {
    Ok([db.tree(TREES[0])?, db.tree(TREES[1])?, db.tree(TREES[2])?, db.tree(TREES[3])?])
}

/// Seconds since the Unix epoch.
fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs() as i64)
}

/// Inserts per loading transaction.
const BATCH: u32 = 500;

impl Tpcb {
    /// TPC-B at the scale of `config`.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] if a parameter is out of range.
    pub fn new(config: TpcbConfig) -> Result<Tpcb, WorkloadError> {
        config.validate()?;
        Ok(Tpcb { config, latches: Latches::new(), streams: AtomicU32::new(0) })
    }

    /// The scale.
    #[must_use]
    pub fn config(&self) -> &TpcbConfig {
        &self.config
    }

    /// Adds `delta` to the balance of record `id` of `tree`; with `latch`, under its latch.
    /// Returns the new balance.
    fn add(
        &self,
        latch: bool,
        tx: &mut Transaction<'_>,
        (table, tree): (usize, &Tree),
        id: u32,
        delta: i64,
    ) -> Result<i64, Abort> {
        let key = id_key(id);
        let _held = latch.then(|| self.latches.hold(table as u64, &key));
        let mut row = match tx.get_with(tree, &key, |v| v.map(|v| Row::decode(TREES[table], v)))? {
            Some(r) => r?,
            None => return Err(WorkloadError::Missing { table: TREES[table], key: id.to_string() }.into()),
        };
        row.balance += delta;
        tx.put(tree, &key, &row.encode())?;
        Ok(row.balance)
    }

    /// Inserts the rows `first..end` of `table` (branch of row `i`: `i / per_branch`), a batch
    /// per transaction.
    fn load_rows(&self, db: &Database, tree: &Tree, end: u32, per_branch: u32) -> Result<(), WorkloadError> {
        let mut first = 0;
        while first < end {
            let last = end.min(first.saturating_add(BATCH));
            db.transact(|tx| {
                for id in first..last {
                    let row = Row { id, branch: id / per_branch, balance: 0 };
                    tx.insert(tree, &id_key(id), &row.encode())?;
                }
                Ok(())
            })?;
            first = last;
        }
        Ok(())
    }
}

impl Workload for Tpcb {
    type Worker = TpcbWorker;

    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn kinds(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn load(&self, db: &Database) -> Result<(), WorkloadError> {
        for name in TREES {
            db.create_tree(name)?;
        }
        let trees = open_trees(db)?;
        let c = &self.config;
        self.load_rows(db, &trees[t::BRANCH], c.branches, 1)?;
        self.load_rows(db, &trees[t::TELLER], c.branches * TELLERS, TELLERS)?;
        self.load_rows(db, &trees[t::ACCOUNT], c.branches * c.accounts, c.accounts)
    }

    fn worker(&self, db: &Database, thread: usize) -> Result<TpcbWorker, WorkloadError> {
        let stream = self.streams.fetch_add(1, Ordering::Relaxed);
        Ok(TpcbWorker {
            trees: open_trees(db)?,
            rng: SmallRng::seed_from_u64(self.config.seed ^ (u64::from(stream) << 32) ^ thread as u64),
            stream,
            sequence: 0,
            latch: db.lock_stats().is_none(),
        })
    }

    fn run_one(&self, db: &Database, w: &mut TpcbWorker) -> Result<Outcome, WorkloadError> {
        let c = &self.config;
        let branch = w.rng.gen_range(0..c.branches);
        let teller = branch * TELLERS + w.rng.gen_range(0..TELLERS);
        let account_branch = if c.remote && c.branches > 1 && w.rng.gen_range(0..100) < 15 {
            // Uniform over the other branches.
            let b = w.rng.gen_range(0..c.branches - 1);
            if b >= branch {
                b + 1
            } else {
                b
            }
        } else {
            branch
        };
        let account = account_branch * c.accounts + w.rng.gen_range(0..c.accounts);
        let delta = w.rng.gen_range(-999_999..=999_999);
        let history = History { account, teller, branch, delta, time: now() };
        let key = history_key(w.stream, w.sequence);
        let (latch, trees) = (w.latch, &w.trees);
        let (_, attempts) = transact(db, |tx| {
            let _balance = self.add(latch, tx, (t::ACCOUNT, &trees[t::ACCOUNT]), account, delta)?;
            self.add(latch, tx, (t::TELLER, &trees[t::TELLER]), teller, delta)?;
            self.add(latch, tx, (t::BRANCH, &trees[t::BRANCH]), branch, delta)?;
            tx.insert(&trees[t::HISTORY], &key, &history.encode())?;
            Ok(())
        })?;
        // After 2^32 transactions a worker's history keys continue in a new stream.
        w.sequence = w.sequence.checked_add(1).unwrap_or_else(|| {
            w.stream = self.streams.fetch_add(1, Ordering::Relaxed);
            0
        });
        Ok(Outcome { kind: 0, attempts, rolled_back: false })
    }

    fn verify(&self, db: &Database) -> Result<(), WorkloadError> {
        check::verify(&self.config, db)
    }
}

/// Bytes a transaction adds: one history record and its key.
pub(crate) const HISTORY_BYTES: u64 = HISTORY_SIZE as u64 + 8;
