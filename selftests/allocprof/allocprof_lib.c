// SPDX-License-Identifier: GPL-2.0
/*
 * The helpers of the allocprof selftests, compiled once and linked into
 * every program; allocprof_lib.h says what each does.
 */
#include <dirent.h>
#include <regex.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <time.h>

#include "allocprof_lib.h"

/* klogctl(2)'s actions, as the kernel's include/linux/syslog.h has them. */
#define SYSLOG_ACTION_READ_ALL 3
#define SYSLOG_ACTION_READ_CLEAR 4
#define SYSLOG_ACTION_CLEAR 5
#define SYSLOG_ACTION_SIZE_BUFFER 10

int ap_sh(const char *fmt, ...)
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

int ap_sh_out(char *buf, size_t size, const char *fmt, ...)
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

long ap_sh_num(const char *fmt, const char *arg)
{
	char buf[64];

	if (ap_sh_out(buf, sizeof(buf), fmt, arg) < 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	return atol(buf);
}

ssize_t ap_read_file(const char *path, char *buf, size_t size)
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

int ap_write_file(const char *path, const void *data, size_t len)
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

int ap_module_loaded(const char *name)
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

int ap_open_as_nobody(const char *path, int flags)
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

int ap_sysctl_is(const char *want)
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

unsigned int ap_steps_plan(const struct ap_step *steps, unsigned int n)
{
	unsigned int i, plan = 0;

	for (i = 0; i < n; i++)
		plan += steps[i].times ? (unsigned int)*steps[i].times : 1;
	return plan;
}

char *ap_slurp(const char *path, size_t *lenp)
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

void ap_lines_of(struct ap_lines *w, char *text, size_t len, int flags)
{
	w->path = NULL;
	w->text = text;
	w->next = text;
	w->end = text ? text + len : NULL;
	w->index = 0;
	w->flags = flags;
	w->state = 2;
}

int ap_lines_end(struct ap_lines *w)
{
	int unreadable = w->state < 0;

	if (w->state == 1)
		free(w->text);
	w->text = w->next = w->end = NULL;
	w->state = 2;
	return unreadable ? -1 : 0;
}

int ap_lines_next(struct ap_lines *w, struct ap_info_line *l)
{
	if (!w->state) {
		size_t len;
		char *text = ap_slurp(w->path, &len);
		int flags = w->flags;

		ap_lines_of(w, text, text ? len : 0, flags);
		w->state = text ? 1 : -1;
	}
	while (w->next && w->next < w->end) {
		char *start = w->next, *nl = memchr(start, '\n', w->end - start);
		size_t len = nl ? (size_t)(nl - start) : (size_t)(w->end - start);

		w->next = nl ? nl + 1 : w->end;
		if (!len && !(w->flags & AP_LINES_EVERY))
			continue;
		start[len] = '\0';
		l->text = start;
		l->len = len;
		l->index = w->index++;
		l->terminated = nl != NULL;
		l->figures = 0;
		l->bytes = 0;
		l->calls = 0;
		l->tag = NULL;
		return 1;
	}
	return 0;
}

int ap_info_next(struct ap_lines *w, struct ap_info_line *l)
{
	if (!ap_lines_next(w, l))
		return 0;
	ap_info_parse(l);
	return 1;
}

void ap_info_parse(struct ap_info_line *l)
{
	int off = 0;

	l->figures = sscanf(l->text, "%lld %llu %n", &l->bytes, &l->calls, &off) == 2;
	if (!l->figures) {
		l->bytes = 0;
		l->calls = 0;
	}
	l->tag = l->figures ? l->text + off : NULL;
}

int ap_info_site(const struct ap_info_line *l, struct ap_info_site *s)
{
	s->module[0] = '\0';
	if (!l->tag)
		return -1;
	if (sscanf(l->tag, "%511[^:]:%llu [%511[^]]] func:%511s", s->file, &s->line, s->module,
		   s->func) == 4)
		return 0;
	s->module[0] = '\0';
	return sscanf(l->tag, "%511[^:]:%llu func:%511s", s->file, &s->line, s->func) == 3 ? 0 : -1;
}

int ap_cut_inaccurate(char *line)
{
	size_t l = strlen(line), t = strlen(AP_INACCURATE);
	char *key;

	while (l > 1 && line[l - 1] == ' ') {
		line[l - 1] = '\0';
		key = strrchr(line, ' ');
		line[l - 1] = ' ';
		if (!key || (strncmp(key, " node:", 6) && strncmp(key, " allocated:", 11) &&
			     strncmp(key, " freed:", 7) && strncmp(key, " accounted:", 11)))
			break;
		strcpy(key, " ");
		l = strlen(line);
	}
	if (l < t || strcmp(line + l - t, AP_INACCURATE))
		return 0;
	strcpy(line + l - t, " ");
	return 1;
}

int ap_site_lines(const char *module, const char *func, struct ap_fig *figs, int max)
{
	char tail[160];
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	int n = 0;

	if (module)
		snprintf(tail, sizeof(tail), " [%s] func:%s ", module, func);
	else
		snprintf(tail, sizeof(tail), " func:%s ", func);
	while (ap_info_next(&w, &l)) {
		struct ap_fig f = { l.bytes, l.calls, 1, ap_cut_inaccurate(l.text) };
		size_t len = strlen(l.text), t = strlen(tail);

		if (len < t || strcmp(l.text + len - t, tail))
			continue;
		if (!module && strstr(l.text, "] func:"))
			continue;
		if (!l.figures)
			continue;
		if (n < max)
			figs[n] = f;
		n++;
	}
	return ap_lines_end(&w) ? -1 : n;
}

struct ap_fig ap_site(const char *module, const char *func)
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

const char *ap_line_problem(const struct ap_info_line *l)
{
	const char *text = l->text, *func, *colon;

	if (l->len >= 512 || l->len < 24)
		return "length";
	if (text[12] != ' ' || text[21] != ' ')
		return "columns";
	if (!l->figures || l->tag != text + 22)
		return "figures";
	if (l->bytes < 0 || memchr(text, '-', 22))
		return "negative bytes";
	if (l->calls > LLONG_MAX)
		return "negative calls";
	func = strstr(l->tag, " func:");
	colon = strchr(l->tag, ':');
	if (!func || !colon || colon > func || text[l->len - 1] != ' ' || func[6] == ' ')
		return "tag";
	return NULL;
}

int ap_testsites_of(const char *path, struct ap_testsite *sites, int max)
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

int ap_testsites(struct ap_testsite *sites, int max)
{
	return ap_testsites_of(AP_TESTDIR "/sites", sites, max);
}

long ap_testsite_live(const char *name)
{
	struct ap_testsite sites[32];
	int i, n = ap_testsites(sites, 32);

	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].name, name))
			return sites[i].live;
	return -1;
}

