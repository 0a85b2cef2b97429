//! `allocinfo leaks` on a series made from a real guest capture: the
//! fixtures in tests/fixtures/leaks/ are tests/fixtures/guest-allocprof-a.txt
//! seven times, a minute apart, with four of its call sites scaled (see
//! [`scaled`]); every other line is the capture's own. The test
//! `fixtures_are_the_guest_capture_with_four_sites_scaled` checks that the
//! files are what [`scaled`] makes; `ALLOCINFO_WRITE_LEAKS_FIXTURES=1 cargo
//! test --test leaks` writes them again.

mod common;
use common::{fixture, ok, ok2, run, stderr};

use allocinfo::parse::{parse_line, Line};
use std::path::PathBuf;

/// The capture the series is made of.
const BASE: &str = "guest-allocprof-a.txt";
/// The snapshot times: a minute apart.
const TIMES: [&str; 7] = [
    "20261124T120000Z",
    "20261124T120100Z",
    "20261124T120200Z",
    "20261124T120300Z",
    "20261124T120400Z",
    "20261124T120500Z",
    "20261124T120600Z",
];

const LEAKER: &str = "/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 \
                      [allocprof_test] aptest_kmalloc_100";
/// The sawtooth, in units of 61440 bytes (15 pages) above the capture's
/// 131072: +20 and -16 in turn.
const SAW: [i64; 7] = [0, 20, 4, 24, 8, 28, 12];

/// The bytes and calls of capture `k` (0 to 6) for the sites that change:
/// * `aptest_kmalloc_100` (the leaker): 30 more 128-byte allocations a
///   minute, 3840 bytes: 64 B/s, R² = 1, grew in 6 of 6 steps;
/// * `alloc_slab_page` (the sawtooth): 131072 + SAW[k] × 61440 bytes:
///   2048 B/s, R² = 49/292, grew in 3 of 6 steps;
/// * `__execmem_alloc` (grew once): 573440 bytes more from the second
///   capture on (a module loaded): 1024 B/s, R² = 3/8, grew in 1 of 6;
/// * `__kernfs_new_node` (shrinks): 5 fewer 136-byte nodes a minute:
///   -34/3 B/s, R² = 1, grew in 0 of 6.
fn scaled(k: usize, site: &str) -> Option<(i64, u64)> {
    let ki = k as i64;
    let ku = k as u64;
    Some(match site {
        LEAKER => (5120 + 3840 * ki, 40 + 30 * ku),
        "mm/slub.c:2425 alloc_slab_page" => (131_072 + SAW[k] * 61_440, 13 + 15 * SAW[k] as u64),
        "mm/execmem.c:31 __execmem_alloc" if k > 0 => (616_480 + 573_440, 154 + 140),
        "fs/kernfs/dir.c:624 __kernfs_new_node" => (8160 - 680 * ki, 60 - 5 * ku),
        _ => return None,
    })
}

