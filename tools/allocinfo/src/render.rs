//! What the commands share in printing their results.

use anyhow::Result;
use std::io::{self, Write};

/// Write `s` to standard output (a closed pipe is an `io::Error` that
/// `main` takes for success).
pub fn write_stdout(s: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// With `-v`: the statistics line of a debugfs file, under the table or on stderr.
pub fn append_stats(out: &mut String, stats: Option<&str>, table: bool, verbose: bool) {
    match stats {
        Some(line) if verbose => {
            if table {
                out.push_str(line);
                out.push('\n');
            } else {
                eprintln!("{line}");
            }
        }
        _ => {}
    }
}

/// `-n N`: keep the first N rows, all of them for 0.
pub fn limit<T>(v: &mut Vec<T>, n: usize) {
    if n > 0 {
        v.truncate(n);
    }
}
