//! The cost of one `fix` hit per buffer mode and latch mode (Graefe et al. 2014; Gilbert 2017
//! measured a swizzled fix about 30% cheaper than a page-table fix).
//!
//! Per mode, a database of `records` records whose pool holds everything is read once (so every
//! swip on the way is swizzled in the swizzling modes); then, with the root latched shared, the
//! timed loop fixes the root's children round-robin through `fix_child` and drops each guard.
//! Repetitions alternate between the modes. For a statistically careful version of the same
//! measurement see `cargo bench -p swizzledb-benches --bench fix` (criterion).

use crate::experiments::common::{base_config, Common};
use crate::harness::buffer::{self};
use crate::harness::buffer::{create, value_for, Config, Progress, LOGGING};
use crate::harness::buffer_report::LOGGING_NOTE;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::Chart;
use crate::support::text::{thousands, write_aligned};
use crate::support::units::{self};
use crate::Usage;
use clap::Args;
use std::error::Error as StdError;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;
use swizzledb::lab::{DatabaseExt as _, TreeExt as _};
use swizzledb::{Error, PoolMode};
use swizzledb_btree::node;
use swizzledb_buffer::{Exclusive, LatchKind, Shared};

/// One timed loop: nanoseconds per fix; one row of `fix.csv`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FixSample {
    /// Always `fix`.
    pub experiment: &'static str,
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
    /// Always `none`: every page is resident before the timed loop, which reads no file.
    pub io: &'static str,
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
                    experiment: Fix::NAME,
                    mode: mode.name().to_string(),
                    latch: if exclusive { "exclusive" } else { "shared" }.to_string(),
                    repetition: rep,
                    fixes,
                    ns_per_fix: ns,
                    logging: LOGGING,
                    io: "none",
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
pub fn median(samples: &[FixSample], mode: PoolMode, latch: &str) -> Option<crate::support::stats::Summary> {
    let v: Vec<f64> =
        samples.iter().filter(|s| s.mode == mode.name() && s.latch == latch).map(|s| s.ns_per_fix).collect();
    crate::support::stats::summarize(&v)
}

#[derive(Args)]
pub struct FixArgs {
    #[command(flatten)]
    common: Common,
    /// Records per database (the root must have many children; the fewest with an inner root
    /// are checked before anything runs: 58 at 8 KiB pages)
    #[arg(long, default_value = "200000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Fixes timed per mode, latch mode and repetition (1 to 1,000,000,000)
    #[arg(long, default_value = "20000000", value_parser = parse_fixes)]
    fixes: u64,
}

/// The most `--fixes`: about 20 s per timed loop at 20 ns a fix (2^64 - 1 ran for ever).
const MAX_FIXES: u64 = 1_000_000_000;

/// `--fixes`: 1 to [`MAX_FIXES`].
fn parse_fixes(input: &str) -> Result<u64, String> {
    units::parse_count_in(
        input,
        "--fixes",
        1,
        MAX_FIXES,
        "per mode, latch mode and repetition, each a timed loop",
    )
}

/// Runs `experiment fix`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &FixArgs) -> Result<ExitCode, Box<dyn StdError>> {
    let pool = buffer::default_pool_bytes(args.records);
    let mut cfg = base_config(Fix::NAME, &args.common, pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = args.records;
    let least = min_records(&cfg)?;
    if args.records < least {
        return Err(Usage(format!(
            "--records {} is too few: the timed loop fixes the children of the root, and the tree has an \
             inner root from {} records of pages of {} on; give at least {}",
            args.records,
            thousands(least),
            crate::support::text::bytes(cfg.page_size as u64),
            thousands(least)
        ))
        .into());
    }
    experiment::execute(&Fix { cfg, fixes: args.fixes }, args.common.out.as_deref())
}

