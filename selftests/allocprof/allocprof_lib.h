/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the allocprof selftests: running guest commands,
 * reading and writing small files.
 */
#ifndef ALLOCPROF_LIB_H
#define ALLOCPROF_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"

/* Runs a shell command quietly; returns its exit status (or -1). */
static inline int ap_sh(const char *fmt, ...)
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

/* Reads a whole small file into buf; returns its length or -errno. */
static inline ssize_t ap_read_file(const char *path, char *buf, size_t size)
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

/* Writes len bytes to path in one write(); returns 0 or -errno. */
static inline int ap_write_file(const char *path, const void *data, size_t len)
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

/* Is the module loaded (listed in /proc/modules)? */
static inline int ap_module_loaded(const char *name)
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

#endif /* ALLOCPROF_LIB_H */
