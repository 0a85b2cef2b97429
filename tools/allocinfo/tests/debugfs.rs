//! End-to-end tests of the commands that read allocprof's debugfs files
//! (`stacks`, `ages`, `nodes`, `memcgs`, `faults`), on the fixtures, with
//! exact expected values.

mod common;
use common::{fixture, ok, ok2, run, run_stdin, stderr, stdout};

use allocinfo::ages::{parse_ages, sites};
use allocinfo::faults::{parse_faults, FaultSite};
use allocinfo::memcgs::{self, parse_memcgs, MemcgTable};
use allocinfo::record::SiteKey;
use allocinfo::stacks::parse_stacks;

const STACKS: &str = "guest-stacks.txt";
const TEST_C: &str = "/root/allocprof/selftests/modules/allocprof_test.c";
const STACKS_STATS: &str = "# tracked: 27 allocations in 5 chains; table: 27/16384 allocations, \
                            5/4096 chains, 712704 bytes; not tracked: 0 (table full), 0 (nested)";

// ------------------------------------------------------------------ stacks

#[test]
fn stacks_fixture_parses_to_the_exact_records() {
    let p = parse_stacks(&std::fs::read_to_string(fixture(STACKS)).unwrap());
    assert!(p.issues.is_empty(), "{:?}", p.issues);
    assert_eq!(p.stats.as_deref(), Some(STACKS_STATS));
    let got: Vec<_> = p
        .records
        .iter()
        .map(|r| {
            (
                r.site.bytes,
                r.site.calls,
                r.site.file.as_str(),
                r.site.line,
                r.site.module.as_deref(),
                r.site.func.as_str(),
                r.pid,
                r.comm.as_str(),
                r.frames.len(),
            )
        })
        .collect();
    let m = Some("allocprof_test");
    assert_eq!(
        got,
        [
            (
                40960,
                10,
                "mm/slub.c",
                2425,
                None,
                "alloc_slab_page",
                1,
                "systemd",
                7
            ),
            (
                2560,
                5,
                TEST_C,
                351,
                m,
                "aptest_helper",
                241,
                "control_test",
                6
            ),
            (
                1536,
                3,
                TEST_C,
                351,
                m,
                "aptest_helper",
                243,
                "aptest worker",
                4
            ),
            (
                1024,
                8,
                TEST_C,
                99,
                m,
                "aptest_kmalloc_100",
                241,
                "control_test",
                0
            ),
            (
                192,
                1,
                "fs/dcache.c",
                1690,
                None,
                "__d_alloc",
                0,
                "swapper/0",
                4
            ),
        ]
    );
    assert_eq!(
        p.records[2].frames,
        [
            "__kmalloc_cache_noprof+0x1a2/0x3c0",
            "aptest_helper+0x1d/0x40 [allocprof_test]",
            "aptest_from_b+0x9/0x20 [allocprof_test]",
            "0xffffffffc0a01234",
        ]
    );
    // The last record has no empty line after it.
    assert_eq!(p.records[4].frames[3], "path_openat+0x3c5/0x1210");
}

#[test]
fn stacks_table_exact() {
    let out = ok(&["stacks", "-n", "4", "--frames", "2", &fixture(STACKS)]);
    assert_eq!(
        out,
        "\
┌───┬──────────┬───────┬────────────────────────────────────────────────────────┬────────────────┬────────────────────┬─────┬───────────────┬──────────────────────────────────────────┐
│ # ┆    Bytes ┆ Calls ┆ Location                                               ┆ Module         ┆ Function           ┆ PID ┆ Comm          ┆ Frames                                   │
╞═══╪══════════╪═══════╪════════════════════════════════════════════════════════╪════════════════╪════════════════════╪═════╪═══════════════╪══════════════════════════════════════════╡
│ 1 ┆ 40.0 KiB ┆    10 ┆ mm/slub.c:2425                                         ┆ (built-in)     ┆ alloc_slab_page    ┆   1 ┆ systemd       ┆ allocate_slab+0x8a/0x370                 │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ ___slab_alloc+0x40e/0x8a0                │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ … 5 more                                 │
│ 2 ┆  2.5 KiB ┆     5 ┆ /root/allocprof/selftests/modules/allocprof_test.c:351 ┆ allocprof_test ┆ aptest_helper      ┆ 241 ┆ control_test  ┆ __kmalloc_cache_noprof+0x1a2/0x3c0       │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ aptest_helper+0x1d/0x40 [allocprof_test] │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ … 4 more                                 │
│ 3 ┆  1.5 KiB ┆     3 ┆ /root/allocprof/selftests/modules/allocprof_test.c:351 ┆ allocprof_test ┆ aptest_helper      ┆ 243 ┆ aptest worker ┆ __kmalloc_cache_noprof+0x1a2/0x3c0       │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ aptest_helper+0x1d/0x40 [allocprof_test] │
│   ┆          ┆       ┆                                                        ┆                ┆                    ┆     ┆               ┆ … 2 more                                 │
│ 4 ┆  1.0 KiB ┆     8 ┆ /root/allocprof/selftests/modules/allocprof_test.c:99  ┆ allocprof_test ┆ aptest_kmalloc_100 ┆ 241 ┆ control_test  ┆ (none)                                   │
└───┴──────────┴───────┴────────────────────────────────────────────────────────┴────────────────┴────────────────────┴─────┴───────────────┴──────────────────────────────────────────┘
4 of 5 call chains, 45.0 KiB of 45.2 KiB total
"
    );
}

#[test]
fn stacks_all_frames_and_verbose_statistics() {
    let out = ok(&[
        "stacks",
        "-v",
        "--func",
        "__d_alloc",
        "--frames",
        "0",
        &fixture(STACKS),
    ]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬───────┬───────┬──────────────────┬────────────┬───────────┬─────┬───────────┬─────────────────────────────────────────┐
│ # ┆ Bytes ┆ Calls ┆ Location         ┆ Module     ┆ Function  ┆ PID ┆ Comm      ┆ Frames                                  │
╞═══╪═══════╪═══════╪══════════════════╪════════════╪═══════════╪═════╪═══════════╪═════════════════════════════════════════╡
│ 1 ┆ 192 B ┆     1 ┆ fs/dcache.c:1690 ┆ (built-in) ┆ __d_alloc ┆   0 ┆ swapper/0 ┆ kmem_cache_alloc_lru_noprof+0x113/0x2f0 │
│   ┆       ┆       ┆                  ┆            ┆           ┆     ┆           ┆ __d_alloc+0x31/0x220                    │
│   ┆       ┆       ┆                  ┆            ┆           ┆     ┆           ┆ d_alloc_parallel+0x52/0x4e0             │
│   ┆       ┆       ┆                  ┆            ┆           ┆     ┆           ┆ path_openat+0x3c5/0x1210                │
└───┴───────┴───────┴──────────────────┴────────────┴───────────┴─────┴───────────┴─────────────────────────────────────────┘
1 of 1 call chains, 192 B of 192 B total
{STACKS_STATS}
"
        )
    );
    // Not without -v.
    let out = ok(&["stacks", "--func", "__d_alloc", &fixture(STACKS)]);
    assert!(
        out.ends_with("1 of 1 call chains, 192 B of 192 B total\n"),
        "{out}"
    );
    // In JSON and CSV the line goes to stderr.
    let o = run(&[
        "stacks",
        "-v",
        "--format",
        "csv",
        "-n",
        "1",
        &fixture(STACKS),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), format!("{STACKS_STATS}\n"));
    assert_eq!(stdout(&o).lines().count(), 2);
}

#[test]
fn stacks_json_exact() {
    let out = ok(&[
        "stacks",
        "--module",
        "allocprof_test",
        "--format",
        "json",
        "-n",
        "0",
        &fixture(STACKS),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!([
            {
                "rank": 1, "bytes": 2560, "calls": 5, "file": TEST_C, "line": 351,
                "module": "allocprof_test", "func": "aptest_helper", "pid": 241,
                "comm": "control_test",
                "frames": [
                    "__kmalloc_cache_noprof+0x1a2/0x3c0",
                    "aptest_helper+0x1d/0x40 [allocprof_test]",
                    "aptest_from_a+0x9/0x20 [allocprof_test]",
                    "aptest_callers_write+0x8c/0x120 [allocprof_test]",
                    "full_proxy_write+0x54/0x80",
                    "vfs_write+0xc8/0x410"
                ]
            },
            {
                "rank": 2, "bytes": 1536, "calls": 3, "file": TEST_C, "line": 351,
                "module": "allocprof_test", "func": "aptest_helper", "pid": 243,
                "comm": "aptest worker",
                "frames": [
                    "__kmalloc_cache_noprof+0x1a2/0x3c0",
                    "aptest_helper+0x1d/0x40 [allocprof_test]",
                    "aptest_from_b+0x9/0x20 [allocprof_test]",
                    "0xffffffffc0a01234"
                ]
            },
            {
                "rank": 3, "bytes": 1024, "calls": 8, "file": TEST_C, "line": 99,
                "module": "allocprof_test", "func": "aptest_kmalloc_100", "pid": 241,
                "comm": "control_test", "frames": []
            }
        ])
    );
    // The text itself: pretty-printed, built-in sites have a null module.
    let out = ok(&[
        "stacks",
        "--format",
        "json",
        "--file",
        "fs/*",
        &fixture(STACKS),
    ]);
    assert_eq!(
        out,
        r#"[
  {
    "rank": 1,
    "bytes": 192,
    "calls": 1,
    "file": "fs/dcache.c",
    "line": 1690,
    "module": null,
    "func": "__d_alloc",
    "pid": 0,
    "comm": "swapper/0",
    "frames": [
      "kmem_cache_alloc_lru_noprof+0x113/0x2f0",
      "__d_alloc+0x31/0x220",
      "d_alloc_parallel+0x52/0x4e0",
      "path_openat+0x3c5/0x1210"
    ]
  }
]
"#
    );
}

