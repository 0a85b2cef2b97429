// SPDX-License-Identifier: GPL-2.0

//! The reports beside the control file (`control.rs`), in
//! `/sys/kernel/debug/allocprof/`: what the flags `s`, `a`, `n`, `m`, `f`
//! and `c` keep of the call sites that have them.
//!
//! - `stacks`: the live allocations watched with `s`, by call site and
//!   call chain, biggest first, with the task of the latest allocation
//!   (its name escaped: see `write_task_name`); each chain from the caller
//!   of the allocation function on (see `callers`).
//! - `ages`: the live allocations watched with `a`, by call site and age
//!   in power-of-two buckets of seconds.
//! - `nodes`: the live pages watched with `n`, by call site and the node
//!   of their memory (as migration leaves it).
//! - `memcgs`: the live allocations watched with `m`, by call site and
//!   the memory cgroup of the context that made them (its path, escaped
//!   as a task's name, spaces too; `-`: a context that charges none;
//!   `?`: the memcg table was full), and on 7.3 the bytes of those that
//!   asked to be charged (`__GFP_ACCOUNT`).
//! - `faults`: the call sites with `f`, their failures, the allocations
//!   asked, and their knobs.
//! - `churn`: the call sites with `c`, their allocations and frees since
//!   the flag was set (calls and bytes), and the seconds since then.
//!
//! Each is made whole when it is opened (`sys/debugfs.rs`): the rows are
//! copied from the profiler's tables, then written with the names of
//! their call sites, read under the registry lock (`tags::Sites`).

use core::cell::OnceCell;
use core::fmt::Write;
use kernel::{error::Result, prelude::*};

use crate::churn::Row as ChurnRow;
use crate::counters::Totals;
use crate::faults::{Entry as FaultEntry, RATELIMIT_BURST, RATELIMIT_MS};
use crate::ids::SiteId;
use crate::profiler::Profiler;
use crate::state::Profiling;
use crate::sys::backend::Site;
use crate::sys::debugfs::{DebugText, Text};
use crate::sys::memcg::{MemcgRef, PATH_LEN};
use crate::sys::task::COMM_LEN;
use crate::tags::Sites;
use crate::text::{write_figures, write_site};
use crate::watch::{self, AgeRow, ChainRow, MemcgRow, NodeRow, MEMCGS};

/// The faults report.
pub(crate) struct Faults;

impl DebugText for Faults {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        out.write(b"# allocprof faults: call sites with the f flag: failures, allocations asked, the call site, its knobs (times and space: what is left)\n");
        let _ = writeln!(
            out,
            "# reports: at most {RATELIMIT_BURST} in {RATELIMIT_MS} ms, over all call sites"
        );
        profiling
            .with_profiler(|p| -> Result {
                let rows = p.fault_rows()?;
                let mut sites = p.sites();
                for row in rows.iter() {
                    if let Some(site) = sites.get(row.site) {
                        write_fault(out, row, &site.site());
                    }
                }
                Ok(())
            })
            .unwrap_or(Ok(()))
    }
}

fn write_fault(out: &mut Text, row: &FaultEntry, site: &Site<'_>) {
    let _ = write!(out, "failed:{} asked:{} ", row.failed, row.asked);
    write_site(out, site);
    let k = row.knobs;
    let _ = writeln!(
        out,
        " probability:{} interval:{} times:{} space:{} verbose:{}",
        k.probability, k.interval, row.times, row.space, k.verbose
    );
}

/// The churn report.
pub(crate) struct Churn;

impl DebugText for Churn {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        out.write(b"# allocprof churn: call sites with the c flag: allocations and frees since the flag was set, in calls and bytes, the seconds since then, the call site\n");
        profiling
            .with_profiler(|p| -> Result {
                let mut sites = p.sites();
                let rows = p.churn_rows()?;
                for row in rows.iter() {
                    if let Some(site) = sites.get(row.site) {
                        write_churn(out, row, &site.site());
                    }
                }
                Ok(())
            })
            .unwrap_or(Ok(()))
    }
}

fn write_churn(out: &mut Text, row: &ChurnRow, site: &Site<'_>) {
    let _ = write!(
        out,
        "allocs:{} frees:{} alloc_bytes:{} free_bytes:{} seconds:{}.{:03} ",
        row.allocs,
        row.frees,
        row.alloc_bytes,
        row.free_bytes,
        row.ns / 1_000_000_000,
        row.ns / 1_000_000 % 1000
    );
    write_site(out, site);
    out.write(b"\n");
}

