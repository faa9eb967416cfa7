//! The "rndread" workload: N records with 8-byte big-endian keys `0..N` and 120-byte values
//! derived from the key, loaded in key order into one fresh database per buffer mode; then
//! threads look up uniformly random keys and verify every value.
//!
//! Repetitions are interleaved (`for rep { for mode { warmup; measure } }`) so that drift of the
//! machine (frequency, other load) hits all modes alike.
//!
//! [`run_with_peers`] runs the same lookups on peer engines beside the modes (`bench lookup
//! --engine swizzledb,lmdb`): the same records loaded into an LMDB environment, the same key
//! sequences per repetition, interleaved with the modes (`for rep { modes...; peers... }`).
//! SwizzleDB's lookups read the tree outside any transaction (one latched descent); LMDB's
//! each open a read-only transaction, the least LMDB reads with.

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{BufferError, Database, Error, PolicySpec, PoolMode, Stats, Tree};

use crate::engine::EngineName;

/// Key (8) plus value (120) bytes: the logical size of one record.
pub const RECORD_BYTES: u64 = 128;
const VALUE_LEN: usize = 120;
/// Pool bytes per record that hold the whole loaded tree. A load in key order leaves full leaves
/// (~142 bytes per record with 8 KiB pages: record, slot and length), so this leaves ~40%
/// headroom for inner nodes and slack.
const POOL_BYTES_PER_RECORD: u64 = 200;
/// Lookups between two looks at the stop flag.
const BATCH: u64 = 256;
/// Whether the buffer experiments run with a write-ahead log: never. They measure the buffer
/// alone (`bench wal` measures the log's cost), so every database they create or open says so
/// explicitly instead of relying on the engine's default, and their CSV and JSON rows carry this
/// value in the `logging` column.
pub const LOGGING: bool = false;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Name of the experiment, for the CSV/JSON rows (`rndread`, `graefe-fig10`, ...).
    pub experiment: String,
    /// Records loaded (keys `0..records`).
    pub records: u64,
    /// Records looked up: keys are drawn from `0..working_set` (at most `records`).
    pub working_set: u64,
    /// Key popularity: `None` draws keys uniformly; `Some(s)` draws ranks from a Zipf law with
    /// exponent `s` and scatters them over the working set (see [`KeyDraw`]).
    pub zipf: Option<f64>,
    /// Lookup threads.
    pub threads: usize,
    /// Buffer modes, one database each.
    pub modes: Vec<PoolMode>,
    /// Buffer-pool bytes per database.
    pub pool_bytes: usize,
    /// Page size in bytes.
    pub page_size: usize,
    /// Replacement policy.
    pub policy: PolicySpec,
    /// Seconds per measurement.
    pub duration: f64,
    /// Set when a measurement times a fixed number of operations instead of `duration` (inserts).
    pub timed_ops: Option<u64>,
    /// Seconds of unmeasured lookups before each measurement.
    pub warmup: f64,
    /// Measurements per mode.
    pub repeat: usize,
    /// Seed for the pools and the lookup threads.
    pub seed: u64,
    /// Open database files with O_DIRECT.
    pub direct_io: bool,
    /// Run the background evictor (`swizzledb::lab::LabOptions::background_eviction`).
    pub background_eviction: bool,
    /// Read leaves without latches (`swizzledb::lab::LabOptions::optimistic_leaf_reads`).
    pub optimistic_leaf_reads: bool,
    /// Mode the ratios are relative to (default: main-memory, else the first mode measured).
    pub baseline: Option<PoolMode>,
    /// Directory for the temporary database files.
    pub dir: PathBuf,
    /// BP-Wrapper's queue size S and batch threshold T (`swizzledb::lab::LabOptions::bp_queue`;
    /// 64 and 32 unless an experiment sweeps them).
    pub bp_queue: (usize, usize),
    /// LMDB's lookups per read-only transaction (`bench lookup --lmdb-reads-per-txn`): a
    /// lookup thread keeps its transaction for this many lookups, then begins a new one, as
    /// LMDB's own read benchmarks do; 1 begins one per lookup.
    pub lmdb_reads_per_txn: u32,
}

