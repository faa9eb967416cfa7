//! TPC-C at test scale: after a run of the five transactions on two threads the consistency
//! conditions 1–4 (clause 3.3.2) hold, in swizzling and traditional mode, with logging and
//! locking both on and both off, and on LMDB (feature `lmdb`); and a damaged database fails
//! them.

use std::path::Path;
use swizzledb::{Database, PoolMode};
use swizzledb_lab::engine::Engine;
use swizzledb_lab::harness::{self, Until};
use swizzledb_lab::workloads::tpcc::schema::{key, District, Record, Warehouse};
use swizzledb_lab::workloads::tpcc::{Tpcc, TpccConfig, KINDS};
use swizzledb_lab::{Workload, WorkloadError};

fn open(path: &Path, mode: PoolMode, on: bool) -> Database {
    Database::builder()
        .mode(mode)
        .pool_bytes(64 << 20)
        .logging(on)
        .lab(|l| l.locking(on))
        .commit_mode(swizzledb::CommitMode::Async)
        .create(path)
        .unwrap()
}

/// Loads two warehouses, runs 1500 transactions on each of two threads, verifies.
fn run_and_verify(mode: PoolMode, on: bool) {
    run_and_verify_with(mode, on, TpccConfig::tiny(2));
}

fn run_and_verify_with(mode: PoolMode, on: bool, config: TpccConfig) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("tpcc.swz"), mode, on);
    load_run_and_verify(&db, config);
    db.close().unwrap();
}

/// The test on any engine.
fn load_run_and_verify<E: Engine>(db: &E, config: TpccConfig) {
    let tpcc = Tpcc::new(config).unwrap();
    tpcc.load(db).unwrap();
    tpcc.verify(db).unwrap();
    let m = harness::run(&tpcc, db, 2, Until::Operations(1500)).unwrap();
    assert_eq!(m.operations(), 3000);
    // Every kind ran (4% of 3000 is 120 expected for the rarest).
    for (k, c) in KINDS.iter().zip(&m.kinds) {
        assert!(c.done > 30, "{k}: {c:?}");
    }
    // About 1% of New-Orders roll back.
    assert!(m.rolled_back() > 0 && m.rolled_back() < m.kinds[0].done / 20, "{m:?}");
    tpcc.verify(db).unwrap();
}

/// LMDB through the engine adapter, with the durability of either logging setting: the same
/// transactions, one write transaction each (read-only ones in snapshots), never retried.
#[cfg(feature = "lmdb")]
#[test]
fn consistent_after_run_lmdb() {
    let dir = tempfile::tempdir().unwrap();
    for logging in [true, false] {
        let db = swizzledb_lab::engine::Lmdb::create(
            &dir.path().join(format!("log-{logging}")),
            1 << 30,
            8,
            logging,
        )
        .unwrap();
        load_run_and_verify(&db, TpccConfig::tiny(2));
    }
}

/// A damaged LMDB database fails the check as SwizzleDB's does: the check reads through the
/// adapter.
#[cfg(feature = "lmdb")]
#[test]
fn damaged_lmdb_database_fails_verify() {
    use swizzledb_lab::engine::{Abort, TxWrite};
    let dir = tempfile::tempdir().unwrap();
    let db = swizzledb_lab::engine::Lmdb::create(&dir.path().join("lmdb"), 1 << 30, 8, false).unwrap();
    let tpcc = Tpcc::new(TpccConfig::tiny(1)).unwrap();
    tpcc.load(&db).unwrap();
    harness::run(&tpcc, &db, 1, Until::Operations(300)).unwrap();
    tpcc.verify(&db).unwrap();
    // 1: a payment to the warehouse that missed its district.
    let warehouses = db.table("tpcc-warehouse").unwrap();
    db.transact(|tx| {
        tx.update_with(&warehouses, &key([1]), |old, new| {
            let mut w = Warehouse::decode(old).unwrap();
            w.ytd += 1;
            new.extend_from_slice(&w.encode());
        })?;
        Ok::<_, Abort>(())
    })
    .unwrap();
    assert_eq!(condition(tpcc.verify(&db).unwrap_err()), "3.3.2.1");
}

#[test]
fn consistent_after_run_swizzling_logging_and_locking_on() {
    run_and_verify(PoolMode::Swizzling, true);
}

#[test]
fn consistent_after_run_swizzling_logging_and_locking_off() {
    run_and_verify(PoolMode::Swizzling, false);
}

/// New-Order's items, `W_TAX` and `C_DISCOUNT` read under record locks, as every other read.
#[test]
fn consistent_after_run_swizzling_logging_and_locking_on_with_locking_reads() {
    run_and_verify_with(
        PoolMode::Swizzling,
        true,
        TpccConfig { committed_reads: false, ..TpccConfig::tiny(2) },
    );
}

/// Record locks without a log, as `bench tpcc --logging off --locking on` runs: Order-Status at
/// snapshots and Stock-Level at read committed read through the versions of an unlogged
/// database (LOCKS.md K21, K25).
#[test]
fn consistent_after_run_swizzling_unlogged_with_locking_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .pool_bytes(64 << 20)
        .logging(false)
        .lab(|l| l.locking(true))
        .create(dir.path().join("tpcc.swz"))
        .unwrap();
    load_run_and_verify(&db, TpccConfig::tiny(2));
    db.close().unwrap();
}

