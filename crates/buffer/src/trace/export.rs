//! What is derived from a trace: the reference string of its fixes, and CSV.

use super::error::{io_err, TraceError};
use super::format::EventKind;
use super::reader::TraceReader;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use swizzledb_sync::LatchMode;

/// The page ids of the fix events of a trace, in timestamp order (events of equal timestamp in
/// file order): the reference string the offline simulator replays.
///
/// # Errors
/// As [`TraceReader`].
pub fn page_references(path: impl AsRef<Path>) -> Result<Vec<u64>, TraceError> {
    let mut refs: Vec<(u64, u64)> = Vec::new();
    let mut threads = None;
    let mut many = false;
    for e in TraceReader::open(path)? {
        let e = e?;
        if e.kind == EventKind::Fix {
            many |= *threads.get_or_insert(e.thread) != e.thread;
            refs.push((e.time_ns, e.page.get()));
        }
    }
    if many {
        // Stable: ties keep file order, which is each thread's own order.
        refs.sort_by_key(|&(t, _)| t);
    }
    Ok(refs.into_iter().map(|(_, p)| p).collect())
}

/// The CSV header written by [`export_csv`] (the columns of Gilbert 2017, Appendix B, that
/// SwizzleDB records).
pub const CSV_HEADER: &str = "event,thread,page,parent,latch,hit,time_ns";

/// Writes the events of a trace as CSV (header [`CSV_HEADER`]; empty cells for absent values),
/// in file order. Returns the number of rows.
///
/// # Errors
/// Errors reading the trace (as [`TraceReader`]) or writing `out` (named as `out_name`).
pub fn write_csv<R: Read, W: Write>(
    reader: TraceReader<R>,
    out: W,
    out_name: &Path,
) -> Result<u64, TraceError> {
    let mut out = BufWriter::new(out);
    let err = io_err(out_name);
    let mut rows = 0u64;
    let write = || -> Result<(), TraceError> {
        writeln!(out, "{CSV_HEADER}").map_err(io_err(out_name))?;
        for e in reader {
            let e = e?;
            let parent = e.parent.map(|p| p.get().to_string()).unwrap_or_default();
            let latch = match e.latch {
                None => "",
                Some(LatchMode::Shared) => "shared",
                Some(LatchMode::Exclusive) => "exclusive",
            };
            let hit = match e.hit {
                None => "",
                Some(true) => "hit",
                Some(false) => "miss",
            };
            writeln!(out, "{},{},{},{parent},{latch},{hit},{}", e.kind, e.thread, e.page.get(), e.time_ns)
                .map_err(io_err(out_name))?;
            rows += 1;
        }
        Ok(())
    };
    write()?;
    out.flush().map_err(err)?;
    Ok(rows)
}

/// Exports the trace at `input` as CSV to `output` (see [`write_csv`]). Returns the number of
/// rows.
///
/// # Errors
/// As [`write_csv`]; I/O errors creating `output`.
pub fn export_csv(input: &Path, output: &Path) -> Result<u64, TraceError> {
    let reader = TraceReader::open(input)?;
    let out = File::create(output).map_err(io_err(output))?;
    write_csv(reader, out, output)
}
