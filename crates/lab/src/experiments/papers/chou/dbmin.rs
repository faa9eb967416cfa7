//! `swizzledb sim dbmin`: Figures 2–5 of Chou & DeWitt (1986) on the DBMIN simulator of
//! `swizzledb_sim::dbmin`. Throughput against the number of concurrent queries (NCQ) for DBMIN,
//! HOT, WS, RAND, FIFO and CLOCK, per query mix (M1/M2/M3 with 100/80/60 buffers) and sharing
//! level (Fig. 2 none, Fig. 3 half, Fig. 4 full); Fig. 5 puts the feedback load controller in
//! front of RAND, FIFO and CLOCK (no sharing, with DBMIN, HOT and WS as reference lines).
//!
//! Every configuration is one independent, seeded simulation run; the grid is spread over
//! `--jobs` threads and the results are gathered in grid order, so the output does not depend on
//! the number of threads. The traces are generated once (one per query type from `--seed`).

use std::collections::BTreeSet;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use clap::Args;
use swizzledb_sim::dbmin::managers::Algorithm;
use swizzledb_sim::dbmin::queries::Workload;
use swizzledb_sim::dbmin::simulator::{self, Config, DbminError, Mix, Precision, RunResult, Sharing};
use swizzledb_sim::dbmin::{QueryTrace, QueryType};

use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::{Chart, Marks, Point, Scale, Series};
use crate::support::progress::Progress;
use crate::support::text;
use crate::Usage;

/// The NCQ points of the full grid.
const DEFAULT_NCQ: &str = "1,2,4,6,8,12,16,20,24,28,32";
/// The NCQ points of `--quick`.
const QUICK_NCQ: [u32; 4] = [1, 4, 8, 16];
/// The paper measured RAND, FIFO and CLOCK without load control only up to this NCQ.
const GLOBAL_MAX_NCQ: u32 = 16;
/// The most `--buffers`: far above the simulated database's pages (`DATABASE_PAGES`), and a
/// frame table that any machine allocates in a moment (larger ones aborted or ran for minutes).
const MAX_BUFFERS: u32 = 100_000;
/// Pages of the simulated database's permanent files (catalog, A, B, their indexes, A', B').
const DATABASE_PAGES: &str = "1,001";

/// Options of `sim dbmin`.
#[derive(Args)]
pub struct DbminArgs {
    /// Figures to reproduce, comma-separated: 2 (no sharing), 3 (half), 4 (full), 5 (feedback
    /// load control)
    #[arg(long, default_value = "2,3,4,5", value_delimiter = ',', value_parser = parse_figure)]
    figures: Vec<u8>,
    /// Algorithms, comma-separated (dbmin, hot, ws, rand, fifo, clock)
    #[arg(long, default_value = "dbmin,hot,ws,rand,fifo,clock", value_delimiter = ',',
          value_parser = parse_algorithm)]
    algorithms: Vec<Algorithm>,
    /// Query mixes, comma-separated (m1, m2, m3; Table 4)
    #[arg(long, default_value = "m1,m2,m3", value_delimiter = ',', value_parser = parse_mix)]
    mixes: Vec<Mix>,
    /// Numbers of concurrent queries, comma-separated, 1 to 32 (RAND, FIFO and CLOCK without
    /// load control stop at 16, as in the paper); --quick uses 1,4,8,16 unless this is given
    #[arg(long, value_delimiter = ',', value_parser = parse_ncq)]
    ncq: Option<Vec<u32>>,
    /// Buffer frames for every mix instead of the paper's 100/80/60, 1 to 100000 (the simulated
    /// database has 1,001 pages)
    #[arg(long)]
    buffers: Option<u32>,
    /// Seed of the traces and of every run
    #[arg(long, default_value = "1")]
    seed: u64,
    /// Directory for chou-dbmin.csv and the plots (nothing is written without it)
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs simulated at once (default: the number of cores)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
    /// A quick look (and the tests): NCQ 1,4,8,16, 5 batches of 10 queries after 10 warm-up
    /// queries instead of 20 batches of 50 after 50, never lengthened
    #[arg(long)]
    quick: bool,
    /// How many times a run's batch length may be doubled while its 95% half-width exceeds 5% of
    /// its throughput (the paper lengthened thrashing runs until every interval was within 5%);
    /// default 2, 0 with --quick
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=6))]
    max_doublings: Option<u32>,
}

fn parse_figure(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(f @ 2..=5) => Ok(f),
        _ => Err(format!("unknown figure {s:?}: use 2 (no sharing), 3 (half), 4 (full) or 5 (load control)")),
    }
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.trim().parse::<Algorithm>().map_err(|e| e.to_string())
}

fn parse_mix(s: &str) -> Result<Mix, String> {
    s.trim().parse::<Mix>().map_err(|e| e.to_string())
}

fn parse_ncq(s: &str) -> Result<u32, String> {
    let n: u32 =
        s.trim().parse().map_err(|_| format!("invalid NCQ {s:?}: expected a whole number 1 to 32"))?;
    if (1..=32).contains(&n) {
        Ok(n)
    } else {
        Err(DbminError::NcqOutOfRange(n).to_string())
    }
}

/// One configuration of the grid, identified without its run parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    mix: usize,
    sharing: usize,
    algorithm: usize,
    load_control: bool,
    ncq: u32,
}

/// One simulated configuration and what it measured.
struct Run {
    config: Config,
    result: RunResult,
    /// Wall time of this run, s.
    wall_s: f64,
}

/// Position of a value in a fixed list (for sorting keys).
fn index_of<T: PartialEq>(all: &[T], x: T) -> usize {
    all.iter().position(|a| *a == x).unwrap_or(usize::MAX)
}

fn key_of(c: &Config) -> Key {
    Key {
        mix: index_of(&Mix::ALL, c.mix),
        sharing: index_of(&Sharing::ALL, c.sharing),
        algorithm: index_of(&Algorithm::ALL, c.algorithm),
        load_control: c.load_control,
        ncq: c.ncq,
    }
}

/// The sharing level of Figures 2–4.
fn figure_sharing(figure: u8) -> Sharing {
    match figure {
        3 => Sharing::Half,
        4 => Sharing::Full,
        _ => Sharing::None,
    }
}

/// A line of one figure: an algorithm with or without the feedback controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Line {
    algorithm: Algorithm,
    load_control: bool,
}

impl Line {
    fn name(self) -> String {
        if self.load_control {
            format!("{}+lc", self.algorithm.name())
        } else {
            self.algorithm.name().to_string()
        }
    }
}

/// The lines of a figure, in the order of `--algorithms`.
fn figure_lines(figure: u8, algorithms: &[Algorithm]) -> Vec<Line> {
    algorithms
        .iter()
        .map(|&algorithm| Line { algorithm, load_control: figure == 5 && algorithm.is_global() })
        .collect()
}

/// The NCQ points of a line (RAND, FIFO and CLOCK without load control stop at 16).
fn line_ncq(line: Line, ncq: &[u32]) -> Vec<u32> {
    let cap = if line.algorithm.is_global() && !line.load_control { GLOBAL_MAX_NCQ } else { 32 };
    ncq.iter().copied().filter(|&n| n <= cap).collect()
}

/// The whole plan: configurations (deduplicated, in a fixed order) and the traces.
struct Plan {
    figures: Vec<u8>,
    /// The algorithms, in the order of `--algorithms`.
    algorithms: Vec<Algorithm>,
    /// Every line of the requested figures.
    lines: Vec<Line>,
    mixes: Vec<Mix>,
    ncq: Vec<u32>,
    configs: Vec<Config>,
    traces: Vec<QueryTrace>,
    jobs: usize,
    /// When a run's batches are lengthened (DS15).
    precision: Precision,
}

