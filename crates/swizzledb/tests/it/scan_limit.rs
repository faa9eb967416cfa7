//! `TxnRange::limit` and `TxnRevRange::limit` (btree README T19) as a user reaches them: in a
//! transaction, with record locking on (the scan passes the lock gate) and off, with logging on
//! and off, in every buffer mode, a limited scan returns exactly the first `n` records of its
//! range in its direction, and the range reads the same with the limit as without.

use std::ops::Bound::{Excluded, Included, Unbounded};
use swizzledb::{Database, PoolMode};

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

#[test]
fn limited_scans_return_the_first_records_in_every_configuration() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        for (logging, locking) in [(false, false), (true, false), (true, true)] {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::builder()
                .mode(mode)
                .logging(logging)
                .lab(|l| l.locking(locking))
                .create(dir.path().join("l.swz"))
                .unwrap();
            let tree = db.create_tree("t").unwrap();
            db.transact(|tx| {
                // Every other key, enough for many leaves.
                for k in (0..4000).step_by(2) {
                    tx.insert(&tree, &key(k), &[k as u8; 40])?;
                }
                Ok(())
            })
            .unwrap();
            let what = format!("{mode:?}, logging {logging}, locking {locking}");
            db.transact(|tx| {
                let (from, to) = (key(101), key(3001));
                let all: Vec<_> =
                    tx.range(&tree, Included(&from), Excluded(&to)).collect::<Result<_, _>>()?;
                assert_eq!(all.len(), 1450, "{what}");
                for n in [0, 1, 3, 700, 5000] {
                    let mut got = Vec::new();
                    let mut scan = tx.range(&tree, Included(&from), Excluded(&to)).limit(n);
                    while let Some(r) = scan.next_with(|k, v| (k.to_vec(), v.to_vec())) {
                        got.push(r?);
                    }
                    assert_eq!(got, all[..n.min(all.len())], "{what}, limit {n}");
                    let rev: Vec<_> =
                        tx.range_rev(&tree, Unbounded, Excluded(&to)).limit(n).collect::<Result<_, _>>()?;
                    let want: Vec<_> = (0..3001).rev().filter(|k| k % 2 == 0).take(n).map(key).collect();
                    assert_eq!(
                        rev.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
                        want,
                        "{what}, rev limit {n}"
                    );
                }
                Ok(())
            })
            .unwrap();
            db.close().unwrap();
        }
    }
}