/// Capture `k` of the series.
fn capture(k: usize) -> String {
    let base = std::fs::read_to_string(fixture(BASE)).unwrap();
    let mut out = String::new();
    for line in base.lines() {
        match parse_line(line) {
            Ok(Line::Record(mut r)) => {
                if let Some((bytes, calls)) = scaled(k, &r.key().to_string()) {
                    (r.bytes, r.calls) = (bytes, calls);
                }
                out.push_str(&r.to_line());
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// allocprof's ages file at the last capture: the leaker's 220 live
/// allocations (the 40 of the capture, made about half an hour before,
/// and one every 2 s since the first capture, aged 1, 3, …, 359 s), the
/// sawtooth's (all young: it frees them) and a site that is not in the
/// series.
const AGES: &str = "\
# allocprof ages: live allocations of call sites with the a flag, by age in power-of-two buckets of seconds
# tracked: 418 allocations in 0 chains; table: 418/16384 allocations, 0/4096 chains, 722944 bytes; not tracked: 0 (table full), 0 (nested)
      245760       60 mm/slub.c:2425 func:alloc_slab_page age:0-1s
      622592      133 mm/slub.c:2425 func:alloc_slab_page age:16-32s
         128        1 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:1-2s
         128        1 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:2-4s
         256        2 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:4-8s
         512        4 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:8-16s
        1024        8 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:16-32s
        2048       16 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:32-64s
        4096       32 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:64-128s
        8192       64 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:128-256s
        6656       52 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:256-512s
        5120       40 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 [allocprof_test] func:aptest_kmalloc_100 age:1024-2048s
      163840        5 /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:179 [allocprof_test] func:aptest_alloc_pages_3 age:64-128s
";

fn leaks_dir() -> PathBuf {
    PathBuf::from(fixture("leaks"))
}

fn snapshot(k: usize) -> PathBuf {
    leaks_dir().join(format!("allocinfo-{}.txt", TIMES[k]))
}

fn ages_file() -> String {
    leaks_dir().join("ages.txt").to_string_lossy().into_owned()
}

#[test]
fn fixtures_are_the_guest_capture_with_four_sites_scaled() {
    let write = std::env::var_os("ALLOCINFO_WRITE_LEAKS_FIXTURES").is_some();
    if write {
        std::fs::create_dir_all(leaks_dir()).unwrap();
        for k in 0..TIMES.len() {
            std::fs::write(snapshot(k), capture(k)).unwrap();
        }
        std::fs::write(ages_file(), AGES).unwrap();
    }
    let base = std::fs::read_to_string(fixture(BASE)).unwrap();
    for k in 0..TIMES.len() {
        let text = std::fs::read_to_string(snapshot(k)).unwrap();
        assert_eq!(text, capture(k), "{}", snapshot(k).display());
        // The first is the capture; four lines differ in the others.
        let differ = text
            .lines()
            .zip(base.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differ, if k == 0 { 0 } else { 4 }, "{k}");
        assert_eq!(text.lines().count(), base.lines().count());
    }
    assert_eq!(std::fs::read_to_string(ages_file()).unwrap(), AGES);
    let listed: Vec<String> = std::fs::read_dir(leaks_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("allocinfo-"))
        .collect();
    assert_eq!(listed.len(), TIMES.len());
}

/// The series, file by file, oldest first.
fn series() -> Vec<String> {
    (0..TIMES.len())
        .map(|k| snapshot(k).to_string_lossy().into_owned())
        .collect()
}

fn leaks(args: &[&str]) -> String {
    let dir = leaks_dir();
    ok(&[&["leaks"], args, &[dir.to_str().unwrap()]].concat())
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&leaks(&[args, &["--format", "json"]].concat())).unwrap()
}

/// (function, suspect, slope, R², growth, grew) of each site of a JSON answer.
fn sites(v: &serde_json::Value) -> Vec<(String, bool, f64, f64, i64, u64)> {
    v["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["func"].as_str().unwrap().to_string(),
                s["suspect"].as_bool().unwrap(),
                s["slope"].as_f64().unwrap(),
                s["r2"].as_f64().unwrap(),
                s["growth"].as_i64().unwrap(),
                s["grew"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn row(
    f: &str,
    suspect: bool,
    slope: f64,
    r2: f64,
    growth: i64,
    grew: u64,
) -> (String, bool, f64, f64, i64, u64) {
    (f.to_string(), suspect, slope, r2, growth, grew)
}

const TABLE: &str = "\
7 captures from 2026-11-24 12:00:00 to 12:06:00 UTC (360 s); slopes in bytes per second
Leak suspects: slope > 0, R² ≥ 0.9, grew in ≥ 2/3 of the 6 steps (at least 4)
┌───┬─────────┬────────────┬───────┬────────────┬──────┬───────────┬──────────────────────────────────────────────────────────────────┬────────────────┬────────────────────┐
│ # ┆ Suspect ┆      Slope ┆    R² ┆     Growth ┆ Grew ┆      Last ┆ Location                                                         ┆ Module         ┆ Function           │
╞═══╪═════════╪════════════╪═══════╪════════════╪══════╪═══════════╪══════════════════════════════════════════════════════════════════╪════════════════╪════════════════════╡
│ 1 ┆ yes     ┆    +64 B/s ┆ 1.000 ┆  +22.5 KiB ┆  6/6 ┆  27.5 KiB ┆ /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82 ┆ allocprof_test ┆ aptest_kmalloc_100 │
│ 2 ┆         ┆ +1.0 KiB/s ┆ 0.375 ┆ +560.0 KiB ┆  1/6 ┆   1.1 MiB ┆ mm/execmem.c:31                                                  ┆ (built-in)     ┆ __execmem_alloc    │
│ 3 ┆         ┆ +2.0 KiB/s ┆ 0.168 ┆ +720.0 KiB ┆  3/6 ┆ 848.0 KiB ┆ mm/slub.c:2425                                                   ┆ (built-in)     ┆ alloc_slab_page    │
│ 4 ┆         ┆    -11 B/s ┆ 1.000 ┆   -4.0 KiB ┆  0/6 ┆   4.0 KiB ┆ fs/kernfs/dir.c:624                                              ┆ (built-in)     ┆ __kernfs_new_node  │
└───┴─────────┴────────────┴───────┴────────────┴──────┴───────────┴──────────────────────────────────────────────────────────────────┴────────────────┴────────────────────┘
4 of 4 call sites that changed, 1 leak suspect(s); 56 call sites unchanged
";

#[test]
fn the_steady_leaker_ranks_first_and_the_sawtooth_below_it() {
    assert_eq!(leaks(&[]), TABLE);
    let v = json(&[]);
    assert_eq!(
        sites(&v),
        vec![
            row("aptest_kmalloc_100", true, 64.0, 1.0, 23040, 6),
            row("__execmem_alloc", false, 1024.0, 0.375, 573_440, 1),
            row("alloc_slab_page", false, 2048.0, 49.0 / 292.0, 737_280, 3),
            row("__kernfs_new_node", false, -34.0 / 3.0, 1.0, -4080, 0),
        ]
    );
    assert_eq!(v["captures"], 7);
    assert_eq!(v["unit"], "bytes_per_second");
    assert_eq!(v["first"], "2026-11-24T12:00:00Z");
    assert_eq!(v["last"], "2026-11-24T12:06:00Z");
    assert_eq!(v["span_s"], 360.0);
    assert_eq!(
        v["rule"],
        serde_json::json!({"min_r2": 0.9, "min_grew": "2/3", "min_grew_steps": 4})
    );
    assert_eq!(
        (
            v["changed"].clone(),
            v["unchanged"].clone(),
            v["suspects"].clone()
        ),
        (4.into(), 56.into(), 1.into())
    );
    let s = &v["sites"][2];
    assert_eq!(
        s["bytes"],
        serde_json::json!([131072, 1359872, 376832, 1605632, 622592, 1851392, 868352])
    );
    assert_eq!(
        (
            s["first_bytes"].clone(),
            s["last_bytes"].clone(),
            s["peak_bytes"].clone()
        ),
        (131072.into(), 868352.into(), 1851392.into())
    );
    assert_eq!(s["oldest_age"], serde_json::Value::Null);
    assert_eq!(s["file"], "mm/slub.c");
    assert_eq!(s["line"], 2425);
    assert_eq!(s["module"], serde_json::Value::Null);

    // Files one by one, in order, give the same as the directory.
    let files = series();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    assert_eq!(ok(&[&["leaks"], args.as_slice()].concat()), TABLE);
}

#[test]
fn csv_with_the_oldest_ages() {
    let out = leaks(&["--ages", &ages_file(), "--format", "csv"]);
    assert_eq!(
        out,
        "rank,suspect,slope,r2,growth,grew,steps,first_bytes,last_bytes,peak_bytes,file,line,module,func,oldest_age_lo_s,oldest_age_hi_s\n\
         1,true,64.0,1.0,23040,6,6,5120,28160,28160,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,82,allocprof_test,aptest_kmalloc_100,1024,2048\n\
         2,false,1024.0,0.375,573440,1,6,616480,1189920,1189920,mm/execmem.c,31,,__execmem_alloc,,\n\
         3,false,2048.0,0.1678082191780822,737280,3,6,131072,868352,1851392,mm/slub.c,2425,,alloc_slab_page,16,32\n\
         4,false,-11.333333333333334,1.0,-4080,0,6,8160,4080,8160,fs/kernfs/dir.c,624,,__kernfs_new_node,,\n"
    );
    let v = json(&["--ages", &ages_file()]);
    assert_eq!(
        v["sites"][0]["oldest_age"],
        serde_json::json!({"lo_s": 1024, "hi_s": 2048, "bytes": 5120, "calls": 40})
    );
    assert_eq!(
        v["sites"][2]["oldest_age"],
        serde_json::json!({"lo_s": 16, "hi_s": 32, "bytes": 622592, "calls": 133})
    );
    let table = leaks(&["--ages", &ages_file(), "-n", "3"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[3].ends_with("┆ Function           ┆ Oldest age            │"),
        "{table}"
    );
    assert!(
        lines[5].ends_with("┆ aptest_kmalloc_100 ┆ 1024-2048s (40 calls) │"),
        "{table}"
    );
    assert!(
        lines[6].ends_with("┆ __execmem_alloc    ┆ -                     │"),
        "{table}"
    );
    assert!(
        lines[7].ends_with("┆ alloc_slab_page    ┆ 16-32s (133 calls)    │"),
        "{table}"
    );
    assert_eq!(
        lines[9],
        "3 of 4 call sites that changed, 1 leak suspect(s); 56 call sites unchanged"
    );
}

#[test]
fn without_timestamps_slopes_are_per_capture() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..TIMES.len())
        .map(|k| {
            let p = dir.path().join(format!("capture-{k}.txt"));
            std::fs::copy(snapshot(k), &p).unwrap();
            p.to_string_lossy().into_owned()
        })
        .collect();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let out = ok(&[&["leaks", "--format", "json"], args.as_slice()].concat());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["unit"], "bytes_per_capture");
    assert_eq!(
        (v["first"].clone(), v["span_s"].clone()),
        (serde_json::Value::Null, serde_json::Value::Null)
    );
    assert_eq!(
        sites(&v),
        vec![
            row("aptest_kmalloc_100", true, 3840.0, 1.0, 23040, 6),
            row("__execmem_alloc", false, 61440.0, 0.375, 573_440, 1),
            row(
                "alloc_slab_page",
                false,
                122_880.0,
                49.0 / 292.0,
                737_280,
                3
            ),
            row("__kernfs_new_node", false, -680.0, 1.0, -4080, 0),
        ]
    );
    let table = ok(&[&["leaks", "-n", "1"], args.as_slice()].concat());
    assert!(
        table.starts_with(
            "7 captures (not all named allocinfo-<timestamp>); slopes in bytes per capture\n"
        ),
        "{table}"
    );
    assert!(table.contains("┆ +3.8 KiB/capture ┆"), "{table}");
}

#[test]
fn thresholds_filters_and_limits() {
    // No fit or share needed: every grower is a suspect, by slope.
    let v = json(&["--min-r2", "0", "--min-grew", "0"]);
    let order: Vec<String> = sites(&v).into_iter().map(|s| s.0).collect();
    assert_eq!(
        order,
        [
            "alloc_slab_page",
            "__execmem_alloc",
            "aptest_kmalloc_100",
            "__kernfs_new_node"
        ]
    );
    assert_eq!(v["suspects"], 3);
    assert_eq!(v["rule"]["min_grew_steps"], 0);
    // Grew in half of the steps, a poor fit: the sawtooth too.
    let v = json(&["--min-r2", "0.1", "--min-grew", "0.5"]);
    let suspects: Vec<String> = sites(&v).into_iter().filter(|s| s.1).map(|s| s.0).collect();
    assert_eq!(suspects, ["alloc_slab_page", "aptest_kmalloc_100"]);
    assert_eq!(
        v["rule"],
        serde_json::json!({"min_r2": 0.1, "min_grew": "1/2", "min_grew_steps": 3})
    );
    // A perfect fit in every step: the leaker only.
    let v = json(&["--min-r2", "1", "--min-grew", "1/1"]);
    assert_eq!(v["suspects"], 1);
    // --min-bytes: by the peak over the series.
    let v = json(&["--min-bytes", "1M"]);
    let order: Vec<String> = sites(&v).into_iter().map(|s| s.0).collect();
    assert_eq!(order, ["__execmem_alloc", "alloc_slab_page"]);
    assert_eq!(
        (v["changed"].clone(), v["suspects"].clone()),
        (2.into(), 0.into())
    );
    // Filters select the sites of every capture.
    let v = json(&["--module", "allocprof_test"]);
    assert_eq!(sites(&v).len(), 1);
    assert_eq!(v["unchanged"], 0);
    let v = json(&["--file", "mm/*", "-n", "1"]);
    assert_eq!(
        sites(&v).into_iter().map(|s| s.0).collect::<Vec<_>>(),
        ["__execmem_alloc"]
    );
    assert_eq!(v["changed"], 2);
    let table = leaks(&["-n", "2"]);
    assert!(
        table.ends_with(
            "2 of 4 call sites that changed, 1 leak suspect(s); 56 call sites unchanged\n"
        ),
        "{table}"
    );
}

#[test]
fn plot_draws_the_ranked_sites() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("leaks.svg");
    let out = leaks(&["-n", "3", "--plot", svg.to_str().unwrap()]);
    assert_eq!(out.lines().count(), TABLE.lines().count() - 1);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for s in [
        "Leak suspects: 3 call sites by steady growth over 7 captures",
        "aptest_kmalloc_100 (/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:82) [allocprof_test]",
        "__execmem_alloc (mm/execmem.c:31)",
        "alloc_slab_page (mm/slub.c:2425)",
        "12:00:00",
    ] {
        assert!(text.contains(s), "SVG lacks {s:?}");
    }
    assert!(!text.contains("__kernfs_new_node"));
    // Unwritable: a runtime error.
    let o = run(&[
        "leaks",
        "--plot",
        "/nonexistent/dir/x.svg",
        leaks_dir().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn bad_input_is_an_error_that_says_why() {
    let files = series();
    // Too few captures.
    let o = run(&["leaks", &files[0], &files[1]]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "allocinfo: error: leaks needs at least 3 captures to fit a trend, got 2 ({}, {})\n",
            files[0], files[1]
        )
    );
    // Out of order.
    let o = run(&["leaks", &files[0], &files[2], &files[1]]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "allocinfo: error: {} is not later than {}: captures must be given oldest first, \
             each at another time\n",
            files[1], files[2]
        )
    );
    // A directory without snapshots, a missing file.
    let empty = tempfile::tempdir().unwrap();
    let o = run(&["leaks", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no allocinfo-<timestamp>.txt snapshots"));
    let o = run(&["leaks", &files[0], &files[1], "/nonexistent/allocinfo"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read /nonexistent/allocinfo"));
    let o = run(&[
        "leaks",
        "--ages",
        "/nonexistent/ages",
        leaks_dir().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read /nonexistent/ages"));
    // Usage errors.
    let dir = leaks_dir();
    let d = dir.to_str().unwrap();
    for (args, says) in [
        (
            vec!["leaks"],
            "leaks needs captures: FILE... (oldest first), a DIR of snapshots, or --live",
        ),
        (
            vec!["leaks", "--interval", "5", d],
            "--interval and --count need --live",
        ),
        (
            vec!["leaks", "--count", "5", d],
            "--interval and --count need --live",
        ),
        (
            vec!["leaks", "--live", "--count", "2"],
            "2 captures are too few: a trend needs at least 3",
        ),
        (
            vec!["leaks", "--live", "--interval", "0.5"],
            "interval must be at least 1 second",
        ),
        (vec!["leaks", "--min-r2", "1.5", d], "a number from 0 to 1"),
        (
            vec!["leaks", "--min-grew", "4/3", d],
            "a fraction from 0 to 1",
        ),
        (vec!["leaks", "--live", d], "cannot be used with"),
        (
            vec!["leaks", "--format", "prometheus", d],
            "invalid value 'prometheus'",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    // A malformed ages line: a warning, or exit 3 with --strict.
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        bad.path(),
        format!("{AGES}   1 1 mm/x.c:1 func:f age:3-5s\n"),
    )
    .unwrap();
    let b = bad.path().to_str().unwrap();
    let (out, err) = ok2(&["leaks", "--ages", b, "-n", "1", "--format", "csv", d]);
    assert!(out.ends_with(",aptest_kmalloc_100,1024,2048\n"), "{out}");
    assert!(
        err.starts_with(&format!(
            "allocinfo: warning: ages: {b}: line 16: malformed line"
        )),
        "{err}"
    );
    let o = run(&["leaks", "--strict", "--ages", b, d]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

#[test]
fn live_samples_the_kernel_file() {
    // A regular file refuses the ioctl: read as text, three times, a
    // second apart. It does not change: nothing grew.
    let f = snapshot(6);
    let (out, err) = ok2(&[
        "leaks",
        "--live",
        "--proc",
        f.to_str().unwrap(),
        "--interval",
        "1",
        "--count",
        "3",
        "--format",
        "json",
        "-v",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["captures"], 3);
    assert_eq!(v["unit"], "bytes_per_second");
    assert_eq!(
        (v["changed"].clone(), v["unchanged"].clone()),
        (0.into(), 60.into())
    );
    assert_eq!(v["sites"], serde_json::json!([]));
    let span = v["span_s"].as_f64().unwrap();
    assert!((2.0..4.0).contains(&span), "{span}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains(": capture ")).collect();
    assert_eq!(said.len(), 3, "{err}");
    assert!(
        said[2].starts_with("allocinfo: capture 3 of 3 at "),
        "{err}"
    );
}

#[test]
fn help_states_the_rule() {
    let out = ok(&["leaks", "--help"]);
    assert!(out.contains(
        "A call site is a leak SUSPECT when its slope > 0, R² >= --min-r2 (default 0.9) and"
    ));
    assert!(out.contains("[default: 2/3]"));
    assert!(out.contains("Exit status:"));
}
