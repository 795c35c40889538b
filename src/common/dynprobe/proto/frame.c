/*
 * Frame headers, receiver errors, what every protocol does alike with them
 * (headers in and out, reply checks), and blocking transfers with deadlines
 * (see frame.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deadline.h"
#include "proto/frame.h"
#include "proto/wire.h"

static const char *const err_str[DP_PROTO_ERR__COUNT] = {
	[DP_PROTO_ERR_NONE] = "no error",
	[DP_PROTO_ERR_MAGIC] = "not a message of this protocol (bad magic)",
	[DP_PROTO_ERR_VERSION] = "another major protocol version",
	[DP_PROTO_ERR_TOO_BIG] = "message longer than the protocol allows",
	[DP_PROTO_ERR_EOF] = "connection closed in the middle of a message",
	[DP_PROTO_ERR_TYPE] = "unknown message type",
	[DP_PROTO_ERR_TRUNCATED] = "message shorter than its fields",
	[DP_PROTO_ERR_TRAILING] = "unexpected bytes after the message's fields",
	[DP_PROTO_ERR_BOUNDS] = "a count or a string length above its bound",
	[DP_PROTO_ERR_STRING] = "a string is empty or holds a NUL byte",
	[DP_PROTO_ERR_VALUE] = "a field holds a value it may not have",
};

const char *dp_proto_err_str(enum dp_proto_err err)
{
	if ((unsigned)err >= DP_PROTO_ERR__COUNT)
		return "unknown protocol error";
	return err_str[err];
}

bool dp_proto_err_fatal(enum dp_proto_err err)
{
	switch (err) {
	case DP_PROTO_ERR_MAGIC:
	case DP_PROTO_ERR_VERSION:
	case DP_PROTO_ERR_TOO_BIG:
	case DP_PROTO_ERR_EOF:
		return true;
	default:
		return false;
	}
}

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void dp_frame_hdr_encode(const struct dp_frame_hdr *h, uint8_t out[DP_FRAME_HDR_LEN])
{
	put_le(out, h->magic, 4);
	out[4] = h->major;
	out[5] = h->minor;
	put_le(out + 6, h->type, 2);
	put_le(out + 8, h->len, 4);
	put_le(out + 12, h->seq, 4);
}

/* A header against a protocol; a REFUSE of another major passes if refuse_any. */
static int hdr_check(const struct dp_frame_hdr *h, uint32_t magic, uint8_t major,
		     uint32_t max_len, bool refuse_any, enum dp_proto_err *why)
{
	if (h->magic != magic)
		*why = DP_PROTO_ERR_MAGIC;
	else if (h->major != major && !(refuse_any && h->type == DP_FRAME_REFUSE))
		*why = DP_PROTO_ERR_VERSION;
	else if (h->len > max_len)
		*why = DP_PROTO_ERR_TOO_BIG;
	else
		*why = DP_PROTO_ERR_NONE;
	return *why ? -EPROTO : 0;
}

int dp_frame_hdr_decode(const uint8_t in[DP_FRAME_HDR_LEN], uint32_t magic, uint8_t major,
			uint32_t max_len, struct dp_frame_hdr *h, enum dp_proto_err *why)
{
	struct dp_rbuf r;

	dp_rbuf_init(&r, in, DP_FRAME_HDR_LEN);
	h->magic = dp_rbuf_u32(&r);
	h->major = dp_rbuf_u8(&r);
	h->minor = dp_rbuf_u8(&r);
	h->type = dp_rbuf_u16(&r);
	h->len = dp_rbuf_u32(&r);
	h->seq = dp_rbuf_u32(&r);
	return hdr_check(h, magic, major, max_len, false, why);
}

void dp_frame_begin(struct dp_wbuf *w, const struct dp_frame_proto *p, uint16_t type,
		    uint32_t seq)
{
	struct dp_frame_hdr h = {
		.magic = p->magic, .major = p->major, .minor = p->minor, .type = type, .seq = seq,
	};
	uint8_t raw[DP_FRAME_HDR_LEN];

	dp_wbuf_init(w, DP_FRAME_HDR_LEN + (size_t)p->max_payload);
	dp_frame_hdr_encode(&h, raw);
	dp_wbuf_bytes(w, raw, sizeof(raw));
}

int dp_frame_end(struct dp_wbuf *w, enum dp_proto_err check)
{
	if (check != DP_PROTO_ERR_NONE)
		return -EINVAL;
	if (w->err)
		return w->err;
	/* The length field, at offset 8. */
	dp_wbuf_set_u32(w, 8, (uint32_t)(w->len - DP_FRAME_HDR_LEN));
	return 0;
}

int dp_frame_check(const struct dp_frame_proto *p, const struct dp_frame_hdr *h,
		   enum dp_proto_err *why)
{
	return hdr_check(h, p->magic, p->major, p->max_payload, true, why);
}

int dp_frame_split(const struct dp_frame_proto *p, const uint8_t *buf, size_t len,
		   struct dp_frame_hdr *h, enum dp_proto_err *why)
{
	int ret;

	memset(h, 0, sizeof(*h));
	if (len < DP_FRAME_HDR_LEN) {
		*why = DP_PROTO_ERR_TRUNCATED;
		return -EPROTO;
	}
	ret = dp_frame_hdr_decode(buf, p->magic, p->major, p->max_payload, h, why);
	if (ret && *why == DP_PROTO_ERR_MAGIC) {
		memset(h, 0, sizeof(*h));
		return ret;
	}
	/* A REFUSE of another major version is read all the same (its length
	 * is checked by the decoder, after the frame's). */
	if (ret && !(*why == DP_PROTO_ERR_VERSION && h->type == DP_FRAME_REFUSE))
		return ret;
	if (len - DP_FRAME_HDR_LEN != h->len) {
		*why = len - DP_FRAME_HDR_LEN < h->len ? DP_PROTO_ERR_TRUNCATED
						       : DP_PROTO_ERR_TRAILING;
		return -EPROTO;
	}
	*why = DP_PROTO_ERR_NONE;
	return 0;
}

