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
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
};
use kernel::{c_str, new_mutex, prelude::*, sync::Mutex};

mod counters;
mod debug;
mod page;
mod procfs;
mod showmem;
mod slab;
mod sys;
mod sysctl;
mod tags;

use counters::{Counters, MAX_IDS};
use debug::DebugParam;
use page::PageRefs;
use sys::backend::{Backend, ObjSlot, Registration, Tag, TagSection};
use sys::mm::{max_pfn, Pfn};
use sys::procfs::ProcFile;
use sys::sync::TryMutex;
use sys::sysctl::Sysctl;
use sysctl::{MemProfilingParam, MemProfilingSysctl, Mode};
use tags::Registry;

module! {
    type: AllocProf,
    name: "allocprof",
    author: "allocprof developers",
    description: "Memory allocation profiling back end: /proc/allocinfo, vm.mem_profiling",
    license: "GPL",
}

module_param!(mem_profiling, MemProfilingParam, 0o444);
module_param!(debug, DebugParam, 0o444);

/// What the hooks use: lives while the back end is registered.
pub(crate) struct Hot {
    /// The registration's generation, for object slots.
    pub(crate) generation: AtomicU32,
    pub(crate) counters: Counters,
    pub(crate) pages: PageRefs,
    /// Debug mode (`debug=1`): the hooks check what they see.
    pub(crate) debug: bool,
}

/// The sections and the hot data, for readers and section changes.
struct Data {
    registry: Option<Registry>,
    hot: Option<KBox<Hot>>,
}

/// The profiling state, changed by the sysctl and at load and unload.
struct Control {
    mode: Mode,
    registration: Option<Registration<Hooks>>,
    sysctl: Option<Sysctl<MemProfilingSysctl>>,
}

/// State of the loaded module.
#[pin_data]
struct Shared {
    /// Taken before the kernel's back-end locks (registering calls back
    /// into `data`), so never taken by a callback.
    #[pin]
    control: Mutex<Control>,
    /// Taken by section callbacks (under the kernel's code-tag lock) and by
    /// `/proc/allocinfo` readers; tried by `show_mem`.
    #[pin]
    data: TryMutex<Data>,
}

/// Set from load to unload.
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(ptr::null_mut());
/// Set while the back end is registered: what the hooks use.
static HOT: AtomicPtr<Hot> = AtomicPtr::new(ptr::null_mut());

/// The module's shared state, from load to unload.
fn shared() -> Option<&'static Shared> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: `SHARED` points into the pinned box of the loaded module; it is
    // cleared before the box is freed, after every user (procfs, sysctl,
    // section callbacks) is gone.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The hot data, while the hooks are registered.
#[inline(always)]
fn hot() -> Option<&'static Hot> {
    let p = HOT.load(Ordering::Relaxed);
    // SAFETY: `HOT` is set before the back end registers and cleared after
    // it unregistered (which waits for running hooks) and before the data is
    // freed; hooks only run in between.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// A tag's call-site id, if it has a valid one.
#[inline(always)]
pub(crate) fn tag_id(tag: Option<Tag>) -> Option<u16> {
    let id = tag?.id();
    (id != 0 && id < MAX_IDS as u64).then_some(id as u16)
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
            stop(shared, &mut control);
            if let Some(s) = &control.sysctl {
                s.set_read_only();
            }
            pr_info!(
                "profiling off for good (mem_profiling=never); reload the module to start again\n"
            );
        }
        (_, on_off) => {
            if let Some(r) = &control.registration {
                r.enable(on_off == Mode::On);
            }
        }
    }
    control.mode = new;
    Ok(())
}

/// Registers the hooks with fresh data; profiling on if `on`.
fn start(shared: &Shared, control: &mut Control, on: bool) -> Result {
    let new_hot = KBox::new(
        Hot {
            generation: AtomicU32::new(0),
            counters: Counters::new(),
            pages: PageRefs::new(max_pfn())?,
            debug: debug::enabled(),
        },
        GFP_KERNEL,
    )?;
    let registry = Registry::new()?;
    {
        let mut data = shared.data.lock();
        HOT.store(ptr::from_ref(&*new_hot).cast_mut(), Ordering::Release);
        data.hot = Some(new_hot);
        data.registry = Some(registry);
    }
    let registration = match Registration::<Hooks>::register() {
        Ok(r) => r,
        Err(e) => {
            drop_data(shared);
            return Err(e);
        }
    };
    if let Some(hot) = hot() {
        hot.generation
            .store(registration.generation(), Ordering::Relaxed);
    }
    registration.enable(on);
    control.registration = Some(registration);
    Ok(())
}

/// Unregisters the hooks (waiting for running ones) and frees the data.
fn stop(shared: &Shared, control: &mut Control) {
    if let Some(r) = control.registration.take() {
        r.enable(false);
        drop(r);
    }
    drop_data(shared);
}

fn drop_data(shared: &Shared) {
    HOT.store(ptr::null_mut(), Ordering::Release);
    let mut data = shared.data.lock();
    data.registry = None;
    if let Some(hot) = data.hot.take() {
        let untracked = hot.pages.untracked();
        if untracked != 0 {
            pr_info!(
                "{} page allocations beyond the back-reference array were not counted\n",
                untracked
            );
        }
    }
}

