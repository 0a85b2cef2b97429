// SPDX-License-Identifier: GPL-2.0
/*
 * storm_test: allocprof is loaded and unloaded CYCLES times, and
 * vm.mem_profiling switched between 0 and 1 on every load, while two
 * processes (one on each CPU) allocate and free through every call site of
 * allocprof_test and READERS processes read /proc/allocinfo in a loop.
 *
 * Every read must be well formed (the header, then lines of upstream's
 * format, none with a negative figure), whether the module stays or goes
 * while it is read.  On every load the test module's call sites also get
 * other per-site flags (s and a, s, or the default, in turn: never -p,
 * which would make their figures miss allocations on purpose) while the
 * workers allocate, so watched allocations are made, freed and left
 * behind by unloads.  After the last load, with s and a on every test
 * call site, the storm goes on for two more rounds with profiling on:
 * then each call site must show exactly what is live at it, its chains in
 * the stacks report must add up to that, and 0 bytes / 0 calls and no
 * chain once it is all freed.
 *
 * Where the kernel has fault injection (the debug flavour): insmod of
 * allocprof with 10 % of its slab and page allocations failing, then with
 * exactly its nth allocation failing, for each n, must load fully or fail
 * leaving nothing; and a second storm runs with the allocating processes
 * failing 10 % of their allocations: what failed must not be counted.
 *
 * STORM_CYCLES=n (environment, e.g. from the kernel command line) sets the
 * number of cycles of the first storm; the second has a fifth of them.
 *
 * The last line is "# stats: cycles=N allocations=N faults=N reads=N" for
 * scripts/check's summary.
 */
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>

#include "allocprof_lib.h"

#define CYCLES 1000
#define WORKERS 2
#define READERS 3
#define MAX_SITES 32
#define FAULT_DIR "/sys/kernel/debug"
#define FAULT_TIMES 1000000
/* The test results of one storm, reported after it in this order. */
enum storm_result {
	SR_LOADS, SR_RAN, SR_ENOMEM, SR_BOTH_CPUS, SR_READS, SR_SITES, SR_CHAINS, SR_FREED,
	STORM_RESULTS
};

/* The per-site flags a load gives the test call sites, in turn. */
static const char *const watch_commands[] = {
	"module allocprof_test +sa",
	"module allocprof_test -a",
	"module allocprof_test =p",
};

/* What the processes of a storm count, in memory shared with them. */
struct storm {
	volatile int stop;
	volatile unsigned long rounds[WORKERS];
	unsigned long long allocations[WORKERS];
	unsigned long long enomem[WORKERS];
	unsigned long long errors[WORKERS];
	int last_error[WORKERS];
	/* Per reader: whole reads, reads cut by an unload, no file, bad reads. */
	unsigned long long reads[READERS], cut[READERS], absent[READERS], bad[READERS];
	unsigned long long lines[READERS], opened[READERS];
	char bad_line[READERS][160];
};

static struct ap_testsite sites[MAX_SITES];
static long long unit_bytes[MAX_SITES];
static unsigned long long unit_calls[MAX_SITES];
static int nsites;
static int module_fd = -1;

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Allocations a site gets a round: fewer of the large vmalloc areas. */
static unsigned int round_count(int s)
{
	return unit_bytes[s] >= (1 << 20) ? 1 : 3;
}

/*
 * Worker i, on CPU i: a round allocates at every site and frees every site
 * (all that is live there, mostly what the other worker allocated on the
 * other CPU: the two start half the sites apart).
 */
static void worker(struct storm *st, int i, int faults)
{
	pin_to_cpu(i);
	/* The loads and unloads go first, so that they are many. */
	nice(10);
	if (faults && ap_write_file("/proc/self/make-it-fail", "1", 1))
		_exit(2);
	while (!st->stop) {
		for (int j = 0; j < nsites && !st->stop; j++) {
			int s = (j + i * nsites / WORKERS) % nsites;
			int other = (s + nsites / WORKERS) % nsites;
			unsigned int n = round_count(s);
			int ret = ap_test_alloc(sites[s].name, n);

			st->allocations[i] += n;
			if (ret == -ENOMEM) {
				st->enomem[i]++;
			} else if (ret) {
				st->errors[i]++;
				st->last_error[i] = ret;
			}
			/*
			 * Opening the file can fail too; then the free is tried
			 * again, so that every round frees every site: the final
			 * check needs each entry live after the last load's two
			 * rounds to have been allocated after that load.
			 */
			do {
				ret = ap_test_free(sites[other].name);
				if (ret == -ENOMEM && faults)
					st->enomem[i]++;
			} while (ret == -ENOMEM && faults);
			if (ret) {
				st->errors[i]++;
				st->last_error[i] = ret;
			}
		}
		st->rounds[i]++;
	}
	_exit(0);
}

