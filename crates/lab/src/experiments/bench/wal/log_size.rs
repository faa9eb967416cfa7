//! Part `log-size`: the log's size over a long run of updates, with the page cleaner on and off.

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use swizzledb::Cleaner;

use crate::experiments::bench::insert::mix;
use crate::harness::buffer::Progress;
use crate::support::stats;
use crate::support::text::{bytes, thousands, write_aligned};

use super::common::*;

/// One sample of a log-size run; counters since the update run began.
#[derive(Clone, Debug)]
pub struct LogSample {
    pub(super) updates: u64,
    pub(super) secs: f64,
    /// `Database::log_bytes()`.
    pub(super) log_kept: u64,
    /// Bytes of the log's segment files.
    pub(super) wal_dir: u64,
    /// Log bytes written.
    pub(super) log_written: u64,
    pub(super) cleaning: Cleaning,
}

/// One run of the log-size part.
#[derive(Clone, Debug)]
pub struct LogSizeRun {
    pub(super) cleaner: Cleaner,
    pub(super) repetition: usize,
    /// The first after the keys are loaded, then one every `--sample-every` updates and the
    /// last.
    pub(super) samples: Vec<LogSample>,
}

impl LogSizeRun {
    pub(super) fn last(&self) -> &LogSample {
        self.samples.last().expect("a run has samples")
    }

    pub(super) fn max_kept(&self) -> u64 {
        self.samples.iter().map(|s| s.log_kept).max().unwrap_or(0)
    }

    pub(super) fn max_on_disk(&self) -> u64 {
        self.samples.iter().map(|s| s.wal_dir).max().unwrap_or(0)
    }

    pub(super) fn updates_per_sec(&self) -> f64 {
        let last = self.last();
        last.updates as f64 / last.secs
    }
}

/// One run: a fresh database with `keys` records, then `updates` upserts of random ones, each its
/// own transaction (auto-commit, asynchronous commit).
pub(super) fn measure_log_size(
    plan: &Plan,
    scratch: &Path,
    cleaner: Cleaner,
    repetition: usize,
) -> Result<LogSizeRun, Box<dyn Error>> {
    let path = scratch.join(format!("log-size-{}.swz", cleaner_name(cleaner)));
    let builder =
        cleaner_builder(Setup::AutoAsync.builder(LOG_SIZE_POOL), cleaner, plan.max_log, plan.log_segment);
    let db = builder.create(&path)?;
    let tree = db.create_tree(TREE)?;
    for k in 0..plan.keys {
        let key = key_of(plan.seed, k);
        tree.insert(&key, &value_of(&key, 0))?;
    }
    let written = || db.log_stats().map_or(0, |l| l.log_bytes);
    let (written0, cleaning0) = (written(), Cleaning::of(&db).unwrap_or_default());
    let sample = |updates: u64, secs: f64| LogSample {
        updates,
        secs,
        log_kept: db.log_bytes().unwrap_or(0),
        wal_dir: wal_dir_bytes(&path),
        log_written: written() - written0,
        cleaning: Cleaning::of(&db).unwrap_or_default().since(cleaning0),
    };
    let mut samples = vec![sample(0, 0.0)];
    let start = Instant::now();
    let pick = mix(plan.seed ^ 0x5eed);
    for u in 1..=plan.updates {
        let key = key_of(plan.seed, mix(u ^ pick) % plan.keys);
        tree.upsert(&key, &value_of(&key, u))?;
        if u % plan.sample_every == 0 || u == plan.updates {
            samples.push(sample(u, start.elapsed().as_secs_f64()));
        }
    }
    drop(tree);
    db.close()?;
    remove_database(&path);
    Ok(LogSizeRun { cleaner, repetition, samples })
}

/// The page cleaners of the log-size part, interleaved in this order.
pub(super) const LOG_SIZE_CLEANERS: [Cleaner; 2] = [Cleaner::Classical, Cleaner::None];

pub(super) fn run_log_size(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<LogSizeRun>, Box<dyn Error>> {
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for cleaner in LOG_SIZE_CLEANERS {
            let run = measure_log_size(plan, scratch, cleaner, rep)
                .map_err(|e| format!("log size, cleaner {}: {e}", cleaner_name(cleaner)))?;
            progress.say(format_args!(
                "log-size rep {}/{}: cleaner {}: {} updates/s, log kept at most {}, at the end {}",
                rep + 1,
                plan.repeat,
                cleaner_name(cleaner),
                thousands(run.updates_per_sec().round() as u64),
                bytes(run.max_kept()),
                bytes(run.last().log_kept)
            ));
            runs.push(run);
        }
    }
    Ok(runs)
}

