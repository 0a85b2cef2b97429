// SPDX-License-Identifier: GPL-2.0

//! The registry of code-tag sections and their call-site ids.
//!
//! Every `alloc_tags` section (vmlinux's and each loaded module's) gets a
//! contiguous range of compact call-site ids; a tag's id is stored in the
//! tag itself, so the hot path finds it with one load.  When a module goes
//! away while some of its allocations are still live, the names of those
//! call sites are copied and their ids kept until their figures reach zero;
//! only then is the range handed out again.

use core::cell::Cell;
use kernel::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    prelude::*,
    rbtree::{self, RBTree, RBTreeNode},
};

use crate::counters::{Counters, SectionCounters, Totals};
use crate::ids::{Flags, IdSet, SiteId, BLOCK_IDS, WATCH_ENTRIES, WATCH_FIRST};
use crate::sys::backend::{rust_changes, OwnMemory, OwnSite, Site, Tag, TagSection, Tags};
use crate::sys::sync::{Guard, MutexBackend};
use crate::text::BStr;

/// The call sites the profiler marked inaccurate, those with allocations
/// it did not count: sites that existed before profiling started (the
/// module loaded without the kernel's boot record, or profiling was
/// switched off for a while) and sites with a page beyond the
/// back-reference array.  Set from any context.  A call site is inaccurate
/// if it is in this set or the kernel marked its tag
/// (`CODETAG_FLAG_INACCURATE`, [`Tag::inaccurate`]); `/proc/allocinfo` 2.0
/// prints it with `accurate:no`, the `ioctl()` with `accurate` 0.
pub(crate) type Inaccurate = IdSet;

/// A call site of a module that is gone, with live allocations.
pub(crate) struct DeadSite {
    id: SiteId,
    line: u32,
    /// `file`, `module` and `function`, one after the other.
    names: KVec<u8>,
    file_len: usize,
    module_len: usize,
}

impl DeadSite {
    /// Copies the names of `site`; `None` if that cannot be allocated.
    fn copy(id: SiteId, site: &Site<'_>) -> Option<Self> {
        let module = site.module.unwrap_or(b"");
        let mut names = KVec::with_capacity(
            site.file.len() + module.len() + site.function.len(),
            GFP_KERNEL,
        )
        .ok()?;
        for part in [site.file, module, site.function] {
            names.extend_from_slice(part, GFP_KERNEL).ok()?;
        }
        Some(Self {
            id,
            line: site.line,
            names,
            file_len: site.file.len(),
            module_len: module.len(),
        })
    }

    /// Whether `site` is this call site: the same file, line, module and
    /// function.
    fn is(&self, site: &Site<'_>) -> bool {
        let mine = self.site();
        mine.line == site.line
            && mine.file == site.file
            && mine.function == site.function
            && mine.module == Some(site.module.unwrap_or(b""))
    }

    fn site(&self) -> Site<'_> {
        let (file, rest) = self.names.split_at(self.file_len);
        let (module, function) = rest.split_at(self.module_len);
        Site {
            file,
            line: self.line,
            module: Some(module),
            function,
        }
    }
}

/// One section and its id range.
///
/// # Invariants
///
/// `tags` is `Some` only while the section is registered with the back end:
/// [`Registry::add`] (from the back end's `section_add`) sets it, and
/// [`Registry::remove`] (from its `section_del`, before the kernel frees
/// the section) takes it.
struct Section {
    first: SiteId,
    /// The number of ids, at least 1.
    len: usize,
    /// The owning image (0 for vmlinux), while it is loaded.
    owner: usize,
    /// The tags, while the image is loaded.
    tags: Option<TagSection>,
    /// After the module is gone: its call sites with live allocations.
    dead: KVec<DeadSite>,
    /// On 7.3, the tags of the module's unloads whose call sites had live
    /// allocations, which the kernel keeps while their words hold ids
    /// (`section_used`): cleared when the section goes ([`Registry::collect`]).
    #[cfg(allocprof_tags)]
    kept: KVec<TagSection>,
    /// The counters of its ids, attached to the profiler's table while the
    /// section is in the registry.
    counters: SectionCounters,
}

