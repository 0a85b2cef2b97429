// SPDX-License-Identifier: GPL-2.0

//! Per-call-site control in debugfs, with dynamic debug's grammar
//! (`Documentation/admin-guide/dynamic-debug-howto.rst`), and the reports
//! of the watched call sites:
//!
//! - `/sys/kernel/debug/allocprof/control`: reading lists every call site
//!   of the loaded images as `file:line [module]function =flags`; writing
//!   `[match-spec ...] flags-spec` commands (`;` or newline between them)
//!   sets the flags of the call sites that match: `p` (profile: new
//!   allocations are counted; memory counted before still leaves its
//!   figure when freed; a site that loses it is `accurate:no` in format
//!   2.0 from then on), `s` (each allocation's call chain is kept), `a`
//!   (its age is kept) and `n` (the node of its pages is kept).  A bad
//!   command fails the write with `EINVAL` and a message naming the bad
//!   word; nothing is changed then.
//! - `stacks`: the live allocations watched with `s`, by call site and
//!   call chain, biggest first, with the task of the latest allocation
//!   (its name escaped: see `write_task_name`); each chain from the caller
//!   of the allocation function on (see `callers`).
//! - `ages`: the live allocations watched with `a`, by call site and age
//!   in power-of-two buckets of seconds.
//! - `nodes`: the live pages watched with `n`, by call site and the node
//!   of their memory (as migration leaves it).
//!
//! The module parameter `control=` (on the kernel command line
//! `allocprof.control=`) gives commands of the same grammar to apply at
//! load, before the control file exists.
//!
//! The flags live in the tags' words (`ids.rs`); the watched allocations
//! in the profiler's [`Watch`](crate::watch::Watch).

use core::fmt::Write;
use kernel::{error::Result, prelude::*, sync::Arc};

use crate::counters::Totals;
use crate::ids::{Flags, SiteId};
use crate::profiler::Profiler;
use crate::state::Profiling;
use crate::sys::backend::{Site, Tag};
use crate::sys::debugfs::{DebugDir, DebugText, Text};
use crate::sys::param::{ParamText, ParamValue};
use crate::sys::task::{self, COMM_LEN};
use crate::tags::Registry;
use crate::text::{write_figures, BStr};
use crate::watch::{self, AgeRow, ChainRow, NodeRow, Watch};

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

/// Applies the commands of `control=`, if it was given, to the call sites
/// there are now.  An error fails the load: for `mem_profiling=never`
/// (`ENODEV`, with the control file's message) and when memory runs out.
pub(crate) fn apply_param(profiling: &Profiling) -> Result {
    let text = PARAM.to_vec()?;
    if text.is_empty() {
        return Ok(());
    }
    Control::write(profiling, &text)?;
    pr_info!("control= applied: {}\n", BStr(&text));
    Ok(())
}

/// The module name of the kernel's own call sites in queries and in the
/// control file (in `/proc/allocinfo` they have none).
const VMLINUX: &[u8] = b"vmlinux";

/// How a flags-spec changes a call site's flags.
#[derive(Clone, Copy)]
enum Op {
    Add(Flags),
    Remove(Flags),
    Set(Flags),
}

impl Op {
    fn apply(self, old: Flags) -> Flags {
        match self {
            Op::Add(f) => old.with(f),
            Op::Remove(f) => old.without(f),
            Op::Set(f) => f,
        }
    }
}

/// One command: which call sites, and what to do with their flags.
struct Query<'a> {
    module: Option<&'a [u8]>,
    file: Option<&'a [u8]>,
    func: Option<&'a [u8]>,
    /// Inclusive.
    lines: Option<(u32, u32)>,
    op: Op,
}

/// The most commands one write may hold.
const MAX_QUERIES: usize = 64;
/// The most words one command may hold (four match-specs and the flags).
const MAX_WORDS: usize = 9;

/// Splits a command into words at blanks; `"..."` and `'...'` quote a word
/// with blanks; `#` at the start of a word comments out the rest.
fn words(command: &[u8]) -> Result<KVec<&[u8]>> {
    let mut out = KVec::new();
    let mut rest = command;
    loop {
        while let [b, tail @ ..] = rest {
            if !b.is_ascii_whitespace() {
                break;
            }
            rest = tail;
        }
        let word = match rest {
            [] | [b'#', ..] => return Ok(out),
            [q @ (b'"' | b'\''), tail @ ..] => {
                let Some(end) = tail.iter().position(|b| b == q) else {
                    pr_err!("control: unclosed quote in '{}'\n", BStr(rest));
                    return Err(EINVAL);
                };
                rest = &tail[end + 1..];
                &tail[..end]
            }
            _ => {
                let end = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                let w = &rest[..end];
                rest = &rest[end..];
                w
            }
        };
        if out.len() == MAX_WORDS {
            pr_err!("control: too many words at '{}'\n", BStr(word));
            return Err(EINVAL);
        }
        out.push(word, GFP_KERNEL)?;
    }
}

