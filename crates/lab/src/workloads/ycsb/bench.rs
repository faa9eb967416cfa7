//! `bench ycsb`: throughput of YCSB core workloads per engine, buffer mode, logging, locking
//! and optimistic-descent setting and thread count. One database per configuration (SwizzleDB:
//! mode × logging × locking × optimistic descents, traditional mode only with them off as it
//! always couples latches; LMDB: one per logging setting, as it has no modes, no locking
//! setting and no optimistic descents), loaded once and shared by the workloads in order (the
//! inserts of D and E stay for the workloads after them, as when YCSB runs A–F on one load);
//! the measurements are interleaved (repetition, then thread count, then workload, then
//! configuration, engines included, in the opposite order every other repetition); each database is verified after its last measurement.

use std::io::{self, Write};
use std::time::Instant;
use swizzledb::PoolMode;

use super::workload::{kind, Mix, Ycsb, YcsbConfig, KINDS};
use crate::engine::EngineName;
use crate::harness::Until;
pub use crate::workloads::bench::Config;
use crate::workloads::bench::{self, on_off, prefault_fits, Db, DbSpec, Scratch};
use crate::workloads::WorkloadError;

/// What to measure: the shared settings, and [`YcsbPlan`].
pub type BenchPlan = bench::BenchPlan<YcsbPlan>;

/// YCSB's own part of a [`BenchPlan`].
#[derive(Clone, Debug)]
pub struct YcsbPlan {
    /// Engines, in table order: SwizzleDB (in each of `modes` × `logging` × `locking` ×
    /// `optimistic`) and LMDB (once per `logging` setting).
    pub engines: Vec<EngineName>,
    /// The table (its `letter` is replaced by each of `workloads`).
    pub config: YcsbConfig,
    /// The workloads, run in this order within each repetition and thread count.
    pub workloads: Vec<char>,
}

/// Inserts per second and thread the default pool is sized for (5% of a million operations).
/// Main-memory mode needs all of it; the other modes touch only the frames they fill.
const SIZED_FOR_INSERTS_PER_THREAD_SECOND: u64 = 50_000;

impl bench::SizesPool for YcsbPlan {
    fn record_bytes(&self) -> u64 {
        self.config.record_bytes()
    }

    /// Twice what the inserting workloads (D, E) may add.
    fn growth_bytes(plan: &BenchPlan) -> u64 {
        let inserting =
            plan.workload.workloads.iter().filter(|&&l| Mix::of(l).is_ok_and(|m| m.inserts())).count();
        let per_insert = plan.workload.config.value_bytes() as u64 + 24;
        let growth = plan.thread_seconds()
            * inserting as f64
            * (SIZED_FOR_INSERTS_PER_THREAD_SECOND * 2 * per_insert) as f64;
        growth.ceil() as u64
    }
}

impl BenchPlan {
    /// Checks the plan before anything runs.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the bad parameter and what to do.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.validate_engines_and_shared()?;
        if self.workload.workloads.is_empty() {
            return Err(WorkloadError::Config("--workload needs at least one of A, B, C, D, E, F".into()));
        }
        for &l in &self.workload.workloads {
            YcsbConfig { letter: l, ..self.workload.config.clone() }.validate()?;
        }
        if !self.runs(EngineName::SwizzleDb) {
            return Ok(());
        }
        let what = format!(
            "{} records of {} bytes",
            self.workload.config.records,
            self.workload.config.value_bytes()
        );
        bench::validate_pool(self.pool(), self.workload.config.record_bytes(), &self.modes, &what, &self.dir)
    }
}

impl bench::OnEngines for YcsbPlan {
    fn engines(&self) -> &[EngineName] {
        &self.engines
    }
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    /// The workload letter.
    pub workload: char,
    /// The database configuration (engine, mode, logging, locking, optimistic descents).
    pub config: Config,
    /// Records loaded.
    pub records: u64,
    /// Records after the measurement (loaded plus inserted so far).
    pub records_after: u64,
    /// Threads.
    pub threads: usize,
    /// Repetition (0-based).
    pub rep: u32,
    /// Seconds measured.
    pub seconds: f64,
    /// Operations finished per kind, in [`KINDS`] order.
    pub done: [u64; 5],
    /// Retries after a failed lock request (a deadlock's victim, or wait-die's).
    pub retries: u64,
    /// Bytes per value.
    pub value_bytes: usize,
    /// The zipfian constant.
    pub theta: f64,
    /// SwizzleDB's pool bytes (none for LMDB).
    pub pool_bytes: Option<u64>,
    /// Seconds the database took to load.
    pub load_seconds: f64,
    /// The measurement stopped before its time: a main-memory pool was about to fill
    /// ([`crate::workloads::bench::main_memory_room`]); `seconds` is the time it ran.
    pub cut_short: bool,
}

impl BenchRow {
    /// Operations finished.
    #[must_use]
    pub fn operations(&self) -> u64 {
        self.done.iter().sum()
    }

