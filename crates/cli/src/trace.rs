//! `swizzledb trace`: buffer reference traces (rule B17 of the buffer README, format in
//! `docs/trace-format.md`).
//!
//! - `trace record --out FILE -- <command>` runs any other `swizzledb` command (a bench, an
//!   experiment, the demo) with tracing on for every database it opens. The first database
//!   writes `FILE`, the next ones `FILE.1`, `FILE.2`, … in the order they are opened; the
//!   command's own output is unchanged, and a list of the trace files follows on stderr. The
//!   numbered traces an earlier, larger recording to `FILE` left after the new ones are removed.
//! - `trace export --input FILE --csv OUT` writes one CSV row per event of a recorded trace;
//!   `trace export --input FILE --oracle-general OUT` writes the reference string of any trace
//!   `trace analyze` reads as libCacheSim's oracleGeneral (`docs/trace-format.md`).

use clap::{Args, Subcommand};
use std::error::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swizzledb::{TraceError, TraceReader};
use swizzledb_lab::support::recording;

/// What `swizzledb trace` does.
#[derive(Subcommand)]
pub enum TraceAction {
    /// Run another swizzledb command (after `--`: a bench, an experiment or the demo) with a
    /// buffer reference trace recorded for every database it makes: FILE for the first, FILE.1,
    /// FILE.2, ... for the next ones (numbered traces of an earlier, larger recording to FILE
    /// that follow them are removed)
    Record(RecordArgs),
    /// Write a recorded trace's events as CSV (event, thread, page, parent, latch, hit,
    /// time_ns), or the reference string of any trace as libCacheSim's oracleGeneral
    Export(ExportArgs),
    // The lab's trace commands (`analyze`, `generate`).
    #[command(flatten)]
    Lab(swizzledb_lab::experiments::registry::TraceCommand),
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
    /// The trace file, in any format `trace analyze` reads (- for standard input, with
    /// --oracle-general only)
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    #[command(flatten)]
    format: swizzledb_lab::experiments::tools::trace_analyze::FormatArgs,
    /// Write the events of a recorded SwizzleDB trace file as CSV (replaced once the CSV is
    /// whole: a trace that cannot be read to its end leaves a file there as it was)
    #[arg(long, value_name = "OUT", required_unless_present = "oracle_general")]
    csv: Option<PathBuf>,
    /// Write the references as libCacheSim's oracleGeneral binary trace (replaced once whole; -
    /// for standard output): object id = page id, next access computed, see docs/trace-format.md
    #[arg(long, value_name = "OUT")]
    oracle_general: Option<PathBuf>,
    /// Object size written to oracleGeneral: auto (a recorded trace's page size; the input's
    /// own sizes for oracleGeneral and CSV with a size column; else 1) or a number of bytes
    #[arg(long, value_name = "BYTES", default_value = "auto", value_parser = parse_object_size)]
    object_size: ObjectSize,
}

/// `--object-size`: `auto` (`None`) or bytes.
#[derive(Copy, Clone, Debug)]
pub struct ObjectSize(Option<u32>);

fn parse_object_size(input: &str) -> Result<ObjectSize, String> {
    if input.trim().eq_ignore_ascii_case("auto") {
        return Ok(ObjectSize(None));
    }
    match input.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(ObjectSize(Some(n))),
        _ => Err(format!("{input:?}: give auto or a size in bytes from 1 to {}", u32::MAX)),
    }
}

/// Runs a `trace` action.
///
/// # Errors
/// Bad arguments (as [`swizzledb_lab::Usage`]), errors of the traced command, trace I/O errors.
pub fn run(action: TraceAction) -> Result<ExitCode, Box<dyn Error>> {
    match action {
        TraceAction::Record(args) => record(&args),
        TraceAction::Export(args) => export(&args),
        TraceAction::Lab(command) => command.run(),
    }
}

