// SPDX-License-Identifier: GPL-2.0
/*
 * control_test: allocprof's per-call-site control in debugfs, with dynamic
 * debug's grammar, and the stacks and ages of the watched call sites.
 *
 * - control lists every call site of /proc/allocinfo with its flags;
 * - every bad command fails with EINVAL, names the bad word in the kernel
 *   log and changes nothing (also when another command of the same write
 *   is good);
 * - p off: new allocations are not counted; those counted before leave
 *   their figures exactly when freed; the call site is accurate:no in
 *   /proc/allocinfo 2.0 from then on;
 * - s: one tagged helper called from two functions shows two chains, each
 *   with its own exact bytes and calls, the pid and name of this process,
 *   its caller in its frames; every chain goes when its memory is freed;
 *   the chains of every test call site (pages, splits, partial frees,
 *   bulk, percpu, vmalloc) add up to the call site's figures exactly;
 * - a: ages move to older power-of-two buckets as time passes.
 *
 * Expected bytes come from the kernel (the test module's "sites" and
 * "callers" files, /sys/kernel/slab), as in the other tests.
 */
#include <libgen.h>
#include <sys/stat.h>

#include "allocprof_lib.h"

#define CONTROL AP_CONTROL
#define AGES "/sys/kernel/debug/allocprof/ages"
#define STACKS AP_STACKS
#define CALLERS AP_TESTDIR "/callers"

/* A bad command and the word its message must name. */
static const struct {
	const char *command;
	const char *word;
} bad_commands[] = {
	{ "fuc aptest_kmalloc_100 +p", "'fuc'" },
	{ "class foo +p", "'class'" },
	{ "module allocprof_test +x", "'x'" },
	{ "module allocprof_test p", "'p'" },
	{ "module allocprof_test", "'allocprof_test'" },
	{ "module +p", "'module'" },
	{ "func aptest_kmalloc_100 +", "'+'" },
	{ "line 10-5 +p", "'10-5'" },
	{ "line abc +p", "'abc'" },
	{ "line 5-x +p", "'x'" },
	{ "func a func b +p", "'func'" },
	{ "file \"allocprof_test.c +p", "unclosed quote" },
	{ "module allocprof_test +s; bogus x -p", "'bogus'" },
	{ "module allocprof_test -p\nfunc aptest_kmalloc_8 =pq", "'q'" },
};

/* Writes a command; 0 or the errno of the write. */
static int control(const char *command)
{
	int fd = open(CONTROL, O_WRONLY), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, command, strlen(command)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* The flags of the test module's call site func in the control file. */
static int flags_of(const char *func, char *flags, size_t size)
{
	char tail[96], *buf = ap_slurp(CONTROL, NULL), *line, *save = NULL;
	int found = 0;

	if (!buf)
		return 0;
	snprintf(tail, sizeof(tail), " [allocprof_test]%s =", func);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(line, tail);

		if (at) {
			snprintf(flags, size, "%s", at + strlen(tail));
			found++;
		}
	}
	free(buf);
	return found == 1;
}

static int flags_are(const char *func, const char *want)
{
	char flags[8] = "";

	if (flags_of(func, flags, sizeof(flags)) && !strcmp(flags, want))
		return 1;
	ksft_print_msg("%s: flags '%s', expected '%s'\n", func, flags, want);
	return 0;
}

/* Lines of a file that do not start with '#'. */
static int count_lines(const char *path, const char *with)
{
	char *buf = ap_slurp(path, NULL), *line, *save = NULL;
	int n = 0;

	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#' && strncmp(line, "allocinfo", 9) && (!with || strstr(line, with)))
			n++;
	free(buf);
	return n;
}

/* The figures of func's age bucket label ("2-4s") in the ages file. */
static int age_of(const char *func, const char *bucket, long long *bytes,
		  unsigned long long *calls)
{
	char tail[128], *buf = ap_slurp(AGES, NULL), *line, *save = NULL;
	int found = 0;

	*bytes = 0;
	*calls = 0;
	if (!buf)
		return -1;
	snprintf(tail, sizeof(tail), " [allocprof_test] func:%s age:%s", func, bucket);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t l = strlen(line), t = strlen(tail);

		if (line[0] != '#' && l >= t && !strcmp(line + l - t, tail) &&
		    sscanf(line, "%lld %llu", bytes, calls) == 2)
			found++;
	}
	free(buf);
	return found;
}

static int age_is(const char *func, const char *bucket, long long bytes,
		  unsigned long long calls)
{
	long long b;
	unsigned long long c;
	int found = age_of(func, bucket, &b, &c);

	if ((calls == 0 && found == 0) || (found == 1 && b == bytes && c == calls))
		return 1;
	ksft_print_msg("%s age:%s: %d line(s), %lld bytes %llu calls; expected %lld %llu\n",
		       func, bucket, found, b, c, bytes, calls);
	return 0;
}

