//! `swizzledb compact PATH`: the database rewritten in place, its freed pages returned to the
//! file system (`Builder::compact`, RECOVERY.md R28).

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use swizzledb::{Database, Error};
use swizzledb_lab::{EXIT_FAILED, EXIT_UNUSABLE_PATH};

/// `swizzledb compact`.
#[derive(Args)]
pub struct CompactArgs {
    /// The database to compact (no process may have it open; restarted first if it needs it)
    pub file: PathBuf,
}

/// `swizzledb compact PATH`.
pub fn run(args: &CompactArgs) -> ExitCode {
    if !args.file.exists() {
        eprintln!("error: no database file {}", args.file.display());
        return ExitCode::from(EXIT_UNUSABLE_PATH);
    }
    let started = std::time::Instant::now();
    match Database::builder().compact(&args.file) {
        Ok(stats) => crate::printed(format!(
            "compacted {}: {} bytes before, {} after ({} trees, {} records); {:.1} s",
            args.file.display(),
            stats.file_bytes_before,
            stats.file_bytes_after,
            stats.trees,
            stats.records,
            started.elapsed().as_secs_f64()
        )),
        // Another process opened or removed it since.
        Err(e @ (Error::AlreadyOpen(_) | Error::NotFound(_))) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_UNUSABLE_PATH)
        }
        // `Builder::compact` reports a database it cannot open like a compaction that failed:
        // an open tells them apart, after the failure only, so that a compaction that succeeds
        // opens the database once. A failed compaction left the database as it was, or with a
        // swap that this open finishes.
        Err(e) => match Database::builder().open(&args.file) {
            Err(open) => {
                eprintln!(
                    "error: {} cannot be opened, so nothing was compacted: {open}",
                    args.file.display()
                );
                ExitCode::from(EXIT_UNUSABLE_PATH)
            }
            Ok(db) => {
                let _ = db.close();
                eprintln!(
                    "error: compacting {}: {e}; the database is as it was, or the next open finishes the swap",
                    args.file.display()
                );
                ExitCode::from(EXIT_FAILED)
            }
        },
    }
}
