//! `bench tpcb` end to end: one branch, a short run, a CSV row per measurement; bad input
//! exits with 2, says what is wrong in one line and writes nothing.

use std::process::Command;

mod common;

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
    assert_eq!(table.header_line(), swizzledb_lab::tpcb::CSV_COLUMNS);
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
    }
    scratch.assert_only_out_left();
}

#[test]
fn bench_tpcb_bad_input_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("tpcb-bad");
    let out = scratch.0.join("out");
    let out_arg = out.to_str().unwrap();
    // Bad values the benchmark checks itself: one line naming the option.
    let one_line: [(&[&str], &str); 3] = [
        (&["--branches", "0"], "--branches"),
        (&["--pool", "1MiB"], "--pool"),
        (&["--pool", "16MiB", "--modes", "main-memory"], "main-memory"),
    ];
    for (bad, names) in one_line {
        let o = Command::new(BIN)
            .args(["bench", "tpcb"])
            .args(bad)
            .args(["--out", out_arg])
            .arg("--dir")
            .arg(&scratch.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.lines().count(), 1, "{bad:?}: {stderr}");
        assert!(stderr.contains(names), "{bad:?}: {stderr}");
    }
    // Bad syntax clap refuses.
    let bads: [&[&str]; 4] = [
        &["--modes", "paged", "--out", out_arg],
        &["--locking", "maybe", "--out", out_arg],
        &["--optimistic", "maybe", "--out", out_arg],
        &["--threads", "0", "--out", out_arg],
    ];
    assert_usage_errors(&["bench", "tpcb"], &bads, &scratch.0);
    assert!(!out.exists(), "bad input created --out");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "bad input created files");
}
