// SPDX-License-Identifier: GPL-2.0

//! Call sites as text, for every place that shows one: `/proc/allocinfo`
//! (`procfs.rs`), the reports (`reports.rs`) and the
//! kernel log.

use core::fmt::Write;

use crate::counters::Totals;
use crate::sys::backend::Site;
use crate::sys::Output;

/// Bytes from a code tag, printed as they are.
pub(crate) struct BStr<'a>(pub(crate) &'a [u8]);

impl core::fmt::Display for BStr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &b in self.0 {
            f.write_char(if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            })?;
        }
        Ok(())
    }
}

/// The start of a `/proc/allocinfo` line, which the per-site reports
/// share: `"%12lli %8llu "`, then `file:line`, ` [module]` for a module's
/// call site, and ` func:name`.
pub(crate) fn write_figures(out: &mut impl Output, totals: Totals, site: &Site<'_>) {
    let _ = write!(out, "{:12} {:8} ", totals.bytes, totals.calls);
    write_site(out, site);
}

/// A call site as `/proc/allocinfo` names it: `file:line [module] func:name`.
pub(crate) fn write_site(out: &mut impl Output, site: &Site<'_>) {
    out.put(site.file);
    let _ = write!(out, ":{}", site.line);
    if let Some(module) = site.module {
        out.put(b" [");
        out.put(module);
        out.put(b"]");
    }
    out.put(b" func:");
    out.put(site.function);
}

crate::printable!(BStr<'_>);
