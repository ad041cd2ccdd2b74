//! All-to-all (every pair at once) and the dissemination barrier.

use super::{split, Emit, BARRIER_BYTES};

/// Every rank sends `sizes[i * n + j]` bytes to every other rank `j` at once, each
/// pair's bytes split over the channels (a pair whose share of a channel is empty does
/// not use it).
pub(super) fn all_to_all(e: &mut Emit<'_>, sizes: &[u64]) {
    let n = e.n();
    let channels = e.channels as u64;
    for c in 0..channels {
        for s in 0..n {
            for d in 0..n {
                let len = split(sizes[s * n + d], channels)[c as usize];
                if s != d && len > 0 {
                    e.send(c as u32, s, d, len, &[]);
                }
            }
        }
    }
}

/// The dissemination barrier: in round `k` rank `i` signals rank `i + 2^k` once it
/// heard from every rank that signalled it in the rounds before; after `ceil(log2 n)`
/// rounds every rank has heard, directly or not, from every other.
pub(super) fn dissemination(e: &mut Emit<'_>) {
    let n = e.n();
    let mut heard: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut dist = 1;
    while dist < n {
        let sent: Vec<u32> = (0..n).map(|i| e.send(0, i, (i + dist) % n, BARRIER_BYTES, &heard[i])).collect();
        for (i, m) in sent.into_iter().enumerate() {
            heard[(i + dist) % n].push(m);
        }
        dist *= 2;
    }
}
