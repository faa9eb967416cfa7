//! Log manager micro-benchmarks:
//!
//! * `append_100B/<threads>`: throughput of `append` with 100-byte bodies from 1 to 4 threads, on
//!   the default configuration (16 MiB segments, 4 MiB ring, background flusher every 5 ms).
//!   Each sample's records are truncated afterwards so the log does not grow without bound.
//! * `commit_100B/<threads>`: a commit = `append` + `flush` of its LSN, from 1, 4 and 16 threads,
//!   with no background flusher, so every sync round is a group commit (W6). After each group the
//!   number of commits served per sync round is printed from `LogStats`.
//!
//! Run: `cargo bench -p swizzledb-benches --bench log` (criterion's own options, such as a name
//! filter or `--measurement-time`, go after `--`). The log lives in a temporary directory, so
//! the figures depend on the file system that holds it.

#![forbid(unsafe_code)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb_wal::{LogConfig, LogManager};

const BODY: [u8; 100] = [0x5a; 100];

/// Runs `per_thread` calls of `op` on each of `threads` scoped threads; returns the wall time.
fn run_threads(threads: u64, per_thread: u64, op: impl Fn() + Sync) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..per_thread {
                    op();
                }
            });
        }
    });
    start.elapsed()
}

fn append(c: &mut Criterion) {
    let mut g = c.benchmark_group("append_100B");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3));
    for threads in 1..=4u64 {
        let dir = tempfile::tempdir().expect("temporary directory");
        let log = Arc::new(LogManager::open(LogConfig::new(dir.path())).expect("open log"));
        g.bench_function(BenchmarkId::from_parameter(threads), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads);
                let elapsed = run_threads(threads, per_thread, || {
                    log.append(&BODY).expect("append");
                });
                log.flush_all().expect("flush");
                log.truncate_before(log.durable()).expect("truncate");
                // Scale to exactly `iters` appends.
                elapsed.mul_f64(iters as f64 / (per_thread * threads) as f64)
            });
        });
        let s = log.stats();
        eprintln!(
            "append_100B/{threads}: {} appends, {} ring-full waits, {} background sync rounds",
            s.appends, s.buffer_full_waits, s.background_fsyncs
        );
    }
    g.finish();
}

fn commit(c: &mut Criterion) {
    let mut g = c.benchmark_group("commit_100B");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(4));
    for threads in [1u64, 4, 16] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let config = LogConfig { flush_interval: None, ..LogConfig::new(dir.path()) };
        let log = LogManager::open(config).expect("open log");
        g.bench_function(BenchmarkId::from_parameter(threads), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads);
                let elapsed = run_threads(threads, per_thread, || {
                    let lsn = log.append(&BODY).expect("append");
                    log.flush(lsn).expect("flush");
                });
                elapsed.mul_f64(iters as f64 / (per_thread * threads) as f64)
            });
        });
        let s = log.stats();
        eprintln!(
            "commit_100B/{threads}: {} commits, {} sync rounds, {:.2} commits per sync round \
             ({} led, {} joined, {} already durable)",
            s.flush_requests,
            s.fsyncs,
            s.requests_per_fsync(),
            s.flush_led,
            s.flush_joined,
            s.flush_already_durable
        );
    }
    g.finish();
}

criterion_group!(benches, append, commit);
criterion_main!(benches);