long long ap_slab_size(const char *cache)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/slab_size", cache);
	if (ap_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return atoll(buf);
}

const char *ap_kmalloc_cache(long long size)
{
	static char names[16][24];
	static long long sizes[16];
	static int n = -1;
	long long best = -1;
	int i, pick = -1;

	if (n < 0) {
		char *all = ap_ls("/sys/kernel/slab"), *list = NULL, *name, *save = NULL;

		n = 0;
		/* ls /sys/kernel/slab | grep -x 'kmalloc-[0-9]*k\{0,1\}' */
		if (!all || ap_grep(all, "^kmalloc-[0-9]*k\\{0,1\\}$", 0, &list) <= 0) {
			free(all);
			free(list);
			return NULL;
		}
		free(all);
		for (name = strtok_r(list, "\n", &save); name && n < 16;
		     name = strtok_r(NULL, "\n", &save)) {
			char path[96], buf[32];

			snprintf(path, sizeof(path), "/sys/kernel/slab/%s/object_size", name);
			if (ap_read_file(path, buf, sizeof(buf)) <= 0)
				continue;
			snprintf(names[n], sizeof(names[n]), "%s", name);
			sizes[n++] = atoll(buf);
		}
		free(list);
	}
	for (i = 0; i < n; i++) {
		if (sizes[i] >= size && (best < 0 || sizes[i] < best)) {
			best = sizes[i];
			pick = i;
		}
	}
	return pick < 0 ? NULL : names[pick];
}

