//! What the CLI's end-to-end tests share: the built binary and scratch directories.

use std::path::PathBuf;

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
