//! `experiment fig10` and `demo`: Graefe et al. 2014 Fig. 10/11.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use swizzledb::{PolicySpec, PoolMode};

use crate::experiments::common::{base_config, measure_points, points, print_points, Common, Outcome};
use crate::harness::buffer::ModeResult;
use crate::harness::buffer::{Config, RECORD_BYTES};
use crate::harness::buffer_report::Record;
use crate::harness::buffer_report::{self as report};
use crate::harness::buffer_report::{median_at, median_of};
use crate::harness::experiment::{self, every_point, Check, Experiment, Verdict};
use crate::support::plot::Chart;
use crate::support::progress::Progress;
use crate::support::stats::ratio;
use crate::support::text::{bytes, thousands, write_aligned};
use crate::support::units::{self, Sweep, SweepVar};
use crate::support::{plot, text};
use crate::Usage;

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
    let caption = format!(
        "Graefe et al. 2014, Figs. 10/11: random lookups in databases of {} to {} with a {} buffer pool; \
         beyond the pool {}.",
        text::bytes(configs[0].records * RECORD_BYTES),
        text::bytes(configs[configs.len() - 1].records * RECORD_BYTES),
        text::bytes(args.pool),
        report::io_text(args.common.direct_io),
    );
    experiment::execute(&Fig10 { configs, caption }, args.common.out.as_deref())
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
         {} buffer pool, in traditional, swizzling and main-memory mode; beyond the pool {}. Every \
         value is verified; repetitions alternate between the modes. Takes about a minute.\n",
        text::bytes(configs[0].records * RECORD_BYTES),
        text::bytes(configs[configs.len() - 1].records * RECORD_BYTES),
        text::bytes(DEMO_POOL),
        report::io_text(false),
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
        print_points(out, &self.configs, outcome, false)?;
        print_fig10_summary(&mut out, &self.configs, &outcome.points)
    }

    fn checks(&self, outcome: &Outcome) -> Vec<Check> {
        fig10_checks(&self.configs, &outcome.points)
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

/// Graefe et al. Fig. 10/11: a table of median lookups/s per database size and mode (the
/// paper's claims are held against it by [`fig10_checks`]).
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

    Ok(())
}

/// Within this much of 1, swizzling matches main-memory (the paper: 1-3% apart, "comparable to
/// the experimental standard error").
const MATCH_TOLERANCE: f64 = 0.05;
/// Traditional / main-memory in memory, from the paper's Fig. 1 (the same data as Fig. 10):
/// main-memory 41% to 68% above traditional.
const TRADITIONAL_PAPER: (f64, f64) = (1.0 / 1.68, 1.0 / 1.41);

/// Fig. 11 beyond the pool: swizzling / traditional lookups/s "slightly below 1" (the paper
/// gives no number); the tolerance reads "slightly" as at most 10% below, and not above 1.
const SLIGHTLY_BELOW: (f64, f64) = (0.90, 1.00);

/// The check of Fig. 11's swizzling / traditional lookups/s, `points` the ratio of the two
/// modes' medians at each database size at least twice the pool: ✓ if every one is within
/// [`SLIGHTLY_BELOW`], ~ if some are, ✗ if none ([`every_point`]); `io` says how misses were read.
fn fig11_slightly_below(points: &[(String, f64)], io: &str) -> Check {
    let (lo, hi) = SLIGHTLY_BELOW;
    let (verdict, outside) = every_point(points, |v| (lo..=hi).contains(&v));
    let tolerance = format!("tolerance: {lo:.2}-{hi:.2} at every size with data >= 2 x pool");
    Check::new(
        "Fig. 11, data beyond the pool: swizzling / traditional lookups/s",
        "direction only: slightly below 1 (\"deteriorate quite similarly\", swizzling un-swizzles \
         victims), O_DIRECT, 2-10x the pool",
        format!("{}, {io}", each_size(points)),
        verdict,
    )
    .because(if outside.is_empty() { tolerance } else { format!("{tolerance}; {outside}") })
}

