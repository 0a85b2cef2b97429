// SPDX-License-Identifier: GPL-2.0
/*
 * rates_test: the control file's c flag (churn): for a call site with c,
 * its allocations and frees since the flag was set, in the churn report
 * (/sys/kernel/debug/allocprof/churn) and as the allocated: and freed:
 * keys of its /proc/allocinfo 2.0 line.  (churn_test is another program:
 * modules loading and unloading.)
 *
 * - slab objects (kmalloc_100) and pages (alloc_pages_3): with N objects
 *   live, "+c", A allocations, then F frees, some of objects allocated
 *   before the flag and some after: allocs:A frees:F, bytes A and F units,
 *   exactly, in the report and in /proc/allocinfo, the site's live figures
 *   unchanged in meaning (N + A - F units);
 * - split page allocations (alloc_pages_exact(): a block split into pages,
 *   the pages past the size freed at once), with c alone and with s too
 *   (a watched allocation's pieces): each piece counts as an allocation,
 *   each freed piece as a free;
 * - "-c" then "+c", and "+c" on a site that has it, start again at zero;
 * - vm.mem_profiling 0 then 1 (a site with s and c): churn and watched
 *   allocations stay those of the switch while off, start at zero after;
 * - only the call sites with c are listed; -c takes the line away;
 * - the seconds since the flag was set, against CLOCK_MONOTONIC;
 * - c for more call sites than the table holds: ENOSPC, the log says how
 *   many can, nothing changed; bad commands: EINVAL, nothing changed;
 * - c on allocprof's own call sites is taken (it changes no allocation);
 * - a module that unloads leaves no churn line; loaded again its site is p.
 *
 * Expected figures come from the kernel (the test module's "sites" file,
 * /sys/kernel/slab).  The upstream flavour has no control file:
 * scripts/check does not run this program there.
 */
#include <time.h>

#include "allocprof_lib.h"

#define CHURN "/sys/kernel/debug/allocprof/churn"

/* A line of the churn report. */
struct churn {
	unsigned long long allocs, alloc_bytes;
	long long frees, free_bytes;
	double seconds;
};

/* The control file at the start. */
static char *before;

/* Writes a command; 0 or the errno of the write. */
static int control(const char *fmt, const char *arg)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, arg);
	return -ap_write_file(AP_CONTROL, cmd, strlen(cmd));
}

/* Lines of the churn report (not the header). */
static int churn_lines(void)
{
	return ap_grep_file(CHURN, "^#", AP_GREP_INVERT, NULL);
}

/* The churn report's line of a test site: 0 if it has one. */
static int churn_of(const char *site, struct churn *c)
{
	char *buf = ap_slurp(CHURN, NULL), *line, *save = NULL, tail[80];
	int found = -1;

	snprintf(tail, sizeof(tail), " [allocprof_test] func:aptest_%s", site);
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t l = strlen(line), t = strlen(tail);

		if (l > t && !strcmp(line + l - t, tail) &&
		    sscanf(line, "allocs:%llu frees:%lld alloc_bytes:%llu free_bytes:%lld seconds:%lf",
			   &c->allocs, &c->frees, &c->alloc_bytes, &c->free_bytes,
			   &c->seconds) == 5)
			found = 0;
	}
	free(buf);
	return found;
}

/*
 * The allocated: and freed: keys of a test site's /proc/allocinfo 2.0
 * line: 0 if it has them.
 */
static int info_keys_of(const char *site, struct churn *c)
{
	char *buf = ap_slurp(AP_ALLOCINFO, NULL), *line, *save = NULL, *k, want[80];
	int found = -1;

	snprintf(want, sizeof(want), " [allocprof_test] func:aptest_%s ", site);
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, want))
			continue;
		k = strstr(line, " allocated:");
		if (k && sscanf(k, " allocated:%llu/%llu freed:%lld/%lld", &c->alloc_bytes,
				&c->allocs, &c->free_bytes, &c->frees) == 4)
			found = 0;
	}
	free(buf);
	return found;
}

