// SPDX-License-Identifier: GPL-2.0
/*
 * allocinfo_ioctl_test: the ioctl() queries of /proc/allocinfo, built only
 * against the uapi header <linux/alloc_tag.h> (upstream's interface, as
 * patch 0011 adds it).
 *
 * - The walk (GET_AT 0, then GET_NEXT until ENOENT) gives the text file's
 *   records line for line: the same call sites in the same order, and the
 *   same figures for the test module's sites, whose memory is known.
 * - Each filter alone and combined, with the test module's sites as the
 *   oracle: module, function, file, line, size range, accuracy, built-in.
 * - upstream's own test cases: file mm/memory.c and function dup_mm against
 *   the text file filtered the same way, do_init_module by its exact size,
 *   and a line number.
 * - The content id changes when a module loads and when it unloads.
 * - Bad input gets the interface's error and changes nothing: unknown mask
 *   bits and min > max (EINVAL), a position past the end (ENOENT), a bad
 *   pointer (EFAULT), an unknown command or size (ENOTTY); an unterminated
 *   name matches nothing.
 * - Past the last record, at each position up to the call-site ids (the
 *   Rust tag pool's free and gone tags among them): ENOENT, and the next
 *   GET_NEXT goes on from the last successful GET_AT.
 * - A copy-out that fails (EFAULT into a read-only page) moves neither the
 *   position nor the filter: the next GET_NEXT returns the record a walk
 *   without the fault returns there.
 *
 * Our patched kernels have the interface: an ENOTTY from it fails the test
 * (it does not run on upstream's 6.12, which has none).
 */
#include <linux/alloc_tag.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "allocprof_lib.h"

#define MAX_RECS 4096
#define NAME ALLOCINFO_STR_SIZE

struct rec {
	char module[NAME], function[NAME], file[NAME];
	unsigned long long line, bytes, calls;
	int accurate;
};

static struct rec text[MAX_RECS], got[MAX_RECS];
static int fd;

/* The last 63 bytes of a name, as the interface keeps and compares them. */
static void suffix(char *dst, const char *src)
{
	size_t l = strlen(src);

	if (l >= NAME)
		src += l - (NAME - 1);
	memcpy(dst, src, strlen(src) + 1);
}

/* The text file's records, in order; -1 if it cannot be read. */
static int read_text(struct rec *r, int max)
{
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	struct ap_info_site site;
	int n = 0;

	while (ap_info_next(&w, &l)) {
		int inacc = ap_cut_inaccurate(l.text);

		if (ap_info_site(&l, &site))
			continue;
		if (n < max) {
			suffix(r[n].module, site.module);
			suffix(r[n].function, site.func);
			suffix(r[n].file, site.file);
			r[n].line = site.line;
			r[n].bytes = l.bytes;
			r[n].calls = l.calls;
			r[n].accurate = !inacc;
		}
		n++;
	}
	return ap_lines_end(&w) ? -1 : n;
}

static void from_data(struct rec *r, const struct allocinfo_tag_data *d)
{
	memcpy(r->module, d->tag.modname, NAME);
	memcpy(r->function, d->tag.function, NAME);
	memcpy(r->file, d->tag.filename, NAME);
	r->line = d->tag.lineno;
	r->bytes = d->counter.bytes;
	r->calls = d->counter.calls;
	r->accurate = d->counter.accurate;
}

static unsigned long long content_id(void)
{
	struct allocinfo_content_id id = { 0 };

	if (ioctl(fd, ALLOCINFO_IOC_CONTENT_ID, &id))
		return ~0ULL;
	return id.id;
}

/*
 * The records matching filter f from position pos on, with GET_AT and
 * GET_NEXT, retried while the content id changes; -1 on an error other
 * than the end (ENOENT), -2 if the content never stayed the same.
 */
static int walk(const struct allocinfo_filter *f, unsigned long long pos, struct rec *r, int max)
{
	int tries;

	for (tries = 0; tries < 10; tries++) {
		unsigned long long id = content_id();
		struct allocinfo_get_at at;
		struct allocinfo_tag_data d;
		int n = 0;

		memset(&at, 0, sizeof(at));
		at.pos = pos;
		if (f)
			at.filter = *f;
		if (ioctl(fd, ALLOCINFO_IOC_GET_AT, &at)) {
			if (errno != ENOENT)
				return -1;
		} else {
			from_data(&r[n++], &at.data);
			while (n < max && !ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d))
				from_data(&r[n++], &d);
			if (n < max && errno != ENOENT)
				return -1;
		}
		if (content_id() == id)
			return n;
	}
	return -2;
}

