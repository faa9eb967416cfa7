//! `swizzledb trace`: buffer reference traces (rule B17 of the buffer README, format in
//! `docs/trace-format.md`).
//!
//! - `trace record --out FILE -- <command>` runs any other `swizzledb` command (a bench, an
//!   experiment, the demo) with tracing on for every database it opens. The first database
//!   writes `FILE`, the next ones `FILE.1`, `FILE.2`, … in the order they are opened; the
//!   command's own output is unchanged, and a list of the trace files follows on stderr.
//! - `trace export --input FILE --csv OUT` writes one CSV row per event.

use clap::{Args, Parser, Subcommand};
use std::error::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use swizzledb::{TraceError, TraceReader};

/// What `swizzledb trace` does.
#[derive(Subcommand)]
pub enum TraceAction {
    /// Run another swizzledb command (after `--`) with a buffer reference trace recorded for
    /// every database it opens: FILE for the first, FILE.1, FILE.2, ... for the next ones
    Record(RecordArgs),
    /// Write a trace as CSV: event, thread, page, parent, latch, hit, time_ns
    Export(ExportArgs),
    /// Miss ratios of every replacement policy and of Belady's OPT at several cache sizes, and
    /// the LRU stack-distance histogram, over a recorded, plain-text or synthetic trace
    Analyze(crate::analyze::AnalyzeArgs),
    /// Write a synthetic reference string (uniform, Zipf, scans, loops, mixtures, a drifting
    /// hot set) as a plain-text trace
    Generate(crate::analyze::GenerateArgs),
}

/// Arguments of `trace record`.
#[derive(Args)]
pub struct RecordArgs {
    /// Trace file of the first database the command opens (further ones get .1, .2, ...)
    #[arg(long, value_name = "FILE", default_value = "swizzledb-trace.swzt")]
    out: PathBuf,
    /// The command to run and its arguments, e.g. `-- bench lookup --records 100k --mode swizzling`
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Arguments of `trace export`.
#[derive(Args)]
pub struct ExportArgs {
    /// The trace file
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The CSV file to write (overwritten)
    #[arg(long, value_name = "OUT")]
    csv: PathBuf,
}

/// The recording in progress: set by `trace record` while its command runs.
struct Recording {
    base: PathBuf,
    files: Vec<PathBuf>,
}

static RECORDING: Mutex<Option<Recording>> = Mutex::new(None);

/// The trace file for the next database the running command creates, if `trace record` runs
/// it (`None` otherwise). Every call hands out a new file name.
pub fn next_trace_path() -> Option<PathBuf> {
    let mut rec = RECORDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rec = rec.as_mut()?;
    let path = numbered(&rec.base, rec.files.len());
    rec.files.push(path.clone());
    Some(path)
}

/// `base` for the first database, `base.N` for the N-th further one.
fn numbered(base: &Path, n: usize) -> PathBuf {
    if n == 0 {
        return base.to_path_buf();
    }
    let mut s = base.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

/// Runs a `trace` action.
///
/// # Errors
/// Bad arguments (as [`crate::Usage`]), errors of the traced command, trace I/O errors.
pub fn run(action: TraceAction) -> Result<ExitCode, Box<dyn Error>> {
    match action {
        TraceAction::Record(args) => record(&args),
        TraceAction::Export(args) => export(&args),
        TraceAction::Analyze(args) => crate::analyze::analyze(&args),
        TraceAction::Generate(args) => crate::analyze::generate(&args),
    }
}

fn record(args: &RecordArgs) -> Result<ExitCode, Box<dyn Error>> {
    let argv = std::iter::once(OsString::from("swizzledb")).chain(args.command.iter().cloned());
    let cli = match crate::Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            // The traced command's own usage error or --help, as if it had been run directly.
            let _ = e.print();
            return Ok(if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS });
        }
    };
    if matches!(cli.command, crate::Command::Trace { .. }) {
        return Err(crate::Usage(
            "trace record runs a bench, experiment or demo command, not another trace command".into(),
        )
        .into());
    }
    // Fail before the run, not after it, if the trace cannot be written.
    std::fs::File::create(&args.out)
        .map_err(|e| crate::Usage(format!("cannot write --out {}: {e}", args.out.display())))?;
    std::fs::remove_file(&args.out).map_err(|e| format!("removing {}: {e}", args.out.display()))?;

    *RECORDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
        Some(Recording { base: args.out.clone(), files: Vec::new() });
    let outcome = crate::run(cli.command);
    let files = RECORDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .map(|r| r.files)
        .unwrap_or_default();
    if files.is_empty() {
        eprintln!("The command opened no database; no trace was written.");
    } else {
        eprintln!("Traced {} database(s):", files.len());
        for f in &files {
            eprintln!("  {}", describe(f));
        }
    }
    outcome
}

/// One line about a finished trace file: mode, events, size (or why it cannot be read).
fn describe(path: &Path) -> String {
    let summary = || -> Result<String, TraceError> {
        let reader = TraceReader::open(path)?;
        let h = *reader.header();
        let mut events = 0u64;
        for e in reader {
            e?;
            events += 1;
        }
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Ok(format!(
            "{}: {} mode, {} frames, {} events, {}",
            path.display(),
            h.mode,
            h.frames,
            crate::report::thousands(events),
            crate::report::bytes(bytes)
        ))
    };
    summary().unwrap_or_else(|e| format!("{}: {e}", path.display()))
}

fn export(args: &ExportArgs) -> Result<ExitCode, Box<dyn Error>> {
    let rows = swizzledb_buffer::export_csv(&args.input, &args.csv)?;
    eprintln!("Wrote {} events to {}.", crate::report::thousands(rows), args.csv.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn further_databases_get_numbered_files() {
        assert_eq!(numbered(Path::new("t.swzt"), 0), PathBuf::from("t.swzt"));
        assert_eq!(numbered(Path::new("dir/t.swzt"), 2), PathBuf::from("dir/t.swzt.2"));
    }
}
