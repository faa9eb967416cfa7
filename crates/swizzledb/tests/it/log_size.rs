//! The log's volume (docs/log-size.md; RECOVERY.md R3, R29): random-order inserts of 100-byte
//! values cost at most 250 bytes of log each with split images, because splits and adoptions
//! log the old nodes as node changes and only the new node as an image; by default the new node
//! is a split-off too, and an insert costs at most 170 bytes. The log of the run is decoded and
//! checked record by record.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::record::{NodeLog, Record};
use swizzledb::{wal_dir, Cleaner, CommitMode, Database};
use swizzledb_io::{CrashMode, FaultFs, Vfs};
use swizzledb_wal::{LogConfig, LogManager};

/// The bench's key scrambler (splitmix64), so keys arrive in random order.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const INSERTS: u64 = 30_000;

/// `INSERTS` random-order inserts in transactions of 16, logged with lazy split images or
/// not: the log's bytes per insert and the forms of its structure records.
fn random_inserts(lazy: Option<bool>) -> (f64, BTreeMap<Vec<&'static str>, u64>) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let path = Path::new("/d/db");
    let db = Database::builder()
        .pool_bytes(64 << 20)
        .commit_mode(CommitMode::Async)
        .lab(|l| l.cleaner(Cleaner::None))
        .checkpoint_interval(None)
        .lab(|l| {
            let l = l.vfs(Arc::new(fs.clone()));
            match lazy {
                Some(on) => l.lazy_split_images(on),
                None => l,
            }
        })
        .create(path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let before = db.log_stats().unwrap().log_bytes;
    for j in 0..INSERTS / 16 {
        db.transact(|tx| {
            for i in j * 16..(j + 1) * 16 {
                let key = mix(i).to_be_bytes();
                tx.insert(&t, &key, &[key[0]; 100])?;
            }
            Ok(())
        })
        .unwrap();
    }
    let per_insert = (db.log_stats().unwrap().log_bytes - before) as f64 / INSERTS as f64;
    db.checkpoint().unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(db);

    let mut config = LogConfig::new(wal_dir(path));
    config.vfs = Arc::new(fs.clone());
    let log = LogManager::open(config).unwrap();
    let mut forms: BTreeMap<Vec<&'static str>, u64> = BTreeMap::new();
    for item in log.scan(log.oldest()).unwrap() {
        let (_, body) = item.unwrap();
        if let Record::Structure { pages, .. } = Record::decode(&body).unwrap() {
            let form = pages
                .iter()
                .map(|(_, n)| match n {
                    NodeLog::Image(_) => "image",
                    NodeLog::Split { .. } => "split",
                    NodeLog::Adopt { .. } => "adopt",
                    NodeLog::Adopted { .. } => "adopted",
                    NodeLog::Unlink { .. } => "unlink",
                    NodeLog::SplitOff => "split-off",
                })
                .collect();
            *forms.entry(form).or_default() += 1;
        }
    }
    (per_insert, forms)
}

/// Every split logs one node change and the new node's image; every adoption two node changes.
fn check_forms(forms: &BTreeMap<Vec<&'static str>, u64>, new_node: &'static str) {
    let splits = forms.get(&vec!["split", new_node]).copied().unwrap_or(0);
    let adoptions = forms.get(&vec!["adopt", "adopted"]).copied().unwrap_or(0);
    assert!(splits > INSERTS / 100, "{forms:?}");
    assert!(adoptions * 10 > splits * 9, "most splits are adopted: {forms:?}");
    let images: u64 = forms.iter().filter(|(f, _)| f.iter().all(|&p| p == "image")).map(|(_, n)| n).sum();
    assert!(images < 10, "only the root and its growth log images alone: {forms:?}");
}

#[test]
fn r3_random_inserts_cost_at_most_250_bytes_of_log_each() {
    let (per_insert, forms) = random_inserts(Some(false));
    assert!(per_insert <= 250.0, "{per_insert:.1} bytes of log per insert");
    check_forms(&forms, "image");
}

/// R29: by default (no log archive, classical checkpoints) a split logs its new node as a
/// split-off, and nothing here resolves one by an image (no page is written before the end).
#[test]
fn r29_by_default_random_inserts_log_split_offs_and_cost_at_most_170_bytes_each() {
    let (per_insert, forms) = random_inserts(None);
    assert!(per_insert <= 170.0, "{per_insert:.1} bytes of log per insert");
    check_forms(&forms, "split-off");
    let (eager, _) = random_inserts(Some(false));
    assert!(
        per_insert * 1.4 < eager,
        "{per_insert:.1} bytes per insert against {eager:.1} with split images"
    );
}
