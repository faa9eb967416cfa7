//! Line-based traces: SwizzleDB's plain text (rule S6) and libCacheSim's `txt`.

use super::lines::{hash_id, parse_u64, shorten, Lines, Request};
use crate::trace::TraceError;

/// SwizzleDB's plain-text trace (S6): one unsigned decimal page id per line; blank lines and
/// text from `#` on are skipped; whitespace around the id is ignored.
pub(crate) struct TextReader<R> {
    pub(crate) lines: Lines<R>,
}

impl<R: std::io::BufRead> TextReader<R> {
    pub(crate) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        loop {
            let Some((number, line)) = self.lines.next_line()? else { return Ok(None) };
            let content = match line.iter().position(|&b| b == b'#') {
                Some(hash) => &line[..hash],
                None => line,
            };
            let content = content.trim_ascii();
            if content.is_empty() {
                continue;
            }
            let id = parse_u64(content).ok_or_else(|| TraceError::BadLine {
                line: number,
                content: shorten(String::from_utf8_lossy(line.trim_ascii_end()).into_owned()),
            })?;
            return Ok(Some(Request { time: 0, id, size: 1 }));
        }
    }
}

/// libCacheSim's `txt` trace: one object id per line, the whole line (without its line ending);
/// empty lines are skipped. Ids are strings (hashed) unless `numeric`, when each line must be an
/// unsigned decimal integer (surrounding whitespace ignored).
pub(super) struct TxtReader {
    pub(super) lines: Lines,
    pub(super) numeric: bool,
}

impl TxtReader {
    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        loop {
            let Some((number, line)) = self.lines.next_line()? else { return Ok(None) };
            if line.is_empty() {
                continue;
            }
            let id = if self.numeric {
                parse_u64(line.trim_ascii()).ok_or_else(|| TraceError::BadRecord {
                    line: number,
                    reason: "expected an unsigned decimal object id below 2^64 (numeric ids were asked \
                             for; without them every line is an id, whatever it holds)"
                        .into(),
                    content: shorten(String::from_utf8_lossy(line).into_owned()),
                })?
            } else {
                hash_id(line)
            };
            return Ok(Some(Request { time: 0, id, size: 1 }));
        }
    }
}