impl Plan {
    fn new(args: &DbminArgs) -> Result<Plan, Usage> {
        let dedup = |v: &[u8]| v.iter().copied().collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>();
        let figures = dedup(&args.figures);
        let mut algorithms: Vec<Algorithm> = Vec::new();
        for &a in &args.algorithms {
            if !algorithms.contains(&a) {
                algorithms.push(a);
            }
        }
        let mut mixes: Vec<Mix> = Vec::new();
        for &m in &args.mixes {
            if !mixes.contains(&m) {
                mixes.push(m);
            }
        }
        let mut ncq: Vec<u32> = match &args.ncq {
            Some(v) => v.clone(),
            None if args.quick => QUICK_NCQ.to_vec(),
            None => DEFAULT_NCQ.split(',').map(|s| s.parse().expect("default NCQ list")).collect(),
        };
        ncq.sort_unstable();
        ncq.dedup();
        if let Some(b) = args.buffers.filter(|b| !(1..=MAX_BUFFERS).contains(b)) {
            return Err(Usage(format!(
                "--buffers {b} is out of range: give 1 to {MAX_BUFFERS} (the simulated database has \
                 {DATABASE_PAGES} pages)"
            )));
        }
        let traces: Vec<QueryTrace> =
            QueryType::ALL.iter().map(|&q| Workload::new().trace(q, args.seed)).collect();
        let mut keyed: Vec<(Key, Config)> = Vec::new();
        for &figure in &figures {
            for &mix in &mixes {
                for line in figure_lines(figure, &algorithms) {
                    for n in line_ncq(line, &ncq) {
                        let mut c = Config::new(line.algorithm, mix, figure_sharing(figure), n);
                        c.load_control = line.load_control;
                        c.seed = args.seed;
                        if let Some(b) = args.buffers {
                            c.buffers = b;
                        }
                        if args.quick {
                            c.warmup_queries = 10;
                            c.batches = 5;
                            c.batch_queries = 10;
                        }
                        keyed.push((key_of(&c), c));
                    }
                }
            }
        }
        keyed.sort_by_key(|(k, _)| *k);
        keyed.dedup_by_key(|(k, _)| *k);
        let configs: Vec<Config> = keyed.into_iter().map(|(_, c)| c).collect();
        // Every bad input (a pool below a locality set or hot set, ...) is reported before
        // anything runs, with the simulator's own message.
        for c in &configs {
            simulator::validate(c, &traces).map_err(|e| Usage(dbmin_usage(c, &e)))?;
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let jobs = args.jobs.map_or(cores, |j| j as usize).max(1);
        let lines = line_union(&figures, &algorithms);
        let default_doublings = if args.quick { 0 } else { Precision::PAPER.max_doublings };
        let precision =
            Precision { max_doublings: args.max_doublings.unwrap_or(default_doublings), ..Precision::PAPER };
        Ok(Plan { figures, algorithms, lines, mixes, ncq, configs, traces, jobs, precision })
    }
}

/// A usage message naming the configuration an error was found in.
fn dbmin_usage(c: &Config, e: &DbminError) -> String {
    format!("{} with mix {} and {} buffers: {e}", c.algorithm.name(), c.mix.name(), c.buffers)
}

/// Every line of the requested figures, each once.
fn line_union(figures: &[u8], algorithms: &[Algorithm]) -> Vec<Line> {
    let mut lines = Vec::new();
    for &f in figures {
        for l in figure_lines(f, algorithms) {
            if !lines.contains(&l) {
                lines.push(l);
            }
        }
    }
    lines
}

/// Runs every configuration on `plan.jobs` threads; results in configuration order.
fn run_grid(plan: &Plan) -> Result<Vec<Run>, DbminError> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<Run, DbminError>>>> =
        Mutex::new((0..plan.configs.len()).map(|_| None).collect());
    let total = plan.configs.len();
    std::thread::scope(|s| {
        for _ in 0..plan.jobs.min(total.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(config) = plan.configs.get(i) else { break };
                let start = Instant::now();
                let outcome =
                    simulator::run_to_precision(config, &plan.traces, plan.precision).map(|result| Run {
                        config: config.clone(),
                        result,
                        wall_s: start.elapsed().as_secs_f64(),
                    });
                slots.lock().expect("a simulation thread panicked")[i] = Some(outcome);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if d.is_multiple_of(50) || d == total {
                    eprintln!("  {d}/{total} runs done");
                }
            });
        }
    });
    let slots = slots.into_inner().expect("a simulation thread panicked");
    slots.into_iter().map(|s| s.expect("every configuration was run")).collect()
}

/// The results, looked up by configuration.
struct Results {
    runs: Vec<Run>,
    /// Wall seconds of the whole grid.
    wall_s: f64,
}

impl Results {
    fn get(&self, mix: Mix, sharing: Sharing, line: Line, ncq: u32) -> Option<&Run> {
        self.runs.iter().find(|r| {
            r.config.mix == mix
                && r.config.sharing == sharing
                && r.config.algorithm == line.algorithm
                && r.config.load_control == line.load_control
                && r.config.ncq == ncq
        })
    }

    /// The throughput of a configuration with its 95% interval.
    fn span(&self, mix: Mix, sharing: Sharing, line: Line, ncq: u32) -> Option<Span> {
        self.get(mix, sharing, line, ncq).map(|r| Span::measured(&r.result))
    }
}

/// Runs `sim dbmin`.
pub fn run(args: &DbminArgs) -> Result<ExitCode, Box<dyn Error>> {
    let plan = Plan::new(args)?;
    experiment::execute(&plan, args.out.as_deref())
}

impl Experiment for Plan {
    const NAME: &'static str = "chou-dbmin";
    type Row = DbminRow;
    type Results = Results;

    fn caption(&self) -> String {
        String::new()
    }

    fn run(&self, _progress: Progress) -> Result<Results, Box<dyn Error>> {
        eprintln!(
            "Simulating {} configurations on {} thread(s) (figures {}; {} batches of {} queries each, \
             doubled at most {} time(s) while the 95% half-width exceeds {}% of the throughput) ...",
            self.configs.len(),
            self.jobs,
            self.figures.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
            self.configs.first().map_or(0, |c| c.batches),
            self.configs.first().map_or(0, |c| c.batch_queries),
            self.precision.max_doublings,
            self.precision.relative_halfwidth * 100.0
        );
        let start = Instant::now();
        let runs = run_grid(self)?;
        Ok(Results { runs, wall_s: start.elapsed().as_secs_f64() })
    }

    fn tables(&self, results: &Results, mut out: &mut dyn Write) -> io::Result<()> {
        let plan = self;
        print_tables(&mut out, plan, results)?;
        let cpu: f64 = results.runs.iter().map(|r| r.wall_s).sum();
        let lengthened =
            results.runs.iter().filter(|r| r.result.batch_queries > r.config.batch_queries).count();
        let wide = results
            .runs
            .iter()
            .filter(|r| r.result.ci_halfwidth > plan.precision.relative_halfwidth * r.result.throughput)
            .count();
        writeln!(
            out,
            "\nbatches lengthened in {lengthened} of {} runs; {wide} still have a half-width above {}% \
             (column final_batch_queries)",
            results.runs.len(),
            plan.precision.relative_halfwidth * 100.0
        )?;
        writeln!(
            out,
            "\nwall time of the grid: {:.1} s ({} runs on {} thread(s); {cpu:.1} s of simulation in all)",
            results.wall_s,
            results.runs.len(),
            plan.jobs
        )
    }

    fn checks(&self, results: &Results) -> Vec<Check> {
        checks(self, results)
    }

    fn rows(&self, results: &Results) -> Vec<DbminRow> {
        rows(self, results)
    }

    fn charts(&self, results: &Results) -> Vec<(String, Chart)> {
        let mut charts = Vec::new();
        for &figure in &self.figures {
            for &mix in &self.mixes {
                let stem = format!("{}-fig{figure}-{}", Self::NAME, mix.name().to_ascii_lowercase());
                charts.push((stem, chart(self, results, figure, mix)));
            }
        }
        charts
    }
}

