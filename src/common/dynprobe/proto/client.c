/*
 * The client protocol's messages (see client.h for the layouts): encoding
 * and decoding field by field, the builders' helpers, and the socket side
 * (sending, receiving, calls, where the daemon's files are, connecting).
 *
 * As in app.c, senders run the checks receivers run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/client.h"

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
	{ DP_CLIENT_ENABLE, "ENABLE" },
	{ DP_CLIENT_DISABLE, "DISABLE" },
	{ DP_CLIENT_ADD_CONTEXT, "ADD_CONTEXT" },
	{ DP_CLIENT_LIST, "LIST" },
	{ DP_CLIENT_SITES, "SITES" },
	{ DP_CLIENT_SESSION_DESTROYED, "SESSION_DESTROYED" },
	{ DP_CLIENT_PING, "PING" },
	{ DP_CLIENT_ENABLE_MANY, "ENABLE_MANY" },
	{ DP_CLIENT_ENABLE_REPLY, "ENABLE_REPLY" },
	{ DP_CLIENT_DISABLE_REPLY, "DISABLE_REPLY" },
	{ DP_CLIENT_ADD_CONTEXT_REPLY, "ADD_CONTEXT_REPLY" },
	{ DP_CLIENT_LIST_REPLY, "LIST_REPLY" },
	{ DP_CLIENT_SITES_REPLY, "SITES_REPLY" },
	{ DP_CLIENT_SESSION_DESTROYED_REPLY, "SESSION_DESTROYED_REPLY" },
	{ DP_CLIENT_PING_REPLY, "PING_REPLY" },
	{ DP_CLIENT_ENABLE_MANY_REPLY, "ENABLE_MANY_REPLY" },
	{ DP_CLIENT_UNSUPPORTED, "UNSUPPORTED" },
	{ DP_CLIENT_REFUSE, "REFUSE" },
};

const char *dp_client_type_name(uint16_t type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return NULL;
}

const char *dp_client_method_str(uint8_t method)
{
	switch (method) {
	case DP_CLIENT_METHOD_JUMP:
		return "jump";
	case DP_CLIENT_METHOD_INT3:
		return "int3";
	case DP_CLIENT_METHOD_REFUSED:
		return "refused";
	default:
		return "?";
	}
}

static bool is_report(uint16_t type)
{
	return type == DP_CLIENT_ENABLE_REPLY || type == DP_CLIENT_DISABLE_REPLY ||
	       type == DP_CLIENT_ADD_CONTEXT_REPLY || type == DP_CLIENT_SESSION_DESTROYED_REPLY;
}

/* ---- builders ---------------------------------------------------------- */

/* One more zeroed element at the end of *v (n elements of elem bytes). */
static void *append(void **v, uint32_t *n, size_t elem, uint32_t max)
{
	void *p;

	if (*n >= max)
		return NULL;
	p = realloc(*v, (size_t)(*n + 1) * elem);
	if (!p)
		return NULL;
	*v = p;
	p = (char *)p + (size_t)*n * elem;
	memset(p, 0, elem);
	(*n)++;
	return p;
}

struct dp_client_proc *dp_client_report_add_proc(struct dp_client_report *r)
{
	return append((void **)&r->procs, &r->nprocs, sizeof(*r->procs), DP_CLIENT_MAX_PROCS);
}

struct dp_client_site *dp_client_proc_add_site(struct dp_client_proc *p)
{
	return append((void **)&p->sites, &p->nsites, sizeof(*p->sites), DP_CLIENT_MAX_SITES);
}

int dp_client_report_add_event(struct dp_client_report *r, const char *name)
{
	char *e;

	if (strlen(name) >= DP_CLIENT_EVENT_MAX)
		return -EINVAL;
	e = append((void **)&r->events, &r->nevents, sizeof(*r->events), DP_CLIENT_MAX_NAMES);
	if (!e)
		return r->nevents >= DP_CLIENT_MAX_NAMES ? -E2BIG : -ENOMEM;
	strcpy(e, name);
	return 0;
}

/* ---- checks shared by both directions ---------------------------------- */

static bool method_ok(uint8_t m)
{
	return m >= DP_CLIENT_METHOD_JUMP && m <= DP_CLIENT_METHOD_REFUSED;
}

static bool kind_ok(uint8_t k)
{
	return k == DP_CLIENT_KIND_PROBE || k == DP_CLIENT_KIND_FUNCTION;
}

/* ---- encoding ---------------------------------------------------------- */

static void put_strs(struct dp_wbuf *w, const char (*v)[DP_CLIENT_CTX_MAX], uint32_t n)
{
	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		dp_wbuf_str(w, v[i], DP_CLIENT_CTX_MAX);
}

static void put_names(struct dp_wbuf *w, const char (*v)[DP_CLIENT_EVENT_MAX], uint32_t n)
{
	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		dp_wbuf_str(w, v[i], DP_CLIENT_EVENT_MAX);
}

