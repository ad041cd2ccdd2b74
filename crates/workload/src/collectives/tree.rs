//! NCCL's double binary tree all-reduce.
//!
//! Two binary trees over the ranks, each carrying half of every channel's share: in
//! the first, rank `r`'s parent comes from the lowest set bit of `r` (root 0, with one
//! child); the second is the first mirrored (`n - 1 - r`) for an even number of ranks
//! and shifted by one for an odd number, so that every rank is an inner node in at
//! most one tree and the trees' links carry the data twice over instead of once through
//! a single root. In each tree a piece is reduced up (a rank sends piece `k` to its
//! parent once piece `k` arrived from all its children) and broadcast down (the root
//! sends it once reduced; a rank forwards it once its parent's arrived): about
//! `2 log2 n` hops of latency instead of a ring's `2(n-1)`, at the price of the root's
//! and inner ranks' links carrying more.

use super::{pieces, Emit};

/// Parent of `rank` in NCCL's binary tree over `n` ranks (`None` for the root, 0).
pub(crate) fn btree_parent(n: usize, rank: usize) -> Option<usize> {
    if rank == 0 {
        return None;
    }
    let mut bit = 1;
    while bit < n && bit & rank == 0 {
        bit <<= 1;
    }
    let up = (rank ^ bit) | (bit << 1);
    Some(if up >= n { rank ^ bit } else { up })
}

/// The parents of every rank in the two trees of the double binary tree.
pub(crate) fn dtree_parents(n: usize) -> [Vec<Option<usize>>; 2] {
    let first: Vec<Option<usize>> = (0..n).map(|r| btree_parent(n, r)).collect();
    let second = (0..n)
        .map(|r| {
            if n % 2 == 1 {
                btree_parent(n, (r + n - 1) % n).map(|u| (u + 1) % n)
            } else {
                btree_parent(n, n - 1 - r).map(|u| n - 1 - u)
            }
        })
        .collect();
    [first, second]
}

/// Ranks in order of depth (root first) and each rank's children.
fn shape(parents: &[Option<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let n = parents.len();
    let mut children = vec![Vec::new(); n];
    for (r, p) in parents.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(r);
        }
    }
    let root = parents.iter().position(|p| p.is_none()).expect("a tree has a root");
    let mut order = vec![root];
    let mut i = 0;
    while i < order.len() {
        order.extend(children[order[i]].iter().copied());
        i += 1;
    }
    debug_assert_eq!(order.len(), n, "every rank is in the tree");
    (order, children)
}

/// Depth (links from the root to the deepest leaf) of the deeper of the two trees.
pub(crate) fn depth(n: usize) -> u64 {
    dtree_parents(n)
        .iter()
        .map(|parents| {
            (0..n)
                .map(|mut r| {
                    let mut d = 0;
                    while let Some(p) = parents[r] {
                        r = p;
                        d += 1;
                    }
                    d
                })
                .max()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// NCCL's tree piece when none is given: its 512 KiB step, halved (not below 32 KiB)
/// while a tree's `len` bytes make fewer than 8 pieces per level of depth, so that a
/// mid-sized all-reduce still fills the tree's pipeline.
pub(crate) fn auto_chunk(len: u64, depth: u64) -> u64 {
    let mut chunk = super::DEFAULT_CHUNK;
    while len / chunk < 8 * depth && chunk > 32 * 1024 {
        chunk /= 2;
    }
    chunk
}

/// All-reduce over both trees of every channel, pieces of at most `chunk` bytes
/// (`None`: [`auto_chunk`]).
pub(super) fn all_reduce(e: &mut Emit<'_>, shares: &[u64], chunk: Option<u64>) {
    let n = e.n();
    let trees = dtree_parents(n);
    let deep = depth(n);
    let shapes: Vec<(Vec<usize>, Vec<Vec<usize>>)> = trees.iter().map(|p| shape(p)).collect();
    for (c, &share) in shares.iter().enumerate() {
        for (t, half) in super::split(share, 2).into_iter().enumerate() {
            let chunk = chunk.unwrap_or_else(|| auto_chunk(half, deep));
            let parents = &trees[t];
            let (order, children) = &shapes[t];
            let lane = 2 * c as u32 + t as u32;
            for len in pieces(half, Some(chunk)) {
                // Up, leaves first: each rank's reduced piece to its parent.
                let mut up = vec![u32::MAX; n];
                for &v in order.iter().rev() {
                    if let Some(p) = parents[v] {
                        let deps: Vec<u32> = children[v].iter().map(|&ch| up[ch]).collect();
                        up[v] = e.send_lane(c as u32, lane, v, p, len, &deps);
                    }
                }
                // Down, root first: the result to the children.
                let mut down = vec![u32::MAX; n];
                for &v in order {
                    let deps: Vec<u32> = match parents[v] {
                        None => children[v].iter().map(|&ch| up[ch]).collect(),
                        Some(_) => vec![down[v]],
                    };
                    for &ch in &children[v] {
                        down[ch] = e.send_lane(c as u32, lane, v, ch, len, &deps);
                    }
                }
            }
        }
    }
}
