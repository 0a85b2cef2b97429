// SPDX-License-Identifier: GPL-2.0

//! allocprof_rust_bench: what profiling costs a Rust allocation, for
//! `make bench` (bench/guest.sh loads it after allocprof_bench in every
//! configuration).
//!
//! At load it times [`ITERS`] rounds of `KBox::new_uninit` of 64 bytes and
//! its drop (after an untimed tenth of them) and prints
//!
//! `allocprof_rust_bench: result loop=kbox iters=I ns=T cal_iters=0 cal_ns=0`
//!
//! as allocprof_bench prints its loops (T: `ktime_get()` around the loop;
//! under QEMU's `-icount shift=0` a nanosecond is one guest instruction).
//! With the patched kernel the allocations are counted for the line of
//! `KBox::new_uninit` below (the kernel crate's `#[track_caller]` chain),
//! with upstream's profiler for the kernel crate's C helper; allocprof_bench's
//! `kmalloc64` loop makes the same allocation from a C call site.

use core::mem::MaybeUninit;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::bindings;
use kernel::prelude::*;

#[cfg(not(bench_authors_list))]
module! {
    type: RustBench,
    name: "allocprof_rust_bench",
    author: "allocprof",
    description: "Cost of profiling a Rust allocation (make bench)",
    license: "GPL",
}

// 7.3's `module!` names its authors in a list (bench/Kbuild sets the cfg).
#[cfg(bench_authors_list)]
module! {
    type: RustBench,
    name: "allocprof_rust_bench",
    authors: ["allocprof"],
    description: "Cost of profiling a Rust allocation (make bench)",
    license: "GPL",
}

/// Timed rounds, as allocprof_bench's default `kmalloc64_iters` in bench/run.
#[cfg(not(bench_trace))]
const ITERS: u32 = 100_000;

/// bench/trace's build (its Kbuild sets the cfg): the loop for good, while
/// gdb single-steps it.
#[cfg(bench_trace)]
const ITERS: u32 = 2_000_000_000;

/// `n` allocations of 64 bytes and their frees.
#[inline(never)]
fn kbox_loop(n: u32) -> Result {
    for _ in 0..n {
        let b = KBox::<[u8; 64]>::new_uninit(GFP_KERNEL)?;
        drop(core::hint::black_box(b));
    }
    Ok(())
}

fn now() -> i64 {
    // SAFETY: Reads the clock; any context.
    unsafe { bindings::ktime_get() }
}

struct RustBench;

impl kernel::Module for RustBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        kbox_loop(ITERS / 10)?;
        let t0 = now();
        kbox_loop(ITERS)?;
        let ns = now() - t0;
        pr_info!("result loop=kbox iters={ITERS} ns={ns} cal_iters=0 cal_ns=0\n");
        Ok(RustBench)
    }
}
