// SPDX-License-Identifier: GPL-2.0

//! The profiler of one registration of the back end and the hooks the
//! kernel calls with it, in call order, top to bottom: the hooks
//! ([`Hooks`]), the counting they call (`count_*`), the cold paths the
//! counting leaves for (flags other than the default, watched
//! allocations), the changes of a call site's flags (the control file's,
//! and `control=`'s for modules that load later), and the checks of debug
//! mode ([`DebugChecks`]), which the same hooks run around the same
//! counting.

use core::{
    marker::PhantomData,
    sync::atomic::{AtomicBool, AtomicU32, Ordering},
};

use kernel::{prelude::*, ThisModule};

use crate::churn::{Churn, Row as ChurnRow};
use crate::counters::Counters;
use crate::debug::{report, Report, Reports};
use crate::faults::{Entry as FaultEntry, Faults};
#[cfg(not(allocprof_tags))]
use crate::ids::page_reference_id;
#[cfg(allocprof_tags)]
use crate::ids::KEYED_BIT;
use crate::ids::{churn_slot, with_churn_slot, Flags, SiteId};
use crate::page::{self, PageRefs};
use crate::query::{final_flags, Given, LoadCommands, Query, OWN_MODULE};
use crate::showmem;
#[cfg(not(allocprof_tags))]
use crate::sys::backend::ObjSlot;
#[cfg(allocprof_tags)]
use crate::sys::backend::{ObjRef, TagRange};
use crate::sys::{
    self,
    backend::{new_generation, Backend, FailKind, Gfp, OwnMemory, Registration, Tag, TagSection},
    debugfs::writes_locked_down,
    memcg::MemcgRef,
    mm::{NodeId, Pfn},
    sync::TryMutex,
    task::synchronize_rcu,
};
use crate::tags::{Inaccurate, Registry, Sites};
#[cfg(allocprof_tags)]
use crate::watch::Key;
use crate::watch::{AgeRow, ChainRow, MemcgRow, NodeRow, Stats, Watch, WatchId};

/// The profiler of one registration of the back end: made before it
/// registers, freed after it unregistered (by its [`Registration`]).
///
/// # Invariants
///
/// `generation` is not 0 (no page reference has it), so `page_ref_sub`
/// only compares it.
#[pin_data]
pub(crate) struct Profiler {
    /// The registration's generation, for page references (`ids.rs`):
    /// taken before registering, as the hooks may run inside `register`
    /// already (adopting the kernel's boot record), and again when
    /// profiling restarts (`Profiler::restart`).
    generation: AtomicU32,
    /// Where each id's counters are; dropped before `registry`, which owns
    /// the counters it points to.
    counters: Counters,
    pages: PageRefs,
    /// The call sites whose figures miss allocations.
    inaccurate: Inaccurate,
    /// The allocations of call sites with `s`, `a` or `n` (`control.rs`).
    #[pin]
    watch: Watch,
    /// The code-tag sections: taken by section callbacks (under the kernel's
    /// code-tag lock) and by `/proc/allocinfo` readers, tried by `show_mem`;
    /// never by an allocation.
    #[pin]
    registry: TryMutex<Registry>,
    /// The call sites with `f` (`faults.rs`).
    #[pin]
    faults: Faults,
    /// The call sites with `c` (`churn.rs`).
    #[pin]
    churn: Churn,
    /// The commands of `control=`, applied to each module that loads
    /// (`Profiler::apply_load_commands`) and to each Rust line of the
    /// kernel's pool when a hook first sees it (`Profiler::settle`): set
    /// once at load, before the profiler is shared.
    load: LoadCommands,
    /// The kernel was found locked down after allocprof loaded (by a
    /// module load, `Profiler::module_coming`): `load` is no longer applied.
    load_locked_down: AtomicBool,
    /// What debug mode ([`DebugChecks`]) has reported.
    reports: Reports,
}

impl Profiler {
    /// A profiler with no call sites yet and every page without a reference;
    /// `module` is allocprof's.
    /// `load_commands` are `control=`'s, for modules that load later.
    /// Not inlined: its tables are counted for its lines, named after it
    /// (the kernel names a Rust line after the function its code is in).
    #[inline(never)]
    pub(crate) fn new(
        module: &'static ThisModule,
        load_commands: KVec<u8>,
    ) -> Result<Pin<KBox<Self>>> {
        // On 7.3 the kernel keeps the pages' references: no array.
        #[cfg(allocprof_tags)]
        let pages = PageRefs::new(0)?;
        #[cfg(not(allocprof_tags))]
        let pages = PageRefs::new(sys::mm::max_pfn())?;
        let faults = Faults::new()?;
        let churn = Churn::new()?;
        let load = LoadCommands::new(load_commands)?;
        let registry = Registry::new()?;
        let inaccurate = Inaccurate::new()?;
        let watch = Watch::new(module)?;
        let counters = Counters::new()?;
        let p = KBox::pin_init(
            pin_init!(Profiler {
                generation: AtomicU32::new(profiler_generation()),
                counters,
                pages,
                inaccurate,
                watch <- watch,
                registry <- crate::new_try_mutex!(registry, "allocprof_registry"),
                faults <- faults,
                churn <- churn,
                load,
                load_locked_down: AtomicBool::new(false),
                reports: Reports::new(module),
            }),
            GFP_KERNEL,
        )?;
        // A hook that settles a Rust line (`Profiler::settle`) cannot make
        // the watch tables.
        if p.load.queries().iter().any(Query::gives_watch) {
            p.watch.prepare()?;
        }
        Ok(p)
    }

