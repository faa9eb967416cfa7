//! Reference strings: the pages a workload fixes, in order, with page ids remapped to dense `u32`s.

use crate::generate::{GenError, Pattern};
use rustc_hash::FxHashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The most references a [`Trace`] holds. Times are `u32` positions and `u32::MAX` means
/// "never" (see [`crate::NextUse`]), so every position must stay below it.
pub const MAX_REFS: usize = (u32::MAX - 1) as usize;

/// A reference string over page ids `0..page_slots`.
///
/// Ids are `u32`, so 10^8 references take 400 MB. A text trace's ids are *dense*: the first
/// page seen becomes 0, the next new page 1, and so on, whatever the original ids were; a
/// generated trace keeps its ids, which are already below the page count it was drawn from.
/// Replacement does not depend on the ids themselves, only on which references repeat, so the
/// remapping changes no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    refs: Vec<u32>,
    page_slots: u32,
    distinct: u32,
}

/// What went wrong while reading, building or writing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace could not be read or written.
    #[error("cannot {action} {what}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file, or what stood for it.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a text trace that is not a page id.
    #[error(
        "line {line}: {content:?} is not a page id; each line must hold one unsigned integer below \
         2^64 (blank lines and text after # are skipped)"
    )]
    BadLine {
        /// The line number, from 1.
        line: u64,
        /// The line as read (shortened past 80 characters).
        content: String,
    },
    /// More references than [`MAX_REFS`].
    #[error("the trace holds more than {MAX_REFS} references; split it into shorter traces")]
    TooLong,
    /// A reference to a page id outside `0..page_slots` (a caller's bug when building a trace).
    #[error("reference {position} is page {page}, outside the {page_slots} page ids of the trace")]
    PageOutOfRange {
        /// The position of the reference, from 0.
        position: usize,
        /// The page id found.
        page: u32,
        /// The declared number of page ids.
        page_slots: u32,
    },
    /// Generating a synthetic trace failed.
    #[error(transparent)]
    Generate(#[from] GenError),
    /// A binary trace that ends inside a fixed-size record.
    #[error(
        "truncated {format} record at byte offset {offset}{of}: expected {expected} bytes, found \
         {found}; the {format} format is a sequence of {expected}-byte records",
        of = if *.decompressed { " of the decompressed data" } else { "" }
    )]
    Truncated {
        /// The format's name (`oracleGeneral`).
        format: &'static str,
        /// Byte offset of the record's first byte, from the start of the (decompressed) data.
        offset: u64,
        /// The record size.
        expected: usize,
        /// The bytes left.
        found: usize,
        /// True if the offset counts decompressed bytes of a zstd input.
        decompressed: bool,
    },
    /// A line of a CSV or txt trace that does not fit the format.
    #[error("line {line}: {reason}; the line reads {content:?}")]
    BadRecord {
        /// The line number, from 1 (the header, if any, is line 1).
        line: u64,
        /// What was expected and what was found.
        reason: String,
        /// The line as read (shortened past 80 characters).
        content: String,
    },
    /// A CSV column specification that cannot be used.
    #[error(
        "bad CSV spec {spec:?}: {reason}; write it as libCacheSim does, e.g. \
         \"time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true\""
    )]
    BadCsvSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A format name that is not one of the supported ones.
    #[error("unknown trace format {0:?}; use auto, swizzledb, oracle-general, csv or txt")]
    UnknownFormat(String),
    /// The format could not be told from the input, or the input is not in the format given.
    #[error("{what}: {reason}")]
    Undetected {
        /// The input.
        what: String,
        /// Why, and which option to give.
        reason: String,
    },
    /// zstd-compressed input that cannot be decompressed.
    #[error("{what}: the zstd data is corrupt or truncated ({reason}); check the file with `zstd -t`")]
    Zstd {
        /// The input.
        what: String,
        /// The decoder's message.
        reason: String,
    },
    /// A value that does not fit the field of the output format.
    #[error("request {position}: {field} {value} does not fit the {format} format's {bits}-bit field")]
    FieldOverflow {
        /// The request's position, from 0.
        position: usize,
        /// The output format.
        format: &'static str,
        /// The field's name.
        field: &'static str,
        /// The value.
        value: u64,
        /// The field's width.
        bits: u32,
    },
}

