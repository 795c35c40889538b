/*
 * The client protocol's codec (proto/client.h): every message type
 * round-trips field by field, every cut frame is refused as truncated, the
 * bounds are enforced on both sides, an unknown type keeps its seq, random
 * and mutated frames never crash the decoder, and the daemon's file paths
 * follow the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/client.h"
#include "tap.h"

static void fill(char *s, size_t size, char c)
{
	memset(s, c, size - 1);
	s[size - 1] = '\0';
}

static void sample_proc(struct dp_client_proc *p, uint32_t nsites)
{
	p->pid = 4242;
	p->status = -ESRCH;
	snprintf(p->message, sizeof(p->message), "process 4242 exited during the operation");
	p->njump = 3;
	p->nint3 = 1;
	p->nrefused = nsites;
	for (uint32_t i = 0; i < nsites; i++) {
		struct dp_client_site *s = dp_client_proc_add_site(p);

		snprintf(s->event, sizeof(s->event), "dynprobe:f_return");
		s->addr = 0x7f0000001000ull + i;
		s->vaddr = 0x1000 + i;
		s->method = (uint8_t)(1 + i % 3);
		snprintf(s->reason, sizeof(s->reason), "branch-target");
		fill(s->text, sizeof(s->text), 't');
	}
}

static const uint16_t all_types[] = {
	DP_CLIENT_ENABLE, DP_CLIENT_DISABLE, DP_CLIENT_ADD_CONTEXT, DP_CLIENT_LIST,
	DP_CLIENT_SITES, DP_CLIENT_SESSION_DESTROYED, DP_CLIENT_PING, DP_CLIENT_ENABLE_REPLY,
	DP_CLIENT_DISABLE_REPLY, DP_CLIENT_ADD_CONTEXT_REPLY, DP_CLIENT_LIST_REPLY,
	DP_CLIENT_SITES_REPLY, DP_CLIENT_SESSION_DESTROYED_REPLY, DP_CLIENT_PING_REPLY,
	DP_CLIENT_UNSUPPORTED, DP_CLIENT_REFUSE, DP_CLIENT_ENABLE_MANY, DP_CLIENT_ENABLE_MANY_REPLY,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

/* Arrays of samples live here, so that messages built by hand are never
 * released (client.h: the caller owns them). */
static uint32_t pids[3] = { 11, 22, 33 };
static char ctx[2][DP_CLIENT_CTX_MAX] = { "reg:rax", "int:hits:counter+8" };
static struct dp_client_spec specs[3] = {
	{ "f1", DP_CLIENT_KIND_PROBE, "f1" },
	{ "prov:f2", DP_CLIENT_KIND_FUNCTION, "f2+0x4" },
	{ "f3", DP_CLIENT_KIND_PROBE, "0x401000" },
};

