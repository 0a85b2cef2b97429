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
//!
//! Writing `alloc` to `/sys/kernel/debug/allocprof_rust_test/trigger` makes
//! the same kinds of allocations again at other lines ([`Extra::new`]),
//! logged as `trigger-site LINE KIND SIZE COUNT`; writing `free` frees
//! them.  `EBUSY` for `alloc` while they are held, `EINVAL` for other
//! words.  Writing `kvgrow` grows a `KVVec` by pushes on one line, each
//! growth a `kvrealloc()`, and frees it ([`kv_grow`]): `ENOMEM` if a push
//! fails, else it logs `kvgrow-site LINE` (for `fault_test`).

use core::mem::{size_of, MaybeUninit};
use core::ptr::{self, NonNull};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVVec, KVec, VBox};
use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::UserSlice;
use kernel::{bindings, c_str, new_mutex};

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
/// `kv_grow`'s pushes: 8 growths of its `KVVec` (capacity 1 to 128).
const KV_PUSHED: u64 = 100;

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
    /// The trigger file, removed on drop before what it allocated is freed.
    _trigger: Trigger,
}

fn site(line: u32, kind: &str, size: usize, count: usize) {
    pr_info!("site {line} {kind} {size} {count}\n");
}

fn trigger_site(line: u32, kind: &str, size: usize, count: usize) {
    pr_info!("trigger-site {line} {kind} {size} {count}\n");
}

/// What the trigger allocates: the kinds of the init's allocations, at
/// other lines.
struct Extra {
    _boxes: KVec<Boxed>,
    _vec: KVec<u64>,
    _vbox: Big,
    _arc: Arc<[u8; 100]>,
}

impl Extra {
    /// Not inlined, so that its lines are counted for `Extra::new`.
    #[inline(never)]
    fn new() -> Result<Self> {
        let at = line!() + 1;
        let mut boxes = KVec::with_capacity(BOXES, GFP_KERNEL)?;
        trigger_site(at, "kmalloc", BOXES * size_of::<Boxed>(), 1);
        let at = line!() + 2;
        for _ in 0..BOXES {
            boxes.push(KBox::new([1u8; 200], GFP_KERNEL)?, GFP_KERNEL)?;
        }
        trigger_site(at, "kmalloc", 200, BOXES);

        let mut vec = KVec::new();
        let at = line!() + 2;
        for i in 0..PUSHED / 2 {
            vec.push(i, GFP_KERNEL)?;
        }
        trigger_site(at, "kmalloc", vec.capacity() * size_of::<u64>(), 1);

        let at = line!() + 1;
        let vbox = VBox::<[u8; VBOX_BYTES]>::new_uninit(GFP_KERNEL)?;
        trigger_site(at, "vmalloc", VBOX_BYTES, 1);

        let at = line!() + 1;
        let arc = Arc::new([1u8; 100], GFP_KERNEL)?;
        trigger_site(at, "kmalloc", size_of::<ArcAllocation>(), 1);

        Ok(Extra {
            _boxes: boxes,
            _vec: vec,
            _vbox: vbox,
            _arc: arc,
        })
    }
}

/// A `KVVec` grown by pushes on one line, then freed: each growth is one
/// `kvrealloc()` there (a `krealloc()` try, a `kvmalloc()` fallback).
#[inline(never)]
fn kv_grow() -> Result {
    let mut vec = KVVec::new();
    let at = line!() + 2;
    for i in 0..KV_PUSHED {
        vec.push(i, GFP_KERNEL)?;
    }
    pr_info!("kvgrow-site {at}\n");
    Ok(())
}

/// `/sys/kernel/debug/allocprof_rust_test/trigger`, with what it allocated.
///
/// # Invariants
///
/// `dir` is a debugfs directory holding one file, `trigger`, made with
/// `ops` and with `extra`'s mutex as its data; both outlive the directory,
/// which drop removes first.
struct Trigger {
    dir: NonNull<bindings::dentry>,
    /// The file's operations, kept while the file exists.
    _ops: KBox<bindings::file_operations>,
    extra: Pin<KBox<Mutex<Option<Extra>>>>,
}

// SAFETY: The dentry is only handed to `debugfs_remove`, from any thread;
// the rest is owned data.
unsafe impl Send for Trigger {}
// SAFETY: Shared references give access to nothing.
unsafe impl Sync for Trigger {}

impl Trigger {
    fn new(module: &'static ThisModule) -> Result<Self> {
        let extra = KBox::pin_init(new_mutex!(None), GFP_KERNEL)?;
        // SAFETY: All-zero is a valid `file_operations`: no operations.
        let mut ops: KBox<bindings::file_operations> =
            KBox::new(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;
        ops.owner = module.as_ptr();
        ops.write = Some(trigger_write);
        // SAFETY: A static name, no parent (debugfs's root).
        let dir = from_err_ptr(unsafe {
            bindings::debugfs_create_dir(
                c_str!("allocprof_rust_test").as_char_ptr(),
                ptr::null_mut(),
            )
        })?;
        let dir = NonNull::new(dir).ok_or(ENOMEM)?;
        let data = ptr::from_ref::<Mutex<Option<Extra>>>(&extra)
            .cast_mut()
            .cast();
        // SAFETY: The name is static; `ops` and `extra` are kept until drop,
        // which removes the directory and its file first.
        let file = from_err_ptr(unsafe {
            bindings::debugfs_create_file(
                c_str!("trigger").as_char_ptr(),
                0o200,
                dir.as_ptr(),
                data,
                &*ops,
            )
        });
        let trigger = Trigger {
            dir,
            _ops: ops,
            extra,
        };
        // INVARIANT: The one file was made with `ops` and `extra`'s mutex.
        file.map(|_| trigger)
    }
}

impl Drop for Trigger {
    fn drop(&mut self) {
        // SAFETY: `dir` is ours (type invariant); debugfs_remove() waits for
        // the file's running writes.
        unsafe { bindings::debugfs_remove(self.dir.as_ptr()) };
        self.extra.lock().take();
    }
}

/// The trigger file's `write`: `alloc`, `free` or `kvgrow`.
///
/// # Safety
///
/// Called by debugfs for a write to the file [`Trigger::new`] made.
unsafe extern "C" fn trigger_write(
    file: *mut bindings::file,
    buf: *const kernel::ffi::c_char,
    count: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: The file's inode holds the mutex given to
    // `debugfs_create_file()` (`Trigger`'s invariant), which lives until
    // the file is removed; debugfs_remove() waits for this write.
    let extra = unsafe { &*(*(*file).f_inode).i_private.cast::<Mutex<Option<Extra>>>() };
    let mut word = [0u8; 8];
    let n = count.min(word.len());
    let done = UserSlice::new(buf as usize, n)
        .reader()
        .read_slice(&mut word[..n])
        .and_then(|()| {
            let mut held = extra.lock();
            match word[..n].strip_suffix(b"\n").unwrap_or(&word[..n]) {
                b"alloc" if held.is_some() => Err(EBUSY),
                b"alloc" => {
                    *held = Some(Extra::new()?);
                    Ok(())
                }
                b"free" => {
                    held.take();
                    Ok(())
                }
                b"kvgrow" => kv_grow(),
                _ => Err(EINVAL),
            }
        });
    match done {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

impl kernel::Module for RustTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
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
            _trigger: Trigger::new(module)?,
        })
    }
}
