// SPDX-License-Identifier: GPL-2.0

//! The biggest call sites after the kernel's memory report (`show_mem()`:
//! OOM reports, SysRq-m), in upstream's format (the header is the kernel's
//! own, `printk::show_mem_header()`: 7.3's adds whether profiling is on):
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

use crate::counters::Totals;
use crate::ids::SiteId;
use crate::sys::printk::{self, SizeText};
use crate::sys::sync::task_context;
use crate::tags::Sites;

/// At most this many call sites are printed (the kernel asks for 10).
const MAX_TOP: usize = 16;

/// Prints the `count` call sites with the most bytes allocated, of the
/// call sites `try_sites` gives: called only in task context, it tries the
/// registry lock.
pub(crate) fn show<'a>(count: u32, try_sites: impl FnOnce() -> Option<Sites<'a>>) {
    let count = (count as usize).min(MAX_TOP);
    if count == 0 || !task_context() {
        return;
    }
    let Some(mut sites) = try_sites() else {
        return;
    };

    // Sorted by bytes, biggest first; a tie goes after the sites already
    // there (upstream's alloc_tag_top_users()).  The figures printed are
    // the ones read here, so the list is in order even while they change.
    let mut top: [(Option<SiteId>, Totals); MAX_TOP] = [(None, Totals::default()); MAX_TOP];
    let mut nr = 0;
    for site in sites.iter().filter(|site| site.visible()) {
        let totals = site.totals();
        let Some(i) = (0..count).find(|&i| i == nr || totals.bytes > top[i].1.bytes) else {
            continue;
        };
        nr = (nr + 1).min(count);
        top.copy_within(i..nr - 1, i + 1);
        top[i] = (Some(site.id()), totals);
    }
    if nr == 0 {
        return;
    }

    printk::notice(printk::show_mem_header());
    for (id, totals) in &top[..nr] {
        let Some(site) = id.and_then(|id| sites.get(id)) else {
            continue;
        };
        printk::notice_site(
            &SizeText::new(totals.bytes as u64),
            totals.calls,
            &site.site(),
        );
    }
}
