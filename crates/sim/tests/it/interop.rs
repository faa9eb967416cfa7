//! libCacheSim's trace formats (oracleGeneral, CSV, txt), zstd input and format detection, each
//! written by hand to the layout documented in docs/trace-format.md.

use std::io::Cursor;
use swizzledb_sim::{
    next_access, resolve, write_oracle_general, CsvSpec, Input, Layout, OracleRecord, PolicyKind,
    ReadOptions, Request, RequestReader, SimPool, Trace, TraceError, TraceFormat, ENGINE_TRACE_MAGIC,
};

fn input(bytes: Vec<u8>, file_name: Option<&str>) -> Input {
    Input::from_reader(Cursor::new(bytes), "test input", file_name).unwrap()
}

fn read(
    bytes: Vec<u8>,
    file_name: Option<&str>,
    options: &ReadOptions,
) -> Result<(Vec<Request>, u64), TraceError> {
    let input = input(bytes, file_name);
    let layout = resolve(&input, options)?;
    RequestReader::new(input, layout, options)?.collect()
}

fn with(format: TraceFormat) -> ReadOptions {
    ReadOptions { format: Some(format), ..ReadOptions::default() }
}

/// One oracleGeneral record, field by field as the layout says: u32 time, u64 id, u32 size,
/// i64 next access, little-endian, 24 bytes.
fn record(time: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&time.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&next.to_le_bytes());
    assert_eq!(b.len(), 24);
    b
}

/// LRU misses with `frames` frames, by a list kept in recency order: the oracle.
fn naive_lru_misses(ids: &[u64], frames: usize) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    let mut misses = 0;
    for &id in ids {
        if let Some(p) = stack.iter().position(|&x| x == id) {
            stack.remove(p);
        } else {
            misses += 1;
            if stack.len() == frames {
                stack.remove(0);
            }
        }
        stack.push(id);
    }
    misses
}

fn lru_misses(trace: &Trace, frames: u32) -> u64 {
    SimPool::for_kind(PolicyKind::Lru, frames, trace.page_slots(), 0).run(trace.refs()).unwrap().misses
}

const IDS: [u64; 12] = [1, 2, 3, 1, 4, 1, 2, 5, 3, 1, 6, 2];

#[test]
fn oracle_general_written_by_hand_reads_back_and_misses_like_lru() {
    let mut bytes = Vec::new();
    for (i, &id) in IDS.iter().enumerate() {
        // Huge ids, to check all 8 bytes are read.
        bytes.extend(record(100 + i as u32, id << 40 | 7, 4096, -1));
    }
    let (reqs, skipped) = read(bytes.clone(), None, &with(TraceFormat::OracleGeneral)).unwrap();
    assert_eq!(skipped, 0);
    let expected: Vec<Request> = IDS
        .iter()
        .enumerate()
        .map(|(i, &id)| Request { time: 100 + i as u64, id: id << 40 | 7, size: 4096 })
        .collect();
    assert_eq!(reqs, expected);

    // The same reference string in SwizzleDB's text format gives the same dense trace.
    let text: String = IDS.iter().map(|id| format!("{}\n", id << 40 | 7)).collect();
    let from_text = swizzledb_sim::read_text(text.as_bytes(), "text").unwrap();
    let input = input(bytes, Some("t.oracleGeneral.bin"));
    let layout = resolve(&input, &ReadOptions::default()).unwrap();
    assert_eq!(layout, Layout::OracleGeneral, "detected by name");
    let (trace, _) =
        RequestReader::new(input, layout, &ReadOptions::default()).unwrap().into_trace().unwrap();
    assert_eq!(trace, from_text);
    for frames in 1..=6 {
        assert_eq!(lru_misses(&trace, frames), naive_lru_misses(&IDS, frames as usize), "{frames} frames");
    }
}

