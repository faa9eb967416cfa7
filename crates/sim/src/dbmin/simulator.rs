//! The hybrid multiuser simulator of Chou & DeWitt (1986, Sec. 4.1): a closed system of NCQ
//! queries, each replaying the trace of its query type, on one round-robin CPU, one FCFS disk
//! with a low-priority queue of asynchronous writes, and a buffer pool run by one of the
//! [`managers`]. A discrete-event simulation: an event queue keyed by simulated
//! time (ns) and an insertion sequence number, so that a run is deterministic under its seed.
//! Rules DS10–DS17 of the README section "DBMIN simulator".
//!
//! ```no_run
//! use swizzledb_sim::dbmin::simulator::{run, Config, Mix, Sharing};
//! use swizzledb_sim::dbmin::managers::Algorithm;
//! # let traces: Vec<swizzledb_sim::dbmin::QueryTrace> = Vec::new();
//! let config = Config::new(Algorithm::Dbmin, Mix::M1, Sharing::None, 8);
//! let result = run(&config, &traces).unwrap();
//! println!("{:.3} ± {:.3} queries/s", result.throughput, result.ci_halfwidth);
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use rustc_hash::FxHashSet;
use std::str::FromStr;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::managers::{
    self, Access, Adjust, Algorithm, BufferManager, FeedbackController, FrameId, GlobalPage, ManagerStats,
    QueryId,
};
use super::queries::{is_temporary, HASH_TABLE};
use super::{Event, PageRef, QueryTrace, QueryType};

/// Errors of a simulation run: all are bad input, reported before anything runs (except
/// `Stalled`, which would be a bug).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DbminError {
    /// The algorithm name is not one of the six.
    #[error("unknown algorithm {0:?}: use dbmin, hot, ws, rand, fifo or clock")]
    UnknownAlgorithm(String),
    /// The mix name is not M1, M2 or M3.
    #[error("unknown query mix {0:?}: use m1, m2 or m3 (Table 4)")]
    UnknownMix(String),
    /// The sharing level is not none, half or full.
    #[error("unknown sharing level {0:?}: use none, half or full")]
    UnknownSharing(String),
    /// NCQ outside 1..=32.
    #[error("{0} concurrent queries: NCQ must be between 1 and 32 (one database copy each at most)")]
    NcqOutOfRange(u32),
    /// The traces do not hold exactly one trace of each query type.
    #[error("the traces must hold exactly one trace per query type; {0:?} is missing or repeated")]
    MissingTrace(QueryType),
    /// A trace breaks the rules of `QueryTrace`.
    #[error("trace of query {query:?} is malformed at event {event}: {reason}")]
    BadTrace {
        /// The query.
        query: QueryType,
        /// The event's index.
        event: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The buffer pool cannot hold what one query needs on its own.
    #[error(
        "{buffers} buffers are too few: query {query:?} needs {needed} ({what}); use at least {min} buffers"
    )]
    BufferTooSmall {
        /// The query.
        query: QueryType,
        /// Its need.
        needed: u32,
        /// What the need is.
        what: &'static str,
        /// The configured buffers.
        buffers: u32,
        /// The smallest pool that works.
        min: u32,
    },
    /// Feedback load control was asked for an algorithm with its own load control.
    #[error("{0} has its own load control; the feedback controller applies only to rand, fifo and clock")]
    FeedbackNotApplicable(Algorithm),
    /// A run parameter is out of range.
    #[error("bad run parameter: {0}")]
    BadParameter(&'static str),
    /// No event is left but the run is not over (every query waits): a simulator bug.
    #[error(
        "the simulation stalled at {time_s:.3} s with no pending event (a simulator bug; please report)"
    )]
    Stalled {
        /// Simulated time, s.
        time_s: f64,
    },
}

/// The query mixes of Table 4.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mix {
    /// Uniform over the six types; 100 buffers.
    M1,
    /// 25% each of I and II, 12.5% each of III–VI; 80 buffers.
    M2,
    /// 37.5% each of I and II, 6.25% each of III–VI; 60 buffers.
    M3,
}

impl Mix {
    /// All three.
    pub const ALL: [Mix; 3] = [Mix::M1, Mix::M2, Mix::M3];

    /// Probabilities of types I..VI (Table 4).
    pub fn probabilities(self) -> [f64; 6] {
        match self {
            Mix::M1 => [0.1667, 0.1667, 0.1667, 0.1667, 0.1666, 0.1666],
            Mix::M2 => [0.25, 0.25, 0.125, 0.125, 0.125, 0.125],
            Mix::M3 => [0.375, 0.375, 0.0625, 0.0625, 0.0625, 0.0625],
        }
    }

    /// The buffer pool size of the paper's figures for this mix (DS16).
    pub fn buffers(self) -> u32 {
        match self {
            Mix::M1 => 100,
            Mix::M2 => 80,
            Mix::M3 => 60,
        }
    }

    /// The name, `M1`..`M3`.
    pub fn name(self) -> &'static str {
        match self {
            Mix::M1 => "M1",
            Mix::M2 => "M2",
            Mix::M3 => "M3",
        }
    }
}

impl FromStr for Mix {
    type Err = DbminError;
    fn from_str(s: &str) -> Result<Mix, DbminError> {
        match s.to_ascii_lowercase().as_str() {
            "m1" => Ok(Mix::M1),
            "m2" => Ok(Mix::M2),
            "m3" => Ok(Mix::M3),
            _ => Err(DbminError::UnknownMix(s.to_string())),
        }
    }
}

impl FromStr for Algorithm {
    type Err = DbminError;
    fn from_str(s: &str) -> Result<Algorithm, DbminError> {
        let lower = s.to_ascii_lowercase();
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == lower)
            .ok_or_else(|| DbminError::UnknownAlgorithm(s.to_string()))
    }
}

/// How the 32 database copies are shared among the query slots (DS14).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Slot k uses copy k.
    None,
    /// Slots 2j and 2j + 1 share copy j.
    Half,
    /// Every slot uses copy 0.
    Full,
}

impl Sharing {
    /// All three.
    pub const ALL: [Sharing; 3] = [Sharing::None, Sharing::Half, Sharing::Full];

    /// The copy used by slot `q`.
    pub fn copy_of(self, q: QueryId) -> u16 {
        match self {
            Sharing::None => q as u16,
            Sharing::Half => (q / 2) as u16,
            Sharing::Full => 0,
        }
    }

    /// The name: `none`, `half` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::None => "none",
            Sharing::Half => "half",
            Sharing::Full => "full",
        }
    }
}

impl FromStr for Sharing {
    type Err = DbminError;
    fn from_str(s: &str) -> Result<Sharing, DbminError> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Sharing::None),
            "half" => Ok(Sharing::Half),
            "full" => Ok(Sharing::Full),
            _ => Err(DbminError::UnknownSharing(s.to_string())),
        }
    }
}

/// The stochastic disk (DS12): a Fujitsu Eagle–like drive with the head at a uniformly random
/// cylinder for each request. Service time = seek (0 for the same cylinder, else
/// `SEEK_MIN + b·√distance`) + rotational latency (uniform over one revolution) + the transfer
/// of one 4 KiB page. `b` is computed so that the mean is exactly [`DiskModel::MEAN_MS`].
#[derive(Clone, Debug)]
pub struct DiskModel {
    head: u32,
    seek_b_ms: f64,
    rng: SmallRng,
}

