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
 * own callers, and kmalloc_100's allocations by age: all of them, exactly,
 * in the buckets their age can be in, as the test's own monotonic clock
 * (the one the kernel's ages use) bounds it: right after the allocations,
 * and again after at least 2 s, when none may be in the youngest bucket.
 * The bounds hold however slow the machine is.  `allocinfo nodes` reads
 * the nodes report: the test module's call site that alternates its pages
 * between the two nodes, 5 pages with n, is 3 pages on node 0, 2 on node 1.
 */
#include <time.h>

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

/* Filters on the test module's sites: the same figures too. */
static const char *const exact[] = {
	"--module allocprof_test",
	"--func aptest_kmalloc_100",
	"--module allocprof_test --min-size 1 --max-size 1048576",
	"--module allocprof_test --accurate",
};
static const int nexact = ARRAY_SIZE(exact);
/* Filters on the kernel's: the same call sites. */
static const char *const kernel_sites[] = {
	"--file mm/slub.c",
	"--module built-in --func alloc_slab_page",
	"--file 'mm/*'",
	"--module built-in --inaccurate --file mm/slub.c",
};
static const int nkernel_sites = ARRAY_SIZE(kernel_sites);
static long long unit;
static unsigned long long calls;

static void t_exact(int i)
{
	ksft_test_result(same_both_ways(exact[i], 1),
			 "%s: the same records through the ioctl and the text\n", exact[i]);
}

static void t_kernel_sites(int i)
{
	ksft_test_result(same_both_ways(kernel_sites[i], 0),
			 "%s: the same call sites through the ioctl and the text\n", kernel_sites[i]);
}

static void t_kmalloc_100(int i)
{
	char want[128];

	(void)i;
	snprintf(want, sizeof(want), "1,%lld,%llu,", 3 * unit, 3 * calls);
	ksft_test_result(ap_sh_out(a, sizeof(a),
				   TOOL " top --live --via ioctl --func aptest_kmalloc_100 --format csv") == 0 &&
			 strstr(a, want) != NULL,
			 "aptest_kmalloc_100: %lld bytes, %llu calls\n", 3 * unit, 3 * calls);
}

static void t_auto_ioctl(int i)
{
	(void)i;
	ksft_test_result(ap_sh_out(a, sizeof(a),
				   TOOL " top --live -v --module allocprof_test -n 1 2>&1 >/dev/null") == 0 &&
			 strstr(a, "through the ioctl") != NULL,
			 "--via auto with a filter the kernel takes: the ioctl\n");
}

static void t_auto_text(int i)
{
	(void)i;
	ap_copy_file(AP_ALLOCINFO, "/tmp/allocinfo.txt");
	ksft_test_result(ap_sh_out(a, sizeof(a), TOOL " top --live --proc /tmp/allocinfo.txt -v "
				   "--module allocprof_test -n 1 2>&1 >/dev/null") == 0 &&
			 strstr(a, "as text") != NULL,
			 "a file without the ioctl: auto falls back to the text\n");
}

static void t_via_ioctl_fails(int i)
{
	(void)i;
	ksft_test_result(ap_sh(TOOL " top --live --proc /tmp/allocinfo.txt --via ioctl "
			       "--module allocprof_test >/dev/null 2>&1") == 1,
			 "... and --via ioctl fails (exit 1)\n");
}

/* The start and the end of the allocations whose ages are read. */
static long long alloc_start, alloc_end;

/* Per-site control: the allocations at kmalloc_100 get an age. */
/* What t_watch() writes to the control file (with echo's newline). */
#define WATCH_CMD "func aptest_helper +s; func aptest_kmalloc_100 +a\n"

static void t_watch(int i)
{
	int ok;

	(void)i;
	ok = ap_test_free("kmalloc_100") == 0 &&
	     ap_write_file(AP_CONTROL, WATCH_CMD, strlen(WATCH_CMD)) == 0;
	alloc_start = ap_now_ns();
	ok &= ap_test_alloc("kmalloc_100", 3) == 0;
	alloc_end = ap_now_ns();
	ksft_test_result(ok, "kmalloc_100 watched with ages (+a), 3 allocations\n");
}

/*
 * `allocinfo ages` read now: its rows of aptest_kmalloc_100 add up to the
 * 3 allocations exactly, each in a bucket [lo_s, hi_s) of whole seconds
 * that an age between the bounds the clock gives can fall in: at least
 * the time from the last allocation to the read, at most the time from
 * the first to the end of the read.  Returns the number of rows (-1: bad).
 */
static int ages_within(long long min_age_s, char *what, size_t size)
{
	long long read_start = ap_now_ns(), read_end, lo, hi, bytes = 0;
	unsigned long long ncalls = 0;
	int rc = ap_sh_out(a, sizeof(a), TOOL " ages --func aptest_kmalloc_100 --format csv");
	char *p = a;
	int rows = 0, ok = rc == 0;

	read_end = ap_now_ns();
	lo = (read_start - alloc_end) / 1000000000LL;
	hi = (read_end - alloc_start) / 1000000000LL;
	if (lo < min_age_s) {
		snprintf(what, size, "read after %lld s, not %lld", lo, min_age_s);
		return -1;
	}
	while (ok && (p = strstr(p, ",aptest_kmalloc_100,"))) {
		long long lo_s, hi_s, b;
		unsigned long long c;

		p += strlen(",aptest_kmalloc_100,");
		if (sscanf(p, "%lld,%lld,%lld,%llu", &lo_s, &hi_s, &b, &c) != 4 || lo_s > hi ||
		    hi_s <= lo) {
			ksft_print_msg("row '%.*s' outside the ages [%lld, %lld] s\n",
				       (int)strcspn(p, "\n"), p, lo, hi);
			ok = 0;
		}
		bytes += b;
		ncalls += c;
		rows++;
	}
	snprintf(what, size, "%d row(s) for an age in [%lld, %lld] s", rows, lo, hi);
	if (!ok || bytes != 3 * unit || ncalls != 3 * calls) {
		ksft_print_msg("ages: exit %d, %lld bytes %llu calls in all, expected %lld %llu:\n%s",
			       rc, bytes, ncalls, 3 * unit, 3 * calls, a);
		return -1;
	}
	return rows;
}

static void t_ages_now(int i)
{
	char what[96];

	(void)i;
	ksft_test_result(ages_within(0, what, sizeof(what)) > 0,
			 "allocinfo ages: kmalloc_100's 3 allocations, %s\n", what);
}

/* Two seconds later by the clock: none of them is in 0-1s any more. */
static void t_ages_later(int i)
{
	struct timespec t = { .tv_sec = 0, .tv_nsec = 0 };
	char what[96];
	long long wait = alloc_end + 2000000000LL - ap_now_ns();

	(void)i;
	if (wait > 0) {
		t.tv_sec = wait / 1000000000LL;
		t.tv_nsec = wait % 1000000000LL;
		nanosleep(&t, NULL);
	}
	ksft_test_result(ages_within(2, what, sizeof(what)) > 0,
			 "allocinfo ages 2 s later: the 3 allocations, %s\n", what);
}

static struct ap_testsite helper[3];
static long long hunit = -1;

static void t_stacks_first(int i)
{
	unsigned long long hcalls;
	char want[128];

	(void)i;
	ap_write_file(AP_TESTDIR "/callers", "a 5\n", 4);
	ap_write_file(AP_TESTDIR "/callers", "b 3\n", 4);
	if (ap_testsites_of(AP_TESTDIR "/callers", helper, 3) != 3 ||
	    ap_unit(&helper[0], &hunit, &hcalls))
		ksft_print_msg("cannot read the test module's callers file\n");
	snprintf(want, sizeof(want), "1,%lld,5,", 5 * hunit);
	ksft_test_result(ap_sh_out(a, sizeof(a), TOOL " stacks --func aptest_helper "
				   "--frames 0 --format csv") == 0 &&
			 strstr(a, want) && strstr(strstr(a, want), "aptest_from_a+"),
			 "allocinfo stacks: the first chain, %lld bytes 5 calls, from aptest_from_a\n",
			 5 * hunit);
}

static void t_stacks_second(int i)
{
	char want[128];

	(void)i;
	snprintf(want, sizeof(want), "2,%lld,3,", 3 * hunit);
	ksft_test_result(strstr(a, want) && strstr(strstr(a, want), "aptest_from_b+") &&
			 !strstr(a, "\n3,"),
			 "allocinfo stacks: the second, %lld bytes 3 calls, from aptest_from_b\n",
			 3 * hunit);
}

static void t_nodes(int i)
{
	const char *cmd = "func aptest_pages_node +n";
	long long page = -1;
	unsigned long long calls = 0;
	char want0[96], want1[96];

	(void)i;
	if (ap_testsite_unit("pages_node", &page, &calls) || calls != 1)
		ksft_print_msg("cannot read the test module's pages_node site\n");
	snprintf(want0, sizeof(want0), ",aptest_pages_node,0,%lld,3\n", 3 * page);
	snprintf(want1, sizeof(want1), ",aptest_pages_node,1,%lld,2\n", 2 * page);
	ksft_test_result(ap_write_file(AP_CONTROL, cmd, strlen(cmd)) == 0 &&
			 ap_test_alloc("pages_node", 5) == 0 &&
			 ap_sh_out(a, sizeof(a), TOOL " nodes --func aptest_pages_node "
				   "--format csv") == 0 &&
			 strstr(a, want0) && strstr(a, want1) && !strstr(a, "\n2,"),
			 "allocinfo nodes: 5 pages, %lld bytes on node 0 and %lld on node 1\n",
			 3 * page, 2 * page);
	if (!strstr(a, want0) || !strstr(a, want1))
		ksft_print_msg("allocinfo nodes printed:\n%s", a);
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_test_free("pages_node") == 0 &&
			 ap_write_file(AP_TESTDIR "/callers", "free\n", 5) == 0 &&
			 ap_test_free("kmalloc_100") == 0 && ap_rmmod("allocprof_test") == 0 &&
			 ap_rmmod("allocprof") == 0, "free and unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_exact, &nexact),
	AP_STEP_EACH(t_kernel_sites, &nkernel_sites),
	AP_STEP(t_kmalloc_100),
	AP_STEP(t_auto_ioctl),
	AP_STEP(t_auto_text),
	AP_STEP(t_via_ioctl_fails),
	AP_STEP(t_watch),
	AP_STEP(t_ages_now),
	AP_STEP(t_ages_later),
	AP_STEP(t_stacks_first),
	AP_STEP(t_stacks_second),
	AP_STEP(t_nodes),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (access(TOOL, X_OK))
		ksft_exit_fail_msg("no %s next to the tests\n", TOOL);
	/* The test module loaded after allocprof: its call sites are accurate. */
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsite_unit("kmalloc_100", &unit, &calls) || ap_test_alloc("kmalloc_100", 3))
		ksft_exit_fail_msg("cannot allocate at the test site\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
