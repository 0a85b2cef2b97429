// SPDX-License-Identifier: GPL-2.0

//! Who and when: the current task's pid and name, a monotonic clock that
//! can be read in any context, and giving the CPU to other tasks in long
//! loops.

use kernel::bindings;

/// Bytes of a task's name (`TASK_COMM_LEN`).
pub(crate) const COMM_LEN: usize = 16;

/// A task's pid and name, as they were when it was asked for.
#[derive(Clone, Copy)]
pub(crate) struct TaskId {
    pub(crate) pid: i32,
    /// NUL-padded.
    pub(crate) comm: [u8; COMM_LEN],
}

impl TaskId {
    /// The task running on this CPU (in an interrupt, the one interrupted,
    /// as page_owner records it).
    pub(crate) fn current() -> Self {
        // SAFETY: `current` is always a valid task on this CPU.
        let task = unsafe { bindings::get_current() };
        let mut comm = [0u8; COMM_LEN];
        // A rename (`set_task_comm()`) while we copy may mix the two names,
        // as page_owner's copy may; the copy is NUL-terminated below.
        // SAFETY: The task is live while it runs here.
        let (pid, name) = unsafe { ((*task).pid, &(*task).comm) };
        for (d, &s) in comm.iter_mut().zip(name.iter()).take(COMM_LEN - 1) {
            *d = s;
        }
        Self { pid, comm }
    }

    /// The name, without its padding.
    pub(crate) fn name(&self) -> &[u8] {
        let len = self.comm.iter().position(|&b| b == 0).unwrap_or(COMM_LEN);
        &self.comm[..len]
    }
}

/// Nanoseconds of the monotonic clock; any context (NMI-safe).
pub(crate) fn now_ns() -> u64 {
    // SAFETY: No requirements.
    unsafe { bindings::ktime_get_mono_fast_ns() }
}

/// Lets the scheduler run another task if one is due (`cond_resched()`):
/// for long loops in task context that hold only sleeping locks (mutexes),
/// so that they neither stall the CPU nor trip the soft-lockup watchdog on
/// a kernel without full preemption.  Never under a spinlock or with
/// interrupts off.
pub(crate) fn cond_resched() {
    // SAFETY: The callers run in task context with no spinlock held, as
    // `__cond_resched()` (what `cond_resched()` calls) requires.
    unsafe { bindings::__cond_resched() };
}

/// Waits until every hook that is running now has returned: the kernel
/// calls the hooks with preemption off, which an RCU grace period waits
/// for (`synchronize_rcu()`).  Task context, no spinlock held: it sleeps.
/// 7.3's kernel crate has it (`kernel::sync::rcu`); 6.12's has not.
#[cfg(allocprof_tags)]
pub(crate) fn synchronize_rcu() {
    kernel::sync::rcu::synchronize_rcu();
}

/// As 7.3's `kernel::sync::rcu::synchronize_rcu()`.
#[cfg(not(allocprof_tags))]
pub(crate) fn synchronize_rcu() {
    // SAFETY: The callers run in task context with no spinlock held, where
    // `synchronize_rcu()` may sleep.
    unsafe { bindings::synchronize_rcu() };
}

/// A random number below `n` (`get_random_u32_below()`'s multiply and
/// shift, without its rejection step: the bias is below `n / 2^32`); any
/// context.
pub(crate) fn random_below(n: u32) -> u32 {
    // SAFETY: No requirements; it never sleeps.
    let r = unsafe { bindings::get_random_u32() };
    ((u64::from(r) * u64::from(n)) >> 32) as u32
}
