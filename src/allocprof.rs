// SPDX-License-Identifier: GPL-2.0

//! allocprof: memory-allocation profiling back end.

use kernel::prelude::*;

module! {
    type: AllocProf,
    name: "allocprof",
    author: "allocprof developers",
    description: "Memory allocation profiling back end (/proc/allocinfo)",
    license: "GPL",
}

struct AllocProf;

impl kernel::Module for AllocProf {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded\n");
        Ok(AllocProf)
    }
}

impl Drop for AllocProf {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
