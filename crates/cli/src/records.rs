//! The text forms `swizzledb dump` writes and `swizzledb load` reads back: one record a line,
//! key and value as hex or base64 so that any bytes round-trip.
//!
//! - `csv`: a `key,value` header, then `KEY,VALUE` (neither alphabet has a comma);
//! - `jsonl`: `{"key":"KEY","value":"VALUE"}` (neither alphabet needs escaping).

use base64::Engine as _;
use clap::ValueEnum;
use std::fmt::Write as _;

/// How a record is printed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A `key,value` header, then one record a line.
    Csv,
    /// One JSON object a line: `{"key":...,"value":...}`.
    Jsonl,
    /// A hex dump per record, with printable ASCII beside it (dump only: for reading).
    Hex,
}

/// How bytes are spelled in `csv` and `jsonl`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Encoding {
    /// Lower-case hex, two digits a byte.
    #[default]
    Hex,
    /// Standard base64 with padding (RFC 4648): a third shorter than hex.
    Base64,
}

/// The header line of a `csv` dump.
pub const CSV_HEADER: &str = "key,value";

impl Encoding {
    /// `bytes` spelled in this encoding.
    pub fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Hex => bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            }),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The bytes `text` spells, or what is wrong with it.
    pub fn decode(self, text: &str) -> Result<Vec<u8>, String> {
        match self {
            Encoding::Hex => {
                if !text.len().is_multiple_of(2) {
                    return Err(format!("odd number of hex digits ({})", text.len()));
                }
                (0..text.len())
                    .step_by(2)
                    .map(|i| {
                        // Two hex digits: `from_str_radix` alone also takes a sign (`+f`).
                        text.get(i..i + 2)
                            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
                            .and_then(|d| u8::from_str_radix(d, 16).ok())
                            .ok_or_else(|| format!("not a hex byte at character {}", i + 1))
                    })
                    .collect()
            }
            Encoding::Base64 => {
                base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("not base64: {e}"))
            }
        }
    }
}

/// One record as a line of `format` (`csv` or `jsonl`), without its line end.
pub fn line(format: Format, encoding: Encoding, key: &[u8], value: &[u8]) -> String {
    let (k, v) = (encoding.encode(key), encoding.encode(value));
    match format {
        Format::Jsonl => format!("{{\"key\":\"{k}\",\"value\":\"{v}\"}}"),
        Format::Csv | Format::Hex => format!("{k},{v}"),
    }
}

/// A `jsonl` line's fields.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRecord {
    key: String,
    value: String,
}

/// What a JSON value that is not an object is, for a message.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The record a line of `format` holds, or what is wrong with it.
pub fn parse(format: Format, encoding: Encoding, line: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (k, v) = match format {
        Format::Csv => {
            let (k, v) = line.split_once(',').ok_or("no comma between key and value")?;
            (k.to_owned(), v.to_owned())
        }
        Format::Jsonl => {
            // An object, as dump writes it: serde would also take a struct from an array
            // (`["KEY","VALUE"]`), which is not one object a line.
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("not a record object: {e}"))?;
            if !value.is_object() {
                return Err(format!(
                    "not a record object: a line holds one JSON object {{\"key\":..,\"value\":..}}, \
                     not {}",
                    json_kind(&value)
                ));
            }
            let r: JsonRecord =
                serde_json::from_value(value).map_err(|e| format!("not a record object: {e}"))?;
            (r.key, r.value)
        }
        Format::Hex => return Err("hex dumps are for reading; load reads csv or jsonl".into()),
    };
    let key = encoding.decode(&k).map_err(|e| format!("key: {e}"))?;
    let value = encoding.decode(&v).map_err(|e| format!("value: {e}"))?;
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_in_every_form() {
        let key: Vec<u8> = (0..=255u8).collect();
        for format in [Format::Csv, Format::Jsonl] {
            for encoding in [Encoding::Hex, Encoding::Base64] {
                for value in [&b""[..], b",\n\"{}", &key] {
                    let text = line(format, encoding, &key, value);
                    assert!(!text.contains('\n'));
                    assert_eq!(parse(format, encoding, &text).unwrap(), (key.clone(), value.to_vec()));
                }
            }
        }
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let bad = |f, e, l: &str| parse(f, e, l).unwrap_err();
        assert!(bad(Format::Csv, Encoding::Hex, "abcd").contains("no comma"));
        assert!(bad(Format::Csv, Encoding::Hex, "abc,00").contains("key: odd number"));
        assert!(bad(Format::Csv, Encoding::Hex, "00,zz").contains("value: not a hex byte"));
        assert!(bad(Format::Csv, Encoding::Hex, "+f,00").contains("key: not a hex byte at character 1"));
        assert!(bad(Format::Csv, Encoding::Base64, "AA==,!!").contains("value: not base64"));
        assert!(bad(Format::Jsonl, Encoding::Hex, "{\"key\":\"00\"}").contains("not a record object"));
        assert!(bad(Format::Jsonl, Encoding::Hex, "{\"key\":\"00\",\"value\":\"\",\"x\":1}")
            .contains("not a record"));
        assert!(bad(Format::Jsonl, Encoding::Hex, "[\"00\",\"ff\"]").contains("not an array"));
        assert!(bad(Format::Hex, Encoding::Hex, "00,00").contains("load reads csv or jsonl"));
    }
}
