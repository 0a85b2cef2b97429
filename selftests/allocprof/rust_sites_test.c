// SPDX-License-Identifier: GPL-2.0
/*
 * rust_sites_test: allocations made from Rust are counted for the Rust line
 * that asked (issue #26), not for the kernel crate's C helpers.
 *
 * allocprof_rust_test allocates at known lines of its init with KVec, KBox,
 * VBox and Arc and logs "allocprof_rust_test: site LINE KIND SIZE COUNT"
 * for each (selftests/modules/allocprof_rust_test.rs).  Each of those lines
 * must show in /proc/allocinfo once, as
 * ".../allocprof_rust_test.rs:LINE [allocprof_rust_test] func:RustTest::init",
 * with the bytes and calls computed from that and the kernel's caches; no
 * line of the helpers (rust/helpers/slab.c, vmalloc.c) may show; after
 * rmmod no line of the module shows (as an unloaded C module's call sites),
 * and a second load counts on the same lines.
 * The same for the allocations of its debugfs trigger, after load ("echo
 * alloc", logged as "trigger-site ...", counted for func:Extra::new), which
 * "echo free" brings to 0/0.
 *
 * allocprof counts its own tables, allocated before it could count, for its
 * own lines once profiling is on: its page back-references (2 bytes for
 * each page frame up to the kernel's max_pfn, from /proc/iomem) and its
 * table of counter addresses (the size its load message gives) each show
 * on one "src/FILE.rs:LINE [allocprof]" line with the bytes and calls the
 * kernel's allocators account for that size; every line of allocprof's is
 * named src/FILE.rs.
 *
 * A Rust module's lines live in the kernel's pool of tags, which stays when
 * the module goes: their flags must still go with the module, as a C
 * module's call sites' do.  `+f` on the module, rmmod, modprobe: it loads,
 * its lines at =p, no fault entry left of it (before the fix the load
 * failed with ENOMEM at every try).  And control= must reach a Rust module
 * loaded after allocprof, from its first allocation: with
 * control="module allocprof_rust_test =_" its lines show =_ and its init's
 * live allocations 0/0, a line it first allocates later (kvgrow) =_ too
 * (before the fix they showed =p and counted).
 *
 * A module rebuilt with its lines moved shows only its current lines:
 * allocprof_rust_moved, built twice from one generated file
 * (selftests/modules/allocprof_rust_moved.sh), allocates on line P in
 * first() and on line Q in second() (build A), then on line P in third()
 * and on line Q + 1 in fourth() (build B, allocprof_rust_moved_b.ko beside
 * this program).  After A is unloaded and B loaded, line P shows once, as
 * third()'s, with B's object; Q shows no more; Q + 1 shows fourth()'s
 * object (before the fix, P kept the name first() and Q showed at 0/0).
 *
 * The kernel names a Rust line's function by reading the v0 symbol of the
 * first Rust frame outside the kernel crate's allocation code, under a raw
 * spinlock with interrupts off, so its reader is bounded (issue #41,
 * finding 11): at most 4096 steps (ALLOC_TAG_RUST_V0_STEPS), shared with
 * the copies it makes to follow backrefs, at most 32 deep, and a name of
 * fewer than KSYM_NAME_LEN bytes.  allocprof_rust_test's init allocates one
 * 24-byte object in each of five functions whose symbols are hard to read,
 * each on a line of its own (a Rust line's call site is its file and line,
 * whatever the instance of a generic function)
 * (logged as "v0-CASE-site LINE kmalloc 24 1"); each line must show once
 * with exactly its object and the name the reader's code, run on the host
 * on the module's symbols (scripts/v0-names), gave:
 *  - deep::<T16>, tuples of three nested 16 deep, whose symbol names each
 *    level once and the other two by type backrefs (read past: 52 steps):
 *    func:allocprof_rust_test::deep;
 *  - wide::<...>, 5 levels of 3 closures, each level's later closures
 *    naming the previous level by path backrefs, which the reader follows
 *    (3147 steps): func:allocprof_rust_test::wide;
 *  - too_wide::<...> with 4 closures a level (11935 steps unbounded) and
 *    too_deep::<...> with u8 in 40 1-tuples (depth 33): the reader gives up on
 *    the symbol, and the line is named after the next frame, its caller:
 *    func:allocprof_rust_test::v0_cases;
 *  - a line in a closure in a closure of closures(), whose symbol ends in
 *    two empty names, "8closures00": func:{closure}::{closure} (before the
 *    fix, the reader took "00" for one length, gave up on the symbol and
 *    named the line after the outer closure, closures::{closure}).
 * Every line of the module has a name of 1 to KSYM_NAME_LEN - 1 bytes of
 * printable ASCII, and the kernel log has no watchdog report (soft lockup,
 * RCU stall, hung task) or BUG since the module's load.
 */