impl Trace {
    /// A trace of `refs` over page ids `0..page_slots`.
    ///
    /// # Errors
    /// [`TraceError::PageOutOfRange`] if a reference is not below `page_slots`, and
    /// [`TraceError::TooLong`] past [`MAX_REFS`] references.
    pub fn new(refs: Vec<u32>, page_slots: u32) -> Result<Trace, TraceError> {
        if refs.len() > MAX_REFS {
            return Err(TraceError::TooLong);
        }
        let mut seen = vec![false; page_slots as usize];
        let mut distinct = 0;
        for (position, &page) in refs.iter().enumerate() {
            let slot = seen.get_mut(page as usize).ok_or(TraceError::PageOutOfRange {
                position,
                page,
                page_slots,
            })?;
            if !*slot {
                *slot = true;
                distinct += 1;
            }
        }
        Ok(Trace { refs, page_slots, distinct })
    }

    /// A trace of arbitrary page ids, remapped to dense ids in order of first appearance.
    ///
    /// # Errors
    /// [`TraceError::TooLong`] past [`MAX_REFS`] references.
    pub fn from_pages(pages: impl IntoIterator<Item = u64>) -> Result<Trace, TraceError> {
        let mut remap = Remap::default();
        for page in pages {
            remap.push(page)?;
        }
        Ok(remap.finish())
    }

    /// The references, in order.
    #[must_use]
    pub fn refs(&self) -> &[u32] {
        &self.refs
    }

    /// The number of references.
    #[must_use]
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True if the trace holds no reference.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Every reference is below this; the size of per-page arrays.
    #[must_use]
    pub fn page_slots(&self) -> u32 {
        self.page_slots
    }

    /// The number of different pages referenced: the cold misses of any cache.
    #[must_use]
    pub fn distinct_pages(&self) -> u32 {
        self.distinct
    }
}

/// Raw ids below this may get a slot in the direct table (4 bytes each, at most 512 MiB).
const DIRECT_LIMIT: u64 = 1 << 27;

/// Builds a dense trace from arbitrary page ids. Small raw ids (the usual case) are looked up in
/// a plain array, `direct`, about three times faster than a hash map for millions of pages;
/// other ids go to `sparse`. The array grows to cover an id only while it stays within a few
/// entries per reference read, so a single huge id does not allocate a huge array.
#[derive(Default)]
pub(crate) struct Remap {
    /// `direct[raw]`: the dense id plus 1, or 0 if not seen yet. Covers the raw ids below its
    /// length; `sparse` holds none of them.
    direct: Vec<u32>,
    /// The dense ids of raw ids at or beyond `direct.len()`.
    sparse: FxHashMap<u64, u32>,
    distinct: u32,
    refs: Vec<u32>,
}

impl Remap {
    pub(crate) fn push(&mut self, page: u64) -> Result<(), TraceError> {
        if self.refs.len() == MAX_REFS {
            return Err(TraceError::TooLong);
        }
        if page >= self.direct.len() as u64
            && page < DIRECT_LIMIT
            && page < 2 * self.refs.len() as u64 + (1 << 16)
        {
            self.grow(page);
        }
        // Fewer than MAX_REFS pages were seen, so `distinct + 1` fits.
        let id = if let Some(slot) = usize::try_from(page).ok().and_then(|p| self.direct.get_mut(p)) {
            if *slot == 0 {
                self.distinct += 1;
                *slot = self.distinct;
            }
            *slot - 1
        } else {
            let next = self.distinct;
            let id = *self.sparse.entry(page).or_insert(next);
            if id == next {
                self.distinct += 1;
            }
            id
        };
        self.refs.push(id);
        Ok(())
    }