static void sample(struct dp_client_msg *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0xabcd0000u + type;
	switch (type) {
	case DP_CLIENT_ENABLE:
		fill(m->enable.session, sizeof(m->enable.session), 's');
		snprintf(m->enable.channel, sizeof(m->enable.channel), "channel0");
		snprintf(m->enable.event, sizeof(m->enable.event), "prov:ev");
		m->enable.kind = DP_CLIENT_KIND_FUNCTION;
		snprintf(m->enable.location, sizeof(m->enable.location), "main+0x1a");
		fill(m->enable.path, sizeof(m->enable.path), 'p');
		m->enable.npids = 3;
		m->enable.pids = pids;
		m->enable.nctx = 2;
		m->enable.ctx = ctx;
		break;
	case DP_CLIENT_DISABLE:
		snprintf(m->disable.session, sizeof(m->disable.session), "s");
		snprintf(m->disable.channel, sizeof(m->disable.channel), "c");
		snprintf(m->disable.event, sizeof(m->disable.event), "e");
		break;
	case DP_CLIENT_ADD_CONTEXT:
		snprintf(m->add_context.session, sizeof(m->add_context.session), "s");
		snprintf(m->add_context.channel, sizeof(m->add_context.channel), "c");
		m->add_context.nctx = 2;
		m->add_context.ctx = ctx;
		break;
	case DP_CLIENT_LIST:
		snprintf(m->list, sizeof(m->list), "s");
		break;
	case DP_CLIENT_SITES:
		snprintf(m->sites.path, sizeof(m->sites.path), "/usr/bin/ls");
		snprintf(m->sites.function, sizeof(m->sites.function), "main");
		break;
	case DP_CLIENT_SESSION_DESTROYED:
		snprintf(m->session_destroyed, sizeof(m->session_destroyed), "gone");
		break;
	case DP_CLIENT_PING:
		m->ping = 0x1122334455667788ull;
		break;
	case DP_CLIENT_ENABLE_MANY:
		snprintf(m->enable_many.session, sizeof(m->enable_many.session), "s");
		snprintf(m->enable_many.channel, sizeof(m->enable_many.channel), "channel0");
		fill(m->enable_many.path, sizeof(m->enable_many.path), 'p');
		m->enable_many.npids = 3;
		m->enable_many.pids = pids;
		m->enable_many.nctx = 2;
		m->enable_many.ctx = ctx;
		m->enable_many.nspecs = 3;
		m->enable_many.specs = specs;
		break;
	case DP_CLIENT_ENABLE_MANY_REPLY:
		m->reports.nreports = 3;
		m->reports.reports = calloc(3, sizeof(*m->reports.reports));
		for (int i = 0; i < 3; i++) {
			struct dp_client_report *r = &m->reports.reports[i];

			r->status = i == 1 ? -ENOENT : 0;
			snprintf(r->message, sizeof(r->message), "report %d", i);
			dp_client_report_add_event(r, "dynprobe:f_entry");
			sample_proc(dp_client_report_add_proc(r), (uint32_t)i * 2);
		}
		break;
	case DP_CLIENT_ENABLE_REPLY:
	case DP_CLIENT_DISABLE_REPLY:
	case DP_CLIENT_ADD_CONTEXT_REPLY:
	case DP_CLIENT_SESSION_DESTROYED_REPLY:
		m->report.status = -ENOENT;
		fill(m->report.message, sizeof(m->report.message), 'm');
		dp_client_report_add_event(&m->report, "dynprobe:f_entry");
		dp_client_report_add_event(&m->report, "dynprobe:f_return");
		sample_proc(dp_client_report_add_proc(&m->report), 5);
		sample_proc(dp_client_report_add_proc(&m->report), 0);
		break;
	case DP_CLIENT_LIST_REPLY:
		m->list_reply.nevents = 2;
		m->list_reply.events = calloc(2, sizeof(*m->list_reply.events));
		for (int i = 0; i < 2; i++) {
			struct dp_client_event *e = &m->list_reply.events[i];

			snprintf(e->session, sizeof(e->session), "s%d", i);
			snprintf(e->channel, sizeof(e->channel), "c");
			snprintf(e->event, sizeof(e->event), "e%d", i);
			e->kind = DP_CLIENT_KIND_PROBE;
			snprintf(e->location, sizeof(e->location), "0x401000");
			snprintf(e->path, sizeof(e->path), "/bin/true");
			e->enabled = i;
			e->npids = 1;
			e->pids = calloc(1, sizeof(*e->pids));
			e->pids[0] = 77;
			e->nctx = 1;
			e->ctx = calloc(1, sizeof(*e->ctx));
			snprintf(e->ctx[0], sizeof(e->ctx[0]), "regs");
			e->nnames = 1;
			e->names = calloc(1, sizeof(*e->names));
			snprintf(e->names[0], sizeof(e->names[0]), "dynprobe:e%d", i);
			e->nprocs = 1;
			e->procs = calloc(1, sizeof(*e->procs));
			e->procs[0].pid = 77;
			e->procs[0].njump = 2;
		}
		break;
	case DP_CLIENT_SITES_REPLY:
		snprintf(m->sites_reply.function, sizeof(m->sites_reply.function), "main");
		m->sites_reply.start = 0x401000;
		m->sites_reply.size = 64;
		m->sites_reply.ninsns = 3;
		m->sites_reply.insns = calloc(3, sizeof(*m->sites_reply.insns));
		for (uint32_t i = 0; i < 3; i++) {
			struct dp_client_insn *in = &m->sites_reply.insns[i];

			in->offset = i * 4;
			in->len = (uint8_t)(i ? 4 : DP_CLIENT_INSN_MAX);
			memset(in->bytes, 0x90 + (int)i, in->len);
			snprintf(in->mnemonic, sizeof(in->mnemonic), "nop");
			in->method = (uint8_t)(1 + i);
			if (i)
				snprintf(in->reason, sizeof(in->reason), "short");
		}
		break;
	case DP_CLIENT_PING_REPLY:
		m->ping_reply.cookie = 99;
		m->ping_reply.daemon_pid = 1234;
		snprintf(m->ping_reply.version, sizeof(m->ping_reply.version), "0.1.0");
		break;
	case DP_CLIENT_UNSUPPORTED:
		m->unsupported = 0x0042;
		break;
	case DP_CLIENT_REFUSE:
		m->refuse.major = DP_CLIENT_MAJOR;
		snprintf(m->refuse.reason, sizeof(m->refuse.reason), "no");
		break;
	}
}

