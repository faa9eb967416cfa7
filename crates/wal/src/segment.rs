//! Segment files (README W1) and the frame reader that both `open` (to find the end, W7) and
//! `scan` walk the log with.

use crate::frame::{self, Header, FIRST_LSN, HEADER};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb_io::VfsFile;

/// Open segment files by start LSN.
pub(crate) type Segments = BTreeMap<u64, Arc<dyn VfsFile>>;

/// Bytes the reader fetches from a file at a time (more if one frame is bigger).
const READ_CHUNK: u64 = 64 << 10;

/// The file name of the segment starting at `start`: 16 lower-case hex digits and `.log`.
pub(crate) fn file_name(start: u64) -> String {
    format!("{start:016x}.log")
}

/// The path of the segment starting at `start`.
pub(crate) fn path(dir: &Path, start: u64) -> PathBuf {
    dir.join(file_name(start))
}

/// The start LSN a segment file's name stands for, or `None` if the file is not a segment.
pub(crate) fn parse_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_suffix(".log")?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The path of spare segment file number `n` (W15): 16 lower-case hex digits and `.spare`, a
/// name no segment has.
pub(crate) fn spare_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:016x}.spare"))
}

/// Whether `path` names a spare segment file (README W15): a truncated or prepared segment file
/// kept for reuse, no part of the log, removed when the log is opened.
pub fn is_spare(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".spare"))
}

/// The start of the segment holding `lsn`.
#[inline]
pub(crate) fn start_of(lsn: u64, segment_bytes: u64) -> u64 {
    // Every append asks: a power of two (the engine's sizes) needs no division.
    if segment_bytes.is_power_of_two() {
        lsn & !(segment_bytes - 1)
    } else {
        lsn - lsn % segment_bytes
    }
}

/// The first frame position in the segment starting at `start` (W3: segment 0 starts at 8).
#[inline]
pub(crate) fn first_frame(start: u64) -> u64 {
    start.max(FIRST_LSN)
}

/// W1: padding of `len` bytes at `pos` in the segment starting at `seg` ends at the segment's
/// end, or opens a segment other than the first (the tail of a reservation that crossed the
/// previous segment's end, W4) and ends inside it.
fn pad_fits(pos: u64, len: u64, seg: u64, segment_bytes: u64) -> bool {
    let end = pos + len;
    end == seg + segment_bytes || (pos == seg && seg > 0 && end < seg + segment_bytes)
}

/// What the reader found at its position.
#[derive(Debug)]
pub(crate) enum Step {
    /// A valid record; the reader has moved past it.
    Record { lsn: u64, body: Vec<u8> },
    /// Valid padding; the reader has moved to the next segment's start.
    Pad,
    /// A valid sync marker (W8); the reader has moved past it. Invisible to the layer above,
    /// like padding.
    Mark,
    /// No valid frame starts at the reader's position (the end of the log, or damage).
    Invalid { reason: String },
}

/// Walks frames from a position, skipping padding, through a set of segment files.
#[derive(Debug)]
pub(crate) struct FrameReader {
    files: Segments,
    segment_bytes: u64,
    /// The next frame's LSN.
    pos: u64,
    /// Bytes of the log from LSN `buf_start` on, all from one segment.
    buf: Vec<u8>,
    buf_start: u64,
}

impl FrameReader {
    /// A reader at `pos` (a frame's LSN) over `files`.
    /// Frame lengths are bounded by the segment only, not by this configuration's `max_body`: a
    /// log written with a bigger buffer must read back whole (W2).
    pub(crate) fn new(files: Segments, segment_bytes: u64, pos: u64) -> FrameReader {
        FrameReader { files, segment_bytes, pos, buf: Vec::new(), buf_start: 0 }
    }

