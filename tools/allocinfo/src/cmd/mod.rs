//! The commands, a module each: how it runs and what it prints.

pub mod ages;
pub mod diff;
pub mod faults;
pub mod group;
pub mod leaks;
pub mod memcgs;
pub mod nodes;
pub mod parts;
pub mod plot;
pub mod rate;
pub mod snap;
pub mod stacks;
pub mod top;
