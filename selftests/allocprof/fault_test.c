// SPDX-License-Identifier: GPL-2.0
/*
 * fault_test: fault injection by call site, the control file's f flag.
 *
 * - every allocator family (kmalloc, kmem_cache, pages, bulk pages, bulk
 *   objects, vmalloc, percpu, kvmalloc falling back to vmalloc): "+f interval=1 times=3" on a test call site
 *   fails exactly the next 3 allocations there (the test module's write
 *   fails with ENOMEM), the 4th succeeds, the site's figures count only
 *   that one, the faults file says failed:3 asked:4 (a bulk of pages may
 *   ask again, after its one failure-free call); a call site without f
 *   allocated between them is unaffected; -f ends it;
 * - a kvmalloc() whose kmalloc try is asked is one decision with its
 *   vmalloc fallback: times=3 fails exactly 3 calls;
 * - a kvrealloc() of a kmalloc()ed object, from C or as a Rust KVVec's
 *   growth (allocprof_rust_test), is one decision with its krealloc try
 *   and its kvmalloc fallback: times=1 fails exactly one call;
 * - __GFP_NOFAIL allocations at a site with f are never failed, nor asked;
 * - with profiling off (vm.mem_profiling=0) nothing fails;
 * - the knobs, as fault-injection.rst defines them: interval=3 fails every
 *   third allocation; space=S spares allocations while S exceeds their
 *   size (the kmalloc cache's object size, from /sys/kernel/slab);
 *   times=-1 has no limit; probability=0 fails none; probability=50 fails
 *   some of 200 and not all, exactly as many as the faults file counts;
 * - verbose=0 writes no report, 1 the report without a call chain, 2 with
 *   the call chain through the allocating function;
 * - reports are rate-limited over all call sites, as the faults file's
 *   header says (at most B in M ms): after a quiet window, B + 2 failures
 *   in a row give B reports;
 * - bad knobs and knobs without f fail with EINVAL, a message naming the
 *   word, and change nothing; f for more call sites than the fault table
 *   holds fails with ENOSPC and changes nothing;
 * - f on allocprof's own call sites (module allocprof), by module, function
 *   or file, alone or beside a good command, fails with EPERM, the log says
 *   why, and changes nothing; the control file takes commands after it;
 * - a module that unloads leaves no fault entry behind;
 * - the error path of a module's load, found by control= at load:
 *   allocprof_test2's third page allocation fails, its load fails with
 *   ENOMEM and what it allocated stays exact; without control= it loads.
 *
 * Expected figures come from the kernel (the test module's "sites" file,
 * /sys/kernel/slab).  The upstream flavour has no control file: scripts/check
 * does not run this program there.
 */
#include "allocprof_lib.h"

#define FAULTS "/sys/kernel/debug/allocprof/faults"
#define OTHER "kmalloc_8"

/* The test call sites of each allocator family. */
static const char *const families[] = {
	"kmalloc_100", "cache_alloc", "alloc_pages_0", "pages_bulk",
	"cache_bulk", "vmalloc_5p", "percpu_48", "kvmalloc_vmalloc",
};
static const int nr_families = ARRAY_SIZE(families);

/* A bad command and the word its message must name. */
static const struct {
	const char *command;
	const char *word;
} bad_commands[] = {
	{ "func aptest_kmalloc_100 +f interval=0", "bad value '0' for 'interval'" },
	{ "func aptest_kmalloc_100 +f probability=101", "bad value '101' for 'probability'" },
	{ "func aptest_kmalloc_100 +f verbose=3", "bad value '3' for 'verbose'" },
	{ "func aptest_kmalloc_100 +f times=-2", "bad value '-2' for 'times'" },
	{ "func aptest_kmalloc_100 +f space=x", "bad value 'x' for 'space'" },
	{ "func aptest_kmalloc_100 +f bogus=1", "unknown knob 'bogus'" },
	{ "func aptest_kmalloc_100 +f interval", "'interval' after the flags is not a knob" },
	{ "func aptest_kmalloc_100 -f interval=2", "knobs are for f: '-f'" },
	{ "func aptest_kmalloc_100 +p interval=2", "knobs are for f: '+p'" },
	{ "func aptest_kmalloc_100 +f times=1 times=2", "'times' given twice" },
	{ "func aptest_kmalloc_100 interval=2 +f", "unknown keyword 'interval=2'" },
};
static const int nr_bad = ARRAY_SIZE(bad_commands);

