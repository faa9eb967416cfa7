//! `bench tpcb` end to end: one branch, a short run, a CSV row per measurement; bad input
//! exits with 2, says what is wrong in one line and writes nothing.

use std::process::Command;

use crate::common;

use common::{assert_usage_errors, Scratch, Table, BIN};

#[test]
fn bench_tpcb_one_branch_writes_a_row_per_measurement() {
    let scratch = Scratch::new("tpcb");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "tpcb", "--branches", "1", "--threads", "1,2", "--duration", "0.2", "--repeat", "1"])
        .args(["--modes", "swizzling", "--logging", "off", "--locking", "on,off"])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("tx/s") && stdout.contains("balances agree"), "{stdout}");
    let table = Table::read(&out.join("tpcb.csv"));
    assert_eq!(table.header_line(), swizzledb_lab::workloads::tpcb::CSV_COLUMNS);
    let col = |name: &str| table.col(name);
    let rows: Vec<Vec<&str>> = table.rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect();
    // 2 locking settings x 2 thread counts x 1 repetition.
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r[col("experiment")], "tpcb");
        assert_eq!(r[col("branches")], "1");
        assert_eq!(r[col("accounts_per_branch")], "100000");
        let tx: f64 = r[col("tx_per_sec")].parse().unwrap();
        let total: u64 = r[col("transactions")].parse().unwrap();
        let seconds: f64 = r[col("seconds")].parse().unwrap();
        assert!(tx > 0.0 && total > 0 && (tx * seconds / total as f64 - 1.0).abs() < 0.01, "{r:?}");
        if r[col("locking")] == "off" {
            assert_eq!(r[col("retries")], "0", "{r:?}");
        }
        // Optimistic descents are on unless --optimistic says otherwise.
        assert_eq!(r[col("optimistic")], "on", "{r:?}");
        // No log archive unless --log-archive says otherwise.
        assert_eq!(r[col("log_archive")], "off", "{r:?}");
    }
    scratch.assert_only_out_left();
}

/// Runs `bench tpcb` at the smallest scale (one branch, one thread, 0.2 s, swizzling mode) with
/// `extra` options; returns the table of `tpcb.csv` and the printed output.
fn run_smallest(name: &str, extra: &[&str]) -> (Table, String) {
    let scratch = Scratch::new(name);
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "tpcb", "--branches", "1", "--threads", "1", "--duration", "0.2", "--repeat", "1"])
        .args(["--modes", "swizzling"])
        .args(extra)
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("log archive") && stdout.contains("balances agree"), "{stdout}");
    let table = Table::read(&out.join("tpcb.csv"));
    assert_eq!(table.header_line(), swizzledb_lab::workloads::tpcb::CSV_COLUMNS);
    let last: Vec<&str> = table.header.iter().rev().take(2).map(String::as_str).collect();
    assert_eq!(last, ["cut_short", "io"], "io, then cut_short, end the header");
    assert!(table.rows.iter().all(|r| r[table.col("io")] == "page-cache"));
    let (held, rounds) = (table.col("held_back"), table.col("cleaner_rounds"));
    for row in &table.rows {
        let n = |c: usize| row[c].parse::<u64>().unwrap();
        assert!(n(held) <= n(rounds), "a held-back round is a round: {row:?}");
    }
    for r in &table.rows {
        let tx: f64 = r[table.col("tx_per_sec")].parse().unwrap();
        assert!(tx > 0.0, "{r:?}");
    }
    scratch.assert_only_out_left();
    (table, stdout)
}

/// (logging, log_archive) of every row, sorted.
fn logging_and_archive(table: &Table) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = table
        .rows
        .iter()
        .map(|r| (r[table.col("logging")].clone(), r[table.col("log_archive")].clone()))
        .collect();
    got.sort_unstable();
    got
}

/// `--log-archive on,off` with logging on: one database with the archive and one without, a
/// row each.
#[test]
fn bench_tpcb_measures_the_log_archive_on_and_off() {
    let (table, stdout) = run_smallest(
        "tpcb-archive",
        &["--logging", "on", "--log-archive", "on,off", "--checkpoint-ms", "50"],
    );
    let pair = |l: &str, a: &str| (l.to_string(), a.to_string());
    assert_eq!(logging_and_archive(&table), [pair("on", "off"), pair("on", "on")]);
    assert!(table.rows.iter().all(|r| r[table.col("checkpoint_ms")] == "50"), "{:?}", table.rows);
    assert!(stdout.contains("checkpoints every 50 ms"), "{stdout}");
}

