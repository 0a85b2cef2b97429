// SPDX-License-Identifier: GPL-2.0
/*
 * control_test: allocprof's per-call-site control in debugfs, with dynamic
 * debug's grammar, and the stacks and ages of the watched call sites.
 *
 * - control lists every call site of /proc/allocinfo with its flags;
 * - every bad command fails with EINVAL, names the bad word in the kernel
 *   log and changes nothing (also when another command of the same write
 *   is good), among them a command of fifteen words and a write of 65
 *   commands; a command of fourteen words (four match-specs, the flags and
 *   five knobs) and a write of 64 commands run (the 64th command's flag is
 *   set);
 * - p off: new allocations are not counted; those counted before leave
 *   their figures exactly when freed; the call site is accurate:no in
 *   /proc/allocinfo 2.0 from then on;
 * - s: one tagged helper called from two functions shows two chains, each
 *   with its own exact bytes and calls, the pid and name of this process,
 *   its caller in its frames, each from the allocating function on (the
 *   allocator's frames left out, counted); every chain goes when its memory
 *   is freed;
 *   the chains of every test call site (pages, splits, partial frees,
 *   bulk, percpu, vmalloc) add up to the call site's figures exactly;
 * - a partial free whose page's last put (a timer's, in hard irq) lands
 *   between __free_pages()'s put and its page_ref_sub ends at 0/0 with no
 *   chain left, and another watched site's chain stays as it was;
 * - nested: with s on the stack depot's own call site too, the depot's
 *   new pools, allocated while a watched allocation saves its chain, are
 *   counted there and reported as nested, not watched (a later run in
 *   the same boot, whose chains the depot may know already so that no
 *   pool is allocated, skips that result, saying so);
 * - a full table: allocations beyond it are counted exactly, reported as
 *   "table full", and have no chain;
 * - a: ages move to older power-of-two buckets as time passes, each
 *   allocation in the bucket of its age as measured by this program;
 * - after vm.mem_profiling=never, writes fail with ENODEV; a reload
 *   starts again with every flag p.
 *
 * "changes nothing" is every call site's flags as at the start; the Rust
 * lines of allocprof that the kernel names when they first allocate (the
 * watch tables', at the boot's first s) may appear meanwhile with the
 * default flags, so that the program's results do not depend on which
 * programs ran before it in the guest.
 *
 * Expected bytes come from the kernel (the test module's "sites",
 * "callers" and "deep" files, /sys/kernel/slab), the table's size from
 * the stacks file's statistics line.  The upstream flavour has no
 * per-site control: scripts/check does not run this program there.
 */
#include <libgen.h>
#include <sys/stat.h>
#include <time.h>

#include "allocprof_lib.h"

#define CONTROL AP_CONTROL
#define AGES "/sys/kernel/debug/allocprof/ages"
#define STACKS AP_STACKS
#define CALLERS AP_TESTDIR "/callers"
#define DEEP AP_TESTDIR "/deep"

/* The limits of a write, as src/query.rs has them (MAX_QUERIES, MAX_WORDS). */
#define MAX_COMMANDS 64
#define MAX_WORDS 14

/* A command of MAX_WORDS words: four match-specs, the flags, five knobs. */
#define MAX_WORDS_COMMAND                                                                   \
	"module allocprof_test file allocprof_test.c func aptest_kmalloc_8 line 1-99999 +sf " \
	"probability=100 interval=1 times=-1 space=0 verbose=0"

/* A bad command and the word its message must name. */
static const struct {
	const char *command;
	const char *word;
} bad_commands[] = {
	{ "fuc aptest_kmalloc_100 +p", "'fuc'" },
	{ "class foo +p", "'class'" },
	{ "module allocprof_test +x", "'x'" },
	{ "module allocprof_test p", "'p'" },
	{ "module allocprof_test", "'allocprof_test'" },
	{ "module +p", "'module'" },
	{ "func aptest_kmalloc_100 +", "'+'" },
	{ "line 10-5 +p", "'10-5'" },
	{ "line abc +p", "'abc'" },
	{ "line 5-x +p", "'x'" },
	{ "func a func b +p", "'func'" },
	{ "file \"allocprof_test.c +p", "unclosed quote" },
	{ "module allocprof_test +s; bogus x -p", "'bogus'" },
	{ "module allocprof_test -p\nfunc aptest_kmalloc_8 =pq", "'q'" },
	/* MAX_WORDS + 1 words: the fifteenth is named. */
	{ MAX_WORDS_COMMAND " fifteenth", "too many words at 'fifteenth'" },
};
static const int nr_bad = ARRAY_SIZE(bad_commands);

/* The control file at the start, this program's name. */
static char *before, comm[16];

/* Writes a command; 0 or the errno of the write. */
static int control(const char *command)
{
	int fd = open(CONTROL, O_WRONLY), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, command, strlen(command)) < 0)
		err = errno;
	close(fd);
	return err;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The lines of text (changed in place), sorted; *n their number.  NULL if
 * no memory.  The caller frees the array.
 */
static char **sorted_lines(char *text, size_t *n)
{
	size_t cap = 1, k = 0;
	char **v, *line, *save = NULL, *c;

	for (c = text; *c; c++)
		cap += *c == '\n';
	v = calloc(cap, sizeof(*v));
	if (!v)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line && k < cap;
	     line = strtok_r(NULL, "\n", &save))
		v[k++] = line;
	qsort(v, k, sizeof(*v), cmp_lines);
	*n = k;
	return v;
}

/*
 * Every call site of the control file at the start is there with the
 * same flags.  A call site may have appeared since, with the default
 * flags: a Rust line of allocprof's own, which the kernel names when it
 * first allocates (the watch tables' lines, at the first s of the boot).
 * Which of those a guest has named before this program runs depends on
 * the programs before it, so they are not a change; any other line is.
 */
static int unchanged(void)
{
	char *was = before ? strdup(before) : NULL, *now = ap_slurp(CONTROL, NULL);
	size_t nw = 0, nn = 0, a = 0, b = 0;
	char **w = was ? sorted_lines(was, &nw) : NULL;
	char **v = now ? sorted_lines(now, &nn) : NULL;
	int same = w && v;

	while (same && (a < nw || b < nn)) {
		int c = a == nw ? 1 : b == nn ? -1 : strcmp(w[a], v[b]);

		if (!c) {
			a++, b++;
		} else if (c > 0 && strstr(v[b], " [allocprof]") &&
			   strlen(v[b]) > 3 && !strcmp(v[b] + strlen(v[b]) - 3, " =p")) {
			b++;
		} else {
			ksft_print_msg("control file: %s '%s'\n", c < 0 ? "no more" : "new",
				       c < 0 ? w[a] : v[b]);
			same = 0;
		}
	}
	free(w);
	free(v);
	free(was);
	free(now);
	return same;
}

/*
 * Lines of a file (the control file, /proc/allocinfo) that do not start
 * with '#' or "allocinfo" (the headers), those with `with` if not NULL.
 */
