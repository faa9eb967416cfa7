//! Ding, Shan & Jiang 2015 (BP-Wrapper), the live-engine half: the lookup workload at a pool of
//! half the data, with CLOCK, LRU and 2Q locked on every access, 2Q with prefetching alone
//! (`bpw-pref-2q`, the paper's pgPref) and batching alone (`bpw-batch-2q`, pgBatching), and LRU
//! and 2Q behind BP-Wrapper, at 1 to 16 threads (Figs. 8-9). Per (policy, threads): lookups/s, hit ratio, and the
//! replacement lock's acquisitions, blocking waits and hold time per million page accesses.
//!
//! The data is loaded once; every policy opens its own copy, and every (threads, repetition) round
//! measures all policies in turn, so the machine's drift hits them alike. On a machine with fewer
//! cores than threads the threads oversubscribe the cores: a thread can be descheduled while it
//! holds the lock (lock-holder preemption), the setting the paper studies on virtual machines.

use crate::experiments::common::{base_config, parse_fraction, parse_zipf, Common};
use crate::experiments::papers::gilbert::policies::{pool_for, BaseFile};
use crate::harness::buffer::{self, Config, Measurement, Progress};
use crate::harness::buffer_report as report;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::reproduce::figures::Io;
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::stats::{summarize, Summary};
use crate::support::text::{bytes, thousands};
use crate::support::units::{self};
use crate::support::{stats, text};
use crate::Usage;
use clap::Args;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;
use swizzledb::{BpVariant, PolicyKind, PolicySpec, PoolMode, Stats};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Everything but policy, pool size and threads.
    pub base: Config,
    /// Policies compared.
    pub policies: Vec<PolicySpec>,
    /// Buffer mode.
    pub mode: PoolMode,
    /// Pool size as a fraction of the data.
    pub fraction: f64,
    /// Thread counts, ascending.
    pub threads: Vec<usize>,
}

/// The measurements of one (policy, threads).
#[derive(Debug)]
pub struct PolicyPoint {
    /// Replacement policy.
    pub policy: PolicySpec,
    /// Lookup threads.
    pub threads: usize,
    /// Measurements in repetition order.
    pub runs: Vec<Measurement>,
}

impl PolicyPoint {
    fn median(&self, f: impl Fn(&Measurement) -> Option<f64>) -> Option<f64> {
        buffer::median_of(&self.runs, f)
    }

    /// Median lookups/s.
    pub fn throughput(&self) -> Option<f64> {
        self.median(|m| Some(m.throughput()))
    }

    /// Median hit ratio, in percent.
    pub fn hit_percent(&self) -> Option<f64> {
        self.median(|m| hit_percent(&m.stats))
    }

    /// Median blocking waits on the replacement lock per million page accesses.
    pub fn waits_per_million(&self) -> Option<f64> {
        self.median(|m| waits_per_million(&m.stats))
    }

    /// Median process CPU microseconds per lookup.
    pub fn cpu_us_per_lookup(&self) -> Option<f64> {
        self.median(Measurement::cpu_us_per_op)
    }

    /// Median lock acquisitions per million page accesses.
    pub fn acquisitions_per_million(&self) -> Option<f64> {
        self.median(|m| per_million(m.stats.policy_lock_acquisitions, &m.stats))
    }

    /// Median share of the accesses reported to the policy that BP-Wrapper dropped (neither
    /// queued nor forwarded) because the policy ignores them, in percent.
    pub fn dropped_percent(&self) -> Option<f64> {
        self.median(|m| dropped_percent(&m.stats))
    }
}

/// The results of a run: one point per (policy, threads), an error if a policy stopped early.
#[derive(Debug, Default)]
pub struct Results {
    /// The points, by thread count then policy.
    pub points: Vec<PolicyPoint>,
    /// Bytes of the loaded base file.
    pub data_bytes: u64,
    /// Policies that failed, with the error.
    pub errors: Vec<(PolicySpec, String)>,
}

impl Results {
    fn at(&self, policy: &str, threads: usize) -> Option<&PolicyPoint> {
        self.points.iter().find(|p| p.threads == threads && p.policy.to_string() == policy)
    }

    /// `policy`'s lookups/s over `base`'s at `threads`, paired by repetition: each repetition
    /// runs every policy back to back, so the ratio within one repetition cancels most of the
    /// machine's drift between repetitions. Median, min and max of those ratios; `None` if
    /// either point is missing. Pairs only the repetitions both finished.
    pub fn paired_ratio(&self, policy: &str, base: &str, threads: usize) -> Option<Summary> {
        self.paired(policy, base, threads, |m| Some(m.throughput()))
    }

    /// The same pairing for process CPU time per lookup (`None` where it was not measured).
    pub fn paired_cpu_ratio(&self, policy: &str, base: &str, threads: usize) -> Option<Summary> {
        self.paired(policy, base, threads, Measurement::cpu_us_per_op)
    }

    fn paired(
        &self,
        policy: &str,
        base: &str,
        threads: usize,
        metric: impl Fn(&Measurement) -> Option<f64>,
    ) -> Option<Summary> {
        stats::summarize(&self.paired_values(policy, base, threads, metric))
    }

    /// The per-repetition ratios behind [`Results::paired_ratio`] (empty if a point is missing).
    fn paired_values(
        &self,
        policy: &str,
        base: &str,
        threads: usize,
        metric: impl Fn(&Measurement) -> Option<f64>,
    ) -> Vec<f64> {
        let (Some(p), Some(b)) = (self.at(policy, threads), self.at(base, threads)) else {
            return Vec::new();
        };
        p.runs.iter().zip(&b.runs).filter_map(|(x, y)| stats::ratio(metric(x)?, metric(y)?)).collect()
    }
}

fn hit_percent(s: &Stats) -> Option<f64> {
    (s.fixes > 0).then(|| s.hits as f64 * 100.0 / s.fixes as f64)
}

/// Hits dropped by BP-Wrapper as a percentage of the accesses reported to the policy (root fixes
/// are not reported; `None` without an instrumented lock).
fn dropped_percent(s: &Stats) -> Option<f64> {
    (s.policy_accesses > 0 && s.policy_lock_acquisitions > 0)
        .then(|| s.policy_dropped_hits as f64 * 100.0 / s.policy_accesses as f64)
}

/// `count` per million page accesses (fixes); `None` without fixes or for a policy without an
/// instrumented lock (which acquired it 0 times).
fn per_million(count: u64, s: &Stats) -> Option<f64> {
    (s.fixes > 0 && s.policy_lock_acquisitions > 0).then(|| count as f64 * 1e6 / s.fixes as f64)
}

fn waits_per_million(s: &Stats) -> Option<f64> {
    per_million(s.policy_lock_waits, s)
}

