//! What the TPC-B, TPC-C and YCSB bench drivers share: their plan ([`BenchPlan`], around each
//! workload's own part), the database settings measured (buffer mode × logging × locking ×
//! optimistic descents × log archive, and the peer engines beside SwizzleDB), a database of
//! either engine, scratch directories, checks of the common plan fields, medians.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use swizzledb::{CommitMode, Database, PolicySpec, PoolMode};

use crate::engine::EngineName;
use crate::harness::{self, Measurement, Until};
use crate::workloads::{Workload, WorkloadError};

/// What a bench run of TPC-C, TPC-B or YCSB measures: the settings all three share, and the
/// workload's own part `W` (its scale, and the settings only it has: `tpcc::TpccPlan`,
/// `tpcb::TpcbPlan`, `ycsb::YcsbPlan`). Each workload's `bench.rs` sizes the pool for it and
/// checks it.
#[derive(Clone, Debug)]
pub struct BenchPlan<W> {
    /// The workload's own part.
    pub workload: W,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Length of one measurement.
    pub duration: Duration,
    /// Measurements per configuration and thread count (YCSB: and workload).
    pub repeat: u32,
    /// SwizzleDB's buffer modes.
    pub modes: Vec<PoolMode>,
    /// Logging settings (with logging, SwizzleDB commits asynchronously: commits return before
    /// the log is flushed, and LMDB does not fsync; without, LMDB drops durability entirely:
    /// `crate::engine::Lmdb`).
    pub logging: Vec<bool>,
    /// SwizzleDB's record-locking settings (LMDB has none: it serializes writers).
    pub locking: Vec<bool>,
    /// SwizzleDB's optimistic-descent settings (`swizzledb::lab::LabOptions::optimistic_reads`);
    /// they apply to the swizzling and main-memory modes, traditional mode runs once with them
    /// off ([`Setting`]).
    pub optimistic: Vec<bool>,
    /// SwizzleDB's pool bytes per database (`None`: the workload's `default_pool_bytes`).
    pub pool_bytes: Option<u64>,
    /// SwizzleDB's replacement policy (`None`: the engine's default).
    pub policy: Option<PolicySpec>,
    /// Directory for the temporary databases.
    pub dir: PathBuf,
}

/// One SwizzleDB configuration of a bench run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Buffer mode.
    pub mode: PoolMode,
    /// Write-ahead logging (commits asynchronous).
    pub logging: bool,
    /// Record locking.
    pub locking: bool,
    /// Optimistic descents: inner nodes read without latches, validated by version
    /// (`swizzledb::lab::LabOptions::optimistic_reads`). They apply in the swizzling and main-memory
    /// modes only; traditional mode always couples latches, so its settings have `false`.
    pub optimistic: bool,
    /// A log archive: every checkpoint sorts the durable log's page changes into a run
    /// (`swizzledb::Builder::log_archive`, RECOVERY.md R17). It needs the log, so settings
    /// with logging off have `false`.
    pub log_archive: bool,
}

impl Setting {
    /// Every combination, modes outermost, then logging, locking, optimistic descents, log
    /// archive. Traditional mode gets one setting per (logging, locking, log archive), with
    /// `optimistic: false` whatever `optimistic` lists: it always couples latches, so an `on`
    /// setting would measure the same engine twice under a wrong name. Likewise logging off
    /// gets one setting per (mode, locking, optimistic), with `log_archive: false` whatever
    /// `log_archive` lists: an archive is made from the log, and without one there is nothing
    /// to archive.
    pub(crate) fn all(
        modes: &[PoolMode],
        logging: &[bool],
        locking: &[bool],
        optimistic: &[bool],
        log_archive: &[bool],
    ) -> Vec<Setting> {
        let mut out = Vec::new();
        for &mode in modes {
            let optimistic: &[bool] = if mode == PoolMode::Traditional { &[false] } else { optimistic };
            for &logging in logging {
                let log_archive: &[bool] = if logging { log_archive } else { &[false] };
                for &locking in locking {
                    for &optimistic in optimistic {
                        for &log_archive in log_archive {
                            out.push(Setting { mode, logging, locking, optimistic, log_archive });
                        }
                    }
                }
            }
        }
        out
    }

