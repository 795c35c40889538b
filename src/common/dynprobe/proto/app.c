/*
 * The app protocol's messages: encoding and decoding, field by field, with
 * every bound checked on both sides (see app.h for the layouts).
 *
 * Senders run the same checks as receivers, so that a bug on one side shows
 * up where it is made, not as a refusal on the other.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/app.h"

const struct dp_frame_proto dp_app_proto = {
	.magic = DP_APP_MAGIC, .major = DP_APP_MAJOR, .minor = DP_APP_MINOR,
	.max_payload = DP_APP_MAX_PAYLOAD,
};

static const struct dp_frame_type_name type_names[] = {
	{ DP_APP_HELLO, "HELLO" },
	{ DP_APP_DEFINE_PROBE, "DEFINE_PROBE" },
	{ DP_APP_ALLOC_CODE, "ALLOC_CODE" },
	{ DP_APP_NOTE_INSTALLED, "NOTE_INSTALLED" },
	{ DP_APP_NOTE_REMOVED, "NOTE_REMOVED" },
	{ DP_APP_LIST, "LIST" },
	{ DP_APP_PING, "PING" },
	{ DP_APP_GO, "GO" },
	{ DP_APP_HELLO_REPLY, "HELLO_REPLY" },
	{ DP_APP_DEFINE_PROBE_REPLY, "DEFINE_PROBE_REPLY" },
	{ DP_APP_ALLOC_CODE_REPLY, "ALLOC_CODE_REPLY" },
	{ DP_APP_NOTE_INSTALLED_REPLY, "NOTE_INSTALLED_REPLY" },
	{ DP_APP_NOTE_REMOVED_REPLY, "NOTE_REMOVED_REPLY" },
	{ DP_APP_LIST_REPLY, "LIST_REPLY" },
	{ DP_APP_PING_REPLY, "PING_REPLY" },
	{ DP_APP_GO_REPLY, "GO_REPLY" },
	{ DP_APP_UNSUPPORTED, "UNSUPPORTED" },
	{ DP_APP_REFUSE, "REFUSE" },
};

const char *dp_app_type_name(uint16_t type)
{
	return dp_frame_type_name(type_names, sizeof(type_names) / sizeof(type_names[0]), type);
}

/* Value checks shared by both directions: DP_PROTO_ERR_NONE or why not. */

static enum dp_proto_err check_probe(const struct dp_app_probe *p)
{
	if (!p->id || (p->flags & ~(uint32_t)DP_APP_PROBE_FLAGS_ALL))
		return DP_PROTO_ERR_VALUE;
	return p->event[0] ? DP_PROTO_ERR_NONE : DP_PROTO_ERR_STRING;
}

/* A hop: within a rel8's reach of the site's first 2 bytes, outside the window. */
static bool hop_ok(const struct dp_app_patch *p)
{
	int64_t rel = (int64_t)(p->hop - (p->site + 2));

	return p->hop_len == DP_APP_HOP_LEN && p->len >= 2 && p->len < 5 && rel >= -128 &&
	       rel <= 127 && (p->hop + p->hop_len <= p->site || p->hop >= p->site + p->len);
}

static enum dp_proto_err check_patch(const struct dp_app_patch *p)
{
	if (p->len < 1 || p->len > DP_APP_MAX_ORIG || p->hop_len > DP_APP_HOP_LEN)
		return DP_PROTO_ERR_BOUNDS;
	if (p->nprobes < 1 || p->nprobes > DP_APP_MAX_PATCH_PROBES)
		return DP_PROTO_ERR_BOUNDS;
	switch (p->method) {
	case DP_APP_METHOD_JUMP:
		/* A jmp rel32 takes 5 bytes and leads somewhere; a jmp rel8
		 * takes 2 and leads to a hop. */
		if (!p->tramp || !p->tramp_len)
			return DP_PROTO_ERR_VALUE;
		if (p->hop_len ? !hop_ok(p) : p->len < 5 || p->hop)
			return DP_PROTO_ERR_VALUE;
		break;
	case DP_APP_METHOD_INT3:
		if (!p->resume || p->hop || p->hop_len)
			return DP_PROTO_ERR_VALUE;
		break;
	default:
		return DP_PROTO_ERR_VALUE;
	}
	if (!p->site)
		return DP_PROTO_ERR_VALUE;
	for (uint32_t i = 0; i < p->nprobes; i++)
		if (!p->probes[i])
			return DP_PROTO_ERR_VALUE;
	return DP_PROTO_ERR_NONE;
}

/* An integer's size in bytes (0: not an integer). */
static bool size_ok(uint8_t size)
{
	return size == 0 || size == 1 || size == 2 || size == 4 || size == 8;
}

