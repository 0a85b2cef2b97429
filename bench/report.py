#!/usr/bin/env python3
"""bench/report.py DIR: the tables of a bench/run results directory.

DIR holds meta.txt and {icount,tcg}/<round>-<boot>/results.txt (Linux
6.12), 7.3/{icount,tcg}/<round>-<boot>/results.txt (Linux 7.3), whose
lines are "key=value ..." (bench/guest.sh).  Prints Markdown, for each
kernel measured (a section each when 7.3 is there): the targets, with the
per-loop figures of those missed, the cost of watching call sites (s, a:
no target), then per mode, the median time per iteration of each loop and
configuration with its ratio to that kernel's noprof, the spread (min-max
and interquartile range over every run), then the memory, /proc/allocinfo
and fork/exec figures of the -icount boots.
"""
import glob
import os
import statistics
import sys
from types import SimpleNamespace

CONFIGS = [
    ("noprof", "1. noprof: no profiling compiled in (baseline)"),
    ("upstream-on", "2. upstream, profiling on"),
    ("upstream-off", "3. upstream, booted sysctl.vm.mem_profiling=0"),
    ("base", "4. patched kernel, allocprof not loaded"),
    ("allocprof-on", "5. allocprof loaded, profiling on"),
    ("allocprof-off", "6. allocprof loaded, vm.mem_profiling=0"),
    ("record", "7. patched kernel booted alloc_tag.record=1, allocprof not loaded"),
    ("base-many", "12. as 4, the small modules of bench/many.c loaded before the benchmark's"),
    ("allocprof-on-many", "13. as 5, the small modules of bench/many.c loaded before the benchmark's"),
    ("record-many", "14. as 7, the small modules of bench/many.c loaded before the benchmark's"),
]
# Measured in the base boot of the -icount rounds, after each allocprof-on
# run (bench/guest.sh): profiling on, call sites watched through allocprof's
# control file.  Rows of the timing tables only.
WATCH_CONFIGS = [
    ("watch-other", "8. allocprof on, another call site watched and failing (+sanf), not the loops'"),
    ("watch-s", "9. allocprof on, the loops' call sites watched +s (stacks)"),
    ("watch-a", "10. allocprof on, the loops' call sites watched +a (ages)"),
    ("watch-sa", "11. allocprof on, the loops' call sites watched +sa"),
]
# The control-file flags measured alike (bench/run's SITE_FLAGS, the
# letters the guest runs): (letter, what it does).  For each, two rows
# after the watch-* ones: watch-other-L, another call site (watch-other's)
# with +L alone, the loops' call sites unflagged, whose target is
# FLAG_TARGET; and watch-L, the loops' own call sites with +L, full
# iterations, its cost above allocprof on (flag_table(), no target).  A new
# flag of the same shape is one more entry here and one more letter there.
SITE_FLAGS = [
    ("c", "churn: allocations and frees counted"),
    ("m", "memcg: allocations kept by memory cgroup"),
]
# The numbers of the rows: after the 14 of CONFIGS and WATCH_CONFIGS.
FLAG_CONFIGS = [row for i, (flag, what) in enumerate(SITE_FLAGS) for row in (
    (f"watch-other-{flag}", f"{15 + 2 * i}. allocprof on, another call site +{flag} ({what}), not the loops'"),
    (f"watch-{flag}", f"{16 + 2 * i}. allocprof on, the loops' call sites +{flag} ({what})"))]
WATCH_CONFIGS += FLAG_CONFIGS
# The coverage boots: bytes in /proc/allocinfo over MemTotal - MemFree right
# after boot.
COVERS = [
    ("cover-upstream", "upstream's built-in profiler"),
    ("cover-record", "allocprof from a shell, kernel booted alloc_tag.record=1"),
    ("cover-early", "allocprof from the initramfs, no record"),
    ("cover-late", "allocprof from a shell, no record"),
]
# allocprof on's Slab after one round of the workload, allocprof loaded
# before it (bench/guest.sh: the cover-late boot, and 7.3's
# first-compressed), where the base boots' allocprof-on figures come after
# a second round: (the configuration whose figure it replaces, the
# configuration, its name).
SLAB_FIRST = [
    ("allocprof-on", "allocprof-first",
     "allocprof loaded before the workload (the cover-late boot), profiling on"),
    ("allocprof-on-compressed", "allocprof-first-compressed",
     "allocprof loaded before the workload, booted sysctl.vm.mem_profiling=1,compressed "
     "(7.3's first-compressed boot), profiling on"),
]
# Issue #14's goal: with the record, within 5 points of upstream's coverage.
COVER_POINTS = 5.0
# Issue #25's target 5: the profiling part of the slab objects' extension
# vectors, bytes a slab object, at most this share of upstream's.
VECTOR_SHARE = 0.25
# The configurations whose vectors are counted from boot: upstream's, and
# allocprof's in the record boot after the adoption (bench/guest.sh).
VECTOR_CONFIGS = [("upstream-on", "2. upstream, profiling on"),
                  ("record", "7. booted alloc_tag.record=1, allocprof loaded after the workload")]
# Linux 7.3 (issue #43): the same configurations on the 7.3 flavours
# (noprof-7.3, upstream-7.3, base-7.3), and the built-in's compressed mode.
CONFIGS_73 = [
    ("noprof", "1. noprof-7.3: no profiling compiled in (baseline)"),
    ("upstream-on", "2. upstream-7.3, the built-in profiler on"),
    ("upstream-compressed", "2c. upstream-7.3 booted sysctl.vm.mem_profiling=1,compressed"),
    ("upstream-off", "3. upstream-7.3 booted sysctl.vm.mem_profiling=0"),
    ("base", "4. base-7.3 (the 7.3 series), allocprof not loaded"),
    ("allocprof-on", "5. base-7.3, allocprof loaded, profiling on"),
    ("allocprof-off", "6. base-7.3, allocprof loaded, vm.mem_profiling=0"),
    ("base-compressed", "4c. base-7.3 booted sysctl.vm.mem_profiling=1,compressed, allocprof not loaded"),
    ("allocprof-on-compressed", "5c. as 4c, allocprof loaded, profiling on (page references in page flags)"),
    ("record", "7. base-7.3 booted alloc_tag.record=1, allocprof not loaded"),
    ("base-many", "12. as 4, the small modules of bench/many.c loaded before the benchmark's"),
    ("allocprof-on-many", "13. as 5, the small modules of bench/many.c loaded before the benchmark's"),
    ("record-many", "14. as 7, the small modules of bench/many.c loaded before the benchmark's"),
]
WATCH_CONFIGS_73 = [
    ("watch-other", "8. allocprof on, another call site watched (+san: no f without "
     "CONFIG_FAILSLAB), not the loops'"),
] + WATCH_CONFIGS[1:]
VECTOR_CONFIGS_73 = [("upstream-on", "2. upstream-7.3, profiling on"),
                     ("record", "7. base-7.3 booted alloc_tag.record=1, allocprof loaded after the workload")]