    /// `swizzling, logging on, locking off, optimistic on, log archive off`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}, logging {}, locking {}, optimistic {}, log archive {}",
            self.mode,
            on_off(self.logging),
            on_off(self.locking),
            on_off(self.optimistic),
            on_off(self.log_archive)
        )
    }

    /// The file of the database `name` in `dir` with this setting.
    pub(crate) fn path(&self, dir: &Path, name: &str) -> std::path::PathBuf {
        dir.join(format!(
            "{name}-{}-log-{}-lock-{}-opt-{}-arc-{}.swz",
            self.mode,
            on_off(self.logging),
            on_off(self.locking),
            on_off(self.optimistic),
            on_off(self.log_archive)
        ))
    }

    /// Creates the database `name` in `dir` with this setting (logging commits asynchronously),
    /// its pool's memory faulted in at once if `prefault` ([`prefault_fits`]).
    pub(crate) fn create(
        &self,
        dir: &Path,
        name: &str,
        pool: u64,
        policy: Option<PolicySpec>,
        prefault: bool,
    ) -> Result<Database, WorkloadError> {
        self.create_tuned(dir, name, pool, policy, prefault, None, |b| b)
    }

    /// [`Setting::create`], with background checkpoints every `checkpoint_interval` instead of
    /// the engine's default, and `tune` applied to the builder last (settings a bench adds to
    /// the common ones).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create_tuned(
        &self,
        dir: &Path,
        name: &str,
        pool: u64,
        policy: Option<PolicySpec>,
        prefault: bool,
        checkpoint_interval: Option<Duration>,
        tune: impl FnOnce(swizzledb::Builder) -> swizzledb::Builder,
    ) -> Result<Database, WorkloadError> {
        let path = self.path(dir, name);
        // Prefaulted: a run that grows the data must not measure the first touch of the pool's
        // memory (on a virtual machine, fresh huge pages cost far more than their zeroing).
        let mut b = Database::builder()
            .mode(self.mode)
            .pool_bytes(usize::try_from(pool).unwrap_or(usize::MAX))
            .lab(|l| l.prefault(prefault))
            .logging(self.logging)
            .lab(|l| l.locking(self.locking).optimistic_reads(self.optimistic))
            .log_archive(self.log_archive);
        if self.logging {
            b = b.commit_mode(CommitMode::Async);
        }
        if let Some(p) = policy {
            b = b.policy(p);
        }
        if let Some(every) = checkpoint_interval {
            b = b.checkpoint_interval(Some(every));
        }
        Ok(tune(b).create(&path)?)
    }
}

/// Whether `databases` pools of `pool` bytes each may all be faulted in when the databases are
/// made (`LabOptions::prefault`): only while together they take at most three quarters of the
/// memory available now. Prefaulting spares the runs the first touch of the memory their data
/// grows into, but an interleaved run keeps every database open at once, and pools sized for
/// the fastest machine's growth can together exceed the memory (graefe-fig14 at `--full`: eight
/// pools of 2.1 GiB on a 24 GiB machine). Then no pool is prefaulted, and each takes only the
/// memory its data uses. `true` where the system does not say how much memory is available.
/// Says so on `log` when they may not.
///
/// # Errors
/// Writing to `log` failed.
pub(crate) fn prefault_fits(databases: usize, pool: u64, log: &mut dyn Write) -> Result<bool, WorkloadError> {
    let need = pool.saturating_mul(databases as u64);
    let have = crate::support::environment::available_memory();
    if have.is_none_or(|have| need <= have / 4 * 3) {
        return Ok(true);
    }
    writeln!(
        log,
        "pools not faulted in ahead: {databases} databases x {} exceed three quarters of the {} of memory \
         available; each takes what its data uses, and its first measurements pay the first touch",
        crate::support::text::bytes(pool),
        crate::support::text::bytes(have.unwrap_or(0))
    )
    .map_err(|e| WorkloadError::Io { path: "standard output".into(), source: e })?;
    Ok(false)
}

/// One database configuration of a bench run on several engines (`bench ycsb`, `bench tpcc`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Config {
    /// SwizzleDB in a buffer mode, with logging, locking and optimistic descents on or off.
    SwizzleDb(Setting),
    /// LMDB, with the durability that stands for `logging` (`crate::engine::Lmdb`).
    Lmdb {
        /// Logging on: `MDB_NOSYNC`; off: no durability at all.
        logging: bool,
    },
}