#[test]
fn oracle_general_skips_records_of_size_zero() {
    let mut bytes = record(0, 5, 1, -1);
    bytes.extend(record(0, 6, 0, -1));
    bytes.extend(record(0, 5, 9, -1));
    let (reqs, skipped) = read(bytes, None, &with(TraceFormat::OracleGeneral)).unwrap();
    assert_eq!(reqs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![5, 5]);
    assert_eq!(skipped, 1);
}

#[test]
fn truncated_oracle_general_names_the_offset_and_sizes() {
    let mut bytes = record(1, 2, 3, -1);
    bytes.extend(record(1, 2, 3, -1));
    bytes.extend_from_slice(&[9; 7]);
    let err = read(bytes.clone(), None, &with(TraceFormat::OracleGeneral)).unwrap_err();
    assert!(
        matches!(err, TraceError::Truncated { offset: 48, expected: 24, found: 7, decompressed: false, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("offset 48") && msg.contains("expected 24 bytes, found 7"), "{msg}");

    // Compressed, the offset counts decompressed bytes and says so.
    let zst = ruzstd::encoding::compress_to_vec(&bytes[..], ruzstd::encoding::CompressionLevel::Fastest);
    let err = read(zst, None, &with(TraceFormat::OracleGeneral)).unwrap_err();
    assert!(err.to_string().contains("offset 48 of the decompressed data"), "{err}");
}

#[test]
fn export_then_import_round_trips_with_next_access_vtimes() {
    let reqs: Vec<Request> =
        IDS.iter().enumerate().map(|(i, &id)| Request { time: i as u64 / 3, id, size: 8192 }).collect();
    let mut out = Vec::new();
    assert_eq!(write_oracle_general(&mut out, &reqs, "buffer").unwrap(), 12);
    assert_eq!(out.len(), 12 * 24);
    // next access: the 1-based number of the next request to the same object, -1 if none.
    let nexts: Vec<i64> =
        out.chunks_exact(24).map(|c| OracleRecord::decode(c.try_into().unwrap()).next_access).collect();
    let mut oracle = vec![-1i64; IDS.len()];
    for i in 0..IDS.len() {
        if let Some(j) = (i + 1..IDS.len()).find(|&j| IDS[j] == IDS[i]) {
            oracle[i] = j as i64 + 1;
        }
    }
    assert_eq!(nexts, oracle);
    assert_eq!(nexts, vec![4, 7, 9, 6, -1, 10, 12, -1, -1, -1, -1, -1]);
    assert_eq!(next_access(&reqs), oracle);
    let (back, _) = read(out, None, &with(TraceFormat::OracleGeneral)).unwrap();
    assert_eq!(back, reqs);
}

#[test]
fn export_rejects_values_the_format_cannot_hold() {
    for (r, field) in [
        (Request { time: 1 << 32, id: 1, size: 1 }, "time"),
        (Request { time: 0, id: 1, size: 1 << 32 }, "size"),
        (Request { time: 0, id: 1, size: 0 }, "size"),
    ] {
        let mut out = Vec::new();
        let err =
            write_oracle_general(&mut out, &[Request { time: 0, id: 9, size: 1 }, r], "buffer").unwrap_err();
        assert!(matches!(err, TraceError::FieldOverflow { position: 1, .. }), "{err:?}");
        assert!(err.to_string().contains(field), "{err}");
        assert!(out.is_empty(), "nothing is written");
    }
}

fn csv(spec: &str) -> ReadOptions {
    ReadOptions { csv: Some(spec.parse().unwrap()), ..ReadOptions::default() }
}

#[test]
fn csv_with_and_without_header_reads_the_named_columns() {
    let with_header = "time,key,size\n1,alpha,100\n2,beta,200\n\n3.7,alpha,100\n";
    let (a, _) = read(
        with_header.into(),
        None,
        &csv("time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true"),
    )
    .unwrap();
    assert_eq!(a.iter().map(|r| (r.time, r.size)).collect::<Vec<_>>(), vec![(1, 100), (2, 200), (3, 100)]);
    assert_eq!(a[0].id, a[2].id, "the same string is the same object");
    assert_ne!(a[0].id, a[1].id);
    assert_eq!(a[0].id, swizzledb_sim::hash_id(b"alpha"));

    let without = "alpha;1\nbeta;2\n\"alpha\";3\n";
    let (b, _) = read(without.into(), Some("x.csv"), &csv("obj-id-col=1,delimiter=;")).unwrap();
    assert_eq!(b.iter().map(|r| r.id).collect::<Vec<_>>(), a.iter().map(|r| r.id).collect::<Vec<_>>());
    assert!(b.iter().all(|r| r.size == 1 && r.time == 0), "no size or time column: unit size, time 0");

    let numeric = "7\t1\n8\t0\n7\t5\n";
    let spec = "obj-id-col=1,obj-size-col=2,delimiter=\\t,obj-id-is-num=true";
    let (c, skipped) = read(numeric.into(), None, &csv(spec)).unwrap();
    assert_eq!(c.iter().map(|r| r.id).collect::<Vec<_>>(), vec![7, 7]);
    assert_eq!(skipped, 1, "size 0 is skipped");
}

#[test]
fn malformed_csv_lines_name_their_number_and_what_was_expected() {
    for (text, spec, line, needle) in [
        ("a,1\nb\n", "obj-id-col=1,obj-size-col=2", 2, "expected at least 2 fields"),
        ("1,2\n3,x\n", "obj-id-col=1,obj-size-col=2", 2, "obj-size-col"),
        ("id\n5\n", "obj-id-col=1,obj-id-is-num=true", 1, "has-header=true"),
        ("5\n6\n-7\n", "obj-id-col=1,obj-id-is-num=true", 3, "unsigned decimal"),
        ("a,1\n\"b,2\n", "obj-id-col=1", 2, "never closed"),
        ("a,1\n,2\n", "obj-id-col=1", 2, "empty"),
        ("a,zz\n", "obj-id-col=1,time-col=2", 1, "time-col"),
    ] {
        let err = read(text.into(), None, &csv(spec)).unwrap_err();
        match &err {
            TraceError::BadRecord { line: l, .. } => assert_eq!(*l, line, "{text:?}: {err}"),
            other => panic!("{text:?}: {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&format!("line {line}")) && msg.contains(needle), "{text:?}: {msg}");
    }
}

#[test]
fn txt_lines_are_string_ids_unless_numeric() {
    let text = "a\nb\n\na\r\n007\n7\n";
    let (reqs, _) = read(text.into(), None, &with(TraceFormat::Txt)).unwrap();
    let ids: Vec<u64> = reqs.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], ids[2], "a line ending of \\r\\n is not part of the id");
    assert_ne!(ids[3], ids[4], "\"007\" and \"7\" are different strings");

    let numeric = ReadOptions { numeric_ids: true, ..with(TraceFormat::Txt) };
    let (reqs, _) = read("007\n 7 \n8\n".into(), None, &numeric).unwrap();
    assert_eq!(reqs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![7, 7, 8]);
    let err = read("1\n2\nthree\n".into(), None, &numeric).unwrap_err();
    assert!(matches!(err, TraceError::BadRecord { line: 3, .. }), "{err:?}");
}

/// The fixture was written by the zstd command-line tool (`zstd -19 --check`) from 12 records:
/// ids IDS[i] * 1000003, times 10 + i, sizes 512 * (1 + IDS[i] % 3), next-access vtimes.
#[test]
fn a_zstd_cli_fixture_decodes_to_its_records() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small.oracleGeneral.bin.zst");
    let input = Input::open(&path).unwrap();
    assert!(input.is_zstd());
    assert_eq!(input.file_name(), Some("small.oracleGeneral.bin"), "the .zst suffix is dropped");
    let layout = resolve(&input, &ReadOptions::default()).unwrap();
    assert_eq!(layout, Layout::OracleGeneral);
    let (reqs, _) = RequestReader::new(input, layout, &ReadOptions::default()).unwrap().collect().unwrap();
    let expected: Vec<Request> = IDS
        .iter()
        .enumerate()
        .map(|(i, &id)| Request { time: 10 + i as u64, id: id * 1_000_003, size: 512 * (1 + id % 3) })
        .collect();
    assert_eq!(reqs, expected);
}

#[test]
fn a_wrong_zstd_content_checksum_is_an_error() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small.oracleGeneral.bin.zst");
    let mut data = std::fs::read(path).unwrap();
    // The frame ends with its 4-byte content checksum (zstd --check).
    *data.last_mut().unwrap() ^= 1;
    // So small a file is decoded whole when the input is opened (to look at its first bytes).
    let err = Input::from_reader(Cursor::new(data), "flipped", None).unwrap_err();
    assert!(matches!(err, TraceError::Zstd { .. }) && err.to_string().contains("checksum"), "{err:?}");
}

