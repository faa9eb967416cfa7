//! The commands on machines and setups unlike the developers' own: output and scratch
//! directories that exist but cannot be written, a temp directory (`TMPDIR`) that cannot be
//! used, degenerate option values, and the claim checks at sizes too small to show a claim.
//! Each test runs the smallest sizes the commands accept.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::{Scratch, BIN};

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A directory that exists and that no process can create files in, root included: `/proc`.
/// (`chmod 555` does not stop root, and a read-only mount needs privileges a test lacks.)
const UNWRITABLE: &str = "/proc";

/// An existing `--dir` that cannot be written is a path that cannot be used (README "Exit codes":
/// 3), refused before anything runs, as a `--dir` that cannot be created is. It was taken: `experiment
/// ding-buffer-sizes --dir DIR` failed after its start (exit 1, "I/O error on DIR/..."), and
/// `reproduce --dir DIR` exited 2 ("cannot use DIR for the figures' databases") or ran every figure
/// into a failure and exited 1 with a report of failed figures.
#[test]
fn an_existing_dir_that_cannot_be_written_is_refused_before_anything_runs() {
    assert!(Path::new(UNWRITABLE).is_dir());
    let scratch = Scratch::new("am-dir-unwritable");
    let out = scratch.0.join("out");
    let commands: [&[&str]; 4] = [
        &[
            "experiment",
            "ding-buffer-sizes",
            "--records",
            "20000",
            "--fractions",
            "50%",
            "--thread-counts",
            "1",
            "--duration",
            "0.05",
            "--warmup",
            "0",
            "--repeat",
            "1",
            "--mode",
            "traditional",
        ],
        &["bench", "lookup", "--records", "2000", "--duration", "0.05", "--warmup", "0", "--repeat", "1"],
        &["reproduce", "--tiny", "--only", "ding:10"],
        &["reproduce", "--tiny", "--only", "lersch-restart"],
    ];
    for args in commands {
        let o = Command::new(BIN).args(args).args(["--dir", UNWRITABLE, "--out"]).arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--dir") && err.contains(UNWRITABLE), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

/// `reproduce` without `--dir` keeps the figures' databases in the system temp directory; when
/// that cannot be written (`TMPDIR` names a directory no file can be made in), the run is refused
/// before anything runs (exit 3), naming it and saying to give `--dir`. It ran every figure into
/// a failure instead ("FAILED (exit Some(3)...)", exit 1) and left a report of failed figures.
#[test]
fn reproduce_refuses_a_temp_dir_that_cannot_be_written() {
    let scratch = Scratch::new("am-tmpdir-unwritable");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["reproduce", "--tiny", "--only", "lersch-restart", "--out"])
        .arg(&out)
        .env("TMPDIR", UNWRITABLE)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(UNWRITABLE) && err.contains("--dir"), "{err}");
    assert!(!out.exists(), "the refused run wrote {}", out.display());
}
