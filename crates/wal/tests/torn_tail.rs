//! The end of the log (W7, W8): a torn or damaged tail ends the log at the first bad frame, is cut
//! so that no stale frame can come back, and damage followed by valid segments is an error.

mod common;

use common::{scan_all, segment_files, small_config};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use swizzledb_wal::{LogError, LogManager, Lsn};

const SEG: u64 = 4096;

fn body(i: usize) -> Vec<u8> {
    let len = 40 + (i * 37) % 200;
    (0..len).map(|j| (i + j) as u8).collect()
}

/// Appends `n` records, closes the log, and returns them.
fn write_log(dir: &Path, n: usize) -> Vec<(Lsn, Vec<u8>)> {
    let log = LogManager::open(small_config(dir)).unwrap();
    let records: Vec<_> = (0..n).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    log.close().unwrap();
    records
}

fn segment_of(dir: &Path, lsn: Lsn) -> (PathBuf, u64) {
    let start = lsn.0 - lsn.0 % SEG;
    (dir.join(format!("{start:016x}.log")), lsn.0 - start)
}

/// Flips one bit of the byte at `lsn + delta`.
fn flip(dir: &Path, lsn: Lsn, delta: u64) {
    let (path, offset) = segment_of(dir, lsn);
    let f = OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, offset + delta).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], offset + delta).unwrap();
}

#[test]
fn w7_torn_last_frame_ends_the_log_there() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), 100);
    let (last, _) = records.last().unwrap();
    // The file ends in the middle of the last frame's body, as after a torn write.
    let (path, offset) = segment_of(dir.path(), *last);
    OpenOptions::new().write(true).open(&path).unwrap().set_len(offset + 20).unwrap();

    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end(), *last, "W7: the end is the start of the first bad frame");
    assert_eq!(log.durable(), *last);
    assert_eq!(scan_all(&log), records[..99], "earlier records intact");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), offset, "W7: the segment is cut at the end");
}

/// The record after a damaged one is still valid on disk. After the reopen, a new record of the
/// same size lands exactly where the damaged one was, so without the cut (W7) the stale record
/// behind it would validate again at its old LSN and reappear on the next open.
#[test]
fn w7_no_stale_record_reappears_after_append_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), 100);
    let (bad, bad_body) = &records[97];
    assert_eq!(bad.0 / SEG, records[99].0 .0 / SEG, "the test needs the last three records in one segment");
    flip(dir.path(), *bad, 8 + 3);

    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.end(), *bad);
    assert_eq!(scan_all(&log), records[..97]);
    let replacement = vec![0xAB; bad_body.len()];
    let lsn = log.append(&replacement).unwrap();
    assert_eq!(lsn, *bad, "the new record takes the damaged one's LSN");
    log.close().unwrap();

    let log = LogManager::open(small_config(dir.path())).unwrap();
    let mut expected = records[..97].to_vec();
    expected.push((lsn, replacement));
    assert_eq!(scan_all(&log), expected, "W7: records 98 and 99 must not come back");
}

#[test]
fn w7_garbage_segment_after_the_end_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), 100);
    let files = segment_files(dir.path());
    let last_start =
        u64::from_str_radix(files.last().unwrap().file_stem().unwrap().to_str().unwrap(), 16).unwrap();
    // A later segment whose first frame does not validate (zeros, as if created but never written).
    let extra = dir.path().join(format!("{:016x}.log", last_start + 2 * SEG));
    std::fs::write(&extra, vec![0u8; 512]).unwrap();

    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(scan_all(&log), records);
    assert!(!extra.exists(), "W7: segments after the end are removed");
}

#[test]
fn w8_damage_before_valid_segments_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), 200);
    assert!(segment_files(dir.path()).len() >= 5, "records span several segments");
    // A record in the second segment.
    let (victim, _) = *records.iter().find(|(l, _)| l.0 >= SEG + 500).unwrap();
    flip(dir.path(), victim, 8);
    let before = segment_files(dir.path()).len();
    // W7: open reads only the newest segments, and finds the same end.
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(segment_files(dir.path()).len(), before, "nothing was cut or removed");
    let end = log.end();
    // W8: a scan that reaches the damaged frame fails, naming it.
    let mut scan = log.scan(records[0].0).unwrap();
    let failed = scan.find_map(|item| item.err());
    match failed {
        Some(LogError::Corrupted { lsn, reason }) => {
            assert_eq!(lsn, victim, "W8: the error names the first bad frame ({reason})");
        }
        other => panic!("expected Corrupted, got {other:?}"),
    }
    // The records after it are all there: the end is that of the whole log.
    assert!(end > records.last().unwrap().0, "the end follows the last record");
}

#[test]
fn w8_missing_middle_segment_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), 200);
    let files = segment_files(dir.path());
    std::fs::remove_file(&files[2]).unwrap();
    match LogManager::open(small_config(dir.path())) {
        Err(LogError::Corrupted { lsn, .. }) => {
            assert_eq!(lsn, Lsn(2 * SEG), "W8: the missing segment's start")
        }
        other => panic!("expected Corrupted, got {other:?}"),
    }
}
