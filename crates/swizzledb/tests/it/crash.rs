//! Crash and fault-injection tests of logging, transactions and restart (RECOVERY.md R4–R11,
//! wal README W7–W11, buffer README B18–B21, io README IO9–IO13), on the in-memory `FaultFs`.
//!
//! A crash is `FaultFs::crash` while the old `Database` still exists: its handles fail from then
//! on, and dropping it afterwards must neither panic nor touch the new state. The database is
//! then reopened with the same builder, which restarts from the log. The oracle is a `BTreeMap`
//! of the committed state (`common::Model`).

use crate::common;

use common::*;
use proptest::prelude::*;
use std::sync::Arc;
use swizzledb::lab::record::Record;
use swizzledb::{wal_dir, Database, Error, LogRecovery, PoolMode, Tree};
use swizzledb_io::{CrashMode, Fault, FaultFs, Op, OpenMode, Vfs};
use swizzledb_sync::{Lsn, TxnId};
use swizzledb_wal::{LogConfig, LogError, LogManager};

/// Proptest cases: `PROPTEST_CASES` if set (more on demand), else `default` (kept small for CI).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn mode_strategy() -> impl Strategy<Value = PoolMode> {
    prop_oneof![Just(PoolMode::Traditional), Just(PoolMode::Swizzling), Just(PoolMode::MainMemory)]
}

fn crash_strategy() -> impl Strategy<Value = CrashMode> {
    prop_oneof![
        Just(CrashMode::DropUnsynced),
        Just(CrashMode::KeepUnsynced),
        any::<u64>().prop_map(|seed| CrashMode::Torn { seed }),
    ]
}

fn write_strategy() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => (0u16..600, any::<u8>()).prop_map(|(k, v)| Write::Put(k, v)),
        1 => (0u16..600).prop_map(Write::Delete),
    ]
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (
            prop::collection::vec(write_strategy(), 1..40),
            prop_oneof![
                5 => Just(End::Commit),
                1 => Just(End::Abort),
                1 => Just(End::Drop),
                1 => Just(End::Open),
            ],
        )
            .prop_map(|(w, e)| Step::Txn(w, e)),
        1 => Just(Step::Checkpoint),
    ]
}

/// A few transactions after a restart, checked against the model and returned as its new state:
/// the database works as before.
fn continue_after_restart(db: &Database, model: &Model, salt: u8) -> Model {
    let tree = db.tree(TREE).unwrap();
    let steps = [
        Step::Txn((0..30).map(|k| Write::Put(k * 7, salt)).collect(), End::Commit),
        Step::Txn((0..30).map(|k| Write::Delete(k * 5)).collect(), End::Abort),
        Step::Txn((0..10).map(|k| Write::Delete(k * 11)).collect(), End::Commit),
    ];
    let out = run_steps(db, &tree, &steps, model, &mut Vec::new());
    assert!(out.error.is_none(), "after restart: {:?}", out.error);
    assert_state(db, &out.acked, "transactions after restart");
    out.acked
}

/// Test 1: a random workload, a crash in a random mode, restart. Returns the pages written before
/// the crash and the restart's counters.
fn random_workload_then_crash(
    mode: PoolMode,
    steps: &[Step],
    crash: CrashMode,
) -> (u64, swizzledb::RestartStats) {
    let fs = new_fs();
    let builder = builder(mode, Arc::new(fs.clone()));
    let db = builder.clone().create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    db.checkpoint().unwrap();
    let mut open = Vec::new();
    let out = run_steps(&db, &tree, steps, &Model::new(), &mut open);
    assert!(out.error.is_none(), "workload before the crash: {:?}", out.error);
    if open.is_empty() {
        // (Reading the tree directly sees the open transactions' writes: no check then.)
        assert_state(&db, &out.acked, "before the crash");
    }
    let write_backs = db.stats().write_backs;
    fs.crash(crash);
    drop(open);
    drop(tree);
    drop(db);

    let db = builder.clone().open(db_path()).unwrap();
    let stats = db.restart_stats();
    assert_state(&db, &out.acked, &format!("after the crash ({crash:?})"));
    let model = continue_after_restart(&db, &out.acked, 0xA5);
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(db_path()).unwrap();
    assert_state(&db, &model, "after a second crash");
    db.close().unwrap();
    (write_backs, stats)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(12)))]

    /// R4, R10: after a crash, exactly the acknowledged commits are visible; aborted, dropped and
    /// unfinished transactions have left nothing; the tree is valid and the database works.
    #[test]
    fn r10_crash_keeps_exactly_the_acknowledged_commits(
        mode in mode_strategy(),
        steps in prop::collection::vec(step_strategy(), 1..20),
        crash in crash_strategy(),
    ) {
        random_workload_then_crash(mode, &steps, crash);
    }
}