impl Section {
    /// Its tags, while its image is loaded.
    fn tags(&self) -> Option<Tags<'_>> {
        // SAFETY: `tags` is only `Some` while the section is registered
        // (type invariant), and `remove`, which ends that, needs the
        // registry mutably, so not while `self` is borrowed.
        self.tags.as_ref().map(|t| unsafe { t.tags() })
    }

    /// Its ids, in order.
    fn ids(&self) -> impl Iterator<Item = SiteId> + '_ {
        (0..self.len).filter_map(|n| self.first.nth_after(n))
    }

    fn contains(&self, id: SiteId) -> bool {
        self.first <= id && id.index() < self.first.index() + self.len
    }

    /// Its first id at or after `id`, if the call site is shown: every
    /// call site of a loaded image, only the kept ones of a module gone.
    fn first_shown_from(&self, id: SiteId) -> Option<SiteId> {
        if self.tags.is_some() {
            return Some(id.max(self.first));
        }
        self.dead.iter().map(|d| d.id).filter(|&d| d >= id).min()
    }

    /// Its call sites from `from` on, in id order, with their names: the
    /// tags of a loaded image that have names (not the free tags of the
    /// kernel's pool of Rust call sites, [`Tag::named`]), or the copies
    /// kept of a module gone (made in id order by [`Registry::remove`]).
    fn names_from(&self, from: SiteId) -> SectionNames<'_> {
        let start = from.index().saturating_sub(self.first.index());
        let kept: &[DeadSite] = if self.tags.is_some() { &[] } else { &self.dead };
        SectionNames {
            section: self,
            live: self.tags().map(|tags| (tags, start)),
            gone: kept.iter(),
            from,
        }
    }

    /// The names of call site `id`, one of this section's ids; `None` for
    /// a free tag of the kernel's pool, or an id of a module gone that was
    /// not kept.
    fn names_of(&self, id: SiteId) -> Option<Names<'_>> {
        match self.tags() {
            Some(tags) => {
                let tag = tags.get(id.index() - self.first.index())?;
                tag.named().then_some(Names::Live(tag))
            }
            None => self.dead.iter().find(|d| d.id == id).map(Names::Gone),
        }
    }
}

/// The call sites of one section from an id on ([`Section::names_from`]).
/// A type of its own rather than a chain of iterator adapters: the
/// adapters' closures made symbols too long for objtool's `__pfx_` names.
struct SectionNames<'a> {
    section: &'a Section,
    /// The loaded image's tags and the index of the next one to look at.
    live: Option<(Tags<'a>, usize)>,
    /// The copies kept of a module gone.
    gone: core::slice::Iter<'a, DeadSite>,
    from: SiteId,
}

impl<'a> Iterator for SectionNames<'a> {
    type Item = (SiteId, Names<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((tags, n)) = self.live.as_mut() {
            while *n < self.section.len {
                let (Some(id), Some(tag)) = (self.section.first.nth_after(*n), tags.get(*n)) else {
                    break;
                };
                *n += 1;
                if tag.named() {
                    return Some((id, Names::Live(tag)));
                }
            }
            self.live = None;
        }
        let from = self.from;
        self.gone
            .find(|d| d.id >= from)
            .map(|d| (d.id, Names::Gone(d)))
    }
}

/// All sections, by id.
///
/// # Invariants
///
/// The id ranges of the sections do not overlap, and each is in `used`;
/// `sections` is keyed by the last id of each range.
pub(crate) struct Registry {
    sections: RBTree<u16, Section>,
    /// The ids handed out.
    used: IdSet,
    /// Sections added and removed so far.
    changes: u64,
}

impl Registry {
    /// A registry with every id free.
    pub(crate) fn new() -> Result<Self> {
        let used = IdSet::new()?;
        // The top of the id space names watched allocations (`watch.rs`),
        // never a call site, so those ids have no counters.
        if let Some(first) = SiteId::new(WATCH_FIRST) {
            used.set_range(first, WATCH_ENTRIES, true);
        }
        Ok(Self {
            sections: RBTree::new(),
            used,
            changes: 0,
        })
    }

