// SPDX-License-Identifier: GPL-2.0
/*
 * debug_test: debug=0|1 sets debug mode at load; any other value fails the
 * load with a message.  In debug mode vm.mem_profiling is read-only, an
 * allocation without an allocation tag (a _noprof function called without
 * alloc_hooks()) is reported once per call chain with the chain, as
 * "allocprof: ..." lines (no WARNING: the guest runner fails on those),
 * tagged allocations are counted as usual, and an ordinary workload
 * produces no report of a missed free or a foreign slot.  Without debug
 * mode nothing is reported.
 */
#include <sys/stat.h>

#include "allocprof_lib.h"

#define PARAM "/sys/module/allocprof/parameters/debug"
#define UNTAGGED AP_TESTDIR "/untagged"
#define REPEAT 3

static const char *const bad[] = {
	"debug=2", "debug=-1", "debug=01", "debug=yes", "debug=", "debug", "debug=1x", "debug=\\\"1 \\\"",
};

static const char *const kinds[] = { "kmalloc", "pages", "percpu" };

static int file_is(const char *path, const char *want)
{
	char buf[32];

	return ap_read_file(path, buf, sizeof(buf)) > 0 && !strcmp(buf, want);
}

static int untagged_allocs(void)
{
	unsigned int k;
	int ok = 1;

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		char cmd[32];

		snprintf(cmd, sizeof(cmd), "%s %d", kinds[k], REPEAT);
		ok &= ap_write_file(UNTAGGED, cmd, strlen(cmd)) == 0;
	}
	return ok;
}

/* Lines of the kernel log with pattern (grep -c). */
static long log_count(const char *pattern)
{
	return ap_sh_num("dmesg | grep -c -e '%s'", pattern);
}

/* Each untagged call site is named by exactly `want` report call chains. */
static int untagged_reported(long want)
{
	unsigned int k;
	int ok = 1;

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		char pat[64];
		long n;

		snprintf(pat, sizeof(pat), "allocprof:   aptest_untagged_%s+", kinds[k]);
		n = log_count(pat);
		if (n != want) {
			ksft_print_msg("%ld call chain(s) name aptest_untagged_%s, expected %ld\n", n,
				       kinds[k], want);
			ok = 0;
		}
	}
	return ok;
}

/* Allocations and frees at every test site, a module unload, file I/O. */
static int workload(void)
{
	struct ap_testsite sites[32];
	int n = ap_testsites(sites, 32), i, ok = n > 0;

	for (i = 0; i < n; i++)
		ok &= ap_test_alloc(sites[i].name, 3) == 0 && ap_test_free(sites[i].name) == 0;
	ok &= ap_sh("modprobe allocprof_test2 && rmmod allocprof_test2") == 0;
	ok &= ap_write_file(AP_TESTDIR "/adopted", "free", 4) == 0;
	ok &= ap_sh("cp /bin/busybox /tmp/debug_test.bin && cat /tmp/debug_test.bin >/dev/null && "
		    "rm /tmp/debug_test.bin && ls -lR /proc/self >/dev/null") == 0;
	return ok;
}

int main(void)
{
	struct stat st;
	int ok;

	ksft_print_header();
	ksft_set_plan(2 * ARRAY_SIZE(bad) + 10);
	if (ap_module_loaded("allocprof"))
		ap_sh("rmmod allocprof");
	ap_sh("dmesg -c >/dev/null");

	ap_check_bad_params(bad, ARRAY_SIZE(bad), "debug", "debug= must be 0 or 1");

	ok = ap_sh("modprobe allocprof debug=1") == 0 && file_is(PARAM, "1\n");
	ksft_test_result(ok && (ap_module_loaded("allocprof_test") ||
				ap_sh("modprobe allocprof_test") == 0),
			 "debug=1: loads, the parameter reads 1\n");
	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0444 &&
			 ap_write_file(AP_SYSCTL, "0", 1) != 0 && file_is(AP_SYSCTL, "1\n"),
			 "debug mode: vm.mem_profiling is 0444, a write fails, it reads 1\n");

	ap_sh("dmesg -c >/dev/null");
	ok = untagged_allocs();
	ksft_test_result(ok && untagged_reported(1) &&
			 log_count("allocprof: debug: untagged allocation") >= 3,
			 "untagged kmalloc, pages, percpu (%d each): one report per call chain\n",
			 REPEAT);
	ksft_test_result(untagged_allocs() && untagged_reported(1),
			 "the same call chains again: no new report\n");
	ksft_test_result(log_count("WARNING:") == 0 && log_count("BUG:") == 0,
			 "reports are not kernel warnings\n");

	ok = ap_test_alloc("kmalloc_100", 3) == 0 && ap_expect("aptest_kmalloc_100", 3 * ap_slab_size("kmalloc-128"), 3);
	ksft_test_result(ok && ap_test_free("kmalloc_100") == 0 && ap_expect("aptest_kmalloc_100", 0, 0),
			 "debug mode: tagged allocations are counted exactly\n");

	ap_sh("dmesg -c >/dev/null");
	ok = workload();
	ksft_test_result(ok && log_count("allocprof: debug: .*live reference") == 0 &&
			 log_count("allocprof: debug: object freed") == 0,
			 "a workload: no missed free, no foreign slot reported\n");

	ok = ap_sh("rmmod allocprof && modprobe allocprof") == 0 && file_is(PARAM, "0\n");
	ksft_test_result(ok && stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0644,
			 "default: the parameter reads 0, vm.mem_profiling is 0644\n");
	ap_sh("dmesg -c >/dev/null");
	ksft_test_result(untagged_allocs() && untagged_reported(0) &&
			 log_count("allocprof: debug:") == 0,
			 "without debug mode: no report\n");
	ksft_test_result(ap_sh("rmmod allocprof_test") == 0 && ap_sh("rmmod allocprof") == 0,
			 "unload\n");
	ksft_finished();
}
