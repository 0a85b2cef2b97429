//! Property tests for the parsers of allocprof's debugfs files: they never
//! panic, and well-formed records survive format -> parse unchanged
//! (memcgs: cgroup paths of any bytes, escaped).

mod common;
use common::site_strategy;

use allocinfo::ages::{parse_ages, parse_ages_bytes, sites, AgeBucket, AgeLine};
use allocinfo::faults::{merge_sites, parse_faults, parse_faults_bytes, FaultSite};
use allocinfo::memcgs::{
    self, escape_path, parse_memcgs, parse_memcgs_bytes, Memcg, MemcgLine, MemcgTable,
};
use allocinfo::stacks::{escape_comm, parse_stacks, parse_stacks_bytes, StackRecord};
use proptest::prelude::*;

fn frame_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_.]{0,20}\\+0x[0-9a-f]{1,4}/0x[0-9a-f]{1,4}( \\[[a-z_]{1,10}\\])?",
        "0x[0-9a-f]{16}",
    ]
}

fn stack_strategy() -> impl Strategy<Value = StackRecord> {
    (
        site_strategy(),
        any::<u32>(),
        // A task name: up to 15 bytes but NUL, as the kernel escapes them.
        proptest::collection::vec(1u8..=255, 0..16).prop_map(|b| escape_comm(&b)),
        proptest::collection::vec(frame_strategy(), 0..6),
    )
        .prop_map(|(site, pid, comm, frames)| StackRecord {
            site,
            pid,
            comm,
            frames,
        })
}

/// The kernel's buckets: `[0, 1)`, then `[2^(b-1), 2^b)`, the last (b = 32) open.
fn bucket_strategy() -> impl Strategy<Value = AgeBucket> {
    (0u32..33).prop_map(|b| match b {
        0 => AgeBucket { lo: 0, hi: Some(1) },
        32 => AgeBucket {
            lo: 1 << 31,
            hi: None,
        },
        b => AgeBucket {
            lo: 1 << (b - 1),
            hi: Some(1 << b),
        },
    })
}

fn age_line_strategy() -> impl Strategy<Value = AgeLine> {
    (site_strategy(), bucket_strategy()).prop_map(|(site, part)| AgeLine {
        site,
        part,
        accounted: None,
    })
}

/// A cgroup as the kernel names it: a path of any bytes but NUL (escaped),
/// `-` or `?`; with or without `accounted:` (7.3, 6.12).
fn memcg_line_strategy() -> impl Strategy<Value = MemcgLine> {
    let memcg = prop_oneof![
        proptest::collection::vec(1u8..=255, 0..24).prop_map(|b| {
            let mut path = b"/".to_vec();
            path.extend(b);
            Memcg::Path(escape_path(&path))
        }),
        Just(Memcg::NoCgroup),
        Just(Memcg::Unknown),
    ];
    (site_strategy(), memcg, proptest::option::of(any::<u64>())).prop_map(
        |(site, part, accounted)| MemcgLine {
            site,
            part,
            accounted,
        },
    )
}

/// A call site with the `f` flag, its counts and knobs in the kernel's ranges.
fn fault_strategy() -> impl Strategy<Value = FaultSite> {
    (
        site_strategy(),
        any::<u64>(),
        any::<u64>(),
        (0u32..=100, 1u32.., -1i32.., any::<u32>(), 0u32..=2),
    )
        .prop_map(
            |(site, failed, asked, (probability, interval, times, space, verbose))| FaultSite {
                site: site.key(),
                failed,
                asked,
                probability,
                interval,
                times,
                space,
                verbose,
            },
        )
}

