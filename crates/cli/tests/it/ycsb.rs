//! `bench ycsb` end to end: a small table, three workloads, a CSV row per measurement; bad
//! input exits with 2, says what is wrong in one line and writes nothing.

use std::process::Command;

use crate::common;

use common::{assert_usage_errors, Scratch, Table, BIN};

#[test]
fn bench_ycsb_writes_a_row_per_workload_and_measurement() {
    let scratch = Scratch::new("ycsb");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "ycsb", "--workload", "a,E,D", "--records", "2000", "--threads", "1,2"])
        .args(["--duration", "0.2", "--repeat", "1", "--modes", "swizzling", "--locking", "on,off"])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("ops/s") && stdout.contains("intact in every database"), "{stdout}");
    let table = Table::read(&out.join("ycsb.csv"));
    assert_eq!(table.header_line(), swizzledb_lab::workloads::ycsb::CSV_COLUMNS);
    let col = |name: &str| table.col(name);
    let rows: Vec<Vec<&str>> = table.rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect();
    // 3 workloads x 2 locking settings x 2 thread counts x 1 repetition.
    assert_eq!(rows.len(), 12);
    let num = |r: &[&str], c: &str| -> u64 { r[col(c)].parse().unwrap() };
    for r in &rows {
        assert_eq!(r[col("experiment")], "ycsb");
        assert_eq!(num(r, "records"), 2000);
        assert_eq!(num(r, "value_bytes"), 1024);
        assert_eq!(r[col("zipf_theta")], "0.99");
        let ops: f64 = r[col("ops_per_sec")].parse().unwrap();
        assert!(ops > 0.0, "{r:?}");
        let kinds = ["read", "update", "insert", "scan", "read_modify_write"].map(|k| num(r, k));
        assert_eq!(kinds.iter().sum::<u64>(), num(r, "operations"), "{r:?}");
        // Which kinds ran is the workload's mix.
        let ran = kinds.map(|n| n > 0);
        match r[col("workload")] {
            "A" => assert_eq!(ran, [true, true, false, false, false], "{r:?}"),
            "E" => assert!(ran[3] && !ran[0] && !ran[1] && !ran[4], "{r:?}"),
            "D" => assert!(ran[0] && !ran[1] && !ran[3] && !ran[4], "{r:?}"),
            other => panic!("workload {other} was not asked for"),
        }
        assert!(num(r, "records_after") >= 2000, "{r:?}");
    }
    // The table only grows, by the inserts, per database.
    for locking in ["on", "off"] {
        let mut records = 2000;
        for r in rows.iter().filter(|r| r[col("locking")] == locking) {
            records += num(r, "insert");
            assert_eq!(num(r, "records_after"), records, "{r:?}");
        }
    }
    scratch.assert_only_out_left();
}