fn record(args: &RecordArgs) -> Result<ExitCode, Box<dyn Error>> {
    let argv = std::iter::once(OsString::from("swizzledb")).chain(args.command.iter().cloned());
    let cli = match crate::parse_cli(argv) {
        Ok(cli) => cli,
        // The traced command's own usage error or --help, as if it had been run directly.
        Err(e) => return Ok(crate::refused(&e)),
    };
    if matches!(cli.command, crate::Command::Trace { .. }) {
        return Err(swizzledb_lab::Usage(
            "trace record runs a bench, experiment or demo command, not another trace command".into(),
        )
        .into());
    }
    // Fail before the run, not after it, if the trace cannot be written. A file already there
    // is opened without truncating it: only a database's trace replaces it.
    let existed = args.out.symlink_metadata().is_ok();
    std::fs::OpenOptions::new().append(true).create(true).open(&args.out).map_err(|e| {
        swizzledb_lab::UnusablePath(format!("cannot write --out {}: {e}", args.out.display()))
    })?;
    if !existed {
        std::fs::remove_file(&args.out).map_err(|e| format!("removing {}: {e}", args.out.display()))?;
    }

    recording::start(&args.out);
    let outcome = crate::run(cli.command);
    let files = recording::finish();
    if !files.is_empty() {
        remove_earlier_parts(&args.out, files.len());
    }
    if files.is_empty() {
        eprintln!(
            "The command made no database that is traced (those of bench, experiment and demo \
             commands are); no trace was written."
        );
    } else {
        eprintln!("Traced {} database(s):", files.len());
        for f in &files {
            eprintln!("  {}", describe(f));
        }
    }
    outcome
}

/// Removes `out.N`, `out.N+1`, ... from `first` on, as long as each is a recorded trace: the
/// files an earlier recording to `out` of more databases than this one left after this one's,
/// which would otherwise be taken for parts of it. A file of such a name that is no trace is not
/// ours to remove, and ends the search. Says on stderr what it removed, or could not.
fn remove_earlier_parts(out: &Path, first: usize) {
    for n in first.. {
        let mut name = out.as_os_str().to_owned();
        name.push(format!(".{n}"));
        let path = PathBuf::from(name);
        if !is_recorded_trace(&path) {
            break;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => eprintln!("Removed {} of an earlier recording.", path.display()),
            Err(e) => {
                eprintln!(
                    "warning: {} of an earlier recording is left beside this one, since it cannot be \
                     removed: {e}; remove it before reading this recording's files",
                    path.display()
                );
                break;
            }
        }
    }
}

/// Whether `path` is a plain file that starts as a recorded trace does.
fn is_recorded_trace(path: &Path) -> bool {
    use std::io::Read;
    if !path.symlink_metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut magic = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && magic == swizzledb_buffer::TRACE_MAGIC
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
            swizzledb_lab::support::text::thousands(events),
            swizzledb_lab::support::text::bytes(bytes)
        ))
    };
    summary().unwrap_or_else(|e| format!("{}: {e}", path.display()))
}

/// Whether `a` and `b` name one existing file (by device and inode: other spellings and links
/// too).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

/// `trace export --csv`: the events of the recorded trace `input` as CSV at `csv`. The exit
/// codes are those of every command (README "Exit codes"): an input that is missing or cannot be
/// read, or a `csv` that cannot be created, is an unusable path (3); an input that is not a
/// recorded trace, or one truncated or corrupted (found only when its events are read), is bad
/// input (2). The CSV is written [`Beside`] its target, so that a trace that fails halfway
/// leaves no partial CSV, and a file already at `csv` as it was.
fn export_csv(input: &Path, csv: &Path) -> Result<u64, Box<dyn Error>> {
    let reader = TraceReader::open(input).map_err(|e| -> Box<dyn Error> {
        match e {
            TraceError::Io { .. } => {
                swizzledb_lab::UnusablePath(format!("cannot read --input {}: {e}", input.display())).into()
            }
            e => swizzledb_lab::Usage(e.to_string()).into(),
        }
    })?;
    let (partial, file) = Beside::create(csv, "--csv")?;
    let written = swizzledb_buffer::trace::write_csv(reader, file, csv).and_then(|rows| {
        partial.finish().map(|()| rows).map_err(|source| TraceError::Io { file: csv.to_path_buf(), source })
    });
    written.map_err(|e| -> Box<dyn Error> {
        match e {
            // Reading or writing failed while running: exit 1.
            TraceError::Io { .. } => format!("{e}; no CSV was written to {}", csv.display()).into(),
            e => swizzledb_lab::Usage(format!("{e}; no CSV was written to {}", csv.display())).into(),
        }
    })
}

