//! `swizzledb bench wal`: what write-ahead logging costs, in four parts (docs/logging.md).
//!
//! 1. **overhead** — random-order inserts (8-byte keys, 100-byte values) in transactions of B
//!    inserts at several thread counts, in the four configurations of Graefe et al. 2014 Fig. 14
//!    that matter here: logging and locking off, logging off with locking, logging on with
//!    asynchronous commit, logging on with synchronous commit (both with locking); beside them
//!    the engine's default write path, the trees' own `insert` (auto-commit: one transaction per
//!    insert, no explicit `Transaction`) with synchronous and with asynchronous commit. A fresh
//!    database per measurement; inserts/s, ratio to the fastest configuration, log bytes per
//!    insert.
//! 2. **group-commit** — T threads each commit one-put transactions synchronously for D seconds:
//!    commits/s and commits per fsync (the log's sync rounds, those of its background flusher
//!    included), for each way of waiting for a round (`--commit-wait`: adaptive, sleep), with
//!    the process's CPU per commit and the waits spent awake.
//! 3. **restart** — a loaded database is opened by a child process, which updates records and is
//!    then killed with SIGKILL; the restart (`Database::open`) is timed in this process, with its
//!    counters (records analyzed and redone, pages written). Two series: without the page cleaner,
//!    the writer stops once X bytes of log follow the last checkpoint (`--log-sizes`: restart time
//!    against the log); and, with the cleaner on at a log bound and off, the writer runs for T
//!    seconds (`--run-times`: restart time against how long the process ran).
//! 4. **log-size** — one thread updates a few keys (auto-commit, asynchronous commit) many times,
//!    with the page cleaner on at a log bound and, for contrast, off; `Database::log_bytes()` and
//!    the bytes of the log's segment files are sampled every N updates.
//!
//! The crash is a real process kill on the real file system (not the in-process `FaultFs`), so
//! nothing of the writer's memory survives and restart reads what the OS holds; the OS page
//! cache is warm, so the restart times are those of a process crash, not of a power failure.
//!
//! Every part interleaves its configurations within each repetition (A B C D A B C D ...), so
//! drift of the machine hits them alike; the overhead part turns the order round every other
//! repetition (A B C D D C B A ...), so that neither end of it is always first. Tables show
//! medians.
//!
//! Every database sets logging explicitly (the engine's default is on).

mod common;
mod group_commit;
mod log_size;
mod overhead;
mod restart;

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use swizzledb::{Cleaner, CommitMode, LogStats};

use crate::harness::buffer::Progress;
use crate::harness::experiment::{self, Experiment};
use crate::support::plot::{Chart, Marks, Point, Scale, Series};
use crate::support::stats::summarize;
use crate::support::text::{bytes, thousands};
use crate::Usage;

pub use common::*;
pub use group_commit::*;
pub use log_size::*;
pub use overhead::*;
pub use restart::*;

/// All measurements of a run.
#[derive(Default)]
struct Results {
    inserts: Vec<InsertRun>,
    commits: Vec<CommitRun>,
    restarts: Vec<RestartRun>,
    log_sizes: Vec<LogSizeRun>,
}

