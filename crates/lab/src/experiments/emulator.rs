//! `swizzledb bench emulator`: the BP-Wrapper paper's buffer emulator (Ding, Shan & Jiang, TPDS
//! 2015, Figs. 11–13) over a grid of thread counts and compute times, every variant at every
//! point, repetitions interleaved across the variants (rep 1 of every variant, then rep 2, ...).
//! The emulator itself is `swizzledb_sim::emulator` (`crates/sim/README.md`, "Buffer emulator").

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;
use swizzledb_sim::emulator::{EmuConfig, EmuVariant, Emulator, RunResult, Stop, DEFAULT_ZIPF};
use swizzledb_sim::PolicyKind;

use crate::experiment::{self, Experiment};
use crate::harness::buffer::Progress;
use crate::plot::{Chart, Point, Scale, Series};
use crate::stats::summarize;
use crate::text::{thousands, write_aligned};
use crate::{units, Usage};

/// Options of `bench emulator`.
#[derive(Args, Debug)]
pub struct EmulatorArgs {
    /// Worker threads, comma-separated (threads beyond the cores oversubscribe them) [default:
    /// 16; with --all-miss 1,2,4,8,16]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<Vec<u16>>,
    /// Mean compute time after each access in microseconds (exponentially distributed),
    /// comma-separated [default: 1,2,3,4,5,6; with --all-miss 3]
    #[arg(long, value_delimiter = ',', value_parser = parse_compute)]
    compute_us: Option<Vec<f64>>,
    /// Variants: all, or a comma-separated list of lru, distlock, batching, bat-pref, pref,
    /// bp-distlock, prim, clock
    #[arg(long, default_value = "all", value_parser = parse_variants)]
    variant: Variants,
    /// Replacement policy inside the wrappers (the clock variant always uses CLOCK)
    #[arg(long, default_value = "lru")]
    policy: PolicyKind,
    /// D: data pages (10M, 1e7)
    #[arg(long, default_value = "10M", value_parser = units::parse_positive_count)]
    data_pages: u64,
    /// C: buffer frames
    #[arg(long, default_value = "1M", value_parser = units::parse_positive_count)]
    buffer_pages: u64,
    /// Zipf exponent of the page choice (the default gives LRU about 90% hits at C = D/10)
    #[arg(long, default_value_t = DEFAULT_ZIPF, value_parser = parse_zipf)]
    zipf: f64,
    /// Every access misses: each thread loops sequentially over all data pages (Fig. 13)
    #[arg(long)]
    all_miss: bool,
    /// Partitions of distlock and bp-distlock
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    partitions: u32,
    /// Free lists in all (split between partitions); 0 makes every variant evict one victim per
    /// miss under the lock
    #[arg(long, default_value_t = 64)]
    free_lists: u32,
    /// Victims reclaimed at once into an empty free list (F)
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    reclaim: u32,
    /// Seconds measured per variant, point and repetition
    #[arg(long, default_value = "2", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Seconds of unmeasured accesses before each measurement (after the buffer is pre-loaded)
    #[arg(long, default_value = "0.5", value_parser = units::parse_seconds)]
    warmup: f64,
    /// Measurements per variant and point, interleaved across variants; tables show medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Seed of the threads' page choices and compute times
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for emulator.csv and the plots (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
}

/// A list of variants (`all` or names).
#[derive(Clone, Debug)]
pub struct Variants(Vec<EmuVariant>);

fn parse_variants(input: &str) -> Result<Variants, String> {
    if input.trim().eq_ignore_ascii_case("all") {
        return Ok(Variants(EmuVariant::ALL.to_vec()));
    }
    let mut list = Vec::new();
    for name in input.split(',') {
        let v: EmuVariant =
            name.parse().map_err(|e: swizzledb_sim::emulator::UnknownVariant| e.to_string())?;
        if !list.contains(&v) {
            list.push(v);
        }
    }
    Ok(Variants(list))
}

fn parse_compute(input: &str) -> Result<f64, String> {
    match input.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("invalid compute time {input:?}; expected microseconds >= 0, e.g. 1 or 2.5")),
    }
}

fn parse_zipf(input: &str) -> Result<f64, String> {
    match input.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("invalid Zipf exponent {input:?}; expected a number >= 0 (0: uniform)")),
    }
}

/// One measurement.
pub struct Row {
    variant: EmuVariant,
    threads: usize,
    compute_us: f64,
    repetition: u16,
    result: RunResult,
    /// Accesses/s over distlock's at the same point and repetition.
    normalized: Option<f64>,
}

