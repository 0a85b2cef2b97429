// SPDX-License-Identifier: GPL-2.0

//! Call-site ids, their flags, and the id space: the leaf the rest of the
//! module builds on.
//!
//! The id space is 16 bits, so that a page's back-reference is two bytes
//! (`page.rs`).  It is divided here, once:
//!
//! - 0 is no call site;
//! - the ids below [`WATCH_FIRST`] are call sites', handed out to the
//!   code-tag sections by the registry (`tags.rs`) in ranges that start on
//!   a multiple of [`BLOCK_IDS`], the size of the counters' per-CPU arrays
//!   (`counters.rs`), so that a section's arrays are whole blocks of ids;
//! - the [`WATCH_ENTRIES`] ids from [`WATCH_FIRST`] on name watched
//!   allocations (`watch.rs`), never a call site, and have no counters.
//!
//! A tag holds its call site's id with the site's [`Flags`]
//! ([`SiteId::word`]); a page's back-reference and a slab or percpu
//! object's slot, the id alone (`page.rs`, below); the reference a
//! partial free of pages reads, the id with the registration's generation
//! ([`page_reference`]).

use core::{
    num::NonZeroU16,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{alloc::flags::GFP_KERNEL, error::Result, prelude::*};

use crate::sys::backend::FAIL_BIT;

/// Ids per block: a section's first id is a multiple of it.
pub(crate) const BLOCK_IDS: usize = 64;

/// The first watch id: ids from here to the end of the id space name
/// entries of the watch table, not call sites.
pub(crate) const WATCH_FIRST: u16 = 0xc000;
/// Watch ids: one per watched allocation live at once.
pub(crate) const WATCH_ENTRIES: usize = SiteId::SPACE - WATCH_FIRST as usize;

/// A call site's compact id: what its tag, the slots of its objects and the
/// back-references of its pages hold.  16 bits, so that a page's
/// back-reference is two bytes; 0 is "no call site" and no `SiteId`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SiteId(NonZeroU16);

impl SiteId {
    /// The number of id values, 0 included.
    pub(crate) const SPACE: usize = 1 << 16;

    /// The lowest id: where a walk of every call site starts.
    pub(crate) const FIRST: SiteId = SiteId(NonZeroU16::MIN);

    /// The id `raw`, if it is one (not 0).
    #[inline(always)]
    pub(crate) fn new(raw: u16) -> Option<Self> {
        NonZeroU16::new(raw).map(Self)
    }

    /// The id in a tag's word (`Tag::word`) if the call site has the
    /// default flags (`p` only): the hot path.  `None` for a word with
    /// other flags (see [`SiteId::controlled`]) and for 0, the word of a
    /// tag without an id.
    #[inline(always)]
    pub(crate) fn plain(word: u64) -> Option<Self> {
        u16::try_from(word).ok().and_then(Self::new)
    }

    /// The id and the flags in a tag's word, if it has an id.
    pub(crate) fn controlled(word: u64) -> Option<(Self, Flags)> {
        Some((Self::new(word as u16)?, Flags::of_word(word)))
    }

    /// The word a tag holds for this id with `flags`.
    pub(crate) fn word(self, flags: Flags) -> u64 {
        u64::from(self.get()) | flags.word_bits()
    }

    /// The id as stored in slots and back-references.
    #[inline(always)]
    pub(crate) fn get(self) -> u16 {
        self.0.get()
    }

    /// The id as an index into per-id tables.
    #[inline(always)]
    pub(crate) fn index(self) -> usize {
        usize::from(self.0.get())
    }

    /// The id `n` after this one, if it is below `SPACE`.
    pub(crate) fn nth_after(self, n: usize) -> Option<Self> {
        u16::try_from(self.index() + n).ok().and_then(Self::new)
    }
}

impl core::fmt::Display for SiteId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// Bits in a word of an [`IdSet`].
const WORD_BITS: usize = u64::BITS as usize;

/// A set of ids, one bit for each of the id space: the registry's ids
/// handed out (`tags.rs`), and the call sites flagged as not fully counted
/// (`Inaccurate`).  Changed and read from any context, hooks included, so
/// each bit is changed with an atomic operation on its word.
pub(crate) struct IdSet(KVec<AtomicU64>);

impl IdSet {
    /// No id in the set.
    pub(crate) fn new() -> Result<Self> {
        let mut words = KVec::with_capacity(SiteId::SPACE / WORD_BITS, GFP_KERNEL)?;
        for _ in 0..SiteId::SPACE / WORD_BITS {
            words.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self(words))
    }

    /// The word of id value `i` (0 included) and its bit there.
    fn word(&self, i: usize) -> (&AtomicU64, u64) {
        (&self.0[i / WORD_BITS], 1 << (i % WORD_BITS))
    }

    /// Adds `id`.
    pub(crate) fn set(&self, id: SiteId) {
        let (word, bit) = self.word(id.index());
        word.fetch_or(bit, Ordering::Relaxed);
    }

    /// Whether `id` is in the set.
    pub(crate) fn get(&self, id: SiteId) -> bool {
        let (word, bit) = self.word(id.index());
        word.load(Ordering::Relaxed) & bit != 0
    }

    /// Adds (`on`) or removes the `len` ids from `first`.
    pub(crate) fn set_range(&self, first: SiteId, len: usize, on: bool) {
        for i in first.index()..first.index() + len {
            let (word, bit) = self.word(i);
            if on {
                word.fetch_or(bit, Ordering::Relaxed);
            } else {
                word.fetch_and(!bit, Ordering::Relaxed);
            }
        }
    }

    /// The first of `len` consecutive ids, none in the set, starting on a
    /// multiple of `align` (first fit).  The run at 0 is never one: 0 is
    /// no id.
    pub(crate) fn first_free(&self, len: usize, align: usize) -> Option<SiteId> {
        let start = (align..SiteId::SPACE)
            .step_by(align)
            .take_while(|&start| start + len <= SiteId::SPACE)
            .find(|&start| {
                (start..start + len).all(|i| {
                    let (word, bit) = self.word(i);
                    word.load(Ordering::Relaxed) & bit == 0
                })
            })?;
        SiteId::new(u16::try_from(start).ok()?)
    }
}

/// A call site's flags in the control file (`control.rs`): `p`
/// (profile: its allocations are counted), `s` (their call chains are
/// kept), `a` (their ages are kept), `n` (its pages are kept by node),
/// `f` (its allocations may be failed), `c` (its allocations are
/// counted since the flag was set: `churn.rs`) and `m` (its allocations
/// are kept by memory cgroup: `watch.rs`).  Kept in the tag's word
/// above the id, as bits that are all clear for the default, `p` alone, so
/// the hot path sees a plain id (see [`SiteId::plain`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flags(u8);

impl Flags {
    /// No flag.
    pub(crate) const NONE: Flags = Flags(0);
    pub(crate) const PROFILE: Flags = Flags(1);
    pub(crate) const STACKS: Flags = Flags(2);
    pub(crate) const AGES: Flags = Flags(4);
    pub(crate) const NODES: Flags = Flags(8);
    /// Its allocations may be failed (`faults.rs`); the kernel reads this
    /// bit of the word itself ([`FAIL_BIT`]).
    pub(crate) const FAIL: Flags = Flags(16);
    /// Not a flag of the control file: the call site is a Rust line of the
    /// kernel's pool (`lib/alloc_tag_rust.c`) that `control=` may concern
    /// and has not been matched with it yet (it had no names, or its module
    /// went away); the first hook that sees it settles its flags
    /// (`Profiler::settle`).  Never shown: settled before any listing.
    pub(crate) const UNSETTLED: Flags = Flags(32);
    /// Its allocations since the flag was set are counted (`churn.rs`); its
    /// entry of the churn table is in the word too ([`churn_slot`]).
    pub(crate) const CHURN: Flags = Flags(64);
    /// Its allocations are watched with the memory cgroup of the context
    /// that made them (`watch.rs`).
    pub(crate) const MEMCG: Flags = Flags(128);
    /// Every flag, in the order the control file prints them.
    pub(crate) const ALL: [(Flags, u8); 7] = [
        (Self::PROFILE, b'p'),
        (Self::STACKS, b's'),
        (Self::AGES, b'a'),
        (Self::NODES, b'n'),
        (Self::FAIL, b'f'),
        (Self::CHURN, b'c'),
        (Self::MEMCG, b'm'),
    ];
    /// The bits of all flags, [`Flags::UNSETTLED`] included.
    const MASK: u8 = 255;
    /// A call site's flags until the control file changes them.
    pub(crate) const DEFAULT: Flags = Self::PROFILE;
    const WORD_SHIFT: u32 = 16;

    /// Whether all of `other` is set.
    pub(crate) fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These and `other`.
    pub(crate) fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// These but `other`.
    pub(crate) fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }

    /// Whether a new allocation may be watched (`s`, `a`, `n` or `m`).
    pub(crate) fn watched(self) -> bool {
        self.0 & (Self::STACKS.0 | Self::AGES.0 | Self::NODES.0 | Self::MEMCG.0) != 0
    }

    /// The bits above the id in a tag's word: zero for the default.
    const fn word_bits(self) -> u64 {
        ((self.0 ^ Self::DEFAULT.0) as u64) << Self::WORD_SHIFT
    }

    /// The flags in a tag's word (the default for a word without an id).
    pub(crate) fn of_word(word: u64) -> Flags {
        Flags(((word >> Self::WORD_SHIFT) as u8 & Self::MASK) ^ Self::DEFAULT.0)
    }
}