static void put_pids(struct dp_wbuf *w, const uint32_t *pids, uint32_t n)
{
	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		dp_wbuf_u32(w, pids[i]);
}

static enum dp_proto_err put_proc(struct dp_wbuf *w, const struct dp_client_proc *p)
{
	if (p->nsites > DP_CLIENT_MAX_SITES || (p->nsites && !p->sites))
		return DP_PROTO_ERR_BOUNDS;
	if (p->status > 0)
		return DP_PROTO_ERR_VALUE;
	dp_wbuf_u32(w, p->pid);
	dp_wbuf_u32(w, (uint32_t)p->status);
	dp_wbuf_str(w, p->message, sizeof(p->message));
	dp_wbuf_u32(w, p->njump);
	dp_wbuf_u32(w, p->nint3);
	dp_wbuf_u32(w, p->nrefused);
	dp_wbuf_u32(w, p->nsites);
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dp_client_site *s = &p->sites[i];

		if (!method_ok(s->method))
			return DP_PROTO_ERR_VALUE;
		dp_wbuf_str(w, s->event, sizeof(s->event));
		dp_wbuf_u64(w, s->addr);
		dp_wbuf_u64(w, s->vaddr);
		dp_wbuf_u8(w, s->method);
		dp_wbuf_str(w, s->reason, sizeof(s->reason));
		dp_wbuf_str(w, s->text, sizeof(s->text));
	}
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err put_procs(struct dp_wbuf *w, const struct dp_client_proc *v, uint32_t n)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	if (n > DP_CLIENT_MAX_PROCS || (n && !v))
		return DP_PROTO_ERR_BOUNDS;
	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n && !err; i++)
		err = put_proc(w, &v[i]);
	return err;
}

static enum dp_proto_err put_report(struct dp_wbuf *w, const struct dp_client_report *r)
{
	if (r->status > 0)
		return DP_PROTO_ERR_VALUE;
	if (r->nevents > DP_CLIENT_MAX_NAMES || (r->nevents && !r->events))
		return DP_PROTO_ERR_BOUNDS;
	dp_wbuf_u32(w, (uint32_t)r->status);
	dp_wbuf_str(w, r->message, sizeof(r->message));
	put_names(w, (const char(*)[DP_CLIENT_EVENT_MAX])r->events, r->nevents);
	return put_procs(w, r->procs, r->nprocs);
}

static enum dp_proto_err put_event(struct dp_wbuf *w, const struct dp_client_event *e)
{
	if (!kind_ok(e->kind))
		return DP_PROTO_ERR_VALUE;
	if (e->npids > DP_CLIENT_MAX_PIDS || e->nctx > DP_CLIENT_MAX_CTX ||
	    e->nnames > DP_CLIENT_MAX_NAMES || (e->npids && !e->pids) || (e->nctx && !e->ctx) ||
	    (e->nnames && !e->names))
		return DP_PROTO_ERR_BOUNDS;
	dp_wbuf_str(w, e->session, sizeof(e->session));
	dp_wbuf_str(w, e->channel, sizeof(e->channel));
	dp_wbuf_str(w, e->event, sizeof(e->event));
	dp_wbuf_u8(w, e->kind);
	dp_wbuf_str(w, e->location, sizeof(e->location));
	dp_wbuf_str(w, e->path, sizeof(e->path));
	dp_wbuf_u8(w, e->enabled);
	put_pids(w, e->pids, e->npids);
	put_strs(w, (const char(*)[DP_CLIENT_CTX_MAX])e->ctx, e->nctx);
	put_names(w, (const char(*)[DP_CLIENT_EVENT_MAX])e->names, e->nnames);
	return put_procs(w, e->procs, e->nprocs);
}

static enum dp_proto_err put_insn(struct dp_wbuf *w, const struct dp_client_insn *in)
{
	if (!in->len || in->len > DP_CLIENT_INSN_MAX)
		return DP_PROTO_ERR_BOUNDS;
	if (!method_ok(in->method))
		return DP_PROTO_ERR_VALUE;
	dp_wbuf_u32(w, in->offset);
	dp_wbuf_u8(w, in->len);
	dp_wbuf_bytes(w, in->bytes, in->len);
	dp_wbuf_str(w, in->mnemonic, sizeof(in->mnemonic));
	dp_wbuf_u8(w, in->method);
	dp_wbuf_str(w, in->reason, sizeof(in->reason));
	dp_wbuf_str(w, in->text, sizeof(in->text));
	return DP_PROTO_ERR_NONE;
}

static enum dp_proto_err put_payload(struct dp_wbuf *w, const struct dp_client_msg *m)
{
	enum dp_proto_err err = DP_PROTO_ERR_NONE;

