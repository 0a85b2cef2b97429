// SPDX-License-Identifier: GPL-2.0
/*
 * boot_test: what allocprof shows of the memory allocated before it was
 * loaded, and how /proc/allocinfo 2.0 marks what it could not count
 * ("accurate:no").  What it checks depends on how the guest booted; make
 * check boots a guest each way (scripts/check):
 *
 * - alloc_tag.record=1, allocprof not loaded yet: the kernel records the
 *   call site of every allocation from boot.  The test module allocates at
 *   every one of its sites (and frees some of it) before allocprof is
 *   loaded from this shell, which must then show exactly what is live, no
 *   test site accurate:no; the frees bring each site to 0/0.  The same for
 *   a vmlinux call site that nothing else in the guest uses: the eventfd
 *   contexts this test opens (do_eventfd()'s kmalloc()).  A second
 *   load has no record to adopt: it counts from its load and flags every
 *   call site there is.
 * - allocprof.* parameters on the kernel command line: the initramfs' init
 *   loaded allocprof before anything else, with those parameters: each of
 *   its parameters reads the command line's value, or else its default (as
 *   a load without parameters shows it, at the end), and the format is the
 *   one it reads.
 * - neither: allocprof loaded from a shell counts from its load: every
 *   call site of vmlinux is accurate:no, the test module's (loaded after
 *   it) are not, until profiling is switched off and on again.
 *
 * A command line with both alloc_tag.record and allocprof.* parameters is
 * none of these ways, and fails.
 *
 * Each way prints the coverage: the bytes /proc/allocinfo attributes over
 * MemTotal - MemFree (make bench compares them right after boot).
 */
#include <sys/eventfd.h>

#include "allocprof_lib.h"

#define MAX_SITES 32
#define N_ALLOC 3

static char cmdline[4096];

/*
 * The value of kernel parameter name= on the command line, or NULL: up to
 * the next space, or, as the kernel's next_arg() takes it, a value in
 * double quotes with its spaces, without the quotes.
 */
static const char *param(const char *name)
{
	static char value[256];
	char *p = cmdline;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == cmdline || p[-1] == ' ') && p[n] == '=') {
			const char *v = p + n + 1;
			size_t len = *v == '"' ? strcspn(++v, "\"") : strcspn(v, " \n");

			snprintf(value, sizeof(value), "%.*s", (int)len, v);
			return value;
		}
		p += n;
	}
	return NULL;
}

/* The kernel log has a line matching the basic regular expression re. */
static int kmsg_has(const char *re)
{
	return ap_klog_grep(re, 0, NULL) > 0;
}

/* The last of allocprof's "counting since" lines in the kernel log says "since load". */
static int last_counts_since_load(void)
{
	char line[1024];

	return ap_klog_last("allocprof: counting since", 0, line, sizeof(line)) > 0 &&
	       ap_grep(line, "since load", 0, NULL) > 0;
}

/*
 * Prints what follows the last "allocprof: counting since boot: " of each
 * kernel log line that has it, after "# " (sed -n 's/.*X/# /p').
 */