/// Where a call site with `c` has its entry of the churn table
/// (`churn.rs`): bits 32 to 39 of its tag's word, above the flags (and
/// 7.3's [`KEYED_BIT`]), so that the hook of an allocation there finds it
/// in the word it read anyway.  Meaningful only while the word has `c`.
const CHURN_SHIFT: u32 = 32;
/// The churn table's entries the word can name.
pub(crate) const CHURN_SLOTS: usize = 256;
const CHURN_SLOT_MASK: u64 = (CHURN_SLOTS as u64 - 1) << CHURN_SHIFT;

// The entry's bits are none of the id's and the flags'.
const _: () =
    assert!(CHURN_SLOT_MASK & (((Flags::MASK as u64) << Flags::WORD_SHIFT) | 0xffff) == 0);

/// The churn table's entry named in `word` (a tag's word with `c`).
#[inline(always)]
pub(crate) fn churn_slot(word: u64) -> usize {
    ((word & CHURN_SLOT_MASK) >> CHURN_SHIFT) as usize
}

/// `word` naming the churn table's entry `slot` (below [`CHURN_SLOTS`]).
pub(crate) fn with_churn_slot(word: u64, slot: usize) -> u64 {
    (word & !CHURN_SLOT_MASK) | ((slot as u64) << CHURN_SHIFT & CHURN_SLOT_MASK)
}

