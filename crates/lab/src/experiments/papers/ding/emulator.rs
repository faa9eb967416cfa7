//! `swizzledb bench emulator`: the BP-Wrapper paper's buffer emulator (Ding, Shan & Jiang, TPDS
//! 2015, Figs. 11–13) over a grid of thread counts and compute times, every variant at every
//! point, repetitions interleaved across the variants (rep 1 of every variant, then rep 2, ...).
//! The emulator itself is `swizzledb_sim::emulator` (`crates/sim/README.md`, "Buffer emulator").

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use swizzledb_sim::emulator::{EmuConfig, EmuVariant, Emulator, RunResult, Stop, DEFAULT_ZIPF};
use swizzledb_sim::PolicyKind;

use crate::harness::buffer::Progress;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::stats::summarize;
use crate::support::text::{thousands, write_aligned};
use crate::support::units;
use crate::Usage;

/// Options of `bench emulator`.
#[derive(Args, Debug)]
pub struct EmulatorArgs {
    /// Worker threads, comma-separated (threads beyond the cores oversubscribe them) [default:
    /// 16; with --all-miss 1,2,4,8,16]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<Vec<u16>>,
    /// Mean compute time after each access in microseconds (exponentially distributed), 0 to
    /// 1000000, comma-separated [default: 1,2,3,4,5,6; with --all-miss 3]
    #[arg(long, value_delimiter = ',', value_parser = parse_compute)]
    compute_us: Option<Vec<f64>>,
    /// Variants: all, or a comma-separated list of lru, distlock, batching, bat-pref, pref,
    /// bp-distlock, prim, clock
    #[arg(long, default_value = "all", value_parser = parse_variants)]
    variant: Variants,
    /// Replacement policy inside the wrappers (the clock variant always uses CLOCK)
    #[arg(long, default_value = "lru")]
    policy: PolicyKind,
    /// D: data pages (10M, 1e7), at most 100M
    #[arg(long, default_value = "10M", value_parser = units::parse_positive_count)]
    data_pages: u64,
    /// C: buffer frames, at most 100M
    #[arg(long, default_value = "1M", value_parser = units::parse_positive_count)]
    buffer_pages: u64,
    /// Zipf exponent of the page choice (the default gives LRU about 90% hits at C = D/10)
    #[arg(long, default_value_t = DEFAULT_ZIPF, value_parser = parse_zipf)]
    zipf: f64,
    /// Every access misses: each thread loops sequentially over all data pages (Fig. 13)
    #[arg(long)]
    all_miss: bool,
    /// Which of the paper's machines the checks of Figs. 11/12 compare each thread count with:
    /// vm (Fig. 12: a 16-vCPU VM beside a busy neighbour), physical (Fig. 11: its 16-core
    /// machine), or auto: vm where the threads outnumber this machine's cores (a lock holder can
    /// then be descheduled, as a vCPU is), physical otherwise. Not for --all-miss (Fig. 13 ran
    /// on the physical machine)
    #[arg(long, value_enum, default_value_t = StandIn::Auto)]
    stand_in: StandIn,
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

/// Which of the paper's two machines a run stands for in the checks of Figs. 11 and 12.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum StandIn {
    /// The paper's VM (Fig. 12) where the threads outnumber the cores, else its physical
    /// machine (Fig. 11).
    #[default]
    Auto,
    /// The paper's 16-vCPU VM (Fig. 12), at every thread count.
    Vm,
    /// The paper's 16-core machine (Fig. 11), at every thread count.
    Physical,
}

impl StandIn {
    /// Whether `threads` threads on `cores` cores stand for the paper's VM.
    #[must_use]
    pub fn is_vm(self, threads: usize, cores: usize) -> bool {
        match self {
            StandIn::Auto => threads > cores,
            StandIn::Vm => true,
            StandIn::Physical => false,
        }
    }

    /// How the checks' reasons name the setting of `threads` threads on `cores` cores.
    #[must_use]
    pub fn setting(self, threads: usize, cores: usize) -> &'static str {
        match (self, self.is_vm(threads, cores)) {
            (StandIn::Auto, true) => {
                "more threads than cores: compared with the paper's VM (Fig. 12) where it has a number"
            }
            (StandIn::Auto, false) => "no more threads than cores: the paper's 16-core machine (Fig. 11)",
            (_, true) => "--stand-in vm: compared with the paper's VM (Fig. 12) where it has a number",
            (_, false) => "--stand-in physical: the paper's 16-core machine (Fig. 11)",
        }
    }
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

/// The longest mean compute time, µs: a second, far beyond the paper's 1 to 6 µs. Longer ones
/// spin on past the measured duration (1e18 µs never ended).
const MAX_COMPUTE_US: f64 = 1e6;

