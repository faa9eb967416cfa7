//! The log archive (README A1–A9): runs sorted by (page, LSN) and indexed by page, merged in
//! order, checked on every read, crash-safe at every I/O call of adding and merging runs; each
//! run's state and its index's last LSN per page, what instant restart reads instead of the log.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb_io::{CrashMode, Fault, FaultFs, FaultRule, Op, Vfs};
use swizzledb_wal::archive::MAX_STATE;
use swizzledb_wal::{Archive, ArchiveEntry as Entry, LogError, Lsn};

const DIR: &str = "/db.wal/archive";

fn fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/db.wal")).unwrap();
    fs
}

fn open(fs: &FaultFs) -> Result<Archive, LogError> {
    Archive::open(Arc::new(fs.clone()), DIR)
}

fn entry(page: u64, lsn: u64) -> Entry {
    let body = format!("page {page} at {lsn}").into_bytes().repeat(1 + (lsn % 3) as usize);
    Entry { page, lsn: Lsn(lsn), body }
}

/// The engine's state as of `end`, as the tests store it: lengths that need padding and not.
fn state(end: u64) -> Vec<u8> {
    format!("analysis as of {end};").into_bytes().repeat(1 + (end % 7) as usize)
}

/// Runs over [8, 100), [100, 200), [200, 300) with pages 1..=5 changed at every 7th LSN, each
/// with the state as of its end.
fn three_runs(a: &Archive) -> Vec<Entry> {
    let mut all = Vec::new();
    for (b, e) in [(8, 100), (100, 200), (200, 300)] {
        let entries: Vec<Entry> = (b..e).step_by(7).map(|l| entry(1 + l % 5, l)).collect();
        all.extend(entries.iter().cloned());
        // Handed over unsorted: the archive sorts.
        let mut shuffled = entries;
        shuffled.reverse();
        a.add_run_with_state(Lsn(b), Lsn(e), shuffled, &state(e)).unwrap();
    }
    all
}

/// The model of `last_lsns_since` (A9): every page with an entry in a run (of `intervals`)
/// ending after `from`, with its largest LSN there.
fn model_last_lsns(entries: &[Entry], intervals: &[(Lsn, Lsn)], from: Lsn) -> Vec<(u64, Lsn)> {
    let mut m: BTreeMap<u64, Lsn> = BTreeMap::new();
    for e in entries {
        let &(_, end) = intervals.iter().find(|&&(b, end)| b <= e.lsn && e.lsn < end).expect("in a run");
        if end > from {
            let last = m.entry(e.page).or_insert(e.lsn);
            *last = (*last).max(e.lsn);
        }
    }
    m.into_iter().collect()
}

fn intervals(a: &Archive) -> Vec<(Lsn, Lsn)> {
    a.runs().iter().map(|r| (r.begin, r.end)).collect()
}

/// `last_lsns_since` against the model built from `entries()` and the runs' intervals, for
/// `from` at 0, at every run boundary, inside every run and past the end.
fn assert_last_lsns(a: &Archive) {
    let (entries, intervals) = (a.entries().unwrap(), intervals(a));
    let mut froms = vec![Lsn(0), Lsn(u64::MAX)];
    for &(b, e) in &intervals {
        froms.extend([b, Lsn(b.0 + (e.0 - b.0) / 2), Lsn(e.0 - 1), e]);
    }
    for from in froms {
        assert_eq!(a.last_lsns_since(from), model_last_lsns(&entries, &intervals, from), "A9: from {from}");
    }
}

fn padded(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// The model: page -> its entries in LSN order.
fn by_page(entries: &[Entry]) -> BTreeMap<u64, Vec<Entry>> {
    let mut m: BTreeMap<u64, Vec<Entry>> = BTreeMap::new();
    for e in entries {
        m.entry(e.page).or_default().push(e.clone());
    }
    for v in m.values_mut() {
        v.sort_by_key(|e| e.lsn);
    }
    m
}

fn assert_holds(a: &Archive, want: &[Entry]) {
    for (page, entries) in by_page(want) {
        assert_eq!(a.page_entries(page, Lsn(0)).unwrap(), entries, "A5: page {page}");
        let from = entries[entries.len() / 2].lsn;
        let later: Vec<_> = entries.iter().filter(|e| e.lsn >= from).cloned().collect();
        assert_eq!(a.page_entries(page, from).unwrap(), later, "A5: page {page} from {from}");
    }
    assert!(a.page_entries(999, Lsn(0)).unwrap().is_empty());
    // A5b: any LSN interval, in (page, LSN) order, across run boundaries.
    for (from, to) in [(0, u64::MAX), (8, 100), (50, 250), (99, 101), (150, 150), (299, 400)] {
        let mut want: Vec<Entry> = want.iter().filter(|e| e.lsn.0 >= from && e.lsn.0 < to).cloned().collect();
        want.sort_by_key(|e| (e.page, e.lsn));
        assert_eq!(a.entries_between(Lsn(from), Lsn(to)).unwrap(), want, "A5b: [{from}, {to})");
    }
    let mut got = a.entries().unwrap();
    let mut all = want.to_vec();
    got.sort_by_key(|e| (e.page, e.lsn));
    all.sort_by_key(|e| (e.page, e.lsn));
    assert_eq!(got, all, "every entry once");
}

fn run_paths(fs: &FaultFs) -> Vec<PathBuf> {
    let mut v: Vec<_> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "run"))
        .collect();
    v.sort();
    v
}

