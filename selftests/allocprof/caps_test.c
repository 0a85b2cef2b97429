// SPDX-License-Identifier: GPL-2.0
/*
 * caps_test: what root without CAP_SYS_ADMIN (euid 0, the capability gone
 * from its effective and permitted sets, by capset(2)) and user nobody get
 * from allocprof's files, against what upstream gives:
 *
 * - vm.mem_profiling: a write without CAP_SYS_ADMIN fails with EPERM and
 *   changes nothing, "0" and "never" alike, as upstream's handler
 *   (proc_do_static_key() in kernel/sysctl.c) refuses it; with the
 *   capability the same write works.
 * - /proc/allocinfo (mode 0400, as upstream's): root without the
 *   capability opens and reads it, nobody gets EACCES.
 * - The control file (debugfs, mode 0600): root without CAP_SYS_ADMIN
 *   writes it, as upstream's dynamic debug control (mode 0644, no
 *   capability check in ddebug_proc_write()) lets it; nobody cannot reach
 *   it (debugfs's root is mode 0700).
 * - The parameter control= (/sys/module/allocprof/parameters/control,
 *   mode 0400): its commands are root's; nobody gets EACCES.
 *
 * On upstream's built-in profiler (the oracle) the sysctl and allocinfo
 * steps run the same; the control file and the parameter are allocprof's
 * own, and their steps are declared skips there
 * (selftests/allocprof/expected).
 */
#include <linux/capability.h>
#include <sys/syscall.h>

#include "allocprof_lib.h"

#define CONTROL "/sys/kernel/debug/allocprof/control"
#define CONTROL_PARAM "/sys/module/allocprof/parameters/control"
#define SITE_FUNC "aptest_kmalloc_100"

/* What the sysctl read before the program changed anything. */
static char initial[32];

/*
 * Drops CAP_SYS_ADMIN from the effective, permitted and inheritable sets
 * of this process, staying euid 0; 0 if it is gone (capget says so).
 */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned int w = CAP_TO_INDEX(CAP_SYS_ADMIN);
	__u32 bit = CAP_TO_MASK(CAP_SYS_ADMIN);

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[w].effective &= ~bit;
	data[w].permitted &= ~bit;
	data[w].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data))
		return -1;
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -1;
	return (data[w].effective | data[w].permitted) & bit || geteuid() != 0 ? -1 : 0;
}

/*
 * Runs fn(arg) in a child without CAP_SYS_ADMIN; returns what fn returned
 * (an errno, 0 for success), or -1 if the child could not drop it.
 */
static int without_sys_admin(int (*fn)(const void *), const void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(drop_sys_admin() ? 255 : fn(arg));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) == 255)
		return -1;
	return WEXITSTATUS(status);
}

/* Writes the string arg to the sysctl; the errno, or 0. */
static int write_sysctl(const void *arg)
{
	return -ap_write_file(AP_SYSCTL, arg, strlen(arg));
}

/* Opens /proc/allocinfo and reads its first line; the errno, or 0. */
static int read_allocinfo(const void *arg)
{
	char buf[64];
	ssize_t n = ap_read_file(AP_ALLOCINFO, buf, sizeof(buf));

	(void)arg;
	if (n < 0)
		return -n;
	return strncmp(buf, AP_VERSION_LINE(""), strlen(AP_VERSION_LINE("")) - 1) ? EIO : 0;
}

/* Writes the command arg to the control file; the errno, or 0. */
static int write_control(const void *arg)
{
	return -ap_write_file(CONTROL, arg, strlen(arg));
}

static int errno_is(int got, int want, const char *what)
{
	if (got != want)
		ksft_print_msg("%s: errno %d (%s), expected %d (%s)\n", what, got,
			       got > 0 ? strerror(got) : "-", want, strerror(want));
	return got == want;
}

/* The writes a root without CAP_SYS_ADMIN tries on the sysctl. */
static const struct {
	const char *name, *data;
} sysctl_writes[] = {
	{ "0", "0" }, { "0 and a newline", "0\n" }, { "1", "1" },
	{ "never", "never" }, { "never and a newline", "never\n" },
};

static const int nsysctl_writes = ARRAY_SIZE(sysctl_writes);

