/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the allocprof selftests: running guest commands,
 * reading and writing small files.
 */
#ifndef ALLOCPROF_LIB_H
#define ALLOCPROF_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"

/* Runs a shell command quietly; returns its exit status (or -1). */
static inline int ap_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Runs a shell command and reads its standard output into buf (NUL
 * terminated, truncated to size); returns its exit status (or -1).
 */
static inline int ap_sh_out(char *buf, size_t size, const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	size_t len = 0, n;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	buf[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (len < size - 1 && (n = fread(buf + len, 1, size - 1 - len, f)) > 0)
		len += n;
	buf[len] = '\0';
	st = pclose(f);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The number printed by a shell command (e.g. grep -c), or -1. */
static inline long ap_sh_num(const char *fmt, const char *arg)
{
	char buf[64];

	if (ap_sh_out(buf, sizeof(buf), fmt, arg) < 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	return atol(buf);
}

/* Reads a whole small file into buf; returns its length or -errno. */
static inline ssize_t ap_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	while ((size_t)total < size - 1) {
		n = read(fd, buf + total, size - 1 - total);
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		total += n;
	}
	buf[total] = '\0';
	close(fd);
	return total;
}

/* Writes len bytes to path in one write(); returns 0 or -errno. */
static inline int ap_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

/* Is the module loaded (listed in /proc/modules)? */
static inline int ap_module_loaded(const char *name)
{
	char buf[65536], pat[80];
	ssize_t n = ap_read_file("/proc/modules", buf, sizeof(buf));

	if (n < 0)
		return 0;
	snprintf(pat, sizeof(pat), "%s ", name);
	if (!strncmp(buf, pat, strlen(pat)))
		return 1;
	snprintf(pat, sizeof(pat), "\n%s ", name);
	return strstr(buf, pat) != NULL;
}

/*
 * Opens path with flags as user and group nobody (65534), without
 * supplementary groups or capabilities; returns 0 if that worked, else
 * the errno.
 */
static inline int ap_open_as_nobody(const char *path, int flags)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(255);
		fd = open(path, flags);
		_exit(fd < 0 ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#define AP_ALLOCINFO "/proc/allocinfo"
#define AP_SYSCTL "/proc/sys/vm/mem_profiling"
#define AP_TESTDIR "/sys/kernel/debug/allocprof_test"

/* vm.mem_profiling reads exactly want (e.g. "1\n"); says what it read if not. */
static inline int ap_sysctl_is(const char *want)
{
	char buf[32];

	if (ap_read_file(AP_SYSCTL, buf, sizeof(buf)) < 0) {
		ksft_print_msg("vm.mem_profiling: cannot read it\n");
		return 0;
	}
	if (strcmp(buf, want))
		ksft_print_msg("vm.mem_profiling reads '%s', expected '%s'\n", buf, want);
	return !strcmp(buf, want);
}

/*
 * The first line of /proc/allocinfo in format v ("1.0" or "2.0"), and
 * upstream's whole header (lib/alloc_tag.c's print_allocinfo_header()).
 */
#define AP_VERSION_LINE(v) "allocinfo - version: " v "\n"
#define AP_HEADER(v) AP_VERSION_LINE(v) "#     <size>  <calls> <tag info>\n"
#define AP_HEADER_V1 AP_HEADER("1.0")

/* The end of the stacks report's summary when nothing went untracked. */
#define AP_NONE_UNTRACKED "; not tracked: 0 (table full), 0 (nested)\n"

/*
 * A program's checks as a table of steps, each reporting exactly one test
 * result, run `times` times (NULL: once; else *times, known before the
 * run starts, e.g. the number of test sites) with i = 0, 1, ...: the plan
 * is counted from the table, and a step that reports no result or more
 * than one ends the program as failed.
 */
struct ap_step {
	void (*run)(int i);
	const int *times;
};

/* A step run once, and one run for i = 0 .. *times - 1. */
#define AP_STEP(fn) { .run = (fn), .times = NULL }
#define AP_STEP_EACH(fn, times_p) { .run = (fn), .times = (times_p) }

static inline unsigned int ap_steps_plan(const struct ap_step *steps, unsigned int n)
{
	unsigned int i, plan = 0;

	for (i = 0; i < n; i++)
		plan += steps[i].times ? (unsigned int)*steps[i].times : 1;
	return plan;
}

static inline void ap_run_steps(const struct ap_step *steps, unsigned int n)
{
	unsigned int s;

	ksft_set_plan(ap_steps_plan(steps, n));
	for (s = 0; s < n; s++) {
		int i, times = steps[s].times ? *steps[s].times : 1;

		for (i = 0; i < times; i++) {
			unsigned int before = ksft_test_num();

			steps[s].run(i);
			if (ksft_test_num() != before + 1)
				ksft_exit_fail_msg("step %u (%d) reported %u results, not one\n", s, i,
						   ksft_test_num() - before);
		}
	}
}

#define AP_RUN_STEPS(steps) ap_run_steps(steps, ARRAY_SIZE(steps))

/* Reads a whole file of any size; the caller frees the result. */
static inline char *ap_slurp(const char *path, size_t *lenp)
{
	size_t size = 1 << 16, len = 0;
	char *buf = malloc(size);
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (len + 4096 + 1 > size) {
			char *bigger = realloc(buf, size * 2);

			if (!bigger) {
				free(buf);
				close(fd);
				return NULL;
			}
			buf = bigger;
			size *= 2;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

/* One call site's figures in /proc/allocinfo. */
struct ap_fig {
	long long bytes;
	unsigned long long calls;
	int found;
	int inaccurate;		/* format 2.0's "accurate:no" */
};

#define AP_INACCURATE " accurate:no "

/*
 * Cuts format 2.0's keys off a line: the " node:N=BYTES/CALLS" of a call
 * site with allocprof's n flag, then " accurate:no", leaving the tail
 * that version 1.0 has (" func:name "); returns whether " accurate:no"
 * was there.
 */
static inline int ap_cut_inaccurate(char *line)
{
	size_t l = strlen(line), t = strlen(AP_INACCURATE);
	char *key;

	while (l > 1 && line[l - 1] == ' ') {
		line[l - 1] = '\0';
		key = strrchr(line, ' ');
		line[l - 1] = ' ';
		if (!key || strncmp(key, " node:", 6))
			break;
		strcpy(key, " ");
		l = strlen(line);
	}
	if (l < t || strcmp(line + l - t, AP_INACCURATE))
		return 0;
	strcpy(line + l - t, " ");
	return 1;
}

/*
 * The figures of every line of the call site "... [module] func:func"
 * (module NULL: a built-in call site) in /proc/allocinfo, in file order:
 * up to max of them in figs; returns how many lines there are (-1 if the
 * file cannot be read).  A module that went away with memory still
 * allocated leaves lines of its own beside those of its next load.
 */
static inline int ap_site_lines(const char *module, const char *func, struct ap_fig *figs, int max)
{
	char tail[160], *buf, *line, *save = NULL;
	int n = 0;

	if (module)
		snprintf(tail, sizeof(tail), " [%s] func:%s ", module, func);
	else
		snprintf(tail, sizeof(tail), " func:%s ", func);
	buf = ap_slurp(AP_ALLOCINFO, NULL);
	if (!buf)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct ap_fig f = { 0, 0, 1, ap_cut_inaccurate(line) };
		size_t l = strlen(line), t = strlen(tail);

		if (l < t || strcmp(line + l - t, tail))
			continue;
		if (!module && strstr(line, "] func:"))
			continue;
		if (sscanf(line, "%lld %llu", &f.bytes, &f.calls) != 2)
			continue;
		if (n < max)
			figs[n] = f;
		n++;
	}
	free(buf);
	return n;
}

/*
 * The figures of the call site "... [module] func:func" (module NULL: a
 * built-in call site) in /proc/allocinfo; found is the number of its lines.
 */
static inline struct ap_fig ap_site(const char *module, const char *func)
{
	struct ap_fig figs[8], fig = { 0, 0, 0, 0 };
	int n = ap_site_lines(module, func, figs, 8);

	/* The figures of the last line; found counts the lines. */
	if (n > 0) {
		fig = figs[n <= 8 ? n - 1 : 7];
		fig.found = n;
	}
	return fig;
}

/* The test module's call sites, from its debugfs "sites" file. */
/*
 * One line of /proc/allocinfo after the header: "%12lli %8llu " (bytes,
 * calls), then "file:line [module] func:name ", as upstream's
 * alloc_tag_to_text(); the figures never negative.  NULL, or what is wrong.
 */
static inline const char *ap_line_problem(const char *line, size_t len)
{
	char buf[512], *rest, *func, *colon;
	long long bytes;
	unsigned long long calls;
	int off = 0;

	if (len >= sizeof(buf) || len < 24)
		return "length";
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (buf[12] != ' ' || buf[21] != ' ')
		return "columns";
	if (sscanf(buf, "%lld %llu %n", &bytes, &calls, &off) != 2 || off != 22)
		return "figures";
	if (bytes < 0 || memchr(buf, '-', 22))
		return "negative bytes";
	if (calls > LLONG_MAX)
		return "negative calls";
	rest = buf + off;
	func = strstr(rest, " func:");
	colon = strchr(rest, ':');
	if (!func || !colon || colon > func || buf[len - 1] != ' ' || func[6] == ' ')
		return "tag";
	return NULL;
}

struct ap_testsite {
	char name[32];
	char kind[8];
	char detail[40];
	unsigned long live;
};

/* The call sites listed in a test module's "sites" file (path). */
static inline int ap_testsites_of(const char *path, struct ap_testsite *sites, int max)
{
	char buf[16384], *line, *save = NULL;
	int n = 0;

	if (ap_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%31s %7s %39s %lu", sites[n].name, sites[n].kind,
			   sites[n].detail, &sites[n].live) == 4)
			n++;
	}
	return n;
}

static inline int ap_testsites(struct ap_testsite *sites, int max)
{
	return ap_testsites_of(AP_TESTDIR "/sites", sites, max);
}

/* The live entries of the test module's site (-1: no such site). */
static inline long ap_testsite_live(const char *name)
{
	struct ap_testsite sites[32];
	int i, n = ap_testsites(sites, 32);

	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].name, name))
			return sites[i].live;
	return -1;
}

