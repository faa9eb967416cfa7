//! `experiment ding-lock-hold` (Ding et al. 2015, Fig. 4) and `experiment ding-buffer-sizes`
//! (Fig. 10) end to end at the smallest scale: a CSV row per measurement with the documented
//! columns, the lock time measured, the checks computed and written, the charts; bad S and T
//! values are usage errors that write nothing.

use std::process::Command;

use crate::common;

use common::{assert_chart, Scratch, Table, BIN};

#[test]
fn lock_hold_measures_lock_time_per_batch_size() {
    let scratch = Scratch::new("ding-lock-hold");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["experiment", "ding-lock-hold", "--records", "20000", "--batch-sizes", "1,8,32"])
        .args(["--thread-counts", "2", "--duration", "0.2", "--warmup", "0", "--repeat", "2"])
        .args(["--mode", "traditional", "--fraction", "25%", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("Fig. 4") && stdout.contains("(paper: "), "{stdout}");
    let t = Table::read(&out.join("ding-lock-hold.csv"));
    assert_eq!(t.rows.len(), 3 * 2, "batch sizes x repetitions");
    let col = |name: &str| t.col(name);
    assert_eq!(t.header.last().map(String::as_str), Some("io"));
    for r in &t.rows {
        let f = |name: &str| r[col(name)].parse::<f64>().unwrap_or_else(|_| panic!("{name} in {r:?}"));
        let b = f("batch_size");
        assert_eq!((f("queue_size"), f("batch_threshold")), (b, b), "S = T = batch size by default");
        assert!(f("lock_ns_per_access") > 0.0, "the lock time is measured: {r:?}");
        assert!(f("lock_ns_per_access") >= f("hold_ns_per_access"), "held is part of the lock time: {r:?}");
        // Evictions take the lock too, so at batch 1 an acquisition may cover less than an access.
        assert!(f("accesses_per_acquisition") > 0.0, "{r:?}");
        // A commit applies at most S queued accesses (plus hits 2Q ignores, never queued).
        assert!(f("accesses_per_acquisition") <= 2.0 * b + 1.0, "{r:?}");
        assert!(f("hits") <= f("fixes") && f("fixes") > 0.0, "{r:?}");
        assert_eq!(r[col("policy")], "bpw-batch-2q");
        assert_eq!(r[col("io")], "page-cache");
    }
    let per_acq = |b: &str| {
        t.rows
            .iter()
            .filter(|r| r[col("batch_size")] == b)
            .map(|r| r[col("accesses_per_acquisition")].parse::<f64>().unwrap())
            .fold(f64::INFINITY, f64::min)
    };
    assert!(per_acq("32") > per_acq("1"), "bigger batches take the lock less often");
    let checks = std::fs::read_to_string(out.join("ding-lock-hold.checks.json")).unwrap();
    for needle in ["lock ns per access, batch 1 / batch 32", "hit ratio over batch sizes 1-32", "\"verdict\""]
    {
        assert!(checks.contains(needle), "{needle} missing from {checks}");
    }
    assert_chart(&out, "ding-lock-hold-time");
    assert_chart(&out, "ding-lock-hold-hit-ratio");
}

/// Bad S and T: exit 2, one line on stderr, and no output directory.
#[test]
fn lock_hold_bad_queue_sizes_are_usage_errors_that_write_nothing() {
    let scratch = Scratch::new("ding-lock-hold-bad");
    for bad in [
        &["--batch-sizes", "0"][..],
        &["--batch-sizes", "1,two"],
        &["--batch-sizes", "8,128", "--queue-size", "64"],
        &["--batch-sizes", "8,64", "--threshold", "16"],
        &["--queue-size", "64", "--threshold", "32"],
        &["--queue-size", "0"],
        &["--threshold", "99999"],
        &["--policy", "locked-2q"],
        &["--threads", "4"],
    ] {
        let out = scratch.0.join("never");
        let o = Command::new(BIN)
            .args(["experiment", "ding-lock-hold", "--records", "1000", "--duration", "0.1"])
            .args(bad)
            .arg("--dir")
            .arg(&scratch.0)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!out.exists(), "{bad:?} wrote {}", out.display());
    }
}

#[test]
fn buffer_sizes_sweeps_the_pool_for_clock_locked_and_wrapped_2q() {
    let scratch = Scratch::new("ding-buffer-sizes");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["experiment", "ding-buffer-sizes", "--records", "20000", "--fractions", "10%,50%"])
        .args(["--thread-counts", "1,2", "--duration", "0.2", "--warmup", "0", "--repeat", "1"])
        .args(["--mode", "traditional", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let t = Table::read(&out.join("ding-buffer-sizes.csv"));
    assert_eq!(t.rows.len(), 2 * 3 * 2, "sizes x policies x thread counts");
    let col = |name: &str| t.col(name);
    let mut points: Vec<(String, String)> =
        t.rows.iter().map(|r| (r[col("pool_fraction")].clone(), r[col("policy")].clone())).collect();
    points.sort_unstable();
    points.dedup();
    assert_eq!(points.len(), 6, "{points:?}");
    for r in &t.rows {
        assert_eq!(r[col("experiment")], "ding-buffer-sizes");
        assert_eq!(r[col("io")], "page-cache");
    }
    // The smaller pool misses more, for every policy.
    for p in ["clock", "locked-2q", "bpw-2q"] {
        let hit = |f: &str| {
            t.rows
                .iter()
                .filter(|r| r[col("policy")] == p && r[col("pool_fraction")] == f)
                .map(|r| r[col("hit_ratio")].parse::<f64>().unwrap())
                .fold(f64::INFINITY, f64::min)
        };
        assert!(hit("0.1") < hit("0.5"), "{p}: hit ratio at 10% {} vs 50% {}", hit("0.1"), hit("0.5"));
    }
    let checks = std::fs::read_to_string(out.join("ding-buffer-sizes.checks.json")).unwrap();
    for needle in [
        "bpw-2q vs locked-2q hit ratio at every pool size",
        "locked-2q / clock lookups/s at the largest pool",
    ] {
        assert!(checks.contains(needle), "{needle} missing from {checks}");
    }
    for stem in ["hit-ratio", "throughput", "threads"] {
        assert_chart(&out, &format!("ding-buffer-sizes-{stem}"));
    }
}