int ap_vmalloc_unit(long long bytes, long long *total, unsigned long long *calls)
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

int ap_own_lines(long long bytes, unsigned long long calls)
{
	struct ap_lines w = AP_LINES(AP_ALLOCINFO, 0);
	struct ap_info_line l;
	int n = 0;

	while (ap_info_next(&w, &l)) {
		char file[256];

		if (l.figures && sscanf(l.tag, "%255s", file) == 1 && l.bytes == bytes &&
		    l.calls == calls && !strncmp(file, "src/", 4) &&
		    strstr(l.text, " [allocprof] func:"))
			n++;
	}
	return ap_lines_end(&w) ? -1 : n;
}

int ap_kvmalloc_figures(long long size, long long *bytes, unsigned long long *calls)
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

int ap_possible_cpus(void)
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

static int ap_ls_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *ap_ls(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, *out = NULL;
	size_t n = 0, i, len = 0;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char **more;

		if (e->d_name[0] == '.')
			continue;
		more = realloc(names, (n + 1) * sizeof(*names));
		if (!more || !(more[n] = strdup(e->d_name))) {
			names = more ? more : names;
			goto out;
		}
		names = more;
		len += strlen(names[n++]) + 1;
	}
	qsort(names, n, sizeof(*names), ap_ls_cmp);
	out = malloc(len + 1);
	if (out) {
		for (i = 0, len = 0; i < n; i++)
			len += sprintf(out + len, "%s\n", names[i]);
		out[len] = '\0';
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return out;
}

long ap_grep_file(const char *path, const char *pattern, int flags, char **out)
{
	return ap_grep_free(ap_slurp(path, NULL), pattern, flags, out);
}

void ap_print_lines(const char *text)
{
	while (text && *text) {
		int l = strcspn(text, "\n");

		ksft_print_msg("%.*s\n", l, text);
		text += l + !!text[l];
	}
}

int ap_copy_file(const char *from, const char *to)
{
	size_t len;
	char *text = ap_slurp(from, &len);
	int fd, err = 0;

	if (!text)
		return -EIO;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		err = -errno;
	} else {
		ssize_t n = write(fd, text, len);

		err = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
		close(fd);
	}
	free(text);
	return err;
}

long long ap_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

long long ap_meminfo_kb(const char *field)
{
	char buf[8192], *line, *save = NULL;
	size_t l = strlen(field);

	if (ap_read_file("/proc/meminfo", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line + l + 1, *digits;

		if (strncmp(line, field, l) || line[l] != ':')
			continue;
		while (*p == ' ')
			p++;
		digits = p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p > digits && !strncmp(p, " kB", 3))
			return atoll(digits);
	}
	return -1;
}

long long ap_ram_end(void)
{
	char *text = ap_slurp("/proc/iomem", NULL), *line, *save = NULL, *last = NULL;
	long long end = -1;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "System RAM"))
			last = line;
	/* Its END: the hex digits after "  START-" and before a space. */
	if (last) {
		char *p = last + strspn(last, " "), *hex;

		p += strspn(p, "0123456789abcdef");
		if (*p == '-') {
			hex = p + 1;
			p = hex + strspn(hex, "0123456789abcdef");
			if (*p == ' ' && p > hex)
				end = strtoll(hex, NULL, 16);
		}
	}
	free(text);
	return end;
}

int ap_unit(const struct ap_testsite *s, long long *bytes, unsigned long long *calls)
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

int ap_testsite_unit(const char *name, long long *bytes, unsigned long long *calls)
{
	struct ap_testsite sites[32];
	int i, n = ap_testsites(sites, 32);

	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].name, name))
			return ap_unit(&sites[i], bytes, calls);
	return -1;
}

int ap_test_alloc(const char *site, unsigned int count)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u", site, count);
	return ap_write_file(AP_TESTDIR "/alloc", cmd, strlen(cmd));
}

