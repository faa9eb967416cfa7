//! `experiment lersch-cleaner`: Lersch 2015 Figs. 5.5–5.8, TPC-B throughput, CPU and write
//! bandwidth against the page cleaner's interval, the classical cleaner (RECOVERY.md R15)
//! against the decoupled one (R20, with log-based checkpoints, R19).
//!
//! The thesis reports: throughput barely changes with the interval; with the log on an SSD the
//! decoupled cleaner gains nothing significant, with the log in memory it reaches much higher
//! throughput; CPU is similar for both; write bandwidth is largely independent of the interval.
//! Both databases here keep the log archive (the decoupled cleaner replays it), checkpoints run
//! every second, and the log is on the data's device (`--log-in-memory`: in a memory file
//! system, the thesis's second series). The sweep is
//! [`crate::experiments::papers::lersch::checkpoints`]'s.
//!
//! The checks (`cleaner_checks`) hold each claim at every interval. The thesis's figures carry
//! no values: the one equality it states (no significant gain with the log on SSD) is checked on
//! both sides of 1.0, the rest are directions, with tolerances of ours fixed in this file.

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;

use crate::experiments::papers::lersch::checkpoints::{Sweep, SweepArgs, Varied};
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::Chart;
use crate::support::progress::Progress;
use crate::support::stats;
use crate::workloads::tpcb::{BenchRow, TpcbRow};

/// Options of `experiment lersch-cleaner`.
#[derive(Args, Debug)]
pub struct LerschCleanerArgs {
    /// Cleaner intervals in milliseconds, comma-separated (the thesis: 1 ms to 100 s)
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    intervals: Vec<u64>,
    #[command(flatten)]
    common: SweepArgs,
}

/// Runs `experiment lersch-cleaner`.
///
/// # Errors
/// Bad options (as [`crate::Usage`]), or a database or I/O failure.
pub fn execute(args: &LerschCleanerArgs) -> Result<ExitCode, Box<dyn Error>> {
    let sweep = Sweep::new(Varied::Cleaner, &args.intervals, &args.common)?;
    experiment::execute(&LerschCleaner(sweep), args.common.out.as_deref())
}

/// The plan of `experiment lersch-cleaner`.
pub struct LerschCleaner(Sweep);

impl Experiment for LerschCleaner {
    const NAME: &'static str = "lersch-cleaner";
    type Row = TpcbRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        format!(
            "Lersch 2015 Figs. 5.5-5.8: TPC-B throughput, CPU and pages written against the cleaner interval ({} ms), \
             the classical cleaner against the decoupled one; the log archive on, checkpoints every second, {}.",
            self.0.intervals.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
            self.0.log_place()
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        self.0.run(progress)
    }

    fn tables(&self, rows: &Vec<BenchRow>, out: &mut dyn Write) -> io::Result<()> {
        self.0.table(rows, out)
    }

    fn checks(&self, rows: &Vec<BenchRow>) -> Vec<Check> {
        let s = &self.0;
        let points: Vec<Medians> = s
            .intervals
            .iter()
            .filter_map(|&ms| {
                let both = |f: &dyn Fn(&BenchRow) -> f64| -> Option<[f64; 2]> {
                    Some([s.median(rows, s.kinds[0], ms, f)?, s.median(rows, s.kinds[1], ms, f)?])
                };
                Some(Medians {
                    ms,
                    tx: both(&BenchRow::tx_per_sec)?,
                    cpu: both(&BenchRow::cpu_cores)?,
                    pages: both(&|r| r.pages_written as f64 / r.seconds)?,
                })
            })
            .collect();
        let threads = s.base.threads.iter().copied().max().unwrap_or(1);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let mut checks = cleaner_checks(&points, s.log_in_memory(), &s.log_place());
        note_crowding(&mut checks, crowded(threads, cores).as_deref());
        checks
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpcbRow> {
        self.0.rows(Self::NAME, rows)
    }

    fn charts(&self, rows: &Vec<BenchRow>) -> Vec<(String, Chart)> {
        vec![
            (
                format!("{}-throughput", Self::NAME),
                self.0.chart(
                    rows,
                    "TPC-B throughput against the cleaner interval (Lersch 2015, Fig. 5.5)",
                    "transactions per second",
                    BenchRow::tx_per_sec,
                ),
            ),
            (
                format!("{}-cpu", Self::NAME),
                self.0.chart(
                    rows,
                    "CPU against the cleaner interval (Lersch 2015, Figs. 5.6/5.7)",
                    "CPU cores busy",
                    BenchRow::cpu_cores,
                ),
            ),
            (
                format!("{}-writes", Self::NAME),
                self.0.chart(
                    rows,
                    "Pages written against the cleaner interval (Lersch 2015, Fig. 5.8)",
                    "pages written per second",
                    |r| r.pages_written as f64 / r.seconds,
                ),
            ),
        ]
    }
}

/// The medians the checks compare at one cleaner interval: `[classical, decoupled]` of each
/// measure.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Medians {
    /// The cleaner interval, ms.
    ms: u64,
    /// Transactions per second (Fig. 5.5).
    tx: [f64; 2],
    /// CPU cores busy (Figs. 5.6, 5.7).
    cpu: [f64; 2],
    /// Pages written per second (Fig. 5.8).
    pages: [f64; 2],
}

