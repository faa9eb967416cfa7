//! `swizzledb crash-test`: run a logged write workload in a child process, kill it with SIGKILL
//! at a random moment, restart, and check that every acknowledged commit survived, that nothing
//! uncommitted is visible and that the tree is valid; repeat.
//!
//! The workload is a sequence of transactions numbered 1, 2, …, each a deterministic function of
//! the seed and its number (puts and deletes over a key space, values naming the transaction),
//! and each also writing its number under the key `__progress`. The child prints `ack N` once
//! commit N has returned. After a kill, the database must hold exactly the state after
//! transactions 1..=A, or 1..=A+1 (A = the last acknowledged: the next one may have committed
//! without being acknowledged). Anything else is counted: values of committed transactions that
//! are missing or older are lost commits; values of later transactions, or a part of the
//! in-flight one, are visible uncommitted changes.

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;
use swizzledb::{CommitMode, Database, PoolMode};

use crate::Usage;

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
    /// Keys the transactions write
    #[arg(long, default_value_t = 3000)]
    keys: u32,
    /// Buffer mode
    #[arg(long, default_value = "swizzling", value_parser = parse_mode)]
    mode: PoolMode,
    /// Pool size in KiB (small, so pages are evicted and written while the writer runs)
    #[arg(long, default_value_t = 256)]
    pool_kib: usize,
    /// Directory for the database (default: a temporary directory, removed afterwards)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Internal: run as the killed writer on the database at this path
    #[arg(long, hide = true)]
    child: Option<PathBuf>,
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
const PROGRESS: &[u8] = b"__progress";

/// One write of a transaction.
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// Transaction `n`'s writes (without the progress key).
fn transaction(seed: u64, keys: u32, n: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let count = rng.gen_range(1..=8);
    (0..count)
        .map(|j| {
            let key = format!("key{:06}", rng.gen_range(0..keys)).into_bytes();
            if rng.gen_bool(0.2) {
                Op::Delete(key)
            } else {
                let len = rng.gen_range(8..300);
                let mut value = format!("{n}:{j}:").into_bytes();
                value.resize(len.max(value.len()), b'.');
                Op::Put(key, value)
            }
        })
        .collect()
}

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn apply(state: &mut State, seed: u64, keys: u32, n: u64) {
    for w in transaction(seed, keys, n) {
        match w {
            Op::Put(k, v) => {
                state.insert(k, v);
            }
            Op::Delete(k) => {
                state.remove(&k);
            }
        }
    }
    state.insert(PROGRESS.to_vec(), n.to_string().into_bytes());
}

/// The transaction number a value names (`n:j:...`), if any.
fn txn_of(value: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(value).ok()?;
    s.split(':').next()?.trim_end_matches('.').parse().ok()
}

fn builder(args: &CrashTestArgs) -> swizzledb::Builder {
    let pool = if args.mode == PoolMode::MainMemory { 64 << 20 } else { args.pool_kib << 10 };
    Database::builder()
        .logging(true)
        .commit_mode(CommitMode::Sync)
        .mode(args.mode)
        .page_size(4096)
        .pool_bytes(pool)
        .log_segment_bytes(1 << 20)
}

