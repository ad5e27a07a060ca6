//! What the store answers an auditor: proofs against signed checkpoints,
//! and the checkpoint key's rotation.
//!
//! Every proof is tied to a signed note for the tree size it proves
//! against, because a bare Merkle path does not bind its size (see
//! [`crate::proof`]). The latest checkpoint is the one stored with the last
//! commit; a proof against an older size gets a note signed now over the
//! root the stored nodes give for it, which is the same statement a
//! checkpoint at that size made then.

use std::time::Duration;

use annal_schemas::data::LedgerKeyRotated;
use annal_schemas::{Envelope, EventType, Timestamp, SCHEMA_V1};

use crate::checkpoint::{Checkpoint, NoteSigner, NoteVerifier};
use crate::merkle::{self, Hash};
use crate::proof::{self, ConsistencyProof, InclusionProof, ProofError};
use crate::{keys, Store, StoreError};

/// What `annal key rotate` did.
#[derive(Clone, Debug)]
pub struct KeyRotation {
    /// The key that signed until now (verifier-key text).
    pub previous_key: String,
    /// The key that signs from now on.
    pub next_key: String,
    /// Until when checkpoints carry the previous key's signature too.
    pub previous_valid_until: Timestamp,
    /// Log index of the `ledger.key.rotated` event that records it.
    pub index: u64,
}

impl Store {
    /// Root of the tree of the first `size` committed entries.
    pub fn root_at(&self, size: u64) -> Result<Hash, StoreError> {
        self.check_size(size)?;
        if size == 0 {
            return Ok(merkle::empty_root());
        }
        let tree = self.tree_files().reader()?;
        merkle::root_at(size, &mut |id| tree.read(id))
    }

    /// The audit path of entry `index` in the tree of `size` entries.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<InclusionProof, StoreError> {
        self.check_size(size)?;
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size }.into());
        }
        let tree = self.tree_files().reader()?;
        proof::inclusion(index, size, &mut |id| tree.read(id))
    }

    /// The proof that the tree of `from` entries is a prefix of the tree
    /// of `to` entries.
    pub fn consistency_proof(&self, from: u64, to: u64) -> Result<ConsistencyProof, StoreError> {
        self.check_size(to)?;
        if from > to {
            return Err(ProofError::SizesOutOfOrder { from, to }.into());
        }
        if from == 0 || from == to {
            return Ok(ConsistencyProof {
                from,
                to,
                path: Vec::new(),
            });
        }
        let tree = self.tree_files().reader()?;
        proof::consistency(from, to, &mut |id| tree.read(id))
    }

    /// A signed checkpoint for the tree of `size` entries: the stored one
    /// when it is for that size, else one signed now (`None` when this copy
    /// of the ledger has no signing key, e.g. an auditor's read-only copy).
    pub fn checkpoint_at(&self, size: u64) -> Result<Option<String>, StoreError> {
        self.check_size(size)?;
        if let Some(note) = self.checkpoint() {
            if Checkpoint::parse_unverified(&note).is_ok_and(|cp| cp.size == size) {
                return Ok(Some(note));
            }
        }
        let root = self.root_at(size)?;
        let w = self.lock();
        if w.signer_present() {
            let cp = Checkpoint {
                origin: String::new(),
                size,
                root,
            };
            w.sign(&cp, Timestamp::now()).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Starts a new checkpoint key. Until `now + window` checkpoints carry
    /// both the new and the old key's signature, so auditors who hold only
    /// the old key keep verifying while they fetch the new one; the change
    /// and the old key's validity end are appended to the log as a
    /// `ledger.key.rotated` event, itself signed by both.
    pub fn rotate_key(&self, window: Duration) -> Result<KeyRotation, StoreError> {
        let ((origin, previous, next), until) = {
            let mut w = self.lock();
            if let Some(reason) = w.refused() {
                return Err(StoreError::WritesRefused(reason));
            }
            let Some(previous) = w.take_signer() else {
                return Err(StoreError::WritesRefused(format!(
                    "no signing key at {}",
                    self.data_dir().signing_key().display()
                )));
            };
            let next = match NoteSigner::generate(previous.name()) {
                Ok(next) => next,
                Err(e) => {
                    let path = self.data_dir().signing_key();
                    w.set_signer(previous, None);
                    return Err(StoreError::Key {
                        path,
                        reason: e.to_string(),
                    });
                }
            };
            let micros = i64::try_from(window.as_micros()).unwrap_or(i64::MAX);
            let until =
                Timestamp::from_unix_micros(Timestamp::now().unix_micros().saturating_add(micros))
                    .unwrap_or_else(Timestamp::now);
            if let Err(e) = keys::rotate(self.data_dir(), &previous, until, &next) {
                w.set_signer(previous, None);
                return Err(e);
            }
            let texts = (
                previous.name().to_string(),
                previous.verifier().to_text(),
                next.verifier().to_text(),
            );
            w.set_signer(next, Some((previous, until)));
            (texts, until)
        };
        let event = Envelope {
            schema: SCHEMA_V1.to_string(),
            id: format!("ledger.key.rotated:{previous}:{next}"),
            event_type: EventType::LedgerKeyRotated,
            time: Timestamp::now(),
            cluster: None,
            source: Some("annal key rotate".into()),
            actor: None,
            data: serde_json::to_value(LedgerKeyRotated {
                origin,
                previous_key: previous.clone(),
                next_key: next.clone(),
                previous_valid_until: until,
            })
            .map_err(|e| StoreError::Encode {
                index: self.size(),
                source: e,
            })?,
        };
        let outcome = self.append(vec![event])?;
        Ok(KeyRotation {
            previous_key: previous,
            next_key: next,
            previous_valid_until: until,
            index: outcome.size - 1,
        })
    }

    /// Keys an auditor holding `trusted` can accept: `trusted`, and every
    /// key a `ledger.key.rotated` event in the log hands over to from a key
    /// already accepted.
    pub fn keys_trusted_from(
        &self,
        trusted: &NoteVerifier,
    ) -> Result<Vec<NoteVerifier>, StoreError> {
        let mut keys = vec![trusted.clone()];
        let rotations = self.scan(
            crate::ScanKey::Type(EventType::LedgerKeyRotated.as_str()),
            None,
            None,
        );
        let mut texts = vec![trusted.to_text()];
        for entry in rotations {
            let entry = entry?;
            let Ok(r) = serde_json::from_value::<LedgerKeyRotated>(entry.event.data) else {
                continue;
            };
            if texts.contains(&r.previous_key) && !texts.contains(&r.next_key) {
                if let Ok(k) = NoteVerifier::from_text(&r.next_key) {
                    texts.push(r.next_key);
                    keys.push(k);
                }
            }
        }
        Ok(keys)
    }

    /// After a rotation, the previous key (verifier-key text) and the end
    /// of its validity.
    pub fn previous_key(&self) -> Option<(String, Timestamp)> {
        self.lock()
            .co_signer()
            .map(|(signer, until)| (signer.verifier().to_text(), *until))
    }

    fn check_size(&self, size: u64) -> Result<(), StoreError> {
        let committed = self.size();
        if size > committed {
            return Err(ProofError::BeyondLog {
                asked: size,
                committed,
            }
            .into());
        }
        Ok(())
    }
}
