// SPDX-License-Identifier: GPL-2.0

//! `/proc/allocinfo`, in upstream's format: version 1.0 or 2.0, the
//! kernel's own by default (`KERNEL_FORMAT_V2`: 1.0 on 6.12, 2.0 on 7.3),
//! the other with `allocinfo_format=`.  Version 2.0 marks the
//! call sites whose figures miss some allocations with `accurate:no`,
//! gives a call site with the `n` flag its watched pages by node,
//! `node:N=BYTES/CALLS` a node (`control.rs`), and one with `c` its
//! allocations and frees since it got it, `allocated:BYTES/CALLS
//! freed:BYTES/CALLS` (`churn.rs`):
//!
//! ```text
//! allocinfo - version: 1.0
//! #     <size>  <calls> <tag info>
//!        4096        1 mm/percpu-vm.c:33 func:pcpu_get_pages
//!        8192        2 drivers/foo.c:12 [foo] func:foo_probe
//! ```
//!
//! Positions are call-site ids (0 is the header), so a reader resumes where
//! it was even when modules come and go between its reads.  Each line is
//! written under the control and registry locks, which allocations never
//! take, straight into the `seq_file` buffer: no allocation per line.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{error::Result, new_mutex, prelude::*, sync::Arc, sync::Mutex};

use crate::ids::{Flags, SiteId};
use crate::profiler::Profiler;
use crate::state::Profiling;
use crate::sys::param::ParamValue;
use crate::sys::procfs::{Ioctl, IoctlArg, SeqFile, SeqSource, KERNEL_FORMAT_V2};
use crate::sys::uapi::{self, Filter, Record};
use crate::tags::{SiteView, Sites};
use crate::text::write_figures;

/// The format of `/proc/allocinfo`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `allocinfo - version: 1.0`, as 6.12 prints it.
    V1,
    /// `allocinfo - version: 2.0`: lines may end in ` accurate:no`.
    V2,
}

/// Set by the `allocinfo_format` parameter at load, the kernel's own format
/// unless it is given.  A static, as C's
/// `module_param()` storage: the kernel parses the parameter before the
/// module's `init` runs, when no state of the module exists yet; `init`
/// reads it once, into the file's [`AllocInfo`].
static FORMAT_V2: AtomicBool = AtomicBool::new(KERNEL_FORMAT_V2);

/// The format chosen at load.
pub(crate) fn format() -> Format {
    if FORMAT_V2.load(Ordering::Relaxed) {
        Format::V2
    } else {
        Format::V1
    }
}

/// `allocinfo_format=1.0|2.0`; anything else fails the load.
pub(crate) struct FormatParam;

impl ParamValue for FormatParam {
    fn set(text: &[u8]) -> Result {
        let v2 = match text.strip_suffix(b"\n").unwrap_or(text) {
            b"1.0" => false,
            b"2.0" => true,
            _ => {
                pr_err!("allocinfo_format= must be 1.0 or 2.0\n");
                return Err(EINVAL);
            }
        };
        FORMAT_V2.store(v2, Ordering::Relaxed);
        Ok(())
    }

    fn get(buf: &mut [u8]) -> usize {
        let text: &[u8] = match format() {
            Format::V1 => b"1.0\n",
            Format::V2 => b"2.0\n",
        };
        buf[..text.len()].copy_from_slice(text);
        text.len()
    }
}

/// The contents of `/proc/allocinfo`: the file's data.
pub(crate) struct AllocInfo {
    /// Where the profiler is.
    profiling: Arc<Profiling>,
    /// The format chosen at load.
    format: Format,
}

impl AllocInfo {
    /// The file showing the profiler of `profiling` in format `format`.
    pub(crate) fn new(profiling: Arc<Profiling>, format: Format) -> Result<Arc<Self>> {
        Ok(Arc::new(AllocInfo { profiling, format }, GFP_KERNEL)?)
    }
}

/// Where an open file's `GET_NEXT` goes on from.
#[derive(Clone, Copy)]
enum Position {
    /// Nothing returned yet, or the end was reached: the first record.
    Start,
    /// After the call site of this id.
    After(SiteId),
    /// A `GET_AT` found nothing: the next `GET_NEXT` ends, then starts over.
    End,
}

/// What an open `/proc/allocinfo` keeps for its `ioctl()` queries, as
/// upstream's does: the position and the filter of the last `GET_AT`.
struct CursorState {
    position: Position,
    filter: uapi::FilterBuf,
}

/// The `ioctl()` state of an open `/proc/allocinfo`; one query at a time.
#[pin_data]
pub(crate) struct Cursor {
    #[pin]
    state: Mutex<CursorState>,
}

