/*
 * The app protocol's messages as data: one field table per struct that
 * travels and one line per message type (see app.h for the layouts and
 * codec.h for the walker that encodes and decodes them), the checks of
 * values that only make sense on a whole message, and the API of app.h on
 * top of the codec.
 *
 * Senders run the same checks as receivers, so that a bug on one side shows
 * up where it is made, not as a refusal on the other.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/app.h"
#include "proto/codec.h"

const struct dp_frame_proto dp_app_proto = {
	.magic = DP_APP_MAGIC, .major = DP_APP_MAJOR, .minor = DP_APP_MINOR,
	.max_payload = DP_APP_MAX_PAYLOAD,
};

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

static enum dp_proto_err check_patch(const void *payload)
{
	const struct dp_app_patch *p = payload;

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

static enum dp_proto_err check_ctx_kind(const struct dp_ctx *c, uint8_t last)
{
	bool base_ok = c->addr.base < 16 || c->addr.base == DP_CTX_REG_RIP ||
		       c->addr.base == DP_CTX_ABS;

	/* Byte-level ranges only: what the values mean is the agent's to
	 * check (dp_ctx_layout), with a message. */
	if (c->kind > last || c->reg >= DP_CTX_REG__COUNT || !size_ok(c->width) ||
	    c->shift >= 64 || c->type.type > DP_FT_DOUBLE || !size_ok(c->type.size) ||
	    !base_ok || c->addr.deref > 1 || c->walker > DP_BT_WALKER_LAST)
		return DP_PROTO_ERR_VALUE;
	if (c->maxlen > DP_CTX_STRING_MAX || c->depth > DP_CTX_BT_MAX)
		return DP_PROTO_ERR_BOUNDS;
	return DP_PROTO_ERR_NONE;
}

/* A recipe's bytes: its checks with a message are the agent's
 * (dp_value_check through dp_ctx_layout). */
static enum dp_proto_err check_value(const struct dp_value *v)
{
	if (v->loc > DP_VALUE_LOC_PIECES || (v->flags & ~(unsigned)DP_VALUE_FLAGS_ALL))
		return DP_PROTO_ERR_VALUE;
	for (uint32_t i = 0; i < v->nops && i < DP_VALUE_MAX_OPS; i++)
		if (v->ops[i].op < DP_VOP_REG || v->ops[i].op > DP_VOP_LAST)
			return DP_PROTO_ERR_VALUE;
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err check_ctx(const struct dp_ctx *c)
{
	return check_ctx_kind(c, DP_CTX_RETVAL);
}

static enum dp_proto_err check_ctx_ext(const struct dp_ctx *c)
{
	enum dp_proto_err err = check_ctx_kind(c, DP_CTX_KIND_LAST);

	return err ? err : check_value(&c->value);
}

bool dp_app_ctx_need_ext(const struct dp_ctx *ctx, size_t nctx)
{
	for (size_t i = 0; i < nctx; i++)
		if (ctx[i].kind > DP_CTX_RETVAL)
			return true;
	return false;
}

static enum dp_proto_err check_define_with(const void *payload,
					   enum dp_proto_err (*ctx_ok)(const struct dp_ctx *))
{
	const struct dp_app_define_probe *d = payload;
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (!d->id || !d->site || (d->flags & ~(uint32_t)DP_APP_PROBE_FLAGS_ALL))
		return DP_PROTO_ERR_VALUE;
	if (!d->event[0])
		return DP_PROTO_ERR_STRING;
	if (d->nctx > DP_APP_MAX_CTX || (d->nctx && !d->ctx))
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < d->nctx && !err; i++)
		err = ctx_ok(&d->ctx[i]);
	return err;
}

static enum dp_proto_err check_define(const void *payload)
{
	return check_define_with(payload, check_ctx);
}

static enum dp_proto_err check_define_ext(const void *payload)
{
	return check_define_with(payload, check_ctx_ext);
}

