//! Part `restart`: restart time against the log since the last checkpoint, and against the
//! writer's run time with the page cleaner on and off (a child process is killed for each).

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use swizzledb::{Cleaner, Database, RestartStats};

use crate::experiments::bench::insert::mix;
use crate::harness::buffer::Progress;
use crate::support::child::Child;
use crate::support::stats;
use crate::support::text::{bytes, thousands, write_aligned};

use super::common::*;

/// What stops the restart part's writer.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Stop {
    /// The first commit at or past this many bytes of log after the checkpoint its open ended
    /// with (`--log-sizes`).
    LogBytes(u64),
    /// The first commit at or past this many seconds after its open (`--run-times`).
    Secs(f64),
}

/// The database settings of the restart part's writer (and of the restart after it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WriterSetup {
    pub(super) cleaner: Cleaner,
    /// The bound with the cleaner on (with `Cleaner::None` the bench sets [`NO_BOUND`]).
    pub(super) max_log: u64,
    pub(super) segment: u64,
}

impl WriterSetup {
    /// The `--log-sizes` series: no page cleaner, the engine's default segments.
    pub(super) fn unbounded() -> WriterSetup {
        WriterSetup { cleaner: Cleaner::None, max_log: NO_BOUND, segment: DEFAULT_SEGMENT }
    }

    /// The `--run-times` series with or without the cleaner.
    pub(super) fn timed(plan: &Plan, cleaner: Cleaner) -> WriterSetup {
        WriterSetup { cleaner, max_log: plan.max_log, segment: plan.log_segment }
    }

    /// The log bound the database runs with.
    pub(super) fn bound(self) -> u64 {
        if self.cleaner == Cleaner::None {
            NO_BOUND
        } else {
            self.max_log
        }
    }

    pub(super) fn builder(self, pool_bytes: usize) -> swizzledb::Builder {
        cleaner_builder(Setup::LogSync.builder(pool_bytes), self.cleaner, self.max_log, self.segment)
    }
}

/// One measurement of the restart part.
#[derive(Clone, Debug)]
pub struct RestartRun {
    /// What the writer was asked to do.
    pub(super) stop: Stop,
    pub(super) setup: WriterSetup,
    pub(super) repetition: usize,
    /// Log bytes the writer wrote after the checkpoint before it was killed.
    pub(super) log_bytes: u64,
    /// `Database::log_bytes()` in the writer when it stopped.
    pub(super) log_kept: u64,
    /// Bytes of the log's segment files after the kill.
    pub(super) wal_dir: u64,
    /// Seconds the writer wrote.
    pub(super) writer_secs: f64,
    /// What the writer's page cleaner did.
    pub(super) cleaning: Cleaning,
    /// Transactions the writer committed.
    pub(super) commits: u64,
    pub(super) secs: f64,
    pub(super) stats: RestartStats,
}

impl RestartRun {
    pub(super) fn log_mib(&self) -> f64 {
        self.log_bytes as f64 / f64::from(1u32 << 20)
    }

    pub(super) fn target_bytes(&self) -> Option<u64> {
        match self.stop {
            Stop::LogBytes(t) => Some(t),
            Stop::Secs(_) => None,
        }
    }

    pub(super) fn target_secs(&self) -> Option<f64> {
        match self.stop {
            Stop::Secs(s) => Some(s),
            Stop::LogBytes(_) => None,
        }
    }
}

/// The record the restart writer's `j`-th put of its `i`-th transaction updates (an index below
/// `records`, for [`key_of`]); that put writes version `i + 2` ([`value_of`]).
pub(crate) fn writer_record(i: u64, j: u64, records: u64) -> u64 {
    mix(i * WRITER_BATCH + j) % records
}

/// What the restart writer did before it stopped.
pub(crate) struct Written {
    /// Log bytes appended since the writer began (after its open's checkpoint).
    pub(crate) log_bytes: u64,
    /// Transactions committed: the first `commits` of the writer's sequence, all durable.
    pub(crate) commits: u64,
    /// Seconds the writer wrote.
    pub(crate) secs: f64,
}

