//! RFC 6962 / RFC 9162 Merkle tree hashing with BLAKE3.
//!
//! Leaf hash = BLAKE3(0x00 ‖ leaf bytes), node hash = BLAKE3(0x01 ‖ left ‖
//! right), the empty tree hashes to BLAKE3(""). A tree of `n` leaves splits at
//! the largest power of two below `n`, so every tree is a sequence of perfect
//! subtrees of decreasing size. The store keeps every *complete* subtree hash
//! as a node `(level, index)`: level 0 holds leaf hashes, and the node at
//! `(l, i)` covers leaves `i·2^l .. (i+1)·2^l`. Complete nodes never change,
//! which makes the node store append-only and lets any past root be read back
//! with O(log n) lookups ([`root_at`]).

/// A BLAKE3 digest.
pub type Hash = [u8; 32];

/// Hash of one leaf's bytes.
pub fn leaf_hash(bytes: &[u8]) -> Hash {
    let mut h = blake3::Hasher::new();
    h.update(&[0x00]);
    h.update(bytes);
    *h.finalize().as_bytes()
}

/// Hash of an interior node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = blake3::Hasher::new();
    h.update(&[0x01]);
    h.update(left);
    h.update(right);
    *h.finalize().as_bytes()
}

/// A hash as 64 lowercase hex digits (how the files beside the log name
/// roots).
pub(crate) fn to_hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash that [`to_hex`] wrote (`None`: not 64 hex digits).
pub(crate) fn from_hex(text: &str) -> Option<Hash> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Root of the empty tree.
pub fn empty_root() -> Hash {
    *blake3::hash(b"").as_bytes()
}

/// A complete subtree: `level` = log2 of its leaf count, `index` = its
/// position among subtrees of that level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId {
    /// log2 of the number of leaves below.
    pub level: u8,
    /// Position among nodes of this level.
    pub index: u64,
}

impl NodeId {
    /// First leaf covered by this node.
    pub fn first_leaf(&self) -> u64 {
        self.index << self.level
    }
}

/// The right edge of a growing tree: the perfect subtrees it decomposes into,
/// largest first. Appending is amortised O(1); memory is O(log n).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// (level, hash) of each perfect subtree, levels strictly decreasing.
    peaks: Vec<(u8, Hash)>,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Frontier::default()
    }

    /// Rebuilds the frontier of a tree of `size` leaves from its stored nodes.
    pub fn load<E>(
        size: u64,
        nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>,
    ) -> Result<Self, E> {
        let peaks = peak_ids(size)
            .into_iter()
            .map(|id| nodes(id).map(|h| (id.level, h)))
            .collect::<Result<_, _>>()?;
        Ok(Frontier { size, peaks })
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf hash; calls `completed` for every node it completes,
    /// the leaf itself first.
    pub fn push(&mut self, leaf: Hash, mut completed: impl FnMut(NodeId, &Hash)) {
        completed(
            NodeId {
                level: 0,
                index: self.size,
            },
            &leaf,
        );
        self.push_subtree(0, leaf, completed);
    }

    /// Appends a perfect subtree of `2^level` leaves with root `hash`,
    /// whose own nodes the caller has dealt with (verify checks the nodes
    /// under a thousand leaves on another thread); calls `completed` for
    /// every node above it that it completes. The size must be a multiple
    /// of `2^level`, as it is where such a subtree can start.
    pub(crate) fn push_subtree(
        &mut self,
        level: u8,
        hash: Hash,
        mut completed: impl FnMut(NodeId, &Hash),
    ) {
        debug_assert_eq!(self.size % (1u64 << level), 0, "an unaligned subtree");
        let last = self.size + (1u64 << level) - 1;
        self.peaks.push((level, hash));
        while self.peaks.len() >= 2 {
            let (right_level, right) = self.peaks[self.peaks.len() - 1];
            let (left_level, left) = self.peaks[self.peaks.len() - 2];
            if left_level != right_level {
                break;
            }
            self.peaks.truncate(self.peaks.len() - 2);
            let level = left_level + 1;
            let hash = node_hash(&left, &right);
            completed(
                NodeId {
                    level,
                    index: last >> level,
                },
                &hash,
            );
            self.peaks.push((level, hash));
        }
        self.size += 1u64 << level;
    }

    /// The root of a frontier that is one perfect subtree (`None`
    /// otherwise).
    pub(crate) fn perfect_root(&self) -> Option<Hash> {
        match self.peaks.as_slice() {
            [(_, hash)] => Some(*hash),
            _ => None,
        }
    }

    /// The tree root.
    pub fn root(&self) -> Hash {
        fold_peaks(self.peaks.iter().map(|(_, h)| *h))
    }
}

