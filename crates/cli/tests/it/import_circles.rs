//! Files of a crate import each other only downward. Every crate's file import graph is built
//! here, and its circles (strongly connected sets of two or more files) must be exactly the ones
//! that docs/architecture.md names under `## Import circles`, each with its reason: a new circle
//! fails, and so does a named one that is gone, so the document stays true.
//!
//! The graph comes from a hand-written scan, not a Rust parser. File A imports file B when A
//! writes a path that resolves to B:
//! - every path of a `use` declaration (`pub use` too; each branch of a `{…}` tree), and
//! - every `crate::…`, `super::…` or `self::…` path written elsewhere in A's code.
//!
//! A path resolves to the file of its longest prefix that is a file module; when the next
//! segment is a name that module re-exports with `pub use`, the re-export is followed to the
//! file that defines it. Counted alike: imports inside `#[cfg(test)]` modules and test-only
//! files, and in macro bodies. Not counted: text in comments and in string or char literals;
//! `mod x;` itself (a parent declaring its child does not import it); paths into other crates;
//! relative paths that do not start with a child module of the current module (a name brought
//! in by another `use`); `Self::` paths; a file importing from itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository root: this crate is `crates/cli`.
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Whether `c` may appear in an identifier (or a number).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The end (exclusive) of the comment or the string, raw string or char literal that starts at
/// `i` in `s`, if one does. A `'` that starts no char literal (a lifetime) gives `None`.
fn literal_end(s: &[char], i: usize) -> Option<usize> {
    let n = s.len();
    let at = |j: usize, pat: &str| pat.chars().enumerate().all(|(k, c)| s.get(j + k) == Some(&c));
    if at(i, "//") {
        return Some((i..n).find(|&j| s[j] == '\n').unwrap_or(n));
    }
    if at(i, "/*") {
        let (mut depth, mut j) = (1, i + 2);
        while j < n && depth > 0 {
            if at(j, "/*") || at(j, "*/") {
                depth += if s[j] == '/' { 1 } else { -1 };
                j += 2;
            } else {
                j += 1;
            }
        }
        return Some(j);
    }
    let word_before = |j: usize| j > 0 && is_word(s[j - 1]);
    // `r"…"`, `r#"…"#`, `br"…"`, but not the `r` that ends an identifier.
    let raw_start = !word_before(i) || (s[i - 1] == 'b' && !word_before(i - 1));
    if s[i] == 'r' && raw_start {
        let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
        if s.get(i + 1 + hashes) == Some(&'"') {
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let from = i + 2 + hashes;
            let end = (from..n).find(|&j| at(j, &close)).map_or(n, |j| j + close.len());
            return Some(end);
        }
    }
    if s[i] == '"' {
        let mut j = i + 1;
        while j < n && s[j] != '"' {
            j += if s[j] == '\\' { 2 } else { 1 };
        }
        return Some((j + 1).min(n));
    }
    if s[i] == '\'' {
        // `'x'`, or `'\` and anything up to the next `'` (`'\n'`, `'\''`, `'\u{7f}'`).
        if s.get(i + 1) == Some(&'\\') && i + 2 < n && s[i + 2] != '\n' {
            return (i + 3..n).find(|&j| s[j] == '\'').map(|j| j + 1);
        }
        let single = s.get(i + 1).is_some_and(|&c| c != '\\' && c != '\'' && c != '\n');
        if single && s.get(i + 2) == Some(&'\'') {
            return Some(i + 3);
        }
    }
    None
}

/// `text` with its comments and string and char literals blanked out (newlines kept), so that
/// only code is scanned.
fn strip(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = s.clone();
    let mut i = 0;
    while i < s.len() {
        match literal_end(&s, i) {
            Some(end) => {
                for c in &mut out[i..end] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = end;
            }
            None => i += 1,
        }
    }
    out.into_iter().collect()
}

/// The tokens of stripped code: identifiers, keywords and numbers, `::`, and every other
/// character on its own.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let mut end = start + c.len_utf8();
        if is_word(c) {
            while let Some(&(j, d)) = chars.peek().filter(|(_, d)| is_word(*d)) {
                end = j + d.len_utf8();
                chars.next();
            }
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            end += 1;
        }
        out.push(&code[start..end]);
    }
    out
}