fn parse_compute(input: &str) -> Result<f64, String> {
    match input.trim().parse::<f64>() {
        Ok(v) if (0.0..=MAX_COMPUTE_US).contains(&v) => Ok(v),
        _ => Err(format!(
            "invalid compute time {input:?}; expected microseconds from 0 to {MAX_COMPUTE_US} (1 s), e.g. 1 \
             or 2.5"
        )),
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
    /// Which of the paper's machines each thread count stands for (Figs. 11/12).
    stand_in: StandIn,
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

/// The most data pages and buffer frames the emulator takes: ten times the paper's D (its tables
/// of pages and frames are made whole before a run; 2^32 - 1 frames aborted on the allocation).
const MAX_PAGES: u32 = 100_000_000;

fn plan(args: &EmulatorArgs) -> Result<Plan, String> {
    let pages = |what: &str, v: u64| {
        u32::try_from(v).ok().filter(|&p| p <= MAX_PAGES).ok_or_else(|| {
            format!(
                "{what} {v} is out of range: give 1 to {} (ten times the paper's data pages; the \
                 emulator keeps tables of every data page and frame in memory)",
                thousands(u64::from(MAX_PAGES))
            )
        })
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
    if args.all_miss && args.stand_in != StandIn::Auto {
        return Err(
            "--stand-in chooses between the machines of Figs. 11 and 12; --all-miss (Fig. 13) ran on \
                    the physical machine only"
                .into(),
        );
    }
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
        stand_in: args.stand_in,
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
        print_tables(&mut out, self, rows)
    }

    fn checks(&self, rows: &Vec<Row>) -> Vec<Check> {
        checks(self, rows)
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
    if let Some(note) = stand_in_note(plan.stand_in, &plan.threads, cores, b.all_miss) {
        writeln!(out, "{note}")?;
    }
    writeln!(out, "spin calibration: {:.0} spin-loop hints per us", swizzledb_sim::emulator::spins_per_us())
}

/// The caption's note on which of the paper's machines the run stands for, if it needs one.
fn stand_in_note(stand_in: StandIn, threads: &[usize], cores: usize, all_miss: bool) -> Option<String> {
    let crowded = threads.iter().any(|&t| t > cores);
    match stand_in {
        StandIn::Auto if crowded && !all_miss => Some(format!(
            "note: this machine has {cores} cores; more threads oversubscribe them, so lock holders are \
             preempted as vCPUs are in the paper's VM setting (Fig. 12), not its 16-core machine (Fig. 11); \
             the checks compare those thread counts with the VM (--stand-in auto)."
        )),
        StandIn::Auto if crowded => Some(format!(
            "note: this machine has {cores} cores; more threads oversubscribe them, so lock holders are \
             preempted as vCPUs are in the paper's VM setting, not its 16-core machine."
        )),
        StandIn::Auto => None,
        StandIn::Vm => Some(format!(
            "note: --stand-in vm: the checks compare every thread count with the paper's VM (Fig. 12); this \
             machine has {cores} cores."
        )),
        StandIn::Physical => Some(format!(
            "note: --stand-in physical: the checks compare every thread count with the paper's 16-core machine \
             (Fig. 11){}.",
            if crowded { format!(", though this machine's {cores} cores are oversubscribed") } else { String::new() }
        )),
    }
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
    crate::support::stats::median(&values)
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

/// `x` within `tol` of `paper`.
fn near(x: f64, paper: f64, tol: f64) -> Verdict {
    Verdict::of((x - paper).abs() <= tol)
}

/// Fig. 13: bufBP-prim "saturates at 4 threads".
const PRIM_PEAK_PAPER: usize = 4;
/// The tolerance of prim's peak: one doubling of the thread count either side of the paper's 4
/// (the default grid doubles), i.e. 2 to 8 threads.
const PRIM_PEAK_RANGE: (usize, usize) = (PRIM_PEAK_PAPER / 2, PRIM_PEAK_PAPER * 2);

/// Fig. 13's claim that prim peaks at 4 threads and falls with more, held against prim's
/// accesses/s per thread count (`curve`, ascending) on a machine of `cores` cores.
///
/// Every variant stops rising once the threads outnumber the cores, so a peak at few threads
/// tells prim's lock per miss apart from the machine only if the run has a thread count above
/// the tolerance's highest peak (8) with a core for each thread. Without one the check says ~
/// with that reason (on 2 cores any variant peaks "at 4 threads or fewer"); with one it is
/// strict: the peak at 2 to 8 threads and the most threads below it.
fn prim_peak(curve: &[(usize, f64)], cores: usize) -> (Verdict, String) {
    let (lo, hi) = PRIM_PEAK_RANGE;
    let Some(&(peak_t, peak)) = curve.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return (Verdict::Fails, "no point was measured".into());
    };
    if !curve.iter().any(|&(t, _)| t > hi && t <= cores) {
        return (
            Verdict::Partial,
            format!(
                "cannot be told on {cores} cores: every variant stops rising at the cores, so a peak \
                 at {hi} threads or fewer needs a run with more than {hi} threads on as many cores"
            ),
        );
    }
    let last = curve.last().map_or(peak, |c| c.1);
    let verdict = Verdict::of((lo..=hi).contains(&peak_t) && last < peak);
    (verdict, format!("tolerance: peak at {lo} to {hi} threads, lower at the most threads"))
}

/// Fig. 13's "slightly better than bufDistLock" read as a band: the paper gives no number, so
/// 0.97 allows for the noise below 1 and "slightly" is read as at most 15% above.
const SLIGHTLY_ABOVE: (f64, f64) = (0.97, 1.15);

/// `(x, value)` pairs labelled `at {x} {unit}` for [`experiment::every_point`].
fn labelled<T: std::fmt::Display + Copy>(values: &[(T, f64)], unit: &str) -> Vec<(String, f64)> {
    values.iter().map(|&(x, v)| (format!("at {x} {unit}"), v)).collect()
}

/// `0.98 at 1, 1.05 at 16 threads` for the ours column.
fn each_at<T: std::fmt::Display + Copy>(values: &[(T, f64)], unit: &str) -> String {
    let each: Vec<String> = values.iter().map(|&(x, v)| format!("{v:.2} at {x}")).collect();
    format!("{} {unit}", each.join(", "))
}

/// `tolerance`, then what lies outside it (if anything).
fn tolerance_and(tolerance: String, outside: &str) -> String {
    if outside.is_empty() {
        tolerance
    } else {
        format!("{tolerance}; {outside}")
    }
}

/// Fig. 13: `v` (bat-pref or bp-distlock) over distlock's accesses/s when every access misses,
/// `ratios` per thread count. The paper gives no number ("slightly better", direction only):
/// every thread count within [`SLIGHTLY_ABOVE`], two-sided ([`experiment::every_point`] names
/// the counts outside).
fn fig13_above_distlock(v: EmuVariant, ratios: &[(usize, f64)], cond: &str) -> Check {
    let (lo, hi) = SLIGHTLY_ABOVE;
    let (verdict, outside) =
        experiment::every_point(&labelled(ratios, "threads"), |r| (lo..=hi).contains(&r));
    Check::new(
        format!("{v} / distlock accesses/s, all-miss, every thread count"),
        "direction only: slightly above 1, fewer lock acquisitions than distlock (Fig. 13, 1 to 16 threads)",
        format!("{} ({cond})", each_at(ratios, "threads")),
        verdict,
    )
    .because(tolerance_and(
        format!("tolerance: {lo:.2} to {hi:.2} at every thread count (\"slightly\": at most 15% above)"),
        &outside,
    ))
}

/// Fig. 11 beyond the shortest compute time `m1`: "BP-Wrapper performs similarly or slightly
/// better than the distributed-lock approach" (no number): bat-pref / distlock within 0.95 to
/// 1.15 at every compute time. On the VM (Fig. 12) the advantage of 1.21 at 1 us "diminishes
/// gradually" as compute grows: within 0.95 to that 1.21 + 0.10.
fn beside_distlock(m1: f64, ratios: &[(f64, f64)], vm: bool, cond: &str, setting: &str) -> Check {
    let (paper, lo, hi) = if vm {
        (
            "direction only beyond 1 us: the VM advantage of 1.21 at 1 us fades towards 1 as compute grows \
             (Fig. 12)",
            0.95,
            1.31,
        )
    } else {
        (
            "direction only: about 1 or slightly above for 2-6 us (\"similar or slightly better\", Fig. 11)",
            0.95,
            1.15,
        )
    };
    let (verdict, outside) = experiment::every_point(&labelled(ratios, "us"), |r| (lo..=hi).contains(&r));
    Check::new(
        format!("bat-pref / distlock beyond {m1} us, every compute time"),
        paper,
        format!("{} ({cond})", each_at(ratios, "us")),
        verdict,
    )
    .because(tolerance_and(
        format!("tolerance: {lo:.2} to {hi:.2} at every compute time; {setting}"),
        &outside,
    ))
}

/// Fig. 11 beyond the shortest compute time `m1`: prim / bat-pref is 0.71 at 1 us and "the
/// speed gap ... reduces" but prim "is still lower": every compute time from 0.71 - 0.10 (the
/// 1 us check's tolerance) to below 1. On the VM (Fig. 12) the gap is only said to be wider
/// (no number): direction only, below 1.
fn prim_gap(m1: f64, gaps: &[(f64, f64)], vm: bool, cond: &str, setting: &str) -> Check {
    let (paper, lo) = if vm {
        (
            "direction only: below 1, the gap to bufBat-Pref wider on the VM than on the physical machine \
             (Fig. 12)",
            0.0,
        )
    } else {
        ("0.71 at 1 us, narrowing towards 1 for 2-6 us but still below it (Fig. 11)", 0.61)
    };
    let (verdict, outside) = experiment::every_point(&labelled(gaps, "us"), |r| (lo..1.0).contains(&r));
    let tolerance = if vm {
        format!("tolerance: below 1 at every compute time; {setting}")
    } else {
        format!("tolerance: {lo:.2} (0.71 - 0.10) to below 1 at every compute time; {setting}")
    };
    Check::new(
        format!("prim / bat-pref beyond {m1} us, every compute time"),
        paper,
        format!("{} ({cond})", each_at(gaps, "us")),
        verdict,
    )
    .because(tolerance_and(tolerance, &outside))
}

/// A run where every access misses (Fig. 13: 3 us of compute, 1 to 16 threads), and what its
/// checks share: the shortest compute time `m1`, the fewest and most threads, this machine's
/// cores and the condition every check states.
struct AllMiss<'a> {
    plan: &'a Plan,
    rows: &'a [Row],
    m1: f64,
    t1: usize,
    tn: usize,
    cores: usize,
    cond: String,
}

impl AllMiss<'_> {
    /// Whether the run measured `v`.
    fn has(&self, v: EmuVariant) -> bool {
        self.plan.variants.contains(&v)
    }

    /// `v`'s median accesses/s at `t` threads.
    fn tput(&self, v: EmuVariant, t: usize) -> Option<f64> {
        median(self.rows, v, t, self.m1, |r: &Row| Some(r.result.accesses_per_sec()))
    }

    /// Fig. 13: bufBP-prim peaks at 4 threads and falls with more ([`prim_peak`]).
    fn prim_peaks_early(&self) -> Option<Check> {
        let (tn, cond) = (self.tn, &self.cond);
        if !self.has(EmuVariant::Prim) {
            return None;
        }
        let curve: Vec<(usize, f64)> =
            self.plan.threads.iter().filter_map(|&t| Some((t, self.tput(EmuVariant::Prim, t)?))).collect();
        let &(peak_t, peak) = curve.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let last = curve.last().map_or(peak, |c| c.1);
        let (verdict, reason) = prim_peak(&curve, self.cores);
        Some(
            Check::new(
                "prim: thread count of its peak, and its fall after",
                "peak at 4 threads, lower with more (Fig. 13, 16 cores; the fall: direction only)",
                format!(
                    "peak {} at {peak_t} threads, {:.2}x the peak at {tn} threads ({cond})",
                    thousands(peak.round() as u64),
                    last / peak
                ),
                verdict,
            )
            .because(reason),
        )
    }

    /// Fig. 13: `v` (distlock, bat-pref or bp-distlock) scales with the threads up to 16 cores.
    fn scales_with_threads(&self, v: EmuVariant) -> Option<Check> {
        let (t1, tn, cores, cond) = (self.t1, self.tn, self.cores, &self.cond);
        let (true, Some(a), Some(z)) = (self.has(v), self.tput(v, t1), self.tput(v, tn)) else { return None };
        if tn <= t1 {
            return None;
        }
        let what = format!("{v}: accesses/s at {tn} threads over {t1}");
        let paper =
            "scales with the threads (Fig. 13: distlock, bat-pref and bp-distlock scalable to 16 cores)";
        if tn.min(cores) <= t1.min(cores) {
            // The fewest threads already fill the cores: the cores allow no speedup, and any
            // run that does not collapse would pass.
            return Some(
                Check::new(what, paper, format!("{:.2}x ({cond})", z / a), Verdict::Partial).because(
                    format!(
                    "cannot show on {cores} core(s): {t1} threads already fill them, so the cores allow no \
                     speedup; scaling needs a thread count below the cores"
                ),
                ),
            );
        }
        let ideal = tn.min(cores) as f64 / t1.min(cores) as f64;
        Some(
            Check::new(
                what,
                paper,
                format!("{:.2}x, {:.2}x of the cores' ideal {ideal:.0}x ({cond})", z / a, z / a / ideal),
                Verdict::of(z / a >= 0.7 * ideal),
            )
            .because("tolerance: 70% of the ideal speedup up to this machine's cores"),
        )
    }

    /// Fig. 13: `v` (bat-pref or bp-distlock) is slightly better than bufDistLock at every
    /// thread count ([`fig13_above_distlock`]).
    fn slightly_above_distlock(&self, v: EmuVariant) -> Option<Check> {
        if !self.has(v) || !self.has(EmuVariant::DistLock) {
            return None;
        }
        let ratios: Vec<(usize, f64)> = self
            .plan
            .threads
            .iter()
            .filter_map(|&t| Some((t, self.tput(v, t)? / self.tput(EmuVariant::DistLock, t)?)))
            .collect();
        (!ratios.is_empty()).then(|| fig13_above_distlock(v, &ratios, &self.cond))
    }

    /// Fig. 13's claims, in order.
    fn checks(&self) -> Vec<Check> {
        use EmuVariant::{BatPref, BpDistLock, DistLock};
        let mut checks: Vec<Check> = self.prim_peaks_early().into_iter().collect();
        for v in [DistLock, BatPref, BpDistLock] {
            checks.extend(self.scales_with_threads(v));
        }
        for v in [BatPref, BpDistLock] {
            checks.extend(self.slightly_above_distlock(v));
        }
        checks
    }
}

/// One thread count `t` of a run where accesses can hit (Figs. 11 and 12, Sec. 5.1), and what
/// its checks share: the shortest compute time `m1` and this machine's cores.
struct AtThreads<'a> {
    plan: &'a Plan,
    rows: &'a [Row],
    t: usize,
    m1: f64,
    cores: usize,
}