impl DiskModel {
    /// Cylinders of the drive.
    pub const CYLINDERS: u32 = 842;
    /// Revolution time, ms (3,961 rpm).
    pub const REVOLUTION_MS: f64 = 60_000.0 / 3_961.0;
    /// Transfer time of a 4 KiB page at 1.859 MB/s, ms.
    pub const TRANSFER_MS: f64 = 4_096.0 / 1_859.0;
    /// Settling part of any non-zero seek, ms.
    pub const SEEK_MIN_MS: f64 = 4.0;
    /// The paper's mean access time per 4 KiB page, ms.
    pub const MEAN_MS: f64 = 27.6;

    /// A disk with its own random stream.
    pub fn new(seed: u64) -> DiskModel {
        let c = Self::CYLINDERS as f64;
        // Distance between two independent uniform cylinders: P(d) = 2 (C - d) / C² for d ≥ 1.
        let mut mean_sqrt = 0.0;
        let mut p_moving = 0.0;
        for d in 1..Self::CYLINDERS {
            let p = 2.0 * (c - d as f64) / (c * c);
            mean_sqrt += p * (d as f64).sqrt();
            p_moving += p;
        }
        let seek_mean = Self::MEAN_MS - Self::REVOLUTION_MS / 2.0 - Self::TRANSFER_MS;
        let seek_b_ms = (seek_mean - Self::SEEK_MIN_MS * p_moving) / mean_sqrt;
        let mut rng = SmallRng::seed_from_u64(seed);
        let head = rng.gen_range(0..Self::CYLINDERS);
        DiskModel { head, seek_b_ms, rng }
    }

    /// The service time of the next request, ns.
    pub fn service_ns(&mut self) -> u64 {
        let target = self.rng.gen_range(0..Self::CYLINDERS);
        let d = self.head.abs_diff(target);
        self.head = target;
        let seek = if d == 0 { 0.0 } else { Self::SEEK_MIN_MS + self.seek_b_ms * (d as f64).sqrt() };
        let latency = self.rng.gen::<f64>() * Self::REVOLUTION_MS;
        ((seek + latency + Self::TRANSFER_MS) * 1e6).round() as u64
    }
}

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Batch means (DS15): the mean of the batch values and the half-width of its 95% confidence
/// interval, `t(0.975, n - 1) · s / √n` with `s` the sample standard deviation of the batches.
/// Fewer than two batches give a half-width of infinity.
pub fn batch_means(batches: &[f64]) -> (f64, f64) {
    let n = batches.len();
    if n == 0 {
        return (f64::NAN, f64::INFINITY);
    }
    let mean = batches.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::INFINITY);
    }
    let var = batches.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let t = T975.get(n - 2).copied().unwrap_or(1.960);
    (mean, t * (var / n as f64).sqrt())
}

/// One simulation run's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The buffer manager.
    pub algorithm: Algorithm,
    /// Put the feedback load controller in front of a global algorithm (RAND, FIFO, CLOCK).
    pub load_control: bool,
    /// The controller's target disk utilization, in (0, 1].
    pub target_utilization: f64,
    /// The query mix.
    pub mix: Mix,
    /// How database copies are shared.
    pub sharing: Sharing,
    /// Concurrent queries, 1..=32.
    pub ncq: u32,
    /// Buffer frames.
    pub buffers: u32,
    /// Seed of every random choice (mix draws, disk, RAND).
    pub seed: u64,
    /// Completions discarded before measuring.
    pub warmup_queries: u64,
    /// Number of batches (20 in the paper).
    pub batches: u32,
    /// Completions per batch.
    pub batch_queries: u64,
    /// The CPU's round-robin quantum, µs.
    pub quantum_us: u64,
}

impl Config {
    /// The default quantum: 20 ms of CPU (DS11).
    pub const DEFAULT_QUANTUM_US: u64 = 20_000;

    /// A configuration with the paper's settings: the mix's buffer count, 20 batches of 50
    /// queries after 50 warm-up queries, target utilization 0.87, seed 1.
    pub fn new(algorithm: Algorithm, mix: Mix, sharing: Sharing, ncq: u32) -> Config {
        Config {
            algorithm,
            load_control: false,
            target_utilization: 0.87,
            mix,
            sharing,
            ncq,
            buffers: mix.buffers(),
            seed: 1,
            warmup_queries: 50,
            batches: 20,
            batch_queries: 50,
            quantum_us: Self::DEFAULT_QUANTUM_US,
        }
    }
}

/// What a run measured (after the warm-up).
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// Completed queries per second of simulated time over all batches.
    pub throughput: f64,
    /// Half-width of the 95% batch-means confidence interval of the throughput.
    pub ci_halfwidth: f64,
    /// Each batch's throughput.
    pub batch_throughputs: Vec<f64>,
    /// Completions per batch: the configuration's `batch_queries`, doubled by each lengthening
    /// of [`run_to_precision`] (DS15).
    pub batch_queries: u64,
    /// Fraction of the measured time the disk was busy.
    pub disk_utilization: f64,
    /// Completions per query type I..VI.
    pub completions: [u64; 6],
    /// Measured simulated time, s.
    pub measured_s: f64,
    /// Page requests and hits (including reads in progress) measured.
    pub requests: u64,
    /// Hits among `requests`.
    pub hits: u64,
    /// Disk reads, synchronous write-backs and asynchronous writes measured.
    pub reads: u64,
    /// Synchronous writes of dirty victims.
    pub sync_writes: u64,
    /// Asynchronous writes served.
    pub async_writes: u64,
    /// The local manager's counters over the measured phase (DS18); `resident` and `active` are
    /// left at 0, their time averages are `mean_resident` and `mean_active`.
    pub manager: ManagerStats,
    /// Frames held by local sets, averaged over the measured time (DS18).
    pub mean_resident: f64,
    /// Active queries, averaged over the measured time (DS18).
    pub mean_active: f64,
}

/// Checks the configuration and the traces (DS17).
pub fn validate(config: &Config, traces: &[QueryTrace]) -> Result<(), DbminError> {
    if !(1..=32).contains(&config.ncq) {
        return Err(DbminError::NcqOutOfRange(config.ncq));
    }
    if config.load_control && !config.algorithm.is_global() {
        return Err(DbminError::FeedbackNotApplicable(config.algorithm));
    }
    if !(config.target_utilization > 0.0 && config.target_utilization <= 1.0) {
        return Err(DbminError::BadParameter("the target utilization must lie in (0, 1]"));
    }
    if config.batches < 2 || config.batch_queries == 0 {
        return Err(DbminError::BadParameter("at least 2 batches of at least 1 query are needed"));
    }
    if config.quantum_us == 0 {
        return Err(DbminError::BadParameter("the CPU quantum must be at least 1 µs"));
    }
    for t in QueryType::ALL {
        if traces.iter().filter(|x| x.query == t).count() != 1 {
            return Err(DbminError::MissingTrace(t));
        }
    }
    let n = config.buffers;
    for tr in traces {
        let (largest, peak) = check_trace(tr)?;
        let too_small = |needed: u32, what, min: u32| DbminError::BufferTooSmall {
            query: tr.query,
            needed,
            what,
            buffers: n,
            min,
        };
        if largest > n {
            return Err(too_small(largest, "its largest locality set", largest));
        }
        match config.algorithm {
            Algorithm::Dbmin if peak >= n => {
                return Err(too_small(
                    peak,
                    "the sum of its open locality sets, which DBMIN keeps below N",
                    peak.saturating_add(1),
                ))
            }
            Algorithm::Hot if tr.hot_set > n => return Err(too_small(tr.hot_set, "its hot set", tr.hot_set)),
            _ => {}
        }
    }
    Ok(())
}

