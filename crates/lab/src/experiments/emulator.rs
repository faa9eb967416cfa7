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

use crate::experiment::{self, Check, Experiment, Verdict};
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

/// The paper's claims (Sec. 5.2, Figs. 11-13; the PostgreSQL contention and hit-ratio claims of
/// Sec. 5.1 where the emulator measures the same) held against this run. Figs. 11 and 12 are
/// compared at the smallest compute time of the grid (the paper's numbers are at 1 us); with
/// more threads than cores the run stands for the paper's VM (Fig. 12), otherwise for its
/// 16-core machine (Fig. 11).
fn checks(plan: &Plan, rows: &[Row]) -> Vec<Check> {
    use EmuVariant::{BatPref, Batching, BpDistLock, DistLock, Lru, Prim};
    let mut checks = Vec::new();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let Some(&m1) = plan.compute.first() else { return checks };
    let has = |v| plan.variants.contains(&v);
    if plan.base.all_miss {
        // Fig. 13: every access misses, 3 us of compute, 1 to 16 threads.
        let (Some(&t1), Some(&tn)) = (plan.threads.first(), plan.threads.last()) else { return checks };
        let tput = |v, t| median(rows, v, t, m1, |r: &Row| Some(r.result.accesses_per_sec()));
        let cond = format!("all-miss, {m1} us, {t1}-{tn} threads on {cores} cores");
        if has(Prim) {
            let curve: Vec<(usize, f64)> =
                plan.threads.iter().filter_map(|&t| Some((t, tput(Prim, t)?))).collect();
            if let Some(&(peak_t, peak)) = curve.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                let last = curve.last().map_or(peak, |c| c.1);
                let (verdict, reason) = prim_peak(&curve, cores);
                checks.push(
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
                );
            }
        }
        for v in [DistLock, BatPref, BpDistLock] {
            if let (true, Some(a), Some(z)) = (has(v), tput(v, t1), tput(v, tn)) {
                if tn > t1 {
                    let ideal = (tn.min(cores) as f64 / t1.min(cores) as f64).max(1.0);
                    checks.push(
                        Check::new(
                            format!("{v}: accesses/s at {tn} threads over {t1}"),
                            "scales with the threads (Fig. 13: distlock, bat-pref and bp-distlock scalable to 16 cores)",
                            format!("{:.2}x, {:.2}x of the cores' ideal {ideal:.0}x ({cond})", z / a, z / a / ideal),
                            Verdict::of(z / a >= 0.7 * ideal),
                        )
                        .because("tolerance: 70% of the ideal speedup up to this machine's cores"),
                    );
                }
            }
        }
        for v in [BatPref, BpDistLock] {
            if let (true, Some(x), Some(d)) = (has(v), tput(v, tn), tput(DistLock, tn)) {
                checks.push(
                    Check::new(
                        format!("{v} / distlock accesses/s at {tn} threads"),
                        "slightly above 1: fewer lock acquisitions than distlock (Fig. 13)",
                        format!("{:.2} ({cond})", x / d),
                        Verdict::of(x / d >= 0.97),
                    )
                    .because("tolerance: at least 0.97"),
                );
            }
        }
        return checks;
    }
    for &t in &plan.threads {
        let vm = t > cores;
        let cond = |m: f64| format!("{t} threads on {cores} cores, {m} us, Zipf s={}", plan.base.zipf);
        let norm = |v, m| median(rows, v, t, m, |r: &Row| r.normalized);
        let tput = |v, m| median(rows, v, t, m, |r: &Row| Some(r.result.accesses_per_sec()));
        let setting = if vm {
            "more threads than cores: compared with the paper's VM (Fig. 12) where it has a number"
        } else {
            "no more threads than cores: the paper's 16-core machine (Fig. 11)"
        };
        if let Some(n) = norm(Lru, m1) {
            checks.push(
                Check::new(
                    format!("lru / distlock accesses/s at {m1} us"),
                    "1/15 = 0.067 at 1 us (bufLRU 15x below bufDistLock, 16 cores)",
                    format!("{n:.3} ({})", cond(m1)),
                    Verdict::of((0.033..=0.133).contains(&n)),
                )
                .because("tolerance: within a factor 2"),
            );
        }
        if let Some(n) = norm(BatPref, m1) {
            let (paper, value) = if vm {
                ("1.21 at 1 us on the 16-vCPU VM (bufBat-Pref 21% above bufDistLock, Fig. 12)", 1.21)
            } else {
                ("0.93 at 1 us on 16 cores (bufBat-Pref 7% below bufDistLock, Fig. 11)", 0.93)
            };
            checks.push(
                Check::new(
                    format!("bat-pref / distlock accesses/s at {m1} us"),
                    paper,
                    format!("{n:.2} ({})", cond(m1)),
                    near(n, value, 0.1),
                )
                .because(format!("tolerance: ±0.10; {setting}")),
            );
        }
        if let (Some(b), Some(p)) = (tput(Batching, m1), tput(BatPref, m1)) {
            checks.push(
                Check::new(
                    format!("bat-pref / batching accesses/s at {m1} us"),
                    "almost 2 at 1 us (prefetching doubles batching's throughput, Fig. 11)",
                    format!("{:.2} ({})", p / b, cond(m1)),
                    Verdict::of((1.6..=2.2).contains(&(p / b))),
                )
                .because(format!("tolerance: 1.6 to 2.2; {setting}")),
            );
        }
        if let Some(n) = norm(BpDistLock, m1) {
            checks.push(
                Check::new(
                    format!("bp-distlock / distlock accesses/s at {m1} us"),
                    "1.12 at 1 us (bufBP-DistLock 12% above bufDistLock, Fig. 11)",
                    format!("{n:.2} ({})", cond(m1)),
                    near(n, 1.12, 0.1),
                )
                .because(format!("tolerance: ±0.10; {setting}")),
            );
        }
        if let (Some(p), Some(b)) = (tput(Prim, m1), tput(BatPref, m1)) {
            let r = p / b;
            let (paper, verdict) = if vm {
                ("below 0.71 at 1 us: the gap to bufBat-Pref is wider on the VM than the physical machine's 29% (Fig. 12)", Verdict::of(r < 0.71))
            } else {
                ("0.71 at 1 us (bufBP-prim 29% below bufBat-Pref, Fig. 11)", near(r, 0.71, 0.1))
            };
            checks.push(
                Check::new(
                    format!("prim / bat-pref accesses/s at {m1} us"),
                    paper,
                    format!("{r:.2} ({})", cond(m1)),
                    verdict,
                )
                .because(format!("tolerance: ±0.10 (Fig. 11) or below (Fig. 12); {setting}")),
            );
        }
        let longer: Vec<f64> = plan.compute.iter().copied().filter(|&m| m > m1).collect();
        if !longer.is_empty() {
            let ratios: Vec<(f64, f64)> =
                longer.iter().filter_map(|&m| Some((m, norm(BatPref, m)?))).collect();
            if let Some(&(m, lo)) = ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                checks.push(
                    Check::new(
                        format!("bat-pref / distlock beyond {m1} us, lowest"),
                        "about 1 or slightly above for 2-6 us (\"similar or slightly better\", Fig. 11)",
                        format!(
                            "{lo:.2} at {m} us, lowest of {} compute times ({t} threads on {cores} cores)",
                            ratios.len()
                        ),
                        Verdict::of(lo >= 0.95),
                    )
                    .because("tolerance: at least 0.95"),
                );
            }
            let gaps: Vec<(f64, f64)> =
                longer.iter().filter_map(|&m| Some((m, tput(Prim, m)? / tput(BatPref, m)?))).collect();
            if let Some(&(m, hi)) = gaps.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                checks.push(
                    Check::new(
                        format!("prim / bat-pref beyond {m1} us, highest"),
                        "below 1: the gap narrows with longer compute but does not close (Fig. 11)",
                        format!("{hi:.2} at {m} us ({t} threads on {cores} cores)"),
                        Verdict::of(hi < 1.0),
                    )
                    .because("tolerance: below 1"),
                );
            }
            if vm {
                if let (Some(a), Some(&mz), Some(z)) =
                    (norm(BatPref, m1), longer.last(), longer.last().and_then(|&m| norm(BatPref, m)))
                {
                    checks.push(
                        Check::new(
                            format!("bat-pref / distlock, {m1} us against {mz} us"),
                            "the VM advantage fades as compute grows (Fig. 12: 1.21 at 1 us, towards 1 at 6 us)",
                            format!("{a:.2} at {m1} us, {z:.2} at {mz} us ({t} threads on {cores} cores)"),
                            Verdict::of(a > z),
                        )
                        .because("tolerance: any fall"),
                    );
                }
            }
        }
        // Contention and hit ratio where contention is highest, at the shortest compute time.
        for m in [m1] {
            let waits = |v| median(rows, v, t, m, |r: &Row| Some(r.waits_per_million()));
            let hit = |v| median(rows, v, t, m, |r: &Row| Some(r.result.hit_ratio()));
            for batched in [Batching, BatPref] {
                if let (Some(l), Some(b)) = (waits(Lru), waits(batched)) {
                    let paper =
                        "197x to over 9,000x fewer contentions with batching (PostgreSQL, Sec. 5.1.3)";
                    checks.push(if l == 0.0 {
                        Check::new(
                            format!("lru / {batched} waits per million at {m} us"),
                            paper,
                            format!("lru never waited ({})", cond(m)),
                            Verdict::Partial,
                        )
                        .because("no contention on the one lock to cut")
                    } else {
                        let ratio = if b > 0.0 { l / b } else { f64::INFINITY };
                        Check::new(
                            format!("lru / {batched} waits per million at {m} us"),
                            paper,
                            format!("{ratio:.0}x ({l:.1} vs {b:.1}; {})", cond(m)),
                            Verdict::of(ratio >= 100.0),
                        )
                        .because("tolerance: at least 100x, a factor 2 below the paper's lowest")
                    });
                }
                if let (Some(l), Some(b)) = (hit(Lru), hit(batched)) {
                    let diff = (b - l) * 100.0;
                    checks.push(
                        Check::new(
                            format!("{batched} - lru hit ratio at {m} us"),
                            "unchanged by batching (Sec. 3.2, Fig. 4)",
                            format!("{diff:+.2} points ({})", cond(m)),
                            Verdict::of(diff.abs() <= 0.5),
                        )
                        .because(format!(
                            "tolerance: 0.5 points; the free lists keep up to {} frames free",
                            thousands(
                                (plan.base.free_lists * plan.config(batched, t, m).effective_reclaim())
                                    as u64
                            )
                        )),
                    );
                }
            }
        }
        if let Some(h) = median(rows, Lru, t, m1, |r: &Row| Some(r.result.hit_ratio())) {
            let geometry = plan.base.data_pages == 10_000_000 && plan.base.buffer_pages == 1_000_000;
            checks.push(
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
            );
        }
    }
    checks
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
