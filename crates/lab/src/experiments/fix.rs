//! The cost of one `fix` hit per buffer mode and latch mode (Graefe et al. 2014; Gilbert 2017
//! measured a swizzled fix about 30% cheaper than a page-table fix).
//!
//! Per mode, a database of `records` records whose pool holds everything is read once (so every
//! swip on the way is swizzled in the swizzling modes); then, with the root latched shared, the
//! timed loop fixes the root's children round-robin through `fix_child` and drops each guard.
//! Repetitions alternate between the modes. For a statistically careful version of the same
//! measurement see `cargo bench -p swizzledb --bench fix` (criterion).

use crate::experiments::common::{base_config, Common};
use crate::harness::buffer::{self};
use crate::harness::buffer::{create, value_for, Config, Progress, LOGGING};
use crate::harness::buffer_report::write_logging_note;
use crate::output::{prepare_out, write_plot};
use crate::text::{thousands, write_aligned};
use crate::units::{self};
use crate::Usage;
use clap::Args;
use std::error::Error as StdError;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;
use swizzledb::{Error, PoolMode};
use swizzledb_btree::node;
use swizzledb_buffer::{Exclusive, LatchKind, Shared};

/// One timed loop: nanoseconds per fix.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FixSample {
    /// Buffer mode.
    pub mode: String,
    /// `shared` or `exclusive`.
    pub latch: String,
    /// Repetition, from 0.
    pub repetition: usize,
    /// Fixes timed.
    pub fixes: u64,
    /// Nanoseconds per fix (and unfix).
    pub ns_per_fix: f64,
    /// Whether a write-ahead log was on (never: this measures the buffer).
    pub logging: bool,
}

/// Runs the measurement: `fixes` fixes per mode, latch mode and repetition.
///
/// # Errors
/// Engine errors building a database (a tree too small to have an inner root is reported too).
pub fn run(
    cfg: &Config,
    fixes: u64,
    progress: Progress,
) -> Result<Vec<FixSample>, Box<dyn std::error::Error>> {
    let mut beds = Vec::new();
    for &mode in &cfg.modes {
        let path = cfg.dir.join(format!("swizzledb-fix-{}-{}.swz", std::process::id(), mode.name()));
        let (db, file) = create(cfg, mode, path)?;
        let bar = progress.counter(cfg.records, format!("{mode}: loading"));
        let tree = crate::harness::buffer::load(&db, cfg.records, &bar)?;
        bar.finish_and_clear();
        for k in 0..cfg.records {
            let key = k.to_be_bytes();
            tree.get_with(&key, |v| v.map(|v| v == value_for(&key)))?;
        }
        beds.push((mode, db, tree, file));
    }
    let mut samples = Vec::new();
    for rep in 0..cfg.repeat {
        for (mode, db, tree, _) in &beds {
            for exclusive in [false, true] {
                let pool = db.pool();
                let mut root = pool.fix_page::<Shared>(tree.root_page()).map_err(Error::from)?;
                if node::is_leaf(&root) {
                    return Err(format!("{mode}: the tree has a single level; use more --records").into());
                }
                let mut offs = Vec::new();
                node::swip_offsets(&root, &mut offs);
                let start = Instant::now();
                let mut i = 0;
                for _ in 0..fixes {
                    let off = offs[i];
                    i = if i + 1 == offs.len() { 0 } else { i + 1 };
                    if exclusive {
                        fix_once::<Exclusive>(pool, &mut root, off)?;
                    } else {
                        fix_once::<Shared>(pool, &mut root, off)?;
                    }
                }
                let ns = start.elapsed().as_nanos() as f64 / fixes as f64;
                samples.push(FixSample {
                    mode: mode.name().to_string(),
                    latch: if exclusive { "exclusive" } else { "shared" }.to_string(),
                    repetition: rep,
                    fixes,
                    ns_per_fix: ns,
                    logging: LOGGING,
                });
            }
        }
    }
    Ok(samples)
}

#[inline]
fn fix_once<M: LatchKind>(
    pool: &swizzledb_buffer::BufferPool,
    root: &mut swizzledb_buffer::SharedGuard<'_>,
    off: usize,
) -> Result<(), Error> {
    let child = pool.fix_child::<Shared, M>(root, off).map_err(Error::from)?;
    std::hint::black_box(&child);
    Ok(())
}

/// Median ns/fix of `mode` and `latch` over the repetitions.
#[must_use]
pub fn median(samples: &[FixSample], mode: PoolMode, latch: &str) -> Option<crate::stats::Summary> {
    let v: Vec<f64> =
        samples.iter().filter(|s| s.mode == mode.name() && s.latch == latch).map(|s| s.ns_per_fix).collect();
    crate::stats::summarize(&v)
}

