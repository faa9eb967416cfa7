//! Part `group-commit`: commits/s and commits per fsync as committing threads are added, for
//! each way of waiting for a round (`--commit-wait`), with the CPU each takes.

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use swizzledb::{CommitWait, Database, LogStats, Tree};

use crate::harness::buffer::Progress;
use crate::support::text::{thousands, write_aligned};
use crate::support::{cpu, stats};

use super::common::*;

/// One measurement of the group-commit part.
#[derive(Clone, Debug)]
pub struct CommitRun {
    /// How the committers waited for their rounds.
    pub(super) wait: CommitWait,
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
    /// CPU seconds of the whole process (committers, flusher, cleaner) during the measurement;
    /// `None` where the platform does not say.
    pub(super) cpu_secs: Option<f64>,
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

    /// Microseconds of CPU per commit, the process's background threads included.
    pub(super) fn cpu_us_per_commit(&self) -> Option<f64> {
        self.cpu_secs.filter(|_| self.commits > 0).map(|s| s * 1e6 / self.commits as f64)
    }
}

pub(super) fn measure_commits(
    plan: &Plan,
    db: &Database,
    tree: &Tree,
    wait: CommitWait,
    threads: usize,
    repetition: usize,
) -> Result<CommitRun, Box<dyn Error>> {
    let stop = AtomicBool::new(false);
    let before = db.log_stats().ok_or("the group-commit database logs")?;
    let cleaning_before = Cleaning::of(db).unwrap_or_default();
    let cpu_before = cpu::process_cpu_secs();
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
    let cpu_secs = cpu::process_cpu_secs().zip(cpu_before).map(|(after, before)| after - before);
    let after = db.log_stats().ok_or("the group-commit database logs")?;
    let (mut commits, mut lock_retries) = (0, 0);
    for r in results {
        let (c, l) = r?;
        commits += c;
        lock_retries += l;
    }
    Ok(CommitRun {
        wait,
        threads,
        repetition,
        commits,
        secs,
        log: log_delta(&after, &before),
        lock_retries,
        cleaning: Cleaning::of(db).unwrap_or_default().since(cleaning_before),
        log_kept: db.log_bytes().unwrap_or(0),
        cpu_secs,
    })
}

pub(super) fn run_group_commit(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<CommitRun>, Box<dyn Error>> {
    // One database per way of waiting (the log reads it when it opens), all open together so
    // that their measurements interleave, in turn (lab README rule 5).
    let mut dbs = Vec::new();
    for &wait in &plan.commit_waits {
        let path = scratch.join(format!("group-commit-{}.swz", commit_wait_name(wait)));
        let db = Setup::LogSync.builder(64 << 20).commit_wait(wait).create(&path)?;
        let tree = db.create_tree(TREE)?;
        dbs.push((wait, path, db, tree));
    }
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for i in stats::in_turn(dbs.len(), rep) {
            let (wait, _, db, tree) = &dbs[i];
            for &threads in &plan.group_threads {
                let run = measure_commits(plan, db, tree, *wait, threads, rep).map_err(|e| {
                    format!("group commit at {threads} thread(s), waiting {}: {e}", commit_wait_name(*wait))
                })?;
                progress.say(format_args!(
                    "group-commit rep {}/{}: {}, {threads} thr: {} commits/s, {:.2} commits per fsync",
                    rep + 1,
                    plan.repeat,
                    commit_wait_name(*wait),
                    thousands(run.commits_per_sec().round() as u64),
                    run.commits_per_fsync().unwrap_or(0.0)
                ));
                runs.push(run);
            }
        }
    }
    for (_, path, db, tree) in dbs {
        drop(tree);
        db.close()?;
        remove_database(&path);
    }
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
    wait: CommitWait,
    threads: usize,
    f: impl Fn(&CommitRun) -> Option<f64>,
) -> Option<f64> {
    stats::median_by(runs, |r| r.wait == wait && r.threads == threads, f)
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
        "commit wait".to_string(),
        "threads".to_string(),
        "commits/s".to_string(),
        "commits per fsync".to_string(),
        "flush requests per fsync".to_string(),
        "CPU µs per commit".to_string(),
        "busy waits per commit".to_string(),
    ]];
    for &wait in &plan.commit_waits {
        for &t in &plan.group_threads {
            let dash = || "-".to_string();
            let median = |f: &dyn Fn(&CommitRun) -> Option<f64>| commit_median(runs, wait, t, f);
            table.push(vec![
                commit_wait_name(wait).to_string(),
                t.to_string(),
                median(&|r| Some(r.commits_per_sec())).map_or_else(dash, |x| thousands(x.round() as u64)),
                median(&CommitRun::commits_per_fsync).map_or_else(dash, |x| format!("{x:.2}")),
                median(&|r| Some(r.log.requests_per_fsync())).map_or_else(dash, |x| format!("{x:.2}")),
                median(&CommitRun::cpu_us_per_commit).map_or_else(dash, |x| format!("{x:.1}")),
                median(&|r| (r.commits > 0).then(|| r.log.busy_waits as f64 / r.commits as f64))
                    .map_or_else(dash, |x| format!("{x:.2}")),
            ]);
        }
    }
    write_aligned(out, &table)
}

/// The group-commit checks for one way of waiting: more commits per fsync at the most threads
/// than at the fewest; and, sleeping, no wait spent awake.
pub(super) fn group_commit_checks(
    out: &mut dyn Write,
    verdict: &mut Verdict<'_>,
    plan: &Plan,
    runs: &[CommitRun],
    wait: CommitWait,
) -> io::Result<()> {
    let name = commit_wait_name(wait);
    let per_fsync = |t| commit_median(runs, wait, t, CommitRun::commits_per_fsync);
    if let (Some(&lo), Some(&hi)) = (plan.group_threads.first(), plan.group_threads.last()) {
        if let (Some(a), Some(b), true) = (per_fsync(lo), per_fsync(hi), lo != hi) {
            let per_sec = |t| commit_median(runs, wait, t, |r| Some(r.commits_per_sec()));
            let speedup = match (per_sec(lo), per_sec(hi)) {
                (Some(x), Some(y)) if x > 0.0 => format!("; {:.1}x the commits/s", y / x),
                _ => String::new(),
            };
            verdict(
                out,
                b > a,
                format!(
                    "group commit ({name}): {b:.2} commits per fsync at {hi} threads vs {a:.2} at {lo} (one fsync \
                     serves several committers){speedup}"
                ),
            )?;
        }
    }
    if wait == CommitWait::Sleep {
        let awake: u64 = runs.iter().filter(|r| r.wait == wait).map(|r| r.log.busy_waits).sum();
        verdict(
            out,
            awake == 0,
            format!("committers told to sleep waited awake {awake} times (none expected)"),
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 3: restart
