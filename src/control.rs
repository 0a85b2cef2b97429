// SPDX-License-Identifier: GPL-2.0

//! Per-call-site control in debugfs, with dynamic debug's grammar
//! (`Documentation/admin-guide/dynamic-debug-howto.rst`), and the reports
//! of the watched call sites:
//!
//! - `/sys/kernel/debug/allocprof/control`: reading lists every call site
//!   of the loaded images as `file:line [module]function =flags`; writing
//!   `[match-spec ...] flags-spec [knob=value ...]` commands (`;` or
//!   newline between them; the grammar is in `query.rs`) sets the flags of
//!   the call sites that match: `p` (profile: new
//!   allocations are counted; memory counted before still leaves its
//!   figure when freed; a site that loses it is `accurate:no` in format
//!   2.0 from then on), `s` (each allocation's call chain is kept), `a`
//!   (its age is kept), `n` (the node of its pages is kept) and `f` (its
//!   allocations fail as the command's knobs say: `faults.rs`).  A bad
//!   command fails the write with `EINVAL` and a message naming the bad
//!   word, more call sites with `f` than the fault table holds with
//!   `ENOSPC`, `f` on allocprof's own call sites with `EPERM` (see
//!   [`apply`]); nothing is changed then.
//! - `stacks`: the live allocations watched with `s`, by call site and
//!   call chain, biggest first, with the task of the latest allocation
//!   (its name escaped: see `write_task_name`); each chain from the caller
//!   of the allocation function on (see `callers`).
//! - `ages`: the live allocations watched with `a`, by call site and age
//!   in power-of-two buckets of seconds.
//! - `nodes`: the live pages watched with `n`, by call site and the node
//!   of their memory (as migration leaves it).
//! - `faults`: the call sites with `f`, their failures, the allocations
//!   asked, and their knobs.
//!
//! The module parameter `control=` (on the kernel command line
//! `allocprof.control=`) gives commands of the same grammar to apply at
//! load, before the control file exists, and to each module that loads
//! later.
//!
//! The flags live in the tags' words (`ids.rs`); the watched allocations
//! in the profiler's [`Watch`](crate::watch::Watch).

use core::fmt::Write;
use kernel::{error::Result, prelude::*, sync::Arc};

use crate::counters::Totals;
use crate::faults::{Entry as FaultEntry, FAULT_SITES, RATELIMIT_BURST, RATELIMIT_MS};
use crate::ids::{Flags, SiteId};
use crate::profiler::Profiler;
use crate::query::{final_flags, queries, Query, OWN_MODULE, VMLINUX};
use crate::state::Profiling;
use crate::sys::backend::Registration;
use crate::sys::debugfs::{writes_locked_down, DebugDir, DebugText, Text};
use crate::sys::param::{ParamText, ParamValue};
use crate::sys::task::{self, COMM_LEN};
use crate::tags::Sites;
use crate::text::{write_figures, write_site, BStr};
use crate::watch::{self, AgeRow, ChainRow, NodeRow};

/// `/sys/kernel/debug/allocprof/` with the control file and the reports,
/// of the profiler of `profiling`.
pub(crate) fn files(
    module: &'static kernel::ThisModule,
    profiling: Arc<Profiling>,
) -> Result<DebugDir<Profiling>> {
    let mut dir = DebugDir::new(kernel::c_str!("allocprof"), profiling)?;
    dir.add::<Control>(kernel::c_str!("control"), 0o600, module)?;
    dir.add::<Stacks>(kernel::c_str!("stacks"), 0o400, module)?;
    dir.add::<Ages>(kernel::c_str!("ages"), 0o400, module)?;
    dir.add::<Nodes>(kernel::c_str!("nodes"), 0o400, module)?;
    dir.add::<Faults>(kernel::c_str!("faults"), 0o400, module)?;
    Ok(dir)
}

/// The longest `control=` value: the kernel command line of x86 has 2048
/// bytes in all.
const PARAM_MAX: usize = 2048;

/// The storage of `control=`, as C's `module_param_string()`.
static PARAM: ParamText<PARAM_MAX> = ParamText::new();

/// `control=`: commands of the control file's grammar, applied at load by
/// [`apply_param`].  Parsed when the kernel sets it: a bad command fails
/// the load with the control file's message, before anything is made.
pub(crate) struct ControlParam;

impl ParamValue for ControlParam {
    fn set(text: &[u8]) -> Result {
        if text.len() > PARAM_MAX {
            pr_err!("control= is longer than {} bytes\n", PARAM_MAX);
            return Err(EINVAL);
        }
        queries(text)?;
        PARAM.store(text);
        Ok(())
    }

    /// The commands given, and a newline.
    fn get(buf: &mut [u8]) -> usize {
        PARAM.copy_to(buf)
    }
}

/// The commands of `control=` (empty if it was not given), for the
/// profiler to apply to modules that load later.  A locked-down kernel
/// forbids what they do, as it forbids writes to the control file
/// (debugfs refuses them): `control=` then fails the load (`EPERM`), before
/// anything is made, with a line that says why.
pub(crate) fn param_text() -> Result<KVec<u8>> {
    let text = PARAM.to_vec()?;
    if !text.is_empty() && writes_locked_down() {
        pr_err!("control= refused: the kernel is locked down, which forbids writes to the control file; load allocprof without control=\n");
        return Err(EPERM);
    }
    Ok(text)
}

