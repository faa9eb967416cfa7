//! `swizzledb crash-test`: run a logged write workload in a child process, kill it with SIGKILL
//! at a random moment, restart, and check that every acknowledged write survived, that nothing
//! unacknowledged beyond the one write in flight is visible and that the tree is valid; repeat.
//!
//! The writer process runs `--threads` writers. Writer `t` writes only the keys congruent to `t`
//! (and its `__progress<t>` key), so writers never conflict and each one's history can be checked
//! on its own. It runs steps numbered 1, 2, …, each a deterministic function of the seed, `t`,
//! its number and the state its earlier steps left, and prints `ack t N` once step N returned Ok.
//! Every value a step writes names the step (`N:j:...`).
//!
//! Two configurations (`--config`):
//!
//! - `default`: the engine's defaults. The database is created and opened with
//!   `Database::builder()` plus only the pool settings and a small log (`--log-segment-kib`,
//!   default 64, and `--max-log-kib`, default 1024), so the classical page cleaner runs during
//!   short runs, and background fuzzy checkpoints every `--checkpoint-ms` (default 5), so that
//!   checkpoints and cleaner rounds race the writers' commits; logging, sync commit, locking and
//!   page size are the engine's defaults. A step is either one auto-commit operation (`Tree::upsert` of a new value,
//!   `Tree::insert` of a key the writer's state lacks, `Tree::delete` of a key it holds) or a
//!   multi-operation `Transaction` (puts and deletes, and `__progress<t>` = N) acknowledged when
//!   its commit returned Ok. Every step therefore changes the writer's state. The writer learns
//!   where to continue from the harness (`--resume`, the steps the checker found committed) and
//!   reads its state from the database; it also checks what each operation returns (whether
//!   the key existed) against that state. The checker opens the database after each kill with
//!   `Database::builder()` defaults plus the pool settings and the log segment size (a log must
//!   be opened with the segment size it was created with), so the open follows the file.
//! - `transactions` (the original harness): only multi-operation transactions, each also writing
//!   `__progress<t>` (from which the restarted writer continues), with `.logging(true)`,
//!   `CommitMode::Sync`, 4 KiB pages, 1 MiB log segments and background fuzzy checkpoints
//!   every `--checkpoint-ms`.
//!
//! After a kill, each writer's keys must hold exactly the state after its steps 1..=A, or
//! 1..=A+1 (A = its last acknowledged step: the next one may have committed without being
//! acknowledged). The checker keeps each writer's expected state and computes both from it;
//! since every step changes the state, the two differ and the match decides how far the writer
//! got. Anything else is counted: values of acknowledged steps that are missing, older or (for
//! a delete) still present are lost commits; values of later steps, or a part of the in-flight
//! transaction, are visible uncommitted changes. The tree must pass `Tree::verify`. The writers
//! report the page cleaner's and the checkpoints' counters as they run; the summary sums the
//! last report of each run. The first line of the output names the configuration, including the
//! checkpoint interval and the log bound.

use clap::{Args, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;
use swizzledb::{CheckpointKind, Cleaner, CommitMode, Database, PoolMode, RestartMode, Tree};
use swizzledb_buffer::PageId;

use crate::experiments::bench::wal::copy_database;
use crate::support::child::Child;
use crate::Usage;

/// `--checkpoint-kind`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckpointArg {
    /// Fuzzy checkpoints from the pool and the transaction table (R7)
    Classical,
    /// Checkpoints computed from the log since the previous one (R19)
    Decoupled,
}

impl CheckpointArg {
    fn kind(self) -> CheckpointKind {
        match self {
            CheckpointArg::Classical => CheckpointKind::Classical,
            CheckpointArg::Decoupled => CheckpointKind::Decoupled,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CheckpointArg::Classical => "classical",
            CheckpointArg::Decoupled => "decoupled",
        }
    }
}

/// `--cleaner`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CleanerArg {
    /// Writes back the pages holding old log (R15)
    Classical,
    /// Replays the log archive onto the data file (R20)
    Decoupled,
}

impl CleanerArg {
    fn cleaner(self) -> Cleaner {
        match self {
            CleanerArg::Classical => Cleaner::Classical,
            CleanerArg::Decoupled => Cleaner::Decoupled,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CleanerArg::Classical => "classical",
            CleanerArg::Decoupled => "decoupled",
        }
    }
}

/// `--restart`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum RestartArg {
    /// Analysis, redo and undo before open returns (R8–R10)
    Classical,
    /// Analysis from the log archive, redo per page on fetch and in the background (R22)
    Instant,
}

impl RestartArg {
    fn mode(self) -> RestartMode {
        match self {
            RestartArg::Classical => RestartMode::Classical,
            RestartArg::Instant => RestartMode::Instant,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RestartArg::Classical => "classical",
            RestartArg::Instant => "instant",
        }
    }
}

/// The workload and database settings the writer runs with.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Config {
    /// The engine's defaults (auto-commit single operations mixed with transactions, the page
    /// cleaner on a small log bound)
    Default,
    /// Multi-operation transactions only, explicit logging and sync commit, frequent checkpoints
    Transactions,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Default => "default",
            Config::Transactions => "transactions",
        }
    }
}

