//! Reading statistics: the buffer pool's counters, the log's, checkpoints, the page cleaner,
//! record locks, and what the last restart did. (With the `serde` feature every statistics type
//! implements `serde::Serialize`.)
//!
//! `cargo run -p swizzledb-examples --example statistics`

use swizzledb::Database;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("stats.swz");
    let db = Database::builder().pool_bytes(1 << 19).create(&path)?;
    let tree = db.create_tree("t")?;
    db.transact(|tx| {
        for i in 0..20_000u32 {
            tx.put(&tree, &i.to_be_bytes(), &[1u8; 64])?;
        }
        Ok(())
    })?;
    let before = db.stats();
    for i in (0..20_000u32).step_by(7) {
        tree.get(&i.to_be_bytes())?;
    }
    db.checkpoint()?;

    // Buffer pool: counters summed over all threads; `since` gives the difference.
    let pool = db.stats().since(&before);
    println!(
        "lookups: {} fixes, {} hits, {} misses, {} evictions",
        pool.fixes, pool.hits, pool.misses, pool.evictions
    );

    // The write-ahead log (None without logging).
    if let Some(log) = db.log_stats() {
        println!("log: {} records, {} bytes, {} fsyncs", log.appends, log.body_bytes, log.fsyncs);
    }
    println!("log kept on disk: {:?} bytes", db.log_bytes());

    // Checkpoints, the page cleaner, record locks.
    let counts = db.checkpoint_counts();
    println!(
        "checkpoints: {} ({} in the background, {} failed)",
        counts.checkpoints, counts.background, counts.failed
    );
    println!("checkpoint details: {:?}", db.checkpoint_stats());
    println!("page cleaner: {:?}", db.cleaner_stats());
    println!("record locks: {:?}", db.lock_stats());
    db.close()?;

    // What the restart at the next open did (a clean close leaves nothing to redo).
    let db = Database::builder().open(&path)?;
    println!("restart: {:?}", db.restart_stats());
    db.close()?;
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn statistics_runs() {
    main().unwrap();
}
