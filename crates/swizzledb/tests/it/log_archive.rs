//! The log archive (RECOVERY.md R17; wal README A1–A8), through the public API: every page
//! change of the log is archived once, under each page it changes; the log is never truncated
//! past the archive; an archive that does not continue the log is refused; a failed archiving
//! keeps the log instead of losing records.

use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::record::Record;
use swizzledb::{archive_dir, wal_dir, Archive, ArchiveEntry, Database, Error};
use swizzledb_io::{CrashMode, Fault, FaultFs, FaultRule, Op, Vfs};
use swizzledb_wal::{LogConfig, LogError, LogManager, Lsn};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn log_config(path: &Path, fs: &FaultFs, segment_bytes: u64) -> LogConfig {
    let mut c = LogConfig::new(wal_dir(path));
    c.vfs = Arc::new(fs.clone());
    c.segment_bytes = segment_bytes;
    c
}

/// 4 KiB pages, a pool of 256 of them, on `fs`.
/// No background archiver: the tests archive and checkpoint when they want.
fn builder(fs: &FaultFs) -> swizzledb::Builder {
    Database::builder()
        .page_size(4096)
        .pool_bytes(256 * 4096)
        .lab(|l| l.archive_interval(None).vfs(Arc::new(fs.clone())))
}

/// [`builder`] with 64 KiB log segments and a 256 KiB log bound, so checkpoints truncate.
fn small_log(fs: &FaultFs) -> swizzledb::Builder {
    builder(fs).log_segment_bytes(64 << 10).max_log_bytes(256 << 10)
}

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

/// Inserts, updates, deletes and an aborted transaction (its compensation records are page
/// changes too), enough for splits (structure records).
fn workload(db: &Database, from: u32, n: u32) {
    let t = db.tree("t").or_else(|_| db.create_tree("t")).unwrap();
    for i in from..from + n {
        t.upsert(&key(i), &[i as u8; 60]).unwrap();
    }
    for i in (from..from + n).step_by(5) {
        t.upsert(&key(i), b"updated").unwrap();
    }
    for i in (from..from + n).step_by(7) {
        assert!(t.delete(&key(i)).unwrap());
    }
    let mut tx = db.begin();
    tx.put(&t, b"zz-rolled-back", b"x").unwrap();
    tx.abort().unwrap();
}

/// The page changes the log holds below `end`, as the archive files them.
fn logged_changes(log: &LogManager, end: Lsn) -> Vec<ArchiveEntry> {
    let mut out = Vec::new();
    for item in log.scan(log.oldest()).unwrap() {
        let (lsn, body) = item.unwrap();
        if lsn >= end {
            break;
        }
        for page in Record::decode(&body).unwrap().pages_changed() {
            out.push(ArchiveEntry { page: page.get(), lsn, body: body.clone() });
        }
    }
    out.sort_by_key(|e| (e.page, e.lsn));
    out
}

#[test]
fn r17_every_page_change_is_archived_once_under_each_page_it_changes() {
    every_page_change_is_archived_once(None);
}

/// R17 with archive memory for a few hundred entries: each archiving sorts and spills chunks
/// (wal README A4b) and merges them into its one run, which is the same run.
#[test]
fn r17_an_archiving_that_spills_archives_the_same_changes() {
    let fs = every_page_change_is_archived_once(Some(16 << 10));
    assert!(fs.calls(Op::Remove, Some("spill")) >= 10, "precondition: the archiving spilled");
}

