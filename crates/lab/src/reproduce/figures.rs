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
        v.extend(match p {
            Paper::Graefe => graefe::figures(),
            Paper::Gilbert => gilbert::figures(),
            Paper::Ding => ding::figures(),
            Paper::Lersch => lersch::figures(),
            Paper::Chou => chou::figures(),
        });
    }
    v
}
