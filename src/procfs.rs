// SPDX-License-Identifier: GPL-2.0

//! `/proc/allocinfo`, in upstream's format (version 1.0):
//!
//! ```text
//! allocinfo - version: 1.0
//! #     <size>  <calls> <tag info>
//!        4096        1 mm/percpu-vm.c:33 func:pcpu_get_pages
//!        8192        2 drivers/foo.c:12 [foo] func:foo_probe
//! ```
//!
//! Positions are call-site ids (0 is the header), so a reader resumes where
//! it was even when modules come and go between its reads.  Each line is
//! written under the control and registry locks, which allocations never
//! take, straight into the `seq_file` buffer: no allocation per line.

use crate::sys::procfs::{SeqFile, SeqSource};
use crate::tags::SiteId;
use crate::with_profiler;

/// The contents of `/proc/allocinfo`.
pub(crate) struct AllocInfo;

impl SeqSource for AllocInfo {
    fn seek(pos: u64) -> Option<u64> {
        if pos == 0 {
            return Some(0);
        }
        // Past the last id: the end.
        let from = SiteId::new(u16::try_from(pos).ok()?)?;
        with_profiler(|p| p.registry.lock().seek(from))?.map(|id| id.get().into())
    }

    fn show(out: &mut SeqFile, item: u64) {
        if item == 0 {
            out.write(b"allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n");
            return;
        }
        let Some(id) = u16::try_from(item).ok().and_then(SiteId::new) else {
            return;
        };
        with_profiler(|p| p.registry.lock().show(out, id, &p.counters));
    }
}