/// One table per figure and mix: a row per line, a column per NCQ, throughput ± half-width.
fn print_tables(out: &mut impl Write, plan: &Plan, results: &Results) -> io::Result<()> {
    writeln!(
        out,
        "Chou & DeWitt 1986, Figs. 2-5: throughput (queries/s) ± 95% batch-means half-width; \
         '+lc' = feedback load control at 87% disk utilization; seed {}.",
        plan.configs.first().map_or(0, |c| c.seed)
    )?;
    let dash = || "-".to_string();
    for &figure in &plan.figures {
        let sharing = figure_sharing(figure);
        for &mix in &plan.mixes {
            let buffers = plan.configs.iter().find(|c| c.mix == mix).map_or(mix.buffers(), |c| c.buffers);
            let what = match figure {
                5 => "feedback load control, no sharing".to_string(),
                _ => sharing_text(sharing),
            };
            writeln!(out, "\nFig. {figure} ({what}), {}, {buffers} buffers", mix.name())?;
            let mut header = vec!["NCQ".to_string()];
            header.extend(plan.ncq.iter().map(u32::to_string));
            let mut table = vec![header];
            for line in figure_lines(figure, &plan.algorithms) {
                let mut row = vec![line.name()];
                row.extend(plan.ncq.iter().map(|&n| {
                    results.get(mix, sharing, line, n).map_or_else(dash, |r| {
                        format!("{:.3}±{:.3}", r.result.throughput, r.result.ci_halfwidth)
                    })
                }));
                table.push(row);
            }
            text::write_aligned(out, &table)?;
        }
    }
    Ok(())
}

/// "no sharing", "half sharing" or "full sharing".
fn sharing_text(sharing: Sharing) -> String {
    format!("{} sharing", if sharing == Sharing::None { "no" } else { sharing.name() })
}

/// The difference of `a` over `b` relative to the better of the two, in percent (the paper's
/// footnote 16: "calculated relative to the better algorithm").
fn gain_percent(a: f64, b: f64) -> f64 {
    (a - b) / a.max(b) * 100.0
}

/// A number made of simulated throughputs, with the least and the most it can be while each
/// throughput lies anywhere in its 95% batch-means interval (throughput ± half-width; at
/// `--quick` these are often 20-50% wide). Every measurement is taken at the end of its interval
/// that moves the number most, so the span is wider than a 95% interval of the number itself:
/// it can turn a ✓ into a ~, never anything into a ✓.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Span {
    value: f64,
    lo: f64,
    hi: f64,
}

impl Span {
    /// A run's throughput and its interval (not below 0).
    fn measured(r: &RunResult) -> Span {
        Span {
            value: r.throughput,
            lo: (r.throughput - r.ci_halfwidth).max(0.0),
            hi: r.throughput + r.ci_halfwidth,
        }
    }

    /// `a / b`; unbounded above where `b`'s interval reaches 0.
    fn ratio(a: Span, b: Span) -> Span {
        Span {
            value: a.value / b.value,
            lo: a.lo / b.hi,
            hi: if b.lo > 0.0 { a.hi / b.lo } else { f64::INFINITY },
        }
    }

    /// [`gain_percent`] of `a` over `b`, which rises with `a` and falls with `b`.
    fn gain(a: Span, b: Span) -> Span {
        Span {
            value: gain_percent(a.value, b.value),
            lo: gain_percent(a.lo, b.hi),
            hi: gain_percent(a.hi, b.lo),
        }
    }

    /// The mean of `spans`, each end the mean of the ends (all errors in one direction).
    fn mean(spans: &[Span]) -> Option<Span> {
        if spans.is_empty() {
            return None;
        }
        let n = spans.len() as f64;
        let mean = |f: fn(&Span) -> f64| spans.iter().map(f).sum::<f64>() / n;
        Some(Span { value: mean(|s| s.value), lo: mean(|s| s.lo), hi: mean(|s| s.hi) })
    }

    /// `value (lo to hi)`, each number as `show` writes it.
    fn show(self, show: impl Fn(f64) -> String) -> String {
        format!("{} ({} to {})", show(self.value), show(self.lo), show(self.hi))
    }
}

/// A claim's tolerance, fixed before the run: the number must lie in `min..=max` (an end may be
/// infinite).
#[derive(Copy, Clone, Debug)]
struct Band {
    min: f64,
    max: f64,
}

/// How many points of each kind a reason names before it says how many more there are.
const NAMED: usize = 6;

/// The verdict of a claim held at several points (NCQ values, algorithms, steps), each a number
/// with its [`Span`], against `band`; every point is checked, as `experiment::every_point` does,
/// with the intervals: ✓ if every point's span lies inside the band; ✗ if every one lies outside
/// it (or there are no points); ~ otherwise, which includes any point whose span reaches across a
/// bound (the measurements cannot tell which side it is on). The reason names the points outside
/// and those across a bound, with their numbers (`show` writes one); it is empty for ✓.
fn judge(points: &[(String, Span)], band: Band, show: impl Fn(f64) -> String) -> (Verdict, String) {
    let inside = |s: &Span| s.lo >= band.min && s.hi <= band.max;
    let outside = |s: &Span| s.hi < band.min || s.lo > band.max;
    let out: Vec<&(String, Span)> = points.iter().filter(|(_, s)| outside(s)).collect();
    let across: Vec<&(String, Span)> = points.iter().filter(|(_, s)| !inside(s) && !outside(s)).collect();
    let verdict = if points.is_empty() || out.len() == points.len() {
        Verdict::Fails
    } else if out.is_empty() && across.is_empty() {
        Verdict::Holds
    } else {
        Verdict::Partial
    };
    let name = |pts: &[&(String, Span)]| {
        let mut named: Vec<String> =
            pts.iter().take(NAMED).map(|(label, s)| format!("{} {label}", s.show(&show))).collect();
        if pts.len() > NAMED {
            named.push(format!("{} more", pts.len() - NAMED));
        }
        named.join(", ")
    };
    let mut why = Vec::new();
    if points.is_empty() {
        why.push("no point was measured".to_string());
    }
    if !out.is_empty() {
        why.push(format!(
            "outside the tolerance at {} of {} points: {}",
            out.len(),
            points.len(),
            name(&out)
        ));
    }
    if !across.is_empty() {
        why.push(format!(
            "the 95% intervals reach across a bound of the tolerance at {} of {} points: {}",
            across.len(),
            points.len(),
            name(&across)
        ));
    }
    (verdict, why.join("; "))
}

/// `12%` (`∞` where a span is unbounded).
fn pct0(x: f64) -> String {
    if x.is_infinite() {
        return "∞".into();
    }
    format!("{:.0}%", x * 100.0)
}

/// `x1.05` (`∞` where a span is unbounded).
fn times(x: f64) -> String {
    if x.is_infinite() {
        return "∞".into();
    }
    format!("x{x:.2}")
}

/// What a check of `points` (taken at NCQ `ncq`) says of ours: the least and the most value, then
/// the least low end and the most high end of their intervals, each through `show`, e.g.
/// `92%..104% of HOT at NCQ 8,16 (95% intervals 80%..115%)` with `of` = `" of HOT"`.
fn extent_text(points: &[(String, Span)], show: impl Fn(f64) -> String, of: &str, ncq: &str) -> String {
    let fold = |f: fn(&Span) -> f64, pick: fn(f64, f64) -> f64, start: f64| {
        show(points.iter().map(|(_, s)| f(s)).fold(start, pick))
    };
    format!(
        "{}..{}{of} at NCQ {ncq} (95% intervals {}..{})",
        fold(|s| s.value, f64::min, f64::INFINITY),
        fold(|s| s.value, f64::max, f64::NEG_INFINITY),
        fold(|s| s.lo, f64::min, f64::INFINITY),
        fold(|s| s.hi, f64::max, f64::NEG_INFINITY),
    )
}

/// Two throughputs differ (for the claims on sharing) only beyond this share of the larger.
const SHARING_TOLERANCE: f64 = 0.05;
/// Under full sharing in M1 and M2 the paper's algorithms are "close": within this share of the
/// best (our reading; the paper gives no number).
const CLOSE: f64 = 0.15;

/// The lines without load control that a figure of Figs. 2-4 shows.
fn plain_lines(plan: &Plan) -> Vec<Line> {
    plan.algorithms.iter().map(|&algorithm| Line { algorithm, load_control: false }).collect()
}

/// The NCQ points at or above 8 where every line of Figs. 2-4 was simulated (RAND, FIFO and
/// CLOCK stop at 16).
fn high_common(plan: &Plan) -> Vec<u32> {
    plan.ncq.iter().copied().filter(|&n| (8..=GLOBAL_MAX_NCQ).contains(&n)).collect()
}

