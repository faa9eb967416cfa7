//! The four tables: one tree each, 4-byte big-endian ids as keys (byte order is id order), and
//! records of the specification's sizes (clause 3.2: at least 100 bytes for branches, tellers
//! and accounts, 50 for history).
//!
//! Ids count from 0: branch `b`, its tellers `b * 10 ..`, its accounts `b * accounts ..`, so a
//! teller's or account's branch is its id divided by the number per branch. History rows are
//! keyed by the writer's stream and sequence number, as TPC-C's history (the specification
//! gives history no key).

use crate::workloads::WorkloadError;

/// The trees.
pub const TREES: [&str; 4] = ["tpcb-branch", "tpcb-teller", "tpcb-account", "tpcb-history"];

/// Bytes of a branch, teller and account record.
pub const ROW_SIZE: usize = 100;
/// Bytes of a history record.
pub const HISTORY_SIZE: usize = 50;

/// A 4-byte big-endian key.
#[must_use]
pub fn id_key(id: u32) -> [u8; 4] {
    id.to_be_bytes()
}

/// A history key: the writer's stream and sequence number.
#[must_use]
pub fn history_key(stream: u32, sequence: u32) -> [u8; 8] {
    let mut k = [0; 8];
    k[..4].copy_from_slice(&stream.to_be_bytes());
    k[4..].copy_from_slice(&sequence.to_be_bytes());
    k
}

/// The id in a 4-byte key (`None` for another length).
#[must_use]
pub fn key_id(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.try_into().ok()?))
}

/// A branch, teller or account: its id, its branch (a branch's own id for a branch) and its
/// balance, then filler to [`ROW_SIZE`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Its id.
    pub id: u32,
    /// The branch it belongs to.
    pub branch: u32,
    /// Balance.
    pub balance: i64,
}

impl Row {
    /// The record's bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; ROW_SIZE] {
        let mut b = [b' '; ROW_SIZE];
        b[..4].copy_from_slice(&self.id.to_le_bytes());
        b[4..8].copy_from_slice(&self.branch.to_le_bytes());
        b[8..16].copy_from_slice(&self.balance.to_le_bytes());
        b
    }

    /// Decodes a record of `table`.
    ///
    /// # Errors
    /// [`WorkloadError::Corrupt`] if it is not [`ROW_SIZE`] bytes.
    pub fn decode(table: &'static str, v: &[u8]) -> Result<Row, WorkloadError> {
        if v.len() != ROW_SIZE {
            return Err(WorkloadError::Corrupt { table, len: v.len(), expected: ROW_SIZE });
        }
        let u32_at = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
        let mut balance = [0; 8];
        balance.copy_from_slice(&v[8..16]);
        Ok(Row { id: u32_at(0), branch: u32_at(4), balance: i64::from_le_bytes(balance) })
    }
}

/// A history record: what one transaction did, then filler to [`HISTORY_SIZE`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct History {
    /// The account updated.
    pub account: u32,
    /// The teller.
    pub teller: u32,
    /// The teller's branch.
    pub branch: u32,
    /// The amount added to the three balances.
    pub delta: i64,
    /// Seconds since the Unix epoch.
    pub time: i64,
}

impl History {
    /// The record's bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; HISTORY_SIZE] {
        let mut b = [b' '; HISTORY_SIZE];
        b[..4].copy_from_slice(&self.account.to_le_bytes());
        b[4..8].copy_from_slice(&self.teller.to_le_bytes());
        b[8..12].copy_from_slice(&self.branch.to_le_bytes());
        b[12..20].copy_from_slice(&self.delta.to_le_bytes());
        b[20..28].copy_from_slice(&self.time.to_le_bytes());
        b
    }

    /// Decodes a history record.
    ///
    /// # Errors
    /// [`WorkloadError::Corrupt`] if it is not [`HISTORY_SIZE`] bytes.
    pub fn decode(v: &[u8]) -> Result<History, WorkloadError> {
        if v.len() != HISTORY_SIZE {
            return Err(WorkloadError::Corrupt { table: TREES[3], len: v.len(), expected: HISTORY_SIZE });
        }
        let u32_at = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
        let i64_at = |i: usize| {
            let mut b = [0; 8];
            b.copy_from_slice(&v[i..i + 8]);
            i64::from_le_bytes(b)
        };
        Ok(History {
            account: u32_at(0),
            teller: u32_at(4),
            branch: u32_at(8),
            delta: i64_at(12),
            time: i64_at(20),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_at_the_specified_sizes() {
        let r = Row { id: 7, branch: 3, balance: -123_456_789 };
        let e = r.encode();
        assert_eq!(e.len(), 100);
        assert_eq!(Row::decode("t", &e).unwrap(), r);
        assert!(matches!(Row::decode("t", &e[..99]), Err(WorkloadError::Corrupt { len: 99, .. })));
        let h = History { account: 1, teller: 2, branch: 3, delta: -999_999, time: 42 };
        let e = h.encode();
        assert_eq!(e.len(), 50);
        assert_eq!(History::decode(&e).unwrap(), h);
        assert!(History::decode(&[0; 51]).is_err());
        assert_eq!(key_id(&id_key(0x0102_0304)), Some(0x0102_0304));
        assert!(history_key(1, 2) < history_key(1, 3) && history_key(1, u32::MAX) < history_key(2, 0));
    }
}
