//! Records which commit the lab is built from, for the `environment` of every result file
//! (`src/support/environment.rs`, `docs/results-schema.md`).
//!
//! Sets `SWIZZLEDB_LAB_COMMIT` (`git rev-parse HEAD`, or `unknown`) and `SWIZZLEDB_LAB_DIRTY`
//! (`true` if tracked files under `crates/` or the workspace's `Cargo.toml` and `Cargo.lock`
//! differ from that commit, `false`, or empty if unknown). Outside a git checkout of this
//! workspace (a source tarball), or without git, the commit is `unknown`: nothing here fails the
//! build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `git -C dir args` and returns its trimmed stdout, or `None` if git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    // No optional locks: `git status` must not rewrite the index under a running git command.
    let out =
        Command::new("git").env("GIT_OPTIONAL_LOCKS", "0").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

/// A path git printed, relative to `dir` unless absolute.
fn git_path(dir: &Path, args: &[&str]) -> Option<PathBuf> {
    git(dir, args).filter(|p| !p.is_empty()).map(|p| dir.join(p))
}

/// Asks cargo to run this script again when `path` changes, if it exists (a missing path would
/// make cargo run the script on every build).
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let (commit, dirty) = describe().unwrap_or_else(|| ("unknown".to_string(), String::new()));
    println!("cargo:rustc-env=SWIZZLEDB_LAB_COMMIT={commit}");
    println!("cargo:rustc-env=SWIZZLEDB_LAB_DIRTY={dirty}");
}

/// The commit and the dirty flag, if this crate is tracked in a git checkout.
fn describe() -> Option<(String, String)> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    // The crate must belong to the checkout git finds: a tarball unpacked inside some other
    // repository must not report that repository's commit.
    git(&manifest, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let commit = git(&manifest, &["rev-parse", "HEAD"])?;
    if commit.is_empty() || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let top = PathBuf::from(git(&manifest, &["rev-parse", "--show-toplevel"])?);

    // A new commit moves HEAD or the branch it names (a loose ref, or packed-refs); the crates'
    // sources and the workspace manifest decide the dirty flag.
    if let Some(head) = git_path(&manifest, &["rev-parse", "--git-path", "HEAD"]) {
        watch(&head);
    }
    if let Some(branch) = git(&manifest, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(loose) = git_path(&manifest, &["rev-parse", "--git-path", &branch]) {
            // The loose ref; if the branch is only packed, its folder, where the next commit
            // writes it (the folder holds other branches, whose commits would rebuild the lab).
            match loose.parent() {
                Some(folder) if !loose.exists() => watch(folder),
                _ => watch(&loose),
            }
        }
    }
    if let Some(packed) = git_path(&manifest, &["rev-parse", "--git-path", "packed-refs"]) {
        watch(&packed);
    }
    let watched = ["crates", "Cargo.toml", "Cargo.lock"];
    for path in watched {
        watch(&top.join(path));
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(watched);
    let dirty = match git(&top, &status) {
        Some(changes) => (!changes.is_empty()).to_string(),
        None => String::new(),
    };
    Some((commit, dirty))
}
