//! `bench tpcb`: TPC-B throughput per buffer mode, logging, locking, optimistic-descent and
//! log-archive setting and thread count. One database per configuration (mode × logging ×
//! locking × optimistic descents × log archive, traditional mode only with optimistic descents
//! off as it always couples latches, logging off only without a log archive as the archive is
//! made from the log), loaded once; the measurements are interleaved (repetition, then thread
//! count, then configuration, in the opposite order every other repetition) so that machine
//! noise hits every configuration alike; each
//! database is verified after its last measurement.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use swizzledb::{CheckpointKind, Cleaner, PoolMode};

use super::config::TpcbConfig;
use super::workload::{Tpcb, HISTORY_BYTES};
use crate::harness::{self, Until};
use crate::workloads::bench::{self, on_off, Scratch, Setting};
use crate::workloads::{Workload, WorkloadError};

/// How changes reach the data file and the log is bounded (Lersch 2015): which page cleaner
/// and which checkpoints a logged database runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// The classical cleaner (RECOVERY.md R15) and classical fuzzy checkpoints (R7).
    Classical,
    /// The classical cleaner and decoupled, log-based checkpoints (R19): Lersch's checkpoint
    /// experiments (Figs. 5.1-5.4).
    DecoupledCheckpoint,
    /// The decoupled cleaner, replaying the log archive onto the file, and decoupled
    /// checkpoints (R19, R20): Lersch's cleaner experiments (Figs. 5.5-5.8). Needs the archive.
    Decoupled,
}

impl Propagation {
    /// The name in options, tables and the CSV.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Propagation::Classical => "classical",
            Propagation::DecoupledCheckpoint => "decoupled-checkpoint",
            Propagation::Decoupled => "decoupled",
        }
    }

    /// Parses [`Propagation::name`].
    ///
    /// # Errors
    /// An unknown name, with the known ones.
    pub fn parse(s: &str) -> Result<Propagation, String> {
        [Propagation::Classical, Propagation::DecoupledCheckpoint, Propagation::Decoupled]
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown propagation {s:?}: classical, decoupled-checkpoint or decoupled"))
    }

    fn tune(self, b: swizzledb::Builder, cleaner_interval: Option<Duration>) -> swizzledb::Builder {
        let b = b.lab(|l| l.cleaner_interval(cleaner_interval));
        match self {
            Propagation::Classical => b,
            Propagation::DecoupledCheckpoint => b.lab(|l| l.checkpoint_kind(CheckpointKind::Decoupled)),
            Propagation::Decoupled => b
                .log_archive(true)
                .lab(|l| l.cleaner(Cleaner::Decoupled))
                .lab(|l| l.checkpoint_kind(CheckpointKind::Decoupled)),
        }
    }
}

/// What to measure: the shared settings (SwizzleDB only: TPC-B runs on no other engine), and
/// [`TpcbPlan`].
pub type BenchPlan = bench::BenchPlan<TpcbPlan>;

/// TPC-B's own part of a [`BenchPlan`].
#[derive(Clone, Debug)]
pub struct TpcbPlan {
    /// The scale.
    pub config: TpcbConfig,
    /// Log-archive settings (`swizzledb::Builder::log_archive`: every checkpoint sorts the
    /// durable log's page changes into a run); they apply with logging on, logging off runs
    /// once without an archive ([`Setting`]).
    pub log_archive: Vec<bool>,
    /// Interval of the background fuzzy checkpoints (`None`: the engine's, 30 s); each also
    /// archives the log when the archive is on.
    pub checkpoint_interval: Option<Duration>,
    /// Propagation settings; they apply with logging on (logging off runs once, as classical),
    /// and [`Propagation::Decoupled`] only with the log archive on.
    pub propagation: Vec<Propagation>,
    /// The page cleaner also runs a full round this often (`LabOptions::cleaner_interval`; `None`:
    /// only when the log nears its bound).
    pub cleaner_interval: Option<Duration>,
    /// Where the databases' logs live (`None`: beside their files, `<file>.wal`): a directory
    /// on another device, or on a memory file system (Lersch's "log in memory"). Each
    /// database's `<file>.wal` is then a symbolic link into a temporary directory there.
    pub log_dir: Option<PathBuf>,
}

/// Transactions per second and thread the default pool is sized for (one thread ran 470,000
/// with logging and locking off): each adds a history record (58 bytes with its key) at the
/// right end of the history tree, whose pages split half full. Main-memory mode needs all of
/// it; the other modes touch only the frames they fill.
const SIZED_FOR_TX_PER_THREAD_SECOND: u64 = 600_000;

