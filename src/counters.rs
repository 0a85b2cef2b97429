// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters of bytes and calls for every call site.
//!
//! Each section's call sites get their counter pairs in per-CPU memory of
//! their own, 16 bytes a call site on each CPU (what upstream's
//! `alloc_tag_counters` take), allocated when the section gets its ids and
//! freed with the section, in as few per-CPU arrays as the per-CPU
//! allocator allows (32 KiB each, 2048 pairs).  A table of one pointer per id of the id
//! space (512 KiB) finds the counters of any id with one load.  The hot path
//! is that load and two per-CPU adds: no shared atomic, no lock, no
//! allocation.  Readers sum over the possible CPUs.

use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    alloc::{
        flags::{__GFP_ZERO, GFP_KERNEL},
        VBox,
    },
    error::Result,
    prelude::*,
};

use crate::ids::SiteId;
use crate::sys::{
    backend::{OwnMemory, OwnSite},
    percpu::{
        self, possible_cpus, read_on_cpu, this_cpu_add, this_cpu_add_pair, this_cpu_sub_pair,
        zero_on_cpu, PerCpuArray,
    },
};

/// One call site's counters on one CPU.
#[repr(C)]
#[derive(Zeroable)]
pub(crate) struct Counter {
    bytes: u64,
    calls: u64,
}

/// A call site's totals over all CPUs.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    /// Bytes allocated and not yet freed (upstream prints it signed).
    pub(crate) bytes: i64,
    /// Allocations not yet freed.
    pub(crate) calls: u64,
}

impl Totals {
    /// Nothing allocated.
    pub(crate) fn is_zero(&self) -> bool {
        self.bytes == 0 && self.calls == 0
    }
}

/// Counter pairs in one per-CPU array: 32 KiB, the per-CPU allocator's
/// smallest unit, so that any array can be allocated.
const ARRAY_IDS: usize = 2048;

/// The counters of one section: per-CPU arrays of [`ARRAY_IDS`] pairs, the
/// last one as many as the section has ids left.
pub(crate) struct SectionCounters {
    first: SiteId,
    blocks: KVec<PerCpuArray<Counter>>,
    /// The line they are counted for: the caller's of
    /// [`SectionCounters::new`].
    site: OwnSite,
}

impl SectionCounters {
    /// Zeroed counters for the ids `first..first + len` (`len` > 0),
    /// counted for the caller's line.  vmlinux's (`vmlinux`) come from the
    /// room the kernel keeps for them apart from everyone else's per-CPU
    /// memory, where the kernel has it ([`PerCpuArray::new_reserved`]).
    #[track_caller]
    pub(crate) fn new(first: SiteId, len: usize, vmlinux: bool) -> Result<Self> {
        let nr = len.div_ceil(ARRAY_IDS);
        let mut blocks = KVec::with_capacity(nr, GFP_KERNEL)?;
        for b in 0..nr {
            let ids = (len - b * ARRAY_IDS).min(ARRAY_IDS);
            let reserved = if vmlinux && percpu::RESERVED {
                let array = PerCpuArray::new_reserved(ids);
                if array.is_none() {
                    pr_info!(
                        "no room left in the per-CPU reserved area: {} of vmlinux's counters in the dynamic area\n",
                        ids
                    );
                }
                array
            } else {
                None
            };
            let array = match reserved {
                Some(array) => array,
                None => PerCpuArray::new(ids)?,
            };
            blocks.push(array, GFP_KERNEL)?;
        }
        Ok(Self {
            first,
            blocks,
            site: OwnSite::caller(),
        })
    }