/// The writer: restarts the database, continues after the last committed transaction, prints
/// `ack N` after each commit, and runs until it is killed.
fn child(args: &CrashTestArgs, path: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let db = builder(args).open(path)?;
    let tree = db.tree(TREE)?;
    let start =
        tree.get(PROGRESS)?.and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok()).unwrap_or(0);
    let mut out = std::io::stdout().lock();
    writeln!(out, "start {start}")?;
    out.flush()?;
    for n in start + 1.. {
        let mut t = db.begin();
        for w in transaction(args.seed, args.keys, n) {
            match w {
                Op::Put(k, v) => {
                    t.put(&tree, &k, &v)?;
                }
                Op::Delete(k) => {
                    t.delete(&tree, &k)?;
                }
            }
        }
        t.put(&tree, PROGRESS, n.to_string().as_bytes())?;
        t.commit()?;
        writeln!(out, "ack {n}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What one verification found.
#[derive(Default)]
struct Findings {
    committed: u64,
    lost: BTreeSet<u64>,
    uncommitted: BTreeSet<u64>,
    invalid: bool,
}

/// Opens (restarting) the database and compares it with the states after 1..=acked and
/// 1..=acked+1.
fn verify(args: &CrashTestArgs, path: &Path, acked: u64) -> Findings {
    let mut found = Findings::default();
    let db = match builder(args).open(path) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("restart failed after {acked} acknowledged commits: {e}");
            found.invalid = true;
            return found;
        }
    };
    // Structure first: a scan of a damaged tree need not end.
    if let Err(e) = db.tree(TREE).map_err(|e| e.to_string()).and_then(|t| t.verify().map(|_| ())) {
        eprintln!("the tree is invalid after {acked} acknowledged commits: {e}");
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
    let mut before = State::new();
    for n in 1..=acked {
        apply(&mut before, args.seed, args.keys, n);
    }
    let mut after = before.clone();
    apply(&mut after, args.seed, args.keys, acked + 1);
    if got == before {
        found.committed = acked;
    } else if got == after {
        found.committed = acked + 1;
    } else {
        found.committed = acked;
        let keys: BTreeSet<&Vec<u8>> = got.keys().chain(before.keys()).chain(after.keys()).collect();
        let (mut from_next, mut not_from_next) = (false, false);
        for k in keys {
            let (g, b, a) = (got.get(k), before.get(k), after.get(k));
            if b != a {
                if g == a {
                    from_next = true;
                } else if g == b {
                    not_from_next = true;
                }
            }
            if g != b && g != a {
                match g.and_then(|v| txn_of(v)) {
                    Some(n) if n > acked + 1 => {
                        found.uncommitted.insert(n);
                    }
                    _ => {
                        found.lost.insert(b.and_then(|v| txn_of(v)).unwrap_or(0));
                    }
                }
            }
        }
        if from_next && not_from_next {
            found.uncommitted.insert(acked + 1);
        }
    }
    if let Err(e) = db.close() {
        eprintln!("closing after verification failed: {e}");
        found.invalid = true;
    }
    found
}

/// Runs the harness: `kills` rounds of start, run, SIGKILL, verify.
pub fn run(args: &CrashTestArgs) -> Result<ExitCode, Box<dyn Error>> {
    if let Some(path) = &args.child {
        return child(args, path);
    }
    if args.kills == 0 {
        return Err(Usage("--kills must be at least 1".into()).into());
    }
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
    {
        let db = builder(args).create(&path)?;
        db.create_tree(TREE)?;
        db.close()?;
    }
    let exe = std::env::current_exe()?;
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let (mut lost, mut uncommitted, mut invalid) = (0usize, 0usize, 0usize);
    let mut committed = 0u64;
    let started = std::time::Instant::now();
    for kill in 1..=args.kills {
        let mut child = Command::new(&exe)
            .arg("crash-test")
            .args(["--seed", &args.seed.to_string(), "--keys", &args.keys.to_string()])
            .args(["--pool-kib", &args.pool_kib.to_string(), "--mode", mode_name(args.mode)])
            .arg("--child")
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let reader = std::thread::spawn(move || {
            let mut last = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut words = line.split_whitespace();
                if let (Some("ack" | "start"), Some(n)) =
                    (words.next(), words.next().and_then(|n| n.parse::<u64>().ok()))
                {
                    last = Some(n);
                }
            }
            last
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..=args.max_run_ms.max(1))));
        let exited_early = child.try_wait()?.is_some();
        let _ = child.kill();
        let status = child.wait()?;
        let last = reader.join().map_err(|_| "the output reader panicked")?;
        if exited_early {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            eprintln!("kill {kill}: the writer exited by itself ({status}): {}", err.trim());
            invalid += 1;
        }
        let acked = last.unwrap_or(committed).max(committed);
        let found = verify(args, &path, acked);
        if !found.lost.is_empty() || !found.uncommitted.is_empty() || found.invalid {
            eprintln!(
                "kill {kill}: {acked} acknowledged, lost from {:?}, uncommitted from {:?}{}",
                found.lost,
                found.uncommitted,
                if found.invalid { ", invalid" } else { "" }
            );
        }
        lost += found.lost.len();
        uncommitted += found.uncommitted.len();
        invalid += usize::from(found.invalid);
        committed = found.committed.max(acked);
    }
    println!(
        "{committed} transactions committed over {} kills in {:.1} s (seed {}, {} mode)",
        args.kills,
        started.elapsed().as_secs_f64(),
        args.seed,
        mode_name(args.mode)
    );
    println!(
        "kills={} lost_commits={lost} visible_uncommitted={uncommitted} invalid_trees={invalid}",
        args.kills
    );
    Ok(if lost + uncommitted + invalid == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn mode_name(mode: PoolMode) -> &'static str {
    match mode {
        PoolMode::Traditional => "traditional",
        PoolMode::Swizzling => "swizzling",
        PoolMode::MainMemory => "main-memory",
    }
}