pub(super) fn log_size_median(
    runs: &[LogSizeRun],
    cleaner: Cleaner,
    f: impl Fn(&LogSizeRun) -> f64,
) -> Option<f64> {
    stats::median_by(runs, |r| r.cleaner == cleaner, |r| Some(f(r)))
}

pub(super) fn print_log_size(out: &mut impl Write, plan: &Plan, runs: &[LogSizeRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n4. log size: {} updates of {} keys ({VALUE_BYTES}-byte values; Tree::upsert, one auto-committed \
         transaction each, asynchronous commit, one thread; pool {}, the data fits), {} log segments, page cleaner \
         on (log bound {}) and off (no bound); log kept (Database::log_bytes()) and the segment files on disk \
         sampled every {} updates; median of {} interleaved repetitions",
        thousands(plan.updates),
        thousands(plan.keys),
        bytes(LOG_SIZE_POOL as u64),
        bytes(plan.log_segment),
        bytes(plan.max_log),
        thousands(plan.sample_every),
        plan.repeat
    )?;
    let mut table = vec![[
        "cleaner",
        "bound",
        "updates/s",
        "log written",
        "max kept",
        "final kept",
        "max on disk",
        "final on disk",
        "rounds",
        "pages written",
        "throttled",
    ]
    .map(String::from)
    .to_vec()];
    for cleaner in LOG_SIZE_CLEANERS {
        let m = |f: &dyn Fn(&LogSizeRun) -> f64| log_size_median(runs, cleaner, f);
        let Some(rate) = m(&|r| r.updates_per_sec()) else { continue };
        let size = |f: &dyn Fn(&LogSizeRun) -> f64| bytes(m(f).unwrap_or(0.0).round() as u64);
        let count = |f: &dyn Fn(&LogSizeRun) -> f64| thousands(m(f).unwrap_or(0.0).round() as u64);
        table.push(vec![
            cleaner_name(cleaner).to_string(),
            if cleaner == Cleaner::None { "none".to_string() } else { bytes(plan.max_log) },
            thousands(rate.round() as u64),
            size(&|r| r.last().log_written as f64),
            size(&|r| r.max_kept() as f64),
            size(&|r| r.last().log_kept as f64),
            size(&|r| r.max_on_disk() as f64),
            size(&|r| r.last().wal_dir as f64),
            count(&|r| r.last().cleaning.rounds as f64),
            count(&|r| r.last().cleaning.pages_written as f64),
            count(&|r| r.last().cleaning.throttled as f64),
        ]);
    }
    write_aligned(out, &table)
}

/// The least-squares line `y = a + b x` through the points and its R²; `None` for fewer than
/// two distinct x.
pub(super) fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = mean_y - b * mean_x;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 1.0 };
    Some((a, b, r2))
}

// ---------------------------------------------------------------------------------------------
// Checks, CSV, plots

/// The log-size part: with the cleaner the log stays below its bound; without it, it grows
/// linearly with the updates.
pub(super) fn log_size_checks(
    out: &mut dyn Write,
    verdict: &mut Verdict<'_>,
    plan: &Plan,
    runs: &[LogSizeRun],
) -> io::Result<()> {
    let with: Vec<&LogSizeRun> = runs.iter().filter(|r| r.cleaner != Cleaner::None).collect();
    if let Some(max) = with.iter().map(|r| r.max_kept()).max() {
        let samples: usize = with.iter().map(|r| r.samples.len()).sum();
        let disk = with.iter().map(|r| r.max_on_disk()).max().unwrap_or(0);
        let written = with.iter().map(|r| r.last().log_written).max().unwrap_or(0);
        let slack = transaction_log(1);
        verdict(
            out,
            max <= plan.max_log + slack,
            format!(
                "log size, cleaner on: log stayed below its bound: at most {} kept of {} + {} for one transaction, over \
                 {samples} samples while {} was written ({} of segment files on disk at most)",
                bytes(max),
                bytes(plan.max_log),
                bytes(slack),
                bytes(written),
                bytes(disk)
            ),
        )?;
    }
    for run in runs.iter().filter(|r| r.cleaner == Cleaner::None).take(1) {
        let points: Vec<(f64, f64)> =
            run.samples.iter().map(|s| (s.updates as f64, s.log_kept as f64)).collect();
        if let Some((_, b, r2)) = fit_line(&points) {
            let last = run.last();
            verdict(
                out,
                b > 0.0 && r2 >= 0.99,
                format!(
                    "log size, cleaner off: the log grows linearly with the updates: {} kept after {} updates ({:.1}x \
                     the cleaner's bound), {b:.0} bytes per update, R² = {r2:.4} (target: R² >= 0.99; repetition 0)",
                    bytes(last.log_kept),
                    thousands(last.updates),
                    last.log_kept as f64 / plan.max_log as f64
                ),
            )?;
        }
    }
    Ok(())
}