/// The expected properties, each `ok` or `MISSED`; returns how many were missed.
fn print_checks(out: &mut impl Write, plan: &Plan, results: &Results) -> io::Result<usize> {
    writeln!(out, "\nchecks:")?;
    let mut missed = 0;
    let mut verdict = |out: &mut dyn Write, ok: bool, text: String| -> io::Result<()> {
        missed += usize::from(!ok);
        writeln!(out, "  {} {text}", if ok { "ok    " } else { "MISSED" })
    };
    let runs = &results.inserts;
    if plan.has(Part::Overhead) {
        let rate = |s, t, b| insert_median(runs, s, t, b, |r| Some(r.inserts_per_sec()));
        for &b in &plan.batches {
            for &t in &plan.overhead_threads {
                if let (Some(sync), Some(async_), Some(off)) =
                    (rate(Setup::LogSync, t, b), rate(Setup::LogAsync, t, b), rate(Setup::NoLogLock, t, b))
                {
                    verdict(
                        out,
                        async_ >= sync,
                        format!(
                            "batch {b}, {t} thr: async commit ({}) at least as fast as sync ({}); logging with async \
                             commit keeps {:.0}% of nolog-lock's inserts/s",
                            thousands(async_.round() as u64),
                            thousands(sync.round() as u64),
                            async_ / off * 100.0
                        ),
                    )?;
                }
            }
        }
        for &t in &plan.overhead_threads {
            if let (Some(sync), Some(async_)) = (rate(Setup::AutoSync, t, 1), rate(Setup::AutoAsync, t, 1)) {
                verdict(
                    out,
                    async_ >= sync,
                    format!(
                        "auto-commit, {t} thr: async commit ({}) at least as fast as sync ({}) with one transaction \
                         per Tree::insert",
                        thousands(async_.round() as u64),
                        thousands(sync.round() as u64)
                    ),
                )?;
            }
        }
        if let (Some(&small), Some(&large)) = (plan.batches.first(), plan.batches.last()) {
            if small != large {
                for &t in &plan.overhead_threads {
                    if let (Some(a), Some(b)) =
                        (rate(Setup::LogSync, t, small), rate(Setup::LogSync, t, large))
                    {
                        verdict(
                            out,
                            b > a,
                            format!(
                                "{t} thr: sync commit gains from larger transactions: {:.2}x inserts/s at batch {large} \
                                 vs {small} (fewer commit fsyncs)",
                                b / a
                            ),
                        )?;
                    }
                }
            }
        }
        let min_bytes = runs
            .iter()
            .filter(|r| r.setup.logging())
            .filter_map(InsertRun::log_bytes_per_insert)
            .fold(f64::INFINITY, f64::min);
        if min_bytes.is_finite() {
            verdict(
                out,
                min_bytes >= VALUE_BYTES as f64,
                format!("every logged insert writes its value to the log: at least {min_bytes:.0} bytes per insert"),
            )?;
        }
    }
    if plan.has(Part::GroupCommit) {
        for &wait in &plan.commit_waits {
            group_commit_checks(out, &mut verdict, plan, &results.commits, wait)?;
        }
    }
    if plan.has(Part::Restart) {
        let points: Vec<(f64, f64)> = plan
            .log_sizes
            .iter()
            .filter_map(|&t| {
                Some((
                    restart_median(&results.restarts, t, RestartRun::log_mib)?,
                    restart_median(&results.restarts, t, |r| r.secs)?,
                ))
            })
            .collect();
        if points.len() >= 3 {
            if let Some((a, b, r2)) = fit_line(&points) {
                verdict(
                    out,
                    b > 0.0 && r2 >= 0.9,
                    format!(
                        "restart time grows linearly with the log since the checkpoint: {a:.3} s + {:.1} ms per MiB, \
                         R² = {r2:.3} (target: slope > 0, R² >= 0.9)",
                        b * 1000.0
                    ),
                )?;
            }
        } else if !plan.log_sizes.is_empty() {
            writeln!(out, "  (the linearity of restart time needs at least three --log-sizes)")?;
        }
        let analyzed: Vec<f64> = plan
            .log_sizes
            .iter()
            .filter_map(|&t| restart_median(&results.restarts, t, |r| r.stats.analyzed as f64))
            .collect();
        if analyzed.len() >= 2 {
            let text: Vec<String> = analyzed.iter().map(|&a| thousands(a.round() as u64)).collect();
            verdict(
                out,
                analyzed.windows(2).all(|w| w[1] > w[0]),
                format!("restart analyzes more records after more log: {}", text.join(" < ")),
            )?;
        }
        restart_bound_checks(out, &mut verdict, plan, &results.restarts)?;
    }
    if plan.has(Part::LogSize) {
        log_size_checks(out, &mut verdict, plan, &results.log_sizes)?;
    }
    Ok(missed)
}

/// CSV header of [`write_csv`].
pub const CSV_HEADER: &str = "part,config,logging,locking,commit_mode,threads,batch,repetition,duration_s,\
inserts,commits,inserts_per_sec,commits_per_sec,log_bytes,log_bytes_per_insert,flush_requests,fsyncs,\
background_fsyncs,commits_per_fsync,requests_per_fsync,lock_retries,capped,log_target_bytes,\
restart_s,analyzed,redone,pages_written,losers,compensations,cleaner,max_log_bytes,log_segment_bytes,keys,\
updates,log_kept_bytes,wal_dir_bytes,cleaner_rounds,cleaner_pages_written,throttled,writer_target_s,writer_s,commit_wait,busy_waits,cpu_s,line_ns";