	switch (m->type) {
	case DP_CLIENT_ENABLE: {
		const struct dp_client_enable *e = &m->enable;

		if (!kind_ok(e->kind))
			return DP_PROTO_ERR_VALUE;
		if (e->npids > DP_CLIENT_MAX_PIDS || e->nctx > DP_CLIENT_MAX_CTX ||
		    (e->npids && !e->pids) || (e->nctx && !e->ctx))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_str(w, e->session, sizeof(e->session));
		dp_wbuf_str(w, e->channel, sizeof(e->channel));
		dp_wbuf_str(w, e->event, sizeof(e->event));
		dp_wbuf_u8(w, e->kind);
		dp_wbuf_str(w, e->location, sizeof(e->location));
		dp_wbuf_str(w, e->path, sizeof(e->path));
		put_pids(w, e->pids, e->npids);
		put_strs(w, (const char(*)[DP_CLIENT_CTX_MAX])e->ctx, e->nctx);
		break;
	}
	case DP_CLIENT_ENABLE_MANY: {
		const struct dp_client_enable_many *e = &m->enable_many;

		if (e->npids > DP_CLIENT_MAX_PIDS || e->nctx > DP_CLIENT_MAX_CTX ||
		    e->nspecs > DP_CLIENT_MAX_SPECS || (e->npids && !e->pids) ||
		    (e->nctx && !e->ctx) || (e->nspecs && !e->specs))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_str(w, e->session, sizeof(e->session));
		dp_wbuf_str(w, e->channel, sizeof(e->channel));
		dp_wbuf_str(w, e->path, sizeof(e->path));
		put_pids(w, e->pids, e->npids);
		put_strs(w, (const char(*)[DP_CLIENT_CTX_MAX])e->ctx, e->nctx);
		dp_wbuf_u32(w, e->nspecs);
		for (uint32_t i = 0; i < e->nspecs; i++) {
			if (!kind_ok(e->specs[i].kind))
				return DP_PROTO_ERR_VALUE;
			dp_wbuf_str(w, e->specs[i].event, sizeof(e->specs[i].event));
			dp_wbuf_u8(w, e->specs[i].kind);
			dp_wbuf_str(w, e->specs[i].location, sizeof(e->specs[i].location));
		}
		break;
	}
	case DP_CLIENT_ENABLE_MANY_REPLY: {
		const struct dp_client_reports *rs = &m->reports;

		if (rs->nreports > DP_CLIENT_MAX_SPECS || (rs->nreports && !rs->reports))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_u32(w, rs->nreports);
		for (uint32_t i = 0; i < rs->nreports && !err; i++)
			err = put_report(w, &rs->reports[i]);
		break;
	}
	case DP_CLIENT_DISABLE:
		dp_wbuf_str(w, m->disable.session, sizeof(m->disable.session));
		dp_wbuf_str(w, m->disable.channel, sizeof(m->disable.channel));
		dp_wbuf_str(w, m->disable.event, sizeof(m->disable.event));
		break;
	case DP_CLIENT_ADD_CONTEXT: {
		const struct dp_client_add_context *a = &m->add_context;

		if (a->nctx > DP_CLIENT_MAX_CTX || (a->nctx && !a->ctx))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_str(w, a->session, sizeof(a->session));
		dp_wbuf_str(w, a->channel, sizeof(a->channel));
		dp_wbuf_str(w, a->event, sizeof(a->event));
		put_strs(w, (const char(*)[DP_CLIENT_CTX_MAX])a->ctx, a->nctx);
		break;
	}
	case DP_CLIENT_LIST:
		dp_wbuf_str(w, m->list, sizeof(m->list));
		break;
	case DP_CLIENT_SITES:
		dp_wbuf_str(w, m->sites.path, sizeof(m->sites.path));
		dp_wbuf_str(w, m->sites.function, sizeof(m->sites.function));
		break;
	case DP_CLIENT_SESSION_DESTROYED:
		dp_wbuf_str(w, m->session_destroyed, sizeof(m->session_destroyed));
		break;
	case DP_CLIENT_PING:
		dp_wbuf_u64(w, m->ping);
		break;
	case DP_CLIENT_ENABLE_REPLY:
	case DP_CLIENT_DISABLE_REPLY:
	case DP_CLIENT_ADD_CONTEXT_REPLY:
	case DP_CLIENT_SESSION_DESTROYED_REPLY:
		err = put_report(w, &m->report);
		break;
	case DP_CLIENT_LIST_REPLY: {
		const struct dp_client_list_reply *l = &m->list_reply;

		if (l->status > 0)
			return DP_PROTO_ERR_VALUE;
		if (l->nevents > DP_CLIENT_MAX_EVENTS || (l->nevents && !l->events))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_u32(w, (uint32_t)l->status);
		dp_wbuf_str(w, l->message, sizeof(l->message));
		dp_wbuf_u32(w, l->nevents);
		for (uint32_t i = 0; i < l->nevents && !err; i++)
			err = put_event(w, &l->events[i]);
		break;
	}
	case DP_CLIENT_SITES_REPLY: {
		const struct dp_client_sites_reply *s = &m->sites_reply;

		if (s->status > 0)
			return DP_PROTO_ERR_VALUE;
		if (s->ninsns > DP_CLIENT_MAX_INSNS || (s->ninsns && !s->insns))
			return DP_PROTO_ERR_BOUNDS;
		dp_wbuf_u32(w, (uint32_t)s->status);
		dp_wbuf_str(w, s->message, sizeof(s->message));
		dp_wbuf_str(w, s->function, sizeof(s->function));
		dp_wbuf_u64(w, s->start);
		dp_wbuf_u64(w, s->size);
		dp_wbuf_u32(w, s->ninsns);
		for (uint32_t i = 0; i < s->ninsns && !err; i++)
			err = put_insn(w, &s->insns[i]);
		break;
	}
	case DP_CLIENT_PING_REPLY:
		dp_wbuf_u64(w, m->ping_reply.cookie);
		dp_wbuf_u32(w, m->ping_reply.daemon_pid);
		dp_wbuf_str(w, m->ping_reply.version, sizeof(m->ping_reply.version));
		break;
	case DP_CLIENT_UNSUPPORTED:
		dp_wbuf_u16(w, m->unsupported);
		break;
	case DP_CLIENT_REFUSE:
		dp_wbuf_u8(w, m->refuse.major);
		dp_wbuf_u8(w, m->refuse.minor);
		dp_wbuf_str(w, m->refuse.reason, sizeof(m->refuse.reason));
		break;
	default:
		return DP_PROTO_ERR_TYPE;
	}
	return err;
}

