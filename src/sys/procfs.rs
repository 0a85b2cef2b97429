// SPDX-License-Identifier: GPL-2.0

//! A read-only `/proc` file produced through `seq_file`, with `ioctl()`
//! commands that keep state per open file.

use core::{ffi::c_void, marker::PhantomData, mem::size_of, pin::Pin, ptr::NonNull};
use kernel::{
    alloc::KBox,
    bindings,
    error::{code::ENOMEM, Error, Result},
    ffi::{c_int, c_long, c_uint, c_ulong},
    str::CStr,
    sync::Arc,
    types::Opaque,
    uaccess::UserSlice,
};
// The byte-copy traits moved on 7.3.
#[cfg(allocprof_tags)]
use kernel::transmute::{AsBytes, FromBytes};
#[cfg(not(allocprof_tags))]
use kernel::types::{AsBytes, FromBytes};
// 7.3's `CStr` is core's, with the kernel's methods in a trait.
#[cfg(allocprof_tags)]
use kernel::str::CStrExt as _;

/// Whether the kernel's own `/proc/allocinfo` is format 2.0 (Linux 6.18 and
/// later: `allocinfo - version: 2.0`, and ` accurate:no` on a call site
/// whose figures miss allocations) rather than 1.0 (6.12).  `src/Kbuild`
/// sets `allocprof_allocinfo_v2` from the kernel's version.
pub(crate) const KERNEL_FORMAT_V2: bool = cfg!(allocprof_allocinfo_v2);

/// The `seq_file` being filled by a read.
///
/// # Invariants
///
/// Only made by [`SeqFile::from_raw`]: the `seq_file` of a `show` call in
/// progress, which nothing else writes while the reference lives.
#[repr(transparent)]
pub(crate) struct SeqFile(Opaque<bindings::seq_file>);

impl SeqFile {
    /// The `seq_file` at `ptr`, for `'a`.
    ///
    /// # Safety
    ///
    /// `ptr` is the `seq_file` of the `show` call in progress, and nothing
    /// else writes to it during `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::seq_file) -> &'a mut SeqFile {
        // SAFETY: `SeqFile` is a transparent wrapper of `Opaque<seq_file>`,
        // which has the layout of a `seq_file`; the caller guarantees that
        // it is valid and ours alone for `'a`.
        unsafe { &mut *ptr.cast::<SeqFile>() }
    }

    /// Appends `bytes`; once the buffer is full the rest of the item is
    /// dropped and `seq_file` retries the item with a larger buffer.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        // SAFETY: The `seq_file` is that of the `show` call in progress (type
        // invariant), and `bytes` is valid for its length.
        unsafe { bindings::seq_write(self.0.get(), bytes.as_ptr().cast(), bytes.len()) };
    }
}

impl core::fmt::Write for SeqFile {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write(s.as_bytes());
        Ok(())
    }
}

/// The argument of an `ioctl()` call: a user pointer to a `T`, which is
/// copied in and out whole (the kernel's `FromBytes`/`AsBytes`: the uapi
/// structures as byte arrays, `uapi.rs`).
pub(crate) struct IoctlArg<T> {
    ptr: usize,
    _t: PhantomData<T>,
}

impl<T: FromBytes + AsBytes> IoctlArg<T> {
    /// Copies the `T` in; `EFAULT` if the memory cannot be read.
    pub(crate) fn read(&self) -> Result<T> {
        UserSlice::new(super::compat::user_ptr(self.ptr), size_of::<T>())
            .reader()
            .read()
    }

    /// Copies `v` out; `EFAULT` if the memory cannot be written.
    pub(crate) fn write(&self, v: &T) -> Result {
        UserSlice::new(super::compat::user_ptr(self.ptr), size_of::<T>())
            .writer()
            .write(v)
    }
}

/// An `ioctl()` command of a `/proc` file: its number and user argument.
pub(crate) struct Ioctl {
    pub(crate) cmd: u32,
    arg: usize,
}

impl Ioctl {
    /// The argument as a pointer to a `T`.
    pub(crate) fn arg<T: FromBytes + AsBytes>(&self) -> IoctlArg<T> {
        IoctlArg {
            ptr: self.arg,
            _t: PhantomData,
        }
    }
}

/// What a `/proc` file shows: a sequence of items with sparse positions.
/// The file's data: its callbacks get it through the entry's data pointer
/// (`proc_create_data()`, `pde_data()`).
///
/// Items are found by position, so a reader that comes back after its
/// buffer filled up, or after the items changed, continues where it was.
pub(crate) trait SeqSource: Send + Sync + 'static {
    /// What each open file keeps for its `ioctl()` commands.
    type Open: Send + Sync;

    /// The first item at or after position `pos`, if there is one.
    fn seek(&self, pos: u64) -> Option<u64>;
    /// Writes item `item` (a value `seek` returned).
    fn show(&self, out: &mut SeqFile, item: u64);
    /// The state of a newly opened file.
    fn open(&self) -> Result<Pin<KBox<Self::Open>>>;
    /// Runs `ioctl()` command `cmd` on an open file; returns the value for
    /// user space.  `ENOTTY` for a command it does not know.
    fn ioctl(&self, open: &Self::Open, cmd: Ioctl) -> Result<i64>;
}

