//! A workload against buffer pools of several sizes, modes and replacement policies, each run
//! starting cold, as Gilbert 2017 measured TPC-C and TPC-B.
//!
//! The workload is loaded once into a base file (with a pool that holds it). Every measurement
//! copies the base file, opens the copy with its point's mode, pool size and policy (an empty
//! pool: the run starts cold), runs the workload on `threads` threads for `duration`, and records
//! the throughput, the buffer counters and the process CPU time of the run; the copy is then
//! checked with the workload's `verify`, closed and deleted. Repetitions are interleaved: every point once, then every point again.
//! Logging and record locking are off (the buffer alone); the caller says so.

use std::path::{Path, PathBuf};
use std::time::Duration;
use swizzledb::{Database, PolicySpec, PoolMode, Stats};

use crate::harness::{self, Measurement, Until};
use crate::support::cpu;
use crate::support::progress::Progress;
use crate::workloads::{Workload, WorkloadError};

/// One configuration measured.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PoolPoint {
    /// Buffer mode.
    pub mode: PoolMode,
    /// Replacement policy.
    pub policy: PolicySpec,
    /// The pool as a fraction of the base file's bytes.
    pub fraction: f64,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct PoolSweep {
    /// The configurations, measured in this order within each repetition.
    pub points: Vec<PoolPoint>,
    /// Threads running the workload.
    pub threads: usize,
    /// Length of each measurement.
    pub duration: Duration,
    /// Measurements per point.
    pub repeat: u32,
    /// Directory for the base file and the copies.
    pub dir: PathBuf,
    /// Pool bytes while loading the base file (it should hold the loaded data).
    pub load_pool_bytes: u64,
    /// Smallest pool given to a run, whatever the fraction (the pool needs some frames).
    pub min_pool_bytes: u64,
    /// How each run's copy is opened: O_DIRECT, fix timing, eviction.
    pub copy: CopyOptions,
}

/// How [`BaseFile::open_copy`] opens a copy, besides its mode, policy and pool.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyOptions {
    /// O_DIRECT, so that misses cost device reads rather than copies from the OS page cache.
    pub direct_io: bool,
    /// Time every fix (buffer README, B12a).
    pub time_fixes: bool,
    /// How the pool evicts.
    pub eviction: Eviction,
}

/// How a run's pool evicts (buffer README B13, B31).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// Frames one eviction batch frees (`swizzledb::lab::LabOptions::eviction_batch`); `None`:
    /// the pool's watermarks.
    pub batch: Option<usize>,
    /// A background evictor keeps free frames ready; off, the threads that miss evict.
    pub background: bool,
}

impl Default for Eviction {
    /// The engine's defaults: the pool's batches, the background evictor on.
    fn default() -> Self {
        Eviction { batch: None, background: true }
    }
}

impl Eviction {
    /// In words, for reports: the batch and who evicts.
    #[must_use]
    pub fn describe(&self) -> String {
        let batch = match self.batch {
            None => "the pool's eviction batches (capacity/64 to twice that, buffer README B13)".to_string(),
            Some(1) => "one victim per evictioner call".to_string(),
            Some(n) => format!("eviction batches of {n} frames"),
        };
        let who = if self.background { "a background evictor" } else { "the threads that miss" };
        format!("{batch}, evicted by {who}")
    }
}

/// One measurement.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PoolRun {
    /// Index into [`PoolSweep::points`].
    pub point: usize,
    /// Repetition, from 0.
    pub rep: u32,
    /// Pool bytes of the run.
    pub pool_bytes: u64,
    /// Operations and time.
    pub measurement: Measurement,
    /// Buffer counters of the run (from the open to the end of the measurement).
    pub stats: Stats,
    /// Process CPU seconds during the measurement, where the system reports it.
    pub cpu_secs: Option<f64>,
    /// The database file's bytes after the run (closed): TPC-C and TPC-B grow the data, so the
    /// pool holds a smaller part of it at the end than at the start.
    pub end_bytes: u64,
}

impl PoolRun {
    /// Misses / fixes.
    #[must_use]
    pub fn miss_ratio(&self) -> Option<f64> {
        let fixes = self.stats.hits + self.stats.misses;
        (fixes > 0).then(|| self.stats.misses as f64 / fixes as f64)
    }
}

/// A database file removed (with its log directory) when dropped.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(wal_dir(&self.0));
    }
}

fn wal_dir(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".wal");
    PathBuf::from(s)
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> WorkloadError {
    let path = path.display().to_string();
    move |source| WorkloadError::Io { path, source }
}

/// A workload loaded once into a file (unlogged, unlocked), to be copied for each run.
pub struct BaseFile {
    file: Scratch,
    stem: String,
    /// The file's bytes.
    pub bytes: u64,
}

