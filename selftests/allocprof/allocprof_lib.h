/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the allocprof selftests: reading and writing small
 * files, loading and unloading modules, reading the kernel log,
 * /proc/allocinfo and allocprof's debugfs files, running guest commands.
 * The code is in allocprof_lib.c, compiled once and linked into every
 * program.
 *
 * The few helpers that report a test result, set the plan or end the
 * program stay here, static inline: kselftest.h keeps its counters
 * (ksft_cnt, ksft_plan) static, one set for each file that includes it,
 * and only the program's own set is the one ksft_finished() checks.
 * ksft_print_msg() keeps nothing and is used in the library too.
 */
#ifndef ALLOCPROF_LIB_H
#define ALLOCPROF_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"

#define AP_ALLOCINFO "/proc/allocinfo"
#define AP_SYSCTL "/proc/sys/vm/mem_profiling"
#define AP_TESTDIR "/sys/kernel/debug/allocprof_test"

/* allocprof's per-site control (debugfs) and its stacks report. */
#define AP_CONTROL "/sys/kernel/debug/allocprof/control"
#define AP_STACKS "/sys/kernel/debug/allocprof/stacks"
#define AP_NODES "/sys/kernel/debug/allocprof/nodes"
/* Nodes a nodes report line may name: the guest has two. */
#define AP_MAX_NODES 8

/*
 * The first line of /proc/allocinfo in format v ("1.0" or "2.0"), and
 * upstream's whole header (lib/alloc_tag.c's print_allocinfo_header()).
 */
#define AP_VERSION_LINE(v) "allocinfo - version: " v "\n"
#define AP_HEADER(v) AP_VERSION_LINE(v) "#     <size>  <calls> <tag info>\n"

/* The end of the stacks report's summary when nothing went untracked. */
#define AP_NONE_UNTRACKED "; not tracked: 0 (table full), 0 (nested)\n"

/* Format 2.0's key of a call site whose figures are not exact (ap_cut_inaccurate()). */
#define AP_INACCURATE " accurate:no "

/*
 * A program's checks as a table of steps, each reporting exactly one test
 * result, run `times` times (NULL: once; else *times, known before the
 * run starts, e.g. the number of test sites) with i = 0, 1, ...: the plan
 * is counted from the table, and a step that reports no result or more
 * than one ends the program as failed.
 */
struct ap_step {
	void (*run)(int i);
	const int *times;
};

/* A step run once, and one run for i = 0 .. *times - 1. */
#define AP_STEP(fn) { .run = (fn), .times = NULL }
#define AP_STEP_EACH(fn, times_p) { .run = (fn), .times = (times_p) }
#define AP_RUN_STEPS(steps) ap_run_steps(steps, ARRAY_SIZE(steps))

/* One call site's figures in /proc/allocinfo. */
struct ap_fig {
	long long bytes;
	unsigned long long calls;
	int found;
	int inaccurate;		/* format 2.0's "accurate:no" */
};

/* One line of a test module's "sites" file: name, kind, detail, live entries. */
struct ap_testsite {
	char name[32];
	char kind[8];
	char detail[40];
	unsigned long live;
};

/* One record of the stacks file. */
struct ap_chain {
	long long bytes;
	unsigned long long calls;
	int pid;
	char comm[32];
	char first[256];	/* its first line */
	char frames[2048];
};

/*
 * Each of the n parameter strings in bad[] must fail "insmod allocprof",
 * leave no /proc files behind and put a message in the kernel log: ours
 * (message, a fixed string without a single quote) for "param=value",
 * which the module parses, or the kernel's own naming param for a bare
 * "param", which never reaches the module:
 * AP_BAD_PARAM_RESULTS test results per string, in this order, each of
 * which ap_check_bad_param() reports alone.
 */
enum { AP_BAD_PARAM_LOAD, AP_BAD_PARAM_MESSAGE, AP_BAD_PARAM_RESULTS };

/*
 * Guest commands: only for what has no syscall (the host tool, busybox
 * commands run as a workload); the helpers below replace the rest.
 */

/* Runs a shell command quietly; returns its exit status (or -1). */
int ap_sh(const char *fmt, ...);

/*
 * Runs a shell command and reads its standard output into buf (NUL
 * terminated, truncated to size); returns its exit status (or -1).
 */
int ap_sh_out(char *buf, size_t size, const char *fmt, ...);