impl Config {
    /// Every configuration, in table order: per engine (in the order given), SwizzleDB's
    /// settings (modes outermost; traditional mode only with optimistic descents off, logging
    /// off only without a log archive: [`Setting`]), LMDB's logging settings (it has no modes,
    /// no locking setting, no optimistic descents and no log archive).
    #[must_use]
    pub fn all(
        engines: &[EngineName],
        modes: &[PoolMode],
        logging: &[bool],
        locking: &[bool],
        optimistic: &[bool],
        log_archive: &[bool],
    ) -> Vec<Config> {
        let mut out = Vec::new();
        for &e in engines {
            match e {
                EngineName::SwizzleDb => out.extend(
                    Setting::all(modes, logging, locking, optimistic, log_archive)
                        .into_iter()
                        .map(Config::SwizzleDb),
                ),
                EngineName::Lmdb => out.extend(logging.iter().map(|&logging| Config::Lmdb { logging })),
            }
        }
        out
    }

    /// The engine.
    #[must_use]
    pub fn engine(&self) -> EngineName {
        match self {
            Config::SwizzleDb(_) => EngineName::SwizzleDb,
            Config::Lmdb { .. } => EngineName::Lmdb,
        }
    }

    /// SwizzleDB's buffer mode (none for LMDB).
    #[must_use]
    pub fn mode(&self) -> Option<PoolMode> {
        match self {
            Config::SwizzleDb(s) => Some(s.mode),
            Config::Lmdb { .. } => None,
        }
    }

    /// The logging setting.
    #[must_use]
    pub fn logging(&self) -> bool {
        match *self {
            Config::SwizzleDb(s) => s.logging,
            Config::Lmdb { logging } => logging,
        }
    }

    /// SwizzleDB's locking setting (none for LMDB).
    #[must_use]
    pub fn locking(&self) -> Option<bool> {
        match self {
            Config::SwizzleDb(s) => Some(s.locking),
            Config::Lmdb { .. } => None,
        }
    }

    /// SwizzleDB's optimistic-descents setting (none for LMDB).
    #[must_use]
    pub fn optimistic(&self) -> Option<bool> {
        match self {
            Config::SwizzleDb(s) => Some(s.optimistic),
            Config::Lmdb { .. } => None,
        }
    }

    /// For messages: `swizzledb traditional, logging on, locking off, optimistic off, log
    /// archive off` or `lmdb, logging on`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Config::SwizzleDb(s) => format!("swizzledb {}", s.describe()),
            Config::Lmdb { logging } => format!("lmdb, logging {}", on_off(*logging)),
        }
    }
}

/// A workload that runs on every engine this build has.
#[cfg(feature = "lmdb")]
pub(crate) trait OnEveryEngine: Workload<Database> + Workload<crate::engine::Lmdb> {}
#[cfg(feature = "lmdb")]
impl<W: Workload<Database> + Workload<crate::engine::Lmdb>> OnEveryEngine for W {}
/// A workload that runs on every engine this build has.
#[cfg(not(feature = "lmdb"))]
pub(crate) trait OnEveryEngine: Workload<Database> {}
#[cfg(not(feature = "lmdb"))]
impl<W: Workload<Database>> OnEveryEngine for W {}

/// How the databases of a bench run are made: where, under which name, SwizzleDB's pool and
/// policy, LMDB's map and reader slots.
pub(crate) struct DbSpec<'a> {
    pub dir: &'a Path,
    pub name: &'a str,
    pub pool: u64,
    pub policy: Option<PolicySpec>,
    /// Fault each SwizzleDB pool in when its database is made ([`prefault_fits`]).
    pub prefault: bool,
    // Read only where this build has LMDB.
    #[cfg_attr(not(feature = "lmdb"), allow(dead_code))]
    pub lmdb_map_bytes: u64,
    #[cfg_attr(not(feature = "lmdb"), allow(dead_code))]
    pub lmdb_readers: u32,
}