/// The default pool: the whole data set fits (records x 200 bytes, rounded up to MiB, at least
/// 64 MiB).
#[must_use]
pub fn default_pool_bytes(records: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    records.saturating_mul(POOL_BYTES_PER_RECORD).div_ceil(MIB).saturating_mul(MIB).max(64 * MIB)
}

/// One measurement of one mode.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Repetition (0-based).
    pub repetition: usize,
    /// Lookups done.
    pub ops: u64,
    /// Seconds measured.
    pub secs: f64,
    /// Buffer-pool counters during the measurement.
    pub stats: Stats,
    /// Lookup latency, sampled.
    pub latency: Latency,
    /// Bytes of frames holding pages at the end of the measurement.
    pub resident_bytes: u64,
    /// When the measured phase began (shows the interleaving of modes).
    pub started: Instant,
    /// CPU seconds (user + system) the whole process used during the measured phase, where the
    /// system reports it ([`process_cpu_secs`]): unlike the throughput, it does not count time
    /// the threads spent waiting or descheduled.
    pub cpu_secs: Option<f64>,
    /// A cache line's round trip between two threads just before the measured phase
    /// ([`crate::support::cores::line_round_trip_ns`]), for a measurement of two or more
    /// threads: what every line the threads share costs each time it changes hands; `None`
    /// with one thread or one CPU.
    pub line_ns: Option<f64>,
}

pub use crate::support::cpu::process_cpu_secs;

/// The median of `f` over the measurements where it is defined (`None` if it is nowhere).
pub fn median_of(runs: &[Measurement], f: impl Fn(&Measurement) -> Option<f64>) -> Option<f64> {
    crate::support::stats::median_by(runs, |_| true, f)
}

/// Lookup latency percentiles in nanoseconds, from every `LATENCY_SAMPLE`-th lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest sample.
    pub max_ns: u64,
}

/// One lookup in this many is timed: reading the clock twice per lookup would cost ~10% of a
/// ~400 ns lookup.
pub(crate) const LATENCY_SAMPLE: u64 = 32;

pub(crate) fn new_histogram() -> Histogram<u64> {
    // 1 ns .. 60 s at 3 significant digits; the bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

impl Measurement {
    /// Lookups per second.
    #[must_use]
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.secs
    }

    /// Process CPU microseconds per operation, where measured.
    #[must_use]
    pub fn cpu_us_per_op(&self) -> Option<f64> {
        self.cpu_secs.filter(|_| self.ops > 0).map(|c| c * 1e6 / self.ops as f64)
    }
}

/// Everything measured for one mode.
#[derive(Clone, Debug)]
pub struct ModeResult {
    /// The buffer mode.
    pub mode: PoolMode,
    /// Seconds the load took, if it finished.
    pub load_secs: Option<f64>,
    /// Records inserted by the load.
    pub loaded: u64,
    /// The measurements, in repetition order.
    pub runs: Vec<Measurement>,
    /// Why the mode stopped early, if it did.
    pub error: Option<String>,
}

/// Everything measured for one peer engine (`bench lookup --engine lmdb`).
#[derive(Clone, Debug)]
pub struct PeerResult {
    /// The engine (not SwizzleDB).
    pub engine: EngineName,
    /// Seconds the load took, if it finished.
    pub load_secs: Option<f64>,
    /// Records inserted by the load.
    pub loaded: u64,
    /// The measurements, in repetition order (no buffer-pool counters: `stats` is all zeros;
    /// `resident_bytes` is the database file in use).
    pub runs: Vec<Measurement>,
    /// Why the engine stopped early, if it did.
    pub error: Option<String>,
    /// LMDB's map: the most the database may grow to.
    pub map_bytes: u64,
}

pub use crate::support::progress::Progress;

/// The databases still open after a run: dropping this flushes and closes them and deletes their
/// files (about a second per 1M records), so print results first.
pub struct OpenDatabases {
    _dbs: Vec<Loaded>,
    #[cfg(feature = "lmdb")]
    _peers: Vec<LoadedPeer>,
}

