//! `bench scan`: range scans of `--length` consecutive keys from a random start key, per buffer
//! mode: scans and scanned records per second. Every record a scan returns is checked (its key
//! the next one expected, its value the key's), so a scan that skips or repeats a record fails
//! the run. The records are those of `bench lookup` (8-byte keys, 120-byte values), one
//! database per mode, repetitions interleaved across modes.

use clap::Args;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::Serialize;
use std::error::Error;
use std::io::{self, Write};
use std::ops::Bound;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;
use swizzledb::{PoolMode, Stats, Tree};

use crate::experiments::common::{base_config, Common};
use crate::harness::buffer::{self, Config, Loaded, TempFile, RECORD_BYTES};
use crate::harness::buffer_report::{io_of, write_logging_note};
use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::support::stats::{ratio, summarize};
use crate::support::{text, units};
use crate::Usage;

/// The benchmark's name: its command, and the stem of its output files.
pub const NAME: &str = "scan";

/// Options of `bench scan`.
#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1_000_000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Records per scan: each scan reads this many consecutive keys from a uniformly random start
    #[arg(long, default_value = "100", value_parser = units::parse_positive_count)]
    length: u64,
    /// Buffer-pool size per database (64MiB, 1GiB, 512KiB or bytes) [default: records x 200
    /// bytes, at least 64MiB]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
}

/// Runs `bench scan`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &ScanArgs) -> Result<ExitCode, Box<dyn Error>> {
    if args.length > args.records {
        return Err(Usage(format!(
            "--length {} is longer than the {} records loaded",
            args.length, args.records
        ))
        .into());
    }
    let pool = args.pool.unwrap_or_else(|| buffer::default_pool_bytes(args.records));
    let mut cfg = base_config(NAME, &args.common, pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = args.records;
    experiment::execute(&Scan { cfg, length: args.length }, args.common.out.as_deref())
}

/// The plan: the buffer configuration (modes, pool, threads, repetitions) and the scan length.
pub struct Scan {
    /// Records, modes, pool, threads, timing and repetitions.
    pub cfg: Config,
    /// Records per scan.
    pub length: u64,
}

/// One measured phase of one mode.
pub struct ScanRun {
    /// 0-based repetition.
    pub repetition: usize,
    /// Scans finished.
    pub scans: u64,
    /// Records those scans returned.
    pub records: u64,
    /// Seconds measured.
    pub secs: f64,
    /// The buffer pool's counters over the phase.
    pub stats: Stats,
}

/// What one mode did: its measured phases, or why it stopped.
pub struct ModeScans {
    /// The buffer mode.
    pub mode: PoolMode,
    /// The measured phases, in order.
    pub runs: Vec<ScanRun>,
    /// The error that ended this mode, if one did.
    pub error: Option<String>,
}

/// One row of `scan.csv`: one mode and repetition.
#[derive(Serialize, Default)]
pub struct ScanRow {
    /// `scan`.
    pub experiment: String,
    /// `traditional`, `swizzling` or `main-memory`.
    pub mode: &'static str,
    /// Scanning threads.
    pub threads: usize,
    /// Records in the database.
    pub records: u64,
    /// Records per scan.
    pub scan_length: u64,
    /// Buffer-pool size in bytes.
    pub pool_bytes: u64,
    /// 0-based; repetitions alternate between modes.
    pub repetition: usize,
    /// Seconds measured.
    pub duration_s: f64,
    /// Scans finished per second.
    pub scans_per_sec: f64,
    /// Records returned per second.
    pub records_per_sec: f64,
    /// Fixes that found the page resident / all fixes.
    pub hit_ratio: Option<f64>,
    /// Pages read from the file.
    pub pages_read: u64,
    /// Whether a write-ahead log was on (never: the buffer alone).
    pub logging: bool,
    /// How misses were served: `direct`, `page-cache` or `none`.
    pub io: &'static str,
}

impl Experiment for Scan {
    const NAME: &'static str = NAME;
    type Row = ScanRow;
    type Results = Vec<ModeScans>;