static int count_lines(const char *path, const char *with)
{
	struct ap_lines w = AP_LINES(path, 0);
	struct ap_info_line l;
	int n = 0;

	while (ap_lines_next(&w, &l))
		if (l.text[0] != '#' && strncmp(l.text, "allocinfo", 9) &&
		    (!with || strstr(l.text, with)))
			n++;
	return ap_lines_end(&w) ? -1 : n;
}

/* The statistics line of the stacks file. */
struct stats {
	long entries, chains, max_entries, max_chains, bytes;
	unsigned long long full, nested;
};

static int read_stats(struct stats *s)
{
	char *buf = ap_slurp(STACKS, NULL), *line;
	int ok;

	memset(s, 0, sizeof(*s));
	line = buf ? strstr(buf, "\n# tracked: ") : NULL;
	ok = line && sscanf(line + 1,
			    "# tracked: %ld allocations in %ld chains; table: %*d/%ld allocations, %*d/%ld chains, %ld bytes; not tracked: %llu (table full), %llu (nested)",
			    &s->entries, &s->chains, &s->max_entries, &s->max_chains, &s->bytes,
			    &s->full, &s->nested) == 7;
	if (!ok)
		ksft_print_msg("stacks: no statistics line: %.200s\n", buf ? buf : "(unreadable)");
	free(buf);
	return ok;
}

/* The stacks file's statistics say no allocation went untracked. */
static int nothing_untracked(void)
{
	char *buf = ap_slurp(STACKS, NULL);
	int ok = buf && strstr(buf, AP_NONE_UNTRACKED);

	if (!ok)
		ksft_print_msg("statistics: %.200s\n", buf ? buf : "(unreadable)");
	free(buf);
	return ok;
}

/* The checks, in order; each reports one result. */

static void t_modes(int i)
{
	struct stat st;

	(void)i;
	ksft_test_result(stat(CONTROL, &st) == 0 && (st.st_mode & 0777) == 0600 &&
			 stat(STACKS, &st) == 0 && (st.st_mode & 0777) == 0400 &&
			 stat(AGES, &st) == 0 && (st.st_mode & 0777) == 0400 &&
			 stat(AP_NODES, &st) == 0 && (st.st_mode & 0777) == 0400,
			 "control 0600, stacks, ages and nodes 0400\n");
}

static void t_lists_all(int i)
{
	int n = count_lines(CONTROL, " =p");

	(void)i;
	ksft_test_result(n > 0 && n == count_lines(CONTROL, NULL) &&
			 n == count_lines(AP_ALLOCINFO, NULL),
			 "control lists every call site of allocinfo (%d), all =p\n", n);
}

static void t_module_vmlinux(int i)
{
	(void)i;
	ksft_test_result(count_lines(CONTROL, " [allocprof_test]") ==
			 count_lines(AP_ALLOCINFO, " [allocprof_test] ") &&
			 count_lines(CONTROL, " [vmlinux]") == count_lines(AP_ALLOCINFO, NULL) -
			 count_lines(AP_ALLOCINFO, "] func:"),
			 "module and vmlinux call sites as in allocinfo\n");
}

static void t_nobody(int i)
{
	(void)i;
	ksft_test_result(ap_open_as_nobody(CONTROL, O_RDONLY) == EACCES,
			 "user nobody cannot open control\n");
}

/* Bad commands: EINVAL, a message with the bad word, nothing changed. */
static void t_bad(int i)
{
	const char *c = bad_commands[i].command;
	char shown[160];
	int err, same, named, len = 0;

	ap_klog_clear();
	err = control(c);
	same = unchanged();
	named = ap_logged(bad_commands[i].word);
	/* On one line of the output: a newline as \n. */
	for (; *c && len < (int)sizeof(shown) - 3; c++) {
		if (*c == '\n')
			shown[len++] = '\\';
		shown[len++] = *c == '\n' ? 'n' : *c;
	}
	shown[len] = '\0';
	ksft_test_result(err == EINVAL && same && named,
			 "bad command '%s': EINVAL (%s), nothing changed (%d), the kernel log names %s (%d)\n",
			 shown, strerror(err), same, bad_commands[i].word, named);
}

static void t_too_big(int i)
{
	char big[5000];

	(void)i;
	memset(big, ' ', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 4, "-p", 2);
	ksft_test_result(control(big) == E2BIG && unchanged(),
			 "a write of %zu bytes: E2BIG, nothing changed\n", sizeof(big) - 1);
}

static void t_comments(int i)
{
	(void)i;
	ksft_test_result(control("# only a comment\n\n ; ") == 0 && unchanged(),
			 "a write of comments and blanks changes nothing\n");
}

/*
 * n commands for aptest_kmalloc_8: first, then fillers that change
 * nothing it has, then last, with blanks and comments between them that
 * do not count.  The caller frees the result.
 */
static char *commands(int n, const char *first, const char *last)
{
	size_t size = (n + 2) * 64;
	char *buf = malloc(size);
	int k, len = 0;

	if (!buf)
		return NULL;
	for (k = 0; k < n; k++) {
		const char *flags = k == 0 ? first : k == n - 1 ? last : "-a";

		len += snprintf(buf + len, size - len, "func aptest_kmalloc_8 %s;%s", flags,
				k % 8 ? " ; " : "\n# a comment\n");
	}
	return buf;
}

static void t_max_commands(int i)
{
	char *w = commands(MAX_COMMANDS, "-s", "+s");
	int err = w ? control(w) : ENOMEM;

	(void)i;
	ksft_test_result(err == 0 && ap_flags_are("aptest_kmalloc_8", "ps") &&
			 control("func aptest_kmalloc_8 -s") == 0 && unchanged(),
			 "a write of %d commands (%zu bytes) runs: the last gives s (%s)\n",
			 MAX_COMMANDS, w ? strlen(w) : 0, strerror(err));
	free(w);
}

static void t_too_many_commands(int i)
{
	char *w = commands(MAX_COMMANDS + 1, "+a", "+s"), why[64];
	int err;

	(void)i;
	ap_klog_clear();
	err = w ? control(w) : ENOMEM;
	snprintf(why, sizeof(why), "more than %d commands in one write", MAX_COMMANDS);
	ksft_test_result(err == EINVAL && unchanged() && ap_logged(why),
			 "a write of %d commands: EINVAL (%s), the log says why, not even the first runs\n",
			 MAX_COMMANDS + 1, strerror(err));
	free(w);
}

static void t_max_words(int i)
{
	const char *w = MAX_WORDS_COMMAND;
	int words = 0;
	const char *c;

	(void)i;
	for (c = w; *c; c++)
		words += (c == w || c[-1] == ' ') && *c != ' ';
	ksft_test_result(words == MAX_WORDS && control(w) == 0 &&
			 ap_flags_are("aptest_kmalloc_8", "psf") &&
			 control("func aptest_kmalloc_8 -sf") == 0 && unchanged(),
			 "a command of %d words runs\n", words);
}