int dp_client_encode(const struct dp_client_msg *m, struct dp_wbuf *w)
{
	struct dp_frame_hdr h = {
		.magic = DP_CLIENT_MAGIC, .major = DP_CLIENT_MAJOR, .minor = DP_CLIENT_MINOR,
		.type = m->type, .seq = m->seq,
	};
	uint8_t raw[DP_FRAME_HDR_LEN];

	dp_wbuf_init(w, DP_FRAME_HDR_LEN + DP_CLIENT_MAX_PAYLOAD);
	dp_frame_hdr_encode(&h, raw);
	dp_wbuf_bytes(w, raw, sizeof(raw));
	if (put_payload(w, m) != DP_PROTO_ERR_NONE)
		return -EINVAL;
	if (w->err)
		return w->err;
	dp_wbuf_set_u32(w, 8, (uint32_t)(w->len - DP_FRAME_HDR_LEN));
	return 0;
}

/* ---- decoding ---------------------------------------------------------- */

/* Fewest bytes of each element on the wire, so that counts never make a
 * receiver allocate for elements that are not there. */
#define STR_MIN 2
#define SITE_MIN (STR_MIN + 8 + 8 + 1 + STR_MIN + STR_MIN)
#define PROC_MIN (4 + 4 + STR_MIN + 4 * 4)
#define EVENT_MIN (STR_MIN * 5 + 1 + 1 + 4 * 4)
#define INSN_MIN (4 + 1 + 1 + STR_MIN + 1 + STR_MIN + STR_MIN)
#define SPEC_MIN (STR_MIN + 1 + STR_MIN)
#define REPORT_MIN (4 + STR_MIN + 4 + 4)

/* A string that may not be empty. */
static void get_name(struct dp_rbuf *r, char *out, size_t size)
{
	dp_rbuf_str(r, out, size);
	if (!r->err && !out[0])
		dp_rbuf_fail(r, DP_PROTO_ERR_STRING);
}

static int get_strs(struct dp_rbuf *r, char (**v)[DP_CLIENT_CTX_MAX], uint32_t *n, uint32_t max)
{
	*n = dp_rbuf_count(r, max, STR_MIN);
	if (!*n)
		return 0;
	*v = calloc(*n, sizeof(**v));
	if (!*v) {
		*n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < *n && !r->err; i++)
		get_name(r, (*v)[i], DP_CLIENT_CTX_MAX);
	return 0;
}

static int get_names(struct dp_rbuf *r, char (**v)[DP_CLIENT_EVENT_MAX], uint32_t *n)
{
	*n = dp_rbuf_count(r, DP_CLIENT_MAX_NAMES, STR_MIN);
	if (!*n)
		return 0;
	*v = calloc(*n, sizeof(**v));
	if (!*v) {
		*n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < *n && !r->err; i++)
		get_name(r, (*v)[i], DP_CLIENT_EVENT_MAX);
	return 0;
}