/// R17's test, with `memory` as `LabOptions::archive_memory`; returns the file system.
fn every_page_change_is_archived_once(memory: Option<usize>) -> FaultFs {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    // The whole log kept at close (R25): the test compares the archive with it.
    let mut builder = builder(&fs).log_archive(true).keep_log_on_close(true);
    if let Some(bytes) = memory {
        builder = builder.lab(|l| l.archive_memory(bytes));
    }
    let db = builder.clone().create(path).unwrap();
    workload(&db, 0, 1500);
    let run = db.archive_log().unwrap().expect("a run of the new records");
    assert!(run.entries > 1500, "R17: {run:?}");
    // The log's background flusher may have made a few more records durable since.
    if let Some(more) = db.archive_log().unwrap() {
        assert_eq!(more.begin, run.end, "A1: runs follow each other");
    }
    let runs = db.archive_runs().unwrap();
    assert!(runs.windows(2).all(|w| w[0].end == w[1].begin), "A1: {runs:?}");
    db.close().unwrap();

    // The log was not truncated (one segment), so it is the oracle.
    let log = LogManager::open(log_config(path, &fs, 16 << 20)).unwrap();
    assert_eq!(log.oldest(), Lsn(8), "precondition: nothing truncated");
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    assert_eq!(archive.begin(), Some(Lsn(8)));
    // Close's checkpoint archives what came after only if it holds page changes (or 1 MiB of
    // log): a stretch of checkpoint and page-write records alone makes no run.
    assert!(archive.runs().len() >= runs.len(), "no run was lost");
    let mut got = archive.entries().unwrap();
    got.sort_by_key(|e| (e.page, e.lsn));
    assert_eq!(
        got,
        logged_changes(&log, archive.end().unwrap()),
        "R17: the archive is the log's page changes"
    );
    // A page's history: every change of the first leaf, in LSN order.
    let page = got[0].page;
    let history: Vec<Lsn> = archive.page_entries(page, Lsn(0)).unwrap().iter().map(|e| e.lsn).collect();
    assert!(history.windows(2).all(|w| w[0] < w[1]) && !history.is_empty());
    drop((log, archive));

    let db = builder.open(path).unwrap();
    assert_eq!(db.tree("t").unwrap().get(&key(1)).unwrap(), Some(vec![1u8; 60]));
    assert!(db.archive_runs().unwrap().len() >= runs.len());
    drop(db);
    fs
}

#[test]
fn r17_the_log_is_truncated_but_never_past_the_archive() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let builder = small_log(&fs).log_archive(true);
    let db = builder.create(path).unwrap();
    for round in 0..6 {
        workload(&db, round * 400, 400);
        db.checkpoint().unwrap();
    }
    db.close().unwrap();
    let log = LogManager::open(log_config(path, &fs, 64 << 10)).unwrap();
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    assert!(log.oldest() > Lsn(8), "the log was truncated");
    assert_eq!(archive.begin(), Some(Lsn(8)), "the archive starts with the log");
    assert!(archive.end().unwrap() >= log.oldest(), "R17: no record between the archive and the log is lost");
    // What both still hold agrees.
    let both: Vec<ArchiveEntry> = {
        let mut v: Vec<_> =
            archive.entries().unwrap().into_iter().filter(|e| e.lsn >= log.oldest()).collect();
        v.sort_by_key(|e| (e.page, e.lsn));
        v
    };
    let logged: Vec<ArchiveEntry> = logged_changes(&log, archive.end().unwrap());
    assert_eq!(both, logged);
}

/// What [`workload`] leaves of `from..from + n`: the key and its value, or `None` if deleted.
fn workload_state(from: u32, n: u32) -> impl Iterator<Item = (Vec<u8>, Option<Vec<u8>>)> {
    (from..from + n).map(move |i| {
        let value = if (i - from).is_multiple_of(7) {
            None
        } else if (i - from).is_multiple_of(5) {
            Some(b"updated".to_vec())
        } else {
            Some(vec![i as u8; 60])
        };
        (key(i), value)
    })
}

/// A database at `/d/db` created with the archive (small log segments), one [`workload`] of 200
/// keys in it, closed; its file system, path and the builder without the archive option.
fn archived_with_a_workload() -> (FaultFs, &'static Path, swizzledb::Builder) {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let base = small_log(&fs);
    let db = base.clone().log_archive(true).create(path).unwrap();
    workload(&db, 0, 200);
    db.close().unwrap();
    (fs, path, base)
}

/// R17: a database that keeps an archive keeps it whatever the builder says. Opened once
/// without `log_archive(true)`, its checkpoints used to truncate the log past the archive's
/// end, and every later open with the option was refused (`ArchiveCorrupted`).
#[test]
fn r17_an_open_without_the_option_keeps_the_archive_going() {
    let (fs, path, base) = archived_with_a_workload();
    let db = base.clone().open(path).unwrap();
    let end = |db: &Database| db.archive_runs().and_then(|runs| runs.last().map(|r| r.end));
    let before = end(&db);
    for round in 0..6 {
        workload(&db, 1000 + round * 400, 400);
        db.checkpoint().unwrap();
    }
    let after = end(&db);
    db.close().unwrap();
    let db = base.clone().log_archive(true).open(path).expect("R17: the archive still continues the log");
    assert!(before.is_some() && after > before, "the open without the option archived what it logged");
    let t = db.tree("t").unwrap();
    for (from, n) in [(0, 200)].into_iter().chain((0..6).map(|round| (1000 + round * 400, 400))) {
        for (k, v) in workload_state(from, n) {
            assert_eq!(t.get(&k).unwrap(), v, "key {}", String::from_utf8_lossy(&k));
        }
    }
    db.close().unwrap();
    let log = LogManager::open(log_config(path, &fs, 64 << 10)).unwrap();
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    assert!(archive.end().unwrap() >= log.oldest(), "R17: the archive continues the log");
}