    fn caption(&self) -> String {
        let c = &self.cfg;
        format!(
            "Range scans of {} consecutive records from a random key, {} records ({} of keys and values), \
             {} pool, {} thread(s), {} s per measurement, {} repetition(s)",
            text::thousands(self.length),
            text::thousands(c.records),
            text::bytes(c.records * RECORD_BYTES),
            text::bytes(c.pool_bytes as u64),
            c.threads,
            c.duration,
            c.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<ModeScans>, Box<dyn Error>> {
        run(&self.cfg, self.length, progress)
    }

    fn tables(&self, results: &Vec<ModeScans>, mut out: &mut dyn Write) -> io::Result<()> {
        write_logging_note(&mut out)?;
        let records_per_sec =
            |m: &ModeScans| summarize(&m.runs.iter().map(|r| r.records as f64 / r.secs).collect::<Vec<_>>());
        let measured = |mode: PoolMode| results.iter().find(|m| m.mode == mode && !m.runs.is_empty());
        let baseline = self
            .cfg
            .baseline
            .and_then(measured)
            .or_else(|| measured(PoolMode::MainMemory))
            .or_else(|| results.iter().find(|m| !m.runs.is_empty()));
        let base = baseline.and_then(records_per_sec).map(|s| s.median);
        let vs = format!("vs {}", baseline.map_or("-", |m| m.mode.name()));
        let mut table =
            vec![["mode", "scans/s", "records/s", "min..max records/s", vs.as_str(), "hit ratio"]
                .map(String::from)
                .to_vec()];
        for m in results {
            let mut row = vec![m.mode.name().to_string()];
            let (Some(records), None) = (records_per_sec(m), &m.error) else {
                row.push("failed".to_string());
                table.push(row);
                continue;
            };
            let scans = summarize(&m.runs.iter().map(|r| r.scans as f64 / r.secs).collect::<Vec<_>>());
            let (hits, misses) =
                m.runs.iter().fold((0, 0), |(h, x), r| (h + r.stats.hits, x + r.stats.misses));
            let count = |v: f64| text::thousands(v.round() as u64);
            row.extend([
                scans.map_or("-".into(), |s| count(s.median)),
                count(records.median),
                format!("{}..{}", count(records.min), count(records.max)),
                base.and_then(|b| ratio(records.median, b)).map_or("-".into(), |r| format!("{r:.2}x")),
                ratio(hits as f64, (hits + misses) as f64).map_or("-".into(), |h| format!("{h:.3}")),
            ]);
            table.push(row);
        }
        text::write_aligned(out, &table)?;
        for m in results {
            match &m.error {
                Some(e) if e.contains(m.mode.name()) => writeln!(out, "{e}")?,
                Some(e) => writeln!(out, "{} mode: {e}", m.mode)?,
                None => {}
            }
        }
        Ok(())
    }

    fn rows(&self, results: &Vec<ModeScans>) -> Vec<ScanRow> {
        let c = &self.cfg;
        results
            .iter()
            .flat_map(|m| {
                m.runs.iter().map(move |r| ScanRow {
                    experiment: c.experiment.clone(),
                    mode: m.mode.name(),
                    threads: c.threads,
                    records: c.records,
                    scan_length: self.length,
                    pool_bytes: c.pool_bytes as u64,
                    repetition: r.repetition,
                    duration_s: r.secs,
                    scans_per_sec: r.scans as f64 / r.secs,
                    records_per_sec: r.records as f64 / r.secs,
                    hit_ratio: ratio(r.stats.hits as f64, (r.stats.hits + r.stats.misses) as f64),
                    pages_read: r.stats.pages_read,
                    logging: buffer::LOGGING,
                    io: io_of(c.direct_io, r.stats.pages_read),
                })
            })
            .collect()
    }

    fn status(&self, results: &Vec<ModeScans>) -> ExitCode {
        if results.iter().any(|m| m.error.is_some()) {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// Loads one database per mode, then measures the modes interleaved, `cfg.repeat` times. An
/// engine error ends only its mode; a scan that returns a wrong record ends the run.
fn run(cfg: &Config, length: u64, progress: Progress) -> Result<Vec<ModeScans>, Box<dyn Error>> {
    let mut slots = Vec::new();
    for &mode in &cfg.modes {
        let mut result = ModeScans { mode, runs: Vec::new(), error: None };
        let path = cfg.dir.join(format!("swizzledb-{NAME}-{}-{}.swz", std::process::id(), mode.name()));
        let (db, file): (_, TempFile) = buffer::create(cfg, mode, path)?;
        let bar = progress.counter(cfg.records, format!("{mode}: loading"));
        let loaded = buffer::load(&db, cfg.records, &bar);
        bar.finish_and_clear();
        let live = match loaded {
            Ok(tree) => Some(Loaded { tree, db, _file: file }),
            Err(e) => {
                record_failure(&mut result, e.to_string());
                None
            }
        };
        slots.push((result, live));
    }
    for rep in 0..cfg.repeat {
        for (result, live) in &mut slots {
            let Some(loaded) = live else { continue };
            let seed = cfg.seed ^ ((rep as u64) << 40);
            let label = format!("{}: repetition {}/{}", result.mode, rep + 1, cfg.repeat);
            let phase = |secs: f64, seed: u64, what: &str| {
                scans(&loaded.tree, cfg, length, seed, || progress.wait(secs, format!("{label}: {what}")))
            };
            if cfg.warmup > 0.0 {
                if let Err(e) = phase(cfg.warmup, seed ^ (1 << 32), "warm-up") {
                    fail(result, live, e)?;
                    continue;
                }
            }
            let before = loaded.db.stats();
            match phase(cfg.duration, seed, "measuring") {
                Ok((scanned, records, secs)) => {
                    let stats = loaded.db.stats().since(&before);
                    progress.say(format_args!(
                        "{label}: {} scans/s",
                        text::thousands((scanned as f64 / secs) as u64)
                    ));
                    result.runs.push(ScanRun { repetition: rep, scans: scanned, records, secs, stats });
                }
                Err(e) => fail(result, live, e)?,
            }
        }
    }
    Ok(slots.into_iter().map(|(result, _)| result).collect())
}

/// Why a phase of scans ended early.
enum ScanError {
    /// The engine failed: ends this mode.
    Engine(String),
    /// A scan returned a wrong record: ends the run.
    Wrong(String),
}

/// Records an engine error in `result` and closes its database; a wrong record is the run's
/// error.
fn fail(result: &mut ModeScans, live: &mut Option<Loaded>, e: ScanError) -> Result<(), Box<dyn Error>> {
    match e {
        ScanError::Engine(e) => {
            record_failure(result, e);
            *live = None;
            Ok(())
        }
        ScanError::Wrong(msg) => Err(format!("{} mode: {msg}", result.mode).into()),
    }
}

/// Records why `result`'s mode stopped, and says it on stderr (naming the mode once).
fn record_failure(result: &mut ModeScans, msg: String) {
    if msg.contains(result.mode.name()) {
        eprintln!("error: {msg}");
    } else {
        eprintln!("error: {} mode: {msg}", result.mode);
    }
    result.error = Some(msg);
}

/// Scans on `cfg.threads` threads until `wait` returns: (scans, records, seconds).
fn scans(
    tree: &Tree,
    cfg: &Config,
    length: u64,
    seed: u64,
    wait: impl FnOnce(),
) -> Result<(u64, u64, f64), ScanError> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let tallies: Vec<Result<(u64, u64), ScanError>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || scanner(tree, cfg.records, length, seed ^ t as u64, stop))
            })
            .collect();
        wait();
        stop.store(true, Relaxed);
        workers.into_iter().map(|w| w.join().expect("scan thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let (mut scanned, mut records) = (0, 0);
    for t in tallies {
        let (s, r) = t?;
        scanned += s;
        records += r;
    }
    Ok((scanned, records, secs))
}

/// One thread's scans until `stop`: each from a uniformly random key, `length` records, every
/// record checked. Returns (scans, records).
fn scanner(
    tree: &Tree,
    records: u64,
    length: u64,
    seed: u64,
    stop: &AtomicBool,
) -> Result<(u64, u64), ScanError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut scanned, mut returned) = (0u64, 0u64);
    while !stop.load(Relaxed) {
        let first = rng.gen_range(0..=records - length);
        let from = first.to_be_bytes();
        let mut expected = first;
        for item in tree.range(Bound::Included(&from[..]), Bound::Unbounded).take(length as usize) {
            let (key, value) = item.map_err(|e| {
                stop.store(true, Relaxed);
                ScanError::Engine(e.to_string())
            })?;
            let want = expected.to_be_bytes();
            if key != want || !buffer::is_value_for(&value, &want) {
                stop.store(true, Relaxed);
                return Err(ScanError::Wrong(format!(
                    "a scan from key {first} returned a wrong record where key {expected} was due"
                )));
            }
            expected += 1;
        }
        if expected - first != length {
            stop.store(true, Relaxed);
            return Err(ScanError::Wrong(format!(
                "a scan from key {first} returned {} records, not {length}",
                expected - first
            )));
        }
        scanned += 1;
        returned += length;
    }
    Ok((scanned, returned))
}