/// One row of `wal.csv`: one measurement of one part; the columns a part does not measure are
/// empty (columns in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WalRow {
    pub part: &'static str,
    pub config: &'static str,
    pub logging: bool,
    pub locking: bool,
    pub commit_mode: Option<&'static str>,
    pub threads: usize,
    pub batch: u64,
    pub repetition: usize,
    pub duration_s: f64,
    pub inserts: Option<u64>,
    pub commits: u64,
    pub inserts_per_sec: Option<f64>,
    pub commits_per_sec: Option<f64>,
    pub log_bytes: u64,
    pub log_bytes_per_insert: Option<f64>,
    pub flush_requests: Option<u64>,
    pub fsyncs: Option<u64>,
    pub background_fsyncs: Option<u64>,
    pub commits_per_fsync: Option<f64>,
    pub requests_per_fsync: Option<f64>,
    pub lock_retries: Option<u64>,
    pub capped: bool,
    pub log_target_bytes: Option<u64>,
    pub restart_s: Option<f64>,
    pub analyzed: Option<u64>,
    pub redone: Option<u64>,
    pub pages_written: Option<u64>,
    pub losers: Option<u64>,
    pub compensations: Option<u64>,
    pub cleaner: Option<&'static str>,
    pub max_log_bytes: Option<u64>,
    pub log_segment_bytes: Option<u64>,
    pub keys: Option<u64>,
    pub updates: Option<u64>,
    pub log_kept_bytes: Option<u64>,
    pub wal_dir_bytes: Option<u64>,
    pub cleaner_rounds: Option<u64>,
    pub cleaner_pages_written: Option<u64>,
    pub throttled: Option<u64>,
    pub writer_target_s: Option<f64>,
    pub writer_s: Option<f64>,
    pub commit_wait: Option<&'static str>,
    pub busy_waits: Option<u64>,
    pub cpu_s: Option<f64>,
    pub line_ns: Option<f64>,
}

impl WalRow {
    /// The log columns: the page cleaner, the log bound (none without a cleaner) and the
    /// segment bytes, the log kept and what the cleaner did.
    fn log(
        mut self,
        cleaner: (Cleaner, u64, u64),
        log_kept: Option<u64>,
        cleaning: Option<Cleaning>,
    ) -> WalRow {
        self.cleaner = Some(cleaner_name(cleaner.0));
        self.max_log_bytes = (cleaner.0 != Cleaner::None).then_some(cleaner.1);
        self.log_segment_bytes = Some(cleaner.2);
        self.log_kept_bytes = log_kept;
        self.cleaner_rounds = cleaning.map(|c| c.rounds);
        self.cleaner_pages_written = cleaning.map(|c| c.pages_written);
        self.throttled = cleaning.map(|c| c.throttled);
        self
    }

    /// [`WalRow::log`] for a logged database with the engine's default cleaner, bound and segments.
    fn default_log(self, log_kept: Option<u64>, cleaning: Option<Cleaning>) -> WalRow {
        self.log((Cleaner::Classical, swizzledb::DEFAULT_MAX_LOG_BYTES, DEFAULT_SEGMENT), log_kept, cleaning)
    }
}