/// The restart writer's loop: updates random records of the [`TREE`] of `db` (loaded with
/// `records` records of `seed`) in transactions of [`WRITER_BATCH`] puts ([`writer_record`])
/// until `stop`, committing each as `db` is set to.
///
/// # Errors
/// A database error, or `db` does not log.
pub(crate) fn write_until(
    db: &Database,
    records: u64,
    seed: u64,
    stop: Stop,
) -> Result<Written, Box<dyn Error>> {
    let tree = db.tree(TREE)?;
    let start = db.log_stats().ok_or("the restart database logs")?.log_bytes;
    let started = Instant::now();
    let mut written;
    let mut commits = 0u64;
    let mut i = 0u64;
    loop {
        with_retry(db, |txn| {
            for j in 0..WRITER_BATCH {
                let key = key_of(seed, writer_record(i, j, records));
                txn.put(&tree, &key, &value_of(&key, i + 2))?;
            }
            Ok(())
        })?;
        i += 1;
        commits += 1;
        written = db.log_stats().ok_or("the restart database logs")?.log_bytes - start;
        let done = match stop {
            Stop::LogBytes(target) => written >= target,
            Stop::Secs(secs) => started.elapsed().as_secs_f64() >= secs,
        };
        if done {
            break;
        }
    }
    Ok(Written { log_bytes: written, commits, secs: started.elapsed().as_secs_f64() })
}

/// The writer (a child process): opens the database, updates random loaded records in
/// transactions of [`WRITER_BATCH`] puts (synchronous commit) until `--log-sizes` bytes of log
/// follow the checkpoint the open ended with, or for `--child-secs`; prints `ready <log bytes>
/// <commits> <log kept> <seconds> <cleaner rounds> <pages written> <throttled>` and waits to be
/// killed.
pub(super) fn child(args: &WalBenchArgs, path: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let stop = match args.child_secs {
        Some(secs) => Stop::Secs(secs),
        None => Stop::LogBytes(*args.log_sizes.0.first().ok_or("the writer needs one --log-sizes value")?),
    };
    let cleaner = if args.child_cleaner { Cleaner::Classical } else { Cleaner::None };
    let setup = WriterSetup { cleaner, max_log: args.max_log, segment: args.log_segment };
    let records = args.records;
    let db = setup.builder(pool_bytes(records)?).open(path)?;
    let Written { log_bytes: written, commits, secs } = write_until(&db, records, args.seed, stop)?;
    let kept = db.log_bytes().unwrap_or(0);
    let c = Cleaning::of(&db).unwrap_or_default();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "ready {written} {commits} {kept} {secs} {} {} {}",
        c.rounds, c.pages_written, c.throttled
    )?;
    out.flush()?;
    drop(out);
    // Wait for SIGKILL; if the parent went away instead, leave without a checkpoint too.
    let mut line = String::new();
    let _ = io::stdin().read_line(&mut line);
    std::process::exit(0)
}

/// Loads a base database: `records` inserts, then a clean close (which checkpoints).
pub(super) fn load_base(
    plan: &Plan,
    path: &Path,
    setup: WriterSetup,
    progress: Progress,
) -> Result<(), Box<dyn Error>> {
    progress.say(format_args!(
        "restart: loading {} records ({} log segments) ...",
        thousands(plan.records),
        bytes(setup.segment)
    ));
    let db = setup.builder(plan.pool_bytes()?).create(path)?;
    load_records(&db, plan.records, plan.seed)?;
    db.close()?;
    Ok(())
}