static enum dp_proto_err check_ctx(const struct dp_ctx *c)
{
	bool base_ok = c->addr.base < 16 || c->addr.base == DP_CTX_REG_RIP ||
		       c->addr.base == DP_CTX_ABS;

	/* Byte-level ranges only: what the values mean is the agent's to
	 * check (dp_ctx_layout), with a message. */
	if (c->kind > DP_CTX_RETVAL || c->reg >= DP_CTX_REG__COUNT || !size_ok(c->width) ||
	    c->shift >= 64 || c->type.type > DP_FT_DOUBLE || !size_ok(c->type.size) ||
	    !base_ok || c->addr.deref > 1 || c->walker > DP_BT_CFI)
		return DP_PROTO_ERR_VALUE;
	if (c->maxlen > DP_CTX_STRING_MAX || c->depth > DP_CTX_BT_MAX)
		return DP_PROTO_ERR_BOUNDS;
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err check_define(const struct dp_app_define_probe *d)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (!d->id || !d->site || (d->flags & ~(uint32_t)DP_APP_PROBE_FLAGS_ALL))
		return DP_PROTO_ERR_VALUE;
	if (!d->event[0])
		return DP_PROTO_ERR_STRING;
	if (d->nctx > DP_APP_MAX_CTX || (d->nctx && !d->ctx))
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < d->nctx && !err; i++)
		err = check_ctx(&d->ctx[i]);
	return err;
}

static enum dp_proto_err check_state(const struct dp_app_state *s)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (s->nprobes > DP_APP_MAX_PROBES || s->npatches > DP_APP_MAX_PATCHES ||
	    (s->nprobes && !s->probes) || (s->npatches && !s->patches))
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < s->nprobes && !err; i++)
		err = check_probe(&s->probes[i]);
	for (uint32_t i = 0; i < s->npatches && !err; i++)
		err = check_patch(&s->patches[i]);
	return err;
}

/* Encoding. */

static void put_probe(struct dp_wbuf *w, const struct dp_app_probe *p)
{
	dp_wbuf_u32(w, p->id);
	dp_wbuf_u64(w, p->site);
	dp_wbuf_u32(w, p->flags);
	dp_wbuf_str(w, p->event, sizeof(p->event));
	dp_wbuf_u64(w, p->hits);
	dp_wbuf_u64(w, p->recursions);
	dp_wbuf_u64(w, p->recorded);
	dp_wbuf_u64(w, p->mem_errors);
}

static void put_patch(struct dp_wbuf *w, const struct dp_app_patch *p)
{
	dp_wbuf_u64(w, p->site);
	dp_wbuf_u8(w, p->method);
	dp_wbuf_u8(w, p->len);
	dp_wbuf_bytes(w, p->orig, p->len);
	dp_wbuf_u64(w, p->hop);
	dp_wbuf_u8(w, p->hop_len);
	dp_wbuf_bytes(w, p->hop_orig, p->hop_len);
	dp_wbuf_u64(w, p->tramp);
	dp_wbuf_u32(w, p->tramp_len);
	dp_wbuf_u64(w, p->resume);
	dp_wbuf_u32(w, p->nprobes);
	for (uint32_t i = 0; i < p->nprobes; i++)
		dp_wbuf_u32(w, p->probes[i]);
}

static void put_state(struct dp_wbuf *w, const struct dp_app_state *s)
{
	dp_wbuf_u32(w, s->nprobes);
	for (uint32_t i = 0; i < s->nprobes; i++)
		put_probe(w, &s->probes[i]);
	dp_wbuf_u32(w, s->npatches);
	for (uint32_t i = 0; i < s->npatches; i++)
		put_patch(w, &s->patches[i]);
	dp_wbuf_u64(w, s->traps_ours);
	dp_wbuf_u64(w, s->traps_chained);
	dp_wbuf_u64(w, s->traps_reasserted);
}

static void put_ctx(struct dp_wbuf *w, const struct dp_ctx *c)
{
	dp_wbuf_u8(w, c->kind);
	dp_wbuf_str(w, c->name, sizeof(c->name));
	dp_wbuf_u8(w, c->reg);
	dp_wbuf_u8(w, c->width);
	dp_wbuf_u8(w, c->shift);
	dp_wbuf_str(w, c->type.name, sizeof(c->type.name));
	dp_wbuf_u8(w, c->type.type);
	dp_wbuf_u8(w, c->type.size);
	dp_wbuf_u8(w, c->type.is_signed);
	dp_wbuf_u8(w, c->type.hex);
	dp_wbuf_u8(w, c->addr.base);
	dp_wbuf_u8(w, c->addr.deref);
	dp_wbuf_u64(w, (uint64_t)c->addr.offset);
	dp_wbuf_u64(w, (uint64_t)c->addr.offset2);
	dp_wbuf_u32(w, c->maxlen);
	dp_wbuf_u16(w, c->depth);
	dp_wbuf_u8(w, c->walker);
}