/// A line number of a query.
fn line_number(word: &[u8], range: &[u8]) -> Result<u32> {
    core::str::from_utf8(word)
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| {
            pr_err!(
                "control: bad line number '{}' in 'line {}'\n",
                BStr(word),
                BStr(range)
            );
            EINVAL
        })
}

/// `N`, `N-M`, `-M` or `N-`, as dynamic debug takes them.
fn line_range(word: &[u8]) -> Result<(u32, u32)> {
    let (first, last) = match word.iter().position(|&b| b == b'-') {
        None => {
            let n = line_number(word, word)?;
            (n, n)
        }
        Some(dash) => {
            let (a, b) = (&word[..dash], &word[dash + 1..]);
            let first = if a.is_empty() {
                0
            } else {
                line_number(a, word)?
            };
            let last = if b.is_empty() {
                u32::MAX
            } else {
                line_number(b, word)?
            };
            (first, last)
        }
    };
    if first > last {
        pr_err!(
            "control: line range '{}' ends before it starts\n",
            BStr(word)
        );
        return Err(EINVAL);
    }
    Ok((first, last))
}

/// A flags-spec: `+`, `-` or `=` and flags from `psan`, or `_` for none.
fn flags_spec(word: &[u8]) -> Result<Op> {
    let (op, letters) = match word {
        [b'+', rest @ ..] => (Op::Add as fn(Flags) -> Op, rest),
        [b'-', rest @ ..] => (Op::Remove as fn(Flags) -> Op, rest),
        [b'=', rest @ ..] => (Op::Set as fn(Flags) -> Op, rest),
        _ => {
            pr_err!(
                "control: '{}' is not a keyword nor flags (+, - or = and flags from psan)\n",
                BStr(word)
            );
            return Err(EINVAL);
        }
    };
    let mut flags = Flags::NONE;
    for &c in letters {
        match Flags::ALL.iter().find(|(_, l)| *l == c) {
            Some(&(f, _)) => flags = flags.with(f),
            None if c == b'_' => {}
            None => {
                pr_err!(
                    "control: unknown flag '{}' in '{}' (flags are p, s, a, n; _ for none)\n",
                    BStr(&[c]),
                    BStr(word)
                );
                return Err(EINVAL);
            }
        }
    }
    if letters.is_empty() && !matches!(word[0], b'=') {
        pr_err!("control: no flags after '{}'\n", BStr(word));
        return Err(EINVAL);
    }
    Ok(op(flags))
}

/// Parses one command (its words).
fn query<'a>(words: &[&'a [u8]]) -> Result<Query<'a>> {
    let Some((&flags, specs)) = words.split_last() else {
        return Err(EINVAL);
    };
    let mut q = Query {
        module: None,
        file: None,
        func: None,
        lines: None,
        op: flags_spec(flags)?,
    };
    let mut specs = specs.iter();
    while let Some(&keyword) = specs.next() {
        let Some(&value) = specs.next() else {
            pr_err!(
                "control: '{}' needs a value before the flags '{}'\n",
                BStr(keyword),
                BStr(flags)
            );
            return Err(EINVAL);
        };
        let set = match keyword {
            b"module" => q.module.replace(value).is_none(),
            b"file" => q.file.replace(value).is_none(),
            b"func" => q.func.replace(value).is_none(),
            b"line" => q.lines.replace(line_range(value)?).is_none(),
            _ => {
                pr_err!(
                    "control: unknown keyword '{}' (module, file, func, line)\n",
                    BStr(keyword)
                );
                return Err(EINVAL);
            }
        };
        if !set {
            pr_err!("control: '{}' given twice in one command\n", BStr(keyword));
            return Err(EINVAL);
        }
    }
    Ok(q)
}

/// Parses a whole write: every command, before anything is changed.
fn queries(input: &[u8]) -> Result<KVec<Query<'_>>> {
    let mut out = KVec::new();
    for command in input.split(|&b| b == b';' || b == b'\n') {
        let words = words(command)?;
        if words.is_empty() {
            continue;
        }
        if out.len() == MAX_QUERIES {
            pr_err!("control: more than {} commands in one write\n", MAX_QUERIES);
            return Err(EINVAL);
        }
        out.push(query(&words)?, GFP_KERNEL)?;
    }
    Ok(out)
}

/// Shell-style match of `name` with `pattern` (`*` any bytes, `?` one), as
/// dynamic debug's `match_wildcard()`: iterative, backtracking only to the
/// latest `*`.  Its work is bounded by the name, whatever the pattern's
/// length (up to the 4095 bytes of a write): `n` never goes back past the
/// latest star's start, which only moves forward (at most `name.len()`
/// times), and each retry matches at most `name.len()` bytes; a run of
/// stars is passed over once, and the loop ends when the name does.  So at
/// most about `pattern.len() + name.len()²` steps per call site.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                // A run of stars matches what one does.
                while pattern.get(p + 1) == Some(&b'*') {
                    p += 1;
                }
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The part of a path after its last `/`.
fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

