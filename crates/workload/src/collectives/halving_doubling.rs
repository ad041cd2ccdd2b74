//! Halving-doubling (Rabenseifner's all-reduce; recursive halving and doubling).
//!
//! Over `p = 2^k` ranks, reduce-scatter by recursive halving: in step `s` rank `v`
//! exchanges half of what it still holds with the rank at distance `p / 2^(s+1)`
//! (`share / 2^(s+1)` bytes each way), so after `log2 p` steps it holds its `1/p` of
//! the sum; all-gather by recursive doubling retraces the steps from distance 1 with
//! doubling sizes. A step waits for everything the rank received before it (what it
//! sends combines all of it; the step before alone does not imply the others). With a
//! number of ranks `n` that is not a power of two, the first `2(n - p)` ranks pair up
//! first: each odd one hands its whole buffer to its even neighbour, sits out, and gets
//! the result back at the end (all-reduce only).

use super::Emit;

/// `log2` of the largest power of two not above `n`.
fn log2(n: usize) -> u32 {
    usize::BITS - 1 - n.leading_zeros()
}

/// All-reduce per channel: halving, doubling, and the pairing of extra ranks.
pub(super) fn all_reduce(e: &mut Emit<'_>, shares: &[u64]) {
    let n = e.n();
    let steps = log2(n);
    let p = 1usize << steps;
    let extra = n - p;
    // Active rank v on the real rank: the even one of each pair, then the rest.
    let real = |v: usize| if v < extra { 2 * v } else { v + extra };
    for (c, &share) in shares.iter().enumerate() {
        let c = c as u32;
        let mut got: Vec<Vec<u32>> = vec![Vec::new(); p];
        for (v, g) in got.iter_mut().enumerate().take(extra) {
            g.push(e.send(c, 2 * v + 1, 2 * v, share, &[]));
        }
        halve(e, c, share, &mut got, steps, &real);
        double(e, c, share, &mut got, steps, &real);
        for (v, g) in got.iter().enumerate().take(extra) {
            e.send(c, 2 * v, 2 * v + 1, share, g);
        }
    }
}

/// Reduce-scatter by recursive halving alone (a power-of-two number of ranks).
pub(super) fn halving(e: &mut Emit<'_>, shares: &[u64]) {
    let n = e.n();
    for (c, &share) in shares.iter().enumerate() {
        halve(e, c as u32, share, &mut vec![Vec::new(); n], log2(n), &|v| v);
    }
}

/// All-gather by recursive doubling alone (a power-of-two number of ranks).
pub(super) fn doubling(e: &mut Emit<'_>, shares: &[u64]) {
    let n = e.n();
    for (c, &share) in shares.iter().enumerate() {
        double(e, c as u32, share, &mut vec![Vec::new(); n], log2(n), &|v| v);
    }
}

/// The halving steps; `got[v]`: what active rank `v` received so far (its
/// dependencies), to which each step adds.
fn halve(e: &mut Emit<'_>, c: u32, share: u64, got: &mut [Vec<u32>], steps: u32, real: &dyn Fn(usize) -> usize) {
    let p = got.len();
    for s in 0..steps {
        let d = p >> (s + 1);
        let len = share.div_ceil(1 << (s + 1));
        exchange(e, c, got, d, len, real);
    }
}

/// The doubling steps, after [`halve`] (or alone: sizes from `share / p` up).
fn double(e: &mut Emit<'_>, c: u32, share: u64, got: &mut [Vec<u32>], steps: u32, real: &dyn Fn(usize) -> usize) {
    let p = got.len();
    for s in 0..steps {
        let d = 1usize << s;
        let len = (share << s).div_ceil(p as u64);
        exchange(e, c, got, d, len, real);
    }
}

/// Every active rank sends `len` bytes to its partner at distance `d` (XOR), after
/// all it received so far; adds what each receives now.
fn exchange(e: &mut Emit<'_>, c: u32, got: &mut [Vec<u32>], d: usize, len: u64, real: &dyn Fn(usize) -> usize) {
    let sent: Vec<u32> = (0..got.len()).map(|v| e.send(c, real(v), real(v ^ d), len, &got[v])).collect();
    for (v, m) in sent.into_iter().enumerate() {
        got[v ^ d].push(m);
    }
}
