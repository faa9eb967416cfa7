//! `experiment gilbert-stack-depth`: Gilbert 2017 Figs. 1.5 and 3.1, the LRU stack-depth
//! histogram of the page references TPC-C makes.
//!
//! Per thread count: a TPC-C database is loaded (untraced), reopened with a buffer reference
//! trace (buffer README, rule B17) and a pool that holds everything, runs `--transactions`
//! transactions, and is closed; the trace's fixes, in time order, are the reference string. Its
//! LRU stack distances (1 = the page referenced last) give the histogram, the share of
//! references LRU would hit with few frames, and the frames LRU needs for a 75% hit ratio. The
//! thesis traced 500,000 transactions on 100 warehouses: about 63% (1 thread) and 54% (100
//! threads) of the references had a distance below 20, and 1,095 frames of a 1,691,576-page
//! database reached a 75% LRU hit ratio (25 threads).

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use swizzledb::Database;
use swizzledb_sim::{StackDistances, Trace};

use crate::experiments::common::tpcc_config;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::harness::{self, Until};
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::progress::Progress;
use crate::support::text::{thousands, write_aligned};
use crate::support::units;
use crate::workloads::tpcc::{Tpcc, TpccConfig};
use crate::workloads::{Workload, WorkloadError};
use crate::Usage;