/// The stacks report.
pub(crate) struct Stacks;

impl DebugText for Stacks {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        // One buffer for counting the frames left out, one for the rows.
        let mut counting = KVec::from_elem(0u8, FRAMES_TEXT, GFP_KERNEL)?;
        let mut frames = KVec::from_elem(0u8, FRAMES_TEXT, GFP_KERNEL)?;
        write_report(
            profiling,
            out,
            b"# allocprof stacks: live allocations of call sites with the s flag, by call chain, biggest first\n",
            Profiler::watched_chains,
            |out, rows| {
                let left_out: usize = rows
                    .iter()
                    .filter_map(|row| row.stack)
                    .map(|stack| callers(stack.write_frames(&mut counting)).1)
                    .sum();
                let _ = writeln!(
                    out,
                    "# allocator frames left out: {left_out} (each chain starts at the caller of the allocation function, after its outermost *_noprof frame)"
                );
            },
            |out, sites, row| write_chain(out, sites, row, &mut frames),
        )
    }
}

/// The bytes of a chain's frames as the stack depot prints them.
const FRAMES_TEXT: usize = 4096;

/// The frames of a chain as the stack depot prints them (a frame a line,
/// innermost first) from the caller of the allocation function on: those
/// after the outermost frame of a `*_noprof` function (the allocators'
/// entry points, which `alloc_hooks()` calls at the call site), and how
/// many were left out.  All of them if no frame is such a function, or if
/// none would be left.
fn callers(frames: &[u8]) -> (&[u8], usize) {
    let mut end = 0;
    let mut after = None;
    for (i, line) in frames.split_inclusive(|&b| b == b'\n').enumerate() {
        end += line.len();
        if is_allocation_api(line) {
            after = Some((end, i + 1));
        }
    }
    match after {
        Some((at, n)) if at < frames.len() => (&frames[at..], n),
        _ => (frames, 0),
    }
}

/// Whether a frame line (`"    name+0x1f/0x40 [module]"`) is in a function
/// whose name ends in `_noprof`, or in a compiler's copy of one
/// (`name.isra.0`).
fn is_allocation_api(line: &[u8]) -> bool {
    let start = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
    let symbol = line[start..].split(|&b| b == b'+').next();
    let name = symbol.and_then(|s| s.split(|&b| b == b'.').next());
    name.is_some_and(|n| n.ends_with(b"_noprof"))
}

/// A report of the watched allocations: its header, the tables'
/// statistics and what `summary` writes of the rows `rows` makes, then a
/// line or record for each of them, which `write_row` writes (nothing
/// after the header for `never`).
fn write_report<R>(
    profiling: &Profiling,
    out: &mut Text,
    header: &[u8],
    rows: impl FnOnce(&Profiler) -> Result<KVVec<R>>,
    summary: impl FnOnce(&mut Text, &[R]),
    mut write_row: impl FnMut(&mut Text, &mut Sites<'_>, &R),
) -> Result {
    out.write(header);
    profiling
        .with_profiler(|p| -> Result {
            let rows = rows(p)?;
            p.watch_stats().write(out);
            summary(out, &rows);
            let mut sites = p.sites();
            for row in rows.iter() {
                write_row(out, &mut sites, row);
            }
            Ok(())
        })
        .unwrap_or(Ok(()))
}

/// A report line's start: the figures and the call site, as in
/// `/proc/allocinfo`.
fn write_site_figures(out: &mut Text, sites: &mut Sites<'_>, id: SiteId, bytes: u64, calls: u64) {
    let totals = Totals {
        bytes: bytes as i64,
        calls,
    };
    if let Some(site) = sites.get(id) {
        write_figures(out, totals, &site.site());
    }
}

/// Writes a task name as the stacks report shows it, escaped
/// (`write_escaped`).  Any task may name itself (`prctl(PR_SET_NAME)`),
/// newlines included: raw, its name could add lines of its own to root's
/// report.
fn write_task_name(out: &mut Text, name: &[u8]) {
    write_escaped(out, &name[..name.len().min(COMM_LEN)], false);
}

/// Writes `bytes` with each byte below 0x20 (and the space, with
/// `space`), from 0x7f on, and the backslash as a backslash and three
/// octal digits (`seq_escape()`'s form: a newline is `\012`), the rest as
/// it is, so that the text stays one field of one line.
fn write_escaped(out: &mut Text, mut bytes: &[u8], space: bool) {
    let lowest = if space { 0x21 } else { 0x20 };
    let plain = |b: &u8| *b != b'\\' && (lowest..0x7f).contains(b);
    while !bytes.is_empty() {
        let n = bytes.iter().position(|b| !plain(b)).unwrap_or(bytes.len());
        out.write(&bytes[..n]);
        let Some(&b) = bytes.get(n) else {
            break;
        };
        out.write(&[
            b'\\',
            b'0' + (b >> 6),
            b'0' + ((b >> 3) & 7),
            b'0' + (b & 7),
        ]);
        bytes = &bytes[n + 1..];
    }
}

fn write_chain(out: &mut Text, sites: &mut Sites<'_>, row: &ChainRow, frames: &mut [u8]) {
    write_site_figures(out, sites, row.site, row.bytes, row.calls);
    let _ = write!(out, " pid:{} comm:", row.task.pid);
    write_task_name(out, row.task.name());
    out.write(b"\n");
    if let Some(stack) = row.stack {
        out.write(callers(stack.write_frames(frames)).0);
    }
    out.write(b"\n");
}

/// The ages report.
pub(crate) struct Ages;

impl DebugText for Ages {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        write_report(
            profiling,
            out,
            b"# allocprof ages: live allocations of call sites with the a flag, by age in power-of-two buckets of seconds\n",
            Profiler::watched_ages,
            |_, _| {},
            write_age,
        )
    }
}

