//! Proofs built from the node store against the naive RFC 6962 definitions
//! (computed from the leaves themselves), and every single mutation of a
//! proof, a root, a size or a signed checkpoint rejected.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;
use crate::checkpoint::NoteSigner;
use crate::merkle::{reference, Frontier};

/// The naive definitions of RFC 6962 §2.1, straight from the leaves.
mod naive {
    use super::*;

    fn split(n: usize) -> usize {
        let mut k = 1;
        while k * 2 < n {
            k *= 2;
        }
        k
    }

    pub fn path(m: usize, leaves: &[Vec<u8>]) -> Vec<Hash> {
        let n = leaves.len();
        if n <= 1 {
            return vec![];
        }
        let k = split(n);
        if m < k {
            let mut p = path(m, &leaves[..k]);
            p.push(reference::root(&leaves[k..]));
            p
        } else {
            let mut p = path(m - k, &leaves[k..]);
            p.push(reference::root(&leaves[..k]));
            p
        }
    }

    pub fn proof(m: usize, leaves: &[Vec<u8>]) -> Vec<Hash> {
        if m == 0 || m == leaves.len() {
            return vec![];
        }
        subproof(m, leaves, true)
    }

    fn subproof(m: usize, leaves: &[Vec<u8>], complete: bool) -> Vec<Hash> {
        let n = leaves.len();
        if m == n {
            return if complete {
                vec![]
            } else {
                vec![reference::root(leaves)]
            };
        }
        let k = split(n);
        if m <= k {
            let mut p = subproof(m, &leaves[..k], complete);
            p.push(reference::root(&leaves[k..]));
            p
        } else {
            let mut p = subproof(m - k, &leaves[k..], false);
            p.push(reference::root(&leaves[..k]));
            p
        }
    }
}

/// A tree as the store keeps it: every complete node, by id.
struct Tree {
    leaves: Vec<Vec<u8>>,
    nodes: HashMap<NodeId, Hash>,
}

impl Tree {
    fn new(n: usize, seed: u64) -> Tree {
        let leaves: Vec<Vec<u8>> = (0..n).map(|i| format!("{seed}:{i}").into_bytes()).collect();
        let mut nodes = HashMap::new();
        let mut f = Frontier::new();
        for l in &leaves {
            f.push(leaf_hash(l), |id, h| {
                nodes.insert(id, *h);
            });
        }
        Tree { leaves, nodes }
    }

    fn node(&self) -> impl FnMut(NodeId) -> Result<Hash, ProofError> + '_ {
        |id| Ok(self.nodes[&id])
    }

    fn root(&self, size: usize) -> Hash {
        reference::root(&self.leaves[..size])
    }
}

#[test]
fn every_proof_of_every_small_tree_matches_the_rfc_definitions() {
    for n in 1..=70usize {
        let t = Tree::new(n, 7);
        for i in 0..n {
            let p = inclusion(i as u64, n as u64, &mut t.node()).unwrap();
            assert_eq!(p.path, naive::path(i, &t.leaves), "path of {i} in {n}");
            verify_inclusion(
                &leaf_hash(&t.leaves[i]),
                i as u64,
                n as u64,
                &p.path,
                &t.root(n),
            )
            .unwrap_or_else(|e| panic!("{i} in {n}: {e}"));
        }
        for m in 0..=n {
            let p = consistency(m as u64, n as u64, &mut t.node()).unwrap();
            assert_eq!(p.path, naive::proof(m, &t.leaves), "proof {m} -> {n}");
            verify_consistency(m as u64, n as u64, &t.root(m), &t.root(n), &p.path)
                .unwrap_or_else(|e| panic!("{m} -> {n}: {e}"));
        }
    }
}

#[test]
fn impossible_requests_are_errors() {
    let t = Tree::new(5, 1);
    assert_eq!(
        inclusion(5, 5, &mut t.node()).unwrap_err(),
        ProofError::IndexOutOfRange { index: 5, size: 5 }
    );
    assert_eq!(
        consistency(6, 5, &mut t.node()).unwrap_err(),
        ProofError::SizesOutOfOrder { from: 6, to: 5 }
    );
    // Equal sizes prove only equal roots; an empty old tree only the empty root.
    assert!(verify_consistency(5, 5, &t.root(5), &t.root(5), &[]).is_ok());
    assert!(verify_consistency(5, 5, &t.root(4), &t.root(5), &[]).is_err());
    assert!(verify_consistency(0, 5, &t.root(1), &t.root(5), &[]).is_err());
    // An empty path for a real growth proves nothing (the immudb class).
    assert_eq!(
        verify_consistency(3, 5, &t.root(3), &t.root(5), &[]),
        Err(ProofError::PathTooShort)
    );
}