#[test]
fn a5_a_page_s_changes_come_back_in_lsn_order_across_runs_and_reopening() {
    let fs = fs();
    let a = open(&fs).unwrap();
    assert_eq!((a.begin(), a.end()), (None, None));
    let all = three_runs(&a);
    assert_eq!((a.begin(), a.end()), (Some(Lsn(8)), Some(Lsn(300))));
    assert_holds(&a, &all);
    let runs = a.runs();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs.iter().map(|r| r.entries).sum::<u64>(), all.len() as u64);
    assert!(runs.iter().all(|r| r.pages == 5));
    drop(a);
    let a = open(&fs).unwrap();
    assert_eq!(a.runs(), runs, "A6: reopened as written");
    assert_holds(&a, &all);
}

#[test]
fn a4_a_run_must_follow_the_archive_and_hold_its_interval_only() {
    let fs = fs();
    let a = open(&fs).unwrap();
    a.add_run(Lsn(8), Lsn(100), vec![entry(1, 8)]).unwrap();
    for (b, e, entries) in [
        (101, 200, vec![]),                             // a gap
        (50, 200, vec![]),                              // an overlap
        (100, 100, vec![]),                             // empty interval
        (100, 200, vec![entry(1, 200)]),                // entry past the end
        (100, 200, vec![entry(1, 99)]),                 // entry before the begin
        (100, 200, vec![entry(1, 150), entry(1, 150)]), // the same (page, LSN) twice
    ] {
        let err = a.add_run(Lsn(b), Lsn(e), entries).unwrap_err();
        assert!(matches!(err, LogError::BadConfig { .. }), "[{b}, {e}): {err}");
    }
    assert_eq!(a.end(), Some(Lsn(100)), "nothing added");
    a.add_run(Lsn(100), Lsn(200), Vec::new()).unwrap();
    assert_eq!(open(&fs).unwrap().end(), Some(Lsn(200)), "an empty run still moves the end");
}

#[test]
fn a7_merging_keeps_every_entry_and_removes_the_inputs() {
    let fs = fs();
    let a = open(&fs).unwrap();
    let all = three_runs(&a);
    assert_eq!(a.merge_oldest(1).unwrap(), None, "one run is no merge");
    let m = a.merge_oldest(2).unwrap().expect("two runs merged");
    assert_eq!((m.begin, m.end), (Lsn(8), Lsn(200)));
    assert_eq!(a.runs().len(), 2);
    assert_holds(&a, &all);
    let m = a.merge_oldest(usize::MAX).unwrap().expect("the rest merged");
    assert_eq!((m.begin, m.end, m.entries), (Lsn(8), Lsn(300), all.len() as u64));
    assert_eq!(run_paths(&fs).len(), 1, "A7: inputs removed");
    assert_holds(&open(&fs).unwrap(), &all);
}