/// The hooks the kernel calls.
struct Hooks;

impl Backend for Hooks {
    fn section_add(section: TagSection) -> Result {
        let Some(shared) = shared() else {
            return Ok(());
        };
        let mut data = shared.data.lock();
        let Data { registry, hot } = &mut *data;
        match (registry, hot) {
            (Some(registry), Some(hot)) => registry.add(section, &hot.counters),
            _ => Ok(()),
        }
    }

    fn section_del(section: TagSection) {
        let Some(shared) = shared() else {
            return;
        };
        let mut data = shared.data.lock();
        let Data { registry, hot } = &mut *data;
        if let (Some(registry), Some(hot)) = (registry, hot) {
            registry.remove(section, &hot.counters);
        }
    }

    // The hot hooks: the debug checks are a tail call out of line, so
    // that the counting path keeps nothing live across a call.

    fn page_alloc(pfn: Pfn, order: u32, tag: Option<Tag>) {
        let Some(hot) = hot() else {
            return;
        };
        if hot.debug {
            return debug::page_alloc(hot, pfn, order, tag);
        }
        if let Some(id) = tag_id(tag) {
            hot.pages.alloc(&hot.counters, pfn, order, id);
        }
    }

    fn page_free(pfn: Pfn, order: u32) {
        if let Some(hot) = hot() {
            hot.pages.free(&hot.counters, pfn, order);
        }
    }

    fn page_split(pfn: Pfn, old_order: u32, new_order: u32) {
        if let Some(hot) = hot() {
            hot.pages.split(&hot.counters, pfn, old_order, new_order);
        }
    }

    fn page_copy(dst: Pfn, src: Pfn, order: u32) {
        if let Some(hot) = hot() {
            hot.pages.copy(&hot.counters, dst, src, order);
        }
    }

    fn page_ref(pfn: Pfn) -> u64 {
        hot().map_or(0, |hot| {
            hot.pages
                .reference(hot.generation.load(Ordering::Relaxed), pfn)
        })
    }

    fn page_ref_sub(reference: u64, nr: u32) {
        if let Some(hot) = hot() {
            let generation = hot.generation.load(Ordering::Relaxed);
            PageRefs::reference_sub(&hot.counters, generation, reference, nr);
        }
    }

    fn obj_alloc(slot: ObjSlot<'_>, tag: Option<Tag>, size: usize) {
        let Some(hot) = hot() else {
            return;
        };
        if hot.debug {
            return debug::obj_alloc(hot, slot, tag, size);
        }
        let generation = hot.generation.load(Ordering::Relaxed);
        match tag_id(tag) {
            Some(id) => slab::alloc(&hot.counters, generation, slot, id, size),
            None => slab::alloc_untracked(slot),
        }
    }

    fn obj_free(slot: ObjSlot<'_>, size: usize) {
        let Some(hot) = hot() else {
            return;
        };
        if hot.debug {
            return debug::obj_free(hot, slot, size);
        }
        let generation = hot.generation.load(Ordering::Relaxed);
        slab::free(&hot.counters, generation, slot, size);
    }

    fn show_mem(count: u32) {
        showmem::show(count)
    }
}

struct AllocProf {
    shared: Pin<KBox<Shared>>,
    proc: Option<ProcFile<procfs::AllocInfo>>,
}

impl kernel::Module for AllocProf {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mode = sysctl::load_mode();
        let shared = KBox::pin_init(
            pin_init!(Shared {
                control <- new_mutex!(Control { mode, registration: None, sysctl: None }),
                data <- new_try_mutex!(Data { registry: None, hot: None }, "allocprof_data"),
            }),
            GFP_KERNEL,
        )?;
        SHARED.store(ptr::from_ref(&*shared).cast_mut(), Ordering::Release);
        // From here on, `drop` undoes whatever was done.
        let mut this = AllocProf { shared, proc: None };
        {
            let mut control = this.shared.control.lock();
            if mode != Mode::Never {
                start(&this.shared, &mut control, mode == Mode::On)?;
            }
        }
        this.proc = Some(ProcFile::new(c_str!("allocinfo"), 0o400)?);
        // Read-only in debug mode, as upstream's: switching profiling on
        // and off leaves allocations without tags on purpose.
        let sysctl_mode = if mode == Mode::Never || debug::enabled() {
            0o444
        } else {
            0o644
        };
        let sysctl = Sysctl::register(c_str!("vm"), c_str!("mem_profiling"), sysctl_mode)?;
        this.shared.control.lock().sysctl = Some(sysctl);

        let (sites, pages, counters) = {
            let data = this.shared.data.lock();
            (
                data.registry.as_ref().map_or(0, |r| r.nr_sites()),
                data.hot.as_ref().map_or(0, |h| h.pages.size()),
                data.hot.as_ref().map_or(0, |h| h.counters.bytes_per_cpu()),
            )
        };
        pr_info!(
            "loaded: mem_profiling={}, {} call sites, {} KiB of page back-references ({} bytes a page), {} bytes of counters a CPU\n",
            mode.name(),
            sites,
            pages / 1024,
            page::BYTES_PER_PAGE,
            counters
        );
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
        stop(&self.shared, &mut self.shared.control.lock());
        SHARED.store(ptr::null_mut(), Ordering::Release);
        pr_info!("unloaded\n");
    }
}
