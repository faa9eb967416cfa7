//! The one list of the lab's commands. Each benchmark, experiment and tool is declared once, in
//! a `registry!` entry of its kind's module (`bench/mod.rs`, `papers/mod.rs`, `tools/mod.rs`):
//! its command name and aliases, its help (the doc comment), its options type, the function that
//! runs it and the result files it writes with their row types. From that entry come
//!
//! - the `clap` subcommand enum the `swizzledb` command embeds (`bench`, `experiment`, `sim`,
//!   `trace`, and the top-level tools), and its dispatch ([`run`](BenchCommand::run));
//! - the list of result files and their columns that a test holds against
//!   `docs/results-schema.md` ([`all`]);
//! - the commands `reproduce`'s figures may name (a test parses every figure's command line with
//!   the same enums).
//!
//! The `registry!` macro and what an entry holds are in the module `entry`, below the kinds;
//! this module, above them, gathers their enums and entries. A new experiment is one file (its
//! options, plan and run) and one entry in its kind's `registry!`.

pub use super::bench::BenchCommand;
pub use super::papers::{ExperimentCommand, SimCommand};
pub use super::tools::{ToolCommand, TraceCommand};

pub use super::entry::{Entry, ResultFile};

/// Every registered command, by kind: benchmarks, paper experiments, simulators, tools.
#[must_use]
pub fn all() -> Vec<Entry> {
    [
        BenchCommand::ENTRIES,
        ExperimentCommand::ENTRIES,
        SimCommand::ENTRIES,
        TraceCommand::ENTRIES,
        ToolCommand::ENTRIES,
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::all;
    use std::collections::BTreeSet;

    /// Within a group every name and alias is one command's (clap would take the first), and no
    /// two commands claim the same result file.
    #[test]
    fn names_and_result_files_are_unique() {
        let mut names = BTreeSet::new();
        let mut files = BTreeSet::new();
        for e in all() {
            for n in std::iter::once(&e.name).chain(e.aliases) {
                assert!(names.insert((e.group, *n)), "{} {n} is registered twice", e.group);
            }
            for f in e.files {
                assert!(files.insert(f.file), "{} is written by two commands", f.file);
            }
        }
    }
}
