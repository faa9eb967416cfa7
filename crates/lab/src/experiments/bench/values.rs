//! `swizzledb bench values`: insert and point-read throughput by value size, from values stored
//! in their leaf to values of a mebibyte in overflow chains (btree README T22).
//!
//! For each size, a fresh logged database (the engine's defaults, asynchronous commit) receives
//! `--bytes` of values under random 8-byte keys, in transactions of about 1 MiB of values
//! each; then every key is read back once in another random order and its value checked. Sizes
//! are interleaved within each repetition, so drift of the machine hits them alike; tables show
//! medians. The pool holds everything (`--pool`), so the figures are the CPU and log cost of
//! the value path, not the device's.

use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;
use swizzledb::{CommitMode, Database};

use crate::experiments::bench::insert::mix;
use crate::experiments::workload_options::dedup;
use crate::harness::buffer::Progress;
use crate::harness::experiment::{self, Experiment};
use crate::support::stats::median;
use crate::support::text::{bytes, thousands, write_aligned};
use crate::support::units;
use crate::Usage;

/// Values per transaction: about this many bytes of them.
const TXN_BYTES: u64 = 1 << 20;

/// Options of `bench values`.
#[derive(Args, Debug)]
pub struct ValuesArgs {
    /// Value sizes, comma-separated (a size named twice, as 4096 and 4KiB, is measured once);
    /// each at most what a tree over --pool takes (Tree::max_value_len: an eighth of the pool)
    #[arg(long, default_value = "100,4KiB,64KiB,1MiB", value_delimiter = ',', value_parser = parse_value_size)]
    sizes: Vec<u64>,
    /// Bytes of values written per size and repetition, 1 byte to 64 GiB (at least 16 values
    /// are written)
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes)]
    bytes: u64,
    /// Buffer-pool size of each database (it should hold --bytes and the tree)
    #[arg(long, default_value = "256MiB", value_parser = crate::experiments::common::parse_default_page_pool)]
    pool: u64,
    /// Measurements per size, interleaved across sizes; tables show medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for values.csv, values.json (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The most `--bytes`: the pool is to hold them, and every key is kept in memory for the reads
/// (2^64 - 1 bytes ran for ever and allocated without bound).
const MAX_BYTES: u64 = 64 << 30;

/// `--bytes`: 1 byte to [`MAX_BYTES`].
fn parse_bytes(input: &str) -> Result<u64, String> {
    match units::parse_size(input)? {
        n if (1..=MAX_BYTES).contains(&n) => Ok(n),
        _ => Err(format!(
            "--bytes {} is out of range: give 1 byte to {} (written per size and repetition into a pool \
             that holds them; raise --pool with it)",
            input.trim(),
            bytes(MAX_BYTES)
        )),
    }
}

fn parse_value_size(input: &str) -> Result<u64, String> {
    match units::parse_size(input)? {
        n if n >= 1 && n <= swizzledb::MAX_VALUE_LEN as u64 => Ok(n),
        _ => Err(format!(
            "value size {input:?}: use 1 byte to {} (MAX_VALUE_LEN)",
            bytes(swizzledb::MAX_VALUE_LEN as u64)
        )),
    }
}

/// One measurement: one size, one repetition.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ValuesRow {
    /// Bytes per value.
    pub value_bytes: u64,
    /// Repetition (0-based).
    pub repetition: u16,
    /// Values written and read.
    pub values: u64,
    /// Inserted values per second (commits included).
    pub inserts_per_sec: f64,
    /// MiB of values inserted per second.
    pub insert_mib_per_sec: f64,
    /// Point reads per second.
    pub gets_per_sec: f64,
    /// MiB of values read per second.
    pub get_mib_per_sec: f64,
    /// Log bytes appended per inserted value.
    pub log_bytes_per_value: f64,
    /// Overflow pages of the tree after the load.
    pub overflow_pages: u64,
}

/// Runs `bench values`.
///
/// # Errors
/// A database or I/O failure.
pub fn execute(args: &ValuesArgs) -> Result<std::process::ExitCode, Box<dyn Error>> {
    check_sizes(args)?;
    experiment::execute(&ValuesPlan { args }, args.out.as_deref())
}

/// The settings of each run's database.
fn builder(args: &ValuesArgs) -> Result<swizzledb::Builder, Box<dyn Error>> {
    Ok(Database::builder().pool_bytes(usize::try_from(args.pool)?).commit_mode(CommitMode::Async))
}

/// Every size must fit the tree of a run's database: at most `Tree::max_value_len`, an eighth of
/// the pool in overflow pages (btree README T22), which `--sizes` alone does not know. Asked of a
/// database in memory with the run's settings, so that a size `--pool` cannot take is bad input
/// before anything runs, not a failed insert after the header.
fn check_sizes(args: &ValuesArgs) -> Result<(), Box<dyn Error>> {
    let Some(&largest) = args.sizes.iter().max() else { return Ok(()) };
    let db = builder(args)?.create_in_memory()?;
    let max = db.create_tree("values")?.max_value_len() as u64;
    db.close()?;
    if largest > max {
        return Err(Usage(format!(
            "--sizes {}: a tree over a --pool of {} takes values of at most {} (Tree::max_value_len: an \
             eighth of the pool in overflow pages); raise --pool or leave the size out",
            bytes(largest),
            bytes(args.pool),
            bytes(max)
        ))
        .into());
    }
    Ok(())
}

/// A run's database file and log directory, removed when dropped: after the measurement, and
/// after an error in it.
struct RunFiles(PathBuf);

