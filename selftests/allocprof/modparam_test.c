// SPDX-License-Identifier: GPL-2.0
/*
 * modparam_test: mem_profiling=0|1|never sets the state at load; any other
 * value fails the load with a message and leaves nothing behind.
 */
#include "allocprof_lib.h"

static const char *const bad[] = {
	"mem_profiling=2",     "mem_profiling=-1",	"mem_profiling=01",
	"mem_profiling=yes",   "mem_profiling=",	"mem_profiling",
	"mem_profiling=nevr",  "mem_profiling=NEVER",	"mem_profiling=1x",
	"mem_profiling=\\\"1 \\\"",
};

static int sysctl_is(const char *want)
{
	char buf[32];

	return ap_read_file(AP_SYSCTL, buf, sizeof(buf)) > 0 && !strcmp(buf, want);
}

int main(void)
{
	ksft_print_header();
	ksft_set_plan(2 * ARRAY_SIZE(bad) + 5);
	if (ap_unload_all())
		ksft_exit_fail_msg("cannot unload what an earlier test left\n");
	ap_sh("dmesg -c >/dev/null");

	ap_check_bad_params(bad, ARRAY_SIZE(bad), "mem_profiling",
			    "mem_profiling= must be 0, 1 or never");
	ksft_test_result(ap_sh("modprobe allocprof mem_profiling=0") == 0 && sysctl_is("0\n"),
			 "mem_profiling=0: loads, sysctl reads 0\n");
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof mem_profiling=never") == 0 &&
			 sysctl_is("never\n"), "mem_profiling=never: loads, sysctl reads never\n");
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof mem_profiling=1") == 0 &&
			 sysctl_is("1\n"), "mem_profiling=1: loads, sysctl reads 1\n");
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof") == 0 && sysctl_is("1\n"),
			 "default: sysctl reads 1\n");
	ksft_test_result(ap_sh("rmmod allocprof") == 0, "unload\n");
	ksft_finished();
}