/* Bytes upstream accounts per object of a slab cache: its slab_size. */
static inline long long ap_slab_size(const char *cache)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/slab_size", cache);
	if (ap_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return atoll(buf);
}

/*
 * The kmalloc cache kmalloc(size) uses, as the kernel lists its caches in
 * /sys/kernel/slab: the smallest "kmalloc-<n>" or "kmalloc-<n>k" whose
 * object_size fits (kmalloc_index() picks so from kmalloc_info[] in
 * mm/slab_common.c); NULL above the largest cache.
 */
static inline const char *ap_kmalloc_cache(long long size)
{
	static char names[16][24];
	static long long sizes[16];
	static int n = -1;
	long long best = -1;
	int i, pick = -1;

	if (n < 0) {
		char list[1024], *name, *save = NULL;

		n = 0;
		if (ap_sh_out(list, sizeof(list),
			      "ls /sys/kernel/slab | grep -x 'kmalloc-[0-9]*k\\{0,1\\}'") != 0)
			return NULL;
		for (name = strtok_r(list, "\n", &save); name && n < 16;
		     name = strtok_r(NULL, "\n", &save)) {
			char path[96], buf[32];

			snprintf(path, sizeof(path), "/sys/kernel/slab/%s/object_size", name);
			if (ap_read_file(path, buf, sizeof(buf)) <= 0)
				continue;
			snprintf(names[n], sizeof(names[n]), "%s", name);
			sizes[n++] = atoll(buf);
		}
	}
	for (i = 0; i < n; i++) {
		if (sizes[i] >= size && (best < 0 || sizes[i] < best)) {
			best = sizes[i];
			pick = i;
		}
	}
	return pick < 0 ? NULL : names[pick];
}

