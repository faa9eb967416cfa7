//! Lock manager micro-benchmark:
//!
//! * `txn_20_locks/<threads>`: transactions of 20 exclusive record locks on random 8-byte keys
//!   (no two transactions ever want one key), then `release_all`, from 1, 2 and 4 threads on
//!   the engine's shards (`ENGINE_SHARDS`); the figure is per lock, its release included. With
//!   no conflicts, what a second thread adds per lock is the lock table's cache lines moving
//!   between the cores (LOCKS.md K13; `docs/isolation.md`).
//!
//! Run: `cargo bench -p swizzledb-benches --bench lock` (criterion's own options go after
//! `--`).

#![forbid(unsafe_code)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::{Duration, Instant};
use swizzledb::lock::{LockManager, LockMode, TxnId, ENGINE_SHARDS};

/// Locks per transaction (about what a TPC-C transaction takes).
const LOCKS: u64 = 20;
/// Lanes of transaction numbers (the engine's `LANE_BITS`): thread `i` numbers its
/// transactions in lane `i + 1`, as the engine does, so that each uses its own transaction shard.
const LANE_BITS: u32 = 6;

/// `txns` transactions on each of `threads` threads; returns the wall time.
fn run(lm: &LockManager, threads: u64, txns: u64, round: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads {
            s.spawn(move || {
                // xorshift64*, seeded per thread and round: random keys, never repeated in practice.
                let mut x = ((round << 8) | i).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for n in 0..txns {
                    let txn = TxnId(((round * txns + n + 1) << LANE_BITS) | (i + 1));
                    for _ in 0..LOCKS {
                        x ^= x >> 12;
                        x ^= x << 25;
                        x ^= x >> 27;
                        let key = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_be_bytes();
                        lm.lock(txn, 1, &key, LockMode::Exclusive).expect("no conflicts");
                    }
                    lm.release_all(txn);
                }
            });
        }
    });
    start.elapsed()
}

fn txn_locks(c: &mut Criterion) {
    let mut g = c.benchmark_group("txn_20_locks");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3));
    for threads in [1u64, 2, 4] {
        let lm = LockManager::new(ENGINE_SHARDS);
        let mut round = 0;
        g.bench_function(BenchmarkId::from_parameter(threads), |b| {
            b.iter_custom(|iters| {
                let txns = iters.div_ceil(LOCKS * threads);
                round += 1;
                let elapsed = run(&lm, threads, txns, round);
                elapsed.mul_f64(iters as f64 / (txns * LOCKS * threads) as f64)
            });
        });
        assert_eq!(lm.lock_count(), 0, "every transaction released its locks");
    }
    g.finish();
}

criterion_group!(benches, txn_locks);
criterion_main!(benches);