/* Messages built by sample() that own their arrays (the others point at
 * static samples). */
static void sample_release(struct dp_client_msg *m)
{
	if (m->type == DP_CLIENT_ENABLE || m->type == DP_CLIENT_ADD_CONTEXT ||
	    m->type == DP_CLIENT_ENABLE_MANY)
		memset(m, 0, sizeof(*m));
	else
		dp_client_msg_release(m);
}

/* Field-by-field equality: both encode to the same bytes, and the decoded
 * one re-encodes to them (every field is on the wire, so equal bytes mean
 * equal fields). */
static bool same(const struct dp_client_msg *a, const struct dp_client_msg *b)
{
	struct dp_wbuf wa, wb;
	bool eq;

	if (dp_client_encode(a, &wa) || dp_client_encode(b, &wb))
		return false;
	eq = wa.len == wb.len && !memcmp(wa.data, wb.data, wa.len);
	dp_wbuf_release(&wa);
	dp_wbuf_release(&wb);
	return eq;
}

static void test_round_trips(void)
{
	for (size_t t = 0; t < NTYPES; t++) {
		struct dp_client_msg m, d;
		enum dp_proto_err why = DP_PROTO_ERR_NONE;
		struct dp_wbuf w;
		size_t bad = 0;
		int ret;

		sample(&m, all_types[t]);
		ret = dp_client_encode(&m, &w);
		if (!ret)
			ret = dp_client_decode_frame(w.data, w.len, &d, &why);
		tap_ok(!ret && d.type == m.type && d.seq == m.seq && same(&m, &d),
		       "%s round-trips (%zu bytes)", dp_client_type_name(all_types[t]), w.len);
		if (!ret)
			dp_client_msg_release(&d);
		/* Every cut is refused; none crashes or leaks. */
		for (size_t cut = 0; cut < w.len; cut++) {
			struct dp_client_msg x;

			if (dp_client_decode_frame(w.data, cut, &x, &why) != -EPROTO ||
			    why != DP_PROTO_ERR_TRUNCATED)
				bad++;
			dp_client_msg_release(&x);
		}
		tap_ok(bad == 0, "%s: all %zu cut frames are refused as truncated (%zu not)",
		       dp_client_type_name(all_types[t]), w.len, bad);
		dp_wbuf_release(&w);
		sample_release(&m);
	}
}

/* ENABLE_MANY's own bounds: its specs are checked as ENABLE's fields are. */
static void test_bounds_many(void)
{
	struct dp_client_msg m;
	struct dp_wbuf w;
	int ret;

	sample(&m, DP_CLIENT_ENABLE_MANY);
	specs[1].kind = 9;
	ret = dp_client_encode(&m, &w);
	specs[1].kind = DP_CLIENT_KIND_FUNCTION;
	dp_wbuf_release(&w);
	tap_ok(ret == -EINVAL, "ENABLE_MANY: a spec of an unknown kind is not sent: %d", ret);
	sample(&m, DP_CLIENT_ENABLE_MANY);
	m.enable_many.nspecs = DP_CLIENT_MAX_SPECS + 1;
	ret = dp_client_encode(&m, &w);
	dp_wbuf_release(&w);
	tap_ok(ret == -EINVAL, "ENABLE_MANY: %u specs are not sent: %d",
	       DP_CLIENT_MAX_SPECS + 1, ret);
	sample(&m, DP_CLIENT_ENABLE_MANY);
	specs[2].location[0] = '\0';
	ret = dp_client_encode(&m, &w);
	specs[2].location[0] = '0';
	if (!ret) {
		struct dp_client_msg d;
		enum dp_proto_err why = DP_PROTO_ERR_NONE;

		ret = dp_client_decode_frame(w.data, w.len, &d, &why);
		dp_client_msg_release(&d);
		dp_wbuf_release(&w);
		tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_STRING,
		       "ENABLE_MANY: an empty location is refused: %s",
		       dp_proto_err_str(why));
	} else {
		tap_ok(0, "ENABLE_MANY with an empty location encodes: %d", ret);
	}
}

