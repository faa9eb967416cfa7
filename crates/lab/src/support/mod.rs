//! The shared pieces every experiment uses: statistics, number formatting and tables, result
//! files and the environment they record, charts, option parsers, progress on stderr, CPU time,
//! child processes, buffer-trace recording, the parts files of experiments that resume, and the
//! room left on a scratch directory's file system.

pub mod child;
pub mod cores;
pub mod cpu;
pub mod disk;
pub mod environment;
pub mod output;
pub mod parts;
pub mod plot;
pub mod progress;
pub mod recording;
pub mod stats;
pub mod text;
pub mod units;
