//! Reading a trace in any format: naming a format, telling the layout of an input
//! ([`resolve`]), and the [`RequestReader`] over it.

use super::csv::{self, CsvSpec};
use super::input::Input;
use super::lines::{Lines, Request};
use super::oracle;
use super::text;
use crate::trace::{Remap, Trace, TraceError};
use std::fmt;
use std::io::BufRead;
use std::str::FromStr;

/// The magic number of the engine's binary trace (`trace record`). It is read by
/// `swizzledb_buffer::TraceReader`, not here; [`resolve`] only recognizes it.
pub const ENGINE_TRACE_MAGIC: [u8; 8] = *b"SWZTRACE";

/// A trace format a user can name (`--format`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// SwizzleDB's own: the engine's binary trace (by its magic) or the plain-text trace.
    SwizzleDb,
    /// libCacheSim's `oracleGeneral` binary.
    OracleGeneral,
    /// libCacheSim's CSV, described by a [`CsvSpec`].
    Csv,
    /// libCacheSim's `txt`: one object id per line.
    Txt,
}

impl FromStr for TraceFormat {
    type Err = TraceError;

    /// `swizzledb`, `oracle-general` (or `oracleGeneral`), `csv`, `txt`; case-insensitive.
    fn from_str(s: &str) -> Result<TraceFormat, TraceError> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "swizzledb" => Ok(TraceFormat::SwizzleDb),
            "oracle-general" | "oraclegeneral" => Ok(TraceFormat::OracleGeneral),
            "csv" => Ok(TraceFormat::Csv),
            "txt" => Ok(TraceFormat::Txt),
            _ => Err(TraceError::UnknownFormat(s.to_owned())),
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::SwizzleDb => "swizzledb",
            TraceFormat::OracleGeneral => "oracle-general",
            TraceFormat::Csv => "csv",
            TraceFormat::Txt => "txt",
        })
    }
}

/// The layout an input turned out to have.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The engine's binary trace (starts with [`ENGINE_TRACE_MAGIC`]); read it with
    /// `swizzledb_buffer::TraceReader`.
    EngineBinary,
    /// SwizzleDB's plain-text trace (rule S6).
    SwizzleDbText,
    /// libCacheSim's `oracleGeneral`.
    OracleGeneral,
    /// libCacheSim's CSV.
    Csv,
    /// libCacheSim's `txt`.
    Txt,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::EngineBinary => "SwizzleDB binary",
            Layout::SwizzleDbText => "SwizzleDB text",
            Layout::OracleGeneral => "oracleGeneral",
            Layout::Csv => "CSV",
            Layout::Txt => "txt",
        })
    }
}

/// How to read an input's requests.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// The format asked for; `None` is auto-detection.
    pub format: Option<TraceFormat>,
    /// The columns of a CSV trace. Giving one with no format selects CSV.
    pub csv: Option<CsvSpec>,
    /// Object ids of a `txt` or CSV trace are unsigned decimal integers, not strings.
    pub numeric_ids: bool,
}

/// Tells an input's layout (the rules of `docs/trace-format.md`, "Formats and detection"):
///
/// 1. A format asked for is taken, except that `swizzledb` is the binary trace if the data
///    starts with [`ENGINE_TRACE_MAGIC`] and the text trace otherwise. A CSV spec with no
///    format means CSV; a CSV spec with another format is an error.
/// 2. Otherwise the data's magic: [`ENGINE_TRACE_MAGIC`] is the engine's binary trace.
/// 3. Otherwise the file's name (without `.zst`), case-insensitively: containing
///    `oracleGeneralOpNS` is an error (another libCacheSim format), containing `oracleGeneral`
///    is oracleGeneral, ending in `.csv` is CSV (a spec is then required).
/// 4. Otherwise data that is text (no NUL byte, valid UTF-8 in its first 4 KiB) is SwizzleDB
///    text; anything else is an error asking for `--format`.
///
/// # Errors
/// [`TraceError::Undetected`] when no rule applies or the rules conflict, saying what to give.
pub fn resolve(input: &Input, options: &ReadOptions) -> Result<Layout, TraceError> {
    let head = input.head();
    let undetected = |reason: String| TraceError::Undetected { what: input.name().to_owned(), reason };
    let engine = head.starts_with(&ENGINE_TRACE_MAGIC);
    match (options.format, options.csv.is_some()) {
        (Some(TraceFormat::Csv) | None, true) => return Ok(Layout::Csv),
        (Some(f), true) => {
            return Err(undetected(format!(
                "a CSV spec was given with format {f}; give --format csv or drop the spec"
            )))
        }
        (Some(TraceFormat::Csv), false) => {
            return Err(undetected(
                "a CSV trace needs a column spec, e.g. --csv-spec \"obj-id-col=2,has-header=true\"".into(),
            ))
        }
        (Some(TraceFormat::SwizzleDb), false) => {
            return Ok(if engine { Layout::EngineBinary } else { Layout::SwizzleDbText })
        }
        (Some(TraceFormat::OracleGeneral), false) => return Ok(Layout::OracleGeneral),
        (Some(TraceFormat::Txt), false) => return Ok(Layout::Txt),
        (None, false) => {}
    }
    if engine {
        return Ok(Layout::EngineBinary);
    }
    if let Some(name) = input.file_name() {
        let lower = name.to_ascii_lowercase();
        if lower.contains("oraclegeneralopns") {
            return Err(undetected(
                "the name says libCacheSim's oracleGeneralOpNS, which is not supported (only \
                 oracleGeneral); give --format to read it as another format"
                    .into(),
            ));
        }
        if lower.contains("oraclegeneral") {
            return Ok(Layout::OracleGeneral);
        }
        if lower.ends_with(".csv") {
            return Err(undetected(
                "a .csv trace needs a column spec, e.g. --csv-spec \"obj-id-col=2,has-header=true\"".into(),
            ));
        }
    }
    let text = !head.contains(&0)
        && match std::str::from_utf8(head) {
            Ok(_) => true,
            // A character cut by the 4 KiB boundary still counts as text.
            Err(e) => e.error_len().is_none(),
        };
    if text {
        Ok(Layout::SwizzleDbText)
    } else {
        Err(undetected(
            "binary data that is not a SwizzleDB trace and a name that does not say its format; \
             give --format oracle-general (or another format)"
                .into(),
        ))
    }
}