/*
 * What a vmalloc area of `bytes` (page-aligned) costs its caller, as
 * mm/vmalloc.c allocates it under the caller's tag: every page (the bulk
 * allocator counts each page as one allocation; huge pages are split into
 * pages, one call each), plus the array of page pointers
 * __vmalloc_area_node() allocates: kmalloc()ed up to a page, else itself
 * vmalloc()ed, recursively.  The vm_struct and vmap_area are allocated at
 * mm/vmalloc.c's own call sites.
 */
static inline int ap_vmalloc_unit(long long bytes, long long *total, unsigned long long *calls)
{
	long page = sysconf(_SC_PAGESIZE);
	long long pages = bytes / page, array = pages * (long long)sizeof(void *);

	*total += pages * page;
	*calls += pages;
	if (array > page)
		return ap_vmalloc_unit((array + page - 1) / page * page, total, calls);
	if (!ap_kmalloc_cache(array) || ap_slab_size(ap_kmalloc_cache(array)) <= 0)
		return -1;
	*total += ap_slab_size(ap_kmalloc_cache(array));
	*calls += 1;
	return 0;
}

/*
 * The number of allocprof's lines with exactly these figures, or -1 if
 * /proc/allocinfo cannot be read.
 */
static inline int ap_own_lines(long long bytes, unsigned long long calls)
{
	char *buf = ap_slurp(AP_ALLOCINFO, NULL), *l, *save = NULL;
	int n = 0;

	if (!buf)
		return -1;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long long b;
		unsigned long long c;
		char file[256];

		if (sscanf(l, "%lld %llu %255s", &b, &c, file) == 3 && b == bytes &&
		    c == calls && !strncmp(file, "src/", 4) && strstr(l, " [allocprof] func:"))
			n++;
	}
	free(buf);
	return n;
}

