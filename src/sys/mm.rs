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
/// 6.12's series only, for the page array: 7.3's keeps the references.
#[cfg(not(allocprof_tags))]
pub(crate) fn max_pfn() -> usize {
    // SAFETY: A plain read of a value set once during boot.
    unsafe { bindings::get_max_pfn() as usize }
}

/// A NUMA node's number.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct NodeId(u16);

impl NodeId {
    /// The number, as the kernel numbers nodes.
    pub(crate) fn get(self) -> u16 {
        self.0
    }
}

impl Pfn {
    /// The node of the frame's memory.
    pub(crate) fn node(self) -> NodeId {
        // SAFETY: The page hooks hand over frames of the memory map, each
        // with its `struct page`, which `pfn_to_nid()` reads.
        let nid = unsafe { bindings::pfn_to_nid(self.0 as kernel::ffi::c_ulong) };
        // Node numbers are below MAX_NUMNODES (1 << NODES_SHIFT, at most
        // 1024).
        NodeId(nid as u16)
    }
}