/// Decoupled over classical counts as "the same" inside this band: tx/s with the log on disk
/// (Fig. 5.5: "no significant improvement"), CPU (Figs. 5.6/5.7: "similar") and pages written
/// per second (Fig. 5.8: "similar bandwidth"). The thesis gives no values; the band is ours, the
/// one `lersch-checkpoints` uses for "equal".
const SAME: (f64, f64) = (0.90, 1.10);
/// "Much higher" (Fig. 5.5, the log in memory) counts from this ratio on (ours).
const MUCH_HIGHER: f64 = 1.2;
/// "Varies very little" / "not much impact" across the intervals (Figs. 5.5, 5.8): fastest over
/// slowest interval at most this (ours).
const FLAT: f64 = 1.25;

/// The text the throughput ratio's checks begin with (a condition is appended to their reason
/// where the machine is crowded: [`crowded`]).
const TX_RATIO: &str = "decoupled / classical tx/s";

/// Background threads of the decoupled configuration besides the workers that take CPU in
/// proportion to the log: the archiver, the run merger and the cleaner's replay.
const BACKGROUND: usize = 3;

/// Why the throughput ratio depends on the machine, where it does: with fewer cores than
/// workers plus [`BACKGROUND`], the decoupled cleaner's threads take the workers' CPU, which the
/// classical cleaner does not need (measured on two cores: `docs/lersch.md`, 2026-12-01). `None`
/// where every thread has a core.
fn crowded(threads: usize, cores: usize) -> Option<String> {
    (threads + BACKGROUND > cores).then(|| {
        format!(
            "{threads} worker(s) on {cores} core(s): the archiver, run merger and replay share the workers' cores \
             (on two cores they took about 60% of the CPU, docs/lersch.md), which the thesis's machine did not"
        )
    })
}

/// Appends `why` (from [`crowded`]) to the reason of every throughput-ratio check that does
/// not hold.
fn note_crowding(checks: &mut [Check], why: Option<&str>) {
    let Some(why) = why else { return };
    for c in checks.iter_mut().filter(|c| c.what.starts_with(TX_RATIO) && c.verdict != Verdict::Holds) {
        c.reason = format!("{}; {why}", c.reason);
    }
}

/// Whether `x` lies in [`SAME`].
fn same(x: f64) -> bool {
    (SAME.0..=SAME.1).contains(&x)
}

