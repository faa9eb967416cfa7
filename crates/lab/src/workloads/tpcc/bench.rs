//! `bench tpcc`: TPC-C throughput per engine, buffer mode, logging, locking and
//! optimistic-descent setting and thread count. One database per configuration (SwizzleDB:
//! mode × logging × locking × optimistic descents, traditional mode only with them off as it
//! always couples latches; LMDB: one per logging setting, as it has no modes, no locking
//! setting and no optimistic descents), loaded once; the measurements are interleaved
//! (repetition, then thread count, then configuration, engines included, the configurations in
//! the opposite order every other repetition) so that machine noise hits every configuration
//! alike; each database is verified (conditions 1–4) after its last
//! measurement.

use std::io::{self, Write};
use std::time::Instant;
use swizzledb::PoolMode;

use super::workload::{Tpcc, TpccConfig, KINDS};
use crate::engine::EngineName;
use crate::harness::Until;
use crate::workloads::bench::{self, median, on_off, prefault_fits, Config, Db, DbSpec, Scratch};
use crate::workloads::WorkloadError;

/// What to measure: the shared settings, and [`TpccPlan`].
pub type BenchPlan = bench::BenchPlan<TpccPlan>;

/// TPC-C's own part of a [`BenchPlan`].
#[derive(Clone, Debug)]
pub struct TpccPlan {
    /// Engines, in table order: SwizzleDB (in each of `modes` × `logging` × `locking` ×
    /// `optimistic`) and LMDB (once per `logging` setting).
    pub engines: Vec<EngineName>,
    /// The scale.
    pub config: TpccConfig,
    /// Transactions each thread runs per measurement, in place of the plan's duration (which
    /// then only sizes the pool): a fixed amount of work, the same from run to run, for counts
    /// of instructions per transaction (`valgrind --tool=callgrind`, docs/isolation.md).
    /// `None`: measurements last the plan's duration.
    pub transactions: Option<u64>,
}

impl bench::OnEngines for TpccPlan {
    fn engines(&self) -> &[EngineName] {
        &self.engines
    }
}

/// Room a database is given per second measured and per thread: a New-Order adds about 1 KiB
/// of records (an order, its index entries, ten lines), and pages filled at their right end
/// are split half full, so one thread at 30,000 transactions per second grows the file by
/// about 25 MiB/s.
const GROWTH_PER_THREAD_SECOND: u64 = 32 << 20;

impl bench::SizesPool for TpccPlan {
    fn record_bytes(&self) -> u64 {
        self.config.record_bytes()
    }

    fn growth_bytes(plan: &BenchPlan) -> u64 {
        (plan.thread_seconds().ceil() as u64) * GROWTH_PER_THREAD_SECOND
    }
}

