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
mod showmem;
mod sys;
mod sysctl;
mod tags;
mod text;
mod watch;

use counters::Counters;
use debug::DebugParam;
use ids::{slot_id, slot_value, Flags, SiteId};
use page::PageRefs;
use procfs::FormatParam;
use sys::backend::{new_generation, Backend, ObjSlot, Registration, Tag, TagSection};
use sys::debugfs::DebugDir;
use sys::mm::{max_pfn, Pfn};
use sys::procfs::ProcFile;
use sys::sync::TryMutex;
use sys::sysctl::Sysctl;
use sysctl::{MemProfilingParam, MemProfilingSysctl, Mode};
use tags::{Registry, Uncounted};
use watch::{Watch, WatchId};

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

/// The profiler of one registration of the back end: made before it
/// registers, freed after it unregistered (by its [`Registration`]).
///
/// # Invariants
///
/// `generation` is neither 0 (no slot value has it) nor `u32::MAX` (the
/// kernel's boot record writes it), so the hot paths only compare it.
#[pin_data]
pub(crate) struct Profiler {
    /// The registration's generation, for object slots and page references
    /// (`ids.rs`): taken before registering, as the hooks may run inside
    /// `register` already (adopting the kernel's boot record).
    pub(crate) generation: u32,
    /// Where each id's counters are; dropped before `registry`, which owns
    /// the counters it points to.
    pub(crate) counters: Counters,
    pub(crate) pages: PageRefs,
    /// The call sites whose figures miss allocations.
    pub(crate) uncounted: Uncounted,
    /// The allocations of call sites with `s` or `a` (`control.rs`).
    #[pin]
    pub(crate) watch: Watch,
    /// The code-tag sections: taken by section callbacks (under the kernel's
    /// code-tag lock) and by `/proc/allocinfo` readers, tried by `show_mem`;
    /// never by an allocation.
    #[pin]
    pub(crate) registry: TryMutex<Registry>,
}

impl Profiler {
    /// A profiler with no call sites yet and every page without a reference.
    fn new() -> Result<Pin<KBox<Self>>> {
        let pages = PageRefs::new(max_pfn())?;
        let registry = Registry::new()?;
        let uncounted = Uncounted::new()?;
        let watch = Watch::new(&THIS_MODULE)?;
        KBox::pin_init(
            pin_init!(Profiler {
                generation: profiler_generation(),
                counters: Counters::new(),
                pages,
                uncounted,
                watch <- watch,
                registry <- new_try_mutex!(registry, "allocprof_registry"),
            }),
            GFP_KERNEL,
        )
    }

    #[inline(always)]
    fn generation(&self) -> u32 {
        self.generation
    }

    // The counting, for the hooks below and their debug variants.  The
    // hot functions handle a call site with the default flags; a tag word
    // with other flags, and a watch id where a call site's id would be,
    // take the cold functions after them.

    /// `2^order` pages at `pfn` were allocated for call site `id`.
    #[inline(always)]
    pub(crate) fn count_page_alloc(&self, pfn: Pfn, order: u32, id: SiteId) {
        if self.pages.set(pfn, id) {
            self.counters.add_call(id, page::bytes(order));
        } else {
            self.uncounted.set(id);
        }
    }

    /// An object of `size` bytes was allocated with slot `slot` for `id`.
    #[inline(always)]
    pub(crate) fn count_obj_alloc(&self, slot: ObjSlot<'_>, id: SiteId, size: usize) {
        slot.set(slot_value(self.generation(), id));
        self.counters.add_call(id, size as u64);
    }

    /// An object of `size` bytes with slot `slot` is freed: subtracted if
    /// this registration counted it.  Returns the slot's value.
    #[inline(always)]
    pub(crate) fn count_obj_free(&self, slot: ObjSlot<'_>, size: usize) -> u64 {
        let v = slot.take();
        if let Some(id) = slot_id(self.generation(), v) {
            self.sub_call(id, size as u64);
        }
        v
    }

    /// One allocation of `bytes` less for `id` (a call site or a watch id).
    #[inline(always)]
    pub(crate) fn sub_call(&self, id: SiteId, bytes: u64) {
        if !self.counters.sub_call(id, bytes) {
            Profiler::sub_watched(bytes, id, self);
        }
    }

    /// Adds `bytes` and `calls` (two's complement to subtract) to `id` (a
    /// call site or a watch id).
    fn add(&self, id: SiteId, bytes: u64, calls: u64) {
        if !self.counters.add(id, bytes, calls) {
            self.count_watched(id, bytes, calls);
        }
    }

    /// [`Profiler::sub_call`] for an id without counters.  The profiler
    /// comes last, as in the other cold paths (below), which keeps the
    /// frees' registers as they are on the way here.
    #[cold]
    #[inline(never)]
    fn sub_watched(bytes: u64, id: SiteId, p: &Profiler) {
        p.count_watched(id, bytes.wrapping_neg(), u64::MAX);
    }

    /// `id` has no counters: if it is a watch id, the change is its
    /// watched allocation's, and its call site's.
    #[cold]
    #[inline(never)]
    fn count_watched(&self, id: SiteId, bytes: u64, calls: u64) {
        let site = WatchId::of(id).and_then(|w| self.watch.adjust(w, bytes, calls));
        if let Some(site) = site {
            self.counters.add(site, bytes, calls);
        }
    }