/// Fig. 11's graceful but significant degradation: `mode`'s median lookups/s beyond the pool
/// (at `size` of data) against its own in memory, `(beyond, in_memory)`: ✓ below 0.5. A run
/// that measured no lookups (a `--duration` too short for one) is not enough data (~): its
/// ratio of 0 passed as a collapse (lab README rule 8).
fn fig11_degrades(
    mode: PoolMode,
    (beyond, in_memory): (f64, f64),
    size: &str,
    io: &str,
    direct_io: bool,
) -> Check {
    let what = format!("Fig. 11: {mode} beyond the pool / in memory");
    let paper = "well below 1: \"even a small fraction of buffer faults and the required disk I/O cause \
                 performance to degrade significantly\", O_DIRECT";
    if beyond <= 0.0 || in_memory <= 0.0 {
        return Check::new(
            what,
            paper,
            format!("{beyond:.0} / {in_memory:.0} lookups/s at {size} of data, {io}"),
            Verdict::Partial,
        )
        .because("not enough data: a run measured no lookups; give a longer --duration");
    }
    let v = beyond / in_memory;
    Check::new(what, paper, format!("{v:.2} at {size} of data, {io}"), Verdict::of(v < 0.5)).because(
        if direct_io {
            "the paper gives no number: ✓ below 0.5".to_string()
        } else {
            "the paper gives no number: ✓ below 0.5; through the page cache a miss is a copy, not a device \
             read (run with --direct-io as the paper did)"
                .to_string()
        },
    )
}

/// The paper's thread count in Figs. 10 and 11.
const PAPER_THREADS: usize = 24;

/// `each` point as `0.97 at 4 MiB, ...`.
fn each_size(points: &[(String, f64)]) -> String {
    points.iter().map(|(size, v)| format!("{v:.2} {size}")).collect::<Vec<_>>().join(", ")
}

/// Fig. 10 in memory, swizzling / main-memory lookups/s at each database size with data at most
/// half the pool (`points`): ✓ if every one is within [`MATCH_TOLERANCE`] of 1, ~ if some are,
/// ✗ if none ([`every_point`], which names the sizes outside); `threads` is our condition.
fn fig10_swizzling_matches(points: &[(String, f64)], threads: &str) -> Check {
    let (verdict, outside) = every_point(points, |v| (v - 1.0).abs() <= MATCH_TOLERANCE);
    let tolerance =
        format!("tolerance: within {:.0}% of 1 at every size with data <= pool/2", MATCH_TOLERANCE * 100.0);
    Check::new(
        "Fig. 10, data in memory: swizzling / main-memory lookups/s",
        "0.97-0.99 (1-3% apart), 24 threads, working set below the 10 GB pool",
        format!("{}, {threads}", each_size(points)),
        verdict,
    )
    .because(if outside.is_empty() { tolerance } else { format!("{tolerance}; {outside}") })
}

