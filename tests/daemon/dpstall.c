/*
 * dpstall: a process that says HELLO on the app socket like an agent, then
 * never answers the daemon's requests, but keeps it talking: every
 * INTERVAL_MS it sends a MAPPED (as an agent does after a dlopen), each one
 * well inside the daemon's read timeout (test-stall.sh).  A daemon's call
 * must end by its own deadline all the same.
 *
 *   dpstall SOCKET INTERVAL_MS
 *
 * Prints "hello" when HELLO_REPLY comes, "request TYPE" for each request
 * of the daemon's (not answered), "mapped N" after each MAPPED sent, and
 * "closed" when the daemon closes the connection (then exits 0).  Exits 2
 * on errors.
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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dp_app_msg hello = { .type = DP_APP_HELLO, .seq = 1 };
	bool said_hello = false;
	uint64_t nmapped = 0;
	int64_t next = 0;
	int fd, interval;

	if (argc != 3 || (interval = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: dpstall SOCKET INTERVAL_MS\n");
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
			printf("closed\n");
			return 0;
		}
		if (m.type == DP_APP_HELLO_REPLY) {
			printf("hello\n");
			said_hello = true;
		} else if (!(m.type & DP_FRAME_REPLY)) {
			printf("request %s\n", dp_app_type_name(m.type) ? dp_app_type_name(m.type)
									 : "?");
			/* Not answered; the MAPPED begin. */
			if (!next)
				next = now_ms() + interval;
		}
		fflush(stdout);
		dp_app_msg_release(&m);
	}
}