static void test_bounds(void)
{
	struct dp_client_msg m;
	struct dp_wbuf w;
	uint32_t zero = 0;
	int ret;

	sample(&m, DP_CLIENT_ENABLE);
	m.enable.kind = 7;
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an unknown kind is not sent: %d", ret);
	dp_wbuf_release(&w);

	sample(&m, DP_CLIENT_ENABLE);
	m.enable.npids = DP_CLIENT_MAX_PIDS + 1;
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "%u pids are not sent: %d", DP_CLIENT_MAX_PIDS + 1, ret);
	dp_wbuf_release(&w);

	sample(&m, DP_CLIENT_ENABLE);
	m.enable.session[0] = '\0';
	{
		enum dp_proto_err why;
		struct dp_client_msg d;

		ret = dp_client_encode(&m, &w);
		ret = ret ? ret : dp_client_decode_frame(w.data, w.len, &d, &why);
		tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_STRING,
		       "an empty session name is refused by the receiver: %s",
		       dp_proto_err_str(why));
		dp_wbuf_release(&w);

		sample(&m, DP_CLIENT_ENABLE);
		m.enable.npids = 1;
		m.enable.pids = &zero;
		ret = dp_client_encode(&m, &w);
		ret = ret ? ret : dp_client_decode_frame(w.data, w.len, &d, &why);
		tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_VALUE, "pid 0 is refused: %s",
		       dp_proto_err_str(why));
		dp_wbuf_release(&w);
	}

	sample(&m, DP_CLIENT_ENABLE_REPLY);
	m.report.status = 5;
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a positive status is not sent: %d", ret);
	dp_wbuf_release(&w);
	dp_client_msg_release(&m);

	sample(&m, DP_CLIENT_ENABLE_REPLY);
	ret = dp_client_report_add_event(&m.report, "dynprobe:third");
	tap_ok(ret == -E2BIG, "a report holds at most %d event names: %d", DP_CLIENT_MAX_NAMES,
	       ret);
	m.report.procs[0].sites[0].method = 9;
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an unknown site method is not sent: %d", ret);
	dp_wbuf_release(&w);
	dp_client_msg_release(&m);

	sample(&m, DP_CLIENT_SITES_REPLY);
	m.sites_reply.insns[1].len = DP_CLIENT_INSN_MAX + 1;
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a 16-byte instruction is not sent: %d", ret);
	dp_wbuf_release(&w);
	dp_client_msg_release(&m);

	m = (struct dp_client_msg){ .type = 0x0077 };
	ret = dp_client_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an unknown type is not sent: %d", ret);
	dp_wbuf_release(&w);
}

/* REFUSE and UNSUPPORTED, byte for byte: their layout is the same in every
 * protocol and version (frame.h). */
static void test_common_bytes(void)
{
	static const uint8_t refuse[] = {
		0x44, 0x50, 0x43, 0x4c, DP_CLIENT_MAJOR, DP_CLIENT_MINOR, 0xff, 0xff, /* "DPCL" */
		6, 0, 0, 0, 0x04, 0x03, 0x02, 0x01,				/* length, seq */
		2, 3, 2, 0, 'n', 'o',						/* 2.3, "no" */
	};
	static const uint8_t unsupported[] = {
		0x44, 0x50, 0x43, 0x4c, DP_CLIENT_MAJOR, DP_CLIENT_MINOR, 0xfe, 0xff,
		2, 0, 0, 0, 0x04, 0x03, 0x02, 0x01,
		0x42, 0x00,
	};
	struct dp_client_msg m = { .type = DP_CLIENT_REFUSE, .seq = 0x01020304 };
	struct dp_wbuf w;
	int ret;

	m.refuse.major = 2;
	m.refuse.minor = 3;
	strcpy(m.refuse.reason, "no");
	ret = dp_client_encode(&m, &w);
	tap_ok(!ret && w.len == sizeof(refuse) && !memcmp(w.data, refuse, sizeof(refuse)),
	       "a REFUSE is encoded byte for byte as specified");
	dp_wbuf_release(&w);
	m = (struct dp_client_msg){ .type = DP_CLIENT_UNSUPPORTED, .seq = 0x01020304,
				    .unsupported = 0x0042 };
	ret = dp_client_encode(&m, &w);
	tap_ok(!ret && w.len == sizeof(unsupported) &&
	       !memcmp(w.data, unsupported, sizeof(unsupported)),
	       "an UNSUPPORTED is encoded byte for byte as specified");
	dp_wbuf_release(&w);
}