static void reader_bad(struct storm *st, int k, const char *why, const char *line, size_t len)
{
	if (!st->bad[k]++)
		snprintf(st->bad_line[k], sizeof(st->bad_line[k]), "%s: '%.*s'", why,
			 (int)(len > 100 ? 100 : len), line);
}

static char read_buf[READERS][4 << 20];

static void reader(struct storm *st, int k)
{
	const char *header = ap_default_header();
	size_t header_len = strlen(header);
	char *buf = read_buf[k];

	nice(10);

	while (!st->stop) {
		size_t len = 0;
		int fd = open(AP_ALLOCINFO, O_RDONLY), cut = 0;
		struct ap_lines w;
		struct ap_info_line l;

		if (fd < 0) {
			if (errno == ENOENT)
				st->absent[k]++;
			else
				reader_bad(st, k, "open", strerror(errno), strlen(strerror(errno)));
			usleep(1000);
			continue;
		}
		__atomic_add_fetch(&st->opened[k], 1, __ATOMIC_RELAXED);
		for (;;) {
			ssize_t n = read(fd, buf + len, sizeof(read_buf[k]) - 1 - len);

			if (n < 0) {
				/* proc_remove() of an open file: -EIO from then on. */
				if (errno == EIO)
					cut = 1;
				else
					reader_bad(st, k, "read", strerror(errno),
						   strlen(strerror(errno)));
				break;
			}
			if (n == 0)
				break;
			len += n;
			if (len == sizeof(read_buf[k]) - 1) {
				reader_bad(st, k, "size", buf, 0);
				break;
			}
		}
		close(fd);
		if (cut)
			st->cut[k]++;
		else
			st->reads[k]++;
		if (len < header_len) {
			if (!cut || memcmp(buf, header, len))
				reader_bad(st, k, "header", buf, len);
			continue;
		}
		if (memcmp(buf, header, header_len)) {
			reader_bad(st, k, "header", buf, len);
			continue;
		}
		/*
		 * Every complete line after the header's two; a read cut short
		 * may end in part of one.  len < sizeof(read_buf[k]).
		 */
		ap_lines_of(&w, buf, len, AP_LINES_EVERY);
		while (ap_info_next(&w, &l)) {
			const char *why;

			if (l.index < 2)
				continue;
			if (!l.terminated) {
				if (!cut)
					reader_bad(st, k, "unterminated", l.text, l.len);
				break;
			}
			why = ap_line_problem(&l);
			if (why)
				reader_bad(st, k, why, l.text, l.len);
			st->lines[k]++;
		}
		ap_lines_end(&w);
	}
	_exit(0);
}

static int insmod(const char *params)
{
	return ap_finit(module_fd, params);
}

static int rmmod(void)
{
	return ap_delete("allocprof");
}

static int set_sysctl(const char *v)
{
	return ap_write_file(AP_SYSCTL, v, strlen(v));
}

static int site_index(const char *func)
{
	for (int s = 0; s < nsites; s++)
		if (!strcmp(func + strlen("aptest_"), sites[s].name))
			return s;
	return -1;
}

/* Every site shows exactly live x unit, live from the test module; 1 if so. */
static int sites_exact(const char *when)
{
	struct ap_testsite now[MAX_SITES];
	int ok = ap_testsites(now, MAX_SITES) == nsites;

	for (int s = 0; ok && s < nsites; s++) {
		char func[64];

		snprintf(func, sizeof(func), "aptest_%.31s", now[s].name);
		if (site_index(func) != s) {
			ok = 0;
			break;
		}
		if (!ap_expect(func, now[s].live * unit_bytes[s], now[s].live * unit_calls[s])) {
			ksft_print_msg("%s: %s has %lu live allocations\n", when, now[s].name,
				       now[s].live);
			ok = 0;
		}
	}
	return ok;
}

/*
 * Every site's chains in the stacks report add up to its figures in
 * /proc/allocinfo (none left if freed), and nothing went untracked; 1 if so.
 */
