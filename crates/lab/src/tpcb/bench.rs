//! `bench tpcb`: TPC-B throughput per buffer mode, logging, locking, optimistic-descent and
//! log-archive setting and thread count. One database per configuration (mode × logging ×
//! locking × optimistic descents × log archive, traditional mode only with optimistic descents
//! off as it always couples latches, logging off only without a log archive as the archive is
//! made from the log), loaded once; the measurements are interleaved (repetition, then thread
//! count, then configuration) so that machine noise hits every configuration alike; each
//! database is verified after its last measurement.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use swizzledb::{PolicySpec, PoolMode};

use super::{Tpcb, TpcbConfig, HISTORY_BYTES};
use crate::bench::{self, on_off, Scratch, Setting};
use crate::harness::{self, Until};
use crate::workload::{Workload, WorkloadError};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    /// The scale.
    pub config: TpcbConfig,
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
    /// Optimistic-descent settings (`swizzledb::Builder::optimistic_reads`); they apply to the
    /// swizzling and main-memory modes, traditional mode runs once with them off
    /// ([`Setting`]).
    pub optimistic: Vec<bool>,
    /// Log-archive settings (`swizzledb::Builder::log_archive`: every checkpoint sorts the
    /// durable log's page changes into a run); they apply with logging on, logging off runs
    /// once without an archive ([`Setting`]).
    pub log_archive: Vec<bool>,
    /// Interval of the background fuzzy checkpoints (`None`: the engine's, 30 s); each also
    /// archives the log when the archive is on.
    pub checkpoint_interval: Option<Duration>,
    /// Pool bytes per database (`None`: [`BenchPlan::default_pool_bytes`]).
    pub pool_bytes: Option<u64>,
    /// Replacement policy (`None`: the engine's default).
    pub policy: Option<PolicySpec>,
    /// Directory for the temporary databases.
    pub dir: PathBuf,
}

/// Transactions per second and thread the default pool is sized for (one thread ran 470,000
/// with logging and locking off): each adds a history record (58 bytes with its key) at the
/// right end of the history tree, whose pages split half full. Main-memory mode needs all of
/// it; the other modes touch only the frames they fill.
const SIZED_FOR_TX_PER_THREAD_SECOND: u64 = 600_000;

impl BenchPlan {
    /// A pool holding the loaded data twice over (pages are not full), plus the history every
    /// measurement the database will see adds, plus 64 MiB.
    #[must_use]
    pub fn default_pool_bytes(&self) -> u64 {
        let thread_seconds = bench::thread_seconds(&self.threads, self.duration, self.repeat);
        let growth = thread_seconds * (SIZED_FOR_TX_PER_THREAD_SECOND * 2 * HISTORY_BYTES) as f64;
        2 * self.config.record_bytes() + growth.ceil() as u64 + (64 << 20)
    }

    /// The pool size used.
    #[must_use]
    pub fn pool(&self) -> u64 {
        self.pool_bytes.unwrap_or_else(|| self.default_pool_bytes())
    }

    /// Every setting measured, in table order (modes outermost).
    #[must_use]
    pub fn settings(&self) -> Vec<Setting> {
        Setting::all(&self.modes, &self.logging, &self.locking, &self.optimistic, &self.log_archive)
    }

    /// Checks the plan before anything runs.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter and what to do.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.config.validate()?;
        bench::validate_common(
            &self.threads,
            self.duration,
            self.repeat,
            &self.modes,
            &self.logging,
            &self.locking,
            &self.optimistic,
        )?;
        if self.log_archive.is_empty() {
            return Err(WorkloadError::Config("--log-archive needs at least one value: on, off".into()));
        }
        let what = format!("{} branches", self.config.branches);
        bench::validate_pool(self.pool(), self.config.record_bytes(), &self.modes, &what)
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
    /// Optimistic descents on.
    pub optimistic: bool,
    /// Checkpoint interval in milliseconds (`None`: the engine's default).
    pub checkpoint_ms: Option<u64>,
    /// Log archive on.
    pub log_archive: bool,
    /// Branches.
    pub branches: u32,
    /// Accounts per branch.
    pub accounts: u32,
    /// Threads.
    pub threads: usize,
    /// Repetition (0-based).
    pub rep: u32,
    /// Seconds measured.
    pub seconds: f64,
    /// Transactions committed.
    pub transactions: u64,
    /// Wait-die retries.
    pub retries: u64,
    /// Pool bytes.
    pub pool_bytes: u64,
    /// Seconds the database took to load.
    pub load_seconds: f64,
}

