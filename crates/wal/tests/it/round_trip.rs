//! Records come back exactly as appended, in order, with their LSNs: through `scan`, through
//! `read`, and after reopening (W2, W3, W5, W7).

use crate::common;

use common::{scan_all, small_config};
use proptest::prelude::*;
use swizzledb_wal::{LogConfig, LogError, LogManager, Lsn, FRAME_ROOM};

/// Body `i` of a run: its length comes from the strategy, its bytes from `i` and the position,
/// so that two records never look alike by accident.
fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i.wrapping_mul(31) ^ j.wrapping_mul(7)) as u8).collect()
}

/// Appends `b`: every other record through [`LogManager::append_framed`], with junk in the
/// room in front of it, which must make no difference to the record.
fn append(log: &LogManager, i: usize, b: &[u8]) -> Result<Lsn, LogError> {
    if i.is_multiple_of(2) {
        return log.append(b);
    }
    let mut frame = vec![0x5a; FRAME_ROOM];
    frame.extend_from_slice(b);
    log.append_framed(&mut frame)
}

fn check(log: &LogManager, expected: &[(Lsn, Vec<u8>)]) {
    assert_eq!(scan_all(log), expected, "W5: scan yields every record once, in LSN order");
    for (lsn, b) in expected {
        assert_eq!(&log.read(*lsn).unwrap(), b, "read({lsn})");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Small segments and an 8 KiB ring: records cross many segments (padding) and the ring wraps
    /// and fills (appenders write out themselves).
    #[test]
    fn w2_w5_round_trip_small_segments(lens in prop::collection::vec(0usize..=2048, 1..300), flush_every in 1usize..50) {
        let dir = tempfile::tempdir().unwrap();
        let log = LogManager::open(small_config(dir.path())).unwrap();
        prop_assert_eq!(log.max_body(), 2048);
        let mut expected = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let b = body(i, len);
            let lsn = append(&log, i, &b).unwrap();
            prop_assert!(lsn.0 >= 8 && lsn.0.is_multiple_of(8), "W3: LSN {} is a frame start", lsn.0);
            if let Some((prev, _)) = expected.last() {
                prop_assert!(lsn > *prev, "W3: LSNs grow");
            }
            prop_assert_eq!(lsn.0 / 4096, (lsn.0 + 8 + len as u64 - 1) / 4096, "W1: a frame never spans segments");
            expected.push((lsn, b));
            if i % flush_every == 0 {
                log.flush(lsn).unwrap();
                prop_assert!(lsn < log.durable(), "W6: flush(lsn) makes lsn durable");
            }
        }
        check(&log, &expected);
        log.close().unwrap();

        let log = LogManager::open(small_config(dir.path())).unwrap();
        check(&log, &expected);
        // Appending after a reopen continues the LSN space.
        let more = log.append(b"after reopen").unwrap();
        prop_assert!(more > expected.last().unwrap().0);
        expected.push((more, b"after reopen".to_vec()));
        drop(log); // Drop flushes too.
        let log = LogManager::open(small_config(dir.path())).unwrap();
        check(&log, &expected);
    }
}

#[test]
fn w2_record_too_large_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let max = log.max_body();
    assert!(log.append(&vec![1; max]).is_ok());
    match log.append(&vec![1; max + 1]) {
        Err(LogError::RecordTooLarge { len, max: m }) => assert_eq!((len, m), (max + 1, max)),
        other => panic!("expected RecordTooLarge, got {other:?}"),
    }
    assert!(append(&log, 1, &vec![1; max]).is_ok());
    match append(&log, 1, &vec![1; max + 1]) {
        Err(LogError::RecordTooLarge { len, max: m }) => assert_eq!((len, m), (max + 1, max)),
        other => panic!("expected RecordTooLarge from a framed append, got {other:?}"),
    }
    match log.append_framed(&mut [0; FRAME_ROOM - 1]) {
        Err(LogError::NoFrameRoom { len, room }) => assert_eq!((len, room), (FRAME_ROOM - 1, FRAME_ROOM)),
        other => panic!("expected NoFrameRoom, got {other:?}"),
    }
    let empty = log.append_framed(&mut [9; FRAME_ROOM]).unwrap();
    assert_eq!(log.read(empty).unwrap(), Vec::<u8>::new(), "room alone is an empty body");
}

#[test]
fn w2_default_config_takes_bodies_of_a_quarter_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    assert_eq!(config.max_body(), config.buffer_bytes / 4);
    let log = LogManager::open(config).unwrap();
    let big = body(7, log.max_body());
    let lsn = log.append(&big).unwrap();
    let small = log.append(b"x").unwrap();
    assert_eq!(log.read(lsn).unwrap(), big, "read of a record still in the buffer writes it out first");
    assert_eq!(scan_all(&log), vec![(lsn, big), (small, b"x".to_vec())]);
}

#[test]
fn w3_lsn_zero_is_never_a_record_and_fresh_log_starts_at_8() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end(), Lsn(8));
    assert_eq!(log.durable(), Lsn(8), "nothing to make durable yet");
    assert!(scan_all(&log).is_empty());
    log.flush(Lsn(0)).unwrap();
    log.flush_all().unwrap();
    let first = log.append(b"").unwrap();
    assert_eq!(first, Lsn(8));
    assert_eq!(log.read(first).unwrap(), b"");
    assert!(matches!(log.read(Lsn(12)), Err(LogError::NotARecord { .. })));
    assert!(matches!(log.read(Lsn(16)), Err(LogError::NotAppended { .. })));
    assert!(matches!(log.flush(Lsn(16)), Err(LogError::NotAppended { .. })));
}

#[test]
fn w5_scan_from_a_record_and_bad_starts() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let lsns: Vec<Lsn> = (0..20).map(|i| log.append(&body(i, 100)).unwrap()).collect();
    let from_5: Vec<Lsn> = log.scan(lsns[5]).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(from_5, lsns[5..]);
    let mut bad = log.scan(Lsn(lsns[5].0 + 8)).unwrap();
    assert!(matches!(bad.next(), Some(Err(LogError::NotARecord { .. }))));
    assert!(bad.next().is_none(), "a scan stops after an error");
    assert_eq!(log.scan(log.end()).unwrap().count(), 0);
}

#[test]
fn w1_config_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    for config in [
        LogConfig { segment_bytes: 1000, ..small_config(dir.path()) },
        LogConfig { segment_bytes: 4100, ..small_config(dir.path()) },
        LogConfig { buffer_bytes: 100, ..small_config(dir.path()) },
        LogConfig { flush_interval: Some(std::time::Duration::ZERO), ..small_config(dir.path()) },
    ] {
        assert!(matches!(LogManager::open(config), Err(LogError::BadConfig { .. })));
    }
    // A log must be reopened with its segment size.
    let log = LogManager::open(small_config(dir.path())).unwrap();
    for i in 0..100 {
        log.append(&body(i, 200)).unwrap();
    }
    log.close().unwrap();
    let other = LogConfig { segment_bytes: 8192, ..small_config(dir.path()) };
    assert!(matches!(LogManager::open(other), Err(LogError::BadConfig { .. })));
}

#[test]
fn w2_records_bigger_than_a_smaller_buffers_max_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let big = LogConfig { buffer_bytes: 64 << 10, ..small_config(dir.path()) };
    let log = LogManager::open(big).unwrap();
    let records: Vec<_> = (0..10).map(|i| (log.append(&body(i, 3000)).unwrap(), body(i, 3000))).collect();
    log.close().unwrap();
    // 3000 bytes is above this configuration's max_body (2048), but the records are whole.
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert!(log.max_body() < 3000);
    check(&log, &records);
}