static void t_matches_nothing(int i)
{
	(void)i;
	ksft_test_result(control("module no_such_module +s") == 0 && unchanged() &&
			 ap_grep_file(STACKS, "^# tracked: .*, 0 bytes;", 0, NULL) > 0,
			 "a command that matches nothing succeeds, changes nothing, allocates no table\n");
}

static void t_file_func_line(int i)
{
	(void)i;
	ksft_test_result(control("file allocprof_test.c func aptest_k*_8 line 1-999999 +s") == 0 &&
			 ap_flags_are("aptest_kmalloc_8", "ps") && ap_flags_are("aptest_kmalloc_100", "p") &&
			 ap_flags_are("aptest_kmalloc_1000", "p"),
			 "file (base name), func glob, line range: one call site\n");
}

static void t_two_commands(int i)
{
	(void)i;
	ksft_test_result(control("# two commands\nfunc aptest_kmalloc_8 =_; func 'aptest_kmalloc_1?00' -p") == 0 &&
			 ap_flags_are("aptest_kmalloc_8", "_") && ap_flags_are("aptest_kmalloc_1000", "_") &&
			 ap_flags_are("aptest_kmalloc_3000", "p"),
			 "two commands in one write, quoted glob with ?\n");
}

static void t_back_to_start(int i)
{
	(void)i;
	ksft_test_result(control("module allocprof_tes? =p") == 0 && unchanged(),
			 "module glob =p: back to the start\n");
}

/* The line of the test module's call site func, from the control file. */
static int line_of(const char *func)
{
	char tail[96], *buf = ap_slurp(CONTROL, NULL), *line, *save = NULL;
	int n = -1, found = 0;

	if (!buf)
		return -1;
	snprintf(tail, sizeof(tail), " [allocprof_test]%s =", func);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(line, tail), *colon;

		if (!at)
			continue;
		*at = '\0';
		colon = strrchr(line, ':');
		if (colon && sscanf(colon + 1, "%d", &n) == 1)
			found++;
	}
	free(buf);
	return found == 1 ? n : -1;
}

/*
 * A line number alone, and a range that ends on it, select the call site
 * on that line: the bounds of "line" are inclusive, as dynamic debug's.
 */
static void t_line_inclusive(int i)
{
	char cmd[96];
	int n = line_of("aptest_kmalloc_8"), ok;

	(void)i;
	snprintf(cmd, sizeof(cmd), "file allocprof_test.c line %d +s", n);
	ok = n > 1 && control(cmd) == 0 && ap_flags_are("aptest_kmalloc_8", "ps") &&
	     count_lines(CONTROL, " =ps") == 1;
	snprintf(cmd, sizeof(cmd), "file allocprof_test.c line %d-%d -s", n - 1, n);
	ksft_test_result(ok && control(cmd) == 0 && unchanged(),
			 "line %d, and a range ending on it, select the call site on that line\n", n);
}

/* p off: new allocations not counted, old ones exact when freed. */
static const char *const p_site = "kmalloc_100", *const p_func = "aptest_kmalloc_100";
static long long p_unit = -1;

static void t_p_off(int i)
{
	unsigned long long calls;

	(void)i;
	if (ap_testsite_unit(p_site, &p_unit, &calls))
		p_unit = -1;
	ap_test_alloc(p_site, 4);
	ksft_test_result(!ap_site("allocprof_test", p_func).inaccurate &&
			 control("module allocprof_test func aptest_kmalloc_100 -p") == 0 &&
			 ap_flags_are(p_func, "_") && ap_site("allocprof_test", p_func).inaccurate,
			 "-p: flags _, accurate:no from now on\n");
}

static void t_p_not_counted(int i)
{
	(void)i;
	ap_test_alloc(p_site, 6);
	ksft_test_result(ap_expect(p_func, 4 * p_unit, 4), "-p: 6 new allocations not counted\n");
}

static void t_p_free_nothing(int i)
{
	(void)i;
	ap_test_free_n(p_site, 6);
	ksft_test_result(ap_expect(p_func, 4 * p_unit, 4), "-p: freeing them changes nothing\n");
}

static void t_p_on(int i)
{
	(void)i;
	ap_test_alloc(p_site, 2);
	ksft_test_result(control("func aptest_kmalloc_100 +p") == 0 && ap_flags_are(p_func, "p"),
			 "+p: flags p\n");
}

static void t_p_counted(int i)
{
	(void)i;
	ap_test_alloc(p_site, 3);
	ksft_test_result(ap_expect(p_func, 7 * p_unit, 7), "+p: counted again\n");
}

static void t_p_all_freed(int i)
{
	(void)i;
	ap_test_free(p_site);
	ksft_test_result(ap_expect(p_func, 0, 0) && ap_site("allocprof_test", p_func).inaccurate &&
			 !ap_site("allocprof_test", "aptest_kmalloc_3000").inaccurate,
			 "all freed: 0/0, exactly; still accurate:no, its neighbour not\n");
}

/* The two-caller helper: a and b chains with exact figures, own frames. */
static long long h_unit = -1;
static struct ap_chain h_chains[4];
static int h_n, h_a, h_b;

static void t_s_helper(int i)
{
	struct ap_testsite helper[3];
	unsigned long long calls;

	(void)i;
	if (ap_testsites_of(CALLERS, helper, 3) != 3 || ap_unit(&helper[0], &h_unit, &calls)) {
		ksft_print_msg("cannot read the test module's callers file\n");
		h_unit = -1;
	}
	ksft_test_result(control("func aptest_helper +s") == 0 && ap_flags_are("aptest_helper", "ps"),
			 "func aptest_helper +s: flags ps\n");
}

static void t_s_allocinfo(int i)
{
	(void)i;
	ap_write_file(CALLERS, "a 5", 3);
	ap_write_file(CALLERS, "b 3", 3);
	ksft_test_result(ap_expect("aptest_helper", 8 * h_unit, 8),
			 "allocinfo: one call site, 8 allocations\n");
}

static void t_s_two_chains(int i)
{
	struct ap_chain *c = h_chains;

	(void)i;
	h_n = ap_chains_of("aptest_helper", c, 4);
	h_a = h_n == 2 && c[0].calls == 5 ? 0 : 1;
	h_b = 1 - h_a;
	ksft_test_result(h_n == 2 && c[h_a].bytes == 5 * h_unit && c[h_a].calls == 5 &&
			 c[h_b].bytes == 3 * h_unit && c[h_b].calls == 3,
			 "stacks: two chains, %lld/5 and %lld/3 (%d chains)\n", 5 * h_unit,
			 3 * h_unit, h_n);
}

static void t_s_own_caller(int i)
{
	struct ap_chain *c = h_chains;

	(void)i;
	ksft_test_result(h_n == 2 && strstr(c[h_a].frames, "aptest_from_a+") &&
			 !strstr(c[h_a].frames, "aptest_from_b+") &&
			 strstr(c[h_b].frames, "aptest_from_b+") &&
			 !strstr(c[h_b].frames, "aptest_from_a+") &&
			 strstr(c[h_a].frames, "aptest_helper+"),
			 "stacks: each chain shows its own caller\n");
}

