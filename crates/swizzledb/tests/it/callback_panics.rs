//! A user's callback that panics — `get_with`, `update_with`, `next_with`, a transaction's
//! body — unwinds through the engine holding a leaf latch, record locks or an open transaction.
//! Afterwards the database is as if the call never ran: the transaction rolled back, every
//! latch and lock released (another thread writes the same keys at once), the tree sound.

use std::ops::Bound::Unbounded;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use swizzledb::{Database, PoolMode, Tree};

const KEYS: u32 = 1000;
const LARGE: usize = 20_000;

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// Every record as the setup wrote it: `KEYS` small values and one large.
fn assert_untouched(t: &Tree, what: &str) {
    let mut n = 0;
    for r in t.range(Unbounded, Unbounded) {
        let (k, v) = r.unwrap();
        if k == b"big" {
            assert_eq!(v, vec![9; LARGE], "{what}: the large value");
        } else {
            assert_eq!(v, [1; 50], "{what}: key {k:?}");
        }
        n += 1;
    }
    assert_eq!(n, KEYS + 1, "{what}: records");
    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// Another thread rewrites every key, in auto-commit writes and a transaction, within a
/// deadline: a latch or lock left behind by the panic would make it wait forever.
fn others_write_on(db: &Arc<Database>, t: &Tree, what: &str) {
    let (db, t) = (Arc::clone(db), t.clone());
    let (done, finished) = mpsc::channel();
    let writer = std::thread::spawn(move || {
        for i in 0..KEYS {
            t.upsert(&key(i), &[1; 50]).unwrap();
        }
        t.upsert(b"big", &[9; LARGE]).unwrap();
        db.transact(|tx| (0..20).try_for_each(|i| tx.put(&t, &key(i), &[1; 50]).map(|_| ()))).unwrap();
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: the others' writes hung"));
    // Its handles go with it: the last owner closes the database afterwards.
    writer.join().unwrap();
}

#[test]
fn a_panicking_callback_leaves_nothing_behind() {
    for (mode, logging) in
        [(PoolMode::Swizzling, true), (PoolMode::Traditional, false), (PoolMode::MainMemory, true)]
    {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().page_size(4096).pool_bytes(256 * 4096).mode(mode).logging(logging);
        let db = Arc::new(db.create(dir.path().join("p.swz")).unwrap());
        let t = db.create_tree("t").unwrap();
        for i in 0..KEYS {
            t.upsert(&key(i), &[1; 50]).unwrap();
        }
        t.upsert(b"big", &[9; LARGE]).unwrap();
        type Case<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let cases: Vec<Case<'_>> = vec![
            (
                "get_with",
                Box::new(|| {
                    let _ = t.get_with(&key(5), |_| panic!("callback"));
                }),
            ),
            (
                "get_with of a large value",
                Box::new(|| {
                    let _ = t.get_with(b"big", |_| panic!("callback"));
                }),
            ),
            (
                "update_with",
                Box::new(|| drop(db.transact(|tx| tx.update_with(&t, &key(6), |_, _| panic!("callback"))))),
            ),
            (
                "update_with of a large value",
                Box::new(|| drop(db.transact(|tx| tx.update_with(&t, b"big", |_, _| panic!("callback"))))),
            ),
            (
                "a transaction's body after 500 writes",
                Box::new(|| {
                    drop(db.transact(|tx| -> swizzledb::Result<()> {
                        for i in 0..500 {
                            tx.put(&t, &key(i), &[2; 50])?;
                        }
                        tx.delete(&t, b"big")?;
                        panic!("body")
                    }))
                }),
            ),
            (
                "next_with of a transaction's range",
                Box::new(|| {
                    drop(db.transact(|tx| {
                        tx.put(&t, &key(8), &[3; 50])?;
                        tx.range(&t, Unbounded, Unbounded).next_with(|_, _| panic!("callback"));
                        Ok(())
                    }))
                }),
            ),
            (
                "next_with of a plain range",
                Box::new(|| drop(t.range(Unbounded, Unbounded).next_with(|_, _| panic!("callback")))),
            ),
            (
                "a snapshot transaction's body",
                Box::new(|| {
                    drop(db.transact_snapshot(|tx| -> swizzledb::Result<()> {
                        tx.put(&t, &key(10), &[4; 50])?;
                        panic!("body")
                    }))
                }),
            ),
        ];
        for (what, case) in &cases {
            let what = format!("{mode:?}, logging {logging}, {what}");
            assert!(catch_unwind(AssertUnwindSafe(case)).is_err(), "{what}: no panic");
            assert_untouched(&t, &what);
            others_write_on(&db, &t, &what);
            assert_untouched(&t, &format!("{what}, then written on"));
        }
        drop(cases);
        drop(t);
        Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    }
}
