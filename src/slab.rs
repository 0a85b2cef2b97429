// SPDX-License-Identifier: GPL-2.0

//! Slab and percpu objects: the call site lives in the per-object slot the
//! kernel keeps next to every object (the slab's or percpu chunk's object
//! extension vector), so no object address is ever hashed or looked up.
//!
//! A slot holds `generation << 32 | id`.  Slots outlive the module (the
//! kernel frees objects while no back end is registered, and keeps the
//! vectors), so the generation of the registration that wrote a slot tells
//! our own values from those an earlier load left behind.  (Pages keep
//! their ids in the PFN array of `page.rs`.)

use crate::ids::SiteId;

/// The slot value for call site `id` in registration `generation`.
#[inline(always)]
pub(crate) fn encode(generation: u32, id: SiteId) -> u64 {
    (u64::from(generation) << 32) | u64::from(id.get())
}

/// The call site of slot value `v`, if registration `generation` wrote it
/// (`generation` is a profiler's: never 0, nor the kernel's record's ~0,
/// see `Profiler::new`).
#[inline(always)]
pub(crate) fn decode(generation: u32, v: u64) -> Option<SiteId> {
    if (v >> 32) as u32 != generation {
        return None;
    }
    SiteId::new((v & 0xffff) as u16)
}

/// Whether slot value `v` is one a registration of allocprof up to
/// `generation` writes: `generation << 32 | id` with a non-zero id.
pub(crate) fn plausible(generation: u32, v: u64) -> bool {
    let g = (v >> 32) as u32;
    v & 0xffff_0000 == 0 && v & 0xffff != 0 && g != 0 && g <= generation
}