static int chains_exact(const char *when, int freed)
{
	char *stacks = ap_slurp(AP_STACKS, NULL);
	int ok = stacks && strstr(stacks, AP_NONE_UNTRACKED);

	if (!ok)
		ksft_print_msg("%s: %.300s\n", when, stacks ? stacks : "no stacks report");
	free(stacks);
	for (int s = 0; ok && s < nsites; s++) {
		char func[64];
		long long bytes;
		unsigned long long calls;
		struct ap_fig f;
		int n;

		snprintf(func, sizeof(func), "aptest_%.31s", sites[s].name);
		n = ap_chain_sum(func, &bytes, &calls);
		f = ap_site("allocprof_test", func);
		if (n < 0 || (freed && n) || f.bytes != bytes || f.calls != calls) {
			ksft_print_msg("%s: %s: %d chains, %lld bytes %llu calls; allocinfo %lld %llu\n",
				       when, func, n, bytes, calls, f.bytes, f.calls);
			ok = 0;
		}
	}
	return ok;
}

static int free_all(void)
{
	int ok = 1;

	for (int s = 0; s < nsites; s++)
		ok &= ap_test_free(sites[s].name) == 0;
	return ok;
}

static unsigned long long reads_started(struct storm *st)
{
	unsigned long long n = 0;

	for (int k = 0; k < READERS; k++)
		n += __atomic_load_n(&st->reads[k], __ATOMIC_RELAXED) +
		     __atomic_load_n(&st->cut[k], __ATOMIC_RELAXED) +
		     __atomic_load_n(&st->opened[k], __ATOMIC_RELAXED);
	return n;
}

/* Waits (up to 2 s) until a reader has opened /proc/allocinfo. */
static void wait_read(struct storm *st)
{
	unsigned long long from = reads_started(st);

	for (int i = 0; i < 2000 && reads_started(st) == from; i++)
		usleep(1000);
}

/* Waits until every worker has finished two more rounds. */
static int two_more_rounds(struct storm *st, pid_t *workers)
{
	unsigned long from[WORKERS];
	int w;

	for (w = 0; w < WORKERS; w++)
		from[w] = st->rounds[w];
	for (w = 0; w < WORKERS; w++) {
		while (st->rounds[w] < from[w] + 2) {
			if (waitpid(workers[w], NULL, WNOHANG) == workers[w])
				return 0;
			usleep(10000);
		}
	}
	return 1;
}

/* The results of the last storm, each set once by storm(). */
static struct {
	int set, ok;
	char msg[320];
} results[STORM_RESULTS];

static __printf(3, 4) void storm_result(enum storm_result r, int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(results[r].msg, sizeof(results[r].msg), fmt, ap);
	va_end(ap);
	results[r].ok = ok;
	results[r].set++;
}

/* Reports result r of the last storm (a failure if storm() did not set it once). */
static void report_storm_result(int r)
{
	if (results[r].set != 1)
		ksft_test_result_fail("storm result %d set %d times\n", r, results[r].set);
	else
		ksft_test_result(results[r].ok, "%s\n", results[r].msg);
}

static unsigned long long total_cycles, total_allocations, total_reads;
static long long total_faults;

/*
 * One storm: the workers (failing allocations if faults), the readers, and
 * cycles loads of allocprof; then the final checks, in results[].
 */
