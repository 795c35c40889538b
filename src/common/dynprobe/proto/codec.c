/*
 * The walker of codec.h: every protocol's messages encoded, decoded,
 * checked and released from their field tables, and moved over a socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "proto/codec.h"

/* ---- members, whatever their width ------------------------------------- */

static uint64_t load(const uint8_t *p, size_t n)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (n) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

static void store(uint8_t *p, size_t n, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (n) {
	case 1:
		memcpy(p, &u8, 1);
		break;
	case 2:
		memcpy(p, &u16, 2);
		break;
	case 4:
		memcpy(p, &u32, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

static void *load_ptr(const uint8_t *p)
{
	void *v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void store_ptr(uint8_t *p, void *v)
{
	memcpy(p, &v, sizeof(v));
}

/* Whether a side checks this field's DP_RANGE or DP_NONEMPTY. */
static bool checks(const struct dp_field *f, bool sender, unsigned flag)
{
	return (f->flags & flag) && !(sender && (f->flags & DP_RECV));
}

/* An integer field's value, signed for DP_F_I32 and DP_SIGNED. */
static int64_t int_value(const struct dp_field *f, const uint8_t *s)
{
	uint64_t v = load(s + f->off, f->size);

	if (f->kind == DP_F_I32 || (f->flags & DP_SIGNED))
		return (int32_t)(uint32_t)v;
	return (int64_t)v;
}

/* DP_PROTO_ERR_VALUE when a side checks the field's range and it is out. */
static enum dp_proto_err range_err(const struct dp_field *f, const uint8_t *s, bool sender)
{
	if (checks(f, sender, DP_RANGE) && (int_value(f, s) < f->lo || int_value(f, s) > f->hi))
		return DP_PROTO_ERR_VALUE;
	return DP_PROTO_ERR_NONE;
}

/* The fewest bytes a struct takes on the wire (for counts). */
static size_t wire_min(const struct dp_struct_desc *d)
{
	static const uint8_t fixed[] = {
		[DP_F_U8] = 1, [DP_F_U16] = 2, [DP_F_U32] = 4, [DP_F_U64] = 8, [DP_F_I32] = 4,
		[DP_F_BOOL] = 1, [DP_F_STR] = 2, [DP_F_ARRAY] = 4, [DP_F_FIXED] = 4,
		[DP_F_CHECK] = 0,
	};
	size_t n = 0;

	for (size_t i = 0; i < d->nfields; i++) {
		const struct dp_field *f = &d->fields[i];

		if (f->kind == DP_F_STRUCT)
			n += wire_min(f->elem);
		else if (f->kind == DP_F_BYTES)
			n += 1 + (size_t)f->lo;
		else
			n += fixed[f->kind];
	}
	return n;
}

static const struct dp_field u16_fields[] = { DP_ELEM_U16 };
static const struct dp_field u64_fields[] = { DP_ELEM_U64 };
const struct dp_struct_desc dp_codec_u16 = { u16_fields, 1, sizeof(uint16_t) };
const struct dp_struct_desc dp_codec_u64 = { u64_fields, 1, sizeof(uint64_t) };

/* ---- encoding ---------------------------------------------------------- */

static enum dp_proto_err put_struct(struct dp_wbuf *w, const struct dp_struct_desc *d,
				    const uint8_t *s);

/* A counted array's elements, after their count. */
static enum dp_proto_err put_elems(struct dp_wbuf *w, const struct dp_field *f,
				   const uint8_t *v, uint32_t n)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (n > f->hi || (n && !v))
		return DP_PROTO_ERR_BOUNDS;
	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n && !err; i++)
		err = put_struct(w, f->elem, v + (size_t)i * f->elem->size);
	return err;
}

static enum dp_proto_err put_field(struct dp_wbuf *w, const struct dp_field *f, const uint8_t *s)
{
	const uint8_t *p = s + f->off;
	uint64_t n;

	switch (f->kind) {
	case DP_F_STR:
		if (checks(f, true, DP_NONEMPTY) && !p[0])
			return DP_PROTO_ERR_STRING;
		dp_wbuf_str(w, (const char *)p, f->size);
		return DP_PROTO_ERR_NONE;
	case DP_F_BYTES:
		n = load(s + f->count, 1);
		if (n < (uint64_t)f->lo || n > (uint64_t)f->hi)
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_u8(w, (uint8_t)n);
		dp_wbuf_bytes(w, p, n);
		return DP_PROTO_ERR_NONE;
	case DP_F_ARRAY:
		return put_elems(w, f, load_ptr(p), (uint32_t)load(s + f->count, 4));
	case DP_F_FIXED:
		return put_elems(w, f, p, (uint32_t)load(s + f->count, 4));
	case DP_F_STRUCT:
		return put_struct(w, f->elem, p);
	case DP_F_CHECK:
		return range_err(f, s, true);
	default:
		break;
	}
	if (range_err(f, s, true))
		return DP_PROTO_ERR_VALUE;
	n = load(p, f->size);
	switch (f->kind) {
	case DP_F_U8:
	case DP_F_BOOL:
		dp_wbuf_u8(w, (uint8_t)n);
		break;
	case DP_F_U16:
		dp_wbuf_u16(w, (uint16_t)n);
		break;
	case DP_F_U32:
	case DP_F_I32:
		dp_wbuf_u32(w, (uint32_t)n);
		break;
	default:
		dp_wbuf_u64(w, n);
		break;
	}
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err put_struct(struct dp_wbuf *w, const struct dp_struct_desc *d,
				    const uint8_t *s)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	for (size_t i = 0; i < d->nfields && !err; i++)
		err = put_field(w, &d->fields[i], s);
	return err;
}

/* ---- decoding ---------------------------------------------------------- */

static bool stopped(const struct dp_rbuf *r)
{
	return r->err || r->nomem;
}

static void get_struct(struct dp_rbuf *r, const struct dp_struct_desc *d, uint8_t *s);

/* A counted array's count and elements, into v (NULL: a new array). */
static void get_elems(struct dp_rbuf *r, const struct dp_field *f, uint8_t *s, uint8_t *v)
{
	uint32_t n = dp_rbuf_count(r, (uint32_t)f->hi, wire_min(f->elem));

	if (!v && n) {
		v = calloc(n, f->elem->size);
		if (!v) {
			r->nomem = true;
			n = 0;
		}
		store_ptr(s + f->off, v);
	}
	store(s + f->count, 4, n);
	for (uint32_t i = 0; i < n && !stopped(r); i++)
		get_struct(r, f->elem, v + (size_t)i * f->elem->size);
}

static uint64_t get_int(struct dp_rbuf *r, const struct dp_field *f)
{
	switch (f->kind) {
	case DP_F_U8:
		return dp_rbuf_u8(r);
	case DP_F_BOOL:
		return dp_rbuf_bool(r);
	case DP_F_U16:
		return dp_rbuf_u16(r);
	case DP_F_U32:
	case DP_F_I32:
		return dp_rbuf_u32(r);
	default:
		return dp_rbuf_u64(r);
	}
}

static void get_field(struct dp_rbuf *r, const struct dp_field *f, uint8_t *s)
{
	uint8_t *p = s + f->off;
	uint8_t n;

	switch (f->kind) {
	case DP_F_STR:
		dp_rbuf_str(r, (char *)p, f->size);
		if (checks(f, false, DP_NONEMPTY) && !p[0])
			dp_rbuf_fail(r, DP_PROTO_ERR_STRING);
		return;
	case DP_F_BYTES:
		n = dp_rbuf_u8(r);
		store(s + f->count, 1, n);
		if (n < f->lo || n > f->hi)
			dp_rbuf_fail(r, DP_PROTO_ERR_BOUNDS);
		else
			dp_rbuf_bytes(r, p, n);
		return;
	case DP_F_ARRAY:
		get_elems(r, f, s, NULL);
		return;
	case DP_F_FIXED:
		get_elems(r, f, s, p);
		return;
	case DP_F_STRUCT:
		get_struct(r, f->elem, p);
		return;
	case DP_F_CHECK:
		dp_rbuf_fail(r, range_err(f, s, false));
		return;
	default:
		break;
	}
	store(p, f->size, get_int(r, f));
	dp_rbuf_fail(r, range_err(f, s, false));
}

/* Reads a struct's fields; r stops at the first error, leaving s partial
 * (zeroed beyond) for dp_codec_release. */
static void get_struct(struct dp_rbuf *r, const struct dp_struct_desc *d, uint8_t *s)
{
	for (size_t i = 0; i < d->nfields && !stopped(r); i++)
		get_field(r, &d->fields[i], s);
}

/* ---- releasing --------------------------------------------------------- */

static void release_struct(const struct dp_struct_desc *d, uint8_t *s)
{
	for (size_t i = 0; i < d->nfields; i++) {
		const struct dp_field *f = &d->fields[i];
		uint8_t *p = s + f->off;
		uint32_t n;

		switch (f->kind) {
		case DP_F_ARRAY:
			p = load_ptr(p);
			n = (uint32_t)load(s + f->count, 4);
			for (uint32_t k = 0; k < n && p; k++)
				release_struct(f->elem, p + (size_t)k * f->elem->size);
			free(p);
			break;
		case DP_F_FIXED:
			n = (uint32_t)load(s + f->count, 4);
			for (uint32_t k = 0; k < n && k < f->hi; k++)
				release_struct(f->elem, p + (size_t)k * f->elem->size);
			break;
		case DP_F_STRUCT:
			release_struct(f->elem, p);
			break;
		default:
			break;
		}
	}
}

/* ---- messages ---------------------------------------------------------- */

static const struct dp_msg_desc *msg_desc(const struct dp_codec *c, uint16_t type)
{
	for (size_t i = 0; i < c->nmsgs; i++)
		if (c->msgs[i].type == type)
			return &c->msgs[i];
	return NULL;
}

const char *dp_codec_type_name(const struct dp_codec *c, uint16_t type)
{
	const struct dp_msg_desc *d = msg_desc(c, type);

	return d ? d->name : NULL;
}

static struct dp_msg_head head_of(const void *m)
{
	struct dp_msg_head h;

	memcpy(&h, m, sizeof(h));
	return h;
}

/* m, empty but for what its header says. */
static void msg_start(const struct dp_codec *c, void *m, const struct dp_frame_hdr *h)
{
	struct dp_msg_head head = { .type = h->type, .seq = h->seq, .major = h->major,
				    .minor = h->minor };

	memset(m, 0, c->msg_size);
	memcpy(m, &head, sizeof(head));
}

/* The payload of m: DP_PROTO_ERR_NONE, or the check it fails. */
static enum dp_proto_err put_payload(const struct dp_codec *c, struct dp_wbuf *w, const void *m)
{
	const struct dp_msg_desc *d = msg_desc(c, head_of(m).type);
	const uint8_t *payload = (const uint8_t *)m + c->payload_off;
	enum dp_proto_err err;

	if (!d)
		return DP_PROTO_ERR_TYPE;
	/* The whole message's check first: it vouches for the arrays the
	 * walk then reads. */
	err = d->check ? d->check(payload) : DP_PROTO_ERR_NONE;
	if (!err && d->payload)
		err = put_struct(w, d->payload, payload);
	return err;
}

int dp_codec_encode(const struct dp_codec *c, const void *m, struct dp_wbuf *w)
{
	struct dp_msg_head h = head_of(m);

	dp_frame_begin(w, c->frame, h.type, h.seq);
	return dp_frame_end(w, put_payload(c, w, m));
}

int dp_codec_decode(const struct dp_codec *c, const struct dp_frame_hdr *h,
		    const uint8_t *payload, void *m, enum dp_proto_err *why)
{
	uint8_t *out = (uint8_t *)m + c->payload_off;
	const struct dp_msg_desc *d;
	struct dp_rbuf r;
	int ret;

	msg_start(c, m, h);
	ret = dp_frame_check(c->frame, h, why);
	if (ret)
		return ret;
	dp_rbuf_init(&r, payload, h->len);
	d = msg_desc(c, h->type);
	if (!d)
		dp_rbuf_fail(&r, DP_PROTO_ERR_TYPE);
	else if (d->payload)
		get_struct(&r, d->payload, out);
	if (!dp_rbuf_finish(&r) && d && d->check)
		dp_rbuf_fail(&r, d->check(out));
	ret = dp_rbuf_result(&r, why);
	if (ret) {
		dp_codec_release(c, m);
		msg_start(c, m, h);
	}
	return ret;
}

int dp_codec_decode_frame(const struct dp_codec *c, const uint8_t *buf, size_t len, void *m,
			  enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	int ret = dp_frame_split(c->frame, buf, len, &h, why);

	if (!ret)
		return dp_codec_decode(c, &h, buf + DP_FRAME_HDR_LEN, m, why);
	msg_start(c, m, &h);
	return ret;
}

void dp_codec_release(const struct dp_codec *c, void *m)
{
	const struct dp_msg_desc *d = msg_desc(c, head_of(m).type);

	if (d && d->payload)
		release_struct(d->payload, (uint8_t *)m + c->payload_off);
	memset(m, 0, c->msg_size);
}

/* ---- on a socket ------------------------------------------------------- */

static int send_until(const struct dp_codec *c, int fd, const void *m, struct dp_deadline *d)
{
	struct dp_wbuf w;
	int ret;

	ret = dp_codec_encode(c, m, &w);
	if (!ret)
		ret = dp_frame_write_all_until(fd, w.data, w.len, d);
	dp_wbuf_release(&w);
	return ret;
}

int dp_codec_send(const struct dp_codec *c, int fd, const void *m, int timeout_ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return send_until(c, fd, m, &d);
}

static int recv_until(const struct dp_codec *c, int fd, void *m, struct dp_deadline *d,
		      enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	uint8_t *payload;
	int ret;

	ret = dp_frame_recv_msg_until(fd, c->frame, d, &h, &payload, why);
	if (!ret)
		ret = dp_codec_decode(c, &h, payload, m, why);
	else
		msg_start(c, m, &h);	/* the header says who spoke, or is zeroed */
	free(payload);
	return ret;
}

int dp_codec_recv(const struct dp_codec *c, int fd, void *m, int timeout_ms,
		  enum dp_proto_err *why)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return recv_until(c, fd, m, &d, why);
}

/* UNSUPPORTED, the answer to the peer's request `type` of `seq`. */
static int send_unsupported(const struct dp_codec *c, int fd, uint16_t type, uint32_t seq,
			    struct dp_deadline *d)
{
	struct dp_wbuf w;
	int ret;

	dp_frame_begin(&w, c->frame, DP_FRAME_UNSUPPORTED, seq);
	dp_wbuf_u16(&w, type);
	ret = dp_frame_end(&w, DP_PROTO_ERR_NONE);
	if (!ret)
		ret = dp_frame_write_all_until(fd, w.data, w.len, d);
	dp_wbuf_release(&w);
	return ret;
}

int dp_codec_call(const struct dp_codec *c, int fd, void *req, uint32_t *seq, void *reply,
		  int timeout_ms, enum dp_proto_err *why)
{
	return dp_codec_call_cb(c, fd, req, seq, reply, timeout_ms, why, NULL, NULL);
}

int dp_codec_call_cb(const struct dp_codec *c, int fd, void *req, uint32_t *seq, void *reply,
		     int timeout_ms, enum dp_proto_err *why, dp_codec_request_cb cb, void *arg)
{
	int send_ms = c->send_timeout_ms ? c->send_timeout_ms : timeout_ms;
	/* One deadline for the whole wait: the peer's requests met meanwhile
	 * give it no more time, and only so many of them are served.  Each
	 * send has its own within it. */
	struct dp_deadline call, send;
	unsigned nrequests = 0;
	struct dp_msg_head rq, rp;
	int ret;

	*why = DP_PROTO_ERR_NONE;
	memset(reply, 0, c->msg_size);
	rq = head_of(req);
	rq.seq = (*seq)++;
	memcpy(req, &rq, sizeof(rq));
	dp_deadline_start(&call, timeout_ms, NULL);
	dp_deadline_start(&send, send_ms, &call);
	ret = send_until(c, fd, req, &send);
	for (;;) {
		if (ret)
			return ret;
		if (dp_deadline_passed(&call))
			return -ETIMEDOUT;
		ret = recv_until(c, fd, reply, &call, why);
		rp = head_of(reply);
		if (!(rp.type & DP_FRAME_REPLY) && (!ret || (c->peer_requests && ret == -EPROTO &&
							     *why == DP_PROTO_ERR_TYPE)) &&
		    ++nrequests > DP_CODEC_MAX_PEER_REQUESTS) {
			/* A peer that keeps asking instead of answering. */
			if (!ret)
				dp_codec_release(c, reply);
			memset(reply, 0, c->msg_size);
			*why = DP_PROTO_ERR_NONE;
			return -EOVERFLOW;
		}
		if (!ret && cb && !(rp.type & DP_FRAME_REPLY)) {
			/* A request the caller knows, sent while we wait: its
			 * business, then our reply is still to come. */
			/* A stop before it is seen first; then our work on
			 * it is charged, never taken for a stop. */
			dp_deadline_left(&call);
			cb(arg, reply);
			dp_deadline_charge(&call);
			dp_codec_release(c, reply);
			memset(reply, 0, c->msg_size);
			continue;
		}
		if (!(c->peer_requests && ret == -EPROTO && *why == DP_PROTO_ERR_TYPE &&
		      !(rp.type & DP_FRAME_REPLY)))
			break;
		/* A request of a newer minor version while we wait: say we do
		 * not know it, and keep waiting for our reply. */
		if (dp_deadline_passed(&call))
			return -ETIMEDOUT;
		dp_deadline_start(&send, send_ms, &call);
		ret = send_unsupported(c, fd, rp.type, rp.seq, &send);
	}
	if (ret)
		return ret;
	ret = dp_frame_check_reply(rq.type, rq.seq, rp.type, rp.seq, why);
	if (ret == -EPROTO)
		dp_codec_release(c, reply);
	return ret;
}