    /// Hands `count` the memory of the counters, with the line it is
    /// counted for: for counters made before profiling started.
    pub(crate) fn count_own(&self, count: &mut dyn FnMut(OwnSite, OwnMemory<'_>)) {
        if let Some(memory) = OwnMemory::of_vec(&self.blocks) {
            count(self.site, memory);
        }
        for block in self.blocks.iter() {
            count(self.site, block.memory());
        }
    }

    /// Per-CPU bytes, a CPU's share, and how many of them are in the first
    /// per-CPU chunk's reserved area.
    pub(crate) fn bytes_per_cpu(&self) -> (usize, usize) {
        let size = core::mem::size_of::<Counter>();
        self.blocks.iter().fold((0, 0), |(all, reserved), b| {
            let bytes = b.len() * size;
            (
                all + bytes,
                reserved + if b.is_reserved() { bytes } else { 0 },
            )
        })
    }
}

/// Where the counters of every call-site id are.
///
/// # Invariants
///
/// A non-NULL entry of `sites` is the per-CPU address of the counters of
/// its id in a live [`SectionCounters`] block: one attached and not yet
/// detached, which the registry frees only after detaching it.  The entries
/// of ids without counters (not in an attached section, watch ids) are NULL.
pub(crate) struct Counters {
    sites: VBox<[AtomicPtr<Counter>; SiteId::SPACE]>,
    /// The line the table is counted for: the caller's of [`Counters::new`].
    site: OwnSite,
}

impl Counters {
    /// A table with no counters yet, counted for the caller's line.
    #[track_caller]
    pub(crate) fn new() -> Result<Self> {
        let sites =
            VBox::<[AtomicPtr<Counter>; SiteId::SPACE]>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        // SAFETY: The memory is zeroed, and a zeroed `AtomicPtr` is a valid
        // NULL pointer.
        let sites = unsafe { sites.assume_init() };
        // INVARIANT: Every entry is NULL.
        Ok(Self {
            sites,
            site: OwnSite::caller(),
        })
    }

