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
 *   test site accurate:no; the frees bring each site to 0/0.  A second
 *   load has no record to adopt: it counts from its load and flags every
 *   call site there is.
 * - allocprof.* parameters on the kernel command line: the initramfs' init
 *   loaded allocprof before anything else, with those parameters.
 * - neither: allocprof loaded from a shell counts from its load: every
 *   call site of vmlinux is accurate:no, the test module's (loaded after
 *   it) are not, until profiling is switched off and on again.
 *
 * Each way prints the coverage: the bytes /proc/allocinfo attributes over
 * MemTotal - MemFree (make bench compares them right after boot).
 */
#include "allocprof_lib.h"

#define MAX_SITES 32
#define N_ALLOC 3

static char cmdline[4096];

/* The value of kernel parameter name= on the command line, or NULL. */
static const char *param(const char *name)
{
	static char value[256];
	char *p = cmdline;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == cmdline || p[-1] == ' ') && p[n] == '=') {
			sscanf(p + n + 1, "%255s", value);
			return value;
		}
		p += n;
	}
	return NULL;
}

/* The kernel log has a line matching the basic regular expression re. */
static int kmsg_has(const char *re)
{
	return ap_sh("dmesg | grep -q '%s'", re) == 0;
}

/* The bytes of /proc/allocinfo over MemTotal - MemFree, in percent. */
static double coverage(void)
{
	long long sum = 0, total = ap_sh_num("sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' %s",
					     "/proc/meminfo"),
		  free_kb = ap_sh_num("sed -n 's/^MemFree: *\\([0-9]*\\) kB/\\1/p' %s",
				      "/proc/meminfo");
	char *buf = ap_slurp(AP_ALLOCINFO, NULL), *line, *save = NULL;

	if (!buf || total <= free_kb)
		return -1;
	strtok_r(buf, "\n", &save);
	strtok_r(NULL, "\n", &save);
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		sum += atoll(line);
	free(buf);
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
	char *buf = ap_slurp(AP_ALLOCINFO, NULL), *line, *save = NULL;

	*lines = *inaccurate = 0;
	if (!buf)
		return;
	strtok_r(buf, "\n", &save);
	strtok_r(NULL, "\n", &save);
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int no = ap_cut_inaccurate(line);

		if (strstr(line, "] func:"))
			continue;
		(*lines)++;
		*inaccurate += no;
	}
	free(buf);
}

