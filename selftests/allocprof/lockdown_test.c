// SPDX-License-Identifier: GPL-2.0
/*
 * lockdown_test: allocprof under a kernel locked down at run time (issue
 * #41, finding 10).  A locked-down kernel forbids writes to debugfs, the
 * control file's included, and control= does what those writes would:
 *
 * - before lockdown, /sys/kernel/security/lockdown (securityfs, mounted
 *   here if the guest has not) reads "[none] integrity confidentiality";
 *   allocprof loads with control="module allocprof_test -p; module
 *   allocprof_test2 -p" (format 2.0) and the test modules loaded after it
 *   get -p: every call site of theirs is =_ in the control file and
 *   accurate:no in /proc/allocinfo, allocprof_test2's load counted 0/0;
 * - "integrity" written to the lockdown file raises it: "none [integrity]
 *   confidentiality", the kernel says so once;
 * - allocprof_test loaded again gets the default flags, and the kernel log
 *   has "control= no longer applied to the call sites of modules that
 *   load: the kernel is locked down" once, still once after a second
 *   module (allocprof_test2) loads.  The control file cannot be read now
 *   (below), so the flags are read from /proc/allocinfo 2.0, where -p
 *   would mark every call site accurate:no: none is, and
 *   allocprof_test2's load is counted exactly as its sites file says;
 * - the control file refuses to open, for writing and for reading alike
 *   (mode 0600: debugfs refuses any file that root may write), with
 *   EPERM, and the write tried (control='s commands) changes nothing;
 * - the test modules and allocprof unload; allocprof with control= then
 *   fails to load with EPERM and "control= refused: the kernel is locked
 *   down, ..." once, leaving nothing; without control= it loads (its
 *   control= parameter mode 0400, readable by root only) and unloads.
 *
 * Lockdown cannot be lowered until the next boot: this program runs last
 * (the Makefile's order), and run again in the same boot its first
 * result fails.  Every module it loads must be signed with the kernel's
 * key, as make module signs them (scripts/sign-modules): a locked-down
 * kernel loads no other.  Modules are loaded with finit_module(2), once
 * each, so that a failure is one attempt with its exact errno (busybox's
 * insmod tries init_module(2) after a failure, which would log a refusal
 * twice).  The test module's alloc and free files are writable, so
 * refused under lockdown too: the allocations counted under lockdown are
 * allocprof_test2's, made by its load.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "allocprof_lib.h"

#define LOCKDOWN_DIR "/sys/kernel/security"
#define LOCKDOWN LOCKDOWN_DIR "/lockdown"
#define T1 "allocprof_test"
#define T2 "allocprof_test2"
#define T2_SITES "/sys/kernel/debug/allocprof_test2/sites"
/* allocprof_test2's allocations at each call site on load. */
#define T2_NR 3
#define T2_PARAMS "nr=3"
#define PARAM_FILE "/sys/module/allocprof/parameters/control"

#define CMDS "module " T1 " -p; module " T2 " -p"
#define CONTROL_PARAMS "control=\"" CMDS "\" allocinfo_format=2.0"

#define NO_LONGER "control= no longer applied to the call sites of modules that load: the kernel is locked down"
#define REFUSED "control= refused: the kernel is locked down, which forbids writes to the control file; load allocprof without control="
#define RAISED "Kernel is locked down from securityfs; see man kernel_lockdown.7"

#define MAX_SITES 8

/* allocprof_test's call sites, counted before lockdown. */
static int t1_sites;
/* allocprof_test2's call sites and the figures its load gave them. */
static struct ap_testsite t2_sites[MAX_SITES];
static struct ap_fig t2_figs[MAX_SITES];
static int t2_nsites;

/* The lockdown file reads exactly want; says what it read if not. */
static int lockdown_is(const char *want)
{
	char buf[128];
	ssize_t n = ap_read_file(LOCKDOWN, buf, sizeof(buf));

	if (n < 0) {
		ksft_print_msg(LOCKDOWN ": %s\n", strerror(-n));
		return 0;
	}
	if (strcmp(buf, want))
		ksft_print_msg(LOCKDOWN " reads '%.*s', expected '%.*s'\n", (int)strcspn(buf, "\n"),
			       buf, (int)strcspn(want, "\n"), want);
	return !strcmp(buf, want);
}

