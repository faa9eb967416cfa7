//! Runs the built `swizzledb` binary end to end on a small data set.

use std::process::{Command, Output};

use crate::common;

use common::{assert_chart, assert_usage_errors, Scratch, Table, BIN};

fn rndread(scratch: &Scratch, extra: &[&str]) -> Output {
    let csv = scratch.0.join("out.csv");
    let args = [
        "bench",
        "rndread",
        "--records",
        "20000",
        "--duration",
        "0.2",
        "--warmup",
        "0.1",
        "--repeat",
        "1",
        "--csv",
    ];
    Command::new(BIN).args(args).arg(&csv).arg("--dir").arg(&scratch.0).args(extra).output().unwrap()
}

/// (mode, throughput) of each CSV data row.
fn csv_rows(scratch: &Scratch) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(scratch.0.join("out.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (mode, tp) = (col("mode"), col("throughput"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), header.len(), "row {l:?}");
            (f[mode].to_string(), f[tp].parse().unwrap())
        })
        .collect()
}

/// Files left in the scratch directory other than the CSV and the log of its appends'
/// environments.
fn leftovers(scratch: &Scratch) -> Vec<String> {
    std::fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "out.csv" && n != "out.env.jsonl")
        .collect()
}

#[test]
fn rndread_all_modes_writes_three_rows() {
    let scratch = Scratch::new("all");
    let out = rndread(&scratch, &["--mode", "all"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for mode in ["traditional", "swizzling", "main-memory", "swizzling/main-memory = "] {
        assert!(stdout.contains(mode), "{mode} missing from\n{stdout}");
    }
    let rows = csv_rows(&scratch);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|(_, tp)| *tp > 0.0), "{rows:?}");
    let left: Vec<String> = leftovers(&scratch).into_iter().filter(|n| n != "out").collect();
    assert!(left.is_empty(), "temporary databases left behind: {left:?}");
}