/// A fixed workload that splits and merges leaves, with a checkpoint in the middle and one
/// transaction left open, in all three modes and crash modes.
#[test]
fn r10_fixed_workload_every_mode_and_crash_mode() {
    let mut steps = vec![Step::Txn((0..400).map(|k| Write::Put(k, 1)).collect(), End::Commit)];
    steps.push(Step::Checkpoint);
    steps.push(Step::Txn((0..400).step_by(2).map(Write::Delete).collect(), End::Commit));
    steps.push(Step::Txn((0..400).map(|k| Write::Put(k, 2)).collect(), End::Abort));
    steps.push(Step::Txn((100..200).map(|k| Write::Put(k, 3)).collect(), End::Drop));
    steps.push(Step::Txn((1..400).step_by(4).map(|k| Write::Put(k, 4)).collect(), End::Commit));
    steps.push(Step::Txn((0..252).step_by(3).map(|k| Write::Put(k, 5)).collect(), End::Open));
    // This commit makes the open transaction's records durable: restart must roll them back.
    steps.push(Step::Txn((400..410).map(|k| Write::Put(k, 6)).collect(), End::Commit));
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        for crash in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn { seed: 7 }] {
            let (write_backs, stats) = random_workload_then_crash(mode, &steps, crash);
            if mode != PoolMode::MainMemory {
                assert!(
                    write_backs > 0,
                    "{mode:?}: the pool is small enough to write pages before the crash"
                );
            }
            assert_eq!(stats.losers, 1, "{mode:?} {crash:?}: the open transaction is the loser: {stats:?}");
            assert!(
                stats.compensations >= 84,
                "{mode:?} {crash:?}: each of its 84 writes is undone: {stats:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Test 4: damage to the log.

/// One frame of the log, as a scan finds it.
#[derive(Clone, Debug)]
struct Frame {
    lsn: Lsn,
    /// The frame's bytes: header, body, alignment (wal README W2).
    len: u64,
    /// The bytes of header and body: the frame is intact if these are (the alignment bytes
    /// after the body are not checksummed).
    used: u64,
    record: Record,
}

/// The log's master LSN and frames, read with a log manager of its own (closed again).
fn read_log(fs: &FaultFs) -> (Option<Lsn>, Vec<Frame>) {
    let mut config = LogConfig::new(wal_dir(&db_path()));
    config.vfs = Arc::new(fs.clone());
    config.segment_bytes = SEGMENT;
    config.flush_interval = None;
    let log = LogManager::open(config).unwrap();
    let master = log.read_master().unwrap();
    let frames = log
        .scan(Lsn(0))
        .unwrap()
        .map(|item| {
            let (lsn, body) = item.unwrap();
            let record = Record::decode(&body).unwrap();
            let body_len = body.len() as u64;
            Frame { lsn, len: 8 + body_len.div_ceil(8) * 8, used: 8 + body_len, record }
        })
        .collect();
    log.close().unwrap();
    (master, frames)
}

/// The segment file holding `lsn`, and `lsn`'s offset in it (W1).
fn segment_of(lsn: Lsn) -> (std::path::PathBuf, u64) {
    let start = lsn.0 / SEGMENT * SEGMENT;
    (wal_dir(&db_path()).join(format!("{start:016x}.log")), lsn.0 - start)
}

/// Overwrites bytes of a file on `fs` and makes them durable.
fn damage(fs: &FaultFs, path: &std::path::Path, offset: u64, bytes: &[u8]) {
    let f = fs.open(path, OpenMode::EXISTING).unwrap();
    f.write_all_at(bytes, offset).unwrap();
    f.sync().unwrap();
}

/// A workload for the damage tests: committed transactions, a checkpoint, then `after` more
/// committed transactions (each with its id and the state after it), the last one followed by a
/// transaction left open, then a crash that keeps only what was synced (so the page file is as
/// of the checkpoint, and the log holds every acknowledged commit). The tests run it again and
/// again and expect the same log each time, so no background evictor (B31) writes pages (and
/// reports them to the log) at times of its own choosing.
fn damage_scenario(after: u16, final_checkpoint: bool) -> (FaultFs, Model, Vec<(TxnId, Model)>) {
    let fs = new_fs();
    let builder = builder(PoolMode::Swizzling, Arc::new(fs.clone())).lab(|l| l.background_eviction(false));
    let db = builder.create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let first = [
        Step::Txn((0..300).map(|k| Write::Put(k, 1)).collect(), End::Commit),
        Step::Txn((0..300).step_by(3).map(Write::Delete).collect(), End::Commit),
        Step::Checkpoint,
    ];
    let base = run_steps(&db, &tree, &first, &Model::new(), &mut Vec::new());
    assert!(base.error.is_none());
    let mut model = base.acked.clone();
    let mut commits = Vec::new();
    for i in 0..after {
        let mut t = db.begin();
        let id = t.id();
        for k in (i * 13..i * 13 + 5).map(|k| k % 300) {
            t.put(&tree, &key(k), &value(k, i as u8 + 10)).unwrap();
            model.insert(k, i as u8 + 10);
        }
        t.delete(&tree, &key(i * 7 % 300)).unwrap();
        model.remove(&(i * 7 % 300));
        t.commit().unwrap();
        commits.push((id, model.clone()));
    }
    let mut open = db.begin();
    for k in 0..5 {
        open.put(&tree, &key(k), &value(k, 99)).unwrap();
    }
    if final_checkpoint {
        db.checkpoint().unwrap();
    }
    fs.crash(CrashMode::DropUnsynced);
    drop(open);
    drop(tree);
    drop(db);
    (fs, base.acked, commits)
}

/// The state restart must produce when the log is damaged from `end` on: the last transaction
/// whose commit record's header and body lie below `end` (each commits on top of the previous
/// one).
fn state_with_log_end(frames: &[Frame], base: &Model, commits: &[(TxnId, Model)], end: u64) -> Model {
    let committed = |id: TxnId| {
        frames
            .iter()
            .any(|f| matches!(f.record, Record::Commit { txn, .. } if txn == id) && f.lsn.0 + f.used <= end)
    };
    commits.iter().rev().find(|(id, _)| committed(*id)).map_or_else(|| base.clone(), |(_, m)| m.clone())
}

/// W7 via restart: a damaged or truncated tail of the last segment ends the log there. The
/// commits whose commit record lies wholly before the damage are kept (they were acknowledged,
/// and the page file is as of the last checkpoint, so every later change is in the log); a
/// transaction whose commit record is cut is a loser and rolled back. Garbage after the end
/// loses nothing. W8, R24: garbage over synced frames (before an acknowledged commit) is damage
/// in the durable log: the default open refuses it, and point-in-time recovery ends the log
/// there, as a torn tail would.
#[test]
fn w7_damaged_log_tail_is_the_end_and_keeps_the_commits_before_it() {
    // The number of transactions after the checkpoint that leaves at least two commit records in
    // the last segment (where damage is a torn tail, not damage in the middle: W8), after every
    // record a page written to the file holds: damage below one of those would leave the file
    // with changes the log no longer has, which no restart undoes (RECOVERY.md R24).
    // Each run of the scenario is cut where its own log says: background work (checkpoints,
    // page writes) may place records differently from run to run.
    let tail_of = |fs: &FaultFs| {
        let (master, frames) = read_log(fs);
        let master = master.expect("a checkpoint was taken");
        let last_segment = frames.last().unwrap().lsn.0 / SEGMENT * SEGMENT;
        let newest_written = newest_page_lsn_in_file(fs);
        let written_end = frames.iter().find(|f| f.lsn == newest_written).map_or(0, |f| f.lsn.0 + f.len);
        let tail: Vec<Frame> = frames
            .iter()
            .filter(|f| f.lsn > master && f.lsn.0 >= last_segment && f.lsn.0 >= written_end)
            .cloned()
            .collect();
        let commits = tail.iter().filter(|f| matches!(f.record, Record::Commit { .. })).count();
        let cuts: Vec<u64> =
            tail.iter().flat_map(|f| [f.lsn.0, f.lsn.0 + f.len / 2, f.lsn.0 + f.len - 1]).collect();
        let end = frames.last().map(|f| f.lsn.0 + f.len).unwrap();
        let mut cases: Vec<(u64, bool)> = cuts.iter().map(|&c| (c, true)).collect();
        cases.extend(cuts.iter().step_by(5).map(|&c| (c, false)));
        cases.push((end, false));
        (commits, cases, frames)
    };
    let after = (30..80)
        .find(|&a| tail_of(&damage_scenario(a, false).0).0 >= 2)
        .expect("some workload puts two commits into the last segment after the checkpoint");
    let planned = tail_of(&damage_scenario(after, false).0).1.len();
    let mut tried = 0;
    for i in 0..planned {
        let (fs, base, commits) = damage_scenario(after, false);
        let (_, cases, frames) = tail_of(&fs);
        let Some(&(cut, truncate)) = cases.get(i) else { continue };
        tried += 1;
        let (path, offset) = segment_of(Lsn(cut));
        if truncate {
            let f = fs.open(&path, OpenMode::EXISTING).unwrap();
            f.set_len(offset).unwrap();
            f.sync().unwrap();
        } else {
            let garbage: Vec<u8> =
                (0..1500u32).map(|j| (j.wrapping_mul(2_654_435_761) >> 13) as u8 ^ i as u8).collect();
            let room = (SEGMENT - offset) as usize;
            damage(&fs, &path, offset, &garbage[..garbage.len().min(room)]);
        }
        let want = state_with_log_end(&frames, &base, &commits, cut);
        let db = match builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path()) {
            // Garbage whose sync markers beyond all were overwritten or dropped as unsynced by the
            // power loss is a torn tail (W8's limit); `tests/it/log_damage.rs` covers the refusal.
            Ok(db) => db,
            Err(Error::Log(LogError::DurableDamage(d))) => {
                // The damaged frame holds `cut`, or follows it if `cut` hit alignment bytes.
                assert!(!truncate && d.lsn.0 < cut + 8, "W8: a cut end is a torn tail; {d:?} at {cut}");
                builder(PoolMode::Swizzling, Arc::new(fs.clone()))
                    .log_recovery(LogRecovery::PointInTime)
                    .open(db_path())
                    .unwrap()
            }
            Err(e) => panic!("log cut at {cut}: {e}"),
        };
        assert_state(
            &db,
            &want,
            &format!("log cut at {cut} ({})", if truncate { "truncated" } else { "garbage" }),
        );
        let model = continue_after_restart(&db, &want, 0x5A);
        db.close().unwrap();
        let db = builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path()).unwrap();
        assert_state(&db, &model, "reopened after the damaged restart");
        drop(db);
    }
    assert!(tried * 2 > planned, "most planned cuts were tried: {tried} of {planned}");
}