impl BenchRow {
    /// The setting measured.
    #[must_use]
    pub fn setting(&self) -> Setting {
        Setting {
            mode: self.mode,
            logging: self.logging,
            locking: self.locking,
            optimistic: self.optimistic,
            log_archive: self.log_archive,
        }
    }

    /// Transactions per second.
    #[must_use]
    pub fn tx_per_sec(&self) -> f64 {
        self.transactions as f64 / self.seconds
    }

    /// Retries per 1000 transactions.
    #[must_use]
    pub fn retries_per_1000(&self) -> f64 {
        self.retries as f64 * 1000.0 / self.transactions.max(1) as f64
    }
}

/// The columns of `tpcb.csv` (docs/results-schema.md).
pub const CSV_COLUMNS: &str =
    "experiment,mode,logging,locking,branches,accounts_per_branch,threads,rep,seconds,\
transactions,tx_per_sec,retries,retries_per_1000,pool_bytes,load_seconds,optimistic,log_archive,checkpoint_ms";

/// Runs the plan, printing progress to `log`; returns one row per measurement.
///
/// # Errors
/// A bad plan ([`WorkloadError::Config`], before anything is created), a database failure, or
/// a database that fails its consistency check after the run.
pub fn run_bench(plan: &BenchPlan, log: &mut dyn Write) -> Result<Vec<BenchRow>, WorkloadError> {
    plan.validate()?;
    let io_err = |e: io::Error| WorkloadError::Io { path: "standard output".into(), source: e };
    let scratch = Scratch::new(&plan.dir, "tpcb")?;
    let tpcb = Tpcb::new(plan.config.clone())?;
    let pool = plan.pool();
    let mut dbs = Vec::new();
    for setting in plan.settings() {
        let db = setting.create_with(&scratch.0, "tpcb", pool, plan.policy, plan.checkpoint_interval)?;
        let started = Instant::now();
        tpcb.load(&db)?;
        let load = started.elapsed().as_secs_f64();
        writeln!(log, "loaded {} branches: {} in {load:.1} s", plan.config.branches, setting.describe())
            .map_err(io_err)?;
        dbs.push((setting, db, load));
    }
    let mut rows = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.threads {
            for (s, db, load) in &dbs {
                let m = harness::run(&tpcb, db, threads, Until::Elapsed(plan.duration))?;
                let row = BenchRow {
                    mode: s.mode,
                    logging: s.logging,
                    locking: s.locking,
                    optimistic: s.optimistic,
                    log_archive: s.log_archive,
                    checkpoint_ms: plan.checkpoint_interval.map(|d| d.as_millis() as u64),
                    branches: plan.config.branches,
                    accounts: plan.config.accounts,
                    threads,
                    rep,
                    seconds: m.elapsed.as_secs_f64(),
                    transactions: m.operations(),
                    retries: m.retries(),
                    pool_bytes: pool,
                    load_seconds: *load,
                };
                writeln!(log, "rep {rep} threads {threads} {}: {:.0} tx/s", s.describe(), row.tx_per_sec())
                    .map_err(io_err)?;
                rows.push(row);
            }
        }
    }
    for (s, db, _) in dbs {
        tpcb.verify(&db).map_err(|e| match e {
            WorkloadError::Inconsistent { condition, detail } => {
                WorkloadError::Inconsistent { condition, detail: format!("{}: {detail}", s.describe()) }
            }
            other => other,
        })?;
        db.close()?;
    }
    writeln!(log, "balances agree with each other and with the history in every database").map_err(io_err)?;
    Ok(rows)
}

