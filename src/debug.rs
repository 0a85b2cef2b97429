// SPDX-License-Identifier: GPL-2.0

//! Debug mode (`debug=1`): reports of what the profiler cannot count
//! right.  Of what upstream 6.12's `CONFIG_MEM_ALLOC_PROFILING_DEBUG` does,
//! which the patch series removes from the kernel, it covers the two
//! allocation checks of `alloc_tag_add_check()` ("current->alloc_tag not
//! set": the untagged allocation below; "alloc_tag was not cleared": the
//! allocation over a live reference) and the read-only `vm.mem_profiling`;
//! not the free check of `alloc_tag_sub_check()` ("alloc_tag was not set",
//! see below) nor `alloc_tag_restore()`'s "current->alloc_tag was changed"
//! (a nested `alloc_hooks()` that did not restore the tag).  It adds one
//! check upstream has not: the free of a foreign slot value.
//!
//! What is reported, each once per call chain (the first eight return
//! addresses past the hooks), with the chain, as `allocprof: ...` lines at
//! `KERN_WARNING` (not `WARN()`: a debug report is not a kernel bug):
//!
//! - an *untagged allocation*: a page or object allocated while profiling
//!   is on, with `current->alloc_tag` unset: a missing `alloc_hooks()`
//!   annotation (a `_noprof` function called directly).  It is not counted.
//!   The hooks get no caller address: the call chain names the caller.
//! - an allocation *over a live reference*: the page's or object's slot
//!   still holds a reference this load of the module wrote, so the free of
//!   the previous allocation there was never seen, and its call site's
//!   figures stay too high.  (The kernel zeroes every object slot when a
//!   back end unregisters, and page references are new at every load.)
//! - the free of an object whose slot holds a value allocprof does not
//!   write (an id that is no call site's with counters and no watch id):
//!   a corrupted slot, or one written by another back end.
//!
//! What cannot be detected: upstream's "alloc_tag was not set" on free.
//! The kernel only calls `obj_free` for a non-zero slot, and a page without
//! a reference is, for a module loaded after boot, mostly one allocated
//! before the load; neither tells a missed allocation from a legitimate
//! one.  Allocations already under way when profiling is switched on (at
//! load) have no tag yet and may be reported as untagged once.
//!
//! In debug mode `vm.mem_profiling` is read-only, as upstream's: switching
//! profiling on and off makes allocations without tags on purpose.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{error::Result, prelude::*, ThisModule};

use crate::ids::SiteId;
use crate::sys::{param::ParamValue, printk, stack::Trace};

/// The `debug=` value given at load.  A static, as C's `module_param()`
/// storage: the kernel parses the parameter before the module's `init`
/// runs, when no state of the module exists yet; `init` reads it once.
static DEBUG: AtomicBool = AtomicBool::new(false);

/// Whether the module was loaded with `debug=1`.
pub(crate) fn enabled() -> bool {
    DEBUG.load(Ordering::Relaxed)
}

/// The `debug=0|1` module parameter.
pub(crate) struct DebugParam;

impl ParamValue for DebugParam {
    fn set(text: &[u8]) -> Result {
        let on = match text.strip_suffix(b"\n").unwrap_or(text) {
            b"0" => false,
            b"1" => true,
            _ => {
                pr_err!("debug= must be 0 or 1\n");
                return Err(EINVAL);
            }
        };
        DEBUG.store(on, Ordering::Relaxed);
        Ok(())
    }

    fn get(buf: &mut [u8]) -> usize {
        buf[0] = if enabled() { b'1' } else { b'0' };
        buf[1] = b'\n';
        2
    }
}

/// Something the profiler cannot count right.
#[derive(Clone, Copy)]
pub(crate) enum Report {
    /// `2^order` pages allocated without a tag.
    UntaggedPages { order: u32 },
    /// A slab or percpu object of `size` bytes allocated without a tag.
    UntaggedObject { size: usize },
    /// Pages allocated where call site `id`'s reference was still live.
    PagesOverLive { id: SiteId },
    /// An object allocated where call site `id`'s reference was still live.
    ObjectOverLive { id: SiteId },
    /// An object freed with a slot value allocprof never writes.
    ForeignSlot { value: u16 },
}

