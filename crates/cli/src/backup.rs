//! `swizzledb backup SRC DST`: a compacted copy of a database that opens on its own
//! (`Database::backup_to`, RECOVERY.md R26).

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use swizzledb::{Database, Error};
use swizzledb_lab::{EXIT_FAILED, EXIT_UNUSABLE_PATH, EXIT_USAGE};

/// `swizzledb backup`.
#[derive(Args)]
pub struct BackupArgs {
    /// The database to copy (opened read-write, and restarted first if it needs it; a database
    /// another process has open is refused: back it up there with `Database::backup_to`)
    pub source: PathBuf,
    /// The copy to write: a new path (with `DEST.wal` beside it for a logged database); nothing
    /// appears there until the copy is complete
    pub dest: PathBuf,
}

/// `swizzledb backup SRC DST`.
pub fn run(args: &BackupArgs) -> ExitCode {
    if !args.source.exists() {
        eprintln!("error: no database file {}", args.source.display());
        return ExitCode::from(EXIT_UNUSABLE_PATH);
    }
    // The copy's directory, checked before the source is opened (which may restart it): an
    // output that cannot be created, exit 3 like every such path (README "Exit codes").
    let dest_dir = args.dest.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dest_dir.filter(|d| !d.is_dir()) {
        eprintln!(
            "error: cannot write the copy {}: {} is not a directory; create it first, or choose a path in an \
             existing directory",
            args.dest.display(),
            dir.display()
        );
        return ExitCode::from(EXIT_UNUSABLE_PATH);
    }
    let db = match Database::builder().open(&args.source) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: opening {}: {e}", args.source.display());
            return ExitCode::from(EXIT_UNUSABLE_PATH);
        }
    };
    let started = std::time::Instant::now();
    let result = db.backup_to(&args.dest);
    let closed = db.close();
    let code = match result {
        Ok(stats) => crate::printed(format!(
            "backed up {} to {}: {} trees, {} records ({} bytes of keys and values); file {} bytes, \
                 the source's {} bytes; {:.1} s",
            args.source.display(),
            args.dest.display(),
            stats.trees,
            stats.records,
            stats.record_bytes,
            stats.backup_file_bytes,
            stats.source_file_bytes,
            started.elapsed().as_secs_f64()
        )),
        Err(e @ (Error::BackupTargetExists(_) | Error::BackupTargetInLog(_))) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
        // Its directory went away since the check above.
        Err(e @ Error::DirectoryMissing(_)) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_UNUSABLE_PATH)
        }
        Err(e) => {
            eprintln!(
                "error: backing up {} to {}: {e}; nothing was written there",
                args.source.display(),
                args.dest.display()
            );
            ExitCode::from(EXIT_FAILED)
        }
    };
    match closed {
        Ok(()) => code,
        Err(e) => {
            eprintln!("error: closing {}: {e}", args.source.display());
            ExitCode::from(EXIT_FAILED)
        }
    }
}