/// Estimated lock hold time per page access, in nanoseconds.
fn hold_ns_per_access(s: &Stats) -> Option<f64> {
    (s.policy_lock_timed_holds > 0 && s.fixes > 0).then(|| {
        s.policy_lock_hold_nanos as f64 / s.policy_lock_timed_holds as f64 * s.policy_lock_acquisitions as f64
            / s.fixes as f64
    })
}

/// The order in which repetition `rep` measures `n` policies: a shuffle seeded by the run's seed
/// and the repetition, so that the same command measures in the same orders. A rotation would
/// leave each policy after the same neighbour in all but one repetition in `n`.
pub(crate) fn repetition_order(n: usize, seed: u64, rep: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let rep = u64::try_from(rep).unwrap_or(u64::MAX);
    order.shuffle(&mut SmallRng::seed_from_u64(seed ^ rep.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    order
}

/// Loads the base file, opens one copy per policy, and measures every (threads, repetition,
/// policy) in that nesting order. Each repetition measures the policies in its own order
/// ([`repetition_order`]), so that no policy always runs first (right after the thread count
/// changed) or always after the same neighbour.
///
/// # Errors
/// Failures creating, loading or copying the base file, and verification failures. An engine
/// error in one policy ends only that policy.
pub fn run(plan: &Plan, progress: Progress) -> Result<Results, Box<dyn Error>> {
    let base = BaseFile::load(&plan.base, "bpwrapper", progress)?;
    run_on(plan, &base, progress)
}

/// [`run`] on a base file already loaded (`ding-buffer-sizes` runs one plan per pool size on
/// the same file).
///
/// # Errors
/// As [`run`], without the loading.
pub fn run_on(plan: &Plan, base: &BaseFile, progress: Progress) -> Result<Results, Box<dyn Error>> {
    let cfg = &plan.base;
    let pool_bytes = pool_for(plan.fraction, base.bytes, cfg.page_size);
    let mut results = Results { data_bytes: base.bytes, ..Results::default() };
    let mut open = Vec::new();
    for (n, &policy) in plan.policies.iter().enumerate() {
        let policy_cfg = Config { pool_bytes, policy, ..cfg.clone() };
        match base.open_copy(&policy_cfg, plan.mode, n) {
            Ok(loaded) => open.push((policy, policy_cfg, Some(loaded))),
            Err(e) => results.errors.push((policy, e.to_string())),
        }
    }
    for &threads in &plan.threads {
        let first = results.points.len();
        for &(policy, _, _) in &open {
            results.points.push(PolicyPoint { policy, threads, runs: Vec::new() });
        }
        for rep in 0..cfg.repeat {
            let n = open.len();
            for i in repetition_order(n, cfg.seed, rep) {
                let (policy, policy_cfg, live) = &mut open[i];
                let Some(loaded) = live else { continue };
                let point_cfg = Config { threads, ..policy_cfg.clone() };
                let label = format!("{policy} {threads} thread(s)");
                match buffer::measure_labelled(&point_cfg, loaded, rep, progress, &label) {
                    Ok(m) => results.points[first + i].runs.push(m),
                    Err(buffer::PhaseError::Engine(e)) => {
                        eprintln!("error: {label}: {e}");
                        results.errors.push((*policy, e.to_string()));
                        *live = None;
                    }
                    Err(buffer::PhaseError::Verify(msg)) => return Err(format!("{label}: {msg}").into()),
                }
            }
        }
    }
    progress.say(format_args!("closing and deleting the copies ..."));
    drop(open);
    Ok(results)
}

/// The note every output carries about cores and threads.
pub fn oversubscription_note(threads: &[usize]) -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let max = threads.iter().copied().max().unwrap_or(1);
    if max > cores {
        format!(
            "This machine has {cores} core(s): runs with more threads oversubscribe them, so a thread can be \
             descheduled while it holds the replacement lock (lock-holder preemption), the setting the paper \
             studies on virtual machines (its Fig. 12)."
        )
    } else {
        format!("This machine has {cores} core(s); no run oversubscribes them.")
    }
}

/// Two tables (throughput with its ratio to CLOCK; hit ratio and lock waits), then the failures.
pub fn print_tables(out: &mut impl Write, plan: &Plan, results: &Results) -> io::Result<()> {
    let cfg = &plan.base;
    writeln!(
        out,
        "Ding, Shan & Jiang 2015 (BP-Wrapper) on the live engine: {} records ({} file), {} lookups, {} mode, \
         pool = {:.0}% of the data ({}), median of {} interleaved repetitions of {} s; misses {}.",
        thousands(cfg.records),
        bytes(results.data_bytes),
        cfg.zipf.map_or("uniform".to_string(), |s| format!("Zipf s={s}")),
        plan.mode,
        plan.fraction * 100.0,
        bytes(pool_for(plan.fraction, results.data_bytes, cfg.page_size) as u64),
        cfg.repeat,
        cfg.duration,
        io_of(cfg).describe()
    )?;
    report::write_logging_note(out)?;
    writeln!(out, "{}", oversubscription_note(&plan.threads))?;
    let clock = plan.policies.iter().find(|p| p.to_string() == "clock").map(ToString::to_string);
    let dash = || "-".to_string();
    let table = policy_table(plan, "lookups/s", |name, t| {
        let x = results.at(name, t).and_then(PolicyPoint::throughput);
        let ratio = clock.as_deref().filter(|&c| c != name).and_then(|c| results.paired_ratio(name, c, t));
        match (x, ratio) {
            (Some(x), Some(r)) => {
                format!("{} ({:.2}x, {:.2}-{:.2})", thousands(x.round() as u64), r.median, r.min, r.max)
            }
            (Some(x), _) => thousands(x.round() as u64),
            _ => dash(),
        }
    });
    writeln!(
        out,
        "\nthroughput: median lookups/s (ratio to clock at the same thread count: median and range of the \
         per-repetition ratios, each policy against clock's run in the same repetition)"
    )?;
    text::write_aligned(out, &table)?;
    let table = policy_table(plan, "CPU us/lookup", |name, t| {
        let x = results.at(name, t).and_then(PolicyPoint::cpu_us_per_lookup);
        let ratio =
            clock.as_deref().filter(|&c| c != name).and_then(|c| results.paired_cpu_ratio(name, c, t));
        match (x, ratio) {
            (Some(x), Some(r)) => format!("{x:.2} ({:.2}x, {:.2}-{:.2})", r.median, r.min, r.max),
            (Some(x), None) => format!("{x:.2}"),
            _ => dash(),
        }
    });
    writeln!(
        out,
        "\nprocess CPU time per lookup, user + system, every thread (ratio to clock, paired as above): \
         the work a lookup costs, without the time threads spend waiting or descheduled"
    )?;
    text::write_aligned(out, &table)?;
    let table = policy_table(plan, "hit % / acquisitions / waits / dropped %", |name, t| {
        let p = results.at(name, t);
        let hit = p.and_then(PolicyPoint::hit_percent).map_or_else(dash, |h| format!("{h:.2}"));
        let acquired =
            p.and_then(PolicyPoint::acquisitions_per_million).map_or_else(dash, |a| format!("{a:.0}"));
        let waits = p.and_then(PolicyPoint::waits_per_million).map_or_else(dash, |w| format!("{w:.0}"));
        let dropped = p.and_then(PolicyPoint::dropped_percent).map_or_else(dash, |d| format!("{d:.1}"));
        format!("{hit} / {acquired} / {waits} / {dropped}")
    });
    writeln!(
        out,
        "\nhit ratio (%) / acquisitions of the replacement lock / blocking waits for it, per million page accesses \
         / hits BP-Wrapper dropped because the policy ignores them (2Q's A1in, hot/cold's hot pages), as % of the \
         accesses reported to the policy (root fixes are not)"
    )?;
    writeln!(out, "(lock counts exist only for policies behind the instrumented lock: locked-* and bpw-*)")?;
    text::write_aligned(out, &table)?;
    for (policy, e) in &results.errors {
        writeln!(out, "{policy} FAILED: {e}")?;
    }
    Ok(())
}

/// A table with a row per policy and a column per thread count, `cell(policy name, threads)`.
fn policy_table(plan: &Plan, label: &str, cell: impl Fn(&str, usize) -> String) -> Vec<Vec<String>> {
    let mut header = vec![label.to_string()];
    header.extend(plan.threads.iter().map(|t| format!("{t} thr")));
    let mut table = vec![header];
    for policy in &plan.policies {
        let name = policy.to_string();
        let mut row = vec![name.clone()];
        row.extend(plan.threads.iter().map(|&t| cell(&name, t)));
        table.push(row);
    }
    table
}

/// The number of cores of this machine, for the checks' conditions.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Within this much of 1, a wrapped policy's lookups/s track CLOCK's at one thread count: the
/// paper's curves "overlap" (1, no other number); the rest allows for the noise between paired
/// repetitions on a shared machine.
const TRACKS_CLOCK_TOLERANCE: f64 = 0.10;

/// "Batching tracks CLOCK" held at every thread count: `medians` are a wrapped policy's median
/// paired lookups/s over CLOCK's, per thread count. ✓ if each is within
/// [`TRACKS_CLOCK_TOLERANCE`] of 1, ~ if some are, ✗ if none; the reason states the tolerance
/// and names the thread counts outside it.
fn tracks_clock(medians: &[(usize, f64)]) -> (Verdict, String) {
    let points: Vec<(String, f64)> = medians.iter().map(|&(n, r)| (format!("at {n} thread(s)"), r)).collect();
    let (verdict, outside) = experiment::every_point(&points, |r| (r - 1.0).abs() <= TRACKS_CLOCK_TOLERANCE);
    let tolerance = format!("tolerance: 1 ± {TRACKS_CLOCK_TOLERANCE:.2} at every thread count");
    let reason = if outside.is_empty() { tolerance } else { format!("{tolerance}; {outside}") };
    (verdict, reason)
}

/// `(thread count, value)` pairs labelled for [`experiment::every_point`].
fn at_counts(values: &[(usize, f64)]) -> Vec<(String, f64)> {
    values.iter().map(|&(n, v)| (format!("at {n} thread(s)"), v)).collect()
}

/// `tolerance`, then what lies outside it (if anything).
fn tolerance_and(tolerance: &str, outside: &str) -> String {
    if outside.is_empty() {
        tolerance.to_string()
    } else {
        format!("{tolerance}; {outside}")
    }
}

/// A claim held at every thread count of the run: `values` per thread count, `ok` the
/// tolerance stated in `tolerance`. ✓ / ~ / ✗ as [`experiment::every_point`], which names the
/// thread counts outside.
fn at_every_count(values: &[(usize, f64)], ok: impl Fn(f64) -> bool, tolerance: &str) -> (Verdict, String) {
    let (verdict, outside) = experiment::every_point(&at_counts(values), ok);
    (verdict, tolerance_and(tolerance, &outside))
}

/// The paper shows lock contention from 2 cores on (Figs. 8-9 leave out 1 core, "the values are
/// too small"); one thread cannot contend with another.
const CONTENDED_FROM: usize = 2;

/// A claim about how far a policy cuts the unbatched lock's blocking waits, held at every
/// thread count from [`CONTENDED_FROM`]: `waits` are (threads, the locked policy's waits, the
/// other's waits) per million accesses, `value(locked, other)` the number compared and `ok` its
/// tolerance, stated in `tolerance`. A thread count where the locked policy never waited has
/// nothing to cut: it is named, and leaves the verdict at ~ at best. ~ with the reason where no
/// thread count contended at all.
fn cut_at_every_count(
    waits: &[(usize, f64, f64)],
    value: impl Fn(f64, f64) -> f64,
    ok: impl Fn(f64) -> bool,
    tolerance: &str,
) -> (Verdict, String) {
    let considered: Vec<&(usize, f64, f64)> = waits.iter().filter(|w| w.0 >= CONTENDED_FROM).collect();
    if considered.is_empty() {
        return (
            Verdict::Partial,
            format!(
                "the paper's contention is at {CONTENDED_FROM} cores or more; this run has no thread count \
                 above 1"
            ),
        );
    }
    let idle: Vec<String> = considered.iter().filter(|w| w.1 == 0.0).map(|w| w.0.to_string()).collect();
    let measured: Vec<(usize, f64)> =
        considered.iter().filter(|w| w.1 > 0.0).map(|&&(n, l, o)| (n, value(l, o))).collect();
    let no_wait = |counts: &[String]| {
        format!(
            "no contention on the unbatched lock to cut at {} thread(s) on this machine",
            counts.join(", ")
        )
    };
    if measured.is_empty() {
        return (Verdict::Partial, no_wait(&idle));
    }
    let (mut verdict, mut reason) = at_every_count(&measured, ok, tolerance);
    if !idle.is_empty() {
        if verdict == Verdict::Holds {
            verdict = Verdict::Partial;
        }
        reason = format!("{reason}; {}", no_wait(&idle));
    }
    (verdict, reason)
}

/// The PostgreSQL core counts with numbers for pg2Q against pgClock (Sec. 5.1.3: 8 and 16; below
/// 4 cores pg2Q still scales).
const PAPER_CORE_COUNTS: (usize, usize) = (8, 16);

/// A claim the paper makes at 8 and 16 cores, held at every thread count of 8 or more that has
/// a core for each thread: `ok(threads, value)` with the tolerance stated in `tolerance`. With
/// fewer cores the threads take turns on them, so the lock sees the contention of as many
/// threads as cores, not the paper's: such thread counts are named and leave the verdict at ~
/// at best, and where no thread count of 8 or more has its cores the check is ~ with that reason
/// (it never vanishes, and never passes on a machine that cannot show it).
fn at_paper_core_counts(
    values: &[(usize, f64)],
    cores: usize,
    ok: impl Fn(usize, f64) -> bool,
    tolerance: &str,
) -> (Verdict, String) {
    let (from, most) = PAPER_CORE_COUNTS;
    let applicable: Vec<(usize, f64)> = values.iter().copied().filter(|&(n, _)| n >= from).collect();
    let (strict, crowded): (Vec<_>, Vec<_>) = applicable.iter().partition(|&&(n, _)| n <= cores);
    let crowded_counts: Vec<String> = crowded.iter().map(|(n, _)| n.to_string()).collect();
    if strict.is_empty() {
        let ran = if crowded.is_empty() {
            format!("this run has no thread count of {from} or more")
        } else {
            format!("{} thread(s) oversubscribe them", crowded_counts.join(", "))
        };
        return (
            Verdict::Partial,
            format!(
                "cannot show on {cores} core(s): the paper's numbers are at {from} and {most} cores, and {ran}; \
                 it needs a run with {from} or more threads on as many cores"
            ),
        );
    }
    let outside: Vec<String> = strict
        .iter()
        .filter(|&&(n, v)| !ok(n, v))
        .map(|&(n, v)| format!("{v:.2} at {n} thread(s)"))
        .collect();
    let mut verdict = if outside.is_empty() {
        Verdict::Holds
    } else if outside.len() == strict.len() {
        Verdict::Fails
    } else {
        Verdict::Partial
    };
    let mut reason = tolerance.to_string();
    if !outside.is_empty() {
        reason = format!(
            "{reason}; outside the tolerance at {} of {} points: {}",
            outside.len(),
            strict.len(),
            outside.join(", ")
        );
    }
    if !crowded.is_empty() {
        if verdict == Verdict::Holds {
            verdict = Verdict::Partial;
        }
        reason = format!(
            "{reason}; not held at {} thread(s), more than the {cores} core(s) (the paper's counts are cores)",
            crowded_counts.join(", ")
        );
    }
    (verdict, reason)
}

/// pg2Q over pgClock at `threads` cores (Sec. 5.1.3): the paper's range and ours around it.
fn locked_over_clock_range(threads: usize) -> (f64, f64) {
    if threads >= PAPER_CORE_COUNTS.1 {
        (0.33, 0.45)
    } else {
        (0.42, 0.71)
    }
}

/// The number of each thread count, e.g. `0.66 at 1, 0.40 at 16 threads`.
fn each_count(values: &[(usize, f64)], fmt: impl Fn(f64) -> String) -> String {
    let each: Vec<String> = values.iter().map(|&(n, v)| format!("{} at {n}", fmt(v))).collect();
    format!("{} threads", each.join(", "))
}

/// The paper's claims (Sec. 5.1.3, Figs. 8-9; Sec. 3.2 for the hit ratio; Sec. 4.2 for the
/// hot/cold combination) held at every thread count of the run where they apply: batching
/// tracking CLOCK ([`tracks_clock`]), prefetching's throughput against locked 2Q, the hit ratios
/// and the hot/cold share at every count; the cuts in lock waits at every count from 2
/// ([`cut_at_every_count`]); locked 2Q and prefetching alone against CLOCK at the paper's 8 and
/// 16 cores, with as many cores ([`at_paper_core_counts`]). One method of [`Claims`] per claim,
/// for each policy behind the full BP-Wrapper.
#[must_use]
pub fn checks(plan: &Plan, results: &Results) -> Vec<Check> {
    if plan.threads.is_empty() {
        return Vec::new();
    }
    let cores = cores();
    let cond = format!("on {cores} cores, lookups, pool {:.0}% of the data", plan.fraction * 100.0);
    let mut checks = Vec::new();
    for policy in &plan.policies {
        let Some(BpVariant::Both) = policy.bp_wrapper else { continue };
        let claims = Claims::new(plan, results, cores, &cond, policy);
        checks.extend(claims.batching_tracks_clock());
        checks.extend(claims.batching_cuts_waits());
        checks.extend(claims.prefetching_cuts_waits());
        checks.extend(claims.prefetching_gains_on_locked());
        checks.extend(claims.prefetching_stays_below_clock());
        checks.extend(claims.locked_falls_behind_clock());
        checks.extend(claims.hot_hits_left_out());
        checks.extend(claims.hit_ratio_unchanged());
    }
    checks
}

/// The paper's claims about one policy behind the full BP-Wrapper (`bpw-2q`, the paper's
/// pgBat-Pre), against its parts and against CLOCK: the run, the machine's cores, the condition
/// every check states, and the names of the policy with each variant of the wrapper.
struct Claims<'a> {
    plan: &'a Plan,
    results: &'a Results,
    cores: usize,
    cond: &'a str,
    policy: &'a PolicySpec,
    /// Behind the full BP-Wrapper (batching and prefetching).
    name: String,
    /// The policy without BP-Wrapper.
    plain: String,
    /// Locked on every access (pg2Q).
    locked: String,
    /// Batching alone (pgBatching).
    batch: String,
    /// Prefetching alone (pgPref).
    pref: String,
}

