// SPDX-License-Identifier: GPL-2.0
/*
 * switch_test: an allocation under way while profiling is switched off and
 * on (vm.mem_profiling, or an unload and load of allocprof) is counted at its
 * own call site or not at all, never at the call site of an enclosing
 * alloc_hooks().
 *
 * The test module's nested allocation (allocprof_test's "nested" file) runs
 * in stages: aptest_nested_outer()'s alloc_hooks() sets its tag, then
 * aptest_nested_inner()'s alloc_hooks() is passed, then the pages are
 * allocated.  alloc_hooks() sets no tag while profiling is off, so an inner
 * alloc_hooks() passed while off leaves the outer tag in place; the patched
 * kernel must not count those pages for the outer call site when profiling
 * is back on by the time they are allocated.  vmalloc() is such an outer
 * call site: the slab page for its page array is allocated inside it.
 */
#include "allocprof_lib.h"

#define NESTED AP_TESTDIR "/nested"

static long long run_bytes;

static int nested(const char *cmd)
{
	return ap_write_file(NESTED, cmd, strlen(cmd));
}

/* A profiling switch: "off", "on" (vm.mem_profiling), "unload", "load". */
static int do_switch(const char *what)
{
	if (!strcmp(what, "off"))
		return ap_write_file(AP_SYSCTL, "0", 1);
	if (!strcmp(what, "on"))
		return ap_write_file(AP_SYSCTL, "1", 1);
	if (!strcmp(what, "unload"))
		return ap_rmmod("allocprof") ? -1 : 0;
	return ap_modprobe("allocprof", NULL) ? -1 : 0;
}

struct scenario {
	const char *name;
	/* Switches after the outer tag is set, then after the inner alloc_hooks(). */
	const char *after_outer[2], *after_inner[2];
	/* Where the pages count: 1 at the inner call site, 0 nowhere. */
	int counted_inner;
};

static const struct scenario scenarios[] = {
	{ "no switch", { 0 }, { 0 }, 1 },
	{ "off and on before the inner alloc_hooks()", { "off", "on" }, { 0 }, 1 },
	{ "inner alloc_hooks() passed while off, pages allocated after on",
	  { "off" }, { "on" }, 0 },
	{ "inner alloc_hooks() passed while unloaded, pages allocated after a load",
	  { "unload" }, { "load" }, 0 },
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static int do_switches(const char *const *what)
{
	int i;

	for (i = 0; i < 2 && what[i]; i++) {
		if (do_switch(what[i])) {
			ksft_print_msg("switch '%s' failed\n", what[i]);
			return -1;
		}
	}
	return 0;
}

/* The results of a scenario, in order. */
enum { PH_COUNTED, PH_FREED, NPHASES };
static const int nphases = NSCENARIOS * NPHASES;

static void t_scenario(int k)
{
	const struct scenario *sc = &scenarios[k / NPHASES];
	int ok = 1, status;
	pid_t pid;

	if (k % NPHASES == PH_FREED) {
		ok = nested("free") == 0;
		ok &= ap_expect("aptest_nested_outer", 0, 0) && ap_expect("aptest_nested_inner", 0, 0);
		ksft_test_result(ok, "%s: freed, 0/0 at both call sites\n", sc->name);
		return;
	}
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0)
		_exit(nested("start") ? 1 : 0);

	/* The child's outer alloc_hooks() set its tag and the run stopped. */
	ok &= nested("outer") == 0;
	ok &= do_switches(sc->after_outer) == 0;
	ok &= nested("inner") == 0;
	ok &= do_switches(sc->after_inner) == 0;
	ok &= nested("pages") == 0;
	ok &= waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	ok &= ap_expect("aptest_nested_outer", 0, 0);
	ok &= sc->counted_inner ? ap_expect("aptest_nested_inner", run_bytes, 1)
				: ap_expect("aptest_nested_inner", 0, 0);
	ksft_test_result(ok, "%s: counted %s\n", sc->name,
			 sc->counted_inner ? "at the inner call site" : "nowhere");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_scenario, &nphases),
	AP_STEP(t_unload),
};

int main(void)
{
	char buf[32];

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	run_bytes = ap_read_file(NESTED, buf, sizeof(buf)) > 0 ? atoll(buf) : 0;
	if (run_bytes <= 0)
		ksft_exit_fail_msg("cannot read %s\n", NESTED);
	AP_RUN_STEPS(steps);
	ksft_finished();
}
