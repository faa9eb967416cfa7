//! TPC-B's scale ([`TpcbConfig`]) and trees: what the workload and its check share.

use super::schema::ROW_SIZE;
#[cfg(doc)]
use super::schema::TREES;
use crate::workloads::WorkloadError;

/// Tellers per branch (fixed by the specification).
pub const TELLERS: u32 = 10;

/// Indexes of the trees in [`TREES`].
pub(crate) mod t {
    pub const BRANCH: usize = 0;
    pub const TELLER: usize = 1;
    pub const ACCOUNT: usize = 2;
    pub const HISTORY: usize = 3;
}

/// How large the database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpcbConfig {
    /// Branches (the scale factor).
    pub branches: u32,
    /// Accounts per branch (specification: 100,000).
    pub accounts: u32,
    /// 15% of transactions update an account of another branch (when there is one).
    pub remote: bool,
    /// Seed of the workers' random generators.
    pub seed: u64,
}

impl TpcbConfig {
    /// The specification's scale: 100,000 accounts per branch.
    #[must_use]
    pub fn standard(branches: u32) -> Self {
        TpcbConfig { branches, accounts: 100_000, remote: true, seed: 0x7C5B }
    }

    /// For tests only: 1,000 accounts per branch; everything else as in
    /// [`TpcbConfig::standard`].
    #[must_use]
    pub fn tiny(branches: u32) -> Self {
        TpcbConfig { accounts: 1_000, ..TpcbConfig::standard(branches) }
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the parameter.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if !(1..=10_000).contains(&self.branches) {
            return Err(WorkloadError::Config(format!(
                "--branches {} is out of range; use 1 to 10000",
                self.branches
            )));
        }
        if !(10..=100_000).contains(&self.accounts) {
            return Err(WorkloadError::Config(format!(
                "{} accounts per branch is out of range; use 10 to 100000",
                self.accounts
            )));
        }
        Ok(())
    }

    /// Bytes the loaded database holds in its records, keys included (a lower bound of its
    /// size in pages).
    #[must_use]
    pub fn record_bytes(&self) -> u64 {
        let b = u64::from(self.branches);
        b * (1 + u64::from(TELLERS) + u64::from(self.accounts)) * (ROW_SIZE as u64 + 4)
    }
}
