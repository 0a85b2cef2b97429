// SPDX-License-Identifier: GPL-2.0
/*
 * modparam_test: mem_profiling=0|1|never sets the state at load; any other
 * value fails the load with a message and leaves nothing behind.
 * control= applies control-file commands at load: the call sites it
 * selects have its flags before anything else runs, and an allocation
 * there is watched; the test module loaded again gets the same flags; a
 * bad command, an overlong value or control= with
 * mem_profiling=never fails the load with a message, leaving nothing.
 */
#include "allocprof_lib.h"

static const char *const bad[] = {
	"mem_profiling=2",     "mem_profiling=-1",	"mem_profiling=01",
	"mem_profiling=yes",   "mem_profiling=",	"mem_profiling",
	"mem_profiling=nevr",  "mem_profiling=NEVER",	"mem_profiling=1x",
	"mem_profiling=\\\"1 \\\"",
};

static const int nbad = ARRAY_SIZE(bad) * AP_BAD_PARAM_RESULTS;

/* Bad control= values (as insmod's arguments) and the message of each. */
static const char *const bad_control[][2] = {
	{ "control=bogus", "is not a keyword nor flags" },
	{ "'control=\"func aptest_kmalloc_8 +x\"'", "unknown flag" },
	{ "'control=\"func aptest_kmalloc_8 +s; line 7-3 -s\"'", "ends before it starts" },
	{ "control=$(printf %02049d 0)", "control= is longer than 2048 bytes" },
	{ "mem_profiling=never control=+s", "profiling is off for good" },
};

static const int nbad_control = ARRAY_SIZE(bad_control) * AP_BAD_PARAM_RESULTS;

/* The commands of the good control=, and what they give the test module's sites. */
#define CONTROL_CMDS "func aptest_kmalloc_8 +s; func aptest_kmalloc_100 +a"
#define WATCHED 3

static void t_bad(int k)
{
	ap_check_bad_param(bad[k / AP_BAD_PARAM_RESULTS], k % AP_BAD_PARAM_RESULTS, "mem_profiling",
			   "mem_profiling= must be 0, 1 or never");
}

static void t_bad_control(int k)
{
	const char *const *c = bad_control[k / AP_BAD_PARAM_RESULTS];

	ap_check_bad_param(c[0], k % AP_BAD_PARAM_RESULTS, "control", c[1]);
}

static void t_control(int i)
{
	int ok;

	(void)i;
	ok = ap_modprobe("allocprof_test", NULL) == 0 &&
	     ap_insmod("allocprof", "control=\"" CONTROL_CMDS "\"") == 0;
	ksft_test_result(ok && ap_flags_are("aptest_kmalloc_8", "ps") &&
			 ap_flags_are("aptest_kmalloc_100", "pa") &&
			 ap_flags_are("aptest_cache_alloc", "p") &&
			 ap_klog_grep("control= applied: " CONTROL_CMDS,
				      AP_GREP_FIXED | AP_KLOG_CLEAR, NULL) > 0,
			 "control=\"%s\": the flags at load, and a message\n", CONTROL_CMDS);
}

static void t_control_watched(int i)
{
	long long bytes = 0;
	unsigned long long calls = 0;
	int ok;

	(void)i;
	ok = ap_test_alloc("kmalloc_8", WATCHED) == 0 &&
	     ap_chain_sum("aptest_kmalloc_8", &bytes, &calls) == 1;
	ksft_test_result(ok && calls == WATCHED && ap_expect("aptest_kmalloc_8", bytes, WATCHED),
			 "%d allocations at aptest_kmalloc_8: one chain of %d calls with the bytes of /proc/allocinfo\n",
			 WATCHED, WATCHED);
}

/* control= also reaches a module that loads later: its flags are set again. */
static void t_control_later(int i)
{
	(void)i;
	ksft_test_result(ap_test_free("kmalloc_8") == 0 &&
			 ap_rmmod("allocprof_test") == 0 &&
			 ap_modprobe("allocprof_test", NULL) == 0 &&
			 ap_flags_are("aptest_kmalloc_8", "ps") &&
			 ap_flags_are("aptest_kmalloc_100", "pa") &&
			 ap_flags_are("aptest_cache_alloc", "p"),
			 "control=\"%s\": allocprof_test loaded again gets the same flags\n",
			 CONTROL_CMDS);
}

static void t_control_unload(int i)
{
	(void)i;
	ksft_test_result(ap_test_free("kmalloc_8") == 0 &&
			 ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "free, unload\n");
}

static void t_zero(int i)
{
	(void)i;
	ksft_test_result(ap_modprobe("allocprof", "mem_profiling=0") == 0 && ap_sysctl_is("0\n"),
			 "mem_profiling=0: loads, sysctl reads 0\n");
}

static void t_never(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0 &&
			 ap_modprobe("allocprof", "mem_profiling=never") == 0 &&
			 ap_sysctl_is("never\n"), "mem_profiling=never: loads, sysctl reads never\n");
}

static void t_one(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0 &&
			 ap_modprobe("allocprof", "mem_profiling=1") == 0 &&
			 ap_sysctl_is("1\n"), "mem_profiling=1: loads, sysctl reads 1\n");
}

static void t_default(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0 && ap_modprobe("allocprof", NULL) == 0 &&
			 ap_sysctl_is("1\n"),
			 "default: sysctl reads 1\n");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0, "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_bad, &nbad),
	AP_STEP(t_zero),
	AP_STEP(t_never),
	AP_STEP(t_one),
	AP_STEP(t_default),
	AP_STEP(t_unload),
	AP_STEP_EACH(t_bad_control, &nbad_control),
	AP_STEP(t_control),
	AP_STEP(t_control_watched),
	AP_STEP(t_control_later),
	AP_STEP(t_control_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_unload_all())
		ksft_exit_fail_msg("cannot unload what an earlier test left\n");
	ap_klog_clear();
	AP_RUN_STEPS(steps);
	ksft_finished();
}