static int same_site(const struct rec *a, const struct rec *b)
{
	return !strcmp(a->module, b->module) && !strcmp(a->function, b->function) &&
	       !strcmp(a->file, b->file) && a->line == b->line;
}

/* got[0..n) are the text records that pass keep(), in order. */
static int same_as_text(int n, int (*keep)(const struct rec *, const void *), const void *arg)
{
	int t = read_text(text, MAX_RECS), i, j = 0;

	for (i = 0; i < t && i < MAX_RECS; i++) {
		if (!keep(&text[i], arg))
			continue;
		if (j >= n || !same_site(&text[i], &got[j])) {
			ksft_print_msg("record %d: text %s %s:%llu, ioctl %s\n", j, text[i].function,
				       text[i].file, text[i].line, j < n ? got[j].function : "(none)");
			return 0;
		}
		j++;
	}
	if (j != n)
		ksft_print_msg("%d records by ioctl, %d in the text file\n", n, j);
	return j == n;
}

static int keep_all(const struct rec *r, const void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

static int keep_file(const struct rec *r, const void *arg)
{
	return !strcmp(r->file, arg);
}

static int keep_function(const struct rec *r, const void *arg)
{
	return !strcmp(r->function, arg);
}

static int keep_module(const struct rec *r, const void *arg)
{
	return !strcmp(r->module, arg);
}

static int keep_builtin(const struct rec *r, const void *arg)
{
	(void)arg;
	return !r->module[0];
}

static struct allocinfo_filter by(unsigned long long mask)
{
	struct allocinfo_filter f;

	memset(&f, 0, sizeof(f));
	f.mask = mask;
	return f;
}

/* The test module's site func, in the text file, into r. */
static int text_site(const char *func, struct rec *r)
{
	int t = read_text(text, MAX_RECS), i;

	for (i = 0; i < t && i < MAX_RECS; i++) {
		if (!strcmp(text[i].function, func) && !strcmp(text[i].module, "allocprof_test")) {
			*r = text[i];
			return 0;
		}
	}
	return -1;
}

static int err_is(int rc, int e)
{
	if (rc == -1 && errno == e)
		return 1;
	ksft_print_msg("returned %d, errno %d (%s); expected errno %d\n", rc, rc ? errno : 0,
		       rc ? strerror(errno) : "", e);
	return 0;
}

static struct ap_testsite sites[32];
static struct rec k100;
static unsigned long long unit, unit3, calls, calls3;
static int nsites, nmod;

/* Known figures at two sites. */
static void t_content_id(int i)
{
	int ok = ap_test_alloc("kmalloc_100", 3) == 0 && ap_test_alloc("alloc_pages_3", 2) == 0;

	(void)i;
	ksft_test_result(ok && content_id() != ~0ULL, "content id; 3 kmalloc(100), 2 order-3 pages\n");
}

static void t_walk(int i)
{
	int n = walk(NULL, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n > 100 && same_as_text(n, keep_all, NULL),
			 "the walk gives the text file's %d records line for line\n", n);
}

/* Every test site is in the walk once, with its figures: the two known, the rest 0. */
static void t_walk_figures(int j)
{
	int n = walk(NULL, 0, got, MAX_RECS), i, ok = n > 0, seen = 0, k100s = 0, p3s = 0;

	(void)j;
	for (i = 0; i < n; i++) {
		if (strcmp(got[i].module, "allocprof_test"))
			continue;
		seen++;
		if (!strcmp(got[i].function, "aptest_kmalloc_100")) {
			k100s++;
			ok &= got[i].bytes == 3 * unit && got[i].calls == 3 * calls && got[i].accurate;
		} else if (!strcmp(got[i].function, "aptest_alloc_pages_3")) {
			p3s++;
			ok &= got[i].bytes == 2 * unit3 && got[i].calls == 2 * calls3;
		} else {
			ok &= got[i].bytes == 0 && got[i].calls == 0;
		}
	}
	/* The sites file lists the sites the test allocates at; the module has more. */
	ksft_test_result(ok && k100s == 1 && p3s == 1 && seen >= nsites,
			 "the test module's figures are exact in the walk (%d of its call sites)\n", seen);
}

/* Each filter alone. */
static void t_module(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME);
	int n;

	(void)i;
	strcpy(f.fields.modname, "allocprof_test");
	n = walk(&f, 0, got, MAX_RECS);
	nmod = n;
	ksft_test_result(n >= nsites && same_as_text(n, keep_module, "allocprof_test"),
			 "module allocprof_test: its %d call sites as in the text file\n", n);
}

