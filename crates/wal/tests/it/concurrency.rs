//! Concurrent appenders (W4, W5, W6): every record appears exactly once, each thread's records in
//! its own order, LSNs strictly increasing, and every LSN whose flush returned is durable.

use crate::common;

use common::scan_all;
use std::collections::HashMap;
use std::sync::Arc;
use swizzledb_wal::{LogConfig, LogManager, Lsn};

const THREADS: u64 = 4;
const PER_THREAD: u64 = 3_000;

/// Record `seq` of thread `t`: the tag (t, seq) and a length that varies with both.
fn tagged(t: u64, seq: u64) -> Vec<u8> {
    let len = 16 + ((t * 131 + seq * 17) % 300) as usize;
    let mut b = vec![t as u8; len];
    b[..8].copy_from_slice(&t.to_le_bytes());
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    b
}

fn run(config: LogConfig) {
    run_with(config, THREADS);
}

fn run_with(config: LogConfig, threads: u64) {
    let dir = config.dir.clone();
    let log = Arc::new(LogManager::open(config.clone()).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for seq in 0..PER_THREAD {
                    let lsn = log.append(&tagged(t, seq)).unwrap();
                    mine.push(lsn);
                    if seq % 7 == t {
                        log.flush(lsn).unwrap();
                        assert!(lsn < log.durable(), "W6: {lsn} flushed but durable() is {}", log.durable());
                    }
                }
                mine
            })
        })
        .collect();
    let returned: Vec<Vec<Lsn>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let log = Arc::into_inner(log).unwrap();
    let check = |records: &[(Lsn, Vec<u8>)]| {
        assert_eq!(records.len() as u64, threads * PER_THREAD, "every record exactly once");
        assert!(records.windows(2).all(|w| w[0].0 < w[1].0), "W3: LSNs strictly increase");
        let mut next_seq: HashMap<u64, u64> = HashMap::new();
        for (lsn, body) in records {
            let t = u64::from_le_bytes(body[..8].try_into().unwrap());
            let seq = u64::from_le_bytes(body[8..16].try_into().unwrap());
            let expect = next_seq.entry(t).or_default();
            assert_eq!(seq, *expect, "thread {t}'s records in its order");
            *expect += 1;
            assert_eq!(body, &tagged(t, seq), "body of ({t}, {seq}) intact");
            assert_eq!(returned[t as usize][seq as usize], *lsn, "the LSN append returned");
        }
    };
    check(&scan_all(&log));
    log.close().unwrap();
    let log = LogManager::open(LogConfig { dir, ..config }).unwrap();
    check(&scan_all(&log));
}

#[test]
fn w4_concurrent_appends_small_ring_and_segments() {
    // An 8 KiB ring against ~1 MiB of records: appenders wait for space all the time.
    let dir = tempfile::tempdir().unwrap();
    run(common::small_config(dir.path()));
}

#[test]
fn w4_concurrent_appends_with_background_flusher() {
    let dir = tempfile::tempdir().unwrap();
    run(LogConfig {
        segment_bytes: 64 << 10,
        buffer_bytes: 64 << 10,
        flush_interval: Some(std::time::Duration::from_millis(1)),
        ..LogConfig::new(dir.path())
    });
}

#[test]
fn w4_twelve_appenders_on_a_4_kib_ring_lose_nothing() {
    // More appenders than cores on the smallest ring: reservations retry their compare-and-swap
    // all the time, and an appender preempted after reading the reservation point may find it
    // stale, the ring lapped and written out past it (W4: the swap fails and it retries).
    let dir = tempfile::tempdir().unwrap();
    run_with(LogConfig { buffer_bytes: 4096, ..common::small_config(dir.path()) }, 12);
}

/// W12: `end_near` never passes `end`, only grows, lags it by less than a granule plus a frame
/// once the appends are done, and follows a sealed segment's padding; several appenders at once
/// on segments of 64 KiB (a granule of 4 KiB) and single ones on segments of 32 MiB (1 MiB).
#[test]
fn w12_the_end_near_trails_the_end_by_less_than_a_granule() {
    for (segment_bytes, threads) in [(64u64 << 10, 4usize), (32 << 20, 1)] {
        let dir = tempfile::tempdir().unwrap();
        let log = LogManager::open(LogConfig {
            segment_bytes,
            buffer_bytes: 64 << 10,
            flush_interval: Some(std::time::Duration::from_millis(1)),
            ..LogConfig::new(dir.path())
        })
        .unwrap();
        let granule = log.end_granule();
        assert_eq!(granule, (segment_bytes / 16).clamp(4096, 1 << 20));
        let body_max = 300u64;
        let frame_max = body_max + 64;
        std::thread::scope(|s| {
            for t in 0..threads {
                let log = &log;
                s.spawn(move || {
                    let mut seen = Lsn(0);
                    for i in 0..20_000u64 {
                        let len = ((i * 37 + t as u64 * 11) % body_max + 1) as usize;
                        log.append(&vec![t as u8; len]).unwrap();
                        let near = log.end_near();
                        assert!(near <= log.end(), "W12: the end near is never past the end");
                        assert!(near >= seen, "W12: the end near only grows");
                        seen = near;
                    }
                });
            }
        });
        let (near, end) = (log.end_near(), log.end());
        assert!(near <= end && end.0 - near.0 < granule + frame_max, "{near:?} against {end:?}");
        assert_eq!(near.0 % granule, 0, "W12: the end near is a granule's end");
        assert!(log.seal_segment().unwrap());
        assert_eq!(log.end_near(), log.end(), "W14: a sealed segment's end is a granule's end");
        log.close().unwrap();
    }
}