/// The source of the `/proc` file whose inode is `inode`.
///
/// # Safety
///
/// `inode` is the inode of a [`ProcFile<S>`]'s entry, in one of the
/// entry's operations.
unsafe fn source<'a, S: SeqSource>(inode: *const bindings::inode) -> &'a S {
    // `pde_data()` is the inode's `i_private`: the data given to
    // `proc_create_data()`, the `S` the `ProcFile` holds a reference on (its
    // type invariant).  The `ProcFile` drops that reference only after
    // `proc_remove()` returned, which waits for the callers inside the
    // entry's operations and releases its open files.
    // SAFETY: So `i_private` is a live `S` during this operation.
    unsafe { &*(*inode).i_private.cast::<S>() }
}

/// The source of the `/proc` file a `seq_file` callback reads.
///
/// # Safety
///
/// `m` is the `seq_file` of a file of a [`ProcFile<S>`], in one of its
/// `seq_operations`.
unsafe fn seq_source<'a, S: SeqSource>(m: *const bindings::seq_file) -> &'a S {
    // SAFETY: `seq_open()` set `m->file` to the open file, whose inode is
    // the entry's; a `seq_file` callback runs inside the entry's
    // `proc_read_iter`.
    unsafe { source::<S>((*(*m).file).f_inode) }
}

/// `seq_file` tokens are non-NULL pointers: item `i` is `i + 1`.
fn token(item: Option<u64>) -> *mut c_void {
    item.map_or(core::ptr::null_mut(), |i| (i + 1) as usize as *mut c_void)
}

/// # Safety
///
/// Called by `seq_file` for a file of a `ProcFile<S>` with a valid
/// position pointer.
unsafe extern "C" fn seq_start<S: SeqSource>(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: By the function's safety requirements.
    let source = unsafe { seq_source::<S>(m) };
    // SAFETY: `pos` is valid for the call.
    token(source.seek(unsafe { *pos } as u64))
}

/// # Safety
///
/// Called by `seq_file` for a file of a `ProcFile<S>` with a token from
/// `seq_start`/`seq_next` and a valid position pointer.
unsafe extern "C" fn seq_next<S: SeqSource>(
    m: *mut bindings::seq_file,
    v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: By the function's safety requirements.
    let source = unsafe { seq_source::<S>(m) };
    let next = v as usize as u64;
    // SAFETY: `pos` is valid for the call.
    unsafe { *pos = next as bindings::loff_t };
    token(source.seek(next))
}

extern "C" fn seq_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {}

/// # Safety
///
/// Called by `seq_file` for a file of a `ProcFile<S>` with a token from
/// `seq_start`/`seq_next`.
unsafe extern "C" fn seq_show<S: SeqSource>(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: By the function's safety requirements.
    let source = unsafe { seq_source::<S>(m) };
    // SAFETY: `seq_file` calls `show` with its `seq_file`, which only this
    // call writes to until it returns.
    let out = unsafe { SeqFile::from_raw(m) };
    source.show(out, v as usize as u64 - 1);
    0
}

/// The per-file state of an open file: `seq_file.private`, set at open.
///
/// # Safety
///
/// `file` is an open file of a `ProcFile<S>`, between `proc_open::<S>` and
/// `proc_release::<S>`.
unsafe fn open_state<'a, S: SeqSource>(file: *mut bindings::file) -> &'a S::Open {
    // SAFETY: `seq_open` made `private_data` the file's `seq_file`, whose
    // `private` `proc_open` set to a pinned box, freed only at release.
    unsafe {
        &*(*(*file).private_data.cast::<bindings::seq_file>())
            .private
            .cast::<S::Open>()
    }
}

/// # Safety
///
/// Called by procfs with the inode of a `ProcFile<S>` and a file being
/// opened on it.
unsafe extern "C" fn proc_open<S: SeqSource>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: By the function's safety requirements.
    let source = unsafe { source::<S>(inode) };
    let state = match source.open() {
        Ok(state) => state,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: `file` is being opened; `SEQ_OPS` is a promoted constant that
    // lives for the whole program.
    let ret = unsafe { bindings::seq_open(file, &Table::<S>::SEQ_OPS) };
    if ret != 0 {
        return ret;
    }
    // SAFETY: `seq_open` succeeded: `private_data` is the file's `seq_file`.
    // The box is never moved out of (it stays pinned) and is freed in
    // `proc_release`.
    unsafe {
        (*(*file).private_data.cast::<bindings::seq_file>()).private =
            KBox::into_raw(Pin::into_inner_unchecked(state)).cast::<c_void>();
    }
    0
}