/// The rows of `wal.csv`, part by part.
fn rows(plan: &Plan, results: &Results) -> Vec<WalRow> {
    let mut rows = Vec::new();
    for r in &results.inserts {
        let log = r.log.as_ref();
        let row = WalRow {
            part: Part::Overhead.name(),
            config: r.setup.name(),
            logging: r.setup.logging(),
            locking: r.setup.locking(),
            commit_mode: r.setup.commit_mode().map(commit_mode_name),
            threads: r.threads,
            batch: r.batch as u64,
            repetition: r.repetition,
            duration_s: r.secs,
            inserts: Some(r.inserts),
            commits: r.commits,
            inserts_per_sec: Some(r.inserts_per_sec()),
            commits_per_sec: Some(r.commits as f64 / r.secs),
            log_bytes: log.map_or(0, |l| l.log_bytes),
            log_bytes_per_insert: r.log_bytes_per_insert().or(Some(0.0)),
            flush_requests: Some(log.map_or(0, |l| l.flush_requests)),
            fsyncs: Some(log.map_or(0, |l| l.fsyncs)),
            background_fsyncs: Some(log.map_or(0, |l| l.background_fsyncs)),
            commits_per_fsync: log.and_then(|l| {
                let rounds = l.fsyncs + l.background_fsyncs;
                (rounds > 0).then(|| r.commits as f64 / rounds as f64)
            }),
            requests_per_fsync: log.map(LogStats::requests_per_fsync),
            lock_retries: Some(r.lock_retries),
            capped: r.capped,
            line_ns: r.line_ns,
            ..WalRow::default()
        };
        rows.push(if r.setup.logging() { row.default_log(r.log_kept, r.cleaning) } else { row });
    }
    for r in &results.commits {
        rows.push(
            WalRow {
                part: Part::GroupCommit.name(),
                config: Setup::LogSync.name(),
                logging: true,
                locking: true,
                commit_mode: Some("sync"),
                threads: r.threads,
                batch: 1,
                repetition: r.repetition,
                duration_s: r.secs,
                inserts: Some(r.commits),
                commits: r.commits,
                inserts_per_sec: Some(r.commits_per_sec()),
                commits_per_sec: Some(r.commits_per_sec()),
                log_bytes: r.log.log_bytes,
                log_bytes_per_insert: (r.commits > 0).then(|| r.log.log_bytes as f64 / r.commits as f64),
                flush_requests: Some(r.log.flush_requests),
                fsyncs: Some(r.log.fsyncs),
                background_fsyncs: Some(r.log.background_fsyncs),
                commits_per_fsync: r.commits_per_fsync(),
                requests_per_fsync: Some(r.log.requests_per_fsync()),
                lock_retries: Some(r.lock_retries),
                commit_wait: Some(commit_wait_name(r.wait)),
                busy_waits: Some(r.log.busy_waits),
                cpu_s: r.cpu_secs,
                ..WalRow::default()
            }
            .default_log(Some(r.log_kept), Some(r.cleaning)),
        );
    }
    for r in &results.restarts {
        let s = &r.stats;
        let mut row = WalRow {
            part: Part::Restart.name(),
            config: Setup::LogSync.name(),
            logging: true,
            locking: true,
            commit_mode: Some("sync"),
            threads: 1,
            batch: WRITER_BATCH,
            repetition: r.repetition,
            duration_s: r.secs,
            commits: r.commits,
            log_bytes: r.log_bytes,
            log_target_bytes: r.target_bytes(),
            restart_s: Some(r.secs),
            analyzed: Some(s.analyzed),
            redone: Some(s.redone),
            pages_written: Some(s.pages_written),
            losers: Some(s.losers),
            compensations: Some(s.compensations),
            wal_dir_bytes: Some(r.wal_dir),
            writer_target_s: r.target_secs(),
            writer_s: Some(r.writer_secs),
            ..WalRow::default()
        }
        .log((r.setup.cleaner, r.setup.bound(), r.setup.segment), Some(r.log_kept), Some(r.cleaning));
        row.wal_dir_bytes = Some(r.wal_dir);
        rows.push(row);
    }
    for r in &results.log_sizes {
        let bound = if r.cleaner == Cleaner::None { NO_BOUND } else { plan.max_log };
        for s in &r.samples {
            rows.push(
                WalRow {
                    part: Part::LogSize.name(),
                    config: Setup::AutoAsync.name(),
                    logging: true,
                    locking: true,
                    commit_mode: Some("async"),
                    threads: 1,
                    batch: 1,
                    repetition: r.repetition,
                    duration_s: s.secs,
                    commits: s.updates,
                    commits_per_sec: (s.secs > 0.0).then(|| s.updates as f64 / s.secs),
                    log_bytes: s.log_written,
                    keys: Some(plan.keys),
                    updates: Some(s.updates),
                    wal_dir_bytes: Some(s.wal_dir),
                    ..WalRow::default()
                }
                .log(
                    (r.cleaner, bound, plan.log_segment),
                    Some(s.log_kept),
                    Some(s.cleaning),
                ),
            );
        }
    }
    rows
}

fn commit_mode_name(m: CommitMode) -> &'static str {
    match m {
        CommitMode::Sync => "sync",
        CommitMode::Async => "async",
    }
}

fn point_of(values: &[f64], x: f64) -> Option<Point> {
    let s = summarize(values)?;
    Some(Point { x, y: s.median, y_min: s.min, y_max: s.max })
}