static void put_result(struct dp_wbuf *w, const struct dp_app_result *r, bool value)
{
	dp_wbuf_u32(w, (uint32_t)r->status);
	if (value)
		dp_wbuf_u64(w, r->value);
	dp_wbuf_str(w, r->error, sizeof(r->error));
}

/* The payload of m: DP_PROTO_ERR_NONE, or the check it fails. */
static enum dp_proto_err put_payload(struct dp_wbuf *w, const struct dp_app_msg *m)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	switch (m->type) {
	case DP_APP_HELLO:
		if (!m->hello.pid)
			return DP_PROTO_ERR_VALUE;
		err = check_state(&m->hello.state);
		dp_wbuf_u8(w, m->hello.major);
		dp_wbuf_u8(w, m->hello.minor);
		dp_wbuf_u32(w, m->hello.pid);
		dp_wbuf_u64(w, m->hello.probe_hit);
		dp_wbuf_str(w, m->hello.agent_version, sizeof(m->hello.agent_version));
		if (!err)
			put_state(w, &m->hello.state);
		break;
	case DP_APP_HELLO_REPLY:
		dp_wbuf_u8(w, m->hello_reply.major);
		dp_wbuf_u8(w, m->hello_reply.minor);
		dp_wbuf_u32(w, m->hello_reply.daemon_pid);
		break;
	case DP_APP_DEFINE_PROBE:
		err = check_define(&m->define_probe);
		if (err)
			break;
		dp_wbuf_u32(w, m->define_probe.id);
		dp_wbuf_u64(w, m->define_probe.site);
		dp_wbuf_u32(w, m->define_probe.flags);
		dp_wbuf_str(w, m->define_probe.event, sizeof(m->define_probe.event));
		dp_wbuf_u32(w, m->define_probe.nctx);
		for (uint32_t i = 0; i < m->define_probe.nctx; i++)
			put_ctx(w, &m->define_probe.ctx[i]);
		break;
	case DP_APP_ALLOC_CODE:
		if (!m->alloc_code.size || m->alloc_code.size > DP_APP_MAX_CODE)
			return DP_PROTO_ERR_VALUE;
		dp_wbuf_u64(w, m->alloc_code.near);
		dp_wbuf_u32(w, m->alloc_code.size);
		break;
	case DP_APP_NOTE_INSTALLED:
		err = check_patch(&m->note_installed);
		if (!err)
			put_patch(w, &m->note_installed);
		break;
	case DP_APP_NOTE_REMOVED:
		dp_wbuf_u64(w, m->note_removed);
		break;
	case DP_APP_LIST:
	case DP_APP_GO:
	case DP_APP_GO_REPLY:
		break;
	case DP_APP_LIST_REPLY:
		err = check_state(&m->list_reply);
		if (!err)
			put_state(w, &m->list_reply);
		break;
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
		if (m->result.status > 0)
			return DP_PROTO_ERR_VALUE;
		put_result(w, &m->result, m->type == DP_APP_DEFINE_PROBE_REPLY ||
					      m->type == DP_APP_ALLOC_CODE_REPLY);
		break;
	case DP_APP_PING:
	case DP_APP_PING_REPLY:
		dp_wbuf_u64(w, m->ping);
		break;
	case DP_APP_UNSUPPORTED:
		dp_wbuf_u16(w, m->unsupported);
		break;
	case DP_APP_REFUSE:
		dp_frame_put_refuse(w, m->refuse.major, m->refuse.minor, m->refuse.reason,
				    sizeof(m->refuse.reason));
		break;
	default:
		return DP_PROTO_ERR_TYPE;
	}
	return err;
}

int dp_app_encode(const struct dp_app_msg *m, struct dp_wbuf *w)
{
	dp_frame_begin(w, &dp_app_proto, m->type, m->seq);
	return dp_frame_end(w, put_payload(w, m));
}

/* Decoding.  Each reader stops r at an error and leaves its output zeroed or
 * partial; the caller releases the message on error.  Readers of array
 * elements take them untyped (dp_rbuf_get_fn). */

