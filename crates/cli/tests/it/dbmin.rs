//! `swizzledb sim dbmin` end to end: a quick run of one mix writes one CSV row per
//! configuration with sane values, one plot per figure, the tables and the check lines; bad
//! input is a usage error (exit 2) before anything is written.

use std::process::{Command, Output};

use crate::common;

use common::{Scratch, BIN};

fn dbmin(extra: &[&str]) -> Output {
    Command::new(BIN).args(["sim", "dbmin"]).args(extra).output().unwrap()
}

#[test]
fn quick_run_of_one_mix_writes_rows_plots_and_checks() {
    let scratch = Scratch::new("dbmin");
    let out_dir = scratch.0.to_str().unwrap();
    let out = dbmin(&["--quick", "--mixes", "m3", "--figures", "2,5", "--jobs", "2", "--out", out_dir]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    // Rows: Fig. 2 has 6 algorithms at NCQ 1,4,8,16; Fig. 5 adds RAND, FIFO and CLOCK with load
    // control (its DBMIN, HOT and WS lines are Fig. 2's runs, not repeated).
    let text = std::fs::read_to_string(scratch.0.join("chou-dbmin.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 6 * 4 + 3 * 4, "{text}");
    let mut seen = std::collections::BTreeSet::new();
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert_eq!(r[col("mix")], "M3");
        assert_eq!(r[col("sharing")], "none");
        assert_eq!(r[col("buffers")], "60");
        let tp: f64 = r[col("throughput")].parse().unwrap();
        let ci: f64 = r[col("ci_halfwidth")].parse().unwrap();
        let util: f64 = r[col("disk_utilization")].parse().unwrap();
        assert!(tp > 0.0 && tp < 10.0, "throughput {tp} in {r:?}");
        assert!(ci >= 0.0 && ci.is_finite(), "{r:?}");
        assert!((0.0..=1.0).contains(&util), "{r:?}");
        let lc = r[col("load_control")] == "true";
        let global = ["rand", "fifo", "clock"].contains(&r[col("algorithm")]);
        assert!(!lc || global, "load control only on the simple algorithms: {r:?}");
        let figures = r[col("figures")];
        let expected = match (lc, global) {
            (true, _) => "5",
            (false, true) => "2",
            (false, false) => "2;5",
        };
        assert_eq!(figures, expected, "{r:?}");
        assert!(seen.insert((r[col("algorithm")], lc, r[col("ncq")])), "duplicate {r:?}");
        assert_eq!(r[col("final_batch_queries")], r[col("batch_queries")], "--quick never lengthens");
    }
    // With one query at a time, sharing and load control change nothing for a query alone, so
    // every algorithm runs the same queries in the same order: DBMIN (the QLSM's minimum
    // faults) is at least as fast as the simple global algorithms at NCQ 1.
    let at = |alg: &str, lc: &str, ncq: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[col("algorithm")] == alg && r[col("load_control")] == lc && r[col("ncq")] == ncq)
            .unwrap();
        r[col("throughput")].parse().unwrap()
    };
    for alg in ["rand", "fifo"] {
        assert!(at("dbmin", "false", "1") >= at(alg, "false", "1"), "dbmin vs {alg} at NCQ 1");
    }

    for stem in ["chou-dbmin-fig2-m3", "chou-dbmin-fig5-m3"] {
        for ext in ["svg", "png"] {
            let path = scratch.0.join(format!("{stem}.{ext}"));
            assert!(std::fs::metadata(&path).map(|m| m.len() > 0).unwrap_or(false), "{}", path.display());
        }
    }
    assert!(!scratch.0.join("chou-dbmin-fig3-m3.svg").exists(), "figure 3 was not asked for");
    let svg = std::fs::read_to_string(scratch.0.join("chou-dbmin-fig2-m3.svg")).unwrap();
    assert!(svg.contains("bars: 95% CI") && !svg.contains("min\u{2013}max"), "the legend names the CIs");

    for needle in [
        "Fig. 2 (no sharing), M3, 60 buffers",
        "Fig. 5 (feedback load control, no sharing), M3, 60 buffers",
        "clock+lc",
        "Fig. 2, M3, no sharing: DBMIN above HOT",
        "Fig. 2, M3, no sharing: DBMIN above WS",
        "CLOCK thrashes without load control",
        "Fig. 5, M3: CLOCK with load control against HOT",
        "wall time of the grid:",
    ] {
        assert!(stdout.contains(needle), "{needle:?} missing from\n{stdout}");
    }
    // One check per claim and algorithm, printed with its mark and in chou-dbmin.checks.json.
    let marked = stdout.lines().filter(|l| [" ✓", " ✗", " ~"].iter().any(|m| l.contains(m))).count();
    assert_eq!(marked, 2 + 3 + 1 + 3, "one verdict per claim and algorithm:\n{stdout}");
    let json = std::fs::read_to_string(scratch.0.join("chou-dbmin.checks.json")).unwrap();
    let checks: serde_json::Value = serde_json::from_str(&json).unwrap();
    let checks = checks["rows"].as_array().expect("the checks, as rows");
    assert_eq!(checks.len(), marked, "{json}");
    for c in checks {
        assert!(["holds", "partial", "fails"].contains(&c["verdict"].as_str().unwrap()), "{c}");
        assert!(!c["paper"].as_str().unwrap().is_empty() && !c["ours"].as_str().unwrap().is_empty(), "{c}");
    }
}