    /// Extends `direct` past `page` and moves the ids it now covers out of `sparse`.
    fn grow(&mut self, page: u64) {
        let len = (page + 1).next_power_of_two().min(DIRECT_LIMIT);
        self.direct.resize(len as usize, 0);
        let direct = &mut self.direct;
        self.sparse.retain(|&raw, &mut id| {
            if raw < len {
                direct[raw as usize] = id + 1;
                false
            } else {
                true
            }
        });
    }

    pub(crate) fn finish(self) -> Trace {
        Trace { refs: self.refs, page_slots: self.distinct, distinct: self.distinct }
    }
}

/// Reads a plain-text trace: one unsigned page id per line. Blank lines are skipped, and so is
/// everything from a `#` to the end of its line; surrounding whitespace (and `\r`) is ignored.
/// Page ids are remapped to dense ids (see [`Trace`]).
///
/// # Errors
/// [`TraceError::BadLine`] for a line that holds anything else, with its number and text;
/// [`TraceError::Io`] if reading fails (`what` names the source in the message);
/// [`TraceError::TooLong`] past [`MAX_REFS`] references.
pub fn read_text(reader: impl BufRead, what: &str) -> Result<Trace, TraceError> {
    let lines = crate::formats::Lines::new(reader, what.to_owned(), false);
    let mut text = crate::formats::TextReader { lines };
    let mut remap = Remap::default();
    while let Some(r) = text.next()? {
        remap.push(r.id)?;
    }
    Ok(remap.finish())
}

/// Writes `pages` as a plain-text trace, one id per line, after `header` lines written as `#`
/// comments.
///
/// # Errors
/// [`TraceError::Io`] if writing fails (`what` names the destination in the message).
pub fn write_text(
    writer: impl Write,
    header: &[String],
    pages: impl IntoIterator<Item = u32>,
    what: &str,
) -> Result<(), TraceError> {
    let io = |source| TraceError::Io { action: "write", what: what.to_owned(), source };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, writer);
    for line in header {
        for part in line.lines() {
            writeln!(w, "# {part}").map_err(io)?;
        }
    }
    let mut digits = [0u8; 11];
    for page in pages {
        // Formatting by hand: about three times faster than `writeln!` for 10^8 lines.
        let mut i = digits.len() - 1;
        digits[i] = b'\n';
        let mut v = page;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        w.write_all(&digits[i..]).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// Where a trace comes from. The engine's own binary trace format will be one more variant.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum TraceSource {
    /// A plain-text file (see [`read_text`]).
    Text(PathBuf),
    /// A synthetic trace (see [`Pattern::generate`]).
    Generated {
        /// What to draw.
        pattern: Pattern,
        /// Page ids are drawn from `0..pages`.
        pages: u32,
        /// The number of references.
        refs: usize,
        /// The generator's seed.
        seed: u64,
    },
}

impl TraceSource {
    /// Reads or generates the trace.
    ///
    /// # Errors
    /// As [`read_text`] (a missing file is [`TraceError::Io`]) and [`Pattern::generate`].
    pub fn load(&self) -> Result<Trace, TraceError> {
        match self {
            TraceSource::Text(path) => read_text_file(path),
            TraceSource::Generated { pattern, pages, refs, seed } => {
                Ok(pattern.generate(*pages, *refs, *seed)?)
            }
        }
    }
}