/// Checks one trace; returns its largest locality set and the peak sum of open ones (saturating
/// at `u32::MAX`, which no pool reaches).
fn check_trace(tr: &QueryTrace) -> Result<(u32, u32), DbminError> {
    let bad = |event, reason| DbminError::BadTrace { query: tr.query, event, reason };
    let mut open: HashMap<u16, u32> = HashMap::new();
    let (mut largest, mut peak, mut last) = (0u32, 0u32, 0u64);
    for (i, e) in tr.events.iter().enumerate() {
        match e {
            Event::Open { file, ls_size, .. } => {
                if *ls_size == 0 {
                    return Err(bad(i, "a locality set of size 0"));
                }
                if open.insert(file.0, *ls_size).is_some() {
                    return Err(bad(i, "the instance is already open"));
                }
                largest = largest.max(*ls_size);
                peak = peak.max(open.values().fold(0u32, |sum, &l| sum.saturating_add(l)));
            }
            Event::Ref { file, cpu_us, .. } | Event::Close { file, cpu_us } => {
                if !open.contains_key(&file.0) {
                    return Err(bad(i, "the instance is not open"));
                }
                if *cpu_us < last {
                    return Err(bad(i, "the CPU time decreases"));
                }
                last = *cpu_us;
                if matches!(e, Event::Close { .. }) {
                    open.remove(&file.0);
                }
            }
        }
    }
    if !open.is_empty() {
        return Err(bad(tr.events.len(), "an instance is never closed"));
    }
    if tr.cpu_us < last {
        return Err(bad(tr.events.len(), "the total CPU time is below the last event's"));
    }
    Ok((largest, peak))
}

/// Runs one simulation (checks the input first).
pub fn run(config: &Config, traces: &[QueryTrace]) -> Result<RunResult, DbminError> {
    let mut sim = Simulator::new(config, traces)?;
    while !sim.finished() {
        sim.step()?;
    }
    Ok(sim.result())
}

/// When [`run_to_precision`] lengthens a run's batches (DS15).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Precision {
    /// The largest acceptable half-width, relative to the throughput (0.05: within 5%).
    pub relative_halfwidth: f64,
    /// At most this many doublings of the batch length.
    pub max_doublings: u32,
}

impl Precision {
    /// The paper's 5% (Sec. 4.1), at most 2 doublings (4 times the batch length), which keeps
    /// the full grid of `swizzledb sim dbmin` within about 4 minutes on 2 cores.
    pub const PAPER: Precision = Precision { relative_halfwidth: 0.05, max_doublings: 2 };
}

/// Runs one simulation and, while the confidence half-width exceeds `precision` of the
/// throughput, doubles the batch length and goes on (DS15; the paper's "batches were lengthened
/// until all intervals were within 5%"), at most `precision.max_doublings` times. The result's
/// `batch_queries` is the final batch length.
pub fn run_to_precision(
    config: &Config,
    traces: &[QueryTrace],
    precision: Precision,
) -> Result<RunResult, DbminError> {
    if precision.relative_halfwidth.is_nan() || precision.relative_halfwidth <= 0.0 {
        return Err(DbminError::BadParameter("the relative half-width must be above 0"));
    }
    let mut sim = Simulator::new(config, traces)?;
    let mut doublings = 0;
    loop {
        while !sim.finished() {
            sim.step()?;
        }
        let r = sim.result();
        if r.ci_halfwidth <= precision.relative_halfwidth * r.throughput
            || doublings >= precision.max_doublings
        {
            return Ok(r);
        }
        sim.lengthen_batches();
        doublings += 1;
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The running query reaches its CPU target.
    CpuStop,
    /// The disk's current request completes.
    DiskDone,
    /// The feedback controller samples the disk.
    Sample,
}

/// Where a query is (DS10).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// In the CPU's ready queue.
    Ready,
    /// On the CPU.
    Running,
    /// Waiting for the read into this frame.
    Io(FrameId),
    /// Waiting for any I/O to complete to retry for a frame.
    FrameWait,
    /// Not admitted or suspended by the load control.
    Waiting,
}

#[derive(Clone, Debug)]
struct Slot {
    trace: usize,
    copy: u16,
    pos: usize,
    cpu_us: u64,
    status: Status,
    activated: u64,
    hold: bool,
    /// The serial number of the query run in the slot (from 1): its temporary files' identity.
    run: u32,
    /// Pages of temporary files this run has created (DS19).
    created: FxHashSet<PageRef>,
}

#[derive(Copy, Clone, Debug)]
enum DiskReq {
    Read(FrameId),
    /// A write of a page: synchronous (a dirty victim) or not; a synchronous write-back for a
    /// page being created (DS19) unpins the new page's frame when it completes.
    Write {
        page: GlobalPage,
        sync: bool,
        unpin: Option<FrameId>,
    },
}

#[derive(Clone, Copy, Debug)]
struct Running {
    q: QueryId,
    quantum_left_us: u64,
    /// CPU µs the current burst adds, and whether it ends the quantum.
    burst_us: u64,
    quantum_end: bool,
}

/// The simulator's state, stepped event by event ([`Simulator::step`]); [`run`] drives it to
/// the end.
pub struct Simulator<'t> {
    config: Config,
    traces: &'t [QueryTrace],
    by_type: [usize; 6],
    mgr: Box<dyn BufferManager>,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    slots: Vec<Slot>,
    ready: VecDeque<QueryId>,
    running: Option<Running>,
    disk: DiskModel,
    disk_current: Option<(DiskReq, u64)>,
    current_service: u64,
    fcfs: VecDeque<DiskReq>,
    async_q: VecDeque<GlobalPage>,
    busy_done_ns: u64,
    feedback: Option<FeedbackController>,
    fb_wait: VecDeque<QueryId>,
    fb_last: (u64, u64),
    activations: u64,
    runs: u32,
    mix_rng: SmallRng,
    // Measurement.
    completed: u64,
    measure_start: Option<(u64, u64)>,
    /// The end of each measured stretch of `config.batch_queries` completions; a batch is
    /// `merge` consecutive stretches (DS15).
    batch_marks: Vec<u64>,
    merge: u64,
    completions: [u64; 6],
    counters: [u64; 5],
    /// The manager's counters when measuring started, and ∫ resident dt, ∫ active dt (ns).
    stats0: ManagerStats,
    resident_ns: f64,
    active_ns: f64,
}

