//! The options every workload benchmark (`bench tpcc`, `bench tpcb`, `bench ycsb`) shares, and
//! running a workload plan with its progress on stderr.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;
use swizzledb::{PolicySpec, PoolMode};

use crate::support::progress::Progress;
use crate::support::units;
use crate::workloads::bench::BenchPlan;
use crate::workloads::WorkloadError;
use crate::Usage;

/// Threads, time, repetitions, the configurations measured (buffer mode × logging × locking ×
/// optimistic descents), pool, policy and directories.
#[derive(Args, Debug)]
pub struct WorkloadOptions {
    /// Thread counts, comma-separated
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Vec<u16>,
    /// Seconds per measurement
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    pub duration: f64,
    /// Measurements per configuration, interleaved; the table shows medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub repeat: u16,
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    pub modes: units::Modes,
    /// Logging settings, comma-separated: on, off (with logging, commits are asynchronous)
    #[arg(long, default_value = "off", value_delimiter = ',', value_parser = parse_on_off)]
    pub logging: Vec<bool>,
    /// Record-locking settings, comma-separated: on, off
    #[arg(long, default_value = "off", value_delimiter = ',', value_parser = parse_on_off)]
    pub locking: Vec<bool>,
    /// Optimistic-descent settings, comma-separated: on, off. On: tree descents read inner
    /// nodes without latches, validated by version; off: they couple shared latches. Applies
    /// to the swizzling and main-memory modes; traditional mode always couples latches and is
    /// measured once, as off
    #[arg(long, default_value = "on", value_delimiter = ',', value_parser = parse_on_off)]
    pub optimistic: Vec<bool>,
    /// Buffer-pool size per database [default: twice the loaded records plus what the
    /// measurements add, so that everything stays in memory]. The pool's memory is faulted in
    /// when the database is made (LabOptions::prefault), so runs do not measure its first touch
    #[arg(long, value_parser = crate::experiments::common::parse_default_page_pool)]
    pub pool: Option<u64>,
    /// Replacement policy [default: the engine's, gclock]
    #[arg(long)]
    pub policy: Option<PolicySpec>,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    pub dir: Option<PathBuf>,
    /// Directory for the result files, <command>.csv and .json (created if missing)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl WorkloadOptions {
    /// The thread counts, each once, in the order given.
    #[must_use]
    pub fn threads(&self) -> Vec<usize> {
        dedup(&self.threads).into_iter().map(usize::from).collect()
    }

    /// The length of one measurement.
    #[must_use]
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration)
    }

    /// The buffer modes.
    #[must_use]
    pub fn modes(&self) -> Vec<PoolMode> {
        self.modes.0.clone()
    }

    /// The logging settings, each once.
    #[must_use]
    pub fn logging(&self) -> Vec<bool> {
        dedup(&self.logging)
    }

    /// The locking settings, each once.
    #[must_use]
    pub fn locking(&self) -> Vec<bool> {
        dedup(&self.locking)
    }

    /// The optimistic-descent settings, each once.
    #[must_use]
    pub fn optimistic(&self) -> Vec<bool> {
        dedup(&self.optimistic)
    }

    /// The scratch directory.
    #[must_use]
    pub fn dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    /// The plan these options make, around the workload's own part.
    #[must_use]
    pub fn plan<W>(&self, workload: W) -> BenchPlan<W> {
        BenchPlan {
            workload,
            threads: self.threads(),
            duration: self.duration(),
            repeat: u32::from(self.repeat),
            modes: self.modes(),
            logging: self.logging(),
            locking: self.locking(),
            optimistic: self.optimistic(),
            pool_bytes: self.pool,
            policy: self.policy,
            dir: self.dir(),
        }
    }
}

/// `on` or `off`.
///
/// # Errors
/// Anything else.
pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("{other:?} is neither on nor off")),
    }
}

/// `v` with repeated items dropped, in the order of their first appearance.
#[must_use]
pub fn dedup<T: PartialEq + Copy>(v: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for &x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// The error of a plan refused before anything ran: a path it cannot use
/// ([`WorkloadError::UnusablePath`]) stays one, anything else is a [`Usage`] error.
pub fn refusal(e: WorkloadError) -> Box<dyn Error> {
    match e {
        WorkloadError::UnusablePath(e) => crate::UnusablePath(e).into(),
        e => Usage(e.to_string()).into(),
    }
}

/// Runs a workload plan with its progress lines on stderr (when progress is on); a bad plan
/// ([`WorkloadError::Config`]) becomes a [`Usage`] error, a path it cannot use
/// ([`WorkloadError::UnusablePath`]) an [`UnusablePath`](crate::UnusablePath).
///
/// # Errors
/// The plan is bad, the database failed, or a check after the run failed.
pub fn run_logged<T>(
    progress: Progress,
    run: impl FnOnce(&mut dyn Write) -> Result<T, WorkloadError>,
) -> Result<T, Box<dyn Error>> {
    let mut log: Box<dyn Write> =
        if progress.is_on() { Box::new(io::stderr()) } else { Box::new(io::sink()) };
    match run(&mut log) {
        Err(e @ (WorkloadError::Config(_) | WorkloadError::UnusablePath(_))) => Err(refusal(e)),
        r => Ok(r?),
    }
}
