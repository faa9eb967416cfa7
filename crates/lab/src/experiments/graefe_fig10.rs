//! `experiment fig10` and `demo`: Graefe et al. 2014 Fig. 10/11.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use swizzledb::{PolicySpec, PoolMode};

use crate::experiment::{self, Experiment};
use crate::experiments::common::{base_config, measure_points, points, print_points, Common, Outcome};
use crate::harness::buffer::ModeResult;
use crate::harness::buffer::{Config, RECORD_BYTES};
use crate::harness::buffer_report::Record;
use crate::harness::buffer_report::{self as report};
use crate::harness::buffer_report::{median_of, ratio_over};
use crate::plot::Chart;
use crate::progress::Progress;
use crate::text::{bytes, thousands, write_aligned};
use crate::units::{self, Sweep, SweepVar};
use crate::{plot, text, Usage};

#[derive(Args)]
pub struct Fig10Args {
    #[command(flatten)]
    common: Common,
    /// Buffer-pool size (the memory limit of main-memory mode)
    #[arg(long, default_value = "64MiB", value_parser = units::parse_size)]
    pool: u64,
    /// Largest database, as a multiple of the pool (powers of two from 1/8 of the pool up to it)
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_factor: u64,
}

/// The demo's scale: 6 sizes from 1/8 to 4 times a 32 MiB pool, 2 x 1 s per mode and size.
pub const DEMO_POOL: u64 = 32 << 20;

pub fn fig10_configs(c: &Common, pool: u64, max_factor: u64) -> Result<Vec<Config>, String> {
    let base = base_config("graefe-fig10", c, pool)?;
    let sweep = Sweep {
        var: SweepVar::Records,
        values: std::iter::successors(Some(pool / 8), |v| Some(v * 2))
            .take_while(|&v| v <= pool * max_factor)
            .collect(),
    };
    points(&base, 0, None, Some(&sweep))
}

pub fn fig10_chart(configs: &[Config], outcome: &Outcome) -> plot::Chart {
    report::sweep_chart(
        "Random lookups as the data outgrows the pool (Graefe et al. 2014, Fig. 10/11)",
        "database size (bytes of keys and values)",
        configs,
        &outcome.points,
        |c| c.records * RECORD_BYTES,
    )
}

/// Runs `experiment graefe-fig10`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &Fig10Args) -> Result<ExitCode, Box<dyn Error>> {
    let configs = fig10_configs(&args.common, args.pool, args.max_factor).map_err(Usage)?;
    experiment::execute(&Fig10 { configs, caption: String::new() }, args.common.out.as_deref())
}

/// Runs `demo`: the experiment at a scale of about a minute, writing into `out`.
///
/// # Errors
/// `out` cannot be written, or a database or I/O failure.
pub fn demo(out: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let common = Common {
        mode: units::Modes(PoolMode::ALL.to_vec()),
        threads: 1,
        page_size: 8192,
        policy: PolicySpec::default(),
        duration: 1.0,
        warmup: 0.5,
        repeat: 2,
        seed: 42,
        direct_io: false,
        no_background_eviction: false,
        optimistic_leaf_reads: false,
        baseline: None,
        dir: None,
        out: Some(out.to_path_buf()),
    };
    let configs = fig10_configs(&common, DEMO_POOL, 4)?;
    let caption = format!(
        "Graefe et al. 2014, Fig. 10/11 in miniature: random lookups in databases of {} to {} with a \
         {} buffer pool, in traditional, swizzling and main-memory mode. Every value is verified; \
         repetitions alternate between the modes. Takes about a minute.\n",
        text::bytes(configs[0].records * RECORD_BYTES),
        text::bytes(configs[configs.len() - 1].records * RECORD_BYTES),
        text::bytes(DEMO_POOL),
    );
    experiment::execute(&Fig10 { configs, caption }, Some(out))
}

/// The plan: one point per database size.
pub struct Fig10 {
    /// The points.
    pub configs: Vec<Config>,
    /// Printed first (the demo's introduction; empty for the experiment).
    pub caption: String,
}

