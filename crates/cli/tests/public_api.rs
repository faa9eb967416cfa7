//! The `swizzledb` library's public items, held against `crates/swizzledb/public-api.txt`: a new,
//! removed or renamed public item is a visible decision in review, not an accident.
//!
//! The listing comes from rustdoc's JSON output (unstable on stable Rust: `RUSTC_BOOTSTRAP=1`
//! lets the stable toolchain write it), walked from the crate root: modules, types, functions,
//! constants, traits and their methods, inherent methods, public fields and enum variants, and
//! re-exports of the engine's other crates by the path they come from. After a deliberate
//! change, regenerate the file:
//!
//! ```sh
//! SWIZZLEDB_BLESS=1 cargo test -p swizzledb-cli --test public_api
//! ```

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs rustdoc on the library into a target directory of its own (the test build's is locked
/// by the `cargo test` running this) and returns its JSON.
fn rustdoc_json() -> Value {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace().join("target"), PathBuf::from)
        .join("public-api");
    let out = Command::new(env!("CARGO"))
        .current_dir(workspace())
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["rustdoc", "-q", "-p", "swizzledb", "--lib", "--locked", "--target-dir"])
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "rustdoc failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let json = std::fs::read(target.join("doc/swizzledb.json")).expect("rustdoc wrote its JSON");
    serde_json::from_slice(&json).expect("rustdoc's JSON parses")
}

/// An item id as the index's key (ids are numbers in the JSON, strings as keys).
fn key(id: &Value) -> String {
    id.as_str().map_or_else(|| id.to_string(), str::to_owned)
}

struct Walk<'a> {
    index: &'a serde_json::Map<String, Value>,
    paths: &'a serde_json::Map<String, Value>,
    lines: BTreeSet<String>,
}

impl<'a> Walk<'a> {
    fn item(&self, id: &Value) -> Option<&'a Value> {
        self.index.get(&key(id))
    }

    fn public(item: &Value) -> bool {
        item["visibility"] == "public"
    }

    /// Lists `item` under `path` (its name as the user writes it).
    fn visit(&mut self, path: &str, item: &Value) {
        let index = self.index;
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else { return };
        match kind.as_str() {
            "module" => {
                self.lines.insert(format!("mod {path}"));
                self.members(path, &inner["items"], true);
            }
            "use" => self.reexport(path, inner),
            "struct" => {
                self.lines.insert(format!("struct {path}"));
                if let Some(fields) = inner["kind"]["plain"]["fields"].as_array() {
                    for f in fields.iter().filter_map(|f| index.get(&key(f))).filter(|f| Self::public(f)) {
                        self.lines.insert(format!("field {path}::{}", f["name"].as_str().unwrap_or("?")));
                    }
                }
                self.impls(path, &inner["impls"]);
            }
            "enum" => {
                self.lines.insert(format!("enum {path}"));
                for v in inner["variants"].as_array().into_iter().flatten().filter_map(|v| index.get(&key(v)))
                {
                    self.lines.insert(format!("variant {path}::{}", v["name"].as_str().unwrap_or("?")));
                }
                self.impls(path, &inner["impls"]);
            }
            "trait" => {
                self.lines.insert(format!("trait {path}"));
                self.members(path, &inner["items"], false);
            }
            "function" => {
                self.lines.insert(format!("fn {path}"));
            }
            other => {
                self.lines.insert(format!("{} {path}", other.replace('_', " ")));
            }
        }
    }

    /// The items of a module (public ones only) or a trait (all).
    fn members(&mut self, path: &str, items: &Value, only_public: bool) {
        for id in items.as_array().into_iter().flatten() {
            let Some(item) = self.item(id) else { continue };
            if only_public && !Self::public(item) {
                continue;
            }
            match item["name"].as_str() {
                Some(name) => self.visit(&format!("{path}::{name}"), item),
                None => self.visit(path, item), // a `use`: named by its own `name` below
            }
        }
    }

    /// The inherent methods and associated items of a type (trait impls are not listed).
    fn impls(&mut self, path: &str, impls: &Value) {
        let index = self.index;
        for imp in impls.as_array().into_iter().flatten().filter_map(|i| index.get(&key(i))) {
            let imp = &imp["inner"]["impl"];
            if !imp["trait"].is_null() {
                continue;
            }
            for it in imp["items"].as_array().into_iter().flatten().filter_map(|i| index.get(&key(i))) {
                if Self::public(it) {
                    let kind =
                        it["inner"].as_object().and_then(|o| o.keys().next().cloned()).unwrap_or_default();
                    let kind = if kind == "function" { "fn".to_owned() } else { kind.replace('_', " ") };
                    self.lines.insert(format!("{kind} {path}::{}", it["name"].as_str().unwrap_or("?")));
                }
            }
        }
    }

    /// `pub use`: an item of this crate is listed where the user finds it; one of another crate
    /// by where it comes from; a glob, by the public items of its module.
    fn reexport(&mut self, module: &str, using: &Value) {
        let name = using["name"].as_str().unwrap_or("?");
        let target = &using["id"];
        match self.item(target) {
            Some(item) if using["is_glob"] == true => {
                if let Some(items) = item["inner"]["module"]["items"].as_array() {
                    self.members(module, &Value::Array(items.clone()), true);
                }
            }
            Some(item) => self.visit(&format!("{module}::{name}"), item),
            None => {
                let from = self.paths.get(&key(target)).and_then(|p| p["path"].as_array()).map_or_else(
                    || using["source"].as_str().unwrap_or("?").to_owned(),
                    |p| p.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("::"),
                );
                self.lines.insert(format!("use {module}::{name} = {from}"));
            }
        }
    }
}

#[test]
fn public_items_match_the_committed_listing() {
    let doc = rustdoc_json();
    let mut walk = Walk {
        index: doc["index"].as_object().expect("an index"),
        paths: doc["paths"].as_object().expect("paths"),
        lines: BTreeSet::new(),
    };
    let root = walk.item(&doc["root"]).expect("the root module");
    walk.visit("swizzledb", root);
    let listing: String = walk.lines.iter().map(|l| format!("{l}\n")).collect();
    let file = workspace().join("crates/swizzledb/public-api.txt");
    if std::env::var_os("SWIZZLEDB_BLESS").is_some() {
        std::fs::write(&file, &listing).expect("writing the listing");
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    if committed != listing {
        let old: BTreeSet<&str> = committed.lines().collect();
        let new: BTreeSet<&str> = listing.lines().collect();
        let added: Vec<_> = new.difference(&old).collect();
        let removed: Vec<_> = old.difference(&new).collect();
        panic!(
            "the public API changed: added {added:#?}, removed {removed:#?}; if that is meant, \
             regenerate crates/swizzledb/public-api.txt with SWIZZLEDB_BLESS=1 cargo test -p \
             swizzledb-cli --test public_api"
        );
    }
    for item in ["fn swizzledb::Tree::get", "struct swizzledb::lab::LabOptions"] {
        assert!(listing.contains(item), "the walk missed {item}");
    }
    for internal in [
        "without_auto_commit",
        "put_logged",
        "get_gated",
        "with_read_gate",
        "root_page",
        "fn swizzledb::Database::pool",
    ] {
        let leaked: Vec<_> =
            listing.lines().filter(|l| l.contains(internal) && !l.contains("::lab::")).collect();
        assert!(leaked.is_empty(), "engine plumbing outside swizzledb::lab: {leaked:?}");
    }
}