    /// The LSN of the next frame.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Reads the frame at the current position. On `Invalid` the position stays at the bad frame.
    /// Callers check their own bound after each step: padding moves the position to the next
    /// segment, which need not exist yet.
    ///
    /// # Errors
    /// A read error of a segment file.
    pub(crate) fn next_step(&mut self) -> io::Result<Step> {
        {
            let pos = self.pos;
            let seg = start_of(pos, self.segment_bytes);
            let seg_end = seg + self.segment_bytes;
            if !self.files.contains_key(&seg) {
                return Ok(invalid(format!("segment file {} does not exist", file_name(seg))));
            }
            let Some(head) = self.bytes(seg, pos, HEADER)? else {
                return Ok(invalid(format!("segment file {} ends before this frame", file_name(seg))));
            };
            match Header::parse(head) {
                Header::Pad { len, crc } => {
                    if !Header::pad_is_valid(pos, len, crc) {
                        return Ok(invalid("checksum mismatch".into()));
                    }
                    if !pad_fits(pos, u64::from(len), seg, self.segment_bytes) {
                        return Ok(invalid(format!(
                            "padding of {len} bytes does not end at the segment end"
                        )));
                    }
                    self.pos = pos + u64::from(len);
                    Ok(Step::Pad)
                }
                Header::Mark { crc } => {
                    if pos + frame::MARK_LEN > seg_end {
                        return Ok(invalid("sync marker does not fit the segment".into()));
                    }
                    let Some(body) = self.bytes(seg, pos + HEADER, frame::MARK_LEN - HEADER)? else {
                        return Ok(invalid(format!(
                            "segment file {} ends inside this frame",
                            file_name(seg)
                        )));
                    };
                    if frame::marker_durable(pos, crc, body).is_none() {
                        return Ok(invalid("checksum mismatch".into()));
                    }
                    self.pos = pos + frame::MARK_LEN;
                    Ok(Step::Mark)
                }
                Header::Record { len, crc } => {
                    let len64 = u64::from(len);
                    if pos + frame::frame_len(len as usize) > seg_end {
                        return Ok(invalid(format!("frame length {len} does not fit the segment")));
                    }
                    let Some(body) = self.bytes(seg, pos + HEADER, len64)? else {
                        return Ok(invalid(format!(
                            "segment file {} ends inside this frame",
                            file_name(seg)
                        )));
                    };
                    if frame::checksum(pos, len, body) != crc {
                        return Ok(invalid("checksum mismatch".into()));
                    }
                    let body = body.to_vec();
                    self.pos = pos + frame::frame_len(len as usize);
                    Ok(Step::Record { lsn: pos, body })
                }
            }
        }
    }

    /// W8: looks for valid frames beyond `from`, the first frame that does not validate: at
    /// every multiple of 8 from `from + 8` to the end of its segment file, and in every later
    /// segment file. Frames are found only by following lengths, so this is a search, not a
    /// walk; after a valid frame it continues behind it. A record candidate costs a checksum
    /// over its body, so once 64 MiB of failed candidates were checked, records are no longer
    /// looked for (`records` is then a lower bound); markers and padding always are (8 bytes).
    ///
    /// # Errors
    /// A read error of a segment file.
    pub(crate) fn search_beyond(&mut self, from: u64) -> io::Result<Beyond> {
        const BUDGET: u64 = 64 << 20;
        let mut found = Beyond { durable: 0, records: 0, end: from, last_segment: None, dirty_end: from };
        // The bad frame's own header (W13: zeros there are the allocated, never-written rest).
        let from_seg = start_of(from, self.segment_bytes);
        if self.files.contains_key(&from_seg)
            && self.bytes(from_seg, from, HEADER)?.is_some_and(|h| h.iter().any(|&b| b != 0))
        {
            found.dirty_end = from + HEADER;
        }
        let mut wasted = 0u64;
        let starts: Vec<u64> =
            self.files.range(start_of(from, self.segment_bytes)..).map(|(&s, _)| s).collect();
        for seg in starts {
            let file_end = seg + self.files[&seg].len()?.min(self.segment_bytes);
            let mut pos = if seg <= from { from + HEADER } else { first_frame(seg) };
            while pos + HEADER <= file_end {
                let Some(head) = self.bytes(seg, pos, HEADER)? else { break };
                if head.iter().any(|&b| b != 0) {
                    found.dirty_end = pos + HEADER;
                }
                let header = Header::parse(head);
                let valid_len = match header {
                    Header::Mark { crc } if pos + frame::MARK_LEN <= file_end => {
                        let body = self.bytes(seg, pos + HEADER, frame::MARK_LEN - HEADER)?;
                        match body.and_then(|b| frame::marker_durable(pos, crc, b)) {
                            Some(durable) => {
                                found.durable = found.durable.max(durable);
                                Some(frame::MARK_LEN)
                            }
                            None => None,
                        }
                    }
                    Header::Pad { len, crc } => (Header::pad_is_valid(pos, len, crc)
                        && pad_fits(pos, u64::from(len), seg, self.segment_bytes))
                    .then_some(u64::from(len)),
                    Header::Record { len, crc }
                        if wasted < BUDGET && pos + frame::frame_len(len as usize) <= file_end =>
                    {
                        let valid = match self.bytes(seg, pos + HEADER, u64::from(len))? {
                            Some(body) => frame::checksum(pos, len, body) == crc,
                            None => false,
                        };
                        if valid {
                            found.records += 1;
                            Some(frame::frame_len(len as usize))
                        } else {
                            wasted += u64::from(len);
                            None
                        }
                    }
                    _ => None,
                };
                match valid_len {
                    Some(len) => {
                        pos += len;
                        found.end = pos;
                        found.dirty_end = pos;
                        found.last_segment = Some(seg);
                    }
                    None => pos += HEADER,
                }
            }
        }
        Ok(found)
    }

