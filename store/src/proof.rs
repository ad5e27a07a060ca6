//! Inclusion and consistency proofs over the BLAKE3 tree of [`merkle`].
//!
//! Proofs are built with the recursive definitions of RFC 6962 §2.1.1
//! (`PATH`) and §2.1.2 (`SUBPROOF`), reading complete subtrees from the
//! node store, and checked with the iterative algorithms of RFC 9162
//! §2.1.3.2 and §2.1.4.2, which are what an auditor's own verifier
//! implements (`tools/verify_proof.py` is a line-for-line port).
//!
//! A bare proof does not bind its tree size: the path for leaf 4 of a
//! 7-leaf tree also "proves" leaf 4 of an 8-leaf tree with the same root.
//! The size is bound by the signed checkpoint the root comes from, so the
//! checks auditors should use are [`verify_inclusion_signed`] and
//! [`verify_consistency_signed`], which take the root and size from signed
//! notes and nowhere else.

use crate::checkpoint::{Checkpoint, CheckpointError, NoteVerifier};
use crate::merkle::{empty_root, leaf_hash, node_hash, Hash, NodeId};

/// The audit path of one leaf in a tree of `size` leaves, leaf side first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InclusionProof {
    /// The leaf's log index.
    pub index: u64,
    /// The tree size the path leads to the root of.
    pub size: u64,
    /// Sibling subtree hashes from the leaf up.
    pub path: Vec<Hash>,
}

/// The hashes proving that the tree of `from` leaves is a prefix of the
/// tree of `to` leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The older tree size.
    pub from: u64,
    /// The newer tree size.
    pub to: u64,
    /// Subtree hashes, deepest first.
    pub path: Vec<Hash>,
}

/// Why a proof cannot be built or does not verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProofError {
    /// The leaf index is not in the tree.
    #[error("index {index} is not in a tree of {size} entries")]
    IndexOutOfRange {
        /// The index asked for.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// A consistency proof from a larger tree to a smaller one.
    #[error("consistency from size {from} to size {to}: the first size is larger")]
    SizesOutOfOrder {
        /// The older size.
        from: u64,
        /// The newer size.
        to: u64,
    },
    /// A size past the committed log.
    #[error("size {asked} is past the log's {committed} committed entries")]
    BeyondLog {
        /// The size asked for.
        asked: u64,
        /// The committed size.
        committed: u64,
    },
    /// The path has hashes left over when the root is reached.
    #[error("the proof has more hashes than a tree of this size needs")]
    PathTooLong,
    /// The path ends before the root.
    #[error("the proof has fewer hashes than a tree of this size needs")]
    PathTooShort,
    /// The path leads to another root.
    #[error("the proof does not lead to the root")]
    RootMismatch,
    /// A consistency path that does not reproduce the older root.
    #[error("the proof does not reproduce the older root")]
    OldRootMismatch,
    /// The proof is for another tree size than the checkpoint it is checked against.
    #[error("the proof is for size {proof} but the checkpoint is for size {checkpoint}")]
    SizeMismatch {
        /// Size the proof claims.
        proof: u64,
        /// Size the signed checkpoint commits to.
        checkpoint: u64,
    },
    /// The checkpoint does not verify with any trusted key.
    #[error("checkpoint: {0}")]
    Checkpoint(CheckpointError),
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves, reading
/// complete subtrees from `nodes` (the store's node file, or a test's map).
pub fn inclusion<E: From<ProofError>>(
    index: u64,
    size: u64,
    nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
) -> Result<InclusionProof, E> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size }.into());
    }
    let mut path = Vec::new();
    audit_path(index, 0, size, nodes, &mut path)?;
    Ok(InclusionProof { index, size, path })
}

/// The consistency proof between the trees of `from` and `to` leaves.
/// Empty when `from` is 0 or equal to `to` (nothing to prove).
pub fn consistency<E: From<ProofError>>(
    from: u64,
    to: u64,
    nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
) -> Result<ConsistencyProof, E> {
    if from > to {
        return Err(ProofError::SizesOutOfOrder { from, to }.into());
    }
    let mut path = Vec::new();
    if from > 0 && from < to {
        subproof(from, 0, to, true, nodes, &mut path)?;
    }
    Ok(ConsistencyProof { from, to, path })
}

/// RFC 9162 §2.1.3.2: does `path` lead from the leaf hash at `index` to
/// `root` in a tree of `size` leaves?
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    path: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if snode == 0 {
            return Err(ProofError::PathTooLong);
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(ProofError::PathTooShort);
    }
    if r != *root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// RFC 9162 §2.1.4.2: is the tree of `from` leaves with root `old_root` a
