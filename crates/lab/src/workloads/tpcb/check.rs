//! The consistency conditions, checked on a quiet database (reads outside transactions): every
//! row present once with the ids its key implies, and per branch the balances agree with each
//! other and with the history.

use std::ops::Bound::Unbounded;
use swizzledb::{Database, Tree};

use super::config::{t, TpcbConfig, TELLERS};
use super::schema::{key_id, History, Row, TREES};
use crate::workloads::WorkloadError;

fn inconsistent(condition: &'static str, detail: String) -> WorkloadError {
    WorkloadError::Inconsistent { condition, detail }
}

/// Reads every row of table `table` (`count` rows, `per_branch` per branch) and returns the
/// sum of the balances per branch.
fn balances(
    tree: &Tree,
    table: usize,
    count: u64,
    per_branch: u32,
    branches: u32,
) -> Result<Vec<i64>, WorkloadError> {
    let name = TREES[table];
    let mut sums = vec![0i64; branches as usize];
    let mut expected = 0u64;
    for r in tree.range(Unbounded, Unbounded) {
        let (k, v) = r.map_err(swizzledb::Error::from)?;
        let row = Row::decode(name, &v)?;
        let id = key_id(&k).ok_or_else(|| {
            inconsistent("rows", format!("{name}: a key of {} bytes where ids have 4", k.len()))
        })?;
        // Keys come in order, so the first id that is not the next expected one is missing
        // (if it is larger) or one too many.
        if u64::from(id) != expected {
            return Err(if u64::from(id) > expected && expected < count {
                WorkloadError::Missing { table: name, key: expected.to_string() }
            } else {
                inconsistent("rows", format!("{name}: row {id} exists but there are only {count}"))
            });
        }
        if row.id != id || row.branch != id / per_branch {
            return Err(inconsistent(
                "rows",
                format!(
                    "{name}: the row at key {id} says it is {} of branch {}; it should be {id} of branch {}",
                    row.id,
                    row.branch,
                    id / per_branch
                ),
            ));
        }
        sums[(id / per_branch) as usize] += row.balance;
        expected += 1;
    }
    if expected < count {
        return Err(WorkloadError::Missing { table: name, key: expected.to_string() });
    }
    Ok(sums)
}

pub(super) fn verify(c: &TpcbConfig, db: &Database) -> Result<(), WorkloadError> {
    let tree = |i: usize| db.tree(TREES[i]);
    let b = c.branches;
    let branches = balances(&tree(t::BRANCH)?, t::BRANCH, u64::from(b), 1, b)?;
    let tellers = balances(&tree(t::TELLER)?, t::TELLER, u64::from(b * TELLERS), TELLERS, b)?;
    let accounts =
        balances(&tree(t::ACCOUNT)?, t::ACCOUNT, u64::from(b) * u64::from(c.accounts), c.accounts, b)?;
    // History deltas per branch of the teller, and per branch of the account.
    let (mut at_branch, mut on_accounts) = (vec![0i64; b as usize], vec![0i64; b as usize]);
    for r in tree(t::HISTORY)?.range(Unbounded, Unbounded) {
        let (_, v) = r.map_err(swizzledb::Error::from)?;
        let h = History::decode(&v)?;
        if h.branch >= b || h.teller / TELLERS != h.branch || h.account / c.accounts >= b {
            return Err(inconsistent(
                "history",
                format!(
                    "a history row names account {}, teller {} and branch {}: not a teller of that branch, \
                     or no such account",
                    h.account, h.teller, h.branch
                ),
            ));
        }
        at_branch[h.branch as usize] += h.delta;
        on_accounts[(h.account / c.accounts) as usize] += h.delta;
    }
    for i in 0..b as usize {
        if branches[i] != tellers[i] {
            return Err(inconsistent(
                "branch = tellers",
                format!(
                    "branch {i}: balance {} but its tellers' balances sum to {}",
                    branches[i], tellers[i]
                ),
            ));
        }
        if branches[i] != at_branch[i] {
            return Err(inconsistent(
                "branch = history",
                format!(
                    "branch {i}: balance {} but the history rows of its tellers sum to {}",
                    branches[i], at_branch[i]
                ),
            ));
        }
        if accounts[i] != on_accounts[i] {
            return Err(inconsistent(
                "accounts = history",
                format!(
                    "branch {i}: its accounts' balances sum to {} but the history rows on its accounts to {}",
                    accounts[i], on_accounts[i]
                ),
            ));
        }
    }
    Ok(())
}