fn write_age(out: &mut Text, sites: &mut Sites<'_>, row: &AgeRow) {
    write_site_figures(out, sites, row.site, row.bytes, row.calls);
    out.write(b" age:");
    watch::write_age_label(out, row.bucket);
    out.write(b"\n");
}

/// The nodes report.
pub(crate) struct Nodes;

impl DebugText for Nodes {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        write_report(
            profiling,
            out,
            b"# allocprof nodes: live pages of call sites with the n flag, by the node of their memory\n",
            Profiler::watched_nodes,
            |_, _| {},
            write_node,
        )
    }
}

fn write_node(out: &mut Text, sites: &mut Sites<'_>, row: &NodeRow) {
    write_site_figures(out, sites, row.site, row.bytes, row.calls);
    let _ = writeln!(out, " node:{}", row.node.get());
}

/// The memcgs report.
pub(crate) struct Memcgs;

/// The cgroups the memcgs report's rows name (by slot) and the allocations
/// kept without theirs ([`Profiler::watched_memcgs`]); dropped, in
/// process context, once the text is made.
type MemcgNames = (KVVec<Option<MemcgRef>>, u64);

impl DebugText for Memcgs {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        let names: OnceCell<MemcgNames> = OnceCell::new();
        write_report(
            profiling,
            out,
            b"# allocprof memcgs: live allocations of call sites with the m flag, by the memory cgroup of the context that made them\n",
            |p| {
                let (rows, held, full) = p.watched_memcgs()?;
                let _ = names.set((held, full));
                Ok(rows)
            },
            |out, _| {
                if let Some((held, full)) = names.get() {
                    let held = held.iter().filter(|n| n.is_some()).count();
                    let _ = writeln!(
                        out,
                        "# memcgs: {held}/{MEMCGS} held; kept without their memcg: {full} (table full)"
                    );
                }
            },
            |out, sites, row| write_memcg(out, sites, row, names.get()),
        )
    }
}

fn write_memcg(out: &mut Text, sites: &mut Sites<'_>, row: &MemcgRow, names: Option<&MemcgNames>) {
    write_site_figures(out, sites, row.site, row.bytes, row.calls);
    out.write(b" memcg:");
    let name = names
        .and_then(|(n, _)| n.get(row.memcg as usize))
        .and_then(Option::as_ref);
    let mut buf = [0u8; PATH_LEN];
    match name.map(|n| n.path(&mut buf)) {
        Some(Some((path, cut))) => {
            write_escaped(out, path, true);
            if cut {
                out.write(b"...");
            }
        }
        None if row.memcg == MEMCGS as u32 => out.write(b"-"),
        _ => out.write(b"?"),
    }
    #[cfg(allocprof_tags)]
    let _ = write!(out, " accounted:{}", row.accounted);
    out.write(b"\n");
}
