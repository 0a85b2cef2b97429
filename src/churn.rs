// SPDX-License-Identifier: GPL-2.0

//! Churn by call site: the `c` flag.  For a call site with `c`, its
//! allocations and frees since the flag was set, in calls and bytes, and
//! the time since then: the `churn` report (`reports.rs`) and, in
//! `/proc/allocinfo` 2.0, the keys `allocated:` and `freed:` (`procfs.rs`).
//!
//! Only the allocations are counted: the hooks of a call site with `c`
//! take the cold path of any call site with flags (its tag's word is not a
//! plain id), which adds the allocation to the site's entry here, two
//! atomic adds found by the entry's number in the word (`ids::churn_slot`).
//! The frees are what the allocations since the start do not explain of
//! the change in the site's live figures (`/proc/allocinfo`'s):
//!
//! ```text
//! frees since = allocations since - (live now - live at the start)
//! ```
//!
//! in calls and in bytes, so no free path changes.  This counts every
//! free of the site's memory after the start, of allocations made before
//! it too, and a partial free of pages (bytes, no call).  A split page
//! allocation's new pieces are calls of the site's live figure
//! (`split_page()`, a folio's split, `alloc_pages_exact()`): each piece
//! counts as an allocation here, so that a piece freed is a free.
//!
//! The start is taken in two steps by the control file: the word gets `c`
//! (the entry is *pending*), every hook that read the word before has
//! returned (`synchronize_rcu()`: the hooks run with preemption off), then
//! the live figures and the entry's counts are read as the start.  What
//! the hooks count between the two steps is before the start, on both
//! sides of the sum.  So the figures are exact whenever the call site has
//! no allocation or free under way while its start is read, and while the
//! report reads it (an operation under way on another CPU may be seen on
//! one side of the sum only, as a reader of `/proc/allocinfo` may see a
//! free without its allocation).
//!
//! The table has [`CHURN_SITES`] entries (the word has 8 bits for an
//! entry's number); more call sites with `c` are refused (`ENOSPC`).

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{error::Result, prelude::*};

use crate::counters::Totals;
use crate::ids::{IdSet, SiteId, CHURN_SLOTS};
use crate::sys::{sync::IrqRawSpinLock, task::now_ns};
use crate::watch::heap_sort;

/// The most call sites with `c` at once.
pub(crate) const CHURN_SITES: usize = CHURN_SLOTS;

/// What the hooks add to, without a lock: an entry's allocations (calls)
/// and their bytes, since the entry was taken.
struct Counts {
    calls: AtomicU64,
    bytes: AtomicU64,
}

/// The start of a call site's counting: its entry's counts and its live
/// figures then, and when.
#[derive(Clone, Copy)]
struct Start {
    calls: u64,
    bytes: u64,
    live: Totals,
    at_ns: u64,
}

/// An entry in use: its call site, and its start once it is read
/// (`None`: pending).
#[derive(Clone, Copy)]
struct Slot {
    site: SiteId,
    start: Option<Start>,
}

/// A line of the churn report: a call site's allocations and frees since
/// its start.  Frees are signed: exact figures are never negative, but a
/// reading beside an allocation under way may be one off (see the
/// module's doc).
#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub(crate) site: SiteId,
    pub(crate) allocs: u64,
    pub(crate) frees: i64,
    pub(crate) alloc_bytes: u64,
    pub(crate) free_bytes: i64,
    /// Nanoseconds since the start.
    pub(crate) ns: u64,
}

/// The entries in use.
///
/// # Invariants
///
/// No two entries name the same call site.
struct Table {
    slots: KVec<Option<Slot>>,
}

/// The call sites with `c` of one profiler.
#[pin_data]
pub(crate) struct Churn {
    /// Each entry's counts, by entry number.
    counts: KVec<Counts>,
    /// The call sites with `c`, for 6.12's split hook, which is handed a
    /// page's id, not its tag's word (7.3's has the word: kept, not read).
    sites: IdSet,
    /// The entries, changed by the control file and by a hook that settles
    /// a Rust line (`Profiler::settle`); an irqsave raw spinlock, as the
    /// fault table's.
    #[pin]
    table: IrqRawSpinLock<Table>,
}

