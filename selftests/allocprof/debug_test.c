// SPDX-License-Identifier: GPL-2.0
/*
 * debug_test: debug=0|1 sets debug mode at load; any other value fails the
 * load with a message.  In debug mode vm.mem_profiling is read-only, and
 * what the profiler cannot count right is reported once per call chain,
 * with the chain, as "allocprof: ..." lines (no WARNING: the guest runner
 * fails on those):
 * - an allocation without an allocation tag (a _noprof function called
 *   without alloc_hooks());
 * - an object allocated where the slot holds a reference this load wrote
 *   (its free was not seen): made by the test module's forge file, which
 *   copies a live object's slot into the free objects of its slab;
 * - an object freed with a slot value allocprof never writes (an id no call
 *   site has, forged the same way): not subtracted, so its call site keeps
 *   the object's figures.
 * Tagged allocations are counted as usual, and an ordinary workload
 * produces no report of a missed free or a foreign slot.  Without debug
 * mode nothing is reported.
 *
 * On Linux 7.3's series (ap_kernel_keeps_refs()) the kernel keeps the
 * references and calls no hook for an allocation without a tag, so there
 * is nothing for allocprof to report of those three: the steps that make
 * them are skipped, saying so (CONFIG_MEM_ALLOC_PROFILING_DEBUG checks
 * the kernel's references there); debug mode there is the read-only
 * sysctl.
 *
 * Allocations over a live page reference are not made here: page
 * references live in the module's own array, which nothing outside it can
 * write, and the kernel sees every page free while a back end is
 * registered.
 */
#include <sys/stat.h>

#include "allocprof_lib.h"

#define PARAM "/sys/module/allocprof/parameters/debug"
#define UNTAGGED AP_TESTDIR "/untagged"
#define FORGE AP_TESTDIR "/forge"
#define FORGE_CACHE "allocprof_test_forge"
#define REPEAT 3
/* Tries of the forge's over-live run: its object may come from another slab. */
#define FORGE_TRIES 16

/* The reports' texts, as src/debug.rs writes them. */
#define OVERLIVE "allocprof: debug: object allocated over a live reference of call site "
#define FOREIGN "allocprof: debug: object freed with slot value "
#define CHAIN_LINE "allocprof:   "

static const char *const bad[] = {
	"debug=2", "debug=-1", "debug=01", "debug=yes", "debug=", "debug", "debug=1x", "debug=\\\"1 \\\"",
};
static const int nr_bad = ARRAY_SIZE(bad);

static const char *const kinds[] = { "kmalloc", "pages", "percpu" };

static int file_is(const char *path, const char *want)
{
	char buf[32];

	return ap_read_file(path, buf, sizeof(buf)) > 0 && !strcmp(buf, want);
}

static int untagged_allocs(void)
{
	unsigned int k;
	int ok = 1;

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		char cmd[32];

		snprintf(cmd, sizeof(cmd), "%s %d", kinds[k], REPEAT);
		ok &= ap_write_file(UNTAGGED, cmd, strlen(cmd)) == 0;
	}
	return ok;
}

/* Lines of the kernel log with pattern (grep -c). */
static long log_count(const char *pattern)
{
	return ap_klog_grep(pattern, 0, NULL);
}

/* Lines of the kernel log that contain text (grep -c -F). */
static long log_count_text(const char *text)
{
	return ap_klog_grep(text, AP_GREP_FIXED, NULL);
}

/*
 * Report lines that start with text, each followed within its call chain
 * by a frame of function: how many (0 if the lines are not there).
 */
static long reports_naming(const char *text, const char *function)
{
	char chain[128], *log = ap_klog(0), *line, *next;
	long n = 0;
	int after = 0;

	if (!log)
		return -1;
	snprintf(chain, sizeof(chain), "%s%s+", CHAIN_LINE, function);
	/* grep -A 16 -F text: each line with text and the 16 lines after it. */
	for (line = log; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		if (strstr(line, text))
			after = 16;
		else if (after > 0)
			after--;
		else
			continue;
		if (strstr(line, chain))
			n++;
	}
	free(log);
	return n;
}

/* Each untagged call site is named by exactly `want` report call chains. */
static int untagged_reported(long want)
{
	unsigned int k;
	int ok = 1;

	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		char pat[64];
		long n;

		snprintf(pat, sizeof(pat), CHAIN_LINE "aptest_untagged_%s+", kinds[k]);
		n = log_count(pat);
		if (n != want) {
			ksft_print_msg("%ld call chain(s) name aptest_untagged_%s, expected %ld\n", n,
				       kinds[k], want);
			ok = 0;
		}
	}
	return ok;
}