/// Applies the commands of `control=`, if it was given, to the call sites
/// there are now.  An error fails the load: for `mem_profiling=never`
/// (`ENODEV`, with the control file's message), under lockdown (`EPERM`,
/// [`param_text`]) and when memory runs out.
pub(crate) fn apply_param(profiling: &Profiling) -> Result {
    let text = param_text()?;
    if text.is_empty() {
        return Ok(());
    }
    Control::write(profiling, &text)?;
    pr_info!("control= applied: {}\n", BStr(&text));
    Ok(())
}

/// The control file.
pub(crate) struct Control;

impl DebugText for Control {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        out.write(b"# filename:lineno [module]function flags\n");
        profiling.with_profiler(|p| {
            for (id, tag) in p.sites().tags() {
                let site = tag.site();
                out.write(site.file);
                let _ = write!(out, ":{} [", site.line);
                out.write(site.module.unwrap_or(VMLINUX));
                out.write(b"]");
                out.write(site.function);
                out.write(b" =");
                let flags = p.flags_of(id, tag);
                let mut any = false;
                for (f, letter) in Flags::ALL {
                    if flags.contains(f) {
                        out.write(&[letter]);
                        any = true;
                    }
                }
                if !any {
                    out.write(b"_");
                }
                out.write(b"\n");
            }
        });
        Ok(())
    }

    fn write(profiling: &Profiling, input: &[u8]) -> Result {
        let queries = queries(input)?;
        profiling
            .with_registration(|r| apply(r, &queries))
            .unwrap_or_else(|| {
                pr_err!("control: profiling is off for good (mem_profiling=never)\n");
                Err(ENODEV)
            })
    }
}

/// Sets the flags of the call sites `queries` select, in order, and the
/// knobs of those that get `f`; turns the kernel's questions about failing
/// on while a call site has `f` (or `control=` may give it to a module
/// that loads).  First it finds what every call site gets: if that gives
/// `f` to one of allocprof's own call sites (`EPERM`: the copy of a
/// control write's input, the parser's vectors and the files' text are
/// allocated there, so every later write would fail, the `-f` that would
/// end it included), is more call sites with `f` than [`FAULT_SITES`], or
/// the watch tables cannot be made, nothing is changed.  Both locks held here (the profiling state's,
/// `Profiling::with_registration`, and the registry's) are mutexes, so the
/// loops over every call site give the CPU away after each one: a write of
/// 64 commands with long patterns, against every call site of the kernel,
/// neither stalls the CPU nor trips the soft-lockup watchdog (`glob_test`).
fn apply(r: &Registration<Profiler>, queries: &[Query<'_>]) -> Result {
    let p = r.data();
    let mut sites = p.sites();
    let mut watching = false;
    let mut failing = 0usize;
    let mut own = (0usize, None);
    for (id, tag) in sites.tags() {
        let site = tag.site();
        let (new, knobs) = final_flags(queries, &site, p.flags_of(id, tag));
        watching |= new.watched();
        failing += usize::from(new.contains(Flags::FAIL));
        // A command gives `f` (and its knobs) to a call site it leaves
        // with `f`.
        if knobs.is_some() && new.contains(Flags::FAIL) && site.module == Some(OWN_MODULE) {
            own = (own.0 + 1, own.1.or(Some(id)));
        }
        task::cond_resched();
    }
    if let (n, Some(id)) = own {
        if let Some(site) = sites.get(id) {
            pr_err!(
                "control: f refused on allocprof's own call sites ({} selected, {}:{} the first): failing them would fail the control file's own writes, -f included; nothing is changed\n",
                n,
                BStr(site.file()),
                site.line()
            );
        }
        return Err(EPERM);
    }
    if failing > FAULT_SITES {
        pr_err!(
            "control: {} call sites would have f, at most {} can\n",
            failing,
            FAULT_SITES
        );
        return Err(ENOSPC);
    }
    if watching {
        p.prepare_watch()?;
    }
    let mut result = Ok(());
    for (id, tag) in sites.tags() {
        let old = p.flags_of(id, tag);
        let (new, knobs) = final_flags(queries, &tag.site(), old);
        if new != old || knobs.is_some() {
            // There is room for every call site with `f` (counted above).
            if let Err(e) = p.set_flags(id, tag, old, new, knobs) {
                result = Err(e);
            }
        }
        task::cond_resched();
    }
    drop(sites);
    r.fail(p.wants_failures());
    result
}

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

fn write_fault(out: &mut Text, row: &FaultEntry, site: &crate::sys::backend::Site<'_>) {
    let _ = write!(out, "failed:{} asked:{} ", row.failed, row.asked);
    write_site(out, site);
    let k = row.knobs;
    let _ = writeln!(
        out,
        " probability:{} interval:{} times:{} space:{} verbose:{}",
        k.probability, k.interval, row.times, row.space, k.verbose
    );
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

/// Writes a task name as the stacks report shows it: each byte below
/// 0x20, from 0x7f on, and the backslash as a backslash and three octal
/// digits (`seq_escape()`'s form: a newline is `\012`), the rest as it is.
/// Any task may name itself (`prctl(PR_SET_NAME)`), newlines included: raw,
/// its name could add lines of its own to root's report.
fn write_task_name(out: &mut Text, name: &[u8]) {
    let mut text = [0u8; 4 * COMM_LEN];
    let mut len = 0;
    for &b in name.iter().take(COMM_LEN) {
        if b == b'\\' || !(0x20..0x7f).contains(&b) {
            text[len..len + 4].copy_from_slice(&[
                b'\\',
                b'0' + (b >> 6),
                b'0' + ((b >> 3) & 7),
                b'0' + (b & 7),
            ]);
            len += 4;
        } else {
            text[len] = b;
            len += 1;
        }
    }
    out.write(&text[..len]);
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