/*
 * Each chain starts at the caller of the allocation function: its first
 * frame is the allocating function (aptest_helper, not inlined), no frame is
 * an allocator's *_noprof entry point or the slab hook below it, and the
 * statistics say frames were left out (at least the kmalloc entry point of
 * each of the two chains).
 */
static void t_s_callers(int i)
{
	struct ap_chain *c = h_chains;
	char *buf = ap_slurp(STACKS, NULL), *line;
	long left_out = -1;
	int k, ok = h_n == 2;

	(void)i;
	line = buf ? strstr(buf, "\n# allocator frames left out: ") : NULL;
	if (!line || sscanf(line, "\n# allocator frames left out: %ld ", &left_out) != 1)
		ok = 0;
	for (k = 0; ok && k < h_n; k++)
		ok = !strncmp(c[k].frames, "aptest_helper+", strlen("aptest_helper+")) &&
		     !strstr(c[k].frames, "_noprof+") && !strstr(c[k].frames, "_noprof.") &&
		     !strstr(c[k].frames, "alloc_hook");
	free(buf);
	ksft_test_result(ok && left_out >= h_n,
			 "stacks: each chain starts at aptest_helper, no allocator frame; %ld left out\n",
			 left_out);
}

static void t_s_pid(int i)
{
	struct ap_chain *c = h_chains;

	(void)i;
	ksft_test_result(h_n == 2 && c[h_a].pid == getpid() && c[h_b].pid == getpid() &&
			 !strcmp(c[h_a].comm, comm) && !strcmp(c[h_b].comm, comm),
			 "stacks: pid %d comm %s of the allocating task\n", getpid(), comm);
	if (h_n == 2)
		ksft_print_msg("chain a: %s\n%s", c[h_a].first, c[h_a].frames);
}

/* -s: live chains stay until freed, new allocations get none. */
static void t_s_minus(int i)
{
	struct ap_chain c[4];
	int n;

	(void)i;
	control("func aptest_helper -s");
	ap_write_file(CALLERS, "a 2", 3);
	n = ap_chains_of("aptest_helper", c, 4);
	ksft_test_result(ap_flags_are("aptest_helper", "p") &&
			 ap_expect("aptest_helper", 10 * h_unit, 10) && n == 2 &&
			 c[0].calls + c[1].calls == 8,
			 "-s: new allocations counted, not watched; old chains stay\n");
}

static void t_s_free(int i)
{
	struct ap_chain c[4];

	(void)i;
	ap_write_file(CALLERS, "free", 4);
	ksft_test_result(ap_expect("aptest_helper", 0, 0) &&
			 ap_chains_of("aptest_helper", c, 4) == 0,
			 "free: the call site at 0/0, its chains gone\n");
}

/*
 * Every test call site with s: its chains add up to its figures.  From 6.18
 * on that includes kmalloc_nolock and pages_nolock, which allocate (and
 * the first frees) under a raw spinlock: debug-7.3's lockdep reported the
 * watch table's lock there while it was a spinlock_t.
 */
static void t_all_sites(int i)
{
	struct ap_testsite sites[32];
	int k, n = ap_testsites(sites, 32), ok = n > 0;

	(void)i;
	ok &= control("module allocprof_test +s") == 0;
	for (k = 0; k < n; k++) {
		ap_test_alloc(sites[k].name, 2);
		ap_test_free_n(sites[k].name, 1);
	}
	for (k = 0; ok && k < n; k++) {
		char func[48];
		long long unit = -1, bytes = 0;
		unsigned long long ucalls = 0, calls = 0;
		struct ap_fig f;
		long live = ap_testsite_live(sites[k].name);

		snprintf(func, sizeof(func), "aptest_%.31s", sites[k].name);
		f = ap_site("allocprof_test", func);
		if (ap_unit(&sites[k], &unit, &ucalls) || live <= 0 ||
		    ap_chain_sum(func, &bytes, &calls) <= 0 || f.found != 1 ||
		    f.bytes != bytes || f.calls != calls ||
		    bytes != live * unit || calls != live * ucalls) {
			ksft_print_msg("%s: chains %lld/%llu, allocinfo %lld/%llu, %ld live of %lld\n",
				       func, bytes, calls, f.bytes, f.calls, live, unit);
			ok = 0;
		}
	}
	ok &= nothing_untracked();
	for (k = 0; k < n; k++)
		ap_test_free(sites[k].name);
	for (k = 0; ok && k < n; k++) {
		char func[48];
		long long bytes;
		unsigned long long calls;

		snprintf(func, sizeof(func), "aptest_%.31s", sites[k].name);
		if (ap_chain_sum(func, &bytes, &calls) != 0 || !ap_expect(func, 0, 0)) {
			ksft_print_msg("%s: chains left after the frees\n", func);
			ok = 0;
		}
	}
	ok &= control("module allocprof_test -s") == 0;
	ksft_test_result(ok, "s on every test call site: chains add up exactly\n");
}

/*
 * Issue #23, finding 7: a partial free whose page's last reference is
 * dropped (by the test module's timer, in softirq) between
 * __free_pages()'s put_page_testzero() and its page_ref_sub: the entry's
 * one call goes before the three tail pages' bytes.  The race site's
 * figures must end at 0/0 with no chain left, and a watched allocation at
 * another site (aptest_pages_partial, 4 KiB and one call) keep its chain.
 */
#define RACE AP_TESTDIR "/partial_race"
#define RACE_FUNC "aptest_partial_race"
#define RACE_OTHER "aptest_pages_partial"
/*
 * How many partial frees the module runs against its timer: PARTIAL_RACES
 * in the environment (make soak: 20000), else 2000.  Its delay reaches the
 * moment the timer fires (about 3.5 ms under TCG) within a few hundred
 * runs, and about a fifth of the runs after that end with the timer's put
 * (4,141 to 5,875 of 20,000 in the runs of 2026-11-27): each of those is the
 * race.  20,000 runs took 80 of control_test's 95 s on base.
 */
static const char *race_runs(void)
{
	const char *runs = getenv("PARTIAL_RACES");

	return runs && *runs ? runs : "2000";
}

static struct ap_chain race_other[2];
static struct ap_fig race_other_fig;

/* The other site's one chain, as its allocinfo figures. */
static int race_other_exact(struct ap_chain *c)
{
	long long bytes = 0;
	unsigned long long calls = 0;
	struct ap_fig f = ap_site("allocprof_test", RACE_OTHER);

	if (ap_chains_of(RACE_OTHER, c, 2) != 1 || ap_chain_sum(RACE_OTHER, &bytes, &calls) != 1 ||
	    f.found != 1 || f.bytes != bytes || f.calls != calls || calls != 1) {
		ksft_print_msg("%s: chains %lld/%llu, allocinfo %lld/%llu\n",
			       RACE_OTHER, bytes, calls, f.bytes, f.calls);
		return 0;
	}
	race_other_fig = f;
	return 1;
}

