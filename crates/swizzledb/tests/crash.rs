//! Crash and fault-injection tests of logging, transactions and restart (RECOVERY.md R4–R11,
//! wal README W7–W11, buffer README B18–B21, sync README V5–V9), on the in-memory `FaultFs`.
//!
//! A crash is `FaultFs::crash` while the old `Database` still exists: its handles fail from then
//! on, and dropping it afterwards must neither panic nor touch the new state. The database is
//! then reopened with the same builder, which restarts from the log. The oracle is a `BTreeMap`
//! of the committed state (`common::Model`).

mod common;

use common::*;
use proptest::prelude::*;
use std::sync::Arc;
use swizzledb::{Database, PoolMode};
use swizzledb_sync::{CrashMode, FaultFs};

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

/// Test 1: a random workload, a crash in a random mode, restart. Returns the restart's counters.
fn random_workload_then_crash(mode: PoolMode, steps: &[Step], crash: CrashMode) -> swizzledb::RestartStats {
    let fs = new_fs();
    let builder = builder(mode, Arc::new(fs.clone()));
    let db = builder.clone().create(&db_path()).unwrap();
    let tree = db.create_tree(TREE).unwrap();
    db.checkpoint().unwrap();
    let mut open = Vec::new();
    let out = run_steps(&db, &tree, steps, &Model::new(), &mut open);
    assert!(out.error.is_none(), "workload before the crash: {:?}", out.error);
    if open.is_empty() {
        // (Reading the tree directly sees the open transactions' writes: no check then.)
        assert_state(&db, &out.acked, "before the crash");
    }
    if mode != PoolMode::MainMemory && steps.len() > 5 {
        assert!(db.stats().write_backs > 0, "the pool is small enough to write pages before the crash");
    }
    fs.crash(crash);
    drop(open);
    drop(tree);
    drop(db);

    let db = builder.clone().open(&db_path()).unwrap();
    let stats = db.restart_stats();
    assert_state(&db, &out.acked, &format!("after the crash ({crash:?})"));
    let model = continue_after_restart(&db, &out.acked, 0xA5);
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(&db_path()).unwrap();
    assert_state(&db, &model, "after a second crash");
    db.close().unwrap();
    stats
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

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
            let stats = random_workload_then_crash(mode, &steps, crash);
            assert_eq!(stats.losers, 1, "{mode:?} {crash:?}: the open transaction is the loser: {stats:?}");
            assert!(stats.compensations >= 84, "{mode:?} {crash:?}: each of its 84 writes is undone: {stats:?}");
        }
    }
}

#[allow(dead_code)]
fn unused(_: FaultFs) {}
