//! `swizzledb crash-test`: run a logged write workload in a child process, kill it with SIGKILL
//! at a random moment, restart, and check that every acknowledged commit survived, that nothing
//! uncommitted is visible and that the tree is valid; repeat.
//!
//! The writer process runs `--threads` writers. Writer `t` runs transactions numbered 1, 2, …,
//! each a deterministic function of the seed, `t` and its number (puts and deletes over the keys
//! congruent to `t`, values naming the transaction), each also writing its number under the key
//! `__progress<t>`; it prints `ack t N` once commit N has returned. Background fuzzy checkpoints
//! run meanwhile. After a kill, each writer's keys must hold exactly the state after its
//! transactions 1..=A, or 1..=A+1 (A = its last acknowledged: the next one may have committed
//! without being acknowledged). Anything else is counted: values of committed transactions that
//! are missing or older are lost commits; values of later transactions, or a part of the
//! in-flight one, are visible uncommitted changes.

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::io::{BufRead, BufReader, Write as _};
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
    /// Concurrent writers (each with its own keys and its own sequence of transactions)
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Interval of the background fuzzy checkpoints in the writer, in milliseconds
    #[arg(long, default_value_t = 50)]
    checkpoint_ms: u64,
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
fn transaction(seed: u64, keys: u32, t: u32, threads: u32, n: u64) -> Vec<Op> {
    let mut rng =
        SmallRng::seed_from_u64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(t) << 56));
    let per_writer = (keys / threads).max(1);
    let count = rng.gen_range(1..=8);
    (0..count)
        .map(|j| {
            let key = format!("key{:06}", rng.gen_range(0..per_writer) * threads + t).into_bytes();
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

fn apply(state: &mut State, args: &CrashTestArgs, t: u32, n: u64) {
    for w in transaction(args.seed, args.keys, t, args.threads, n) {
        match w {
            Op::Put(k, v) => {
                state.insert(k, v);
            }
            Op::Delete(k) => {
                state.remove(&k);
            }
        }
    }
    state.insert(progress_key(t), n.to_string().into_bytes());
}

/// Which writer a key belongs to.
fn writer_of(key: &[u8], threads: u32) -> Option<u32> {
    let s = std::str::from_utf8(key).ok()?;
    if let Some(t) = s.strip_prefix("__progress") {
        return t.parse().ok();
    }
    Some(s.strip_prefix("key")?.parse::<u32>().ok()? % threads)
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
        .checkpoint_interval(Some(Duration::from_millis(args.checkpoint_ms.max(1))))
}

/// The writers: restart the database, each continues after its last committed transaction,
/// prints `ack T N` after each commit, and runs until killed.
fn child(args: &CrashTestArgs, path: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let db = builder(args).open(path)?;
    let tree = db.tree(TREE)?;
    let out = std::sync::Mutex::new(std::io::stdout());
    std::thread::scope(|scope| -> Result<(), Box<dyn Error + Send + Sync>> {
        let handles: Vec<_> = (0..args.threads)
            .map(|t| {
                let (db, tree, out) = (&db, &tree, &out);
                scope.spawn(move || -> Result<(), Box<dyn Error + Send + Sync>> {
                    let start = tree
                        .get(&progress_key(t))?
                        .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok())
                        .unwrap_or(0);
                    for n in start + 1.. {
                        let mut txn = db.begin();
                        for w in transaction(args.seed, args.keys, t, args.threads, n) {
                            match w {
                                Op::Put(k, v) => {
                                    txn.put(tree, &k, &v)?;
                                }
                                Op::Delete(k) => {
                                    txn.delete(tree, &k)?;
                                }
                            }
                        }
                        txn.put(tree, &progress_key(t), n.to_string().as_bytes())?;
                        txn.commit()?;
                        let mut o = out.lock().map_err(|_| "stdout lock poisoned")?;
                        writeln!(o, "ack {t} {n}")?;
                        o.flush()?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a writer panicked")??;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// What one verification found.
#[derive(Default)]
struct Findings {
    /// Per writer: transactions known committed.
    committed: Vec<u64>,
    lost: BTreeSet<(u32, u64)>,
    uncommitted: BTreeSet<(u32, u64)>,
    invalid: bool,
}

/// Opens (restarting) the database and compares each writer's keys with the states after its
/// transactions 1..=acked and 1..=acked+1.
fn verify(args: &CrashTestArgs, path: &Path, acked: &[u64]) -> Findings {
    let mut found = Findings { committed: acked.to_vec(), ..Findings::default() };
    let db = match builder(args).open(path) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("restart failed after {acked:?} acknowledged commits: {e}");
            found.invalid = true;
            return found;
        }
    };
    // Structure first: a scan of a damaged tree need not end.
    if let Err(e) = db.tree(TREE).map_err(|e| e.to_string()).and_then(|t| t.verify().map(|_| ())) {
        eprintln!("the tree is invalid after {acked:?} acknowledged commits: {e}");
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
    for t in 0..args.threads {
        let a = acked[t as usize];
        let mine: State = got
            .iter()
            .filter(|(k, _)| writer_of(k, args.threads) == Some(t))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut before = State::new();
        for n in 1..=a {
            apply(&mut before, args, t, n);
        }
        let mut after = before.clone();
        apply(&mut after, args, t, a + 1);
        if mine == before {
            continue;
        }
        if mine == after {
            found.committed[t as usize] = a + 1;
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
                match g.and_then(|v| txn_of(v)) {
                    Some(x) if x > a + 1 => {
                        found.uncommitted.insert((t, x));
                    }
                    _ => {
                        found.lost.insert((t, b.and_then(|v| txn_of(v)).unwrap_or(0)));
                    }
                }
            }
        }
        if from_next && not_from_next {
            found.uncommitted.insert((t, a + 1));
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
    if !(1..=64).contains(&args.threads) || args.keys < args.threads {
        return Err(Usage("--threads must be 1 to 64, and --keys at least --threads".into()).into());
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
    let mut committed = vec![0u64; args.threads as usize];
    let started = std::time::Instant::now();
    for kill in 1..=args.kills {
        let mut child = Command::new(&exe)
            .arg("crash-test")
            .args(["--seed", &args.seed.to_string(), "--keys", &args.keys.to_string()])
            .args([
                "--threads",
                &args.threads.to_string(),
                "--checkpoint-ms",
                &args.checkpoint_ms.to_string(),
            ])
            .args(["--pool-kib", &args.pool_kib.to_string(), "--mode", mode_name(args.mode)])
            .arg("--child")
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let threads = args.threads as usize;
        let reader = std::thread::spawn(move || {
            let mut last = vec![None; threads];
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut words = line.split_whitespace();
                if let (Some("ack"), Some(t), Some(n)) = (
                    words.next(),
                    words.next().and_then(|t| t.parse::<usize>().ok()),
                    words.next().and_then(|n| n.parse::<u64>().ok()),
                ) {
                    if let Some(slot) = last.get_mut(t) {
                        *slot = Some(n);
                    }
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
        let acked: Vec<u64> = committed.iter().zip(&last).map(|(&c, l)| l.unwrap_or(c).max(c)).collect();
        let found = verify(args, &path, &acked);
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
        committed = found.committed;
    }
    println!(
        "{} transactions committed by {} writers over {} kills in {:.1} s (seed {}, {} mode)",
        committed.iter().sum::<u64>(),
        args.threads,
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