static void t_race_watch(int i)
{
	int ok;

	(void)i;
	ok = control("func " RACE_FUNC " +s") == 0 && control("func " RACE_OTHER " +s") == 0 &&
	     ap_flags_are(RACE_FUNC, "ps") && ap_flags_are(RACE_OTHER, "ps") &&
	     ap_test_alloc("pages_partial", 1) == 0 && race_other_exact(race_other) &&
	     ap_expect(RACE_FUNC, 0, 0);
	ksft_test_result(ok, "partial free race: both sites watched, the other's chain exact\n");
}

static void t_race_run(int i)
{
	long long bytes = 0;
	unsigned long long calls = 0;
	char buf[32] = "";
	const char *runs = race_runs();
	int chains, ok = ap_write_file(RACE, runs, strlen(runs)) == 0;
	long ended;

	(void)i;
	ok &= ap_read_file(RACE, buf, sizeof(buf)) > 0;
	ended = strtol(buf, NULL, 10);
	chains = ap_chain_sum(RACE_FUNC, &bytes, &calls);
	ksft_print_msg("%s: the timer's put ended %ld of %s partial frees; %d chains %lld/%llu\n",
		       RACE_FUNC, ended, runs, chains, bytes, calls);
	/* Where the timer fires is not exact by nature: it must end some. */
	if (ended <= 0)
		ksft_print_msg("the timer ended no partial free: the race was not run\n");
	ksft_test_result(ok && ended > 0 && ap_expect(RACE_FUNC, 0, 0) && chains == 0,
			 "partial free race: %s at 0/0, no chain left\n", RACE_FUNC);
}

static void t_race_other(int i)
{
	struct ap_chain c[2];
	long long bytes = 0;
	unsigned long long calls = 0;
	struct ap_fig before_fig = race_other_fig;
	int ok = race_other_exact(c) && c[0].bytes == race_other[0].bytes &&
		 c[0].calls == race_other[0].calls && c[0].pid == race_other[0].pid &&
		 !strcmp(c[0].frames, race_other[0].frames) &&
		 race_other_fig.bytes == before_fig.bytes &&
		 race_other_fig.calls == before_fig.calls;

	(void)i;
	ok &= ap_test_free("pages_partial") == 0 && ap_expect(RACE_OTHER, 0, 0) &&
	      ap_chain_sum(RACE_OTHER, &bytes, &calls) == 0 && nothing_untracked();
	ok &= control("func " RACE_FUNC " -s") == 0 && control("func " RACE_OTHER " -s") == 0;
	ksft_test_result(ok, "partial free race: the other site's chain unchanged, then freed\n");
}

static void t_nothing_untracked(int i)
{
	(void)i;
	ksft_test_result(nothing_untracked(), "no allocation went untracked\n");
}

/*
 * Nested allocations: aptest_deep_alloc() is called through every call
 * chain the deep file has; saving each new chain fills the stack
 * depot, which allocates its next pool (stack_depot_save_flags()'s
 * alloc_pages()) inside the saving, while allocprof watches the
 * allocation: with s on the depot's call site too, that pool is nested.
 */
#define DEPOT_FUNC "stack_depot_save_flags"
/*
 * Made by the first run of this program in a boot (tmpfs): a later run's
 * chains are the depot's already, if the test module is loaded at the same
 * address, and then saving them allocates no pool to be nested.
 */
#define RAN_MARK "/tmp/allocprof-control_test-ran"
static struct stats n_before;
static struct ap_fig depot_before;
static int deep_n;

static void t_nested(int i)
{
	struct ap_testsite deep[1];
	struct stats after;
	struct ap_fig depot;
	int ok;

	(void)i;
	ok = ap_testsites_of(DEEP, deep, 1) == 1 && control("func aptest_deep_alloc +s") == 0 &&
	     control("module vmlinux func " DEPOT_FUNC " +s") == 0 && read_stats(&n_before);
	depot_before = ap_site(NULL, DEPOT_FUNC);
	ok = ok && ap_write_file(DEEP, "all", 3) == 0 && read_stats(&after) &&
	     ap_testsites_of(DEEP, deep, 1) == 1;
	deep_n = ok ? deep[0].live : 0;
	depot = ap_site(NULL, DEPOT_FUNC);
	/*
	 * Not an exact figure: other users of the depot (KASAN, SLUB's
	 * debug tracks on the debug kernel) allocate pools outside
	 * allocprof's watching too, counted at the depot's call site but not
	 * nested.  Every nested one is counted there, though.
	 */
	if (access(RAN_MARK, F_OK) == 0 && ok && depot.found == 1 &&
	    depot.calls == depot_before.calls) {
		ksft_test_result_skip("%d chains saved, none new to the stack depot (not this boot's first run): nothing nested\n",
				      deep_n);
		return;
	}
	ksft_test_result(ok && deep_n > 1 && depot_before.found == 1 && depot.found == 1 &&
			 after.nested > n_before.nested &&
			 (long long)(after.nested - n_before.nested) <=
			 (long long)(depot.calls - depot_before.calls),
			 "%d chains saved: %llu nested allocations, at most the %lld new at " DEPOT_FUNC "\n",
			 deep_n, after.nested - n_before.nested,
			 (long long)(depot.calls - depot_before.calls));
}

static void t_nested_exact(int i)
{
	struct ap_testsite deep[1];
	struct ap_chain *c = calloc(deep_n + 1, sizeof(*c));
	long long unit = -1;
	unsigned long long ucalls;
	int n = -1, k, each = 1;

	(void)i;
	if (ap_testsites_of(DEEP, deep, 1) != 1 || ap_unit(&deep[0], &unit, &ucalls))
		unit = -1;
	if (c)
		n = ap_chains_of("aptest_deep_alloc", c, deep_n + 1);
	for (k = 0; k < n; k++)
		each &= c[k].bytes == unit && c[k].calls == 1;
	ksft_test_result(deep_n > 0 && deep[0].live == (unsigned long)deep_n && n == deep_n &&
			 each && ap_expect("aptest_deep_alloc", deep_n * unit, deep_n),
			 "aptest_deep_alloc: %d chains of one allocation each (%d), figures exact\n",
			 deep_n, n);
	free(c);
}

static void t_nested_freed(int i)
{
	struct ap_chain c[1];

	(void)i;
	ksft_test_result(control("func " DEPOT_FUNC " -s") == 0 &&
			 control("func aptest_deep_alloc -s") == 0 &&
			 ap_write_file(DEEP, "free", 4) == 0 &&
			 ap_expect("aptest_deep_alloc", 0, 0) &&
			 ap_chains_of("aptest_deep_alloc", c, 1) == 0 && unchanged(),
			 "freed: 0/0, no chain left, flags as at the start\n");
}

/*
 * A full table: watched allocations at these call sites (one entry each)
 * until the table is full, then EXTRA more.
 */
