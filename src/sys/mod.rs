// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over the C interfaces allocprof uses.
//!
//! This is the only part of the module that touches `kernel::bindings`: the
//! back-end hook interface of the patched kernel, per-CPU memory, page frame
//! numbers, `seq_file`/procfs, sysctl, module parameters, a mutex that can be
//! tried, call chains and kernel log lines.  Everything above it is safe
//! Rust.

pub(crate) mod backend;
pub(crate) mod mm;
pub(crate) mod param;
pub(crate) mod percpu;
pub(crate) mod printk;
pub(crate) mod procfs;
pub(crate) mod stack;
pub(crate) mod sync;
pub(crate) mod sysctl;
