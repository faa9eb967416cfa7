//! `bench scan` end to end at a tiny scale: its table, `scan.csv` with the documented columns,
//! and rows of every buffer mode that scanned at a positive rate.

use std::process::Command;

use crate::common;

use common::{assert_usage_errors, Scratch, Table, BIN};

/// Every mode measured in every repetition, each row scanning records at a positive rate, as
/// many records per scan as asked; nothing left behind but the results.
#[test]
fn bench_scan_tiny_writes_a_row_per_mode_and_repetition() {
    let scratch = Scratch::new("scan");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "scan", "--records", "5000", "--length", "50", "--duration", "0.1"])
        .args(["--warmup", "0", "--repeat", "2", "--threads", "2"])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("records/s") && stdout.contains("scans/s"), "{stdout}");
    let t = Table::read(&out.join("scan.csv"));
    assert_eq!(
        t.header_line(),
        "experiment,mode,threads,records,scan_length,pool_bytes,repetition,duration_s,scans_per_sec,\
records_per_sec,hit_ratio,pages_read,logging,io"
    );
    assert_eq!(t.rows.len(), 3 * 2, "three modes, two repetitions: {:?}", t.rows);
    let (mode, length, scans, records) =
        (t.col("mode"), t.col("scan_length"), t.col("scans_per_sec"), t.col("records_per_sec"));
    for m in ["traditional", "swizzling", "main-memory"] {
        let rows: Vec<&Vec<String>> = t.rows.iter().filter(|r| r[mode] == m).collect();
        assert_eq!(rows.len(), 2, "{m}: {:?}", t.rows);
        for r in rows {
            let (s, n): (f64, f64) = (r[scans].parse().unwrap(), r[records].parse().unwrap());
            assert!(s > 0.0 && n > 0.0, "{r:?}");
            assert_eq!(r[length], "50");
            // Every scan returns the whole length: records per second are 50 times the scans'.
            assert!((n / s - 50.0).abs() < 1e-6, "{r:?}");
            assert_eq!(r[t.col("logging")], "false");
        }
    }
    assert!(out.join("scan.json").exists() && out.join("scan.env.json").exists());
    scratch.assert_only_out_left();
}

/// A scan longer than the data, or of no records, is a usage error that writes nothing.
#[test]
fn bench_scan_bad_input_exits_2() {
    let scratch = Scratch::new("scan-bad");
    assert_usage_errors(
        &["bench", "scan", "--records", "100"],
        &[&["--length", "101"], &["--length", "0"], &["--records", "0"]],
        &scratch.0,
    );
    let left: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().collect();
    assert!(left.is_empty(), "bad input wrote {left:?}");
}