/// Options of `swizzledb crash-test`.
#[derive(Args, Debug)]
pub struct CrashTestArgs {
    /// Number of times the writer is killed
    #[arg(long, default_value_t = 50)]
    kills: u32,
    /// Seed of the workload and of the kill moments
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Longest time the writer runs before it is killed, in milliseconds (each run lasts a random
    /// time up to this)
    #[arg(long, default_value_t = 200)]
    max_run_ms: u64,
    /// Keys the writers write
    #[arg(long, default_value_t = 3000)]
    keys: u32,
    /// Percent of the values written that are large, 3,000 to 12,000 bytes, kept in overflow
    /// chains (btree README T22: written before their leaf, freed with the change that replaces
    /// them); the others are 8 to 300 bytes. The run's tree must take a 12,000-byte value
    /// (Tree::max_value_len: one record of a log segment, an eighth of the pool): smaller
    /// --log-segment-kib or --pool-kib are refused
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    large_values: u8,
    /// Concurrent writers (each with its own keys and its own sequence of steps)
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Workload and settings: `default` mixes auto-commit single operations with transactions on
    /// the engine's default settings and a small log bound (the page cleaner runs);
    /// `transactions` runs multi-operation transactions only, with explicit logging, sync commit
    /// and checkpoints every --checkpoint-ms
    #[arg(long, value_enum, default_value_t = Config::Default)]
    config: Config,
    /// Bound of the log kept on disk, in KiB (at least four log segments; default: 1024 with
    /// --config default, the engine's default with --config transactions)
    #[arg(long)]
    max_log_kib: Option<u64>,
    /// Log segment size in KiB (default: 64 with --config default, 1024 with --config
    /// transactions; at least two pages: 16 with --config default, 8 with --config
    /// transactions; with --large-values, enough for a 12,000-byte value in one log record)
    #[arg(long)]
    log_segment_kib: Option<u64>,
    /// Interval of the background fuzzy checkpoints in the writer, in milliseconds, so that they
    /// race the writers' commits (default: 5 with --config default, 50 with --config
    /// transactions; at least 1)
    #[arg(long)]
    checkpoint_ms: Option<u64>,
    /// Buffer mode
    #[arg(long, default_value = "swizzling", value_parser = parse_mode)]
    mode: PoolMode,
    /// Pool size in KiB (small, so pages are evicted and written while the writer runs; at least
    /// 16 pages: 128 with --config default, 64 with --config transactions; main-memory mode
    /// ignores it)
    #[arg(long, default_value_t = 256)]
    pool_kib: usize,
    /// Keep the log archive (RECOVERY.md R17): checkpoints archive the log while the writers run
    /// and are killed; the checker opens with it too (the archive must continue the log) and
    /// then reads every archived entry (each checksummed)
    #[arg(long)]
    log_archive: bool,
    /// After each kill, damage this many node pages of the file, picked at random (their
    /// checksums then fail), before the checker opens it: restart and the checker's reads must
    /// rebuild them by single-page recovery (RECOVERY.md R18) and lose nothing. Needs
    /// --log-archive
    #[arg(long, default_value_t = 0)]
    damage_pages: usize,
    /// Which checkpoints the writer takes: classical (fuzzy, RECOVERY.md R7) or decoupled
    /// (computed from the log, R19)
    #[arg(long, value_enum, default_value_t = CheckpointArg::Classical)]
    checkpoint_kind: CheckpointArg,
    /// Which page cleaner the writer runs: classical (R15) or decoupled (replays the log
    /// archive onto the file, R20; needs --log-archive)
    #[arg(long, value_enum, default_value_t = CleanerArg::Classical)]
    cleaner: CleanerArg,
    /// Write elision (R21): evictions drop dirty pages without writing them, and reads rebuild
    /// them; needs --cleaner decoupled
    #[arg(long)]
    write_elision: bool,
    /// Lazy split images (R29): splits log their new node as a split-off of the old one, and
    /// its image only when the old node's history would be lost first — the engine's default
    /// without --log-archive and with classical checkpoints; not with --log-archive or
    /// --checkpoint-kind decoupled
    #[arg(long, conflicts_with = "eager_split_images")]
    lazy_split_images: bool,
    /// Splits log their new node's image (LabOptions::lazy_split_images(false)), as they do by
    /// default only with --log-archive or --checkpoint-kind decoupled
    #[arg(long)]
    eager_split_images: bool,
    /// How the writer and the checker restart after each kill: classical (R8–R10) or instant
    /// (R22: the writer is killed while pages are still pending, and its next instance
    /// restarts from the same checkpoint); instant needs --log-archive
    #[arg(long, value_enum, default_value_t = RestartArg::Classical)]
    restart: RestartArg,
    /// Directory for the database, created if missing, where it stays after the run; a fresh
    /// one: a database of an earlier run there (crash.swz) is refused (default: a temporary
    /// directory, removed afterwards)
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Keep the crashed database of each kill whose check fails, as it was before the restart
    /// that checked it, in DIR/failed-kill-N (the file and its log directory): opening that
    /// copy repeats the failing restart. Needs --dir; costs a copy of the database per kill
    #[arg(long, requires = "dir")]
    keep_failed: bool,
    /// Internal: run as the killed writer on the database at this path
    #[arg(long, hide = true)]
    child: Option<PathBuf>,
    /// Internal (--config default): the steps each writer has committed, comma-separated
    #[arg(long, hide = true)]
    resume: Option<String>,
}

fn parse_mode(s: &str) -> Result<PoolMode, String> {
    match s {
        "traditional" => Ok(PoolMode::Traditional),
        "swizzling" => Ok(PoolMode::Swizzling),
        "main-memory" => Ok(PoolMode::MainMemory),
        _ => Err(format!("unknown mode {s:?}: use traditional, swizzling or main-memory")),
    }
}

const TREE: &str = "crash";

/// The key under which writer `t` stores the number of its last transaction.
fn progress_key(t: u32) -> Vec<u8> {
    format!("__progress{t:02}").into_bytes()
}

/// One write of a transaction.
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// Transaction `n` of writer `t` of `threads` (without the progress key). Writer `t` writes
/// only the keys congruent to `t` modulo `threads`, so writers never conflict and each one's
/// history can be checked on its own.
fn transaction(seed: u64, keys: u32, t: u32, threads: u32, n: u64, large: u8) -> Vec<Op> {
    let mut rng =
        SmallRng::seed_from_u64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(t) << 56));
    let per_writer = (keys / threads).max(1);
    let count = rng.gen_range(1..=8);
    (0..count)
        .map(|j| {
            let key = writer_key(rng.gen_range(0..per_writer), t, threads);
            if rng.gen_bool(0.2) {
                Op::Delete(key)
            } else {
                Op::Put(key, value(n, j, value_len(&mut rng, large)))
            }
        })
        .collect()
}

