//! The figures `swizzledb reproduce` runs: one [`Figure`] per figure (or group of figures one
//! command produces) of the five papers, each with the command that regenerates it at three
//! scales. Each paper's entries live in its own file under `figures/`.

mod chou;
mod ding;
mod gilbert;
mod graefe;
mod lersch;

use serde::{Deserialize, Serialize};
use std::fmt;

/// The five papers, in the order the report shows them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Paper {
    /// Graefe, Volos, Kimura, Kuno, Lucas, Mehta, Veiga, Kaneko, Kuno 2014: in-memory
    /// performance for big data (pointer swizzling in a buffer pool).
    Graefe,
    /// Gilbert 2017: an evaluation of pointer swizzling and page replacement.
    Gilbert,
    /// Ding, Shan, Jiang 2015 (first published 2009): BP-Wrapper.
    Ding,
    /// Lersch 2015: decoupled (log-based) propagation.
    Lersch,
    /// Chou and DeWitt 1986: DBMIN and the query locality set model.
    Chou,
}

impl Paper {
    /// Every paper, in report order.
    pub const ALL: [Paper; 5] = [Paper::Graefe, Paper::Gilbert, Paper::Ding, Paper::Lersch, Paper::Chou];

    /// The key `--only` takes: `graefe`, `gilbert`, `ding`, `lersch`, `chou`.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Paper::Graefe => "graefe",
            Paper::Gilbert => "gilbert",
            Paper::Ding => "ding",
            Paper::Lersch => "lersch",
            Paper::Chou => "chou",
        }
    }

    /// The paper's citation, as the report heads its section.
    #[must_use]
    pub fn citation(self) -> &'static str {
        match self {
            Paper::Graefe => "Graefe et al. 2014, In-memory performance for big data (PVLDB 8(1))",
            Paper::Gilbert => "Gilbert 2017, Evaluation of pointer swizzling for database buffer management (TU Kaiserslautern)",
            Paper::Ding => "Ding, Shan and Jiang 2015, BP-Wrapper: a system framework making any replacement algorithm (almost) lock contention free",
            Paper::Lersch => "Lersch 2015, Decoupled propagation of updates in database systems (TU Kaiserslautern)",
            Paper::Chou => "Chou and DeWitt 1986, An evaluation of buffer management strategies for relational database systems (Algorithmica 1)",
        }
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// How the reproduction serves a miss, which the report and the result files state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Io {
    /// Reads and writes go to the device with O_DIRECT, as the paper's did.
    Direct,
    /// Reads and writes go through the OS page cache: a miss costs a memory copy.
    PageCache,
    /// No database file is read during the measurement (the data fits the pool, or a
    /// simulator or emulator runs in memory).
    None,
}

impl Io {
    /// `direct`, `page-cache` or `none`: the value of the `io` column of the result files.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Io::Direct => "direct",
            Io::PageCache => "page-cache",
            Io::None => "none",
        }
    }

    /// What the report says of it.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Io::Direct => "direct I/O (O_DIRECT): a miss reads the device",
            Io::PageCache => "through the OS page cache: a miss costs a memory copy, not a device read",
            Io::None => "no file I/O measured (in memory, emulated or simulated)",
        }
    }
}

/// One run at one scale: the command's arguments after `swizzledb` (without `--out`, which
/// `reproduce` adds) and about how long it takes on the 2-core reference machine.
#[derive(Copy, Clone, Debug)]
pub struct Scale {
    /// The arguments, e.g. `["experiment", "graefe-fig10", "--duration", "1"]`.
    pub args: &'static [&'static str],
    /// Seconds it takes, roughly, for the progress bar and the plan `--dry-run` prints.
    pub secs: u32,
}

/// The figures whose command keeps the parts it finished in its `--out` and, given `--resume`,
/// runs only the others (crates/lab README rule 10): a resumed `reproduce` keeps their directory
/// and passes `--resume` on, where it runs every other unfinished figure again from the start.
pub const RESUMABLE: &[&str] = &["gilbert-pools", "gilbert-long-run"];

/// The prefix of an argument that scales with the machine: `cores:24` stands for the paper's
/// thread count capped at the cores present (`min(24, cores)`), `cores:1,2,4,8,16,24` for its
/// sweep cut at them (the counts up to the cores, then the cores themselves where the paper went
/// further). So every figure runs on any machine, and runs as wide as the machine allows.
pub const CORES: &str = "cores:";

/// `counts` (the part after [`CORES`]) capped at `cores` as [`CORES`] says, comma-separated;
/// `None` if `counts` is not a list of positive integers.
#[must_use]
pub fn cap_counts(counts: &str, cores: usize) -> Option<String> {
    let cores = cores.max(1);
    let paper: Vec<usize> =
        counts.split(',').map(|c| c.trim().parse().ok().filter(|&n| n > 0)).collect::<Option<_>>()?;
    let mut ours: Vec<usize> = paper.iter().copied().filter(|&n| n <= cores).collect();
    if paper.iter().any(|&n| n > cores) && !ours.contains(&cores) {
        ours.push(cores);
    }
    Some(ours.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
}

impl Scale {
    /// The arguments on a machine with `cores` cores: every [`CORES`] argument capped.
    #[must_use]
    pub fn resolve(&self, cores: usize) -> Vec<String> {
        self.args
            .iter()
            .map(|a| match a.strip_prefix(CORES) {
                Some(counts) => cap_counts(counts, cores).unwrap_or_else(|| (*a).to_string()),
                None => (*a).to_string(),
            })
            .collect()
    }

    /// What scaling with `cores` changed, one item per scaled option: e.g. `--threads: the
    /// paper's 24, here 2 (2 cores)`; empty where the scale has no [`CORES`] argument.
    #[must_use]
    pub fn scaled(&self, cores: usize) -> Vec<String> {
        let resolved = self.resolve(cores);
        self.args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let counts = a.strip_prefix(CORES)?;
                let option = if i > 0 { self.args[i - 1] } else { "" };
                Some(format!("{option}: the paper's {counts}, here {} ({cores} cores)", resolved[i]))
            })
            .collect()
    }
}