static enum dp_proto_err check_define_probes(const void *payload)
{
	const struct dp_app_define_probes *d = payload;
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (!d->nclasses || !d->nprobes)
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < d->nclasses && !err; i++) {
		const struct dp_app_probe_class *c = &d->classes[i];

		if (c->flags & ~(uint32_t)DP_APP_PROBE_FLAGS_ALL)
			return DP_PROTO_ERR_VALUE;
		if (!c->event[0])
			return DP_PROTO_ERR_STRING;
		for (uint32_t k = 0; k < c->nctx && !err; k++)
			err = check_ctx_ext(&c->ctx[k]);
	}
	for (uint32_t i = 0; i < d->nprobes && !err; i++) {
		const struct dp_app_probe_def *p = &d->probes[i];

		if (!p->id || !p->site || p->cls >= d->nclasses)
			return DP_PROTO_ERR_VALUE;
	}
	return err;
}

static enum dp_proto_err check_patches(const void *payload)
{
	const struct dp_app_patches *m = payload;
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (!m->npatches)
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < m->npatches && !err; i++)
		err = check_patch(&m->patches[i]);
	return err;
}

/* A led's patch (a jump as NOTE_INSTALLED's, or a redirect) and writes. */
static enum dp_proto_err check_led(const struct dp_app_led *l)
{
	const struct dp_app_patch *p = &l->patch;

	if (p->method == DP_APP_METHOD_REDIRECT) {
		if (p->len < 1 || p->len > DP_APP_MAX_ORIG || p->nprobes < 1 ||
		    p->nprobes > DP_APP_MAX_PATCH_PROBES)
			return DP_PROTO_ERR_BOUNDS;
		if (!p->site || !p->tramp || !p->tramp_len || p->hop || p->hop_len || p->resume)
			return DP_PROTO_ERR_VALUE;
		for (uint32_t i = 0; i < p->nprobes; i++)
			if (!p->probes[i])
				return DP_PROTO_ERR_VALUE;
	} else if (p->method != DP_APP_METHOD_JUMP) {
		return DP_PROTO_ERR_VALUE;
	} else {
		enum dp_proto_err err = check_patch(p);

		if (err)
			return err;
	}
	for (uint32_t i = 0; i < l->nwrites; i++) {
		const struct dp_app_write *w = &l->writes[i];

		if (w->kind == DP_APP_WRITE_BRANCH ? w->len < 2 || w->len > DP_APP_MAX_WRITE_LEN :
		    w->kind == DP_APP_WRITE_HOP ? w->len != DP_APP_HOP_LEN : true)
			return DP_PROTO_ERR_VALUE;
		if (!w->addr)
			return DP_PROTO_ERR_VALUE;
	}
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err check_leds_of(const struct dp_app_leds *m, bool some)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if ((some && !m->nleds) || (m->nleds && !m->leds))
		return DP_PROTO_ERR_BOUNDS;
	for (uint32_t i = 0; i < m->nleds && !err; i++)
		err = check_led(&m->leds[i]);
	return err;
}

static enum dp_proto_err check_note_writes(const void *payload)
{
	return check_leds_of(payload, true);
}

static enum dp_proto_err check_list_writes(const void *payload)
{
	return check_leds_of(payload, false);
}

static enum dp_proto_err check_sites(const void *payload)
{
	const struct dp_app_sites *m = payload;

	return m->nsites ? DP_PROTO_ERR_NONE : DP_PROTO_ERR_BOUNDS;
}