/* The kernel log since it was last emptied has `want` lines with text. */
static int log_count_is(const char *text, long want)
{
	long n = ap_klog_grep(text, AP_GREP_FIXED, NULL);

	if (n != want)
		ksft_print_msg("%ld kernel log line(s) '%s', expected %ld\n", n, text, want);
	return n == want;
}

/* finit_module(2) of a module of this tree, once; 0 or -errno (said). */
static int load(const char *name, const char *params)
{
	int fd = ap_module_fd(name), err = ap_finit(fd, params);

	close(fd);
	if (err) {
		char why[512];

		ksft_print_msg("finit_module %s %s: %s\n", name, params, strerror(-err));
		/* An unsigned module under lockdown: the kernel says so. */
		if (err == -EPERM && ap_klog_last("Lockdown: ", AP_GREP_FIXED, why, sizeof(why)) > 0)
			ksft_print_msg("the kernel's last lockdown line: %s\n", why);
	}
	return err;
}

/* delete_module(2); 0 or -errno (said). */
static int unload(const char *name)
{
	int err = ap_delete(name);

	if (err)
		ksft_print_msg("delete_module %s: %s\n", name, strerror(-err));
	return err;
}

/*
 * The lines of module's call sites in the control file: how many (-1 if
 * it cannot be read), and in *with how many of them have exactly flags.
 */
static int control_lines(const char *module, const char *flags, int *with)
{
	char key[64], end[16], *buf = ap_slurp(AP_CONTROL, NULL), *line, *save = NULL;
	int n = 0;

	*with = 0;
	if (!buf)
		return -1;
	snprintf(key, sizeof(key), " [%s]", module);
	snprintf(end, sizeof(end), " =%s", flags);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t l = strlen(line), e = strlen(end);

		if (!strstr(line, key))
			continue;
		n++;
		if (l >= e && !strcmp(line + l - e, end))
			++*with;
	}
	free(buf);
	return n;
}

/*
 * The lines of module's call sites in /proc/allocinfo: how many (-1 if it
 * cannot be read), and in *inaccurate how many say accurate:no.
 */
static int allocinfo_lines(const char *module, int *inaccurate)
{
	char key[64], *buf = ap_slurp(AP_ALLOCINFO, NULL), *line, *save = NULL;
	int n = 0;

	*inaccurate = 0;
	if (!buf)
		return -1;
	snprintf(key, sizeof(key), " [%s] func:", module);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, key))
			continue;
		n++;
		*inaccurate += ap_cut_inaccurate(line);
	}
	free(buf);
	return n;
}

/* allocprof_test has t1_sites lines in /proc/allocinfo, inaccurate of them accurate:no. */
static int t1_allocinfo_is(int inaccurate)
{
	int bad, n = allocinfo_lines(T1, &bad);

	if (n != t1_sites || bad != inaccurate)
		ksft_print_msg(T1 ": %d line(s) in " AP_ALLOCINFO ", %d accurate:no; expected %d, %d\n",
			       n, bad, t1_sites, inaccurate);
	return n == t1_sites && bad == inaccurate;
}

static void t2_func(char *buf, size_t size, int i)
{
	snprintf(buf, size, "aptest2_%.31s", t2_sites[i].name);
}

/*
 * Each call site of allocprof_test2 has one line with the figures of its
 * sites file's allocations (live × one allocation's), accurate:no or not
 * as want_inaccurate says; t2_figs[] gets the figures read.
 */
