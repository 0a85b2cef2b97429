// SPDX-License-Identifier: GPL-2.0
/*
 * memcg_test: the control file's m flag: for a call site with m, its live
 * allocations by the memory cgroup of the context that made them, in the
 * memcgs report (/sys/kernel/debug/allocprof/memcgs), and on 7.3 the bytes
 * of those that asked to be charged (__GFP_ACCOUNT) in the report and as the
 * accounted: key of the site's /proc/allocinfo 2.0 line.
 *
 * In a cgroup v2 hierarchy with the memory controller (mounted here if it is
 * not), this task moves itself into cgroups A and B and has the test module
 * allocate there, from descriptors opened before, so that nothing else it
 * does is charged to them:
 * - blocks of 256 pages with __GFP_ACCOUNT: 4 in A, 2 in B: one row each,
 *   exactly, and the cgroups' "kernel" figure of memory.stat grew by the
 *   same bytes (each block is one update of the cgroup's statistics, more
 *   than the batch after which a read of memory.stat flushes them, so the
 *   figure read is exact whenever the periodic flush ran); in the root
 *   cgroup, which the kernel charges nothing, 3 pages: a row "/"
 *   (accounted:0); freed, no row, and memory.stat back where it was;
 * - slab objects with __GFP_ACCOUNT in A: a row of the site's own figures;
 * - a removed cgroup keeps its row (and path) while its pages live;
 * - -m keeps the rows of allocations made before it, adds none after;
 * - a cgroup more than the table holds (64): its row is "memcg:?", the
 *   header counts it; freed, every slot is given back;
 * - bad flags: EINVAL, nothing changed.
 *
 * Expected figures come from the kernel: the test module's "sites" file,
 * memory.stat, the page size.  The upstream flavour has no control file:
 * scripts/check does not run this program there.
 */
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "allocprof_lib.h"

#define MEMCGS "/sys/kernel/debug/allocprof/memcgs"
#define CGROOT "/sys/fs/cgroup"
#define TABLE 64

static char *before;
static long long page;
/* Descriptors opened before any move, so that a move costs no allocation. */
static int alloc_fd = -1, root_procs = -1;

static int control(const char *cmd)
{
	return -ap_write_file(AP_CONTROL, cmd, strlen(cmd));
}

/* A test cgroup's directory. */
static void cg_dir(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, CGROOT "/ap_memcg_%s", name);
}

/* A test cgroup's cgroup.procs, opened for writing; -1 on error. */
static int cg_procs(const char *name)
{
	char path[128];

	cg_dir(path, sizeof(path), name);
	strcat(path, "/cgroup.procs");
	return open(path, O_WRONLY);
}

/* Moves this task to the cgroup whose cgroup.procs is open at fd. */
static int enter(int fd)
{
	return write(fd, "0", 1) == 1 ? 0 : -1;
}

/*
 * Moves this task into cgroup fd, allocates count at site, and moves it back
 * to the root: the only syscalls in the cgroup are the allocation's write
 * and the move out.
 */
static int alloc_in(int fd, const char *site, unsigned int count)
{
	char cmd[64];
	int len = snprintf(cmd, sizeof(cmd), "%s %u", site, count), ok;

	if (enter(fd))
		return -1;
	ok = write(alloc_fd, cmd, len) == len;
	return enter(root_procs) || !ok ? -1 : 0;
}

/* The "kernel" figure of a test cgroup's memory.stat; -1 if none. */
static long long kernel_of(const char *name)
{
	char path[128], *buf, *k;
	long long v = -1;

	cg_dir(path, sizeof(path), name);
	strcat(path, "/memory.stat");
	buf = ap_slurp(path, NULL);
	k = buf ? strstr(buf, "\nkernel ") : NULL;
	if (k)
		sscanf(k, "\nkernel %lld", &v);
	free(buf);
	return v;
}

/* A row of the memcgs report. */
struct row {
	long long bytes, accounted;
	unsigned long long calls;
};

