//! What the CLI's end-to-end tests share: the built binary and scratch directories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `swizzledb` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_swizzledb");

/// A fresh scratch directory under the system temp directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `swizzledb-test-<name>-<pid>`, emptied first.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("swizzledb-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every option list in `bads`, appended to `command` (and `--dir dir`), is a usage error: exit
/// code 2. Not every test binary has usage errors to check.
#[allow(dead_code)]
pub fn assert_usage_errors(command: &[&str], bads: &[&[&str]], dir: &Path) {
    for bad in bads {
        let o = Command::new(BIN).args(command).args(*bad).arg("--dir").arg(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}
