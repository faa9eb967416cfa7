//! libCacheSim's CSV traces, described by a column spec in libCacheSim's own syntax
//! (`time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true`).

use super::lines::{hash_id, parse_u64, shorten, Lines, Request};
use crate::trace::TraceError;
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// Which columns of a CSV trace hold what (columns are numbered from 1, as in libCacheSim).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    /// The object id's column (`obj-id-col`, required).
    pub obj_id_col: usize,
    /// The timestamp's column (`time-col`), if any: a non-negative decimal number, truncated to
    /// an integer. Used only by `trace export`.
    pub time_col: Option<usize>,
    /// The object size's column (`obj-size-col`), if any: an unsigned decimal integer. Rows of
    /// size 0 are skipped, as libCacheSim does.
    pub obj_size_col: Option<usize>,
    /// The field separator (`delimiter`, default `,`).
    pub delimiter: u8,
    /// Whether the first line is a header to skip (`has-header`, default false: unlike
    /// libCacheSim, nothing is guessed).
    pub has_header: bool,
    /// Whether object ids are unsigned decimal integers (`obj-id-is-num`, default false: ids are
    /// strings, hashed with XXH64).
    pub obj_id_is_num: bool,
}

impl FromStr for CsvSpec {
    type Err = TraceError;

    /// Parses `key=value` pairs separated by commas, keys case-insensitive with `-` or `_`:
    /// `obj-id-col` (or `obj-id-field`), `time-col` (`time-field`), `obj-size-col`
    /// (`obj-size-field`, `size-col`, `size-field`), `delimiter`, `has-header` (`header`),
    /// `obj-id-is-num`. As in libCacheSim a value ends at the next comma, so `delimiter=,,`
    /// (an empty value) means a comma; `\t` means a tab, `\,` a comma. Booleans are
    /// true/false, yes/no, y/n or 1/0. Each key is given at most once (an alias counts as its
    /// key), and `delimiter=` with nothing after it, not even a comma, is refused.
    fn from_str(input: &str) -> Result<CsvSpec, TraceError> {
        let bad = |reason: String| TraceError::BadCsvSpec { spec: input.to_owned(), reason };
        let mut spec = CsvSpec {
            obj_id_col: 0,
            time_col: None,
            obj_size_col: None,
            delimiter: b',',
            has_header: false,
            obj_id_is_num: false,
        };
        let mut rest = input.trim();
        let mut seen: Vec<&str> = Vec::new();
        while !rest.is_empty() {
            let Some((key, after)) = rest.split_once('=') else {
                return Err(bad(format!("{rest:?} is not a key=value pair")));
            };
            // `delimiter=` with nothing after it, not even the comma that `delimiter=,,` gives.
            let nothing = after.is_empty();
            let (value, after) = after.split_once(',').unwrap_or((after, ""));
            rest = after.trim_start_matches([' ', ',']);
            let key = key.trim().to_ascii_lowercase().replace('_', "-");
            // The key's one name, so that an alias given beside it counts as the same key.
            let name = match key.as_str() {
                "obj-id-col" | "obj-id-field" => "obj-id-col",
                "time-col" | "time-field" => "time-col",
                "obj-size-col" | "obj-size-field" | "size-col" | "size-field" => "obj-size-col",
                "has-header" | "header" => "has-header",
                "obj-id-is-num" => "obj-id-is-num",
                "delimiter" => "delimiter",
                _ => "",
            };
            if !name.is_empty() {
                if seen.contains(&name) {
                    return Err(bad(format!("{name} is given twice; give each key once")));
                }
                seen.push(name);
            }
            let column = |v: &str| -> Result<usize, TraceError> {
                v.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&c| c >= 1)
                    .ok_or_else(|| bad(format!("{key}={v:?}: a column is a number from 1")))
            };
            let flag = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "1" => Ok(true),
                "false" | "no" | "n" | "0" => Ok(false),
                _ => Err(bad(format!("{key}={v:?}: expected true or false"))),
            };
            match key.as_str() {
                "obj-id-col" | "obj-id-field" => spec.obj_id_col = column(value)?,
                "time-col" | "time-field" => spec.time_col = Some(column(value)?),
                "obj-size-col" | "obj-size-field" | "size-col" | "size-field" => {
                    spec.obj_size_col = Some(column(value)?);
                }
                "has-header" | "header" => spec.has_header = flag(value)?,
                "obj-id-is-num" => spec.obj_id_is_num = flag(value)?,
                "delimiter" => {
                    spec.delimiter = match value {
                        _ if nothing => {
                            return Err(bad(
                                "the delimiter is empty: give one ASCII character, \\t for a tab, or \
                                 delimiter=,, for a comma"
                                    .into(),
                            ))
                        }
                        "" | "\\" | "\\," => b',',
                        "\\t" => b'\t',
                        v if v.len() == 1 && v != "\"" && v != "\n" && v != "\r" => v.as_bytes()[0],
                        v => {
                            return Err(bad(format!("delimiter {v:?}: expected one ASCII character or \\t")))
                        }
                    }
                }
                _ => {
                    return Err(bad(format!(
                        "unknown key {key:?}; the keys are obj-id-col, time-col, obj-size-col, \
                         delimiter, has-header and obj-id-is-num"
                    )))
                }
            }
        }
        if spec.obj_id_col == 0 {
            return Err(bad("obj-id-col is required".into()));
        }
        let mut cols: Vec<usize> =
            [Some(spec.obj_id_col), spec.time_col, spec.obj_size_col].into_iter().flatten().collect();
        let n = cols.len();
        cols.sort_unstable();
        cols.dedup();
        if cols.len() != n {
            return Err(bad("two fields name the same column".into()));
        }
        Ok(spec)
    }
}

