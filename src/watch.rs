// SPDX-License-Identifier: GPL-2.0

//! Watched allocations: those of call sites with the `s` (stacks), `a`
//! (ages) or `m` (memory cgroups) flag of the control file (`control.rs`),
//! and the pages of call sites with `n` (nodes).
//!
//! Each watched allocation gets an entry in a fixed table.  On 6.12 its
//! page back-reference or object slot holds the entry's [`WatchId`] in
//! place of the call site's id; on 7.3, whose kernel keeps the tag in the
//! reference, the entry is found again by the allocation's [`Key`] (its
//! first page's frame number, or its reference's address) in a hash of
//! the live entries, which only the frees of call sites that were ever
//! watched look up (`ids::KEYED_BIT`).  Watch ids are the top [`WATCH_ENTRIES`] values
//! of the 16-bit id space (`ids.rs`), which the registry never hands to a
//! call site, so they have no counters: the hot free paths find no counter
//! block for them, which is the test they make anyway, and only then come
//! here (the cold path).  An unflagged call site's allocations and frees
//! run exactly the instructions they ran before.
//!
//! An entry keeps the call site, the live bytes and calls of the
//! allocation (a split page allocation is several calls, a partial free
//! takes bytes), its chain, its start time and the node of its pages,
//! which a migration changes (`Watch::moved`), and with `m` the memory
//! cgroup the allocating context charges to (`sys::memcg`), held in a
//! table of [`MEMCGS`] cgroups, and whether the allocation asked to be
//! charged (7.3: the flags the hooks are handed).  Slab and percpu objects
//! have no node here: the object hooks are handed the object's slot, not
//! the object, so an object of a call site with `n` alone is not watched.
//! Chains are kept per call site and stack-depot handle, with the bytes
//! and calls of their live entries and the task of their latest
//! allocation, so the stacks report is exact: a chain's figures leave with
//! the frees.  Both tables are allocated when a call site first gets `s`,
//! `a` or `n` (about 700 KiB), and are bounded: an allocation that finds them full is counted as usual,
//! without an entry, and reported as not tracked.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{alloc::flags::GFP_KERNEL, error::Result, prelude::*, ThisModule};

use crate::ids::{Flags, SiteId, WATCH_ENTRIES, WATCH_FIRST};
use crate::sys::backend::Gfp;
use crate::sys::debugfs::Text;
use crate::sys::memcg::{CurrentMemcg, MemcgRef};
use crate::sys::mm::NodeId;
#[cfg(allocprof_tags)]
use crate::sys::mm::Pfn;
use crate::sys::percpu::{this_cpu_add, this_cpu_read, PerCpuArray};
use crate::sys::stack::{StackHandle, Trace};
use crate::sys::sync::IrqRawSpinLock;
use crate::sys::task::{now_ns, TaskId};

/// Chains: one per call site and call chain with live watched allocations.
pub(crate) const CHAINS: usize = 4096;
/// Hash buckets of the chains.
const BUCKETS: usize = 1024;
/// The end of an index list.
const NIL: u16 = u16::MAX;
/// Memory cgroups the tables hold at once (`m`).  A cgroup's slot is
/// released when no live allocation names it and a report or a control
/// write sweeps the table (process context: see `sys::memcg`).
pub(crate) const MEMCGS: usize = 64;
/// Hash buckets of the entries' keys (7.3).
#[cfg(allocprof_tags)]
const KEY_BUCKETS: usize = 4096;

/// Where a watched allocation is found again on 7.3 (see the module's
/// doc): by what the page and object hooks are handed.
#[cfg(allocprof_tags)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// The `2^order` pages from this frame on.  Its pieces after a split
    /// are freed by frames inside it: the buddy allocator aligns an
    /// allocation of `2^order` pages to `2^order` frames, so the piece at
    /// `pfn` is found at `pfn` rounded down to some order.
    Pages(Pfn, u32),
    /// A slab or percpu object, by its reference's address, which stays
    /// the same while the object lives.
    Object(usize),
}

#[cfg(allocprof_tags)]
impl Key {
    /// Whether this key's allocation holds the frame `pfn` (pages), or is
    /// `other` (an object).
    fn holds(self, other: Key) -> bool {
        match (self, other) {
            (Key::Pages(start, order), Key::Pages(pfn, _)) => {
                start.index() <= pfn.index() && pfn.index() - start.index() < 1 << order
            }
            (a, b) => a == b,
        }
    }

    /// The bucket of the allocation that starts here.
    fn bucket(self) -> usize {
        let k = match self {
            Key::Pages(pfn, _) => pfn.index() as u64,
            Key::Object(addr) => addr as u64 | 1 << 63,
        };
        (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % KEY_BUCKETS
    }
}

/// A watched allocation's id, stored where its call site's id would be.
#[derive(Clone, Copy)]
pub(crate) struct WatchId(u16);

impl WatchId {
    /// The entry `id` names, if it is a watch id.
    #[inline(always)]
    pub(crate) fn of(id: SiteId) -> Option<Self> {
        id.get().checked_sub(WATCH_FIRST).map(Self)
    }