    /// Takes `len` consecutive ids starting on a block boundary (first fit).
    fn take_ids(&mut self, len: usize) -> Option<SiteId> {
        let first = self.used.first_free(len, BLOCK_IDS)?;
        self.used.set_range(first, len, true);
        Some(first)
    }

    /// The section whose range holds `id`: the one with the lowest last id
    /// at or above `id`, if its range starts at or below it.
    fn section_of(&mut self, id: SiteId) -> Option<&Section> {
        let last = *self.sections.cursor_lower_bound(&id.get())?.current().0;
        self.sections.get(&last).filter(|s| s.contains(id))
    }

    /// Gives `section` ids, counters, and writes the ids into its tags.
    /// Its call sites start as counted from the first allocation.  Called
    /// by the back end's `section_add` for `section`.
    pub(crate) fn add(
        &mut self,
        section: TagSection,
        counters: &Counters,
        inaccurate: &Inaccurate,
    ) -> Result {
        self.changes += 1;
        self.collect(counters);
        let len = section.len();
        if len == 0 {
            return Ok(());
        }
        // SAFETY: The section is being added (this is its `section_add`),
        // and the kernel withdraws it only after that returned.
        let tags = unsafe { section.tags() };
        if let Some(s) = self.revive(tags, inaccurate) {
            // INVARIANT: Set while the section is being added.
            s.owner = section.owner();
            s.tags = Some(section);
            return Ok(());
        }
        let Some(first) = self.take_ids(len) else {
            pr_warn!(
                "out of call-site ids: {} call sites are not profiled\n",
                len
            );
            tags.iter().for_each(|tag| tag.set_word(0));
            return Ok(());
        };
        // `take_ids` found `len` ids from `first`, all below `SPACE`.
        let last = (first.index() + len - 1) as u16;
        let vmlinux = section.owner() == 0;
        let inserted = SectionCounters::new(first, len, vmlinux).and_then(|section_counters| {
            let node = RBTreeNode::new(
                last,
                Section {
                    first,
                    len,
                    owner: section.owner(),
                    tags: None,
                    dead: KVec::new(),
                    #[cfg(allocprof_tags)]
                    kept: KVec::new(),
                    counters: section_counters,
                },
                GFP_KERNEL,
            )?;
            self.sections.insert(node);
            Ok(())
        });
        if let Err(e) = inserted {
            self.used.set_range(first, len, false);
            return Err(e);
        }
        inaccurate.set_range(first, len, false);
        if let Some(s) = self.sections.get(&last) {
            // SAFETY: The section's counters are detached in `collect`
            // before the section is removed from the tree and dropped.
            unsafe { counters.attach(&s.counters) };
        }
        let ids = (0..len).map_while(|n| first.nth_after(n));
        for (tag, id) in tags.iter().zip(ids) {
            tag.set_word(id.word(Flags::DEFAULT));
        }
        if let Some(s) = self.sections.get_mut(&last) {
            // INVARIANT: Set while the section is being added.
            s.tags = Some(section);
        }
        Ok(())
    }

    /// A module loaded again while the memory of its earlier load is still
    /// allocated: if `tags`, a section being added, has the call sites of
    /// a section kept for that (the same number, and the kept ones at the
    /// same places with the same names), the section gets those ids again,
    /// so that each call site keeps one identity and one line, with the
    /// figures of both loads.  Leaking reloads so use no more ids.  The
    /// section kept, for the new one's tags, if there is one.
    fn revive(&mut self, tags: Tags<'_>, inaccurate: &Inaccurate) -> Option<&mut Section> {
        let len = tags.len();
        let matches = |s: &Section| {
            s.tags.is_none()
                && s.len == len
                && !s.dead.is_empty()
                && s.dead.iter().all(|d| {
                    // `d.id` is in `s`'s range, of `len` ids.
                    tags.get(d.id.index() - s.first.index())
                        .is_some_and(|tag| d.is(&tag.site()))
                })
        };
        let s = self.sections.values_mut().find(|s| matches(s))?;
        // Its call sites without memory of the earlier load start as new
        // ones do; those with memory keep their flag.
        for (tag, id) in tags.iter().zip(s.ids()) {
            if !s.dead.iter().any(|d| d.id == id) {
                inaccurate.set_range(id, 1, false);
            }
            tag.set_word(id.word(Flags::DEFAULT));
        }
        pr_info!(
            "module {} loaded again: its {} call sites keep their ids, {} with memory of its earlier load\n",
            BStr(s.dead[0].site().module.unwrap_or(b"?")),
            len,
            s.dead.len()
        );
        s.dead = KVec::new();
        Some(s)
    }

