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
use swizzledb::{TraceError, TraceReader};
use swizzledb_lab::recording;

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
    Analyze(swizzledb_lab::experiments::trace_analyze::AnalyzeArgs),
    /// Write a synthetic reference string (uniform, Zipf, scans, loops, mixtures, a drifting
    /// hot set) as a plain-text trace
    Generate(swizzledb_lab::experiments::trace_analyze::GenerateArgs),
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

/// Runs a `trace` action.
///
/// # Errors
/// Bad arguments (as [`swizzledb_lab::Usage`]), errors of the traced command, trace I/O errors.
pub fn run(action: TraceAction) -> Result<ExitCode, Box<dyn Error>> {
    match action {
        TraceAction::Record(args) => record(&args),
        TraceAction::Export(args) => export(&args),
        TraceAction::Analyze(args) => swizzledb_lab::experiments::trace_analyze::analyze(&args),
        TraceAction::Generate(args) => swizzledb_lab::experiments::trace_analyze::generate(&args),
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
        return Err(swizzledb_lab::Usage(
            "trace record runs a bench, experiment or demo command, not another trace command".into(),
        )
        .into());
    }
    // Fail before the run, not after it, if the trace cannot be written.
    std::fs::File::create(&args.out)
        .map_err(|e| swizzledb_lab::Usage(format!("cannot write --out {}: {e}", args.out.display())))?;
    std::fs::remove_file(&args.out).map_err(|e| format!("removing {}: {e}", args.out.display()))?;

    recording::start(&args.out);
    let outcome = crate::run(cli.command);
    let files = recording::finish();
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
            swizzledb_lab::text::thousands(events),
            swizzledb_lab::text::bytes(bytes)
        ))
    };
    summary().unwrap_or_else(|e| format!("{}: {e}", path.display()))
}

fn export(args: &ExportArgs) -> Result<ExitCode, Box<dyn Error>> {
    let rows = swizzledb_buffer::export_csv(&args.input, &args.csv)?;
    eprintln!("Wrote {} events to {}.", swizzledb_lab::text::thousands(rows), args.csv.display());
    Ok(ExitCode::SUCCESS)
}
