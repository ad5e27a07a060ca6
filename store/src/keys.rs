//! Key files: the private checkpoint key (mode 0600) and its public half,
//! and after a rotation the previous key with the end of its validity.

use std::fs;
use std::io::Write;
use std::path::Path;

use annal_schemas::Timestamp;

use crate::checkpoint::{CheckpointError, NoteSigner, NoteVerifier};
use crate::layout::DataDir;
use crate::StoreError;

/// Generates the ledger's signing key and writes both key files.
pub(crate) fn create(dir: &DataDir, origin: &str) -> Result<NoteSigner, StoreError> {
    let signer = NoteSigner::generate(origin).map_err(|e| StoreError::Key {
        path: dir.signing_key(),
        reason: e.to_string(),
    })?;
    let keys = dir.keys();
    fs::create_dir_all(&keys).map_err(|e| StoreError::io(&keys, e))?;
    restrict_dir(&keys)?;
    write_private(&dir.signing_key(), signer.to_text().as_bytes())?;
    let vkey = signer.verifier().to_text();
    fs::write(dir.verifier_key(), format!("{vkey}\n"))
        .map_err(|e| StoreError::io(dir.verifier_key(), e))?;
    Ok(signer)
}

pub(crate) fn read_signer(dir: &DataDir) -> Result<Option<NoteSigner>, StoreError> {
    read_key(&dir.signing_key(), NoteSigner::from_text)
}

pub(crate) fn read_verifier(dir: &DataDir) -> Result<Option<NoteVerifier>, StoreError> {
    read_key(&dir.verifier_key(), NoteVerifier::from_text)
}

/// The previous key and the end of its validity, after a rotation.
pub(crate) fn read_previous(dir: &DataDir) -> Result<Option<(NoteSigner, Timestamp)>, StoreError> {
    let Some(signer) = read_key(&dir.previous_signing_key(), NoteSigner::from_text)? else {
        return Ok(None);
    };
    let path = dir.previous_until();
    let text = fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
    let until = text
        .trim()
        .parse::<Timestamp>()
        .map_err(|e| StoreError::Key {
            path: path.clone(),
            reason: format!("not an RFC 3339 time: {e}"),
        })?;
    Ok(Some((signer, until)))
}

pub(crate) fn read_previous_verifier(dir: &DataDir) -> Result<Option<NoteVerifier>, StoreError> {
    read_key(&dir.previous_verifier_key(), NoteVerifier::from_text)
}

/// Makes `next` the signing key and keeps `previous` (with its validity
/// end) beside it. The previous files are written first and the current
/// key is replaced by a rename, so a crash leaves either the old key
/// current or both keys in place, never no key.
pub(crate) fn rotate(
    dir: &DataDir,
    previous: &NoteSigner,
    until: Timestamp,
    next: &NoteSigner,
) -> Result<(), StoreError> {
    replace_private(&dir.previous_signing_key(), previous.to_text().as_bytes())?;
    replace_public(&dir.previous_verifier_key(), &previous.verifier().to_text())?;
    replace_public(&dir.previous_until(), &until.to_string())?;
    replace_public(&dir.verifier_key(), &next.verifier().to_text())?;
    replace_private(&dir.signing_key(), next.to_text().as_bytes())
}

fn replace_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    write_private(&tmp, bytes)?;
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))
}

fn replace_public(path: &Path, line: &str) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, format!("{line}\n"))
        .and_then(|_| fs::File::open(&tmp)?.sync_all())
        .map_err(|e| StoreError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))
}

/// Reads and parses a key file; a missing file is `None` (the key is optional
/// for read-only use), an unparsable one an error naming the file.
fn read_key<K>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<K, CheckpointError>,
) -> Result<Option<K>, StoreError> {
    match fs::read_to_string(path) {
        Ok(text) => parse(&text).map(Some).map_err(|e| StoreError::Key {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| StoreError::io(path, e))?;
    file.write_all(bytes)
        .and_then(|_| file.write_all(b"\n"))
        .and_then(|_| file.sync_all())
        .map_err(|e| StoreError::io(path, e))
}

fn restrict_dir(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}
