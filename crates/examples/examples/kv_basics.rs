//! Key-value basics: create a database, write, read, update atomically, delete, reopen.
//!
//! `cargo run -p swizzledb-examples --example kv_basics`

use swizzledb::Database;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A scratch directory that is removed at the end (tempfile is a dependency of the examples; any
    // directory works).
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("kv.swz");

    // `open_or_create` opens the file if it exists and creates it otherwise. By default every
    // change is logged (in `kv.swz.wal/`) and each write of a tree handle is a transaction of
    // its own that is durable when the call returns.
    let db = Database::builder().open_or_create(&path)?;
    let users = db.tree_or_create("users")?;

    users.insert(b"alice", b"admin")?; // fails with TreeError::DuplicateKey if present
    users.upsert(b"bob", b"viewer")?; // inserts or replaces
    assert_eq!(users.get(b"alice")?.as_deref(), Some(&b"admin"[..]));

    // Compare-and-swap: change bob's role only if nobody changed it meanwhile.
    match users.compare_and_swap(b"bob", Some(b"viewer"), Some(b"editor"))? {
        Ok(()) => println!("bob is an editor now"),
        Err(e) => println!("bob's role changed meanwhile to {:?}", e.current),
    }

    users.delete(b"alice")?;
    if let Some((name, role)) = users.first()? {
        let (name, role) = (String::from_utf8_lossy(&name), String::from_utf8_lossy(&role));
        println!("{} user(s); the first is {name} ({role})", users.len()?);
    }

    // Close flushes and releases the file; dropping the database does the same, without the
    // error report.
    db.close()?;

    let db = Database::builder().open(&path)?;
    let users = db.tree("users")?;
    assert_eq!(users.get(b"bob")?.as_deref(), Some(&b"editor"[..]));
    assert_eq!(users.get(b"alice")?, None);
    println!("after reopening: bob is an {}", String::from_utf8(users.get(b"bob")?.unwrap_or_default())?);
    db.close()?;
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn kv_basics_runs() {
    main().unwrap();
}