int ap_test_free(const char *site)
{
	return ap_write_file(AP_TESTDIR "/free", site, strlen(site));
}

int ap_test_free_first(const char *site, unsigned int n)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u first", site, n);
	return ap_write_file(AP_TESTDIR "/free", cmd, strlen(cmd));
}

int ap_test_free_n(const char *site, unsigned int n)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%.31s %u", site, n);
	return ap_write_file(AP_TESTDIR "/free", cmd, strlen(cmd));
}

int ap_expect_in(const char *module, const char *func, long long bytes,
		 unsigned long long calls)
{
	struct ap_fig f = ap_site(module, func);

	if (f.found == 1 && f.bytes == bytes && f.calls == calls)
		return 1;
	ksft_print_msg("%s: found %d line(s), %lld bytes %llu calls; expected %lld %llu\n",
		       func, f.found, f.bytes, f.calls, bytes, calls);
	return 0;
}

int ap_expect(const char *func, long long bytes, unsigned long long calls)
{
	return ap_expect_in("allocprof_test", func, bytes, calls);
}

int ap_builtin_profiler(void)
{
	static int builtin = -1;

	if (builtin < 0) {
		/* grep -q ' alloc_tag_backend_register$' /proc/kallsyms, line by line. */
		static const char sym[] = " alloc_tag_backend_register";
		FILE *f = fopen("/proc/kallsyms", "r");
		char *line = NULL;
		size_t size = 0;
		ssize_t l;

		builtin = 1;
		while (f && builtin && (l = getline(&line, &size, f)) > 0) {
			if (line[l - 1] == '\n')
				line[--l] = '\0';
			builtin = (size_t)l < strlen(sym) || strcmp(line + l - strlen(sym), sym);
		}
		free(line);
		if (f)
			fclose(f);
	}
	return builtin;
}

int ap_finit(int fd, const char *params)
{
	return syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
}

int ap_delete(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

int ap_kernel_major(void)
{
	struct utsname u;

	return uname(&u) == 0 ? atoi(u.release) : 0;
}

int ap_kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

/* The running kernel's modules: /lib/modules/<release>. */
static void ap_modules_dir(char *dir, size_t size)
{
	struct utsname u;

	uname(&u);
	snprintf(dir, size, "/lib/modules/%s", u.release);
}

void ap_module_path(const char *name, char *path, size_t size)
{
	char dir[128];

	ap_modules_dir(dir, sizeof(dir));
	snprintf(path, size, "%s/extra/%s.ko", dir, name);
}

/* finit_module(2) of the module file at path with params; 0 or -errno. */
static int ap_finit_path(const char *path, const char *params)
{
	int err, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	err = ap_finit(fd, params ? params : "");
	close(fd);
	return err;
}

int ap_insmod(const char *name, const char *params)
{
	char path[256];

	ap_module_path(name, path, sizeof(path));
	return ap_finit_path(path, params);
}

/*
 * Appends to opts (size bytes) what busybox's modprobe takes from the
 * kernel's command line for module name: every word "name.param=value"
 * as "param=value", in order, each after a space.  A word ends at a
 * blank, or just after the double quote that closes a quoted part (so a
 * quoted value keeps its spaces and its quotes).  0, or -E2BIG.
 */
static int ap_cmdline_options(const char *name, char *opts, size_t size)
{
	char cmdline[4096], *p = cmdline, *s;
	size_t n = strlen(name);

	if (ap_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		return 0;
	while (*p) {
		char *word = p;

		for (s = p; *s && !strchr(" \t\n", *s); s++) {
			if (*s == '"') {
				s = strchrnul(s + 1, '"');
				if (*s)
					s++;
				break;
			}
		}
		p = *s ? s + 1 : s;
		*s = '\0';
		if (!strncmp(word, name, n) && word[n] == '.' && strchr(word + n + 1, '=')) {
			size_t l = strlen(opts);

			if ((size_t)snprintf(opts + l, size - l, "%s%s", l ? " " : "",
					     word + n + 1) >= size - l)
				return -E2BIG;
		}
	}
	return 0;
}

/*
 * One module of a modprobe: file (as modules.dep names it, under dir)
 * unless it is loaded, with the command line's options for it and then
 * params; EEXIST is success.  0 or -errno.
 */
static int ap_modprobe_one(const char *dir, const char *file, const char *params)
{
	char name[64], path[512], opts[4096] = "";
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t l;
	int err;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(base, "."), base);
	for (l = 0; name[l]; l++)
		if (name[l] == '-')
			name[l] = '_';
	if (ap_module_loaded(name))
		return 0;
	err = ap_cmdline_options(name, opts, sizeof(opts));
	l = strlen(opts);
	if (!err && params && *params &&
	    (size_t)snprintf(opts + l, sizeof(opts) - l, "%s%s", l ? " " : "", params) >=
		    sizeof(opts) - l)
		err = -E2BIG;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!err)
		err = ap_finit_path(path, opts);
	return err == -EEXIST ? 0 : err;
}

