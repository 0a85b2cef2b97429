//! End-to-end tests of the `allocinfo` binary on the fixtures, with exact
//! expected values.

mod common;
use common::{fixture, ok, run, run_stdin, stderr, stdout};

use std::path::{Path, PathBuf};

const UPSTREAM: &str = "upstream-6.12.txt";
const LATER: &str = "upstream-6.12-later.txt";

// ------------------------------------------------------------------ top

#[test]
fn top3_by_bytes_exact() {
    let out = ok(&["top", "-n", "3", "--format", "csv", &fixture(UPSTREAM)]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,201326592,49152,mm/filemap.c,1977,,__filemap_get_folio,\n\
         2,84934656,20736,mm/slub.c,2345,,alloc_slab_page,\n\
         3,47185920,11520,mm/memory.c,1064,,folio_prealloc,\n"
    );
}

#[test]
fn top_table_is_readable() {
    let out = ok(&["top", "-n", "3", &fixture(UPSTREAM)]);
    let lines: Vec<&str> = out.lines().collect();
    // header box, header, separator, 3 rows, bottom box, summary
    assert_eq!(lines.len(), 8, "{out}");
    assert!(lines[1].contains("Bytes") && lines[1].contains("Function"));
    assert!(lines[3].contains("192.0 MiB") && lines[3].contains("mm/filemap.c:1977"));
    assert!(lines[3].contains("__filemap_get_folio") && lines[3].contains("(built-in)"));
    assert!(lines[4].contains("81.0 MiB") && lines[4].contains("alloc_slab_page"));
    assert!(lines[5].contains("45.0 MiB") && lines[5].contains("folio_prealloc"));
    assert_eq!(lines[7], "3 of 38 call sites, 318.0 MiB of 461.9 MiB total");
}

#[test]
fn top_by_calls_and_module_sites() {
    let out = ok(&[
        "top",
        "-n",
        "2",
        "--by",
        "calls",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,201326592,49152,mm/filemap.c,1977,,__filemap_get_folio,\n\
         2,6291456,32768,fs/dcache.c,1690,,__d_alloc,\n"
    );
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--module",
        "virtio_net",
        "--module",
        "nfs",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,4194304,256,drivers/net/virtio_net.c,2321,virtio_net,add_recvbuf_mergeable,\n\
         2,786432,768,fs/nfs/inode.c,2434,nfs,nfs_alloc_inode,\n"
    );
    let table = ok(&["top", "--module", "nfs", &fixture(UPSTREAM)]);
    assert!(table.contains("fs/nfs/inode.c:2434") && table.contains("nfs_alloc_inode"));
    assert!(table.contains("┆ nfs "), "{table}");
}

#[test]
fn duplicate_sites_are_summed() {
    let out = ok(&[
        "top",
        "--func",
        "__pte_alloc_one",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,5505024,1344,include/asm-generic/pgalloc.h,63,,__pte_alloc_one,\n"
    );
}

#[test]
fn filters_file_glob_min_bytes_builtin() {
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--file",
        "fs/**",
        "--min-bytes",
        "4M",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,9437184,8192,fs/inode.c,261,,alloc_inode,\n\
         2,7340032,6400,fs/ext4/super.c,1396,,ext4_alloc_inode,\n\
         3,6291456,32768,fs/dcache.c,1690,,__d_alloc,\n"
    );
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--min-bytes",
        "12MiB",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(out.lines().count(), 1 + 6);
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--module",
        "built-in",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(out.lines().count(), 1 + 36);
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--func",
        "alloc_*",
        "--file",
        "kernel/*",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,10485760,640,kernel/fork.c,311,,alloc_thread_stack_node,\n\
         2,4423680,720,kernel/fork.c,178,,alloc_task_struct_node,\n\
         3,0,0,kernel/events/core.c,5002,,alloc_perf_context,\n"
    );
}

#[test]
fn top_json() {
    let out = ok(&["top", "-n", "1", "--format", "json", &fixture(UPSTREAM)]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{
            "rank": 1, "bytes": 201326592i64, "calls": 49152, "file": "mm/filemap.c",
            "line": 1977, "module": null, "func": "__filemap_get_folio", "extra": {}
        }])
    );
}

