// SPDX-License-Identifier: GPL-2.0
/*
 * leak_reload_test: a module that leaks at every load, reloaded
 * LEAK_RELOADS times (1000; LEAK_RELOADS=n in the environment, e.g. from
 * the kernel command line, sets it: make soak runs more).
 *
 * allocprof_test2 nr=1 allocates once at each of its call sites on load
 * and hands the memory to allocprof_test, so every unload leaves memory
 * live at every call site.  A module loaded again while the memory of its
 * earlier load is live gets the call-site ids of that load: each call site
 * keeps one line in /proc/allocinfo, with the figures of every load so
 * far.  Without that, each load took a new range of ids and kept it, and
 * the ids ran out: "out of call-site ids" at the 747th load on base
 * (2026-11-23), after which the module's call sites were neither counted
 * nor shown.
 *
 * After every load and every unload each call site has exactly one line,
 * with exactly the loads' allocations; once the memory is freed the module
 * (unloaded) has no line, and a load after that counts from zero.
 */
#include <time.h>

#include "allocprof_lib.h"

#define T2 "allocprof_test2"
#define T2_SITES_FILE "/sys/kernel/debug/" T2 "/sites"
#define ADOPTED AP_TESTDIR "/adopted"
#define MAX_SITES 8

static struct ap_testsite sites[MAX_SITES];
static long long unit[MAX_SITES];
static unsigned long long ucalls[MAX_SITES];
static int nsites, fd, reloads = 1000;
static char why[256];

/*
 * Every call site of allocprof_test2 has one line with `loads` loads'
 * allocations (none if `loads` is 0 and the module is unloaded); 1, or 0
 * and why.
 */
static int lines_are(unsigned long loads, int loaded)
{
	for (int s = 0; s < nsites; s++) {
		struct ap_fig fig = { 0 };
		char func[48];
		int n;
		long long bytes = (long long)(loads * sites[s].live) * unit[s];
		unsigned long long calls = loads * sites[s].live * ucalls[s];

		snprintf(func, sizeof(func), "aptest2_%.31s", sites[s].name);
		n = ap_site_lines(T2, func, &fig, 1);
		if (!loads && !loaded ? n != 0 :
		    n != 1 || fig.bytes != bytes || fig.calls != calls) {
			snprintf(why, sizeof(why), "%s: %d line(s), the first %lld %llu; expected %s %lld %llu",
				 func, n, fig.bytes, fig.calls,
				 !loads && !loaded ? "none, not" : "one line,", bytes, calls);
			return 0;
		}
	}
	return 1;
}

static void t_start(int i)
{
	int ok;

	(void)i;
	fd = ap_module_fd(T2);
	ok = ap_start(NULL) == 0 && ap_finit(fd, "nr=1") == 0;
	nsites = ok ? ap_testsites_of(T2_SITES_FILE, sites, MAX_SITES) : 0;
	for (int s = 0; s < nsites; s++)
		ok &= ap_unit(&sites[s], &unit[s], &ucalls[s]) == 0 && sites[s].live == 1;
	ok = ok && nsites > 0 && lines_are(1, 1);
	if (!ok)
		ksft_print_msg("%s\n", why);
	ksft_test_result(ok, "%s nr=1 loaded: %d call sites, one allocation each\n", T2, nsites);
	if (!ok)
		ksft_exit_fail_msg("cannot set up\n");
}

static void t_reloads(int i)
{
	int r, ok = 1, err = 0;
	time_t t0 = time(NULL);

	(void)i;
	for (r = 1; ok && r < reloads; r++) {
		err = ap_delete(T2);
		ok = !err && lines_are(r, 0);
		err = ok ? ap_finit(fd, "nr=1") : err;
		ok = ok && !err && lines_are(r + 1, 1);
	}
	err = ok ? ap_delete(T2) : err;
	ok = ok && !err && lines_are(reloads, 0);
	if (!ok)
		ksft_print_msg("load %d: %s\n", r, err ? strerror(-err) : why);
	ksft_print_msg("%d loads in %ld s\n", r, (long)(time(NULL) - t0));
	ksft_test_result(ok, "%d loads, each leaking: one line a call site after every load and unload, exact\n",
			 reloads);
}

static void t_free(int i)
{
	(void)i;
	ksft_test_result(ap_write_file(ADOPTED, "free", 4) == 0 && lines_are(0, 0),
			 "the memory freed: the unloaded module has no line\n");
}

static void t_fresh(int i)
{
	(void)i;
	ksft_test_result(ap_finit(fd, "nr=1") == 0 && lines_are(1, 1) && ap_unload_all() == 0,
			 "loaded again: from zero; unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_start),
	AP_STEP(t_reloads),
	AP_STEP(t_free),
	AP_STEP(t_fresh),
};

int main(void)
{
	ksft_print_header();
	if (getenv("LEAK_RELOADS"))
		reloads = atoi(getenv("LEAK_RELOADS"));
	if (reloads <= 0)
		ksft_exit_fail_msg("LEAK_RELOADS=%s: not a number of loads\n", getenv("LEAK_RELOADS"));
	AP_RUN_STEPS(steps);
	ksft_finished();
}