static void t_function(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FUNCTION);
	int n;

	(void)i;
	strcpy(f.fields.function, "aptest_kmalloc_100");
	n = walk(&f, 0, got, MAX_RECS);
	ksft_test_result(n == 1 && got[0].bytes == 3 * unit && got[0].calls == 3 * calls &&
			 !strcmp(got[0].module, "allocprof_test"),
			 "function aptest_kmalloc_100: one record, %llu bytes %llu calls\n",
			 3 * unit, 3 * calls);
}

static void t_file(int i)
{
	int ok = text_site("aptest_kmalloc_100", &k100) == 0, n;
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FILENAME);

	(void)i;
	strcpy(f.fields.filename, k100.file);
	n = walk(&f, 0, got, MAX_RECS);
	ksft_test_result(ok && n >= nsites && same_as_text(n, keep_file, k100.file),
			 "file of the test module (its last 63 characters): its %d sites\n", n);
}

static void t_line(int j)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_LINENO);
	int n, i, ok;

	(void)j;
	f.fields.lineno = k100.line;
	n = walk(&f, 0, got, MAX_RECS);
	ok = n >= 1;
	for (i = 0; i < n; i++)
		ok &= got[i].line == k100.line;
	for (i = 0; i < n && !same_site(&got[i], &k100); i++)
		;
	ksft_test_result(ok && i < n, "line %llu: %d records, all on it, one the test site\n",
			 k100.line, n);
}

static struct allocinfo_filter module_and_size(unsigned long long min, unsigned long long max)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME | ALLOCINFO_FILTER_MASK_MIN_SIZE |
				       ALLOCINFO_FILTER_MASK_MAX_SIZE);

	strcpy(f.fields.modname, "allocprof_test");
	f.min_size = min;
	f.max_size = max;
	return f;
}

static void t_size_exact(int i)
{
	struct allocinfo_filter f = module_and_size(3 * unit, 3 * unit);
	int n = walk(&f, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n == 1 && !strcmp(got[0].function, "aptest_kmalloc_100"),
			 "module and size range [%llu, %llu]: aptest_kmalloc_100 alone\n", 3 * unit,
			 3 * unit);
}

static void t_size_some(int i)
{
	struct allocinfo_filter f = module_and_size(1, ~0ULL);
	int n = walk(&f, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n == 2, "module and at least 1 byte: the two sites with memory (%d)\n", n);
}

static void t_min_size(int j)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MIN_SIZE);
	int n, i, ok;

	(void)j;
	f.min_size = 2 * unit3;
	n = walk(&f, 0, got, MAX_RECS);
	ok = n >= 1;
	for (i = 0; i < n; i++)
		ok &= got[i].bytes >= 2 * unit3;
	ksft_test_result(ok, "min size %llu alone: %d records, none smaller\n", 2 * unit3, n);
}

static struct allocinfo_filter module_accuracy(int inaccurate)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME |
				       ALLOCINFO_FILTER_MASK_INACCURATE);

	strcpy(f.fields.modname, "allocprof_test");
	f.inaccurate = inaccurate;
	return f;
}

static void t_module_inaccurate(int i)
{
	struct allocinfo_filter f = module_accuracy(1);
	int n = walk(&f, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n == 0, "module, inaccurate: none (loaded after allocprof)\n");
}

static void t_module_accurate(int i)
{
	struct allocinfo_filter f = module_accuracy(0);
	int n = walk(&f, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n == nmod, "module, accurate: all %d\n", nmod);
}