/*
 * What the kernel counts for a kvmalloc() of @size bytes that kmalloc
 * serves: an object of its kmalloc cache, or above the largest cache the
 * power-of-two pages of a large kmalloc.  0 on success.
 */
static inline int ap_kvmalloc_figures(long long size, long long *bytes, unsigned long long *calls)
{
	const char *cache = ap_kmalloc_cache(size);
	long page = sysconf(_SC_PAGESIZE);
	long long pages = 1;

	*calls = 1;
	if (cache) {
		*bytes = ap_slab_size(cache);
		return *bytes > 0 ? 0 : -1;
	}
	while (pages * page < size)
		pages *= 2;
	*bytes = pages * page;
	return 0;
}

/*
 * One test result: exactly one of allocprof's src/FILE.rs lines shows
 * @bytes and @calls, the figures of its table @what (@known: they could be
 * computed).
 */
static inline void ap_own_table_result(int known, long long bytes, unsigned long long calls,
				       const char *what)
{
	int n = known ? ap_own_lines(bytes, calls) : -1;

	if (n != 1)
		ksft_print_msg("%d lines of allocprof's at %lld bytes %llu calls\n", n, bytes, calls);
	ksft_test_result(n == 1, "allocprof's %s: one src/ line of %lld bytes, %llu calls\n", what,
			 bytes, calls);
}

/*
 * One test result: allocprof's page back-references (2 bytes for each page
 * frame up to the kernel's max_pfn, the end of the last "System RAM" range
 * of /proc/iomem) show on exactly one of its src/FILE.rs lines, with the
 * figures of a kvmalloc of that size: allocated before allocprof could
 * count, counted once (by allocprof itself, or adopted from the record).
 */
static inline void ap_own_pages_result(void)
{
	long long end = ap_sh_num("printf '%%d\\n' 0x$(grep 'System RAM' /proc/iomem | "
				  "tail -n 1 | sed 's/^ *[0-9a-f]*-\\([0-9a-f]*\\) .*/\\1/')",
				  NULL);
	long long pfns = (end + 1) / sysconf(_SC_PAGESIZE), bytes = -1;
	unsigned long long calls = 0;
	int known = end > 0 && !ap_kvmalloc_figures(pfns * 2, &bytes, &calls);
	char what[96];

	snprintf(what, sizeof(what), "page back-references (%lld page frames, 2 bytes each)",
		 pfns);
	ap_own_table_result(known, bytes, calls, what);
}