    /// The module of `section` goes away: forget its tags, keep copies of
    /// the call sites that still have memory allocated.
    pub(crate) fn remove(
        &mut self,
        section: TagSection,
        counters: &Counters,
        inaccurate: &Inaccurate,
    ) {
        self.changes += 1;
        let owner = section.owner();
        let Some(s) = self
            .sections
            .values_mut()
            .find(|s| s.owner == owner && s.tags.is_some())
        else {
            return;
        };
        // The call sites with memory allocated, copied: a section with tags
        // has none kept yet.
        let mut dead = KVec::new();
        // Whether a call site has memory allocated, shown or not.
        let mut live = false;
        if let Some(tags) = s.tags() {
            for (tag, id) in tags.iter().zip(s.ids()) {
                let totals = counters.read(id);
                live |= !totals.is_zero();
                if totals.is_zero() {
                    // On 7.3 the word says whether the kernel keeps the
                    // tag (`section_used`): nothing of it is live.
                    #[cfg(allocprof_tags)]
                    tag.set_word(0);
                    continue;
                }
                if tag.inaccurate() {
                    inaccurate.set(id);
                }
                let site = tag.site();
                pr_info!(
                    "{}:{} module {} func:{} has {} bytes allocated at module unload\n",
                    BStr(site.file),
                    site.line,
                    BStr(site.module.unwrap_or(b"?")),
                    BStr(site.function),
                    totals.bytes
                );
                let copied = DeadSite::copy(id, &site)
                    .ok_or(ENOMEM)
                    .and_then(|d| dead.push(d, GFP_KERNEL).map_err(|_| ENOMEM));
                if copied.is_err() {
                    pr_warn!(
                        "call site {} of an unloaded module is no longer shown\n",
                        id
                    );
                }
            }
        }
        // INVARIANT: The section is withdrawn when this returns.
        let tags = s.tags.take();
        #[cfg(allocprof_tags)]
        if let Some(tags) = tags.filter(|_| live) {
            if s.kept.push(tags, GFP_KERNEL).is_err() {
                pr_warn!("the call sites of an unloaded module keep their memory until allocprof unloads\n");
            }
        }
        #[cfg(not(allocprof_tags))]
        let _ = (tags, live);
        s.dead = dead;
        self.collect(counters);
    }

    /// Frees the sections of unloaded modules whose figures all reached
    /// zero, and their ids with them.
    fn collect(&mut self, counters: &Counters) {
        loop {
            let done = self
                .sections
                .iter()
                .find(|(_, s)| s.tags.is_none() && s.ids().all(|id| counters.read(id).is_zero()));
            let Some((&last, s)) = done else {
                return;
            };
            let (first, len) = (s.first, s.len);
            // On 7.3 the kernel may now give the tags' memory to another
            // module (`section_used`).
            #[cfg(allocprof_tags)]
            for kept in s.kept.iter() {
                // SAFETY: The kernel keeps the tags while a word holds an
                // id, and only this clears them, once.
                unsafe { kept.tags() }
                    .iter()
                    .for_each(|tag| tag.set_word(0));
            }
            // Its figures are all zero and its module is gone: no hook
            // counts for its ids any more.
            counters.detach(&s.counters);
            self.sections.remove(&last);
            self.used.set_range(first, len, false);
        }
    }

