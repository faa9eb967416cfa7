//! `bench lookup` and `bench tpcc` with `--engine swizzledb,lmdb`: LMDB measured beside
//! SwizzleDB in one interleaved run, a CSV row per engine configuration and measurement with
//! `engine` last; a bad engine exits 2 and writes nothing.

use std::process::Command;

use crate::common;

#[cfg(feature = "lmdb")]
use common::Table;
use common::{Scratch, BIN};

/// The index of column `name` in `header`.
fn col_of(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// A result CSV: its header and its rows, every row as long as the header.
#[cfg(feature = "lmdb")]
fn read_csv(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let t = Table::read(path);
    (t.header, t.rows)
}

/// SwizzleDB's three modes and LMDB: the same lookups, a row per engine configuration and
/// repetition, LMDB's buffer-pool columns empty, LMDB beside the modes in the table.
#[cfg(feature = "lmdb")]
#[test]
fn bench_lookup_runs_swizzledb_beside_lmdb() {
    let scratch = Scratch::new("lookup-engines");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "lookup", "--engine", "swizzledb,lmdb", "--records", "5000", "--threads", "2"])
        .args(["--duration", "0.2", "--warmup", "0", "--repeat", "2", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("lmdb ")), "no LMDB row in\n{stdout}");
    assert!(
        stdout.contains("swizzling/lmdb = ") && stdout.contains("1,000 lookups per read-only transaction"),
        "{stdout}"
    );
    let (header, rows) = read_csv(&out.join("lookup.csv"));
    // Columns are only ever added at the end (docs/results-schema.md): engine came after logging.
    let at = |name: &str| header.iter().position(|h| h == name);
    assert_eq!(at("engine"), at("logging").map(|i| i + 1), "{header:?}");
    assert!(at("victim_writes").is_some_and(|i| i > at("engine").unwrap()), "{header:?}");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // (3 modes + LMDB) x 2 repetitions.
    assert_eq!(rows.len(), 8, "{rows:?}");
    let mut per_engine = std::collections::BTreeMap::new();
    for r in &rows {
        *per_engine.entry(r[col("engine")].as_str()).or_insert(0) += 1;
        let throughput: f64 = r[col("throughput")].parse().unwrap();
        assert!(throughput > 0.0, "{r:?}");
        assert_eq!((r[col("records")].as_str(), r[col("threads")].as_str()), ("5000", "2"), "{r:?}");
        assert_eq!(r[col("logging")], "false");
        match r[col("engine")].as_str() {
            "swizzledb" => {
                assert!(["traditional", "swizzling", "main-memory"].contains(&r[col("mode")].as_str()));
                assert_eq!(r[col("hit_ratio")], "1.0", "{r:?}");
                assert!(r[col("pool_bytes")].parse::<u64>().unwrap() > 0, "{r:?}");
            }
            "lmdb" => {
                let empty =
                    ["pool_bytes", "hit_ratio", "page_table_lookups_per_op"].map(|c| r[col(c)].as_str());
                assert_eq!(empty, ["", "", ""], "{r:?}");
                assert_eq!((r[col("mode")].as_str(), r[col("policy")].as_str()), ("-", "-"), "{r:?}");
                assert_eq!(r[col("swizzles")], "0");
                assert!(r[col("memory_bytes")].parse::<u64>().unwrap() >= 5000 * 128, "{r:?}");
                assert!(r[col("p50_ns")].parse::<u64>().unwrap() > 0, "{r:?}");
            }
            other => panic!("engine {other}"),
        }
    }
    assert_eq!(per_engine.into_iter().collect::<Vec<_>>(), [("lmdb", 2), ("swizzledb", 6)]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("lookup.json")).unwrap()).unwrap();
    let engines: Vec<&str> =
        json["rows"].as_array().unwrap().iter().map(|r| r["engine"].as_str().unwrap()).collect();
    assert_eq!(engines.iter().filter(|e| **e == "lmdb").count(), 2, "{engines:?}");
    scratch.assert_only_out_left();
}

