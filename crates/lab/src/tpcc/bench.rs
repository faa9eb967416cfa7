//! `bench tpcc`: TPC-C throughput per buffer mode, logging and locking setting and thread
//! count. One database per configuration (mode × logging × locking), loaded once; the
//! measurements are interleaved (repetition, then thread count, then configuration) so that
//! machine noise hits every configuration alike; each database is verified (conditions 1–4)
//! after its last measurement.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use swizzledb::{CommitMode, Database, PolicySpec, PoolMode};

use super::{Tpcc, TpccConfig, KINDS};
use crate::bench::{median, on_off, Scratch};
use crate::harness::{self, Until};
use crate::workload::{Workload, WorkloadError};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    /// The scale.
    pub config: TpccConfig,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Length of one measurement.
    pub duration: Duration,
    /// Measurements per configuration and thread count.
    pub repeat: u32,
    /// Buffer modes.
    pub modes: Vec<PoolMode>,
    /// Logging settings (with logging, commits are asynchronous: they return before the log
    /// is flushed).
    pub logging: Vec<bool>,
    /// Record-locking settings.
    pub locking: Vec<bool>,
    /// Pool bytes per database (`None`: [`BenchPlan::default_pool_bytes`]).
    pub pool_bytes: Option<u64>,
    /// Replacement policy (`None`: the engine's default).
    pub policy: Option<PolicySpec>,
    /// Directory for the temporary databases.
    pub dir: PathBuf,
}

/// Room a database is given per second measured and per thread: a New-Order adds about 1 KiB
/// of records (an order, its index entries, ten lines), and pages filled at their right end
/// are split half full, so one thread at 30,000 transactions per second grows the file by
/// about 25 MiB/s.
const GROWTH_PER_THREAD_SECOND: u64 = 32 << 20;

impl BenchPlan {
    /// A pool holding the loaded data twice over (pages are not full), plus the growth of every
    /// measurement the database will see.
    #[must_use]
    pub fn default_pool_bytes(&self) -> u64 {
        let thread_seconds: f64 = self
            .threads
            .iter()
            .map(|&t| t as f64 * self.duration.as_secs_f64() * f64::from(self.repeat))
            .sum();
        2 * self.config.record_bytes()
            + (thread_seconds.ceil() as u64) * GROWTH_PER_THREAD_SECOND
            + (64 << 20)
    }

    /// The pool size used.
    #[must_use]
    pub fn pool(&self) -> u64 {
        self.pool_bytes.unwrap_or_else(|| self.default_pool_bytes())
    }

    /// Checks the plan before anything runs.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter and what to do.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.config.validate()?;
        let bad = |s: String| Err(WorkloadError::Config(s));
        if self.threads.is_empty() || self.threads.contains(&0) {
            return bad("--threads needs thread counts of at least 1".into());
        }
        if self.duration.is_zero() {
            return bad("--duration must be above 0".into());
        }
        if self.repeat == 0 {
            return bad("--repeat must be at least 1".into());
        }
        if self.modes.is_empty() || self.logging.is_empty() || self.locking.is_empty() {
            return bad("--modes, --logging and --locking each need at least one value".into());
        }
        // A transaction fixes a few pages per tree it touches at once; 256 pages of 8 KiB are
        // far more than any one needs.
        let min = 256 * 8192;
        let pool = self.pool();
        if pool < min {
            return bad(format!(
                "--pool {pool} B is below the {min} B a TPC-C transaction needs; raise --pool"
            ));
        }
        let data = self.config.record_bytes();
        if self.modes.contains(&PoolMode::MainMemory) && pool < data {
            return bad(format!(
                "--pool {} MiB cannot hold the {} MiB of records {} warehouses load, and main-memory mode \
                 never evicts; raise --pool or drop main-memory from --modes",
                pool >> 20,
                data.div_ceil(1 << 20),
                self.config.warehouses
            ));
        }
        Ok(())
    }
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// Buffer mode.
    pub mode: PoolMode,
    /// Logging on.
    pub logging: bool,
    /// Record locking on.
    pub locking: bool,
    /// Warehouses.
    pub warehouses: u32,
    /// Threads.
    pub threads: usize,
    /// Repetition (0-based).
    pub rep: u32,
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions finished per kind, in [`KINDS`] order (rolled-back New-Orders included).
    pub done: [u64; 5],
    /// New-Orders rolled back (unused item).
    pub rollbacks: u64,
    /// Wait-die retries.
    pub retries: u64,
    /// Pool bytes.
    pub pool_bytes: u64,
    /// Seconds the database took to load.
    pub load_seconds: f64,
}

