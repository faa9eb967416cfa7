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
//! A new experiment is one file (its options, plan and run) and one entry here.

pub use super::bench::BenchCommand;
pub use super::papers::{ExperimentCommand, SimCommand};
pub use super::tools::{ToolCommand, TraceCommand};

/// One result file a command writes.
#[derive(Copy, Clone, Debug)]
pub struct ResultFile {
    /// The file's name (`lookup.csv`; `<experiment>` stands for the experiment's name).
    pub file: &'static str,
    /// The section of `docs/results-schema.md` that documents its columns: the heading's start
    /// (``"`tpcc.csv`"``), or `None` for the opening section.
    pub section: Option<&'static str>,
    /// Its columns, in order: the field names of its row type.
    pub columns: fn() -> Vec<String>,
}

/// One registered command.
#[derive(Copy, Clone, Debug)]
pub struct Entry {
    /// The words before the name on the command line (`bench`, `experiment`, `sim`, `trace`;
    /// empty for a top-level command).
    pub group: &'static str,
    /// The command's name (`read-latency`).
    pub name: &'static str,
    /// Other names it answers to (older names, kept).
    pub aliases: &'static [&'static str],
    /// The result files it writes.
    pub files: &'static [ResultFile],
}

impl Entry {
    /// The command line that runs it, without options: `bench read-latency`.
    #[must_use]
    pub fn command(&self) -> String {
        if self.group.is_empty() {
            self.name.to_string()
        } else {
            format!("{} {}", self.group, self.name)
        }
    }
}

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

/// Declares a kind's commands once: a `clap` subcommand enum, its dispatch (`run`) and its
/// [`Entry`] list (`ENTRIES`).
///
/// ```text
/// registry! {
///     /// The benchmarks.
///     pub enum BenchCommand in "bench" {
///         /// Help of `bench lookup` (the doc comment is its help, as clap reads it)
///         "lookup" | "rndread" => Lookup(lookup::LookupArgs), lookup::execute,
///             files [("lookup.csv", Record, None)];
///     }
/// }
/// ```
///
/// The name, then its aliases (`| "old-name"`), the variant and its options type, the function
/// running it (`fn(&Args) -> Result<ExitCode, Box<dyn Error>>`), and the files it writes: name,
/// row type, section of `docs/results-schema.md` (`None`: the opening section).
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident in $group:literal {
            $(
                $(#[$vmeta:meta])*
                $name:literal $(| $alias:literal)* => $Variant:ident($Args:ty), $run:path,
                    files [$(($file:literal, $Row:ty, $section:expr)),* $(,)?];
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(clap::Subcommand)]
        $vis enum $Enum {
            $(
                $(#[$vmeta])*
                #[command(name = $name $(, alias = $alias)*)]
                $Variant($Args),
            )*
        }

        impl $Enum {
            /// Every command of this kind, in the order `--help` lists them.
            pub const ENTRIES: &'static [$crate::experiments::registry::Entry] = &[$(
                $crate::experiments::registry::Entry {
                    group: $group,
                    name: $name,
                    aliases: &[$($alias),*],
                    files: &[$($crate::experiments::registry::ResultFile {
                        file: $file,
                        section: $section,
                        columns: $crate::support::output::columns::<$Row>,
                    }),*],
                },
            )*];

            /// Runs the command.
            ///
            /// # Errors
            /// Bad options (as [`Usage`](crate::Usage)), an unusable path
            /// ([`UnusablePath`](crate::UnusablePath)), or a failure of the run.
            pub fn run(&self) -> Result<std::process::ExitCode, Box<dyn std::error::Error>> {
                match self {
                    $(Self::$Variant(args) => $run(args),)*
                }
            }

        }
    };
}
pub(crate) use registry;

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
