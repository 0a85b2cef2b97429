// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: allocprof's interfaces fed random input from several tasks at
 * once, as syzkaller would (issue #41).
 *
 * For FUZZ_SECONDS seconds (60; FUZZ_OPS=n also stops each fuzzing task
 * after n operations), these processes run side by side:
 *
 * - control: commands of the control file's grammar (Documentation/
 *   control.md, src/query.rs: module/file/func/line with globs, quotes,
 *   line ranges, +/-/= and the flags psanfcm_, the knobs of f, comments,
 *   ';' and newlines, up to past 64 commands and 4095 bytes), some with a
 *   few bytes changed, written to /sys/kernel/debug/allocprof/control;
 * - bytes: byte-random writes and token soup to the control file, writes
 *   from bad addresses, writes to the read-only report files;
 * - ioctl: random ioctl()s on /proc/allocinfo: the three commands, the
 *   same numbers with other sizes and directions, random numbers; random
 *   positions, masks (undefined bits too), names without a NUL, lines,
 *   size ranges; arguments across an unmapped page or at bad addresses;
 * - sys: random values written to vm.mem_profiling (0, 1, rarely never and
 *   only in the last fifth of a load's time, junk, at an offset, from a
 *   bad address) and to every module parameter
 *   of allocprof (all 0444 today: every write must be refused);
 * - load: rmmod of allocprof and finit_module() of it with random
 *   parameters, control= among them (grammar commands or bytes), so that
 *   the files of the other tasks come and go under them;
 * - modules: allocprof_test2, allocprof_churn and allocprof_rust_test
 *   loaded and unloaded;
 * - alloc: allocations and frees at the test module's known call sites;
 * - read: /proc/allocinfo read whole (every line well formed), the control
 *   file and the reports, the sysctl and the parameters.
 *
 * Each operation's result must be a success or an errno of the set its
 * interface allows (ifaces[] below says which and why); a few successes
 * are checked too (a sysctl write of junk must not succeed, an ioctl
 * record must match its filter).  Fault injection (f) is only ever given
 * by commands naming a test module or allocprof (refused there with
 * EPERM) by its exact name, so the kernel's own allocations never fail;
 * changed bytes that could spell f are not written.  Afterwards allocprof
 * is put back (the control file's "=p", vm.mem_profiling=1; reloaded if
 * it was left at never, in debug mode, with control= or unloaded): every call site at
 * =p, no fault entry nor churn line, and the known call sites exact: 0/0 once freed (the
 * frees of what was counted before any flag change still subtract), then
 * N allocations give exactly N times their unit.  A kernel report fails
 * the run (qemu/run).
 *
 * The seed is printed first; FUZZ_SEED=n runs the same inputs again: the
 * control, bytes, ioctl and sys tasks draw theirs from the seed and the
 * task alone, whatever the results (the loader's, the modules' and the
 * allocations' also follow what they find: a module loaded or not); the
 * interleaving is the scheduler's.  Counts of operations and errnos per
 * interface are printed as ksft messages.
 */
#include <dirent.h>
#include <linux/alloc_tag.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "allocprof_lib.h"

#define AP_PARAMS "/sys/module/allocprof/parameters"
#define RUST_TRIGGER "/sys/kernel/debug/allocprof_rust_test/trigger"
#define ERRNO_MAX 134
#define FIRST_LEN 400
#define WRITE_MAX 8192
#define READ_BUF (4 << 20)
#define KNOWN_N 3

/* The interfaces, each counted on its own. */
enum iface {
	IF_CONTROL, IF_BYTES, IF_LOAD, IF_UNLOAD, IF_IOCTL, IF_SYSCTL, IF_PARAM, IF_MODULES,
	IF_ALLOC, IF_READ, NR_IFACES
};

#define B(e) (1ULL << (e))

/* An interface, and the errnos that are a clean refusal there. */
struct iface_info {
	const char *name;
	unsigned long long allowed;
	const char *why;
};

static const struct iface_info ifaces[NR_IFACES] = {
	[IF_CONTROL] = { "control writes (grammar)",
		B(EINVAL) | B(E2BIG) | B(ENODEV) | B(ENOMEM) | B(ENOSPC) | B(EPERM) | B(ENOENT) |
		B(EIO) | B(ENXIO),
		"EINVAL bad command, E2BIG over 4095 bytes, ENODEV never, ENOMEM no table, ENOSPC over 256 f or 256 c, EPERM f on allocprof, ENOENT/EIO/ENXIO allocprof unloaded or unloading" },
	[IF_BYTES] = { "control writes (bytes)",
		B(EINVAL) | B(E2BIG) | B(ENODEV) | B(ENOMEM) | B(ENOSPC) | B(EPERM) | B(ENOENT) |
		B(EIO) | B(ENXIO) | B(EFAULT),
		"as control, and EFAULT bad address, EPERM the report files" },
	[IF_LOAD] = { "finit_module allocprof (control= and others)",
		B(EINVAL) | B(ENODEV) | B(ENOSPC) | B(EPERM) | B(ENOMEM),
		"EINVAL bad parameter, ENODEV control= with never, ENOSPC/EPERM/ENOMEM as the control file" },
	[IF_UNLOAD] = { "delete_module allocprof",
		B(EAGAIN) | B(ENOENT),
		"EAGAIN in use, ENOENT not loaded" },
	[IF_IOCTL] = { "ioctl /proc/allocinfo",
		B(ENOTTY) | B(EINVAL) | B(ENOENT) | B(EFAULT),
		"ENOTTY unknown command or file gone, EINVAL bad filter, ENOENT no record or no file, EFAULT bad address" },
	[IF_SYSCTL] = { "vm.mem_profiling writes",
		B(EINVAL) | B(EPERM) | B(EACCES) | B(ENOENT) | B(EFAULT),
		"EINVAL bad value or offset, EPERM debug=1, EACCES after never, ENOENT unloaded, EFAULT bad address" },
	[IF_PARAM] = { "module parameter writes",
		B(EACCES) | B(ENOENT) | B(ENODEV),
		"EACCES read-only (all are 0444), ENOENT/ENODEV unloaded" },
	[IF_MODULES] = { "test module loads and unloads",
		B(EEXIST) | B(ENOENT) | B(EAGAIN) | B(ENOMEM) | B(EINVAL),
		"EEXIST loaded, ENOENT not loaded, EAGAIN in use, ENOMEM f, EINVAL bad nr=" },
	[IF_ALLOC] = { "test allocations and frees",
		B(ENOMEM) | B(ENOENT) | B(ENXIO) | B(EBUSY) | B(EINVAL),
		"ENOMEM f, ENOENT/ENXIO/EBUSY/EINVAL the Rust module's trigger absent, unloading, busy or idle" },
	[IF_READ] = { "reads",
		B(ENOENT) | B(EIO) | B(ENODEV) | B(ENXIO),
		"ENOENT/EIO/ENODEV allocprof unloaded, ENXIO a debugfs file of allocprof unloading" },
};

/* What one interface saw, in memory shared with the tasks. */
struct tally {
	unsigned long ops, ok, unclean;
	unsigned long err[ERRNO_MAX];
	char first[FIRST_LEN];
};

/* The tasks; each has a seed of its own (the seed and its index). */
enum task {
	T_CONTROL, T_BYTES, T_IOCTL, T_SYS, T_LOAD, T_MODULES, T_ALLOC, T_READ, NR_TASKS
};

static const char *const task_names[NR_TASKS] = {
	"control", "bytes", "ioctl", "sys", "load", "modules", "alloc", "read"
};

struct shared {
	volatile int stop;
	/* The loader is about to unload: no new open of allocprof's debugfs files. */
	volatile int hold_off;
	/* The last fifth of a load's time: never may be written. */
	volatile int late;
	unsigned long task_ops[NR_TASKS];
	volatile int task_done[NR_TASKS];
	unsigned long reloads, never_writes, extra;
	struct tally t[NR_IFACES];
};

static struct shared *sh;
static unsigned long long seed;
static long fuzz_seconds = 60, fuzz_ops;
static int started, fuzzed;
static pid_t pids[NR_TASKS];
static char *guard;		/* a page, then a PROT_NONE page */

/* The known call sites of the test module: allocated and freed throughout. */
static const char *const known[] = {
	"kmalloc_8", "kmalloc_100", "cache_alloc", "alloc_pages_3", "vmalloc_5p", "percpu_48",
	"cache_bulk", "pages_bulk",
};

#define NR_KNOWN ARRAY_SIZE(known)
static long long known_bytes[NR_KNOWN];
static unsigned long long known_calls[NR_KNOWN];

/* splitmix64: small, and the same on every machine. */
struct rng {
	unsigned long long s;
};

static unsigned long long rnd(struct rng *r)
{
	unsigned long long z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int below(struct rng *r, unsigned int n)
{
	return n ? rnd(r) % n : 0;
}

static int chance(struct rng *r, unsigned int percent)
{
	return below(r, 100) < percent;
}

#define PICK(r, a) ((a)[below((r), ARRAY_SIZE(a))])

/* A text being built, at most WRITE_MAX bytes. */
struct text {
	char b[WRITE_MAX + 1];
	size_t len;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (n > WRITE_MAX - t->len)
		n = WRITE_MAX - t->len;
	memcpy(t->b + t->len, s, n);
	t->len += n;
	t->b[t->len] = '\0';
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static void putf(struct text *t, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(t, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* input as C escapes, cut to fit out. */
static void escape(char *out, size_t size, const char *in, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = in[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = c;
		else
			o += snprintf(out + o, size - o, "\\x%02x", c);
	}
	if (i < len && o + 4 < size)
		o += snprintf(out + o, size - o, "...");
	out[o] = '\0';
}

/* A result that is not clean: counted, and the first one kept. */
static void bad(int ifc, int task, const char *what, const char *input, size_t len)
{
	struct tally *t = &sh->t[ifc];
	char esc[FIRST_LEN / 2];

	t->unclean++;
	if (t->first[0])
		return;
	escape(esc, sizeof(esc), input ? input : "", input ? len : 0);
	snprintf(t->first, sizeof(t->first), "task %s op %lu: %.100s; input '%s'",
		 task_names[task], sh->task_ops[task], what, esc);
}

/* One operation's result: 0 or an errno. */
static void note(int ifc, int task, int err, const char *input, size_t len)
{
	struct tally *t = &sh->t[ifc];
	char what[64];

	t->ops++;
	if (!err) {
		t->ok++;
		return;
	}
	if (err > 0 && err < ERRNO_MAX)
		t->err[err]++;
	if (err > 0 && err < 64 && (ifaces[ifc].allowed & B(err)))
		return;
	snprintf(what, sizeof(what), "errno %d (%s)", err, strerror(err));
	bad(ifc, task, what, input, len);
}

/*
 * A file of allocprof cannot be opened: while it is being loaded or
 * unloaded, the others wait a little and leave the CPU to that.
 */
static int absent(int err)
{
	if (err == ENOENT || err == ENXIO)
		usleep(20000);
	return err;
}

/*
 * An open debugfs file of allocprof holds the module (its fops' owner), so
 * delete_module() would keep failing with EAGAIN: the tasks that open them
 * wait while the loader tries.
 */
static void hold_off(const char *path)
{
	int waited = 0;

	if (strncmp(path, "/sys/kernel/debug/allocprof/", 28))
		return;
	while (sh->hold_off && !sh->stop && waited++ < 1000)
		usleep(5000);
}

/* Writes len bytes from buf to path in one write(); 0 or the errno. */
static int write_to(const char *path, const void *buf, size_t len, off_t off)
{
	int fd, err = 0;
	ssize_t n;

	hold_off(path);
	fd = open(path, O_WRONLY);

	if (fd < 0)
		return absent(errno);
	n = off ? pwrite(fd, buf, len, off) : write(fd, buf, len);
	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		err = EIO;
	close(fd);
	return err;
}

/* ---- The control language ---- */

static const char *const mod_names[] = {
	"allocprof_test", "allocprof_test2", "allocprof_churn", "allocprof_rust_test", "allocprof",
	"vmlinux", "*", "allocprof_*", "allocprof_tes?", "allocprof_test*", "*_test", "nosuchmodule",
	"", "**", "?*?",
};

/* The modules a command may give f to: by exact name only. */
static const char *const f_mods[] = {
	"allocprof_test", "allocprof_test2", "allocprof_churn", "allocprof",
};

static const char *const file_names[] = {
	"allocprof_test.c", "allocprof_test2.c", "allocprof_churn.c", "allocprof_rust_test.rs",
	"mm/slub.c", "slub.c", "mm/*", "*", "*.c", "src/*.rs", "src/control.rs", "control.rs",
	"lib/alloc_tag_rust.c", "nosuchfile.c", "/", "*/*/*", "mm/page_alloc.c",
};

static const char *const func_names[] = {
	"aptest_kmalloc_100", "aptest_kmalloc_8", "aptest_alloc_pages_0", "aptest_*",
	"aptest_kmalloc_1?00", "apchurn_*", "aptest2_*", "*kmalloc*", "*", "?", "alloc_slab_page",
	"RustTest::init", "nosuchfunc", "aptest_helper", "*::*", "a*b*c*d*e*f*g*h*",
};

static const char *const bad_words[] = {
	"format", "class", "modul", "FUNC", "lines", "+x", "=P", "-", "+", "!p", "p", "=psanfx",
	"probability", "times=1", "'", "\"", "#", "\\", "line", "module",
};

static const char *const knob_names[] = {
	"probability", "interval", "times", "space", "verbose",
};

/*
 * Whether the write being made has deliberate mistakes: half of them do,
 * so that half are mostly good commands that change flags.
 */
static int sloppy;

/* A mistake, percent of the time, in a sloppy write only. */
static int oops(struct rng *r, unsigned int percent)
{
	return sloppy && chance(r, percent);
}

/* A random glob of bytes from a small alphabet (no f, no NUL, no blank). */
static void put_glob(struct rng *r, struct text *t)
{
	static const char alpha[] = "aptes_*?./:[]\\0123456789kmlcAZ";
	unsigned int n = below(r, 24), i;

	for (i = 0; i < n; i++)
		put(t, &alpha[below(r, sizeof(alpha) - 1)], 1);
}

/* A line range, good or bad. */
static void put_lines(struct rng *r, struct text *t)
{
	static const char *const odd[] = {
		"4294967295", "4294967296", "-", "1-2-3", "abc", "0x10", "+5", "5-1", "99999999999",
		"-0", "0-", "18446744073709551615", "1 -2",
	};
	unsigned int a = below(r, 1600), b = a + below(r, 300);

	if (oops(r, 20)) {
		if (chance(r, 50))
			putf(t, "%u-%u", b + 1, a);
		else
			puts_(t, PICK(r, odd));
		return;
	}
	switch (below(r, 4)) {
	case 0:
		putf(t, "%u", a);
		break;
	case 1:
		putf(t, "%u-%u", a, b);
		break;
	case 2:
		putf(t, "-%u", b);
		break;
	default:
		putf(t, "%u-", a);
		break;
	}
}

/* A word as the value of a keyword: maybe quoted. */
static void put_value(struct rng *r, struct text *t, const char *v)
{
	unsigned int q = below(r, 100);

	if (q < 8)
		putf(t, "'%s'", v);
	else if (q < 14)
		putf(t, "\"%s\"", v);
	else if (q < 15 && sloppy)
		putf(t, "'%s", v);	/* unclosed */
	else
		puts_(t, v);
}

static void put_blank(struct rng *r, struct text *t)
{
	static const char *const blanks[] = { "\t", "  ", " \t ", "\v", "\r ", "\f" };

	puts_(t, chance(r, 85) ? " " : PICK(r, blanks));
}

/* The knobs of an f command, good and bad. */
static void put_knobs(struct rng *r, struct text *t)
{
	unsigned int n = below(r, 6), i;

	for (i = 0; i < n; i++) {
		const char *k = PICK(r, knob_names);
		unsigned int v = below(r, 100);

		put_blank(r, t);
		if (oops(r, 4)) {
			puts_(t, chance(r, 50) ? "bogus=1" : k);	/* unknown, or no '=' */
			continue;
		}
		if (!sloppy)
			v = 0;		/* in range */
		if (!strcmp(k, "probability"))
			putf(t, "%s=%d", k, v < 90 ? (int)below(r, 101) : v < 95 ? 101 : -1);
		else if (!strcmp(k, "interval"))
			putf(t, "%s=%u", k, v < 95 ? 1 + below(r, 4) : 0);
		else if (!strcmp(k, "times") && v < 90)
			putf(t, "%s=%u", k, below(r, 6));
		else if (!strcmp(k, "times"))
			putf(t, "%s=%s", k, v < 94 ? "-1" : v < 97 ? "-2" : "2147483648");
		else if (!strcmp(k, "space"))
			putf(t, "%s=%u", k, v < 95 ? below(r, 100000) : 4294967295U);
		else
			/* Mostly no report: the kernel log stays small. */
			putf(t, "%s=%s", k, v < 80 ? "0" : v < 90 ? "1" : v < 95 ? "2" : "3");
	}
}

/*
 * One command of the grammar.  f only with an exact module of f_mods[]
 * (or with no match-spec at all, which selects every call site and must
 * be refused with ENOSPC), and only if allow_f.
 */
static void put_command(struct rng *r, struct text *t, int allow_f)
{
	static const char *const keywords[] = { "module", "file", "func", "line" };
	int give_f = allow_f && chance(r, 20), all = give_f && chance(r, 3);
	unsigned int nspecs = all ? 0 : below(r, 5), i, used = 0;
	static const char flagset[] = "psancm_";
	char op;

	if (chance(r, 3)) {
		puts_(t, "# a comment");
		return;
	}
	if (give_f && !all) {
		puts_(t, "module");
		put_blank(r, t);
		put_value(r, t, PICK(r, f_mods));
		put_blank(r, t);
		used |= 1;
	}
	for (i = 0; i < nspecs; i++) {
		unsigned int k = below(r, 4);

		if ((used & (1U << k)) && !oops(r, 5))
			continue;	/* mostly each keyword once */
		if (give_f && k == 0)
			continue;
		used |= 1U << k;
		if (oops(r, 3)) {
			puts_(t, PICK(r, bad_words));
			put_blank(r, t);
		}
		puts_(t, keywords[k]);
		if (oops(r, 2))
			break;		/* a keyword without a value */
		put_blank(r, t);
		if (k == 3) {
			put_lines(r, t);
		} else if (chance(r, 10)) {
			put_glob(r, t);
		} else {
			const char *v = k == 0 ? PICK(r, mod_names) : k == 1 ? PICK(r, file_names) :
					PICK(r, func_names);

			put_value(r, t, v);
		}
		put_blank(r, t);
	}
	if (oops(r, 2))
		return;			/* no flags */
	op = give_f ? (chance(r, 50) ? '+' : '=') : "+-="[below(r, 3)];
	if (oops(r, 2))
		op = "!*pm"[below(r, 4)];
	put(t, &op, 1);
	for (i = below(r, 4); i > 0; i--)
		put(t, &flagset[below(r, sizeof(flagset) - 1)], 1);
	if (give_f)
		puts_(t, "f");
	if (oops(r, 2))
		put(t, &"xPqz"[below(r, 4)], 1);
	if (give_f)
		put_knobs(r, t);
	else if (oops(r, 3))
		putf(t, " %s=%u", PICK(r, knob_names), below(r, 3));	/* knobs without f */
	if (chance(r, 3))
		puts_(t, " #trailing comment");
}

/* A write of commands: mostly a few, sometimes around the limit of 64. */
static void put_commands(struct rng *r, struct text *t, int allow_f, char sep_only)
{
	unsigned int n = chance(r, 3) ? 60 + below(r, 10) : 1 + below(r, 4), i;

	sloppy = chance(r, 50);
	for (i = 0; i < n && t->len < WRITE_MAX - 300; i++) {
		if (i)
			put(t, sep_only ? &sep_only : chance(r, 60) ? ";" : "\n", 1);
		if (chance(r, 3))
			put_blank(r, t);
		put_command(r, t, allow_f);
	}
	if (chance(r, 20))
		puts_(t, "\n");
	if (oops(r, 2)) {
		/* Past 4095 bytes: E2BIG. */
		while (t->len < 4096 + below(r, 200))
			puts_(t, " ");
	}
}

/*
 * Whether bytes may give f: a flags word ('+' or '=', then flags) with an
 * f.  Written only when the generator put the f there itself.
 */
static int may_give_f(const char *b, size_t len)
{
	size_t i, j;

	for (i = 0; i < len; i++) {
		if (b[i] != '+' && b[i] != '=')
			continue;
		for (j = i + 1; j < len && strchr("psanfcm_", b[j]) && b[j]; j++)
			if (b[j] == 'f')
				return 1;
	}
	return 0;
}

/* A few random changes to a write's bytes. */
static void mutate(struct rng *r, struct text *t)
{
	unsigned int n = 1 + below(r, 3), i;

	for (i = 0; i < n && t->len; i++) {
		size_t at = below(r, t->len);
		char c = (char)below(r, 256);

		switch (below(r, 5)) {
		case 0:
			t->b[at] ^= 1 << below(r, 8);
			break;
		case 1:
			t->b[at] = c;
			break;
		case 2:
			if (t->len < WRITE_MAX) {
				memmove(t->b + at + 1, t->b + at, t->len - at);
				t->b[at] = c;
				t->len++;
			}
			break;
		case 3:
			memmove(t->b + at, t->b + at + 1, t->len - at - 1);
			t->len--;
			break;
		default:
			t->len = at;
			break;
		}
	}
	t->b[t->len] = '\0';
}

/* ---- The tasks ---- */

static int stopping(int task)
{
	if (sh->stop)
		return 1;
	return task <= T_SYS && fuzz_ops && sh->task_ops[task] >= (unsigned long)fuzz_ops;
}

static void task_control(struct rng *r)
{
	static struct text t;

	while (!stopping(T_CONTROL)) {
		struct text orig;
		int err;

		t.len = 0;
		put_commands(r, &t, 1, 0);
		if (!may_give_f(t.b, t.len) && chance(r, 20)) {
			memcpy(&orig, &t, sizeof(t));
			mutate(r, &t);
			if (may_give_f(t.b, t.len))
				memcpy(&t, &orig, sizeof(t));
		}
		err = write_to(AP_CONTROL, t.b, t.len, 0);
		note(IF_CONTROL, T_CONTROL, err, t.b, t.len);
		sh->task_ops[T_CONTROL]++;
	}
}

static void task_bytes(struct rng *r)
{
	static const char *const tokens[] = {
		"module", "file", "func", "line", "allocprof_test", "*", "?", "aptest_*", "vmlinux",
		"mm/slub.c", "+p", "-p", "=_", "+s", "-a", "=pn", "+psan", "+c", "-c", "=pc", "+m", "-m", "=", ";",
		"\n", " ", "\t",
		"'", "\"", "#", "1-2", "-5", "10-", "probability=50", "times=1", "verbose=0",
		"interval=0", "space=", "=x", "\\", "\xff", "allocprof", "line", "0",
	};
	static const char *const reports[] = {
		"/sys/kernel/debug/allocprof/stacks", "/sys/kernel/debug/allocprof/ages",
		"/sys/kernel/debug/allocprof/nodes", "/sys/kernel/debug/allocprof/faults",
		"/sys/kernel/debug/allocprof/churn", "/sys/kernel/debug/allocprof/memcgs",
	};
	static struct text t;

	while (!stopping(T_BYTES)) {
		unsigned int kind = below(r, 100), i, n;
		const char *path = AP_CONTROL;
		int err, report = 0;

		t.len = 0;
		if (kind < 45) {
			n = chance(r, 3) ? 4090 + below(r, 10) : below(r, 300);
			for (i = 0; i < n; i++) {
				char c = (char)below(r, 256);

				put(&t, &c, 1);
			}
		} else if (kind < 90) {
			n = 1 + below(r, 30);
			for (i = 0; i < n; i++)
				puts_(&t, PICK(r, tokens));
		} else if (kind < 95) {
			/* From a bad address: EFAULT (or the parse of what was read). */
			const char *at = guard + 4096 - below(r, 64);
			size_t wlen = 64 + below(r, 64);
			int fd;
			ssize_t w;

			hold_off(AP_CONTROL);
			fd = open(AP_CONTROL, O_WRONLY);

			if (chance(r, 50))
				at = (const char *)(uintptr_t)(1 + below(r, 4096));
			if (fd < 0) {
				err = absent(errno);
			} else {
				w = write(fd, at, wlen);
				err = w < 0 ? errno : 0;
				close(fd);
			}
			note(IF_BYTES, T_BYTES, err, "(a write from a bad address)", 28);
			sh->task_ops[T_BYTES]++;
			continue;
		} else {
			path = PICK(r, reports);
			report = 1;
			puts_(&t, "+p");
		}
		/* Bytes that could give f anywhere: not written (see the top). */
		for (i = 0; i < t.len; i++)
			if (t.b[i] == 'f' && may_give_f(t.b, t.len))
				t.b[i] = 'g';
		err = write_to(path, t.b, t.len, 0);
		if (report && !err)
			bad(IF_BYTES, T_BYTES, "a report file took a write", path, strlen(path));
		note(IF_BYTES, T_BYTES, err, t.b, t.len);
		sh->task_ops[T_BYTES]++;
	}
}

/* A name field: a known name, empty, or random bytes without a NUL. */
static void fill_name(struct rng *r, char *field, const char *const *names, unsigned int n)
{
	unsigned int k = below(r, 100), i;

	memset(field, 0, ALLOCINFO_STR_SIZE);
	if (k < 60) {
		snprintf(field, ALLOCINFO_STR_SIZE, "%s", names[below(r, n)]);
	} else if (k < 85) {
		for (i = 0; i < ALLOCINFO_STR_SIZE; i++)
			field[i] = (char)(1 + below(r, 255));
	} else if (k < 95) {
		for (i = 0; i < below(r, ALLOCINFO_STR_SIZE); i++)
			field[i] = (char)(1 + below(r, 255));
	}
}

/* A returned name field: NUL-terminated within its array. */
#define TERMINATED(f) (memchr((f), '\0', sizeof(f)) != NULL)

/* A record GET_AT or GET_NEXT returned, against the filter it was asked with. */
static const char *record_problem(const struct allocinfo_tag_data *d,
				  const struct allocinfo_filter *f)
{
	const struct allocinfo_tag *t = &d->tag;

	if (!TERMINATED(t->modname) || !TERMINATED(t->function) || !TERMINATED(t->filename))
		return "a name without its NUL";
	if (!t->function[0] || !t->filename[0])
		return "an empty function or file";
	if ((f->mask & ALLOCINFO_FILTER_MASK_MODNAME) &&
	    strncmp(t->modname, f->fields.modname, ALLOCINFO_STR_SIZE))
		return "another module than the filter's";
	if ((f->mask & ALLOCINFO_FILTER_MASK_FUNCTION) &&
	    strncmp(t->function, f->fields.function, ALLOCINFO_STR_SIZE))
		return "another function than the filter's";
	if ((f->mask & ALLOCINFO_FILTER_MASK_LINENO) && t->lineno != f->fields.lineno)
		return "another line than the filter's";
	if ((f->mask & ALLOCINFO_FILTER_MASK_MIN_SIZE) && d->counter.bytes < f->min_size)
		return "fewer bytes than the filter's min_size";
	if ((f->mask & ALLOCINFO_FILTER_MASK_MAX_SIZE) && d->counter.bytes > f->max_size)
		return "more bytes than the filter's max_size";
	if ((f->mask & ALLOCINFO_FILTER_MASK_INACCURATE) && !d->counter.accurate != !!f->inaccurate)
		return "another accuracy than the filter's";
	return NULL;
}

static void task_ioctl(struct rng *r)
{
	static const char *const mods[] = {
		"", "allocprof_test", "allocprof_test2", "allocprof_churn", "allocprof",
		"allocprof_rust_test", "vmlinux",
	};
	static const char *const funcs[] = {
		"aptest_kmalloc_100", "aptest_kmalloc_8", "alloc_slab_page", "RustTest::init", "",
	};
	static const char *const files[] = {
		"mm/slub.c", "allocprof_test.c", "src/control.rs", "",
	};
	struct allocinfo_filter last = { 0 };
	int fd = -1, valid_last = 0;

	while (!stopping(T_IOCTL)) {
		unsigned int kind = below(r, 100), nr = below(r, 3);
		unsigned long cmd;
		struct allocinfo_get_at at;
		void *arg;
		char desc[200];
		int ret, err;

		if (chance(r, 2) || fd < 0) {
			if (fd >= 0)
				close(fd);
			fd = open(AP_ALLOCINFO, O_RDONLY);
			valid_last = 0;
			if (fd < 0) {
				note(IF_IOCTL, T_IOCTL, absent(errno), "open", 4);
				sh->task_ops[T_IOCTL]++;
				continue;
			}
		}
		memset(&at, 0, sizeof(at));
		at.pos = chance(r, 60) ? below(r, 64) : chance(r, 50) ? below(r, 20000) : rnd(r);
		at.filter.mask = chance(r, 30) ? 0 : chance(r, 90) ? below(r, 128) : rnd(r);
		fill_name(r, at.filter.fields.modname, mods, ARRAY_SIZE(mods));
		fill_name(r, at.filter.fields.function, funcs, ARRAY_SIZE(funcs));
		fill_name(r, at.filter.fields.filename, files, ARRAY_SIZE(files));
		at.filter.fields.lineno = chance(r, 80) ? below(r, 2000) : rnd(r);
		at.filter.min_size = chance(r, 50) ? below(r, 1 << 20) : rnd(r);
		at.filter.max_size = chance(r, 50) ? below(r, 1 << 24) : rnd(r);
		at.filter.inaccurate = chance(r, 70) ? below(r, 2) : rnd(r);
		if (kind < 75) {
			/* nr: 0 CONTENT_ID, 1 GET_AT, 2 GET_NEXT; 3 another number. */
			cmd = nr == 0 ? ALLOCINFO_IOC_CONTENT_ID : nr == 1 ? ALLOCINFO_IOC_GET_AT :
			      ALLOCINFO_IOC_GET_NEXT;
		} else if (kind < 90) {
			/* The same numbers, other sizes and directions. */
			cmd = _IOC(below(r, 4), ALLOCINFO_IOC_BASE, below(r, 16),
				   below(r, 1 << 14));
			nr = 3;
		} else {
			cmd = (unsigned long)(unsigned int)rnd(r);
			nr = 3;
		}
		/* Where the argument is: mostly fine, else across the guard page or bad. */
		if (chance(r, 90)) {
			arg = &at;
		} else if (chance(r, 50)) {
			arg = guard + 4096 - below(r, sizeof(at));
			memcpy(arg, &at, guard + 4096 - (char *)arg);
		} else {
			arg = (void *)(uintptr_t)(chance(r, 50) ? 0 : rnd(r));
		}
		snprintf(desc, sizeof(desc),
			 "ioctl cmd %#lx pos %llu mask %#llx min %llu max %llu inaccurate %llu arg %s",
			 cmd, (unsigned long long)at.pos, (unsigned long long)at.filter.mask,
			 (unsigned long long)at.filter.min_size,
			 (unsigned long long)at.filter.max_size,
			 (unsigned long long)at.filter.inaccurate, arg == &at ? "ok" : "bad");
		ret = ioctl(fd, cmd, arg);
		err = ret < 0 ? errno : 0;
		note(IF_IOCTL, T_IOCTL, err, desc, strlen(desc));
		sh->task_ops[T_IOCTL]++;
		if (err == ENOTTY && nr < 3) {
			/* The file went with allocprof: a new one next time. */
			close(fd);
			fd = -1;
			continue;
		}
		if (arg != &at)
			continue;
		if (nr == 1) {
			unsigned long long m = at.filter.mask;
			int undefined = !!(m & ~(unsigned long long)ALLOCINFO_FILTER_MASKS);
			int minmax = (m & ALLOCINFO_FILTER_MASK_MIN_SIZE) &&
				     (m & ALLOCINFO_FILTER_MASK_MAX_SIZE) &&
				     at.filter.min_size > at.filter.max_size;
			const char *wrong = NULL;

			if (!err && undefined)
				wrong = "GET_AT took undefined mask bits";
			else if (!err && minmax)
				wrong = "GET_AT took min_size > max_size";
			else if (err == EINVAL && !undefined && !minmax)
				wrong = "GET_AT refused a good filter";
			if (wrong)
				bad(IF_IOCTL, T_IOCTL, wrong, desc, strlen(desc));
			if (!err) {
				const char *p = record_problem(&at.data, &at.filter);

				if (p)
					bad(IF_IOCTL, T_IOCTL, p, desc, strlen(desc));
				last = at.filter;
				valid_last = 1;
			} else if (err == ENOENT) {
				/* The filter may stay or not: not checked next. */
				valid_last = 0;
			}
		} else if (nr == 2 && !err && valid_last) {
			const char *p = record_problem((struct allocinfo_tag_data *)&at, &last);

			if (p)
				bad(IF_IOCTL, T_IOCTL, p, "GET_NEXT", 8);
		}
	}
	if (fd >= 0)
		close(fd);
}

/* The values written to vm.mem_profiling. */
static void sysctl_value(struct rng *r, struct text *t, int *valid)
{
	static const char *const junk[] = {
		"", " ", "2", "-1", "01", "1x", "never ", " never", "nev", "NEVER", "0\n\n", "1 ",
		"\n", "0x1", "+1", "true", "on", "00", "never\n\n", "1\n1",
	};
	unsigned int k = below(r, 1000), nl = chance(r, 50);

	*valid = 1;
	/*
	 * never only late in a load (the loader's clock decides): the rest
	 * of the load has no profiling to fuzz; else 1.
	 */
	if (k < 10 && sh->late) {
		puts_(t, nl ? "never\n" : "never");
		sh->never_writes++;
	} else if (k < 350) {
		puts_(t, nl ? "1\n" : "1");
	} else if (k < 550) {
		puts_(t, nl ? "0\n" : "0");
	} else if (k < 850) {
		const char *j = PICK(r, junk);

		puts_(t, j);
		*valid = 0;
	} else {
		unsigned int n = chance(r, 5) ? 4096 + below(r, 5000) : below(r, 40), i;

		for (i = 0; i < n; i++) {
			char c = (char)below(r, 256);

			put(t, &c, 1);
		}
		*valid = (t->len == 1 && (t->b[0] == '0' || t->b[0] == '1')) ||
			 (t->len == 2 && (t->b[0] == '0' || t->b[0] == '1') && t->b[1] == '\n');
	}
}

static void task_sys(struct rng *r)
{
	static struct text t;

	while (!stopping(T_SYS)) {
		unsigned int k = below(r, 100);
		int err, valid;

		t.len = 0;
		if (k < 80) {
			off_t off = chance(r, 5) ? 1 + below(r, 8) : 0;

			sysctl_value(r, &t, &valid);
			/* A write of nothing: write(2) returns 0 without the handler. */
			if (t.len == 0)
				valid = 1;
			err = write_to(AP_SYSCTL, t.b, t.len, off);
			if (!err && (!valid || off))
				bad(IF_SYSCTL, T_SYS, off ? "a write at an offset taken" :
				    "a bad value taken", t.b, t.len);
			note(IF_SYSCTL, T_SYS, err, t.b, t.len);
		} else if (k < 85) {
			/* From a bad address. */
			int fd = open(AP_SYSCTL, O_WRONLY);

			err = fd < 0 ? errno : write(fd, guard + 4096 - 1, 2) < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			note(IF_SYSCTL, T_SYS, err, "(from a bad address)", 20);
		} else {
			/* A module parameter: every one of allocprof's, writable or not. */
			static const char *const values[] = {
				"0", "1", "never", "2.0", "1.0", "", "junk",
				"module allocprof_test +p",
			};
			DIR *d = opendir(AP_PARAMS);
			struct dirent *e;
			char path[300];
			struct stat st;
			unsigned int i = 0, want = below(r, 4);

			/* The value first: the same choices whatever the directory holds. */
			if (chance(r, 70))
				puts_(&t, PICK(r, values));
			else
				for (i = below(r, 64); i > 0; i--) {
					char c = (char)(1 + below(r, 255));

					put(&t, &c, 1);
				}
			if (!d) {
				note(IF_PARAM, T_SYS, absent(errno), AP_PARAMS, strlen(AP_PARAMS));
				sh->task_ops[T_SYS]++;
				continue;
			}
			path[0] = '\0';
			while ((e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), AP_PARAMS "/%s", e->d_name);
				if (i++ == want)
					break;
			}
			closedir(d);
			if (!path[0]) {
				sh->task_ops[T_SYS]++;
				continue;
			}
			err = write_to(path, t.b, t.len, 0);
			if (!err && !stat(path, &st) && !(st.st_mode & 0222))
				bad(IF_PARAM, T_SYS, "a read-only parameter took a write", path,
				    strlen(path));
			note(IF_PARAM, T_SYS, err, path, strlen(path));
		}
		sh->task_ops[T_SYS]++;
	}
}

/* allocprof's parameters at a load: random, control= among them. */
static void load_params(struct rng *r, struct text *t)
{
	static const char *const modes[] = { "0", "1", "never", "2", "", "never ", "01" };
	static const char *const formats[] = { "1.0", "2.0", "3.0", "", "2" };
	static const char *const debugs[] = { "0", "1", "yes", "" };
	static const char *const odd[] = {
		"nosuchparam=1 ", "debug ", "control ", "mem_profiling ", "=1 ",
	};

	if (chance(r, 15))
		putf(t, "mem_profiling=%s ", PICK(r, modes));
	if (chance(r, 10))
		putf(t, "debug=%s ", PICK(r, debugs));
	if (chance(r, 15))
		putf(t, "allocinfo_format=%s ", PICK(r, formats));
	if (chance(r, 3))
		puts_(t, PICK(r, odd));
	if (chance(r, 60)) {
		struct text c;
		size_t i;

		c.len = 0;
		c.b[0] = '\0';
		if (chance(r, 85)) {
			put_commands(r, &c, 1, ';');
			if (chance(r, 2))
				while (c.len < 2049 + below(r, 4))
					puts_(&c, " ");
		} else {
			unsigned int n = below(r, 200);

			for (i = 0; i < n; i++) {
				char ch = (char)(1 + below(r, 255));

				put(&c, &ch, 1);
			}
			for (i = 0; i < c.len; i++)
				if (c.b[i] == 'f' && may_give_f(c.b, c.len))
					c.b[i] = 'g';
		}
		/* The kernel's parser ends a quoted value at the next '"'. */
		for (i = 0; i < c.len; i++)
			if (c.b[i] == '"' && !chance(r, 5))
				c.b[i] = '\'';
		puts_(t, "control=\"");
		put(t, c.b, c.len);
		puts_(t, "\"");
	}
}

/* Loads allocprof with params; 0 or the errno, counted. */
static int load(int fd, const char *params, size_t len)
{
	int err = ap_finit(fd, params);

	note(IF_LOAD, T_LOAD, -err, params, len);
	sh->task_ops[T_LOAD]++;
	if (!err)
		sh->reloads++;
	return -err;
}

static void task_load(struct rng *r)
{
	static struct text t;
	int fd = ap_module_fd("allocprof");
	long long cycle = 0;

	while (!sh->stop) {
		int err = -EAGAIN, tries;
		long long until, start;

		/*
		 * Loaded for 1 to 3 times as long as the last unload and load
		 * took, 3 s at least: on debug they take tens of seconds, while
		 * the others mostly find no file.
		 */
		start = ap_now_ns() / 1000000;
		until = start + 3000 + cycle + below(r, 2 * cycle + 9000);
		while (!sh->stop && ap_now_ns() / 1000000 < until) {
			sh->late = ap_now_ns() / 1000000 > until - (until - start) / 5;
			usleep(100000);
		}
		sh->late = 0;
		if (sh->stop)
			break;
		start = ap_now_ns() / 1000000;
		/*
		 * An open debugfs file holds the module: tried again for up to
		 * 3 s, each try counted, while no new one is opened.
		 */
		sh->hold_off = 1;
		for (tries = 0; tries < 150 && !sh->stop; tries++) {
			err = ap_delete("allocprof");
			note(IF_UNLOAD, T_LOAD, -err, "delete_module allocprof", 23);
			if (err != -EAGAIN)
				break;
			usleep(20000);
		}
		sh->hold_off = 0;
		if (err)
			continue;
		t.len = 0;
		t.b[0] = '\0';
		load_params(r, &t);
		/* Refused: then plainly, so that the others have something to fuzz. */
		if (load(fd, t.b, t.len))
			for (tries = 0; tries < 5 && load(fd, "", 0); tries++)
				usleep(100000);
		cycle = ap_now_ns() / 1000000 - start;
	}
	/* Leave allocprof loaded, however the last try went. */
	if (!ap_module_loaded("allocprof"))
		load(fd, "", 0);
	close(fd);
}

static void task_modules(struct rng *r)
{
	static const char *const names[] = {
		"allocprof_test2", "allocprof_churn", "allocprof_rust_test",
	};
	int fds[ARRAY_SIZE(names)];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		fds[i] = ap_module_fd(names[i]);
	while (!sh->stop) {
		unsigned int m = below(r, ARRAY_SIZE(names));
		char params[64] = "";
		int err;

		if (ap_module_loaded(names[m])) {
			err = -ap_delete(names[m]);
			snprintf(params, sizeof(params), "delete_module %s", names[m]);
		} else {
			if (m == 0 && chance(r, 5))
				snprintf(params, sizeof(params), "nr=x");
			else if (m == 0)
				snprintf(params, sizeof(params), "nr=%u", below(r, 4));
			err = -ap_finit(fds[m], params);
		}
		note(IF_MODULES, T_MODULES, err, params, strlen(params));
		sh->task_ops[T_MODULES]++;
		usleep(below(r, 300000));
	}
	for (i = 0; i < ARRAY_SIZE(names); i++)
		close(fds[i]);
}

static void task_alloc(struct rng *r)
{
	while (!sh->stop) {
		unsigned int k = below(r, 100);
		const char *s = known[below(r, NR_KNOWN)];
		char cmd[64];
		int err;

		if (k < 50) {
			unsigned int n = 1 + below(r, 3);

			snprintf(cmd, sizeof(cmd), "alloc %s %u", s, n);
			err = -ap_test_alloc(s, n);
		} else if (k < 75) {
			snprintf(cmd, sizeof(cmd), "free %s", s);
			err = -ap_test_free(s);
		} else if (k < 85) {
			unsigned int n = 1 + below(r, 2);

			snprintf(cmd, sizeof(cmd), "free %s %u first", s, n);
			err = -ap_test_free_first(s, n);
		} else if (k < 95) {
			const char *w = chance(r, 50) ? "alloc" : "free";

			snprintf(cmd, sizeof(cmd), "rust trigger %s", w);
			err = write_to(RUST_TRIGGER, w, strlen(w), 0);
		} else {
			snprintf(cmd, sizeof(cmd), "adopted free");
			err = write_to(AP_TESTDIR "/adopted", "free", 4, 0);
		}
		note(IF_ALLOC, T_ALLOC, err, cmd, strlen(cmd));
		sh->task_ops[T_ALLOC]++;
	}
	/* Whatever the frees met (f), nothing at the known sites is left. */
	for (unsigned int s = 0; s < NR_KNOWN; s++)
		ap_test_free(known[s]);
}

static char read_buf[READ_BUF];

/* Reads path to its end; 0 or the errno; *len what was read (up to READ_BUF). */
static int read_all(const char *path, size_t *len)
{
	int fd, err = 0;
	ssize_t n;

	hold_off(path);
	fd = open(path, O_RDONLY);
	*len = 0;
	if (fd < 0)
		return absent(errno);
	for (;;) {
		size_t room = READ_BUF - 1 - *len;

		n = read(fd, read_buf + (room ? *len : 0), room ? room : READ_BUF - 1);
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		if (room)
			*len += n;
	}
	read_buf[*len] = '\0';
	close(fd);
	return err;
}

/* Every line of a whole read of /proc/allocinfo: well formed. */
static void check_allocinfo(size_t len)
{
	static const char v1[] = AP_HEADER("1.0"), v2[] = AP_HEADER("2.0");
	struct ap_lines w;
	struct ap_info_line l, cut;

	if (len < sizeof(v1) - 1 || (memcmp(read_buf, v1, sizeof(v1) - 1) &&
				      memcmp(read_buf, v2, sizeof(v2) - 1))) {
		bad(IF_READ, T_READ, "allocinfo: no header", read_buf, len < 80 ? len : 80);
		return;
	}
	/* The lines after the header's two (len < READ_BUF - 1). */
	ap_lines_of(&w, read_buf, len, AP_LINES_EVERY);
	while (ap_info_next(&w, &l)) {
		char copy[512];
		const char *p;

		if (l.index < 2)
			continue;
		if (!l.terminated) {
			bad(IF_READ, T_READ, "allocinfo: unterminated line", l.text, 80);
			return;
		}
		if (l.len >= sizeof(copy)) {
			bad(IF_READ, T_READ, "allocinfo: line too long", l.text, 80);
			return;
		}
		/* Format 2.0's keys cut, then the line as format 1.0 has it. */
		memcpy(copy, l.text, l.len + 1);
		ap_cut_inaccurate(copy);
		cut.text = copy;
		cut.len = strlen(copy);
		ap_info_parse(&cut);
		p = ap_line_problem(&cut);
		if (p) {
			bad(IF_READ, T_READ, p, l.text, l.len);
			return;
		}
	}
	ap_lines_end(&w);
}

static void task_read(struct rng *r)
{
	static const char *const files[] = {
		AP_ALLOCINFO, AP_ALLOCINFO, AP_CONTROL, AP_STACKS, AP_NODES,
		"/sys/kernel/debug/allocprof/ages", "/sys/kernel/debug/allocprof/faults",
		"/sys/kernel/debug/allocprof/churn", "/sys/kernel/debug/allocprof/memcgs",
		AP_SYSCTL,
		AP_PARAMS "/control", AP_PARAMS "/mem_profiling", AP_PARAMS "/debug",
		AP_PARAMS "/allocinfo_format",
	};

	while (!sh->stop) {
		const char *path = PICK(r, files);
		size_t len;
		int err = read_all(path, &len);

		if (!err && path == files[0] && len < READ_BUF - 1)
			check_allocinfo(len);
		note(IF_READ, T_READ, err, path, strlen(path));
		sh->task_ops[T_READ]++;
		usleep(below(r, 20000));
	}
}

static void (*const tasks[NR_TASKS])(struct rng *r) = {
	[T_CONTROL] = task_control, [T_BYTES] = task_bytes, [T_IOCTL] = task_ioctl,
	[T_SYS] = task_sys, [T_LOAD] = task_load, [T_MODULES] = task_modules,
	[T_ALLOC] = task_alloc, [T_READ] = task_read,
};

static void run_task(int k)
{
	struct rng r = { seed ^ (0x1000193ULL * (k + 1)) };

	/* Each task its own inputs: the seed and the task's index. */
	rnd(&r);
	tasks[k](&r);
	sh->task_done[k] = 1;
	_exit(0);
}

/* ---- The steps ---- */

static void t_start(int i)
{
	unsigned int s;
	int ok;

	(void)i;
	ok = ap_start(NULL) == 0;
	for (s = 0; ok && s < NR_KNOWN; s++)
		ok = ap_testsite_unit(known[s], &known_bytes[s], &known_calls[s]) == 0 &&
		     known_bytes[s] > 0;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || guard == MAP_FAILED || mprotect(guard + 4096, 4096, PROT_NONE))
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	started = ok;
	ksft_test_result(ok, "allocprof and allocprof_test loaded; %zu known call sites' units\n",
			 NR_KNOWN);
}

static void t_fuzz(int i)
{
	time_t t0 = time(NULL), deadline = t0 + fuzz_seconds;
	int k, left, ok = 1, died = 0;

	(void)i;
	if (!started) {
		ksft_test_result_fail("fuzzing: not run, no start\n");
		return;
	}
	fflush(stdout);
	for (k = 0; k < NR_TASKS; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			ksft_exit_fail_msg("fork: %s\n", strerror(errno));
		if (!pids[k])
			run_task(k);
	}
	/* Until the time is up, or every fuzzing task did its FUZZ_OPS. */
	while (time(NULL) < deadline) {
		for (k = 0, left = 0; k <= T_SYS; k++)
			left += !sh->task_done[k];
		if (!left)
			break;
		sleep(1);
	}
	sh->stop = 1;
	/* Each task ends its operation at hand; 10 minutes at most. */
	for (k = 0; k < NR_TASKS; k++) {
		int st;
		time_t t1 = time(NULL);

		while (waitpid(pids[k], &st, WNOHANG) == 0) {
			if (time(NULL) - t1 > 600) {
				ksft_print_msg("task %s did not stop: killed\n", task_names[k]);
				kill(pids[k], SIGKILL);
				waitpid(pids[k], &st, 0);
				ok = 0;
				break;
			}
			usleep(100000);
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			ksft_print_msg("task %s ended with status %#x\n", task_names[k], st);
			died++;
		}
	}
	fuzzed = 1;
	for (k = 0; k < NR_TASKS; k++)
		ksft_print_msg("task %s: %lu operations\n", task_names[k], sh->task_ops[k]);
	ksft_print_msg("%lu loads of allocprof, %lu writes of never, in %ld s\n", sh->reloads,
		       sh->never_writes, (long)(time(NULL) - t0));
	ksft_test_result(ok && !died,
			 "fuzzing: %d tasks for %ld s (seed %llu), each ended by itself\n",
			 NR_TASKS, (long)(time(NULL) - t0), seed);
}

static const int nr_ifaces = NR_IFACES;

/*
 * The reports of loads with debug=1 in the kernel log: an untagged
 * allocation is what debug mode is for (allocations under way at a load
 * have no tag yet), but an allocation over a live reference is a free
 * allocprof missed, and a foreign slot value one it did not write.
 */
static void t_debug_reports(int i)
{
	long untagged, missed, foreign;

	(void)i;
	untagged = ap_klog_grep("allocprof: debug: untagged", 0, NULL);
	missed = ap_klog_grep("allocprof: debug: .* over a live reference", 0, NULL);
	foreign = ap_klog_grep("allocprof: debug: object freed with slot", 0, NULL);
	ksft_print_msg("debug mode's reports in the kernel log: %ld untagged, %ld over a live reference, %ld foreign slots\n",
		       untagged, missed, foreign);
	ksft_test_result(fuzzed && missed == 0 && foreign == 0,
			 "no debug-mode report of a missed free or a foreign slot\n");
}

static void t_iface(int i)
{
	struct tally *t = &sh->t[i];
	char errs[1024];
	size_t o = 0;
	int e;

	if (!fuzzed) {
		ksft_test_result_fail("%s: not fuzzed\n", ifaces[i].name);
		return;
	}
	o += snprintf(errs + o, sizeof(errs) - o, "%lu ok", t->ok);
	for (e = 1; e < ERRNO_MAX && o < sizeof(errs) - 40; e++)
		if (t->err[e])
			o += snprintf(errs + o, sizeof(errs) - o, ", %s %lu",
				      strerrorname_np(e) ? strerrorname_np(e) : "?", t->err[e]);
	ksft_print_msg("%s: %lu operations: %s\n", ifaces[i].name, t->ops, errs);
	if (t->unclean)
		ksft_print_msg("%s: %lu not clean, the first: %s\n", ifaces[i].name, t->unclean,
			       t->first);
	ksft_test_result(t->ops > 0 && !t->unclean,
			 "%s: %lu operations, each a success or a clean error (%s)\n",
			 ifaces[i].name, t->ops, ifaces[i].why);
}

/* Every line of the control file at =p; else says the first that is not. */
static int control_all_p(void)
{
	size_t len;
	char *buf = ap_slurp(AP_CONTROL, &len), *line, *save = NULL;
	int ok = buf != NULL, n = 0;

	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; ok && line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t l = strlen(line);

		if (line[0] == '#')
			continue;
		n++;
		if (l < 3 || strcmp(line + l - 3, " =p")) {
			ksft_print_msg("control: '%s' after =p\n", line);
			ok = 0;
		}
	}
	free(buf);
	return ok && n > 100;
}

/* The report file (faults, churn) lists no call site: only its header. */
static int report_empty(const char *name)
{
	char path[64], *buf, *line, *save = NULL;
	int ok;

	snprintf(path, sizeof(path), "/sys/kernel/debug/allocprof/%s", name);
	buf = ap_slurp(path, NULL);
	ok = buf != NULL;
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; ok && line;
	     line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#') {
			ksft_print_msg("%s: '%s' after =p\n", name, line);
			ok = 0;
		}
	free(buf);
	return ok;
}

static const char *restore_why;

static void t_restore(int i)
{
	static const char *const mods[] = {
		"allocprof_test2", "allocprof_churn", "allocprof_rust_test",
	};
	char sysctl[32] = "", dbg[8] = "", control[8] = "";
	unsigned int m;
	int ok = fuzzed, tries;

	(void)i;
	for (m = 0; ok && m < ARRAY_SIZE(mods); m++)
		for (tries = 0; ap_module_loaded(mods[m]) && tries < 50; tries++)
			if (ap_delete(mods[m]))
				usleep(100000);
	ok = ok && ap_write_file(AP_TESTDIR "/adopted", "free", 4) == 0;
	ap_read_file(AP_SYSCTL, sysctl, sizeof(sysctl));
	ap_read_file(AP_PARAMS "/debug", dbg, sizeof(dbg));
	ap_read_file(AP_PARAMS "/control", control, sizeof(control));
	if (!ap_module_loaded("allocprof"))
		restore_why = "reloaded: allocprof was not loaded";
	else if (!strcmp(sysctl, "never\n"))
		restore_why = "reloaded: vm.mem_profiling was never";
	else if (strcmp(dbg, "0\n"))
		restore_why = "reloaded: loaded with debug=1 (vm.mem_profiling read-only)";
	/*
	 * control= reaches the call sites named after "=p": a Rust line of
	 * allocprof's first allocating then (a debugfs file's text, read
	 * below) follows the loader's control=, not the write before it.
	 */
	else if (control[0] && strcmp(control, "\n"))
		restore_why = "reloaded: loaded with control= (lines named later would follow it)";
	else
		restore_why = NULL;
	if (restore_why)
		ok = ok && ap_load(NULL) == 0;
	ok = ok && ap_write_file(AP_SYSCTL, "1", 1) == 0 && ap_sysctl_is("1\n") &&
	     ap_write_file(AP_CONTROL, "=p", 2) == 0;
	ksft_print_msg("restore: %s\n", restore_why ? restore_why :
		       "by writes: vm.mem_profiling=1 and =p, no reload");
	ksft_test_result(ok,
			 "allocprof put back: test modules unloaded, vm.mem_profiling 1, control =p\n");
}

static void t_control_restored(int i)
{
	(void)i;
	ksft_test_result(fuzzed && control_all_p() && report_empty("faults") && report_empty("churn"),
			 "control restored: every call site at =p, no fault entry, no churn line\n");
}

static int known_is(unsigned int s, long long bytes, unsigned long long calls)
{
	char func[64];

	snprintf(func, sizeof(func), "aptest_%s", known[s]);
	return ap_expect(func, bytes, calls);
}

static void t_known_freed(int i)
{
	unsigned int s;
	int ok = fuzzed;

	(void)i;
	for (s = 0; s < NR_KNOWN; s++)
		ok &= ap_test_free(known[s]) == 0 && known_is(s, 0, 0);
	ksft_test_result(ok, "known call sites after the fuzzing, all freed: 0 bytes, 0 calls\n");
}

static void t_known_exact(int i)
{
	unsigned int s;
	int ok = fuzzed;

	(void)i;
	/* A batch site's allocation makes several live entries, each one unit. */
	for (s = 0; s < NR_KNOWN; s++) {
		long live;

		ok &= ap_test_alloc(known[s], KNOWN_N) == 0;
		live = ap_testsite_live(known[s]);
		ok &= live >= KNOWN_N &&
		      known_is(s, live * known_bytes[s], live * known_calls[s]) &&
		      ap_test_free(known[s]) == 0 && known_is(s, 0, 0);
	}
	ksft_test_result(ok, "known call sites: %d allocations each exact, then 0/0 freed\n",
			 KNOWN_N);
}

static void t_end(int i)
{
	(void)i;
	ksft_test_result(ap_unload_all() == 0, "allocprof and the test modules unload\n");
}

static const struct ap_step steps[] = {
	AP_STEP(t_start),
	AP_STEP(t_fuzz),
	AP_STEP_EACH(t_iface, &nr_ifaces),
	AP_STEP(t_debug_reports),
	AP_STEP(t_restore),
	AP_STEP(t_control_restored),
	AP_STEP(t_known_freed),
	AP_STEP(t_known_exact),
	AP_STEP(t_end),
};

/* A number from the environment, or def; the test ends if it is not one. */
static unsigned long long env_num(const char *name, unsigned long long def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || *end)
		ksft_exit_fail_msg("%s=%s: not a number\n", name, v);
	return n;
}

int main(void)
{
	struct timespec ts;

	ksft_print_header();
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = (unsigned long long)ts.tv_sec * 1000003ULL ^ ts.tv_nsec ^ getpid();
	seed = env_num("FUZZ_SEED", seed);
	fuzz_seconds = env_num("FUZZ_SECONDS", fuzz_seconds);
	fuzz_ops = env_num("FUZZ_OPS", 0);
	if (fuzz_seconds <= 0)
		ksft_exit_fail_msg("FUZZ_SECONDS must be at least 1\n");
	ksft_print_msg("seed %llu (FUZZ_SEED=%llu gives the same inputs), %ld s, %ld operations a fuzzing task (0: no limit)\n",
		       seed, seed, fuzz_seconds, fuzz_ops);
	AP_RUN_STEPS(steps);
	ksft_print_msg("fuzz_test took %ld s\n", (long)(time(NULL) - ts.tv_sec));
	ksft_finished();
}
