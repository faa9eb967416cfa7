//! `experiment lersch-checkpoints` and `experiment lersch-cleaner` end to end at the smallest
//! scale: the table, the checks, a CSV row per measurement naming its interval and kind, the
//! charts; bad input exits with 2.

use std::process::Command;

mod common;

use common::{assert_usage_errors, Scratch, Table, BIN};

/// Runs `experiment NAME` on one branch, two intervals, one short repetition; returns the CSV
/// and stdout.
fn run(name: &str) -> (Table, String) {
    let scratch = Scratch::new(name);
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["experiment", name, "--branches", "1", "--threads", "1", "--duration", "0.3", "--repeat", "1"])
        .args(["--intervals", "10,200", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("Lersch 2015") && stdout.contains("(paper: "), "{stdout}");
    let table = Table::read(&out.join(format!("{name}.csv")));
    assert_eq!(table.header_line(), swizzledb_lab::tpcb::CSV_COLUMNS);
    for chart in ["throughput", "cpu"] {
        assert!(out.join(format!("{name}-{chart}.svg")).exists(), "{name}-{chart}.svg");
    }
    (table, stdout)
}

/// (interval column, propagation) of every row, sorted.
fn points(table: &Table, interval: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = table
        .rows
        .iter()
        .map(|r| (r[table.col(interval)].clone(), r[table.col("propagation")].clone()))
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn lersch_checkpoints_sweeps_the_checkpoint_interval_for_both_kinds() {
    let (table, stdout) = run("lersch-checkpoints");
    let p = |ms: &str, k: &str| (ms.to_string(), k.to_string());
    assert_eq!(
        points(&table, "checkpoint_ms"),
        [
            p("10", "classical"),
            p("10", "decoupled-checkpoint"),
            p("200", "classical"),
            p("200", "decoupled-checkpoint")
        ]
    );
    assert!(table.rows.iter().all(|r| r[table.col("experiment")] == "lersch-checkpoints"));
    assert!(
        table.rows.iter().all(|r| r[table.col("log_archive")] == "off"),
        "archiving off, as in the thesis"
    );
    assert!(stdout.contains("classical tx/s, checkpoints every 200 ms / every 10 ms"), "{stdout}");
}

#[test]
fn lersch_cleaner_sweeps_the_cleaner_interval_for_both_cleaners() {
    let (table, stdout) = run("lersch-cleaner");
    let p = |ms: &str, k: &str| (ms.to_string(), k.to_string());
    assert_eq!(
        points(&table, "cleaner_ms"),
        [p("10", "classical"), p("10", "decoupled"), p("200", "classical"), p("200", "decoupled")]
    );
    assert!(table
        .rows
        .iter()
        .all(|r| r[table.col("log_archive")] == "on" && r[table.col("checkpoint_ms")] == "1000"));
    assert!(stdout.contains("decoupled / classical tx/s over the intervals"), "{stdout}");
}

#[test]
fn lersch_experiments_reject_bad_input() {
    let scratch = Scratch::new("lersch-bad");
    for name in ["lersch-checkpoints", "lersch-cleaner"] {
        assert_usage_errors(
            &["experiment", name],
            &[
                &["--intervals", "0"],
                &["--intervals", "ten"],
                &["--branches", "0"],
                &["--threads", "0"],
                &["--repeat", "0"],
            ],
            &scratch.0,
        );
    }
}
