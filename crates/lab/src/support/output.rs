//! Where results go. One row type per result file: a flat serde struct whose field names are
//! the columns. [`write_rows`] writes the same rows as `<stem>.csv` (with a header line, by the
//! `csv` crate) and `<stem>.json` (`{"schema": 1, "environment": {...}, "rows": [...]}`), and
//! the CSV's environment beside it as `<stem>.env.json` (`{"schema": 1, "environment": {...}}`);
//! [`append_rows`] appends to a CSV and logs each append's environment in `<stem>.env.jsonl`.
//! The environment ([`Environment::current`]) is added here, so every result file carries it
//! without code in any experiment. [`columns`] gives a row type's header, which the schema test
//! checks against `docs/results-schema.md`. Charts go beside them as `<stem>.svg` and `.png`.

use serde::Serialize;
use std::error::Error;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::support::environment::Environment;
use crate::support::plot;

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

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: a reader
/// sees the old file or the whole new one.
///
/// # Errors
/// Writing or renaming failed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
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

/// Writes `text` to standard output and flushes it. A closed pipe (`| head`) is no error: the
/// reader has seen what it wanted, and the command goes on to write its result files and exits
/// with its own status, as `swizzledb stat` and the other inspecting commands do (`println!`
/// panicked there instead, and a table's failed write stopped the run before its files).
///
/// # Errors
/// Any other error writing standard output.
pub fn print(text: impl AsRef<[u8]>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_ref()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
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

/// Writes `rows` as `{"schema": 1, "environment": {...}, "rows": [...]}` to `path`.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_json<R: Serialize>(path: &Path, rows: &[R]) -> Result<(), OutputError> {
    #[derive(Serialize)]
    struct Doc<'a, R> {
        schema: u32,
        environment: &'a Environment,
        rows: &'a [R],
    }
    write_pretty(path, &Doc { schema: SCHEMA, environment: Environment::current(), rows })
}

/// The file that holds the environment of the CSV file at `csv`: its name with the extension
/// (`.csv`, if any) replaced by `.env.json`, or `.env.jsonl` for a file rows are `appended` to.
#[must_use]
pub fn environment_path(csv: &Path, appended: bool) -> PathBuf {
    csv.with_extension(if appended { "env.jsonl" } else { "env.json" })
}

/// Writes `{"schema": 1, "environment": {...}}` to `path`: the environment of the CSV file
/// beside it.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_environment(path: &Path) -> Result<(), OutputError> {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: u32,
        environment: &'a Environment,
    }
    write_pretty(path, &Doc { schema: SCHEMA, environment: Environment::current() })
}

fn write_pretty(path: &Path, doc: &impl Serialize) -> Result<(), OutputError> {
    let mut file = io::BufWriter::new(std::fs::File::create(path).map_err(at(path))?);
    serde_json::to_writer_pretty(&mut file, doc).map_err(|e| at(path)(e.into()))?;
    file.write_all(b"\n").map_err(at(path))?;
    file.flush().map_err(at(path))
}

/// Writes `<dir>/<stem>.csv` and `<dir>/<stem>.json` from the same rows, and the CSV's
/// environment to `<dir>/<stem>.env.json`, and says so on stderr.
///
/// # Errors
/// A file cannot be written.
pub fn write_rows<R: Serialize + Default>(dir: &Path, stem: &str, rows: &[R]) -> Result<(), OutputError> {
    let csv = dir.join(format!("{stem}.csv"));
    let json = dir.join(format!("{stem}.json"));
    write_csv(&csv, rows, false)?;
    write_environment(&environment_path(&csv, false))?;
    write_json(&json, rows)?;
    eprintln!("Wrote {} and {}.", csv.display(), json.display());
    Ok(())
}

/// Writes the checks of the paper's claims (`experiment::Check`) to `<dir>/<stem>.checks.json`, in the form of the
/// JSON result file (`{"schema": 1, "environment": {...}, "rows": [checks]}`), even if there are
/// none: `swizzledb reproduce` builds its report from this file.
///
/// # Errors
/// The file cannot be written.
pub fn write_checks<C: Serialize>(dir: &Path, stem: &str, checks: &[C]) -> Result<(), OutputError> {
    write_json(&dir.join(format!("{stem}.checks.json")), checks)
}