/// Fig. 10 in memory, traditional / main-memory lookups/s at each size with data at most half
/// the pool (`points`), against the paper's [`TRADITIONAL_PAPER`] ± [`MATCH_TOLERANCE`] at every
/// size ([`every_point`]); `swizzling` are swizzling / main-memory at the same sizes, for the
/// reason: where a size is outside, the reason says whether the direction (traditional below
/// both) still holds at every size, and with fewer than the paper's 24 `thread_count` why the
/// gap can be smaller.
fn fig10_traditional_below(
    points: &[(String, f64)],
    swizzling: &[(String, f64)],
    thread_count: usize,
    threads: &str,
) -> Check {
    let (lo, hi) = TRADITIONAL_PAPER;
    let (verdict, outside) =
        every_point(points, |v| (lo - MATCH_TOLERANCE..=hi + MATCH_TOLERANCE).contains(&v));
    let tolerance = format!(
        "tolerance: {:.0}% either side of the paper's range at every size with data <= pool/2",
        MATCH_TOLERANCE * 100.0
    );
    let reason = if outside.is_empty() {
        tolerance
    } else {
        let below = |(size, v): &(String, f64)| {
            *v < 1.0 && swizzling.iter().find(|(s, _)| s == size).is_none_or(|(_, s)| v < s)
        };
        let not_below: Vec<&str> =
            points.iter().filter(|p| !below(p)).map(|(size, _)| size.as_str()).collect();
        let direction = if not_below.is_empty() {
            if thread_count < PAPER_THREADS {
                format!(
                    "direction agrees at every size (traditional below); the paper's gap came from \
                     {PAPER_THREADS} threads contending on pin/unpin atomics and page-table latches, ours runs \
                     {thread_count}"
                )
            } else {
                "direction agrees at every size (traditional below)".to_string()
            }
        } else {
            format!("traditional is not below main-memory and swizzling {}", not_below.join(", "))
        };
        format!("{tolerance}; {outside}; {direction}")
    };
    Check::new(
        "Fig. 10, data in memory: traditional / main-memory lookups/s",
        format!("{lo:.2}-{hi:.2} (main-memory 41-68% faster, Fig. 1 on the same data), 24 threads"),
        format!("{}, {threads}", each_size(points)),
        verdict,
    )
    .because(reason)
}