impl AtThreads<'_> {
    /// Whether `t` stands for the paper's VM (Fig. 12) rather than its 16-core machine (Fig. 11).
    fn vm(&self) -> bool {
        self.plan.stand_in.is_vm(self.t, self.cores)
    }

    /// Which of the paper's machines `t` stands for, in words, for the checks' reasons.
    fn setting(&self) -> &'static str {
        self.plan.stand_in.setting(self.t, self.cores)
    }

    /// The condition of a check at `m` us, as its ours column states it.
    fn cond(&self, m: f64) -> String {
        format!("{} threads on {} cores, {m} us, Zipf s={}", self.t, self.cores, self.plan.base.zipf)
    }

    /// `v`'s median accesses/s over distlock's at `m` us.
    fn norm(&self, v: EmuVariant, m: f64) -> Option<f64> {
        median(self.rows, v, self.t, m, |r: &Row| r.normalized)
    }

    /// `v`'s median accesses/s at `m` us.
    fn tput(&self, v: EmuVariant, m: f64) -> Option<f64> {
        median(self.rows, v, self.t, m, |r: &Row| Some(r.result.accesses_per_sec()))
    }

    /// The compute times of the grid longer than `m1`.
    fn longer(&self) -> Vec<f64> {
        self.plan.compute.iter().copied().filter(|&m| m > self.m1).collect()
    }

    /// Fig. 11: bufLRU is 15x below bufDistLock at 1 us.
    fn lru_below_distlock(&self) -> Option<Check> {
        let m1 = self.m1;
        let n = self.norm(EmuVariant::Lru, m1)?;
        Some(
            Check::new(
                format!("lru / distlock accesses/s at {m1} us"),
                "1/15 = 0.067 at 1 us (bufLRU 15x below bufDistLock, 16 cores)",
                format!("{n:.3} ({})", self.cond(m1)),
                Verdict::of((0.033..=0.133).contains(&n)),
            )
            .because("tolerance: within a factor 2"),
        )
    }

    /// Figs. 11 and 12: bufBat-Pref is 7% below bufDistLock at 1 us on 16 cores, and 21% above
    /// it on the 16-vCPU VM.
    fn bat_pref_against_distlock(&self) -> Option<Check> {
        let m1 = self.m1;
        let n = self.norm(EmuVariant::BatPref, m1)?;
        let (paper, value) = if self.vm() {
            ("1.21 at 1 us on the 16-vCPU VM (bufBat-Pref 21% above bufDistLock, Fig. 12)", 1.21)
        } else {
            ("0.93 at 1 us on 16 cores (bufBat-Pref 7% below bufDistLock, Fig. 11)", 0.93)
        };
        Some(
            Check::new(
                format!("bat-pref / distlock accesses/s at {m1} us"),
                paper,
                format!("{n:.2} ({})", self.cond(m1)),
                near(n, value, 0.1),
            )
            .because(format!("tolerance: ±0.10; {}", self.setting())),
        )
    }

    /// Fig. 11: prefetching almost doubles batching's throughput at 1 us.
    fn prefetching_doubles_batching(&self) -> Option<Check> {
        let m1 = self.m1;
        let (Some(b), Some(p)) = (self.tput(EmuVariant::Batching, m1), self.tput(EmuVariant::BatPref, m1))
        else {
            return None;
        };
        Some(
            Check::new(
                format!("bat-pref / batching accesses/s at {m1} us"),
                "almost 2 at 1 us (prefetching doubles batching's throughput, Fig. 11)",
                format!("{:.2} ({})", p / b, self.cond(m1)),
                Verdict::of((1.6..=2.2).contains(&(p / b))),
            )
            .because(format!("tolerance: 1.6 to 2.2; {}", self.setting())),
        )
    }

    /// Fig. 11: bufBP-DistLock is 12% above bufDistLock at 1 us.
    fn bp_distlock_above_distlock(&self) -> Option<Check> {
        let m1 = self.m1;
        let n = self.norm(EmuVariant::BpDistLock, m1)?;
        Some(
            Check::new(
                format!("bp-distlock / distlock accesses/s at {m1} us"),
                "1.12 at 1 us (bufBP-DistLock 12% above bufDistLock, Fig. 11)",
                format!("{n:.2} ({})", self.cond(m1)),
                near(n, 1.12, 0.1),
            )
            .because(format!("tolerance: ±0.10; {}", self.setting())),
        )
    }

    /// Figs. 11 and 12: bufBP-prim is 29% below bufBat-Pref at 1 us on 16 cores, and further
    /// below it on the VM.
    fn prim_below_bat_pref(&self) -> Option<Check> {
        let m1 = self.m1;
        let (Some(p), Some(b)) = (self.tput(EmuVariant::Prim, m1), self.tput(EmuVariant::BatPref, m1)) else {
            return None;
        };
        let r = p / b;
        let (paper, verdict) = if self.vm() {
            ("below 0.71 at 1 us: the gap to bufBat-Pref is wider on the VM than the physical machine's 29% (Fig. 12)", Verdict::of(r < 0.71))
        } else {
            ("0.71 at 1 us (bufBP-prim 29% below bufBat-Pref, Fig. 11)", near(r, 0.71, 0.1))
        };
        Some(
            Check::new(
                format!("prim / bat-pref accesses/s at {m1} us"),
                paper,
                format!("{r:.2} ({})", self.cond(m1)),
                verdict,
            )
            .because(format!("tolerance: ±0.10 (Fig. 11) or below (Fig. 12); {}", self.setting())),
        )
    }

    /// Figs. 11 and 12 beyond 1 us: bufBat-Pref performs similarly or slightly better than
    /// bufDistLock at every longer compute time ([`beside_distlock`]).
    fn bat_pref_beside_distlock_beyond(&self) -> Option<Check> {
        let ratios: Vec<(f64, f64)> =
            self.longer().iter().filter_map(|&m| Some((m, self.norm(EmuVariant::BatPref, m)?))).collect();
        (!ratios.is_empty()).then(|| {
            beside_distlock(
                self.m1,
                &ratios,
                self.vm(),
                &format!("{} threads on {} cores", self.t, self.cores),
                self.setting(),
            )
        })
    }

    /// Figs. 11 and 12 beyond 1 us: bufBP-prim's gap to bufBat-Pref narrows as compute grows but
    /// prim stays below ([`prim_gap`]).
    fn prim_gap_beyond(&self) -> Option<Check> {
        let gaps: Vec<(f64, f64)> = self
            .longer()
            .iter()
            .filter_map(|&m| Some((m, self.tput(EmuVariant::Prim, m)? / self.tput(EmuVariant::BatPref, m)?)))
            .collect();
        (!gaps.is_empty()).then(|| {
            prim_gap(
                self.m1,
                &gaps,
                self.vm(),
                &format!("{} threads on {} cores", self.t, self.cores),
                self.setting(),
            )
        })
    }

    /// Fig. 12: on the VM, bufBat-Pref's advantage over bufDistLock fades as compute grows.
    fn vm_advantage_fades(&self) -> Option<Check> {
        let (m1, t, cores) = (self.m1, self.t, self.cores);
        if !self.vm() {
            return None;
        }
        let longer = self.longer();
        let (Some(a), Some(&mz), Some(z)) = (
            self.norm(EmuVariant::BatPref, m1),
            longer.last(),
            longer.last().and_then(|&m| self.norm(EmuVariant::BatPref, m)),
        ) else {
            return None;
        };
        Some(
            Check::new(
                format!("bat-pref / distlock, {m1} us against {mz} us"),
                "the VM advantage fades as compute grows (Fig. 12: 1.21 at 1 us, towards 1 at 6 us)",
                format!("{a:.2} at {m1} us, {z:.2} at {mz} us ({t} threads on {cores} cores)"),
                Verdict::of(a > z),
            )
            .because("tolerance: any fall"),
        )
    }

    /// Sec. 5.1.3: `batched` (batching or bat-pref) has 197x to over 9,000x fewer lock contentions
    /// than lru, at the shortest compute time, where contention is highest.
    fn batching_cuts_contention(&self, batched: EmuVariant) -> Option<Check> {
        let m = self.m1;
        let waits = |v| median(self.rows, v, self.t, m, |r: &Row| Some(r.waits_per_million()));
        let (Some(l), Some(b)) = (waits(EmuVariant::Lru), waits(batched)) else { return None };
        let paper = "197x to over 9,000x fewer contentions with batching (PostgreSQL, Sec. 5.1.3)";
        Some(if l == 0.0 {
            Check::new(
                format!("lru / {batched} waits per million at {m} us"),
                paper,
                format!("lru never waited ({})", self.cond(m)),
                Verdict::Partial,
            )
            .because("no contention on the one lock to cut")
        } else {
            let ratio = if b > 0.0 { l / b } else { f64::INFINITY };
            Check::new(
                format!("lru / {batched} waits per million at {m} us"),
                paper,
                format!("{ratio:.0}x ({l:.1} vs {b:.1}; {})", self.cond(m)),
                Verdict::of(ratio >= 100.0),
            )
            .because("tolerance: at least 100x, a factor 2 below the paper's lowest")
        })
    }

    /// Sec. 3.2 (Fig. 4): batching leaves the hit ratio of `batched` (batching or bat-pref)
    /// unchanged from lru's, at the shortest compute time.
    fn batching_keeps_hit_ratio(&self, batched: EmuVariant) -> Option<Check> {
        let (m, t, plan) = (self.m1, self.t, self.plan);
        let hit = |v| median(self.rows, v, t, m, |r: &Row| Some(r.result.hit_ratio()));
        let (Some(l), Some(b)) = (hit(EmuVariant::Lru), hit(batched)) else { return None };
        let diff = (b - l) * 100.0;
        Some(
            Check::new(
                format!("{batched} - lru hit ratio at {m} us"),
                "unchanged by batching (Sec. 3.2, Fig. 4)",
                format!("{diff:+.2} points ({})", self.cond(m)),
                Verdict::of(diff.abs() <= 0.5),
            )
            .because(format!(
                "tolerance: 0.5 points; the free lists keep up to {} frames free",
                thousands((plan.base.free_lists * plan.config(batched, t, m).effective_reclaim()) as u64)
            )),
        )
    }

    /// Sec. 5.1: lru's hit ratio is roughly 90% with 1M buffer pages over 10M data pages.
    fn lru_hit_ratio(&self) -> Option<Check> {
        let plan = self.plan;
        let h = median(self.rows, EmuVariant::Lru, self.t, self.m1, |r: &Row| Some(r.result.hit_ratio()))?;
        let geometry = plan.base.data_pages == 10_000_000 && plan.base.buffer_pages == 1_000_000;
        Some(
            Check::new(
                "lru hit ratio",
                "roughly 90% (1M buffer pages, 10M data pages, Zipfian)",
                format!(
                    "{:.1}% ({} buffer pages, {} data pages, Zipf s={})",
                    h * 100.0,
                    thousands(u64::from(plan.base.buffer_pages)),
                    thousands(u64::from(plan.base.data_pages)),
                    plan.base.zipf
                ),
                near(h * 100.0, 90.0, 3.0),
            )
            .because(if geometry {
                "tolerance: ±3 points"
            } else {
                "tolerance: ±3 points; a smaller geometry than the paper's"
            }),
        )
    }

    /// The claims of Figs. 11 and 12 and Sec. 5.1 at this thread count, in order.
    fn checks(&self) -> Vec<Check> {
        use EmuVariant::{BatPref, Batching};
        let mut checks = Vec::new();
        checks.extend(self.lru_below_distlock());
        checks.extend(self.bat_pref_against_distlock());
        checks.extend(self.prefetching_doubles_batching());
        checks.extend(self.bp_distlock_above_distlock());
        checks.extend(self.prim_below_bat_pref());
        checks.extend(self.bat_pref_beside_distlock_beyond());
        checks.extend(self.prim_gap_beyond());
        checks.extend(self.vm_advantage_fades());
        // Contention and hit ratio where contention is highest, at the shortest compute time.
        for batched in [Batching, BatPref] {
            checks.extend(self.batching_cuts_contention(batched));
            checks.extend(self.batching_keeps_hit_ratio(batched));
        }
        checks.extend(self.lru_hit_ratio());
        checks
    }
}