/// A file of `trace export` written under a temporary name beside its target and renamed to
/// the target by [`finish`](Beside::finish): an export that fails (the guard dropped unfinished)
/// leaves no partial file, and a file already at the target as it was.
struct Beside {
    partial: PathBuf,
    target: PathBuf,
    finished: bool,
}

impl Beside {
    /// Creates the temporary file for `target`, which the option `flag` named; a target that
    /// cannot be written is an unusable path.
    fn create(target: &Path, flag: &str) -> Result<(Beside, std::fs::File), swizzledb_lab::UnusablePath> {
        let unusable = |why: String| {
            swizzledb_lab::UnusablePath(format!("cannot write {flag} {}: {why}", target.display()))
        };
        if target.is_dir() {
            return Err(unusable("it is a directory; name a file".into()));
        }
        let name = target.file_name().ok_or_else(|| unusable("it names no file".into()))?;
        let partial =
            target.with_file_name(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
        let file = std::fs::File::create(&partial).map_err(|e| unusable(e.to_string()))?;
        Ok((Beside { partial, target: target.to_path_buf(), finished: false }, file))
    }

    /// Renames the whole file to its target.
    fn finish(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.partial, &self.target)?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

fn export(args: &ExportArgs) -> Result<ExitCode, Box<dyn Error>> {
    if let Some(csv) = &args.csv {
        if args.input.as_os_str() == "-" {
            return Err(swizzledb_lab::Usage(
                "--csv reads a recorded trace file, not standard input; give its path".into(),
            )
            .into());
        }
        if same_file(&args.input, csv) {
            return Err(swizzledb_lab::Usage(format!(
                "--csv {} is the input trace: writing it would destroy what is read; name another file",
                csv.display()
            ))
            .into());
        }
        let rows = export_csv(&args.input, csv)?;
        eprintln!("Wrote {} events to {}.", swizzledb_lab::support::text::thousands(rows), csv.display());
    }
    if let Some(out) = &args.oracle_general {
        if same_file(&args.input, out) {
            return Err(swizzledb_lab::Usage(format!(
                "--oracle-general {} is the input trace: writing it would replace what is read; name another file",
                out.display()
            ))
            .into());
        }
        // Written beside its target, so that a trace refused halfway (a size or time that does
        // not fit, found before any record is written) leaves a file already there as it was.
        let partial =
            if out.as_os_str() == "-" { None } else { Some(Beside::create(out, "--oracle-general")?) };
        let mut loaded =
            swizzledb_lab::experiments::tools::trace_analyze::load_requests(&args.input, &args.format)?;
        if let ObjectSize(Some(size)) = args.object_size {
            for r in &mut loaded.requests {
                r.size = u64::from(size);
            }
        }
        let bad_value = |e: swizzledb_sim::TraceError| -> Box<dyn Error> {
            match e {
                swizzledb_sim::TraceError::Io { .. } => e.into(),
                e => swizzledb_lab::Usage(e.to_string()).into(),
            }
        };
        let records = match partial {
            None => swizzledb_sim::write_oracle_general(
                std::io::stdout().lock(),
                &loaded.requests,
                "standard output",
            )
            .map_err(bad_value)?,
            Some((partial, file)) => {
                let records =
                    swizzledb_sim::write_oracle_general(file, &loaded.requests, &out.display().to_string())
                        .map_err(bad_value)?;
                partial.finish().map_err(|e| format!("writing --oracle-general {}: {e}", out.display()))?;
                records
            }
        };
        let skipped = if loaded.skipped_zero_size > 0 {
            format!(
                " ({} requests of size 0 skipped)",
                swizzledb_lab::support::text::thousands(loaded.skipped_zero_size)
            )
        } else {
            String::new()
        };
        eprintln!(
            "Wrote {} oracleGeneral records from {} to {}{skipped}.",
            swizzledb_lab::support::text::thousands(records),
            loaded.what,
            if out.as_os_str() == "-" { "standard output".to_string() } else { out.display().to_string() }
        );
    }
    Ok(ExitCode::SUCCESS)
}
