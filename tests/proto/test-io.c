/*
 * The app protocol on real sockets: whole messages across partial reads and
 * writes and EINTR, deadlines, a peer that goes away (never SIGPIPE), bad
 * frames refused before anything is allocated, an unknown request skipped
 * without losing the stream, request/reply calls, and the socket's path.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "proto/app.h"
#include "proto/codec.h"
#include "tap.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* An encoded frame, malloc'd. */
static uint8_t *frame_of(const struct dp_app_msg *m, size_t *len)
{
	struct dp_wbuf w;
	uint8_t *out = NULL;

	if (!dp_app_encode(m, &w)) {
		out = w.data;
		*len = w.len;
		w.data = NULL;
	}
	dp_wbuf_release(&w);
	return out;
}

/* ---- a peer thread: writes bytes slowly, or late -------------------------- */

struct writer {
	int fd;
	const uint8_t *bytes;
	size_t len;
	int delay_ms;		/* before writing */
	bool bytewise;		/* one byte at a time, 1 ms apart */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	usleep((useconds_t)w->delay_ms * 1000);
	for (size_t i = 0; i < w->len;) {
		size_t n = w->bytewise ? 1 : w->len - i;
		ssize_t r = write(w->fd, w->bytes + i, n);

		if (r <= 0)
			break;
		i += (size_t)r;
		if (w->bytewise)
			usleep(1000);
	}
	return NULL;
}

static void test_round_trip(void)
{
	struct dp_app_msg m = { .type = DP_APP_PING, .seq = 5, .ping = 99 }, r;
	enum dp_proto_err why;
	int sv[2], ret;

	pair(sv);
	ret = dp_app_send(sv[0], &m, 1000);
	ret = ret ? ret : dp_app_recv(sv[1], &r, 1000, &why);
	tap_ok(!ret && r.type == DP_APP_PING && r.seq == 5 && r.ping == 99,
	       "a message crosses a socket whole");
	close(sv[0]);
	close(sv[1]);
}

static void test_bytewise(void)
{
	struct dp_app_msg m = { .type = DP_APP_NOTE_REMOVED, .seq = 8, .note_removed = 0x401000 };
	struct dp_app_msg r;
	enum dp_proto_err why;
	struct writer w;
	pthread_t th;
	size_t len = 0;
	uint8_t *f = frame_of(&m, &len);
	int sv[2], ret;

	pair(sv);
	w = (struct writer){ .fd = sv[0], .bytes = f, .len = len, .bytewise = true };
	pthread_create(&th, NULL, writer_main, &w);
	ret = dp_app_recv(sv[1], &r, 5000, &why);
	pthread_join(th, NULL);
	tap_ok(!ret && r.type == DP_APP_NOTE_REMOVED && r.note_removed == 0x401000,
	       "a frame arriving one byte at a time is read whole (%zu reads)", len);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

/* A LIST reply of several MiB: far beyond a socket's buffer, so both sides
 * go through many partial transfers. */
struct big_reader {
	int fd;
	int ret;
	struct dp_app_msg m;
	enum dp_proto_err why;
};

static void *big_reader_main(void *arg)
{
	struct big_reader *b = arg;

	b->ret = dp_app_recv(b->fd, &b->m, 10000, &b->why);
	return NULL;
}

static void test_big(void)
{
	struct dp_app_msg m = { .type = DP_APP_LIST_REPLY, .seq = 3 };
	struct dp_app_state *s = &m.list_reply;
	struct big_reader b = { 0 };
	pthread_t th;
	int sv[2], ret;
	bool same = true;

	s->nprobes = DP_APP_MAX_PROBES;
	s->probes = calloc(s->nprobes, sizeof(*s->probes));
	for (uint32_t i = 0; i < s->nprobes; i++) {
		s->probes[i].id = i + 1;
		s->probes[i].site = 0x400000 + i;
		memset(s->probes[i].event, 'a' + i % 26, sizeof(s->probes[i].event) - 1);
		s->probes[i].hits = i * 7;
	}
	pair(sv);
	b.fd = sv[1];
	pthread_create(&th, NULL, big_reader_main, &b);
	ret = dp_app_send(sv[0], &m, 10000);
	pthread_join(th, NULL);
	if (!b.ret && b.m.list_reply.nprobes == s->nprobes) {
		for (uint32_t i = 0; i < s->nprobes && same; i++)
			same = b.m.list_reply.probes[i].hits == i * 7 &&
			       !strcmp(b.m.list_reply.probes[i].event, s->probes[i].event);
	} else {
		same = false;
	}
	tap_ok(!ret && !b.ret && same, "a %u-probe LIST reply crosses in pieces, intact",
	       s->nprobes);
	dp_app_msg_release(&b.m);
	free(s->probes);
	close(sv[0]);
	close(sv[1]);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

static void test_eintr(void)
{
	struct dp_app_msg m = { .type = DP_APP_PING, .seq = 1, .ping = 1234 }, r;
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } }, off = { { 0, 0 }, { 0, 0 } };
	enum dp_proto_err why;
	struct writer w;
	pthread_t th;
	size_t len = 0;
	uint8_t *f = frame_of(&m, &len);
	int sv[2], ret;
	sigset_t block, prev;

	/* No SA_RESTART: every alarm interrupts the waiting call with EINTR.
	 * The writer thread blocks SIGALRM, so that the alarms reach us. */
	sigaction(SIGALRM, &sa, &old);
	pair(sv);
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &block, &prev);
	w = (struct writer){ .fd = sv[0], .bytes = f, .len = len, .delay_ms = 300 };
	pthread_create(&th, NULL, writer_main, &w);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	alarms = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	ret = dp_app_recv(sv[1], &r, 5000, &why);
	setitimer(ITIMER_REAL, &off, NULL);
	pthread_join(th, NULL);
	sigaction(SIGALRM, &old, NULL);
	tap_ok(!ret && r.ping == 1234 && alarms > 5,
	       "a receive interrupted by %d signals goes on to the whole message", (int)alarms);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

