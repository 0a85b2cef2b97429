// SPDX-License-Identifier: GPL-2.0
/*
 * hackbench GROUPS LOOPS: a whole-system load in the manner of hackbench:
 * processes exchanging messages, so that socket buffers, pipe buffers and
 * their slab objects churn, with the scheduler, fork and exit around them.
 *
 * Each group has SENDERS sender and RECEIVERS receiver processes; every
 * sender writes LOOPS messages of MSG_SIZE bytes to every receiver of its
 * group, every receiver reads all of them.  Even groups talk over AF_UNIX
 * stream socket pairs, odd groups over pipes.  Exits 0 when every message
 * arrived, 1 otherwise.  Built static on the host (bench/run) and run in
 * the guest by bench/guest.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SENDERS 4
#define RECEIVERS 4
#define MSG_SIZE 100

static void die(const char *what)
{
	fprintf(stderr, "hackbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A receiver: reads until every sender's messages are in. */
static void receiver(int fd, long loops)
{
	long want = SENDERS * loops * MSG_SIZE;
	char buf[MSG_SIZE];

	while (want > 0) {
		ssize_t n = read(fd, buf, want < MSG_SIZE ? want : MSG_SIZE);

		if (n <= 0)
			die("read");
		want -= n;
	}
	exit(0);
}

/* A sender: LOOPS messages to every receiver, in turn. */
static void sender(const int *fds, long loops)
{
	char msg[MSG_SIZE];

	memset(msg, 'x', sizeof(msg));
	for (long l = 0; l < loops; l++)
		for (int r = 0; r < RECEIVERS; r++) {
			size_t done = 0;

			while (done < sizeof(msg)) {
				ssize_t n = write(fds[r], msg + done, sizeof(msg) - done);

				if (n <= 0)
					die("write");
				done += n;
			}
		}
	exit(0);
}

static pid_t spawn(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	return pid;
}

int main(int argc, char **argv)
{
	long groups, loops;
	int failed = 0, status;

	if (argc != 3 || (groups = atol(argv[1])) <= 0 || (loops = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: hackbench GROUPS LOOPS\n");
		return 2;
	}
	for (long g = 0; g < groups; g++) {
		int rd[RECEIVERS], wr[RECEIVERS];

		for (int r = 0; r < RECEIVERS; r++) {
			int p[2];

			if (g % 2 == 0 ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
				die(g % 2 == 0 ? "socketpair" : "pipe");
			rd[r] = p[0];
			wr[r] = p[1];
		}
		for (int r = 0; r < RECEIVERS; r++)
			if (spawn() == 0) {
				for (int o = 0; o < RECEIVERS; o++) {
					close(wr[o]);
					if (o != r)
						close(rd[o]);
				}
				receiver(rd[r], loops);
			}
		for (int s = 0; s < SENDERS; s++)
			if (spawn() == 0) {
				for (int o = 0; o < RECEIVERS; o++)
					close(rd[o]);
				sender(wr, loops);
			}
		for (int r = 0; r < RECEIVERS; r++) {
			close(rd[r]);
			close(wr[r]);
		}
	}
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return failed;
}