#[test]
fn r17_an_archive_that_does_not_continue_the_log_is_refused() {
    let (fs, path, base) = archived_with_a_workload();
    // With the archive's runs moved away the database keeps none, and the log is truncated
    // past their end.
    let runs = fs.list(&archive_dir(path)).unwrap();
    fs.create_dir_all(Path::new("/d/aside")).unwrap();
    let aside = |run: &Path| Path::new("/d/aside").join(run.file_name().unwrap());
    for run in &runs {
        fs.rename(run, &aside(run)).unwrap();
    }
    let db = base.clone().open(path).unwrap();
    for round in 0..6 {
        workload(&db, 1000 + round * 400, 400);
        db.checkpoint().unwrap();
    }
    db.close().unwrap();
    for run in &runs {
        fs.rename(&aside(run), run).unwrap();
    }
    for builder in [base.clone(), base.clone().log_archive(true)] {
        match builder.open(path) {
            Err(Error::Log(LogError::ArchiveCorrupted { run, reason })) => {
                assert_eq!(run, archive_dir(path));
                assert!(reason.contains("move the archive away"), "{reason}");
            }
            other => panic!("R17: expected the gap refused, got {:?}", other.map(|_| ())),
        }
    }
    // Moving it away starts a new archive.
    for f in fs.list(&archive_dir(path)).unwrap() {
        fs.remove(&f).unwrap();
    }
    let db = base.log_archive(true).open(path).unwrap();
    assert!(!db.archive_runs().unwrap().is_empty(), "the open's checkpoint archived the log");
}

#[test]
fn r17_a_failed_archiving_keeps_the_log_and_loses_no_commit() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let builder = small_log(&fs).log_archive(true);
    let db = builder.clone().create(path).unwrap();
    let archived = db.archive_runs().unwrap().last().map(|r| r.end);
    // Every run written from now on fails.
    fs.fail_next(FaultRule::new(Op::Write, Fault::Eio).on_path(".run.tmp").repeating());
    let t = db.create_tree("t").unwrap();
    for round in 0..3u32 {
        // 200-byte values, so the log passes its bound. One transaction a round: once the log
        // is over its bound, each `begin` waits up to two seconds for a cleaner that cannot
        // truncate (R15).
        db.transact(|tx| {
            for i in round * 500..(round + 1) * 500 {
                tx.put(&t, &key(i), &[i as u8; 200])?;
            }
            Ok(())
        })
        .unwrap();
        let err = db.checkpoint().expect_err("R17: the checkpoint reports the failed archiving");
        assert!(err.to_string().contains(".run.tmp"), "{err}");
    }
    assert!(db.archive_log().is_err(), "archiving reports the failure");
    assert_eq!(db.archive_runs().unwrap().last().map(|r| r.end), archived, "nothing archived");
    let kept = db.log_bytes().unwrap();
    assert!(kept > 256 << 10, "R17: the log is kept ({kept} bytes) rather than truncated past the archive");
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    fs.clear_faults();
    let db = builder.open(path).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..1500 {
        assert_eq!(t.get(&key(i)).unwrap(), Some(vec![i as u8; 200]), "key {i}");
    }
    assert!(
        db.archive_runs().unwrap().last().map(|r| r.end) > archived,
        "the open's checkpoint archived the kept log"
    );
}

/// R17: many checkpoints make many runs; the size tiers keep few of them, and merging loses and
/// repeats nothing.
#[test]
fn r17_size_tiers_keep_the_runs_few() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    // The whole log kept at close (R25): the test compares the archive with it.
    let builder = builder(&fs).log_archive(true).keep_log_on_close(true);
    let db = builder.create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for round in 0..120u32 {
        for i in 0..20 {
            t.upsert(&key(round * 20 + i), &[round as u8; 40]).unwrap();
        }
        db.checkpoint().unwrap();
        let runs = db.archive_runs().unwrap();
        assert!(runs.len() < 16, "round {round}: {} runs", runs.len());
        assert!(runs.windows(2).all(|w| w[0].end == w[1].begin), "A1");
    }
    db.close().unwrap();
    let log = LogManager::open(log_config(path, &fs, 16 << 20)).unwrap();
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    assert!(archive.runs().len() < 16);
    let mut got = archive.entries().unwrap();
    got.sort_by_key(|e| (e.page, e.lsn));
    assert_eq!(got, logged_changes(&log, archive.end().unwrap()), "merges lost or repeated nothing");
}