/// The mean throughput of `line` over `ncq`, with its span, if every point was simulated.
fn mean_over(results: &Results, mix: Mix, sharing: Sharing, line: Line, ncq: &[u32]) -> Option<Span> {
    let v: Option<Vec<Span>> = ncq.iter().map(|&n| results.span(mix, sharing, line, n)).collect();
    Span::mean(&v?)
}

/// The paper's claims (Sec. 4.3) held against the simulated grid. A claim is checked only when
/// its lines and points were simulated, at every point, with the 95% intervals of the
/// throughputs ([`judge`]). The paper ran on other hardware and traces: a miss is reported, not
/// an error (the exit status stays 0).
fn checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = dbmin_above_checks(plan, results);
    checks.extend(thrashing_checks(plan, results));
    checks.extend(clock_with_load_control_checks(plan, results));
    checks.extend(load_control_above_ws_checks(plan, results));
    checks.extend(sharing_checks(plan, results));
    checks
}

/// `algorithm`'s line without load control.
fn plain_line(algorithm: Algorithm) -> Line {
    Line { algorithm, load_control: false }
}

/// The simulated NCQ points at or above 8, where the paper's claims on Figs. 2 and 5 are made.
fn ncq_from_8(plan: &Plan) -> Vec<u32> {
    plan.ncq.iter().copied().filter(|&n| n >= 8).collect()
}

/// NCQ points as a reason names them, e.g. `8,16,32`.
fn ncq_text(ns: &[u32]) -> String {
    ns.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// `f` of `line` against `other` at every NCQ >= 8 where both were simulated, no sharing, in
/// `mix`, each point named by its NCQ.
fn against(
    plan: &Plan,
    results: &Results,
    line: Line,
    other: Line,
    mix: Mix,
    f: fn(Span, Span) -> Span,
) -> Vec<(String, Span)> {
    ncq_from_8(plan)
        .iter()
        .filter_map(|&n| {
            let a = results.span(mix, Sharing::None, line, n)?;
            let b = results.span(mix, Sharing::None, other, n)?;
            Some((format!("at NCQ {n}"), f(a, b)))
        })
        .collect()
}

/// Fig. 2, no sharing: DBMIN is above HOT by 7-13% and above WS by 25-45% (relative to the better
/// algorithm) at NCQ >= 8, in every mix.
fn dbmin_above_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    let has = |l: Line| plan.lines.contains(&l);
    let dbmin = plain_line(Algorithm::Dbmin);
    let high = ncq_from_8(plan);
    for (other, lo, hi) in [(Algorithm::Hot, 7.0, 13.0), (Algorithm::Ws, 25.0, 45.0)] {
        let other = plain_line(other);
        if !(plan.figures.contains(&2) || plan.figures.contains(&5)) || !has(dbmin) || !has(other) {
            continue;
        }
        let name = other.algorithm.name().to_ascii_uppercase();
        for &mix in &plan.mixes {
            let gains = against(plan, results, dbmin, other, mix, Span::gain);
            if gains.is_empty() {
                continue;
            }
            let (verdict, why) = judge(&gains, Band { min: lo, max: hi }, |x| format!("{x:.1}%"));
            let reason = match verdict {
                Verdict::Holds => String::new(),
                _ if gains.iter().all(|(_, g)| g.lo > 0.0) => format!(
                    "{why}; DBMIN is above {name} at every point, intervals included (the direction agrees); \
                     why the size differs: sim README DS18"
                ),
                _ => format!("{why}; why: sim README DS18"),
            };
            checks.push(
                Check::new(
                    format!("Fig. 2, {}, no sharing: DBMIN above {name}", mix.name()),
                    format!(
                        "{lo:.0}-{hi:.0}% (relative to the better algorithm) at NCQ >= 8, {} buffers; every NCQ's \
                         95% interval inside counts",
                        mix.buffers()
                    ),
                    extent_text(&gains, |x| format!("{x:.1}%"), "", &ncq_text(&high)),
                    verdict,
                )
                .because(reason),
            );
        }
    }
    checks
}

/// Fig. 2, no sharing: RAND, FIFO and CLOCK thrash without load control, a relatively sharp
/// degradation past the peak; throughput at NCQ 16 (or the largest NCQ <= 16 simulated) at most
/// 70% of the line's peak before it.
fn thrashing_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    for algorithm in [Algorithm::Rand, Algorithm::Fifo, Algorithm::Clock] {
        let line = plain_line(algorithm);
        if !plan.figures.contains(&2) || !plan.lines.contains(&line) {
            continue;
        }
        let name = algorithm.name().to_ascii_uppercase();
        for &mix in &plan.mixes {
            let pts: Vec<(u32, Span)> = plan
                .ncq
                .iter()
                .filter_map(|&n| Some((n, results.span(mix, Sharing::None, line, n)?)))
                .collect();
            let Some((&(last_n, last), before)) = pts.split_last() else { continue };
            let what = format!("Fig. 2, {}, no sharing: {name} thrashes without load control", mix.name());
            let paper =
                "direction only: a relatively sharp degradation past the peak (RAND, FIFO, CLOCK measured \
                         to NCQ 16); at most 70% of the peak counts";
            let Some(&(peak_n, peak)) = before.iter().max_by(|a, b| a.1.value.total_cmp(&b.1.value)) else {
                checks.push(
                    Check::new(
                        what,
                        paper,
                        format!("{:.3} q/s at NCQ {last_n} only", last.value),
                        Verdict::Partial,
                    )
                    .because(format!(
                        "not enough data: one NCQ point only ({last_n}), no peak before it to compare \
                         with; give --ncq more points (1,4,16)"
                    )),
                );
                continue;
            };
            let share = Span::ratio(last, peak);
            let (verdict, why) =
                judge(&[(format!("at NCQ {last_n}"), share)], Band { min: 0.0, max: 0.7 }, pct0);
            let reason = if last.value >= peak.value {
                format!("no thrashing seen: the line is highest at its largest NCQ; {why}")
            } else {
                why
            };
            checks.push(
                Check::new(
                    what,
                    paper,
                    format!(
                        "{:.3} q/s at NCQ {last_n} = {} of its peak before it, {:.3} at NCQ {peak_n}",
                        last.value,
                        share.show(pct0),
                        peak.value
                    ),
                    verdict,
                )
                .because(reason),
            );
        }
    }
    checks
}

/// Fig. 5: CLOCK with feedback load control is "very close" to HOT, within 10% of it at every
/// NCQ >= 8, no sharing.
fn clock_with_load_control_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    let clock_lc = Line { algorithm: Algorithm::Clock, load_control: true };
    let hot = plain_line(Algorithm::Hot);
    if !(plan.figures.contains(&5) && plan.lines.contains(&clock_lc) && plan.lines.contains(&hot)) {
        return checks;
    }
    for &mix in &plan.mixes {
        let ratios = against(plan, results, clock_lc, hot, mix, Span::ratio);
        if ratios.is_empty() {
            continue;
        }
        let (verdict, why) = judge(&ratios, Band { min: 0.9, max: 1.1 }, pct0);
        checks.push(
            Check::new(
                format!("Fig. 5, {}: CLOCK with load control against HOT", mix.name()),
                "direction only: \"very close\" at NCQ >= 8, no sharing, feedback control at 87% disk \
                 utilization; within 10% of HOT at every NCQ counts",
                extent_text(&ratios, pct0, " of HOT", &ncq_text(&ncq_from_8(plan))),
                verdict,
            )
            .because(why),
        );
    }
    checks
}

/// Fig. 5: every simple algorithm (RAND, FIFO, CLOCK) with feedback load control out-performs WS,
/// at or above it at every NCQ >= 8, no sharing.
fn load_control_above_ws_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    let ws = plain_line(Algorithm::Ws);
    if !(plan.figures.contains(&5) && plan.lines.contains(&ws)) {
        return checks;
    }
    for algorithm in [Algorithm::Rand, Algorithm::Fifo, Algorithm::Clock] {
        let line = Line { algorithm, load_control: true };
        if !plan.lines.contains(&line) {
            continue;
        }
        for &mix in &plan.mixes {
            let ratios = against(plan, results, line, ws, mix, Span::ratio);
            if ratios.is_empty() {
                continue;
            }
            let (verdict, why) = judge(&ratios, Band { min: 1.0, max: f64::INFINITY }, pct0);
            checks.push(
                Check::new(
                    format!(
                        "Fig. 5, {}: {} with load control against WS",
                        mix.name(),
                        algorithm.name().to_ascii_uppercase()
                    ),
                    "direction only: above WS (\"every simple algorithm in the experiments out-performed the \
                     WS algorithm\"), NCQ >= 8, no sharing; at or above WS at every NCQ counts",
                    extent_text(&ratios, pct0, " of WS", &ncq_text(&ncq_from_8(plan))),
                    verdict,
                )
                .because(why),
            );
        }
    }
    checks
}

