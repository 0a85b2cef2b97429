//! Tests on real captures of `/proc/allocinfo` from the project's guest
//! (`scripts/capture-fixtures`): allocprof on the patched kernel, and
//! upstream's built-in profiler on the same kernel source.  Both captures
//! were taken after the same allocations of the test module: 40 ×
//! `kmalloc(100)` (a), then 20 × `alloc_pages(order 3)` more (b).
//!
//! `diff --match moved` across kernels: the same capture a on Linux 7.3's
//! built-in profiler (`scripts/capture-fixtures 7.3`).
//!
//! `leaks` on a real series (`scripts/capture-fixtures series`): eight
//! captures of allocprof while the test module leaks at a known rate
//! beside a sawtooth and a site that grew once.
//!
//! `top --by rate` on two real captures of allocprof's churn keys
//! (`scripts/capture-fixtures rates`): the test module's two sites with
//! the `c` flag, allocating and freeing known numbers between them.

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
         allocprof_test,aptest_alloc_pages_3,new,0,655360,655360,0,20,20,,,"
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

/// The series of `scripts/capture-fixtures series`: eight captures of a
/// base guest (allocprof), in tests/fixtures/leaks-guest/, oldest first.
fn leaks_series() -> Vec<String> {
    (0..8)
        .map(|k| fixture(&format!("leaks-guest/capture-{k}.txt")))
        .collect()
}

/// Before capture k (0 to 7) the test module allocated 5 × kmalloc(100)
/// at `aptest_kmalloc_100` and freed none (the leak); 20 × kmalloc(1000) at
/// `aptest_kmalloc_1000` before the odd captures, all freed again before
/// the even ones (the sawtooth); 2 order-3 page blocks at
/// `aptest_alloc_pages_3` before capture 1, kept (the flat one).  A
/// kmalloc(100) is a kmalloc-128 object, 128 bytes a call as allocprof
/// counts it; a kmalloc(1000) one of kmalloc-1k, 1024 bytes.
fn series_test_sites(k: usize) -> Vec<(String, i64, u64)> {
    let mut v = Vec::new();
    if k >= 1 {
        v.push(("aptest_alloc_pages_3".to_string(), 2 * 32768, 2));
    }
    let leaked = 5 * (k as u64 + 1);
    v.push((
        "aptest_kmalloc_100".to_string(),
        128 * leaked as i64,
        leaked,
    ));
    if k % 2 == 1 {
        v.push(("aptest_kmalloc_1000".to_string(), 20 * 1024, 20));
    }
    v
}

#[test]
fn the_series_captures_have_the_test_modules_known_figures() {
    for (k, f) in leaks_series().iter().enumerate() {
        let name = format!("leaks-guest/capture-{k}.txt");
        assert_eq!(test_sites(&name), series_test_sites(k), "{f}");
    }
}

/// (rank, suspect, slope, R², growth, grew, bytes by capture) of a site of
/// a leaks JSON answer.
type Trend = (u64, bool, f64, f64, i64, u64, Vec<i64>);