#[test]
fn stacks_csv_exact_with_filters_and_order() {
    let out = ok(&[
        "stacks",
        "--by",
        "calls",
        "--format",
        "csv",
        "-n",
        "0",
        &fixture(STACKS),
    ]);
    assert_eq!(
        out,
        format!(
            "rank,bytes,calls,file,line,module,func,pid,comm,frames\n\
             1,40960,10,mm/slub.c,2425,,alloc_slab_page,1,systemd,\
             allocate_slab+0x8a/0x370 <- ___slab_alloc+0x40e/0x8a0 <- \
             __kmalloc_cache_noprof+0x1a2/0x3c0 <- kernfs_fop_open+0x2c4/0x3f0 <- \
             do_dentry_open+0x15c/0x4a0 <- vfs_open+0x2e/0xe0 <- path_openat+0x8b5/0x1210\n\
             2,1024,8,{TEST_C},99,allocprof_test,aptest_kmalloc_100,241,control_test,\n\
             3,2560,5,{TEST_C},351,allocprof_test,aptest_helper,241,control_test,\
             __kmalloc_cache_noprof+0x1a2/0x3c0 <- aptest_helper+0x1d/0x40 [allocprof_test] <- \
             aptest_from_a+0x9/0x20 [allocprof_test] <- \
             aptest_callers_write+0x8c/0x120 [allocprof_test] <- \
             full_proxy_write+0x54/0x80 <- vfs_write+0xc8/0x410\n\
             4,1536,3,{TEST_C},351,allocprof_test,aptest_helper,243,aptest worker,\
             __kmalloc_cache_noprof+0x1a2/0x3c0 <- aptest_helper+0x1d/0x40 [allocprof_test] <- \
             aptest_from_b+0x9/0x20 [allocprof_test] <- 0xffffffffc0a01234\n\
             5,192,1,fs/dcache.c,1690,,__d_alloc,0,swapper/0,\
             kmem_cache_alloc_lru_noprof+0x113/0x2f0 <- __d_alloc+0x31/0x220 <- \
             d_alloc_parallel+0x52/0x4e0 <- path_openat+0x3c5/0x1210\n"
        )
    );
    let csv = |args: &[&str]| {
        let mut argv = vec!["stacks", "--format", "csv", "-n", "0"];
        argv.extend(args);
        let f = fixture(STACKS);
        argv.push(&f);
        ok(&argv)
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
    };
    assert_eq!(csv(&["--module", "built-in"]), ["1,40960,10", "2,192,1"]);
    assert_eq!(
        csv(&["--func", "aptest_*", "--line", "351"]),
        ["1,2560,5", "2,1536,3"]
    );
    assert_eq!(csv(&["--min-bytes", "1K"]).len(), 4);
    assert_eq!(
        csv(&["--file", "mm/**", "--min-bytes", "1M"]),
        [] as [&str; 0]
    );
    // An empty result still has the header.
    assert_eq!(
        ok(&[
            "stacks",
            "--format",
            "csv",
            "--module",
            "nfs",
            &fixture(STACKS)
        ]),
        "rank,bytes,calls,file,line,module,func,pid,comm,frames\n"
    );
}