    /// Flags every call site of the loaded images: allocations may have
    /// been made there that were not counted (profiling starts late, or
    /// was off for a while).
    pub(crate) fn mark_all_inaccurate(&self, inaccurate: &Inaccurate) {
        for s in self.sections.values().filter(|s| s.tags.is_some()) {
            inaccurate.set_range(s.first, s.len, true);
        }
    }

    /// A number that changes whenever call sites come or go
    /// (`ALLOCINFO_IOC_CONTENT_ID`): the registration's `generation`, and
    /// the count of sections added and removed plus the kernel's count of
    /// the changes of its Rust lines ([`rust_changes`]), so that it also
    /// changes when allocprof itself is reloaded.
    pub(crate) fn content_id(&self, generation: u32) -> u64 {
        let changes = self.changes.wrapping_add(u64::from(rust_changes()));
        (u64::from(generation) << 32) | (changes & 0xffff_ffff)
    }

    /// Hands `count` the memory of every section's counters, with the line
    /// it is counted for: for counters made before profiling started.
    pub(crate) fn count_own(&self, count: &mut dyn FnMut(OwnSite, OwnMemory<'_>)) {
        for s in self.sections.values() {
            s.counters.count_own(count);
        }
    }

    /// Per-CPU memory of the counters of every section, a CPU's share, and
    /// how much of it is in the first per-CPU chunk's reserved area
    /// (vmlinux's, where the kernel keeps room for them).
    pub(crate) fn counter_bytes(&self) -> (usize, usize) {
        self.sections
            .values()
            .map(|s| s.counters.bytes_per_cpu())
            .fold((0, 0), |(all, reserved), (a, r)| (all + a, reserved + r))
    }

    /// The number of call sites of the loaded images.
    pub(crate) fn nr_sites(&self) -> usize {
        self.sections
            .values()
            .filter(|s| s.tags.is_some())
            .map(|s| s.len)
            .sum()
    }

    /// The first call site shown at or after `id`.
    pub(crate) fn seek(&mut self, id: SiteId) -> Option<SiteId> {
        // 7.3's read-only cursor does not move: its mutable one does.
        #[cfg(allocprof_tags)]
        let mut cursor = self.sections.cursor_lower_bound_mut(&id.get())?;
        #[cfg(not(allocprof_tags))]
        let mut cursor = self.sections.cursor_lower_bound(&id.get())?;
        loop {
            if let Some(found) = cursor.current().1.first_shown_from(id) {
                return Some(found);
            }
            cursor = cursor.move_next()?;
        }
    }

    /// Calls `f` with the id and tag of every call site of the image
    /// `owner` (`TagSection::owner`), if it is loaded.
    pub(crate) fn for_each_tag_of(&mut self, owner: usize, mut f: impl FnMut(SiteId, Tag<'_>)) {
        for s in self.sections.values().filter(|s| s.owner == owner) {
            if let Some(tags) = s.tags() {
                for (tag, id) in tags.iter().zip(s.ids()).filter(|(t, _)| t.named()) {
                    f(id, tag);
                }
            }
        }
    }

    /// Calls `f` with the id and tag of every tag of vmlinux that may be a
    /// Rust line of the kernel's pool (`lib/alloc_tag_rust.c`): a free one
    /// (not [`Tag::named`]) or one with a module's name (no other tag of
    /// vmlinux has one), gone or not.
    pub(crate) fn for_each_pool_tag(&mut self, mut f: impl FnMut(SiteId, Tag<'_>)) {
        for s in self.sections.values().filter(|s| s.owner == 0) {
            if let Some(tags) = s.tags() {
                for (tag, id) in tags
                    .iter()
                    .zip(s.ids())
                    .filter(|(t, _)| !t.named() || t.module().is_some())
                {
                    f(id, tag);
                }
            }
        }
    }
}

/// The last `keep` bytes of `name`, or all of it.
fn suffix(name: &[u8], keep: usize) -> &[u8] {
    &name[name.len().saturating_sub(keep)..]
}

/// Where a call site's names are: read only when asked for.
#[derive(Clone, Copy)]
enum Names<'a> {
    /// A call site of a loaded image: in its tag.
    Live(Tag<'a>),
    /// One of a module gone, kept while it has memory allocated: copied.
    Gone(&'a DeadSite),
}

/// One call site as every listing of allocprof shows it: `/proc/allocinfo`
/// and its `ioctl()` (`procfs.rs`), `show_mem()` (`showmem.rs`), the
/// control file (`control.rs`) and the reports (`reports.rs`).  Its names
/// are read, and its per-CPU counters summed (once), only when asked for.
/// Made by [`Sites`], under the registry lock.
pub(crate) struct SiteView<'a> {
    id: SiteId,
    names: Names<'a>,
    counters: &'a Counters,
    inaccurate: &'a Inaccurate,
    /// Its figures, once summed.
    totals: Cell<Option<Totals>>,
}

impl<'a> SiteView<'a> {
    pub(crate) fn id(&self) -> SiteId {
        self.id
    }

    /// Its live bytes and calls over all CPUs, summed the first time they
    /// are asked for.
    pub(crate) fn totals(&self) -> Totals {
        if let Some(totals) = self.totals.get() {
            return totals;
        }
        let totals = self.counters.read(self.id);
        self.totals.set(Some(totals));
        totals
    }

    /// Whether the listings show it: every call site of a loaded image,
    /// one whose module is gone (an unloaded module's, or a Rust line's,
    /// [`Tag::gone`]) only while it has memory allocated.  Its counters are
    /// summed only for the latter.
    pub(crate) fn visible(&self) -> bool {
        !self.gone() || !self.totals().is_zero()
    }

    /// Whether its figures miss no allocation: neither the kernel marked
    /// its tag ([`Tag::inaccurate`]) nor the profiler its id
    /// ([`Inaccurate`]).  `accurate:no` in `/proc/allocinfo` 2.0, `accurate`
    /// in the `ioctl()`'s records.
    pub(crate) fn accurate(&self) -> bool {
        let tag_inaccurate = match self.names {
            Names::Live(t) => t.inaccurate(),
            Names::Gone(_) => false,
        };
        !tag_inaccurate && !self.inaccurate.get(self.id)
    }

    /// Its module is gone (a Rust line's too, [`Tag::gone`]).
    fn gone(&self) -> bool {
        match self.names {
            Names::Live(t) => t.gone(),
            Names::Gone(_) => true,
        }
    }

    /// Its tag, while its module is loaded: the control file's call sites.
    fn tag(&self) -> Option<Tag<'a>> {
        match self.names {
            Names::Live(t) if !t.gone() => Some(t),
            _ => None,
        }
    }

    /// Its flags (the control file's), if its image is loaded.
    pub(crate) fn flags(&self) -> Option<Flags> {
        match self.names {
            Names::Live(t) => Some(SiteId::controlled(t.word()).map_or(Flags::DEFAULT, |(_, f)| f)),
            Names::Gone(_) => None,
        }
    }

    /// Its file, line, module and function.
    pub(crate) fn site(&self) -> Site<'a> {
        match self.names {
            Names::Live(t) => t.site(),
            Names::Gone(d) => d.site(),
        }
    }

    pub(crate) fn file(&self) -> &'a [u8] {
        match self.names {
            Names::Live(t) => t.file(),
            Names::Gone(d) => d.site().file,
        }
    }

