//! The "insert" workload (Graefe et al. 2014, Fig. 12): random-order insertions into an index
//! that fits in memory.
//!
//! Each repetition builds a fresh database per mode: `preload` records are inserted unmeasured,
//! then `records - preload` new records are inserted by `threads` threads and timed. Keys are a
//! bijective mix (splitmix64) of a counter, so consecutive inserts land at random places in the
//! tree and new keys interleave with preloaded ones. Repetitions alternate between the modes.

use crate::experiments::common::{base_config, Common, Outcome};
use crate::harness::buffer::{
    create, fail, new_histogram, value_for, Config, Latency, Measurement, ModeResult, Progress,
    LATENCY_SAMPLE,
};
use crate::harness::buffer_report::{self as report};
use crate::harness::experiment::{self, Experiment};
use crate::support::text;
use crate::support::units::{self};
use crate::Usage;
use clap::Args;
use std::error::Error as StdError;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Database, Error, Tree};

/// splitmix64's finalizer: a bijection on u64, so distinct counters give distinct keys.
#[must_use]
pub fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs the workload; `cfg.records` is the final size, `preload` of them unmeasured.
///
/// # Errors
/// Invalid settings or errors creating a database file; engine errors in one mode end only that
/// mode and are recorded in its result.
pub fn run(
    cfg: &Config,
    preload: u64,
    progress: Progress,
) -> Result<Vec<ModeResult>, Box<dyn std::error::Error>> {
    let mut results: Vec<ModeResult> = cfg
        .modes
        .iter()
        .map(|&mode| ModeResult { mode, load_secs: None, loaded: preload, runs: Vec::new(), error: None })
        .collect();
    for rep in 0..cfg.repeat {
        for result in &mut results {
            if result.error.is_some() {
                continue;
            }
            let mode = result.mode;
            let path = cfg.dir.join(format!("swizzledb-insert-{}-{}.swz", std::process::id(), mode.name()));
            let (db, _file) = create(cfg, mode, path)?;
            let outcome = (|| -> Result<Measurement, Error> {
                let tree = db.create_tree("insert")?;
                let start = Instant::now();
                insert_range(&tree, 0, preload, 1, 0).map(drop)?;
                result.load_secs.get_or_insert(start.elapsed().as_secs_f64());
                measure(cfg, &db, &tree, preload, rep)
            })();
            match outcome {
                Ok(m) => {
                    progress.say(format_args!(
                        "{mode}: repetition {}/{}: {} inserts/s",
                        rep + 1,
                        cfg.repeat,
                        crate::support::text::thousands(m.throughput().round() as u64)
                    ));
                    result.runs.push(m);
                }
                Err(e) => fail(result, &e),
            }
            // `_file` deletes the database when it goes out of scope, after `db` is closed.
            drop(db);
        }
    }
    Ok(results)
}

/// Inserts counters `from + t, from + t + step, ...` below `to`; returns the sampled latencies.
fn insert_range(
    tree: &Tree,
    from: u64,
    to: u64,
    step: u64,
    t: u64,
) -> Result<hdrhistogram::Histogram<u64>, Error> {
    let mut hist = new_histogram();
    let mut i = from + t;
    let mut n = 0u64;
    while i < to {
        let key = mix(i).to_be_bytes();
        let timed = n.is_multiple_of(LATENCY_SAMPLE).then(Instant::now);
        tree.insert(&key, &value_for(&key))?;
        if let Some(t0) = timed {
            hist.saturating_record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1));
        }
        i += step;
        n += 1;
    }
    Ok(hist)
}