#[test]
fn stacks_malformed_lines_warn_or_fail_with_strict() {
    let input = "\
# tracked: 1 allocations in 1 chains
   1 1 a.c:1 func:f comm:x
    skipped+0x1/0x2

        4096        2 mm/x.c:7 func:g pid:3 comm:t
     five+0x1/0x2
    g+0x1/0x2
";
    let o = run_stdin(&["stacks", "--format", "csv", "-"], input);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 2: malformed line (expected pid:N after \
         func:NAME, found \"comm:x\"): \"   1 1 a.c:1 func:f comm:x\"\n\
         allocinfo: warning: <stdin>: line 6: malformed line (expected a frame indented by \
         exactly four spaces, or the empty line that ends the record): \"     five+0x1/0x2\"\n"
    );
    assert_eq!(
        stdout(&o),
        "rank,bytes,calls,file,line,module,func,pid,comm,frames\n\
         1,4096,2,mm/x.c,7,,g,3,t,g+0x1/0x2\n"
    );
    let o = run_stdin(&["stacks", "--strict", "-"], input);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("allocinfo: error: <stdin>: line 2: malformed line"));
    assert!(stderr(&o).ends_with("allocinfo: error: 2 malformed line(s) in <stdin> (--strict)\n"));
    // A /proc/allocinfo file is not a stacks file.
    let o = run(&["stacks", "--strict", &fixture("v2.txt")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o)
            .contains("malformed line (expected pid:N after func:NAME, found \"accurate:no\")"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn stacks_missing_file_says_what_is_needed() {
    let o = run(&["stacks", "/nonexistent/allocprof/stacks"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "allocinfo: error: cannot read /nonexistent/allocprof/stacks: No such file or \
         directory (os error 2) (debugfs must be mounted on /sys/kernel/debug, e.g. \
         `mount -t debugfs none /sys/kernel/debug`, and the allocprof module loaded)\n"
    );
    // Usage errors: no Prometheus output for chains.
    assert_eq!(
        run(&["stacks", "--format", "prometheus", &fixture(STACKS)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["stacks", "--frames", "x", &fixture(STACKS)])
            .status
            .code(),
        Some(2)
    );
}

// ------------------------------------------------------------------ ages

const AGES: &str = "guest-ages.txt";
const AGES_STATS: &str = "# tracked: 109 allocations in 0 chains; table: 109/16384 allocations, \
                          0/4096 chains, 712704 bytes; not tracked: 0 (table full), 0 (nested)";

#[test]
fn ages_fixture_parses_to_the_exact_buckets() {
    let p = parse_ages(&std::fs::read_to_string(fixture(AGES)).unwrap());
    assert!(p.issues.is_empty(), "{:?}", p.issues);
    assert_eq!(p.stats.as_deref(), Some(AGES_STATS));
    assert_eq!(p.lines.len(), 9);
    let got: Vec<_> = sites(&p.lines)
        .iter()
        .map(|s| {
            (
                s.site.file.clone(),
                s.site.line,
                s.site.module.clone(),
                s.site.func.clone(),
                s.site.bytes,
                s.site.calls,
                s.parts
                    .iter()
                    .map(|b| (b.part.lo, b.part.hi, b.bytes, b.calls))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let m = Some("allocprof_test".to_string());
    assert_eq!(
        got,
        [
            (
                "mm/slub.c".into(),
                2425,
                None,
                "alloc_slab_page".into(),
                172032,
                42,
                vec![
                    (0, Some(1), 8192, 2),
                    (8, Some(16), 40960, 10),
                    (1024, Some(2048), 122880, 30)
                ]
            ),
            (
                "fs/dcache.c".into(),
                1690,
                None,
                "__d_alloc".into(),
                1728,
                9,
                vec![(2, Some(4), 1536, 8), (2147483648, None, 192, 1)]
            ),
            (
                TEST_C.into(),
                99,
                m.clone(),
                "aptest_kmalloc_100".into(),
                4864,
                38,
                vec![
                    (0, Some(1), 256, 2),
                    (2, Some(4), 768, 6),
                    (4096, Some(8192), 3840, 30)
                ]
            ),
            (
                TEST_C.into(),
                117,
                m,
                "aptest_alloc_pages_3".into(),
                655360,
                20,
                vec![(64, Some(128), 655360, 20)]
            ),
        ]
    );
}

#[test]
fn ages_table_exact_with_verbose_statistics() {
    let out = ok(&["ages", "-v", &fixture(AGES)]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬───────────┬───────┬────────────────────────────────────────────────────────┬────────────────┬──────────────────────┬───────────────┬───────────┬───────────┐
│ # ┆     Bytes ┆ Calls ┆ Location                                               ┆ Module         ┆ Function             ┆ Age           ┆ Age bytes ┆ Age calls │
╞═══╪═══════════╪═══════╪════════════════════════════════════════════════════════╪════════════════╪══════════════════════╪═══════════════╪═══════════╪═══════════╡
│ 1 ┆ 640.0 KiB ┆    20 ┆ /root/allocprof/selftests/modules/allocprof_test.c:117 ┆ allocprof_test ┆ aptest_alloc_pages_3 ┆ 64-128s       ┆ 640.0 KiB ┆        20 │
│ 2 ┆ 168.0 KiB ┆    42 ┆ mm/slub.c:2425                                         ┆ (built-in)     ┆ alloc_slab_page      ┆ 1024-2048s    ┆ 120.0 KiB ┆        30 │
│   ┆           ┆       ┆                                                        ┆                ┆                      ┆ 8-16s         ┆  40.0 KiB ┆        10 │
│   ┆           ┆       ┆                                                        ┆                ┆                      ┆ 0-1s          ┆   8.0 KiB ┆         2 │
│ 3 ┆   4.8 KiB ┆    38 ┆ /root/allocprof/selftests/modules/allocprof_test.c:99  ┆ allocprof_test ┆ aptest_kmalloc_100   ┆ 4096-8192s    ┆   3.8 KiB ┆        30 │
│   ┆           ┆       ┆                                                        ┆                ┆                      ┆ 2-4s          ┆     768 B ┆         6 │
│   ┆           ┆       ┆                                                        ┆                ┆                      ┆ 0-1s          ┆     256 B ┆         2 │
│ 4 ┆   1.7 KiB ┆     9 ┆ fs/dcache.c:1690                                       ┆ (built-in)     ┆ __d_alloc            ┆ >=2147483648s ┆     192 B ┆         1 │
│   ┆           ┆       ┆                                                        ┆                ┆                      ┆ 2-4s          ┆   1.5 KiB ┆         8 │
└───┴───────────┴───────┴────────────────────────────────────────────────────────┴────────────────┴──────────────────────┴───────────────┴───────────┴───────────┘
4 of 4 call sites, 814.4 KiB of 814.4 KiB total
{AGES_STATS}
"
        )
    );
}

#[test]
fn ages_by_age_and_min_age() {
    let out = ok(&["ages", "--by", "age", "--min-age", "1h", &fixture(AGES)]);
    assert_eq!(
        out,
        "\
┌───┬─────────┬───────┬───────────────────────────────────────────────────────┬────────────────┬────────────────────┬───────────────┬───────────┬───────────┐
│ # ┆   Bytes ┆ Calls ┆ Location                                              ┆ Module         ┆ Function           ┆ Age           ┆ Age bytes ┆ Age calls │
╞═══╪═════════╪═══════╪═══════════════════════════════════════════════════════╪════════════════╪════════════════════╪═══════════════╪═══════════╪═══════════╡
│ 1 ┆   192 B ┆     1 ┆ fs/dcache.c:1690                                      ┆ (built-in)     ┆ __d_alloc          ┆ >=2147483648s ┆     192 B ┆         1 │
│ 2 ┆ 3.8 KiB ┆    30 ┆ /root/allocprof/selftests/modules/allocprof_test.c:99 ┆ allocprof_test ┆ aptest_kmalloc_100 ┆ 4096-8192s    ┆   3.8 KiB ┆        30 │
└───┴─────────┴───────┴───────────────────────────────────────────────────────┴────────────────┴────────────────────┴───────────────┴───────────┴───────────┘
2 of 2 call sites, 3.9 KiB of 3.9 KiB total, only allocations at least 3600s old
"
    );
    // Ranks only, as CSV: the first column of each site's first row.
    let ranks = |args: &[&str]| {
        let mut argv = vec!["ages", "--format", "csv", "-n", "0"];
        argv.extend(args);
        let f = fixture(AGES);
        argv.push(&f);
        let mut seen: Vec<String> = Vec::new();
        for l in ok(&argv).lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            let site = format!("{}:{}", f[4], f[2]);
            if seen.last() != Some(&site) {
                seen.push(site);
            }
        }
        seen
    };
    assert_eq!(
        ranks(&["--by", "age"]),
        [
            "__d_alloc:1690",
            "aptest_kmalloc_100:99",
            "alloc_slab_page:2425",
            "aptest_alloc_pages_3:117"
        ]
    );
    assert_eq!(
        ranks(&["--by", "calls"]),
        [
            "alloc_slab_page:2425",
            "aptest_kmalloc_100:99",
            "aptest_alloc_pages_3:117",
            "__d_alloc:1690"
        ]
    );
    // 1024 s: the lower bound of a bucket, which is kept.
    assert_eq!(
        ranks(&["--min-age", "1024"]),
        [
            "alloc_slab_page:2425",
            "aptest_kmalloc_100:99",
            "__d_alloc:1690"
        ]
    );
    assert_eq!(
        ranks(&["--min-age", "1025s", "--min-bytes", "1K"]),
        ["aptest_kmalloc_100:99"]
    );
    // The open bucket starts at 2^31 s, a little more than 24855 days.
    assert_eq!(ranks(&["--min-age", "24855d"]), ["__d_alloc:1690"]);
    assert_eq!(ranks(&["--min-age", "24856d"]).len(), 0);
    assert_eq!(
        run(&["ages", "--min-age", "70y", &fixture(AGES)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(ranks(&["--min-age", "3d"]), ["__d_alloc:1690"]);
    assert_eq!(
        ranks(&["--module", "built-in", "--line", "2425"]),
        ["alloc_slab_page:2425"]
    );
    assert_eq!(
        ranks(&["--file", "/root/**", "--func", "*_100"]),
        ["aptest_kmalloc_100:99"]
    );
}

#[test]
fn ages_csv_exact() {
    let out = ok(&["ages", "--format", "csv", "-n", "3", &fixture(AGES)]);
    assert_eq!(
        out,
        format!(
            "rank,file,line,module,func,lo_s,hi_s,bytes,calls\n\
             1,{TEST_C},117,allocprof_test,aptest_alloc_pages_3,64,128,655360,20\n\
             2,mm/slub.c,2425,,alloc_slab_page,0,1,8192,2\n\
             2,mm/slub.c,2425,,alloc_slab_page,8,16,40960,10\n\
             2,mm/slub.c,2425,,alloc_slab_page,1024,2048,122880,30\n\
             3,{TEST_C},99,allocprof_test,aptest_kmalloc_100,0,1,256,2\n\
             3,{TEST_C},99,allocprof_test,aptest_kmalloc_100,2,4,768,6\n\
             3,{TEST_C},99,allocprof_test,aptest_kmalloc_100,4096,8192,3840,30\n"
        )
    );
    // The open bucket has an empty hi_s.
    assert_eq!(
        ok(&[
            "ages",
            "--format",
            "csv",
            "--func",
            "__d_alloc",
            &fixture(AGES)
        ]),
        "rank,file,line,module,func,lo_s,hi_s,bytes,calls\n\
         1,fs/dcache.c,1690,,__d_alloc,2,4,1536,8\n\
         1,fs/dcache.c,1690,,__d_alloc,2147483648,,192,1\n"
    );
    assert_eq!(
        ok(&["ages", "--format", "csv", "--module", "nfs", &fixture(AGES)]),
        "rank,file,line,module,func,lo_s,hi_s,bytes,calls\n"
    );
}

#[test]
fn ages_json_exact() {
    let out = ok(&["ages", "--format", "json", "-n", "0", &fixture(AGES)]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let b = |lo: u64, hi: Option<u64>, bytes: i64, calls: u64| serde_json::json!({"lo_s": lo, "hi_s": hi, "bytes": bytes, "calls": calls});
    assert_eq!(
        v,
        serde_json::json!([
            {
                "rank": 1, "bytes": 655360, "calls": 20, "file": TEST_C, "line": 117,
                "module": "allocprof_test", "func": "aptest_alloc_pages_3",
                "buckets": [b(64, Some(128), 655360, 20)]
            },
            {
                "rank": 2, "bytes": 172032, "calls": 42, "file": "mm/slub.c", "line": 2425,
                "module": null, "func": "alloc_slab_page",
                "buckets": [
                    b(0, Some(1), 8192, 2),
                    b(8, Some(16), 40960, 10),
                    b(1024, Some(2048), 122880, 30)
                ]
            },
            {
                "rank": 3, "bytes": 4864, "calls": 38, "file": TEST_C, "line": 99,
                "module": "allocprof_test", "func": "aptest_kmalloc_100",
                "buckets": [
                    b(0, Some(1), 256, 2),
                    b(2, Some(4), 768, 6),
                    b(4096, Some(8192), 3840, 30)
                ]
            },
            {
                "rank": 4, "bytes": 1728, "calls": 9, "file": "fs/dcache.c", "line": 1690,
                "module": null, "func": "__d_alloc",
                "buckets": [b(2, Some(4), 1536, 8), b(2147483648, None, 192, 1)]
            }
        ])
    );
    // The text itself: pretty-printed, `null` for the open bucket's end.
    let out = ok(&[
        "ages",
        "--format",
        "json",
        "--func",
        "__d_alloc",
        "--min-age",
        "4",
        &fixture(AGES),
    ]);
    assert_eq!(
        out,
        r#"[
  {
    "rank": 1,
    "bytes": 192,
    "calls": 1,
    "file": "fs/dcache.c",
    "line": 1690,
    "module": null,
    "func": "__d_alloc",
    "buckets": [
      {
        "lo_s": 2147483648,
        "hi_s": null,
        "bytes": 192,
        "calls": 1
      }
    ]
  }
]
"#
    );
}

#[test]
fn ages_prometheus_exact() {
    let out = ok(&[
        "ages",
        "--format",
        "prometheus",
        "--module",
        "built-in",
        "--func",
        "__d_alloc",
        &fixture(AGES),
    ]);
    assert_eq!(
        out,
        "# HELP allocinfo_age_bytes Bytes of the live allocations of a call site whose age in \
         seconds is in [age_lo_seconds, age_hi_seconds) (allocprof debugfs ages).\n\
         # TYPE allocinfo_age_bytes gauge\n\
         allocinfo_age_bytes{file=\"fs/dcache.c\",line=\"1690\",function=\"__d_alloc\",module=\"\",\
         age_lo_seconds=\"2\",age_hi_seconds=\"4\"} 1536\n\
         allocinfo_age_bytes{file=\"fs/dcache.c\",line=\"1690\",function=\"__d_alloc\",module=\"\",\
         age_lo_seconds=\"2147483648\",age_hi_seconds=\"+Inf\"} 192\n\
         # HELP allocinfo_age_allocations Live allocations of a call site whose age in seconds is in \
         [age_lo_seconds, age_hi_seconds) (allocprof debugfs ages).\n\
         # TYPE allocinfo_age_allocations gauge\n\
         allocinfo_age_allocations{file=\"fs/dcache.c\",line=\"1690\",function=\"__d_alloc\",module=\"\",\
         age_lo_seconds=\"2\",age_hi_seconds=\"4\"} 8\n\
         allocinfo_age_allocations{file=\"fs/dcache.c\",line=\"1690\",function=\"__d_alloc\",module=\"\",\
         age_lo_seconds=\"2147483648\",age_hi_seconds=\"+Inf\"} 1\n"
    );
}

#[test]
fn ages_malformed_lines_and_duplicates() {
    let input = "\
# allocprof ages: x
         128        1 a/t.c:9 [t] func:k age:2-4s
         256        2 a/t.c:9 [t] func:k age:3-6s
         512        4 a/t.c:9 [t] func:k
         384        3 a/t.c:9 [t] func:k age:2-4s
          64        1 a/t.c:9 [t] func:k age:0-1s pid:1
";
    let o = run_stdin(&["ages", "--format", "csv", "-"], input);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 3: malformed line (expected age:LO-HIs or \
         age:>=LOs (power-of-two seconds) after func:NAME, found \"age:3-6s\"): \
         \"         256        2 a/t.c:9 [t] func:k age:3-6s\"\n\
         allocinfo: warning: <stdin>: line 4: malformed line (expected age:LO-HIs or \
         age:>=LOs (power-of-two seconds) after func:NAME, found the end of the line): \
         \"         512        4 a/t.c:9 [t] func:k\"\n\
         allocinfo: warning: <stdin>: line 6: malformed line (expected the end of the line \
         after the age bucket or node, found \"pid:1\"): \
         \"          64        1 a/t.c:9 [t] func:k age:0-1s pid:1\"\n"
    );
    // Lines of one identity and bucket are summed.
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,lo_s,hi_s,bytes,calls\n1,a/t.c,9,t,k,2,4,512,4\n"
    );
    let o = run_stdin(&["ages", "--strict", "-"], input);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).ends_with("allocinfo: error: 3 malformed line(s) in <stdin> (--strict)\n"));
    // A stacks file is not an ages file.
    let o = run(&["ages", "--strict", &fixture(STACKS)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains(
        "line 3: malformed line (expected age:LO-HIs or age:>=LOs (power-of-two seconds) \
         after func:NAME, found \"pid:1\")"
    ));
}

#[test]
fn ages_missing_file_says_what_is_needed() {
    let o = run(&["ages", "/nonexistent/allocprof/ages"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "allocinfo: error: cannot read /nonexistent/allocprof/ages: No such file or \
         directory (os error 2) (debugfs must be mounted on /sys/kernel/debug, e.g. \
         `mount -t debugfs none /sys/kernel/debug`, and the allocprof module loaded)\n"
    );
    for bad in ["1.5h", "-1", "h", "", "18446744073709551615d"] {
        assert_eq!(
            run(&["ages", "--min-age", bad, &fixture(AGES)])
                .status
                .code(),
            Some(2),
            "{bad:?}"
        );
    }
    assert_eq!(
        run(&["ages", "--by", "oldest", &fixture(AGES)])
            .status
            .code(),
        Some(2)
    );
}

// ------------------------------------------------------------------- nodes

const NODES: &str = "guest-allocprof-nodes.txt";
const CACHE_TEST_C: &str = "/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c";

/// Two call sites on both nodes, lines out of order, one malformed.
const NODES_INPUT: &str = "\
# allocprof nodes: x
# tracked: 10 allocations in 0 chains
        4096        1 mm/memory.c:1063 func:folio_prealloc node:1
       16384        4 a/t.c:7 [t] func:p node:1
        8192        2 a/t.c:7 [t] func:p node:0
       12288        3 mm/memory.c:1063 func:folio_prealloc node:0
        4096        1 mm/memory.c:1063 func:folio_prealloc node:x
";

#[test]
fn nodes_table_exact_on_the_guest_capture() {
    let out = ok(&["nodes", "-v", &fixture(NODES)]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬──────────┬───────┬───────────────────────────────────────────────────────────────────┬────────────────┬───────────────────┬──────┬────────────┬────────────┐
│ # ┆    Bytes ┆ Calls ┆ Location                                                          ┆ Module         ┆ Function          ┆ Node ┆ Node bytes ┆ Node calls │
╞═══╪══════════╪═══════╪═══════════════════════════════════════════════════════════════════╪════════════════╪═══════════════════╪══════╪════════════╪════════════╡
│ 1 ┆ 20.0 KiB ┆     5 ┆ {CACHE_TEST_C}:188 ┆ allocprof_test ┆ aptest_pages_node ┆ 0    ┆   12.0 KiB ┆          3 │
│   ┆          ┆       ┆                                                                   ┆                ┆                   ┆ 1    ┆    8.0 KiB ┆          2 │
└───┴──────────┴───────┴───────────────────────────────────────────────────────────────────┴────────────────┴───────────────────┴──────┴────────────┴────────────┘
1 of 1 call sites, 20.0 KiB of 20.0 KiB total
# tracked: 19 allocations in 3 chains; table: 19/16384 allocations, 3/4096 chains, 722944 bytes; not tracked: 0 (table full), 0 (nested)
"
        )
    );
}

#[test]
fn nodes_csv_json_and_the_node_filter() {
    let o = run_stdin(&["nodes", "--format", "csv", "-"], NODES_INPUT);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,node,bytes,calls\n\
         1,a/t.c,7,t,p,0,8192,2\n\
         1,a/t.c,7,t,p,1,16384,4\n\
         2,mm/memory.c,1063,,folio_prealloc,0,12288,3\n\
         2,mm/memory.c,1063,,folio_prealloc,1,4096,1\n"
    );
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 7: malformed line (expected node:N (a node number) \
         after func:NAME, found \"node:x\"): \
         \"        4096        1 mm/memory.c:1063 func:folio_prealloc node:x\"\n"
    );
    // Node 1 alone, by calls; the totals are node 1's.
    let o = run_stdin(
        &[
            "nodes", "--format", "csv", "--node", "1", "--by", "calls", "-",
        ],
        NODES_INPUT,
    );
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,node,bytes,calls\n\
         1,a/t.c,7,t,p,1,16384,4\n\
         2,mm/memory.c,1063,,folio_prealloc,1,4096,1\n"
    );
    // By calls over both nodes: folio_prealloc 4, p 6.
    let o = run_stdin(
        &["nodes", "--format", "json", "--func", "folio_prealloc", "-"],
        NODES_INPUT,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{
            "rank": 1, "bytes": 16384, "calls": 4, "file": "mm/memory.c", "line": 1063,
            "module": null, "func": "folio_prealloc",
            "nodes": [
                {"node": 0, "bytes": 12288, "calls": 3},
                {"node": 1, "bytes": 4096, "calls": 1}
            ]
        }])
    );
    let o = run_stdin(&["nodes", "--strict", "-"], NODES_INPUT);
    assert_eq!(o.status.code(), Some(3));
    // A node no site has: no rows.
    let o = run_stdin(
        &["nodes", "--format", "csv", "--node", "7", "-"],
        NODES_INPUT,
    );
    assert_eq!(stdout(&o), "rank,file,line,module,func,node,bytes,calls\n");
}

#[test]
fn nodes_prometheus_exact() {
    let o = run_stdin(
        &["nodes", "--format", "prometheus", "--module", "t", "-"],
        NODES_INPUT,
    );
    assert_eq!(
        stdout(&o),
        "# HELP allocinfo_node_bytes Bytes of the live allocations of a call site on the NUMA \
         node of the node label (allocprof debugfs nodes; pages of call sites with the n flag).\n\
         # TYPE allocinfo_node_bytes gauge\n\
         allocinfo_node_bytes{file=\"a/t.c\",line=\"7\",function=\"p\",module=\"t\",node=\"0\"} 8192\n\
         allocinfo_node_bytes{file=\"a/t.c\",line=\"7\",function=\"p\",module=\"t\",node=\"1\"} 16384\n\
         # HELP allocinfo_node_allocations Live allocations of a call site on the NUMA node of \
         the node label (allocprof debugfs nodes; pages of call sites with the n flag).\n\
         # TYPE allocinfo_node_allocations gauge\n\
         allocinfo_node_allocations{file=\"a/t.c\",line=\"7\",function=\"p\",module=\"t\",node=\"0\"} 2\n\
         allocinfo_node_allocations{file=\"a/t.c\",line=\"7\",function=\"p\",module=\"t\",node=\"1\"} 4\n"
    );
}

// ------------------------------------------------------------------ memcgs

/// The real captures of the memcgs file: a guest of the 6.12 base kernel
/// and one of 7.3, with the test module's two call sites given `m` and
/// their allocations made in /web, /batch and the root cgroup.
const MEMCGS: &str = "guest-allocprof-memcgs.txt";
const MEMCGS_73: &str = "guest-allocprof-7.3-memcgs.txt";
const MEMCGS_TABLE: &str =
    "memcg table: 3 of 64 held; 0 allocations kept without their memcg (table full)\n";

/// A cgroup path with a space (escaped), `-` and `?`, lines of one
/// identity, accounted on each line of a part but one; a malformed line.
const MEMCGS_INPUT: &str = "\
# allocprof memcgs: x
# tracked: 16 allocations in 0 chains
# memcgs: 2/64 held; kept without their memcg: 1 (table full)
        4096        1 a/t.c:7 [t] func:p memcg:/my\\040app accounted:4096
        8192        2 a/t.c:7 [t] func:p memcg:- accounted:0
        4096        1 a/t.c:9 [t] func:q memcg:? accounted:0
         512        4 a/t.c:9 [t] func:q memcg:/my\\040app accounted:512
        2048        1 a/t.c:7 [t] func:p memcg:/my\\040app accounted:2048
         256        2 a/t.c:9 [t] func:q memcg:/my\\040app
        1024        5 a/t.c:9 [t] func:q memcg:/my app accounted:1024
";

#[test]
fn memcgs_fixtures_parse_to_the_exact_lines() {
    for (name, file, accounted, stats_bytes) in [
        (MEMCGS, CACHE_TEST_C, [None; 4], 855040),
        (
            MEMCGS_73,
            "modules/allocprof_test.c",
            [Some(1228800), Some(491520), Some(0), Some(5120)],
            1158144,
        ),
    ] {
        let p = parse_memcgs(&std::fs::read_to_string(fixture(name)).unwrap());
        assert!(p.issues.is_empty(), "{name}: {:?}", p.issues);
        assert_eq!(
            p.stats,
            Some(format!(
                "# tracked: 465 allocations in 0 chains; table: 465/16384 allocations, 0/4096 \
                 chains, {stats_bytes} bytes; not tracked: 0 (table full), 0 (nested)"
            )),
            "{name}"
        );
        assert_eq!(
            memcgs::table(&p),
            Some(MemcgTable {
                held: 3,
                slots: 64,
                kept_without: 0
            }),
            "{name}"
        );
        let got: Vec<_> = p
            .lines
            .iter()
            .map(|l| {
                (
                    l.site.bytes,
                    l.site.calls,
                    l.site.file.as_str(),
                    l.site.line,
                    l.site.module.as_deref(),
                    l.site.func.as_str(),
                    l.part.to_string(),
                    l.accounted,
                )
            })
            .collect();
        let (m, pages, kmalloc) = (
            Some("allocprof_test"),
            "aptest_pages_account",
            "aptest_kmalloc_account",
        );
        assert_eq!(
            got,
            [
                (
                    1228800,
                    300,
                    file,
                    390,
                    m,
                    pages,
                    "/web".into(),
                    accounted[0]
                ),
                (
                    491520,
                    120,
                    file,
                    390,
                    m,
                    pages,
                    "/batch".into(),
                    accounted[1]
                ),
                (20480, 5, file, 390, m, pages, "/".into(), accounted[2]),
                (5120, 40, file, 385, m, kmalloc, "/web".into(), accounted[3]),
            ],
            "{name}"
        );
        // 465 allocations tracked, all of them in these lines.
        assert_eq!(p.lines.iter().map(|l| l.site.calls).sum::<u64>(), 465);
    }
}

/// The 7.3 sites' /proc/allocinfo 2.0 lines of the same run (allocprof's
/// Documentation/control.md, v2-accounted.txt) are the sums of their rows:
/// bytes, calls and accounted.
#[test]
fn memcgs_rows_sum_to_the_sites_allocinfo_lines_on_7_3() {
    let p = parse_memcgs(&std::fs::read_to_string(fixture(MEMCGS_73)).unwrap());
    let lines =
        allocinfo::parse_str(&std::fs::read_to_string(fixture("v2-accounted.txt")).unwrap());
    assert!(lines.issues.is_empty());
    let got: Vec<_> = memcgs::sites(&p.lines)
        .iter()
        .map(|s| {
            let accounted = s.parts.iter().map(|c| c.accounted.unwrap()).sum::<u64>();
            (s.site.key(), s.site.bytes, s.site.calls, Some(accounted))
        })
        .collect();
    let want: Vec<_> = lines
        .records
        .iter()
        .map(|r| (r.key(), r.bytes, r.calls, r.accounted()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(want[0].3, Some(1228800 + 491520));
}

#[test]
fn memcgs_table_exact_on_the_6_12_capture() {
    let out = ok(&["memcgs", "-v", &fixture(MEMCGS)]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬─────────┬───────┬───────────────────────────────────────────────────────────────────┬────────────────┬────────────────────────┬────────┬─────────────┬─────────────┐
│ # ┆   Bytes ┆ Calls ┆ Location                                                          ┆ Module         ┆ Function               ┆ Memcg  ┆ Memcg bytes ┆ Memcg calls │
╞═══╪═════════╪═══════╪═══════════════════════════════════════════════════════════════════╪════════════════╪════════════════════════╪════════╪═════════════╪═════════════╡
│ 1 ┆ 1.7 MiB ┆   425 ┆ {CACHE_TEST_C}:390 ┆ allocprof_test ┆ aptest_pages_account   ┆ /web   ┆     1.2 MiB ┆         300 │
│   ┆         ┆       ┆                                                                   ┆                ┆                        ┆ /batch ┆   480.0 KiB ┆         120 │
│   ┆         ┆       ┆                                                                   ┆                ┆                        ┆ /      ┆    20.0 KiB ┆           5 │
│ 2 ┆ 5.0 KiB ┆    40 ┆ {CACHE_TEST_C}:385 ┆ allocprof_test ┆ aptest_kmalloc_account ┆ /web   ┆     5.0 KiB ┆          40 │
└───┴─────────┴───────┴───────────────────────────────────────────────────────────────────┴────────────────┴────────────────────────┴────────┴─────────────┴─────────────┘
2 of 2 call sites, 1.7 MiB of 1.7 MiB total
{MEMCGS_TABLE}\
# tracked: 465 allocations in 0 chains; table: 465/16384 allocations, 0/4096 chains, 855040 bytes; not tracked: 0 (table full), 0 (nested)
"
        )
    );
}

#[test]
fn memcgs_table_exact_on_the_7_3_capture_with_accounted() {
    let out = ok(&["memcgs", &fixture(MEMCGS_73)]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬─────────┬───────┬──────────────────────────────┬────────────────┬────────────────────────┬────────┬─────────────┬─────────────┬───────────┐
│ # ┆   Bytes ┆ Calls ┆ Location                     ┆ Module         ┆ Function               ┆ Memcg  ┆ Memcg bytes ┆ Memcg calls ┆ Accounted │
╞═══╪═════════╪═══════╪══════════════════════════════╪════════════════╪════════════════════════╪════════╪═════════════╪═════════════╪═══════════╡
│ 1 ┆ 1.7 MiB ┆   425 ┆ modules/allocprof_test.c:390 ┆ allocprof_test ┆ aptest_pages_account   ┆ /web   ┆     1.2 MiB ┆         300 ┆   1.2 MiB │
│   ┆         ┆       ┆                              ┆                ┆                        ┆ /batch ┆   480.0 KiB ┆         120 ┆ 480.0 KiB │
│   ┆         ┆       ┆                              ┆                ┆                        ┆ /      ┆    20.0 KiB ┆           5 ┆       0 B │
│ 2 ┆ 5.0 KiB ┆    40 ┆ modules/allocprof_test.c:385 ┆ allocprof_test ┆ aptest_kmalloc_account ┆ /web   ┆     5.0 KiB ┆          40 ┆   5.0 KiB │
└───┴─────────┴───────┴──────────────────────────────┴────────────────┴────────────────────────┴────────┴─────────────┴─────────────┴───────────┘
2 of 2 call sites, 1.7 MiB of 1.7 MiB total
{MEMCGS_TABLE}"
        )
    );
}

#[test]
fn memcgs_json_and_csv_exact_on_both_captures() {
    let (out, err) = ok2(&["memcgs", "-v", "--format", "json", &fixture(MEMCGS_73)]);
    // -v: the statistics and the table's line on stderr.
    assert_eq!(
        err,
        "# tracked: 465 allocations in 0 chains; table: 465/16384 allocations, 0/4096 chains, \
         1158144 bytes; not tracked: 0 (table full), 0 (nested)\n\
         # memcgs: 3/64 held; kept without their memcg: 0 (table full)\n"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let site = |rank, bytes, calls, line, func, memcgs: &[serde_json::Value]| {
        serde_json::json!({
            "rank": rank, "bytes": bytes, "calls": calls, "file": "modules/allocprof_test.c",
            "line": line, "module": "allocprof_test", "func": func, "memcgs": memcgs
        })
    };
    let cg = |memcg: &str, bytes: i64, calls: u64, accounted: Option<u64>| serde_json::json!({"memcg": memcg, "bytes": bytes, "calls": calls, "accounted": accounted});
    assert_eq!(
        v,
        serde_json::json!([
            site(
                1,
                1740800,
                425,
                390,
                "aptest_pages_account",
                &[
                    cg("/web", 1228800, 300, Some(1228800)),
                    cg("/batch", 491520, 120, Some(491520)),
                    cg("/", 20480, 5, Some(0)),
                ]
            ),
            site(
                2,
                5120,
                40,
                385,
                "aptest_kmalloc_account",
                &[cg("/web", 5120, 40, Some(5120))]
            ),
        ])
    );
    // 6.12: no accounted figures, null in JSON, empty in CSV.
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["memcgs", "--format", "json", &fixture(MEMCGS)])).unwrap();
    assert_eq!(v[0]["memcgs"][1], cg("/batch", 491520, 120, None));
    assert_eq!(
        v[1]["memcgs"],
        serde_json::json!([cg("/web", 5120, 40, None)])
    );
    let c = CACHE_TEST_C;
    assert_eq!(
        ok(&["memcgs", "--format", "csv", &fixture(MEMCGS)]),
        format!(
            "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
             1,{c},390,allocprof_test,aptest_pages_account,/web,1228800,300,\n\
             1,{c},390,allocprof_test,aptest_pages_account,/batch,491520,120,\n\
             1,{c},390,allocprof_test,aptest_pages_account,/,20480,5,\n\
             2,{c},385,allocprof_test,aptest_kmalloc_account,/web,5120,40,\n"
        )
    );
    assert_eq!(
        ok(&["memcgs", "--format", "csv", &fixture(MEMCGS_73)]),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
         1,modules/allocprof_test.c,390,allocprof_test,aptest_pages_account,/web,1228800,300,1228800\n\
         1,modules/allocprof_test.c,390,allocprof_test,aptest_pages_account,/batch,491520,120,491520\n\
         1,modules/allocprof_test.c,390,allocprof_test,aptest_pages_account,/,20480,5,0\n\
         2,modules/allocprof_test.c,385,allocprof_test,aptest_kmalloc_account,/web,5120,40,5120\n"
    );
}

#[test]
fn memcgs_filters_order_and_limits() {
    // Only /web: each site's totals are its /web figures.
    assert_eq!(
        ok(&["memcgs", "--memcg", "/web", "--format", "csv", &fixture(MEMCGS_73)]),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
         1,modules/allocprof_test.c,390,allocprof_test,aptest_pages_account,/web,1228800,300,1228800\n\
         2,modules/allocprof_test.c,385,allocprof_test,aptest_kmalloc_account,/web,5120,40,5120\n"
    );
    // Globs and the root, repeated (OR); a site with neither goes.
    let out = ok(&[
        "memcgs",
        "--memcg",
        "/b*",
        "--memcg",
        "/",
        &fixture(MEMCGS_73),
    ]);
    assert!(
        out.ends_with(&format!(
            "1 of 1 call sites, 500.0 KiB of 500.0 KiB total, only memcg /b*, /\n{MEMCGS_TABLE}"
        )),
        "{out}"
    );
    assert!(
        out.contains("┆ /batch ┆   480.0 KiB ┆         120 ┆ 480.0 KiB │"),
        "{out}"
    );
    // -n, --min-bytes and the site filters, as in nodes.
    let c = CACHE_TEST_C;
    assert_eq!(
        ok(&["memcgs", "-n", "1", "--format", "csv", &fixture(MEMCGS)])
            .lines()
            .count(),
        4
    );
    assert_eq!(
        ok(&[
            "memcgs",
            "--min-bytes",
            "1M",
            "--func",
            "aptest_*",
            "--format",
            "csv",
            &fixture(MEMCGS)
        ])
        .lines()
        .nth(3),
        Some(&*format!(
            "1,{c},390,allocprof_test,aptest_pages_account,/,20480,5,"
        ))
    );
    assert_eq!(
        ok(&[
            "memcgs",
            "--line",
            "385",
            "--format",
            "csv",
            &fixture(MEMCGS)
        ]),
        format!(
            "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
             1,{c},385,allocprof_test,aptest_kmalloc_account,/web,5120,40,\n"
        )
    );

    // The escaped path with a space, `-` and `?`, lines of one identity.
    let o = run_stdin(&["memcgs", "--format", "csv", "-"], MEMCGS_INPUT);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
         1,a/t.c,7,t,p,-,8192,2,0\n\
         1,a/t.c,7,t,p,/my\\040app,6144,2,6144\n\
         2,a/t.c,9,t,q,?,4096,1,0\n\
         2,a/t.c,9,t,q,/my\\040app,768,6,\n"
    );
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 10: malformed line (expected accounted:BYTES or the \
         end of the line after memcg:PATH, found \"app\"): \
         \"        1024        5 a/t.c:9 [t] func:q memcg:/my app accounted:1024\"\n"
    );
    // By calls: q (7) before p (4), and q's cgroups by calls too.
    let o = run_stdin(
        &["memcgs", "--by", "calls", "--format", "csv", "-"],
        MEMCGS_INPUT,
    );
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
         1,a/t.c,9,t,q,/my\\040app,768,6,\n\
         1,a/t.c,9,t,q,?,4096,1,0\n\
         2,a/t.c,7,t,p,-,8192,2,0\n\
         2,a/t.c,7,t,p,/my\\040app,6144,2,6144\n"
    );
    // The path as it is or as the file escapes it; `-` and `?` literally.
    for pat in ["/my app", "/my\\040app", "/my*"] {
        let o = run_stdin(
            &["memcgs", "--memcg", pat, "--format", "csv", "-"],
            MEMCGS_INPUT,
        );
        assert_eq!(
            stdout(&o),
            "rank,file,line,module,func,memcg,bytes,calls,accounted\n\
             1,a/t.c,7,t,p,/my\\040app,6144,2,6144\n\
             2,a/t.c,9,t,q,/my\\040app,768,6,\n",
            "{pat}"
        );
    }
    let o = run_stdin(
        &["memcgs", "--memcg", "?", "--format", "json", "-"],
        MEMCGS_INPUT,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{
            "rank": 1, "bytes": 4096, "calls": 1, "file": "a/t.c", "line": 9, "module": "t",
            "func": "q",
            "memcgs": [{"memcg": "?", "bytes": 4096, "calls": 1, "accounted": 0}]
        }])
    );
    let o = run_stdin(&["memcgs", "--memcg", "-", "-"], MEMCGS_INPUT);
    let out = stdout(&o);
    assert!(
        out.ends_with(
            "1 of 1 call sites, 8.0 KiB of 8.0 KiB total, only memcg -\n\
             memcg table: 2 of 64 held; 1 allocations kept without their memcg (table full)\n"
        ),
        "{out}"
    );
    // A cgroup nothing was made in: no rows.
    let o = run_stdin(
        &["memcgs", "--memcg", "/nope", "--format", "csv", "-"],
        MEMCGS_INPUT,
    );
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n"
    );
    // A bad glob is a usage error.
    assert_eq!(
        run(&["memcgs", "--memcg", "/a[", &fixture(MEMCGS)])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn memcgs_prometheus_exact() {
    let out = ok(&[
        "memcgs",
        "--format",
        "prometheus",
        "--func",
        "aptest_kmalloc_account",
        &fixture(MEMCGS_73),
    ]);
    let labels = "file=\"modules/allocprof_test.c\",line=\"385\",\
                  function=\"aptest_kmalloc_account\",module=\"allocprof_test\",memcg=\"/web\"";
    let what = "made in the memory cgroup of the memcg label (its path; - for none, ? for one \
                the table had no room for) (allocprof debugfs memcgs; call sites with the m flag).";
    assert_eq!(
        out,
        format!(
            "# HELP allocinfo_memcg_bytes Bytes of the live allocations of a call site {what}\n\
             # TYPE allocinfo_memcg_bytes gauge\n\
             allocinfo_memcg_bytes{{{labels}}} 5120\n\
             # HELP allocinfo_memcg_allocations Live allocations of a call site {what}\n\
             # TYPE allocinfo_memcg_allocations gauge\n\
             allocinfo_memcg_allocations{{{labels}}} 40\n\
             # HELP allocinfo_memcg_accounted_bytes Bytes of the live allocations that asked to \
             be charged (__GFP_ACCOUNT, a cgroup other than the root; Linux 7.3) of a call site \
             {what}\n\
             # TYPE allocinfo_memcg_accounted_bytes gauge\n\
             allocinfo_memcg_accounted_bytes{{{labels}}} 5120\n\
             # HELP allocinfo_memcg_table_held Slots of allocprof's memory cgroup table held \
             (allocprof debugfs memcgs).\n\
             # TYPE allocinfo_memcg_table_held gauge\n\
             allocinfo_memcg_table_held 3\n\
             # HELP allocinfo_memcg_table_slots Slots in allocprof's memory cgroup table \
             (allocprof debugfs memcgs).\n\
             # TYPE allocinfo_memcg_table_slots gauge\n\
             allocinfo_memcg_table_slots 64\n\
             # HELP allocinfo_memcg_kept_without_total Allocations allocprof kept without their \
             memory cgroup, as memcg \"?\", because its table was full (a count that only \
             grows; allocprof debugfs memcgs).\n\
             # TYPE allocinfo_memcg_kept_without_total counter\n\
             allocinfo_memcg_kept_without_total 0\n"
        )
    );
    // 6.12: no accounted gauge; the path with a space is one label value.
    let out = ok(&["memcgs", "--format", "prometheus", &fixture(MEMCGS)]);
    assert!(!out.contains("accounted"), "{out}");
    assert_eq!(out.matches("allocinfo_memcg_bytes{").count(), 4);
    let o = run_stdin(&["memcgs", "--format", "prometheus", "-"], MEMCGS_INPUT);
    assert!(stdout(&o).contains(
        "allocinfo_memcg_bytes{file=\"a/t.c\",line=\"9\",function=\"q\",module=\"t\",\
         memcg=\"/my\\\\040app\"} 768\n"
    ));
}

#[test]
fn memcgs_malformed_files_warn_or_fail_with_strict() {
    let input = "\
# allocprof memcgs: x
# memcgs: 3 held
        4096        1 a/t.c:7 [t] func:p memcg:web
        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:-1
        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:1 x
        4096        1 a/t.c:7 [t] func:p node:0
        4096        1 a/t.c:7 [t] func:p memcg:/a
";
    let o = run_stdin(&["memcgs", "--format", "csv", "-"], input);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 2: malformed line (expected # memcgs: H/N held; \
         kept without their memcg: K (table full)): \"# memcgs: 3 held\"\n\
         allocinfo: warning: <stdin>: line 3: malformed line (expected memcg:PATH (the \
         cgroup's path, escaped), memcg:- or memcg:? after func:NAME, found \"memcg:web\"): \
         \"        4096        1 a/t.c:7 [t] func:p memcg:web\"\n\
         allocinfo: warning: <stdin>: line 4: malformed line (expected accounted:BYTES or the \
         end of the line after memcg:PATH, found \"accounted:-1\"): \
         \"        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:-1\"\n\
         allocinfo: warning: <stdin>: line 5: malformed line (expected the end of the line \
         after accounted:BYTES, found \"x\"): \
         \"        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:1 x\"\n\
         allocinfo: warning: <stdin>: line 6: malformed line (expected memcg:PATH (the \
         cgroup's path, escaped), memcg:- or memcg:? after func:NAME, found \"node:0\"): \
         \"        4096        1 a/t.c:7 [t] func:p node:0\"\n"
    );
    assert_eq!(
        stdout(&o),
        "rank,file,line,module,func,memcg,bytes,calls,accounted\n1,a/t.c,7,t,p,/a,4096,1,\n"
    );
    // Without a well-formed header line, the table has no line of it.
    let o = run_stdin(&["memcgs", "-"], input);
    assert!(stdout(&o).ends_with("1 of 1 call sites, 4.0 KiB of 4.0 KiB total\n"));
    let o = run_stdin(&["memcgs", "--strict", "-"], input);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).ends_with("allocinfo: error: 5 malformed line(s) in <stdin> (--strict)\n"));
    // A nodes file is not a memcgs file, nor the other way round.
    let o = run(&["memcgs", "--strict", &fixture(NODES)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("found \"node:0\")"), "{}", stderr(&o));
    let o = run(&["nodes", "--strict", &fixture(MEMCGS)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("found \"memcg:/web\")"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn memcgs_missing_file_says_what_is_needed() {
    let o = run(&["memcgs", "/nonexistent/allocprof/memcgs"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "allocinfo: error: cannot read /nonexistent/allocprof/memcgs: No such file or \
         directory (os error 2) (debugfs must be mounted on /sys/kernel/debug, e.g. \
         `mount -t debugfs none /sys/kernel/debug`, and the allocprof module loaded)\n"
    );
}

// ------------------------------------------------------------------ faults

const FAULTS: &str = "guest-allocprof-faults.txt";
const DEV_TEST_C: &str = "/root/.cache/allocprof-dev/modbuild/base/modules/allocprof_test.c";
/// The header of the faults file as allocprof writes it since 2026-11-25
/// 22:40 UTC (the fixture has only its first line, the capture being older).
const FAULTS_HEADER: &str =
    "# allocprof faults: call sites with the f flag: failures, allocations \
                             asked, the call site, its knobs (times and space: what is left)\n\
                             # reports: at most 10 in 5000 ms, over all call sites\n";

/// Three call sites, one built-in, out of order by failures; a malformed
/// line; a second line of one identity.
const FAULTS_INPUT: &str = "\
# allocprof faults: x
failed:1 asked:10 mm/slub.c:2425 func:alloc_slab_page probability:10 interval:1 times:-1 space:4096 verbose:1
failed:4 asked:4 a/t.c:7 [t] func:p probability:100 interval:1 times:3 space:0 verbose:2
failed:1 asked:30 a/t.c:9 [t] func:q probability:5 interval:3 times:-1 space:0 verbose:0
failed:x asked:1 a/t.c:9 [t] func:q probability:5 interval:3 times:-1 space:0 verbose:0
failed:1 asked:2 a/t.c:7 [t] func:p probability:100 interval:1 times:2 space:0 verbose:2
";

#[test]
fn faults_fixture_parses_to_the_exact_sites() {
    let p = parse_faults(&std::fs::read_to_string(fixture(FAULTS)).unwrap());
    assert!(p.issues.is_empty(), "{:?}", p.issues);
    let site = |line: u32, func: &str| SiteKey {
        file: DEV_TEST_C.into(),
        line,
        module: Some("allocprof_test".into()),
        func: func.into(),
    };
    assert_eq!(
        p.sites,
        [
            FaultSite {
                site: site(225, "aptest_vmalloc_5p"),
                failed: 9,
                asked: 20,
                probability: 50,
                interval: 1,
                times: -1,
                space: 0,
                verbose: 0,
            },
            FaultSite {
                site: site(144, "aptest_kmalloc_100"),
                failed: 2,
                asked: 3,
                probability: 100,
                interval: 1,
                times: 0,
                space: 0,
                verbose: 2,
            },
        ]
    );
}

#[test]
fn faults_header_only_gives_no_rows() {
    let p = parse_faults(FAULTS_HEADER);
    assert_eq!((p.sites.len(), p.issues.len()), (0, 0));
    let out = |format: &str| {
        let o = run_stdin(&["faults", "--format", format, "-"], FAULTS_HEADER);
        assert_eq!((o.status.code(), stderr(&o)), (Some(0), String::new()));
        stdout(&o)
    };
    assert_eq!(
        out("table"),
        "\
┌───┬────────┬───────┬──────────┬────────┬──────────┬─────────────┬──────────┬────────────┬────────────┬─────────┐
│ # ┆ Failed ┆ Asked ┆ Location ┆ Module ┆ Function ┆ Probability ┆ Interval ┆ Times left ┆ Space left ┆ Verbose │
╞═══╪════════╪═══════╪══════════╪════════╪══════════╪═════════════╪══════════╪════════════╪════════════╪═════════╡
└───┴────────┴───────┴──────────┴────────┴──────────┴─────────────┴──────────┴────────────┴────────────┴─────────┘
0 of 0 call sites, 0 of 0 failures
"
    );
    assert_eq!(out("json"), "[]\n");
    assert_eq!(
        out("csv"),
        "rank,failed,asked,file,line,module,func,probability,interval,times_left,space_left,verbose\n"
    );
    // The metrics' help and type, no sample.
    let prom = out("prometheus");
    assert_eq!(prom.lines().count(), 14, "{prom}");
    assert!(prom.lines().all(|l| l.starts_with("# ")), "{prom}");
}

#[test]
fn faults_table_exact() {
    let out = ok(&["faults", &fixture(FAULTS)]);
    assert_eq!(
        out,
        format!(
            "\
┌───┬────────┬───────┬───────────────────────────────────────────────────────────────────────┬────────────────┬────────────────────┬─────────────┬──────────┬────────────┬────────────┬─────────┐
│ # ┆ Failed ┆ Asked ┆ Location                                                              ┆ Module         ┆ Function           ┆ Probability ┆ Interval ┆ Times left ┆ Space left ┆ Verbose │
╞═══╪════════╪═══════╪═══════════════════════════════════════════════════════════════════════╪════════════════╪════════════════════╪═════════════╪══════════╪════════════╪════════════╪═════════╡
│ 1 ┆      9 ┆    20 ┆ {DEV_TEST_C}:225 ┆ allocprof_test ┆ aptest_vmalloc_5p  ┆         50% ┆        1 ┆   no limit ┆        0 B ┆       0 │
│ 2 ┆      2 ┆     3 ┆ {DEV_TEST_C}:144 ┆ allocprof_test ┆ aptest_kmalloc_100 ┆        100% ┆        1 ┆          0 ┆        0 B ┆       2 │
└───┴────────┴───────┴───────────────────────────────────────────────────────────────────────┴────────────────┴────────────────────┴─────────────┴──────────┴────────────┴────────────┴─────────┘
2 of 2 call sites, 11 of 11 failures
"
        )
    );
    // -n: the footer counts what is shown of all.
    let out = ok(&["faults", "-n", "1", &fixture(FAULTS)]);
    assert!(
        out.ends_with("\n1 of 2 call sites, 9 of 11 failures\n"),
        "{out}"
    );
}

#[test]
fn faults_json_exact() {
    let out = ok(&["faults", "--format", "json", &fixture(FAULTS)]);
    assert_eq!(
        out,
        format!(
            r#"[
  {{
    "rank": 1,
    "failed": 9,
    "asked": 20,
    "file": "{DEV_TEST_C}",
    "line": 225,
    "module": "allocprof_test",
    "func": "aptest_vmalloc_5p",
    "probability": 50,
    "interval": 1,
    "times_left": -1,
    "space_left": 0,
    "verbose": 0
  }},
  {{
    "rank": 2,
    "failed": 2,
    "asked": 3,
    "file": "{DEV_TEST_C}",
    "line": 144,
    "module": "allocprof_test",
    "func": "aptest_kmalloc_100",
    "probability": 100,
    "interval": 1,
    "times_left": 0,
    "space_left": 0,
    "verbose": 2
  }}
]
"#
        )
    );
    // Built-in code has a null module.
    let o = run_stdin(
        &["faults", "--format", "json", "--module", "built-in", "-"],
        FAULTS_INPUT,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{
            "rank": 1, "failed": 1, "asked": 10, "file": "mm/slub.c", "line": 2425,
            "module": null, "func": "alloc_slab_page", "probability": 10, "interval": 1,
            "times_left": -1, "space_left": 4096, "verbose": 1
        }])
    );
}

#[test]
fn faults_csv_exact() {
    assert_eq!(
        ok(&["faults", "--format", "csv", &fixture(FAULTS)]),
        format!(
            "rank,failed,asked,file,line,module,func,probability,interval,times_left,space_left,verbose\n\
             1,9,20,{DEV_TEST_C},225,allocprof_test,aptest_vmalloc_5p,50,1,-1,0,0\n\
             2,2,3,{DEV_TEST_C},144,allocprof_test,aptest_kmalloc_100,100,1,0,0,2\n"
        )
    );
}

#[test]
fn faults_prometheus_exact() {
    let labels = |line: u32, func: &str| {
        format!(
            "{{file=\"{DEV_TEST_C}\",line=\"{line}\",function=\"{func}\",module=\"allocprof_test\"}}"
        )
    };
    let (v, k) = (
        labels(225, "aptest_vmalloc_5p"),
        labels(144, "aptest_kmalloc_100"),
    );
    assert_eq!(
        ok(&["faults", "--format", "prometheus", &fixture(FAULTS)]),
        format!(
            "# HELP allocinfo_fault_failures_total Allocations of a call site with the f flag \
             that were made to fail, since the flag was given (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_failures_total counter\n\
             allocinfo_fault_failures_total{v} 9\n\
             allocinfo_fault_failures_total{k} 2\n\
             # HELP allocinfo_fault_asked_total Allocations of a call site with the f flag that \
             asked whether to fail (all but __GFP_NOFAIL ones), since the flag was given \
             (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_asked_total counter\n\
             allocinfo_fault_asked_total{v} 20\n\
             allocinfo_fault_asked_total{k} 3\n\
             # HELP allocinfo_fault_probability_ratio The probability knob of a call site with \
             the f flag, as a ratio (probability=50 is 0.5) (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_probability_ratio gauge\n\
             allocinfo_fault_probability_ratio{v} 0.5\n\
             allocinfo_fault_probability_ratio{k} 1\n\
             # HELP allocinfo_fault_interval The interval knob of a call site with the f flag: \
             only every interval-th allocation asked may fail (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_interval gauge\n\
             allocinfo_fault_interval{v} 1\n\
             allocinfo_fault_interval{k} 1\n\
             # HELP allocinfo_fault_times_left Failures left of the times knob of a call site \
             with the f flag, +Inf for no limit (times=-1) (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_times_left gauge\n\
             allocinfo_fault_times_left{v} +Inf\n\
             allocinfo_fault_times_left{k} 0\n\
             # HELP allocinfo_fault_space_left_bytes Bytes left to spare of the space knob of a \
             call site with the f flag (allocprof debugfs faults).\n\
             # TYPE allocinfo_fault_space_left_bytes gauge\n\
             allocinfo_fault_space_left_bytes{v} 0\n\
             allocinfo_fault_space_left_bytes{k} 0\n\
             # HELP allocinfo_fault_verbose The verbose knob of a call site with the f flag: 0 \
             no report, 1 a report in the kernel log, 2 with the call chain (allocprof debugfs \
             faults).\n\
             # TYPE allocinfo_fault_verbose gauge\n\
             allocinfo_fault_verbose{v} 0\n\
             allocinfo_fault_verbose{k} 2\n"
        )
    );
}

#[test]
fn faults_filters_order_and_duplicates() {
    // Ranks and figures only: rank, failed, asked, func, times_left, space_left.
    let rows = |args: &[&str]| {
        let mut argv = vec!["faults", "--format", "csv"];
        argv.extend(args);
        if !args.contains(&"-n") {
            argv.extend(["-n", "0"]);
        }
        argv.push("-");
        let o = run_stdin(&argv, FAULTS_INPUT);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                [f[0], f[1], f[2], f[6], f[9], f[10]].join(",")
            })
            .collect::<Vec<_>>()
    };
    // The two lines of p are one call site: 5 failures of 6, 3 + 2 left.
    // Ties (q and alloc_slab_page, 1 failure) go by the other count.
    assert_eq!(
        rows(&[]),
        [
            "1,5,6,p,5,0",
            "2,1,30,q,-1,0",
            "3,1,10,alloc_slab_page,-1,4096"
        ]
    );
    assert_eq!(
        rows(&["--by", "asked"]),
        [
            "1,1,30,q,-1,0",
            "2,1,10,alloc_slab_page,-1,4096",
            "3,5,6,p,5,0"
        ]
    );
    assert_eq!(rows(&["-n", "1"]), ["1,5,6,p,5,0"]);
    assert_eq!(
        rows(&["--module", "built-in"]),
        ["1,1,10,alloc_slab_page,-1,4096"]
    );
    assert_eq!(rows(&["--module", "t", "--line", "9"]), ["1,1,30,q,-1,0"]);
    assert_eq!(rows(&["--func", "alloc_*"]).len(), 1);
    assert_eq!(rows(&["--file", "a/**"]).len(), 2);
    assert_eq!(
        rows(&["--file", "a/**", "--func", "q", "--func", "p"]).len(),
        2
    );
    assert_eq!(rows(&["--module", "nfs"]), [] as [&str; 0]);
}

