//! Bulk load: many records in large transactions, in key order, then a checkpoint.
//!
//! A logged database makes each commit durable with one log flush, so batching thousands of
//! writes into one transaction is far cheaper than one auto-commit per write. Keys inserted in
//! ascending order leave full leaves behind (a split at the end of a node moves only the last
//! record). For a scratch database that needs no crash safety, `logging(false)` skips the log
//! altogether; only `close` then leaves the file consistent.
//!
//! `cargo run --release -p swizzledb-examples --example bulk_load`

use std::time::Instant;
use swizzledb::Database;

const RECORDS: u32 = 200_000;
const BATCH: u32 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::builder().pool_bytes(64 << 20).create(dir.path().join("bulk.swz"))?;
    let tree = db.create_tree("events")?;

    let started = Instant::now();
    for batch in 0..RECORDS / BATCH {
        db.transact(|tx| {
            for i in batch * BATCH..(batch + 1) * BATCH {
                // Big-endian keys sort numerically.
                tx.put(&tree, &i.to_be_bytes(), format!("event number {i}").as_bytes())?;
            }
            Ok(())
        })?;
    }
    // A checkpoint writes the dirty pages, so the next open has little log to replay.
    db.checkpoint()?;
    let elapsed = started.elapsed();
    println!(
        "loaded {RECORDS} records in {:.2} s ({:.0} records/s)",
        elapsed.as_secs_f64(),
        f64::from(RECORDS) / elapsed.as_secs_f64()
    );

    let shape = tree.verify().map_err(|e| format!("the tree is damaged: {e}"))?;
    println!("tree: {} levels, {} leaves, {} records", shape.height, shape.leaves, shape.records);
    assert_eq!(shape.records, RECORDS as usize);
    db.close()?;
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn bulk_load_runs() {
    main().unwrap();
}