/* The control file at the start. */
static char *before;

/* Writes a command; 0 or the errno of the write. */
static int control(const char *fmt, const char *arg)
{
	char cmd[512];
	int err;

	snprintf(cmd, sizeof(cmd), fmt, arg);
	err = ap_write_file(AP_CONTROL, cmd, strlen(cmd));
	return -err;
}

/* The faults file's figures of the call site whose line holds @at: 0 if it has one. */
static int faults_at(const char *at, unsigned long long *failed, unsigned long long *asked)
{
	char *buf = ap_slurp(FAULTS, NULL), *line, *save = NULL;
	int found = -1;

	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		if (strstr(line, at) &&
		    sscanf(line, "failed:%llu asked:%llu", failed, asked) == 2)
			found = 0;
	free(buf);
	return found;
}

/* The faults file's figures of a test site: 0 if it has a line. */
static int faults_of(const char *site, unsigned long long *failed, unsigned long long *asked)
{
	char func[64];

	snprintf(func, sizeof(func), " func:aptest_%s ", site);
	return faults_at(func, failed, asked);
}

/* Lines of the faults file (not the header). */
static int fault_lines(void)
{
	return ap_grep_file(FAULTS, "^#", AP_GREP_INVERT, NULL);
}

/* n single allocations at site: 's' for a success, 'f' for ENOMEM. */
static void pattern(const char *site, int n, char *out)
{
	int i;

	for (i = 0; i < n; i++) {
		int err = ap_test_alloc(site, 1);

		out[i] = !err ? 's' : err == -ENOMEM ? 'f' : '?';
	}
	out[n] = '\0';
}

/*
 * The site's figures are n live entries' worth (a batch site's one
 * allocation makes several), and the test module holds n.
 */
static int live_exact(const char *site, long n)
{
	long long bytes;
	unsigned long long calls;
	char func[64];

	if (ap_testsite_unit(site, &bytes, &calls))
		return 0;
	snprintf(func, sizeof(func), "aptest_%s", site);
	return ap_testsite_live(site) == n && ap_expect(func, bytes * n, calls * n);
}

static void t_family(int i)
{
	const char *site = families[i];
	int bulk_pages = !strcmp(site, "pages_bulk");
	unsigned long long failed = 0, asked = 0;
	char got[8], other[2], func[64];
	long live;
	int ok;

	snprintf(func, sizeof(func), "aptest_%s", site);
	ok = control("func aptest_%s +f interval=1 times=3 verbose=0", site) == 0 &&
	     ap_flags_are(func, "pf");
	pattern(site, 2, got);
	pattern(OTHER, 1, other);
	pattern(site, 2, got + 2);
	/* One allocation's entries: 1, or a batch site's batch. */
	live = ap_testsite_live(site);
	ok = ok && !strcmp(got, "fffs") && !strcmp(other, "s") &&
	     faults_of(site, &failed, &asked) == 0 && failed == 3 &&
	     (bulk_pages ? asked >= 4 : asked == 4) && live > 0 &&
	     (strstr(site, "bulk") || live == 1) && live_exact(site, live) && live_exact(OTHER, 1);
	ok = ok && control("func aptest_%s -f", site) == 0 && faults_of(site, &failed, &asked) &&
	     !ap_test_free(site) && !ap_test_free(OTHER) && live_exact(site, 0) &&
	     live_exact(OTHER, 0) && ap_control_unchanged(before);
	ksft_test_result(ok, "%s +f times=3: %s (expected fffs), failed:%llu asked:%llu, %s unaffected, figures exact\n",
			 site, got, failed, asked, OTHER);
}

