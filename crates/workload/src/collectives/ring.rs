//! Rings: all-reduce (reduce-scatter then all-gather, `2(n-1)` steps),
//! all-gather and reduce-scatter (`n-1` steps), and broadcast as a pipelined chain.
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

/// Broadcast from rank `root` down the chain `root, root+1, ...` (ring order), each
/// channel's share cut into `chunk` pieces that move on as they arrive (NCCL's ring
/// broadcast).
pub(super) fn chain(e: &mut Emit<'_>, shares: &[u64], root: usize, chunk: u64) {
    let n = e.n();
    for (c, &share) in shares.iter().enumerate() {
        for len in pieces(share, Some(chunk)) {
            let mut prev: Option<u32> = None;
            for p in 0..n - 1 {
                let deps: Vec<u32> = prev.into_iter().collect();
                prev = Some(e.send(c as u32, (root + p) % n, (root + p + 1) % n, len, &deps));
            }
        }
    }
}