/// The `i`th key of writer `t`.
fn writer_key(i: u32, t: u32, threads: u32) -> Vec<u8> {
    format!("key{:06}", i * threads + t).into_bytes()
}

/// The longest large value the writers write (`--large-values`).
const LARGEST_VALUE: usize = 11_999;

/// A value's length: large (overflow chains) in `large` percent of the draws.
fn value_len(rng: &mut SmallRng, large: u8) -> usize {
    // (No draw with no large values: each seed's workload stays what it was before the option.)
    if large > 0 && rng.gen_range(0..100) < large {
        rng.gen_range(3000..LARGEST_VALUE + 1)
    } else {
        rng.gen_range(8..300)
    }
}

/// The value write `j` of step `n` writes: `n:j:` padded to `len` bytes.
fn value(n: u64, j: usize, len: usize) -> Vec<u8> {
    let mut value = format!("{n}:{j}:").into_bytes();
    value.resize(len.max(value.len()), b'.');
    value
}

/// One step of a writer: acknowledged once it returned Ok.
enum Step {
    /// A multi-operation transaction (its last write puts the progress key).
    Txn(Vec<Op>),
    /// Auto-commit `Tree::upsert`.
    Upsert(Vec<u8>, Vec<u8>),
    /// Auto-commit `Tree::insert` of a key the writer's state lacks.
    Insert(Vec<u8>, Vec<u8>),
    /// Auto-commit `Tree::delete` of a key the writer's state holds.
    Delete(Vec<u8>),
}

impl Step {
    /// Step `n` of writer `t`, whose keys hold `state` (the state after steps 1..n).
    fn new(args: &CrashTestArgs, t: u32, n: u64, state: &State) -> Step {
        let txn = || {
            let mut ops = transaction(args.seed, args.keys, t, args.threads, n, args.large_values);
            ops.push(Op::Put(progress_key(t), n.to_string().into_bytes()));
            Step::Txn(ops)
        };
        if args.config == Config::Transactions {
            return txn();
        }
        let mut rng = SmallRng::seed_from_u64(
            args.seed ^ 0xA076_1D64_78BD_642F ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ (u64::from(t) << 56),
        );
        let per_writer = (args.keys / args.threads).max(1);
        let start = rng.gen_range(0..per_writer);
        let len = value_len(&mut rng, args.large_values);
        let upsert = Step::Upsert(writer_key(start, t, args.threads), value(n, 0, len));
        match rng.gen_range(0..100) {
            0..=29 => txn(),
            30..=59 => upsert,
            60..=79 => (0..per_writer)
                .map(|d| writer_key((start + d) % per_writer, t, args.threads))
                .find(|k| !state.contains_key(k))
                .map_or(upsert, |k| Step::Insert(k, value(n, 0, len))),
            _ => {
                let from = writer_key(start, t, args.threads);
                state
                    .range(from.clone()..)
                    .chain(state.range(..from))
                    .map(|(k, _)| k)
                    .find(|k| k.starts_with(b"key"))
                    .map_or(upsert, |k| Step::Delete(k.clone()))
            }
        }
    }

    /// Applies the step to `state`.
    fn apply(&self, state: &mut State) {
        let mut write = |op: &Op| match op {
            Op::Put(k, v) => {
                state.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                state.remove(k);
            }
        };
        match self {
            Step::Txn(ops) => ops.iter().for_each(write),
            Step::Upsert(k, v) | Step::Insert(k, v) => write(&Op::Put(k.clone(), v.clone())),
            Step::Delete(k) => write(&Op::Delete(k.clone())),
        }
    }

    /// The keys the step writes.
    fn keys(&self) -> Vec<&Vec<u8>> {
        match self {
            Step::Txn(ops) => ops
                .iter()
                .map(|op| match op {
                    Op::Put(k, _) | Op::Delete(k) => k,
                })
                .collect(),
            Step::Upsert(k, _) | Step::Insert(k, _) | Step::Delete(k) => vec![k],
        }
    }

    /// Runs the step against the database; `state` is the writer's state before it, to check
    /// what the auto-commit operations return.
    fn run(&self, db: &Database, tree: &Tree, state: &State) -> Result<(), String> {
        let e = |e: &dyn std::fmt::Display| e.to_string();
        match self {
            // Writers own disjoint keys, but a neighbour's key can close a gap this one writes
            // (next-key locking): `transact` retries a transaction whose lock was refused.
            Step::Txn(ops) => db
                .transact(|txn| {
                    for op in ops {
                        match op {
                            Op::Put(k, v) => txn.put(tree, k, v)?,
                            Op::Delete(k) => txn.delete(tree, k)?,
                        };
                    }
                    Ok(())
                })
                .map_err(|x| e(&x)),
            Step::Upsert(k, v) => {
                let existed = tree.upsert(k, v).map_err(|x| e(&x))?;
                expect_existed("upsert", k, existed, state.contains_key(k))
            }
            Step::Insert(k, v) => tree.insert(k, v).map_err(|x| format!("insert of a new key: {x}")),
            Step::Delete(k) => {
                let existed = tree.delete(k).map_err(|x| e(&x))?;
                expect_existed("delete", k, existed, true)
            }
        }
    }
}

fn expect_existed(what: &str, key: &[u8], existed: bool, expected: bool) -> Result<(), String> {
    if existed == expected {
        Ok(())
    } else {
        Err(format!(
            "{what} of {} found the key {}, but the writer's committed steps {}",
            String::from_utf8_lossy(key),
            if existed { "present" } else { "absent" },
            if expected { "left it present" } else { "had not written it" }
        ))
    }
}

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// What the checker expects of one writer: its state after its first `step` steps.
#[derive(Clone, Default)]
struct Model {
    step: u64,
    state: State,
    /// The step that last wrote each key (put or delete).
    written_by: BTreeMap<Vec<u8>, u64>,
    auto_commits: u64,
    transactions: u64,
}