/// The newest page LSN among the data file's pages (the file as the crash left it; page 0 holds
/// no LSN).
fn newest_page_lsn_in_file(fs: &FaultFs) -> Lsn {
    let file = fs.open(&db_path(), OpenMode::EXISTING).unwrap();
    let len = file.len().unwrap() as usize;
    let mut bytes = vec![0u8; len];
    file.read_at(&mut bytes, 0).unwrap();
    bytes.chunks_exact(4096).skip(1).map(swizzledb_buffer::page::page_lsn).max().unwrap_or(Lsn(0))
}

/// A record's variant name.
fn kind(record: &Record) -> String {
    format!("{record:?}").split([' ', '(', '{']).next().unwrap_or_default().to_owned()
}

/// Whether `result` is a log-corruption error naming one of `lsns`: a damaged record restart
/// needed, or (W8) damage below a point a later sync marker proves durable — which of the two
/// depends on where the background flusher's sync rounds fell.
fn assert_corrupted(result: swizzledb::Result<Database>, lsns: &[Lsn], context: &str) {
    match result {
        Err(Error::LogCorrupted { lsn, .. }) | Err(Error::Log(LogError::Corrupted { lsn, .. })) => {
            assert!(lsns.contains(&lsn), "{context}: corruption reported at {lsn}, expected one of {lsns:?}");
        }
        Err(Error::Log(LogError::DurableDamage(d))) => {
            assert!(
                lsns.contains(&d.lsn),
                "{context}: durable damage reported at {}, expected one of {lsns:?}",
                d.lsn
            );
        }
        Err(e) => panic!("{context}: expected a log corruption error naming an LSN, got {e}"),
        Ok(_) => panic!("{context}: restart accepted a damaged log"),
    }
}

/// R10, W8: a damaged record in an earlier segment (before the last checkpoint, which restart
/// does not read) never shortens the log: the log opens with the same end (W7 reads only its
/// newest segments), restart recovers every commit, and a scan that reaches the damaged frame
/// is an error naming its LSN — never a panic or a silently skipped record.
#[test]
fn w8_damage_before_the_last_checkpoint_is_an_error_naming_the_lsn() {
    let (fs, _, _) = damage_scenario(12, true);
    let (master, frames) = read_log(&fs);
    let master = master.unwrap();
    let last_segment = frames.last().unwrap().lsn.0 / SEGMENT * SEGMENT;
    let victims: Vec<Frame> =
        frames.iter().filter(|f| f.lsn.0 < last_segment && f.lsn < master).cloned().collect();
    assert!(!victims.is_empty(), "the workload spans several segments");
    for first_run_victim in victims.iter().step_by(victims.len().div_ceil(6)) {
        let (fs, _, commits) = damage_scenario(12, true);
        let model = commits.last().map(|(_, m)| m.clone()).unwrap();
        // This run's log: the background flusher's sync markers may fall elsewhere than in the
        // first run, shifting the frames; damage this run's frame of the same record.
        let (_, frames) = read_log(&fs);
        let index = victims.iter().position(|v| v.lsn == first_run_victim.lsn).unwrap();
        let victim = &frames[index];
        let (path, offset) = segment_of(victim.lsn);
        // Flip bytes inside the frame (its body, or its header if it has none).
        damage(&fs, &path, offset + victim.len / 2, &[0xFF, 0x00, 0xFF]);
        let context = format!("damaged {} frame at {}", kind(&victim.record), victim.lsn);
        {
            let mut config = LogConfig::new(wal_dir(&db_path()));
            config.vfs = Arc::new(fs.clone());
            config.segment_bytes = SEGMENT;
            config.flush_interval = None;
            let log = LogManager::open(config).unwrap();
            assert!(log.end() > frames.last().unwrap().lsn, "{context}: the log keeps its end");
            let failed = log.scan(frames[0].lsn).unwrap().find_map(Result::err);
            match failed {
                Some(LogError::Corrupted { lsn, .. } | LogError::NotARecord { lsn, .. }) => {
                    assert_eq!(lsn, victim.lsn, "{context}: the scan names the damaged frame");
                }
                other => panic!("{context}: a scan across the damage reported {other:?}"),
            }
            log.close().unwrap();
        }
        // Restart reads the log from the checkpoint on, and the open transaction's undo chain,
        // which may reach back to the damaged record: then restart fails naming it.
        match builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path()) {
            Ok(db) => {
                assert_state(&db, &model, &context);
                db.close().unwrap();
            }
            failed => assert_corrupted(failed, &[victim.lsn], &context),
        }
    }
}

