// SPDX-License-Identifier: GPL-2.0
/*
 * churn_test: other modules come and go while /proc/allocinfo is read, and
 * allocprof stays loaded.
 *
 * allocprof_churn (128 call sites: more than one block of 64 call-site ids)
 * and allocprof_test2 nr=0 (2 call sites, nothing allocated, so nothing
 * kept at unload) are loaded and unloaded in turn, CHURN_CYCLES times (500;
 * CHURN_CYCLES=n in the environment, e.g. from the kernel command line,
 * sets it: make soak runs more).  Each takes the lowest free ids, so the
 * long and the short section take the same first id one after the other,
 * the case in which /proc/allocinfo's show() could be asked for an id of
 * the long section after the short one took its block.  Meanwhile two
 * readers read /proc/allocinfo whole and one walks it with the ioctl.
 *
 * Each module is unloaded and the other loaded at once, so that the new
 * section takes the ids of the old while a reader may be between finding a
 * call site and printing it; then the module gone has no line and the
 * module loaded has exact lines (allocprof_churn: each call site one
 * kmalloc, as its sites file says; allocprof_test2 nr=0: each 0/0).  Every line a reader
 * read is well formed (ap_line_problem()), every record the walker got
 * names a call site.  A kernel report (on the debug flavour KASAN,
 * lockdep) fails the run (qemu/run).
 */
#include <linux/alloc_tag.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

#include "allocprof_lib.h"

#define CHURN "allocprof_churn"
#define T2 "allocprof_test2"
#define CHURN_SITES_FILE "/sys/kernel/debug/" CHURN "/sites"
#define T2_SITES_FILE "/sys/kernel/debug/" T2 "/sites"
#define MAX_SITES 256
#define READERS 2
#define BUF_SIZE (4 << 20)

/* A module of the churn and what its lines must show while it is loaded. */
struct mod {
	const char *name, *params, *sites_file, *prefix;
	int fd, nsites;
	struct ap_testsite sites[MAX_SITES];
	long long unit[MAX_SITES];
	unsigned long long calls[MAX_SITES];
};

static struct mod mods[] = {
	{ .name = CHURN, .params = "", .sites_file = CHURN_SITES_FILE, .prefix = "apchurn_" },
	{ .name = T2, .params = "nr=0", .sites_file = T2_SITES_FILE, .prefix = "aptest2_" },
};

/* What the readers and the walker saw, in memory shared with them. */
struct seen {
	volatile int stop;
	unsigned long reads[READERS], lines[READERS], bad[READERS];
	unsigned long walks, records, bad_records;
	char first_bad[READERS + 1][160];
};

static struct seen *seen;
static pid_t pids[READERS + 1];
static int cycles = 500, done_cycles;
static char why[512];
static char buf[BUF_SIZE];

static void note_bad(int k, const char *what, const char *line, size_t len)
{
	if (!seen->first_bad[k][0])
		snprintf(seen->first_bad[k], sizeof(seen->first_bad[k]), "%s: %.*s", what,
			 (int)(len > 100 ? 100 : len), line);
}

/* Reads /proc/allocinfo whole, again and again; checks every line. */
static void reader(int k)
{
	const char *header = ap_default_header();
	size_t header_len = strlen(header);

	while (!seen->stop) {
		size_t len = 0;
		int fd = open(AP_ALLOCINFO, O_RDONLY);
		ssize_t n = 0;
		struct ap_lines w;
		struct ap_info_line l;

		if (fd < 0) {
			seen->bad[k]++;
			note_bad(k, "open", strerror(errno), strlen(strerror(errno)));
			continue;
		}
		while (len < BUF_SIZE && (n = read(fd, buf + len, BUF_SIZE - len)) > 0)
			len += n;
		close(fd);
		seen->reads[k]++;
		if (n < 0 || len == BUF_SIZE || len < header_len ||
		    memcmp(buf, header, header_len)) {
			seen->bad[k]++;
			note_bad(k, n < 0 ? "read" : "header or size", buf, len < 100 ? len : 100);
			continue;
		}
		/* Every line after the header's two; len < BUF_SIZE. */
		ap_lines_of(&w, buf, len, AP_LINES_EVERY);
		while (ap_info_next(&w, &l)) {
			const char *problem;

			if (l.index < 2)
				continue;
			problem = l.terminated ? ap_line_problem(&l) : "unterminated";
			if (problem) {
				seen->bad[k]++;
				note_bad(k, problem, l.text, l.len);
			}
			seen->lines[k]++;
		}
		ap_lines_end(&w);
	}
	_exit(0);
}