impl<'a> Claims<'a> {
    /// The claims about `policy` (behind the full BP-Wrapper) in this run.
    fn new(
        plan: &'a Plan,
        results: &'a Results,
        cores: usize,
        cond: &'a str,
        policy: &'a PolicySpec,
    ) -> Self {
        let with = |v: Option<BpVariant>| PolicySpec { bp_wrapper: v, ..*policy }.to_string();
        Claims {
            plan,
            results,
            cores,
            cond,
            policy,
            name: policy.to_string(),
            plain: with(None),
            locked: with(Some(BpVariant::None)),
            batch: with(Some(BpVariant::Batching)),
            pref: with(Some(BpVariant::Prefetching)),
        }
    }

    /// `f` at each thread count of the run where it is defined.
    fn over_counts(&self, f: impl Fn(usize) -> Option<f64>) -> Vec<(usize, f64)> {
        self.plan.threads.iter().filter_map(|&n| Some((n, f(n)?))).collect()
    }

    /// Median paired lookups/s of `a` over `b` at each thread count where both ran.
    fn paired(&self, a: &str, b: &str) -> Vec<(usize, f64)> {
        self.over_counts(|n| self.results.paired_ratio(a, b, n).map(|r| r.median))
    }

    /// (threads, `locked`'s waits, `other`'s waits) per million accesses, at each thread count
    /// where both have them.
    fn wait_pairs(&self, locked: &str, other: &str) -> Vec<(usize, f64, f64)> {
        let waits = |name: &str, n: usize| self.results.at(name, n).and_then(PolicyPoint::waits_per_million);
        self.plan.threads.iter().filter_map(|&n| Some((n, waits(locked, n)?, waits(other, n)?))).collect()
    }