/// W7 + R10: damage in the last segment before the checkpoint the master names cuts the log
/// below that checkpoint; restart must then report the missing checkpoint, not start from an
/// older state.
#[test]
fn r10_damage_below_the_master_checkpoint_in_the_last_segment_is_an_error() {
    let (fs, _, _) = damage_scenario(12, true);
    // Read this run's own log: the background flusher's sync markers may put its frames
    // elsewhere than another run's (w8 above).
    let (master, frames) = read_log(&fs);
    let master = master.unwrap();
    let segment = master.0 / SEGMENT * SEGMENT;
    let victim = frames.iter().rev().find(|f| f.lsn < master && f.lsn.0 >= segment).cloned();
    let victim = victim.expect("a record before the checkpoint end in its segment");
    let (path, offset) = segment_of(victim.lsn);
    damage(&fs, &path, offset + 4, &[0xDE, 0xAD, 0xBE, 0xEF]);
    let result = builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path());
    assert_corrupted(result, &[victim.lsn, master], "damage below the master's checkpoint");
}

/// R10: a master record naming an LSN where no record starts, or a record that is not a
/// checkpoint end, is an error naming that LSN; a damaged master file is a typed error.
#[test]
fn r10_master_naming_a_missing_or_wrong_record_is_an_error() {
    let (fs, _, _) = damage_scenario(4, true);
    let (_, frames) = read_log(&fs);
    let commit = frames.iter().find(|f| matches!(f.record, Record::Commit { .. })).unwrap().lsn;
    let inside = Lsn(frames[frames.len() / 2].lsn.0 + 8);
    for wrong in [inside, commit] {
        let (fs, _, _) = damage_scenario(4, true);
        let mut config = LogConfig::new(wal_dir(&db_path()));
        config.vfs = Arc::new(fs.clone());
        config.segment_bytes = SEGMENT;
        config.flush_interval = None;
        let log = LogManager::open(config).unwrap();
        log.write_master(wrong).unwrap();
        log.close().unwrap();
        let result = builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path());
        assert_corrupted(result, &[wrong], &format!("master naming {wrong}"));
    }
    let (fs, _, _) = damage_scenario(4, true);
    damage(&fs, &wal_dir(&db_path()).join("master"), 9, &[0x55]);
    match builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path()) {
        Err(Error::Log(LogError::MasterCorrupted { .. })) => {}
        other => panic!("a damaged master file: expected MasterCorrupted, got {:?}", other.map(|_| ())),
    }
}

// ---------------------------------------------------------------------------------------------
// Test 2: crashes and faults during restart (R11).

/// The fixed workload of `r10_fixed_workload_every_mode_and_crash_mode`, then a torn crash:
/// restart has pages to redo and a loser to roll back.
fn restart_scenario() -> (FaultFs, Model) {
    let fs = new_fs();
    let db = builder(PoolMode::Swizzling, Arc::new(fs.clone())).create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let steps = [
        Step::Txn((0..400).map(|k| Write::Put(k, 1)).collect(), End::Commit),
        Step::Checkpoint,
        Step::Txn((0..400).step_by(2).map(Write::Delete).collect(), End::Commit),
        Step::Txn((100..300).map(|k| Write::Put(k, 3)).collect(), End::Drop),
        Step::Txn((0..252).step_by(3).map(|k| Write::Put(k, 5)).collect(), End::Open),
        Step::Txn((400..410).map(|k| Write::Put(k, 6)).collect(), End::Commit),
    ];
    let mut open = Vec::new();
    let out = run_steps(&db, &tree, &steps, &Model::new(), &mut open);
    assert!(out.error.is_none());
    fs.crash(CrashMode::Torn { seed: 11 });
    drop(open);
    drop(tree);
    drop(db);
    (fs, out.acked)
}

/// Up to `n` indices spread over `1..=total`, first and last included.
fn spread(total: u64, n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|i| 1 + i * total.saturating_sub(1) / (n - 1).max(1)).collect();
    v.dedup();
    v.retain(|&i| i >= 1 && i <= total);
    v
}

/// R11: a restart that fails at its k-th call of any I/O site (EIO, or ENOSPC for writes),
/// followed by a crash, then another restart failing at another site and another crash, and
/// finally a clean restart: the result is always the committed state.
#[test]
fn r11_restart_interrupted_by_faults_and_crashes_is_idempotent() {
    let (fs, model) = restart_scenario();
    let sites = Sites::new(fs.clone());
    let db = builder(PoolMode::Swizzling, Arc::new(sites.clone())).open(db_path()).unwrap();
    assert_state(&db, &model, "clean restart");
    let stats = db.restart_stats();
    assert!(stats.losers == 1 && stats.redone > 0, "restart has work to do: {stats:?}");
    drop(db);
    let counts: Vec<((Op, Class), u64)> = sites
        .counts()
        .into_iter()
        .filter(|((op, _), _)| {
            matches!(op, Op::Write | Op::Sync | Op::SetLen | Op::Rename | Op::SyncDir | Op::Read)
        })
        .collect();
    let mut runs = 0;
    for (i, &((op, class), total)) in counts.iter().enumerate() {
        let faults: &[Fault] = if op == Op::Write { &[Fault::Eio, Fault::Enospc] } else { &[Fault::Eio] };
        for &fault in faults {
            for nth in spread(total, 4) {
                let (fs, model) = restart_scenario();
                let sites = Sites::new(fs.clone());
                let b = builder(PoolMode::Swizzling, Arc::new(sites.clone()));
                // First restart: fails at the chosen call (or, if the background flusher's calls
                // made the count differ, maybe not).
                sites.arm(Site { op, class, nth, fault });
                let first = b.clone().open(db_path());
                let fired = sites.fired();
                sites.disarm();
                match first {
                    Ok(db) if fired => {
                        // The call failed after `open` returned: a background thread's (the log
                        // flusher's, a checkpoint's; their calls make the counts differ between
                        // runs, and a page write of the evictor or cleaner). Such a failure is
                        // sticky for the log or the pool (W11, F4), or leaves the last checkpoint
                        // in place (R7); the restarts below must recover from it like from a
                        // failed restart. (The sites do not record which thread a fault hit, so
                        // a fault `open` itself ignored would also pass this arm; the restarts
                        // below still check what it left.)
                        fs.crash(CrashMode::Torn { seed: nth });
                        drop(db);
                    }
                    Ok(db) => {
                        assert_state(&db, &model, "restart that met no fault");
                        fs.crash(CrashMode::Torn { seed: nth });
                        drop(db);
                    }
                    Err(e) => {
                        assert!(fired, "{op:?} {class:?} #{nth}: restart failed on its own: {e}");
                        fs.crash(CrashMode::Torn { seed: nth });
                    }
                }
                // Second restart: fails at another site, then a crash that drops what was unsynced.
                let (op2, class2) = counts[(i + 3) % counts.len()].0;
                sites.arm(Site { op: op2, class: class2, nth: 1, fault: Fault::Eio });
                let second = b.clone().open(db_path());
                sites.disarm();
                if let Ok(db) = second {
                    assert_state(&db, &model, "second restart");
                    drop(db);
                }
                fs.crash(CrashMode::DropUnsynced);
                sites.disarm();
                let db = b.open(db_path()).unwrap_or_else(|e| {
                    panic!("{op:?} {class:?} #{nth} {fault:?}, then {op2:?} {class2:?}: clean restart: {e}")
                });
                assert_state(&db, &model, &format!("after restarts failing at {op:?} {class:?} #{nth}"));
                db.close().unwrap();
                runs += 1;
            }
        }
    }
    assert!(runs >= 20, "restart's I/O sites were exercised ({runs} runs)");
}

