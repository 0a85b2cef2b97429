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
//!
//! Its init also allocates from functions whose symbols are hard for the
//! kernel's reader of Rust v0 symbol names (lib/alloc_tag_rust.c, which
//! names each Rust line's function; issue #41, finding 11): one object of
//! [`V0_BYTES`] bytes each, at a line logged as `v0-CASE-site LINE kmalloc
//! SIZE 1` ([`V0Case`]).

use core::mem::{size_of, MaybeUninit};
use core::ptr::{self, NonNull};
use kernel::alloc::{flags::GFP_KERNEL, AllocError, KBox, KVVec, KVec, VBox};
use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::UserSlice;
use kernel::{bindings, c_str, new_mutex};

module! {
    type: RustTest,
    name: "allocprof_rust_test",
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

/// What each function of the symbol reader's cases allocates.
const V0_BYTES: usize = 24;
type V0Obj = KBox<[u8; V0_BYTES]>;

/// The cases of the v0 symbol reader (lib/alloc_tag_rust.c), by the word
/// of their log line, `v0-WORD-site`; rust_sites_test knows the function
/// name each line must show.  The reader takes a step for each path and
/// type it reads, at most `ALLOC_TAG_RUST_V0_STEPS` (4096) for a symbol,
/// the copies it makes to follow path backrefs included, and goes at most
/// 32 deep; the steps and depths below are those its code, run on the
/// host, took for this module's symbols (scripts/v0-names).
#[derive(Clone, Copy)]
enum V0Case {
    /// [`deep`] with [`T16`], tuples of three nested 16 deep: the symbol
    /// spells each level once and names the other two by type backrefs,
    /// which the reader reads past (52 steps, depth 18).
    Deep,
    /// [`wide`] with 5 levels of [`level3`]'s closures: each level's second
    /// and third closure name their parent path, the previous level in
    /// full, by a path backref, which the reader follows, so that each
    /// level triples its reading (3147 steps, depth 30).
    Wide,
    /// [`too_wide`] with 5 levels of [`level4`]'s closures: the reading
    /// would take 11935 steps; the reader gives up at step 4097 and the line is
    /// named after the next frame, [`v0_cases`].
    Steps,
    /// [`too_deep`] with [`D40`]: the reader gives up at depth 33, and the line
    /// is named after [`v0_cases`] too.
    Depth,
    /// A line in a closure in a closure of [`closures`], each called
    /// through `dyn Fn` so that neither is inlined: the symbol ends in two
    /// empty names, `..8closures00`, read as `{closure}::{closure}` (the
    /// reader once read `00` as one length and gave up).
    Closures,
}

impl V0Case {
    fn word(self) -> &'static str {
        match self {
            V0Case::Deep => "deep",
            V0Case::Wide => "wide",
            V0Case::Steps => "steps",
            V0Case::Depth => "depth",
            V0Case::Closures => "closures",
        }
    }
}

/// Logs `case`'s line `line` and hands on its object.  Each case has a
/// function of its own, and so a line of its own: a Rust line's call site
/// is its file and line, whatever the instance of a generic function.
fn v0_site(case: V0Case, line: u32, obj: Result<V0Obj, AllocError>) -> Result<V0Obj> {
    let obj = obj?;
    pr_info!("v0-{}-site {line} kmalloc {V0_BYTES} 1\n", case.word());
    Ok(obj)
}

// The generic parameters below are there only to be named in the symbols.
// Not inlined, so that each line is counted for the frame of its function,
// whose symbol names `T`.

/// [`V0Case::Deep`]'s object.
#[allow(clippy::extra_unused_type_parameters)]
#[inline(never)]
fn deep<T>() -> Result<V0Obj> {
    v0_site(V0Case::Deep, line!(), KBox::new([0u8; V0_BYTES], GFP_KERNEL))
}

/// [`V0Case::Depth`]'s object.
#[allow(clippy::extra_unused_type_parameters)]
#[inline(never)]
fn too_deep<T>() -> Result<V0Obj> {
    v0_site(V0Case::Depth, line!(), KBox::new([0u8; V0_BYTES], GFP_KERNEL))
}

/// [`V0Case::Wide`]'s object, for a type given by a value (closures cannot
/// be named).
#[inline(never)]
fn wide<T>(_: T) -> Result<V0Obj> {
    v0_site(V0Case::Wide, line!(), KBox::new([0u8; V0_BYTES], GFP_KERNEL))
}

