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

const struct dp_frame_proto dp_client_proto = {
	.magic = DP_CLIENT_MAGIC, .major = DP_CLIENT_MAJOR, .minor = DP_CLIENT_MINOR,
	.max_payload = DP_CLIENT_MAX_PAYLOAD,
};

static const struct dp_frame_type_name type_names[] = {
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
	return dp_frame_type_name(type_names, sizeof(type_names) / sizeof(type_names[0]), type);
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

/* A counted array of strings, each in an array of `size` bytes. */
static void put_strs(struct dp_wbuf *w, const void *v, uint32_t n, size_t size)
{
	const char *s = v;

	dp_wbuf_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		dp_wbuf_str(w, s + (size_t)i * size, size);
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
	put_strs(w, r->events, r->nevents, sizeof(*r->events));
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
	put_strs(w, e->ctx, e->nctx, sizeof(*e->ctx));
	put_strs(w, e->names, e->nnames, sizeof(*e->names));
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
		put_strs(w, e->ctx, e->nctx, sizeof(*e->ctx));
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
		put_strs(w, e->ctx, e->nctx, sizeof(*e->ctx));
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
		put_strs(w, a->ctx, a->nctx, sizeof(*a->ctx));
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
		dp_frame_put_refuse(w, m->refuse.major, m->refuse.minor, m->refuse.reason,
				    sizeof(m->refuse.reason));
		break;
	default:
		return DP_PROTO_ERR_TYPE;
	}
	return err;
}