static int get_pids(struct dp_rbuf *r, uint32_t **v, uint32_t *n)
{
	*n = dp_rbuf_count(r, DP_CLIENT_MAX_PIDS, 4);
	if (!*n)
		return 0;
	*v = calloc(*n, sizeof(**v));
	if (!*v) {
		*n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < *n; i++) {
		(*v)[i] = dp_rbuf_u32(r);
		if (!r->err && !(*v)[i])
			dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	}
	return 0;
}

static int32_t get_status(struct dp_rbuf *r)
{
	int32_t s = (int32_t)dp_rbuf_u32(r);

	if (s > 0)
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	return s;
}

static int get_proc(struct dp_rbuf *r, struct dp_client_proc *p)
{
	p->pid = dp_rbuf_u32(r);
	p->status = get_status(r);
	dp_rbuf_str(r, p->message, sizeof(p->message));
	p->njump = dp_rbuf_u32(r);
	p->nint3 = dp_rbuf_u32(r);
	p->nrefused = dp_rbuf_u32(r);
	p->nsites = dp_rbuf_count(r, DP_CLIENT_MAX_SITES, SITE_MIN);
	if (!p->nsites)
		return 0;
	p->sites = calloc(p->nsites, sizeof(*p->sites));
	if (!p->sites) {
		p->nsites = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nsites && !r->err; i++) {
		struct dp_client_site *s = &p->sites[i];

		dp_rbuf_str(r, s->event, sizeof(s->event));
		s->addr = dp_rbuf_u64(r);
		s->vaddr = dp_rbuf_u64(r);
		s->method = dp_rbuf_u8(r);
		if (!r->err && !method_ok(s->method))
			dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
		dp_rbuf_str(r, s->reason, sizeof(s->reason));
		dp_rbuf_str(r, s->text, sizeof(s->text));
	}
	return 0;
}

static int get_procs(struct dp_rbuf *r, struct dp_client_proc **v, uint32_t *n)
{
	int ret = 0;

	*n = dp_rbuf_count(r, DP_CLIENT_MAX_PROCS, PROC_MIN);
	if (!*n)
		return 0;
	*v = calloc(*n, sizeof(**v));
	if (!*v) {
		*n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < *n && !r->err && !ret; i++)
		ret = get_proc(r, &(*v)[i]);
	return ret;
}

static int get_event(struct dp_rbuf *r, struct dp_client_event *e)
{
	int ret;

	get_name(r, e->session, sizeof(e->session));
	get_name(r, e->channel, sizeof(e->channel));
	get_name(r, e->event, sizeof(e->event));
	e->kind = dp_rbuf_u8(r);
	if (!r->err && !kind_ok(e->kind))
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	dp_rbuf_str(r, e->location, sizeof(e->location));
	dp_rbuf_str(r, e->path, sizeof(e->path));
	e->enabled = dp_rbuf_bool(r);
	ret = get_pids(r, &e->pids, &e->npids);
	if (!ret)
		ret = get_strs(r, &e->ctx, &e->nctx, DP_CLIENT_MAX_CTX);
	if (!ret)
		ret = get_names(r, &e->names, &e->nnames);
	if (!ret)
		ret = get_procs(r, &e->procs, &e->nprocs);
	return ret;
}

static int get_report(struct dp_rbuf *r, struct dp_client_report *rep)
{
	int ret;

	rep->status = get_status(r);
	dp_rbuf_str(r, rep->message, sizeof(rep->message));
	ret = get_names(r, &rep->events, &rep->nevents);
	if (!ret)
		ret = get_procs(r, &rep->procs, &rep->nprocs);
	return ret;
}

