//! Buffer reference traces of any command: while `swizzledb trace record` runs a command, every
//! database the lab creates records a trace (rule B17 of the buffer README) to a file of its own.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// Starts recording: the next database gets `base`, the ones after it `base.1`, `base.2`, ...
pub fn start(base: &Path) {
    *RECORDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
        Some(Recording { base: base.to_path_buf(), files: Vec::new() });
}

/// Stops recording and returns the trace files handed out, in order.
#[must_use]
pub fn finish() -> Vec<PathBuf> {
    RECORDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .map(|r| r.files)
        .unwrap_or_default()
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