static const char *const fill_sites[] = {
	"kmalloc_8", "kmalloc_100", "kmalloc_account", "cache_alloc", "kmalloc_1000",
};
#define EXTRA 100
#define FILL_CHUNK 256
static struct stats f_before;
static long fill_made[ARRAY_SIZE(fill_sites)];

/* Allocates n at the fill sites, in order, as far as each takes them. */
static int fill(long n)
{
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(fill_sites) && n > 0; k++) {
		for (;;) {
			long chunk = n < FILL_CHUNK ? n : FILL_CHUNK;
			int err = ap_test_alloc(fill_sites[k], chunk);

			if (err == -ENOSPC)
				break;
			if (err)
				return 0;
			fill_made[k] += chunk;
			n -= chunk;
			if (!n)
				return 1;
		}
	}
	return n == 0;
}

static void t_full(int i)
{
	long tracked, need;
	struct stats after;
	unsigned int k;
	int ok;

	(void)i;
	ok = read_stats(&f_before);
	need = f_before.max_entries - f_before.entries;
	for (k = 0; ok && k < ARRAY_SIZE(fill_sites); k++) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "func aptest_%s +s", fill_sites[k]);
		ok &= control(cmd) == 0;
	}
	ok = ok && need > 0 && fill(need + EXTRA) && read_stats(&after);
	/* Watched in the order made: the last EXTRA found the table full. */
	tracked = need;
	for (k = 0; ok && k < ARRAY_SIZE(fill_sites); k++) {
		char func[48];
		long long unit = -1, bytes = 0;
		unsigned long long ucalls = 0, calls = 0;
		long watched = fill_made[k] < tracked ? fill_made[k] : tracked;

		tracked -= watched;
		snprintf(func, sizeof(func), "aptest_%s", fill_sites[k]);
		if (ap_testsite_unit(fill_sites[k], &unit, &ucalls) ||
		    !ap_expect(func, fill_made[k] * unit, fill_made[k] * ucalls) ||
		    ap_chain_sum(func, &bytes, &calls) != (watched > 0) ||
		    bytes != watched * unit || calls != watched * ucalls) {
			ksft_print_msg("%s: %ld made, %ld watched; chains %lld/%llu\n", func,
				       fill_made[k], watched, bytes, calls);
			ok = 0;
		}
	}
	ksft_test_result(ok && after.entries == after.max_entries &&
			 after.full - f_before.full == EXTRA && after.nested == f_before.nested,
			 "table full (%ld/%ld): %d more counted exactly, reported as table full (%llu), without chains\n",
			 after.entries, after.max_entries, EXTRA, after.full - f_before.full);
}

static void t_full_freed(int i)
{
	struct stats after, again;
	long long bytes = -1;
	unsigned long long calls = 0;
	unsigned int k;
	int ok = 1;

	(void)i;
	for (k = 0; k < ARRAY_SIZE(fill_sites); k++) {
		char func[48];

		snprintf(func, sizeof(func), "aptest_%s", fill_sites[k]);
		ok &= ap_test_free(fill_sites[k]) == 0 && ap_expect(func, 0, 0) &&
		      ap_chain_sum(func, &bytes, &calls) == 0;
	}
	ok &= read_stats(&after) && ap_test_alloc("kmalloc_8", 1) == 0 && read_stats(&again) &&
	      ap_chain_sum("aptest_kmalloc_8", &bytes, &calls) == 1 && calls == 1 &&
	      ap_test_free("kmalloc_8") == 0;
	for (k = 0; k < ARRAY_SIZE(fill_sites); k++) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "func aptest_%s -s", fill_sites[k]);
		ok &= control(cmd) == 0;
	}
	ksft_test_result(ok && after.entries == f_before.entries &&
			 again.entries == f_before.entries + 1 && again.full == after.full &&
			 unchanged(),
			 "all freed: 0/0, the table back to %ld, a new allocation watched again\n",
			 f_before.entries);
}

/*
 * Ages: a batch of allocations made between t0 and t1 (CLOCK_MONOTONIC,
 * which the kernel's ages use too); a read of the ages file between r0
 * and r1 shows each of them in the bucket of an age in [r0 - t1, r1 - t0].
 */
#define A_SITE "kmalloc_1000"
#define A_FUNC "aptest_kmalloc_1000"
#define NSEC 1000000000LL
/* How far into a bucket a read is aimed: room for a slow host's read. */
#define MARGIN (NSEC / 4)
#define BUCKETS 33

struct batch {
	long long t0, t1;
	int n;
};

static struct batch a_old = { 0, 0, 3 }, a_new = { 0, 0, 2 };
static long long a_unit = -1;

/* The bucket of an age, as src/watch.rs: [0, 1) s, then [2^(b-1), 2^b) s. */
static int bucket_of(long long ns)
{
	long long s = ns / NSEC;
	int b = 0;

	while (s) {
		b++;
		s >>= 1;
	}
	return b < BUCKETS - 1 ? b : BUCKETS - 1;
}

/* The bucket of an ages line's label ("0-1s", "2-4s", ">=...s"). */
static int bucket_of_label(const char *label)
{
	long long lo, hi;

	if (sscanf(label, "%lld-%llds", &lo, &hi) != 2 || hi <= 0)
		return BUCKETS - 1;
	return bucket_of((hi - 1) * NSEC);
}

static int batch_alloc(struct batch *b)
{
	int ok;

	b->t0 = ap_now_ns();
	ok = ap_test_alloc(A_SITE, b->n) == 0;
	b->t1 = ap_now_ns();
	return ok;
}

/* Sleeps until `at` (CLOCK_MONOTONIC ns). */
static void sleep_until(long long at)
{
	struct timespec ts = { at / NSEC, at % NSEC };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The earliest time every batch's youngest allocation is `age` old. */
static long long when_aged(const struct batch *const *batches, const long long *ages, int nb)
{
	long long at = 0;
	int k;

	for (k = 0; k < nb; k++)
		if (batches[k]->t1 + ages[k] + MARGIN > at)
			at = batches[k]->t1 + ages[k] + MARGIN;
	return at;
}

/*
 * Reads the ages of A_FUNC and checks them against the live batches: each
 * bucket holds at least the allocations whose age interval lies in it
 * alone, at most those whose interval reaches it, all of them in all.
 */
static int ages_match(const struct batch *const *batches, int nb, const char *what)
{
	long long r0, r1, got[BUCKETS] = { 0 }, bytes;
	unsigned long long calls;
	int lo[4], hi[4], k, b, ok = 1, total = 0, sum = 0;
	char *buf, *line, *save = NULL, tail[96];

	r0 = ap_now_ns();
	buf = ap_slurp(AGES, NULL);
	r1 = ap_now_ns();
	if (!buf)
		return 0;
	snprintf(tail, sizeof(tail), " [allocprof_test] func:%s age:", A_FUNC);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(line, tail);

		if (line[0] == '#' || !at || sscanf(line, "%lld %llu", &bytes, &calls) != 2)
			continue;
		b = bucket_of_label(at + strlen(tail));
		if (bytes != (long long)calls * a_unit) {
			ksft_print_msg("%s: %lld bytes in %llu calls\n", at + strlen(tail), bytes, calls);
			ok = 0;
		}
		got[b] += calls;
		sum += calls;
	}
	free(buf);
	for (k = 0; k < nb; k++) {
		lo[k] = bucket_of(r0 - batches[k]->t1);
		hi[k] = bucket_of(r1 - batches[k]->t0);
		total += batches[k]->n;
		ksft_print_msg("%s: %d allocated %.3f-%.3f s before the read: buckets %d-%d\n",
			       what, batches[k]->n, (r0 - batches[k]->t1) / (double)NSEC,
			       (r1 - batches[k]->t0) / (double)NSEC, lo[k], hi[k]);
	}
	for (b = 0; b < BUCKETS; b++) {
		int least = 0, most = 0;

		for (k = 0; k < nb; k++) {
			least += lo[k] == b && hi[k] == b ? batches[k]->n : 0;
			most += lo[k] <= b && b <= hi[k] ? batches[k]->n : 0;
		}
		if (got[b] < least || got[b] > most) {
			ksft_print_msg("%s: bucket %d holds %lld, expected %d to %d\n", what, b,
				       got[b], least, most);
			ok = 0;
		}
	}
	return ok && sum == total;
}