// ---------------------------------------------------------------------------------------------
// Test 3: a fault at every I/O site of a workload.

/// The workload of the fault test: creating the database and a tree, commits that split and
/// merge leaves in a 16-frame pool (evictions write pages), an abort, a dropped transaction,
/// checkpoints (which truncate the log and rewrite the master), a transaction left open.
fn fault_steps() -> Vec<Step> {
    vec![
        Step::Txn((0..200).map(|k| Write::Put(k, 1)).collect(), End::Commit),
        Step::Txn((0..200).step_by(2).map(|k| Write::Put(k, 2)).collect(), End::Commit),
        Step::Checkpoint,
        Step::Txn((0..200).step_by(3).map(Write::Delete).collect(), End::Commit),
        Step::Txn((50..150).map(|k| Write::Put(k, 3)).collect(), End::Abort),
        Step::Txn((200..300).map(|k| Write::Put(k, 4)).collect(), End::Commit),
        Step::Checkpoint,
        Step::Txn((0..300).step_by(5).map(|k| Write::Put(k, 5)).collect(), End::Drop),
        Step::Txn((300..360).map(|k| Write::Put(k, 6)).collect(), End::Commit),
        Step::Txn((0..100).step_by(7).map(|k| Write::Put(k, 7)).collect(), End::Open),
        Step::Txn((360..370).map(|k| Write::Put(k, 8)).collect(), End::Commit),
    ]
}

/// What one fault run found.
#[derive(Debug)]
enum FaultResult {
    /// `create` (or the first tree) failed: a typed error, nothing to check after it.
    CreateFailed,
    /// The workload met the fault and stopped with an error.
    Stopped,
    /// The fault fired and the workload still finished (the failing call's caller got over it).
    Absorbed,
    /// The fault did not fire (the site was not reached this time).
    NotReached,
}

/// Runs the fault workload with `site` armed, crashes, restarts on the same file system without
/// faults and checks that every acknowledged commit is there and nothing else (the commit that
/// failed may or may not be there).
fn fault_run(
    site: Option<Site>,
    crash: CrashMode,
) -> (FaultResult, std::collections::BTreeMap<(Op, Class), u64>) {
    let fs = new_fs();
    let sites = Sites::new(fs.clone());
    if let Some(site) = site {
        sites.arm(site);
    }
    let b = builder(PoolMode::Swizzling, Arc::new(sites.clone()));
    let db = match b.clone().create(db_path()) {
        Ok(db) => db,
        Err(e) => {
            assert!(sites.fired(), "create failed without a fault: {e}");
            return (FaultResult::CreateFailed, sites.counts());
        }
    };
    let tree = match db.create_tree(TREE).and_then(|t| db.checkpoint().map(|()| t)) {
        Ok(t) => t,
        Err(e) => {
            assert!(sites.fired(), "create_tree failed without a fault: {e}");
            return (FaultResult::CreateFailed, sites.counts());
        }
    };
    let mut open = Vec::new();
    let out = run_steps(&db, &tree, &fault_steps(), &Model::new(), &mut open);
    let result = match (&out.error, sites.fired()) {
        (Some(e), true) => {
            assert!(matches!(e, Error::Log(_) | Error::Buffer(_) | Error::Tree(_)), "untyped failure: {e:?}");
            // The database keeps refusing rather than acknowledging anything (sticky failures,
            // W11 and F4) or works on; either way nothing panics.
            let mut t = db.begin();
            let _ = t.put(&tree, &key(999), b"after the fault");
            let _ = t.commit();
            FaultResult::Stopped
        }
        (Some(e), false) => panic!("the workload failed without a fault: {e}"),
        (None, true) => FaultResult::Absorbed,
        (None, false) => FaultResult::NotReached,
    };
    let counts = sites.counts();
    fs.crash(crash);
    drop(open);
    drop(tree);
    drop(db);
    sites.disarm();
    let db = b.open(db_path()).unwrap_or_else(|e| panic!("{site:?}: restart after the fault: {e}"));
    let tree = db.tree(TREE).unwrap();
    let mut got = contents(&tree);
    got.retain(|(k, _)| k != &key(999));
    let acked = expected(&out.acked);
    let in_doubt = out.in_doubt.as_ref().map(expected);
    assert!(
        got == acked || Some(&got) == in_doubt.as_ref(),
        "{site:?}: state after restart is neither the acknowledged one nor that plus the failed commit\n{}",
        diff(&got, &acked)
    );
    drop(tree);
    db.close().unwrap();
    (result, counts)
}