LOOPS = [
    ("kmalloc", "kmalloc+kfree"),
    ("kmalloc64", "kmalloc(64)+kfree"),
    ("kmalloc64_one_tag", "kmalloc(64)+kfree, one tag for the loop"),
    ("kbox", "Rust KBox::new+drop (64 B)"),
    ("page", "page alloc+free"),
    ("vmalloc", "vmalloc+vfree"),
    ("percpu", "percpu alloc+free"),
]
MODES = {
    "icount": "QEMU -icount shift=0 (1 guest ns = 1 instruction): ns per iteration",
    "tcg": "plain TCG, wall clock: ns per iteration",
}


def parse(line):
    out = {}
    for field in line.split():
        if "=" in field:
            k, v = field.split("=", 1)
            out[k] = v
    return out


def load(d):
    """The result lines under D/{icount,tcg}/<round>-<boot>/ (a kernel's
    directory: the run's for 6.12, its 7.3/ for 7.3)."""
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "*", "*", "results.txt"))):
        mode = os.path.basename(os.path.dirname(os.path.dirname(f)))
        if mode not in MODES:
            continue
        rnd = os.path.basename(os.path.dirname(f)).split("-", 1)[0]
        with open(f) as fh:
            for line in fh:
                r = parse(line)
                if not r:
                    continue
                if r.get("cfg") == "upstream":
                    r["cfg"] = "upstream-on"
                r["mode"], r["round"] = mode, rnd
                rows.append(r)
    return rows


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def fmt(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.1f}"
    return f"{x:.2f}"


def pct(x, base):
    return f"{(x / base - 1) * 100:+.1f} %"