static void storm(const char *name, int cycles, int faults)
{
	struct storm *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t workers[WORKERS], readers[READERS];
	int c, k, w, errs = 0, first_err = 0, wait_ok = 1, loaded = 0;
	unsigned long long reads = 0, cut = 0, absent = 0, bad = 0, lines = 0;
	unsigned long long allocs = 0, enomem = 0, werrs = 0;
	struct timespec t0, t1;

	if (st == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(st, 0, sizeof(*st));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (w = 0; w < WORKERS; w++) {
		workers[w] = fork();
		if (workers[w] == 0)
			worker(st, w, faults);
	}
	for (k = 0; k < READERS; k++) {
		readers[k] = fork();
		if (readers[k] == 0)
			reader(st, k);
	}

	for (c = 0; c < cycles; c++) {
		if (c && c % 100 == 0)
			ksft_print_msg("%s: %d cycles, %d failed\n", name, c, errs);
		/*
		 * Every other load starts with profiling off and switches it
		 * on; the others switch it off and on again.
		 */
		int err = insmod(c % 2 ? "mem_profiling=0" : "");

		if (!err && c % 2 == 0)
			err = set_sysctl("0");
		if (!err)
			err = set_sysctl("1");
		if (!err) {
			const char *cmd = watch_commands[c % ARRAY_SIZE(watch_commands)];

			err = ap_write_file(AP_CONTROL, cmd, strlen(cmd));
		}
		/* Every tenth load: unload only once a reader opened the file. */
		if (!err && c % 10 == 0)
			wait_read(st);
		if (!err)
			err = rmmod();
		if (err) {
			if (!errs++)
				first_err = err;
			if (ap_module_loaded("allocprof"))
				rmmod();
		}
	}
	/*
	 * The last load: profiling stays on, and every test call site watched,
	 * for two rounds of every worker: each round frees all that is live at
	 * every site, so what is live after them was allocated, and watched,
	 * after the command.
	 */
	loaded = insmod("") == 0 &&
		 ap_write_file(AP_CONTROL, watch_commands[0], strlen(watch_commands[0])) == 0;
	if (loaded)
		wait_ok = two_more_rounds(st, workers);
	st->stop = 1;
	for (w = 0; w < WORKERS; w++) {
		int status;

		waitpid(workers[w], &status, 0);
		wait_ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
		allocs += st->allocations[w];
		enomem += st->enomem[w];
		werrs += st->errors[w];
	}
	for (k = 0; k < READERS; k++) {
		int status;

		waitpid(readers[k], &status, 0);
		wait_ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
		reads += st->reads[k];
		cut += st->cut[k];
		absent += st->absent[k];
		bad += st->bad[k];
		lines += st->lines[k];
		if (st->bad[k])
			ksft_print_msg("reader %d: %llu bad reads, first: %s\n", k, st->bad[k],
				       st->bad_line[k]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ksft_print_msg("%s: %d cycles in %.1f s; workers: %lu and %lu rounds, %llu allocations asked, %llu -ENOMEM, %llu errors\n",
		       name, cycles, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		       st->rounds[0], st->rounds[1], allocs, enomem, werrs);
	ksft_print_msg("%s: readers: %llu whole reads, %llu cut by an unload, %llu without the file, %llu lines\n",
		       name, reads, cut, absent, lines);

	memset(results, 0, sizeof(results));
	storm_result(SR_LOADS, errs == 0,
		     "%s: %d loads, sysctl 0/1 switches and unloads (%d failed, first %s)",
		     name, cycles, errs, strerror(-first_err));
	storm_result(SR_RAN, wait_ok && loaded, "%s: workers and readers ran to the end", name);
	storm_result(SR_ENOMEM, werrs == 0 && (faults ? enomem > 0 : enomem == 0),
		     "%s: allocations failed only by injected faults (%llu -ENOMEM, %llu other errors, last %d)",
		     name, enomem, werrs, st->last_error[0] ?: st->last_error[1]);
	storm_result(SR_BOTH_CPUS,
		     st->rounds[0] > 2 && st->rounds[1] > 2 && reads > (unsigned long long)cycles / 10,
		     "%s: both CPUs allocated while readers read (%lu/%lu rounds, %llu reads; at least 3 rounds each and a tenth of the cycles in reads, as how many there are is the scheduler's)",
		     name, st->rounds[0], st->rounds[1], reads);
	storm_result(SR_READS, bad == 0,
		     "%s: every read well formed, no negative figure (%llu lines)", name, lines);
	storm_result(SR_SITES, loaded && sites_exact(name),
		     "%s: after it, every site shows exactly what is live", name);
	storm_result(SR_CHAINS, loaded && chains_exact(name, 0),
		     "%s: every site's chains add up to its figures", name);
	storm_result(SR_FREED, free_all() && sites_exact(name) && chains_exact(name, 1),
		     "%s: all freed, every site reads 0 bytes, 0 calls, no chain", name);
	total_cycles += cycles;
	total_allocations += allocs;
	total_reads += reads + cut;
	munmap(st, sizeof(*st));
}

/*
 * failslab in every slab cache but vmap_area: vmalloc allocates from it
 * with GFP_NOWAIT under a spinlock-held preload, and mm/vmalloc.c answers
 * a failure there with a WARN_ON_ONCE() in va_clip() (not a profiler path,
 * so not what this test is about).  Nor kmemleak's own caches (debug):
 * their failures are not the profiler's either, would double the
 * allocations a load makes for insmod_fail_nth(), and one that finds
 * kmemleak's emergency pool empty switches kmemleak off for t_kmemleak().
 * Returns how many caches fail.
 */
static int failslab_caches(void)
{
	DIR *dir = opendir("/sys/kernel/slab");
	struct dirent *d;
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		char path[300];

		if (d->d_type != DT_DIR || d->d_name[0] == '.' || !strcmp(d->d_name, "vmap_area") ||
		    !strncmp(d->d_name, "kmemleak_", 9))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/failslab", d->d_name);
		if (!ap_write_file(path, "1", 1))
			n++;
	}
	closedir(dir);
	return n;
}

/*
 * The address range of a kernel function, from /proc/kallsyms: its address
 * up to the next symbol's.  0 if found.
 */
static int kernel_function(const char *name, unsigned long long *start, unsigned long long *end)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long addr, next = ~0ULL;
	char type, sym[256];

	*start = 0;
	if (!f)
		return -1;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, name) && (type == 'T' || type == 't'))
			*start = addr;
	rewind(f);
	while (*start && fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (addr > *start && addr < next)
			next = addr;
	fclose(f);
	*end = next;
	return *start && next != ~0ULL ? 0 : -1;
}