impl BaseFile {
    /// Loads `workload` into a new file in `dir` with a pool of `pool_bytes`.
    ///
    /// # Errors
    /// The directory or the file cannot be made, or loading fails.
    pub fn load<W: Workload>(
        workload: &W,
        dir: &Path,
        pool_bytes: u64,
        progress: Progress,
    ) -> Result<BaseFile, WorkloadError> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let stem = format!("swizzledb-{}-{}", workload.name(), std::process::id());
        let file = Scratch(dir.join(format!("{stem}-base.swz")));
        progress.say(format_args!("loading {} into the base file ...", workload.name()));
        let db = Database::builder()
            .pool_bytes(usize::try_from(pool_bytes).unwrap_or(usize::MAX))
            .logging(false)
            .lab(|l| l.locking(false))
            .create(&file.0)?;
        workload.load(&db)?;
        db.close()?;
        let bytes = std::fs::metadata(&file.0).map_err(io_error(&file.0))?.len();
        Ok(BaseFile { file, stem, bytes })
    }

    /// Copy number `n` of the base file, opened cold with `mode`, `policy`, a pool of
    /// `pool_bytes` and `options` (logging and locking off); the copy goes when the returned
    /// [`Scratch`] drops (after the database is closed).
    ///
    /// # Errors
    /// Copying or opening fails.
    pub fn open_copy(
        &self,
        n: usize,
        mode: PoolMode,
        policy: PolicySpec,
        pool_bytes: u64,
        options: CopyOptions,
    ) -> Result<(Database, Scratch), WorkloadError> {
        let dir = self.file.0.parent().unwrap_or(Path::new("."));
        let copy = Scratch(dir.join(format!("{}-{n}.swz", self.stem)));
        std::fs::copy(&self.file.0, &copy.0).map_err(io_error(&copy.0))?;
        let db = Database::builder()
            .mode(mode)
            .policy(policy)
            .pool_bytes(usize::try_from(pool_bytes).unwrap_or(usize::MAX))
            .logging(false)
            .lab(|l| l.locking(false))
            .direct_io(options.direct_io)
            .lab(|l| {
                l.time_fixes(options.time_fixes)
                    .eviction_batch(options.eviction.batch)
                    .background_eviction(options.eviction.background)
            })
            .open(&copy.0)?;
        Ok((db, copy))
    }
}

/// The pool bytes of `point` over a base file of `data_bytes`.
#[must_use]
pub fn pool_bytes(sweep: &PoolSweep, point: &PoolPoint, data_bytes: u64) -> u64 {
    ((point.fraction * data_bytes as f64) as u64).max(sweep.min_pool_bytes)
}

