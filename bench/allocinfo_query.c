// SPDX-License-Identifier: GPL-2.0
/*
 * allocinfo_query: the cost of one filtered query of /proc/allocinfo, by
 * the text file or by its ioctl() interface (bench/guest.sh).
 *
 *   allocinfo_query CLOCK text|ioctl file NAME N
 *   allocinfo_query CLOCK text|ioctl minsize BYTES N
 *
 * Runs the query N times in this one process and prints
 * "ns=<guest ns for the N queries> records=<matches of the last one>";
 * CLOCK is a file whose contents are the guest's ns clock
 * (allocprof_bench's debugfs "now").  text reads the whole file and keeps
 * the lines of file NAME (as grep 'NAME:') or of at least BYTES bytes (as
 * awk '$1 >= BYTES'); ioctl asks the kernel for the same records
 * (ALLOCINFO_FILTER_MASK_FILENAME or _MIN_SIZE) with GET_AT and GET_NEXT.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/alloc_tag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static char buf[1 << 20];

static unsigned long long now(const char *clock)
{
	char t[32] = "";
	int fd = open(clock, O_RDONLY);

	if (fd < 0 || read(fd, t, sizeof(t) - 1) <= 0) {
		perror(clock);
		exit(1);
	}
	close(fd);
	return strtoull(t, NULL, 10);
}

static int by_text(int by_file, const char *name, unsigned long long min)
{
	char key[256];
	int fd = open("/proc/allocinfo", O_RDONLY), n = 0;
	size_t len = 0;
	ssize_t r;
	char *line, *save = NULL;

	if (fd < 0)
		return -1;
	while ((r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = '\0';
	snprintf(key, sizeof(key), " %s:", name);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (by_file ? strstr(line, key) != NULL : strtoll(line, NULL, 10) >= (long long)min)
			n++;
	}
	return n;
}

static int by_ioctl(int by_file, const char *name, unsigned long long min)
{
	struct allocinfo_get_at at;
	struct allocinfo_tag_data d;
	int fd = open("/proc/allocinfo", O_RDONLY), n = 0;

	if (fd < 0)
		return -1;
	memset(&at, 0, sizeof(at));
	if (by_file) {
		at.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME;
		snprintf(at.filter.fields.filename, sizeof(at.filter.fields.filename), "%s", name);
	} else {
		at.filter.mask = ALLOCINFO_FILTER_MASK_MIN_SIZE;
		at.filter.min_size = min;
	}
	if (!ioctl(fd, ALLOCINFO_IOC_GET_AT, &at)) {
		n++;
		while (!ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d))
			n++;
	}
	if (errno != ENOENT)
		n = -1;
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	unsigned long long t0, t1, min;
	int by_file, ioc, i, n = 0, count;

	if (argc != 6) {
		fprintf(stderr, "usage: %s CLOCK text|ioctl file NAME|minsize BYTES N\n", argv[0]);
		return 2;
	}
	ioc = !strcmp(argv[2], "ioctl");
	by_file = !strcmp(argv[3], "file");
	min = strtoull(argv[4], NULL, 10);
	count = atoi(argv[5]);
	t0 = now(argv[1]);
	for (i = 0; i < count; i++)
		n = ioc ? by_ioctl(by_file, argv[4], min) : by_text(by_file, argv[4], min);
	t1 = now(argv[1]);
	if (n < 0) {
		perror("query");
		return 1;
	}
	printf("ns=%llu records=%d\n", t1 - t0, n);
	return 0;
}