    /// Batching tracks CLOCK: pgBatching's and pgBat-Pre's throughput curves overlap pgClock's
    /// at every thread count.
    fn batching_tracks_clock(&self) -> Vec<Check> {
        let (plan, results, cores) = (self.plan, self.results, self.cores);
        let mut checks = Vec::new();
        for wrapped in [&self.name, &self.batch] {
            let ratios: Vec<(usize, Summary)> = plan
                .threads
                .iter()
                .filter_map(|&n| Some((n, results.paired_ratio(wrapped, "clock", n)?)))
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let medians: Vec<(usize, f64)> = ratios.iter().map(|(n, r)| (*n, r.median)).collect();
            let (verdict, reason) = tracks_clock(&medians);
            let each: Vec<String> = ratios
                .iter()
                .map(|(n, r)| format!("{:.2} at {n} ({:.2}-{:.2})", r.median, r.min, r.max))
                .collect();
            checks.push(
                Check::new(
                    format!("{wrapped} / clock lookups/s"),
                    "1 at every core count from 1 to 16: pgBatching's and pgBat-Pre's throughput curves \
                     overlap pgClock's (DBT-1, DBT-2, TableScan, no misses)",
                    format!(
                        "{} threads (median and range of paired repetitions) on {cores} cores, lookups, \
                         pool {:.0}% of the data",
                        each.join(", "),
                        plan.fraction * 100.0
                    ),
                    verdict,
                )
                .because(reason),
            );
        }
        checks
    }