/// Creates the [`TREE`] of `db` and inserts records `0..records` of `seed` ([`key_of`], version
/// 0 of [`value_of`]) in transactions of [`LOAD_BATCH`].
///
/// # Errors
/// A database error.
pub(crate) fn load_records(db: &Database, records: u64, seed: u64) -> swizzledb::Result<()> {
    let tree = db.create_tree(TREE)?;
    let mut from = 0;
    while from < records {
        let to = (from + LOAD_BATCH).min(records);
        with_retry(db, |txn| {
            for i in from..to {
                let key = key_of(seed, i);
                txn.insert(&tree, &key, &value_of(&key, 0))?;
            }
            Ok(())
        })?;
        from = to;
    }
    Ok(())
}

/// The writer's `ready` line.
pub(super) struct Ready {
    pub(super) log_bytes: u64,
    pub(super) commits: u64,
    pub(super) log_kept: u64,
    pub(super) secs: f64,
    pub(super) cleaning: Cleaning,
}

pub(super) fn parse_ready(line: &str) -> Option<Ready> {
    let mut words = line.split_whitespace();
    if words.next()? != "ready" {
        return None;
    }
    let mut n = || words.next()?.parse::<u64>().ok();
    let (log_bytes, commits, log_kept) = (n()?, n()?, n()?);
    let secs = words.next()?.parse::<f64>().ok()?;
    let mut n = || words.next()?.parse::<u64>().ok();
    let cleaning = Cleaning { rounds: n()?, pages_written: n()?, throttled: n()? };
    Some(Ready { log_bytes, commits, log_kept, secs, cleaning })
}

/// One crash and restart: copy the base, run the writer until `stop`, SIGKILL it, time the
/// open.
pub(super) fn measure_restart(
    plan: &Plan,
    base: &Path,
    run: &Path,
    stop: Stop,
    setup: WriterSetup,
    repetition: usize,
) -> Result<RestartRun, Box<dyn Error>> {
    copy_database(base, run)?;
    let mut args: Vec<String> = vec!["bench".into(), "wal".into()];
    let mut arg = |k: &str, v: String| args.extend([k.to_string(), v]);
    arg("--records", plan.records.to_string());
    arg("--seed", plan.seed.to_string());
    arg("--max-log", setup.max_log.to_string());
    arg("--log-segment", setup.segment.to_string());
    match stop {
        Stop::LogBytes(target) => arg("--log-sizes", target.to_string()),
        Stop::Secs(secs) => arg("--child-secs", secs.to_string()),
    }
    if setup.cleaner != Cleaner::None {
        args.push("--child-cleaner".into());
    }
    args.push("--child".into());
    let mut child = Child::spawn(
        args.iter().map(String::as_str).chain([run.as_os_str().to_str().ok_or("a non-UTF-8 path")?]),
    )?;
    let ready = child.next_line().as_deref().and_then(parse_ready);
    let ended = child.kill()?;
    let Some(ready) = ready else {
        return Err(format!("the writer stopped before it was done: {}", ended.stderr.trim()).into());
    };
    let wal_dir = wal_dir_bytes(run);
    let start = Instant::now();
    let db = setup.builder(plan.pool_bytes()?).open(run)?;
    let secs = start.elapsed().as_secs_f64();
    let stats = db.restart_stats();
    db.close()?;
    remove_database(run);
    Ok(RestartRun {
        stop,
        setup,
        repetition,
        log_bytes: ready.log_bytes,
        log_kept: ready.log_kept,
        wal_dir,
        writer_secs: ready.secs,
        cleaning: ready.cleaning,
        commits: ready.commits,
        secs,
        stats,
    })
}

/// The page cleaners of the `--run-times` series, interleaved in this order.
pub(super) const TIMED_CLEANERS: [Cleaner; 2] = [Cleaner::Classical, Cleaner::None];