#[derive(Args)]
pub struct FixArgs {
    #[command(flatten)]
    common: Common,
    /// Records per database (the root must have many children)
    #[arg(long, default_value = "200000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Fixes timed per mode, latch mode and repetition
    #[arg(long, default_value = "20000000", value_parser = units::parse_positive_count)]
    fixes: u64,
}

pub fn execute(args: &FixArgs) -> Result<ExitCode, Box<dyn StdError>> {
    let pool = buffer::default_pool_bytes(args.records);
    let mut cfg = base_config("fix", &args.common, pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = args.records;
    prepare_out(args.common.out.as_deref()).map_err(Usage)?;
    let samples = run(&cfg, args.fixes, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    print_fix_table(&mut out, &cfg, &samples)?;
    drop(out);
    if let Some(dir) = &args.common.out {
        let csv = dir.join("fix.csv");
        write_fix_csv(&csv, &samples).map_err(|e| format!("writing {}: {e}", csv.display()))?;
        let json = dir.join("fix.json");
        std::fs::write(&json, serde_json::to_string_pretty(&samples)?)
            .map_err(|e| format!("writing {}: {e}", json.display()))?;
        eprintln!("Wrote {} and {}.", csv.display(), json.display());
    }
    write_plot(args.common.out.as_deref(), "fix", &fix_chart(&cfg, &samples))?;
    Ok(ExitCode::SUCCESS)
}

/// The fix() table: ns per fix by mode and latch mode, and the checks.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_fix_table(
    out: &mut impl Write,
    cfg: &Config,
    samples: &[crate::experiments::fix::FixSample],
) -> io::Result<()> {
    writeln!(
        out,
        "fix(): ns per fix + unfix of a resident child of the root, {} records, {} repetitions",
        thousands(cfg.records),
        cfg.repeat
    )?;
    write_logging_note(out)?;
    writeln!(out)?;
    let mut table =
        vec![vec!["mode".to_string(), "latch".into(), "median ns".into(), "min ns".into(), "max ns".into()]];
    for &m in &cfg.modes {
        for latch in ["shared", "exclusive"] {
            if let Some(s) = crate::experiments::fix::median(samples, m, latch) {
                table.push(vec![
                    m.name().to_string(),
                    latch.to_string(),
                    format!("{:.1}", s.median),
                    format!("{:.1}", s.min),
                    format!("{:.1}", s.max),
                ]);
            }
        }
    }
    write_aligned(out, &table)?;
    let med = |m, l| crate::experiments::fix::median(samples, m, l).map(|s| s.median);
    writeln!(out)?;
    if let (Some(s), Some(t)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::Traditional, "shared")) {
        let v = s / t;
        let ok = if v < 0.85 { "✓" } else { "✗" };
        writeln!(
            out,
            "fix: swizzled/page-table = {v:.2} (Gilbert 2017: about 0.7; Graefe 2014: larger gains) {ok}"
        )?;
    }
    if let (Some(s), Some(mm)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::MainMemory, "shared")) {
        writeln!(
            out,
            "fix: swizzling/main-memory = {:.2} (the difference is the replacement policy's hit hook)",
            s / mm
        )?;
    }
    Ok(())
}

/// Writes the fix() samples as CSV (replacing the file).
///
/// # Errors
/// Errors writing the file.
pub fn write_fix_csv(path: &Path, samples: &[crate::experiments::fix::FixSample]) -> io::Result<()> {
    let mut text = String::from("experiment,mode,latch,repetition,fixes,ns_per_fix,logging\n");
    for s in samples {
        text.push_str(&format!(
            "fix,{},{},{},{},{:.3},{}\n",
            s.mode, s.latch, s.repetition, s.fixes, s.ns_per_fix, s.logging
        ));
    }
    std::fs::write(path, text)
}

/// The fix() chart: ns per fix in each repetition, one line per mode and latch mode.
#[must_use]
pub fn fix_chart(cfg: &Config, samples: &[crate::experiments::fix::FixSample]) -> crate::plot::Chart {
    let mut series = Vec::new();
    for &m in &cfg.modes {
        for latch in ["shared", "exclusive"] {
            series.push(crate::plot::Series {
                name: format!("{m} / {latch}"),
                points: samples
                    .iter()
                    .filter(|s| s.mode == m.name() && s.latch == latch)
                    .map(|s| crate::plot::Point {
                        x: (s.repetition + 1) as f64,
                        y: s.ns_per_fix,
                        y_min: s.ns_per_fix,
                        y_max: s.ns_per_fix,
                    })
                    .collect(),
            });
        }
    }
    crate::plot::Chart {
        title: "Cost of one fix() hit (Graefe et al. 2014; Gilbert 2017)".to_string(),
        x_label: "repetition (modes alternate)".to_string(),
        y_label: "nanoseconds per fix".to_string(),
        x_scale: crate::plot::Scale::Linear,
        series,
        note: Some(format!("children of the root of a {}-record tree, all resident", thousands(cfg.records))),
        vline: None,
        marks: None,
    }
}