/// LMDB's lookups per read-only transaction by default ([`Config::lmdb_reads_per_txn`]): as
/// LMDB's own read benchmarks renew their transaction every thousand reads or so, the same at
/// every thread count; its cost (begin and end, about a microsecond) then weighs on no lookup.
pub const LMDB_READS_PER_TXN: u32 = 1000;

/// Where lookups read: a SwizzleDB tree (outside transactions: one latched descent), or a
/// peer engine's table.
pub(crate) trait Source: Sync {
    /// The engine's error.
    type Error: Send;

    /// What one lookup thread keeps between its lookups (LMDB: its read-only transaction).
    type Reader<'s>
    where
        Self: 's;

    /// A lookup thread's reader, before its first lookup.
    fn reader(&self) -> Self::Reader<'_>;

    /// Runs `f` on the value under `key` (`None` if absent), borrowed in place.
    fn get_with<'s, R>(
        &'s self,
        reader: &mut Self::Reader<'s>,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Self::Error>;
}

impl Source for Tree {
    type Error = Error;
    type Reader<'s> = ();

    fn reader(&self) {}

    #[inline]
    fn get_with<R>(&self, (): &mut (), key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, Error> {
        Ok(Tree::get_with(self, key, f)?)
    }
}

/// An LMDB environment loaded with the records; its scratch directory is deleted when this is
/// dropped (after the environment is closed).
#[cfg(feature = "lmdb")]
pub(crate) struct LoadedPeer {
    db: crate::engine::Lmdb,
    table: crate::engine::LmdbTable,
    /// Lookups per read-only transaction ([`Config::lmdb_reads_per_txn`]).
    reads_per_txn: u32,
    _scratch: crate::workloads::bench::Scratch,
}

/// A lookup thread's read-only LMDB transaction and how many more lookups it serves.
#[cfg(feature = "lmdb")]
pub(crate) struct PeerReader<'s> {
    txn: Option<crate::engine::LmdbReadTxn<'s>>,
    left: u32,
}

/// A lookup thread reads through one read-only transaction for `reads_per_txn` lookups, then
/// ends it and begins another (no writer runs meanwhile, so every transaction sees the loaded
/// records).
#[cfg(feature = "lmdb")]
impl Source for LoadedPeer {
    type Error = crate::workloads::WorkloadError;
    type Reader<'s> = PeerReader<'s>;

    fn reader(&self) -> PeerReader<'_> {
        PeerReader { txn: None, left: 0 }
    }

    #[inline]
    fn get_with<'s, R>(
        &'s self,
        reader: &mut PeerReader<'s>,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, crate::workloads::WorkloadError> {
        if reader.left == 0 {
            // The thread's reader slot holds one transaction at a time: end the old one first.
            reader.txn = None;
            reader.txn = Some(self.db.read_txn()?);
            reader.left = self.reads_per_txn.max(1);
        }
        reader.left -= 1;
        let txn = reader.txn.as_ref().expect("begun above");
        self.db.get_in(txn, &self.table, key, f)
    }
}

/// LMDB's map for `records` records: 1 KiB per record (8 times the keys and values: pages
/// split half full, and copy-on-write needs free pages besides), plus 256 MiB. Address space
/// only: the file takes the pages written.
#[must_use]
pub fn lmdb_map_bytes(records: u64) -> u64 {
    records.saturating_mul(1024).saturating_add(256 << 20)
}

/// A loaded database; its file is deleted when this is dropped (first, so that nothing is left
/// behind even if the flush fails).
pub struct Loaded {
    pub(crate) _file: TempFile,
    pub(crate) tree: Tree,
    pub(crate) db: Database,
}

