/*
 * Bounded little-endian buffers (see wire.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

void dp_wbuf_init(struct dp_wbuf *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
}

void dp_wbuf_release(struct dp_wbuf *w)
{
	free(w->data);
	memset(w, 0, sizeof(*w));
}

/* Room for n more bytes, or the error that prevents it. */
static uint8_t *wbuf_reserve(struct dp_wbuf *w, size_t n)
{
	uint8_t *p;

	if (w->err)
		return NULL;
	if (n > w->max - w->len) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;

		while (cap < w->len + n)
			cap *= 2;
		if (cap > w->max)
			cap = w->max;
		p = realloc(w->data, cap);
		if (!p) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->data = p;
		w->cap = cap;
	}
	p = w->data + w->len;
	w->len += n;
	return p;
}

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void wbuf_le(struct dp_wbuf *w, uint64_t v, size_t n)
{
	uint8_t *p = wbuf_reserve(w, n);

	if (p)
		put_le(p, v, n);
}

void dp_wbuf_u8(struct dp_wbuf *w, uint8_t v)
{
	wbuf_le(w, v, 1);
}

void dp_wbuf_u16(struct dp_wbuf *w, uint16_t v)
{
	wbuf_le(w, v, 2);
}

void dp_wbuf_u32(struct dp_wbuf *w, uint32_t v)
{
	wbuf_le(w, v, 4);
}

void dp_wbuf_u64(struct dp_wbuf *w, uint64_t v)
{
	wbuf_le(w, v, 8);
}

void dp_wbuf_bytes(struct dp_wbuf *w, const void *src, size_t n)
{
	uint8_t *p = wbuf_reserve(w, n);

	if (p && n)
		memcpy(p, src, n);
}

void dp_wbuf_str(struct dp_wbuf *w, const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (w->err)
		return;
	if (n >= size || n > UINT16_MAX) {
		w->err = -EINVAL;
		return;
	}
	dp_wbuf_u16(w, (uint16_t)n);
	dp_wbuf_bytes(w, s, n);
}

void dp_wbuf_set_u32(struct dp_wbuf *w, size_t at, uint32_t v)
{
	if (!w->err && at + 4 <= w->len)
		put_le(w->data + at, v, 4);
}

void dp_rbuf_init(struct dp_rbuf *r, const void *p, size_t len)
{
	r->p = p;
	r->len = p ? len : 0;
	r->off = 0;
	r->err = DP_PROTO_ERR_NONE;
	r->nomem = false;
}

static bool rbuf_stopped(const struct dp_rbuf *r)
{
	return r->err || r->nomem;
}

void dp_rbuf_fail(struct dp_rbuf *r, enum dp_proto_err err)
{
	if (!rbuf_stopped(r))
		r->err = err;
}

/* The next n bytes, or NULL (and the buffer marked truncated). */
static const uint8_t *rbuf_take(struct dp_rbuf *r, size_t n)
{
	const uint8_t *p;

	if (rbuf_stopped(r))
		return NULL;
	if (n > r->len - r->off) {
		r->err = DP_PROTO_ERR_TRUNCATED;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static uint64_t rbuf_le(struct dp_rbuf *r, size_t n)
{
	const uint8_t *p = rbuf_take(r, n);
	uint64_t v = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

uint8_t dp_rbuf_u8(struct dp_rbuf *r)
{
	return (uint8_t)rbuf_le(r, 1);
}

uint16_t dp_rbuf_u16(struct dp_rbuf *r)
{
	return (uint16_t)rbuf_le(r, 2);
}

uint32_t dp_rbuf_u32(struct dp_rbuf *r)
{
	return (uint32_t)rbuf_le(r, 4);
}

uint64_t dp_rbuf_u64(struct dp_rbuf *r)
{
	return rbuf_le(r, 8);
}

void dp_rbuf_bytes(struct dp_rbuf *r, void *out, size_t n)
{
	const uint8_t *p = rbuf_take(r, n);

	if (p && n)
		memcpy(out, p, n);
	else if (!p && n)
		memset(out, 0, n);
}

bool dp_rbuf_bool(struct dp_rbuf *r)
{
	uint8_t v = dp_rbuf_u8(r);

	if (v > 1)
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	return v == 1;
}

void dp_rbuf_str(struct dp_rbuf *r, char *out, size_t size)
{
	uint16_t n = dp_rbuf_u16(r);
	const uint8_t *p;

	out[0] = '\0';
	if (rbuf_stopped(r))
		return;
	if (n >= size) {
		r->err = DP_PROTO_ERR_BOUNDS;
		return;
	}
	p = rbuf_take(r, n);
	if (!p)
		return;
	if (memchr(p, '\0', n)) {
		r->err = DP_PROTO_ERR_STRING;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

uint32_t dp_rbuf_count(struct dp_rbuf *r, uint32_t max, size_t min_elem)
{
	uint32_t n = dp_rbuf_u32(r);

	if (rbuf_stopped(r))
		return 0;
	if (n > max) {
		r->err = DP_PROTO_ERR_BOUNDS;
		return 0;
	}
	if (min_elem && n > (r->len - r->off) / min_elem) {
		r->err = DP_PROTO_ERR_TRUNCATED;
		return 0;
	}
	return n;
}

enum dp_proto_err dp_rbuf_finish(struct dp_rbuf *r)
{
	if (!rbuf_stopped(r) && r->off != r->len)
		r->err = DP_PROTO_ERR_TRAILING;
	return r->err;
}

int dp_rbuf_result(struct dp_rbuf *r, enum dp_proto_err *why)
{
	if (r->nomem)
		return -ENOMEM;
	*why = dp_rbuf_finish(r);
	return *why ? -EPROTO : 0;
}