/* The upper time bounds below only catch a wait that never ends: this
 * machine's scheduler has stalled a test thread for 5 s at load 5. */
static void test_timeouts(void)
{
	struct dp_app_msg r, big = { .type = DP_APP_LIST_REPLY };
	enum dp_proto_err why;
	uint8_t hdr[DP_FRAME_HDR_LEN];
	struct dp_frame_hdr h = { DP_APP_MAGIC, DP_APP_MAJOR, DP_APP_MINOR, DP_APP_PING, 8, 1 };
	int64_t t0, dt;
	int sv[2], ret;

	pair(sv);
	t0 = now_ms();
	ret = dp_app_recv(sv[1], &r, 150, &why);
	dt = now_ms() - t0;
	tap_ok(ret == -ETIMEDOUT && dt >= 140 && dt < 10000,
	       "a silent peer: -ETIMEDOUT after %lld ms (150 asked)", (long long)dt);

	/* Half a message, then silence: the deadline covers the whole frame. */
	dp_frame_hdr_encode(&h, hdr);
	if (write(sv[0], hdr, sizeof(hdr)) != sizeof(hdr))
		abort();
	ret = dp_app_recv(sv[1], &r, 150, &why);
	tap_ok(ret == -ETIMEDOUT, "a frame stopped half-way: -ETIMEDOUT (%d)", ret);
	close(sv[0]);
	close(sv[1]);

	/* A peer that never reads: sending blocks no longer than asked. */
	pair(sv);
	big.list_reply.nprobes = DP_APP_MAX_PROBES;
	big.list_reply.probes = calloc(DP_APP_MAX_PROBES, sizeof(struct dp_app_probe));
	for (uint32_t i = 0; i < DP_APP_MAX_PROBES; i++) {
		big.list_reply.probes[i].id = 1;
		strcpy(big.list_reply.probes[i].event, "e");
	}
	t0 = now_ms();
	ret = dp_app_send(sv[0], &big, 200);
	dt = now_ms() - t0;
	tap_ok(ret == -ETIMEDOUT && dt < 10000,
	       "a peer that does not read: the send gives up after %lld ms", (long long)dt);
	free(big.list_reply.probes);
	close(sv[0]);
	close(sv[1]);
}

struct paced {
	int fd;
	const uint8_t *bytes;
	size_t len, chunk;
	int pause_ms;		/* between chunks */
};

static void *paced_main(void *arg)
{
	struct paced *w = arg;

	for (size_t i = 0; i < w->len;) {
		size_t n = w->len - i < w->chunk ? w->len - i : w->chunk;
		/* The reader may have given up: an error, not SIGPIPE. */
		ssize_t r = send(w->fd, w->bytes + i, n, MSG_NOSIGNAL);

		if (r <= 0)
			break;
		i += (size_t)r;
		usleep((useconds_t)w->pause_ms * 1000);
	}
	return NULL;
}

/* recv of a frame of `payload` bytes written in `chunks` chunks, `pause_ms`
 * apart, with a timeout of timeout_ms: its result, the time in *dt. */