/* The number printed by a shell command (e.g. grep -c), or -1. */
long ap_sh_num(const char *fmt, const char *arg);

/* The kernel log, read as busybox's dmesg reads it, and grep */

/* ap_grep()'s flags, as grep's options: -F, -v. */
#define AP_GREP_FIXED 1
#define AP_GREP_INVERT 2
/* ap_klog()'s (and so ap_klog_grep()'s): dmesg -c; timestamps cut. */
#define AP_KLOG_CLEAR 4
#define AP_KLOG_NO_TIME 8
/* The patterns ap_grep() takes at most. */
#define AP_GREP_MAX 8

/*
 * The kernel log since it was last emptied, as busybox's dmesg prints it:
 * klogctl(2) SYSLOG_ACTION_READ_ALL (AP_KLOG_CLEAR: SYSLOG_ACTION_READ_CLEAR,
 * which empties it, as dmesg -c) into a buffer of the log's size, every
 * line "[seconds] text\n" without its "<level>"; AP_KLOG_NO_TIME: without
 * the "[seconds] " (ap_klog_untime()).  The caller frees it; NULL if it
 * cannot be read.
 *
 * The buffer is dmesg's: SYSLOG_ACTION_SIZE_BUFFER (CONFIG_LOG_BUF_SHIFT=17
 * in the guest's kernels, 128 KiB), so a log longer than that since it was
 * emptied gives its newest lines, as dmesg did.  printk() stores a line in
 * the ring buffer before it returns, so what the kernel printed in a system
 * call of the program is read as soon as the call has returned, as the
 * dmesg run after it read it (a line without its newline waits for the
 * next line, for both); every line a program looks for is printed so, in
 * a write, a load or an unload it made, or by its child before the
 * waitpid() that reaped it (oom_test).
 */
char *ap_klog(int flags);

/* Cuts "[...] " off every line that starts so, as sed 's/^\[[^]]*\] //'. */
void ap_klog_untime(char *text);

/* Empties the kernel log (dmesg -c >/dev/null): SYSLOG_ACTION_CLEAR; 0 or -errno. */
int ap_klog_clear(void);

/*
 * The number of lines of text that match pattern as busybox's grep
 * matches them: a basic regular expression (regcomp(3) with REG_NOSUB, as
 * grep without -E), a fixed string with AP_GREP_FIXED (-F); several
 * patterns, one a line ("A\nB": grep -e A -e B), match where any does;
 * AP_GREP_INVERT counts the lines that do not (-v).  With out, *out is
 * those lines, each ending in a newline, for the caller to free.  -1 if a
 * pattern is no valid expression (or no memory).
 */
long ap_grep(const char *text, const char *pattern, int flags, char **out);

/*
 * ap_grep() of text, which it then frees: a file's or the kernel log's; -1
 * (and *out NULL) if text is NULL, which could not be read.
 */
long ap_grep_free(char *text, const char *pattern, int flags, char **out);

/*
 * ap_grep() of the kernel log, "dmesg | grep -c pattern" ("dmesg -c | ..."
 * with AP_KLOG_CLEAR in flags); -1 if the log cannot be read.
 */
long ap_klog_grep(const char *pattern, int flags, char **out);

/*
 * Of the lines of the kernel log that match pattern (flags), the number
 * that match pattern2 (flags2): "dmesg | grep pattern | grep -c pattern2".
 */
long ap_klog_grep2(const char *pattern, int flags, const char *pattern2, int flags2);

/*
 * ap_klog_grep(), with the last line that matches in line (size bytes, ""
 * if none; "dmesg | grep pattern | tail -n 1").
 */
long ap_klog_last(const char *pattern, int flags, char *line, size_t size);

/* The kernel log since the last look names text (grep -F); clears it. */
int ap_logged(const char *text);

/*
 * No call site's flags changed since before (the control file as read
 * then): every line of before is still there, the same and in the same
 * order, and any other line is a call site that appeared since with the
 * flags a new call site gets (=p), such as a Rust line of allocprof's own,
 * named when it first allocates.
 */
int ap_control_unchanged(const char *before);

/* Files */

/* Reads a whole small file into buf; returns its length or -errno. */
ssize_t ap_read_file(const char *path, char *buf, size_t size);

/* Reads a whole file of any size; the caller frees the result. */
char *ap_slurp(const char *path, size_t *lenp);