int ap_modprobe(const char *name, const char *params)
{
	char dir[128], path[256], want[80], *deps, *line, *save = NULL, *words[16];
	int n = 0, err;

	if (ap_module_loaded(name))
		return 0;
	ap_modules_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/modules.dep", dir);
	snprintf(want, sizeof(want), "%s.ko", name);
	deps = ap_slurp(path, NULL);
	/* Its line of modules.dep: "extra/NAME.ko: DEPENDENCY.ko ...". */
	for (line = deps ? strtok_r(deps, "\n", &save) : NULL; line && !n;
	     line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *base, *word, *wsave = NULL;

		if (!colon)
			continue;
		*colon = '\0';
		base = strrchr(line, '/') ? strrchr(line, '/') + 1 : line;
		if (strcmp(base, want))
			continue;
		words[n++] = line;
		for (word = strtok_r(colon + 1, " \t", &wsave); word && n < 16;
		     word = strtok_r(NULL, " \t", &wsave))
			words[n++] = word;
	}
	/* Its dependencies from the last, then the module itself. */
	err = n ? 0 : -ENOENT;
	for (; n > 1 && !err; n--)
		err = ap_modprobe_one(dir, words[n - 1], NULL);
	if (!err)
		err = ap_modprobe_one(dir, words[0], params);
	free(deps);
	if (err)
		ksft_print_msg("modprobe %s%s%s: %s\n", name, params ? " " : "",
			       params ? params : "", strerror(-err));
	return err;
}

int ap_rmmod(const char *name)
{
	int err = ap_delete(name);

	if (err)
		ksft_print_msg("rmmod %s: %s\n", name, strerror(-err));
	return err;
}

/*
 * "cat /proc/allocinfo /sys/kernel/debug/allocprof/<every file> >/dev/null;
 * echo 'func ap_load_matches_nothing +p' >/sys/kernel/debug/allocprof/control":
 * each file opened, read to its end and closed, in ls's order; errors ignored.
 */
static void ap_touch_files(void)
{
	static const char dir[] = "/sys/kernel/debug/allocprof";
	static const char cmd[] = "func ap_load_matches_nothing +p\n";
	char *names = ap_ls(dir), *name, *save = NULL;

	free(ap_slurp(AP_ALLOCINFO, NULL));
	for (name = names ? strtok_r(names, "\n", &save) : NULL; name;
	     name = strtok_r(NULL, "\n", &save)) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		free(ap_slurp(path, NULL));
	}
	free(names);
	ap_write_file(AP_CONTROL, cmd, strlen(cmd));
}

int ap_load(const char *args)
{
	if (ap_builtin_profiler())
		return ap_module_loaded("allocprof_test") ||
		       !ap_modprobe("allocprof_test", NULL) ? 0 : -1;
	if (ap_module_loaded("allocprof") && ap_rmmod("allocprof"))
		return -1;
	if (ap_modprobe("allocprof", args))
		return -1;
	/*
	 * allocprof's own Rust lines show from their first allocation (its
	 * module's lines are kept, not listed, while it is unloaded): with its
	 * files read once and a command that matches nothing written to its
	 * control file, the lines of those paths are there before a test
	 * compares two listings.
	 */
	ap_touch_files();
	if (!ap_module_loaded("allocprof_test") && ap_modprobe("allocprof_test", NULL))
		return -1;
	return 0;
}