/* The stacks file's statistics say no allocation went untracked. */
static int nothing_untracked(void)
{
	char *buf = ap_slurp(STACKS, NULL);
	int ok = buf && strstr(buf, "; not tracked: 0 (table full), 0 (nested)\n");

	if (!ok)
		ksft_print_msg("statistics: %.200s\n", buf ? buf : "(unreadable)");
	free(buf);
	return ok;
}

/* The two-caller helper: a and b chains with exact figures, own frames. */
static void check_two_callers(long long unit, const char *comm)
{
	struct ap_chain c[4];
	int n, ia, ib;

	ksft_test_result(control("func aptest_helper +s") == 0 && flags_are("aptest_helper", "ps"),
			 "func aptest_helper +s: flags ps\n");
	ap_write_file(CALLERS, "a 5", 3);
	ap_write_file(CALLERS, "b 3", 3);
	ksft_test_result(ap_expect("aptest_helper", 8 * unit, 8),
			 "allocinfo: one call site, 8 allocations\n");
	n = ap_chains_of("aptest_helper", c, 4);
	ia = n == 2 && c[0].calls == 5 ? 0 : 1;
	ib = 1 - ia;
	ksft_test_result(n == 2 && c[ia].bytes == 5 * unit && c[ia].calls == 5 &&
			 c[ib].bytes == 3 * unit && c[ib].calls == 3,
			 "stacks: two chains, %lld/5 and %lld/3 (%d chains)\n", 5 * unit, 3 * unit, n);
	ksft_test_result(n == 2 && strstr(c[ia].frames, "aptest_from_a+") &&
			 !strstr(c[ia].frames, "aptest_from_b+") &&
			 strstr(c[ib].frames, "aptest_from_b+") &&
			 !strstr(c[ib].frames, "aptest_from_a+") &&
			 strstr(c[ia].frames, "aptest_helper+"),
			 "stacks: each chain shows its own caller\n");
	ksft_test_result(n == 2 && c[ia].pid == getpid() && c[ib].pid == getpid() &&
			 !strcmp(c[ia].comm, comm) && !strcmp(c[ib].comm, comm),
			 "stacks: pid %d comm %s of the allocating task\n", getpid(), comm);
	if (n == 2)
		ksft_print_msg("chain a: %s\n%s", c[ia].first, c[ia].frames);

	/* -s: live chains stay until freed, new allocations get none. */
	control("func aptest_helper -s");
	ap_write_file(CALLERS, "a 2", 3);
	n = ap_chains_of("aptest_helper", c, 4);
	ksft_test_result(flags_are("aptest_helper", "p") &&
			 ap_expect("aptest_helper", 10 * unit, 10) && n == 2 &&
			 c[0].calls + c[1].calls == 8,
			 "-s: new allocations counted, not watched; old chains stay\n");
	ap_write_file(CALLERS, "free", 4);
	ksft_test_result(ap_expect("aptest_helper", 0, 0) &&
			 ap_chains_of("aptest_helper", c, 4) == 0,
			 "free: the call site at 0/0, its chains gone\n");
}

/* p off: new allocations not counted, old ones exact when freed. */
static void check_profile_flag(void)
{
	const char *site = "kmalloc_100", *func = "aptest_kmalloc_100";
	unsigned long long calls;
	long long unit;

	if (ap_testsite_unit(site, &unit, &calls))
		unit = -1;
	ap_test_alloc(site, 4);
	ksft_test_result(!ap_site("allocprof_test", func).inaccurate &&
			 control("module allocprof_test func aptest_kmalloc_100 -p") == 0 &&
			 flags_are(func, "_") && ap_site("allocprof_test", func).inaccurate,
			 "-p: flags _, accurate:no from now on\n");
	ap_test_alloc(site, 6);
	ksft_test_result(ap_expect(func, 4 * unit, 4), "-p: 6 new allocations not counted\n");
	ap_test_free_n(site, 6);
	ksft_test_result(ap_expect(func, 4 * unit, 4), "-p: freeing them changes nothing\n");
	ap_test_alloc(site, 2);
	ksft_test_result(control("func aptest_kmalloc_100 +p") == 0 && flags_are(func, "p"),
			 "+p: flags p\n");
	ap_test_alloc(site, 3);
	ksft_test_result(ap_expect(func, 7 * unit, 7), "+p: counted again\n");
	ap_test_free(site);
	ksft_test_result(ap_expect(func, 0, 0) && ap_site("allocprof_test", func).inaccurate &&
			 !ap_site("allocprof_test", "aptest_kmalloc_3000").inaccurate,
			 "all freed: 0/0, exactly; still accurate:no, its neighbour not\n");
}

