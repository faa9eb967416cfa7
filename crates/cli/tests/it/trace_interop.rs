//! `swizzledb trace analyze` and `trace export` with libCacheSim's formats, zstd and standard
//! input, end to end (layouts in docs/trace-format.md).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common;

use common::{Scratch, BIN};

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        // The child may stop reading early on bad input; a broken pipe is not the test's failure.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

const SIZES: &str = "4,16,64,256";
const POLICIES: &str = "lru,fifo,clock,sieve,arc";

/// Runs `trace analyze` on `input` (with `extra` options) and returns miss-ratio.csv's rows.
fn curve(scratch: &Scratch, name: &str, input: &str, extra: &[&str], stdin: Option<&[u8]>) -> Vec<String> {
    let out = scratch.0.join(name);
    let mut args = vec!["trace", "analyze", "--input", input, "--sizes", SIZES, "--policies", POLICIES];
    args.extend(extra);
    args.extend(["--out", p(&out)]);
    let o = run(&args, stdin);
    assert!(o.status.success(), "{name}: {}\n{}", text(&o.stdout), text(&o.stderr));
    let csv = std::fs::read_to_string(out.join("miss-ratio.csv")).unwrap();
    let rows: Vec<String> = csv.lines().map(str::to_string).collect();
    assert_eq!(rows.len(), 1 + 6 * 4, "{name}: header, OPT and 5 policies at 4 sizes");
    rows
}

/// oracleGeneral records: (time, id, size, next access).
fn records(bytes: &[u8]) -> Vec<(u32, u64, u32, i64)> {
    assert_eq!(bytes.len() % 24, 0);
    bytes
        .chunks_exact(24)
        .map(|c| {
            (
                u32::from_le_bytes(c[0..4].try_into().unwrap()),
                u64::from_le_bytes(c[4..12].try_into().unwrap()),
                u32::from_le_bytes(c[12..16].try_into().unwrap()),
                i64::from_le_bytes(c[16..24].try_into().unwrap()),
            )
        })
        .collect()
}

/// The 1-based number of the next request to the same id, or -1.
fn next_accesses(ids: &[u64]) -> Vec<i64> {
    (0..ids.len())
        .map(|i| (i + 1..ids.len()).find(|&j| ids[j] == ids[i]).map_or(-1, |j| j as i64 + 1))
        .collect()
}

#[test]
fn exported_oracle_general_gives_the_same_miss_ratios_from_a_file_and_from_stdin() {
    let scratch = Scratch::new("interop-export");
    let trace = scratch.0.join("t.txt");
    let g = run(
        &[
            "trace",
            "generate",
            "--pattern",
            "zipf:0.8@70%+loop:90",
            "--pages",
            "300",
            "--refs",
            "3000",
            "--out",
            p(&trace),
        ],
        None,
    );
    assert!(g.status.success(), "{}", text(&g.stderr));
    let og = scratch.0.join("t.oracleGeneral.bin");
    let e = run(&["trace", "export", "--input", p(&trace), "--oracle-general", p(&og)], None);
    assert!(e.status.success(), "{}", text(&e.stderr));

    let ids: Vec<u64> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.parse().unwrap())
        .collect();
    let recs = records(&std::fs::read(&og).unwrap());
    assert_eq!(recs.iter().map(|r| r.1).collect::<Vec<_>>(), ids, "object id = page id, in order");
    assert!(recs.iter().all(|r| r.0 == 0 && r.2 == 1), "a text trace has no times or sizes");
    assert_eq!(recs.iter().map(|r| r.3).collect::<Vec<_>>(), next_accesses(&ids));

    let own = curve(&scratch, "own", p(&trace), &[], None);
    assert_eq!(curve(&scratch, "og", p(&og), &[], None), own, "detected by the name");
    let bytes = std::fs::read(&og).unwrap();
    let piped = curve(&scratch, "stdin", "-", &["--format", "oracle-general"], Some(&bytes));
    assert_eq!(piped, own);
    let text_piped = std::fs::read(&trace).unwrap();
    assert_eq!(curve(&scratch, "stdin-text", "-", &[], Some(&text_piped)), own, "text on stdin by content");

    // To standard output and back in through standard input.
    let o = run(&["trace", "export", "--input", "-", "--oracle-general", "-"], Some(&text_piped));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, bytes);
}

