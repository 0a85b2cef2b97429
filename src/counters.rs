// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters of bytes and calls for every call site.
//!
//! A call site's compact id selects a counter pair in a block of per-CPU
//! memory; blocks are allocated as ids are handed out, never moved, and
//! freed with the table.  The hot path is two per-CPU adds: no shared
//! atomic, no lock, no allocation.  Readers sum over the possible CPUs.

use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{error::Result, prelude::*};

use crate::sys::percpu::{
    on_cpu, possible_cpus, this_cpu_add, this_cpu_add_pair, this_cpu_sub_pair, PerCpu,
};
use crate::tags::SiteId;

/// Ids per block of per-CPU counters (4 KiB a CPU).
const BLOCK_IDS: usize = 256;
const MAX_BLOCKS: usize = SiteId::SPACE / BLOCK_IDS;

/// One call site's counters on one CPU.
#[repr(C)]
#[derive(Zeroable)]
pub(crate) struct Counter {
    bytes: u64,
    calls: u64,
}

type Block = [Counter; BLOCK_IDS];

/// A block pointer before its block is allocated (an array initialiser).
#[allow(clippy::declare_interior_mutable_const)]
const NO_BLOCK: AtomicPtr<Block> = AtomicPtr::new(ptr::null_mut());

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

/// The counters of every call-site id.
pub(crate) struct Counters {
    /// Per-CPU pointers of the blocks; NULL until `ensure` allocates one.
    blocks: [AtomicPtr<Block>; MAX_BLOCKS],
}

impl Counters {
    /// A table with no blocks yet.
    pub(crate) fn new() -> Self {
        Self {
            blocks: [NO_BLOCK; MAX_BLOCKS],
        }
    }

    /// Makes sure ids `first..first + len` have counters, zeroed.
    ///
    /// Called with the registry locked, so never concurrently with itself.
    pub(crate) fn ensure(&self, first: SiteId, len: usize) -> Result {
        if len == 0 {
            return Ok(());
        }
        let first = first.index();
        for b in first / BLOCK_IDS..=(first + len - 1) / BLOCK_IDS {
            if self.blocks[b].load(Ordering::Relaxed).is_null() {
                let block = PerCpu::<Block>::new()?;
                self.blocks[b].store(block.into_raw(), Ordering::Release);
            }
        }
        Ok(())
    }

    /// Per-CPU memory of the counters allocated so far, a CPU's share.
    pub(crate) fn bytes_per_cpu(&self) -> usize {
        let blocks = self
            .blocks
            .iter()
            .filter(|b| !b.load(Ordering::Relaxed).is_null())
            .count();
        blocks * core::mem::size_of::<Block>()
    }

    /// The per-CPU address of `id`'s counters, if it has a block.
    #[inline(always)]
    fn counter(&self, id: SiteId) -> Option<*mut Counter> {
        let id = id.index();
        // `id / BLOCK_IDS < MAX_BLOCKS` for every id: no bounds check.
        let block = self.blocks[id / BLOCK_IDS].load(Ordering::Relaxed);
        if block.is_null() {
            return None;
        }
        // A per-CPU address is an offset, not a pointer into memory we may
        // dereference: compute it without claiming it is in bounds.
        Some(block.cast::<Counter>().wrapping_add(id % BLOCK_IDS))
    }

    /// One more allocation of `bytes` for `id`, on the local CPU.
    #[inline(always)]
    pub(crate) fn add_call(&self, id: SiteId, bytes: u64) {
        if let Some(c) = self.counter(id) {
            // SAFETY: `c` is a per-CPU pointer into a live block (blocks are
            // only freed with `self`); a `#[repr(C)]` `Counter` is two `u64`s.
            unsafe { this_cpu_add_pair(c.cast(), bytes) }
        }
    }

    /// One allocation of `bytes` less for `id`, on the local CPU.
    #[inline(always)]
    pub(crate) fn sub_call(&self, id: SiteId, bytes: u64) {
        if let Some(c) = self.counter(id) {
            // SAFETY: As in `add_call`.
            unsafe { this_cpu_sub_pair(c.cast(), bytes) }
        }
    }

    /// Adds `bytes` and `calls` to `id` on the local CPU (both wrap, so
    /// subtracting is adding the two's complement).
    pub(crate) fn add(&self, id: SiteId, bytes: u64, calls: u64) {
        if let Some(c) = self.counter(id) {
            // SAFETY: As in `add_call`.
            unsafe {
                this_cpu_add(ptr::addr_of_mut!((*c).bytes), bytes);
                this_cpu_add(ptr::addr_of_mut!((*c).calls), calls);
            }
        }
    }

    /// `id`'s totals over all CPUs.
    pub(crate) fn read(&self, id: SiteId) -> Totals {
        let block = self.blocks[id.index() / BLOCK_IDS].load(Ordering::Acquire);
        if block.is_null() {
            return Totals::default();
        }
        let (mut bytes, mut calls) = (0u64, 0u64);
        for cpu in possible_cpus() {
            // SAFETY: `block` came from `PerCpu::into_raw` and is freed only
            // with `self`; `cpu` is a possible CPU.
            let c = &unsafe { on_cpu(block, cpu) }[id.index() % BLOCK_IDS];
            // SAFETY: Other CPUs update their copies concurrently; a volatile
            // aligned 64-bit load sees one value or the other, never a mix.
            let (b, n) = unsafe { (ptr::read_volatile(&c.bytes), ptr::read_volatile(&c.calls)) };
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

impl Drop for Counters {
    fn drop(&mut self) {
        for b in &self.blocks {
            let p = b.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: `p` came from `PerCpu::into_raw` and is freed once.
                drop(unsafe { PerCpu::<Block>::from_raw(p) });
            }
        }
    }
}
