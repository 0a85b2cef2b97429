// SPDX-License-Identifier: GPL-2.0
/*
 * module_unload_test: a module that unloads with memory still allocated
 * (allocprof_test2, which hands what it allocates on load to allocprof_test)
 * keeps its call sites in /proc/allocinfo, under its name, with the same
 * figures; the kernel log names each of them once; freeing the memory makes
 * the lines go without driving anything below zero.  Loaded again while
 * that memory is live, the module's call sites keep their lines and ids
 * (one line each, with the figures of both loads; the kernel log says so);
 * loaded again after everything was freed and it was unloaded, it counts
 * from zero; reloading allocprof meanwhile is harmless.
 */
#include "allocprof_lib.h"

#define T2 "allocprof_test2"
#define T2_SITES "/sys/kernel/debug/allocprof_test2/sites"
#define ADOPTED AP_TESTDIR "/adopted"
#define MAX_SITES 8
#define MAX_LINES 4
#define UNLOAD_MSG "bytes allocated at module unload"
#define AGAIN_MSG "module " T2 " loaded again: its %d call sites keep their ids, %d with memory of its earlier load"

static struct ap_testsite sites[MAX_SITES];
static long long unit[MAX_SITES];
static unsigned long long ucalls[MAX_SITES];
static int nsites;

static void func_of(char *buf, size_t size, int i)
{
	snprintf(buf, size, "aptest2_%.31s", sites[i].name);
}

/*
 * Every call site of allocprof_test2 has `lines` lines in /proc/allocinfo,
 * each with `n` allocations' worth of figures.
 */
static int t2_lines(int lines, unsigned long n)
{
	int i, ok = 1;

	for (i = 0; i < nsites; i++) {
		struct ap_fig figs[MAX_LINES];
		char func[48];
		int found, l;

		func_of(func, sizeof(func), i);
		found = ap_site_lines(T2, func, figs, MAX_LINES);
		if (found != lines) {
			ksft_print_msg("%s: %d line(s), expected %d\n", func, found, lines);
			ok = 0;
			continue;
		}
		for (l = 0; l < found && l < MAX_LINES; l++) {
			if (figs[l].bytes == (long long)n * unit[i] && figs[l].calls == n * ucalls[i])
				continue;
			ksft_print_msg("%s line %d: %lld bytes %llu calls; expected %lld %llu\n", func,
				       l + 1, figs[l].bytes, figs[l].calls, (long long)n * unit[i],
				       n * ucalls[i]);
			ok = 0;
		}
	}
	return ok;
}

/* No line of module has negative figures (calls print as %llu). */
static int none_negative(const char *module)
{
	char tag[48];
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	int ok = 1;

	snprintf(tag, sizeof(tag), " [%s] ", module);
	while (ap_info_next(&w, &l)) {
		if (!strstr(l.text, tag) || !l.figures)
			continue;
		if (l.bytes < 0 || l.calls > (1ULL << 62)) {
			ksft_print_msg("negative: %s\n", l.text);
			ok = 0;
		}
	}
	return ap_lines_end(&w) ? 0 : ok;
}

static int free_adopted(void)
{
	return ap_write_file(ADOPTED, "free", 4) == 0;
}

/* The kernel log names each call site once, with its bytes, and no other. */
static int unload_messages(unsigned long n)
{
	int i, ok = 1;
	long total = ap_klog_grep(UNLOAD_MSG, 0, NULL);

	for (i = 0; i < nsites; i++) {
		char func[48], pat[160];
		long c;

		func_of(func, sizeof(func), i);
		snprintf(pat, sizeof(pat), "module " T2 " func:%s has %lld " UNLOAD_MSG, func,
			 (long long)n * unit[i]);
		c = ap_klog_grep(pat, 0, NULL);
		if (c != 1) {
			ksft_print_msg("%ld kernel log line(s) '%s'\n", c, pat);
			ok = 0;
		}
	}
	if (total != nsites) {
		ksft_print_msg("%ld '" UNLOAD_MSG "' line(s) in all, expected %d\n", total, nsites);
		ok = 0;
	}
	return ok;
}

/* The allocations allocprof_test2 makes at each site on a load. */
static unsigned long nr;