#include <libgen.h>
#include <limits.h>

#include "allocprof_lib.h"

#define RUST_MODULE "allocprof_rust_test"
#define RUST_FUNC "RustTest::init"
#define MAX_SITES 16
/*
 * include/linux/kallsyms.h: alloc_tag_rust_function() writes a Rust line's
 * function name, and its NUL, in a buffer of this size.
 */
#define KSYM_NAME_LEN 512

struct rust_site {
	int line;
	char kind[16];
	long long size;
	unsigned long long count;
	long long bytes;		/* what the line must show */
	unsigned long long calls;
};

/* The sites of the init, and of the debugfs trigger. */
struct rust_sites {
	const char *tag;	/* the log lines' word: "site" or "trigger-site" */
	const char *func;	/* the function the lines are counted for */
	const char *what;	/* a case of the v0 symbol reader: what its symbol is */
	struct rust_site s[MAX_SITES];
	int n;
};

static struct rust_sites init_sites = { .tag = "site", .func = RUST_FUNC };
static struct rust_sites trigger_sites = { .tag = "trigger-site", .func = "Extra::new" };

/*
 * The v0 symbol reader's cases (V0Case in the module), one line each, with
 * the names the reader's code gave for the module's symbols on the host.
 */
static struct rust_sites v0_sites[] = {
	{ .tag = "v0-deep-site", .func = RUST_MODULE "::deep",
	  .what = "deep::<T16>, tuples of 3 nested 16 deep (type backrefs, 52 steps)" },
	{ .tag = "v0-wide-site", .func = RUST_MODULE "::wide",
	  .what = "wide::<5 levels of 3 closures> (path backrefs, 3147 steps of 4096)" },
	{ .tag = "v0-steps-site", .func = RUST_MODULE "::v0_cases",
	  .what = "too_wide::<5 levels of 4 closures> (11935 steps: given up, named after its caller)" },
	{ .tag = "v0-depth-site", .func = RUST_MODULE "::v0_cases",
	  .what = "too_deep::<u8 in 40 1-tuples> (depth 33: given up, named after its caller)" },
	{ .tag = "v0-closures-site", .func = "{closure}::{closure}",
	  .what = "closures::{closure}::{closure} (two empty names, \"00\")" },
};
static const int n_v0 = ARRAY_SIZE(v0_sites);
/* Each case's log lines before the load, and the watchdog's and BUG's lines. */
static int v0_before[ARRAY_SIZE(v0_sites)];
static long reports_before;

/* The kernel's reports of a CPU or task stuck, and of a bug (grep -e ...). */
#define REPORTS "soft lockup\nself-detected stall\ndetected stalls\n" \
	"blocked for more than\nhung task\nBUG:"

#define TRIGGER "/sys/kernel/debug/" RUST_MODULE "/trigger"
#define FAULTS "/sys/kernel/debug/allocprof/faults"
#define UNPROFILED "module " RUST_MODULE " =_"
#define FAILING "module " RUST_MODULE " +f"

