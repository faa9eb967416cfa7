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

/// The checks of `<dir>/<stem>.checks.json` whose `what` starts with `prefix`: (verdict, ours,
/// reason) each.
fn checks_named(dir: &Path, stem: &str, prefix: &str) -> Vec<(String, String, String)> {
    let path = dir.join(format!("{stem}.checks.json"));
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap();
    let field = |c: &serde_json::Value, f: &str| c[f].as_str().unwrap_or_default().to_string();
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| field(c, "what").starts_with(prefix))
        .map(|c| (field(c, "verdict"), field(c, "ours"), field(c, "reason")))
        .collect()
}

/// The cores this test may run on, as the commands count them.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `bench emulator --all-miss` checks Fig. 13's "scales with the threads" against the speedup
/// the cores allow from the fewest threads to the most. Where the fewest already fill the cores
/// (`--threads 1,2,4` on one core, as `reproduce --only ding:13` runs under `taskset -c 0`), the
/// cores allow none, and the check held (✓) whenever the throughput did not fall by 30%: a
/// pass the run cannot show. It is ~ now, saying the cores cannot show it.
#[test]
fn the_emulators_scaling_check_does_not_pass_where_the_cores_cannot_show_it() {
    let scratch = Scratch::new("am-emu-scaling");
    let out = scratch.0.join("out");
    let (few, many) = (cores(), cores() + 1);
    let o = Command::new(BIN)
        .args(["bench", "emulator", "--all-miss", "--threads", &format!("{few},{many}")])
        .args(["--variant", "distlock", "--data-pages", "40000", "--buffer-pages", "2000"])
        .args(["--partitions", "4", "--free-lists", "4", "--reclaim", "16", "--duration", "0.05"])
        .args(["--warmup", "0", "--repeat", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let scaling = checks_named(&out, "emulator", "distlock: accesses/s at");
    assert_eq!(scaling.len(), 1, "{}", text(&o));
    let (verdict, ours, reason) = &scaling[0];
    assert_eq!(verdict, "partial", "{few} and {many} threads on {few} cores: {ours} — {reason}");
    assert!(reason.contains("cannot show"), "{reason}");
}

/// `experiment ding-lock-hold` checks that the largest batch size's lock time is within 25% of
/// the sweep's lowest (Fig. 4: "64 is enough"). With one batch size the sweep's lowest is that
/// size's own time, and the check held (✓, "74.7 ns vs the lowest 74.7 ns") on no comparison at
/// all. It says there is not enough data now (~), and names the option that gives it.
#[test]
fn the_lock_hold_sweep_check_needs_two_batch_sizes() {
    let scratch = Scratch::new("am-lock-hold-one");
    let out = scratch.0.join("out");
    let o = Command::new(BIN)
        .args(["experiment", "ding-lock-hold", "--records", "20000", "--batch-sizes", "64"])
        .args(["--thread-counts", "1", "--duration", "0.05", "--warmup", "0", "--repeat", "1"])
        .args(["--mode", "traditional", "--fraction", "25%", "--dir"])
        .arg(&scratch.0)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let sweep = checks_named(&out, "ding-lock-hold", "lock ns per access at batch 64 against the lowest");
    assert_eq!(sweep.len(), 1, "{}", text(&o));
    let (verdict, ours, reason) = &sweep[0];
    assert_ne!(verdict, "holds", "one batch size: {ours} — {reason}");
    assert!(reason.contains("not enough data") && reason.contains("--batch-sizes"), "{reason}");
}
