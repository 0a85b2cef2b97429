//! Differences between two snapshots, per call site and per group.

use crate::group::{group_key, GroupBy};
use crate::record::{merge_duplicates, Record, SiteKey};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// How the call sites of the two snapshots are paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Matching {
    /// Only by identity: file, line, module and function.
    Exact,
    /// By identity, then the sites left over by module, file and function
    /// (lines that moved, as in a kernel upgrade), then those of one
    /// module and function whose file is named two ways (an external
    /// module's file, absolute on one kernel and relative on another).
    Moved,
}

impl Matching {
    pub fn as_str(self) -> &'static str {
        match self {
            Matching::Exact => "exact",
            Matching::Moved => "moved",
        }
    }
}

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

/// How a call site of the new snapshot was paired with one of the old.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// Same file, line, module and function.
    Exact,
    /// Same module, file and function; the line moved.
    Moved,
    /// Same module and function, the file named two ways (absolute in one
    /// snapshot, relative in the other, see [`same_file_two_ways`]); the
    /// line may have moved too.
    Path,
}

impl MatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Moved => "moved",
            MatchKind::Path => "path",
        }
    }
}

/// Whether `a` and `b` are one file named two ways: one relative, the
/// other absolute and ending in `/` and the relative one, at a path
/// component's boundary (`/x/y/modules/a.c` and `modules/a.c`, not
/// `/x/ymodules/a.c`). A kernel names an external module's file by its
/// absolute path (6.12) or relative to the module's directory (7.3, whose
/// Makefile maps the source root away with `-fmacro-prefix-map`).
pub fn same_file_two_ways(a: &str, b: &str) -> bool {
    let (abs, rel) = match (a.starts_with('/'), b.starts_with('/')) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ => return false,
    };
    !rel.is_empty()
        && abs
            .strip_suffix(rel)
            .is_some_and(|head| head.ends_with('/'))
}

/// Change of one call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteDelta {
    /// The site's identity: in the new snapshot, or in the old one for a
    /// vanished site.
    pub key: SiteKey,
    pub status: Status,
    pub change: Change,
    /// The site's line in the old snapshot when it was paired with
    /// another line ([`Matching::Moved`]: by module, file and function, or
    /// by module and function with its file named two ways).
    pub old_line: Option<u32>,
    /// The site's file in the old snapshot when it was paired with its
    /// file named another way ([`MatchKind::Path`]).
    pub old_file: Option<String>,
}

impl SiteDelta {
    /// How the site was paired, or `None` for a new or vanished site: by
    /// its file named two ways if the old file differs (whatever the
    /// line), else as moved if the old line differs, else exactly.
    pub fn matched(&self) -> Option<MatchKind> {
        match (self.status, &self.old_file, self.old_line) {
            (Status::New | Status::Vanished, _, _) => None,
            (_, Some(_), _) => Some(MatchKind::Path),
            (_, None, Some(_)) => Some(MatchKind::Moved),
            (_, None, None) => Some(MatchKind::Exact),
        }
    }
}

/// What [`Matching::Moved`] did: the sites it paired, and those it left
/// unpaired because their function has several sites, not as many in both
/// snapshots (or its file named two ways matches several files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MoveCounts {
    #[serde(rename = "mode")]
    pub matching: Matching,
    /// Sites paired by module, file and function (whose lines moved).
    pub moved: usize,
    /// Of those, the ones whose bytes or calls changed (the others, like
    /// every unchanged site, have no row).
    pub moved_changed: usize,
    /// Sites of a module paired by module and function, their file named
    /// two ways ([`MatchKind::Path`]), whether or not their line moved.
    pub path: usize,
    /// Of those, the ones whose bytes or calls changed.
    pub path_changed: usize,
    /// Functions (module, file, function) with unpaired sites on both
    /// sides but not as many on each, so left unpaired; and functions of a
    /// module whose file named two ways has not as many sites on each side
    /// or could be either of several files on the other side.
    pub ambiguous_funcs: usize,
    /// Their sites in the old snapshot (counted as vanished).
    pub ambiguous_old: usize,
    /// Their sites in the new snapshot (counted as new).
    pub ambiguous_new: usize,
}