impl RunFiles {
    fn remove(&self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(swizzledb::wal_dir(&self.0));
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        self.remove();
    }
}

struct ValuesPlan<'a> {
    args: &'a ValuesArgs,
}

fn random_value(len: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

impl ValuesPlan<'_> {
    /// The value sizes, each once, in the order given: a size named twice would be measured
    /// twice under one `value_bytes` and repetition, and its table row printed twice.
    fn sizes(&self) -> Vec<u64> {
        dedup(&self.args.sizes)
    }

    fn measure(&self, size: u64, rep: u16) -> Result<ValuesRow, Box<dyn Error>> {
        let a = self.args;
        let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!("swizzledb-values-{}-{size}.swz", std::process::id()));
        // Declared before the database, so dropped after it; what an earlier run left goes first.
        let files = RunFiles(path);
        files.remove();
        let db = builder(a)?.create(&files.0)?;
        let tree = db.create_tree("values")?;
        let n = (a.bytes / size).max(16);
        let per_txn = (TXN_BYTES / size).max(1);
        // A few distinct values, so the data is not one repeated pattern.
        let pattern: Vec<Vec<u8>> = (0..4).map(|s| random_value(size, s + 1)).collect();
        let log_before = db.log_stats().map_or(0, |s| s.log_bytes);
        let start = Instant::now();
        let mut i = 0;
        while i < n {
            let end = (i + per_txn).min(n);
            db.transact(|tx| {
                for j in i..end {
                    tx.put(&tree, &mix(j).to_be_bytes(), &pattern[(j % 4) as usize])?;
                }
                Ok(())
            })?;
            i = end;
        }
        let insert_secs = start.elapsed().as_secs_f64();
        let log_bytes = db.log_stats().map_or(0, |s| s.log_bytes) - log_before;
        let shape = tree.verify().map_err(|e| format!("the tree after the load: {e}"))?;
        // Every counter once, in an order unrelated to the load's (Fisher-Yates, xorshift).
        let mut order: Vec<u64> = (0..n).collect();
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let start = Instant::now();
        for c in order {
            let want = &pattern[(c % 4) as usize];
            let ok = tree.get_with(&mix(c).to_be_bytes(), |v| v == Some(&want[..]))?;
            if !ok {
                return Err(format!("the value of counter {c} ({size} bytes) did not read back").into());
            }
        }
        let get_secs = start.elapsed().as_secs_f64();
        drop(tree);
        db.close()?;
        drop(files);
        let mib = (n * size) as f64 / f64::from(1 << 20);
        Ok(ValuesRow {
            value_bytes: size,
            repetition: rep,
            values: n,
            inserts_per_sec: n as f64 / insert_secs,
            insert_mib_per_sec: mib / insert_secs,
            gets_per_sec: n as f64 / get_secs,
            get_mib_per_sec: mib / get_secs,
            log_bytes_per_value: log_bytes as f64 / n as f64,
            overflow_pages: shape.overflow_pages as u64,
        })
    }
}

impl Experiment for ValuesPlan<'_> {
    const NAME: &'static str = "values";
    type Row = ValuesRow;
    type Results = Vec<ValuesRow>;

    fn caption(&self) -> String {
        format!(
            "{} of values per size in a fresh logged database (asynchronous commit, ~1 MiB per transaction), then each key read once; sizes interleaved, {} repetitions",
            bytes(self.args.bytes),
            self.args.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<ValuesRow>, Box<dyn Error>> {
        let mut rows = Vec::new();
        for rep in 0..self.args.repeat {
            for size in self.sizes() {
                let row = self.measure(size, rep)?;
                progress.say(format_args!(
                    "{} values, repetition {}/{}: {} inserts/s, {} gets/s",
                    bytes(size),
                    rep + 1,
                    self.args.repeat,
                    thousands(row.inserts_per_sec.round() as u64),
                    thousands(row.gets_per_sec.round() as u64)
                ));
                rows.push(row);
            }
        }
        Ok(rows)
    }

    fn tables(&self, results: &Vec<ValuesRow>, out: &mut dyn Write) -> io::Result<()> {
        let mut table = vec![vec![
            "value".to_string(),
            "values".into(),
            "inserts/s".into(),
            "insert MiB/s".into(),
            "gets/s".into(),
            "get MiB/s".into(),
            "log B/value".into(),
            "overflow pages".into(),
        ]];
        for size in self.sizes() {
            let rows: Vec<&ValuesRow> = results.iter().filter(|r| r.value_bytes == size).collect();
            let med = |f: fn(&ValuesRow) -> f64| {
                median(&rows.iter().map(|r| f(r)).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            table.push(vec![
                bytes(size),
                thousands(rows.first().map_or(0, |r| r.values)),
                thousands(med(|r| r.inserts_per_sec).round() as u64),
                format!("{:.1}", med(|r| r.insert_mib_per_sec)),
                thousands(med(|r| r.gets_per_sec).round() as u64),
                format!("{:.1}", med(|r| r.get_mib_per_sec)),
                thousands(med(|r| r.log_bytes_per_value).round() as u64),
                thousands(rows.first().map_or(0, |r| r.overflow_pages)),
            ]);
        }
        writeln!(out, "Medians over {} repetitions:", self.args.repeat)?;
        write_aligned(out, &table)
    }

    fn rows(&self, results: &Vec<ValuesRow>) -> Vec<ValuesRow> {
        results.clone()
    }
}
