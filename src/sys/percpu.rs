// SPDX-License-Identifier: GPL-2.0

//! Per-CPU memory: allocation, the local CPU's copy on the hot path, and
//! every possible CPU's copy for readers.

use core::{
    marker::PhantomData,
    mem,
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{bindings, error::code::ENOMEM, error::Result};
// pin-init's on 7.3.
#[cfg(not(allocprof_tags))]
use kernel::init::Zeroable;
#[cfg(allocprof_tags)]
use kernel::prelude::Zeroable;

use super::backend::OwnMemory;

/// Whether the kernel keeps room for vmlinux's counters in the first
/// chunk's reserved area ([`PerCpuArray::new_reserved`]).
pub(crate) const RESERVED: bool = cfg!(allocprof_percpu_reserved);

/// A zeroed per-CPU array of `len` `T`s, freed on drop.
///
/// # Invariants
///
/// `ptr` is the per-CPU pointer `__alloc_percpu` (or `pcpu_alloc_noprof`)
/// returned for `len` `T`s, owned by this value and freed only by its drop.
pub(crate) struct PerCpuArray<T: Zeroable> {
    /// A per-CPU pointer to the first element.
    ptr: NonNull<T>,
    len: usize,
    /// From the first chunk's reserved area ([`PerCpuArray::new_reserved`]).
    reserved: bool,
    _t: PhantomData<T>,
}

// SAFETY: Each CPU's copy is only changed through per-CPU instructions
// (`this_cpu_add`); the handle itself can move between threads.
unsafe impl<T: Zeroable> Send for PerCpuArray<T> {}
// SAFETY: Shared access only reads other CPUs' copies or adds to the local
// one with an interrupt-safe per-CPU operation.
unsafe impl<T: Zeroable> Sync for PerCpuArray<T> {}

impl<T: Zeroable> PerCpuArray<T> {
    /// Allocates `len` zeroed elements for every possible CPU (`len` > 0),
    /// counted for the caller's line, as the kernel crate's allocations.
    #[track_caller]
    pub(crate) fn new(len: usize) -> Result<Self> {
        let size = mem::size_of::<T>().checked_mul(len).ok_or(ENOMEM)?;
        #[cfg(allocprof_rust_sites)]
        let loc = core::panic::Location::caller();
        // SAFETY: `__alloc_percpu` may be called with any size and alignment;
        // it returns zeroed memory or NULL.  A `Location` is static.
        #[cfg(allocprof_rust_sites)]
        let ptr = unsafe {
            bindings::__alloc_percpu(size, mem::align_of::<T>(), core::ptr::from_ref(loc).cast())
        };
        // Without the kernel's pool of Rust lines: counted for the C
        // helper's line.
        // SAFETY: As above.
        #[cfg(not(allocprof_rust_sites))]
        let ptr = unsafe { bindings::__alloc_percpu(size, mem::align_of::<T>()) };
        let ptr = NonNull::new(ptr.cast::<T>()).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a fresh allocation of `len` `T`s.
        Ok(Self {
            ptr,
            len,
            reserved: false,
            _t: PhantomData,
        })
    }

    /// As [`PerCpuArray::new`], from the first chunk's reserved area, where
    /// the kernel keeps room for the counters of vmlinux's call sites
    /// (`PERCPU_MODULE_RESERVE`, probed as `allocprof_percpu_reserved`):
    /// out of the way of the allocator's searches for everyone else's
    /// per-CPU memory.  `None` if the area has no room left (the modules'
    /// static per-CPU data took it) or the kernel keeps none.  Not counted
    /// for a call site when allocated: for memory allocated before
    /// profiling starts, which [`Registration::count_own`] counts.
    ///
    /// [`Registration::count_own`]: super::backend::Registration::count_own
    pub(crate) fn new_reserved(len: usize) -> Option<Self> {
        #[cfg(not(allocprof_percpu_reserved))]
        {
            let _ = len;
            None
        }
        #[cfg(allocprof_percpu_reserved)]
        {
            let size = mem::size_of::<T>().checked_mul(len)?;
            // SAFETY: `pcpu_alloc_noprof` may be called with any size and
            // alignment; it returns zeroed memory or NULL, and warns of
            // nothing with `__GFP_NOWARN`.
            let ptr = unsafe {
                bindings::pcpu_alloc_noprof(
                    size,
                    mem::align_of::<T>(),
                    true,
                    bindings::GFP_KERNEL | bindings::__GFP_NOWARN,
                )
            };
            let ptr = NonNull::new(ptr.cast::<T>())?;
            // INVARIANT: `ptr` is a fresh allocation of `len` `T`s, freed
            // by `free_percpu` as any per-CPU memory.
            Some(Self {
                ptr,
                len,
                reserved: true,
                _t: PhantomData,
            })
        }
    }

    /// The per-CPU pointer of the first element, for [`this_cpu_add`] and
    /// [`read_on_cpu`]; valid while `self` lives.
    pub(crate) fn as_percpu_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it came from the first chunk's reserved area.
    pub(crate) fn is_reserved(&self) -> bool {
        self.reserved
    }

    /// The allocation, for [`Registration::count_own`].
    ///
    /// [`Registration::count_own`]: super::backend::Registration::count_own
    pub(crate) fn memory(&self) -> OwnMemory<'_> {
        // SAFETY: `ptr` came from the per-CPU allocator and is freed only when
        // `self` is dropped, which the borrow prevents (type invariant).
        unsafe { OwnMemory::percpu(self.ptr.as_ptr().cast()) }
    }
}

