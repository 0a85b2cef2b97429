// SPDX-License-Identifier: GPL-2.0

//! The patched kernel's allocation-profiling back-end interface
//! (`include/linux/alloc_tag_backend.h`): code-tag sections, the hooks, and
//! registration.
//!
//! Two kernels, two interfaces (`src/Kbuild` tells them apart,
//! Documentation/linux-7.3-module.md): on 6.12's series (the default arm)
//! the back end keeps its own reference of each allocation, a 2-byte slot
//! per object ([`ObjSlot`]) and the page array, and the free hooks are
//! handed those; on 7.3's (`allocprof_tags`) the kernel keeps the
//! references in its own places and hands every free hook the tag, and a
//! module's tags stay in memory after it unloads while the back end says
//! they are used (`section_used`).  The features of the 7.3 series' later
//! patches (`allocprof_fail`, `allocprof_rust_sites`,
//! `allocprof_count_existing`, `allocprof_count_inline`) are tested one by
//! one; without them the functions below do nothing, as said at each.

use core::{
    marker::PhantomData,
    pin::Pin,
    ptr,
    sync::atomic::{AtomicPtr, AtomicU64, Ordering},
};
use kernel::{
    alloc::{Allocator, Box, KBox, Vec},
    bindings,
    error::{code::EBUSY, to_result, Result},
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
    types::Opaque,
};

use super::mm::Pfn;

/// A number that changes whenever the lines of the kernel's pool of tags
/// for Rust lines change (`lib/alloc_tag_rust.c`): a line gets a tag, the
/// module of some lines goes away or is loaded again.
/// Without the kernel's pool (`allocprof_rust_sites`), always 0.
pub(crate) fn rust_changes() -> u32 {
    #[cfg(allocprof_rust_sites)]
    // SAFETY: A plain read of a counter, from any context.
    return unsafe { bindings::alloc_tag_rust_changes() };
    #[cfg(not(allocprof_rust_sites))]
    0
}

/// The call site one of the back end's own allocations is counted for: the
/// tag of the Rust line that allocated it, taken where it allocates so that
/// [`Registration::count_own`] can count the allocation once profiling is
/// on (the hooks do not see what the back end allocates before it
/// registers).
///
/// # Invariants
///
/// `0` is a tag of vmlinux (of its pool for Rust lines, or the one the pool
/// falls back to), which is never freed; NULL on a kernel without that pool
/// (`allocprof_rust_sites`), where it is never handed to the kernel.
#[derive(Clone, Copy)]
pub(crate) struct OwnSite(*mut bindings::alloc_tag);

// SAFETY: The address of a tag that lives as long as the kernel, only ever
// handed back to the kernel.
unsafe impl Send for OwnSite {}
// SAFETY: As for `Send`: nothing is read or written through it here.
unsafe impl Sync for OwnSite {}

impl OwnSite {
    /// The site of the line that called the caller: in a `#[track_caller]`
    /// constructor, the line its allocations are counted for (the kernel
    /// crate's allocating functions are `#[track_caller]` too, so they are
    /// handed the same `Location`).  Makes the line's tag if it has none yet,
    /// named after the first function of allocprof in the call chain.
    /// Without the kernel's pool (`allocprof_rust_sites`), no site:
    /// [`Registration::count_own`] then counts nothing.
    #[track_caller]
    #[inline(always)]
    pub(crate) fn caller() -> Self {
        // INVARIANT: Never handed to the kernel: `count_own` needs the
        // kernel's pool too (`allocprof_count_existing` comes after it).
        #[cfg(not(allocprof_rust_sites))]
        return Self(ptr::null_mut());
        #[cfg(allocprof_rust_sites)]
        Self::of(core::panic::Location::caller())
    }

    /// The site of `loc`.
    #[cfg(allocprof_rust_sites)]
    #[inline(always)]
    fn of(loc: &'static core::panic::Location<'static>) -> Self {
        // SAFETY: A `Location` is static: the kernel keeps its address as
        // the key of its tag and reads its file and line through the kernel
        // crate's `rust_alloc_location()`.  Any context.
        let tag = unsafe { bindings::alloc_tag_rust_tag(ptr::from_ref(loc).cast()) };
        // INVARIANT: The kernel returns a tag of vmlinux.
        Self(tag)
    }
}

/// The memory of a box or vector of the kernel crate (kmalloc, vmalloc or
/// kvmalloc) or of a [`PerCpuArray`](super::percpu::PerCpuArray), borrowed
/// for `'a` from its owner, for [`Registration::count_own`].
///
/// # Invariants
///
/// `ptr` is the start of a live allocation, for `'a`: of kmalloc, vmalloc
/// or kvmalloc if `percpu` is false, of the per-CPU allocator if it is true.
pub(crate) struct OwnMemory<'a> {
    ptr: *mut c_void,
    percpu: bool,
    _owner: PhantomData<&'a ()>,
}

impl<'a> OwnMemory<'a> {
    /// The allocation of `b`, if it has one (not for a zero-sized `T`).
    pub(crate) fn of_box<T: ?Sized, A: Allocator>(b: &'a Box<T, A>) -> Option<Self> {
        let t: &T = b;
        // INVARIANT: A box of non-zero size owns an allocation of its
        // allocator, which starts with its value, as long as it is borrowed.
        (core::mem::size_of_val(t) != 0).then_some(Self {
            ptr: ptr::from_ref(t).cast::<c_void>().cast_mut(),
            percpu: false,
            _owner: PhantomData,
        })
    }

    /// The allocation of `v`, if it has one (a capacity of non-zero size).
    pub(crate) fn of_vec<T, A: Allocator>(v: &'a Vec<T, A>) -> Option<Self> {
        // INVARIANT: A vector whose capacity has non-zero size owns an
        // allocation of its allocator that starts at its first element, as
        // long as it is borrowed (it cannot grow meanwhile).
        (v.capacity() != 0 && core::mem::size_of::<T>() != 0).then_some(Self {
            ptr: v.as_ptr().cast::<c_void>().cast_mut(),
            percpu: false,
            _owner: PhantomData,
        })
    }

