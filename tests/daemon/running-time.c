/*
 * running-time: how long a command took, leaving out the time this machine
 * stood still (a virtual machine its host did not run, a SIGSTOP).
 *
 *   running-time FILE COMMAND [ARG...]
 *
 * Runs COMMAND, checking the clock every 20 ms while it runs: a gap of more
 * than DP_DEADLINE_STALL_MS between two checks is a stop, left out as the
 * product's own waits leave it out (deadline.h).  Writes
 * "ran_ms=R wall_ms=W stopped_ms=S" to FILE, and exits with COMMAND's
 * status (128 + the signal that ended it; 127 when it cannot run).  A
 * test's bound on R then fails for the command, never for the machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "deadline.h"

int main(int argc, char **argv)
{
	struct dp_deadline d;
	int64_t t0, wall;
	int status = 0;
	pid_t pid, r;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: running-time FILE COMMAND [ARG...]\n");
		return 2;
	}
	t0 = dp_now_ms();
	dp_deadline_start(&d, -1, NULL);	/* none: only its stops count */
	pid = fork();
	if (pid < 0) {
		perror("running-time: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "running-time: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		dp_deadline_left(&d);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		usleep(20000);
	}
	wall = dp_now_ms() - t0;
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "ran_ms=%" PRId64 " wall_ms=%" PRId64 " stopped_ms=%" PRId64 "\n",
			  wall - d.forgiven, wall, d.forgiven) < 0 || fclose(f)) {
		fprintf(stderr, "running-time: cannot write %s: %s\n", argv[1], strerror(errno));
		return 127;
	}
	if (r != pid)
		return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