/// 7.3: a bit of a tag's word above the flags, set with the first `s`, `a`
/// or `n` its call site gets and kept from then on (`Profiler::set_flags`):
/// its allocations may be watched, so its frees look for them in the watch
/// table, by address (`watch.rs`).  Not a flag: no control file shows it,
/// and a call site without it frees without a look-up.
#[cfg(allocprof_tags)]
pub(crate) const KEYED_BIT: u64 = 1 << 24;

#[cfg(allocprof_tags)]
const _: () = assert!(KEYED_BIT > (Flags::MASK as u64) << Flags::WORD_SHIFT);
#[cfg(allocprof_tags)]
const _: () = assert!(KEYED_BIT & CHURN_SLOT_MASK == 0);

// `f` in a tag's word (`pf`: `p` is the default, so its bit is clear) is
// the bit the kernel tests to know whether to ask for a failure.
const _: () = assert!(Flags(Flags::PROFILE.0 | Flags::FAIL.0).word_bits() == FAIL_BIT);

// Slab and percpu objects: the call site's id lives in the 2-byte slot the
// kernel keeps for every object (before the slab's object extension
// vector, in the percpu chunk's), so no object address is ever hashed or
// looked up.  The kernel zeroes every slot when a back end unregisters, so
// a non-zero slot always holds an id of this registration.
//
// The reference a partial free of pages reads (`page_ref`) is read before
// the page is dropped and used in a later call (`page_ref_sub`), which may
// come after a re-registration: it carries the registration's generation.

/// The page reference for call site `id` in registration `generation`.
#[inline(always)]
pub(crate) fn page_reference(generation: u32, id: SiteId) -> u64 {
    (u64::from(generation) << 32) | u64::from(id.get())
}

/// The call site of page reference `v`, if registration `generation` made
/// it (`generation` is a profiler's: never 0, see `Profiler::new`).
#[inline(always)]
pub(crate) fn page_reference_id(generation: u32, v: u64) -> Option<SiteId> {
    if (v >> 32) as u32 != generation {
        return None;
    }
    SiteId::new((v & 0xffff) as u16)
}

crate::printable!(SiteId);