/*
 * The row of the test module's site func in memcg path ("/ap_memcg_a", "/",
 * "-" or "?"): 0 if there is one.  accounted is -1 where the row has none.
 */
static int row_of(const char *func, const char *path, struct row *r)
{
	char *buf = ap_slurp(MEMCGS, NULL), *line, *save = NULL, want[160];
	int found = -1;

	snprintf(want, sizeof(want), " [allocprof_test] func:aptest_%s memcg:%s", func, path);
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(line, want), *acc;
		size_t l = strlen(want);

		if (!at || (at[l] != '\0' && at[l] != ' '))
			continue;
		r->accounted = -1;
		acc = strstr(at + l, " accounted:");
		if (acc)
			sscanf(acc, " accounted:%lld", &r->accounted);
		if (sscanf(line, "%lld %llu", &r->bytes, &r->calls) == 2)
			found = 0;
	}
	free(buf);
	return found;
}

/* Rows of the report (not the header). */
static long rows(void)
{
	return ap_grep_file(MEMCGS, "^#", AP_GREP_INVERT, NULL);
}

/* The report's header says held/64 held and full allocations kept without. */
static int header_is(int held, int full)
{
	char want[96];

	snprintf(want, sizeof(want), "^# memcgs: %d/%d held; kept without their memcg: %d ", held,
		 TABLE, full);
	return ap_grep_file(MEMCGS, want, 0, NULL) == 1;
}

/* On 7.3 the row's accounted bytes are want; on 6.12 it has none. */
static int accounted_is(const struct row *r, long long want)
{
	return ap_kernel_keeps_refs() ? r->accounted == want : r->accounted == -1;
}

/* The accounted: key of the site's 2.0 line: its value, or -1 if none. */
static long long info_accounted(const char *func)
{
	char *buf = ap_slurp(AP_ALLOCINFO, NULL), *line, *save = NULL, *k, want[80];
	long long v = -1;

	snprintf(want, sizeof(want), " [allocprof_test] func:aptest_%s ", func);
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		k = strstr(line, want) ? strstr(line, " accounted:") : NULL;
		if (k)
			sscanf(k, " accounted:%lld", &v);
	}
	free(buf);
	return v;
}

static int row_is(const char *func, const char *path, long long bytes, unsigned long long calls,
		  long long accounted)
{
	struct row r = { 0 };
	int has = row_of(func, path, &r) == 0;

	if (has && r.bytes == bytes && r.calls == calls && accounted_is(&r, accounted))
		return 1;
	ksft_print_msg("%s memcg:%s: %s%lld bytes %llu calls accounted %lld; expected %lld %llu %lld\n",
		       func, path, has ? "" : "(no row) ", r.bytes, r.calls, r.accounted, bytes, calls,
		       accounted);
	return 0;
}

/* Cgroup A and B's cgroup.procs. */
static int procs_a = -1, procs_b = -1;
static long long kernel_a, kernel_b;

/* Bytes of one block of pages_account_8. */
#define BLOCK (256 * page)

/* Blocks with __GFP_ACCOUNT in A and B: rows and memory.stat agree. */
static void t_pages(int i)
{
	long long a, b;
	int ok;

	(void)i;
	kernel_a = kernel_of("a");
	kernel_b = kernel_of("b");
	ok = control("func aptest_pages_account_8 +m; func aptest_pages_account +m") == 0 &&
	     !alloc_in(procs_a, "pages_account_8", 4) && !alloc_in(procs_b, "pages_account_8", 2);
	a = kernel_of("a") - kernel_a;
	b = kernel_of("b") - kernel_b;
	ok = ok && row_is("pages_account_8", "/ap_memcg_a", 4 * BLOCK, 4, 4 * BLOCK) &&
	     row_is("pages_account_8", "/ap_memcg_b", 2 * BLOCK, 2, 2 * BLOCK) && rows() == 2;
	ksft_test_result(ok && a == 4 * BLOCK && b == 2 * BLOCK,
			 "4 blocks of 256 pages in A, 2 in B: rows exact; memory.stat kernel +%lld, +%lld\n",
			 a, b);
}