    /// A per-CPU allocation at per-CPU address `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is what `__alloc_percpu` returned, not freed for `'a`.
    pub(crate) unsafe fn percpu(ptr: *mut c_void) -> Self {
        // INVARIANT: The caller guarantees it.
        Self {
            ptr,
            percpu: true,
            _owner: PhantomData,
        }
    }
}

/// One call site's `struct alloc_tag` in an `alloc_tags` section, valid for
/// `'a`: borrowed from the section's [`Tags`], or handed to a hook for the
/// call.  The kernel may set the tag's flags, and hooks read its back-end
/// word while the control file changes it, so the tag is [`Opaque`]: its
/// fields are read one by one, never through a reference to the whole.
#[derive(Clone, Copy)]
pub(crate) struct Tag<'a>(&'a Opaque<bindings::alloc_tag>);

/// Where a call site is: what `/proc/allocinfo` prints of it.
pub(crate) struct Site<'a> {
    pub(crate) file: &'a [u8],
    pub(crate) line: u32,
    /// The module, for call sites in loadable modules.
    pub(crate) module: Option<&'a [u8]>,
    pub(crate) function: &'a [u8],
}

/// A tag's names and line, which the kernel never changes once they are
/// set: a tag of an image has them when the image is loaded, one of the
/// kernel's pool of Rust lines gets them once, filename last
/// ([`Tag::named`]).
///
/// # Invariants
///
/// Each name is NULL or a NUL-terminated string that lives for `'a`.
#[derive(Clone, Copy)]
struct Names<'a> {
    file: *const c_char,
    function: *const c_char,
    module: *const c_char,
    line: u32,
    _tag: PhantomData<&'a ()>,
}

/// One of a tag's names.
#[derive(Clone, Copy)]
enum Name {
    File,
    Function,
    Module,
}

impl<'a> Names<'a> {
    /// The string of `name`: NULL or NUL-terminated (type invariant).
    fn ptr(self, name: Name) -> *const c_char {
        match name {
            Name::File => self.file,
            Name::Function => self.function,
            Name::Module => self.module,
        }
    }

    /// The bytes of `name`, or `?` for NULL.
    fn bytes(self, name: Name) -> &'a [u8] {
        let name = self.ptr(name);
        if name.is_null() {
            return b"?";
        }
        // SAFETY: `name` is a NUL-terminated string that lives for `'a`
        // (type invariant).
        unsafe { super::compat::c_bytes(name) }
    }

    /// Whether `name` (`?` for NULL), or its last `keep` bytes if it is
    /// longer, is `template`.  Compares the bytes up to the first
    /// difference: the length of a name is only measured when a
    /// `keep`-byte template matched its beginning or a long name has to be
    /// checked.
    fn is(self, which: Name, template: &[u8], keep: usize) -> bool {
        let name = self.ptr(which);
        if name.is_null() {
            return template == b"?";
        }
        // The bytes of the string up to and with its NUL.
        let byte = |i: usize| {
            // SAFETY: `name` is a NUL-terminated string (type invariant),
            // read no further than its first NUL (below).
            unsafe { *name.add(i) }
        };
        let mut i = 0;
        while i < template.len() {
            let b = byte(i);
            if b != template[i] || b == 0 {
                break;
            }
            i += 1;
        }
        // The bytes before `i` were not NUL, so `i` is in the string (its
        // NUL at most).
        if i == template.len() && byte(i) == 0 {
            return true;
        }
        if template.len() != keep {
            return false;
        }
        let name = self.bytes(which);
        name.len() > keep && &name[name.len() - keep..] == template
    }
}