/* Writes len bytes to path in one write(); returns 0 or -errno. */
int ap_write_file(const char *path, const void *data, size_t len);

/*
 * Opens path with flags as user and group nobody (65534), without
 * supplementary groups or capabilities; returns 0 if that worked, else
 * the errno.
 */
int ap_open_as_nobody(const char *path, int flags);

/* vm.mem_profiling reads exactly want (e.g. "1\n"); says what it read if not. */
int ap_sysctl_is(const char *want);

/* The number of possible CPUs, from /sys/devices/system/cpu/possible. */
int ap_possible_cpus(void);

/*
 * "ls dir": the names in dir but those that start with a dot, sorted by
 * strcmp() (busybox's ls in the C locale), each ending in a newline; the
 * caller frees it; NULL if dir cannot be read.
 */
char *ap_ls(const char *dir);

/* "grep -c pattern path": ap_grep() of the file; -1 if it cannot be read. */
long ap_grep_file(const char *path, const char *pattern, int flags, char **out);

/* Prints each line of text after "# " (sed 's/^/# /'). */
void ap_print_lines(const char *text);

/* "cat from >to": to created (0666 less the umask) or truncated; 0 or -errno. */
int ap_copy_file(const char *from, const char *to);

/*
 * The kB of /proc/meminfo's field, as sed -n 's/^FIELD: *\([0-9]*\) kB/\1/p'
 * finds them; -1 if it does not.
 */
long long ap_meminfo_kb(const char *field);
/* Nanoseconds of CLOCK_MONOTONIC (the clock of the kernel's ages). */
long long ap_now_ns(void);

/*
 * The end address of the last "System RAM" range in /proc/iomem (its line
 * "  START-END : System RAM"), or -1.
 */
long long ap_ram_end(void);

/* The running kernel's major version, from uname(2) (0 if unknown). */
int ap_kernel_major(void);

/* Whether the running kernel is version major.minor or later (uname(2)). */
int ap_kernel_at_least(int major, int minor);

/*
 * The running kernel's own /proc/allocinfo format, allocprof's default
 * ("1.0" or "2.0"): 2.0 from Linux 6.18 on (7.3), 1.0 before (6.12).
 */
static inline const char *ap_default_format(void)
{
	return ap_kernel_at_least(6, 18) ? "2.0" : "1.0";
}

/*
 * The header show_mem() (OOM reports, SysRq-m) prints above the biggest
 * call sites while profiling is on, or off: Linux 7.3's mm/show_mem.c
 * says which, 6.12's does not.
 */
static inline const char *ap_show_mem_header(int on)
{
	if (ap_kernel_major() < 7)
		return "Memory allocations:";
	return on ? "Memory allocations (profiling is currently turned on):" :
		    "Memory allocations (profiling is currently turned off):";
}

/* The whole header of the default format (AP_HEADER of ap_default_format()). */
static inline const char *ap_default_header(void)
{
	return ap_kernel_at_least(6, 18) ? AP_HEADER("2.0") : AP_HEADER("1.0");
}

/*
 * Whether the running kernel keeps the tag reference of every allocation
 * itself and hands allocprof the tag (Linux 7 and later: patches/7.3/),
 * rather than allocprof keeping its own (6.12's 2-byte slots and page
 * array).
 */
static inline int ap_kernel_keeps_refs(void)
{
	return ap_kernel_major() >= 7;
}

/* Modules */

/* Is the module loaded (listed in /proc/modules)? */
int ap_module_loaded(const char *name);

/*
 * finit_module(2) of ap_module_fd()'s module: no shell, no modprobe, so
 * no dependency loaded first (allocprof_test2 needs allocprof_test, the
 * only module of this tree that needs another); 0 or -errno.
 */
int ap_finit(int fd, const char *params);

/* delete_module(2), as rmmod does it; 0 or -errno. */
int ap_delete(const char *name);

/* The file of a module of this tree: /lib/modules/<release>/extra/<name>.ko. */
void ap_module_path(const char *name, char *path, size_t size);

/*
 * "insmod <its file> params" of a module of this tree, by finit_module(2)
 * once (busybox's insmod tries init_module(2) after a failure): params
 * (NULL: none) as the kernel takes them, nothing from the kernel's command
 * line; 0 or -errno, quietly.
 */
int ap_insmod(const char *name, const char *params);