impl Row {
    fn waits_per_million(&self) -> f64 {
        self.result.per_million(self.result.locks.waits())
    }
}

/// The whole grid, validated.
pub struct Plan {
    threads: Vec<usize>,
    compute: Vec<f64>,
    variants: Vec<EmuVariant>,
    base: EmuConfig,
    duration: f64,
    warmup: f64,
    repeat: u16,
}

impl Plan {
    fn config(&self, variant: EmuVariant, threads: usize, compute_us: f64) -> EmuConfig {
        EmuConfig { variant, threads, compute_us, ..self.base.clone() }
    }

    fn policy_name(&self, variant: EmuVariant) -> String {
        if variant == EmuVariant::Clock {
            "clock".into()
        } else {
            self.base.policy.to_string()
        }
    }
}

fn plan(args: &EmulatorArgs) -> Result<Plan, String> {
    let pages = |what: &str, v: u64| {
        u32::try_from(v)
            .map_err(|_| format!("{what} {v} is above the {} pages the emulator can name", u32::MAX))
    };
    let mut threads: Vec<usize> = match &args.threads {
        Some(t) => t.iter().map(|&t| usize::from(t)).collect(),
        None if args.all_miss => vec![1, 2, 4, 8, 16],
        None => vec![16],
    };
    threads.sort_unstable();
    threads.dedup();
    let mut compute = match &args.compute_us {
        Some(c) => c.clone(),
        None if args.all_miss => vec![3.0],
        None => vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    };
    compute.sort_by(f64::total_cmp);
    compute.dedup();
    let base = EmuConfig {
        policy: args.policy,
        data_pages: pages("--data-pages", args.data_pages)?,
        buffer_pages: pages("--buffer-pages", args.buffer_pages)?,
        zipf: args.zipf,
        all_miss: args.all_miss,
        partitions: args.partitions as usize,
        free_lists: args.free_lists as usize,
        reclaim: args.reclaim as usize,
        seed: args.seed,
        ..EmuConfig::new(EmuVariant::Lru)
    };
    let plan = Plan {
        threads,
        compute,
        variants: args.variant.0.clone(),
        base,
        duration: args.duration,
        warmup: args.warmup,
        repeat: args.repeat,
    };
    for &v in &plan.variants {
        for &t in &plan.threads {
            for &m in &plan.compute {
                plan.config(v, t, m).validate().map_err(|e| format!("{v}: {e}"))?;
            }
        }
    }
    Ok(plan)
}

/// Runs `bench emulator`.
///
/// # Errors
/// Bad options ([`Usage`], before anything runs), and failures writing the outputs.
pub fn run(args: &EmulatorArgs) -> Result<ExitCode, Box<dyn Error>> {
    let plan = plan(args).map_err(Usage)?;
    experiment::execute(&plan, args.out.as_deref())
}

impl Experiment for Plan {
    const NAME: &'static str = "emulator";
    type Row = EmulatorRow;
    type Results = Vec<Row>;

    fn caption(&self) -> String {
        let mut text = Vec::new();
        let _ = print_caption(&mut text, self);
        String::from_utf8_lossy(&text).trim_end().to_string()
    }

    fn run(&self, progress: Progress) -> Result<Vec<Row>, Box<dyn Error>> {
        Ok(measure(self, progress))
    }

    fn tables(&self, rows: &Vec<Row>, mut out: &mut dyn Write) -> io::Result<()> {
        print_tables(&mut out, self, rows)?;
        print_checks(&mut out, self, rows)
    }

    fn rows(&self, rows: &Vec<Row>) -> Vec<EmulatorRow> {
        rows.iter().map(|r| EmulatorRow::new(self, r)).collect()
    }

    fn charts(&self, rows: &Vec<Row>) -> Vec<(String, Chart)> {
        charts(self, rows)
    }
}

