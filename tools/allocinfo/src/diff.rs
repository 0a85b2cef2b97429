//! Differences between two snapshots, per call site and per group.

use crate::group::{group_key, GroupBy};
use crate::record::{merge_duplicates, Record, SiteKey};
use serde::Serialize;
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

/// Change of one call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteDelta {
    pub key: SiteKey,
    pub status: Status,
    pub old_bytes: i64,
    pub new_bytes: i64,
    pub old_calls: u64,
    pub new_calls: u64,
}

fn calls_delta(old: u64, new: u64) -> i64 {
    let d = new as i128 - old as i128;
    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

impl SiteDelta {
    pub fn delta_bytes(&self) -> i64 {
        self.new_bytes.saturating_sub(self.old_bytes)
    }
    pub fn delta_calls(&self) -> i64 {
        calls_delta(self.old_calls, self.new_calls)
    }
}

/// Change of one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupDelta {
    pub group: String,
    pub old_bytes: i64,
    pub new_bytes: i64,
    pub delta_bytes: i64,
    pub old_calls: u64,
    pub new_calls: u64,
    pub delta_calls: i64,
}

/// Totals over all (filtered) sites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub old_bytes: i64,
    pub new_bytes: i64,
    pub delta_bytes: i64,
    pub old_calls: u64,
    pub new_calls: u64,
    pub delta_calls: i64,
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
    pub totals: Totals,
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
                    std::cmp::Ordering::Greater => Status::Grown,
                    std::cmp::Ordering::Less => Status::Shrunk,
                    std::cmp::Ordering::Equal => Status::Same,
                };
                SiteDelta {
                    key,
                    status,
                    old_bytes: o.bytes,
                    new_bytes: r.bytes,
                    old_calls: o.calls,
                    new_calls: r.calls,
                }
            }
            None => SiteDelta {
                key,
                status: Status::New,
                old_bytes: 0,
                new_bytes: r.bytes,
                old_calls: 0,
                new_calls: r.calls,
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
                old_bytes: o.bytes,
                new_bytes: 0,
                old_calls: o.calls,
                new_calls: 0,
            });
        }
    }
    sites.sort_by(|a, b| {
        b.delta_bytes()
            .unsigned_abs()
            .cmp(&a.delta_bytes().unsigned_abs())
            .then_with(|| {
                b.delta_calls()
                    .unsigned_abs()
                    .cmp(&a.delta_calls().unsigned_abs())
            })
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
            old_bytes: ob,
            new_bytes: nb,
            delta_bytes: nb.saturating_sub(ob),
            old_calls: oc,
            new_calls: nc,
            delta_calls: calls_delta(oc, nc),
        })
        .collect();
    groups.sort_by(|a, b| {
        b.delta_bytes
            .unsigned_abs()
            .cmp(&a.delta_bytes.unsigned_abs())
            .then_with(|| {
                b.delta_calls
                    .unsigned_abs()
                    .cmp(&a.delta_calls.unsigned_abs())
            })
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
        totals: Totals {
            old_bytes: ob,
            new_bytes: nb,
            delta_bytes: nb.saturating_sub(ob),
            old_calls: oc,
            new_calls: nc,
            delta_calls: calls_delta(oc, nc),
        },
        counts,
        group_by: by,
    }
}

impl Diff {
    /// Drop site and group rows whose absolute byte change is below `min`.
    pub fn retain_min_bytes(&mut self, min: i64) {
        let min = min.unsigned_abs();
        self.sites.retain(|s| s.delta_bytes().unsigned_abs() >= min);
        self.groups.retain(|g| g.delta_bytes.unsigned_abs() >= min);
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
            .map(|s| (s.key.func.as_str(), s.status, s.delta_bytes()))
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
            .map(|g| (g.group.as_str(), g.delta_bytes))
            .collect();
        assert_eq!(g, vec![("mm", 270), ("net", 64), ("fs", -10), ("lib", 0)]);
        assert_eq!(d.totals.delta_bytes, 324);
        let mut d2 = d.clone();
        d2.retain_min_bytes(64);
        assert_eq!(d2.sites.len(), 2);
        assert_eq!(d2.groups.len(), 2);
    }
}
