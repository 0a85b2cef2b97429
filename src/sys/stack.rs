// SPDX-License-Identifier: GPL-2.0

//! The current call chain, as return addresses (the kernel's unwinder,
//! `stack_trace_save()`): no allocation, any context.

use kernel::{bindings, ffi::c_ulong, ThisModule};

/// Return addresses kept per trace.
pub(crate) const DEPTH: usize = 16;

/// A call chain, innermost first.
pub(crate) struct Trace {
    entries: [usize; DEPTH],
    len: usize,
}

impl Trace {
    /// The call chain of the caller, from the first frame outside `module`
    /// (the hooks' own frames are left out).
    #[inline(never)]
    pub(crate) fn capture(module: &ThisModule) -> Self {
        // The kernel's `unsigned long` is `usize`.
        let mut raw: [c_ulong; DEPTH + 8] = [0; DEPTH + 8];
        // SAFETY: `raw` is writable for the length passed.
        let n = unsafe { bindings::stack_trace_save(raw.as_mut_ptr(), raw.len() as _, 0) };
        let (start, size) = text_of(module);
        let mut entries = [0usize; DEPTH];
        let mut len = 0;
        let outside = raw[..(n as usize).min(raw.len())]
            .iter()
            .skip_while(|&&a| a.wrapping_sub(start) < size);
        for (e, &a) in entries.iter_mut().zip(outside) {
            *e = a;
            len += 1;
        }
        Self { entries, len }
    }

    /// The return addresses, innermost first.
    pub(crate) fn entries(&self) -> &[usize] {
        &self.entries[..self.len]
    }
}

/// The start and size of the code of `module`.
fn text_of(module: &ThisModule) -> (usize, usize) {
    let m = module.as_ptr();
    if m.is_null() {
        return (0, 0);
    }
    // SAFETY: `m` is this module, loaded while its code runs; its text
    // region is set up before its first instruction runs and not changed
    // after.
    let text = unsafe { &(*m).mem[bindings::mod_mem_type_MOD_TEXT as usize] };
    (text.base as usize, text.size as usize)
}
