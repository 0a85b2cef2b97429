// SPDX-License-Identifier: GPL-2.0

//! Memory cgroups: the one an allocation made now would be charged to,
//! held by its cgroup's kernfs node, and that node's path.
//!
//! A call site with `m` keeps, for each watched allocation, the memory
//! cgroup of the context that made it (`watch.rs`).  The cgroup is held
//! by a reference to its kernfs node (`kernfs_get()`), which any context
//! may take: a node outlives its cgroup while referenced, so its path can
//! still be read after the cgroup is removed.  Putting the reference may
//! free the node, which takes a lock that is not interrupt-safe, so a
//! [`MemcgRef`] is dropped only in process context.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::bindings;

/// The memory cgroup the current context's accounted allocations are
/// charged to, found as the kernel's `current_obj_cgroup()` finds it: in a
/// task its active memcg (`set_active_memcg()`) or, for a user task, its
/// own; in an interrupt the CPU's active memcg.  Valid while preemption
/// stays off: RCU keeps the cgroup, and its node, until then.
pub(crate) struct CurrentMemcg {
    kn: NonNull<bindings::kernfs_node>,
    root: bool,
    /// Not `Send`: tied to this CPU's section without preemption.
    _cpu: PhantomData<*mut ()>,
}

impl CurrentMemcg {
    /// The current context's memory cgroup; `None` where the kernel would
    /// charge nothing to any (a kernel thread or an interrupt without an
    /// active memcg).
    ///
    /// # Safety
    ///
    /// Preemption is off from the call until the result is dropped.
    pub(crate) unsafe fn get() -> Option<Self> {
        // SAFETY: `in_task()` only reads this CPU's preemption count.
        let memcg = if unsafe { bindings::in_task() } {
            // SAFETY: `current` is always a valid task on this CPU.
            let task = unsafe { bindings::get_current() };
            // SAFETY: The task runs here; only it sets its active memcg.
            let active = unsafe { (*task).active_memcg };
            // SAFETY: As above; `flags` and `mm` are its own.
            let (flags, mm) = unsafe { ((*task).flags, (*task).mm) };
            if !active.is_null() {
                active
            } else if flags & bindings::PF_KTHREAD != 0 || mm.is_null() {
                return None;
            } else {
                // SAFETY: Preemption is off (the caller's contract), which
                // `task_css()` accepts as an RCU read-side section.
                unsafe { bindings::mem_cgroup_from_task(task) }
            }
        } else {
            let cpu = core::ptr::addr_of_mut!(bindings::int_active_memcg).cast::<u64>();
            // SAFETY: `int_active_memcg` is a per-CPU pointer; preemption
            // is off, so this CPU's copy is read.
            unsafe { super::percpu::this_cpu_read(cpu) as *mut bindings::mem_cgroup }
        };
        if memcg.is_null() {
            return None;
        }
        // SAFETY: RCU keeps the memcg, its cgroup and the cgroup's node
        // (put only after a grace period, `css_free_rwork_fn()`).
        let (kn, level) = unsafe {
            let cgroup = (*memcg).css.cgroup;
            ((*cgroup).kn, (*cgroup).level)
        };
        Some(Self {
            kn: NonNull::new(kn)?,
            root: level == 0,
            _cpu: PhantomData,
        })
    }

    /// Whether `held` holds this cgroup.
    pub(crate) fn is(&self, held: &MemcgRef) -> bool {
        self.kn == held.0
    }

    /// Whether it is the root cgroup, to which the kernel charges nothing.
    pub(crate) fn is_root(&self) -> bool {
        self.root
    }

    /// A reference that keeps the cgroup's node.
    pub(crate) fn hold(&self) -> MemcgRef {
        // SAFETY: The node is live (see `get`); taking a reference only
        // increments its count.
        unsafe { bindings::kernfs_get(self.kn.as_ptr()) };
        MemcgRef(self.kn)
    }
}

/// A reference to a memory cgroup's kernfs node.  Dropped only in process
/// context (see the module's doc).
pub(crate) struct MemcgRef(NonNull<bindings::kernfs_node>);

// SAFETY: The reference is a count in the node, which any CPU may drop
// (in process context, as the type's doc says).
unsafe impl Send for MemcgRef {}

impl Clone for MemcgRef {
    fn clone(&self) -> Self {
        // SAFETY: This reference keeps the node live.
        unsafe { bindings::kernfs_get(self.0.as_ptr()) };
        Self(self.0)
    }
}

impl Drop for MemcgRef {
    fn drop(&mut self) {
        // SAFETY: This reference is ours, and this is process context.
        unsafe { bindings::kernfs_put(self.0.as_ptr()) };
    }
}

/// Bytes of a path the reports show, the NUL included.
pub(crate) const PATH_LEN: usize = 256;

impl MemcgRef {
    /// The cgroup's path in its hierarchy (`/` for the root), as much of it
    /// as `buf` holds, and whether it was cut there; `None` if the kernel
    /// could not make it.
    pub(crate) fn path<'a>(&self, buf: &'a mut [u8; PATH_LEN]) -> Option<(&'a [u8], bool)> {
        // SAFETY: The node is live; `buf` holds `PATH_LEN` bytes, which
        // the call NUL-terminates.
        let len = unsafe {
            bindings::kernfs_path_from_node(
                self.0.as_ptr(),
                core::ptr::null_mut(),
                buf.as_mut_ptr().cast(),
                PATH_LEN,
            )
        };
        let len = usize::try_from(len).ok()?;
        let shown = len.min(PATH_LEN - 1);
        Some((&buf[..shown], shown < len))
    }
}