/// Whether a pair of algorithms, `none` and `half` their differences ([`Span::gain`], percent)
/// at no and at half sharing, is ranked otherwise at half sharing: more than `tol` percent apart
/// in both, in opposite order. `(surely, possibly)`: for every throughput in its interval, and
/// for some.
fn swapped(none: Span, half: Span, tol: f64) -> (bool, bool) {
    let surely = (none.lo > tol && half.hi < -tol) || (none.hi < -tol && half.lo > tol);
    let possibly = (none.hi > tol && half.lo < -tol) || (none.lo < -tol && half.hi > tol);
    (surely, possibly)
}

/// Figs. 3 and 4: more sharing, more throughput for every algorithm; half sharing ranks the
/// algorithms as no sharing does; under full sharing the algorithms are close in M1 and M2
/// (RAND and FIFO slightly below) and diverge again in M3. Every claim is held with the 95%
/// intervals of the throughputs ([`judge`], [`swapped`]).
fn sharing_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = rises_with_sharing_checks(plan, results);
    checks.extend(half_sharing_ranks_checks(plan, results));
    checks.extend(full_sharing_checks(plan, results));
    checks
}

/// The mean throughput over the NCQ points at or above 8 ([`high_common`]) of every line without
/// load control, in `mix` at `sharing`, if every point was simulated.
fn line_means(plan: &Plan, results: &Results, mix: Mix, sharing: Sharing) -> Option<Vec<(Line, Span)>> {
    let high = high_common(plan);
    plain_lines(plan).iter().map(|&l| Some((l, mean_over(results, mix, sharing, l, &high)?))).collect()
}

/// The lines of `means` from the highest mean to the lowest, e.g. `DBMIN > HOT > WS`.
fn rank_text(means: &[(Line, Span)]) -> String {
    let mut v = means.to_vec();
    v.sort_by(|a, b| b.1.value.total_cmp(&a.1.value));
    v.iter().map(|(l, _)| l.name().to_ascii_uppercase()).collect::<Vec<_>>().join(" > ")
}

/// Figs. 3 and 4: "for each of the algorithms, the throughput increases as the degree of data
/// sharing increases"; every (line, NCQ >= 2) point, level to level.
fn rises_with_sharing_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    let levels: Vec<Sharing> =
        [2u8, 3, 4].iter().filter(|f| plan.figures.contains(f)).map(|&f| figure_sharing(f)).collect();
    if levels.len() < 2 {
        return checks;
    }
    let lines = plain_lines(plan);
    let tol = SHARING_TOLERANCE;
    for &mix in &plan.mixes {
        let mut steps: Vec<(String, Span)> = Vec::new();
        for &line in &lines {
            for &q in plan.ncq.iter().filter(|&&q| q >= 2) {
                let tp: Option<Vec<Span>> = levels.iter().map(|&s| results.span(mix, s, line, q)).collect();
                let Some(tp) = tp else { continue };
                // The point's steps, end by end at their lowest: against a lower bound it is
                // inside if every step is, outside if any step is.
                let step =
                    tp.windows(2)
                        .map(|w| Span::ratio(w[1], w[0]))
                        .fold(Span { value: f64::INFINITY, lo: f64::INFINITY, hi: f64::INFINITY }, |a, b| {
                            Span { value: a.value.min(b.value), lo: a.lo.min(b.lo), hi: a.hi.min(b.hi) }
                        });
                steps.push((format!("{} at NCQ {q}", line.name()), step));
            }
        }
        if steps.is_empty() {
            continue;
        }
        let (verdict, why) = judge(&steps, Band { min: 1.0 - tol, max: f64::INFINITY }, times);
        let sure = steps.iter().filter(|(_, s)| s.lo >= 1.0 - tol).count();
        let lowest = steps.iter().min_by(|a, b| a.1.value.total_cmp(&b.1.value)).expect("steps");
        let levels_text = levels.iter().map(|&s| s.name()).collect::<Vec<_>>().join(" -> ");
        checks.push(
            Check::new(
                format!("Figs. 3/4, {}: throughput rises with sharing ({levels_text})", mix.name()),
                format!(
                    "direction only: \"for each of the algorithms, the throughput increases as the degree of \
                     data sharing increases\"; at every (algorithm, NCQ >= 2) no step from level to level \
                     falling by more than {}, its 95% interval included, counts",
                    pct0(tol)
                ),
                format!(
                    "{sure} of {} (algorithm, NCQ >= 2) points rise or hold within their intervals; the lowest \
                     step {} ({})",
                    steps.len(),
                    lowest.1.show(times),
                    lowest.0
                ),
                verdict,
            )
            .because(why),
        );
    }
    checks
}

/// Fig. 3: "the relative performance of the algorithms for half data sharing is similar to that
/// for no data sharing"; no pair of algorithms ranked otherwise ([`swapped`]) by their means over
/// NCQ >= 8.
fn half_sharing_ranks_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    if !(plan.figures.contains(&2) && plan.figures.contains(&3) && plain_lines(plan).len() >= 2) {
        return checks;
    }
    let tol = SHARING_TOLERANCE;
    let high_text = ncq_text(&high_common(plan));
    for &mix in &plan.mixes {
        let (Some(none), Some(half)) =
            (line_means(plan, results, mix, Sharing::None), line_means(plan, results, mix, Sharing::Half))
        else {
            continue;
        };
        let (mut pairs, mut surely, mut possibly) = (0usize, Vec::new(), Vec::new());
        for i in 0..none.len() {
            for j in i + 1..none.len() {
                let (a, b) = (Span::gain(none[i].1, none[j].1), Span::gain(half[i].1, half[j].1));
                pairs += 1;
                let text = format!(
                    "{} over {}: none {}, half {}",
                    none[i].0.name().to_ascii_uppercase(),
                    none[j].0.name().to_ascii_uppercase(),
                    a.show(|x| format!("{x:+.0}%")),
                    b.show(|x| format!("{x:+.0}%"))
                );
                match swapped(a, b, tol * 100.0) {
                    (true, _) => surely.push(text),
                    (false, true) => possibly.push(text),
                    _ => {}
                }
            }
        }
        let verdict = if surely.is_empty() && possibly.is_empty() {
            Verdict::Holds
        } else if surely.len() * 4 > pairs {
            Verdict::Fails
        } else {
            Verdict::Partial
        };
        let list = |v: &[String]| {
            let mut named: Vec<String> = v.iter().take(NAMED).cloned().collect();
            if v.len() > NAMED {
                named.push(format!("{} more", v.len() - NAMED));
            }
            named.join("; ")
        };
        let mut why = Vec::new();
        if !surely.is_empty() {
            why.push(format!("swapped at {} of {pairs} pairs: {}", surely.len(), list(&surely)));
        }
        if !possibly.is_empty() {
            why.push(format!(
                "swapped within the 95% intervals' reach at {} more: {}",
                possibly.len(),
                list(&possibly)
            ));
        }
        checks.push(
            Check::new(
                format!("Fig. 3, {}: half sharing ranks the algorithms as no sharing", mix.name()),
                format!(
                    "direction only: \"the relative performance of the algorithms for half data sharing is \
                     similar to that for no data sharing\"; no pair more than {} apart in both, in opposite \
                     order, its 95% intervals included, counts (~ while at most a quarter of the pairs are)",
                    pct0(tol)
                ),
                format!(
                    "{} of {pairs} pairs swapped, {} more within the intervals; none: {}; half: {} (means over \
                     NCQ {high_text})",
                    surely.len(),
                    possibly.len(),
                    rank_text(&none),
                    rank_text(&half)
                ),
                verdict,
            )
            .because(why.join("; ")),
        );
    }
    checks
}