/* The number of @tag lines the module has logged so far. */
static int logged(const struct rust_sites *set)
{
	char word[48];

	snprintf(word, sizeof(word), "%s: %s ", RUST_MODULE, set->tag);
	return (int)ap_klog_grep(word, 0, NULL);
}

static int logged_sites(void)
{
	return logged(&init_sites);
}

/*
 * The sites of @set logged after its first `skip` lines, with the figures
 * each must show; 0 on success.
 */
static int read_set(struct rust_sites *set, int skip)
{
	char buf[8192], word[48], *lines, *line, *save = NULL;
	int seen = 0;

	snprintf(word, sizeof(word), "%s: %s ", RUST_MODULE, set->tag);
	if (ap_klog_grep(word, 0, &lines) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%s", lines);
	free(lines);
	set->n = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct rust_site *s = &set->s[set->n];
		const char *at = strstr(line, word);

		if (!at || seen++ < skip || set->n == MAX_SITES)
			continue;
		if (sscanf(at + strlen(word), "%d %15s %lld %llu", &s->line,
			   s->kind, &s->size, &s->count) != 4)
			return -1;
		if (!strcmp(s->kind, "kmalloc")) {
			const char *cache = ap_kmalloc_cache(s->size);
			long long unit = cache ? ap_slab_size(cache) : -1;

			if (unit <= 0)
				return -1;
			s->bytes = unit * (long long)s->count;
			s->calls = s->count;
		} else if (!strcmp(s->kind, "vmalloc")) {
			long long unit = 0;
			unsigned long long calls = 0;

			if (ap_vmalloc_unit(s->size, &unit, &calls))
				return -1;
			s->bytes = unit * (long long)s->count;
			s->calls = calls * s->count;
		} else {
			return -1;
		}
		set->n++;
	}
	return set->n > 0 ? 0 : -1;
}

/*
 * The figures of the line ".../allocprof_rust_test.rs:LINE [module]
 * func:FUNC"; found is the number of such lines.
 */
static struct ap_fig rust_line(int line, const char *func)
{
	char at[64], tail[128];
	struct ap_fig fig = { 0, 0, 0, 0 };
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;

	snprintf(at, sizeof(at), "/" RUST_MODULE ".rs:%d ", line);
	snprintf(tail, sizeof(tail), " [" RUST_MODULE "] func:%s ", func);
	while (ap_info_next(&w, &l)) {
		size_t n, t = strlen(tail);

		ap_cut_inaccurate(l.text);
		n = strlen(l.text);
		if (!strstr(l.text, at) || n < t || strcmp(l.text + n - t, tail) || !l.figures)
			continue;
		fig.bytes = l.bytes;
		fig.calls = l.calls;
		fig.found++;
	}
	ap_lines_end(&w);
	return fig;
}

static int line_is(const struct rust_sites *set, const struct rust_site *s, long long bytes,
		   unsigned long long calls)
{
	struct ap_fig f = rust_line(s->line, set->func);

	if (f.found == 1 && f.bytes == bytes && f.calls == calls)
		return 1;
	ksft_print_msg("%s.rs:%d (%s %lld x%llu): %d line(s), %lld bytes %llu calls; expected %lld %llu\n",
		       RUST_MODULE, s->line, s->kind, s->size, s->count, f.found, f.bytes, f.calls,
		       bytes, calls);
	return 0;
}

/* Whether the line shows no more (its module is gone, nothing allocated). */
static int line_gone(const struct rust_sites *set, const struct rust_site *s)
{
	struct ap_fig f = rust_line(s->line, set->func);

	if (f.found == 0)
		return 1;
	ksft_print_msg("%s.rs:%d (%s %lld x%llu): %d line(s), %lld bytes %llu calls; expected none\n",
		       RUST_MODULE, s->line, s->kind, s->size, s->count, f.found, f.bytes, f.calls);
	return 0;
}