int dp_frame_check_reply(uint16_t req_type, uint32_t req_seq, uint16_t type, uint32_t seq,
			 enum dp_proto_err *why)
{
	if (type == DP_FRAME_REFUSE)
		return -ECONNREFUSED;
	if (seq != req_seq ||
	    (type != DP_FRAME_UNSUPPORTED && type != (uint16_t)(req_type | DP_FRAME_REPLY))) {
		*why = DP_PROTO_ERR_VALUE;
		return -EPROTO;
	}
	return type == DP_FRAME_UNSUPPORTED ? -EOPNOTSUPP : 0;
}

/* Waits for `events` on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, struct dp_deadline *d)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret = dp_deadline_poll(&pfd, 1, d);

	/* ready, or an error the transfer will report */
	return ret > 0 ? 0 : ret == 0 ? -ETIMEDOUT : ret;
}

static int write_until(int fd, const uint8_t *p, size_t len, struct dp_deadline *d)
{
	while (len) {
		/* MSG_DONTWAIT: a partial write never blocks past the deadline;
		 * MSG_NOSIGNAL: a gone peer is an error, not SIGPIPE in the host. */
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		n = wait_fd(fd, POLLOUT, d);
		if (n)
			return (int)n;
	}
	return 0;
}

/* 0, or -ECONNRESET at end of file before any byte, -EPROTO after some. */
static int read_until(int fd, uint8_t *p, size_t len, struct dp_deadline *d)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, p + got, len - got, MSG_DONTWAIT);

		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			return got ? -EPROTO : -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		n = wait_fd(fd, POLLIN, d);
		if (n)
			return (int)n;
	}
	return 0;
}

/*
 * A large frame gets more time: the deadline's timeout more for each whole
 * MiB, three times at most (a 1.1 MB DEFINE_PROBES between a daemon and an
 * agent that a loaded machine rarely schedules took more than 5 s).  The
 * bound stays a bound: 4 x the timeout at most.
 */
static int64_t frame_allowance(const struct dp_deadline *d, size_t len)
{
	size_t mib = len >> 20;

	if (d->end < 0 || d->timeout_ms < 0)
		return 0;
	return (int64_t)d->timeout_ms * (int64_t)(mib < 3 ? mib : 3);
}

int dp_frame_write_all_until(int fd, const void *buf, size_t len, struct dp_deadline *d)
{
	int64_t more = frame_allowance(d, len);
	int ret;

	d->end += more;
	ret = write_until(fd, buf, len, d);
	d->end -= more;
	return ret;
}

int dp_frame_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return dp_frame_write_all_until(fd, buf, len, &d);
}

int dp_frame_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return read_until(fd, buf, len, &d);
}

static int recv_until(int fd, uint32_t magic, uint8_t major, uint32_t max_len,
		      struct dp_deadline *d, struct dp_frame_hdr *h, uint8_t **payload,
		      enum dp_proto_err *why)
{
	uint8_t raw[DP_FRAME_HDR_LEN];
	uint8_t *buf = NULL;
	int ret;

	*payload = NULL;
	*why = DP_PROTO_ERR_NONE;
	ret = read_until(fd, raw, sizeof(raw), d);
	if (ret == -EPROTO)
		*why = DP_PROTO_ERR_EOF;
	if (ret)
		return ret;
	ret = dp_frame_hdr_decode(raw, magic, major, max_len, h, why);
	/* Another major's frame is still read whole, so that its refusal can be
	 * shown; its length is bounded all the same. */
	if (ret && (*why != DP_PROTO_ERR_VERSION || h->len > max_len))
		return ret;
	if (h->len) {
		int64_t more = frame_allowance(d, DP_FRAME_HDR_LEN + h->len);

		buf = malloc(h->len);
		if (!buf)
			return -ENOMEM;
		d->end += more;
		ret = read_until(fd, buf, h->len, d);
		d->end -= more;
		if (ret) {
			free(buf);
			if (ret == -EPROTO || ret == -ECONNRESET) {
				*why = DP_PROTO_ERR_EOF;
				return -EPROTO;
			}
			return ret;
		}
	}
	*payload = buf;
	return *why ? -EPROTO : 0;
}

int dp_frame_recv(int fd, uint32_t magic, uint8_t major, uint32_t max_len, int timeout_ms,
		  struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return recv_until(fd, magic, major, max_len, &d, h, payload, why);
}

int dp_frame_recv_msg_until(int fd, const struct dp_frame_proto *p, struct dp_deadline *d,
			    struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why)
{
	int ret = recv_until(fd, p->magic, p->major, p->max_payload, d, h, payload, why);

	/* dp_frame_recv has read the payload of a REFUSE of another major
	 * version, unless it is too long (the decoder then refuses it so). */
	if (ret == -EPROTO && *why == DP_PROTO_ERR_VERSION && h->type == DP_FRAME_REFUSE) {
		*why = DP_PROTO_ERR_NONE;
		return 0;
	}
	if (!ret)
		return 0;
	free(*payload);
	*payload = NULL;
	if (ret != -EPROTO || (*why != DP_PROTO_ERR_VERSION && *why != DP_PROTO_ERR_TOO_BIG))
		memset(h, 0, sizeof(*h));
	return ret;
}

int dp_frame_recv_msg(int fd, const struct dp_frame_proto *p, int timeout_ms,
		      struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return dp_frame_recv_msg_until(fd, p, &d, h, payload, why);
}