static int paced_recv(size_t payload, unsigned chunks, int pause_ms, int timeout_ms,
		      int64_t *dt)
{
	struct dp_frame_hdr h = { DP_APP_MAGIC, DP_APP_MAJOR, DP_APP_MINOR, DP_APP_PING,
				  (uint32_t)payload, 1 }, got;
	uint8_t *bytes = calloc(1, DP_FRAME_HDR_LEN + payload), *p = NULL;
	struct paced w;
	enum dp_proto_err why;
	pthread_t t;
	int sv[2], ret;
	int64_t t0;

	pair(sv);
	dp_frame_hdr_encode(&h, bytes);
	w = (struct paced){ sv[0], bytes, DP_FRAME_HDR_LEN + payload,
			    (DP_FRAME_HDR_LEN + payload + chunks - 1) / chunks, pause_ms };
	t0 = now_ms();
	pthread_create(&t, NULL, paced_main, &w);
	ret = dp_frame_recv(sv[1], DP_APP_MAGIC, DP_APP_MAJOR, 8u << 20, timeout_ms, &got, &p,
			    &why);
	*dt = now_ms() - t0;
	close(sv[1]);
	pthread_join(t, NULL);
	close(sv[0]);
	free(p);
	free(bytes);
	return ret;
}

/* A large frame gets time for its size; a small one as slow does not. */
static void test_large_frame_time(void)
{
	int64_t dt;
	int ret;

	/* 2.5 MiB in 8 chunks 60 ms apart: ~420 ms, timeout 250 ms (+2 x 250). */
	ret = paced_recv(5u << 19, 8, 60, 250, &dt);
	tap_ok(ret == 0, "a 2.5 MiB frame that takes %lld ms arrives with a 250 ms timeout (%d)",
	       (long long)dt, ret);
	ret = paced_recv(64u << 10, 8, 60, 250, &dt);
	tap_ok(ret == -ETIMEDOUT && dt < 10000,
	       "a 64 KiB frame as slow does not: -ETIMEDOUT after %lld ms (%d)", (long long)dt, ret);
	/* 8 MiB: +3 x 250 at most, never more; half of it never comes. */
	ret = paced_recv(8u << 20, 2, 5000, 250, &dt);
	tap_ok(ret == -ETIMEDOUT && dt >= 950 && dt < 10000,
	       "an 8 MiB frame stopped half-way: -ETIMEDOUT after %lld ms (bound 1000)",
	       (long long)dt);
}

static void test_peer_gone(void)
{
	struct dp_app_msg m = { .type = DP_APP_PING, .ping = 1 }, r;
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	uint8_t half[DP_FRAME_HDR_LEN + 4];
	size_t len = 0;
	uint8_t *f = frame_of(&m, &len);
	int sv[2], ret;

	pair(sv);
	close(sv[0]);
	ret = dp_app_recv(sv[1], &r, 1000, &why);
	tap_ok(ret == -ECONNRESET, "a peer closed between messages: -ECONNRESET (%d)", ret);
	/* SIGPIPE keeps its default action: if it were raised, this test
	 * would die here. */
	signal(SIGPIPE, SIG_DFL);
	ret = dp_app_send(sv[1], &m, 1000);
	tap_ok(ret == -ECONNRESET, "sending to it: -ECONNRESET, and no SIGPIPE (%d)", ret);
	close(sv[1]);

	pair(sv);
	memcpy(half, f, sizeof(half));
	if (write(sv[0], half, sizeof(half)) != sizeof(half))
		abort();
	close(sv[0]);
	ret = dp_app_recv(sv[1], &r, 1000, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_EOF && dp_proto_err_fatal(why),
	       "a peer closed in the middle of a frame: %s", dp_proto_err_str(why));
	close(sv[1]);
	free(f);
}

/* Writes raw bytes and receives: the return and why. */
static int recv_raw(const uint8_t *bytes, size_t len, struct dp_app_msg *r,
		    enum dp_proto_err *why)
{
	int sv[2], ret;

	pair(sv);
	if (write(sv[0], bytes, len) != (ssize_t)len)
		abort();
	ret = dp_app_recv(sv[1], r, 1000, why);
	close(sv[0]);
	close(sv[1]);
	return ret;
}