/* The forge file's figures: the over-live id and the foreign slot value. */
static int forge_read(unsigned long *id, unsigned long long *value)
{
	char buf[64];

	return ap_read_file(FORGE, buf, sizeof(buf)) > 0 &&
	       sscanf(buf, "overlive %lu foreign %llx", id, value) == 2;
}

/* One over-live run of the forge file; 0 or the errno of the last try. */
static int forge_overlive(void)
{
	int i, err = EAGAIN;

	for (i = 0; i < FORGE_TRIES && err == EAGAIN; i++)
		err = -ap_write_file(FORGE, "overlive", 8);
	if (err)
		ksft_print_msg("forge overlive: %s\n", strerror(err));
	return err;
}

/* The forge's call sites are at 0/0, but aptest_forge_foreign's `foreign` objects. */
static int forge_figures(long long foreign)
{
	long long size = ap_slab_size(FORGE_CACHE);

	return size > 0 && ap_expect("aptest_forge_live", 0, 0) &&
	       ap_expect("aptest_forge_overlive", 0, 0) &&
	       ap_expect("aptest_forge_foreign", foreign * size, foreign);
}

/* Allocations and frees at every test site, a module unload, file I/O. */
static int workload(void)
{
	struct ap_testsite sites[32];
	int n = ap_testsites(sites, 32), i, ok = n > 0;

	for (i = 0; i < n; i++)
		ok &= ap_test_alloc(sites[i].name, 3) == 0 && ap_test_free(sites[i].name) == 0;
	ok &= ap_modprobe("allocprof_test2", NULL) == 0 && ap_rmmod("allocprof_test2") == 0;
	ok &= ap_write_file(AP_TESTDIR "/adopted", "free", 4) == 0;
	ok &= ap_sh("cp /bin/busybox /tmp/debug_test.bin && cat /tmp/debug_test.bin >/dev/null && "
		    "rm /tmp/debug_test.bin && ls -lR /proc/self >/dev/null") == 0;
	return ok;
}

static void check_bad_param(int i)
{
	int rc = ap_sh("insmod /lib/modules/$(uname -r)/extra/allocprof.ko %s 2>/dev/null", bad[i]);
	int gone = !ap_module_loaded("allocprof") && access(AP_ALLOCINFO, F_OK) &&
		   access(AP_SYSCTL, F_OK);
	int logged = ap_klog_grep("debug= must be 0 or 1\ninvalid for parameter .debug.",
				  AP_KLOG_CLEAR, NULL) > 0;

	ksft_test_result(rc != 0 && gone && logged,
			 "insmod allocprof %s fails (%d), nothing left (%d), a message (%d)\n",
			 bad[i], rc, gone, logged);
}

static void check_debug_load(int i)
{
	(void)i;
	ksft_test_result(ap_modprobe("allocprof", "debug=1") == 0 && file_is(PARAM, "1\n"),
			 "debug=1: loads, the parameter reads 1\n");
}

static void check_debug_sysctl(int i)
{
	struct stat st;

	(void)i;
	ksft_test_result(stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0444 &&
			 ap_write_file(AP_SYSCTL, "0", 1) != 0 && file_is(AP_SYSCTL, "1\n"),
			 "debug mode: vm.mem_profiling is 0444, a write fails, it reads 1\n");
}

/* Whether the step is skipped on this kernel (see the top of the file). */
static int skipped_here(const char *what)
{
	if (!ap_kernel_keeps_refs())
		return 0;
	ksft_test_result_skip("%s: 6.12 only (on 7.3 the kernel keeps the references and hands allocprof no allocation without a tag)\n",
			      what);
	return 1;
}

static void check_untagged(int i)
{
	int ok;

	(void)i;
	if (skipped_here("untagged allocations reported"))
		return;
	ap_klog_clear();
	ok = untagged_allocs();
	ksft_test_result(ok && untagged_reported(1) &&
			 log_count("allocprof: debug: untagged allocation") >= 3,
			 "untagged kmalloc, pages, percpu (%d each): one report per call chain\n",
			 REPEAT);
}

static void check_untagged_again(int i)
{
	(void)i;
	if (skipped_here("untagged allocations reported once"))
		return;
	ksft_test_result(untagged_allocs() && untagged_reported(1),
			 "the same call chains again: no new report\n");
}

static void check_overlive(int i)
{
	unsigned long id = 0;
	unsigned long long value;
	char text[128];
	long n = -1, named = -1;
	int ok;

	(void)i;
	if (skipped_here("forged live slot reported"))
		return;
	ap_klog_clear();
	ok = forge_overlive() == 0 && forge_read(&id, &value) && id != 0;
	snprintf(text, sizeof(text), OVERLIVE "%lu: its free was not seen", id);
	if (ok) {
		n = log_count_text(OVERLIVE);
		named = reports_naming(text, "aptest_forge_overlive");
	}
	ksft_test_result(ok && n == 1 && named == 1 && forge_figures(0),
			 "forged live slot: one report of call site %lu, naming aptest_forge_overlive (%ld, %ld); figures exact\n",
			 id, n, named);
}