/*
 * A kvmalloc() whose kmalloc try is asked is one decision with its vmalloc
 * fallback: times=3 fails 3 calls, not 1 (the try and the fallback of the
 * first, then the try of the second, served by the fallback).
 */
static void t_kvmalloc(int i)
{
	unsigned long long failed = 0, asked = 0;
	char got[5];
	int k;

	(void)i;
	control("func aptest_%s +f interval=1 times=3 verbose=0", "kvmalloc_64k");
	for (k = 0; k < 4; k++) {
		int err = ap_write_file(AP_TESTDIR "/kvmalloc", "1", 1);

		got[k] = !err ? 's' : err == -ENOMEM ? 'f' : '?';
	}
	got[4] = '\0';
	ksft_test_result(!strcmp(got, "fffs") && faults_of("kvmalloc_64k", &failed, &asked) == 0 &&
			 failed == 3 && asked == 4 &&
			 control("func aptest_%s -f", "kvmalloc_64k") == 0 &&
			 ap_expect("aptest_kvmalloc_64k", 0, 0) && ap_control_unchanged(before),
			 "kvmalloc() +f times=3: %s (expected fffs), failed:%llu asked:%llu, one decision a call\n",
			 got, failed, asked);
}

/*
 * A kvrealloc() of a kmalloc()ed object is one decision with its krealloc
 * try and its kvmalloc fallback: times=1 fails exactly one call (were the
 * try and the fallback asked apart, the fallback would serve the call
 * whose try failed, and no call would fail).
 */
static void t_kvrealloc(int i)
{
	const char *site = "kvrealloc_kmalloc";
	unsigned long long failed = 0, asked = 0;
	char got[4];
	int ok;

	(void)i;
	ok = control("func aptest_%s +f interval=1 times=1 verbose=0", site) == 0;
	pattern(site, 3, got);
	/* The figures read whatever the pattern, for the message. */
	ok = faults_of(site, &failed, &asked) == 0 && ok;
	ok = ok && !strcmp(got, "fss") && failed == 1 && asked == 3 && live_exact(site, 2);
	ok = control("func aptest_%s -f", site) == 0 && ok && !ap_test_free(site) &&
	     live_exact(site, 0) && ap_control_unchanged(before);
	ksft_test_result(ok, "kvrealloc() +f times=1: %s (expected fss), failed:%llu asked:%llu, one decision a call\n",
			 got, failed, asked);
}

#define RUST_MODULE "allocprof_rust_test"
#define RUST_TRIGGER "/sys/kernel/debug/" RUST_MODULE "/trigger"

/*
 * The same for a Rust KVVec's growth (every KVVec and KVBox growth is a
 * kvrealloc()): allocprof_rust_test's kvgrow grows one on one line, whose
 * call site exists once it has allocated; +f times=1 there fails exactly
 * one of three kvgrow writes.
 */
/*
 * The number after the last "<module>: kvgrow-site " of the kernel log, or
 * -1 (dmesg | grep -o '<module>: kvgrow-site [0-9]*' | tail -n 1 | cut -d' ' -f3).
 */
static long kvgrow_line(void)
{
	static const char text[] = RUST_MODULE ": kvgrow-site ";
	char last[512], *at = NULL, *p;

	if (ap_klog_last(text, AP_GREP_FIXED, last, sizeof(last)) <= 0)
		return -1;
	for (p = strstr(last, text); p; p = strstr(p + 1, text))
		at = p + strlen(text);
	return at && *at >= '0' && *at <= '9' ? atol(at) : -1;
}

