//! `swizzledb trace generate` and `swizzledb trace analyze`, end to end on small traces.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::{Scratch, BIN};

fn run(args: &[&str], paths: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (flag, path) in paths {
        cmd.arg(flag).arg(path);
    }
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (policy, cache_pages) -> (requests, misses, miss_ratio) from miss-ratio.csv.
fn read_curve(dir: &Path) -> Vec<(String, u64, u64, u64, f64)> {
    let csv = std::fs::read_to_string(dir.join("miss-ratio.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), "policy,cache_pages,requests,misses,miss_ratio");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 5, "{l}");
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

const PATTERN: &str = "zipf:0.9@70%+scan@30%";

#[test]
fn generate_then_analyze_writes_curves_histogram_and_plot() {
    let scratch = Scratch::new("analyze");
    let trace = scratch.0.join("zipf.txt");
    let g = run(
        &["trace", "generate", "--pattern", PATTERN, "--pages", "2000", "--refs", "20000", "--seed", "5"],
        &[("--out", &trace)],
    );
    assert!(g.status.success(), "{}", text(&g.stderr));
    let body = std::fs::read_to_string(&trace).unwrap();
    assert!(body.starts_with("# "), "the file names its command in a comment");
    assert_eq!(body.lines().filter(|l| !l.starts_with('#')).count(), 20_000);

    let out = scratch.0.join("results");
    let a =
        run(&["trace", "analyze", "--sizes", "10,100,1000,5000"], &[("--input", &trace), ("--out", &out)]);
    let stdout = text(&a.stdout);
    assert!(a.status.success(), "{stdout}\n{}", text(&a.stderr));
    assert!(stdout.contains("check: OPT has the fewest misses at every size: ok"), "{stdout}");
    assert!(stdout.contains("stack-distance LRU curve equals the simulated lru"), "{stdout}");

    let rows = read_curve(&out);
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert!(names.contains(&"opt".to_string()) && names.contains(&"lru".to_string()));
    // Every policy of the build (the table lists them) at each of the 4 sizes, and OPT.
    assert_eq!(rows.len() % 4, 0);
    assert!(rows.len() >= 4 * 3);
    for (policy, size, requests, misses, ratio) in &rows {
        assert_eq!(*requests, 20_000);
        assert!((ratio - *misses as f64 / 20_000.0).abs() < 1e-12);
        let opt = rows.iter().find(|r| r.0 == "opt" && r.1 == *size).unwrap().3;
        assert!(opt <= *misses, "{policy} at {size}: {misses} < OPT {opt}");
        assert!(stdout.contains(policy.as_str()), "{policy} missing from the table");
    }
    // At 5000 pages (more than the 2000 pages) only cold misses remain.
    let distinct = rows.iter().find(|r| r.0 == "opt" && r.1 == 5000).unwrap().3;
    assert!(rows.iter().filter(|r| r.1 == 5000).all(|r| r.3 == distinct));

    let hist = std::fs::read_to_string(out.join("stack-distance.csv")).unwrap();
    let mut lines = hist.lines();
    assert_eq!(lines.next().unwrap(), "distance_min,distance_max,references,lru_misses,lru_miss_ratio");
    let body: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let last = body.last().unwrap();
    assert_eq!((last[0], last[1], last[2].parse::<u64>().unwrap()), ("inf", "inf", distinct));
    let total: u64 = body.iter().map(|f| f[2].parse::<u64>().unwrap()).sum();
    assert_eq!(total, 20_000, "every reference has one distance");
    // LRU's misses at a bucket's end agree with the simulated lru where that end is a size.
    let mut matched = 0;
    for f in &body {
        if let Some(r) = rows.iter().find(|r| r.0 == "lru" && r.1.to_string() == f[1]) {
            assert_eq!(f[3].parse::<u64>().unwrap(), r.3);
            matched += 1;
        }
    }
    assert!(matched >= 2, "sizes 10 and 100 are exact rows");
    for ext in ["svg", "png"] {
        assert!(out.join(format!("miss-ratio.{ext}")).metadata().unwrap().len() > 1000);
    }
}

#[test]
fn a_pattern_analyzed_directly_matches_its_generated_file() {
    let scratch = Scratch::new("direct");
    let trace = scratch.0.join("t.txt");
    let common =
        ["--pattern", "drift:50:300@60%+loop:120", "--pages", "400", "--refs", "8000", "--seed", "9"];
    let g = run(&[&["trace", "generate"][..], &common].concat(), &[("--out", &trace)]);
    assert!(g.status.success(), "{}", text(&g.stderr));
    let (from_file, direct) = (scratch.0.join("file"), scratch.0.join("direct"));
    let sizes = ["--sizes", "16,64,256", "--policies", "lru,fifo,clock,sieve"];
    let a = run(&[&["trace", "analyze"][..], &sizes].concat(), &[("--input", &trace), ("--out", &from_file)]);
    let b = run(&[&["trace", "analyze"][..], &sizes, &common].concat(), &[("--out", &direct)]);
    assert!(a.status.success() && b.status.success(), "{}{}", text(&a.stderr), text(&b.stderr));
    // Dense remapping of the file's ids changes no count.
    assert_eq!(read_curve(&from_file), read_curve(&direct));
    assert_eq!(read_curve(&direct).len(), 5 * 3);
}

#[test]
fn generate_is_deterministic_under_its_seed() {
    let scratch = Scratch::new("seed");
    let files: Vec<String> = ["1", "1", "2"]
        .iter()
        .enumerate()
        .map(|(i, seed)| {
            let path = scratch.0.join(format!("{i}.txt"));
            let g = run(
                &[
                    "trace",
                    "generate",
                    "--pattern",
                    "zipf:1.1",
                    "--pages",
                    "100",
                    "--refs",
                    "1000",
                    "--seed",
                    seed,
                ],
                &[("--out", &path)],
            );
            assert!(g.status.success(), "{}", text(&g.stderr));
            std::fs::read_to_string(path).unwrap()
        })
        .collect();
    assert_eq!(files[0], files[1]);
    assert_ne!(files[0], files[2]);
}

#[test]
fn bad_input_is_a_usage_error_with_a_message() {
    let scratch = Scratch::new("bad");
    let bad_trace = scratch.0.join("bad.txt");
    std::fs::write(&bad_trace, "1\n2\n# comment\nthree\n").unwrap();
    let empty_trace = scratch.0.join("empty.txt");
    std::fs::write(&empty_trace, "# nothing\n\n").unwrap();
    let missing = scratch.0.join("missing.txt");
    let gen = ["--pattern", "uniform", "--pages", "10", "--refs", "100"];
    let cases: Vec<(Vec<&str>, Option<&Path>, &str)> = vec![
        (vec!["--sizes", ""], Some(&bad_trace), "empty cache size"),
        (vec!["--sizes", "100,0"], Some(&bad_trace), "at least 1"),
        (vec!["--policies", "lru,lfu"], Some(&bad_trace), "lfu"),
        (vec![], None, "--input"),
        (vec!["--pattern", "uniform"], None, "--pages"),
        (vec!["--pattern", "zipf:-2", "--pages", "10", "--refs", "10"], None, "exponent"),
        (vec!["--pattern", "loop:20", "--pages", "10", "--refs", "10"], None, "loop:20 needs 20 pages"),
        (gen.to_vec(), Some(&bad_trace), "cannot be used with"),
        (vec![], Some(&bad_trace), "line 4"),
        (vec![], Some(&empty_trace), "no references"),
    ];
    for (extra, input, needle) in cases {
        let mut args = vec!["trace", "analyze"];
        args.extend(&extra);
        let paths: Vec<(&str, &Path)> = input.map(|p| ("--input", p)).into_iter().collect();
        let o = run(&args, &paths);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains("error") && stderr.contains(needle), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{extra:?}: {stderr}");
    }
    let g = run(
        &["trace", "generate", "--pattern", "scan:50", "--pages", "10", "--refs", "5"],
        &[("--out", &scratch.0.join("never.txt"))],
    );
    assert_eq!(g.status.code(), Some(2), "{}", text(&g.stderr));
    assert!(!scratch.0.join("never.txt").exists(), "bad input writes nothing");

    // An input that cannot be read and an output that cannot be written are exit 3, as for the
    // admin commands (README "Exit codes"); each names the path.
    let blocker = scratch.0.join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let unwritable = blocker.join("out");
    let good = ["--pattern", "uniform", "--pages", "10", "--refs", "100"];
    let cases: [(&[&str], (&str, &Path), &str); 3] = [
        (&[], ("--input", &missing), "missing.txt"),
        (&[], ("--input", &scratch.0), "bad"),
        (&good, ("--out", &unwritable), "a-file"),
    ];
    for (extra, path, needle) in cases {
        let paths = [path];
        let mut args = vec!["trace", "analyze"];
        args.extend(extra);
        let o = run(&args, &paths);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{extra:?} {paths:?}: {stderr}");
        assert!(stderr.contains("error") && stderr.contains(needle), "{paths:?}: {stderr}");
    }
    let g = run(
        &["trace", "generate", "--pattern", "scan:5", "--pages", "10", "--refs", "50"],
        &[("--out", &unwritable)],
    );
    assert_eq!(g.status.code(), Some(3), "{}", text(&g.stderr));
    assert!(text(&g.stderr).contains("a-file"), "{}", text(&g.stderr));
}

/// `trace record` checked that it could write `--out` by creating the file and removing it,
/// before the command ran: a file already there (an older trace, or a database named by
/// mistake) was emptied and removed, even when the command then opened no database ("no trace
/// was written"). A file there is now left as it is.
#[test]
fn record_leaves_an_existing_out_file_when_no_trace_replaces_it() {
    let scratch = Scratch::new("record-keeps");
    let old = scratch.0.join("old.swzt");
    std::fs::write(&old, b"an older trace").unwrap();
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&old)
        .args(["--", "verify"])
        .arg(scratch.0.join("missing.swz"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no trace was written"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&old).unwrap(), b"an older trace");

    // The database the command reads, named as --out by mistake, is still there to read.
    let db_path = scratch.0.join("db.swz");
    let db = swizzledb::Database::builder().create(&db_path).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let before = std::fs::read(&db_path).unwrap();
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&db_path)
        .args(["--", "stat"])
        .arg(&db_path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&db_path).unwrap(), before);
    // stat opened the database, but no command outside the lab's is traced: the note says so
    // (it said "The command opened no database").
    let err = text(&o.stderr);
    assert!(err.contains("no trace was written") && err.contains("bench, experiment and demo"), "{err}");
    // A missing --out is still probed and not left behind, and one that cannot be written
    // still fails before the command runs.
    let new = scratch.0.join("new.swzt");
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&new)
        .args(["--", "stat"])
        .arg(&db_path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!new.exists());
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&scratch.0)
        .args(["--", "stat"])
        .arg(&db_path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("cannot write --out"), "{}", text(&o.stderr));
}

/// A recording of three databases (`t.swzt`, `t.swzt.1`, `t.swzt.2`) followed by one of a
/// single database left `t.swzt.1` and `t.swzt.2` of the first beside the new `t.swzt`, to be
/// taken for parts of the new recording. They are now removed, and said so; a numbered file
/// that is no trace is left as it is, and a recording that writes no trace removes nothing.
#[test]
fn record_removes_the_numbered_files_of_an_earlier_larger_recording() {
    let scratch = Scratch::new("record-stale");
    let trace = scratch.0.join("t.swzt");
    let record = |modes: &str| {
        Command::new(BIN)
            .args(["trace", "record", "--out"])
            .arg(&trace)
            .args(["--", "bench", "lookup", "--records", "2000", "--duration", "0.05", "--warmup", "0"])
            .args(["--repeat", "1", "--mode", modes, "--dir"])
            .arg(&scratch.0)
            .output()
            .unwrap()
    };
    let numbered = |n: u32| scratch.0.join(format!("t.swzt.{n}"));
    let o = record("all");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(numbered(1).exists() && numbered(2).exists(), "{}", text(&o.stderr));

    // A recording that writes no trace (the traced command is refused) removes nothing.
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&trace)
        .args(["--", "bench", "lookup", "--records", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(numbered(1).exists() && numbered(2).exists());

    let o = record("swizzling");
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(trace.exists());
    assert!(!numbered(1).exists() && !numbered(2).exists(), "files of the earlier recording left: {err}");
    assert!(
        err.contains(&format!("Removed {} of an earlier recording.", numbered(1).display()))
            && err.contains(&format!("Removed {} of an earlier recording.", numbered(2).display())),
        "{err}"
    );

    // A file of that name that is not a trace is the user's own: it stays.
    std::fs::write(numbered(1), b"notes").unwrap();
    let o = record("swizzling");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(numbered(1)).unwrap(), b"notes");
}

/// `trace export --csv` naming its own `--input` emptied the trace before reading it (the
/// recording lost, "truncated", exit 1): now a usage error that leaves it whole; so is
/// `--oracle-general` naming it, which replaced the recording with its export.
#[test]
fn export_refuses_to_write_its_csv_over_its_input() {
    let scratch = Scratch::new("export-self");
    let trace = scratch.0.join("t.swzt");
    let o = Command::new(BIN)
        .args(["trace", "record", "--out"])
        .arg(&trace)
        .args(["--", "bench", "lookup", "--records", "2000", "--duration", "0.05", "--warmup", "0"])
        .args(["--repeat", "1", "--mode", "swizzling", "--dir"])
        .arg(&scratch.0)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let before = std::fs::read(&trace).unwrap();
    let o = run(&["trace", "export"], &[("--input", &trace), ("--csv", &trace)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("is the input trace"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was changed");
    // The same file by another name.
    let other = scratch.0.join(".").join("t.swzt");
    let o = run(&["trace", "export"], &[("--input", &trace), ("--csv", &other)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was changed");
    // --oracle-general over its input replaced the recording with the export (exit 0).
    let o = run(&["trace", "export"], &[("--input", &trace), ("--oracle-general", &other)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("is the input trace"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was replaced");
}

/// `trace export --csv` exited 1 for every input it could not export: a missing input, a
/// directory, a file that is not a trace, a trace truncated by a killed recording, and an output
/// it could not create (README "Exit codes": 3 for a path that cannot be used, 2 for a malformed
/// trace, as `--oracle-general` and `trace analyze` answer), and a trace that failed halfway left
/// a partial CSV in place of the file there. Now the codes are the table's, and a failed export
/// leaves whatever was at `--csv` as it was.
#[test]
fn export_csv_answers_unusable_and_malformed_inputs_with_the_documented_codes() {
    use swizzledb_buffer::{PoolMode, TraceEvent, TraceHeader, TraceWriter};
    use swizzledb_sync::LatchMode;
    let scratch = Scratch::new("export-codes");
    let trace = scratch.0.join("t.swzt");
    let header = TraceHeader { page_size: 8192, mode: PoolMode::Swizzling, frames: 8, start_unix_ns: 0 };
    let mut w = TraceWriter::create(&trace, &header).unwrap();
    for i in 0..200u64 {
        w.write(&TraceEvent::fix(0, i, 1 + i % 7, None, LatchMode::Shared, true)).unwrap();
    }
    w.finish().unwrap();
    let whole = std::fs::read(&trace).unwrap();
    let cut = scratch.0.join("cut.swzt");
    std::fs::write(&cut, &whole[..whole.len() - 3]).unwrap();
    let text_file = scratch.0.join("pages.txt");
    std::fs::write(&text_file, "1\n2\n").unwrap();
    let blocker = scratch.0.join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let csv = scratch.0.join("out.csv");
    std::fs::write(&csv, "an earlier export\n").unwrap();

    let cases: [(&Path, &Path, i32, &str); 6] = [
        (&scratch.0.join("missing.swzt"), &csv, 3, "missing.swzt"),
        (&scratch.0, &csv, 3, "--input"),
        (&text_file, &csv, 2, "not a SwizzleDB trace"),
        (&cut, &csv, 2, "truncated"),
        (&trace, &blocker.join("out.csv"), 3, "a-file"),
        (&trace, &scratch.0, 3, "directory"),
    ];
    for (input, out, code, needle) in cases {
        let o = run(&["trace", "export"], &[("--input", input), ("--csv", out)]);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{input:?} -> {out:?}: {stderr}");
        assert!(stderr.contains("error") && stderr.contains(needle), "{input:?} -> {out:?}: {stderr}");
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "an earlier export\n", "{input:?}");
    }
    let left: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 5, "a partial CSV was left: {left:?}");

    // The whole trace replaces it.
    let o = run(&["trace", "export"], &[("--input", &trace), ("--csv", &csv)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().next(), Some("event,thread,page,parent,latch,hit,time_ns"));
    assert_eq!(rows.lines().count(), 201);
}