    #[inline(always)]
    pub(crate) fn generation(&self) -> u32 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Whether the kernel is to ask [`Backend::should_fail`]: while a call
    /// site has `f`, or `control=` may give it to a module that loads.
    pub(crate) fn wants_failures(&self) -> bool {
        self.faults.in_use() || self.load.gives_fail()
    }

    /// Counts the profiler's own tables, which it allocated before its
    /// hooks could see them, for the lines that allocated them: the page
    /// back-references, the table of counter addresses and the counters of
    /// the sections added while registering.  `r` is the registration that
    /// owns the profiler; profiling is on (else nothing is counted).  What
    /// is counted already (adopted from the boot record, or counted when
    /// profiling was on before) is left as it is.
    pub(crate) fn count_own(r: &Registration<Profiler>) {
        let p = r.data();
        let mut failed = 0u32;
        let mut count = |site, memory: OwnMemory<'_>| {
            if r.count_own(site, memory).is_err() {
                failed += 1;
            }
        };
        p.pages.count_own(&mut count);
        p.counters.count_own(&mut count);
        p.registry.lock().count_own(&mut count);
        if failed != 0 {
            pr_warn!(
                "{} of allocprof's own tables could not be counted\n",
                failed
            );
        }
    }
}

impl Profiler {
    /// 7.3: has the kernel count the call sites without flags itself, in
    /// their counters, as the hooks of `Hooks<NoChecks>` do (`obj_alloc`,
    /// `obj_free`, `page_alloc` and `page_free` with a plain word): their
    /// allocations and frees call no hook.  Not in debug mode, whose hooks
    /// check every allocation.
    #[cfg(allocprof_tags)]
    pub(crate) fn count_inline(r: &Registration<Profiler>) -> Result {
        // Ids start at 1 (`SiteId`); the registry keeps a section's
        // counters attached while a tag's word holds one of its ids or
        // anything counted for them is live (`Registry::collect`).
        // SAFETY: Entry 0 is never set; the others are per-CPU `Counter`s
        // (bytes, calls), live while the hooks may count for their ids.
        unsafe { r.count_inline(|p| p.counters.table()) }
    }
}

/// What the load message says of a profiler.
#[derive(Default)]
pub(crate) struct Footprint {
    /// The call sites of the loaded images.
    pub(crate) sites: usize,
    /// The bytes of the page back-references.
    pub(crate) pages: usize,
    /// The per-CPU bytes of the counters, a CPU's share.
    pub(crate) counters: usize,
    /// Of `counters`, those in the first per-CPU chunk's reserved area.
    pub(crate) reserved: usize,
    /// The bytes of the table of counter addresses.
    pub(crate) table: usize,
}

impl Profiler {
    // What the other files read of the profiler, and ask of it outside
    // the hooks: the listings (`procfs.rs`, `showmem.rs`, `control.rs`,
    // `reports.rs`), the state (`state.rs`) and the load message
    // (`allocprof.rs`).

