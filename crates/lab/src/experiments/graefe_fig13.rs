//! `experiment graefe-fig13`: Graefe et al. 2014 Fig. 13, a drifting working set (the drift
//! workload at the paper's proportions, scaled to this machine), with the check of the paper's
//! claim: swizzling beats traditional in the steady state and recovers from each shift as fast.

use std::error::Error;
use std::process::ExitCode;

use crate::experiments::drift::{self, DriftArgs};

/// The experiment's name: its command, and the stem of its output files.
pub const NAME: &str = "graefe-fig13";

/// Runs `experiment graefe-fig13`.
///
/// # Errors
/// Bad options, or a database or I/O failure.
pub fn execute(args: &DriftArgs) -> Result<ExitCode, Box<dyn Error>> {
    drift::execute_as(NAME, args)
}