/* The 2.0 line: accounted: on 7.3, none on 6.12. */
static void t_info(int i)
{
	long long want = ap_kernel_keeps_refs() ? 6 * BLOCK : -1, got;

	(void)i;
	got = info_accounted("pages_account_8");
	ksft_test_result(got == want && ap_expect("aptest_pages_account_8", 6 * BLOCK, 6),
			 "/proc/allocinfo: accounted:%lld (expected %lld), the site 6 blocks\n", got,
			 want);
}

/* The root cgroup: a row "/", nothing accounted. */
static void t_root(int i)
{
	int ok;

	(void)i;
	ok = ap_test_alloc("pages_account", 3) == 0 && row_is("pages_account", "/", 3 * page, 3, 0) &&
	     rows() == 3 && header_is(3, 0);
	ksft_test_result(ok, "3 pages in the root cgroup: row /, accounted 0\n");
}

/* Freed: no row, memory.stat as before, every slot given back. */
static void t_free(int i)
{
	long long a, b;
	int ok;

	(void)i;
	ok = ap_test_free("pages_account_8") == 0 && ap_test_free("pages_account") == 0 &&
	     rows() == 0 && header_is(0, 0);
	a = kernel_of("a");
	b = kernel_of("b");
	ksft_test_result(ok && a == kernel_a && b == kernel_b,
			 "freed: no row, no cgroup held; memory.stat kernel %lld, %lld as before\n",
			 a - kernel_a, b - kernel_b);
}

/* Slab objects with __GFP_ACCOUNT: the site's own figures. */
static void t_slab(int i)
{
	long long unit;
	unsigned long long calls;
	int ok;

	(void)i;
	ok = ap_testsite_unit("kmalloc_account", &unit, &calls) == 0 &&
	     control("func aptest_kmalloc_account +m") == 0 &&
	     !alloc_in(procs_a, "kmalloc_account", 10);
	ok = ok && row_is("kmalloc_account", "/ap_memcg_a", 10 * unit, 10 * calls, 10 * unit) &&
	     ap_expect("aptest_kmalloc_account", 10 * unit, 10 * calls);
	ok = ap_test_free("kmalloc_account") == 0 && ok && rows() == 0;
	ksft_test_result(ok, "10 objects of %lld bytes in A: one row of the site's figures\n", unit);
}

/* -m: the rows of earlier allocations stay until freed; later ones add none. */
static void t_minus(int i)
{
	int ok;

	(void)i;
	ok = !alloc_in(procs_a, "pages_account", 2) && control("func aptest_pages_account -m") == 0 &&
	     !alloc_in(procs_a, "pages_account", 3);
	ok = ok && row_is("pages_account", "/ap_memcg_a", 2 * page, 2, 2 * page) && rows() == 1 &&
	     ap_expect("aptest_pages_account", 5 * page, 5);
	ok = ap_test_free("pages_account") == 0 && ok && rows() == 0 && header_is(0, 0);
	ok = control("func aptest_pages_account +m") == 0 && ok;
	ksft_test_result(ok, "-m: the 2 pages before it keep their row, the 3 after have none\n");
}

/* A removed cgroup's pages keep its row, under its path, until freed. */
static void t_removed(int i)
{
	char dir[128];
	int fd, ok;

	(void)i;
	cg_dir(dir, sizeof(dir), "gone");
	ok = mkdir(dir, 0755) == 0;
	fd = ok ? cg_procs("gone") : -1;
	ok = fd >= 0 && !alloc_in(fd, "pages_account", 4);
	if (fd >= 0)
		close(fd);
	ok = ok && rmdir(dir) == 0 && row_is("pages_account", "/ap_memcg_gone", 4 * page, 4, 4 * page);
	ok = ap_test_free("pages_account") == 0 && ok && rows() == 0 && header_is(0, 0);
	ksft_test_result(ok, "a removed cgroup's 4 pages keep its row until freed\n");
}