/// The paper's claims (Sec. 5.2, Figs. 11-13; the PostgreSQL contention and hit-ratio claims of
/// Sec. 5.1 where the emulator measures the same) held against this run. Figs. 11 and 12 are
/// compared at the smallest compute time of the grid (the paper's numbers are at 1 us); each
/// thread count stands for the paper's VM (Fig. 12) or its 16-core machine (Fig. 11) as
/// `--stand-in` says ([`StandIn`]: by default the VM where the threads outnumber the cores).
fn checks(plan: &Plan, rows: &[Row]) -> Vec<Check> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let Some(&m1) = plan.compute.first() else { return Vec::new() };
    if plan.base.all_miss {
        // Fig. 13: every access misses, 3 us of compute, 1 to 16 threads.
        let (Some(&t1), Some(&tn)) = (plan.threads.first(), plan.threads.last()) else { return Vec::new() };
        let cond = format!("all-miss, {m1} us, {t1}-{tn} threads on {cores} cores");
        return AllMiss { plan, rows, m1, t1, tn, cores, cond }.checks();
    }
    plan.threads.iter().flat_map(|&t| AtThreads { plan, rows, t, m1, cores }.checks()).collect()
}

/// CSV header of `emulator.csv` (docs/results-schema.md).
pub const CSV_HEADER: &str = "variant,policy,threads,compute_us,data_pages,buffer_pages,zipf,all_miss,\
partitions,free_lists,reclaim,repetition,duration_s,accesses,hits,accesses_per_sec,normalized,hit_ratio,\
lock_acquisitions_per_million,failed_trylocks_per_million,waits_per_million,miss_lock_waits_per_million,io";

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
    /// Always `none`: the emulator's buffer reads no file.
    pub io: &'static str,
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
            io: "none",
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: EmulatorArgs,
    }

    fn parse(extra: &[&str]) -> Result<EmulatorArgs, clap::Error> {
        TestCli::try_parse_from(std::iter::once("t").chain(extra.iter().copied())).map(|c| c.args)
    }

    /// `--stand-in` parses vm, physical and auto (the default, today's rule: the VM where the
    /// threads outnumber the cores) and nothing else, reaches the plan, and is refused with
    /// --all-miss, whose Fig. 13 has no VM counterpart.
    #[test]
    fn stand_in_option_parses_and_reaches_the_plan() {
        assert_eq!(parse(&[]).unwrap().stand_in, StandIn::Auto);
        for (name, want) in [("vm", StandIn::Vm), ("physical", StandIn::Physical), ("auto", StandIn::Auto)] {
            let args = parse(&["--stand-in", name]).unwrap();
            assert_eq!(args.stand_in, want, "{name}");
            assert_eq!(plan(&args).unwrap().stand_in, want, "{name}");
        }
        assert!(parse(&["--stand-in", "cloud"]).is_err());
        assert!(plan(&parse(&["--all-miss", "--stand-in", "vm"]).unwrap()).is_err());
        assert!(plan(&parse(&["--all-miss", "--stand-in", "physical"]).unwrap()).is_err());
        assert!(plan(&parse(&["--all-miss"]).unwrap()).is_ok());
    }

    /// What each stand-in decides: auto keeps the old rule (threads > cores), vm and physical
    /// hold for every thread count whatever the cores; the reasons and the caption say which.
    #[test]
    fn stand_in_decides_vm_or_physical_machine() {
        assert!(StandIn::Auto.is_vm(16, 2));
        assert!(!StandIn::Auto.is_vm(2, 2));
        assert!(!StandIn::Auto.is_vm(16, 32), "16 threads on 32 cores stand for the physical machine");
        assert!(StandIn::Vm.is_vm(16, 32) && StandIn::Vm.is_vm(1, 2));
        assert!(!StandIn::Physical.is_vm(16, 2));
        assert!(StandIn::Auto.setting(16, 2).starts_with("more threads than cores"));
        assert!(StandIn::Vm.setting(16, 32).starts_with("--stand-in vm"));
        assert!(StandIn::Physical.setting(16, 2).starts_with("--stand-in physical"));
        assert_eq!(stand_in_note(StandIn::Auto, &[2], 2, false), None);
        assert!(stand_in_note(StandIn::Auto, &[16], 2, false).is_some_and(|n| n.contains("VM")));
        assert!(stand_in_note(StandIn::Vm, &[16], 32, false).is_some_and(|n| n.contains("--stand-in vm")));
        assert!(
            stand_in_note(StandIn::Physical, &[16], 2, false).is_some_and(|n| n.contains("oversubscribed"))
        );
    }

    /// Fig. 13's "slightly above distlock" is two-sided at every thread count. The old check
    /// wanted at least 0.97 at the most threads: 1.40 there passed, 0.80 at 1 thread was unseen.
    #[test]
    fn fig13_slightly_above_distlock_is_two_sided_at_every_thread_count() {
        let c = fig13_above_distlock(EmuVariant::BatPref, &[(1, 0.99), (16, 1.05)], "all-miss");
        assert_eq!(c.verdict, Verdict::Holds, "{c}");
        assert!(c.paper.starts_with("direction only"), "{}", c.paper);
        assert_eq!(c.ours, "0.99 at 1, 1.05 at 16 threads (all-miss)");
        let c = fig13_above_distlock(EmuVariant::BatPref, &[(1, 0.99), (16, 1.40)], "all-miss");
        assert_eq!(c.verdict, Verdict::Partial);
        assert!(c.reason.contains("1.40 at 16 threads"), "{}", c.reason);
        assert_eq!(
            fig13_above_distlock(EmuVariant::BpDistLock, &[(1, 0.80), (16, 1.40)], "x").verdict,
            Verdict::Fails
        );
    }

    /// Bat-pref beside distlock beyond 1 us is held at every compute time on both sides. The
    /// old check took the lowest and wanted at least 0.95: 1.0 and 1.6 passed.
    #[test]
    fn bat_pref_beside_distlock_is_two_sided_at_every_compute_time() {
        let c = beside_distlock(1.0, &[(3.0, 1.0), (6.0, 1.6)], false, "2 threads on 2 cores", "s");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.paper.starts_with("direction only"), "{}", c.paper);
        assert!(c.reason.contains("1.60 at 6 us"), "{}", c.reason);
        assert_eq!(beside_distlock(1.0, &[(3.0, 1.0), (6.0, 1.02)], false, "c", "s").verdict, Verdict::Holds);
        // On the VM the 1 us advantage (1.21) fades: up to 1.31 counts, 1.6 does not.
        assert_eq!(beside_distlock(1.0, &[(3.0, 1.2), (6.0, 1.1)], true, "c", "s").verdict, Verdict::Holds);
        assert_eq!(
            beside_distlock(1.0, &[(3.0, 1.2), (6.0, 1.1)], false, "c", "s").verdict,
            Verdict::Partial
        );
        assert_eq!(beside_distlock(1.0, &[(3.0, 1.6), (6.0, 0.8)], true, "c", "s").verdict, Verdict::Fails);
    }

    /// Prim behind bat-pref beyond 1 us: on the physical machine between the paper's 0.71 at 1
    /// us (less 0.10) and 1 at every compute time; the old check took the highest and wanted
    /// below 1, so 0.30 passed. On the VM only the direction (below 1) is given.
    #[test]
    fn prim_gap_narrows_from_the_papers_071_but_stays_below_one() {
        let c = prim_gap(1.0, &[(3.0, 0.30), (6.0, 0.90)], false, "c", "s");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert!(c.paper.starts_with("0.71 at 1 us"), "{}", c.paper);
        assert!(c.reason.contains("0.30 at 3 us"), "{}", c.reason);
        assert_eq!(prim_gap(1.0, &[(3.0, 0.75), (6.0, 0.90)], false, "c", "s").verdict, Verdict::Holds);
        let c = prim_gap(1.0, &[(3.0, 0.30), (6.0, 0.90)], true, "c", "s");
        assert_eq!(c.verdict, Verdict::Holds, "{c}");
        assert!(c.paper.starts_with("direction only"), "{}", c.paper);
        assert_eq!(prim_gap(1.0, &[(3.0, 1.0), (6.0, 1.1)], false, "c", "s").verdict, Verdict::Fails);
        assert_eq!(prim_gap(1.0, &[(3.0, 1.0)], true, "c", "s").verdict, Verdict::Fails);
    }

    /// A curve that rises to the cores and flattens: what any variant does on 2 cores. The old
    /// check ("peak at 4 threads or fewer, lower at the most threads") passed it; on 2 cores the
    /// peak cannot be told from the machine's limit, so it is ~ with the reason.
    #[test]
    fn prim_peak_is_partial_where_the_cores_are_too_few_to_show_one() {
        let flat = [(1, 100.0), (2, 190.0), (4, 186.0), (8, 184.0), (16, 180.0)];
        let (verdict, reason) = prim_peak(&flat, 2);
        assert_eq!(verdict, Verdict::Partial, "{reason}");
        assert!(reason.contains("2 cores") && reason.contains("more than 8 threads"), "{reason}");
        // 16 threads on 12 cores still leaves no thread count above 8 with a core each.
        assert_eq!(prim_peak(&flat, 12).0, Verdict::Partial);
    }

    /// With the cores there the check is strict: a peak at 4 (or one doubling away) that falls
    /// after holds; a curve still rising at 16 threads, or one that never rose, fails.
    #[test]
    fn prim_peak_is_checked_where_the_cores_are_there() {
        let paper = [(1, 100.0), (2, 180.0), (4, 250.0), (8, 220.0), (16, 150.0)];
        assert_eq!(
            prim_peak(&paper, 16),
            (Verdict::Holds, "tolerance: peak at 2 to 8 threads, lower at the most threads".into())
        );
        let scales = [(1, 100.0), (2, 190.0), (4, 370.0), (8, 700.0), (16, 1300.0)];
        assert_eq!(prim_peak(&scales, 16).0, Verdict::Fails);
        let never_rose = [(1, 100.0), (2, 90.0), (4, 80.0), (8, 70.0), (16, 60.0)];
        assert_eq!(prim_peak(&never_rose, 16).0, Verdict::Fails);
        assert_eq!(prim_peak(&[], 16).0, Verdict::Fails);
    }
}