static void t_site(int i)
{
	const struct rust_site *s = &init_sites.s[i];

	ksft_test_result(line_is(&init_sites, s, s->bytes, s->calls),
			 "line %d (%s of %lld bytes, %llu times): %lld bytes, %llu calls\n", s->line,
			 s->kind, s->size, s->count, s->bytes, s->calls);
}

static void t_no_helper(int i)
{
	(void)i;
	ksft_test_result(ap_grep_file(AP_ALLOCINFO, "rust/helpers/slab.c\\|rust/helpers/vmalloc.c",
				      0, NULL) <= 0,
			 "no line of the allocation helpers (rust/helpers/slab.c, vmalloc.c)\n");
}

static void t_unloaded(int i)
{
	int ok = ap_rmmod(RUST_MODULE) == 0, s;

	(void)i;
	for (s = 0; s < init_sites.n; s++)
		ok &= line_gone(&init_sites, &init_sites.s[s]);
	for (s = 0; s < trigger_sites.n; s++)
		ok &= line_gone(&trigger_sites, &trigger_sites.s[s]);
	for (s = 0; s < n_v0; s++)
		ok &= line_gone(&v0_sites[s], &v0_sites[s].s[0]);
	ksft_test_result(ok, "after rmmod, no line of the module shows (as an unloaded C module's)\n");
}

static void t_reloaded(int i)
{
	int before = logged_sites(), ok, s;

	(void)i;
	ok = ap_modprobe(RUST_MODULE, NULL) == 0 && logged_sites() == before + init_sites.n;
	for (s = 0; s < init_sites.n; s++)
		ok &= line_is(&init_sites, &init_sites.s[s], init_sites.s[s].bytes,
			      init_sites.s[s].calls);
	/* A gone line's tag serves it again if the reader names it alike. */
	for (s = 0; s < n_v0; s++)
		ok &= line_is(&v0_sites[s], &v0_sites[s].s[0], v0_sites[s].s[0].bytes,
			      v0_sites[s].s[0].calls);
	ok &= ap_rmmod(RUST_MODULE) == 0;
	for (s = 0; s < init_sites.n; s++)
		ok &= line_gone(&init_sites, &init_sites.s[s]);
	for (s = 0; s < n_v0; s++)
		ok &= line_gone(&v0_sites[s], &v0_sites[s].s[0]);
	ksft_test_result(ok, "loaded again: the same lines count it, and show no more after rmmod\n");
}

static void t_own_pages(int i)
{
	(void)i;
	ap_own_pages_result();
}

/*
 * The KiB of counter addresses allocprof's last load message gives, as
 * sed -n 's/.*allocprof: loaded: .* \([0-9]*\) KiB of counter addresses.*'
 * '/\1/p' | tail -n 1 found them: of the last line that has such a
 * message, the digits between a space and the last " KiB of counter
 * addresses" that follows a space and digits; -1 if none.
 */
static long long counter_kib(void)
{
	static const char text[] = " KiB of counter addresses";
	char line[1024], *p;
	long long kib = -1;

	if (ap_klog_last("allocprof: loaded: .* [0-9]* KiB of counter addresses", 0, line,
			 sizeof(line)) <= 0)
		return -1;
	for (p = strstr(line, text); p; p = strstr(p + 1, text)) {
		char *d = p;

		while (d > line && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d > line && d[-1] == ' ')
			kib = d < p ? atoll(d) : -1;
	}
	return kib;
}

static void t_own_counters(int i)
{
	long long kib = counter_kib();
	long long bytes = 0;
	unsigned long long calls = 0;
	int known = kib > 0 && !ap_vmalloc_unit(kib * 1024, &bytes, &calls);
	char what[64];

	(void)i;
	snprintf(what, sizeof(what), "counter addresses (vmalloc of %lld KiB)", kib);
	ap_own_table_result(known, bytes, calls, what);
}

