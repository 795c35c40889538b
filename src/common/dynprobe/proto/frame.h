/*
 * Frames: how every lttng-dynprobe protocol message travels on a Unix stream
 * socket, and the typed errors of a receiver.
 *
 *   offset  size  field
 *        0     4  magic     one per protocol (the app protocol: "DPAP")
 *        4     1  major     protocol major version
 *        5     1  minor     protocol minor version
 *        6     2  type      message type; bit 15 set: a reply
 *        8     4  length    payload bytes that follow, at most the protocol's maximum
 *       12     4  seq       a reply carries the sequence number of its request
 *       16     -  payload
 *
 * All integers are little-endian.  This layout never changes, whatever the
 * version: a peer of another major version can always read a header, see the
 * version, and decode the protocol's refusal message.
 *
 * The helpers here block, with a deadline for the whole frame, resume after
 * EINTR and partial transfers, and never raise SIGPIPE.
 */
#ifndef DP_PROTO_FRAME_H
#define DP_PROTO_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_FRAME_HDR_LEN 16
#define DP_FRAME_REPLY 0x8000u

/* Why a received frame or message was rejected. */
enum dp_proto_err {
	DP_PROTO_ERR_NONE = 0,
	/* The stream cannot be trusted any more: the connection must close. */
	DP_PROTO_ERR_MAGIC,		/* not a frame of this protocol */
	DP_PROTO_ERR_VERSION,		/* another major version */
	DP_PROTO_ERR_TOO_BIG,		/* length above the protocol's maximum */
	DP_PROTO_ERR_EOF,		/* the peer closed in the middle of a frame */
	/* One message is bad; the stream is still in step. */
	DP_PROTO_ERR_TYPE,		/* unknown message type */
	DP_PROTO_ERR_TRUNCATED,		/* the payload ends before its fields do */
	DP_PROTO_ERR_TRAILING,		/* bytes after the last field */
	DP_PROTO_ERR_BOUNDS,		/* a count or a string length above its bound */
	DP_PROTO_ERR_STRING,		/* a NUL byte inside a string, or an empty name */
	DP_PROTO_ERR_VALUE,		/* a field outside its allowed values */
	DP_PROTO_ERR__COUNT,
};

const char *dp_proto_err_str(enum dp_proto_err err);
/* Whether the connection must be closed after this error. */
bool dp_proto_err_fatal(enum dp_proto_err err);

struct dp_frame_hdr {
	uint32_t magic;
	uint8_t major, minor;
	uint16_t type;
	uint32_t len;
	uint32_t seq;
};

void dp_frame_hdr_encode(const struct dp_frame_hdr *h, uint8_t out[DP_FRAME_HDR_LEN]);
/*
 * Reads a header and checks it against a protocol: its magic, its major
 * version and its maximum payload.  0, or -EPROTO with *why.  After
 * DP_PROTO_ERR_VERSION and DP_PROTO_ERR_TOO_BIG *h is filled in; after
 * DP_PROTO_ERR_MAGIC it is not.
 */
int dp_frame_hdr_decode(const uint8_t in[DP_FRAME_HDR_LEN], uint32_t magic, uint8_t major,
			uint32_t max_len, struct dp_frame_hdr *h, enum dp_proto_err *why);

/*
 * Writes or reads exactly len bytes before the deadline.  timeout_ms < 0
 * waits forever.  0, -ETIMEDOUT, -ECONNRESET when the peer is gone (for a
 * read: end of file before the first byte), -EPROTO with the read ending
 * early (end of file after some bytes), or another -errno.
 */
int dp_frame_write_all(int fd, const void *buf, size_t len, int timeout_ms);
int dp_frame_read_all(int fd, void *buf, size_t len, int timeout_ms);

/*
 * Receives one frame of a protocol within timeout_ms: its header, and its
 * payload into a new buffer (*payload, to free; NULL for an empty payload).
 * 0, -ECONNRESET when the peer closed between frames, -ETIMEDOUT,
 * -ENOMEM, -EPROTO with *why, or another -errno.  After
 * DP_PROTO_ERR_VERSION the payload was read too (a refusal can be decoded).
 */
int dp_frame_recv(int fd, uint32_t magic, uint8_t major, uint32_t max_len, int timeout_ms,
		  struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why);

#endif /* DP_PROTO_FRAME_H */
