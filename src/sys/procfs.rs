// SPDX-License-Identifier: GPL-2.0

//! A read-only `/proc` file produced through `seq_file`.

use core::{ffi::c_void, marker::PhantomData, ptr::NonNull};
use kernel::{bindings, error::code::ENOMEM, error::Result, ffi::c_int, str::CStr};

/// The `seq_file` being filled by a read.
pub(crate) struct SeqFile(*mut bindings::seq_file);

impl SeqFile {
    /// Appends `bytes`; once the buffer is full the rest of the item is
    /// dropped and `seq_file` retries the item with a larger buffer.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        // SAFETY: `self.0` is the `seq_file` of the `show` call we are in,
        // and `bytes` is valid for its length.
        unsafe { bindings::seq_write(self.0, bytes.as_ptr().cast(), bytes.len()) };
    }
}

impl core::fmt::Write for SeqFile {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write(s.as_bytes());
        Ok(())
    }
}

/// What a `/proc` file shows: a sequence of items with sparse positions.
///
/// Items are found by position, so a reader that comes back after its
/// buffer filled up, or after the items changed, continues where it was.
pub(crate) trait SeqSource {
    /// The first item at or after position `pos`, if there is one.
    fn seek(pos: u64) -> Option<u64>;
    /// Writes item `item` (a value `seek` returned).
    fn show(out: &mut SeqFile, item: u64);
}

/// `seq_file` tokens are non-NULL pointers: item `i` is `i + 1`.
fn token(item: Option<u64>) -> *mut c_void {
    item.map_or(core::ptr::null_mut(), |i| (i + 1) as usize as *mut c_void)
}

/// # Safety
///
/// Called by `seq_file` with a valid position pointer.
unsafe extern "C" fn seq_start<S: SeqSource>(
    _m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: `pos` is valid for the call.
    token(S::seek(unsafe { *pos } as u64))
}

/// # Safety
///
/// Called by `seq_file` with a token from `seq_start`/`seq_next` and a
/// valid position pointer.
unsafe extern "C" fn seq_next<S: SeqSource>(
    _m: *mut bindings::seq_file,
    v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    let next = v as usize as u64;
    // SAFETY: `pos` is valid for the call.
    unsafe { *pos = next as bindings::loff_t };
    token(S::seek(next))
}

extern "C" fn seq_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {}

extern "C" fn seq_show<S: SeqSource>(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    S::show(&mut SeqFile(m), v as usize as u64 - 1);
    0
}

/// # Safety
///
/// Called by procfs with a valid inode and file.
unsafe extern "C" fn proc_open<S: SeqSource>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `file` is being opened; `SEQ_OPS` is a promoted constant that
    // lives for the whole program.
    unsafe { bindings::seq_open(file, &Table::<S>::SEQ_OPS) }
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
        proc_release: Some(bindings::seq_release),
        // SAFETY: All-zero is a valid `proc_ops`: no flags, no other ops.
        ..unsafe { core::mem::zeroed() }
    };
}

/// A file in `/proc` showing `S`; removed on drop, after running readers.
pub(crate) struct ProcFile<S: SeqSource> {
    entry: NonNull<bindings::proc_dir_entry>,
    _s: PhantomData<S>,
}

// SAFETY: The entry is only used to remove it, which any thread may do.
unsafe impl<S: SeqSource> Send for ProcFile<S> {}
// SAFETY: No method takes `&self`.
unsafe impl<S: SeqSource> Sync for ProcFile<S> {}

impl<S: SeqSource + 'static> ProcFile<S> {
    /// Creates `/proc/<name>` with permissions `mode`.
    pub(crate) fn new(name: &'static CStr, mode: u16) -> Result<Self> {
        // SAFETY: `name` and the promoted `PROC_OPS` live for the whole
        // program; a NULL parent means the top of `/proc`.
        let entry = unsafe {
            bindings::proc_create(
                name.as_char_ptr(),
                mode,
                core::ptr::null_mut(),
                &Table::<S>::PROC_OPS,
            )
        };
        Ok(Self {
            entry: NonNull::new(entry).ok_or(ENOMEM)?,
            _s: PhantomData,
        })
    }
}

impl<S: SeqSource> Drop for ProcFile<S> {
    fn drop(&mut self) {
        // SAFETY: We created the entry; `proc_remove` waits for the callers
        // inside its operations to leave.
        unsafe { bindings::proc_remove(self.entry.as_ptr()) };
    }
}