impl<'a> Tag<'a> {
    /// The back end's word in the tag: written by the control file and
    /// read by hooks at any time, so an atomic.
    #[inline(always)]
    fn backend(self) -> &'a AtomicU64 {
        // `backend` is an aligned `unsigned long`, which has the layout of
        // `AtomicU64` on 64-bit machines; only the back end accesses it,
        // always through this.
        // SAFETY: So it is a valid `AtomicU64` as long as the tag, for `'a`
        // (type invariant).
        unsafe { AtomicU64::from_ptr(ptr::addr_of_mut!((*self.0.get()).backend).cast()) }
    }

    /// The back end's word in the tag: our compact call-site id, with the
    /// call site's control flags above it.
    #[inline]
    pub(crate) fn word(self) -> u64 {
        self.backend().load(Ordering::Relaxed)
    }

    /// Sets the tag's word; hooks read it at any time, whole.
    pub(crate) fn set_word(self, word: u64) {
        self.backend().store(word, Ordering::Relaxed)
    }

    /// Sets the tag's word to `new` if it is still `old`; else the word it
    /// has.
    pub(crate) fn replace_word(self, old: u64, new: u64) -> core::result::Result<(), u64> {
        self.backend()
            .compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed)
            .map(drop)
    }

    /// Whether the kernel marked the call site inaccurate
    /// (`CODETAG_FLAG_INACCURATE`: an object without a slot, an allocation
    /// the boot record could not hold).
    pub(crate) fn inaccurate(self) -> bool {
        // SAFETY: The tag is valid for `'a` (type invariant); the kernel
        // only ever sets bits of the aligned word (the flag, and the boot
        // record's id above it), with plain stores.
        let flags = unsafe { ptr::read_volatile(ptr::addr_of!((*self.0.get()).ct.flags)) };
        flags & bindings::CODETAG_FLAG_INACCURATE != 0
    }

    /// Whether the call site has its names: every tag of a loaded image
    /// has them, but for the free ones of the kernel's pool of Rust call
    /// sites (`lib/alloc_tag_rust.c`), which get theirs, filename last,
    /// when a Rust line first allocates.
    pub(crate) fn named(self) -> bool {
        // `filename` is an aligned pointer, with the layout of an
        // `AtomicPtr`; the kernel publishes it with a release store after
        // the other names.
        // SAFETY: The tag is valid for `'a` (type invariant).
        let file = unsafe {
            AtomicPtr::from_ptr(
                ptr::addr_of_mut!((*self.0.get()).ct.filename).cast::<*mut c_char>(),
            )
        };
        !file.load(Ordering::Acquire).is_null()
    }

    /// Whether the tag is one of the kernel's pool of Rust lines whose
    /// module is not loaded: shown only while it has live allocations, as
    /// an unloaded module's own call sites.
    /// Never without the pool (`allocprof_rust_sites`).
    pub(crate) fn gone(self) -> bool {
        #[cfg(not(allocprof_rust_sites))]
        return false;
        // Only a pool tag of a module can be: the tags of vmlinux have no
        // module name, so most tags need no call.
        #[cfg(allocprof_rust_sites)]
        return !self.names().module.is_null()
            // SAFETY: The tag is valid for `'a` (type invariant); the kernel
            // only compares its address and reads its own bitmap.
            && unsafe { bindings::alloc_tag_rust_gone(self.0.get()) };
    }

    /// The tag's names and line (all NULL and 0 for a free tag of the
    /// kernel's pool of Rust lines).
    fn names(self) -> Names<'a> {
        let tag = self.0.get();
        let (file, function, module, line) = if self.named() {
            // These fields are not written once the tag has its names: the
            // tags of an image have them when it is loaded, a tag of the
            // pool once its filename is set, which `named` read with
            // acquire (the kernel writes `flags`, which is not read here:
            // no reference to the whole `codetag` is made).
            // SAFETY: So they can be read while the tag is valid, for `'a`.
            unsafe {
                let ct = ptr::addr_of!((*tag).ct);
                ((*ct).filename, (*ct).function, (*ct).modname, (*ct).lineno)
            }
        } else {
            (ptr::null(), ptr::null(), ptr::null(), 0)
        };
        // INVARIANT: A code tag's names are NULL or strings of its image
        // (the pool's are in vmlinux), which lives as long as the tag.
        Names {
            file,
            function,
            module,
            line,
            _tag: PhantomData,
        }
    }

    /// Whether the file (or its last `keep` bytes) is `template`.
    pub(crate) fn file_is(self, template: &[u8], keep: usize) -> bool {
        self.names().is(Name::File, template, keep)
    }

    /// Whether the function (or its last `keep` bytes) is `template`.
    pub(crate) fn function_is(self, template: &[u8], keep: usize) -> bool {
        self.names().is(Name::Function, template, keep)
    }

    /// The call site's file.
    pub(crate) fn file(self) -> &'a [u8] {
        self.names().bytes(Name::File)
    }

    /// The call site's function.
    pub(crate) fn function(self) -> &'a [u8] {
        self.names().bytes(Name::Function)
    }

    /// The call site's module, for one in a loadable module.
    pub(crate) fn module(self) -> Option<&'a [u8]> {
        let names = self.names();
        (!names.module.is_null()).then(|| names.bytes(Name::Module))
    }

    /// The call site's line.
    pub(crate) fn line(self) -> u32 {
        self.names().line
    }

    /// The call site's file, line, module and function.
    pub(crate) fn site(self) -> Site<'a> {
        Site {
            file: self.file(),
            line: self.line(),
            module: self.module(),
            function: self.function(),
        }
    }
}

/// The tags of one `alloc_tags` section: vmlinux's or a module's.
///
/// # Invariants
///
/// `start..start + len` is a section the kernel reported to `section_add`.
pub(crate) struct TagSection {
    module: *mut bindings::module,
    start: *mut bindings::alloc_tag,
    len: usize,
}

// SAFETY: The section is plain data owned by the kernel; the raw pointers
// are only dereferenced while the section is registered, from any thread.
unsafe impl Send for TagSection {}

impl TagSection {
    /// Which image the section belongs to (0 for vmlinux), for matching
    /// `section_del` with `section_add`.
    pub(crate) fn owner(&self) -> usize {
        self.module as usize
    }

    /// The number of call sites.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The section's tags, for as long as `self` is borrowed.
    ///
    /// # Safety
    ///
    /// The section is registered (its `Backend::section_del` has not
    /// returned) for as long as the result is used.
    pub(crate) unsafe fn tags(&self) -> Tags<'_> {
        if self.len == 0 {
            return Tags(&[]);
        }
        // SAFETY: `start..start + len` is a section (type invariant), of
        // `len` tags, not NULL, and live for the borrow (the caller
        // guarantees); `Opaque` is transparent over the tag.
        Tags(unsafe { core::slice::from_raw_parts(self.start.cast(), self.len) })
    }
}

/// The tags of a section, valid for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct Tags<'a>(&'a [Opaque<bindings::alloc_tag>]);

impl<'a> Tags<'a> {
    /// The number of tags.
    pub(crate) fn len(self) -> usize {
        self.0.len()
    }

    /// The `i`-th tag, if the section has it.
    pub(crate) fn get(self, i: usize) -> Option<Tag<'a>> {
        self.0.get(i).map(Tag)
    }

    /// The tags in order.
    pub(crate) fn iter(self) -> impl Iterator<Item = Tag<'a>> {
        self.0.iter().map(Tag)
    }
}

/// A slab or percpu object's slot (`struct alloc_tag_slot`): 16 bits the
/// kernel keeps for the back end with every object, 0 when it makes them
/// and after a back end unregistered.  6.12's series only.
#[cfg(not(allocprof_tags))]
pub(crate) struct ObjSlot<'a>(&'a core::sync::atomic::AtomicU16);

#[cfg(not(allocprof_tags))]
impl ObjSlot<'_> {
    /// The slot's value.
    #[inline]
    pub(crate) fn get(&self) -> u16 {
        self.0.load(Ordering::Relaxed)
    }

    /// Replaces the slot's value.
    #[inline]
    pub(crate) fn set(&self, v: u16) {
        self.0.store(v, Ordering::Relaxed)
    }

    /// The slot's value, leaving 0 in its place.
    #[inline]
    pub(crate) fn take(&self) -> u16 {
        let v = self.get();
        self.set(0);
        v
    }
}

/// A slab or percpu object's reference (`union codetag_ref`), which the
/// kernel sets before `obj_alloc` and clears after `obj_free`: the back end
/// does not read or write it, and may use its address as the object's
/// identity while the object lives.  7.3's series only.
#[cfg(allocprof_tags)]
#[derive(Clone, Copy)]
pub(crate) struct ObjRef<'a>(*mut bindings::codetag_ref, PhantomData<&'a ()>);

