// SPDX-License-Identifier: GPL-2.0
/*
 * allocinfo_tool_test: the host tool (tools/allocinfo, built statically
 * and installed next to the tests) reading the live kernel.  For each
 * filter, `allocinfo top --live --via ioctl` (the kernel filters) and
 * `--via text` (the tool filters the text file) print the same call sites,
 * with the same figures where they cannot change between the two reads
 * (the test module's); `--via auto` says which way it went; a file that
 * has no ioctl() makes auto fall back to the text and --via ioctl fail.
 * The test module's kmalloc_100 site shows exactly its 3 allocations.
 * `allocinfo stacks` and `allocinfo ages` read allocprof's debugfs
 * reports: the two-caller helper's two chains with their exact figures and
 * own callers, and kmalloc_100's allocations in the youngest age bucket.
 */
#include "allocprof_lib.h"

#define TOOL "./allocinfo"
#define OUT_SIZE (1 << 16)

static char a[OUT_SIZE], b[OUT_SIZE];

/*
 * `allocinfo top --live ARGS` read both ways lists the same call sites
 * (file, line, module, function, in sorted order) and, with figures, the
 * same output exactly: the kernel's own call sites change their figures
 * between two reads (the tool's own page faults, slabs), the test module's
 * do not.
 */
static int same_both_ways(const char *args, int figures)
{
	const char *cut = figures ? "cat" : "cut -d, -f4-7 | sort";
	int ra = ap_sh_out(a, sizeof(a), TOOL " top --live --via ioctl -n 1000 --format csv %s | %s",
			   args, cut);
	int rb = ap_sh_out(b, sizeof(b), TOOL " top --live --via text -n 1000 --format csv %s | %s",
			   args, cut);

	if (ra || rb || strcmp(a, b)) {
		ksft_print_msg("%s: exit %d and %d\n--- ioctl:\n%s--- text:\n%s", args, ra, rb, a, b);
		return 0;
	}
	/* The header and at least one call site. */
	return strchr(a, '\n') && strchr(strchr(a, '\n') + 1, '\n');
}

int main(void)
{
	/* Filters on the test module's sites: the same figures too. */
	static const char *const exact[] = {
		"--module allocprof_test",
		"--func aptest_kmalloc_100",
		"--module allocprof_test --min-size 1 --max-size 1048576",
		"--module allocprof_test --accurate",
	};
	/* Filters on the kernel's: the same call sites. */
	static const char *const sites[] = {
		"--file mm/slub.c",
		"--module built-in --func alloc_slab_page",
		"--file 'mm/*'",
		"--module built-in --inaccurate --file mm/slub.c",
	};
	unsigned int i;
	long long unit;
	unsigned long long calls;
	char want[128];

	ksft_print_header();
	if (access(TOOL, X_OK))
		ksft_exit_fail_msg("no %s next to the tests\n", TOOL);
	/* The test module loaded after allocprof: its call sites are accurate. */
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsite_unit("kmalloc_100", &unit, &calls) || ap_test_alloc("kmalloc_100", 3))
		ksft_exit_fail_msg("cannot allocate at the test site\n");
	ksft_set_plan(sizeof(exact) / sizeof(exact[0]) + sizeof(sites) / sizeof(sites[0]) + 4 + 3);

	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		ksft_test_result(same_both_ways(exact[i], 1),
				 "%s: the same records through the ioctl and the text\n", exact[i]);
	for (i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		ksft_test_result(same_both_ways(sites[i], 0),
				 "%s: the same call sites through the ioctl and the text\n", sites[i]);

	snprintf(want, sizeof(want), "1,%lld,%llu,", 3 * unit, 3 * calls);
	ksft_test_result(ap_sh_out(a, sizeof(a),
				   TOOL " top --live --via ioctl --func aptest_kmalloc_100 --format csv") == 0 &&
			 strstr(a, want) != NULL,
			 "aptest_kmalloc_100: %lld bytes, %llu calls\n", 3 * unit, 3 * calls);
	ksft_test_result(ap_sh_out(a, sizeof(a),
				   TOOL " top --live -v --module allocprof_test -n 1 2>&1 >/dev/null") == 0 &&
			 strstr(a, "through the ioctl") != NULL,
			 "--via auto with a filter the kernel takes: the ioctl\n");
	ap_sh("cat /proc/allocinfo > /tmp/allocinfo.txt");
	ksft_test_result(ap_sh_out(a, sizeof(a), TOOL " top --live --proc /tmp/allocinfo.txt -v "
				   "--module allocprof_test -n 1 2>&1 >/dev/null") == 0 &&
			 strstr(a, "as text") != NULL,
			 "a file without the ioctl: auto falls back to the text\n");
	ksft_test_result(ap_sh(TOOL " top --live --proc /tmp/allocinfo.txt --via ioctl "
			       "--module allocprof_test >/dev/null 2>&1") == 1,
			 "... and --via ioctl fails (exit 1)\n");

	/* Per-site control: the reports through the tool. */
	ap_test_free("kmalloc_100");
	ap_sh("echo 'func aptest_helper +s; func aptest_kmalloc_100 +a' >"
	      " /sys/kernel/debug/allocprof/control");
	ap_test_alloc("kmalloc_100", 3);
	/* Read at once: the allocations are less than a second old. */
	snprintf(want, sizeof(want), ",aptest_kmalloc_100,0,1,%lld,%llu\n", 3 * unit, 3 * calls);
	ksft_test_result(ap_sh_out(a, sizeof(a), TOOL " ages --func aptest_kmalloc_100 --format csv") == 0 &&
			 strstr(a, want) != NULL,
			 "allocinfo ages: kmalloc_100's 3 allocations in the 0-1s bucket\n");
	ap_sh("echo 'a 5' > " AP_TESTDIR "/callers; echo 'b 3' > " AP_TESTDIR "/callers");
	{
		struct ap_testsite helper[3];
		long long hunit = -1;
		unsigned long long hcalls;

		if (ap_testsites_of(AP_TESTDIR "/callers", helper, 3) != 3 ||
		    ap_unit(&helper[0], &hunit, &hcalls))
			ksft_print_msg("cannot read the test module's callers file\n");
		snprintf(want, sizeof(want), "1,%lld,5,", 5 * hunit);
		ksft_test_result(ap_sh_out(a, sizeof(a), TOOL " stacks --func aptest_helper "
					   "--frames 0 --format csv") == 0 &&
				 strstr(a, want) && strstr(strstr(a, want), "aptest_from_a+"),
				 "allocinfo stacks: the first chain, %lld bytes 5 calls, from aptest_from_a\n",
				 5 * hunit);
		snprintf(want, sizeof(want), "2,%lld,3,", 3 * hunit);
		ksft_test_result(strstr(a, want) && strstr(strstr(a, want), "aptest_from_b+") &&
				 !strstr(a, "\n3,"),
				 "allocinfo stacks: the second, %lld bytes 3 calls, from aptest_from_b\n",
				 3 * hunit);
	}
	ap_sh("echo free > " AP_TESTDIR "/callers");
	ap_test_free("kmalloc_100");
	ap_sh("rmmod allocprof_test; rmmod allocprof");
	ksft_finished();
}