    /// The call sites, for the listings (`/proc/allocinfo`, the control
    /// file, the reports): the registry, locked.  Process context.
    pub(crate) fn sites(&self) -> Sites<'_> {
        Sites::new(self.registry.lock(), &self.counters, &self.inaccurate)
    }

    /// As [`Profiler::sites`], for `show_mem()`: the registry only tried,
    /// `None` while it is busy.  Task context only (`task_context`): a
    /// mutex is not tried from an interrupt.
    pub(crate) fn try_sites(&self) -> Option<Sites<'_>> {
        let registry = self.registry.try_lock()?;
        Some(Sites::new(registry, &self.counters, &self.inaccurate))
    }

    /// A number that changes whenever call sites come or go, or the
    /// profiler is registered again (`ALLOCINFO_IOC_CONTENT_ID`,
    /// [`Registry::content_id`]).
    pub(crate) fn content_id(&self) -> u64 {
        self.registry.lock().content_id(self.generation())
    }

    /// Marks every call site of the loaded images inaccurate: allocations
    /// may have been made there that were not counted (profiling started
    /// late, or was off for a while).
    pub(crate) fn mark_all_inaccurate(&self) {
        self.registry.lock().mark_all_inaccurate(&self.inaccurate);
    }

    /// Makes the figures start from zero, before profiling starts again
    /// after it was off: the kernel cleared every reference when it
    /// stopped, so no free is to uncount anything counted before, and what
    /// is live was allocated at some time nobody counted.  The counters are
    /// zeroed, the page back-references (6.12) and the watched allocations
    /// forgotten (the page references handed out before of another
    /// generation), and the churn counts start again.  Process context, with
    /// both sides of profiling off; on failure (no memory for the watch
    /// tables) nothing changed.
    pub(crate) fn restart(&self) -> Result {
        self.watch.clear()?;
        // A partial free that read a page's reference before the switch
        // off (`page_ref`, 6.12) may hand it back at any time
        // (`page_ref_sub`): from now on it is of an old generation and
        // uncounts nothing, and the hooks that compared it to the old one
        // (with preemption off) are done before anything is zeroed.
        // INVARIANT: Not 0 (`profiler_generation`).
        self.generation
            .store(profiler_generation(), Ordering::Relaxed);
        synchronize_rcu();
        let _readers = self.registry.lock();
        self.counters.zero_all();
        self.pages.clear();
        self.churn.restart(|id| self.counters.read(id));
        Ok(())
    }

    /// Page allocations beyond the back-reference array, not counted.
    pub(crate) fn untracked_pages(&self) -> u64 {
        self.pages.untracked()
    }

    /// What the load message says: call sites and table sizes.
    pub(crate) fn footprint(&self) -> Footprint {
        let registry = self.registry.lock();
        let (counters, reserved) = registry.counter_bytes();
        Footprint {
            sites: registry.nr_sites(),
            pages: self.pages.size(),
            counters,
            reserved,
            table: self.counters.table_size(),
        }
    }

    /// Makes the watch tables, if they are not made yet, before a control
    /// write gives `s`, `a` or `n` (process context).
    pub(crate) fn prepare_watch(&self) -> Result {
        self.watch.prepare()
    }

    /// The `stacks` report's rows: the live watched chains, biggest first.
    pub(crate) fn watched_chains(&self) -> Result<KVVec<ChainRow>> {
        self.watch.chains()
    }

    /// The `ages` report's rows ([`Watch::ages`]).
    pub(crate) fn watched_ages(&self) -> Result<KVVec<AgeRow>> {
        self.watch.ages()
    }

    /// The `nodes` report's rows ([`Watch::nodes`]).
    pub(crate) fn watched_nodes(&self) -> Result<KVVec<NodeRow>> {
        self.watch.nodes()
    }

    /// The `memcgs` report's rows, the cgroups they name and the
    /// allocations kept without theirs ([`Watch::memcgs`]).
    #[allow(clippy::type_complexity)]
    pub(crate) fn watched_memcgs(&self) -> Result<(KVVec<MemcgRow>, KVVec<Option<MemcgRef>>, u64)> {
        self.watch.memcgs()
    }

    /// Releases the memory cgroups no watched allocation names
    /// ([`Watch::sweep_memcgs`]).  Process context.
    pub(crate) fn sweep_memcgs(&self) {
        self.watch.sweep_memcgs()
    }

    /// Of the live watched bytes of `site`, those that asked to be
    /// charged to a memory cgroup (`accounted:` of format 2.0; 7.3).
    #[cfg(allocprof_tags)]
    pub(crate) fn watched_accounted(&self, site: SiteId) -> u64 {
        self.watch.accounted(site)
    }

    /// What the watch tables hold, for the reports' statistics line.
    pub(crate) fn watch_stats(&self) -> Stats {
        self.watch.stats()
    }

    /// The watched pages of `site` on the lowest node above `after` that
    /// has any ([`Watch::next_node`]): `/proc/allocinfo`'s `node:` fields.
    pub(crate) fn watched_node(&self, site: SiteId, after: Option<NodeId>) -> Option<NodeRow> {
        self.watch.next_node(site, after)
    }

    /// The `faults` report's rows: the call sites with `f`, by id.
    pub(crate) fn fault_rows(&self) -> Result<KVec<FaultEntry>> {
        self.faults.rows()
    }

    /// The `churn` report's rows: the call sites with `c`, by id.  The
    /// caller holds the registry ([`Profiler::sites`]), as readers of the
    /// counters do.
    pub(crate) fn churn_rows(&self) -> Result<KVec<ChurnRow>> {
        self.churn.rows(|id| self.counters.read(id))
    }

    /// The churn of call site `id`, if it has `c`: `/proc/allocinfo`'s
    /// `allocated:` and `freed:` fields.  The caller holds the registry.
    pub(crate) fn churn_row(&self, id: SiteId) -> Option<ChurnRow> {
        self.churn.site_row(id, |id| self.counters.read(id))
    }

    /// Starts the counting of the call sites that got `c` from a control
    /// write (`Churn::start_pending`), once every hook that read their
    /// words before has returned.  Process context; the caller holds the
    /// registry.
    pub(crate) fn start_churn(&self) {
        if self.churn.pending() {
            synchronize_rcu();
            self.churn.start_pending(|id| self.counters.read(id));
        }
    }
}

/// A generation for a new profiler: the kernel's next, skipping 0 when its
/// counter passes it (after 2^32 registrations).
fn profiler_generation() -> u32 {
    loop {
        let g = new_generation();
        if g != 0 {
            // INVARIANT: Not 0.
            return g;
        }
    }
}

/// The hooks the kernel calls.  The hot ones read top to bottom: each
/// calls the `count_*` function of [`Profiler`] below it, a store into the
/// page's or object's slot (`page.rs`, `ids.rs` for the encoding) and two
/// per-CPU adds (`counters.rs`).  `C` adds checks around the counting:
/// [`NoChecks`] (compiled away, so the hooks test no flag) or debug mode's
/// [`DebugChecks`] (at the end of the file).
pub(crate) struct Hooks<C: Checks>(PhantomData<C>);

/// Checks run around the counting of [`Hooks`]: each is called with the
/// hook's arguments before the hook counts (after, for a free).
pub(crate) trait Checks: Send + Sync + 'static {
    /// Before `2^order` pages at `pfn` are counted for `tag`.
    fn page_alloc(p: &Profiler, pfn: Pfn, order: u32, tag: Option<Tag<'_>>);
    /// Before an object of `size` bytes with slot `slot` is counted for `tag`.
    #[cfg(not(allocprof_tags))]
    fn obj_alloc(p: &Profiler, slot: &ObjSlot<'_>, tag: Option<Tag<'_>>, size: usize);
    /// After an object's free was counted; `old` is the value its slot had.
    #[cfg(not(allocprof_tags))]
    fn obj_freed(p: &Profiler, old: u16);
}

/// No checks: the hooks of the default mode.
pub(crate) struct NoChecks;