/// Appends `rows` to the CSV file at `path` (a header only if it is new or empty) and one line
/// `{"first_row": N, "rows": n, "environment": {...}}` to its `.env.jsonl` file
/// ([`environment_path`]): the rows this call wrote are data rows `N..N+n` (0-based, header not
/// counted), so rows from different builds or machines in one file can be told apart.
///
/// # Errors
/// A file cannot be read or written.
pub fn append_rows<R: Serialize + Default>(path: &Path, rows: &[R]) -> Result<(), OutputError> {
    #[derive(Serialize)]
    struct Append<'a> {
        first_row: u64,
        rows: usize,
        environment: &'a Environment,
    }
    let first_row = match csv::Reader::from_path(path) {
        Ok(mut r) => {
            let mut n = 0;
            for record in r.records() {
                record.map_err(|e| at(path)(e.into()))?;
                n += 1;
            }
            n
        }
        Err(e) if matches!(e.kind(), csv::ErrorKind::Io(io) if io.kind() == io::ErrorKind::NotFound) => 0,
        Err(e) => return Err(at(path)(e.into())),
    };
    write_csv(path, rows, true)?;
    let log = environment_path(path, true);
    let file = OpenOptions::new().create(true).append(true).open(&log).map_err(at(&log))?;
    let mut file = io::BufWriter::new(file);
    let line = Append { first_row, rows: rows.len(), environment: Environment::current() };
    serde_json::to_writer(&mut file, &line).map_err(|e| at(&log)(e.into()))?;
    file.write_all(b"\n").map_err(at(&log))?;
    file.flush().map_err(at(&log))
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
        let env: Environment = serde_json::from_value(json["environment"].clone()).unwrap();
        assert_eq!(&env, Environment::current());
        let sidecar: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("t.env.json")).unwrap()).unwrap();
        assert_eq!(sidecar["schema"], 1);
        assert_eq!(sidecar["environment"], json["environment"]);
    }

    #[test]
    fn environment_paths_replace_the_extension() {
        assert_eq!(environment_path(Path::new("out/lookup.csv"), false), Path::new("out/lookup.env.json"));
        assert_eq!(environment_path(Path::new("runs.csv"), true), Path::new("runs.env.jsonl"));
        assert_eq!(environment_path(Path::new("runs"), true), Path::new("runs.env.jsonl"));
        assert_eq!(environment_path(Path::new("a.b.csv"), false), Path::new("a.b.env.json"));
        // Never the CSV itself, whatever it is called.
        assert_eq!(environment_path(Path::new("x.env.jsonl"), true), Path::new("x.env.env.jsonl"));
    }

    /// Each append logs which rows it wrote and its environment; rows already in the file
    /// (written before the log existed) are counted, not assumed.
    #[test]
    fn appends_log_their_rows_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        let row = |n| Row { name: "x\ny".into(), count: n, ratio: None, on: true };
        write_csv(&path, &[row(0)], false).unwrap();
        append_rows(&path, &[row(1), row(2)]).unwrap();
        append_rows::<Row>(&path, &[]).unwrap();
        append_rows(&path, &[row(3)]).unwrap();
        let back: Vec<Row> =
            csv::Reader::from_path(&path).unwrap().deserialize().collect::<Result<_, _>>().unwrap();
        assert_eq!(back.iter().map(|r| r.count).collect::<Vec<_>>(), [0, 1, 2, 3]);
        let log = std::fs::read_to_string(dir.path().join("runs.env.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let spans: Vec<(u64, u64)> =
            lines.iter().map(|l| (l["first_row"].as_u64().unwrap(), l["rows"].as_u64().unwrap())).collect();
        assert_eq!(spans, [(1, 2), (3, 0), (3, 1)]);
        for l in &lines {
            let env: Environment = serde_json::from_value(l["environment"].clone()).unwrap();
            assert_eq!(&env, Environment::current());
        }
        // A new file starts at row 0.
        append_rows(&dir.path().join("new.csv"), &[row(9)]).unwrap();
        let log = std::fs::read_to_string(dir.path().join("new.env.jsonl")).unwrap();
        assert!(log.starts_with("{\"first_row\":0,\"rows\":1,"), "{log}");
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
