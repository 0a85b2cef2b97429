// SPDX-License-Identifier: GPL-2.0

//! Page frame numbers.

use kernel::bindings;

/// Size of a page in bytes.
pub(crate) const PAGE_SIZE: u64 = kernel::page::PAGE_SIZE as u64;

/// A page frame number, as the page allocator hands it to the page hooks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pfn(usize);

impl Pfn {
    /// The frame numbered `pfn`.
    #[inline(always)]
    pub(crate) fn new(pfn: usize) -> Self {
        Self(pfn)
    }

    /// The number, as an index into a PFN-indexed array.
    #[inline(always)]
    pub(crate) fn index(self) -> usize {
        self.0
    }

    /// The frame `n` frames further on.
    #[inline(always)]
    pub(crate) fn add(self, n: usize) -> Self {
        Self(self.0 + n)
    }
}

/// One past the highest page frame number of the memory present at boot.
pub(crate) fn max_pfn() -> usize {
    // SAFETY: A plain read of a value set once during boot.
    unsafe { bindings::get_max_pfn() as usize }
}
