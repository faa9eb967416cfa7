//! Numeric and list options at their edges: each value below is refused before anything runs,
//! with exit code 2 (README "Exit codes") and a message naming the option, and no result file is
//! written.

use std::process::Command;

use crate::common::{Scratch, BIN};

/// (command line, text the message must hold): every one a usage error found before any work.
/// Each command takes `--duration`, `--repeat` and `--out`, added to its line.
const REFUSED: &[(&[&str], &str)] = &[
    // A count's commas group thousands; a list or a slip is not read as one number.
    (&["bench", "lookup", "--records", "1000,2000"], "--records"),
    (&["bench", "lookup", "--records", "2,1"], "--records"),
    (&["bench", "insert", "--records", "1,,2"], "--records"),
    (&["bench", "insert", "--preload", "1,0000"], "--preload"),
    (&["bench", "emulator", "--data-pages", "1000,2000"], "--data-pages"),
    // A writer's hold longer than a measurement would keep the run going past --duration (for
    // years at the largest count).
    (
        &[
            "bench",
            "read-latency",
            "--records",
            "1000",
            "--hot",
            "100",
            "--threads",
            "1",
            "--hold-us",
            "1000000",
        ],
        "--hold-us",
    ),
    // An option's range is the one its workload takes, named by clap, not the type's.
    (&["bench", "tpcc", "--items", "-1"], "100..=1000000"),
    (&["bench", "tpcc", "--customers", "-1"], "30..=100000"),
    (&["experiment", "graefe-fig14", "--items", "99"], "100..=1000000"),
    (&["bench", "tpcb", "--branches", "-1"], "1..=10000"),
    (&["experiment", "gilbert-pools", "--workload", "tpcb", "--branches", "50000"], "1..=10000"),
    // Too few records for the experiment, refused before any load, naming the fewest it takes.
    (&["experiment", "fix", "--records", "12"], "--records 12 is too few"),
    // A scan longer than the records loaded.
    (
        &["bench", "isolation", "--records", "10", "--scan-len", "11", "--threads", "1"],
        "--scan-len 11 is more than the --records 10",
    ),
    // A page size, however large, is refused naming the sizes the engine takes.
    (&["bench", "lookup", "--page-size", "18446744073709551615"], "power of two from 4KiB to 32KiB"),
    (&["bench", "lookup", "--page-size", "18446744073709551616"], "power of two from 4KiB to 32KiB"),
    (&["experiment", "fix", "--page-size", "16EiB"], "power of two from 4KiB to 32KiB"),
];

#[test]
fn edge_values_are_usage_errors() {
    let scratch = Scratch::new("flags");
    let out = scratch.0.join("out");
    for (args, names) in REFUSED {
        let o = Command::new(BIN)
            .args(*args)
            .args(["--duration", "0.05", "--repeat", "1"])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: the message does not name {names}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote results");
    }
}

/// (command line, text the message must hold): counts that would run for ever or allocate without
/// bound are refused before anything runs, the message naming the option and the range it takes.
/// Run as given with `--out` (not every command takes `--duration`).
const UNBOUNDED: &[(&[&str], &str)] = &[
    (
        &["bench", "tpcc", "--transactions", "18446744073709551615"],
        "--transactions 18446744073709551615 is out of range: give 1 to 10,000,000",
    ),
    (&["bench", "tpcc", "--transactions", "1e8"], "give 1 to 10,000,000"),
    (
        &["experiment", "gilbert-stack-depth", "--transactions", "18446744073709551615"],
        "--transactions 18446744073709551615 is out of range: give 1 to 5,000,000",
    ),
    (
        &["experiment", "fix", "--fixes", "18446744073709551615"],
        "--fixes 18446744073709551615 is out of range: give 1 to 1,000,000,000",
    ),
    (
        &["bench", "wal", "--updates", "18446744073709551615"],
        "--updates 18446744073709551615 is out of range: give 1 to 100,000,000",
    ),
    (
        &["bench", "values", "--bytes", "18446744073709551615"],
        "--bytes 18446744073709551615 is out of range: give 1 byte to 64 GiB",
    ),
    (&["bench", "values", "--bytes", "0"], "give 1 byte to 64 GiB"),
];

#[test]
fn unbounded_counts_are_usage_errors() {
    let scratch = Scratch::new("flags-bounded");
    let out = scratch.0.join("out");
    for (args, names) in UNBOUNDED {
        let o = crate::common::output_within_a_minute(Command::new(BIN).args(*args).arg("--out").arg(&out))
            .unwrap_or_else(|| panic!("{args:?} was still running after a minute"));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: the message does not hold {names:?}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote results");
    }
}

