//! The trace's unit tests: round trips through the writer, the reader and what is derived
//! from a trace (B17), with the helpers they share. They sit above the files they test, so that
//! no file of the trace imports its tests' helpers.

use super::error::TraceError;
use super::export::{export_csv, page_references, CSV_HEADER};
use super::format::{
    EventKind, TraceEvent, TraceHeader, TraceSummary, BLOCK_BYTES, BLOCK_HEADER_LEN, HEADER_LEN,
};
use super::reader::TraceReader;
use super::writer::TraceWriter;
use crate::config::PoolMode;
use proptest::prelude::*;
use std::path::Path;
use swizzledb_sync::{LatchMode, PageId};

fn header() -> TraceHeader {
    TraceHeader { page_size: 8192, mode: PoolMode::Traditional, frames: 64, start_unix_ns: 12345 }
}

fn event_strategy() -> impl Strategy<Value = TraceEvent> {
    (
        0usize..6,
        0u32..4,
        any::<u64>(),
        0u64..PageId::LIMIT,
        proptest::option::of(0u64..PageId::LIMIT),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(k, thread, time_ns, page, parent, x, hit)| {
            let kind = EventKind::ALL[k];
            TraceEvent {
                kind,
                thread,
                time_ns,
                page: PageId::new(page).unwrap(),
                parent: parent.map(|p| PageId::new(p).unwrap()),
                latch: kind.has_latch().then_some(if x { LatchMode::Exclusive } else { LatchMode::Shared }),
                hit: (kind == EventKind::Fix).then_some(hit),
            }
        })
}

