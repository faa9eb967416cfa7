//! `experiment gilbert-fix-time`: Gilbert 2017 Figs. 2.7 and 2.8, the time of one `fix()` inside
//! TPC-C, split by hit or miss and by latch mode, swizzling off and on, at a pool larger than the
//! data and at a small one.
//!
//! The runs are `harness::pools` runs (cold, on copies of one loaded database) with fix timing on
//! (buffer README, B12a: every non-root fix is timed, by hit or miss and latch mode). The thesis
//! found, at 20 GiB: shared hits much faster with swizzling and `fix()` about 30% faster overall
//! (no misses after the warm-up); at 500 MiB: swizzling slower, even on hits, unexplained.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use swizzledb::{PolicySpec, PoolMode, Stats};

use crate::experiments::common::tpcc_config;
use crate::experiments::papers::gilbert::pools::percent;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::harness::pools::{self, CopyOptions, PoolPoint, PoolRun, PoolSweep};
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::progress::Progress;
use crate::support::text::{bytes, write_aligned};
use crate::support::{stats, units};
use crate::workloads::tpcc::{Tpcc, TpccConfig};
use crate::Usage;

/// Options of `experiment gilbert-fix-time`.
#[derive(Args, Debug)]
pub struct FixTimeArgs {
    /// Warehouses (about 100 MiB of records each; the thesis ran 100)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    warehouses: u32,
    /// A smaller TPC-C catalog for smoke runs: 2,000 items and 300 customers per district
    /// instead of the benchmark's 100,000 and 3,000 (loads about 20 times faster)
    #[arg(long)]
    small_catalog: bool,
    /// Pool sizes as percentages of the loaded database: a large one (Fig. 2.7) and a small one
    /// (Fig. 2.8)
    #[arg(long, default_value = "6%,150%", value_delimiter = ',', value_parser = units::parse_pool_percent)]
    fractions: Vec<f64>,
    /// Replacement policy (the thesis's chapter 2 used RANDOM)
    #[arg(long, default_value = "random")]
    policy: PolicySpec,
    /// Threads running transactions
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Seconds per run (each run starts with an empty pool)
    #[arg(long, default_value = "10", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Runs per configuration, interleaved
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Read and write with O_DIRECT, so that misses cost device reads
    #[arg(long)]
    direct_io: bool,
    /// Directory for the base file and its copies (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for gilbert-fix-time.csv and .json (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The four kinds of timed fixes, in table order.
pub const KINDS: [&str; 4] = ["hit, shared", "hit, exclusive", "miss, shared", "miss, exclusive"];

/// (fixes, nanoseconds) of kind `k` (index into [`KINDS`]).
fn kind(s: &Stats, k: usize) -> (u64, u64) {
    match k {
        0 => (s.timed_hits_shared, s.hit_shared_nanos),
        1 => (s.timed_hits_exclusive, s.hit_exclusive_nanos),
        2 => (s.timed_misses_shared, s.miss_shared_nanos),
        _ => (s.timed_misses_exclusive, s.miss_exclusive_nanos),
    }
}

/// Timed hits, shared and exclusive, and their nanoseconds: what the thesis's "about 30%
/// faster" describes (after the warm-up there were no misses, so fix() time was hit time).
fn hits(s: &Stats) -> (u64, u64) {
    let ((a, x), (b, y)) = (kind(s, 0), kind(s, 1));
    (a + b, x + y)
}

/// All timed fixes and their nanoseconds.
fn all(s: &Stats) -> (u64, u64) {
    (0..4).map(|k| kind(s, k)).fold((0, 0), |(n, t), (a, b)| (n + a, t + b))
}

/// Kind `k` of [`KINDS`], or 4 for all hits, or 5 for all fixes.
fn of_kind(s: &Stats, k: usize) -> (u64, u64) {
    match k {
        0..=3 => kind(s, k),
        4 => hits(s),
        _ => all(s),
    }
}

fn ns_per((n, t): (u64, u64)) -> Option<f64> {
    (n > 0).then(|| t as f64 / n as f64)
}

/// Fig. 2.8's pool: 500 MiB of the thesis's 13.22 GiB.
const FIG_2_8_FRACTION: f64 = 0.037;

/// A fix-time claim held against `at`, the swizzling / traditional ratio at each pool size as
/// (fraction, ratio): ✓ if `ok` holds at every size, ~ at some, ✗ at none
/// (`experiment::every_point`), never the largest or smallest size alone. `ours` has every size
/// and `cond`; the reason is `why.0` for ✓, else the sizes outside and `why.1`.
fn fix_check(
    what: &str,
    paper: &str,
    at: &[(f64, f64)],
    ok: impl Fn(f64) -> bool,
    cond: &str,
    why: (&str, &str),
) -> Check {
    let points: Vec<(String, f64)> = at.iter().map(|&(f, v)| (format!("at {}", percent(f)), v)).collect();
    let (verdict, outside) = experiment::every_point(&points, ok);
    let ours = points.iter().map(|(l, v)| format!("{v:.2} {l}")).collect::<Vec<_>>().join(", ");
    Check::new(what, paper, format!("{ours}; {cond}"), verdict).because(if verdict == Verdict::Holds {
        why.0.to_string()
    } else {
        format!("{outside}; {}", why.1)
    })
}

/// Runs `experiment gilbert-fix-time`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &FixTimeArgs) -> Result<ExitCode, Box<dyn Error>> {
    let config = tpcc_config(args.warehouses, args.small_catalog);
    config.validate().map_err(|e| Usage(e.to_string()))?;
    let mut fractions = args.fractions.clone();
    fractions.sort_by(f64::total_cmp);
    fractions.dedup();
    let modes = [PoolMode::Traditional, PoolMode::Swizzling];
    let points = fractions
        .iter()
        .flat_map(|&fraction| modes.map(|mode| PoolPoint { mode, policy: args.policy, fraction }))
        .collect();
    let sweep = PoolSweep {
        points,
        threads: usize::from(args.threads),
        duration: Duration::from_secs_f64(args.duration),
        repeat: u32::from(args.repeat),
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
        load_pool_bytes: 2 * config.record_bytes() + (64 << 20),
        min_pool_bytes: 256 * 8192,
        copy: CopyOptions { direct_io: args.direct_io, time_fixes: true, ..CopyOptions::default() },
    };
    experiment::execute(&FixTime { config, sweep, fractions }, args.out.as_deref())
}

