// SPDX-License-Identifier: GPL-2.0

//! Module parameters parsed by the module itself.
//!
//! The `module!` macro of 6.12 has no parameters, so a parameter is a
//! `struct kernel_param` placed in the `__param` section, as C's
//! `module_param_cb()` does; see [`module_param!`](crate::module_param).

use core::{
    marker::PhantomData,
    sync::atomic::{AtomicU8, AtomicUsize, Ordering},
};
use kernel::{
    alloc::{flags::GFP_KERNEL, KVec},
    bindings,
    ffi::{c_char, c_int},
    page::PAGE_SIZE,
};

/// How a parameter's text is taken and shown.
pub(crate) trait ParamValue {
    /// Takes the text given at load time (`insmod m name=text`); an error
    /// fails the load.
    fn set(text: &[u8]) -> kernel::error::Result;
    /// Writes the current value into `buf` (the kernel's page for it, of
    /// `PAGE_SIZE` bytes); returns the number of bytes.
    fn get(buf: &mut [u8]) -> usize;
}

/// The text of a parameter kept for `init`, up to `N` bytes: the storage of
/// a parameter whose value is text, as C's `module_param_string()`.  Atomic
/// bytes, as the kernel may store while something reads (a parameter given
/// twice is stored twice); `init` takes the last value whole.
pub(crate) struct ParamText<const N: usize> {
    bytes: [AtomicU8; N],
    len: AtomicUsize,
}

impl<const N: usize> ParamText<N> {
    /// Empty.
    pub(crate) const fn new() -> Self {
        Self {
            bytes: [const { AtomicU8::new(0) }; N],
            len: AtomicUsize::new(0),
        }
    }

    /// Keeps `text`, which the caller checked is at most `N` bytes.
    pub(crate) fn store(&self, text: &[u8]) {
        for (b, &c) in self.bytes.iter().zip(text) {
            b.store(c, Ordering::Relaxed);
        }
        self.len.store(text.len().min(N), Ordering::Release);
    }

    /// Copies the text kept and a newline into `buf` (as much as fits);
    /// returns the number of bytes.
    pub(crate) fn copy_to(&self, buf: &mut [u8]) -> usize {
        let len = self
            .len
            .load(Ordering::Acquire)
            .min(buf.len().saturating_sub(1));
        for (out, b) in buf.iter_mut().zip(&self.bytes[..len]) {
            *out = b.load(Ordering::Relaxed);
        }
        if let Some(nl) = buf.get_mut(len) {
            *nl = b'\n';
            len + 1
        } else {
            len
        }
    }

    /// A copy of the text kept.
    pub(crate) fn to_vec(&self) -> kernel::error::Result<KVec<u8>> {
        let len = self.len.load(Ordering::Acquire);
        let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
        for b in &self.bytes[..len] {
            v.push(b.load(Ordering::Relaxed), GFP_KERNEL)?;
        }
        Ok(v)
    }
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
        unsafe { super::compat::c_bytes(val) }
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
    // SAFETY: The kernel hands a buffer of `PAGE_SIZE` bytes, ours for the
    // call.
    let buf = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), PAGE_SIZE) };
    V::get(buf) as c_int
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
    /// A parameter `name` (its bytes with a NUL at the end) handled by
    /// `ops`, shown in sysfs with `perm`.  Bytes rather than a `CStr`: the
    /// two kernels' `CStr` types differ, and 7.3's pointer is not `const`.
    pub(crate) const fn new<V>(name: &'static [u8], perm: u16, ops: &'static ParamOps<V>) -> Self {
        assert!(!name.is_empty() && name[name.len() - 1] == 0);
        Self(bindings::kernel_param {
            name: name.as_ptr().cast(),
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
                concat!(stringify!($name), "\0").as_bytes(),
                $perm,
                &OPS,
            );
        };
    };
}
