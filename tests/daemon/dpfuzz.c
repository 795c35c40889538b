/*
 * dpfuzz: hostile frames against a running lttng-dynprobed, on its client
 * socket or its app socket (test-fuzz.sh).
 *
 *   dpfuzz GOLDEN PROTO SOCKET SEED FRAMES [TIMEOUT_MS [HOLD]]
 *
 * GOLDEN is tests/proto/golden.txt (every message of both protocols as
 * bytes), PROTO "client" or "app".  FRAMES frames are sent, over
 * connections of one to four frames each: golden messages as they are,
 * with bytes flipped, inserted or removed, with a header field changed
 * (magic, major, minor, type, seq, a length too small, too big or above the
 * maximum), cut anywhere (the connection then closes mid-frame), headers
 * with random payloads, and random bytes.  On the app socket half the
 * connections start with a well-formed HELLO, so that the daemon goes on
 * to its requests, which get the fuzzed frames as replies.
 *
 * After its frames, a connection shuts its writing side down, or closes at
 * once, and reads whatever the daemon sends until the daemon closes, within
 * TIMEOUT_MS (default 10000; as the daemon's own timeouts, leaving out
 * the time this process could not run): a connection still open then is a
 * hang.
 * Everything derives from SEED: the same seed sends the same bytes.
 *
 * With HOLD, FRAMES is ignored: HOLD connections at once each send part of
 * a golden frame and keep the connection open, writing nothing more; the
 * daemon must close each one itself within TIMEOUT_MS.
 *
 * Prints one line of counts; exits 0, 1 when a connection hung or could
 * not be made (saying which, with its number), 2 on bad arguments.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"

#define MAX_GOLDEN 64
#define MAX_FRAME 4096

struct golden {
	char name[64];
	uint8_t *bytes;
	size_t len;
};

static struct golden golden[MAX_GOLDEN];
static size_t ngolden;
static int hello = -1;		/* the app HELLO's index */
static uint64_t rng;

/* xorshift64*: small, and the same sequence everywhere for one seed. */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static int load_golden(const char *path, const char *proto)
{
	char line[8192], kind[16], name[64], hex[8000];
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "dpfuzz: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && ngolden < MAX_GOLDEN) {
		struct golden *g = &golden[ngolden];
		size_t n, i;

		if (sscanf(line, "%15s %63s %7999s", kind, name, hex) != 3 || strcmp(kind, proto))
			continue;
		n = strlen(hex) / 2;
		g->bytes = malloc(n);
		if (!g->bytes)
			break;
		for (i = 0; i < n; i++) {
			unsigned v;

			sscanf(hex + 2 * i, "%2x", &v);
			g->bytes[i] = (uint8_t)v;
		}
		g->len = n;
		snprintf(g->name, sizeof(g->name), "%s", name);
		if (!strcmp(name, "HELLO"))
			hello = (int)ngolden;
		ngolden++;
	}
	fclose(f);
	if (!ngolden) {
		fprintf(stderr, "dpfuzz: no %s message in %s\n", proto, path);
		return -1;
	}
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* One frame into buf: its length.  *cut is set when the frame is cut. */
static size_t make_frame(uint8_t *buf, uint32_t max_payload, int *cut)
{
	const struct golden *g = &golden[below(ngolden)];
	size_t len = g->len, i, n;
	uint32_t kind = below(100);

	memcpy(buf, g->bytes, len);
	*cut = 0;
	if (kind < 10) {
		/* as it is */
	} else if (kind < 40) {
		/* bytes flipped, anywhere but the magic */
		n = 1 + below(8);
		for (i = 0; i < n; i++)
			buf[4 + below(len - 4)] = (uint8_t)rnd();
	} else if (kind < 50) {
		/* bytes inserted or removed in the payload, length kept or not */
		size_t at = 16 + below(len - 16 + 1), k = 1 + below(16);

		if (below(2) && at + k <= len) {
			memmove(buf + at, buf + at + k, len - at - k);
			len -= k;
		} else if (len + k <= MAX_FRAME) {
			memmove(buf + at + k, buf + at, len - at);
			for (i = 0; i < k; i++)
				buf[at + i] = (uint8_t)rnd();
			len += k;
		}
		if (below(2))
			put32(buf + 8, (uint32_t)(len - 16));
	} else if (kind < 70) {
		/* one header field */
		switch (below(8)) {
		case 0: put32(buf, (uint32_t)rnd()); break;			/* magic */
		case 1: buf[4] = (uint8_t)(buf[4] + 1 + below(255)); break;	/* major */
		case 2: buf[5] = (uint8_t)rnd(); break;				/* minor */
		case 3: buf[6] = (uint8_t)rnd(); buf[7] = (uint8_t)rnd(); break;	/* type */
		case 4: put32(buf + 12, (uint32_t)rnd()); break;		/* seq */
		case 5: put32(buf + 8, (uint32_t)(len - 16) - 1 - below(8)); break; /* short */
		case 6: put32(buf + 8, (uint32_t)(len - 16) + 1 + below(64)); break; /* long */
		default:							/* too big */
			put32(buf + 8, below(2) ? max_payload + 1 + below(1000) : (uint32_t)rnd() | 0x80000000u);
			break;
		}
	} else if (kind < 85) {
		/* cut anywhere: the connection closes after it */
		len = below(len);
		*cut = 1;
	} else if (kind < 95) {
		/* a golden header, of any type, with a random payload */
		n = below(256);
		buf[6] = (uint8_t)below(16);
		buf[7] = below(4) ? 0 : 0x80;
		for (i = 0; i < n; i++)
			buf[16 + i] = (uint8_t)rnd();
		put32(buf + 8, (uint32_t)n);
		len = 16 + n;
	} else {
		/* random bytes */
		len = below(64);
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
	}
	return len;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;	/* the daemon closed: that is its right */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads until the daemon closes: 0, or -1 when timeout_ms passed first.
 * The time this process could not run is not counted, as the daemon does
 * not count it in its own frame timeout (deadline.h). */
static int drain(int fd, int timeout_ms, unsigned long long *bytes)
{
	uint8_t buf[65536];
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (dp_deadline_poll(&pfd, 1, &d) <= 0)
			return -1;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;	/* closed (or reset) */
		*bytes += (unsigned long long)n;
	}
}

