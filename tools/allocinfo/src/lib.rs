//! Library behind the `allocinfo` command: parsing, filtering, grouping,
//! diffing and plotting of Linux `/proc/allocinfo` (memory allocation
//! profiling, kernel 6.10+), formats 1.0 and 2.0, the binary ioctl interface
//! of a live kernel, and a compact snapshot form; also the call chains, ages,
//! nodes, memory cgroups and injected faults of allocprof's debugfs files
//! ([`stacks`], [`ages`], [`nodes`], [`memcgs`], [`faults`]). The command line and what each command
//! prints (tables, JSON, CSV, Prometheus text) belong to the binary.
//!
//! ```
//! let text = "allocinfo - version: 1.0\n\
//!             #     <size>  <calls> <tag info>\n\
//!             \x20     229376       56 mm/slub.c:2345 func:alloc_slab_page \n";
//! let parsed = allocinfo::parse::parse_str(text);
//! assert_eq!(parsed.records[0].bytes, 229376);
//! assert_eq!(parsed.records[0].func, "alloc_slab_page");
//! ```

pub mod ages;
pub mod compact;
pub mod debugfs;
pub mod diff;
pub mod faults;
pub mod filter;
pub mod group;
pub mod ioctl;
pub mod leaks;
pub mod live;
pub mod memcgs;
pub mod nodes;
pub mod parse;
pub mod parsed;
pub mod plot;
pub mod rate;
pub mod record;
pub mod snap;
pub mod split;
pub mod stacks;
pub mod units;

pub use parse::{parse_bytes, parse_str};
pub use parsed::Parsed;
pub use record::{merge_duplicates, Record, SiteKey};
