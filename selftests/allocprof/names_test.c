// SPDX-License-Identifier: GPL-2.0
/*
 * names_test: a task name is untrusted text.  A child renames itself
 * (prctl(PR_SET_NAME)) to a name with a newline, a tab, a backslash, an
 * escape, DEL and a byte above 0x7f, laid out so that written raw it would
 * add a fake frame line to the record, and allocates at the test module's
 * kmalloc_100 site, watched (+s through the control file).
 *
 * - The stacks file shows that chain as exactly one record with the
 *   child's pid and its name escaped: every byte below 0x20, from 0x7f on,
 *   and the backslash as a backslash and three octal digits (seq_escape()'s
 *   form), e.g. the newline as \012; the figures are the two allocations'.
 * - No line of the stacks file holds a control byte or a byte above 0x7e,
 *   and the record has only the frames of the call chain (not the fake one).
 * - The host tool (`allocinfo stacks --strict`, static, next to the tests)
 *   reads the file without a malformed line and shows the one record with
 *   the same pid and the same escaped name.
 */
#include <sys/prctl.h>

#include "allocprof_lib.h"

#define TOOL "./allocinfo"
#define CONTROL "/sys/kernel/debug/allocprof/control"
#define SITE "kmalloc_100"
#define FUNC "aptest_kmalloc_100"
#define ALLOCS 2

/*
 * A newline, then what would be a frame line "    @..."; escaped it still
 * fits struct ap_chain's comm.
 */
static const char name[] = "n\n    @\t\\\x1b\x7f\xc3";
/* The same name escaped, as the stacks file is to show it. */
static const char escaped[] = "n\\012    @\\011\\134\\033\\177\\303";

static long long unit;
static unsigned long long calls;
static pid_t child;
static char out[1 << 16];

static void t_watch(int i)
{
	const char *cmd = "func " FUNC " +s";

	(void)i;
	ksft_test_result(ap_write_file(CONTROL, cmd, strlen(cmd)) == 0,
			 "control: func %s +s\n", FUNC);
}

/* The child renames itself and allocates; 0 if both worked. */
static void t_alloc(int i)
{
	char got[16] = "";
	int status = -1;

	(void)i;
	child = fork();
	if (child == 0) {
		if (prctl(PR_SET_NAME, name) || prctl(PR_GET_NAME, got) || strcmp(got, name))
			_exit(1);
		_exit(ap_test_alloc(SITE, ALLOCS) ? 2 : 0);
	}
	ksft_test_result(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
			 WEXITSTATUS(status) == 0,
			 "a task named with control bytes makes %d allocations at %s (status %d)\n",
			 ALLOCS, SITE, status);
}

static void t_one_record(int i)
{
	struct ap_chain c[4];
	int n = ap_chains_of(FUNC, c, 4);
	int ok = n == 1 && c[0].pid == child && !strcmp(c[0].comm, escaped) &&
		 c[0].bytes == ALLOCS * unit && c[0].calls == ALLOCS * calls;

	(void)i;
	if (!ok)
		ksft_print_msg("%d records; the first: %s\n", n, n > 0 ? c[0].first : "(none)");
	ksft_test_result(ok, "stacks: one record, pid %d, comm:%s, %lld bytes %llu calls\n", child,
			 escaped, ALLOCS * unit, ALLOCS * calls);
}

/* No control byte or byte above 0x7e in the file; no line "    @...". */
static void t_clean_lines(int i)
{
	size_t len = 0, k, bad = 0;
	char *buf = ap_slurp(AP_STACKS, &len);
	struct ap_chain c[4];
	int n = ap_chains_of(FUNC, c, 4);

	(void)i;
	for (k = 0; buf && k < len; k++) {
		unsigned char b = buf[k];

		if (b != '\n' && (b < 0x20 || b > 0x7e))
			bad++;
	}
	ksft_test_result(buf && !bad && !strstr(buf, "\n    @") && n == 1 &&
			 !strchr(c[0].frames, '@') && strstr(c[0].frames, FUNC "+"),
			 "stacks: %zu control or non-ASCII bytes, no fake frame, the chain's own frames\n",
			 bad);
	free(buf);
}

static void t_tool(int i)
{
	char want[128];
	int rc;

	(void)i;
	/* CSV: rank,bytes,calls,file,line,module,func,pid,comm,frames. */
	snprintf(want, sizeof(want), ",%s,%d,%s,", FUNC, child, escaped);
	rc = ap_sh_out(out, sizeof(out),
		       TOOL " stacks --strict --func " FUNC " --frames 0 --format csv 2>&1");
	ksft_test_result(rc == 0 && strstr(out, want) && strstr(out, "\n1,") &&
			 !strstr(out, "\n2,"),
			 "allocinfo stacks --strict: one record, pid %d, comm %s\n", child,
			 escaped);
	if (rc || !strstr(out, want))
		ksft_print_msg("exit %d, expected '%s' in:\n%s", rc, want, out);
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_test_free(SITE) == 0 && ap_unload_all() == 0, "free and unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_watch),
	AP_STEP(t_alloc),
	AP_STEP(t_one_record),
	AP_STEP(t_clean_lines),
	AP_STEP(t_tool),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (access(TOOL, X_OK))
		ksft_exit_fail_msg("no %s next to the tests\n", TOOL);
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsite_unit(SITE, &unit, &calls))
		ksft_exit_fail_msg("cannot read the test module's sites\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
