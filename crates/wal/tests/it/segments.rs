//! Segment files (W1) and truncation (W9).

use crate::common;

use common::{scan_all, segment_files, small_config};
use swizzledb_wal::{LogError, LogManager, Lsn};

const SEG: u64 = 4096;

fn body(i: usize) -> Vec<u8> {
    vec![i as u8; 100 + (i * 53) % 900]
}

#[test]
fn w1_segment_files_are_named_by_start_and_never_exceed_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let lsns: Vec<Lsn> = (0..300).map(|i| log.append(&body(i)).unwrap()).collect();
    log.flush_all().unwrap();
    let files = segment_files(dir.path());
    let last = lsns.last().unwrap().0;
    // One file per segment up to the last record, and one more where the flush's sync marker
    // did not fit after it (W1: the marker then starts the next segment).
    let up_to_last = last / SEG + 1;
    assert!(
        files.len() as u64 == up_to_last || files.len() as u64 == up_to_last + 1,
        "{} files for records up to segment {}",
        files.len(),
        up_to_last - 1
    );
    for (i, f) in files.iter().enumerate() {
        assert_eq!(f.file_name().unwrap().to_str().unwrap(), format!("{:016x}.log", i as u64 * SEG));
        assert!(std::fs::metadata(f).unwrap().len() <= SEG);
    }
}

#[test]
fn w9_truncate_keeps_everything_at_or_after_the_lsn() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let records: Vec<(Lsn, Vec<u8>)> = (0..300).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    log.flush_all().unwrap();
    for cut in [10usize, 11, 150, 299] {
        let (lsn, _) = records[cut];
        log.truncate_before(lsn).unwrap();
        let oldest = log.oldest();
        assert!(oldest <= lsn, "W9: nothing at or after {lsn} is removed (oldest is {oldest})");
        assert!(lsn.0 - oldest.0 < SEG, "W9: every whole segment below {lsn} is removed");
        for (l, b) in &records[cut..] {
            assert_eq!(&log.read(*l).unwrap(), b);
        }
        let kept = scan_all(&log);
        assert_eq!(kept.last(), records.last());
        assert!(kept.first().unwrap().0 <= lsn);
        assert!(records.ends_with(&kept), "the kept records are a suffix of the log");
        let first_kept = kept.first().unwrap().0;
        if let Some((gone, _)) = records.iter().rev().find(|(l, _)| *l < first_kept) {
            assert!(matches!(log.read(*gone), Err(LogError::Truncated { .. })));
            assert!(matches!(log.scan(*gone), Err(LogError::Truncated { .. })));
        }
    }
}

#[test]
fn w9_truncate_never_removes_the_newest_segment_nor_undurable_ones() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let lsns: Vec<Lsn> = (0..100).map(|i| log.append(&body(i)).unwrap()).collect();
    let durable = log.durable();
    log.truncate_before(log.end()).unwrap();
    assert!(log.oldest() <= durable, "W9: nothing above durable() is removed");
    log.flush_all().unwrap();
    let end = log.end();
    log.truncate_before(Lsn(u64::MAX)).unwrap();
    assert_eq!(segment_files(dir.path()).len(), 1, "only the newest segment stays");
    assert_eq!(log.read(*lsns.last().unwrap()).unwrap(), body(99));
    log.close().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end(), end, "W9: the end survives truncation and reopening");
    let next = log.append(b"next").unwrap();
    assert!(next >= end);
}

/// W13: while the log is open every segment it writes is allocated whole, zeros beyond what was
/// written; a clean close cuts the newest one to the log's end; a kill leaves the zeros, and the
/// reopened log ends at the last record all the same and appends after it.
#[test]
fn w13_segments_are_allocated_whole_and_a_clean_close_cuts_the_newest_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let mut records: Vec<(Lsn, Vec<u8>)> =
        (0..20).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    log.flush_all().unwrap();
    let newest = segment_files(dir.path()).pop().unwrap();
    assert_eq!(std::fs::metadata(&newest).unwrap().len(), SEG, "W13: the segment is allocated whole");
    let end = log.end().0;
    assert!(!end.is_multiple_of(SEG), "the test needs the end inside a segment");
    // A kill: the files stay as they are, zeros after the end.
    std::mem::forget(log);

    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end().0, end, "W2, W7: the zeros after the end never validate");
    assert_eq!(std::fs::metadata(&newest).unwrap().len(), SEG, "W13: allocated whole again after the cut");
    records.extend((20..40).map(|i| (log.append(&body(i)).unwrap(), body(i))));
    log.close().unwrap();

    let newest = segment_files(dir.path()).pop().unwrap();
    let end = records.last().map(|(l, b)| l.0 + 8 + b.len().next_multiple_of(8) as u64).unwrap();
    let len = std::fs::metadata(&newest).unwrap().len();
    assert!(
        len < SEG && len > (end - 1) % SEG,
        "W13: a clean close cuts the newest segment near the end ({len})"
    );
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(scan_all(&log), records, "every record back, in order, after the kill and the close");
}

#[test]
fn w14_a_sealed_segment_ends_the_log_at_its_end_and_truncation_then_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let mut records: Vec<(Lsn, Vec<u8>)> =
        (0..20).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    assert!(!log.end().0.is_multiple_of(SEG), "the test needs the end inside a segment");
    let seg_end = log.end().0.next_multiple_of(SEG);
    assert!(log.seal_segment().unwrap(), "W14: a segment with frames is sealed");
    assert_eq!(log.end().0, seg_end, "W14: the log ends at the sealed segment's end");
    assert!(!log.seal_segment().unwrap(), "W14: an empty newest segment is not sealed again");
    let next = log.append(&body(20)).unwrap();
    assert_eq!(next.0, seg_end, "W3, W14: the next record starts the next segment");
    records.push((next, body(20)));
    log.flush_all().unwrap();
    assert_eq!(scan_all(&log), records, "the padding is invisible to a scan");
    log.truncate_before(next).unwrap();
    assert_eq!(log.oldest().0, seg_end, "W9: every segment before the new one goes");
    assert_eq!(segment_files(dir.path()).len(), 1);
    log.close().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(scan_all(&log), records[20..], "after reopening");
}

#[test]
fn w14_a_kill_after_a_seal_reopens_at_the_segment_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let mut records: Vec<(Lsn, Vec<u8>)> =
        (0..50).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    let seg_end = log.end().0.next_multiple_of(SEG);
    assert!(log.seal_segment().unwrap());
    // A kill: the padded segment as it is, no next segment yet.
    std::mem::forget(log);
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end().0, seg_end, "W7: the reader follows the padding to the segment's end");
    assert_eq!(scan_all(&log), records, "every record before the seal is back");
    records.push((log.append(&body(50)).unwrap(), body(50)));
    assert_eq!(records.last().unwrap().0 .0, seg_end);
    log.close().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(scan_all(&log), records);
}