/// Fig. 4, full sharing: in M1 and M2 the algorithms are close, RAND and FIFO slightly below the
/// others; in M3 they diverge again. The checks of M1 and M2 come mix by mix, that of M3 last.
fn full_sharing_checks(plan: &Plan, results: &Results) -> Vec<Check> {
    let mut checks = Vec::new();
    if !plan.figures.contains(&4) {
        return checks;
    }
    let by_value = |a: &&(Line, Span), b: &&(Line, Span)| a.1.value.total_cmp(&b.1.value);
    let mut spread = Vec::new();
    for &mix in &plan.mixes {
        let Some(full) = line_means(plan, results, mix, Sharing::Full) else { continue };
        if let (Some(lo), Some(hi)) = (full.iter().min_by(by_value), full.iter().max_by(by_value)) {
            spread.push((mix, Span::ratio(lo.1, hi.1)));
        }
        if mix == Mix::M3 {
            continue;
        }
        checks.extend(full_sharing_close_check(plan, mix, &full));
        checks.extend(rand_fifo_slightly_below_check(mix, &full));
    }
    checks.extend(m3_diverges_check(plan, &spread));
    checks
}

/// Whether `line` runs RAND or FIFO, the two the paper finds slightly below the others under full
/// sharing.
fn is_rand_or_fifo(line: &Line) -> bool {
    matches!(line.algorithm, Algorithm::Rand | Algorithm::Fifo)
}

/// Fig. 4, M1 and M2: "the efficiencies of the different algorithms were close" under full
/// sharing; each algorithm but RAND and FIFO within [`CLOSE`] of the highest, by `full`, the
/// lines' means in `mix`.
fn full_sharing_close_check(plan: &Plan, mix: Mix, full: &[(Line, Span)]) -> Option<Check> {
    let by_value = |a: &&(Line, Span), b: &&(Line, Span)| a.1.value.total_cmp(&b.1.value);
    let others: Vec<&(Line, Span)> = full.iter().filter(|l| !is_rand_or_fifo(&l.0)).collect();
    if others.len() < 2 {
        return None;
    }
    let best = others.iter().copied().max_by(by_value)?;
    let shares: Vec<(String, Span)> = others
        .iter()
        .filter(|l| l.0 != best.0)
        .map(|l| (l.0.name().to_ascii_uppercase(), Span::ratio(l.1, best.1)))
        .collect();
    let (verdict, why) = judge(&shares, Band { min: 1.0 - CLOSE, max: f64::INFINITY }, pct0);
    Some(
        Check::new(
            format!("Fig. 4, {}: under full sharing the algorithms are close", mix.name()),
            format!(
                "direction only: \"the efficiencies of the different algorithms were close\" (M1, M2); \
                 each of {} within {} of the highest, its 95% interval included, counts",
                others.iter().map(|x| x.0.name().to_ascii_uppercase()).collect::<Vec<_>>().join(", "),
                pct0(CLOSE)
            ),
            format!(
                "{} of the highest, {} (means over NCQ {})",
                shares.iter().map(|(l, s)| format!("{l} at {}", s.show(pct0))).collect::<Vec<_>>().join(", "),
                best.0.name().to_ascii_uppercase(),
                ncq_text(&high_common(plan))
            ),
            verdict,
        )
        .because(why),
    )
}

/// Fig. 4, M1 and M2: "RAND and FIFO performed slightly worse than other algorithms" under full
/// sharing; each below the others' mean by at most 25%, by `full`, the lines' means in `mix`.
fn rand_fifo_slightly_below_check(mix: Mix, full: &[(Line, Span)]) -> Option<Check> {
    let simple: Vec<&(Line, Span)> = full.iter().filter(|l| is_rand_or_fifo(&l.0)).collect();
    let others: Vec<Span> = full.iter().filter(|l| !is_rand_or_fifo(&l.0)).map(|x| x.1).collect();
    let mean_others = Span::mean(&others)?;
    if simple.is_empty() {
        return None;
    }
    let shares: Vec<(String, Span)> =
        simple.iter().map(|x| (x.0.name().to_ascii_uppercase(), Span::ratio(x.1, mean_others))).collect();
    let (verdict, why) = judge(&shares, Band { min: 0.75, max: 1.0 }, pct0);
    Some(
        Check::new(
            format!("Fig. 4, {}: RAND and FIFO slightly below the others under full sharing", mix.name()),
            "direction only: \"RAND and FIFO performed slightly worse than other algorithms\" (M1, M2); \
             below the others' mean by at most 25%, the 95% intervals included, counts",
            shares
                .iter()
                .map(|(l, s)| format!("{l} at {} of the others' mean", s.show(pct0)))
                .collect::<Vec<_>>()
                .join(", "),
            verdict,
        )
        .because(why),
    )
}

/// Fig. 4: "for query mix M3, however, the performance of the different algorithms again
/// diverged" under full sharing; M3's lowest / highest mean (`spread`, per mix) more than
/// [`SHARING_TOLERANCE`] below M1's and M2's.
fn m3_diverges_check(plan: &Plan, spread: &[(Mix, Span)]) -> Option<Check> {
    let tol = SHARING_TOLERANCE;
    let find = |m: Mix| spread.iter().find(|(x, _)| *x == m).map(|(_, s)| *s);
    let (Some(m1), Some(m2), Some(m3)) = (find(Mix::M1), find(Mix::M2), find(Mix::M3)) else {
        return None;
    };
    let wider =
        [("against M1".to_string(), Span::ratio(m3, m1)), ("against M2".to_string(), Span::ratio(m3, m2))];
    let (verdict, why) = judge(&wider, Band { min: 0.0, max: 1.0 - tol }, times);
    Some(
        Check::new(
            "Fig. 4: under full sharing M3 diverges again",
            format!(
                "direction only: \"for query mix M3, however, the performance of the different algorithms \
                 again diverged\" (M1, M2 close); M3's lowest / highest more than {} below M1's and M2's, \
                 the 95% intervals included, counts",
                pct0(tol)
            ),
            format!(
                "the lowest algorithm at {} of the highest in M3, {} in M1, {} in M2 (means over NCQ {})",
                m3.show(pct0),
                m1.show(pct0),
                m2.show(pct0),
                ncq_text(&high_common(plan))
            ),
            verdict,
        )
        .because(why),
    )
}

/// CSV header of [`write_csv`]; `docs/results-schema.md` describes every column.
pub const CSV_HEADER: &str = "experiment,figures,algorithm,load_control,mix,sharing,ncq,buffers,throughput,\
ci_halfwidth,ci_percent,disk_utilization,hit_ratio,requests,reads,sync_writes,async_writes,completions,\
measured_s,warmup_queries,batches,batch_queries,final_batch_queries,seed,wall_s,admitted,deferred,suspensions,activations,\
reclaims,rereads_after_suspension,reclaims_after_suspension,mean_resident,mean_active,io";

/// The figures a run belongs to, `;`-separated (a no-sharing DBMIN run is in Figs. 2 and 5).
fn figures_of(plan: &Plan, c: &Config) -> String {
    let line = Line { algorithm: c.algorithm, load_control: c.load_control };
    plan.figures
        .iter()
        .filter(|&&f| figure_sharing(f) == c.sharing && figure_lines(f, &plan.algorithms).contains(&line))
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(";")
}

/// One row per simulated configuration.
/// One row of `chou-dbmin.csv`: one simulated configuration (columns in
/// `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DbminRow {
    pub experiment: &'static str,
    pub figures: String,
    pub algorithm: String,
    pub load_control: bool,
    pub mix: String,
    pub sharing: String,
    pub ncq: u32,
    pub buffers: u32,
    pub throughput: f64,
    pub ci_halfwidth: f64,
    pub ci_percent: f64,
    pub disk_utilization: f64,
    pub hit_ratio: f64,
    pub requests: u64,
    pub reads: u64,
    pub sync_writes: u64,
    pub async_writes: u64,
    pub completions: u64,
    pub measured_s: f64,
    pub warmup_queries: u64,
    pub batches: u32,
    pub batch_queries: u64,
    pub final_batch_queries: u64,
    pub seed: u64,
    pub wall_s: f64,
    pub admitted: u64,
    pub deferred: u64,
    pub suspensions: u64,
    pub activations: u64,
    pub reclaims: u64,
    pub rereads_after_suspension: u64,
    pub reclaims_after_suspension: u64,
    pub mean_resident: f64,
    pub mean_active: f64,
    /// Always `none`: the simulator reads no file (its disk is simulated).
    pub io: &'static str,
}