    /// Operations per second.
    #[must_use]
    pub fn ops_per_sec(&self) -> f64 {
        self.operations() as f64 / self.seconds
    }

    /// Retries per 1000 operations.
    #[must_use]
    pub fn retries_per_1000(&self) -> f64 {
        self.retries as f64 * 1000.0 / self.operations().max(1) as f64
    }
}

/// The columns of `ycsb.csv` (docs/results-schema.md).
pub const CSV_COLUMNS: &str =
    "experiment,workload,mode,logging,locking,records,threads,rep,seconds,operations,\
ops_per_sec,read,update,insert,scan,read_modify_write,retries,retries_per_1000,records_after,value_bytes,\
zipf_theta,pool_bytes,load_seconds,engine,optimistic,cut_short";

/// Runs the plan, printing progress to `log`; returns one row per measurement.
///
/// # Errors
/// A bad plan ([`WorkloadError::Config`], before anything is created), a database failure, or
/// a database that fails its check after the run.
pub fn run_bench(plan: &BenchPlan, log: &mut dyn Write) -> Result<Vec<BenchRow>, WorkloadError> {
    plan.validate()?;
    let io_err = |e: io::Error| WorkloadError::Io { path: "standard output".into(), source: e };
    let scratch = Scratch::new(&plan.dir, "ycsb")?;
    // Per database: its configuration, the workloads over it (in plan order), its load time.
    let configs = plan.configs();
    let swizzledb_dbs = configs.iter().filter(|c| c.engine() == EngineName::SwizzleDb).count();
    let prefault = prefault_fits(swizzledb_dbs, plan.pool(), log)?;
    let spec = DbSpec {
        dir: &scratch.0,
        name: "ycsb",
        pool: plan.pool(),
        policy: plan.policy,
        prefault,
        lmdb_map_bytes: plan.lmdb_map_bytes(),
        lmdb_readers: plan.lmdb_readers(),
    };
    let mut dbs = Vec::new();
    for config in configs {
        let db = Db::create(config, &spec)?;
        let base =
            Ycsb::new(YcsbConfig { letter: plan.workload.workloads[0], ..plan.workload.config.clone() })?;
        let started = Instant::now();
        db.load(&base)?;
        let load = started.elapsed().as_secs_f64();
        writeln!(
            log,
            "loaded {} records: {} in {load:.1} s",
            plan.workload.config.records,
            config.describe()
        )
        .map_err(io_err)?;
        let workloads: Vec<Ycsb> =
            plan.workload.workloads.iter().map(|&l| base.with_letter(l)).collect::<Result<_, _>>()?;
        dbs.push((config, db, workloads, load));
    }
    let mut rows = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.threads {
            for (w, &letter) in plan.workload.workloads.iter().enumerate() {
                for i in crate::support::stats::in_turn(dbs.len(), rep) {
                    let (config, db, workloads, load) = &dbs[i];
                    let ycsb = &workloads[w];
                    let m = db.run(ycsb, threads, Until::Elapsed(plan.duration))?;
                    db.settle()?;
                    let row = BenchRow {
                        workload: letter,
                        config: *config,
                        records: plan.workload.config.records,
                        records_after: ycsb.records(),
                        threads,
                        rep,
                        seconds: m.elapsed.as_secs_f64(),
                        done: std::array::from_fn(|k| m.kinds[k].done),
                        retries: m.retries(),
                        value_bytes: plan.workload.config.value_bytes(),
                        theta: plan.workload.config.theta,
                        pool_bytes: config.mode().map(|_| plan.pool()),
                        load_seconds: *load,
                        cut_short: m.cut_short,
                    };
                    writeln!(
                        log,
                        "rep {rep} threads {threads} workload {letter} {}: {:.0} ops/s",
                        config.describe(),
                        row.ops_per_sec()
                    )
                    .map_err(io_err)?;
                    rows.push(row);
                }
            }
        }
    }
    for (config, db, workloads, _) in dbs {
        db.verify(&workloads[0]).map_err(|e| match e {
            WorkloadError::Inconsistent { condition, detail } => {
                WorkloadError::Inconsistent { condition, detail: format!("{}: {detail}", config.describe()) }
            }
            other => other,
        })?;
        db.close()?;
    }
    writeln!(log, "every record is present, in its place and intact in every database").map_err(io_err)?;
    Ok(rows)
}

