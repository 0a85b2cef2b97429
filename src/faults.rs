// SPDX-License-Identifier: GPL-2.0

//! Fault injection by call site: the allocations of call sites with the
//! `f` flag fail as their knobs say, with the kernel's fault-injection
//! semantics (`Documentation/fault-injection/fault-injection.rst`,
//! `should_fail_ex()`): `probability` in percent, every `interval`-th
//! allocation, at most `times` failures (-1: no limit), the first `space`
//! bytes spared, and a report in the kernel log for `verbose` 1, with the
//! call chain for 2.  Each call site has its own knobs and counts.
//!
//! The kernel asks [`Faults::should_fail`] before it allocates (the slab
//! allocator: once it has the object, which it frees if it fails), for a
//! call site whose tag's word has `f` (`sys::backend::FAIL_BIT`), only while
//! some call site has it (`Registration::fail`).  The table is shared with
//! the hooks, so an irqsave raw spinlock guards it, as the watch tables.

use kernel::{error::Result, prelude::*};

use crate::ids::SiteId;
use crate::sys::{
    backend::{FailKind, Tag},
    printk::dump_stack,
    sync::IrqRawSpinLock,
    task::{now_ns, random_below},
};
use crate::text::BStr;
use crate::watch::heap_sort;

/// The most call sites with `f` at once.
pub(crate) const FAULT_SITES: usize = 256;

/// A call site's knobs, as the kernel's fault attributes name them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Knobs {
    /// Percent of the allocations asked that fail, 0 to 100.
    pub(crate) probability: u32,
    /// Only every `interval`-th allocation may fail (1: each).
    pub(crate) interval: u32,
    /// Failures left; -1 for no limit.
    pub(crate) times: i32,
    /// Bytes allocated before the first failure.
    pub(crate) space: u32,
    /// 0: no report, 1: a report, 2: with the call chain.
    pub(crate) verbose: u32,
}

impl Knobs {
    /// Every allocation fails, reported with its call chain.
    pub(crate) const DEFAULT: Knobs = Knobs {
        probability: 100,
        interval: 1,
        times: -1,
        space: 0,
        verbose: 2,
    };

    /// The knob names, as a control command takes them (`name=value`).
    pub(crate) const KNOBS: [&'static str; 5] =
        ["probability", "interval", "times", "space", "verbose"];

    /// [`Knobs::KNOBS`] for a message: `probability, interval, ...`.
    pub(crate) const NAMES: KnobNames = KnobNames;

    /// Sets knob `name` to `value` (text) and returns the knob's place in
    /// [`Knobs::KNOBS`]; `EINVAL` for an unknown name or a value out of the
    /// knob's range.
    pub(crate) fn set(&mut self, name: &[u8], value: &[u8]) -> Result<usize> {
        let Some(index) = Self::KNOBS.iter().position(|k| k.as_bytes() == name) else {
            pr_err!("control: unknown knob '{}' ({})\n", BStr(name), Self::NAMES);
            return Err(EINVAL);
        };
        let text = core::str::from_utf8(value).map_err(|_| EINVAL)?;
        let bad = || {
            pr_err!(
                "control: bad value '{}' for '{}'\n",
                BStr(value),
                BStr(name)
            );
            EINVAL
        };
        let number = |min: i64, max: i64| {
            text.parse::<i64>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(bad)
        };
        match index {
            0 => self.probability = number(0, 100)? as u32,
            1 => self.interval = number(1, u32::MAX.into())? as u32,
            2 => self.times = number(-1, i32::MAX.into())? as i32,
            3 => self.space = number(0, i32::MAX.into())? as u32,
            _ => self.verbose = number(0, 2)? as u32,
        }
        Ok(index)
    }
}

/// The knob names, comma-separated, as messages list them.
pub(crate) struct KnobNames;

impl core::fmt::Display for KnobNames {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, name) in Knobs::KNOBS.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

crate::printable!(KnobNames);

/// One call site's knobs and what they have left; a line of the `faults`
/// report.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) site: SiteId,
    pub(crate) knobs: Knobs,
    /// Allocations asked so far (the interval's count).
    pub(crate) asked: u64,
    /// Failures so far.
    pub(crate) failed: u64,
    /// What is left of `times` and `space`.
    pub(crate) times: i32,
    pub(crate) space: u32,
}

impl Entry {
    fn new(site: SiteId, knobs: Knobs) -> Self {
        Self {
            site,
            knobs,
            asked: 0,
            failed: 0,
            times: knobs.times,
            space: knobs.space,
        }
    }

    /// `should_fail_ex()` for one allocation of `size` bytes; `roll` is a
    /// random number below 100, drawn for it.
    fn decide(&mut self, size: usize, roll: u32) -> bool {
        self.asked += 1;
        if self.knobs.probability == 0 || self.times == 0 {
            return false;
        }
        let size = u32::try_from(size).unwrap_or(u32::MAX);
        if self.space > size {
            self.space -= size;
            return false;
        }
        if self.knobs.interval > 1 && self.asked % u64::from(self.knobs.interval) != 0 {
            return false;
        }
        if self.knobs.probability <= roll {
            return false;
        }
        if self.times > 0 {
            self.times -= 1;
        }
        self.failed += 1;
        true
    }
}