/// Options of `experiment gilbert-stack-depth`.
#[derive(Args, Debug)]
pub struct StackDepthArgs {
    /// Warehouses (the thesis traced 100)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    warehouses: u32,
    /// A smaller TPC-C catalog for smoke runs: 2,000 items and 300 customers per district
    /// instead of the benchmark's 100,000 and 3,000 (loads about 20 times faster)
    #[arg(long)]
    small_catalog: bool,
    /// Thread counts, comma-separated: one trace each (the thesis compared 1 and 100)
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Transactions traced per thread count (the thesis traced 500,000; 1 to 5,000,000)
    #[arg(long, default_value = "100000", value_parser = parse_transactions)]
    transactions: u64,
    /// Directory for the database and its trace (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for gilbert-stack-depth.csv, .json and the plot (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The most `--transactions`: ten times the thesis's trace. The trace is read into memory whole
/// for its stack distances (2^64 - 1 ran for ever, its trace growing without bound).
const MAX_TRANSACTIONS: u64 = 5_000_000;

/// `--transactions`: 1 to [`MAX_TRANSACTIONS`].
fn parse_transactions(input: &str) -> Result<u64, String> {
    units::parse_count_in(
        input,
        "--transactions",
        1,
        MAX_TRANSACTIONS,
        "ten times the thesis's 500,000; each trace is analysed in memory",
    )
}

/// References with a distance below this are the thesis's "reuse distance < 20".
pub const NEAR: u64 = 20;

/// Fig. 1.5: the share of references below distance 20 fell from 63% (1 thread) to 54% (100
/// threads), by 9 points.
const PAPER_DROP: f64 = 0.63 - 0.54;

/// A drop within 5 points of the thesis's 9 counts: a tolerance below the drop itself, so that
/// no change at all does not pass.
const DROP_TOLERANCE: f64 = 0.05;

/// Fig. 3.1: 1,095 frames reached a 75% LRU hit ratio on 1,691,576 pages (0.065%).
const PAPER_FRAMES: f64 = 1095.0;
const PAPER_PAGES: f64 = 1_691_576.0;

/// Our share of frames for 75% LRU hits counts within this factor of the thesis's 0.065%, either
/// way: our database is some 20 times smaller, so its share may differ, but not by an order of
/// magnitude.
const FRAMES_FACTOR: f64 = 2.0;

/// The share below distance 20 with more threads (`more`) against fewer (`fewer`): ✓ if it drops
/// by the thesis's 9 points within [`DROP_TOLERANCE`], ~ if it drops by another amount (the
/// direction holds), ✗ if it does not drop.
fn drop_verdict(fewer: f64, more: f64) -> Verdict {
    let drop = fewer - more;
    if (drop - PAPER_DROP).abs() <= DROP_TOLERANCE {
        Verdict::Holds
    } else if drop > 0.0 {
        Verdict::Partial
    } else {
        Verdict::Fails
    }
}

/// Whether `share` (frames for 75% LRU hits / database pages) lies within [`FRAMES_FACTOR`] of
/// the thesis's 1,095 / 1,691,576.
fn frames_share_holds(share: f64) -> bool {
    let paper = PAPER_FRAMES / PAPER_PAGES;
    (paper / FRAMES_FACTOR..=paper * FRAMES_FACTOR).contains(&share)
}

/// Fig. 1.5: 63% of the references had a distance below 20 with 1 thread.
const PAPER_ONE_THREAD: f64 = 0.63;

/// Our 1-thread share counts within this many points of the thesis's 63%.
const ONE_THREAD_TOLERANCE: f64 = 0.10;

/// Fig. 1.5's 63% below distance 20, which the thesis measured with 1 thread, held against the
/// 1-thread trace only: within [`ONE_THREAD_TOLERANCE`] ✓, else ✗. Without a 1-thread trace the
/// share at another thread count is not the thesis's condition (the share falls with more
/// threads): ~, saying so, with the share at the fewest threads in `ours` but not judged. `None`
/// without traces.
fn one_thread_check(results: &[Depths], warehouses: u32) -> Option<Check> {
    let what = "share of references with an LRU distance below 20, 1 thread(s)";
    let paper = format!(
        "63% (1 thread), 54% (100 threads); within {:.0} points of 63% counts, with 1 thread only",
        ONE_THREAD_TOLERANCE * 100.0
    );
    let Some(d) = results.iter().find(|d| d.threads == 1) else {
        let fewest = results.iter().min_by_key(|d| d.threads)?;
        return Some(
            Check::new(
                what,
                paper,
                format!(
                    "no 1-thread trace; {:.1}% at {} threads",
                    fewest.near_share() * 100.0,
                    fewest.threads
                ),
                Verdict::Partial,
            )
            .because(format!(
                "not compared: the thesis's 63% is for 1 thread and this run traced {} threads (add 1 to \
                 --threads); the drop with more threads is the next check",
                results.iter().map(|d| d.threads.to_string()).collect::<Vec<_>>().join(", ")
            )),
        );
    };
    let share = d.near_share();
    let ok = (share - PAPER_ONE_THREAD).abs() <= ONE_THREAD_TOLERANCE;
    Some(Check::new(what, paper, format!("{:.1}%", share * 100.0), Verdict::of(ok)).because(format!(
        "{}; {warehouses} warehouses and {} transactions here, 100 warehouses and 500,000 transactions in \
             the thesis",
        if ok { "within 10 points" } else { "more than 10 points from 63%" },
        thousands(d.transactions)
    )))
}

/// Runs `experiment gilbert-stack-depth`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database, trace or I/O failure.
pub fn execute(args: &StackDepthArgs) -> Result<ExitCode, Box<dyn Error>> {
    let config = tpcc_config(args.warehouses, args.small_catalog);
    config.validate().map_err(|e| Usage(e.to_string()))?;
    let mut threads: Vec<usize> = args.threads.iter().map(|&t| usize::from(t)).collect();
    threads.sort_unstable();
    threads.dedup();
    if args.transactions < threads.iter().copied().max().unwrap_or(1) as u64 {
        return Err(Usage("--transactions must be at least the largest thread count".into()).into());
    }
    let plan = StackDepth {
        config,
        threads,
        transactions: args.transactions,
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    experiment::execute(&plan, args.out.as_deref())
}

/// The plan.
pub struct StackDepth {
    /// TPC-C's scale.
    pub config: TpccConfig,
    /// One trace per thread count.
    pub threads: Vec<usize>,
    /// Transactions per trace.
    pub transactions: u64,
    /// Scratch directory.
    pub dir: PathBuf,
}

/// One trace's analysis.
pub struct Depths {
    /// Threads that ran the transactions.
    pub threads: usize,
    /// Transactions run.
    pub transactions: u64,
    /// Pages in the database file.
    pub db_pages: u64,
    /// Distinct pages referenced.
    pub distinct: u64,
    /// The stack distances.
    pub stack: StackDistances,
}

impl Depths {
    /// Share of references with a distance below [`NEAR`].
    #[must_use]
    pub fn near_share(&self) -> f64 {
        let near: u64 = self.stack.histogram().filter(|&(d, _)| d < NEAR).map(|(_, c)| c).sum();
        near as f64 / self.stack.requests().max(1) as f64
    }

    /// The fewest frames with which LRU hits at least `ratio` of the references (cold misses
    /// included); `None` if no number of frames does.
    #[must_use]
    pub fn frames_for_hit_ratio(&self, ratio: f64) -> Option<u64> {
        let allowed = ((1.0 - ratio) * self.stack.requests() as f64).floor() as u64;
        let (mut lo, mut hi) = (1u64, self.distinct.max(1));
        if self.stack.lru_misses(hi) > allowed {
            return None;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.stack.lru_misses(mid) <= allowed {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    }
}

/// One row of `gilbert-stack-depth.csv`: one bucket of one trace's histogram.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StackDepthRow {
    pub experiment: &'static str,
    pub threads: usize,
    pub transactions: u64,
    pub distance_min: String,
    pub distance_max: String,
    pub references: u64,
    pub share: f64,
    pub lru_misses: u64,
    pub lru_miss_ratio: f64,
    pub io: &'static str,
}

/// Removes the database, its log and its trace when dropped.
struct Scratch(PathBuf, PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(&self.1);
    }
}

fn trace_one(plan: &StackDepth, threads: usize, progress: Progress) -> Result<Depths, Box<dyn Error>> {
    let stem = format!("swizzledb-stack-depth-{}-{threads}", std::process::id());
    let files = Scratch(plan.dir.join(format!("{stem}.swz")), plan.dir.join(format!("{stem}.swzt")));
    let tpcc = Tpcc::new(plan.config.clone())?;
    let pool = usize::try_from(4 * plan.config.record_bytes() + (256 << 20)).unwrap_or(usize::MAX);
    progress.say(format_args!("loading {} warehouses ...", plan.config.warehouses));
    let db =
        Database::builder().pool_bytes(pool).logging(false).lab(|l| l.locking(false)).create(&files.0)?;
    tpcc.load(&db)?;
    db.close()?;
    progress.say(format_args!("tracing {} transactions on {threads} thread(s) ...", plan.transactions));
    let db = Database::builder()
        .pool_bytes(pool)
        .logging(false)
        .lab(|l| l.locking(false).trace(&files.1))
        .open(&files.0)?;
    let per_thread = plan.transactions / threads as u64;
    harness::run(&tpcc, &db, threads, Until::Operations(per_thread))?;
    tpcc.verify(&db)?;
    db.close()?;
    let db_pages = std::fs::metadata(&files.0).map(|m| m.len()).unwrap_or(0) / 8192;
    let pages = swizzledb_buffer::page_references(&files.1)
        .map_err(|e| WorkloadError::Config(format!("reading the trace {}: {e}", files.1.display())))?;
    let trace = Trace::from_pages(pages)?;
    let stack = StackDistances::new(&trace);
    Ok(Depths {
        threads,
        transactions: per_thread * threads as u64,
        db_pages,
        distinct: u64::from(trace.distinct_pages()),
        stack,
    })
}

/// Buckets of distances: one per distance up to 32, then four per octave.
fn bucket(d: u64) -> (u64, u64) {
    if d <= 32 {
        return (d, d);
    }
    let shift = (63 - d.leading_zeros()).saturating_sub(2);
    let first = (d >> shift) << shift;
    (first, first + (1 << shift) - 1)
}

fn buckets(stack: &StackDistances) -> Vec<((u64, u64), u64)> {
    let mut out: Vec<((u64, u64), u64)> = Vec::new();
    for (d, count) in stack.histogram() {
        let b = bucket(d);
        match out.last_mut() {
            Some((last, sum)) if *last == b => *sum += count,
            _ => out.push((b, count)),
        }
    }
    out
}

impl Experiment for StackDepth {
    const NAME: &'static str = "gilbert-stack-depth";
    type Row = StackDepthRow;
    type Results = Vec<Depths>;

    fn caption(&self) -> String {
        format!(
            "Gilbert 2017 Figs. 1.5/3.1: LRU stack depths of TPC-C's page references, {} warehouses, {} \
             transactions per trace, threads {}.",
            self.config.warehouses,
            thousands(self.transactions),
            self.threads.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<Depths>, Box<dyn Error>> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| crate::UnusablePath(format!("cannot create --dir {}: {e}", self.dir.display())))?;
        self.threads.iter().map(|&t| trace_one(self, t, progress)).collect()
    }

    fn tables(&self, results: &Vec<Depths>, out: &mut dyn Write) -> io::Result<()> {
        let mut table = vec![[
            "threads",
            "references",
            "distinct pages",
            "database pages",
            "distance < 20",
            "cold",
            "frames for 75% LRU hits",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect::<Vec<_>>()];
        for d in results {
            table.push(vec![
                d.threads.to_string(),
                thousands(d.stack.requests()),
                thousands(d.distinct),
                thousands(d.db_pages),
                format!("{:.1}%", d.near_share() * 100.0),
                format!("{:.2}%", d.stack.cold() as f64 * 100.0 / d.stack.requests().max(1) as f64),
                d.frames_for_hit_ratio(0.75).map_or("-".into(), thousands),
            ]);
        }
        writeln!(out)?;
        write_aligned(out, &table)?;
        writeln!(
            out,
            "distance 1 = the page referenced last; consistency conditions 1-4 hold after every trace"
        )
    }

    fn checks(&self, results: &Vec<Depths>) -> Vec<Check> {
        let mut checks = Vec::new();
        checks.extend(one_thread_check(results, self.config.warehouses));
        if let (Some(first), Some(last)) = (results.first(), results.last()) {
            if last.threads > first.threads {
                let (a, b) = (first.near_share(), last.near_share());
                let verdict = drop_verdict(a, b);
                checks.push(Check {
                    what: format!("share below 20 with {} threads against {}", last.threads, first.threads),
                    paper: format!(
                        "{:.0} points lower with more threads (54% at 100 against 63% at 1); {:.0} to {:.0} points counts",
                        PAPER_DROP * 100.0,
                        (PAPER_DROP - DROP_TOLERANCE) * 100.0,
                        (PAPER_DROP + DROP_TOLERANCE) * 100.0
                    ),
                    ours: format!(
                        "{:.1} points ({})",
                        (a - b) * 100.0,
                        results
                            .iter()
                            .map(|d| format!("{:.1}% at {}", d.near_share() * 100.0, d.threads))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    verdict,
                    reason: format!(
                        "{}; the thesis compared 1 and 100 threads, this run {} and {}",
                        match verdict {
                            Verdict::Holds => "within the tolerance",
                            Verdict::Partial => "lower, as in the thesis, but by a different amount: the direction only",
                            Verdict::Fails => "not lower with more threads",
                        },
                        first.threads,
                        last.threads
                    ),
                });
            }
        }
        for d in results {
            if let Some(frames) = d.frames_for_hit_ratio(0.75) {
                let share = frames as f64 / d.db_pages.max(1) as f64;
                let paper = PAPER_FRAMES / PAPER_PAGES;
                let ok = frames_share_holds(share);
                checks.push(Check {
                    what: format!(
                        "frames for a 75% LRU hit ratio as a share of the database, {} thread(s)",
                        d.threads
                    ),
                    paper: format!(
                        "1,095 of 1,691,576 pages ({:.3}%, 25 threads); {:.3}% to {:.3}% (a factor of {FRAMES_FACTOR:.0}) counts",
                        paper * 100.0,
                        paper / FRAMES_FACTOR * 100.0,
                        paper * FRAMES_FACTOR * 100.0
                    ),
                    ours: format!(
                        "{} of {} ({:.3}%)",
                        thousands(frames),
                        thousands(d.db_pages),
                        share * 100.0
                    ),
                    verdict: Verdict::of(ok),
                    reason: format!(
                        "{:.1} times the thesis's share, {}; our database has {} pages, the thesis's 1,691,576",
                        share / paper,
                        if ok { "within the tolerance" } else { "outside the tolerance" },
                        thousands(d.db_pages)
                    ),
                });
            }
        }
        checks
    }

    fn rows(&self, results: &Vec<Depths>) -> Vec<StackDepthRow> {
        let mut rows = Vec::new();
        for d in results {
            let requests = d.stack.requests().max(1) as f64;
            for ((lo, hi), references) in buckets(&d.stack) {
                let lru_misses = d.stack.lru_misses(hi);
                rows.push(StackDepthRow {
                    experiment: Self::NAME,
                    threads: d.threads,
                    transactions: d.transactions,
                    distance_min: lo.to_string(),
                    distance_max: hi.to_string(),
                    references,
                    share: references as f64 / requests,
                    lru_misses,
                    lru_miss_ratio: lru_misses as f64 / requests,
                    io: "none",
                });
            }
            let cold = d.stack.cold();
            rows.push(StackDepthRow {
                experiment: Self::NAME,
                threads: d.threads,
                transactions: d.transactions,
                distance_min: "inf".into(),
                distance_max: "inf".into(),
                references: cold,
                share: cold as f64 / requests,
                lru_misses: cold,
                lru_miss_ratio: cold as f64 / requests,
                io: "none",
            });
        }
        rows
    }

    fn charts(&self, results: &Vec<Depths>) -> Vec<(String, Chart)> {
        let series = results
            .iter()
            .map(|d| {
                let requests = d.stack.requests().max(1) as f64;
                Series {
                    name: format!("{} thread(s)", d.threads),
                    points: buckets(&d.stack)
                        .into_iter()
                        .map(|((lo, hi), count)| {
                            // Share per distance, so that wider buckets do not look taller.
                            let y = count as f64 * 100.0 / requests / (hi - lo + 1) as f64;
                            Point { x: lo as f64, y, y_min: y, y_max: y }
                        })
                        .collect(),
                }
            })
            .collect();
        vec![(
            Self::NAME.to_string(),
            Chart {
                title: "LRU stack depths of TPC-C's page references (Gilbert 2017, Figs. 1.5/3.1)".into(),
                x_label: "LRU stack distance (1 = referenced last)".into(),
                y_label: "% of references per distance".into(),
                x_scale: Scale::Log2,
                series,
                note: Some(format!(
                    "{} warehouses, {} transactions per trace; cold misses not shown",
                    self.config.warehouses,
                    thousands(self.transactions)
                )),
                vline: Some((NEAR as f64, "20".into())),
                marks: None,
            },
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_then_four_per_octave() {
        assert_eq!(bucket(1), (1, 1));
        assert_eq!(bucket(32), (32, 32));
        assert_eq!(bucket(33), (32, 39));
        assert_eq!(bucket(40), (40, 47));
        assert_eq!(bucket(64), (64, 79));
        assert_eq!(bucket(1000), (896, 1023));
    }

    /// A loop over 10 pages: every reference after the first round has distance 10, so LRU
    /// needs 10 frames to hit all but the 10 cold misses.
    #[test]
    fn frames_for_a_hit_ratio_come_from_the_exact_lru_curve() {
        let trace = Trace::from_pages((0..1000u64).map(|i| i % 10)).unwrap();
        let d = Depths {
            threads: 1,
            transactions: 0,
            db_pages: 100,
            distinct: 10,
            stack: StackDistances::new(&trace),
        };
        assert_eq!(d.frames_for_hit_ratio(0.75), Some(10));
        assert_eq!(d.near_share(), 0.99);
        let cold = Trace::from_pages(0..100u64).unwrap();
        let d = Depths {
            threads: 1,
            transactions: 0,
            db_pages: 100,
            distinct: 100,
            stack: StackDistances::new(&cold),
        };
        assert_eq!(d.frames_for_hit_ratio(0.75), None);
    }

    /// The thesis's drop is 9 points (63% to 54%): 9 or 6 points hold; a drop of 1 point (which
    /// the old check, any decrease, passed) is the direction only; a rise fails.
    #[test]
    fn a_drop_is_held_against_the_thesis_nine_points() {
        assert_eq!(drop_verdict(0.63, 0.54), Verdict::Holds);
        assert_eq!(drop_verdict(0.70, 0.64), Verdict::Holds);
        assert_eq!(drop_verdict(0.701, 0.692), Verdict::Partial);
        assert_eq!(drop_verdict(0.70, 0.45), Verdict::Partial);
        assert_eq!(drop_verdict(0.63, 0.65), Verdict::Fails);
        assert_eq!(drop_verdict(0.63, 0.63), Verdict::Fails);
    }

    /// The thesis's 0.065% within a factor of 2: 0.09% holds; 0.5% (which the old "below 1%"
    /// passed, 8 times the thesis's) and 0.02% fail.
    #[test]
    fn frames_are_held_against_the_thesis_share() {
        assert!(frames_share_holds(0.0009) && frames_share_holds(0.00107));
        assert!(!frames_share_holds(0.005) && !frames_share_holds(0.0002));
    }

    /// The depths of `pages` traced with `threads` threads, 1,000 transactions over a
    /// 2,000-page database.
    fn traced(threads: usize, pages: Vec<u64>, distinct: u64) -> Depths {
        let trace = Trace::from_pages(pages).unwrap();
        Depths { threads, transactions: 1000, db_pages: 2000, distinct, stack: StackDistances::new(&trace) }
    }

    /// A trace looping over 10 pages with `threads` threads: 99% of its references below 20.
    fn looping(threads: usize) -> Depths {
        traced(threads, (0..1000u64).map(|i| i % 10).collect(), 10)
    }

    /// A trace whose share below 20 is 60%: a loop over 40 pages twice (40 cold references, 40
    /// at distance 40), then two pages referenced 62 and 63 times (2 cold, 123 at distance 1):
    /// 123 of 205.
    fn sixty_percent(threads: usize) -> Depths {
        let pages = (0..80u64)
            .map(|i| i % 40)
            .chain(std::iter::repeat_n(1000, 62))
            .chain(std::iter::repeat_n(1001, 63));
        traced(threads, pages.collect(), 42)
    }

    /// The thesis's 63% is for 1 thread. Traces at 2 and 4 threads with 60% below 20, which the
    /// old check held against 63% as "2 thread(s)" and passed, are not compared: ~, saying there
    /// is no 1-thread trace. With a 1-thread trace it is the one judged, wherever it comes in
    /// the results: 60% holds, 99% fails.
    #[test]
    fn the_thesis_one_thread_share_is_held_against_a_one_thread_trace_only() {
        let share = sixty_percent(2).near_share();
        assert!((share - 0.6).abs() < 1e-9, "{share}");
        let c = one_thread_check(&[sixty_percent(2), sixty_percent(4)], 4).unwrap();
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.ours.starts_with("no 1-thread trace; 60.0% at 2 threads"), "{c}");
        assert!(c.reason.starts_with("not compared") && c.reason.contains("traced 2, 4 threads"), "{c}");
        let c = one_thread_check(&[looping(4), sixty_percent(1)], 4).unwrap();
        assert_eq!((c.verdict, c.ours.as_str()), (Verdict::Holds, "60.0%"), "{c}");
        let c = one_thread_check(&[looping(1), sixty_percent(2)], 4).unwrap();
        assert_eq!((c.verdict, c.ours.as_str()), (Verdict::Fails, "99.0%"), "{c}");
        assert_eq!(one_thread_check(&[], 4), None);
    }

    /// Through the checks: two traces looping over 10 pages (1 and 2 threads) of a 2,000-page
    /// database. Equal shares below 20 (no drop) fail where the old check passed them, and 10
    /// frames for 75% hits, 0.5% of the pages, fail where the old "below 1%" passed.
    #[test]
    fn no_drop_and_a_large_share_of_frames_fail() {
        let plan = StackDepth {
            config: TpccConfig::tiny(1),
            threads: vec![1, 2],
            transactions: 1000,
            dir: std::env::temp_dir(),
        };
        let checks = plan.checks(&vec![looping(1), looping(2)]);
        let drop = checks.iter().find(|c| c.what.starts_with("share below 20")).unwrap();
        assert_eq!(drop.verdict, Verdict::Fails, "{drop}");
        assert!(drop.ours.starts_with("0.0 points (99.0% at 1, 99.0% at 2)"), "{drop}");
        let frames: Vec<&Check> = checks.iter().filter(|c| c.what.starts_with("frames")).collect();
        assert_eq!(frames.len(), 2);
        assert!(
            frames.iter().all(|c| c.verdict == Verdict::Fails && c.ours == "10 of 2,000 (0.500%)"),
            "{frames:#?}"
        );
    }
}