fn trend(s: &serde_json::Value) -> Trend {
    (
        s["rank"].as_u64().unwrap(),
        s["suspect"].as_bool().unwrap(),
        s["slope"].as_f64().unwrap(),
        s["r2"].as_f64().unwrap(),
        s["growth"].as_i64().unwrap(),
        s["grew"].as_u64().unwrap(),
        s["bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_i64().unwrap())
            .collect(),
    )
}

/// `leaks` on a real series: the site that leaks at a known rate ranks
/// first, with the exact slope of the leak; the sawtooth and the site that
/// grew once are no suspects.  Slopes are per capture (the files have no
/// timestamps), so they are exact: x = 0..7, the fit's sums are integers.
#[test]
fn leaks_ranks_the_test_modules_leak_first_on_a_real_series() {
    let files = leaks_series();
    let mut args = vec!["leaks", "-n", "0", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(v["captures"], 8);
    assert_eq!(v["unit"], "bytes_per_capture");
    assert_eq!(v["rule"]["min_grew_steps"], 5);
    let sites = v["sites"].as_array().unwrap();
    let by_func = |f: &str| {
        let found: Vec<_> = sites.iter().filter(|s| s["func"] == f).collect();
        assert_eq!(found.len(), 1, "{f}");
        found[0]
    };
    // The leak: 5 × 128 bytes a capture, on a perfect line, grown in all 7
    // steps; first, and the largest slope of the suspects.
    let leak = by_func("aptest_kmalloc_100");
    assert_eq!(leak["module"], "allocprof_test");
    assert_eq!(
        trend(leak),
        (
            1,
            true,
            5.0 * 128.0,
            1.0,
            7 * 5 * 128,
            7,
            (1..=8).map(|k| k * 5 * 128).collect()
        )
    );
    let ranked = |s: &serde_json::Value| {
        let (rank, suspect, slope, r2, growth, grew, bytes) = trend(s);
        assert!(rank > 1, "{s}");
        (suspect, slope, r2, growth, grew, bytes)
    };
    // The sawtooth, 0 and 20 KiB in turn: slope 20480 × 2/42 (the sum of
    // (x - 3.5) over the odd x is 2, that of (x - 3.5)² over x = 0..7 is
    // 42), R² = 2²/(42 × 2) = 1/21, grew in 4 of 7 steps: not a suspect.
    assert_eq!(
        ranked(by_func("aptest_kmalloc_1000")),
        (
            false,
            20480.0 / 21.0,
            1.0 / 21.0,
            20480,
            4,
            vec![0, 20480, 0, 20480, 0, 20480, 0, 20480]
        )
    );
    // Grew once, by 64 KiB, then flat: slope 65536 × 3.5/42 = 65536/12,
    // R² = 3.5²/(42 × 7/8) = 1/3, grew in 1 of 7 steps: not a suspect.
    let mut step = vec![65536; 8];
    step[0] = 0;
    assert_eq!(
        ranked(by_func("aptest_alloc_pages_3")),
        (false, 65536.0 / 12.0, 1.0 / 3.0, 65536, 1, step)
    );
    // The kernel's own sites: whatever they do, none is a suspect that
    // ranks above the leak or grows faster.
    for s in sites.iter().filter(|s| s["module"] != "allocprof_test") {
        let (rank, suspect, slope, ..) = trend(s);
        assert!(rank > 1, "{s}");
        assert!(!suspect || slope < 640.0, "{s}");
    }
    // In these captures two kernel sites are suspects too, and rightly:
    // each gained one 72-byte struct vmap_area (mm/vmalloc.c) in every
    // step: a vmalloc area made during each capture, whose vmap_area stays
    // allocated (a vfree()d area's waits for vmalloc's lazy purge, which
    // eight captures do not reach).  A recapture may show other kernel
    // figures; the test module's are fixed.
    let others: Vec<(String, u64, bool, f64, f64, u64)> = sites
        .iter()
        .filter(|s| s["suspect"] == true && s["module"] != "allocprof_test")
        .map(|s| {
            let (rank, suspect, slope, r2, _, grew, _) = trend(s);
            (
                s["func"].as_str().unwrap().to_string(),
                rank,
                suspect,
                slope,
                r2,
                grew,
            )
        })
        .collect();
    assert_eq!(
        others,
        [
            ("preload_this_cpu_lock".to_string(), 2, true, 72.0, 1.0, 7),
            ("alloc_vmap_area".to_string(), 3, true, 72.0, 1.0, 7),
        ]
    );
    assert_eq!(v["suspects"], 3);
    // The test module's sites in the table: the leak first, with its slope.
    let mut table_args = vec!["leaks", "-n", "1"];
    table_args.extend(files.iter().map(String::as_str));
    let table = ok(&table_args);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(
        rows[0],
        "8 captures (not all named allocinfo-<timestamp>); slopes in bytes per capture"
    );
    assert!(
        rows[5].starts_with("│ 1 ┆ yes     ┆ +640 B/capture ┆ 1.000 ┆ +4.4 KiB ┆  7/7 ┆"),
        "{table}"
    );
    assert!(
        rows[5].ends_with("┆ allocprof_test ┆ aptest_kmalloc_100 │"),
        "{table}"
    );
}

/// A site of a diff's JSON answer: (status, matched, old line, line, old
/// bytes, new bytes, old calls, new calls).
type DiffSite = (String, Option<String>, Option<u64>, u64, i64, i64, u64, u64);

fn diff_site(s: &serde_json::Value) -> DiffSite {
    (
        s["status"].as_str().unwrap().to_string(),
        s["matched"].as_str().map(str::to_string),
        s["old_line"].as_u64(),
        s["line"].as_u64().unwrap(),
        s["old_bytes"].as_i64().unwrap(),
        s["new_bytes"].as_i64().unwrap(),
        s["old_calls"].as_u64().unwrap(),
        s["new_calls"].as_u64().unwrap(),
    )
}

/// The call sites (file, line, module, function) of a capture.
fn site_keys(name: &str) -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let parsed = parse_str(&text);
    assert!(parsed.issues.is_empty(), "{name}: {:?}", parsed.issues);
    parsed.records.iter().map(|r| r.key().to_string()).collect()
}

/// `diff --match moved` across kernels: upstream's profiler on 6.12.117
/// and on 7.3.4 (`scripts/capture-fixtures 7.3`), after the same 40 ×
/// `kmalloc(100)` of the test module (capture a).
#[test]
fn diff_across_kernels_pairs_the_sites_whose_lines_moved() {
    const OLD: &str = "guest-upstream-6.12.117-a.txt";
    const NEW: &str = "guest-upstream-7.3.4-a.txt";
    let (old_keys, new_keys) = (site_keys(OLD), site_keys(NEW));
    assert_eq!((old_keys.len(), new_keys.len()), (256, 380));
    let exact = old_keys.intersection(&new_keys).count();
    assert_eq!(exact, 50);

    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "diff",
        "--format",
        "json",
        &fixture(OLD),
        &fixture(NEW),
    ]))
    .unwrap();
    assert_eq!(
        v["counts"],
        serde_json::json!({"grown": 68, "shrunk": 15, "new": 156, "vanished": 32, "same": 0})
    );
    assert_eq!(
        v["matching"],
        serde_json::json!({"mode": "moved", "moved": 173, "moved_changed": 69,
                           "path": 1, "path_changed": 0,
                           "ambiguous_funcs": 6, "ambiguous_old": 13, "ambiguous_new": 26})
    );
    // Every site of each capture is matched exactly, matched as moved,
    // matched by its file named two ways (the test module's one site), or
    // vanished (old) / new (new): 50 + 173 + 1 + 32 = 256,
    // 50 + 173 + 1 + 156 = 380.
    assert_eq!(exact + 173 + 1 + 32, old_keys.len());
    assert_eq!(exact + 173 + 1 + 156, new_keys.len());
    // The tool's own count of the sites matched exactly: with --match
    // exact, all but those 50 are vanished or new.
    let e: serde_json::Value = serde_json::from_str(&ok(&[
        "diff",
        "--match",
        "exact",
        "--format",
        "json",
        &fixture(OLD),
        &fixture(NEW),
    ]))
    .unwrap();
    assert_eq!(
        (e["counts"]["vanished"].clone(), e["counts"]["new"].clone()),
        ((256 - 50).into(), (380 - 50).into())
    );
    let sites = v["sites"].as_array().unwrap();
    let rows = |func: &str| -> Vec<DiffSite> {
        sites
            .iter()
            .filter(|s| s["func"] == func)
            .map(diff_site)
            .collect()
    };
    // copy_signal()'s one allocation, `sig = kmem_cache_zalloc(signal_cachep,
    // GFP_KERNEL);`, is kernel/fork.c:1891 in the pristine 6.12.117 tree
    // (~/.cache/allocprof/src/pristine-6.12.117-1_deb12u1) and 1763 in
    // 7.3.4's (pristine-7.3.4-1_bpo13+1), the only allocation of the
    // function in both: the line moved, 128 lines up.
    assert_eq!(
        rows("copy_signal"),
        [(
            "grown".to_string(),
            Some("moved".to_string()),
            Some(1891),
            1763,
            28416,
            37632,
            37,
            49
        )]
    );
    // The test module's site: 6.12 names an external module's file by its
    // absolute path, 7.3 relative to the module's directory (7.3's
    // Makefile: -fmacro-prefix-map=$(srcroot)/=), so the file differs as
    // well as the line (82 -> 152); it is paired by module and function,
    // the file named two ways.  Its figures are the same on both kernels,
    // 40 × 128 bytes, so like every unchanged site it has no row.
    for name in [OLD, NEW] {
        assert_eq!(
            test_sites(name),
            vec![("aptest_kmalloc_100".to_string(), 40 * 128, 40)],
            "{name}"
        );
    }
    let test_rows: Vec<(String, String, DiffSite)> = sites
        .iter()
        .filter(|s| s["module"] == "allocprof_test")
        .map(|s| {
            (
                s["file"].as_str().unwrap().to_string(),
                s["func"].as_str().unwrap().to_string(),
                diff_site(s),
            )
        })
        .collect();
    assert!(test_rows.is_empty(), "{test_rows:?}");
    let out = ok(&[
        "diff",
        "--module",
        "allocprof_test",
        &fixture(OLD),
        &fixture(NEW),
    ]);
    assert!(
        out.starts_with(
            "Call sites: 0 grown, 0 shrunk, 0 new, 0 vanished, 0 with only call-count changes\n"
        ) && out.ends_with(
            "Total: 5.0 KiB -> 5.0 KiB (0 B), calls 40 -> 40 (0); \
             1 call sites of a module matched with their file named another way (0 changed)\n"
        ),
        "{out}"
    );
    // With --match exact, it is vanished and new.
    let e = ok(&[
        "diff",
        "--match",
        "exact",
        "--module",
        "allocprof_test",
        &fixture(OLD),
        &fixture(NEW),
    ]);
    assert!(
        e.starts_with(
            "Call sites: 0 grown, 0 shrunk, 1 new, 1 vanished, 0 with only call-count changes\n"
        ),
        "{e}"
    );
    // By function, the test module did not change: the site is paired,
    // and so is the per-function total.
    let out = ok(&[
        "diff",
        "--by",
        "func",
        "--module",
        "allocprof_test",
        &fixture(OLD),
        &fixture(NEW),
    ]);
    assert!(
        out.ends_with(
            "By func:\nno changes\n\nTotal: 5.0 KiB -> 5.0 KiB (0 B), calls 40 -> 40 (0); \
             1 call sites of a module matched with their file named another way (0 changed)\n"
        ),
        "{out}"
    );
}