/// The fewest records [`run`] takes: the number at which the tree its loader builds (the same
/// keys and values, in the same order, on pages of `cfg.page_size`) first has an inner root.
/// Found on a database in memory before anything is loaded, so that too few `--records` are
/// refused up front instead of after every mode's load.
///
/// # Errors
/// The database in memory cannot be made or written.
fn min_records(cfg: &Config) -> Result<u64, Box<dyn StdError>> {
    let db = swizzledb::Database::builder()
        .pool_bytes(cfg.pool_bytes)
        .page_size(cfg.page_size)
        .logging(false)
        .create_in_memory()?;
    let tree = db.create_tree("rndread")?;
    let mut records = 0u64;
    // A page holds far fewer records of 128 bytes than this.
    while records < 1 << 20 {
        let key = records.to_be_bytes();
        tree.insert(&key, &value_for(&key))?;
        records += 1;
        let root = db.pool().fix_page::<Shared>(tree.root_page()).map_err(Error::from)?;
        if !node::is_leaf(&root) {
            break;
        }
    }
    drop(tree);
    db.close()?;
    Ok(records)
}

/// The plan: databases per mode as `cfg` says, `fixes` timed fixes per mode, latch mode and
/// repetition.
pub struct Fix {
    /// Modes, records, repetitions.
    pub cfg: Config,
    /// Fixes per timed loop.
    pub fixes: u64,
}

impl Experiment for Fix {
    const NAME: &'static str = "fix";
    type Row = FixSample;
    type Results = Vec<FixSample>;