#[test]
fn zstd_csv_and_txt_inputs_match_the_same_references_in_our_text_format() {
    let scratch = Scratch::new("interop-formats");
    // The zstd fixture of the sim crate: 12 records, ids below times 1000003.
    const IDS: [u64; 12] = [1, 2, 3, 1, 4, 1, 2, 5, 3, 1, 6, 2];
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/tests/fixtures/small.oracleGeneral.bin.zst");
    let plain = scratch.0.join("same.txt");
    std::fs::write(&plain, IDS.iter().map(|i| format!("{}\n", i * 1_000_003)).collect::<String>()).unwrap();
    let own = curve(&scratch, "own", p(&plain), &[], None);
    assert_eq!(curve(&scratch, "zst", p(&fixture), &[], None), own);
    let zst = std::fs::read(&fixture).unwrap();
    assert_eq!(curve(&scratch, "zst-stdin", "-", &["--format", "oracle-general"], Some(&zst)), own);

    let names = ["x", "y", "z", "x", "w", "x", "y", "v", "z", "x", "u", "y"];
    let csv = scratch.0.join("t.csv");
    let body: String = names.iter().enumerate().map(|(i, n)| format!("{i},\"{n}\",4096\n")).collect();
    std::fs::write(&csv, format!("time,key,size\n{body}")).unwrap();
    let spec = "time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true";
    assert_eq!(curve(&scratch, "csv", p(&csv), &["--csv-spec", spec], None), own);

    let txt = scratch.0.join("t.lines");
    std::fs::write(&txt, names.iter().map(|n| format!("{n}\n")).collect::<String>()).unwrap();
    assert_eq!(curve(&scratch, "txt", p(&txt), &["--format", "txt"], None), own);
}

#[test]
fn a_recorded_trace_exports_page_ids_page_sizes_and_seconds() {
    use swizzledb_buffer::{PoolMode, TraceEvent, TraceHeader, TraceWriter};
    use swizzledb_sync::LatchMode;
    let scratch = Scratch::new("interop-engine");
    let rec = scratch.0.join("rec.swzt");
    let header = TraceHeader { page_size: 8192, mode: PoolMode::Swizzling, frames: 8, start_unix_ns: 0 };
    let mut w = TraceWriter::create(&rec, &header).unwrap();
    // Two threads whose fixes interleave in time: (thread, seconds, page).
    let fixes = [(0u32, 0u64, 10u64), (1, 1, 11), (0, 2, 10), (1, 3, 12), (0, 4, 11), (1, 5, 10)];
    for (thread, s, page) in fixes.iter().filter(|f| f.0 == 0).chain(fixes.iter().filter(|f| f.0 == 1)) {
        w.write(&TraceEvent::fix(*thread, s * 1_000_000_000 + 5, *page, None, LatchMode::Shared, true))
            .unwrap();
    }
    w.finish().unwrap();

    let og = scratch.0.join("rec.og");
    let e = run(&["trace", "export", "--input", p(&rec), "--oracle-general", p(&og)], None);
    assert!(e.status.success(), "{}", text(&e.stderr));
    let recs = records(&std::fs::read(&og).unwrap());
    let ids: Vec<u64> = fixes.iter().map(|f| f.2).collect();
    let expected: Vec<(u32, u64, u32, i64)> =
        fixes.iter().zip(next_accesses(&ids)).map(|(f, next)| (f.1 as u32, f.2, 8192, next)).collect();
    assert_eq!(recs, expected, "merged by time, size = page size, time in seconds");

    let e =
        run(&["trace", "export", "--input", p(&rec), "--oracle-general", p(&og), "--object-size", "1"], None);
    assert!(e.status.success(), "{}", text(&e.stderr));
    assert!(records(&std::fs::read(&og).unwrap()).iter().all(|r| r.2 == 1));
    // --format oracle-general, since the name does not say it.
    let a = curve(&scratch, "rec", p(&rec), &[], None);
    assert_eq!(curve(&scratch, "og", p(&og), &["--format", "oracle-general"], None), a);
}