int ap_unload_all(void)
{
	static const char *const mods[] = { "allocprof_churn", "allocprof_test2", "allocprof_test",
					     "allocprof_rust_test", "allocprof_rust_many", "allocprof_rust_moved",
					     "allocprof" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mods); i++) {
		if (ap_module_loaded(mods[i]) && ap_rmmod(mods[i])) {
			ksft_print_msg("cannot unload %s, left by an earlier test\n", mods[i]);
			return -1;
		}
	}
	return 0;
}

int ap_start(const char *args)
{
	return ap_unload_all() ? -1 : ap_load(args);
}

int ap_node_figures(const char *text, const char *tail,
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

int ap_flags_in(const char *module, const char *func, char *flags, size_t size)
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

int ap_flags_of(const char *func, char *flags, size_t size)
{
	return ap_flags_in("allocprof_test", func, flags, size);
}

int ap_flags_are_in(const char *module, const char *func, const char *want)
{
	char flags[8] = "";

	if (ap_flags_in(module, func, flags, sizeof(flags)) && !strcmp(flags, want))
		return 1;
	ksft_print_msg("%s %s: flags '%s', expected '%s'\n", module, func, flags, want);
	return 0;
}

int ap_flags_are(const char *func, const char *want)
{
	return ap_flags_are_in("allocprof_test", func, want);
}

int ap_chains_in(const char *module, const char *func, struct ap_chain *out,
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

int ap_chains_of(const char *func, struct ap_chain *out, int max)
{
	return ap_chains_in("allocprof_test", func, out, max);
}

int ap_chain_sum_in(const char *module, const char *func, long long *bytes,
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

int ap_chain_sum(const char *func, long long *bytes, unsigned long long *calls)
{
	return ap_chain_sum_in("allocprof_test", func, bytes, calls);
}

void ap_size_text(unsigned long long size, char *buf, size_t len)
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

long ap_grep(const char *text, const char *pattern, int flags, char **out)
{
	size_t tlen = strlen(text), olen = 0;
	char *pats = strdup(pattern), *copy = strdup(text), *p, *next;
	const char *fixed[AP_GREP_MAX];
	regex_t re[AP_GREP_MAX];
	/* The lines, and a newline after a last one that has none. */
	char *o = out ? malloc(tlen + 2) : NULL;
	int np = 0, i, bad = !pats || !copy || (out && !o);
	struct ap_lines w;
	struct ap_info_line l;
	long n = 0;

	/* The patterns, one a line, as grep -e P1 -e P2 ... takes them. */
	for (p = pats; !bad && p; p = next) {
		next = strchr(p, '\n');
		if (next)
			*next++ = '\0';
		if (np == AP_GREP_MAX ||
		    (!(flags & AP_GREP_FIXED) && regcomp(&re[np], p, REG_NOSUB)))
			bad = 1;
		else
			fixed[np++] = p;
	}
	/* Each line, empty ones too, without its newline: grep's regexec() of busybox. */
	ap_lines_of(&w, copy, bad ? 0 : tlen, AP_LINES_EVERY);
	while (ap_lines_next(&w, &l)) {
		int match = 0;

		for (i = 0; i < np && !match; i++)
			match = flags & AP_GREP_FIXED ? strstr(l.text, fixed[i]) != NULL :
							!regexec(&re[i], l.text, 0, NULL, 0);
		if (!match == !(flags & AP_GREP_INVERT))
			continue;
		n++;
		if (o) {
			memcpy(o + olen, l.text, l.len);
			olen += l.len;
			o[olen++] = '\n';
		}
	}
	ap_lines_end(&w);
	if (!(flags & AP_GREP_FIXED))
		for (i = 0; i < np; i++)
			regfree(&re[i]);
	free(pats);
	free(copy);
	if (o)
		o[olen] = '\0';
	if (out)
		*out = bad ? NULL : o;
	if (bad) {
		free(o);
		return -1;
	}
	return n;
}

long ap_grep_free(char *text, const char *pattern, int flags, char **out)
{
	long n = -1;

	if (out)
		*out = NULL;
	if (text)
		n = ap_grep(text, pattern, flags, out);
	free(text);
	return n;
}

char *ap_klog(int flags)
{
	int size = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0), len, in = 0, out = 0, last = '\n';
	char *buf;

	/* The buffer busybox's dmesg reads the log into. */
	if (size < 16 * 1024)
		size = 16 * 1024;
	if (size > 16 * 1024 * 1024)
		size = 16 * 1024 * 1024;
	buf = malloc(size + 2);
	if (!buf)
		return NULL;
	len = klogctl(flags & AP_KLOG_CLEAR ? SYSLOG_ACTION_READ_CLEAR : SYSLOG_ACTION_READ_ALL,
		      buf, size);
	if (len < 0) {
		free(buf);
		return NULL;
	}
	/* As busybox's dmesg prints it: without the "<level>" at a line's start. */
	while (in < len) {
		if (last == '\n' && buf[in] == '<') {
			while (buf[in++] != '>' && in < len)
				;
		} else {
			last = buf[in++];
			buf[out++] = last;
		}
	}
	if (len > 0 && last != '\n')
		buf[out++] = '\n';
	buf[out] = '\0';
	if (flags & AP_KLOG_NO_TIME)
		ap_klog_untime(buf);
	return buf;
}

void ap_klog_untime(char *text)
{
	char *in = text, *out = text;

	while (*in) {
		size_t l = strcspn(in, "\n"), t = 0;

		if (in[0] == '[') {
			t = strcspn(in, "]\n");
			t = in[t] == ']' && in[t + 1] == ' ' ? t + 2 : 0;
		}
		l += !!in[l];
		memmove(out, in + t, l - t);
		out += l - t;
		in += l;
	}
	*out = '\0';
}

int ap_klog_clear(void)
{
	return klogctl(SYSLOG_ACTION_CLEAR, NULL, 0) < 0 ? -errno : 0;
}

long ap_klog_grep(const char *pattern, int flags, char **out)
{
	return ap_grep_free(ap_klog(flags & AP_KLOG_CLEAR), pattern, flags, out);
}

long ap_klog_grep2(const char *pattern, int flags, const char *pattern2, int flags2)
{
	char *lines;
	long n = ap_klog_grep(pattern, flags, &lines);

	if (n > 0)
		n = ap_grep(lines, pattern2, flags2, NULL);
	free(lines);
	return n;
}

long ap_klog_last(const char *pattern, int flags, char *line, size_t size)
{
	char *lines, *last;
	long n = ap_klog_grep(pattern, flags, &lines);

	line[0] = '\0';
	if (n > 0) {
		lines[strlen(lines) - 1] = '\0';
		last = strrchr(lines, '\n');
		snprintf(line, size, "%s", last ? last + 1 : lines);
	}
	free(lines);
	return n;
}

int ap_logged(const char *text)
{
	return ap_klog_grep(text, AP_GREP_FIXED | AP_KLOG_CLEAR, NULL) > 0;
}

int ap_control_unchanged(const char *before)
{
	char *now = ap_slurp(AP_CONTROL, NULL), *was = before ? strdup(before) : NULL;
	char *b, *n, *bsave = NULL, *nsave = NULL;
	int same = was && now;

	b = same ? strtok_r(was, "\n", &bsave) : NULL;
	for (n = same ? strtok_r(now, "\n", &nsave) : NULL; n; n = strtok_r(NULL, "\n", &nsave)) {
		size_t l = strlen(n);

		if (b && !strcmp(b, n))
			b = strtok_r(NULL, "\n", &bsave);
		else if (l < 3 || strcmp(n + l - 3, " =p"))
			same = 0;
	}
	if (b)
		same = 0;
	free(now);
	free(was);
	return same;
}
