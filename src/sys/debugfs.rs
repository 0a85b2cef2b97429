// SPDX-License-Identifier: GPL-2.0

//! Files in debugfs whose text is made when they are opened, and which
//! may take writes: what dynamic debug's `control` file is, and what the
//! stack and age reports are.

use core::{ffi::c_void, ptr::NonNull};
use kernel::{
    alloc::{flags::GFP_KERNEL, KBox, KVVec, KVec},
    bindings,
    error::{code::*, from_err_ptr, Error, Result},
    ffi::c_int,
    str::CStr,
    sync::Arc,
    uaccess::UserSlice,
    ThisModule,
};
// 7.3's `CStr` is core's, with the kernel's methods in a trait.
#[cfg(allocprof_tags)]
use kernel::str::CStrExt as _;

/// The text of an open file, made at open.  An allocation failure while
/// writing it is kept and reported when the text is done (`ENOMEM`).
pub(crate) struct Text {
    buf: KVVec<u8>,
    failed: bool,
}

impl Text {
    fn new() -> Self {
        Self {
            buf: KVVec::new(),
            failed: false,
        }
    }

    /// Appends `bytes`.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if !self.failed && self.buf.extend_from_slice(bytes, GFP_KERNEL).is_err() {
            self.failed = true;
        }
    }

    fn done(self) -> Result<KVVec<u8>> {
        if self.failed {
            return Err(ENOMEM);
        }
        Ok(self.buf)
    }
}

impl core::fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write(s.as_bytes());
        Ok(())
    }
}

/// The longest write a file takes at once, as dynamic debug's control file.
pub(crate) const MAX_WRITE: usize = 4095;

/// What a debugfs file shows and takes, of the data of its directory.
pub(crate) trait DebugText: 'static {
    /// The data the file's callbacks get: its directory's.
    type Data: Send + Sync + 'static;

    /// Writes the file's text, when it is opened for reading.
    fn text(data: &Self::Data, out: &mut Text) -> Result;
    /// Takes a write (the whole of it, at most [`MAX_WRITE`] bytes).
    fn write(data: &Self::Data, input: &[u8]) -> Result {
        let _ = (data, input);
        Err(EPERM)
    }
}

/// The data of the debugfs file whose inode is `inode`.
///
/// # Safety
///
/// `inode` is the inode of a file [`DebugDir::add`] made with `F`, and
/// this is its `open` or `write` operation.
unsafe fn data<'a, F: DebugText>(inode: *const bindings::inode) -> &'a F::Data {
    // debugfs keeps the data given to `debugfs_create_file()` in the
    // inode's `i_private`: the `F::Data` of the `DebugDir`'s `data` (its
    // type invariant).  debugfs runs `open` and `write` between
    // `debugfs_file_get()` and `debugfs_file_put()` (its proxy file
    // operations), and `debugfs_remove()` waits for those before it
    // returns; the `DebugDir` drops its reference after that.  (`release`
    // may run after the removal: it does not use the data.)
    //
    // SAFETY: So `i_private` is a live `F::Data` during this operation.
    unsafe { &*(*inode).i_private.cast::<F::Data>() }
}

/// # Safety
///
/// Called by debugfs with the inode of a file made with `F` and a file
/// being opened on it.
unsafe extern "C" fn open<F: DebugText>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `file` is valid during open.
    let readable = unsafe { (*file).f_mode } & bindings::FMODE_READ != 0;
    if !readable {
        return 0;
    }
    // SAFETY: By the function's safety requirements.
    let data = unsafe { data::<F>(inode) };
    let mut text = Text::new();
    let made = F::text(data, &mut text).and_then(|()| text.done());
    let buf = match made.and_then(|b| KBox::new(b, GFP_KERNEL).map_err(Error::from)) {
        Ok(b) => b,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: `private_data` is ours; freed in `release`.
    unsafe { (*file).private_data = KBox::into_raw(buf).cast::<c_void>() };
    0
}

/// # Safety
///
/// Called by debugfs with a file `open::<F>` opened.
unsafe extern "C" fn release<F: DebugText>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: The file is being released: nothing else uses its data.
    let data = unsafe { (*file).private_data };
    if !data.is_null() {
        // SAFETY: `open` made it from a box of the text.
        drop(unsafe { KBox::from_raw(data.cast::<KVVec<u8>>()) });
    }
    0
}

/// # Safety
///
/// Called by debugfs with a file `open::<F>` opened and valid pointers.
unsafe extern "C" fn read<F: DebugText>(
    file: *mut bindings::file,
    buf: *mut kernel::ffi::c_char,
    count: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: The file is open.
    let data = unsafe { (*file).private_data }.cast::<KVVec<u8>>();
    if data.is_null() {
        return EBADF.to_errno() as isize;
    }
    // SAFETY: `data` is the text `open` made, alive until release; the
    // kernel checks `buf` and `ppos` as for any read.
    unsafe {
        let text = &*data;
        bindings::simple_read_from_buffer(buf.cast(), count, ppos, text.as_ptr().cast(), text.len())
    }
}