fn rows(plan: &Plan, results: &Results) -> Vec<DbminRow> {
    results
        .runs
        .iter()
        .map(|run| {
            let (c, r) = (&run.config, &run.result);
            let hit = if r.requests > 0 { r.hits as f64 / r.requests as f64 } else { f64::NAN };
            DbminRow {
                experiment: "chou-dbmin",
                figures: figures_of(plan, c),
                algorithm: c.algorithm.name().to_string(),
                load_control: c.load_control,
                mix: c.mix.name().to_string(),
                sharing: c.sharing.name().to_string(),
                ncq: c.ncq,
                buffers: c.buffers,
                throughput: r.throughput,
                ci_halfwidth: r.ci_halfwidth,
                ci_percent: r.ci_halfwidth / r.throughput * 100.0,
                disk_utilization: r.disk_utilization,
                hit_ratio: hit,
                requests: r.requests,
                reads: r.reads,
                sync_writes: r.sync_writes,
                async_writes: r.async_writes,
                completions: r.completions.iter().sum::<u64>(),
                measured_s: r.measured_s,
                warmup_queries: c.warmup_queries,
                batches: c.batches,
                batch_queries: c.batch_queries,
                final_batch_queries: r.batch_queries,
                seed: c.seed,
                wall_s: run.wall_s,
                admitted: r.manager.admitted,
                deferred: r.manager.deferred,
                suspensions: r.manager.suspensions,
                activations: r.manager.activations,
                reclaims: r.manager.reclaims,
                rereads_after_suspension: r.manager.rereads_after_suspension,
                reclaims_after_suspension: r.manager.reclaims_after_suspension,
                mean_resident: r.mean_resident,
                mean_active: r.mean_active,
                io: "none",
            }
        })
        .collect()
}