    /// Batching cuts the blocking waits on the replacement lock by orders of magnitude (197x to
    /// over 9,000x fewer than pg2Q), at every thread count that contends.
    fn batching_cuts_waits(&self) -> Vec<Check> {
        let (locked, cond) = (&self.locked, self.cond);
        let mut checks = Vec::new();
        for wrapped in [&self.name, &self.batch] {
            let pairs = self.wait_pairs(locked, wrapped);
            if pairs.is_empty() {
                continue;
            }
            let cut = |l: f64, w: f64| if w > 0.0 { l / w } else { f64::INFINITY };
            let (verdict, reason) = cut_at_every_count(
                &pairs,
                cut,
                |r| r >= 100.0,
                "tolerance: at least 100x at every thread count from 2, a factor 2 below the paper's lowest \
                 (its range is open above: 'over 9,000')",
            );
            let each: Vec<String> = pairs
                .iter()
                .map(|&(n, l, w)| format!("{:.0}x ({l:.0} vs {w:.1}) at {n}", cut(l, w)))
                .collect();
            checks.push(
                Check::new(
                    format!("{locked} / {wrapped} waits per million accesses"),
                    "197x to over 9,000x fewer contentions per million accesses (pgBatching vs pg2Q, 2 to 16 \
                     cores)",
                    format!("{} threads {cond}", each.join(", ")),
                    verdict,
                )
                .because(reason),
            );
        }
        checks
    }

    /// Prefetching alone (pgPref) cuts pg2Q's blocking waits by 20.8-87.5%, at every thread
    /// count that contends.
    fn prefetching_cuts_waits(&self) -> Option<Check> {
        let (locked, pref, cond) = (&self.locked, &self.pref, self.cond);
        let pairs = self.wait_pairs(locked, pref);
        if pairs.is_empty() {
            return None;
        }
        let cut = |l: f64, p: f64| (1.0 - p / l) * 100.0;
        let (verdict, reason) = cut_at_every_count(
            &pairs,
            cut,
            |c| (20.8..=87.5).contains(&c),
            "tolerance: within the paper's range over both machines (20.8-87.5% fewer) at every thread \
             count from 2",
        );
        let each: Vec<String> = pairs
            .iter()
            .map(|&(n, l, p)| {
                if l == 0.0 {
                    format!("{locked} never waited ({pref}: {p:.1}) at {n}")
                } else {
                    let c = cut(l, p);
                    format!(
                        "{:.1}% {} ({p:.0} vs {l:.0}) at {n}",
                        c.abs(),
                        if c >= 0.0 { "fewer" } else { "more" }
                    )
                }
            })
            .collect();
        Some(
            Check::new(
                format!("{pref} waits vs {locked}"),
                "33.7-82.6% fewer contentions than pg2Q (Altix), 20.8-87.5% (Dell); on the Altix 82.4% at 2 \
                 cores, 60.2% at 4, 46.3% at 8, 38.6% at 16",
                format!("{} threads {cond}", each.join(", ")),
                verdict,
            )
            .because(reason),
        )
    }

    /// Prefetching alone (pgPref) gains some throughput over pg2Q: up to 26.1% more lookups/s.
    fn prefetching_gains_on_locked(&self) -> Option<Check> {
        let (locked, pref, cond) = (&self.locked, &self.pref, self.cond);
        let ratios = self.paired(pref, locked);
        if ratios.is_empty() {
            return None;
        }
        let (verdict, reason) = at_every_count(
            &ratios,
            |r| (0.97..=1.31).contains(&r),
            "tolerance: 0.97 to 1.31 at every thread count, i.e. no loss and no more than the paper's gain",
        );
        Some(
            Check::new(
                format!("{pref} / {locked} lookups/s"),
                "up to 1.261 (pgPref over pg2Q: throughput up to 26.1% higher)",
                format!(
                    "{} (median of paired repetitions) {cond}",
                    each_count(&ratios, |r| format!("{r:.2}"))
                ),
                verdict,
            )
            .because(reason),
        )
    }

    /// Prefetching alone (pgPref) does not scale: it stays below pgClock, like pg2Q, at the
    /// paper's 8 and 16 cores.
    fn prefetching_stays_below_clock(&self) -> Option<Check> {
        let (pref, cond) = (&self.pref, self.cond);
        let ratios = self.paired(pref, "clock");
        if ratios.is_empty() {
            return None;
        }
        let (verdict, reason) = at_paper_core_counts(
            &ratios,
            self.cores,
            |_, r| r < 0.95,
            "tolerance: below 0.95 (where batching is within 0.10 of 1) at every thread count of 8 or more",
        );
        Some(
            Check::new(
                format!("{pref} / clock lookups/s"),
                "direction only: below pgClock, pgPref scales as poorly as pg2Q (the lock is still taken \
                 per access), which falls behind pgClock from 4 cores on and has numbers at 8 and 16",
                format!(
                    "{} (median of paired repetitions) {cond}",
                    each_count(&ratios, |r| format!("{r:.2}"))
                ),
                verdict,
            )
            .because(reason),
        )
    }

    /// The unbatched lock costs throughput: pg2Q falls 30-67% behind pgClock at the paper's 8
    /// and 16 cores.
    fn locked_falls_behind_clock(&self) -> Option<Check> {
        let (locked, cond) = (&self.locked, self.cond);
        let ratios = self.paired(locked, "clock");
        if ratios.is_empty() {
            return None;
        }
        let (verdict, reason) = at_paper_core_counts(
            &ratios,
            self.cores,
            |n, r| {
                let (lo, hi) = locked_over_clock_range(n);
                (lo..=hi).contains(&r)
            },
            "tolerance: the paper's range ± 0.01, 0.42-0.71 from 8 threads, 0.33-0.45 from 16",
        );
        Some(
            Check::new(
                format!("{locked} / clock lookups/s"),
                "0.43-0.70 at 8 cores (pg2Q 30.1-57.2% below pgClock, Altix and Dell), 0.34-0.44 at 16 \
                 (61.1/56.5/66.5% below, DBT-1/DBT-2/TableScan, Altix)",
                format!(
                    "{} (median of paired repetitions) {cond}",
                    each_count(&ratios, |r| format!("{r:.2}"))
                ),
                verdict,
            )
            .because(reason),
        )
    }

