//! Timestamped snapshot files: `allocinfo-YYYYmmddTHHMMSSZ.txt` (UTC), or
//! `allocinfo-YYYYmmddTHHMMSSZ.compact` for the compact form.
//!
//! Text snapshots are byte-identical copies of the source; the time is only
//! in the file name, so every allocinfo reader can still parse them. Compact
//! snapshots ([`crate::compact`]) are read by this tool only.

use chrono::{DateTime, NaiveDateTime, Utc};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub const PREFIX: &str = "allocinfo-";
pub const SUFFIX: &str = ".txt";
/// Suffix of snapshots in the compact form.
pub const COMPACT_SUFFIX: &str = ".compact";
/// strftime format of the timestamp in snapshot names.
pub const TIME_FORMAT: &str = "%Y%m%dT%H%M%SZ";

/// File name for a snapshot taken at `t`.
pub fn snapshot_name(t: DateTime<Utc>) -> String {
    snapshot_name_with(t, SUFFIX)
}

/// File name for a snapshot taken at `t`, with `suffix` ([`SUFFIX`] or
/// [`COMPACT_SUFFIX`]).
pub fn snapshot_name_with(t: DateTime<Utc>, suffix: &str) -> String {
    format!("{PREFIX}{}{suffix}", t.format(TIME_FORMAT))
}

/// Time encoded in a snapshot file name (text or compact), if the name has
/// the snapshot form.
pub fn snapshot_time(path: &Path) -> Option<DateTime<Utc>> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_prefix(PREFIX)?;
    let ts = name
        .strip_suffix(SUFFIX)
        .or_else(|| name.strip_suffix(COMPACT_SUFFIX))?;
    if ts.len() != 16 {
        return None;
    }
    NaiveDateTime::parse_from_str(ts, TIME_FORMAT)
        .ok()
        .map(|n| n.and_utc())
}

/// Snapshot files in `dir`, ordered by their timestamped names (oldest first).
pub fn list_snapshots(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && snapshot_time(p).is_some())
        .collect();
    out.sort();
    Ok(out)
}

/// Write `contents` to `dir/allocinfo-<t>.txt`. The file appears atomically
/// (written under a hidden temporary name, then renamed). Fails with
/// [`io::ErrorKind::AlreadyExists`] if a snapshot with that name exists.
pub fn write_snapshot(dir: &Path, contents: &[u8], t: DateTime<Utc>) -> io::Result<PathBuf> {
    write_snapshot_with(dir, contents, t, SUFFIX)
}

/// [`write_snapshot`] with another suffix ([`COMPACT_SUFFIX`]).
pub fn write_snapshot_with(
    dir: &Path,
    contents: &[u8],
    t: DateTime<Utc>,
    suffix: &str,
) -> io::Result<PathBuf> {
    let name = snapshot_name_with(t, suffix);
    let path = dir.join(&name);
    if path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} already exists", path.display()),
        ));
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map(|_| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn names_round_trip() {
        let t = Utc.with_ymd_and_hms(2025, 3, 7, 14, 5, 9).unwrap();
        let name = snapshot_name(t);
        assert_eq!(name, "allocinfo-20250307T140509Z.txt");
        assert_eq!(snapshot_time(Path::new(&format!("/x/{name}"))), Some(t));
        assert_eq!(snapshot_time(Path::new("allocinfo-2025.txt")), None);
        assert_eq!(snapshot_time(Path::new("upstream-6.12.txt")), None);
        let c = snapshot_name_with(t, COMPACT_SUFFIX);
        assert_eq!(c, "allocinfo-20250307T140509Z.compact");
        assert_eq!(snapshot_time(Path::new(&c)), Some(t));
        assert_eq!(
            snapshot_time(Path::new("allocinfo-20250307T140509Z.gz")),
            None
        );
    }

    #[test]
    fn writes_listed_and_no_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let t1 = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let t0 = Utc.with_ymd_and_hms(2024, 12, 31, 23, 59, 59).unwrap();
        let p1 = write_snapshot(dir.path(), b"one", t1).unwrap();
        let p0 = write_snapshot(dir.path(), b"zero", t0).unwrap();
        let pc = write_snapshot_with(dir.path(), b"c", t0, COMPACT_SUFFIX).unwrap();
        fs::write(dir.path().join("notes.txt"), "x").unwrap();
        assert_eq!(
            list_snapshots(dir.path()).unwrap(),
            vec![pc, p0, p1.clone()]
        );
        assert_eq!(fs::read(&p1).unwrap(), b"one");
        let e = write_snapshot(dir.path(), b"again", t1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    }
}
