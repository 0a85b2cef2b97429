// SPDX-License-Identifier: GPL-2.0
/*
 * kmsg: the guest's reader of the kernel log (qemu/init).
 *
 *   kmsg OUT     copies every record of /dev/kmsg to OUT, from the first the
 *                kernel still has, until SIGUSR1; then reads what the kernel
 *                holds at that moment to its end and exits, printing
 *                "records=N first=F last=L lost=M" on stdout.
 *
 * Complete by construction, not by timing: the init sends SIGUSR1 once the
 * command has exited, when every record the command made the kernel write
 * is in the ring buffer.  The reader may not have been scheduled since the
 * last of them was written (a WARN() from the command's last act: killing
 * a "cat /dev/kmsg" then lost it, issue #40), so on the signal it reads on
 * without blocking until /dev/kmsg says there is nothing more (EAGAIN).
 * SIGUSR1 is blocked except inside ppoll(), so it cannot slip in between
 * the check of the flag and a wait.
 *
 * Records are numbered by the kernel (the "seq" field): a gap means records
 * were overwritten before they were read (or read returned EPIPE); they are
 * counted as lost, from seq 0 on, so the host can refuse an incomplete log.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* A record is at most 1 KiB of text plus its dictionary; 8 KiB as dmesg. */
	static char buf[8192];
	unsigned long long records = 0, lost = 0, next = 0;
	long long first = -1, last = -1;
	sigset_t block, during_wait;
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct pollfd pfd;
	int in, out;

	if (argc != 2) {
		fprintf(stderr, "usage: kmsg OUT\n");
		return 2;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &during_wait);
	sigdelset(&during_wait, SIGUSR1);
	sigaction(SIGUSR1, &sa, NULL);

	in = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (in < 0 || out < 0) {
		fprintf(stderr, "kmsg: %s: %s\n", in < 0 ? "/dev/kmsg" : argv[1], strerror(errno));
		return 1;
	}
	pfd.fd = in;
	pfd.events = POLLIN;
	for (;;) {
		int was_stopped = stop;
		ssize_t n = read(in, buf, sizeof(buf) - 1);
		unsigned long long seq;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten: the seq gap counts it */
		if (n < 0 && errno == EAGAIN) {
			if (was_stopped)
				break;
			if (ppoll(&pfd, 1, NULL, &during_wait) < 0 && errno != EINTR) {
				perror("kmsg: ppoll");
				return 1;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "kmsg: read: %s\n", n ? strerror(errno) : "end of file");
			return 1;
		}
		buf[n] = 0;
		if (sscanf(buf, "%*u,%llu,", &seq) != 1) {
			fprintf(stderr, "kmsg: a record without a sequence number: %.60s\n", buf);
			return 1;
		}
		if (seq > next)
			lost += seq - next;
		next = seq + 1;
		if (first < 0)
			first = seq;
		last = seq;
		records++;
		if (write_all(out, buf, n)) {
			fprintf(stderr, "kmsg: %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
	}
	printf("records=%llu first=%lld last=%lld lost=%llu\n", records, first, last, lost);
	return 0;
}
