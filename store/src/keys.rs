//! Key files: the private checkpoint key (mode 0600) and its public half.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::checkpoint::{NoteSigner, NoteVerifier};
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
    let path = dir.signing_key();
    match fs::read_to_string(&path) {
        Ok(text) => NoteSigner::from_text(&text)
            .map(Some)
            .map_err(|e| StoreError::Key {
                path,
                reason: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

pub(crate) fn read_verifier(dir: &DataDir) -> Result<Option<NoteVerifier>, StoreError> {
    let path = dir.verifier_key();
    match fs::read_to_string(&path) {
        Ok(text) => NoteVerifier::from_text(&text)
            .map(Some)
            .map_err(|e| StoreError::Key {
                path,
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