/// DS15: with --max-doublings 1 a run whose half-width exceeds 5% of its throughput measures
/// batches of twice the configured size; a run left at the configured size is within 5%.
#[test]
fn wide_intervals_lengthen_the_batches() {
    let scratch = Scratch::new("dbmin-lengthen");
    let out_dir = scratch.0.to_str().unwrap();
    let args =
        ["--quick", "--max-doublings", "1", "--mixes", "m3", "--figures", "2", "--algorithms", "ws,fifo"];
    let out = dbmin(&[&args[..], &["--ncq", "4,8", "--jobs", "2", "--out", out_dir]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(scratch.0.join("chou-dbmin.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"));
    let mut lengthened = 0;
    for line in lines {
        let r: Vec<&str> = line.split(',').collect();
        let (configured, measured) = (r[col("batch_queries")], r[col("final_batch_queries")]);
        assert_eq!(configured, "10", "{r:?}");
        match measured {
            "20" => lengthened += 1,
            "10" => assert!(r[col("ci_percent")].parse::<f64>().unwrap() <= 5.0, "{r:?}"),
            other => panic!("batch length {other} after at most one doubling: {r:?}"),
        }
    }
    // Five batches of ten queries are far from 5% for these thrashing runs.
    assert!(lengthened > 0, "{text}");
}

#[test]
fn bad_input_is_a_usage_error_before_anything_is_written() {
    let scratch = Scratch::new("dbmin-bad");
    let dir = scratch.0.join("out");
    let dir = dir.to_str().unwrap();
    for (args, message) in [
        (&["--algorithms", "dbmin,lru"][..], "unknown algorithm \"lru\""),
        (&["--mixes", "m4"][..], "unknown query mix \"m4\""),
        (&["--ncq", "0"][..], "NCQ must be between 1 and 32"),
        (&["--ncq", "33"][..], "NCQ must be between 1 and 32"),
        (&["--figures", "6"][..], "unknown figure"),
        // Query VI's largest locality set is far above 10 buffers.
        (&["--buffers", "10", "--algorithms", "clock"][..], "buffers are too few"),
        (&["--buffers", "0"][..], "--buffers 0 is out of range: give 1 to 100000"),
    ] {
        let out = dbmin(&[args, &["--quick", "--out", dir]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {message:?} missing from {stderr}");
        assert!(!std::path::Path::new(dir).exists(), "{args:?} wrote {dir}");
    }
}

/// `--buffers` beyond what the simulated database (1,001 pages) could use is refused before
/// anything runs: a frame table of 2^32 - 1 buffers aborted on its allocation, and one of a
/// billion ran for minutes while it filled gigabytes.
#[test]
fn buffers_beyond_the_limit_are_a_usage_error() {
    let scratch = Scratch::new("dbmin-huge");
    let dir = scratch.0.join("out");
    for buffers in ["4294967295", "1000000000", "100001"] {
        let out = dbmin(&[
            "--quick",
            "--figures",
            "2",
            "--mixes",
            "m1",
            "--algorithms",
            "clock",
            "--ncq",
            "1",
            "--jobs",
            "1",
            "--buffers",
            buffers,
            "--out",
            dir.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--buffers {buffers}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("error: --buffers {buffers} is out of range: give 1 to 100000 (the simulated database has 1,001 pages)"),
        );
        assert!(!dir.exists(), "--buffers {buffers} wrote {}", dir.display());
    }
}