/// Deletes the file at its path on drop.
pub(crate) struct TempFile(pub(crate) PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Why a lookup phase ended early.
pub(crate) enum PhaseError<E = Error> {
    Engine(E),
    Verify(String),
}

/// Runs the workload. Errors in one mode's load or lookups are printed, recorded in its result
/// and end only that mode; wrong or missing values and errors that would hit every mode alike
/// (settings, creating the file) end the whole run.
///
/// # Errors
/// Verification failures, invalid settings, and errors creating a database file.
pub fn run(
    cfg: &Config,
    progress: Progress,
) -> Result<(Vec<ModeResult>, OpenDatabases), Box<dyn std::error::Error>> {
    let (results, _, open) = run_with_peers(cfg, &[], progress)?;
    Ok((results, open))
}

/// What [`run_with_peers`] returns: per mode, per peer engine, and the databases still open.
pub type WithPeers = (Vec<ModeResult>, Vec<PeerResult>, OpenDatabases);

/// [`run`], and the same lookups on each engine of `peers` (other than SwizzleDB) beside the
/// modes, interleaved with them; a peer's errors end only that peer, as a mode's do.
///
/// # Errors
/// As [`run`]; and a peer this build does not have.
pub fn run_with_peers(
    cfg: &Config,
    peers: &[EngineName],
    progress: Progress,
) -> Result<WithPeers, Box<dyn std::error::Error>> {
    let mut slots = Vec::new();
    for &mode in &cfg.modes {
        let mut result =
            ModeResult { mode, load_secs: None, loaded: cfg.records, runs: Vec::new(), error: None };
        let path = cfg.dir.join(format!("swizzledb-rndread-{}-{}.swz", std::process::id(), mode.name()));
        let (db, file) = create(cfg, mode, path)?;
        let bar = progress.counter(cfg.records, format!("{mode}: loading"));
        let start = Instant::now();
        let loaded = load(&db, cfg.records, &bar);
        bar.finish_and_clear();
        let live = match loaded {
            Ok(tree) => {
                let secs = start.elapsed().as_secs_f64();
                result.load_secs = Some(secs);
                progress.say(format_args!("{mode}: loaded in {secs:.2} s"));
                Some(Loaded { tree, db, _file: file })
            }
            Err(e) => {
                fail(&mut result, &e);
                None
            }
        };
        slots.push((result, live));
    }
    #[cfg(feature = "lmdb")]
    let mut peer_slots = Vec::new();
    for &engine in peers {
        match engine {
            EngineName::SwizzleDb => continue,
            #[cfg(feature = "lmdb")]
            EngineName::Lmdb => peer_slots.push(load_lmdb(cfg, progress)?),
            #[cfg(not(feature = "lmdb"))]
            EngineName::Lmdb => return Err(crate::workloads::WorkloadError::Config(
                "--engine lmdb: this build has no LMDB; build the swizzledb command with the lmdb feature"
                    .into(),
            )
            .into()),
        }
    }

    for rep in 0..cfg.repeat {
        for (result, live) in &mut slots {
            let Some(loaded) = live else { continue };
            match measure(cfg, loaded, rep, progress, result.mode) {
                Ok(m) => {
                    progress.say(format_args!(
                        "{}: repetition {}/{}: {} lookups/s",
                        result.mode,
                        rep + 1,
                        cfg.repeat,
                        crate::support::text::thousands(m.throughput().round() as u64)
                    ));
                    result.runs.push(m);
                }
                Err(PhaseError::Engine(e)) => {
                    fail(result, &e);
                    *live = None;
                }
                Err(PhaseError::Verify(msg)) => return Err(format!("{} mode: {msg}", result.mode).into()),
            }
        }
        #[cfg(feature = "lmdb")]
        for (result, live) in &mut peer_slots {
            let Some(peer) = live else { continue };
            match measure_peer(cfg, peer, rep, progress) {
                Ok(m) => {
                    progress.say(format_args!(
                        "{}: repetition {}/{}: {} lookups/s",
                        result.engine,
                        rep + 1,
                        cfg.repeat,
                        crate::support::text::thousands(m.throughput().round() as u64)
                    ));
                    result.runs.push(m);
                }
                Err(PhaseError::Engine(e)) => {
                    fail_peer(result, &e);
                    *live = None;
                }
                Err(PhaseError::Verify(msg)) => return Err(format!("{}: {msg}", result.engine).into()),
            }
        }
    }
    let (results, open) = slots.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
    #[cfg(feature = "lmdb")]
    {
        let (peer_results, peers_open) = peer_slots.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
        let open = OpenDatabases {
            _dbs: open.into_iter().flatten().collect(),
            _peers: peers_open.into_iter().flatten().collect(),
        };
        Ok((results, peer_results, open))
    }
    #[cfg(not(feature = "lmdb"))]
    Ok((results, Vec::new(), OpenDatabases { _dbs: open.into_iter().flatten().collect() }))
}

/// Creates an LMDB environment in a scratch directory of `cfg.dir` (as `bench ycsb` does, with
/// the durability of SwizzleDB without a log: these benchmarks measure reads, not durability)
/// and loads the records into it, 5,000 per write transaction. An error creating the directory
/// ends the run; one of LMDB's is recorded in the result.
#[cfg(feature = "lmdb")]
fn load_lmdb(
    cfg: &Config,
    progress: Progress,
) -> Result<(PeerResult, Option<LoadedPeer>), Box<dyn std::error::Error>> {
    use crate::engine::{Engine, Lmdb};
    let map_bytes = lmdb_map_bytes(cfg.records);
    let mut result = PeerResult {
        engine: EngineName::Lmdb,
        load_secs: None,
        loaded: cfg.records,
        runs: Vec::new(),
        error: None,
        map_bytes,
    };
    let scratch = crate::workloads::bench::Scratch::new(&cfg.dir, "lookup-lmdb")?;
    let readers = u32::try_from(cfg.threads).unwrap_or(u32::MAX).saturating_add(8);
    let db = Lmdb::create(&scratch.0.join("lmdb"), map_bytes, readers, LOGGING)?;
    let bar = progress.counter(cfg.records, "lmdb: loading".to_string());
    let start = Instant::now();
    let loaded = (|| {
        let table = db.create_table("rndread")?;
        let mut batch = Vec::with_capacity(Lmdb::LOAD_BATCH);
        for k in 0..cfg.records {
            let key = k.to_be_bytes();
            batch.push((key.to_vec(), value_for(&key).to_vec()));
            if batch.len() == Lmdb::LOAD_BATCH || k + 1 == cfg.records {
                db.load(&table, &batch)?;
                bar.inc(batch.len() as u64);
                batch.clear();
            }
        }
        Ok::<_, crate::workloads::WorkloadError>(table)
    })();
    bar.finish_and_clear();
    match loaded {
        Ok(table) => {
            let secs = start.elapsed().as_secs_f64();
            result.load_secs = Some(secs);
            progress.say(format_args!("lmdb: loaded in {secs:.2} s"));
            Ok((
                result,
                Some(LoadedPeer { db, table, reads_per_txn: cfg.lmdb_reads_per_txn, _scratch: scratch }),
            ))
        }
        Err(e) => {
            fail_peer(&mut result, &e);
            Ok((result, None))
        }
    }
}

#[cfg(feature = "lmdb")]
fn fail_peer(result: &mut PeerResult, e: &crate::workloads::WorkloadError) {
    let msg = e.to_string();
    eprintln!("error: {}: {msg}", result.engine);
    result.error = Some(msg);
}

/// One warm-up and one measured phase on a peer engine, with the seeds of the modes' phases of
/// the same repetition (so the same keys); a peer has no buffer-pool counters.
#[cfg(feature = "lmdb")]
fn measure_peer(
    cfg: &Config,
    peer: &LoadedPeer,
    rep: usize,
    progress: Progress,
) -> Result<Measurement, PhaseError<crate::workloads::WorkloadError>> {
    measure_source(cfg, peer, rep, progress, EngineName::Lmdb.name(), Stats::default, || peer.db.used_bytes())
}

/// Creates the database file for `mode` (an error here is not specific to the mode).
pub(crate) fn create(cfg: &Config, mode: PoolMode, path: PathBuf) -> Result<(Database, TempFile), Error> {
    if path.exists() {
        return Err(Error::Buffer(BufferError::Config(format!(
            "{} exists already; remove it or choose another --dir",
            path.display()
        ))));
    }
    let file = TempFile(path);
    let mut builder = Database::builder()
        .mode(mode)
        .pool_bytes(cfg.pool_bytes)
        .page_size(cfg.page_size)
        .policy(cfg.policy)
        .lab(|l| l.seed(cfg.seed))
        .direct_io(cfg.direct_io)
        .lab(|l| {
            l.background_eviction(cfg.background_eviction)
                .optimistic_leaf_reads(cfg.optimistic_leaf_reads)
                .bp_queue(cfg.bp_queue.0, cfg.bp_queue.1)
        })
        .logging(LOGGING);
    // Under `swizzledb trace record`, every database records a trace.
    if let Some(trace) = crate::support::recording::next_trace_path() {
        builder = builder.lab(|l| l.trace(trace));
    }
    let db = builder.create(&file.0)?;
    Ok((db, file))
}

pub(crate) fn fail(result: &mut ModeResult, e: &Error) {
    let msg = e.to_string();
    if msg.contains(result.mode.name()) {
        eprintln!("error: {msg}");
    } else {
        eprintln!("error: {} mode: {msg}", result.mode);
    }
    result.error = Some(msg);
}

/// The value stored under `key`: the key repeated to 120 bytes.
pub(crate) fn value_for(key: &[u8; 8]) -> [u8; VALUE_LEN] {
    let mut v = [0; VALUE_LEN];
    for chunk in v.chunks_exact_mut(8) {
        chunk.copy_from_slice(key);
    }
    v
}

pub(crate) fn is_value_for(value: &[u8], key: &[u8; 8]) -> bool {
    value.len() == VALUE_LEN && value.chunks_exact(8).all(|c| c == key)
}

pub(crate) fn load(db: &Database, records: u64, bar: &ProgressBar) -> Result<Tree, Error> {
    const STEP: u64 = 1 << 16;
    let tree = db.create_tree("rndread")?;
    for k in 0..records {
        let key = k.to_be_bytes();
        tree.insert(&key, &value_for(&key))?;
        if k % STEP == STEP - 1 {
            bar.inc(STEP);
        }
    }
    Ok(tree)
}

/// One warmup and one measured phase.
fn measure(
    cfg: &Config,
    loaded: &Loaded,
    rep: usize,
    progress: Progress,
    mode: PoolMode,
) -> Result<Measurement, PhaseError> {
    measure_labelled(cfg, loaded, rep, progress, mode.name())
}

/// One warm-up and one measured phase; `label` names the database in progress messages.
pub(crate) fn measure_labelled(
    cfg: &Config,
    loaded: &Loaded,
    rep: usize,
    progress: Progress,
    mode: &str,
) -> Result<Measurement, PhaseError> {
    let pool = loaded.db.pool();
    let resident = || (pool.resident_pages() * pool.page_size()) as u64;
    measure_source(cfg, &loaded.tree, rep, progress, mode, || loaded.db.stats(), resident)
}

/// One warm-up and one measured phase of lookups in `source`; `label` names it in progress
/// messages, `stats` reads its buffer-pool counters and `resident` the bytes it holds in memory.
fn measure_source<S: Source>(
    cfg: &Config,
    source: &S,
    rep: usize,
    progress: Progress,
    label: &str,
    stats: impl Fn() -> Stats,
    resident: impl FnOnce() -> u64,
) -> Result<Measurement, PhaseError<S::Error>> {
    // Same key sequences for every mode and peer within a repetition, different across phases.
    let seed = cfg.seed ^ ((rep as u64) << 40);
    if cfg.warmup > 0.0 {
        let wait = || progress.wait(cfg.warmup, format!("{label}: warm-up {}/{}", rep + 1, cfg.repeat));
        lookups(cfg, source, seed ^ (1 << 32), wait)?;
    }
    let line_ns = if cfg.threads > 1 { crate::support::cores::line_round_trip_ns() } else { None };
    let before = stats();
    let cpu_before = process_cpu_secs();
    let started = Instant::now();
    let wait = || progress.wait(cfg.duration, format!("{label}: measuring {}/{}", rep + 1, cfg.repeat));
    let (ops, secs, hist) = lookups(cfg, source, seed, wait)?;
    let cpu_secs = process_cpu_secs().zip(cpu_before).map(|(after, before)| after - before);
    Ok(Measurement {
        repetition: rep,
        ops,
        secs,
        stats: stats().since(&before),
        latency: Latency {
            p50_ns: hist.value_at_quantile(0.50),
            p99_ns: hist.value_at_quantile(0.99),
            p999_ns: hist.value_at_quantile(0.999),
            max_ns: hist.max(),
        },
        resident_bytes: resident(),
        started,
        cpu_secs,
        line_ns,
    })
}

/// Random verified lookups on `cfg.threads` threads until `wait` returns: (lookups, seconds,
/// sampled latencies).
fn lookups<S: Source>(
    cfg: &Config,
    tree: &S,
    seed: u64,
    wait: impl FnOnce(),
) -> Result<(u64, f64, Histogram<u64>), PhaseError<S::Error>> {
    let keys = KeyDraw::new(cfg.working_set, cfg.zipf).map_err(PhaseError::Verify)?;
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let tallies: Vec<Result<Tally, S::Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || worker(tree, keys, seed ^ t as u64, stop))
            })
            .collect();
        wait();
        stop.store(true, Relaxed);
        workers.into_iter().map(|w| w.join().expect("lookup thread panicked")).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut total = Tally::default();
    let mut hist = new_histogram();
    for t in tallies {
        let t = t.map_err(PhaseError::Engine)?;
        // Same bounds on both sides: adding cannot fail.
        hist.add(&t.latency).expect("histograms with equal bounds");
        total.ops += t.ops;
        total.missing += t.missing;
        total.wrong += t.wrong;
        total.first_bad = total.first_bad.or(t.first_bad);
    }
    if let Some(key) = total.first_bad {
        return Err(PhaseError::Verify(format!(
            "verification failed: {} missing and {} wrong values in {} lookups (first bad key: {key})",
            total.missing, total.wrong, total.ops
        )));
    }
    Ok((total.ops, elapsed, hist))
}

