//! TPC-B at test scale: after runs on several threads the balances agree with each other and
//! with the history, with locking on and with locking off; 15% of accounts come from another
//! branch; and a database changed behind the workload's back fails the check.

use std::ops::Bound::Unbounded;
use std::path::Path;
use swizzledb::{Database, PoolMode};
use swizzledb_lab::harness::{self, Until};
use swizzledb_lab::workloads::tpcb::schema::{history_key, id_key, History, Row};
use swizzledb_lab::workloads::tpcb::{Tpcb, TpcbConfig, TELLERS};
use swizzledb_lab::{Workload, WorkloadError};

fn open(path: &Path, mode: PoolMode, logging: bool, locking: bool) -> Database {
    Database::builder()
        .mode(mode)
        .pool_bytes(32 << 20)
        .logging(logging)
        .lab(|l| l.locking(locking))
        .commit_mode(swizzledb::CommitMode::Async)
        .create(path)
        .unwrap()
}

/// Loads three branches, runs 1500 transactions on each of three threads, verifies.
fn run_and_verify(mode: PoolMode, logging: bool, locking: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("tpcb.swz"), mode, logging, locking);
    let tpcb = Tpcb::new(TpcbConfig::tiny(3)).unwrap();
    tpcb.load(&db).unwrap();
    tpcb.verify(&db).unwrap();
    let m = harness::run(&tpcb, &db, 3, Until::Operations(1500)).unwrap();
    assert_eq!(m.operations(), 4500);
    let history = db.tree("tpcb-history").unwrap().range(Unbounded, Unbounded).count();
    assert_eq!(history, 4500, "one history row per committed transaction");
    tpcb.verify(&db).unwrap();
    db.close().unwrap();
}

#[test]
fn consistent_after_run_swizzling_logging_and_locking_on() {
    run_and_verify(PoolMode::Swizzling, true, true);
}

#[test]
fn consistent_after_run_traditional_locking_on_logging_off() {
    run_and_verify(PoolMode::Traditional, false, true);
}

#[test]
fn consistent_after_run_with_locking_off() {
    run_and_verify(PoolMode::Swizzling, false, false);
}

/// The history records where each transaction went: the teller belongs to the branch, and the
/// account to another branch about 15% of the time (none with one branch).
#[test]
fn fifteen_percent_of_accounts_are_remote() {
    for (branches, low, high) in [(4, 0.12, 0.18), (1, 0.0, 0.0)] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir.path().join("tpcb.swz"), PoolMode::Swizzling, false, false);
        let config = TpcbConfig::tiny(branches);
        let tpcb = Tpcb::new(config.clone()).unwrap();
        tpcb.load(&db).unwrap();
        harness::run(&tpcb, &db, 1, Until::Operations(4000)).unwrap();
        let (mut remote, mut all) = (0u32, 0u32);
        let mut deltas = Vec::new();
        for r in db.tree("tpcb-history").unwrap().range(Unbounded, Unbounded) {
            let h = History::decode(&r.unwrap().1).unwrap();
            assert_eq!(h.teller / TELLERS, h.branch);
            remote += u32::from(h.account / config.accounts != h.branch);
            all += 1;
            deltas.push(h.delta);
        }
        assert_eq!(all, 4000);
        let share = f64::from(remote) / f64::from(all);
        assert!((low..=high).contains(&share), "{branches} branches: {share} remote");
        // Deltas are spread over [-999999, 999999].
        assert!(deltas.iter().all(|d| (-999_999..=999_999).contains(d)));
        assert!(deltas.iter().any(|&d| d < -900_000) && deltas.iter().any(|&d| d > 900_000));
        db.close().unwrap();
    }
}

fn condition(e: WorkloadError) -> &'static str {
    match e {
        WorkloadError::Inconsistent { condition, .. } => condition,
        other => panic!("expected an inconsistency, got {other}"),
    }
}

/// Changes one row's balance by `by`, behind the workload's back.
fn nudge(db: &Database, table: &str, id: u32, by: i64) {
    let tree = db.tree(table).unwrap();
    let mut row = Row::decode("t", &tree.get(&id_key(id)).unwrap().unwrap()).unwrap();
    row.balance += by;
    tree.upsert(&id_key(id), &row.encode()).unwrap();
}

/// Each check catches its own kind of damage, and undoing the damage passes again.
#[test]
fn damaged_database_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("tpcb.swz"), PoolMode::Swizzling, false, false);
    let config = TpcbConfig::tiny(2);
    let tpcb = Tpcb::new(config.clone()).unwrap();
    tpcb.load(&db).unwrap();
    harness::run(&tpcb, &db, 2, Until::Operations(300)).unwrap();
    tpcb.verify(&db).unwrap();

    // A branch balance changed alone.
    nudge(&db, "tpcb-branch", 1, 5);
    assert_eq!(condition(tpcb.verify(&db).unwrap_err()), "branch = tellers");
    // ...and its teller too: now the history disagrees.
    nudge(&db, "tpcb-teller", TELLERS + 3, 5);
    assert_eq!(condition(tpcb.verify(&db).unwrap_err()), "branch = history");
    nudge(&db, "tpcb-branch", 1, -5);
    nudge(&db, "tpcb-teller", TELLERS + 3, -5);
    tpcb.verify(&db).unwrap();

    // An account credited without a history row.
    nudge(&db, "tpcb-account", config.accounts + 17, 1);
    assert_eq!(condition(tpcb.verify(&db).unwrap_err()), "accounts = history");
    nudge(&db, "tpcb-account", config.accounts + 17, -1);

    // A history row lost.
    let history = db.tree("tpcb-history").unwrap();
    let (k, v) = history.range(Unbounded, Unbounded).next().unwrap().unwrap();
    assert!(history.delete(&k).unwrap());
    assert!(matches!(condition(tpcb.verify(&db).unwrap_err()), "branch = history" | "accounts = history"));
    history.insert(&k, &v).unwrap();
    // A history row naming a teller of another branch.
    let mut h = History::decode(&v).unwrap();
    h.teller = (h.teller + TELLERS) % (2 * TELLERS);
    history.insert(&history_key(u32::MAX, 0), &h.encode()).unwrap();
    assert_eq!(condition(tpcb.verify(&db).unwrap_err()), "history");
    assert!(history.delete(&history_key(u32::MAX, 0)).unwrap());
    tpcb.verify(&db).unwrap();

    // A row lost, a row of the wrong size, a row under another's key.
    let accounts = db.tree("tpcb-account").unwrap();
    let before = accounts.get(&id_key(5)).unwrap().unwrap();
    assert!(accounts.delete(&id_key(5)).unwrap());
    assert!(matches!(tpcb.verify(&db), Err(WorkloadError::Missing { table: "tpcb-account", .. })));
    accounts.insert(&id_key(5), &before[..99]).unwrap();
    assert!(matches!(tpcb.verify(&db), Err(WorkloadError::Corrupt { len: 99, expected: 100, .. })));
    accounts.upsert(&id_key(5), &accounts.get(&id_key(6)).unwrap().unwrap()).unwrap();
    assert_eq!(condition(tpcb.verify(&db).unwrap_err()), "rows");
    accounts.upsert(&id_key(5), &before).unwrap();
    tpcb.verify(&db).unwrap();
    db.close().unwrap();
}

#[test]
fn bad_scale_is_refused() {
    for config in [TpcbConfig::tiny(0), TpcbConfig { accounts: 5, ..TpcbConfig::tiny(1) }] {
        assert!(matches!(Tpcb::new(config), Err(WorkloadError::Config(_))));
    }
}