impl Experiment for Fig10 {
    const NAME: &'static str = "graefe-fig10";
    type Row = Record;
    type Results = Outcome;

    fn caption(&self) -> String {
        self.caption.clone()
    }

    fn run(&self, progress: Progress) -> Result<Outcome, Box<dyn Error>> {
        measure_points(&self.configs, progress)
    }

    fn tables(&self, outcome: &Outcome, mut out: &mut dyn Write) -> io::Result<()> {
        print_points(out, &self.configs, outcome)?;
        print_fig10_summary(&mut out, &self.configs, &outcome.points)
    }

    fn rows(&self, outcome: &Outcome) -> Vec<Record> {
        outcome.rows.clone()
    }

    fn charts(&self, outcome: &Outcome) -> Vec<(String, Chart)> {
        vec![(Self::NAME.to_string(), fig10_chart(&self.configs, outcome))]
    }

    fn status(&self, outcome: &Outcome) -> ExitCode {
        outcome.code(true)
    }
}

/// Graefe et al. Fig. 10/11: a table of median lookups/s per database size and mode, and the
/// check of the paper's claims.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_fig10_summary(
    out: &mut impl Write,
    configs: &[Config],
    points: &[Vec<ModeResult>],
) -> io::Result<()> {
    let Some(first) = configs.first() else { return Ok(()) };
    let pool = first.pool_bytes as u64;
    let modes: Vec<PoolMode> = first.modes.clone();
    writeln!(out)?;
    writeln!(out, "Fig. 10/11 summary: median lookups/s by database size (pool {})", bytes(pool))?;
    writeln!(out)?;
    let mut table = vec![std::iter::once("data".to_string())
        .chain(modes.iter().map(|m| m.name().to_string()))
        .collect::<Vec<_>>()];
    for (cfg, point) in configs.iter().zip(points) {
        let mut row = vec![bytes(cfg.records.saturating_mul(RECORD_BYTES))];
        for &m in &modes {
            let r = point.iter().find(|r| r.mode == m);
            row.push(match (r.and_then(median_of), r.and_then(|r| r.error.as_deref())) {
                (Some(v), _) => thousands(v.round() as u64),
                (None, Some(e)) if e.contains("main-memory mode") => "memory limit".into(),
                _ => "failed".into(),
            });
        }
        table.push(row);
    }
    write_aligned(out, &table)?;

    let data = |c: &Config| c.records.saturating_mul(RECORD_BYTES);
    let pairs: Vec<(&Config, &[ModeResult])> = configs.iter().zip(points.iter().map(Vec::as_slice)).collect();
    let fits = |c: &Config| data(c) * 2 <= pool;
    let beyond = |c: &Config| data(c) >= pool * 2;
    writeln!(out)?;
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    if let Some(v) = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::MainMemory, fits) {
        writeln!(out, "in memory: swizzling/main-memory = {v:.2} (paper: 0.97-0.99) {}", mark(v >= 0.95))?;
    }
    if let Some(v) = ratio_over(&pairs, PoolMode::Traditional, PoolMode::MainMemory, fits) {
        let swz = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::MainMemory, fits);
        writeln!(
            out,
            "in memory: traditional/main-memory = {v:.2} (paper: clearly below swizzling) {}",
            mark(swz.is_none_or(|s| v < s))
        )?;
    }
    if let Some(v) = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::Traditional, beyond) {
        writeln!(
            out,
            "beyond the pool: swizzling/traditional = {v:.2} (paper: both degrade alike, swizzling \
             slightly lower) {}",
            mark((0.75..=1.33).contains(&v))
        )?;
    }
    let limit = configs.iter().zip(points).find(|(_, p)| {
        p.iter().any(|r| {
            r.mode == PoolMode::MainMemory
                && r.error.as_deref().is_some_and(|e| e.contains("main-memory mode"))
        })
    });
    if let Some((c, _)) = limit {
        writeln!(
            out,
            "main-memory mode stops at its memory limit: from {} of data on it cannot load (a \
             main-memory database cannot hold more than its memory) ✓",
            bytes(data(c))
        )?;
    }
    Ok(())
}