struct Tally {
    ops: u64,
    missing: u64,
    wrong: u64,
    first_bad: Option<u64>,
    latency: Histogram<u64>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally { ops: 0, missing: 0, wrong: 0, first_bad: None, latency: new_histogram() }
    }
}

/// How lookup keys are drawn from `0..n`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyDraw {
    Uniform(u64),
    /// Zipf ranks `1..=n`; rank `r` maps to key `(r - 1) * step mod n`, a bijection because `step`
    /// is coprime to `n`, which spreads the hot keys over the whole tree instead of its first
    /// leaves.
    Zipf {
        zipf: rand_distr::Zipf<f64>,
        n: u64,
        step: u64,
    },
}

impl KeyDraw {
    /// Uniform over `0..n`, or Zipf with exponent `s` (> 0) over it.
    ///
    /// # Errors
    /// An exponent that is not a positive finite number.
    pub(crate) fn new(n: u64, zipf: Option<f64>) -> Result<KeyDraw, String> {
        let Some(s) = zipf else { return Ok(KeyDraw::Uniform(n)) };
        let zipf = rand_distr::Zipf::new(n, s).map_err(|e| format!("zipf exponent {s}: {e}"))?;
        // An odd multiplier near n / golden ratio, moved to the next value coprime to n.
        let mut step = ((n as f64 / 1.618_033_988_75) as u64) | 1;
        while gcd(step, n) != 1 {
            step += 2;
        }
        Ok(KeyDraw::Zipf { zipf, n, step: step % n.max(1) })
    }

