//! Rings: all-reduce (reduce-scatter then all-gather, `2(n-1)` steps),
//! all-gather and reduce-scatter (`n-1` steps), and broadcast and reduce as pipelined
//! chains.
//!
//! In step `s` rank `i` sends one block of its channel's share (`share / n`) to rank
//! `i+1`: the block it received from rank `i-1` in step `s-1`, reduced with its own
//! (reduce-scatter) or as it is (all-gather). Cut into pieces, piece `k` of a step
//! waits only for piece `k` of the step before.

use super::{pieces, Emit};

/// `steps` ring steps per channel; `shares[c]` is channel `c`'s share of the buffer.
pub(super) fn steps(e: &mut Emit<'_>, shares: &[u64], steps: usize, chunk: Option<u64>) {
    let n = e.n();
    for (c, &share) in shares.iter().enumerate() {
        let parts = pieces(share.div_ceil(n as u64), chunk);
        let mut prev: Vec<Vec<u32>> = Vec::new();
        for step in 0..steps {
            let cur: Vec<Vec<u32>> = (0..n)
                .map(|i| {
                    parts
                        .iter()
                        .enumerate()
                        .map(|(k, &len)| {
                            let deps: &[u32] =
                                if step == 0 { &[] } else { std::slice::from_ref(&prev[(i + n - 1) % n][k]) };
                            e.send(c as u32, i, (i + 1) % n, len, deps)
                        })
                        .collect()
                })
                .collect();
            prev = cur;
        }
    }
}

/// A pipelined chain over every rank in ring order, `first, first+1, ..., first-1`,
/// each channel's share cut into `chunk` pieces; a rank forwards piece `k` once it has
/// received piece `k`. NCCL's ring broadcast starts the chain at the root (each rank
/// forwards the root's data as it is); its ring reduce starts it just after the root so
/// that it ends there (each rank adds its own part of the piece before forwarding it).
pub(super) fn chain(e: &mut Emit<'_>, shares: &[u64], first: usize, chunk: u64) {
    let n = e.n();
    for (c, &share) in shares.iter().enumerate() {
        for len in pieces(share, Some(chunk)) {
            let mut prev: Option<u32> = None;
            for p in 0..n - 1 {
                let deps: Vec<u32> = prev.into_iter().collect();
                prev = Some(e.send(c as u32, (first + p) % n, (first + p + 1) % n, len, &deps));
            }
        }
    }
}