fn type_index(t: QueryType) -> usize {
    QueryType::ALL.iter().position(|&x| x == t).unwrap_or(0)
}

impl<'t> Simulator<'t> {
    /// A simulator at time 0 with NCQ queries drawn from the mix and started in slot order.
    pub fn new(config: &Config, traces: &'t [QueryTrace]) -> Result<Simulator<'t>, DbminError> {
        validate(config, traces)?;
        let mut by_type = [0usize; 6];
        for (i, t) in traces.iter().enumerate() {
            by_type[type_index(t.query)] = i;
        }
        let feedback = (config.load_control && config.algorithm.is_global())
            .then(|| FeedbackController::new(config.target_utilization));
        let mut sim = Simulator {
            config: config.clone(),
            traces,
            by_type,
            mgr: managers::build(config.algorithm, config.buffers, config.seed.wrapping_add(2)),
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            slots: Vec::new(),
            ready: VecDeque::new(),
            running: None,
            disk: DiskModel::new(config.seed ^ 0x9e37_79b9_7f4a_7c15),
            disk_current: None,
            current_service: 0,
            fcfs: VecDeque::new(),
            async_q: VecDeque::new(),
            busy_done_ns: 0,
            feedback,
            fb_wait: VecDeque::new(),
            fb_last: (0, 0),
            activations: 0,
            runs: 0,
            mix_rng: SmallRng::seed_from_u64(config.seed),
            completed: 0,
            measure_start: None,
            batch_marks: Vec::new(),
            merge: 1,
            completions: [0; 6],
            counters: [0; 5],
            stats0: ManagerStats::default(),
            resident_ns: 0.0,
            active_ns: 0.0,
        };
        if config.warmup_queries == 0 {
            sim.measure_start = Some((0, 0));
        }
        for q in 0..config.ncq as usize {
            let trace = sim.draw();
            sim.slots.push(Slot {
                trace,
                copy: config.sharing.copy_of(q),
                pos: 0,
                cpu_us: 0,
                status: Status::Waiting,
                activated: 0,
                hold: false,
                run: 0,
                created: FxHashSet::default(),
            });
            sim.start_query(q);
        }
        if let Some(fb) = sim.feedback {
            sim.schedule(fb.interval_us * 1_000, Ev::Sample);
        }
        sim.dispatch();
        Ok(sim)
    }

    fn draw(&mut self) -> usize {
        let p = self.config.mix.probabilities();
        let x: f64 = self.mix_rng.gen::<f64>() * p.iter().sum::<f64>();
        let mut acc = 0.0;
        for (i, pi) in p.iter().enumerate() {
            acc += pi;
            if x < acc {
                return self.by_type[i];
            }
        }
        self.by_type[5]
    }

    fn schedule(&mut self, delay_ns: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((self.now + delay_ns, self.seq, ev)));
    }

    /// Whether every batch has been measured.
    pub fn finished(&self) -> bool {
        self.batch_marks.len() as u64 >= self.config.batches as u64 * self.merge
    }

    /// Doubles the batch length (DS15): the run goes on until it has as many batches of twice
    /// the completions, the batches measured so far merged in pairs. The warm-up is not
    /// repeated.
    pub fn lengthen_batches(&mut self) {
        self.merge *= 2;
    }

    /// Completions per batch now: `batch_queries` times 2 per [`Simulator::lengthen_batches`].
    pub fn batch_queries(&self) -> u64 {
        self.config.batch_queries * self.merge
    }

    /// Simulated time, ns.
    pub fn now_ns(&self) -> u64 {
        self.now
    }

    /// Queries completed so far (warm-up included).
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// Processes the next event.
    pub fn step(&mut self) -> Result<(), DbminError> {
        let Some(Reverse((t, _, ev))) = self.events.pop() else {
            return Err(DbminError::Stalled { time_s: self.now as f64 / 1e9 });
        };
        if self.measure_start.is_some() {
            let st = self.mgr.stats();
            let dt = t.saturating_sub(self.now) as f64;
            self.resident_ns += st.resident as f64 * dt;
            self.active_ns += st.active as f64 * dt;
        }
        self.now = t;
        match ev {
            Ev::CpuStop => self.cpu_stop(),
            Ev::DiskDone => self.disk_done(),
            Ev::Sample => self.sample(),
        }
        self.kick_disk();
        self.dispatch();
        Ok(())
    }

    /// A new query in slot `q` asks to be admitted (DS10, DS13).
    fn start_query(&mut self, q: QueryId) {
        let trace = &self.traces[self.slots[q].trace];
        let admitted = self.mgr.query_start(q, trace);
        self.runs += 1;
        let s = &mut self.slots[q];
        s.run = self.runs;
        s.created.clear();
        s.pos = 0;
        s.cpu_us = 0;
        s.hold = false;
        s.status = Status::Waiting;
        if !admitted {
            return;
        }
        if self.feedback.is_some() && !self.fb_wait.is_empty() {
            // DS13: the newcomer queues behind the waiting ones, and the first of them takes the
            // place of the query that completed.
            self.fb_wait.push_back(q);
            if let Some(w) = self.fb_wait.pop_front() {
                self.activate(w);
            }
            return;
        }
        self.activate(q);
    }

    fn activate(&mut self, q: QueryId) {
        self.activations += 1;
        let s = &mut self.slots[q];
        s.activated = self.activations;
        s.hold = false;
        if s.status == Status::Waiting {
            s.status = Status::Ready;
            self.ready.push_back(q);
        }
    }

    fn activate_all(&mut self, qs: Vec<QueryId>) {
        for q in qs {
            self.activate(q);
        }
    }

    /// The query can run again: ready, or parked if the feedback controller holds it.
    fn wake(&mut self, q: QueryId) {
        let s = &mut self.slots[q];
        if s.hold {
            s.status = Status::Waiting;
        } else {
            s.status = Status::Ready;
            self.ready.push_back(q);
        }
    }

    fn dispatch(&mut self) {
        while self.running.is_none() {
            let Some(q) = self.ready.pop_front() else { return };
            self.slots[q].status = Status::Running;
            self.running =
                Some(Running { q, quantum_left_us: self.config.quantum_us, burst_us: 0, quantum_end: false });
            self.advance();
        }
    }

    /// Runs the current query's events until it needs CPU time or blocks.
    fn advance(&mut self) {
        while let Some(r) = self.running {
            let q = r.q;
            if self.slots[q].hold {
                self.slots[q].status = Status::Waiting;
                self.running = None;
                return;
            }
            let s = &self.slots[q];
            let tr = &self.traces[s.trace];
            let target = match tr.events.get(s.pos) {
                Some(Event::Open { .. }) => s.cpu_us,
                Some(Event::Ref { cpu_us, .. } | Event::Close { cpu_us, .. }) => *cpu_us,
                None => tr.cpu_us,
            };
            let need = target.saturating_sub(s.cpu_us);
            if need > 0 {
                let (burst, qend) =
                    if need <= r.quantum_left_us { (need, false) } else { (r.quantum_left_us, true) };
                self.running = Some(Running { burst_us: burst, quantum_end: qend, ..r });
                self.schedule(burst * 1_000, Ev::CpuStop);
                return;
            }
            if !self.execute(q) {
                self.running = None;
                return;
            }
        }
    }

