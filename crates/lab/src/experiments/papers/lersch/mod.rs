//! Lersch 2015: decoupled checkpoints and page cleaning, and instant restart beside them.

pub mod checkpoints;
pub mod cleaner;
pub mod restart;