/* The start of a line of /proc/allocinfo at a src/FILE.rs:LINE (a basic regex). */
#define OWN_SRC_LINE "^ *[0-9]* *[0-9]* src/[a-z_/]*\\.rs:[0-9]*"

static void t_own_names(int i)
{
	long all = ap_grep_file(AP_ALLOCINFO, " \\[allocprof\\] func:", 0, NULL);
	long src = ap_grep_file(AP_ALLOCINFO, OWN_SRC_LINE " \\[allocprof\\] func:", 0, NULL);
	char *lines = NULL, *others = NULL;

	(void)i;
	if (all != src) {
		ksft_print_msg("%ld lines of allocprof's, %ld of them src/FILE.rs:LINE; the others:\n",
			       all, src);
		if (ap_grep_file(AP_ALLOCINFO, " \\[allocprof\\] func:", 0, &lines) > 0 &&
		    ap_grep(lines, OWN_SRC_LINE " ", AP_GREP_INVERT, &others) > 0)
			ap_print_lines(others);
		free(lines);
		free(others);
	}
	ksft_test_result(all > 0 && all == src, "allocprof's %ld lines are all src/FILE.rs:LINE\n",
			 all);
}

/* Allocated after load, from the debugfs trigger (main wrote "alloc"). */
static void t_trigger_site(int i)
{
	const struct rust_site *s = &trigger_sites.s[i];

	ksft_test_result(line_is(&trigger_sites, s, s->bytes, s->calls),
			 "trigger line %d (%s of %lld bytes, %llu times): %lld bytes, %llu calls\n",
			 s->line, s->kind, s->size, s->count, s->bytes, s->calls);
}

static void t_trigger_free(int i)
{
	int ok = ap_write_file(TRIGGER, "free\n", 5) == 0, s;

	(void)i;
	for (s = 0; s < trigger_sites.n; s++)
		ok &= line_is(&trigger_sites, &trigger_sites.s[s], 0, 0);
	ksft_test_result(ok, "after 'echo free' to the trigger, each of its lines at 0/0\n");
}

/* A v0 case's line: exactly its object, counted for the name expected. */
static void t_v0_site(int i)
{
	const struct rust_sites *set = &v0_sites[i];
	const struct rust_site *s = &set->s[0];

	ksft_test_result(line_is(set, s, s->bytes, s->calls),
			 "v0 symbol %s: line %d: %lld bytes, %llu calls, func:%s\n", set->what,
			 s->line, s->bytes, s->calls, set->func);
}

/*
 * The function name of a line of /proc/allocinfo (format 2.0's keys cut),
 * "... func:NAME ": all after " func:" but the line's last blank, in name
 * (size bytes, "" if none); its length, or -1 if the line has no func: or
 * the name does not fit.
 */
static int func_of(const char *text, char *name, size_t size)
{
	const char *f = strstr(text, " func:"), *end;

	name[0] = '\0';
	if (!f)
		return -1;
	f += strlen(" func:");
	end = f + strlen(f);
	if (end > f && end[-1] == ' ')
		end--;
	if ((size_t)(end - f) >= size)
		return -1;
	memcpy(name, f, end - f);
	name[end - f] = '\0';
	return (int)(end - f);
}

/*
 * Every line of the module in /proc/allocinfo is well formed
 * (ap_line_problem(), format 2.0's keys cut) and has no NUL, its func: of
 * 1 to KSYM_NAME_LEN - 1 bytes, each printable ASCII (no control byte, no
 * blank).
 */