/*
 * No fault in alloc_slab_obj_exts(): when the profiler's own per-slab slot
 * vector cannot be allocated, the objects of that slab are not counted (as
 * upstream; the kernel says "no slab extension vector"), so figures could
 * not be exact.  Failing it is left out of every case here.
 */
static int faults_reject_profiler(const char *attr)
{
	unsigned long long start, end;
	char path[128], v[32];

	if (kernel_function("alloc_slab_obj_exts", &start, &end))
		return -1;
	snprintf(path, sizeof(path), FAULT_DIR "/%s/reject-start", attr);
	snprintf(v, sizeof(v), "%#llx", start);
	if (ap_write_file(path, v, strlen(v)))
		return -1;
	snprintf(path, sizeof(path), FAULT_DIR "/%s/reject-end", attr);
	snprintf(v, sizeof(v), "%#llx", end);
	return ap_write_file(path, v, strlen(v));
}

/* A fault_attr directory of debugfs: 10 % of the allocations of marked tasks. */
static int faults_setup(const char *attr)
{
	static const char *const knobs[][2] = {
		{ "probability", "10" }, { "interval", "1" }, { "verbose", "0" },
		{ "task-filter", "Y" }, { "space", "0" },
	};
	char path[128], v[16];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		snprintf(path, sizeof(path), FAULT_DIR "/%s/%s", attr, knobs[i][0]);
		if (ap_write_file(path, knobs[i][1], strlen(knobs[i][1])))
			return -1;
	}
	/* GFP_KERNEL allocations too, and pages of any order. */
	snprintf(path, sizeof(path), FAULT_DIR "/%s/ignore-gfp-wait", attr);
	if (ap_write_file(path, "N", 1))
		return -1;
	if (!strcmp(attr, "failslab")) {
		int n = failslab_caches();

		ksft_print_msg("failslab: %d slab caches\n", n);
		if (n < 10 || ap_write_file(FAULT_DIR "/failslab/cache-filter", "Y", 1))
			return -1;
	}
	if (!strcmp(attr, "fail_page_alloc")) {
		snprintf(path, sizeof(path), FAULT_DIR "/%s/min-order", attr);
		if (ap_write_file(path, "0", 1))
			return -1;
	}
	if (faults_reject_profiler(attr))
		return -1;
	snprintf(path, sizeof(path), FAULT_DIR "/%s/times", attr);
	snprintf(v, sizeof(v), "%d", FAULT_TIMES);
	return ap_write_file(path, v, strlen(v));
}

/* Faults injected through attr since faults_setup(). */
static long long faults_injected(const char *attr)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), FAULT_DIR "/%s/times", attr);
	if (ap_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return FAULT_TIMES - atoll(buf);
}

static void faults_off(const char *attr)
{
	char path[128];

	snprintf(path, sizeof(path), FAULT_DIR "/%s/probability", attr);
	ap_write_file(path, "0", 1);
}

#define INSMOD_TRIES 30
#define FAIL_NTH "/proc/thread-self/fail-nth"

/*
 * Checks what a load that returned err left: all of allocprof, counting
 * exactly, or nothing.  Unloads it.  Returns 1 if so.
 */