impl bench::SizesPool for TpcbPlan {
    fn record_bytes(&self) -> u64 {
        self.config.record_bytes()
    }

    /// The history rows every measurement adds.
    fn growth_bytes(plan: &BenchPlan) -> u64 {
        (plan.thread_seconds() * (SIZED_FOR_TX_PER_THREAD_SECOND * 2 * HISTORY_BYTES) as f64).ceil() as u64
    }
}

impl BenchPlan {
    /// Every setting measured, in table order (modes outermost).
    #[must_use]
    pub fn settings(&self) -> Vec<Setting> {
        Setting::all(&self.modes, &self.logging, &self.locking, &self.optimistic, &self.workload.log_archive)
    }

    /// Every configuration measured: each setting with each propagation that applies to it
    /// (logging off: classical only; decoupled: with the archive only).
    #[must_use]
    pub fn configs(&self) -> Vec<(Setting, Propagation)> {
        let mut out = Vec::new();
        for s in self.settings() {
            if !s.logging {
                out.push((s, Propagation::Classical));
                continue;
            }
            for &p in &self.workload.propagation {
                if p != Propagation::Decoupled || s.log_archive {
                    out.push((s, p));
                }
            }
        }
        out
    }

    /// Checks the plan before anything runs.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter and what to do.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.workload.config.validate()?;
        self.validate_shared()?;
        if self.workload.log_archive.is_empty() {
            return Err(WorkloadError::Config("--log-archive needs at least one value: on, off".into()));
        }
        if self.workload.propagation.is_empty() {
            return Err(WorkloadError::Config(
                "--propagation needs at least one value: classical, decoupled-checkpoint, decoupled".into(),
            ));
        }
        if self.workload.propagation.contains(&Propagation::Decoupled)
            && !self.settings().iter().any(|s| s.logging && s.log_archive)
        {
            return Err(WorkloadError::Config(
                "--propagation decoupled needs --logging on and --log-archive on: the decoupled cleaner replays the \
                 log archive"
                    .into(),
            ));
        }
        if let Some(dir) = self.workload.log_dir.as_deref().filter(|d| !d.is_dir()) {
            return Err(WorkloadError::UnusablePath(format!(
                "--log-dir {} is not a directory: create it, or name an existing directory",
                dir.display()
            )));
        }
        let what = format!("{} branches", self.workload.config.branches);
        bench::validate_pool(self.pool(), self.workload.config.record_bytes(), &self.modes, &what, &self.dir)
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
    /// Cleaner and checkpoints.
    pub propagation: Propagation,
    /// Cleaner interval in milliseconds (`None`: only near the log's bound).
    pub cleaner_ms: Option<u64>,
    /// CPU seconds the process used during the measurement (every thread: workers, cleaner,
    /// checkpointer, log flusher).
    pub cpu_seconds: f64,
    /// Pages written to the data file during the measurement (pool write-backs, the
    /// decoupled cleaner's writes, repairs).
    pub pages_written: u64,
    /// Log archive on.
    pub log_archive: bool,
    /// Where the log lived (`None`: beside the database file).
    pub log_dir: Option<PathBuf>,
    /// The measurement stopped before its time: a main-memory pool was about to fill
    /// ([`crate::workloads::bench::main_memory_room`]); `seconds` is the time it ran.
    pub cut_short: bool,
    /// Page-cleaner rounds during the measurement.
    pub cleaner_rounds: u64,
    /// Transactions that waited at `begin` for the log to get below its bound (R15).
    pub throttled: u64,
    /// Cleaner rounds that left the log over the trigger: truncation held back by a running
    /// transaction or the archive's end (R15, R17).
    pub held_back: u64,
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
    /// Retries after a failed lock request (a deadlock's victim, or wait-die's).
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

    /// Cores busy on average: CPU seconds per second measured.
    #[must_use]
    pub fn cpu_cores(&self) -> f64 {
        self.cpu_seconds / self.seconds
    }
}

/// The columns of `tpcb.csv` (docs/results-schema.md).
pub const CSV_COLUMNS: &str =
    "experiment,mode,logging,locking,branches,accounts_per_branch,threads,rep,seconds,\
transactions,tx_per_sec,retries,retries_per_1000,pool_bytes,load_seconds,optimistic,log_archive,checkpoint_ms,\
propagation,cleaner_ms,cpu_seconds,cpu_cores,pages_written,pages_written_per_sec,cleaner_rounds,throttled,held_back,\
log_dir,io,cut_short";

