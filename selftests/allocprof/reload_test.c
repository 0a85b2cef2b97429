// SPDX-License-Identifier: GPL-2.0
/*
 * reload_test: rmmod and insmod of allocprof, with and without memory
 * allocated at the test sites in between, always leave exact figures: what
 * was allocated before a load is not counted, and freeing it later does not
 * drive the figures below zero, nor subtract it from what the new load
 * counted (the kernel zeroes every object's slot when allocprof unloads:
 * the reload gives the call sites the same ids).
 */
#include "allocprof_lib.h"

#define CYCLES 5

static const char *const sites[] = { "kmalloc_100", "cache_alloc", "alloc_pages_3" };
#define NSITES (sizeof(sites) / sizeof(sites[0]))

static long long unit[NSITES];
static unsigned long long calls[NSITES];

/* The results of a cycle, in order. */
enum { PH_RELOADED, PH_COUNTED, PH_OLD_FREED, PH_FREED, NPHASES };
static const int nphases = CYCLES * NPHASES;

static int site_is(unsigned int s, long long bytes, unsigned long long n)
{
	char func[64];

	snprintf(func, sizeof(func), "aptest_%s", sites[s]);
	return ap_expect(func, bytes, n);
}

static void t_cycle(int k)
{
	int c = k / NPHASES, ok = 1;
	unsigned int s;

	switch (k % NPHASES) {
	case PH_RELOADED:
		/* Allocate while loaded, then reload with the memory live. */
		for (s = 0; s < NSITES; s++)
			ok &= ap_test_alloc(sites[s], 2 + c) == 0;
		ok &= ap_rmmod("allocprof") == 0 && ap_load(NULL) == 0;
		for (s = 0; s < NSITES; s++)
			ok &= site_is(s, 0, 0);
		ksft_test_result(ok, "cycle %d: after reload, memory from before is not counted\n", c);
		break;
	case PH_COUNTED:
		for (s = 0; s < NSITES; s++)
			ok &= ap_test_alloc(sites[s], 3) == 0 && site_is(s, 3 * unit[s], 3 * calls[s]);
		ksft_test_result(ok, "cycle %d: new allocations counted exactly\n", c);
		break;
	case PH_OLD_FREED:
		for (s = 0; s < NSITES; s++)
			ok &= ap_test_free_first(sites[s], 2 + c) == 0 &&
			      site_is(s, 3 * unit[s], 3 * calls[s]);
		ksft_test_result(ok, "cycle %d: freeing the memory from before leaves the new counted\n", c);
		break;
	default:
		for (s = 0; s < NSITES; s++)
			ok &= ap_test_free(sites[s]) == 0 && site_is(s, 0, 0);
		ksft_test_result(ok, "cycle %d: freeing old and new memory returns to 0/0\n", c);
	}
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_cycle, &nphases),
	AP_STEP(t_unload),
};

int main(void)
{
	unsigned int s;

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	for (s = 0; s < NSITES; s++)
		if (ap_testsite_unit(sites[s], &unit[s], &calls[s]))
			ksft_exit_fail_msg("no test site %s\n", sites[s]);
	AP_RUN_STEPS(steps);
	ksft_finished();
}