/// The plan.
pub struct FixTime {
    /// TPC-C's scale.
    pub config: TpccConfig,
    /// The runs (both modes at every size).
    pub sweep: PoolSweep,
    /// Pool sizes, ascending.
    pub fractions: Vec<f64>,
}

/// The runs and the loaded file's bytes.
pub struct Results {
    /// Every run.
    pub runs: Vec<PoolRun>,
    /// Bytes of the loaded file.
    pub data_bytes: u64,
}

/// One row of `gilbert-fix-time.csv`: one run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FixTimeRow {
    pub experiment: &'static str,
    pub mode: &'static str,
    pub policy: String,
    pub pool_fraction: f64,
    pub pool_bytes: u64,
    pub data_bytes: u64,
    pub threads: usize,
    pub repetition: u32,
    pub tx_per_sec: f64,
    pub hits_shared: u64,
    pub hit_shared_ns: Option<f64>,
    pub hits_exclusive: u64,
    pub hit_exclusive_ns: Option<f64>,
    pub misses_shared: u64,
    pub miss_shared_ns: Option<f64>,
    pub misses_exclusive: u64,
    pub miss_exclusive_ns: Option<f64>,
    pub fixes_timed: u64,
    pub fix_ns: Option<f64>,
    pub direct_io: bool,
    pub hits: u64,
    pub hit_ns: Option<f64>,
    pub io: &'static str,
}

impl FixTime {
    /// Median over the runs of (mode, fraction) of `f`.
    fn median(
        &self,
        runs: &[PoolRun],
        mode: PoolMode,
        fraction: f64,
        f: impl Fn(&PoolRun) -> Option<f64>,
    ) -> Option<f64> {
        stats::median_by(
            runs,
            |r| {
                let p = &self.sweep.points[r.point];
                p.mode == mode && p.fraction == fraction
            },
            f,
        )
    }

    /// Median ns per fix of `kind` (an index into [`KINDS`], 4 for all hits, 5 for all fixes)
    /// for (mode, fraction).
    fn ns(&self, runs: &[PoolRun], mode: PoolMode, fraction: f64, k: usize) -> Option<f64> {
        self.median(runs, mode, fraction, |r| ns_per(of_kind(&r.stats, k)))
    }

