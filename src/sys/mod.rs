// SPDX-License-Identifier: GPL-2.0

//! Thin safe wrappers over the C interfaces allocprof uses.
//!
//! This is the only part of the module that touches `kernel::bindings`: the
//! back-end hook interface of the patched kernel, per-CPU memory, page frame
//! numbers, `seq_file`/procfs, sysctl and module parameters.  Everything above
//! it is safe Rust.

pub(crate) mod backend;
pub(crate) mod mm;
pub(crate) mod param;
pub(crate) mod percpu;
pub(crate) mod procfs;
pub(crate) mod sysctl;