    /// Executes the query's next event at its CPU time; `false` if it gave up the CPU.
    fn execute(&mut self, q: QueryId) -> bool {
        let s = &self.slots[q];
        let tr = &self.traces[s.trace];
        let Some(ev) = tr.events.get(s.pos).cloned() else {
            self.complete(q);
            return false;
        };
        let measuring = self.measure_start.is_some();
        match ev {
            Event::Open { file, ls_size, policy, .. } => {
                self.slots[q].pos += 1;
                if !self.mgr.open(q, file, ls_size, policy) {
                    self.slots[q].status = Status::Waiting;
                    return false;
                }
                true
            }
            Event::Close { file, .. } => {
                self.slots[q].pos += 1;
                let acts = self.mgr.close(q, file);
                self.activate_all(acts);
                if self.closes_hash_table(q, file) {
                    self.drop_hash_table(q);
                }
                true
            }
            Event::Ref { file, page, write, cpu_us } => {
                let temporary = is_temporary(page.relation);
                let gp = GlobalPage { copy: s.copy, run: if temporary { s.run } else { 0 }, page };
                // DS19: the first reference to a page of a temporary file creates it: no read.
                let creates = temporary && !s.created.contains(&page);
                let access = self.mgr.request(q, file, gp, write, cpu_us);
                let count = |c: &mut [u64; 5], i: usize| {
                    if measuring {
                        c[i] += 1;
                    }
                };
                match access {
                    Access::Hit => {
                        if temporary {
                            self.slots[q].created.insert(page);
                        }
                        count(&mut self.counters, 0);
                        count(&mut self.counters, 1);
                        self.slots[q].pos += 1;
                        true
                    }
                    Access::InTransit(f) => {
                        count(&mut self.counters, 0);
                        count(&mut self.counters, 1);
                        self.slots[q].pos += 1;
                        self.slots[q].status = Status::Io(f);
                        false
                    }
                    Access::Miss { frame, write_back } if creates => {
                        count(&mut self.counters, 0);
                        let s = &mut self.slots[q];
                        s.pos += 1;
                        s.created.insert(page);
                        match write_back {
                            // The frame's dirty page must reach the disk before the frame is
                            // overwritten: the query waits for that write, not for a read.
                            Some(old) => {
                                let w = DiskReq::Write { page: old, sync: true, unpin: Some(frame) };
                                self.fcfs.push_back(w);
                                s.status = Status::Io(frame);
                                false
                            }
                            None => {
                                self.mgr.read_done(frame);
                                true
                            }
                        }
                    }
                    Access::Miss { frame, write_back } => {
                        count(&mut self.counters, 0);
                        self.slots[q].pos += 1;
                        if let Some(old) = write_back {
                            self.fcfs.push_back(DiskReq::Write { page: old, sync: true, unpin: None });
                        }
                        self.fcfs.push_back(DiskReq::Read(frame));
                        self.slots[q].status = Status::Io(frame);
                        false
                    }
                    Access::NoFrame => {
                        self.slots[q].status = Status::FrameWait;
                        false
                    }
                    Access::Suspend => {
                        self.slots[q].status = Status::Waiting;
                        false
                    }
                }
            }
        }
    }

    /// The query in slot `q` completed: count it, start a new one in its slot (DS10).
    fn complete(&mut self, q: QueryId) {
        let acts = self.mgr.query_end(q);
        let ty = type_index(self.traces[self.slots[q].trace].query);
        self.completed += 1;
        if self.measure_start.is_some() {
            self.completions[ty] += 1;
        }
        if self.measure_start.is_none() && self.completed >= self.config.warmup_queries {
            self.measure_start = Some((self.now, self.busy_ns(self.now)));
            self.stats0 = self.mgr.stats();
        } else if let Some((_, _)) = self.measure_start {
            let measured = self.completions.iter().sum::<u64>();
            if measured % self.config.batch_queries == 0 {
                self.batch_marks.push(self.now);
            }
        }
        self.slots[q].trace = self.draw();
        self.slots[q].status = Status::Waiting;
        self.activate_all(acts);
        self.start_query(q);
    }

    fn cpu_stop(&mut self) {
        let Some(r) = self.running else { return };
        let q = r.q;
        self.slots[q].cpu_us += r.burst_us;
        let left = r.quantum_left_us - r.burst_us;
        if r.quantum_end {
            let acts = self.mgr.quantum_end(q, self.slots[q].cpu_us);
            self.activate_all(acts);
            self.running = None;
            self.wake(q);
            return;
        }
        self.running = Some(Running { quantum_left_us: left, burst_us: 0, quantum_end: false, ..r });
        self.advance();
    }

    fn busy_ns(&self, now: u64) -> u64 {
        let partial = match self.disk_current {
            Some((_, end)) => {
                // The current request started `service` ns before its end.
                now.saturating_sub(end.saturating_sub(self.current_service))
            }
            None => 0,
        };
        self.busy_done_ns + partial
    }

    fn kick_disk(&mut self) {
        self.async_q.extend(self.mgr.drain_async_writes());
        if self.disk_current.is_some() {
            return;
        }
        let req = match self.fcfs.pop_front() {
            Some(r) => r,
            None => loop {
                // DS12: asynchronous writes only when the disk would idle; stale ones are dropped.
                match self.async_q.pop_front() {
                    Some(p) if self.mgr.needs_write(p) => {
                        break DiskReq::Write { page: p, sync: false, unpin: None }
                    }
                    Some(_) => continue,
                    None => return,
                }
            },
        };
        let service = self.disk.service_ns();
        self.current_service = service;
        self.disk_current = Some((req, self.now + service));
        self.schedule(service, Ev::DiskDone);
    }

    fn disk_done(&mut self) {
        let Some((req, _)) = self.disk_current.take() else { return };
        self.busy_done_ns += self.current_service;
        let measuring = self.measure_start.is_some();
        match req {
            DiskReq::Read(f) => {
                if measuring {
                    self.counters[2] += 1;
                }
                self.unpin(f);
            }
            DiskReq::Write { page, sync, unpin } => {
                if measuring {
                    self.counters[if sync { 3 } else { 4 }] += 1;
                }
                self.mgr.write_done(page);
                if let Some(f) = unpin {
                    self.unpin(f);
                }
            }
        }
        for q in 0..self.slots.len() {
            if self.slots[q].status == Status::FrameWait {
                self.wake(q);
            }
        }
    }

    /// The frame's page is in memory: the frame is unpinned and its waiters go on.
    fn unpin(&mut self, f: FrameId) {
        self.mgr.read_done(f);
        for q in 0..self.slots.len() {
            if self.slots[q].status == Status::Io(f) {
                self.wake(q);
            }
        }
    }

    /// Whether `file` of the query in slot `q` is an instance of the hash table (DS19).
    fn closes_hash_table(&self, q: QueryId, file: super::FileInstance) -> bool {
        let tr = &self.traces[self.slots[q].trace];
        tr.events[..self.slots[q].pos].iter().rev().any(
            |e| matches!(e, Event::Open { file: f, relation, .. } if *f == file && *relation == HASH_TABLE),
        )
    }

