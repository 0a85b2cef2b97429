// SPDX-License-Identifier: GPL-2.0
/*
 * paths_test: the allocation paths that only a production-shaped kernel
 * (NUMA, THP, migration, compaction, memcg) has, with exact figures:
 *
 * - batch sites of the test module: split_page(), alloc_pages_bulk_array(),
 *   kmem_cache_alloc_bulk() with kmem_cache_free_bulk(), part freed;
 * - a partial free: __free_pages() of a non-compound order-2 page whose
 *   first page has another reference frees the three tail pages only;
 * - __GFP_ACCOUNT kmalloc() and pages, charged to a memory cgroup;
 * - a THP faulted in by this process, split (debugfs split_huge_pages) and
 *   partly unmapped;
 * - anonymous pages moved to the other node with move_pages(2): the pages
 *   keep their call site, the migration target's call site shows nothing;
 *   with allocprof's n flag on their call site, its figures by node move
 *   with them;
 * - compaction (/proc/sys/vm/compact_memory) moving pages changes no figure:
 *   the test's own pages moved (their page frame numbers in
 *   /proc/self/pagemap changed), or the check fails.
 *
 * It runs on the upstream flavour too, against upstream's built-in
 * profiler (the oracle): the same workload must give the same figures.
 * Built-in call sites are found by function; where a function has several
 * call sites (a THP fault also allocates a page table), the test picks the
 * line that moved by exactly what it allocated and follows that line.
 * Between two readings of /proc/allocinfo the test prints nothing and
 * touches no new memory of its own, so that no other anonymous page fault
 * of its own lands at the call sites it watches; the windows that watch a
 * call site every process uses (folio_prealloc) are checked to be quiet
 * (see QUIET_TRIES).  NUMA balancing and proactive compaction are off
 * while it runs (knobs): no hinting fault, and no page moved behind its
 * back.  A window whose frees the kernel has not finished (a page it
 * still holds) waits for them (settle_holes()).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "allocprof_lib.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif

#define MAX_LINES 16
#define INFO_SIZE (8 << 20)
#define THP_SIZE (2UL << 20)
#define NR_THP 2
#define NR_MOVE 64
/* At most this much memory for the compaction test (see compact_bytes). */
#define COMPACT_MAX_BYTES (1UL << 30)
/* Every other run of this many pages is freed before compaction. */
#define COMPACT_HOLE 16
/*
 * MEMCG_CHARGE_BATCH, the pages a CPU precharges at once, comes from the
 * kernel's include/linux/memcontrol.h (the Makefile reads it).
 */
#ifndef MEMCG_CHARGE_BATCH
#error "MEMCG_CHARGE_BATCH: build with the selftests' Makefile"
#endif
#define CGROUP "/sys/fs/cgroup/allocprof_paths"

static char info[INFO_SIZE];
static long page_size;
static int builtin;

/* One line of a function's call sites, by its tag text. */
struct line {
	char tag[192];
	long long bytes;
	long long calls;
};

struct snap {
	int n;
	struct line l[MAX_LINES];
};

/* Reads /proc/allocinfo into the prefaulted buffer; 0 or -1. */
static int read_info(void)
{
	int fd = open(AP_ALLOCINFO, O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, info + len, INFO_SIZE - 1 - len)) > 0)
		len += n;
	close(fd);
	info[len] = '\0';
	return n < 0 || len >= INFO_SIZE - 1 ? -1 : 0;
}

/* The lines of the built-in function func; -1 if unreadable. */
static int take(const char *func, struct snap *s)
{
	char tail[96];
	struct ap_lines w;
	struct ap_info_line l;
	size_t t;

	snprintf(tail, sizeof(tail), " func:%s ", func);
	t = strlen(tail);
	s->n = 0;
	if (read_info())
		return -1;
	/* The prefaulted buffer walked in place: nothing is allocated. */
	ap_lines_of(&w, info, strlen(info), 0);
	while (ap_info_next(&w, &l)) {
		size_t off;

		/*
		 * Format 2.0 (7.3's default) may end a line in " accurate:no":
		 * cut, so that the tag is the same in either format.
		 */
		ap_cut_inaccurate(l.text);
		l.len = strlen(l.text);
		if (l.len < t || l.len >= sizeof(s->l[0].tag) ||
		    memcmp(l.text + l.len - t, tail, t) || memchr(l.text, '[', l.len) ||
		    s->n == MAX_LINES || !l.figures)
			continue;
		/* The figures, then the tag: the rest of the line. */
		off = l.tag - l.text;
		s->l[s->n].bytes = l.bytes;
		/* As "%lld" read the calls: above LLONG_MAX (%llu of a negative sum), LLONG_MAX. */
		s->l[s->n].calls = l.calls > LLONG_MAX ? LLONG_MAX : (long long)l.calls;
		memcpy(s->l[s->n].tag, l.tag, l.len - off);
		s->l[s->n].tag[l.len - off] = '\0';
		s->n++;
	}
	return ap_lines_end(&w);
}

static const struct line *find(const struct snap *s, const char *tag)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->l[i].tag, tag))
			return &s->l[i];
	return NULL;
}

/*
 * The one line that moved by exactly (bytes, calls) from a to b; NULL and a
 * message if there is none or more than one.
 */
static const struct line *moved(const struct snap *a, const struct snap *b, const char *func,
				long long bytes, long long calls)
{
	const struct line *hit = NULL;
	int hits = 0;

	for (int i = 0; i < b->n; i++) {
		const struct line *o = find(a, b->l[i].tag);
		long long ob = o ? o->bytes : 0, oc = o ? o->calls : 0;

		if (b->l[i].bytes - ob == bytes && b->l[i].calls - oc == calls) {
			hit = &b->l[i];
			hits++;
		}
	}
	if (hits == 1)
		return hit;
	ksft_print_msg("%s: %d line(s) moved by %lld bytes %lld calls; its lines now:\n", func,
		       hits, bytes, calls);
	for (int i = 0; i < b->n; i++) {
		const struct line *o = find(a, b->l[i].tag);

		ksft_print_msg("  %lld %lld (was %lld %lld) %s\n", b->l[i].bytes, b->l[i].calls,
			       o ? o->bytes : 0, o ? o->calls : 0, b->l[i].tag);
	}
	return NULL;
}

/* The line tag moved by exactly (bytes, calls) from a to b. */
static int delta_is(const struct snap *a, const struct snap *b, const char *tag, long long bytes,
		    long long calls)
{
	const struct line *o = find(a, tag), *n = find(b, tag);
	long long db = (n ? n->bytes : 0) - (o ? o->bytes : 0);
	long long dc = (n ? n->calls : 0) - (o ? o->calls : 0);

	if (db == bytes && dc == calls)
		return 1;
	ksft_print_msg("%s: moved by %lld bytes %lld calls; expected %lld %lld\n", tag, db, dc,
		       bytes, calls);
	return 0;
}