    /// The hot/cold combination (Sec. 4.2): hits on hot pages take the lock-free path and are
    /// not queued. Only for the hot/cold policy.
    fn hot_hits_left_out(&self) -> Option<Check> {
        if self.policy.kind != PolicyKind::HotCold {
            return None;
        }
        let (name, cond) = (&self.name, self.cond);
        let dropped = self.over_counts(|n| self.results.at(name, n).and_then(PolicyPoint::dropped_percent));
        if dropped.is_empty() {
            return None;
        }
        let (verdict, reason) =
            at_every_count(&dropped, |d| d >= 50.0, "our target: at least 50% at every thread count");
        Some(
            Check::new(
                format!("{name}: hits on hot pages left out of the queues"),
                "direction only: hot-region hits take the lock-free path and are not queued (Sec. 4.2, \
                 Fig. 7)",
                format!(
                    "{} of the accesses reported to the policy {cond}",
                    each_count(&dropped, |d| format!("{d:.1}%"))
                ),
                verdict,
            )
            .because(reason),
        )
    }

    /// Batching leaves the hit ratio unchanged (Fig. 4, Fig. 10): the wrapped policy against the
    /// plain one and the locked one.
    fn hit_ratio_unchanged(&self) -> Vec<Check> {
        let (plan, results, name, cond) = (self.plan, self.results, &self.name, self.cond);
        let mut checks = Vec::new();
        for other in [&self.plain, &self.locked] {
            let hits: Vec<(usize, f64, f64)> = plan
                .threads
                .iter()
                .filter_map(|&n| {
                    let h = results.at(name, n).and_then(PolicyPoint::hit_percent)?;
                    Some((n, h, results.at(other, n).and_then(PolicyPoint::hit_percent)?))
                })
                .collect();
            if hits.is_empty() {
                continue;
            }
            let diffs: Vec<(usize, f64)> = hits.iter().map(|&(n, h, o)| (n, h - o)).collect();
            let (verdict, reason) =
                at_every_count(&diffs, |d| d.abs() <= 0.1, "tolerance: 0.1 points at every thread count");
            let each: Vec<String> =
                hits.iter().map(|&(n, h, o)| format!("{h:.2}% vs {o:.2}% at {n}")).collect();
            checks.push(
                Check::new(
                    format!("{name} vs {other} hit ratio"),
                    "unchanged by batching (Fig. 4: batch sizes 1-64; Fig. 10: pg2Q and pgBat-Pre overlap)",
                    format!("{} threads {cond}", each.join(", ")),
                    verdict,
                )
                .because(reason),
            );
        }
        checks
    }
}

/// How a miss of this plan reads the database file, for captions: `direct` with `--direct-io`,
/// else through the page cache.
#[must_use]
pub fn io_of(cfg: &Config) -> Io {
    if cfg.direct_io {
        Io::Direct
    } else {
        Io::PageCache
    }
}

/// The `io` column of one measurement: [`io_of`], or `none` if it read no page (a pool that
/// holds the data, warm).
#[must_use]
pub fn io_of_run(cfg: &Config, stats: &Stats) -> Io {
    if stats.pages_read == 0 {
        Io::None
    } else {
        io_of(cfg)
    }
}

/// CSV header of [`write_csv`].
pub const CSV_HEADER: &str =
    "experiment,mode,policy,pool_fraction,pool_bytes,data_bytes,records,zipf,threads,\
repetition,lookups_per_sec,fixes,hits,hit_ratio,lock_acquisitions,lock_failed_tries,lock_waits,\
lock_acquisitions_per_million,waits_per_million,hold_ns_per_access,evictions,eviction_us_per_call,free_frame_waits,cpu_us_per_lookup,\
policy_accesses,dropped_hits,logging,io";

/// One row of `ding-bpwrapper.csv`: one policy, thread count and repetition (columns in
/// `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BpWrapperRow {
    pub experiment: String,
    pub mode: &'static str,
    pub policy: String,
    pub pool_fraction: f64,
    pub pool_bytes: u64,
    pub data_bytes: u64,
    pub records: u64,
    pub zipf: Option<f64>,
    pub threads: usize,
    pub repetition: usize,
    pub lookups_per_sec: f64,
    pub fixes: u64,
    pub hits: u64,
    pub hit_ratio: Option<f64>,
    pub lock_acquisitions: u64,
    pub lock_failed_tries: u64,
    pub lock_waits: u64,
    pub lock_acquisitions_per_million: Option<f64>,
    pub waits_per_million: Option<f64>,
    pub hold_ns_per_access: Option<f64>,
    pub evictions: u64,
    pub eviction_us_per_call: Option<f64>,
    pub free_frame_waits: u64,
    pub cpu_us_per_lookup: Option<f64>,
    pub policy_accesses: u64,
    pub dropped_hits: u64,
    pub logging: bool,
    pub io: &'static str,
}

/// The rows of `ding-bpwrapper.csv`.
#[must_use]
pub fn rows(plan: &Plan, results: &Results) -> Vec<BpWrapperRow> {
    let cfg = &plan.base;
    let pool_bytes = pool_for(plan.fraction, results.data_bytes, cfg.page_size);
    let mut rows = Vec::new();
    for p in &results.points {
        for m in &p.runs {
            let s = &m.stats;
            rows.push(BpWrapperRow {
                experiment: cfg.experiment.clone(),
                mode: plan.mode.name(),
                policy: p.policy.to_string(),
                pool_fraction: plan.fraction,
                pool_bytes: pool_bytes as u64,
                data_bytes: results.data_bytes,
                records: cfg.records,
                zipf: cfg.zipf,
                threads: p.threads,
                repetition: m.repetition,
                lookups_per_sec: m.throughput(),
                fixes: s.fixes,
                hits: s.hits,
                hit_ratio: hit_percent(s).map(|h| h / 100.0),
                lock_acquisitions: s.policy_lock_acquisitions,
                lock_failed_tries: s.policy_lock_failed_tries,
                lock_waits: s.policy_lock_waits,
                lock_acquisitions_per_million: per_million(s.policy_lock_acquisitions, s),
                waits_per_million: waits_per_million(s),
                hold_ns_per_access: hold_ns_per_access(s),
                evictions: s.evictions,
                eviction_us_per_call: (s.eviction_rounds > 0)
                    .then(|| s.eviction_nanos as f64 / s.eviction_rounds as f64 / 1e3),
                free_frame_waits: s.free_frame_waits,
                cpu_us_per_lookup: m.cpu_us_per_op(),
                policy_accesses: s.policy_accesses,
                dropped_hits: s.policy_dropped_hits,
                logging: buffer::LOGGING,
                io: io_of_run(cfg, s).key(),
            });
        }
    }
    rows
}