/// # Safety
///
/// Called by debugfs with a file `open::<F>` opened and a user buffer.
unsafe extern "C" fn write<F: DebugText>(
    file: *mut bindings::file,
    buf: *const kernel::ffi::c_char,
    count: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    if count > MAX_WRITE {
        return E2BIG.to_errno() as isize;
    }
    let mut input = KVec::new();
    let copied = UserSlice::new(super::compat::user_ptr(buf as usize), count)
        .reader()
        .read_all(&mut input, GFP_KERNEL);
    // SAFETY: The file is open on a file made with `F`, and this is its
    // `write`.
    let data = unsafe { data::<F>((*file).f_inode) };
    match copied.and_then(|()| F::write(data, &input)) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// A directory of debugfs files, whose callbacks get a `T`; removed, with
/// its files, on drop, before its reference on the `T` goes.
///
/// # Invariants
///
/// Each file in `dentry` was made by [`DebugDir::add`], with a pointer to
/// `data`'s `T` as its data.
pub(crate) struct DebugDir<T: Send + Sync + 'static> {
    dentry: NonNull<bindings::dentry>,
    /// The operations of its files, which must outlive them.
    ops: KVec<KBox<bindings::file_operations>>,
    /// What the files' callbacks get; dropped after `drop` removed them.
    data: Arc<T>,
}

// SAFETY: The dentry is only used to add files and remove the directory,
// which any thread may do; the operations are never written after they
// are handed to debugfs; `T` is `Send + Sync`.
unsafe impl<T: Send + Sync + 'static> Send for DebugDir<T> {}
// SAFETY: No method takes `&self` and changes anything; `T` is `Sync`.
unsafe impl<T: Send + Sync + 'static> Sync for DebugDir<T> {}

impl<T: Send + Sync + 'static> DebugDir<T> {
    /// Creates the directory `name` at the top of debugfs, for files that
    /// get `data`.
    pub(crate) fn new(name: &'static CStr, data: Arc<T>) -> Result<Self> {
        // SAFETY: `name` is a valid string; NULL is debugfs' root.
        let d = from_err_ptr(unsafe {
            bindings::debugfs_create_dir(name.as_char_ptr(), core::ptr::null_mut())
        })?;
        // INVARIANT: No files yet.
        Ok(Self {
            dentry: NonNull::new(d).ok_or(ENOMEM)?,
            ops: KVec::new(),
            data,
        })
    }

    /// Adds the file `name` with permissions `mode`, showing `F`.  The
    /// module is pinned while the file is open.
    pub(crate) fn add<F: DebugText<Data = T>>(
        &mut self,
        name: &'static CStr,
        mode: u16,
        module: &'static ThisModule,
    ) -> Result {
        // SAFETY: All-zero is a valid `file_operations`: no operations.
        let mut ops: bindings::file_operations = unsafe { core::mem::zeroed() };
        ops.owner = module.as_ptr();
        ops.open = Some(open::<F>);
        ops.release = Some(release::<F>);
        ops.read = Some(read::<F>);
        ops.write = Some(write::<F>);
        ops.llseek = Some(bindings::default_llseek);
        let ops = KBox::new(ops, GFP_KERNEL)?;
        // Room first: once the file exists, its operations must be kept.
        self.ops.reserve(1, GFP_KERNEL)?;
        let data = core::ptr::from_ref::<T>(&self.data)
            .cast_mut()
            .cast::<c_void>();
        // `name` is static; the operations live in `self.ops` until after
        // the directory and its files are removed (drop), and the module
        // owning them is pinned while a file is open; `data` is the `T`
        // that `self.data` holds until then too.
        // INVARIANT: The file's data is `self.data`'s `T`.
        // SAFETY: So every pointer passed outlives the file.
        let f = from_err_ptr(unsafe {
            #[cfg(not(allocprof_tags))]
            let f = bindings::debugfs_create_file(
                name.as_char_ptr(),
                mode,
                self.dentry.as_ptr(),
                data,
                &*ops,
            );
            // 7.3's `debugfs_create_file()` is a macro over this one.
            #[cfg(allocprof_tags)]
            let f = bindings::debugfs_create_file_full(
                name.as_char_ptr(),
                mode,
                self.dentry.as_ptr(),
                data,
                core::ptr::null(),
                &*ops,
            );
            f
        })?;
        let _ = f;
        self.ops.push(ops, GFP_KERNEL).map_err(|_| ENOMEM)
    }
}

impl<T: Send + Sync + 'static> Drop for DebugDir<T> {
    fn drop(&mut self) {
        // SAFETY: We created the directory; removing it removes its files
        // and waits for the operations running in them, so no callback uses
        // `self.data` (dropped after this) any more.
        unsafe { bindings::debugfs_remove(self.dentry.as_ptr()) };
    }
}

/// Whether lockdown now forbids what a writable debugfs file does
/// (`security_locked_down(LOCKDOWN_DEBUGFS)`, the question debugfs asks
/// when such a file is opened, and which logs the kernel's own lockdown
/// line).  Lockdown only rises: once this is true it stays true.  Without
/// `CONFIG_SECURITY` the kernel has no lockdown, as its inline stub says.
pub(crate) fn writes_locked_down() -> bool {
    #[cfg(CONFIG_SECURITY)]
    {
        // SAFETY: `security_locked_down` takes a reason by value and only
        // reads the LSMs' lockdown state; any context that may sleep (a
        // module's init or a module notifier) may call it.
        unsafe { bindings::security_locked_down(bindings::lockdown_reason_LOCKDOWN_DEBUGFS) != 0 }
    }
    #[cfg(not(CONFIG_SECURITY))]
    {
        false
    }
}