fn charts(plan: &Plan, results: &Results) -> Vec<(String, Chart)> {
    let mut charts = Vec::new();
    if plan.has(Part::Overhead) {
        overhead_charts(plan, results, &mut charts);
    }
    if plan.has(Part::GroupCommit) {
        group_commit_charts(plan, results, &mut charts);
    }
    if plan.has(Part::Restart) && !plan.run_times.is_empty() {
        restart_run_time_charts(plan, results, &mut charts);
    }
    if plan.has(Part::LogSize) {
        log_size_charts(plan, results, &mut charts);
    }
    if plan.has(Part::Restart) && !plan.log_sizes.is_empty() {
        restart_log_charts(plan, results, &mut charts);
    }
    charts
}

/// The overhead part: inserts/s per configuration against threads, one chart per batch size.
fn overhead_charts(plan: &Plan, results: &Results, charts: &mut Vec<(String, Chart)>) {
    for &batch in &plan.batches {
        let series = plan
            .setups
            .iter()
            .map(|&setup| Series {
                name: setup.name().to_string(),
                points: plan
                    .overhead_threads
                    .iter()
                    .filter_map(|&t| {
                        let v: Vec<f64> = results
                            .inserts
                            .iter()
                            .filter(|r| r.setup == setup && r.threads == t && r.batch == setup.batch(batch))
                            .map(InsertRun::inserts_per_sec)
                            .collect();
                        point_of(&v, t as f64)
                    })
                    .collect(),
            })
            .collect();
        charts.push((
            format!("wal-overhead-b{batch}"),
            Chart {
                title: format!("Logging overhead on inserts, {batch} insert(s) per transaction"),
                x_label: "threads".into(),
                y_label: "inserts per second".into(),
                x_scale: Scale::Log2,
                series,
                note: Some(format!(
                    "{} random-order inserts, median and min..max of {} repetitions; auto-*: Tree::insert, one \
                     transaction per insert",
                    thousands(plan.records),
                    plan.repeat
                )),
                vline: None,
                marks: None,
            },
        ));
    }
}

/// The group-commit part: commits/s and commits per fsync against committing threads.
fn group_commit_charts(plan: &Plan, results: &Results, charts: &mut Vec<(String, Chart)>) {
    let by_threads = |f: &dyn Fn(&CommitRun) -> Option<f64>| -> Vec<Series> {
        plan.commit_waits
            .iter()
            .map(|&wait| Series {
                name: format!("log-sync, {}", commit_wait_name(wait)),
                points: plan
                    .group_threads
                    .iter()
                    .filter_map(|&t| {
                        let v: Vec<f64> = results
                            .commits
                            .iter()
                            .filter(|r| r.wait == wait && r.threads == t)
                            .filter_map(f)
                            .collect();
                        point_of(&v, t as f64)
                    })
                    .collect(),
            })
            .collect()
    };
    let note = Some(format!(
        "one put per transaction, synchronous commit, {} s per point, median and min..max of {} repetitions",
        plan.duration, plan.repeat
    ));
    charts.push((
        "wal-group-commit".into(),
        Chart {
            title: "Group commit: commits per fsync".into(),
            x_label: "committing threads".into(),
            y_label: "commits per fsync".into(),
            x_scale: Scale::Log2,
            series: by_threads(&CommitRun::commits_per_fsync),
            note: note.clone(),
            vline: None,
            marks: None,
        },
    ));
    charts.push((
        "wal-group-commit-throughput".into(),
        Chart {
            title: "Group commit: commits per second".into(),
            x_label: "committing threads".into(),
            y_label: "commits per second".into(),
            x_scale: Scale::Log2,
            series: by_threads(&|r| Some(r.commits_per_sec())),
            note,
            vline: None,
            marks: None,
        },
    ));
}