static void test_bad_frames(void)
{
	struct dp_app_msg m = { .type = DP_APP_PING, .seq = 4, .ping = 1 }, r;
	struct dp_app_msg refuse = { .type = DP_APP_REFUSE, .seq = 9 };
	enum dp_proto_err why;
	size_t len = 0;
	uint8_t *f = frame_of(&m, &len), *g;
	int ret;

	f[1] ^= 0xff;
	ret = recv_raw(f, len, &r, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_MAGIC, "a bad magic on the wire: %s",
	       dp_proto_err_str(why));
	f[1] ^= 0xff;

	/* 4 GiB announced: refused from the header, nothing allocated. */
	put_u32(f + 8, 0xffffffffu);
	ret = recv_raw(f, len, &r, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_TOO_BIG && r.type == DP_APP_PING,
	       "a 4 GiB length on the wire: %s", dp_proto_err_str(why));
	put_u32(f + 8, 8);

	f[4] = DP_APP_MAJOR + 1;
	ret = recv_raw(f, len, &r, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_VERSION && r.major == DP_APP_MAJOR + 1 &&
	       r.seq == 4,
	       "another major version on the wire: %s, with its version", dp_proto_err_str(why));
	free(f);

	refuse.refuse.major = DP_APP_MAJOR;
	strcpy(refuse.refuse.reason, "daemon speaks 2.0");
	g = frame_of(&refuse, &len);
	g[4] = DP_APP_MAJOR + 1;
	ret = recv_raw(g, len, &r, &why);
	tap_ok(!ret && r.type == DP_APP_REFUSE && !strcmp(r.refuse.reason, "daemon speaks 2.0"),
	       "a REFUSE of another major version is received with its reason");
	free(g);
}

/* An unknown request, then a PING, in one write: the first is refused
 * alone, the second is read in step. */
static void test_unknown_then_known(void)
{
	struct dp_app_msg m = { .type = DP_APP_PING, .seq = 2, .ping = 31 }, r;
	struct dp_frame_hdr h = { DP_APP_MAGIC, DP_APP_MAJOR, DP_APP_MINOR + 1, 0x0077, 5, 1 };
	enum dp_proto_err why;
	uint8_t buf[256] = { 0 };
	size_t len = 0;
	uint8_t *f = frame_of(&m, &len);
	int sv[2], ret;

	dp_frame_hdr_encode(&h, buf);
	memcpy(buf + DP_FRAME_HDR_LEN + 5, f, len);
	pair(sv);
	if (write(sv[0], buf, DP_FRAME_HDR_LEN + 5 + len) != (ssize_t)(DP_FRAME_HDR_LEN + 5 + len))
		abort();
	ret = dp_app_recv(sv[1], &r, 1000, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_TYPE && !dp_proto_err_fatal(why) &&
	       r.type == 0x0077 && r.seq == 1 && r.minor == DP_APP_MINOR + 1,
	       "a request of a newer minor version: unknown type, not fatal, seq kept");
	ret = dp_app_recv(sv[1], &r, 1000, &why);
	tap_ok(!ret && r.type == DP_APP_PING && r.ping == 31,
	       "and the message after it is read in step");
	close(sv[0]);
	close(sv[1]);
	free(f);
}

/* ---- dp_app_call against a scripted peer -------------------------------- */

enum peer_script { ANSWER, UNSUPPORTED, WRONG_SEQ, REFUSE, NEWER_REQUEST_FIRST, MAPPED_FIRST,
		   MAPPED_TRICKLE, MAPPED_FLOOD };

struct peer {
	int fd;
	enum peer_script script;
	bool got_unsupported;	/* NEWER_REQUEST_FIRST: our unknown request was refused */
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	struct dp_app_msg req, rep = { 0 };
	enum dp_proto_err why;