    pub(crate) fn function(&self) -> &'a [u8] {
        match self.names {
            Names::Live(t) => t.function(),
            Names::Gone(d) => d.site().function,
        }
    }

    /// Whether the file, or its last `keep` bytes if it is longer, is
    /// `template`; reads no more of the name than it must.
    pub(crate) fn file_is(&self, template: &[u8], keep: usize) -> bool {
        match self.names {
            Names::Live(t) => t.file_is(template, keep),
            Names::Gone(d) => suffix(d.site().file, keep) == template,
        }
    }

    /// As [`SiteView::file_is`], for the function.
    pub(crate) fn function_is(&self, template: &[u8], keep: usize) -> bool {
        match self.names {
            Names::Live(t) => t.function_is(template, keep),
            Names::Gone(d) => suffix(d.site().function, keep) == template,
        }
    }

    pub(crate) fn module(&self) -> Option<&'a [u8]> {
        match self.names {
            Names::Live(t) => t.module(),
            Names::Gone(d) => d.site().module,
        }
    }

    pub(crate) fn line(&self) -> u32 {
        match self.names {
            Names::Live(t) => t.line(),
            Names::Gone(d) => d.line,
        }
    }
}

/// The call sites from an id on, in id order ([`Sites::iter_from`]).  A
/// type of its own, as [`SectionNames`]: a chain of adapters made symbols
/// too long for objtool.
pub(crate) struct SitesFrom<'a> {
    sections: rbtree::Iter<'a, u16, Section>,
    /// The call sites of the section at hand.
    section: Option<SectionNames<'a>>,
    from: SiteId,
    counters: &'a Counters,
    inaccurate: &'a Inaccurate,
}