impl Checks for NoChecks {
    #[inline(always)]
    fn page_alloc(_p: &Profiler, _pfn: Pfn, _order: u32, _tag: Option<Tag<'_>>) {}

    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    fn obj_alloc(_p: &Profiler, _slot: &ObjSlot<'_>, _tag: Option<Tag<'_>>, _size: usize) {}

    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    fn obj_freed(_p: &Profiler, _old: u16) {}
}

#[cfg(not(allocprof_tags))]
impl<C: Checks> Backend for Hooks<C> {
    type Data = Profiler;

    fn section_add(p: &Profiler, section: TagSection) -> Result {
        p.add_section(section)
    }

    fn section_del(p: &Profiler, section: TagSection) {
        p.del_section(section)
    }

    fn page_alloc(p: &Profiler, pfn: Pfn, order: u32, tag: Option<Tag<'_>>) {
        C::page_alloc(p, pfn, order, tag);
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
            // The new pieces are allocations of a call site with `c`.
            let site = if p.counters.add(id, 0, calls) {
                Some(id)
            } else {
                p.count_watched(id, 0, calls)
            };
            if let Some(site) = site {
                p.churn.split(site, calls);
            }
        }
    }

    fn page_copy(p: &Profiler, dst: Pfn, src: Pfn, order: u32) {
        let Some((id, old)) = p.pages.copy(dst, src) else {
            return;
        };
        if let Some(old) = old {
            p.sub_call(old, page::bytes(order));
        }
        if let Some(w) = WatchId::of(id) {
            p.watch.moved(w, dst.node());
        }
    }

    fn page_ref(p: &Profiler, pfn: Pfn) -> u64 {
        p.pages.reference(p.generation(), pfn)
    }

    fn page_ref_sub(p: &Profiler, reference: u64, nr: u32) {
        // The reference `page_ref` read: the id of the allocation, if
        // this registration made it.
        if let Some(id) = page_reference_id(p.generation(), reference) {
            p.add(id, (u64::from(nr) * sys::mm::PAGE_SIZE).wrapping_neg(), 0);
        }
    }

    fn obj_alloc(p: &Profiler, slot: ObjSlot<'_>, tag: Option<Tag<'_>>, size: usize) {
        C::obj_alloc(p, &slot, tag, size);
        match SiteId::plain(tag.map_or(0, Tag::word)) {
            Some(id) => p.count_obj_alloc(slot, id, size),
            None => Profiler::count_obj_alloc_controlled(slot, tag, size, p),
        }
    }

    fn obj_free(p: &Profiler, slot: ObjSlot<'_>, size: usize) {
        let old = p.count_obj_free(slot, size);
        C::obj_freed(p, old);
    }

    fn show_mem(p: &Profiler, count: u32) {
        showmem::show(count, || p.try_sites())
    }

    fn should_fail(p: &Profiler, tag: Tag<'_>, kind: FailKind, size: usize, gfp: Gfp) -> bool {
        p.should_fail(tag, kind, size, gfp)
    }
}

/// The hooks on 7.3's series: the kernel keeps each allocation's reference
/// to its tag and hands the free hooks the tag, so an allocation is
/// counted for the id in its tag's word on both sides.  The id of a call
/// site does not change while allocations made with it are live (a
/// reloaded module's call sites get their ids again, `Registry::add`), and
/// the kernel clears every reference when a registration ends, so a free
/// is only ever handed a tag whose id counted its allocation.  An
/// allocation that is not counted (a call site without `p`) makes its hook
/// return false, and the kernel clears its reference: its free is never
/// handed over.  Watched allocations (`s`, `a`, `n`) are found again by
/// address (`watch.rs`), by the frees of call sites that have
/// [`KEYED_BIT`].
#[cfg(allocprof_tags)]
impl<C: Checks> Backend for Hooks<C> {
    type Data = Profiler;

    fn section_add(p: &Profiler, section: TagSection) -> Result {
        p.add_section(section)
    }

    fn section_del(p: &Profiler, section: TagSection) {
        p.del_section(section)
    }

    /// Whether any of the tags still has an id: the registry clears the
    /// words of an unloaded module's call sites once their allocations are
    /// all freed (`Registry::remove`, `Registry::collect`).  No lock: the
    /// kernel asks with its code-tag lock held, which the registry's
    /// changes of those words hold too.
    fn section_used(_p: &Profiler, range: TagRange<'_>) -> bool {
        range.tags().iter().any(|tag| tag.word() != 0)
    }

    fn page_alloc(p: &Profiler, pfn: Pfn, order: u32, tag: Tag<'_>, gfp: Gfp) -> bool {
        C::page_alloc(p, pfn, order, Some(tag));
        match SiteId::plain(tag.word()) {
            Some(id) => {
                p.counters.add_call(id, page::bytes(order));
                true
            }
            None => {
                let key = Key::Pages(pfn, order);
                Profiler::count_alloc_controlled(tag, page::bytes(order), key, gfp, p)
            }
        }
    }

    fn page_free(p: &Profiler, pfn: Pfn, order: u32, tag: Tag<'_>) {
        let bytes = page::bytes(order);
        if !p.sub_plain(tag.word(), bytes) {
            Profiler::free_controlled(tag.word(), Key::Pages(pfn, order), bytes, p);
        }
    }

