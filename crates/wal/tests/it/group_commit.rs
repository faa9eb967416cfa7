//! Group commit (W6): every flush request is served, and the counters add up.

use crate::common;

use common::{small_config, Faults, TestFs};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use swizzledb_io::MemFs;
use swizzledb_wal::{CommitWait, LogConfig, LogManager, LogStats};

fn assert_stats_add_up(s: &LogStats) {
    assert_eq!(
        s.flush_requests,
        s.flush_already_durable + s.flush_led + s.flush_joined + s.flush_failed,
        "W6: each request is counted once: {s:?}"
    );
    assert_eq!(s.flush_led, s.fsyncs, "W6: each foreground round is led by one request: {s:?}");
    assert!(s.file_syncs >= s.fsyncs + s.background_fsyncs, "each round syncs at least one file: {s:?}");
}

/// Threads committing at once, each appending and flushing in a loop.
const THREADS: usize = 8;
const COMMITS: usize = 300;

/// [`THREADS`] threads append and flush [`COMMITS`] times each on a log opened with `config`;
/// every flush covers its record, every request is counted once. The log's counters after.
fn commit_in_a_loop(config: LogConfig) -> LogStats {
    let log = Arc::new(LogManager::open(config).unwrap());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (log, barrier) = (Arc::clone(&log), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..COMMITS {
                    let lsn = log.append(format!("commit {t}/{i}").as_bytes()).unwrap();
                    log.flush(lsn).unwrap();
                    assert!(lsn < log.durable(), "W6: a returned flush covers its LSN");
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let s = log.stats();
    assert_eq!(s.flush_requests, (THREADS * COMMITS) as u64);
    assert_eq!(s.flush_failed, 0);
    assert_stats_add_up(&s);
    assert!(s.fsyncs <= s.flush_requests, "never more rounds than requests: {s:?}");
    s
}

#[test]
fn w6_eight_threads_append_and_flush_in_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let s = commit_in_a_loop(LogConfig { flush_interval: None, ..LogConfig::new(dir.path()) });
    assert_eq!(s.background_fsyncs, 0, "no background flusher configured");
    eprintln!(
        "group commit, {THREADS} threads: {} requests, {} fsync rounds, {:.2} requests per round",
        s.flush_requests,
        s.fsyncs,
        s.requests_per_fsync()
    );
}

/// [`commit_in_a_loop`] on a log in memory (rounds of a few microseconds, which adaptive
/// waiting spins out or keeps a core awake through).
fn commit_in_memory(wait: CommitWait) -> LogStats {
    commit_in_a_loop(LogConfig {
        flush_interval: None,
        vfs: Arc::new(MemFs::new()),
        commit_wait: wait,
        ..LogConfig::new("/log")
    })
}

/// W6 steps 6 and 7 with `CommitWait::Sleep`: every waiter sleeps, none spins or keeps a core
/// awake, and group commit still serves every request. (Adaptive waiting on the same
/// workload, on a machine of two cores or more, waits awake: printed beside it.)
#[test]
fn w6_committers_told_to_sleep_never_wait_awake() {
    let sleep = commit_in_memory(CommitWait::Sleep);
    assert_eq!(sleep.busy_waits, 0, "W6: a sleeping committer never waits awake: {sleep:?}");
    let adaptive = commit_in_memory(CommitWait::Adaptive);
    eprintln!(
        "8 threads in memory: sleep {} rounds, {} busy waits; adaptive {} rounds, {} busy waits",
        sleep.fsyncs, sleep.busy_waits, adaptive.fsyncs, adaptive.busy_waits
    );
}

/// A log in `dir` whose writes and syncs go through [`TestFs`], and its faults.
fn log_on_test_fs(dir: &std::path::Path) -> (Arc<LogManager>, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let fs = TestFs { faults: Arc::clone(&faults) };
    let log = LogManager::open(LogConfig { vfs: Arc::new(fs), ..small_config(dir) }).unwrap();
    (Arc::new(log), faults)
}

/// A deterministic group: the first leader is held in its sync while seven more threads append
/// and call flush; when the sync is released, one of them leads a second round that covers all
/// seven, so eight requests take exactly two rounds.
#[test]
fn w6_waiting_flushes_share_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let (log, faults) = log_on_test_fs(dir.path());
    let syncs_at_open = faults.syncs.load(Ordering::SeqCst);
    faults.close_gate();
    let first = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            let lsn = log.append(b"leader").unwrap();
            log.flush(lsn).unwrap();
        })
    };
    while faults.held.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let followers: Vec<_> = (0..7)
        .map(|i| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let lsn = log.append(format!("follower {i}").as_bytes()).unwrap();
                log.flush(lsn).unwrap();
                assert!(lsn < log.durable());
            })
        })
        .collect();
    // All seven have appended once they have entered flush (append returns before flush starts).
    while log.stats().flush_requests < 8 {
        std::thread::yield_now();
    }
    faults.open_gate();
    first.join().unwrap();
    followers.into_iter().for_each(|h| h.join().unwrap());
    let s = log.stats();
    assert_stats_add_up(&s);
    assert_eq!(s.flush_requests, 8);
    assert_eq!(s.fsyncs, 2, "W6: one round for the leader, one for all seven followers: {s:?}");
    assert_eq!(s.flush_led, 2);
    assert_eq!(s.flush_joined + s.flush_already_durable, 6);
    assert_eq!(faults.syncs.load(Ordering::SeqCst) - syncs_at_open, 2, "two file syncs in all");
}

/// W6 with W11: seven threads parked behind a leader whose sync fails all wake and return the
/// failure (none hangs, none is acknowledged).
#[test]
fn w6_parked_waiters_wake_with_the_leaders_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (log, faults) = log_on_test_fs(dir.path());
    faults.fail_sync_at.store(faults.syncs.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
    faults.close_gate();
    let flush_one = |name: String| {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            let lsn = log.append(name.as_bytes()).unwrap();
            log.flush(lsn)
        })
    };
    let leader = flush_one("leader".into());
    while faults.held.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let followers: Vec<_> = (0..7).map(|i| flush_one(format!("follower {i}"))).collect();
    while log.stats().flush_requests < 8 {
        std::thread::yield_now();
    }
    faults.open_gate();
    assert!(leader.join().unwrap().is_err(), "the leader's sync failed");
    for f in followers {
        assert!(f.join().unwrap().is_err(), "W11: a parked follower returns the failure");
    }
    let s = log.stats();
    assert_stats_add_up(&s);
    assert_eq!(s.flush_failed, 8, "{s:?}");
}

/// `flush_urgent` is a flush whose leader does not gather (W6 step 4): it returns with the
/// record durable, and counts as a request and a round like any flush.
#[test]
fn w6_an_urgent_flush_is_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(LogConfig { flush_interval: None, ..LogConfig::new(dir.path()) }).unwrap();
    for i in 0..3 {
        let lsn = log.append(format!("record {i}").as_bytes()).unwrap();
        log.flush_urgent(lsn).unwrap();
        assert!(lsn < log.durable());
    }
    let s = log.stats();
    assert_stats_add_up(&s);
    assert_eq!((s.flush_requests, s.flush_led, s.fsyncs), (3, 3, 3), "{s:?}");
}