#[test]
fn zstd_streams_of_several_frames_and_skippable_frames_decode_whole() {
    let level = ruzstd::encoding::CompressionLevel::Fastest;
    let (first, second) = ("1\n2\n3\n", "2\n1\n4\n");
    let mut data = ruzstd::encoding::compress_to_vec(first.as_bytes(), level);
    // A skippable frame: magic 0x184D2A50..5F, a 4-byte length, that many bytes.
    data.extend_from_slice(&[0x53, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 0xAA, 0xBB, 0xCC]);
    data.extend(ruzstd::encoding::compress_to_vec(second.as_bytes(), level));
    let (reqs, _) = read(data, Some("t.txt.zst"), &ReadOptions::default()).unwrap();
    assert_eq!(reqs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![1, 2, 3, 2, 1, 4]);
}

#[test]
fn bad_zstd_data_is_an_error_not_a_panic() {
    let level = ruzstd::encoding::CompressionLevel::Fastest;
    let text: String = (0..5000).map(|i| format!("{}\n", i * 7919 % 1000)).collect();
    let data = ruzstd::encoding::compress_to_vec(text.as_bytes(), level);
    for cut in [5, data.len() / 2, data.len() - 1] {
        let result = Input::from_reader(Cursor::new(data[..cut].to_vec()), "cut", None).and_then(|input| {
            let layout = resolve(&input, &ReadOptions::default())?;
            RequestReader::new(input, layout, &ReadOptions::default())?.collect()
        });
        let err = result.unwrap_err();
        assert!(matches!(err, TraceError::Zstd { .. }), "cut at {cut}: {err:?}");
        assert!(err.to_string().contains("zstd -t"), "{err}");
    }
    let err = Input::from_reader(Cursor::new(b"1\n2\n".to_vec()), "plain", Some("t.txt.zst")).unwrap_err();
    assert!(err.to_string().contains("28 B5 2F FD"), "{err}");
}