    fn caption(&self) -> String {
        format!(
            "fix(): ns per fix + unfix of a resident child of the root, {} records, {} repetitions; no file is \
             read in the timed loop (every page resident)\n{LOGGING_NOTE}",
            thousands(self.cfg.records),
            self.cfg.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<FixSample>, Box<dyn StdError>> {
        run(&self.cfg, self.fixes, progress)
    }

    fn tables(&self, samples: &Vec<FixSample>, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out)?;
        let mut table = vec![vec![
            "mode".to_string(),
            "latch".into(),
            "median ns".into(),
            "min ns".into(),
            "max ns".into(),
        ]];
        for &m in &self.cfg.modes {
            for latch in ["shared", "exclusive"] {
                if let Some(s) = median(samples, m, latch) {
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
        write_aligned(out, &table)
    }

    fn checks(&self, samples: &Vec<FixSample>) -> Vec<Check> {
        let med = |m, l| median(samples, m, l).map(|s| s.median);
        let mut checks = Vec::new();
        if let (Some(s), Some(t)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::Traditional, "shared"))
        {
            checks.push(swizzled_vs_page_table(s / t));
        }
        if let (Some(s), Some(mm)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::MainMemory, "shared"))
        {
            checks.push(swizzling_vs_main_memory(s / mm));
        }
        checks
    }

    fn rows(&self, samples: &Vec<FixSample>) -> Vec<FixSample> {
        samples.clone()
    }

    fn charts(&self, samples: &Vec<FixSample>) -> Vec<(String, Chart)> {
        vec![(Self::NAME.to_string(), fix_chart(&self.cfg, samples))]
    }
}

/// Graefe et al. 2014, Fig. 10: with the data in memory, swizzling's lookups are 1-3% slower
/// than main-memory's, i.e. this many times its time per operation.
const MAIN_MEMORY_PAPER: (f64, f64) = (1.01, 1.03);
/// How far outside [`MAIN_MEMORY_PAPER`] a ratio may fall: a loop of a few tens of nanoseconds
/// on a shared 2-core machine moves by this much between runs of one build.
const MAIN_MEMORY_TOLERANCE: f64 = 0.10;

/// The check of swizzled / page-table ns per shared hit in an isolated hit loop, `v` the ratio
/// of the medians. No paper measured such a loop (Gilbert 2017's about 0.7 is fix() inside
/// TPC-C, Fig. 2.7, held by gilbert-fix-time), so the paper column says "direction only": ✓
/// below 1 (a swizzled hit skips the page table), ✗ otherwise.
fn swizzled_vs_page_table(v: f64) -> Check {
    Check::new(
        "fix: swizzled / page-table ns per shared hit, an isolated hit loop",
        "direction only: below 1, a swizzled hit skips the page table (no paper measured an isolated hit \
         loop; Gilbert 2017's about 0.7 is fix() inside TPC-C, Fig. 2.7: see gilbert-fix-time's hits check)",
        format!("{v:.2} (children of the root, all resident, one thread, no workload around the fix)"),
        Verdict::of(v < 1.0),
    )
    .because(if v < 1.0 {
        "tolerance: below 1; not comparable with the in-TPC-C 0.7"
    } else {
        "tolerance: below 1; a swizzled hit is not cheaper even in isolation"
    })
}

/// The check of swizzling / main-memory ns per shared hit, `v` the ratio of the medians: ✓
/// within [`MAIN_MEMORY_TOLERANCE`] of the paper's 1.01-1.03 on either side, ✗ otherwise.
fn swizzling_vs_main_memory(v: f64) -> Check {
    let (lo, hi) = MAIN_MEMORY_PAPER;
    let (min, max) = (lo - MAIN_MEMORY_TOLERANCE, hi + MAIN_MEMORY_TOLERANCE);
    Check::new(
        "fix: swizzling / main-memory ns per shared hit, an isolated hit loop",
        format!(
            "{lo:.2}-{hi:.2} (Graefe 2014, Fig. 10: swizzling within 1-3% of main-memory, lookups with \
             the data in memory); within ±{MAIN_MEMORY_TOLERANCE:.2} counts: {min:.2}-{max:.2}"
        ),
        format!("{v:.2} (children of the root, all resident, one thread)"),
        Verdict::of((min..=max).contains(&v)),
    )
    .because(format!(
        "tolerance: ±{MAIN_MEMORY_TOLERANCE:.2} for a noisy machine; the paper's figure is a whole lookup's, ours \
         one fix, where the difference left is the replacement policy's hit hook"
    ))
}

/// The fix() chart: ns per fix in each repetition, one line per mode and latch mode.
#[must_use]
pub fn fix_chart(
    cfg: &Config,
    samples: &[crate::experiments::bench::fix::FixSample],
) -> crate::support::plot::Chart {
    let mut series = Vec::new();
    for &m in &cfg.modes {
        for latch in ["shared", "exclusive"] {
            series.push(crate::support::plot::Series {
                name: format!("{m} / {latch}"),
                points: samples
                    .iter()
                    .filter(|s| s.mode == m.name() && s.latch == latch)
                    .map(|s| crate::support::plot::Point {
                        x: (s.repetition + 1) as f64,
                        y: s.ns_per_fix,
                        y_min: s.ns_per_fix,
                        y_max: s.ns_per_fix,
                    })
                    .collect(),
            });
        }
    }
    crate::support::plot::Chart {
        title: "Cost of one fix() hit (Graefe et al. 2014; Gilbert 2017)".to_string(),
        x_label: "repetition (modes alternate)".to_string(),
        y_label: "nanoseconds per fix".to_string(),
        x_scale: crate::support::plot::Scale::Linear,
        series,
        note: Some(format!("children of the root of a {}-record tree, all resident", thousands(cfg.records))),
        vline: None,
        marks: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No paper gives a number for an isolated hit loop: the paper column says "direction
    /// only" (it said "the direction is claimed"), and the direction is below 1.
    #[test]
    fn swizzled_hit_is_direction_only_below_one() {
        let c = swizzled_vs_page_table(0.47);
        assert_eq!(c.verdict, Verdict::Holds);
        assert!(c.paper.starts_with("direction only: below 1"), "{}", c.paper);
        assert!(!c.paper.contains("claimed"), "{}", c.paper);
        assert!(c.ours.starts_with("0.47"), "{}", c.ours);
        for v in [1.0, 1.3] {
            let c = swizzled_vs_page_table(v);
            assert_eq!(c.verdict, Verdict::Fails, "{v}");
            assert!(c.reason.contains("not cheaper"), "{}", c.reason);
        }
    }

    /// Swizzling's hit is held to Graefe's 1-3% behind main-memory, ±0.10: the old check
    /// accepted anything up to 1.5x main-memory's time.
    #[test]
    fn swizzling_hit_is_held_to_the_papers_one_to_three_percent() {
        for v in [0.95, 1.02, 1.12] {
            assert_eq!(swizzling_vs_main_memory(v).verdict, Verdict::Holds, "{v}");
        }
        for v in [0.85, 1.2, 1.4] {
            assert_eq!(swizzling_vs_main_memory(v).verdict, Verdict::Fails, "{v}");
        }
        let c = swizzling_vs_main_memory(1.4);
        assert!(c.paper.starts_with("1.01-1.03") && c.paper.ends_with("0.91-1.13"), "{}", c.paper);
        assert!(c.ours.starts_with("1.40"), "{}", c.ours);
    }
}
