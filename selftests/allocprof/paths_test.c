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
 * lands at the call sites it watches.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "allocprof_lib.h"

#define MAX_LINES 16
#define INFO_SIZE (8 << 20)
#define THP_SIZE (2UL << 20)
#define NR_THP 2
#define NR_MOVE 64
#define COMPACT_BYTES (256UL << 20)
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
	char tail[96], *p, *end;
	size_t t;
	int off;

	snprintf(tail, sizeof(tail), " func:%s ", func);
	t = strlen(tail);
	s->n = 0;
	if (read_info())
		return -1;
	for (p = info; *p; p = end + (*end == '\n')) {
		size_t l;

		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		l = end - p;
		if (l < t || l >= sizeof(s->l[0].tag) || memcmp(end - t, tail, t) ||
		    memchr(p, '[', l) || s->n == MAX_LINES)
			continue;
		/* The figures, then the tag: the rest of the line. */
		if (sscanf(p, "%lld %lld %n", &s->l[s->n].bytes, &s->l[s->n].calls, &off) != 2)
			continue;
		memcpy(s->l[s->n].tag, p + off, l - off);
		s->l[s->n].tag[l - off] = '\0';
		s->n++;
	}
	return 0;
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

/* Every line of the function is unchanged from a to b. */
static int unchanged(const struct snap *a, const struct snap *b)
{
	int ok = a->n == b->n;

	for (int i = 0; i < b->n; i++)
		ok &= delta_is(a, b, b->l[i].tag, 0, 0);
	return ok;
}

/* A counter of /proc/vmstat, or -1. */
static long long vmstat(const char *name)
{
	static char buf[16384];
	char *p;
	size_t l = strlen(name);

	if (ap_read_file("/proc/vmstat", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, name, l) && p[l] == ' ')
			return atoll(p + l + 1);
	return -1;
}

static const char *const batch_names[] = { "split_page", "pages_bulk", "cache_bulk" };
/* Test results: three for each batch site. */
#define BATCH_TESTS (3 * ARRAY_SIZE(batch_names))

/* Batch sites: part of the entries freed, the figures follow exactly. */
static void batch_sites(void)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(batch_names); i++) {
		const char *name = batch_names[i];
		unsigned long long calls;
		long long unit;
		char func[64];
		long live;
		int ok;

		snprintf(func, sizeof(func), "aptest_%s", name);
		ok = !ap_testsite_unit(name, &unit, &calls) && ap_test_alloc(name, 3) == 0;
		live = ap_testsite_live(name);
		ok = ok && live > 3 && ap_expect(func, live * unit, live * calls);
		ksft_test_result(ok, "%s: 3 allocations, %ld entries counted exactly\n", func, live);
		ok = ap_test_free_n(name, 5) == 0 &&
		     ap_expect(func, (live - 5) * unit, (live - 5) * calls);
		ksft_test_result(ok, "%s: 5 entries freed, the other %ld counted\n", func, live - 5);
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

/* Test results of partial_free(). */
#define PARTIAL_TESTS 2

/*
 * The test module's pages_partial site: each allocation is of 4 pages, of
 * which __free_pages() frees the 3 tail pages at once; the first page, 1
 * call, stays counted until its own free.
 */
static void partial_free(void)
{
	const char *func = "aptest_pages_partial";
	int ok;

	ok = ap_test_alloc("pages_partial", 3) == 0 &&
	     ap_expect(func, 3 * page_size, 3);
	ksft_test_result(ok, "%s: 3 allocations, the tail pages freed: 3 pages, 3 calls\n", func);
	ok = ap_test_free("pages_partial") == 0 && ap_expect(func, 0, 0);
	ksft_test_result(ok, "%s: the first pages freed, 0/0\n", func);
}

static const char *const account_names[] = { "kmalloc_account", "pages_account" };
/* More than a charge batch (the CPU's stock) of either. */
static const unsigned int account_count[] = { 4096, 256 };
/* Test results: the cgroup, then three for each site. */
#define ACCOUNT_TESTS (1 + 3 * ARRAY_SIZE(account_names))

/* __GFP_ACCOUNT allocations made by a task in a memory cgroup. */
static void accounted(void)
{
	int in_cg;
	char pid[16];

	in_cg = (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 ||
		 ap_sh("mount -t cgroup2 none /sys/fs/cgroup") == 0) &&
		ap_sh("echo +memory > /sys/fs/cgroup/cgroup.subtree_control") == 0 &&
		(mkdir(CGROUP, 0755) == 0 || errno == EEXIST);
	snprintf(pid, sizeof(pid), "%d", getpid());
	in_cg = in_cg && ap_write_file(CGROUP "/cgroup.procs", pid, strlen(pid)) == 0;
	ksft_test_result(in_cg, "the test runs in memory cgroup %s\n", CGROUP);

	for (unsigned int i = 0; i < ARRAY_SIZE(account_names); i++) {
		const char *name = account_names[i];
		unsigned int count = account_count[i];
		long long unit, before, after;
		unsigned long long calls;
		char func[64];
		int ok;

		snprintf(func, sizeof(func), "aptest_%s", name);
		before = cg_read("memory.current");
		ok = in_cg && !ap_testsite_unit(name, &unit, &calls) &&
		     ap_test_alloc(name, count) == 0;
		after = cg_read("memory.current");
		/*
		 * Charged to the cgroup: memory.current grew by what was
		 * allocated, less at most the charge batch the CPU (the test
		 * runs on CPU 0 only) had in stock.
		 */
		ok = ok && before >= 0 &&
		     after - before >= count * unit - MEMCG_CHARGE_BATCH * page_size;
		ksft_test_result(ok, "%s: %u allocations charged to the cgroup (%lld bytes more)\n",
				 func, count, after - before);
		ok = ap_expect(func, count * unit, count * calls);
		ksft_test_result(ok, "%s: counted exactly, %lld bytes %llu calls\n", func,
				 count * unit, count * calls);
		ok = ap_test_free(name) == 0 && ap_expect(func, 0, 0);
		ksft_test_result(ok, "%s: freed, 0/0\n", func);
	}
	/* Back to the root cgroup, so that the cgroup can go. */
	ap_write_file("/sys/fs/cgroup/cgroup.procs", pid, strlen(pid));
	rmdir(CGROUP);
}

/* split_huge_pages for this process's range [start, end). */
static int split_range(void *start, void *end)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "%d,%p,%p", getpid(), start, end);
	return ap_write_file("/sys/kernel/debug/split_huge_pages", cmd, strlen(cmd));
}