impl MoveCounts {
    fn none(matching: Matching) -> MoveCounts {
        MoveCounts {
            matching,
            moved: 0,
            moved_changed: 0,
            path: 0,
            path_changed: 0,
            ambiguous_funcs: 0,
            ambiguous_old: 0,
            ambiguous_new: 0,
        }
    }
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
    /// What the matching of moved lines did.
    pub moves: MoveCounts,
}

/// Which site of the old snapshot each site of the new one is paired with
/// (an index into `old`), and how many `Matching::Moved` paired or left.
///
/// First by identity. With [`Matching::Moved`], the sites left on both
/// sides are then gathered by (module, file, function): where a function
/// has as many unpaired sites in the old snapshot as in the new one, they
/// are paired in line order (one each: the moved site); where the numbers
/// differ, which is which cannot be told, and they stay unpaired.
///
/// Then the sites still unpaired of a module (not the kernel image) are
/// gathered by (module, function) and file. A file of one snapshot and a
/// file of the other that are one file named two ways
/// ([`same_file_two_ways`]) are paired as above: as many sites on each
/// side are paired in line order, else none. A file that is so named in
/// more than one file on the other side (`/x/m/a.c` beside `m/a.c` and
/// `a.c`) cannot be told apart either: the function counts as ambiguous,
/// its sites in those files unpaired. The sites already counted as
/// ambiguous by module, file and function are left out of this step.
fn pair_sites(
    old: &[Record],
    new: &[Record],
    matching: Matching,
) -> (Vec<Option<usize>>, MoveCounts) {
    let old_index: HashMap<SiteKey, usize> =
        old.iter().enumerate().map(|(i, r)| (r.key(), i)).collect();
    let mut pairs: Vec<Option<usize>> = new
        .iter()
        .map(|r| old_index.get(&r.key()).copied())
        .collect();
    let mut counts = MoveCounts::none(matching);
    if matching == Matching::Exact {
        return (pairs, counts);
    }
    let mut old_paired = vec![false; old.len()];
    for i in pairs.iter().flatten() {
        old_paired[*i] = true;
    }
    // (module, file, func) -> (unpaired old, unpaired new), by index.
    type Func<'a> = (Option<&'a str>, &'a str, &'a str);
    let mut left: BTreeMap<Func, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, r) in old.iter().enumerate().filter(|(i, _)| !old_paired[*i]) {
        left.entry((r.module.as_deref(), &r.file, &r.func))
            .or_default()
            .0
            .push(i);
    }
    for (j, r) in new.iter().enumerate().filter(|(j, _)| pairs[*j].is_none()) {
        left.entry((r.module.as_deref(), &r.file, &r.func))
            .or_default()
            .1
            .push(j);
    }
    // The sites still unpaired and not counted ambiguous: the candidates
    // for pairing by a file named two ways.
    let mut old_left = vec![false; old.len()];
    let mut new_left = vec![false; new.len()];
    for (olds, news) in left.into_values() {
        if olds.is_empty() || news.is_empty() {
            olds.iter().for_each(|&i| old_left[i] = true);
            news.iter().for_each(|&j| new_left[j] = true);
            continue;
        }
        if olds.len() != news.len() {
            counts.ambiguous_funcs += 1;
            counts.ambiguous_old += olds.len();
            counts.ambiguous_new += news.len();
            continue;
        }
        counts.moved += pair_in_line_order(old, new, olds, news, &mut pairs);
    }

    // (module, func) -> (unpaired old, unpaired new), each by file.
    type Files<'a> = BTreeMap<&'a str, Vec<usize>>;
    let mut left: BTreeMap<(&str, &str), (Files, Files)> = BTreeMap::new();
    for (i, r) in old.iter().enumerate().filter(|(i, _)| old_left[*i]) {
        if let Some(m) = r.module.as_deref() {
            let e = left.entry((m, &r.func)).or_default();
            e.0.entry(&r.file).or_default().push(i);
        }
    }
    for (j, r) in new.iter().enumerate().filter(|(j, _)| new_left[*j]) {
        if let Some(m) = r.module.as_deref() {
            let e = left.entry((m, &r.func)).or_default();
            e.1.entry(&r.file).or_default().push(j);
        }
    }
    for (old_files, new_files) in left.into_values() {
        let links: Vec<(&str, &str)> = old_files
            .keys()
            .flat_map(|&fo| {
                new_files
                    .keys()
                    .filter(move |&&fnew| same_file_two_ways(fo, fnew))
                    .map(move |&fnew| (fo, fnew))
            })
            .collect();
        // How many files of the other side each file is linked to.
        let (mut old_links, mut new_links) = (HashMap::new(), HashMap::new());
        for &(fo, fnew) in &links {
            *old_links.entry(fo).or_insert(0) += 1;
            *new_links.entry(fnew).or_insert(0) += 1;
        }
        let mut unclear: (BTreeSet<&str>, BTreeSet<&str>) = Default::default();
        for &(fo, fnew) in &links {
            if old_links[fo] > 1 || new_links[fnew] > 1 {
                unclear.0.insert(fo);
                unclear.1.insert(fnew);
                continue;
            }
            let (olds, news) = (&old_files[fo], &new_files[fnew]);
            if olds.len() != news.len() {
                counts.ambiguous_funcs += 1;
                counts.ambiguous_old += olds.len();
                counts.ambiguous_new += news.len();
                continue;
            }
            counts.path += pair_in_line_order(old, new, olds.clone(), news.clone(), &mut pairs);
        }
        if !unclear.0.is_empty() {
            counts.ambiguous_funcs += 1;
            counts.ambiguous_old += unclear.0.iter().map(|f| old_files[f].len()).sum::<usize>();
            counts.ambiguous_new += unclear.1.iter().map(|f| new_files[f].len()).sum::<usize>();
        }
    }
    (pairs, counts)
}

