//! A failed write or sync is sticky (W11): later appends and flushes fail with `Failed`, and a
//! reopened log holds every record whose flush returned `Ok`, in order, and nothing invented.

use crate::common;

use common::{scan_all, small_config, Faults, TestFs};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use swizzledb_wal::{LogConfig, LogError, LogManager, Lsn};

fn body(i: usize) -> Vec<u8> {
    vec![(i % 251) as u8; 50 + (i * 29) % 400]
}

/// Appends and flushes every few records until something fails; returns the records appended
/// and how many of them were covered by a successful flush.
fn run_until_failure(log: &LogManager) -> (Vec<(Lsn, Vec<u8>)>, usize, LogError) {
    let mut records = Vec::new();
    let mut durable = 0;
    for i in 0..10_000 {
        let result = log.append(&body(i)).and_then(|lsn| {
            records.push((lsn, body(i)));
            if i % 5 == 4 {
                log.flush(lsn)?;
                durable = records.len();
            }
            Ok(())
        });
        if let Err(e) = result {
            return (records, durable, e);
        }
    }
    panic!("the injected fault never fired");
}

fn check_sticky_then_reopen(dir: &std::path::Path, k: u64, log: LogManager) {
    let (records, durable, first) = run_until_failure(&log);
    assert!(matches!(first, LogError::Io { .. }), "the failing call reports the I/O error: {first:?}");
    if k > 1 {
        assert!(durable > 0, "some flushes succeeded before fault number {k}");
    }
    // W11: sticky.
    assert!(matches!(log.append(b"more"), Err(LogError::Failed { .. })));
    assert!(matches!(log.flush_all(), Err(LogError::Failed { .. })));
    assert!(matches!(log.flush(records[0].0), Err(LogError::Failed { .. })));
    let s = log.stats();
    assert!(s.flush_failed >= 2);
    assert!(matches!(log.close(), Err(LogError::Failed { .. })), "close reports the failure too");

    // A fresh open sees every acknowledged record and then at most a prefix of the rest.
    let log = LogManager::open(small_config(dir)).unwrap();
    let found = scan_all(&log);
    assert!(found.len() >= durable, "W6: every record whose flush returned Ok survives");
    assert_eq!(found[..], records[..found.len()], "the log is a prefix of what was appended");
}

#[test]
fn w11_failed_write_is_sticky() {
    for k in [1, 3, 10] {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults::default());
        faults.fail_write_at.store(k, Ordering::SeqCst);
        let vfs = Arc::new(TestFs { faults: Arc::clone(&faults) });
        let log = LogManager::open(LogConfig { vfs, ..small_config(dir.path()) }).unwrap();
        check_sticky_then_reopen(dir.path(), k, log);
    }
}

#[test]
fn w11_failed_sync_is_sticky() {
    for k in [1, 4, 9] {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults::default());
        faults.fail_sync_at.store(k, Ordering::SeqCst);
        let vfs = Arc::new(TestFs { faults: Arc::clone(&faults) });
        let log = LogManager::open(LogConfig { vfs, ..small_config(dir.path()) }).unwrap();
        check_sticky_then_reopen(dir.path(), k, log);
    }
}

#[test]
fn w11_background_flusher_failure_reaches_the_next_caller() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    faults.fail_sync_at.store(1, Ordering::SeqCst);
    let vfs = Arc::new(TestFs { faults: Arc::clone(&faults) });
    let config = LogConfig {
        vfs,
        flush_interval: Some(std::time::Duration::from_millis(1)),
        ..small_config(dir.path())
    };
    let log = LogManager::open(config).unwrap();
    log.append(b"only the background flusher syncs this").unwrap();
    // Wait (without a time limit) until the flusher has tried its sync.
    while faults.syncs.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    // The sync failed; the failure is recorded before any later call can see durable() move.
    loop {
        match log.append(b"next") {
            Err(LogError::Failed { cause }) => {
                assert!(cause.contains("injected sync failure"), "{cause}");
                break;
            }
            Ok(_) => std::thread::yield_now(),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(log.durable(), Lsn(8), "nothing became durable");
}