#[test]
fn a3_damage_is_an_error_naming_the_run() {
    let fs = fs();
    let a = open(&fs).unwrap();
    let all = three_runs(&a);
    drop(a);
    let second = run_paths(&fs)[1].clone();
    let bytes = fs.contents(&second).unwrap();
    let write = |b: &[u8]| {
        let f = fs.open(&second, swizzledb_io::OpenMode::EXISTING).unwrap();
        f.write_all_at(b, 0).unwrap();
        f.sync().unwrap();
    };
    // An entry's body: open succeeds (header and index are fine), the read fails.
    let mut damaged = bytes.clone();
    damaged[64 + 30] ^= 1;
    write(&damaged);
    let a = open(&fs).unwrap();
    let page = u64::from_le_bytes(bytes[64..72].try_into().unwrap());
    match a.page_entries(page, Lsn(0)) {
        Err(LogError::ArchiveCorrupted { run, .. }) => assert_eq!(run, second),
        other => panic!("A3: expected the damage named, got {other:?}"),
    }
    assert!(matches!(a.merge_oldest(3), Err(LogError::ArchiveCorrupted { ref run, .. }) if *run == second));
    assert_eq!(a.runs().len(), 3, "a failed merge changes nothing");
    // Pages of the other runs still read.
    assert_eq!(
        a.page_entries(page, Lsn(200)).unwrap(),
        by_page(&all)[&page].iter().filter(|e| e.lsn >= Lsn(200)).cloned().collect::<Vec<_>>()
    );
    drop(a);
    // The header: open fails naming the run.
    let mut damaged = bytes.clone();
    damaged[20] ^= 1;
    write(&damaged);
    match open(&fs) {
        Err(e @ LogError::ArchiveCorrupted { .. }) => {
            assert!(e.to_string().contains(&*second.to_string_lossy()), "{e}")
        }
        other => panic!("A3: expected the damaged header named, got {other:?}"),
    }
    // Cut short.
    let f = fs.open(&second, swizzledb_io::OpenMode::EXISTING).unwrap();
    f.write_all_at(&bytes, 0).unwrap();
    f.set_len(bytes.len() as u64 - 8).unwrap();
    f.sync().unwrap();
    assert!(matches!(open(&fs), Err(LogError::ArchiveCorrupted { ref run, .. }) if *run == second));
    // Missing: a gap between the first and the third run.
    fs.remove(&second).unwrap();
    assert!(matches!(open(&fs), Err(LogError::ArchiveCorrupted { .. })), "A6: a gap is damage");
}

#[test]
fn a9_the_newest_run_s_state_comes_back_through_reopening_and_merges() {
    let fs = fs();
    let a = open(&fs).unwrap();
    assert_eq!(a.newest_state().unwrap(), None, "A9: an empty archive has no state");
    let all = three_runs(&a);
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))));
    let sizes: Vec<u64> = a.runs().iter().map(|r| r.state_bytes).collect();
    assert_eq!(sizes, [100, 200, 300].map(|e| state(e).len() as u64));
    drop(a);
    let a = open(&fs).unwrap();
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))), "A9: reopened");
    // Merging the older runs: the merged run takes its newer input's state; the newest is kept.
    let m = a.merge_oldest(2).unwrap().expect("merged");
    assert_eq!(m.state_bytes, state(200).len() as u64, "A7: the newest input's state");
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))));
    let m = a.merge_oldest(2).unwrap().expect("merged");
    assert_eq!((m.end, m.state_bytes), (Lsn(300), state(300).len() as u64));
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))), "A7: read from the merged run");
    assert_holds(&a, &all);
    drop(a);
    let a = open(&fs).unwrap();
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))), "A9: the merged run reopened");
    // A newer run without a state: there is no current state, an older one is never returned.
    a.add_run(Lsn(300), Lsn(400), vec![entry(1, 300)]).unwrap();
    assert_eq!(a.newest_state().unwrap(), None, "A9: an empty state reads as None");
    // A merge whose newest input has no state has none either.
    let m = a.merge_oldest(2).unwrap().expect("merged");
    assert_eq!(m.state_bytes, 0);
    assert_eq!(a.newest_state().unwrap(), None, "A7: the newest input's (empty) state");
    // States of a multiple of 8 bytes, of 1 byte, larger than a write chunk, of binary zeros.
    let large: Vec<u8> = (0..(1 << 20) + 5).map(|i: u32| (i % 251) as u8).collect();
    for (b, e, st) in
        [(400, 500, vec![7u8; 16]), (500, 550, vec![9u8]), (550, 600, large), (600, 700, vec![0u8; 13])]
    {
        a.add_run_with_state(Lsn(b), Lsn(e), vec![entry(2, b)], &st).unwrap();
        assert_eq!(a.newest_state().unwrap(), Some((Lsn(e), st.clone())));
    }
    drop(a);
    let a = open(&fs).unwrap();
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(700), vec![0u8; 13])));
    // Two runs with states merged: the merged run's state is the newer one's, byte for byte.
    let m = a.merge(2, 2).unwrap().expect("merged");
    assert_eq!((m.begin, m.end, m.state_bytes), (Lsn(500), Lsn(600), (1 << 20) + 5), "the large state");
    let m = a.merge(2, 2).unwrap().expect("merged");
    assert_eq!((m.begin, m.end, m.state_bytes), (Lsn(500), Lsn(700), 13));
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(700), vec![0u8; 13])));
    let m = a.merge(1, 2).unwrap().expect("merged");
    assert_eq!((m.begin, m.end), (Lsn(400), Lsn(700)));
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(700), vec![0u8; 13])));
    let fresh = two_stated_runs();
    let m = fresh.merge_oldest(2).unwrap().expect("merged");
    assert_eq!(m.state_bytes, 3);
    assert_eq!(
        fresh.newest_state().unwrap(),
        Some((Lsn(200), b"new".to_vec())),
        "A7: the newer input's bytes"
    );
}