impl BenchPlan {
    /// Checks the plan before anything runs.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter and what to do.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.workload.config.validate()?;
        self.validate_engines_and_shared()?;
        if !self.runs(EngineName::SwizzleDb) {
            return Ok(());
        }
        let what = format!("{} warehouses", self.workload.config.warehouses);
        bench::validate_pool(self.pool(), self.workload.config.record_bytes(), &self.modes, &what, &self.dir)
    }
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// The database configuration (engine, mode, logging, locking, optimistic descents).
    pub config: Config,
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
    /// Retries after a failed lock request (a deadlock's victim, or wait-die's).
    pub retries: u64,
    /// SwizzleDB's pool bytes (none for LMDB).
    pub pool_bytes: Option<u64>,
    /// Seconds the database took to load.
    pub load_seconds: f64,
    /// Log bytes the measurement appended (frame headers and padding included); `None` without
    /// a log.
    pub log_bytes: Option<u64>,
    /// Record-lock requests and waits of the measurement (`LockStats::requests`, `waits`);
    /// `None` without record locks.
    pub locks: Option<(u64, u64)>,
    /// The measurement stopped before its time: a main-memory pool was about to fill
    /// ([`crate::workloads::bench::main_memory_room`]); `seconds` is the time it ran.
    pub cut_short: bool,
    /// CPU time the whole process used during the measurement, user and system: the threads
    /// running transactions and every background thread (a log's flusher and page cleaner),
    /// whatever core they ran on; `NaN` where the system cannot tell. Unlike throughput it
    /// does not count time a thread waited or was descheduled, so on a shared machine it
    /// moves less with the neighbours' load.
    pub cpu_seconds: f64,
    /// New-Order read the fields no transaction changes as committed reads
    /// ([`TpccConfig::committed_reads`]).
    pub committed_reads: bool,
    /// Stock-Level read at read committed, not at a snapshot
    /// ([`TpccConfig::stock_level_read_committed`]).
    pub stock_level_read_committed: bool,
    /// A cache line's round trip between two threads just before the measurement, in
    /// nanoseconds ([`crate::support::cores::line_round_trip_ns`]; `None` with one CPU).
    pub line_ns: Option<f64>,
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

    /// Log bytes per transaction (`NaN` without a log).
    #[must_use]
    pub fn log_bytes_per_tx(&self) -> f64 {
        self.log_bytes.map_or(f64::NAN, |b| b as f64 / self.transactions().max(1) as f64)
    }

    /// Retries per 1000 transactions.
    #[must_use]
    pub fn retries_per_1000(&self) -> f64 {
        self.retries as f64 * 1000.0 / self.transactions().max(1) as f64
    }

    /// Record-lock requests per transaction (`NaN` without record locks).
    #[must_use]
    pub fn locks_per_tx(&self) -> f64 {
        self.locks.map_or(f64::NAN, |(requests, _)| requests as f64 / self.transactions().max(1) as f64)
    }

    /// Process CPU time per transaction, in microseconds (`NaN` where the system cannot tell).
    #[must_use]
    pub fn cpu_us_per_tx(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.transactions().max(1) as f64
    }

    /// Lock requests that waited, per 1000 transactions (`NaN` without record locks).
    #[must_use]
    pub fn lock_waits_per_1000(&self) -> f64 {
        self.locks.map_or(f64::NAN, |(_, waits)| waits as f64 * 1000.0 / self.transactions().max(1) as f64)
    }
}

/// The columns of `tpcc.csv` (docs/results-schema.md).
pub const CSV_COLUMNS: &str = "experiment,mode,logging,locking,warehouses,threads,rep,seconds,transactions,\
tx_per_sec,new_order_per_sec,new_order,payment,order_status,delivery,stock_level,rollbacks,retries,pool_bytes,\
load_seconds,log_bytes,engine,optimistic,io,lock_requests,lock_waits,cut_short,cpu_seconds,committed_reads,stock_level_reads,line_ns";