/* Both say allocs/frees calls and a/f bytes; says what they show if not. */
static int churn_is(const char *site, unsigned long long allocs, long long frees,
		    unsigned long long a, long long f)
{
	struct churn c = { 0 }, k = { 0 };
	int in_report = churn_of(site, &c) == 0, in_info = info_keys_of(site, &k) == 0;

	if (in_report && in_info && c.allocs == allocs && c.frees == frees &&
	    c.alloc_bytes == a && c.free_bytes == f && k.allocs == allocs && k.frees == frees &&
	    k.alloc_bytes == a && k.free_bytes == f)
		return 1;
	ksft_print_msg("%s: churn %s allocs:%llu frees:%lld alloc_bytes:%llu free_bytes:%lld; "
		       "allocinfo %s allocated:%llu/%llu freed:%lld/%lld; expected %llu %lld %llu %lld\n",
		       site, in_report ? "" : "(no line)", c.allocs, c.frees, c.alloc_bytes,
		       c.free_bytes, in_info ? "" : "(no keys)", k.alloc_bytes, k.allocs,
		       k.free_bytes, k.frees, allocs, frees, a, f);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Objects and pages: N live, +c, A more, F freed (F_OLD of the N first,
 * the oldest, then F - F_OLD of the newest), in units of one allocation.
 */
static const struct {
	const char *site;
	unsigned int n, a, f_old, f;
} simple[] = {
	{ "kmalloc_100", 4, 5, 3, 4 },
	{ "alloc_pages_3", 2, 3, 1, 3 },
	{ "cache_alloc", 3, 6, 3, 6 },
};
static const int nr_simple = ARRAY_SIZE(simple);

static void t_simple(int i)
{
	const char *site = simple[i].site;
	unsigned int n = simple[i].n, a = simple[i].a, f_old = simple[i].f_old, f = simple[i].f;
	unsigned long long calls = 0;
	long long unit = 0;
	struct churn c = { 0 };
	double t0, t1;
	char func[64];
	int ok;

	snprintf(func, sizeof(func), "aptest_%s", site);
	ok = !ap_testsite_unit(site, &unit, &calls) && calls == 1 && !ap_test_alloc(site, n);
	t0 = now_s();
	ok = ok && control("func aptest_%s +c", site) == 0 && ap_flags_are(func, "pc") &&
	     churn_lines() == 1 && churn_is(site, 0, 0, 0, 0);
	ok = ok && !ap_test_alloc(site, a) && churn_is(site, a, 0, a * unit, 0);
	ok = ok && !ap_test_free_first(site, f_old) && !ap_test_free_n(site, f - f_old);
	ok = ok && churn_is(site, a, f, a * unit, f * unit) &&
	     ap_expect(func, (n + a - f) * unit, n + a - f);
	ok = ok && churn_of(site, &c) == 0;
	t1 = now_s();
	ok = ok && c.seconds >= 0 && c.seconds <= t1 - t0;
	ok = ok && !ap_test_free(site) && churn_is(site, a, n + a, a * unit, (n + a) * unit);
	ok = ok && control("func aptest_%s -c", site) == 0 && churn_lines() == 0 &&
	     ap_control_unchanged(before);
	ksft_test_result(ok, "%s: %u live, +c, %u allocated, %u freed (%u of before): allocs:%u frees:%u, bytes exact (%lld a unit), %.3f s\n",
			 site, n, a, f, f_old, a, f, unit, c.seconds);
}

/*
 * alloc_pages_exact(): a block of 2^order pages split into single pages,
 * those past the size freed at once.  Its unit is the pages kept (calls);
 * the block is the next power of two.
 */
static void t_split(int i)
{
	static const char *const flags[] = { "c", "sc" };
	const char *site = "alloc_pages_exact";
	unsigned long long kept = 0, block = 1, page = sysconf(_SC_PAGESIZE);
	unsigned long long allocs, frees;
	long long unit = 0;
	char func[64], want[8];
	int ok;

	snprintf(func, sizeof(func), "aptest_%s", site);
	snprintf(want, sizeof(want), "p%s", flags[i]);
	ok = !ap_testsite_unit(site, &unit, &kept) && kept > 1 && !ap_test_alloc(site, 1);
	while (block < kept)
		block *= 2;
	ok = ok && control(strcmp(flags[i], "c") ? "func aptest_%s +sc" : "func aptest_%s +c",
			   site) == 0 && ap_flags_are(func, want);
	/* Two blocks: each its allocation and block - 1 pieces, block - kept freed. */
	ok = ok && !ap_test_alloc(site, 2);
	allocs = 2 * block;
	frees = 2 * (block - kept);
	ok = ok && churn_is(site, allocs, frees, allocs * page, frees * page);
	/* The one from before: its kept pages freed one by one. */
	ok = ok && !ap_test_free_first(site, 1);
	frees += kept;
	ok = ok && churn_is(site, allocs, frees, allocs * page, frees * page) &&
	     ap_expect(func, 2 * unit, 2 * kept);
	ok = ok && !ap_test_free(site) && control("func aptest_%s =p", site) == 0 &&
	     churn_lines() == 0 && ap_control_unchanged(before);
	ksft_test_result(ok, "%s +%s: a block of %llu pages, %llu kept: 2 allocated, 1 of before freed: allocs:%llu frees:%llu, bytes exact\n",
			 site, flags[i], block, kept, allocs, frees);
}

/* -c then +c, +c again, and -c;+c in one write: each starts again at zero. */
static void t_restart(int i)
{
	static const char *const again[] = {
		"func aptest_%s -c",
		"func aptest_%s +c",
		"func aptest_%s -c; func aptest_%s +c",
	};
	const char *site = "kmalloc_8";
	unsigned long long calls;
	long long unit = 0;
	char cmd[160];
	int ok;

	snprintf(cmd, sizeof(cmd), again[i], site, site);
	ok = !ap_testsite_unit(site, &unit, &calls) && control("func aptest_%s +c", site) == 0 &&
	     !ap_test_alloc(site, 3) && !ap_test_free_n(site, 1) &&
	     churn_is(site, 3, 1, 3 * unit, unit);
	ok = ok && control("%s", cmd) == 0;
	if (i == 0)
		ok = ok && churn_lines() == 0 && ap_flags_are("aptest_kmalloc_8", "p") &&
		     control("func aptest_%s +c", site) == 0;
	ok = ok && churn_is(site, 0, 0, 0, 0) && !ap_test_alloc(site, 1) &&
	     !ap_test_free_first(site, 1) && churn_is(site, 1, 1, unit, unit);
	ok = ok && !ap_test_free(site) && churn_is(site, 1, 3, unit, 3 * unit) &&
	     control("func aptest_%s -c", site) == 0 && churn_lines() == 0 && ap_control_unchanged(before);
	ksft_test_result(ok, "'%s' on a site with c: its churn starts again at zero\n", cmd);
}

/*
 * vm.mem_profiling 0 then 1 with a call site that has s and c: while off
 * the churn and the watched allocations stay those of the switch; on
 * again, the churn starts at zero and the watched allocations are
 * forgotten, as the figures are (the kernel forgot which call site the
 * live allocations came from: their frees are counted nowhere).
 */
static void t_switch(int i)
{
	const char *site = "kmalloc_8", *func = "aptest_kmalloc_8";
	unsigned long long calls = 0, wcalls = 0;
	long long unit = 0, wbytes = 0;
	int ok, chains;

	(void)i;
	ok = !ap_testsite_unit(site, &unit, &calls) && calls == 1 && !ap_test_alloc(site, 3) &&
	     control("func aptest_%s +sc", site) == 0 && !ap_test_alloc(site, 2) &&
	     churn_is(site, 2, 0, 2 * unit, 0);
	chains = ap_chain_sum(func, &wbytes, &wcalls);
	ok = ok && chains >= 1 && wbytes == 2 * unit && wcalls == 2;
	/* Off: an allocation and a free of before count nowhere. */
	ok = ok && ap_write_file(AP_SYSCTL, "0\n", 2) == 0 && !ap_test_alloc(site, 1) &&
	     !ap_test_free_first(site, 1) && churn_is(site, 2, 0, 2 * unit, 0) &&
	     ap_expect(func, 5 * unit, 5);
	chains = ap_chain_sum(func, &wbytes, &wcalls);
	ok = ok && chains >= 1 && wbytes == 2 * unit && wcalls == 2;
	/* On again: everything from zero. */
	ok = ok && ap_write_file(AP_SYSCTL, "1\n", 2) == 0 && ap_sysctl_is("1\n") &&
	     churn_is(site, 0, 0, 0, 0) && ap_expect(func, 0, 0);
	chains = ap_chain_sum(func, &wbytes, &wcalls);
	ok = ok && chains == 0 && wbytes == 0 && wcalls == 0;
	if (chains)
		ksft_print_msg("%s: %d watched chains after the switch, %lld bytes, %llu calls\n",
			       func, chains, wbytes, wcalls);
	/* One new allocation; then every one freed, the 5 of before uncounted. */
	ok = ok && !ap_test_alloc(site, 1) && churn_is(site, 1, 0, unit, 0) &&
	     ap_expect(func, unit, 1);
	chains = ap_chain_sum(func, &wbytes, &wcalls);
	ok = ok && chains == 1 && wbytes == unit && wcalls == 1;
	ok = ok && !ap_test_free(site) && churn_is(site, 1, 1, unit, unit) && ap_expect(func, 0, 0);
	chains = ap_chain_sum(func, &wbytes, &wcalls);
	ok = ok && chains == 0;
	/* Put back whatever happened, so that a failure here stays here. */
	ap_write_file(AP_SYSCTL, "1\n", 2);
	ap_test_free(site);
	ok = control("func aptest_%s -sc", site) == 0 && ok && churn_lines() == 0 &&
	     ap_control_unchanged(before);
	ksft_test_result(ok, "vm.mem_profiling 0 then 1, a site with s and c: frozen while off, from zero after\n");
}

/* Only the call sites with c are listed, by id; without c, no keys. */
static void t_listed(int i)
{
	struct churn k;
	int ok;

	(void)i;
	ok = control("%s", "func aptest_kmalloc_100 +c; func aptest_alloc_pages_0 +c") == 0 &&
	     churn_lines() == 2 && !ap_test_alloc("kmalloc_8", 2) &&
	     !ap_test_alloc("alloc_pages_0", 1) && churn_of("kmalloc_8", &(struct churn){ 0 }) &&
	     info_keys_of("kmalloc_8", &k) && churn_lines() == 2;
	ok = ok && control("%s", "func aptest_kmalloc_100 -c") == 0 && churn_lines() == 1 &&
	     churn_is("alloc_pages_0", 1, 0, sysconf(_SC_PAGESIZE), 0) &&
	     info_keys_of("kmalloc_100", &k);
	ok = ok && !ap_test_free("kmalloc_8") && !ap_test_free("alloc_pages_0") &&
	     control("%s", "func aptest_alloc_pages_0 -c") == 0 && churn_lines() == 0 &&
	     ap_control_unchanged(before);
	ksft_test_result(ok, "only the call sites with c have a churn line and allocinfo keys\n");
}

static void t_enospc(int i)
{
	int err;

	(void)i;
	ap_klog_clear();
	err = control("%s", "module vmlinux +c");
	ksft_test_result(err == ENOSPC && ap_control_unchanged(before) && ap_logged("call sites would have c, at most 256 can") &&
			 churn_lines() == 0,
			 "c for every vmlinux call site: ENOSPC (%s), the log says why, nothing changed\n",
			 strerror(err));
}

/* A bad command and the words its message must have. */
static const struct {
	const char *command;
	const char *word;
} bad_commands[] = {
	{ "func aptest_kmalloc_100 +cx", "unknown flag 'x' in '+cx' (flags are p, s, a, n, f, c, m;" },
	{ "func aptest_kmalloc_100 +c times=1", "knobs are for f: '+c'" },
	{ "func aptest_kmalloc_100 +c; func aptest_kmalloc_8 c", "'c' is not a keyword nor flags" },
};
static const int nr_bad = ARRAY_SIZE(bad_commands);

static void t_bad(int i)
{
	int err;

	ap_klog_clear();
	err = control("%s", bad_commands[i].command);
	ksft_test_result(err == EINVAL && ap_control_unchanged(before) && churn_lines() == 0 &&
			 ap_logged(bad_commands[i].word),
			 "'%s': EINVAL (%s), the log says %s, nothing changed\n",
			 bad_commands[i].command, strerror(err), bad_commands[i].word);
}

/* c on allocprof's own call sites is taken: every one has a line. */
static void t_own(int i)
{
	int own, lines, ok;

	(void)i;
	own = ap_grep_file(AP_CONTROL, " \\[allocprof\\]", 0, NULL);
	ok = control("%s", "module allocprof +c") == 0;
	lines = churn_lines();
	ok = ok && own > 0 && lines == ap_grep_file(AP_CONTROL, " \\[allocprof\\].* =pc$", 0, NULL) &&
	     lines >= own;
	ok = control("%s", "module allocprof -c") == 0 && ok && churn_lines() == 0;
	ksft_test_result(ok, "module allocprof +c: taken, %d lines for its %d call sites; -c\n", lines,
			 own);
	free(before);
	before = ap_slurp(AP_CONTROL, NULL);
}

static void t_unload(int i)
{
	int ok;

	(void)i;
	ok = control("func aptest_%s +c", "kmalloc_100") == 0 && churn_lines() == 1;
	ok = ok && !ap_rmmod("allocprof_test") && churn_lines() == 0 &&
	     !ap_modprobe("allocprof_test", NULL) && ap_flags_are("aptest_kmalloc_100", "p") &&
	     churn_lines() == 0;
	ksft_test_result(ok, "a module's unload leaves no churn line; loaded again, its site is p\n");
	free(before);
	before = ap_slurp(AP_CONTROL, NULL);
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_simple, &nr_simple),
	AP_STEP_EACH(t_split, &(const int){ 2 }),
	AP_STEP_EACH(t_restart, &(const int){ 3 }),
	AP_STEP(t_switch),
	AP_STEP(t_listed),
	AP_STEP(t_enospc),
	AP_STEP_EACH(t_bad, &nr_bad),
	AP_STEP(t_own),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	before = ap_slurp(AP_CONTROL, NULL);
	AP_RUN_STEPS(steps);
	free(before);
	ap_unload_all();
	ksft_finished();
}
