//! `allocinfo`: inspect Linux `/proc/allocinfo` (memory allocation profiling).
//!
//! [`cli`] defines the command line; [`cmd`] has a module per command, which
//! reads through [`input`] and prints with [`render`]; the library
//! (`allocinfo::*`) parses, filters, groups, diffs and draws. `main` runs
//! the command and turns its error into the exit status.

mod cli;
mod cmd;
mod input;
mod render;

use anyhow::Result;
use clap::Parser;
use cli::{Cli, Cmd, UsageError};
use input::StrictError;
use std::io;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(ioe) = e.downcast_ref::<io::Error>() {
                if ioe.kind() == io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("allocinfo: error: {e:#}");
            if e.downcast_ref::<StrictError>().is_some() {
                ExitCode::from(3)
            } else if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let v = cli.verbose;
    match cli.command {
        Cmd::Top(a) => cmd::top::run(a, v),
        Cmd::Group(a) => cmd::group::run(a, v),
        Cmd::Snap(a) => cmd::snap::run(a),
        Cmd::Diff(a) => cmd::diff::run(a),
        Cmd::Plot(a) => cmd::plot::run(a, v),
        Cmd::Stacks(a) => cmd::stacks::run(a, v),
        Cmd::Ages(a) => cmd::ages::run(a, v),
        Cmd::Nodes(a) => cmd::nodes::run(a, v),
        Cmd::Memcgs(a) => cmd::memcgs::run(a, v),
        Cmd::Faults(a) => cmd::faults::run(a),
        Cmd::Leaks(a) => cmd::leaks::run(a, v),
    }
}