/// The thesis's claims of Sec. 5.3 held against the medians at each interval (`place`: where
/// the log is, for the text). Every interval is a point of its check (`experiment::every_point`);
/// a point whose denominator is 0 is left out, a check without points is not made.
fn cleaner_checks(points: &[Medians], log_in_memory: bool, place: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let band = format!("{:.2} to {:.2}", SAME.0, SAME.1);
    // Decoupled over classical of `f` at every interval.
    let ratios = |f: fn(&Medians) -> [f64; 2]| -> Vec<(String, f64)> {
        points
            .iter()
            .filter_map(|p| Some((format!("at {} ms", p.ms), stats::ratio(f(p)[1], f(p)[0])?)))
            .collect()
    };
    // Fastest over slowest interval of `f`, for each cleaner.
    let spreads = |f: fn(&Medians) -> [f64; 2]| -> Vec<(String, f64)> {
        if points.len() < 2 {
            return Vec::new();
        }
        [(0, "classical"), (1, "decoupled")]
            .into_iter()
            .filter_map(|(k, name)| {
                let v: Vec<f64> = points.iter().map(|p| f(p)[k]).collect();
                let (lo, hi) = (v.iter().copied().reduce(f64::min)?, v.iter().copied().reduce(f64::max)?);
                Some((name.to_string(), stats::ratio(hi, lo)?))
            })
            .collect()
    };
    let shown = |pts: &[(String, f64)]| {
        pts.iter().map(|(label, v)| format!("{v:.2} {label}")).collect::<Vec<_>>().join(", ")
    };
    let mut push = |what: String, paper: String, pts: Vec<(String, f64)>, ok: &dyn Fn(f64) -> bool| {
        if pts.is_empty() {
            return;
        }
        let (verdict, reason) = experiment::every_point(&pts, ok);
        checks.push(Check::new(what, paper, shown(&pts), verdict).because(reason));
    };

    // Fig. 5.5: decoupled against classical throughput.
    let tx = ratios(|p| p.tx);
    if log_in_memory {
        push(
            format!("{TX_RATIO} over the intervals, {place}"),
            format!(
                "direction only: much higher with the log in memory (Fig. 5.5); at least {MUCH_HIGHER:.2} at \
                 every interval counts"
            ),
            tx,
            &|r| r >= MUCH_HIGHER,
        );
    } else {
        push(
            format!("{TX_RATIO} over the intervals, {place}"),
            format!(
                "1.0: no significant gain with the log on SSD (Fig. 5.5; the figure's values are not in the \
                 text); {band} at every interval counts"
            ),
            tx,
            &same,
        );
    }
    // Fig. 5.5: throughput against the interval.
    push(
        "fastest / slowest interval, tx/s, each cleaner".into(),
        format!(
            "direction only: throughput varies very little with the interval (Fig. 5.5); at most {FLAT:.2} \
             counts"
        ),
        spreads(|p| p.tx),
        &|x| x <= FLAT,
    );
    // Figs. 5.6 (log on SSD) and 5.7 (log in memory): CPU.
    push(
        format!("decoupled / classical CPU cores busy over the intervals, {place}"),
        format!(
            "direction only: similar CPU for both cleaners (Fig. {}); {band} at every interval counts",
            if log_in_memory { "5.7" } else { "5.6" }
        ),
        ratios(|p| p.cpu),
        &same,
    );
    // Fig. 5.8: write bandwidth against the interval, and between the cleaners.
    push(
        "fastest / slowest interval, pages written per second, each cleaner".into(),
        format!(
            "direction only: the interval has little impact on the write bandwidth (Fig. 5.8); at most \
             {FLAT:.2} counts"
        ),
        spreads(|p| p.pages),
        &|x| x <= FLAT,
    );
    let pages = ratios(|p| p.pages);
    if log_in_memory {
        push(
            format!("decoupled / classical pages written per second over the intervals, {place}"),
            format!(
                "direction only: the decoupled cleaner with the log in memory is the exception to the similar \
                 bandwidths, in a direction the thesis does not give (Fig. 5.8); outside {band} at every \
                 interval counts"
            ),
            pages,
            &|r| !same(r),
        );
    } else {
        push(
            format!("decoupled / classical pages written per second over the intervals, {place}"),
            format!(
                "direction only: similar bandwidth in most cases, the log on SSD (Fig. 5.8); {band} at every \
                 interval counts"
            ),
            pages,
            &same,
        );
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Medians at `ms` with the decoupled cleaner at `tx`, `cpu` and `pages` times the classical
    /// one's 1000 tx/s, 1.5 cores and 500 pages/s.
    fn at(ms: u64, tx: f64, cpu: f64, pages: f64) -> Medians {
        Medians { ms, tx: [1000.0, 1000.0 * tx], cpu: [1.5, 1.5 * cpu], pages: [500.0, 500.0 * pages] }
    }

    fn find<'a>(checks: &'a [Check], what: &str) -> &'a Check {
        checks.iter().find(|c| c.what.contains(what)).unwrap_or_else(|| panic!("no {what:?} in {checks:#?}"))
    }

    /// With the log on disk the thesis found no significant gain: a decoupled cleaner 1.5x the
    /// classical one at every interval is ✗ (the old one-sided check, at least 0.95, passed it),
    /// 1.5x at one of three intervals ~ with that interval named. Figs. 5.6-5.8 are checked at
    /// every interval, the paper column saying where the thesis gives no number.
    #[test]
    fn the_cleaner_ratio_is_two_sided_and_figs_5_6_to_5_8_are_checked() {
        let disk = "the log on the data's device";
        let faster = cleaner_checks(&[at(1, 1.5, 1.0, 1.0), at(100, 1.5, 1.0, 1.0)], false, disk);
        let c = find(&faster, "decoupled / classical tx/s");
        assert_eq!(c.verdict, Verdict::Fails, "{c}");
        assert!(c.paper.starts_with("1.0") && c.ours.contains("1.50 at 1 ms"), "{c}");
        let one = cleaner_checks(
            &[at(1, 1.0, 1.0, 1.0), at(100, 1.5, 1.0, 1.0), at(1000, 0.95, 1.0, 1.0)],
            false,
            disk,
        );
        let c = find(&one, "decoupled / classical tx/s");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.reason.contains("1 of 3") && c.reason.contains("1.50 at 100 ms"), "{c}");

        // Everything as the thesis says: every check holds.
        let good = cleaner_checks(&[at(1, 1.02, 1.05, 0.98), at(100, 0.97, 0.95, 1.04)], false, disk);
        assert_eq!(good.len(), 5, "{good:#?}");
        for c in &good {
            assert_eq!(c.verdict, Verdict::Holds, "{c}");
            assert!(c.what.contains("tx/s") || c.paper.starts_with("direction only"), "{c}");
        }
        assert!(find(&good, "CPU").paper.contains("Fig. 5.6"));
        // Figs. 5.6-5.8 fail where the numbers disagree: CPU 1.3x at one interval, the
        // classical cleaner writing 3x the pages at 1 ms than at 100 ms.
        let bad = cleaner_checks(
            &[
                Medians { ms: 1, tx: [1000.0, 1000.0], cpu: [1.5, 1.95], pages: [1500.0, 500.0] },
                Medians { ms: 100, tx: [1000.0, 1000.0], cpu: [1.5, 1.5], pages: [500.0, 500.0] },
            ],
            false,
            disk,
        );
        let c = find(&bad, "CPU");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.reason.contains("1.30 at 1 ms"), "{c}");
        let c = find(&bad, "fastest / slowest interval, pages");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.reason.contains("3.00 classical"), "{c}");
        assert_eq!(find(&bad, "decoupled / classical pages").verdict, Verdict::Partial);

        // The log in memory: "much higher" is a direction, checked at every interval; Fig. 5.7;
        // the decoupled cleaner's bandwidth is the exception.
        let mem = cleaner_checks(&[at(1, 1.3, 1.0, 0.5), at(100, 1.1, 1.0, 0.5)], true, "the log in memory");
        let c = find(&mem, "decoupled / classical tx/s");
        assert!(c.paper.starts_with("direction only") && c.verdict == Verdict::Partial, "{c}");
        assert!(find(&mem, "CPU").paper.contains("Fig. 5.7"));
        assert_eq!(find(&mem, "decoupled / classical pages").verdict, Verdict::Holds);
    }

    /// The throughput ratio's reason names the crowding where workers and the decoupled
    /// cleaner's threads outnumber the cores, and only there.
    #[test]
    fn a_crowded_machine_is_named_in_the_throughput_reason() {
        let why = crowded(2, 2).expect("2 workers and 3 background threads on 2 cores");
        assert!(why.contains("2 worker(s) on 2 core(s)") && why.contains("docs/lersch.md"), "{why}");
        assert!(crowded(2, 4).is_some(), "2 + 3 threads on 4 cores");
        assert!(crowded(1, 4).is_none(), "1 + 3 threads on 4 cores: one each");
        assert!(crowded(2, 16).is_none(), "16 cores hold 2 workers and the background");
        let mut mem = cleaner_checks(&[at(1000, 0.7, 1.0, 0.5)], true, "the log in memory");
        assert!(find(&mem, TX_RATIO).verdict == Verdict::Fails, "0.7 is not much higher");
        note_crowding(&mut mem, Some(&why));
        let c = find(&mem, TX_RATIO);
        assert!(c.reason.starts_with("outside the tolerance") && c.reason.ends_with(&why), "{c}");
        assert!(!find(&mem, "CPU").reason.contains(&why), "only the throughput ratio depends on it");
        let mut held = cleaner_checks(&[at(1000, 1.3, 1.0, 0.5)], true, "the log in memory");
        note_crowding(&mut held, Some(&why));
        assert!(find(&held, TX_RATIO).reason.is_empty(), "a check that holds needs no excuse");
    }
}
