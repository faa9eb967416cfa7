//! Range and prefix scans: in order, in reverse, from both ends, limited.
//!
//! `cargo run -p swizzledb-examples --example scans`

use std::ops::Bound::{Excluded, Included, Unbounded};
use swizzledb::Database;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::builder().create(dir.path().join("scans.swz"))?;
    let cities = db.create_tree("cities")?;
    db.transact(|tx| {
        for (key, population) in [
            ("de/berlin", 3_850_000u32),
            ("de/hamburg", 1_900_000),
            ("de/munich", 1_510_000),
            ("fr/lyon", 520_000),
            ("fr/paris", 2_100_000),
            ("it/milan", 1_370_000),
            ("it/rome", 2_750_000),
        ] {
            tx.put(&cities, key.as_bytes(), &population.to_be_bytes())?;
        }
        Ok(())
    })?;
    let show = |(k, v): (Vec<u8>, Vec<u8>)| {
        let population = u32::from_be_bytes(v.try_into().expect("4-byte values"));
        format!("{} ({population})", String::from_utf8_lossy(&k))
    };

    // Every key starting with a prefix.
    println!("German cities:");
    for r in cities.scan_prefix(b"de/") {
        println!("  {}", show(r?));
    }

    // A key range [fr/, it/m), in reverse.
    println!("from it/m down to fr/, descending:");
    for r in cities.range(Included(b"fr/"), Excluded(b"it/m")).rev() {
        println!("  {}", show(r?));
    }

    // Scans are double-ended: both ends at once, meeting in the middle, each record once.
    let mut all = cities.range(Unbounded, Unbounded);
    let (first, last) = (all.next().transpose()?, all.next_back().transpose()?);
    println!("first {:?}, last {:?}, {} in between", first.map(show), last.map(show), all.count());

    // The first two keys after "e": a limited scan reads no more of a leaf than it returns.
    let next_two: Vec<_> = cities.range(Excluded(b"e"), Unbounded).limit(2).collect::<Result<_, _>>()?;
    println!("after \"e\": {:?}", next_two.into_iter().map(show).collect::<Vec<_>>());

    // Borrowed keys and values, no copies.
    let mut total = 0u64;
    let mut scan = cities.scan_prefix(b"it/");
    while let Some(r) = scan.next_with(|_, v| u64::from(u32::from_be_bytes(v.try_into().unwrap_or_default())))
    {
        total += r?;
    }
    println!("Italian cities together: {total}");
    db.close()?;
    Ok(())
}

/// CI runs the example as a test, so that what it shows keeps working.
#[test]
fn scans_runs() {
    main().unwrap();
}