impl Query<'_> {
    /// Whether call site `site` is one this query selects.  A file matches
    /// by its whole path or its base name, as in dynamic debug.
    fn matches(&self, site: &Site<'_>) -> bool {
        let module = site.module.unwrap_or(VMLINUX);
        self.module.map_or(true, |m| glob(m, module))
            && self
                .file
                .map_or(true, |f| glob(f, site.file) || glob(f, basename(site.file)))
            && self.func.map_or(true, |f| glob(f, site.function))
            && self
                .lines
                .map_or(true, |(a, b)| (a..=b).contains(&site.line))
    }
}

/// The control file.
pub(crate) struct Control;

impl DebugText for Control {
    type Data = Profiling;

    fn text(profiling: &Profiling, out: &mut Text) -> Result {
        out.write(b"# filename:lineno [module]function flags\n");
        profiling.with_profiler(|p| {
            p.registry.lock().for_each_tag(|_, tag: Tag<'_>| {
                let site = tag.site();
                out.write(site.file);
                let _ = write!(out, ":{} [", site.line);
                out.write(site.module.unwrap_or(VMLINUX));
                out.write(b"]");
                out.write(site.function);
                out.write(b" =");
                let flags = SiteId::controlled(tag.word()).map_or(Flags::DEFAULT, |(_, f)| f);
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
            })
        });
        Ok(())
    }

    fn write(profiling: &Profiling, input: &[u8]) -> Result {
        let queries = queries(input)?;
        profiling
            .with_profiler(|p| apply(p, &queries))
            .unwrap_or_else(|| {
                pr_err!("control: profiling is off for good (mem_profiling=never)\n");
                Err(ENODEV)
            })
    }
}

/// Sets the flags of the call sites `queries` select, in order.  Both
/// locks held here (the profiling state's, `Profiling::with_profiler`, and
/// the registry's) are mutexes, so the loops over every call site give the CPU away after
/// each one: a write of 64 commands with long patterns, against every call
/// site of the kernel, neither stalls the CPU nor trips the soft-lockup
/// watchdog (`glob_test`).
fn apply(p: &Profiler, queries: &[Query<'_>]) -> Result {
    let mut registry = p.registry.lock();
    // The watch table, if a command gives a call site `s`, `a` or `n`.
    let mut watching = false;
    for q in queries.iter().filter(|q| match q.op {
        Op::Add(f) | Op::Set(f) => f.watched(),
        Op::Remove(_) => false,
    }) {
        registry.for_each_tag(|_, tag| {
            watching |= q.matches(&tag.site());
            task::cond_resched();
        });
    }
    if watching {
        p.watch.prepare()?;
    }
    for q in queries {
        registry.for_each_tag(|id, tag| {
            if q.matches(&tag.site()) {
                let old = SiteId::controlled(tag.word()).map_or(Flags::DEFAULT, |(_, f)| f);
                let new = q.op.apply(old);
                // Its figures miss what it allocates while not profiled
                // (`accurate:no` in format 2.0), as after the sysctl's 0.
                if !new.contains(Flags::PROFILE) {
                    p.inaccurate.set(id);
                }
                tag.set_word(id.word(new));
            }
            task::cond_resched();
        });
    }
    Ok(())
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
            Watch::chains,
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
            |out, registry, row| write_chain(out, registry, row, &mut frames),
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
    rows: impl FnOnce(&Watch) -> Result<KVVec<R>>,
    summary: impl FnOnce(&mut Text, &[R]),
    mut write_row: impl FnMut(&mut Text, &mut Registry, &R),
) -> Result {
    out.write(header);
    profiling
        .with_profiler(|p| -> Result {
            let rows = rows(&p.watch)?;
            p.watch.stats().write(out);
            summary(out, &rows);
            let mut registry = p.registry.lock();
            for row in rows.iter() {
                write_row(out, &mut registry, row);
            }
            Ok(())
        })
        .unwrap_or(Ok(()))
}

/// A report line's start: the figures and the call site, as in
/// `/proc/allocinfo`.
fn write_site_figures(out: &mut Text, registry: &mut Registry, id: SiteId, bytes: u64, calls: u64) {
    let totals = Totals {
        bytes: bytes as i64,
        calls,
    };
    registry.with_site(id, |site, _, _| write_figures(out, totals, site));
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

fn write_chain(out: &mut Text, registry: &mut Registry, row: &ChainRow, frames: &mut [u8]) {
    write_site_figures(out, registry, row.site, row.bytes, row.calls);
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
            Watch::ages,
            |_, _| {},
            write_age,
        )
    }
}

fn write_age(out: &mut Text, registry: &mut Registry, row: &AgeRow) {
    write_site_figures(out, registry, row.site, row.bytes, row.calls);
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
            Watch::nodes,
            |_, _| {},
            write_node,
        )
    }
}

fn write_node(out: &mut Text, registry: &mut Registry, row: &NodeRow) {
    write_site_figures(out, registry, row.site, row.bytes, row.calls);
    let _ = writeln!(out, " node:{}", row.node.get());
}
