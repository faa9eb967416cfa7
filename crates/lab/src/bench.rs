//! What the TPC-B and YCSB bench drivers share: the database settings measured (buffer mode ×
//! logging × locking), scratch directories, checks of the common plan fields, medians.

use std::path::{Path, PathBuf};
use std::time::Duration;
use swizzledb::{CommitMode, Database, PolicySpec, PoolMode};

use crate::workload::WorkloadError;

/// One SwizzleDB configuration of a bench run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Buffer mode.
    pub mode: PoolMode,
    /// Write-ahead logging (commits asynchronous).
    pub logging: bool,
    /// Record locking.
    pub locking: bool,
}

impl Setting {
    /// Every combination, modes outermost.
    pub(crate) fn all(modes: &[PoolMode], logging: &[bool], locking: &[bool]) -> Vec<Setting> {
        let mut out = Vec::new();
        for &mode in modes {
            for &logging in logging {
                for &locking in locking {
                    out.push(Setting { mode, logging, locking });
                }
            }
        }
        out
    }

    /// `traditional, logging on, locking off`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("{}, logging {}, locking {}", self.mode, on_off(self.logging), on_off(self.locking))
    }

    /// Creates the database `name` in `dir` with this setting (logging commits asynchronously).
    pub(crate) fn create(
        &self,
        dir: &Path,
        name: &str,
        pool: u64,
        policy: Option<PolicySpec>,
    ) -> Result<Database, WorkloadError> {
        let path = dir.join(format!(
            "{name}-{}-log-{}-lock-{}.swz",
            self.mode,
            on_off(self.logging),
            on_off(self.locking)
        ));
        let mut b = Database::builder()
            .mode(self.mode)
            .pool_bytes(usize::try_from(pool).unwrap_or(usize::MAX))
            .logging(self.logging)
            .locking(self.locking);
        if self.logging {
            b = b.commit_mode(CommitMode::Async);
        }
        if let Some(p) = policy {
            b = b.policy(p);
        }
        Ok(b.create(&path)?)
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

/// Checks the plan fields every bench has.
pub(crate) fn validate_common(
    threads: &[usize],
    duration: Duration,
    repeat: u32,
    modes: &[PoolMode],
    logging: &[bool],
    locking: &[bool],
) -> Result<(), WorkloadError> {
    let bad = |s: &str| Err(WorkloadError::Config(s.into()));
    if threads.is_empty() || threads.contains(&0) {
        return bad("--threads needs thread counts of at least 1");
    }
    if duration.is_zero() {
        return bad("--duration must be above 0");
    }
    if repeat == 0 {
        return bad("--repeat must be at least 1");
    }
    if modes.is_empty() || logging.is_empty() || locking.is_empty() {
        return bad("--modes, --logging and --locking each need at least one value");
    }
    Ok(())
}

/// Checks that `pool` bytes can run a workload that loads `data` bytes of records (`what`
/// says whose, for the message).
pub(crate) fn validate_pool(
    pool: u64,
    data: u64,
    modes: &[PoolMode],
    what: &str,
) -> Result<(), WorkloadError> {
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

/// Thread-seconds a plan measures per database (for sizing its pool).
pub(crate) fn thread_seconds(threads: &[usize], duration: Duration, repeat: u32) -> f64 {
    threads.iter().map(|&t| t as f64 * duration.as_secs_f64() * f64::from(repeat)).sum()
}

/// The median (NaN for none).
pub(crate) fn median(v: Vec<f64>) -> f64 {
    crate::stats::median(&v).unwrap_or(f64::NAN)
}