impl BenchRow {
    /// Transactions finished.
    #[must_use]
    pub fn transactions(&self) -> u64 {
        self.done.iter().sum()
    }

    /// Transactions per second.
    #[must_use]
    pub fn tx_per_sec(&self) -> f64 {
        self.transactions() as f64 / self.seconds
    }

    /// New-Orders per second (the specification's tpmC divided by 60).
    #[must_use]
    pub fn new_order_per_sec(&self) -> f64 {
        self.done[0] as f64 / self.seconds
    }

    /// Retries per 1000 transactions.
    #[must_use]
    pub fn retries_per_1000(&self) -> f64 {
        self.retries as f64 * 1000.0 / self.transactions().max(1) as f64
    }
}

/// The columns of `tpcc.csv` (docs/results-schema.md).
pub const CSV_COLUMNS: &str = "experiment,mode,logging,locking,warehouses,threads,rep,seconds,transactions,\
tx_per_sec,new_order_per_sec,new_order,payment,order_status,delivery,stock_level,rollbacks,retries,pool_bytes,\
load_seconds";

/// Runs the plan, printing progress to `log`; returns one row per measurement.
///
/// # Errors
/// A bad plan ([`WorkloadError::Config`], before anything is created), a database failure, or
/// a database that fails its consistency check after the run.
pub fn run_bench(plan: &BenchPlan, log: &mut dyn Write) -> Result<Vec<BenchRow>, WorkloadError> {
    plan.validate()?;
    let io_err = |e: io::Error| WorkloadError::Io { path: "standard output".into(), source: e };
    let scratch = Scratch::new(&plan.dir, "tpcc")?;
    let tpcc = Tpcc::new(plan.config.clone())?;
    let pool = plan.pool();
    let mut dbs: Vec<(PoolMode, bool, bool, Database, f64)> = Vec::new();
    for &mode in &plan.modes {
        for &logging in &plan.logging {
            for &locking in &plan.locking {
                let path =
                    scratch.0.join(format!("{mode}-log-{}-lock-{}.swz", on_off(logging), on_off(locking)));
                let mut b = Database::builder()
                    .mode(mode)
                    .pool_bytes(usize::try_from(pool).unwrap_or(usize::MAX))
                    .logging(logging)
                    .locking(locking);
                if logging {
                    b = b.commit_mode(CommitMode::Async);
                }
                if let Some(p) = plan.policy {
                    b = b.policy(p);
                }
                let db = b.create(&path)?;
                let started = Instant::now();
                tpcc.load(&db)?;
                let load = started.elapsed().as_secs_f64();
                writeln!(
                    log,
                    "loaded {} warehouses: {mode}, logging {}, locking {} in {load:.1} s",
                    plan.config.warehouses,
                    on_off(logging),
                    on_off(locking)
                )
                .map_err(io_err)?;
                dbs.push((mode, logging, locking, db, load));
            }
        }
    }
    let mut rows = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.threads {
            for (mode, logging, locking, db, load) in &dbs {
                let m = harness::run(&tpcc, db, threads, Until::Elapsed(plan.duration))?;
                let row = BenchRow {
                    mode: *mode,
                    logging: *logging,
                    locking: *locking,
                    warehouses: plan.config.warehouses,
                    threads,
                    rep,
                    seconds: m.elapsed.as_secs_f64(),
                    done: std::array::from_fn(|k| m.kinds[k].done),
                    rollbacks: m.rolled_back(),
                    retries: m.retries(),
                    pool_bytes: pool,
                    load_seconds: *load,
                };
                writeln!(
                    log,
                    "rep {rep} threads {threads} {mode} logging {} locking {}: {:.0} tx/s",
                    on_off(*logging),
                    on_off(*locking),
                    row.tx_per_sec()
                )
                .map_err(io_err)?;
                rows.push(row);
            }
        }
    }
    for (mode, logging, locking, db, _) in dbs {
        tpcc.verify(&db).map_err(|e| match e {
            WorkloadError::Inconsistent { condition, detail } => WorkloadError::Inconsistent {
                condition,
                detail: format!("{mode}, logging {}, locking {}: {detail}", on_off(logging), on_off(locking)),
            },
            other => other,
        })?;
        db.close()?;
    }
    writeln!(log, "consistency conditions 1-4 hold in every database").map_err(io_err)?;
    Ok(rows)
}