/// Throughput against NCQ for one figure and mix, one line per algorithm, 95% CI error bars.
fn chart(plan: &Plan, results: &Results, figure: u8, mix: Mix) -> Chart {
    let sharing = figure_sharing(figure);
    let series = figure_lines(figure, &plan.algorithms)
        .into_iter()
        .map(|line| Series {
            name: line.name(),
            points: plan
                .ncq
                .iter()
                .filter_map(|&n| results.get(mix, sharing, line, n))
                .map(|r| Point {
                    x: f64::from(r.config.ncq),
                    y: r.result.throughput,
                    y_min: r.result.throughput - r.result.ci_halfwidth,
                    y_max: r.result.throughput + r.result.ci_halfwidth,
                })
                .collect(),
        })
        .collect();
    let buffers = plan.configs.iter().find(|c| c.mix == mix).map_or(mix.buffers(), |c| c.buffers);
    let what = match figure {
        5 => "simple algorithms with feedback load control (+lc), no sharing".to_string(),
        _ => sharing_text(sharing),
    };
    Chart {
        title: format!("Chou & DeWitt 1986, Fig. {figure}: {what}, {}", mix.name()),
        x_label: "concurrent queries (NCQ)".to_string(),
        y_label: "throughput (queries/s)".to_string(),
        x_scale: Scale::Linear,
        series,
        note: Some(format!("{buffers} buffers; error bars: 95% batch-means confidence interval")),
        vline: None,
        marks: Some(Marks { line: "line: throughput".into(), bars: "bars: 95% CI".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `--buffers` range's message names the database's pages as the simulator has them.
    #[test]
    fn database_pages_are_the_permanent_files_pages() {
        use swizzledb_sim::dbmin::{queries, RelationId};
        let pages: u32 = (0..=queries::B_PRIME.0).filter_map(|r| queries::file_pages(RelationId(r))).sum();
        assert_eq!(text::thousands(u64::from(pages)), DATABASE_PAGES);
        assert!(MAX_BUFFERS >= 50 * pages);
    }

    #[test]
    fn gain_is_relative_to_the_better_algorithm() {
        // Footnote 16: 0.30 vs 0.27 is 10% (of 0.30), not 11.1% (of 0.27).
        assert!((gain_percent(0.30, 0.27) - 10.0).abs() < 1e-9);
        assert!((gain_percent(0.27, 0.30) + 10.0).abs() < 1e-9);
    }

    #[test]
    fn global_lines_without_load_control_stop_at_16() {
        let ncq = [1, 8, 16, 20, 32];
        let clock = Line { algorithm: Algorithm::Clock, load_control: false };
        let clock_lc = Line { algorithm: Algorithm::Clock, load_control: true };
        let ws = Line { algorithm: Algorithm::Ws, load_control: false };
        assert_eq!(line_ncq(clock, &ncq), vec![1, 8, 16]);
        assert_eq!(line_ncq(clock_lc, &ncq), ncq.to_vec());
        assert_eq!(line_ncq(ws, &ncq), ncq.to_vec());
    }

    #[test]
    fn figure_5_puts_load_control_on_the_simple_algorithms_only() {
        let lines = figure_lines(5, &Algorithm::ALL);
        for l in lines {
            assert_eq!(l.load_control, l.algorithm.is_global(), "{l:?}");
        }
        assert!(figure_lines(2, &Algorithm::ALL).iter().all(|l| !l.load_control));
    }

    #[test]
    fn ncq_outside_1_to_32_is_refused_with_the_simulators_message() {
        assert_eq!(parse_ncq("0").unwrap_err(), DbminError::NcqOutOfRange(0).to_string());
        assert!(parse_ncq("33").is_err());
        assert_eq!(parse_ncq(" 8"), Ok(8));
    }

    #[derive(clap::Parser)]
    struct TestCli {
        #[command(flatten)]
        args: DbminArgs,
    }

    fn plan(args: &[&str]) -> Plan {
        use clap::Parser;
        let cli = TestCli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        Plan::new(&cli.args).unwrap()
    }

    /// Figs. 3 and 4 simulate every algorithm at half and full sharing, at every mix and NCQ
    /// (RAND, FIFO and CLOCK to 16), and nothing unshared.
    #[test]
    fn figures_3_and_4_simulate_half_and_full_sharing() {
        let p = plan(&["--figures", "3,4", "--quick", "--ncq", "1,8,16,20"]);
        assert!(p.configs.iter().all(|c| c.sharing != Sharing::None && !c.load_control));
        for sharing in [Sharing::Half, Sharing::Full] {
            for mix in Mix::ALL {
                for a in Algorithm::ALL {
                    let ncq: Vec<u32> = p
                        .configs
                        .iter()
                        .filter(|c| c.sharing == sharing && c.mix == mix && c.algorithm == a)
                        .map(|c| c.ncq)
                        .collect();
                    let want = if a.is_global() { vec![1, 8, 16] } else { vec![1, 8, 16, 20] };
                    assert_eq!(ncq, want, "{sharing:?} {mix:?} {a:?}");
                }
            }
        }
        assert_eq!(p.configs.len(), 2 * 3 * (3 * 4 + 3 * 3));
    }

    fn result(throughput: f64) -> RunResult {
        RunResult {
            throughput,
            ci_halfwidth: 0.0,
            batch_throughputs: vec![throughput],
            batch_queries: 10,
            disk_utilization: 0.5,
            completions: [1; 6],
            measured_s: 1.0,
            requests: 1,
            hits: 1,
            reads: 0,
            sync_writes: 0,
            async_writes: 0,
            manager: Default::default(),
            mean_resident: 0.0,
            mean_active: 0.0,
        }
    }

    /// The sharing checks on made-up results: throughput rising with sharing and the same ranking
    /// hold; a fall and a swapped ranking fail.
    #[test]
    fn sharing_checks_follow_the_results() {
        let p = plan(&["--figures", "2,3,4", "--quick", "--ncq", "2,8,16"]);
        // Rank = position in Algorithm::ALL; sharing multiplies; M3 spreads wider under full.
        let fake = |swap_half: bool, fall: bool| Results {
            runs: p
                .configs
                .iter()
                .map(|c| {
                    let rank = index_of(&Algorithm::ALL, c.algorithm) as f64;
                    let mut tp = match c.sharing {
                        Sharing::None => 1.0 - 0.1 * rank,
                        Sharing::Half if swap_half => 0.5 + 0.1 * rank,
                        Sharing::Half => 1.2 - 0.1 * rank,
                        Sharing::Full if c.mix == Mix::M3 => 1.5 - 0.1 * rank,
                        Sharing::Full => 1.5 - 0.01 * rank,
                    };
                    if fall && c.sharing == Sharing::Full {
                        tp = 0.1;
                    }
                    Run { config: c.clone(), result: result(tp), wall_s: 0.0 }
                })
                .collect(),
            wall_s: 0.0,
        };
        let find = |c: &[Check], what: &str, mix: &str| -> Verdict {
            c.iter()
                .find(|c| c.what.contains(what) && c.what.contains(mix))
                .unwrap_or_else(|| panic!("{what} {mix}: {c:#?}"))
                .verdict
        };
        let good = sharing_checks(&p, &fake(false, false));
        for mix in ["M1", "M2", "M3"] {
            assert_eq!(find(&good, "rises with sharing", mix), Verdict::Holds);
            assert_eq!(find(&good, "half sharing ranks", mix), Verdict::Holds);
        }
        assert_eq!(find(&good, "algorithms are close", "M1"), Verdict::Holds);
        assert_eq!(find(&good, "M3 diverges", ""), Verdict::Holds);
        let bad = sharing_checks(&p, &fake(true, true));
        for mix in ["M1", "M2", "M3"] {
            assert_eq!(find(&bad, "rises with sharing", mix), Verdict::Fails);
            assert_eq!(find(&bad, "half sharing ranks", mix), Verdict::Fails);
        }
        assert_eq!(find(&bad, "M3 diverges", ""), Verdict::Fails);
    }

    /// Fig. 2's thrashing check over a sweep of one NCQ point is "not enough data" (~, lab README
    /// rule 8), naming the option: it was ✗ ("one NCQ point only"), as if the run had shown no
    /// thrashing.
    #[test]
    fn thrashing_over_one_ncq_point_is_not_enough_data() {
        let p = plan(&["--figures", "2", "--quick", "--ncq", "8"]);
        let results = Results {
            runs: p
                .configs
                .iter()
                .map(|c| Run { config: c.clone(), result: result(1.0), wall_s: 0.0 })
                .collect(),
            wall_s: 0.0,
        };
        let checks = thrashing_checks(&p, &results);
        assert!(!checks.is_empty(), "a thrashing check per plain line and mix");
        for c in &checks {
            assert_eq!(c.verdict, Verdict::Partial, "{c}");
            assert!(c.reason.starts_with("not enough data") && c.reason.contains("--ncq"), "{c}");
        }
    }

    /// A ✗ row says why in numbers, and a point whose 95% interval reaches across the
    /// tolerance's bound is ~, never ✓. The old checks gave a ✗ row the rule as its reason ("✓
    /// above WS at every point") and ✓ to DBMIN 10% above HOT however wide the intervals.
    #[test]
    fn failing_rows_name_their_numbers_and_wide_intervals_are_partial() {
        let p = plan(&["--figures", "2,5", "--quick", "--mixes", "m1", "--ncq", "8,16"]);
        // DBMIN 10% above HOT and 40% above WS; the simple algorithms with load control at
        // 83% of WS; without it they fall to 40% of their peak.
        let fake = |halfwidth: f64| Results {
            runs: p
                .configs
                .iter()
                .map(|c| {
                    let tp = match (c.algorithm, c.load_control) {
                        (Algorithm::Dbmin, _) => 1.0,
                        (Algorithm::Hot, _) => 0.9,
                        (Algorithm::Ws, _) => 0.6,
                        (_, true) => 0.5,
                        (_, false) if c.ncq == 16 => 0.2,
                        (_, false) => 0.5,
                    };
                    let mut result = result(tp);
                    result.ci_halfwidth = halfwidth * tp;
                    Run { config: c.clone(), result, wall_s: 0.0 }
                })
                .collect(),
            wall_s: 0.0,
        };
        let find = |c: &[Check], what: &str| -> Check {
            c.iter().find(|c| c.what.contains(what)).unwrap_or_else(|| panic!("{what}: {c:#?}")).clone()
        };
        let exact = checks(&p, &fake(0.0));
        assert_eq!(find(&exact, "DBMIN above HOT").verdict, Verdict::Holds);
        let ws = find(&exact, "RAND with load control against WS");
        assert_eq!(ws.verdict, Verdict::Fails, "{ws}");
        assert!(
            ws.reason.contains("2 of 2 points")
                && ws.reason.contains("83% (83% to 83%) at NCQ 8")
                && !ws.reason.contains('✓'),
            "the reason names the numbers: {ws}"
        );
        let thrash = find(&exact, "RAND thrashes");
        assert_eq!(thrash.verdict, Verdict::Holds, "{thrash}");
        assert!(thrash.ours.contains("40%"), "{thrash}");

        // Intervals of ±20%: nothing is ✓ but the thrash, whose interval stays below 70% of the
        // peak (at most 0.24 / 0.4).
        let wide = checks(&p, &fake(0.2));
        let hot = find(&wide, "DBMIN above HOT");
        assert_eq!(hot.verdict, Verdict::Partial, "a 10% gain inside 7-13% is not ✓ with ±20%: {hot}");
        assert!(hot.reason.contains("reach across a bound") && hot.reason.contains("at NCQ 16"), "{hot}");
        assert_eq!(find(&wide, "RAND with load control against WS").verdict, Verdict::Partial);
        assert_eq!(find(&wide, "RAND thrashes").verdict, Verdict::Holds);
        assert!(wide.iter().all(|c| c.verdict != Verdict::Holds || c.what.contains("thrashes")), "{wide:#?}");

        // judge: inside, outside and across, every point named with its numbers.
        let span = |value: f64, lo: f64, hi: f64| Span { value, lo, hi };
        let band = Band { min: 0.9, max: 1.1 };
        let pts = |v: &[Span]| v.iter().enumerate().map(|(i, &s)| (format!("at {i}"), s)).collect::<Vec<_>>();
        assert_eq!(judge(&pts(&[span(1.0, 0.95, 1.05)]), band, pct0), (Verdict::Holds, String::new()));
        let (v, why) = judge(&pts(&[span(1.0, 0.95, 1.05), span(1.0, 0.8, 1.2)]), band, pct0);
        assert_eq!(v, Verdict::Partial);
        assert!(why.contains("100% (80% to 120%) at 1"), "{why}");
        assert_eq!(judge(&pts(&[span(0.5, 0.4, 0.6), span(1.5, 1.2, 1.8)]), band, pct0).0, Verdict::Fails);
        assert_eq!(judge(&[], band, pct0).0, Verdict::Fails);
    }

    /// The tiny scale of `swizzledb reproduce`: every figure's rows, a chart per figure and mix,
    /// and the checks of every figure.
    #[test]
    fn tiny_scale_makes_rows_charts_and_checks_of_every_figure() {
        let p = plan(&["--quick", "--ncq", "2,8,16", "--jobs", "2"]);
        let r = Experiment::run(&p, Progress::off()).unwrap();
        let rows = Experiment::rows(&p, &r);
        assert_eq!(rows.len(), p.configs.len());
        for sharing in ["none", "half", "full"] {
            assert!(rows.iter().any(|row| row.sharing == sharing && row.throughput > 0.0), "{sharing}");
        }
        assert_eq!(Experiment::charts(&p, &r).len(), 4 * 3);
        let c = Experiment::checks(&p, &r);
        for what in ["Fig. 2", "Fig. 3", "Figs. 3/4", "Fig. 4", "Fig. 5"] {
            assert!(c.iter().any(|c| c.what.starts_with(what)), "no check of {what}: {c:#?}");
        }
        assert!(c.iter().all(|c| !c.paper.is_empty() && !c.ours.is_empty()));
    }
}
