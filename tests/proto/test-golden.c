/*
 * Both protocols' messages, byte for byte: one message of every type of the
 * app and the client protocol, every field holding a value of its own, is
 * encoded and compared with the bytes kept in golden.txt; the kept bytes
 * decode and encode again to themselves.  The wire format of a released
 * protocol version never changes: a difference here is a bug, or a new
 * version.
 *
 * The frame header's minor byte (offset 5) is the sender's version: a
 * line kept at an older minor is compared with that byte set to the
 * line's own, as a peer of that version sends it; every other byte must
 * match.
 *
 * `test-golden --print` writes the file anew (for a new message type, whose
 * bytes must then be checked by hand against the layout in app.h or
 * client.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/app.h"
#include "proto/client.h"
#include "tap.h"

#define LINE_MAX_HEX (1u << 16)

/* ---- the app protocol's samples ---------------------------------------- */

static struct dp_app_probe app_probes[2] = {
	{ 101, 0x7f0000401000ull, DP_APP_PROBE_AT_ENTRY, "dynprobe:a", 0x0102030405060708ull, 2,
	  3, 4 },
	{ 102, 0x7f0000401010ull, 0, "prov:b", 5, 6, 0x8000000000000007ull, 8 },
};

static struct dp_app_patch app_patches[2] = {
	{ .site = 0x7f0000401000ull, .method = DP_APP_METHOD_JUMP, .len = 3,
	  .orig = { 0x55, 0x48, 0x89 }, .hop = 0x7f0000401050ull, .hop_len = DP_APP_HOP_LEN,
	  .hop_orig = { 0xcc, 0xcb, 0xca, 0xc9, 0xc8 }, .tramp = 0x7f0010000000ull,
	  .tramp_len = 200, .nprobes = 2, .probes = { 101, 102 } },
	{ .site = 0x7f0000401010ull, .method = DP_APP_METHOD_INT3, .len = 1, .orig = { 0xc3 },
	  .resume = 0x7f0010000100ull, .nprobes = 1, .probes = { 102 } },
};

static struct dp_ctx app_ctx[2] = {
	{ .kind = 2, .name = "hits", .reg = 3, .width = 4, .shift = 8,
	  .type = { .name = "int32", .type = 0, .size = 4, .is_signed = true, .hex = false },
	  .addr = { .base = 6, .deref = 1, .offset = -0x14, .offset2 = 0x10 }, .maxlen = 300,
	  .depth = 17, .walker = 1 },
	{ .kind = 3, .name = "name", .reg = 19, .width = 8, .shift = 0,
	  .type = { .name = "s", .type = 1, .size = 0, .is_signed = false, .hex = true },
	  .addr = { .base = DP_CTX_ABS, .deref = 0, .offset = 0x601040, .offset2 = INT64_MIN },
	  .maxlen = 4096, .depth = 128, .walker = 0 },
};

/* A recipe of every op and both kinds of result (spec/value.h). */
static struct dp_ctx app_ctx_ext[2] = {
	{ .kind = DP_CTX_VALUE, .name = "v", .type = { .name = "", .type = 0, .size = 4,
						       .is_signed = true },
	  .value = { .loc = DP_VALUE_LOC_ADDR, .nops = 7, .ops = {
		{ DP_VOP_REG, 5, -0x14 }, { DP_VOP_CONST, 0, 0x601040 }, { DP_VOP_ADD, 0, 0 },
		{ DP_VOP_MULC, 0, 8 }, { DP_VOP_ADDC, 0, 3 }, { DP_VOP_DEREF, 8, 0 },
		{ DP_VOP_SHR, 16, 0 } } } },
	{ .kind = DP_CTX_VALUE, .name = "x", .type = { .name = "", .type = 0, .size = 8 },
	  .value = { .loc = DP_VALUE_LOC_PIECES, .flags = DP_VALUE_BOOL, .nops = 2, .ops = {
		{ DP_VOP_REG, DP_VALUE_XMM0 + 3, 0 }, { DP_VOP_PIECE, 4, 4 } } } },
};