    fn page_split(p: &Profiler, pfn: Pfn, old_order: u32, new_order: u32, tag: Tag<'_>) {
        let word = tag.word();
        if let Some((id, flags)) = SiteId::controlled(word) {
            let calls = (1u64 << (old_order - new_order)) - 1;
            p.add(id, 0, calls);
            if word & KEYED_BIT != 0 {
                p.watch.adjust_at(Key::Pages(pfn, old_order), 0, calls);
            }
            // The new pieces are allocations of a call site with `c`.
            if flags.contains(Flags::CHURN) {
                p.churn.pieces(churn_slot(word), calls);
            }
        }
    }

    fn page_swap(p: &Profiler, new: Pfn, old: Pfn, order: u32) {
        p.watch.swap(new, old, order);
    }

    fn page_sub(p: &Profiler, pfn: Pfn, tag: Tag<'_>, nr: u32) {
        let word = tag.word();
        if let Some((id, _)) = SiteId::controlled(word) {
            let bytes = u64::from(nr) * sys::mm::PAGE_SIZE;
            p.add(id, bytes.wrapping_neg(), 0);
            if word & KEYED_BIT != 0 {
                p.watch
                    .adjust_at(Key::Pages(pfn, 0), bytes.wrapping_neg(), 0);
            }
        }
    }

    fn obj_alloc(p: &Profiler, obj: ObjRef<'_>, tag: Tag<'_>, size: usize, gfp: Gfp) -> bool {
        match SiteId::plain(tag.word()) {
            Some(id) => {
                p.counters.add_call(id, size as u64);
                true
            }
            None => {
                let key = Key::Object(obj.addr());
                Profiler::count_alloc_controlled(tag, size as u64, key, gfp, p)
            }
        }
    }

    fn obj_free(p: &Profiler, obj: ObjRef<'_>, tag: Tag<'_>, size: usize) {
        let bytes = size as u64;
        if !p.sub_plain(tag.word(), bytes) {
            Profiler::free_controlled(tag.word(), Key::Object(obj.addr()), bytes, p);
        }
    }

    fn show_mem(p: &Profiler, count: u32) {
        showmem::show(count, || p.try_sites())
    }

    fn should_fail(p: &Profiler, tag: Tag<'_>, kind: FailKind, size: usize, gfp: Gfp) -> bool {
        p.should_fail(tag, kind, size, gfp)
    }
}

impl Profiler {
    // What both kernels' hooks do alike.

    /// A code-tag section appeared: its call sites get ids, and
    /// `control=`'s flags if it is a module's.
    fn add_section(&self, section: TagSection) -> Result {
        let owner = section.owner();
        let mut registry = self.registry.lock();
        registry.add(section, &self.counters, &self.inaccurate)?;
        if owner == 0 {
            self.unsettle_pool(&mut registry);
        } else {
            self.apply_load_commands(&mut registry, owner);
        }
        Ok(())
    }

    /// A module's section goes away, with its call sites' fault entries.
    fn del_section(&self, section: TagSection) {
        let mut registry = self.registry.lock();
        registry.for_each_tag_of(section.owner(), |id, _| {
            self.faults.remove(id);
            self.churn.remove(id);
        });
        registry.remove(section, &self.counters, &self.inaccurate)
    }

    /// [`Backend::should_fail`]: whether the call site has `f` and its
    /// knobs say this allocation fails.
    fn should_fail(&self, tag: Tag<'_>, kind: FailKind, size: usize, gfp: Gfp) -> bool {
        let Some((site, flags)) = SiteId::controlled(tag.word()) else {
            return false;
        };
        match self.settled(site, tag, flags) {
            flags if flags.contains(Flags::FAIL) && !gfp.nofail() => {
                self.faults.should_fail(site, tag, kind, size)
            }
            _ => false,
        }
    }
}

impl Profiler {
    // The counting, for the hooks above and their debug variants.  The
    // hot functions handle a call site with the default flags; a tag word
    // with other flags, and a watch id where a call site's id would be,
    // take the cold functions after them.

    /// `2^order` pages at `pfn` were allocated for call site `id`.
    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    fn count_page_alloc(&self, pfn: Pfn, order: u32, id: SiteId) {
        if self.pages.set(pfn, id) {
            self.counters.add_call(id, page::bytes(order));
        } else {
            self.inaccurate.set(id);
        }
    }

    /// An object of `size` bytes was allocated with slot `slot` for `id`.
    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    fn count_obj_alloc(&self, slot: ObjSlot<'_>, id: SiteId, size: usize) {
        slot.set(id.get());
        self.counters.add_call(id, size as u64);
    }

    /// An object of `size` bytes with slot `slot` is freed: subtracted
    /// from the id in the slot.  Returns the slot's value.
    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    fn count_obj_free(&self, slot: ObjSlot<'_>, size: usize) -> u16 {
        let v = slot.take();
        if let Some(id) = SiteId::new(v) {
            self.sub_call(id, size as u64);
        }
        v
    }