/// prefix of the tree of `to` leaves with root `new_root`? Both roots are
/// recomputed from the path; a proof that reproduces only one fails.
pub fn verify_consistency(
    from: u64,
    to: u64,
    old_root: &Hash,
    new_root: &Hash,
    path: &[Hash],
) -> Result<(), ProofError> {
    if from > to {
        return Err(ProofError::SizesOutOfOrder { from, to });
    }
    if from == to || from == 0 {
        // Nothing to prove but the roots themselves.
        if !path.is_empty() {
            return Err(ProofError::PathTooLong);
        }
        let expected_old = if from == 0 { empty_root() } else { *new_root };
        return if *old_root == expected_old {
            Ok(())
        } else {
            Err(ProofError::OldRootMismatch)
        };
    }
    let Some((first, rest)) = path.split_first() else {
        return Err(ProofError::PathTooShort);
    };
    // A power-of-two old tree is itself a complete subtree of the new one:
    // its root starts the path.
    let (start, rest) = if from.is_power_of_two() {
        (old_root, path)
    } else {
        (first, rest)
    };
    let (mut fnode, mut snode) = (from - 1, to - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*start, *start);
    for c in rest {
        if snode == 0 {
            return Err(ProofError::PathTooLong);
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(ProofError::PathTooShort);
    }
    if fr != *old_root {
        return Err(ProofError::OldRootMismatch);
    }
    if sr != *new_root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// Checks that `leaf_bytes` is entry `proof.index` of the log whose signed
/// checkpoint is `note`: the note must verify with one of `keys`, commit to
/// `proof.size`, and the path must lead to its root.
pub fn verify_inclusion_signed(
    keys: &[NoteVerifier],
    note: &str,
    leaf_bytes: &[u8],
    proof: &InclusionProof,
) -> Result<Checkpoint, ProofError> {
    let cp = open_with_any(keys, note)?;
    if cp.size != proof.size {
        return Err(ProofError::SizeMismatch {
            proof: proof.size,
            checkpoint: cp.size,
        });
    }
    verify_inclusion(
        &leaf_hash(leaf_bytes),
        proof.index,
        proof.size,
        &proof.path,
        &cp.root,
    )?;
    Ok(cp)
}

/// Checks that the log of the signed checkpoint `old_note` is a prefix of
/// the log of `new_note` (both verified with one of `keys`).
pub fn verify_consistency_signed(
    keys: &[NoteVerifier],
    old_note: &str,
    new_note: &str,
    proof: &ConsistencyProof,
) -> Result<(Checkpoint, Checkpoint), ProofError> {
    let old = open_with_any(keys, old_note)?;
    let new = open_with_any(keys, new_note)?;
    for (claimed, cp) in [(proof.from, &old), (proof.to, &new)] {
        if claimed != cp.size {
            return Err(ProofError::SizeMismatch {
                proof: claimed,
                checkpoint: cp.size,
            });
        }
    }
    verify_consistency(proof.from, proof.to, &old.root, &new.root, &proof.path)?;
    Ok((old, new))
}

/// Opens a signed note with the first of `keys` that signed it.
pub fn open_with_any(keys: &[NoteVerifier], note: &str) -> Result<Checkpoint, ProofError> {
    let mut last = CheckpointError::NoSignature("no key given".into());
    for key in keys {
        match key.open(note) {
            Ok(cp) => return Ok(cp),
            Err(e) => last = e,
        }
    }
    Err(ProofError::Checkpoint(last))
}

/// RFC 6962 `PATH(m, D[start:end])`, appended to `out` leaf side first.
fn audit_path<E: From<ProofError>>(
    m: u64,
    start: u64,
    end: u64,
    nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
    out: &mut Vec<Hash>,
) -> Result<(), E> {
    let n = end - start;
    if n <= 1 {
        return Ok(());
    }
    let k = split(n);
    if m < k {
        audit_path(m, start, start + k, nodes, out)?;
        out.push(subtree(start + k, end, nodes)?);
    } else {
        audit_path(m - k, start + k, end, nodes, out)?;
        out.push(subtree(start, start + k, nodes)?);
    }
    Ok(())
}

/// RFC 6962 `SUBPROOF(m, D[start:end], complete)`.
fn subproof<E: From<ProofError>>(
    m: u64,
    start: u64,
    end: u64,
    complete: bool,
    nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
    out: &mut Vec<Hash>,
) -> Result<(), E> {
    let n = end - start;
    if m == n {
        if !complete {
            out.push(subtree(start, end, nodes)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(m, start, start + k, complete, nodes, out)?;
        out.push(subtree(start + k, end, nodes)?);
    } else {
        subproof(m - k, start + k, end, false, nodes, out)?;
        out.push(subtree(start, start + k, nodes)?);
    }
    Ok(())
}

/// `MTH(D[start:end])` from stored complete nodes. In the RFC recursion
/// every left part is a complete, aligned subtree (one stored node); only
/// the right edge is combined here, O(log n) reads in all.
fn subtree<E>(
    start: u64,
    end: u64,
    nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
) -> Result<Hash, E> {
    let n = end - start;
    if n == 0 {
        return Ok(empty_root());
    }
    if n.is_power_of_two() && start % n == 0 {
        let level = n.trailing_zeros() as u8;
        return nodes(NodeId {
            level,
            index: start >> level,
        });
    }
    let k = split(n);
    let left = subtree(start, start + k, nodes)?;
    let right = subtree(start + k, end, nodes)?;
    Ok(node_hash(&left, &right))
}

/// The largest power of two smaller than `n` (n ≥ 2): RFC 6962's split.
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

#[cfg(test)]
mod tests;