/// The room check of a timed run ([`harness::run_while`]) on `db`: always true except in
/// main-memory mode. That mode never evicts, so a run that adds more data than its pool holds
/// fails (`MemoryLimit`), and how much a run adds depends on how fast the machine is. The check
/// says stop once the free frames fall to a reserve: 1/64 of the pool, and at least four times
/// what the last slice of the run took. A faster machine then ends its run sooner (the
/// measurement's rate stays right, and it says it was cut short) instead of failing.
pub(crate) fn main_memory_room(db: &Database) -> impl FnMut() -> bool + '_ {
    use swizzledb::lab::DatabaseExt;
    let pool = db.pool();
    let main_memory = pool.mode() == PoolMode::MainMemory;
    let mut last = pool.resident_pages();
    move || {
        if !main_memory {
            return true;
        }
        let (frames, used) = (pool.capacity(), pool.resident_pages());
        let took = used.saturating_sub(last);
        last = used;
        frames.saturating_sub(used) > (frames / 64).max(4 * took)
    }
}

/// The note a bench prints under its table when main-memory runs were stopped by
/// [`main_memory_room`]: `cut` of `planned` measurements stopped early, and `not_counted` of
/// them left out of the table. `None` when every run ran its full time.
pub(crate) fn cut_short_note(cut: usize, planned: usize, not_counted: usize) -> Option<String> {
    (cut + not_counted > 0).then(|| {
        let dropped = if not_counted > 0 {
            format!(
                " and {not_counted} were not counted (a run cut before a quarter of its time is not, and a database \
                 whose pool filled is measured no further)"
            )
        } else {
            String::new()
        };
        format!(
            "{cut} of {planned} measurements stopped early{dropped}: a main-memory pool was nearly full (that mode \
             never evicts, so a run stops before it outgrows its pool, and a faster machine adds more data in the \
             same time). Rates are over the time a run ran (cut_short in the CSV)."
        )
    })
}

/// A database of either engine.
pub(crate) enum Db {
    SwizzleDb(Database),
    #[cfg(feature = "lmdb")]
    Lmdb(crate::engine::Lmdb),
}

impl Db {
    /// Creates the database of `config` (SwizzleDB: a file in `spec.dir`; LMDB: a directory
    /// there, `<name>-lmdb-log-<on|off>`).
    pub(crate) fn create(config: Config, spec: &DbSpec<'_>) -> Result<Db, WorkloadError> {
        match config {
            Config::SwizzleDb(s) => {
                Ok(Db::SwizzleDb(s.create(spec.dir, spec.name, spec.pool, spec.policy, spec.prefault)?))
            }
            #[cfg(feature = "lmdb")]
            Config::Lmdb { logging } => Ok(Db::Lmdb(crate::engine::Lmdb::create(
                &spec.dir.join(format!("{}-lmdb-log-{}", spec.name, on_off(logging))),
                spec.lmdb_map_bytes,
                spec.lmdb_readers,
                logging,
            )?)),
            #[cfg(not(feature = "lmdb"))]
            Config::Lmdb { .. } => Err(WorkloadError::Config(
                "--engine lmdb: this build has no LMDB; build the swizzledb command with the lmdb feature"
                    .into(),
            )),
        }
    }

    pub(crate) fn load<W: OnEveryEngine>(&self, w: &W) -> Result<(), WorkloadError> {
        match self {
            Db::SwizzleDb(db) => w.load(db),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(db) => w.load(db),
        }
    }

    pub(crate) fn run<W: OnEveryEngine>(
        &self,
        w: &W,
        threads: usize,
        until: Until,
    ) -> Result<Measurement, WorkloadError> {
        match self {
            Db::SwizzleDb(db) => harness::run_while(w, db, threads, until, &mut main_memory_room(db)),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(db) => harness::run(w, db, threads, until),
        }
    }

    /// Finishes what a measurement left to the database's background threads, before the next
    /// database is measured: a logged SwizzleDB database writes its dirty pages and takes a
    /// checkpoint, so that its page cleaner and log flusher have nothing left to do in another
    /// configuration's window (they would take that window's cores). Not timed. An unlogged
    /// database and LMDB run no background writer: nothing to do.
    ///
    /// # Errors
    /// Log or I/O errors.
    pub(crate) fn settle(&self) -> Result<(), WorkloadError> {
        match self {
            Db::SwizzleDb(db) if db.log_stats().is_some() => {
                db.flush()?;
                Ok(db.checkpoint()?)
            }
            Db::SwizzleDb(_) => Ok(()),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(_) => Ok(()),
        }
    }

    /// Record-lock requests and waits so far (`None` without record locks, and for LMDB).
    pub(crate) fn lock_counts(&self) -> Option<(u64, u64)> {
        match self {
            Db::SwizzleDb(db) => db.lock_stats().map(|s| (s.requests, s.waits)),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(_) => None,
        }
    }

