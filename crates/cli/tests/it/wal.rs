//! `swizzledb bench wal` end to end at a tiny scale: the four parts run, the CSV has a row per
//! measurement with the documented columns, the plots are written, and the numbers obey what must
//! hold on any machine (no timing targets: those are printed checks, not assertions).

use std::collections::HashMap;
use std::process::Command;

use crate::common;

use common::{assert_chart, assert_usage_errors, Scratch, BIN};

/// The CSV rows as maps from column name to value; every row is as long as the header.
fn read_rows(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header.iter().cloned().zip(fields.iter().map(|f| f.to_string())).collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} = {:?} in {row:?}", row[column]))
}

/// The log-size part's options of the tests: a 1 MiB bound of 16 KiB segments, 10 keys.
const LOG_SIZE_OPTIONS: [&str; 8] =
    ["--max-log", "1MiB", "--log-segment", "16KiB", "--keys", "10", "--sample-every", "500"];

#[test]
fn wal_bench_tiny_writes_rows_checks_and_plots() {
    let scratch = Scratch::new("wal-bench");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["bench", "wal", "--records", "300", "--batch", "1,4", "--threads", "1,2"])
        .args(["--duration", "0.2", "--time-limit", "120", "--log-sizes", "256KiB,512KiB,1MiB"])
        .args(["--run-times", "0.2,0.4", "--updates", "3000"])
        .args(LOG_SIZE_OPTIONS)
        .args(["--repeat", "1", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    for needle in [
        "1. overhead",
        "2. group commit",
        "3. restart",
        "4. log size",
        "checks:",
        "commits per fsync",
        "nolog-nolock",
        "auto-sync",
        "auto-async",
    ] {
        assert!(stdout.contains(needle), "{needle} missing from\n{stdout}");
    }
    let rows = read_rows(&out.join("wal.csv"));
    let part = |p: &str| rows.iter().filter(|r| r["part"] == p).collect::<Vec<_>>();

    // Overhead: 4 batched configurations x 2 thread counts x 2 batch sizes and the 2 auto-commit
    // ones x 2 thread counts (batch 1), every insert done (the time limit is far away), one commit
    // per batch, log bytes only with logging, and at least the value's 100 bytes per logged insert.
    let overhead = part("overhead");
    assert_eq!(overhead.len(), 4 * 2 * 2 + 2 * 2, "{overhead:?}");
    for r in &overhead {
        assert_eq!(r["capped"], "false", "{r:?}");
        assert_eq!(num(r, "inserts"), 300.0, "{r:?}");
        assert_eq!(num(r, "commits"), (300.0 / num(r, "batch")).ceil(), "{r:?}");
        if r["config"].starts_with("auto-") {
            assert_eq!(r["batch"], "1", "{r:?}");
            assert_eq!(r["logging"], "true", "{r:?}");
            assert_eq!(r["commit_mode"], &r["config"]["auto-".len()..], "{r:?}");
        }
        // Logged databases run the engine's default cleaner and bound; unlogged ones have none.
        if r["logging"] == "true" {
            assert_eq!(
                (r["cleaner"].as_str(), num(r, "max_log_bytes")),
                ("classical", swizzledb::DEFAULT_MAX_LOG_BYTES as f64),
                "{r:?}"
            );
        } else {
            assert_eq!((r["cleaner"].as_str(), r["max_log_bytes"].as_str()), ("", ""), "{r:?}");
        }
        assert!(num(r, "inserts_per_sec") > 0.0 && num(r, "duration_s") > 0.0, "{r:?}");
        if r["logging"] == "true" {
            assert!(num(r, "log_bytes_per_insert") >= 100.0, "{r:?}");
            assert!(["sync", "async"].contains(&r["commit_mode"].as_str()), "{r:?}");
        } else {
            assert_eq!(num(r, "log_bytes"), 0.0, "{r:?}");
            assert_eq!(r["commit_mode"], "", "{r:?}");
        }
        assert_eq!(r["locking"], (r["config"] != "nolog-nolock").to_string(), "{r:?}");
        // Synchronous commit asks for a flush at every commit.
        if r["commit_mode"] == "sync" {
            assert!(num(r, "flush_requests") >= num(r, "commits"), "{r:?}");
        }
    }

    // Group commit: every commit asked for a flush; at least one sync round served them.
    let group = part("group-commit");
    assert_eq!(group.len(), 2, "{group:?}");
    for r in &group {
        assert!(num(r, "commits") > 0.0 && num(r, "commits_per_sec") > 0.0, "{r:?}");
        assert!(num(r, "flush_requests") >= num(r, "commits"), "{r:?}");
        assert!(num(r, "fsyncs") + num(r, "background_fsyncs") >= 1.0, "{r:?}");
        assert!(num(r, "commits_per_fsync") > 0.0, "{r:?}");
    }

    // Restart, --log-sizes (no cleaner): the writer wrote at least the target after the
    // checkpoint, committed everything it wrote (no losers), and restart redid records; the
    // writer is deterministic, so a larger target extends the same log and restart analyzes more
    // records.
    let (mut restart, timed): (Vec<_>, Vec<_>) =
        part("restart").into_iter().partition(|r| !r["log_target_bytes"].is_empty());
    assert_eq!(restart.len(), 3, "{restart:?}");
    assert!(restart.iter().all(|r| r["cleaner"] == "none" && r["writer_target_s"].is_empty()), "{restart:?}");
    restart.sort_by(|a, b| num(a, "log_target_bytes").total_cmp(&num(b, "log_target_bytes")));
    for r in &restart {
        assert!(num(r, "log_bytes") >= num(r, "log_target_bytes"), "{r:?}");
        assert!(num(r, "restart_s") > 0.0, "{r:?}");
        assert!(num(r, "redone") > 0.0 && num(r, "redone") <= num(r, "analyzed"), "{r:?}");
        assert_eq!(num(r, "losers"), 0.0, "{r:?}");
        assert_eq!(num(r, "compensations"), 0.0, "{r:?}");
    }
    for w in restart.windows(2) {
        assert!(num(w[1], "analyzed") > num(w[0], "analyzed"), "{:?} then {:?}", w[0], w[1]);
    }

    // Restart, --run-times: each run time with the cleaner on (at the bound) and off; the writer
    // ran at least as long as asked, nothing was rolled back; without the cleaner nothing of the
    // writer's log was truncated.
    assert_eq!(timed.len(), 2 * 2, "{timed:?}");
    for r in &timed {
        assert!(num(r, "writer_s") >= num(r, "writer_target_s"), "{r:?}");
        assert!([0.2, 0.4].contains(&num(r, "writer_target_s")), "{r:?}");
        assert!(num(r, "restart_s") > 0.0 && num(r, "analyzed") > 0.0, "{r:?}");
        assert_eq!(num(r, "losers"), 0.0, "{r:?}");
        assert_eq!(num(r, "log_segment_bytes"), 16384.0, "{r:?}");
        match r["cleaner"].as_str() {
            "classical" => assert_eq!(num(r, "max_log_bytes"), 1048576.0, "{r:?}"),
            "none" => {
                assert_eq!(r["max_log_bytes"], "", "{r:?}");
                assert_eq!(num(r, "cleaner_rounds"), 0.0, "{r:?}");
                assert!(num(r, "log_kept_bytes") >= num(r, "log_bytes"), "{r:?}");
            }
            other => panic!("cleaner {other:?} in {r:?}"),
        }
    }

    // Log size: a sample per 500 updates and one before, per cleaner.
    let log_size = part("log-size");
    assert_eq!(log_size.len(), 2 * (3000 / 500 + 1), "{log_size:?}");
    assert!(log_size.iter().all(|r| r["config"] == "auto-async" && num(r, "keys") == 10.0), "{log_size:?}");

    for stem in [
        "wal-overhead-b1",
        "wal-overhead-b4",
        "wal-group-commit",
        "wal-group-commit-throughput",
        "wal-restart",
        "wal-restart-bounded",
        "wal-log-size",
        "wal-log-size-cleaner",
    ] {
        assert_chart(&out, stem);
    }
    // Only the results directory is left: the scratch databases are removed.
    let left: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("results")]);
}

