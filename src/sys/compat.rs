// SPDX-License-Identifier: GPL-2.0

//! What the kernel crates of 6.12 and 7.3 spell differently, for the other
//! wrappers of `sys/`: a leaf, as it uses none of them.

/// The bytes of the NUL-terminated string at `p`, without the NUL: the same
/// call on both kernels (6.12's `kernel::str::CStr::as_bytes()` is core's
/// `to_bytes()` on 7.3, whose `CStr` is core's).
///
/// # Safety
///
/// `p` is a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn c_bytes<'a>(p: *const kernel::ffi::c_char) -> &'a [u8] {
    // SAFETY: By the function's safety requirements.
    #[allow(clippy::disallowed_methods)]
    unsafe { core::ffi::CStr::from_ptr(p.cast()) }.to_bytes()
}

/// A user-space address as `UserSlice::new` takes it (a newtype on 7.3).
#[cfg(allocprof_tags)]
pub(crate) fn user_ptr(addr: usize) -> kernel::uaccess::UserPtr {
    kernel::uaccess::UserPtr::from_addr(addr)
}

/// A user-space address as `UserSlice::new` takes it (a newtype on 7.3).
#[cfg(not(allocprof_tags))]
pub(crate) fn user_ptr(addr: usize) -> kernel::uaccess::UserPtr {
    addr
}
