//! The master record (W10).

use crate::common;

use common::small_config;
use swizzledb_wal::{LogError, LogManager, Lsn};

#[test]
fn w10_master_round_trip_and_missing_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.read_master().unwrap(), None);
    let a = log.append(b"begin checkpoint").unwrap();
    log.write_master(a).unwrap();
    assert!(a < log.durable(), "W10: the master's LSN is made durable first");
    assert_eq!(log.read_master().unwrap(), Some(a));
    let b = log.append(b"begin checkpoint 2").unwrap();
    log.write_master(b).unwrap();
    assert_eq!(log.read_master().unwrap(), Some(b));
    log.close().unwrap();
    // A leftover temporary file (crash before the rename) changes nothing.
    std::fs::write(dir.path().join("master.tmp"), b"half").unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    assert_eq!(log.read_master().unwrap(), Some(b));
    log.write_master(Lsn(0)).unwrap();
    assert_eq!(log.read_master().unwrap(), Some(Lsn(0)));
}

#[test]
fn w10_damaged_master_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogManager::open(small_config(dir.path())).unwrap();
    let a = log.append(b"x").unwrap();
    log.write_master(a).unwrap();
    let path = dir.path().join("master");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(log.read_master(), Err(LogError::MasterCorrupted { .. })));
}