static void t_kvvec(int i)
{
	unsigned long long failed = 0, asked = 0;
	char got[4], at[64], num[24];
	long line;
	int ok, k;

	(void)i;
	ok = !ap_modprobe(RUST_MODULE, NULL) && !ap_write_file(RUST_TRIGGER, "kvgrow", 6);
	line = kvgrow_line();
	snprintf(at, sizeof(at), "/" RUST_MODULE ".rs:%ld ", line);
	snprintf(num, sizeof(num), "%ld", line);
	ok = ok && line > 0 &&
	     control("module " RUST_MODULE " line %s +f interval=1 times=1 verbose=0", num) == 0;
	for (k = 0; k < 3; k++) {
		int err = ap_write_file(RUST_TRIGGER, "kvgrow", 6);

		got[k] = !err ? 's' : err == -ENOMEM ? 'f' : '?';
	}
	got[3] = '\0';
	ok = faults_at(at, &failed, &asked) == 0 && ok;
	ok = ok && !strcmp(got, "fss") && failed == 1;
	ok = control("module " RUST_MODULE " line %s -f", num) == 0 && ok &&
	     !ap_rmmod(RUST_MODULE) && fault_lines() == 0;
	ksft_test_result(ok, "KVVec growth (kvrealloc) at %s line %ld +f times=1: %s (expected fss), failed:%llu asked:%llu\n",
			 RUST_MODULE ".rs", line, got, failed, asked);
}

static void t_nofail(int i)
{
	unsigned long long failed = 1, asked = 1;
	char got[4];

	(void)i;
	control("func aptest_%s +f verbose=0", "kmalloc_nofail");
	pattern("kmalloc_nofail", 3, got);
	ksft_test_result(!strcmp(got, "sss") && faults_of("kmalloc_nofail", &failed, &asked) == 0 &&
			 failed == 0 && asked == 0 && live_exact("kmalloc_nofail", 3) &&
			 control("func aptest_%s -f", "kmalloc_nofail") == 0 &&
			 !ap_test_free("kmalloc_nofail") && ap_control_unchanged(before),
			 "__GFP_NOFAIL at a site with f: %s, failed:%llu asked:%llu\n", got, failed, asked);
}

static void t_profiling_off(int i)
{
	unsigned long long failed = 1, asked = 1;
	char got[3];
	int ok;

	(void)i;
	ok = control("func aptest_%s +f verbose=0", "kmalloc_100") == 0 &&
	     !ap_write_file(AP_SYSCTL, "0", 1);
	pattern("kmalloc_100", 2, got);
	ok = ok && !ap_write_file(AP_SYSCTL, "1", 1) && !strcmp(got, "ss") &&
	     faults_of("kmalloc_100", &failed, &asked) == 0 && failed == 0 && asked == 0;
	ap_test_free("kmalloc_100");
	ok = ok && control("func aptest_%s =p", "kmalloc_100") == 0;
	ksft_test_result(ok, "vm.mem_profiling=0: %s at a site with f, failed:%llu asked:%llu\n", got,
			 failed, asked);
}

/* A knob's pattern over n single allocations at kmalloc_100, then -f. */
static void knob_pattern(const char *knobs, int n, char *got, unsigned long long *failed,
			 unsigned long long *asked)
{
	control("func aptest_kmalloc_100 +f %s", knobs);
	pattern("kmalloc_100", n, got);
	if (faults_of("kmalloc_100", failed, asked))
		*failed = *asked = ~0ULL;
	control("func aptest_kmalloc_100 =%s", "p");
	ap_test_free("kmalloc_100");
}

static void t_interval(int i)
{
	unsigned long long failed, asked;
	char got[16];

	(void)i;
	knob_pattern("interval=3 verbose=0", 9, got, &failed, &asked);
	ksft_test_result(!strcmp(got, "ssfssfssf") && failed == 3 && asked == 9 &&
			 ap_control_unchanged(before),
			 "interval=3: %s (expected ssfssfssf), failed:%llu asked:%llu\n", got, failed,
			 asked);
}