    /// One allocation of `bytes` less for `id` (a call site or a watch id).
    #[inline(always)]
    fn sub_call(&self, id: SiteId, bytes: u64) {
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
    /// watched allocation's, and its call site's, which it returns.
    #[cold]
    #[inline(never)]
    fn count_watched(&self, id: SiteId, bytes: u64, calls: u64) -> Option<SiteId> {
        let site = WatchId::of(id).and_then(|w| self.watch.adjust(w, bytes, calls))?;
        self.counters.add(site, bytes, calls);
        Some(site)
    }

    /// Pages allocated at a call site whose tag's word has flags other than
    /// the default, or no id: counted and watched as the flags say.  The
    /// cold paths take the hook's arguments in the hook's order, the
    /// profiler last, so that reaching them costs the hot path no move.
    #[cfg(not(allocprof_tags))]
    #[cold]
    #[inline(never)]
    fn count_page_alloc_controlled(pfn: Pfn, order: u32, tag: Tag<'_>, p: &Profiler) {
        let Some((site, flags, word)) = p.settled_word(tag) else {
            return;
        };
        if !flags.contains(Flags::PROFILE) {
            return;
        }
        if !p.pages.set(pfn, site) {
            p.inaccurate.set(site);
            return;
        }
        let bytes = page::bytes(order);
        let node = flags.contains(Flags::NODES).then(|| pfn.node());
        if let Some(w) = p.watch.track(site, flags, bytes, node, Gfp::NONE) {
            p.pages.set(pfn, w.as_site_id());
        }
        p.counters.add_call(site, bytes);
        p.count_churn(flags, word, bytes);
    }

    /// An object allocated at a call site whose tag's word has flags other
    /// than the default, or without a call site: counted and watched as
    /// the flags say; its slot is cleared if it is not counted.
    #[cfg(not(allocprof_tags))]
    #[cold]
    #[inline(never)]
    fn count_obj_alloc_controlled(
        slot: ObjSlot<'_>,
        tag: Option<Tag<'_>>,
        size: usize,
        p: &Profiler,
    ) {
        let site = tag
            .and_then(|t| p.settled_word(t))
            .filter(|(_, f, _)| f.contains(Flags::PROFILE));
        let Some((site, flags, word)) = site else {
            slot.set(0);
            return;
        };
        let id = p
            .watch
            .track(site, flags, size as u64, None, Gfp::NONE)
            .map_or(site, WatchId::as_site_id);
        slot.set(id.get());
        p.counters.add_call(site, size as u64);
        p.count_churn(flags, word, size as u64);
    }

    /// An allocation of `bytes` at `key`, with `gfp`, at a call site whose
    /// tag's word has flags other than the default, or no id, on 7.3:
    /// counted if it has an id and `p` once its flags are settled, and
    /// watched as they say.  Returns whether it was counted: the kernel
    /// clears the reference of one that was not, so its free is not handed
    /// to the hooks.
    #[cfg(allocprof_tags)]
    #[cold]
    #[inline(never)]
    fn count_alloc_controlled(tag: Tag<'_>, bytes: u64, key: Key, gfp: Gfp, p: &Profiler) -> bool {
        let Some((site, flags, word)) = p.settled_word(tag) else {
            return false;
        };
        if !flags.contains(Flags::PROFILE) {
            return false;
        }
        if flags.watched() {
            let node = match key {
                Key::Pages(pfn, _) if flags.contains(Flags::NODES) => Some(pfn.node()),
                _ => None,
            };
            p.watch.track_at(key, site, flags, bytes, node, gfp);
        }
        p.counters.add_call(site, bytes);
        p.count_churn(flags, word, bytes);
        true
    }

    /// 7.3: the common free, of a call site without flags that has
    /// counters: it loses `bytes` and a call.  False for any other.
    #[cfg(allocprof_tags)]
    #[inline(always)]
    fn sub_plain(&self, word: u64, bytes: u64) -> bool {
        SiteId::plain(word).is_some_and(|id| self.counters.sub_call(id, bytes))
    }

    /// 7.3: a free of `bytes` at `key` that is not the common one
    /// ([`Profiler::sub_plain`]): of a call site with flags, whose watched
    /// allocation, if `key` is one, loses them and a call too, or of an
    /// id without counters.  Out of line, so that the frees' common path
    /// needs no stack frame.
    #[cfg(allocprof_tags)]
    #[cold]
    #[inline(never)]
    fn free_controlled(word: u64, key: Key, bytes: u64, p: &Profiler) {
        if let Some((id, _)) = SiteId::controlled(word) {
            p.sub_call(id, bytes);
            if word & KEYED_BIT != 0 {
                p.watch.adjust_at(key, bytes.wrapping_neg(), u64::MAX);
            }
        }
    }

    /// The call site of `tag`, its flags and its word, if it has an id:
    /// once settled if it was [`Flags::UNSETTLED`] (its word read again).
    #[inline(always)]
    fn settled_word(&self, tag: Tag<'_>) -> Option<(SiteId, Flags, u64)> {
        let word = tag.word();
        let (site, flags) = SiteId::controlled(word)?;
        if !flags.contains(Flags::UNSETTLED) {
            return Some((site, flags, word));
        }
        let flags = self.settle(site, tag);
        let word = tag.word();
        // `c` and its entry as the word has them now.
        let flags = if Flags::of_word(word).contains(Flags::CHURN) {
            flags.with(Flags::CHURN)
        } else {
            flags.without(Flags::CHURN)
        };
        Some((site, flags, word))
    }

    /// A counted allocation of `bytes` at a call site with `flags` and
    /// `word`: one more for its churn if it has `c`.
    #[inline(always)]
    fn count_churn(&self, flags: Flags, word: u64, bytes: u64) {
        if flags.contains(Flags::CHURN) {
            self.churn.count(churn_slot(word), bytes);
        }
    }

    /// `flags`, read from the word of `tag` (call site `site`), once
    /// settled if they are [`Flags::UNSETTLED`].
    #[inline(always)]
    fn settled(&self, site: SiteId, tag: Tag<'_>, flags: Flags) -> Flags {
        if flags.contains(Flags::UNSETTLED) {
            self.settle(site, tag)
        } else {
            flags
        }
    }

    /// Settles the flags of a Rust line of the kernel's pool (call site
    /// `id`, tag `tag`) that is [`Flags::UNSETTLED`]: it gets what
    /// `control=` gives it, as the call sites of a module that loads do
    /// (`f` neither on allocprof's own lines nor past the fault table's
    /// room; the default once the kernel was found locked down).  Any
    /// context, nothing allocated (the watch tables were made at load if
    /// `control=` watches).  Returns the flags the line has then: a control
    /// write or another hook may have settled it first.
    #[cold]
    #[inline(never)]
    fn settle(&self, id: SiteId, tag: Tag<'_>) -> Flags {
        let word = tag.word();
        let flags = Flags::of_word(word);
        if !flags.contains(Flags::UNSETTLED) {
            return flags;
        }
        let site = tag.site();
        let (mut new, given) = if self.load_locked_down.load(Ordering::Relaxed) {
            (Flags::DEFAULT, Given::NONE)
        } else {
            final_flags(self.load.queries(), &site, Flags::DEFAULT)
        };
        if new.contains(Flags::FAIL) {
            let given = site.module != Some(OWN_MODULE)
                && given.knobs.is_some_and(|k| self.faults.set(id, k).is_ok());
            if !given {
                new = new.without(Flags::FAIL);
            }
        }
        let mut new_word = keyed(id.word(new), word);
        if new.contains(Flags::CHURN) {
            match self.churn.take(id) {
                Ok(slot) => new_word = with_churn_slot(new_word, slot),
                Err(_) => {
                    new = new.without(Flags::CHURN);
                    new_word = keyed(id.word(new), word);
                }
            }
        }
        self.mark_unprofiled(id, new);
        match tag.replace_word(word, new_word) {
            Ok(()) => {
                // No hook counted for the line with `c` before this one
                // (they all settle it first): its start is now.
                if new.contains(Flags::CHURN) {
                    self.churn.start_pending(|id| self.counters.read(id));
                }
                new
            }
            Err(now) => {
                let now = Flags::of_word(now);
                if new.contains(Flags::FAIL) && !now.contains(Flags::FAIL) {
                    self.faults.remove(id);
                }
                if new.contains(Flags::CHURN) && !now.contains(Flags::CHURN) {
                    self.churn.remove(id);
                }
                now
            }
        }
    }

    /// The flags of call site `id` (tag `tag`), for the control file: those
    /// in its word, settled first if they were not
    /// ([`Flags::UNSETTLED`]: a Rust line that `control=` has not reached).
    pub(crate) fn flags_of(&self, id: SiteId, tag: Tag<'_>) -> Flags {
        self.settled(id, tag, Flags::of_word(tag.word()))
    }

    /// The word of a Rust line of the kernel's pool that `control=` has
    /// not reached: [`Flags::UNSETTLED`] and the default, with `f` if
    /// `control=` may give it (the kernel asks [`Backend::should_fail`] only
    /// for a word with `f`, and that settles it).
    fn unsettled_word(&self, id: SiteId) -> u64 {
        let flags = Flags::DEFAULT.with(Flags::UNSETTLED);
        id.word(if self.load.gives_fail() {
            flags.with(Flags::FAIL)
        } else {
            flags
        })
    }
}

impl Profiler {
    // The control file's changes (`control.rs`), and `control=`'s for
    // modules that load later.