#[test]
fn detection_follows_the_documented_rules() {
    let opts = ReadOptions::default();
    let layout = |bytes: &[u8], name: Option<&str>, o: &ReadOptions| resolve(&input(bytes.to_vec(), name), o);
    let mut engine = ENGINE_TRACE_MAGIC.to_vec();
    engine.extend([0; 24]);
    assert_eq!(layout(&engine, Some("x.csv"), &opts).unwrap(), Layout::EngineBinary, "magic first");
    assert_eq!(layout(&engine, None, &with(TraceFormat::SwizzleDb)).unwrap(), Layout::EngineBinary);
    assert_eq!(layout(b"1\n", None, &with(TraceFormat::SwizzleDb)).unwrap(), Layout::SwizzleDbText);
    let og = record(0, 1, 1, -1);
    assert_eq!(layout(&og, Some("a.oracleGeneral"), &opts).unwrap(), Layout::OracleGeneral);
    assert_eq!(layout(&og, Some("A.ORACLEGENERAL.bin"), &opts).unwrap(), Layout::OracleGeneral);
    assert!(layout(&og, Some("a.oracleGeneralOpNS"), &opts).unwrap_err().to_string().contains("OpNS"));
    assert!(layout(&og, None, &opts).unwrap_err().to_string().contains("--format"), "binary, no name");
    assert!(layout(&og, Some("a.bin"), &opts).is_err());
    assert!(layout(b"a,1\n", Some("a.csv"), &opts).unwrap_err().to_string().contains("--csv-spec"));
    assert_eq!(layout(b"a,1\n", Some("a.csv"), &csv("obj-id-col=1")).unwrap(), Layout::Csv);
    assert_eq!(layout(b"a,1\n", None, &csv("obj-id-col=1")).unwrap(), Layout::Csv, "a spec implies CSV");
    let spec_and_txt = ReadOptions { format: Some(TraceFormat::Txt), ..csv("obj-id-col=1") };
    assert!(layout(b"a\n", None, &spec_and_txt).is_err());
    assert!(layout(b"a\n", None, &with(TraceFormat::Csv)).is_err(), "CSV needs a spec");
    assert_eq!(layout(b"1\n2\n", Some("t.txt"), &opts).unwrap(), Layout::SwizzleDbText);
    assert_eq!(layout(b"", None, &opts).unwrap(), Layout::SwizzleDbText, "empty is empty text");
    assert_eq!(layout(b"a\n", Some("t.txt"), &with(TraceFormat::Txt)).unwrap(), Layout::Txt);
    for (name, format) in [
        ("auto", None),
        ("swizzledb", Some(TraceFormat::SwizzleDb)),
        ("oracle-general", Some(TraceFormat::OracleGeneral)),
        ("oracleGeneral", Some(TraceFormat::OracleGeneral)),
        ("csv", Some(TraceFormat::Csv)),
        ("TXT", Some(TraceFormat::Txt)),
    ] {
        if let Some(f) = format {
            assert_eq!(name.parse::<TraceFormat>().unwrap(), f);
            assert_eq!(f.to_string().parse::<TraceFormat>().unwrap(), f);
        } else {
            assert!(name.parse::<TraceFormat>().is_err(), "auto is the command line's, not a format");
        }
    }
    assert!("lcs".parse::<CsvSpec>().is_err());
}

