// SPDX-License-Identifier: GPL-2.0

//! `/proc/allocinfo`, in upstream's format: version 1.0 (6.12's, the
//! default) or, with `allocinfo_format=2.0`, version 2.0, which marks the
//! call sites whose figures miss some allocations with `accurate:no`:
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

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{error::Result, prelude::*};

use crate::sys::param::ParamValue;
use crate::sys::procfs::{SeqFile, SeqSource};
use crate::tags::SiteId;
use crate::with_profiler;

/// The format of `/proc/allocinfo`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `allocinfo - version: 1.0`, as 6.12 prints it.
    V1,
    /// `allocinfo - version: 2.0`: lines may end in ` accurate:no`.
    V2,
}

/// Set by the `allocinfo_format` parameter at load.
static FORMAT_V2: AtomicBool = AtomicBool::new(false);

/// The format chosen at load.
pub(crate) fn format() -> Format {
    if FORMAT_V2.load(Ordering::Relaxed) {
        Format::V2
    } else {
        Format::V1
    }
}

/// `allocinfo_format=1.0|2.0`; anything else fails the load.
pub(crate) struct FormatParam;

impl ParamValue for FormatParam {
    fn set(text: &[u8]) -> Result {
        let v2 = match text.strip_suffix(b"\n").unwrap_or(text) {
            b"1.0" => false,
            b"2.0" => true,
            _ => {
                pr_err!("allocinfo_format= must be 1.0 or 2.0\n");
                return Err(EINVAL);
            }
        };
        FORMAT_V2.store(v2, Ordering::Relaxed);
        Ok(())
    }

    fn get(buf: &mut [u8; 16]) -> usize {
        let text: &[u8] = match format() {
            Format::V1 => b"1.0\n",
            Format::V2 => b"2.0\n",
        };
        buf[..text.len()].copy_from_slice(text);
        text.len()
    }
}

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
            out.write(match format() {
                Format::V1 => b"allocinfo - version: 1.0\n",
                Format::V2 => b"allocinfo - version: 2.0\n",
            });
            out.write(b"#     <size>  <calls> <tag info>\n");
            return;
        }
        let Some(id) = u16::try_from(item).ok().and_then(SiteId::new) else {
            return;
        };
        with_profiler(|p| {
            p.registry
                .lock()
                .show(out, id, &p.counters, &p.uncounted, format())
        });
    }
}