/*
 * "modprobe name params" as busybox's modprobe does it, by finit_module(2)
 * once a module: 0 at once if name is loaded (params unused); else first
 * its dependencies in modules.dep, from the last, that are not loaded,
 * then the module, each with the kernel command line's
 * "<module>.param=value" and (the module itself) params after them, as
 * the kernel takes them; EEXIST is success.  0, or -errno, said as a "# "
 * line on standard output (busybox said it on standard error).  Unlike
 * busybox's, it reads no /etc/modprobe.conf or /etc/modprobe.d (the
 * guest has none), and a load that fails is not tried again by
 * init_module(2), so its messages are in the log once, not twice (no
 * program expects a load by ap_modprobe() or ap_insmod() to fail; the
 * bad parameters' loads, whose messages are checked, still run busybox's
 * insmod: ap_check_bad_param(), debug_test).
 */
int ap_modprobe(const char *name, const char *params);

/* "rmmod name": delete_module(2) as ap_delete(); 0, or -errno, said. */
int ap_rmmod(const char *name);

/*
 * The kernel profiles with upstream's built-in profiler (the upstream
 * flavour, the oracle), as the kernel itself says: it lacks the back-end
 * interface of our patches (patch 0002's alloc_tag_backend_register(), in
 * /proc/kallsyms on every patched kernel, whatever is loaded).  Answered
 * once, before any test changes anything.
 */
int ap_builtin_profiler(void);

/*
 * Loads allocprof (with args) and the test module; 0 on success.  An
 * allocprof already loaded is unloaded first; a test module already loaded
 * stays, with what it holds (ap_start() starts from nothing).  With
 * upstream's built-in profiler, only the test module.
 */
int ap_load(const char *args);

/*
 * Unloads the test modules an earlier program left (with their memory:
 * allocprof_test frees all it holds when it goes) and allocprof; 0 when
 * none of them is loaded any more.
 */
int ap_unload_all(void);

/*
 * A program's start from a clean state, whatever ran before it: what
 * ap_unload_all() unloads goes, then allocprof (with args) and the test
 * module are loaded afresh as by ap_load(); 0 on success.
 */
int ap_start(const char *args);

/* /proc/allocinfo */

/*
 * The one walk of /proc/allocinfo's text, line by line, for every helper
 * and program that reads the file's lines: a walk of a file read whole at
 * its first line (AP_LINES()), or of a buffer the caller read
 * (ap_lines_of(): no copy, nothing allocated); ap_info_next() hands over
 * each line parsed by ap_info_parse(), ap_lines_next() each line of other
 * text as it is (ap_grep()'s); ap_lines_end() ends the walk:
 *
 *	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
 *	struct ap_info_line l;
 *
 *	while (ap_info_next(&w, &l))
 *		if (l.index >= 2 && l.figures) ...;
 *	if (ap_lines_end(&w))
 *		(the file could not be read: no line was handed over)
 *
 * Each line is cut at its newline and NUL-terminated in place, so it may
 * be changed (ap_cut_inaccurate()).  Empty lines are passed over, as
 * strtok(3) passed them over, unless the walk has AP_LINES_EVERY: then a
 * check of the file's format sees every line as read(2) gave it, and a
 * last line without its newline (a read cut short) as not terminated.
 */
struct ap_lines {
	const char *path;	/* the file to read at the first line, or NULL */
	char *text;		/* what is walked */
	char *next;		/* where the next line starts */
	char *end;		/* the end of the text */
	unsigned int index;	/* the index the next line handed over gets */
	int flags;		/* AP_LINES_* */
	/* 0: path not read yet; 1: read, to free; 2: text given; -1: unreadable */
	int state;
};

/* Hands over empty lines too. */
#define AP_LINES_EVERY 1

/* A walk of the file at path, read whole at its first line. */
#define AP_LINES(file, walk_flags) { .path = (file), .flags = (walk_flags) }

/* One line of a walk, and its figures if parsed as a line of /proc/allocinfo. */
struct ap_info_line {
	char *text;		/* the line without its newline, NUL-terminated */
	size_t len;		/* its length, as read (a NUL in it included) */
	unsigned int index;	/* its place in the walk, from 0: 0 and 1 are the header */
	int terminated;		/* it ended in a newline */
	int figures;		/* it starts with the two figures: */
	long long bytes;	/* upstream's %12lli */
	unsigned long long calls; /* and %8llu */
	/* After them and their blanks: "file:line [module] func:name ...". */
	char *tag;
};