#[test]
fn faults_malformed_lines_warn_or_fail_with_strict() {
    let o = run_stdin(
        &["faults", "--format", "csv", "--func", "q", "-"],
        FAULTS_INPUT,
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stderr(&o),
        "allocinfo: warning: <stdin>: line 5: malformed line (expected failed:N (the failures) \
         at the start of the line, found \"failed:x\"): \"failed:x asked:1 a/t.c:9 [t] func:q \
         probability:5 interval:3 times:-1 space:0 verbose:0\"\n"
    );
    assert_eq!(
        stdout(&o),
        "rank,failed,asked,file,line,module,func,probability,interval,times_left,space_left,verbose\n\
         1,1,30,a/t.c,9,t,q,5,3,-1,0,0\n"
    );
    let o = run_stdin(&["faults", "--strict", "-"], FAULTS_INPUT);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "allocinfo: error: <stdin>: line 5: malformed line (expected failed:N (the failures) \
         at the start of the line, found \"failed:x\"): \"failed:x asked:1 a/t.c:9 [t] func:q \
         probability:5 interval:3 times:-1 space:0 verbose:0\"\n\
         allocinfo: error: 1 malformed line(s) in <stdin> (--strict)\n"
    );
    // Each knob in its place and range; the line numbers count the header.
    let input = "\
# allocprof faults: x
failed:1 asked:2 a.c:1 func:f probability:101 interval:1 times:0 space:0 verbose:2
failed:1 asked:2 a.c:1 func:f probability:100 interval:0 times:0 space:0 verbose:2
failed:1 asked:2 a.c:1 func:f probability:100 interval:1 times:-2 space:0 verbose:2
failed:1 asked:2 a.c:1 func:f probability:100 interval:1 times:0 verbose:2

