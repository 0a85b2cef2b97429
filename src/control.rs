// SPDX-License-Identifier: GPL-2.0

//! Per-call-site control in debugfs, with dynamic debug's grammar
//! (`Documentation/admin-guide/dynamic-debug-howto.rst`):
//! `/sys/kernel/debug/allocprof/control`.  Reading lists every call site
//! of the loaded images as `file:line [module]function =flags`; writing
//! `[match-spec ...] flags-spec [knob=value ...]` commands (`;` or
//! newline between them; the grammar is in `query.rs`) sets the flags of
//! the call sites that match: `p` (profile: new allocations are counted;
//! memory counted before still leaves its figure when freed; a site that
//! loses it is `accurate:no` in format 2.0 from then on), `s` (each
//! allocation's call chain is kept), `a` (its age is kept), `n` (the node
//! of its pages is kept) and `f` (its allocations fail as the command's
//! knobs say: `faults.rs`).  A bad command fails the write with `EINVAL`
//! and a message naming the bad word, more call sites with `f` than the
//! fault table holds with `ENOSPC`, `f` on allocprof's own call sites with
//! `EPERM` (see [`apply`]); nothing is changed then.  What the flags `s`,
//! `a`, `n` and `f` keep, the reports beside the control file show
//! (`reports.rs`).
//!
//! The module parameter `control=` (on the kernel command line
//! `allocprof.control=`) gives commands of the same grammar to apply at
//! load, before the control file exists, and to each module that loads
//! later.
//!
//! The flags live in the tags' words (`ids.rs`); the watched allocations
//! in the profiler's [`Watch`](crate::watch::Watch).

use core::fmt::Write;
use kernel::{error::Result, prelude::*};

use crate::churn::CHURN_SITES;
use crate::faults::FAULT_SITES;
use crate::ids::Flags;
use crate::profiler::Profiler;
use crate::query::{final_flags, queries, Query, OWN_MODULE, VMLINUX};
use crate::state::Profiling;
use crate::sys::backend::Registration;
use crate::sys::debugfs::{writes_locked_down, DebugText, Text};
use crate::sys::param::{ParamText, ParamValue};
use crate::sys::task;
use crate::text::BStr;

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
    let mut churning = 0usize;
    let mut own = (0usize, None);
    for (id, tag) in sites.tags() {
        let site = tag.site();
        let (new, given) = final_flags(queries, &site, p.flags_of(id, tag));
        watching |= new.watched();
        failing += usize::from(new.contains(Flags::FAIL));
        churning += usize::from(new.contains(Flags::CHURN));
        // A command gives `f` (and its knobs) to a call site it leaves
        // with `f`.
        if given.knobs.is_some() && new.contains(Flags::FAIL) && site.module == Some(OWN_MODULE) {
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
    if churning > CHURN_SITES {
        pr_err!(
            "control: {} call sites would have c, at most {} can\n",
            churning,
            CHURN_SITES
        );
        return Err(ENOSPC);
    }
    if watching {
        p.prepare_watch()?;
    }
    let mut result = Ok(());
    for (id, tag) in sites.tags() {
        let old = p.flags_of(id, tag);
        let (new, given) = final_flags(queries, &tag.site(), old);
        if new != old || given.any() {
            // There is room for every call site with `f` or `c` (counted
            // above).
            if let Err(e) = p.set_flags(id, tag, old, new, given) {
                result = Err(e);
            }
        }
        task::cond_resched();
    }
    p.start_churn();
    drop(sites);
    r.fail(p.wants_failures());
    // A write is process context: the memory cgroups no allocation names
    // any more give their slots back (`watch.rs`).
    p.sweep_memcgs();
    result
}