/*
 * A call site's tag, split (ap_info_site()): "file:line [module]
 * func:name", the module "" for a call site built in.
 */
struct ap_info_site {
	char file[512];
	unsigned long long line;
	char module[512];
	char func[512];
};

/*
 * The walk of text, len bytes the caller read: text[len] must be there to
 * be written (the NUL after a last line without a newline).
 */
void ap_lines_of(struct ap_lines *w, char *text, size_t len, int flags);

/* Ends a walk: frees what it read; 0, or -1 if its file could not be read. */
int ap_lines_end(struct ap_lines *w);

/*
 * The next line of the walk in l, its text alone (not parsed: figures 0);
 * 1, or 0 after the last.
 */
int ap_lines_next(struct ap_lines *w, struct ap_info_line *l);

/* The next line of the walk, parsed as a line of /proc/allocinfo, in l; 1, or 0. */
int ap_info_next(struct ap_lines *w, struct ap_info_line *l);

/*
 * Parses l->text (l->len bytes) as a line of /proc/allocinfo: its
 * figures, as sscanf(3) "%lld %llu" reads them, and where its tag starts;
 * figures 0 (and bytes, calls 0, tag NULL) for a line that does not start
 * with them, such as the header's.
 */
void ap_info_parse(struct ap_info_line *l);

/*
 * Splits a parsed line's tag, "file:line [module] func:name" or, built
 * in, "file:line func:name" (each part up to its array's size, the name
 * up to a blank); 0, or -1 if it is not of that form.
 */
int ap_info_site(const struct ap_info_line *l, struct ap_info_site *s);

/*
 * Cuts format 2.0's keys off a line: the " node:N=BYTES/CALLS" of a call
 * site with allocprof's n flag and the " allocated:BYTES/CALLS
 * freed:BYTES/CALLS" of one with c, then " accurate:no", leaving the tail
 * that version 1.0 has (" func:name "); returns whether " accurate:no"
 * was there.
 */
int ap_cut_inaccurate(char *line);

/*
 * The figures of every line of the call site "... [module] func:func"
 * (module NULL: a built-in call site) in /proc/allocinfo, in file order:
 * up to max of them in figs; returns how many lines there are (-1 if the
 * file cannot be read).  A module that went away with memory still
 * allocated leaves lines of its own beside those of its next load.
 */
int ap_site_lines(const char *module, const char *func, struct ap_fig *figs, int max);

/*
 * The figures of the call site "... [module] func:func" (module NULL: a
 * built-in call site) in /proc/allocinfo; found is the number of its lines.
 */
struct ap_fig ap_site(const char *module, const char *func);

/*
 * A line of /proc/allocinfo after the header, as ap_info_next() parsed it
 * (after ap_cut_inaccurate(), parsed again, for format 2.0): fewer than
 * 512 bytes, "%12lli %8llu " (bytes, calls), then "file:line [module]
 * func:name ", as upstream's alloc_tag_to_text(); the figures never
 * negative.  NULL, or what is wrong.
 */
const char *ap_line_problem(const struct ap_info_line *l);

/*
 * The call site of module has one line with exactly (bytes, calls); reports
 * what it saw.
 */
int ap_expect_in(const char *module, const char *func, long long bytes,
		 unsigned long long calls);

/* The site's figures are exactly (bytes, calls); reports what it saw. */
int ap_expect(const char *func, long long bytes, unsigned long long calls);

/*
 * The number of allocprof's lines with exactly these figures, or -1 if
 * /proc/allocinfo cannot be read.
 */
int ap_own_lines(long long bytes, unsigned long long calls);

/* The test module (allocprof_test) */

/* The call sites listed in a test module's "sites" file (path). */
int ap_testsites_of(const char *path, struct ap_testsite *sites, int max);

/* The call sites of allocprof_test (its AP_TESTDIR/sites). */
int ap_testsites(struct ap_testsite *sites, int max);

/* The live entries of the test module's site (-1: no such site). */
long ap_testsite_live(const char *name);

/* Bytes and calls one allocation at a test site adds to its figures. */
int ap_unit(const struct ap_testsite *s, long long *bytes, unsigned long long *calls);

