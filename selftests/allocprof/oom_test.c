// SPDX-License-Identifier: GPL-2.0
/*
 * oom_test: a real OOM.  The test module holds most of the memory at one
 * call site (its "hold" file: single pages at aptest_hold_alloc()),
 * then a child process (oom_score_adj 1000, the parent -1000) touches
 * anonymous memory until the OOM killer kills it.  The OOM report (from
 * "invoked oom-killer" to "Killed process") ends its show_mem() part with
 * upstream's "Memory allocations:" list, which allocprof prints: the held
 * call site comes first there with exactly the figures /proc/allocinfo
 * showed right before the child started (bytes as string_get_size() writes
 * them, calls exact).  The child dies of SIGKILL, one OOM kill, and the
 * kernel goes on: the pages are freed and the site is back at 0/0.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "allocprof_lib.h"

#define HOLD AP_TESTDIR "/hold"
#define ADJ "/proc/self/oom_score_adj"
#define FUNC "aptest_hold_alloc"
#define SITE_TAIL " [allocprof_test] func:" FUNC
#define CHILD_COMM "oom_test_child"
#define OOM_LINE " invoked oom-killer: "
#define KILLED_LINE "Out of memory: Killed process "
/*
 * Memory left available after the hold, for this program and the rest of
 * the guest until the child takes it: not an exact quantity (whatever the
 * kernel allocates meanwhile), only enough to run until the child starts,
 * and for the child to take so much that its death gives the kernel room
 * again.  With 64 MiB the child had 25 MiB when the OOM killer came, and
 * killing it was not enough: the shell and the runner were killed too
 * (make check, base, 2026-11-24, the hold in single pages).
 */
#define MARGIN (256LL << 20)
/* The child's anonymous memory is mapped and touched this much at a time. */
#define CHUNK (16UL << 20)

static long long unit, mem_total;
static unsigned long long calls;
static long pages;
static struct ap_fig before;	/* the held site, right before the child */
static long oom_kills;		/* /proc/vmstat oom_kill before the child */
static pid_t child;
static int child_status;

static char klog[1 << 18];
static char *lines[4096];
static int nlines, oom_at = -1, killed_at = -1;

/* A /proc/meminfo field in bytes, or -1. */
static long long mem_field(const char *field)
{
	char buf[4096], key[64], *p;
	long long kb;

	/* Each line, the first too, after a newline. */
	buf[0] = '\n';
	if (ap_read_file("/proc/meminfo", buf + 1, sizeof(buf) - 1) < 0)
		return -1;
	snprintf(key, sizeof(key), "\n%s:", field);
	p = strstr(buf, key);
	if (!p || sscanf(p + strlen(key), "%lld kB", &kb) != 1)
		return -1;
	return kb * 1024;
}