/// Runs the plan, printing progress to `log`; returns one row per measurement.
///
/// # Errors
/// A bad plan ([`WorkloadError::Config`], before anything is created), a database failure, or
/// a database that fails its consistency check after the run.
pub fn run_bench(plan: &BenchPlan, log: &mut dyn Write) -> Result<Vec<BenchRow>, WorkloadError> {
    plan.validate()?;
    let io_err = |e: io::Error| WorkloadError::Io { path: "standard output".into(), source: e };
    let scratch = Scratch::new(&plan.dir, "tpcc")?;
    let tpcc = Tpcc::new(plan.workload.config.clone())?;
    let pool = plan.pool();
    let configs = plan.configs();
    let swizzledb_dbs = configs.iter().filter(|c| c.engine() == EngineName::SwizzleDb).count();
    let prefault = prefault_fits(swizzledb_dbs, pool, log)?;
    let spec = DbSpec {
        dir: &scratch.0,
        name: "tpcc",
        pool,
        policy: plan.policy,
        prefault,
        lmdb_map_bytes: plan.lmdb_map_bytes(),
        lmdb_readers: plan.lmdb_readers(),
    };
    let mut dbs: Vec<(Config, Db, f64)> = Vec::new();
    for config in configs {
        let db = Db::create(config, &spec)?;
        let started = Instant::now();
        db.load(&tpcc)?;
        let load = started.elapsed().as_secs_f64();
        writeln!(
            log,
            "loaded {} warehouses: {} in {load:.1} s",
            plan.workload.config.warehouses,
            config.describe()
        )
        .map_err(io_err)?;
        dbs.push((config, db, load));
    }
    let mut rows = Vec::new();
    // Databases whose main-memory pool filled: the data only grows, so they are measured no more.
    let mut full = vec![false; dbs.len()];
    for rep in 0..plan.repeat {
        for &threads in &plan.threads {
            for i in crate::support::stats::in_turn(dbs.len(), rep) {
                let (config, db, load) = &dbs[i];
                if full[i] {
                    continue;
                }
                let log_before = db.log_bytes_appended();
                let locks_before = db.lock_counts();
                let line_ns = crate::support::cores::line_round_trip_ns();
                let cpu_before = crate::support::cpu::process_cpu_secs();
                let until =
                    plan.workload.transactions.map_or(Until::Elapsed(plan.duration), Until::Operations);
                let m = db.run(&tpcc, threads, until)?;
                let cpu_seconds = crate::support::cpu::secs_since(cpu_before);
                let log_bytes = db.log_bytes_appended().zip(log_before).map(|(a, b)| a - b);
                let locks = db.lock_counts().zip(locks_before).map(|(a, b)| (a.0 - b.0, a.1 - b.1));
                db.settle()?;
                let row = BenchRow {
                    config: *config,
                    warehouses: plan.workload.config.warehouses,
                    threads,
                    rep,
                    seconds: m.elapsed.as_secs_f64(),
                    done: std::array::from_fn(|k| m.kinds[k].done),
                    rollbacks: m.rolled_back(),
                    retries: m.retries(),
                    pool_bytes: config.mode().map(|_| pool),
                    load_seconds: *load,
                    log_bytes,
                    locks,
                    cut_short: m.cut_short,
                    cpu_seconds,
                    committed_reads: plan.workload.config.committed_reads,
                    stock_level_read_committed: plan.workload.config.stock_level_read_committed,
                    line_ns,
                };
                full[i] = m.cut_short;
                if m.cut_short && m.elapsed < plan.duration / 4 {
                    writeln!(
                        log,
                        "rep {rep} threads {threads} {}: not counted, the pool filled after {:.2} s",
                        config.describe(),
                        row.seconds
                    )
                    .map_err(io_err)?;
                    continue;
                }
                writeln!(
                    log,
                    "rep {rep} threads {threads} {}: {:.0} tx/s{}",
                    config.describe(),
                    row.tx_per_sec(),
                    cut_note(&row)
                )
                .map_err(io_err)?;
                rows.push(row);
            }
        }
    }
    for (config, db, _) in dbs {
        db.verify(&tpcc).map_err(|e| match e {
            WorkloadError::Inconsistent { condition, detail } => {
                WorkloadError::Inconsistent { condition, detail: format!("{}: {detail}", config.describe()) }
            }
            other => other,
        })?;
        db.close()?;
    }
    writeln!(log, "consistency conditions 1-4 hold in every database").map_err(io_err)?;
    Ok(rows)
}

/// What the progress line of a measurement cut short says (nothing for the others).
fn cut_note(row: &BenchRow) -> String {
    if row.cut_short {
        format!(" (cut short after {:.2} s: the main-memory pool was nearly full)", row.seconds)
    } else {
        String::new()
    }
}

/// The line a table of `plan`'s `rows` adds when measurements were cut short
/// ([`BenchRow::cut_short`]) or left out because a pool had filled ([`run_bench`]), or `None`
/// when every measurement ran its full time.
#[must_use]
pub fn cut_short_note(plan: &BenchPlan, rows: &[BenchRow]) -> Option<String> {
    let cut = rows.iter().filter(|r| r.cut_short).count();
    let planned = plan.configs().len() * plan.threads.len() * plan.repeat as usize;
    bench::cut_short_note(cut, planned, planned.saturating_sub(rows.len()))
}

