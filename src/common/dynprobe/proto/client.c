/*
 * The client protocol's messages as data (see client.h for the layouts and
 * codec.h for the walker that encodes and decodes them): one field table
 * per struct that travels, one line per message type; the API of client.h
 * on top of the codec, the builders' helpers, and where the daemon's files
 * are and how to connect to it.
 *
 * As in app.c, senders run the checks receivers run, except that a sender
 * passes on empty names and zero pids (DP_RECV): the daemon refuses them
 * with the typed reason, as it refuses them from any client.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/client.h"
#include "proto/codec.h"

const struct dp_frame_proto dp_client_proto = {
	.magic = DP_CLIENT_MAGIC, .major = DP_CLIENT_MAJOR, .minor = DP_CLIENT_MINOR,
	.max_payload = DP_CLIENT_MAX_PAYLOAD,
};

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

/* ---- builders ---------------------------------------------------------- */

/* One more zeroed element at the end of *v (n elements of elem bytes).
 * The array grows by half again when full (whoever allocated it: its
 * room is what malloc says it has), so that a report of many sites is
 * built in linear time. */
static void *append(void **v, uint32_t *n, size_t elem, uint32_t max)
{
	size_t need = (size_t)(*n + 1) * elem;
	void *p = *v;

	if (*n >= max)
		return NULL;
	if (!p || malloc_usable_size(p) < need) {
		p = realloc(*v, need + (size_t)(*n / 2) * elem);
		if (!p)
			return NULL;
	}
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

/* ---- the structs that travel, field by field in wire order ------------ */

/* A name a receiver refuses empty. */
#define NAME (DP_NONEMPTY | DP_RECV)

static const struct dp_field pid_fields[] = { DP_ELEM_U32_IN(1, UINT32_MAX, DP_RECV) };
DP_STRUCT_DESC(pid_desc, uint32_t, pid_fields);

static const struct dp_field ctx_spec_fields[] = { DP_ELEM_STR(DP_CLIENT_CTX_MAX, NAME) };
DP_STRUCT_DESC(ctx_spec_desc, char[DP_CLIENT_CTX_MAX], ctx_spec_fields);

static const struct dp_field event_name_fields[] = { DP_ELEM_STR(DP_CLIENT_EVENT_MAX, NAME) };
DP_STRUCT_DESC(event_name_desc, char[DP_CLIENT_EVENT_MAX], event_name_fields);

#define T struct dp_client_site
static const struct dp_field site_fields[] = {
	DP_FIELD_STR(T, event, 0),
	DP_FIELD_U64(T, addr),
	DP_FIELD_U64(T, vaddr),
	DP_FIELD_U8_IN(T, method, DP_CLIENT_METHOD_JUMP, DP_CLIENT_METHOD_REFUSED, 0),
	DP_FIELD_STR(T, reason, 0),
	DP_FIELD_STR(T, text, 0),
};
DP_STRUCT_DESC(site_desc, T, site_fields);
#undef T

#define T struct dp_client_proc
static const struct dp_field proc_fields[] = {
	DP_FIELD_U32(T, pid),
	DP_FIELD_STATUS(T, status),
	DP_FIELD_STR(T, message, 0),
	DP_FIELD_U32(T, njump),
	DP_FIELD_U32(T, nint3),
	DP_FIELD_U32(T, nrefused),
	DP_FIELD_ARRAY(T, sites, nsites, DP_CLIENT_MAX_SITES, site_desc),
};
DP_STRUCT_DESC(proc_desc, T, proc_fields);
#undef T

#define T struct dp_client_report
static const struct dp_field report_fields[] = {
	DP_FIELD_STATUS(T, status),
	DP_FIELD_STR(T, message, 0),
	DP_FIELD_ARRAY(T, events, nevents, DP_CLIENT_MAX_NAMES, event_name_desc),
	DP_FIELD_ARRAY(T, procs, nprocs, DP_CLIENT_MAX_PROCS, proc_desc),
};
DP_STRUCT_DESC(report_desc, T, report_fields);
#undef T

#define KIND(T) DP_FIELD_U8_IN(T, kind, DP_CLIENT_KIND_PROBE, DP_CLIENT_KIND_FUNCTION_INLINED, 0)
#define PIDS(T) DP_FIELD_ARRAY(T, pids, npids, DP_CLIENT_MAX_PIDS, pid_desc)
#define CTXS(T) DP_FIELD_ARRAY(T, ctx, nctx, DP_CLIENT_MAX_CTX, ctx_spec_desc)

#define T struct dp_client_enable
static const struct dp_field enable_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, event, NAME),
	KIND(T),
	DP_FIELD_STR(T, location, NAME),
	DP_FIELD_STR(T, path, NAME),
	PIDS(T),
	CTXS(T),
};
DP_STRUCT_DESC(enable_desc, T, enable_fields);
#undef T

