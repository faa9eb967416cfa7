//! Transactions with retry: concurrent transfers between accounts keep the total constant.
//!
//! `Database::transact` runs a closure as one transaction and commits it. When a record lock
//! is refused (`Error::Lock`: two transfers each read an account the other then writes, a
//! deadlock whose younger transaction is chosen to fail), it rolls the attempt back and runs the
//! closure again, so the closure must not have side effects outside the transaction.
//!
//! `cargo run -p swizzledb-examples --example transactions`

use swizzledb::{Database, Error, Transaction, Tree};

fn balance(tx: &Transaction<'_>, tree: &Tree, who: &[u8]) -> swizzledb::Result<u64> {
    let bytes = tx.get(tree, who)?.unwrap_or_else(|| 0u64.to_be_bytes().to_vec());
    Ok(u64::from_be_bytes(bytes.try_into().expect("8-byte balances")))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::builder().create(dir.path().join("bank.swz"))?;
    let accounts = db.create_tree("accounts")?;
    let names: Vec<Vec<u8>> = (0..8).map(|i| format!("acct{i}").into_bytes()).collect();

    // Opening balances in one transaction: all or nothing.
    db.transact(|tx| {
        for n in &names {
            tx.put(&accounts, n, &1000u64.to_be_bytes())?;
        }
        Ok(())
    })?;

    // Four threads move money around; conflicting transactions are retried by `transact`.
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (db, accounts, names) = (&db, &accounts, &names);
            s.spawn(move || {
                for i in 0..200usize {
                    let from = &names[(t + i) % names.len()];
                    let to = &names[(t * 3 + i * 7 + 1) % names.len()];
                    if from == to {
                        continue;
                    }
                    let result = db.transact(|tx| {
                        let (a, b) = (balance(tx, accounts, from)?, balance(tx, accounts, to)?);
                        if a < 10 {
                            // Returning Error::Aborted rolls back and is not retried.
                            return Err(Error::Aborted("insufficient funds".into()));
                        }
                        tx.put(accounts, from, &(a - 10).to_be_bytes())?;
                        tx.put(accounts, to, &(b + 10).to_be_bytes())?;
                        Ok(())
                    });
                    match result {
                        Ok(()) | Err(Error::Aborted(_)) => {}
                        Err(e) => panic!("transfer failed: {e}"),
                    }
                }
            });
        }
    });

    // A transaction that is dropped (or aborted) leaves nothing behind.
    {
        let mut tx = db.begin();
        tx.put(&accounts, b"acct0", &0u64.to_be_bytes())?;
        tx.abort()?;
    }

    let total: u64 = db.transact(|tx| names.iter().map(|n| balance(tx, &accounts, n)).sum())?;
    println!("total after 800 transfers: {total}");
    assert_eq!(total, 8 * 1000);
    db.close()?;
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn transactions_runs() {
    main().unwrap();
}
