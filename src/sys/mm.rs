// SPDX-License-Identifier: GPL-2.0

//! Pages and page frame numbers.

use kernel::bindings;

/// Size of a page in bytes.
pub(crate) const PAGE_SIZE: u64 = kernel::page::PAGE_SIZE as u64;

/// A `struct page` handed to a hook by the page allocator.
#[derive(Clone, Copy)]
pub(crate) struct Page(*mut bindings::page);

impl Page {
    /// Wraps a page pointer from the kernel.
    ///
    /// # Safety
    ///
    /// `page` must point to a valid `struct page` of the memory map.
    pub(crate) unsafe fn from_raw(page: *mut bindings::page) -> Self {
        Self(page)
    }

    /// The page frame number.
    #[inline]
    pub(crate) fn pfn(self) -> usize {
        // SAFETY: By the type invariant `self.0` is a page of the memory map.
        unsafe { bindings::page_to_pfn(self.0) as usize }
    }
}

/// One past the highest page frame number of the memory present at boot.
pub(crate) fn max_pfn() -> usize {
    // SAFETY: A plain read of a value set once during boot.
    unsafe { bindings::get_max_pfn() as usize }
}
