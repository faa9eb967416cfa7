//! Segment files (W1) and truncation (W9).

use crate::common;

use common::{scan_all, segment_files, small_config};
use swizzledb_wal::{LogConfig, LogError, LogManager, Lsn};

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

fn spare_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "spare"))
        .count()
}

#[test]
fn w15_truncated_segments_are_reused_for_new_ones_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = || LogConfig { spare_segments: 3, ..small_config(dir.path()) };
    let log = LogManager::open(config()).unwrap();
    let mut records: Vec<(Lsn, Vec<u8>)> =
        (0..100).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    log.flush_all().unwrap();
    let before = segment_files(dir.path()).len();
    assert!(before > 8, "the test needs many segments ({before})");
    let cut = records[90].0;
    log.truncate_before(cut).unwrap();
    let removed = before - segment_files(dir.path()).len();
    assert!(removed > 3);
    assert_eq!(spare_files(dir.path()), 3, "W15: as many spares as allowed, the rest removed");
    assert_eq!(log.stats().segments_recycled, 0);
    records.drain(..records.iter().position(|(l, _)| l.0 >= log.oldest().0).unwrap());

    // New segments take the spares first, then are created again.
    let created = log.stats().segments_created;
    records.extend((100..160).map(|i| (log.append(&body(i)).unwrap(), body(i))));
    log.flush_all().unwrap();
    let stats = log.stats();
    assert_eq!(stats.segments_recycled, 3, "W15: every spare reused");
    assert!(stats.segments_created > created, "then new files");
    assert_eq!(spare_files(dir.path()), 0);
    for (l, b) in &records {
        assert_eq!(&log.read(*l).unwrap(), b, "the record at {l}");
    }
    assert_eq!(scan_all(&log), records, "W15: the spares' old frames are never read as records");

    // A kill in the middle of a reused segment: its old bytes beyond the end never validate.
    let end = log.end();
    std::mem::forget(log);
    let log = LogManager::open(config()).unwrap();
    assert_eq!(log.end(), end, "W7: the end is found where it was");
    assert_eq!(scan_all(&log), records);
    log.close().unwrap();
}

/// W15: a new segment that takes a whole spare does not allocate it again (it is allocated and
/// written already); a created segment is allocated, and every segment is whole either way.
#[test]
fn w15_a_whole_spare_is_not_allocated_again() {
    use std::sync::atomic::Ordering::SeqCst;
    let dir = tempfile::tempdir().unwrap();
    let fs = common::TestFs::default();
    let faults = std::sync::Arc::clone(&fs.faults);
    let config = LogConfig { vfs: std::sync::Arc::new(fs), spare_segments: 3, ..small_config(dir.path()) };
    let log = LogManager::open(config).unwrap();
    let lsns: Vec<Lsn> = (0..100).map(|i| log.append(&body(i)).unwrap()).collect();
    log.flush_all().unwrap();
    log.truncate_before(lsns[90]).unwrap();
    assert_eq!(spare_files(dir.path()), 3);
    let (allocated, created) = (faults.allocates.load(SeqCst), log.stats().segments_created);
    for i in 100..160 {
        log.append(&body(i)).unwrap();
    }
    log.flush_all().unwrap();
    let stats = log.stats();
    assert_eq!(stats.segments_recycled, 3, "W15: every spare reused");
    assert!(stats.segments_created > created, "then new files");
    assert_eq!(
        faults.allocates.load(SeqCst) - allocated,
        stats.segments_created - created,
        "W13, W15: the created segments are allocated, the whole spares not again"
    );
    for f in segment_files(dir.path()) {
        assert_eq!(std::fs::metadata(&f).unwrap().len(), SEG, "W13: {} is whole", f.display());
    }
    log.close().unwrap();
}

