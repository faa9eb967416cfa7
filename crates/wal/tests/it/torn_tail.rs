//! The end of the log (W7, W8): a torn or damaged tail ends the log at the first bad frame, is cut
//! so that no stale frame can come back, and damage below a durable point (a sync marker or a
//! valid later segment after it) is an error, or with `Recovery::PointInTime` a reported cut.

use crate::common;

use common::{scan_all, segment_files, small_config};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use swizzledb_wal::{LogConfig, LogError, LogManager, Lsn, Recovery};

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

/// Appends `n` records, makes the first `n - unsynced` durable with a flush, writes the last
/// `unsynced` to the segment file without syncing them (a read writes out), and then "kills" the
/// process: the log is forgotten, nothing more reaches the files. Returns all `n`.
fn write_log_then_kill(dir: &Path, n: usize, unsynced: usize) -> Vec<(Lsn, Vec<u8>)> {
    let log = LogManager::open(small_config(dir)).unwrap();
    let records: Vec<_> = (0..n - unsynced).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    let mut records = records;
    if let Some((last, _)) = records.last() {
        log.flush(*last).unwrap();
    }
    for i in n - unsynced..n {
        records.push((log.append(&body(i)).unwrap(), body(i)));
    }
    if let Some((last, _)) = records.last() {
        log.read(*last).unwrap();
    }
    std::mem::forget(log);
    records
}

fn point_in_time(dir: &Path) -> LogConfig {
    LogConfig { recovery: Recovery::PointInTime, ..small_config(dir) }
}

/// Every byte of every segment file, by name.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    segment_files(dir).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
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
    // W7 cut the torn bytes, and W13 allocated the segment whole again: zeros from the end on.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, SEG, "W13: the end segment is allocated whole");
    assert!(bytes[offset as usize..].iter().all(|&b| b == 0), "W7: the segment is cut at the end");
}

/// The record after a damaged one is still valid on disk. After the reopen, a new record of the
/// same size lands exactly where the damaged one was, so without the cut (W7) the stale record
/// behind it would validate again at its old LSN and reappear on the next open.
#[test]
fn w7_no_stale_record_reappears_after_append_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    // The last three records were written but never synced: a torn tail, not durable damage.
    let records = write_log_then_kill(dir.path(), 100, 3);
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

/// W8: a kill right after a flush acknowledged every record; the frame damaged later lies in the
/// segment the end is searched in, with valid frames of that segment after it. The sync marker
/// the flush wrote after its fsync proves the frame was durable: open refuses, naming it, and
/// changes nothing on disk.
#[test]
fn w8_damage_before_a_sync_marker_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log_then_kill(dir.path(), 100, 0);
    let (last, _) = records.last().unwrap();
    let victim_index = records.iter().position(|(l, _)| l.0 / SEG == last.0 / SEG).unwrap() + 1;
    assert!(victim_index + 2 < records.len(), "the test needs records after the victim in its segment");
    let victim = records[victim_index].0;
    flip(dir.path(), victim, 8 + 5);
    let before = snapshot(dir.path());

    match LogManager::open(small_config(dir.path())) {
        Err(LogError::DurableDamage(d)) => {
            assert_eq!(d.lsn, victim, "W8: the error names the damaged frame");
            assert!(d.durable > *last, "W8: the marker after the last flushed record proves it durable");
            let after = records.len() - victim_index - 1;
            assert!(
                d.records_beyond >= after as u64 - 1,
                "{} records beyond, {after} expected",
                d.records_beyond
            );
            assert!(d.bytes_beyond > 0);
            let message = LogError::DurableDamage(d.clone()).to_string();
            assert!(message.contains(&victim.to_string()) && message.contains("PointInTime"), "{message}");
        }
        other => panic!("expected DurableDamage, got {other:?}"),
    }
    assert_eq!(snapshot(dir.path()), before, "W8: a refused open changes nothing");
}

/// W8 with `Recovery::PointInTime`: open cuts at the damaged frame and reports it; new records
/// get LSNs above every dropped frame (W3), and the cut log reopens strictly without error.
#[test]
fn w8_point_in_time_cuts_at_the_damage_and_lsns_never_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log_then_kill(dir.path(), 100, 0);
    let (last, _) = records.last().unwrap();
    let victim_index = records.iter().position(|(l, _)| l.0 / SEG == last.0 / SEG).unwrap() + 1;
    let victim = records[victim_index].0;
    flip(dir.path(), victim, 2);

    let log = LogManager::open(point_in_time(dir.path())).unwrap();
    let damage = log.opened().damage.clone().expect("W8: the cut is reported");
    assert_eq!(damage.lsn, victim);
    assert_eq!(log.opened().torn_bytes, 0);
    assert_eq!(scan_all(&log), records[..victim_index], "everything before the damage, nothing after");
    assert!(log.end() > *last, "W3: new LSNs lie above every dropped frame");
    let lsn = log.append(b"after the cut").unwrap();
    assert!(lsn > *last);
    log.close().unwrap();

    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.opened().damage, None);
    let mut expected = records[..victim_index].to_vec();
    expected.push((lsn, b"after the cut".to_vec()));
    assert_eq!(scan_all(&log), expected, "W8: the cut log reads back whole");
}

/// W7 stays as it was for a kill: damage in bytes no sync round covered (no marker after them)
/// is a torn tail, cut silently, and reported only as torn bytes.
#[test]
fn w7_damage_in_the_unsynced_tail_after_a_kill_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log_then_kill(dir.path(), 100, 10);
    let victim = records[93].0;
    flip(dir.path(), victim, 8);
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.opened().damage, None);
    assert!(log.opened().torn_bytes > 0, "the torn tail is reported");
    assert_eq!(log.end(), victim);
    assert_eq!(scan_all(&log), records[..93]);
}

/// W8: damage in the newest segment's first frame makes open search the end from the segment
/// before; the sync markers after the damage still prove it durable. Strict refuses;
/// point-in-time recovery cuts there, keeping W3.
#[test]
fn w8_damage_at_the_newest_segments_first_frame_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), 200);
    // The first frame of the newest segment, so that open finds the end in the one before it.
    let newest = segment_files(dir.path()).len() as u64 - 1;
    // W1: that frame is the newest segment's first record, or the padding of a reservation that
    // crossed into it, before that record.
    let victim = Lsn(newest * SEG);
    let (victim_index, _) = records.iter().enumerate().find(|(_, (l, _))| *l >= victim).unwrap();
    // In its header: a padding frame's body is not checked (it holds nothing).
    flip(dir.path(), victim, 0);
    match LogManager::open(small_config(dir.path())) {
        Err(LogError::DurableDamage(d)) => assert_eq!(d.lsn, victim),
        other => panic!("expected DurableDamage, got {other:?}"),
    }
    let log = LogManager::open(point_in_time(dir.path())).unwrap();
    let damage = log.opened().damage.clone().expect("reported");
    assert_eq!(damage.lsn, victim);
    assert_eq!(scan_all(&log), records[..victim_index]);
    assert!(log.end() > records.last().unwrap().0, "W3");
}