static void t_v0_names(int i)
{
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	int lines = 0, bad = 0;

	(void)i;
	while (ap_info_next(&w, &l)) {
		char name[2 * KSYM_NAME_LEN];
		const char *problem;
		int n, k, printable = 1, nul = l.len != strlen(l.text);

		if (!strstr(l.text, " [" RUST_MODULE "] "))
			continue;
		lines++;
		ap_cut_inaccurate(l.text);
		l.len = strlen(l.text);
		ap_info_parse(&l);
		problem = nul ? "a NUL" : ap_line_problem(&l);
		n = func_of(l.text, name, sizeof(name));
		for (k = 0; k < n; k++)
			printable &= name[k] > ' ' && name[k] < 0x7f;
		if (n >= 1 && n <= KSYM_NAME_LEN - 1 && printable && !problem)
			continue;
		if (++bad <= 3)
			ksft_print_msg("%s: func: of %d bytes%s%s%s\n", l.text, n,
				       printable ? "" : ", not printable", problem ? ", line: " : "",
				       problem ? problem : "");
	}
	if (ap_lines_end(&w))
		lines = -1;
	ksft_test_result(lines > 0 && !bad,
			 "%d lines of %s: each func: 1 to %d bytes of printable ASCII, the line well formed\n",
			 lines, RUST_MODULE, KSYM_NAME_LEN - 1);
}

static long reports(void)
{
	return ap_klog_grep(REPORTS, 0, NULL);
}

static void t_v0_log(int i)
{
	long now = reports();
	char *lines = NULL;

	(void)i;
	if (now != reports_before && ap_klog_grep(REPORTS, 0, &lines) > 0) {
		fputs(lines, stderr);
		ksft_print_msg("%ld such lines in the kernel log, %ld before the module's load\n",
			       now, reports_before);
	}
	free(lines);
	ksft_test_result(now == reports_before,
			 "kernel log: no soft lockup, stall, hung task or BUG since the module's load\n");
}

/*
 * The lines of the module in the control file: how many, and how many of
 * them have @flags (e.g. "=p"); -1 if the file cannot be read.
 */
static int control_lines(const char *flags, int *with)
{
	char *buf = ap_slurp(AP_CONTROL, NULL), *l, *save = NULL;
	size_t t = strlen(flags);
	int all = 0;

	*with = 0;
	if (!buf)
		return -1;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(l);

		if (!strstr(l, " [" RUST_MODULE "]"))
			continue;
		all++;
		if (n > t && l[n - t - 1] == ' ' && !strcmp(l + n - t, flags))
			(*with)++;
	}
	free(buf);
	return all;
}

/* Whether every line of the module in the control file has @flags (else says so). */
static int all_lines_are(const char *flags)
{
	int with, all = control_lines(flags, &with);
	char *lines = NULL;

	if (all > 0 && with == all)
		return 1;
	ksft_print_msg("%d lines of %s in the control file, %d of them %s\n", all, RUST_MODULE,
		       with, flags);
	if (ap_grep_file(AP_CONTROL, " [" RUST_MODULE "]", AP_GREP_FIXED, &lines) > 0)
		ap_print_lines(lines);
	free(lines);
	return 0;
}

/* The number of lines of the faults report that name the module's file. */
static int fault_lines(void)
{
	char *buf = ap_slurp(FAULTS, NULL), *l, *save = NULL;
	int n = 0;

	if (!buf)
		return -1;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		n += !!strstr(l, "/" RUST_MODULE ".rs:");
	free(buf);
	return n;
}

static void t_fail_reload(int i)
{
	int ok, loaded, entries;

	(void)i;
	ok = ap_modprobe(RUST_MODULE, NULL) == 0 &&
	     ap_write_file(AP_CONTROL, FAILING, strlen(FAILING)) == 0 &&
	     all_lines_are("=pf") && ap_rmmod(RUST_MODULE) == 0;
	loaded = ap_modprobe(RUST_MODULE, NULL) == 0;
	if (!loaded)
		ksft_print_msg("modprobe %s failed after +f and rmmod\n", RUST_MODULE);
	entries = fault_lines();
	if (entries)
		ksft_print_msg("%d fault entries of %s left\n", entries, RUST_MODULE);
	ok = ok && loaded && all_lines_are("=p") && entries == 0;
	ok &= ap_rmmod(RUST_MODULE) == 0;
	ksft_test_result(ok, "+f on the module's lines, rmmod, modprobe: it loads, its lines =p, no fault entry left\n");
}

