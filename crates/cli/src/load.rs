//! `swizzledb load`: reads records in the form `swizzledb dump` writes (csv or jsonl, hex or
//! base64: `records.rs`) into a tree, in transactions of `--batch` records.
//!
//! Each batch is parsed whole before its transaction begins, so a malformed line stops the load
//! at a batch boundary: the batches before it stay committed, nothing of its own batch is
//! written, and the error names the line. A record the tree refuses (a key or value over its
//! limits) rolls its batch back the same way. A load that an error stops before it commits a
//! batch leaves the database as it was: the first batch is read before the database is opened,
//! a tree the load made is dropped again, and a database `--create` made is removed. An input
//! with no records (`dump` of an empty tree) succeeds and leaves the tree made, empty.

use clap::Args;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swizzledb::{Database, Error, TreeError};
use swizzledb_lab::support::progress::Progress;
use swizzledb_lab::{EXIT_FAILED, EXIT_UNUSABLE_PATH, EXIT_USAGE};

use crate::records::{self, Encoding, Format, CSV_HEADER};

/// `swizzledb load`.
#[derive(Args)]
pub struct LoadArgs {
    /// The database file to load into (opened read-write; restarted first if it needs it)
    pub file: PathBuf,
    /// The tree to load into: created if missing; records already there with the same keys
    /// are replaced, the others kept
    #[arg(long, value_parser = tree_name)]
    pub tree: String,
    /// The records to read, as `swizzledb dump` writes them [default: standard input]
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The input's form: csv (a `key,value` header, optional, then KEY,VALUE lines) or jsonl
    /// (one `{"key":..,"value":..}` object a line)
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,
    /// How the input spells keys and values: hex or base64
    #[arg(long, value_enum, default_value_t = Encoding::Hex)]
    pub encoding: Encoding,
    /// Records per transaction, 1 to 4,294,967,295, written as the other counts are (1000, 1e3,
    /// 1,000 or 1k)
    #[arg(long, default_value = "1000", value_parser = parse_batch)]
    pub batch: u32,
    /// Create the database file if it does not exist (with the engine's defaults: logged)
    #[arg(long)]
    pub create: bool,
}

/// `--batch`: a count as every count option takes it (`swizzledb_lab::support::units::parse_count`),
/// from 1 to `u32::MAX`.
fn parse_batch(input: &str) -> Result<u32, String> {
    let n = swizzledb_lab::support::units::parse_count_in(
        input,
        "--batch",
        1,
        u64::from(u32::MAX),
        "records per transaction",
    )?;
    u32::try_from(n).map_err(|e| e.to_string())
}

/// `--tree`'s value, checked by the engine's rule for tree names before anything is opened.
fn tree_name(name: &str) -> Result<String, String> {
    swizzledb_buffer::validate_tree_name(name).map(|()| name.to_owned())
}

/// What the load did before it stopped.
struct Loaded {
    records: u64,
    transactions: u64,
}

/// Why the load stopped early.
enum Stop {
    /// A malformed input line: the line number and what is wrong.
    Input(u64, String),
    /// Reading the input failed.
    Read(io::Error),
    /// The tree could not be opened or created.
    Tree(Error),
    /// The database refused a batch (the line that starts it).
    Database(u64, Error),
}