/* DEFINE_PROBES's sample: two classes (one with a context), three probes. */
static struct dp_app_probe_class app_classes[2] = {
	{ DP_APP_PROBE_AT_ENTRY, "prov:ev_entry", 0, NULL },
	{ 0, "prov:ev_return", 1, &app_ctx_ext[1] },
};
static struct dp_app_probe_def app_defs[3] = {
	{ 11, 0x401126, 0 }, { 12, 0x401140, 1 }, { 13, 0x401151, 1 },
};
static uint64_t app_handles[2] = { 0x7f1234567000ull, 0x7f1234567040ull };
static uint64_t app_sites[2] = { 0x401126, 0x401140 };

static void app_sample(struct dp_app_msg *m, uint16_t type)
{
	struct dp_app_state state = { 2, app_probes, 2, app_patches, 11, 0xffffffffffffffffull,
				      13 };

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0x01020300u + type;
	switch (type) {
	case DP_APP_HELLO:
		m->hello = (struct dp_app_hello){ 1, 1, 4242, 0x7f00deadbeefull, "0.1.0", state };
		break;
	case DP_APP_HELLO_REPLY:
		m->hello_reply = (struct dp_app_hello_reply){ 1, 1, 77 };
		break;
	case DP_APP_DEFINE_PROBE:
		m->define_probe = (struct dp_app_define_probe){ 9, 0x401126, DP_APP_PROBE_AT_ENTRY,
								"prov:ev", 2, app_ctx };
		break;
	case DP_APP_DEFINE_PROBE_EXT:
		m->define_probe = (struct dp_app_define_probe){ 10, 0x401127, 0, "prov:sdt", 2,
								app_ctx_ext };
		break;
	case DP_APP_ALLOC_CODE:
		m->alloc_code = (struct dp_app_alloc_code){ 0x55555555a000ull, 4096 };
		break;
	case DP_APP_NOTE_INSTALLED:
		m->note_installed = app_patches[0];
		break;
	case DP_APP_NOTE_REMOVED:
		m->note_removed = 0x401126;
		break;
	case DP_APP_LIST_REPLY:
		m->list_reply = state;
		break;
	case DP_APP_PING:
	case DP_APP_PING_REPLY:
		m->ping = 0x1122334455667788ull;
		break;
	case DP_APP_MAPPED:
	case DP_APP_MAPPED_REPLY:
		m->mapped = 0x0102030405060708ull;
		break;
	case DP_APP_FOLLOW:
		m->follow = DP_APP_FOLLOW_EXEC;
		break;
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_DEFINE_PROBE_EXT_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
	case DP_APP_FOLLOW_REPLY:
		m->result = (struct dp_app_result){ -ENOSPC, 0x7f1234567000ull, "no room" };
		break;
	case DP_APP_UNSUPPORTED:
		m->unsupported = 0x0042;
		break;
	case DP_APP_REFUSE:
		m->refuse = (struct dp_app_refuse){ 2, 3, "protocol 2.3 is not 1.1" };
		break;
	case DP_APP_DEFINE_PROBES:
		m->define_probes = (struct dp_app_define_probes){ 2, app_classes, 3, app_defs };
		break;
	case DP_APP_DEFINE_PROBES_REPLY:
		m->define_probes_reply = (struct dp_app_define_probes_reply){ -ENOSPC, "full", 2,
									      app_handles };
		break;
	case DP_APP_NOTE_INSTALLED_MANY:
		m->note_many = (struct dp_app_patches){ 2, app_patches };
		break;
	case DP_APP_NOTE_INSTALLED_MANY_REPLY:
		m->result = (struct dp_app_result){ -ENOENT, 1, "no probe 7" };
		break;
	case DP_APP_NOTE_REMOVED_MANY:
		m->removed_many = (struct dp_app_sites){ 2, app_sites };
		break;
	case DP_APP_NOTE_REMOVED_MANY_REPLY:
		m->result = (struct dp_app_result){ -ENOENT, 0, "no patch" };
		break;
	}
}