/// The restart part against the writer's run time, with the page cleaner on and off.
fn restart_run_time_charts(plan: &Plan, results: &Results, charts: &mut Vec<(String, Chart)>) {
    let series = TIMED_CLEANERS
        .iter()
        .map(|&cleaner| Series {
            name: match cleaner {
                Cleaner::None => "cleaner off".to_string(),
                _ => format!("cleaner on, bound {}", bytes(plan.max_log)),
            },
            points: plan
                .run_times
                .iter()
                .filter_map(|&secs| {
                    let v: Vec<f64> = results
                        .restarts
                        .iter()
                        .filter(|r| r.target_secs() == Some(secs) && r.setup.cleaner == cleaner)
                        .map(|r| r.secs)
                        .collect();
                    point_of(&v, secs)
                })
                .collect(),
        })
        .collect();
    charts.push((
        "wal-restart-bounded".into(),
        Chart {
            title: "Restart time against how long the writer ran before the kill".into(),
            x_label: "writer run time (s)".into(),
            y_label: "restart seconds".into(),
            x_scale: Scale::Log2,
            series,
            note: Some(format!(
                "{} records, {} log segments, median and min..max of {} repetitions",
                thousands(plan.records),
                bytes(plan.log_segment),
                plan.repeat
            )),
            vline: None,
            marks: None,
        },
    ));
}

/// The log-size part: the log's size over the updates, with the page cleaner on and off.
fn log_size_charts(plan: &Plan, results: &Results, charts: &mut Vec<(String, Chart)>) {
    // Repetition 0 alone: the cleaner's sawtooth is out of phase across repetitions, so a
    // median per sample would show none of them.
    let by_sample = |cleaner: Cleaner, f: fn(&LogSample) -> u64| -> Vec<Point> {
        let run = results.log_sizes.iter().find(|r| r.cleaner == cleaner && r.repetition == 0);
        run.map_or_else(Vec::new, |r| {
            r.samples
                .iter()
                .map(|s| {
                    let y = f(s) as f64 / MIB;
                    Point { x: s.updates as f64, y, y_min: y, y_max: y }
                })
                .collect()
        })
    };
    let kept = |s: &LogSample| s.log_kept;
    let disk = |s: &LogSample| s.wal_dir;
    let note = format!(
        "{} keys, {} log segments, bound {} with the cleaner; repetition 0, a sample every {} updates",
        thousands(plan.keys),
        bytes(plan.log_segment),
        bytes(plan.max_log),
        thousands(plan.sample_every)
    );
    let series = |cleaners: &[Cleaner]| -> Vec<Series> {
        cleaners
            .iter()
            .flat_map(|&c| {
                let name = if c == Cleaner::None { "cleaner off" } else { "cleaner on" };
                [
                    Series { name: format!("log kept, {name}"), points: by_sample(c, kept) },
                    Series { name: format!("segment files, {name}"), points: by_sample(c, disk) },
                ]
            })
            .collect()
    };
    for (stem, title, cleaners) in [
        ("wal-log-size", "Log kept on disk over an update run", &LOG_SIZE_CLEANERS[..]),
        ("wal-log-size-cleaner", "Log kept on disk over an update run, cleaner on", &LOG_SIZE_CLEANERS[..1]),
    ] {
        charts.push((
            stem.into(),
            Chart {
                title: title.into(),
                x_label: "updates".into(),
                y_label: "log (MiB)".into(),
                x_scale: Scale::Linear,
                series: series(cleaners),
                note: Some(note.clone()),
                vline: None,
                marks: Some(Marks { line: "line: the samples".into(), bars: "(no bars)".into() }),
            },
        ));
    }
}

/// The restart part against the log written since the last checkpoint.
fn restart_log_charts(plan: &Plan, results: &Results, charts: &mut Vec<(String, Chart)>) {
    let points = plan
        .log_sizes
        .iter()
        .filter_map(|&target| {
            let v: Vec<f64> = results
                .restarts
                .iter()
                .filter(|r| r.target_bytes() == Some(target))
                .map(|r| r.secs)
                .collect();
            point_of(&v, restart_median(&results.restarts, target, RestartRun::log_mib)?)
        })
        .collect();
    charts.push((
        "wal-restart".into(),
        Chart {
            title: "Restart time against the log since the last checkpoint".into(),
            x_label: "log since the checkpoint (MiB)".into(),
            y_label: "restart seconds".into(),
            x_scale: Scale::Linear,
            series: vec![Series { name: "Database::open after SIGKILL".into(), points }],
            note: Some(format!(
                "{} records, page cleaner off, median and min..max of {} repetitions",
                thousands(plan.records),
                plan.repeat
            )),
            vline: None,
            marks: None,
        },
    ));
}

