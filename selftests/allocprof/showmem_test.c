// SPDX-License-Identifier: GPL-2.0
/*
 * showmem_test: the kernel's memory report (SysRq-m here, also the OOM
 * report) ends with upstream's "Memory allocations:" list: the 10 call
 * sites with the most bytes, biggest first, each as
 * "%12s %8llu %s:%u [%s] func:%s" with the size in binary units as the
 * kernel's string_get_size() writes it.  A test site made the biggest on
 * purpose (200 allocations of order 3) is first, with its exact figures.
 */
#include <regex.h>

#include "allocprof_lib.h"

#define SITE "alloc_pages_3"
#define FUNC "aptest_alloc_pages_3"
#define N 200
#define TOP 10

/* Bytes from a size as ap_size_text() writes it (approximately). */
static double size_value(const char *text)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	char unit[8];
	double v, scale = 1;
	unsigned int i;

	if (sscanf(text, "%lf %7s", &v, unit) != 2)
		return -1;
	for (i = 0; i < ARRAY_SIZE(units); i++, scale *= 1024)
		if (!strcmp(unit, units[i]))
			return v * scale;
	return -1;
}

static char dmesg[1 << 16];
static char *lines[64];
static int nlines;

/*
 * SysRq-m, then the kernel log from the last "Memory allocations:" header
 * (ap_show_mem_header() of profiling on or off) on (timestamps cut);
 * returns how many headers the report had.
 */
static int sysrq_m(int on)
{
	char *save = NULL, *line, *log, *next, header[96];
	long headers;

	snprintf(header, sizeof(header), "] %s", ap_show_mem_header(on));

	ap_klog_clear();
	if (ap_write_file("/proc/sysrq-trigger", "m", 1))
		return -1;
	/* The log from its first header on, as sed -n '/] Memory allocations:/,$p'. */
	log = ap_klog(0);
	headers = log ? ap_grep(log, header, AP_GREP_FIXED, NULL) : -1;
	dmesg[0] = '\0';
	for (line = log; line && *line; line = next) {
		size_t l = strcspn(line, "\n");
		char end = line[l];
		int first;

		next = line + l + !!end;
		line[l] = '\0';
		first = ap_grep(line, header, AP_GREP_FIXED, NULL) > 0;
		line[l] = end;
		if (first) {
			ap_klog_untime(line);
			snprintf(dmesg, sizeof(dmesg), "%s", line);
			break;
		}
	}
	free(log);
	nlines = 0;
	for (line = strtok_r(dmesg, "\n", &save); line && nlines < 64;
	     line = strtok_r(NULL, "\n", &save))
		lines[nlines++] = line;
	return headers;
}

/*
 * The report has TOP site lines in upstream's format, biggest first; they
 * are the lines after the header, up to the first of another format.
 */
static int report_format(void)
{
	regex_t re;
	int i, ok = 1;
	double prev = -1;

	regcomp(&re, "^ *[0-9.]+ [KMGTPEZY]?i?B +[0-9]+ [^ ]+:[0-9]+( \\[[A-Za-z0-9_]+\\])? func:[^ ]+$",
		REG_EXTENDED | REG_NOSUB);
	for (i = 1; i < nlines && !regexec(&re, lines[i], 0, NULL, 0); i++) {
		double v = size_value(lines[i]);

		/* "%12s %8llu ": the columns end at 12 and 21 unless wider. */
		if (strlen(lines[i]) < 23 || lines[i][12] != ' ' || lines[i][21] != ' ' || v < 0 ||
		    (prev >= 0 && v > prev)) {
			ksft_print_msg("bad line: '%s'\n", lines[i]);
			ok = 0;
		}
		prev = v;
	}
	regfree(&re);
	if (i != TOP + 1) {
		ksft_print_msg("%d site line(s) after the header, expected %d%s%s\n", i - 1, TOP,
			       i < nlines ? "; then: " : "", i < nlines ? lines[i] : "");
		ok = 0;
	}
	nlines = i;
	return ok;
}

/* The report lists the test site, on line `at` (1: first; 0: anywhere). */
static int site_line(int at)
{
	int i;

	for (i = 1; i < nlines; i++)
		if (strstr(lines[i], " [allocprof_test] func:" FUNC))
			return !at || i == at;
	return 0;
}

/* Bytes and calls of one allocation at SITE. */
static long long unit;
static unsigned long long calls;

static void t_allocate(int i)
{
	(void)i;
	ksft_test_result(ap_test_alloc(SITE, N) == 0 && ap_expect(FUNC, N * unit, N * calls),
			 "%d allocations at " FUNC "\n", N);
}

static void t_one_header(int i)
{
	(void)i;
	ksft_test_result(sysrq_m(1) == 1, "SysRq-m: one \"%s\" header\n", ap_show_mem_header(1));
}

static void t_format(int i)
{
	(void)i;
	ksft_test_result(report_format(), "%d call sites, upstream's format, biggest first\n", TOP);
}

static void t_first(int i)
{
	char want[96], size[16];
	int ok;

	(void)i;
	ap_size_text(N * unit, size, sizeof(size));
	snprintf(want, sizeof(want), "%12s %8llu ", size, N * calls);
	ok = nlines > 1 && !strncmp(lines[1], want, strlen(want)) && site_line(1);
	if (!ok)
		ksft_print_msg("first line '%s', expected '%s... func:" FUNC "'\n",
			       nlines > 1 ? lines[1] : "", want);
	ksft_test_result(ok, "the test site comes first: '%s'\n", want);
}

static void t_freed(int i)
{
	int ok = ap_test_free(SITE) == 0 && ap_expect(FUNC, 0, 0);

	(void)i;
	ksft_test_result(ok && sysrq_m(1) == 1 && report_format() && !site_line(0),
			 "after the frees it is no longer listed\n");
}

static void t_off(int i)
{
	int ok = ap_write_file(AP_SYSCTL, "0", 1) == 0;

	(void)i;
	ksft_test_result(ok && sysrq_m(0) == 1 && report_format() &&
			 ap_write_file(AP_SYSCTL, "1", 1) == 0,
			 "profiling off: still reported, under \"%s\"\n", ap_show_mem_header(0));
}

static void t_never(int i)
{
	int ok = ap_write_file(AP_SYSCTL, "never", 5) == 0;

	(void)i;
	ksft_test_result(ok && sysrq_m(0) == 0 && sysrq_m(1) == 0,
			 "mem_profiling=never: no report\n");
}

static void t_unloaded(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0 && sysrq_m(0) == 0 && sysrq_m(1) == 0 &&
			 ap_rmmod("allocprof_test") == 0,
			 "allocprof unloaded: no report\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_allocate),
	AP_STEP(t_one_header),
	AP_STEP(t_format),
	AP_STEP(t_first),
	AP_STEP(t_freed),
	AP_STEP(t_off),
	AP_STEP(t_never),
	AP_STEP(t_unloaded),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsite_unit(SITE, &unit, &calls))
		ksft_exit_fail_msg("no test site " SITE "\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
