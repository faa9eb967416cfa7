//! The reader: decodes a trace file event by event, with typed errors for bad input.

use super::encode::{get_varint, unzigzag, TAG_EXCLUSIVE, TAG_HIT, TAG_KIND, TAG_PARENT, TAG_RESERVED};
use super::error::{io_err, TraceError};
use super::format::{
    EventKind, TraceEvent, TraceHeader, BLOCK_HEADER_LEN, HEADER_LEN, MAX_BLOCK_PAYLOAD, TRACE_MAGIC,
    TRACE_VERSION,
};
use crate::config::PoolMode;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use swizzledb_sync::{LatchMode, PageId};

/// Iterates the events of a trace file in file order: the events of one thread appear in the
/// order it recorded them; threads interleave block by block. After the first error the
/// iterator ends.
pub struct TraceReader<R = BufReader<File>> {
    file: PathBuf,
    input: R,
    header: TraceHeader,
    /// File offset of the next unread byte.
    offset: u64,
    payload: Vec<u8>,
    /// File offset of `payload[0]`.
    payload_offset: u64,
    pos: usize,
    left: u32,
    thread: u32,
    last_ns: u64,
    done: bool,
}

impl TraceReader {
    /// Opens a trace file and checks its header.
    ///
    /// # Errors
    /// I/O errors; [`TraceError::NotATrace`], [`TraceError::Version`], [`TraceError::Truncated`]
    /// or [`TraceError::Corrupt`] for a bad header.
    pub fn open(path: impl AsRef<Path>) -> Result<TraceReader, TraceError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(io_err(path))?;
        TraceReader::from_reader(BufReader::with_capacity(1 << 16, f), path)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> TraceReader<R> {
    /// Reads a trace from any byte source; `name` is used in error messages.
    ///
    /// # Errors
    /// As [`TraceReader::open`].
    pub fn from_reader(mut input: R, name: impl AsRef<Path>) -> Result<TraceReader<R>, TraceError> {
        let file = name.as_ref().to_path_buf();
        let mut h = [0u8; HEADER_LEN];
        let n = read_full(&mut input, &mut h).map_err(io_err(&file))?;
        if n < TRACE_MAGIC.len() || h[0..8] != TRACE_MAGIC {
            let reason = if n == 0 {
                "the file is empty".to_string()
            } else if n < TRACE_MAGIC.len() {
                format!("only {n} bytes")
            } else {
                format!("it starts with {:?}", String::from_utf8_lossy(&h[0..8]))
            };
            return Err(TraceError::NotATrace { file, reason });
        }
        if n >= 12 {
            let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
            if version != TRACE_VERSION {
                return Err(TraceError::Version { file, found: version, expected: TRACE_VERSION });
            }
        }
        if n < HEADER_LEN {
            return Err(TraceError::Truncated { file, offset: 0, what: "header" });
        }
        let mode = match h[16] {
            0 => PoolMode::Traditional,
            1 => PoolMode::Swizzling,
            2 => PoolMode::MainMemory,
            m => {
                return Err(TraceError::Corrupt {
                    file,
                    offset: 16,
                    reason: format!("unknown pool mode {m}"),
                })
            }
        };
        let header = TraceHeader {
            page_size: u32::from_le_bytes(h[12..16].try_into().expect("4 bytes")),
            mode,
            frames: u32::from_le_bytes(h[20..24].try_into().expect("4 bytes")),
            start_unix_ns: u64::from_le_bytes(h[24..32].try_into().expect("8 bytes")),
        };
        Ok(TraceReader {
            file,
            input,
            header,
            offset: HEADER_LEN as u64,
            payload: Vec::new(),
            payload_offset: 0,
            pos: 0,
            left: 0,
            thread: 0,
            last_ns: 0,
            done: false,
        })
    }

    /// The file header.
    #[must_use]
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> TraceError {
        TraceError::Corrupt { file: self.file.clone(), offset, reason: reason.into() }
    }

    /// Loads the next block; `Ok(false)` at a clean end of file.
    fn next_block(&mut self) -> Result<bool, TraceError> {
        if self.pos != self.payload.len() {
            return Err(self.corrupt(
                self.payload_offset + self.pos as u64,
                format!("{} bytes after the block's last event", self.payload.len() - self.pos),
            ));
        }
        let mut h = [0u8; BLOCK_HEADER_LEN];
        let start = self.offset;
        let n = read_full(&mut self.input, &mut h).map_err(io_err(&self.file))?;
        if n == 0 {
            return Ok(false);
        }
        if n < BLOCK_HEADER_LEN {
            return Err(TraceError::Truncated {
                file: self.file.clone(),
                offset: start,
                what: "block header",
            });
        }
        let thread = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes"));
        let count = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        let base = u64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
        if count == 0 {
            return Err(self.corrupt(start, "a block with no events"));
        }
        if len > MAX_BLOCK_PAYLOAD {
            return Err(
                self.corrupt(start, format!("block payload of {len} bytes (at most {MAX_BLOCK_PAYLOAD})"))
            );
        }
        // Each event takes at least 3 bytes (tag, time delta, page).
        if u64::from(count) * 3 > u64::from(len) {
            return Err(self.corrupt(start, format!("{count} events cannot fit in {len} bytes")));
        }
        self.payload.resize(len as usize, 0);
        let got = read_full(&mut self.input, &mut self.payload).map_err(io_err(&self.file))?;
        if got < len as usize {
            return Err(TraceError::Truncated { file: self.file.clone(), offset: start, what: "block" });
        }
        self.offset = start + (BLOCK_HEADER_LEN as u64) + u64::from(len);
        self.payload_offset = start + BLOCK_HEADER_LEN as u64;
        self.pos = 0;
        self.left = count;
        self.thread = thread;
        self.last_ns = base;
        Ok(true)
    }

    fn decode(&mut self) -> Result<TraceEvent, TraceError> {
        let at = self.payload_offset + self.pos as u64;
        let b = &self.payload;
        let mut pos = self.pos;
        let past_end = || "event runs past the end of its block".to_string();
        let tag = *b.get(pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        pos += 1;
        if tag & TAG_RESERVED != 0 {
            return Err(self.corrupt(at, format!("reserved bits set in event tag {tag:#04x}")));
        }
        let kind = EventKind::from_code(tag & TAG_KIND)
            .ok_or_else(|| self.corrupt(at, format!("unknown event kind {}", tag & TAG_KIND)))?;
        let latch = if kind.has_latch() {
            Some(if tag & TAG_EXCLUSIVE != 0 { LatchMode::Exclusive } else { LatchMode::Shared })
        } else if tag & TAG_EXCLUSIVE != 0 {
            return Err(self.corrupt(at, format!("a {kind} event with a latch mode")));
        } else {
            None
        };
        let hit = if kind == EventKind::Fix {
            Some(tag & TAG_HIT != 0)
        } else if tag & TAG_HIT != 0 {
            return Err(self.corrupt(at, format!("a {kind} event with a hit flag")));
        } else {
            None
        };
        let dt = get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        let page_raw = get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        let parent_raw = if tag & TAG_PARENT != 0 {
            Some(get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?)
        } else {
            None
        };
        let page = PageId::new(page_raw)
            .ok_or_else(|| self.corrupt(at, format!("page id {page_raw} out of range")))?;
        let parent = match parent_raw {
            None => None,
            Some(p) => Some(
                PageId::new(p).ok_or_else(|| self.corrupt(at, format!("parent page id {p} out of range")))?,
            ),
        };
        let time_ns = self.last_ns.wrapping_add(unzigzag(dt) as u64);
        self.last_ns = time_ns;
        self.pos = pos;
        self.left -= 1;
        Ok(TraceEvent { kind, thread: self.thread, time_ns, page, parent, latch, hit })
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.left == 0 {
            match self.next_block() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let r = self.decode();
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

impl<R> std::fmt::Debug for TraceReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("file", &self.file)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{event_strategy, header, per_thread, read_all, write_all};
    use super::*;
    use crate::trace::format::BLOCK_BYTES;
    use crate::trace::page_references;
    use proptest::prelude::*;

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
            .map(|i| {
                TraceEvent::fix(0, i * 3, i * 7919 % 100_003, Some(i % 5), LatchMode::Shared, i % 3 == 0)
            })
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
        assert!(
            TraceReader::open(dir.path().join("missing")).is_err_and(|e| matches!(e, TraceError::Io { .. }))
        );

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
}