/* The number of possible CPUs, from /sys/devices/system/cpu/possible. */
static inline int ap_possible_cpus(void)
{
	char buf[256], *p = buf;
	int n = 0;

	if (ap_read_file("/sys/devices/system/cpu/possible", buf, sizeof(buf)) <= 0)
		return -1;
	while (*p >= '0' && *p <= '9') {
		long a = strtol(p, &p, 10), b = a;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		n += b - a + 1;
		if (*p != ',')
			break;
		p++;
	}
	return n;
}

/* Bytes and calls one allocation at a test site adds to its figures. */
static inline int ap_unit(const struct ap_testsite *s, long long *bytes, unsigned long long *calls)
{
	if (!strcmp(s->kind, "slab")) {
		*bytes = ap_slab_size(s->detail);
		*calls = 1;
		return *bytes > 0 ? 0 : -1;
	}
	if (!strcmp(s->kind, "vmalloc")) {
		*bytes = 0;
		*calls = 0;
		return ap_vmalloc_unit(atoll(s->detail), bytes, calls);
	}
	if (!strcmp(s->kind, "percpu")) {
		/* pcpu_obj_full_size(): the size on every possible CPU, plus memcg's. */
		long long size, extra;
		int cpus = ap_possible_cpus();

		if (sscanf(s->detail, "%lld+%lld", &size, &extra) != 2 || cpus <= 0)
			return -1;
		*bytes = size * cpus + extra;
		*calls = 1;
		return 0;
	}
	if (strcmp(s->kind, "pages"))
		return -1;
	*bytes = atoll(s->detail);
	/* alloc_pages_exact() splits its block: one call per page kept. */
	*calls = strcmp(s->name, "alloc_pages_exact") ? 1 : *bytes / sysconf(_SC_PAGESIZE);
	return 0;
}

/* Bytes and calls of one live entry of the test module's site name. */
static inline int ap_testsite_unit(const char *name, long long *bytes, unsigned long long *calls)
{
	struct ap_testsite sites[32];
	int i, n = ap_testsites(sites, 32);

	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].name, name))
			return ap_unit(&sites[i], bytes, calls);
	return -1;
}

static inline int ap_test_alloc(const char *site, unsigned int count)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u", site, count);
	return ap_write_file(AP_TESTDIR "/alloc", cmd, strlen(cmd));
}

static inline int ap_test_free(const char *site)
{
	return ap_write_file(AP_TESTDIR "/free", site, strlen(site));
}

/* Frees the site's first n live entries, the oldest. */
static inline int ap_test_free_first(const char *site, unsigned int n)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u first", site, n);
	return ap_write_file(AP_TESTDIR "/free", cmd, strlen(cmd));
}

/* Frees the site's last n live entries. */
static inline int ap_test_free_n(const char *site, unsigned int n)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u", site, n);
	return ap_write_file(AP_TESTDIR "/free", cmd, strlen(cmd));
}

/*
 * The call site of module has one line with exactly (bytes, calls); reports
 * what it saw.
 */
static inline int ap_expect_in(const char *module, const char *func, long long bytes,
			       unsigned long long calls)
{
	struct ap_fig f = ap_site(module, func);

	if (f.found == 1 && f.bytes == bytes && f.calls == calls)
		return 1;
	ksft_print_msg("%s: found %d line(s), %lld bytes %llu calls; expected %lld %llu\n",
		       func, f.found, f.bytes, f.calls, bytes, calls);
	return 0;
}

/* The site's figures are exactly (bytes, calls); reports what it saw. */
static inline int ap_expect(const char *func, long long bytes, unsigned long long calls)
{
	return ap_expect_in("allocprof_test", func, bytes, calls);
}

/*
 * The kernel profiles with upstream's built-in profiler (the upstream
 * flavour, the oracle), as the kernel itself says: it lacks the back-end
 * interface of our patches (patch 0002's alloc_tag_backend_register(), in
 * /proc/kallsyms on every patched kernel, whatever is loaded).  Answered
 * once, before any test changes anything.
 */
