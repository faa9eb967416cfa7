//! The cost of one `fix` hit per buffer mode and latch mode (Graefe et al. 2014; Gilbert 2017
//! measured a swizzled fix about 30% cheaper than a page-table fix).
//!
//! Per mode, a database of `records` records whose pool holds everything is read once (so every
//! swip on the way is swizzled in the swizzling modes); then, with the root latched shared, the
//! timed loop fixes the root's children round-robin through `fix_child` and drops each guard.
//! Repetitions alternate between the modes. For a statistically careful version of the same
//! measurement see `cargo bench -p swizzledb --bench fix` (criterion).

use crate::rndread::{create, value_for, Config, Progress, LOGGING};
use std::time::Instant;
use swizzledb::{Error, PoolMode};
use swizzledb_btree::node;
use swizzledb_buffer::{Exclusive, LatchKind, Shared};

/// One timed loop: nanoseconds per fix.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FixSample {
    /// Buffer mode.
    pub mode: String,
    /// `shared` or `exclusive`.
    pub latch: String,
    /// Repetition, from 0.
    pub repetition: usize,
    /// Fixes timed.
    pub fixes: u64,
    /// Nanoseconds per fix (and unfix).
    pub ns_per_fix: f64,
    /// Whether a write-ahead log was on (never: this measures the buffer).
    pub logging: bool,
}

/// Runs the measurement: `fixes` fixes per mode, latch mode and repetition.
///
/// # Errors
/// Engine errors building a database (a tree too small to have an inner root is reported too).
pub fn run(
    cfg: &Config,
    fixes: u64,
    progress: Progress,
) -> Result<Vec<FixSample>, Box<dyn std::error::Error>> {
    let mut beds = Vec::new();
    for &mode in &cfg.modes {
        let path = cfg.dir.join(format!("swizzledb-fix-{}-{}.swz", std::process::id(), mode.name()));
        let (db, file) = create(cfg, mode, path)?;
        let bar = progress.counter(cfg.records, format!("{mode}: loading"));
        let tree = crate::rndread::load(&db, cfg.records, &bar)?;
        bar.finish_and_clear();
        for k in 0..cfg.records {
            let key = k.to_be_bytes();
            tree.get_with(&key, |v| v.map(|v| v == value_for(&key)))?;
        }
        beds.push((mode, db, tree, file));
    }
    let mut samples = Vec::new();
    for rep in 0..cfg.repeat {
        for (mode, db, tree, _) in &beds {
            for exclusive in [false, true] {
                let pool = db.pool();
                let mut root = pool.fix_page::<Shared>(tree.root_page()).map_err(Error::from)?;
                if node::is_leaf(&root) {
                    return Err(format!("{mode}: the tree has a single level; use more --records").into());
                }
                let mut offs = Vec::new();
                node::swip_offsets(&root, &mut offs);
                let start = Instant::now();
                let mut i = 0;
                for _ in 0..fixes {
                    let off = offs[i];
                    i = if i + 1 == offs.len() { 0 } else { i + 1 };
                    if exclusive {
                        fix_once::<Exclusive>(pool, &mut root, off)?;
                    } else {
                        fix_once::<Shared>(pool, &mut root, off)?;
                    }
                }
                let ns = start.elapsed().as_nanos() as f64 / fixes as f64;
                samples.push(FixSample {
                    mode: mode.name().to_string(),
                    latch: if exclusive { "exclusive" } else { "shared" }.to_string(),
                    repetition: rep,
                    fixes,
                    ns_per_fix: ns,
                    logging: LOGGING,
                });
            }
        }
    }
    Ok(samples)
}

#[inline]
fn fix_once<M: LatchKind>(
    pool: &swizzledb_buffer::BufferPool,
    root: &mut swizzledb_buffer::SharedGuard<'_>,
    off: usize,
) -> Result<(), Error> {
    let child = pool.fix_child::<Shared, M>(root, off).map_err(Error::from)?;
    std::hint::black_box(&child);
    Ok(())
}

/// Median ns/fix of `mode` and `latch` over the repetitions.
#[must_use]
pub fn median(samples: &[FixSample], mode: PoolMode, latch: &str) -> Option<crate::report::Summary> {
    let v: Vec<f64> =
        samples.iter().filter(|s| s.mode == mode.name() && s.latch == latch).map(|s| s.ns_per_fix).collect();
    crate::report::summarize(&v)
}