	if (dp_app_recv(p->fd, &req, 2000, &why))
		return NULL;
	rep.seq = req.seq;
	switch (p->script) {
	case ANSWER:
		rep.type = DP_APP_PING_REPLY;
		rep.ping = req.ping + 1;
		break;
	case UNSUPPORTED:
		rep.type = DP_APP_UNSUPPORTED;
		rep.unsupported = req.type;
		break;
	case WRONG_SEQ:
		rep.type = DP_APP_PING_REPLY;
		rep.seq = req.seq + 1;
		break;
	case REFUSE:
		rep.type = DP_APP_REFUSE;
		strcpy(rep.refuse.reason, "no");
		break;
	case MAPPED_FIRST: {
		/* The agent's own request (a dlopen) before its reply. */
		struct dp_app_msg m = { .type = DP_APP_MAPPED, .seq = 5, .mapped = 9 };

		dp_app_send(p->fd, &m, 1000);
		m.mapped = 10;
		m.seq = 6;
		dp_app_send(p->fd, &m, 1000);
		rep.type = DP_APP_PING_REPLY;
		rep.ping = req.ping + 1;
		break;
	}
	case MAPPED_TRICKLE:
		/* A MAPPED every 500 ms, each well inside a read's timeout
		 * (the call's, 2 s), six of them before the reply: 3 s. */
	case MAPPED_FLOOD:
		/* More requests than a call serves, at once, then the reply. */
		for (int i = 0; i < (p->script == MAPPED_FLOOD ? DP_CODEC_MAX_PEER_REQUESTS + 8 : 6);
		     i++) {
			struct dp_app_msg m = { .type = DP_APP_MAPPED, .seq = 1000 + i };

			m.mapped = 1 + (uint64_t)i;
			if (p->script == MAPPED_TRICKLE)
				usleep(500000);
			dp_app_send(p->fd, &m, 1000);
		}
		rep.type = DP_APP_PING_REPLY;
		rep.ping = req.ping + 1;
		break;
	case NEWER_REQUEST_FIRST: {
		struct dp_frame_hdr h = { DP_APP_MAGIC, DP_APP_MAJOR, DP_APP_MINOR, 0x0066, 0, 77 };
		struct dp_app_msg back;
		uint8_t hdr[DP_FRAME_HDR_LEN];

		dp_frame_hdr_encode(&h, hdr);
		dp_frame_write_all(p->fd, hdr, sizeof(hdr), 1000);
		p->got_unsupported = !dp_app_recv(p->fd, &back, 2000, &why) &&
				     back.type == DP_APP_UNSUPPORTED && back.seq == 77 &&
				     back.unsupported == 0x0066;
		rep.type = DP_APP_PING_REPLY;
		rep.ping = req.ping + 1;
		break;
	}
	}
	dp_app_send(p->fd, &rep, 1000);
	dp_app_msg_release(&req);
	return NULL;
}

/* What a call's callback saw: the MAPPED cookies, in order. */
struct seen_mapped {
	unsigned n, total;
	uint64_t cookies[4];
};

static void on_request(void *arg, struct dp_app_msg *m)
{
	struct seen_mapped *s = arg;

	s->total += m->type == DP_APP_MAPPED;
	if (m->type == DP_APP_MAPPED && s->n < 4)
		s->cookies[s->n++] = m->mapped;
}

static int run_call_cb(enum peer_script script, struct dp_app_msg *rep, enum dp_proto_err *why,
		       bool *got_unsupported, struct seen_mapped *seen)
{
	struct dp_app_msg req = { .type = DP_APP_PING, .ping = 41 };
	struct peer p = { .script = script };
	uint32_t seq = 100;
	pthread_t th;
	int sv[2], ret;

	pair(sv);
	p.fd = sv[1];
	pthread_create(&th, NULL, peer_main, &p);
	ret = seen ? dp_app_call_cb(sv[0], &req, &seq, rep, 2000, why, on_request, seen)
		   : dp_app_call(sv[0], &req, &seq, rep, 2000, why);
	pthread_join(th, NULL);
	if (got_unsupported)
		*got_unsupported = p.got_unsupported;
	close(sv[0]);
	close(sv[1]);
	return ret == 0 && seq != 101 ? -EINVAL : ret;
}

static int run_call(enum peer_script script, struct dp_app_msg *rep, enum dp_proto_err *why,
		    bool *got_unsupported)
{
	return run_call_cb(script, rep, why, got_unsupported, NULL);
}