/// An archive of two runs, [8, 100) with state "old state" and [100, 200) with state "new".
fn two_stated_runs() -> Archive {
    let a = open(&fs()).unwrap();
    a.add_run_with_state(Lsn(8), Lsn(100), vec![entry(1, 8)], b"old state").unwrap();
    a.add_run_with_state(Lsn(100), Lsn(200), vec![entry(1, 100)], b"new").unwrap();
    a
}

#[test]
fn a4_a_state_over_the_bound_is_refused() {
    let fs = fs();
    let a = open(&fs).unwrap();
    a.add_run_with_state(Lsn(8), Lsn(100), vec![entry(1, 8)], b"s").unwrap();
    let big = vec![0u8; MAX_STATE + 1];
    match a.add_run_with_state(Lsn(100), Lsn(200), vec![entry(1, 100)], &big) {
        Err(e @ LogError::BadConfig { .. }) => assert!(e.to_string().contains("state"), "{e}"),
        other => panic!("A4: expected the state refused, got {other:?}"),
    }
    assert_eq!((a.end(), a.runs().len()), (Some(Lsn(100)), 1), "nothing added");
    assert!(fs.list(Path::new(DIR)).unwrap().iter().all(|p| p.extension().is_some_and(|x| x == "run")));
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(100), b"s".to_vec())));
}

#[test]
fn a9_last_lsns_since_matches_the_entries_for_any_from() {
    let fs = fs();
    let a = open(&fs).unwrap();
    assert!(a.last_lsns_since(Lsn(0)).is_empty(), "an empty archive");
    three_runs(&a);
    // Pages that only some runs hold; page 9 changes early in [300, 400) only.
    a.add_run(Lsn(300), Lsn(400), vec![entry(9, 301), entry(6, 390), entry(1, 350), entry(6, 320)]).unwrap();
    a.add_run(Lsn(400), Lsn(500), Vec::new()).unwrap();
    a.add_run(Lsn(500), Lsn(600), vec![entry(7, 599), entry(2, 500)]).unwrap();
    assert_last_lsns(&a);
    // Inside a run every page of the run counts, also one changed before `from` only.
    assert_eq!(
        a.last_lsns_since(Lsn(350)),
        vec![(1, Lsn(350)), (2, Lsn(500)), (6, Lsn(390)), (7, Lsn(599)), (9, Lsn(301))]
    );
    assert_eq!(a.last_lsns_since(Lsn(400)), vec![(2, Lsn(500)), (7, Lsn(599))], "the empty run adds nothing");
    assert!(a.last_lsns_since(Lsn(600)).is_empty(), "nothing after the end");
    drop(a);
    let a = open(&fs).unwrap();
    assert_last_lsns(&a);
    // Merged runs answer at their coarser granularity.
    a.merge(1, 3).unwrap().expect("merged");
    assert_last_lsns(&a);
    a.merge_oldest(usize::MAX).unwrap().expect("merged");
    assert_eq!(a.runs().len(), 1);
    assert_last_lsns(&a);
    drop(a);
    assert_last_lsns(&open(&fs).unwrap());
}