/// Loads `workload` into a base file, then measures every point `repeat` times (interleaved);
/// returns the runs and the base file's bytes.
///
/// # Errors
/// `threads` or `repeat` is 0, a point's fraction is not positive, the base file cannot be
/// made, or a run fails (a workload error is a bug or a damaged database, not a result).
pub fn run<W: Workload>(
    workload: &W,
    sweep: &PoolSweep,
    progress: Progress,
) -> Result<(Vec<PoolRun>, u64), WorkloadError> {
    check(sweep)?;
    let base = BaseFile::load(workload, &sweep.dir, sweep.load_pool_bytes, progress)?;
    let mut runs = Vec::new();
    let total = u64::from(sweep.repeat) * sweep.points.len() as u64;
    let bar = progress.counter(total, format!("{} runs", workload.name()));
    for rep in 0..sweep.repeat {
        for i in 0..sweep.points.len() {
            runs.push(run_one(workload, sweep, &base, i, rep)?);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok((runs, base.bytes))
}

/// `threads` and `repeat` are not 0, there are points, and every fraction is positive.
fn check(sweep: &PoolSweep) -> Result<(), WorkloadError> {
    let bad = |s: &str| Err(WorkloadError::Config(s.to_string()));
    if sweep.threads == 0 || sweep.repeat == 0 || sweep.points.is_empty() {
        return bad("a pool sweep needs threads, repetitions and points");
    }
    if sweep.points.iter().any(|p| !(p.fraction > 0.0 && p.fraction.is_finite())) {
        return bad("pool fractions must be above 0");
    }
    Ok(())
}

/// [`run`] in **parts**, one per pool size (the points of one fraction, in their order): a part
/// runs its points `repeat` times, interleaved, before the next part begins, so that the
/// runs a ratio pairs (the same size and repetition) stay close in time. `kept` holds the runs of
/// parts an earlier run finished, which are not run again (a part is run whole or not at all);
/// after each part it runs, `save` gets every run so far, kept ones included. The base file is
/// loaded only if a part is left to run; then its size is returned, else `kept_bytes`.
///
/// # Errors
/// As [`run`] (the sweep is checked first), and what `save` returns.
pub fn run_parts<W: Workload>(
    workload: &W,
    sweep: &PoolSweep,
    progress: Progress,
    kept: (Vec<PoolRun>, u64),
    save: &mut SaveParts<'_>,
) -> Result<(Vec<PoolRun>, u64), Box<dyn std::error::Error>> {
    check(sweep)?;
    let (mut runs, kept_bytes) = kept;
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for (i, p) in sweep.points.iter().enumerate() {
        match parts.iter_mut().find(|part| sweep.points[part[0]].fraction == p.fraction) {
            Some(part) => part.push(i),
            None => parts.push(vec![i]),
        }
    }
    let done = |part: &[usize], runs: &[PoolRun]| {
        part.iter().all(|&i| (0..sweep.repeat).all(|rep| runs.iter().any(|r| r.point == i && r.rep == rep)))
    };
    // A part kept only in pieces is run again whole.
    let complete: Vec<bool> = parts.iter().map(|part| done(part, &runs)).collect();
    runs.retain(|r| parts.iter().zip(&complete).any(|(part, &c)| c && part.contains(&r.point)));
    let todo: Vec<&Vec<usize>> = parts.iter().zip(&complete).filter(|(_, &c)| !c).map(|(p, _)| p).collect();
    if todo.is_empty() {
        return Ok((runs, kept_bytes));
    }
    let base = BaseFile::load(workload, &sweep.dir, sweep.load_pool_bytes, progress)?;
    let total = u64::from(sweep.repeat) * todo.iter().map(|p| p.len() as u64).sum::<u64>();
    let bar = progress.counter(total, format!("{} runs", workload.name()));
    for part in todo {
        for rep in 0..sweep.repeat {
            for &i in part {
                runs.push(run_one(workload, sweep, &base, i, rep)?);
                bar.inc(1);
            }
        }
        save(&runs, base.bytes)?;
    }
    bar.finish_and_clear();
    Ok((runs, base.bytes))
}

/// What [`run_parts`] calls after each part: every run so far, and the loaded file's bytes.
pub type SaveParts<'a> = dyn FnMut(&[PoolRun], u64) -> Result<(), Box<dyn std::error::Error>> + 'a;

/// One cold run of point `i`, repetition `rep`, on a fresh copy of `base`.
fn run_one<W: Workload>(
    workload: &W,
    sweep: &PoolSweep,
    base: &BaseFile,
    i: usize,
    rep: u32,
) -> Result<PoolRun, WorkloadError> {
    let point = &sweep.points[i];
    let pool = pool_bytes(sweep, point, base.bytes);
    let (db, copy) = base.open_copy(0, point.mode, point.policy, pool, sweep.copy)?;
    let before = db.stats();
    let cpu_before = cpu::process_cpu_secs();
    let measurement = harness::run(workload, &db, sweep.threads, Until::Elapsed(sweep.duration))?;
    let cpu_secs = cpu::process_cpu_secs().zip(cpu_before).map(|(a, b)| a - b);
    let stats = db.stats().since(&before);
    // Every run leaves a consistent database, however small its pool.
    workload.verify(&db)?;
    db.close()?;
    let end_bytes = std::fs::metadata(&copy.0).map_err(io_error(&copy.0))?.len();
    drop(copy);
    Ok(PoolRun { point: i, rep, pool_bytes: pool, measurement, stats, cpu_secs, end_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::tpcc::{Tpcc, TpccConfig};

    /// `run_parts` runs a pool size's points, repetitions interleaved, before the next size; it
    /// saves after each size it ran; a size whose runs were all kept is not run again, one kept
    /// in pieces is run again whole, and with everything kept nothing is loaded.
    #[test]
    fn parts_run_one_pool_size_at_a_time_and_keep_what_finished() {
        let dir = tempfile::tempdir().unwrap();
        let tpcc = Tpcc::new(TpccConfig::tiny(1)).unwrap();
        let point = |fraction, mode| PoolPoint { mode, policy: PolicySpec::default(), fraction };
        let sweep = PoolSweep {
            points: vec![
                point(0.5, PoolMode::Traditional),
                point(0.5, PoolMode::Swizzling),
                point(2.0, PoolMode::Traditional),
            ],
            threads: 1,
            duration: Duration::from_millis(100),
            repeat: 2,
            dir: dir.path().to_path_buf(),
            load_pool_bytes: 64 << 20,
            min_pool_bytes: 256 * 8192,
            copy: CopyOptions::default(),
        };
        let mut saves = Vec::new();
        let mut save = |runs: &[PoolRun], _: u64| -> Result<(), Box<dyn std::error::Error>> {
            saves.push(runs.len());
            Ok(())
        };
        let (runs, bytes) = run_parts(&tpcc, &sweep, Progress::off(), (Vec::new(), 0), &mut save).unwrap();
        let order: Vec<(usize, u32)> = runs.iter().map(|r| (r.point, r.rep)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(saves, [4, 6], "saved after each pool size");
        assert!(bytes > 0);

        // The first size kept whole, the second in part: the first is not run again, the
        // second is, whole.
        let kept: Vec<PoolRun> = runs[..5].to_vec();
        let mut saves = Vec::new();
        let mut save = |runs: &[PoolRun], _: u64| -> Result<(), Box<dyn std::error::Error>> {
            saves.push(runs.len());
            Ok(())
        };
        let (again, _) = run_parts(&tpcc, &sweep, Progress::off(), (kept, bytes), &mut save).unwrap();
        assert_eq!(again.len(), 6);
        for (a, b) in again[..4].iter().zip(&runs[..4]) {
            assert_eq!(
                (a.point, a.rep, &a.measurement),
                (b.point, b.rep, &b.measurement),
                "kept as measured"
            );
        }
        assert_eq!(again[4..].iter().map(|r| (r.point, r.rep)).collect::<Vec<_>>(), [(2, 0), (2, 1)]);
        assert_eq!(saves, [6]);

        // Everything kept: nothing runs, nothing is loaded (no base file appears).
        let mut save =
            |_: &[PoolRun], _: u64| -> Result<(), Box<dyn std::error::Error>> { panic!("nothing ran") };
        let (all, b) = run_parts(&tpcc, &sweep, Progress::off(), (again, 12345), &mut save).unwrap();
        assert_eq!((all.len(), b), (6, 12345));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// Every point runs `repeat` times in interleaved order; a small pool misses and evicts, a
    /// pool beyond the data never evicts; the base file and the copies are gone afterwards.
    #[test]
    fn small_pools_miss_and_large_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let tpcc = Tpcc::new(TpccConfig::tiny(1)).unwrap();
        let point =
            |fraction| PoolPoint { mode: PoolMode::Swizzling, policy: PolicySpec::default(), fraction };
        let sweep = PoolSweep {
            points: vec![point(0.05), point(20.0)],
            threads: 1,
            duration: Duration::from_millis(300),
            repeat: 2,
            dir: dir.path().to_path_buf(),
            load_pool_bytes: 64 << 20,
            min_pool_bytes: 256 * 8192,
            copy: CopyOptions::default(),
        };
        let (runs, data_bytes) = run(&tpcc, &sweep, Progress::off()).unwrap();
        assert!(data_bytes > 0);
        assert_eq!(
            runs.iter().map(|r| (r.rep, r.point)).collect::<Vec<_>>(),
            [(0, 0), (0, 1), (1, 0), (1, 1)]
        );
        for r in &runs {
            assert!(r.measurement.operations() > 0, "{r:?}");
            if r.point == 1 {
                assert_eq!(r.stats.evictions, 0, "a pool 20 times the data evicted: {r:?}");
            }
        }
        let small_misses: u64 = runs.iter().filter(|r| r.point == 0).map(|r| r.stats.misses).sum();
        let small_evictions: u64 = runs.iter().filter(|r| r.point == 0).map(|r| r.stats.evictions).sum();
        assert!(small_misses > 0 && small_evictions > 0, "{runs:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
    }

    /// `Eviction { batch: Some(1), background: false }` reaches the runs' pools: each evictioner
    /// call frees at most one frame (a dirty victim is freed by a later call), where the default
    /// batches free several per call.
    #[test]
    fn an_eviction_batch_of_one_frees_at_most_one_frame_per_call() {
        let dir = tempfile::tempdir().unwrap();
        let tpcc = Tpcc::new(TpccConfig::tiny(1)).unwrap();
        let sweep = |eviction| PoolSweep {
            points: vec![
                PoolPoint { mode: PoolMode::Traditional, policy: PolicySpec::default(), fraction: 0.05 },
                PoolPoint { mode: PoolMode::Swizzling, policy: PolicySpec::default(), fraction: 0.05 },
            ],
            threads: 1,
            duration: Duration::from_millis(300),
            repeat: 1,
            dir: dir.path().to_path_buf(),
            load_pool_bytes: 64 << 20,
            min_pool_bytes: 256 * 8192,
            copy: CopyOptions { eviction, ..CopyOptions::default() },
        };
        let one = Eviction { batch: Some(1), background: false };
        let (runs, _) = run(&tpcc, &sweep(one), Progress::off()).unwrap();
        for r in &runs {
            let s = &r.stats;
            assert!(s.evictions > 0 && s.evictions <= s.eviction_rounds, "{r:?}");
        }
        let batched = Eviction { batch: None, background: false };
        let (runs, _) = run(&tpcc, &sweep(batched), Progress::off()).unwrap();
        for r in &runs {
            assert!(r.stats.evictions > 2 * r.stats.eviction_rounds, "{r:?}");
        }
    }
}