/// Prints the medians per configuration and thread count.
///
/// # Errors
/// Writing failed.
pub fn print_table(out: &mut dyn Write, plan: &BenchPlan, rows: &[BenchRow]) -> io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>7} {:>7} {:>10} {:>11} {:>7} {:>12} {:>13}",
        "mode", "logging", "locking", "optimistic", "log archive", "threads", "tx/s", "retries/1000"
    )?;
    for &threads in &plan.threads {
        for s in plan.settings() {
            let sel: Vec<&BenchRow> =
                rows.iter().filter(|r| r.threads == threads && r.setting() == s).collect();
            let m = |f: &dyn Fn(&BenchRow) -> f64| bench::median(sel.iter().map(|r| f(r)).collect());
            writeln!(
                out,
                "{:<12} {:>7} {:>7} {:>10} {:>11} {:>7} {:>12.0} {:>13.2}",
                s.mode.name(),
                on_off(s.logging),
                on_off(s.locking),
                on_off(s.optimistic),
                on_off(s.log_archive),
                threads,
                m(&BenchRow::tx_per_sec),
                m(&BenchRow::retries_per_1000),
            )?;
        }
    }
    writeln!(
        out,
        "TPC-B, {} branches of {} accounts: medians of {} x {:.1} s; logging commits asynchronously; optimistic \
         descents apply to the swizzling and main-memory modes (traditional mode always couples latches); the \
         log archive applies with logging on (it is made from the log); checkpoints every {}.",
        plan.config.branches,
        plan.config.accounts,
        plan.repeat,
        plan.duration.as_secs_f64(),
        plan.checkpoint_interval.map_or_else(|| "30 s (the engine's default)".to_owned(), |d| format!("{} ms", d.as_millis()))
    )
}

/// One row of `tpcb.csv` (columns [`CSV_COLUMNS`], described in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TpcbRow {
    pub experiment: &'static str,
    pub mode: &'static str,
    pub logging: &'static str,
    pub locking: &'static str,
    pub branches: u32,
    pub accounts_per_branch: u32,
    pub threads: usize,
    pub rep: u32,
    pub seconds: f64,
    pub transactions: u64,
    pub tx_per_sec: f64,
    pub retries: u64,
    pub retries_per_1000: f64,
    pub pool_bytes: u64,
    pub load_seconds: f64,
    pub optimistic: &'static str,
    pub log_archive: &'static str,
    pub checkpoint_ms: Option<u64>,
}

impl TpcbRow {
    /// The row of measurement `r`.
    #[must_use]
    pub fn new(r: &BenchRow) -> TpcbRow {
        TpcbRow {
            experiment: "tpcb",
            mode: r.mode.name(),
            logging: on_off(r.logging),
            locking: on_off(r.locking),
            branches: r.branches,
            accounts_per_branch: r.accounts,
            threads: r.threads,
            rep: r.rep,
            seconds: r.seconds,
            transactions: r.transactions,
            tx_per_sec: r.tx_per_sec(),
            retries: r.retries,
            retries_per_1000: r.retries_per_1000(),
            pool_bytes: r.pool_bytes,
            load_seconds: r.load_seconds,
            optimistic: on_off(r.optimistic),
            log_archive: on_off(r.log_archive),
            checkpoint_ms: r.checkpoint_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(log_archive: Vec<bool>) -> BenchPlan {
        BenchPlan {
            config: TpcbConfig::standard(1),
            threads: vec![1],
            duration: Duration::from_millis(100),
            repeat: 1,
            modes: vec![PoolMode::Swizzling],
            logging: vec![true, false],
            locking: vec![false],
            optimistic: vec![true],
            log_archive,
            checkpoint_interval: None,
            pool_bytes: None,
            policy: None,
            dir: std::env::temp_dir(),
        }
    }

    #[test]
    fn an_empty_log_archive_list_is_refused() {
        let err = plan(vec![]).validate().unwrap_err();
        assert!(matches!(err, WorkloadError::Config(ref m) if m.contains("--log-archive")), "{err}");
        plan(vec![true]).validate().unwrap();
    }

    #[test]
    fn logging_off_is_planned_once_without_an_archive() {
        let got: Vec<(bool, bool)> =
            plan(vec![true, false]).settings().iter().map(|s| (s.logging, s.log_archive)).collect();
        assert_eq!(got, [(true, true), (true, false), (false, false)]);
    }
}