    /// Log bytes reserved since the database opened (frame headers and padding included);
    /// `None` for a database without a log and for LMDB.
    pub(crate) fn log_bytes_appended(&self) -> Option<u64> {
        match self {
            Db::SwizzleDb(db) => db.log_stats().map(|s| s.log_bytes),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(_) => None,
        }
    }

    pub(crate) fn verify<W: OnEveryEngine>(&self, w: &W) -> Result<(), WorkloadError> {
        match self {
            Db::SwizzleDb(db) => w.verify(db),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(db) => w.verify(db),
        }
    }

    pub(crate) fn close(self) -> Result<(), WorkloadError> {
        match self {
            Db::SwizzleDb(db) => Ok(db.close()?),
            #[cfg(feature = "lmdb")]
            Db::Lmdb(db) => {
                drop(db);
                Ok(())
            }
        }
    }
}

/// `on` or `off`.
pub(crate) fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// A scratch directory, removed with everything in it when dropped.
pub(crate) struct Scratch(pub PathBuf);

impl Scratch {
    /// `dir/swizzledb-<name>-<pid>`, created.
    pub(crate) fn new(dir: &Path, name: &str) -> Result<Scratch, WorkloadError> {
        let path = dir.join(format!("swizzledb-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|e| WorkloadError::Io { path: path.display().to_string(), source: e })?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The smallest pool a bench accepts: 256 pages of 8 KiB, far more than one operation fixes.
pub(crate) const MIN_POOL: u64 = 256 * 8192;

impl<W> BenchPlan<W> {
    /// Checks the plan fields every bench has.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter.
    pub(crate) fn validate_shared(&self) -> Result<(), WorkloadError> {
        let bad = |s: &str| Err(WorkloadError::Config(s.into()));
        if self.threads.is_empty() || self.threads.contains(&0) {
            return bad("--threads needs thread counts of at least 1");
        }
        if self.duration.is_zero() {
            return bad("--duration must be above 0");
        }
        if self.repeat == 0 {
            return bad("--repeat must be at least 1");
        }
        if self.modes.is_empty()
            || self.logging.is_empty()
            || self.locking.is_empty()
            || self.optimistic.is_empty()
        {
            return bad(EMPTY_SETTINGS);
        }
        Ok(())
    }

    /// Thread-seconds the plan measures per database (for sizing its pool).
    pub(crate) fn thread_seconds(&self) -> f64 {
        self.threads.iter().map(|&t| t as f64 * self.duration.as_secs_f64() * f64::from(self.repeat)).sum()
    }

    /// Reader slots per LMDB environment: every thread keeps one, plus a few.
    #[must_use]
    pub fn lmdb_readers(&self) -> u32 {
        let most = self.threads.iter().copied().max().unwrap_or(1);
        u32::try_from(most).unwrap_or(u32::MAX).saturating_add(8)
    }
}

/// What sizes a bench's default SwizzleDB pool: the loaded records and what the measurements
/// add to a database (main-memory mode needs all of it; the other modes touch only the frames
/// they fill).
pub trait SizesPool: Sized {
    /// Bytes of the loaded records.
    fn record_bytes(&self) -> u64;
    /// Bytes every measurement `plan` makes may add to one database, together.
    fn growth_bytes(plan: &BenchPlan<Self>) -> u64;
}

impl<W: SizesPool> BenchPlan<W> {
    /// A pool holding the loaded data twice over (pages are not full), plus the growth of every
    /// measurement the database will see, plus 64 MiB.
    #[must_use]
    pub fn default_pool_bytes(&self) -> u64 {
        2 * self.workload.record_bytes() + W::growth_bytes(self) + (64 << 20)
    }

    /// The pool size used.
    #[must_use]
    pub fn pool(&self) -> u64 {
        self.pool_bytes.unwrap_or_else(|| self.default_pool_bytes())
    }

    /// LMDB's map per environment: three times what the default pool is sized for (LMDB's
    /// pages are part full after splits, and copy-on-write needs free pages besides), plus
    /// 256 MiB. Address space only: the file takes the pages written.
    #[must_use]
    pub fn lmdb_map_bytes(&self) -> u64 {
        3 * (self.default_pool_bytes() - (64 << 20)) + (256 << 20)
    }
}

/// The engines a workload's bench runs on: TPC-C and YCSB run on SwizzleDB and its peers, TPC-B
/// on SwizzleDB alone (it has no such part).
pub trait OnEngines {
    /// Engines, in table order.
    fn engines(&self) -> &[EngineName];
}

impl<W: OnEngines> BenchPlan<W> {
    /// Every database configuration measured, in table order: SwizzleDB's settings (modes
    /// outermost; no log archive, which only `bench tpcb` measures), then the peers' logging
    /// settings.
    #[must_use]
    pub fn configs(&self) -> Vec<Config> {
        Config::all(
            self.workload.engines(),
            &self.modes,
            &self.logging,
            &self.locking,
            &self.optimistic,
            &[false],
        )
    }

    /// Whether `e` is among the engines measured.
    pub(crate) fn runs(&self, e: EngineName) -> bool {
        self.workload.engines().contains(&e)
    }

    /// Checks the engines named and the fields every bench has.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter.
    pub(crate) fn validate_engines_and_shared(&self) -> Result<(), WorkloadError> {
        if self.workload.engines().is_empty() {
            return Err(WorkloadError::Config("--engine needs at least one of swizzledb, lmdb".into()));
        }
        for &e in self.workload.engines() {
            EngineName::parse(e.name())?;
        }
        self.validate_shared()
    }
}

/// The message for a plan with an empty list of settings.
const EMPTY_SETTINGS: &str = "--modes, --logging, --locking and --optimistic each need at least one value";

/// Checks that `pool` bytes can run a workload that loads `data` bytes of records (`what`
/// says whose, for the message), and that the file system of `dir` has room for them where a
/// mode keeps them on disk.
pub(crate) fn validate_pool(
    pool: u64,
    data: u64,
    modes: &[PoolMode],
    what: &str,
    dir: &Path,
) -> Result<(), WorkloadError> {
    if modes.iter().any(|&m| m != PoolMode::MainMemory) {
        crate::support::disk::check_room(dir, data, &format!("loading the records of {what}"))
            .map_err(WorkloadError::Config)?;
    }
    if pool < MIN_POOL {
        return Err(WorkloadError::Config(format!(
            "--pool {pool} B is below the {MIN_POOL} B a benchmark needs; raise --pool"
        )));
    }
    if modes.contains(&PoolMode::MainMemory) && pool < data {
        return Err(WorkloadError::Config(format!(
            "--pool {} MiB cannot hold the {} MiB of records loaded ({what}), and main-memory mode \
             never evicts; raise --pool or drop main-memory from --modes",
            pool >> 20,
            data.div_ceil(1 << 20)
        )));
    }
    Ok(())
}

/// The median (NaN for none).
pub(crate) fn median(v: Vec<f64>) -> f64 {
    crate::support::stats::median(&v).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bench's table says when main-memory runs were cut short, and how many were left
    /// out; it says nothing when all ran their full time.
    #[test]
    fn cut_short_note_counts_cut_and_left_out_runs() {
        assert_eq!(cut_short_note(0, 12, 0), None);
        let cut = cut_short_note(2, 12, 0).unwrap();
        assert!(cut.starts_with("2 of 12 measurements stopped early:"), "{cut}");
        assert!(!cut.contains("not counted"), "{cut}");
        let dropped = cut_short_note(1, 12, 3).unwrap();
        assert!(
            dropped.starts_with("1 of 12 measurements stopped early and 3 were not counted"),
            "{dropped}"
        );
        assert!(cut_short_note(0, 12, 1).is_some(), "a run left out is worth a note too");
    }

    /// `Db::settle` leaves a logged database with no dirty page and a checkpoint more, so its
    /// cleaner has nothing left for another database's window; on an unlogged one (no cleaner)
    /// it takes no checkpoint.
    #[test]
    // Without the `lmdb` feature a `Db` is always SwizzleDB's.
    #[allow(irrefutable_let_patterns)]
    fn settling_a_logged_database_writes_its_pages_and_checkpoints() {
        use swizzledb::lab::DatabaseExt;
        let dir = tempfile::tempdir().unwrap();
        for logging in [true, false] {
            let setting = Setting {
                mode: PoolMode::Swizzling,
                logging,
                locking: false,
                optimistic: true,
                log_archive: false,
            };
            let spec = DbSpec {
                dir: dir.path(),
                name: "settle",
                pool: 64 << 20,
                policy: None,
                prefault: false,
                lmdb_map_bytes: 0,
                lmdb_readers: 0,
            };
            let db = Db::create(Config::SwizzleDb(setting), &spec).unwrap();
            let Db::SwizzleDb(inner) = &db else { unreachable!("a SwizzleDB setting") };
            let tree = inner.create_tree("t").unwrap();
            for i in 0u32..2_000 {
                tree.upsert(&i.to_be_bytes(), &[7; 100]).unwrap();
            }
            let before = inner.checkpoint_counts().checkpoints;
            // Dirty pages with a recovery LSN: only a logged database's changes carry one.
            assert_eq!(!inner.pool().dirty_pages().is_empty(), logging, "logging {logging}");
            db.settle().unwrap();
            assert!(inner.pool().dirty_pages().is_empty(), "logging {logging}: dirty pages left");
            let after = inner.checkpoint_counts().checkpoints;
            assert_eq!(after > before, logging, "logging {logging}: checkpoints {before} -> {after}");
            db.close().unwrap();
        }
    }

    #[test]
    fn traditional_mode_gets_one_setting_with_optimistic_descents_off() {
        use PoolMode::{MainMemory, Swizzling, Traditional};
        let all =
            Setting::all(&[Swizzling, Traditional, MainMemory], &[false], &[true], &[true, false], &[false]);
        let got: Vec<(PoolMode, bool)> = all.iter().map(|s| (s.mode, s.optimistic)).collect();
        assert_eq!(
            got,
            [
                (Swizzling, true),
                (Swizzling, false),
                (Traditional, false),
                (MainMemory, true),
                (MainMemory, false)
            ]
        );
        assert!(all.iter().all(|s| !s.logging && s.locking));
        // Traditional mode is measured even when only `on` is asked for: as what it is, `off`.
        let only_on = Setting::all(&[Traditional], &[true, false], &[false], &[true], &[false]);
        assert_eq!(only_on.len(), 2);
        assert!(only_on.iter().all(|s| !s.optimistic));
    }

    #[test]
    fn configs_carry_optimistic_descents_for_swizzledb_only() {
        let configs = Config::all(
            &[EngineName::SwizzleDb, EngineName::Lmdb],
            &[PoolMode::Swizzling],
            &[true],
            &[false],
            &[false, true],
            &[false],
        );
        let got: Vec<Option<bool>> = configs.iter().map(Config::optimistic).collect();
        assert_eq!(got, [Some(false), Some(true), None]);
        assert_eq!(
            configs[1].describe(),
            "swizzledb swizzling, logging on, locking off, optimistic on, log archive off"
        );
    }

    #[test]
    fn logging_off_gets_one_setting_without_a_log_archive() {
        use PoolMode::{Swizzling, Traditional};
        let all = Setting::all(&[Swizzling, Traditional], &[true, false], &[false], &[true], &[true, false]);
        let got: Vec<(PoolMode, bool, bool)> =
            all.iter().map(|s| (s.mode, s.logging, s.log_archive)).collect();
        assert_eq!(
            got,
            [
                (Swizzling, true, true),
                (Swizzling, true, false),
                (Swizzling, false, false),
                (Traditional, true, true),
                (Traditional, true, false),
                (Traditional, false, false)
            ]
        );
        // Logging off is measured even when only `on` is asked for: as what it is, `off`.
        let only_on = Setting::all(&[Swizzling], &[false], &[false], &[true], &[true]);
        assert_eq!(only_on.len(), 1);
        assert!(!only_on[0].log_archive);
        assert_eq!(all[0].describe(), "swizzling, logging on, locking off, optimistic on, log archive on");
    }

    #[test]
    fn an_empty_optimistic_list_is_refused() {
        let plan = BenchPlan {
            workload: (),
            threads: vec![1],
            duration: Duration::from_secs(1),
            repeat: 1,
            modes: vec![PoolMode::Swizzling],
            logging: vec![false],
            locking: vec![false],
            optimistic: vec![],
            pool_bytes: None,
            policy: None,
            dir: PathBuf::new(),
        };
        let err = plan.validate_shared().unwrap_err();
        assert!(matches!(err, WorkloadError::Config(ref m) if m.contains("--optimistic")), "{err}");
    }
}