/// R17 with the background archiver and merger (the default): the archive follows the durable
/// log within a few intervals without any checkpoint, its runs stay few, and it equals the log's
/// page changes.
#[test]
fn r17_the_background_archiver_follows_the_log() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let db = builder(&fs)
        .log_archive(true)
        .lab(|l| l.archive_interval(Some(std::time::Duration::from_millis(5))))
        .checkpoint_interval(None)
        .create(path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for round in 0..60u32 {
        for i in 0..20 {
            t.upsert(&key(round * 20 + i), &[round as u8; 40]).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let runs = db.archive_runs().unwrap();
        assert!(runs.windows(2).all(|w| w[0].end == w[1].begin), "A1: {runs:?}");
        // Every upsert is a leaf change of one page: 1200 entries at least, once all are in.
        if runs.iter().map(|r| r.entries).sum::<u64>() >= 1200 && runs.len() < 16 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the archiver did not catch up: {runs:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(db.checkpoint_stats().unwrap().failed_archiving, 0);
    drop(t);
    db.close().unwrap();
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    let entries = archive.entries().unwrap();
    let mut keys: Vec<(u64, Lsn)> = entries.iter().map(|e| (e.page, e.lsn)).collect();
    let n = keys.len();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), n, "merging repeated no entry");
}

/// R17: archivings merge the runs the background merger has not reached once there are more
/// than 128. Only the merger merged while it ran, every interval; processes killed before it
/// got far (a kill harness: checkpoints and flushes among the writes, a kill within 300 ms of
/// each open) left every run their checkpoints made, the next ones added to them, and after
/// 200 kills the archive held 19,989 runs, each an open file at every open: too many open
/// files, for good. Here the merger never comes (an interval of a day).
#[test]
fn r17_runs_the_merger_has_not_reached_are_merged_by_archiving() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let day = std::time::Duration::from_secs(86_400);
    let db = builder(&fs).log_archive(true).lab(|l| l.archive_interval(Some(day))).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for round in 0..300u32 {
        t.upsert(&key(round), &[round as u8; 40]).unwrap();
        db.checkpoint().unwrap();
        let runs = db.archive_runs().unwrap().len();
        assert!(runs <= 129, "round {round}: {runs} runs");
    }
    db.close().unwrap();
}

/// R17: runs of very different sizes, one after the other — a burst of writes, then an
/// archiving with little new log (a checkpoint's, the background archiver's in a lull) — are
/// merged too. The tiers asked the newest eight runs to be of about one size (the largest at
/// most four times the smallest), so with a small run among every eight newest nothing ever
/// merged, not even past the 128 runs that make archiving merge itself: after 60 such pairs of
/// archivings the archive held 121 runs (25 after 12), one more per archiving for good.
#[test]
fn r17_runs_of_alternating_sizes_are_merged() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let builder = builder(&fs).log_archive(true).keep_log_on_close(true).checkpoint_interval(None);
    let db = builder.create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut sizes = Vec::new();
    for round in 0..60u32 {
        // About 600 KiB of entries (updates log both values): ten times the smallest run's.
        for i in 0..300 {
            t.upsert(&key(i), &[round as u8; 1000]).unwrap();
        }
        sizes.push(db.archive_log().unwrap().map(|r| r.bytes));
        t.upsert(b"small", &round.to_le_bytes()).unwrap();
        sizes.push(db.archive_log().unwrap().map(|r| r.bytes));
        let runs = db.archive_runs().unwrap();
        assert!(runs.windows(2).all(|w| w[0].end == w[1].begin), "A1");
        assert!(runs.len() < 24, "round {round}: {} runs; archivings made {sizes:?}", runs.len());
    }
    db.close().unwrap();
    let log = LogManager::open(log_config(path, &fs, 16 << 20)).unwrap();
    let archive = Archive::open(Arc::new(fs.clone()), archive_dir(path)).unwrap();
    let mut got = archive.entries().unwrap();
    got.sort_by_key(|e| (e.page, e.lsn));
    assert!(got.windows(2).all(|w| (w[0].page, w[0].lsn) < (w[1].page, w[1].lsn)), "merges repeated nothing");
    // The log bound truncated the log meanwhile: what it still holds is archived as it is.
    got.retain(|e| e.lsn >= log.oldest());
    assert_eq!(got, logged_changes(&log, archive.end().unwrap()), "merges lost nothing");
}