/* One cgroup more than the table holds: "memcg:?", counted in the header. */
static void t_full(int i)
{
	char dir[128], name[16];
	int n, ok = 1, fd = -1;

	(void)i;
	for (n = 0; n <= TABLE && ok; n++) {
		snprintf(name, sizeof(name), "t%d", n);
		cg_dir(dir, sizeof(dir), name);
		ok = mkdir(dir, 0755) == 0 && (fd = cg_procs(name)) >= 0;
		ok = ok && !alloc_in(fd, "pages_account", 1);
		if (ok)
			close(fd);
	}
	ok = ok && rows() == TABLE + 1 && row_is("pages_account", "/ap_memcg_t0", page, 1, page) &&
	     row_is("pages_account", "?", page, 1, page) && header_is(TABLE, 1);
	ok = ap_test_free("pages_account") == 0 && ok && rows() == 0 && header_is(0, 1);
	for (n = 0; n <= TABLE; n++) {
		snprintf(name, sizeof(name), "t%d", n);
		cg_dir(dir, sizeof(dir), name);
		rmdir(dir);
	}
	ksft_test_result(ok, "%d cgroups: %d rows, one \"memcg:?\"; freed, no cgroup held\n",
			 TABLE + 1, TABLE + 1);
}

static void t_bad(int i)
{
	int err;

	(void)i;
	free(before);
	before = ap_slurp(AP_CONTROL, NULL);
	ap_klog_clear();
	err = control("func aptest_kmalloc_100 +mx");
	ksft_test_result(err == EINVAL && ap_control_unchanged(before) &&
			 ap_logged("unknown flag 'x' in '+mx' (flags are p, s, a, n, f, c, m;"),
			 "'+mx': EINVAL (%s), the log says so, nothing changed\n", strerror(err));
}

static const struct ap_step steps[] = {
	AP_STEP(t_pages),   AP_STEP(t_info),  AP_STEP(t_root), AP_STEP(t_free),
	AP_STEP(t_slab),    AP_STEP(t_minus), AP_STEP(t_removed), AP_STEP(t_full),
	AP_STEP(t_bad),
};

/* cgroup v2 with the memory controller for the test cgroups; 0 if ready. */
static int cgroups_ready(void)
{
	char dir[128], *ctl;
	int has;

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		return -1;
	ctl = ap_slurp(CGROOT "/cgroup.controllers", NULL);
	has = ctl && strstr(ctl, "memory");
	free(ctl);
	if (!has || ap_write_file(CGROOT "/cgroup.subtree_control", "+memory", 7))
		return -1;
	cg_dir(dir, sizeof(dir), "a");
	rmdir(dir);
	if (mkdir(dir, 0755))
		return -1;
	cg_dir(dir, sizeof(dir), "b");
	rmdir(dir);
	if (mkdir(dir, 0755))
		return -1;
	procs_a = cg_procs("a");
	procs_b = cg_procs("b");
	root_procs = open(CGROOT "/cgroup.procs", O_WRONLY);
	alloc_fd = open(AP_TESTDIR "/alloc", O_WRONLY);
	return procs_a < 0 || procs_b < 0 || root_procs < 0 || alloc_fd < 0 ? -1 : 0;
}

int main(void)
{
	char dir[128];

	ksft_print_header();
	page = sysconf(_SC_PAGESIZE);
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (cgroups_ready())
		ksft_exit_fail_msg("no cgroup v2 memory controller for the test cgroups: %s\n",
				   strerror(errno));
	before = ap_slurp(AP_CONTROL, NULL);
	AP_RUN_STEPS(steps);
	free(before);
	/* The test module's file held open would keep it loaded. */
	close(alloc_fd);
	close(root_procs);
	close(procs_a);
	close(procs_b);
	ap_unload_all();
	cg_dir(dir, sizeof(dir), "a");
	rmdir(dir);
	cg_dir(dir, sizeof(dir), "b");
	rmdir(dir);
	ksft_finished();
}
