//! `bench ycsb`: argument parsing for the YCSB core workloads; the workloads, the measurements
//! and the table live in `crate::workloads::ycsb`.

use crate::engine::EngineName;
use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::workloads::ycsb::{
    parse_letter, print_table, run_bench, BenchPlan, BenchRow, YcsbConfig, YcsbPlan, YcsbRow,
};
use crate::WorkloadError;
use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::experiments::workload_options::{dedup, run_logged, WorkloadOptions};
use crate::support::units;
use crate::Usage;

/// Options of `bench ycsb`.
#[derive(Args, Debug)]
pub struct YcsbArgs {
    /// Engines, comma-separated, measured interleaved: swizzledb (in each of --modes ×
    /// --logging × --locking × --optimistic), lmdb (once per --logging setting; it has no
    /// modes, no record locks, no optimistic descents and serializes its writers; --logging on
    /// is MDB_NOSYNC, off adds MDB_NOMETASYNC, MDB_WRITEMAP and MDB_MAPASYNC; keep --dir on a
    /// tmpfs, docs/ycsb.md)
    #[arg(long, default_value = "swizzledb", value_delimiter = ',')]
    engine: Vec<String>,
    /// Core workloads to run, comma-separated, in this order on one load: A (50% read, 50%
    /// update), B (95/5), C (read only), D (95% read of the latest, 5% insert), E (95% scan,
    /// 5% insert), F (50% read, 50% read-modify-write)
    #[arg(long, default_value = "A,B,C,D,E,F", value_delimiter = ',')]
    workload: Vec<String>,
    /// Records loaded (1e6, 1M, 1_000_000)
    #[arg(long, default_value = "1M", value_parser = units::parse_count)]
    records: u64,
    /// Fields per record (YCSB's fieldcount)
    #[arg(long, default_value_t = 10)]
    field_count: u32,
    /// Bytes per field (YCSB's fieldlength); a value is 24 header bytes plus the fields
    #[arg(long, default_value_t = 100)]
    field_length: u32,
    /// The zipfian constant, above 0 and below 1
    #[arg(long, default_value_t = 0.99)]
    zipf_theta: f64,
    #[command(flatten)]
    options: WorkloadOptions,
}

/// Runs `bench ycsb`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn run(args: &YcsbArgs) -> Result<ExitCode, Box<dyn Error>> {
    let usage = |e: WorkloadError| Usage(e.to_string());
    let letters: Vec<char> =
        args.workload.iter().map(|w| parse_letter(w)).collect::<Result<_, _>>().map_err(usage)?;
    let engines: Vec<EngineName> =
        args.engine.iter().map(|e| EngineName::parse(e)).collect::<Result<_, _>>().map_err(usage)?;
    let plan = args.options.plan(YcsbPlan {
        engines: dedup(&engines),
        config: YcsbConfig {
            records: args.records,
            field_count: args.field_count,
            field_length: args.field_length,
            theta: args.zipf_theta,
            ..YcsbConfig::new(letters.first().copied().unwrap_or('A'), args.records)
        },
        workloads: dedup(&letters),
    });
    plan.validate().map_err(usage)?;
    experiment::execute(&Ycsb(plan), args.options.out.as_deref())
}

/// `bench ycsb` as an experiment.
pub struct Ycsb(pub BenchPlan);

impl Experiment for Ycsb {
    const NAME: &'static str = "ycsb";
    type Row = YcsbRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        let p = &self.0;
        let mut memory = Vec::new();
        if p.workload.engines.contains(&EngineName::SwizzleDb) {
            memory.push(format!("pool {} MiB per SwizzleDB database", p.pool() >> 20));
        }
        if p.workload.engines.contains(&EngineName::Lmdb) {
            memory.push(format!("LMDB map {} MiB", p.lmdb_map_bytes() >> 20));
        }
        format!(
            "YCSB {} on {}: {} records of {} bytes, zipfian constant {}, {}, {} s per measurement, {} repetitions",
            p.workload.workloads.iter().collect::<String>(),
            p.workload.engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
            p.workload.config.records,
            p.workload.config.value_bytes(),
            p.workload.config.theta,
            memory.join(", "),
            p.duration.as_secs_f64(),
            p.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        run_logged(progress, |log| run_bench(&self.0, log))
    }

    fn tables(&self, rows: &Vec<BenchRow>, mut out: &mut dyn Write) -> io::Result<()> {
        print_table(&mut out, &self.0, rows)?;
        writeln!(out, "every record is present, in its place and intact in every database")
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<YcsbRow> {
        rows.iter().map(YcsbRow::new).collect()
    }
}
