//! Part `group-commit`: commits/s and commits per fsync as committing threads are added.

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use swizzledb::{Database, LogStats, Tree};

use crate::harness::buffer::Progress;
use crate::support::stats;
use crate::support::text::{thousands, write_aligned};

use super::common::*;

/// One measurement of the group-commit part.
#[derive(Clone, Debug)]
pub struct CommitRun {
    pub(super) threads: usize,
    pub(super) repetition: usize,
    pub(super) commits: u64,
    pub(super) secs: f64,
    pub(super) log: LogStats,
    pub(super) lock_retries: u64,
    /// The page cleaner during the measurement.
    pub(super) cleaning: Cleaning,
    /// `Database::log_bytes()` at the end.
    pub(super) log_kept: u64,
}

impl CommitRun {
    pub(super) fn commits_per_sec(&self) -> f64 {
        self.commits as f64 / self.secs
    }

    /// Commits per sync round of the log, background rounds included.
    pub(super) fn commits_per_fsync(&self) -> Option<f64> {
        let rounds = self.log.fsyncs + self.log.background_fsyncs;
        (rounds > 0).then(|| self.commits as f64 / rounds as f64)
    }
}

pub(super) fn measure_commits(
    plan: &Plan,
    db: &Database,
    tree: &Tree,
    threads: usize,
    repetition: usize,
) -> Result<CommitRun, Box<dyn Error>> {
    let stop = AtomicBool::new(false);
    let before = db.log_stats().ok_or("the group-commit database logs")?;
    let cleaning_before = Cleaning::of(db).unwrap_or_default();
    let start = Instant::now();
    let results: Vec<swizzledb::Result<(u64, u64)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || -> swizzledb::Result<(u64, u64)> {
                    let (mut commits, mut retries) = (0u64, 0u64);
                    // Disjoint keys per thread and repetition: no lock conflicts, new keys.
                    let base = (t << 48) | ((repetition as u64) << 40);
                    while !stop.load(Ordering::Relaxed) {
                        let key = key_of(plan.seed, base | commits);
                        retries += with_retry(db, |txn| txn.put(tree, &key, &value_of(&key, 1)).map(drop))?;
                        commits += 1;
                    }
                    Ok((commits, retries))
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(plan.duration));
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().expect("commit thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let after = db.log_stats().ok_or("the group-commit database logs")?;
    let (mut commits, mut lock_retries) = (0, 0);
    for r in results {
        let (c, l) = r?;
        commits += c;
        lock_retries += l;
    }
    Ok(CommitRun {
        threads,
        repetition,
        commits,
        secs,
        log: log_delta(&after, &before),
        lock_retries,
        cleaning: Cleaning::of(db).unwrap_or_default().since(cleaning_before),
        log_kept: db.log_bytes().unwrap_or(0),
    })
}

pub(super) fn run_group_commit(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<CommitRun>, Box<dyn Error>> {
    let path = scratch.join("group-commit.swz");
    let db = Setup::LogSync.builder(64 << 20).create(&path)?;
    let tree = db.create_tree(TREE)?;
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.group_threads {
            let run = measure_commits(plan, &db, &tree, threads, rep)
                .map_err(|e| format!("group commit at {threads} thread(s): {e}"))?;
            progress.say(format_args!(
                "group-commit rep {}/{}: {threads} thr: {} commits/s, {:.2} commits per fsync",
                rep + 1,
                plan.repeat,
                thousands(run.commits_per_sec().round() as u64),
                run.commits_per_fsync().unwrap_or(0.0)
            ));
            runs.push(run);
        }
    }
    drop(tree);
    db.close()?;
    remove_database(&path);
    Ok(runs)
}

/// Whether the thread counts oversubscribe the machine's cores.
pub(super) fn cores_note(threads: &[usize]) -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if threads.iter().any(|&t| t > cores) {
        format!(
            "This machine has {cores} core(s): with more threads, committers also wait for the CPU, and an \
             fsync round may end before the next committer has run."
        )
    } else {
        format!("This machine has {cores} core(s); no run oversubscribes them.")
    }
}

pub(super) fn commit_median(
    runs: &[CommitRun],
    threads: usize,
    f: impl Fn(&CommitRun) -> Option<f64>,
) -> Option<f64> {
    stats::median_by(runs, |r| r.threads == threads, f)
}

pub(super) fn print_group_commit(out: &mut impl Write, plan: &Plan, runs: &[CommitRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n2. group commit: each thread commits one-put transactions synchronously for {} s; median of {} \
         interleaved repetitions",
        plan.duration, plan.repeat
    )?;
    writeln!(out, "   {}", cores_note(&plan.group_threads))?;
    let mut table = vec![vec![
        "threads".to_string(),
        "commits/s".to_string(),
        "commits per fsync".to_string(),
        "flush requests per fsync".to_string(),
    ]];
    for &t in &plan.group_threads {
        let dash = || "-".to_string();
        table.push(vec![
            t.to_string(),
            commit_median(runs, t, |r| Some(r.commits_per_sec()))
                .map_or_else(dash, |x| thousands(x.round() as u64)),
            commit_median(runs, t, CommitRun::commits_per_fsync).map_or_else(dash, |x| format!("{x:.2}")),
            commit_median(runs, t, |r| Some(r.log.requests_per_fsync()))
                .map_or_else(dash, |x| format!("{x:.2}")),
        ]);
    }
    write_aligned(out, &table)
}

// ---------------------------------------------------------------------------------------------
// Part 3: restart
