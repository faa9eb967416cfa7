//! `bench lookup`: random verified lookups with every knob exposed, optionally swept.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::engine::EngineName;
use crate::experiments::common::{
    base_config, measure_points_with_peers, parse_zipf, points, print_points, Common, Outcome,
};
use crate::experiments::workload_options::dedup;
use crate::harness::buffer::{self, Config, RECORD_BYTES};
use crate::harness::buffer_report::Record;
use crate::harness::buffer_report::{self as report};
use crate::harness::experiment::{self, Experiment};
use crate::support::plot::Chart;
use crate::support::progress::Progress;
use crate::support::units::{self, Sweep, SweepVar, WorkingSet};
use crate::{UnusablePath, Usage};

/// The benchmark's name: its command, and the stem of its output files.
pub const NAME: &str = "lookup";

/// Options of `bench lookup`.
#[derive(Args)]
pub struct LookupArgs {
    /// Engines, comma-separated, measured interleaved: swizzledb (in each of --mode), lmdb (the
    /// same records and lookups, --lmdb-reads-per-txn lookups per read-only transaction, no durability as
    /// SwizzleDB runs here without a log; --mode, --pool, --page-size, --policy and
    /// --direct-io do not apply to it; keep --dir on a tmpfs, docs/peers.md)
    #[arg(long, default_value = "swizzledb", value_delimiter = ',')]
    engine: Vec<String>,
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1_000_000, 1e6 or 1M); refused before anything is written when
    /// their keys and values, 128 bytes each per database on disk, exceed the room left in --dir
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Part of the key range that is looked up: a fraction (0.25, 25%) or bytes of keys and
    /// values (64MiB; 128 bytes per record) [default: all records]
    #[arg(long, value_parser = units::parse_working_set)]
    working_set: Option<WorkingSet>,
    /// Buffer-pool size per database (64MiB, 1GiB, 512KiB or bytes) [default: records x 200
    /// bytes, at least 64MiB]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
    /// Run a grid instead of one point: records=8MiB..256MiB:x2 (database size) or
    /// working-set=16MiB..1GiB:x2 (accessed range), or a list records=8MiB,64MiB
    #[arg(long, value_parser = units::parse_sweep)]
    sweep: Option<Sweep>,
    /// Append one row per mode and repetition to this CSV file (created if missing, in a
    /// directory that exists; checked before the run)
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Zipf exponent of key popularity (hot keys scattered over the tree); 0 for uniform keys
    #[arg(long, default_value = "0", value_parser = parse_zipf)]
    zipf: f64,
    /// LMDB's lookups per read-only transaction: each lookup thread keeps one transaction for
    /// this many lookups, then begins another, as LMDB's own read benchmarks do; 1 begins one
    /// per lookup (what a read-only transaction costs, on top of the lookup)
    #[arg(long, default_value_t = buffer::LMDB_READS_PER_TXN, value_parser = clap::value_parser!(u32).range(1..))]
    lmdb_reads_per_txn: u32,
}

/// Runs `bench lookup`.
///
/// # Errors
/// Bad options (as [`Usage`]), a `--csv` that cannot be written (as [`UnusablePath`]), or a
/// database or I/O failure.
pub fn execute(args: &LookupArgs) -> Result<ExitCode, Box<dyn Error>> {
    let engines: Vec<EngineName> = args
        .engine
        .iter()
        .map(|e| EngineName::parse(e))
        .collect::<Result<_, _>>()
        .map_err(|e| Usage(e.to_string()))?;
    let engines = dedup(&engines);
    let largest = args.sweep.as_ref().filter(|s| s.var == SweepVar::Records).and_then(|s| s.values.last());
    let default_pool = buffer::default_pool_bytes(largest.map_or(args.records, |b| b / RECORD_BYTES));
    let mut base = base_config(NAME, &args.common, args.pool.unwrap_or(default_pool)).map_err(Usage)?;
    base.zipf = (args.zipf > 0.0).then_some(args.zipf);
    base.lmdb_reads_per_txn = args.lmdb_reads_per_txn;
    if !engines.contains(&EngineName::SwizzleDb) {
        base.modes.clear();
    }
    let configs = points(&base, args.records, args.working_set, args.sweep.as_ref()).map_err(Usage)?;
    // A point's databases are all on disk at once (main-memory mode's stay in their pools), each
    // holding at least its records' keys and values; the points run one after another.
    if let Some(c) = configs.iter().max_by_key(|c| c.records) {
        let on_disk = c.modes.iter().filter(|&&m| m != swizzledb::PoolMode::MainMemory).count() as u64;
        if on_disk > 0 {
            crate::support::disk::check_room(
                &base.dir,
                c.records.saturating_mul(RECORD_BYTES).saturating_mul(on_disk),
                &format!(
                    "--records {} ({RECORD_BYTES} bytes of key and value each, {on_disk} databases)",
                    c.records
                ),
            )
            .map_err(Usage)?;
        }
    }
    if let Some(path) = &args.csv {
        csv_writable(path).map_err(UnusablePath)?;
        report::check_csv_appendable(path).map_err(Usage)?;
    }
    let peers = engines.into_iter().filter(|&e| e != EngineName::SwizzleDb).collect();
    let plan = Lookup { configs, peers, sweep: args.sweep.as_ref().map(|s| s.var), csv: args.csv.clone() };
    experiment::execute(&plan, args.common.out.as_deref())
}

