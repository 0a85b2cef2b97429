//! Allocation and free rates between two captures, from the churn keys of
//! allocprof's `c` flag (`allocated:BYTES/CALLS freed:BYTES/CALLS`,
//! [`Churn`]): what each call site allocated and freed between them, and
//! per second.
//!
//! Only the call sites with the keys in both captures have a rate. The
//! others are sorted out as what they tell: the keys in one capture only
//! (`c` set or taken away between them, or the site came or went), counts
//! that went down (`c` set again between them: its counts started at zero
//! again), or no keys at all (no `c`, most sites).

use crate::record::{Churn, Record, SiteKey};
use std::collections::{HashMap, HashSet};

/// What a call site allocated and freed between the two captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delta {
    pub allocs: u64,
    pub alloc_bytes: u64,
    /// Signed, as allocprof's frees are (one off beside a free under way).
    pub frees: i64,
    pub free_bytes: i64,
}

impl Delta {
    /// `new - old`, `None` when an allocation count went down: the counts
    /// started at zero again in between.
    pub fn between(old: Churn, new: Churn) -> Option<Delta> {
        Some(Delta {
            allocs: new.allocs.checked_sub(old.allocs)?,
            alloc_bytes: new.alloc_bytes.checked_sub(old.alloc_bytes)?,
            frees: new.frees.wrapping_sub(old.frees),
            free_bytes: new.free_bytes.wrapping_sub(old.free_bytes),
        })
    }
}

/// A call site with a rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteRate {
    /// The site in the newer capture (its live bytes and calls now).
    pub record: Record,
    pub delta: Delta,
}

/// A per-second figure of `count` over `ms` milliseconds.
pub fn per_second(count: f64, ms: i64) -> f64 {
    count * 1000.0 / ms as f64
}

/// The call sites of two captures, sorted out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rates {
    /// The sites with the keys in both, the most allocations first (then
    /// the most bytes allocated, then by identity).
    pub sites: Vec<SiteRate>,
    /// Sites with the keys in the older capture only.
    pub old_only: Vec<SiteKey>,
    /// Sites with the keys in the newer capture only.
    pub new_only: Vec<SiteKey>,
    /// Sites with the keys in both whose allocations went down (in calls
    /// or bytes): `(site, old allocations, new allocations)`.
    pub restarted: Vec<(SiteKey, u64, u64)>,
    /// Sites in either capture without the keys in either.
    pub without: usize,
}

/// Pair the sites of `old` and `new` (each with one record a site, as
/// [`crate::record::merge_duplicates`] leaves them) by identity.
pub fn rates(old: &[Record], new: &[Record]) -> Rates {
    let old_churn: HashMap<SiteKey, Churn> = old
        .iter()
        .filter_map(|r| Some((r.key(), r.churn()?)))
        .collect();
    let mut out = Rates::default();
    let mut seen: HashSet<SiteKey> = HashSet::new();
    for r in new {
        let key = r.key();
        match (old_churn.get(&key), r.churn()) {
            (Some(&o), Some(n)) => match Delta::between(o, n) {
                Some(delta) => out.sites.push(SiteRate {
                    record: r.clone(),
                    delta,
                }),
                None => out.restarted.push((key.clone(), o.allocs, n.allocs)),
            },
            (Some(_), None) => out.old_only.push(key.clone()),
            (None, Some(_)) => out.new_only.push(key.clone()),
            (None, None) => out.without += 1,
        }
        seen.insert(key);
    }
    for r in old {
        let key = r.key();
        if seen.insert(key.clone()) {
            if r.churn().is_some() {
                out.old_only.push(key);
            } else {
                out.without += 1;
            }
        }
    }
    out.sites.sort_by(|a, b| {
        (b.delta.allocs, b.delta.alloc_bytes)
            .cmp(&(a.delta.allocs, a.delta.alloc_bytes))
            .then_with(|| a.record.key().cmp(&b.record.key()))
    });
    out.old_only.sort();
    out.new_only.sort();
    out.restarted.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(func: &str, churn: Option<(u64, u64, i64, i64)>) -> Record {
        Record {
            bytes: 4096,
            calls: 1,
            file: "mm/a.c".into(),
            line: 1,
            module: None,
            func: func.into(),
            extra: churn.map_or(vec![], |(a, ab, f, fb)| {
                Churn {
                    allocs: a,
                    alloc_bytes: ab,
                    frees: f,
                    free_bytes: fb,
                }
                .to_extra()
                .into()
            }),
        }
    }

    fn keys(v: &[SiteKey]) -> Vec<&str> {
        v.iter().map(|k| k.func.as_str()).collect()
    }

    #[test]
    fn sorts_the_sites_out() {
        let old = [
            site("steady", Some((10, 1000, 4, 400))),
            site("busy", Some((0, 0, 0, 0))),
            site("again", Some((50, 500, 50, 500))),
            site("dropped", Some((1, 1, 1, 1))),
            site("gone", Some((1, 1, 1, 1))),
            site("plain", None),
            site("plain_gone", None),
            site("tie_b", Some((0, 0, 0, 0))),
            site("tie_a", Some((0, 0, 0, 0))),
        ];
        let new = [
            site("plain", None),
            site("steady", Some((70, 7000, 63, 6300))),
            site("busy", Some((600, 76800, 540, 69120))),
            site("again", Some((3, 30, 1, 10))),
            site("dropped", None),
            site("fresh", Some((5, 5, 0, 0))),
            site("tie_a", Some((0, 0, -1, -100))),
            site("tie_b", Some((0, 0, 0, 0))),
        ];
        let r = rates(&old, &new);
        let got: Vec<(&str, Delta)> = r
            .sites
            .iter()
            .map(|s| (s.record.func.as_str(), s.delta))
            .collect();
        let d = |allocs, alloc_bytes, frees, free_bytes| Delta {
            allocs,
            alloc_bytes,
            frees,
            free_bytes,
        };
        assert_eq!(
            got,
            vec![
                ("busy", d(600, 76800, 540, 69120)),
                ("steady", d(60, 6000, 59, 5900)),
                ("tie_a", d(0, 0, -1, -100)),
                ("tie_b", d(0, 0, 0, 0)),
            ]
        );
        assert_eq!(keys(&r.old_only), ["dropped", "gone"]);
        assert_eq!(keys(&r.new_only), ["fresh"]);
        assert_eq!(r.restarted.len(), 1);
        assert_eq!(
            (
                r.restarted[0].0.func.as_str(),
                r.restarted[0].1,
                r.restarted[0].2
            ),
            ("again", 50, 3)
        );
        assert_eq!(r.without, 2);
    }

    #[test]
    fn bytes_that_went_down_also_restart() {
        let r = rates(
            &[site("s", Some((5, 5000, 0, 0)))],
            &[site("s", Some((6, 100, 0, 0)))],
        );
        assert!(r.sites.is_empty());
        assert_eq!(r.restarted.len(), 1);
    }

    #[test]
    fn per_second_is_exact_on_round_figures() {
        assert_eq!(per_second(600.0, 60_000), 10.0);
        assert_eq!(per_second(90.0, 60_000), 1.5);
        assert_eq!(per_second(-1.0, 500), -2.0);
        assert_eq!(per_second(0.0, 1), 0.0);
    }
}
