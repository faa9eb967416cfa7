//! Many simulations of one trace, in parallel: every (policy, cache size) pair, OPT at every
//! size, and the stack-distance histogram.

use crate::opt::{opt, NextUse};
use crate::pool::{Counts, SimError, SimPool};
use crate::stack::StackDistances;
use crate::trace::Trace;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use swizzledb_replacement::PolicyKind;

/// What is simulated: a replacement policy, or Belady's OPT.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Subject {
    /// Belady's OPT (see [`opt`]).
    Opt,
    /// A policy of the replacement crate, played by a [`SimPool`].
    Policy(PolicyKind),
}

impl fmt::Display for Subject {
    /// `opt`, or the policy's canonical name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Opt => f.write_str("opt"),
            Subject::Policy(kind) => write!(f, "{kind}"),
        }
    }
}

/// The result of one simulation.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Outcome {
    /// What was simulated.
    pub subject: Subject,
    /// The cache size asked for, in pages.
    pub cache_pages: u64,
    /// Requests and misses.
    pub counts: Counts,
    /// Wall-clock time of the simulation (on a shared machine, a rough cost).
    pub elapsed: Duration,
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Subjects, in output order.
    pub subjects: Vec<Subject>,
    /// Cache sizes in pages, each at least 1.
    pub sizes: Vec<u64>,
    /// Whether to compute the stack-distance histogram.
    pub stack_distances: bool,
    /// Seed of the policies that draw random numbers.
    pub seed: u64,
    /// Worker threads (at least 1).
    pub threads: usize,
}

/// The results of a [`Plan`].
#[derive(Clone, Debug)]
pub struct Analysis {
    /// One outcome per subject and size, subjects in plan order, then sizes in plan order.
    pub outcomes: Vec<Outcome>,
    /// The histogram, if asked for.
    pub stack: Option<StackDistances>,
    /// Wall-clock time of the histogram's pass.
    pub stack_elapsed: Duration,
    /// Wall-clock time of OPT's next-use pass (zero without OPT).
    pub next_use_elapsed: Duration,
}

/// The frames a simulation of `cache_pages` needs: no more than the distinct pages of the trace,
/// since a cache that large never evicts (and at least 1). The counts are the same as with the
/// full size, and memory stays bounded by the trace.
#[must_use]
pub fn effective_frames(trace: &Trace, cache_pages: u64) -> u32 {
    let distinct = u64::from(trace.distinct_pages()).max(1);
    cache_pages.clamp(1, distinct) as u32
}

enum Job {
    Stack,
    Sim(usize),
}

enum Done {
    Stack(StackDistances, Duration),
    Sim(usize, Counts, Duration),
}

/// Runs `plan` over `trace` on `plan.threads` threads, one simulation per job.
///
/// # Errors
/// The first [`SimError`] of any policy (a contract breach); the other jobs are abandoned.
///
/// # Panics
/// If a size is 0 or `threads` is 0.
pub fn analyze(trace: &Trace, plan: &Plan) -> Result<Analysis, SimError> {
    assert!(plan.sizes.iter().all(|&s| s > 0), "cache sizes must be at least 1 page");
    assert!(plan.threads > 0, "at least one thread");
    let pairs: Vec<(Subject, u64)> =
        plan.subjects.iter().flat_map(|&s| plan.sizes.iter().map(move |&c| (s, c))).collect();
    let start = Instant::now();
    let next = plan.subjects.contains(&Subject::Opt).then(|| NextUse::new(trace));
    let next_use_elapsed = start.elapsed();
    // The histogram is the longest job: start it first.
    let jobs: Vec<Job> = plan
        .stack_distances
        .then_some(Job::Stack)
        .into_iter()
        .chain((0..pairs.len()).map(Job::Sim))
        .collect();
    let cursor = AtomicUsize::new(0);
    let results: Mutex<Vec<Result<Done, SimError>>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..plan.threads.min(jobs.len()) {
            scope.spawn(|| loop {
                let i = cursor.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let start = Instant::now();
                let done = match *job {
                    Job::Stack => Ok(Done::Stack(StackDistances::new(trace), start.elapsed())),
                    Job::Sim(p) => {
                        let (subject, size) = pairs[p];
                        let frames = effective_frames(trace, size);
                        match subject {
                            Subject::Opt => {
                                let next = next.as_ref().expect("computed when OPT is planned");
                                Ok(opt(trace, next, frames))
                            }
                            Subject::Policy(kind) => {
                                SimPool::for_kind(kind, frames, trace.page_slots(), plan.seed)
                                    .run(trace.refs())
                            }
                        }
                        .map(|counts| Done::Sim(p, counts, start.elapsed()))
                    }
                };
                if done.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                results.lock().expect("no worker panics while holding the lock").push(done);
            });
        }
    });
    let mut stack = None;
    let mut stack_elapsed = Duration::ZERO;
    let mut counts = vec![(Counts::default(), Duration::ZERO); pairs.len()];
    for done in results.into_inner().expect("workers finished") {
        match done? {
            Done::Stack(s, t) => (stack, stack_elapsed) = (Some(s), t),
            Done::Sim(p, c, t) => counts[p] = (c, t),
        }
    }
    let outcomes = pairs
        .iter()
        .zip(counts)
        .map(|(&(subject, cache_pages), (counts, elapsed))| Outcome { subject, cache_pages, counts, elapsed })
        .collect();
    Ok(Analysis { outcomes, stack, stack_elapsed, next_use_elapsed })
}

/// The subjects of a full comparison: OPT, then every policy of [`PolicyKind::all`].
#[must_use]
pub fn all_subjects() -> Vec<Subject> {
    std::iter::once(Subject::Opt).chain(PolicyKind::all().into_iter().map(Subject::Policy)).collect()
}

/// Every `(policy, size)` whose misses are below OPT's at the same size: OPT must be the floor,
/// so this is empty unless something is broken.
#[must_use]
pub fn below_opt(outcomes: &[Outcome]) -> Vec<Outcome> {
    let floor = |size| {
        outcomes.iter().find(|o| o.subject == Subject::Opt && o.cache_pages == size).map(|o| o.counts.misses)
    };
    outcomes.iter().filter(|o| floor(o.cache_pages).is_some_and(|f| o.counts.misses < f)).copied().collect()
}
