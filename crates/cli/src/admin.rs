//! `swizzledb stat`, `verify`, `dump` and `log`: a thin layer over `swizzledb::inspect`, which
//! opens every file read-only and runs no restart.
//!
//! Exit codes (also in `--help`; the table for every command is in the README): 0 success
//! (for `verify`: no damage); 1 damage found (listed by `verify`; for the others, a damaged
//! page 0, tree or log stopped them); 2 bad arguments; 3 the input cannot be inspected
//! (missing, unreadable, a directory or empty file, not a SwizzleDB file or log, no such tree,
//! another database's log beside the file `log` names); 4 `verify` found damage in a file not
//! at rest: a logged one not closed cleanly (pages restart rebuilds from the log are not
//! damage, and `verify` counts them apart: `swizzledb::inspect`'s module docs) or one open in
//! a `Database`.

use clap::Args;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use swizzledb::inspect::{self, DatabaseFile, InspectError};

use crate::records::{self, Encoding, Format, CSV_HEADER};

/// The exit codes' text for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 success (verify: no damage); 1 damage found; 2 bad arguments; \
3 the input cannot be inspected (missing, a directory, empty, not a SwizzleDB file or log, no such \
tree; for log FILE, another database's log beside FILE); 4 verify found damage, or dump a page it cannot read, in a file not at rest: a logged one \
not closed cleanly (pages restart rebuilds from the log are not damage; open the database, or a copy, to bring the file up to date) or one open in a \
Database (it changed while read)";

/// Damage found.
const DAMAGE: u8 = swizzledb_lab::EXIT_FAILED;
/// The input cannot be inspected.
const NOT_INSPECTABLE: u8 = swizzledb_lab::EXIT_UNUSABLE_PATH;
/// Damage found in a file not at rest (restart would change it, or a `Database` has it open).
const DAMAGE_NOT_AT_REST: u8 = swizzledb_lab::EXIT_DAMAGE_NOT_AT_REST;

/// A database file.
#[derive(Args)]
pub struct FileArgs {
    /// The database file (opened read-only)
    pub file: PathBuf,
}

/// `swizzledb dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// The database file (opened read-only)
    pub file: PathBuf,
    /// The tree whose records to print
    #[arg(long)]
    pub tree: String,
    /// csv: a `key,value` header, then one record a line; jsonl: one `{"key":..,"value":..}`
    /// object a line; in both, keys and values spelled by --encoding, so any bytes round-trip
    /// and `swizzledb load` reads them back. hex: each record as a hex dump with printable
    /// ASCII beside it, for reading
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,
    /// How csv and jsonl spell keys and values: lower-case hex, or base64 (a third shorter)
    #[arg(long, value_enum, default_value_t = Encoding::Hex)]
    pub encoding: Encoding,
}

/// `swizzledb log`.
#[derive(Args)]
pub struct LogArgs {
    /// A log directory, or a database file (its log is FILE.wal)
    pub path: PathBuf,
}

/// The exit code and the one line on stderr for an inspection error.
fn fail(e: &InspectError) -> ExitCode {
    eprintln!("error: {e}");
    match e {
        InspectError::Damaged { .. } | InspectError::TreeDamaged { .. } | InspectError::LogDamaged { .. } => {
            ExitCode::from(DAMAGE)
        }
        _ => ExitCode::from(NOT_INSPECTABLE),
    }
}

