//! The "drift" workload (Graefe et al. 2014, Fig. 13): a hot key range that moves.
//!
//! The database holds `records` records, far more than the pool; lookups go uniformly to a hot
//! range of `hot` records. Every `interval` seconds the range slides by a quarter of its length:
//! 25% of the hot set is dropped and 25% new keys join. Throughput is sampled every `sample`
//! seconds, giving a time series per mode: a dip at every shift (misses on the new quarter) and
//! the steady state between shifts.

use crate::experiment::{self, Experiment};
use crate::experiments::common::{base_config, Common, Outcome};
use crate::harness::buffer::RECORD_BYTES;
use crate::harness::buffer::{create, fail, is_value_for, load, Config, ModeResult, Progress, LOGGING};
use crate::harness::buffer_report::{self as report};
use crate::stats::{summarize, Summary};
use crate::text::{thousands, write_aligned};
use crate::units::{self};
use crate::{text, Usage};
use clap::Args;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::error::Error as StdError;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use swizzledb::{Error, PoolMode, Stats, Tree};

/// Drift parameters on top of [`Config`] (whose `working_set` is the hot-set size in records).
#[derive(Clone, Copy, Debug)]
pub struct Drift {
    /// Seconds between shifts of the hot range.
    pub interval: f64,
    /// Number of shifts measured (the run lasts `(shifts + 1) * interval` seconds).
    pub shifts: u32,
    /// Seconds per throughput sample.
    pub sample: f64,
}

/// One throughput sample.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Sample {
    /// Experiment name.
    pub experiment: String,
    /// Buffer mode.
    pub mode: String,
    /// Repetition, from 0.
    pub repetition: usize,
    /// Seconds since the measurement started (end of the sample).
    pub t_s: f64,
    /// Which hot range was active (0 = the initial one).
    pub phase: u32,
    /// Lookups per second during the sample.
    pub throughput: f64,
    /// Hits / fixes during the sample.
    pub hit_ratio: f64,
    /// Whether a write-ahead log was on (never: this measures the buffer).
    pub logging: bool,
}

/// Runs the workload: per repetition and mode, load, then one drifting measurement.
///
/// # Errors
/// Invalid settings, errors creating a file, or a wrong value read (verification).
pub fn run(
    cfg: &Config,
    drift: Drift,
    progress: Progress,
) -> Result<(Vec<ModeResult>, Vec<Sample>), Box<dyn std::error::Error>> {
    let mut results: Vec<ModeResult> = cfg
        .modes
        .iter()
        .map(|&mode| ModeResult { mode, load_secs: None, loaded: cfg.records, runs: Vec::new(), error: None })
        .collect();
    let mut samples = Vec::new();
    for rep in 0..cfg.repeat {
        for result in &mut results {
            if result.error.is_some() {
                continue;
            }
            let mode = result.mode;
            let path = cfg.dir.join(format!("swizzledb-drift-{}-{}.swz", std::process::id(), mode.name()));
            let (db, _file) = create(cfg, mode, path)?;
            let bar = progress.counter(cfg.records, format!("{mode}: loading"));
            let start = Instant::now();
            let loaded = load(&db, cfg.records, &bar);
            bar.finish_and_clear();
            let tree = match loaded {
                Ok(t) => t,
                Err(e) => {
                    fail(result, &e);
                    continue;
                }
            };
            result.load_secs.get_or_insert(start.elapsed().as_secs_f64());
            let stats = || db.stats();
            match measure(cfg, drift, &tree, &stats, mode, rep) {
                Ok((m, s)) => {
                    progress.say(format_args!(
                        "{mode}: repetition {}/{}: {} lookups/s overall",
                        rep + 1,
                        cfg.repeat,
                        crate::text::thousands(m.throughput().round() as u64)
                    ));
                    result.runs.push(m);
                    samples.extend(s.into_iter().map(|mut x| {
                        x.experiment.clone_from(&cfg.experiment);
                        x
                    }));
                }
                Err(Failure::Engine(e)) => fail(result, &e),
                Err(Failure::Verify(msg)) => return Err(format!("{mode} mode: {msg}").into()),
            }
        }
    }
    Ok((results, samples))
}

enum Failure {
    Engine(Error),
    Verify(String),
}