static enum dp_proto_err check_state(const void *payload)
{
	const struct dp_app_state *s = payload;
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

static enum dp_proto_err check_hello(const void *payload)
{
	return check_state(&((const struct dp_app_hello *)payload)->state);
}

/* The structs that travel, field by field in wire order. */

#define T struct dp_app_probe
static const struct dp_field probe_fields[] = {
	DP_FIELD_U32(T, id),
	DP_FIELD_U64(T, site),
	DP_FIELD_U32(T, flags),
	DP_FIELD_STR(T, event, 0),
	DP_FIELD_U64(T, hits),
	DP_FIELD_U64(T, recursions),
	DP_FIELD_U64(T, recorded),
	DP_FIELD_U64(T, mem_errors),
};
DP_STRUCT_DESC(probe_desc, T, probe_fields);
#undef T

static const struct dp_field probe_id_fields[] = { DP_ELEM_U32 };
DP_STRUCT_DESC(probe_id_desc, uint32_t, probe_id_fields);

#define T struct dp_app_patch
static const struct dp_field patch_fields[] = {
	DP_FIELD_U64(T, site),
	DP_FIELD_U8(T, method),
	DP_FIELD_BYTES(T, orig, len, 0),
	DP_FIELD_U64(T, hop),
	DP_FIELD_BYTES(T, hop_orig, hop_len, 0),
	DP_FIELD_U64(T, tramp),
	DP_FIELD_U32(T, tramp_len),
	DP_FIELD_U64(T, resume),
	DP_FIELD_FIXED(T, probes, nprobes, probe_id_desc),
};
DP_STRUCT_DESC(patch_desc, T, patch_fields);
#undef T

#define T struct dp_app_state
static const struct dp_field state_fields[] = {
	DP_FIELD_ARRAY(T, probes, nprobes, DP_APP_MAX_PROBES, probe_desc),
	DP_FIELD_ARRAY(T, patches, npatches, DP_APP_MAX_PATCHES, patch_desc),
	DP_FIELD_U64(T, traps_ours),
	DP_FIELD_U64(T, traps_chained),
	DP_FIELD_U64(T, traps_reasserted),
};
DP_STRUCT_DESC(state_desc, T, state_fields);
#undef T

#define T struct dp_field_desc
static const struct dp_field field_desc_fields[] = {
	DP_FIELD_STR(T, name, 0),
	DP_FIELD_U8(T, type),
	DP_FIELD_U8(T, size),
	DP_FIELD_BOOL(T, is_signed),
	DP_FIELD_BOOL(T, hex),
};
DP_STRUCT_DESC(field_desc_desc, T, field_desc_fields);
#undef T

#define T struct dp_ctx_addr
static const struct dp_field ctx_addr_fields[] = {
	DP_FIELD_U8(T, base),
	DP_FIELD_U8(T, deref),
	DP_FIELD_U64(T, offset),
	DP_FIELD_U64(T, offset2),
};
DP_STRUCT_DESC(ctx_addr_desc, T, ctx_addr_fields);
#undef T

/* A context's fields on the wire, in both DEFINE_PROBE and DEFINE_PROBE_EXT. */
#define CTX_FIELDS(T) \
	DP_FIELD_U8(T, kind), \
	DP_FIELD_STR(T, name, 0), \
	DP_FIELD_U8(T, reg), \
	DP_FIELD_U8(T, width), \
	DP_FIELD_U8(T, shift), \
	DP_FIELD_STRUCT(T, type, field_desc_desc), \
	DP_FIELD_STRUCT(T, addr, ctx_addr_desc), \
	DP_FIELD_U32(T, maxlen), \
	DP_FIELD_U16(T, depth), \
	DP_FIELD_U8(T, walker)

#define T struct dp_ctx
static const struct dp_field ctx_fields[] = {
	CTX_FIELDS(T),
};
DP_STRUCT_DESC(ctx_desc, T, ctx_fields);
#undef T

#define T struct dp_value_op
static const struct dp_field value_op_fields[] = {
	DP_FIELD_U8(T, op),
	DP_FIELD_U8(T, arg),
	DP_FIELD_U64(T, imm),
};
DP_STRUCT_DESC(value_op_desc, T, value_op_fields);
#undef T

#define T struct dp_value
static const struct dp_field value_fields[] = {
	DP_FIELD_U8(T, loc),
	DP_FIELD_U8(T, flags),
	DP_FIELD_FIXED(T, ops, nops, value_op_desc),
};
DP_STRUCT_DESC(value_desc, T, value_fields);
#undef T

/* DEFINE_PROBE_EXT's context: DEFINE_PROBE's, then the recipe. */
#define T struct dp_ctx
static const struct dp_field ctx_ext_fields[] = {
	CTX_FIELDS(T),
	DP_FIELD_STRUCT(T, value, value_desc),
};
DP_STRUCT_DESC(ctx_ext_desc, T, ctx_ext_fields);
#undef T

#define T struct dp_app_hello
static const struct dp_field hello_fields[] = {
	DP_FIELD_U8(T, major),
	DP_FIELD_U8(T, minor),
	DP_FIELD_U32(T, pid),
	DP_FIELD_U64(T, probe_hit),
	DP_FIELD_STR(T, agent_version, 0),
	DP_CHECK_U32(T, pid, 1, UINT32_MAX),
	DP_FIELD_STRUCT(T, state, state_desc),
};
DP_STRUCT_DESC(hello_desc, T, hello_fields);
#undef T

#define T struct dp_app_hello_reply
static const struct dp_field hello_reply_fields[] = {
	DP_FIELD_U8(T, major),
	DP_FIELD_U8(T, minor),
	DP_FIELD_U32(T, daemon_pid),
};
DP_STRUCT_DESC(hello_reply_desc, T, hello_reply_fields);
#undef T

#define T struct dp_app_define_probe
static const struct dp_field define_fields[] = {
	DP_FIELD_U32(T, id),
	DP_FIELD_U64(T, site),
	DP_FIELD_U32(T, flags),
	DP_FIELD_STR(T, event, 0),
	DP_FIELD_ARRAY(T, ctx, nctx, DP_APP_MAX_CTX, ctx_desc),
};
DP_STRUCT_DESC(define_desc, T, define_fields);
static const struct dp_field define_ext_fields[] = {
	DP_FIELD_U32(T, id),
	DP_FIELD_U64(T, site),
	DP_FIELD_U32(T, flags),
	DP_FIELD_STR(T, event, 0),
	DP_FIELD_ARRAY(T, ctx, nctx, DP_APP_MAX_CTX, ctx_ext_desc),
};
DP_STRUCT_DESC(define_ext_desc, T, define_ext_fields);
#undef T

#define T struct dp_app_probe_class
static const struct dp_field probe_class_fields[] = {
	DP_FIELD_U32(T, flags),
	DP_FIELD_STR(T, event, 0),
	DP_FIELD_ARRAY(T, ctx, nctx, DP_APP_MAX_CTX, ctx_ext_desc),
};
DP_STRUCT_DESC(probe_class_desc, T, probe_class_fields);
#undef T

#define T struct dp_app_probe_def
static const struct dp_field probe_def_fields[] = {
	DP_FIELD_U32(T, id),
	DP_FIELD_U64(T, site),
	DP_FIELD_U32(T, cls),
};
DP_STRUCT_DESC(probe_def_desc, T, probe_def_fields);
#undef T

#define T struct dp_app_define_probes
static const struct dp_field define_probes_fields[] = {
	DP_FIELD_ARRAY(T, classes, nclasses, DP_APP_MAX_BATCH, probe_class_desc),
	DP_FIELD_ARRAY(T, probes, nprobes, DP_APP_MAX_BATCH, probe_def_desc),
};
DP_STRUCT_DESC(define_probes_desc, T, define_probes_fields);
#undef T

static const struct dp_field handle_fields[] = { DP_ELEM_U64 };
DP_STRUCT_DESC(handle_desc, uint64_t, handle_fields);

#define T struct dp_app_define_probes_reply
static const struct dp_field define_probes_reply_fields[] = {
	DP_FIELD_I32(T, status),
	DP_FIELD_STR(T, error, 0),
	DP_FIELD_ARRAY(T, handles, nhandles, DP_APP_MAX_BATCH, handle_desc),
	DP_CHECK_STATUS(T, status),
};
DP_STRUCT_DESC(define_probes_reply_desc, T, define_probes_reply_fields);
#undef T

#define T struct dp_app_patches
static const struct dp_field patches_fields[] = {
	DP_FIELD_ARRAY(T, patches, npatches, DP_APP_MAX_BATCH, patch_desc),
};
DP_STRUCT_DESC(patches_desc, T, patches_fields);
#undef T

#define T struct dp_app_write
static const struct dp_field write_fields[] = {
	DP_FIELD_U64(T, addr),
	DP_FIELD_U8(T, kind),
	DP_FIELD_BYTES(T, orig, len, 1),
};
DP_STRUCT_DESC(write_desc, T, write_fields);
#undef T

#define T struct dp_app_led
static const struct dp_field led_fields[] = {
	DP_FIELD_STRUCT(T, patch, patch_desc),
	DP_FIELD_FIXED(T, writes, nwrites, write_desc),
};
DP_STRUCT_DESC(led_desc, T, led_fields);
#undef T

#define T struct dp_app_leds
static const struct dp_field note_writes_fields[] = {
	DP_FIELD_ARRAY(T, leds, nleds, DP_APP_MAX_BATCH, led_desc),
};
DP_STRUCT_DESC(note_writes_desc, T, note_writes_fields);
static const struct dp_field list_writes_fields[] = {
	DP_FIELD_ARRAY(T, leds, nleds, DP_APP_MAX_PATCHES, led_desc),
};
DP_STRUCT_DESC(list_writes_desc, T, list_writes_fields);
#undef T

#define T struct dp_app_sites
static const struct dp_field sites_fields[] = {
	DP_FIELD_ARRAY(T, sites, nsites, DP_APP_MAX_BATCH, handle_desc),
};
DP_STRUCT_DESC(sites_desc, T, sites_fields);
#undef T

#define T struct dp_app_alloc_code
static const struct dp_field alloc_fields[] = {
	DP_FIELD_U64(T, near),
	DP_FIELD_U32_IN(T, size, 1, DP_APP_MAX_CODE, 0),
};
DP_STRUCT_DESC(alloc_desc, T, alloc_fields);
#undef T

/* DEFINE_PROBE's and ALLOC_CODE's replies carry a value, NOTE_*'s do not. */
#define T struct dp_app_result
static const struct dp_field result_value_fields[] = {
	DP_FIELD_I32(T, status),
	DP_FIELD_U64(T, value),
	DP_FIELD_STR(T, error, 0),
	DP_CHECK_STATUS(T, status),
};
DP_STRUCT_DESC(result_value_desc, T, result_value_fields);
static const struct dp_field result_fields[] = {
	DP_FIELD_I32(T, status),
	DP_FIELD_STR(T, error, 0),
	DP_CHECK_STATUS(T, status),
};
DP_STRUCT_DESC(result_desc, T, result_fields);
#undef T

DP_REFUSE_DESC(refuse_desc, struct dp_app_refuse);

/* FOLLOW: its flags, none unknown. */
static const struct dp_field follow_fields[] = {
	DP_ELEM_U32_IN(0, DP_APP_FOLLOW_ALL, 0),
};
DP_STRUCT_DESC(follow_desc, uint32_t, follow_fields);


/* Every message type: its payload (the union member of struct dp_app_msg)
 * and the checks of the whole message. */
static const struct dp_msg_desc app_msgs[] = {
	{ DP_APP_HELLO, "HELLO", &hello_desc, check_hello },
	{ DP_APP_DEFINE_PROBE, "DEFINE_PROBE", &define_desc, check_define },
	{ DP_APP_ALLOC_CODE, "ALLOC_CODE", &alloc_desc, NULL },
	{ DP_APP_NOTE_INSTALLED, "NOTE_INSTALLED", &patch_desc, check_patch },
	{ DP_APP_NOTE_REMOVED, "NOTE_REMOVED", &dp_codec_u64, NULL },
	{ DP_APP_LIST, "LIST", NULL, NULL },
	{ DP_APP_PING, "PING", &dp_codec_u64, NULL },
	{ DP_APP_GO, "GO", NULL, NULL },
	{ DP_APP_DEFINE_PROBE_EXT, "DEFINE_PROBE_EXT", &define_ext_desc, check_define_ext },
	{ DP_APP_MAPPED, "MAPPED", &dp_codec_u64, NULL },
	{ DP_APP_DEFINE_PROBES, "DEFINE_PROBES", &define_probes_desc, check_define_probes },
	{ DP_APP_NOTE_INSTALLED_MANY, "NOTE_INSTALLED_MANY", &patches_desc, check_patches },
	{ DP_APP_NOTE_REMOVED_MANY, "NOTE_REMOVED_MANY", &sites_desc, check_sites },
	{ DP_APP_FOLLOW, "FOLLOW", &follow_desc, NULL },
	{ DP_APP_NOTE_WRITES, "NOTE_WRITES", &note_writes_desc, check_note_writes },
	{ DP_APP_LIST_WRITES, "LIST_WRITES", NULL, NULL },
	{ DP_APP_HELLO_REPLY, "HELLO_REPLY", &hello_reply_desc, NULL },
	{ DP_APP_DEFINE_PROBE_REPLY, "DEFINE_PROBE_REPLY", &result_value_desc, NULL },
	{ DP_APP_ALLOC_CODE_REPLY, "ALLOC_CODE_REPLY", &result_value_desc, NULL },
	{ DP_APP_NOTE_INSTALLED_REPLY, "NOTE_INSTALLED_REPLY", &result_desc, NULL },
	{ DP_APP_NOTE_REMOVED_REPLY, "NOTE_REMOVED_REPLY", &result_desc, NULL },
	{ DP_APP_LIST_REPLY, "LIST_REPLY", &state_desc, check_state },
	{ DP_APP_PING_REPLY, "PING_REPLY", &dp_codec_u64, NULL },
	{ DP_APP_GO_REPLY, "GO_REPLY", NULL, NULL },
	{ DP_APP_DEFINE_PROBE_EXT_REPLY, "DEFINE_PROBE_EXT_REPLY", &result_value_desc, NULL },
	{ DP_APP_MAPPED_REPLY, "MAPPED_REPLY", &dp_codec_u64, NULL },
	{ DP_APP_DEFINE_PROBES_REPLY, "DEFINE_PROBES_REPLY", &define_probes_reply_desc, NULL },
	{ DP_APP_NOTE_INSTALLED_MANY_REPLY, "NOTE_INSTALLED_MANY_REPLY", &result_value_desc,
	  NULL },
	{ DP_APP_NOTE_REMOVED_MANY_REPLY, "NOTE_REMOVED_MANY_REPLY", &result_desc, NULL },
	{ DP_APP_FOLLOW_REPLY, "FOLLOW_REPLY", &result_desc, NULL },
	{ DP_APP_NOTE_WRITES_REPLY, "NOTE_WRITES_REPLY", &result_value_desc, NULL },
	{ DP_APP_LIST_WRITES_REPLY, "LIST_WRITES_REPLY", &list_writes_desc, check_list_writes },
	{ DP_APP_UNSUPPORTED, "UNSUPPORTED", &dp_codec_u16, NULL },
	{ DP_APP_REFUSE, "REFUSE", &refuse_desc, NULL },
};

DP_CODEC_MSG_CHECK(struct dp_app_msg, hello);

static const struct dp_codec app_codec = {
	DP_CODEC_MSGS(app_msgs, struct dp_app_msg, hello),
	.frame = &dp_app_proto,
	.peer_requests = true,
};

DP_CODEC_DEFINE_API(app, app_codec)

struct app_cb {
	void (*cb)(void *arg, struct dp_app_msg *m);
	void *arg;
};

static void app_cb_call(void *arg, void *m)
{
	struct app_cb *c = arg;

	c->cb(c->arg, m);
}

int dp_app_call_cb(int fd, struct dp_app_msg *req, uint32_t *seq, struct dp_app_msg *reply,
		   int timeout_ms, enum dp_proto_err *why,
		   void (*cb)(void *arg, struct dp_app_msg *m), void *arg)
{
	struct app_cb c = { cb, arg };

	return dp_codec_call_cb(&app_codec, fd, req, seq, reply, timeout_ms, why,
				cb ? app_cb_call : NULL, &c);
}
