//! `top --by rate` on the pair of captures in tests/fixtures/rates/, a
//! minute apart (their names give the times: 12:00:00 and 12:01:00), with
//! figures chosen so that every rate is exact:
//!
//! | call site | allocations, bytes | frees, bytes | per second |
//! | --- | --- | --- | --- |
//! | `alloc_slab_page` (`accurate:no`) | 1800, 7372800 | 1740, 7127040 | 30, 29; 122880 B, 118784 B |
//! | `aptest_kmalloc_100` | 600, 76800 | 540, 69120 | 10, 9; 1280 B, 1152 B |
//! | `aptest_alloc_pages_3` | 120, 3932160 | 120, 3932160 | 2, 2; 65536 B, 65536 B |
//! | `alloc_thread_stack_node` | 90, 1474560 | 87, 1425408 | 1.5, 1.45; 24576 B, 23756.8 B |
//! | `add_recvbuf_mergeable` | 0, 0 | 0, 0 | 0 |
//!
//! and, without a rate: `__d_alloc` has the keys in the newer capture only,
//! `mt_alloc_bulk` in the older only, `kmalloc_reserve`'s allocations went
//! down from 1000 to 10 (its counts started again), and four sites have no
//! keys.

mod common;
use common::{fixture, ok2, run, stderr, stdout};

use allocinfo::compact;
use allocinfo::parse::parse_str;
use allocinfo::record::{Churn, Record};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const OLD: &str = "allocinfo-20261128T120000Z.txt";
const NEW: &str = "allocinfo-20261128T120100Z.txt";

fn rates_dir() -> PathBuf {
    Path::new(&fixture("rates")).to_path_buf()
}

/// Runs the binary in tests/fixtures/rates/, so that the captures' names
/// in its output are the bare file names.
fn run_in_rates(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(args)
        .current_dir(rates_dir())
        .output()
        .expect("run allocinfo")
}

