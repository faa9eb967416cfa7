//! Where a trace comes from: a plain-text file, one page id a line (read through the text
//! format's reader in `formats`), or a synthetic pattern (`generate.rs`); and the text form
//! written back.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use crate::formats::{Lines, TextReader};
use crate::generate::Pattern;
use crate::trace::{Remap, Trace, TraceError};

/// Reads a plain-text trace: one unsigned page id per line. Blank lines are skipped, and so is
/// everything from a `#` to the end of its line; surrounding whitespace (and `\r`) is ignored.
/// Page ids are remapped to dense ids (see [`Trace`]).
///
/// # Errors
/// [`TraceError::BadLine`] for a line that holds anything else, with its number and text;
/// [`TraceError::Io`] if reading fails (`what` names the source in the message);
/// [`TraceError::TooLong`] past [`MAX_REFS`](crate::MAX_REFS) references.
pub fn read_text(reader: impl BufRead, what: &str) -> Result<Trace, TraceError> {
    let lines = Lines::new(reader, what.to_owned(), false);
    let mut text = TextReader { lines };
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

    #[test]
    fn s6_missing_files_are_io_errors_naming_the_file() {
        let err = read_text_file(Path::new("no-such-trace-file.txt")).unwrap_err();
        assert!(matches!(err, TraceError::Io { .. }));
        assert!(err.to_string().contains("no-such-trace-file.txt"), "{err}");
    }
}