/// `x` with `decimals` decimals, or `-` where the configuration has no such figure (`NaN`).
fn or_dash(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        "-".to_owned()
    } else {
        format!("{x:.decimals$}")
    }
}

/// Prints the medians per configuration and thread count.
///
/// # Errors
/// Writing failed.
pub fn print_table(out: &mut dyn Write, plan: &BenchPlan, rows: &[BenchRow]) -> io::Result<()> {
    let median = |threads: usize, c: &Config, f: &dyn Fn(&BenchRow) -> f64| {
        median(rows.iter().filter(|r| r.threads == threads && r.config == *c).map(f).collect())
    };
    let configs = plan.configs();
    writeln!(
        out,
        "{:<9} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12} {:>13} {:>10} {:>13} {:>9} {:>8} {:>10} {:>9} {:>7}",
        "engine",
        "mode",
        "logging",
        "locking",
        "optimistic",
        "threads",
        "tx/s",
        "new-order/s",
        "rollback %",
        "retries/1000",
        "log B/tx",
        "locks/tx",
        "waits/1000",
        "CPU µs/tx",
        "line ns"
    )?;
    for &threads in &plan.threads {
        for c in &configs {
            writeln!(
                out,
                "{:<9} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12.0} {:>13.0} {:>10.2} {:>13.2} {:>9} {:>8} {:>10} {:>9} {:>7}",
                c.engine().name(),
                c.mode().map_or("-", PoolMode::name),
                on_off(c.logging()),
                c.locking().map_or("-", on_off),
                c.optimistic().map_or("-", on_off),
                threads,
                median(threads, c, &BenchRow::tx_per_sec),
                median(threads, c, &BenchRow::new_order_per_sec),
                median(threads, c, &|r| r.rollbacks as f64 * 100.0 / r.done[0].max(1) as f64),
                median(threads, c, &BenchRow::retries_per_1000),
                or_dash(median(threads, c, &BenchRow::log_bytes_per_tx), 0),
                or_dash(median(threads, c, &BenchRow::locks_per_tx), 1),
                or_dash(median(threads, c, &BenchRow::lock_waits_per_1000), 1),
                or_dash(median(threads, c, &BenchRow::cpu_us_per_tx), 1),
                // Of the probes that answered: one that gave up leaves no NaN in the median.
                or_dash(
                    crate::support::stats::median_by(
                        rows,
                        |r| r.threads == threads && r.config == *c,
                        |r| r.line_ns
                    )
                    .unwrap_or(f64::NAN),
                    0
                ),
            )?;
        }
    }
    writeln!(
        out,
        "TPC-C, {} warehouses, mix {}: medians of {} x {:.1} s; rollback % of New-Orders; log B/tx: log bytes \
         appended per transaction, frame headers and padding included; CPU µs/tx: CPU time of the whole process \
         (workers and background threads) per transaction; line ns: a cache line's round trip between two \
         threads just before each measurement (where two CPUs share caches it is short, and lines that threads \
         share cost little){}{}.",
        plan.workload.config.warehouses,
        KINDS.join("/"),
        plan.repeat,
        plan.duration.as_secs_f64(),
        if plan.runs(EngineName::SwizzleDb) {
            "; SwizzleDB's logging commits asynchronously, its optimistic descents apply to the swizzling and \
             main-memory modes (traditional mode always couples latches)"
        } else {
            ""
        },
        if plan.runs(EngineName::Lmdb) {
            "; LMDB: one write transaction per transaction (read snapshots for Order-Status and Stock-Level), \
             logging on is MDB_NOSYNC, off is MDB_NOSYNC|MDB_NOMETASYNC|MDB_WRITEMAP|MDB_MAPASYNC; LMDB has no \
             modes and serializes its writers (no locking setting, no optimistic descents)"
        } else {
            ""
        }
    )?;
    if let Some(note) = cut_short_note(plan, rows) {
        writeln!(out, "{note}")?;
    }
    if !(plan.runs(EngineName::SwizzleDb) && plan.runs(EngineName::Lmdb)) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "SwizzleDB beside LMDB at the same logging setting: ratio of median tx/s (from the same interleaved run)")?;
    writeln!(
        out,
        "{:<12} {:>7} {:>7} {:>10} {:>7} {:>12} {:>12} {:>9}",
        "mode", "logging", "locking", "optimistic", "threads", "swizzledb", "lmdb", "ratio"
    )?;
    for &threads in &plan.threads {
        for c in &configs {
            let Config::SwizzleDb(s) = c else { continue };
            let ours = median(threads, c, &BenchRow::tx_per_sec);
            let theirs = median(threads, &Config::Lmdb { logging: s.logging }, &BenchRow::tx_per_sec);
            writeln!(
                out,
                "{:<12} {:>7} {:>7} {:>10} {:>7} {:>12.0} {:>12.0} {:>9.2}",
                s.mode.name(),
                on_off(s.logging),
                on_off(s.locking),
                on_off(s.optimistic),
                threads,
                ours,
                theirs,
                ours / theirs
            )?;
        }
    }
    Ok(())
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
    pub pool_bytes: Option<u64>,
    pub load_seconds: f64,
    /// Log bytes the measurement appended (empty without a log).
    pub log_bytes: Option<u64>,
    pub engine: &'static str,
    pub optimistic: &'static str,
    /// How the database file is read: always `page-cache` (TPC-C never opens it with O_DIRECT).
    pub io: &'static str,
    /// Record-lock requests of the measurement (empty without record locks).
    pub lock_requests: Option<u64>,
    /// Lock requests that queued and waited (empty without record locks).
    pub lock_waits: Option<u64>,
    /// `yes` if the measurement stopped before its time (a main-memory pool about to fill).
    pub cut_short: &'static str,
    /// CPU time of the whole process during the measurement (empty where the system cannot
    /// tell).
    pub cpu_seconds: Option<f64>,
    /// `on` if New-Order read items, `W_TAX` and `C_DISCOUNT` as committed reads, `off` if it
    /// locked them.
    pub committed_reads: &'static str,
    /// `read-committed` or `snapshot`: how Stock-Level read.
    pub stock_level_reads: &'static str,
    /// A cache line's round trip between two threads just before the measurement, in
    /// nanoseconds (empty with one CPU).
    pub line_ns: Option<f64>,
}

