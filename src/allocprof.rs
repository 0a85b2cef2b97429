// SPDX-License-Identifier: GPL-2.0

//! allocprof: memory-allocation profiling as a loadable back end.
//!
//! The patched kernel keeps upstream's code-tag front end (`alloc_hooks()`,
//! one `struct alloc_tag` per call site in the `alloc_tags` sections,
//! `current->alloc_tag`) and calls this module's hooks on the page, slab
//! and percpu allocation paths.  The module keeps per-CPU counters per call
//! site, page back-references in a PFN-indexed array of 2-byte ids, and
//! shows the figures in `/proc/allocinfo` (upstream's format) with the
//! `vm.mem_profiling` sysctl to turn profiling on and off, and the biggest
//! call sites after the kernel's memory report (OOM, SysRq-m).  With
//! `debug=1` it reports allocations it cannot count right.

use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{c_str, new_mutex, prelude::*, sync::Mutex};

mod control;
mod counters;
mod debug;
mod ids;
mod page;
mod procfs;
mod profiler;
mod showmem;
mod sys;
mod sysctl;
mod tags;
mod text;
mod watch;

use debug::DebugParam;
use procfs::FormatParam;
use profiler::{CheckedHooks, Hooks, Profiler};
use sys::backend::Registration;
use sys::debugfs::DebugDir;
use sys::procfs::ProcFile;
use sys::sysctl::Sysctl;
use sysctl::{MemProfilingParam, MemProfilingSysctl, Mode};

module! {
    type: AllocProf,
    name: "allocprof",
    author: "allocprof developers",
    description: "Memory allocation profiling back end: /proc/allocinfo, vm.mem_profiling",
    license: "GPL",
}

module_param!(mem_profiling, MemProfilingParam, 0o444);
module_param!(debug, DebugParam, 0o444);
module_param!(allocinfo_format, FormatParam, 0o444);

/// The profiling state, changed by the sysctl and at load and unload.
struct Control {
    mode: Mode,
    /// While profiling is on or off (not `never`): the registered profiler.
    registration: Option<Registration<Profiler>>,
    sysctl: Option<Sysctl<MemProfilingSysctl>>,
}

/// State of the loaded module.
#[pin_data]
struct Shared {
    /// Taken before the kernel's back-end locks (registering calls back
    /// into the profiler's registry) and before the registry.
    #[pin]
    control: Mutex<Control>,
}

/// Set from load to unload: for the sysctl and `/proc/allocinfo`, whose
/// callbacks get no data of their own.
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(ptr::null_mut());

/// The module's shared state, from load to unload.
fn shared() -> Option<&'static Shared> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: `SHARED` points into the pinned box of the loaded module; it is
    // cleared before the box is freed, after every user (procfs, sysctl) is
    // gone.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Calls `f` with the registered profiler (under the control lock), if
/// there is one.
pub(crate) fn with_profiler<R>(f: impl FnOnce(&Profiler) -> R) -> Option<R> {
    let control = shared()?.control.lock();
    control.registration.as_ref().map(|r| f(r.data()))
}

/// The current profiling state (for the sysctl).
pub(crate) fn mode() -> Mode {
    shared().map_or(Mode::Never, |s| s.control.lock().mode)
}

/// Changes the profiling state (from the sysctl).
pub(crate) fn set_mode(new: Mode) -> Result {
    let shared = shared().ok_or(ENODEV)?;
    let mut control = shared.control.lock();
    match (control.mode, new) {
        (Mode::Never, _) => return Err(EPERM),
        (_, Mode::Never) => {
            stop(&mut control);
            if let Some(s) = &control.sysctl {
                s.set_read_only();
            }
            pr_info!(
                "profiling off for good (mem_profiling=never); reload the module to start again\n"
            );
        }
        (old, on_off) => {
            if let Some(r) = &control.registration {
                r.enable(on_off == Mode::On);
                // Allocations made while it was off were not counted.
                if old == Mode::Off && on_off == Mode::On {
                    let p = r.data();
                    p.registry.lock().flag_all(&p.uncounted);
                }
            }
        }
    }
    control.mode = new;
    Ok(())
}