#[test]
fn w15_a_scan_keeps_its_segments_from_being_recycled() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(LogConfig { spare_segments: 8, ..small_config(dir.path()) }).unwrap();
    let records: Vec<(Lsn, Vec<u8>)> = (0..60).map(|i| (log.append(&body(i)).unwrap(), body(i))).collect();
    log.flush_all().unwrap();
    let mut scan = log.scan(Lsn(0)).unwrap();
    let first = scan.next().unwrap().unwrap();
    assert_eq!(first, records[0]);
    log.truncate_before(records[59].0).unwrap();
    assert_eq!(spare_files(dir.path()), 0, "W15: files a scan holds are removed, not kept as spares");
    // New segments are created; none may overwrite what the scan still reads.
    for i in 60..120 {
        log.append(&body(i)).unwrap();
    }
    log.flush_all().unwrap();
    assert_eq!(log.stats().segments_recycled, 0);
    let rest: Vec<(Lsn, Vec<u8>)> = scan.collect::<Result<_, _>>().unwrap();
    assert_eq!(rest, records[1..], "the scan reads the truncated segments as they were");
}

#[test]
fn w15_spares_are_removed_at_a_clean_close_and_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = || LogConfig { spare_segments: 4, ..small_config(dir.path()) };
    let fill = |log: &LogManager| {
        let lsns: Vec<Lsn> = (0..40).map(|i| log.append(&body(i)).unwrap()).collect();
        log.flush_all().unwrap();
        log.truncate_before(*lsns.last().unwrap()).unwrap();
    };
    let log = LogManager::open(config()).unwrap();
    fill(&log);
    assert_eq!(spare_files(dir.path()), 4);
    log.close().unwrap();
    assert_eq!(spare_files(dir.path()), 0, "W15: a clean close gives the spares' space back");

    let log = LogManager::open(config()).unwrap();
    fill(&log);
    assert_eq!(spare_files(dir.path()), 4);
    std::mem::forget(log); // a kill
    let log = LogManager::open(config()).unwrap();
    assert_eq!(spare_files(dir.path()), 0, "W15: a kill's spares are removed at open");
    assert_eq!(log.stats().segments_recycled, 0);
}

#[test]
fn w15_no_spares_when_none_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(LogConfig { spare_segments: 0, ..small_config(dir.path()) }).unwrap();
    let lsns: Vec<Lsn> = (0..40).map(|i| log.append(&body(i)).unwrap()).collect();
    log.flush_all().unwrap();
    log.truncate_before(*lsns.last().unwrap()).unwrap();
    assert_eq!(spare_files(dir.path()), 0);
    for i in 0..40 {
        log.append(&body(i)).unwrap();
    }
    log.flush_all().unwrap();
    assert_eq!(log.stats().segments_recycled, 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    /// W15 with W7 and W8: appends, flushes and truncations that recycle segments, then a crash
    /// (every unsynced write lost, kept, or torn by sectors): the log reopens in the strict mode
    /// with a run of the records appended, in order, holding every acknowledged one that was not
    /// truncated away. A spare's old frames never validate where it is reused.
    #[test]
    fn w15_a_crash_among_recycled_segments_keeps_every_acknowledged_record(
        ops in proptest::collection::vec(0u8..12, 40..160),
        mode in 0u8..3,
        seed in proptest::prelude::any::<u64>(),
    ) {
        use swizzledb_io::{CrashMode, FaultFs};
        let fs = FaultFs::new();
        let config = || LogConfig {
            vfs: std::sync::Arc::new(fs.clone()),
            spare_segments: 3,
            ..small_config(std::path::Path::new("/db.wal"))
        };
        let log = LogManager::open(config()).unwrap();
        let mut all: Vec<(Lsn, Vec<u8>)> = Vec::new();
        let (mut acked, mut kept_from) = (0usize, 0usize);
        for (i, op) in ops.iter().enumerate() {
            match op {
                0..=7 => all.push((log.append(&body(i)).unwrap(), body(i))),
                8 | 9 => {
                    log.flush_all().unwrap();
                    acked = all.len();
                }
                _ if acked > kept_from => {
                    // Truncate below an acknowledged record, somewhere after the last cut.
                    kept_from += (i * 7919) % (acked - kept_from);
                    log.truncate_before(all[kept_from].0).unwrap();
                }
                _ => {}
            }
        }
        let recycled = log.stats().segments_recycled;
        std::mem::forget(log);
        fs.crash(match mode {
            0 => CrashMode::DropUnsynced,
            1 => CrashMode::KeepUnsynced,
            _ => CrashMode::Torn { seed },
        });
        let log = LogManager::open(config()).unwrap_or_else(|e| panic!("reopen ({recycled} recycled): {e}"));
        let got = scan_all(&log);
        let k = got.first().map_or(kept_from, |g| all.iter().position(|r| r == g).expect("a record that was appended"));
        proptest::prop_assert!(k <= kept_from, "W9: nothing at or after the cut is gone (first kept {k}, cut {kept_from})");
        proptest::prop_assert_eq!(&got[..], &all[k..k + got.len()], "a run of the appended records, in order");
        proptest::prop_assert!(k + got.len() >= acked, "every acknowledged record is back ({} of {acked})", k + got.len());
    }
}