// ------------------------------------------------------------ top --by rate

/// The two captures of `scripts/capture-fixtures rates`, oldest first, and
/// the seconds between their names.
fn rates_guest() -> (String, String, i64) {
    let dir = std::path::PathBuf::from(fixture("rates-guest"));
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert_eq!(v.len(), 2, "{v:?}");
    let t: Vec<_> = v
        .iter()
        .map(|p| allocinfo::snap::snapshot_time(p).expect("a snapshot name"))
        .collect();
    let secs = (t[1] - t[0]).num_seconds();
    // The script sleeps 2 s between them; the names are to the second.
    assert!(secs == 2 || secs == 3, "{secs}");
    let s = |p: &std::path::PathBuf| p.to_string_lossy().into_owned();
    (s(&v[0]), s(&v[1]), secs)
}

/// (function, live bytes, live calls, churn) of the test module's sites.
type ChurnSite = (String, i64, u64, Option<allocinfo::record::Churn>);

#[test]
fn the_rates_captures_have_the_known_churn() {
    use allocinfo::record::Churn;
    let (old, new, _) = rates_guest();
    let sites = |path: &str| -> Vec<ChurnSite> {
        let text = std::fs::read_to_string(path).unwrap();
        let p = parse_str(&text);
        assert!(p.issues.is_empty(), "{path}: {:?}", p.issues);
        assert_eq!(p.version.map(|v| v.to_string()).as_deref(), Some("2.0"));
        // The kernel's lines, given back byte for byte.
        let again: String = p.records.iter().map(|r| r.to_line()).collect();
        assert!(text.ends_with(&again), "{path}");
        // Only the two sites with c have the keys.
        assert_eq!(p.records.iter().filter(|r| r.churn().is_some()).count(), 2);
        let mut v: Vec<ChurnSite> = p
            .records
            .iter()
            .filter(|r| r.module.as_deref() == Some("allocprof_test"))
            .map(|r| (r.func.clone(), r.bytes, r.calls, r.churn()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let c = |allocs, alloc_bytes, frees, free_bytes| {
        Some(Churn {
            allocs,
            alloc_bytes,
            frees,
            free_bytes,
        })
    };
    // 4 objects and 2 blocks live, +c, 6 objects and 1 block more, the 2
    // oldest objects freed.
    assert_eq!(
        sites(&old),
        vec![
            (
                "aptest_alloc_pages_3".to_string(),
                3 * 32768,
                3,
                c(1, 32768, 0, 0)
            ),
            (
                "aptest_kmalloc_100".to_string(),
                8 * 128,
                8,
                c(6, 6 * 128, 2, 2 * 128)
            ),
        ]
    );
    // Then 60 objects allocated and 36 freed, 12 blocks allocated and 6 freed.
    assert_eq!(
        sites(&new),
        vec![
            (
                "aptest_alloc_pages_3".to_string(),
                9 * 32768,
                9,
                c(13, 13 * 32768, 6, 6 * 32768)
            ),
            (
                "aptest_kmalloc_100".to_string(),
                32 * 128,
                32,
                c(66, 66 * 128, 38, 38 * 128)
            ),
        ]
    );
}

#[test]
fn top_by_rate_on_the_real_captures() {
    let (old, new, secs) = rates_guest();
    let o = Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(["top", "--by", "rate", "--format", "csv", &old, &new])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    // Every other site has no keys.
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        err,
        "allocinfo: note: 76 call sites without allocated: and freed: left out (allocprof's c \
         flag gives a call site the keys allocated: and freed: in /proc/allocinfo format 2.0)\n"
    );
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // func, seconds, allocs, frees, alloc_bytes, free_bytes, then the four rates.
    let got: Vec<(&str, Vec<&str>, Vec<f64>)> = rows
        .iter()
        .map(|r| {
            (
                r[6],
                r[8..12].to_vec(),
                r[12..16].iter().map(|x| x.parse().unwrap()).collect(),
            )
        })
        .collect();
    let s = secs as f64;
    assert_eq!(
        got,
        vec![
            (
                "aptest_kmalloc_100",
                vec!["60", "36", "7680", "4608"],
                vec![60.0 / s, 36.0 / s, 7680.0 / s, 4608.0 / s]
            ),
            (
                "aptest_alloc_pages_3",
                vec!["12", "6", "393216", "196608"],
                vec![12.0 / s, 6.0 / s, 393216.0 / s, 196608.0 / s]
            ),
        ]
    );
    assert!(rows.iter().all(|r| r[7].parse::<f64>().unwrap() == s));
    // The counters of the newer capture, for Prometheus.
    let prom = ok(&["top", "-n", "0", "--format", "prometheus", &new]);
    let counters: Vec<&str> = prom
        .lines()
        .filter(|l| l.starts_with("allocinfo_churn_"))
        .map(|l| l.rsplit_once(' ').unwrap().1)
        .collect();
    // allocations, frees, their bytes; the page site first (more bytes).
    assert_eq!(
        counters,
        ["13", "66", "6", "38", "425984", "8448", "196608", "4864"]
    );
}

/// `diff` pairs an external module's site whose file is named two ways
/// and says so: from `moved-upstream-6.12.117-a.txt` (capture a of 6.12.117
/// with the test module's site moved from line 82 to 85 and grown from 40
/// to 50 allocations, its file absolute) to 7.3.4's capture a (40
/// allocations, its file relative, line 152).
#[test]
fn diff_across_kernels_pairs_a_modules_file_named_two_ways() {
    const OLD: &str = "moved-upstream-6.12.117-a.txt";
    const NEW: &str = "guest-upstream-7.3.4-a.txt";
    const ABS: &str = "/root/.cache/allocprof/modbuild/upstream/modules/allocprof_test.c";
    let (old, new) = (fixture(OLD), fixture(NEW));
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "diff",
        "--module",
        "allocprof_test",
        "--format",
        "json",
        &old,
        &new,
    ]))
    .unwrap();
    let sites = v["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "{v}");
    assert_eq!(
        (
            sites[0]["file"].as_str(),
            sites[0]["old_file"].as_str(),
            diff_site(&sites[0])
        ),
        (
            Some("modules/allocprof_test.c"),
            Some(ABS),
            (
                "shrunk".to_string(),
                Some("path".to_string()),
                Some(85),
                152,
                50 * 128,
                40 * 128,
                50,
                40
            )
        )
    );
    assert_eq!(
        (
            v["matching"]["path"].clone(),
            v["matching"]["path_changed"].clone()
        ),
        (1.into(), 1.into())
    );
    let table = ok(&["diff", "--module", "allocprof_test", &old, &new]);
    let rows: Vec<&str> = table.lines().collect();
    assert!(
        rows[2].ends_with(
            "┆ Match                                                                     │"
        ),
        "{table}"
    );
    assert!(
        rows[4].ends_with(&format!("┆ aptest_kmalloc_100 ┆ path {ABS}:85 │")),
        "{table}"
    );
    let csv = ok(&[
        "diff",
        "--module",
        "allocprof_test",
        "--format",
        "csv",
        &old,
        &new,
    ]);
    assert_eq!(
        csv.lines().nth(1),
        Some(
            format!(
                "site,,modules/allocprof_test.c,152,allocprof_test,aptest_kmalloc_100,shrunk,\
                 6400,5120,-1280,50,40,-10,path,85,{ABS}"
            )
            .as_str()
        )
    );
    // The other way round: the old file relative, the new one absolute.
    let back = ok(&[
        "diff",
        "--module",
        "allocprof_test",
        "--format",
        "csv",
        &new,
        &old,
    ]);
    assert_eq!(
        back.lines().nth(1),
        Some(
            format!(
                "site,,{ABS},85,allocprof_test,aptest_kmalloc_100,grown,\
                 5120,6400,1280,40,50,10,path,152,modules/allocprof_test.c"
            )
            .as_str()
        )
    );
}