impl TpccRow {
    /// The row of measurement `r`, for the result file of experiment `experiment`.
    #[must_use]
    pub fn new(experiment: &'static str, r: &BenchRow) -> TpccRow {
        TpccRow {
            experiment,
            mode: r.config.mode().map_or("-", PoolMode::name),
            logging: on_off(r.config.logging()),
            locking: r.config.locking().map_or("-", on_off),
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
            log_bytes: r.log_bytes,
            engine: r.config.engine().name(),
            optimistic: r.config.optimistic().map_or("-", on_off),
            io: "page-cache",
            lock_requests: r.locks.map(|l| l.0),
            lock_waits: r.locks.map(|l| l.1),
            cut_short: if r.cut_short { "yes" } else { "no" },
            cpu_seconds: Some(r.cpu_seconds).filter(|c| c.is_finite()),
            committed_reads: on_off(r.committed_reads),
            stock_level_reads: if r.stock_level_read_committed { "read-committed" } else { "snapshot" },
            line_ns: r.line_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_plan_without_optimistic_settings_is_refused() {
        let plan = BenchPlan {
            workload: TpccPlan {
                engines: vec![EngineName::SwizzleDb],
                config: TpccConfig::standard(1),
                transactions: None,
            },
            threads: vec![1],
            duration: Duration::from_secs(1),
            repeat: 1,
            modes: vec![PoolMode::Swizzling],
            logging: vec![false],
            locking: vec![false],
            optimistic: vec![],
            pool_bytes: None,
            policy: None,
            dir: std::env::temp_dir(),
        };
        let err = plan.validate().unwrap_err();
        assert!(matches!(err, WorkloadError::Config(ref m) if m.contains("--optimistic")), "{err}");
        assert!(BenchPlan { optimistic: vec![true, false], ..plan }.validate().is_ok());
    }
}