#[test]
fn w15_the_flusher_prepares_a_spare_ahead_of_need() {
    let dir = tempfile::tempdir().unwrap();
    let config = || LogConfig {
        flush_interval: Some(std::time::Duration::from_millis(1)),
        spare_segments: 2,
        ..small_config(dir.path())
    };
    let log = LogManager::open(config()).unwrap();
    let mut records = Vec::new();
    while log.end().0 % SEG < SEG / 2 {
        let i = records.len();
        records.push((log.append(&body(i)).unwrap(), body(i)));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while log.stats().segments_prepared == 0 {
        assert!(std::time::Instant::now() < deadline, "W15: no spare prepared past half a segment");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(spare_files(dir.path()), 1);
    let first = segment_files(dir.path()).len();
    while segment_files(dir.path()).len() == first {
        let i = records.len();
        records.push((log.append(&body(i)).unwrap(), body(i)));
        log.flush_all().unwrap();
    }
    assert!(log.stats().segments_recycled >= 1, "W15: the next segment took the prepared spare");
    assert_eq!(scan_all(&log), records, "the spare's zeros never read as records");
    let end = log.end();
    std::mem::forget(log);
    let log = LogManager::open(config()).unwrap();
    assert_eq!(log.end(), end);
    assert_eq!(scan_all(&log), records);
    log.close().unwrap();
    assert_eq!(spare_files(dir.path()), 0, "W15: none left after a clean close");
}

/// W16: `stop_background` ends the flusher (and a spare it prepared stays a finished one or is
/// removed): afterwards nothing reaches the log's files unless asked — a record appended then
/// is not made durable by any round, whatever time passes, until `flush_all` — and a second
/// call changes nothing.
#[test]
fn w16_after_stop_background_the_log_writes_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(LogConfig {
        flush_interval: Some(std::time::Duration::from_millis(1)),
        spare_segments: 2,
        ..small_config(dir.path())
    })
    .unwrap();
    assert!(log.background_running());
    for i in 0..6 {
        log.append(&body(i)).unwrap();
    }
    // The flusher makes them durable by itself while it runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.durable().0 == 0 {
        assert!(std::time::Instant::now() < deadline, "W6: no background round made anything durable");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    log.stop_background();
    assert!(!log.background_running());
    log.stop_background();
    let files = |d: &std::path::Path| {
        let mut v: Vec<(std::ffi::OsString, u64)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.metadata().unwrap().len())
            })
            .collect();
        v.sort();
        v
    };
    let before = files(dir.path());
    let lsn = log.append(&body(7)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(log.durable() <= lsn, "W16: a round ran after stop_background");
    assert_eq!(files(dir.path()), before, "W16: the files changed with no one asking");
    log.flush_all().unwrap();
    assert!(log.durable() > lsn, "a flush on request still works");
    assert_eq!(scan_all(&log).last().map(|(l, _)| *l), Some(lsn));
    log.close().unwrap();
}