/// Runs the plan, printing progress to `log`; returns one row per measurement.
///
/// # Errors
/// A bad plan ([`WorkloadError::Config`], before anything is created), a database failure, or
/// a database that fails its consistency check after the run.
pub fn run_bench(plan: &BenchPlan, log: &mut dyn Write) -> Result<Vec<BenchRow>, WorkloadError> {
    plan.validate()?;
    let io_err = |e: io::Error| WorkloadError::Io { path: "standard output".into(), source: e };
    let scratch = Scratch::new(&plan.dir, "tpcb")?;
    let tpcb = Tpcb::new(plan.workload.config.clone())?;
    let pool = plan.pool();
    let mut dbs = Vec::new();
    let logs = match &plan.workload.log_dir {
        Some(dir) => Some(
            tempfile::Builder::new()
                .prefix("swizzledb-tpcb-logs")
                .tempdir_in(dir)
                .map_err(|e| WorkloadError::Io { path: dir.display().to_string(), source: e })?,
        ),
        None => None,
    };
    let configs = plan.configs();
    let prefault = bench::prefault_fits(configs.len(), pool, log)?;
    for (setting, prop) in configs {
        let name = format!("tpcb-{}", prop.name());
        if let Some(logs) = &logs {
            let path = setting.path(&scratch.0, &name);
            let target =
                logs.path().join(format!("{}.wal", path.file_name().unwrap_or_default().to_string_lossy()));
            let link = swizzledb::wal_dir(&path);
            let linked =
                std::fs::create_dir(&target).and_then(|()| std::os::unix::fs::symlink(&target, &link));
            linked.map_err(|e| WorkloadError::Io { path: link.display().to_string(), source: e })?;
        }
        let db = setting.create_tuned(
            &scratch.0,
            &name,
            pool,
            plan.policy,
            prefault,
            plan.workload.checkpoint_interval,
            |b| {
                if setting.logging {
                    prop.tune(b, plan.workload.cleaner_interval)
                } else {
                    b
                }
            },
        )?;
        let started = Instant::now();
        tpcb.load(&db)?;
        let load = started.elapsed().as_secs_f64();
        writeln!(
            log,
            "loaded {} branches: {}, {} propagation in {load:.1} s",
            plan.workload.config.branches,
            setting.describe(),
            prop.name()
        )
        .map_err(io_err)?;
        dbs.push((setting, prop, db, load));
    }
    let mut rows = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.threads {
            for i in crate::support::stats::in_turn(dbs.len(), rep) {
                let (s, prop, db, load) = &dbs[i];
                let (cpu0, written0) = (crate::support::cpu::process_cpu_secs(), db.stats().pages_written);
                let cleaner0 = db.cleaner_stats().unwrap_or_default();
                let m = harness::run_while(
                    &tpcb,
                    db,
                    threads,
                    Until::Elapsed(plan.duration),
                    &mut crate::workloads::bench::main_memory_room(db),
                )?;
                let cpu = crate::support::cpu::secs_since(cpu0);
                let cleaner = db.cleaner_stats().unwrap_or_default();
                let row = BenchRow {
                    log_dir: plan.workload.log_dir.clone(),
                    cut_short: m.cut_short,
                    cleaner_rounds: cleaner.rounds - cleaner0.rounds,
                    throttled: cleaner.throttled - cleaner0.throttled,
                    held_back: cleaner.held_back - cleaner0.held_back,
                    propagation: *prop,
                    cleaner_ms: plan.workload.cleaner_interval.map(|d| d.as_millis() as u64),
                    cpu_seconds: cpu,
                    pages_written: db.stats().pages_written - written0,
                    mode: s.mode,
                    logging: s.logging,
                    locking: s.locking,
                    optimistic: s.optimistic,
                    log_archive: s.log_archive,
                    checkpoint_ms: plan.workload.checkpoint_interval.map(|d| d.as_millis() as u64),
                    branches: plan.workload.config.branches,
                    accounts: plan.workload.config.accounts,
                    threads,
                    rep,
                    seconds: m.elapsed.as_secs_f64(),
                    transactions: m.operations(),
                    retries: m.retries(),
                    pool_bytes: pool,
                    load_seconds: *load,
                };
                writeln!(
                    log,
                    "rep {rep} threads {threads} {}, {}: {:.0} tx/s",
                    s.describe(),
                    prop.name(),
                    row.tx_per_sec()
                )
                .map_err(io_err)?;
                rows.push(row);
            }
        }
    }
    for (s, _, db, _) in dbs {
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
        "{:<12} {:>7} {:>7} {:>10} {:>11} {:>20} {:>7} {:>12} {:>13} {:>9} {:>12}",
        "mode",
        "logging",
        "locking",
        "optimistic",
        "log archive",
        "propagation",
        "threads",
        "tx/s",
        "retries/1000",
        "CPU cores",
        "pages/s"
    )?;
    for &threads in &plan.threads {
        for (s, p) in plan.configs() {
            let sel: Vec<&BenchRow> = rows
                .iter()
                .filter(|r| r.threads == threads && r.setting() == s && r.propagation == p)
                .collect();
            let m = |f: &dyn Fn(&BenchRow) -> f64| bench::median(sel.iter().map(|r| f(r)).collect());
            writeln!(
                out,
                "{:<12} {:>7} {:>7} {:>10} {:>11} {:>20} {:>7} {:>12.0} {:>13.2} {:>9.2} {:>12.0}",
                s.mode.name(),
                on_off(s.logging),
                on_off(s.locking),
                on_off(s.optimistic),
                on_off(s.log_archive),
                p.name(),
                threads,
                m(&BenchRow::tx_per_sec),
                m(&BenchRow::retries_per_1000),
                m(&BenchRow::cpu_cores),
                m(&|r: &BenchRow| r.pages_written as f64 / r.seconds),
            )?;
        }
    }
    writeln!(
        out,
        "TPC-B, {} branches of {} accounts: medians of {} x {:.1} s; logging commits asynchronously; optimistic \
         descents apply to the swizzling and main-memory modes (traditional mode always couples latches); the \
         log archive applies with logging on (it is made from the log); checkpoints every {}; the cleaner runs \
         {}; CPU cores: process CPU time per second (workers and background threads); pages/s: pages written \
         to the data file.",
        plan.workload.config.branches,
        plan.workload.config.accounts,
        plan.repeat,
        plan.duration.as_secs_f64(),
        plan.workload.checkpoint_interval.map_or_else(|| "30 s (the engine's default)".to_owned(), |d| format!("{} ms", d.as_millis())),
        plan.workload.cleaner_interval.map_or_else(
            || "when the log passes 3/4 of its bound".to_owned(),
            |d| format!("every {} ms", d.as_millis())
        )
    )?;
    let cut = rows.iter().filter(|r| r.cut_short).count();
    if let Some(note) = bench::cut_short_note(cut, rows.len(), 0) {
        writeln!(out, "{note}")?;
    }
    Ok(())
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
    pub propagation: &'static str,
    pub cleaner_ms: Option<u64>,
    pub cpu_seconds: f64,
    pub cpu_cores: f64,
    pub pages_written: u64,
    pub pages_written_per_sec: f64,
    pub cleaner_rounds: u64,
    pub throttled: u64,
    pub held_back: u64,
    pub log_dir: String,
    /// How the database file is read and written: always `page-cache` (TPC-B does not open
    /// it with O_DIRECT).
    pub io: &'static str,
    /// `yes` if the measurement stopped before its time (a main-memory pool about to fill).
    pub cut_short: &'static str,
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
            propagation: r.propagation.name(),
            cleaner_ms: r.cleaner_ms,
            cpu_seconds: r.cpu_seconds,
            cpu_cores: r.cpu_cores(),
            pages_written: r.pages_written,
            pages_written_per_sec: r.pages_written as f64 / r.seconds,
            cleaner_rounds: r.cleaner_rounds,
            throttled: r.throttled,
            held_back: r.held_back,
            log_dir: r.log_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default(),
            io: "page-cache",
            cut_short: if r.cut_short { "yes" } else { "no" },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(log_archive: Vec<bool>) -> BenchPlan {
        BenchPlan {
            workload: TpcbPlan {
                config: TpcbConfig::standard(1),
                log_archive,
                checkpoint_interval: None,
                propagation: vec![Propagation::Classical],
                cleaner_interval: None,
                log_dir: None,
            },
            threads: vec![1],
            duration: Duration::from_millis(100),
            repeat: 1,
            modes: vec![PoolMode::Swizzling],
            logging: vec![true, false],
            locking: vec![false],
            optimistic: vec![true],
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
