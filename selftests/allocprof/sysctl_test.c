// SPDX-License-Identifier: GPL-2.0
/*
 * sysctl_test: vm.mem_profiling reads 0, 1 or never; 0 and 1 switch
 * profiling at run time; never switches it off for good and makes the file
 * read-only; every other write gets -EINVAL and changes nothing.
 */
#include <sys/stat.h>

#include "allocprof_lib.h"

#define SITE "kmalloc_100"
#define FUNC "aptest_kmalloc_100"

static int sysctl_is(const char *want)
{
	char buf[32];

	if (ap_read_file(AP_SYSCTL, buf, sizeof(buf)) < 0)
		return 0;
	if (strcmp(buf, want))
		ksft_print_msg("vm.mem_profiling reads '%s', expected '%s'\n", buf, want);
	return !strcmp(buf, want);
}

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

int main(void)
{
	char junk[4096];
	long long slab;
	struct stat st;
	unsigned int i;
	int ret;

	ksft_print_header();
	ksft_set_plan(14 + ARRAY_SIZE(bad_writes) + 1);
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	slab = ap_slab_size("kmalloc-128");

	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0644,
			 "vm.mem_profiling is mode 0644\n");
	ksft_test_result(sysctl_is("1\n"), "reads 1 after load\n");
	ret = ap_open_as_nobody(AP_SYSCTL, O_WRONLY);
	ksft_test_result(ret == EACCES && sysctl_is("1\n"),
			 "user nobody cannot open vm.mem_profiling for writing (%s)\n",
			 ret > 0 ? strerror(ret) : ret ? "error" : "it could");

	/* Off: new allocations are not counted; frees still are. */
	ap_test_alloc(SITE, 3);
	ksft_test_result(ap_write_file(AP_SYSCTL, "0\n", 2) == 0 && sysctl_is("0\n"),
			 "write 0: reads 0\n");
	ap_test_alloc(SITE, 4);
	ksft_test_result(ap_expect(FUNC, 3 * slab, 3), "while 0, allocations are not counted\n");
	ap_test_free(SITE);
	ksft_test_result(ap_expect(FUNC, 0, 0), "while 0, frees of counted objects are\n");
	ksft_test_result(ap_write_file(AP_SYSCTL, "1", 1) == 0 && sysctl_is("1\n"),
			 "write 1 (no newline): reads 1\n");
	ap_test_alloc(SITE, 5);
	ksft_test_result(ap_expect(FUNC, 5 * slab, 5), "on again: allocations counted\n");

	for (i = 0; i < ARRAY_SIZE(bad_writes); i++) {
		ret = ap_write_file(AP_SYSCTL, bad_writes[i].data, bad_writes[i].len);
		ksft_test_result((ret == -EINVAL || (bad_writes[i].len == 0 && ret == 0)) &&
				 sysctl_is("1\n"),
				 "write %s: -EINVAL, unchanged\n", bad_writes[i].name);
	}
	memset(junk, 'x', sizeof(junk));
	ret = ap_write_file(AP_SYSCTL, junk, sizeof(junk));
	ksft_test_result(ret == -EINVAL && sysctl_is("1\n"), "write 4 KiB of junk: -EINVAL\n");

	ap_test_free(SITE);
	ksft_test_result(ap_write_file(AP_SYSCTL, "never\n", 6) == 0 && sysctl_is("never\n"),
			 "write never: reads never\n");
	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && ap_write_file(AP_SYSCTL, "1", 1) == -EACCES &&
			 sysctl_is("never\n"), "after never: read-only, even for root\n");
	ap_test_alloc(SITE, 2);
	{
		size_t len;
		char *buf = ap_slurp(AP_ALLOCINFO, &len);

		ksft_test_result(buf && !strcmp(buf, "allocinfo - version: 1.0\n"
						 "#     <size>  <calls> <tag info>\n"),
				 "after never: /proc/allocinfo has its header only\n");
		free(buf);
	}
	ap_test_free(SITE);
	ksft_test_result(ap_sh("rmmod allocprof") == 0 && ap_load(NULL) == 0 && sysctl_is("1\n") &&
			 ap_expect(FUNC, 0, 0), "reload after never: on again, from zero\n");
	ap_test_alloc(SITE, 1);
	ksft_test_result(ap_expect(FUNC, slab, 1), "reload after never: counting again\n");
	ap_test_free(SITE);
	ksft_test_result(ap_sh("rmmod allocprof_test") == 0 && ap_sh("rmmod allocprof") == 0,
			 "unload\n");
	ksft_finished();
}