impl<T: Zeroable> Drop for PerCpuArray<T> {
    fn drop(&mut self) {
        // SAFETY: `self.ptr` came from the per-CPU allocator and is freed once
        // (type invariant).
        unsafe { bindings::free_percpu(self.ptr.as_ptr().cast()) };
    }
}

/// CPU `cpu`'s copy of the `u64` at per-CPU address `p`, which that CPU
/// may be changing meanwhile (`this_cpu_add`): read whole, with one
/// aligned load, as an atomic.
///
/// # Safety
///
/// `p` must be a per-CPU pointer to a `u64` inside a live [`PerCpuArray`]
/// allocation (from [`PerCpuArray::as_percpu_ptr`]), and `cpu` a possible
/// CPU.
#[inline]
pub(crate) unsafe fn read_on_cpu(p: *mut u64, cpu: u32) -> u64 {
    // `per_cpu_ptr` turns the per-CPU pointer into that CPU's copy, valid
    // and aligned for as long as the allocation, which the caller keeps
    // live over the call.  `AtomicU64` has the layout of `u64`, and every
    // other access to the copy is a single instruction of its own CPU (the
    // `this_cpu_*` functions here): an atomic load sees one value or the
    // next, never a mix.
    // SAFETY: So the copy is a valid `AtomicU64` during the call.
    let copy = unsafe { AtomicU64::from_ptr(bindings::per_cpu_ptr(p.cast(), cpu).cast()) };
    copy.load(Ordering::Relaxed)
}

/// Sets CPU `cpu`'s copy of the `u64` at per-CPU address `p` to 0, with
/// one aligned store, as an atomic: for counters no hook adds to while it
/// runs (profiling off), which readers may still read.
///
/// # Safety
///
/// As for [`read_on_cpu`].
#[inline]
pub(crate) unsafe fn zero_on_cpu(p: *mut u64, cpu: u32) {
    // SAFETY: As in `read_on_cpu`: the copy is a valid `AtomicU64` during
    // the call.
    let copy = unsafe { AtomicU64::from_ptr(bindings::per_cpu_ptr(p.cast(), cpu).cast()) };
    copy.store(0, Ordering::Relaxed);
}

