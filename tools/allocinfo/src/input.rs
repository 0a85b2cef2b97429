//! What the commands read: a file, standard input or the running kernel,
//! and the reports of its malformed lines.

use crate::cli::{FilterArgs, LiveArgs, UsageError, DEFAULT_SOURCE};
use allocinfo::live::{self, Via};
use allocinfo::parse::parse_bytes;
use allocinfo::parsed::{Parsed, Version};
use allocinfo::record::{merge_duplicates, Record};
use anyhow::{Context, Result};
use std::fmt::Display;
use std::io::{self, Read};
use std::path::PathBuf;

/// Most malformed-line warnings printed per input file.
const MAX_WARNINGS: usize = 20;

/// Where the records come from.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file in the text or compact form, `-` = standard input.
    File(String),
    /// The running kernel.
    Live {
        proc: PathBuf,
        via: Via,
        verbose: bool,
    },
}

impl Input {
    /// FILE, or the kernel with `--live` (`--proc` and `--via` need it).
    pub fn new(live: &LiveArgs, file: &str, verbose: bool) -> Result<Input> {
        if !live.live && (live.proc.is_some() || live.via.is_some()) {
            // (clap's `requires` cannot tell an absent flag from a false one.)
            return Err(UsageError("--proc and --via need --live".into()).into());
        }
        Ok(if live.live {
            Input::Live {
                proc: live
                    .proc
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_SOURCE)),
                via: live.via.unwrap_or(Via::Auto),
                verbose,
            }
        } else {
            Input::File(file.to_string())
        })
    }

    /// For titles.
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => display_name(path),
            Input::Live { proc, .. } => proc.display().to_string(),
        }
    }
}

/// A path as messages name it: `-` is `<stdin>`.
pub fn display_name(path: &str) -> String {
    if path == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string()
    }
}

/// Read a file, or standard input for `-`.
fn read_input(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .read_to_end(&mut buf)
            .context("cannot read standard input")?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| {
        let hint = if path == DEFAULT_SOURCE && e.kind() == io::ErrorKind::NotFound {
            " (is the kernel built with CONFIG_MEM_ALLOC_PROFILING?)"
        } else {
            ""
        };
        anyhow::anyhow!("cannot read {path}: {e}{hint}")
    })
}

/// Read one of allocprof's debugfs files (`-` = standard input).
pub fn read_debugfs(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        return read_input(path);
    }
    std::fs::read(path).map_err(|e| {
        let hint = match e.kind() {
            io::ErrorKind::NotFound => {
                " (debugfs must be mounted on /sys/kernel/debug, e.g. `mount -t debugfs none \
                 /sys/kernel/debug`, and the allocprof module loaded)"
            }
            io::ErrorKind::PermissionDenied => {
                " (debugfs is readable by root only; it must be mounted on /sys/kernel/debug \
                 and the allocprof module loaded)"
            }
            _ => "",
        };
        anyhow::anyhow!("cannot read {path}: {e}{hint}")
    })
}

/// Read and parse a file, reporting malformed lines.
fn read_parsed(path: &str, strict: bool) -> Result<Parsed> {
    parse_checked(&read_input(path)?, &display_name(path), strict)
}

/// Report malformed lines on stderr: warnings, or errors (exit status 3) with `strict`.
pub fn report_issues<I: Display>(issues: &[I], name: &str, strict: bool) -> Result<()> {
    let level = if strict { "error" } else { "warning" };
    for issue in issues.iter().take(MAX_WARNINGS) {
        eprintln!("allocinfo: {level}: {name}: {issue}");
    }
    if issues.len() > MAX_WARNINGS {
        eprintln!(
            "allocinfo: {level}: {name}: ... and {} more malformed lines",
            issues.len() - MAX_WARNINGS
        );
    }
    if strict && !issues.is_empty() {
        return Err(StrictError {
            count: issues.len(),
            name: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Malformed input with --strict: exit status 3.
#[derive(Debug, thiserror::Error)]
#[error("{count} malformed line(s) in {name} (--strict)")]
pub struct StrictError {
    pub count: usize,
    pub name: String,
}

/// Parse, reporting malformed lines (as errors with `strict`).
pub fn parse_checked(data: &[u8], name: &str, strict: bool) -> Result<Parsed> {
    let parsed = parse_bytes(data);
    report_issues(&parsed.issues, name, strict)?;
    if let Some(v) = parsed.version {
        if v.major > Version::MAX_KNOWN_MAJOR {
            eprintln!(
                "allocinfo: warning: {name}: unknown format version {v}, reading it like 2.0"
            );
        }
    }
    Ok(parsed)
}

/// Read (a file, or the live kernel), filter, and merge duplicate sites.
pub fn load(input: &Input, f: &FilterArgs) -> Result<Vec<Record>> {
    let filter = f.filter()?;
    let records = match input {
        Input::File(path) => read_parsed(path, f.strict)?.records,
        Input::Live { proc, via, verbose } => {
            let r = live::read_live(proc, &filter, *via)?;
            for w in &r.warnings {
                eprintln!("allocinfo: warning: {w}");
            }
            if *verbose {
                eprintln!("allocinfo: {}", r.note);
            }
            match r.data {
                live::Data::Records(recs) => recs,
                live::Data::Text => read_parsed(&proc.to_string_lossy(), f.strict)?.records,
            }
        }
    };
    // The whole filter, also after the ioctl (whose answer is a superset).
    Ok(merge_duplicates(&filter.apply(&records)))
}

/// `load` of a file.
pub fn load_file(path: &str, f: &FilterArgs) -> Result<Vec<Record>> {
    load(&Input::File(path.to_string()), f)
}
