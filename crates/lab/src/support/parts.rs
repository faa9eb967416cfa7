//! The parts file of an experiment that runs in parts and resumes (`--resume`; crates/lab README
//! rule 10): `<figure>.parts.json` in `--out`, `{"options": "...", "kept": ...}`. `options`
//! names, in words, everything the kept measurements depend on; a run with other options
//! refuses the file rather than mixing its measurements with them. `kept` is the experiment's
//! own record of its finished parts. Written whole after each part, by rename.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::error::Error;
use std::io;
use std::path::Path;

use crate::support::output::write_atomic;
use crate::{UnusablePath, Usage};

#[derive(Serialize, Deserialize)]
struct PartsFile<T> {
    options: String,
    kept: T,
}

/// What an earlier run with `options` kept in `path`; `None` if there is no such file.
///
/// # Errors
/// It cannot be read ([`UnusablePath`]), is not a parts file of this experiment, or was written
/// with other options ([`Usage`], naming both).
pub fn read<T: DeserializeOwned>(path: &Path, options: &str) -> Result<Option<T>, Box<dyn Error>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(UnusablePath(format!("cannot read {}: {e}", path.display())).into()),
    };
    let file: PartsFile<T> = serde_json::from_str(&text)
        .map_err(|e| Usage(format!("{} is not a parts file of this experiment ({e})", path.display())))?;
    if file.options != options {
        return Err(Usage(format!(
            "--resume: the run in {} had other options ({}) than this one ({options}); resume it with \
             its own, or run without --resume",
            path.display(),
            file.options
        ))
        .into());
    }
    Ok(Some(file.kept))
}

/// Writes `kept`, with the `options` it ran with, to `path`.
///
/// # Errors
/// The file cannot be written ([`UnusablePath`]).
pub fn write<T: Serialize>(path: &Path, options: &str, kept: &T) -> Result<(), Box<dyn Error>> {
    let file = PartsFile { options: options.to_string(), kept };
    write_atomic(path, &serde_json::to_vec(&file)?)
        .map_err(|e| UnusablePath(format!("cannot write {}: {e}", path.display())).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What was written comes back for the same options only; a missing file is no parts.
    #[test]
    fn parts_come_back_for_the_same_options_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.parts.json");
        assert_eq!(read::<Vec<u64>>(&path, "a").unwrap(), None);
        write(&path, "a", &vec![1u64, 2]).unwrap();
        assert_eq!(read::<Vec<u64>>(&path, "a").unwrap(), Some(vec![1, 2]));
        let e = read::<Vec<u64>>(&path, "b").unwrap_err().to_string();
        assert!(e.contains("other options (a) than this one (b)"), "{e}");
        std::fs::write(&path, "not json").unwrap();
        assert!(read::<Vec<u64>>(&path, "a").unwrap_err().to_string().contains("is not a parts file"));
    }
}