    /// Gives call site `id` (tag `tag`, with `old` flags) the flags `new`,
    /// and `given`'s knobs if `new` has `f`; its churn starts again if it
    /// gets `c` (it had not, or a command gave it again), once the caller
    /// calls [`Profiler::start_churn`].  `ENOSPC` if it gets `f` or `c` and
    /// that table is full (the control file checks for room first).
    /// Callers hold the registry lock; the watch tables are ready if `new`
    /// watches.
    pub(crate) fn set_flags(
        &self,
        id: SiteId,
        tag: Tag<'_>,
        old: Flags,
        new: Flags,
        given: Given,
    ) -> Result {
        let old_word = tag.word();
        let mut word = keyed(id.word(new), old_word);
        if new.contains(Flags::CHURN) {
            if given.churn || !old.contains(Flags::CHURN) {
                word = with_churn_slot(word, self.churn.take(id)?);
            } else {
                word = with_churn_slot(word, churn_slot(old_word));
            }
        }
        if new.contains(Flags::FAIL) {
            if let Some(knobs) = given.knobs {
                self.faults.set(id, knobs)?;
            }
        } else if old.contains(Flags::FAIL) {
            self.faults.remove(id);
        }
        self.mark_unprofiled(id, new);
        tag.set_word(word);
        if old.contains(Flags::CHURN) && !new.contains(Flags::CHURN) {
            self.churn.remove(id);
        }
        Ok(())
    }

    /// Call site `id` gets the flags `new`: without `p`, its figures miss
    /// what it allocates while not profiled (`accurate:no` in format 2.0),
    /// as after the sysctl's 0.
    fn mark_unprofiled(&self, id: SiteId, new: Flags) {
        if !new.contains(Flags::PROFILE) {
            self.inaccurate.set(id);
        }
    }

    /// Whether `control=` is no longer applied to modules that load: lockdown
    /// rose after allocprof loaded, and what the control file may no longer
    /// do, `control=` no longer does either (said once).  Process context.
    fn load_refused(&self) -> bool {
        if self.load_locked_down.load(Ordering::Relaxed) {
            return true;
        }
        if !writes_locked_down() {
            return false;
        }
        if !self.load_locked_down.swap(true, Ordering::Relaxed) {
            pr_warn!("control= no longer applied to the call sites of modules that load: the kernel is locked down\n");
        }
        true
    }

