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
 * version, and decode the protocol's refusal message.  Two message types are
 * the same in every protocol and version:
 *
 *   0xfffe  UNSUPPORTED  type u16: the reply to a request of an unknown type
 *   0xffff  REFUSE       major u8, minor u8, reason str: "I will not talk to
 *                        you", the sender closes
 *
 * The transfers here block, with a deadline for the whole frame, resume
 * after EINTR and partial transfers, and never raise SIGPIPE.
 */
#ifndef DP_PROTO_FRAME_H
#define DP_PROTO_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_FRAME_HDR_LEN 16
#define DP_FRAME_REPLY 0x8000u
#define DP_FRAME_UNSUPPORTED 0xfffeu
#define DP_FRAME_REFUSE 0xffffu

struct dp_deadline;
struct dp_wbuf;
struct dp_rbuf;

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

/* What a codec needs to know of its protocol's frames. */
struct dp_frame_proto {
	uint32_t magic;
	uint8_t major, minor;		/* the version we speak */
	uint32_t max_payload;		/* in bytes */
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
 * A message's frame in w: dp_frame_begin initializes w (to release even on
 * error) for a frame of the protocol's maximum size and writes the header
 * with our version; the payload follows; dp_frame_end takes what the
 * payload's checks said and sets the header's length.  0, -EINVAL when a
 * check failed (a field a receiver would refuse), or w's error (-EMSGSIZE,
 * -ENOMEM, -EINVAL for a string too long).
 */
void dp_frame_begin(struct dp_wbuf *w, const struct dp_frame_proto *p, uint16_t type,
		    uint32_t seq);
int dp_frame_end(struct dp_wbuf *w, enum dp_proto_err check);

/*
 * A received header against a protocol, as dp_frame_hdr_decode checks it,
 * except that a REFUSE of any major version passes.  0, or -EPROTO with *why.
 */
int dp_frame_check(const struct dp_frame_proto *p, const struct dp_frame_hdr *h,
		   enum dp_proto_err *why);

/*
 * A whole frame in memory (no more, no less): its header, checked, and its
 * payload at buf + DP_FRAME_HDR_LEN.  0 when the payload is to be decoded,
 * or -EPROTO with *why.  After an error *h holds the header when it names a
 * message (another major version, a length above the maximum or other than
 * the payload's), and is zeroed when it does not (too short, another magic).
 */
int dp_frame_split(const struct dp_frame_proto *p, const uint8_t *buf, size_t len,
		   struct dp_frame_hdr *h, enum dp_proto_err *why);

/*
 * Writes or reads exactly len bytes before the deadline: timeout_ms, and
 * timeout_ms more for each whole MiB of len, three at most.  timeout_ms < 0
 * waits forever.  The time the caller could not run (its machine or itself
 * stopped) is not counted (deadline.h); the _until forms take a deadline
 * already started, with the same allowance in its timeout.  0, -ETIMEDOUT, -ECONNRESET when the peer is gone (for a
 * read: end of file before the first byte), -EPROTO with the read ending
 * early (end of file after some bytes), or another -errno.
 */
int dp_frame_write_all(int fd, const void *buf, size_t len, int timeout_ms);
int dp_frame_read_all(int fd, void *buf, size_t len, int timeout_ms);
int dp_frame_write_all_until(int fd, const void *buf, size_t len, struct dp_deadline *d);

/*
 * Receives one frame of a protocol within timeout_ms (more for a frame of a
 * MiB or more, as dp_frame_write_all): its header, and its
 * payload into a new buffer (*payload, to free; NULL for an empty payload).
 * 0, -ECONNRESET when the peer closed between frames, -ETIMEDOUT,
 * -ENOMEM, -EPROTO with *why, or another -errno.  After
 * DP_PROTO_ERR_VERSION the payload was read too (a refusal can be decoded).
 */
int dp_frame_recv(int fd, uint32_t magic, uint8_t major, uint32_t max_len, int timeout_ms,
		  struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why);

/*
 * dp_frame_recv for a protocol's message: 0 when the payload is to be
 * decoded (a REFUSE of any major version included: saying why is its
 * point), or dp_frame_recv's error.  After an error *h is as after
 * dp_frame_split, and *payload is NULL.
 */
int dp_frame_recv_msg(int fd, const struct dp_frame_proto *p, int timeout_ms,
		      struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why);
int dp_frame_recv_msg_until(int fd, const struct dp_frame_proto *p, struct dp_deadline *d,
			    struct dp_frame_hdr *h, uint8_t **payload, enum dp_proto_err *why);

/*
 * What the reply to the request (req_type, req_seq) says, from its header:
 * 0 (the request's reply), -EOPNOTSUPP (UNSUPPORTED), -ECONNREFUSED
 * (REFUSE), or -EPROTO with *why DP_PROTO_ERR_VALUE (another seq or type).
 */
int dp_frame_check_reply(uint16_t req_type, uint32_t req_seq, uint16_t type, uint32_t seq,
			 enum dp_proto_err *why);

#endif /* DP_PROTO_FRAME_H */