/* Test results of thp(), migrate(), compaction(). */
#define THP_TESTS 4
#define MIGRATE_TESTS 4
#define COMPACT_TESTS 2

static void thp(void)
{
	const char *func = "do_huge_pmd_anonymous_page";
	static struct snap s0, s1, s2, s3, s4;
	const struct line *l = NULL;
	char tag[192] = "";
	size_t len = (NR_THP + 1) * THP_SIZE;
	char *map, *p;
	int ok;

	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	p = (char *)(((unsigned long)map + THP_SIZE - 1) & ~(THP_SIZE - 1));
	ok = madvise(p, NR_THP * THP_SIZE, MADV_HUGEPAGE) == 0;
	if (!ok)
		ksft_print_msg("madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	ok = ok && take(func, &s0) == 0;
	for (size_t off = 0; off < NR_THP * THP_SIZE; off += page_size)
		p[off] = 1;
	/* No collapse by khugepaged behind the test's back once split. */
	ok = ok && madvise(p, NR_THP * THP_SIZE, MADV_NOHUGEPAGE) == 0 && take(func, &s1) == 0;
	if (!ok)
		ksft_print_msg("THP set-up failed: %s\n", strerror(errno));
	if (ok)
		l = moved(&s0, &s1, func, NR_THP * THP_SIZE, NR_THP);
	if (l)
		strcpy(tag, l->tag);
	ksft_test_result(l != NULL, "THP: %d huge pages faulted in: +%lu bytes, +%d calls at %s\n",
			 NR_THP, NR_THP * THP_SIZE, NR_THP, tag);

	/* A split: each huge page becomes 512 pages, one call each. */
	if (l && split_range(p, p + NR_THP * THP_SIZE))
		ksft_print_msg("split_huge_pages: %s\n", strerror(errno));
	ok = l && take(func, &s2) == 0 &&
	     delta_is(&s0, &s2, tag, NR_THP * THP_SIZE, NR_THP * (THP_SIZE / page_size));
	ksft_test_result(ok, "THP: split into pages: same bytes, %lu calls\n",
			 NR_THP * (THP_SIZE / page_size));

	/* Half of the first one unmapped: those pages are freed. */
	ok = l && munmap(p, THP_SIZE / 2) == 0 && take(func, &s3) == 0 &&
	     delta_is(&s0, &s3, tag, NR_THP * THP_SIZE - THP_SIZE / 2,
		      NR_THP * (THP_SIZE / page_size) - THP_SIZE / 2 / page_size);
	ksft_test_result(ok, "THP: half a huge page unmapped: %lu bytes, %lu calls less\n",
			 THP_SIZE / 2, THP_SIZE / 2 / page_size);

	ok = l && munmap(map, len) == 0 && take(func, &s4) == 0 && delta_is(&s0, &s4, tag, 0, 0);
	ksft_test_result(ok, "THP: all unmapped: back to the figures before\n");
}

static long move_pages_(int count, void **pages, const int *nodes, int *status)
{
	return syscall(SYS_move_pages, 0, count, pages, nodes, status, 0);
}

/* Anonymous pages of this process moved to node 1 with move_pages(2). */
static void migrate(void)
{
	const char *func = "folio_prealloc", *target = "alloc_migration_target";
	static struct snap a0, a1, a2, a3, t0, t2;
	static void *pages[NR_MOVE];
	static int nodes[NR_MOVE], status[NR_MOVE];
	const struct line *l = NULL;
	char tag[192] = "";
	char *map;
	int ok = 1, on0 = 0, on1 = 0;

	/* Faulted in from CPU 0 (main()), whose node is 0: the pages are on node 0. */
	map = mmap(NULL, NR_MOVE * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (int i = 0; i < NR_MOVE; i++) {
		pages[i] = map + i * page_size;
		nodes[i] = 1;
		status[i] = -1;
	}
	ok = ok && take(func, &a0) == 0 && take(target, &t0) == 0;
	for (int i = 0; i < NR_MOVE; i++)
		map[i * page_size] = 1;
	ok = ok && take(func, &a1) == 0;
	if (ok)
		l = moved(&a0, &a1, func, NR_MOVE * page_size, NR_MOVE);
	if (l)
		strcpy(tag, l->tag);
	ok = l && move_pages_(NR_MOVE, pages, NULL, status) == 0;
	for (int i = 0; ok && i < NR_MOVE; i++)
		on0 += status[i] == 0;
	ksft_test_result(ok && on0 == NR_MOVE,
			 "migration: %d pages faulted in on node 0 (%d there): +%ld bytes at %s\n",
			 NR_MOVE, on0, NR_MOVE * page_size, tag);

	ok = l && move_pages_(NR_MOVE, pages, nodes, status) == 0 && take(func, &a2) == 0 &&
	     take(target, &t2) == 0;
	for (int i = 0; ok && i < NR_MOVE; i++)
		on1 += status[i] == 1;
	ksft_test_result(ok && on1 == NR_MOVE && delta_is(&a0, &a2, tag, NR_MOVE * page_size, NR_MOVE),
			 "migration: %d pages moved to node 1 (%d there), still counted at their call site\n",
			 NR_MOVE, on1);
	/*
	 * The migration target's call site: allocprof hands the new page the
	 * old page's reference and counts nothing there.  Upstream 6.12's
	 * pgalloc_tag_copy() subtracts folio_nr_pages() *bytes* (and a call)
	 * where it means the folio's size, so upstream's figure there keeps
	 * PAGE_SIZE - 1 bytes a migrated page, at 0 calls; 6.13 swaps the tags
	 * instead ("mm/codetag: swap tags when migrate pages").
	 */
	{
		long long want = builtin ? NR_MOVE * (page_size - 1) : 0;
		long long got_b = 0, got_c = 0;

		for (int i = 0; i < t2.n; i++) {
			const struct line *o = find(&t0, t2.l[i].tag);

			got_b += t2.l[i].bytes - (o ? o->bytes : 0);
			got_c += t2.l[i].calls - (o ? o->calls : 0);
		}
		ok = ok && t2.n > 0 && got_b == want && got_c == 0;
		if (!ok)
			ksft_print_msg("%s: moved by %lld bytes %lld calls; expected %lld 0\n", target,
				       got_b, got_c, want);
		ksft_test_result(ok, "migration: the target's call site %s shows %lld bytes, 0 calls\n",
				 target, want);
	}

	ok = l && munmap(map, NR_MOVE * page_size) == 0 && take(func, &a3) == 0 &&
	     delta_is(&a0, &a3, tag, 0, 0);
	ksft_test_result(ok, "migration: unmapped: back to the figures before\n");
}

/* The page frame numbers of the compaction test's pages, before and after. */
#define COMPACT_PAGES (COMPACT_BYTES / 4096)
static uint64_t pfn_before[COMPACT_PAGES], pfn_after[COMPACT_PAGES];

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
 * Compaction migrates pages and changes no figure: the test's own pages
 * are among those it moves (their frames change), so the figures of their
 * call site had something to keep.
 */
static void compaction(void)
{
	const char *funcs[] = { "folio_prealloc", "alloc_migration_target" };
	static struct snap a[2], b[2], c;
	long long migrated;
	long nmoved = -1, present = 0;
	const struct line *l;
	char *map;
	int ok = 1;

	map = mmap(NULL, COMPACT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	ok &= take(funcs[0], &c) == 0;
	for (size_t off = 0; off < COMPACT_BYTES; off += page_size)
		map[off] = 1;
	/* Holes all over the pages: something for compaction to move. */
	for (size_t off = 0; off < COMPACT_BYTES; off += 2 * COMPACT_HOLE * page_size)
		ok &= madvise(map + off, COMPACT_HOLE * page_size, MADV_DONTNEED) == 0;
	for (int i = 0; i < 2; i++)
		ok &= take(funcs[i], &a[i]) == 0;
	l = ok ? moved(&c, &a[0], funcs[0], COMPACT_BYTES / 2, COMPACT_BYTES / 2 / page_size) : NULL;
	migrated = vmstat("pgmigrate_success");
	ok = l && pagemap(map, pfn_before, COMPACT_PAGES) == 0 &&
	     ap_write_file("/proc/sys/vm/compact_memory", "1", 1) == 0;
	for (int i = 0; ok && i < 2; i++)
		ok &= take(funcs[i], &b[i]) == 0;
	migrated = vmstat("pgmigrate_success") - migrated;
	ok = ok && pagemap(map, pfn_after, COMPACT_PAGES) == 0;
	if (ok)
		nmoved = moved_pages(COMPACT_PAGES, &present);
	ksft_print_msg("compaction: %lld pages migrated in all\n", migrated);
	ksft_test_result(ok && nmoved > 0,
			 "compaction: %ld of the test's %ld pages moved to other frames\n", nmoved,
			 present);
	ok = ok && unchanged(&a[0], &b[0]) && unchanged(&a[1], &b[1]);
	ksft_test_result(ok, "compaction: no figure of %s or %s changed\n", funcs[0], funcs[1]);
	munmap(map, COMPACT_BYTES);
}

/* Touches the stack the test will use, so that it needs no new page. */
static void __attribute__((noinline)) prefault_stack(void)
{
	volatile char stack[256 << 10];

	for (size_t i = 0; i < sizeof(stack); i += 1024)
		stack[i] = 0;
}

int main(void)
{
	cpu_set_t cpu0;

	ksft_print_header();
	/* Loading, the sections, unloading. */
	ksft_set_plan(1 + BATCH_TESTS + PARTIAL_TESTS + ACCOUNT_TESTS + THP_TESTS + MIGRATE_TESTS +
		      COMPACT_TESTS + 1);
	page_size = sysconf(_SC_PAGESIZE);
	if (page_size != COMPACT_BYTES / COMPACT_PAGES)
		ksft_exit_fail_msg("page size %ld: COMPACT_PAGES wants 4096\n", page_size);
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
	prefault_stack();
	vmstat("pgmigrate_success");
	if (mlockall(MCL_CURRENT))
		ksft_exit_fail_msg("mlockall: %s\n", strerror(errno));
	builtin = ap_builtin_profiler();
	ksft_print_msg("profiler: %s\n", builtin ? "upstream's built-in" : "allocprof");
	ksft_test_result(ap_start(NULL) == 0 && access(AP_ALLOCINFO, R_OK) == 0,
			 "profiler and allocprof_test loaded\n");

	batch_sites();
	partial_free();
	accounted();
	thp();
	migrate();
	compaction();

	ksft_test_result(ap_sh("rmmod allocprof_test") == 0 &&
			 (builtin || ap_sh("rmmod allocprof") == 0), "unload\n");
	ksft_finished();
}