impl Model {
    /// Applies the writer's next step.
    fn advance(&mut self, args: &CrashTestArgs, t: u32) {
        let n = self.step + 1;
        let step = Step::new(args, t, n, &self.state);
        for k in step.keys() {
            self.written_by.insert(k.clone(), n);
        }
        step.apply(&mut self.state);
        if matches!(step, Step::Txn(_)) {
            self.transactions += 1;
        } else {
            self.auto_commits += 1;
        }
        self.step = n;
    }

    fn advance_to(&mut self, args: &CrashTestArgs, t: u32, n: u64) {
        while self.step < n {
            self.advance(args, t);
        }
    }
}

/// Which writer a key belongs to.
fn writer_of(key: &[u8], threads: u32) -> Option<u32> {
    let s = std::str::from_utf8(key).ok()?;
    if let Some(t) = s.strip_prefix("__progress") {
        return t.parse().ok();
    }
    Some(s.strip_prefix("key")?.parse::<u32>().ok()? % threads)
}

/// The step number a value names (`n:j:...`, or a progress value `n`), if any.
fn step_of(value: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(value).ok()?;
    s.split(':').next()?.trim_end_matches('.').parse().ok()
}

fn pool_bytes(args: &CrashTestArgs) -> usize {
    if args.mode == PoolMode::MainMemory {
        64 << 20
    } else {
        args.pool_kib << 10
    }
}

fn log_segment_bytes(args: &CrashTestArgs) -> u64 {
    let default = match args.config {
        Config::Default => 64,
        Config::Transactions => 1024,
    };
    args.log_segment_kib.unwrap_or(default) << 10
}

fn max_log_bytes(args: &CrashTestArgs) -> Option<u64> {
    match args.config {
        Config::Default => Some(args.max_log_kib.unwrap_or(1024) << 10),
        Config::Transactions => args.max_log_kib.map(|k| k << 10),
    }
}

/// The writer's checkpoint interval in milliseconds (`--checkpoint-ms`, or the configuration's
/// default).
fn checkpoint_ms(args: &CrashTestArgs) -> u64 {
    let default = match args.config {
        Config::Default => 5,
        Config::Transactions => 50,
    };
    args.checkpoint_ms.unwrap_or(default)
}

/// Who opens the database: the writer (and the creator), or the checker after a kill.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Opener {
    Writer,
    Checker,
}

/// The page size: 4 KiB with --config transactions, the engine's default otherwise.
fn page_size(args: &CrashTestArgs) -> usize {
    match args.config {
        Config::Transactions => 4096,
        Config::Default => swizzledb_buffer::page::DEFAULT_PAGE_SIZE,
    }
}

fn builder(args: &CrashTestArgs, who: Opener) -> swizzledb::Builder {
    let b = Database::builder()
        .mode(args.mode)
        .pool_bytes(pool_bytes(args))
        .log_archive(args.log_archive)
        .lab(|l| {
            l.checkpoint_kind(args.checkpoint_kind.kind())
                .cleaner(args.cleaner.cleaner())
                .write_elision(args.write_elision)
        })
        .restart_mode(args.restart.mode());
    let b = crate::experiments::common::with_split_images(b, args.lazy_split_images, args.eager_split_images);
    match args.config {
        Config::Transactions => {
            let b = b
                .logging(true)
                .commit_mode(CommitMode::Sync)
                .page_size(page_size(args))
                .log_segment_bytes(log_segment_bytes(args))
                .checkpoint_interval(Some(Duration::from_millis(checkpoint_ms(args))));
            match max_log_bytes(args) {
                Some(bytes) => b.max_log_bytes(bytes),
                None => b,
            }
        }
        Config::Default => {
            // The log must be opened with the segment size it was created with; everything
            // else the checker leaves to the defaults and the file.
            let b = b.log_segment_bytes(log_segment_bytes(args));
            if who == Opener::Checker {
                return b;
            }
            b.max_log_bytes(max_log_bytes(args).expect("the default config has a bound"))
                .checkpoint_interval(Some(Duration::from_millis(checkpoint_ms(args))))
        }
    }
}

/// The writer process's report of its page cleaner: counters since it opened, and the largest
/// log it saw on disk.
#[derive(Copy, Clone, Default, Debug)]
struct CleanerReport {
    /// Checkpoints the writer took (background and the cleaner's).
    checkpoints: u64,
    rounds: u64,
    pages: u64,
    throttled: u64,
    failures: u64,
    max_log_bytes: u64,
}

impl CleanerReport {
    fn line(&self) -> String {
        format!(
            "cleaner {} {} {} {} {} {}",
            self.checkpoints, self.rounds, self.pages, self.throttled, self.failures, self.max_log_bytes
        )
    }

    fn parse(words: &[&str]) -> Option<CleanerReport> {
        let n: Vec<u64> = words.iter().map(|w| w.parse().ok()).collect::<Option<_>>()?;
        let [checkpoints, rounds, pages, throttled, failures, max_log_bytes] = n[..] else { return None };
        Some(CleanerReport { checkpoints, rounds, pages, throttled, failures, max_log_bytes })
    }
}

fn say(out: &Mutex<std::io::Stdout>, line: &str) -> std::io::Result<()> {
    let mut o = out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    writeln!(o, "{line}")?;
    o.flush()
}