proptest::proptest! {
    /// Arbitrary bytes, in every layout and as zstd data, give requests or an error: never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        body in proptest::collection::vec(proptest::prop_oneof![proptest::num::u8::ANY, proptest::sample::select(vec![b'\n', b',', b'"', b'0', b'7'])], 0..400),
        zstd in proptest::bool::ANY,
    ) {
        let mut bytes = if zstd { swizzledb_sim::ZSTD_MAGIC.to_vec() } else { Vec::new() };
        bytes.extend(&body);
        for options in [
            with(TraceFormat::OracleGeneral),
            with(TraceFormat::SwizzleDb),
            with(TraceFormat::Txt),
            ReadOptions { numeric_ids: true, ..with(TraceFormat::Txt) },
            csv("time-col=3,obj-id-col=1,obj-size-col=2,has-header=true"),
            csv("obj-id-col=2,obj-id-is-num=true,delimiter=\\t"),
            ReadOptions::default(),
        ] {
            let result = Input::from_reader(Cursor::new(bytes.clone()), "arbitrary", Some("x.oracleGeneral"))
                .and_then(|input| {
                    let layout = resolve(&input, &options)?;
                    RequestReader::new(input, layout, &options)?.collect()
                });
            if let Ok((reqs, _)) = result {
                proptest::prop_assert!(reqs.len() <= bytes.len());
            }
        }
    }
}

proptest::proptest! {
    /// Valid zstd data with one byte changed decodes to something or fails with an error.
    #[test]
    fn corrupted_zstd_never_panics(at in 0usize..10_000, value in proptest::num::u8::ANY) {
        let text: String = (0..3000).map(|i| format!("{}\n", i * 7919 % 997)).collect();
        let mut data =
            ruzstd::encoding::compress_to_vec(text.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest);
        let at = at % data.len();
        data[at] = value;
        let options = with(TraceFormat::SwizzleDb);
        let _ = Input::from_reader(Cursor::new(data), "corrupted", None).and_then(|input| {
            let layout = resolve(&input, &options)?;
            RequestReader::new(input, layout, &options)?.collect()
        });
    }
}