static void get_probe(struct dp_rbuf *r, void *elem)
{
	struct dp_app_probe *p = elem;

	p->id = dp_rbuf_u32(r);
	p->site = dp_rbuf_u64(r);
	p->flags = dp_rbuf_u32(r);
	dp_rbuf_str(r, p->event, sizeof(p->event));
	p->hits = dp_rbuf_u64(r);
	p->recursions = dp_rbuf_u64(r);
	p->recorded = dp_rbuf_u64(r);
	p->mem_errors = dp_rbuf_u64(r);
}

static void get_patch(struct dp_rbuf *r, void *elem)
{
	struct dp_app_patch *p = elem;

	p->site = dp_rbuf_u64(r);
	p->method = dp_rbuf_u8(r);
	p->len = dp_rbuf_u8(r);
	if (p->len > DP_APP_MAX_ORIG) {
		dp_rbuf_fail(r, DP_PROTO_ERR_BOUNDS);
		return;
	}
	dp_rbuf_bytes(r, p->orig, p->len);
	p->hop = dp_rbuf_u64(r);
	p->hop_len = dp_rbuf_u8(r);
	if (p->hop_len > DP_APP_HOP_LEN) {
		dp_rbuf_fail(r, DP_PROTO_ERR_BOUNDS);
		return;
	}
	dp_rbuf_bytes(r, p->hop_orig, p->hop_len);
	p->tramp = dp_rbuf_u64(r);
	p->tramp_len = dp_rbuf_u32(r);
	p->resume = dp_rbuf_u64(r);
	p->nprobes = dp_rbuf_count(r, DP_APP_MAX_PATCH_PROBES, 4);
	for (uint32_t i = 0; i < p->nprobes; i++)
		p->probes[i] = dp_rbuf_u32(r);
}

/* The fewest bytes a probe and a patch take on the wire (for counts). */
#define PROBE_MIN_BYTES (4 + 8 + 4 + 2 + 4 * 8)
#define PATCH_MIN_BYTES (8 + 1 + 1 + 8 + 1 + 8 + 4 + 8 + 4)
#define CTX_MIN_BYTES (1 + 2 + 3 + 2 + 4 + 2 + 8 + 8 + 4 + 2 + 1)

static void get_state(struct dp_rbuf *r, struct dp_app_state *s)
{
	s->probes = dp_rbuf_array(r, &s->nprobes, DP_APP_MAX_PROBES, PROBE_MIN_BYTES,
				  sizeof(*s->probes), get_probe);
	s->patches = dp_rbuf_array(r, &s->npatches, DP_APP_MAX_PATCHES, PATCH_MIN_BYTES,
				   sizeof(*s->patches), get_patch);
	s->traps_ours = dp_rbuf_u64(r);
	s->traps_chained = dp_rbuf_u64(r);
	s->traps_reasserted = dp_rbuf_u64(r);
}

static void get_ctx(struct dp_rbuf *r, void *elem)
{
	struct dp_ctx *c = elem;

	c->kind = dp_rbuf_u8(r);
	dp_rbuf_str(r, c->name, sizeof(c->name));
	c->reg = dp_rbuf_u8(r);
	c->width = dp_rbuf_u8(r);
	c->shift = dp_rbuf_u8(r);
	dp_rbuf_str(r, c->type.name, sizeof(c->type.name));
	c->type.type = dp_rbuf_u8(r);
	c->type.size = dp_rbuf_u8(r);
	c->type.is_signed = dp_rbuf_bool(r);
	c->type.hex = dp_rbuf_bool(r);
	c->addr.base = dp_rbuf_u8(r);
	c->addr.deref = dp_rbuf_u8(r);
	c->addr.offset = (int64_t)dp_rbuf_u64(r);
	c->addr.offset2 = (int64_t)dp_rbuf_u64(r);
	c->maxlen = dp_rbuf_u32(r);
	c->depth = dp_rbuf_u16(r);
	c->walker = dp_rbuf_u8(r);
}

static void get_result(struct dp_rbuf *r, struct dp_app_result *res, bool value)
{
	res->status = (int32_t)dp_rbuf_u32(r);
	if (value)
		res->value = dp_rbuf_u64(r);
	dp_rbuf_str(r, res->error, sizeof(res->error));
	if (res->status > 0)
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
}

