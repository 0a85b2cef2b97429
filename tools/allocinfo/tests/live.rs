//! End-to-end tests of `--live` (the choice between the ioctl and the text
//! file, seen from outside: a regular file refuses the ioctl), the new
//! kernel-style filters, and compact snapshots.

mod common;
use common::{fixture, ok, ok2, run, stderr};

use std::path::{Path, PathBuf};

const UPSTREAM: &str = "upstream-6.12.txt";

// ------------------------------------------------------------------ --live

#[test]
fn live_on_a_regular_file_falls_back_to_the_text_with_the_same_result() {
    let f = fixture(UPSTREAM);
    for filter in [
        vec!["--module", "nfs"],
        vec!["--file", "fs/*", "--min-size", "1M"],
        vec!["--func", "alloc_inode"],
        vec!["--module", "built-in", "--file", "mm/*"],
    ] {
        let mut from_file = vec!["top", "-n", "0", "--format", "csv"];
        from_file.extend(&filter);
        let want = ok(&[from_file.as_slice(), &[f.as_str()]].concat());
        assert!(want.lines().count() > 1, "{filter:?}");
        let mut live = from_file.clone();
        live.extend(["--live", "--proc", &f]);
        // Without -v nothing is said: the fallback is silent.
        assert_eq!(ok(&live), want, "{filter:?}");
        live.push("-v");
        let (out, err) = ok2(&live);
        assert_eq!(out, want);
        assert!(
            err.starts_with(&format!("allocinfo: {f}: read as text: ")),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn live_verbose_says_why_the_text_was_read() {
    let f = fixture(UPSTREAM);
    let (_, err) = ok2(&["top", "-v", "--live", "--proc", &f, "--module", "nfs"]);
    assert_eq!(
        err,
        format!(
            "allocinfo: {f}: read as text: the ioctl was not usable: ioctl CONTENT_ID \
             failed: Inappropriate ioctl for device (os error 25)\n"
        )
    );
    let (_, err) = ok2(&[
        "group",
        "--live",
        "--proc",
        &f,
        "--file",
        "drivers/net/*",
        "-v",
    ]);
    assert_eq!(
        err,
        format!(
            "allocinfo: {f}: read as text: no filter the kernel can evaluate (it compares \
             names exactly, one value each): file 'drivers/net/*'\n"
        )
    );
    let (_, err) = ok2(&["top", "--live", "--proc", &f, "--via", "text", "-v"]);
    assert_eq!(err, format!("allocinfo: {f}: read as text: --via text\n"));
}

#[test]
fn live_usage_and_ioctl_errors() {
    let f = fixture(UPSTREAM);
    // --via ioctl does not fall back.
    let o = run(&[
        "top", "--live", "--proc", &f, "--via", "ioctl", "--module", "nfs",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("ioctl CONTENT_ID failed: Inappropriate ioctl for device"),
        "{}",
        stderr(&o)
    );
    // --live reads --proc, not a FILE.
    assert_eq!(run(&["top", "--live", &f]).status.code(), Some(2));
    for extra in [["--proc", f.as_str()], ["--via", "text"]] {
        let o = run(&[&["top"], &extra[..], &[f.as_str()]].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains("need --live"));
    }
    let o = run(&["top", "--min-size", "2M", "--max-size", "1M", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--min-size 2097152 is larger than --max-size 1048576"));
    assert_eq!(
        run(&["top", "--accurate", "--inaccurate", &f])
            .status
            .code(),
        Some(2)
    );
    // No such file: the text path reports it.
    let o = run(&[
        "top",
        "--live",
        "--proc",
        "/nonexistent/allocinfo",
        "--module",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read /nonexistent/allocinfo"));
    // plot top and plot group take --live too.
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("t.svg");
    ok(&[
        "plot",
        "top",
        "--live",
        "--proc",
        &f,
        "--module",
        "nfs",
        "--out",
        svg.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&svg)
        .unwrap()
        .contains("nfs_alloc_inode"));
}

// ------------------------------------------------------------------ kernel-style filters

#[test]
fn line_size_and_accuracy_filters() {
    let v2 = fixture("v2.txt");
    assert_eq!(
        ok(&["top", "--inaccurate", "--format", "csv", &v2]),
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,4194304,1024,mm/percpu.c,1891,,pcpu_alloc_noprof,accurate:no\n\
         2,524288,128,kernel/bpf/memalloc.c,220,,alloc_bulk,accurate:no\n\
         3,65536,16,net/ipv4/tcp_output.c,3760,tcp_x,tcp_x_alloc,accurate:no\n"
    );
    let acc = ok(&["top", "-n", "0", "--accurate", "--format", "csv", &v2]);
    assert_eq!(acc.lines().count(), 1 + 8);
    assert!(!acc.contains("accurate:no"));
    assert_eq!(
        ok(&[
            "top",
            "--min-size",
            "2M",
            "--max-size",
            "4M",
            "--format",
            "csv",
            &v2
        ]),
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,4194304,1024,mm/percpu.c,1891,,pcpu_alloc_noprof,accurate:no\n\
         2,3145728,192,drivers/net/virtio_net.c,2510,virtio_net,add_recvbuf_mergeable,\n\
         3,2621440,1280,net/core/skbuff.c,659,,kmalloc_reserve,\n\
         4,2097152,512,kernel/fork.c,311,,alloc_thread_stack_node,\n"
    );
    assert_eq!(
        ok(&["top", "--line", "311", "--line", "659", "--format", "csv", &v2]),
        "rank,bytes,calls,file,line,module,func,extra\n\
         1,2621440,1280,net/core/skbuff.c,659,,kmalloc_reserve,\n\
         2,2097152,512,kernel/fork.c,311,,alloc_thread_stack_node,\n"
    );
}

#[test]
fn min_size_applies_to_each_kernel_line_before_summing() {
    // Two lines of one site (an inline helper in a header): 3 KiB + 2 KiB.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dup.txt");
    std::fs::write(
        &p,
        "  3072 3 include/linux/x.h:5 func:h \n  2048 2 include/linux/x.h:5 func:h \n",
    )
    .unwrap();
    let p = p.to_str().unwrap();
    // --min-size selects lines (like the kernel), --min-bytes hides sites.
    assert_eq!(
        ok(&["top", "--min-size", "3K", "--format", "csv", p]),
        "rank,bytes,calls,file,line,module,func,extra\n1,3072,3,include/linux/x.h,5,,h,\n"
    );
    assert_eq!(
        ok(&["top", "--min-bytes", "4K", "--format", "csv", p]),
        "rank,bytes,calls,file,line,module,func,extra\n1,5120,5,include/linux/x.h,5,,h,\n"
    );
}

// ------------------------------------------------------------------ compact snapshots

fn compact_snap(src: &str, out: &Path) -> PathBuf {
    let o = run(&[
        "snap",
        "--compact",
        "--source",
        src,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    PathBuf::from(String::from_utf8(o.stdout).unwrap().trim_end())
}

#[test]
fn compact_snapshots_read_back_like_the_text() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        UPSTREAM,
        "v2.txt",
        "guest-upstream-6.12.117-a.txt",
        "guest-allocprof-b.txt",
    ] {
        let src = fixture(name);
        let out = dir.path().join(name);
        let c = compact_snap(&src, &out);
        let file_name = c.file_name().unwrap().to_str().unwrap();
        assert!(
            file_name.starts_with("allocinfo-") && file_name.ends_with("Z.compact"),
            "{file_name}"
        );
        let text_len = std::fs::metadata(&src).unwrap().len();
        let compact_len = std::fs::metadata(&c).unwrap().len();
        assert!(
            compact_len < text_len,
            "{name}: {compact_len} vs {text_len}"
        );
        if name.starts_with("guest-upstream") {
            // A real capture (of a small guest): 60 %.
            assert!(
                compact_len * 100 < text_len * 65,
                "{name}: {compact_len} vs {text_len}"
            );
        }
        let c = c.to_str().unwrap();
        for args in [
            vec!["top", "-n", "0", "--format", "csv"],
            vec!["group", "--by", "module", "--format", "json"],
            vec!["top", "-n", "0", "--inaccurate", "--format", "csv"],
        ] {
            assert_eq!(
                ok(&[args.as_slice(), &[c]].concat()),
                ok(&[args.as_slice(), &[src.as_str()]].concat()),
                "{name} {args:?}"
            );
        }
        // diff between the text and its compact snapshot: nothing changed.
        let d = ok(&["diff", "--format", "json", &src, c]);
        assert!(d.contains("\"sites\": []"), "{d}");
    }
}

#[test]
fn compact_snapshots_in_a_series_directory() {
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snaps");
    std::fs::create_dir(&snaps).unwrap();
    let c = compact_snap(&fixture(UPSTREAM), &snaps);
    std::fs::rename(&c, snaps.join("allocinfo-20250101T100000Z.compact")).unwrap();
    std::fs::copy(
        fixture("upstream-6.12-later.txt"),
        snaps.join("allocinfo-20250101T103000Z.txt"),
    )
    .unwrap();
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
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("over 2 snapshots") && svg.contains("10:00:00"));
}

#[test]
fn compact_snap_warns_about_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "snap",
        "--compact",
        "--source",
        &fixture("malformed.txt"),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("malformed line"), "{}", stderr(&o));
}
