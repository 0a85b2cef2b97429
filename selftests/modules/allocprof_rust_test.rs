// SPDX-License-Identifier: GPL-2.0

//! allocprof_rust_test: allocations from Rust at known lines, for the
//! allocprof selftest of Rust call sites (`rust_sites_test`).
//!
//! Its init allocates with `KVec`, `KBox`, `VBox` and `Arc` and keeps the
//! memory until the module is unloaded.  For each allocating line it logs
//! `allocprof_rust_test: site LINE KIND SIZE COUNT` (`LINE` from
//! `line!()`): `COUNT` live allocations there, `kmalloc SIZE` an object of
//! the kmalloc cache for `SIZE` bytes, `vmalloc SIZE` a vmalloc area of
//! `SIZE` bytes.  The test computes the figures the line must show from
//! that and the kernel's caches.

use core::mem::{size_of, MaybeUninit};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec, VBox};
use kernel::prelude::*;
use kernel::sync::Arc;

module! {
    type: RustTest,
    name: "allocprof_rust_test",
    author: "allocprof",
    description: "Allocations from Rust at known lines",
    license: "GPL",
}

const BOXES: usize = 3;
const PUSHED: u64 = 1000;
const VBOXES: usize = 2;
const VBOX_BYTES: usize = 16384;

/// The layout of `Arc`'s allocation (`ArcInner` in rust/kernel/sync/arc.rs):
/// the reference count, then the data.
#[repr(C)]
struct ArcAllocation {
    _refcount: u32,
    _data: [u8; 100],
}

/// What the lines below allocate.
type Boxed = KBox<[u8; 200]>;
type Big = VBox<MaybeUninit<[u8; VBOX_BYTES]>>;

struct RustTest {
    _boxes: KVec<Boxed>,
    _vec: KVec<u64>,
    _vboxes: KVec<Big>,
    _arc: Arc<[u8; 100]>,
}

fn site(line: u32, kind: &str, size: usize, count: usize) {
    pr_info!("site {line} {kind} {size} {count}\n");
}

impl kernel::Module for RustTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // `at`: the line of the allocation that follows.
        let at = line!() + 1;
        let mut boxes = KVec::with_capacity(BOXES, GFP_KERNEL)?;
        site(at, "kmalloc", BOXES * size_of::<Boxed>(), 1);
        let at = line!() + 2;
        for _ in 0..BOXES {
            boxes.push(KBox::new([0u8; 200], GFP_KERNEL)?, GFP_KERNEL)?;
        }
        site(at, "kmalloc", 200, BOXES);

        // Grows by reallocation: one object of its final capacity is left.
        let mut vec = KVec::new();
        let at = line!() + 2;
        for i in 0..PUSHED {
            vec.push(i, GFP_KERNEL)?;
        }
        site(at, "kmalloc", vec.capacity() * size_of::<u64>(), 1);

        let at = line!() + 1;
        let mut vboxes = KVec::with_capacity(VBOXES, GFP_KERNEL)?;
        site(at, "kmalloc", VBOXES * size_of::<Big>(), 1);
        let at = line!() + 2;
        for _ in 0..VBOXES {
            let b = VBox::<[u8; VBOX_BYTES]>::new_uninit(GFP_KERNEL)?;
            vboxes.push(b, GFP_KERNEL)?;
        }
        site(at, "vmalloc", VBOX_BYTES, VBOXES);

        let at = line!() + 1;
        let arc = Arc::new([0u8; 100], GFP_KERNEL)?;
        site(at, "kmalloc", size_of::<ArcAllocation>(), 1);

        Ok(RustTest {
            _boxes: boxes,
            _vec: vec,
            _vboxes: vboxes,
            _arc: arc,
        })
    }
}