    /// The `len` bytes at LSN `at` in segment `seg`, or `None` if the file ends first.
    fn bytes(&mut self, seg: u64, at: u64, len: u64) -> io::Result<Option<&[u8]>> {
        let buf_end = self.buf_start + self.buf.len() as u64;
        if at < self.buf_start || at + len > buf_end || start_of(self.buf_start, self.segment_bytes) != seg {
            let want = len.max(READ_CHUNK).min(seg + self.segment_bytes - at);
            let file = &self.files[&seg];
            self.buf.resize(want as usize, 0);
            let mut got = 0;
            while got < self.buf.len() {
                match file.read_at(&mut self.buf[got..], at - seg + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.buf.truncate(got);
            self.buf_start = at;
        }
        let from = (at - self.buf_start) as usize;
        Ok(self.buf.get(from..from + len as usize))
    }
}

/// What [`FrameReader::search_beyond`] found after a frame that does not validate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Beyond {
    /// The largest durable LSN a valid sync marker there witnesses (0: no marker).
    pub(crate) durable: u64,
    /// Valid records found there (a lower bound, see `search_beyond`).
    pub(crate) records: u64,
    /// The end of the last valid frame found there (the search's start if none).
    pub(crate) end: u64,
    /// The last segment holding a valid frame there.
    pub(crate) last_segment: Option<u64>,
    /// The end of the last 8 bytes there that are not all zero (the search's start if none):
    /// what a crash left beyond the end, as opposed to the zeros allocated there (W13).
    pub(crate) dirty_end: u64,
}

fn invalid(reason: String) -> Step {
    Step::Invalid { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w1_names_round_trip_and_reject_others() {
        assert_eq!(file_name(0x1000), "0000000000001000.log");
        assert_eq!(parse_name(Path::new("x/0000000000001000.log")), Some(0x1000));
        assert_eq!(parse_name(Path::new("master")), None);
        assert_eq!(parse_name(Path::new("000000000000100.log")), None, "15 digits");
        assert_eq!(parse_name(Path::new("000000000000100A.log")), None, "upper case");
        assert_eq!(parse_name(Path::new("0000000000001000.log.tmp")), None);
    }

    #[test]
    fn w3_segment_zero_starts_at_8() {
        assert_eq!(first_frame(0), 8);
        assert_eq!(first_frame(4096), 4096);
        assert_eq!(start_of(4095, 4096), 0);
        assert_eq!(start_of(4096, 4096), 4096);
        // W1 allows any multiple of 8: a size that is no power of two divides.
        assert_eq!(start_of(12_287, 6_144), 6_144);
        assert_eq!(start_of(12_288, 6_144), 12_288);
        assert_eq!(start_of((1 << 40) + 5, 1 << 24), 1 << 40);
    }

    #[test]
    fn w1_padding_closes_a_segment_or_opens_one_other_than_the_first() {
        // Closing: from anywhere to the segment's end.
        assert!(pad_fits(4000, 96, 0, 4096));
        assert!(pad_fits(8192 + 16, 4096 - 16, 8192, 4096));
        // Opening: from the segment's start to anywhere inside it (the tail of a reservation
        // that crossed the previous segment's end).
        assert!(pad_fits(4096, 24, 4096, 4096));
        // Segment 0 is never opened so: its first frame is at 8, and no reservation crosses
        // into it.
        assert!(!pad_fits(0, 24, 0, 4096));
        // Anywhere else it is damage.
        assert!(!pad_fits(4096 + 8, 24, 4096, 4096));
        assert!(!pad_fits(100, 8, 0, 4096));
    }
}