static void t_inaccurate(int j)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_INACCURATE);
	int n, i, ok;

	(void)j;
	f.inaccurate = 1;
	n = walk(&f, 0, got, MAX_RECS);
	ok = n > 100;
	for (i = 0; i < n; i++)
		ok &= !got[i].accurate && strcmp(got[i].module, "allocprof_test");
	ksft_test_result(ok, "inaccurate alone: %d records (vmlinux, present at load), all flagged\n", n);
}

static void t_builtin(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME);
	int n = walk(&f, 0, got, MAX_RECS);

	(void)i;
	ksft_test_result(n > 100 && same_as_text(n, keep_builtin, NULL),
			 "empty module name: vmlinux's %d call sites only\n", n);
}

/* Combined, and a position among the matches. */
static void t_combined(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FUNCTION | ALLOCINFO_FILTER_MASK_FILENAME |
				       ALLOCINFO_FILTER_MASK_LINENO | ALLOCINFO_FILTER_MASK_MODNAME);
	int n;

	(void)i;
	strcpy(f.fields.function, k100.function);
	strcpy(f.fields.filename, k100.file);
	strcpy(f.fields.modname, k100.module);
	f.fields.lineno = k100.line;
	n = walk(&f, 0, got, MAX_RECS);
	ksft_test_result(n == 1 && same_site(&got[0], &k100), "module, function, file and line: one\n");
}

static void t_position(int i)
{
	static struct rec second[MAX_RECS];
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME);
	int n, m;

	(void)i;
	strcpy(f.fields.modname, "allocprof_test");
	n = walk(&f, 0, got, MAX_RECS);
	m = walk(&f, 1, second, MAX_RECS);
	ksft_test_result(n >= 2 && m == n - 1 && same_site(&second[0], &got[1]),
			 "GET_AT position 1 among the matches is the second match\n");
}

/* upstream's test cases. */
static void t_upstream_file(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FILENAME);
	int n;

	(void)i;
	strcpy(f.fields.filename, "mm/memory.c");
	n = walk(&f, 0, got, MAX_RECS);
	ksft_test_result(n > 0 && same_as_text(n, keep_file, "mm/memory.c"),
			 "upstream's case: file mm/memory.c, %d records as in the text file\n", n);
}

static void t_upstream_function(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FUNCTION);
	int n;

	(void)i;
	strcpy(f.fields.function, "dup_mm");
	n = walk(&f, 0, got, MAX_RECS);
	ksft_test_result(n > 0 && same_as_text(n, keep_function, "dup_mm"),
			 "upstream's case: function dup_mm, %d records as in the text file\n", n);
}

static void t_upstream_size(int j)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MIN_SIZE | ALLOCINFO_FILTER_MASK_MAX_SIZE);
	struct rec dim = { 0 };
	int t = read_text(text, MAX_RECS), i, n, ok;

	(void)j;
	for (i = 0; i < t && strcmp(text[i].function, "do_init_module"); i++)
		;
	ok = i < t;
	if (ok)
		dim = text[i];
	f.min_size = f.max_size = dim.bytes;
	n = walk(&f, 0, got, MAX_RECS);
	for (i = 0; i < n && strcmp(got[i].function, "do_init_module"); i++)
		;
	ksft_test_result(ok && i < n && got[i].bytes == dim.bytes,
			 "upstream's case: do_init_module found by its size %llu\n", dim.bytes);
}

static void t_upstream_line(int j)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_LINENO);
	int t = read_text(text, MAX_RECS), i, n;

	(void)j;
	f.fields.lineno = t > 0 ? text[0].line : 0;
	n = walk(&f, 0, got, MAX_RECS);
	for (i = 0; i < n && !same_site(&got[i], &text[0]); i++)
		;
	ksft_test_result(t > 0 && i < n, "upstream's case: line of the first record finds it\n");
}

/* The content id across a module load and unload. */
static void t_id_load(int i)
{
	unsigned long long id0, id1, id2;
	int ok;

	(void)i;
	id0 = content_id();
	ok = ap_modprobe("allocprof_test2", NULL) == 0;
	id1 = content_id();
	ok &= ap_rmmod("allocprof_test2") == 0;
	id2 = content_id();
	ap_write_file(AP_TESTDIR "/adopted", "free", 4);
	ksft_test_result(ok && id0 != id1 && id1 != id2 && id0 != id2,
			 "content id changes at a module load and at its unload\n");
}