/// The record of call site `site` if it passes filter `f`, as the
/// interface returns it.  Names, line and accuracy are tested first,
/// reading only the names filtered on; the per-CPU counters are summed
/// only for a call site that passed them.  `None` also for a call site the
/// text file does not show ([`SiteView::visible`]).
fn record(site: &SiteView<'_>, f: &Filter<'_>) -> Option<uapi::TagDataBuf> {
    let name_is = |name: &[u8], template: &[u8]| uapi::name_suffix(name) == template;
    let m = f.mask;
    if (m & uapi::MASK_MODNAME != 0
        && !site
            .module()
            .map_or(f.modname.is_empty(), |name| name_is(name, f.modname)))
        || (m & uapi::MASK_LINENO != 0 && u64::from(site.line()) != f.lineno)
        // `f.inaccurate`: the inaccurate call sites are asked for, else
        // the accurate ones.
        || (m & uapi::MASK_INACCURATE != 0 && site.accurate() == f.inaccurate)
        || (m & uapi::MASK_FILENAME != 0 && !site.file_is(f.filename, uapi::STR_SIZE - 1))
        || (m & uapi::MASK_FUNCTION != 0 && !site.function_is(f.function, uapi::STR_SIZE - 1))
        || !site.visible()
    {
        return None;
    }
    let totals = site.totals();
    let bytes = totals.bytes as u64;
    if (m & uapi::MASK_MIN_SIZE != 0 && bytes < f.min_size)
        || (m & uapi::MASK_MAX_SIZE != 0 && bytes > f.max_size)
    {
        return None;
    }
    Some(uapi::tag_data(&Record {
        module: site.module().unwrap_or(b""),
        function: site.function(),
        file: site.file(),
        line: site.line().into(),
        bytes,
        calls: totals.calls,
        accurate: site.accurate(),
    }))
}

/// The call site's id with its record, if it passes `f`.
fn id_record(site: SiteView<'_>, f: &Filter<'_>) -> Option<(SiteId, uapi::TagDataBuf)> {
    Some((site.id(), record(&site, f)?))
}

/// Whether the text file has more than `pos` records, counted without
/// summing counters (but for the call sites of modules gone, which are
/// shown only while something is allocated there).  Counted, not taken
/// from the number of ids: the kernel's pool of Rust call sites has ids
/// that are no record (its free tags, and the lines of Rust modules gone
/// with nothing allocated), so a position short of the ids may still be
/// past the end, where `GET_AT` must change nothing.
fn has_records(sites: &Sites<'_>, pos: usize) -> bool {
    sites.iter().filter(SiteView::visible).nth(pos).is_some()
}

fn get_at(info: &AllocInfo, cursor: &Cursor, arg: IoctlArg<uapi::GetAtBuf>) -> Result<i64> {
    let mut b = arg.read()?;
    let f = uapi::get_at_filter(&b);
    let both = uapi::MASK_MIN_SIZE | uapi::MASK_MAX_SIZE;
    if f.mask & !uapi::MASKS != 0 || (f.mask & both == both && f.min_size > f.max_size) {
        return Err(EINVAL);
    }
    let pos = usize::try_from(uapi::get_at_pos(&b)).unwrap_or(usize::MAX);
    let mut state = cursor.state.lock();
    let filter = if f.mask != 0 {
        uapi::filter_bytes(&b)
    } else {
        [0; core::mem::size_of::<uapi::FilterBuf>()]
    };
    let found = info
        .profiling
        .with_profiler(|p| {
            let sites = p.sites();
            // Past the end of the whole file: nothing changes.
            if !has_records(&sites, pos) {
                return Err(ENOENT);
            }
            let record = sites.iter().filter_map(|site| id_record(site, &f)).nth(pos);
            Ok(record)
        })
        .unwrap_or(Err(ENOENT))?;
    let Some((id, r)) = found else {
        state.filter = filter;
        if !matches!(state.position, Position::Start) {
            state.position = Position::End;
        }
        return Err(ENOENT);
    };
    uapi::set_get_at_data(&mut b, &r);
    // The cursor moves only once the record is with the caller: a copy-out
    // that fails (`EFAULT`) leaves the filter and position as they were.
    arg.write(&b)?;
    state.filter = filter;
    state.position = Position::After(id);
    Ok(0)
}