    /// Pages allocated at a call site whose tag's word has flags other than
    /// the default, or no id: counted and watched as the flags say.  The
    /// cold paths take the hook's arguments in the hook's order, the
    /// profiler last, so that reaching them costs the hot path no move.
    #[cold]
    #[inline(never)]
    fn count_page_alloc_controlled(pfn: Pfn, order: u32, tag: Tag<'_>, p: &Profiler) {
        let Some((site, flags)) = SiteId::controlled(tag.word()) else {
            return;
        };
        if !flags.contains(Flags::PROFILE) {
            return;
        }
        if !p.pages.set(pfn, site) {
            p.uncounted.set(site);
            return;
        }
        let bytes = page::bytes(order);
        if let Some(w) = p.watch.start(site, flags, bytes) {
            p.pages.set(pfn, w.as_site_id());
        }
        p.counters.add_call(site, bytes);
    }

    /// An object allocated at a call site whose tag's word has flags other
    /// than the default, or without a call site: counted and watched as
    /// the flags say; its slot is cleared if it is not counted.
    #[cold]
    #[inline(never)]
    fn count_obj_alloc_controlled(
        slot: ObjSlot<'_>,
        tag: Option<Tag<'_>>,
        size: usize,
        p: &Profiler,
    ) {
        let site = tag
            .and_then(|t| SiteId::controlled(t.word()))
            .filter(|(_, f)| f.contains(Flags::PROFILE));
        let Some((site, flags)) = site else {
            slot.set(0);
            return;
        };
        let id = p
            .watch
            .start(site, flags, size as u64)
            .map_or(site, WatchId::as_site_id);
        slot.set(slot_value(p.generation(), id));
        p.counters.add_call(site, size as u64);
    }
}

/// A generation for a new profiler: the kernel's next, skipping 0 and
/// `u32::MAX` when its counter passes them (after 2^32 registrations).
fn profiler_generation() -> u32 {
    loop {
        let g = new_generation();
        if g != 0 && g != u32::MAX {
            // INVARIANT: Neither 0 nor `u32::MAX`.
            return g;
        }
    }
}

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
    let profiler = Profiler::new()?;
    // Debug mode (`debug=1`) registers hooks that check what they see.
    let registration = if debug::enabled() {
        Registration::register::<debug::CheckedHooks>(profiler)?
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

/// The hooks the kernel calls.  The hot ones read top to bottom: each is
/// the `count_*` function of [`Profiler`] above it calls, a store into the
/// page's or object's slot (`page.rs`, `ids.rs` for the encoding) and two
/// per-CPU adds (`counters.rs`).  Debug mode registers
/// [`debug::CheckedHooks`] instead, so these test no flag.
pub(crate) struct Hooks;

impl Backend for Hooks {
    type Data = Profiler;

    fn section_add(p: &Profiler, section: TagSection) -> Result {
        p.registry.lock().add(section, &p.counters, &p.uncounted)
    }

    fn section_del(p: &Profiler, section: TagSection) {
        p.registry.lock().remove(section, &p.counters, &p.uncounted)
    }

    fn page_alloc(p: &Profiler, pfn: Pfn, order: u32, tag: Option<Tag<'_>>) {
        let Some(tag) = tag else {
            return;
        };
        match SiteId::plain(tag.word()) {
            Some(id) => p.count_page_alloc(pfn, order, id),
            None => Profiler::count_page_alloc_controlled(pfn, order, tag, p),
        }
    }

    fn page_free(p: &Profiler, pfn: Pfn, order: u32) {
        if let Some(id) = p.pages.take(pfn) {
            p.sub_call(id, page::bytes(order));
        }
    }

    fn page_split(p: &Profiler, pfn: Pfn, old_order: u32, new_order: u32) {
        if let Some((id, calls)) = p.pages.split(pfn, old_order, new_order) {
            p.add(id, 0, calls);
        }
    }

    fn page_copy(p: &Profiler, dst: Pfn, src: Pfn, order: u32) {
        if let Some(old) = p.pages.copy(dst, src) {
            p.sub_call(old, page::bytes(order));
        }
    }

    fn page_ref(p: &Profiler, pfn: Pfn) -> u64 {
        p.pages.reference(p.generation(), pfn)
    }

    fn page_ref_sub(p: &Profiler, reference: u64, nr: u32) {
        // The reference `page_ref` read: the id of the allocation, if
        // this registration made it.
        if let Some(id) = slot_id(p.generation(), reference) {
            p.add(id, (u64::from(nr) * sys::mm::PAGE_SIZE).wrapping_neg(), 0);
        }
    }

    fn obj_alloc(p: &Profiler, slot: ObjSlot<'_>, tag: Option<Tag<'_>>, size: usize) {
        match SiteId::plain(tag.map_or(0, Tag::word)) {
            Some(id) => p.count_obj_alloc(slot, id, size),
            None => Profiler::count_obj_alloc_controlled(slot, tag, size, p),
        }
    }

    fn obj_free(p: &Profiler, slot: ObjSlot<'_>, size: usize) {
        p.count_obj_free(slot, size);
    }

    fn show_mem(p: &Profiler, count: u32) {
        showmem::show(p, count)
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