/// [`read_text`] on a file.
///
/// # Errors
/// As [`read_text`]; the file's path is in the message.
pub fn read_text_file(path: &Path) -> Result<Trace, TraceError> {
    let what = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
        action: "read",
        what: what.clone(),
        source,
    })?;
    read_text(std::io::BufReader::with_capacity(1 << 20, file), &what)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Trace, TraceError> {
        read_text(text.as_bytes(), "test")
    }

    #[test]
    fn s6_text_remaps_in_order_of_first_appearance() {
        let t = parse("# header\n900\n\n  7 \r\n900 # again\n18446744073709551615\n7\n").unwrap();
        assert_eq!(t.refs(), &[0, 1, 0, 2, 1]);
        assert_eq!((t.page_slots(), t.distinct_pages(), t.len()), (3, 3, 5));
    }

    #[test]
    fn s6_bad_lines_name_their_number_and_text() {
        for (text, line, content) in [
            ("1\n2\nx3\n", 3, "x3"),
            ("1\n\n# c\n-4\n", 4, "-4"),
            ("1 2\n", 1, "1 2"),
            ("18446744073709551616\n", 1, "18446744073709551616"),
            ("+5\n", 1, "+5"),
            ("5.0", 1, "5.0"),
        ] {
            match parse(text) {
                Err(TraceError::BadLine { line: l, content: c }) => {
                    assert_eq!((l, c.as_str()), (line, content), "{text:?}");
                    let msg = TraceError::BadLine { line: l, content: c }.to_string();
                    assert!(msg.contains(&format!("line {line}")) && msg.contains(content), "{msg}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn s6_long_bad_lines_are_shortened() {
        let text = format!("{}\n", "z".repeat(500));
        let Err(TraceError::BadLine { content, .. }) = parse(&text) else { panic!() };
        assert_eq!(content.chars().count(), 81);
    }

    #[test]
    fn s6_empty_and_comment_only_texts_give_empty_traces() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("# nothing\n\n   \n").unwrap().is_empty());
    }

    #[test]
    fn s6_write_then_read_round_trips() {
        let pages = [5u32, 0, 4_294_967_295, 5, 10];
        let mut out = Vec::new();
        write_text(&mut out, &["made by a test".into()], pages, "buffer").unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("# made by a test\n5\n0\n4294967295\n"), "{text}");
        assert_eq!(parse(&text).unwrap().refs(), &[0, 1, 2, 0, 3]);
    }

    #[test]
    fn s6_from_pages_remaps_like_text() {
        let t = Trace::from_pages([u64::MAX, 3, u64::MAX, 0]).unwrap();
        assert_eq!(t.refs(), &[0, 1, 0, 2]);
        assert_eq!(t, parse("18446744073709551615\n3\n18446744073709551615\n0\n").unwrap());
    }

    proptest::proptest! {
        /// Ids small and huge, with small ones first met while the direct table cannot cover
        /// them yet (and moved into it later), map as a plain first-appearance map does.
        #[test]
        fn s6_remap_is_first_appearance_order(
            ids in proptest::collection::vec(
                proptest::prop_oneof![0u64..50, 60_000u64..300_000, proptest::num::u64::ANY],
                0..3_000,
            ),
        ) {
            let mut naive = std::collections::HashMap::new();
            let expected: Vec<u32> = ids.iter().map(|&p| {
                let next = naive.len() as u32;
                *naive.entry(p).or_insert(next)
            }).collect();
            let t = Trace::from_pages(ids.iter().copied()).unwrap();
            proptest::prop_assert_eq!(t.refs(), &expected[..]);
            proptest::prop_assert_eq!(t.distinct_pages() as usize, naive.len());
        }
    }

    #[test]
    fn s6_ids_move_from_the_map_to_the_table() {
        // 100_000 is beyond the table at first; after enough references the table covers it.
        let mut ids = vec![100_000u64, 7];
        ids.extend((0..40_000).map(|i| i % 5));
        ids.push(100_000);
        let t = Trace::from_pages(ids).unwrap();
        assert_eq!(t.refs()[..2], [0, 1]);
        assert_eq!(*t.refs().last().unwrap(), 0);
        assert_eq!(t.distinct_pages(), 7);
    }

    #[test]
    fn new_checks_the_page_range() {
        assert!(matches!(
            Trace::new(vec![0, 3, 1], 3),
            Err(TraceError::PageOutOfRange { position: 1, page: 3, page_slots: 3 })
        ));
        let t = Trace::new(vec![2, 2, 0], 5).unwrap();
        assert_eq!((t.distinct_pages(), t.page_slots()), (2, 5));
    }

    #[test]
    fn s6_missing_files_are_io_errors_naming_the_file() {
        let err = read_text_file(Path::new("no-such-trace-file.txt")).unwrap_err();
        assert!(matches!(err, TraceError::Io { .. }));
        assert!(err.to_string().contains("no-such-trace-file.txt"), "{err}");
    }
}