/// Fault injection at every I/O call site at least once. The sites of this workload,
/// counted per operation and file class on a run without faults, each failed at its first,
/// middle and last call (writes with EIO and with ENOSPC):
/// - page file: open, len, set_len (create), read (misses after eviction), write (eviction,
///   checkpoint), sync (create, checkpoints);
/// - log segments: open (new segments), write (group-commit write-out), sync (commits);
/// - master record: open, write, sync, rename, remove (of `master.tmp`);
/// - directories: list (log open), sync_dir (file creation, master rename).
///
/// The sites only restart reaches (segment reads, and the tail cut's set_len) are failed by
/// `r11_restart_interrupted_by_faults_and_crashes_is_idempotent`. Not reached by either: the
/// removal of a truncated segment (this workload's log never has a whole segment to drop).
///
/// Whatever the site, the workload either stops with a typed error or gets over it, and a crash
/// plus restart gives exactly the acknowledged commits (plus, possibly, the one whose commit
/// failed).
#[test]
fn fault_at_every_io_site_leaves_a_recoverable_database() {
    let (_, counts) = fault_run(None, CrashMode::DropUnsynced);
    let mut seen = Vec::new();
    for (&(op, class), &total) in &counts {
        let faults: &[Fault] = if op == Op::Write { &[Fault::Eio, Fault::Enospc] } else { &[Fault::Eio] };
        for &fault in faults {
            for nth in spread(total, 3) {
                let site = Site { op, class, nth, fault };
                let crash =
                    if nth % 2 == 0 { CrashMode::DropUnsynced } else { CrashMode::Torn { seed: nth } };
                let (result, _) = fault_run(Some(site), crash);
                seen.push((op, class, nth, fault, result));
            }
        }
    }
    for class in [Class::Data, Class::Segment, Class::Master, Class::Dir] {
        assert!(
            seen.iter().any(|s| s.1 == class && !matches!(s.4, FaultResult::NotReached)),
            "{class:?} covered"
        );
    }
    for op in
        [Op::Open, Op::Read, Op::Write, Op::Sync, Op::SetLen, Op::Remove, Op::Rename, Op::List, Op::SyncDir]
    {
        assert!(seen.iter().any(|s| s.0 == op && !matches!(s.4, FaultResult::NotReached)), "{op:?} covered");
    }
    if std::env::var("CRASH_SITES").is_ok() {
        for s in &seen {
            eprintln!("{s:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Test 5: concurrent transfers and a crash.

const ACCOUNTS: u8 = 20;
const INITIAL: i64 = 1000;

fn account(a: u8) -> Vec<u8> {
    format!("a{a:02}").into_bytes()
}

fn transfer_key(id: u64) -> Vec<u8> {
    format!("x{id:016x}").into_bytes()
}

/// A transfer's record: from, to, amount.
fn encode_transfer(from: u8, to: u8, amount: i64) -> Vec<u8> {
    let mut v = vec![from, to];
    v.extend_from_slice(&amount.to_le_bytes());
    v
}

fn balance(bytes: &[u8]) -> i64 {
    i64::from_le_bytes(bytes.try_into().expect("8-byte balance"))
}

/// One transfer in a transaction: read both balances, write both, record the transfer id.
fn transfer(db: &Database, tree: &Tree, id: u64, from: u8, to: u8, amount: i64) -> swizzledb::Result<()> {
    let mut t = db.begin();
    let a = balance(&t.get(tree, &account(from))?.expect("account exists"));
    let b = balance(&t.get(tree, &account(to))?.expect("account exists"));
    t.put(tree, &account(from), &(a - amount).to_le_bytes())?;
    t.put(tree, &account(to), &(b + amount).to_le_bytes())?;
    t.insert(tree, &transfer_key(id), &encode_transfer(from, to, amount))?;
    t.commit()
}

/// 4 threads transfer between 20 accounts with sync commits; the file system crashes once
/// `crash_after` transfers are acknowledged, while the others are in flight. After restart: the
/// transfers present are a superset of the acknowledged ones and a subset of those attempted, and
/// every balance is exactly the initial one plus the present transfers (so the sum is intact).
fn transfers_then_crash(seed: u64, mode: PoolMode, crash: CrashMode, crash_after: usize) {
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Mutex;

    let fs = new_fs();
    let b = builder(mode, Arc::new(fs.clone()));
    let db = b.clone().create(db_path()).unwrap();
    let tree = db.create_tree("bank").unwrap();
    let mut t = db.begin();
    for a in 0..ACCOUNTS {
        t.insert(&tree, &account(a), &INITIAL.to_le_bytes()).unwrap();
    }
    t.commit().unwrap();

    let attempted: Mutex<BTreeMap<u64, (u8, u8, i64)>> = Mutex::default();
    let acked: Mutex<BTreeSet<u64>> = Mutex::default();
    std::thread::scope(|s| {
        for thread in 0..4u64 {
            let (db, tree, attempted, acked) = (&db, &tree, &attempted, &acked);
            s.spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ thread);
                for n in 0..10_000u64 {
                    let id = thread << 32 | n;
                    let from = rng.gen_range(0..ACCOUNTS);
                    let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
                    let amount = rng.gen_range(1..100);
                    attempted.lock().unwrap().insert(id, (from, to, amount));
                    loop {
                        match transfer(db, tree, id, from, to, amount) {
                            Ok(()) => {
                                acked.lock().unwrap().insert(id);
                                break;
                            }
                            // Wait-die chose this transaction (dropping it aborted it): retry.
                            Err(Error::Lock(_)) => continue,
                            // The crash: this thread is done.
                            Err(_) => return,
                        }
                    }
                }
            });
        }
        while acked.lock().unwrap().len() < crash_after {
            std::thread::yield_now();
        }
        fs.crash(crash);
    });
    let acked = acked.into_inner().unwrap();
    let attempted = attempted.into_inner().unwrap();
    drop(tree);
    drop(db);

    let db = b.open(db_path()).unwrap();
    let tree = db.tree("bank").unwrap();
    let all = contents(&tree);
    let present: BTreeMap<u64, Vec<u8>> = all
        .iter()
        .filter(|(k, _)| k[0] == b'x')
        .map(|(k, v)| (u64::from_str_radix(std::str::from_utf8(&k[1..]).unwrap(), 16).unwrap(), v.clone()))
        .collect();
    let missing: Vec<&u64> = acked.iter().filter(|id| !present.contains_key(id)).collect();
    assert!(missing.is_empty(), "acknowledged transfers lost: {missing:x?}");
    let mut want = vec![INITIAL; usize::from(ACCOUNTS)];
    for (id, record) in &present {
        let &(from, to, amount) =
            attempted.get(id).unwrap_or_else(|| panic!("transfer {id:x} was never attempted"));
        assert_eq!(record, &encode_transfer(from, to, amount), "transfer {id:x}'s record");
        want[usize::from(from)] -= amount;
        want[usize::from(to)] += amount;
    }
    let got: Vec<i64> = (0..ACCOUNTS).map(|a| balance(&tree.get(&account(a)).unwrap().unwrap())).collect();
    assert_eq!(
        got,
        want,
        "balances = initial + the transfers present ({} present, {} acked)",
        present.len(),
        acked.len()
    );
    assert_eq!(got.iter().sum::<i64>(), INITIAL * i64::from(ACCOUNTS), "sum invariant");
    assert_eq!(all.len(), usize::from(ACCOUNTS) + present.len(), "nothing else in the tree");
    drop(tree);
    db.close().unwrap();
}

/// Test 5 in every buffer mode and crash mode, at a few crash points.
#[test]
fn r4_concurrent_transfers_survive_a_crash_with_acknowledged_ones_included() {
    let mut round = 0u64;
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        for crash in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn { seed: 5 }] {
            round += 1;
            transfers_then_crash(round, mode, crash, 20 + (round as usize * 37) % 150);
        }
    }
}