/// Stock-Level at a snapshot of its start, where the default reads it at read committed
/// (`TpccConfig::stock_level_read_committed`).
#[test]
fn consistent_after_run_swizzling_logging_and_locking_on_with_snapshot_stock_level() {
    run_and_verify_with(
        PoolMode::Swizzling,
        true,
        TpccConfig { stock_level_read_committed: false, ..TpccConfig::tiny(2) },
    );
}

/// New-Order's committed reads (`TpccConfig::committed_reads`) take no record lock: one thread
/// and one seed run the same transactions on two databases loaded alike, and the one that
/// locked those reads made at least one request more per item line, warehouse and customer of
/// every New-Order that got past its items (5 to 15 lines), and at most two more per line
/// and for the warehouse and the customer (an absent item's read also locks its gap).
#[test]
fn committed_reads_take_no_record_locks() {
    let dir = tempfile::tempdir().unwrap();
    let mut requests = Vec::new();
    let mut new_orders = Vec::new();
    for committed_reads in [true, false] {
        let db = open(&dir.path().join(format!("reads-{committed_reads}")), PoolMode::Swizzling, true);
        let tpcc = Tpcc::new(TpccConfig { committed_reads, ..TpccConfig::tiny(1) }).unwrap();
        tpcc.load(&db).unwrap();
        let before = db.lock_stats().unwrap().requests;
        let m = harness::run(&tpcc, &db, 1, Until::Operations(400)).unwrap();
        requests.push(db.lock_stats().unwrap().requests - before);
        new_orders.push((m.kinds[0].done, m.rolled_back()));
        tpcc.verify(&db).unwrap();
        db.close().unwrap();
    }
    assert_eq!(new_orders[0], new_orders[1], "one seed, one thread: the same transactions");
    let (done, rolled_back) = new_orders[0];
    let fewer = requests[1].saturating_sub(requests[0]);
    assert!(
        fewer >= 7 * (done - rolled_back) && fewer <= 19 * done,
        "{fewer} fewer requests over {done} New-Orders ({rolled_back} rolled back): {requests:?}"
    );
}

#[test]
fn consistent_after_run_traditional_logging_and_locking_on() {
    run_and_verify(PoolMode::Traditional, true);
}

#[test]
fn consistent_after_run_traditional_logging_and_locking_off() {
    run_and_verify(PoolMode::Traditional, false);
}

fn condition(e: WorkloadError) -> &'static str {
    match e {
        WorkloadError::Inconsistent { condition, .. } => condition,
        other => panic!("expected an inconsistency, got {other}"),
    }
}

/// Each condition catches its own kind of damage.
#[test]
fn damaged_database_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("tpcc.swz"), PoolMode::Swizzling, false);
    let tpcc = Tpcc::new(TpccConfig::tiny(1)).unwrap();
    tpcc.load(&db).unwrap();
    harness::run(&tpcc, &db, 1, Until::Operations(300)).unwrap();
    tpcc.verify(&db).unwrap();

    // 1: a payment to the warehouse that missed its district.
    let warehouses = db.tree("tpcc-warehouse").unwrap();
    let before = warehouses.get(&key([1])).unwrap().unwrap();
    let mut w = Warehouse::decode(&before).unwrap();
    w.ytd += 1;
    warehouses.upsert(&key([1]), &w.encode()).unwrap();
    assert_eq!(condition(tpcc.verify(&db).unwrap_err()), "3.3.2.1");
    warehouses.upsert(&key([1]), &before).unwrap();

    // 2: a district whose order counter ran ahead of its orders.
    let districts = db.tree("tpcc-district").unwrap();
    let before = districts.get(&key([1, 3])).unwrap().unwrap();
    let mut d = District::decode(&before).unwrap();
    d.next_o_id += 1;
    districts.upsert(&key([1, 3]), &d.encode()).unwrap();
    assert_eq!(condition(tpcc.verify(&db).unwrap_err()), "3.3.2.2");
    districts.upsert(&key([1, 3]), &before).unwrap();

    // 3: a hole in the new-order queue (its oldest entries stay; one in the middle goes).
    let new_orders = db.tree("tpcc-new-order").unwrap();
    let next = d.next_o_id - 1; // the counter before the damage
    let hole = key([1, 3, next - 5]);
    assert!(new_orders.delete(&hole).unwrap());
    assert_eq!(condition(tpcc.verify(&db).unwrap_err()), "3.3.2.3");
    new_orders.insert(&hole, &[]).unwrap();

    // 4: an order line lost.
    let lines = db.tree("tpcc-order-line").unwrap();
    assert!(lines.delete(&key([1, 7, 10, 1])).unwrap());
    assert_eq!(condition(tpcc.verify(&db).unwrap_err()), "3.3.2.4");
    db.close().unwrap();
}

#[test]
fn bad_scale_is_refused() {
    for config in [TpccConfig::tiny(0), TpccConfig { customers: 3, ..TpccConfig::tiny(1) }] {
        assert!(matches!(Tpcc::new(config), Err(WorkloadError::Config(_))));
    }
}