static void t_a_flag(int i)
{
	unsigned long long calls;

	(void)i;
	if (ap_testsite_unit(A_SITE, &a_unit, &calls))
		a_unit = -1;
	ksft_test_result(control("func " A_FUNC " +a") == 0 && ap_flags_are(A_FUNC, "pa"),
			 "+a: flags pa\n");
}

static void t_age_new(int i)
{
	const struct batch *b[] = { &a_old };

	(void)i;
	ksft_test_result(batch_alloc(&a_old) && ages_match(b, 1, "new") &&
			 bucket_of(ap_now_ns() - a_old.t0) == 0,
			 "%d new allocations: age 0-1s\n", a_old.n);
}

static void t_age_2s(int i)
{
	const struct batch *b[] = { &a_old, &a_new };
	const long long ages[] = { 2 * NSEC };

	(void)i;
	sleep_until(when_aged(b, ages, 1));
	ksft_test_result(batch_alloc(&a_new) && ages_match(b, 2, "2 s later"),
			 "2 s later: %d in 2-4s, %d new in 0-1s\n", a_old.n, a_new.n);
}

static void t_age_8s(int i)
{
	const struct batch *b[] = { &a_old, &a_new };
	const long long ages[] = { 8 * NSEC, 4 * NSEC };

	(void)i;
	sleep_until(when_aged(b, ages, 2));
	ksft_test_result(ages_match(b, 2, "8 s later"),
			 "8 s after the first: %d in 8-16s, %d in 4-8s\n", a_old.n, a_new.n);
}

static void t_age_free_new(int i)
{
	const struct batch *b[] = { &a_old };

	(void)i;
	ksft_test_result(ap_test_free_n(A_SITE, a_new.n) == 0 && ages_match(b, 1, "freed"),
			 "the %d newest freed: only the %d old ones left\n", a_new.n, a_old.n);
}

static void t_age_free_all(int i)
{
	(void)i;
	ksft_test_result(ap_test_free(A_SITE) == 0 && ages_match(NULL, 0, "all freed") &&
			 ap_expect(A_FUNC, 0, 0) && control("func " A_FUNC " -a") == 0,
			 "all freed: no ages, 0/0\n");
}

/*
 * n: the pages of a call site by node.  pages_node's entry i is a page on
 * node i modulo the online nodes, so its figures by node are known.
 */
#define N_SITE "pages_node"
#define N_FUNC "aptest_pages_node"
#define N_ALLOC 5
#define N_FREE 2
/* A slab call site: its objects have no node for allocprof. */
#define N_OBJ_SITE "kmalloc_100"
#define N_OBJ_FUNC "aptest_kmalloc_100"
static int n_nodes;
static long long n_unit = -1;

/* The online nodes (/sys/devices/system/node/online: "0-1", "0"). */
static int online_nodes(void)
{
	char buf[64];
	int lo, hi, n = 0;
	char *p = buf;

	if (ap_read_file("/sys/devices/system/node/online", buf, sizeof(buf)) <= 0)
		return 0;
	while (*p && *p != '\n') {
		int used;

		if (sscanf(p, "%d-%d%n", &lo, &hi, &used) == 2)
			n += hi - lo + 1;
		else if (sscanf(p, "%d%n", &lo, &used) == 1)
			n++;
		else
			return 0;
		p += used;
		p += *p == ',';
	}
	return n;
}

/*
 * The end of N_FUNC's /proc/allocinfo line (format 2.0) after its name,
 * into tail; 0, or -1 if there is no such line or more than one.
 */
static int allocinfo_tail(char *tail, size_t size)
{
	const char *name = " [allocprof_test] func:" N_FUNC;
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	const char *at;
	int found = 0;

	while (ap_lines_next(&w, &l)) {
		for (at = strstr(l.text, name); at; at = strstr(at + 1, name)) {
			snprintf(tail, size, "%s", at + strlen(name));
			found++;
		}
	}
	return !ap_lines_end(&w) && found == 1 ? 0 : -1;
}

/*
 * Whether the nodes report shows N_FUNC with its `live` entries, a page
 * each, entry i on node i modulo n_nodes, and its /proc/allocinfo line
 * ends in the same figures as " node:N=BYTES/CALLS" keys (else says what
 * they show).
 */
static int nodes_are(int live)
{
	long long bytes[AP_MAX_NODES], calls[AP_MAX_NODES];
	char *buf = ap_slurp(AP_NODES, NULL), keys[256] = "", tail[256] = "";
	int ok = buf && ap_node_figures(buf, " [allocprof_test] func:" N_FUNC, bytes, calls) == 0;
	size_t len = 0;

	for (int k = 0; ok && k < AP_MAX_NODES; k++) {
		long long want = k < n_nodes && k < live ? (live - 1 - k) / n_nodes + 1 : 0;

		if (calls[k] != want || bytes[k] != want * n_unit) {
			ksft_print_msg("node %d: %lld bytes %lld calls, expected %lld pages\n", k,
				       bytes[k], calls[k], want);
			ok = 0;
		}
		if (want)
			len += snprintf(keys + len, sizeof(keys) - len, " node:%d=%lld/%lld", k,
					want * n_unit, want);
	}
	free(buf);
	snprintf(keys + len, sizeof(keys) - len, " ");
	if (ok && (allocinfo_tail(tail, sizeof(tail)) || strcmp(tail, keys))) {
		ksft_print_msg("/proc/allocinfo: '%s' after the name, expected '%s'\n", tail, keys);
		ok = 0;
	}
	return ok;
}