static void t_space(int i)
{
	long long size = ap_slab_size(ap_kmalloc_cache(100)), space = 2 * size + size / 2;
	unsigned long long failed, asked;
	char got[8], want[8], knobs[64];
	int k;

	(void)i;
	/* should_fail_ex(): spared while the space left exceeds the size. */
	for (k = 0; k < 6; k++) {
		want[k] = space > size ? 's' : 'f';
		if (space > size)
			space -= size;
	}
	want[6] = '\0';
	snprintf(knobs, sizeof(knobs), "space=%lld verbose=0", 2 * size + size / 2);
	knob_pattern(knobs, 6, got, &failed, &asked);
	ksft_test_result(size > 0 && !strcmp(got, want) && ap_control_unchanged(before),
			 "%s (object size %lld): %s (expected %s), failed:%llu\n", knobs, size, got,
			 want, failed);
}

static void t_probability(int i)
{
	unsigned long long failed0, asked0, failed, asked;
	char got0[8], got[201];
	int n = 0, k;

	(void)i;
	knob_pattern("probability=0 verbose=0", 5, got0, &failed0, &asked0);
	knob_pattern("probability=50 verbose=0", 200, got, &failed, &asked);
	for (k = 0; k < 200; k++)
		n += got[k] == 'f';
	/* All 200 the same by chance: 2^-199. */
	ksft_test_result(!strcmp(got0, "sssss") && failed0 == 0 && asked0 == 5 && n > 0 && n < 200 &&
			 failed == (unsigned long long)n && asked == 200 && !strchr(got, '?') &&
			 ap_control_unchanged(before),
			 "probability=0: %s; probability=50: %d of 200 failed, the faults file says %llu of %llu\n",
			 got0, n, failed, asked);
}

static void t_verbose(int i)
{
	static const char *const knobs[] = { "times=1 verbose=0", "times=1 verbose=1",
					     "times=1 verbose=2" };
	char cmd[128], got[3], report[160];
	int reported, stack, want_report = i > 0, want_stack = i > 1;

	snprintf(cmd, sizeof(cmd), "%s", knobs[i]);
	ap_klog_clear();
	knob_pattern(cmd, 2, got, &(unsigned long long){ 0 }, &(unsigned long long){ 0 });
	snprintf(report, sizeof(report), "failed a slab allocation of %lld bytes at ",
		 ap_slab_size(ap_kmalloc_cache(100)));
	reported = ap_klog_grep("FAULT_INJECTION: forcing a failure.", AP_GREP_FIXED, NULL) > 0 &&
		   ap_klog_grep("name allocprof, interval 1, probability 100, space 0, times 1",
				AP_GREP_FIXED, NULL) > 0 &&
		   ap_klog_grep2(report, AP_GREP_FIXED,
				 "allocprof_test.c:[0-9]* .allocprof_test. "
				 "func:aptest_kmalloc_100$", 0) > 0;
	stack = ap_klog_grep("Call Trace:", 0, NULL) > 0 &&
		ap_klog_grep(" aptest_kmalloc_100+", 0, NULL) > 0;
	ap_klog_clear();
	ksft_test_result(!strcmp(got, "fs") && reported == want_report && stack == want_stack,
			 "%s: %s, %s report, %s call chain\n", knobs[i], got,
			 reported ? "a" : "no", stack ? "a" : "no");
}
static const int nr_verbose = 3;

/*
 * The report limit, from the faults file's header: 0 and *burst, *ms if
 * it has one.
 */
static int report_limit(int *burst, int *ms)
{
	char *buf = ap_slurp(FAULTS, NULL), *line, *save = NULL;
	int found = -1;

	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "# reports: at most %d in %d ms", burst, ms) == 2)
			found = 0;
	free(buf);
	return found;
}