fn write_all(path: &Path, events: &[TraceEvent]) -> TraceSummary {
    let mut w = TraceWriter::create(path, &header()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish().unwrap()
}

fn read_all(path: &Path) -> Result<Vec<TraceEvent>, TraceError> {
    TraceReader::open(path)?.collect()
}

/// The reader yields each thread's events in the order written (threads interleave by
/// block), so compare per thread.
fn per_thread(events: &[TraceEvent]) -> std::collections::BTreeMap<u32, Vec<TraceEvent>> {
    let mut m = std::collections::BTreeMap::<u32, Vec<TraceEvent>>::new();
    for e in events {
        m.entry(e.thread).or_default().push(*e);
    }
    m
}

// The reader.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// B17: whatever is written (any timestamps, ids up to 2^63 - 1, any kinds) reads back
    /// identically, thread by thread, and the summary counts every event and byte.
    #[test]
    fn b17_writer_reader_round_trip(events in proptest::collection::vec(event_strategy(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swzt");
        let summary = write_all(&path, &events);
        prop_assert_eq!(summary.events, events.len() as u64);
        prop_assert_eq!(summary.bytes, std::fs::metadata(&path).unwrap().len());
        let back = read_all(&path).unwrap();
        prop_assert_eq!(back.len(), events.len());
        prop_assert_eq!(per_thread(&back), per_thread(&events));
        prop_assert_eq!(*TraceReader::open(&path).unwrap().header(), header());
    }

    /// Cutting a valid file anywhere after the header gives `Truncated` (or, at a block
    /// boundary, a shorter valid trace) — never a panic, never a wrong event.
    #[test]
    fn b17_any_prefix_is_truncated_or_a_prefix(
        events in proptest::collection::vec(event_strategy(), 1..60),
        cut in any::<proptest::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swzt");
        write_all(&path, &events);
        let bytes = std::fs::read(&path).unwrap();
        let n = HEADER_LEN + cut.index(bytes.len() - HEADER_LEN);
        std::fs::write(&path, &bytes[..n]).unwrap();
        let mut got = Vec::new();
        for e in TraceReader::open(&path).unwrap() {
            match e {
                Ok(e) => got.push(e),
                Err(TraceError::Truncated { .. }) => break,
                Err(other) => panic!("unexpected error {other}"),
            }
        }
        let want = per_thread(&events);
        for (t, evs) in per_thread(&got) {
            prop_assert_eq!(&want[&t][..evs.len()], &evs[..]);
        }
    }

    /// Random bytes after a valid header never panic the reader.
    #[test]
    fn b17_garbage_blocks_give_errors_not_panics(tail in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut bytes = header().encode().to_vec();
        bytes.extend_from_slice(&tail);
        let reader = TraceReader::from_reader(&bytes[..], "garbage").unwrap();
        for e in reader {
            if e.is_err() {
                break;
            }
        }
    }
}

/// Blocks are cut at 64 KiB: a long single-thread trace spans several blocks and reads back
/// in order.
#[test]
fn b17_many_blocks_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swzt");
    let events: Vec<_> = (0..100_000u64)
        .map(|i| TraceEvent::fix(0, i * 3, i * 7919 % 100_003, Some(i % 5), LatchMode::Shared, i % 3 == 0))
        .collect();
    let s = write_all(&path, &events);
    assert!(s.bytes > 3 * BLOCK_BYTES as u64, "several blocks: {} bytes", s.bytes);
    assert_eq!(read_all(&path).unwrap(), events);
    let refs: Vec<u64> = events.iter().map(|e| e.page.get()).collect();
    assert_eq!(page_references(&path).unwrap(), refs);
}

#[test]
fn b17_bad_files_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad");
    let open = |bytes: &[u8]| {
        std::fs::write(&p, bytes).unwrap();
        TraceReader::open(&p).map(|_| ())
    };
    assert!(matches!(open(b""), Err(TraceError::NotATrace { .. })));
    assert!(matches!(open(b"SWZ"), Err(TraceError::NotATrace { .. })));
    assert!(matches!(
        open(b"SWIZZLDB and more bytes to make up a header.."),
        Err(TraceError::NotATrace { .. })
    ));
    let mut h = header().encode();
    h[8] = 2;
    assert!(matches!(open(&h), Err(TraceError::Version { found: 2, expected: 1, .. })));
    let h = header().encode();
    assert!(matches!(open(&h[..20]), Err(TraceError::Truncated { what: "header", offset: 0, .. })));
    let mut h = header().encode();
    h[16] = 9;
    assert!(matches!(open(&h), Err(TraceError::Corrupt { offset: 16, .. })));
    assert!(TraceReader::open(dir.path().join("missing")).is_err_and(|e| matches!(e, TraceError::Io { .. })));

    // Block-level damage: one valid block of two events, then variations.
    let good = dir.path().join("good");
    write_all(
        &good,
        &[
            TraceEvent::fix(0, 5, 9, None, LatchMode::Shared, false),
            TraceEvent::fix(0, 6, 9, None, LatchMode::Shared, true),
        ],
    );
    let bytes = std::fs::read(&good).unwrap();
    let events = |bytes: &[u8]| -> Result<Vec<TraceEvent>, TraceError> {
        std::fs::write(&p, bytes).unwrap();
        read_all(&p)
    };
    assert_eq!(events(&bytes).unwrap().len(), 2);
    let b0 = HEADER_LEN as u64;
    assert!(
        matches!(events(&bytes[..HEADER_LEN + 7]), Err(TraceError::Truncated { what: "block header", offset, .. }) if offset == b0)
    );
    assert!(
        matches!(events(&bytes[..bytes.len() - 1]), Err(TraceError::Truncated { what: "block", offset, .. }) if offset == b0)
    );
    let mut more = bytes.clone();
    more[HEADER_LEN + 4] = 3; // claims 3 events: the third runs past the block
    assert!(matches!(events(&more), Err(TraceError::Corrupt { .. })));
    let mut fewer = bytes.clone();
    fewer[HEADER_LEN + 4] = 1; // claims 1 event: bytes left over
    assert!(events(&fewer).is_err_and(|e| e.to_string().contains("after the block's last event")));
    let mut tag = bytes.clone();
    tag[HEADER_LEN + BLOCK_HEADER_LEN] = 0x40; // reserved bit
    assert!(matches!(events(&tag), Err(TraceError::Corrupt { offset, .. }) if offset == b0 + 20));
    let mut kind = bytes.clone();
    kind[HEADER_LEN + BLOCK_HEADER_LEN] = 7; // no kind 7
    assert!(events(&kind).is_err_and(|e| e.to_string().contains("unknown event kind 7")));
    let mut huge = bytes.clone();
    huge[HEADER_LEN + 8..HEADER_LEN + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(events(&huge).is_err_and(|e| e.to_string().contains("block payload")));
}

// Reference strings and CSV.

#[test]
fn b17_csv_has_header_and_one_row_per_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swzt");
    let events = [
        TraceEvent::fix(1, 10, 4, Some(2), LatchMode::Exclusive, false),
        TraceEvent {
            kind: EventKind::Evict,
            thread: 1,
            time_ns: 12,
            page: PageId::new(4).unwrap(),
            parent: None,
            latch: None,
            hit: None,
        },
    ];
    write_all(&path, &events);
    let csv = dir.path().join("t.csv");
    assert_eq!(export_csv(&path, &csv).unwrap(), 2);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text, format!("{CSV_HEADER}\nfix,1,4,2,exclusive,miss,10\nevict,1,4,,,,12\n"));
}

#[test]
fn b17_page_references_merge_threads_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swzt");
    let fix = |t, ns, p| TraceEvent::fix(t, ns, p, None, LatchMode::Shared, true);
    // Thread 0 at t = 1, 4; thread 1 at t = 2, 3; and an unfix that must be ignored.
    let mut unfix = fix(1, 3, 99);
    unfix.kind = EventKind::Unfix;
    unfix.hit = None;
    write_all(&path, &[fix(0, 1, 10), fix(0, 4, 40), fix(1, 2, 20), unfix, fix(1, 3, 30)]);
    assert_eq!(page_references(&path).unwrap(), vec![10, 20, 30, 40]);
}

// The writer.

#[test]
fn b17_writer_rejects_events_the_format_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = TraceWriter::create(&dir.path().join("t"), &header()).unwrap();
    let mut e = TraceEvent::fix(0, 0, 1, None, LatchMode::Shared, true);
    e.kind = EventKind::Read;
    assert!(matches!(w.write(&e), Err(TraceError::InvalidEvent { .. })));
    e.kind = EventKind::Unfix;
    assert!(w.write(&e).is_err_and(|e| e.to_string().contains("hit/miss")));
    e.hit = None;
    w.write(&e).unwrap();
    assert_eq!(w.finish().unwrap().events, 1);
}