/// Reports in a window of [`RATELIMIT_MS`], over all call sites: the
/// kernel's `DEFAULT_RATELIMIT_BURST`.  The kernel's own fault injection
/// has its report limit off unless `verbose_ratelimit_interval_ms` is set;
/// allocprof's is always on and not a knob, so that `f` on a busy call
/// site cannot flood the log.
pub(crate) const RATELIMIT_BURST: u32 = 10;
/// The window, `DEFAULT_RATELIMIT_INTERVAL`: 5 seconds.
pub(crate) const RATELIMIT_MS: u64 = 5_000;

/// What the hooks share: the entries and the report's rate limit.
///
/// # Invariants
///
/// `used` is the number of `Some` in `entries`, and no two name the same
/// call site.
struct Table {
    entries: KVec<Option<Entry>>,
    used: usize,
    window_start: u64,
    reports: u32,
}

/// The call sites with `f` of one profiler.
#[pin_data]
pub(crate) struct Faults {
    #[pin]
    table: IrqRawSpinLock<Table>,
}

impl Faults {
    /// No call site with `f`; room for [`FAULT_SITES`].
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let entries = KVec::from_elem(None, FAULT_SITES, GFP_KERNEL)?;
        Ok(pin_init!(Faults {
            // INVARIANT: No entry.
            table <- crate::new_irq_raw_spinlock!(
                Table {
                    entries,
                    used: 0,
                    window_start: 0,
                    reports: 0,
                },
                "allocprof_faults"
            ),
        }))
    }

    /// Whether any call site has `f`.
    pub(crate) fn in_use(&self) -> bool {
        self.table.lock().used != 0
    }

    /// Call site `site` gets `f` with `knobs`, its counts from zero.
    /// `ENOSPC` if [`FAULT_SITES`] call sites have it already (the control
    /// file counts before it changes anything, so only a module's load
    /// sees that).
    pub(crate) fn set(&self, site: SiteId, knobs: Knobs) -> Result {
        let mut t = self.table.lock();
        if let Some(e) = t.entry(site) {
            *e = Entry::new(site, knobs);
            return Ok(());
        }
        let free = t.entries.iter_mut().find(|e| e.is_none()).ok_or(ENOSPC)?;
        // INVARIANT: `site` had no entry; one more is used.
        *free = Some(Entry::new(site, knobs));
        t.used += 1;
        Ok(())
    }

    /// Call site `site` loses `f`.
    pub(crate) fn remove(&self, site: SiteId) {
        let mut t = self.table.lock();
        if let Some(e) = t
            .entries
            .iter_mut()
            .find(|e| e.is_some_and(|e| e.site == site))
        {
            // INVARIANT: One entry fewer is used.
            *e = None;
            t.used -= 1;
        }
    }

    /// Whether an allocation of `size` bytes by `kind` at `tag`, call site
    /// `site` with `f`, is to fail; reports it if so.  Hooks only.
    pub(crate) fn should_fail(
        &self,
        site: SiteId,
        tag: Tag<'_>,
        kind: FailKind,
        size: usize,
    ) -> bool {
        // Drawn before the raw lock: `get_random_u32()` takes a local lock,
        // a `spinlock_t` on PREEMPT_RT, which must not nest in a raw one.
        let roll = random_below(100);
        let (entry, report) = {
            let mut t = self.table.lock();
            let Some(e) = t.entry(site) else {
                return false;
            };
            // The report shows the knobs as they were, as `fail_dump()`.
            let entry = *e;
            if !e.decide(size, roll) {
                return false;
            }
            let report = entry.knobs.verbose > 0 && t.may_report();
            (entry, report)
        };
        if report {
            report_failure(&entry, tag, kind, size);
        }
        true
    }

    /// The call sites with `f`, by id.
    pub(crate) fn rows(&self) -> Result<KVec<Entry>> {
        let mut rows = KVec::with_capacity(FAULT_SITES, GFP_KERNEL)?;
        {
            let t = self.table.lock();
            for e in t.entries.iter().flatten() {
                // Within the capacity reserved above: never allocates.
                rows.push(*e, GFP_NOWAIT)?;
            }
        }
        heap_sort(&mut rows, |a, b| a.site < b.site);
        Ok(rows)
    }
}

impl Table {
    /// The entry of call site `site`, if it has `f`.
    fn entry(&mut self, site: SiteId) -> Option<&mut Entry> {
        self.entries.iter_mut().flatten().find(|e| e.site == site)
    }

    /// Whether one more report fits the rate limit (`__ratelimit()`).
    fn may_report(&mut self) -> bool {
        let now = now_ns();
        if self.reports == 0 || now.wrapping_sub(self.window_start) >= RATELIMIT_MS * 1_000_000 {
            self.window_start = now;
            self.reports = 0;
        }
        if self.reports == RATELIMIT_BURST {
            return false;
        }
        self.reports += 1;
        true
    }
}

/// The kernel's fault-injection report (`fail_dump()`), then the call site
/// and the allocation; the call chain for `verbose` 2.
fn report_failure(e: &Entry, tag: Tag<'_>, kind: FailKind, size: usize) {
    let site = tag.site();
    pr_notice!(
        "FAULT_INJECTION: forcing a failure.\nname allocprof, interval {}, probability {}, space {}, times {}\n",
        e.knobs.interval,
        e.knobs.probability,
        e.space,
        e.times
    );
    pr_notice!(
        "failed a {} allocation of {} bytes at {}:{}{}{}{} func:{}\n",
        kind.name(),
        size,
        BStr(site.file),
        site.line,
        if site.module.is_some() { " [" } else { "" },
        BStr(site.module.unwrap_or(b"")),
        if site.module.is_some() { "]" } else { "" },
        BStr(site.function)
    );
    if e.knobs.verbose > 1 {
        dump_stack();
    }
}