/// [`V0Case::Steps`]'s object.
#[inline(never)]
fn too_wide<T>(_: T) -> Result<V0Obj> {
    v0_site(V0Case::Steps, line!(), KBox::new([0u8; V0_BYTES], GFP_KERNEL))
}

type T1 = (u8, u8, u8);
type T2 = (T1, T1, T1);
type T3 = (T2, T2, T2);
type T4 = (T3, T3, T3);
type T5 = (T4, T4, T4);
type T6 = (T5, T5, T5);
type T7 = (T6, T6, T6);
type T8 = (T7, T7, T7);
type T9 = (T8, T8, T8);
type T10 = (T9, T9, T9);
type T11 = (T10, T10, T10);
type T12 = (T11, T11, T11);
type T13 = (T12, T12, T12);
type T14 = (T13, T13, T13);
type T15 = (T14, T14, T14);
/// 3^16 `u8`s, a type only: never made.
type T16 = (T15, T15, T15);

/// `$t` in `(..,)` once for each token after the `;`.
macro_rules! nest {
    ($t:ty;) => { $t };
    ($t:ty; $x:tt $($rest:tt)*) => { nest!(($t,); $($rest)*) };
}
/// `u8` in 40 1-tuples.
type D40 = nest!(u8; x x x x x x x x x x x x x x x x x x x x
                     x x x x x x x x x x x x x x x x x x x x);

/// Three closures, whose types have the generic arguments of
/// `level3::<T>`: a symbol that names the tuple spells the path
/// `level3::<T>` in the first closure's and refers back to it in the other
/// two's.
fn level3<T>(_: T) -> (impl Fn(), impl Fn(), impl Fn()) {
    (|| {}, || {}, || {})
}

/// [`level3`] with four closures.
fn level4<T>(_: T) -> (impl Fn(), impl Fn(), impl Fn(), impl Fn()) {
    (|| {}, || {}, || {}, || {})
}

/// Calls `f` through a `dyn Fn` the optimiser cannot see through, so that
/// the closure behind it is a function of its own.
fn call_dyn<R>(f: &dyn Fn() -> R) -> R {
    core::hint::black_box(f)()
}

/// One object at a line in a closure in a closure.
#[inline(never)]
fn closures() -> Result<V0Obj> {
    let outer = || {
        let inner = || v0_site(V0Case::Closures, line!(), KBox::new([0u8; V0_BYTES], GFP_KERNEL));
        call_dyn(&inner)
    };
    call_dyn(&outer)
}

/// The objects of the v0 cases, kept until unload.  Not inlined: the lines
/// of the symbols the reader gives up on are named after it.
#[inline(never)]
fn v0_cases() -> Result<[V0Obj; 5]> {
    let deep16 = deep::<T16>()?;
    let wide3 = wide(level3(level3(level3(level3(level3(0u8))))))?;
    let wide4 = too_wide(level4(level4(level4(level4(level4(0u8))))))?;
    let depth40 = too_deep::<D40>()?;
    Ok([deep16, wide3, wide4, depth40, closures()?])
}

struct RustTest {
    _boxes: KVec<Boxed>,
    _vec: KVec<u64>,
    _vboxes: KVec<Big>,
    _arc: Arc<[u8; 100]>,
    /// The objects of the v0 symbol reader's cases ([`V0Case`]).
    _v0: [V0Obj; 5],
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
            #[cfg(not(allocprof_tags))]
            let f = bindings::debugfs_create_file(
                c_str!("trigger").as_char_ptr(),
                0o200,
                dir.as_ptr(),
                data,
                &*ops,
            );
            // 7.3's `debugfs_create_file()` is a macro over this one.
            #[cfg(allocprof_tags)]
            let f = bindings::debugfs_create_file_full(
                c_str!("trigger").as_char_ptr(),
                0o200,
                dir.as_ptr(),
                data,
                ptr::null(),
                &*ops,
            );
            f
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
    // 7.3's user pointers are a type of their own.
    #[cfg(allocprof_tags)]
    let buf = kernel::uaccess::UserPtr::from_addr(buf as usize);
    #[cfg(not(allocprof_tags))]
    let buf = buf as usize;
    let done = UserSlice::new(buf, n)
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

        let v0 = v0_cases()?;

        Ok(RustTest {
            _boxes: boxes,
            _vec: vec,
            _vboxes: vboxes,
            _arc: arc,
            _v0: v0,
            _trigger: Trigger::new(module)?,
        })
    }
}