static void t_id_stays(int i)
{
	unsigned long long id = content_id();

	(void)i;
	ksft_test_result(id != ~0ULL && content_id() == id, "content id stays otherwise\n");
}

/* Bad input: the error, and nothing changed. */
static void t_einval(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_MODNAME);
	struct allocinfo_get_at at;
	int ok;

	(void)i;
	strcpy(f.fields.modname, "allocprof_test");
	memset(&at, 0, sizeof(at));
	at.filter = f;
	ok = ioctl(fd, ALLOCINFO_IOC_GET_AT, &at) == 0 && !strcmp(at.data.tag.modname, "allocprof_test");
	memset(&at, 0, sizeof(at));
	at.filter.mask = 1ULL << (__ALLOCINFO_FILTER_LAST + 1);
	ok &= err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, &at), EINVAL);
	memset(&at, 0, sizeof(at));
	at.filter.mask = ALLOCINFO_FILTER_MASK_MIN_SIZE | ALLOCINFO_FILTER_MASK_MAX_SIZE;
	at.filter.min_size = 2;
	at.filter.max_size = 1;
	ok &= err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, &at), EINVAL);
	ksft_test_result(ok, "unknown mask bit, min > max: EINVAL\n");
}

static void t_enoent(int i)
{
	struct allocinfo_get_at at;

	(void)i;
	memset(&at, 0, sizeof(at));
	at.pos = 1 << 20;
	ksft_test_result(err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, &at), ENOENT),
			 "a position past the end: ENOENT\n");
}

/* The filter and position of t_einval()'s first GET_AT still hold. */
static void t_next_after_errors(int i)
{
	struct allocinfo_tag_data d;
	int ok = ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) == 0 && !strcmp(d.tag.modname, "allocprof_test");

	(void)i;
	ksft_test_result(ok, "after them GET_NEXT goes on with the earlier filter\n");
}

static void t_efault(int i)
{
	(void)i;
	ksft_test_result(err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, NULL), EFAULT) &&
			 err_is(ioctl(fd, ALLOCINFO_IOC_GET_NEXT, (void *)8), EFAULT),
			 "bad pointers: EFAULT\n");
}

static void t_enotty(int i)
{
	struct allocinfo_tag_data d;

	(void)i;
	ksft_test_result(err_is(ioctl(fd, _IOR(ALLOCINFO_IOC_BASE, 9, struct allocinfo_tag_data), &d),
				ENOTTY) &&
			 err_is(ioctl(fd, _IOR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_NEXT, __u64), &d),
				ENOTTY),
			 "unknown command, wrong size: ENOTTY\n");
}

static void t_unterminated(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FUNCTION);
	struct allocinfo_get_at at;

	(void)i;
	memset(f.fields.function, 'a', NAME);
	memset(&at, 0, sizeof(at));
	at.filter = f;
	ksft_test_result(err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, &at), ENOENT),
			 "an unterminated name matches nothing: ENOENT\n");
}

/* At the end, GET_NEXT says ENOENT once, then starts over. */
static void t_next_wraps(int i)
{
	struct allocinfo_filter f = by(ALLOCINFO_FILTER_MASK_FUNCTION);
	struct allocinfo_tag_data d;
	struct allocinfo_get_at at;
	int ok;

	(void)i;
	strcpy(f.fields.function, "aptest_kmalloc_100");
	memset(&at, 0, sizeof(at));
	at.filter = f;
	ok = ioctl(fd, ALLOCINFO_IOC_GET_AT, &at) == 0;
	ok &= err_is(ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d), ENOENT);
	ok &= ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) == 0 &&
	      !strcmp(d.tag.function, "aptest_kmalloc_100");
	ksft_test_result(ok, "GET_NEXT: ENOENT at the end, then the first match again\n");
}

/* The test module's sites filter: GET_AT 0 with it into at (a valid or read-only buffer). */
static int get_at_module(struct allocinfo_get_at *at)
{
	struct allocinfo_get_at b;

	memset(&b, 0, sizeof(b));
	b.filter = by(ALLOCINFO_FILTER_MASK_MODNAME);
	strcpy(b.filter.fields.modname, "allocprof_test");
	if (at)
		*at = b;
	return ioctl(fd, ALLOCINFO_IOC_GET_AT, at ? at : &b);
}