#[test]
fn a3_a_damaged_state_is_an_error_naming_the_run_when_it_is_read() {
    let fs = fs();
    let a = open(&fs).unwrap();
    let all = three_runs(&a);
    drop(a);
    let newest = run_paths(&fs)[2].clone();
    let bytes = fs.contents(&newest).unwrap();
    let len = state(300).len();
    assert_ne!(len % 8, 0, "the state needs padding");
    let start = bytes.len() - 8 - padded(len);
    let write = |b: &[u8]| {
        let f = fs.open(&newest, swizzledb_io::OpenMode::EXISTING).unwrap();
        f.write_all_at(b, 0).unwrap();
        f.sync().unwrap();
    };
    // A state byte, a padding byte, the checksum, the zero word after it.
    for at in [start + 3, start + len, bytes.len() - 8, bytes.len() - 2] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        write(&damaged);
        // Open reads only the header and the index (A3): the state is checked when read.
        let a = open(&fs).unwrap_or_else(|e| panic!("A3: open checks the state lazily (byte {at}): {e}"));
        match a.newest_state() {
            Err(e @ LogError::ArchiveCorrupted { .. }) => {
                assert!(matches!(&e, LogError::ArchiveCorrupted { run, .. } if *run == newest), "{e}");
                assert!(e.to_string().contains("state"), "{e}");
            }
            other => panic!("A3: expected the damaged state (byte {at}) named, got {other:?}"),
        }
        assert_holds(&a, &all);
        assert_last_lsns(&a);
        // A merge whose newest input it is fails before writing; one without it works.
        assert!(matches!(a.merge(1, 2), Err(LogError::ArchiveCorrupted { ref run, .. }) if *run == newest));
        assert_eq!(a.runs().len(), 3, "a failed merge changes nothing");
        assert_eq!(run_paths(&fs).len(), 3);
        drop(a);
    }
    write(&bytes);
    let a = open(&fs).unwrap();
    a.merge_oldest(2).unwrap().expect("merged without the damaged run");
    assert_eq!(a.newest_state().unwrap(), Some((Lsn(300), state(300))));
}

#[test]
fn a3_a_run_of_format_version_1_is_refused_with_what_to_do() {
    let fs = fs();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    // A version-1 run without entries: header, an empty index, its checksum and a zero word.
    let mut run = vec![0u8; 72];
    run[..8].copy_from_slice(b"SWZARCRN");
    run[8..12].copy_from_slice(&1u32.to_le_bytes());
    run[16..24].copy_from_slice(&8u64.to_le_bytes());
    run[24..32].copy_from_slice(&100u64.to_le_bytes());
    let crc = crc32c::crc32c(&run[..60]);
    run[60..64].copy_from_slice(&crc.to_le_bytes());
    let path = Path::new(DIR).join("0000000000000008-0000000000000064.run");
    let f = fs.open(&path, swizzledb_io::OpenMode::CREATE_NEW).unwrap();
    f.write_all_at(&run, 0).unwrap();
    f.sync().unwrap();
    drop(f);
    match open(&fs) {
        Err(LogError::ArchiveCorrupted { run, reason }) => {
            assert_eq!(run, path);
            assert!(reason.contains("older version"), "{reason}");
            assert!(reason.contains("move the archive directory away"), "{reason}");
        }
        other => panic!("A3: expected the version-1 run refused, got {other:?}"),
    }
    assert!(fs.contents(&path).is_some(), "the run is left alone");
}

#[test]
fn a6_a_crash_between_the_merged_run_and_the_inputs_removal_loses_and_repeats_nothing() {
    let fs = fs();
    let a = open(&fs).unwrap();
    let all = three_runs(&a);
    // The first input's removal fails (after the merged run is in place).
    fs.fail_next(FaultRule::new(Op::Remove, Fault::Eio).on_path("0000000000000008-0000000000000064.run"));
    assert!(matches!(a.merge_oldest(2), Err(LogError::Io { .. })));
    // The merge's output is in place, so the archive answers from it.
    assert_holds(&a, &all);
    drop(a);
    fs.crash(CrashMode::DropUnsynced);
    assert_eq!(run_paths(&fs).len(), 4, "the merged run and its inputs");
    let a = open(&fs).unwrap();
    assert_eq!(a.runs().len(), 2, "A6: covered inputs removed at open");
    assert_eq!(run_paths(&fs).len(), 2);
    assert_holds(&a, &all);
}

