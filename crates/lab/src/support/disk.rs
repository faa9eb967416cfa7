//! Room on the file system of a run's scratch directory: a run whose databases cannot fit is
//! refused before it writes, instead of filling the file system and failing part way.

use std::path::Path;

use crate::support::text;

/// Bytes that this process may still write on the file system holding `dir` (the blocks left
/// to unprivileged users), or `None` where the system does not say.
#[must_use]
pub fn available_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        let s = rustix::fs::statvfs(dir).ok()?;
        Some(s.f_bavail.saturating_mul(s.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Refuses data of at least `needed` bytes in `dir` when its file system has less room left;
/// `what` says whose data, naming the option that sets it (`--records 1000000`). Where the
/// system does not say how much room is left, the run goes ahead.
///
/// # Errors
/// The message names `what`, what it needs, the room left and what to change.
pub fn check_room(dir: &Path, needed: u64, what: &str) -> Result<(), String> {
    match available_bytes(dir) {
        Some(left) if left < needed => Err(format!(
            "{what} needs at least {} on the file system of {}, which has {} left; lower it, or give \
             --dir on a file system with more room",
            text::bytes(needed),
            dir.display(),
            text::bytes(left)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_left_bounds_what_fits() {
        let dir = std::env::temp_dir();
        check_room(&dir, 0, "nothing").unwrap();
        let e = check_room(&dir, u64::MAX, "--records 1").unwrap_err();
        assert!(e.contains("--records 1") && e.contains("--dir"), "{e}");
    }
}
