//! A global allocator that counts heap bytes while [`COUNTING`] is on: live now
//! ([`NOW`]), at the most ([`PEAK`]), allocated in all ([`ALLOCATED`]) and the number of
//! allocations ([`ALLOCATIONS`]). Only for a bench's memory round: the shared counters
//! would slow its timed rounds down. A bench installs it with
//! `#[global_allocator] static ALLOCATOR: Counting = Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// The counting allocator (over the system's).
pub struct Counting;

/// Whether the counters count.
pub static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes live now (since counting began).
pub static NOW: AtomicIsize = AtomicIsize::new(0);
/// The most bytes live at once.
pub static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Bytes allocated in all.
pub static ALLOCATED: AtomicIsize = AtomicIsize::new(0);
/// Allocations made.
pub static ALLOCATIONS: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to the system allocator with the same arguments; the
// counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let size = layout.size() as isize;
            let now = NOW.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(now, Ordering::Relaxed);
            ALLOCATED.fetch_add(size, Ordering::Relaxed);
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            NOW.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller's pointer and layout, as given.
        unsafe { System.dealloc(ptr, layout) }
    }
}