/// Lines made of pieces of the debugfs formats.
fn junk_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("    ".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("#".to_string()),
        Just("# tracked:".to_string()),
        Just("func:".to_string()),
        Just("pid:".to_string()),
        Just("comm:".to_string()),
        Just("age:".to_string()),
        Just("memcg:".to_string()),
        Just("accounted:".to_string()),
        Just("# memcgs:".to_string()),
        Just("\\040".to_string()),
        Just("failed:".to_string()),
        Just("asked:".to_string()),
        Just("probability:".to_string()),
        Just("times:-1".to_string()),
        Just(">=".to_string()),
        Just("-".to_string()),
        Just("s".to_string()),
        Just("[m]".to_string()),
        Just("a.c:1".to_string()),
        Just("+0x1/0x2".to_string()),
        "-?[0-9]{1,22}",
        "[a-z/._]{1,8}",
        "\\PC{1,3}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn stacks_junk_never_panics(text in junk_text()) {
        let p = parse_stacks(&text);
        let n = text.lines().count();
        prop_assert!(p.issues.len() <= n);
        for issue in &p.issues {
            prop_assert!(issue.line_no >= 1 && issue.line_no <= n);
            let _ = issue.to_string();
        }
    }

    #[test]
    fn stacks_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_stacks_bytes(&b);
    }

    #[test]
    fn stacks_round_trip(
        recs in proptest::collection::vec(stack_strategy(), 0..12),
        final_empty_line in any::<bool>(),
    ) {
        let mut text = String::from("# allocprof stacks: x\n# tracked: y\n");
        text.extend(recs.iter().map(StackRecord::to_text));
        if !final_empty_line && text.ends_with("\n\n") {
            text.pop();
        }
        let p = parse_stacks(&text);
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(p.stats.as_deref(), Some("# tracked: y"));
        prop_assert_eq!(p.records, recs);
    }

    #[test]
    fn ages_junk_never_panics(text in junk_text()) {
        let p = parse_ages(&text);
        let n = text.lines().count();
        prop_assert!(p.lines.len() + p.issues.len() <= n);
        for issue in &p.issues {
            prop_assert!(issue.line_no >= 1 && issue.line_no <= n);
            let _ = issue.to_string();
        }
        let _ = sites(&p.lines);
    }

    #[test]
    fn ages_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_ages_bytes(&b);
    }

    #[test]
    fn ages_round_trip(lines in proptest::collection::vec(age_line_strategy(), 0..20)) {
        let mut text = String::from("# allocprof ages: x\n# tracked: y\n");
        text.extend(lines.iter().map(AgeLine::to_line));
        let p = parse_ages(&text);
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(p.stats.as_deref(), Some("# tracked: y"));
        prop_assert_eq!(&p.lines, &lines);
        // Gathered per site, the buckets keep every line's bytes and calls.
        let gathered = sites(&lines);
        let sum = |it: &mut dyn Iterator<Item = (i64, u64)>| {
            it.fold((0i64, 0u64), |(b, c), (x, y)| (b.wrapping_add(x), c.wrapping_add(y)))
        };
        let all = sum(&mut lines.iter().map(|l| (l.site.bytes, l.site.calls)));
        let kept = sum(&mut gathered
            .iter()
            .flat_map(|s| s.parts.iter().map(|b| (b.bytes, b.calls))));
        if lines.iter().all(|l| l.site.bytes.unsigned_abs() < 1 << 40 && l.site.calls < 1 << 40) {
            prop_assert_eq!(kept, all);
        }
    }

    #[test]
    fn memcgs_junk_never_panics(text in junk_text()) {
        let p = parse_memcgs(&text);
        let n = text.lines().count();
        prop_assert!(p.lines.len() + p.issues.len() <= n);
        for issue in &p.issues {
            prop_assert!(issue.line_no >= 1 && issue.line_no <= n);
            let _ = issue.to_string();
        }
        for s in memcgs::sites(&p.lines) {
            for c in &s.parts {
                let _ = c.part.path_bytes();
            }
        }
    }

    #[test]
    fn memcgs_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_memcgs_bytes(&b);
    }

    #[test]
    fn memcgs_round_trip(
        lines in proptest::collection::vec(memcg_line_strategy(), 0..20),
        held in 0u64..=64,
        kept in any::<u64>(),
    ) {
        let table = MemcgTable { held, slots: 64, kept_without: kept };
        let mut text = format!("# allocprof memcgs: x\n# tracked: y\n{table}\n");
        text.extend(lines.iter().map(MemcgLine::to_line));
        let p = parse_memcgs(&text);
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(p.stats.as_deref(), Some("# tracked: y"));
        prop_assert_eq!(memcgs::table(&p), Some(table));
        prop_assert_eq!(&p.lines, &lines);
    }

    #[test]
    fn faults_junk_never_panics(text in junk_text()) {
        let p = parse_faults(&text);
        let n = text.lines().count();
        prop_assert!(p.sites.len() + p.issues.len() <= n);
        for issue in &p.issues {
            prop_assert!(issue.line_no >= 1 && issue.line_no <= n);
            let _ = issue.to_string();
        }
        let _ = merge_sites(&p.sites);
    }

    #[test]
    fn faults_arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_faults_bytes(&b);
    }

    #[test]
    fn faults_round_trip(sites in proptest::collection::vec(fault_strategy(), 0..12)) {
        let mut text = String::from("# allocprof faults: x\n");
        text.extend(sites.iter().map(FaultSite::to_line));
        let p = parse_faults(&text);
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(&p.sites, &sites);
        // Merged, no identity appears twice and no failure is lost.
        let merged = merge_sites(&sites);
        let mut keys: Vec<_> = merged.iter().map(|s| &s.site).collect();
        keys.sort();
        keys.dedup();
        prop_assert_eq!(keys.len(), merged.len());
        if sites.iter().all(|s| s.failed < 1 << 40) {
            let sum = |v: &[FaultSite]| v.iter().map(|s| s.failed).sum::<u64>();
            prop_assert_eq!(sum(&merged), sum(&sites));
        }
    }
}