    /// As stored in a back-reference or slot.
    pub(crate) fn as_site_id(self) -> SiteId {
        // `self.0 < WATCH_ENTRIES`, so `WATCH_FIRST + self.0` is a non-zero
        // u16.
        SiteId::new(WATCH_FIRST + self.0).unwrap_or_else(|| unreachable!())
    }

    fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// One watched allocation, or a free entry.
#[derive(Clone, Copy)]
struct Entry {
    /// Its call site; `None` while the entry is free.
    site: Option<SiteId>,
    /// Its chain, or [`NIL`] (no `s`); the next free entry while free.
    link: u16,
    bytes: u64,
    calls: u64,
    /// When it was allocated (ns), 0 without `a`.
    since: u64,
    /// The node of its pages, with `n`.
    node: Option<NodeId>,
    /// Its memory cgroup, with `m`.
    memcg: MemcgOf,
    /// Whether it asked to be charged to its memory cgroup.
    accounted: bool,
}

/// Where a watched allocation's memory cgroup is kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MemcgOf {
    /// Its call site has no `m`.
    Unkept,
    /// Its context charges no memory cgroup (a kernel thread, an
    /// interrupt).
    Nothing,
    /// The cgroup in this slot of the memcg table.
    Slot(u8),
    /// The memcg table was full.
    Full,
}

impl MemcgOf {
    /// As a report row's key: a slot's index, or past them.
    fn code(self) -> Option<u32> {
        match self {
            MemcgOf::Unkept => None,
            MemcgOf::Slot(i) => Some(u32::from(i)),
            MemcgOf::Nothing => Some(MEMCGS as u32),
            MemcgOf::Full => Some(MEMCGS as u32 + 1),
        }
    }
}

/// A slot of the memcg table: a cgroup held and its live allocations.
struct MemcgSlot {
    held: Option<MemcgRef>,
    live: u32,
}

/// The live watched allocations of one call site made through one chain.
#[derive(Clone, Copy)]
struct Chain {
    site: Option<SiteId>,
    /// `None`: the chain could not be saved (the depot was full).
    stack: Option<StackHandle>,
    /// The next chain in the bucket, or the next free chain.
    next: u16,
    bytes: u64,
    calls: u64,
    /// The task of the latest allocation.
    task: TaskId,
}

/// The entries and chains, and their free lists; on 7.3 the entries'
/// keys, hashed.
///
/// # Invariants
///
/// Every entry and chain index is in exactly one list: a free list, a
/// bucket (chains), or live (entries with a site).  A live entry's `link`
/// is [`NIL`] or a live chain of the same site, whose figures include the
/// entry's.  An entry or chain is live until both its calls and its bytes
/// are zero, so that every watch id stored in a page or slot, or read by
/// a partial free, names its own allocation.  On 7.3 a live entry with a
/// key is in exactly one key bucket's list (`key_next`), the one of its
/// key; an entry is given its key right after [`Tables::insert`].
struct Tables {
    entries: KVVec<Entry>,
    chains: KVVec<Chain>,
    buckets: KVVec<u16>,
    free_entry: u16,
    free_chain: u16,
    live_entries: usize,
    live_chains: usize,
    /// Each entry's key, while it is live and has one.
    #[cfg(allocprof_tags)]
    keys: KVVec<Option<Key>>,
    /// The next entry in the key bucket.
    #[cfg(allocprof_tags)]
    key_next: KVVec<u16>,
    #[cfg(allocprof_tags)]
    key_buckets: KVVec<u16>,
    /// The highest order of pages given a key: how far a free's frame is
    /// rounded down to find the allocation it is a piece of.
    #[cfg(allocprof_tags)]
    max_order: u32,
    /// The memory cgroups of live entries with `m` (and some without any
    /// left, until swept).
    memcgs: KVVec<MemcgSlot>,
}

/// A chain as the stacks report shows it.
#[derive(Clone, Copy)]
pub(crate) struct ChainRow {
    pub(crate) site: SiteId,
    pub(crate) stack: Option<StackHandle>,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
    pub(crate) task: TaskId,
}

/// Live watched bytes and calls of one call site on one node.
#[derive(Clone, Copy)]
pub(crate) struct NodeRow {
    pub(crate) site: SiteId,
    pub(crate) node: NodeId,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
}

/// Live watched bytes and calls of one call site in one memory cgroup.
#[derive(Clone, Copy)]
pub(crate) struct MemcgRow {
    pub(crate) site: SiteId,
    /// The slot of its cgroup in the names [`Watch::memcgs`] returns;
    /// [`MEMCGS`]: no cgroup; past it: the table was full.
    pub(crate) memcg: u32,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
    /// Of `bytes`, those asked to be charged (7.3).
    pub(crate) accounted: u64,
}

/// Live watched bytes and calls of one call site in one age bucket.
#[derive(Clone, Copy)]
pub(crate) struct AgeRow {
    pub(crate) site: SiteId,
    pub(crate) bucket: u32,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
}

/// Sorts `v` by `less`, in place, without allocating.  (core's sorts
/// check the order's consistency with a panic path that 6.12's objtool
/// does not know, and warns about.)
pub(crate) fn heap_sort<T>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let sift = |v: &mut [T], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && less(&v[child], &v[child + 1]) {
            child += 1;
        }
        if !less(&v[root], &v[child]) {
            return;
        }
        v.swap(root, child);
        root = child;
    };
    for i in (0..v.len() / 2).rev() {
        sift(v, i, v.len());
    }
    for end in (1..v.len()).rev() {
        v.swap(0, end);
        sift(v, 0, end);
    }
}