/// Exit 0; (stdout, stderr).
fn ok_in_rates(args: &[&str]) -> (String, String) {
    let o = run_in_rates(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    (stdout(&o), stderr(&o))
}

/// The notes of the sites without a rate, on stderr.
const NOTES: &str = "\
allocinfo: note: lib/maple_tree.c:184 mt_alloc_bulk: allocated: and freed: in allocinfo-20261128T120000Z.txt only, not in allocinfo-20261128T120100Z.txt: no rate
allocinfo: note: fs/dcache.c:1681 __d_alloc: allocated: and freed: in allocinfo-20261128T120100Z.txt only, not in allocinfo-20261128T120000Z.txt: no rate
allocinfo: note: net/core/skbuff.c:659 kmalloc_reserve: allocations went down (1000 in allocinfo-20261128T120000Z.txt, 10 in allocinfo-20261128T120100Z.txt): its counts started again (c set again in between): no rate
allocinfo: note: 4 call sites without allocated: and freed: left out (allocprof's c flag gives a call site the keys allocated: and freed: in /proc/allocinfo format 2.0)
";

const CSV: &str = "\
rank,bytes,calls,file,line,module,func,seconds,allocs,frees,alloc_bytes,free_bytes,allocs_per_second,frees_per_second,alloc_bytes_per_second,free_bytes_per_second
1,73646080,17980,mm/slub.c,2450,,alloc_slab_page,60.0,1800,1740,7372800,7127040,30.0,29.0,122880.0,118784.0
2,8320,65,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,152,allocprof_test,aptest_kmalloc_100,60.0,600,540,76800,69120,10.0,9.0,1280.0,1152.0
3,131072,4,/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c,193,allocprof_test,aptest_alloc_pages_3,60.0,120,120,3932160,3932160,2.0,2.0,65536.0,65536.0
4,2146304,515,kernel/fork.c,311,,alloc_thread_stack_node,60.0,90,87,1474560,1425408,1.5,1.45,24576.0,23756.8
5,3145728,192,drivers/net/virtio_net.c,2510,virtio_net,add_recvbuf_mergeable,60.0,0,0,0,0,0.0,0.0,0.0,0.0
";

#[test]
fn the_captures_parse_cleanly_and_give_their_lines_back() {
    for name in [OLD, NEW] {
        let text = std::fs::read_to_string(rates_dir().join(name)).unwrap();
        let p = parse_str(&text);
        assert!(p.issues.is_empty(), "{name}: {:?}", p.issues);
        assert_eq!(p.records.len(), 12, "{name}");
        let again: String = p.records.iter().map(Record::to_line).collect();
        assert!(text.ends_with(&again), "{name}");
        let with_keys = p.records.iter().filter(|r| r.churn().is_some()).count();
        assert_eq!(with_keys, 7, "{name}");
    }
    let p = parse_str(&std::fs::read_to_string(rates_dir().join(NEW)).unwrap());
    let slab = p
        .records
        .iter()
        .find(|r| r.func == "alloc_slab_page")
        .unwrap();
    assert!(!slab.is_accurate());
    assert_eq!(
        slab.churn(),
        Some(Churn {
            allocs: 1801,
            alloc_bytes: 7376896,
            frees: 1740,
            free_bytes: 7127040,
        })
    );
}

#[test]
fn rate_table_exact() {
    let (out, err) = ok_in_rates(&["top", "--by", "rate", OLD, NEW]);
    assert_eq!(
        out,
        "\
┌───┬───────────┬───────┬───────────────────────────────────────────────────────────────────┬────────────────┬─────────────────────────┬──────────┬─────────┬─────────────┬─────────────┐
│ # ┆     Bytes ┆ Calls ┆ Location                                                          ┆ Module         ┆ Function                ┆ Allocs/s ┆ Frees/s ┆   Alloc B/s ┆    Free B/s │
╞═══╪═══════════╪═══════╪═══════════════════════════════════════════════════════════════════╪════════════════╪═════════════════════════╪══════════╪═════════╪═════════════╪═════════════╡
│ 1 ┆  70.2 MiB ┆ 17980 ┆ mm/slub.c:2450                                                    ┆ (built-in)     ┆ alloc_slab_page         ┆    30.00 ┆   29.00 ┆ 120.0 KiB/s ┆ 116.0 KiB/s │
│ 2 ┆   8.1 KiB ┆    65 ┆ /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:152 ┆ allocprof_test ┆ aptest_kmalloc_100      ┆    10.00 ┆    9.00 ┆   1.3 KiB/s ┆   1.1 KiB/s │
│ 3 ┆ 128.0 KiB ┆     4 ┆ /root/.cache/allocprof/modbuild/base/modules/allocprof_test.c:193 ┆ allocprof_test ┆ aptest_alloc_pages_3    ┆     2.00 ┆    2.00 ┆  64.0 KiB/s ┆  64.0 KiB/s │
│ 4 ┆   2.0 MiB ┆   515 ┆ kernel/fork.c:311                                                 ┆ (built-in)     ┆ alloc_thread_stack_node ┆     1.50 ┆    1.45 ┆  24.0 KiB/s ┆  23.2 KiB/s │
│ 5 ┆   3.0 MiB ┆   192 ┆ drivers/net/virtio_net.c:2510                                     ┆ virtio_net     ┆ add_recvbuf_mergeable   ┆     0.00 ┆    0.00 ┆       0 B/s ┆       0 B/s │
└───┴───────────┴───────┴───────────────────────────────────────────────────────────────────┴────────────────┴─────────────────────────┴──────────┴─────────┴─────────────┴─────────────┘
5 of 5 call sites with a rate, 75.4 MiB of 75.4 MiB total, 60 s from allocinfo-20261128T120000Z.txt to allocinfo-20261128T120100Z.txt
"
    );
    assert_eq!(err, NOTES);
}

#[test]
fn rate_csv_and_json_exact() {
    let (out, err) = ok_in_rates(&["top", "--by", "rate", "--format", "csv", OLD, NEW]);
    assert_eq!(out, CSV);
    assert_eq!(err, NOTES);

    let (out, _) = ok_in_rates(&[
        "top", "--by", "rate", "--format", "json", "-n", "0", OLD, NEW,
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["old"], OLD);
    assert_eq!(v["new"], NEW);
    assert_eq!(v["seconds"], 60.0);
    let sites = v["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 5);
    assert_eq!(
        sites[3],
        serde_json::json!({
            "rank": 4, "bytes": 2146304, "calls": 515, "file": "kernel/fork.c",
            "line": 311, "module": null, "func": "alloc_thread_stack_node",
            "allocs": 90, "frees": 87, "alloc_bytes": 1474560, "free_bytes": 1425408,
            "allocs_per_second": 1.5, "frees_per_second": 1.45,
            "alloc_bytes_per_second": 24576.0, "free_bytes_per_second": 23756.8
        })
    );
    assert_eq!(
        sites[1],
        serde_json::json!({
            "rank": 2, "bytes": 8320, "calls": 65,
            "file": "/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c",
            "line": 152, "module": "allocprof_test", "func": "aptest_kmalloc_100",
            "allocs": 600, "frees": 540, "alloc_bytes": 76800, "free_bytes": 69120,
            "allocs_per_second": 10.0, "frees_per_second": 9.0,
            "alloc_bytes_per_second": 1280.0, "free_bytes_per_second": 1152.0
        })
    );
    let per_s: Vec<(&str, f64, f64)> = sites
        .iter()
        .map(|s| {
            (
                s["func"].as_str().unwrap(),
                s["allocs_per_second"].as_f64().unwrap(),
                s["frees_per_second"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_s,
        [
            ("alloc_slab_page", 30.0, 29.0),
            ("aptest_kmalloc_100", 10.0, 9.0),
            ("aptest_alloc_pages_3", 2.0, 2.0),
            ("alloc_thread_stack_node", 1.5, 1.45),
            ("add_recvbuf_mergeable", 0.0, 0.0),
        ]
    );
}

#[test]
fn rate_filters_limit_and_min_bytes() {
    let csv = |extra: &[&str]| {
        let mut args = vec!["top", "--by", "rate", "--format", "csv"];
        args.extend(extra);
        args.extend([OLD, NEW]);
        ok_in_rates(&args).0
    };
    let rows = |s: String| -> Vec<String> {
        s.lines()
            .skip(1)
            .map(|l| l.split(',').nth(6).unwrap().to_string())
            .collect()
    };
    assert_eq!(
        rows(csv(&["--module", "allocprof_test"])),
        ["aptest_kmalloc_100", "aptest_alloc_pages_3"]
    );
    assert_eq!(
        rows(csv(&["-n", "2"])),
        ["alloc_slab_page", "aptest_kmalloc_100"]
    );
    // --min-bytes on the live bytes of the newer capture.
    assert_eq!(
        rows(csv(&["--min-bytes", "2M"])),
        [
            "alloc_slab_page",
            "alloc_thread_stack_node",
            "add_recvbuf_mergeable"
        ]
    );
    // The filter also narrows the notes: no site of the module lacks the keys.
    let (_, err) = ok_in_rates(&[
        "top",
        "--by",
        "rate",
        "--module",
        "allocprof_test",
        OLD,
        NEW,
    ]);
    assert_eq!(err, "");
    let (out, _) = ok_in_rates(&["top", "--by", "rate", "-n", "1", OLD, NEW]);
    assert!(
        out.ends_with(
            "1 of 5 call sites with a rate, 70.2 MiB of 75.4 MiB total, 60 s from \
             allocinfo-20261128T120000Z.txt to allocinfo-20261128T120100Z.txt\n"
        ),
        "{out}"
    );
}

#[test]
fn compact_snapshots_give_the_same_rates() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = vec![];
    for name in [OLD, NEW] {
        let p = parse_str(&std::fs::read_to_string(rates_dir().join(name)).unwrap());
        let c = compact::encode(p.version, &p.records);
        let path = dir.path().join(name.replace(".txt", ".compact"));
        std::fs::write(&path, c).unwrap();
        paths.push(path.to_string_lossy().into_owned());
    }
    let (out, _) = ok2(&[
        "top", "--by", "rate", "--format", "csv", &paths[0], &paths[1],
    ]);
    assert_eq!(out, CSV);
}

/// Exit status `code`, nothing on stdout, stderr exactly `want`.
fn fails(o: Output, code: i32, want: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(stderr(&o), want);
}

#[test]
fn rate_errors_say_why() {
    let v2 = fixture("v2.txt");
    fails(
        run(&[
            "top",
            "--by",
            "rate",
            &v2,
            &fixture(&format!("rates/{NEW}")),
        ]),
        1,
        &format!(
            "allocinfo: error: rates need each capture's time: {v2} has none in its name (a \
             snapshot named allocinfo-YYYYmmddTHHMMSSZ.txt or .compact, as `allocinfo snap` \
             writes; or --live)\n"
        ),
    );
    fails(
        run_in_rates(&["top", "--by", "rate", NEW, OLD]),
        1,
        "allocinfo: error: allocinfo-20261128T120000Z.txt is not later than \
         allocinfo-20261128T120100Z.txt: give the older capture first\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate", OLD, OLD]),
        1,
        "allocinfo: error: allocinfo-20261128T120000Z.txt is not later than \
         allocinfo-20261128T120000Z.txt: give the older capture first\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate", NEW]),
        2,
        "allocinfo: error: --by rate needs two captures, OLD NEW (got 1), or --live\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate"]),
        2,
        "allocinfo: error: --by rate needs two captures, OLD NEW (got 0), or --live\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate", "--format", "prometheus", OLD, NEW]),
        2,
        "allocinfo: error: --by rate has no Prometheus output: --format prometheus without \
         --by rate exports the churn counters (allocinfo_churn_*_total), of which Prometheus \
         takes rates\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate", "--interval", "5", OLD, NEW]),
        2,
        "allocinfo: error: --interval needs --live\n",
    );
    fails(
        run_in_rates(&["top", OLD, NEW]),
        2,
        "allocinfo: error: top reads one FILE; two captures, OLD NEW, are for --by rate\n",
    );
    fails(
        run_in_rates(&["top", "--interval", "5", NEW]),
        2,
        "allocinfo: error: --interval needs --by rate and --live\n",
    );
    fails(
        run_in_rates(&[
            "top", "--by", "rate", "--live", "--proc", NEW, "--via", "ioctl",
        ]),
        2,
        "allocinfo: error: --by rate reads the text of /proc/allocinfo: the ioctl's records \
         have no allocated: and freed: keys (--via auto or text)\n",
    );
    fails(
        run_in_rates(&["top", "--by", "rate", "--via", "text", OLD, NEW]),
        2,
        "allocinfo: error: --proc and --via need --live\n",
    );
    let o = run_in_rates(&["top", "--by", "rate", "--live", "--interval", "0.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("interval must be at least 1 second"),
        "{}",
        stderr(&o)
    );
    let o = run_in_rates(&["top", "--by", "rate", "--live", OLD]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn captures_without_keys_are_an_error() {
    // v2.txt (format 2.0, no c anywhere) under two snapshot names.
    let dir = tempfile::tempdir().unwrap();
    let v2 = std::fs::read(fixture("v2.txt")).unwrap();
    for name in [OLD, NEW] {
        std::fs::write(dir.path().join(name), &v2).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(["top", "--by", "rate", OLD, NEW])
        .current_dir(dir.path())
        .output()
        .unwrap();
    fails(
        o,
        1,
        "allocinfo: note: 11 call sites without allocated: and freed: left out (allocprof's c \
         flag gives a call site the keys allocated: and freed: in /proc/allocinfo format 2.0)\n\
         allocinfo: error: no call site has the keys allocated: and freed: in both \
         allocinfo-20261128T120000Z.txt and allocinfo-20261128T120100Z.txt: no rate \
         (allocprof's c flag gives a call site the keys allocated: and freed: in \
         /proc/allocinfo format 2.0)\n",
    );
}

#[test]
fn malformed_keys_are_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let old = std::fs::read_to_string(rates_dir().join(OLD)).unwrap();
    let new = std::fs::read_to_string(rates_dir().join(NEW))
        .unwrap()
        .replace("allocated:1474560/90 ", "allocated:1474560 ");
    std::fs::write(dir.path().join(OLD), old).unwrap();
    std::fs::write(dir.path().join(NEW), new).unwrap();
    let cmd = |strict: bool| {
        let mut args = vec!["top", "--by", "rate", "--format", "csv", OLD, NEW];
        if strict {
            args.push("--strict");
        }
        Command::new(env!("CARGO_BIN_EXE_allocinfo"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let bad = "line 8: malformed line (invalid allocated:1474560, expected \
               allocated:BYTES/CALLS): \"     2146304      515 kernel/fork.c:311 \
               func:alloc_thread_stack_node allocated:1474560 freed:1425408/87 \"";
    // Skipped with a warning: the site is then in the older capture only.
    let o = cmd(false);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("alloc_thread_stack_node"), "{out}");
    assert_eq!(out.lines().count(), 5, "{out}");
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("allocinfo: warning: {NEW}: {bad}\n")),
        "{err}"
    );
    assert!(
        err.contains(
            "allocinfo: note: kernel/fork.c:311 alloc_thread_stack_node: allocated: and freed: \
             in allocinfo-20261128T120000Z.txt only"
        ),
        "{err}"
    );
    // With --strict: exit 3, nothing printed.
    fails(
        cmd(true),
        3,
        &format!(
            "allocinfo: error: {NEW}: {bad}\nallocinfo: error: 1 malformed line(s) in {NEW} \
             (--strict)\n"
        ),
    );
}

#[test]
fn rate_live_reads_the_file_twice_an_interval_apart() {
    // A regular file does not change: every rate is 0, over at least the
    // interval; equal rates in the order of the sites (file, then line).
    let o = run_in_rates(&[
        "top",
        "--by",
        "rate",
        "--live",
        "--proc",
        NEW,
        "--interval",
        "1",
        "--format",
        "json",
        "--module",
        "allocprof_test",
        "-v",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["old"].as_str(), v["new"].as_str()),
        (Some("capture 1"), Some("capture 2"))
    );
    let secs = v["seconds"].as_f64().unwrap();
    assert!((1.0..30.0).contains(&secs), "{secs}");
    let sites = v["sites"].as_array().unwrap();
    let got: Vec<(&str, u64, i64, f64)> = sites
        .iter()
        .map(|s| {
            (
                s["func"].as_str().unwrap(),
                s["allocs"].as_u64().unwrap(),
                s["frees"].as_i64().unwrap(),
                s["allocs_per_second"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("aptest_kmalloc_100", 0, 0, 0.0),
            ("aptest_alloc_pages_3", 0, 0, 0.0)
        ]
    );
    // -v says the text is read, and when the second capture was taken.
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert_eq!(
        lines[0],
        "allocinfo: --by rate reads the text: the ioctl's records have no allocated: and freed: keys"
    );
    assert!(
        lines[1].starts_with(&format!("allocinfo: {NEW}: read as text: ")),
        "{err}"
    );
    assert!(
        lines[3].starts_with("allocinfo: the second capture ")
            && lines[3].ends_with(" ms after the first"),
        "{err}"
    );
}

#[test]
fn prometheus_exports_the_churn_counters() {
    let (out, err) = ok_in_rates(&["top", "-n", "0", "--format", "prometheus", NEW]);
    assert_eq!(err, "");
    let churn: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("allocinfo_churn_allocations_total"))
        .collect();
    let m = "/root/.cache/allocprof/modbuild/base/modules/allocprof_test.c";
    assert_eq!(
        churn,
        [
            "# HELP allocinfo_churn_allocations_total Allocations from a call site since \
             allocprof's c flag was set on it (/proc/allocinfo allocated:).",
            "# TYPE allocinfo_churn_allocations_total counter",
            "allocinfo_churn_allocations_total{file=\"mm/slub.c\",line=\"2450\",function=\"alloc_slab_page\",module=\"\"} 1801",
            "allocinfo_churn_allocations_total{file=\"fs/dcache.c\",line=\"1681\",function=\"__d_alloc\",module=\"\"} 1",
            "allocinfo_churn_allocations_total{file=\"drivers/net/virtio_net.c\",line=\"2510\",function=\"add_recvbuf_mergeable\",module=\"virtio_net\"} 1",
            "allocinfo_churn_allocations_total{file=\"net/core/skbuff.c\",line=\"659\",function=\"kmalloc_reserve\",module=\"\"} 10",
            "allocinfo_churn_allocations_total{file=\"kernel/fork.c\",line=\"311\",function=\"alloc_thread_stack_node\",module=\"\"} 90",
            &format!("allocinfo_churn_allocations_total{{file=\"{m}\",line=\"193\",function=\"aptest_alloc_pages_3\",module=\"allocprof_test\"}} 123"),
            &format!("allocinfo_churn_allocations_total{{file=\"{m}\",line=\"152\",function=\"aptest_kmalloc_100\",module=\"allocprof_test\"}} 605"),
        ]
    );
    // In the order of the gauges (bytes), one line a site with the keys, each counter.
    for (name, want) in [
        ("allocinfo_churn_frees_total", "1740 0 0 5 87 121 544"),
        (
            "allocinfo_churn_allocated_bytes_total",
            "7376896 192 16384 20480 1474560 4030464 77440",
        ),
        (
            "allocinfo_churn_freed_bytes_total",
            "7127040 0 0 10240 1425408 3964928 69632",
        ),
    ] {
        let values: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .map(|l| l.rsplit_once(' ').unwrap().1)
            .collect();
        assert_eq!(values.join(" "), want, "{name}");
        assert!(out.contains(&format!("# TYPE {name} counter\n")), "{name}");
    }
    // The gauges are as before, a line for each of the 12 sites.
    assert_eq!(out.matches("\nallocinfo_bytes{").count(), 12);
    // Without the keys, no counter.
    let (out, _) = ok2(&[
        "top",
        "-n",
        "0",
        "--format",
        "prometheus",
        &fixture("v2.txt"),
    ]);
    assert!(!out.contains("churn"), "{out}");
}
