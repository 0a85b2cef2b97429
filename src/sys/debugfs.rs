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
    uaccess::UserSlice,
    ThisModule,
};

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

/// What a debugfs file shows and takes.
pub(crate) trait DebugText: 'static {
    /// Writes the file's text, when it is opened for reading.
    fn text(out: &mut Text) -> Result;
    /// Takes a write (the whole of it, at most [`MAX_WRITE`] bytes).
    fn write(input: &[u8]) -> Result {
        let _ = input;
        Err(EPERM)
    }
}

/// # Safety
///
/// Called by debugfs with a file being opened.
unsafe extern "C" fn open<F: DebugText>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `file` is valid during open.
    let readable = unsafe { (*file).f_mode } & bindings::FMODE_READ != 0;
    if !readable {
        return 0;
    }
    let mut text = Text::new();
    let made = F::text(&mut text).and_then(|()| text.done());
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
    _file: *mut bindings::file,
    buf: *const kernel::ffi::c_char,
    count: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    if count > MAX_WRITE {
        return E2BIG.to_errno() as isize;
    }
    let mut input = KVec::new();
    let copied = UserSlice::new(buf as usize, count)
        .reader()
        .read_all(&mut input, GFP_KERNEL);
    match copied.and_then(|()| F::write(&input)) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// A directory of debugfs files; removed, with its files, on drop.
pub(crate) struct DebugDir {
    dentry: NonNull<bindings::dentry>,
    /// The operations of its files, which must outlive them.
    ops: KVec<KBox<bindings::file_operations>>,
}

// SAFETY: The dentry is only used to add files and remove the directory,
// which any thread may do; the operations are never written after they
// are handed to debugfs.
unsafe impl Send for DebugDir {}
// SAFETY: No method takes `&self` and changes anything.
unsafe impl Sync for DebugDir {}

impl DebugDir {
    /// Creates the directory `name` at the top of debugfs.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a valid string; NULL is debugfs' root.
        let d = from_err_ptr(unsafe {
            bindings::debugfs_create_dir(name.as_char_ptr(), core::ptr::null_mut())
        })?;
        Ok(Self {
            dentry: NonNull::new(d).ok_or(ENOMEM)?,
            ops: KVec::new(),
        })
    }

    /// Adds the file `name` with permissions `mode`, showing `F`.  The
    /// module is pinned while the file is open.
    pub(crate) fn add<F: DebugText>(
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
        // SAFETY: `name` is static; the operations live in `self.ops` until
        // after the directory and its files are removed (drop), and the
        // module owning them is pinned while a file is open.
        let f = from_err_ptr(unsafe {
            bindings::debugfs_create_file(
                name.as_char_ptr(),
                mode,
                self.dentry.as_ptr(),
                core::ptr::null_mut(),
                &*ops,
            )
        })?;
        let _ = f;
        self.ops.push(ops, GFP_KERNEL).map_err(|_| ENOMEM)
    }
}

impl Drop for DebugDir {
    fn drop(&mut self) {
        // SAFETY: We created the directory; removing it removes its files
        // and waits for the operations running in them.
        unsafe { bindings::debugfs_remove(self.dentry.as_ptr()) };
    }
}