pub(super) fn run_restart(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<RestartRun>, Box<dyn Error>> {
    // The base of the --log-sizes series has the default segments; that of --run-times
    // --log-segment (a log opens only with the segment size it was written with).
    let base = scratch.join("restart-base.swz");
    let timed_base = scratch.join("restart-base-timed.swz");
    if !plan.log_sizes.is_empty() {
        load_base(plan, &base, WriterSetup::unbounded(), progress)?;
    }
    if !plan.run_times.is_empty() {
        load_base(plan, &timed_base, WriterSetup::timed(plan, Cleaner::None), progress)?;
    }
    let run = scratch.join("restart.swz");
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        let mut measurements: Vec<(Stop, WriterSetup, &Path)> = plan
            .log_sizes
            .iter()
            .map(|&t| (Stop::LogBytes(t), WriterSetup::unbounded(), base.as_path()))
            .collect();
        for &secs in &plan.run_times {
            for cleaner in TIMED_CLEANERS {
                measurements.push((
                    Stop::Secs(secs),
                    WriterSetup::timed(plan, cleaner),
                    timed_base.as_path(),
                ));
            }
        }
        for (stop, setup, from) in measurements {
            let what = match stop {
                Stop::LogBytes(t) => format!("{} of log", bytes(t)),
                Stop::Secs(s) => format!("{s} s with cleaner {}", cleaner_name(setup.cleaner)),
            };
            let r = measure_restart(plan, from, &run, stop, setup, rep)
                .map_err(|e| format!("restart after {what}: {e}"))?;
            progress.say(format_args!(
                "restart rep {}/{}: {what}: {:.1} MiB written, {} kept: {:.3} s",
                rep + 1,
                plan.repeat,
                r.log_mib(),
                bytes(r.log_kept),
                r.secs
            ));
            runs.push(r);
        }
    }
    remove_database(&base);
    remove_database(&timed_base);
    Ok(runs)
}

pub(super) fn restart_median(
    runs: &[RestartRun],
    target: u64,
    f: impl Fn(&RestartRun) -> f64,
) -> Option<f64> {
    stats::median_by(runs, |r| r.target_bytes() == Some(target), |r| Some(f(r)))
}

/// The median of `f` over the `--run-times` runs of `secs` with `cleaner`.
pub(super) fn timed_median(
    runs: &[RestartRun],
    secs: f64,
    cleaner: Cleaner,
    f: impl Fn(&RestartRun) -> f64,
) -> Option<f64> {
    stats::median_by(runs, |r| r.target_secs() == Some(secs) && r.setup.cleaner == cleaner, |r| Some(f(r)))
}

