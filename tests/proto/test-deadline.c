/*
 * Deadlines that do not count the time the waiter was stopped (deadline.h):
 * the arithmetic on given times, then real waits on a socket by a process
 * that is stopped (SIGSTOP) past its deadline while its peer is stopped too.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "proto/frame.h"
#include "tap.h"

static struct dp_deadline at0(int timeout_ms, struct dp_deadline *outer)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, outer);
	d.end = timeout_ms < 0 ? -1 : timeout_ms;
	d.last = 0;
	return d;
}

static void arithmetic(void)
{
	struct dp_deadline d = at0(1000, NULL), o, i;
	int64_t t;

	tap_ok(dp_deadline_at(&d, 500) == 500, "500 ms into 1000: 500 left");
	tap_ok(dp_deadline_at(&d, 2400) == 0 && d.forgiven == 0,
	       "a gap of 1900 ms is waiting, not a stop: passed, nothing forgiven");
	d = at0(1000, NULL);
	dp_deadline_at(&d, 400);
	tap_ok(dp_deadline_at(&d, 400 + 2001) == 600 && d.forgiven == 2001,
	       "a gap of 2001 ms after a check at 400 is a stop: 600 ms still left");
	tap_ok(dp_deadline_at(&d, 3001) == 0, "... and the deadline passes 600 ms later");
	d = at0(1000, NULL);
	tap_ok(dp_deadline_at(&d, DP_DEADLINE_STALL_MS) == 0 && d.forgiven == 0,
	       "a gap of exactly DP_DEADLINE_STALL_MS is charged");

	/* Stops forgiven up to the bound, then charged: every wait ends. */
	d = at0(1000, NULL);
	for (t = 0; d.forgiven < DP_DEADLINE_STALL_MAX_MS && t < 100 * 60000; )
		dp_deadline_at(&d, t += 60000);
	tap_ok(d.forgiven == DP_DEADLINE_STALL_MAX_MS && d.end == 1000 + DP_DEADLINE_STALL_MAX_MS,
	       "stops are forgiven up to DP_DEADLINE_STALL_MAX_MS in all (%lld)",
	       (long long)d.forgiven);
	tap_ok(dp_deadline_at(&d, t + 60000) == 0, "a stop past that bound is charged: passed");

	/* Work charged: a long step is not a stop. */
	o = at0(10000, NULL);
	i = at0(-1, &o);
	dp_deadline_charge(&i);
	t = dp_now_ms() - 5000;
	o.last = i.last = t;
	o.end = t + 10000;
	dp_deadline_charge(&i);
	tap_ok(dp_deadline_left(&i) <= 5000 + 100 && o.forgiven == 0,
	       "5 s of work charged through a nested deadline: about 5 s left of 10, nothing "
	       "forgiven (%d)", dp_deadline_left(&i));

	d = at0(-1, NULL);
	tap_ok(dp_deadline_at(&d, 1 << 30) == -1 && dp_deadline_slice(&d) == -1,
	       "no deadline: -1 left, and a wait blocks");
	d = at0(100000, NULL);
	d.end = dp_now_ms() + 100000;
	d.last = dp_now_ms();
	tap_ok(dp_deadline_slice(&d) == DP_DEADLINE_SLICE_MS,
	       "a long deadline is waited in slices of DP_DEADLINE_SLICE_MS");

	/* Nested: the first to end wins; the inner one's checks are the
	 * outer one's, so that a long inner wait checked in slices is not
	 * taken for a stop by the outer. */
	o = at0(1000, NULL);
	i = at0(5000, &o);
	tap_ok(dp_deadline_at(&i, 100) == 900, "inside a deadline ending sooner: its time left");
	for (t = 100; t < 2500; t += 250)
		dp_deadline_at(&i, t);
	tap_ok(dp_deadline_at(&i, 2500) == 0 && o.forgiven == 0,
	       "the inner deadline's regular checks keep the outer one charged: passed");
	o = at0(-1, NULL);
	i = at0(1000, &o);
	tap_ok(dp_deadline_at(&i, 200) == 800, "inside none: its own time left");
	o = at0(1000, NULL);
	i = at0(-1, &o);
	tap_ok(dp_deadline_at(&i, 200) == 800, "none inside a deadline: the outer one's");
	tap_ok(dp_deadline_at(&i, 200 + 3000) == 800 && o.forgiven == 3000,
	       "a stop seen through the inner deadline is forgiven by the outer one");
}

/*
 * A child waits `timeout_ms` for one byte on a socket; its exit status says
 * what dp_frame_read_all returned (0: read, 1: -ETIMEDOUT, 2: other).  The
 * parent stops it for stop_ms once it waits (0: not at all), then sends the
 * byte send_ms after letting it go: a peer that was stopped along with it.
 */
static int waited(int timeout_ms, int stop_ms, int send_ms)
{
	int sv[2], ready[2], status;
	char c = 'x';
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe(ready))
		return -1;
	pid = tap_fork();
	if (pid == 0) {
		int ret;

		close(sv[0]);
		close(ready[0]);
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		ret = dp_frame_read_all(sv[1], &c, 1, timeout_ms);
		_exit(ret == 0 ? 0 : ret == -ETIMEDOUT ? 1 : 2);
	}
	close(sv[1]);
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1)
		return -1;
	if (stop_ms) {
		struct timespec ts = { stop_ms / 1000, (stop_ms % 1000) * 1000000L };

		kill(pid, SIGSTOP);
		nanosleep(&ts, NULL);
		kill(pid, SIGCONT);
	}
	{
		struct timespec ts = { send_ms / 1000, (send_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	/* The child may have given up and gone: no SIGPIPE here. */
	(void)send(sv[0], &c, 1, MSG_NOSIGNAL);
	close(sv[0]);
	close(ready[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int main(void)
{
	int r;

	arithmetic();
	r = waited(2000, 4000, 300);
	tap_ok(r == 0, "a wait of 2 s stopped for 4 s, its peer answering 300 ms after: "
	       "the byte is read (status %d)", r);
	/* A machine that itself stops the child for 2 s makes that try show
	 * nothing: up to 3 tries (a wait that forgave everything reads the
	 * byte every time). */
	for (int try = 1; try <= 3; try++) {
		r = waited(1000, 0, 2500);
		if (r == 1)
			break;
		tap_diag("try %d: the byte was read (status %d): the child stopped?", try, r);
	}
	tap_ok(r == 1, "a wait of 1 s, running all along, the byte 2.5 s later: -ETIMEDOUT "
	       "(status %d)", r);
	return tap_done();
}