static void t_control_param(int i)
{
	int ok, fd, s;

	(void)i;
	fd = ap_module_fd("allocprof");
	ok = ap_delete("allocprof") == 0 && ap_finit(fd, "control=\"" UNPROFILED "\"") == 0;
	close(fd);
	if (!ok)
		ksft_print_msg("allocprof could not be loaded again with control=\"%s\"\n", UNPROFILED);
	ok = ok && ap_modprobe(RUST_MODULE, NULL) == 0 &&
	     ap_write_file(TRIGGER, "kvgrow", strlen("kvgrow")) == 0 && all_lines_are("=_");
	for (s = 0; ok && s < init_sites.n; s++)
		ok &= line_is(&init_sites, &init_sites.s[s], 0, 0);
	ok &= ap_rmmod(RUST_MODULE) == 0;
	ok &= ap_load(NULL) == 0;
	ksft_test_result(ok, "control=\"%s\", then modprobe: its lines =_ from their first allocation, its init's at 0/0\n",
			 UNPROFILED);
}

#define MOVED "allocprof_rust_moved"

/*
 * The lines of allocprof_rust_moved.rs:@line in /proc/allocinfo: how many,
 * with the figures and function name of the last.  The file is named
 * relative to the directory the module was built in (7.3's Makefile maps
 * an external module's directory away: build B, built in moved/, names it
 * without a directory), so its name is matched after a '/' or the space
 * before the file field.
 */
static int moved_line(int line, struct ap_fig *fig, char *func, size_t size)
{
	char at[64], bare[64];
	const char *tail = " [" MOVED "] func:";
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	int n = 0;

	func[0] = '\0';
	snprintf(at, sizeof(at), "/" MOVED ".rs:%d ", line);
	snprintf(bare, sizeof(bare), " " MOVED ".rs:%d ", line);
	while (ap_info_next(&w, &l)) {
		char *f = strstr(l.text, tail);

		ap_cut_inaccurate(l.text);
		if ((!strstr(l.text, at) && !strstr(l.text, bare)) || !f)
			continue;
		n++;
		fig->bytes = l.bytes;
		fig->calls = l.figures ? l.calls : ~0ULL;
		snprintf(func, size, "%s", f + strlen(tail));
		func[strcspn(func, " ")] = '\0';
	}
	return ap_lines_end(&w) ? -1 : n;
}

/*
 * Whether line @line shows once, for a function named ...::@fn (or @fn),
 * with one object of @unit bytes; else says what it shows.
 */
static int moved_shows(int line, const char *fn, long long unit)
{
	struct ap_fig fig = { 0, 0, 0, 0 };
	char func[128];
	int n = moved_line(line, &fig, func, sizeof(func));
	size_t lf = strlen(func), ln = strlen(fn);
	int named = lf >= ln && !strcmp(func + lf - ln, fn) &&
		    (lf == ln || !strncmp(func + lf - ln - 2, "::", 2));

	if (n == 1 && named && fig.bytes == unit && fig.calls == 1)
		return 1;
	ksft_print_msg("%s.rs:%d: %d line(s), the last func:%s %lld bytes %llu calls; expected one, func:...%s, %lld bytes 1 call\n",
		       MOVED, line, n, func, fig.bytes, fig.calls, fn, unit);
	return 0;
}

/* The lines build @variant logged at its load ("V f1 P f2 Q"); 0 on success. */
static int moved_logged(char variant, int *p, int *q)
{
	char buf[256], word[48], *at;

	snprintf(word, sizeof(word), MOVED ": %c ", variant);
	/* dmesg | grep WORD | tail -n 1 */
	if (ap_klog_last(word, 0, buf, sizeof(buf)) < 0)
		return -1;
	at = strstr(buf, word);
	return at && sscanf(at + strlen(word), "%*s %d %*s %d", p, q) == 2 ? 0 : -1;
}