static void t_sysctl_nocap(int i)
{
	int ok = errno_is(without_sys_admin(write_sysctl, sysctl_writes[i].data), EPERM,
			  "write without CAP_SYS_ADMIN");

	ok &= ap_sysctl_is(initial);
	ksft_test_result(ok,
			 "vm.mem_profiling: write %s without CAP_SYS_ADMIN: EPERM, still %.*s\n",
			 sysctl_writes[i].name, (int)strcspn(initial, "\n"), initial);
}

/* With CAP_SYS_ADMIN the same writes work: off, then back on. */
static void t_sysctl_cap(int i)
{
	int ok = errno_is(write_sysctl("0"), 0, "write 0 with CAP_SYS_ADMIN") && ap_sysctl_is("0\n");

	(void)i;
	ok &= errno_is(write_sysctl(initial), 0, "write it back") && ap_sysctl_is(initial);
	ksft_test_result(ok, "vm.mem_profiling: root with CAP_SYS_ADMIN writes 0, then %.*s\n",
			 (int)strcspn(initial, "\n"), initial);
}

static void t_allocinfo_nocap(int i)
{
	(void)i;
	ksft_test_result(errno_is(without_sys_admin(read_allocinfo, NULL), 0, "open and read"),
			 "/proc/allocinfo: root without CAP_SYS_ADMIN opens and reads it\n");
}

static void t_allocinfo_nobody(int i)
{
	(void)i;
	ksft_test_result(errno_is(ap_open_as_nobody(AP_ALLOCINFO, O_RDONLY), EACCES,
				  "open as nobody"),
			 "/proc/allocinfo: nobody gets EACCES\n");
}

/* The control file shows exactly the flags fl for the test site; 1 if so. */
static int site_flags_are(const char *fl)
{
	char re[128];

	/* grep -qx: the whole line. */
	snprintf(re, sizeof(re), "^.* \\[allocprof_test\\]%s =%s$", SITE_FUNC, fl);
	if (ap_grep_file(CONTROL, re, 0, NULL) > 0)
		return 1;
	ksft_print_msg("%s: flags are not '%s'\n", SITE_FUNC, fl);
	return 0;
}

static void t_control_nocap(int i)
{
	int ok;

	(void)i;
	if (ap_builtin_profiler()) {
		ksft_test_result_skip("control file: upstream has none\n");
		return;
	}
	ok = errno_is(without_sys_admin(write_control, "func " SITE_FUNC " +s"), 0,
		      "control write without CAP_SYS_ADMIN");
	ok &= site_flags_are("ps");
	ok &= errno_is(write_control("func " SITE_FUNC " -s"), 0, "control write with it") &&
	      site_flags_are("p");
	ksft_test_result(ok,
			 "control file: root without CAP_SYS_ADMIN writes it (as dynamic debug's)\n");
}

static void t_control_nobody(int i)
{
	(void)i;
	if (ap_builtin_profiler()) {
		ksft_test_result_skip("control file: upstream has none\n");
		return;
	}
	ksft_test_result(errno_is(ap_open_as_nobody(CONTROL, O_WRONLY), EACCES, "open as nobody"),
			 "control file: nobody gets EACCES\n");
}

static void t_param_nobody(int i)
{
	(void)i;
	if (ap_builtin_profiler()) {
		ksft_test_result_skip("control= parameter: upstream has no allocprof module\n");
		return;
	}
	ksft_test_result(errno_is(ap_open_as_nobody(CONTROL_PARAM, O_RDONLY), EACCES,
				  "open as nobody"),
			 "control= parameter: nobody gets EACCES, its commands are root's\n");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_unload_all() == 0, "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_sysctl_nocap, &nsysctl_writes),
	AP_STEP(t_sysctl_cap),
	AP_STEP(t_allocinfo_nocap),
	AP_STEP(t_allocinfo_nobody),
	AP_STEP(t_control_nocap),
	AP_STEP(t_control_nobody),
	AP_STEP(t_param_nobody),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_read_file(AP_SYSCTL, initial, sizeof(initial)) < 0 || strcmp(initial, "1\n"))
		ksft_exit_fail_msg("vm.mem_profiling does not read 1 at the start: '%s'\n",
				   initial);
	ksft_print_msg("profiler: %s\n",
		       ap_builtin_profiler() ? "upstream's built-in" : "allocprof");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