/// Adds `v` to the local CPU's copy of the `u64` at per-CPU address `p`.
///
/// One instruction on x86-64, so it is safe against interrupts and needs no
/// preemption control of its own.
///
/// # Safety
///
/// `p` must be a per-CPU pointer to a `u64` inside a live [`PerCpuArray`]
/// allocation (from [`PerCpuArray::as_percpu_ptr`]).
#[inline(always)]
pub(crate) unsafe fn this_cpu_add(p: *mut u64, v: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: On x86-64 the `gs` base is the local CPU's per-CPU offset, so
    // `gs:[p]` is this CPU's copy of `*p` (what the kernel's `this_cpu_add`
    // emits); the caller guarantees `p` is such a per-CPU pointer.
    unsafe {
        core::arch::asm!(
            "add qword ptr gs:[{p}], {v}",
            p = in(reg) p,
            v = in(reg) v,
            options(nostack)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: The helper is the kernel's `this_cpu_add` on the same pointer.
    unsafe {
        bindings::this_cpu_add_u64(p, v)
    };
}

/// Adds `v` to the first and 1 to the second of the local CPU's copy of the
/// `u64` pair at per-CPU address `p`: two instructions on x86-64, each safe
/// against interrupts (the pair is not updated as one).
///
/// # Safety
///
/// `p` must be a per-CPU pointer to a `[u64; 2]` inside a live [`PerCpuArray`]
/// allocation (from [`PerCpuArray::as_percpu_ptr`]).
#[inline(always)]
pub(crate) unsafe fn this_cpu_add_pair(p: *mut [u64; 2], v: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: As in `this_cpu_add`, on the two `u64`s at `p` and `p + 8`.
    unsafe {
        core::arch::asm!(
            "add qword ptr gs:[{p}], {v}",
            "add qword ptr gs:[{p} + 8], 1",
            p = in(reg) p,
            v = in(reg) v,
            options(nostack)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: By the function's safety requirements.
    unsafe {
        this_cpu_add(p.cast(), v);
        this_cpu_add(p.cast::<u64>().wrapping_add(1), 1);
    }
}

/// Subtracts `v` from the first and 1 from the second of the local CPU's
/// copy of the `u64` pair at per-CPU address `p`.
///
/// # Safety
///
/// As for [`this_cpu_add_pair`].
#[inline(always)]
pub(crate) unsafe fn this_cpu_sub_pair(p: *mut [u64; 2], v: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: As in `this_cpu_add`, on the two `u64`s at `p` and `p + 8`.
    unsafe {
        core::arch::asm!(
            "sub qword ptr gs:[{p}], {v}",
            "sub qword ptr gs:[{p} + 8], 1",
            p = in(reg) p,
            v = in(reg) v,
            options(nostack)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: By the function's safety requirements.
    unsafe {
        this_cpu_add(p.cast(), v.wrapping_neg());
        this_cpu_add(p.cast::<u64>().wrapping_add(1), 1u64.wrapping_neg());
    }
}

/// The possible CPUs, in order.
pub(crate) fn possible_cpus() -> impl Iterator<Item = u32> {
    // SAFETY: `nr_cpu_ids` is set during boot and never changes after.
    let nr = unsafe { bindings::nr_cpu_ids };
    // SAFETY: Testing a bit of the possible mask, which is fixed after boot.
    (0..nr).filter(|&cpu| unsafe { bindings::cpu_possible(cpu) })
}

/// The local CPU's copy of the `u64` at per-CPU address `p`.
///
/// # Safety
///
/// As for [`this_cpu_add`].
#[inline(always)]
pub(crate) unsafe fn this_cpu_read(p: *mut u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let v: u64;
        // SAFETY: As in `this_cpu_add`: `gs:[p]` is this CPU's copy.
        unsafe {
            core::arch::asm!(
                "mov {v}, qword ptr gs:[{p}]",
                p = in(reg) p,
                v = out(reg) v,
                options(nostack, readonly)
            );
        }
        v
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: The helper is the kernel's `this_cpu_read` on the same pointer.
    unsafe {
        bindings::this_cpu_read_u64(p)
    }
}