    /// DS19: the hash table is a scratch file dropped when the join closes it: its pages are
    /// discarded, never written.
    fn drop_hash_table(&mut self, q: QueryId) {
        let s = &self.slots[q];
        let mut pages: Vec<PageRef> =
            s.created.iter().filter(|p| p.relation == HASH_TABLE).copied().collect();
        pages.sort();
        let (copy, run) = (s.copy, s.run);
        for page in pages {
            self.mgr.discard(GlobalPage { copy, run, page });
        }
    }

    /// DS13: the feedback controller's sample.
    fn sample(&mut self) {
        let Some(fb) = self.feedback else { return };
        let busy = self.busy_ns(self.now);
        let (t0, b0) = self.fb_last;
        let util = if self.now > t0 { (busy - b0) as f64 / (self.now - t0) as f64 } else { 0.0 };
        self.fb_last = (self.now, busy);
        let active = self.slots.len() - self.fb_wait.len();
        match fb.decide(util, active, self.fb_wait.len()) {
            Adjust::Activate => {
                if let Some(q) = self.fb_wait.pop_front() {
                    self.activate(q);
                }
            }
            Adjust::Deactivate => {
                let victim = (0..self.slots.len())
                    .filter(|q| !self.fb_wait.contains(q))
                    .max_by_key(|&q| self.slots[q].activated);
                if let Some(q) = victim {
                    self.fb_wait.push_front(q);
                    if self.slots[q].status == Status::Ready {
                        self.ready.retain(|&x| x != q);
                        self.slots[q].status = Status::Waiting;
                    } else {
                        self.slots[q].hold = true;
                    }
                }
            }
            Adjust::Keep => {}
        }
        self.schedule(fb.interval_us * 1_000, Ev::Sample);
    }