/// # Safety
///
/// Called by procfs with a file that `proc_open::<S>` opened.
unsafe extern "C" fn proc_release<S: SeqSource>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private` is the box `proc_open` made; nothing uses it after
    // the file's release.
    drop(unsafe {
        KBox::from_raw(
            (*(*file).private_data.cast::<bindings::seq_file>())
                .private
                .cast::<S::Open>(),
        )
    });
    // SAFETY: The file was opened with `seq_open`.
    unsafe { bindings::seq_release(inode, file) }
}

/// # Safety
///
/// Called by procfs with a file that `proc_open::<S>` opened.
unsafe extern "C" fn proc_ioctl<S: SeqSource>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: By the function's safety requirement.
    let open = unsafe { open_state::<S>(file) };
    // SAFETY: The file is open on a `ProcFile<S>`'s entry, and this is one
    // of the entry's operations.
    let source = unsafe { source::<S>((*file).f_inode) };
    match source.ioctl(open, Ioctl { cmd, arg }) {
        Ok(v) => v as c_long,
        Err(e) => Error::to_errno(e) as c_long,
    }
}

struct Table<S>(PhantomData<S>);

impl<S: SeqSource> Table<S> {
    const SEQ_OPS: bindings::seq_operations = bindings::seq_operations {
        start: Some(seq_start::<S>),
        stop: Some(seq_stop),
        next: Some(seq_next::<S>),
        show: Some(seq_show::<S>),
    };

    const PROC_OPS: bindings::proc_ops = bindings::proc_ops {
        proc_open: Some(proc_open::<S>),
        proc_read_iter: Some(bindings::seq_read_iter),
        proc_lseek: Some(bindings::seq_lseek),
        proc_release: Some(proc_release::<S>),
        proc_ioctl: Some(proc_ioctl::<S>),
        // Every argument is a pointer to structures laid out the same for
        // 32-bit callers.
        #[cfg(CONFIG_COMPAT)]
        proc_compat_ioctl: Some(bindings::compat_ptr_ioctl),
        // SAFETY: All-zero is a valid `proc_ops`: no flags, no other ops.
        ..unsafe { core::mem::zeroed() }
    };
}

/// A file in `/proc` showing an `S`; removed on drop, after running
/// readers, before its reference on the `S` goes.
///
/// # Invariants
///
/// `entry` is in `/proc`, made with `Table::<S>::PROC_OPS` and, as its
/// data, a pointer to `_source`'s `S`.
pub(crate) struct ProcFile<S: SeqSource> {
    entry: NonNull<bindings::proc_dir_entry>,
    /// What the file's operations get; dropped after `drop` removed the
    /// entry.
    _source: Arc<S>,
}

// SAFETY: The entry is only used to remove it, which any thread may do;
// `S` is `Send + Sync`.
unsafe impl<S: SeqSource> Send for ProcFile<S> {}
// SAFETY: No method takes `&self`; `S` is `Sync`.
unsafe impl<S: SeqSource> Sync for ProcFile<S> {}

impl<S: SeqSource> ProcFile<S> {
    /// Creates `/proc/<name>` with permissions `mode`, showing `source`.
    pub(crate) fn new(name: &'static CStr, mode: u16, source: Arc<S>) -> Result<Self> {
        let data = core::ptr::from_ref::<S>(&source)
            .cast_mut()
            .cast::<c_void>();
        // `name` and the promoted `PROC_OPS` live for the whole program, a
        // NULL parent means the top of `/proc`, and `data` is the `S` that
        // `source`, kept in the result, holds until the entry is removed.
        // SAFETY: So every pointer passed outlives the entry.
        let entry = unsafe {
            bindings::proc_create_data(
                name.as_char_ptr(),
                mode,
                core::ptr::null_mut(),
                &Table::<S>::PROC_OPS,
                data,
            )
        };
        // INVARIANT: Made with `PROC_OPS` and `source`'s `S` as its data.
        Ok(Self {
            entry: NonNull::new(entry).ok_or(ENOMEM)?,
            _source: source,
        })
    }
}

impl<S: SeqSource> Drop for ProcFile<S> {
    fn drop(&mut self) {
        // SAFETY: We created the entry; `proc_remove` waits for the callers
        // inside its operations to leave and releases its open files, so
        // no operation uses `self._source` (dropped after this) any more.
        unsafe { bindings::proc_remove(self.entry.as_ptr()) };
    }
}