static int t2_exact(int want_inaccurate)
{
	int i, ok = t2_nsites > 0;

	for (i = 0; i < t2_nsites; i++) {
		long long unit;
		unsigned long long calls;
		char func[48];
		struct ap_fig f;

		t2_func(func, sizeof(func), i);
		if (ap_unit(&t2_sites[i], &unit, &calls)) {
			ksft_print_msg("%s: bytes of one allocation unknown\n", func);
			ok = 0;
			continue;
		}
		f = ap_site(T2, func);
		t2_figs[i] = f;
		if (f.found == 1 && f.bytes == (long long)t2_sites[i].live * unit &&
		    f.calls == t2_sites[i].live * calls && f.inaccurate == want_inaccurate)
			continue;
		ksft_print_msg("%s: %d line(s), %lld bytes %llu calls%s; expected %lu x %lld bytes, %lu x %llu calls%s\n",
			       func, f.found, f.bytes, f.calls, f.inaccurate ? " accurate:no" : "",
			       t2_sites[i].live, unit, t2_sites[i].live, calls,
			       want_inaccurate ? " accurate:no" : "");
		ok = 0;
	}
	return ok;
}

/* allocprof_test2's sites, from its sites file (mode 0400: readable under lockdown). */
static int read_t2_sites(void)
{
	int i;

	t2_nsites = ap_testsites_of(T2_SITES, t2_sites, MAX_SITES);
	if (t2_nsites <= 0) {
		ksft_print_msg("cannot read " T2_SITES "\n");
		return 0;
	}
	for (i = 0; i < t2_nsites; i++) {
		if (t2_sites[i].live != T2_NR) {
			ksft_print_msg("%s: %lu allocations at load, expected %d\n", t2_sites[i].name,
				       t2_sites[i].live, T2_NR);
			return 0;
		}
	}
	return 1;
}

/* No file of allocprof's is left: not loaded, no /proc, sysctl or debugfs files. */
static int nothing_left(void)
{
	int ok = !ap_module_loaded("allocprof") && access(AP_ALLOCINFO, F_OK) &&
		 access(AP_SYSCTL, F_OK) && access("/sys/kernel/debug/allocprof", F_OK);

	if (!ok)
		ksft_print_msg("allocprof left something: loaded %d, %s %d, %s %d, debugfs %d\n",
			       ap_module_loaded("allocprof"), AP_ALLOCINFO, !access(AP_ALLOCINFO, F_OK),
			       AP_SYSCTL, !access(AP_SYSCTL, F_OK),
			       !access("/sys/kernel/debug/allocprof", F_OK));
	return ok;
}

static void t_lockdown_none(int i)
{
	(void)i;
	ksft_test_result(lockdown_is("[none] integrity confidentiality\n"),
			 LOCKDOWN ": [none] integrity confidentiality\n");
}

static void t_load_control(int i)
{
	(void)i;
	ksft_test_result(load("allocprof", CONTROL_PARAMS) == 0 &&
			 log_count_is("control= applied: " CMDS, 1),
			 "before lockdown: allocprof loads with control=\"%s\", and says so\n", CMDS);
}

static void t_t1_flags(int i)
{
	int with, n;

	(void)i;
	if (load(T1, "")) {
		ksft_test_result_fail(T1 " loads after it\n");
		return;
	}
	n = control_lines(T1, "_", &with);
	t1_sites = n;
	if (n <= 0 || with != n)
		ksft_print_msg(T1 ": %d line(s) in the control file, %d of them =_\n", n, with);
	ksft_test_result(n > 0 && with == n && t1_allocinfo_is(n),
			 T1 " loads after it: each of its %d call sites =_ in the control file and accurate:no in " AP_ALLOCINFO "\n",
			 t1_sites);
}

static void t_t2_flags(int i)
{
	int ok, s, with, n;

	(void)i;
	ok = load(T2, T2_PARAMS) == 0 && read_t2_sites();
	n = control_lines(T2, "_", &with);
	if (n != t2_nsites || with != n) {
		ksft_print_msg(T2 ": %d line(s) in the control file, %d of them =_; expected %d\n", n,
			       with, t2_nsites);
		ok = 0;
	}
	for (s = 0; ok && s < t2_nsites; s++) {
		char func[48];
		struct ap_fig f;

		t2_func(func, sizeof(func), s);
		f = ap_site(T2, func);
		if (f.found != 1 || f.bytes || f.calls || !f.inaccurate) {
			ksft_print_msg("%s: %d line(s), %lld bytes %llu calls%s; expected 0 0 accurate:no\n",
				       func, f.found, f.bytes, f.calls, f.inaccurate ? " accurate:no" : "");
			ok = 0;
		}
	}
	ksft_test_result(ok, T2 " (nr=%d) loads: its %d call sites =_, their allocations not counted (0/0, accurate:no)\n",
			 T2_NR, t2_nsites);
}

