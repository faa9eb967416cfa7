//! The log archive (README A1–A8): runs sorted by (page, LSN) and indexed by page, merged in
//! order, checked on every read, crash-safe at every I/O call of adding and merging runs.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb_sync::{CrashMode, Fault, FaultFs, FaultRule, Op, Vfs};
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

/// Runs over [8, 100), [100, 200), [200, 300) with pages 1..=5 changed at every 7th LSN.
fn three_runs(a: &Archive) -> Vec<Entry> {
    let mut all = Vec::new();
    for (b, e) in [(8, 100), (100, 200), (200, 300)] {
        let entries: Vec<Entry> = (b..e).step_by(7).map(|l| entry(1 + l % 5, l)).collect();
        all.extend(entries.iter().cloned());
        // Handed over unsorted: the archive sorts.
        let mut shuffled = entries;
        shuffled.reverse();
        a.add_run(Lsn(b), Lsn(e), shuffled).unwrap();
    }
    all
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
        let f = fs.open(&second, swizzledb_sync::OpenMode::EXISTING).unwrap();
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
    let f = fs.open(&second, swizzledb_sync::OpenMode::EXISTING).unwrap();
    f.write_all_at(&bytes, 0).unwrap();
    f.set_len(bytes.len() as u64 - 8).unwrap();
    f.sync().unwrap();
    assert!(matches!(open(&fs), Err(LogError::ArchiveCorrupted { ref run, .. }) if *run == second));
    // Missing: a gap between the first and the third run.
    fs.remove(&second).unwrap();
    assert!(matches!(open(&fs), Err(LogError::ArchiveCorrupted { .. })), "A6: a gap is damage");
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
                a.add_run(Lsn(300), Lsn(400), extra.clone()).unwrap();
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
                    a.add_run(Lsn(300), Lsn(400), extra.clone()).map(|_| ())
                } else {
                    a.merge_oldest(3).map(|_| ())
                };
                assert!(result.is_err() || op == Op::Read, "{op:?} #{k} of {step} must fail");
                drop(a);
                fs.crash(CrashMode::DropUnsynced);
                let a = open(&fs).unwrap_or_else(|e| panic!("{op:?} #{k} of {step}: reopen: {e}"));
                let mut want = before.clone();
                if step == "add" && a.end() == Some(Lsn(400)) {
                    want.extend(extra.iter().cloned());
                } else {
                    assert_eq!(a.end(), Some(Lsn(300)), "{op:?} #{k} of {step}");
                }
                assert_holds(&a, &want);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A5, A7 against a model: random entries cut into runs at random LSNs, merged at random
    /// points; every page's history and the whole content always match.
    #[test]
    fn a5_a7_runs_and_merges_match_the_model(
        changes in prop::collection::vec((0u64..20, 1usize..40), 1..120),
        cuts in prop::collection::vec(1usize..120, 0..6),
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
        for w in bounds.windows(2) {
            let part: Vec<Entry> = entries.iter().filter(|e| e.lsn.0 >= w[0] && e.lsn.0 < w[1]).cloned().collect();
            a.add_run(Lsn(w[0]), Lsn(w[1]), part).unwrap();
        }
        for (first, n) in merges {
            let before = a.runs();
            let merged = a.merge(first, n).unwrap();
            let after = a.runs();
            match merged {
                Some(m) => {
                    prop_assert_eq!(after.len(), before.len() + 1 - n.min(before.len() - first));
                    prop_assert_eq!(&after[first], &m);
                    prop_assert_eq!(m.begin, before[first].begin);
                }
                None => prop_assert_eq!(&after, &before),
            }
            prop_assert!(after.windows(2).all(|w| w[0].end == w[1].begin), "A1");
            assert_holds(&a, &entries);
        }
        assert_holds(&a, &entries);
        drop(a);
        assert_holds(&open(&fs).unwrap(), &entries);
    }
}
