// SPDX-License-Identifier: GPL-2.0
/*
 * allocinfo_test: /proc/allocinfo has upstream's format, and every known
 * call site of the test module shows exactly the bytes and calls of the
 * allocations made there, back to 0/0 after they are freed.
 */
#include <regex.h>
#include <sys/stat.h>

#include "allocprof_lib.h"

#define N_ALLOC 7
#define MAX_SITES 32

/* Header, then "%12lli %8llu file:line [module] func:name \n" lines. */
static void check_format(void)
{
	static const char header[] = AP_HEADER_V1;
	regex_t re;
	size_t len;
	char *buf = ap_slurp(AP_ALLOCINFO, &len), *line, *save = NULL;
	int lines = 0, bad = 0, kernel_sites = 0;
	struct stat st;

	ksft_test_result(stat(AP_ALLOCINFO, &st) == 0 && (st.st_mode & 0777) == 0400 &&
			 st.st_uid == 0, "/proc/allocinfo is mode 0400, owned by root\n");
	if (!buf) {
		ksft_test_result_fail("read /proc/allocinfo\n");
		ksft_test_result_fail("line format\n");
		ksft_test_result_fail("real kernel call sites\n");
		return;
	}
	ksft_test_result(!strncmp(buf, header, strlen(header)), "header is upstream's\n");
	regcomp(&re, "^ *-?[0-9]+ +[0-9]+ [^ ]+:[0-9]+( \\[[A-Za-z0-9_]+\\])? func:[^ ]+ $",
		REG_EXTENDED | REG_NOSUB);
	strtok_r(buf, "\n", &save);
	strtok_r(NULL, "\n", &save);
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		/* %12lli and %8llu: columns end at 12 and 21 unless wider. */
		if (regexec(&re, line, 0, NULL, 0) || strlen(line) < 23 || line[12] != ' ' ||
		    line[21] != ' ') {
			if (bad++ < 5)
				ksft_print_msg("bad line: '%s'\n", line);
		}
		if (!strncmp(line + 22, "mm/", 3) || !strncmp(line + 22, "kernel/", 7) ||
		    !strncmp(line + 22, "fs/", 3))
			if (atoll(line) > 0)
				kernel_sites++;
	}
	regfree(&re);
	ksft_print_msg("%d call sites, %d in mm/ kernel/ fs/ with bytes allocated\n", lines,
		       kernel_sites);
	ksft_test_result(lines > 100 && !bad, "every line has upstream's format\n");
	ksft_test_result(kernel_sites > 10, "real kernel call sites have figures\n");
	free(buf);
}

int main(void)
{
	struct ap_testsite sites[MAX_SITES];
	int n, i;

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	n = ap_testsites(sites, MAX_SITES);
	if (n <= 0)
		ksft_exit_fail_msg("cannot read the test module's sites\n");
	ksft_set_plan(6 + 3 * n);

	check_format();
	{
		int err = ap_open_as_nobody(AP_ALLOCINFO, O_RDONLY);

		ksft_test_result(err == EACCES, "user nobody cannot open /proc/allocinfo (%s)\n",
				 err > 0 ? strerror(err) : err ? "error" : "it could");
	}

	for (i = 0; i < n; i++) {
		char func[64];
		long long unit;
		unsigned long long calls;
		long live;

		snprintf(func, sizeof(func), "aptest_%.31s", sites[i].name);
		if (ap_unit(&sites[i], &unit, &calls)) {
			ksft_test_result_fail("%s: bytes per call unknown (%s)\n", func, sites[i].detail);
			ksft_test_result_skip("%s: after %d allocations\n", func, N_ALLOC);
			ksft_test_result_skip("%s: after the frees\n", func);
			continue;
		}
		ksft_test_result(ap_expect(func, 0, 0), "%s: 0 bytes 0 calls before\n", func);
		/* A batch site makes several live entries an allocation. */
		live = ap_test_alloc(sites[i].name, N_ALLOC) == 0 ?
		       ap_testsite_live(sites[i].name) : -1;
		ksft_test_result(live >= N_ALLOC && ap_expect(func, live * unit, live * calls),
				 "%s: %d allocations (%ld entries) show %lld bytes %llu calls\n",
				 func, N_ALLOC, live, live * unit, live * calls);
		ksft_test_result(ap_test_free(sites[i].name) == 0 && ap_expect(func, 0, 0),
				 "%s: 0 bytes 0 calls after the frees\n", func);
	}

	ksft_test_result(ap_sh("rmmod allocprof_test") == 0 && ap_sh("rmmod allocprof") == 0,
			 "unload\n");
	ksft_finished();
}