#[test]
fn wal_bench_bad_input_exits_2() {
    let scratch = Scratch::new("wal-bench-bad");
    let bads: [&[&str]; 11] = [
        &["--parts", "overhead,fast"],
        &["--configs", "nolog-lock,log-fast"],
        &["--configs", ""],
        &["--log-sizes", "1KiB"],
        &["--batch", "0"],
        &["--threads", "0"],
        &["--run-times", "0"],
        &["--log-segment", "1000"],
        &["--parts", "log-size", "--max-log", "32KiB", "--log-segment", "16KiB"],
        &["--parts", "restart", "--log-sizes", "none", "--run-times", "none"],
        &["--updates", "0"],
    ];
    assert_usage_errors(&["bench", "wal"], &bads, &scratch.0);
}

/// The log-size part loads every one of `--keys` into its 64 MiB pool before it updates them:
/// `--keys 18446744073709551615` inserted for ever, writing the overflow to `--dir`. `--keys`
/// is now 1 to 300000 (their records fit the pool, as the part's caption says), and a refused
/// value writes nothing.
#[test]
fn wal_bench_keys_beyond_the_pool_are_a_usage_error() {
    let scratch = Scratch::new("wal-bench-keys");
    let dir = scratch.0.join("made");
    for keys in ["300001", "18446744073709551615"] {
        let out = common::output_within_a_minute(
            Command::new(BIN)
                .args([
                    "bench",
                    "wal",
                    "--parts",
                    "log-size",
                    "--updates",
                    "10",
                    "--repeat",
                    "1",
                    "--keys",
                    keys,
                ])
                .arg("--dir")
                .arg(&dir),
        )
        .unwrap_or_else(|| panic!("--keys {keys} was still loading after a minute"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--keys {keys}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{keys}' for '--keys <KEYS>': --keys {keys} is out of range: give 1 to 300000"
            )),
            "{stderr}"
        );
        assert!(!dir.exists(), "--keys {keys} left {}", dir.display());
    }
}