/// Pair `olds` with `news` (as many each) in line order; the number paired.
fn pair_in_line_order(
    old: &[Record],
    new: &[Record],
    mut olds: Vec<usize>,
    mut news: Vec<usize>,
    pairs: &mut [Option<usize>],
) -> usize {
    olds.sort_by_key(|&i| old[i].line);
    news.sort_by_key(|&j| new[j].line);
    for (&i, &j) in olds.iter().zip(&news) {
        pairs[j] = Some(i);
    }
    news.len()
}

/// Compare two snapshots. Duplicate lines of one site are summed first.
/// Sites are paired as `matching` says ([`pair_sites`]): a site paired by
/// module, file and function has the new snapshot's identity and its old
/// line in [`SiteDelta::old_line`]; one paired with its file named two
/// ways has its old file in [`SiteDelta::old_file`] too.
pub fn diff(
    old: &[Record],
    new: &[Record],
    by: GroupBy,
    depth: Option<usize>,
    matching: Matching,
) -> Diff {
    let old = merge_duplicates(old);
    let new = merge_duplicates(new);
    let (pairs, mut moves) = pair_sites(&old, &new, matching);
    let mut old_paired = vec![false; old.len()];

    let mut sites = Vec::new();
    for (r, pair) in new.iter().zip(&pairs) {
        let key = r.key();
        let d = match *pair {
            Some(i) => {
                let o = &old[i];
                old_paired[i] = true;
                if o.bytes == r.bytes && o.calls == r.calls {
                    continue;
                }
                let status = match r.bytes.cmp(&o.bytes) {
                    Ordering::Greater => Status::Grown,
                    Ordering::Less => Status::Shrunk,
                    Ordering::Equal => Status::Same,
                };
                let old_line = (o.line != r.line).then_some(o.line);
                let old_file = (o.file != r.file).then(|| o.file.clone());
                if old_file.is_some() {
                    moves.path_changed += 1;
                } else if old_line.is_some() {
                    moves.moved_changed += 1;
                }
                SiteDelta {
                    key,
                    status,
                    change: Change::new(o.bytes, r.bytes, o.calls, r.calls),
                    old_line,
                    old_file,
                }
            }
            None => SiteDelta {
                key,
                status: Status::New,
                change: Change::new(0, r.bytes, 0, r.calls),
                old_line: None,
                old_file: None,
            },
        };
        sites.push(d);
    }
    for (o, _) in old.iter().zip(&old_paired).filter(|(_, p)| !**p) {
        sites.push(SiteDelta {
            key: o.key(),
            status: Status::Vanished,
            change: Change::new(o.bytes, 0, o.calls, 0),
            old_line: None,
            old_file: None,
        });
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
        moves,
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
        let d = diff(&old, &new, GroupBy::Subsystem, None, Matching::Moved);
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
        // Nothing moved: the two matchings agree.
        assert_eq!(d.moves, MoveCounts::none(Matching::Moved));
        let e = diff(&old, &new, GroupBy::Subsystem, None, Matching::Exact);
        assert_eq!(e.sites, d.sites);
        assert_eq!(e.moves, MoveCounts::none(Matching::Exact));
    }

    fn at(bytes: i64, file: &str, line: u32, module: Option<&str>, func: &str) -> Record {
        Record {
            line,
            module: module.map(Into::into),
            ..rec(bytes, 1, file, func)
        }
    }

    /// (function, line, status, old line, change in bytes) of each row.
    fn rows(d: &Diff) -> Vec<(&str, u32, Status, Option<u32>, i64)> {
        d.sites
            .iter()
            .map(|s| {
                let k = &s.key;
                (
                    k.func.as_str(),
                    k.line,
                    s.status,
                    s.old_line,
                    s.change.delta_bytes,
                )
            })
            .collect()
    }

    #[test]
    fn moved_lines_pair_by_module_file_and_function() {
        let old = vec![
            // Unique function, moved 10 -> 14, grew.
            at(100, "mm/a.c", 10, None, "uniq"),
            // Unique, moved 20 -> 25, unchanged: paired, no row.
            at(5, "mm/a.c", 20, None, "still"),
            // Three sites, all moved by +3: paired in line order.
            at(1, "mm/b.c", 30, None, "three"),
            at(2, "mm/b.c", 40, None, "three"),
            at(3, "mm/b.c", 50, None, "three"),
            // Two old sites, one new: which is which is unknown.
            at(7, "mm/c.c", 60, None, "amb"),
            at(8, "mm/c.c", 70, None, "amb"),
            // Same file and function in another module: not paired with
            // the built-in one.
            at(9, "drivers/d.c", 80, Some("m1"), "probe"),
            // Exact match beside a moved sibling: only the sibling moves.
            at(4, "mm/e.c", 90, None, "pair"),
            at(6, "mm/e.c", 95, None, "pair"),
            // Renamed file: out of scope, vanished.
            at(11, "lib/alloc_tag.c", 100, None, "tag"),
        ];
        let new = vec![
            at(150, "mm/a.c", 14, None, "uniq"),
            at(5, "mm/a.c", 25, None, "still"),
            at(1, "mm/b.c", 33, None, "three"),
            at(20, "mm/b.c", 43, None, "three"),
            at(3, "mm/b.c", 53, None, "three"),
            at(8, "mm/c.c", 75, None, "amb"),
            at(9, "drivers/d.c", 81, Some("m2"), "probe"),
            at(4, "mm/e.c", 90, None, "pair"),
            at(16, "mm/e.c", 99, None, "pair"),
            at(11, "mm/alloc_tag.c", 100, None, "tag"),
        ];
        let d = diff(&old, &new, GroupBy::Subsystem, None, Matching::Moved);
        use Status::*;
        assert_eq!(
            rows(&d),
            vec![
                ("uniq", 14, Grown, Some(10), 50),
                ("three", 43, Grown, Some(40), 18),
                // Ties by site: lib/ before mm/, line 80 before 81.
                ("tag", 100, Vanished, None, -11),
                ("tag", 100, New, None, 11),
                ("pair", 99, Grown, Some(95), 10),
                ("probe", 80, Vanished, None, -9),
                ("probe", 81, New, None, 9),
                ("amb", 70, Vanished, None, -8),
                ("amb", 75, New, None, 8),
                ("amb", 60, Vanished, None, -7),
            ]
        );
        assert_eq!(
            d.moves,
            MoveCounts {
                matching: Matching::Moved,
                moved: 6,
                moved_changed: 3,
                path: 0,
                path_changed: 0,
                ambiguous_funcs: 1,
                ambiguous_old: 2,
                ambiguous_new: 1,
            }
        );
        assert_eq!(
            d.counts,
            StatusCounts {
                grown: 3,
                shrunk: 0,
                new: 3,
                vanished: 4,
                same: 0
            }
        );
        assert_eq!(d.sites[0].matched(), Some(MatchKind::Moved));
        assert_eq!(d.sites[2].matched(), None);
        // The totals do not depend on the pairing.
        assert_eq!(d.totals.delta_bytes, 227 - 156);

        // Exact: every moved site is new and vanished.
        let e = diff(&old, &new, GroupBy::Subsystem, None, Matching::Exact);
        assert_eq!(
            (e.counts.grown, e.counts.new, e.counts.vanished),
            (0, 9, 10)
        );
        assert_eq!(e.moves, MoveCounts::none(Matching::Exact));
        assert_eq!(e.totals, d.totals);
        assert_eq!(e.groups, d.groups);
    }

    #[test]
    fn moved_same_bytes_other_calls_is_same() {
        let old = vec![rec(64, 1, "mm/a.c", "f")];
        let mut new = vec![rec(64, 2, "mm/a.c", "f")];
        new[0].line = 7;
        let d = diff(&old, &new, GroupBy::Func, None, Matching::Moved);
        assert_eq!(rows(&d), vec![("f", 7, Status::Same, Some(1), 0)]);
        assert_eq!(d.sites[0].change.delta_calls, 1);
        assert_eq!((d.moves.moved, d.moves.moved_changed), (1, 1));
        assert_eq!(d.sites[0].matched(), Some(MatchKind::Moved));
        // Paired exactly, the site has no old line.
        let d = diff(&old, &old, GroupBy::Func, None, Matching::Moved);
        assert!(d.sites.is_empty());
        let mut later = old.clone();
        later[0].bytes = 128;
        let d = diff(&old, &later, GroupBy::Func, None, Matching::Moved);
        assert_eq!(rows(&d), vec![("f", 1, Status::Grown, None, 64)]);
        assert_eq!(d.sites[0].matched(), Some(MatchKind::Exact));
    }

    #[test]
    fn same_file_two_ways_at_a_component_boundary() {
        let yes = [
            ("/x/y/modules/a.c", "modules/a.c"),
            ("modules/a.c", "/x/y/modules/a.c"),
            ("/a.c", "a.c"),
            ("/x/y/modules/a.c", "y/modules/a.c"),
        ];
        for (a, b) in yes {
            assert!(same_file_two_ways(a, b), "{a} {b}");
        }
        let no = [
            // Not at a component boundary.
            ("/x/ymodules/a.c", "modules/a.c"),
            ("/x/y/modules/a.c", "odules/a.c"),
            // Both absolute, both relative, or the same name.
            ("/x/modules/a.c", "/y/modules/a.c"),
            ("/x/modules/a.c", "/x/modules/a.c"),
            ("x/modules/a.c", "modules/a.c"),
            ("modules/a.c", "modules/a.c"),
            // Another file, or no relative name.
            ("/x/modules/a.c", "modules/b.c"),
            ("/x/modules/a.c", ""),
            ("/x/", ""),
        ];
        for (a, b) in no {
            assert!(!same_file_two_ways(a, b), "{a} {b}");
        }
    }

    #[test]
    fn path_pairs_a_modules_file_named_two_ways() {
        let m = Some("m");
        let old = vec![
            // Absolute (6.12) then relative (7.3), line moved, grew.
            at(100, "/x/y/modules/a.c", 82, m, "kmalloc100"),
            // Same line, only the file's name differs: grew.
            at(5, "/x/y/modules/a.c", 90, m, "same_line"),
            // Unchanged: paired, no row.
            at(40, "/x/y/modules/a.c", 120, m, "still"),
            // Two sites, two sites: in line order.
            at(1, "/x/y/modules/a.c", 30, m, "two"),
            at(2, "/x/y/modules/a.c", 40, m, "two"),
            // Relative then absolute (a diff from 7.3 to 6.12).
            at(6, "rev/c.c", 3, m, "rev"),
            // Not at a component boundary: never paired.
            at(3, "/x/ymodules/b.c", 10, m, "edge"),
            // The kernel image: not paired by path.
            at(2, "/build/lib/z.c", 1, None, "kern"),
            // Two modules with the same relative file: each with its own.
            at(4, "/src/m1/k.c", 5, Some("m1"), "probe"),
            at(6, "/src/m2/k.c", 5, Some("m2"), "probe"),
        ];
        let new = vec![
            at(150, "modules/a.c", 152, m, "kmalloc100"),
            at(7, "modules/a.c", 90, m, "same_line"),
            at(40, "modules/a.c", 190, m, "still"),
            at(1, "modules/a.c", 35, m, "two"),
            at(12, "modules/a.c", 45, m, "two"),
            at(9, "/o/rev/c.c", 4, m, "rev"),
            at(3, "modules/b.c", 10, m, "edge"),
            at(2, "lib/z.c", 1, None, "kern"),
            at(8, "k.c", 5, Some("m1"), "probe"),
            at(6, "k.c", 7, Some("m2"), "probe"),
        ];
        let d = diff(&old, &new, GroupBy::Subsystem, None, Matching::Moved);
        use Status::*;
        let got: Vec<_> = d
            .sites
            .iter()
            .map(|s| {
                (
                    s.key.location(),
                    s.status,
                    s.old_file.as_deref(),
                    s.old_line,
                    s.matched(),
                    s.change.delta_bytes,
                )
            })
            .collect();
        let path = Some(MatchKind::Path);
        let abs = Some("/x/y/modules/a.c");
        assert_eq!(
            got,
            vec![
                ("modules/a.c:152".into(), Grown, abs, Some(82), path, 50),
                ("modules/a.c:45".into(), Grown, abs, Some(40), path, 10),
                ("k.c:5".into(), Grown, Some("/src/m1/k.c"), None, path, 4),
                // Of as many bytes: a change of calls first, then by site
                // (`/` sorts before letters).
                ("/x/ymodules/b.c:10".into(), Vanished, None, None, None, -3),
                ("modules/b.c:10".into(), New, None, None, None, 3),
                (
                    "/o/rev/c.c:4".into(),
                    Grown,
                    Some("rev/c.c"),
                    Some(3),
                    path,
                    3
                ),
                ("/build/lib/z.c:1".into(), Vanished, None, None, None, -2),
                ("lib/z.c:1".into(), New, None, None, None, 2),
                ("modules/a.c:90".into(), Grown, abs, None, path, 2),
            ]
        );
        assert_eq!(
            d.moves,
            MoveCounts {
                matching: Matching::Moved,
                moved: 0,
                moved_changed: 0,
                path: 8,
                path_changed: 5,
                ambiguous_funcs: 0,
                ambiguous_old: 0,
                ambiguous_new: 0,
            }
        );
        // By identity only, nothing is paired but the unchanged ones.
        let e = diff(&old, &new, GroupBy::Subsystem, None, Matching::Exact);
        assert_eq!((e.counts.new, e.counts.vanished), (10, 10));
        assert_eq!(e.moves, MoveCounts::none(Matching::Exact));
        assert!(e.sites.iter().all(|s| s.old_file.is_none()));
    }

    #[test]
    fn path_leaves_what_cannot_be_told_apart() {
        let m = Some("m");
        let old = vec![
            // Two old sites, one new: ambiguous.
            at(1, "/x/y/modules/a.c", 100, m, "amb"),
            at(2, "/x/y/modules/a.c", 110, m, "amb"),
            // One old file, named so by two new ones: ambiguous.
            at(3, "/s/m/a.c", 1, m, "multi"),
            // Ambiguous by module, file and function (2 old, 1 new): not
            // paired again by path with the new absolute name.
            at(4, "modules/q.c", 1, m, "mix"),
            at(5, "modules/q.c", 2, m, "mix"),
        ];
        let new = vec![
            at(10, "modules/a.c", 200, m, "amb"),
            at(20, "m/a.c", 1, m, "multi"),
            at(30, "a.c", 1, m, "multi"),
            at(40, "modules/q.c", 3, m, "mix"),
            at(50, "/w/modules/q.c", 3, m, "mix"),
        ];
        let d = diff(&old, &new, GroupBy::Subsystem, None, Matching::Moved);
        assert!(d.sites.iter().all(|s| s.matched().is_none()));
        assert_eq!((d.counts.new, d.counts.vanished), (5, 5));
        assert_eq!(
            d.moves,
            MoveCounts {
                matching: Matching::Moved,
                moved: 0,
                moved_changed: 0,
                path: 0,
                path_changed: 0,
                // amb (2 old, 1 new), multi (1 old, 2 new), mix by module,
                // file and function (2 old, 1 new).
                ambiguous_funcs: 3,
                ambiguous_old: 5,
                ambiguous_new: 4,
            }
        );
    }
}
