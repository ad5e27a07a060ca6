//! Signed checkpoints in the C2SP `tlog-checkpoint` / `signed-note` formats.
//!
//! A checkpoint commits to the log's size and root:
//!
//! ```text
//! annal.local/ledger          <- origin
//! 1042                        <- tree size
//! 3q2+7w...=                  <- base64 root hash
//!
//! — annal.local/ledger Ab12...==   <- key name, base64(key id ‖ Ed25519 signature)
//! ```
//!
//! The key id is the first four bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖
//! public key), as in Go's `golang.org/x/mod/sumdb/note`, so existing note
//! verifiers accept annal's checkpoints and keys.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::merkle::Hash;

/// Algorithm byte for Ed25519 in signed notes.
const ALG_ED25519: u8 = 0x01;

/// An unsigned checkpoint body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Log identity (also the signing key's name).
    pub origin: String,
    /// Number of leaves.
    pub size: u64,
    /// Root hash at `size`.
    pub root: Hash,
}

/// Why a checkpoint or key does not parse or verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The text is not a signed note of the expected shape.
    #[error("malformed checkpoint: {0}")]
    Malformed(String),
    /// No signature line from the expected key.
    #[error("no signature by key {0:?}")]
    NoSignature(String),
    /// A signature from the key that does not verify.
    #[error("signature by {0:?} does not verify")]
    BadSignature(String),
    /// A key string that does not parse.
    #[error("malformed key: {0}")]
    BadKey(String),
}

impl Checkpoint {
    /// The note body that is signed (ends with a newline).
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        )
    }

    /// The checkpoint a signed note carries, without checking any
    /// signature: to learn which tree size a note is about before checking
    /// it against that tree. Never trust the result on its own.
    pub fn parse_unverified(note: &str) -> Result<Checkpoint, CheckpointError> {
        let body = note.split_once("\n\n").map_or(note, |(body, _)| body);
        Checkpoint::parse_body(body)
    }

    fn parse_body(body: &str) -> Result<Checkpoint, CheckpointError> {
        let mut lines = body.lines();
        let bad = |what: &str| CheckpointError::Malformed(what.to_string());
        let origin = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad("missing origin"))?;
        let size = lines
            .next()
            .and_then(|l| l.parse::<u64>().ok())
            .ok_or_else(|| bad("size is not a decimal number"))?;
        let root = lines
            .next()
            .and_then(|l| B64.decode(l).ok())
            .and_then(|b| <Hash>::try_from(b.as_slice()).ok())
            .ok_or_else(|| bad("root is not a base64 32-byte hash"))?;
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
        })
    }
}

/// The ledger's signing key (held only by the operator).
pub struct NoteSigner {
    name: String,
    key: SigningKey,
}

/// A public key that verifies checkpoints (safe to hand to auditors).
#[derive(Clone, Debug)]
pub struct NoteVerifier {
    name: String,
    key: VerifyingKey,
}

