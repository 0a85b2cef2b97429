// SPDX-License-Identifier: GPL-2.0

//! Kernel log lines the `pr_*!` macros cannot write: without the module
//! prefix (upstream's `show_mem()` lines), with symbolised code addresses,
//! and sizes in the kernel's human units.  None of them allocates, so they
//! can be used in any context.

use kernel::{
    bindings, c_str,
    ffi::{c_char, c_int, c_uint, c_ulonglong, c_void},
};
// 7.3's `CStr` is core's, with the kernel's methods in a trait.
#[cfg(allocprof_tags)]
use kernel::str::CStrExt as _;

use super::backend::Site;

/// The header of the call sites printed after `show_mem()`, the kernel's
/// own: 7.3's says whether profiling is on (`mm/show_mem.c`), read from
/// the alloc-side static key as `mem_alloc_profiling_enabled()` reads it;
/// 6.12's does not.
pub(crate) fn show_mem_header() -> &'static [u8] {
    #[cfg(allocprof_tags)]
    {
        // SAFETY: `mem_alloc_profiling_key` is the kernel's static, which
        // lives as long as the kernel; `static_key_count()` reads its count
        // atomically.
        let on = unsafe {
            bindings::static_key_count(core::ptr::addr_of_mut!(
                bindings::mem_alloc_profiling_key.key
            ))
        } > 0;
        if on {
            b"Memory allocations (profiling is currently turned on):"
        } else {
            b"Memory allocations (profiling is currently turned off):"
        }
    }
    #[cfg(not(allocprof_tags))]
    b"Memory allocations:"
}

/// Bytes as `string_get_size()` writes them with `STRING_UNITS_2`:
/// `"6.25 MiB"`, NUL-terminated (upstream's buffer of 10 bytes).
pub(crate) struct SizeText([u8; 10]);

impl SizeText {
    /// `bytes` in binary units, rounded as the kernel rounds them.
    pub(crate) fn new(bytes: u64) -> Self {
        let mut buf = [0u8; 10];
        // SAFETY: `buf` is writable for its length, which is passed; the
        // function always NUL-terminates within it.
        unsafe {
            bindings::string_get_size(
                bytes,
                1,
                bindings::string_size_units_STRING_UNITS_2,
                buf.as_mut_ptr().cast(),
                buf.len() as c_int,
            )
        };
        Self(buf)
    }
}

/// The length of a byte string for `%.*s`.
fn len_of(s: &[u8]) -> c_int {
    s.len().min(c_int::MAX as usize) as c_int
}

/// A line of the call sites' report after `show_mem()`, in upstream's
/// format: `"%12s %8llu %s:%u [%s] func:%s\n"` (without ` [%s]` for
/// vmlinux), at `KERN_NOTICE`, without a prefix.
pub(crate) fn notice_site(size: &SizeText, calls: u64, site: &Site<'_>) {
    let size = size.0.as_ptr().cast::<c_char>();
    let (file, function) = (site.file, site.function);
    match site.module {
        // SAFETY: The format's conversions match the arguments: `%.*s`
        // takes an `int` length and a pointer to at least that many bytes.
        Some(module) => unsafe {
            bindings::_printk(
                c_str!("\x015%12s %8llu %.*s:%u [%.*s] func:%.*s\n").as_char_ptr(),
                size,
                calls as c_ulonglong,
                len_of(file),
                file.as_ptr(),
                site.line as c_uint,
                len_of(module),
                module.as_ptr(),
                len_of(function),
                function.as_ptr(),
            )
        },
        // SAFETY: As above.
        None => unsafe {
            bindings::_printk(
                c_str!("\x015%12s %8llu %.*s:%u func:%.*s\n").as_char_ptr(),
                size,
                calls as c_ulonglong,
                len_of(file),
                file.as_ptr(),
                site.line as c_uint,
                len_of(function),
                function.as_ptr(),
            )
        },
    };
}

/// A line of text at `KERN_NOTICE`, without a prefix.
pub(crate) fn notice(text: &[u8]) {
    // SAFETY: `%.*s` gets an `int` length and a pointer to that many bytes.
    unsafe {
        bindings::_printk(
            c_str!("\x015%.*s\n").as_char_ptr(),
            len_of(text),
            text.as_ptr(),
        )
    };
}

/// A line naming the code at `addr` (`function+offset/size [module]`), at
/// `KERN_WARNING`, with the module's prefix.
pub(crate) fn warn_symbol(addr: usize) {
    // SAFETY: `%pS` takes a code address, which it only looks up.
    unsafe {
        bindings::_printk(
            c_str!("\x014allocprof:   %pS\n").as_char_ptr(),
            addr as *const c_void,
        )
    };
}

/// The running task's call chain in the kernel log (`dump_stack()`), as
/// the kernel's fault injection prints it with `verbose` 2; any context.
pub(crate) fn dump_stack() {
    // SAFETY: No requirements.
    unsafe { bindings::dump_stack() };
}

/// Makes types with `core::fmt::Display` printable by `pr_*!` on 7.3 too,
/// whose `pr_*!` take the kernel crate's own `Display` (forwarded to core's
/// only for the kernel crate's types and primitives).
#[macro_export]
macro_rules! printable {
    ($t:ty) => {
        #[cfg(allocprof_tags)]
        impl kernel::fmt::Display for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(self, f)
            }
        }
    };
}
