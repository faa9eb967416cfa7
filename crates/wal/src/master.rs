//! The master record (README W10): one LSN kept in its own small file, replaced atomically.
//!
//! ```text
//! offset 0   8 bytes  magic "SWZMASTR"
//! offset 8   u64 LE   the LSN
//! offset 16  u32 LE   CRC-32C of bytes 0..16
//! ```

use crate::error::{LogError, Result};
use std::io;
use std::path::Path;
use swizzledb_io::{OpenMode, Vfs};
use swizzledb_sync::Lsn;

/// The master record's file name in the log directory.
pub(crate) const FILE: &str = "master";

const MAGIC: &[u8; 8] = b"SWZMASTR";
const LEN: usize = 20;

fn encode(lsn: Lsn) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..8].copy_from_slice(MAGIC);
    b[8..16].copy_from_slice(&lsn.0.to_le_bytes());
    let crc = crc32c::crc32c(&b[..16]);
    b[16..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode(b: &[u8]) -> std::result::Result<Lsn, String> {
    if b.len() != LEN {
        return Err(format!("{} bytes instead of {LEN}", b.len()));
    }
    if &b[..8] != MAGIC {
        return Err("wrong magic".into());
    }
    let crc = u32::from_le_bytes(b[16..].try_into().expect("4 bytes"));
    if crc32c::crc32c(&b[..16]) != crc {
        return Err("checksum mismatch".into());
    }
    Ok(Lsn(u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"))))
}

/// Writes the master record: a new temporary file, synced, renamed over the old record, and the
/// directory synced (io README IO2, IO3). A crash leaves the old or the new record, never a mix.
pub(crate) fn write(vfs: &dyn Vfs, dir: &Path, lsn: Lsn) -> Result<()> {
    write_named(vfs, dir, FILE, lsn)
}

/// [`write`] to the file `name` (and `name.tmp`) of `dir`: the same format, for another LSN the
/// layer above keeps beside the master record. Its errors' `op`s ("writing", "syncing",
/// "syncing directory" for the steps whose failure fails the log, W11) are matched by
/// `Inner::fail_if_written`.
pub(crate) fn write_named(vfs: &dyn Vfs, dir: &Path, name: &str, lsn: Lsn) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let dst = dir.join(name);
    match vfs.remove(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(LogError::io("removing", &tmp, e)),
        _ => {}
    }
    let f = vfs.open(&tmp, OpenMode::CREATE_NEW).map_err(|e| LogError::io("creating", &tmp, e))?;
    f.write_all_at(&encode(lsn), 0).map_err(|e| LogError::io("writing", &tmp, e))?;
    f.sync().map_err(|e| LogError::io("syncing", &tmp, e))?;
    vfs.rename(&tmp, &dst).map_err(|e| LogError::io("renaming over", &dst, e))?;
    vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))
}

/// Removes the master record, if there is one, and syncs the directory.
pub(crate) fn remove(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let path = dir.join(FILE);
    match vfs.remove(&path) {
        Ok(()) => vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io("removing", &path, e)),
    }
}

/// Reads the master record; `None` if there is none.
pub(crate) fn read(vfs: &dyn Vfs, dir: &Path) -> Result<Option<Lsn>> {
    read_named(vfs, dir, FILE)
}

/// [`read`] of the file `name` of `dir`.
pub(crate) fn read_named(vfs: &dyn Vfs, dir: &Path, name: &str) -> Result<Option<Lsn>> {
    let path = dir.join(name);
    let f = match vfs.open(&path, OpenMode::EXISTING) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("opening", &path, e)),
    };
    let len = f.len().map_err(|e| LogError::io("reading", &path, e))?;
    if len > LEN as u64 {
        return Err(LogError::MasterCorrupted { reason: format!("{name}: {len} bytes instead of {LEN}") });
    }
    let mut b = vec![0u8; len as usize];
    f.read_exact_at(&mut b, 0).map_err(|e| LogError::io("reading", &path, e))?;
    decode(&b).map(Some).map_err(|reason| LogError::MasterCorrupted { reason: format!("{name}: {reason}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w10_encode_decode() {
        let b = encode(Lsn(0x1234_5678_9abc));
        assert_eq!(decode(&b), Ok(Lsn(0x1234_5678_9abc)));
        let mut bad = b;
        bad[9] ^= 1;
        assert_eq!(decode(&bad), Err("checksum mismatch".into()));
        assert!(decode(&b[..19]).is_err());
    }

    /// A named LSN file beside the master record: absent, written, replaced, and independent of
    /// the master record.
    #[test]
    fn w10_named_lsn_files_are_kept_apart() {
        let fs = swizzledb_io::FaultFs::new();
        let dir = Path::new("/m");
        fs.create_dir_all(dir).unwrap();
        assert_eq!(read_named(&fs, dir, "cleaned").unwrap(), None);
        write_named(&fs, dir, "cleaned", Lsn(7)).unwrap();
        write(&fs, dir, Lsn(9)).unwrap();
        write_named(&fs, dir, "cleaned", Lsn(11)).unwrap();
        assert_eq!(read_named(&fs, dir, "cleaned").unwrap(), Some(Lsn(11)));
        assert_eq!(read(&fs, dir).unwrap(), Some(Lsn(9)));
    }
}