impl Churn {
    /// No call site with `c`; room for [`CHURN_SITES`].
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let slots = KVec::from_elem(None, CHURN_SITES, GFP_KERNEL)?;
        let mut counts = KVec::with_capacity(CHURN_SITES, GFP_KERNEL)?;
        for _ in 0..CHURN_SITES {
            counts.push(
                Counts {
                    calls: AtomicU64::new(0),
                    bytes: AtomicU64::new(0),
                },
                GFP_KERNEL,
            )?;
        }
        let sites = IdSet::new()?;
        Ok(pin_init!(Churn {
            counts,
            sites,
            // INVARIANT: No entry.
            table <- crate::new_irq_raw_spinlock!(Table { slots }, "allocprof_churn"),
        }))
    }

    /// Call site `site` gets `c`, or gets it again: its entry (the one it
    /// has, or a free one) is pending, to start at the next
    /// [`Churn::start_pending`].  Returns the entry's number, for the tag's
    /// word; `ENOSPC` if [`CHURN_SITES`] call sites have `c` already (the
    /// control file counts before it changes anything).
    pub(crate) fn take(&self, site: SiteId) -> Result<usize> {
        let mut t = self.table.lock();
        let at = match t
            .slots
            .iter()
            .position(|s| s.is_some_and(|s| s.site == site))
        {
            Some(i) => i,
            None => t.slots.iter().position(Option::is_none).ok_or(ENOSPC)?,
        };
        // INVARIANT: `at` is `site`'s entry, or a free one where `site` has
        // none.
        t.slots[at] = Some(Slot { site, start: None });
        self.sites.set(site);
        Ok(at)
    }

    /// Starts the pending entries: their counts and their call sites' live
    /// figures (`live`) now are where they count from.  The word of each
    /// has `c`, and no hook that read a word without it is still running.
    pub(crate) fn start_pending(&self, live: impl Fn(SiteId) -> Totals) {
        let mut t = self.table.lock();
        for (i, slot) in t.slots.iter_mut().enumerate() {
            let Some(slot) = slot.as_mut().filter(|s| s.start.is_none()) else {
                continue;
            };
            let c = &self.counts[i];
            slot.start = Some(Start {
                calls: c.calls.load(Ordering::Relaxed),
                bytes: c.bytes.load(Ordering::Relaxed),
                live: live(slot.site),
                at_ns: now_ns(),
            });
        }
    }

    /// Starts every entry again from now, as if each call site had just
    /// got `c`: when profiling starts again after it was off and its
    /// counters were zeroed (`Profiler::restart`), with no hook counting.
    pub(crate) fn restart(&self, live: impl Fn(SiteId) -> Totals) {
        {
            let mut t = self.table.lock();
            for slot in t.slots.iter_mut().flatten() {
                slot.start = None;
            }
        }
        self.start_pending(live);
    }

    /// Whether some entry is pending.
    pub(crate) fn pending(&self) -> bool {
        let t = self.table.lock();
        t.slots.iter().flatten().any(|s| s.start.is_none())
    }

    /// Call site `site` loses `c` (its word has lost it already).
    pub(crate) fn remove(&self, site: SiteId) {
        let mut t = self.table.lock();
        if let Some(s) = t
            .slots
            .iter_mut()
            .find(|s| s.is_some_and(|s| s.site == site))
        {
            *s = None;
            self.sites.set_range(site, 1, false);
        }
    }

    /// An allocation of `bytes` at the call site of entry `slot`.  Hooks.
    #[inline]
    pub(crate) fn count(&self, slot: usize, bytes: u64) {
        if let Some(c) = self.counts.get(slot) {
            c.calls.fetch_add(1, Ordering::Relaxed);
            c.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// A split made `calls` more pieces of an allocation at the call site
    /// of entry `slot`: as many allocations, of no bytes.  Hooks.
    #[inline]
    pub(crate) fn pieces(&self, slot: usize, calls: u64) {
        if let Some(c) = self.counts.get(slot) {
            c.calls.fetch_add(calls, Ordering::Relaxed);
        }
    }

    /// 6.12: a split made `calls` more pieces of an allocation of call site
    /// `site`, which may have `c`.  The split hook's one test more.
    #[cfg(not(allocprof_tags))]
    #[inline(always)]
    pub(crate) fn split(&self, site: SiteId, calls: u64) {
        if self.sites.get(site) {
            self.split_cold(site, calls);
        }
    }

    #[cfg(not(allocprof_tags))]
    #[cold]
    #[inline(never)]
    fn split_cold(&self, site: SiteId, calls: u64) {
        let at = {
            let t = self.table.lock();
            t.slots
                .iter()
                .position(|s| s.is_some_and(|s| s.site == site))
        };
        if let Some(at) = at {
            self.pieces(at, calls);
        }
    }

    /// The row of entry `i` with `slot`, its call site's live figures now
    /// being `live`; none while it is pending.
    fn row(&self, i: usize, slot: Slot, live: Totals, now: u64) -> Option<Row> {
        let start = slot.start?;
        let c = &self.counts[i];
        let allocs = c.calls.load(Ordering::Relaxed).wrapping_sub(start.calls);
        let alloc_bytes = c.bytes.load(Ordering::Relaxed).wrapping_sub(start.bytes);
        let more_calls = live.calls.wrapping_sub(start.live.calls) as i64;
        let more_bytes = live.bytes.wrapping_sub(start.live.bytes);
        Some(Row {
            site: slot.site,
            allocs,
            frees: (allocs as i64).wrapping_sub(more_calls),
            alloc_bytes,
            free_bytes: (alloc_bytes as i64).wrapping_sub(more_bytes),
            ns: now.saturating_sub(start.at_ns),
        })
    }

    /// The churn of call site `site`, if it has `c` and its start is read;
    /// `live` reads its live figures.
    pub(crate) fn site_row(&self, site: SiteId, live: impl Fn(SiteId) -> Totals) -> Option<Row> {
        let (i, slot) = {
            let t = self.table.lock();
            t.slots
                .iter()
                .enumerate()
                .find_map(|(i, s)| s.filter(|s| s.site == site).map(|s| (i, s)))?
        };
        self.row(i, slot, live(site), now_ns())
    }

    /// The call sites with `c`, by id; `live` reads their live figures.
    pub(crate) fn rows(&self, live: impl Fn(SiteId) -> Totals) -> Result<KVec<Row>> {
        let mut slots = KVec::with_capacity(CHURN_SITES, GFP_KERNEL)?;
        {
            let t = self.table.lock();
            for (i, s) in t.slots.iter().enumerate() {
                if let Some(s) = s {
                    // Within the capacity reserved above: never allocates.
                    slots.push((i, *s), GFP_NOWAIT)?;
                }
            }
        }
        let now = now_ns();
        let mut rows = KVec::with_capacity(slots.len(), GFP_KERNEL)?;
        for &(i, slot) in slots.iter() {
            if let Some(row) = self.row(i, slot, live(slot.site), now) {
                rows.push(row, GFP_KERNEL)?;
            }
        }
        heap_sort(&mut rows, |a, b| a.site < b.site);
        Ok(rows)
    }
}