/* A string field of a record: NUL-terminated within its array. */
#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

/* Walks the call sites with GET_AT and GET_NEXT on one open file, again and again. */
static void walker(int k)
{
	int fd = open(AP_ALLOCINFO, O_RDONLY);

	if (fd < 0) {
		note_bad(k, "open", strerror(errno), strlen(strerror(errno)));
		seen->bad_records++;
		_exit(0);
	}
	while (!seen->stop) {
		struct allocinfo_get_at at;
		struct allocinfo_tag_data d;
		struct allocinfo_tag_data *r = &at.data;
		int err;

		memset(&at, 0, sizeof(at));
		err = ioctl(fd, ALLOCINFO_IOC_GET_AT, &at) ? errno : 0;
		while (!err) {
			const struct allocinfo_tag *t = &r->tag;

			seen->records++;
			if (!TERMINATED(t->modname) || !TERMINATED(t->function) ||
			    !TERMINATED(t->filename) || !t->function[0] || !t->filename[0]) {
				seen->bad_records++;
				note_bad(k, "record", t->function, strnlen(t->function, sizeof(t->function)));
			}
			r = &d;
			err = ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) ? errno : 0;
		}
		if (err != ENOENT) {
			seen->bad_records++;
			note_bad(k, "ioctl", strerror(err), strlen(strerror(err)));
		}
		seen->walks++;
	}
	close(fd);
	_exit(0);
}

/*
 * The lines of module m in /proc/allocinfo: none if !loaded, else exactly
 * one for each of its call sites with its figures; 1, or 0 and why.
 */
static int lines_exact(struct mod *m, int loaded)
{
	char tag[64];
	unsigned char found[MAX_SITES] = { 0 };
	int n = 0, ok = 1;
	ssize_t len = ap_read_file(AP_ALLOCINFO, buf, BUF_SIZE);
	struct ap_lines w;
	struct ap_info_line l;

	if (len < 0 || len >= BUF_SIZE - 1) {
		snprintf(why, sizeof(why), "cannot read " AP_ALLOCINFO);
		return 0;
	}
	snprintf(tag, sizeof(tag), " [%s] func:%s", m->name, m->prefix);
	ap_lines_of(&w, buf, len, 0);
	while (ok && ap_info_next(&w, &l)) {
		char *t = strstr(l.text, tag), *name;
		int s;

		if (!t)
			continue;
		n++;
		name = t + strlen(tag);
		name[strcspn(name, " ")] = '\0';
		for (s = 0; s < m->nsites && strcmp(m->sites[s].name, name); s++)
			;
		if (!loaded || s == m->nsites || found[s] || !l.figures ||
		    l.bytes != (long long)m->sites[s].live * m->unit[s] ||
		    l.calls != m->sites[s].live * m->calls[s]) {
			snprintf(why, sizeof(why), "%s %s: %s", m->name,
				 loaded ? "loaded" : "unloaded", l.text);
			ok = 0;
		}
		if (s < m->nsites)
			found[s] = 1;
	}
	ap_lines_end(&w);
	if (ok && n != (loaded ? m->nsites : 0)) {
		snprintf(why, sizeof(why), "%s %s: %d lines, expected %d", m->name,
			 loaded ? "loaded" : "unloaded", n, loaded ? m->nsites : 0);
		ok = 0;
	}
	return ok;
}

/*
 * Unloads `gone` (if any) and at once loads `m`, so that m's section takes
 * the ids gone's left while readers may be between finding a call site and
 * printing it; then gone has no line and m's lines are exact.  1, or 0 and
 * why.
 */
static int swap(struct mod *gone, struct mod *m)
{
	int err = gone ? ap_delete(gone->name) : 0;

	if (err) {
		snprintf(why, sizeof(why), "delete_module %s: %s", gone->name, strerror(-err));
		return 0;
	}
	err = ap_finit(m->fd, m->params);
	if (err) {
		snprintf(why, sizeof(why), "finit_module %s: %s", m->name, strerror(-err));
		return 0;
	}
	return (!gone || lines_exact(gone, 0)) && lines_exact(m, 1);
}