static void test_header(void)
{
	struct dp_client_msg m, d;
	enum dp_proto_err why;
	struct dp_wbuf w;
	int ret;

	sample(&m, DP_CLIENT_PING);
	dp_client_encode(&m, &w);
	w.data[6] = 0x42;
	w.data[7] = 0;
	ret = dp_client_decode_frame(w.data, w.len, &d, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_TYPE && !dp_proto_err_fatal(why) &&
	       d.type == 0x0042 && d.seq == m.seq,
	       "an unknown type is refused without closing, its type and seq kept");
	w.data[6] = DP_CLIENT_PING;
	w.data[4] = DP_CLIENT_MAJOR + 1;
	ret = dp_client_decode_frame(w.data, w.len, &d, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_VERSION, "another major is refused: %s",
	       dp_proto_err_str(why));
	w.data[4] = DP_CLIENT_MAJOR;
	w.data[0] ^= 0xff;
	ret = dp_client_decode_frame(w.data, w.len, &d, &why);
	tap_ok(ret == -EPROTO && why == DP_PROTO_ERR_MAGIC,
	       "the app protocol's magic (or any other) is refused: %s", dp_proto_err_str(why));
	dp_wbuf_release(&w);
}

/* Random mutations of valid frames: decoding never crashes, and whatever
 * decodes encodes again. */
static void test_fuzz(void)
{
	unsigned seed = (unsigned)getpid(), accepted = 0, reencoded = 0;

	srand(seed);
	for (int i = 0; i < 20000; i++) {
		struct dp_client_msg m, d;
		enum dp_proto_err why;
		struct dp_wbuf w, w2;

		sample(&m, all_types[(size_t)rand() % NTYPES]);
		if (dp_client_encode(&m, &w)) {
			sample_release(&m);
			continue;
		}
		size_t plen = w.len - DP_FRAME_HDR_LEN;

		for (int k = rand() % 4; plen && k >= 0; k--)
			w.data[DP_FRAME_HDR_LEN + (size_t)rand() % plen] ^= (uint8_t)(1 + rand() % 255);
		if (!dp_client_decode_frame(w.data, w.len, &d, &why)) {
			accepted++;
			if (!dp_client_encode(&d, &w2)) {
				reencoded++;
				dp_wbuf_release(&w2);
			}
			dp_client_msg_release(&d);
		}
		dp_wbuf_release(&w);
		sample_release(&m);
	}
	tap_ok(accepted == reencoded,
	       "20000 mutated frames (seed %u): no crash, %u accepted, all of them encode again",
	       seed, accepted);
}

static void test_paths(void)
{
	char buf[256];
	int ret;

	setenv("LTTNG_DYNPROBE_CLIENT_SOCKET", "/tmp/x/client.sock", 1);
	ret = dp_client_socket_path(buf, sizeof(buf));
	tap_ok(!ret && !strcmp(buf, "/tmp/x/client.sock"), "LTTNG_DYNPROBE_CLIENT_SOCKET wins: %s",
	       buf);
	ret = dp_client_pidfile_path(buf, sizeof(buf));
	tap_ok(!ret && !strcmp(buf, "/tmp/x/lttng-dynprobed.pid"),
	       "the pid file sits next to the client socket: %s", buf);
	unsetenv("LTTNG_DYNPROBE_CLIENT_SOCKET");
	ret = dp_client_socket_path(buf, sizeof(buf));
	if (geteuid() == 0)
		tap_ok(!ret && !strcmp(buf, "/var/run/lttng/dynprobe-client.sock"), "root: %s",
		       buf);
	setenv("LTTNG_HOME", "/home/lh", 1);
	ret = dp_client_socket_path(buf, sizeof(buf));
	if (geteuid() != 0)
		tap_ok(!ret && !strcmp(buf, "/home/lh/.lttng/dynprobe-client.sock"),
		       "a user: %s", buf);
	ret = dp_client_socket_path(buf, 10);
	tap_ok(ret == -ENAMETOOLONG, "a buffer too small: -ENAMETOOLONG (%d)", ret);
}

int main(void)
{
	test_round_trips();
	test_bounds();
	test_bounds_many();
	test_common_bytes();
	test_header();
	test_fuzz();
	test_paths();
	return tap_done();
}