#define RUST_MODULE "allocprof_rust_test"
/* Positions tried one by one past the last record: more than the kernel's pool of Rust tags. */
#define PAST_EACH 2048
/* Then one in this many, to the end of the 16-bit call-site ids. */
#define PAST_STRIDE 241
#define PAST_LAST 65536

/*
 * Past the last record but not past the call-site ids: the kernel's pool of
 * Rust call sites has ids whose tags are no record, its free tags and the
 * lines of a Rust module gone (allocprof_rust_test, loaded and unloaded
 * here).  GET_AT at each such position is ENOENT and moves nothing: the
 * next GET_NEXT returns what it would have after the last good GET_AT (the
 * test module's second record, by its filter).  Retried while the content
 * id changes, as the walk is.
 */
static void t_past_records(int i)
{
	struct allocinfo_tag_data d, want;
	struct allocinfo_get_at at;
	unsigned long long id, pos, first_bad = 0, last_bad = 0, tried = 0, bad = 0;
	int n = -1, tries, ok, why = 0;

	(void)i;
	ok = ap_modprobe(RUST_MODULE, NULL) == 0 && ap_rmmod(RUST_MODULE) == 0;
	for (tries = 0; ok && tries < 3; tries++) {
		id = content_id();
		n = walk(NULL, 0, got, MAX_RECS);
		ok = n > 0 && get_at_module(NULL) == 0 &&
		     ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &want) == 0;
		tried = bad = first_bad = last_bad = 0;
		for (pos = n; ok && pos <= PAST_LAST;
		     pos += pos < (unsigned long long)n + PAST_EACH ? 1 : PAST_STRIDE) {
			int e, next;

			ok = get_at_module(NULL) == 0;
			memset(&at, 0, sizeof(at));
			at.pos = pos;
			e = ioctl(fd, ALLOCINFO_IOC_GET_AT, &at) ? errno : 0;
			memset(&d, 0, sizeof(d));
			next = ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) ? errno : 0;
			tried++;
			if (e == ENOENT && !next && !memcmp(&d, &want, sizeof(d)))
				continue;
			if (!bad++) {
				first_bad = pos;
				ksft_print_msg("GET_AT %llu (%d records): %s; then GET_NEXT: %s%s\n",
					       pos, n, e ? strerror(e) : "a record",
					       next ? strerror(next) : d.tag.function,
					       next ? "" : (memcmp(&d, &want, sizeof(d)) ?
							    " (not the next record)" : ""));
			}
			last_bad = pos;
		}
		if (content_id() == id)
			break;
		why = 1;
	}
	if (bad)
		ksft_print_msg("%llu of %llu positions failed, from %llu to %llu\n", bad, tried,
			       first_bad, last_bad);
	ksft_test_result(ok && !bad && tries < 3,
			 "GET_AT at %llu positions from the record count (%d) to %d: ENOENT, the next GET_NEXT goes on from the earlier GET_AT%s\n",
			 tried, n, PAST_LAST, why ? " (retried: the content changed)" : "");
}

/*
 * A copy-out that fails moves nothing: GET_NEXT into a read-only page
 * (EFAULT), then GET_NEXT into a good buffer returns the record it would
 * have returned; a GET_AT with another filter whose answer cannot be
 * written (EFAULT) leaves the earlier filter and position.  The expected
 * records come from a walk of the same filter without a fault.
 */