    /// Hands `count` the table's memory, allocated before profiling
    /// started, with the line it is counted for.
    pub(crate) fn count_own(&self, count: &mut dyn FnMut(OwnSite, OwnMemory<'_>)) {
        if let Some(memory) = OwnMemory::of_box(&self.sites) {
            count(self.site, memory);
        }
    }

    /// The per-CPU address of each id's counters (NULL: none), for the
    /// kernel to count the plain call sites itself (7.3).
    #[cfg(allocprof_tags)]
    pub(crate) fn table(&self) -> &[AtomicPtr<Counter>; SiteId::SPACE] {
        &self.sites
    }

    /// The table's bytes (the load message reports them).
    pub(crate) fn table_size(&self) -> usize {
        core::mem::size_of_val(&*self.sites)
    }

    /// Makes `section`'s counters those of its ids.
    ///
    /// # Safety
    ///
    /// `section` is not dropped before [`Counters::detach`] for it returned.
    pub(crate) unsafe fn attach(&self, section: &SectionCounters) {
        let first = section.first.index();
        for (b, block) in section.blocks.iter().enumerate() {
            let base = block.as_percpu_ptr();
            for i in 0..block.len() {
                // A per-CPU address is an offset, not a pointer into memory
                // we may dereference: compute it without claiming it is in
                // bounds.
                let site = &self.sites[first + b * ARRAY_IDS + i];
                // INVARIANT: The caller keeps `section` until it is detached.
                site.store(base.wrapping_add(i), Ordering::Release);
            }
        }
    }

    /// Forgets `section`'s counters.  Hooks that may still use them must be
    /// done: its figures all read zero, and its ids are not in any tag.
    pub(crate) fn detach(&self, section: &SectionCounters) {
        let first = section.first.index();
        for (b, block) in section.blocks.iter().enumerate() {
            for i in 0..block.len() {
                self.sites[first + b * ARRAY_IDS + i].store(ptr::null_mut(), Ordering::Release);
            }
        }
    }

    /// The per-CPU address of `id`'s counters, if its section has them.
    #[inline(always)]
    fn counter(&self, id: SiteId) -> Option<*mut Counter> {
        // `id.index() < SiteId::SPACE` for every id: no bounds check.
        let c = self.sites[id.index()].load(Ordering::Relaxed);
        (!c.is_null()).then_some(c)
    }

    /// Whether `id` has counters: a call site of a section that is here, or
    /// that went away with allocations still live.
    pub(crate) fn has(&self, id: SiteId) -> bool {
        self.counter(id).is_some()
    }

    /// One more allocation of `bytes` for `id`, on the local CPU.
    #[inline(always)]
    pub(crate) fn add_call(&self, id: SiteId, bytes: u64) {
        if let Some(c) = self.counter(id) {
            // SAFETY: `c` is a per-CPU pointer into a live block (type
            // invariant); a `#[repr(C)]` `Counter` is two `u64`s.
            unsafe { this_cpu_add_pair(c.cast(), bytes) }
        }
    }

    /// One allocation of `bytes` less for `id`, on the local CPU; false
    /// if `id` has no counters (a watch id, or a section gone).
    #[inline(always)]
    pub(crate) fn sub_call(&self, id: SiteId, bytes: u64) -> bool {
        let Some(c) = self.counter(id) else {
            return false;
        };
        // SAFETY: As in `add_call`.
        unsafe { this_cpu_sub_pair(c.cast(), bytes) };
        true
    }

    /// Adds `bytes` and `calls` to `id` on the local CPU (both wrap, so
    /// subtracting is adding the two's complement); false if `id` has no
    /// counters.
    pub(crate) fn add(&self, id: SiteId, bytes: u64, calls: u64) -> bool {
        let Some(c) = self.counter(id) else {
            return false;
        };
        // A per-CPU address again: the two `u64`s of the `#[repr(C)]`
        // `Counter` by offset, not by a place through it.
        let bytes_at = c.cast::<u64>();
        // SAFETY: As in `add_call`.
        unsafe {
            this_cpu_add(bytes_at, bytes);
            this_cpu_add(bytes_at.wrapping_add(1), calls);
        }
        true
    }

    /// Sets every counter to zero, on every CPU: when profiling starts
    /// again after it was off (`Profiler::restart`), with no hook counting
    /// meanwhile.  The caller holds the registry, as readers do.
    pub(crate) fn zero_all(&self) {
        for id in self.sites.iter() {
            let c = id.load(Ordering::Relaxed);
            if c.is_null() {
                continue;
            }
            let bytes_at = c.cast::<u64>();
            possible_cpus().for_each(|cpu| {
                // SAFETY: As in `read`: per-CPU pointers into a live block,
                // a possible CPU.
                unsafe {
                    zero_on_cpu(bytes_at, cpu);
                    zero_on_cpu(bytes_at.wrapping_add(1), cpu);
                }
            });
        }
    }

    /// `id`'s totals over all CPUs; zero if it has no counters.  Readers
    /// hold the registry, which attaches and detaches sections, so an entry
    /// does not change under them; `/proc/allocinfo` may still ask for an id
    /// whose section went between its `seek` and `show`, and a shorter
    /// section may have taken its first id since: the entry of each id is
    /// its own, so such an id reads its new counters or none.
    pub(crate) fn read(&self, id: SiteId) -> Totals {
        let Some(c) = self.counter(id) else {
            return Totals::default();
        };
        // By offset again: the two `u64`s of the `#[repr(C)]` `Counter`.
        let bytes_at = c.cast::<u64>();
        let (mut bytes, mut calls) = (0u64, 0u64);
        for cpu in possible_cpus() {
            // SAFETY: `bytes_at` and the `u64` after it are per-CPU
            // pointers into a live block (type invariant), and `cpu` a
            // possible CPU.
            let (b, n) = unsafe {
                (
                    read_on_cpu(bytes_at, cpu),
                    read_on_cpu(bytes_at.wrapping_add(1), cpu),
                )
            };
            bytes = bytes.wrapping_add(b);
            calls = calls.wrapping_add(n);
        }
        // A free on one CPU can be summed without its allocation on
        // another when the reader passes that CPU just before the
        // allocation: such a sum is below the true figure, which is never
        // negative.  Read a negative sum as 0, as
        // `percpu_counter_sum_positive()` does.
        Totals {
            bytes: (bytes as i64).max(0),
            calls: if (calls as i64) < 0 { 0 } else { calls },
        }
    }
}