/// Runs `body` with a buffered stdout; a closed pipe (`| head`) ends the output quietly, and
/// the command exits with `closed`: what it found, which the output no longer shows (`verify`'s
/// damage; it exited 0 there, as if the file were sound).
fn with_stdout(closed: ExitCode, body: impl FnOnce(&mut dyn Write) -> io::Result<ExitCode>) -> ExitCode {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match body(&mut out).and_then(|code| out.flush().map(|()| code)) {
        Ok(code) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => closed,
        Err(e) => {
            eprintln!("error: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `swizzledb stat FILE`: one `name: value` line per field.
pub fn stat(args: &FileArgs) -> ExitCode {
    let file = match DatabaseFile::open(&args.file) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let i = file.info();
    with_stdout(ExitCode::SUCCESS, |out| {
        writeln!(out, "file: {}", i.path.display())?;
        writeln!(out, "format_version: {}", i.format_version)?;
        writeln!(out, "page_size: {}", i.page_size)?;
        writeln!(out, "page_count: {}", i.page_count)?;
        writeln!(out, "file_bytes: {}", i.file_bytes)?;
        match i.free_pages {
            Some(n) => writeln!(out, "free_pages: {n}")?,
            None => writeln!(out, "free_pages: unknown")?,
        }
        writeln!(out, "logged: {}", if i.logged { "yes" } else { "no" })?;
        writeln!(out, "clean: {}", if i.clean { "yes" } else { "no" })?;
        writeln!(out, "closed_cleanly: {}", if i.closed_cleanly { "yes" } else { "no" })?;
        writeln!(out, "id: {:#018x}", i.id)?;
        if let Some(log) = &i.log {
            writeln!(out, "log_dir: {}", log.dir.display())?;
            if log.missing {
                writeln!(out, "log_missing: yes")?;
            }
            if let Some(problem) = &log.problem {
                writeln!(out, "log_problem: {problem}")?;
            } else {
                writeln!(out, "log_segment_bytes: {}", log.segment_bytes)?;
                writeln!(out, "log_oldest: {}", log.oldest.0)?;
                writeln!(out, "log_end: {}", log.end.0)?;
                if let Some(c) = log.checkpoint {
                    writeln!(out, "log_checkpoint: {}", c.0)?;
                }
                writeln!(out, "log_records_after_checkpoint: {}", log.records_after_checkpoint)?;
                writeln!(out, "log_checkpoint_dirty_pages: {}", log.dirty_pages)?;
                writeln!(out, "log_checkpoint_open_txns: {}", log.open_txns)?;
                writeln!(out, "log_trees: {}", log.trees.len())?;
                for (name, root) in &log.trees {
                    writeln!(out, "log_tree: {} root={root}", one_line(name))?;
                }
            }
        }
        writeln!(out, "trees: {}", i.trees.len())?;
        for (name, root) in &i.trees {
            writeln!(out, "tree: {} root={root}", one_line(name))?;
        }
        Ok(ExitCode::SUCCESS)
    })
    .tap_warn(i)
}

/// A tree's name as `stat` prints it, on one line: a name may hold any UTF-8, so a backslash and
/// every control character (a newline, a tab) are escaped as Rust writes them (`\\`, `\n`,
/// `\u{1b}`), and every other character is itself. A name without either prints unchanged.
fn one_line(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(|c| c == '\\' || c.is_control()) {
        return name.into();
    }
    name.chars()
        .map(|c| if c == '\\' || c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect::<String>()
        .into()
}

/// Warns on stderr about a file that is not what `open` would find without work.
trait TapWarn {
    fn tap_warn(self, info: &inspect::FileInfo) -> Self;
}

impl TapWarn for ExitCode {
    fn tap_warn(self, i: &inspect::FileInfo) -> Self {
        if i.in_use {
            eprintln!("{}", in_use_warning(&i.path));
        }
        let log_missing = i.log.as_ref().is_some_and(|l| l.missing);
        if !i.clean {
            if i.logged && i.closed_cleanly && log_missing {
                eprintln!(
                    "warning: {} was closed cleanly, but its log directory {} is missing: \
                     Builder::open refuses it without its log; copy the log directory with the file",
                    i.path.display(),
                    swizzledb::wal_dir(&i.path).display()
                );
            } else if i.logged && log_missing {
                eprintln!(
                    "warning: {} was not closed cleanly and its log directory {} is missing: \
                     Builder::open refuses it; the changes since its last checkpoint are only in \
                     that log",
                    i.path.display(),
                    swizzledb::wal_dir(&i.path).display()
                );
            } else if let Some(problem) =
                i.log.as_ref().and_then(|l| l.problem.as_ref()).filter(|_| i.logged && i.closed_cleanly)
            {
                eprintln!(
                    "warning: {} was closed cleanly, but its log directory {} cannot be used: {problem}",
                    i.path.display(),
                    swizzledb::wal_dir(&i.path).display()
                );
            } else if i.logged {
                eprintln!(
                    "warning: {} was not closed cleanly: opening it restarts from its log, which \
                     changes its pages; shown as the file holds it now",
                    i.path.display()
                );
            } else {
                eprintln!(
                    "warning: {} has no log and was not closed cleanly: it may be damaged, and \
                     Builder::open refuses it",
                    i.path.display()
                );
            }
        }
        self
    }
}

fn in_use_warning(path: &std::path::Path) -> String {
    format!(
        "warning: {} is open in a Database (in this or another process): it may change while it \
         is read, so what is shown need not be consistent",
        path.display()
    )
}

/// `swizzledb verify FILE`.
pub fn verify(args: &FileArgs) -> ExitCode {
    let file = match DatabaseFile::open(&args.file) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let report = file.verify();
    let code = if report.is_clean() {
        ExitCode::SUCCESS
    } else if report.needs_restart || file.info().in_use {
        ExitCode::from(DAMAGE_NOT_AT_REST)
    } else {
        ExitCode::from(DAMAGE)
    };
    with_stdout(code, |out| {
        for d in &report.damage {
            writeln!(out, "{d}")?;
        }
        for (name, shape) in &report.trees {
            if let Some(s) = shape {
                writeln!(
                    out,
                    "tree {name:?}: ok, height {}, {} nodes, {} leaves, {} records, {} large values in {} overflow pages",
                    s.height, s.nodes, s.leaves, s.records, s.large_values, s.overflow_pages
                )?;
            }
        }
        for (name, _) in &report.pending_trees {
            writeln!(
                out,
                "tree {name:?}: not checked: its pages are as of the crash, and restart redoes them first"
            )?;
        }
        if !report.rebuilt_by_restart.is_empty() {
            writeln!(
                out,
                "restart will rebuild {} pages from the log (missing, unwritten or torn in the file: not damage)",
                report.rebuilt_by_restart.len()
            )?;
        }
        if let Some(n) = report.unreachable_pages.filter(|&n| n > 0) {
            writeln!(out, "{n} pages are neither free nor in a tree: lost space, not damage")?;
        }
        let pages = report.damage.iter().filter(|d| d.page.is_some()).count();
        let trees = report.damage.iter().filter(|d| d.tree.is_some()).count();
        writeln!(
            out,
            "verify: {} pages checked, {} trees; {pages} damaged pages, {trees} damaged trees",
            report.pages_checked,
            report.trees.len()
        )?;
        Ok(code)
    })
    .tap_warn(file.info())
}

/// Lines of a hex dump of `bytes`, 16 a line, with the printable ASCII beside them.
fn hex_dump(out: &mut dyn Write, label: &str, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return writeln!(out, "  {label:<5}  (empty)");
    }
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let hexes: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b) } else { '.' })
            .collect();
        let label = if i == 0 { label } else { "" };
        writeln!(out, "  {label:<5}  {:04x}  {:<47}  |{ascii}|", i * 16, hexes.join(" "))?;
    }
    Ok(())
}