static void t_t2_gone(int i)
{
	int s, ok = unload(T2) == 0;

	(void)i;
	for (s = 0; s < t2_nsites; s++) {
		char func[48];

		t2_func(func, sizeof(func), s);
		if (ap_site(T2, func).found) {
			ksft_print_msg("%s still has a line\n", func);
			ok = 0;
		}
	}
	ksft_test_result(ok, "rmmod " T2 ": its lines go (nothing was counted)\n");
}

static void t_raise(int i)
{
	int ok;

	(void)i;
	ok = log_count_is(NO_LONGER, 0);
	if (ap_write_file(LOCKDOWN, "integrity\n", 10)) {
		ksft_print_msg("cannot write integrity to " LOCKDOWN "\n");
		ok = 0;
	}
	ok &= lockdown_is("none [integrity] confidentiality\n") && log_count_is(RAISED, 1);
	ksft_test_result(ok, "integrity written to " LOCKDOWN ": none [integrity] confidentiality, said once\n");
}

static void t_t1_again(int i)
{
	(void)i;
	ksft_test_result(unload(T1) == 0 && load(T1, "") == 0 && log_count_is(NO_LONGER, 1),
			 "locked down: " T1 " unloads and loads again; the kernel log says once that control= is no longer applied\n");
}

static void t_t1_default(int i)
{
	(void)i;
	ksft_test_result(t1_allocinfo_is(0),
			 "its %d call sites have the default flags: none accurate:no in " AP_ALLOCINFO "\n",
			 t1_sites);
}

static void t_t2_once(int i)
{
	(void)i;
	ksft_test_result(load(T2, T2_PARAMS) == 0 && log_count_is(NO_LONGER, 1),
			 "a second module, " T2 ", loads: the line is still there once\n");
}

static void t_t2_counted(int i)
{
	char head[64];
	int ok;

	(void)i;
	ok = ap_read_file(AP_ALLOCINFO, head, sizeof(head)) > 0 &&
	     !strncmp(head, AP_VERSION_LINE("2.0"), strlen(AP_VERSION_LINE("2.0")));
	if (!ok)
		ksft_print_msg(AP_ALLOCINFO ": cannot read it, or no 2.0 header\n");
	ok &= read_t2_sites() && t2_exact(0);
	ksft_test_result(ok, AP_ALLOCINFO " reads under lockdown: " T2 "'s %d call sites count its %d allocations each exactly, not accurate:no\n",
			 t2_nsites, T2_NR);
}

static void t_control_write(int i)
{
	int err, s, ok;

	(void)i;
	err = ap_write_file(AP_CONTROL, CMDS, strlen(CMDS));
	ok = err == -EPERM;
	if (!ok)
		ksft_print_msg("write to the control file: %s, expected EPERM\n",
			       err ? strerror(-err) : "it worked");
	/* -p would make every call site it reached accurate:no. */
	ok &= t1_allocinfo_is(0);
	for (s = 0; s < t2_nsites; s++) {
		char func[48];
		struct ap_fig f;

		t2_func(func, sizeof(func), s);
		f = ap_site(T2, func);
		if (f.found != 1 || f.bytes != t2_figs[s].bytes || f.calls != t2_figs[s].calls ||
		    f.inaccurate) {
			ksft_print_msg("%s: %d line(s), %lld bytes %llu calls%s; before the write %lld %llu\n",
				       func, f.found, f.bytes, f.calls, f.inaccurate ? " accurate:no" : "",
				       t2_figs[s].bytes, t2_figs[s].calls);
			ok = 0;
		}
	}
	ksft_test_result(ok && t2_nsites > 0,
			 "the control file: opened for writing, EPERM; the write of \"%s\" changes nothing\n",
			 CMDS);
}