static void t_ratelimit(int i)
{
	int burst = -1, ms = -1, n, reports;
	unsigned long long failed, asked;
	char got[64], want[64];
	char knobs[64];

	(void)i;
	if (report_limit(&burst, &ms) || burst < 1 || burst + 2 >= (int)sizeof(got)) {
		ksft_test_result_fail("the faults file's header gives no report limit\n");
		return;
	}
	/* The window of t_verbose's reports ends. */
	usleep((ms + 500) * 1000);
	ap_klog_clear();
	n = burst + 2;
	snprintf(knobs, sizeof(knobs), "times=%d verbose=1", n);
	knob_pattern(knobs, n, got, &failed, &asked);
	memset(want, 'f', n);
	want[n] = '\0';
	reports = ap_klog_grep("FAULT_INJECTION: forcing a failure.", AP_GREP_FIXED, NULL);
	ap_klog_clear();
	ksft_test_result(!strcmp(got, want) && failed == (unsigned long long)n &&
			 reports == burst,
			 "%s: %d failures in a row, %d reports (the limit: %d in %d ms)\n", knobs,
			 (int)failed, reports, burst, ms);
}

static void t_bad(int i)
{
	int err;

	ap_klog_clear();
	err = control("%s", bad_commands[i].command);
	ksft_test_result(err == EINVAL && ap_control_unchanged(before) && ap_logged(bad_commands[i].word),
			 "'%s': EINVAL (%s), the log names %s, nothing changed\n",
			 bad_commands[i].command, strerror(err), bad_commands[i].word);
}

static void t_enospc(int i)
{
	int err;

	(void)i;
	ap_klog_clear();
	err = control("module vmlinux +f verbose=%s", "0");
	ksft_test_result(err == ENOSPC && ap_control_unchanged(before) && ap_logged("at most 256 can") &&
			 fault_lines() == 0,
			 "f for every vmlinux call site: ENOSPC (%s), the log says why, nothing changed\n",
			 strerror(err));
}

/*
 * Commands that would give f to allocprof's own call sites (module
 * allocprof: the copy of a control write's input, the parser's vectors,
 * the files' text), whole or by function, by file, and beside a good
 * command in the same write.
 */
static const char *const own_commands[] = {
	"module allocprof +f verbose=0",
	"func query::queries +f times=1 verbose=0",
	"file src/sys/debugfs.rs +f verbose=0",
	"func aptest_kmalloc_100 +f verbose=0; file 'src/*' =pf verbose=0",
};
static const int nr_own = ARRAY_SIZE(own_commands);

/*
 * f on allocprof's own call sites would fail its control writes, -f
 * included, until profiling is switched off: refused with EPERM, the log
 * says why, nothing is changed.  Where a write was taken, the next one is
 * tried and f is taken off again with profiling off, for the steps after.
 */
static void t_own(int i)
{
	int err, ok;

	ap_klog_clear();
	err = control("%s", own_commands[i]);
	ok = err == EPERM && ap_control_unchanged(before) && ap_logged("allocprof's own call sites") &&
	     fault_lines() == 0;
	if (!err) {
		int next = control("%s", "func aptest_kmalloc_8 +p");

		ksft_print_msg("'%s' was taken; the next control write: %s\n", own_commands[i],
			       next ? strerror(next) : "taken");
		ap_write_file(AP_SYSCTL, "0", 1);
		control("%s", "module allocprof -f; func aptest_kmalloc_100 -f");
		ap_write_file(AP_SYSCTL, "1", 1);
	}
	ksft_test_result(ok, "'%s': EPERM (%s), the log says why, nothing changed\n",
			 own_commands[i], strerror(err));
}

/* After them the control file takes commands: f on a test call site, then -f. */
static void t_own_after(int i)
{
	char got[3];
	int ok;

	(void)i;
	ok = control("func aptest_%s +f times=1 verbose=0", "kmalloc_100") == 0;
	pattern("kmalloc_100", 2, got);
	ok = ok && control("func aptest_%s -f", "kmalloc_100") == 0 && !strcmp(got, "fs") &&
	     !ap_test_free("kmalloc_100") && fault_lines() == 0 && ap_control_unchanged(before);
	ksft_test_result(ok, "after them control takes commands: kmalloc_100 +f times=1: %s (expected fs), -f\n",
			 got);
}