fn measure(
    cfg: &Config,
    drift: Drift,
    tree: &Tree,
    stats: &dyn Fn() -> Stats,
    mode: PoolMode,
    rep: usize,
) -> Result<(crate::harness::buffer::Measurement, Vec<Sample>), Failure> {
    let hot = cfg.working_set.min(cfg.records);
    let step = (hot / 4).max(1);
    // The hot range starts at `base` (a multiple of `step`) and wraps around the key space.
    let base = AtomicU64::new(0);
    let ops = AtomicU64::new(0);
    let bad = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let total_secs = drift.interval * f64::from(drift.shifts + 1);
    let mut samples = Vec::new();
    let before = stats();
    let start = Instant::now();
    let errors: Vec<Option<Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let (base, ops, bad, stop) = (&base, &ops, &bad, &stop);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (t as u64) ^ ((rep as u64) << 40));
                    while !stop.load(Relaxed) {
                        let b = base.load(Relaxed);
                        for _ in 0..256 {
                            let k = (b + rng.gen_range(0..hot)) % cfg.records;
                            let key = k.to_be_bytes();
                            match tree.get_with(&key, |v| v.is_some_and(|v| is_value_for(v, &key))) {
                                Ok(true) => {}
                                Ok(false) => {
                                    bad.fetch_add(1, Relaxed);
                                }
                                Err(e) => {
                                    stop.store(true, Relaxed);
                                    return Some(e.into());
                                }
                            }
                        }
                        ops.fetch_add(256, Relaxed);
                    }
                    None
                })
            })
            .collect();
        // The sampler: shifts the range every interval, records throughput every sample.
        let mut last = (0u64, stats(), Instant::now());
        let mut phase = 0u32;
        while !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_secs_f64(drift.sample));
            let now = Instant::now();
            let t = now.duration_since(start).as_secs_f64();
            let (n, st) = (ops.load(Relaxed), stats());
            let d = st.since(&last.1);
            samples.push(Sample {
                experiment: String::new(),
                mode: mode.name().to_string(),
                repetition: rep,
                t_s: t,
                phase,
                throughput: (n - last.0) as f64 / now.duration_since(last.2).as_secs_f64(),
                hit_ratio: if d.hits + d.misses == 0 {
                    1.0
                } else {
                    d.hits as f64 / (d.hits + d.misses) as f64
                },
                logging: LOGGING,
            });
            last = (n, st, now);
            if t >= total_secs {
                stop.store(true, Relaxed);
            } else if t >= drift.interval * f64::from(phase + 1) {
                phase += 1;
                base.store(u64::from(phase) * step % cfg.records, Relaxed);
            }
        }
        workers.into_iter().map(|w| w.join().expect("lookup thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = errors.into_iter().flatten().next() {
        return Err(Failure::Engine(e));
    }
    let wrong = bad.load(Relaxed);
    if wrong > 0 {
        return Err(Failure::Verify(format!("verification failed: {wrong} missing or wrong values")));
    }
    let m = crate::harness::buffer::Measurement {
        repetition: rep,
        ops: ops.load(Relaxed),
        secs,
        stats: stats().since(&before),
        latency: crate::harness::buffer::Latency::default(),
        resident_bytes: 0,
        started: start,
        cpu_secs: None,
    };
    Ok((m, samples))
}

#[derive(Args)]
pub struct DriftArgs {
    #[command(flatten)]
    common: Common,
    /// Records in the database (far more than the pool holds)
    #[arg(long, default_value = "8M", value_parser = units::parse_positive_count)]
    records: u64,
    /// Size of the hot key range (bytes of keys and values, 128 per record)
    #[arg(long, default_value = "16MiB", value_parser = units::parse_size)]
    hot: u64,
    /// Buffer-pool size per database
    #[arg(long, default_value = "128MiB", value_parser = units::parse_size)]
    pool: u64,
    /// Seconds between shifts of the hot range
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    interval: f64,
    /// Shifts measured
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    shifts: u32,
    /// Seconds per throughput sample
    #[arg(long, default_value = "0.5", value_parser = units::parse_positive_seconds)]
    sample: f64,
}

/// Runs `bench drift`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &DriftArgs) -> Result<ExitCode, Box<dyn StdError>> {
    execute_as("drift", args)
}