#[test]
fn wal_bench_one_part_runs_only_that_part() {
    let scratch = Scratch::new("wal-bench-one");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args([
            "bench",
            "wal",
            "--parts",
            "group-commit",
            "--threads",
            "3",
            "--duration",
            "0.1",
            "--repeat",
            "2",
        ])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = read_rows(&out.join("wal.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["part"] == "group-commit" && r["threads"] == "3"), "{rows:?}");
    let reps: Vec<&str> = rows.iter().map(|r| r["repetition"].as_str()).collect();
    assert_eq!(reps, ["0", "1"]);
    assert!(!out.join("wal-restart.svg").exists() && !out.join("wal-overhead-b1.svg").exists());
}

/// `--configs` runs the overhead part's chosen configurations alone, and every other repetition
/// runs them in the opposite order.
#[test]
fn wal_bench_configs_run_alone_and_alternate_their_order() {
    let scratch = Scratch::new("wal-bench-configs");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["bench", "wal", "--parts", "overhead", "--configs", "nolog-lock,nolog-nolock"])
        .args(["--records", "200", "--batch", "1", "--threads", "1", "--repeat", "3", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("nolog-lock") && !stdout.contains("log-async") && !stdout.contains("auto-"),
        "{stdout}"
    );
    let rows = read_rows(&out.join("wal.csv"));
    let order: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["repetition"].as_str(), r["config"].as_str())).collect();
    assert_eq!(
        order,
        [
            ("0", "nolog-nolock"),
            ("0", "nolog-lock"),
            ("1", "nolog-lock"),
            ("1", "nolog-nolock"),
            ("2", "nolog-nolock"),
            ("2", "nolog-lock"),
        ]
    );
    assert!(rows.iter().all(|r| num(r, "inserts") == 200.0), "{rows:?}");
}

/// The log-size part alone: with the cleaner the log kept stays within its bound (plus one
/// update's records, which the cleaner cannot hold back) while many times the bound is written;
/// without it, the log keeps everything and grows with every sample.
#[test]
fn wal_bench_log_size_tiny_bounds_the_log_with_the_cleaner() {
    let scratch = Scratch::new("wal-log-size");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["bench", "wal", "--parts", "log-size", "--updates", "20000", "--repeat", "1"])
        .args(LOG_SIZE_OPTIONS)
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("4. log size") && stdout.contains("log stayed below its bound"), "{stdout}");
    let rows = read_rows(&out.join("wal.csv"));
    assert!(rows.iter().all(|r| r["part"] == "log-size"), "{rows:?}");
    let by = |cleaner: &str| rows.iter().filter(|r| r["cleaner"] == cleaner).collect::<Vec<_>>();
    let (with, without) = (by("classical"), by("none"));
    assert_eq!((with.len(), without.len()), (41, 41), "{rows:?}");
    let bound = 1048576.0;
    for run in [&with, &without] {
        let updates: Vec<f64> = run.iter().map(|r| num(r, "updates")).collect();
        assert_eq!(updates, (0..=40).map(|i| f64::from(i) * 500.0).collect::<Vec<_>>());
        for r in run.iter() {
            assert_eq!(num(r, "commits"), num(r, "updates"), "{r:?}");
            assert_eq!((r["commit_mode"].as_str(), num(r, "log_segment_bytes")), ("async", 16384.0), "{r:?}");
        }
    }
    let last = |run: &[&HashMap<String, String>], column: &str| num(run[run.len() - 1], column);
    // With the cleaner: rounds ran, several bounds' worth of log was written, and the log kept
    // never passed the bound by more than one update (a record and a page image).
    assert_eq!(num(with[0], "max_log_bytes"), bound);
    assert!(last(&with, "cleaner_rounds") > 0.0 && last(&with, "log_bytes") > 3.0 * bound, "{with:?}");
    for r in &with {
        assert!(num(r, "log_kept_bytes") <= bound + 16384.0, "{r:?}");
    }
    // Without: no bound, no rounds, and the log kept grows from sample to sample.
    assert_eq!(without[0]["max_log_bytes"], "");
    assert_eq!(last(&without, "cleaner_rounds"), 0.0);
    for w in without.windows(2) {
        assert!(num(w[1], "log_kept_bytes") > num(w[0], "log_kept_bytes"), "{:?} then {:?}", w[0], w[1]);
    }
    assert!(last(&without, "log_kept_bytes") > 3.0 * bound, "{without:?}");
    for stem in ["wal-log-size", "wal-log-size-cleaner"] {
        assert_chart(&out, stem);
    }
}