/* /proc/vmstat's oom_kill, or -1. */
static long vmstat_oom_kill(void)
{
	char buf[8192], *p;

	if (ap_read_file("/proc/vmstat", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\noom_kill ");
	return p ? atol(p + strlen("\noom_kill ")) : -1;
}

/* Blocks held, from the hold file (-1 if it cannot be read). */
static long held(void)
{
	struct ap_testsite s;

	return ap_testsites_of(HOLD, &s, 1) == 1 ? (long)s.live : -1;
}

/*
 * Touches anonymous memory until killed.  Touching MemTotal bytes without
 * being killed cannot happen while most of the memory is held and there is
 * no swap (the guest kernels have none: no CONFIG_BLOCK): exit status 3.
 */
static void child_run(void)
{
	long page = sysconf(_SC_PAGESIZE);
	long long done;

	if (ap_write_file(ADJ, "1000", 4))
		_exit(1);
	prctl(PR_SET_NAME, CHILD_COMM);
	for (done = 0; done < mem_total; done += CHUNK) {
		char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		unsigned long off;

		if (p == MAP_FAILED)
			_exit(2);
		for (off = 0; off < CHUNK; off += page)
			p[off] = 1;
	}
	_exit(3);
}

/*
 * The kernel log since the program started, timestamps cut, in lines[];
 * oom_at and killed_at: the line of the (last) "invoked oom-killer" and of
 * the first "Killed process" after it.  Returns how many OOM reports
 * ("invoked oom-killer" lines) there are.
 */
static int read_klog(void)
{
	char *save = NULL, *line, *log;
	int i, reports = 0;

	log = ap_klog(AP_KLOG_NO_TIME);
	snprintf(klog, sizeof(klog), "%s", log ? log : "");
	free(log);
	nlines = 0;
	for (line = strtok_r(klog, "\n", &save); line && nlines < (int)ARRAY_SIZE(lines);
	     line = strtok_r(NULL, "\n", &save))
		lines[nlines++] = line;
	oom_at = -1;
	killed_at = -1;
	for (i = 0; i < nlines; i++) {
		if (strstr(lines[i], OOM_LINE)) {
			reports++;
			oom_at = i;
			killed_at = -1;
		} else if (oom_at >= 0 && killed_at < 0 && !strncmp(lines[i], KILLED_LINE,
								     strlen(KILLED_LINE))) {
			killed_at = i;
		}
	}
	return reports;
}

static void t_hold(int i)
{
	long long avail;
	long want;
	char n[24];
	int ok, rc = -1;

	(void)i;
	avail = mem_field("MemAvailable");
	want = (avail - MARGIN) / unit;
	mem_total = mem_field("MemTotal");
	snprintf(n, sizeof(n), "%ld", want);
	ok = mem_total > 0 && avail > 0 && want > 0 && ap_expect(FUNC, 0, 0) &&
	     ap_klog_clear() == 0;
	if (ok)
		rc = ap_write_file(HOLD, n, strlen(n));
	/*
	 * MemAvailable is an estimate: a hold that stops short (ENOMEM)
	 * counts with what it got, as long as that is more than half of all
	 * memory.
	 */
	if (rc == -ENOMEM)
		ksft_print_msg("the hold stopped short of %ld pages (ENOMEM)\n", want);
	pages = held();
	ok = ok && pages > 0 && (rc == -ENOMEM ? pages < want : rc == 0 && pages == want) &&
	     ap_expect(FUNC, pages * unit, pages * calls);
	/* More than half of all memory: no other call site can have as much. */
	if (ok && 2 * pages * unit <= mem_total) {
		ksft_print_msg("held %lld bytes, not more than half of MemTotal %lld\n",
			       pages * unit, mem_total);
		ok = 0;
	}
	ksft_test_result(ok, "%ld pages of %lld bytes held at " FUNC " (MemAvailable was %lld)\n",
			 pages, unit, avail);
}

static void t_killed(int i)
{
	char adj[16];
	ssize_t len = ap_read_file(ADJ, adj, sizeof(adj));
	int killed;

	(void)i;
	child_status = -1;
	oom_kills = vmstat_oom_kill();
	if (len > 0 && ap_write_file(ADJ, "-1000", 5) == 0) {
		before = ap_site("allocprof_test", FUNC);
		child = fork();
		if (child == 0)
			child_run();
		if (child < 0 || waitpid(child, &child_status, 0) != child)
			child_status = -1;
		ap_write_file(ADJ, adj, len);
	}
	killed = child_status != -1 && WIFSIGNALED(child_status) &&
		 WTERMSIG(child_status) == SIGKILL;
	if (!killed)
		ksft_print_msg("child status %#x (exit 1: %s, 2: mmap failed, 3: %s)\n",
			       child_status, "no oom_score_adj", "touched MemTotal");
	ksft_test_result(killed, "the child (oom_score_adj 1000) touching memory: SIGKILL\n");
}

static void t_one_report(int i)
{
	char want[64];
	int reports = read_klog(), ok;

	(void)i;
	snprintf(want, sizeof(want), KILLED_LINE "%d (" CHILD_COMM ")", child);
	ok = reports == 1 && killed_at > oom_at &&
	     !strncmp(lines[killed_at], want, strlen(want));
	if (oom_at >= 0)
		ksft_print_msg("%s\n", lines[oom_at]);
	if (killed_at >= 0)
		ksft_print_msg("%s\n", lines[killed_at]);
	if (!ok)
		ksft_print_msg("%d OOM report(s), expected 1 killing '%s'\n", reports, want);
	ksft_test_result(ok, "one OOM report, and it killed the child (pid %d)\n", child);
}

static void t_one_kill(int i)
{
	long now = vmstat_oom_kill();

	(void)i;
	ksft_test_result(oom_kills >= 0 && now == oom_kills + 1,
			 "/proc/vmstat oom_kill: %ld, one more than before the child\n", now);
}

/* The line of the report's header (ap_show_mem_header()); -1 unless one. */
static int header_line(void)
{
	int i, at = -1, n = 0;

	for (i = oom_at; oom_at >= 0 && i < killed_at; i++) {
		if (!strcmp(lines[i], ap_show_mem_header(1))) {
			at = i;
			n++;
		}
	}
	return n == 1 ? at : -1;
}

static void t_header(int i)
{
	(void)i;
	ksft_test_result(killed_at > oom_at && header_line() >= 0,
			 "the OOM report has one \"%s\" header\n", ap_show_mem_header(1));
}

static void t_first(int i)
{
	struct ap_fig after = ap_site("allocprof_test", FUNC);
	int at = header_line();
	char want[96], size[16];
	const char *first = at >= 0 && at + 1 < killed_at ? lines[at + 1] : "";
	size_t l = strlen(first), t = strlen(SITE_TAIL);
	int ok;

	(void)i;
	ap_size_text(before.bytes, size, sizeof(size));
	snprintf(want, sizeof(want), "%12s %8llu ", size, before.calls);
	ok = before.found == 1 && before.bytes == pages * unit && after.found == 1 &&
	     after.bytes == before.bytes && after.calls == before.calls &&
	     !strncmp(first, want, strlen(want)) && l > t && !strcmp(first + l - t, SITE_TAIL);
	ksft_print_msg("%s\n", first);
	if (!ok)
		ksft_print_msg("expected '%s...%s' (allocinfo before %lld %llu, after %lld %llu)\n",
			       want, SITE_TAIL, before.bytes, before.calls, after.bytes,
			       after.calls);
	ksft_test_result(ok, "the held site first: '%s', /proc/allocinfo %lld bytes %llu calls\n",
			 want, before.bytes, before.calls);
}

static void t_freed(int i)
{
	(void)i;
	ksft_test_result(ap_write_file(HOLD, "free", 4) == 0 && held() == 0 &&
			 ap_expect(FUNC, 0, 0),
			 "the kernel goes on: the pages freed, " FUNC " back at 0/0\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_hold),
	AP_STEP(t_killed),
	AP_STEP(t_one_report),
	AP_STEP(t_one_kill),
	AP_STEP(t_header),
	AP_STEP(t_first),
	AP_STEP(t_freed),
};

int main(void)
{
	struct ap_testsite s;

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	if (ap_testsites_of(HOLD, &s, 1) != 1 || ap_unit(&s, &unit, &calls))
		ksft_exit_fail_msg("no " HOLD " in the test module\n");
	AP_RUN_STEPS(steps);
	ksft_finished();
}