/// Prints the medians per configuration and thread count.
///
/// # Errors
/// Writing failed.
pub fn print_table(out: &mut dyn Write, plan: &BenchPlan, rows: &[BenchRow]) -> io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>7} {:>7} {:>7} {:>12} {:>13} {:>10} {:>13}",
        "mode", "logging", "locking", "threads", "tx/s", "new-order/s", "rollback %", "retries/1000"
    )?;
    for &threads in &plan.threads {
        for &mode in &plan.modes {
            for &logging in &plan.logging {
                for &locking in &plan.locking {
                    let sel: Vec<&BenchRow> = rows
                        .iter()
                        .filter(|r| {
                            r.threads == threads
                                && r.mode == mode
                                && r.logging == logging
                                && r.locking == locking
                        })
                        .collect();
                    let m = |f: &dyn Fn(&BenchRow) -> f64| median(sel.iter().map(|r| f(r)).collect());
                    writeln!(
                        out,
                        "{:<12} {:>7} {:>7} {:>7} {:>12.0} {:>13.0} {:>10.2} {:>13.2}",
                        mode.name(),
                        on_off(logging),
                        on_off(locking),
                        threads,
                        m(&BenchRow::tx_per_sec),
                        m(&BenchRow::new_order_per_sec),
                        m(&|r| r.rollbacks as f64 * 100.0 / r.done[0].max(1) as f64),
                        m(&BenchRow::retries_per_1000),
                    )?;
                }
            }
        }
    }
    writeln!(
        out,
        "TPC-C, {} warehouses, mix {}: medians of {} x {:.1} s; rollback % of New-Orders; logging commits asynchronously.",
        plan.config.warehouses,
        KINDS.join("/"),
        plan.repeat,
        plan.duration.as_secs_f64()
    )
}

/// One row of `tpcc.csv` (columns [`CSV_COLUMNS`], described in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TpccRow {
    pub experiment: &'static str,
    pub mode: &'static str,
    pub logging: &'static str,
    pub locking: &'static str,
    pub warehouses: u32,
    pub threads: usize,
    pub rep: u32,
    pub seconds: f64,
    pub transactions: u64,
    pub tx_per_sec: f64,
    pub new_order_per_sec: f64,
    pub new_order: u64,
    pub payment: u64,
    pub order_status: u64,
    pub delivery: u64,
    pub stock_level: u64,
    pub rollbacks: u64,
    pub retries: u64,
    pub pool_bytes: u64,
    pub load_seconds: f64,
}

impl TpccRow {
    /// The row of measurement `r`, for the result file of experiment `experiment`.
    #[must_use]
    pub fn new(experiment: &'static str, r: &BenchRow) -> TpccRow {
        TpccRow {
            experiment,
            mode: r.mode.name(),
            logging: on_off(r.logging),
            locking: on_off(r.locking),
            warehouses: r.warehouses,
            threads: r.threads,
            rep: r.rep,
            seconds: r.seconds,
            transactions: r.transactions(),
            tx_per_sec: r.tx_per_sec(),
            new_order_per_sec: r.new_order_per_sec(),
            new_order: r.done[0],
            payment: r.done[1],
            order_status: r.done[2],
            delivery: r.done[3],
            stock_level: r.done[4],
            rollbacks: r.rollbacks,
            retries: r.retries,
            pool_bytes: r.pool_bytes,
            load_seconds: r.load_seconds,
        }
    }
}
