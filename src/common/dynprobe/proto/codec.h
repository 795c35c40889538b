/*
 * One codec for every protocol: messages described as data, and one walker
 * that encodes, decodes, bounds-checks and releases them.
 *
 * A protocol describes each payload struct once, as a table of its fields
 * in wire order (DP_FIELD_* below): the field's kind, where it lies in the
 * C struct (offsetof), and its bounds.  Nested structs and counted arrays
 * point at their element's table.  A message type is one line naming its
 * payload's table (struct dp_msg_desc), and a protocol (struct dp_codec) is
 * its frames, its message list and the layout of its message struct.  The
 * C structs of app.h and client.h stay the API; the tables only say how
 * they travel.  A new message costs its type, its member in the message
 * union, one line in the list, and a table when its payload is a new
 * struct; a build-time check refuses a table row whose kind does not match
 * its member's size.
 *
 * Decoding allocates nothing but the DP_F_ARRAY fields (one calloc each,
 * after the count is checked against the bytes left); everything else is
 * read in place, so a receiver with no arrays in its messages (the agent's
 * requests, but for DEFINE_PROBE's contexts) allocates nothing but the
 * received payload.
 *
 * The walker's rules, on both sides:
 *  - integers are little-endian, as wide as their kind; a field may carry
 *    its allowed values [lo, hi] (DP_PROTO_ERR_VALUE outside them);
 *  - a string is a u16 length then its bytes, shorter than its char array
 *    (dp_wbuf_str, dp_rbuf_str); DP_NONEMPTY refuses "" (STRING);
 *  - a byte array is a u8 length then the bytes, the length within
 *    [lo, sizeof the array] (BOUNDS outside);
 *  - a counted array is a u32 count then its elements, the count at most
 *    its maximum (BOUNDS), and a receiver checks that the bytes left can
 *    hold that many elements before allocating (dp_rbuf_count);
 *  - a field's check runs as the field is read or written (or where its
 *    DP_F_CHECK row stands); DP_RECV marks
 *    the checks that only a receiver makes (a sender passes such a value
 *    on, and the peer refuses it with its typed reason);
 *  - a message's `check` looks at the whole message: a sender runs it
 *    before writing, a receiver after the last byte (so that a short
 *    message is refused as truncated first).
 * A sender's failed check makes the encoding fail with -EINVAL; a
 * receiver's, the decoding with -EPROTO and the typed reason.
 */
#ifndef DP_PROTO_CODEC_H
#define DP_PROTO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"
#include "proto/wire.h"

enum dp_field_kind {
	DP_F_U8, DP_F_U16, DP_F_U32, DP_F_U64,
	DP_F_I32,		/* a signed 32-bit integer (statuses: 0 or -errno) */
	DP_F_BOOL,		/* a bool, one byte on the wire: 0 or 1 */
	DP_F_STR,		/* a char array */
	DP_F_BYTES,		/* a uint8_t array and its u8 length field */
	DP_F_ARRAY,		/* a malloc'd array of elements and its u32 count field */
	DP_F_FIXED,		/* an array of elements inside the struct, and its count */
	DP_F_STRUCT,		/* a nested struct */
	DP_F_CHECK,		/* not on the wire: an integer member's range, checked
				   at this point of the walk (after fields that follow
				   it on the wire, as a receiver always did) */
};

/* Field flags. */
#define DP_RANGE 0x01		/* integers: allowed values are [lo, hi] */
#define DP_NONEMPTY 0x02	/* strings: "" is refused */
#define DP_RECV 0x04		/* the checks above are the receiver's only */
#define DP_SIGNED 0x08		/* DP_F_CHECK: the member is an int32_t */

struct dp_struct_desc;

struct dp_field {
	uint8_t kind;			/* enum dp_field_kind */
	uint8_t flags;
	size_t off;			/* offsetof the member */
	size_t size;			/* sizeof the member (STR, BYTES: the array's) */
	size_t count;			/* BYTES, ARRAY, FIXED: offsetof the length field */
	int64_t lo, hi;			/* DP_RANGE: values; BYTES: length; ARRAY: count max */
	const struct dp_struct_desc *elem;	/* ARRAY, FIXED, STRUCT */
};

