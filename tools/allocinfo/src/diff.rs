//! Differences between two snapshots, per call site and per group.

use crate::group::{group_key, GroupBy};
use crate::record::{merge_duplicates, Record, SiteKey};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

/// What happened to a call site between the two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Only in the new snapshot.
    New,
    /// Only in the old snapshot.
    Vanished,
    /// More bytes than before.
    Grown,
    /// Fewer bytes than before.
    Shrunk,
    /// Same bytes, different number of calls.
    Same,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Vanished => "vanished",
            Status::Grown => "grown",
            Status::Shrunk => "shrunk",
            Status::Same => "same",
        }
    }
}

/// Bytes and live allocations in the old and the new snapshot, and their
/// change: of a call site, a group or all the sites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    pub old_bytes: i64,
    pub new_bytes: i64,
    pub delta_bytes: i64,
    pub old_calls: u64,
    pub new_calls: u64,
    pub delta_calls: i64,
}

impl Change {
    /// From old to new bytes and calls; the changes saturate.
    pub fn new(old_bytes: i64, new_bytes: i64, old_calls: u64, new_calls: u64) -> Change {
        let calls = new_calls as i128 - old_calls as i128;
        Change {
            old_bytes,
            new_bytes,
            delta_bytes: new_bytes.saturating_sub(old_bytes),
            old_calls,
            new_calls,
            delta_calls: calls.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        }
    }

    /// The order of the biggest change first: by absolute byte change, then
    /// by absolute call change.
    fn biggest_first(&self, other: &Change) -> Ordering {
        other
            .delta_bytes
            .unsigned_abs()
            .cmp(&self.delta_bytes.unsigned_abs())
            .then_with(|| {
                other
                    .delta_calls
                    .unsigned_abs()
                    .cmp(&self.delta_calls.unsigned_abs())
            })
    }
}

/// Change of one call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteDelta {
    pub key: SiteKey,
    pub status: Status,
    pub change: Change,
}

/// Change of one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupDelta {
    pub group: String,
    #[serde(flatten)]
    pub change: Change,
}

/// Number of sites per [`Status`] over all changed sites (before any
/// `--min-bytes` or row limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    pub grown: usize,
    pub shrunk: usize,
    pub new: usize,
    pub vanished: usize,
    pub same: usize,
}

impl StatusCounts {
    pub fn total(&self) -> usize {
        self.grown + self.shrunk + self.new + self.vanished + self.same
    }
}

/// Result of [`diff`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// Changed, new and vanished sites (unchanged ones are left out), sorted
    /// by absolute byte change descending, then absolute call change
    /// descending, then site.
    pub sites: Vec<SiteDelta>,
    /// Groups whose bytes or calls changed, same order.
    pub groups: Vec<GroupDelta>,
    /// Over all (filtered) sites.
    pub totals: Change,
    pub counts: StatusCounts,
    pub group_by: GroupBy,
}

