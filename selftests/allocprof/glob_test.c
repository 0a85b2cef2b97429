// SPDX-License-Identifier: GPL-2.0
/*
 * glob_test: worst-case patterns in the control file (issue #23, finding
 * 6).  Each case is one write of the longest the control file takes
 * (4095 bytes, as dynamic debug's) whose patterns match no call site but
 * make the matcher work hard on every one: runs of "*a" ending in a byte
 * no name has, a star then a long literal, and 64 commands at once.
 *
 * - Each write succeeds, leaves the control file as it was (no site
 *   matched, so no flag changed), and puts no watchdog report in the
 *   kernel log (soft lockup, RCU stall, hung task).
 * - At the end the kernel log has no watchdog report at all.
 *
 * How long each write took (CLOCK_MONOTONIC) is printed, not checked: the
 * guests run under TCG on shared CPUs, so a time says little.
 */
#include <time.h>

#include "allocprof_lib.h"

/* The longest write the control file takes (src/sys/debugfs.rs). */
#define MAX_WRITE 4095
/* The most commands one write may hold (src/control.rs). */
#define MAX_QUERIES 64

/* The kernel's watchdog reports, one pattern a line (grep -e ... -e ...). */
#define WATCHDOG "soft lockup\nself-detected stall\ndetected stalls\n" \
	"blocked for more than\nhung task"

struct glob_case {
	const char *name;
	const char *prefix;	/* the command up to its pattern */
	const char *unit;	/* repeated to fill the pattern */
	const char *tail;	/* the pattern's end, which no name has */
	const char *suffix;	/* after the pattern: flags, separator */
	int commands;		/* copies of the whole command in the write */
};

static const struct glob_case cases[] = {
	{ "func *a*a...*b", "func \"", "*a", "*b", "\" +p", 1 },
	{ "file *a*a...*b", "file \"", "*a", "*b", "\" +s", 1 },
	{ "module *a*a...*b", "module ", "*a", "*b", " +a", 1 },
	{ "func *aaa...ab", "func *", "a", "b", " +p", 1 },
	{ "file *?*?...*Q", "file *", "?*", "Q", " +psa", 1 },
	{ "64 x file *_*_...*Q +s", "file *", "_*", "Q", " +s;", MAX_QUERIES },
};

static const int ncases = ARRAY_SIZE(cases);
static char *before;
static long watchdog_before;

static long watchdog_lines(void)
{
	return ap_klog_grep(WATCHDOG, 0, NULL);
}

/*
 * Fills out with c's write: c->commands copies of prefix, unit repeated,
 * tail and suffix, each as long as fits MAX_WRITE; returns its length.
 */
static size_t fill(char *out, const struct glob_case *c)
{
	size_t each = MAX_WRITE / c->commands, len = 0;
	size_t end = strlen(c->tail) + strlen(c->suffix);
	size_t unit = strlen(c->unit);
	int k;

	for (k = 0; k < c->commands; k++) {
		size_t start = len;

		len += sprintf(out + len, "%s", c->prefix);
		while (len - start + unit + end <= each)
			len += sprintf(out + len, "%s", c->unit);
		len += sprintf(out + len, "%s%s", c->tail, c->suffix);
	}
	return len;
}

static void t_write(int i)
{
	const struct glob_case *c = &cases[i];
	static char cmd[MAX_WRITE + 1];
	struct timespec t0, t1;
	size_t len = fill(cmd, c);
	char *after;
	long watchdog;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ap_write_file(AP_CONTROL, cmd, len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ksft_print_msg("%s: %zu bytes written in %.3f s\n", c->name, len,
		       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	after = ap_slurp(AP_CONTROL, NULL);
	watchdog = watchdog_lines();
	if (rc)
		ksft_print_msg("%s: write: %s\n", c->name, strerror(-rc));
	if (!after || strcmp(after, before))
		ksft_print_msg("%s: the control file changed\n", c->name);
	if (watchdog != watchdog_before)
		ksft_print_msg("%s: %ld watchdog lines in dmesg, %ld before\n", c->name,
			       watchdog, watchdog_before);
	ksft_test_result(!rc && after && !strcmp(after, before) && watchdog == watchdog_before,
			 "%s (%zu bytes): written, nothing changed, no watchdog report\n",
			 c->name, len);
	free(after);
}

static void t_dmesg(int i)
{
	char *lines = NULL;

	(void)i;
	if (ap_klog_grep(WATCHDOG, 0, &lines) > 0) {
		fputs(lines, stderr);
		ksft_print_msg("the watchdog lines above are in the kernel log\n");
	}
	free(lines);
	ksft_test_result(watchdog_lines() == 0, "kernel log: no soft lockup, stall or hung task\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_write, &ncases),
	AP_STEP(t_dmesg),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	before = ap_slurp(AP_CONTROL, NULL);
	watchdog_before = watchdog_lines();
	if (!before || watchdog_before < 0)
		ksft_exit_fail_msg("cannot read %s or the kernel log\n", AP_CONTROL);
	ksft_print_msg("%d call sites in %s\n",
		       (int)ap_grep_file(AP_CONTROL, "^#", AP_GREP_INVERT, NULL), AP_CONTROL);
	AP_RUN_STEPS(steps);
	ksft_finished();
}