#[test]
fn v2_extras_are_shown() {
    let out = ok(&[
        "top",
        "--module",
        "tcp_x",
        "--format",
        "json",
        &fixture("v2.txt"),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["module"], "tcp_x");
    assert_eq!(v[0]["bytes"], 65536);
    assert_eq!(v[0]["extra"], serde_json::json!({"accurate": "no"}));
    let table = ok(&["top", "-n", "0", &fixture("v2.txt")]);
    assert!(table.contains("Notes"));
    assert_eq!(table.matches("accurate:no").count(), 3, "{table}");
    let csv = ok(&[
        "top",
        "-n",
        "0",
        "--format",
        "csv",
        "--func",
        "pcpu_alloc_noprof",
        &fixture("v2.txt"),
    ]);
    assert_eq!(
        csv,
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,4194304,1024,mm/percpu.c,1891,,pcpu_alloc_noprof,accurate:no\n"
    );
}

#[test]
fn sorted_inputs_give_the_same_result() {
    let args = |f: &str| ok(&["top", "-n", "0", "--format", "csv", &fixture(f)]);
    let expected = args(UPSTREAM);
    assert_eq!(args("sorted.txt"), expected);
    assert_eq!(args("sorted-by-calls.txt"), expected);
}

#[test]
fn stdin_and_missing_header() {
    let input = "      229376       56 mm/slub.c:2345 func:alloc_slab_page \n        8192        2 drivers/foo/bar.c:77 [foo_mod] func:foo_probe \n";
    let o = run_stdin(&["top", "--format", "csv", "-"], input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,229376,56,mm/slub.c,2345,,alloc_slab_page,\n\
         2,8192,2,drivers/foo/bar.c,77,foo_mod,foo_probe,\n"
    );
}

#[test]
fn negative_bytes_are_kept() {
    let o = run_stdin(
        &["top", "--format", "csv", "-"],
        "  -4096 1 mm/x.c:1 func:neg \n  10 1 mm/y.c:2 func:pos \n",
    );
    assert_eq!(
        stdout(&o),
        "rank,bytes,calls,file,line,module,func,extra\n1,10,1,mm/y.c,2,,pos,\n2,-4096,1,mm/x.c,1,,neg,\n"
    );
}

// ------------------------------------------------------------------ group

#[test]
fn group_by_subsystem_totals() {
    let out = ok(&["group", "--format", "csv", &fixture(UPSTREAM)]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\n\
         mm,405995520,110100,10\n\
         fs,29097984,78848,8\n\
         kernel,21897216,26836,6\n\
         block,6291456,1536,1\n\
         lib,5636096,14336,3\n\
         include,5505024,1344,1\n\
         drivers/net,4194304,256,1\n\
         net,4161536,2112,2\n\
         drivers/virtio,1048576,8,1\n\
         drivers/base,262144,1024,1\n\
         arch/x86,131072,32,3\n\
         drivers/tty,65536,16,1\n"
    );
    let table = ok(&["group", &fixture(UPSTREAM)]);
    assert!(table.contains("387.2 MiB") && table.contains("┆ mm "));
    assert!(table.ends_with("12 groups, 461.9 MiB total\n"), "{table}");
}

#[test]
fn group_by_module_dir_func_depth() {
    let out = ok(&[
        "group",
        "--by",
        "module",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\n\
         (built-in),479305728,235424,36\n\
         virtio_net,4194304,256,1\n\
         nfs,786432,768,1\n"
    );
    let out = ok(&[
        "group",
        "--by",
        "dir",
        "--file",
        "fs/**",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\n\
         fs,16252928,45056,3\n\
         fs/ext4,7340032,6400,2\n\
         fs/kernfs,3145728,24576,1\n\
         fs/proc,1572864,2048,1\n\
         fs/nfs,786432,768,1\n"
    );
    let out = ok(&[
        "group",
        "--depth",
        "1",
        "--file",
        "arch/**",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(out, "group,bytes,calls,sites\narch,131072,32,3\n");
    let out = ok(&[
        "group",
        "--by",
        "dir",
        "--depth",
        "3",
        "--file",
        "arch/**",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\narch/x86/kernel,131072,32,3\n"
    );
    let out = ok(&[
        "group",
        "--by",
        "func",
        "-n",
        "2",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\n__filemap_get_folio,201326592,49152,1\nalloc_slab_page,84934656,20736,1\n"
    );
    let out = ok(&[
        "group",
        "--min-bytes",
        "20M",
        "--format",
        "csv",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "group,bytes,calls,sites\nmm,405995520,110100,10\nfs,29097984,78848,8\nkernel,21897216,26836,6\n"
    );
}

// ------------------------------------------------------------------ prometheus

#[test]
fn prometheus_site_metrics_exact() {
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--module",
        "nfs",
        "--format",
        "prometheus",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "# HELP allocinfo_bytes Bytes currently allocated from a call site (/proc/allocinfo).\n\
         # TYPE allocinfo_bytes gauge\n\
         allocinfo_bytes{file=\"fs/nfs/inode.c\",line=\"2434\",function=\"nfs_alloc_inode\",module=\"nfs\"} 786432\n\
         # HELP allocinfo_allocations Live allocations from a call site (/proc/allocinfo).\n\
         # TYPE allocinfo_allocations gauge\n\
         allocinfo_allocations{file=\"fs/nfs/inode.c\",line=\"2434\",function=\"nfs_alloc_inode\",module=\"nfs\"} 768\n"
    );
    let all = ok(&[
        "top",
        "-n",
        "0",
        "--format",
        "prometheus",
        &fixture(UPSTREAM),
    ]);
    assert!(all.contains(
        "allocinfo_bytes{file=\"mm/slub.c\",line=\"2345\",function=\"alloc_slab_page\",module=\"\"} 84934656\n"
    ));
    // One series per call site (duplicates merged), two metric families.
    assert_eq!(
        all.lines()
            .filter(|l| l.starts_with("allocinfo_bytes{"))
            .count(),
        38
    );
    assert_eq!(
        all.lines()
            .filter(|l| l.starts_with("allocinfo_allocations{"))
            .count(),
        38
    );
}

#[test]
fn prometheus_escapes_label_values() {
    let o = run_stdin(
        &["top", "--format", "prometheus", "-"],
        "  10 1 weird/\"q\\.c:5 [m\"x] func:a\"b\\c \n",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(
        "allocinfo_bytes{file=\"weird/\\\"q\\\\.c\",line=\"5\",function=\"a\\\"b\\\\c\",module=\"m\\\"x\"} 10\n"
    ), "{}", stdout(&o));
}

#[test]
fn prometheus_group_metrics() {
    let out = ok(&[
        "group",
        "-n",
        "2",
        "--format",
        "prometheus",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(
        out,
        "# HELP allocinfo_group_bytes Bytes currently allocated, summed per group of call sites (/proc/allocinfo).\n\
         # TYPE allocinfo_group_bytes gauge\n\
         allocinfo_group_bytes{by=\"subsystem\",group=\"mm\"} 405995520\n\
         allocinfo_group_bytes{by=\"subsystem\",group=\"fs\"} 29097984\n\
         # HELP allocinfo_group_allocations Live allocations, summed per group of call sites (/proc/allocinfo).\n\
         # TYPE allocinfo_group_allocations gauge\n\
         allocinfo_group_allocations{by=\"subsystem\",group=\"mm\"} 110100\n\
         allocinfo_group_allocations{by=\"subsystem\",group=\"fs\"} 78848\n"
    );
}

// ------------------------------------------------------------------ diff

const DIFF_SITES_CSV: &str = "\
kind,group,file,line,module,func,status,old_bytes,new_bytes,delta_bytes,old_calls,new_calls,delta_calls,matched,old_line,old_file
site,,mm/filemap.c,1977,,__filemap_get_folio,grown,201326592,268435456,67108864,49152,65536,16384,exact,,
site,,mm/slub.c,2345,,alloc_slab_page,grown,84934656,88080384,3145728,20736,21504,768,exact,,
site,,fs/dcache.c,1690,,__d_alloc,grown,6291456,7864320,1572864,32768,40960,8192,exact,,
site,,fs/fuse/inode.c,117,fuse,fuse_alloc_inode,new,0,1048576,1048576,0,1024,1024,,,
site,,net/core/skbuff.c,652,,kmalloc_reserve,shrunk,3670016,2621440,-1048576,1792,1280,-512,exact,,
site,,kernel/fork.c,311,,alloc_thread_stack_node,grown,10485760,11534336,1048576,640,704,64,exact,,
site,,fs/nfs/inode.c,2434,nfs,nfs_alloc_inode,vanished,786432,0,-786432,768,0,-768,,,
";

const DIFF_GROUPS_CSV: &str = "\
subsystem,mm,,,,,,405995520,476250112,70254592,110100,127252,17152,,,
subsystem,fs,,,,,,29097984,30932992,1835008,78848,87296,8448,,,
subsystem,net,,,,,,4161536,3112960,-1048576,2112,1600,-512,,,
subsystem,kernel,,,,,,21897216,22945792,1048576,26836,26900,64,,,
";

#[test]
fn diff_exact_deltas() {
    let out = ok(&[
        "diff",
        "--format",
        "csv",
        &fixture(UPSTREAM),
        &fixture(LATER),
    ]);
    assert_eq!(out, format!("{DIFF_SITES_CSV}{DIFF_GROUPS_CSV}"));
}

#[test]
fn diff_json_totals_and_min_bytes() {
    let out = ok(&[
        "diff",
        "--format",
        "json",
        "--min-bytes",
        "1.5M",
        &fixture(UPSTREAM),
        &fixture(LATER),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["totals"],
        serde_json::json!({
            "old_bytes": 484286464i64, "new_bytes": 556376064i64, "delta_bytes": 72089600,
            "old_calls": 236448, "new_calls": 261600, "delta_calls": 25152
        })
    );
    let funcs: Vec<&str> = v["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["func"].as_str().unwrap())
        .collect();
    assert_eq!(
        funcs,
        ["__filemap_get_folio", "alloc_slab_page", "__d_alloc"]
    );
    let groups: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["mm", "fs"]);
    assert_eq!(v["group_by"], "subsystem");
    // Counts cover all changed sites, not only those shown.
    assert_eq!(
        v["counts"],
        serde_json::json!({"grown": 4, "shrunk": 1, "new": 1, "vanished": 1, "same": 0})
    );
}

#[test]
fn diff_table_and_by_module() {
    let out = ok(&["diff", &fixture(UPSTREAM), &fixture(LATER)]);
    assert!(out.starts_with(
        "Call sites: 4 grown, 1 shrunk, 1 new, 1 vanished, 0 with only call-count changes\n"
    ));
    assert!(out.contains("+64.0 MiB") && out.contains("__filemap_get_folio"));
    assert!(out.contains("vanished") && out.contains("nfs_alloc_inode"));
    assert!(
        out.ends_with(
            "Total: 461.9 MiB -> 530.6 MiB (+68.8 MiB), calls 236448 -> 261600 (+25152)\n"
        ),
        "{out}"
    );
    let out = ok(&["diff", "-n", "2", &fixture(UPSTREAM), &fixture(LATER)]);
    assert!(out.starts_with(
        "Call sites: 4 grown, 1 shrunk, 1 new, 1 vanished, 0 with only call-count changes (showing 2)\n"
    ));
    let out = ok(&[
        "diff",
        "--by",
        "module",
        "--format",
        "csv",
        "-n",
        "1",
        &fixture(UPSTREAM),
        &fixture(LATER),
    ]);
    assert_eq!(
        out,
        "kind,group,file,line,module,func,status,old_bytes,new_bytes,delta_bytes,old_calls,new_calls,delta_calls,matched,old_line,old_file\n\
         site,,mm/filemap.c,1977,,__filemap_get_folio,grown,201326592,268435456,67108864,49152,65536,16384,exact,,\n\
         module,(built-in),,,,,,479305728,551133184,71827456,235424,260320,24896,,,\n"
    );
}

#[test]
fn diff_prometheus() {
    let out = ok(&[
        "diff",
        "--format",
        "prometheus",
        "--module",
        "nfs",
        &fixture(UPSTREAM),
        &fixture(LATER),
    ]);
    assert!(out.contains(
        "allocinfo_diff_bytes{file=\"fs/nfs/inode.c\",line=\"2434\",function=\"nfs_alloc_inode\",module=\"nfs\"} -786432\n"
    ));
    assert!(out.contains("allocinfo_group_diff_bytes{by=\"subsystem\",group=\"fs\"} -786432\n"));
    assert!(out.contains("# TYPE allocinfo_diff_allocations gauge\n"));
}

#[test]
fn diff_of_identical_files_is_empty() {
    let out = ok(&[
        "diff",
        "--format",
        "csv",
        &fixture(UPSTREAM),
        &fixture("sorted.txt"),
    ]);
    assert_eq!(
        out,
        "kind,group,file,line,module,func,status,old_bytes,new_bytes,delta_bytes,old_calls,new_calls,delta_calls,matched,old_line,old_file\n"
    );
}

// ------------------------------------------------------------------ diff across kernels

/// A real capture of 6.12.117 with lines moved as a kernel upgrade moves
/// them: kernel/fork.c +4 after line 400 (copy_signal also grew by 2
/// allocations), the three sites of e820__reallocate_tables +3 (the
/// first grew), the module site aptest_kmalloc_100 82 -> 85 (grew by 10
/// allocations), and the four sites of __sdt_alloc +10 with the one at
/// 2267 gone (4 old, 3 new: left unmatched).
const MOVED_A: &str = "guest-upstream-6.12.117-a.txt";
const MOVED_B: &str = "moved-upstream-6.12.117-a.txt";

const MOVED_CSV: &str = "\
kind,group,file,line,module,func,status,old_bytes,new_bytes,delta_bytes,old_calls,new_calls,delta_calls,matched,old_line,old_file
site,,kernel/fork.c,1895,,copy_signal,grown,28416,29952,1536,37,39,2,moved,1891,
site,,/root/.cache/allocprof/modbuild/upstream/modules/allocprof_test.c,85,allocprof_test,aptest_kmalloc_100,grown,5120,6400,1280,40,50,10,moved,82,
site,,kernel/sched/topology.c,2260,,__sdt_alloc,vanished,384,0,-384,2,0,-2,,,
site,,kernel/sched/topology.c,2270,,__sdt_alloc,new,0,384,384,0,2,2,,,
site,,arch/x86/kernel/e820.c,717,,e820__reallocate_tables,grown,192,384,192,1,2,1,moved,714,
site,,kernel/sched/topology.c,2274,,__sdt_alloc,vanished,128,0,-128,2,0,-2,,,
site,,kernel/sched/topology.c,2283,,__sdt_alloc,vanished,128,0,-128,2,0,-2,,,
site,,kernel/sched/topology.c,2284,,__sdt_alloc,new,0,128,128,0,2,2,,,
site,,kernel/sched/topology.c,2293,,__sdt_alloc,new,0,128,128,0,2,2,,,
site,,kernel/sched/topology.c,2267,,__sdt_alloc,vanished,16,0,-16,1,0,-1,,,
subsystem,kernel,,,,,,945888,947408,1520,692,693,1,,,
subsystem,root,,,,,,5120,6400,1280,40,50,10,,,
subsystem,arch/x86,,,,,,122592,122784,192,80,81,1,,,
";

#[test]
fn diff_matches_moved_lines_by_module_file_and_function() {
    let (a, b) = (fixture(MOVED_A), fixture(MOVED_B));
    // moved is the default.
    let csv = ok(&["diff", "--format", "csv", &a, &b]);
    assert_eq!(csv, MOVED_CSV);
    assert_eq!(
        ok(&["diff", "--match", "moved", "--format", "csv", &a, &b]),
        csv
    );

    let v: serde_json::Value =
        serde_json::from_str(&ok(&["diff", "--format", "json", &a, &b])).unwrap();
    assert_eq!(
        v["matching"],
        serde_json::json!({"mode": "moved", "moved": 10, "moved_changed": 3,
                           "path": 0, "path_changed": 0, "ambiguous_funcs": 1, "ambiguous_old": 4, "ambiguous_new": 3})
    );
    assert_eq!(
        v["counts"],
        serde_json::json!({"grown": 3, "shrunk": 0, "new": 3, "vanished": 4, "same": 0})
    );
    let s = &v["sites"];
    assert_eq!(
        (s[0]["matched"].clone(), s[0]["old_line"].clone()),
        ("moved".into(), 1891.into())
    );
    assert_eq!(
        (s[2]["matched"].clone(), s[2]["old_line"].clone()),
        (serde_json::Value::Null, serde_json::Value::Null)
    );
    assert_eq!(s[4]["old_line"], 714);
    assert_eq!(v["totals"]["delta_bytes"], 2992);

    let table = ok(&["diff", &a, &b]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "Call sites: 3 grown, 0 shrunk, 3 new, 4 vanished, 0 with only call-count changes"
    );
    assert!(
        lines[2].ends_with("┆ Function                ┆ Match           │"),
        "{table}"
    );
    assert!(
        lines[4].contains("kernel/fork.c:1895")
            && lines[4].ends_with("┆ copy_signal             ┆ moved 1891→1895 │"),
        "{table}"
    );
    assert!(
        lines[5].ends_with("┆ aptest_kmalloc_100      ┆ moved 82→85     │"),
        "{table}"
    );
    assert!(
        lines[6].ends_with("┆ __sdt_alloc             ┆                 │"),
        "{table}"
    );
    assert!(
        lines[8].ends_with("┆ e820__reallocate_tables ┆ moved 714→717   │"),
        "{table}"
    );
    assert!(
        table.ends_with(
            "Total: 20.4 MiB -> 20.4 MiB (+2.9 KiB), calls 21683 -> 21695 (+12); \
             10 call sites matched with a moved line (3 changed)\n\
             Not matched by moved line or path: 4 old and 3 new call sites of 1 function(s) with \
             another number of sites on each side (counted as vanished and new)\n"
        ),
        "{table}"
    );

    // --match exact: today's pairing, every moved site new and vanished,
    // no Match column, the same totals and groups.
    let exact = ok(&["diff", "--match", "exact", "--format", "csv", &a, &b]);
    let count = |status: &str| {
        exact
            .lines()
            .filter(|l| l.contains(&format!(",{status},")))
            .count()
    };
    assert_eq!(
        (count("grown"), count("new"), count("vanished")),
        (0, 13, 14)
    );
    assert!(exact.lines().all(|l| !l.contains(",moved,")));
    let groups = |csv: &str| {
        csv.lines()
            .filter(|l| l.starts_with("subsystem,"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(groups(&exact), groups(&csv));
    let table = ok(&["diff", "--match", "exact", &a, &b]);
    assert!(
        !table.contains("Match") && !table.contains("moved"),
        "{table}"
    );
    assert!(table.ends_with("Total: 20.4 MiB -> 20.4 MiB (+2.9 KiB), calls 21683 -> 21695 (+12)\n"));
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "diff", "--match", "exact", "--format", "json", &a, &b,
    ]))
    .unwrap();
    assert_eq!(v["matching"]["mode"], "exact");
    assert_eq!(v["matching"]["moved"], 0);
    assert_eq!(v["sites"][0]["matched"], serde_json::Value::Null);

    // Two boots of one kernel: nothing moves, both pairings agree.
    let (a, b) = (fixture(MOVED_A), fixture("guest-upstream-6.12.117-b.txt"));
    let moved = ok(&["diff", "--format", "csv", &a, &b]);
    assert!(moved.lines().all(|l| !l.contains(",moved,")), "{moved}");
    assert_eq!(
        moved,
        ok(&["diff", "--match", "exact", "--format", "csv", &a, &b])
    );

    assert_eq!(
        run(&["diff", "--match", "fuzzy", &a, &b]).status.code(),
        Some(2)
    );
}

// ------------------------------------------------------------------ malformed input

#[test]
fn malformed_lines_warn_with_line_numbers() {
    let o = run(&[
        "top",
        "-n",
        "0",
        "--format",
        "csv",
        &fixture("malformed.txt"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    let warned: Vec<&str> = err
        .lines()
        .map(|l| {
            l.split(": line ")
                .nth(1)
                .unwrap()
                .split(':')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(warned, ["4", "6", "8", "9", "10"], "{err}");
    assert!(err.contains("line 4: malformed line (invalid byte count \"4O96\")"));
    assert!(err.contains("line 6: malformed line (missing func:NAME)"));
    assert!(err.lines().all(|l| l.starts_with("allocinfo: warning: ")));
    assert_eq!(
        stdout(&o),
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,8388608,2048,mm/shmem.c,1809,,shmem_alloc_folio,\n\
         2,6291456,32768,fs/dcache.c,1690,,__d_alloc,\n\
         3,262144,1024,drivers/base/devres.c,114,,alloc_dr,\n\
         4,8192,2,drivers/foo/bar.c,77,foo_mod,foo_probe,\n"
    );
}

#[test]
fn strict_rejects_malformed_with_exit_3() {
    for args in [
        vec!["top", "--strict"],
        vec!["group", "--strict"],
        vec!["diff", "--strict", "UPSTREAM"],
        vec!["plot", "top", "--strict", "--out", "/nonexistent/never.svg"],
    ] {
        let mut args: Vec<String> = args
            .into_iter()
            .map(|a| {
                if a == "UPSTREAM" {
                    fixture(UPSTREAM)
                } else {
                    a.to_string()
                }
            })
            .collect();
        args.push(fixture("malformed.txt"));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&argv);
        assert_eq!(o.status.code(), Some(3), "{argv:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "");
        assert!(stderr(&o).contains("line 9: malformed line (missing call count)"));
        assert!(stderr(&o).contains("5 malformed line(s)"));
    }
    // Well-formed files pass --strict.
    ok(&["top", "--strict", &fixture("v2.txt")]);
}

// ------------------------------------------------------------------ exit codes and help

#[test]
fn exit_codes() {
    assert_eq!(
        run(&["top", "/nonexistent/allocinfo"]).status.code(),
        Some(1)
    );
    assert!(stderr(&run(&["top", "/nonexistent/allocinfo"]))
        .contains("cannot read /nonexistent/allocinfo"));
    assert_eq!(run(&["top", "--bogus"]).status.code(), Some(2));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        run(&["top", "--min-bytes", "4KB", &fixture(UPSTREAM)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["top", "--file", "mm/[x", &fixture(UPSTREAM)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["group", "--by", "color", &fixture(UPSTREAM)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["top", "--format", "xml", &fixture(UPSTREAM)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(run(&["snap", "--interval", "0.5"]).status.code(), Some(2));
    assert_eq!(run(&["diff", &fixture(UPSTREAM)]).status.code(), Some(2));
    assert_eq!(run(&[]).status.code(), Some(2));
}

#[test]
fn every_command_has_help_with_exit_codes() {
    for cmd in [
        vec![],
        vec!["top"],
        vec!["group"],
        vec!["snap"],
        vec!["diff"],
        vec!["plot"],
        vec!["plot", "top"],
        vec!["plot", "group"],
        vec!["plot", "series"],
        vec!["stacks"],
        vec!["ages"],
        vec!["nodes"],
        vec!["faults"],
        vec!["leaks"],
    ] {
        let mut args = cmd.clone();
        args.push("--help");
        let out = ok(&args);
        assert!(out.contains("Usage: allocinfo"), "{args:?}");
        if !cmd.is_empty() && cmd != ["plot"] {
            assert!(out.contains("Exit status:"), "{args:?}");
            assert!(out.contains("3  malformed input lines"), "{args:?}");
        }
    }
}

// ------------------------------------------------------------------ snap

#[test]
fn snap_copies_byte_identical_with_timestamped_names() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("snaps");
    let src = fixture("v2.txt");
    let o = run(&[
        "snap",
        "--source",
        &src,
        "--out",
        out_dir.to_str().unwrap(),
        "--count",
        "2",
        "--interval",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let printed: Vec<PathBuf> = stdout(&o).lines().map(PathBuf::from).collect();
    assert_eq!(printed.len(), 2);
    let mut listed: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    listed.sort();
    assert_eq!(listed, printed);
    let original = std::fs::read(&src).unwrap();
    for p in &printed {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(is_snapshot_name(name), "{name}");
        assert_eq!(std::fs::read(p).unwrap(), original);
    }
    assert!(printed[0] < printed[1]);
}

fn is_snapshot_name(name: &str) -> bool {
    // allocinfo-YYYYmmddTHHMMSSZ.txt
    let b = name.as_bytes();
    name.len() == "allocinfo-20250101T000000Z.txt".len()
        && name.starts_with("allocinfo-")
        && name.ends_with("Z.txt")
        && b[18] == b'T'
        && b[10..18].iter().chain(&b[19..25]).all(u8::is_ascii_digit)
}

#[test]
fn snap_unreadable_source_is_runtime_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "snap",
        "--source",
        "/nonexistent/allocinfo",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
}

// ------------------------------------------------------------------ plot

fn assert_svg(path: &Path, must_contain: &[&str]) {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(100)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    for s in must_contain {
        assert!(svg.contains(s), "SVG lacks {s:?}");
    }
}

#[test]
fn plot_top_svg_names_top_sites() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("top.svg");
    ok(&[
        "plot",
        "top",
        "-n",
        "5",
        "--out",
        out.to_str().unwrap(),
        &fixture(UPSTREAM),
    ]);
    assert_svg(
        &out,
        &[
            "__filemap_get_folio (mm/filemap.c:1977)",
            "alloc_slab_page (mm/slub.c:2345)",
            "folio_prealloc",
            "page_cache_ra_unbounded",
            "alloc_page_ext",
            "192.0 MiB",
        ],
    );
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(!svg.contains("alloc_large_system_hash"), "only the top 5");
}

#[test]
fn plot_group_svg_names_subsystems() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("group.svg");
    ok(&[
        "plot",
        "group",
        "--title",
        "Subsystems & <friends>",
        "--out",
        out.to_str().unwrap(),
        &fixture(UPSTREAM),
    ]);
    assert_svg(
        &out,
        &[
            ">\nmm\n<",
            "drivers/net",
            "arch/x86",
            "387.2 MiB",
            "Subsystems &amp; &lt;friends&gt;",
        ],
    );
}

#[test]
fn plot_series_from_snapshot_dir() {
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snaps");
    std::fs::create_dir(&snaps).unwrap();
    // Names out of order on purpose: the directory listing sorts them.
    std::fs::copy(fixture(LATER), snaps.join("allocinfo-20250101T103000Z.txt")).unwrap();
    std::fs::copy(
        fixture(UPSTREAM),
        snaps.join("allocinfo-20250101T100000Z.txt"),
    )
    .unwrap();
    std::fs::write(snaps.join("README"), "not a snapshot").unwrap();
    let out = dir.path().join("series.svg");
    ok(&[
        "plot",
        "series",
        "-n",
        "3",
        "--out",
        out.to_str().unwrap(),
        snaps.to_str().unwrap(),
    ]);
    assert_svg(
        &out,
        &[
            "__filemap_get_folio",
            "alloc_slab_page",
            "folio_prealloc",
            "10:00:00",
            "over 2 snapshots",
        ],
    );
    let out2 = dir.path().join("series-subsys.svg");
    ok(&[
        "plot",
        "series",
        "--by",
        "subsystem",
        "--out",
        out2.to_str().unwrap(),
        &fixture(UPSTREAM),
        &fixture(LATER),
        &fixture("v2.txt"),
    ]);
    assert_svg(
        &out2,
        &[
            "mm",
            "fs",
            "kernel",
            "snapshot",
            "upstream-6.12-later.txt",
            "v2.txt",
        ],
    );
}

#[test]
fn plot_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Empty directory: no snapshots.
    let o = run(&[
        "plot",
        "series",
        "--out",
        dir.path().join("x.svg").to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no allocinfo-<timestamp>.txt snapshots"));
    // Missing --out is a usage error.
    assert_eq!(
        run(&["plot", "top", &fixture(UPSTREAM)]).status.code(),
        Some(2)
    );
    // Unwritable output is a runtime error.
    let o = run(&[
        "plot",
        "top",
        "--out",
        "/nonexistent/dir/x.svg",
        &fixture(UPSTREAM),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}