#define T struct dp_client_spec
static const struct dp_field spec_fields[] = {
	DP_FIELD_STR(T, event, NAME),
	KIND(T),
	DP_FIELD_STR(T, location, NAME),
};
DP_STRUCT_DESC(spec_desc, T, spec_fields);
#undef T

#define T struct dp_client_enable_many
static const struct dp_field enable_many_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, path, NAME),
	PIDS(T),
	CTXS(T),
	DP_FIELD_ARRAY(T, specs, nspecs, DP_CLIENT_MAX_SPECS, spec_desc),
};
DP_STRUCT_DESC(enable_many_desc, T, enable_many_fields);
#undef T

#define T struct dp_client_reports
static const struct dp_field reports_fields[] = {
	DP_FIELD_ARRAY(T, reports, nreports, DP_CLIENT_MAX_SPECS, report_desc),
};
DP_STRUCT_DESC(reports_desc, T, reports_fields);
#undef T

#define T struct dp_client_event_ref
static const struct dp_field event_ref_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, event, NAME),
};
DP_STRUCT_DESC(event_ref_desc, T, event_ref_fields);
#undef T

/* EVENT_FLAGS, and LIST_FLAGS's elements: no unknown flag. */
#define T struct dp_client_event_flags
static const struct dp_field event_flags_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, event, NAME),
	DP_FIELD_U32_IN(T, flags, 0, DP_CLIENT_EVENT_FLAGS_ALL, 0),
};
DP_STRUCT_DESC(event_flags_desc, T, event_flags_fields);
#undef T

#define T struct dp_client_flags_reply
static const struct dp_field flags_reply_fields[] = {
	DP_FIELD_STATUS(T, status),
	DP_FIELD_STR(T, message, 0),
	DP_FIELD_ARRAY(T, flags, nflags, DP_CLIENT_MAX_EVENTS, event_flags_desc),
};
DP_STRUCT_DESC(flags_reply_desc, T, flags_reply_fields);
#undef T

#define T struct dp_client_add_context
static const struct dp_field add_context_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, event, 0),
	CTXS(T),
};
DP_STRUCT_DESC(add_context_desc, T, add_context_fields);
#undef T

#define T struct dp_client_event
static const struct dp_field event_fields[] = {
	DP_FIELD_STR(T, session, NAME),
	DP_FIELD_STR(T, channel, NAME),
	DP_FIELD_STR(T, event, NAME),
	KIND(T),
	DP_FIELD_STR(T, location, 0),
	DP_FIELD_STR(T, path, 0),
	DP_FIELD_BOOL(T, enabled),
	PIDS(T),
	CTXS(T),
	DP_FIELD_ARRAY(T, names, nnames, DP_CLIENT_MAX_NAMES, event_name_desc),
	DP_FIELD_ARRAY(T, procs, nprocs, DP_CLIENT_MAX_PROCS, proc_desc),
};
DP_STRUCT_DESC(event_desc, T, event_fields);
#undef T

#define T struct dp_client_list_reply
static const struct dp_field list_reply_fields[] = {
	DP_FIELD_STATUS(T, status),
	DP_FIELD_STR(T, message, 0),
	DP_FIELD_ARRAY(T, events, nevents, DP_CLIENT_MAX_EVENTS, event_desc),
};
DP_STRUCT_DESC(list_reply_desc, T, list_reply_fields);
#undef T

#define T struct dp_client_sites
static const struct dp_field sites_fields[] = {
	DP_FIELD_STR(T, path, NAME),
	DP_FIELD_STR(T, function, NAME),
};
DP_STRUCT_DESC(sites_desc, T, sites_fields);
#undef T

#define T struct dp_client_insn
static const struct dp_field insn_fields[] = {
	DP_FIELD_U32(T, offset),
	DP_FIELD_BYTES(T, bytes, len, 1),
	DP_FIELD_STR(T, mnemonic, 0),
	DP_FIELD_U8_IN(T, method, DP_CLIENT_METHOD_JUMP, DP_CLIENT_METHOD_REFUSED, 0),
	DP_FIELD_STR(T, reason, 0),
	DP_FIELD_STR(T, text, 0),
};
DP_STRUCT_DESC(insn_desc, T, insn_fields);
#undef T

#define T struct dp_client_sites_reply
static const struct dp_field sites_reply_fields[] = {
	DP_FIELD_STATUS(T, status),
	DP_FIELD_STR(T, message, 0),
	DP_FIELD_STR(T, function, 0),
	DP_FIELD_U64(T, start),
	DP_FIELD_U64(T, size),
	DP_FIELD_ARRAY(T, insns, ninsns, DP_CLIENT_MAX_INSNS, insn_desc),
};
DP_STRUCT_DESC(sites_reply_desc, T, sites_reply_fields);
#undef T

#define T struct dp_client_ping_reply
static const struct dp_field ping_reply_fields[] = {
	DP_FIELD_U64(T, cookie),
	DP_FIELD_U32(T, daemon_pid),
	DP_FIELD_STR(T, version, 0),
};
DP_STRUCT_DESC(ping_reply_desc, T, ping_reply_fields);
#undef T