/// `--propagation classical,decoupled-checkpoint,decoupled`: a database each with logging and
/// the archive on, rows naming them, CPU and write bandwidth filled; `decoupled` without the
/// archive is refused.
#[test]
fn bench_tpcb_measures_each_propagation() {
    let (table, stdout) = run_smallest(
        "tpcb-propagation",
        &[
            "--logging",
            "on",
            "--log-archive",
            "on",
            "--propagation",
            "classical,decoupled-checkpoint,decoupled",
            "--checkpoint-ms",
            "50",
            "--cleaner-ms",
            "20",
        ],
    );
    let mut got: Vec<String> = table.rows.iter().map(|r| r[table.col("propagation")].clone()).collect();
    got.sort_unstable();
    assert_eq!(got, ["classical", "decoupled", "decoupled-checkpoint"]);
    for r in &table.rows {
        assert_eq!(r[table.col("cleaner_ms")], "20");
        let cores: f64 = r[table.col("cpu_cores")].parse().unwrap();
        assert!(cores > 0.0, "{r:?}");
    }
    assert!(stdout.contains("every 20 ms"), "{stdout}");
    let scratch = Scratch::new("tpcb-propagation-bad");
    let o = Command::new(BIN)
        .args([
            "bench",
            "tpcb",
            "--branches",
            "1",
            "--log-archive",
            "off",
            "--propagation",
            "decoupled",
            "--dir",
        ])
        .arg(&scratch.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--log-archive on"));
}

/// `--logging on,off --log-archive on,off`: an archive needs a log, so logging off is measured
/// once, as `off`.
#[test]
fn bench_tpcb_logging_off_runs_once_without_an_archive() {
    let (table, _) = run_smallest("tpcb-archive-nolog", &["--logging", "on,off", "--log-archive", "on,off"]);
    let pair = |l: &str, a: &str| (l.to_string(), a.to_string());
    assert_eq!(logging_and_archive(&table), [pair("off", "off"), pair("on", "off"), pair("on", "on")]);
}

/// A value of `--log-archive` other than on and off: exit status 2, the option and the value
/// named, nothing written.
#[test]
fn bench_tpcb_bad_log_archive_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("tpcb-archive-bad");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "tpcb", "--branches", "1", "--log-archive", "maybe", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("--log-archive") && stderr.contains("maybe"), "{stderr}");
    assert!(!out.exists(), "bad input created --out");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "bad input created files");
}

#[test]
fn bench_tpcb_bad_input_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("tpcb-bad");
    let out = scratch.0.join("out");
    let out_arg = out.to_str().unwrap();
    // Bad values the benchmark checks itself: one line naming the option, exit 2; a --log-dir
    // that is missing or a file, exit 3 as any path that cannot be used (README "Exit codes";
    // it failed with exit 1 once the run had begun, then exited 2).
    let missing = scratch.0.join("no-such-dir");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let one_line: [(&[&str], &str, i32); 4] = [
        (&["--pool", "1MiB"], "--pool", 2),
        (&["--pool", "16MiB", "--modes", "main-memory"], "main-memory", 2),
        (&["--log-dir", missing.to_str().unwrap()], "--log-dir", 3),
        (&["--log-dir", file], "--log-dir", 3),
    ];
    for (bad, names, code) in one_line {
        let o = Command::new(BIN)
            .args(["bench", "tpcb"])
            .args(bad)
            .args(["--out", out_arg])
            .arg("--dir")
            .arg(&scratch.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(code), "{bad:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.lines().count(), 1, "{bad:?}: {stderr}");
        assert!(stderr.contains(names), "{bad:?}: {stderr}");
    }
    // Bad syntax clap refuses.
    let bads: [&[&str]; 8] = [
        // The workload's range, 1..=10000, checked by clap.
        &["--branches", "0", "--out", out_arg],
        &["--branches", "10001", "--out", out_arg],
        &["--modes", "paged", "--out", out_arg],
        &["--locking", "maybe", "--out", out_arg],
        &["--optimistic", "maybe", "--out", out_arg],
        &["--log-archive", "on,maybe", "--out", out_arg],
        &["--threads", "0", "--out", out_arg],
        &["--checkpoint-ms", "0", "--out", out_arg],
    ];
    assert_usage_errors(&["bench", "tpcb"], &bads, &scratch.0);
    assert!(!out.exists(), "bad input created --out");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "bad input created files");
}

/// `--log-dir`: each database's log lives in a temporary directory there (its `<file>.wal` a
/// symbolic link to it), named in the CSV, and removed afterwards with the databases.
#[test]
fn bench_tpcb_keeps_the_logs_in_another_directory() {
    let scratch = Scratch::new("tpcb-log-dir");
    let logs = scratch.0.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let logs_arg = logs.to_str().unwrap().to_owned();
    let (table, stdout) = run_smallest(
        "tpcb-log-dir-run",
        &[
            "--logging",
            "on",
            "--log-archive",
            "on",
            "--propagation",
            "classical,decoupled",
            "--log-dir",
            &logs_arg,
        ],
    );
    assert!(stdout.contains("balances agree"), "{stdout}");
    assert_eq!(table.rows.len(), 2, "one row per propagation");
    let col = table.col("log_dir");
    assert!(table.rows.iter().all(|r| r[col] == logs_arg), "{:?}", table.rows);
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 0, "the logs were removed");
}