impl fmt::Display for CsvSpec {
    /// The spec in the syntax [`CsvSpec::from_str`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.time_col {
            write!(f, "time-col={c},")?;
        }
        write!(f, "obj-id-col={},", self.obj_id_col)?;
        if let Some(c) = self.obj_size_col {
            write!(f, "obj-size-col={c},")?;
        }
        match self.delimiter {
            b',' => f.write_str("delimiter=,,")?,
            b'\t' => f.write_str("delimiter=\\t,")?,
            d => write!(f, "delimiter={},", char::from(d))?,
        }
        write!(f, "has-header={},obj-id-is-num={}", self.has_header, self.obj_id_is_num)
    }
}

/// Splits a line at `delim`. A field that starts with `"` runs to the closing `"`, with `""`
/// standing for one quote (RFC 4180 within one line). Fields are trimmed of spaces and tabs
/// (unless a tab is the delimiter) outside quotes.
fn split<'a>(line: &'a [u8], delim: u8, out: &mut Vec<Cow<'a, [u8]>>) -> Result<(), String> {
    out.clear();
    let trim = |f: &'_ [u8]| -> usize {
        f.iter().take_while(|&&b| b == b' ' || (b == b'\t' && delim != b'\t')).count()
    };
    let mut i = 0;
    loop {
        i += trim(&line[i..]);
        if line.get(i) == Some(&b'"') {
            let mut field = Vec::new();
            let mut j = i + 1;
            loop {
                match line.get(j) {
                    None => return Err(format!("the quote opened at byte {} is never closed", i + 1)),
                    Some(b'"') if line.get(j + 1) == Some(&b'"') => {
                        field.push(b'"');
                        j += 2;
                    }
                    Some(b'"') => break,
                    Some(&b) => {
                        field.push(b);
                        j += 1;
                    }
                }
            }
            j += 1;
            j += trim(&line[j..]);
            out.push(Cow::Owned(field));
            match line.get(j) {
                None => return Ok(()),
                Some(&b) if b == delim => i = j + 1,
                Some(_) => return Err(format!("text after the closing quote at byte {}", j + 1)),
            }
        } else {
            let end = line[i..].iter().position(|&b| b == delim).map_or(line.len(), |p| i + p);
            let field = &line[i..end];
            let field = &field[..field.len()
                - field.iter().rev().take_while(|&&b| b == b' ' || (b == b'\t' && delim != b'\t')).count()];
            out.push(Cow::Borrowed(field));
            if end == line.len() {
                return Ok(());
            }
            i = end + 1;
        }
    }
}

pub(super) struct CsvReader {
    lines: Lines,
    spec: CsvSpec,
    need: usize,
    pub(super) skipped: u64,
}

