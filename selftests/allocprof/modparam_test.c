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

static const int nbad = ARRAY_SIZE(bad) * AP_BAD_PARAM_RESULTS;

static void t_bad(int k)
{
	ap_check_bad_param(bad[k / AP_BAD_PARAM_RESULTS], k % AP_BAD_PARAM_RESULTS, "mem_profiling",
			   "mem_profiling= must be 0, 1 or never");
}

static void t_zero(int i)
{
	(void)i;
	ksft_test_result(ap_sh("modprobe allocprof mem_profiling=0") == 0 && ap_sysctl_is("0\n"),
			 "mem_profiling=0: loads, sysctl reads 0\n");
}

static void t_never(int i)
{
	(void)i;
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof mem_profiling=never") == 0 &&
			 ap_sysctl_is("never\n"), "mem_profiling=never: loads, sysctl reads never\n");
}

static void t_one(int i)
{
	(void)i;
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof mem_profiling=1") == 0 &&
			 ap_sysctl_is("1\n"), "mem_profiling=1: loads, sysctl reads 1\n");
}

static void t_default(int i)
{
	(void)i;
	ksft_test_result(ap_sh("rmmod allocprof && modprobe allocprof") == 0 && ap_sysctl_is("1\n"),
			 "default: sysctl reads 1\n");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_sh("rmmod allocprof") == 0, "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_bad, &nbad),
	AP_STEP(t_zero),
	AP_STEP(t_never),
	AP_STEP(t_one),
	AP_STEP(t_default),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_unload_all())
		ksft_exit_fail_msg("cannot unload what an earlier test left\n");
	ap_sh("dmesg -c >/dev/null");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