static void t_efault_keeps_cursor(int i)
{
	struct allocinfo_tag_data d, want[3];
	struct allocinfo_get_at at, *ro_at;
	long page = sysconf(_SC_PAGESIZE);
	void *ro = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = ro != MAP_FAILED, n;

	(void)i;
	/* The walk without a fault: the first three of the module's records. */
	ok = ok && get_at_module(&at) == 0;
	want[0] = at.data;
	for (n = 1; ok && n < 3; n++)
		ok = ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &want[n]) == 0;
	if (!ok) {
		ksft_test_result_fail("GET_NEXT after EFAULT: the walk without a fault failed\n");
		return;
	}
	/* The same filter's answer, to be written into the read-only page. */
	ro_at = ro;
	memset(ro_at, 0, sizeof(*ro_at));
	ro_at->filter = by(ALLOCINFO_FILTER_MASK_FUNCTION);
	strcpy(ro_at->filter.fields.function, "aptest_kmalloc_100");
	ok = !mprotect(ro, page, PROT_READ);
	ok &= get_at_module(&at) == 0 && !memcmp(&at.data, &want[0], sizeof(d));
	ok &= err_is(ioctl(fd, ALLOCINFO_IOC_GET_NEXT, ro), EFAULT);
	memset(&d, 0, sizeof(d));
	if (ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) || memcmp(&d, &want[1], sizeof(d))) {
		ksft_print_msg("after EFAULT GET_NEXT gave %s, expected %s\n", d.tag.function,
			       want[1].tag.function);
		ok = 0;
	}
	ok &= err_is(ioctl(fd, ALLOCINFO_IOC_GET_AT, ro_at), EFAULT);
	memset(&d, 0, sizeof(d));
	if (ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d) || memcmp(&d, &want[2], sizeof(d))) {
		ksft_print_msg("after GET_AT's EFAULT GET_NEXT gave %s (errno %d), expected %s\n",
			       d.tag.function, errno, want[2].tag.function);
		ok = 0;
	}
	if (ro != MAP_FAILED)
		munmap(ro, page);
	ksft_test_result(ok, "a failed copy-out (EFAULT) moves neither position nor filter\n");
}

static void t_unload(int i)
{
	(void)i;
	close(fd);
	ksft_test_result(ap_test_free("kmalloc_100") == 0 && ap_test_free("alloc_pages_3") == 0 &&
			 ap_rmmod("allocprof_test") == 0 && ap_rmmod("allocprof") == 0,
			 "free and unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_content_id),
	AP_STEP(t_walk),
	AP_STEP(t_walk_figures),
	AP_STEP(t_module),
	AP_STEP(t_function),
	AP_STEP(t_file),
	AP_STEP(t_line),
	AP_STEP(t_size_exact),
	AP_STEP(t_size_some),
	AP_STEP(t_min_size),
	AP_STEP(t_module_inaccurate),
	AP_STEP(t_module_accurate),
	AP_STEP(t_inaccurate),
	AP_STEP(t_builtin),
	AP_STEP(t_combined),
	AP_STEP(t_position),
	AP_STEP(t_upstream_file),
	AP_STEP(t_upstream_function),
	AP_STEP(t_upstream_size),
	AP_STEP(t_upstream_line),
	AP_STEP(t_id_load),
	AP_STEP(t_id_stays),
	AP_STEP(t_einval),
	AP_STEP(t_enoent),
	AP_STEP(t_next_after_errors),
	AP_STEP(t_past_records),
	AP_STEP(t_efault),
	AP_STEP(t_enotty),
	AP_STEP(t_unterminated),
	AP_STEP(t_next_wraps),
	AP_STEP(t_efault_keeps_cursor),
	AP_STEP(t_unload),
};

int main(void)
{
	long long sunit, sunit3;

	ksft_print_header();
	if (ap_start(NULL))
		ksft_exit_fail_msg("cannot load allocprof and allocprof_test\n");
	fd = open(AP_ALLOCINFO, O_RDONLY);
	if (fd < 0)
		ksft_exit_fail_msg("open %s: %s\n", AP_ALLOCINFO, strerror(errno));
	/* The patched kernel has the interface: no ENOTTY here. */
	if (ioctl(fd, ALLOCINFO_IOC_CONTENT_ID, &(struct allocinfo_content_id){ 0 }))
		ksft_exit_fail_msg("ALLOCINFO_IOC_CONTENT_ID: %s: the interface is missing\n",
				   strerror(errno));
	nsites = ap_testsites(sites, 32);
	if (nsites <= 0 || ap_testsite_unit("kmalloc_100", &sunit, &calls) ||
	    ap_testsite_unit("alloc_pages_3", &sunit3, &calls3))
		ksft_exit_fail_msg("cannot read the test module's sites\n");
	unit = sunit;
	unit3 = sunit3;
	AP_RUN_STEPS(steps);
	ksft_finished();
}
