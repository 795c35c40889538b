/*
 * dpstall: a process that says HELLO on the app socket like an agent, then
 * never answers the daemon's requests, but keeps it talking: every
 * INTERVAL_MS it sends a MAPPED (as an agent does after a dlopen), each one
 * well inside the daemon's read timeout (test-stall.sh).  A daemon's call
 * must end by its own deadline all the same.
 *
 *   dpstall SOCKET INTERVAL_MS
 *
 * Prints "hello" when HELLO_REPLY comes, "request TYPE at=MS" for each
 * request of the daemon's (not answered), "mapped N" after each MAPPED
 * sent, and "closed at=MS" when the daemon closes the connection (then
 * exits 0); MS: CLOCK_MONOTONIC in milliseconds.  Exits 2 on errors.
 *
 *   dpstall SOCKET flood NCONN
 *
 * A flood of large HELLOs instead (test-stall.sh, as another user): NCONN
 * connections, one after the other, each sending a HELLO that reports
 * DP_APP_MAX_PROBES probes with the longest event names (17 MB), all kept
 * open until served; prints "frame BYTES", then "sent N closed M served K"
 * (M: connections the daemon closed before taking the whole frame; K: those
 * it answered HELLO_REPLY).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/app.h"
#include "proto/frame.h"
#include "proto/wire.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "dpstall: cannot connect to %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int flood(const char *path, int nconn)
{
	struct dp_app_msg hello = { .type = DP_APP_HELLO, .seq = 1 };
	struct dp_app_probe *probes = calloc(DP_APP_MAX_PROBES, sizeof(*probes));
	int sent = 0, closed = 0, served = 0, *fds = calloc((size_t)nconn + 1, sizeof(int));
	struct dp_wbuf w;

	if (!probes || !fds)
		return 2;
	for (uint32_t i = 0; i < DP_APP_MAX_PROBES; i++) {
		probes[i].id = i + 1;
		probes[i].site = 0x400000 + i;
		memset(probes[i].event, 'f', sizeof(probes[i].event) - 1);
	}
	hello.hello.major = DP_APP_MAJOR;
	hello.hello.minor = DP_APP_MINOR;
	hello.hello.pid = (uint32_t)getpid();
	hello.hello.probe_hit = (uint64_t)(uintptr_t)&flood;
	hello.hello.state.nprobes = DP_APP_MAX_PROBES;
	hello.hello.state.probes = probes;
	if (dp_app_encode(&hello, &w)) {
		fprintf(stderr, "dpstall: cannot encode the HELLO\n");
		return 2;
	}
	printf("frame %zu\n", w.len);
	fflush(stdout);
	for (int i = 0; i < nconn; i++) {
		int fd = connect_to(path);

		fds[i] = -1;
		if (fd < 0) {
			closed++;
			continue;
		}
		/* Kept open until the daemon served it or closed it. */
		if (dp_frame_write_all(fd, w.data, w.len, 20000)) {
			closed++;
			close(fd);
		} else {
			sent++;
			fds[i] = fd;
		}
	}
	for (int i = 0; i < nconn; i++) {
		struct dp_app_msg m;
		enum dp_proto_err why;

		if (fds[i] < 0)
			continue;
		if (!dp_app_recv(fds[i], &m, 120000, &why)) {
			served += m.type == DP_APP_HELLO_REPLY;
			dp_app_msg_release(&m);
		}
		close(fds[i]);
	}
	printf("sent %d closed %d served %d\n", sent, closed, served);
	fflush(stdout);
	dp_wbuf_release(&w);
	free(probes);
	free(fds);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dp_app_msg hello = { .type = DP_APP_HELLO, .seq = 1 };
	bool said_hello = false;
	uint64_t nmapped = 0;
	int64_t next = 0;
	int fd, interval;

	if (argc == 4 && !strcmp(argv[2], "flood"))
		return flood(argv[1], atoi(argv[3]));
	if (argc != 3 || (interval = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: dpstall SOCKET INTERVAL_MS | dpstall SOCKET flood NCONN\n");
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "dpstall: cannot connect to %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	hello.hello.major = DP_APP_MAJOR;
	hello.hello.minor = DP_APP_MINOR;
	hello.hello.pid = (uint32_t)getpid();
	hello.hello.probe_hit = (uint64_t)(uintptr_t)&main;
	snprintf(hello.hello.agent_version, sizeof(hello.hello.agent_version), "stall");
	if (dp_app_send(fd, &hello, DP_APP_TIMEOUT_MS)) {
		fprintf(stderr, "dpstall: cannot send HELLO\n");
		return 2;
	}
	for (;;) {
		struct dp_app_msg m;
		enum dp_proto_err why;
		int wait = 100, ret;

		if (said_hello && next && now_ms() >= next) {
			struct dp_app_msg mp = { .type = DP_APP_MAPPED, .seq = 1000 + (uint32_t)nmapped };

			mp.mapped = ++nmapped;
			if (dp_app_send(fd, &mp, DP_APP_TIMEOUT_MS)) {
				printf("closed\n");
				return 0;
			}
			printf("mapped %llu\n", (unsigned long long)nmapped);
			fflush(stdout);
			next = now_ms() + interval;
		}
		ret = dp_app_recv(fd, &m, wait, &why);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			continue;
		if (ret == -EPROTO && !dp_proto_err_fatal(why))
			continue;
		if (ret) {
			printf("closed at=%lld\n", (long long)now_ms());
			return 0;
		}
		if (m.type == DP_APP_HELLO_REPLY) {
			printf("hello\n");
			said_hello = true;
		} else if (!(m.type & DP_FRAME_REPLY)) {
			printf("request %s at=%lld\n",
			       dp_app_type_name(m.type) ? dp_app_type_name(m.type) : "?",
			       (long long)now_ms());
			/* Not answered; the MAPPED begin. */
			if (!next)
				next = now_ms() + interval;
		}
		fflush(stdout);
		dp_app_msg_release(&m);
	}
}
