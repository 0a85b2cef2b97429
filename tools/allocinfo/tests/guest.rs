//! Tests on real captures of `/proc/allocinfo` from the project's guest
//! (`scripts/capture-fixtures`): allocprof on the patched kernel, and
//! upstream's built-in profiler on the same kernel source.  Both captures
//! were taken after the same allocations of the test module: 40 ×
//! `kmalloc(100)` (a), then 20 × `alloc_pages(order 3)` more (b).

mod common;
use common::fixture;

use std::process::Command;

use allocinfo::parse::parse_str;

fn ok(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(args)
        .output()
        .expect("run allocinfo");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The test module's call sites: (function, bytes, calls), sorted.
fn test_sites(name: &str) -> Vec<(String, i64, u64)> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let parsed = parse_str(&text);
    assert!(parsed.issues.is_empty(), "{name}: {:?}", parsed.issues);
    let mut sites: Vec<_> = parsed
        .records
        .iter()
        .filter(|r| r.module.as_deref() == Some("allocprof_test"))
        .map(|r| (r.func.clone(), r.bytes, r.calls))
        .collect();
    sites.sort();
    sites
}

#[test]
fn captures_parse_cleanly_with_the_known_figures() {
    for impl_ in ["allocprof", "upstream-6.12.117"] {
        assert_eq!(
            test_sites(&format!("guest-{impl_}-a.txt")),
            vec![("aptest_kmalloc_100".to_string(), 40 * 128, 40)],
            "{impl_} a"
        );
        assert_eq!(
            test_sites(&format!("guest-{impl_}-b.txt")),
            vec![
                ("aptest_alloc_pages_3".to_string(), 20 * 32768, 20),
                ("aptest_kmalloc_100".to_string(), 40 * 128, 40),
            ],
            "{impl_} b"
        );
    }
}

#[test]
fn allocprof_and_upstream_agree_on_the_test_sites() {
    for snap in ["a", "b"] {
        assert_eq!(
            test_sites(&format!("guest-allocprof-{snap}.txt")),
            test_sites(&format!("guest-upstream-6.12.117-{snap}.txt"))
        );
    }
}

#[test]
fn top_of_the_test_module() {
    let out = ok(&[
        "top",
        "--module",
        "allocprof_test",
        "--format",
        "csv",
        &fixture("guest-allocprof-b.txt"),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,655360,20,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,117,allocprof_test,aptest_alloc_pages_3,\n\
         2,5120,40,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,82,allocprof_test,aptest_kmalloc_100,\n"
    );
}

#[test]
fn diff_of_two_snapshots_shows_the_page_allocations() {
    let out = ok(&[
        "diff",
        "--module",
        "allocprof_test",
        "--format",
        "csv",
        &fixture("guest-allocprof-a.txt"),
        &fixture("guest-allocprof-b.txt"),
    ]);
    let site = out
        .lines()
        .find(|l| l.starts_with("site,"))
        .expect("a site row");
    assert_eq!(
        site,
        "site,,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,117,\
         allocprof_test,aptest_alloc_pages_3,new,0,655360,655360,0,20,20,,"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("site,")).count(),
        1,
        "{out}"
    );
}

#[test]
fn group_by_module_totals_the_test_module() {
    let out = ok(&[
        "group",
        "--by",
        "module",
        "--format",
        "csv",
        &fixture("guest-upstream-6.12.117-b.txt"),
    ]);
    let row = out
        .lines()
        .find(|l| l.contains("allocprof_test"))
        .expect("a row for the test module");
    assert!(row.contains(",660480,60"), "{row}");
}