/* Every test call site with s: its chains add up to its figures. */
static int check_all_sites(void)
{
	struct ap_testsite sites[32];
	int i, n = ap_testsites(sites, 32), ok = n > 0;

	ok &= control("module allocprof_test +s") == 0;
	for (i = 0; i < n; i++) {
		ap_test_alloc(sites[i].name, 2);
		ap_test_free_n(sites[i].name, 1);
	}
	for (i = 0; ok && i < n; i++) {
		char func[48];
		long long unit, bytes;
		unsigned long long ucalls, calls;
		struct ap_fig f;
		long live = ap_testsite_live(sites[i].name);

		snprintf(func, sizeof(func), "aptest_%.31s", sites[i].name);
		f = ap_site("allocprof_test", func);
		if (ap_unit(&sites[i], &unit, &ucalls) || live <= 0 ||
		    ap_chain_sum(func, &bytes, &calls) <= 0 || f.found != 1 ||
		    f.bytes != bytes || f.calls != calls ||
		    bytes != live * unit || calls != live * ucalls) {
			ksft_print_msg("%s: chains %lld/%llu, allocinfo %lld/%llu, %ld live of %lld\n",
				       func, bytes, calls, f.bytes, f.calls, live, unit);
			ok = 0;
		}
	}
	ok &= nothing_untracked();
	for (i = 0; i < n; i++)
		ap_test_free(sites[i].name);
	for (i = 0; ok && i < n; i++) {
		char func[48];
		long long bytes;
		unsigned long long calls;

		snprintf(func, sizeof(func), "aptest_%.31s", sites[i].name);
		if (ap_chain_sum(func, &bytes, &calls) != 0 || !ap_expect(func, 0, 0)) {
			ksft_print_msg("%s: chains left after the frees\n", func);
			ok = 0;
		}
	}
	ok &= control("module allocprof_test -s") == 0;
	return ok;
}

/* a: ages move to older buckets as time passes. */
static void check_ages(void)
{
	const char *site = "kmalloc_1000", *func = "aptest_kmalloc_1000";
	unsigned long long calls;
	long long unit;

	if (ap_testsite_unit(site, &unit, &calls))
		unit = -1;
	ksft_test_result(control("func aptest_kmalloc_1000 +a") == 0 && flags_are(func, "pa"),
			 "+a: flags pa\n");
	ap_test_alloc(site, 3);
	ksft_test_result(age_is(func, "0-1s", 3 * unit, 3), "3 new allocations: age 0-1s\n");
	sleep(3);
	ap_test_alloc(site, 2);
	ksft_test_result(age_is(func, "2-4s", 3 * unit, 3) && age_is(func, "0-1s", 2 * unit, 2),
			 "3 s later: 3 in 2-4s, 2 new in 0-1s\n");
	sleep(5);
	ksft_test_result(age_is(func, "8-16s", 3 * unit, 3) && age_is(func, "4-8s", 2 * unit, 2) &&
			 age_is(func, "2-4s", 0, 0) && age_is(func, "0-1s", 0, 0),
			 "5 s later: 3 in 8-16s, 2 in 4-8s\n");
	ap_test_free_n(site, 2);
	ksft_test_result(age_is(func, "4-8s", 0, 0) && age_is(func, "8-16s", 3 * unit, 3),
			 "the 2 newest freed: their bucket is gone\n");
	ap_test_free(site);
	ksft_test_result(age_is(func, "8-16s", 0, 0) && ap_expect(func, 0, 0),
			 "all freed: no ages, 0/0\n");
	control("func aptest_kmalloc_1000 -a");
}