static const uint16_t app_types[] = {
	DP_APP_HELLO, DP_APP_HELLO_REPLY, DP_APP_DEFINE_PROBE, DP_APP_DEFINE_PROBE_REPLY,
	DP_APP_ALLOC_CODE, DP_APP_ALLOC_CODE_REPLY, DP_APP_NOTE_INSTALLED,
	DP_APP_NOTE_INSTALLED_REPLY, DP_APP_NOTE_REMOVED, DP_APP_NOTE_REMOVED_REPLY,
	DP_APP_LIST, DP_APP_LIST_REPLY, DP_APP_PING, DP_APP_PING_REPLY, DP_APP_GO,
	DP_APP_GO_REPLY, DP_APP_UNSUPPORTED, DP_APP_REFUSE, DP_APP_DEFINE_PROBE_EXT,
	DP_APP_DEFINE_PROBE_EXT_REPLY, DP_APP_MAPPED, DP_APP_MAPPED_REPLY,
	DP_APP_DEFINE_PROBES, DP_APP_DEFINE_PROBES_REPLY, DP_APP_NOTE_INSTALLED_MANY,
	DP_APP_NOTE_INSTALLED_MANY_REPLY, DP_APP_NOTE_REMOVED_MANY,
	DP_APP_NOTE_REMOVED_MANY_REPLY,
	DP_APP_FOLLOW, DP_APP_FOLLOW_REPLY,
};

/* ---- the client protocol's samples ------------------------------------- */

static uint32_t cl_pids[2] = { 11, 22 };
static char cl_ctx[2][DP_CLIENT_CTX_MAX] = { "reg:rax", "int:hits:counter+8" };
static char cl_names[2][DP_CLIENT_EVENT_MAX] = { "dynprobe:f_entry", "dynprobe:f_return" };
static struct dp_client_spec cl_specs[2] = {
	{ "f1", DP_CLIENT_KIND_PROBE, "f1" },
	{ "prov:f2", DP_CLIENT_KIND_FUNCTION, "f2+0x4" },
};
static struct dp_client_site cl_sites[2] = {
	{ "dynprobe:f_entry", 0x7f0000001000ull, 0x1000, DP_CLIENT_METHOD_JUMP, "", "" },
	{ "dynprobe:f_return", 0x7f0000001020ull, 0x1020, DP_CLIENT_METHOD_INT3, "short",
	  "the window is too short" },
};
static struct dp_client_proc cl_procs[2] = {
	{ 4242, 0, "", 1, 1, 0, 2, cl_sites },
	{ 4343, -ESRCH, "process 4343 exited", 0, 0, 3, 0, NULL },
};
static struct dp_client_report cl_reports[2] = {
	{ 0, "ok", 2, cl_names, 2, cl_procs },
	{ -ENOENT, "no such symbol", 1, cl_names, 0, NULL },
};
static struct dp_client_event cl_events[2] = {
	{ "s1", "channel0", "f", DP_CLIENT_KIND_FUNCTION, "main+0x1a", "/bin/true", true, 2,
	  cl_pids, 2, cl_ctx, 2, cl_names, 1, cl_procs + 1 },
	{ "s2", "c", "g", DP_CLIENT_KIND_PROBE, "0x401000", "/bin/false", false, 0, NULL, 0,
	  NULL, 1, cl_names, 0, NULL },
};
static struct dp_client_event_flags cl_flags[2] = {
	{ "s1", "channel0", "f", DP_CLIENT_EVENT_FOLLOW_EXEC },
	{ "s2", "c", "prov:g", 0 },
};
static struct dp_client_insn cl_insns[2] = {
	{ 0, 1, { 0x55 }, "push", DP_CLIENT_METHOD_JUMP, "", "" },
	{ 1, 3, { 0x48, 0x89, 0xe5 }, "mov", DP_CLIENT_METHOD_REFUSED, "branch-target",
	  "a branch lands inside the window" },
};

