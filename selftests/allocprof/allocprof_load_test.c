// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_load_test: the Rust module loads with modprobe, shows in
 * /proc/modules, says so in the kernel log (one "loaded: mem_profiling=1"
 * line and one "counting since load" line, no other line of allocprof's
 * but the kernel's taint message),
 * and unloads again, saying "unloaded".
 */
#include "allocprof_lib.h"

/* The kernel log since the last dmesg -c has exactly one line matching re. */
static int one_kmsg(const char *re)
{
	long n = ap_klog_grep(re, 0, NULL);

	if (n != 1)
		ksft_print_msg("%ld kernel log line(s) match '%s', expected 1\n", n, re);
	return n == 1;
}

static void t_modprobe(int i)
{
	(void)i;
	ap_klog_clear();
	ksft_test_result(ap_modprobe("allocprof", NULL) == 0, "modprobe allocprof\n");
}

static void t_listed(int i)
{
	(void)i;
	ksft_test_result(ap_module_loaded("allocprof"), "listed in /proc/modules\n");
}

static void t_live(int i)
{
	char buf[256];

	(void)i;
	ksft_test_result(ap_read_file("/sys/module/allocprof/initstate", buf, sizeof(buf)) > 0 &&
			 !strcmp(buf, "live\n"), "initstate is live\n");
}

static void t_load_log(int i)
{
	/* The kernel's own line about allocprof: the taint of the first load. */
	long all = ap_klog_grep2("allocprof: ", 0,
				 "allocprof: loading out-of-tree module taints kernel\\.$",
				 AP_GREP_INVERT);
	int ok = one_kmsg("allocprof: loaded: mem_profiling=1, [0-9]* call sites, ") &&
		 one_kmsg("allocprof: counting since load: ");

	(void)i;
	if (all != 2)
		ksft_print_msg("%ld lines of allocprof's in the kernel log, expected 2\n", all);
	ksft_test_result(ok && all == 2, "the kernel log says it loaded and counts since its load\n");
}

static void t_rmmod(int i)
{
	(void)i;
	ap_klog_clear();
	ksft_test_result(ap_rmmod("allocprof") == 0 && !ap_module_loaded("allocprof") &&
			 one_kmsg("allocprof: unloaded$"), "rmmod allocprof: 'unloaded' in the log\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_modprobe),
	AP_STEP(t_listed),
	AP_STEP(t_live),
	AP_STEP(t_load_log),
	AP_STEP(t_rmmod),
};

int main(void)
{
	ksft_print_header();
	if (ap_unload_all())
		ksft_exit_fail_msg("cannot unload what an earlier test left\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
