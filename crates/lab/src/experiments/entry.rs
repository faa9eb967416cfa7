//! What the registry holds of one command ([`Entry`], [`ResultFile`]), and the `registry!`
//! macro that declares a kind's commands. The kinds' modules (`bench`, `papers`, `tools`) use
//! the macro; the module `registry`, above them, lists every kind's commands.

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
            pub const ENTRIES: &'static [$crate::experiments::entry::Entry] = &[$(
                $crate::experiments::entry::Entry {
                    group: $group,
                    name: $name,
                    aliases: &[$($alias),*],
                    files: &[$($crate::experiments::entry::ResultFile {
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