static void print_counting_since_boot(void)
{
	static const char text[] = "allocprof: counting since boot: ";
	char *lines = NULL, *line, *save = NULL, *at, *p;

	if (ap_klog_grep(text, AP_GREP_FIXED, &lines) > 0) {
		for (line = strtok_r(lines, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			for (at = p = strstr(line, text); p; p = strstr(p + 1, text))
				at = p;
			ksft_print_msg("%s\n", at + strlen(text));
		}
	}
	free(lines);
}

/* The bytes of /proc/allocinfo over MemTotal - MemFree, in percent. */
static double coverage(void)
{
	long long sum = 0, total = ap_meminfo_kb("MemTotal"), free_kb = ap_meminfo_kb("MemFree");
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;

	if (total <= free_kb)
		return -1;
	while (ap_info_next(&w, &l))
		if (l.index >= 2)
			sum += l.bytes;
	if (ap_lines_end(&w))
		return -1;
	ksft_print_msg("coverage: %lld of %lld bytes in use, %.1f %%\n", sum,
		       (total - free_kb) * 1024, 100.0 * sum / ((total - free_kb) * 1024));
	return 100.0 * sum / ((total - free_kb) * 1024);
}

/*
 * Lines of call sites in vmlinux (no "[module]"), and how many of them are
 * accurate:no.
 */
static void vmlinux_lines(int *lines, int *inaccurate)
{
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;

	*lines = *inaccurate = 0;
	while (ap_info_next(&w, &l)) {
		int no;

		if (l.index < 2)
			continue;
		no = ap_cut_inaccurate(l.text);
		if (strstr(l.text, "] func:"))
			continue;
		(*lines)++;
		*inaccurate += no;
	}
	ap_lines_end(&w);
}

static int header_is(const char *version)
{
	char buf[64], want[64];

	snprintf(want, sizeof(want), AP_VERSION_LINE("%s"), version);
	return ap_read_file(AP_ALLOCINFO, buf, sizeof(buf)) > 0 &&
	       !strncmp(buf, want, strlen(want));
}

/* Site name's figures are exactly live entries' worth, accurate or not. */
static int site_is(const struct ap_testsite *s, long live, int inaccurate)
{
	char func[64];
	long long unit;
	unsigned long long calls;
	struct ap_fig f;

	snprintf(func, sizeof(func), "aptest_%.31s", s->name);
	if (ap_unit(s, &unit, &calls))
		return 0;
	if (!ap_expect(func, live * unit, live * calls))
		return 0;
	f = ap_site("allocprof_test", func);
	if (f.inaccurate != inaccurate)
		ksft_print_msg("%s: accurate:no %s\n", func, f.inaccurate ? "shown" : "missing");
	return f.inaccurate == inaccurate;
}

static int find_site(const char *name, struct ap_testsite *site)
{
	struct ap_testsite all[MAX_SITES];
	int n = ap_testsites(all, MAX_SITES), j;

	for (j = 0; j < n; j++) {
		if (!strcmp(all[j].name, name)) {
			*site = all[j];
			return 0;
		}
	}
	return -1;
}

/* The test module's sites, and how many entries each has live. */
static struct ap_testsite sites[MAX_SITES];
static long live[MAX_SITES];
static int nsites;

static void counts_since_load(const char *what)
{
	ksft_test_result(last_counts_since_load(), "%s\n", what);
}

/*
 * The kernel records from boot; allocprof_test loads before allocprof.  The
 * record's log line is the series': 6.12's patch 0010 or patches/7.3's 0010.
 */
static void r_recording(int i)
{
	(void)i;
	ksft_test_result(kmsg_has(ap_kernel_keeps_refs() ?
					  "Memory allocation profiling records from boot for a back end to adopt" :
					  "alloc_tag: recording call sites from boot") &&
			 !ap_module_loaded("allocprof"),
			 "the kernel records from boot, allocprof is not loaded\n");
}

static void r_test_module_first(int i)
{
	(void)i;
	ksft_test_result(ap_module_loaded("allocprof_test") && !ap_module_loaded("allocprof") &&
			 access(AP_ALLOCINFO, F_OK) != 0,
			 "the test module loaded before allocprof: no /proc/allocinfo yet\n");
}

/*
 * eventfd contexts opened before the load and held: do_eventfd() allocates
 * one with kmalloc(), a vmlinux call site nothing else in the guest uses.
 */
#define N_EVENTFD 5
static int efd[N_EVENTFD];

/* Allocate everywhere, free a part at every second site. */
static void r_allocate(int j)
{
	int i, ok = 1;

	(void)j;
	for (i = 0; i < N_EVENTFD; i++)
		ok &= (efd[i] = eventfd(0, 0)) >= 0;
	for (i = 0; i < nsites; i++) {
		ok &= ap_test_alloc(sites[i].name, N_ALLOC) == 0;
		if (i % 2)
			ok &= ap_test_free_n(sites[i].name, 1) == 0;
		live[i] = ap_testsite_live(sites[i].name);
		ok &= live[i] > 0;
	}
	ksft_test_result(ok, "%d sites: %d allocations each, one freed at every second site\n",
			 nsites, N_ALLOC);
}

static void r_adopt(int i)
{
	int ok = ap_modprobe("allocprof", "allocinfo_format=2.0") == 0;

	(void)i;
	ksft_test_result(ok && kmsg_has("allocprof: counting since boot: adopted"),
			 "allocprof loaded late adopts the kernel's record\n");
	print_counting_since_boot();
}

/*
 * allocprof's page back-references, allocated before it registered: the
 * record holds them (profiling is on from boot), so they are adopted, and
 * allocprof's own count of them must leave them as they are: counted once.
 */
static void r_own_tables(int i)
{
	(void)i;
	ap_own_pages_result();
}

static void r_format(int i)
{
	int lines, no;

	(void)i;
	ksft_test_result(header_is("2.0"), "allocinfo_format=2.0: version 2.0\n");
	coverage();
	vmlinux_lines(&lines, &no);
	ksft_print_msg("%d of %d vmlinux call sites accurate:no\n", no, lines);
}

static void r_site_exact(int i)
{
	ksft_test_result(site_is(&sites[i], live[i], 0),
			 "%s: %ld entries allocated before the load, exact and accurate\n",
			 sites[i].name, live[i]);
}

/*
 * do_eventfd()'s call site shows exactly the N_EVENTFD contexts, of one
 * size each (the bytes a whole multiple of the calls; the size itself is
 * the kmalloc cache's, larger on debug): the record kept the call site of
 * a vmlinux allocation, and the adoption found its tag.
 */
static void r_vmlinux_exact(int i)
{
	struct ap_fig f = ap_site(NULL, "do_eventfd");

	(void)i;
	if (f.found != 1 || f.calls != N_EVENTFD || f.bytes <= 0 || f.bytes % N_EVENTFD ||
	    f.inaccurate)
		ksft_print_msg("do_eventfd: %d line(s), %lld bytes %llu calls%s\n", f.found,
			       f.bytes, f.calls, f.inaccurate ? " accurate:no" : "");
	ksft_test_result(f.found == 1 && f.calls == N_EVENTFD && f.bytes > 0 &&
			 f.bytes % N_EVENTFD == 0 && !f.inaccurate,
			 "vmlinux's do_eventfd: the %d contexts opened before the load, exact and accurate\n",
			 N_EVENTFD);
}

static void r_vmlinux_freed(int j)
{
	struct ap_fig f;
	int i, ok = 1;

	(void)j;
	for (i = 0; i < N_EVENTFD; i++)
		ok &= close(efd[i]) == 0;
	f = ap_site(NULL, "do_eventfd");
	ksft_test_result(ok && f.found == 1 && f.calls == 0 && f.bytes == 0,
			 "vmlinux's do_eventfd: 0/0 once they are closed\n");
}

static void r_site_freed(int i)
{
	ksft_test_result(ap_test_free(sites[i].name) == 0 && site_is(&sites[i], 0, 0),
			 "%s: 0/0 after freeing what was allocated before the load\n", sites[i].name);
}

/* The record is gone with the first load. */
static void r_second_load(int i)
{
	int ok = ap_rmmod("allocprof") == 0 &&
		 ap_modprobe("allocprof", "allocinfo_format=2.0") == 0 &&
		 ap_test_alloc(sites[0].name, N_ALLOC) == 0;

	(void)i;
	live[0] = ap_testsite_live(sites[0].name);
	ksft_test_result(ok && last_counts_since_load() && site_is(&sites[0], live[0], 1),
			 "a second load counts since its load, flagging the sites there were\n");
}

static void r_unload(int i)
{
	(void)i;
	ksft_test_result(ap_test_free(sites[0].name) == 0 && ap_rmmod("allocprof_test") == 0 &&
			 ap_rmmod("allocprof") == 0, "unload\n");
}

static const struct ap_step recorded_steps[] = {
	AP_STEP(r_recording),
	AP_STEP(r_test_module_first),
	AP_STEP(r_allocate),
	AP_STEP(r_adopt),
	AP_STEP(r_own_tables),
	AP_STEP(r_format),
	AP_STEP_EACH(r_site_exact, &nsites),
	AP_STEP_EACH(r_site_freed, &nsites),
	AP_STEP(r_vmlinux_exact),
	AP_STEP(r_vmlinux_freed),
	AP_STEP(r_second_load),
	AP_STEP(r_unload),
};

static void recorded(void)
{
	if (ap_modprobe("allocprof_test", NULL))
		ksft_exit_fail_msg("cannot load allocprof_test\n");
	nsites = ap_testsites(sites, MAX_SITES);
	if (nsites <= 0)
		ksft_exit_fail_msg("cannot read the test module's sites\n");
	AP_RUN_STEPS(recorded_steps);
}

/*
 * The early way: allocprof's parameters as init loaded it (every file of
 * /sys/module/allocprof/parameters), read before anything changes them.
 */
#define MAX_PARAMS 8
static char pnames[MAX_PARAMS][32], pvalues[MAX_PARAMS][256];
static int nparams;

/* The value parameter name has now (its sysfs file, without the newline). */
static int param_now(const char *name, char *buf, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/allocprof/parameters/%.31s", name);
	if (ap_read_file(path, buf, size) <= 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The format init's allocprof was loaded with (its parameter). */
static const char *early_format(void)
{
	int i;

	for (i = 0; i < nparams; i++)
		if (!strcmp(pnames[i], "allocinfo_format"))
			return pvalues[i];
	return "?";
}

static void e_loaded(int i)
{
	(void)i;
	ksft_test_result(ap_module_loaded("allocprof") && nparams > 0,
			 "allocprof was loaded from the initramfs (%d parameters)\n", nparams);
}

static void e_counts_since_load(int i)
{
	(void)i;
	counts_since_load("it says it counts since its load");
}

/*
 * Format 2.0 flags every vmlinux call site (allocprof counts since its
 * load), format 1.0 has no flag to show.
 */
static void e_format(int i)
{
	const char *fmt = early_format();
	int lines, no, v2 = !strcmp(fmt, "2.0");

	(void)i;
	coverage();
	vmlinux_lines(&lines, &no);
	ksft_test_result(header_is(fmt) && lines > 100 && no == (v2 ? lines : 0),
			 "format %s: %d of %d vmlinux call sites accurate:no, expected %s\n", fmt, no,
			 lines, v2 ? "all" : "none");
}

/*
 * allocprof.control="func NAME +s" (scripts/check's early way): the call
 * site has the flags ps from the load on, so every allocation counted
 * there (since the load) was watched: the chains of the stacks report sum
 * to the calls of /proc/allocinfo.  Tasks come and go meanwhile: a try
 * counts when two reads of the chains around the read of /proc/allocinfo
 * agree with it.
 */
static void e_control(int i)
{
	const char *c = param("allocprof.control");
	char func[64] = "";
	unsigned long long calls[2] = { 0, 0 };
	long long bytes[2];
	struct ap_fig f = { 0, 0, 0, 0 };
	int try, ok = 0;

	(void)i;
	if (!c || sscanf(c, "func %63s +s", func) != 1 || strcmp(c + strlen(c) - 3, " +s")) {
		ksft_test_result_fail("the command line has no allocprof.control=\"func NAME +s\"\n");
		return;
	}
	for (try = 0; try < 10 && !ok; try++) {
		ap_chain_sum_in(NULL, func, &bytes[0], &calls[0]);
		f = ap_site(NULL, func);
		ap_chain_sum_in(NULL, func, &bytes[1], &calls[1]);
		ok = f.found == 1 && f.calls > 0 && calls[0] == f.calls && calls[1] == f.calls &&
		     bytes[0] == f.bytes && bytes[1] == f.bytes;
	}
	if (!ok)
		ksft_print_msg("%s: chains %llu then %llu calls, /proc/allocinfo %llu\n", func,
			       calls[0], calls[1], f.calls);
	ksft_test_result(ok && ap_flags_are_in("vmlinux", func, "ps"),
			 "control=\"%s\": flags ps since the load, its %llu allocations all watched\n",
			 c, f.calls);
}

static void e_later_module(int i)
{
	struct ap_testsite site;
	int ok;

	(void)i;
	ok = ap_modprobe("allocprof_test", NULL) == 0 &&
	     ap_test_alloc("kmalloc_100", N_ALLOC) == 0 &&
	     find_site("kmalloc_100", &site) == 0 && site_is(&site, N_ALLOC, 0);
	ksft_test_result(ok, "a module loaded later is counted exactly and accurately\n");
}

static void e_unload_test_module(int i)
{
	(void)i;
	ksft_test_result(ap_test_free("kmalloc_100") == 0 && ap_rmmod("allocprof_test") == 0,
			 "free and unload the test module\n");
}

/*
 * Every parameter init's load had is the command line's allocprof.<name>,
 * or, where the command line has none, the default: what a load without
 * parameters (insmod, which reads no command line) shows.  And every
 * allocprof.* of the command line is a parameter there is.
 */
static void e_parameters(int j)
{
	int i, ok = ap_rmmod("allocprof") == 0 &&
		    ap_insmod("allocprof", NULL) == 0;
	char *p;

	(void)j;
	for (i = 0; ok && i < nparams; i++) {
		char key[64], dflt[64];
		const char *cmd;

		snprintf(key, sizeof(key), "allocprof.%.31s", pnames[i]);
		cmd = param(key);
		if (param_now(pnames[i], dflt, sizeof(dflt))) {
			ok = 0;
			break;
		}
		if (strcmp(pvalues[i], cmd ? cmd : dflt)) {
			ksft_print_msg("%s reads %s; the command line says %s, the default is %s\n",
				       pnames[i], pvalues[i], cmd ? cmd : "nothing", dflt);
			ok = 0;
		} else {
			ksft_print_msg("%s: %s (%s)\n", pnames[i], pvalues[i],
				       cmd ? "the command line's" : "the default");
		}
	}
	for (p = cmdline; (p = strstr(p, "allocprof.")); p++) {
		char name[32] = "";

		if (p != cmdline && p[-1] != ' ')
			continue;
		if (sscanf(p + strlen("allocprof."), "%31[^= ]", name) != 1) {
			ksft_print_msg("the command line's allocprof. has no name\n");
			ok = 0;
			continue;
		}
		for (i = 0; i < nparams && strcmp(pnames[i], name); i++)
			;
		if (i == nparams) {
			ksft_print_msg("the command line's allocprof.%s is no parameter\n", name);
			ok = 0;
		}
	}
	ksft_test_result(ok && ap_rmmod("allocprof") == 0,
			 "each of the %d parameters is the command line's or the default\n", nparams);
}

static const struct ap_step early_steps[] = {
	AP_STEP(e_loaded),
	AP_STEP(e_counts_since_load),
	AP_STEP(e_format),
	AP_STEP(e_control),
	AP_STEP(e_later_module),
	AP_STEP(e_unload_test_module),
	AP_STEP(e_parameters),
};

/* Init loaded allocprof from the initramfs, with the command line's parameters. */
static void early(void)
{
	char list[512], *names = ap_ls("/sys/module/allocprof/parameters"), *name, *save = NULL;

	if (names) {
		snprintf(list, sizeof(list), "%s", names);
		free(names);
		for (name = strtok_r(list, "\n", &save); name && nparams < MAX_PARAMS;
		     name = strtok_r(NULL, "\n", &save)) {
			snprintf(pnames[nparams], sizeof(pnames[0]), "%s", name);
			if (param_now(name, pvalues[nparams], sizeof(pvalues[0])) == 0)
				nparams++;
		}
	}
	AP_RUN_STEPS(early_steps);
}

/* Loaded from a shell without the record (the suite's usual way). */
static struct ap_testsite k100;

static void l_counts_since_load(int i)
{
	(void)i;
	counts_since_load("allocprof says it counts since its load");
}

static void l_vmlinux_inaccurate(int i)
{
	int lines, no;

	(void)i;
	coverage();
	vmlinux_lines(&lines, &no);
	ksft_test_result(header_is("2.0") && lines > 100 && no == lines,
			 "%d of %d vmlinux call sites accurate:no\n", no, lines);
}

static void l_test_module(int i)
{
	(void)i;
	ksft_test_result(ap_test_alloc("kmalloc_100", N_ALLOC) == 0 && site_is(&k100, N_ALLOC, 0),
			 "the test module, loaded after allocprof, is counted accurately\n");
}

/*
 * Off, the figures stay, accurate:no; the test module loaded again while
 * off, on again: from zero, and accurate:no (what it allocated at load was
 * not counted).
 */
static void l_off_on(int i)
{
	(void)i;
	ksft_test_result(ap_write_file(AP_SYSCTL, "0", 1) == 0 && site_is(&k100, N_ALLOC, 1) &&
			 ap_rmmod("allocprof_test") == 0 && ap_modprobe("allocprof_test", "") == 0 &&
			 ap_write_file(AP_SYSCTL, "1", 1) == 0 && site_is(&k100, 0, 1),
			 "off: the figures stay, accurate:no; on again, a module loaded meanwhile from zero, accurate:no\n");
}

static void l_unload(int i)
{
	(void)i;
	ksft_test_result(ap_test_free("kmalloc_100") == 0 && site_is(&k100, 0, 1) &&
			 ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "free and unload\n");
}

static const struct ap_step late_steps[] = {
	AP_STEP(l_counts_since_load),
	AP_STEP(l_vmlinux_inaccurate),
	AP_STEP(l_test_module),
	AP_STEP(l_off_on),
	AP_STEP(l_unload),
};

static void late(void)
{
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (find_site("kmalloc_100", &k100))
		ksft_exit_fail_msg("no test site kmalloc_100\n");
	AP_RUN_STEPS(late_steps);
}

int main(void)
{
	const char *record;

	ksft_print_header();
	if (ap_builtin_profiler())
		ksft_exit_skip("upstream's built-in profiler: nothing is loaded\n");
	if (ap_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) <= 0)
		ksft_exit_fail_msg("cannot read /proc/cmdline\n");
	cmdline[strcspn(cmdline, "\n")] = '\0';
	record = param("alloc_tag.record");
	if (record && strstr(cmdline, "allocprof."))
		ksft_exit_fail_msg("booted with alloc_tag.record and allocprof.*: no way of this test\n");
	if (record && strcmp(record, "1"))
		ksft_exit_fail_msg("alloc_tag.record=%s: the record way wants 1\n", record);
	if (record) {
		ksft_print_msg("booted with alloc_tag.record=1: the kernel records from boot\n");
		recorded();
	} else if (strstr(cmdline, "allocprof.")) {
		ksft_print_msg("booted with allocprof.* parameters: init loads allocprof\n");
		early();
	} else {
		ksft_print_msg("booted plainly: allocprof is loaded from the shell\n");
		late();
	}
	ksft_finished();
}
