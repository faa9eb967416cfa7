//! `swizzledb bench wal` end to end at a tiny scale: the three parts run, the CSV has a row per
//! measurement with the documented columns, the plots are written, and the numbers obey what must
//! hold on any machine (no timing targets: those are printed checks, not assertions).

use std::collections::HashMap;
use std::process::Command;

mod common;

use common::{assert_usage_errors, Scratch, BIN};

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

fn assert_plot(dir: &std::path::Path, stem: &str) {
    let png = std::fs::read(dir.join(format!("{stem}.png"))).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png is not a PNG");
    let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{stem}.svg is not an SVG document");
}

#[test]
fn wal_bench_tiny_writes_rows_checks_and_plots() {
    let scratch = Scratch::new("wal-bench");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["bench", "wal", "--records", "300", "--batch", "1,4", "--threads", "1,2"])
        .args(["--duration", "0.2", "--time-limit", "120", "--log-sizes", "256KiB,512KiB,1MiB"])
        .args(["--repeat", "1", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    for needle in
        ["1. overhead", "2. group commit", "3. restart", "checks:", "commits per fsync", "nolog-nolock"]
    {
        assert!(stdout.contains(needle), "{needle} missing from\n{stdout}");
    }
    let rows = read_rows(&out.join("wal-bench.csv"));
    let part = |p: &str| rows.iter().filter(|r| r["part"] == p).collect::<Vec<_>>();

    // Overhead: 4 configurations x 2 thread counts x 2 batch sizes, every insert done (the time
    // limit is far away), one commit per batch, log bytes only with logging, and at least the
    // value's 100 bytes per logged insert.
    let overhead = part("overhead");
    assert_eq!(overhead.len(), 4 * 2 * 2, "{overhead:?}");
    for r in &overhead {
        assert_eq!(r["capped"], "false", "{r:?}");
        assert_eq!(num(r, "inserts"), 300.0, "{r:?}");
        assert_eq!(num(r, "commits"), (300.0 / num(r, "batch")).ceil(), "{r:?}");
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

    // Restart: the writer wrote at least the target after the checkpoint, committed everything
    // it wrote (no losers), and restart redid records; the writer is deterministic, so a larger
    // target extends the same log and restart analyzes more records.
    let mut restart = part("restart");
    assert_eq!(restart.len(), 3, "{restart:?}");
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

    for stem in [
        "wal-bench-overhead-b1",
        "wal-bench-overhead-b4",
        "wal-bench-group-commit",
        "wal-bench-group-commit-throughput",
        "wal-bench-restart",
    ] {
        assert_plot(&out, stem);
    }
    // Only the results directory is left: the scratch databases are removed.
    let left: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("results")]);
}

#[test]
fn wal_bench_bad_input_exits_2() {
    let scratch = Scratch::new("wal-bench-bad");
    let bads: [&[&str]; 4] =
        [&["--parts", "overhead,fast"], &["--log-sizes", "1KiB"], &["--batch", "0"], &["--threads", "0"]];
    assert_usage_errors(&["bench", "wal"], &bads, &scratch.0);
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
    let rows = read_rows(&out.join("wal-bench.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["part"] == "group-commit" && r["threads"] == "3"), "{rows:?}");
    let reps: Vec<&str> = rows.iter().map(|r| r["repetition"].as_str()).collect();
    assert_eq!(reps, ["0", "1"]);
    assert!(!out.join("wal-bench-restart.svg").exists() && !out.join("wal-bench-overhead-b1.svg").exists());
}