/// The writers: restart the database, each continues after its last committed step, prints
/// `ack T N` after each acknowledged step, and runs until killed. A writer that fails ends the
/// process (exit code 1), which the harness counts.
fn child(args: &CrashTestArgs, path: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let db = builder(args, Opener::Writer).open(path)?;
    let tree = db.tree(TREE)?;
    let resume: Option<Vec<u64>> = match (args.config, &args.resume) {
        (Config::Transactions, _) => None,
        (Config::Default, Some(list)) => Some(list.split(',').map(str::parse).collect::<Result<_, _>>()?),
        (Config::Default, None) => return Err("--config default needs --resume".into()),
    };
    // Each writer's state, as the database holds it now (the checker has compared it with the
    // writer's committed steps).
    let mut states = vec![State::new(); args.threads as usize];
    for kv in tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded) {
        let (k, v) = kv?;
        if let Some(t) = writer_of(&k, args.threads) {
            states.get_mut(t as usize).ok_or("a key of an unknown writer")?.insert(k, v);
        }
    }
    let out = Mutex::new(std::io::stdout());
    let fail = |what: String| -> ! {
        eprintln!("{what}");
        std::process::exit(1)
    };
    std::thread::scope(|scope| {
        for (t, mut state) in (0..args.threads).zip(states) {
            let (db, tree, out, resume) = (&db, &tree, &out, &resume);
            scope.spawn(move || {
                let start = match resume {
                    Some(r) => r.get(t as usize).copied().unwrap_or(0),
                    None => state.get(&progress_key(t)).and_then(|v| step_of(v)).unwrap_or(0),
                };
                for n in start + 1.. {
                    let step = Step::new(args, t, n, &state);
                    if let Err(e) = step.run(db, tree, &state) {
                        fail(format!("writer {t}, step {n}: {e}"));
                    }
                    step.apply(&mut state);
                    if let Err(e) = say(out, &format!("ack {t} {n}")) {
                        fail(format!("writer {t}: writing to stdout: {e}"));
                    }
                }
            });
        }
        // The page cleaner's and the checkpoints' counters, for the summary (the last report
        // before the kill).
        let mut last = String::new();
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let s = db.cleaner_stats().unwrap_or_default();
            let report = CleanerReport {
                checkpoints: db.checkpoint_counts().checkpoints,
                rounds: s.rounds,
                pages: s.pages_written,
                throttled: s.throttled,
                failures: s.failures,
                max_log_bytes: s.max_log_bytes_seen.max(db.log_bytes().unwrap_or(0)),
            };
            let line = report.line();
            if line != last {
                if let Err(e) = say(&out, &line) {
                    fail(format!("writing to stdout: {e}"));
                }
                last = line;
            }
        }
    })
}

/// What one verification found.
#[derive(Default)]
struct Findings {
    lost: BTreeSet<(u32, u64)>,
    uncommitted: BTreeSet<(u32, u64)>,
    invalid: bool,
    /// Pages rebuilt by single-page recovery, in restart and on fetch.
    repaired: u64,
    /// Whether the checker's restart was instant (R22), and the pages it left to redo.
    instant: bool,
    deferred: u64,
}

/// Damages `n` node pages of the file at `path`, picked with `rng` among the pages whose
/// checksum holds and that are leaves or inner nodes: 64 bytes in the middle of each are
/// overwritten. Returns how many were damaged (fewer if the file has fewer node pages).
fn damage_pages(path: &Path, page_size: usize, n: usize, rng: &mut SmallRng) -> std::io::Result<usize> {
    use rand::seq::SliceRandom;
    use std::os::unix::fs::FileExt;
    use swizzledb_buffer::page::{self, PageType};
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let bytes = std::fs::read(path)?;
    let mut nodes: Vec<u64> = (1..bytes.len() / page_size)
        .filter(|&i| {
            let p = &bytes[i * page_size..(i + 1) * page_size];
            PageId::new(i as u64).is_some_and(|id| page::verify(p, id).is_ok())
                && matches!(page::page_type(p), Some(PageType::Leaf | PageType::Inner))
        })
        .map(|i| i as u64)
        .collect();
    nodes.shuffle(rng);
    nodes.truncate(n);
    for &id in &nodes {
        file.write_all_at(&[0xA5; 64], id * page_size as u64 + page_size as u64 / 2)?;
    }
    file.sync_all()?;
    Ok(nodes.len())
}