static void client_sample(struct dp_client_msg *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0x0a0b0c00u + type;
	switch (type) {
	case DP_CLIENT_ENABLE:
		m->enable = (struct dp_client_enable){ "s", "channel0", "prov:ev",
						       DP_CLIENT_KIND_FUNCTION, "main+0x1a",
						       "/bin/true", 2, cl_pids, 2, cl_ctx };
		break;
	case DP_CLIENT_DISABLE:
		m->disable = (struct dp_client_event_ref){ "s", "c", "e" };
		break;
	case DP_CLIENT_ADD_CONTEXT:
		m->add_context = (struct dp_client_add_context){ "s", "c", "", 2, cl_ctx };
		break;
	case DP_CLIENT_LIST:
		strcpy(m->list, "sess");
		break;
	case DP_CLIENT_SITES:
		m->sites = (struct dp_client_sites){ "/usr/bin/ls", "main" };
		break;
	case DP_CLIENT_SESSION_DESTROYED:
		strcpy(m->session_destroyed, "gone");
		break;
	case DP_CLIENT_PING:
		m->ping = 0x1122334455667788ull;
		break;
	case DP_CLIENT_ENABLE_MANY:
		m->enable_many = (struct dp_client_enable_many){ "s", "channel0", "/bin/true", 2,
								 cl_pids, 2, cl_ctx, 2, cl_specs };
		break;
	case DP_CLIENT_EVENT_FLAGS:
		m->event_flags = cl_flags[0];
		break;
	case DP_CLIENT_LIST_FLAGS:
		strcpy(m->list_flags, "s1");
		break;
	case DP_CLIENT_LIST_FLAGS_REPLY:
		m->flags_reply = (struct dp_client_flags_reply){ -EPERM, "some hidden", 2, cl_flags };
		break;
	case DP_CLIENT_EVENT_FLAGS_REPLY:
	case DP_CLIENT_ENABLE_REPLY:
	case DP_CLIENT_DISABLE_REPLY:
	case DP_CLIENT_ADD_CONTEXT_REPLY:
	case DP_CLIENT_SESSION_DESTROYED_REPLY:
		m->report = cl_reports[0];
		break;
	case DP_CLIENT_LIST_REPLY:
		m->list_reply = (struct dp_client_list_reply){ -EPERM, "some hidden", 2, cl_events };
		break;
	case DP_CLIENT_SITES_REPLY:
		m->sites_reply = (struct dp_client_sites_reply){ 0, "", "main", 0x401000, 64, 2,
								 cl_insns };
		break;
	case DP_CLIENT_PING_REPLY:
		m->ping_reply = (struct dp_client_ping_reply){ 99, 1234, "0.1.0" };
		break;
	case DP_CLIENT_ENABLE_MANY_REPLY:
		m->reports = (struct dp_client_reports){ 2, cl_reports };
		break;
	case DP_CLIENT_UNSUPPORTED:
		m->unsupported = 0x0042;
		break;
	case DP_CLIENT_REFUSE:
		m->refuse = (struct dp_client_refuse){ 2, 0, "protocol 2.0 is not 1.1" };
		break;
	}
}

static const uint16_t client_types[] = {
	DP_CLIENT_ENABLE, DP_CLIENT_DISABLE, DP_CLIENT_ADD_CONTEXT, DP_CLIENT_LIST,
	DP_CLIENT_SITES, DP_CLIENT_SESSION_DESTROYED, DP_CLIENT_PING, DP_CLIENT_ENABLE_MANY,
	DP_CLIENT_ENABLE_REPLY, DP_CLIENT_DISABLE_REPLY, DP_CLIENT_ADD_CONTEXT_REPLY,
	DP_CLIENT_LIST_REPLY, DP_CLIENT_SITES_REPLY, DP_CLIENT_SESSION_DESTROYED_REPLY,
	DP_CLIENT_PING_REPLY, DP_CLIENT_ENABLE_MANY_REPLY, DP_CLIENT_UNSUPPORTED,
	DP_CLIENT_REFUSE, DP_CLIENT_EVENT_FLAGS, DP_CLIENT_EVENT_FLAGS_REPLY,
	DP_CLIENT_LIST_FLAGS, DP_CLIENT_LIST_FLAGS_REPLY,
};

/* ---- one sample of a protocol, as bytes -------------------------------- */

struct proto_case {
	const char *proto;		/* "app", "client" */
	uint16_t type;
};

/* The sample's frame (w to release): 0 or the encoder's error. */
static int encode_case(const struct proto_case *c, struct dp_wbuf *w)
{
	if (!strcmp(c->proto, "app")) {
		struct dp_app_msg m;

		app_sample(&m, c->type);
		return dp_app_encode(&m, w);
	}
	struct dp_client_msg m;

	client_sample(&m, c->type);
	return dp_client_encode(&m, w);
}

static const char *case_name(const struct proto_case *c)
{
	return !strcmp(c->proto, "app") ? dp_app_type_name(c->type)
					: dp_client_type_name(c->type);
}