/* Reads m's payload; r says whether it was good. */
static void get_payload(struct dp_rbuf *r, struct dp_app_msg *m)
{
	switch (m->type) {
	case DP_APP_HELLO:
		m->hello.major = dp_rbuf_u8(r);
		m->hello.minor = dp_rbuf_u8(r);
		m->hello.pid = dp_rbuf_u32(r);
		m->hello.probe_hit = dp_rbuf_u64(r);
		dp_rbuf_str(r, m->hello.agent_version, sizeof(m->hello.agent_version));
		if (!m->hello.pid)
			dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
		get_state(r, &m->hello.state);
		break;
	case DP_APP_HELLO_REPLY:
		m->hello_reply.major = dp_rbuf_u8(r);
		m->hello_reply.minor = dp_rbuf_u8(r);
		m->hello_reply.daemon_pid = dp_rbuf_u32(r);
		break;
	case DP_APP_DEFINE_PROBE: {
		struct dp_app_define_probe *d = &m->define_probe;

		d->id = dp_rbuf_u32(r);
		d->site = dp_rbuf_u64(r);
		d->flags = dp_rbuf_u32(r);
		dp_rbuf_str(r, d->event, sizeof(d->event));
		d->ctx = dp_rbuf_array(r, &d->nctx, DP_APP_MAX_CTX, CTX_MIN_BYTES, sizeof(*d->ctx),
				       get_ctx);
		break;
	}
	case DP_APP_ALLOC_CODE:
		m->alloc_code.near = dp_rbuf_u64(r);
		m->alloc_code.size = dp_rbuf_u32(r);
		if (!m->alloc_code.size || m->alloc_code.size > DP_APP_MAX_CODE)
			dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
		break;
	case DP_APP_NOTE_INSTALLED:
		get_patch(r, &m->note_installed);
		break;
	case DP_APP_NOTE_REMOVED:
		m->note_removed = dp_rbuf_u64(r);
		break;
	case DP_APP_LIST:
	case DP_APP_GO:
	case DP_APP_GO_REPLY:
		break;
	case DP_APP_LIST_REPLY:
		get_state(r, &m->list_reply);
		break;
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
		get_result(r, &m->result, m->type == DP_APP_DEFINE_PROBE_REPLY ||
					      m->type == DP_APP_ALLOC_CODE_REPLY);
		break;
	case DP_APP_PING:
	case DP_APP_PING_REPLY:
		m->ping = dp_rbuf_u64(r);
		break;
	case DP_APP_UNSUPPORTED:
		m->unsupported = dp_rbuf_u16(r);
		break;
	case DP_APP_REFUSE:
		dp_frame_get_refuse(r, &m->refuse.major, &m->refuse.minor, m->refuse.reason,
				    sizeof(m->refuse.reason));
		break;
	default:
		dp_rbuf_fail(r, DP_PROTO_ERR_TYPE);
		break;
	}
}

/* The value checks that only make sense on a whole message. */
static enum dp_proto_err check_payload(const struct dp_app_msg *m)
{
	switch (m->type) {
	case DP_APP_HELLO:
		return check_state(&m->hello.state);
	case DP_APP_DEFINE_PROBE:
		return check_define(&m->define_probe);
	case DP_APP_NOTE_INSTALLED:
		return check_patch(&m->note_installed);
	case DP_APP_LIST_REPLY:
		return check_state(&m->list_reply);
	default:
		return DP_PROTO_ERR_NONE;
	}
}

/* m, empty but for what its header says. */
static void msg_start(struct dp_app_msg *m, const struct dp_frame_hdr *h)
{
	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->seq = h->seq;
	m->major = h->major;
	m->minor = h->minor;
}

int dp_app_decode(const struct dp_frame_hdr *h, const uint8_t *payload, struct dp_app_msg *m,
		  enum dp_proto_err *why)
{
	struct dp_rbuf r;
	int ret;

	msg_start(m, h);
	ret = dp_frame_check(&dp_app_proto, h, why);
	if (ret)
		return ret;
	dp_rbuf_init(&r, payload, h->len);
	get_payload(&r, m);
	if (!dp_rbuf_finish(&r))
		dp_rbuf_fail(&r, check_payload(m));
	ret = dp_rbuf_result(&r, why);
	if (ret) {
		dp_app_msg_release(m);
		msg_start(m, h);
	}
	return ret;
}

int dp_app_decode_frame(const uint8_t *buf, size_t len, struct dp_app_msg *m,
			enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	int ret = dp_frame_split(&dp_app_proto, buf, len, &h, why);

	if (!ret)
		return dp_app_decode(&h, buf + DP_FRAME_HDR_LEN, m, why);
	msg_start(m, &h);
	return ret;
}

void dp_app_msg_release(struct dp_app_msg *m)
{
	switch (m->type) {
	case DP_APP_HELLO:
		free(m->hello.state.probes);
		free(m->hello.state.patches);
		break;
	case DP_APP_LIST_REPLY:
		free(m->list_reply.probes);
		free(m->list_reply.patches);
		break;
	case DP_APP_DEFINE_PROBE:
		free(m->define_probe.ctx);
		break;
	default:
		break;
	}
	memset(m, 0, sizeof(*m));
}