impl NoteSigner {
    /// A fresh key named `name` (the log origin) from OS randomness.
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        validate_name(name)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| CheckpointError::BadKey(format!("no OS randomness: {e}")))?;
        Ok(NoteSigner {
            name: name.to_string(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Parses `PRIVATE+KEY+<name>+<hex id>+<base64(0x01 ‖ seed)>`.
    pub fn from_text(text: &str) -> Result<Self, CheckpointError> {
        let rest = text
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or_else(|| CheckpointError::BadKey("expected PRIVATE+KEY+ prefix".into()))?;
        let (name, id, key) = split_key(rest)?;
        let seed: [u8; 32] = key
            .try_into()
            .map_err(|_| CheckpointError::BadKey("seed is not 32 bytes".into()))?;
        let signer = NoteSigner {
            name: name.to_string(),
            key: SigningKey::from_bytes(&seed),
        };
        if signer.verifier().key_id() != id {
            return Err(CheckpointError::BadKey(
                "key id does not match the key".into(),
            ));
        }
        Ok(signer)
    }

    /// The private key text (store with mode 0600).
    pub fn to_text(&self) -> String {
        let mut raw = vec![ALG_ED25519];
        raw.extend_from_slice(&self.key.to_bytes());
        format!(
            "PRIVATE+KEY+{}+{:08x}+{}",
            self.name,
            self.verifier().key_id(),
            B64.encode(raw)
        )
    }

    /// The matching public key.
    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// Key name (the log origin).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signed note text of `checkpoint`.
    pub fn sign(&self, checkpoint: &Checkpoint) -> String {
        sign_note(checkpoint, &[self])
    }

    /// The signature line of this key over `body`.
    fn signature_line(&self, body: &str) -> String {
        let sig = self.key.sign(body.as_bytes());
        let mut blob = self.verifier().key_id().to_be_bytes().to_vec();
        blob.extend_from_slice(&sig.to_bytes());
        format!("\u{2014} {} {}\n", self.name, B64.encode(blob))
    }
}

/// The signed note text of `checkpoint` with one signature line per signer,
/// in the order given: during a key rotation checkpoints carry both the new
/// and the old key's signature, so auditors holding either can check them.
pub fn sign_note(checkpoint: &Checkpoint, signers: &[&NoteSigner]) -> String {
    let body = checkpoint.body();
    let mut note = format!("{body}\n");
    for signer in signers {
        note.push_str(&signer.signature_line(&body));
    }
    note
}

impl NoteVerifier {
    /// Parses the verifier key `<name>+<hex id>+<base64(0x01 ‖ public key)>`.
    pub fn from_text(text: &str) -> Result<Self, CheckpointError> {
        let (name, id, key) = split_key(text.trim())?;
        let key: [u8; 32] = key
            .try_into()
            .map_err(|_| CheckpointError::BadKey("public key is not 32 bytes".into()))?;
        let key =
            VerifyingKey::from_bytes(&key).map_err(|e| CheckpointError::BadKey(e.to_string()))?;
        let verifier = NoteVerifier {
            name: name.to_string(),
            key,
        };
        if verifier.key_id() != id {
            return Err(CheckpointError::BadKey(
                "key id does not match the key".into(),
            ));
        }
        Ok(verifier)
    }

    /// The verifier key text.
    pub fn to_text(&self) -> String {
        let mut raw = vec![ALG_ED25519];
        raw.extend_from_slice(self.key.as_bytes());
        format!("{}+{:08x}+{}", self.name, self.key_id(), B64.encode(raw))
    }

    /// Key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The 4-byte key id.
    pub fn key_id(&self) -> u32 {
        let mut h = Sha256::new();
        h.update(self.name.as_bytes());
        h.update(b"\n");
        h.update([ALG_ED25519]);
        h.update(self.key.as_bytes());
        let d = h.finalize();
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Checks a signed note and returns the checkpoint it carries.
    pub fn open(&self, note: &str) -> Result<Checkpoint, CheckpointError> {
        let (body, sigs) = note
            .split_once("\n\n")
            .ok_or_else(|| CheckpointError::Malformed("no blank line before signatures".into()))?;
        let body = format!("{body}\n");
        let prefix = format!("\u{2014} {} ", self.name);
        let mut saw_ours = false;
        for line in sigs.lines() {
            let Some(b64) = line.strip_prefix(&prefix) else {
                continue;
            };
            let blob = B64
                .decode(b64)
                .map_err(|_| CheckpointError::Malformed("signature is not base64".into()))?;
            if blob.len() != 68 || blob[..4] != self.key_id().to_be_bytes() {
                continue;
            }
            saw_ours = true;
            let sig = Signature::from_slice(&blob[4..])
                .map_err(|_| CheckpointError::BadSignature(self.name.clone()))?;
            if self.key.verify(body.as_bytes(), &sig).is_ok() {
                let cp = Checkpoint::parse_body(&body)?;
                if cp.origin != self.name {
                    return Err(CheckpointError::Malformed(format!(
                        "origin {:?} differs from key name {:?}",
                        cp.origin, self.name
                    )));
                }
                return Ok(cp);
            }
        }
        Err(if saw_ours {
            CheckpointError::BadSignature(self.name.clone())
        } else {
            CheckpointError::NoSignature(self.name.clone())
        })
    }
}

fn validate_name(name: &str) -> Result<(), CheckpointError> {
    if name.is_empty()
        || name.contains('+')
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(CheckpointError::BadKey(format!(
            "origin {name:?} must be non-empty with no spaces or '+'"
        )));
    }
    Ok(())
}

fn split_key(text: &str) -> Result<(&str, u32, Vec<u8>), CheckpointError> {
    // At most three parts: standard base64 may itself contain '+'.
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(CheckpointError::BadKey("expected <name>+<id>+<key>".into()));
    };
    validate_name(name)?;
    let id = u32::from_str_radix(id, 16)
        .map_err(|_| CheckpointError::BadKey("key id is not hex".into()))?;
    let raw = B64
        .decode(key)
        .map_err(|_| CheckpointError::BadKey("key is not base64".into()))?;
    match raw.split_first() {
        Some((&ALG_ED25519, key)) => Ok((name, id, key.to_vec())),
        _ => Err(CheckpointError::BadKey("not an Ed25519 key".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(size: u64) -> Checkpoint {
        Checkpoint {
            origin: "annal.test/log".into(),
            size,
            root: *blake3::hash(b"x").as_bytes(),
        }
    }

    #[test]
    fn sign_then_open_round_trips_and_keys_reparse() {
        let signer = NoteSigner::generate("annal.test/log").unwrap();
        let note = signer.sign(&cp(7));
        assert!(note.starts_with("annal.test/log\n7\n"));
        let verifier = NoteVerifier::from_text(&signer.verifier().to_text()).unwrap();
        assert_eq!(verifier.open(&note).unwrap(), cp(7));
        let again = NoteSigner::from_text(&signer.to_text()).unwrap();
        assert_eq!(
            again.sign(&cp(7)),
            note,
            "Ed25519 signatures are deterministic"
        );
    }

    #[test]
    fn a_note_signed_by_two_keys_opens_with_either() {
        let old = NoteSigner::generate("annal.test/log").unwrap();
        let new = NoteSigner::generate("annal.test/log").unwrap();
        let note = sign_note(&cp(9), &[&new, &old]);
        assert_eq!(
            note.lines().filter(|l| l.starts_with('\u{2014}')).count(),
            2
        );
        assert_eq!(old.verifier().open(&note).unwrap(), cp(9));
        assert_eq!(new.verifier().open(&note).unwrap(), cp(9));
        let stranger = NoteSigner::generate("annal.test/log").unwrap();
        assert_eq!(
            stranger.verifier().open(&note).unwrap_err(),
            CheckpointError::NoSignature("annal.test/log".into())
        );
    }

    #[test]
    fn tampered_body_or_other_key_is_refused() {
        let signer = NoteSigner::generate("annal.test/log").unwrap();
        let note = signer.sign(&cp(7));
        let forged = note.replacen("\n7\n", "\n8\n", 1);
        assert_eq!(
            signer.verifier().open(&forged).unwrap_err(),
            CheckpointError::BadSignature("annal.test/log".into())
        );
        let other = NoteSigner::generate("annal.test/log").unwrap();
        assert!(other.verifier().open(&note).is_err());
    }
}