/* Loads m once to read its sites file and their figures. */
static int learn(struct mod *m)
{
	int ok = ap_finit(m->fd, m->params) == 0;

	m->nsites = ok ? ap_testsites_of(m->sites_file, m->sites, MAX_SITES) : 0;
	for (int s = 0; s < m->nsites; s++)
		ok &= ap_unit(&m->sites[s], &m->unit[s], &m->calls[s]) == 0;
	ok &= ap_delete(m->name) == 0;
	return ok && m->nsites > 0;
}

static void t_start(int i)
{
	int ok;

	(void)i;
	ok = ap_start(NULL) == 0;
	for (unsigned int m = 0; ok && m < ARRAY_SIZE(mods); m++) {
		mods[m].fd = ap_module_fd(mods[m].name);
		ok = learn(&mods[m]);
	}
	ksft_test_result(ok && mods[0].nsites > 100,
			 "allocprof and allocprof_test loaded; %s has %d call sites, %s %d\n",
			 mods[0].name, mods[0].nsites, mods[1].name, mods[1].nsites);
	if (!ok)
		ksft_exit_fail_msg("cannot set up the churn\n");
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (seen == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(seen, 0, sizeof(*seen));
	for (int k = 0; k <= READERS; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			ksft_exit_fail_msg("fork: %s\n", strerror(errno));
		if (!pids[k]) {
			/* The churn goes first; the readers take what is left. */
			nice(10);
			if (k < READERS)
				reader(k);
			walker(k);
		}
	}
}

static void t_churn(int i)
{
	int ok = 1;
	time_t t0 = time(NULL);

	(void)i;
	/* Each cycle loads both modules, each in place of the other. */
	for (done_cycles = 0; ok && done_cycles < cycles; done_cycles++)
		for (unsigned int m = 0; ok && m < ARRAY_SIZE(mods); m++)
			ok = swap(done_cycles || m ? &mods[!m] : NULL, &mods[m]);
	ok = ok && ap_delete(mods[1].name) == 0 && lines_exact(&mods[1], 0);
	seen->stop = 1;
	for (int k = 0; k <= READERS; k++)
		waitpid(pids[k], NULL, 0);
	if (!ok)
		ksft_print_msg("cycle %d: %s\n", done_cycles, why);
	ksft_print_msg("%d cycles in %ld s\n", done_cycles, (long)(time(NULL) - t0));
	ksft_test_result(ok, "%d cycles of %s and %s, each loaded in place of the other: every load exact, every unload leaves no line\n",
			 cycles, mods[0].name, mods[1].name);
}

static const int nreaders = READERS;

static void t_reader(int k)
{
	if (seen->bad[k])
		ksft_print_msg("reader %d: first bad: %s\n", k, seen->first_bad[k]);
	ksft_test_result(seen->reads[k] > 0 && !seen->bad[k],
			 "reader %d: %lu reads, %lu lines, %lu bad\n", k, seen->reads[k],
			 seen->lines[k], seen->bad[k]);
}

static void t_walker(int i)
{
	(void)i;
	if (seen->bad_records)
		ksft_print_msg("walker: first bad: %s\n", seen->first_bad[READERS]);
	ksft_test_result(seen->walks > 0 && !seen->bad_records,
			 "ioctl walker: %lu walks, %lu records, %lu bad\n", seen->walks,
			 seen->records, seen->bad_records);
}

static void t_unload(int i)
{
	(void)i;
	ksft_test_result(ap_module_loaded("allocprof") && ap_unload_all() == 0,
			 "allocprof stayed loaded; unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_start),
	AP_STEP(t_churn),
	AP_STEP_EACH(t_reader, &nreaders),
	AP_STEP(t_walker),
	AP_STEP(t_unload),
};

int main(void)
{
	ksft_print_header();
	if (getenv("CHURN_CYCLES"))
		cycles = atoi(getenv("CHURN_CYCLES"));
	if (cycles <= 0)
		ksft_exit_fail_msg("CHURN_CYCLES=%s: not a number of cycles\n", getenv("CHURN_CYCLES"));
	AP_RUN_STEPS(steps);
	ksft_finished();
}
