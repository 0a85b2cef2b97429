// SPDX-License-Identifier: GPL-2.0
/*
 * reload_test: rmmod and insmod of allocprof, with and without memory
 * allocated at the test sites in between, always leave exact figures: what
 * was allocated before a load is not counted, and freeing it later does not
 * drive the figures below zero.
 */
#include "allocprof_lib.h"

#define CYCLES 5

static const char *const sites[] = { "kmalloc_100", "cache_alloc", "alloc_pages_3" };
#define NSITES (sizeof(sites) / sizeof(sites[0]))

int main(void)
{
	struct ap_testsite all[32];
	long long unit[NSITES];
	unsigned long long calls[NSITES];
	int n, c;
	unsigned int s;

	ksft_print_header();
	ksft_set_plan(CYCLES * 3 + 1);
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	n = ap_testsites(all, 32);
	for (s = 0; s < NSITES; s++) {
		int i;

		for (i = 0; i < n && strcmp(all[i].name, sites[s]); i++)
			;
		if (i == n || ap_unit(&all[i], &unit[s], &calls[s]))
			ksft_exit_fail_msg("no test site %s\n", sites[s]);
	}

	for (c = 0; c < CYCLES; c++) {
		int ok = 1;

		/* Allocate while loaded, then reload with the memory live. */
		for (s = 0; s < NSITES; s++)
			ok &= ap_test_alloc(sites[s], 2 + c) == 0;
		ok &= ap_sh("rmmod allocprof") == 0 && ap_load(NULL) == 0;
		for (s = 0; s < NSITES; s++) {
			char func[64];

			snprintf(func, sizeof(func), "aptest_%s", sites[s]);
			ok &= ap_expect(func, 0, 0);
		}
		ksft_test_result(ok, "cycle %d: after reload, memory from before is not counted\n", c);

		ok = 1;
		for (s = 0; s < NSITES; s++) {
			char func[64];

			snprintf(func, sizeof(func), "aptest_%s", sites[s]);
			ok &= ap_test_alloc(sites[s], 3) == 0 &&
			      ap_expect(func, 3 * unit[s], 3 * calls[s]);
		}
		ksft_test_result(ok, "cycle %d: new allocations counted exactly\n", c);

		ok = 1;
		for (s = 0; s < NSITES; s++) {
			char func[64];

			snprintf(func, sizeof(func), "aptest_%s", sites[s]);
			ok &= ap_test_free(sites[s]) == 0 && ap_expect(func, 0, 0);
		}
		ksft_test_result(ok, "cycle %d: freeing old and new memory returns to 0/0\n", c);
	}
	ksft_test_result(ap_sh("rmmod allocprof_test") == 0 && ap_sh("rmmod allocprof") == 0,
			 "unload\n");
	ksft_finished();
}
