//! `swizzledb crash-test`: 50 SIGKILLs of a logged writer, each followed by a restart that must
//! keep every acknowledged commit, show nothing uncommitted and leave a valid tree (issue 6's CI
//! run; more with `--kills N`).

mod common;

use common::{assert_usage_errors, Scratch, BIN};
use std::process::Command;

fn summary(stdout: &str) -> Vec<(String, u64)> {
    let line = stdout.lines().find(|l| l.starts_with("kills=")).expect("a summary line");
    line.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_owned(), v.parse().expect("a count"))
        })
        .collect()
}

#[test]
fn fifty_kills_lose_nothing() {
    let scratch = Scratch::new("crash-fifty");
    let out = Command::new(BIN)
        .args(["crash-test", "--kills", "50", "--max-run-ms", "150", "--threads", "2", "--dir"])
        .arg(&scratch.0)
        .output()
        .expect("run swizzledb");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "crash-test failed:\n{stdout}\n{stderr}");
    let expect = [("kills", 50), ("lost_commits", 0), ("visible_uncommitted", 0), ("invalid_trees", 0)];
    assert_eq!(summary(&stdout), expect.map(|(k, v)| (k.to_owned(), v)).to_vec(), "{stdout}");
    let committed: u64 = stdout.split_whitespace().next().and_then(|n| n.parse().ok()).expect("a count");
    assert!(committed > 0, "the writers committed nothing: {stdout}");
}

#[test]
fn crash_test_rejects_bad_input() {
    let scratch = Scratch::new("crash-bad");
    assert_usage_errors(
        &["crash-test"],
        &[&["--kills", "0"], &["--threads", "0"], &["--mode", "fast"]],
        &scratch.0,
    );
}
