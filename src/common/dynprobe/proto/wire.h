/*
 * Bounded little-endian encoding: the only way protocol code turns values
 * into bytes and back.  Nothing here casts a received buffer to a struct:
 * every value is read byte by byte, after checking that it is there.
 *
 * Both buffers keep the first error and ignore later calls, so that the
 * codec's walker (codec.h) checks once, at the end of a message.
 */
#ifndef DP_PROTO_WIRE_H
#define DP_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"

/* A growing output buffer that refuses to exceed `max` bytes. */
struct dp_wbuf {
	uint8_t *data;
	size_t len, cap, max;
	int err;		/* 0, -ENOMEM, -EMSGSIZE past max, -EINVAL for a bad string */
};

void dp_wbuf_init(struct dp_wbuf *w, size_t max);
void dp_wbuf_release(struct dp_wbuf *w);

void dp_wbuf_u8(struct dp_wbuf *w, uint8_t v);
void dp_wbuf_u16(struct dp_wbuf *w, uint16_t v);
void dp_wbuf_u32(struct dp_wbuf *w, uint32_t v);
void dp_wbuf_u64(struct dp_wbuf *w, uint64_t v);
void dp_wbuf_bytes(struct dp_wbuf *w, const void *p, size_t n);
/*
 * A string: u16 length, then its bytes without the NUL.  `size` is the size
 * of the array the receiver stores it in: a string of size - 1 bytes or more
 * is an encoding error (-EINVAL), as the receiver would refuse it.
 */
void dp_wbuf_str(struct dp_wbuf *w, const char *s, size_t size);
/* Overwrites a u32 written earlier at `at` (lengths known only at the end). */
void dp_wbuf_set_u32(struct dp_wbuf *w, size_t at, uint32_t v);

/*
 * A reader over received bytes; every get checks the bytes are there.  A
 * reader stops at its first error: bad bytes (err), or an array its user
 * could not allocate (nomem).
 */
struct dp_rbuf {
	const uint8_t *p;
	size_t len, off;
	enum dp_proto_err err;
	bool nomem;
};

void dp_rbuf_init(struct dp_rbuf *r, const void *p, size_t len);

/* Each returns 0 (and reads nothing) once the reader has stopped. */
uint8_t dp_rbuf_u8(struct dp_rbuf *r);
uint16_t dp_rbuf_u16(struct dp_rbuf *r);
uint32_t dp_rbuf_u32(struct dp_rbuf *r);
uint64_t dp_rbuf_u64(struct dp_rbuf *r);
void dp_rbuf_bytes(struct dp_rbuf *r, void *out, size_t n);
/* A bool on the wire: one byte, 0 or 1; anything else is DP_PROTO_ERR_VALUE. */
bool dp_rbuf_bool(struct dp_rbuf *r);
/*
 * A string into out[size], NUL-terminated: DP_PROTO_ERR_BOUNDS when it would
 * not fit, DP_PROTO_ERR_STRING when it holds a NUL byte.  out is "" on error.
 */
void dp_rbuf_str(struct dp_rbuf *r, char *out, size_t size);
/*
 * A u32 element count: DP_PROTO_ERR_BOUNDS above `max`, and
 * DP_PROTO_ERR_TRUNCATED when the bytes left cannot hold that many elements
 * of at least `min_elem` bytes (so that no one allocates for elements that
 * are not there).
 */
uint32_t dp_rbuf_count(struct dp_rbuf *r, uint32_t max, size_t min_elem);
/* Marks the buffer failed with `err` unless it has stopped already. */
void dp_rbuf_fail(struct dp_rbuf *r, enum dp_proto_err err);
/* The end of a message: DP_PROTO_ERR_TRAILING if bytes are left. */
enum dp_proto_err dp_rbuf_finish(struct dp_rbuf *r);
/* The end of a message, as a decoder returns it: 0, -ENOMEM, or -EPROTO
 * with *why (dp_rbuf_finish's error). */
int dp_rbuf_result(struct dp_rbuf *r, enum dp_proto_err *why);

#endif /* DP_PROTO_WIRE_H */