/// `swizzledb dump FILE --tree T [--format csv|hex]`.
pub fn dump(args: &DumpArgs) -> ExitCode {
    let file = match DatabaseFile::open(&args.file) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let mut failure = None;
    let code = with_stdout(ExitCode::SUCCESS, |out| {
        let mut io_error = Ok(());
        // The header with the first record (or at the end), so that a tree that cannot be read
        // prints nothing on stdout.
        let header = |out: &mut dyn Write| match args.format {
            Format::Csv => writeln!(out, "{CSV_HEADER}"),
            Format::Jsonl | Format::Hex => Ok(()),
        };
        let mut n = 0u64;
        let result = file.dump(&args.tree, |k, v| {
            if io_error.is_err() {
                return;
            }
            n += 1;
            let first = if n == 1 { header(out) } else { Ok(()) };
            io_error = first.and_then(|()| match args.format {
                Format::Csv | Format::Jsonl => {
                    writeln!(out, "{}", records::line(args.format, args.encoding, k, v))
                }
                Format::Hex => writeln!(out, "record {n}")
                    .and_then(|()| hex_dump(out, "key", k))
                    .and_then(|()| hex_dump(out, "value", v)),
            });
        });
        io_error?;
        match result {
            Err(e) => failure = Some(e),
            Ok(0) => header(out)?,
            Ok(_) => {}
        }
        Ok(ExitCode::SUCCESS)
    });
    match failure {
        Some(e) => {
            let code = fail(&e);
            // verify's exit code for the same pages: a page a file not at rest cannot give is
            // one restart writes (or a writer changed while it was read), not damage.
            let i = file.info();
            let damage = matches!(e, InspectError::Damaged { .. } | InspectError::TreeDamaged { .. });
            if damage && ((i.logged && !i.clean) || i.in_use) {
                ExitCode::from(DAMAGE_NOT_AT_REST)
            } else {
                code
            }
        }
        None => code.tap_warn(file.info()),
    }
}

