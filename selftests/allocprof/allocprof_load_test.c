// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_load_test: the Rust module loads with modprobe, shows in
 * /proc/modules, says so in the kernel log (one "loaded: mem_profiling=1"
 * line and one "counting since load" line, no other line of allocprof's
 * but the kernel's taint message), has its counters in the per-CPU
 * reserved area, and unloads again, saying "unloaded".
 */
#include <ctype.h>

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

/* The number just before " bytes..." in line (", N bytes..."), or -1. */
static long long number_before(const char *line, const char *what)
{
	const char *at = strstr(line, what), *p = at;

	if (!at)
		return -1;
	while (p > line && isdigit((unsigned char)p[-1]))
		p--;
	return p < at && p > line && p[-1] == ' ' ? atoll(p) : -1;
}

/*
 * The counters of vmlinux's call sites come from the room the patched
 * kernel keeps for them in the first per-CPU chunk's reserved area, out of
 * the way of everyone else's per-CPU allocations (the last percpu patch of
 * both series): with no other module's call sites loaded, every byte of
 * allocprof's counters is there.
 */
static void t_reserved(int i)
{
	long long counters, reserved;
	char line[512];

	(void)i;
	ap_klog_last("allocprof: loaded: ", AP_GREP_FIXED, line, sizeof(line));
	counters = number_before(line, " bytes of counters a CPU, ");
	reserved = number_before(line, " bytes a CPU of the counters in the per-CPU reserved area");
	ksft_test_result(counters > 0 && reserved == counters,
			 "the counters in the per-CPU reserved area: %lld of %lld bytes a CPU\n",
			 reserved, counters);
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
	AP_STEP(t_reserved),
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