/* Decodes a frame and encodes the message again into w: 0 or an error. */
static int reencode(const struct proto_case *c, const uint8_t *buf, size_t len, struct dp_wbuf *w)
{
	enum dp_proto_err why;
	int ret;

	if (!strcmp(c->proto, "app")) {
		struct dp_app_msg m;

		ret = dp_app_decode_frame(buf, len, &m, &why);
		ret = ret ? ret : dp_app_encode(&m, w);
		dp_app_msg_release(&m);
		return ret;
	}
	struct dp_client_msg m;

	ret = dp_client_decode_frame(buf, len, &m, &why);
	ret = ret ? ret : dp_client_encode(&m, w);
	dp_client_msg_release(&m);
	return ret;
}

static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static size_t parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (n < max && sscanf(s + 2 * n, "%2x", &v) == 1)
		out[n++] = (uint8_t)v;
	return n;
}

static int print_all(void)
{
	const char *protos[2] = { "app", "client" };
	const uint16_t *types[2] = { app_types, client_types };
	size_t ntypes[2] = { sizeof(app_types) / 2, sizeof(client_types) / 2 };

	for (int p = 0; p < 2; p++) {
		for (size_t t = 0; t < ntypes[p]; t++) {
			struct proto_case c = { protos[p], types[p][t] };
			struct dp_wbuf w;
			int ret = encode_case(&c, &w);

			if (ret) {
				fprintf(stderr, "%s %s: %s\n", c.proto, case_name(&c), strerror(-ret));
				return 1;
			}
			printf("%s %s ", c.proto, case_name(&c));
			print_hex(stdout, w.data, w.len);
			putchar('\n');
			dp_wbuf_release(&w);
		}
	}
	return 0;
}

/* The sample case of a message named in golden.txt. */
static bool case_of(const char *proto, const char *name, struct proto_case *c)
{
	bool app = !strcmp(proto, "app");
	const uint16_t *types = app ? app_types : client_types;
	size_t n = app ? sizeof(app_types) / 2 : sizeof(client_types) / 2;

	c->proto = app ? "app" : "client";
	for (size_t t = 0; t < n; t++) {
		c->type = types[t];
		if (!strcmp(case_name(c), name))
			return true;
	}
	return false;
}

/* The sender's minor in w's header, set to the kept line's when that one is
 * older (see the top). */
#define HDR_MINOR 5
static void kept_minor(struct dp_wbuf *w, const uint8_t *want, size_t n)
{
	if (n > HDR_MINOR && w->len > HDR_MINOR && want[HDR_MINOR] < w->data[HDR_MINOR])
		w->data[HDR_MINOR] = want[HDR_MINOR];
}

static void check_line(const char *proto, const char *name, const char *hex, uint8_t *want)
{
	struct proto_case c;
	struct dp_wbuf w, again;
	size_t n;
	int ret;

	if (!case_of(proto, name, &c)) {
		tap_ok(false, "%s %s: a known message type", proto, name);
		return;
	}
	n = parse_hex(hex, want, LINE_MAX_HEX);
	ret = encode_case(&c, &w);
	kept_minor(&w, want, n);
	tap_ok(!ret && w.len == n && !memcmp(w.data, want, n),
	       "%s %s is encoded as it always was (%zu bytes)", proto, name, n);
	dp_wbuf_release(&w);
	ret = reencode(&c, want, n, &again);
	kept_minor(&again, want, n);
	tap_ok(!ret && again.len == n && !memcmp(again.data, want, n),
	       "%s %s: the kept bytes decode and encode again to themselves", proto, name);
	dp_wbuf_release(&again);
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("top_srcdir");
	char path[4096], proto[16], name[64];
	static char hex[2 * LINE_MAX_HEX + 1];
	static uint8_t want[LINE_MAX_HEX];
	unsigned lines = 0;
	FILE *f;

	if (argc > 1 && !strcmp(argv[1], "--print"))
		return print_all();
	snprintf(path, sizeof(path), "%s/tests/proto/golden.txt", srcdir ? srcdir : "../..");
	f = fopen(path, "r");
	if (!tap_ok(f != NULL, "%s opens", path))
		return tap_done();
	while (fscanf(f, "%15s %63s %131072s", proto, name, hex) == 3) {
		check_line(proto, name, hex, want);
		lines++;
	}
	fclose(f);
	tap_ok(lines == sizeof(app_types) / 2 + sizeof(client_types) / 2,
	       "golden.txt holds every message type of both protocols (%u)", lines);
	return tap_done();
}