#[test]
fn malformed_inputs_are_usage_errors_naming_the_offset_or_line() {
    let scratch = Scratch::new("interop-bad");
    let mut og = Vec::new();
    for id in [1u64, 2] {
        og.extend(0u32.to_le_bytes());
        og.extend(id.to_le_bytes());
        og.extend(1u32.to_le_bytes());
        og.extend((-1i64).to_le_bytes());
    }
    og.extend([7u8; 7]);
    let cut = scratch.0.join("cut.oracleGeneral");
    std::fs::write(&cut, &og).unwrap();
    let bad_csv = scratch.0.join("bad.csv");
    std::fs::write(&bad_csv, "t,id\n1,5\n2\n").unwrap();
    let plain_zst = scratch.0.join("plain.txt.zst");
    std::fs::write(&plain_zst, "1\n2\n").unwrap();
    let binary = scratch.0.join("data.bin");
    std::fs::write(&binary, &og).unwrap();
    let spec = ["--csv-spec", "time-col=1,obj-id-col=2,has-header=true,obj-id-is-num=true"];
    /// Options after `trace analyze`, standard input, a text the error must hold.
    type Case<'a> = (Vec<&'a str>, Option<&'a [u8]>, &'a str);
    let cases: Vec<Case> = vec![
        (vec!["--input", p(&cut)], None, "offset 48"),
        (vec!["--input", p(&cut)], None, "expected 24 bytes, found 7"),
        (vec!["--input", "-", "--format", "oracle-general"], Some(&og), "offset 48"),
        (vec!["--input", p(&bad_csv), spec[0], spec[1]], None, "line 3"),
        (vec!["--input", p(&bad_csv)], None, "--csv-spec"),
        (vec!["--input", p(&bad_csv), "--csv-spec", "obj-id-col=0"], None, "number from 1"),
        (vec!["--input", p(&bad_csv), "--format", "parquet"], None, "parquet"),
        (vec!["--input", p(&bad_csv), "--format", "txt", spec[0], spec[1]], None, "--format csv"),
        (vec!["--input", p(&plain_zst)], None, "28 B5 2F FD"),
        (vec!["--input", p(&binary)], None, "--format"),
        (vec!["--input", "-", "--format", "txt", "--numeric-ids"], Some(b"1\nx\n"), "line 2"),
        (vec!["--pattern", "uniform", "--pages", "9", "--refs", "9", "--format", "txt"], None, "--pattern"),
    ];
    for (args, stdin, needle) in cases {
        let mut all = vec!["trace", "analyze", "--sizes", "4", "--policies", "lru"];
        all.extend(&args);
        let o = run(&all, stdin);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let o = run(&["trace", "export", "--input", "-", "--csv", p(&scratch.0.join("x.csv"))], Some(b"1\n"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = run(&["trace", "export", "--input", p(&cut), "--oracle-general", p(&scratch.0.join("o"))], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("offset 48"));
    let o =
        run(&["trace", "export", "--input", p(&cut), "--oracle-general", "-", "--object-size", "0"], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// docs/trace-format.md: a size or time that does not fit oracleGeneral's 32 bits "is an error
/// before anything is written". `trace export --oracle-general OUT` created OUT first, so the
/// refusal emptied a file already there and left an empty one. Now OUT is as it was, and an OUT
/// that cannot be written is refused as an unusable path (exit 3) without a file left beside it.
#[test]
fn a_refused_oracle_general_export_leaves_its_output_as_it_was() {
    let scratch = Scratch::new("interop-refused");
    let csv = scratch.0.join("sizes.csv");
    std::fs::write(&csv, "1,5000000000\n2,10\n").unwrap();
    let out = scratch.0.join("out.bin");
    std::fs::write(&out, b"an earlier export").unwrap();
    let spec = ["--csv-spec", "obj-id-col=1,obj-size-col=2,obj-id-is-num=true"];
    let o =
        run(&["trace", "export", "--input", p(&csv), spec[0], spec[1], "--oracle-general", p(&out)], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("5000000000"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), b"an earlier export");
    let o = run(
        &["trace", "export", "--input", p(&csv), spec[0], spec[1], "--oracle-general", p(&scratch.0)],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let mut left: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["out.bin", "sizes.csv"], "no partial file is left");

    // A trace that fits replaces it.
    std::fs::write(&csv, "1,4096\n2,10\n1,4096\n").unwrap();
    let o =
        run(&["trace", "export", "--input", p(&csv), spec[0], spec[1], "--oracle-general", p(&out)], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&std::fs::read(&out).unwrap());
    assert_eq!(recs.iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(), [(1, 4096), (2, 10), (1, 4096)]);
}