static void check_overlive_again(int i)
{
	(void)i;
	if (skipped_here("forged live slot reported once"))
		return;
	ksft_test_result(forge_overlive() == 0 && log_count_text(OVERLIVE) == 1 && forge_figures(0),
			 "the same call chain again: no new report\n");
}

static void check_foreign(int i)
{
	unsigned long id;
	unsigned long long value = 0;
	char text[128];
	long n = -1, named = -1;
	int ok;

	(void)i;
	if (skipped_here("foreign slot reported"))
		return;
	ok = ap_write_file(FORGE, "foreign", 7) == 0 && forge_read(&id, &value) && value;
	snprintf(text, sizeof(text), FOREIGN "%#llx, which allocprof does not write", value);
	if (ok) {
		n = log_count_text(FOREIGN);
		named = reports_naming(text, "aptest_forge_foreign_free");
	}
	ksft_test_result(ok && n == 1 && named == 1 && forge_figures(1),
			 "free with slot value %#llx: one report naming aptest_forge_foreign_free (%ld, %ld); not subtracted\n",
			 value, n, named);
}

static void check_foreign_again(int i)
{
	(void)i;
	if (skipped_here("foreign slot reported once"))
		return;
	ksft_test_result(ap_write_file(FORGE, "foreign", 7) == 0 && log_count_text(FOREIGN) == 1 &&
			 forge_figures(2),
			 "the same call chain again: no new report, not subtracted either\n");
}

static void check_not_warnings(int i)
{
	(void)i;
	ksft_test_result(log_count("WARNING:") == 0 && log_count("BUG:") == 0 &&
			 log_count("Oops") == 0,
			 "reports are not kernel warnings\n");
}

static void check_tagged(int i)
{
	long long bytes;
	unsigned long long calls;
	int ok = ap_testsite_unit("kmalloc_100", &bytes, &calls) == 0 &&
		 ap_test_alloc("kmalloc_100", 3) == 0 &&
		 ap_expect("aptest_kmalloc_100", 3 * bytes, 3 * calls);

	(void)i;
	ksft_test_result(ok && ap_test_free("kmalloc_100") == 0 && ap_expect("aptest_kmalloc_100", 0, 0),
			 "debug mode: tagged allocations are counted exactly\n");
}

static void check_workload(int i)
{
	int ok;

	(void)i;
	ap_klog_clear();
	ok = workload();
	ksft_test_result(ok && log_count("allocprof: debug: .*live reference") == 0 &&
			 log_count_text(FOREIGN) == 0,
			 "a workload: no missed free, no foreign slot reported\n");
}

static void check_default_load(int i)
{
	struct stat st;
	int ok = ap_rmmod("allocprof") == 0 && ap_modprobe("allocprof", NULL) == 0 &&
		 file_is(PARAM, "0\n");

	(void)i;
	ksft_test_result(ok && stat(AP_SYSCTL, &st) == 0 && (st.st_mode & 0777) == 0644,
			 "default: the parameter reads 0, vm.mem_profiling is 0644\n");
}

static void check_no_reports(int i)
{
	int ok;

	(void)i;
	ap_klog_clear();
	ok = untagged_allocs() && untagged_reported(0);
	if (!ap_kernel_keeps_refs())
		ok = ok && forge_overlive() == 0 && ap_write_file(FORGE, "foreign", 7) == 0;
	ksft_test_result(ok && log_count("allocprof: debug:") == 0,
			 "without debug mode: untagged%s, no report\n",
			 ap_kernel_keeps_refs() ? "" : ", forged live and foreign slots");
}

static void check_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(check_bad_param, &nr_bad),
	AP_STEP(check_debug_load),
	AP_STEP(check_debug_sysctl),
	AP_STEP(check_untagged),
	AP_STEP(check_untagged_again),
	AP_STEP(check_overlive),
	AP_STEP(check_overlive_again),
	AP_STEP(check_foreign),
	AP_STEP(check_foreign_again),
	AP_STEP(check_not_warnings),
	AP_STEP(check_tagged),
	AP_STEP(check_workload),
	AP_STEP(check_default_load),
	AP_STEP(check_no_reports),
	AP_STEP(check_unload),
};

int main(void)
{
	ksft_print_header();
	/* The test module from a fresh load, allocprof not loaded. */
	if (ap_start(NULL) || ap_rmmod("allocprof"))
		ksft_exit_fail_msg("cannot start from a fresh allocprof_test alone\n");
	ap_klog_clear();
	AP_RUN_STEPS(steps);
	ksft_finished();
}
