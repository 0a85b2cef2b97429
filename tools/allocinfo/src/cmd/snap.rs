//! `allocinfo snap`: timestamped copies of /proc/allocinfo, byte for byte or
//! in the compact form.

use crate::cli::{SnapArgs, DEFAULT_SOURCE};
use crate::input::parse_checked;
use crate::render::write_stdout;
use allocinfo::{compact, snap};
use anyhow::{bail, Context, Result};
use chrono::Utc;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub fn run(a: SnapArgs) -> Result<()> {
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let start = Instant::now();
    let interval = Duration::from_secs_f64(a.interval);
    let mut i: u64 = 0;
    loop {
        let data = std::fs::read(&a.source).map_err(|e| {
            let hint =
                if a.source == Path::new(DEFAULT_SOURCE) && e.kind() == io::ErrorKind::NotFound {
                    " (is the kernel built with CONFIG_MEM_ALLOC_PROFILING?)"
                } else {
                    ""
                };
            anyhow::anyhow!("cannot read {}: {e}{hint}", a.source.display())
        })?;
        let path = if a.compact {
            let name = a.source.to_string_lossy();
            let parsed = parse_checked(&data, &name, false)?;
            let text = compact::encode(parsed.version, &parsed.records);
            write_unique_snapshot(&a.out, text.as_bytes(), snap::COMPACT_SUFFIX)?
        } else {
            write_unique_snapshot(&a.out, &data, snap::SUFFIX)?
        };
        write_stdout(&format!("{}\n", path.display()))?;
        i += 1;
        if a.count != 0 && i >= a.count {
            return Ok(());
        }
        // Sleep until the next slot, measured from the start (no drift).
        let next = interval.mul_f64(i as f64);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// Write a snapshot named after the current time; if a snapshot of this
/// second already exists, wait for the next second.
fn write_unique_snapshot(dir: &Path, data: &[u8], suffix: &str) -> Result<PathBuf> {
    for _ in 0..3 {
        match snap::write_snapshot_with(dir, data, Utc::now(), suffix) {
            Ok(p) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let sub = Utc::now().timestamp_subsec_millis() as u64;
                std::thread::sleep(Duration::from_millis(1000 - sub.min(999)));
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot write snapshot in {}", dir.display()))
            }
        }
    }
    bail!("cannot find a free snapshot name in {}", dir.display())
}