/* Bytes and calls of one live entry of the test module's site name. */
int ap_testsite_unit(const char *name, long long *bytes, unsigned long long *calls);

/* Allocates count entries at the test module's site; 0 or -errno. */
int ap_test_alloc(const char *site, unsigned int count);

/* Frees every live entry of the test module's site; 0 or -errno. */
int ap_test_free(const char *site);

/* Frees the site's first n live entries, the oldest. */
int ap_test_free_first(const char *site, unsigned int n);

/* Frees the site's last n live entries. */
int ap_test_free_n(const char *site, unsigned int n);

/* What the kernel's allocators count */

/* Bytes upstream accounts per object of a slab cache: its slab_size. */
long long ap_slab_size(const char *cache);

/*
 * The kmalloc cache kmalloc(size) uses, as the kernel lists its caches in
 * /sys/kernel/slab: the smallest "kmalloc-<n>" or "kmalloc-<n>k" whose
 * object_size fits (kmalloc_index() picks so from kmalloc_info[] in
 * mm/slab_common.c); NULL above the largest cache.
 */
const char *ap_kmalloc_cache(long long size);

/*
 * What a vmalloc area of `bytes` (page-aligned) costs its caller, as
 * mm/vmalloc.c allocates it under the caller's tag: every page (the bulk
 * allocator counts each page as one allocation; huge pages are split into
 * pages, one call each), plus the array of page pointers
 * __vmalloc_area_node() allocates: kmalloc()ed up to a page, else itself
 * vmalloc()ed, recursively.  The vm_struct and vmap_area are allocated at
 * mm/vmalloc.c's own call sites.
 */
int ap_vmalloc_unit(long long bytes, long long *total, unsigned long long *calls);

/*
 * What the kernel counts for a kvmalloc() of @size bytes that kmalloc
 * serves: an object of its kmalloc cache, or above the largest cache the
 * power-of-two pages of a large kmalloc.  0 on success.
 */
int ap_kvmalloc_figures(long long size, long long *bytes, unsigned long long *calls);

/*
 * A size as the kernel's memory report (show_mem(): SysRq-m, the OOM
 * report) prints a call site's bytes: string_get_size(size, 1,
 * STRING_UNITS_2, ...).
 */
void ap_size_text(unsigned long long size, char *buf, size_t len);

/* allocprof's control, stacks and nodes files */

/*
 * The bytes and calls of the lines of text, a nodes report, that end in
 * `tail` (e.g. " func:NAME") and a node, added up by node; 0, or -1 if a
 * line names a node from AP_MAX_NODES on.
 */
int ap_node_figures(const char *text, const char *tail,
		    long long bytes[AP_MAX_NODES], long long calls[AP_MAX_NODES]);

/*
 * The flags of call site func of module (the control file's name: vmlinux
 * for a built-in one) in the control file; whether it has one such line.
 */
int ap_flags_in(const char *module, const char *func, char *flags, size_t size);

/* The flags of the test module's call site func in the control file. */
int ap_flags_of(const char *func, char *flags, size_t size);

/* Whether the flags of call site func of module are want (else says so). */
int ap_flags_are_in(const char *module, const char *func, const char *want);

/* Whether the flags of the test module's call site func are want (else says so). */
int ap_flags_are(const char *func, const char *want);

/*
 * The records of the stacks file whose first line has " [module] func:<func>
 * pid:" (module NULL: a built-in call site, " func:<func> pid:");
 * returns how many (up to max).
 */
int ap_chains_in(const char *module, const char *func, struct ap_chain *out, int max);

/* The records of the stacks file for the test module's call site func. */
int ap_chains_of(const char *func, struct ap_chain *out, int max);

/*
 * Sums the chains of call site func of module (NULL: built in); returns how
 * many there are.
 */
int ap_chain_sum_in(const char *module, const char *func, long long *bytes,
		    unsigned long long *calls);

/* Sums the chains of the test module's func; returns how many there are. */
int ap_chain_sum(const char *func, long long *bytes, unsigned long long *calls);

/* Steps: the plan a table of steps makes (ap_run_steps() sets it). */
unsigned int ap_steps_plan(const struct ap_step *steps, unsigned int n);

/*
 * Inline, with the program's kselftest counters (see the top of this
 * file): they report results, set the plan or end the program.
 */

