//! TPC-C as a [`Workload`] on any engine: loading, the mix of transactions, and the check.

use super::random::TpccRng;
use super::workload::{Tables, Tpcc, TpccWorker, KINDS};
use super::{check, load};
use crate::engine::Engine;
use crate::workloads::{Outcome, Workload, WorkloadError};

/// TPC-C runs on any engine: SwizzleDB's `Database` and, with the `lmdb` feature,
/// [`crate::engine::Lmdb`].
impl<E: Engine> Workload<E> for Tpcc {
    type Worker = TpccWorker<E::Table>;

    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn kinds(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn load(&self, db: &E) -> Result<(), WorkloadError> {
        load::load(self, db)
    }

    fn worker(&self, db: &E, thread: usize) -> Result<TpccWorker<E::Table>, WorkloadError> {
        let stream = self.next_stream();
        Ok(TpccWorker {
            tables: Tables::open(db)?,
            rng: TpccRng::new(self.config.seed ^ (u64::from(stream) << 32) ^ thread as u64),
            stream,
            sequence: 0,
        })
    }

    // Out of line, so that a profile can count what one transaction costs
    // (`valgrind --tool=callgrind --toggle-collect='*tpcc*run_one*'`, docs/logging.md).
    #[inline(never)]
    fn run_one(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Result<Outcome, WorkloadError> {
        // The mix of clause 5.2.3 at its minimum percentages, New-Order taking the rest.
        let r = w.rng.urand(1, 100);
        let (kind, (done, attempts)) = match r {
            1..=43 => (1, self.payment(db, w)?),
            44..=47 => (2, self.order_status(db, w)?),
            48..=51 => (3, self.delivery(db, w)?),
            52..=55 => (4, self.stock_level(db, w)?),
            _ => (0, self.new_order(db, w)?),
        };
        Ok(Outcome { kind, attempts, rolled_back: !done })
    }

    fn verify(&self, db: &E) -> Result<(), WorkloadError> {
        check::verify(self, db)
    }
}