def timing_tables(k, rows, mode):
    samples = {}
    for r in rows:
        if r["mode"] != mode or "loop" not in r:
            continue
        samples.setdefault((r["cfg"], r["loop"]), []).append(int(r["ns"]) / int(r["iters"]))
    if not samples:
        return
    n = {len(v) for v in samples.values()}
    print(f"### {MODES[mode]}\n")
    print(f"Median over {'/'.join(str(x) for x in sorted(n))} runs each; "
          "ratio: median against noprof's median.\n")
    head = "| configuration | " + " | ".join(f"{name} | vs noprof" for _, name in LOOPS) + " |"
    print(head)
    print("|---|" + "---:|" * (2 * len(LOOPS)))
    base = {loop: statistics.median(samples[("noprof", loop)])
            for loop, _ in LOOPS if ("noprof", loop) in samples}
    # The watch-* rows only where they were measured (not under plain TCG).
    configs = k.configs + [c for c in k.watch if any((c[0], loop) in samples for loop, _ in LOOPS)]
    for cfg, name in configs:
        cells = []
        for loop, _ in LOOPS:
            s = samples.get((cfg, loop))
            if not s:
                cells += ["", ""]
                continue
            m = statistics.median(s)
            cells += [fmt(m), "" if cfg == "noprof" or loop not in base else pct(m, base[loop])]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    cal = {}
    for r in rows:
        if r["mode"] == mode and "loop" in r and int(r.get("cal_iters", 0)) > 0:
            cal.setdefault(r["cfg"], []).append(int(r["cal_ns"]) / int(r["cal_iters"]))
    if cal:
        allc = [x for v in cal.values() for x in v]
        per = ", ".join(f"{c}: {fmt(statistics.median(cal[c]))}" for c, _ in configs if c in cal)
        print(f"Calibration loop (6 instructions of arithmetic an iteration, the same module "
              f"code in every kernel, timed before each loop): median ns per iteration {per}; "
              f"all runs {fmt(min(allc))}–{fmt(max(allc))}.\n")
    print("Spread: min–max over all runs (interquartile range in brackets; in parentheses "
          "max − min as a share of the median), ns per iteration.\n")
    print("| configuration | " + " | ".join(name for _, name in LOOPS) + " |")
    print("|---|" + "---|" * len(LOOPS))
    for cfg, name in configs:
        cells = []
        for loop, _ in LOOPS:
            s = samples.get((cfg, loop))
            if not s:
                cells.append("")
                continue
            lo, hi = quartiles(s)
            spread = (max(s) - min(s)) / statistics.median(s) * 100
            cells.append(f"{fmt(min(s))}–{fmt(max(s))} [{fmt(lo)}–{fmt(hi)}] ({spread:.1f} %)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def figs(rows, cfg, fig, key):
    vals = [float(r[key]) for r in rows
            if r["mode"] == "icount" and r.get("cfg") == cfg and r.get("fig") == fig and key in r]
    return vals


def med(vals):
    return statistics.median(vals) if vals else None


def extra_tables(k, rows):
    if not any(r.get("fig") for r in rows if r["mode"] == "icount"):
        return
    print("### Memory (from the -icount boots)\n")
    print("| configuration | page back-references | bytes a page | MemTotal |")
    print("|---|---:|---:|---:|")
    load = [r for r in rows if r.get("fig") == "allocprof_load"]
    # The page frames the guest's zones span (bench/guest.sh).
    frames = med([float(r["n"]) for r in rows if r.get("fig") == "page_frames"])
    if not frames:
        print("(no page_frames figure: the bytes a page column needs one)\n")
        return
    for cfg, name in k.configs:
        tot = med(figs(rows, "allocprof-on" if cfg == "allocprof-off" else cfg, "MemTotal", "kib"))
        refs, per = "none", "0"
        if k.kv != "6.12":
            # 7.3: the kernel's own page references, page_ext or page flags,
            # whichever configuration; allocprof's rows are its boot's (base).
            boot = {"allocprof-on": "base", "allocprof-off": "base",
                    "allocprof-on-many": "base-many",
                    "allocprof-on-compressed": "base-compressed"}.get(cfg, cfg)
            pe = med(figs(rows, boot, "page_ext_boot", "bytes"))
            if pe is None:
                refs, per = "", ""
            elif pe > 0:
                refs = f"{pe / 1024:,.0f} KiB (page_ext)"
                per = f"{pe / frames:.1f}"
            elif cfg in ("upstream-compressed", "base-compressed", "allocprof-on-compressed"):
                refs = "none (tags in page flags)"
        elif cfg in ("upstream-on", "upstream-off"):
            pe = med(figs(rows, cfg, "page_ext_boot", "bytes"))
            if pe is not None:
                refs = f"{pe / 1024:,.0f} KiB (page_ext)"
                per = f"{pe / frames:.1f}"
        elif cfg in ("allocprof-on", "allocprof-off") and load:
            kib = statistics.median(float(r["kib"]) for r in load)
            refs = f"{kib:,.0f} KiB (PFN array)"
            per = load[0]["bytes_per_page"]
        elif cfg == "record":
            kib = med(figs(rows, cfg, "record_array", "kib"))
            if kib is not None:
                refs = f"{kib:,.0f} KiB (boot record, freed at adoption)"
                per = f"{kib * 1024 / frames:.1f}"
        cells = [refs, per, f"{tot:,.0f} KiB" if tot else ""]
        print(f"| {name} | " + " | ".join(cells) + " |")
    pe_site = [r for r in rows if r.get("fig") == "allocinfo_page_ext" and float(r["bytes"]) > 0]
    if pe_site:
        b = statistics.median(float(r["bytes"]) for r in pe_site)
        print(f"\nupstream's page_ext: the boot log's \"allocated N bytes of page_ext\"; its "
              f"/proc/allocinfo shows `{pe_site[0]['site']} func:alloc_page_ext` with "
              f"{b / 1024:,.0f} KiB in {pe_site[0]['calls']} calls (page_ext memory allocated "
              f"before page_ext covered its own pages is not counted).")
    states = {}
    for r in rows:
        if r["mode"] == "icount" and r.get("fig") == "profiling_state":
            states.setdefault(r["cfg"], set()).add(
                f"mem_profiling={r['mem_profiling']}, compressed={r['compressed']}")
    if states:
        print("\nAt boot (`/proc/sys/vm/mem_profiling`, `mem_profiling_compressed`; none: no "
              "such file): " + "; ".join(f"{cfg}: {' or '.join(sorted(v))}"
                                         for cfg, v in states.items()) + ".")
    if load and "kib" not in load[0]:
        print(f"allocprof at load: {load[0]['sites']} call sites, the kernel's page and object "
              f"references, {load[0]['counter_bytes']} bytes of counters a CPU, "
              f"{load[0]['table_kib']} KiB of counter addresses (one per id); "
              f"bytes a page above: page_ext at boot (the kernel's log) / {frames:,.0f} page "
              f"frames the guest's zones span.")
    elif load:
        print(f"allocprof at load: {load[0]['sites']} call sites, {load[0]['kib']} KiB of page "
              f"back-references ({load[0]['bytes_per_page']} bytes a page), "
              f"{load[0]['counter_bytes']} bytes of counters a CPU, {load[0]['table_kib']} KiB "
              f"of counter addresses (one per id); "
              f"bytes a page above: total / {frames:,.0f} page frames the guest's zones span.")
    print()

    print("### Reading /proc/allocinfo (-icount, 100 × `cat /proc/allocinfo > /dev/null`)\n")
    print("| configuration | call sites | bytes | ns per `cat` | less a `cat /proc/version` | vs upstream |")
    print("|---|---:|---:|---:|---:|---:|")
    net = {}
    for cfg in ("upstream-on", "allocprof-on"):
        rd = med(figs(rows, cfg, "allocinfo_read", "ns"))
        cv = med(figs(rows, cfg, "cat_version", "ns"))
        if rd is None:
            continue
        net[cfg] = (rd - cv) / 100
    for cfg, name in k.configs:
        if cfg not in net:
            continue
        rd = med(figs(rows, cfg, "allocinfo_read", "ns")) / 100
        sites = med(figs(rows, cfg, "allocinfo_sites", "n"))
        size = med(figs(rows, cfg, "allocinfo_bytes", "n"))
        vs = pct(net[cfg], net["upstream-on"]) if "upstream-on" in net and cfg != "upstream-on" else ""
        print(f"| {name} | {sites:,.0f} | {size:,.0f} | {fmt(rd)} | {fmt(net[cfg])} | {vs} |")
    print()

    whole = [
        ("forkexec", "Whole system: fork + exec + exit of busybox `true` (-icount, 50 in a row)",
         "ns per fork+exec"),
        ("hackbench", "Whole system: `bench/hackbench.c`, 4 groups of 4 senders and 4 receivers, "
         "100 messages of 100 bytes from every sender to every receiver, half over AF_UNIX "
         "sockets, half over pipes (-icount, 10 in a row)", "ns per run"),
    ]
    for fig, title, unit in whole:
        fe = {cfg: med([float(r["ns"]) / float(r["iters"]) for r in rows
                        if r["mode"] == "icount" and r.get("cfg") == cfg and r.get("fig") == fig])
              for cfg, _ in k.configs}
        if not any(fe.values()):
            continue
        print(f"### {title}\n")
        print(f"| configuration | {unit} | vs noprof |")
        print("|---|---:|---:|")
        for cfg, name in k.configs:
            if fe.get(cfg):
                vs = pct(fe[cfg], fe["noprof"]) if fe.get("noprof") and cfg != "noprof" else ""
                print(f"| {name} | {fmt(fe[cfg])} | {vs} |")
        print()


# Issue #45: while another call site has a flag of SITE_FLAGS, the loops'
# call sites, unflagged, cost what they cost with allocprof on (every loop
# bench() runs, the Rust one too); on both kernels.
FLAG_TARGETS = [
    (f"unflagged sites unchanged while another site has {flag} ({what.split(':')[0]}): "
     "within ±1 % of allocprof on",
     [loop for loop, _ in LOOPS], "within", f"watch-other-{flag}", "allocprof-on", 0.01)
    for flag, what in SITE_FLAGS]

# Loaded with profiling off costs at most 3 % more than not loaded (issue
# #13; #44 on both kernels).
OFF_TARGET = ("loaded, vm.mem_profiling=0: <= +3 % over not loaded",
              ["kmalloc", "page", "vmalloc", "percpu"], "overhead", "allocprof-off", "base", 0.03)


def record_targets(noprof):
    """Issue #25, 4: the boot record costs no more than counting, and a
    module's call site no more with many modules loaded (NOPROF: the
    baseline's name)."""
    loops = ["kmalloc", "page", "vmalloc", "percpu"]
    many = ("the small modules of bench/many.c loaded first: cost above the patched kernel "
            "within ±1 % of without")
    return [
        (f"booted alloc_tag.record=1, nothing loaded: cost over {noprof} <= allocprof on's",
         loops, "cost", "record", "allocprof-on", 1.0),
        (f"record, {many}", loops, "delta", ("record-many", "base-many"), ("record", "base"), 0.01),
        (f"allocprof on, {many}", loops, "delta", ("allocprof-on-many", "base-many"),
         ("allocprof-on", "base"), 0.01),
    ]


# The targets of issues #13 and #25, checked against the -icount medians of
# the run: (what, loops, kind, configuration, reference, limit).
# "overhead" compares the configuration's median with the reference's, as a
# fraction; "within" the same both ways (|difference| <= limit); "share"
# compares the configuration's cost above noprof with upstream's (the
# reference), "cost" with another configuration's; "delta" takes pairs
# (configuration, its base) and compares the configuration's cost above its
# base with the reference's above its own, as a fraction of the reference's
# median (the *-many configurations, whose allocator state differs from the
# others' by the small modules' allocations: their base is base-many).
TARGETS = [
    ("patched kernel, allocprof not loaded: <= +1 % over noprof",
     ["kmalloc", "page", "vmalloc", "percpu", "forkexec"], "overhead", "base", "noprof", 0.01),
    OFF_TARGET,
    ("on: cost over noprof <= half of upstream's",
     ["kmalloc", "page"], "share", "allocprof-on", "upstream-on", 0.5),
    # Issue #25, 1: kmalloc at most upstream's (the must; half is the goal
    # above), and 3: percpu at most +10 % over noprof.
    ("on: cost over noprof <= upstream's",
     ["kmalloc", "vmalloc", "percpu"], "share", "allocprof-on", "upstream-on", 1.0),
    ("on: <= +10 % over noprof",
     ["percpu"], "overhead", "allocprof-on", "noprof", 0.10),
    ("whole system (hackbench): overhead <= upstream's",
     ["hackbench"], "share", "allocprof-on", "upstream-on", 1.0),
    # Per-call-site control: an unflagged call site costs what it cost
    # before while another one is watched and has f (issue #27).
    ("unflagged site unchanged while another site is watched and has f: within ±1 % of allocprof on",
     ["kmalloc", "page", "vmalloc", "percpu"], "within", "watch-other", "allocprof-on", 0.01),
    *FLAG_TARGETS,
    *record_targets("noprof"),
]

# Issue #26: what attributing a Rust allocation to its Rust line adds is at
# most what a C call site's tag costs.  The attribution (the Location through
# the kernel crate's #[track_caller] chain, the tag from the hash table of
# Locations) is what profiling costs allocprof_rust_bench's KBox loop
# (allocprof on minus off) above what it costs the same allocation from a C
# call site (allocprof_bench's kmalloc64 loop); a C call site's tag is
# alloc_hooks()' save and restore of the task's tag, kmalloc64 against the
# same loop under one tag set outside it (kmalloc64_one_tag), profiling on.
RUST_TARGET = ("Rust line's attribution adds at most a C call site's tag (allocprof on)",
               "kbox", "kmalloc64", "kmalloc64_one_tag", "allocprof-on", "allocprof-off")


# 7.3's targets (issue #43), against the built-in profiler of 7.3 in its
# best mode: slab allocations against it on (its compressed mode changes
# only the pages'), pages against its compressed mode; the patched kernel
# without allocprof against noprof-7.3.  The memory rows are
# memory_targets_73().
ALL_LOOPS = [loop for loop, _ in LOOPS]
TARGETS_73 = [
    ("kmalloc loops, allocprof on: cost over noprof-7.3 <= the built-in's (on)",
     ["kmalloc", "kmalloc64"], "share", "allocprof-on", "upstream-on", 1.0),
    ("goal: kmalloc loops, allocprof on: cost over noprof-7.3 <= half of the built-in's (on)",
     ["kmalloc", "kmalloc64"], "share", "allocprof-on", "upstream-on", 0.5),
    ("page loop, allocprof on: cost over noprof-7.3 <= the built-in's `,compressed`",
     ["page"], "share", "allocprof-on", "upstream-compressed", 1.0),
    ("page loop, both booted `,compressed` (page references in page flags), allocprof on: "
     "cost over noprof-7.3 <= the built-in's",
     ["page"], "share", "allocprof-on-compressed", "upstream-compressed", 1.0),
    ("goal: page loop, allocprof on: cost over noprof-7.3 <= half of the built-in's `,compressed`",
     ["page"], "share", "allocprof-on", "upstream-compressed", 0.5),
    ("base-7.3, allocprof not loaded: <= +1 % over noprof-7.3",
     ALL_LOOPS, "overhead", "base", "noprof", 0.01),
    # Issue #44's rows that 6.12 has had since issues #13 and #25: off,
    # vmalloc and percpu on, the record and the many small modules.
    OFF_TARGET,
    ("vmalloc and percpu loops, allocprof on: cost over noprof-7.3 <= the built-in's (on)",
     ["vmalloc", "percpu"], "share", "allocprof-on", "upstream-on", 1.0),
    ("percpu loop, allocprof on: <= +10 % over noprof-7.3",
     ["percpu"], "overhead", "allocprof-on", "noprof", 0.10),
    *FLAG_TARGETS,
    *record_targets("noprof-7.3"),
]

KERNELS = {
    "6.12": SimpleNamespace(
        kv="6.12", subdir="", configs=CONFIGS, watch=WATCH_CONFIGS, covers=COVERS,
        vectors=VECTOR_CONFIGS, targets=TARGETS, whose={"upstream-on": "upstream's"}),
    "7.3": SimpleNamespace(
        kv="7.3", subdir="7.3", configs=CONFIGS_73, watch=WATCH_CONFIGS_73, covers=COVERS,
        vectors=VECTOR_CONFIGS_73, targets=TARGETS_73,
        whose={"upstream-on": "the built-in's", "upstream-compressed": "the built-in's ,compressed"}),
}


def icount_medians(rows):
    """Median ns per iteration under -icount, by (configuration, loop or figure)."""
    samples = {}
    for r in rows:
        if r["mode"] != "icount":
            continue
        key = r.get("loop") or (r.get("fig") if r.get("fig") in ("forkexec", "hackbench") else None)
        if key and "ns" in r and "iters" in r:
            samples.setdefault((r["cfg"], key), []).append(float(r["ns"]) / float(r["iters"]))
    return {k: statistics.median(v) for k, v in samples.items()}


def verdict(ok):
    return "met" if ok else "**missed**"


def target_table(k, rows):
    m = icount_medians(rows)
    if not m:
        return
    print("### Against the targets (-icount medians)\n")
    print("| target | loop | figure | |")
    print("|---|---|---|---|")
    # (target, its configurations) of each missed target, for
    # missed_figures(): the configurations None for the memory rows.
    missed = []
    for what, loops, kind, cfg, ref, limit in k.targets:
        cfgs = [*cfg, *ref] if kind == "delta" else [cfg, ref]

        def miss(ok):
            if not ok and (what, cfgs) not in missed:
                missed.append((what, cfgs))
            return verdict(ok)
        for loop in loops:
            if kind == "delta":
                a, a0, b, b0 = (m.get((c, loop)) for c in (*cfg, *ref))
                if None in (a, a0, b, b0):
                    print(f"| {what} | {loop} | not measured | {miss(False)} |")
                    continue
                x = ((a - a0) - (b - b0)) / b
                fig = (f"{fmt(a - a0)} against {fmt(b - b0)} above the patched kernel "
                       f"({x * 100:+.2f} % of {fmt(b)})")
                print(f"| {what} | {loop} | {fig} | {miss(abs(x) <= limit)} |")
                continue
            a, b, n = m.get((cfg, loop)), m.get((ref, loop)), m.get(("noprof", loop))
            if a is None or b is None or n is None:
                print(f"| {what} | {loop} | not measured | {miss(False)} |")
                continue
            if kind in ("overhead", "within"):
                x = a / b - 1
                fig = f"{x * 100:+.2f} % ({fmt(a)} against {fmt(b)})" if kind == "within" \
                    else f"{x * 100:+.1f} % ({fmt(a)} against {fmt(b)})"
                ok = x <= limit if kind == "overhead" else abs(x) <= limit
            else:
                ours, theirs = a - n, b - n
                share = ours / theirs if theirs > 0 else float("inf")
                whose = k.whose.get(ref, f"{ref}'s") if kind == "share" else f"{ref}'s"
                fig = (f"{fmt(ours)} against {whose} {fmt(theirs)} above noprof "
                       f"({share * 100:.0f} % of {whose})")
                ok = ours <= limit * theirs
            print(f"| {what} | {loop} | {fig} | {miss(ok)} |")
    if k.kv == "6.12":
        targets_612(k, rows, m)
    else:
        memory_targets_73(rows, missed)
    print()
    missed_figures(k, m, missed)


def targets_612(k, rows, m):
    """6.12's rows after the loops': issue #26's Rust target, the memory,
    the /proc/allocinfo read and query, the coverage."""
    what, rust, c, c1, on, off = RUST_TARGET
    r_on, r_off, c_on, c_off, c1_on = (m.get(key) for key in ((on, rust), (off, rust), (on, c), (off, c),
                                                              (on, c1)))
    if None in (r_on, r_off, c_on, c_off, c1_on):
        print(f"| {what} | {rust} | not measured | **missed** |")
    else:
        adds, tag = (r_on - r_off) - (c_on - c_off), c_on - c1_on
        fig = (f"{adds:,.1f} against {tag:,.1f} instructions an allocation (profiling costs KBox "
               f"{fmt(r_on - r_off)}, kmalloc(64) {fmt(c_on - c_off)}; kmalloc(64) under one tag "
               f"{fmt(c1_on)} against {fmt(c_on)})")
        print(f"| {what} | {rust} | {fig} | {verdict(adds <= tag)} |")
    many = sorted({int(r["n"]) for r in rows if r.get("fig") == "many_modules"})
    if many:
        print(f"| (the rows with bench/many.c: {'/'.join(map(str, many))} small modules loaded) | | | |")
    load = [r for r in rows if r.get("fig") == "allocprof_load"]
    if load:
        bpp = float(load[0]["bytes_per_page"])
        print(f"| page back-references <= 2 bytes a page | | {bpp:g} bytes a page | {verdict(bpp <= 2)} |")
        if "counter_bytes" in load[0]:
            per_site = float(load[0]["counter_bytes"]) / float(load[0]["sites"])
            print(f"| counter memory a call site <= upstream's 16 bytes a CPU | | "
                  f"{per_site:.1f} bytes a CPU ({load[0]['counter_bytes']} for {load[0]['sites']} "
                  f"call sites) | {verdict(per_site <= 16)} |")
    vec = slab_vectors(k, rows)
    if "upstream-on" in vec:
        # The profiling part of a vector entry, a slab object's, by the
        # kernel's sizes: /proc/allocinfo counts only some of the vectors
        # (vector_table()), so their bytes cannot give it.
        up, ours = vec["upstream-on"], vec.get("record")
        fig = "not measured" if ours is None else \
            (f"{ours['ref']:g} against upstream's {up['ref']:g} bytes a slab object "
             f"({ours['ref'] / up['ref'] * 100:.0f} %)")
        print(f"| slab object vectors: the profiling part <= {VECTOR_SHARE:g} of upstream's | | "
              f"{fig} | {verdict(ours is not None and ours['ref'] <= VECTOR_SHARE * up['ref'])} |")
    net = {}
    for cfg in ("upstream-on", "allocprof-on"):
        rd, cv = med(figs(rows, cfg, "allocinfo_read", "ns")), med(figs(rows, cfg, "cat_version", "ns"))
        if rd is not None and cv is not None:
            net[cfg] = (rd - cv) / 100
    if len(net) == 2:
        print(f"| reading /proc/allocinfo no dearer than upstream's | | {fmt(net['allocprof-on'])} "
              f"against {fmt(net['upstream-on'])} ns a read | "
              f"{verdict(net['allocprof-on'] <= net['upstream-on'])} |")
    q = query_costs(rows)
    if ("ioctl", "file") in q and ("text", "file") in q:
        ratio = q[("text", "file")] / q[("ioctl", "file")]
        print(f"| one file's call sites by ioctl: >= {QUERY_RATIO:g}× fewer instructions than by the "
              f"text file | | {fmt(q[('ioctl', 'file')])} against {fmt(q[('text', 'file')])} a query "
              f"({ratio:.1f}×) | {verdict(ratio >= QUERY_RATIO)} |")
    cov = coverage(k, rows)
    if "cover-upstream" in cov:
        up = statistics.median(cov["cover-upstream"])
        rec = statistics.median(cov["cover-record"]) if "cover-record" in cov else None
        fig = "not measured" if rec is None else f"{rec:.1f} % against upstream's {up:.1f} %"
        print(f"| coverage with the record within {COVER_POINTS:g} points of upstream's | | {fig} | "
              f"{verdict(rec is not None and rec >= up - COVER_POINTS)} |")


def memory_targets_73(rows, missed):
    """7.3's memory rows: what the patched kernel with allocprof adds in
    page metadata (page_ext at boot; allocprof keeps no page array on 7.3)
    and in slab metadata (Slab of /proc/meminfo after the workload, above
    noprof-7.3; a slab object's profiling part) against what the built-in
    adds, on and in its compressed mode (no page_ext: page tags in page
    flags)."""
    def pe(cfg):
        return med(figs(rows, cfg, "page_ext_boot", "bytes"))

    def slab(cfg):
        return med(figs(rows, cfg, "Slab", "kib"))
    on, comp = "the built-in's (on)", "the built-in's `,compressed`"
    booted = "both booted `,compressed`"
    for mine, ref, whose in (("base", "upstream-on", on),
                             ("base", "upstream-compressed", comp),
                             ("base-compressed", "upstream-compressed", f"{comp}, {booted}")):
        what = f"page metadata (page_ext allocated at boot), base-7.3 with allocprof: <= {whose}"
        ours, theirs = pe(mine), pe(ref)
        if ours is None or theirs is None:
            print(f"| {what} | | not measured | **missed** |")
            missed.append((what, None))
            continue
        ok = ours <= theirs
        print(f"| {what} | | {ours / 1024:,.0f} KiB against {theirs / 1024:,.0f} KiB | {verdict(ok)} |")
        if not ok:
            missed.append((what, None))
    n = slab("noprof")
    first = {then: now for then, now, _ in SLAB_FIRST}
    for mine, ref, whose in (("allocprof-on", "upstream-on", on),
                             ("allocprof-on", "upstream-compressed", comp),
                             ("allocprof-on-compressed", "upstream-compressed", f"{comp}, {booted}")):
        what = f"slab metadata: Slab above noprof-7.3 after the workload, allocprof on: <= {whose}"
        # The figure of allocprof loaded before the workload where the run
        # has it: one round of the workload, as noprof's and the built-in's.
        if slab(first[mine]) is not None:
            mine = first[mine]
            what += " (allocprof loaded before the workload)"
        a, b = slab(mine), slab(ref)
        if None in (a, b, n):
            print(f"| {what} | | not measured | **missed** |")
            missed.append((what, None))
            continue
        ok = a - n <= b - n
        print(f"| {what} | | {a - n:+,.0f} KiB against {b - n:+,.0f} KiB ({a:,.0f}, {b:,.0f}, "
              f"noprof-7.3 {n:,.0f} KiB) | {verdict(ok)} |")
        if not ok:
            missed.append((what, None))
    vec = slab_vectors(KERNELS["7.3"], rows)
    what = "slab object entry: its profiling part <= the built-in's"
    if "upstream-on" in vec and "record" in vec:
        a, b = vec["record"]["ref"], vec["upstream-on"]["ref"]
        print(f"| {what} | | {a:g} against {b:g} bytes a slab object | {verdict(a <= b)} |")
        if a > b:
            missed.append((what, None))
    else:
        print(f"| {what} | | not measured | **missed** |")
        missed.append((what, None))


def missed_figures(k, m, missed):
    """The per-loop -icount medians of the configurations of each missed
    target, with their ratio to noprof."""
    shown = [(what, cfgs) for what, cfgs in missed if cfgs]
    if not shown:
        return
    print("#### The missed targets, loop by loop (-icount medians, ns per iteration)\n")
    names = dict(k.configs + k.watch)
    for what, cfgs in shown:
        print(f"{what}:\n")
        print("| configuration | " + " | ".join(f"{name} | vs noprof" for _, name in LOOPS) + " |")
        print("|---|" + "---:|" * (2 * len(LOOPS)))
        for cfg in ["noprof"] + [c for c in cfgs if c != "noprof"]:
            cells = []
            for loop, _ in LOOPS:
                a, n = m.get((cfg, loop)), m.get(("noprof", loop))
                cells += ["" if a is None else fmt(a),
                          "" if a is None or n is None or cfg == "noprof" else pct(a, n)]
            print(f"| {names.get(cfg, cfg)} | " + " | ".join(cells) + " |")
        print()


def watch_table(k, rows):
    """The cost of watching the loops' own call sites (s, a, sa): no
    target (the issue set no limit), so figures only; and the watch
    tables' statistics line after the watched runs."""
    m = icount_medians(rows)
    flag_rows = {c for c, _ in FLAG_CONFIGS}
    watched = [(c, n) for c, n in k.watch if c != "watch-other" and c not in flag_rows
               and any((c, loop) in m for loop, _ in LOOPS)]
    if watched:
        print("### Watching the loops' own call sites (informational: no target, the issue set no limit)\n")
        print("-icount medians. *cost*: instructions per iteration above allocprof on (row 5), what "
              "keeping each allocation's call chain (`s`: `stack_trace_save()` + "
              "`stack_depot_save()`) and/or start time (`a`) adds, with the table insert under "
              "an irqsave raw spinlock and the free through the cold path; *× upstream*: that cost "
              "as a multiple of upstream's whole overhead (upstream on above noprof). These "
              "rows run a tenth of the loops' iterations (bench/guest.sh).\n")
        print("| configuration | loop | iterations | instructions per iteration | "
              "cost above allocprof on | × upstream's overhead |")
        print("|---|---|---:|---:|---:|---:|")
        iters = {}
        for r in rows:
            if r["mode"] == "icount" and "loop" in r:
                iters.setdefault((r["cfg"], r["loop"]), set()).add(int(r["iters"]))
        for cfg, name in watched:
            for loop, _ in LOOPS:
                a, on = m.get((cfg, loop)), m.get(("allocprof-on", loop))
                up, n = m.get(("upstream-on", loop)), m.get(("noprof", loop))
                if a is None or on is None:
                    continue
                cost = a - on
                times = (f"{cost / (up - n):,.1f}×" if up is not None and n is not None and up - n > 0
                         else "n/a")
                its = "/".join(f"{x:,}" for x in sorted(iters.get((cfg, loop), ())))
                print(f"| {name} | {loop} | {its} | {fmt(a)} | {cost:+,.1f} | {times} |")
        print()
    stats = [r for r in rows if r["mode"] == "icount" and r.get("fig") == "watch_stats"]
    if stats:
        print("The watch tables after each watched run (the statistics line of "
              "`/sys/kernel/debug/allocprof/stacks`; 16,384 allocations and 4,096 chains at "
              "most): allocations and chains still tracked after the run (largest over the "
              "runs), and the allocations of the runs that were counted but not tracked, "
              "because the table was full or because they were made while another was being "
              "watched (nested), summed over the runs.\n")
        print("| configuration | runs | tracked after the run | chains after the run | "
              "not tracked: table full | not tracked: nested |")
        print("|---|---:|---:|---:|---:|---:|")
        for cfg, name in k.watch:
            rs = [r for r in stats if r["cfg"] == cfg]
            if not rs:
                continue
            print(f"| {name} | {len(rs)} | {max(int(r['tracked']) for r in rs)} | "
                  f"{max(int(r['chains']) for r in rs)} | {sum(int(r['full_run']) for r in rs)} | "
                  f"{sum(int(r['nested_run']) for r in rs)} |")
        print()


# The loops' call sites in the churn file (bench/guest.sh's fig=churn): the
# loop of each, and whether each of its calls is one allocation of the call
# site: a vmalloc() is more than one (its area's pages and the array of
# their pointers: 2 with the default vmalloc_size of a page).
CHURN_LOOPS = {
    "loop_kmalloc": ("kmalloc", True),
    "loop_kmalloc64_each": ("kmalloc64", True),
    "loop_kmalloc64_one_tag": ("kmalloc64_one_tag", True),
    "loop_page": ("page", True),
    "loop_vmalloc": ("vmalloc", False),
    "loop_percpu": ("percpu", True),
}


def flag_table(k, rows):
    """The cost of each flag of SITE_FLAGS on the loops' own call sites
    (watch-L: no target, figures and the ratio to allocprof on), and with c
    the churn file's counts after each run, checked: the other call site
    none; the loops' call sites every allocation of the run (the timed
    loop and its warm-up of a tenth, allocprof_bench.c's bench_thread())
    and as many frees, in bytes too."""
    m = icount_medians(rows)
    names = dict(k.watch)
    own = [(f"watch-{flag}", what) for flag, what in SITE_FLAGS
           if any((f"watch-{flag}", loop) in m for loop, _ in LOOPS)]
    if own:
        print("### Flags on the loops' own call sites (informational: no target)\n")
        print("-icount medians, the loops' six call sites flagged through the control file and one "
              "round through the benchmark module's run file with the full iterations (the Rust "
              "loop is not run: its call site exists only while it runs); *cost*: instructions per "
              "iteration above allocprof on (row 5); *ratio*: against allocprof on.\n")
        print("| configuration | loop | instructions per iteration | allocprof on | "
              "cost above allocprof on | ratio to allocprof on |")
        print("|---|---|---:|---:|---:|---:|")
        for cfg, _ in own:
            for loop, _ in LOOPS:
                a, on = m.get((cfg, loop)), m.get(("allocprof-on", loop))
                if a is None or on is None:
                    continue
                print(f"| {names[cfg]} | {loop} | {fmt(a)} | {fmt(on)} | {a - on:+,.1f} | {a / on:.4f} |")
        print()
    churn = [r for r in rows if r["mode"] == "icount" and r.get("fig") == "churn"]
    if not churn:
        return
    calls = {}
    for r in rows:
        if r["mode"] == "icount" and "loop" in r:
            n = int(r["iters"])
            calls[(r["cfg"], r["round"], r["rep"], r["loop"])] = n + max(n // 10, 1)
    print("The churn file after each run with `c`, before the flag was cleared: allocations and "
          "frees since `c` was set, in calls (bytes: frees against allocations). Expected: the "
          "other call site, none (the benchmark never reaches it); each loop's call site, one "
          "allocation a call of the loop (its timed iterations and the warm-up of a tenth "
          "before them; a vmalloc() counts its area's pages and the array of their pointers, "
          "so only allocs = frees there) and every one freed.\n")
    print("| configuration | call site | runs | allocations | expected | frees | bytes allocated | "
          "bytes freed | |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for cfg, _ in FLAG_CONFIGS:
        by_func = {}
        for r in churn:
            if r["cfg"] == cfg:
                by_func.setdefault(r["func"], []).append(r)
        for func, rs in sorted(by_func.items()):
            ok, exp = True, set()
            for r in rs:
                a, f, ab, fb = (int(r[x]) for x in ("allocs", "frees", "alloc_bytes", "free_bytes"))
                if cfg.startswith("watch-other-"):
                    ok &= a == f == ab == fb == 0
                    exp.add(0)
                    continue
                ok &= a == f and ab == fb
                loop, one = CHURN_LOOPS.get(func, (None, False))
                if one:
                    e = calls.get((cfg, r["round"], r["rep"], loop))
                    exp.add(e)
                    ok &= a == e

            def col(key):
                xs = [int(r[key]) for r in rs]
                return f"{min(xs):,}" if min(xs) == max(xs) else f"{min(xs):,}–{max(xs):,}"
            e = "/".join("?" if x is None else f"{x:,}" for x in sorted(exp, key=str)) or "(= frees)"
            print(f"| {names.get(cfg, cfg)} | `{func}` | {len(rs)} | {col('allocs')} | {e} | "
                  f"{col('frees')} | {col('alloc_bytes')} | {col('free_bytes')} | "
                  f"{'exact' if ok else '**not as expected**'} |")
    print()


# Issue #15's goal for one file's records: the ioctl query this many times
# cheaper than reading the text file.
QUERY_RATIO = 20.0


def query_costs(rows):
    """allocprof's median ns per query, by (how, by)."""
    out = {}
    for r in rows:
        if r["mode"] == "icount" and r.get("cfg") == "allocprof-on" and r.get("fig") == "query":
            out.setdefault((r["how"], r["by"]), []).append(float(r["ns"]) / float(r["iters"]))
    return {k: statistics.median(v) for k, v in out.items()}


def query_table(k, rows):
    per = {}
    for r in rows:
        if r["mode"] == "icount" and r.get("fig") == "query":
            per.setdefault((r["cfg"], r["how"], r["by"]), []).append(
                (float(r["ns"]) / float(r["iters"]), int(r["records"])))
    if not per:
        return
    print("### A filtered query (-icount, ns per query, 20 in one process)\n")
    print("`bench/allocinfo_query.c`: the call sites of `mm/memory.c`, and those with at least "
          "1 MiB live, by reading and scanning the whole text file, or by `ALLOCINFO_IOC_GET_AT` "
          "+ `GET_NEXT` with the filter in the kernel.\n")
    print("| configuration | query | text file | ioctl | text / ioctl | records |")
    print("|---|---|---:|---:|---:|---:|")
    for cfg, name in k.configs:
        for by, what in (("file", "file mm/memory.c"), ("minsize", "at least 1 MiB")):
            t, i = per.get((cfg, "text", by)), per.get((cfg, "ioctl", by))
            if not t:
                continue
            tm = statistics.median(x for x, _ in t)
            im = statistics.median(x for x, _ in i) if i else None
            recs = t[0][1]
            print(f"| {name} | {what} | {fmt(tm)} | {fmt(im) if im else 'no interface'} | "
                  f"{f'{tm / im:.1f}×' if im else ''} | {recs} |")
    print()


def coverage(k, rows):
    """Median coverage (percent) of each coverage boot, with its samples."""
    out = {}
    for cfg, _ in k.covers:
        xs = [100.0 * float(r["bytes"]) / float(r["used"]) for r in rows
              if r.get("cfg") == cfg and r.get("fig") == "coverage" and float(r.get("used", 0)) > 0]
        if xs:
            out[cfg] = xs
    return out


def slab_vectors(k, rows):
    """The slab objects' extension vectors after the workload, by
    configuration (medians over the boots): the bytes and calls
    /proc/allocinfo gives their call site, the objects in slabs, and the
    kernel's sizes of an object's entry and of its profiling part."""
    out = {}
    for cfg, _ in k.vectors:
        rs = [r for r in rows if r["mode"] == "icount" and r.get("cfg") == cfg
              and r.get("fig") == "slab_vectors" and float(r.get("objects", 0)) > 0]
        if not rs:
            continue
        out[cfg] = {"bytes": med([float(r["bytes"]) for r in rs]),
                    "calls": med([float(r["calls"]) for r in rs]),
                    "objects": med([float(r["objects"]) for r in rs]),
                    "ext": float(rs[0]["ext"]), "ref": float(rs[0]["ref"])}
    return out


def vector_table(k, rows):
    vec = slab_vectors(k, rows)
    slab = {cfg: med(figs(rows, cfg, "Slab", "kib")) for cfg, _ in k.configs}
    if not vec and not any(v is not None for v in slab.values()):
        return
    print("### Slab object vectors (issue #25, target 5; -icount boots, after the workload)\n")
    if k.kv != "6.12":
        print("7.3: a slab object's entry is 8 bytes for memcg's `objcg` (caches that may be "
              "charged) and 8 for the profiling tag's `union codetag_ref`, which the kernel keeps "
              "with or without the 7.3 series (`slab_obj_ext_size()`: many caches have the tag "
              "alone, some keep it in the slab's leftover space or in the object), by the "
              "kernel's sizes, which the benchmark module reads; the vectors' call site "
              "`alloc_slab_obj_exts` in /proc/allocinfo, counted from boot; the objects in "
              "slabs (/proc/slabinfo `num_objs`).\n")
    else:
        print("A slab object's entry in its slab's extension vector (upstream: `struct slabobj_ext`, "
              "memcg's `objcg` and the profiling tag's 8-byte ref; the patched kernel: memcg's "
              "`objcg` and a 2-byte `struct alloc_tag_slot` before the vector, whose slots are "
              "rounded up to 8 bytes a vector; the normal kmalloc caches' slabs have the slots "
              "alone), by the "
              "kernel's sizes, which the benchmark "
              "module reads; the vectors' call site `alloc_slab_obj_exts` in /proc/allocinfo, "
              "counted from boot; the objects in slabs (/proc/slabinfo `num_objs`). The call "
              "site counts only some vectors: those of the normal kmalloc caches are allocated "
              "with `__GFP_NO_OBJ_EXT` and counted nowhere, so its bytes are not the vectors' "
              "memory.\n")
    print("| configuration | entry (bytes) | its profiling part | `alloc_slab_obj_exts` bytes | "
          "its calls | objects in slabs |")
    print("|---|---:|---:|---:|---:|---:|")
    for cfg, name in k.vectors:
        v = vec.get(cfg)
        if v:
            print(f"| {name} | {v['ext']:g} | {v['ref']:g} | {v['bytes']:,.0f} | "
                  f"{v['calls']:,.0f} | {v['objects']:,.0f} |")
    print("\nSlab in /proc/meminfo after the workload (median):\n")
    print("| configuration | Slab | vs noprof |")
    print("|---|---:|---:|")
    for _, cfg, name in SLAB_FIRST:
        slab[cfg] = med(figs(rows, cfg, "Slab", "kib"))
    for cfg, name in k.configs + [(cfg, name) for _, cfg, name in SLAB_FIRST]:
        if slab.get(cfg) is None:
            continue
        rel = "" if cfg == "noprof" or not slab.get("noprof") else \
            f"{(slab[cfg] / slab['noprof'] - 1) * 100:+.1f} %"
        print(f"| {name} | {slab[cfg]:,.0f} KiB | {rel} |")
    print("\nThe base boots take allocprof on's figures after the not-loaded "
          "configuration's round of the workload, a second round in that boot; the boots "
          "of allocprof loaded before the workload take them after the first, as "
          "noprof's and the built-in's are.\n")


def coverage_table(k, rows):
    cov = coverage(k, rows)
    if not cov:
        return
    print("### Coverage right after boot (bytes in /proc/allocinfo over MemTotal − MemFree)\n")
    print("| configuration | coverage (median) | range | bytes attributed | in use |")
    print("|---|---:|---:|---:|---:|")
    for cfg, name in k.covers:
        if cfg not in cov:
            continue
        b = med([float(r["bytes"]) for r in rows if r.get("cfg") == cfg and r.get("fig") == "coverage"])
        u = med([float(r["used"]) for r in rows if r.get("cfg") == cfg and r.get("fig") == "coverage"])
        xs = cov[cfg]
        print(f"| {name} | {statistics.median(xs):.1f} % | {min(xs):.1f}–{max(xs):.1f} % | "
              f"{b / 2**20:.1f} MiB | {u / 2**20:.1f} MiB |")
    sites = sorted({r["func"] for r in rows if r.get("fig") == "cover_site"})
    if sites:
        print("\nThe biggest users right after boot, bytes (median), as each configuration "
              "attributes them:\n")
        print("| configuration | " + " | ".join(f"`{f}`" for f in sites) + " |")
        print("|---|" + "---:|" * len(sites))
        for cfg, name in k.covers:
            cells = []
            for f in sites:
                b = med([float(r["bytes"]) for r in rows
                         if r.get("cfg") == cfg and r.get("fig") == "cover_site" and r["func"] == f])
                cells.append("" if b is None else f"{b / 2**20:.2f} MiB")
            print(f"| {name} | " + " | ".join(cells) + " |")
    ad = [r for r in rows if r.get("fig") == "adoption"]
    if ad:
        us = [float(r["us"]) for r in ad]
        print(f"\nThe adoption of the record (the machine stopped while allocprof's hooks take every "
              f"recorded allocation), from allocprof's load message: median {statistics.median(us):,.0f} µs "
              f"(range {min(us):,.0f}–{max(us):,.0f} µs, {len(us)} loads), for about "
              f"{statistics.median(float(r['pages']) for r in ad):,.0f} page allocations and "
              f"{statistics.median(float(r['objects']) for r in ad):,.0f} objects "
              f"(guest time: under -icount, 1 µs is 1,000 instructions).")
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/report.py RESULTS_DIR")
    d = sys.argv[1]
    meta = {}
    if os.path.exists(os.path.join(d, "meta.txt")):
        with open(os.path.join(d, "meta.txt")) as fh:
            for line in fh:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    # Each kernel's rows, its ratios against its own noprof.
    kernels = [(KERNELS[kv], rows) for kv, rows in
               (("6.12", load(d)), ("7.3", load(os.path.join(d, "7.3")))) if rows]
    if not kernels:
        sys.exit(f"no results in {d}")
    release = ", ".join(f"{meta.get('kernel' + ('' if k.kv == '6.12' else '-' + k.kv), '?')}"
                        for k, _ in kernels)
    print(f"## allocprof benchmark, {meta.get('date', '?')}\n")
    print(f"- machine: {meta.get('host_nproc', '?')} CPUs, {meta.get('host_cpu', '?')}; "
          f"{meta.get('qemu', '?')}; guest: 2 vCPUs on two NUMA nodes of 1 GiB, "
          f"kernel{'s' if len(kernels) > 1 else ''} {release}")
    print(f"- command: `{meta.get('command', '?')}`; module parameters: `{meta.get('params', '?')}`")
    if "elapsed" in meta:
        print(f"- total run time: {int(meta['elapsed']) // 60} min {int(meta['elapsed']) % 60} s")
    retries = os.path.join(d, "retries.txt")
    if os.path.exists(retries):
        with open(retries) as fh:
            lines = [x.strip() for x in fh if x.strip()]
        print(f"- guests that died and were booted again: {len(lines)} ({'; '.join(lines)})")
    print()
    for k, rows in kernels:
        # A run of 6.12 alone prints as it did before 7.3.
        if len(kernels) > 1 or k.kv != "6.12":
            print(f"## Linux {k.kv}" + ("" if k.kv == "6.12" else
                  ": noprof-7.3, upstream-7.3, base-7.3; every ratio against noprof-7.3") + "\n")
        target_table(k, rows)
        watch_table(k, rows)
        flag_table(k, rows)
        for mode in ("icount", "tcg"):
            timing_tables(k, rows, mode)
        extra_tables(k, rows)
        vector_table(k, rows)
        query_table(k, rows)
        coverage_table(k, rows)


if __name__ == "__main__":
    main()
