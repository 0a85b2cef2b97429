// SPDX-License-Identifier: GPL-2.0
/*
 * sysctl_test: vm.mem_profiling reads 0, 1 or never; 0 and 1 switch
 * profiling at run time (at 0 the figures stay those of the switch, frees
 * no longer counted; at 1 they start from zero); never switches it off for
 * good and makes the file read-only; every other write gets -EINVAL and
 * changes nothing.
 */
#include <sys/stat.h>

#include "allocprof_lib.h"

#define SITE "kmalloc_100"
#define FUNC "aptest_kmalloc_100"

static const struct {
	const char *name;
	const char *data;
	size_t len;
} bad_writes[] = {
	{ "empty", "", 0 },
	{ "a space", " ", 1 },
	{ "a newline", "\n", 1 },
	{ "2", "2", 1 },
	{ "-1", "-1", 2 },
	{ "01", "01", 2 },
	{ "1x", "1x", 2 },
	{ "1 and two newlines", "1\n\n", 3 },
	{ "' 1'", " 1", 2 },
	{ "'never '", "never ", 6 },
	{ "' never'", " never", 6 },
	{ "NEVER", "NEVER", 5 },
	{ "nevermore", "nevermore", 9 },
	{ "on", "on", 2 },
	{ "binary", "\x01\xff\x00\x31", 4 },
};

static const int nbad = ARRAY_SIZE(bad_writes);
/* Bytes and calls of one allocation at SITE, as the test module says. */
static long long unit;
static unsigned long long calls;

static void t_mode(int i)
{
	struct stat st;

	(void)i;
	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0644,
			 "vm.mem_profiling is mode 0644\n");
}

static void t_reads_1(int i)
{
	(void)i;
	ksft_test_result(ap_sysctl_is("1\n"), "reads 1 after load\n");
}

static void t_nobody(int i)
{
	int ret = ap_open_as_nobody(AP_SYSCTL, O_WRONLY);

	(void)i;
	ksft_test_result(ret == EACCES && ap_sysctl_is("1\n"),
			 "user nobody cannot open vm.mem_profiling for writing (%s)\n",
			 ret > 0 ? strerror(ret) : ret ? "error" : "it could");
}

/*
 * Off: new allocations are not counted, and neither are frees (the kernel
 * forgot which call site each live allocation came from).
 */
static void t_write_0(int i)
{
	(void)i;
	ap_test_alloc(SITE, 3);
	ksft_test_result(ap_write_file(AP_SYSCTL, "0\n", 2) == 0 && ap_sysctl_is("0\n"),
			 "write 0: reads 0\n");
}

static void t_off_allocs(int i)
{
	(void)i;
	ap_test_alloc(SITE, 4);
	ksft_test_result(ap_expect(FUNC, 3 * unit, 3 * calls), "while 0, allocations are not counted\n");
}

static void t_off_frees(int i)
{
	(void)i;
	ap_test_free(SITE);
	ksft_test_result(ap_expect(FUNC, 3 * unit, 3 * calls),
			 "while 0, frees are not counted: the figures stay those of the switch\n");
}

static void t_write_1(int i)
{
	(void)i;
	ksft_test_result(ap_write_file(AP_SYSCTL, "1", 1) == 0 && ap_sysctl_is("1\n"),
			 "write 1 (no newline): reads 1\n");
}

static void t_on_zero(int i)
{
	(void)i;
	ksft_test_result(ap_expect(FUNC, 0, 0), "on again: the figures start from zero\n");
}

static void t_on_allocs(int i)
{
	(void)i;
	ap_test_alloc(SITE, 5);
	ksft_test_result(ap_expect(FUNC, 5 * unit, 5 * calls), "on again: allocations counted\n");
}

static void t_bad_write(int i)
{
	int ret = ap_write_file(AP_SYSCTL, bad_writes[i].data, bad_writes[i].len);

	ksft_test_result((ret == -EINVAL || (bad_writes[i].len == 0 && ret == 0)) && ap_sysctl_is("1\n"),
			 "write %s: -EINVAL, unchanged\n", bad_writes[i].name);
}

static void t_junk(int i)
{
	static char junk[4096];
	int ret;

	(void)i;
	memset(junk, 'x', sizeof(junk));
	ret = ap_write_file(AP_SYSCTL, junk, sizeof(junk));
	ksft_test_result(ret == -EINVAL && ap_sysctl_is("1\n"), "write 4 KiB of junk: -EINVAL\n");
}

static void t_never(int i)
{
	(void)i;
	ap_test_free(SITE);
	ksft_test_result(ap_write_file(AP_SYSCTL, "never\n", 6) == 0 && ap_sysctl_is("never\n"),
			 "write never: reads never\n");
}

static void t_never_read_only(int i)
{
	struct stat st;

	(void)i;
	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && ap_write_file(AP_SYSCTL, "1", 1) == -EACCES &&
			 ap_sysctl_is("never\n"), "after never: read-only, even for root\n");
}

static void t_never_header_only(int i)
{
	size_t len;
	char *buf;

	(void)i;
	ap_test_alloc(SITE, 2);
	buf = ap_slurp(AP_ALLOCINFO, &len);
	ksft_test_result(buf && !strcmp(buf, ap_default_header()),
			 "after never: /proc/allocinfo has its header only\n");
	free(buf);
	ap_test_free(SITE);
}

static void t_reload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof") == 0 && ap_load(NULL) == 0 && ap_sysctl_is("1\n") &&
			 ap_expect(FUNC, 0, 0), "reload after never: on again, from zero\n");
}

static void t_reload_counts(int i)
{
	(void)i;
	ap_test_alloc(SITE, 1);
	ksft_test_result(ap_expect(FUNC, unit, calls), "reload after never: counting again\n");
	ap_test_free(SITE);
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_mode),
	AP_STEP(t_reads_1),
	AP_STEP(t_nobody),
	AP_STEP(t_write_0),
	AP_STEP(t_off_allocs),
	AP_STEP(t_off_frees),
	AP_STEP(t_write_1),
	AP_STEP(t_on_zero),
	AP_STEP(t_on_allocs),
	AP_STEP_EACH(t_bad_write, &nbad),
	AP_STEP(t_junk),
	AP_STEP(t_never),
	AP_STEP(t_never_read_only),
	AP_STEP(t_never_header_only),
	AP_STEP(t_reload),
	AP_STEP(t_reload_counts),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsite_unit(SITE, &unit, &calls))
		ksft_exit_fail_msg("no test site " SITE "\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