#[cfg(allocprof_tags)]
impl ObjRef<'_> {
    /// The reference's address: the object's identity while it lives.
    pub(crate) fn addr(self) -> usize {
        self.0 as usize
    }
}

/// The tags of a module that unloaded, which the kernel keeps while the
/// back end says it still counts allocations for them (`section_used`).
/// 7.3's series only.
///
/// # Invariants
///
/// `start..start + len` are tags the kernel keeps for `'a`.
#[cfg(allocprof_tags)]
pub(crate) struct TagRange<'a> {
    start: *mut bindings::alloc_tag,
    len: usize,
    _tags: PhantomData<&'a ()>,
}

#[cfg(allocprof_tags)]
impl<'a> TagRange<'a> {
    /// The tags.
    pub(crate) fn tags(&self) -> Tags<'a> {
        if self.len == 0 {
            return Tags(&[]);
        }
        // SAFETY: `start..start + len` are live tags for `'a` (type
        // invariant), not NULL; `Opaque` is transparent over the tag.
        Tags(unsafe { core::slice::from_raw_parts(self.start.cast(), self.len) })
    }
}

/// An allocation-profiling back end: the hooks the patched kernel calls,
/// each handed the data of the registration (`Self::Data`).  A back end is
/// a set of hooks: one data type can be registered with different sets
/// (allocprof's debug mode registers hooks that check what they see).
///
/// The hot hooks (all but `section_add`/`section_del`) run in any context
/// with preemption disabled: they must not sleep, allocate or lock.
pub(crate) trait Backend: 'static {
    /// What the hooks work on, owned by the [`Registration`].
    type Data: Send + Sync + 'static;

    /// A code-tag section appeared: vmlinux's or a loading module's.
    fn section_add(data: &Self::Data, section: TagSection) -> Result;
    /// A module's section goes away; its memory is freed after this returns.
    fn section_del(data: &Self::Data, section: TagSection);
    /// `2^order` pages at `pfn` were allocated at the call site `tag`.
    #[cfg(not(allocprof_tags))]
    fn page_alloc(data: &Self::Data, pfn: Pfn, order: u32, tag: Option<Tag<'_>>);
    /// `2^order` pages at `pfn` are freed.
    #[cfg(not(allocprof_tags))]
    fn page_free(data: &Self::Data, pfn: Pfn, order: u32);
    /// The allocation of `2^old_order` pages at `pfn` becomes pieces of
    /// `2^new_order`.
    #[cfg(not(allocprof_tags))]
    fn page_split(data: &Self::Data, pfn: Pfn, old_order: u32, new_order: u32);
    /// Migration: `dst` (`2^order` pages) takes over `src`'s reference.
    #[cfg(not(allocprof_tags))]
    fn page_copy(data: &Self::Data, dst: Pfn, src: Pfn, order: u32);
    /// The reference of the pages at `pfn`, read before a partial free (0:
    /// none).
    #[cfg(not(allocprof_tags))]
    fn page_ref(data: &Self::Data, pfn: Pfn) -> u64;
    /// A partial free removed `nr` pages of the allocation `page_ref` named.
    #[cfg(not(allocprof_tags))]
    fn page_ref_sub(data: &Self::Data, reference: u64, nr: u32);
    /// A slab or percpu object of `size` bytes was allocated at `tag`.
    #[cfg(not(allocprof_tags))]
    fn obj_alloc(data: &Self::Data, slot: ObjSlot<'_>, tag: Option<Tag<'_>>, size: usize);
    /// A slab or percpu object of `size` bytes with a non-zero slot is freed.
    #[cfg(not(allocprof_tags))]
    fn obj_free(data: &Self::Data, slot: ObjSlot<'_>, size: usize);
    /// Whether allocations counted for the tags of `range`, of a module
    /// that unloaded, are still live: the kernel keeps the tags while this
    /// says so.  Called with a spinlock held: must not sleep or lock.
    #[cfg(allocprof_tags)]
    fn section_used(data: &Self::Data, range: TagRange<'_>) -> bool;
    /// `2^order` pages at `pfn` were allocated at the call site `tag`, with
    /// `gfp`: whether they are counted (if not, the kernel clears their
    /// reference, and their free is not handed over).
    #[cfg(allocprof_tags)]
    fn page_alloc(data: &Self::Data, pfn: Pfn, order: u32, tag: Tag<'_>, gfp: Gfp) -> bool;
    /// `2^order` pages at `pfn`, allocated at `tag`, are freed.
    #[cfg(allocprof_tags)]
    fn page_free(data: &Self::Data, pfn: Pfn, order: u32, tag: Tag<'_>);
    /// The allocation of `2^old_order` pages at `pfn` for `tag` becomes
    /// pieces of `2^new_order`, each freed on its own.
    #[cfg(allocprof_tags)]
    fn page_split(data: &Self::Data, pfn: Pfn, old_order: u32, new_order: u32, tag: Tag<'_>);
    /// Migration: the `2^order` pages at `new` and at `old` swapped their
    /// references (the counts do not change).
    #[cfg(allocprof_tags)]
    fn page_swap(data: &Self::Data, new: Pfn, old: Pfn, order: u32);
    /// A partial free took `nr` pages off the allocation at `pfn` at
    /// `tag`, which stays allocated.
    #[cfg(allocprof_tags)]
    fn page_sub(data: &Self::Data, pfn: Pfn, tag: Tag<'_>, nr: u32);
    /// A slab or percpu object of `size` bytes was allocated at `tag`, with
    /// `gfp`: whether it is counted (as for `page_alloc`).
    #[cfg(allocprof_tags)]
    fn obj_alloc(data: &Self::Data, obj: ObjRef<'_>, tag: Tag<'_>, size: usize, gfp: Gfp) -> bool;
    /// A slab or percpu object of `size` bytes allocated at `tag` is freed.
    #[cfg(allocprof_tags)]
    fn obj_free(data: &Self::Data, obj: ObjRef<'_>, tag: Tag<'_>, size: usize);
    /// Print the top `count` call sites after the kernel's memory report.
    fn show_mem(data: &Self::Data, count: u32);
    /// Whether the allocation about to be made at `tag`, of `size` bytes
    /// with `gfp`, is to fail: asked only while [`Registration::fail`] is
    /// on, for a tag whose word has [`FAIL_BIT`], never for `__GFP_NOFAIL`.
    /// Must not allocate.
    fn should_fail(data: &Self::Data, tag: Tag<'_>, kind: FailKind, size: usize, gfp: Gfp) -> bool;
}

/// The bit of a tag's word that the kernel reads: the allocators ask
/// [`Backend::should_fail`] for the call sites that have it.  Without
/// failures by call site in the kernel (`allocprof_fail`) nothing reads it:
/// the same bit, so that the word's layout is one.
#[cfg(allocprof_fail)]
pub(crate) const FAIL_BIT: u64 = bindings::ALLOC_TAG_BACKEND_FAIL as u64;
#[cfg(not(allocprof_fail))]
pub(crate) const FAIL_BIT: u64 = 1 << 20;

/// The entries of a table of counters that the allocators add to
/// themselves ([`Registration::count_inline`]): one for each number a tag's
/// word holds with no other bit set.
#[cfg(all(allocprof_tags, allocprof_count_inline))]
pub(crate) const INLINE_IDS: usize = bindings::ALLOC_TAG_INLINE_IDS;
#[cfg(all(allocprof_tags, not(allocprof_count_inline)))]
pub(crate) const INLINE_IDS: usize = 1 << 16;

/// Which allocator asks [`Backend::should_fail`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailKind {
    /// A slab object, or a bulk of them.
    Slab,
    /// Pages, or a bulk of single pages.
    Pages,
    /// A vmalloc area (one decision for its pages).
    Vmalloc,
    /// A percpu object.
    Percpu,
    /// A `kvmalloc()` (one decision for its kmalloc try and its vmalloc
    /// fallback).
    Kvmalloc,
}

impl FailKind {
    /// The kind the kernel passed, if it is one of these.
    #[cfg(allocprof_fail)]
    fn from_raw(kind: bindings::alloc_tag_fail_kind) -> Option<Self> {
        Some(match kind {
            bindings::alloc_tag_fail_kind_ALLOC_TAG_FAIL_SLAB => Self::Slab,
            bindings::alloc_tag_fail_kind_ALLOC_TAG_FAIL_PAGES => Self::Pages,
            bindings::alloc_tag_fail_kind_ALLOC_TAG_FAIL_VMALLOC => Self::Vmalloc,
            bindings::alloc_tag_fail_kind_ALLOC_TAG_FAIL_PERCPU => Self::Percpu,
            bindings::alloc_tag_fail_kind_ALLOC_TAG_FAIL_KVMALLOC => Self::Kvmalloc,
            _ => return None,
        })
    }

    /// The allocator's name in the fault report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Slab => "slab",
            Self::Pages => "page",
            Self::Vmalloc => "vmalloc",
            Self::Percpu => "percpu",
            Self::Kvmalloc => "kvmalloc",
        }
    }
}

/// An allocation's GFP flags.
#[derive(Clone, Copy)]
pub(crate) struct Gfp(bindings::gfp_t);

impl Gfp {
    /// No flag: what the stack depot grows with for the allocations of
    /// 6.12's series, whose hooks are not handed the allocation's flags.
    pub(crate) const NONE: Gfp = Gfp(0);

    /// The flags the stack depot may take a new pool with for a chain of
    /// an allocation with these flags: never sleeping, and waking kswapd
    /// only if the allocation may; on 7.3 without that bit the depot
    /// neither spins on its lock nor allocates (`gfpflags_allow_spinning()`:
    /// `alloc_pages_nolock()`, `kmalloc_nolock()`).
    pub(crate) fn depot(self) -> bindings::gfp_t {
        let kswapd: bindings::gfp_t = 1 << bindings::___GFP_KSWAPD_RECLAIM_BIT;
        (self.0 & kswapd) | bindings::__GFP_NOWARN
    }

    /// Whether the allocation asks to be charged to a memory cgroup
    /// (`__GFP_ACCOUNT`); `None` on 6.12, whose hooks are not handed the
    /// allocation's flags.
    pub(crate) fn accounted(self) -> Option<bool> {
        #[cfg(allocprof_tags)]
        return Some(self.0 & (1 << bindings::___GFP_ACCOUNT_BIT) != 0);
        #[cfg(not(allocprof_tags))]
        None
    }

    /// Whether the allocation may not fail (`__GFP_NOFAIL`): the kernel
    /// never asks for those; a back end checks again.
    pub(crate) fn nofail(self) -> bool {
        #[cfg(allocprof_fail)]
        return self.0 & bindings::__GFP_NOFAIL != 0;
        #[cfg(not(allocprof_fail))]
        true
    }
}

/// The registered back end's data: set by [`Registration::register`] before
/// the kernel can call a hook, cleared after unregistering returned.
///
/// The one static of the module that holds state, and why: the hooks are
/// static calls (`struct alloc_tag_backend` of the patched kernel) whose
/// arguments are the allocation's, with no data pointer, and the kernel
/// allows one back end at a time.  Every other
/// user of the module's state gets it through the data pointer of its C
/// interface (`proc_create_data()`, `debugfs_create_file()`,
/// `ctl_table.data`); the module parameters' storage is static too, as
/// the kernel writes it before `init` runs.
static REGISTERED: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// The data of the registered back end `B`, for its hooks.
///
/// # Safety
///
/// Only called from a hook of `B`'s table: the kernel calls those only
/// while `B` is registered, that is while `REGISTERED` points to the
/// `B::Data` that a live [`Registration`] owns.
#[inline(always)]
unsafe fn registered<'a, B: Backend>() -> &'a B::Data {
    // SAFETY: By the function's safety requirements `REGISTERED` points to a
    // live, pinned `B::Data`, which is only dropped after unregistering, when
    // no hook runs any more.
    unsafe { &*REGISTERED.load(Ordering::Relaxed).cast::<B::Data>() }
}

/// # Safety
///
/// Called by the kernel with a valid section range.
unsafe extern "C" fn section_add<B: Backend>(
    module: *mut bindings::module,
    start: *mut bindings::alloc_tag,
    stop: *mut bindings::alloc_tag,
) -> c_int {
    // SAFETY: `start..stop` is one section, so both are in the same object.
    let len = unsafe { stop.offset_from(start) } as usize;
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    // INVARIANT: The kernel reports the section `start..stop` here.
    match B::section_add(data, TagSection { module, start, len }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by the kernel with a section it reported before.
unsafe extern "C" fn section_del<B: Backend>(
    module: *mut bindings::module,
    start: *mut bindings::alloc_tag,
    stop: *mut bindings::alloc_tag,
) {
    // SAFETY: `start..stop` is one section, so both are in the same object.
    let len = unsafe { stop.offset_from(start) } as usize;
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    // INVARIANT: The kernel withdraws a section it reported.
    B::section_del(data, TagSection { module, start, len })
}

/// A tag pointer from the kernel as a [`Tag`], for the hook's call.
///
/// # Safety
///
/// `tag` is NULL or points into a section the back end was given, which
/// stays registered for `'a`.
unsafe fn tag_from_raw<'a>(tag: *mut bindings::alloc_tag) -> Option<Tag<'a>> {
    // SAFETY: By the function's safety requirements `tag`, if not NULL, is
    // a valid tag for `'a`; `Opaque` is transparent over it.
    unsafe { tag.cast::<Opaque<bindings::alloc_tag>>().as_ref() }.map(Tag)
}

/// # Safety
///
/// Called by the kernel with a tag of a live section.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_alloc<B: Backend>(
    pfn: c_ulong,
    order: c_uint,
    tag: *mut bindings::alloc_tag,
) {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_raw(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_alloc(data, Pfn::new(pfn), order, tag)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_free<B: Backend>(pfn: c_ulong, order: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_free(data, Pfn::new(pfn), order)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_split<B: Backend>(pfn: c_ulong, old_order: c_uint, new_order: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_split(data, Pfn::new(pfn), old_order, new_order)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_copy<B: Backend>(dst: c_ulong, src: c_ulong, order: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_copy(data, Pfn::new(dst), Pfn::new(src), order)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_ref<B: Backend>(pfn: c_ulong) -> c_ulong {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_ref(data, Pfn::new(pfn)) as c_ulong
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn page_ref_sub<B: Backend>(reference: c_ulong, nr: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_ref_sub(data, reference as u64, nr)
}

/// # Safety
///
/// Called by the kernel with a valid slot, exclusively ours during the call
/// (the object is being allocated or freed), and a tag of a live section.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn obj_alloc<B: Backend>(
    slot: *mut bindings::alloc_tag_slot,
    tag: *mut bindings::alloc_tag,
    size: usize,
) {
    // SAFETY: The slot is a valid, aligned `u16`, which has the layout of
    // `AtomicU16`, and lives for the call.
    let slot =
        ObjSlot(unsafe { core::sync::atomic::AtomicU16::from_ptr(ptr::addr_of_mut!((*slot).id)) });
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_raw(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::obj_alloc(data, slot, tag, size)
}

/// # Safety
///
/// Called by the kernel with a valid slot, as a hook of `B`.
#[cfg(not(allocprof_tags))]
unsafe extern "C" fn obj_free<B: Backend>(slot: *mut bindings::alloc_tag_slot, size: usize) {
    // SAFETY: As in `obj_alloc`.
    let slot =
        ObjSlot(unsafe { core::sync::atomic::AtomicU16::from_ptr(ptr::addr_of_mut!((*slot).id)) });
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::obj_free(data, slot, size)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
unsafe extern "C" fn show_mem<B: Backend>(count: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::show_mem(data, count)
}

/// # Safety
///
/// Called by the kernel with a tag of a live section, as a hook of `B`.
#[cfg(allocprof_fail)]
unsafe extern "C" fn should_fail<B: Backend>(
    tag: *mut bindings::alloc_tag,
    kind: bindings::alloc_tag_fail_kind,
    size: usize,
    gfp: bindings::gfp_t,
) -> bool {
    // SAFETY: By the function's safety requirements.
    let Some(tag) = (unsafe { tag_from_raw(tag) }) else {
        return false;
    };
    let Some(kind) = FailKind::from_raw(kind) else {
        return false;
    };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::should_fail(data, tag, kind, size, Gfp(gfp))
}

/// A tag pointer from the kernel, never NULL on 7.3, as a [`Tag`].
///
/// # Safety
///
/// `tag` points into a section the back end was given, or a range it said
/// is used, which stays in memory for `'a`.
#[cfg(allocprof_tags)]
unsafe fn tag_from_kernel<'a>(tag: *mut bindings::alloc_tag) -> Tag<'a> {
    // SAFETY: By the function's safety requirements `tag` is a valid tag
    // for `'a`; `Opaque` is transparent over it.
    Tag(unsafe { &*tag.cast::<Opaque<bindings::alloc_tag>>() })
}

/// # Safety
///
/// Called by the kernel with the tags of an unloaded module that it keeps,
/// with a spinlock held, as a hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn section_used<B: Backend>(
    start: *mut bindings::alloc_tag,
    stop: *mut bindings::alloc_tag,
) -> bool {
    // SAFETY: `start..stop` is one range, so both are in the same object.
    let len = unsafe { stop.offset_from(start) } as usize;
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    // INVARIANT: The kernel keeps the tags during the call.
    let range = TagRange {
        start,
        len,
        _tags: PhantomData,
    };
    B::section_used(data, range)
}

/// # Safety
///
/// Called by the kernel with the tag the pages are allocated for, a tag of
/// a live section, as a hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn page_alloc<B: Backend>(
    pfn: c_ulong,
    order: c_uint,
    tag: *mut bindings::alloc_tag,
    gfp: bindings::gfp_t,
) -> bool {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_alloc(data, Pfn::new(pfn), order, tag, Gfp(gfp))
}

/// # Safety
///
/// Called by the kernel with the tag the pages were allocated for, as a
/// hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn page_free<B: Backend>(
    pfn: c_ulong,
    order: c_uint,
    tag: *mut bindings::alloc_tag,
) {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_free(data, Pfn::new(pfn), order, tag)
}

/// # Safety
///
/// As [`page_free`].
#[cfg(allocprof_tags)]
unsafe extern "C" fn page_split<B: Backend>(
    pfn: c_ulong,
    old_order: c_uint,
    new_order: c_uint,
    tag: *mut bindings::alloc_tag,
) {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_split(data, Pfn::new(pfn), old_order, new_order, tag)
}

/// # Safety
///
/// As [`page_free`].
#[cfg(allocprof_tags)]
unsafe extern "C" fn page_sub<B: Backend>(pfn: c_ulong, tag: *mut bindings::alloc_tag, nr: c_uint) {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_sub(data, Pfn::new(pfn), tag, nr)
}

/// # Safety
///
/// Called by the kernel, as a hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn page_swap<B: Backend>(new: c_ulong, old: c_ulong, order: c_uint) {
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::page_swap(data, Pfn::new(new), Pfn::new(old), order)
}

/// # Safety
///
/// Called by the kernel with the object's reference, set to `tag`, a tag
/// of a live section, as a hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn obj_alloc<B: Backend>(
    obj: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    size: usize,
    gfp: bindings::gfp_t,
) -> bool {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::obj_alloc(data, ObjRef(obj, PhantomData), tag, size, Gfp(gfp))
}

/// # Safety
///
/// Called by the kernel with the reference of an object being freed and
/// the tag it names, as a hook of `B`.
#[cfg(allocprof_tags)]
unsafe extern "C" fn obj_free<B: Backend>(
    obj: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    size: usize,
) {
    // SAFETY: By the function's safety requirements.
    let tag = unsafe { tag_from_kernel(tag) };
    // SAFETY: A hook of `B`.
    let data = unsafe { registered::<B>() };
    B::obj_free(data, ObjRef(obj, PhantomData), tag, size)
}

/// The hook table of back end `B`.
struct Table<B: Backend>(PhantomData<B>);

impl<B: Backend> Table<B> {
    const OPS: bindings::alloc_tag_backend = bindings::alloc_tag_backend {
        owner: ptr::null_mut(),
        section_add: Some(section_add::<B>),
        section_del: Some(section_del::<B>),
        #[cfg(allocprof_tags)]
        section_used: Some(section_used::<B>),
        page_alloc: Some(page_alloc::<B>),
        page_free: Some(page_free::<B>),
        page_split: Some(page_split::<B>),
        #[cfg(not(allocprof_tags))]
        page_copy: Some(page_copy::<B>),
        #[cfg(not(allocprof_tags))]
        page_ref: Some(page_ref::<B>),
        #[cfg(not(allocprof_tags))]
        page_ref_sub: Some(page_ref_sub::<B>),
        #[cfg(allocprof_tags)]
        page_swap: Some(page_swap::<B>),
        #[cfg(allocprof_tags)]
        page_sub: Some(page_sub::<B>),
        obj_alloc: Some(obj_alloc::<B>),
        obj_free: Some(obj_free::<B>),
        show_mem: Some(show_mem::<B>),
        #[cfg(allocprof_fail)]
        should_fail: Some(should_fail::<B>),
    };
}

/// A number for a new registration: 7.3's series has no counter of them
/// (the kernel clears a registration's references when it ends, so no
/// reference needs one), and the number only tells registrations apart in
/// the content id of `/proc/allocinfo`'s ioctl: the boot clock's
/// microseconds, which differ from one registration to the next.
#[cfg(allocprof_tags)]
pub(crate) fn new_generation() -> u32 {
    (super::task::now_ns() / 1000) as u32
}

/// A number that differs for every call since boot: a back end's
/// registration writes it into its slot values (see `ids.rs`).
#[cfg(not(allocprof_tags))]
pub(crate) fn new_generation() -> u32 {
    // SAFETY: No requirements: an atomic counter.
    unsafe { bindings::alloc_tag_backend_new_generation() }
}

/// What a registration started with: the kernel's record of the call sites
/// of every allocation since boot (`alloc_tag.record=1`), handed to the
/// hooks while registering, or nothing.
#[derive(Clone, Copy, Default)]
pub(crate) struct Adoption {
    /// Page allocations handed over.
    pub(crate) pages: u64,
    /// Slab and percpu objects handed over.
    pub(crate) objects: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Allocations of modules that unloaded while the kernel recorded.
    pub(crate) lost: u64,
    /// How long the machine was stopped for it, in nanoseconds.
    pub(crate) ns: u64,
}

/// The registration of a back end, which owns the data its hooks get;
/// unregisters on drop, then frees the data.
///
/// # Invariants
///
/// The hook table `ops` of a back end with data `D` is registered with the
/// kernel, and `REGISTERED` points to `data`.
pub(crate) struct Registration<D: Send + Sync + 'static> {
    /// The table given to the kernel: unregistering must name the same one.
    ops: &'static bindings::alloc_tag_backend,
    adoption: Option<Adoption>,
    data: Pin<KBox<D>>,
}

// SAFETY: The registration owns `Send` data and a token for unregistering,
// which any thread may do; the hook table is never written.
unsafe impl<D: Send + Sync + 'static> Send for Registration<D> {}
// SAFETY: `data` is `Sync`; `enable` may be called from any thread, the
// kernel serialises it.
unsafe impl<D: Send + Sync + 'static> Sync for Registration<D> {}

impl<D: Send + Sync + 'static> Registration<D> {
    /// Registers the hooks of `B` with `data`: `section_add` runs for
    /// vmlinux and every loaded module before this returns, and the
    /// free-side hooks are live.  If the kernel recorded from boot and
    /// nothing registered since, the hooks get every recorded allocation
    /// (`page_alloc`, `obj_alloc`) before this returns, and profiling is
    /// on.  Otherwise the alloc side starts with [`Registration::enable`].
    /// `EBUSY` if a back end is registered already.
    pub(crate) fn register<B: Backend<Data = D>>(data: Pin<KBox<D>>) -> Result<Self> {
        let raw = ptr::from_ref::<D>(&*data).cast_mut().cast::<c_void>();
        REGISTERED
            .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Relaxed)
            .map_err(|_| EBUSY)?;
        let ops: &'static bindings::alloc_tag_backend = &Table::<B>::OPS;
        let mut adoption = bindings::alloc_tag_adoption::default();
        // SAFETY: `ops` is a promoted constant, so it lives for the whole
        // program; the hooks it names find `data` through `REGISTERED`, set
        // above, and `data` lives until after unregistering.
        let ret = to_result(unsafe { bindings::alloc_tag_backend_register(ops, &mut adoption) });
        if let Err(e) = ret {
            REGISTERED.store(ptr::null_mut(), Ordering::Release);
            return Err(e);
        }
        let adoption = adoption.adopted.then_some(Adoption {
            pages: adoption.pages as u64,
            objects: adoption.objs as u64,
            bytes: adoption.bytes as u64,
            lost: adoption.lost as u64,
            ns: adoption.ns,
        });
        // INVARIANT: Registered, and `REGISTERED` points to `data`.
        Ok(Self {
            ops,
            adoption,
            data,
        })
    }

    /// The data the hooks get.
    pub(crate) fn data(&self) -> &D {
        &self.data
    }

    /// What the kernel's boot record handed over, if it did.
    pub(crate) fn adoption(&self) -> Option<Adoption> {
        self.adoption
    }

    /// Turns the alloc-side hooks (profiling) on or off.  On 7.3 the
    /// kernel refuses to turn them on (`EPERM`) once it shut profiling down
    /// for good.
    pub(crate) fn enable(&self, on: bool) -> Result {
        #[cfg(allocprof_tags)]
        // SAFETY: We are registered (type invariant).
        return to_result(unsafe { bindings::alloc_tag_backend_enable(on) });
        #[cfg(not(allocprof_tags))]
        {
            // SAFETY: We are registered (type invariant).
            unsafe { bindings::alloc_tag_backend_enable(on) };
            Ok(())
        }
    }

    /// 7.3: has the allocators count, without calling a hook, each
    /// allocation and free at a call site whose tag's word is a number `w`
    /// below [`INLINE_IDS`] with a non-NULL entry `w` in `table(data)`:
    /// they add to that entry's counters (bytes, then calls) themselves.
    /// Every other call site, and what is not a plain allocation or free
    /// (a split, a partial free, the record's adoption, [`Self::count_own`]),
    /// still gets the hooks.  Without the kernel's
    /// `alloc_tag_backend_count_inline()` (`allocprof_count_inline`), the
    /// hooks count everything.
    ///
    /// # Safety
    ///
    /// Entry 0 (a tag without an id) is NULL.  A non-NULL entry `w` of the
    /// table is the per-CPU address of a pair of `u64`s, bytes then calls
    /// (`struct alloc_tag_counters`), that stays allocated for as long as
    /// the hooks of this registration may be called for a tag whose word
    /// is `w`: the allocators read the word and the entry once, with
    /// preemption disabled, where they would call the hooks.
    #[cfg(allocprof_tags)]
    pub(crate) unsafe fn count_inline<T>(
        &self,
        table: impl FnOnce(&D) -> &[AtomicPtr<T>; INLINE_IDS],
    ) -> Result {
        const { assert!(core::mem::size_of::<T>() == 16) };
        #[cfg(not(allocprof_count_inline))]
        {
            let _ = table;
            Ok(())
        }
        #[cfg(allocprof_count_inline)]
        {
            let table = table(&self.data)
                .as_ptr()
                .cast::<*mut bindings::alloc_tag_counters>();
            // The table is part of `data`, which is dropped only after
            // unregistering, which forgets it.
            // SAFETY: We are registered (type invariant) with `ops`; the
            // table outlives that and its entries are as the kernel expects
            // (the function's safety requirements).
            to_result(unsafe { bindings::alloc_tag_backend_count_inline(self.ops, table) })
        }
    }

    /// Counts `memory`, which the back end allocated before it registered
    /// and has not freed, for `site` with its own hooks as if it were
    /// allocated now: nothing while profiling is off, and nothing of what
    /// the hooks count already (the boot record's allocations they were
    /// handed).  `EINVAL` for memory of another kind, `ENOMEM` if a slab
    /// object's slot could not be made.  Without the kernel's
    /// `alloc_tag_count_existing()` (`allocprof_count_existing`), nothing
    /// is counted: the back end's tables are missing from its figures.
    pub(crate) fn count_own(&self, site: OwnSite, memory: OwnMemory<'_>) -> Result {
        #[cfg(not(allocprof_count_existing))]
        {
            let _ = (site, memory);
            Ok(())
        }
        #[cfg(allocprof_count_existing)]
        // SAFETY: We are registered (type invariant).  `memory` is a live
        // allocation of the kind the call takes (its invariant), `site` a
        // tag of vmlinux (its invariant).
        to_result(unsafe {
            if memory.percpu {
                bindings::alloc_tag_count_existing_percpu(memory.ptr, site.0)
            } else {
                bindings::alloc_tag_count_existing(memory.ptr, site.0)
            }
        })
    }

    /// Turns the allocators' questions to [`Backend::should_fail`] on or
    /// off; off until asked, and again once unregistered.  A no-op without
    /// failures by call site in the kernel (`allocprof_fail`), where the
    /// control file refuses `f`.
    pub(crate) fn fail(&self, on: bool) {
        #[cfg(allocprof_fail)]
        // SAFETY: We are registered (type invariant), with a table that has
        // `should_fail`.
        unsafe {
            bindings::alloc_tag_backend_fail(on)
        }
        #[cfg(not(allocprof_fail))]
        let _ = on;
    }
}

impl<D: Send + Sync + 'static> Drop for Registration<D> {
    fn drop(&mut self) {
        // SAFETY: We are registered (type invariant); after this returns no
        // hook runs any more, so `data` may go.
        unsafe { bindings::alloc_tag_backend_unregister(self.ops) };
        REGISTERED.store(ptr::null_mut(), Ordering::Release);
    }
}