int dp_client_encode(const struct dp_client_msg *m, struct dp_wbuf *w)
{
	dp_frame_begin(w, &dp_client_proto, m->type, m->seq);
	return dp_frame_end(w, put_payload(w, m));
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

/*
 * Each reader stops r at an error and leaves its output zeroed or partial;
 * the caller releases the message on error.  Readers of array elements take
 * them untyped (dp_rbuf_get_fn).
 */

/* A string that may not be empty. */
static void get_name(struct dp_rbuf *r, char *out, size_t size)
{
	dp_rbuf_str(r, out, size);
	if (!out[0])
		dp_rbuf_fail(r, DP_PROTO_ERR_STRING);
}

static int32_t get_status(struct dp_rbuf *r)
{
	int32_t s = (int32_t)dp_rbuf_u32(r);

	if (s > 0)
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	return s;
}

static uint8_t get_kind(struct dp_rbuf *r)
{
	uint8_t k = dp_rbuf_u8(r);

	if (!kind_ok(k))
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	return k;
}

static uint8_t get_method(struct dp_rbuf *r)
{
	uint8_t m = dp_rbuf_u8(r);

	if (!method_ok(m))
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
	return m;
}

static void get_pid(struct dp_rbuf *r, void *elem)
{
	uint32_t *pid = elem;

	*pid = dp_rbuf_u32(r);
	if (!*pid)
		dp_rbuf_fail(r, DP_PROTO_ERR_VALUE);
}

static void get_ctx_spec(struct dp_rbuf *r, void *elem)
{
	get_name(r, elem, DP_CLIENT_CTX_MAX);
}

static void get_event_name(struct dp_rbuf *r, void *elem)
{
	get_name(r, elem, DP_CLIENT_EVENT_MAX);
}

static void get_site(struct dp_rbuf *r, void *elem)
{
	struct dp_client_site *s = elem;

	dp_rbuf_str(r, s->event, sizeof(s->event));
	s->addr = dp_rbuf_u64(r);
	s->vaddr = dp_rbuf_u64(r);
	s->method = get_method(r);
	dp_rbuf_str(r, s->reason, sizeof(s->reason));
	dp_rbuf_str(r, s->text, sizeof(s->text));
}

static void get_proc(struct dp_rbuf *r, void *elem)
{
	struct dp_client_proc *p = elem;

	p->pid = dp_rbuf_u32(r);
	p->status = get_status(r);
	dp_rbuf_str(r, p->message, sizeof(p->message));
	p->njump = dp_rbuf_u32(r);
	p->nint3 = dp_rbuf_u32(r);
	p->nrefused = dp_rbuf_u32(r);
	p->sites = dp_rbuf_array(r, &p->nsites, DP_CLIENT_MAX_SITES, SITE_MIN, sizeof(*p->sites),
				 get_site);
}

/* The arrays that several messages hold. */

static uint32_t *get_pids(struct dp_rbuf *r, uint32_t *n)
{
	return dp_rbuf_array(r, n, DP_CLIENT_MAX_PIDS, 4, sizeof(uint32_t), get_pid);
}

static void *get_ctxs(struct dp_rbuf *r, uint32_t *n)
{
	return dp_rbuf_array(r, n, DP_CLIENT_MAX_CTX, STR_MIN, DP_CLIENT_CTX_MAX, get_ctx_spec);
}

static void *get_names(struct dp_rbuf *r, uint32_t *n)
{
	return dp_rbuf_array(r, n, DP_CLIENT_MAX_NAMES, STR_MIN, DP_CLIENT_EVENT_MAX,
			     get_event_name);
}

static struct dp_client_proc *get_procs(struct dp_rbuf *r, uint32_t *n)
{
	return dp_rbuf_array(r, n, DP_CLIENT_MAX_PROCS, PROC_MIN, sizeof(struct dp_client_proc),
			     get_proc);
}

static void get_event(struct dp_rbuf *r, void *elem)
{
	struct dp_client_event *e = elem;

	get_name(r, e->session, sizeof(e->session));
	get_name(r, e->channel, sizeof(e->channel));
	get_name(r, e->event, sizeof(e->event));
	e->kind = get_kind(r);
	dp_rbuf_str(r, e->location, sizeof(e->location));
	dp_rbuf_str(r, e->path, sizeof(e->path));
	e->enabled = dp_rbuf_bool(r);
	e->pids = get_pids(r, &e->npids);
	e->ctx = get_ctxs(r, &e->nctx);
	e->names = get_names(r, &e->nnames);
	e->procs = get_procs(r, &e->nprocs);
}

static void get_report(struct dp_rbuf *r, void *elem)
{
	struct dp_client_report *rep = elem;

	rep->status = get_status(r);
	dp_rbuf_str(r, rep->message, sizeof(rep->message));
	rep->events = get_names(r, &rep->nevents);
	rep->procs = get_procs(r, &rep->nprocs);
}

static void get_spec(struct dp_rbuf *r, void *elem)
{
	struct dp_client_spec *sp = elem;

	get_name(r, sp->event, sizeof(sp->event));
	sp->kind = get_kind(r);
	get_name(r, sp->location, sizeof(sp->location));
}

static void get_insn(struct dp_rbuf *r, void *elem)
{
	struct dp_client_insn *in = elem;

	in->offset = dp_rbuf_u32(r);
	in->len = dp_rbuf_u8(r);
	if (!in->len || in->len > DP_CLIENT_INSN_MAX) {
		dp_rbuf_fail(r, DP_PROTO_ERR_BOUNDS);
		return;
	}
	dp_rbuf_bytes(r, in->bytes, in->len);
	dp_rbuf_str(r, in->mnemonic, sizeof(in->mnemonic));
	in->method = get_method(r);
	dp_rbuf_str(r, in->reason, sizeof(in->reason));
	dp_rbuf_str(r, in->text, sizeof(in->text));
}

static void get_payload(struct dp_rbuf *r, struct dp_client_msg *m)
{
	switch (m->type) {
	case DP_CLIENT_ENABLE: {
		struct dp_client_enable *e = &m->enable;

		get_name(r, e->session, sizeof(e->session));
		get_name(r, e->channel, sizeof(e->channel));
		get_name(r, e->event, sizeof(e->event));
		e->kind = get_kind(r);
		get_name(r, e->location, sizeof(e->location));
		get_name(r, e->path, sizeof(e->path));
		e->pids = get_pids(r, &e->npids);
		e->ctx = get_ctxs(r, &e->nctx);
		break;
	}
	case DP_CLIENT_ENABLE_MANY: {
		struct dp_client_enable_many *e = &m->enable_many;

		get_name(r, e->session, sizeof(e->session));
		get_name(r, e->channel, sizeof(e->channel));
		get_name(r, e->path, sizeof(e->path));
		e->pids = get_pids(r, &e->npids);
		e->ctx = get_ctxs(r, &e->nctx);
		e->specs = dp_rbuf_array(r, &e->nspecs, DP_CLIENT_MAX_SPECS, SPEC_MIN,
					 sizeof(*e->specs), get_spec);
		break;
	}
	case DP_CLIENT_ENABLE_MANY_REPLY:
		m->reports.reports = dp_rbuf_array(r, &m->reports.nreports, DP_CLIENT_MAX_SPECS,
						   REPORT_MIN, sizeof(*m->reports.reports),
						   get_report);
		break;
	case DP_CLIENT_DISABLE:
		get_name(r, m->disable.session, sizeof(m->disable.session));
		get_name(r, m->disable.channel, sizeof(m->disable.channel));
		get_name(r, m->disable.event, sizeof(m->disable.event));
		break;
	case DP_CLIENT_ADD_CONTEXT:
		get_name(r, m->add_context.session, sizeof(m->add_context.session));
		get_name(r, m->add_context.channel, sizeof(m->add_context.channel));
		dp_rbuf_str(r, m->add_context.event, sizeof(m->add_context.event));
		m->add_context.ctx = get_ctxs(r, &m->add_context.nctx);
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
		get_report(r, &m->report);
		break;
	case DP_CLIENT_LIST_REPLY: {
		struct dp_client_list_reply *l = &m->list_reply;

		l->status = get_status(r);
		dp_rbuf_str(r, l->message, sizeof(l->message));
		l->events = dp_rbuf_array(r, &l->nevents, DP_CLIENT_MAX_EVENTS, EVENT_MIN,
					  sizeof(*l->events), get_event);
		break;
	}
	case DP_CLIENT_SITES_REPLY: {
		struct dp_client_sites_reply *s = &m->sites_reply;

		s->status = get_status(r);
		dp_rbuf_str(r, s->message, sizeof(s->message));
		dp_rbuf_str(r, s->function, sizeof(s->function));
		s->start = dp_rbuf_u64(r);
		s->size = dp_rbuf_u64(r);
		s->insns = dp_rbuf_array(r, &s->ninsns, DP_CLIENT_MAX_INSNS, INSN_MIN,
					 sizeof(*s->insns), get_insn);
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
		dp_frame_get_refuse(r, &m->refuse.major, &m->refuse.minor, m->refuse.reason,
				    sizeof(m->refuse.reason));
		break;
	default:
		dp_rbuf_fail(r, DP_PROTO_ERR_TYPE);
		break;
	}
}

/* m, empty but for what its header says. */
static void msg_start(struct dp_client_msg *m, const struct dp_frame_hdr *h)
{
	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->seq = h->seq;
	m->major = h->major;
	m->minor = h->minor;
}

int dp_client_decode(const struct dp_frame_hdr *h, const uint8_t *payload,
		     struct dp_client_msg *m, enum dp_proto_err *why)
{
	struct dp_rbuf r;
	int ret;

	msg_start(m, h);
	ret = dp_frame_check(&dp_client_proto, h, why);
	if (ret)
		return ret;
	dp_rbuf_init(&r, payload, h->len);
	get_payload(&r, m);
	ret = dp_rbuf_result(&r, why);
	if (ret) {
		dp_client_msg_release(m);
		msg_start(m, h);
	}
	return ret;
}

int dp_client_decode_frame(const uint8_t *buf, size_t len, struct dp_client_msg *m,
			   enum dp_proto_err *why)
{
	struct dp_frame_hdr h;
	int ret = dp_frame_split(&dp_client_proto, buf, len, &h, why);

	if (!ret)
		return dp_client_decode(&h, buf + DP_FRAME_HDR_LEN, m, why);
	msg_start(m, &h);
	return ret;
}

static void procs_release(struct dp_client_proc *v, uint32_t n)
{
	for (uint32_t i = 0; i < n && v; i++)
		free(v[i].sites);
	free(v);
}

static void report_release(struct dp_client_report *r)
{
	free(r->events);
	procs_release(r->procs, r->nprocs);
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
		for (uint32_t i = 0; i < m->reports.nreports && m->reports.reports; i++)
			report_release(&m->reports.reports[i]);
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
		if (is_report(m->type))
			report_release(&m->report);
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
	uint8_t *payload;
	int ret;

	ret = dp_frame_recv_msg(fd, &dp_client_proto, timeout_ms, &h, &payload, why);
	if (!ret)
		ret = dp_client_decode(&h, payload, m, why);
	else
		msg_start(m, &h);
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
	if (!ret)
		ret = dp_client_recv(fd, reply, timeout_ms, why);
	if (ret)
		return ret;
	ret = dp_frame_check_reply(req->type, req->seq, reply->type, reply->seq, why);
	if (ret == -EPROTO)
		dp_client_msg_release(reply);
	return ret;
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