/* A struct that travels: its fields in wire order. */
struct dp_struct_desc {
	const struct dp_field *fields;
	size_t nfields;
	size_t size;			/* sizeof the struct (array elements) */
};

#define DP_STRUCT_DESC(name, type, fields)                                                   \
	static const struct dp_struct_desc name = { fields, sizeof(fields) / sizeof(fields[0]), \
						    sizeof(type) }

/* The member's size, after checking at build time that it is `n` bytes. */
#define DP_SIZE_IS(T, m, n) \
	(sizeof(((T *)0)->m) + 0 * sizeof(char[sizeof(((T *)0)->m) == (n) ? 1 : -1]))

/* The offset of a length or count member, after checking its size. */
#define DP_OFF_OF(T, m, n) (offsetof(T, m) + 0 * DP_SIZE_IS(T, m, n))

/* Fields of struct T, member m (table rows).  Integers: */
#define DP_FIELD_INT(kind, T, m, n, fl, l, h) \
	{ kind, fl, offsetof(T, m), DP_SIZE_IS(T, m, n), 0, l, h, NULL }
#define DP_FIELD_U8(T, m) DP_FIELD_INT(DP_F_U8, T, m, 1, 0, 0, 0)
#define DP_FIELD_U16(T, m) DP_FIELD_INT(DP_F_U16, T, m, 2, 0, 0, 0)
#define DP_FIELD_U32(T, m) DP_FIELD_INT(DP_F_U32, T, m, 4, 0, 0, 0)
#define DP_FIELD_U64(T, m) DP_FIELD_INT(DP_F_U64, T, m, 8, 0, 0, 0)
#define DP_FIELD_BOOL(T, m) DP_FIELD_INT(DP_F_BOOL, T, m, sizeof(bool), 0, 0, 0)
/* ... with their allowed values (fl: 0 or DP_RECV). */
#define DP_FIELD_U8_IN(T, m, l, h, fl) DP_FIELD_INT(DP_F_U8, T, m, 1, DP_RANGE | (fl), l, h)
#define DP_FIELD_U32_IN(T, m, l, h, fl) DP_FIELD_INT(DP_F_U32, T, m, 4, DP_RANGE | (fl), l, h)
/* A status: 0 or -errno, checked as read, or unchecked (then DP_CHECK_STATUS
 * later). */
#define DP_FIELD_STATUS(T, m) DP_FIELD_INT(DP_F_I32, T, m, 4, DP_RANGE, INT32_MIN, 0)
#define DP_FIELD_I32(T, m) DP_FIELD_INT(DP_F_I32, T, m, 4, 0, 0, 0)
/* Range checks of members read earlier (DP_F_CHECK). */
#define DP_CHECK_U32(T, m, l, h) DP_FIELD_INT(DP_F_CHECK, T, m, 4, DP_RANGE, l, h)
#define DP_CHECK_STATUS(T, m) DP_FIELD_INT(DP_F_CHECK, T, m, 4, DP_RANGE | DP_SIGNED, INT32_MIN, 0)
/* A string in char m[] (fl: 0, or DP_NONEMPTY with or without DP_RECV). */
#define DP_FIELD_STR(T, m, fl) \
	{ DP_F_STR, fl, offsetof(T, m), sizeof(((T *)0)->m), 0, 0, 0, NULL }
/* uint8_t m[] holding `len` bytes, at least `min`. */
#define DP_FIELD_BYTES(T, m, len, min)                                                     \
	{ DP_F_BYTES, 0, offsetof(T, m), sizeof(((T *)0)->m), DP_OFF_OF(T, len, 1), min, \
	  sizeof(((T *)0)->m), NULL }
/* A malloc'd array `m` of `n` elements described by `desc`, at most `max`. */
#define DP_FIELD_ARRAY(T, m, n, max, desc)                                              \
	{ DP_F_ARRAY, 0, offsetof(T, m), DP_SIZE_IS(T, m, sizeof(void *)), DP_OFF_OF(T, n, 4), \
	  0, max, &desc }