/// Whether rows can be appended to `--csv` `path`, found before the run rather than after it:
/// the file is opened for appending (and a file that was not there removed again), so that a
/// directory, or a path in a directory that does not exist, is an unusable path (exit 3).
fn csv_writable(path: &Path) -> Result<(), String> {
    let existed = path.symlink_metadata().is_ok();
    let refused = |e: io::Error| {
        let hint = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => format!("; {} is not a directory: create it first", dir.display()),
            _ => String::new(),
        };
        format!("cannot write --csv {}: {e}{hint}", path.display())
    };
    if path.is_dir() {
        return Err(format!("cannot write --csv {}: it is a directory; name a file", path.display()));
    }
    std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(refused)?;
    if !existed {
        std::fs::remove_file(path).map_err(refused)?;
    }
    Ok(())
}

/// The plan: one point, or one per sweep value.
pub struct Lookup {
    /// The points.
    pub configs: Vec<Config>,
    /// Peer engines measured beside SwizzleDB's modes at every point (`--engine`).
    pub peers: Vec<EngineName>,
    /// What the sweep varies, if there is one (then a chart is drawn).
    pub sweep: Option<SweepVar>,
    /// A CSV file the rows are appended to (`--csv`).
    pub csv: Option<PathBuf>,
}

impl Experiment for Lookup {
    const NAME: &'static str = NAME;
    type Row = Record;
    type Results = Outcome;

    fn caption(&self) -> String {
        String::new()
    }

    fn run(&self, progress: Progress) -> Result<Outcome, Box<dyn Error>> {
        measure_points_with_peers(&self.configs, &self.peers, progress)
    }

    fn tables(&self, outcome: &Outcome, out: &mut dyn Write) -> io::Result<()> {
        print_points(out, &self.configs, outcome, true)
    }

    fn rows(&self, outcome: &Outcome) -> Vec<Record> {
        outcome.rows.clone()
    }

    fn charts(&self, outcome: &Outcome) -> Vec<(String, Chart)> {
        let Some(var) = self.sweep else { return Vec::new() };
        let (label, x_of): (&str, fn(&Config) -> u64) = match var {
            SweepVar::Records => ("database size (bytes of keys and values)", |c| c.records * RECORD_BYTES),
            SweepVar::WorkingSet => {
                ("working set (bytes of keys and values)", |c| c.working_set * RECORD_BYTES)
            }
        };
        let mut chart = report::sweep_chart("Random lookups", label, &self.configs, &outcome.points, x_of);
        for (i, &engine) in self.peers.iter().enumerate() {
            let points = self
                .configs
                .iter()
                .zip(&outcome.peers)
                .filter_map(|(c, peers)| {
                    let tp: Vec<f64> = peers.get(i)?.runs.iter().map(|m| m.throughput()).collect();
                    let s = crate::support::stats::summarize(&tp)?;
                    Some(crate::support::plot::Point {
                        x: x_of(c) as f64,
                        y: s.median,
                        y_min: s.min,
                        y_max: s.max,
                    })
                })
                .collect();
            chart.series.push(crate::support::plot::Series { name: engine.name().to_string(), points });
        }
        vec![(NAME.to_string(), chart)]
    }

    fn status(&self, outcome: &Outcome) -> ExitCode {
        outcome.code(self.sweep.is_some())
    }

    fn write_extra(&self, outcome: &Outcome, _out: Option<&Path>) -> Result<(), Box<dyn Error>> {
        if let Some(path) = &self.csv {
            crate::support::output::append_rows(path, &outcome.rows)?;
        }
        Ok(())
    }
}