/// Prints the medians per workload, configuration and thread count.
///
/// # Errors
/// Writing failed.
pub fn print_table(out: &mut dyn Write, plan: &BenchPlan, rows: &[BenchRow]) -> io::Result<()> {
    let median = |letter: char, threads: usize, c: &Config, f: &dyn Fn(&BenchRow) -> f64| {
        bench::median(
            rows.iter()
                .filter(|r| r.workload == letter && r.threads == threads && r.config == *c)
                .map(f)
                .collect(),
        )
    };
    let configs = plan.configs();
    writeln!(
        out,
        "{:<8} {:<9} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12} {:>13}",
        "workload", "engine", "mode", "logging", "locking", "optimistic", "threads", "ops/s", "retries/1000"
    )?;
    for &letter in &plan.workload.workloads {
        for &threads in &plan.threads {
            for c in &configs {
                writeln!(
                    out,
                    "{:<8} {:<9} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12.0} {:>13.2}",
                    letter,
                    c.engine().name(),
                    c.mode().map_or("-", PoolMode::name),
                    on_off(c.logging()),
                    c.locking().map_or("-", on_off),
                    c.optimistic().map_or("-", on_off),
                    threads,
                    median(letter, threads, c, &BenchRow::ops_per_sec),
                    median(letter, threads, c, &BenchRow::retries_per_1000),
                )?;
            }
        }
    }
    writeln!(
        out,
        "YCSB, {} records of {} bytes, zipfian constant {}: medians of {} x {:.1} s; kinds {}; logging commits \
         asynchronously; optimistic descents apply to the swizzling and main-memory modes (traditional mode \
         always couples latches){}.",
        plan.workload.config.records,
        plan.workload.config.value_bytes(),
        plan.workload.config.theta,
        plan.repeat,
        plan.duration.as_secs_f64(),
        KINDS.join("/"),
        if plan.runs(EngineName::Lmdb) {
            "; LMDB: logging on is MDB_NOSYNC, off is MDB_NOSYNC|MDB_NOMETASYNC|MDB_WRITEMAP|MDB_MAPASYNC; \
             LMDB has no modes and serializes its writers (no locking setting, no optimistic descents)"
        } else {
            ""
        }
    )?;
    let cut = rows.iter().filter(|r| r.cut_short).count();
    if let Some(note) = bench::cut_short_note(cut, rows.len(), 0) {
        writeln!(out, "{note}")?;
    }
    if !(plan.runs(EngineName::SwizzleDb) && plan.runs(EngineName::Lmdb)) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "SwizzleDB beside LMDB at the same logging setting: ratio of median ops/s (from the same interleaved run)")?;
    writeln!(
        out,
        "{:<8} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12} {:>12} {:>9}",
        "workload", "mode", "logging", "locking", "optimistic", "threads", "swizzledb", "lmdb", "ratio"
    )?;
    for &letter in &plan.workload.workloads {
        for &threads in &plan.threads {
            for c in &configs {
                let Config::SwizzleDb(s) = c else { continue };
                let ours = median(letter, threads, c, &BenchRow::ops_per_sec);
                let theirs =
                    median(letter, threads, &Config::Lmdb { logging: s.logging }, &BenchRow::ops_per_sec);
                writeln!(
                    out,
                    "{:<8} {:<12} {:>7} {:>7} {:>10} {:>7} {:>12.0} {:>12.0} {:>9.2}",
                    letter,
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
    }
    Ok(())
}

/// One row of `ycsb.csv` (columns [`CSV_COLUMNS`], described in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct YcsbRow {
    pub experiment: &'static str,
    pub workload: String,
    pub mode: &'static str,
    pub logging: &'static str,
    pub locking: &'static str,
    pub records: u64,
    pub threads: usize,
    pub rep: u32,
    pub seconds: f64,
    pub operations: u64,
    pub ops_per_sec: f64,
    pub read: u64,
    pub update: u64,
    pub insert: u64,
    pub scan: u64,
    pub read_modify_write: u64,
    pub retries: u64,
    pub retries_per_1000: f64,
    pub records_after: u64,
    pub value_bytes: usize,
    pub zipf_theta: f64,
    pub pool_bytes: Option<u64>,
    pub load_seconds: f64,
    pub engine: &'static str,
    pub optimistic: &'static str,
    /// `yes` if the measurement stopped before its time (a main-memory pool about to fill).
    pub cut_short: &'static str,
}

impl YcsbRow {
    /// The row of measurement `r`.
    #[must_use]
    pub fn new(r: &BenchRow) -> YcsbRow {
        YcsbRow {
            experiment: "ycsb",
            workload: r.workload.to_string(),
            mode: r.config.mode().map_or("-", PoolMode::name),
            logging: on_off(r.config.logging()),
            locking: r.config.locking().map_or("-", on_off),
            records: r.records,
            threads: r.threads,
            rep: r.rep,
            seconds: r.seconds,
            operations: r.operations(),
            ops_per_sec: r.ops_per_sec(),
            read: r.done[kind::READ],
            update: r.done[kind::UPDATE],
            insert: r.done[kind::INSERT],
            scan: r.done[kind::SCAN],
            read_modify_write: r.done[kind::READ_MODIFY_WRITE],
            retries: r.retries,
            retries_per_1000: r.retries_per_1000(),
            records_after: r.records_after,
            value_bytes: r.value_bytes,
            zipf_theta: r.theta,
            pool_bytes: r.pool_bytes,
            load_seconds: r.load_seconds,
            engine: r.config.engine().name(),
            optimistic: r.config.optimistic().map_or("-", on_off),
            cut_short: if r.cut_short { "yes" } else { "no" },
        }
    }
}