static inline int ap_builtin_profiler(void)
{
	static int builtin = -1;

	if (builtin < 0)
		builtin = ap_sh("grep -q ' alloc_tag_backend_register$' /proc/kallsyms") != 0;
	return builtin;
}

/*
 * A module of this tree (/lib/modules/<release>/extra/<name>.ko) opened for
 * ap_finit(); the file descriptor, or the test exits.
 */
static inline int ap_module_fd(const char *name)
{
	char path[256];
	struct utsname u;
	int fd;

	uname(&u);
	snprintf(path, sizeof(path), "/lib/modules/%s/extra/%s.ko", u.release, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	return fd;
}

/* finit_module(2) of ap_module_fd()'s module: no shell, no modprobe; 0 or -errno. */
static inline int ap_finit(int fd, const char *params)
{
	return syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
}

/* delete_module(2), as rmmod does it; 0 or -errno. */
static inline int ap_delete(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/*
 * Loads allocprof (with args) and the test module; 0 on success.  An
 * allocprof already loaded is unloaded first; a test module already loaded
 * stays, with what it holds (ap_start() starts from nothing).  With
 * upstream's built-in profiler, only the test module.
 */
static inline int ap_load(const char *args)
{
	if (ap_builtin_profiler())
		return ap_module_loaded("allocprof_test") || !ap_sh("modprobe allocprof_test") ? 0 : -1;
	if (ap_module_loaded("allocprof") && ap_sh("rmmod allocprof"))
		return -1;
	if (ap_sh("modprobe allocprof %s", args ? args : ""))
		return -1;
	/*
	 * allocprof's own Rust lines show from their first allocation (its
	 * module's lines are kept, not listed, while it is unloaded): with its
	 * files read once and a command that matches nothing written to its
	 * control file, the lines of those paths are there before a test
	 * compares two listings.
	 */
	ap_sh("cat %s /sys/kernel/debug/allocprof/* >/dev/null 2>&1; "
	      "echo 'func ap_load_matches_nothing +p' 2>/dev/null "
	      ">/sys/kernel/debug/allocprof/control; true", AP_ALLOCINFO);
	if (!ap_module_loaded("allocprof_test") && ap_sh("modprobe allocprof_test"))
		return -1;
	return 0;
}

/*
 * Unloads the test modules an earlier program left (with their memory:
 * allocprof_test frees all it holds when it goes) and allocprof; 0 when
 * none of them is loaded any more.
 */
static inline int ap_unload_all(void)
{
	static const char *const mods[] = { "allocprof_churn", "allocprof_test2", "allocprof_test",
					     "allocprof_rust_test", "allocprof_rust_many", "allocprof_rust_moved",
					     "allocprof" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mods); i++) {
		if (ap_module_loaded(mods[i]) && ap_sh("rmmod %s", mods[i])) {
			ksft_print_msg("cannot unload %s, left by an earlier test\n", mods[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * A program's start from a clean state, whatever ran before it: what
 * ap_unload_all() unloads goes, then allocprof (with args) and the test
 * module are loaded afresh as by ap_load(); 0 on success.
 */
static inline int ap_start(const char *args)
{
	return ap_unload_all() ? -1 : ap_load(args);
}

/*
 * Each of the n parameter strings in bad[] must fail "insmod allocprof",
 * leave no /proc files behind and put a message in the kernel log: ours
 * (message, a fixed string without a single quote) for "param=value",
 * which the module parses, or the kernel's own naming param for a bare
 * "param", which never reaches the module:
 * AP_BAD_PARAM_RESULTS test results per string, in this order, each of
 * which ap_check_bad_param() reports alone.
 */
enum { AP_BAD_PARAM_LOAD, AP_BAD_PARAM_MESSAGE, AP_BAD_PARAM_RESULTS };

/* One of the results of ap_check_bad_params() for the string bad. */
static inline void ap_check_bad_param(const char *bad, int result, const char *param,
				      const char *message)
{
	if (result == AP_BAD_PARAM_LOAD) {
		int rc = ap_sh("insmod /lib/modules/$(uname -r)/extra/allocprof.ko %s 2>/dev/null",
			       bad);

		ksft_test_result(rc != 0 && !ap_module_loaded("allocprof") &&
				 access(AP_ALLOCINFO, F_OK) && access(AP_SYSCTL, F_OK),
				 "insmod allocprof %s fails, nothing left\n", bad);
	} else if (strchr(bad, '=')) {
		ksft_test_result(ap_sh("dmesg -c | grep -q -F '%s'", message) == 0,
				 "insmod allocprof %s: message in the kernel log\n", bad);
	} else {
		ksft_test_result(ap_sh("dmesg -c | grep -q 'invalid for parameter .%s.'", param) == 0,
				 "insmod allocprof %s: the kernel's message in its log\n", bad);
	}
}

static inline void ap_check_bad_params(const char *const *bad, unsigned int n,
				       const char *param, const char *message)
{
	unsigned int i;
	int r;

	for (i = 0; i < n; i++)
		for (r = 0; r < AP_BAD_PARAM_RESULTS; r++)
			ap_check_bad_param(bad[i], r, param, message);
}

/* allocprof's per-site control (debugfs) and its stacks report. */
#define AP_CONTROL "/sys/kernel/debug/allocprof/control"
#define AP_STACKS "/sys/kernel/debug/allocprof/stacks"
#define AP_NODES "/sys/kernel/debug/allocprof/nodes"
/* Nodes a nodes report line may name: the guest has two. */
#define AP_MAX_NODES 8

/*
 * The bytes and calls of the lines of text, a nodes report, that end in
 * `tail` (e.g. " func:NAME") and a node, added up by node; 0, or -1 if a
 * line names a node from AP_MAX_NODES on.
 */
static inline int ap_node_figures(const char *text, const char *tail,
				  long long bytes[AP_MAX_NODES], long long calls[AP_MAX_NODES])
{
	char end[128];
	const char *line, *at;
	size_t e;

	snprintf(end, sizeof(end), "%s node:", tail);
	e = strlen(end);
	memset(bytes, 0, AP_MAX_NODES * sizeof(*bytes));
	memset(calls, 0, AP_MAX_NODES * sizeof(*calls));
	for (line = text; *line; line = strchrnul(line, '\n') + !!*strchrnul(line, '\n')) {
		const char *nl = strchrnul(line, '\n');
		long long b, c;
		int node;

		at = strstr(line, end);
		if (line[0] == '#' || !at || at > nl || sscanf(line, "%lld %lld", &b, &c) != 2 ||
		    sscanf(at + e, "%d", &node) != 1)
			continue;
		if (node < 0 || node >= AP_MAX_NODES)
			return -1;
		bytes[node] += b;
		calls[node] += c;
	}
	return 0;
}

/*
 * The flags of call site func of module (the control file's name: vmlinux
 * for a built-in one) in the control file; whether it has one such line.
 */
static inline int ap_flags_in(const char *module, const char *func, char *flags, size_t size)
{
	char tail[160], *buf = ap_slurp(AP_CONTROL, NULL), *line, *save = NULL;
	int found = 0;

	if (!buf)
		return 0;
	snprintf(tail, sizeof(tail), " [%s]%s =", module, func);
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

/* The flags of the test module's call site func in the control file. */
static inline int ap_flags_of(const char *func, char *flags, size_t size)
{
	return ap_flags_in("allocprof_test", func, flags, size);
}

/* Whether the flags of call site func of module are want (else says so). */
static inline int ap_flags_are_in(const char *module, const char *func, const char *want)
{
	char flags[8] = "";

	if (ap_flags_in(module, func, flags, sizeof(flags)) && !strcmp(flags, want))
		return 1;
	ksft_print_msg("%s %s: flags '%s', expected '%s'\n", module, func, flags, want);
	return 0;
}

/* Whether the flags of the test module's call site func are want (else says so). */
static inline int ap_flags_are(const char *func, const char *want)
{
	return ap_flags_are_in("allocprof_test", func, want);
}

/* One record of the stacks file. */
struct ap_chain {
	long long bytes;
	unsigned long long calls;
	int pid;
	char comm[32];
	char first[256];	/* its first line */
	char frames[2048];
};

/*
 * The records of the stacks file whose first line has " [module] func:<func>
 * pid:" (module NULL: a built-in call site, " func:<func> pid:");
 * returns how many (up to max).
 */
static inline int ap_chains_in(const char *module, const char *func, struct ap_chain *out,
			       int max)
{
	char key[160], *buf = ap_slurp(AP_STACKS, NULL), *line, *next;
	struct ap_chain *cur = NULL;
	int n = 0, in_record = 0;

	if (!buf)
		return -1;
	if (module)
		snprintf(key, sizeof(key), " [%s] func:%s pid:", module, func);
	else
		snprintf(key, sizeof(key), " func:%s pid:", func);
	/*
	 * A record: its first line (after the header or a blank line), then
	 * its frames, indented by four spaces, then a blank line.
	 */
	for (line = buf; line && *line; line = next) {
		int first = !in_record;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		in_record = *line != '\0';
		if (!*line || line[0] == '#') {
			in_record = 0;
			cur = NULL;
		} else if (!first) {
			size_t l;

			if (!cur || strncmp(line, "    ", 4))
				continue;
			l = strlen(cur->frames);
			snprintf(cur->frames + l, sizeof(cur->frames) - l, "%s\n", line + 4);
		} else {
			struct ap_chain c;
			char *pid = strstr(line, " pid:");

			memset(&c, 0, sizeof(c));
			cur = NULL;
			snprintf(c.first, sizeof(c.first), "%s", line);
			if (strstr(line, key) && pid && n < max && (module || !strstr(line, "] func:")) &&
			    sscanf(line, "%lld %llu", &c.bytes, &c.calls) == 2 &&
			    sscanf(pid, " pid:%d comm:%31[^\n]", &c.pid, c.comm) >= 1) {
				out[n] = c;
				cur = &out[n++];
			}
		}
	}
	free(buf);
	return n;
}

/* The records of the stacks file for the test module's call site func. */
static inline int ap_chains_of(const char *func, struct ap_chain *out, int max)
{
	return ap_chains_in("allocprof_test", func, out, max);
}

/*
 * Sums the chains of call site func of module (NULL: built in); returns how
 * many there are.
 */
static inline int ap_chain_sum_in(const char *module, const char *func, long long *bytes,
				  unsigned long long *calls)
{
	struct ap_chain c[64];
	int i, n = ap_chains_in(module, func, c, 64);

	*bytes = 0;
	*calls = 0;
	for (i = 0; i < n && i < 64; i++) {
		*bytes += c[i].bytes;
		*calls += c[i].calls;
	}
	return n;
}

/* Sums the chains of the test module's func; returns how many there are. */
static inline int ap_chain_sum(const char *func, long long *bytes, unsigned long long *calls)
{
	return ap_chain_sum_in("allocprof_test", func, bytes, calls);
}

/*
 * A size as the kernel's memory report (show_mem(): SysRq-m, the OOM
 * report) prints a call site's bytes: string_get_size(size, 1,
 * STRING_UNITS_2, ...).
 */
static inline void ap_size_text(unsigned long long size, char *buf, size_t len)
{
	static const char *const units[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi" };
	static const unsigned int rounding[] = { 500, 50, 5 };
	unsigned int i = 0, j, remainder = 0, sf_cap;
	char tmp[12] = "";

	if (size) {
		while (size >> 32) {
			size /= 1024;
			i++;
		}
		while (size >= 1024) {
			remainder = size % 1024;
			size /= 1024;
			i++;
		}
		sf_cap = size;
		for (j = 0; sf_cap * 10 < 1000; j++)
			sf_cap *= 10;
		remainder = remainder * 1000 >> 10;
		remainder += rounding[j];
		if (remainder >= 1000) {
			remainder -= 1000;
			size += 1;
		}
		if (j) {
			snprintf(tmp, sizeof(tmp), ".%03u", remainder);
			tmp[j + 1] = '\0';
		}
	}
	snprintf(buf, len, "%u%s %sB", (unsigned int)size, tmp, units[i]);
}

#endif /* ALLOCPROF_LIB_H */