/* The bytes of all the lines of a snapshot. */
static long long sum_of(const struct snap *s)
{
	long long sum = 0;

	for (int i = 0; i < s->n; i++)
		sum += s->l[i].bytes;
	return sum;
}

/* Every line of the function is unchanged from a to b. */
static int unchanged(const struct snap *a, const struct snap *b)
{
	int ok = a->n == b->n;

	for (int i = 0; i < b->n; i++)
		ok &= delta_is(a, b, b->l[i].tag, 0, 0);
	return ok;
}

/* The value of /proc/vmstat line name (l bytes) in buf, or -1. */
static long long vmstat_in(const char *buf, const char *name, size_t l)
{
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, name, l) && p[l] == ' ')
			return atoll(p + l + 1);
	return -1;
}

/* A counter of /proc/vmstat, or -1. */
static long long vmstat(const char *name)
{
	static char buf[16384];

	if (ap_read_file("/proc/vmstat", buf, sizeof(buf)) < 0)
		return -1;
	return vmstat_in(buf, name, strlen(name));
}

/* The results of a batch site, in order. */
enum { BATCH_ALLOCATED, BATCH_PART_FREED, BATCH_FREED, NBATCH };
static const char *const batch_names[] = { "split_page", "pages_bulk", "cache_bulk" };
static const int nbatch = NBATCH * ARRAY_SIZE(batch_names);

/* Batch sites: part of the entries freed, the figures follow exactly. */
static void t_batch(int k)
{
	static unsigned long long calls;
	static long long unit;
	static long live;
	const char *name = batch_names[k / NBATCH];
	char func[64];
	int ok;

	snprintf(func, sizeof(func), "aptest_%s", name);
	switch (k % NBATCH) {
	case BATCH_ALLOCATED:
		ok = !ap_testsite_unit(name, &unit, &calls) && ap_test_alloc(name, 3) == 0;
		live = ap_testsite_live(name);
		ok = ok && live > 3 && ap_expect(func, live * unit, live * calls);
		ksft_test_result(ok, "%s: 3 allocations, %ld entries counted exactly\n", func, live);
		break;
	case BATCH_PART_FREED:
		ok = ap_test_free_n(name, 5) == 0 &&
		     ap_expect(func, (live - 5) * unit, (live - 5) * calls);
		ksft_test_result(ok, "%s: 5 entries freed, the other %ld counted\n", func, live - 5);
		break;
	default:
		ok = ap_test_free(name) == 0 && ap_expect(func, 0, 0);
		ksft_test_result(ok, "%s: all freed, 0/0\n", func);
	}
}

/* A number from a cgroup file, or -1. */
static long long cg_read(const char *file)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), CGROUP "/%s", file);
	return ap_read_file(path, buf, sizeof(buf)) > 0 ? atoll(buf) : -1;
}

/*
 * The test module's pages_partial site: each allocation is of 4 pages, of
 * which __free_pages() frees the 3 tail pages at once; the first page, 1
 * call, stays counted until its own free.
 */
static void t_partial(int i)
{
	const char *func = "aptest_pages_partial";
	int ok;

	(void)i;
	ok = ap_test_alloc("pages_partial", 3) == 0 &&
	     ap_expect(func, 3 * page_size, 3);
	ksft_test_result(ok, "%s: 3 allocations, the tail pages freed: 3 pages, 3 calls\n", func);
}

static void t_partial_freed(int i)
{
	const char *func = "aptest_pages_partial";

	(void)i;
	ksft_test_result(ap_test_free("pages_partial") == 0 && ap_expect(func, 0, 0),
			 "%s: the first pages freed, 0/0\n", func);
}

/* The results of an accounted site, in order. */
enum { ACCOUNT_CHARGED, ACCOUNT_COUNTED, ACCOUNT_FREED, NACCOUNT };
static const char *const account_names[] = { "kmalloc_account", "pages_account" };
/* More than a charge batch (the CPU's stock) of either. */
static const unsigned int account_count[] = { 4096, 256 };
static const int naccount = NACCOUNT * ARRAY_SIZE(account_names);
static int in_cg;
static char pid_text[16];

/* __GFP_ACCOUNT allocations made by a task in a memory cgroup. */
static void t_cgroup(int i)
{
	(void)i;
	in_cg = (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 ||
		 mount("none", "/sys/fs/cgroup", "cgroup2", MS_SILENT, NULL) == 0) &&
		ap_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory\n", 8) == 0 &&
		(mkdir(CGROUP, 0755) == 0 || errno == EEXIST);
	snprintf(pid_text, sizeof(pid_text), "%d", getpid());
	in_cg = in_cg && ap_write_file(CGROUP "/cgroup.procs", pid_text, strlen(pid_text)) == 0;
	ksft_test_result(in_cg, "the test runs in memory cgroup %s\n", CGROUP);
}

static void t_account(int k)
{
	static long long unit;
	static unsigned long long calls;
	const char *name = account_names[k / NACCOUNT];
	unsigned int count = account_count[k / NACCOUNT];
	long long before, after, least;
	char func[64];
	int ok;

	snprintf(func, sizeof(func), "aptest_%s", name);
	switch (k % NACCOUNT) {
	case ACCOUNT_CHARGED:
		before = cg_read("memory.current");
		ok = in_cg && !ap_testsite_unit(name, &unit, &calls) &&
		     ap_test_alloc(name, count) == 0;
		after = cg_read("memory.current");
		/*
		 * Charged to the cgroup: memory.current grew by what was
		 * allocated, less at most the charge batch the CPU (the test
		 * runs on CPU 0 only) had in stock: not an exact figure.
		 */
		least = count * unit - MEMCG_CHARGE_BATCH * page_size;
		ok = ok && before >= 0 && after - before >= least;
		ksft_test_result(ok, "%s: %u allocations charged to the cgroup (%lld bytes more; at least %lld, as the CPU's charge stock of up to %u pages may have paid for some)\n",
				 func, count, after - before, least, MEMCG_CHARGE_BATCH);
		break;
	case ACCOUNT_COUNTED:
		ok = ap_expect(func, count * unit, count * calls);
		ksft_test_result(ok, "%s: counted exactly, %lld bytes %llu calls\n", func,
				 count * unit, count * calls);
		break;
	default:
		ok = ap_test_free(name) == 0 && ap_expect(func, 0, 0);
		ksft_test_result(ok, "%s: freed, 0/0\n", func);
	}
	if (k == naccount - 1) {
		/* Back to the root cgroup, so that the cgroup can go. */
		ap_write_file("/sys/fs/cgroup/cgroup.procs", pid_text, strlen(pid_text));
		rmdir(CGROUP);
	}
}