int main(int argc, char **argv)
{
	char *before, *after, comm[16], big[5000];
	struct ap_testsite helper[3];
	unsigned long long calls;
	long long unit;
	struct stat st;
	unsigned int i;
	int n;

	(void)argc;
	ksft_print_header();
	if (ap_builtin_profiler())
		ksft_exit_skip("upstream's built-in profiler has no per-site control\n");
	/* Checks: start, bad commands, matching, p, two callers, all sites, ages, end. */
	ksft_set_plan(4 + 2 * ARRAY_SIZE(bad_commands) + 6 + 6 + 7 + 2 + 6 + 1);
	/* Format 2.0, the test module loaded after allocprof: its sites accurate. */
	ap_sh("rmmod allocprof_test 2>/dev/null");
	if (ap_load("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	snprintf(comm, sizeof(comm), "%s", basename(argv[0]));

	ksft_test_result(stat(CONTROL, &st) == 0 && (st.st_mode & 0777) == 0600 &&
			 stat(STACKS, &st) == 0 && (st.st_mode & 0777) == 0400 &&
			 stat(AGES, &st) == 0 && (st.st_mode & 0777) == 0400,
			 "control 0600, stacks and ages 0400\n");
	n = count_lines(CONTROL, " =p");
	ksft_test_result(n > 0 && n == count_lines(CONTROL, NULL) &&
			 n == count_lines(AP_ALLOCINFO, NULL),
			 "control lists every call site of allocinfo (%d), all =p\n", n);
	ksft_test_result(count_lines(CONTROL, " [allocprof_test]") ==
			 count_lines(AP_ALLOCINFO, " [allocprof_test] ") &&
			 count_lines(CONTROL, " [vmlinux]") == count_lines(AP_ALLOCINFO, NULL) -
			 count_lines(AP_ALLOCINFO, "] func:"),
			 "module and vmlinux call sites as in allocinfo\n");
	ksft_test_result(ap_open_as_nobody(CONTROL, O_RDONLY) == EACCES,
			 "user nobody cannot open control\n");

	/* Bad commands: EINVAL, a message with the bad word, nothing changed. */
	ap_sh("dmesg -c >/dev/null");
	before = ap_slurp(CONTROL, NULL);
	for (i = 0; i < ARRAY_SIZE(bad_commands); i++) {
		int err = control(bad_commands[i].command);

		after = ap_slurp(CONTROL, NULL);
		ksft_test_result(err == EINVAL && before && after && !strcmp(before, after),
				 "bad command '%s': EINVAL (%s), nothing changed\n",
				 bad_commands[i].command, strerror(err));
		free(after);
		ksft_test_result(ap_sh("dmesg -c | grep -q -F -e \"%s\"", bad_commands[i].word) == 0,
				 "bad command: the kernel log names %s\n", bad_commands[i].word);
	}
	memset(big, ' ', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 4, "-p", 2);
	after = ap_slurp(CONTROL, NULL);
	ksft_test_result(control(big) == E2BIG && after && !strcmp(before, after),
			 "a write of %zu bytes: E2BIG, nothing changed\n", sizeof(big) - 1);
	free(after);
	ksft_test_result(control("# only a comment\n\n ; ") == 0 &&
			 (after = ap_slurp(CONTROL, NULL)) && !strcmp(before, after),
			 "a write of comments and blanks changes nothing\n");
	free(after);

	/* Matching: globs, base names, line ranges, several commands. */
	ksft_test_result(control("module no_such_module +s") == 0 &&
			 (after = ap_slurp(CONTROL, NULL)) && !strcmp(before, after) &&
			 ap_sh("grep -q '^# tracked: .*, 0 bytes;' " STACKS) == 0,
			 "a command that matches nothing succeeds, changes nothing, allocates no table\n");
	free(after);
	ksft_test_result(control("file allocprof_test.c func aptest_k*_8 line 1-999999 +s") == 0 &&
			 flags_are("aptest_kmalloc_8", "ps") && flags_are("aptest_kmalloc_100", "p") &&
			 flags_are("aptest_kmalloc_1000", "p"),
			 "file (base name), func glob, line range: one call site\n");
	ksft_test_result(control("# two commands\nfunc aptest_kmalloc_8 =_; func 'aptest_kmalloc_1?00' -p") == 0 &&
			 flags_are("aptest_kmalloc_8", "_") && flags_are("aptest_kmalloc_1000", "_") &&
			 flags_are("aptest_kmalloc_3000", "p"),
			 "two commands in one write, quoted glob with ?\n");
	ksft_test_result(control("module allocprof_tes? =p") == 0 &&
			 (after = ap_slurp(CONTROL, NULL)) && !strcmp(before, after),
			 "module glob =p: back to the start\n");
	free(after);

	check_profile_flag();

	if (ap_testsites_of(CALLERS, helper, 3) != 3 || ap_unit(&helper[0], &unit, &calls)) {
		ksft_print_msg("cannot read the test module's callers file\n");
		unit = -1;
	}
	check_two_callers(unit, comm);

	ksft_test_result(check_all_sites(), "s on every test call site: chains add up exactly\n");
	ksft_test_result(nothing_untracked(), "no allocation went untracked\n");

	check_ages();

	ksft_test_result((after = ap_slurp(CONTROL, NULL)) && !strcmp(before, after),
			 "every flag back as it was\n");
	free(after);
	free(before);
	ap_sh("rmmod allocprof_test; rmmod allocprof");
	ksft_finished();
}