/// Reads the requests of a text or libCacheSim input, one at a time.
pub struct RequestReader {
    inner: Inner,
}

enum Inner {
    Text(text::TextReader<Box<dyn BufRead + Send>>),
    Txt(text::TxtReader),
    Csv(csv::CsvReader),
    Oracle(oracle::OracleReader),
}

impl fmt::Debug for RequestReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestReader").field("skipped_zero_size", &self.skipped_zero_size()).finish()
    }
}

impl RequestReader {
    /// A reader of `input` as `layout` (see [`resolve`]).
    ///
    /// # Errors
    /// [`TraceError::Undetected`] for [`Layout::EngineBinary`], which this crate does not read,
    /// and for [`Layout::Csv`] without a spec in `options`.
    pub fn new(input: Input, layout: Layout, options: &ReadOptions) -> Result<RequestReader, TraceError> {
        let name = input.name().to_owned();
        let zstd = input.is_zstd();
        let reader = input.into_reader();
        let lines = |reader| Lines::new(reader, name.clone(), zstd);
        let inner = match layout {
            Layout::EngineBinary => {
                return Err(TraceError::Undetected {
                    what: name,
                    reason: "the engine's binary trace is read by swizzledb_buffer::TraceReader".into(),
                })
            }
            Layout::SwizzleDbText => Inner::Text(text::TextReader { lines: lines(reader) }),
            Layout::Txt => Inner::Txt(text::TxtReader { lines: lines(reader), numeric: options.numeric_ids }),
            Layout::Csv => {
                let Some(spec) = options.csv.clone() else {
                    return Err(TraceError::Undetected {
                        what: name,
                        reason: "a CSV trace needs a column spec".into(),
                    });
                };
                let spec = CsvSpec { obj_id_is_num: spec.obj_id_is_num || options.numeric_ids, ..spec };
                Inner::Csv(csv::CsvReader::new(lines(reader), spec))
            }
            Layout::OracleGeneral => Inner::Oracle(oracle::OracleReader::new(reader, name, zstd)),
        };
        Ok(RequestReader { inner })
    }

    /// The next request, `None` at the end.
    ///
    /// # Errors
    /// [`TraceError::BadLine`] (SwizzleDB text) or [`TraceError::BadRecord`] (txt, CSV) with the
    /// line number; [`TraceError::Truncated`] with the byte offset (oracleGeneral);
    /// [`TraceError::Io`] and [`TraceError::Zstd`] for read errors.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Request>, TraceError> {
        match &mut self.inner {
            Inner::Text(r) => r.next(),
            Inner::Txt(r) => r.next(),
            Inner::Csv(r) => r.next(),
            Inner::Oracle(r) => r.next(),
        }
    }

    /// Requests of size 0 skipped so far (oracleGeneral and CSV with a size column), as
    /// libCacheSim skips them.
    #[must_use]
    pub fn skipped_zero_size(&self) -> u64 {
        match &self.inner {
            Inner::Csv(r) => r.skipped,
            Inner::Oracle(r) => r.skipped,
            Inner::Text(_) | Inner::Txt(_) => 0,
        }
    }

    /// Reads every remaining request into a [`Trace`] (ids remapped to dense ids).
    ///
    /// # Errors
    /// As [`RequestReader::next`]; [`TraceError::TooLong`] past [`crate::MAX_REFS`] references.
    pub fn into_trace(mut self) -> Result<(Trace, u64), TraceError> {
        let mut remap = Remap::default();
        while let Some(r) = self.next()? {
            remap.push(r.id)?;
        }
        Ok((remap.finish(), self.skipped_zero_size()))
    }

    /// Reads every remaining request.
    ///
    /// # Errors
    /// As [`RequestReader::next`].
    pub fn collect(mut self) -> Result<(Vec<Request>, u64), TraceError> {
        let mut all = Vec::new();
        while let Some(r) = self.next()? {
            all.push(r);
        }
        Ok((all, self.skipped_zero_size()))
    }
}