static void t_n_flag(int i)
{
	unsigned long long calls;

	(void)i;
	n_nodes = online_nodes();
	if (ap_testsite_unit(N_SITE, &n_unit, &calls) || calls != 1)
		n_unit = -1;
	ksft_test_result(n_nodes >= 2 && n_unit > 0 &&
			 control("func " N_FUNC " +n") == 0 && ap_flags_are(N_FUNC, "pn"),
			 "+n: flags pn; %d nodes online\n", n_nodes);
}

static void t_n_split(int i)
{
	(void)i;
	ksft_test_result(ap_test_alloc(N_SITE, N_ALLOC) == 0 && nodes_are(N_ALLOC) &&
			 ap_expect(N_FUNC, N_ALLOC * n_unit, N_ALLOC),
			 "%d pages on nodes 0, 1, 0, ...: each node's pages and calls exact, in the nodes file and /proc/allocinfo\n",
			 N_ALLOC);
}

static void t_n_free(int i)
{
	(void)i;
	ksft_test_result(ap_test_free_n(N_SITE, N_FREE) == 0 && nodes_are(N_ALLOC - N_FREE) &&
			 ap_expect(N_FUNC, (N_ALLOC - N_FREE) * n_unit, N_ALLOC - N_FREE),
			 "the %d newest freed: taken from their nodes\n", N_FREE);
}

static void t_n_free_all(int i)
{
	(void)i;
	ksft_test_result(ap_test_free(N_SITE) == 0 && nodes_are(0) && ap_expect(N_FUNC, 0, 0) &&
			 control("func " N_FUNC " -n") == 0 && ap_flags_are(N_FUNC, "p"),
			 "all freed: no node figures, 0/0; -n: flags p\n");
}

/* Objects have no node for allocprof: +n alone watches none of them. */
static void t_n_objects(int i)
{
	struct stats s0, s1;
	long long unit = -1, bytes[AP_MAX_NODES], calls[AP_MAX_NODES];
	unsigned long long ucalls;
	char *buf = NULL;
	int ok, k;

	(void)i;
	ok = ap_testsite_unit(N_OBJ_SITE, &unit, &ucalls) == 0 &&
	     control("func " N_OBJ_FUNC " +n") == 0 && read_stats(&s0) &&
	     ap_test_alloc(N_OBJ_SITE, 3) == 0 && read_stats(&s1) &&
	     (buf = ap_slurp(AP_NODES, NULL)) != NULL &&
	     ap_node_figures(buf, " [allocprof_test] func:" N_OBJ_FUNC, bytes, calls) == 0 &&
	     ap_expect(N_OBJ_FUNC, 3 * unit, 3 * ucalls);
	for (k = 0; ok && k < AP_MAX_NODES; k++)
		ok = bytes[k] == 0 && calls[k] == 0;
	ok = ok && s1.entries == s0.entries && s1.full == s0.full;
	ok &= ap_test_free(N_OBJ_SITE) == 0 && ap_expect(N_OBJ_FUNC, 0, 0) &&
	      control("func " N_OBJ_FUNC " -n") == 0;
	free(buf);
	ksft_test_result(ok, "+n on a slab call site: counted, no node figures, nothing tracked\n");
}

static void t_flags_back(int i)
{
	(void)i;
	ksft_test_result(unchanged(), "every flag back as it was\n");
}

/* vm.mem_profiling=never: the control is gone until a reload. */
static void t_never(int i)
{
	int err, named;
	char *stacks;

	(void)i;
	ap_klog_clear();
	err = ap_write_file(AP_SYSCTL, "never", 5) ? EIO : control("func aptest_kmalloc_8 +s");
	named = ap_logged("control: profiling is off for good (mem_profiling=never)");
	stacks = ap_slurp(STACKS, NULL);
	ksft_test_result(err == ENODEV && named && count_lines(CONTROL, NULL) == 0 && stacks &&
			 stacks[0] == '#' && strchr(stacks, '\n') == stacks + strlen(stacks) - 1,
			 "never: a write fails with ENODEV (%s), the log says why, control and stacks empty\n",
			 strerror(err));
	free(stacks);
}

static void t_reload(int i)
{
	(void)i;
	ksft_test_result(ap_start("allocinfo_format=2.0") == 0 && unchanged() &&
			 control("func aptest_kmalloc_8 +s") == 0 &&
			 ap_flags_are("aptest_kmalloc_8", "ps") &&
			 ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "a reload: every flag p again, commands run; unloaded\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_modes),
	AP_STEP(t_lists_all),
	AP_STEP(t_module_vmlinux),
	AP_STEP(t_nobody),
	AP_STEP_EACH(t_bad, &nr_bad),
	AP_STEP(t_too_big),
	AP_STEP(t_comments),
	AP_STEP(t_matches_nothing),
	AP_STEP(t_max_commands),
	AP_STEP(t_too_many_commands),
	AP_STEP(t_max_words),
	AP_STEP(t_file_func_line),
	AP_STEP(t_two_commands),
	AP_STEP(t_back_to_start),
	AP_STEP(t_line_inclusive),
	AP_STEP(t_p_off),
	AP_STEP(t_p_not_counted),
	AP_STEP(t_p_free_nothing),
	AP_STEP(t_p_on),
	AP_STEP(t_p_counted),
	AP_STEP(t_p_all_freed),
	AP_STEP(t_s_helper),
	AP_STEP(t_s_allocinfo),
	AP_STEP(t_s_two_chains),
	AP_STEP(t_s_own_caller),
	AP_STEP(t_s_callers),
	AP_STEP(t_s_pid),
	AP_STEP(t_s_minus),
	AP_STEP(t_s_free),
	AP_STEP(t_all_sites),
	AP_STEP(t_nothing_untracked),
	AP_STEP(t_race_watch),
	AP_STEP(t_race_run),
	AP_STEP(t_race_other),
	AP_STEP(t_nested),
	AP_STEP(t_nested_exact),
	AP_STEP(t_nested_freed),
	AP_STEP(t_full),
	AP_STEP(t_full_freed),
	AP_STEP(t_a_flag),
	AP_STEP(t_age_new),
	AP_STEP(t_age_2s),
	AP_STEP(t_age_8s),
	AP_STEP(t_age_free_new),
	AP_STEP(t_age_free_all),
	AP_STEP(t_n_flag),
	AP_STEP(t_n_split),
	AP_STEP(t_n_free),
	AP_STEP(t_n_free_all),
	AP_STEP(t_n_objects),
	AP_STEP(t_flags_back),
	AP_STEP(t_never),
	AP_STEP(t_reload),
};

int main(int argc, char **argv)
{
	(void)argc;
	ksft_print_header();
	/* Format 2.0, the test module loaded after allocprof: its sites accurate. */
	if (ap_start("allocinfo_format=2.0"))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	snprintf(comm, sizeof(comm), "%s", basename(argv[0]));
	before = ap_slurp(CONTROL, NULL);
	AP_RUN_STEPS(steps);
	close(open(RAN_MARK, O_WRONLY | O_CREAT, 0600));
	free(before);
	ksft_finished();
}
