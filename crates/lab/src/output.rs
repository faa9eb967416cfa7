//! Where results go. One row type per result file: a flat serde struct whose field names are
//! the columns. [`write_rows`] writes the same rows as `<stem>.csv` (with a header line, by the
//! `csv` crate) and `<stem>.json` (`{"schema": 1, "rows": [...]}`); [`columns`] gives a row
//! type's header, which the schema test checks against `docs/results-schema.md`. Charts go
//! beside them as `<stem>.svg` and `.png`.

use serde::Serialize;
use std::error::Error;
use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};

use crate::plot;

/// Version of the result files' layout: it changes when a column changes meaning (columns are
/// only ever added at the end).
pub const SCHEMA: u32 = 1;

/// Writing a result file failed.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {source}; check that the --out directory is writable and has room", path.display())]
pub struct OutputError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

fn at(path: &Path) -> impl Fn(io::Error) -> OutputError + '_ {
    move |source| OutputError { path: path.to_path_buf(), source }
}

/// Creates the output directory (before any work, so that bad input writes nothing).
///
/// # Errors
/// The directory cannot be created or written, as a message for a usage error.
pub fn prepare_out(out: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create --out {}: {e}", dir.display()))?;
        let probe = dir.join(".swizzledb-write-test");
        std::fs::write(&probe, b"").map_err(|e| format!("cannot write to --out {}: {e}", dir.display()))?;
        let _ = std::fs::remove_file(probe);
    }
    Ok(())
}

/// The columns of row type `R`, in file order: the field names of `R::default()`.
#[must_use]
pub fn columns<R: Serialize + Default>() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if w.serialize(R::default()).is_err() {
        return Vec::new();
    }
    let bytes = w.into_inner().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    text.lines().next().unwrap_or_default().split(',').map(str::to_string).collect()
}

/// Writes `rows` as CSV to `path`: a new file with a header line, or (`append`) after the rows
/// already there (a header only if the file is empty).
///
/// # Errors
/// The file cannot be opened or written.
pub fn write_csv<R: Serialize + Default>(path: &Path, rows: &[R], append: bool) -> Result<(), OutputError> {
    let file = OpenOptions::new()
        .create(true)
        .append(append)
        .write(true)
        .truncate(!append)
        .open(path)
        .map_err(at(path))?;
    let empty = file.metadata().map_err(at(path))?.len() == 0;
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(io::BufWriter::new(file));
    if empty {
        w.write_record(columns::<R>()).map_err(|e| at(path)(e.into()))?;
    }
    for r in rows {
        w.serialize(r).map_err(|e| at(path)(e.into()))?;
    }
    w.flush().map_err(at(path))
}

/// Writes `rows` as `{"schema": 1, "rows": [...]}` to `path`.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_json<R: Serialize>(path: &Path, rows: &[R]) -> Result<(), OutputError> {
    #[derive(Serialize)]
    struct Doc<'a, R> {
        schema: u32,
        rows: &'a [R],
    }
    let file = io::BufWriter::new(std::fs::File::create(path).map_err(at(path))?);
    serde_json::to_writer_pretty(file, &Doc { schema: SCHEMA, rows }).map_err(|e| at(path)(e.into()))
}

/// Writes `<dir>/<stem>.csv` and `<dir>/<stem>.json` from the same rows and says so on stderr.
///
/// # Errors
/// A file cannot be written.
pub fn write_rows<R: Serialize + Default>(dir: &Path, stem: &str, rows: &[R]) -> Result<(), OutputError> {
    let csv = dir.join(format!("{stem}.csv"));
    let json = dir.join(format!("{stem}.json"));
    write_csv(&csv, rows, false)?;
    write_json(&json, rows)?;
    eprintln!("Wrote {} and {}.", csv.display(), json.display());
    Ok(())
}

/// Draws `chart` to `<out>/<name>.svg` and `.png` and says so on stderr (stdout carries only
/// the tables, for scripts).
///
/// # Errors
/// The chart cannot be drawn or written.
pub fn write_plot(out: Option<&Path>, name: &str, chart: &plot::Chart) -> Result<(), Box<dyn Error>> {
    let Some(dir) = out else { return Ok(()) };
    let files = plot::write_chart(&dir.join(name), chart)?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    eprintln!("Plotted {}.", names.join(" and "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Default, serde::Deserialize, Debug, PartialEq)]
    struct Row {
        name: String,
        count: u64,
        ratio: Option<f64>,
        on: bool,
    }

    #[test]
    fn csv_and_json_hold_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![
            Row { name: "a,b".into(), count: 3, ratio: Some(0.25), on: true },
            Row { name: "c".into(), count: 0, ratio: None, on: false },
        ];
        write_rows(dir.path(), "t", &rows).unwrap();
        assert_eq!(columns::<Row>(), ["name", "count", "ratio", "on"]);
        let mut r = csv::Reader::from_path(dir.path().join("t.csv")).unwrap();
        let back: Vec<Row> = r.deserialize().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, rows);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("t.json")).unwrap()).unwrap();
        assert_eq!(json["schema"], 1);
        assert_eq!(json["rows"][0]["name"], "a,b");
        assert_eq!(json["rows"][1]["ratio"], serde_json::Value::Null);
    }

    #[test]
    fn appending_writes_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let row = |n| Row { name: "x".into(), count: n, ratio: None, on: true };
        write_csv(&path, &[row(1)], true).unwrap();
        write_csv(&path, &[row(2), row(3)], true).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("name,")).count(), 1);
        write_csv::<Row>(&path, &[], false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "name,count,ratio,on\n");
    }
}
