// SPDX-License-Identifier: GPL-2.0

//! Module parameters parsed by the module itself.
//!
//! The `module!` macro of 6.12 has no parameters, so a parameter is a
//! `struct kernel_param` placed in the `__param` section, as C's
//! `module_param_cb()` does; see [`module_param!`](crate::module_param).

use core::marker::PhantomData;
use kernel::{
    bindings,
    ffi::{c_char, c_int},
    str::CStr,
};

/// How a parameter's text is taken and shown.
pub(crate) trait ParamValue {
    /// Takes the text given at load time (`insmod m name=text`); an error
    /// fails the load.
    fn set(text: &[u8]) -> kernel::error::Result;
    /// Writes the current value into `buf`; returns the number of bytes.
    fn get(buf: &mut [u8; 16]) -> usize;
}

/// # Safety
///
/// Called by the kernel with a NUL-terminated string (or NULL for a bare
/// `name`).
unsafe extern "C" fn param_set<V: ParamValue>(
    val: *const c_char,
    _kp: *const bindings::kernel_param,
) -> c_int {
    let text = if val.is_null() {
        &b""[..]
    } else {
        // SAFETY: The kernel passes a NUL-terminated string.
        unsafe { CStr::from_char_ptr(val) }.as_bytes()
    };
    match V::set(text) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by the kernel with a buffer of `PAGE_SIZE` bytes.
unsafe extern "C" fn param_get<V: ParamValue>(
    buffer: *mut c_char,
    _kp: *const bindings::kernel_param,
) -> c_int {
    let mut text = [0u8; 16];
    let n = V::get(&mut text);
    // SAFETY: The buffer has room for `PAGE_SIZE` bytes, more than 16.
    unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), n) };
    n as c_int
}

/// The operations of a parameter of type `V`.
#[repr(transparent)]
pub(crate) struct ParamOps<V>(bindings::kernel_param_ops, PhantomData<V>);

// SAFETY: Read-only after build: function pointers only.
unsafe impl<V> Sync for ParamOps<V> {}

impl<V: ParamValue> ParamOps<V> {
    /// The operations for `V`.
    pub(crate) const fn new() -> Self {
        Self(
            bindings::kernel_param_ops {
                flags: 0,
                set: Some(param_set::<V>),
                get: Some(param_get::<V>),
                free: None,
            },
            PhantomData,
        )
    }
}

/// One entry of the `__param` section.
#[repr(transparent)]
pub(crate) struct KernelParam(bindings::kernel_param);

// SAFETY: Read-only after build; the kernel reads it while loading.
unsafe impl Sync for KernelParam {}

impl KernelParam {
    /// A parameter `name` handled by `ops`, shown in sysfs with `perm`.
    pub(crate) const fn new<V>(name: &'static CStr, perm: u16, ops: &'static ParamOps<V>) -> Self {
        Self(bindings::kernel_param {
            name: name.as_char_ptr(),
            mod_: core::ptr::null_mut(),
            ops: &ops.0,
            perm,
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
                arg: core::ptr::null_mut(),
            },
        })
    }
}

/// Declares module parameter `$name` whose text `$value` (a
/// [`ParamValue`]) parses; `$perm` are its sysfs permissions.
#[macro_export]
macro_rules! module_param {
    ($name:ident, $value:ty, $perm:expr) => {
        const _: () = {
            static OPS: $crate::sys::param::ParamOps<$value> = $crate::sys::param::ParamOps::new();
            #[link_section = "__param"]
            #[used]
            static PARAM: $crate::sys::param::KernelParam = $crate::sys::param::KernelParam::new(
                kernel::c_str!(stringify!($name)),
                $perm,
                &OPS,
            );
        };
    };
}