/// A sweep measures LMDB at every point too, and draws it beside the modes.
#[cfg(feature = "lmdb")]
#[test]
fn bench_lookup_sweeps_lmdb_too() {
    let scratch = Scratch::new("lookup-engines-sweep");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "lookup", "--engine", "lmdb,swizzledb", "--sweep", "records=256KiB,512KiB"])
        .args(["--mode", "swizzling", "--duration", "0.1", "--warmup", "0", "--repeat", "1", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (header, rows) = read_csv(&out.join("lookup.csv"));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut seen: Vec<(String, String)> =
        rows.iter().map(|r| (r[col("records")].clone(), r[col("engine")].clone())).collect();
    seen.sort();
    let want = [("2048", "lmdb"), ("2048", "swizzledb"), ("4096", "lmdb"), ("4096", "swizzledb")];
    assert_eq!(seen, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let svg = std::fs::read_to_string(out.join("lookup.svg")).unwrap();
    assert!(svg.contains("lmdb") && svg.contains("swizzling"), "both series in the chart");
    scratch.assert_only_out_left();
}

/// TPC-C on SwizzleDB and LMDB in one run: a row per engine configuration and thread count,
/// LMDB's mode, locking, pool and optimistic descents empty or `-`, both databases consistent.
#[cfg(feature = "lmdb")]
#[test]
fn bench_tpcc_runs_swizzledb_beside_lmdb() {
    let scratch = Scratch::new("tpcc-engines");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["bench", "tpcc", "--engine", "swizzledb,lmdb", "--warehouses", "1", "--threads", "1,2"])
        .args(["--items", "2000", "--customers", "300"])
        .args(["--duration", "0.2", "--repeat", "1", "--modes", "swizzling", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("SwizzleDB beside LMDB") && stdout.contains("conditions 1-4 hold in every database"),
        "{stdout}"
    );
    let (header, rows) = read_csv(&out.join("tpcc.csv"));
    assert_eq!(header.join(","), swizzledb_lab::workloads::tpcc::CSV_COLUMNS);
    let last: Vec<&str> = header.iter().rev().take(10).map(String::as_str).collect();
    assert_eq!(
        last,
        [
            "line_ns",
            "stock_level_reads",
            "committed_reads",
            "cpu_seconds",
            "cut_short",
            "lock_waits",
            "lock_requests",
            "io",
            "optimistic",
            "engine"
        ],
        "engine, optimistic, io, the lock counts, cut_short, cpu_seconds, committed_reads, \
         stock_level_reads, then line_ns end the header"
    );
    assert!(
        rows.iter().all(|r| r[col_of(&header, "cut_short")] == "no"),
        "no LMDB or swizzling run is cut short"
    );
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // (swizzling + LMDB) x 2 thread counts.
    assert_eq!(rows.len(), 4, "{rows:?}");
    let num = |r: &[String], c: &str| -> u64 { r[col(c)].parse().unwrap() };
    let mut engines: Vec<(&str, &str)> =
        rows.iter().map(|r| (r[col("engine")].as_str(), r[col("threads")].as_str())).collect();
    engines.sort_unstable();
    assert_eq!(engines, [("lmdb", "1"), ("lmdb", "2"), ("swizzledb", "1"), ("swizzledb", "2")]);
    for r in &rows {
        let tx: f64 = r[col("tx_per_sec")].parse().unwrap();
        assert!(tx > 0.0 && num(r, "new_order") > 0 && num(r, "new_order") < num(r, "transactions"), "{r:?}");
        let kinds = ["new_order", "payment", "order_status", "delivery", "stock_level"].map(|k| num(r, k));
        assert_eq!(kinds.iter().sum::<u64>(), num(r, "transactions"), "{r:?}");
        assert_eq!(r[col("logging")], "off");
        if r[col("engine")] == "lmdb" {
            let cells =
                ["mode", "locking", "pool_bytes", "optimistic", "lock_requests"].map(|c| r[col(c)].as_str());
            assert_eq!(cells, ["-", "-", "", "-", ""], "{r:?}");
            assert_eq!(num(r, "retries"), 0, "{r:?}");
        } else {
            let cells = ["mode", "locking", "optimistic"].map(|c| r[col(c)].as_str());
            assert_eq!(cells, ["swizzling", "off", "on"], "{r:?}");
            assert!(num(r, "pool_bytes") > 0, "{r:?}");
        }
    }
    scratch.assert_only_out_left();
}

/// An unknown engine is one line on stderr naming it, exit status 2, and nothing written.
#[test]
fn unknown_engine_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("engines-bad");
    let out = scratch.0.join("out");
    for command in [&["bench", "lookup", "--records", "1000"][..], &["bench", "tpcc", "--warehouses", "1"]] {
        for engine in ["rocksdb", "swizzledb,rocksdb", "lmdb,"] {
            let o = Command::new(BIN)
                .args(command)
                .args(["--engine", engine, "--out"])
                .arg(&out)
                .arg("--dir")
                .arg(&scratch.0)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{command:?} {engine}");
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(stderr.lines().count(), 1, "{command:?} {engine}: {stderr}");
            assert!(stderr.contains("unknown engine"), "{command:?} {engine}: {stderr}");
        }
    }
    assert!(!out.exists(), "bad input created --out");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "bad input created files");
}

/// `--lmdb-reads-per-txn 1` begins a read-only transaction per lookup, and the table says so;
/// 0 is refused with exit 2 before anything runs.
#[cfg(feature = "lmdb")]
#[test]
fn lmdb_reads_per_txn_sets_the_lookups_each_read_transaction_serves() {
    let scratch = Scratch::new("lookup-reads-per-txn");
    let run = |n: &str| {
        Command::new(BIN)
            .args(["bench", "lookup", "--engine", "lmdb", "--records", "2000", "--threads", "1"])
            .args(["--duration", "0.1", "--warmup", "0", "--repeat", "1", "--lmdb-reads-per-txn", n, "--dir"])
            .arg(&scratch.0)
            .output()
            .unwrap()
    };
    let o = run("1");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("one lookup per read-only transaction"), "{stdout}");
    let refused = run("0");
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
}