/// A commit that fails (the log cannot be made durable) still ends the transaction: its locks are
/// released (LOCKS.md: locks are held until the transaction ends), so other transactions neither
/// die on them forever nor, if older, wait for them forever. (Its commit record may have reached
/// the disk: the changes may be committed.)
#[test]
fn k_failed_commit_releases_its_locks() {
    let fs = new_fs();
    let db = builder(PoolMode::Swizzling, Arc::new(fs.clone())).create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let mut t = db.begin();
    t.put(&tree, b"a", b"1").unwrap();
    fs.fail_next(swizzledb_io::FaultRule::new(Op::Sync, Fault::Eio).on_path(".log"));
    assert!(t.commit().is_err(), "the commit's sync failed");
    let t2 = db.begin();
    let started = std::time::Instant::now();
    match t2.get(&tree, b"a") {
        Ok(_) | Err(Error::Buffer(_)) | Err(Error::Tree(_)) => {}
        Err(e) => panic!("the failed commit still holds its lock: {e}"),
    }
    // Well below the lock manager's 10 s wait timeout, and far above a read on a loaded machine.
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the read waited for the lock");
}

/// RECOVERY.md R5a, LOCKS.md K9a: a rollback that meets the failed log leaves its changes in the
/// tree, so its transaction keeps its locks and its versions: plain and snapshot reads return
/// the committed value, a transaction's read fails at once instead of reading the change (or
/// waiting for it), and so does a read that was already waiting; restart rolls it back.
#[test]
fn r5a_a_rollback_that_fails_keeps_its_changes_from_every_reader() {
    let fs = new_fs();
    let db = builder(PoolMode::Swizzling, Arc::new(fs.clone())).create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    tree.upsert(b"b", b"committed").unwrap();
    let mut t3 = db.begin();
    t3.put(&tree, b"b", b"uncommitted").unwrap();
    t3.put(&tree, b"c", b"uncommitted").unwrap();
    std::thread::scope(|s| {
        // A transaction that waits for `b` before the rollback fails.
        let waiter = s.spawn(|| {
            let t5 = db.begin();
            let started = std::time::Instant::now();
            (t5.get(&tree, b"b"), started.elapsed())
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        // The log fails (another commit's sync), then the rollback's first record is refused.
        let mut other = db.begin();
        other.put(&tree, b"x", b"1").unwrap();
        fs.fail_next(swizzledb_io::FaultRule::new(Op::Sync, Fault::Eio).on_path(".log"));
        assert!(other.commit().is_err(), "the commit's sync failed");
        assert!(t3.abort().is_err(), "the rollback met the failed log");
        let (read, waited) = waiter.join().unwrap();
        assert!(matches!(read, Err(Error::RollbackFailed { .. })), "the waiting read ended: {read:?}");
        assert!(waited < std::time::Duration::from_secs(5), "the waiting read waited {waited:?}");
    });
    assert_eq!(tree.get(b"b").unwrap().as_deref(), Some(&b"committed"[..]), "a plain read");
    assert_eq!(tree.get(b"c").unwrap(), None, "a plain read of an inserted key");
    let snapshot = db.begin_read();
    assert_eq!(snapshot.get(&tree, b"b").unwrap().as_deref(), Some(&b"committed"[..]), "a snapshot");
    drop(snapshot);
    let t4 = db.begin();
    let started = std::time::Instant::now();
    let read = t4.get(&tree, b"b");
    assert!(matches!(read, Err(Error::RollbackFailed { .. })), "a transaction's read: {read:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "a transaction's read waited");
    // Keys no failed transaction holds are read as before.
    assert_eq!(t4.get(&tree, b"a").unwrap(), None);
    drop(t4);
    drop(tree);
    fs.crash(swizzledb_io::CrashMode::DropUnsynced);
    drop(db);
    let db = builder(PoolMode::Swizzling, Arc::new(fs.clone())).open(db_path()).unwrap();
    let tree = db.tree(TREE).unwrap();
    assert_eq!(tree.get(b"b").unwrap().as_deref(), Some(&b"committed"[..]), "after restart");
    assert_eq!(tree.get(b"c").unwrap(), None, "after restart");
}

/// RECOVERY.md R3, R8: a leaf written back without a sync after the last checkpoint (so its
/// in-place write can be torn), then emptied and freed by a merge, with the log truncated past
/// its image. Restart used to leave such a page torn (its history ends free) and then read it
/// to redo the changes before the free: "redo needs page N from disk, and it is damaged" (the
/// racing crash test met it about once in a dozen runs, CI once). Now analysis drops a freed
/// page from the dirty-page table and the double-write area's copy is put back anyway.
#[test]
fn r3_a_torn_page_freed_afterwards_is_put_back_for_redo() {
    let k = |i: u32| format!("key{i:05}").into_bytes();
    let mut restored = 0;
    for seed in 0..6u64 {
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let fs = new_fs();
            let b = builder(mode, Arc::new(fs.clone())).checkpoint_interval(None);
            let db = b.clone().create(db_path()).unwrap();
            let tree = db.create_tree("t").unwrap();
            for i in 0..600 {
                tree.upsert(&k(i), &[1; 100]).unwrap();
            }
            // Every page written and the log truncated: no image of a leaf is left in it.
            db.flush().unwrap();
            db.checkpoint().unwrap();
            // Changes after the checkpoint: these leaves are in restart's dirty-page table.
            for i in 200..400 {
                tree.upsert(&k(i), &[2; 100]).unwrap();
            }
            // Reading the rest through the 16-frame pool evicts them: written, not synced.
            for i in (0..200).chain(400..600) {
                assert_eq!(tree.get(&k(i)).unwrap().as_deref(), Some(&[1u8; 100][..]));
            }
            // Emptied leaves merge away: freed.
            for i in 200..400 {
                assert!(tree.delete(&k(i)).unwrap());
            }
            // A power loss (io README IO10): the dead instance's log flusher, still running
            // until the drop stops it, cannot create or sync a spare segment in the new state.
            fs.power_off(CrashMode::Torn { seed });
            drop((tree, db));
            fs.power_on();

            let context = format!("seed {seed}, {mode:?}");
            let db = b.open(db_path()).unwrap_or_else(|e| panic!("{context}: restart failed: {e}"));
            restored += db.restart_stats().torn_pages_restored;
            let tree = db.tree("t").unwrap();
            tree.verify().unwrap_or_else(|e| panic!("{context}: {e}"));
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                (0..200).chain(400..600).map(|i| (k(i), vec![1; 100])).collect();
            assert_eq!(contents(&tree), want, "{context}");
            db.close().unwrap();
        }
    }
    assert!(restored > 0, "no page was torn: the test tests nothing");
}

/// A database made by `b` with 40 records of version 1 in `TREE`, and their model.
fn forty_records(b: &swizzledb::Builder) -> (Database, Tree, Model) {
    let db = b.clone().create(db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    let mut model = Model::new();
    for k in 0..40 {
        tree.upsert(&key(k), &value(k, 1)).unwrap();
        model.insert(k, 1);
    }
    (db, tree, model)
}

/// Buffer README F4, README "Transactions": once a write or sync of the database file failed
/// (here the sync of a `flush`, with `ENOSPC`), every later change is refused with
/// `PreviousIoError` — a tree's own write, a transaction's, a new tree — in every mode, logged or
/// not, and not only the changes that happen to need the file; the commits made before it are
/// all there after a reopen (logged: restart from the log). Changes went on being accepted
/// after a failed data-file sync, in memory only (an unlogged database lost them at the close
/// that then failed).
#[test]
fn f4_after_a_failed_sync_of_the_file_every_change_is_refused_until_reopened() {
    use swizzledb::{BufferError, TreeError};
    let previous = |e: &Error| {
        matches!(
            e,
            Error::Buffer(BufferError::PreviousIoError { .. })
                | Error::Tree(TreeError::Buffer(BufferError::PreviousIoError { .. }))
        )
    };
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for logged in [true, false] {
            let context = format!("{mode:?}, logged: {logged}");
            let fs = new_fs();
            let sites = Sites::new(fs.clone());
            let b = builder(mode, Arc::new(sites.clone())).logging(logged);
            let (db, tree, model) = forty_records(&b);
            sites.arm(Site { op: Op::Sync, class: Class::Data, nth: 1, fault: Fault::Enospc });
            let failed = db.flush().expect_err(&context);
            assert!(sites.fired(), "{context}: {failed}");
            // A background thread (the evictor, the page cleaner) may have met the fault first.
            assert!(
                matches!(failed, Error::Buffer(BufferError::Io { .. })) || previous(&failed),
                "{context}: {failed:?}"
            );
            sites.disarm();
            // The disk has room again; the database still refuses, as its file is behind.
            let refused = |what: &str, r: Result<(), Error>| {
                let e = r.expect_err(&format!("{context}: {what} after the failed sync"));
                assert!(previous(&e), "{context}: {what}: {e:?}");
            };
            refused("insert", tree.insert(&key(100), b"new").map_err(Error::from));
            refused("upsert", tree.upsert(&key(1), b"changed").map(drop).map_err(Error::from));
            refused("delete", tree.delete(&key(2)).map(drop).map_err(Error::from));
            refused("a transaction", db.transact(|t| t.put(&tree, &key(3), b"changed").map(drop)));
            refused("create_tree", db.create_tree("other").map(drop));
            drop(tree);
            assert!(db.close().is_err(), "{context}: close after the failed sync");
            match b.open(db_path()) {
                Ok(db) => {
                    assert_state(&db, &model, &context);
                    db.close().unwrap();
                }
                // R13: an unlogged database whose close failed is not clean.
                Err(Error::Unclean(_)) if !logged => {}
                Err(e) => panic!("{context}: reopen: {e}"),
            }
        }
    }
}

/// wal README W10, W11, RECOVERY.md's failure table ("log write or fsync fails": no later
/// change or commit succeeds; reopen): a checkpoint whose master record cannot be written or
/// synced (`ENOSPC`) returns the log's `Io` error, and from then on every change and commit is
/// refused until the database is reopened, in every mode; the commits before it are all there
/// after the reopen. The log went on acknowledging commits after that error, which
/// `LogError::Io` says fails the log.
#[test]
fn w11_a_failed_write_or_sync_of_the_master_record_fails_the_log_until_reopened() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for op in [Op::Write, Op::Sync] {
            let context = format!("{mode:?}, {op:?}");
            let fs = new_fs();
            let b = builder(mode, Arc::new(fs.clone())).checkpoint_interval(None);
            let (db, tree, model) = forty_records(&b);
            fs.fail_next(swizzledb_io::FaultRule::new(op, Fault::Enospc).on_path("master"));
            let failed = db.checkpoint().expect_err(&context);
            assert!(matches!(failed, Error::Log(LogError::Io { .. })), "{context}: {failed:?}");
            fs.clear_faults();
            assert!(tree.upsert(&key(100), b"after").is_err(), "{context}: a write after the failure");
            let r = db.transact(|t| t.put(&tree, &key(101), b"after"));
            assert!(
                matches!(
                    r,
                    Err(Error::Log(LogError::Failed { .. }) | Error::Tree(swizzledb::TreeError::Log(_)))
                ),
                "{context}: a transaction: {r:?}"
            );
            drop(tree);
            assert!(db.close().is_err(), "{context}: close of a failed log");
            let db = b.open(db_path()).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
            assert_state(&db, &model, &context);
            db.close().unwrap();
        }
    }
}