    /// Checks the closed-system invariants (DS10): NCQ slots; the ready queue holds exactly the
    /// ready slots, once each; exactly the running slot is `Running`.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.slots.len() != self.config.ncq as usize {
            return Err(format!("{} slots for NCQ {}", self.slots.len(), self.config.ncq));
        }
        for (q, s) in self.slots.iter().enumerate() {
            let in_ready = self.ready.iter().filter(|&&x| x == q).count();
            if (s.status == Status::Ready) != (in_ready == 1) || in_ready > 1 {
                return Err(format!("slot {q} is {:?} and {in_ready} times in the ready queue", s.status));
            }
            let running = self.running.is_some_and(|r| r.q == q);
            if (s.status == Status::Running) != running {
                return Err(format!("slot {q} is {:?}, running: {running}", s.status));
            }
        }
        Ok(())
    }

    /// How many slots are in each status: ready, running, I/O, frame wait, waiting.
    pub fn status_counts(&self) -> [usize; 5] {
        let mut c = [0; 5];
        for s in &self.slots {
            c[match s.status {
                Status::Ready => 0,
                Status::Running => 1,
                Status::Io(_) => 2,
                Status::FrameWait => 3,
                Status::Waiting => 4,
            }] += 1;
        }
        c
    }

    /// The measured results so far.
    pub fn result(&self) -> RunResult {
        let (t0, b0) = self.measure_start.unwrap_or((0, 0));
        let end = self.batch_marks.last().copied().unwrap_or(self.now);
        let mut prev = t0;
        let batch_queries = self.batch_queries();
        let batch_throughputs: Vec<f64> = self
            .batch_marks
            .iter()
            .skip(self.merge as usize - 1)
            .step_by(self.merge as usize)
            .map(|&m| {
                let dt = (m - prev) as f64 / 1e9;
                prev = m;
                if dt > 0.0 {
                    batch_queries as f64 / dt
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let (_, ci) = batch_means(&batch_throughputs);
        let measured_s = (end.saturating_sub(t0)) as f64 / 1e9;
        let done = self.batch_marks.len() as u64 * self.config.batch_queries;
        let busy = self.busy_ns(self.now).saturating_sub(b0);
        RunResult {
            throughput: if measured_s > 0.0 { done as f64 / measured_s } else { 0.0 },
            ci_halfwidth: ci,
            batch_throughputs,
            batch_queries,
            disk_utilization: if self.now > t0 { busy as f64 / (self.now - t0) as f64 } else { 0.0 },
            completions: self.completions,
            measured_s,
            requests: self.counters[0],
            hits: self.counters[1],
            reads: self.counters[2],
            sync_writes: self.counters[3],
            async_writes: self.counters[4],
            manager: {
                let (a, b) = (self.mgr.stats(), self.stats0);
                ManagerStats {
                    admitted: a.admitted - b.admitted,
                    deferred: a.deferred - b.deferred,
                    suspensions: a.suspensions - b.suspensions,
                    activations: a.activations - b.activations,
                    reclaims: a.reclaims - b.reclaims,
                    rereads_after_suspension: a.rereads_after_suspension - b.rereads_after_suspension,
                    reclaims_after_suspension: a.reclaims_after_suspension - b.reclaims_after_suspension,
                    resident: 0,
                    active: 0,
                }
            },
            mean_resident: if self.now > t0 { self.resident_ns / (self.now - t0) as f64 } else { 0.0 },
            mean_active: if self.now > t0 { self.active_ns / (self.now - t0) as f64 } else { 0.0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbmin::{FileInstance, LocalPolicy, PageRef, RelationId};

    /// A straight sequential scan of `pages` pages of relation `rel`, `cpu_per_ref` µs per page.
    fn scan_trace(query: QueryType, rel: u16, pages: u32, cpu_per_ref: u64) -> QueryTrace {
        let f = FileInstance(0);
        let mut events =
            vec![Event::Open { file: f, relation: RelationId(rel), ls_size: 1, policy: LocalPolicy::Single }];
        for p in 0..pages {
            events.push(Event::Ref {
                file: f,
                page: PageRef { relation: RelationId(rel), page: p },
                write: false,
                cpu_us: (p as u64 + 1) * cpu_per_ref,
            });
        }
        let end = (pages as u64 + 1) * cpu_per_ref;
        events.push(Event::Close { file: f, cpu_us: end });
        QueryTrace { query, events, cpu_us: end, hot_set: 1 }
    }

    /// An outer scan of `outer` pages, for each of them a loop over `inner` pages (MRU, the whole
    /// inner file as locality set) that writes its first page, `cpu` µs per reference.
    fn loop_trace(query: QueryType, rel: u16, outer: u32, inner: u32, cpu: u64) -> QueryTrace {
        let (fo, fi) = (FileInstance(0), FileInstance(1));
        let (ro, ri) = (RelationId(rel), RelationId(rel + 1));
        let mut events = vec![
            Event::Open { file: fo, relation: ro, ls_size: 1, policy: LocalPolicy::Single },
            Event::Open { file: fi, relation: ri, ls_size: inner, policy: LocalPolicy::Mru },
        ];
        let mut t = 0;
        for o in 0..outer {
            t += cpu;
            events.push(Event::Ref {
                file: fo,
                page: PageRef { relation: ro, page: o },
                write: false,
                cpu_us: t,
            });
            for i in 0..inner {
                t += cpu;
                let page = PageRef { relation: ri, page: i };
                events.push(Event::Ref { file: fi, page, write: i == 0, cpu_us: t });
            }
        }
        t += cpu;
        events.push(Event::Close { file: fi, cpu_us: t });
        events.push(Event::Close { file: fo, cpu_us: t });
        QueryTrace { query, events, cpu_us: t + cpu, hot_set: inner + 1 }
    }

    /// Six small traces: two scans and four nested loops of growing inner size.
    fn traces() -> Vec<QueryTrace> {
        vec![
            scan_trace(QueryType::I, 0, 4, 3_000),
            scan_trace(QueryType::II, 1, 12, 2_000),
            loop_trace(QueryType::III, 2, 3, 2, 4_000),
            loop_trace(QueryType::IV, 4, 4, 3, 3_000),
            loop_trace(QueryType::V, 6, 3, 6, 4_000),
            loop_trace(QueryType::VI, 8, 2, 8, 5_000),
        ]
    }

    fn small(algorithm: Algorithm, ncq: u32) -> Config {
        let mut c = Config::new(algorithm, Mix::M1, Sharing::None, ncq);
        c.buffers = 20;
        c.warmup_queries = 20;
        c.batch_queries = 10;
        c
    }

    /// DS15: batch means of 1..=5 by hand: mean 3, s² = 10 / 4 = 2.5, half-width
    /// t(0.975, 4) · √(2.5 / 5) = 2.776 · 0.70711 = 1.96293.
    #[test]
    fn ds15_batch_means_of_a_known_series() {
        let (m, h) = batch_means(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((m - 3.0).abs() < 1e-12);
        assert!((h - 1.962_93).abs() < 1e-4, "{h}");
        // 20 equal batches: no spread, no interval.
        assert_eq!(batch_means(&[7.0; 20]), (7.0, 0.0));
        assert!(batch_means(&[1.0]).1.is_infinite());
    }

    /// DS12: over many samples the disk's mean service time is 27.6 ms (standard error about
    /// 0.02 ms at 200,000 samples; the tolerance is ten times that), and every sample lies
    /// between the transfer time and a full-stroke seek plus a revolution.
    #[test]
    fn ds12_disk_mean_service_time_is_27_6_ms() {
        let mut d = DiskModel::new(42);
        let n = 200_000;
        let mut sum = 0.0;
        let max = DiskModel::SEEK_MIN_MS
            + d.seek_b_ms * ((DiskModel::CYLINDERS - 1) as f64).sqrt()
            + DiskModel::REVOLUTION_MS
            + DiskModel::TRANSFER_MS;
        for _ in 0..n {
            let ms = d.service_ns() as f64 / 1e6;
            assert!(ms >= DiskModel::TRANSFER_MS - 1e-6 && ms <= max + 1e-6, "{ms}");
            sum += ms;
        }
        let mean = sum / n as f64;
        assert!((mean - DiskModel::MEAN_MS).abs() < 0.2, "mean {mean} ms");
    }

    /// DS17: bad input is a typed error.
    #[test]
    fn ds17_bad_input_is_rejected() {
        let tr = traces();
        for ncq in [0, 33] {
            assert_eq!(run(&small(Algorithm::Dbmin, ncq), &tr), Err(DbminError::NcqOutOfRange(ncq)));
        }
        assert_eq!("lru".parse::<Algorithm>(), Err(DbminError::UnknownAlgorithm("lru".into())));
        assert_eq!("CLOCK".parse::<Algorithm>(), Ok(Algorithm::Clock));
        assert_eq!("m4".parse::<Mix>(), Err(DbminError::UnknownMix("m4".into())));
        assert_eq!("some".parse::<Sharing>(), Err(DbminError::UnknownSharing("some".into())));
        let mut c = small(Algorithm::Dbmin, 2);
        c.buffers = 8;
        // Type VI keeps 1 + 8 = 9 pages open: DBMIN needs Σ l < N, so 10 buffers.
        assert!(matches!(
            run(&c, &tr),
            Err(DbminError::BufferTooSmall { query: QueryType::VI, needed: 9, min: 10, .. })
        ));
        c.buffers = 7;
        c.algorithm = Algorithm::Clock;
        assert!(matches!(
            run(&c, &tr),
            Err(DbminError::BufferTooSmall { query: QueryType::VI, needed: 8, min: 8, .. })
        ));
        let mut c = small(Algorithm::Hot, 2);
        c.load_control = true;
        assert_eq!(run(&c, &tr), Err(DbminError::FeedbackNotApplicable(Algorithm::Hot)));
        assert_eq!(run(&small(Algorithm::Hot, 2), &tr[..5]), Err(DbminError::MissingTrace(QueryType::VI)));
        let mut bad = traces();
        bad[0].events.remove(0);
        assert!(matches!(run(&small(Algorithm::Hot, 2), &bad), Err(DbminError::BadTrace { event: 0, .. })));
    }

    /// DS17: locality sets whose sum passes `u32::MAX` are a `BufferTooSmall` error, not an
    /// arithmetic overflow (query I's trace with two more instances of `u32::MAX - 1` pages open
    /// from its start to its end).
    #[test]
    fn ds17_huge_locality_sets_are_errors_not_overflows() {
        let mut tr = traces();
        let t = &mut tr[0];
        for file in [90, 91] {
            let open = Event::Open {
                file: FileInstance(file),
                relation: RelationId(1),
                ls_size: u32::MAX - 1,
                policy: LocalPolicy::Any,
            };
            t.events.insert(0, open);
            t.events.push(Event::Close { file: FileInstance(file), cpu_us: t.cpu_us });
        }
        let mut c = small(Algorithm::Dbmin, 2);
        c.buffers = u32::MAX;
        assert!(matches!(
            validate(&c, &tr),
            Err(DbminError::BufferTooSmall { query: QueryType::I, needed: u32::MAX, min: u32::MAX, .. })
        ));
        c.algorithm = Algorithm::Hot;
        c.buffers = 100;
        assert!(matches!(
            validate(&c, &tr),
            Err(DbminError::BufferTooSmall { query: QueryType::I, needed, .. }) if needed == u32::MAX - 1
        ));
    }

    /// A query that builds a hash table of `k` pages (writing each) and probes it `rounds` times.
    fn hash_trace(query: QueryType, k: u32, rounds: u32) -> QueryTrace {
        let f = FileInstance(0);
        let relation = crate::dbmin::queries::HASH_TABLE;
        let mut events = vec![Event::Open { file: f, relation, ls_size: k, policy: LocalPolicy::Any }];
        let mut t = 0;
        for r in 0..=rounds {
            for p in 0..k {
                t += 1_000;
                events.push(Event::Ref {
                    file: f,
                    page: PageRef { relation, page: p },
                    write: r == 0,
                    cpu_us: t,
                });
            }
        }
        events.push(Event::Close { file: f, cpu_us: t + 1_000 });
        QueryTrace { query, events, cpu_us: t + 2_000, hot_set: k }
    }

    /// DS15: an interval wider than asked doubles the batches, at most `max_doublings` times;
    /// going on with merged pairs of batches gives exactly the run configured with the final
    /// batch length from the start (same warm-up, same completions at every batch end). A run
    /// within the precision is not lengthened.
    #[test]
    fn ds15_wide_intervals_lengthen_the_batches() {
        let tr = traces();
        for a in [Algorithm::Dbmin, Algorithm::Ws, Algorithm::Fifo] {
            let c = small(a, 6);
            let base = run(&c, &tr).unwrap();
            assert!(base.ci_halfwidth > 0.0, "{a}: the batches differ");
            let tight = Precision { relative_halfwidth: 1e-9, max_doublings: 2 };
            let long = run_to_precision(&c, &tr, tight).unwrap();
            assert_eq!(long.batch_queries, 4 * c.batch_queries, "{a}");
            assert_eq!(long.batch_throughputs.len(), c.batches as usize, "{a}");
            let mut c4 = c.clone();
            c4.batch_queries *= 4;
            assert_eq!(long, run(&c4, &tr).unwrap(), "{a}: lengthened = configured long");
            let loose = Precision { relative_halfwidth: 10.0, max_doublings: 2 };
            assert_eq!(run_to_precision(&c, &tr, loose).unwrap(), base, "{a}: within precision");
        }
        for bad in [0.0, -0.05, f64::NAN] {
            let p = Precision { relative_halfwidth: bad, max_doublings: 2 };
            let r = run_to_precision(&small(Algorithm::Hot, 2), &tr, p);
            assert!(matches!(r, Err(DbminError::BadParameter(_))), "{bad}");
        }
    }

    /// DS19: temporary pages belong to one query run whatever the sharing level. Each run creates
    /// its hash table without reading it and drops it at its close without writing it, so with
    /// memory for every table no page is ever read or written, and each run's first reference
    /// to each page is not a hit (every later one is). Sharing the pages between runs (the slot's
    /// previous query or, at full sharing, every query) would turn those first references into
    /// hits; reading them at creation or writing them back at the end would show up as I/O.
    #[test]
    fn ds19_temporary_pages_are_created_and_dropped_without_io() {
        let k = 3;
        let tr: Vec<QueryTrace> =
            QueryType::ALL.iter().enumerate().map(|(i, &q)| hash_trace(q, k, i as u32 + 1)).collect();
        for a in Algorithm::ALL {
            for sharing in Sharing::ALL {
                let mut c = small(a, 4);
                c.sharing = sharing;
                c.buffers = 4 * k + 1;
                let r = run(&c, &tr).unwrap();
                let what = format!("{a} {sharing:?}");
                assert_eq!((r.reads, r.sync_writes, r.async_writes), (0, 0, 0), "{what}");
                let done: u64 = r.completions.iter().sum();
                let per_run: Vec<u64> = (1..=6).map(|rounds| (rounds + 1) * k as u64).collect();
                let refs: u64 = r.completions.iter().zip(&per_run).map(|(n, m)| n * m).sum();
                // Queries running at the batch boundaries make the counts differ by at most
                // NCQ queries' references.
                let slack = 4 * 7 * k as u64;
                assert!(r.requests.abs_diff(refs) <= slack, "{what}: {} requests vs {refs}", r.requests);
                let misses = r.requests - r.hits;
                assert!(misses.abs_diff(done * k as u64) <= 4 * k as u64, "{what}: {misses} creations");
            }
        }
    }

    fn every_setup() -> Vec<Config> {
        let mut out = Vec::new();
        for a in Algorithm::ALL {
            for lc in [false, true] {
                if lc && !a.is_global() {
                    continue;
                }
                for sharing in Sharing::ALL {
                    let mut c = small(a, 6);
                    c.load_control = lc;
                    c.sharing = sharing;
                    out.push(c);
                }
            }
        }
        out
    }

    /// DS10: NCQ queries are always in the system, each in exactly one place; with feedback
    /// control at least one query stays active.
    #[test]
    fn ds10_closed_system_invariants_hold_at_every_event() {
        let tr = traces();
        for c in every_setup() {
            let mut sim = Simulator::new(&c, &tr).unwrap();
            let mut steps = 0;
            while !sim.finished() {
                if let Err(e) = sim.step() {
                    panic!("{:?}/{}/{:?}: {e}; {:?}", c.algorithm, c.load_control, c.sharing, sim.slots);
                }
                steps += 1;
                if let Err(e) = sim.check_invariants() {
                    panic!("{:?}/{}/{:?} after {steps} steps: {e}", c.algorithm, c.load_control, c.sharing);
                }
                assert_eq!(sim.status_counts().iter().sum::<usize>(), 6);
                assert!(sim.fb_wait.len() < 6);
            }
            let r = sim.result();
            assert_eq!(r.completions.iter().sum::<u64>(), 20 * 10);
            assert!(r.throughput > 0.0 && r.disk_utilization <= 1.0 + 1e-9);
            assert!(r.hits <= r.requests);
        }
    }

    /// DS16: the same configuration and seed give the same result; another seed another one.
    #[test]
    fn ds16_runs_are_deterministic_under_a_seed() {
        let tr = traces();
        for c in every_setup() {
            let a = run(&c, &tr).unwrap();
            let b = run(&c, &tr).unwrap();
            assert_eq!(a, b, "{:?}", c.algorithm);
            let mut c2 = c.clone();
            c2.seed = 99;
            assert_ne!(run(&c2, &tr).unwrap().batch_throughputs, a.batch_throughputs);
        }
    }

    /// One query at a time, every reference a miss (each type scans more pages than the pool
    /// holds, so no page survives until the type runs again): a query takes its CPU time plus
    /// 27.6 ms per page on average, and the throughput is 1 / Σ pᵢ (cpuᵢ + pagesᵢ · 27.6 ms).
    /// Within 4% (1,000 queries; the disk's randomness is the only noise).
    #[test]
    fn ds11_single_query_throughput_matches_the_hand_computation() {
        let pages = [8u32, 10, 12, 14, 16, 18];
        let tr: Vec<QueryTrace> = QueryType::ALL
            .iter()
            .enumerate()
            .map(|(i, &q)| scan_trace(q, i as u16, pages[i], 5_000 + 1_000 * i as u64))
            .collect();
        let p = Mix::M1.probabilities();
        let mean_s: f64 = (0..6).map(|i| p[i] * (tr[i].cpu_us as f64 / 1e6 + pages[i] as f64 * 0.0276)).sum();
        let expected = 1.0 / mean_s / p.iter().sum::<f64>();
        for a in [Algorithm::Dbmin, Algorithm::Hot, Algorithm::Fifo, Algorithm::Clock, Algorithm::Ws] {
            let mut c = Config::new(a, Mix::M1, Sharing::None, 1);
            c.buffers = 5;
            let r = run(&c, &tr).unwrap();
            assert_eq!(r.hits, 0, "{a:?}");
            assert!((r.throughput / expected - 1.0).abs() < 0.04, "{a:?}: {} vs {expected}", r.throughput);
            assert!(r.ci_halfwidth > 0.0 && r.ci_halfwidth < 0.1 * r.throughput);
        }
    }
}