impl CsvReader {
    pub(super) fn new(lines: Lines, spec: CsvSpec) -> Self {
        let need = [Some(spec.obj_id_col), spec.time_col, spec.obj_size_col]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(1);
        CsvReader { lines, spec, need, skipped: 0 }
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        loop {
            let Some((number, line)) = self.lines.next_line()? else { return Ok(None) };
            let mut fields = Vec::new();
            if self.spec.has_header && number == 1 {
                continue;
            }
            if line.trim_ascii().is_empty() {
                continue;
            }
            let bad = |reason: String| TraceError::BadRecord {
                line: number,
                reason,
                content: shorten(String::from_utf8_lossy(line).into_owned()),
            };
            split(line, self.spec.delimiter, &mut fields).map_err(&bad)?;
            if fields.len() < self.need {
                return Err(bad(format!(
                    "expected at least {} fields separated by {:?}, found {}",
                    self.need,
                    char::from(self.spec.delimiter),
                    fields.len()
                )));
            }
            let id_field = &fields[self.spec.obj_id_col - 1];
            let id = if self.spec.obj_id_is_num {
                parse_u64(id_field).ok_or_else(|| {
                    bad(format!(
                        "column {} (obj-id-col) must be an unsigned decimal integer below 2^64 with \
                         obj-id-is-num=true{}",
                        self.spec.obj_id_col,
                        if number == 1 { " (a header? add has-header=true)" } else { "" }
                    ))
                })?
            } else if id_field.is_empty() {
                return Err(bad(format!("column {} (obj-id-col) is empty", self.spec.obj_id_col)));
            } else {
                hash_id(id_field)
            };
            let size = match self.spec.obj_size_col {
                None => 1,
                Some(c) => parse_u64(&fields[c - 1]).ok_or_else(|| {
                    bad(format!(
                        "column {c} (obj-size-col) must be an unsigned decimal integer{}",
                        if number == 1 { " (a header? add has-header=true)" } else { "" }
                    ))
                })?,
            };
            if size == 0 {
                self.skipped += 1;
                continue;
            }
            let time = match self.spec.time_col {
                None => 0,
                Some(c) => std::str::from_utf8(&fields[c - 1])
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .filter(|t| t.is_finite() && *t >= 0.0 && *t < 1.8e19)
                    .map(|t| t as u64)
                    .ok_or_else(|| {
                        bad(format!(
                            "column {c} (time-col) must be a non-negative decimal number{}",
                            if number == 1 { " (a header? add has-header=true)" } else { "" }
                        ))
                    })?,
            };
            return Ok(Some(Request { time, id, size }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> CsvSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn specs_parse_as_libcachesim_writes_them() {
        let s = spec("time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true");
        assert_eq!(
            s,
            CsvSpec {
                obj_id_col: 2,
                time_col: Some(1),
                obj_size_col: Some(3),
                delimiter: b',',
                has_header: true,
                obj_id_is_num: false
            }
        );
        assert_eq!(spec(&s.to_string()), s, "Display round-trips");
        let t = spec("obj_id_field=1, delimiter=\\t, header=yes, obj-id-is-num=1");
        assert_eq!((t.obj_id_col, t.delimiter, t.has_header, t.obj_id_is_num), (1, b'\t', true, true));
        assert_eq!(spec(&t.to_string()), t);
        assert_eq!(spec("obj-id-col=2,delimiter=;").delimiter, b';');
        assert_eq!(spec("obj-id-col=2,delimiter=,").delimiter, b',');
        assert_eq!(spec("OBJ-ID-COL=3").obj_id_col, 3);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (s, needle) in [
            ("time-col=1", "obj-id-col is required"),
            ("obj-id-col=0", "number from 1"),
            ("obj-id-col=x", "number from 1"),
            ("obj-id-col=1,time-col=1", "same column"),
            ("obj-id-col=1,cnt-col=2", "unknown key \"cnt-col\""),
            ("obj-id-col=1,has-header=maybe", "true or false"),
            ("obj-id-col=1,delimiter=ab", "delimiter"),
            ("obj-id-col", "key=value"),
            ("obj-id-col=1,obj-id-col=2", "obj-id-col is given twice"),
            ("obj-id-col=1,obj-id-field=2", "obj-id-col is given twice"),
            ("obj-id-col=1,has-header=true,header=false", "has-header is given twice"),
            ("obj-id-col=1,delimiter=;,delimiter=,,", "delimiter is given twice"),
            ("obj-id-col=1,delimiter=", "the delimiter is empty"),
        ] {
            let e = s.parse::<CsvSpec>().unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains(s), "{s}: {e}");
        }
    }

    #[test]
    fn fields_split_with_quotes_and_trimming() {
        let mut out = Vec::new();
        split(br#" a , "b,""c""" ,,d "#, b',', &mut out).unwrap();
        let got: Vec<&[u8]> = out.iter().map(AsRef::as_ref).collect();
        assert_eq!(got, vec![&b"a"[..], b"b,\"c\"", b"", b"d"]);
        assert!(split(br#"a,"b"#, b',', &mut out).unwrap_err().contains("never closed"));
        assert!(split(br#""b"x,c"#, b',', &mut out).unwrap_err().contains("after the closing quote"));
        split(b"x\t y\t", b'\t', &mut out).unwrap();
        let got: Vec<&[u8]> = out.iter().map(AsRef::as_ref).collect();
        assert_eq!(got, vec![&b"x"[..], b"y", b""]);
    }
}