DP_REFUSE_DESC(refuse_desc, struct dp_client_refuse);

/* LIST's session ("": every session) and SESSION_DESTROYED's. */
static const struct dp_field list_fields[] = { DP_ELEM_STR(DP_CLIENT_NAME_MAX, 0) };
DP_STRUCT_DESC(list_desc, char[DP_CLIENT_NAME_MAX], list_fields);
static const struct dp_field session_fields[] = { DP_ELEM_STR(DP_CLIENT_NAME_MAX, NAME) };
DP_STRUCT_DESC(session_desc, char[DP_CLIENT_NAME_MAX], session_fields);


/* Every message type and its payload (the union member of struct
 * dp_client_msg). */
static const struct dp_msg_desc client_msgs[] = {
	{ DP_CLIENT_ENABLE, "ENABLE", &enable_desc, NULL },
	{ DP_CLIENT_DISABLE, "DISABLE", &event_ref_desc, NULL },
	{ DP_CLIENT_ADD_CONTEXT, "ADD_CONTEXT", &add_context_desc, NULL },
	{ DP_CLIENT_LIST, "LIST", &list_desc, NULL },
	{ DP_CLIENT_SITES, "SITES", &sites_desc, NULL },
	{ DP_CLIENT_SESSION_DESTROYED, "SESSION_DESTROYED", &session_desc, NULL },
	{ DP_CLIENT_PING, "PING", &dp_codec_u64, NULL },
	{ DP_CLIENT_ENABLE_MANY, "ENABLE_MANY", &enable_many_desc, NULL },
	{ DP_CLIENT_EVENT_FLAGS, "EVENT_FLAGS", &event_flags_desc, NULL },
	{ DP_CLIENT_LIST_FLAGS, "LIST_FLAGS", &list_desc, NULL },
	{ DP_CLIENT_ENABLE_REPLY, "ENABLE_REPLY", &report_desc, NULL },
	{ DP_CLIENT_DISABLE_REPLY, "DISABLE_REPLY", &report_desc, NULL },
	{ DP_CLIENT_ADD_CONTEXT_REPLY, "ADD_CONTEXT_REPLY", &report_desc, NULL },
	{ DP_CLIENT_LIST_REPLY, "LIST_REPLY", &list_reply_desc, NULL },
	{ DP_CLIENT_SITES_REPLY, "SITES_REPLY", &sites_reply_desc, NULL },
	{ DP_CLIENT_SESSION_DESTROYED_REPLY, "SESSION_DESTROYED_REPLY", &report_desc, NULL },
	{ DP_CLIENT_PING_REPLY, "PING_REPLY", &ping_reply_desc, NULL },
	{ DP_CLIENT_ENABLE_MANY_REPLY, "ENABLE_MANY_REPLY", &reports_desc, NULL },
	{ DP_CLIENT_EVENT_FLAGS_REPLY, "EVENT_FLAGS_REPLY", &report_desc, NULL },
	{ DP_CLIENT_LIST_FLAGS_REPLY, "LIST_FLAGS_REPLY", &flags_reply_desc, NULL },
	{ DP_CLIENT_UNSUPPORTED, "UNSUPPORTED", &dp_codec_u16, NULL },
	{ DP_CLIENT_REFUSE, "REFUSE", &refuse_desc, NULL },
};

DP_CODEC_MSG_CHECK(struct dp_client_msg, enable);

static const struct dp_codec client_codec = {
	DP_CODEC_MSGS(client_msgs, struct dp_client_msg, enable),
	.frame = &dp_client_proto,
	.send_timeout_ms = DP_CLIENT_TIMEOUT_MS,
};

DP_CODEC_DEFINE_API(client, client_codec)

/* ---- where the daemon lives -------------------------------------------- */

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

bool dp_client_kind_function(uint8_t kind)
{
	return kind == DP_CLIENT_KIND_FUNCTION || kind == DP_CLIENT_KIND_FUNCTION_OUTLINE ||
	       kind == DP_CLIENT_KIND_FUNCTION_INLINED;
}

static const char *const kind_names[] = {
	[DP_CLIENT_KIND_PROBE] = "probe",
	[DP_CLIENT_KIND_FUNCTION] = "function",
	[DP_CLIENT_KIND_SDT] = "sdt",
	[DP_CLIENT_KIND_FUNCTION_OUTLINE] = "function-out-of-line",
	[DP_CLIENT_KIND_FUNCTION_INLINED] = "function-inlined",
};

const char *dp_client_kind_str(uint8_t kind)
{
	if (kind < sizeof(kind_names) / sizeof(kind_names[0]) && kind_names[kind])
		return kind_names[kind];
	return "?";
}

uint8_t dp_client_kind_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (kind_names[i] && !strcmp(kind_names[i], name))
			return (uint8_t)i;
	return 0;
}
