//! What every workload's transactions share: running a body through [`Database::transact`]
//! with the workload's own reasons to stop, and latches that make read-modify-writes atomic
//! when record locking is off.

use std::sync::{Mutex, MutexGuard};
use swizzledb::{Database, Transaction};

use crate::workloads::WorkloadError;

/// Why a transaction body stopped (re-exported as `engine::Abort`: the error of every
/// [`crate::engine::TxRead`] and [`crate::engine::TxWrite`] call).
#[derive(Debug)]
pub enum Abort {
    /// SwizzleDB refused or failed ([`Database::transact`] retries refused locks).
    Db(swizzledb::Error),
    /// A record is missing or damaged, or another engine failed (LMDB's errors travel here:
    /// they are never retried).
    Workload(WorkloadError),
    /// The transaction asked to roll back (TPC-C New-Order's unused item).
    Rollback,
}

impl Abort {
    /// What a transaction that stopped with `self` after one attempt returns: `None` for a
    /// requested rollback, else the error.
    pub(crate) fn ended<R>(self) -> Result<(Option<R>, u32), WorkloadError> {
        match self {
            Abort::Rollback => Ok((None, 1)),
            Abort::Workload(e) => Err(e),
            Abort::Db(e) => Err(e.into()),
        }
    }
}

impl From<swizzledb::Error> for Abort {
    fn from(e: swizzledb::Error) -> Self {
        Abort::Db(e)
    }
}

impl From<WorkloadError> for Abort {
    fn from(e: WorkloadError) -> Self {
        Abort::Workload(e)
    }
}

/// Runs `body` as one transaction through [`Database::transact`] (which retries it after a
/// refused lock). Returns `None` if it rolled back on request, and the attempts.
pub(crate) fn transact<R>(
    db: &Database,
    body: impl FnMut(&mut Transaction<'_>) -> Result<R, Abort>,
) -> Result<(Option<R>, u32), WorkloadError> {
    run(db, false, body)
}

/// [`transact`] through [`Database::transact_snapshot`]: for read-only transactions, whose
/// reads then take no locks and wait for no writer where the database keeps versions (with
/// record locking, logged or not; LOCKS.md K21, K24), and are an ordinary transaction elsewhere.
pub(crate) fn transact_snapshot<R>(
    db: &Database,
    body: impl FnMut(&mut Transaction<'_>) -> Result<R, Abort>,
) -> Result<(Option<R>, u32), WorkloadError> {
    run(db, true, body)
}

fn run<R>(
    db: &Database,
    snapshot: bool,
    mut body: impl FnMut(&mut Transaction<'_>) -> Result<R, Abort>,
) -> Result<(Option<R>, u32), WorkloadError> {
    let mut attempts = 0u32;
    let mut stopped: Option<Abort> = None;
    let op = |tx: &mut Transaction<'_>| {
        attempts += 1;
        match body(tx) {
            Ok(r) => Ok(r),
            Err(Abort::Db(e)) => Err(e),
            Err(other) => {
                stopped = Some(other);
                // `transact` rolls back and returns; the workload's reason travels in `stopped`.
                Err(swizzledb::Error::Aborted("the workload stopped its transaction".into()))
            }
        }
    };
    let result = if snapshot { db.transact_snapshot(op) } else { db.transact(op) };
    match (result, stopped) {
        (Ok(r), _) => Ok((Some(r), attempts)),
        (Err(_), Some(Abort::Rollback)) => Ok((None, attempts)),
        (Err(_), Some(Abort::Workload(e))) => Err(e),
        (Err(e), _) => Err(e.into()),
    }
}

/// Latches striped by key, for read-modify-writes of one record with locking off (as an
/// in-place update holds the page latch in vmcache): with record locks the locks do this.
pub(crate) struct Latches(Vec<Stripe>);

/// One stripe per cache line, so that threads holding different stripes do not pass the line
/// between their cores.
#[repr(align(64))]
struct Stripe(Mutex<()>);

impl Latches {
    /// 1024 stripes.
    pub(crate) fn new() -> Latches {
        Latches((0..1024).map(|_| Stripe(Mutex::new(()))).collect())
    }

    /// Holds the stripe of `key` (`salt` tells tables with equal keys apart).
    pub(crate) fn hold(&self, salt: u64, key: &[u8]) -> MutexGuard<'_, ()> {
        let h = key.iter().fold(salt, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3));
        let stripe = (h ^ (h >> 29)) as usize % self.0.len();
        self.0[stripe].0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