/// `swizzledb log DIR|FILE`.
pub fn log(args: &LogArgs) -> ExitCode {
    let records = match inspect::read_log(&args.path) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    if records.in_use {
        eprintln!("{}", in_use_warning(&records.dir));
    }
    for (file, len, end) in &records.torn_tail {
        eprintln!(
            "warning: {}: bytes {end}..{len} hold no valid record (a torn tail; the next open of \
             the database cuts it)",
            file.display()
        );
    }
    let mut failure = None;
    let code = with_stdout(ExitCode::SUCCESS, |out| {
        for item in records {
            match item {
                Ok(entry) => writeln!(out, "{entry}")?,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    });
    match failure {
        Some(e) => fail(&e),
        None => code,
    }
}

/// The logger for `RUST_LOG`'s value `spec`: every target at `warn` (warnings and errors), then
/// `spec`'s directives in `env_logger`'s form over that (`debug`, `swizzledb=debug`,
/// `swizzledb_wal=trace,swizzledb_buffer=off`; a target names the modules whose path starts
/// with it, so `swizzledb` covers every engine crate). Each record is one line on stderr,
/// `level: message`.
fn logger(spec: Option<&str>) -> env_logger::Builder {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters("warn");
    if let Some(spec) = spec.filter(|s| !s.trim().is_empty()) {
        builder.parse_filters(spec);
    }
    builder.format(|out, record| {
        let level = record.level().as_str().to_ascii_lowercase();
        writeln!(out, "{level}: {}", record.args())
    });
    builder
}

/// Installs [`logger`] for the `RUST_LOG` environment variable as the `log` crate's logger.
pub fn init_logging() {
    let spec = std::env::var("RUST_LOG").ok();
    let _already_set = logger(spec.as_deref()).try_init();
}

#[cfg(test)]
mod tests {
    use super::logger;
    use log::{Level, Log, Metadata, Record};
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    fn enabled(spec: Option<&str>, target: &str, level: Level) -> bool {
        logger(spec).build().enabled(&Metadata::builder().target(target).level(level).build())
    }

    #[test]
    fn without_rust_log_warnings_and_errors_pass() {
        for spec in [None, Some(""), Some("  ")] {
            assert!(enabled(spec, "swizzledb::open", Level::Error));
            assert!(enabled(spec, "swizzledb_buffer::pool::evictor", Level::Warn));
            assert!(!enabled(spec, "swizzledb::open", Level::Info));
            assert!(!enabled(spec, "swizzledb::logging", Level::Debug));
        }
    }

    #[test]
    fn rust_log_filters_by_module_and_keeps_warnings_elsewhere() {
        let spec = Some("swizzledb_wal=debug");
        assert!(enabled(spec, "swizzledb_wal::manager", Level::Debug));
        assert!(!enabled(spec, "swizzledb_wal::manager", Level::Trace));
        assert!(!enabled(spec, "swizzledb::logging", Level::Debug), "another crate stays at warn");
        assert!(enabled(spec, "swizzledb::logging", Level::Warn));

        // A crate's name is a prefix of its modules' targets, so `swizzledb` names every engine crate.
        assert!(enabled(Some("swizzledb=debug"), "swizzledb_buffer::pool", Level::Debug));
        // A module can be quietened below the default, and a level alone applies to every target.
        assert!(!enabled(Some("swizzledb_buffer=off"), "swizzledb_buffer::pool::evictor", Level::Error));
        assert!(enabled(Some("swizzledb_buffer=off"), "swizzledb::open", Level::Warn));
        assert!(enabled(Some("trace"), "anything", Level::Trace));
        assert!(!enabled(Some("error"), "swizzledb::open", Level::Warn));
    }

    #[test]
    fn a_spec_that_does_not_parse_leaves_the_default() {
        assert!(enabled(Some("verbose"), "swizzledb::open", Level::Warn));
        assert!(!enabled(Some("verbose"), "swizzledb::open", Level::Info));
    }

    /// What the logger writes, kept for the test to read.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_record_is_one_line_of_level_and_message() {
        let out = Captured::default();
        let logger = logger(None).target(env_logger::Target::Pipe(Box::new(out.clone()))).build();
        for (level, msg) in
            [(Level::Warn, "page 7 is torn"), (Level::Info, "dropped"), (Level::Error, "gone")]
        {
            logger.log(
                &Record::builder().target("swizzledb::open").level(level).args(format_args!("{msg}")).build(),
            );
        }
        logger.flush();
        assert_eq!(
            String::from_utf8(out.0.lock().unwrap().clone()).unwrap(),
            "warn: page 7 is torn\nerror: gone\n"
        );
    }
}
