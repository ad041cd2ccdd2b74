//! The heap fabricsim runs on: mimalloc, whose arenas use transparent huge pages,
//! counted.
//!
//! A large simulation touches a few hundred megabytes at random (ports, packets,
//! per-connection state), one cache line here and one there. With 4 KiB pages nearly
//! every such miss also misses the TLB, and the page walk is a second miss; with
//! 2 MiB pages the TLB covers the whole working set. glibc's allocator only asks the
//! kernel for huge pages when told so by an environment variable read at process
//! start (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), which a Python extension cannot
//! set for its host. mimalloc (v3) reserves its memory in large aligned arenas and
//! advises them for transparent huge pages (`madvise(MADV_HUGEPAGE)`, its `allow_thp`
//! option, on by default), which the kernel honours when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `always` or `madvise`; elsewhere
//! nothing changes. (Its `allow_large_os_pages` option is left off: it would take
//! pages from the kernel's reserved hugetlbfs pool, pinned and hidden from RSS.)
//! `MIMALLOC_ALLOW_THP=0` turns the advice off. Results never depend on the allocator.
//!
//! The allocator also counts the heap, current and peak bytes. The benchmark reports
//! memory per packet in flight from these (peak heap during a run minus the heap once
//! the world is built, over the peak number of packets), which unlike the process RSS
//! excludes Python and the result tables. The cost is two relaxed atomic operations
//! per allocation, and the simulator does not allocate per packet in steady state.
//!
//! A binary opts in with `#[global_allocator] static A: fabricsim_alloc::Heap =
//! fabricsim_alloc::Heap;`. The library crates never do, so their tests run on the
//! system allocator.

use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The counting allocator over mimalloc.
pub struct Heap;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// mimalloc's option index of `allow_thp` (`mi_option_allow_thp` in v3's
/// `mimalloc.h`; the Rust bindings do not name it).
#[cfg(test)]
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

#[inline]
fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Heap {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

/// Bytes allocated now (through [`Heap`]; zero if the binary does not use it).
pub fn current() -> usize {
    CURRENT.load(Relaxed)
}

/// The largest allocation total since the last [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// Starts a new peak measurement from the current total.
pub fn reset_peak() {
    PEAK.store(CURRENT.load(Relaxed), Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_counts_what_it_holds_and_its_peak() {
        // Other tests may use the heap meanwhile, by less than `SLACK`.
        const SLACK: usize = 4096;
        let layout = Layout::from_size_align(1 << 20, 64).unwrap();
        let before = current();
        reset_peak();
        // SAFETY: a non-zero layout, freed below with the same layout.
        let p = unsafe { Heap.alloc(layout) };
        assert!(!p.is_null());
        assert!(current() + SLACK >= before + (1 << 20));
        let grown = unsafe { Heap.realloc(p, layout, 3 << 20) };
        assert!(!grown.is_null());
        let big = Layout::from_size_align(3 << 20, 64).unwrap();
        assert!(peak() + SLACK >= before + (3 << 20));
        unsafe { Heap.dealloc(grown, big) };
        assert!(peak() + SLACK >= before + (3 << 20), "the peak outlives the allocation");
        assert!(current() < before + (1 << 20) + SLACK);
    }

    #[test]
    fn arenas_are_advised_for_huge_pages_and_not_taken_from_the_reserved_pool() {
        let layout = Layout::from_size_align(64, 8).unwrap();
        let p = unsafe { Heap.alloc_zeroed(layout) };
        assert!(unsafe { std::slice::from_raw_parts(p, 64) }.iter().all(|&b| b == 0));
        unsafe { Heap.dealloc(p, layout) };
        // SAFETY: reading an option is a plain load.
        let (thp, reserved) = unsafe {
            (
                libmimalloc_sys::mi_option_is_enabled(MI_OPTION_ALLOW_THP),
                libmimalloc_sys::mi_option_is_enabled(libmimalloc_sys::mi_option_large_os_pages),
            )
        };
        let set = |name: &str| std::env::vars_os().any(|(k, _)| k.to_string_lossy().to_ascii_uppercase() == name);
        if !set("MIMALLOC_ALLOW_THP") {
            assert!(thp, "mimalloc advises its arenas for transparent huge pages by default");
        }
        if !set("MIMALLOC_ALLOW_LARGE_OS_PAGES") && !set("MIMALLOC_LARGE_OS_PAGES") {
            assert!(!reserved, "the hugetlbfs pool is left alone");
        }
    }
}