/// One bit of one byte flipped.
fn flip(bytes: &mut [u8], bit: usize) {
    let bit = bit % (bytes.len() * 8);
    bytes[bit / 8] ^= 1 << (bit % 8);
}

fn signer() -> NoteSigner {
    NoteSigner::generate("annal.test/proofs").unwrap()
}

fn note(s: &NoteSigner, t: &Tree, size: usize) -> String {
    s.sign(&Checkpoint {
        origin: s.name().to_string(),
        size: size as u64,
        root: t.root(size),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_proofs_verify_against_the_reference_tree(
        n in 1usize..3000,
        seed in any::<u64>(),
        i in any::<prop::sample::Index>(),
        m in any::<prop::sample::Index>(),
    ) {
        let t = Tree::new(n, seed);
        let i = i.index(n);
        let m = m.index(n + 1);
        let p = inclusion(i as u64, n as u64, &mut t.node()).unwrap();
        prop_assert_eq!(&p.path, &naive::path(i, &t.leaves));
        prop_assert!(verify_inclusion(&leaf_hash(&t.leaves[i]), i as u64, n as u64, &p.path, &t.root(n)).is_ok());
        let c = consistency(m as u64, n as u64, &mut t.node()).unwrap();
        prop_assert_eq!(&c.path, &naive::proof(m, &t.leaves));
        prop_assert!(verify_consistency(m as u64, n as u64, &t.root(m), &t.root(n), &c.path).is_ok());
    }

    #[test]
    fn every_mutation_of_an_inclusion_proof_or_its_checkpoint_is_rejected(
        n in 1usize..600,
        seed in any::<u64>(),
        i in any::<prop::sample::Index>(),
        bits in proptest::collection::vec(any::<usize>(), 12),
        other in any::<u64>(),
    ) {
        let t = Tree::new(n, seed);
        let i = i.index(n);
        let s = signer();
        let keys = [s.verifier()];
        let signed = note(&s, &t, n);
        let proof = inclusion(i as u64, n as u64, &mut t.node()).unwrap();
        let leaf = t.leaves[i].clone();
        prop_assert!(verify_inclusion_signed(&keys, &signed, &leaf, &proof).is_ok());

        let rejected = |note: &str, leaf: &[u8], p: &InclusionProof| {
            verify_inclusion_signed(&keys, note, leaf, p).is_err()
        };
        // Each path hash: one bit flipped, and replaced by another hash.
        for (k, bit) in (0..proof.path.len()).zip(bits.iter().cycle()) {
            let mut p = proof.clone();
            flip(&mut p.path[k], *bit);
            prop_assert!(rejected(&signed, &leaf, &p), "bit {bit} of path[{k}]");
            let mut p = proof.clone();
            p.path[k] = *blake3::hash(&other.to_le_bytes()).as_bytes();
            prop_assert!(rejected(&signed, &leaf, &p), "path[{k}] replaced");
        }
        // A hash removed, added or two swapped.
        if !proof.path.is_empty() {
            let mut p = proof.clone();
            p.path.pop();
            prop_assert!(rejected(&signed, &leaf, &p));
        }
        let mut p = proof.clone();
        p.path.push(t.root(n));
        prop_assert!(rejected(&signed, &leaf, &p));
        // The leaf bytes.
        for bit in &bits {
            let mut l = leaf.clone();
            flip(&mut l, *bit);
            prop_assert!(rejected(&signed, &l, &proof), "leaf bit {bit}");
        }
        // The index and the size, moved anywhere else.
        for delta in [1u64, 2, 1 + other % n as u64] {
            let mut p = proof.clone();
            p.index = (p.index + delta) % (n as u64 + 1);
            if p.index != proof.index {
                prop_assert!(rejected(&signed, &leaf, &p), "index {}", p.index);
            }
            let mut p = proof.clone();
            p.size += delta;
            prop_assert!(rejected(&signed, &leaf, &p), "size {}", p.size);
        }
        // The checkpoint: any bit of its text, and an honest note for
        // another size or root.
        for bit in &bits {
            let mut text = signed.clone().into_bytes();
            flip(&mut text, *bit);
            let text = String::from_utf8_lossy(&text);
            prop_assert!(rejected(&text, &leaf, &proof), "checkpoint bit {bit}");
        }
        let mut root = t.root(n);
        flip(&mut root, bits[0]);
        let forged = s.sign(&Checkpoint { origin: s.name().into(), size: n as u64, root });
        prop_assert!(rejected(&forged, &leaf, &proof), "root bit {}", bits[0]);
        // The same note checked with another key.
        let stranger = NoteSigner::generate(s.name()).unwrap();
        prop_assert!(verify_inclusion_signed(&[stranger.verifier()], &signed, &leaf, &proof).is_err());
    }

    #[test]
    fn every_mutation_of_a_consistency_proof_or_its_checkpoints_is_rejected(
        n in 2usize..600,
        seed in any::<u64>(),
        m in any::<prop::sample::Index>(),
        bits in proptest::collection::vec(any::<usize>(), 12),
        other in any::<u64>(),
    ) {
        let t = Tree::new(n, seed);
        let m = 1 + m.index(n - 1); // 1..n: a real growth
        let s = signer();
        let keys = [s.verifier()];
        let (old, new) = (note(&s, &t, m), note(&s, &t, n));
        let proof = consistency(m as u64, n as u64, &mut t.node()).unwrap();
        prop_assert!(verify_consistency_signed(&keys, &old, &new, &proof).is_ok());

        let rejected = |old: &str, new: &str, p: &ConsistencyProof| {
            verify_consistency_signed(&keys, old, new, p).is_err()
        };
        for (k, bit) in (0..proof.path.len()).zip(bits.iter().cycle()) {
            let mut p = proof.clone();
            flip(&mut p.path[k], *bit);
            prop_assert!(rejected(&old, &new, &p), "bit {bit} of path[{k}]");
            let mut p = proof.clone();
            p.path[k] = *blake3::hash(&other.to_le_bytes()).as_bytes();
            prop_assert!(rejected(&old, &new, &p), "path[{k}] replaced");
        }
        let mut p = proof.clone();
        p.path.pop();
        prop_assert!(rejected(&old, &new, &p), "a hash dropped");
        let mut p = proof.clone();
        p.path.push(t.root(n));
        prop_assert!(rejected(&old, &new, &p), "a hash added");
        if proof.path.len() >= 2 && proof.path[0] != proof.path[1] {
            let mut p = proof.clone();
            p.path.swap(0, 1);
            prop_assert!(rejected(&old, &new, &p), "two hashes swapped");
        }
        for delta in [1u64, 2, 1 + other % n as u64] {
            let mut p = proof.clone();
            p.from += delta;
            prop_assert!(rejected(&old, &new, &p), "from {}", p.from);
            let mut p = proof.clone();
            p.to += delta;
            prop_assert!(rejected(&old, &new, &p), "to {}", p.to);
        }
        for bit in &bits {
            for which in [0, 1] {
                let mut text = if which == 0 { old.clone() } else { new.clone() }.into_bytes();
                flip(&mut text, *bit);
                let text = String::from_utf8_lossy(&text).into_owned();
                let (o, nw) = if which == 0 { (text.as_str(), new.as_str()) } else { (old.as_str(), text.as_str()) };
                prop_assert!(rejected(o, nw, &proof), "bit {bit} of checkpoint {which}");
            }
        }
        // Honestly signed checkpoints of a forked history: the old root or
        // the new root one bit off (what an operator who rewrote the log and
        // re-signed with the real key would present).
        for which in [m, n] {
            let mut root = t.root(which);
            flip(&mut root, bits[1]);
            let forged = s.sign(&Checkpoint { origin: s.name().into(), size: which as u64, root });
            let (o, nw) = if which == m { (forged.as_str(), new.as_str()) } else { (old.as_str(), forged.as_str()) };
            prop_assert!(rejected(o, nw, &proof), "forked root at {which}");
        }
        // The old and new checkpoints given the other way round.
        prop_assert!(rejected(&new, &old, &proof));
    }
}
