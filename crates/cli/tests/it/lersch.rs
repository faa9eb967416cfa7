//! `experiment lersch-checkpoints`, `experiment lersch-cleaner` and `experiment lersch-restart`
//! end to end at the smallest scale: the table, the checks, a CSV row per measurement naming its
//! interval and kind (or log size and restart mode), the charts; bad input exits with 2.

use std::process::Command;

use crate::common;

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
    assert_eq!(table.header_line(), swizzledb_lab::workloads::tpcb::CSV_COLUMNS);
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

/// Two small log sizes, one crash each: a classical and an instant restart per crash, the
/// instant one instant with pages deferred and its redo finished; the 1 GiB check says
/// it does not apply; nothing left in the scratch directory.
#[test]
fn lersch_restart_restarts_each_crash_classically_and_instantly() {
    let scratch = Scratch::new("lersch-restart");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args([
            "experiment",
            "lersch-restart",
            "--log-sizes",
            "256KiB,1MiB",
            "--records",
            "5000",
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
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("Lersch 2015") && stdout.contains("(paper: "), "{stdout}");
    assert!(stdout.contains("opens with RestartMode::Instant that were instant: 2 of 2"), "{stdout}");
    assert!(stdout.contains("not applicable at 1 MiB"), "{stdout}");
    let table = Table::read(&out.join("lersch-restart.csv"));
    assert_eq!(table.header_line(), swizzledb_lab::experiments::papers::lersch::restart::CSV_HEADER);
    for chart in ["lersch-restart", "lersch-restart-instant"] {
        assert!(out.join(format!("{chart}.png")).exists(), "{chart}.png");
    }
    let cell = |r: &Vec<String>, c: &str| r[table.col(c)].clone();
    let num =
        |r: &Vec<String>, c: &str| cell(r, c).parse::<f64>().unwrap_or_else(|e| panic!("{c}: {e}: {r:?}"));
    let mut points: Vec<(u64, String)> =
        table.rows.iter().map(|r| (num(r, "log_bytes_target") as u64, cell(r, "mode"))).collect();
    points.sort_unstable();
    let p = |b: u64, m: &str| (b, m.to_string());
    assert_eq!(
        points,
        [p(256 << 10, "classical"), p(256 << 10, "instant"), p(1 << 20, "classical"), p(1 << 20, "instant")]
    );
    for r in &table.rows {
        assert!(num(r, "log_bytes") >= num(r, "log_bytes_target"), "{r:?}");
        assert!(num(r, "open_secs") > 0.0 && num(r, "first_get_secs") > 0.0, "{r:?}");
        assert!(num(r, "archive_bytes") > 0.0 && num(r, "commits") > 0.0, "{r:?}");
        assert_eq!(cell(r, "records"), "5000");
        assert_eq!(cell(r, "losers"), "0", "the writer was idle at the kill");
        if cell(r, "mode") == "instant" {
            assert_eq!(cell(r, "instant"), "true", "{r:?}");
            assert!(num(r, "pages_deferred") > 0.0, "{r:?}");
            assert!(num(r, "redo_finished_secs") >= num(r, "open_secs"), "{r:?}");
            assert!(!cell(r, "redone_in_file").is_empty(), "{r:?}");
        } else {
            assert_eq!(cell(r, "instant"), "false", "{r:?}");
            assert_eq!(cell(r, "pages_deferred"), "0", "{r:?}");
            assert!(cell(r, "redo_finished_secs").is_empty(), "{r:?}");
            assert!(num(r, "analyzed") > 0.0 && num(r, "redone") > 0.0, "{r:?}");
        }
    }
    // Repetition 0: classical first.
    assert!(table
        .rows
        .iter()
        .all(|r| (cell(r, "mode") == "classical") == (cell(r, "opened_first") == "true")));
    scratch.assert_only_out_left();
}

#[test]
fn lersch_restart_rejects_bad_input() {
    let scratch = Scratch::new("lersch-restart-bad");
    assert_usage_errors(
        &["experiment", "lersch-restart"],
        &[&["--log-sizes", "1KiB"], &["--log-sizes", "lots"], &["--records", "0"], &["--repeat", "0"]],
        &scratch.0,
    );
}
