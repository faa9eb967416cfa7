//! Choosing a buffer mode, a pool size and a replacement policy.
//!
//! - `PoolMode::Swizzling` (default): child references become direct frame references once
//!   loaded, so hot lookups skip the page table; evicts like a traditional pool.
//! - `PoolMode::Traditional`: a page-table lookup on every step (the classical design).
//! - `PoolMode::MainMemory`: everything resident, no page table; the data must fit the pool.
//!
//! Policies are named as on the command line (`gclock`, `lru`, `2q`, `arc`, `car`, `sieve`,
//! `s3-fifo`, ... and `bpw-<policy>` behind BP-Wrapper); see the replacement crate's README.
//!
//! `cargo run --release -p swizzledb-examples --example configure`

use std::time::Instant;
use swizzledb::{Database, PolicySpec, PoolMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    for (mode, policy) in [
        (PoolMode::Swizzling, "gclock"),
        (PoolMode::Traditional, "lru"),
        (PoolMode::Swizzling, "bpw-2q"),
        (PoolMode::MainMemory, "gclock"),
    ] {
        let policy: PolicySpec = policy.parse()?;
        let path = dir.path().join(format!("{mode:?}-{policy}.swz"));
        let db = Database::builder()
            .mode(mode)
            .policy(policy)
            // 4 MiB of frames for about 8 MiB of data: lookups miss, and the policy matters
            // (main-memory mode needs room for everything: it gets 32 MiB).
            .pool_bytes(if mode == PoolMode::MainMemory { 32 << 20 } else { 4 << 20 })
            // A scratch database: no log, so the load is quick (close leaves it consistent).
            .logging(false)
            .create(&path)?;
        let tree = db.create_tree("t")?;
        for i in 0..60_000u64 {
            tree.upsert(&i.to_be_bytes(), &[7u8; 100])?;
        }
        let before = db.stats();
        let started = Instant::now();
        // A skewed read pattern: most lookups hit a tenth of the keys.
        let mut x = 12345u64;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = if x % 10 < 8 { (x >> 20) % 6_000 } else { (x >> 20) % 60_000 };
            assert!(tree.get(&k.to_be_bytes())?.is_some());
        }
        let s = db.stats().since(&before);
        println!(
            "{mode:?}/{policy}: {:.0} ns per lookup, hit ratio {:.3}, {} evictions",
            started.elapsed().as_nanos() as f64 / 200_000.0,
            s.hits as f64 / s.fixes.max(1) as f64,
            s.evictions
        );
        db.close()?;
    }
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn configure_runs() {
    main().unwrap();
}