/// A4, A7: a fault at each I/O call of adding a run and of a merge, then a power loss: the
/// archive reopens with the state before or after the call, never a mix.
#[test]
fn a4_a7_a_fault_at_any_io_call_leaves_the_old_or_the_new_archive() {
    let ops = [Op::Open, Op::Write, Op::Sync, Op::Rename, Op::SyncDir, Op::Remove, Op::Read];
    for op in ops {
        for step in ["add", "merge"] {
            // Count the calls of this step.
            let probe = fs();
            let a = open(&probe).unwrap();
            let before = three_runs(&a);
            let calls0 = probe.calls(op, None);
            let extra: Vec<Entry> = (300..400).step_by(3).map(|l| entry(l % 4, l)).collect();
            if step == "add" {
                a.add_run_with_state(Lsn(300), Lsn(400), extra.clone(), &state(400)).unwrap();
            } else {
                a.merge_oldest(3).unwrap();
            }
            let n = probe.calls(op, None) - calls0;
            for k in 1..=n {
                let fs = fs();
                let a = open(&fs).unwrap();
                three_runs(&a);
                fs.fail_next(FaultRule::new(op, Fault::Eio).nth(k));
                let result = if step == "add" {
                    a.add_run_with_state(Lsn(300), Lsn(400), extra.clone(), &state(400)).map(|_| ())
                } else {
                    a.merge_oldest(3).map(|_| ())
                };
                assert!(result.is_err() || op == Op::Read, "{op:?} #{k} of {step} must fail");
                drop(a);
                fs.crash(CrashMode::DropUnsynced);
                let a = open(&fs).unwrap_or_else(|e| panic!("{op:?} #{k} of {step}: reopen: {e}"));
                let mut want = before.clone();
                let end = if step == "add" && a.end() == Some(Lsn(400)) {
                    want.extend(extra.iter().cloned());
                    400
                } else {
                    assert_eq!(a.end(), Some(Lsn(300)), "{op:?} #{k} of {step}");
                    300
                };
                assert_holds(&a, &want);
                assert_eq!(a.newest_state().unwrap(), Some((Lsn(end), state(end))), "{op:?} #{k} of {step}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A5, A7, A9 against a model: random entries cut into runs at random LSNs, each with a
    /// random state (often none), merged at random points; every page's history, the whole
    /// content, each run's state, the newest state and `last_lsns_since` always match.
    #[test]
    fn a5_a7_runs_and_merges_match_the_model(
        changes in prop::collection::vec((0u64..20, 1usize..40), 1..120),
        cuts in prop::collection::vec(1usize..120, 0..6),
        states in prop::collection::vec(prop_oneof![Just(0usize), 1usize..40], 7),
        merges in prop::collection::vec((0usize..6, 2usize..5), 0..4),
    ) {
        let fs = fs();
        let a = open(&fs).unwrap();
        let entries: Vec<Entry> = changes.iter().enumerate().map(|(i, &(page, len))| {
            Entry { page, lsn: Lsn(8 + 16 * i as u64), body: vec![page as u8; len] }
        }).collect();
        let end = 8 + 16 * entries.len() as u64;
        let mut bounds: Vec<u64> = cuts.iter().map(|&c| 8 + 16 * (c.min(entries.len()) as u64)).collect();
        bounds.push(8);
        bounds.push(end);
        bounds.sort_unstable();
        bounds.dedup();
        // The model of the runs: (begin, end, state), oldest first.
        let mut model: Vec<(Lsn, Lsn, Vec<u8>)> = Vec::new();
        for (i, w) in bounds.windows(2).enumerate() {
            let part: Vec<Entry> = entries.iter().filter(|e| e.lsn.0 >= w[0] && e.lsn.0 < w[1]).cloned().collect();
            let st: Vec<u8> = (0..states[i]).map(|k| (w[1] as usize + k) as u8).collect();
            let run = a.add_run_with_state(Lsn(w[0]), Lsn(w[1]), part, &st).unwrap();
            prop_assert_eq!(run.state_bytes, st.len() as u64);
            model.push((Lsn(w[0]), Lsn(w[1]), st));
        }
        let check = |a: &Archive, model: &[(Lsn, Lsn, Vec<u8>)]| -> Result<(), TestCaseError> {
            let runs = a.runs();
            let got: Vec<_> = runs.iter().map(|r| (r.begin, r.end, r.state_bytes)).collect();
            let want: Vec<_> = model.iter().map(|(b, e, st)| (*b, *e, st.len() as u64)).collect();
            prop_assert_eq!(got, want, "A7: intervals and states");
            let newest = model.last().filter(|m| !m.2.is_empty()).map(|m| (m.1, m.2.clone()));
            prop_assert_eq!(a.newest_state().unwrap(), newest, "A9: newest state");
            let intervals: Vec<(Lsn, Lsn)> = model.iter().map(|m| (m.0, m.1)).collect();
            let mut froms = vec![Lsn(0), Lsn(end), Lsn(end + 100)];
            for &(b, e) in &intervals {
                froms.extend([b, Lsn(b.0 + 8), Lsn((b.0 + e.0) / 2), Lsn(e.0 - 1)]);
            }
            for from in froms {
                prop_assert_eq!(a.last_lsns_since(from), model_last_lsns(&entries, &intervals, from), "A9: from {}", from);
            }
            Ok(())
        };
        check(&a, &model)?;
        for (first, n) in merges {
            let before = a.runs();
            let merged = a.merge(first, n).unwrap();
            let after = a.runs();
            match merged {
                Some(m) => {
                    let k = n.min(before.len() - first);
                    prop_assert_eq!(after.len(), before.len() + 1 - k);
                    prop_assert_eq!(&after[first], &m);
                    prop_assert_eq!(m.begin, before[first].begin);
                    let joined = (model[first].0, model[first + k - 1].1, model[first + k - 1].2.clone());
                    model.splice(first..first + k, [joined]);
                }
                None => prop_assert_eq!(&after, &before),
            }
            prop_assert!(after.windows(2).all(|w| w[0].end == w[1].begin), "A1");
            assert_holds(&a, &entries);
            check(&a, &model)?;
        }
        assert_holds(&a, &entries);
        drop(a);
        let a = open(&fs).unwrap();
        assert_holds(&a, &entries);
        check(&a, &model)?;
    }
}

/// Entries over [300, 2300): pages 0..40, bodies of 1 to 120 bytes, in an order far from
/// (page, LSN) order.
fn scattered() -> Vec<Entry> {
    let mut v: Vec<Entry> = (300..2300u64)
        .step_by(2)
        .map(|l| Entry {
            page: (l * 7919) % 40,
            lsn: Lsn(l),
            body: vec![(l % 251) as u8; 1 + (l % 120) as usize],
        })
        .collect();
    v.reverse();
    v
}

/// The directory's files other than run files: a builder leaves none behind (A4b).
fn leftovers(fs: &FaultFs) -> Vec<PathBuf> {
    fs.list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_none_or(|x| x != "run"))
        .collect()
}

#[test]
fn a4b_a_run_built_within_any_budget_is_the_run_built_in_memory() {
    let oracle_fs = fs();
    let oracle = open(&oracle_fs).unwrap();
    three_runs(&oracle);
    let want = oracle.add_run_with_state(Lsn(300), Lsn(2300), scattered(), &state(2300)).unwrap();
    let want_bytes = oracle_fs.contents(&run_paths(&oracle_fs)[3]).unwrap();
    // 0: every entry spills (and the spills are merged at the cap); 4 KiB: a few dozen
    // chunks; 64 KiB: two; unbounded: none.
    for (budget, spills) in [(0, 1000u64), (4096, 20), (64 << 10, 2), (usize::MAX, 0)] {
        let fs = fs();
        let a = open(&fs).unwrap();
        let mut all = three_runs(&a);
        let mut b = a.run_builder(budget);
        assert!(b.is_empty());
        for e in scattered() {
            b.push(e).unwrap();
        }
        assert!(!b.is_empty());
        let got = b.finish(Lsn(300), Lsn(2300), &state(2300)).unwrap();
        assert_eq!(got, want, "budget {budget}");
        assert_eq!(fs.contents(&run_paths(&fs)[3]).unwrap(), want_bytes, "budget {budget}: the same file");
        let spilled = fs.calls(Op::Remove, Some("spill"));
        assert!(
            if spills == 0 { spilled == 0 } else { spilled >= spills },
            "budget {budget}: {spilled} spills"
        );
        assert_eq!(leftovers(&fs), Vec::<PathBuf>::new(), "budget {budget}");
        all.extend(scattered());
        assert_holds(&a, &all);
        drop(a);
        let a = open(&fs).unwrap();
        assert_holds(&a, &all);
        assert_eq!(a.newest_state().unwrap(), Some((Lsn(2300), state(2300))));
    }
}

#[test]
fn a4b_a_builder_refuses_a_run_that_does_not_follow_and_leaves_nothing() {
    let fs = fs();
    let a = open(&fs).unwrap();
    let all = three_runs(&a);
    let mut b = a.run_builder(1024);
    for e in scattered() {
        b.push(e).unwrap();
    }
    assert!(matches!(b.finish(Lsn(299), Lsn(2300), &[]), Err(LogError::BadConfig { .. })));
    // Dropped after spilling, unfinished: nothing written, nothing left.
    let mut b = a.run_builder(1024);
    for e in scattered() {
        b.push(e).unwrap();
    }
    drop(b);
    assert_eq!(leftovers(&fs), Vec::<PathBuf>::new());
    assert_eq!(a.end(), Some(Lsn(300)));
    assert_holds(&a, &all);
}

#[test]
fn a4b_a_fault_at_any_io_call_of_a_spilling_build_leaves_the_old_or_the_new_archive() {
    let ops = [Op::Open, Op::Write, Op::Sync, Op::Rename, Op::SyncDir, Op::Remove, Op::Read];
    let build = |a: &Archive| -> Result<(), LogError> {
        let mut b = a.run_builder(8 << 10);
        for e in scattered() {
            b.push(e)?;
        }
        b.finish(Lsn(300), Lsn(2300), &state(2300)).map(|_| ())
    };
    for op in ops {
        let probe = fs();
        let a = open(&probe).unwrap();
        let before = three_runs(&a);
        let calls0 = probe.calls(op, None);
        build(&a).unwrap();
        let n = probe.calls(op, None) - calls0;
        assert!(op == Op::Rename || probe.calls(Op::Remove, Some("spill")) >= 4, "precondition: it spills");
        for k in 1..=n {
            let fs = fs();
            let a = open(&fs).unwrap();
            three_runs(&a);
            fs.fail_next(FaultRule::new(op, Fault::Eio).nth(k));
            let result = build(&a);
            assert!(result.is_err() || op == Op::Read, "{op:?} #{k} must fail");
            drop(a);
            fs.crash(CrashMode::DropUnsynced);
            let a = open(&fs).unwrap_or_else(|e| panic!("{op:?} #{k}: reopen: {e}"));
            assert_eq!(leftovers(&fs), Vec::<PathBuf>::new(), "{op:?} #{k}: A6 removes spills");
            let mut want = before.clone();
            if a.end() == Some(Lsn(2300)) {
                want.extend(scattered());
            } else {
                assert_eq!(a.end(), Some(Lsn(300)), "{op:?} #{k}");
            }
            assert_holds(&a, &want);
        }
    }
}

/// A file system that counts the bytes written to spilled chunks (`spill` in the name).
#[derive(Debug)]
struct SpillBytes {
    inner: Arc<dyn Vfs>,
    written: Arc<std::sync::atomic::AtomicU64>,
}

#[derive(Debug)]
struct SpillFile {
    inner: Arc<dyn swizzledb_io::VfsFile>,
    written: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl swizzledb_io::VfsFile for SpillFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        if let Some(w) = &self.written {
            w.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        self.inner.write_all_at(buf, offset)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
}

impl Vfs for SpillBytes {
    fn open(
        &self,
        path: &Path,
        mode: swizzledb_io::OpenMode,
    ) -> std::io::Result<Arc<dyn swizzledb_io::VfsFile>> {
        let spill = path.to_string_lossy().contains("spill");
        let inner = self.inner.open(path, mode)?;
        Ok(Arc::new(SpillFile { inner, written: spill.then(|| Arc::clone(&self.written)) }))
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
}

/// A4b: a run of many budgets' worth of entries rewrites each entry a few times. At 32 chunks
/// the builder merged every chunk into one, and then that one again with the next 31 each
/// time, so a run of n budgets wrote about n²/62 budgets of chunks: 6,000 entries of 1 KB in
/// 8 KiB chunks wrote 82.6 MB of chunks for 6.1 MB of entries (13 times); at the default
/// 64 MiB budget, archiving an 8 GiB stretch would have written about 17 GiB of chunks. Now
/// the chunks of the lowest level merge into one of the next: 16.6 MB (2.7 times).
#[test]
fn a4b_a_long_build_rewrites_each_entry_a_few_times() {
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let fs = fs();
    let vfs = SpillBytes { inner: Arc::new(fs.clone()), written: Arc::clone(&written) };
    let a = Archive::open(Arc::new(vfs), DIR).unwrap();
    let n = 6_000u64;
    let mut b = a.run_builder(8 << 10);
    let mut want = Vec::new();
    for l in 0..n {
        let e = Entry { page: (l * 7919) % 97, lsn: Lsn(10 + l), body: vec![(l % 251) as u8; 1000] };
        want.push(e.clone());
        b.push(e).unwrap();
    }
    let spilled = written.load(std::sync::atomic::Ordering::Relaxed);
    b.finish(Lsn(10), Lsn(10 + n), &[]).unwrap();
    want.sort_by_key(|e| (e.page, e.lsn));
    assert_eq!(a.entries().unwrap(), want);
    let entries_bytes = n * (1000 + 24);
    assert!(
        spilled <= 4 * entries_bytes,
        "{spilled} bytes of chunks written for {entries_bytes} bytes of entries"
    );
    assert_eq!(leftovers(&fs), Vec::<PathBuf>::new());
}
