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