/// The paper's claims of Figs. 10 and 11 held against the medians of each point: in memory
/// (data at most half the pool) and beyond the pool (data at least twice the pool).
#[must_use]
pub fn fig10_checks(configs: &[Config], points: &[Vec<ModeResult>]) -> Vec<Check> {
    let Some(first) = configs.first() else { return Vec::new() };
    let pool = first.pool_bytes as u64;
    let data = |c: &Config| c.records.saturating_mul(RECORD_BYTES);
    let pairs: Vec<(&Config, &[ModeResult])> = configs.iter().zip(points.iter().map(Vec::as_slice)).collect();
    let fits = |c: &Config| data(c) * 2 <= pool;
    let beyond = |c: &Config| data(c) >= pool * 2;
    let threads = format!("{} thread(s), pool {}", first.threads, bytes(pool));
    let io = if first.direct_io { "direct I/O" } else { "page cache" };
    let mut checks = Vec::new();
    let per_size = |num: PoolMode, den: PoolMode, keep: &dyn Fn(&Config) -> bool| -> Vec<(String, f64)> {
        pairs
            .iter()
            .filter(|(c, _)| keep(c))
            .filter_map(|(c, p)| {
                Some((format!("at {}", bytes(data(c))), ratio(median_at(p, num)?, median_at(p, den)?)?))
            })
            .collect()
    };
    let swz_mm = per_size(PoolMode::Swizzling, PoolMode::MainMemory, &fits);
    if !swz_mm.is_empty() {
        checks.push(fig10_swizzling_matches(&swz_mm, &threads));
    }
    let trad_mm = per_size(PoolMode::Traditional, PoolMode::MainMemory, &fits);
    if !trad_mm.is_empty() {
        checks.push(fig10_traditional_below(&trad_mm, &swz_mm, first.threads, &threads));
    }
    let swz_trad: Vec<(String, f64)> = pairs
        .iter()
        .filter(|(c, _)| beyond(c))
        .filter_map(|(c, p)| {
            let v = ratio(median_at(p, PoolMode::Swizzling)?, median_at(p, PoolMode::Traditional)?)?;
            Some((format!("at {}", bytes(data(c))), v))
        })
        .collect();
    if !swz_trad.is_empty() {
        checks.push(fig11_slightly_below(&swz_trad, io));
    }
    // Graceful but significant degradation: each buffered mode's throughput at the largest
    // point against its own in memory.
    let largest = pairs.iter().filter(|(c, _)| beyond(c)).max_by_key(|(c, _)| data(c));
    let in_memory = pairs.iter().filter(|(c, _)| fits(c)).max_by_key(|(c, _)| data(c));
    if let (Some((big, at_big)), Some((_, at_mem))) = (largest, in_memory) {
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let (Some(b), Some(m)) = (median_at(at_big, mode), median_at(at_mem, mode)) else { continue };
            checks.push(fig11_degrades(mode, (b, m), &bytes(data(big)), io, first.direct_io));
        }
    }
    let limit = configs.iter().zip(points).find(|(_, p)| {
        p.iter().any(|r| {
            r.mode == PoolMode::MainMemory
                && r.error.as_deref().is_some_and(|e| e.contains("main-memory mode"))
        })
    });
    if let Some((c, _)) = limit {
        checks.push(
            Check::new(
                "Fig. 11: main-memory beyond its memory",
                "collapses once the OS swaps (it cannot tell inner nodes from leaves)",
                format!("cannot load {} of data: stops at its memory limit", bytes(data(c))),
                Verdict::Partial,
            )
            .because("ours has no swap: main-memory mode refuses data beyond its limit, so the collapse shows as missing points"),
        );
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Fig10Args,
    }

    /// The tiny scale: rows with the right `io`, the chart, and the checks of both figures.
    #[test]
    fn tiny_scale_makes_rows_a_chart_and_the_checks_of_figs_10_and_11() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let cli = TestCli::try_parse_from([
            "t",
            "--pool",
            "2MiB",
            "--max-factor",
            "2",
            "--duration",
            "0.05",
            "--warmup",
            "0",
            "--repeat",
            "1",
            "--dir",
            d,
        ])
        .unwrap();
        let configs = fig10_configs(&cli.args.common, cli.args.pool, 2).unwrap();
        let plan = Fig10 { configs, caption: String::new() };
        let outcome = plan.run(Progress::off()).unwrap();
        let rows = plan.rows(&outcome);
        let pool = 2u64 << 20;
        let data = |r: &Record| r.records * RECORD_BYTES;
        assert!(rows.iter().any(|r| data(r) <= pool / 2) && rows.iter().any(|r| data(r) >= pool * 2));
        for r in &rows {
            // In memory nothing is read; beyond the pool the buffered modes read through the
            // page cache (no --direct-io).
            if data(r) <= pool / 2 {
                assert_eq!(r.io, "none", "{r:?}");
            }
            if data(r) >= pool * 2 {
                assert_ne!(r.mode, "main-memory", "main-memory cannot hold it");
                assert_eq!(r.io, "page-cache", "{r:?}");
                assert!(r.pages_read > 0);
            }
        }
        assert_eq!(plan.charts(&outcome).len(), 1);
        let checks = plan.checks(&outcome);
        for what in [
            "Fig. 10, data in memory: swizzling",
            "Fig. 10, data in memory: traditional",
            "Fig. 11, data beyond the pool",
            "Fig. 11: swizzling beyond the pool / in memory",
            "Fig. 11: main-memory beyond its memory",
        ] {
            assert!(checks.iter().any(|c| c.what.starts_with(what)), "no check {what}: {checks:#?}");
        }
        assert!(checks.iter().all(|c| !c.paper.is_empty() && !c.ours.is_empty() && !c.reason.is_empty()));
    }

    /// Fig. 11's degradation check: a run that measured no lookups beyond the pool (or in
    /// memory) is "not enough data", where its ratio of 0 passed as a collapse (`--duration 1e-9`
    /// printed "0.00 ✓").
    #[test]
    fn fig11_degradation_with_no_lookups_measured_is_not_enough_data() {
        for (b, m) in [(0.0, 1e6), (1e5, 0.0), (0.0, 0.0)] {
            let c = fig11_degrades(PoolMode::Traditional, (b, m), "8 MiB", "page cache", false);
            assert_eq!(c.verdict, Verdict::Partial, "{c}");
            assert!(c.reason.starts_with("not enough data") && c.reason.contains("--duration"), "{c}");
        }
        assert_eq!(
            fig11_degrades(PoolMode::Swizzling, (1e5, 1e6), "8 MiB", "x", true).verdict,
            Verdict::Holds
        );
        assert_eq!(
            fig11_degrades(PoolMode::Swizzling, (9e5, 1e6), "8 MiB", "x", true).verdict,
            Verdict::Fails
        );
    }

    /// Fig. 10's in-memory ratios are held at every size with data at most half the pool. The
    /// old checks took the median over the sizes (`ratio_over`): swizzling at 0.82, 1.00 and 1.45
    /// of main-memory had the median 1.00 and passed, and traditional at 0.40, 0.65 and 0.95 the
    /// median 0.65, inside the paper's 0.60-0.71.
    #[test]
    fn fig10_in_memory_ratios_are_held_at_every_size_not_the_median() {
        let pts = |v: &[f64]| {
            v.iter().enumerate().map(|(i, &x)| (format!("at {} MiB", 1 << i), x)).collect::<Vec<_>>()
        };
        let c = fig10_swizzling_matches(&pts(&[0.82, 1.00, 1.45]), "1 thread(s), pool 16 MiB");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert_eq!(c.ours, "0.82 at 1 MiB, 1.00 at 2 MiB, 1.45 at 4 MiB, 1 thread(s), pool 16 MiB");
        assert!(c.reason.contains("2 of 3") && c.reason.contains("0.82 at 1 MiB"), "{}", c.reason);
        assert_eq!(fig10_swizzling_matches(&pts(&[0.98, 0.99, 1.02]), "x").verdict, Verdict::Holds);
        assert_eq!(fig10_swizzling_matches(&pts(&[0.80, 1.20]), "x").verdict, Verdict::Fails);

        let swz = pts(&[1.0, 1.0, 1.0]);
        let c = fig10_traditional_below(&pts(&[0.40, 0.65, 0.95]), &swz, 1, "x");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(
            c.reason.contains("0.40 at 1 MiB")
                && c.reason.contains("0.95 at 4 MiB")
                && c.reason.contains("direction agrees at every size")
                && c.reason.contains("ours runs 1"),
            "{}",
            c.reason
        );
        assert_eq!(fig10_traditional_below(&pts(&[0.62, 0.70, 0.75]), &swz, 24, "x").verdict, Verdict::Holds);
        let c = fig10_traditional_below(&pts(&[0.90, 1.10]), &pts(&[1.0, 1.0]), 24, "x");
        assert_eq!(c.verdict, Verdict::Fails);
        assert!(c.reason.contains("not below main-memory and swizzling at 2 MiB"), "{}", c.reason);
    }

    /// Fig. 11's "slightly below 1" is held at every size beyond the pool, within 0.90-1.00: the
    /// old check took the median over the sizes and passed up to 1.05 (0.75-1.33 as ~), so 1.04
    /// and a median hiding a size at 1.30 both held.
    #[test]
    fn fig11_is_slightly_below_one_at_every_size() {
        let pts =
            |v: &[f64]| v.iter().enumerate().map(|(i, &x)| (format!("at {i} MiB"), x)).collect::<Vec<_>>();
        let c = fig11_slightly_below(&pts(&[0.95, 0.97, 0.92]), "direct I/O");
        assert_eq!(c.verdict, Verdict::Holds, "{c}");
        assert_eq!(c.ours, "0.95 at 0 MiB, 0.97 at 1 MiB, 0.92 at 2 MiB, direct I/O");
        assert!(c.paper.starts_with("direction only"), "{}", c.paper);
        assert_eq!(fig11_slightly_below(&pts(&[1.04, 1.04]), "direct I/O").verdict, Verdict::Fails);
        let c = fig11_slightly_below(&pts(&[0.95, 0.96, 1.30]), "direct I/O");
        assert_eq!(c.verdict, Verdict::Partial);
        assert!(c.reason.contains("1.30 at 2 MiB"), "{}", c.reason);
        assert_eq!(fig11_slightly_below(&pts(&[0.80]), "direct I/O").verdict, Verdict::Fails);
    }
}