    fn ratio(&self, runs: &[PoolRun], fraction: f64, k: usize) -> Option<f64> {
        stats::ratio(
            self.ns(runs, PoolMode::Swizzling, fraction, k)?,
            self.ns(runs, PoolMode::Traditional, fraction, k)?,
        )
    }
}

impl Experiment for FixTime {
    const NAME: &'static str = "gilbert-fix-time";
    type Row = FixTimeRow;
    type Results = Results;

    fn caption(&self) -> String {
        format!(
            "Gilbert 2017 Figs. 2.7/2.8: nanoseconds per fix() inside TPC-C, {} warehouses, {} thread(s), {}, pools \
             of {} of the data, swizzling off and on; every run starts cold; {} s per run, {} repetitions, medians.\n\
             logging: off (buffer only; see bench wal for the log's cost)",
            self.config.warehouses,
            self.sweep.threads,
            self.sweep.points.first().map_or_else(String::new, |p| p.policy.to_string()),
            self.fractions.iter().map(|&f| percent(f)).collect::<Vec<_>>().join(", "),
            self.sweep.duration.as_secs_f64(),
            self.sweep.repeat
        ) + if self.sweep.copy.direct_io {
            "\nmisses read the device (O_DIRECT)"
        } else {
            "\nmisses read through the OS page cache (--direct-io for device reads)"
        }
    }

    fn run(&self, progress: Progress) -> Result<Results, Box<dyn Error>> {
        let (runs, data_bytes) = pools::run(&Tpcc::new(self.config.clone())?, &self.sweep, progress)?;
        Ok(Results { runs, data_bytes })
    }