/* The path of build B, beside this program. */
static void moved_b_path(char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = '\0';
	snprintf(path, size, "%s/" MOVED "_b.ko", n > 0 ? dirname(self) : ".");
}

static void t_rebuilt(int i)
{
	long long unit = ap_slab_size(ap_kmalloc_cache(64));
	int p = 0, q = 0, p2 = 0, r = 0, fd, ok;
	struct ap_fig fig = { 0, 0, 0, 0 };
	char path[PATH_MAX], func[128];

	(void)i;
	if (ap_module_loaded(MOVED))
		ap_delete(MOVED);
	fd = ap_module_fd(MOVED);
	ok = ap_finit(fd, "") == 0 && !moved_logged('A', &p, &q) &&
	     moved_shows(p, "first", unit) && moved_shows(q, "second", unit);
	close(fd);
	ok &= ap_delete(MOVED) == 0;
	moved_b_path(path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ksft_print_msg("%s: %s\n", path, strerror(errno));
	ok = ok && fd >= 0 && ap_finit(fd, "") == 0 && !moved_logged('B', &p2, &r) && p2 == p &&
	     moved_shows(p, "third", unit) && moved_shows(r, "fourth", unit);
	if (fd >= 0)
		close(fd);
	if (ok && moved_line(q, &fig, func, sizeof(func)) != 0) {
		ksft_print_msg("%s.rs:%d, which build B does not allocate on, shows: %lld bytes %llu calls, func:%s\n",
			       MOVED, q, fig.bytes, fig.calls, func);
		ok = 0;
	}
	ok &= ap_delete(MOVED) == 0;
	ksft_test_result(ok, "rebuilt with its lines moved: line %d shows third()'s object, not first()'s name; line %d (second()'s) no more\n",
			 p, q);
}

static const struct ap_step steps[] = {
	AP_STEP(t_own_pages),
	AP_STEP(t_own_counters),
	AP_STEP(t_own_names),
	AP_STEP_EACH(t_site, &init_sites.n),
	AP_STEP_EACH(t_trigger_site, &trigger_sites.n),
	AP_STEP(t_trigger_free),
	AP_STEP_EACH(t_v0_site, &n_v0),
	AP_STEP(t_v0_names),
	AP_STEP(t_v0_log),
	AP_STEP(t_no_helper),
	AP_STEP(t_unloaded),
	AP_STEP(t_reloaded),
	AP_STEP(t_fail_reload),
	AP_STEP(t_control_param),
	AP_STEP(t_rebuilt),
};

int main(void)
{
	int before, i;

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_module_loaded(RUST_MODULE) && ap_rmmod(RUST_MODULE))
		ksft_exit_fail_msg("cannot unload %s\n", RUST_MODULE);
	before = logged_sites();
	for (i = 0; i < n_v0; i++)
		v0_before[i] = logged(&v0_sites[i]);
	reports_before = reports();
	if (ap_modprobe(RUST_MODULE, NULL))
		ksft_exit_fail_msg("cannot load %s\n", RUST_MODULE);
	if (read_set(&init_sites, before))
		ksft_exit_fail_msg("%s logged no sites the test can read\n", RUST_MODULE);
	for (i = 0; i < n_v0; i++)
		if (read_set(&v0_sites[i], v0_before[i]) || v0_sites[i].n != 1)
			ksft_exit_fail_msg("%s logged no %s line the test can read\n", RUST_MODULE,
					   v0_sites[i].tag);
	before = logged(&trigger_sites);
	if (ap_write_file(TRIGGER, "alloc\n", 6) || read_set(&trigger_sites, before))
		ksft_exit_fail_msg("%s: no allocations from its trigger the test can read\n",
				   RUST_MODULE);
	AP_RUN_STEPS(steps);
	ksft_finished();
}