static int get_payload(struct dp_rbuf *r, struct dp_client_msg *m)
{
	int ret = 0;

	switch (m->type) {
	case DP_CLIENT_ENABLE: {
		struct dp_client_enable *e = &m->enable;

		get_name(r, e->session, sizeof(e->session));
		get_name(r, e->channel, sizeof(e->channel));
		get_name(r, e->event, sizeof(e->event));
		e->kind = dp_rbuf_u8(r);
		if (!r->err && !kind_ok(e->kind))
			dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
		get_name(r, e->location, sizeof(e->location));
		get_name(r, e->path, sizeof(e->path));
		ret = get_pids(r, &e->pids, &e->npids);
		if (!ret)
			ret = get_strs(r, &e->ctx, &e->nctx, DP_CLIENT_MAX_CTX);
		break;
	}
	case DP_CLIENT_ENABLE_MANY: {
		struct dp_client_enable_many *e = &m->enable_many;

		get_name(r, e->session, sizeof(e->session));
		get_name(r, e->channel, sizeof(e->channel));
		get_name(r, e->path, sizeof(e->path));
		ret = get_pids(r, &e->pids, &e->npids);
		if (!ret)
			ret = get_strs(r, &e->ctx, &e->nctx, DP_CLIENT_MAX_CTX);
		if (ret || r->err)
			break;
		e->nspecs = dp_rbuf_count(r, DP_CLIENT_MAX_SPECS, SPEC_MIN);
		if (!e->nspecs)
			break;
		e->specs = calloc(e->nspecs, sizeof(*e->specs));
		if (!e->specs) {
			e->nspecs = 0;
			ret = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < e->nspecs && !r->err; i++) {
			struct dp_client_spec *sp = &e->specs[i];

			get_name(r, sp->event, sizeof(sp->event));
			sp->kind = dp_rbuf_u8(r);
			if (!r->err && !kind_ok(sp->kind))
				dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
			get_name(r, sp->location, sizeof(sp->location));
		}
		break;
	}
	case DP_CLIENT_ENABLE_MANY_REPLY: {
		struct dp_client_reports *rs = &m->reports;

		rs->nreports = dp_rbuf_count(r, DP_CLIENT_MAX_SPECS, REPORT_MIN);
		if (!rs->nreports)
			break;
		rs->reports = calloc(rs->nreports, sizeof(*rs->reports));
		if (!rs->reports) {
			rs->nreports = 0;
			ret = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < rs->nreports && !r->err && !ret; i++)
			ret = get_report(r, &rs->reports[i]);
		break;
	}
	case DP_CLIENT_DISABLE:
		get_name(r, m->disable.session, sizeof(m->disable.session));
		get_name(r, m->disable.channel, sizeof(m->disable.channel));
		get_name(r, m->disable.event, sizeof(m->disable.event));
		break;
	case DP_CLIENT_ADD_CONTEXT:
		get_name(r, m->add_context.session, sizeof(m->add_context.session));
		get_name(r, m->add_context.channel, sizeof(m->add_context.channel));
		dp_rbuf_str(r, m->add_context.event, sizeof(m->add_context.event));
		ret = get_strs(r, &m->add_context.ctx, &m->add_context.nctx, DP_CLIENT_MAX_CTX);
		break;
	case DP_CLIENT_LIST:
		dp_rbuf_str(r, m->list, sizeof(m->list));
		break;
	case DP_CLIENT_SITES:
		get_name(r, m->sites.path, sizeof(m->sites.path));
		get_name(r, m->sites.function, sizeof(m->sites.function));
		break;
	case DP_CLIENT_SESSION_DESTROYED:
		get_name(r, m->session_destroyed, sizeof(m->session_destroyed));
		break;
	case DP_CLIENT_PING:
		m->ping = dp_rbuf_u64(r);
		break;
	case DP_CLIENT_ENABLE_REPLY:
	case DP_CLIENT_DISABLE_REPLY:
	case DP_CLIENT_ADD_CONTEXT_REPLY:
	case DP_CLIENT_SESSION_DESTROYED_REPLY:
		ret = get_report(r, &m->report);
		break;
	case DP_CLIENT_LIST_REPLY: {
		struct dp_client_list_reply *l = &m->list_reply;

		l->status = get_status(r);
		dp_rbuf_str(r, l->message, sizeof(l->message));
		l->nevents = dp_rbuf_count(r, DP_CLIENT_MAX_EVENTS, EVENT_MIN);
		if (l->nevents) {
			l->events = calloc(l->nevents, sizeof(*l->events));
			if (!l->events) {
				l->nevents = 0;
				return -ENOMEM;
			}
		}
		for (uint32_t i = 0; i < l->nevents && !r->err && !ret; i++)
			ret = get_event(r, &l->events[i]);
		break;
	}
	case DP_CLIENT_SITES_REPLY: {
		struct dp_client_sites_reply *s = &m->sites_reply;

		s->status = get_status(r);
		dp_rbuf_str(r, s->message, sizeof(s->message));
		dp_rbuf_str(r, s->function, sizeof(s->function));
		s->start = dp_rbuf_u64(r);
		s->size = dp_rbuf_u64(r);
		s->ninsns = dp_rbuf_count(r, DP_CLIENT_MAX_INSNS, INSN_MIN);
		if (s->ninsns) {
			s->insns = calloc(s->ninsns, sizeof(*s->insns));
			if (!s->insns) {
				s->ninsns = 0;
				return -ENOMEM;
			}
		}
		for (uint32_t i = 0; i < s->ninsns && !r->err; i++) {
			struct dp_client_insn *in = &s->insns[i];

			in->offset = dp_rbuf_u32(r);
			in->len = dp_rbuf_u8(r);
			if (!r->err && (!in->len || in->len > DP_CLIENT_INSN_MAX)) {
				dp_rbuf_fail(r, DP_PROTO_ERR_BOUNDS);
				break;
			}
			dp_rbuf_bytes(r, in->bytes, in->len);
			dp_rbuf_str(r, in->mnemonic, sizeof(in->mnemonic));
			in->method = dp_rbuf_u8(r);
			if (!r->err && !method_ok(in->method))
				dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
			dp_rbuf_str(r, in->reason, sizeof(in->reason));
			dp_rbuf_str(r, in->text, sizeof(in->text));
		}
		break;
	}
	case DP_CLIENT_PING_REPLY:
		m->ping_reply.cookie = dp_rbuf_u64(r);
		m->ping_reply.daemon_pid = dp_rbuf_u32(r);
		dp_rbuf_str(r, m->ping_reply.version, sizeof(m->ping_reply.version));
		break;
	case DP_CLIENT_UNSUPPORTED:
		m->unsupported = dp_rbuf_u16(r);
		break;
	case DP_CLIENT_REFUSE:
		m->refuse.major = dp_rbuf_u8(r);
		m->refuse.minor = dp_rbuf_u8(r);
		dp_rbuf_str(r, m->refuse.reason, sizeof(m->refuse.reason));
		break;
	default:
		dp_rbuf_fail(r, DP_PROTO_ERR_TYPE);
		break;
	}
	return ret;
}