/* Sets the plan of the table of n steps and runs them (AP_RUN_STEPS()). */
static inline void ap_run_steps(const struct ap_step *steps, unsigned int n)
{
	unsigned int s;

	ksft_set_plan(ap_steps_plan(steps, n));
	for (s = 0; s < n; s++) {
		int i, times = steps[s].times ? *steps[s].times : 1;

		for (i = 0; i < times; i++) {
			unsigned int before = ksft_test_num();

			steps[s].run(i);
			if (ksft_test_num() != before + 1)
				ksft_exit_fail_msg("step %u (%d) reported %u results, not one\n", s, i,
						   ksft_test_num() - before);
		}
	}
}

/*
 * A module of this tree (/lib/modules/<release>/extra/<name>.ko) opened for
 * ap_finit(); the file descriptor, or the test exits.
 */
static inline int ap_module_fd(const char *name)
{
	char path[256];
	int fd;

	ap_module_path(name, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	return fd;
}

/*
 * One test result: exactly one of allocprof's src/FILE.rs lines shows
 * @bytes and @calls, the figures of its table @what (@known: they could be
 * computed).
 */
static inline void ap_own_table_result(int known, long long bytes, unsigned long long calls,
				       const char *what)
{
	int n = known ? ap_own_lines(bytes, calls) : -1;

	if (n != 1)
		ksft_print_msg("%d lines of allocprof's at %lld bytes %llu calls\n", n, bytes, calls);
	ksft_test_result(n == 1, "allocprof's %s: one src/ line of %lld bytes, %llu calls\n", what,
			 bytes, calls);
}

/*
 * One test result: allocprof's page back-references (2 bytes for each page
 * frame up to the kernel's max_pfn, the end of the last "System RAM" range
 * of /proc/iomem) show on exactly one of its src/FILE.rs lines, with the
 * figures of a kvmalloc of that size: allocated before allocprof could
 * count, counted once (by allocprof itself, or adopted from the record).
 */
static inline void ap_own_pages_result(void)
{
	long long end = ap_ram_end();
	long long pfns = (end + 1) / sysconf(_SC_PAGESIZE), bytes = -1;
	unsigned long long calls = 0;
	int known = end > 0 && !ap_kvmalloc_figures(pfns * 2, &bytes, &calls);
	char what[96];

	if (ap_kernel_keeps_refs()) {
		int n = known ? ap_own_lines(bytes, calls) : -1;

		ksft_test_result(n == 0,
				 "allocprof allocates no page back-references on this kernel (it keeps them): no src/ line of %lld bytes, %llu calls (%d)\n",
				 bytes, calls, n);
		return;
	}
	snprintf(what, sizeof(what), "page back-references (%lld page frames, 2 bytes each)",
		 pfns);
	ap_own_table_result(known, bytes, calls, what);
}

/* One of the results of ap_check_bad_params() for the string bad. */
static inline void ap_check_bad_param(const char *bad, int result, const char *param,
				      const char *message)
{
	if (result == AP_BAD_PARAM_LOAD) {
		int rc = ap_sh("insmod /lib/modules/$(uname -r)/extra/allocprof.ko %s 2>/dev/null",
			       bad);

		ksft_test_result(rc != 0 && !ap_module_loaded("allocprof") &&
				 access(AP_ALLOCINFO, F_OK) && access(AP_SYSCTL, F_OK),
				 "insmod allocprof %s fails, nothing left\n", bad);
	} else if (strchr(bad, '=')) {
		ksft_test_result(ap_klog_grep(message, AP_GREP_FIXED | AP_KLOG_CLEAR, NULL) > 0,
				 "insmod allocprof %s: message in the kernel log\n", bad);
	} else {
		char re[96];

		snprintf(re, sizeof(re), "invalid for parameter .%s.", param);
		ksft_test_result(ap_klog_grep(re, AP_KLOG_CLEAR, NULL) > 0,
				 "insmod allocprof %s: the kernel's message in its log\n", bad);
	}
}

/* The AP_BAD_PARAM_RESULTS results of each of the n strings in bad[]. */
static inline void ap_check_bad_params(const char *const *bad, unsigned int n,
				       const char *param, const char *message)
{
	unsigned int i;
	int r;

	for (i = 0; i < n; i++)
		for (r = 0; r < AP_BAD_PARAM_RESULTS; r++)
			ap_check_bad_param(bad[i], r, param, message);
}

#endif /* ALLOCPROF_LIB_H */