/// The perfect subtrees that leaves `from..to` decompose into, left to
/// right, each as large as its start allows (a subtree of `2^l` leaves
/// starts at a multiple of `2^l`): the pieces a range of leaves can be
/// hashed in on its own and then pushed with [`Frontier::push_subtree`].
pub(crate) fn aligned_subtrees(from: u64, to: u64) -> Vec<NodeId> {
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let mut level = at.trailing_zeros().min(63) as u8;
        while (1u64 << level) > to - at {
            level -= 1;
        }
        out.push(NodeId {
            level,
            index: at >> level,
        });
        at += 1u64 << level;
    }
    out
}

/// The perfect subtrees a tree of `size` leaves decomposes into, left to right.
pub fn peak_ids(size: u64) -> Vec<NodeId> {
    let mut ids = Vec::new();
    let mut start = 0u64;
    for level in (0..64u8).rev() {
        let width = 1u64 << level;
        if size & width != 0 {
            ids.push(NodeId {
                level,
                index: start >> level,
            });
            start += width;
        }
    }
    ids
}

/// Root of the tree of the first `size` leaves, read from stored complete nodes.
pub fn root_at<E>(size: u64, nodes: &mut impl FnMut(NodeId) -> Result<Hash, E>) -> Result<Hash, E> {
    let peaks = peak_ids(size)
        .into_iter()
        .map(&mut *nodes)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(fold_peaks(peaks.into_iter()))
}

/// Combines perfect subtrees (largest first) into a root: RFC 6962 hashes the
/// right-most pair first, so fold from the right.
fn fold_peaks(peaks: impl DoubleEndedIterator<Item = Hash>) -> Hash {
    let mut peaks = peaks.rev();
    let Some(mut acc) = peaks.next() else {
        return empty_root();
    };
    for left in peaks {
        acc = node_hash(&left, &acc);
    }
    acc
}

#[cfg(test)]
pub(crate) mod reference {
    //! The naive recursive definition from RFC 6962 §2.1, for cross-checks only.
    use super::*;

