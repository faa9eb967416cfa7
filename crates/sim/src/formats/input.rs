//! Opening a trace: a file or standard input (`-`), decompressed on the fly when it is zstd data,
//! with its first bytes kept aside so that the format can be told before anything is parsed.

use crate::trace::TraceError;
use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// The first four bytes of every zstd frame (RFC 8878, §3.1.1: 0xFD2FB528 little-endian).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Bytes looked at to tell the format ([`Input::head`]).
const HEAD_LEN: usize = 4096;

/// A trace's bytes, ready to parse: decompressed if they were zstd data, with the first
/// 4096 bytes available through [`Input::head`] before reading starts.
pub struct Input {
    reader: Box<dyn BufRead + Send>,
    head: Vec<u8>,
    name: String,
    /// The file name without a `.zst` suffix (none for standard input).
    file_name: Option<String>,
    zstd: bool,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input").field("name", &self.name).field("zstd", &self.zstd).finish_non_exhaustive()
    }
}

impl Input {
    /// Opens `path`, or standard input if `path` is `-`. zstd data (recognized by its magic
    /// number, whatever the name) is decompressed as it is read.
    ///
    /// # Errors
    /// [`TraceError::Io`] if the file cannot be opened or read; [`TraceError::Zstd`] if zstd data
    /// has a bad frame header; [`TraceError::Undetected`] if the name ends in `.zst` but the data
    /// is not zstd.
    pub fn open(path: &Path) -> Result<Input, TraceError> {
        if path.as_os_str() == "-" {
            return Input::from_reader(io::stdin(), "standard input", None);
        }
        let what = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
            action: "read",
            what: what.clone(),
            source,
        })?;
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        Input::from_reader(file, &what, file_name.as_deref())
    }

    /// Reads from any byte source. `name` stands for it in messages; `file_name`, if given, is
    /// used to tell the format (see [`crate::resolve`]).
    ///
    /// # Errors
    /// As [`Input::open`].
    pub fn from_reader(
        reader: impl Read + Send + 'static,
        name: &str,
        file_name: Option<&str>,
    ) -> Result<Input, TraceError> {
        let io = |source| TraceError::Io { action: "read", what: name.to_owned(), source };
        let mut reader: Box<dyn BufRead + Send> = Box::new(BufReader::with_capacity(1 << 20, reader));
        let mut head = peek(&mut reader, HEAD_LEN).map_err(io)?;
        let named_zst = file_name.is_some_and(|n| n.to_ascii_lowercase().ends_with(".zst"));
        let zstd = head.starts_with(&ZSTD_MAGIC);
        if named_zst && !zstd {
            return Err(TraceError::Undetected {
                what: name.to_owned(),
                reason: format!(
                    "the name ends in .zst but the data does not start with zstd's magic number \
                     28 B5 2F FD (it starts with {}); rename the file or compress it with zstd",
                    hex(&head[..head.len().min(4)])
                ),
            });
        }
        if zstd {
            let frames = ZstdFrames::new(reader, name)?;
            reader = Box::new(BufReader::with_capacity(1 << 20, frames));
            head = peek(&mut reader, HEAD_LEN).map_err(|e| zstd_error(name, &e))?;
        }
        let file_name = file_name.map(|n| {
            if zstd && n.to_ascii_lowercase().ends_with(".zst") {
                n[..n.len() - 4].to_owned()
            } else {
                n.to_owned()
            }
        });
        Ok(Input { reader, head, name: name.to_owned(), file_name, zstd })
    }

    /// The input's name in messages: the path, or `standard input`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's name without a `.zst` suffix; `None` for standard input.
    #[must_use]
    pub fn file_name(&self) -> Option<&str> {
        self.file_name.as_deref()
    }

    /// True if the input was zstd data (offsets in errors then count decompressed bytes).
    #[must_use]
    pub fn is_zstd(&self) -> bool {
        self.zstd
    }

    /// Up to the first 4096 bytes of the (decompressed) data; fewer only if the data is shorter.
    #[must_use]
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The (decompressed) data from its first byte. Read errors of zstd data come back as
    /// [`io::Error`]s whose message is the decoder's; [`Input::read_error`] turns them into
    /// [`TraceError`]s.
    #[must_use]
    pub fn into_reader(self) -> Box<dyn BufRead + Send> {
        self.reader
    }

    /// The [`TraceError`] for a read error of an input named `name`.
    #[must_use]
    pub fn read_error(name: &str, zstd: bool, e: io::Error) -> TraceError {
        if zstd && e.kind() == io::ErrorKind::Other {
            zstd_error(name, &e)
        } else {
            TraceError::Io { action: "read", what: name.to_owned(), source: e }
        }
    }
}

/// Reads up to `n` bytes and puts them back in front of the rest of `reader`.
fn peek(reader: &mut Box<dyn BufRead + Send>, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    reader.by_ref().take(n as u64).read_to_end(&mut head)?;
    let rest = std::mem::replace(reader, Box::new(io::empty()));
    *reader = Box::new(Cursor::new(head.clone()).chain(rest));
    Ok(head)
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing: it is empty".into();
    }
    bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
}

fn zstd_error(name: &str, e: &dyn std::fmt::Display) -> TraceError {
    TraceError::Zstd { what: name.to_owned(), reason: e.to_string() }
}

/// Every frame of a zstd stream, one after another (the format allows several, e.g. from
/// concatenated files), skipping skippable frames. The decoder reads exactly a frame's bytes,
/// so the next frame starts where the last one ended; it keeps only its window of decoded data
/// (at most 128 MiB, the decoder's default limit). A frame's content checksum, if it has one, is
/// compared with the decoded bytes' when the frame has been read.
struct ZstdFrames {
    source: Box<dyn BufRead + Send>,
    decoder: FrameDecoder,
    /// The stream has ended.
    done: bool,
}

impl ZstdFrames {
    fn new(source: Box<dyn BufRead + Send>, name: &str) -> Result<ZstdFrames, TraceError> {
        let mut frames = ZstdFrames { source, decoder: FrameDecoder::new(), done: false };
        if !frames.start_frame().map_err(|e| zstd_error(name, &e))? {
            frames.done = true;
        }
        Ok(frames)
    }

    /// Reads the next data frame's header; false at the end of the stream.
    fn start_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.decoder.reset(&mut self.source) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let length = u64::from(length);
                    let skipped = io::copy(&mut self.source.by_ref().take(length), &mut io::sink())?;
                    if skipped < length {
                        return Err(io::Error::other(format!(
                            "a skippable frame of {length} bytes ends after {skipped}"
                        )));
                    }
                }
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.done {
                return Ok(0);
            }
            if self.decoder.can_collect() > 0 {
                return self.decoder.read(buf);
            }
            if self.decoder.is_finished() {
                if let (Some(stored), Some(computed)) =
                    (self.decoder.get_checksum_from_data(), self.decoder.get_calculated_checksum())
                {
                    if stored != computed {
                        return Err(io::Error::other(format!(
                            "content checksum mismatch: the frame says {stored:08x}, the decoded data \
                             gives {computed:08x}"
                        )));
                    }
                }
                if !self.start_frame()? {
                    self.done = true;
                }
                continue;
            }
            self.decoder
                .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                .map_err(io::Error::other)?;
        }
    }
}