static void test_calls(void)
{
	struct seen_mapped seen = { 0 };
	struct dp_app_msg rep;
	enum dp_proto_err why;
	bool got = false;
	int ret;

	ret = run_call(ANSWER, &rep, &why, NULL);
	tap_ok(!ret && rep.type == DP_APP_PING_REPLY && rep.ping == 42 && rep.seq == 100,
	       "a call gets the reply of its request");
	ret = run_call(UNSUPPORTED, &rep, &why, NULL);
	tap_ok(ret == -EOPNOTSUPP, "a call the peer does not know: -EOPNOTSUPP (%d)", ret);
	ret = run_call(WRONG_SEQ, &rep, &why, NULL);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_VALUE,
	       "a reply with another seq is refused: %d", ret);
	ret = run_call(REFUSE, &rep, &why, NULL);
	tap_ok(ret == -ECONNREFUSED && rep.type == DP_APP_REFUSE && !strcmp(rep.refuse.reason, "no"),
	       "a REFUSE ends the call with its reason: %d", ret);
	ret = run_call(NEWER_REQUEST_FIRST, &rep, &why, &got);
	tap_ok(!ret && rep.ping == 42 && got,
	       "an unknown request met while waiting is answered UNSUPPORTED, the call goes on");
	ret = run_call_cb(MAPPED_FIRST, &rep, &why, NULL, &seen);
	tap_ok(!ret && rep.type == DP_APP_PING_REPLY && rep.ping == 42 && seen.n == 2 &&
		       seen.cookies[0] == 9 && seen.cookies[1] == 10,
	       "two MAPPED met while waiting go to the callback in order (%u), then the reply (%d)",
	       seen.n, ret);
	ret = run_call(MAPPED_FIRST, &rep, &why, NULL);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_VALUE,
	       "without a callback, a known request in the reply's place is refused (%d)", ret);
	/* Again when no MAPPED came at all: the machine did not run the peer
	 * (a test thread once waited 5 s here), and the bound went untried. */
	for (int tries = 0; tries < 3; tries++) {
		seen = (struct seen_mapped){ 0 };
		ret = run_call_cb(MAPPED_TRICKLE, &rep, &why, NULL, &seen);
		if (seen.total)
			break;
	}
	tap_ok(ret == -ETIMEDOUT && seen.total >= 1 && seen.total < 6,
	       "a MAPPED every 500 ms for 3 s gives a call of 2 s no more time: -ETIMEDOUT (%d) "
	       "after %u of 6", ret, seen.total);
	seen = (struct seen_mapped){ 0 };
	ret = run_call_cb(MAPPED_FLOOD, &rep, &why, NULL, &seen);
	tap_ok(ret == -EOVERFLOW && seen.total == DP_CODEC_MAX_PEER_REQUESTS,
	       "%d requests while a call waits: the call ends after %d of them with -EOVERFLOW (%d)",
	       DP_CODEC_MAX_PEER_REQUESTS + 8, DP_CODEC_MAX_PEER_REQUESTS, ret);
}

/* ---- the socket's path -------------------------------------------------- */

static void test_path(void)
{
	char buf[256], longp[200];
	int ret;

	setenv("LTTNG_DYNPROBE_APP_SOCKET", "/tmp/x/app.sock", 1);
	ret = dp_app_socket_path(buf, sizeof(buf));
	tap_ok(!ret && !strcmp(buf, "/tmp/x/app.sock"), "LTTNG_DYNPROBE_APP_SOCKET wins: %s", buf);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	setenv("LTTNG_DYNPROBE_APP_SOCKET", longp, 1);
	ret = dp_app_socket_path(buf, sizeof(buf));
	tap_ok(ret == -ENAMETOOLONG, "a path longer than a sockaddr_un holds: -ENAMETOOLONG");
	unsetenv("LTTNG_DYNPROBE_APP_SOCKET");

	setenv("LTTNG_HOME", "/home/lh", 1);
	setenv("HOME", "/home/h", 1);
	if (geteuid() == 0) {
		ret = dp_app_socket_path(buf, sizeof(buf));
		tap_ok(!ret && !strcmp(buf, "/var/run/lttng/dynprobe-app.sock"),
		       "root: %s", buf);
		/* The user cases, as an unprivileged effective uid. */
		if (seteuid(65534)) {
			tap_ok(false, "seteuid(65534) for the user cases");
			return;
		}
	}
	ret = dp_app_socket_path(buf, sizeof(buf));
	tap_ok(!ret && !strcmp(buf, "/home/lh/.lttng/dynprobe-app.sock"), "a user: %s", buf);
	unsetenv("LTTNG_HOME");
	ret = dp_app_socket_path(buf, sizeof(buf));
	tap_ok(!ret && !strcmp(buf, "/home/h/.lttng/dynprobe-app.sock"),
	       "LTTNG_HOME defaults to HOME: %s", buf);
	unsetenv("HOME");
	ret = dp_app_socket_path(buf, sizeof(buf));
	tap_ok(ret == -ENOENT, "no home at all: -ENOENT (%d)", ret);
	if (getuid() == 0 && seteuid(0))
		tap_ok(false, "seteuid(0) back");
}

int main(void)
{
	test_round_trip();
	test_bytewise();
	test_big();
	test_eintr();
	test_timeouts();
	test_large_frame_time();
	test_peer_gone();
	test_bad_frames();
	test_unknown_then_known();
	test_calls();
	test_path();
	return tap_done();
}