static int load_whole_or_nothing(int err, const char *what)
{
	char buf[64];
	int ok;

	if (!err) {
		int s = site_index("aptest_kmalloc_100");

		ok = ap_module_loaded("allocprof") &&
		     ap_read_file(AP_SYSCTL, buf, sizeof(buf)) > 0 && !strcmp(buf, "1\n") &&
		     ap_test_alloc("kmalloc_100", 3) == 0 &&
		     ap_expect("aptest_kmalloc_100", 3 * unit_bytes[s], 3 * unit_calls[s]) &&
		     ap_test_free("kmalloc_100") == 0 && ap_expect("aptest_kmalloc_100", 0, 0) &&
		     rmmod() == 0;
	} else {
		ok = !ap_module_loaded("allocprof") && access(AP_ALLOCINFO, F_OK) &&
		     access(AP_SYSCTL, F_OK);
	}
	if (!ok) {
		ksft_print_msg("%s: load %s, but module %s, /proc/allocinfo %s, sysctl %s\n",
			       what, err ? strerror(-err) : "succeeded",
			       ap_module_loaded("allocprof") ? "loaded" : "absent",
			       access(AP_ALLOCINFO, F_OK) ? "absent" : "present",
			       access(AP_SYSCTL, F_OK) ? "absent" : "present");
		if (ap_module_loaded("allocprof"))
			rmmod();
	}
	return ok;
}

/*
 * insmod in a child whose nth slab or page allocation fails (n 0: none
 * does, but count them); returns the load's result, and in *count how many
 * allocations were made (n 0) or whether the fault was injected (else).
 */
static int insmod_nth(long n, long *count)
{
	long *shared = mmap(NULL, sizeof(long) * 2, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const long big = 1000000;
	int status, err = -EIO;
	pid_t pid;

	if (shared == MAP_FAILED)
		return -ENOMEM;
	shared[0] = -EIO;
	shared[1] = -1;
	pid = fork();
	if (pid == 0) {
		char v[24], back[24];

		snprintf(v, sizeof(v), "%ld", n ? n : big);
		if (ap_write_file(FAIL_NTH, v, strlen(v)))
			_exit(1);
		shared[0] = insmod("");
		if (ap_read_file(FAIL_NTH, back, sizeof(back)) > 0)
			shared[1] = n ? atol(back) == 0 : big - atol(back);
		ap_write_file(FAIL_NTH, "0", 1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status)) {
		err = shared[0];
		*count = shared[1];
	}
	munmap(shared, sizeof(long) * 2);
	return err;
}

/*
 * Every allocation point of a load, failed on its own: the nth slab or
 * page allocation of insmod fails, for every n up to the number a load
 * makes (those of allocprof's init last).
 */
static void insmod_fail_nth(void)
{
	long n, total = 0, injected;
	int failures = 0, bad = 0, hit = 0;

	if (insmod_nth(0, &total) || total <= 0 || rmmod()) {
		ksft_test_result_fail("insmod counting its allocations (%ld)\n", total);
		return;
	}
	for (n = 1; n <= total; n++) {
		char what[64];
		int err;

		injected = 0;
		err = insmod_nth(n, &injected);
		hit += injected == 1;
		failures += err != 0;
		snprintf(what, sizeof(what), "allocation %ld of %ld failed", n, total);
		bad += !load_whole_or_nothing(err, what);
	}
	ksft_print_msg("insmod makes %ld allocations; failing one of them: %ld tries (%d failed), %ld loads, %d clean failures, %d half\n",
		       total, total, hit, total - failures, failures, bad);
	ksft_test_result(bad == 0 && failures > 0,
			 "insmod with its nth allocation failing: %ld tries fail cleanly or load fully\n",
			 total);
}

/*
 * insmod of allocprof with 10 % of its allocations failing: each load
 * either fails and leaves nothing (no module, no /proc/allocinfo, no
 * sysctl; the next load works) or loads fully and counts exactly.
 */
static void insmod_under_faults(void)
{
	int t, loads = 0, failures = 0, bad = 0;

	for (t = 0; t < INSMOD_TRIES; t++) {
		int status, err = -EIO;
		pid_t pid = fork();
		char what[32];

		if (pid == 0) {
			if (ap_write_file("/proc/self/make-it-fail", "1", 1))
				_exit(100);
			_exit(insmod("") ? 1 : 0);
		}
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) <= 1)
			err = WEXITSTATUS(status) ? -ENOMEM : 0;
		else
			bad++;
		if (err)
			failures++;
		else
			loads++;
		snprintf(what, sizeof(what), "10 %% faults, try %d", t);
		bad += !load_whole_or_nothing(err, what);
	}
	ksft_print_msg("insmod under faults: %d loads, %d clean failures, %d half\n", loads,
		       failures, bad);
	ksft_test_result(bad == 0 && failures > 0,
			 "insmod under 10 %% faults: %d tries fail cleanly or load fully (%d loaded)\n",
			 INSMOD_TRIES, loads);
}

