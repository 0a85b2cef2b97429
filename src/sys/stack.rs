// SPDX-License-Identifier: GPL-2.0

//! The current call chain, as return addresses (the kernel's unwinder,
//! `stack_trace_save()`): no allocation, any context; and call chains kept
//! in the kernel's stack depot, deduplicated, by a 32-bit handle.

use core::num::NonZeroU32;
use kernel::{
    bindings,
    error::{to_result, Result},
    ffi::{c_uint, c_ulong},
    ThisModule,
};

use super::backend::Gfp;

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
        let n = unsafe { bindings::stack_trace_save(raw.as_mut_ptr(), raw.len() as c_uint, 0) };
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

    /// Keeps the chain in the stack depot; any context, never sleeps.  The
    /// depot may allocate a new pool when its pools are full, as `gfp`
    /// allows ([`Gfp::depot`]: never sleeping; waking kswapd only if the
    /// allocation whose chain this is may: the caller may be in the page
    /// allocator's own way, with flags that forbid it, so the allocation
    /// fails rather than wait or wake anyone; 6.12's hooks, not handed the
    /// flags, pass [`Gfp::NONE`]); else such a chain is not kept.  `None`
    /// if it was not kept.
    pub(crate) fn save(&mut self, gfp: Gfp) -> Option<StackHandle> {
        let flags: bindings::depot_flags_t = bindings::STACK_DEPOT_FLAG_CAN_ALLOC;
        // SAFETY: `entries` is valid for `len` return addresses (the
        // kernel's `unsigned long` is `usize`); the depot copies them.
        let handle = unsafe {
            bindings::stack_depot_save_flags(
                self.entries.as_mut_ptr().cast::<c_ulong>(),
                self.len as c_uint,
                gfp.depot(),
                flags,
            )
        };
        NonZeroU32::new(handle).map(StackHandle)
    }
}

/// A call chain in the kernel's stack depot, which keeps it until reboot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackHandle(NonZeroU32);

impl StackHandle {
    /// Makes the stack depot ready (its hash table), if nothing did yet.
    /// Process context: it may sleep.
    pub(crate) fn init_depot() -> Result {
        // SAFETY: No requirements; it takes the depot's own lock.
        to_result(unsafe { bindings::stack_depot_init() })
    }

    /// The handle as a number.
    pub(crate) fn get(self) -> u32 {
        self.0.get()
    }

    /// Writes the chain into `buf`, a frame a line as `"    %pS\n"`;
    /// returns what was written (cut where `buf` ends).
    pub(crate) fn write_frames(self, buf: &mut [u8]) -> &[u8] {
        // The depot indents by one space more than it is asked for.
        // SAFETY: `buf` is writable for its length, which is passed; the
        // handle is the depot's, which never drops an uncounted chain.
        let n = unsafe {
            bindings::stack_depot_snprint(self.get(), buf.as_mut_ptr().cast(), buf.len(), 3)
        };
        &buf[..(n.max(0) as usize).min(buf.len())]
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
