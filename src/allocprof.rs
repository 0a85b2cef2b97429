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

// On 7.3's series the code of what it cannot do yet stays unused (the
// watched allocations, the page array, failures by call site until the
// kernel has them: Documentation/linux-7.3-module.md).
#![cfg_attr(allocprof_tags, allow(dead_code))]

use kernel::{c_str, prelude::*, sync::Arc};

mod churn;
mod control;
mod counters;
mod debug;
mod faults;
mod ids;
mod page;
mod procfs;
mod profiler;
mod query;
mod reports;
mod showmem;
mod state;
mod sys;
mod sysctl;
mod tags;
mod text;
mod watch;

use control::ControlParam;
use debug::DebugParam;
use procfs::FormatParam;
use state::Profiling;
use sys::debugfs::DebugDir;
use sys::module::ModuleNotifier;
use sys::procfs::ProcFile;
use sys::sysctl::Sysctl;
use sysctl::{MemProfilingParam, Mode};

#[cfg(not(allocprof_tags))]
module! {
    type: AllocProf,
    name: "allocprof",
    author: "allocprof developers",
    description: "Memory allocation profiling back end: /proc/allocinfo, vm.mem_profiling",
    license: "GPL",
}

// 7.3's `module!` names its authors in a list.
#[cfg(allocprof_tags)]
module! {
    type: AllocProf,
    name: "allocprof",
    authors: ["allocprof developers"],
    description: "Memory allocation profiling back end: /proc/allocinfo, vm.mem_profiling",
    license: "GPL",
}

module_param!(mem_profiling, MemProfilingParam, 0o444);
module_param!(debug, DebugParam, 0o444);
module_param!(allocinfo_format, FormatParam, 0o444);
module_param!(control, ControlParam, 0o400);

struct AllocProf {
    profiling: Arc<Profiling>,
    proc: Option<ProcFile<procfs::AllocInfo>>,
    /// `/sys/kernel/debug/allocprof/`: control, stacks, ages, nodes, memcgs,
    /// faults.
    debugfs: Option<DebugDir<Profiling>>,
    /// `vm.mem_profiling`, which shows and changes the profiling state.
    sysctl: Option<Sysctl<Profiling>>,
    /// Other modules' loads and unloads, for their Rust lines.
    modules: Option<ModuleNotifier<Profiling>>,
}

impl kernel::Module for AllocProf {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let mode = sysctl::load_mode();
        let profiling = Profiling::new(mode, debug::enabled(), module)?;
        // From here on, `drop` undoes whatever was done.
        let mut this = AllocProf {
            profiling,
            proc: None,
            debugfs: None,
            sysctl: None,
            modules: None,
        };
        this.profiling.register(control::param_text()?)?;
        this.modules = Some(ModuleNotifier::register(this.profiling.clone())?);
        control::apply_param(&this.profiling)?;
        let allocinfo = procfs::AllocInfo::new(this.profiling.clone(), procfs::format())?;
        this.proc = Some(ProcFile::new(c_str!("allocinfo"), 0o400, allocinfo)?);
        // Per-site control and reports; profiling works without them
        // (debugfs may be off or locked down).
        match debugfs_files(this.profiling.clone(), module) {
            Ok(dir) => this.debugfs = Some(dir),
            Err(e) => pr_warn!(
                "no per-call-site control: /sys/kernel/debug/allocprof cannot be made ({:?})\n",
                e
            ),
        }
        this.sysctl = Some(Sysctl::register(
            c_str!("vm"),
            c_str!("mem_profiling"),
            this.profiling.sysctl_mode(),
            this.profiling.clone(),
        )?);

        let footprint = this
            .profiling
            .with_profiler(|p| p.footprint())
            .unwrap_or_default();
        let adoption = this.profiling.adoption();
        #[cfg(not(allocprof_tags))]
        pr_info!(
            "loaded: mem_profiling={}, {} call sites, {} KiB of page back-references ({} bytes a page), {} bytes of counters a CPU, {} KiB of counter addresses; {} bytes a CPU of the counters in the per-CPU reserved area\n",
            mode.name(),
            footprint.sites,
            footprint.pages / 1024,
            page::BYTES_PER_PAGE,
            footprint.counters,
            footprint.table / 1024,
            footprint.reserved
        );
        // On 7.3 the kernel keeps every allocation's reference (pages: in
        // page flags or page_ext; objects: in their slab's extension).
        #[cfg(allocprof_tags)]
        pr_info!(
            "loaded: mem_profiling={}, {} call sites, the kernel's page and object references, {} bytes of counters a CPU, {} KiB of counter addresses; {} bytes a CPU of the counters in the per-CPU reserved area\n",
            mode.name(),
            footprint.sites,
            footprint.counters,
            footprint.table / 1024,
            footprint.reserved
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

/// `/sys/kernel/debug/allocprof/`: the control file and the reports, of
/// the profiler of `profiling`; `module` is allocprof's.
fn debugfs_files(
    profiling: Arc<Profiling>,
    module: &'static ThisModule,
) -> Result<DebugDir<Profiling>> {
    let mut dir = DebugDir::new(c_str!("allocprof"), profiling)?;
    dir.add::<control::Control>(c_str!("control"), 0o600, module)?;
    dir.add::<reports::Stacks>(c_str!("stacks"), 0o400, module)?;
    dir.add::<reports::Ages>(c_str!("ages"), 0o400, module)?;
    dir.add::<reports::Nodes>(c_str!("nodes"), 0o400, module)?;
    dir.add::<reports::Memcgs>(c_str!("memcgs"), 0o400, module)?;
    dir.add::<reports::Faults>(c_str!("faults"), 0o400, module)?;
    dir.add::<reports::Churn>(c_str!("churn"), 0o400, module)?;
    Ok(dir)
}

impl Drop for AllocProf {
    fn drop(&mut self) {
        // The notifier, sysctl and /proc file go first: removing them waits
        // for their running callers, some of which wait for the state lock.
        drop(self.modules.take());
        drop(self.sysctl.take());
        drop(self.proc.take());
        drop(self.debugfs.take());
        self.profiling.unregister();
        pr_info!("unloaded\n");
    }
}
