//! The repository's documents point only at documents it holds: every relative markdown link
//! `](path)` in a `*.md` file, and every path to or name of a `*.md` file written in a document
//! or a source file, names a file inside the repository that exists. A document outside the
//! checkout (a sibling directory on one machine) is as broken for a reader as a missing one.

use std::path::{Component, Path, PathBuf};

/// The repository root: this crate is `crates/cli`.
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Every file under `dir` whose name ends with one of `suffixes`, skipping build output and
/// hidden directories.
fn files(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                files(&path, suffixes, out);
            }
        } else if suffixes.iter().any(|s| name.ends_with(s)) {
            out.push(path);
        }
    }
}

/// The text of `doc` outside fenced code blocks, with each line's number.
fn prose(doc: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The targets of the markdown links `[text](target)` in `line`, without titles or fragments.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let (target, end) = if let Some(bracketed) = after.strip_prefix('<') {
            let Some(end) = bracketed.find('>') else { break };
            (&bracketed[..end], end + 1)
        } else {
            let Some(end) = after.find(')') else { break };
            (after[..end].split_whitespace().next().unwrap_or(""), end)
        };
        let target = target.split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            targets.push(target);
        }
        rest = &after[end..];
    }
    targets
}

/// Names of and paths to markdown files written in `line` (prose or code): `docs/x.md`,
/// `../shared/y.md`, `RECOVERY.md`.
fn md_paths(line: &str) -> Vec<&str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || "./_-".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.len() > 3 && w.ends_with(".md") && !w.starts_with('/'))
        .collect()
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether `target`, written in `doc`, names a file inside the repository: relative to the
/// document, or (for the paths written in prose) to the repository root or the document's crate;
/// a bare name written in prose (`RECOVERY.md`, a document elsewhere in the repository, named
/// as the text around it says) must be the name of one of the repository's `documents`.
fn resolves(root: &Path, doc: &Path, target: &str, prose_path: bool, documents: &[PathBuf]) -> bool {
    if prose_path && !target.contains('/') {
        return documents.iter().any(|d| d.file_name().is_some_and(|n| n == target));
    }
    let dir = doc.parent().expect("a file has a directory");
    let mut candidates = vec![normalize(&dir.join(target))];
    if prose_path {
        candidates.push(normalize(&root.join(target)));
        if let Ok(rel) = doc.strip_prefix(root) {
            let mut parts = rel.components();
            if let (Some(Component::Normal(first)), Some(Component::Normal(krate))) =
                (parts.next(), parts.next())
            {
                if first == "crates" {
                    candidates.push(normalize(&root.join("crates").join(krate).join(target)));
                }
            }
        }
    }
    candidates.iter().any(|c| c.starts_with(root) && c.exists())
}

fn broken_references(prose_paths: bool) -> Vec<String> {
    let root = root();
    let mut documents = Vec::new();
    files(&root, &[".md"], &mut documents);
    let mut docs = Vec::new();
    let suffixes: &[&str] = if prose_paths { &[".md", ".rs"] } else { &[".md"] };
    files(&root, suffixes, &mut docs);
    assert!(docs.len() > 5, "found only {} files under {}", docs.len(), root.display());
    let mut broken = Vec::new();
    // This file names broken paths on purpose, in its self-test.
    docs.retain(|d| !d.ends_with("crates/cli/tests/it/doc_links.rs"));
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("documents and sources are UTF-8");
        let lines: Vec<(usize, &str)> = if doc.extension().is_some_and(|e| e == "md") {
            prose(&text)
        } else {
            text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect()
        };
        for (line_no, line) in lines {
            let targets = if prose_paths { md_paths(line) } else { link_targets(line) };
            for target in targets {
                if !resolves(&root, doc, target, prose_paths, &documents) {
                    let rel = doc.strip_prefix(&root).unwrap_or(doc);
                    broken.push(format!("{}:{line_no}: {target}", rel.display()));
                }
            }
        }
    }
    broken
}

#[test]
fn markdown_links_name_files_in_the_repository() {
    let broken = broken_references(false);
    assert!(broken.is_empty(), "links to files that are not in the repository:\n{}", broken.join("\n"));
}

#[test]
fn paths_to_documents_name_files_in_the_repository() {
    let broken = broken_references(true);
    assert!(broken.is_empty(), "paths to documents that are not in the repository:\n{}", broken.join("\n"));
}

#[test]
fn the_checks_see_broken_references() {
    assert_eq!(
        link_targets("see [a](docs/a.md#x) and [b](<b c.md> \"t\") or [w](https://x.org), [s](#s)"),
        ["docs/a.md", "b c.md"]
    );
    assert_eq!(
        md_paths("(`../shared/STYLE.md`, see docs/x.md. README.md; .md)"),
        ["../shared/STYLE.md", "docs/x.md", "README.md"]
    );
    let root = root();
    let mut documents = Vec::new();
    files(&root, &[".md"], &mut documents);
    let resolves = |doc: &Path, target: &str, prose: bool| resolves(&root, doc, target, prose, &documents);
    let readme = root.join("README.md");
    assert!(resolves(&readme, "docs/results-schema.md", false));
    assert!(!resolves(&readme, "docs/no-such-file.md", false));
    assert!(!resolves(&readme, "../shared/ARCHITECTURE.md", true), "outside the repository");
    let wal = root.join("crates/wal/README.md");
    assert!(resolves(&wal, "crates/swizzledb/RECOVERY.md", true));
    assert!(resolves(&wal, "src/lib.rs", false));
    assert!(resolves(&wal, "RECOVERY.md", true));
    assert!(!resolves(&wal, "ARCHITECTURE.md", true), "no such document in the repository");
}