/* split_huge_pages for this process's range [start, end). */
static int split_range(void *start, void *end)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "%d,%p,%p", getpid(), start, end);
	return ap_write_file("/sys/kernel/debug/split_huge_pages", cmd, strlen(cmd));
}

/*
 * THP: the figures of the line that moved of the function that allocates a
 * huge page on an anonymous fault: do_huge_pmd_anonymous_page() on 6.12,
 * vma_alloc_anon_folio_pmd() on 7.3 (thp_func(); the kernels between are
 * not tested here).
 */
static struct {
	const char *func;
	struct snap s0, s1, s2, s3, s4;
	const struct line *l;
	char tag[192];
	size_t len;
	char *map, *p;
} thp;

/* The THP fault's allocating function on the running kernel. */
static const char *thp_func(void)
{
	return ap_kernel_major() >= 7 ? "vma_alloc_anon_folio_pmd" : "do_huge_pmd_anonymous_page";
}

static void t_thp_fault(int i)
{
	int ok;

	(void)i;
	thp.func = thp_func();
	thp.len = (NR_THP + 1) * THP_SIZE;
	thp.map = mmap(NULL, thp.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (thp.map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	thp.p = (char *)(((unsigned long)thp.map + THP_SIZE - 1) & ~(THP_SIZE - 1));
	ok = madvise(thp.p, NR_THP * THP_SIZE, MADV_HUGEPAGE) == 0;
	if (!ok)
		ksft_print_msg("madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	ok = ok && take(thp.func, &thp.s0) == 0;
	for (size_t off = 0; off < NR_THP * THP_SIZE; off += page_size)
		thp.p[off] = 1;
	/* No collapse by khugepaged behind the test's back once split. */
	ok = ok && madvise(thp.p, NR_THP * THP_SIZE, MADV_NOHUGEPAGE) == 0 &&
	     take(thp.func, &thp.s1) == 0;
	if (!ok)
		ksft_print_msg("THP set-up failed: %s\n", strerror(errno));
	if (ok)
		thp.l = moved(&thp.s0, &thp.s1, thp.func, NR_THP * THP_SIZE, NR_THP);
	if (thp.l)
		strcpy(thp.tag, thp.l->tag);
	ksft_test_result(thp.l != NULL, "THP: %d huge pages faulted in: +%lu bytes, +%d calls at %s\n",
			 NR_THP, NR_THP * THP_SIZE, NR_THP, thp.tag);
}

/* A split: each huge page becomes 512 pages, one call each. */
static void t_thp_split(int i)
{
	int ok;

	(void)i;
	if (thp.l && split_range(thp.p, thp.p + NR_THP * THP_SIZE))
		ksft_print_msg("split_huge_pages: %s\n", strerror(errno));
	ok = thp.l && take(thp.func, &thp.s2) == 0 &&
	     delta_is(&thp.s0, &thp.s2, thp.tag, NR_THP * THP_SIZE, NR_THP * (THP_SIZE / page_size));
	ksft_test_result(ok, "THP: split into pages: same bytes, %lu calls\n",
			 NR_THP * (THP_SIZE / page_size));
}

/* Half of the first one unmapped: those pages are freed. */
static void t_thp_unmap_half(int i)
{
	int ok;

	(void)i;
	ok = thp.l && munmap(thp.p, THP_SIZE / 2) == 0 && take(thp.func, &thp.s3) == 0 &&
	     delta_is(&thp.s0, &thp.s3, thp.tag, NR_THP * THP_SIZE - THP_SIZE / 2,
		      NR_THP * (THP_SIZE / page_size) - THP_SIZE / 2 / page_size);
	ksft_test_result(ok, "THP: half a huge page unmapped: %lu bytes, %lu calls less\n",
			 THP_SIZE / 2, THP_SIZE / 2 / page_size);
}

static void t_thp_unmap(int i)
{
	int ok;

	(void)i;
	ok = thp.l && munmap(thp.map, thp.len) == 0 && take(thp.func, &thp.s4) == 0 &&
	     delta_is(&thp.s0, &thp.s4, thp.tag, 0, 0);
	ksft_test_result(ok, "THP: all unmapped: back to the figures before\n");
}

static long move_pages_(int count, void **pages, const int *nodes, int *status)
{
	return syscall(SYS_move_pages, 0, count, pages, nodes, status, 0);
}

/*
 * Page faults anywhere in the system (/proc/vmstat pgfault).  The test's
 * own memory is locked in (main()), so while it measures it faults only
 * the pages it means to.  The processes that carry its output (the
 * runner's shell and sed) fault theirs when they like, and their anonymous
 * pages come from the same call site as the test's (seen in CI once: one
 * page more than the test's 120016).  A window with exactly the test's own
 * faults had none of theirs; one with more is measured again, at most
 * QUIET_TRIES times, each try with every figure checked exactly.
 */
#define QUIET_TRIES 3

/*
 * PATHS_DISCARD_TRIES=N (environment, or the guest's kernel command line):
 * the first N tries of each measurement are measured again even when quiet,
 * each leaving pages to another CPU's LRU batch (leave_in_other_batch()),
 * so that a retry, which a loaded machine needs only now and then, runs
 * every time and from the worst state a try can leave (make check's base
 * run, scripts/gate-soak).  0 unless set; at most QUIET_TRIES - 1.
 */
static int discard_tries;

static long long faults(void)
{
	return vmstat("pgfault");
}

/* Runs the test on CPU cpu; 0 or -1. */
static int run_on(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Drains the LRU batch of every online CPU (MADV_COLD on one page of map
 * drains the running CPU's batch and frees nothing), then runs on CPU 0
 * again; 0 or -1.
 */
static int drain_every_cpu(char *map)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int err = 0;

	for (int cpu = cpus - 1; cpu >= 0; cpu--)
		err |= run_on(cpu) || madvise(map, page_size, MADV_COLD);
	return err ? -1 : 0;
}

/*
 * Frees what an earlier step or try left to the CPUs' LRU batches: pages
 * it unmapped whose last reference a batch still held (migration and
 * compaction put the pages they move back on the LRU through the running
 * CPU's batch).  Drained inside a try's window, such a page was freed
 * there and counted as one of the try's own (make check, 2026-11-26: a
 * retried compaction's folio_prealloc one page short, the first try's).
 * Needs no page: 0 or -1.
 */
static int drain_lru_batches(void)
{
	char *map = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	int err;

	if (map == MAP_FAILED)
		return -1;
	err = drain_every_cpu(map);
	munmap(map, page_size);
	return err;
}

/*
 * What a try can leave behind at its worst, made on purpose after each
 * discarded try: LEFT_PAGES pages of this process faulted in on the last
 * CPU and unmapped from CPU 0, whose last reference that CPU's LRU batch
 * keeps (as kcompactd's migrations there can leave the test's pages).  The
 * next try must not see them freed (drain_lru_batches()); without that
 * drain the retried compaction is LEFT_PAGES pages short.  0 or -1.
 */
#define LEFT_PAGES 8
static int leave_in_other_batch(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char *map = mmap(NULL, LEFT_PAGES * page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (map == MAP_FAILED)
		return -1;
	err = run_on(cpus - 1);
	for (int i = 0; !err && i < LEFT_PAGES; i++)
		map[i * page_size] = 1;
	err |= run_on(0);
	munmap(map, LEFT_PAGES * page_size);
	return err ? -1 : 0;
}

/*
 * Runs once() (0, or -1 and a message if a call failed) until the window
 * it measured in had exactly the test's own `want` page faults, at most
 * QUIET_TRIES times; 1 if it did, with every call done.  Each try starts
 * with the CPUs' LRU batches drained, so that nothing an earlier try or
 * step freed can still be freed in its window.
 */
static int measure_quietly(const char *what, int (*once)(void), long long want)
{
	for (int try = 0; try < QUIET_TRIES; try++) {
		long long f0, got;
		int done;

		if (drain_lru_batches() < 0) {
			ksft_print_msg("%s: draining the LRU batches: %s\n", what, strerror(errno));
			return 0;
		}
		f0 = faults();
		done = once() == 0;
		got = faults() - f0;

		if (!done)
			return 0;
		if (f0 >= 0 && got == want && try >= discard_tries) {
			if (try)
				ksft_print_msg("%s, try %d of %d: quiet\n", what, try + 1, QUIET_TRIES);
			return 1;
		}
		if (f0 >= 0 && got == want) {
			ksft_print_msg("%s, try %d of %d: quiet, discarded (PATHS_DISCARD_TRIES=%d): measured again\n",
				       what, try + 1, QUIET_TRIES, discard_tries);
			if (leave_in_other_batch() < 0) {
				ksft_print_msg("%s: leaving pages to another CPU's batch: %s\n", what,
					       strerror(errno));
				return 0;
			}
		} else
			ksft_print_msg("%s, try %d of %d: %lld page faults in the window, the test's own %lld: %s\n",
				       what, try + 1, QUIET_TRIES, got, want,
				       try + 1 < QUIET_TRIES ? "measured again" : "no quiet window");
	}
	return 0;
}

/*
 * Anonymous pages of this process, faulted in, moved to node 1 with
 * move_pages(2) and unmapped: measured at once in a quiet window by the
 * first step, reported by the four.
 */
static struct {
	const char *func, *target;
	struct snap a0, a1, a2, a3, t0, t2;
	void *pages[NR_MOVE];
	int nodes[NR_MOVE], status[NR_MOVE];
	int on0, on1;
	const struct line *l;
	char tag[192];
	int ok;
} mig = { .func = "folio_prealloc", .target = "alloc_migration_target" };

/*
 * NR_MOVE anonymous pages, not faulted in yet: mig.pages their addresses,
 * mig.nodes all 1 (where they go), mig.status unknown.
 */
static char *map_to_move(void)
{
	char *map = mmap(NULL, NR_MOVE * page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (int i = 0; i < NR_MOVE; i++) {
		mig.pages[i] = map + i * page_size;
		mig.nodes[i] = 1;
		mig.status[i] = -1;
	}
	return map;
}

/* One try; 0, or -1 and a message if a call failed. */
static int migrate_once(void)
{
	char *map = map_to_move();
	int ok;

	mig.on0 = mig.on1 = 0;
	ok = take(mig.func, &mig.a0) == 0 && take(mig.target, &mig.t0) == 0;
	/* Faulted in from CPU 0 (main()), whose node is 0: the pages are on node 0. */
	for (int i = 0; i < NR_MOVE; i++)
		map[i * page_size] = 1;
	ok = ok && take(mig.func, &mig.a1) == 0 &&
	     move_pages_(NR_MOVE, mig.pages, NULL, mig.status) == 0;
	for (int i = 0; ok && i < NR_MOVE; i++) {
		mig.on0 += mig.status[i] == 0;
		mig.status[i] = -1;
	}
	ok = ok && move_pages_(NR_MOVE, mig.pages, mig.nodes, mig.status) == 0 &&
	     take(mig.func, &mig.a2) == 0 && take(mig.target, &mig.t2) == 0;
	for (int i = 0; ok && i < NR_MOVE; i++)
		mig.on1 += mig.status[i] == 1;
	if (!ok)
		ksft_print_msg("migration: %s\n", strerror(errno));
	ok &= munmap(map, NR_MOVE * page_size) == 0;
	ok = ok && take(mig.func, &mig.a3) == 0;
	return ok ? 0 : -1;
}

static void t_migrate_fault(int j)
{
	(void)j;
	mig.ok = measure_quietly("migration", migrate_once, NR_MOVE);
	if (mig.ok)
		mig.l = moved(&mig.a0, &mig.a1, mig.func, NR_MOVE * page_size, NR_MOVE);
	if (mig.l)
		strcpy(mig.tag, mig.l->tag);
	ksft_test_result(mig.l && mig.on0 == NR_MOVE,
			 "migration: %d pages faulted in on node 0 (%d there): +%ld bytes at %s\n",
			 NR_MOVE, mig.on0, NR_MOVE * page_size, mig.tag);
}

static void t_migrate_move(int j)
{
	(void)j;
	ksft_test_result(mig.l && mig.on1 == NR_MOVE &&
			 delta_is(&mig.a0, &mig.a2, mig.tag, NR_MOVE * page_size, NR_MOVE),
			 "migration: %d pages moved to node 1 (%d there), still counted at their call site\n",
			 NR_MOVE, mig.on1);
}

/*
 * The migration target's call site: allocprof hands the new page the old
 * page's reference and counts nothing there.  Upstream 6.12's
 * pgalloc_tag_copy() subtracts folio_nr_pages() *bytes* (and a call) where
 * it means the folio's size, so upstream's figure there keeps PAGE_SIZE - 1
 * bytes a migrated page, at 0 calls; 6.13 swaps the tags instead
 * ("mm/codetag: swap tags when migrate pages"), and 7.3's figure there
 * moves by 0 bytes too.
 */
static void t_migrate_target(int j)
{
	long long want = builtin && !ap_kernel_at_least(6, 13) ? NR_MOVE * (page_size - 1) : 0;
	long long got_b = 0, got_c = 0;
	int ok;

	(void)j;
	for (int i = 0; i < mig.t2.n; i++) {
		const struct line *o = find(&mig.t0, mig.t2.l[i].tag);

		got_b += mig.t2.l[i].bytes - (o ? o->bytes : 0);
		got_c += mig.t2.l[i].calls - (o ? o->calls : 0);
	}
	ok = mig.ok && mig.t2.n > 0 && got_b == want && got_c == 0;
	if (!ok)
		ksft_print_msg("%s: moved by %lld bytes %lld calls; expected %lld 0\n", mig.target,
			       got_b, got_c, want);
	ksft_test_result(ok, "migration: the target's call site %s shows %lld bytes, 0 calls\n",
			 mig.target, want);
}

static void t_migrate_unmap(int j)
{
	(void)j;
	ksft_test_result(mig.l && delta_is(&mig.a0, &mig.a3, mig.tag, 0, 0),
			 "migration: unmapped: back to the figures before\n");
}

/*
 * The migration again, with the n flag on folio_prealloc (allocprof only:
 * the built-in profiler has no control file): the nodes report, read at
 * four moments (before the faults, after them, after the move, after the
 * unmap), moves the test's pages from node 0 to node 1 and takes them
 * off.  The flag is set in the quiet window and taken off at its end, so
 * that the pages it watches are the test's own.
 */
#define NODES_ON "func folio_prealloc +n"
#define NODES_OFF "func folio_prealloc -n"
static struct {
	long long bytes[4][AP_MAX_NODES], calls[4][AP_MAX_NODES];
	int on1, ok;
} nod;

/* The nodes report's figures of folio_prealloc at moment k; 0 or -1. */
static int take_nodes(int k)
{
	if (ap_read_file(AP_NODES, info, INFO_SIZE) < 0)
		return -1;
	return ap_node_figures(info, " func:folio_prealloc", nod.bytes[k], nod.calls[k]);
}

/* One try; 0, or -1 and a message if a call failed. */
static int nodes_once(void)
{
	char *map = map_to_move();
	int ok;

	nod.on1 = 0;
	ok = ap_write_file(AP_CONTROL, NODES_ON, strlen(NODES_ON)) == 0 && take_nodes(0) == 0;
	for (int i = 0; i < NR_MOVE; i++)
		map[i * page_size] = 1;
	ok = ok && take_nodes(1) == 0 &&
	     move_pages_(NR_MOVE, mig.pages, mig.nodes, mig.status) == 0 && take_nodes(2) == 0;
	for (int i = 0; ok && i < NR_MOVE; i++)
		nod.on1 += mig.status[i] == 1;
	if (!ok)
		ksft_print_msg("nodes: %s\n", strerror(errno));
	ok &= munmap(map, NR_MOVE * page_size) == 0;
	ok = ok && take_nodes(3) == 0;
	ok &= ap_write_file(AP_CONTROL, NODES_OFF, strlen(NODES_OFF)) == 0;
	return ok ? 0 : -1;
}

/*
 * Whether folio_prealloc's figures on each node moved from moment a to b
 * by pages[node] pages, a call each (else says how they moved).
 */
static int nodes_moved(int a, int b, const int pages[AP_MAX_NODES])
{
	int ok = nod.ok;

	for (int k = 0; ok && k < AP_MAX_NODES; k++) {
		long long db = nod.bytes[b][k] - nod.bytes[a][k];
		long long dc = nod.calls[b][k] - nod.calls[a][k];

		if (db != pages[k] * page_size || dc != pages[k]) {
			ksft_print_msg("node %d: moved by %lld bytes %lld calls, expected %d pages\n",
				       k, db, dc, pages[k]);
			ok = 0;
		}
	}
	return ok;
}

static void t_nodes_fault(int j)
{
	const int pages[AP_MAX_NODES] = { NR_MOVE };

	(void)j;
	if (builtin) {
		ksft_test_result_skip("nodes: upstream has no control file\n");
		return;
	}
	nod.ok = measure_quietly("nodes", nodes_once, NR_MOVE);
	ksft_test_result(nodes_moved(0, 1, pages),
			 "nodes: +n on %s, %d pages faulted in: +%d on node 0\n", mig.func,
			 NR_MOVE, NR_MOVE);
}

static void t_nodes_move(int j)
{
	const int pages[AP_MAX_NODES] = { -NR_MOVE, NR_MOVE };

	(void)j;
	if (builtin) {
		ksft_test_result_skip("nodes: upstream has no control file\n");
		return;
	}
	ksft_test_result(nod.on1 == NR_MOVE && nodes_moved(1, 2, pages),
			 "nodes: %d pages moved to node 1 (%d there): node 0 -%d, node 1 +%d\n",
			 NR_MOVE, nod.on1, NR_MOVE, NR_MOVE);
}

static void t_nodes_unmap(int j)
{
	const int pages[AP_MAX_NODES] = { 0, -NR_MOVE };

	(void)j;
	if (builtin) {
		ksft_test_result_skip("nodes: upstream has no control file\n");
		return;
	}
	ksft_test_result(nodes_moved(2, 3, pages), "nodes: unmapped: node 1 -%d\n", NR_MOVE);
}

/* The page frame numbers of the compaction test's pages, before and after. */
#define COMPACT_MAX_PAGES (COMPACT_MAX_BYTES / 4096)
static uint64_t pfn_before[COMPACT_MAX_PAGES], pfn_after[COMPACT_MAX_PAGES];
/*
 * The compaction test's memory: half of what is free at the start, so that
 * its pages lie all over memory and some of them below where compaction's
 * two scanners meet (the migration scanner starts at the low end of each
 * zone and moves what it finds to free pages the free scanner finds at the
 * high end).  With 256 MiB they happened to lie above it and none moved.
 */
static size_t compact_bytes, compact_pages;

/*
 * /proc/self/pagemap's entries of the n pages at map (bit 63: present;
 * bits 0-54: the page frame number, shown to root); 0 or -1.
 */
static int pagemap(const char *map, uint64_t *e, size_t n)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	off_t off = (uintptr_t)map / page_size * sizeof(*e);
	ssize_t r = fd < 0 ? -1 : pread(fd, e, n * sizeof(*e), off);

	if (fd >= 0)
		close(fd);
	return r == (ssize_t)(n * sizeof(*e)) ? 0 : -1;
}

#define PM_PRESENT (1ULL << 63)
#define PM_PFN(e) ((e) & ((1ULL << 55) - 1))

/*
 * Of the pages present before, how many moved (another frame after); -1 if
 * one went away or the frames are not shown (0).
 */
static long moved_pages(size_t n, long *present)
{
	long moved = 0;

	*present = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(pfn_before[i] & PM_PRESENT))
			continue;
		(*present)++;
		if (!(pfn_after[i] & PM_PRESENT) || !PM_PFN(pfn_before[i]))
			return -1;
		moved += PM_PFN(pfn_before[i]) != PM_PFN(pfn_after[i]);
	}
	return moved;
}

/*
 * The pages the holes free, and whether the kernel has freed them all
 * when the figures are read.  Unmapping a page frees it only when its last
 * reference goes, and something else may hold one for a moment (the CPUs'
 * LRU batches, which are drained; compaction isolating it; a reader of
 * the page): until it lets go, the page is counted still.  A page still
 * held is anonymous (its mapping goes when it is freed), mapped nowhere,
 * in no buddy list and no slab's (6.12's per-CPU partial slabs keep a
 * count where a page keeps its mapping): /proc/kpageflags and
 * /proc/kpagecount of the frames read before the holes were made.  When the figures are not what
 * the test did, the window waits for such pages, at most SETTLE_MS, and
 * reads the figures again once they are gone: figures read while the
 * kernel still held the test's pages had not seen the test's frees.
 * What it saw is printed after the window (settle_note).
 */
#define SETTLE_MS 2000
#define SETTLE_STEP_MS 20
static uint64_t pfn_holes[COMPACT_MAX_PAGES / 2];
static size_t nholes;
static char settle_note[2048];
static char vm_before[16384], vm_after[16384];

#define KPF_LRU 5
#define KPF_SLAB 7
#define KPF_BUDDY 10
#define KPF_ANON 12
/* Frames read with one pread(2) of each file, when they follow each other. */
#define KPAGE_RUN 64

/* Indices in pfn_holes of the hole pages held at the last look. */
static uint32_t held_idx[COMPACT_MAX_PAGES / 2];
static size_t nheld;

/*
 * Whether the page of flags f and mapcount c is one the kernel still
 * holds: anonymous, mapped nowhere, in no buddy list, not a slab's.
 */
static int is_held(uint64_t f, uint64_t c)
{
	return (f & (1ULL << KPF_ANON)) && !c &&
	       !(f & (1ULL << KPF_BUDDY | 1ULL << KPF_SLAB));
}

/*
 * Looks again at the hole pages of idx[0..n) (indices in pfn_holes), whose
 * frames are read by runs of consecutive frames, and keeps in held_idx
 * those still held (idx may be held_idx); their number, or -1 if a frame
 * cannot be read.  The first held page's flags in *first, how many held
 * pages are on an LRU list in *lru.
 */
static long held_holes(int ff, int fc, const uint32_t *idx, size_t n, uint64_t *first, long *lru)
{
	uint64_t f[KPAGE_RUN], c[KPAGE_RUN];
	size_t kept = 0;

	*lru = 0;
	for (size_t i = 0; i < n;) {
		uint64_t pfn = PM_PFN(pfn_holes[idx[i]]);
		size_t run = 1;
		ssize_t want;

		if (!(pfn_holes[idx[i]] & PM_PRESENT) || !pfn)
			return -1;
		while (run < KPAGE_RUN && i + run < n && idx[i + run] == idx[i] + run &&
		       PM_PFN(pfn_holes[idx[i + run]]) == pfn + run)
			run++;
		want = run * sizeof(f[0]);
		if (pread(ff, f, want, pfn * sizeof(f[0])) != want ||
		    pread(fc, c, want, pfn * sizeof(c[0])) != want)
			return -1;
		for (size_t j = 0; j < run; j++) {
			if (!is_held(f[j], c[j]))
				continue;
			if (!kept)
				*first = f[j];
			*lru += !!(f[j] & (1ULL << KPF_LRU));
			held_idx[kept++] = idx[i + j];
		}
		i += run;
	}
	nheld = kept;
	return kept;
}

/* Appends to settle_note, which keeps what fits. */
static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	size_t len = strlen(settle_note);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(settle_note + len, sizeof(settle_note) - len, fmt, ap);
	va_end(ap);
}

/*
 * Called when the figures at the holes are not what the test did: waits
 * while the kernel holds hole pages, at most SETTLE_MS (draining the CPUs'
 * LRU batches each step, looking again at the pages held at the last
 * look); returns how many it held at first (the figures are then to be
 * read again), 0 if none (the figures are what they are), -1 if a frame
 * could not be read.  Notes what it saw and the window's /proc/vmstat
 * counters that moved.
 */
static long settle_holes(char *map, int try)
{
	int ff = open("/proc/kpageflags", O_RDONLY), fc = open("/proc/kpagecount", O_RDONLY);
	long long start = ap_now_ns() / 1000000, ms = 0;
	uint64_t first = 0;
	long lru, held = -1, at_first;

	if (ff >= 0 && fc >= 0) {
		for (size_t i = 0; i < nholes; i++)
			held_idx[i] = i;
		held = held_holes(ff, fc, held_idx, nholes, &first, &lru);
	}
	at_first = held;
	note("try %d: the figures at the holes were not the test's: %ld of %zu hole pages still held by the kernel (the first's /proc/kpageflags %#llx, %ld on an LRU list)",
	     try, held, nholes, (unsigned long long)first, held > 0 ? lru : 0);
	while (held > 0 && ms < SETTLE_MS) {
		if (drain_every_cpu(map) < 0)
			break;
		usleep(SETTLE_STEP_MS * 1000);
		held = held_holes(ff, fc, held_idx, nheld, &first, &lru);
		ms = ap_now_ns() / 1000000 - start;
	}
	if (at_first > 0)
		note("; %ld after %lld ms", held, ms);
	if (ff >= 0)
		close(ff);
	if (fc >= 0)
		close(fc);
	note("; vmstat moved by:");
	ap_read_file("/proc/vmstat", vm_after, sizeof(vm_after));
	for (const char *p = vm_after; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		size_t l = strcspn(p, " ");
		long long d = atoll(p + l + 1) - vmstat_in(vm_before, p, l);

		if (d && strncmp(p, "nr_", 3))
			note(" %.*s %+lld", (int)l, p, d);
	}
	note("\n");
	return at_first;
}

/*
 * PATHS_HOLD_MS=M (environment, or the guest's kernel command line): each
 * try of the compaction measurement has the kernel hold HOLD_PAGES of the
 * hole pages when the holes are made, and let go M ms after the figures
 * were read, as compaction isolating them would: a pipe holds them
 * (vmsplice(2) takes a reference of each page), and a thread of the
 * test's, woken then, empties the pipe M ms later.  The window must wait for
 * them (settle_holes()), or its figures are HOLD_PAGES pages more than the
 * test's; it must have waited, or the compaction result fails.  make
 * check's base run sets it.  0 (off) unless set; at most SETTLE_MS / 2.
 */
#define HOLD_PAGES 16
static int hold_ms, hold_pipe[2], hold_go[2];
static char hold_buf[HOLD_PAGES * 4096];

static void *holder(void *arg)
{
	char c;

	(void)arg;
	while (read(hold_go[0], &c, 1) == 1) {
		usleep(hold_ms * 1000);
		while (read(hold_pipe[0], hold_buf, sizeof(hold_buf)) > 0)
			;
	}
	return NULL;
}

/* The holder thread and its pipes, before the memory is locked; 0 or an errno. */
static int holder_start(void)
{
	pthread_t t;

	if (pipe(hold_pipe) || pipe(hold_go) || fcntl(hold_pipe[0], F_SETFL, O_NONBLOCK))
		return errno;
	return pthread_create(&t, NULL, holder, NULL);
}

/* The first HOLD_PAGES pages of map (a hole) held by the pipe; 0 or -1. */
static int hold_pages(char *map)
{
	struct iovec iov = { .iov_base = map, .iov_len = HOLD_PAGES * page_size };

	return vmsplice(hold_pipe[1], &iov, 1, 0) == (ssize_t)iov.iov_len ? 0 : -1;
}

/* Wakes the holder: the pages go hold_ms from now; 0 or -1. */
static int hold_release(void)
{
	return write(hold_go[1], "", 1) == 1 ? 0 : -1;
}

/*
 * Compaction migrates pages and changes no figure: the test's own pages
 * are among those it moves (their frames change), so the figures of their
 * call site had something to keep.  Measured in a quiet window.
 */
static struct {
	const char *funcs[2];
	struct snap a[2], b[2], c;
	long long migrated;
	long nmoved, present;
	const struct line *l;
	int ok, settled, tries;
} cmp = { .funcs = { "folio_prealloc", "alloc_migration_target" } };

/* One try; 0, or -1 and a message if a call failed. */
static int compact_once(void)
{
	char *map = mmap(NULL, compact_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	cmp.nmoved = -1;
	cmp.present = 0;
	cmp.tries++;
	ok = take(cmp.funcs[0], &cmp.c) == 0;
	for (size_t off = 0; off < compact_bytes; off += page_size)
		map[off] = 1;
	/*
	 * The last pages faulted in wait in this CPU's LRU batch, which holds a
	 * reference: one of them freed in a hole below would stay allocated
	 * until the batch drains (make check, 2026-11-23: one page more than
	 * the test's).  The other CPU's batch may hold the last reference of
	 * a page another process freed before (one that exited): compaction
	 * drains every CPU's batch, which then frees it in the window (make
	 * check, 2026-11-25: folio_prealloc 1 call, 4096 bytes fewer).  So
	 * every CPU's batch is drained first.
	 */
	ok &= drain_every_cpu(map) == 0;
	/* The frames of the pages the holes will free (see settle_holes()). */
	ok = ok && pagemap(map, pfn_after, compact_pages) == 0 &&
	     ap_read_file("/proc/vmstat", vm_before, sizeof(vm_before)) > 0;
	nholes = 0;
	for (size_t i = 0; ok && i < compact_pages; i++)
		if (i % (2 * COMPACT_HOLE) < COMPACT_HOLE)
			pfn_holes[nholes++] = pfn_after[i];
	ok = ok && (!hold_ms || hold_pages(map) == 0);
	/* Holes all over the pages: something for compaction to move. */
	for (size_t off = 0; off < compact_bytes; off += 2 * COMPACT_HOLE * page_size)
		ok &= madvise(map + off, COMPACT_HOLE * page_size, MADV_DONTNEED) == 0;
	for (int i = 0; i < 2; i++)
		ok &= take(cmp.funcs[i], &cmp.a[i]) == 0;
	/* Held pages go hold_ms after the figures were read. */
	ok = ok && (!hold_ms || hold_release() == 0);
	cmp.settled = 0;
	if (ok && sum_of(&cmp.a[0]) - sum_of(&cmp.c) != (long long)(compact_bytes / 2)) {
		long held = settle_holes(map, cmp.tries);

		cmp.settled = held > 0;
		for (int i = 0; held && i < 2; i++)
			ok &= take(cmp.funcs[i], &cmp.a[i]) == 0;
	}
	cmp.migrated = vmstat("pgmigrate_success");
	ok = ok && pagemap(map, pfn_before, compact_pages) == 0 &&
	     ap_write_file("/proc/sys/vm/compact_memory", "1", 1) == 0;
	for (int i = 0; ok && i < 2; i++)
		ok &= take(cmp.funcs[i], &cmp.b[i]) == 0;
	cmp.migrated = vmstat("pgmigrate_success") - cmp.migrated;
	ok = ok && pagemap(map, pfn_after, compact_pages) == 0;
	if (ok)
		cmp.nmoved = moved_pages(compact_pages, &cmp.present);
	else
		ksft_print_msg("compaction: %s\n", strerror(errno));
	munmap(map, compact_bytes);
	return ok ? 0 : -1;
}

static void t_compact(int j)
{
	(void)j;
	cmp.ok = measure_quietly("compaction", compact_once, compact_pages);
	for (const char *p = settle_note, *end; *p; p = *end ? end + 1 : end) {
		end = p + strcspn(p, "\n");
		ksft_print_msg("compaction, %.*s\n", (int)(end - p), p);
	}
	if (cmp.ok)
		cmp.l = moved(&cmp.c, &cmp.a[0], cmp.funcs[0], compact_bytes / 2,
			      compact_bytes / 2 / page_size);
	ksft_print_msg("compaction of %zu MiB, half of it freed in holes: %lld pages migrated in all\n",
		       compact_bytes >> 20, cmp.migrated);
	if (hold_ms && !cmp.settled)
		ksft_print_msg("compaction: PATHS_HOLD_MS=%d, and the window did not wait for the pages held\n",
			       hold_ms);
	ksft_test_result(cmp.l && cmp.nmoved > 0 && (!hold_ms || cmp.settled),
			 "compaction: %ld of the test's %ld pages moved to other frames\n", cmp.nmoved,
			 cmp.present);
}

static void t_compact_unchanged(int i)
{
	(void)i;
	ksft_test_result(cmp.l && unchanged(&cmp.a[0], &cmp.b[0]) && unchanged(&cmp.a[1], &cmp.b[1]),
			 "compaction: no figure of %s or %s changed\n", cmp.funcs[0], cmp.funcs[1]);
}

/* Touches the stack the test will use, so that it needs no new page. */
static void __attribute__((noinline)) prefault_stack(void)
{
	volatile char stack[256 << 10];

	for (size_t i = 0; i < sizeof(stack); i += 1024)
		stack[i] = 0;
}

/*
 * What moves pages behind the test's back is off while it runs, put back
 * as it was at exit: NUMA balancing (hinting faults, migrations) and
 * kcompactd's proactive compaction (which isolates pages, the test's among
 * them, every half second when a node is fragmented, as the compaction
 * test leaves node 0).
 */
static struct quiet_knob {
	const char *path;
	char was[16];
} knobs[] = {
	{ .path = "/proc/sys/kernel/numa_balancing" },
	{ .path = "/proc/sys/vm/compaction_proactiveness" },
};

static void restore_knobs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(knobs); i++)
		if (*knobs[i].was)
			ap_write_file(knobs[i].path, knobs[i].was, strlen(knobs[i].was));
}

/* Turns each knob off, to be put back at exit; 0, or -1 and why. */
static int knobs_off(void)
{
	if (atexit(restore_knobs))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(knobs); i++) {
		ssize_t n = ap_read_file(knobs[i].path, knobs[i].was, sizeof(knobs[i].was));

		if (n <= 0) {
			*knobs[i].was = '\0';
			ksft_print_msg("%s: cannot read it: %s\n", knobs[i].path, strerror(errno));
			return -1;
		}
		if (ap_write_file(knobs[i].path, "0", 1)) {
			ksft_print_msg("%s: cannot turn it off: %s\n", knobs[i].path,
				       strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void t_loaded(int i)
{
	(void)i;
	ksft_test_result(ap_start(NULL) == 0 && access(AP_ALLOCINFO, R_OK) == 0,
			 "profiler and allocprof_test loaded\n");
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 &&
			 (builtin || ap_rmmod("allocprof") == 0), "unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_loaded),
	AP_STEP_EACH(t_batch, &nbatch),
	AP_STEP(t_partial),
	AP_STEP(t_partial_freed),
	AP_STEP(t_cgroup),
	AP_STEP_EACH(t_account, &naccount),
	AP_STEP(t_thp_fault),
	AP_STEP(t_thp_split),
	AP_STEP(t_thp_unmap_half),
	AP_STEP(t_thp_unmap),
	AP_STEP(t_migrate_fault),
	AP_STEP(t_migrate_move),
	AP_STEP(t_migrate_target),
	AP_STEP(t_migrate_unmap),
	AP_STEP(t_nodes_fault),
	AP_STEP(t_nodes_move),
	AP_STEP(t_nodes_unmap),
	AP_STEP(t_compact),
	AP_STEP(t_compact_unchanged),
	AP_STEP(t_unload),
};

int main(void)
{
	cpu_set_t cpu0;
	int err;

	ksft_print_header();
	page_size = sysconf(_SC_PAGESIZE);
	if (page_size != COMPACT_MAX_BYTES / COMPACT_MAX_PAGES)
		ksft_exit_fail_msg("page size %ld: COMPACT_MAX_PAGES wants 4096\n", page_size);
	{
		long long free_kb = ap_meminfo_kb("MemFree");
		size_t unit = 2 * COMPACT_HOLE * page_size;

		compact_bytes = free_kb > 0 ? free_kb * 1024 / 2 / unit * unit : 0;
		if (compact_bytes > COMPACT_MAX_BYTES)
			compact_bytes = COMPACT_MAX_BYTES;
		compact_pages = compact_bytes / page_size;
		if (!compact_bytes)
			ksft_exit_fail_msg("cannot read MemFree\n");
	}
	/* One CPU (node 0): one memcg charge stock, pages placed on node 0. */
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_setaffinity(0, sizeof(cpu0), &cpu0))
		ksft_exit_fail_msg("sched_setaffinity: %s\n", strerror(errno));
	/*
	 * Faulted in now: reading /proc/allocinfo or /proc/vmstat, or the
	 * kernel writing move_pages()'s answers, later touches no new page.
	 */
	memset(info, 1, sizeof(info));
	memset(pfn_before, 0, sizeof(pfn_before));
	memset(pfn_after, 0, sizeof(pfn_after));
	memset(pfn_holes, 0, sizeof(pfn_holes));
	memset(settle_note, 0, sizeof(settle_note));
	memset(held_idx, 0, sizeof(held_idx));
	memset(vm_before, 0, sizeof(vm_before));
	memset(vm_after, 0, sizeof(vm_after));
	prefault_stack();
	vmstat("pgmigrate_success");
	if (knobs_off())
		ksft_exit_fail_msg("NUMA balancing and proactive compaction must be off\n");
	if (getenv("PATHS_HOLD_MS")) {
		hold_ms = atoi(getenv("PATHS_HOLD_MS"));
		if (hold_ms <= 0 || hold_ms > SETTLE_MS / 2)
			ksft_exit_fail_msg("PATHS_HOLD_MS=%s: 1 to %d\n", getenv("PATHS_HOLD_MS"),
					   SETTLE_MS / 2);
		err = holder_start();
		if (err)
			ksft_exit_fail_msg("PATHS_HOLD_MS: the holder: %s\n", strerror(err));
		memset(hold_buf, 0, sizeof(hold_buf));
		ksft_print_msg("PATHS_HOLD_MS=%d: %d hole pages held that long in each compaction try\n",
			       hold_ms, HOLD_PAGES);
	}
	if (mlockall(MCL_CURRENT))
		ksft_exit_fail_msg("mlockall: %s\n", strerror(errno));
	builtin = ap_builtin_profiler();
	ksft_print_msg("profiler: %s\n", builtin ? "upstream's built-in" : "allocprof");
	if (getenv("PATHS_DISCARD_TRIES")) {
		discard_tries = atoi(getenv("PATHS_DISCARD_TRIES"));
		if (discard_tries < 0 || discard_tries >= QUIET_TRIES)
			ksft_exit_fail_msg("PATHS_DISCARD_TRIES=%s: 0 to %d\n",
					   getenv("PATHS_DISCARD_TRIES"), QUIET_TRIES - 1);
		ksft_print_msg("PATHS_DISCARD_TRIES=%d: each quiet measurement measured again %d times\n",
			       discard_tries, discard_tries);
	}
	AP_RUN_STEPS(steps);
	ksft_finished();
}