fn print_caption(out: &mut impl Write, plan: &Plan) -> io::Result<()> {
    let b = &plan.base;
    let workload =
        if b.all_miss { "all-miss (sequential loops)".to_string() } else { format!("Zipf s={}", b.zipf) };
    writeln!(
        out,
        "BP-Wrapper buffer emulator (Ding et al. 2015, Figs. 11-13): {} data pages, {} buffer pages, {}, \
         policy {}, {} partitions, {} free lists x {} victims; median of {} interleaved repetitions of {} s \
         after {} s of warm-up.",
        thousands(u64::from(b.data_pages)),
        thousands(u64::from(b.buffer_pages)),
        workload,
        b.policy,
        b.partitions,
        b.free_lists,
        b.reclaim,
        plan.repeat,
        plan.duration,
        plan.warmup
    )?;
    if plan.variants.iter().any(|&v| v.uses_free_lists()) && b.free_lists > 0 {
        let probe = plan.config(EmuVariant::BatPref, 1, 0.0).effective_reclaim();
        if probe < b.reclaim {
            writeln!(
                out,
                "note: the buffer is small for {} free lists, so each reclaims {probe} victims at once \
                 instead of {} (full lists hold at most 1/16 of the frames).",
                b.free_lists, b.reclaim
            )?;
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if plan.threads.iter().any(|&t| t > cores) {
        writeln!(
            out,
            "note: this machine has {cores} cores; more threads oversubscribe them, so lock holders are \
             preempted as vCPUs are in the paper's VM setting (Fig. 12), not its 16-core machine (Fig. 11)."
        )?;
    }
    writeln!(out, "spin calibration: {:.0} spin-loop hints per us", swizzledb_sim::emulator::spins_per_us())
}

/// Every point, every repetition, every variant, in that nesting.
fn measure(plan: &Plan, progress: Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    let total = plan.threads.len() * plan.compute.len() * plan.variants.len() * usize::from(plan.repeat);
    let mut done = 0;
    for &threads in &plan.threads {
        for &compute_us in &plan.compute {
            let first = rows.len();
            for repetition in 0..plan.repeat {
                for &variant in &plan.variants {
                    done += 1;
                    progress.say(format_args!(
                        "[{done}/{total}] {variant}, {threads} threads, {compute_us} us, repetition {}",
                        repetition + 1
                    ));
                    let config = plan.config(variant, threads, compute_us);
                    let emu = Emulator::new(&config).expect("validated in plan");
                    let result = emu.run(plan.warmup, Stop::After(plan.duration));
                    rows.push(Row { variant, threads, compute_us, repetition, result, normalized: None });
                }
            }
            normalize(&mut rows[first..]);
        }
    }
    rows
}

/// Sets each row's accesses/s over distlock's in the same repetition (rows of one point).
fn normalize(rows: &mut [Row]) {
    let base: Vec<(u16, f64)> = rows
        .iter()
        .filter(|r| r.variant == EmuVariant::DistLock)
        .map(|r| (r.repetition, r.result.accesses_per_sec()))
        .collect();
    for row in rows {
        row.normalized = base
            .iter()
            .find(|(rep, _)| *rep == row.repetition)
            .and_then(|&(_, d)| (d > 0.0).then(|| row.result.accesses_per_sec() / d));
    }
}

/// The rows of one variant at one point.
fn at(rows: &[Row], variant: EmuVariant, threads: usize, compute_us: f64) -> impl Iterator<Item = &Row> {
    rows.iter().filter(move |r| r.variant == variant && r.threads == threads && r.compute_us == compute_us)
}

/// The median of `f` over a variant's repetitions at a point.
fn median(rows: &[Row], v: EmuVariant, t: usize, m: f64, f: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = at(rows, v, t, m).filter_map(f).collect();
    crate::stats::median(&values)
}

fn print_tables(out: &mut impl Write, plan: &Plan, rows: &[Row]) -> io::Result<()> {
    for &t in &plan.threads {
        for &m in &plan.compute {
            writeln!(out, "\n{t} threads, {m} us mean compute")?;
            let mut table = vec![[
                "variant",
                "policy",
                "accesses/s",
                "/distlock",
                "hit",
                "locks/M",
                "failed try/M",
                "waits/M",
                "miss-lock waits/M",
            ]
            .map(String::from)
            .to_vec()];
            for &v in &plan.variants {
                let cell = |f: &dyn Fn(&Row) -> Option<f64>, fmt: &dyn Fn(f64) -> String| {
                    median(rows, v, t, m, f).map_or("-".into(), fmt)
                };
                table.push(vec![
                    v.to_string(),
                    plan.policy_name(v),
                    cell(&|r| Some(r.result.accesses_per_sec()), &|x| thousands(x.round() as u64)),
                    cell(&|r| r.normalized, &|x| format!("{x:.2}")),
                    cell(&|r| Some(r.result.hit_ratio()), &|x| format!("{:.2}%", x * 100.0)),
                    cell(&|r| Some(r.result.per_million(r.result.locks.acquisitions())), &per_million),
                    cell(&|r| Some(r.result.per_million(r.result.locks.failed_try_locks)), &per_million),
                    cell(&|r| Some(r.waits_per_million()), &per_million),
                    cell(&|r| Some(r.result.per_million(r.result.locks.miss_waits)), &per_million),
                ]);
            }
            write_aligned(out, &table)?;
        }
    }
    writeln!(
        out,
        "\nlocks/M: lock acquisitions per million accesses (policy locks and miss locks); failed try/M: \
         batching's non-blocking attempts that found the lock taken; waits/M: acquisitions that had to \
         wait; /distlock: accesses/s over distlock's in the same repetition."
    )
}

fn per_million(x: f64) -> String {
    if x >= 100.0 {
        thousands(x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}

/// The paper's claims next to this run's numbers, one line each with ✓ or ✗.
fn print_checks(out: &mut impl Write, plan: &Plan, rows: &[Row]) -> io::Result<()> {
    use EmuVariant::{BatPref, Batching, Lru, Prim};
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    writeln!(out, "\nchecks (Ding et al. 2015, §4.1 and §4.3):")?;
    for &t in &plan.threads {
        for &m in &plan.compute {
            let point = format!("{t} threads, {m} us");
            let med = |v, f: &dyn Fn(&Row) -> Option<f64>| median(rows, v, t, m, f);
            let waits = |v| med(v, &|r| Some(r.waits_per_million()));
            let tput = |v| med(v, &|r| Some(r.result.accesses_per_sec()));
            let hit = |v| med(v, &|r| Some(r.result.hit_ratio()));
            for batched in [Batching, BatPref] {
                if let (Some(l), Some(b)) = (waits(Lru), waits(batched)) {
                    if l == 0.0 {
                        writeln!(
                            out,
                            "  {point}: lru never waited for a lock; nothing for {batched} to cut"
                        )?;
                        continue;
                    }
                    let ratio = if b > 0.0 { l / b } else { f64::INFINITY };
                    let shown = if ratio >= 10.0 { format!("{ratio:.0}") } else { format!("{ratio:.2}") };
                    writeln!(
                        out,
                        "  {point}: waits per million, lru / {batched} = {shown} ({l:.1} / {b:.1}; paper: \
                         197x to over 9,000x fewer with batching) {}",
                        mark(ratio >= 100.0)
                    )?;
                }
            }
            if let Some(n) = med(BatPref, &|r| r.normalized) {
                writeln!(
                    out,
                    "  {point}: bat-pref / distlock = {n:.2} (paper: 0.93 at 1 us, about 1 or above beyond) {}",
                    mark(n >= 0.9)
                )?;
            }
            if plan.base.all_miss && Some(&t) == plan.threads.last() {
                if let (Some(p), Some(b)) = (tput(Prim), tput(BatPref)) {
                    writeln!(
                        out,
                        "  {point} all-miss: prim / bat-pref = {:.2} (paper: prim saturates at 4 threads \
                         and falls behind) {}",
                        p / b,
                        mark(p / b < 0.9)
                    )?;
                }
            }
            if !plan.base.all_miss {
                for batched in [Batching, BatPref] {
                    if let (Some(l), Some(b)) = (hit(Lru), hit(batched)) {
                        let diff = (b - l) * 100.0;
                        writeln!(
                            out,
                            "  {point}: hit ratio {batched} - lru = {diff:+.2} points (paper: unchanged; \
                             allowed 0.5, the free lists keep up to {} frames free) {}",
                            thousands(
                                (plan.base.free_lists * plan.config(batched, t, m).effective_reclaim())
                                    as u64
                            ),
                            mark(diff.abs() <= 0.5)
                        )?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// CSV header of `emulator.csv` (docs/results-schema.md).
pub const CSV_HEADER: &str = "variant,policy,threads,compute_us,data_pages,buffer_pages,zipf,all_miss,\
partitions,free_lists,reclaim,repetition,duration_s,accesses,hits,accesses_per_sec,normalized,hit_ratio,\
lock_acquisitions_per_million,failed_trylocks_per_million,waits_per_million,miss_lock_waits_per_million";

/// One row of `emulator.csv`: one variant, thread count, compute time and repetition.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EmulatorRow {
    pub variant: String,
    pub policy: String,
    pub threads: usize,
    pub compute_us: f64,
    pub data_pages: u32,
    pub buffer_pages: u32,
    pub zipf: f64,
    pub all_miss: bool,
    pub partitions: usize,
    pub free_lists: usize,
    pub reclaim: usize,
    pub repetition: u16,
    pub duration_s: f64,
    pub accesses: u64,
    pub hits: u64,
    pub accesses_per_sec: f64,
    pub normalized: Option<f64>,
    pub hit_ratio: f64,
    pub lock_acquisitions_per_million: f64,
    pub failed_trylocks_per_million: f64,
    pub waits_per_million: f64,
    pub miss_lock_waits_per_million: f64,
}

impl EmulatorRow {
    fn new(plan: &Plan, r: &Row) -> EmulatorRow {
        let b = &plan.base;
        let x = &r.result;
        EmulatorRow {
            variant: r.variant.to_string(),
            policy: plan.policy_name(r.variant).to_string(),
            threads: r.threads,
            compute_us: r.compute_us,
            data_pages: b.data_pages,
            buffer_pages: b.buffer_pages,
            zipf: b.zipf,
            all_miss: b.all_miss,
            partitions: b.partitions,
            free_lists: b.free_lists,
            reclaim: plan.config(r.variant, r.threads, r.compute_us).effective_reclaim(),
            repetition: r.repetition,
            duration_s: x.seconds,
            accesses: x.accesses,
            hits: x.hits,
            accesses_per_sec: x.accesses_per_sec(),
            normalized: r.normalized,
            hit_ratio: x.hit_ratio(),
            lock_acquisitions_per_million: x.per_million(x.locks.acquisitions()),
            failed_trylocks_per_million: x.per_million(x.locks.failed_try_locks),
            waits_per_million: r.waits_per_million(),
            miss_lock_waits_per_million: x.per_million(x.locks.miss_waits),
        }
    }
}

/// What a chart plots of each row.
type RowValue<'a> = &'a dyn Fn(&Row) -> Option<f64>;

/// A series per variant: the median of `f` over the repetitions (error bar min..max) at each x.
fn series(plan: &Plan, rows: &[Row], xs: &[(f64, usize, f64)], f: RowValue<'_>) -> Vec<Series> {
    plan.variants
        .iter()
        .map(|&v| Series {
            name: v.to_string(),
            points: xs
                .iter()
                .filter_map(|&(x, t, m)| {
                    let values: Vec<f64> = at(rows, v, t, m).filter_map(f).collect();
                    summarize(&values).map(|s| Point { x, y: s.median, y_min: s.min, y_max: s.max })
                })
                .collect(),
        })
        .collect()
}

/// Fig. 11 (against compute time, per thread count) and Fig. 13 (against threads, per compute
/// time), whenever the grid has more than one value on the axis.
fn charts(plan: &Plan, rows: &[Row]) -> Vec<(String, Chart)> {
    let mut charts = Vec::new();
    let workload =
        if plan.base.all_miss { "all-miss".to_string() } else { format!("Zipf s={}", plan.base.zipf) };
    let note = format!(
        "{} data pages, {} buffer pages, {workload}, policy {}; median and min..max of {} repetitions",
        thousands(u64::from(plan.base.data_pages)),
        thousands(u64::from(plan.base.buffer_pages)),
        plan.base.policy,
        plan.repeat
    );
    let has_distlock = plan.variants.contains(&EmuVariant::DistLock);
    if plan.compute.len() > 1 {
        for &t in &plan.threads {
            let xs: Vec<(f64, usize, f64)> = plan.compute.iter().map(|&m| (m, t, m)).collect();
            let (y_label, f): (&str, RowValue<'_>) = if has_distlock {
                ("accesses/s normalized to distlock", &|r| r.normalized)
            } else {
                ("accesses per second", &|r| Some(r.result.accesses_per_sec()))
            };
            let chart = Chart {
                title: format!("Buffer emulator, {t} threads (Ding et al. 2015, Figs. 11/12)"),
                x_label: "mean compute time per access (us)".into(),
                y_label: y_label.into(),
                x_scale: Scale::Linear,
                series: series(plan, rows, &xs, f),
                note: Some(note.clone()),
                vline: None,
                marks: None,
            };
            charts.push((format!("emulator-fig11-t{t}"), chart));
        }
    }
    if plan.threads.len() > 1 {
        for &m in &plan.compute {
            let xs: Vec<(f64, usize, f64)> = plan.threads.iter().map(|&t| (t as f64, t, m)).collect();
            let chart = Chart {
                title: format!("Buffer emulator, {m} us compute (Ding et al. 2015, Fig. 13)"),
                x_label: "threads".into(),
                y_label: "accesses per second".into(),
                x_scale: Scale::Linear,
                series: series(plan, rows, &xs, &|r| Some(r.result.accesses_per_sec())),
                note: Some(note.clone()),
                vline: None,
                marks: None,
            };
            charts.push((format!("emulator-fig13-c{m}"), chart));
        }
    }
    charts
}