static void t_control_read(int i)
{
	char buf[256];
	ssize_t n;

	(void)i;
	n = ap_read_file(AP_CONTROL, buf, sizeof(buf));
	if (n != -EPERM)
		ksft_print_msg("read of the control file: %s, expected EPERM\n",
			       n < 0 ? strerror(-n) : "it worked");
	ksft_test_result(n == -EPERM, "the control file (mode 0600): opened for reading, EPERM too\n");
}

static void t_unload(int i)
{
	int ok;

	(void)i;
	ok = unload(T2) == 0 && unload(T1) == 0 && unload("allocprof") == 0;
	ksft_test_result(ok && !ap_module_loaded(T2) && !ap_module_loaded(T1) && nothing_left(),
			 "locked down: " T2 ", " T1 " and allocprof unload\n");
}

static void t_refused(int i)
{
	int fd, err;

	(void)i;
	ap_klog_clear();
	/* No message: the refusal is what is expected. */
	fd = ap_module_fd("allocprof");
	err = ap_finit(fd, CONTROL_PARAMS);
	close(fd);
	if (err != -EPERM)
		ksft_print_msg("finit_module allocprof %s: %s, expected EPERM\n", CONTROL_PARAMS,
			       err ? strerror(-err) : "it loaded");
	if (!err)
		unload("allocprof");
	ksft_test_result(err == -EPERM && nothing_left(),
			 "locked down: allocprof with control= fails to load with EPERM, nothing left\n");
}

static void t_refused_log(int i)
{
	(void)i;
	ksft_test_result(log_count_is(REFUSED, 1),
			 "the kernel log says once: control= refused: the kernel is locked down, ...\n");
}

static void t_plain_load(int i)
{
	char head[64];
	int ok;

	(void)i;
	ok = load("allocprof", "") == 0 && ap_read_file(AP_ALLOCINFO, head, sizeof(head)) > 0 &&
	     !strncmp(head, ap_default_header(), strlen(ap_default_header())) &&
	     ap_sysctl_is("1\n");
	ksft_test_result(ok, "locked down: allocprof without control= loads, " AP_ALLOCINFO " reads, vm.mem_profiling 1\n");
}

static void t_param_mode(int i)
{
	struct stat st;
	int ok;

	(void)i;
	if (stat(PARAM_FILE, &st)) {
		ksft_print_msg(PARAM_FILE ": %s\n", strerror(errno));
		ok = 0;
	} else {
		ok = (st.st_mode & 07777) == 0400;
		if (!ok)
			ksft_print_msg(PARAM_FILE ": mode %o, expected 400\n",
				       (unsigned int)(st.st_mode & 07777));
	}
	ksft_test_result(ok, "control= is readable by root only: " PARAM_FILE " mode 0400\n");
}

static void t_plain_unload(int i)
{
	(void)i;
	ksft_test_result(unload("allocprof") == 0 && nothing_left(), "rmmod allocprof\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_lockdown_none),
	AP_STEP(t_load_control),
	AP_STEP(t_t1_flags),
	AP_STEP(t_t2_flags),
	AP_STEP(t_t2_gone),
	AP_STEP(t_raise),
	AP_STEP(t_t1_again),
	AP_STEP(t_t1_default),
	AP_STEP(t_t2_once),
	AP_STEP(t_t2_counted),
	AP_STEP(t_control_write),
	AP_STEP(t_control_read),
	AP_STEP(t_unload),
	AP_STEP(t_refused),
	AP_STEP(t_refused_log),
	AP_STEP(t_plain_load),
	AP_STEP(t_param_mode),
	AP_STEP(t_plain_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_unload_all())
		ksft_exit_fail_msg("cannot unload what an earlier test left\n");
	/* qemu/init mounts no securityfs; the kernel has the lockdown LSM. */
	if (access(LOCKDOWN, F_OK))
		mount("securityfs", LOCKDOWN_DIR, "securityfs", 0, NULL);
	if (access(LOCKDOWN, F_OK))
		ksft_exit_fail_msg(LOCKDOWN ": none, after mounting securityfs (a kernel without CONFIG_SECURITY_LOCKDOWN_LSM?)\n");
	ap_klog_clear();
	AP_RUN_STEPS(steps);
	ksft_finished();
}