/// Opens (restarting) the database and compares each writer's keys with the states after its
/// steps 1..=acked and 1..=acked+1; moves each model to the state found (or to acked). With
/// the log archive, its runs must follow each other, and every run not read back at an earlier
/// kill (`runs_read`, by LSN range: runs never change, and a merge makes a new one) must read
/// back whole; reading all of them after every kill made the tool's time grow with the square
/// of the kills.
fn verify(
    args: &CrashTestArgs,
    path: &Path,
    acked: &[u64],
    models: &mut [Model],
    runs_read: &mut std::collections::HashSet<(u64, u64)>,
) -> Findings {
    let mut found = Findings::default();
    for (t, model) in models.iter_mut().enumerate() {
        model.advance_to(args, t as u32, acked[t]);
    }
    let db = match builder(args, Opener::Checker).open(path) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("restart failed after {acked:?} acknowledged steps: {e}");
            found.invalid = true;
            return found;
        }
    };
    if !db.is_logged() {
        eprintln!("the database opened without its log");
        found.invalid = true;
    }
    found.instant = db.restart_stats().instant;
    found.deferred = db.restart_stats().pages_deferred;
    // Structure first: a scan of a damaged tree need not end.
    if let Err(e) = db.tree(TREE).map_err(|e| e.to_string()).and_then(|t| t.verify().map(|_| ())) {
        eprintln!("the tree is invalid after {acked:?} acknowledged steps: {e}");
        found.invalid = true;
        return found;
    }
    let got: State = match db.tree(TREE).map(|t| {
        t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).collect::<Result<State, _>>()
    }) {
        Ok(Ok(state)) => state,
        other => {
            eprintln!("reading the tree failed: {:?}", other.err().map(|e| e.to_string()));
            found.invalid = true;
            return found;
        }
    };
    for k in got.keys() {
        if writer_of(k, args.threads).is_none_or(|t| t >= args.threads) {
            eprintln!("a key no writer writes: {}", String::from_utf8_lossy(k));
            found.invalid = true;
        }
    }
    for (t, model) in (0..args.threads).zip(models.iter_mut()) {
        let a = acked[t as usize];
        let mine: State = got
            .iter()
            .filter(|(k, _)| writer_of(k, args.threads) == Some(t))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut next = model.clone();
        next.advance(args, t);
        let (before, after) = (&model.state, &next.state);
        assert_ne!(before, after, "every step changes its writer's state");
        if mine == *before {
            continue;
        }
        if mine == *after {
            *model = next;
            continue;
        }
        let keys: BTreeSet<&Vec<u8>> = mine.keys().chain(before.keys()).chain(after.keys()).collect();
        let (mut from_next, mut not_from_next) = (false, false);
        for k in keys {
            let (g, b, n) = (mine.get(k), before.get(k), after.get(k));
            if b != n {
                if g == n {
                    from_next = true;
                } else if g == b {
                    not_from_next = true;
                }
            }
            if g != b && g != n {
                match g.and_then(|v| step_of(v)) {
                    Some(x) if x > a + 1 => {
                        found.uncommitted.insert((t, x));
                    }
                    _ => {
                        found.lost.insert((t, model.written_by.get(k).copied().unwrap_or(0)));
                    }
                }
            }
        }
        if from_next && not_from_next {
            found.uncommitted.insert((t, a + 1));
        }
    }
    // Rebuilt by single-page recovery (R18), or put back from the double-write area at open
    // with the log's changes after that copy (R3).
    let restart = db.restart_stats();
    found.repaired = restart.pages_repaired + restart.torn_pages_restored + db.stats().pages_repaired;
    if let Err(e) = db.close() {
        eprintln!("closing after verification failed: {e}");
        found.invalid = true;
    }
    if args.log_archive {
        let read =
            swizzledb::Archive::open(std::sync::Arc::new(swizzledb_io::OsFs), swizzledb::archive_dir(path))
                .and_then(|a| {
                    let runs = a.runs();
                    for run in &runs {
                        if runs_read.contains(&(run.begin.0, run.end.0)) {
                            continue;
                        }
                        let mut entries = a.between(run.begin, run.end)?;
                        while entries.next_entry()?.is_some() {}
                        runs_read.insert((run.begin.0, run.end.0));
                    }
                    Ok(runs)
                });
        match read {
            Ok(runs) if runs.windows(2).all(|w| w[0].end == w[1].begin) => {}
            Ok(runs) => {
                eprintln!("the log archive's runs do not follow each other: {runs:?}");
                found.invalid = true;
            }
            Err(e) => {
                eprintln!("the log archive does not read back: {e}");
                found.invalid = true;
            }
        }
    }
    found
}

/// The last acknowledged step per writer thread and the last cleaner report in a child's output.
fn parse_child_output(lines: &[String], threads: usize) -> (Vec<Option<u64>>, CleanerReport) {
    let mut last = vec![None; threads];
    let mut cleaner = CleanerReport::default();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["ack", t, n] => {
                if let (Ok(t), Ok(n)) = (t.parse::<usize>(), n.parse::<u64>()) {
                    if let Some(slot) = last.get_mut(t) {
                        *slot = Some(n);
                    }
                }
            }
            ["cleaner", ref rest @ ..] => {
                if let Some(report) = CleanerReport::parse(rest) {
                    cleaner = report;
                }
            }
            _ => {}
        }
    }
    (last, cleaner)
}

/// The arguments of a child run, built like a `Command`'s.
#[derive(Default)]
struct ChildArgs(Vec<std::ffi::OsString>);

impl ChildArgs {
    fn arg(&mut self, a: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.0.push(a.as_ref().to_owned());
        self
    }

    fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(&mut self, args: I) -> &mut Self {
        for a in args {
            self.arg(a);
        }
        self
    }
}