    pub fn root(leaves: &[Vec<u8>]) -> Hash {
        match leaves.len() {
            0 => empty_root(),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = largest_power_of_two_below(n);
                node_hash(&root(&leaves[..k]), &root(&leaves[k..]))
            }
        }
    }

    fn largest_power_of_two_below(n: usize) -> usize {
        let mut k = 1;
        while k * 2 < n {
            k *= 2;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    fn leaves(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf-{i}").into_bytes()).collect()
    }

    /// Builds a frontier over `data`, returning it and every completed node.
    fn build(data: &[Vec<u8>]) -> (Frontier, HashMap<NodeId, Hash>) {
        let mut f = Frontier::new();
        let mut nodes = HashMap::new();
        for d in data {
            f.push(leaf_hash(d), |id, h| {
                assert!(
                    nodes.insert(id, *h).is_none(),
                    "node {id:?} completed twice"
                );
            });
        }
        (f, nodes)
    }

    #[test]
    fn every_small_tree_matches_the_reference() {
        for n in 0..=100 {
            let data = leaves(n);
            let (f, nodes) = build(&data);
            assert_eq!(f.root(), reference::root(&data), "size {n}");
            // Every past root is recoverable from the stored nodes.
            for m in 0..=n as u64 {
                let got = root_at(m, &mut |id| nodes.get(&id).copied().ok_or(id)).unwrap();
                assert_eq!(
                    got,
                    reference::root(&data[..m as usize]),
                    "root_at({m}) of {n}"
                );
            }
            // Reloading the frontier from stored nodes continues identically.
            let reloaded =
                Frontier::load(n as u64, &mut |id| nodes.get(&id).copied().ok_or(id)).unwrap();
            assert_eq!(reloaded, f);
        }
    }

    #[test]
    fn known_answers() {
        assert_eq!(empty_root(), *blake3::hash(b"").as_bytes());
        let one = leaf_hash(b"a");
        let mut pre = vec![0u8];
        pre.extend_from_slice(b"a");
        assert_eq!(one, *blake3::hash(&pre).as_bytes());
        let (f, _) = build(&[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        let ab = node_hash(&leaf_hash(b"a"), &leaf_hash(b"b"));
        assert_eq!(f.root(), node_hash(&ab, &leaf_hash(b"c")));
    }

    proptest! {
        #[test]
        fn root_equals_reference_for_random_sizes(n in 0usize..2000, seed in any::<u64>()) {
            let data: Vec<Vec<u8>> = (0..n).map(|i| format!("{seed}-{i}").into_bytes()).collect();
            let (f, _) = build(&data);
            prop_assert_eq!(f.root(), reference::root(&data));
        }

        /// Verify's checkers hash ranges of leaves on their own, as
        /// aligned subtrees, and push only their roots: the same nodes and
        /// root as pushing every leaf.
        #[test]
        fn pushing_aligned_subtrees_is_pushing_their_leaves(
            n in 0usize..3000,
            cuts in proptest::collection::vec(0usize..3000, 0..6),
        ) {
            let data = leaves(n);
            let (whole, whole_nodes) = build(&data);
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c <= n).collect();
            cuts.sort_unstable();
            let mut f = Frontier::new();
            let mut nodes = HashMap::new();
            let mut at = 0usize;
            for cut in cuts.into_iter().chain([n]) {
                for sub in aligned_subtrees(at as u64, cut as u64) {
                    let first = sub.first_leaf();
                    prop_assert_eq!(first % (1u64 << sub.level), 0);
                    let mut local = Frontier::new();
                    for d in &data[first as usize..(first + (1u64 << sub.level)) as usize] {
                        local.push(leaf_hash(d), |id, h| {
                            let id = NodeId { level: id.level, index: id.index + (first >> id.level) };
                            nodes.insert(id, *h);
                        });
                    }
                    let root = local.perfect_root().expect("a perfect subtree");
                    prop_assert_eq!(Some(&root), nodes.get(&sub));
                    f.push_subtree(sub.level, root, |id, h| { nodes.insert(id, *h); });
                }
                at = cut.max(at);
            }
            prop_assert_eq!(f.root(), whole.root());
            prop_assert_eq!(&f, &whole);
            prop_assert_eq!(nodes, whole_nodes);
        }

        #[test]
        fn reloading_between_batches_changes_nothing(
            n in 0usize..600,
            cuts in proptest::collection::vec(0usize..600, 0..8),
        ) {
            let data = leaves(n);
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c <= n).collect();
            cuts.sort_unstable();
            let mut nodes = HashMap::new();
            let mut f = Frontier::new();
            let mut at = 0;
            for cut in cuts.into_iter().chain([n]) {
                // A fresh process: reload the frontier from the node store.
                f = Frontier::load(at as u64, &mut |id| nodes.get(&id).copied().ok_or(id)).unwrap();
                for d in &data[at..cut] {
                    f.push(leaf_hash(d), |id, h| { nodes.insert(id, *h); });
                }
                at = cut.max(at);
            }
            prop_assert_eq!(f.root(), reference::root(&data));
        }
    }
}