/* An array m[] inside the struct, `n` elements of it used. */
#define DP_FIELD_FIXED(T, m, n, desc)                                                \
	{ DP_F_FIXED, 0, offsetof(T, m), sizeof(((T *)0)->m), DP_OFF_OF(T, n, 4), 0, \
	  sizeof(((T *)0)->m) / sizeof(((T *)0)->m[0]), &desc }
/* A nested struct. */
#define DP_FIELD_STRUCT(T, m, desc) \
	{ DP_F_STRUCT, 0, offsetof(T, m), sizeof(((T *)0)->m), 0, 0, 0, &desc }

/* The element of an array that is a plain value, not a struct (a pid, a
 * string), described by DP_STRUCT_DESC(name, uint32_t or char[N], ...). */
#define DP_ELEM_U16 { DP_F_U16, 0, 0, 2, 0, 0, 0, NULL }
#define DP_ELEM_U32 { DP_F_U32, 0, 0, 4, 0, 0, 0, NULL }
#define DP_ELEM_U32_IN(l, h, fl) { DP_F_U32, DP_RANGE | (fl), 0, 4, 0, l, h, NULL }
#define DP_ELEM_U64 { DP_F_U64, 0, 0, 8, 0, 0, 0, NULL }
#define DP_ELEM_STR(size, fl) { DP_F_STR, fl, 0, size, 0, 0, 0, NULL }

/* A payload that is one u16 or one u64 (UNSUPPORTED, PING). */
extern const struct dp_struct_desc dp_codec_u16, dp_codec_u64;

/* REFUSE's payload, the same in every protocol (frame.h): struct T with
 * major, minor and reason[]. */
