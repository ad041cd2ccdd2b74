//! All-to-all (every pair at once), gather and scatter (every rank with the root at
//! once, as nccl-tests runs them) and the dissemination barrier.

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

/// Gather: every rank but `root` sends its part of the root's `size`-byte buffer
/// (rank `i`'s part is the `i`-th of `n` near-equal parts) to the root at once, each
/// part split over the channels. The root's own part stays where it is.
pub(super) fn gather(e: &mut Emit<'_>, size: u64, root: usize) {
    with_root(e, size, root, |e, c, rank, len| {
        e.send(c, rank, root, len, &[]);
    });
}

/// Scatter: the root sends every other rank its part of its `size`-byte buffer (the
/// parts as for [`gather`]) at once, each part split over the channels.
pub(super) fn scatter(e: &mut Emit<'_>, size: u64, root: usize) {
    with_root(e, size, root, |e, c, rank, len| {
        e.send(c, root, rank, len, &[]);
    });
}

/// Calls `each(e, channel, rank, bytes)` for every channel and every rank but `root`
/// with that rank's share of its part of `size` on that channel.
fn with_root(e: &mut Emit<'_>, size: u64, root: usize, mut each: impl FnMut(&mut Emit<'_>, u32, usize, u64)) {
    let n = e.n();
    let channels = e.channels as u64;
    let parts = split(size, n as u64);
    for c in 0..channels {
        for (rank, &part) in parts.iter().enumerate() {
            let len = split(part, channels)[c as usize];
            if rank != root && len > 0 {
                each(e, c as u32, rank, len);
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