/// The buffer benchmarks run without a write-ahead log and say so: a note before the tables,
/// and a `logging` column that is `false` in every CSV row and JSON row. A `--csv` file with
/// another version's header is refused before the run and left as it was.
#[test]
fn lookup_says_logging_is_off() {
    let scratch = Scratch::new("logging");
    let out = scratch.0.join("results");
    let o = rndread(&scratch, &["--mode", "swizzling", "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stdout.lines().next(),
        Some("logging: off (buffer only; see bench wal for the log's cost)"),
        "{stdout}"
    );
    for csv in [scratch.0.join("out.csv"), out.join("lookup.csv")] {
        let (header, rows) = read_csv(&csv);
        let logging = header.iter().position(|h| h == "logging").expect("a logging column");
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert!(rows.iter().all(|r| r[logging] == "false"), "{rows:?}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("lookup.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r["logging"] == false), "{json}");

    let old = "experiment,mode,policy,threads\nrndread,swizzling,gclock(k=10),1\n";
    std::fs::write(scratch.0.join("out.csv"), old).unwrap();
    let o = rndread(&scratch, &["--mode", "swizzling"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--csv") && stderr.contains("other columns"), "{stderr}");
    assert_eq!(std::fs::read_to_string(scratch.0.join("out.csv")).unwrap(), old);
}

/// A `--csv` that cannot be written (a path in a directory that does not exist) was found only
/// after the whole run, which then failed with exit 1 and a message about `--out`; a directory
/// was "cannot read", exit 2. Both are outputs that cannot be written (README "Exit codes":
/// 3), refused before anything runs.
#[test]
fn lookup_refuses_a_csv_it_cannot_write_before_running() {
    let scratch = Scratch::new("csv-unwritable");
    let blocker = scratch.0.join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    for (csv, needle) in [
        (scratch.0.join("missing").join("out.csv"), "missing"),
        (blocker.join("out.csv"), "a-file"),
        (scratch.0.clone(), "directory"),
    ] {
        let o = Command::new(BIN)
            .args(["bench", "lookup", "--records", "2000", "--duration", "0.05", "--warmup", "0"])
            .args(["--repeat", "1", "--mode", "swizzling", "--csv"])
            .arg(&csv)
            .arg("--dir")
            .arg(&scratch.0)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{csv:?}: {stderr}");
        assert!(stderr.contains("--csv") && stderr.contains(needle), "{csv:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{csv:?}: it ran: {}", String::from_utf8_lossy(&o.stdout));
    }
    let left: Vec<String> = std::fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["a-file"]);
    // A new file in a directory that exists is still made by the run.
    let o = rndread(&scratch, &["--mode", "swizzling"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(csv_rows(&scratch).len(), 1);
}

/// A `--baseline` mode that is not measured fell back to another mode without a word but the
/// table's header; it is a usage error (exit 2) before anything runs, in every command that
/// takes it.
#[test]
fn a_baseline_that_is_not_measured_is_refused() {
    let scratch = Scratch::new("baseline");
    for command in [&["bench", "lookup"][..], &["bench", "scan"][..]] {
        let o = Command::new(BIN)
            .args(command)
            .args(["--mode", "swizzling,traditional", "--baseline", "main-memory", "--dir"])
            .arg(&scratch.0)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("--baseline main-memory"), "{command:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{command:?}: it ran");
    }
}

#[test]
fn zero_threads_is_rejected() {
    let scratch = Scratch::new("threads0");
    let out = rndread(&scratch, &["--threads", "0"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--threads"), "{stderr}");
}

#[test]
fn too_small_main_memory_fails_alone() {
    let scratch = Scratch::new("small");
    let out = rndread(&scratch, &["--pool", "1MiB"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: main-memory mode"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAILED"), "{stdout}");
    let modes: Vec<String> = csv_rows(&scratch).into_iter().map(|(m, _)| m).collect();
    assert_eq!(modes, ["traditional", "swizzling"]);
    let left: Vec<String> = leftovers(&scratch).into_iter().filter(|n| n != "out").collect();
    assert!(left.is_empty(), "temporary databases left behind: {left:?}");
}

#[test]
fn bad_input_gives_a_message_not_a_panic() {
    let scratch = Scratch::new("bad");
    for extra in [
        &["--records", "0"][..],
        &["--pool", "1KiB"],
        &["--pool", "12XB"],
        &["--mode", "fast"],
        &["--page-size", "1000"],
        &["--duration", "0"],
    ] {
        let out = rndread(&scratch, extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{extra:?}: {stderr}");
        assert!(stderr.contains("error"), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{extra:?}: {stderr}");
    }
    let left: Vec<String> = leftovers(&scratch).into_iter().filter(|n| n != "out").collect();
    assert!(left.is_empty(), "temporary databases left behind: {left:?}");
}

/// `--duration` and `--warmup` above a day (or not a number of seconds at all) were refused
/// with "invalid number of seconds ...; expected e.g. 3 or 0.5", which hid the range: 100000
/// looked as valid as 3. The message now names it.
#[test]
fn seconds_out_of_range_name_the_range() {
    let scratch = Scratch::new("seconds");
    for (flag, value) in [
        ("--duration", "100000"),
        ("--duration", "86400.5"),
        ("--warmup", "1e9"),
        ("--duration", "NaN"),
        ("--duration", "-1"),
    ] {
        let out = Command::new(BIN)
            .args(["bench", "lookup", "--records", "1000", "--repeat", "1", flag, value, "--dir"])
            .arg(&scratch.0)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{value}' for '{flag} <{}>': {value:?} is not a number of seconds from 0 to \
                 86400 (one day)",
                flag[2..].to_uppercase()
            )),
            "{flag} {value}: {stderr}"
        );
        assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "{flag} {value} wrote files");
    }
}

/// The Fig. 10/11 experiment at a tiny scale: one table per size, the summary with its checks,
/// and CSV/JSON files with the documented columns in --out.
#[test]
fn fig10_tiny_writes_summary_csv_and_json() {
    let scratch = Scratch::new("fig10");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["experiment", "fig10", "--pool", "1MiB", "--max-factor", "2", "--duration", "0.1"])
        .args(["--warmup", "0", "--repeat", "2", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("Fig. 10/11 summary"), "{stdout}");
    assert!(stdout.contains("Fig. 10, data in memory: swizzling / main-memory"), "{stdout}");
    assert!(stdout.contains("Fig. 11, data beyond the pool: swizzling / traditional"), "{stdout}");
    assert!(stdout.contains("memory limit"), "main-memory must stop at its limit beyond the pool: {stdout}");
    let checks = std::fs::read_to_string(out.join("graefe-fig10.checks.json")).unwrap();
    assert!(checks.contains("\"verdict\"") && checks.contains("Fig. 11"), "{checks}");
    let csv = std::fs::read_to_string(out.join("graefe-fig10.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    for col in [
        "experiment",
        "mode",
        "policy",
        "threads",
        "records",
        "pool_bytes",
        "working_set_bytes",
        "repetition",
        "duration_s",
        "throughput",
        "hit_ratio",
        "p99_ns",
        "memory_bytes",
        "io",
    ] {
        assert!(header.split(',').any(|h| h == col), "missing column {col} in {header}");
    }
    // 5 sizes (1/8 .. 2 x pool) x 3 modes x 2 repetitions, minus main-memory beyond its limit.
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() >= 4 * 2 * 2 && rows.len() < 5 * 3 * 2, "{} rows", rows.len());
    assert_chart(&out, "graefe-fig10");
    let json = std::fs::read_to_string(out.join("graefe-fig10.json")).unwrap();
    assert!(
        json.trim_start().starts_with('{') && json.contains("\"rows\"") && json.contains("\"throughput\"")
    );
    assert_eq!(json.matches("\"experiment\"").count(), rows.len(), "JSON and CSV hold the same rows");
}

/// `--dir` is created, with its parents, where it is missing, and a run uses it; a `--dir` that
/// names a file, or lies under one, is a path that cannot be used (exit 3, README "Exit codes",
/// as for `--out`; it was exit 2) naming it, and nothing runs.
#[test]
fn a_missing_dir_is_created_and_a_file_is_refused() {
    let scratch = Scratch::new("dir-arg");
    let dir = scratch.0.join("not").join("yet");
    let o = Command::new(BIN)
        .args(["bench", "rndread", "--records", "2000", "--duration", "0.1", "--warmup", "0"])
        .args(["--repeat", "1", "--mode", "swizzling", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.is_dir());
    let file = scratch.0.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for args in [vec!["bench", "rndread", "--records", "2000"], vec!["bench", "wal", "--records", "100"]] {
        let o = Command::new(BIN).args(&args).arg("--dir").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("is not a directory") && err.contains("a-file"), "{err}");
        let under = file.join("sub");
        let o = Command::new(BIN).args(&args).arg("--dir").arg(&under).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{args:?} under a file: {err}");
        assert!(err.contains("cannot create the directory") && err.contains("a-file"), "{err}");
    }
    // The same through `trace record`, which parses the command it runs.
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(scratch.0.join("t"))
        .args(["--", "bench", "rndread", "--records", "2000", "--dir"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A command refused before any work leaves no `--dir` behind, though parsing it creates a
/// missing one: refused by a later argument, by a check of the arguments together, or as the
/// command `trace record` runs. A directory that existed stays.
#[test]
fn a_refused_command_leaves_no_dir_it_created() {
    let scratch = Scratch::new("dir-refused");
    let kept = scratch.0.join("kept");
    std::fs::create_dir(&kept).unwrap();
    for (n, args) in [
        vec!["bench", "lookup", "--dir", "{}", "--mode", "quantum"],
        vec!["bench", "lookup", "--dir", "{}", "--records", "1000", "--working-set", "64MiB"],
        vec!["bench", "tpcc", "--dir", "{}", "--threads", "0"],
        vec!["bench", "wal", "--dir", "{}", "--configs", "nonsense"],
        vec!["trace", "record", "--out", "{}/t", "--", "bench", "lookup", "--dir", "{}", "--mode", "x"],
    ]
    .into_iter()
    .enumerate()
    {
        let fresh = scratch.0.join(format!("new{n}")).join("sub");
        for dir in [&fresh, &kept] {
            let args: Vec<String> = args.iter().map(|a| a.replace("{}", &dir.to_string_lossy())).collect();
            let o = Command::new(BIN).args(&args).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        assert!(!scratch.0.join(format!("new{n}")).exists(), "{args:?} left {}", fresh.display());
        assert!(kept.is_dir(), "{args:?} removed a directory it did not create");
    }
}

/// Bad input is a one-line error with exit code 2, and nothing is written.
#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let scratch = Scratch::new("bad-out");
    let out = scratch.0.join("never");
    for args in [
        vec!["bench", "lookup", "--records", "1000", "--working-set", "64MiB"],
        vec!["bench", "lookup", "--working-set", "2.5"],
        vec!["bench", "lookup", "--sweep", "pool=1..2:x2"],
        vec!["bench", "lookup", "--mode", "quantum"],
        vec!["experiment", "fig10", "--pool", "lots"],
        vec!["experiment", "fig10", "--pool", "64KiB"],
        vec!["bench", "lookup", "--records", "1000", "--pool", "1KiB"],
        vec!["bench", "insert", "--records", "1000", "--page-size", "1000"],
        // A pool of more frames than a pool can have, given or grown from --records by default:
        // it was "invalid configuration", exit 1, after the run's header.
        vec!["bench", "lookup", "--records", "18446744073709551615"],
        vec!["bench", "scan", "--records", "18446744073709551615"],
        vec!["bench", "lookup", "--records", "1000", "--pool", "64TiB"],
        // Records whose bytes or in-memory pool overflow: an arithmetic-overflow panic before.
        vec!["bench", "drift", "--records", "18446744073709551615"],
        vec!["bench", "isolation", "--records", "18446744073709551615"],
        vec!["bench", "read-latency", "--records", "18446744073709551615"],
        // A pool below 16 pages or above 2^32 - 2: "invalid configuration", exit 1, before.
        vec!["bench", "values", "--pool", "0"],
        vec!["bench", "values", "--pool", "64TiB"],
    ] {
        let o = Command::new(BIN).args(&args).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!String::from_utf8_lossy(&o.stderr).trim().is_empty());
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    // A pool that cannot be made, given as --pool or grown from --records: exit 1 after the
    // run's header before. The message names the option to change.
    for (args, option) in [
        (vec!["bench", "tpcc", "--pool", "64TiB"], "--pool"),
        (vec!["bench", "tpcb", "--pool", "64TiB"], "--pool"),
        (vec!["bench", "ycsb", "--pool", "64TiB"], "--pool"),
        (vec!["bench", "wal", "--records", "18446744073709551615"], "--records"),
    ] {
        let o = Command::new(BIN).args(&args).arg("--out").arg(&out).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(option), "{args:?} does not name {option}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    // An --out that cannot be created.
    let blocker = scratch.0.join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let o = Command::new(BIN)
        .args(["bench", "lookup", "--records", "1000", "--out"])
        .arg(blocker.join("sub"))
        .output()
        .unwrap();
    // An output that cannot be written: exit 3 (README "Exit codes").
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out"));
}

/// `bench values --sizes` takes sizes up to `MAX_VALUE_LEN`, but a tree takes at most an eighth
/// of its pool in overflow pages (`Tree::max_value_len`, btree T22): a size the `--pool` cannot
/// take is bad input (exit 2, naming `--pool`, nothing written or left in `--dir`). It was the
/// engine's `ValueTooLarge` at the first insert, exit 1, with the run's database left behind.
#[test]
fn bench_values_refuses_a_size_its_pool_cannot_take() {
    let scratch = Scratch::new("values-limit");
    let (dir, out) = (scratch.0.join("dir"), scratch.0.join("out"));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(BIN)
        .args([
            "bench", "values", "--sizes", "100,4MiB", "--pool", "16MiB", "--bytes", "8MiB", "--repeat", "1",
        ])
        .arg("--dir")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--pool") && stderr.contains("max_value_len"), "{stderr}");
    assert!(!out.exists(), "wrote {}", out.display());
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in --dir: {left:?}");
}

/// `bench drift` (and `experiment fig13`, the same workload) and `bench lookup` with more records
/// than the file system of --dir has room for are refused before they write: they loaded until
/// the disk was full.
#[test]
fn drift_records_beyond_the_room_left_are_refused_before_writing() {
    let scratch = Scratch::new("drift-room");
    let out = scratch.0.join("out");
    // 10^15 records of 128 bytes: 128 PB, more than any file system the tests run on.
    // bench lookup with a --pool given (without one, the pool grown from --records is refused).
    for command in
        [&["bench", "drift"][..], &["experiment", "fig13"], &["bench", "lookup", "--pool", "64MiB"]]
    {
        let o = Command::new(BIN)
            .args(command)
            .args(["--records", "1e15", "--dir"])
            .arg(&scratch.0)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("--records") && stderr.contains("left"), "{command:?}: {stderr}");
        assert!(!out.exists(), "{command:?} wrote {}", out.display());
        scratch.assert_only_out_left();
    }
}

/// `<stem>.png` is a PNG and `<stem>.svg` an SVG document.
/// A result CSV: its header and its rows, every row as long as the header.
fn read_csv(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let t = Table::read(path);
    (t.header, t.rows)
}

/// Fig. 12 and Fig. 13 at a tiny scale: tables, checks, CSV, plots (and the time series).
#[test]
fn fig12_and_fig13_tiny() {
    let scratch = Scratch::new("fig12-13");
    let out = scratch.0.join("results");
    let run = |args: &[&str]| {
        let o = Command::new(BIN)
            .args(args)
            .arg("--dir")
            .arg(&scratch.0)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{args:?}: {stdout}\n{}", String::from_utf8_lossy(&o.stderr));
        stdout
    };
    let s = run(&["experiment", "fig12", "--records", "30000", "--repeat", "2"]);
    assert!(s.contains("Fig. 12: swizzling / main-memory inserts/s"), "{s}");
    assert_chart(&out, "graefe-fig12");
    let csv = std::fs::read_to_string(out.join("graefe-fig12.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 2, "{csv}");
    let s = run(&[
        "experiment",
        "fig13",
        "--records",
        "40000",
        "--hot",
        "512KiB",
        "--pool",
        "2MiB",
        "--interval",
        "0.4",
        "--shifts",
        "2",
        "--sample",
        "0.1",
        "--repeat",
        "1",
    ]);
    assert!(s.contains("Fig. 13: steady state, swizzling / traditional"), "{s}");
    assert!(s.contains("recovered after"), "the transitions per shift: {s}");
    assert_chart(&out, "graefe-fig13");
    let series = std::fs::read_to_string(out.join("graefe-fig13-series.csv")).unwrap();
    assert!(series.starts_with("experiment,mode,repetition,t_s,phase,throughput,hit_ratio,logging,io"));
    assert!(series.lines().count() > 10, "{series}");
    assert!(
        series.lines().any(|l| l.split(',').nth(4) == Some("2")),
        "the hot range must have shifted twice"
    );
}

/// The fix() experiment at a tiny scale: table, checks, CSV and plots.
#[test]
fn fix_cost_tiny() {
    let scratch = Scratch::new("fix");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["experiment", "fix", "--records", "20000", "--fixes", "20000", "--repeat", "2", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("swizzled / page-table") && stdout.contains("an isolated hit loop"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("fix.csv")).unwrap();
    assert!(csv.starts_with("experiment,mode,latch,repetition,fixes,ns_per_fix"));
    assert_eq!(csv.lines().count(), 1 + 3 * 2 * 2, "{csv}");
    assert_chart(&out, "fix");
}

/// `trace record` traces every database of a bench run (FILE, FILE.1, ...), `trace export` turns
/// one into CSV with one row per event, and the fix rows match the run's page references.
#[test]
fn trace_record_and_export() {
    let scratch = Scratch::new("trace");
    let trace = scratch.0.join("t.swzt");
    let out = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&trace)
        .args(["--", "bench", "lookup", "--records", "5000", "--pool", "512KiB", "--duration", "0.1"])
        .args(["--warmup", "0", "--repeat", "1", "--mode", "traditional,swizzling", "--dir"])
        .arg(&scratch.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Traced 2 database(s)"), "{stderr}");
    let second = scratch.0.join("t.swzt.1");
    assert!(trace.exists() && second.exists() && !scratch.0.join("t.swzt.2").exists());

    let csv = scratch.0.join("t.csv");
    let out = Command::new(BIN)
        .args(["trace", "export", "--input"])
        .arg(&second)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("event,thread,page,parent,latch,hit,time_ns"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 7));
    let events = swizzledb::TraceReader::open(&second).unwrap().count();
    assert_eq!(rows.len(), events);
    // The loading thread and the lookup thread: page_references merges them by time.
    let mut fixes: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| r[0] == "fix")
        .map(|r| (r[6].parse().unwrap(), r[2].parse().unwrap()))
        .collect();
    fixes.sort_by_key(|f| f.0);
    let fixes: Vec<u64> = fixes.into_iter().map(|f| f.1).collect();
    let refs = swizzledb_buffer::page_references(&second).unwrap();
    assert!(fixes == refs, "{} fix rows, {} references, not in the same order", fixes.len(), refs.len());
    assert!(rows.iter().any(|r| r[0] == "evict"), "a 512 KiB pool evicts");

    // `trace analyze` reads the recorded (binary) trace: one request per fix, OPT the floor.
    let res = scratch.0.join("res");
    let out = Command::new(BIN)
        .args(["trace", "analyze", "--sizes", "8,32", "--input"])
        .arg(&second)
        .arg("--out")
        .arg(&res)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("OPT has the fewest misses at every size: ok"), "{stdout}");
    let curve = std::fs::read_to_string(res.join("miss-ratio.csv")).unwrap();
    let requests: Vec<usize> =
        curve.lines().skip(1).map(|l| l.split(',').nth(2).unwrap().parse().unwrap()).collect();
    assert!(!requests.is_empty() && requests.iter().all(|&r| r == refs.len()), "{curve}");

    // A bad trace file is an error with a message, not a panic: a malformed trace, exit 2
    // (README "Exit codes").
    std::fs::write(scratch.0.join("bad"), b"not a trace").unwrap();
    let out = Command::new(BIN)
        .args(["trace", "export", "--input"])
        .arg(scratch.0.join("bad"))
        .arg("--csv")
        .arg(scratch.0.join("bad.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a SwizzleDB trace"));
}

/// `experiment policies` at a tiny scale: one CSV row per (pool size, mode, policy, repetition),
/// counters that add up, the checks, and one throughput and one hit-ratio plot per mode; bad
/// options are usage errors.
#[test]
fn policies_experiment_tiny() {
    let scratch = Scratch::new("policies");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["experiment", "policies", "--records", "20000", "--policies", "gclock,car,leaf-lru"])
        .args(["--fractions", "25%,50%", "--duration", "0.1", "--warmup", "0", "--repeat", "2"])
        .args(["--mode", "traditional,swizzling", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("pool = 25% of the data") && stdout.contains("leaf-lru"), "{stdout}");
    assert!(stdout.contains("CAR's miss ratio / GCLOCK's") && stdout.contains("rho = "), "{stdout}");
    assert!(out.join("gilbert-policies.checks.json").exists());
    let (header, rows) = read_csv(&out.join("gilbert-policies.csv"));
    assert_eq!(rows.len(), 2 * 2 * 3 * 2, "fractions x modes x policies x repetitions");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    for r in &rows {
        let n = |name: &str| r[col(name)].parse::<u64>().unwrap();
        assert!(n("hits") <= n("fixes"));
        let refused = n("rejected_in_use")
            + n("rejected_root")
            + n("rejected_swizzled_children")
            + n("rejected_not_resident");
        assert!(n("evictions") <= n("proposals") + n("sweep_evictions"), "{r:?}");
        assert!(refused <= n("proposals"), "{r:?}");
        if r[col("mode")] == "traditional" {
            assert_eq!(n("rejected_swizzled_children"), 0, "no swizzled children without swizzling");
        }
    }
    assert!(rows.iter().any(|r| r[col("evictions")] != "0"), "a 25% pool evicts");
    for stem in ["throughput", "hit-ratio", "eviction-per-call", "eviction-total"] {
        for mode in ["traditional", "swizzling"] {
            assert_chart(&out, &format!("gilbert-policies-{stem}-{mode}"));
        }
    }
    let bads: [&[&str]; 6] = [
        &["--fractions", "0%"],
        &["--fractions", "150%"],
        &["--zipf", "-1"],
        &["--policies", "nosuch"],
        &["--mode", "main-memory"],
        &["--policy", "lru"],
    ];
    assert_usage_errors(&["experiment", "policies", "--records", "1000"], &bads, &scratch.0);
}

/// `bench emulator` end to end on a tiny buffer: every variant, two compute times, one thread
/// count; the CSV has the documented columns, a row per variant, point and repetition, and
/// distlock normalized to exactly 1.
#[test]
fn emulator_tiny_writes_csv_checks_and_plots() {
    let scratch = Scratch::new("emulator");
    let out = Command::new(BIN)
        .args(["bench", "emulator", "--data-pages", "20000", "--buffer-pages", "2000", "--threads", "3"])
        .args(["--compute-us", "0,0.5", "--partitions", "4", "--free-lists", "4", "--reclaim", "16"])
        .args(["--duration", "0.05", "--warmup", "0", "--repeat", "2", "--out"])
        .arg(&scratch.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "lru / bat-pref waits per million",
        "bat-pref / distlock accesses/s",
        "batching - lru hit ratio",
        "(paper: ",
    ] {
        assert!(stdout.contains(needle), "{needle} missing from\n{stdout}");
    }
    let checks = std::fs::read_to_string(scratch.0.join("emulator.checks.json")).unwrap();
    for needle in ["\"verdict\"", "prim / bat-pref accesses/s", "bp-distlock / distlock accesses/s"] {
        assert!(checks.contains(needle), "{needle} missing from\n{checks}");
    }
    let text = std::fs::read_to_string(scratch.0.join("emulator.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "variant",
        "policy",
        "threads",
        "compute_us",
        "accesses_per_sec",
        "waits_per_million",
        "hit_ratio",
        "normalized",
        "lock_acquisitions_per_million",
        "failed_trylocks_per_million",
        "data_pages",
        "buffer_pages",
        "all_miss",
        "repetition",
    ] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 8 * 2 * 2, "8 variants x 2 compute times x 2 repetitions");
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        assert!(row[col("accesses_per_sec")].parse::<f64>().unwrap() > 0.0, "{row:?}");
        let hit: f64 = row[col("hit_ratio")].parse().unwrap();
        assert!((0.0..=1.0).contains(&hit), "{row:?}");
        if row[col("variant")] == "distlock" {
            assert_eq!(row[col("normalized")].parse::<f64>().unwrap(), 1.0, "{row:?}");
        }
        let policy = if row[col("variant")] == "clock" { "clock" } else { "lru" };
        assert_eq!(row[col("policy")], policy, "{row:?}");
    }
    assert_chart(&scratch.0, "emulator-fig11-t3");
}

#[test]
fn emulator_bad_input_exits_2() {
    for extra in
        [&["--variant", "lru,fast"][..], &["--data-pages", "100", "--all-miss"], &["--compute-us", "-1"]]
    {
        let out = Command::new(BIN)
            .args(["bench", "emulator", "--buffer-pages", "1000", "--duration", "0.05"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A mean compute time too long to finish (`--compute-us 1e18`: each access spun for
/// 2^64 - 1 spin-loop hints) ran for ever after its measured duration; it is now a usage error
/// naming the range, and values up to the limit still run.
/// `bench emulator`'s page counts are bounded: 2^32 - 1 buffer pages aborted on allocating the
/// frame tables, and 2^32 - 1 data pages filled gigabytes before a run began.
#[test]
fn emulator_pages_beyond_the_limit_are_a_usage_error() {
    let tiny = ["--variant", "lru", "--threads", "1", "--duration", "0.01", "--warmup", "0", "--repeat", "1"];
    for (data, buffer) in
        [("1000", "4294967295"), ("4294967295", "10"), ("100000001", "10"), ("1000", "100000001")]
    {
        let out = Command::new(BIN)
            .args(["bench", "emulator", "--data-pages", data, "--buffer-pages", buffer])
            .args(tiny)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{data} / {buffer}: {stderr}");
        assert!(stderr.contains("is out of range: give 1 to 100,000,000"), "{data} / {buffer}: {stderr}");
    }
}

#[test]
fn emulator_compute_time_beyond_a_second_is_a_usage_error() {
    let base = ["bench", "emulator", "--data-pages", "100", "--buffer-pages", "10", "--threads", "1"];
    let tiny = ["--variant", "lru", "--duration", "0.01", "--warmup", "0", "--repeat", "1"];
    for compute in ["1e18", "1000000.5", "inf"] {
        let out = common::output_within_a_minute(
            Command::new(BIN).args(base).args(tiny).args(["--compute-us", compute]),
        )
        .unwrap_or_else(|| panic!("--compute-us {compute} was still running after a minute"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--compute-us {compute}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid compute time \"{compute}\"; expected microseconds from 0 to 1000000 (1 s)"
            )),
            "{stderr}"
        );
    }
    let out = Command::new(BIN).args(base).args(tiny).args(["--compute-us", "0,1000000"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `experiment bp-wrapper` at a tiny scale: one CSV row per (policy, thread count, repetition);
/// lock counters only for the instrumented policies, where every lock-based access took the lock
/// without batching (`locked-`) and far fewer acquisitions with it (`bpw-`); the oversubscription
/// note, the tables and the checks; bad options are usage errors.
#[test]
fn bp_wrapper_experiment_tiny() {
    let scratch = Scratch::new("bpwrapper");
    let out = scratch.0.join("results");
    let o = Command::new(BIN)
        .args(["experiment", "bp-wrapper", "--records", "20000", "--policies", "clock,locked-lru,bpw-lru"])
        .args(["--thread-counts", "1,3", "--duration", "0.2", "--warmup", "0", "--repeat", "2"])
        .args(["--mode", "traditional", "--fraction", "25%", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("core(s)") && stdout.contains("ratio to clock"), "{stdout}");
    assert!(
        stdout.contains("bpw-lru / clock lookups/s") && stdout.contains("bpw-lru vs locked-lru hit ratio"),
        "{stdout}"
    );
    assert!(stdout.contains("locked-lru / bpw-lru waits per million accesses"), "{stdout}");
    let checks = std::fs::read_to_string(out.join("ding-bpwrapper.checks.json")).unwrap();
    assert!(checks.contains("\"bpw-lru / clock lookups/s\""), "{checks}");
    let (header, rows) = read_csv(&out.join("ding-bpwrapper.csv"));
    assert_eq!(rows.len(), 3 * 2 * 2, "policies x thread counts x repetitions");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    for r in &rows {
        let n = |name: &str| r[col(name)].parse::<u64>().unwrap();
        assert!(n("hits") <= n("fixes") && n("fixes") > 0, "{r:?}");
        let (acquired, waits) = (n("lock_acquisitions"), n("lock_waits"));
        assert!(waits <= acquired, "{r:?}");
        match r[col("policy")].as_str() {
            "clock" => {
                assert_eq!(acquired, 0, "CLOCK has no instrumented lock");
                assert!(r[col("waits_per_million")].is_empty());
            }
            // Every hit and every miss takes the lock, plus one per eviction chunk.
            "locked-lru" => assert!(acquired >= n("fixes") / 2, "{r:?}"),
            // Batches of 32 accesses, plus the eviction chunks and end-of-thread flushes.
            "bpw-lru" => assert!(acquired * 8 < n("fixes"), "{r:?}"),
            other => panic!("unexpected policy {other}"),
        }
        assert_eq!(r[col("io")], "page-cache", "a pool of 25% reads the file through the page cache");
    }
    assert_chart(&out, "ding-bpwrapper-throughput");
    assert_chart(&out, "ding-bpwrapper-waits");
    let bads: [&[&str]; 3] = [&["--threads", "2"], &["--policy", "lru"], &["--mode", "main-memory"]];
    assert_usage_errors(&["experiment", "bp-wrapper", "--records", "1000"], &bads, &scratch.0);
}

/// A thread count named twice (`--threads 1,2,1`) was measured twice, as two rows of one
/// configuration and repetition, and its table rows printed twice: it is measured once.
#[test]
fn bench_isolation_tiny_writes_a_row_per_measurement() {
    let scratch = Scratch::new("isolation");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args([
            "bench",
            "isolation",
            "--records",
            "2000",
            "--duration",
            "0.1",
            "--repeat",
            "1",
            "--threads",
            "1,2,1",
        ])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("scan-txn") && stdout.contains("on/off"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("scan-txn ")).count(), 2, "{stdout}");
    let (header, rows) = read_csv(&out.join("isolation.csv"));
    assert_eq!(header[..4], ["experiment", "mix", "locking", "threads"]);
    // 5 mixes x 2 settings x 2 thread counts x 1 repetition.
    assert_eq!(rows.len(), 20);
    for r in &rows {
        let per_sec: f64 = r[5].parse().unwrap();
        assert!(per_sec > 0.0, "{r:?}");
        let locks: f64 = r[8].parse().unwrap();
        // With locking off no lock is requested; with it, transactions take locks.
        match (r[2].as_str(), r[1].as_str()) {
            ("off", _) => assert_eq!(locks, 0.0, "{r:?}"),
            ("on", "point-txn" | "scan-txn") => assert!(locks >= 2.0, "{r:?}"),
            _ => {}
        }
    }
    let left: Vec<String> = leftovers(&scratch).into_iter().filter(|n| n != "out").collect();
    assert!(left.is_empty(), "temporary databases left behind: {left:?}");
}

/// `bench read-latency` at a tiny scale: one row per read kind, sane latency percentiles. A
/// thread count named twice (`--threads 1,1`) is measured once.
#[test]
fn bench_read_latency_tiny_writes_a_row_per_measurement() {
    let scratch = Scratch::new("read-latency");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args([
            "bench",
            "read-latency",
            "--records",
            "2000",
            "--hot",
            "100",
            "--threads",
            "1,1",
            "--duration",
            "0.3",
            "--repeat",
            "1",
        ])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("snapshot") && stdout.contains("p99.9 us"), "{stdout}");
    let (header, rows) = read_csv(&out.join("read-latency.csv"));
    assert_eq!(
        header,
        [
            "experiment",
            "kind",
            "threads",
            "rep",
            "reads",
            "reads_per_sec",
            "p50_us",
            "p99_us",
            "p999_us",
            "max_us",
            "writer_commits_per_sec",
            "writer_retries"
        ]
    );
    // 4 kinds x 1 thread count x 1 repetition.
    let mut kinds: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["locked", "read-txn", "snapshot", "snapshot-txn"]);
    for r in &rows {
        assert_eq!(r[0], "read-latency", "{r:?}");
        let reads: u64 = r[4].parse().unwrap();
        assert!(reads > 0, "{r:?}");
        let (p50, p999, max): (f64, f64, f64) =
            (r[6].parse().unwrap(), r[8].parse().unwrap(), r[9].parse().unwrap());
        assert!(p50 <= p999 && p999 <= max, "{r:?}");
        let _retries: u64 = r[11].parse().unwrap_or_else(|e| panic!("writer_retries {r:?}: {e}"));
        if r[1] == "snapshot" {
            assert!(p50.is_finite(), "{r:?}");
        }
    }
    let left: Vec<String> = leftovers(&scratch).into_iter().filter(|n| n != "out").collect();
    assert!(left.is_empty(), "temporary database left behind: {left:?}");
}

/// One name per experiment: each command is named as its output files (and its module); the
/// short names of earlier versions still work.
#[test]
fn experiments_answer_to_their_file_names_and_to_their_old_names() {
    let help = |args: &[&str]| {
        let o = Command::new(BIN).args(args).arg("--help").output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let listed = help(&["experiment"]);
    for (name, old) in [
        ("graefe-fig10", "fig10"),
        ("graefe-fig12", "fig12"),
        ("graefe-fig13", "fig13"),
        ("gilbert-policies", "policies"),
        ("ding-bpwrapper", "bp-wrapper"),
        ("fix", "fix"),
    ] {
        assert!(listed.contains(name), "{name} not in\n{listed}");
        assert_eq!(help(&["experiment", name]), help(&["experiment", old]), "{name} and {old} differ");
    }
    assert!(help(&["sim"]).contains("chou-dbmin"));
    assert_eq!(help(&["sim", "chou-dbmin"]), help(&["sim", "dbmin"]));
    assert_eq!(help(&["bench", "lookup"]), help(&["bench", "rndread"]));
}

/// `bench values` at tiny scale: one row per size and repetition, values read back (the bench
/// checks each), large sizes in overflow pages and small ones not, and the log holding at least
/// the values written. A size named twice (`100` and `100B`) was measured twice, each time a row
/// of the same size and repetition, and its table row printed twice: it is measured once.
#[test]
fn bench_values_writes_a_row_per_size_and_repetition() {
    let scratch = Scratch::new("values");
    let out = scratch.0.join("out");
    let status = Command::new(BIN)
        .args([
            "bench",
            "values",
            "--sizes",
            "100,64KiB,100B",
            "--bytes",
            "256KiB",
            "--repeat",
            "2",
            "--pool",
            "16MiB",
        ])
        .arg("--dir")
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let (header, rows) = read_csv(&out.join("values.csv"));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(rows.len(), 4);
    let measured: std::collections::BTreeSet<(&str, &str)> =
        rows.iter().map(|r| (r[col("value_bytes")].as_str(), r[col("repetition")].as_str())).collect();
    assert_eq!(measured.len(), 4, "one row per size and repetition: {rows:?}");
    let table = String::from_utf8_lossy(&status.stdout);
    assert_eq!(table.lines().filter(|l| l.starts_with("100 B ")).count(), 1, "{table}");
    for row in &rows {
        let size: f64 = row[col("value_bytes")].parse().unwrap();
        let values: f64 = row[col("values")].parse().unwrap();
        let overflow: f64 = row[col("overflow_pages")].parse().unwrap();
        let log: f64 = row[col("log_bytes_per_value")].parse().unwrap();
        assert_eq!(values, (256.0 * 1024.0 / size).max(16.0).floor());
        assert_eq!(overflow > 0.0, size > 2048.0, "{row:?}");
        assert!(log >= size, "the log holds every value: {row:?}");
        assert!(row[col("inserts_per_sec")].parse::<f64>().unwrap() > 0.0);
    }
    assert!(out.join("values.json").exists());
    let leftovers: Vec<_> =
        std::fs::read_dir(&scratch.0).unwrap().filter_map(Result::ok).map(|e| e.file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("out")], "temporary databases removed");
}

/// A reader that closed its end of the pipe (`| head -1`) panicked `reproduce --list` and
/// `crash-test` ("failed printing to stdout: Broken pipe", exit 101), and failed every
/// experiment with "error: Broken pipe" (exit 1) before it wrote its result files. Now, as for
/// `stat` and the other inspecting commands, a closed pipe ends the output quietly: the command
/// writes its files and exits with its own status.
#[test]
fn a_closed_stdout_pipe_ends_the_output_not_the_command() {
    let scratch = Scratch::new("closed-pipe");
    let out = scratch.0.join("out");
    let crash = scratch.0.join("crash");
    let lookup =
        ["bench", "lookup", "--records", "2000", "--duration", "0.05", "--warmup", "0", "--repeat", "1"];
    let analyze =
        ["trace", "analyze", "--pattern", "uniform", "--pages", "100", "--refs", "1000", "--sizes", "10"];
    let commands: [(Vec<&str>, Option<&str>); 4] = [
        (vec!["reproduce", "--list"], None),
        (
            [&lookup[..], &["--mode", "swizzling", "--dir", scratch.0.to_str().unwrap()]].concat(),
            Some("lookup.csv"),
        ),
        (analyze.to_vec(), Some("miss-ratio.csv")),
        (vec!["crash-test", "--kills", "1", "--max-run-ms", "20", "--dir", crash.to_str().unwrap()], None),
    ];
    for (args, file) in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = Command::new(BIN);
        cmd.args(&args).stdout(writer);
        if file.is_some() {
            cmd.arg("--out").arg(&out);
        }
        let o = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        if let Some(file) = file {
            assert!(out.join(file).is_file(), "{args:?} wrote no {file}");
        }
    }
}