/// `bench read-latency` and `bench isolation` divide the work they count by the time it took: a
/// tiny --duration does not make billions of operations per second on one thread.
#[test]
fn rates_are_per_second_taken() {
    let scratch = Scratch::new("flags-rates");
    let out = scratch.0.join("out");
    let benches: [(&[&str], &str, &[&str]); 2] = [
        (
            &["read-latency", "--hot", "100", "--hold-us", "0"],
            "read-latency.csv",
            &["reads_per_sec", "writer_commits_per_sec"],
        ),
        (&["isolation", "--scan-len", "10"], "isolation.csv", &["per_sec", "records_per_sec"]),
    ];
    for (args, file, cols) in benches {
        let o = Command::new(BIN)
            .arg("bench")
            .args(args)
            .args(["--records", "2000", "--threads", "1", "--duration", "1e-9", "--repeat", "1"])
            .arg("--dir")
            .arg(&scratch.0)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let table = crate::common::Table::read(&out.join(file));
        for col in cols {
            let c = table.col(col);
            for row in &table.rows {
                let rate: f64 = row[c].parse().unwrap();
                assert!(rate < 1e9, "{args:?}: {col} {rate} on one thread: {row:?}");
            }
        }
    }
}

/// `experiment fix` refuses fewer --records than give its tree an inner root, naming that
/// number; that many run.
#[test]
fn fix_takes_the_fewest_records_it_names() {
    let scratch = Scratch::new("flags-fix");
    let fix = |records: &str| {
        Command::new(BIN)
            .args(["experiment", "fix", "--records", records, "--fixes", "1000", "--repeat", "1"])
            .args(["--mode", "traditional"])
            .arg("--dir")
            .arg(&scratch.0)
            .output()
            .unwrap()
    };
    let o = fix("1");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let least: u64 = stderr
        .split("give at least ")
        .nth(1)
        .and_then(|n| n.trim().replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no fewest records in {stderr}"));
    assert!(least > 1, "{stderr}");
    let o = fix(&(least - 1).to_string());
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fix(&least.to_string());
    assert!(o.status.success(), "{least} records: {}", String::from_utf8_lossy(&o.stderr));
}

/// `trace analyze --csv-spec` refuses a key given twice (also by an alias) and an empty
/// delimiter, naming the spec; `delimiter=,,` is still a comma.
#[test]
fn csv_specs_refuse_repeated_keys_and_empty_delimiters() {
    let scratch = Scratch::new("flags-csv-spec");
    let input = scratch.0.join("t.csv");
    std::fs::write(&input, "1\n2\n1\n").unwrap();
    let analyze = |spec: &str| {
        Command::new(BIN)
            .args(["trace", "analyze", "--csv-spec", spec, "--sizes", "1,2", "--input"])
            .arg(&input)
            .output()
            .unwrap()
    };
    for (spec, says) in [
        ("obj-id-col=1,obj-id-col=2", "obj-id-col is given twice"),
        ("obj-id-col=1,obj-id-field=1", "obj-id-col is given twice"),
        ("obj-id-col=1,delimiter=", "the delimiter is empty"),
    ] {
        let o = analyze(spec);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{spec}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains(spec), "{spec}: {stderr}");
        assert!(stderr.contains("--csv-spec"), "{spec}: {stderr}");
    }
    let o = analyze("obj-id-col=1,delimiter=,,has-header=false");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `load --batch` takes a count as every other count option does (1e3, 1,000, 1k), and refuses
/// 0 and more than a u32 naming its range.
#[test]
fn load_batch_takes_the_count_forms() {
    let scratch = Scratch::new("flags-load-batch");
    let input = scratch.0.join("in.csv");
    std::fs::write(&input, "key,value\n61,62\n63,64\n").unwrap();
    for (i, batch) in ["1e3", "1,000", "1k", "2"].into_iter().enumerate() {
        let db = scratch.0.join(format!("d{i}.swz"));
        let o = Command::new(BIN)
            .arg("load")
            .arg(&db)
            .args(["--create", "--tree", "t", "--batch", batch, "--input"])
            .arg(&input)
            .output()
            .unwrap();
        assert!(o.status.success(), "--batch {batch}: {}", String::from_utf8_lossy(&o.stderr));
    }
    for batch in ["0", "4294967296", "1,0"] {
        let db = scratch.0.join("refused.swz");
        let o = Command::new(BIN)
            .arg("load")
            .arg(&db)
            .args(["--create", "--tree", "t", "--batch", batch, "--input"])
            .arg(&input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--batch {batch}: {stderr}");
        assert!(stderr.contains("--batch"), "--batch {batch}: {stderr}");
        assert!(batch == "1,0" || stderr.contains("give 1 to 4,294,967,295"), "--batch {batch}: {stderr}");
        assert!(!db.exists(), "--batch {batch} made the database");
    }
}