/* HOLD connections stalled mid-frame: 0 when the daemon closed them all. */
static int hold(const struct sockaddr_un *sa, int n, int timeout_ms, unsigned long long seed)
{
	unsigned long long rbytes = 0;
	int fds[256], i, hung = 0;

	if (n < 1 || n > 256) {
		fprintf(stderr, "dpfuzz: HOLD must be 1 to 256\n");
		return 2;
	}
	for (i = 0; i < n; i++) {
		const struct golden *g = &golden[below(ngolden)];

		fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || connect(fds[i], (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
			fprintf(stderr, "dpfuzz: held connection %d: cannot connect to %s: %s\n", i,
				sa->sun_path, strerror(errno));
			return 1;
		}
		/* at least one byte, never the whole frame */
		write_all(fds[i], g->bytes, 1 + below(g->len - 1));
	}
	printf("dpfuzz: holding %d connections\n", n);
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if (drain(fds[i], timeout_ms, &rbytes) < 0)
			hung++;
		close(fds[i]);
	}
	printf("dpfuzz: seed=%llu held=%d still-open=%d timeout_ms=%d\n", seed, n, hung, timeout_ms);
	return hung ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	unsigned long long seed, frames, sent = 0, conns = 0, cuts = 0, closed = 0, rbytes = 0,
			   unsent = 0;
	uint32_t max_payload;
	int timeout_ms = 10000, app;
	uint8_t buf[MAX_FRAME];

	if (argc < 6 || argc > 8 || (strcmp(argv[2], "client") && strcmp(argv[2], "app"))) {
		fprintf(stderr, "usage: dpfuzz GOLDEN client|app SOCKET SEED FRAMES [TIMEOUT_MS [HOLD]]\n");
		return 2;
	}
	app = !strcmp(argv[2], "app");
	max_payload = app ? 8u << 20 : 16u << 20;
	seed = strtoull(argv[4], NULL, 0);
	frames = strtoull(argv[5], NULL, 0);
	if (argc >= 7)
		timeout_ms = atoi(argv[6]);
	if (strlen(argv[3]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "dpfuzz: socket path too long: %s\n", argv[3]);
		return 2;
	}
	strcpy(sa.sun_path, argv[3]);
	if (load_golden(argv[1], argv[2]) < 0)
		return 2;
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	if (!rng)
		rng = 1;
	if (argc == 8)
		return hold(&sa, atoi(argv[7]), timeout_ms, seed);

	while (sent < frames) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		uint32_t i, nframes = 1 + below(4);
		int cut = 0, dead = 0;

		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			fprintf(stderr, "dpfuzz: connection %llu: cannot connect to %s: %s\n", conns,
				sa.sun_path, strerror(errno));
			return 1;
		}
		conns++;
		if (app && hello >= 0 && below(2)) {
			dead = write_all(fd, golden[hello].bytes, golden[hello].len) < 0;
			sent++;
		}
		/* Every frame is made, even after the daemon closed, so that
		 * the seed alone says what is sent. */
		for (i = 0; i < nframes && !cut && sent < frames; i++) {
			size_t len = make_frame(buf, max_payload, &cut);

			if (dead)
				unsent++;
			else
				dead = write_all(fd, buf, len) < 0;
			sent++;
		}
		cuts += cut;
		if (cut || below(4) == 0) {
			/* closed at once, whatever the daemon was reading */
			closed++;
			close(fd);
			continue;
		}
		shutdown(fd, SHUT_WR);
		if (drain(fd, timeout_ms, &rbytes) < 0) {
			fprintf(stderr, "dpfuzz: seed %llu: connection %llu still open %d ms after its last frame (frame %llu): a hang\n",
				seed, conns, timeout_ms, sent);
			return 1;
		}
		close(fd);
	}
	printf("dpfuzz: proto=%s seed=%llu frames=%llu connections=%llu cut=%llu closed-at-once=%llu after-daemon-closed=%llu reply-bytes=%llu\n",
	       argv[2], seed, sent, conns, cuts, closed, unsent, rbytes);
	return 0;
}