static int header_is(const char *version)
{
	char buf[64], want[64];

	snprintf(want, sizeof(want), "allocinfo - version: %s\n", version);
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

static void recorded(void)
{
	struct ap_testsite sites[MAX_SITES];
	long live[MAX_SITES];
	int n, i, ok, lines, no;

	ksft_test_result(kmsg_has("alloc_tag: recording call sites from boot") &&
			 !ap_module_loaded("allocprof"),
			 "the kernel records from boot, allocprof is not loaded\n");
	if (ap_sh("modprobe allocprof_test"))
		ksft_exit_fail_msg("cannot load allocprof_test\n");
	n = ap_testsites(sites, MAX_SITES);
	if (n <= 0)
		ksft_exit_fail_msg("cannot read the test module's sites\n");
	ksft_set_plan(7 + 2 * n);
	ksft_test_result_pass("the test module loaded before allocprof\n");

	/* Allocate everywhere, free a part at every second site. */
	ok = 1;
	for (i = 0; i < n; i++) {
		ok &= ap_test_alloc(sites[i].name, N_ALLOC) == 0;
		if (i % 2)
			ok &= ap_test_free_n(sites[i].name, 1) == 0;
		live[i] = ap_testsite_live(sites[i].name);
		ok &= live[i] > 0;
	}
	ksft_test_result(ok, "%d sites: %d allocations each, one freed at every second site\n",
			 n, N_ALLOC);

	ok = ap_sh("modprobe allocprof allocinfo_format=2.0") == 0;
	ksft_test_result(ok && kmsg_has("allocprof: counting since boot: adopted"),
			 "allocprof loaded late adopts the kernel's record\n");
	ap_sh("dmesg | sed -n 's/.*allocprof: counting since boot: /# /p'");
	ksft_test_result(header_is("2.0"), "allocinfo_format=2.0: version 2.0\n");
	coverage();

	for (i = 0; i < n; i++)
		ksft_test_result(site_is(&sites[i], live[i], 0),
				 "%s: %ld entries allocated before the load, exact and accurate\n",
				 sites[i].name, live[i]);
	vmlinux_lines(&lines, &no);
	ksft_print_msg("%d of %d vmlinux call sites accurate:no\n", no, lines);
	for (i = 0; i < n; i++)
		ksft_test_result(ap_test_free(sites[i].name) == 0 && site_is(&sites[i], 0, 0),
				 "%s: 0/0 after freeing what was allocated before the load\n",
				 sites[i].name);

	/* The record is gone with the first load. */
	ok = ap_sh("rmmod allocprof") == 0 &&
	     ap_sh("modprobe allocprof allocinfo_format=2.0") == 0 &&
	     ap_test_alloc(sites[0].name, N_ALLOC) == 0;
	live[0] = ap_testsite_live(sites[0].name);
	ksft_test_result(ok && ap_sh("dmesg | grep 'allocprof: counting since' | tail -n1 | grep -q 'since load'") == 0 &&
			 site_is(&sites[0], live[0], 1),
			 "a second load counts since its load, flagging the sites there were\n");
	ksft_test_result(ap_test_free(sites[0].name) == 0 && ap_sh("rmmod allocprof_test") == 0 &&
			 ap_sh("rmmod allocprof") == 0, "unload\n");
}

/* Init loaded allocprof from the initramfs, with the command line's parameters. */
static void early(void)
{
	static const char *const names[] = { "mem_profiling", "allocinfo_format", "debug" };
	struct ap_testsite site;
	unsigned int i;
	int ok = 1, lines, no;

	ksft_set_plan(6);
	ksft_test_result(ap_module_loaded("allocprof"), "allocprof was loaded from the initramfs\n");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char key[64], path[128], buf[64];
		const char *want;

		snprintf(key, sizeof(key), "allocprof.%s", names[i]);
		want = param(key);
		if (!want)
			continue;
		snprintf(path, sizeof(path), "/sys/module/allocprof/parameters/%s", names[i]);
		if (ap_read_file(path, buf, sizeof(buf)) <= 0 || strncmp(buf, want, strlen(want))) {
			ksft_print_msg("%s: the command line says %s\n", path, want);
			ok = 0;
		}
	}
	ksft_test_result(ok, "the command line's allocprof.* parameters reached it\n");
	ksft_test_result(kmsg_has("allocprof: counting since load"),
			 "it says it counts since its load\n");
	coverage();
	vmlinux_lines(&lines, &no);
	ksft_test_result(lines > 100 && (!header_is("2.0") || no == lines),
			 "%d of %d vmlinux call sites accurate:no (format %s)\n", no, lines,
			 header_is("2.0") ? "2.0: all of them" : "1.0: none shown");
	ok = ap_sh("modprobe allocprof_test") == 0 && ap_test_alloc("kmalloc_100", N_ALLOC) == 0 &&
	     find_site("kmalloc_100", &site) == 0 && site_is(&site, N_ALLOC, 0);
	ksft_test_result(ok, "a module loaded later is counted exactly and accurately\n");
	ksft_test_result(ap_test_free("kmalloc_100") == 0 && ap_sh("rmmod allocprof_test") == 0,
			 "free and unload the test module\n");
}

/* Loaded from a shell without the record (the suite's usual way). */
static void late(void)
{
	struct ap_testsite site;
	int lines, no;

	ksft_set_plan(5);
	ap_sh("rmmod allocprof_test 2>/dev/null");
	if (ap_load("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	ksft_test_result(ap_sh("dmesg | grep 'allocprof: counting since' | tail -n1 | grep -q 'since load'") == 0,
			 "allocprof says it counts since its load\n");
	coverage();
	vmlinux_lines(&lines, &no);
	ksft_test_result(lines > 100 && no == lines, "%d of %d vmlinux call sites accurate:no\n", no,
			 lines);
	if (find_site("kmalloc_100", &site))
		ksft_exit_fail_msg("no test site kmalloc_100\n");
	ksft_test_result(ap_test_alloc("kmalloc_100", N_ALLOC) == 0 && site_is(&site, N_ALLOC, 0),
			 "the test module, loaded after allocprof, is counted accurately\n");
	ksft_test_result(ap_write_file(AP_SYSCTL, "0", 1) == 0 && ap_write_file(AP_SYSCTL, "1", 1) == 0 &&
			 site_is(&site, N_ALLOC, 1),
			 "after profiling was off for a while it is accurate:no\n");
	ksft_test_result(ap_test_free("kmalloc_100") == 0 && site_is(&site, 0, 1) &&
			 ap_sh("rmmod allocprof_test") == 0 && ap_sh("rmmod allocprof") == 0,
			 "free and unload\n");
}

int main(void)
{
	ksft_print_header();
	if (ap_builtin_profiler())
		ksft_exit_skip("upstream's built-in profiler: nothing is loaded\n");
	if (ap_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) <= 0)
		ksft_exit_fail_msg("cannot read /proc/cmdline\n");
	cmdline[strcspn(cmdline, "\n")] = '\0';
	if (param("alloc_tag.record") && !ap_module_loaded("allocprof"))
		recorded();
	else if (strstr(cmdline, "allocprof."))
		early();
	else
		late();
	ksft_finished();
}