int dp_client_decode(const struct dp_frame_hdr *h, const uint8_t *payload,
		     struct dp_client_msg *m, enum dp_proto_err *why)
{
	struct dp_rbuf r;
	int ret;

	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->seq = h->seq;
	m->major = h->major;
	m->minor = h->minor;
	*why = DP_PROTO_ERR_NONE;
	if (h->magic != DP_CLIENT_MAGIC)
		*why = DP_PROTO_ERR_MAGIC;
	else if (h->major != DP_CLIENT_MAJOR && h->type != DP_CLIENT_REFUSE)
		*why = DP_PROTO_ERR_VERSION;
	else if (h->len > DP_CLIENT_MAX_PAYLOAD)
		*why = DP_PROTO_ERR_TOO_BIG;
	if (*why)
		return -EPROTO;

	dp_rbuf_init(&r, payload, h->len);
	ret = get_payload(&r, m);
	if (!ret)
		dp_rbuf_finish(&r);
	if (!ret && r.err) {
		*why = r.err;
		ret = -EPROTO;
	}
	if (ret) {
		dp_client_msg_release(m);
		m->type = h->type;
		m->seq = h->seq;
		m->major = h->major;
		m->minor = h->minor;
	}
	return ret;
}

int dp_client_decode_frame(const uint8_t *buf, size_t len, struct dp_client_msg *m,
			   enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	int ret;

	memset(m, 0, sizeof(*m));
	if (len < DP_FRAME_HDR_LEN) {
		*why = DP_PROTO_ERR_TRUNCATED;
		return -EPROTO;
	}
	ret = dp_frame_hdr_decode(buf, DP_CLIENT_MAGIC, DP_CLIENT_MAJOR, DP_CLIENT_MAX_PAYLOAD, &h,
				  why);
	if (ret && !(*why == DP_PROTO_ERR_VERSION && h.type == DP_CLIENT_REFUSE))
		goto header_only;
	if (len - DP_FRAME_HDR_LEN != h.len) {
		*why = len - DP_FRAME_HDR_LEN < h.len ? DP_PROTO_ERR_TRUNCATED
						       : DP_PROTO_ERR_TRAILING;
		ret = -EPROTO;
		goto header_only;
	}
	return dp_client_decode(&h, buf + DP_FRAME_HDR_LEN, m, why);

header_only:
	if (*why != DP_PROTO_ERR_MAGIC) {
		m->type = h.type;
		m->seq = h.seq;
		m->major = h.major;
		m->minor = h.minor;
	}
	return ret;
}

static void proc_release(struct dp_client_proc *p)
{
	free(p->sites);
}

static void procs_release(struct dp_client_proc *v, uint32_t n)
{
	for (uint32_t i = 0; i < n && v; i++)
		proc_release(&v[i]);
	free(v);
}

void dp_client_msg_release(struct dp_client_msg *m)
{
	switch (m->type) {
	case DP_CLIENT_ENABLE:
		free(m->enable.pids);
		free(m->enable.ctx);
		break;
	case DP_CLIENT_ADD_CONTEXT:
		free(m->add_context.ctx);
		break;
	case DP_CLIENT_ENABLE_MANY:
		free(m->enable_many.pids);
		free(m->enable_many.ctx);
		free(m->enable_many.specs);
		break;
	case DP_CLIENT_ENABLE_MANY_REPLY:
		for (uint32_t i = 0; i < m->reports.nreports && m->reports.reports; i++) {
			free(m->reports.reports[i].events);
			procs_release(m->reports.reports[i].procs, m->reports.reports[i].nprocs);
		}
		free(m->reports.reports);
		break;
	case DP_CLIENT_LIST_REPLY:
		for (uint32_t i = 0; i < m->list_reply.nevents && m->list_reply.events; i++) {
			struct dp_client_event *e = &m->list_reply.events[i];

			free(e->pids);
			free(e->ctx);
			free(e->names);
			procs_release(e->procs, e->nprocs);
		}
		free(m->list_reply.events);
		break;
	case DP_CLIENT_SITES_REPLY:
		free(m->sites_reply.insns);
		break;
	default:
		if (is_report(m->type)) {
			free(m->report.events);
			procs_release(m->report.procs, m->report.nprocs);
		}
		break;
	}
	memset(m, 0, sizeof(*m));
}