/// One entry of the report: a figure of a paper, or the figures one command produces.
#[derive(Copy, Clone, Debug)]
pub struct Figure {
    /// Unique, lower case, the directory of its results under `--out`: e.g. `ding-fig4`.
    pub id: &'static str,
    /// The paper.
    pub paper: Paper,
    /// The paper's figure numbers it reproduces (`--only ding:4` matches `"4"`).
    pub figures: &'static [&'static str],
    /// One line: what the figure shows.
    pub title: &'static str,
    /// The paper's claim, in its numbers and under its conditions.
    pub claim: &'static str,
    /// How the reproduction serves misses.
    pub io: Io,
    /// Seconds, in CI: the smallest run that draws every chart and computes every check.
    pub tiny: Scale,
    /// `--quick` (the default): all figures together in under 10 minutes on 2 cores.
    pub quick: Scale,
    /// `--full`: the paper's scale, as far as the machine allows.
    pub full: Scale,
}

/// Every figure, grouped by paper in report order.
#[must_use]
pub fn all() -> Vec<Figure> {
    let mut v = Vec::new();
    for p in Paper::ALL {
        v.extend_from_slice(match p {
            Paper::Graefe => graefe::FIGURES,
            Paper::Gilbert => gilbert::FIGURES,
            Paper::Ding => ding::FIGURES,
            Paper::Lersch => lersch::FIGURES,
            Paper::Chou => chou::FIGURES,
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::{all, cap_counts, Scale};
    use crate::experiments::registry::{self, BenchCommand, ExperimentCommand, SimCommand};

    /// The commands a figure may run, as the `swizzledb` command embeds the registry's enums.
    #[derive(clap::Parser)]
    enum Cli {
        Bench {
            #[command(subcommand)]
            command: BenchCommand,
        },
        Experiment {
            #[command(subcommand)]
            command: ExperimentCommand,
        },
        Sim {
            #[command(subcommand)]
            command: SimCommand,
        },
    }

    /// Every scale of every figure runs a registered command under its own name (not an alias),
    /// whose options parse its arguments on any machine.
    #[test]
    fn every_scale_is_a_registered_command_its_options_parse() {
        use clap::Parser;
        let commands: Vec<String> = registry::all().iter().map(registry::Entry::command).collect();
        for f in all() {
            for (s, cores) in [f.tiny, f.quick, f.full].into_iter().flat_map(|s| [1, 2, 64].map(|c| (s, c))) {
                let resolved = s.resolve(cores);
                let command = resolved[..2].join(" ");
                assert!(commands.contains(&command), "{}: {command} is not a registered command", f.id);
                let args = std::iter::once("swizzledb").chain(resolved.iter().map(String::as_str));
                if let Err(e) = Cli::try_parse_from(args) {
                    panic!("{} on {cores} cores: {resolved:?}: {e}", f.id);
                }
            }
        }
    }

    #[test]
    fn thread_counts_are_the_papers_capped_at_the_cores() {
        assert_eq!(cap_counts("24", 2).as_deref(), Some("2"));
        assert_eq!(cap_counts("24", 32).as_deref(), Some("24"));
        assert_eq!(cap_counts("1,2,4,8,16,24", 2).as_deref(), Some("1,2"));
        assert_eq!(cap_counts("1,2,4,8,16,24", 16).as_deref(), Some("1,2,4,8,16"));
        // A sweep that went further than the cores ends at the cores.
        assert_eq!(cap_counts("1,2,4,8,16,24", 12).as_deref(), Some("1,2,4,8,12"));
        assert_eq!(cap_counts("1,4", 3).as_deref(), Some("1,3"));
        assert_eq!(cap_counts("8", 0).as_deref(), Some("1"), "a machine has at least one core");
        assert_eq!(cap_counts("x", 4), None);
        assert_eq!(cap_counts("0", 4), None);
    }

    #[test]
    fn a_scale_resolves_and_reports_its_scaled_options() {
        let s = Scale { args: &["experiment", "x", "--threads", "cores:1,2,24", "--duration", "1"], secs: 1 };
        assert_eq!(s.resolve(4), ["experiment", "x", "--threads", "1,2,4", "--duration", "1"]);
        assert_eq!(s.scaled(4), ["--threads: the paper's 1,2,24, here 1,2,4 (4 cores)"]);
        let plain = Scale { args: &["experiment", "x"], secs: 1 };
        assert!(plain.scaled(4).is_empty());
    }
}