/// Age buckets: `[0, 1)` s, then `[2^(b-1), 2^b)` s, the last open.
pub(crate) const AGE_BUCKETS: u32 = 33;

/// The bucket of an age of `ns` nanoseconds.
fn age_bucket(ns: u64) -> u32 {
    let s = ns / 1_000_000_000;
    (u64::BITS - s.leading_zeros()).min(AGE_BUCKETS - 1)
}

/// Writes bucket `b`'s label, as `0-1s`, `2-4s`, ... `>=2147483648s`.
pub(crate) fn write_age_label(out: &mut Text, b: u32) {
    use core::fmt::Write;
    let _ = match b {
        0 => write!(out, "0-1s"),
        b if b == AGE_BUCKETS - 1 => write!(out, ">={}s", 1u64 << (b - 1)),
        b => write!(out, "{}-{}s", 1u64 << (b - 1), 1u64 << b),
    };
}

impl Tables {
    fn new() -> Result<KBox<Self>> {
        let free_entry = Entry {
            site: None,
            link: NIL,
            bytes: 0,
            calls: 0,
            since: 0,
            node: None,
            memcg: MemcgOf::Unkept,
            accounted: false,
        };
        let free_chain = Chain {
            site: None,
            stack: None,
            next: NIL,
            bytes: 0,
            calls: 0,
            task: TaskId {
                pid: 0,
                comm: [0; crate::sys::task::COMM_LEN],
            },
        };
        let mut entries = KVVec::with_capacity(WATCH_ENTRIES, GFP_KERNEL)?;
        for i in 0..WATCH_ENTRIES {
            let next = if i + 1 < WATCH_ENTRIES {
                (i + 1) as u16
            } else {
                NIL
            };
            entries.push(
                Entry {
                    link: next,
                    ..free_entry
                },
                GFP_KERNEL,
            )?;
        }
        let mut chains = KVVec::with_capacity(CHAINS, GFP_KERNEL)?;
        for i in 0..CHAINS {
            let next = if i + 1 < CHAINS { (i + 1) as u16 } else { NIL };
            chains.push(Chain { next, ..free_chain }, GFP_KERNEL)?;
        }
        let buckets = KVVec::from_elem(NIL, BUCKETS, GFP_KERNEL)?;
        let mut memcgs = KVVec::with_capacity(MEMCGS, GFP_KERNEL)?;
        for _ in 0..MEMCGS {
            memcgs.push(
                MemcgSlot {
                    held: None,
                    live: 0,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(KBox::new(
            Self {
                entries,
                chains,
                buckets,
                free_entry: 0,
                free_chain: 0,
                live_entries: 0,
                live_chains: 0,
                #[cfg(allocprof_tags)]
                keys: KVVec::from_elem(None, WATCH_ENTRIES, GFP_KERNEL)?,
                #[cfg(allocprof_tags)]
                key_next: KVVec::from_elem(NIL, WATCH_ENTRIES, GFP_KERNEL)?,
                #[cfg(allocprof_tags)]
                key_buckets: KVVec::from_elem(NIL, KEY_BUCKETS, GFP_KERNEL)?,
                #[cfg(allocprof_tags)]
                max_order: 0,
                memcgs,
            },
            GFP_KERNEL,
        )?)
    }

    /// Bytes the tables take.
    fn size(&self) -> usize {
        let size = self.entries.len() * core::mem::size_of::<Entry>()
            + self.chains.len() * core::mem::size_of::<Chain>()
            + self.buckets.len() * core::mem::size_of::<u16>()
            + self.memcgs.len() * core::mem::size_of::<MemcgSlot>();
        #[cfg(allocprof_tags)]
        let size = size
            + self.keys.len() * core::mem::size_of::<Option<Key>>()
            + (self.key_next.len() + self.key_buckets.len()) * core::mem::size_of::<u16>();
        size
    }

    fn bucket_of(site: SiteId, stack: Option<StackHandle>) -> usize {
        let key = (u64::from(site.get()) << 32) | u64::from(stack.map_or(0, StackHandle::get));
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % BUCKETS
    }

    /// The live chain of `site` and `stack`, made if there is none; `None`
    /// if none is free.
    fn chain(&mut self, site: SiteId, stack: Option<StackHandle>) -> Option<u16> {
        let b = Self::bucket_of(site, stack);
        let mut c = self.buckets[b];
        while c != NIL {
            let chain = &self.chains[usize::from(c)];
            if chain.site == Some(site) && chain.stack == stack {
                return Some(c);
            }
            c = chain.next;
        }
        let c = self.free_chain;
        if c == NIL {
            return None;
        }
        let chain = &mut self.chains[usize::from(c)];
        self.free_chain = chain.next;
        chain.site = Some(site);
        chain.stack = stack;
        chain.bytes = 0;
        chain.calls = 0;
        chain.next = self.buckets[b];
        self.buckets[b] = c;
        self.live_chains += 1;
        Some(c)
    }

    /// Takes chain `c`, whose figures reached zero, out of its bucket.
    fn drop_chain(&mut self, c: u16) {
        let chain = self.chains[usize::from(c)];
        let Some(site) = chain.site else {
            return;
        };
        let b = Self::bucket_of(site, chain.stack);
        if self.buckets[b] == c {
            self.buckets[b] = chain.next;
        } else {
            let mut p = self.buckets[b];
            while p != NIL {
                let next = self.chains[usize::from(p)].next;
                if next == c {
                    self.chains[usize::from(p)].next = chain.next;
                    break;
                }
                p = next;
            }
        }
        let chain = &mut self.chains[usize::from(c)];
        chain.site = None;
        chain.next = self.free_chain;
        self.free_chain = c;
        self.live_chains -= 1;
    }

    /// A new watched allocation of `bytes` at `site`, one call: with a
    /// chain if `stacks` (`stack` is its saved call chain, if it could be
    /// saved), since `since` (0: no age), on `node`, in `memcg` (a slot
    /// [`Tables::memcg_of`] gave), `accounted` or not.  `None` if the
    /// tables are full.
    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        site: SiteId,
        stacks: bool,
        stack: Option<StackHandle>,
        since: u64,
        node: Option<NodeId>,
        memcg: MemcgOf,
        accounted: bool,
        task: TaskId,
        bytes: u64,
    ) -> Option<WatchId> {
        let e = self.free_entry;
        if e == NIL {
            return None;
        }
        let link = if stacks {
            let c = self.chain(site, stack)?;
            let chain = &mut self.chains[usize::from(c)];
            chain.bytes += bytes;
            chain.calls += 1;
            chain.task = task;
            c
        } else {
            NIL
        };
        let entry = &mut self.entries[usize::from(e)];
        self.free_entry = entry.link;
        *entry = Entry {
            site: Some(site),
            link,
            bytes,
            calls: 1,
            since,
            node,
            memcg,
            accounted,
        };
        self.hold_memcg(memcg);
        self.live_entries += 1;
        Some(WatchId(e))
    }

    /// Adds `bytes` and `calls` (two's complement to subtract) to the
    /// watched allocation `w` and its chain; frees each when both its
    /// calls and its bytes reach zero.  Returns its call site.
    ///
    /// Not when the calls alone do: a partial free (`__free_pages()` of a
    /// page whose first page has another reference) reads the reference
    /// before its put and takes the tail pages' bytes off after it, so
    /// the other holder's put may free the first page, and its call, in
    /// between.  The entry must then live until those bytes come.
    fn adjust(&mut self, w: WatchId, bytes: u64, calls: u64) -> Option<SiteId> {
        let entry = self.entries.get_mut(w.index())?;
        let site = entry.site?;
        entry.bytes = entry.bytes.wrapping_add(bytes);
        entry.calls = entry.calls.wrapping_add(calls);
        let (link, done) = (entry.link, entry.calls == 0 && entry.bytes == 0);
        if link != NIL {
            let chain = &mut self.chains[usize::from(link)];
            chain.bytes = chain.bytes.wrapping_add(bytes);
            chain.calls = chain.calls.wrapping_add(calls);
            if chain.calls == 0 && chain.bytes == 0 {
                self.drop_chain(link);
            }
        }
        if done {
            #[cfg(allocprof_tags)]
            self.unkey(w);
            let memcg = self.entries[w.index()].memcg;
            self.release_memcg(memcg);
            let entry = &mut self.entries[w.index()];
            entry.site = None;
            entry.link = self.free_entry;
            self.free_entry = w.0;
            self.live_entries -= 1;
        }
        Some(site)
    }
}

impl Tables {
    /// Where an allocation made by the context `current` is kept (`m`):
    /// the slot that holds its cgroup, a new one if none does, or `Full`.
    /// Hooks only (preemption is off, see [`CurrentMemcg`]).
    fn memcg_of(&mut self, current: Option<&CurrentMemcg>) -> MemcgOf {
        let Some(current) = current else {
            return MemcgOf::Nothing;
        };
        let mut free = None;
        for (i, slot) in self.memcgs.iter().enumerate() {
            match &slot.held {
                Some(held) if current.is(held) => return MemcgOf::Slot(i as u8),
                None if free.is_none() => free = Some(i),
                _ => {}
            }
        }
        let Some(i) = free else {
            return MemcgOf::Full;
        };
        self.memcgs[i].held = Some(current.hold());
        MemcgOf::Slot(i as u8)
    }

    /// A live entry names `memcg`.
    fn hold_memcg(&mut self, memcg: MemcgOf) {
        if let MemcgOf::Slot(i) = memcg {
            self.memcgs[usize::from(i)].live += 1;
        }
    }

    /// An entry that named `memcg` was freed.  The cgroup stays held
    /// until a sweep ([`Watch::sweep_memcgs`]): this may be an interrupt.
    fn release_memcg(&mut self, memcg: MemcgOf) {
        if let MemcgOf::Slot(i) = memcg {
            self.memcgs[usize::from(i)].live -= 1;
        }
    }
}

#[cfg(allocprof_tags)]
impl Tables {
    /// Gives the live entry `w`, just inserted, its key.
    fn key(&mut self, w: WatchId, key: Key) {
        let b = key.bucket();
        self.keys[w.index()] = Some(key);
        self.key_next[w.index()] = self.key_buckets[b];
        self.key_buckets[b] = w.0;
        if let Key::Pages(_, order) = key {
            self.max_order = self.max_order.max(order);
        }
    }

    /// Takes entry `w`'s key out of its bucket.
    fn unkey(&mut self, w: WatchId) {
        let Some(key) = self.keys[w.index()].take() else {
            return;
        };
        let b = key.bucket();
        let next = self.key_next[w.index()];
        if self.key_buckets[b] == w.0 {
            self.key_buckets[b] = next;
            return;
        }
        let mut p = self.key_buckets[b];
        while p != NIL {
            let after = self.key_next[usize::from(p)];
            if after == w.0 {
                self.key_next[usize::from(p)] = next;
                return;
            }
            p = after;
        }
    }

    /// The live entry whose allocation is `key` or, for pages, holds its
    /// frame: looked up in the bucket of the frame rounded down to its
    /// order, then to each higher order a keyed allocation has (one
    /// allocation holds a frame, so the first that does is it).
    fn find(&self, key: Key) -> Option<WatchId> {
        let (pfn, low) = match key {
            Key::Pages(pfn, order) => (pfn.index(), order),
            Key::Object(_) => return self.find_in(key.bucket(), key),
        };
        (low..=self.max_order.max(low)).find_map(|order| {
            let start = Pfn::new(pfn & !((1usize << order) - 1));
            self.find_in(Key::Pages(start, 0).bucket(), key)
        })
    }

    /// The live entry in bucket `b` that holds `key`.
    fn find_in(&self, b: usize, key: Key) -> Option<WatchId> {
        let mut e = self.key_buckets[b];
        while e != NIL {
            if self.keys[usize::from(e)].is_some_and(|k| k.holds(key)) {
                return Some(WatchId(e));
            }
            e = self.key_next[usize::from(e)];
        }
        None
    }

    /// Migration swapped the references of the `2^order` pages at `a` and
    /// at `b`: what was watched at one is found at the other, on its node.
    /// A piece of a split allocation that moves becomes an entry of its
    /// own (the rest stays where it is), or leaves the watch if the table
    /// is full (counted as not tracked).
    fn swap(&mut self, a: Pfn, b: Pfn, order: u32, full: &AtomicU64) {
        let wa = self.find(Key::Pages(a, order));
        let wb = self.find(Key::Pages(b, order));
        for (w, from, to) in [(wa, a, b), (wb, b, a)] {
            let Some(w) = w else { continue };
            let Some(w) = self.detach(w, from, order, full) else {
                continue;
            };
            self.unkey(w);
            self.key(w, Key::Pages(to, order));
            let entry = &mut self.entries[w.index()];
            if entry.node.is_some() {
                entry.node = Some(to.node());
            }
        }
    }

    /// The entry for the `2^order` pages at `pfn` of entry `w`: `w` itself
    /// if they are all that is left of it, else a new entry that takes
    /// them (one call, their bytes) off `w`, in the same chain; `None` if
    /// there is no room: the pages then leave the watch (as not tracked),
    /// since their free would not find them in `w`.
    fn detach(&mut self, w: WatchId, pfn: Pfn, order: u32, full: &AtomicU64) -> Option<WatchId> {
        let old = self.entries[w.index()];
        if self.keys[w.index()] == Some(Key::Pages(pfn, order)) || old.calls <= 1 {
            return Some(w);
        }
        // `w` keeps a call either way, so it and its chain stay live.
        let bytes = crate::page::bytes(order);
        let e = self.free_entry;
        if e == NIL {
            full.fetch_add(1, Ordering::Relaxed);
            self.adjust(w, bytes.wrapping_neg(), u64::MAX);
            return None;
        }
        // The chain's figures do not change.
        let entry = &mut self.entries[w.index()];
        entry.bytes = entry.bytes.wrapping_sub(bytes);
        entry.calls -= 1;
        self.free_entry = self.entries[usize::from(e)].link;
        self.entries[usize::from(e)] = Entry {
            bytes,
            calls: 1,
            ..old
        };
        self.hold_memcg(old.memcg);
        self.live_entries += 1;
        Some(WatchId(e))
    }
}

/// What the tables hold and what they could not.
#[derive(Clone, Copy, Default)]
pub(crate) struct Stats {
    pub(crate) entries: usize,
    pub(crate) chains: usize,
    pub(crate) bytes: usize,
    pub(crate) full: u64,
    pub(crate) nested: u64,
}

impl Stats {
    /// The report's statistics line.
    pub(crate) fn write(&self, out: &mut Text) {
        use core::fmt::Write;
        let _ = writeln!(
            out,
            "# tracked: {} allocations in {} chains; table: {}/{} allocations, {}/{} chains, {} bytes; not tracked: {} (table full), {} (nested)",
            self.entries, self.chains, self.entries, WATCH_ENTRIES, self.chains, CHAINS, self.bytes,
            self.full, self.nested
        );
    }
}

/// The watched allocations of one profiler.
#[pin_data]
pub(crate) struct Watch {
    /// Allocated when a call site first gets `s`, `a` or `n`; taken by hooks in
    /// any context.
    #[pin]
    tables: IrqRawSpinLock<Option<KBox<Tables>>>,
    /// Per CPU: hooks inside [`Watch::track`].  Saving a chain may
    /// allocate a stack-depot pool; that allocation is counted as usual,
    /// never watched (which could recurse).
    busy: PerCpuArray<u64>,
    /// Allocations not watched because the tables were full.
    full: AtomicU64,
    /// Allocations not watched because they were made inside `track`.
    nested: AtomicU64,
    /// Allocations watched without their memory cgroup: the memcg table
    /// was full.
    memcg_full: AtomicU64,
    /// The module, whose frames a saved chain leaves out.
    module: &'static ThisModule,
}

impl Watch {
    /// No tables yet; `module` is allocprof's.
    pub(crate) fn new(module: &'static ThisModule) -> Result<impl PinInit<Self>> {
        let busy = PerCpuArray::new(1)?;
        Ok(pin_init!(Watch {
            tables <- crate::new_irq_raw_spinlock!(None, "allocprof_watch"),
            busy,
            full: AtomicU64::new(0),
            nested: AtomicU64::new(0),
            memcg_full: AtomicU64::new(0),
            module,
        }))
    }

    /// Forgets every watched allocation, if there are tables: when
    /// profiling starts again after it was off, the kernel having cleared
    /// the references by which their frees would have come here
    /// (`Profiler::restart`).  Fresh tables take the old ones' place; the
    /// memory cgroups the old ones held are released with them.  Process
    /// context; on failure (no memory for the new tables) nothing changed.
    pub(crate) fn clear(&self) -> Result {
        if self.tables.lock().is_none() {
            return Ok(());
        }
        let fresh = Tables::new()?;
        let old = self.tables.lock().replace(fresh);
        // Dropped here, out of the lock: releasing a cgroup is for process
        // context.
        drop(old);
        Ok(())
    }

    /// Makes the tables and the stack depot ready; process context.
    pub(crate) fn prepare(&self) -> Result {
        if self.tables.lock().is_some() {
            return Ok(());
        }
        StackHandle::init_depot()?;
        let tables = Tables::new()?;
        let mut slot = self.tables.lock();
        if slot.is_none() {
            *slot = Some(tables);
        }
        Ok(())
    }

    /// A new allocation of `bytes` at `site`, with `flags`, of pages on
    /// `node` (`None`: an object): the id to store for it, if it is
    /// watched (`s`, `a`, `m`, or `n` and pages) and could be; its chain is
    /// kept as `gfp`, the allocation's flags, allows (`Trace::save`), and
    /// they say whether it asked to be charged to its memory cgroup.
    /// Hooks only (preemption is off).
    pub(crate) fn track(
        &self,
        site: SiteId,
        flags: Flags,
        bytes: u64,
        node: Option<NodeId>,
        gfp: Gfp,
    ) -> Option<WatchId> {
        // The caller read the flags from the tag, which a control write may
        // have changed back to the default since the hook read it.
        let node = node.filter(|_| flags.contains(Flags::NODES));
        let memcg = flags.contains(Flags::MEMCG);
        if !flags.contains(Flags::STACKS)
            && !flags.contains(Flags::AGES)
            && node.is_none()
            && !memcg
        {
            return None;
        }
        let busy = self.busy.as_percpu_ptr();
        // Hooks run with preemption off: the CPU stays the same until the
        // decrement below, and an interrupt in between leaves it as it was.
        // SAFETY: `busy` is this profiler's live per-CPU `u64`.
        if unsafe { this_cpu_read(busy) } != 0 {
            self.nested.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: As above.
        unsafe { this_cpu_add(busy, 1) };
        let stack = if flags.contains(Flags::STACKS) {
            Trace::capture(self.module).save(gfp)
        } else {
            None
        };
        let since = if flags.contains(Flags::AGES) {
            now_ns().max(1)
        } else {
            0
        };
        let task = TaskId::current();
        // SAFETY: Hooks run with preemption off, until after the value is
        // dropped at the end of this function.
        let current = memcg.then(|| unsafe { CurrentMemcg::get() });
        // Charged, as `__memcg_kmem_charge_page()` and
        // `memcg_slab_post_alloc_hook()` charge: asked for, and a memory
        // cgroup other than the root to charge.
        let accounted = gfp.accounted().unwrap_or(false)
            && current
                .as_ref()
                .and_then(Option::as_ref)
                .is_some_and(|c| !c.is_root());
        let w = self.tables.lock().as_mut().and_then(|t| {
            let memcg = current
                .as_ref()
                .map_or(MemcgOf::Unkept, |c| t.memcg_of(c.as_ref()));
            let w = t.insert(
                site,
                flags.contains(Flags::STACKS),
                stack,
                since,
                node,
                memcg,
                accounted,
                task,
                bytes,
            );
            if w.is_some() && memcg == MemcgOf::Full {
                self.memcg_full.fetch_add(1, Ordering::Relaxed);
            }
            w
        });
        if w.is_none() {
            self.full.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: As above; adding the two's complement subtracts.
        unsafe { this_cpu_add(busy, u64::MAX) };
        w
    }

    /// Adds `bytes` and `calls` (two's complement to subtract) to the
    /// watched allocation `w`; returns its call site, whose counters take
    /// the same change.
    pub(crate) fn adjust(&self, w: WatchId, bytes: u64, calls: u64) -> Option<SiteId> {
        self.tables.lock().as_mut()?.adjust(w, bytes, calls)
    }

    /// 7.3: [`Watch::track`] for the allocation at `key`, found again by
    /// it ([`Watch::adjust_at`]).
    #[cfg(allocprof_tags)]
    pub(crate) fn track_at(
        &self,
        key: Key,
        site: SiteId,
        flags: Flags,
        bytes: u64,
        node: Option<NodeId>,
        gfp: Gfp,
    ) {
        let Some(w) = self.track(site, flags, bytes, node, gfp) else {
            return;
        };
        // Nothing frees the allocation before its hook returns, so nothing
        // looks for its key before this.
        if let Some(t) = self.tables.lock().as_mut() {
            t.key(w, key);
        }
    }

    /// 7.3: [`Watch::adjust`] for the watched allocation at `key` (for
    /// pages, the one that holds its frame), if there is one.  Returns
    /// whether there was.
    #[cfg(allocprof_tags)]
    pub(crate) fn adjust_at(&self, key: Key, bytes: u64, calls: u64) -> bool {
        let mut tables = self.tables.lock();
        let Some(t) = tables.as_mut() else {
            return false;
        };
        t.find(key)
            .and_then(|w| t.adjust(w, bytes, calls))
            .is_some()
    }

    /// 7.3: migration swapped the references of the `2^order` pages at `a`
    /// and `b` (see `Tables::swap`).
    #[cfg(allocprof_tags)]
    pub(crate) fn swap(&self, a: Pfn, b: Pfn, order: u32) {
        if let Some(t) = self.tables.lock().as_mut() {
            t.swap(a, b, order, &self.full);
        }
    }

    /// The watched pages `w` were migrated to `node`: kept there from now
    /// on, if their node is kept.
    pub(crate) fn moved(&self, w: WatchId, node: NodeId) {
        if let Some(t) = self.tables.lock().as_mut() {
            if let Some(e) = t.entries.get_mut(w.index()) {
                if e.site.is_some() && e.node.is_some() {
                    e.node = Some(node);
                }
            }
        }
    }

    /// What the tables hold.
    pub(crate) fn stats(&self) -> Stats {
        let (entries, chains, bytes) = self
            .tables
            .lock()
            .as_ref()
            .map_or((0, 0, 0), |t| (t.live_entries, t.live_chains, t.size()));
        Stats {
            entries,
            chains,
            bytes,
            full: self.full.load(Ordering::Relaxed),
            nested: self.nested.load(Ordering::Relaxed),
        }
    }

    /// The live chains, biggest first.
    pub(crate) fn chains(&self) -> Result<KVVec<ChainRow>> {
        let mut rows = KVVec::with_capacity(CHAINS, GFP_KERNEL)?;
        if let Some(t) = self.tables.lock().as_ref() {
            for c in t.chains.iter() {
                if let Some(site) = c.site {
                    // Room for every chain was reserved above.
                    let _ = rows.push(
                        ChainRow {
                            site,
                            stack: c.stack,
                            bytes: c.bytes,
                            calls: c.calls,
                            task: c.task,
                        },
                        GFP_ATOMIC,
                    );
                }
            }
        }
        heap_sort(&mut rows, |a, b| (b.bytes, a.site) < (a.bytes, b.site));
        Ok(rows)
    }

    /// Releases the memory cgroups no live allocation names any more, so
    /// that their slots take others.  Process context (see `sys::memcg`).
    pub(crate) fn sweep_memcgs(&self) {
        let mut released: [Option<MemcgRef>; MEMCGS] = [const { None }; MEMCGS];
        if let Some(t) = self.tables.lock().as_mut() {
            for (slot, out) in t.memcgs.iter_mut().zip(released.iter_mut()) {
                if slot.live == 0 {
                    *out = slot.held.take();
                }
            }
        }
        // The references are put here, after the lock.
        drop(released);
    }

    /// The live allocations with `m`, by call site (in id order) and
    /// memory cgroup, and the cgroups their rows name (by slot), held
    /// until the caller drops them; allocations watched without their
    /// cgroup (the table was full).  Process context.
    #[allow(clippy::type_complexity)]
    pub(crate) fn memcgs(&self) -> Result<(KVVec<MemcgRow>, KVVec<Option<MemcgRef>>, u64)> {
        self.sweep_memcgs();
        let mut names = KVVec::with_capacity(MEMCGS, GFP_KERNEL)?;
        let rows = self.rows_then(
            |e| {
                Some(MemcgRow {
                    site: e.site?,
                    memcg: e.memcg.code()?,
                    bytes: e.bytes,
                    calls: e.calls,
                    accounted: if e.accounted { e.bytes } else { 0 },
                })
            },
            |t| {
                for slot in t.memcgs.iter() {
                    // Room for every slot was reserved above.
                    let _ = names.push(slot.held.clone(), GFP_ATOMIC);
                }
            },
        )?;
        Ok((rows, names, self.memcg_full.load(Ordering::Relaxed)))
    }

    /// The live watched bytes of `site` that asked to be charged to a
    /// memory cgroup (7.3; 6.12's hooks are not handed the allocation's
    /// flags).  A scan of the table, for the few call sites with `m`.
    #[cfg(allocprof_tags)]
    pub(crate) fn accounted(&self, site: SiteId) -> u64 {
        let tables = self.tables.lock();
        tables.as_ref().map_or(0, |t| {
            t.entries
                .iter()
                .filter(|e| e.site == Some(site) && e.accounted)
                .map(|e| e.bytes)
                .sum()
        })
    }

    /// The live allocations with an age, by call site (in id order) and
    /// age bucket.
    pub(crate) fn ages(&self) -> Result<KVVec<AgeRow>> {
        let now = now_ns();
        self.rows(|e| {
            Some(AgeRow {
                site: e.site.filter(|_| e.since != 0)?,
                bucket: age_bucket(now.saturating_sub(e.since)),
                bytes: e.bytes,
                calls: e.calls,
            })
        })
    }

    /// The live pages with a node, by call site (in id order) and node.
    pub(crate) fn nodes(&self) -> Result<KVVec<NodeRow>> {
        self.rows(|e| {
            Some(NodeRow {
                site: e.site?,
                node: e.node?,
                bytes: e.bytes,
                calls: e.calls,
            })
        })
    }

    /// The live pages of `site` on the lowest node above `after` (from
    /// the lowest if `None`) that has any: the node, their bytes and
    /// calls.  A scan of the table, for the few call sites with `n`.
    pub(crate) fn next_node(&self, site: SiteId, after: Option<NodeId>) -> Option<NodeRow> {
        let tables = self.tables.lock();
        let mut next: Option<NodeRow> = None;
        for e in tables.as_ref()?.entries.iter() {
            let (Some(s), Some(node)) = (e.site, e.node) else {
                continue;
            };
            if s != site || after.is_some_and(|a| node <= a) {
                continue;
            }
            match next.as_mut() {
                Some(n) if n.node == node => {
                    n.bytes += e.bytes;
                    n.calls += e.calls;
                }
                Some(n) if n.node < node => {}
                _ => {
                    next = Some(NodeRow {
                        site,
                        node,
                        bytes: e.bytes,
                        calls: e.calls,
                    })
                }
            }
        }
        next
    }

    /// The rows `row` makes of the live entries, in the order of their
    /// keys, those of one key merged into one.
    fn rows<R: Row>(&self, row: impl Fn(&Entry) -> Option<R>) -> Result<KVVec<R>> {
        self.rows_then(row, |_| {})
    }

    /// [`Watch::rows`], and `then` on the tables as the rows were made
    /// (under the same lock).
    fn rows_then<R: Row>(
        &self,
        row: impl Fn(&Entry) -> Option<R>,
        then: impl FnOnce(&Tables),
    ) -> Result<KVVec<R>> {
        let mut rows = KVVec::with_capacity(WATCH_ENTRIES, GFP_KERNEL)?;
        if let Some(t) = self.tables.lock().as_ref() {
            for r in t.entries.iter().filter_map(row) {
                // Room for every entry was reserved above.
                let _ = rows.push(r, GFP_ATOMIC);
            }
            then(t);
        }
        heap_sort(&mut rows, |a, b| a.key() < b.key());
        let mut merged: KVVec<R> = KVVec::with_capacity(rows.len(), GFP_KERNEL)?;
        for r in rows.iter() {
            match merged.last_mut() {
                Some(m) if m.key() == r.key() => m.add(r),
                // Room for every row was reserved above.
                _ => {
                    let _ = merged.push(*r, GFP_KERNEL);
                }
            }
        }
        Ok(merged)
    }
}

/// A report row of live watched allocations: the figures of those of one
/// key.
trait Row: Copy {
    /// The call site and what the row splits its figures by.
    fn key(&self) -> (SiteId, u32);
    /// Adds `other`'s figures, of the same key.
    fn add(&mut self, other: &Self);
}

impl Row for AgeRow {
    fn key(&self) -> (SiteId, u32) {
        (self.site, self.bucket)
    }

    fn add(&mut self, other: &Self) {
        self.bytes += other.bytes;
        self.calls += other.calls;
    }
}

impl Row for MemcgRow {
    fn key(&self) -> (SiteId, u32) {
        (self.site, self.memcg)
    }

    fn add(&mut self, other: &Self) {
        self.bytes += other.bytes;
        self.calls += other.calls;
        self.accounted += other.accounted;
    }
}

impl Row for NodeRow {
    fn key(&self) -> (SiteId, u32) {
        (self.site, u32::from(self.node.get()))
    }

    fn add(&mut self, other: &Self) {
        self.bytes += other.bytes;
        self.calls += other.calls;
    }
}