    fn tables(&self, r: &Results, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "\nloaded database: {}", bytes(r.data_bytes))?;
        for &fraction in &self.fractions {
            let point = PoolPoint { fraction, ..self.sweep.points[0] };
            let pool = pools::pool_bytes(&self.sweep, &point, r.data_bytes);
            writeln!(
                out,
                "\npool {} of the data ({}): ns per fix (fixes per run)",
                percent(fraction),
                bytes(pool)
            )?;
            let mut table = vec![vec![
                "fix".to_string(),
                "traditional".into(),
                "swizzling".into(),
                "swizzling / traditional".into(),
            ]];
            for (k, name) in KINDS.iter().chain(&["hits", "all"]).enumerate() {
                let count =
                    |mode| self.median(&r.runs, mode, fraction, |run| Some(of_kind(&run.stats, k).0 as f64));
                let cell = |mode| match (self.ns(&r.runs, mode, fraction, k), count(mode)) {
                    (Some(ns), Some(n)) => format!("{ns:.0} ({n:.0})"),
                    _ => "-".into(),
                };
                table.push(vec![
                    (*name).to_string(),
                    cell(PoolMode::Traditional),
                    cell(PoolMode::Swizzling),
                    self.ratio(&r.runs, fraction, k).map_or("-".into(), |v| format!("{v:.2}")),
                ]);
            }
            write_aligned(out, &table)?;
        }
        writeln!(out, "\nroot fixes are not timed (the thesis counted fix_nonroot); consistency conditions 1-4 hold after every run")
    }

    fn checks(&self, r: &Results) -> Vec<Check> {
        let mut checks = Vec::new();
        let cond = format!(
            "inside TPC-C, {} warehouses, {} thread(s), {} s cold runs",
            self.config.warehouses,
            self.sweep.threads,
            self.sweep.duration.as_secs_f64()
        );
        // Fig. 2.7 (20 GiB of 13.22 GiB): every pool that holds the data is that condition.
        let large: Vec<f64> = self.fractions.iter().copied().filter(|&f| f >= 1.0).collect();
        // Fig. 2.8 (500 MiB of 13.22 GiB, 3.7%): the pool below the data nearest to it.
        let small: Option<f64> = self
            .fractions
            .iter()
            .copied()
            .filter(|&f| f < 1.0)
            .min_by(|a, b| (a - FIG_2_8_FRACTION).abs().total_cmp(&(b - FIG_2_8_FRACTION).abs()));
        let at = |sizes: &[f64], k: usize| -> Vec<(f64, f64)> {
            sizes.iter().filter_map(|&f| Some((f, self.ratio(&r.runs, f, k)?))).collect()
        };
        let shared_hits = at(&large, 0);
        if !shared_hits.is_empty() {
            checks.push(fix_check(
                "Fig. 2.7: shared hits, swizzling / traditional ns per fix()",
                "direction only: much faster with swizzling at 20 GiB of 13.22 GiB (a bar chart, no number); below \
                 0.85 at every pool of the data or more counts, our threshold",
                &shared_hits,
                |v| v < 0.85,
                &cond,
                ("the direction and a clear margin, as the thesis shows", "swizzled shared hits not clearly faster"),
            ));
        }
        let hits = at(&large, 4);
        if !hits.is_empty() {
            let all = at(&large, 5);
            let mut c = fix_check(
                "Fig. 2.7: hits, swizzling / traditional ns per fix() (the thesis's fix() inside TPC-C)",
                "about 0.7 (fix() about 30% faster; without swizzling 46% slower) inside TPC-C at 20 GiB of 13.22 GiB, \
                 8 terminals, no misses after the warm-up; 0.6 to 0.8 at every pool of the data or more counts",
                &hits,
                |v| (0.6..=0.8).contains(&v),
                &cond,
                (
                    "like with like: fix() hit time inside TPC-C, within 0.1 of the thesis",
                    if hits.iter().all(|&(_, v)| v <= 0.8) {
                        "like with like (inside TPC-C), but swizzled hits gain more than the thesis measured: our \
                         page table costs more per hit than Zero's, or Zero's hit had other costs"
                    } else if hits.iter().all(|&(_, v)| v >= 0.6) {
                        "like with like (inside TPC-C), but swizzled hits gain less than the thesis measured"
                    } else {
                        "like with like (inside TPC-C), but swizzled hits gain another amount than the thesis measured"
                    },
                ),
            );
            if !all.is_empty() {
                c.ours += &format!(
                    "; all fixes with the cold start's misses {}",
                    all.iter()
                        .map(|&(f, v)| format!("{v:.2} at {}", percent(f)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            checks.push(c);
        }
        let Some(small) = small else { return checks };
        let shared_hits = at(&[small], 0);
        if !shared_hits.is_empty() {
            checks.push(fix_check(
                "Fig. 2.8: shared hits, swizzling / traditional ns per fix()",
                "direction only: swizzling slower even on hits at 500 MiB (3.7%) of 13.22 GiB, unexplained in the \
                 thesis (a bar chart, no number); above 1 at the pool below the data nearest 3.7% counts",
                &shared_hits,
                |v| v > 1.0,
                &cond,
                (
                    "swizzled hits slower, as the thesis found",
                    "swizzled hits stay cheaper at a small pool: the thesis's slower hits are not reproduced (it \
                     called them unexplained)",
                ),
            ));
        }
        let shared_misses = at(&[small], 2);
        if !shared_misses.is_empty() {
            checks.push(fix_check(
                "Fig. 2.8: shared misses, swizzling / traditional ns per fix()",
                "direction only: misses slower with swizzling (the parent's pointer is swizzled), as expected (a bar \
                 chart, no number); above 1 at the pool below the data nearest 3.7% counts",
                &shared_misses,
                |v| v > 1.0,
                &cond,
                ("swizzled misses slower, as the thesis found", "swizzling adds nothing measurable to a miss here"),
            ));
        }
        checks
    }

    fn charts(&self, r: &Results) -> Vec<(String, Chart)> {
        let mut series = Vec::new();
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            for (k, name) in [(0, "shared hits"), (4, "hits"), (2, "shared misses"), (5, "all fixes")] {
                let points = self
                    .fractions
                    .iter()
                    .filter_map(|&fraction| {
                        let v: Vec<f64> = r
                            .runs
                            .iter()
                            .filter(|run| {
                                let p = &self.sweep.points[run.point];
                                p.mode == mode && p.fraction == fraction
                            })
                            .filter_map(|run| ns_per(of_kind(&run.stats, k)))
                            .collect();
                        let s = stats::summarize(&v)?;
                        Some(Point { x: fraction * 100.0, y: s.median, y_min: s.min, y_max: s.max })
                    })
                    .collect();
                series.push(Series { name: format!("{name} / {mode}"), points });
            }
        }
        vec![(
            Self::NAME.to_string(),
            Chart {
                title: "fix() inside TPC-C by kind, swizzling off and on (Gilbert 2017, Figs. 2.7/2.8)".into(),
                x_label: "pool size (% of the loaded database)".into(),
                y_label: "nanoseconds per fix()".into(),
                x_scale: Scale::Log2,
                series,
                note: Some(format!(
                    "TPC-C, {} warehouses, {} thread(s), cold pool per run, misses read {}; median and min..max of {} runs",
                    self.config.warehouses,
                    self.sweep.threads,
                    if self.sweep.copy.direct_io { "the device (O_DIRECT)" } else { "the OS page cache" },
                    self.sweep.repeat
                )),
                vline: Some((100.0, "the data".into())),
                marks: None,
            },
        )]
    }

    fn rows(&self, r: &Results) -> Vec<FixTimeRow> {
        r.runs
            .iter()
            .map(|run| {
                let p = &self.sweep.points[run.point];
                let s = &run.stats;
                let (n_all, _) = all(s);
                FixTimeRow {
                    experiment: Self::NAME,
                    mode: p.mode.name(),
                    policy: p.policy.to_string(),
                    pool_fraction: p.fraction,
                    pool_bytes: run.pool_bytes,
                    data_bytes: r.data_bytes,
                    threads: self.sweep.threads,
                    repetition: run.rep,
                    tx_per_sec: run.measurement.rate(run.measurement.operations()),
                    hits_shared: kind(s, 0).0,
                    hit_shared_ns: ns_per(kind(s, 0)),
                    hits_exclusive: kind(s, 1).0,
                    hit_exclusive_ns: ns_per(kind(s, 1)),
                    misses_shared: kind(s, 2).0,
                    miss_shared_ns: ns_per(kind(s, 2)),
                    misses_exclusive: kind(s, 3).0,
                    miss_exclusive_ns: ns_per(kind(s, 3)),
                    fixes_timed: n_all,
                    fix_ns: ns_per(all(s)),
                    direct_io: self.sweep.copy.direct_io,
                    hits: hits(s).0,
                    hit_ns: ns_per(hits(s)),
                    io: if self.sweep.copy.direct_io { "direct" } else { "page-cache" },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{KindCounts, Measurement};

    /// A tiny run at a small pool and one beyond the data: a row per run saying how misses read,
    /// hits as shared plus exclusive hits, the chart, and the four checks with their reasons.
    #[test]
    fn a_tiny_run_has_rows_a_chart_and_the_checks() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = plan(&[0.06, 1.5]);
        plan.sweep.duration = Duration::from_millis(300);
        plan.sweep.dir = dir.path().to_path_buf();
        plan.sweep.load_pool_bytes = 64 << 20;
        plan.sweep.min_pool_bytes = 64 * 8192;
        let results = plan.run(Progress::off()).unwrap();
        let rows = plan.rows(&results);
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert_eq!(r.io, "page-cache");
            assert_eq!(r.hits, r.hits_shared + r.hits_exclusive);
            assert!(r.hits > 0 && r.fixes_timed >= r.hits, "{r:?}");
        }
        assert!(rows.iter().any(|r| r.pool_fraction < 1.0 && r.misses_shared > 0), "{rows:?}");
        assert_eq!(plan.charts(&results).len(), 1);
        let checks = plan.checks(&results);
        assert_eq!(checks.len(), 4, "{checks:#?}");
        assert!(
            checks.iter().all(|c| !c.reason.is_empty() && c.ours.contains("inside TPC-C")),
            "{checks:#?}"
        );
    }

    /// A plan of both modes at `fractions` (points: per fraction, traditional then swizzling).
    fn plan(fractions: &[f64]) -> FixTime {
        let points = fractions
            .iter()
            .flat_map(|&fraction| {
                [PoolMode::Traditional, PoolMode::Swizzling].map(|mode| PoolPoint {
                    mode,
                    policy: "random".parse().unwrap(),
                    fraction,
                })
            })
            .collect();
        let sweep = PoolSweep {
            points,
            threads: 1,
            duration: Duration::from_secs(1),
            repeat: 1,
            dir: std::env::temp_dir(),
            load_pool_bytes: 1 << 20,
            min_pool_bytes: 1 << 20,
            copy: CopyOptions { time_fixes: true, ..CopyOptions::default() },
        };
        FixTime { config: TpccConfig::tiny(1), sweep, fractions: fractions.to_vec() }
    }

    /// A run of `point` whose 1,000 shared hits, 1,000 exclusive hits and 100 shared misses took
    /// `hit_ns` and `miss_ns` each.
    fn timed(point: usize, hit_ns: u64, miss_ns: u64) -> PoolRun {
        let stats = Stats {
            timed_hits_shared: 1000,
            hit_shared_nanos: 1000 * hit_ns,
            timed_hits_exclusive: 1000,
            hit_exclusive_nanos: 1000 * hit_ns,
            timed_misses_shared: 100,
            miss_shared_nanos: 100 * miss_ns,
            ..Stats::default()
        };
        PoolRun {
            point,
            rep: 0,
            pool_bytes: 1 << 20,
            measurement: Measurement {
                elapsed: Duration::from_secs(1),
                kinds: vec![KindCounts { done: 100, attempts: 100, rolled_back: 0 }],
                cut_short: false,
            },
            stats,
            cpu_secs: None,
            end_bytes: 1 << 22,
        }
    }

    /// Swizzled hits 0.7 of traditional ones at 150% but 0.9 at 120%: the old check judged the
    /// largest pool alone and passed; every pool of the data or more is judged now: ~, naming
    /// 120%. Fig. 2.8 is judged at the pool nearest the thesis's 3.7% (4% here, where swizzled
    /// hits are 1.2x), not the smallest (1%, 0.8x), which the old check took and failed. The
    /// thesis gives no number for shared hits or misses: their paper column says "direction only".
    #[test]
    fn every_large_pool_is_judged_and_the_small_one_is_the_thesis_size() {
        let p = plan(&[0.01, 0.04, 0.5, 1.2, 1.5]);
        // (traditional, swizzling) ns per hit and per miss at each fraction.
        let at = [
            ((100, 1000), (80, 1100)),
            ((100, 1000), (120, 1100)),
            ((100, 1000), (100, 1000)),
            ((100, 1000), (90, 1000)),
            ((100, 1000), (70, 1000)),
        ];
        let runs: Vec<PoolRun> = at
            .iter()
            .enumerate()
            .flat_map(|(i, &((th, tm), (sh, sm)))| [timed(2 * i, th, tm), timed(2 * i + 1, sh, sm)])
            .collect();
        let checks = p.checks(&Results { runs, data_bytes: 4 << 20 });
        assert_eq!(checks.len(), 4, "{checks:#?}");
        let find = |what: &str| checks.iter().find(|c| c.what.starts_with(what)).unwrap();
        let hits = find("Fig. 2.7: hits");
        assert_eq!(hits.verdict, Verdict::Partial, "{hits}");
        assert!(hits.ours.starts_with("0.90 at 120%, 0.70 at 150%; inside TPC-C"), "{hits}");
        assert!(hits.reason.contains("1 of 2 points: 0.90 at 120%"), "{hits}");
        assert!(hits.paper.starts_with("about 0.7"), "{hits}");
        let shared = find("Fig. 2.7: shared hits");
        assert_eq!(shared.verdict, Verdict::Partial, "{shared}");
        let small = find("Fig. 2.8: shared hits");
        assert_eq!(small.verdict, Verdict::Holds, "{small}");
        assert!(small.ours.starts_with("1.20 at 4%;"), "{small}");
        let misses = find("Fig. 2.8: shared misses");
        assert_eq!(misses.verdict, Verdict::Holds, "{misses}");
        for c in [shared, small, misses] {
            assert!(c.paper.starts_with("direction only"), "{c}");
        }
    }

    /// 300 shared hits in 30 µs and 100 exclusive ones in 20 µs: 400 hits at 125 ns.
    #[test]
    fn hits_add_shared_and_exclusive() {
        let s = Stats {
            timed_hits_shared: 300,
            hit_shared_nanos: 30_000,
            timed_hits_exclusive: 100,
            hit_exclusive_nanos: 20_000,
            timed_misses_shared: 10,
            miss_shared_nanos: 100_000,
            ..Stats::default()
        };
        assert_eq!(ns_per(of_kind(&s, 4)), Some(125.0));
        assert_eq!(ns_per(of_kind(&s, 5)), Some(150_000.0 / 410.0));
    }
}