    /// Marks the Rust lines of the kernel's pool that `control=` has not
    /// reached [`Flags::UNSETTLED`]: the free tags (lines that have not
    /// allocated yet) and those whose module is gone (it may load again),
    /// so that the first hook that sees one applies `control=`
    /// ([`Profiler::settle`]).  Nothing to do without `control=`.
    fn unsettle_pool(&self, registry: &mut Registry) {
        if self.load.is_empty() {
            return;
        }
        registry.for_each_pool_tag(|id, tag| {
            if !tag.named() || tag.gone() {
                tag.set_word(keyed(self.unsettled_word(id), tag.word()));
            }
        });
    }

    /// A module is about to run its init: `control=` reaches its call sites
    /// unless the kernel is locked down now (said once).
    pub(crate) fn module_coming(&self) {
        if !self.load.is_empty() {
            self.load_refused();
        }
    }

    /// The module `name` went away (after its exit, or a failed init): its
    /// Rust lines in the kernel's pool, which stay in vmlinux until a
    /// module of that name loads again, lose the flags they were given and
    /// their fault entries, as a C module's call sites go with its section;
    /// with `control=` they are unsettled again, for that next load.
    pub(crate) fn module_going(&self, name: &[u8]) {
        let mut registry = self.registry.lock();
        registry.for_each_pool_tag(|id, tag| {
            if tag.module() != Some(name) {
                return;
            }
            let flags = Flags::of_word(tag.word());
            if flags.contains(Flags::FAIL) {
                self.faults.remove(id);
            }
            let word = if self.load.is_empty() {
                id.word(Flags::DEFAULT)
            } else {
                self.unsettled_word(id)
            };
            tag.set_word(keyed(word, tag.word()));
            if flags.contains(Flags::CHURN) {
                self.churn.remove(id);
            }
        });
    }

    /// Applies the commands of `control=` to the call sites of the module
    /// `owner` that just loaded, so that `control=` also reaches a module
    /// loaded later (its allocations from its init on).  A command that
    /// cannot be applied (no memory for the watch tables, the fault table
    /// full) leaves the rest as they are and says so.
    fn apply_load_commands(&self, registry: &mut Registry, owner: usize) {
        if self.load.is_empty() || self.load_refused() {
            return;
        }
        let queries = self.load.queries();
        let mut watch_ready = None;
        let mut failed = None;
        registry.for_each_tag_of(owner, |id, tag| {
            let site = tag.site();
            let old = SiteId::controlled(tag.word()).map_or(Flags::DEFAULT, |(_, f)| f);
            let (new, given) = final_flags(queries, &site, old);
            if new == old && !given.any() {
                return;
            }
            if new.watched() && !*watch_ready.get_or_insert_with(|| self.watch.prepare().is_ok()) {
                failed = Some(ENOMEM);
                return;
            }
            if let Err(e) = self.set_flags(id, tag, old, new, given) {
                failed = Some(e);
            }
        });
        // The module's code has not run yet: no hook counted for its call
        // sites.
        self.churn.start_pending(|id| self.counters.read(id));
        if let Some(e) = failed {
            pr_warn!(
                "control= could not be applied to every call site of a loading module ({:?})\n",
                e
            );
        }
    }
}

/// `word`, the new word of a tag whose word was `old`: on 7.3 with
/// [`KEYED_BIT`] if its flags watch or `old` had it, so that the frees of
/// every allocation the call site had watched look for it (`watch.rs`).
#[inline]
fn keyed(word: u64, old: u64) -> u64 {
    #[cfg(allocprof_tags)]
    if Flags::of_word(word).watched() || old & KEYED_BIT != 0 {
        return word | KEYED_BIT;
    }
    let _ = old;
    word
}

/// The checks of debug mode (`debug=1`), around the counting of [`Hooks`].
pub(crate) struct DebugChecks;

impl Checks for DebugChecks {
    /// Reports an allocation without a tag or over a live reference (6.12:
    /// on 7.3 the kernel keeps the references, and its own debug option
    /// checks them).
    fn page_alloc(p: &Profiler, pfn: Pfn, order: u32, tag: Option<Tag<'_>>) {
        if tag.is_none() {
            report(Report::UntaggedPages { order }, &p.reports);
        }
        #[cfg(not(allocprof_tags))]
        if let Some(id) = p.pages.id_of(pfn) {
            report(Report::PagesOverLive { id }, &p.reports);
        }
        #[cfg(allocprof_tags)]
        let _ = pfn;
    }

    /// Reports an object allocated without a tag or over a live reference
    /// of this load.
    #[cfg(not(allocprof_tags))]
    fn obj_alloc(p: &Profiler, slot: &ObjSlot<'_>, tag: Option<Tag<'_>>, size: usize) {
        if tag.is_none() {
            report(Report::UntaggedObject { size }, &p.reports);
        }
        if let Some(id) = SiteId::new(slot.get()) {
            report(Report::ObjectOverLive { id }, &p.reports);
        }
    }

    /// Reports a slot value allocprof does not write: an id that is neither
    /// a call site's with counters (those of a module that went away stay
    /// until its last allocation is freed) nor a watch id.
    #[cfg(not(allocprof_tags))]
    fn obj_freed(p: &Profiler, old: u16) {
        let known =
            SiteId::new(old).is_some_and(|id| p.counters.has(id) || WatchId::of(id).is_some());
        if !known {
            report(Report::ForeignSlot { value: old }, &p.reports);
        }
    }
}