static const int storm_results = STORM_RESULTS;
static int cycles = CYCLES, have_faults;

/* The first storm, in its first result's step; each step reports one result. */
static void t_storm(int r)
{
	if (r == 0)
		storm("storm", cycles, 0);
	report_storm_result(r);
}

/* Allocations still work and count exactly after the storm. */
static void t_after_storm(int i)
{
	int s, ok = 1;

	(void)i;
	for (s = 0; s < nsites; s++)
		ok &= ap_test_alloc(sites[s].name, 2) == 0;
	ksft_test_result(ok && sites_exact("after the storm"),
			 "after the storm: 2 allocations at every site counted exactly\n");
}

static void t_after_storm_freed(int i)
{
	(void)i;
	ksft_test_result(free_all() && sites_exact("after the storm"),
			 "after the storm: freed, 0/0 everywhere\n");
}

/* The steps with fault injection skip where the kernel has none. */
static int no_faults(void)
{
	if (!have_faults)
		ksft_test_result_skip("fault injection: needs CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC\n");
	return !have_faults;
}

static void t_insmod_under_faults(int i)
{
	(void)i;
	if (no_faults())
		return;
	if (faults_setup("failslab") || faults_setup("fail_page_alloc"))
		ksft_exit_fail_msg("cannot set up fault injection\n");
	if (rmmod())
		ksft_exit_fail_msg("rmmod allocprof: %s\n", strerror(errno));
	insmod_under_faults();
}

static void t_insmod_fail_nth(int i)
{
	(void)i;
	if (!no_faults())
		insmod_fail_nth();
}

static void t_storm_faults(int r)
{
	if (no_faults())
		return;
	if (r == 0) {
		storm("storm with faults", cycles / 5, 1);
		total_faults = faults_injected("failslab") + faults_injected("fail_page_alloc");
		faults_off("failslab");
		faults_off("fail_page_alloc");
		ksft_print_msg("faults injected: %lld slab, %lld page\n",
			       faults_injected("failslab"), faults_injected("fail_page_alloc"));
	}
	report_storm_result(r);
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_rmmod("allocprof_test") == 0 && rmmod() == 0, "unload\n");
}

#define KMEMLEAK FAULT_DIR "/kmemleak"
/*
 * kmemleak reports no object younger than MSECS_MIN_AGE (5 s, in
 * mm/kmemleak.c) when a scan starts: the second scan starts at least this
 * long after the last unload, a second more for the jiffies kmemleak
 * counts in.
 */
#define KMEMLEAK_MIN_AGE_S 6
/* Suspected leaks printed in full, of allocprof's and of the others each. */
#define KMEMLEAK_SHOWN 10

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * Is this kmemleak report (from its "unreferenced object" line to the
 * next) one of allocprof's?  Yes if a line of its object's dump or of its
 * backtrace (not its "comm" line: a test program's name starts with
 * allocprof too) names allocprof (the module and the test modules, and
 * every function of the module's Rust code, whose symbols carry its crate
 * name), or the kernel's side of the back end (alloc_tag_backend_*,
 * patches/), or if a frame has no symbol.  %pS prints a bare address for
 * code that is gone: a module unloaded since, and the guest has no module
 * but the tree's, all named allocprof* (the initramfs target).
 */
static int kmemleak_ours(const char *report)
{
	const char *line = strchr(report, '\n');

	while (line && *++line) {
		const char *end = strchrnul(line, '\n'), *text = line;
		char buf[512];

		while (*text == ' ')
			text++;
		snprintf(buf, sizeof(buf), "%.*s", (int)(end - text), text);
		if (strncmp(buf, "comm \"", 6) &&
		    (strstr(buf, "allocprof") || strstr(buf, "alloc_tag_backend") ||
		     !strncmp(buf, "0x", 2)))
			return 1;
		line = *end ? end : NULL;
	}
	return 0;
}

/* Prints a kmemleak report, line by line, as diagnostics. */
static void kmemleak_print(const char *report, const char *what)
{
	const char *line = report;

	while (*line) {
		const char *end = strchrnul(line, '\n');

		ksft_print_msg("kmemleak (%s): %.*s\n", what, (int)(end - line), line);
		line = *end ? end + 1 : end;
	}
}