/// SwizzleDB's three modes and LMDB in one interleaved run: a row per engine configuration,
/// workload and thread count, with `optimistic` last, after `engine`, and LMDB's `mode`,
/// `locking`, `pool_bytes` and `optimistic` left as documented.
#[cfg(feature = "lmdb")]
#[test]
fn bench_ycsb_runs_swizzledb_beside_lmdb() {
    let scratch = Scratch::new("ycsb-engines");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "ycsb", "--engine", "swizzledb,lmdb", "--workload", "A,E", "--records", "2000"])
        .args(["--duration", "0.2", "--repeat", "1"])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("SwizzleDB beside LMDB") && stdout.contains("intact in every database"),
        "{stdout}"
    );
    let table = Table::read(&out.join("ycsb.csv"));
    assert_eq!(table.header_line(), swizzledb_lab::workloads::ycsb::CSV_COLUMNS);
    let last: Vec<&str> = table.header.iter().rev().take(3).map(String::as_str).collect();
    assert_eq!(
        last,
        ["cut_short", "optimistic", "engine"],
        "engine, optimistic, then cut_short end the header"
    );
    let col = |name: &str| table.col(name);
    let rows: Vec<Vec<&str>> = table.rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect();
    // (3 SwizzleDB modes + LMDB) x 2 workloads x 2 thread counts.
    assert_eq!(rows.len(), 16);
    let num = |r: &[&str], c: &str| -> u64 { r[col(c)].parse().unwrap() };
    let mut per_engine = std::collections::BTreeMap::new();
    for r in &rows {
        *per_engine.entry(r[col("engine")]).or_insert(0) += 1;
        match r[col("engine")] {
            "swizzledb" => {
                assert!(["traditional", "swizzling", "main-memory"].contains(&r[col("mode")]), "{r:?}");
                assert_eq!(r[col("locking")], "off");
                // Traditional mode always couples latches; the others default to optimistic.
                let optimistic = if r[col("mode")] == "traditional" { "off" } else { "on" };
                assert_eq!(r[col("optimistic")], optimistic, "{r:?}");
                assert!(num(r, "pool_bytes") > 0, "{r:?}");
            }
            "lmdb" => {
                assert_eq!(
                    (r[col("mode")], r[col("locking")], r[col("pool_bytes")], r[col("optimistic")]),
                    ("-", "-", "", "-"),
                    "{r:?}"
                );
                assert_eq!(num(r, "retries"), 0, "{r:?}");
            }
            other => panic!("engine {other}"),
        }
        assert_eq!(r[col("logging")], "off");
        let ops: f64 = r[col("ops_per_sec")].parse().unwrap();
        assert!(ops > 0.0, "{r:?}");
        let kinds = ["read", "update", "insert", "scan", "read_modify_write"].map(|k| num(r, k));
        assert_eq!(kinds.iter().sum::<u64>(), num(r, "operations"), "{r:?}");
        let ran = kinds.map(|n| n > 0);
        match r[col("workload")] {
            "A" => assert_eq!(ran, [true, true, false, false, false], "{r:?}"),
            "E" => assert!(ran[3] && !ran[0] && !ran[1] && !ran[4], "{r:?}"),
            other => panic!("workload {other} was not asked for"),
        }
    }
    assert_eq!(per_engine.into_iter().collect::<Vec<_>>(), [("lmdb", 4), ("swizzledb", 12)]);
    // Each database only grows, by its own inserts: LMDB's rows follow LMDB's inserts.
    for (engine, mode) in [("lmdb", "-"), ("swizzledb", "swizzling")] {
        let mut records = 2000;
        for r in rows.iter().filter(|r| r[col("engine")] == engine && r[col("mode")] == mode) {
            records += num(r, "insert");
            assert_eq!(num(r, "records_after"), records, "{r:?}");
        }
        assert!(records > 2000, "{engine} inserted nothing");
    }
    scratch.assert_only_out_left();
}

#[test]
fn bench_ycsb_bad_input_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("ycsb-bad");
    let out = scratch.0.join("out");
    let out_arg = out.to_str().unwrap();
    // Bad values the benchmark checks itself: one line naming the problem.
    let one_line: [(&[&str], &str); 8] = [
        (&["--engine", "swizzledb,rocksdb"], "\"rocksdb\""),
        (&["--engine", "LMDB,"], "unknown engine \"\""),
        (&["--records", "0"], "--records"),
        (&["--workload", "A,G"], "\"G\""),
        (&["--workload", "AB"], "\"AB\""),
        (&["--pool", "1MiB"], "--pool"),
        (&["--records", "100k", "--pool", "16MiB", "--modes", "main-memory"], "main-memory"),
        (&["--zipf-theta", "1"], "--zipf-theta"),
    ];
    for (bad, names) in one_line {
        let o = Command::new(BIN)
            .args(["bench", "ycsb"])
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
        &["--records", "many", "--out", out_arg],
        &["--logging", "maybe", "--out", out_arg],
        &["--optimistic", "maybe", "--out", out_arg],
        &["--threads", "0", "--out", out_arg],
    ];
    assert_usage_errors(&["bench", "ycsb"], &bads, &scratch.0);
    assert!(!out.exists(), "bad input created --out");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "bad input created files");
}