/// Runs the drift workload as `experiment` (`drift` or `graefe-fig13`).
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute_as(experiment: &'static str, args: &DriftArgs) -> Result<ExitCode, Box<dyn StdError>> {
    let hot = args.hot / RECORD_BYTES;
    if hot == 0 || hot > args.records {
        return Err(Usage(format!(
            "--hot {} must hold at least one record and at most the {} records of --records",
            text::bytes(args.hot),
            args.records
        ))
        .into());
    }
    let mut cfg = base_config(experiment, &args.common, args.pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = hot;
    cfg.duration = args.interval * f64::from(args.shifts + 1);
    cfg.warmup = 0.0;
    let drift = Drift { interval: args.interval, shifts: args.shifts, sample: args.sample };
    let plan = DriftPlan { name: experiment, cfg, drift, hot_bytes: args.hot };
    experiment::execute(&plan, args.common.out.as_deref())
}

/// The plan of `bench drift` and `experiment graefe-fig13`.
pub struct DriftPlan {
    /// `drift` or `graefe-fig13`.
    pub name: &'static str,
    /// Modes, records (working set = the hot range), repetitions.
    pub cfg: Config,
    /// The drift.
    pub drift: Drift,
    /// Bytes of the hot range.
    pub hot_bytes: u64,
}

/// Per-mode results and the throughput series.
pub struct DriftResults {
    /// Per mode.
    pub results: Vec<ModeResult>,
    /// The series.
    pub samples: Vec<Sample>,
}

impl Experiment for DriftPlan {
    const NAME: &'static str = "drift";
    type Row = crate::harness::buffer_report::Record;
    type Results = DriftResults;

    fn name(&self) -> &'static str {
        self.name
    }

    fn caption(&self) -> String {
        format!(
            "hot range of {} slides by a quarter every {} s, {} shifts; throughput = lookups/s over the whole run",
            text::bytes(self.hot_bytes),
            self.drift.interval,
            self.drift.shifts
        )
    }

    fn run(&self, progress: Progress) -> Result<DriftResults, Box<dyn StdError>> {
        let (results, samples) = run(&self.cfg, self.drift, progress)?;
        Ok(DriftResults { results, samples })
    }

    fn tables(&self, r: &DriftResults, mut out: &mut dyn Write) -> io::Result<()> {
        report::write_logging_note(&mut out)?;
        writeln!(out)?;
        report::print_table(&mut out, &self.cfg, &r.results)?;
        print_drift_summary(&mut out, &r.samples, self.drift.interval, &self.cfg.modes)
    }

    fn rows(&self, r: &DriftResults) -> Vec<crate::harness::buffer_report::Record> {
        report::records(&self.cfg, &r.results)
    }

    fn charts(&self, r: &DriftResults) -> Vec<(String, crate::plot::Chart)> {
        let chart = report::drift_chart(
            "Drifting working set (Graefe et al. 2014, Fig. 13)",
            &self.cfg,
            &r.samples,
            self.drift.interval,
        );
        vec![(self.name.to_string(), chart)]
    }

    fn status(&self, r: &DriftResults) -> ExitCode {
        Outcome { points: vec![r.results.clone()], peers: Vec::new(), rows: Vec::new() }.code(true)
    }

    fn write_extra(&self, r: &DriftResults, out: Option<&std::path::Path>) -> Result<(), Box<dyn StdError>> {
        if let Some(dir) = out {
            crate::output::write_rows(dir, &format!("{}-series", self.name), &r.samples)?;
        }
        Ok(())
    }
}

/// Graefe et al. Fig. 13: steady-state throughput (second half of every interval) and the
/// throughput right after each shift (first sample of an interval), per mode, and the check.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_drift_summary(
    out: &mut impl Write,
    samples: &[Sample],
    interval: f64,
    modes: &[PoolMode],
) -> io::Result<()> {
    let in_phase = |s: &Sample| s.t_s - interval * f64::from(s.phase);
    let pick = |mode: PoolMode, steady: bool| -> Option<Summary> {
        let v: Vec<f64> = samples
            .iter()
            .filter(|s| s.mode == mode.name())
            .filter(|s| {
                if steady {
                    in_phase(s) > interval / 2.0
                } else {
                    in_phase(s) <= interval / 4.0 && s.phase > 0
                }
            })
            .map(|s| s.throughput)
            .collect();
        summarize(&v)
    };
    writeln!(out)?;
    let mut table =
        vec![vec!["mode".to_string(), "steady/s".into(), "after shift/s".into(), "recovery".into()]];
    for &m in modes {
        let (st, sh) = (pick(m, true), pick(m, false));
        let Some(st) = st else { continue };
        let cell = |v: Option<Summary>| v.map_or("-".to_string(), |s| thousands(s.median.round() as u64));
        let rec = sh.map_or("-".to_string(), |sh| format!("{:.2}", sh.median / st.median));
        table.push(vec![m.name().to_string(), cell(Some(st)), cell(sh), rec]);
    }
    write_aligned(out, &table)?;
    writeln!(
        out,
        "steady = medians of samples in the second half of each interval; after shift = first quarter"
    )?;
    let (t, s) = (pick(PoolMode::Traditional, true), pick(PoolMode::Swizzling, true));
    if let (Some(t), Some(s)) = (t, s) {
        let v = s.median / t.median;
        let ok = if v > 1.0 { "✓" } else { "✗" };
        writeln!(out, "\ndrift: swizzling/traditional in the steady state = {v:.2} (paper: ~2) {ok}")?;
    }
    Ok(())
}