failed:1 asked:2 a.c:1 func:f probability:100 interval:1 times:0 space:0 verbose:3
failed:1 asked:2 a.c:1 func:f probability:100 interval:1 times:0 space:0 verbose:2 node:0
failed:1 asked:2 a.c:1 probability:100 interval:1 times:0 space:0 verbose:2
asked:2 failed:1 a.c:1 func:f probability:100 interval:1 times:0 space:0 verbose:2
";
    let o = run_stdin(&["faults", "--strict", "-"], input);
    assert_eq!(o.status.code(), Some(3));
    let said: Vec<String> = stderr(&o)
        .lines()
        .filter_map(|l| {
            let l = l.strip_prefix("allocinfo: error: <stdin>: line ")?;
            let (no, rest) = l.split_once(": malformed line (expected ")?;
            Some(format!("{no}: {}", rest.split_once("): \"")?.0))
        })
        .collect();
    assert_eq!(
        said,
        [
            "2: probability:P (0 to 100) after func:NAME, found \"probability:101\"",
            "3: interval:I (1 or more) after probability:P, found \"interval:0\"",
            "4: times:T (-1 or more) after interval:I, found \"times:-2\"",
            "5: space:S (bytes) after times:T, found \"verbose:2\"",
            "7: verbose:V (0, 1 or 2) after space:S, found \"verbose:3\"",
            "8: the end of the line after verbose:V, found \"node:0\"",
            "9: [module] or func:NAME after file:line, found \"probability:100\"",
            "10: failed:N (the failures) at the start of the line, found \"asked:2\"",
        ]
    );
    assert!(stderr(&o).ends_with("allocinfo: error: 8 malformed line(s) in <stdin> (--strict)\n"));
    // A nodes file is not a faults file.
    let o = run(&["faults", "--strict", &fixture(NODES)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains(
            "line 3: malformed line (expected failed:N (the failures) at the start of the \
             line, found \"12288\")"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn faults_missing_file_says_what_is_needed() {
    let o = run(&["faults", "/nonexistent/allocprof/faults"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "allocinfo: error: cannot read /nonexistent/allocprof/faults: No such file or \
         directory (os error 2) (debugfs must be mounted on /sys/kernel/debug, e.g. \
         `mount -t debugfs none /sys/kernel/debug`, and the allocprof module loaded)\n"
    );
    for bad in [
        vec!["faults", "--by", "bytes"],
        vec!["faults", "--min-bytes", "1K"],
        vec!["faults", "--format", "xml"],
        vec!["faults", "--func", "a[b"],
    ] {
        let mut args = bad.clone();
        let f = fixture(FAULTS);
        args.push(&f);
        assert_eq!(run(&args).status.code(), Some(2), "{bad:?}");
    }
}