/// The timed phase: `cfg.threads` threads insert the counters `preload..cfg.records`.
fn measure(cfg: &Config, db: &Database, tree: &Tree, preload: u64, rep: usize) -> Result<Measurement, Error> {
    let threads = cfg.threads as u64;
    let before = db.stats();
    let start = Instant::now();
    let hists: Vec<Result<hdrhistogram::Histogram<u64>, Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || insert_range(tree, preload, cfg.records, threads, t)))
            .collect();
        workers.into_iter().map(|w| w.join().expect("insert thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut hist = new_histogram();
    for h in hists {
        hist.add(&h?).expect("histograms with equal bounds");
    }
    let pool = db.pool();
    Ok(Measurement {
        repetition: rep,
        ops: cfg.records - preload,
        secs,
        stats: db.stats().since(&before),
        latency: Latency {
            p50_ns: hist.value_at_quantile(0.5),
            p99_ns: hist.value_at_quantile(0.99),
            p999_ns: hist.value_at_quantile(0.999),
            max_ns: hist.max(),
        },
        resident_bytes: (pool.resident_pages() * pool.page_size()) as u64,
        started: start,
        cpu_secs: None,
        line_ns: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_injective_on_a_sample() {
        let keys: std::collections::HashSet<u64> = (0..100_000).map(mix).collect();
        assert_eq!(keys.len(), 100_000);
    }
}

#[derive(Args)]
pub struct InsertArgs {
    #[command(flatten)]
    common: Common,
    /// Records in the database at the end
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Records inserted (unmeasured) before the timed insertions [default: records / 6, as
    /// Graefe et al.'s 10M before 50M]
    #[arg(long, value_parser = units::parse_count)]
    preload: Option<u64>,
    /// Buffer-pool size per database [default: records x 320 bytes, at least 64MiB: the index
    /// fits in memory]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
}

/// Pool bytes per record for random-order inserts: splits leave leaves about 70% full.
pub const INSERT_POOL_BYTES_PER_RECORD: u64 = 320;

/// Runs `bench insert`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &InsertArgs) -> Result<ExitCode, Box<dyn StdError>> {
    execute_as("insert", &args.common, args.records, args.preload, args.pool)
}

/// Runs the insert workload as `experiment` (`insert` or `graefe-fig12`, which adds its check).
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute_as(
    experiment: &'static str,
    common: &Common,
    records: u64,
    preload: Option<u64>,
    pool: Option<u64>,
) -> Result<ExitCode, Box<dyn StdError>> {
    let plan = plan(experiment, common, records, preload, pool)?;
    experiment::execute(&plan, common.out.as_deref())
}

/// The plan of the insert workload as `experiment` (`insert` or `graefe-fig12`).
///
/// # Errors
/// Bad options.
pub fn plan(
    experiment: &'static str,
    common: &Common,
    records: u64,
    preload: Option<u64>,
    pool: Option<u64>,
) -> Result<InsertPlan, Usage> {
    let preload = preload.unwrap_or(records / 6);
    if preload >= records {
        return Err(Usage(format!("--preload {preload} must be below --records {records}")));
    }
    let pool = pool.unwrap_or_else(|| records.saturating_mul(INSERT_POOL_BYTES_PER_RECORD).max(64 << 20));
    let mut cfg = base_config(experiment, common, pool).map_err(Usage)?;
    cfg.records = records;
    cfg.working_set = records;
    cfg.timed_ops = Some(records - preload);
    Ok(InsertPlan { name: experiment, cfg, preload, claims: |_| Vec::new() })
}

/// The plan of `bench insert` and `experiment graefe-fig12`.
pub struct InsertPlan {
    /// `insert` or `graefe-fig12` (which adds the paper's check).
    pub name: &'static str,
    /// Modes, records, repetitions; `timed_ops` are the timed inserts.
    pub cfg: Config,
    /// Records inserted, unmeasured, before.
    pub preload: u64,
    /// The paper's checks held against the results (`graefe-fig12` sets them; `insert` has
    /// none).
    pub claims: fn(&[ModeResult]) -> Vec<crate::harness::experiment::Check>,
}

impl Experiment for InsertPlan {
    const NAME: &'static str = "insert";
    type Row = crate::harness::buffer_report::Record;
    type Results = Vec<ModeResult>;

    fn name(&self) -> &'static str {
        self.name
    }

    fn caption(&self) -> String {
        format!(
            "{} new records inserted in random order after {} preloaded; throughput = inserts/s, load = preload time; \
             pool {}: {} (column io: none where no page was read)",
            text::thousands(self.cfg.records - self.preload),
            text::thousands(self.preload),
            text::bytes(self.cfg.pool_bytes as u64),
            report::io_text(self.cfg.direct_io)
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<ModeResult>, Box<dyn StdError>> {
        run(&self.cfg, self.preload, progress)
    }

    fn tables(&self, results: &Vec<ModeResult>, mut out: &mut dyn Write) -> io::Result<()> {
        report::write_logging_note(&mut out)?;
        writeln!(out)?;
        report::print_table(&mut out, &self.cfg, results)
    }

    fn checks(&self, results: &Vec<ModeResult>) -> Vec<crate::harness::experiment::Check> {
        (self.claims)(results)
    }

    fn rows(&self, results: &Vec<ModeResult>) -> Vec<crate::harness::buffer_report::Record> {
        report::records(&self.cfg, results)
    }

    fn charts(&self, results: &Vec<ModeResult>) -> Vec<(String, crate::support::plot::Chart)> {
        let chart = report::repetition_chart(
            "Random-order insertions (Graefe et al. 2014, Fig. 12)",
            &self.cfg,
            results,
        );
        vec![(self.name.to_string(), chart)]
    }

    fn status(&self, results: &Vec<ModeResult>) -> ExitCode {
        Outcome { points: vec![results.clone()], peers: Vec::new(), rows: Vec::new() }.code(false)
    }
}