/// The median of `f` per policy against the thread count.
pub fn chart(
    plan: &Plan,
    results: &Results,
    title: &str,
    y_label: &str,
    f: impl Fn(&Measurement) -> Option<f64>,
) -> Chart {
    let series = plan
        .policies
        .iter()
        .map(|&policy| Series {
            name: policy.to_string(),
            points: results
                .points
                .iter()
                .filter(|p| p.policy == policy)
                .filter_map(|p| {
                    let values: Vec<f64> = p.runs.iter().filter_map(&f).collect();
                    let s = summarize(&values)?;
                    Some(Point { x: p.threads as f64, y: s.median, y_min: s.min, y_max: s.max })
                })
                .collect(),
        })
        .collect();
    Chart {
        title: title.to_string(),
        x_label: "lookup threads".to_string(),
        y_label: y_label.to_string(),
        x_scale: Scale::Log2,
        series,
        note: Some(format!(
            "{} mode, pool {:.0}% of the data, {} lookups, median and min..max of {} repetitions",
            plan.mode,
            plan.fraction * 100.0,
            plan.base.zipf.map_or("uniform".to_string(), |s| format!("Zipf s={s}")),
            plan.base.repeat
        )),
        vline: None,
        marks: None,
    }
}

/// Lookups/s of one measurement, for [`chart`].
pub fn measurement_throughput(m: &Measurement) -> Option<f64> {
    Some(m.throughput())
}

/// Waits per million accesses of one measurement, for [`chart`].
pub fn measurement_waits(m: &Measurement) -> Option<f64> {
    waits_per_million(&m.stats)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{at_every_count, at_paper_core_counts, cut_at_every_count, locked_over_clock_range};
    use super::{repetition_order, tracks_clock};
    use crate::harness::experiment::Verdict;

    fn waits_cut(w: &[(usize, f64, f64)]) -> (Verdict, String) {
        cut_at_every_count(
            w,
            |l, b| if b > 0.0 { l / b } else { f64::INFINITY },
            |r| r >= 100.0,
            "at least 100x",
        )
    }

    fn prefetch_cut(w: &[(usize, f64, f64)]) -> (Verdict, String) {
        cut_at_every_count(w, |l, p| (1.0 - p / l) * 100.0, |c| (20.8..=87.5).contains(&c), "20.8-87.5%")
    }

    /// The cut in lock waits is held at every thread count from 2. The old check looked at the
    /// largest only: 1000x at 16 threads passed with 20x at 2.
    #[test]
    fn the_cut_in_lock_waits_is_held_at_every_contended_thread_count() {
        let (verdict, reason) = waits_cut(&[(1, 0.0, 0.0), (2, 100.0, 5.0), (16, 1000.0, 1.0)]);
        assert_eq!(verdict, Verdict::Partial, "{reason}");
        assert!(reason.contains("1 of 2") && reason.contains("20.00 at 2 thread(s)"), "{reason}");
        // One thread cannot contend: it is left out, not counted as a wait cut.
        assert_eq!(waits_cut(&[(1, 0.0, 0.0), (2, 300.0, 1.0), (16, 900.0, 0.0)]).0, Verdict::Holds);
        assert_eq!(waits_cut(&[(2, 100.0, 5.0), (16, 1000.0, 100.0)]).0, Verdict::Fails);
        // A count where the locked policy never waited has nothing to cut: ~, named.
        let (verdict, reason) = waits_cut(&[(2, 0.0, 0.0), (16, 1000.0, 1.0)]);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("no contention") && reason.contains("at 2 thread(s)"), "{reason}");
        let (verdict, reason) = waits_cut(&[(1, 0.0, 0.0)]);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("no thread count above 1"), "{reason}");
    }

    /// Prefetching alone cuts the waits by 20.8-87.5% at every thread count from 2, not only at
    /// the largest (where the old check looked): 95% at 2 threads is outside.
    #[test]
    fn prefetching_cuts_waits_within_the_papers_range_at_every_thread_count() {
        assert_eq!(prefetch_cut(&[(2, 100.0, 20.0), (4, 100.0, 40.0), (16, 100.0, 60.0)]).0, Verdict::Holds);
        let (verdict, reason) = prefetch_cut(&[(2, 100.0, 5.0), (4, 100.0, 40.0), (16, 100.0, 60.0)]);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("95.00 at 2 thread(s)"), "{reason}");
        // More waits than locked 2Q is a negative cut.
        assert_eq!(prefetch_cut(&[(16, 100.0, 145.0)]).0, Verdict::Fails);
    }

    /// Prefetching's throughput over locked 2Q and the hit ratios are held at every thread
    /// count: the old checks passed 1.0 at 16 threads with 0.5 (or 2 points apart) at 1.
    #[test]
    fn throughput_and_hit_ratio_claims_hold_at_every_thread_count() {
        let band = |r: f64| (0.97..=1.31).contains(&r);
        assert_eq!(at_every_count(&[(1, 1.0), (16, 1.2)], band, "t").0, Verdict::Holds);
        let (verdict, reason) = at_every_count(&[(1, 0.5), (16, 1.0)], band, "t");
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.starts_with("t; ") && reason.contains("0.50 at 1 thread(s)"), "{reason}");
        let same = |d: f64| d.abs() <= 0.1;
        assert_eq!(at_every_count(&[(1, 2.0), (16, 0.05)], same, "t").0, Verdict::Partial);
        assert_eq!(at_every_count(&[(1, -0.3), (16, 0.2)], same, "t").0, Verdict::Fails);
    }

    fn locked_vs_clock(points: &[(usize, f64)], cores: usize) -> (Verdict, String) {
        at_paper_core_counts(
            points,
            cores,
            |n, r| {
                let (lo, hi) = locked_over_clock_range(n);
                (lo..=hi).contains(&r)
            },
            "range",
        )
    }

    /// Locked 2Q against CLOCK has the paper's numbers at 8 and 16 cores. Without a thread
    /// count of 8 or more on as many cores the check is ~ with the reason; the old check
    /// vanished below 8 threads and compared 16 threads on 2 cores with the paper's 16 cores.
    #[test]
    fn locked_2q_over_clock_is_partial_without_the_cores_and_strict_with_them() {
        let (verdict, reason) = locked_vs_clock(&[(1, 1.0), (2, 0.9)], 2);
        assert_eq!(verdict, Verdict::Partial);
        assert!(
            reason.contains("cannot show on 2 core(s)") && reason.contains("no thread count of 8"),
            "{reason}"
        );
        let (verdict, reason) = locked_vs_clock(&[(1, 1.0), (16, 0.40)], 2);
        assert_eq!(verdict, Verdict::Partial, "in the paper's range, but not on 16 cores");
        assert!(reason.contains("16 thread(s) oversubscribe"), "{reason}");
        // With the cores, every count from 8 is held to its own range.
        assert_eq!(locked_vs_clock(&[(1, 1.0), (8, 0.6), (16, 0.40)], 16), (Verdict::Holds, "range".into()));
        let (verdict, reason) = locked_vs_clock(&[(8, 0.9), (16, 0.40)], 16);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("0.90 at 8 thread(s)"), "{reason}");
        assert_eq!(locked_vs_clock(&[(8, 0.9), (16, 0.6)], 16).0, Verdict::Fails);
        // 16 threads on 12 cores is not held; 8 is, so at best ~.
        let (verdict, reason) = locked_vs_clock(&[(8, 0.6), (16, 0.40)], 12);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("not held at 16 thread(s)"), "{reason}");
    }

    /// Batching tracks CLOCK at every thread count, on both sides of 1. The old check looked at
    /// the largest thread count only and wanted at least 0.95: it passed bpw-2q at 0.5x CLOCK at
    /// 1 thread, and 1.3x at 16.
    #[test]
    fn batching_tracks_clock_at_every_thread_count_on_both_sides() {
        assert_eq!(
            tracks_clock(&[(1, 0.97), (2, 1.04), (16, 0.92)]),
            (Verdict::Holds, "tolerance: 1 ± 0.10 at every thread count".into())
        );
        let (verdict, reason) = tracks_clock(&[(1, 0.5), (2, 1.0), (16, 1.0)]);
        assert_eq!(verdict, Verdict::Partial);
        assert!(reason.contains("1 of 3") && reason.contains("0.50 at 1 thread(s)"), "{reason}");
        assert_eq!(tracks_clock(&[(1, 1.3), (16, 1.3)]).0, Verdict::Fails);
        assert_eq!(tracks_clock(&[]).0, Verdict::Fails);
    }

    /// Every repetition measures every policy once; the same seed gives the same orders; over
    /// many repetitions every policy runs first at some point and follows several neighbours (a
    /// rotation gives each policy one predecessor in all but one repetition in `n`).
    #[test]
    fn repetition_orders_are_seeded_permutations_that_vary_first_and_neighbour() {
        let n = 5;
        let mut firsts = HashSet::new();
        let mut before: Vec<HashSet<usize>> = vec![HashSet::new(); n];
        for rep in 0..40 {
            let order = repetition_order(n, 42, rep);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "repetition {rep}: {order:?}");
            assert_eq!(order, repetition_order(n, 42, rep), "deterministic");
            firsts.insert(order[0]);
            for pair in order.windows(2) {
                before[pair[1]].insert(pair[0]);
            }
        }
        assert_eq!(firsts.len(), n, "every policy runs first at some point");
        for (policy, preds) in before.iter().enumerate() {
            assert!(preds.len() >= 3, "policy {policy} follows only {preds:?}");
        }
        assert_ne!(repetition_order(n, 1, 0), repetition_order(n, 2, 0), "the seed matters");
        assert_eq!(repetition_order(1, 7, 3), vec![0]);
        assert!(repetition_order(0, 7, 3).is_empty());
    }
}