    #[inline]
    pub(crate) fn draw(&self, rng: &mut SmallRng) -> u64 {
        match *self {
            KeyDraw::Uniform(n) => rng.gen_range(0..n),
            KeyDraw::Zipf { zipf, n, step } => {
                let rank = (rng.sample(zipf) as u64).clamp(1, n) - 1;
                ((u128::from(rank) * u128::from(step)) % u128::from(n)) as u64
            }
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn worker<S: Source>(tree: &S, keys: KeyDraw, seed: u64, stop: &AtomicBool) -> Result<Tally, S::Error> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut tally = Tally::default();
    let mut reader = tree.reader();
    while !stop.load(Relaxed) {
        for i in 0..BATCH {
            let k = keys.draw(&mut rng);
            let key = k.to_be_bytes();
            let timed = (i % LATENCY_SAMPLE == 0).then(Instant::now);
            let found = tree.get_with(&mut reader, &key, |v| v.map(|v| is_value_for(v, &key)));
            if let Some(t0) = timed {
                let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                tally.latency.saturating_record(ns.max(1));
            }
            match found {
                Ok(Some(true)) => continue,
                Ok(Some(false)) => tally.wrong += 1,
                Ok(None) => tally.missing += 1,
                Err(e) => {
                    stop.store(true, Relaxed);
                    return Err(e);
                }
            }
            tally.first_bad.get_or_insert(k);
        }
        tally.ops += BATCH;
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zipf draws stay in range, rank r always maps to the same key (a bijection of ranks onto
    /// the working set), and the hottest key gets its Zipf share: 1 / H(1000) = 13.4% for s = 1.
    #[test]
    fn zipf_keys_are_a_skewed_permutation_of_the_working_set() {
        let n = 1000u64;
        let keys = KeyDraw::new(n, Some(1.0)).unwrap();
        let KeyDraw::Zipf { step, .. } = keys else { panic!("expected a Zipf draw") };
        let mapped: std::collections::HashSet<u64> = (0..n).map(|r| r * step % n).collect();
        assert_eq!(mapped.len() as u64, n, "ranks map one-to-one onto keys");
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = vec![0u32; n as usize];
        let draws = 200_000;
        for _ in 0..draws {
            counts[keys.draw(&mut rng) as usize] += 1;
        }
        let harmonic: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
        let top = f64::from(*counts.iter().max().unwrap()) / f64::from(draws);
        assert!((top - 1.0 / harmonic).abs() < 0.01, "hottest key share {top}");
        // The second most popular rank is not next to the first: hot keys are scattered.
        assert!(step > 1 && step < n - 1);
        assert!(KeyDraw::new(n, Some(-1.0)).is_err() && KeyDraw::new(n, Some(f64::NAN)).is_err());
    }

    #[test]
    fn repetitions_interleave_modes() {
        let dir = std::env::temp_dir().join(format!("swizzledb-interleave-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = Config {
            experiment: "lookup".into(),
            records: 2000,
            working_set: 2000,
            zipf: None,
            threads: 1,
            modes: PoolMode::ALL.to_vec(),
            pool_bytes: 8 << 20,
            page_size: 4096,
            policy: PolicySpec::default(),
            duration: 0.02,
            timed_ops: None,
            warmup: 0.0,
            repeat: 3,
            seed: 1,
            direct_io: false,
            background_eviction: true,
            optimistic_leaf_reads: false,
            baseline: None,
            dir: dir.clone(),
            bp_queue: (64, 32),
            lmdb_reads_per_txn: LMDB_READS_PER_TXN,
        };
        let (results, open) = run(&cfg, Progress::off()).unwrap();
        drop(open);
        let _ = std::fs::remove_dir_all(&dir);
        let mut order: Vec<(Instant, usize, PoolMode)> = results
            .iter()
            .flat_map(|r| r.runs.iter().map(move |m| (m.started, m.repetition, r.mode)))
            .collect();
        order.sort_by_key(|o| o.0);
        let seq: Vec<(usize, PoolMode)> = order.into_iter().map(|(_, rep, mode)| (rep, mode)).collect();
        let want: Vec<(usize, PoolMode)> =
            (0..3).flat_map(|rep| PoolMode::ALL.into_iter().map(move |m| (rep, m))).collect();
        assert_eq!(seq, want, "A B C A B C ...");
    }

    #[test]
    fn values_follow_keys() {
        let key = 0x0102_0304_0506_0708_u64.to_be_bytes();
        let v = value_for(&key);
        assert!(is_value_for(&v, &key));
        assert!(!is_value_for(&v[..112], &key));
        assert!(!is_value_for(&v, &7_u64.to_be_bytes()));
    }

    #[test]
    fn default_pool_holds_the_data_set() {
        assert_eq!(default_pool_bytes(1), 64 << 20);
        assert_eq!(default_pool_bytes(1_000_000), 191 << 20);
        assert!(default_pool_bytes(u64::MAX) > 0);
    }
}