impl IntoIterator for ChildArgs {
    type Item = std::ffi::OsString;
    type IntoIter = std::vec::IntoIter<std::ffi::OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Copies the crashed database at `path` (its file and its log directory, with the archive in
/// it) into directory `to`, replacing what was there.
fn keep_crashed(path: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    copy_database(path, &to.join(path.file_name().expect("the database path names a file")))
}

/// A line on standard output of the harness (not of the writer, whose lines its parent reads);
/// a closed pipe (`| head`) is no error ([`print`](crate::support::output::print)).
macro_rules! say {
    ($($arg:tt)*) => {
        crate::support::output::print(format!("{}\n", format_args!($($arg)*)))?
    };
}

/// Runs the harness: `kills` rounds of start, run, SIGKILL, verify.
pub fn run(args: &CrashTestArgs) -> Result<ExitCode, Box<dyn Error>> {
    if let Some(path) = &args.child {
        return child(args, path);
    }
    validate(args)?;
    let segment = log_segment_bytes(args);
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let path = dir.join("crash.swz");
    // The database of an earlier run, kept in --dir for a look at it: refused before anything
    // runs, naming what to do, rather than as `create`'s "the database file exists" (exit 1).
    if [path.clone(), swizzledb::wal_dir(&path)].iter().any(|p| p.symlink_metadata().is_ok()) {
        return Err(crate::UnusablePath(format!(
            "--dir {} holds the database of an earlier crash test (crash.swz, crash.swz.wal): remove them, \
             or choose a fresh directory",
            dir.display()
        ))
        .into());
    }
    {
        let db = builder(args, Opener::Writer).create(&path)?;
        db.create_tree(TREE)?;
        db.close()?;
    }
    say!(
        "crash-test: {} configuration, {} mode, {} writers{}, {} kills (seed {}); background {} checkpoints \
         every {} ms and the {} page cleaner (log bound {}) racing the commits{}; {} restart",
        args.config.name(),
        mode_name(args.mode),
        args.threads,
        match args.large_values {
            0 => String::new(),
            p => format!(" ({p}% of the values large)"),
        },
        args.kills,
        args.seed,
        args.checkpoint_kind.name(),
        checkpoint_ms(args),
        args.cleaner.name(),
        max_log_bytes(args).map_or_else(|| "the engine's default".to_owned(), |b| format!("{} KiB", b >> 10)),
        match (args.log_archive, args.write_elision, args.eager_split_images) {
            (true, true, _) => "; the log archive on; write elision",
            (true, false, _) => "; the log archive on",
            (false, _, true) => "; split images logged eagerly",
            _ => "",
        },
        args.restart.name()
    );
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let (mut lost, mut uncommitted, mut invalid) = (0usize, 0usize, 0usize);
    let mut models = vec![Model::default(); args.threads as usize];
    let mut runs_read = std::collections::HashSet::new();
    let mut cleaner = CleanerReport::default();
    let (mut damaged, mut repaired) = (0usize, 0u64);
    let (mut instant, mut deferred) = (0u32, 0u64);
    let started = std::time::Instant::now();
    for kill in 1..=args.kills {
        let command = child_command(args, segment, &models, &path);
        let child = Child::spawn(command)?;
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..=args.max_run_ms.max(1))));
        let ended = child.kill()?;
        let (last, report) = parse_child_output(&ended.lines, args.threads as usize);
        cleaner.checkpoints += report.checkpoints;
        cleaner.rounds += report.rounds;
        cleaner.pages += report.pages;
        cleaner.throttled += report.throttled;
        cleaner.failures += report.failures;
        cleaner.max_log_bytes = cleaner.max_log_bytes.max(report.max_log_bytes);
        if ended.exited_early {
            eprintln!("kill {kill}: the writer exited by itself ({}): {}", ended.status, ended.stderr.trim());
            invalid += 1;
        }
        let acked: Vec<u64> =
            models.iter().zip(&last).map(|(m, l)| l.unwrap_or(m.step).max(m.step)).collect();
        if args.damage_pages > 0 {
            damaged += damage_pages(&path, page_size(args), args.damage_pages, &mut rng)?;
        }
        let kept = dir.join("last-crash");
        if args.keep_failed {
            keep_crashed(&path, &kept)?;
        }
        let found = verify(args, &path, &acked, &mut models, &mut runs_read);
        if args.keep_failed && (!found.lost.is_empty() || !found.uncommitted.is_empty() || found.invalid) {
            let failed = dir.join(format!("failed-kill-{kill}"));
            std::fs::rename(&kept, &failed)?;
            eprintln!("kill {kill}: the crashed database is kept in {}", failed.display());
        }
        repaired += found.repaired;
        instant += u32::from(found.instant);
        deferred += found.deferred;
        if !found.lost.is_empty() || !found.uncommitted.is_empty() || found.invalid {
            eprintln!(
                "kill {kill}: {acked:?} acknowledged, lost from {:?}, uncommitted from {:?}{}",
                found.lost,
                found.uncommitted,
                if found.invalid { ", invalid" } else { "" }
            );
        }
        lost += found.lost.len();
        uncommitted += found.uncommitted.len();
        invalid += usize::from(found.invalid);
    }
    let auto_commits: u64 = models.iter().map(|m| m.auto_commits).sum();
    let transactions: u64 = models.iter().map(|m| m.transactions).sum();
    say!(
        "{} steps committed ({auto_commits} auto-commit operations, {transactions} transactions) by {} \
         writers over {} kills in {:.1} s (seed {}, {} mode, {} configuration)",
        auto_commits + transactions,
        args.threads,
        args.kills,
        started.elapsed().as_secs_f64(),
        args.seed,
        mode_name(args.mode),
        args.config.name()
    );
    say!(
        "{} checkpoints (every {} ms); page cleaner: {} rounds, {} pages written, {} begins throttled, \
         {} failed rounds; log at most {} KiB on disk (bound {})",
        cleaner.checkpoints,
        checkpoint_ms(args),
        cleaner.rounds,
        cleaner.pages,
        cleaner.throttled,
        cleaner.failures,
        cleaner.max_log_bytes >> 10,
        max_log_bytes(args).map_or_else(|| "the engine's default".to_owned(), |b| format!("{} KiB", b >> 10))
    );
    if args.damage_pages > 0 {
        say!(
            "single-page recovery: {damaged} pages damaged after the kills, {repaired} rebuilt (put back from the \
             double-write area at open, or rebuilt in restart and on fetch; the others were rewritten whole by \
             restart's redo, or are free pages no read reaches)"
        );
    }
    say!(
        "kills={} lost_commits={lost} visible_uncommitted={uncommitted} invalid_trees={invalid} \
         auto_commits={auto_commits} transactions={transactions} checkpoints={} cleaner_rounds={} \
         cleaner_pages={} damaged_pages={damaged} rebuilt_pages={repaired} instant_restarts={instant} \
         deferred_pages={deferred}",
        args.kills,
        cleaner.checkpoints,
        cleaner.rounds,
        cleaner.pages
    );
    Ok(if lost + uncommitted + invalid == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The options' checks (bad input runs nothing).
fn validate(args: &CrashTestArgs) -> Result<(), Box<dyn Error>> {
    if args.kills == 0 {
        return Err(Usage("--kills must be at least 1".into()).into());
    }
    if args.cleaner == CleanerArg::Decoupled && !args.log_archive {
        return Err(Usage("--cleaner decoupled needs --log-archive: it replays the archive".into()).into());
    }
    if args.write_elision && args.cleaner != CleanerArg::Decoupled {
        return Err(Usage("--write-elision needs --cleaner decoupled".into()).into());
    }
    if args.lazy_split_images && (args.log_archive || args.checkpoint_kind != CheckpointArg::Classical) {
        return Err(
            Usage("--lazy-split-images needs classical checkpoints and no --log-archive".into()).into()
        );
    }
    if args.restart == RestartArg::Instant && !args.log_archive {
        return Err(Usage(
            "--restart instant needs --log-archive: it reads the archive instead of the log".into(),
        )
        .into());
    }
    if args.damage_pages > 0 && !args.log_archive {
        return Err(Usage(
            "--damage-pages needs --log-archive: without the archive a damaged page's image may have left the log"
                .into(),
        )
        .into());
    }
    if args.checkpoint_ms == Some(0) {
        return Err(Usage("--checkpoint-ms must be at least 1".into()).into());
    }
    if !(1..=64).contains(&args.threads) || args.keys < args.threads {
        return Err(Usage("--threads must be 1 to 64, and --keys at least --threads".into()).into());
    }
    // The pool's floor of MIN_FRAMES pages, and a size in bytes that fits (main-memory mode
    // takes a pool of its own).
    let least_pool_kib = (swizzledb_buffer::MIN_FRAMES * page_size(args)) >> 10;
    if args.mode != PoolMode::MainMemory && args.pool_kib < least_pool_kib {
        return Err(Usage(format!(
            "--pool-kib must be at least {least_pool_kib}: the pool holds at least {} pages of {} KiB",
            swizzledb_buffer::MIN_FRAMES,
            page_size(args) >> 10
        ))
        .into());
    }
    let Some(pool_bytes) = args.pool_kib.checked_mul(1 << 10) else {
        return Err(Usage(format!(
            "--pool-kib {} is more bytes than the machine can address",
            args.pool_kib
        ))
        .into());
    };
    // The pool's other limits (at most 2^32 - 2 frames), which `create` found only after --dir
    // was made.
    if args.mode != PoolMode::MainMemory {
        crate::experiments::common::check_pool(pool_bytes as u64, page_size(args)).map_err(|e| {
            Usage(format!("--pool-kib {} is too large: {e}; give a smaller --pool-kib", args.pool_kib))
        })?;
    }
    let segment = log_segment_bytes(args);
    let least = swizzledb::MIN_SEGMENT_PAGES * page_size(args) as u64;
    if !(least..=1 << 30).contains(&segment) {
        return Err(Usage(format!(
            "--log-segment-kib must be {} to 1048576: a segment holds at least {} pages",
            least >> 10,
            swizzledb::MIN_SEGMENT_PAGES
        ))
        .into());
    }
    if max_log_bytes(args).is_some_and(|bound| bound < 4 * segment) {
        return Err(
            Usage("--max-log-kib must be at least four log segments (--log-segment-kib)".into()).into()
        );
    }
    if args.large_values > 0 {
        check_largest_value(args, segment)?;
    }
    Ok(())
}

/// `--large-values` writes values of up to [`LARGEST_VALUE`] bytes: the tree of this run's page
/// size, pool and log segments must take one (btree README T22, `Tree::max_value_len`), or every
/// writer stops at its first. Asked of a database in memory with those settings.
fn check_largest_value(args: &CrashTestArgs, segment: u64) -> Result<(), Box<dyn Error>> {
    let db = Database::builder()
        .mode(args.mode)
        .page_size(page_size(args))
        .pool_bytes(pool_bytes(args))
        .log_segment_bytes(segment)
        .max_log_bytes(4 * segment)
        .create_in_memory()?;
    let max = db.create_tree(TREE)?.max_value_len();
    db.close()?;
    if max < LARGEST_VALUE {
        // Which bound it is: an eighth of the pool's frames in overflow pages, or the log's.
        let ps = page_size(args);
        let by_pool = pool_bytes(args) / ps / 8 * swizzledb_btree::overflow::page_payload(ps);
        let raise = if by_pool < LARGEST_VALUE { "--pool-kib" } else { "--log-segment-kib" };
        return Err(Usage(format!(
            "--large-values writes values of up to {LARGEST_VALUE} bytes, but this run's tree takes at most \
             {max} (Tree::max_value_len: one record of a {} KiB log segment, an eighth of a {} KiB pool): \
             raise {raise}",
            segment >> 10,
            pool_bytes(args) >> 10
        ))
        .into());
    }
    Ok(())
}

/// The writer child of one kill: the run's options, and for the default configuration the
/// steps each writer's model has reached, to resume from.
fn child_command(args: &CrashTestArgs, segment: u64, models: &[Model], path: &Path) -> ChildArgs {
    let mut command = ChildArgs::default();
    command
        .arg("crash-test")
        .args(["--config", args.config.name(), "--seed", &args.seed.to_string()])
        .args(["--keys", &args.keys.to_string(), "--threads", &args.threads.to_string()])
        .args(["--large-values", &args.large_values.to_string()])
        .args(["--pool-kib", &args.pool_kib.to_string(), "--mode", mode_name(args.mode)])
        .args(["--log-segment-kib", &(segment >> 10).to_string()]);
    if let Some(bound) = max_log_bytes(args) {
        command.args(["--max-log-kib", &(bound >> 10).to_string()]);
    }
    command.args(["--checkpoint-ms", &checkpoint_ms(args).to_string()]);
    if args.log_archive {
        command.arg("--log-archive");
    }
    command.args(["--checkpoint-kind", args.checkpoint_kind.name(), "--cleaner", args.cleaner.name()]);
    if args.write_elision {
        command.arg("--write-elision");
    }
    if args.lazy_split_images {
        command.arg("--lazy-split-images");
    }
    if args.eager_split_images {
        command.arg("--eager-split-images");
    }
    command.args(["--restart", args.restart.name()]);
    if args.config == Config::Default {
        let resume: Vec<String> = models.iter().map(|m| m.step.to_string()).collect();
        command.args(["--resume", &resume.join(",")]);
    }
    command.arg("--child").arg(path);
    command
}

fn mode_name(mode: PoolMode) -> &'static str {
    match mode {
        PoolMode::Traditional => "traditional",
        PoolMode::Swizzling => "swizzling",
        PoolMode::MainMemory => "main-memory",
    }
}