fn get_next(info: &AllocInfo, cursor: &Cursor, arg: IoctlArg<uapi::TagDataBuf>) -> Result<i64> {
    let mut state = cursor.state.lock();
    let from = match state.position {
        Position::Start => Some(SiteId::FIRST),
        Position::After(id) => SiteId::new(id.get().checked_add(1).unwrap_or(0)),
        Position::End => None,
    };
    let filter_buf = uapi::with_filter(&state.filter);
    let f = uapi::get_at_filter(&filter_buf);
    let found = info
        .profiling
        .with_profiler(|p| {
            p.sites()
                .iter_from(from?)
                .find_map(|site| id_record(site, &f))
        })
        .flatten();
    let Some((id, r)) = found else {
        state.position = Position::Start;
        return Err(ENOENT);
    };
    // As in `get_at`: the position moves only after a successful copy-out,
    // so a `GET_NEXT` that fails with `EFAULT` skips nothing.
    arg.write(&r)?;
    state.position = Position::After(id);
    Ok(0)
}

/// Writes call site `id`'s line in upstream's format `format`, if it is
/// shown ([`SiteView::visible`]).
fn show_line(out: &mut SeqFile, p: &Profiler, id: SiteId, format: Format) {
    let mut sites = p.sites();
    // Only the ids of a section in the registry: the section `seek`
    // found may have gone since, and a shorter one taken its ids.
    let Some(site) = sites.get(id).filter(SiteView::visible) else {
        return;
    };
    write_figures(out, site.totals(), &site.site());
    if format == Format::V2 && !site.accurate() {
        out.write(b" accurate:no");
    }
    if format == Format::V2 && site.flags().is_some_and(|f| f.contains(Flags::NODES)) {
        write_nodes(out, p, id);
    }
    if format == Format::V2 && site.flags().is_some_and(|f| f.contains(Flags::CHURN)) {
        write_churn(out, p, id);
    }
    #[cfg(allocprof_tags)]
    if format == Format::V2 && site.flags().is_some_and(|f| f.contains(Flags::MEMCG)) {
        use core::fmt::Write;
        let _ = write!(out, " accounted:{}", p.watched_accounted(id));
    }
    out.write(b" \n");
}

/// ` allocated:BYTES/CALLS freed:BYTES/CALLS`: the churn of `id` since it
/// got `c` (`churn.rs`).
fn write_churn(out: &mut SeqFile, p: &Profiler, id: SiteId) {
    use core::fmt::Write;
    if let Some(row) = p.churn_row(id) {
        let _ = write!(
            out,
            " allocated:{}/{} freed:{}/{}",
            row.alloc_bytes, row.allocs, row.free_bytes, row.frees
        );
    }
}

/// ` node:N=BYTES/CALLS` for each node with watched pages of `id`.
fn write_nodes(out: &mut SeqFile, p: &Profiler, id: SiteId) {
    use core::fmt::Write;
    let mut after = None;
    while let Some(row) = p.watched_node(id, after) {
        let _ = write!(out, " node:{}={}/{}", row.node.get(), row.bytes, row.calls);
        after = Some(row.node);
    }
}

impl SeqSource for AllocInfo {
    type Open = Cursor;

    fn open(&self) -> Result<Pin<KBox<Cursor>>> {
        KBox::pin_init(
            pin_init!(Cursor {
                state <- new_mutex!(CursorState {
                    position: Position::Start,
                    filter: [0; core::mem::size_of::<uapi::FilterBuf>()],
                }),
            }),
            GFP_KERNEL,
        )
    }

    fn ioctl(&self, cursor: &Cursor, cmd: Ioctl) -> Result<i64> {
        match cmd.cmd {
            uapi::IOC_CONTENT_ID => {
                let id = self
                    .profiling
                    .with_profiler(Profiler::content_id)
                    .unwrap_or(0);
                cmd.arg().write(&uapi::content_id(id))?;
                Ok(0)
            }
            uapi::IOC_GET_AT => get_at(self, cursor, cmd.arg()),
            uapi::IOC_GET_NEXT => get_next(self, cursor, cmd.arg()),
            _ => Err(ENOTTY),
        }
    }

    fn seek(&self, pos: u64) -> Option<u64> {
        if pos == 0 {
            return Some(0);
        }
        // Past the last id: the end.
        let from = SiteId::new(u16::try_from(pos).ok()?)?;
        self.profiling
            .with_profiler(|p| p.sites().seek(from))?
            .map(|id| id.get().into())
    }

    fn show(&self, out: &mut SeqFile, item: u64) {
        if item == 0 {
            out.write(match self.format {
                Format::V1 => b"allocinfo - version: 1.0\n",
                Format::V2 => b"allocinfo - version: 2.0\n",
            });
            out.write(b"#     <size>  <calls> <tag info>\n");
            return;
        }
        let Some(id) = u16::try_from(item).ok().and_then(SiteId::new) else {
            return;
        };
        self.profiling
            .with_profiler(|p| show_line(out, p, id, self.format));
    }
}
