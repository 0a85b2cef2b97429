// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over the C interfaces allocprof uses.
//!
//! This is the only part of the module that touches `kernel::bindings`: the
//! back-end hook interface of the patched kernel, per-CPU memory, page frame
//! numbers, `seq_file`/procfs, debugfs, sysctl, module parameters, a mutex that
//! can be tried, an irq-safe raw spinlock, call chains and the stack depot, the
//! current task and the clock, memory cgroups, and kernel log lines.  Above it, `unsafe` is left
//! only where a contract of these wrappers must be kept by the caller:
//! per-CPU addresses (`counters.rs`, `watch.rs`) and the lifetime of a
//! section's tags (`tags.rs`), each with its `SAFETY` comment.

pub(crate) mod backend;
pub(crate) mod compat;
pub(crate) mod debugfs;
pub(crate) mod memcg;
pub(crate) mod mm;
pub(crate) mod module;
pub(crate) mod param;
pub(crate) mod percpu;
pub(crate) mod printk;
pub(crate) mod procfs;
pub(crate) mod stack;
pub(crate) mod sync;
pub(crate) mod sysctl;
pub(crate) mod task;
pub(crate) mod uapi;

/// Text being made for user space, a `seq_file` or a debugfs file's text:
/// names as the bytes they are, figures through `core::fmt::Write`.
pub(crate) trait Output: core::fmt::Write {
    /// Appends `bytes` as they are.
    fn put(&mut self, bytes: &[u8]);
}

impl Output for procfs::SeqFile {
    fn put(&mut self, bytes: &[u8]) {
        self.write(bytes)
    }
}

impl Output for debugfs::Text {
    fn put(&mut self, bytes: &[u8]) {
        self.write(bytes)
    }
}