/// Registers a new profiler; profiling on if `on`.  It counts every
/// allocation since boot if it adopted the kernel's boot record, else those
/// from now on: then every call site there is now is flagged as missing
/// allocations.
fn start(control: &mut Control, on: bool) -> Result {
    let profiler = Profiler::new(&THIS_MODULE)?;
    // Debug mode (`debug=1`) registers hooks that check what they see.
    let registration = if debug::enabled() {
        Registration::register::<CheckedHooks>(profiler)?
    } else {
        Registration::register::<Hooks>(profiler)?
    };
    let p = registration.data();
    if registration.adoption().is_none() || !on {
        p.registry.lock().flag_all(&p.uncounted);
    }
    registration.enable(on);
    control.registration = Some(registration);
    Ok(())
}

/// Unregisters the profiler (waiting for running hooks) and frees it.
fn stop(control: &mut Control) {
    let Some(registration) = control.registration.take() else {
        return;
    };
    registration.enable(false);
    let untracked = registration.data().pages.untracked();
    drop(registration);
    if untracked != 0 {
        pr_info!(
            "{} page allocations beyond the back-reference array were not counted\n",
            untracked
        );
    }
}

struct AllocProf {
    shared: Pin<KBox<Shared>>,
    proc: Option<ProcFile<procfs::AllocInfo>>,
    /// `/sys/kernel/debug/allocprof/`: control, stacks, ages.
    debugfs: Option<DebugDir>,
}

impl kernel::Module for AllocProf {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mode = sysctl::load_mode();
        let shared = KBox::pin_init(
            pin_init!(Shared {
                control <- new_mutex!(Control { mode, registration: None, sysctl: None }),
            }),
            GFP_KERNEL,
        )?;
        SHARED.store(ptr::from_ref(&*shared).cast_mut(), Ordering::Release);
        // From here on, `drop` undoes whatever was done.
        let mut this = AllocProf {
            shared,
            proc: None,
            debugfs: None,
        };
        {
            let mut control = this.shared.control.lock();
            if mode != Mode::Never {
                start(&mut control, mode == Mode::On)?;
            }
        }
        this.proc = Some(ProcFile::new(c_str!("allocinfo"), 0o400)?);
        // Per-site control and reports; profiling works without them
        // (debugfs may be off or locked down).
        match control::files(&THIS_MODULE) {
            Ok(dir) => this.debugfs = Some(dir),
            Err(e) => pr_warn!(
                "no per-call-site control: /sys/kernel/debug/allocprof cannot be made ({:?})\n",
                e
            ),
        }
        // Read-only in debug mode, as upstream's: switching profiling on
        // and off leaves allocations without tags on purpose.
        let sysctl_mode = if mode == Mode::Never || debug::enabled() {
            0o444
        } else {
            0o644
        };
        let sysctl = Sysctl::register(c_str!("vm"), c_str!("mem_profiling"), sysctl_mode)?;
        this.shared.control.lock().sysctl = Some(sysctl);

        let (sites, pages, counters, adoption) = {
            let control = this.shared.control.lock();
            control
                .registration
                .as_ref()
                .map(|r| {
                    let p = r.data();
                    let registry = p.registry.lock();
                    (
                        registry.nr_sites(),
                        p.pages.size(),
                        registry.counter_bytes(),
                        r.adoption(),
                    )
                })
                .unwrap_or_default()
        };
        pr_info!(
            "loaded: mem_profiling={}, {} call sites, {} KiB of page back-references ({} bytes a page), {} bytes of counters a CPU\n",
            mode.name(),
            sites,
            pages / 1024,
            page::BYTES_PER_PAGE,
            counters
        );
        match adoption {
            Some(a) => pr_info!(
                "counting since boot: adopted the kernel's record of {} page allocations and {} objects, {} bytes, in {} us with the machine stopped; {} allocations of unloaded modules not attributable\n",
                a.pages,
                a.objects,
                a.bytes,
                a.ns / 1000,
                a.lost
            ),
            None if mode != Mode::Never => pr_info!(
                "counting since load: allocations made before are not counted (boot with alloc_tag.record=1 to count from boot)\n"
            ),
            None => {}
        }
        if debug::enabled() {
            pr_info!("debug mode: reporting allocations without a tag and frees not seen; vm.mem_profiling is read-only\n");
        }
        Ok(this)
    }
}

impl Drop for AllocProf {
    fn drop(&mut self) {
        // The sysctl and /proc file go first: unregistering them waits for
        // their running callers, some of which wait for `control`.
        let sysctl = self.shared.control.lock().sysctl.take();
        drop(sysctl);
        drop(self.proc.take());
        drop(self.debugfs.take());
        stop(&mut self.shared.control.lock());
        SHARED.store(ptr::null_mut(), Ordering::Release);
        pr_info!("unloaded\n");
    }
}