/// The policies the BP-Wrapper experiment compares by default.
pub const BPW_POLICIES: &str = "clock,lru,locked-lru,bpw-lru,2q,locked-2q,bpw-batch-2q,bpw-pref-2q,bpw-2q,\
hot-cold,locked-hot-cold,bpw-hot-cold";

#[derive(Args)]
pub struct BpWrapperArgs {
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Policies to compare, comma-separated (replaces --policy)
    #[arg(long, default_value = BPW_POLICIES, value_delimiter = ',')]
    policies: Vec<PolicySpec>,
    /// Thread counts, comma-separated (replaces --threads)
    #[arg(long = "thread-counts", default_value = "1,2,4,8,16", value_delimiter = ',',
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    thread_counts: Vec<u16>,
    /// Pool size as a percentage of the data
    #[arg(long, default_value = "50%", value_parser = parse_fraction)]
    fraction: f64,
    /// Zipf exponent of key popularity (hot keys scattered over the tree); 0 (the default) for
    /// uniform keys, the rndread workload, where every policy has the same hit ratio
    #[arg(long, default_value = "0", value_parser = parse_zipf)]
    zipf: f64,
}

pub fn execute(args: &BpWrapperArgs) -> Result<ExitCode, Box<dyn Error>> {
    let c = &args.common;
    if c.policy != PolicySpec::default() {
        return Err(Usage("this experiment compares --policies; --policy does not apply".into()).into());
    }
    if c.threads != 1 {
        return Err(
            Usage("this experiment runs every --thread-counts; --threads does not apply".into()).into()
        );
    }
    let mode = match c.mode.0.as_slice() {
        [m] if *m != PoolMode::MainMemory => *m,
        [_, _, ..] if c.mode.0.contains(&PoolMode::Traditional) => PoolMode::Traditional,
        _ => return Err(Usage("choose one evicting --mode: traditional or swizzling".into()).into()),
    };
    let mut base = base_config(<Plan as Experiment>::NAME, c, buffer::default_pool_bytes(args.records))
        .map_err(Usage)?;
    base.records = args.records;
    base.working_set = args.records;
    base.zipf = (args.zipf > 0.0).then_some(args.zipf);
    let mut threads: Vec<usize> = args.thread_counts.iter().map(|&t| usize::from(t)).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut policies = args.policies.clone();
    policies.dedup();
    let plan = Plan { base, policies, mode, fraction: args.fraction, threads };
    experiment::execute(&plan, c.out.as_deref())
}

impl Experiment for Plan {
    const NAME: &'static str = "ding-bpwrapper";
    type Row = BpWrapperRow;
    type Results = Results;

    fn caption(&self) -> String {
        String::new()
    }

    fn run(&self, progress: Progress) -> Result<Results, Box<dyn Error>> {
        run(self, progress)
    }

    fn tables(&self, results: &Results, mut out: &mut dyn Write) -> io::Result<()> {
        print_tables(&mut out, self, results)
    }

    fn checks(&self, results: &Results) -> Vec<Check> {
        checks(self, results)
    }

    fn rows(&self, results: &Results) -> Vec<BpWrapperRow> {
        rows(self, results)
    }

    fn charts(&self, results: &Results) -> Vec<(String, Chart)> {
        let throughput = chart(
            self,
            results,
            "Lookups per second by threads (Ding et al. 2015, Figs. 8-9 on the live engine)",
            "lookups per second",
            measurement_throughput,
        );
        let waits = chart(
            self,
            results,
            "Blocking waits on the replacement lock",
            "waits per million page accesses",
            measurement_waits,
        );
        vec![(format!("{}-throughput", Self::NAME), throughput), (format!("{}-waits", Self::NAME), waits)]
    }

    fn status(&self, results: &Results) -> ExitCode {
        if results.errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