static void t_modprobe(int i)
{
	int s;

	(void)i;
	ksft_test_result(ap_modprobe(T2, NULL) == 0, "modprobe " T2 "\n");
	nsites = ap_testsites_of(T2_SITES, sites, MAX_SITES);
	if (nsites <= 0)
		ksft_exit_fail_msg("cannot read " T2_SITES "\n");
	for (s = 0; s < nsites; s++)
		if (ap_unit(&sites[s], &unit[s], &ucalls[s]))
			ksft_exit_fail_msg("%s: bytes per call unknown\n", sites[s].name);
	nr = sites[0].live;
}

static void t_lines(int i)
{
	(void)i;
	ksft_test_result(t2_lines(1, nr), "%d call sites of [" T2 "], %lu allocations each\n",
			 nsites, nr);
}

static void t_rmmod_live(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod(T2) == 0 && t2_lines(1, nr),
			 "rmmod with the memory live: the call sites stay, same figures\n");
}

static void t_messages(int i)
{
	(void)i;
	ksft_test_result(unload_messages(nr),
			 "the kernel log names each call site with memory at unload, once\n");
}

/*
 * Every allocation in allocprof_test2.c is at one of the call sites its
 * sites file lists: its section has nsites tags, all with memory live.
 */
static void t_same_lines(int i)
{
	char pat[200];
	int ok;

	(void)i;
	ok = ap_modprobe(T2, NULL) == 0 && t2_lines(1, 2 * nr);
	snprintf(pat, sizeof(pat), AGAIN_MSG, nsites, nsites);
	ok &= ap_klog_grep(pat, 0, NULL) == 1;
	ksft_test_result(ok, "modprobe again with the memory live: each call site keeps its line, %lu allocations\n",
			 2 * nr);
}

static void t_free_all(int i)
{
	(void)i;
	ksft_test_result(free_adopted() && t2_lines(1, 0),
			 "freeing all: the loaded module's lines read 0/0\n");
}

static void t_none_negative(int i)
{
	(void)i;
	ksft_test_result(none_negative(T2) && none_negative("allocprof_test"),
			 "no figure of the test modules is negative\n");
}

static void t_rmmod_empty(int i)
{
	int ok;

	(void)i;
	ap_klog_clear();
	ok = ap_rmmod(T2) == 0 && t2_lines(0, 0);
	ksft_test_result(ok && ap_klog_grep(UNLOAD_MSG, 0, NULL) == 0,
			 "rmmod with nothing live: the lines go, no message\n");
}

static void t_fresh(int i)
{
	(void)i;
	ksft_test_result(ap_modprobe(T2, NULL) == 0 && t2_lines(1, nr),
			 "modprobe again: fresh lines from zero\n");
}

/* allocprof goes and comes back while allocprof_test2's memory is live. */
static void t_reload(int i)
{
	int ok = ap_rmmod("allocprof") == 0 && ap_load(NULL) == 0;

	(void)i;
	ksft_test_result(ok && t2_lines(1, 0),
			 "allocprof reloaded: the memory allocated before is not counted\n");
}

static void t_reload_free(int i)
{
	(void)i;
	ksft_test_result(free_adopted() && t2_lines(1, 0) && none_negative(T2),
			 "freeing that memory leaves 0/0, nothing negative\n");
}

/* ... and while an unloaded module's call sites are still shown. */
static void t_reload_unloaded(int i)
{
	int ok = ap_rmmod(T2) == 0 && ap_modprobe(T2, NULL) == 0 && ap_rmmod(T2) == 0 &&
		 t2_lines(1, nr);

	(void)i;
	ok &= ap_rmmod("allocprof") == 0 && ap_load(NULL) == 0 && t2_lines(0, 0);
	ksft_test_result(ok && free_adopted() && t2_lines(0, 0) && none_negative("allocprof_test"),
			 "allocprof reloaded after an unload with memory live: nothing shown, freeing is harmless\n");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_modprobe),
	AP_STEP(t_lines),
	AP_STEP(t_rmmod_live),
	AP_STEP(t_messages),
	AP_STEP(t_same_lines),
	AP_STEP(t_free_all),
	AP_STEP(t_none_negative),
	AP_STEP(t_rmmod_empty),
	AP_STEP(t_fresh),
	AP_STEP(t_reload),
	AP_STEP(t_reload_free),
	AP_STEP(t_reload_unloaded),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	ap_klog_clear();
	AP_RUN_STEPS(steps);
	ksft_finished();
}