static void t_unload(int i)
{
	int ok;

	(void)i;
	ok = control("func aptest_%s +f verbose=0", "kmalloc_100") == 0 && fault_lines() == 1;
	ok = ok && !ap_rmmod("allocprof_test") && fault_lines() == 0 &&
	     !ap_modprobe("allocprof_test", NULL) && ap_flags_are("aptest_kmalloc_100", "p") &&
	     fault_lines() == 0;
	ksft_test_result(ok, "a module's unload leaves no fault entry; loaded again, its site is p\n");
	free(before);
	before = ap_slurp(AP_CONTROL, NULL);
}

/* allocprof_test2's load, with its error path taken by control= at load. */
#define TEST2_CONTROL "module allocprof_test2 func aptest2_alloc_pages_1 +f interval=3 times=1 verbose=1"

static void t_load_error_path(int i)
{
	int ok, failed_load, reported, err, fd;

	(void)i;
	ok = !ap_rmmod("allocprof") &&
	     !ap_insmod("allocprof", "control=\"" TEST2_CONTROL "\"");
	ap_klog_clear();
	/* finit_module(2) once: busybox's insmod tries init_module(2) after a failure. */
	fd = ap_module_fd("allocprof_test2");
	err = ap_finit(fd, "nr=3");
	close(fd);
	failed_load = err == -ENOMEM && !ap_module_loaded("allocprof_test2");
	reported = ap_klog_grep2("failed a page allocation of ", AP_GREP_FIXED,
				 "func:aptest2_alloc_pages_1$", 0) > 0;
	/* Three objects and two pages were handed to allocprof_test. */
	ok = ok && failed_load && reported &&
	     ap_expect_in("allocprof_test2", "aptest2_kmalloc_300",
			  3 * ap_slab_size(ap_kmalloc_cache(300)), 3) &&
	     ap_expect_in("allocprof_test2", "aptest2_alloc_pages_1", 2 * 2 * sysconf(_SC_PAGESIZE), 2);
	ok = ok && !ap_write_file(AP_TESTDIR "/adopted", "free", 4) &&
	     ap_site("allocprof_test2", "aptest2_alloc_pages_1").found == 0;
	ksft_test_result(ok, "control=\"%s\": allocprof_test2's load fails (%s), what it allocated is exact and freed\n",
			 TEST2_CONTROL, strerror(-err));
}

static void t_load_again(int i)
{
	int ok, fd = ap_module_fd("allocprof_test2");

	(void)i;
	ok = ap_load(NULL) == 0 && ap_finit(fd, "nr=3") == 0 &&
	     ap_expect_in("allocprof_test2", "aptest2_alloc_pages_1", 3 * 2 * sysconf(_SC_PAGESIZE), 3);
	close(fd);
	ap_rmmod("allocprof_test2");
	ok = ok && !ap_write_file(AP_TESTDIR "/adopted", "free", 4) && fault_lines() == 0;
	ksft_test_result(ok, "without control=, allocprof_test2 loads and allocates 3 times at each site\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_family, &nr_families),
	AP_STEP(t_kvmalloc),
	AP_STEP(t_kvrealloc),
	AP_STEP(t_kvvec),
	AP_STEP(t_nofail),
	AP_STEP(t_profiling_off),
	AP_STEP(t_interval),
	AP_STEP(t_space),
	AP_STEP(t_probability),
	AP_STEP_EACH(t_verbose, &nr_verbose),
	AP_STEP(t_ratelimit),
	AP_STEP_EACH(t_bad, &nr_bad),
	AP_STEP(t_enospc),
	AP_STEP_EACH(t_own, &nr_own),
	AP_STEP(t_own_after),
	AP_STEP(t_unload),
	AP_STEP(t_load_error_path),
	AP_STEP(t_load_again),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	before = ap_slurp(AP_CONTROL, NULL);
	AP_RUN_STEPS(steps);
	free(before);
	ap_unload_all();
	ksft_finished();
}
