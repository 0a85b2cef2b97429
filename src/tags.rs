// SPDX-License-Identifier: GPL-2.0

//! The registry of code-tag sections and their call-site ids.
//!
//! Every `alloc_tags` section (vmlinux's and each loaded module's) gets a
//! contiguous range of compact call-site ids; a tag's id is stored in the
//! tag itself, so the hot path finds it with one load.  When a module goes
//! away while some of its allocations are still live, the names of those
//! call sites are copied and their ids kept until their figures reach zero;
//! only then is the range handed out again.

use core::fmt::Write;
use kernel::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    prelude::*,
    rbtree::{RBTree, RBTreeNode},
};

use crate::counters::{Counters, Totals, MAX_IDS};
use crate::sys::backend::{Site, TagSection};
use crate::sys::procfs::SeqFile;

/// A call site of a module that is gone, with live allocations.
struct DeadSite {
    id: u32,
    line: u32,
    /// `file`, `module` and `function`, one after the other.
    names: KVec<u8>,
    file_len: usize,
    module_len: usize,
}

impl DeadSite {
    /// Copies the names of `site`; `None` if that cannot be allocated.
    fn copy(id: u32, site: &Site<'_>) -> Option<Self> {
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
struct Section {
    len: u32,
    /// The owning image (0 for vmlinux), while it is loaded.
    owner: usize,
    /// The tags, while the image is loaded.
    tags: Option<TagSection>,
    /// After the module is gone: its call sites with live allocations.
    dead: KVec<DeadSite>,
}

/// Bits in a word of the id bitmap.
const WORD_BITS: usize = u64::BITS as usize;

/// All sections, by id.
pub(crate) struct Registry {
    /// By first id.
    sections: RBTree<u32, Section>,
    /// One bit per id: handed out or not.  Id 0 means "no call site".
    used: KVec<u64>,
}

impl Registry {
    /// A registry with every id free but id 0.
    pub(crate) fn new() -> Result<Self> {
        let mut used = KVec::from_elem(0u64, MAX_IDS / WORD_BITS, GFP_KERNEL)?;
        used[0] = 1;
        Ok(Self {
            sections: RBTree::new(),
            used,
        })
    }

    fn is_used(&self, id: usize) -> bool {
        self.used[id / WORD_BITS] & (1 << (id % WORD_BITS)) != 0
    }

    fn mark(&mut self, first: usize, len: usize, used: bool) {
        for id in first..first + len {
            if used {
                self.used[id / WORD_BITS] |= 1 << (id % WORD_BITS);
            } else {
                self.used[id / WORD_BITS] &= !(1 << (id % WORD_BITS));
            }
        }
    }

    /// Takes `len` consecutive ids (first fit).
    fn take_ids(&mut self, len: usize) -> Option<usize> {
        let mut run = 0;
        for id in 0..MAX_IDS {
            if self.is_used(id) {
                run = 0;
                continue;
            }
            run += 1;
            if run == len {
                let first = id + 1 - len;
                self.mark(first, len, true);
                return Some(first);
            }
        }
        None
    }

    /// Gives `section` ids, counters, and writes the ids into its tags.
    pub(crate) fn add(&mut self, section: TagSection, counters: &Counters) -> Result {
        self.collect(counters);
        let len = section.len();
        let Some(first) = self.take_ids(len) else {
            pr_warn!(
                "out of call-site ids: {} call sites are not profiled\n",
                len
            );
            for i in 0..len {
                // SAFETY: The section is being added, so its tags are valid.
                unsafe { section.tag(i) }.set_id(0);
            }
            return Ok(());
        };
        let inserted = counters.ensure(first, len).and_then(|()| {
            let node = RBTreeNode::new(
                first as u32,
                Section {
                    len: len as u32,
                    owner: section.owner(),
                    tags: None,
                    dead: KVec::new(),
                },
                GFP_KERNEL,
            )?;
            self.sections.insert(node);
            Ok(())
        });
        if let Err(e) = inserted {
            self.mark(first, len, false);
            return Err(e);
        }
        for i in 0..len {
            // SAFETY: The section is being added, so its tags are valid.
            unsafe { section.tag(i) }.set_id((first + i) as u64);
        }
        if let Some(s) = self.sections.get_mut(&(first as u32)) {
            s.tags = Some(section);
        }
        Ok(())
    }

    /// The module of `section` goes away: forget its tags, keep copies of
    /// the call sites that still have memory allocated.
    pub(crate) fn remove(&mut self, section: TagSection, counters: &Counters) {
        let owner = section.owner();
        let Some((&first, s)) = self
            .sections
            .iter_mut()
            .find(|(_, s)| s.owner == owner && s.tags.is_some())
        else {
            return;
        };
        if let Some(tags) = s.tags.take() {
            for t in 0..tags.len() {
                // SAFETY: The section is still there until we return.
                let tag = unsafe { tags.tag(t) };
                let id = first + t as u32;
                let totals = counters.read(id as usize);
                if totals.is_zero() {
                    continue;
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
                    .and_then(|d| s.dead.push(d, GFP_KERNEL).map_err(|_| ENOMEM));
                if copied.is_err() {
                    pr_warn!(
                        "call site {} of an unloaded module is no longer shown\n",
                        id
                    );
                }
            }
        }
        self.collect(counters);
    }

    /// Frees the sections of unloaded modules whose figures all reached
    /// zero, and their ids with them.
    fn collect(&mut self, counters: &Counters) {
        loop {
            let done = self.sections.iter().find(|(&first, s)| {
                s.tags.is_none()
                    && (first..first + s.len).all(|id| counters.read(id as usize).is_zero())
            });
            let Some((&first, s)) = done else {
                return;
            };
            let len = s.len;
            self.sections.remove(&first);
            self.mark(first as usize, len as usize, false);
        }
    }

    /// The number of call sites of the loaded images.
    pub(crate) fn nr_sites(&self) -> usize {
        self.sections
            .values()
            .filter(|s| s.tags.is_some())
            .map(|s| s.len as usize)
            .sum()
    }

    /// The first call-site id at or after `pos`.
    pub(crate) fn seek(&self, pos: u64) -> Option<u64> {
        for (&first, s) in self.sections.iter() {
            let end = u64::from(first) + u64::from(s.len);
            if end <= pos {
                continue;
            }
            if s.tags.is_some() {
                return Some(pos.max(first.into()));
            }
            if let Some(d) = s
                .dead
                .iter()
                .map(|d| u64::from(d.id))
                .filter(|&id| id >= pos)
                .min()
            {
                return Some(d);
            }
        }
        None
    }

    /// Calls `f` with call site `id`'s names, and whether its module is
    /// gone; nothing if `id` names no call site.
    pub(crate) fn with_site(&self, id: u64, f: impl FnOnce(&Site<'_>, bool)) {
        let Some((&first, s)) = self
            .sections
            .iter()
            .find(|(&first, s)| u64::from(first) <= id && id < u64::from(first) + u64::from(s.len))
        else {
            return;
        };
        if let Some(tags) = &s.tags {
            // SAFETY: The section is registered while we hold the registry.
            let tag = unsafe { tags.tag((id - u64::from(first)) as usize) };
            f(&tag.site(), false);
        } else if let Some(d) = s.dead.iter().find(|d| u64::from(d.id) == id) {
            f(&d.site(), true);
        }
    }

    /// Calls `f` with the id of every call site, and whether its module is
    /// gone: those of the loaded images, and the copies kept of unloaded
    /// modules' ones.
    pub(crate) fn for_each_id(&self, mut f: impl FnMut(u64, bool)) {
        for (&first, s) in self.sections.iter() {
            if s.tags.is_some() {
                (first..first + s.len).for_each(|id| f(id.into(), false));
            } else {
                s.dead.iter().for_each(|d| f(d.id.into(), true));
            }
        }
    }

    /// Writes call site `id`'s line in upstream's format (an unloaded
    /// module's only while it has memory allocated).
    pub(crate) fn show(&self, out: &mut SeqFile, id: u64, counters: &Counters) {
        let totals = counters.read(id as usize);
        self.with_site(id, |site, gone| {
            if !gone || !totals.is_zero() {
                write_line(out, totals, site);
            }
        });
    }
}

/// Bytes from a code tag, printed as they are.
pub(crate) struct BStr<'a>(pub(crate) &'a [u8]);

impl core::fmt::Display for BStr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &b in self.0 {
            f.write_char(if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            })?;
        }
        Ok(())
    }
}

/// `"%12lli %8llu "`, then `file:line [module] func:name`, then `" \n"`, as
/// upstream's `alloc_tag_to_text()`.
fn write_line(out: &mut SeqFile, totals: Totals, site: &Site<'_>) {
    let _ = write!(out, "{:12} {:8} ", totals.bytes, totals.calls);
    out.write(site.file);
    let _ = write!(out, ":{}", site.line);
    if let Some(module) = site.module {
        out.write(b" [");
        out.write(module);
        out.write(b"]");
    }
    out.write(b" func:");
    out.write(site.function);
    out.write(b" \n");
}
