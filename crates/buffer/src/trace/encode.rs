//! The block encoding every producer shares (B17): event tags, varints, zigzag time deltas, one
//! thread's pending block, and the file it is written to.

use super::error::{io_err, TraceError};
use super::format::{
    EventKind, TraceHeader, TraceSummary, BLOCK_BYTES, BLOCK_HEADER_LEN, HEADER_LEN, MAX_EVENT_LEN,
};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use swizzledb_sync::LatchMode;

pub(super) const TAG_KIND: u8 = 0b0000_0111;
pub(super) const TAG_EXCLUSIVE: u8 = 0b0000_1000;
pub(super) const TAG_HIT: u8 = 0b0001_0000;
pub(super) const TAG_PARENT: u8 = 0b0010_0000;
pub(super) const TAG_RESERVED: u8 = 0b1100_0000;

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a varint at `*pos`; `None` if it runs past the end or exceeds 64 bits.
pub(super) fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        let bits = u64::from(byte & 0x7F);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

pub(super) fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

pub(super) fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// One thread's pending block: the 20-byte header space followed by encoded events.
pub(super) struct Block {
    pub(super) thread: u32,
    count: u32,
    base_ns: u64,
    last_ns: u64,
    pub(super) bytes: Vec<u8>,
}

impl Block {
    pub(super) fn new(thread: u32) -> Block {
        let mut bytes = Vec::with_capacity(BLOCK_HEADER_LEN + BLOCK_BYTES + MAX_EVENT_LEN);
        bytes.resize(BLOCK_HEADER_LEN, 0);
        Block { thread, count: 0, base_ns: 0, last_ns: 0, bytes }
    }

    /// Appends an event (the caller has validated it). Timestamps are stored as zigzag deltas
    /// from the previous event of the block, so any order can be represented.
    pub(super) fn push(
        &mut self,
        kind: EventKind,
        time_ns: u64,
        page: u64,
        parent: Option<u64>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        if self.count == 0 {
            self.base_ns = time_ns;
            self.last_ns = time_ns;
        }
        let mut tag = kind.code();
        if latch == Some(LatchMode::Exclusive) {
            tag |= TAG_EXCLUSIVE;
        }
        if hit == Some(true) {
            tag |= TAG_HIT;
        }
        if parent.is_some() {
            tag |= TAG_PARENT;
        }
        self.bytes.push(tag);
        put_varint(&mut self.bytes, zigzag(time_ns.wrapping_sub(self.last_ns) as i64));
        put_varint(&mut self.bytes, page);
        if let Some(p) = parent {
            put_varint(&mut self.bytes, p);
        }
        self.last_ns = time_ns;
        self.count += 1;
    }

    pub(super) fn is_full(&self) -> bool {
        self.bytes.len() >= BLOCK_HEADER_LEN + BLOCK_BYTES || self.count == u32::MAX
    }

    /// Fills in the header, hands the block's bytes to `write`, and empties the block.
    pub(super) fn drain(
        &mut self,
        write: impl FnOnce(&[u8], u32) -> Result<(), TraceError>,
    ) -> Result<(), TraceError> {
        if self.count == 0 {
            return Ok(());
        }
        let payload = (self.bytes.len() - BLOCK_HEADER_LEN) as u32;
        self.bytes[0..4].copy_from_slice(&self.thread.to_le_bytes());
        self.bytes[4..8].copy_from_slice(&self.count.to_le_bytes());
        self.bytes[8..12].copy_from_slice(&payload.to_le_bytes());
        self.bytes[12..20].copy_from_slice(&self.base_ns.to_le_bytes());
        let result = write(&self.bytes, self.count);
        self.bytes.truncate(BLOCK_HEADER_LEN);
        self.count = 0;
        result
    }
}

/// The trace file: header written at creation, then whole blocks.
pub(super) struct Sink {
    pub(super) path: PathBuf,
    file: BufWriter<File>,
    events: u64,
    bytes: u64,
    /// The first write error; later blocks are dropped and `finish` reports it.
    pub(super) error: Option<TraceError>,
}

impl Sink {
    pub(super) fn create(path: &Path, header: &TraceHeader) -> Result<Sink, TraceError> {
        let file = File::create(path).map_err(io_err(path))?;
        let mut file = BufWriter::with_capacity(BLOCK_HEADER_LEN + BLOCK_BYTES + MAX_EVENT_LEN, file);
        file.write_all(&header.encode()).map_err(io_err(path))?;
        Ok(Sink { path: path.to_path_buf(), file, events: 0, bytes: HEADER_LEN as u64, error: None })
    }

    /// Writes a block (if it holds events) and empties it.
    pub(super) fn try_write_block(&mut self, block: &mut Block) -> Result<(), TraceError> {
        let Sink { path, file, events, bytes, .. } = self;
        block.drain(|b, n| {
            file.write_all(b).map_err(io_err(path))?;
            *events += u64::from(n);
            *bytes += b.len() as u64;
            Ok(())
        })
    }

    /// As `try_write_block`, keeping the first error for `finish` and dropping blocks after it.
    pub(super) fn write_block(&mut self, block: &mut Block) {
        if self.error.is_some() {
            block.drain(|_, _| Ok(())).expect("discarding cannot fail");
            return;
        }
        if let Err(e) = self.try_write_block(block) {
            self.error = Some(e);
        }
    }

    pub(super) fn finish(&mut self, threads: u32) -> Result<TraceSummary, TraceError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.file.flush().map_err(io_err(&self.path))?;
        Ok(TraceSummary { path: self.path.clone(), events: self.events, bytes: self.bytes, threads })
    }
}

pub(super) fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-worked encoding of one event: tag, zigzag time delta, page, parent.
    #[test]
    fn b17_event_encoding_by_hand() {
        let mut b = Block::new(3);
        b.push(EventKind::Fix, 1000, 300, Some(1), Some(LatchMode::Exclusive), Some(true));
        b.push(EventKind::Evict, 999, 5, None, None, None);
        let mut out = Vec::new();
        b.drain(|bytes, n| {
            assert_eq!(n, 2);
            out = bytes.to_vec();
            Ok(())
        })
        .unwrap();
        let payload = &out[BLOCK_HEADER_LEN..];
        // Fix (0) | exclusive (8) | hit (16) | parent (32) = 56; delta 0; 300 = 0xAC 0x02; parent 1.
        // Evict (3); delta -1 zigzags to 1; page 5.
        assert_eq!(payload, &[56, 0, 0xAC, 0x02, 1, 3, 1, 5]);
        assert_eq!(&out[0..4], &3u32.to_le_bytes());
        assert_eq!(&out[4..8], &2u32.to_le_bytes());
        assert_eq!(&out[8..12], &8u32.to_le_bytes());
        assert_eq!(&out[12..20], &1000u64.to_le_bytes());
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::MAX >> 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut pos = 0;
            assert_eq!(get_varint(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
        // 11 continuation bytes, or a tenth byte above 1, exceed 64 bits.
        assert_eq!(get_varint(&[0xFF; 11], &mut 0), None);
        assert_eq!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], &mut 0), None);
        for d in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }
}