/// RECOVERY.md R5a, R13: on an unlogged database, a rollback that a read error stops (`EIO`,
/// not sticky) leaves changes in the tree that no restart will take back. `close` then returns
/// `Error::Unclean` and leaves the file unclean, so the next open refuses it; it wrote the
/// pages and marked the file CLEAN, and the reopened database held the rolled-back value as if
/// committed.
#[test]
fn r5a_an_unlogged_close_after_a_failed_rollback_leaves_the_file_unclean() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        let mut stopped = false;
        for nth in 1..20 {
            let context = format!("{mode:?}, read {nth} of the rollback");
            let fs = new_fs();
            let b = builder(mode, Arc::new(fs.clone())).logging(false);
            let db = b.clone().create(db_path()).unwrap();
            let tree = db.create_tree(TREE).unwrap();
            for k in 0..200 {
                tree.upsert(&key(k), &value(k, 1)).unwrap();
            }
            drop(tree);
            db.close().unwrap();
            let db = b.clone().open(db_path()).unwrap();
            let tree = db.tree(TREE).unwrap();
            let mut t = db.begin();
            for k in 50..150 {
                t.put(&tree, &key(k), &value(k, 3)).unwrap();
            }
            fs.fail_next(swizzledb_io::FaultRule::new(Op::Read, Fault::Eio).nth(nth));
            let aborted = t.abort();
            fs.clear_faults();
            if aborted.is_ok() {
                drop(tree);
                db.close().unwrap();
                continue;
            }
            stopped = true;
            drop(tree);
            let closed = db.close();
            assert!(matches!(closed, Err(Error::Unclean(_))), "{context}: close: {closed:?}");
            match b.clone().open(db_path()) {
                Err(Error::Unclean(_)) => {}
                Ok(db) => {
                    let got = db.tree(TREE).unwrap().get(&key(50)).unwrap();
                    panic!("{context}: opened, key 50 holds {} bytes", got.map_or(0, |v| v.len()));
                }
                Err(e) => panic!("{context}: reopen: {e}"),
            }
            let db = b.discard_unclean(true).open(db_path()).unwrap();
            db.close().unwrap();
            break;
        }
        assert!(stopped, "{mode:?}: no read failed the rollback");
    }
}
