//! Software prefetch: large fabrics are memory-latency bound (a port and a packet per
//! hop among thousands), so the run loop asks for the next event's data while it
//! handles the current one.

/// Starts loading the first `n` cache lines of `*at` into the cache. A hint: it never
/// faults and changes no state, so any reference will do.
#[inline]
pub fn lines<T>(at: &T, n: usize) {
    lines_from(at, 0, n);
}

/// Starts loading cache lines `first .. first + n` of `*at` (counted from its start).
#[inline]
pub fn lines_from<T>(at: &T, first: usize, n: usize) {
    let at = (at as *const T as *const i8).wrapping_add(64 * first);
    #[cfg(target_arch = "x86_64")]
    for i in 0..n {
        // SAFETY: `_mm_prefetch` is a hint that never faults, whatever the address;
        // `wrapping_add` keeps the pointer arithmetic defined.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.wrapping_add(64 * i)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, n);
}
