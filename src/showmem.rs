// SPDX-License-Identifier: GPL-2.0

//! The biggest call sites after the kernel's memory report (`show_mem()`:
//! OOM reports, SysRq-m), in upstream's format:
//!
//! ```text
//! Memory allocations:
//!     6.25 MiB      200 drivers/foo.c:12 [foo] func:foo_probe
//!      512 KiB      128 mm/slub.c:2435 func:alloc_slab_page
//! ```
//!
//! It runs in any context and must not sleep or allocate: the registry is
//! only tried, as upstream tries the code-tag module list, and nothing is
//! printed when it is busy or when the CPU is not running a task (a mutex
//! must not be tried from an interrupt).  The top sites are picked into a
//! small array on the stack.

use crate::counters::{Counters, Totals};
use crate::ids::SiteId;
use crate::sys::printk::{self, SizeText};
use crate::sys::sync::{task_context, TryMutex};
use crate::tags::Registry;

/// At most this many call sites are printed (the kernel asks for 10).
const MAX_TOP: usize = 16;

/// Prints the `count` call sites of `registry` with the most bytes
/// allocated, as `counters` counted them.
pub(crate) fn show(registry: &TryMutex<Registry>, counters: &Counters, count: u32) {
    let count = (count as usize).min(MAX_TOP);
    if count == 0 || !task_context() {
        return;
    }
    let Some(mut registry) = registry.try_lock() else {
        return;
    };

    // Sorted by bytes, biggest first; a tie goes after the sites already
    // there (upstream's alloc_tag_top_users()).  The figures printed are
    // the ones read here, so the list is in order even while they change.
    let mut top: [(Option<SiteId>, Totals); MAX_TOP] = [(None, Totals::default()); MAX_TOP];
    let mut nr = 0;
    registry.for_each_id(|id, gone| {
        let totals = counters.read(id);
        // As in /proc/allocinfo: an unloaded module's call site only while
        // it has memory allocated.
        if gone && totals.is_zero() {
            return;
        }
        let Some(i) = (0..count).find(|&i| i == nr || totals.bytes > top[i].1.bytes) else {
            return;
        };
        nr = (nr + 1).min(count);
        top.copy_within(i..nr - 1, i + 1);
        top[i] = (Some(id), totals);
    });
    if nr == 0 {
        return;
    }

    printk::notice(b"Memory allocations:");
    for (id, totals) in &top[..nr] {
        let Some(id) = *id else {
            continue;
        };
        registry.with_site(id, |site, _, _| {
            printk::notice_site(&SizeText::new(totals.bytes as u64), totals.calls, site);
        });
    }
}