impl Report {
    fn kind(self) -> u64 {
        match self {
            Report::UntaggedPages { .. } => 1,
            Report::UntaggedObject { .. } => 2,
            Report::PagesOverLive { .. } => 3,
            Report::ObjectOverLive { .. } => 4,
            Report::ForeignSlot { .. } => 5,
        }
    }
}

/// Call chains reported so far (hashes; 0: free).
const SEEN_SLOTS: usize = 64;
/// Return addresses that make a call chain.
const CHAIN_DEPTH: usize = 8;

/// What has been reported: the call chains, and whether reports stopped.
/// The profiler keeps it (`Profiler::reports`): the hooks of debug mode
/// reach it through their data, and a new load starts afresh.
pub(crate) struct Reports {
    /// Call chains reported so far (hashes; 0: free).
    seen: [AtomicU64; SEEN_SLOTS],
    /// More than `SEEN_SLOTS` call chains came: no further reports.
    suppressed: AtomicBool,
    /// allocprof's module, whose frames a call chain leaves out.
    module: &'static ThisModule,
}

impl Reports {
    /// Nothing reported yet; `module` is allocprof's.
    pub(crate) fn new(module: &'static ThisModule) -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const FREE: AtomicU64 = AtomicU64::new(0);
        Self {
            seen: [FREE; SEEN_SLOTS],
            suppressed: AtomicBool::new(false),
            module,
        }
    }

    /// Whether `key` is new (and records it); lock-free.
    fn first_time(&self, key: u64) -> bool {
        let start = (key % SEEN_SLOTS as u64) as usize;
        for i in 0..SEEN_SLOTS {
            let slot = &self.seen[(start + i) % SEEN_SLOTS];
            match slot.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(k) if k == key => return false,
                Err(_) => {}
            }
        }
        if !self.suppressed.swap(true, Ordering::Relaxed) {
            pr_warn!(
                "debug: more than {} call chains reported, no further reports\n",
                SEEN_SLOTS
            );
        }
        false
    }
}

/// FNV-1a of the report's kind and the call chain.
fn chain_key(kind: u64, chain: &[usize]) -> u64 {
    let step = |h: u64, v: u64| (h ^ v).wrapping_mul(0x0100_0000_01b3);
    let h = chain
        .iter()
        .fold(step(0xcbf2_9ce4_8422_2325, kind), |h, &a| step(h, a as u64));
    h | 1
}

/// Reports `r` with the call chain, once per call chain of `reports`.
/// Cold: only called in debug mode for something wrong.  No allocation, no
/// lock.  `reports` (the profiler's) comes last, as the profiler does in
/// the cold paths of `profiler.rs`: the hooks keep their registers.
#[cold]
#[inline(never)]
pub(crate) fn report(r: Report, reports: &Reports) {
    let trace = Trace::capture(reports.module);
    let chain = trace.entries();
    if !reports.first_time(chain_key(r.kind(), &chain[..chain.len().min(CHAIN_DEPTH)])) {
        return;
    }
    match r {
        Report::UntaggedPages { order } => pr_warn!(
            "debug: untagged allocation of {} pages (order {}), not counted: no alloc_hooks() around it; call chain:\n",
            1u64 << order,
            order
        ),
        Report::UntaggedObject { size } => pr_warn!(
            "debug: untagged allocation of a {}-byte slab or percpu object, not counted: no alloc_hooks() around it; call chain:\n",
            size
        ),
        Report::PagesOverLive { id } => pr_warn!(
            "debug: pages allocated over a live reference of call site {}: its free was not seen, its figures stay too high; call chain:\n",
            id
        ),
        Report::ObjectOverLive { id } => pr_warn!(
            "debug: object allocated over a live reference of call site {}: its free was not seen, its figures stay too high; call chain:\n",
            id
        ),
        Report::ForeignSlot { value } => pr_warn!(
            "debug: object freed with slot value {:#x}, which allocprof does not write: not subtracted; call chain:\n",
            value
        ),
    }
    for &a in chain {
        printk::warn_symbol(a);
    }
}