/// `swizzledb load FILE --tree T`.
pub fn run(args: &LoadArgs) -> ExitCode {
    if args.format == Format::Hex {
        eprintln!("error: --format hex is a dump for reading; load reads csv or jsonl");
        return ExitCode::from(EXIT_USAGE);
    }
    let (input, len): (Box<dyn BufRead>, Option<u64>) = match &args.input {
        None => (Box::new(BufReader::new(io::stdin())), None),
        Some(p) if p.as_os_str() == "-" => (Box::new(BufReader::new(io::stdin())), None),
        Some(p) => match File::open(p).and_then(|f| f.metadata().map(|m| (f, m))) {
            Ok((_, m)) if m.is_dir() => {
                eprintln!(
                    "error: cannot read the input {}: it is a directory; name a file of records",
                    p.display()
                );
                return ExitCode::from(EXIT_UNUSABLE_PATH);
            }
            Ok((f, m)) => (Box::new(BufReader::new(f)), Some(m.len())),
            Err(e) => {
                eprintln!("error: cannot read the input {}: {e}", p.display());
                return ExitCode::from(EXIT_UNUSABLE_PATH);
            }
        },
    };
    if !args.create && !args.file.exists() {
        eprintln!("error: no database file {}: pass --create to make a new one", args.file.display());
        return ExitCode::from(EXIT_UNUSABLE_PATH);
    }
    let bar = Progress::on_terminal().counter(len.unwrap_or(0), format!("loading {}", args.tree));
    let progress = |bytes| bar.inc(bytes);
    let mut batches = Batches { input, args, line_no: 0, bytes: Vec::new(), at_end: false };
    let mut done = Loaded { records: 0, transactions: 0 };
    // The first batch is read before the database is opened: input it refuses leaves the
    // database as it was, not even made by --create.
    let mut batch = Vec::new();
    let first = match batches.next(&mut batch, &progress) {
        Ok(first) => first,
        Err(stop) => {
            bar.finish_and_clear();
            return report(args, Err(stop), &done);
        }
    };
    let existed = args.file.exists();
    let db = match Database::builder().open_or_create(&args.file) {
        Ok(db) => db,
        Err(e) => {
            bar.finish_and_clear();
            eprintln!("error: opening {}: {e}", args.file.display());
            return ExitCode::from(EXIT_UNUSABLE_PATH);
        }
    };
    let result = load(&db, &args.tree, first, batch, &mut batches, &mut done, &progress);
    bar.finish_and_clear();
    let closed = db.close();
    let nothing_loaded = result.is_err() && done.transactions == 0;
    if nothing_loaded && !existed && closed.is_ok() {
        // The database this load made holds nothing: removed, as it was before.
        let _ = std::fs::remove_file(&args.file);
        let _ = std::fs::remove_dir_all(swizzledb::wal_dir(&args.file));
    }
    let code = report(args, result, &done);
    match closed {
        Ok(()) => code,
        Err(e) => {
            eprintln!("error: closing {}: {e}", args.file.display());
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// The load's outcome on stdout or stderr, and its exit code.
fn report(args: &LoadArgs, result: Result<(), Stop>, done: &Loaded) -> ExitCode {
    let so_far = format!(
        "{} records in {} transactions were loaded into tree {} before it",
        done.records, done.transactions, args.tree
    );
    match result {
        Ok(()) => crate::printed(format!(
            "loaded {} records into tree {} of {} in {} transactions",
            done.records,
            args.tree,
            args.file.display(),
            done.transactions
        )),
        Err(Stop::Input(line, what)) => {
            eprintln!("error: {}: line {line}: {what}; {so_far}", input_name(args.input.as_deref()));
            ExitCode::from(EXIT_USAGE)
        }
        Err(Stop::Read(e)) => {
            eprintln!("error: reading {}: {e}; {so_far}", input_name(args.input.as_deref()));
            ExitCode::from(EXIT_FAILED)
        }
        Err(Stop::Tree(e)) => {
            eprintln!("error: opening tree {} of {}: {e}", args.tree, args.file.display());
            ExitCode::from(EXIT_FAILED)
        }
        Err(Stop::Database(line, e)) => {
            eprintln!("error: the batch from line {line} was rolled back: {e}; {so_far}");
            // A record over the tree's limits is bad input; anything else stopped the database.
            let bad_record =
                matches!(e, Error::Tree(TreeError::KeyTooLarge { .. } | TreeError::ValueTooLarge { .. }));
            ExitCode::from(if bad_record { EXIT_USAGE } else { EXIT_FAILED })
        }
    }
}

fn input_name(input: Option<&Path>) -> String {
    match input {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "standard input".to_owned(),
    }
}

/// The input, read batch by batch, each batch parsed whole.
struct Batches<'a, R> {
    input: R,
    args: &'a LoadArgs,
    line_no: u64,
    bytes: Vec<u8>,
    at_end: bool,
}

impl<R: BufRead> Batches<'_, R> {
    /// Reads the next batch into `batch` (emptied first): the line it starts at, or `None` at the
    /// end of the input.
    fn next(
        &mut self,
        batch: &mut Vec<(Vec<u8>, Vec<u8>)>,
        progress: &dyn Fn(u64),
    ) -> Result<Option<u64>, Stop> {
        let args = self.args;
        while !self.at_end {
            batch.clear();
            let first = self.line_no + 1;
            while batch.len() < args.batch as usize {
                self.bytes.clear();
                let n = self.input.read_until(b'\n', &mut self.bytes).map_err(Stop::Read)?;
                if n == 0 {
                    self.at_end = true;
                    break;
                }
                progress(n as u64);
                self.line_no += 1;
                let line_no = self.line_no;
                let text = std::str::from_utf8(&self.bytes).map_err(|e| {
                    let at = e.valid_up_to() + 1;
                    Stop::Input(line_no, format!("not UTF-8 at byte {at}, so not a line that dump wrote"))
                })?;
                let line = text.trim_end_matches(['\n', '\r']);
                if line.is_empty() || (line_no == 1 && args.format == Format::Csv && line == CSV_HEADER) {
                    continue;
                }
                batch.push(
                    records::parse(args.format, args.encoding, line).map_err(|e| Stop::Input(line_no, e))?,
                );
            }
            if !batch.is_empty() {
                return Ok(Some(first));
            }
        }
        Ok(None)
    }
}

/// Writes `batch`, the first batch (from line `first`), then every batch after it, each in one
/// transaction. A tree this load made is dropped again when no batch was committed to it.
fn load(
    db: &Database,
    name: &str,
    mut first: Option<u64>,
    mut batch: Vec<(Vec<u8>, Vec<u8>)>,
    batches: &mut Batches<'_, impl BufRead>,
    done: &mut Loaded,
    progress: &dyn Fn(u64),
) -> Result<(), Stop> {
    let (tree, made) = match db.tree(name) {
        Ok(tree) => (tree, false),
        Err(Error::TreeNotFound(_)) => (db.tree_or_create(name).map_err(Stop::Tree)?, true),
        Err(e) => return Err(Stop::Tree(e)),
    };
    let result = (|| {
        while let Some(line) = first {
            let mut txn = db.begin();
            for (k, v) in &batch {
                if let Err(e) = txn.put(&tree, k, v) {
                    let _ = txn.abort();
                    return Err(Stop::Database(line, e));
                }
            }
            txn.commit().map_err(|e| Stop::Database(line, e))?;
            done.records += batch.len() as u64;
            done.transactions += 1;
            first = batches.next(&mut batch, progress)?;
        }
        Ok(())
    })();
    if result.is_err() && done.transactions == 0 && made {
        drop(tree);
        // Best effort: the error that stopped the load is the one reported.
        let _ = db.drop_tree(name);
    }
    result
}