/// Whether `token` is an identifier or keyword (not a number or punctuation).
fn is_ident(token: Option<&&str>) -> bool {
    token.is_some_and(|t| t.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// One path of a `use` tree: its segments, and the name it binds (the `as` alias, or the last
/// segment; `*` for a glob).
#[derive(Debug, PartialEq)]
struct UsePath {
    segments: Vec<String>,
    name: String,
}

/// Reads the `use` tree at `toks[*pos..]` below `prefix` into `out`: `a::{self, b::{c as d, *}}`
/// gives `a`, `a::b::c` (binding `d`) and `a::b::*`.
fn use_tree(toks: &[&str], pos: &mut usize, prefix: &[String], out: &mut Vec<UsePath>) {
    let mut segments = prefix.to_vec();
    loop {
        match toks.get(*pos).copied() {
            Some("::") => *pos += 1,
            Some("{") => {
                *pos += 1;
                while toks.get(*pos).is_some_and(|&t| t != "}") {
                    use_tree(toks, pos, &segments, out);
                    if toks.get(*pos) == Some(&",") {
                        *pos += 1;
                    }
                }
                *pos += 1;
                return;
            }
            Some("*") => {
                *pos += 1;
                segments.push("*".to_string());
                out.push(UsePath { segments, name: "*".to_string() });
                return;
            }
            Some(word) if is_ident(Some(&word)) => {
                *pos += 1;
                // `self` inside braces stands for the prefix itself.
                let bare_self = word == "self" && !segments.is_empty() && toks.get(*pos) != Some(&"::");
                if !bare_self {
                    segments.push(word.to_string());
                }
                if toks.get(*pos) == Some(&"::") {
                    continue;
                }
                let mut name = segments.last().cloned().unwrap_or_default();
                if toks.get(*pos) == Some(&"as") && toks.get(*pos + 1).is_some() {
                    name = toks[*pos + 1].to_string();
                    *pos += 2;
                }
                out.push(UsePath { segments, name });
                return;
            }
            _ => return,
        }
    }
}

/// A path written in a file: the inline modules (`mod tests { … }`) around it, the path, and
/// whether it is a `pub use` (a re-export).
struct Site {
    inline: Vec<String>,
    path: UsePath,
    public: bool,
}

/// What one file's code declares and names: its `mod x;` children (with the inline modules
/// around each declaration) and the paths it writes.
#[derive(Default)]
struct Scan {
    children: Vec<(Vec<String>, String)>,
    sites: Vec<Site>,
}

/// Whether the `use` at `toks[i]` is `pub`, `pub(crate)`, `pub(in …)` and the like.
fn is_public(toks: &[&str], i: usize) -> bool {
    match i.checked_sub(1).map(|j| toks[j]) {
        Some("pub") => true,
        Some(")") => {
            let open = (0..i - 1).rev().find(|&j| toks[j] == "(");
            open.is_some_and(|j| j > 0 && toks[j - 1] == "pub")
        }
        _ => false,
    }
}

/// Scans the stripped `code` of one file for module declarations, `use` paths and inline
/// `crate::`/`super::`/`self::` paths, keeping track of the inline modules around each.
fn scan(code: &str) -> Scan {
    let toks = tokens(code);
    let mut scan = Scan::default();
    let mut inline: Vec<(String, i64)> = Vec::new(); // a module's name, brace depth inside it
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let around = || inline.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
        match toks[i] {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if is_ident(toks.get(i + 1)) => match toks.get(i + 2).copied() {
                Some(";") => scan.children.push((around(), toks[i + 1].to_string())),
                Some("{") => {
                    depth += 1;
                    inline.push((toks[i + 1].to_string(), depth));
                    i += 3;
                    continue;
                }
                _ => {}
            },
            "use" => {
                let end = (i..toks.len()).find(|&j| toks[j] == ";").unwrap_or(toks.len());
                let mut paths = Vec::new();
                use_tree(&toks[..end], &mut (i + 1), &[], &mut paths);
                let public = is_public(&toks, i);
                for path in paths {
                    scan.sites.push(Site { inline: around(), path, public });
                }
                i = end + 1;
                continue;
            }
            "crate" | "super" | "self" => {
                let mut segments = vec![toks[i].to_string()];
                let mut j = i + 1;
                while toks.get(j) == Some(&"::") && is_ident(toks.get(j + 1)) {
                    segments.push(toks[j + 1].to_string());
                    j += 2;
                }
                if segments.len() > 1 {
                    let name = segments.last().cloned().unwrap_or_default();
                    let path = UsePath { segments, name };
                    scan.sites.push(Site { inline: around(), path, public: false });
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// `dir/name`, where an empty `dir` is the source root.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// For each pair of files (A, B) where A imports from B: the paths in A that do, as written.
type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// One crate's file modules and re-exports, for resolving the paths its files write.
#[derive(Default)]
struct Crate {
    /// Module path (segments below the crate root) to its file, relative to `src/`.
    modules: BTreeMap<Vec<String>, String>,
    /// Module path to the names it re-exports with `pub use`, and the paths they name.
    reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Crate {
    /// `path`, written in `module`, as segments below the crate root; `None` for a path into
    /// another crate or through a name brought in by `use`.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        if first == "crate" {
            return Some(path[1..].to_vec());
        }
        let mut at = module.to_vec();
        let mut rest = path;
        if first == "super" || first == "self" {
            while let Some(segment) = rest.first().filter(|s| *s == "super" || *s == "self") {
                if segment == "super" {
                    at.pop();
                }
                rest = &rest[1..];
            }
        } else {
            at.push(first.clone());
            if !self.modules.contains_key(&at) {
                return None;
            }
            at.pop();
        }
        at.extend(rest.iter().cloned());
        Some(at)
    }

    /// The file that defines what the absolute `path` names, following re-exports.
    fn resolve(&self, path: &[String], hops: usize) -> Option<&str> {
        let k = (0..=path.len()).rev().find(|&k| self.modules.contains_key(&path[..k]))?;
        let (module, rest) = path.split_at(k);
        let target = rest.first().and_then(|name| self.reexports.get(module)?.get(name));
        if let Some(target) = target.filter(|_| hops < 10) {
            if let Some(mut through) = self.absolute(module, target) {
                through.extend(rest[1..].iter().cloned());
                if let Some(file) = self.resolve(&through, hops + 1) {
                    return Some(file);
                }
            }
        }
        Some(&self.modules[module])
    }
}

/// The import graph of the crate whose sources are under `src`, starting at `root_file`
/// (`lib.rs` or `main.rs`) and following `mod x;` to `x.rs` or `x/mod.rs` (not `#[path]`).
fn import_graph(src: &Path, root_file: &str) -> Edges {
    let mut krate = Crate::default();
    let mut sites = Vec::new(); // (file, module at the site, what it names)
    let mut pending = vec![(Vec::new(), root_file.to_string(), String::new())];
    while let Some((module, file, dir)) = pending.pop() {
        let text = std::fs::read_to_string(src.join(&file))
            .unwrap_or_else(|e| panic!("reading {}: {e}", src.join(&file).display()));
        let scan = scan(&strip(&text));
        for (inline, name) in scan.children {
            let parent_dir = inline.iter().fold(dir.clone(), |d, m| join(&d, m));
            let child_dir = join(&parent_dir, &name);
            let candidates = [format!("{child_dir}.rs"), join(&child_dir, "mod.rs")];
            if let Some(child_file) = candidates.into_iter().find(|f| src.join(f).is_file()) {
                let child: Vec<String> = module.iter().chain(&inline).chain([&name]).cloned().collect();
                pending.push((child, child_file, child_dir));
            }
        }
        for site in scan.sites {
            let at: Vec<String> = module.iter().chain(&site.inline).cloned().collect();
            if site.public {
                let names = krate.reexports.entry(at.clone()).or_default();
                names.insert(site.path.name.clone(), site.path.segments.clone());
            }
            sites.push((file.clone(), at, site.path.segments));
        }
        krate.modules.insert(module, file);
    }
    let mut edges = Edges::new();
    for (file, at, segments) in sites {
        let Some(target) = krate.absolute(&at, &segments).and_then(|p| krate.resolve(&p, 0)) else {
            continue;
        };
        if target != file {
            edges.entry((file, target.to_string())).or_default().insert(segments.join("::"));
        }
    }
    edges
}

/// The files reachable from `from` by one or more edges.
fn reachable<'a>(edges: &'a Edges, from: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from];
    while let Some(file) = todo.pop() {
        let next = edges.keys().filter(|(a, _)| a == file).map(|(_, b)| b.as_str());
        for b in next {
            if seen.insert(b) {
                todo.push(b);
            }
        }
    }
    seen
}

/// The circles of the graph: its strongly connected sets of two or more files (each file of a
/// set reaches every other through imports).
fn circles(edges: &Edges) -> BTreeSet<BTreeSet<String>> {
    let files: BTreeSet<&str> = edges.keys().map(|(a, _)| a.as_str()).collect();
    let reach: BTreeMap<&str, BTreeSet<&str>> = files.iter().map(|&f| (f, reachable(edges, f))).collect();
    let mut out = BTreeSet::new();
    for &file in &files {
        let set: BTreeSet<String> = reach[file]
            .iter()
            .filter(|&&other| other == file || reach.get(other).is_some_and(|r| r.contains(file)))
            .map(|s| s.to_string())
            .collect();
        if set.len() > 1 {
            out.insert(set);
        }
    }
    out
}

/// A circle of `krate` as the test reports it: its files, then each edge inside it with (up to
/// six of) the paths that make it.
fn describe(krate: &str, set: &BTreeSet<String>, edges: &Edges) -> String {
    let files: Vec<&str> = set.iter().map(String::as_str).collect();
    let mut text = format!("`{krate}`: {{{}}}", files.join(", "));
    for ((a, b), paths) in edges {
        if set.contains(a) && set.contains(b) {
            let shown: Vec<&str> = paths.iter().take(6).map(String::as_str).collect();
            let more = if paths.len() > 6 { " …" } else { "" };
            text += &format!("\n    {a} -> {b}: {}{more}", shown.join(", "));
        }
    }
    text
}

/// A crate's directory name under `crates/` and a set of its files.
type Circle = (String, BTreeSet<String>);

/// The circles that the `## Import circles` section of `doc` allows, each with its line: one
/// bullet per set, ``- `crate`: `a.rs`, `b.rs` — reason``, where the names before the ` — `
/// may wrap onto indented lines. A malformed bullet panics with its line.
fn named_circles(doc: &str) -> BTreeMap<Circle, usize> {
    let mut bullets: Vec<(usize, String)> = Vec::new();
    let mut inside = false;
    for (i, line) in doc.lines().enumerate() {
        if line.starts_with("## ") {
            inside = line.trim() == "## Import circles";
        } else if inside && line.starts_with("- ") {
            bullets.push((i + 1, line.to_string()));
        } else if let Some((_, bullet)) = bullets.last_mut().filter(|_| inside && line.starts_with(' ')) {
            *bullet += line;
        }
    }
    let mut named = BTreeMap::new();
    for (line, bullet) in bullets {
        let Some((names, _reason)) = bullet.split_once(" — ") else {
            panic!("docs/architecture.md:{line}: an import-circle bullet needs ` — ` and a reason");
        };
        let mut names = names.split('`').skip(1).step_by(2).map(str::to_string);
        let krate = names.next().unwrap_or_default();
        let files: BTreeSet<String> = names.collect();
        assert!(files.len() > 1, "docs/architecture.md:{line}: name a crate and two or more files");
        let again = named.insert((krate, files), line);
        assert!(again.is_none(), "docs/architecture.md:{line}: this set is named twice");
    }
    named
}

/// Each crate of the workspace (its directory under `crates/`) with its source directory and
/// root file: `src/lib.rs`, or `src/main.rs` for a binary-only crate.
fn crates(root: &Path) -> Vec<(String, PathBuf, &'static str)> {
    let dirs = std::fs::read_dir(root.join("crates")).expect("the workspace has crates/");
    let mut out = Vec::new();
    for dir in dirs {
        let dir = dir.expect("directory entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let src = dir.join("src");
        if let Some(file) = ["lib.rs", "main.rs"].into_iter().find(|f| src.join(f).is_file()) {
            out.push((name, src, file));
        }
    }
    out.sort();
    out
}

#[test]
fn import_circles_are_the_ones_named_in_the_architecture_document() {
    let root = root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let named = named_circles(&doc);
    let crates = crates(&root);
    assert!(crates.len() > 5, "found only {} crates under {}", crates.len(), root.display());
    let mut found: BTreeMap<Circle, String> = BTreeMap::new();
    let mut edge_count = 0;
    for (krate, src, file) in &crates {
        let edges = import_graph(src, file);
        edge_count += edges.len();
        for set in circles(&edges) {
            let text = describe(krate, &set, &edges);
            found.insert((krate.clone(), set), text);
        }
    }
    assert!(edge_count > 100, "only {edge_count} imports between files: the scan is broken");
    let mut problems = Vec::new();
    for (circle, text) in &found {
        if !named.contains_key(circle) {
            problems.push(format!("an import circle that docs/architecture.md does not name:\n  {text}"));
        }
    }
    for ((krate, files), line) in &named {
        if !found.contains_key(&(krate.clone(), files.clone())) {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            problems.push(format!(
                "docs/architecture.md:{line} names an import circle that is gone: `{krate}`: {{{}}}",
                files.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nCut a new circle, or name it in docs/architecture.md (## Import circles) with its \
         reason; remove the bullet of a circle that is gone.",
        problems.join("\n\n")
    );
}

#[test]
fn the_scan_sees_imports_and_skips_comments_and_literals() {
    let code = strip("a // b\n/* c /* d */ e */ \"f\\\"g\" r#\"h\"# 'i' '\\'' x<'a> r##\"j\"#\"## k");
    assert_eq!(tokens(&code), ["a", "x", "<", "'", "a", ">", "k"]);
    let toks = tokens("a::{self, b::{c as d, *}}, e");
    let mut paths = Vec::new();
    use_tree(&toks, &mut 0, &[], &mut paths);
    let shown: Vec<(String, &str)> = paths.iter().map(|p| (p.segments.join("::"), p.name.as_str())).collect();
    let expected = [("a", "a"), ("a::b::c", "d"), ("a::b::*", "*")];
    assert_eq!(shown, expected.map(|(p, n)| (p.to_string(), n)));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Thing;\n"),
        ("a.rs", "pub struct A;\nuse crate::b::B;\nfn f() -> crate::Thing { todo!() }\n"),
        ("b.rs", "pub struct B;\n/* use crate::c::Thing; */\nfn g() -> &'static str { let _ = super::a::A; \"crate::c::Thing\" }\n"),
        ("c.rs", "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("writing a source file");
    }
    let edges = import_graph(dir.path(), "lib.rs");
    let pairs: Vec<(&str, &str)> = edges.keys().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        pairs,
        [("a.rs", "b.rs"), ("a.rs", "c.rs"), ("b.rs", "a.rs"), ("c.rs", "a.rs"), ("lib.rs", "c.rs")]
    );
    assert_eq!(
        edges[&("a.rs".to_string(), "c.rs".to_string())],
        BTreeSet::from(["crate::Thing".to_string()])
    );
    let all = BTreeSet::from(["a.rs", "b.rs", "c.rs"].map(String::from));
    assert_eq!(circles(&edges), BTreeSet::from([all]));
}

#[test]
fn the_document_check_reads_bullets() {
    let doc = "# A\n## Import circles\nText.\n\n- `x`: `a.rs`,\n  `b/mod.rs` — why\n- `y`: `c.rs`, `d.rs` — why\n\n## Other\n- `z`: `e.rs`, `f.rs` — not read\n";
    let named = named_circles(doc);
    let sets: Vec<(&str, Vec<&str>, usize)> =
        named.iter().map(|((k, f), l)| (k.as_str(), f.iter().map(String::as_str).collect(), *l)).collect();
    assert_eq!(sets, [("x", vec!["a.rs", "b/mod.rs"], 5), ("y", vec!["c.rs", "d.rs"], 7)]);
}