/* ---- on a socket ------------------------------------------------------- */

int dp_client_send(int fd, const struct dp_client_msg *m, int timeout_ms)
{
	struct dp_wbuf w;
	int ret;

	ret = dp_client_encode(m, &w);
	if (!ret)
		ret = dp_frame_write_all(fd, w.data, w.len, timeout_ms);
	dp_wbuf_release(&w);
	return ret;
}

int dp_client_recv(int fd, struct dp_client_msg *m, int timeout_ms, enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	uint8_t *payload = NULL;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = dp_frame_recv(fd, DP_CLIENT_MAGIC, DP_CLIENT_MAJOR, DP_CLIENT_MAX_PAYLOAD, timeout_ms,
			    &h, &payload, why);
	if (ret == -EPROTO && (*why == DP_PROTO_ERR_VERSION || *why == DP_PROTO_ERR_TOO_BIG)) {
		/* A REFUSE of any version is read: saying why is its point. */
		if (*why == DP_PROTO_ERR_VERSION && h.type == DP_CLIENT_REFUSE) {
			ret = dp_client_decode(&h, payload, m, why);
		} else {
			m->type = h.type;
			m->seq = h.seq;
			m->major = h.major;
			m->minor = h.minor;
		}
	} else if (!ret) {
		ret = dp_client_decode(&h, payload, m, why);
	}
	free(payload);
	return ret;
}

int dp_client_call(int fd, struct dp_client_msg *req, uint32_t *seq, struct dp_client_msg *reply,
		   int timeout_ms, enum dp_proto_err *why)
{
	int ret;

	*why = DP_PROTO_ERR_NONE;
	memset(reply, 0, sizeof(*reply));
	req->seq = (*seq)++;
	ret = dp_client_send(fd, req, DP_CLIENT_TIMEOUT_MS);
	if (ret)
		return ret;
	ret = dp_client_recv(fd, reply, timeout_ms, why);
	if (ret)
		return ret;
	if (reply->type == DP_CLIENT_REFUSE)
		return -ECONNREFUSED;
	if (reply->seq != req->seq || (reply->type != DP_CLIENT_UNSUPPORTED &&
				       reply->type != (req->type | DP_FRAME_REPLY))) {
		dp_client_msg_release(reply);
		*why = DP_PROTO_ERR_VALUE;
		return -EPROTO;
	}
	if (reply->type == DP_CLIENT_UNSUPPORTED)
		return -EOPNOTSUPP;
	return 0;
}

/* The daemon's directory: the root one, or $LTTNG_HOME/.lttng. */
static int run_dir(char *buf, size_t size)
{
	const char *home;
	int n;

	if (geteuid() == 0) {
		n = snprintf(buf, size, "/var/run/lttng");
	} else {
		home = secure_getenv("LTTNG_HOME");
		if (!home || !*home)
			home = secure_getenv("HOME");
		if (!home || !*home)
			return -ENOENT;
		n = snprintf(buf, size, "%s/.lttng", home);
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int daemon_file(char *buf, size_t size, const char *env_name, const char *name,
		       bool socket)
{
	const char *env = env_name ? secure_getenv(env_name) : NULL;
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path);
	char dir[DP_CLIENT_PATH_MAX];
	int n, ret;

	if (env && *env) {
		n = snprintf(buf, size, "%s", env);
	} else {
		ret = run_dir(dir, sizeof(dir));
		if (ret)
			return ret;
		n = snprintf(buf, size, "%s/%s", dir, name);
	}
	if (n < 0 || (size_t)n >= size || (socket && (size_t)n >= max))
		return -ENAMETOOLONG;
	return 0;
}

int dp_client_socket_path(char *buf, size_t size)
{
	return daemon_file(buf, size, "LTTNG_DYNPROBE_CLIENT_SOCKET", "dynprobe-client.sock", true);
}

int dp_client_pidfile_path(char *buf, size_t size)
{
	char sock[DP_CLIENT_PATH_MAX];
	char *slash;
	int ret, n;

	ret = dp_client_socket_path(sock, sizeof(sock));
	if (ret)
		return ret;
	slash = strrchr(sock, '/');
	if (slash)
		slash[1] = '\0';
	else
		sock[0] = '\0';
	n = snprintf(buf, size, "%slttng-dynprobed.pid", sock);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int dp_client_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, ret;

	ret = dp_client_socket_path(sa.sun_path, sizeof(sa.sun_path));
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	/* Only our own daemon, or root's, gets to hear what we probe. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (cred.uid != 0 && cred.uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	return fd;
}
