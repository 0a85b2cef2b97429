// SPDX-License-Identifier: GPL-2.0

//! Page back-references: which call site allocated each page.
//!
//! One 16-bit call-site id per page frame, in an array indexed by PFN and
//! allocated at load for the memory present (upstream keeps an 8-byte
//! pointer per page in `page_ext`).  Only the first page of an allocation
//! carries the id; a split copies it to the first page of every piece.  A
//! page frame beyond the array is counted as untracked.  Pages allocated
//! before the module loaded carry no id, so freeing them changes nothing.

use core::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use kernel::{alloc::flags::GFP_KERNEL, error::Result, prelude::*};

use crate::ids::{page_reference, SiteId};
use crate::sys::{
    backend::{OwnMemory, OwnSite},
    mm::{Pfn, PAGE_SIZE},
};

/// Back-reference storage per page, in bytes (for the closing figures).
pub(crate) const BYTES_PER_PAGE: usize = core::mem::size_of::<AtomicU16>();

/// Bytes in `2^order` pages (the page allocator's orders are far below 64;
/// no overflow check on the hot path).
#[inline(always)]
pub(crate) fn bytes(order: u32) -> u64 {
    PAGE_SIZE.wrapping_shl(order)
}

/// The PFN-indexed array of call-site ids.
pub(crate) struct PageRefs {
    /// One id per page frame (0: none).  Hooks for pages next to each
    /// other run at once on different CPUs and a split writes its pieces'
    /// entries while they may be freed: every entry is an atomic.
    refs: KVVec<AtomicU16>,
    /// Page allocations whose frame lies beyond the array.
    untracked: AtomicU64,
    /// The line the array is counted for: the caller's of [`PageRefs::new`].
    site: OwnSite,
}

impl PageRefs {
    /// An array covering page frames `0..nr_pfns`, all without an id,
    /// counted for the caller's line.
    #[track_caller]
    pub(crate) fn new(nr_pfns: usize) -> Result<Self> {
        let mut refs = KVVec::with_capacity(nr_pfns, GFP_KERNEL)?;
        for _ in 0..nr_pfns {
            refs.push(AtomicU16::new(0), GFP_KERNEL)?;
        }
        Ok(Self {
            refs,
            untracked: AtomicU64::new(0),
            site: OwnSite::caller(),
        })
    }

    /// Hands `count` the array's memory, allocated before profiling
    /// started, with the line it is counted for.
    pub(crate) fn count_own(&self, count: &mut dyn FnMut(OwnSite, OwnMemory<'_>)) {
        if let Some(memory) = OwnMemory::of_vec(&self.refs) {
            count(self.site, memory);
        }
    }

    /// Bytes used by the array.
    pub(crate) fn size(&self) -> usize {
        self.refs.len() * BYTES_PER_PAGE
    }

    /// Forgets every back-reference: when profiling starts again after it
    /// was off, while no page hook runs (`Profiler::restart`), so that a
    /// page allocated before is not uncounted when it is freed.
    pub(crate) fn clear(&self) {
        for slot in self.refs.iter() {
            slot.store(0, Ordering::Relaxed);
        }
    }

    /// Page allocations that could not be tracked so far.
    pub(crate) fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// The id slot of page frame `pfn`, if the array covers it.
    #[inline(always)]
    fn slot(&self, pfn: Pfn) -> Option<&AtomicU16> {
        self.refs.get(pfn.index())
    }

    /// Gives the pages at `pfn` the back-reference `id`; false if the
    /// frame is beyond the array (then counted as untracked).
    #[inline(always)]
    pub(crate) fn set(&self, pfn: Pfn, id: SiteId) -> bool {
        let Some(slot) = self.slot(pfn) else {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        slot.store(id.get(), Ordering::Relaxed);
        true
    }

    /// Takes the back-reference of the pages at `pfn` away, if they have one.
    #[inline(always)]
    pub(crate) fn take(&self, pfn: Pfn) -> Option<SiteId> {
        let slot = self.slot(pfn)?;
        let id = SiteId::new(slot.load(Ordering::Relaxed))?;
        slot.store(0, Ordering::Relaxed);
        Some(id)
    }

    /// The allocation at `pfn` becomes pieces of `2^new_order` pages, each
    /// freed on its own: every piece gets the id.  Returns the id and the
    /// calls to add (one per piece but the first), if it was counted.
    pub(crate) fn split(&self, pfn: Pfn, old_order: u32, new_order: u32) -> Option<(SiteId, u64)> {
        let id = self.id_of(pfn)?;
        if new_order >= old_order {
            return None;
        }
        let pieces = 1usize << (old_order - new_order);
        for i in 1..pieces {
            if let Some(slot) = self.slot(pfn.add(i << new_order)) {
                slot.store(id.get(), Ordering::Relaxed);
            }
        }
        Some((id, pieces as u64 - 1))
    }

    /// Migration: `dst` takes over `src`'s id; `dst`'s own allocation (by
    /// the migration code) is uncounted, and `src`'s free will count
    /// nothing.  Returns the id moved, if `src` had one, and the id `dst`
    /// had, whose allocation is gone.
    pub(crate) fn copy(&self, dst: Pfn, src: Pfn) -> Option<(SiteId, Option<SiteId>)> {
        let (src_slot, dst_slot) = (self.slot(src)?, self.slot(dst)?);
        let id = SiteId::new(src_slot.load(Ordering::Relaxed))?;
        let old = SiteId::new(dst_slot.load(Ordering::Relaxed));
        dst_slot.store(id.get(), Ordering::Relaxed);
        src_slot.store(0, Ordering::Relaxed);
        Some((id, old))
    }

    /// The call site of the allocation at `pfn`, if it was counted.
    pub(crate) fn id_of(&self, pfn: Pfn) -> Option<SiteId> {
        SiteId::new(self.slot(pfn)?.load(Ordering::Relaxed))
    }

    /// The reference a partial free reads before it drops its page
    /// (`page_ref`): the id with the registration's `generation`, since
    /// `page_ref_sub` may come after a re-registration.  0: nothing to
    /// subtract.
    pub(crate) fn reference(&self, generation: u32, pfn: Pfn) -> u64 {
        self.id_of(pfn)
            .map_or(0, |id| page_reference(generation, id))
    }
}