impl<'a> Iterator for SitesFrom<'a> {
    type Item = SiteView<'a>;

    fn next(&mut self) -> Option<SiteView<'a>> {
        loop {
            if let Some((id, names)) = self.section.as_mut().and_then(Iterator::next) {
                return Some(SiteView {
                    id,
                    names,
                    counters: self.counters,
                    inaccurate: self.inaccurate,
                    totals: Cell::new(None),
                });
            }
            // The sections are keyed by their last id: those that end
            // before `from` have none of its call sites.
            let (_, s) = self.sections.find(|&(&last, _)| last >= self.from.get())?;
            self.section = Some(s.names_from(self.from));
        }
    }
}

/// The call sites, for the listings: the registry, locked, with the
/// counters and the inaccurate set that a [`SiteView`] reads.  Made by
/// `Profiler::sites`, or tried by `Profiler::try_sites` (`show_mem()`).
pub(crate) struct Sites<'a> {
    registry: Guard<'a, Registry, MutexBackend>,
    counters: &'a Counters,
    inaccurate: &'a Inaccurate,
}

impl<'a> Sites<'a> {
    /// The call sites of `registry`, locked, with their figures in
    /// `counters` and their marks in `inaccurate`.
    pub(crate) fn new(
        registry: Guard<'a, Registry, MutexBackend>,
        counters: &'a Counters,
        inaccurate: &'a Inaccurate,
    ) -> Self {
        Self {
            registry,
            counters,
            inaccurate,
        }
    }

    /// Every call site, in id order (the order of `/proc/allocinfo`).
    pub(crate) fn iter(&self) -> impl Iterator<Item = SiteView<'_>> {
        self.iter_from(SiteId::FIRST)
    }

    /// Every call site from `from` on, in id order: one pass over the
    /// sections, without a lookup per id.  The free tags of the kernel's
    /// pool of Rust call sites are left out ([`Tag::named`]); those of a
    /// module gone are there: a listing shows only the visible ones
    /// ([`SiteView::visible`]).
    pub(crate) fn iter_from(&self, from: SiteId) -> SitesFrom<'_> {
        SitesFrom {
            sections: self.registry.sections.iter(),
            section: None,
            from,
            counters: self.counters,
            inaccurate: self.inaccurate,
        }
    }

    /// The call sites of the loaded images, in id order, with their tags:
    /// the control file's (not those whose module is gone).
    pub(crate) fn tags(&self) -> impl Iterator<Item = (SiteId, Tag<'_>)> {
        self.iter().filter_map(|site| Some((site.id, site.tag()?)))
    }

    /// Call site `id`, if it is one: one lookup.
    pub(crate) fn get(&mut self, id: SiteId) -> Option<SiteView<'_>> {
        let names = self.registry.section_of(id)?.names_of(id)?;
        Some(SiteView {
            id,
            names,
            counters: self.counters,
            inaccurate: self.inaccurate,
            totals: Cell::new(None),
        })
    }

    /// The first call site shown at or after `id` ([`Registry::seek`]).
    pub(crate) fn seek(&mut self, id: SiteId) -> Option<SiteId> {
        self.registry.seek(id)
    }
}