#define DP_REFUSE_DESC(name, T)                                                           \
	static const struct dp_field name##_fields[] = {                                  \
		DP_FIELD_U8(T, major), DP_FIELD_U8(T, minor), DP_FIELD_STR(T, reason, 0), \
	};                                                                                \
	DP_STRUCT_DESC(name, T, name##_fields)

/* One message type of a protocol. */
struct dp_msg_desc {
	uint16_t type;
	const char *name;		/* "DEFINE_PROBE" */
	const struct dp_struct_desc *payload;	/* its union member's; NULL: empty */
	/* Values that only make sense on the whole payload: DP_PROTO_ERR_NONE
	 * or why not.  NULL: none. */
	enum dp_proto_err (*check)(const void *payload);
};

/*
 * A protocol's message struct begins with these fields, as
 * struct dp_app_msg and struct dp_client_msg do (DP_CODEC_MSG_CHECK), and
 * holds its payloads in a union.
 */
struct dp_msg_head {
	uint16_t type;
	uint32_t seq;
	uint8_t major, minor;
};

#define DP_CODEC_MSG_CHECK(T, payload)                                                     \
	_Static_assert(offsetof(T, type) == offsetof(struct dp_msg_head, type) &&            \
			       offsetof(T, seq) == offsetof(struct dp_msg_head, seq) &&        \
			       offsetof(T, major) == offsetof(struct dp_msg_head, major) &&    \
			       offsetof(T, minor) == offsetof(struct dp_msg_head, minor) &&    \
			       offsetof(T, payload) >= sizeof(struct dp_msg_head),             \
		       #T " begins as struct dp_msg_head")

/* The message list and struct of a protocol (dp_codec's initializer):
 * msgs[], struct T and its payload union's first member. */
#define DP_CODEC_MSGS(list, T, payload)                                                 \
	.msgs = list, .nmsgs = sizeof(list) / sizeof(list[0]), .msg_size = sizeof(T),   \
	.payload_off = offsetof(T, payload)

struct dp_codec {
	const struct dp_frame_proto *frame;
	const struct dp_msg_desc *msgs;
	size_t nmsgs;
	size_t msg_size;		/* sizeof the message struct */
	size_t payload_off;		/* offsetof its union */
	int send_timeout_ms;		/* dp_codec_call's sends; 0: the call's timeout */
	bool peer_requests;		/* while a call waits, the peer may send requests:
					   unknown ones get UNSUPPORTED */
};

/* The name of a message type, or NULL. */
const char *dp_codec_type_name(const struct dp_codec *c, uint16_t type);

/* The API of app.h and client.h, for any protocol's message struct m. */
int dp_codec_encode(const struct dp_codec *c, const void *m, struct dp_wbuf *w);
int dp_codec_decode(const struct dp_codec *c, const struct dp_frame_hdr *h,
		    const uint8_t *payload, void *m, enum dp_proto_err *why);
int dp_codec_decode_frame(const struct dp_codec *c, const uint8_t *buf, size_t len, void *m,
			  enum dp_proto_err *why);
void dp_codec_release(const struct dp_codec *c, void *m);
int dp_codec_send(const struct dp_codec *c, int fd, const void *m, int timeout_ms);
int dp_codec_recv(const struct dp_codec *c, int fd, void *m, int timeout_ms,
		  enum dp_proto_err *why);
int dp_codec_call(const struct dp_codec *c, int fd, void *req, uint32_t *seq, void *reply,
		  int timeout_ms, enum dp_proto_err *why);
/* A request of the peer's that arrives, well formed, while a call waits for
 * its reply (the message is released after the call). */
typedef void (*dp_codec_request_cb)(void *arg, void *msg);
/*
 * dp_codec_call, passing such requests to cb instead of failing on them.
 * The call has one deadline, timeout_ms after it begins: each read gets
 * what is left of it (the peer's requests give it no more time), and the
 * call fails with -ETIMEDOUT once it passed.  A peer that sends more than
 * DP_CODEC_MAX_PEER_REQUESTS requests (known or not) while one call waits
 * ends it with -EOVERFLOW: a peer that keeps asking is not answering.
 */
#define DP_CODEC_MAX_PEER_REQUESTS 64
int dp_codec_call_cb(const struct dp_codec *c, int fd, void *req, uint32_t *seq, void *reply,
		     int timeout_ms, enum dp_proto_err *why, dp_codec_request_cb cb, void *arg);

/*
 * Defines a protocol's API (app.h, client.h) on its codec: dp_P_type_name,
 * dp_P_encode, dp_P_decode, dp_P_decode_frame, dp_P_msg_release, dp_P_send,
 * dp_P_recv and dp_P_call for struct dp_P_msg.
 */
#define DP_CODEC_DEFINE_API(P, codec)                                                      \
	const char *dp_##P##_type_name(uint16_t type)                                        \
	{                                                                                    \
		return dp_codec_type_name(&codec, type);                                     \
	}                                                                                    \
	int dp_##P##_encode(const struct dp_##P##_msg *m, struct dp_wbuf *w)                 \
	{                                                                                    \
		return dp_codec_encode(&codec, m, w);                                        \
	}                                                                                    \
	int dp_##P##_decode(const struct dp_frame_hdr *h, const uint8_t *payload,            \
			    struct dp_##P##_msg *m, enum dp_proto_err *why)                  \
	{                                                                                    \
		return dp_codec_decode(&codec, h, payload, m, why);                          \
	}                                                                                    \
	int dp_##P##_decode_frame(const uint8_t *buf, size_t len, struct dp_##P##_msg *m,    \
				  enum dp_proto_err *why)                                    \
	{                                                                                    \
		return dp_codec_decode_frame(&codec, buf, len, m, why);                      \
	}                                                                                    \
	void dp_##P##_msg_release(struct dp_##P##_msg *m)                                    \
	{                                                                                    \
		dp_codec_release(&codec, m);                                                 \
	}                                                                                    \
	int dp_##P##_send(int fd, const struct dp_##P##_msg *m, int timeout_ms)              \
	{                                                                                    \
		return dp_codec_send(&codec, fd, m, timeout_ms);                             \
	}                                                                                    \
	int dp_##P##_recv(int fd, struct dp_##P##_msg *m, int timeout_ms,                    \
			  enum dp_proto_err *why)                                            \
	{                                                                                    \
		return dp_codec_recv(&codec, fd, m, timeout_ms, why);                        \
	}                                                                                    \
	int dp_##P##_call(int fd, struct dp_##P##_msg *req, uint32_t *seq,                   \
			  struct dp_##P##_msg *reply, int timeout_ms, enum dp_proto_err *why) \
	{                                                                                    \
		return dp_codec_call(&codec, fd, req, seq, reply, timeout_ms, why);          \
	}

#endif /* DP_PROTO_CODEC_H */