/*
 * After every load and unload of allocprof above (the storms, the loads
 * under faults; allocprof_test unloaded too): kmemleak (the debug
 * flavour's CONFIG_DEBUG_KMEMLEAK) scans twice, as an object is reported
 * only by a scan that finds it unreferenced with the same contents as the
 * scan before (its checksum), and none of the suspected leaks may be
 * allocprof's (kmemleak_ours()).  Nothing is cleared first: a leak of an
 * earlier test's load counts too.  The others are printed and counted,
 * not failed: kmemleak's reports of the kernel's own objects are not
 * this test's subject.
 */
static void t_kmemleak(int i)
{
	struct timespec t0;
	double scan[2];
	char *text, *report, *next;
	int s, err = 0, total = 0, ours = 0;

	(void)i;
	if (access(KMEMLEAK, W_OK)) {
		ksft_test_result_skip("kmemleak: no CONFIG_DEBUG_KMEMLEAK (debug flavour only)\n");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (s = 0; s < 2 && !err; s++) {
		struct timespec t;

		if (s && since(&t0) < KMEMLEAK_MIN_AGE_S)
			usleep((KMEMLEAK_MIN_AGE_S - since(&t0)) * 1e6);
		clock_gettime(CLOCK_MONOTONIC, &t);
		err = ap_write_file(KMEMLEAK, "scan", 4);
		scan[s] = since(&t);
	}
	if (err) {
		ksft_test_result_fail("kmemleak: scan %d: %s\n", s, strerror(-err));
		return;
	}
	text = ap_slurp(KMEMLEAK, NULL);
	if (!text) {
		ksft_test_result_fail("kmemleak: cannot read " KMEMLEAK "\n");
		return;
	}
	for (report = strstr(text, "unreferenced object "); report; report = next) {
		next = strstr(report + 1, "unreferenced object ");
		if (next)
			next[-1] = '\0';
		total++;
		if (kmemleak_ours(report)) {
			if (ours++ < KMEMLEAK_SHOWN)
				kmemleak_print(report, "allocprof's");
		} else if (total - ours <= KMEMLEAK_SHOWN) {
			kmemleak_print(report, "not allocprof's");
		}
	}
	free(text);
	if (ours > KMEMLEAK_SHOWN || total - ours > KMEMLEAK_SHOWN)
		ksft_print_msg("kmemleak: %d of allocprof's and %d others not shown\n",
			       ours > KMEMLEAK_SHOWN ? ours - KMEMLEAK_SHOWN : 0,
			       total - ours > KMEMLEAK_SHOWN ? total - ours - KMEMLEAK_SHOWN : 0);
	ksft_print_msg("kmemleak: scans of %.1f s and %.1f s: %d suspected leaks, %d allocprof's\n",
		       scan[0], scan[1], total, ours);
	ksft_test_result(ours == 0,
			 "kmemleak: no suspected leak of allocprof's after the storms (%d of %d suspected)\n",
			 ours, total);
}

static const struct ap_step steps[] = {
	AP_STEP_EACH(t_storm, &storm_results),
	AP_STEP(t_after_storm),
	AP_STEP(t_after_storm_freed),
	AP_STEP(t_insmod_under_faults),
	AP_STEP(t_insmod_fail_nth),
	AP_STEP_EACH(t_storm_faults, &storm_results),
	AP_STEP(t_unload),
	AP_STEP(t_kmemleak),
};

int main(void)
{
	int s;

	ksft_print_header();
	have_faults = !access(FAULT_DIR "/failslab/probability", W_OK) &&
		      !access(FAULT_DIR "/fail_page_alloc/probability", W_OK);
	if (!have_faults)
		ksft_print_msg("no fault injection in this kernel (debug flavour only)\n");
	module_fd = ap_module_fd("allocprof");
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	nsites = ap_testsites(sites, MAX_SITES);
	for (s = 0; s < nsites; s++)
		if (ap_unit(&sites[s], &unit_bytes[s], &unit_calls[s]))
			ksft_exit_fail_msg("no figures for test site %s\n", sites[s].name);
	if (nsites < 10)
		ksft_exit_fail_msg("only %d test sites\n", nsites);
	if (rmmod())
		ksft_exit_fail_msg("rmmod allocprof: %s\n", strerror(errno));

	/* STORM_CYCLES=n: a shorter (or longer) storm, to debug with. */
	if (getenv("STORM_CYCLES"))
		cycles = atoi(getenv("STORM_CYCLES"));
	AP_RUN_STEPS(steps);
	ksft_print_msg("stats: cycles=%llu allocations=%llu faults=%lld reads=%llu\n",
		       total_cycles, total_allocations, total_faults, total_reads);
	ksft_finished();
}