/// Runs `bench wal` (or, with the hidden `--child`, the restart part's writer).
///
/// # Errors
/// Bad options ([`Usage`]), engine and I/O errors; a failed part stops the run.
pub fn run(args: &WalBenchArgs) -> Result<ExitCode, Box<dyn Error>> {
    if let Some(path) = &args.child {
        return child(args, path);
    }
    let plan = plan(args).map_err(Usage)?;
    experiment::execute(&plan, args.out.as_deref())
}

impl Experiment for Plan {
    const NAME: &'static str = "wal";
    type Row = WalRow;
    type Results = Results;

    fn caption(&self) -> String {
        format!(
            "Write-ahead logging benchmarks: parts {}; databases in {}.",
            self.parts.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
            self.dir.display()
        )
    }

    fn run(&self, progress: Progress) -> Result<Results, Box<dyn Error>> {
        let plan = self;
        std::fs::create_dir_all(&plan.dir)
            .map_err(|e| crate::UnusablePath(format!("cannot create --dir {}: {e}", plan.dir.display())))?;
        let scratch = tempfile::Builder::new()
            .prefix("swizzledb-wal-")
            .tempdir_in(&plan.dir)
            .map_err(|e| crate::UnusablePath(format!("cannot write to --dir {}: {e}", plan.dir.display())))?;
        let mut results = Results::default();
        if plan.has(Part::Overhead) {
            results.inserts = run_overhead(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::GroupCommit) {
            results.commits = run_group_commit(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::Restart) {
            results.restarts = run_restart(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::LogSize) {
            results.log_sizes = run_log_size(plan, scratch.path(), progress)?;
        }
        Ok(results)
    }

    fn tables(&self, results: &Results, mut out: &mut dyn Write) -> io::Result<()> {
        let plan = self;
        if plan.has(Part::Overhead) {
            print_overhead(&mut out, plan, &results.inserts)?;
        }
        if plan.has(Part::GroupCommit) {
            print_group_commit(&mut out, plan, &results.commits)?;
        }
        if plan.has(Part::Restart) {
            print_restart(&mut out, plan, &results.restarts)?;
        }
        if plan.has(Part::LogSize) {
            print_log_size(&mut out, plan, &results.log_sizes)?;
        }
        print_checks(&mut out, plan, results).map(|_| ())
    }

    fn rows(&self, results: &Results) -> Vec<WalRow> {
        rows(self, results)
    }

    fn charts(&self, results: &Results) -> Vec<(String, Chart)> {
        charts(self, results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_line_recovers_a_hand_worked_line() {
        // y = 0.5 + 2x exactly: slope 2, intercept 0.5, R² 1.
        let (a, b, r2) = fit_line(&[(1.0, 2.5), (2.0, 4.5), (4.0, 8.5)]).unwrap();
        assert!((a - 0.5).abs() < 1e-12 && (b - 2.0).abs() < 1e-12 && (r2 - 1.0).abs() < 1e-12);
        // (0,0), (1,1), (2,0): slope 0, R² 0.
        let (_, b, r2) = fit_line(&[(0.0, 0.0), (1.0, 1.0), (2.0, 0.0)]).unwrap();
        assert!(b.abs() < 1e-12 && r2.abs() < 1e-12);
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    #[test]
    fn log_delta_subtracts_every_counter() {
        let before =
            LogStats { appends: 1, log_bytes: 10, fsyncs: 2, background_fsyncs: 1, ..LogStats::default() };
        let after =
            LogStats { appends: 5, log_bytes: 110, fsyncs: 7, background_fsyncs: 4, ..LogStats::default() };
        let d = log_delta(&after, &before);
        assert_eq!((d.appends, d.log_bytes, d.fsyncs, d.background_fsyncs), (4, 100, 5, 3));
    }

    #[test]
    fn parts_parse_in_canonical_order_and_reject_unknown_names() {
        assert_eq!(parse_parts("restart,overhead").unwrap().0, vec![Part::Overhead, Part::Restart]);
        assert_eq!(parse_parts("all").unwrap().0, Part::ALL.to_vec());
        assert!(parse_parts("overhead,fast").unwrap_err().contains("group-commit"));
    }

    #[test]
    fn keys_of_distinct_counters_differ() {
        let keys: std::collections::HashSet<[u8; 8]> = (0..10_000).map(|i| key_of(7, i)).collect();
        assert_eq!(keys.len(), 10_000);
    }
}