/// Compare two snapshots. Duplicate lines of one site are summed first.
pub fn diff(old: &[Record], new: &[Record], by: GroupBy, depth: Option<usize>) -> Diff {
    let old = merge_duplicates(old);
    let new = merge_duplicates(new);
    let old_map: HashMap<SiteKey, &Record> = old.iter().map(|r| (r.key(), r)).collect();
    let new_map: HashMap<SiteKey, &Record> = new.iter().map(|r| (r.key(), r)).collect();

    let mut sites = Vec::new();
    for r in &new {
        let key = r.key();
        let d = match old_map.get(&key) {
            Some(o) => {
                if o.bytes == r.bytes && o.calls == r.calls {
                    continue;
                }
                let status = match r.bytes.cmp(&o.bytes) {
                    Ordering::Greater => Status::Grown,
                    Ordering::Less => Status::Shrunk,
                    Ordering::Equal => Status::Same,
                };
                SiteDelta {
                    key,
                    status,
                    change: Change::new(o.bytes, r.bytes, o.calls, r.calls),
                }
            }
            None => SiteDelta {
                key,
                status: Status::New,
                change: Change::new(0, r.bytes, 0, r.calls),
            },
        };
        sites.push(d);
    }
    for o in &old {
        let key = o.key();
        if !new_map.contains_key(&key) {
            sites.push(SiteDelta {
                key,
                status: Status::Vanished,
                change: Change::new(o.bytes, 0, o.calls, 0),
            });
        }
    }
    sites.sort_by(|a, b| {
        a.change
            .biggest_first(&b.change)
            .then_with(|| a.key.cmp(&b.key))
    });

    // (old_bytes, new_bytes, old_calls, new_calls) per group.
    let mut acc: BTreeMap<String, (i64, i64, u64, u64)> = BTreeMap::new();
    for r in &old {
        let e = acc.entry(group_key(r, by, depth)).or_default();
        e.0 = e.0.saturating_add(r.bytes);
        e.2 = e.2.saturating_add(r.calls);
    }
    for r in &new {
        let e = acc.entry(group_key(r, by, depth)).or_default();
        e.1 = e.1.saturating_add(r.bytes);
        e.3 = e.3.saturating_add(r.calls);
    }
    let mut groups: Vec<GroupDelta> = acc
        .into_iter()
        .filter(|(_, (ob, nb, oc, nc))| ob != nb || oc != nc)
        .map(|(group, (ob, nb, oc, nc))| GroupDelta {
            group,
            change: Change::new(ob, nb, oc, nc),
        })
        .collect();
    groups.sort_by(|a, b| {
        a.change
            .biggest_first(&b.change)
            .then_with(|| a.group.cmp(&b.group))
    });

    let sum = |rs: &[Record]| {
        rs.iter().fold((0i64, 0u64), |(b, c), r| {
            (b.saturating_add(r.bytes), c.saturating_add(r.calls))
        })
    };
    let mut counts = StatusCounts::default();
    for s in &sites {
        match s.status {
            Status::Grown => counts.grown += 1,
            Status::Shrunk => counts.shrunk += 1,
            Status::New => counts.new += 1,
            Status::Vanished => counts.vanished += 1,
            Status::Same => counts.same += 1,
        }
    }
    let (ob, oc) = sum(&old);
    let (nb, nc) = sum(&new);
    Diff {
        sites,
        groups,
        totals: Change::new(ob, nb, oc, nc),
        counts,
        group_by: by,
    }
}

impl Diff {
    /// Drop site and group rows whose absolute byte change is below `min`.
    pub fn retain_min_bytes(&mut self, min: i64) {
        let min = min.unsigned_abs();
        self.sites
            .retain(|s| s.change.delta_bytes.unsigned_abs() >= min);
        self.groups
            .retain(|g| g.change.delta_bytes.unsigned_abs() >= min);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(bytes: i64, calls: u64, file: &str, func: &str) -> Record {
        Record {
            bytes,
            calls,
            file: file.into(),
            line: 1,
            module: None,
            func: func.into(),
            extra: vec![],
        }
    }

    #[test]
    fn statuses_order_and_groups() {
        let old = vec![
            rec(100, 1, "mm/a.c", "a"),
            rec(50, 5, "mm/b.c", "b"),
            rec(10, 1, "fs/c.c", "c"),
            rec(7, 7, "fs/same.c", "s"),
            rec(3, 3, "lib/calls.c", "k"),
        ];
        let new = vec![
            rec(400, 4, "mm/a.c", "a"),
            rec(20, 2, "mm/b.c", "b"),
            rec(7, 7, "fs/same.c", "s"),
            rec(3, 9, "lib/calls.c", "k"),
            rec(64, 1, "net/d.c", "d"),
        ];
        let d = diff(&old, &new, GroupBy::Subsystem, None);
        let got: Vec<(&str, Status, i64)> = d
            .sites
            .iter()
            .map(|s| (s.key.func.as_str(), s.status, s.change.delta_bytes))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Status::Grown, 300),
                ("d", Status::New, 64),
                ("b", Status::Shrunk, -30),
                ("c", Status::Vanished, -10),
                ("k", Status::Same, 0),
            ]
        );
        let g: Vec<(&str, i64)> = d
            .groups
            .iter()
            .map(|g| (g.group.as_str(), g.change.delta_bytes))
            .collect();
        assert_eq!(g, vec![("mm", 270), ("net", 64), ("fs", -10), ("lib", 0)]);
        assert_eq!(d.totals.delta_bytes, 324);
        let mut d2 = d.clone();
        d2.retain_min_bytes(64);
        assert_eq!(d2.sites.len(), 2);
        assert_eq!(d2.groups.len(), 2);
    }
}