pub(super) fn print_restart(out: &mut impl Write, plan: &Plan, runs: &[RestartRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n3. restart: {} records loaded and checkpointed; a child process updates them ({WRITER_BATCH} puts per \
         transaction, synchronous commit), is killed with SIGKILL, and Database::open restarts; median of {} \
         interleaved repetitions",
        thousands(plan.records),
        plan.repeat
    )?;
    if !plan.log_sizes.is_empty() {
        writeln!(
            out,
            "   page cleaner off, {} log segments: the writer stops once the log since the checkpoint reaches the size",
            bytes(DEFAULT_SEGMENT)
        )?;
        let mut table = vec![vec![
            "log target".to_string(),
            "log MiB".to_string(),
            "restart s".to_string(),
            "s per MiB".to_string(),
            "analyzed".to_string(),
            "redone".to_string(),
            "pages written".to_string(),
        ]];
        for &target in &plan.log_sizes {
            let m = |f: &dyn Fn(&RestartRun) -> f64| restart_median(runs, target, f);
            let (Some(mib), Some(secs)) = (m(&|r| r.log_mib()), m(&|r| r.secs)) else { continue };
            table.push(vec![
                bytes(target),
                format!("{mib:.1}"),
                format!("{secs:.3}"),
                format!("{:.4}", secs / mib),
                thousands(m(&|r| r.stats.analyzed as f64).unwrap_or(0.0).round() as u64),
                thousands(m(&|r| r.stats.redone as f64).unwrap_or(0.0).round() as u64),
                thousands(m(&|r| r.stats.pages_written as f64).unwrap_or(0.0).round() as u64),
            ]);
        }
        write_aligned(out, &table)?;
    }
    if !plan.run_times.is_empty() {
        writeln!(
            out,
            "   page cleaner on (log bound {}) and off (no bound), {} log segments: the writer runs for the time, then is \
             killed; log kept = its Database::log_bytes() then, on disk = the segment files after the kill",
            bytes(plan.max_log),
            bytes(plan.log_segment)
        )?;
        let mut table = vec![[
            "writer s",
            "cleaner",
            "written MiB",
            "kept MiB",
            "on disk MiB",
            "rounds",
            "throttled",
            "restart s",
            "analyzed",
            "redone",
            "pages written",
        ]
        .map(String::from)
        .to_vec()];
        for &secs in &plan.run_times {
            for cleaner in TIMED_CLEANERS {
                let m = |f: &dyn Fn(&RestartRun) -> f64| timed_median(runs, secs, cleaner, f);
                let Some(restart) = m(&|r| r.secs) else { continue };
                let count = |f: &dyn Fn(&RestartRun) -> f64| thousands(m(f).unwrap_or(0.0).round() as u64);
                let mib = |f: &dyn Fn(&RestartRun) -> f64| format!("{:.1}", m(f).unwrap_or(0.0) / MIB);
                table.push(vec![
                    format!("{secs}"),
                    cleaner_name(cleaner).to_string(),
                    mib(&|r| r.log_bytes as f64),
                    mib(&|r| r.log_kept as f64),
                    mib(&|r| r.wal_dir as f64),
                    count(&|r| r.cleaning.rounds as f64),
                    count(&|r| r.cleaning.throttled as f64),
                    format!("{restart:.3}"),
                    count(&|r| r.stats.analyzed as f64),
                    count(&|r| r.stats.redone as f64),
                    count(&|r| r.stats.pages_written as f64),
                ]);
            }
        }
        write_aligned(out, &table)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 4: log size

/// The `--run-times` series: with the cleaner the log at the kill stays within its bound and
/// restart time does not grow with the run; without it, both grow.
pub(super) fn restart_bound_checks(
    out: &mut dyn Write,
    verdict: &mut Verdict<'_>,
    plan: &Plan,
    runs: &[RestartRun],
) -> io::Result<()> {
    let timed: Vec<&RestartRun> = runs.iter().filter(|r| r.target_secs().is_some()).collect();
    let bounded: Vec<&&RestartRun> = timed.iter().filter(|r| r.setup.cleaner != Cleaner::None).collect();
    if let Some(max) = bounded.iter().map(|r| r.log_kept).max() {
        let disk = bounded.iter().map(|r| r.wal_dir).max().unwrap_or(0);
        let slack = transaction_log(WRITER_BATCH);
        verdict(
            out,
            max <= plan.max_log + slack,
            format!(
                "restart, cleaner on: the log kept when the writer was killed stayed below its bound: at most {} of {} \
                 + {} for one writer transaction ({} of segment files on disk)",
                bytes(max),
                bytes(plan.max_log),
                bytes(slack),
                bytes(disk)
            ),
        )?;
    }
    let (Some(&short), Some(&long)) = (plan.run_times.first(), plan.run_times.last()) else { return Ok(()) };
    if short == long {
        return Ok(());
    }
    let growth = |cleaner| -> Option<(f64, f64)> {
        let a = timed_median(runs, short, cleaner, |r| r.secs)?;
        let b = timed_median(runs, long, cleaner, |r| r.secs)?;
        Some((a, b))
    };
    if let Some((a, b)) = growth(Cleaner::Classical) {
        let contrast = growth(Cleaner::None).map_or(String::new(), |(c, d)| {
            format!("; without the cleaner {c:.3} s -> {d:.3} s ({:.1}x)", d / c)
        });
        verdict(
            out,
            b <= 2.0 * a.max(0.05),
            format!(
                "restart, cleaner on: restart time does not grow with how long the writer ran: {a:.3} s after {short} s, \
                 {b:.3} s after {long} s ({:.1}x for {:.0}x the run; target: at most 2x){contrast}",
                b / a,
                long / short
            ),
        )?;
    }
    Ok(())
}
