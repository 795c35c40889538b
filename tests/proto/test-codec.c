/*
 * The app protocol's codec: every message round-trips field by field, every
 * truncation and every bound is refused with its typed error, headers of
 * another protocol or major version are refused, and random bytes and
 * mutated frames never crash the decoder (the seed is printed; set
 * DP_TEST_SEED to replay one).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/app.h"
#include "tap.h"

/* Sample messages. */

static void fill_str(char *s, size_t size, char c)
{
	/* The longest string the bound allows. */
	memset(s, c, size - 1);
	s[size - 1] = '\0';
}

static void sample_probe(struct dp_app_probe *p, uint32_t i)
{
	p->id = 100 + i;
	p->site = 0x7f0000401000ull + 16 * i;
	p->flags = i % 2 ? DP_APP_PROBE_AT_ENTRY : 0;
	if (i % 2)
		fill_str(p->event, sizeof(p->event), 'e');
	else
		snprintf(p->event, sizeof(p->event), "dynprobe:ev%" PRIu32, i);
	p->hits = 0x0123456789abcdefull + i;
	p->recursions = i;
	p->recorded = 0x8000000000000000ull | i;
	p->mem_errors = 3 * i;
}

static void sample_patch(struct dp_app_patch *p, uint32_t i)
{
	memset(p, 0, sizeof(*p));
	p->site = 0x7f0000401000ull + 64 * i;
	p->method = i % 2 ? DP_APP_METHOD_INT3 : DP_APP_METHOD_JUMP;
	p->len = i % 2 ? 1 + i % DP_APP_MAX_ORIG : 5 + i % (DP_APP_MAX_ORIG - 4);
	if (i % 4 == 2) {
		/* A jump through a hop: a short window, padding in rel8 reach. */
		p->len = 2 + i % 3;
		p->hop = i % 8 == 2 ? p->site + 2 - 128 : p->site + 2 + 127;
		p->hop_len = DP_APP_HOP_LEN;
		for (unsigned b = 0; b < DP_APP_HOP_LEN; b++)
			p->hop_orig[b] = (uint8_t)(0xcc - b);
	}
	for (unsigned b = 0; b < p->len; b++)
		p->orig[b] = (uint8_t)(0x90 + b + i);
	p->tramp = p->method == DP_APP_METHOD_JUMP ? 0x7f0010000000ull + 256 * i : 0;
	p->tramp_len = p->method == DP_APP_METHOD_JUMP ? 200 + i : 0;
	p->resume = p->method == DP_APP_METHOD_INT3 ? 0x7f0010000000ull + 32 * i : 0;
	p->nprobes = 1 + i % DP_APP_MAX_PATCH_PROBES;
	for (uint32_t k = 0; k < p->nprobes; k++)
		p->probes[k] = 100 + i + k;
}

static void sample_state(struct dp_app_state *s, uint32_t nprobes, uint32_t npatches)
{
	s->nprobes = nprobes;
	s->probes = nprobes ? calloc(nprobes, sizeof(*s->probes)) : NULL;
	for (uint32_t i = 0; i < nprobes; i++)
		sample_probe(&s->probes[i], i);
	s->npatches = npatches;
	s->patches = npatches ? calloc(npatches, sizeof(*s->patches)) : NULL;
	for (uint32_t i = 0; i < npatches; i++)
		sample_patch(&s->patches[i], i);
	s->traps_ours = 11;
	s->traps_chained = 0xffffffffffffffffull;
	s->traps_reasserted = 2;
}

static void sample_ctx(struct dp_ctx *c, uint32_t i, bool ext)
{
	memset(c, 0, sizeof(*c));
	c->kind = (uint8_t)(i % ((ext ? DP_CTX_KIND_LAST : DP_CTX_RETVAL) + 1));
	if (ext) {
		/* Every op, with arguments and immediates at their extremes. */
		c->value.loc = (uint8_t)(i % (DP_VALUE_LOC_PIECES + 1));
		c->value.flags = i % 2 ? DP_VALUE_BOOL : 0;
		c->value.nops = i == 7 ? DP_VALUE_MAX_OPS : 1 + i % 5;
		for (uint32_t k = 0; k < c->value.nops; k++)
			c->value.ops[k] = (struct dp_value_op){
				.op = (uint8_t)(DP_VOP_REG + (i + k) % DP_VOP_LAST),
				.arg = (uint8_t)(k * 37 + i),
				.imm = k % 2 ? INT64_MIN + i : (int64_t)(0x7fffffff00000000ull + k),
			};
	}
	if (i == 3)
		fill_str(c->name, sizeof(c->name), 'n');
	else
		snprintf(c->name, sizeof(c->name), "field%" PRIu32, i);
	c->reg = (uint8_t)(i % DP_CTX_REG__COUNT);
	c->width = (uint8_t)(1u << (i % 4));
	c->shift = i % 7 == 0 ? 8 : 0;
	snprintf(c->type.name, sizeof(c->type.name), "t%" PRIu32, i);
	c->type.type = (uint8_t)(i % (DP_FT_DOUBLE + 1));
	c->type.size = (uint8_t)(1u << (i % 4));
	c->type.is_signed = i % 3 == 0;
	c->type.hex = i % 5 == 0;
	c->addr.base = i % 4 == 0 ? DP_CTX_ABS : (uint8_t)(i % 16);
	c->addr.deref = i % 2;
	c->addr.offset = i % 2 ? -0x14 - (int64_t)i : (int64_t)0x601040 + i;
	c->addr.offset2 = i % 2 ? INT64_MIN + i : (int64_t)i;
	c->maxlen = i == 5 ? DP_CTX_STRING_MAX : 256 + i;
	c->depth = (uint16_t)(16 + i);
	c->walker = i % 2 ? DP_BT_CFI : DP_BT_FP;
}

/* n leds: jumps (a window written too) and redirects, every write bound
 * reached in one. */
static void sample_leds(struct dp_app_leds *l, uint32_t n)
{
	l->nleds = n;
	l->leds = calloc(n, sizeof(*l->leds));
	for (uint32_t i = 0; i < n; i++) {
		struct dp_app_led *d = &l->leds[i];

		sample_patch(&d->patch, 2 * i);
		if (i % 2) {
			d->patch.method = DP_APP_METHOD_REDIRECT;
			d->patch.hop = 0;
			d->patch.hop_len = 0;
			d->patch.len = 1 + i % 8;
		}
		d->nwrites = i ? 1 + i % DP_APP_MAX_WRITES : DP_APP_MAX_WRITES;
		for (uint32_t k = 0; k < d->nwrites; k++) {
			struct dp_app_write *w = &d->writes[k];

			w->addr = 0x7f0000500000ull + 0x100 * i + 8 * k;
			w->kind = k + 1 == d->nwrites ? DP_APP_WRITE_HOP : DP_APP_WRITE_BRANCH;
			w->len = w->kind == DP_APP_WRITE_HOP ? DP_APP_HOP_LEN : 2 + k % 7;
			for (unsigned b = 0; b < w->len; b++)
				w->orig[b] = (uint8_t)(0x70 + b + k);
		}
	}
}

static bool eq_leds(const struct dp_app_leds *a, const struct dp_app_leds *b);

/* One message of each type, with bounds reached where it is cheap. */
static const uint16_t all_types[] = {
	DP_APP_HELLO, DP_APP_HELLO_REPLY, DP_APP_DEFINE_PROBE, DP_APP_DEFINE_PROBE_REPLY,
	DP_APP_ALLOC_CODE, DP_APP_ALLOC_CODE_REPLY, DP_APP_NOTE_INSTALLED,
	DP_APP_NOTE_INSTALLED_REPLY, DP_APP_NOTE_REMOVED, DP_APP_NOTE_REMOVED_REPLY,
	DP_APP_LIST, DP_APP_LIST_REPLY, DP_APP_PING, DP_APP_PING_REPLY, DP_APP_GO,
	DP_APP_GO_REPLY, DP_APP_DEFINE_PROBE_EXT, DP_APP_DEFINE_PROBE_EXT_REPLY,
	DP_APP_MAPPED, DP_APP_MAPPED_REPLY, DP_APP_UNSUPPORTED, DP_APP_REFUSE,
	DP_APP_DEFINE_PROBES, DP_APP_DEFINE_PROBES_REPLY, DP_APP_NOTE_INSTALLED_MANY,
	DP_APP_NOTE_INSTALLED_MANY_REPLY, DP_APP_NOTE_REMOVED_MANY, DP_APP_NOTE_REMOVED_MANY_REPLY,
	DP_APP_NOTE_WRITES, DP_APP_NOTE_WRITES_REPLY, DP_APP_LIST_WRITES, DP_APP_LIST_WRITES_REPLY,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

/* A DEFINE_PROBES of nprobes probes over nclasses classes, one with every
 * context bound reached. */
static void sample_define_probes(struct dp_app_define_probes *d, uint32_t nclasses,
				 uint32_t nprobes)
{
	d->nclasses = nclasses;
	d->classes = calloc(nclasses, sizeof(*d->classes));
	for (uint32_t c = 0; c < nclasses; c++) {
		struct dp_app_probe_class *k = &d->classes[c];

		k->flags = c % 2 ? DP_APP_PROBE_AT_ENTRY : 0;
		if (c == 0)
			fill_str(k->event, sizeof(k->event), 'x');
		else
			snprintf(k->event, sizeof(k->event), "prov:ev%" PRIu32, c);
		k->nctx = c == 0 ? DP_APP_MAX_CTX : c - 1;
		k->ctx = k->nctx ? calloc(k->nctx, sizeof(*k->ctx)) : NULL;
		for (uint32_t i = 0; i < k->nctx; i++)
			sample_ctx(&k->ctx[i], i, true);
	}
	d->nprobes = nprobes;
	d->probes = calloc(nprobes, sizeof(*d->probes));
	for (uint32_t i = 0; i < nprobes; i++)
		d->probes[i] = (struct dp_app_probe_def){ 1 + i, 0x401000 + 7 * i, i % nclasses };
}

static void sample_msg(struct dp_app_msg *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0xfedc0000u + type;
	switch (type) {
	case DP_APP_HELLO:
		m->hello.major = DP_APP_MAJOR;
		m->hello.minor = DP_APP_MINOR;
		m->hello.pid = 4242;
		m->hello.probe_hit = 0x7f00deadbeefull;
		fill_str(m->hello.agent_version, sizeof(m->hello.agent_version), 'v');
		sample_state(&m->hello.state, 5, 7);
		break;
	case DP_APP_HELLO_REPLY:
		m->hello_reply = (struct dp_app_hello_reply){ DP_APP_MAJOR, DP_APP_MINOR, 77 };
		break;
	case DP_APP_DEFINE_PROBE:
	case DP_APP_DEFINE_PROBE_EXT:
		m->define_probe.id = 9;
		m->define_probe.site = 0x401126;
		m->define_probe.flags = DP_APP_PROBE_AT_ENTRY;
		fill_str(m->define_probe.event, sizeof(m->define_probe.event), 'x');
		m->define_probe.nctx = DP_APP_MAX_CTX;
		m->define_probe.ctx = calloc(DP_APP_MAX_CTX, sizeof(struct dp_ctx));
		for (uint32_t i = 0; i < DP_APP_MAX_CTX; i++)
			sample_ctx(&m->define_probe.ctx[i], i, type == DP_APP_DEFINE_PROBE_EXT);
		break;
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_DEFINE_PROBE_EXT_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
		m->result.status = type == DP_APP_ALLOC_CODE_REPLY ? -ENOSPC : 0;
		m->result.value = 0x7f1234567000ull;
		fill_str(m->result.error, sizeof(m->result.error), 'r');
		break;
	case DP_APP_ALLOC_CODE:
		m->alloc_code = (struct dp_app_alloc_code){ 0x55555555a000ull, DP_APP_MAX_CODE };
		break;
	case DP_APP_NOTE_INSTALLED:
		sample_patch(&m->note_installed, DP_APP_MAX_PATCH_PROBES - 1);
		break;
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
		m->result.status = -ENOENT;
		snprintf(m->result.error, sizeof(m->result.error), "no probe %d", 12);
		break;
	case DP_APP_NOTE_REMOVED:
		m->note_removed = 0x401126;
		break;
	case DP_APP_LIST:
	case DP_APP_GO:
	case DP_APP_GO_REPLY:
		break;
	case DP_APP_LIST_REPLY:
		sample_state(&m->list_reply, 3, 2);
		break;
	case DP_APP_PING:
	case DP_APP_PING_REPLY:
		m->ping = 0x1122334455667788ull;
		break;
	case DP_APP_MAPPED:
	case DP_APP_MAPPED_REPLY:
		m->mapped = 0x8877665544332211ull;
		break;
	case DP_APP_UNSUPPORTED:
		m->unsupported = 0x0042;
		break;
	case DP_APP_REFUSE:
		m->refuse.major = DP_APP_MAJOR;
		m->refuse.minor = DP_APP_MINOR;
		snprintf(m->refuse.reason, sizeof(m->refuse.reason), "protocol 9.0 is not 1.0");
		break;
	case DP_APP_DEFINE_PROBES:
		sample_define_probes(&m->define_probes, 3, 100);
		break;
	case DP_APP_DEFINE_PROBES_REPLY:
		m->define_probes_reply.status = -ENOSPC;
		fill_str(m->define_probes_reply.error, sizeof(m->define_probes_reply.error), 'e');
		m->define_probes_reply.nhandles = 77;
		m->define_probes_reply.handles = calloc(77, sizeof(uint64_t));
		for (uint32_t i = 0; i < 77; i++)
			m->define_probes_reply.handles[i] = 0x7f0000000000ull + i * 0x40;
		break;
	case DP_APP_NOTE_INSTALLED_MANY:
		m->note_many.npatches = 40;
		m->note_many.patches = calloc(40, sizeof(struct dp_app_patch));
		for (uint32_t i = 0; i < 40; i++)
			sample_patch(&m->note_many.patches[i], i);
		break;
	case DP_APP_NOTE_INSTALLED_MANY_REPLY:
		m->result.status = -ENOENT;
		m->result.value = 39;
		snprintf(m->result.error, sizeof(m->result.error), "no probe %d", 12);
		break;
	case DP_APP_NOTE_REMOVED_MANY:
		m->removed_many.nsites = 33;
		m->removed_many.sites = calloc(33, sizeof(uint64_t));
		for (uint32_t i = 0; i < 33; i++)
			m->removed_many.sites[i] = 0x401000 + i * 0x11;
		break;
	case DP_APP_NOTE_REMOVED_MANY_REPLY:
		m->result.status = -ENOENT;
		snprintf(m->result.error, sizeof(m->result.error), "2 of the 33 sites");
		break;
	case DP_APP_NOTE_WRITES:
		sample_leds(&m->leds, 13);
		break;
	case DP_APP_NOTE_WRITES_REPLY:
		m->result.status = -ENOSPC;
		m->result.value = 12;
		snprintf(m->result.error, sizeof(m->result.error), "no room");
		break;
	case DP_APP_LIST_WRITES:
		break;
	case DP_APP_LIST_WRITES_REPLY:
		sample_leds(&m->leds, 5);
		break;
	}
}

/* Field-by-field equality. */

static bool eq_probe(const struct dp_app_probe *a, const struct dp_app_probe *b)
{
	return a->id == b->id && a->site == b->site && a->flags == b->flags &&
	       !strcmp(a->event, b->event) && a->hits == b->hits &&
	       a->recursions == b->recursions && a->recorded == b->recorded &&
	       a->mem_errors == b->mem_errors;
}

static bool eq_patch(const struct dp_app_patch *a, const struct dp_app_patch *b)
{
	return a->site == b->site && a->method == b->method && a->len == b->len &&
	       !memcmp(a->orig, b->orig, a->len) && a->hop == b->hop &&
	       a->hop_len == b->hop_len && !memcmp(a->hop_orig, b->hop_orig, a->hop_len) &&
	       a->tramp == b->tramp &&
	       a->tramp_len == b->tramp_len && a->resume == b->resume &&
	       a->nprobes == b->nprobes &&
	       !memcmp(a->probes, b->probes, a->nprobes * sizeof(a->probes[0]));
}

static bool eq_state(const struct dp_app_state *a, const struct dp_app_state *b)
{
	if (a->nprobes != b->nprobes || a->npatches != b->npatches ||
	    a->traps_ours != b->traps_ours || a->traps_chained != b->traps_chained ||
	    a->traps_reasserted != b->traps_reasserted)
		return false;
	for (uint32_t i = 0; i < a->nprobes; i++)
		if (!eq_probe(&a->probes[i], &b->probes[i]))
			return false;
	for (uint32_t i = 0; i < a->npatches; i++)
		if (!eq_patch(&a->patches[i], &b->patches[i]))
			return false;
	return true;
}

static bool eq_value(const struct dp_value *a, const struct dp_value *b)
{
	if (a->loc != b->loc || a->flags != b->flags || a->nops != b->nops)
		return false;
	for (uint32_t k = 0; k < a->nops; k++)
		if (a->ops[k].op != b->ops[k].op || a->ops[k].arg != b->ops[k].arg ||
		    a->ops[k].imm != b->ops[k].imm)
			return false;
	return true;
}

static bool eq_ctx(const struct dp_ctx *a, const struct dp_ctx *b)
{
	return a->kind == b->kind && !strcmp(a->name, b->name) && a->reg == b->reg &&
	       a->width == b->width && a->shift == b->shift &&
	       !strcmp(a->type.name, b->type.name) &&
	       a->type.type == b->type.type && a->type.size == b->type.size &&
	       a->type.is_signed == b->type.is_signed && a->type.hex == b->type.hex &&
	       a->addr.base == b->addr.base && a->addr.deref == b->addr.deref &&
	       a->addr.offset == b->addr.offset && a->addr.offset2 == b->addr.offset2 &&
	       a->maxlen == b->maxlen &&
	       a->depth == b->depth && a->walker == b->walker && eq_value(&a->value, &b->value);
}

static bool eq_result(const struct dp_app_result *a, const struct dp_app_result *b, bool value)
{
	return a->status == b->status && (!value || a->value == b->value) &&
	       !strcmp(a->error, b->error);
}

static bool eq_define_probes(const struct dp_app_define_probes *a,
			     const struct dp_app_define_probes *b)
{
	if (a->nclasses != b->nclasses || a->nprobes != b->nprobes)
		return false;
	for (uint32_t c = 0; c < a->nclasses; c++) {
		const struct dp_app_probe_class *x = &a->classes[c], *y = &b->classes[c];

		if (x->flags != y->flags || strcmp(x->event, y->event) || x->nctx != y->nctx)
			return false;
		for (uint32_t i = 0; i < x->nctx; i++)
			if (!eq_ctx(&x->ctx[i], &y->ctx[i]))
				return false;
	}
	for (uint32_t i = 0; i < a->nprobes; i++)
		if (a->probes[i].id != b->probes[i].id || a->probes[i].site != b->probes[i].site ||
		    a->probes[i].cls != b->probes[i].cls)
			return false;
	return true;
}

static bool eq_msg(const struct dp_app_msg *a, const struct dp_app_msg *b)
{
	if (a->type != b->type || a->seq != b->seq)
		return false;
	switch (a->type) {
	case DP_APP_HELLO:
		return a->hello.major == b->hello.major && a->hello.minor == b->hello.minor &&
		       a->hello.pid == b->hello.pid && a->hello.probe_hit == b->hello.probe_hit &&
		       !strcmp(a->hello.agent_version, b->hello.agent_version) &&
		       eq_state(&a->hello.state, &b->hello.state);
	case DP_APP_HELLO_REPLY:
		return a->hello_reply.major == b->hello_reply.major &&
		       a->hello_reply.minor == b->hello_reply.minor &&
		       a->hello_reply.daemon_pid == b->hello_reply.daemon_pid;
	case DP_APP_DEFINE_PROBE:
	case DP_APP_DEFINE_PROBE_EXT:
		if (a->define_probe.id != b->define_probe.id ||
		    a->define_probe.site != b->define_probe.site ||
		    a->define_probe.flags != b->define_probe.flags ||
		    strcmp(a->define_probe.event, b->define_probe.event) ||
		    a->define_probe.nctx != b->define_probe.nctx)
			return false;
		for (uint32_t i = 0; i < a->define_probe.nctx; i++)
			if (!eq_ctx(&a->define_probe.ctx[i], &b->define_probe.ctx[i]))
				return false;
		return true;
	case DP_APP_DEFINE_PROBE_REPLY:
	case DP_APP_DEFINE_PROBE_EXT_REPLY:
	case DP_APP_ALLOC_CODE_REPLY:
		return eq_result(&a->result, &b->result, true);
	case DP_APP_NOTE_INSTALLED_REPLY:
	case DP_APP_NOTE_REMOVED_REPLY:
		return eq_result(&a->result, &b->result, false);
	case DP_APP_ALLOC_CODE:
		return a->alloc_code.near == b->alloc_code.near &&
		       a->alloc_code.size == b->alloc_code.size;
	case DP_APP_NOTE_INSTALLED:
		return eq_patch(&a->note_installed, &b->note_installed);
	case DP_APP_NOTE_REMOVED:
		return a->note_removed == b->note_removed;
	case DP_APP_LIST:
	case DP_APP_GO:
	case DP_APP_GO_REPLY:
		return true;
	case DP_APP_LIST_REPLY:
		return eq_state(&a->list_reply, &b->list_reply);
	case DP_APP_PING:
	case DP_APP_PING_REPLY:
		return a->ping == b->ping;
	case DP_APP_MAPPED:
	case DP_APP_MAPPED_REPLY:
		return a->mapped == b->mapped;
	case DP_APP_UNSUPPORTED:
		return a->unsupported == b->unsupported;
	case DP_APP_DEFINE_PROBES:
		return eq_define_probes(&a->define_probes, &b->define_probes);
	case DP_APP_DEFINE_PROBES_REPLY:
		return a->define_probes_reply.status == b->define_probes_reply.status &&
		       !strcmp(a->define_probes_reply.error, b->define_probes_reply.error) &&
		       a->define_probes_reply.nhandles == b->define_probes_reply.nhandles &&
		       !memcmp(a->define_probes_reply.handles, b->define_probes_reply.handles,
			       a->define_probes_reply.nhandles * sizeof(uint64_t));
	case DP_APP_NOTE_INSTALLED_MANY:
		if (a->note_many.npatches != b->note_many.npatches)
			return false;
		for (uint32_t i = 0; i < a->note_many.npatches; i++)
			if (!eq_patch(&a->note_many.patches[i], &b->note_many.patches[i]))
				return false;
		return true;
	case DP_APP_NOTE_INSTALLED_MANY_REPLY:
		return eq_result(&a->result, &b->result, true);
	case DP_APP_NOTE_REMOVED_MANY:
		return a->removed_many.nsites == b->removed_many.nsites &&
		       !memcmp(a->removed_many.sites, b->removed_many.sites,
			       a->removed_many.nsites * sizeof(uint64_t));
	case DP_APP_NOTE_REMOVED_MANY_REPLY:
		return eq_result(&a->result, &b->result, false);
	case DP_APP_NOTE_WRITES:
	case DP_APP_LIST_WRITES_REPLY:
		return eq_leds(&a->leds, &b->leds);
	case DP_APP_NOTE_WRITES_REPLY:
		return eq_result(&a->result, &b->result, true);
	case DP_APP_LIST_WRITES:
		return true;
	case DP_APP_REFUSE:
		return a->refuse.major == b->refuse.major && a->refuse.minor == b->refuse.minor &&
		       !strcmp(a->refuse.reason, b->refuse.reason);
	}
	return false;
}

static bool eq_leds(const struct dp_app_leds *a, const struct dp_app_leds *b)
{
	if (a->nleds != b->nleds)
		return false;
	for (uint32_t i = 0; i < a->nleds; i++) {
		const struct dp_app_led *x = &a->leds[i], *y = &b->leds[i];

		if (!eq_patch(&x->patch, &y->patch) || x->nwrites != y->nwrites)
			return false;
		for (uint32_t k = 0; k < x->nwrites; k++)
			if (x->writes[k].addr != y->writes[k].addr ||
			    x->writes[k].kind != y->writes[k].kind ||
			    x->writes[k].len != y->writes[k].len ||
			    memcmp(x->writes[k].orig, y->writes[k].orig, x->writes[k].len))
				return false;
	}
	return true;
}

/* Encodes a sample of `type` into a malloc'd frame. */
static uint8_t *sample_frame(uint16_t type, size_t *len)
{
	struct dp_app_msg m;
	struct dp_wbuf w;
	uint8_t *out = NULL;

	sample_msg(&m, type);
	if (!dp_app_encode(&m, &w)) {
		out = w.data;
		*len = w.len;
		w.data = NULL;
	}
	dp_wbuf_release(&w);
	dp_app_msg_release(&m);
	return out;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Decodes a frame and returns the typed error (NONE on success). */
static enum dp_proto_err decode_err(const uint8_t *buf, size_t len, struct dp_app_msg *m)
{
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	int ret = dp_app_decode_frame(buf, len, m, &why);

	if (ret == 0)
		return DP_PROTO_ERR_NONE;
	return ret == -EPROTO ? why : DP_PROTO_ERR__COUNT;
}

static void test_round_trips(void)
{
	for (size_t t = 0; t < NTYPES; t++) {
		struct dp_app_msg m, d;
		struct dp_wbuf w;
		enum dp_proto_err why = DP_PROTO_ERR_NONE;
		int ret;

		sample_msg(&m, all_types[t]);
		ret = dp_app_encode(&m, &w);
		if (!ret)
			ret = dp_app_decode_frame(w.data, w.len, &d, &why);
		tap_ok(!ret && eq_msg(&m, &d) && d.major == DP_APP_MAJOR &&
		       d.minor == DP_APP_MINOR,
		       "%s round-trips field by field (%zu bytes)", dp_app_type_name(all_types[t]),
		       w.len);
		if (!ret)
			dp_app_msg_release(&d);
		dp_app_msg_release(&m);
		dp_wbuf_release(&w);
	}
}

/* The largest HELLO the bounds allow fits the payload maximum. */
static void test_largest_state(void)
{
	struct dp_app_msg m, d;
	struct dp_wbuf w;
	enum dp_proto_err why;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = DP_APP_HELLO;
	m.hello.pid = 1;
	sample_state(&m.hello.state, DP_APP_MAX_PROBES, DP_APP_MAX_PATCHES);
	for (uint32_t i = 0; i < DP_APP_MAX_PROBES; i++)
		fill_str(m.hello.state.probes[i].event, DP_NAME_MAX, 'p');
	for (uint32_t i = 0; i < DP_APP_MAX_PATCHES; i++) {
		struct dp_app_patch *p = &m.hello.state.patches[i];

		p->len = DP_APP_MAX_ORIG;
		p->hop = 0;
		p->hop_len = 0;
		p->nprobes = DP_APP_MAX_PATCH_PROBES;
		for (uint32_t k = 0; k < p->nprobes; k++)
			p->probes[k] = 1 + k;
	}
	ret = dp_app_encode(&m, &w);
	tap_ok(!ret && w.len <= DP_FRAME_HDR_LEN + DP_APP_MAX_PAYLOAD,
	       "the largest HELLO (%u probes, %u patches, every bound reached) fits in %u bytes: %zu",
	       DP_APP_MAX_PROBES, DP_APP_MAX_PATCHES, DP_APP_MAX_PAYLOAD, w.len);
	ret = ret ? ret : dp_app_decode_frame(w.data, w.len, &d, &why);
	tap_ok(!ret && eq_msg(&m, &d), "and it decodes back");
	if (!ret)
		dp_app_msg_release(&d);

	/* One probe more is refused by the sender. */
	dp_wbuf_release(&w);
	m.hello.state.nprobes++;
	free(m.hello.state.probes);
	m.hello.state.probes = calloc(m.hello.state.nprobes, sizeof(struct dp_app_probe));
	for (uint32_t i = 0; i < m.hello.state.nprobes; i++)
		sample_probe(&m.hello.state.probes[i], i);
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a state of %u probes is refused by the encoder: %d",
	       m.hello.state.nprobes, ret);
	dp_wbuf_release(&w);
	dp_app_msg_release(&m);
}

/* Every prefix of every frame is refused as truncated, and so is every
 * payload cut short with a header that agrees with the cut. */
static void test_truncations(void)
{
	for (size_t t = 0; t < NTYPES; t++) {
		size_t len = 0, bad_frame = 0, bad_payload = 0, tried = 0;
		uint8_t *frame = sample_frame(all_types[t], &len);
		struct dp_app_msg m;

		if (!frame) {
			tap_ok(false, "%s encodes", dp_app_type_name(all_types[t]));
			continue;
		}
		for (size_t cut = 0; cut < len; cut++) {
			enum dp_proto_err e = decode_err(frame, cut, &m);

			if (e != DP_PROTO_ERR_TRUNCATED)
				bad_frame++;
			dp_app_msg_release(&m);
		}
		for (size_t cut = DP_FRAME_HDR_LEN; cut < len; cut++) {
			uint8_t *copy = malloc(cut);
			enum dp_proto_err e;

			memcpy(copy, frame, cut);
			put_u32(copy + 8, (uint32_t)(cut - DP_FRAME_HDR_LEN));
			e = decode_err(copy, cut, &m);
			if (e != DP_PROTO_ERR_TRUNCATED)
				bad_payload++;
			tried++;
			dp_app_msg_release(&m);
			free(copy);
		}
		tap_ok(!bad_frame && !bad_payload,
		       "%s: all %zu cut frames and %zu short payloads are refused as truncated",
		       dp_app_type_name(all_types[t]), len, tried);
		free(frame);
	}
}

/* A frame with bytes changed by `edit`, decoded: the typed error. */
static enum dp_proto_err mutated(uint16_t type, void (*edit)(uint8_t *buf, size_t len),
				 struct dp_app_msg *m)
{
	size_t len = 0;
	uint8_t *frame = sample_frame(type, &len);
	enum dp_proto_err e;

	edit(frame, len);
	e = decode_err(frame, len, m);
	free(frame);
	return e;
}

static void edit_magic(uint8_t *b, size_t len)
{
	b[0] ^= 0x20;
}

static void edit_major(uint8_t *b, size_t len)
{
	b[4] = DP_APP_MAJOR + 1;
}

static void edit_minor(uint8_t *b, size_t len)
{
	b[5] = DP_APP_MINOR + 7;
}

static void edit_type(uint8_t *b, size_t len)
{
	b[6] = 0x42;
	b[7] = 0x00;
}

static void edit_too_big(uint8_t *b, size_t len)
{
	put_u32(b + 8, DP_APP_MAX_PAYLOAD + 1);
}

static void test_headers(void)
{
	struct dp_app_msg m;
	enum dp_proto_err e;
	uint8_t *frame, *big;
	size_t len = 0;

	e = mutated(DP_APP_PING, edit_magic, &m);
	tap_ok(e == DP_PROTO_ERR_MAGIC && dp_proto_err_fatal(e), "a bad magic is refused: %s",
	       dp_proto_err_str(e));
	dp_app_msg_release(&m);

	e = mutated(DP_APP_HELLO, edit_major, &m);
	tap_ok(e == DP_PROTO_ERR_VERSION && dp_proto_err_fatal(e) && m.major == DP_APP_MAJOR + 1 &&
	       m.type == DP_APP_HELLO,
	       "another major version is refused, and says which: %s (%u)", dp_proto_err_str(e),
	       m.major);
	dp_app_msg_release(&m);

	e = mutated(DP_APP_REFUSE, edit_major, &m);
	tap_ok(e == DP_PROTO_ERR_NONE && m.type == DP_APP_REFUSE && m.major == DP_APP_MAJOR + 1 &&
	       !strcmp(m.refuse.reason, "protocol 9.0 is not 1.0"),
	       "a REFUSE of another major version still decodes");
	dp_app_msg_release(&m);

	e = mutated(DP_APP_DEFINE_PROBE, edit_minor, &m);
	tap_ok(e == DP_PROTO_ERR_NONE && m.minor == DP_APP_MINOR + 7,
	       "another minor version is accepted");
	dp_app_msg_release(&m);

	e = mutated(DP_APP_PING, edit_type, &m);
	tap_ok(e == DP_PROTO_ERR_TYPE && !dp_proto_err_fatal(e) && m.type == 0x42 &&
	       m.seq == 0xfedc0000u + DP_APP_PING,
	       "an unknown type is refused without closing, with its type and seq kept");
	dp_app_msg_release(&m);

	e = mutated(DP_APP_PING, edit_too_big, &m);
	tap_ok(e == DP_PROTO_ERR_TOO_BIG && dp_proto_err_fatal(e),
	       "a length above %u bytes is refused: %s", DP_APP_MAX_PAYLOAD, dp_proto_err_str(e));
	dp_app_msg_release(&m);

	/* Trailing bytes: a byte more in the payload, and the header agreeing. */
	frame = sample_frame(DP_APP_NOTE_REMOVED, &len);
	big = calloc(1, len + 1);
	memcpy(big, frame, len);
	put_u32(big + 8, (uint32_t)(len + 1 - DP_FRAME_HDR_LEN));
	e = decode_err(big, len + 1, &m);
	tap_ok(e == DP_PROTO_ERR_TRAILING, "a byte after the last field is refused: %s",
	       dp_proto_err_str(e));
	dp_app_msg_release(&m);
	/* More bytes than the header announces. */
	memcpy(big, frame, len);
	e = decode_err(big, len + 1, &m);
	tap_ok(e == DP_PROTO_ERR_TRAILING, "a frame longer than its header says is refused");
	dp_app_msg_release(&m);
	free(big);
	free(frame);
}

/* The original bytes of the sample NOTE_INSTALLED. */
static size_t sample_note_len(void)
{
	struct dp_app_msg m;

	sample_msg(&m, DP_APP_NOTE_INSTALLED);
	return m.note_installed.len;
}

/* Field bounds and values: a message is built, one field set out of
 * bounds by hand in the encoded bytes, and decoded. */
static enum dp_proto_err patch_at(uint16_t type, size_t off, const void *bytes, size_t n,
				  struct dp_app_msg *m)
{
	size_t len = 0;
	uint8_t *frame = sample_frame(type, &len);
	enum dp_proto_err e;

	memcpy(frame + DP_FRAME_HDR_LEN + off, bytes, n);
	e = decode_err(frame, len, m);
	free(frame);
	dp_app_msg_release(m);
	return e;
}

static void test_bounds(void)
{
	struct dp_app_msg m;
	uint8_t u32_big[4], b;
	enum dp_proto_err e;
	uint16_t n;

	/* HELLO: major, minor, pid(4), probe_hit(8), version str at 14. */
	n = DP_APP_VERSION_MAX;
	e = patch_at(DP_APP_HELLO, 14, &n, 2, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "a string as long as its array is refused: %s",
	       dp_proto_err_str(e));
	/* The probe count after the version (2 + 31 bytes). */
	put_u32(u32_big, DP_APP_MAX_PROBES + 1);
	e = patch_at(DP_APP_HELLO, 14 + 2 + DP_APP_VERSION_MAX - 1, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "%u probes are refused: %s", DP_APP_MAX_PROBES + 1,
	       dp_proto_err_str(e));
	put_u32(u32_big, 1000);
	e = patch_at(DP_APP_HELLO, 14 + 2 + DP_APP_VERSION_MAX - 1, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_TRUNCATED,
	       "a count the bytes left cannot hold is refused before allocating: %s",
	       dp_proto_err_str(e));
	put_u32(u32_big, 0);
	e = patch_at(DP_APP_HELLO, 2, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a HELLO of pid 0 is refused: %s", dp_proto_err_str(e));

	/* DEFINE_PROBE: id(4) site(8) flags(4) event str(2 + 127) nctx(4) at 145. */
	put_u32(u32_big, 0);
	e = patch_at(DP_APP_DEFINE_PROBE, 0, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "probe id 0 is refused: %s", dp_proto_err_str(e));
	put_u32(u32_big, DP_APP_MAX_CTX + 1);
	e = patch_at(DP_APP_DEFINE_PROBE, 145, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "%u contexts are refused: %s", DP_APP_MAX_CTX + 1,
	       dp_proto_err_str(e));
	b = 0;
	e = patch_at(DP_APP_DEFINE_PROBE, 18 + 5, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_STRING, "a NUL inside the event name is refused: %s",
	       dp_proto_err_str(e));
	put_u32(u32_big, 2);
	e = patch_at(DP_APP_DEFINE_PROBE, 12, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "an unknown probe flag is refused: %s",
	       dp_proto_err_str(e));
	/* The first context at 149: kind. */
	b = DP_CTX_RETVAL + 1;
	e = patch_at(DP_APP_DEFINE_PROBE, 149, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "an unknown context kind is refused: %s",
	       dp_proto_err_str(e));
	b = DP_CTX_VALUE;
	e = patch_at(DP_APP_DEFINE_PROBE, 149, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a value context is refused in DEFINE_PROBE: %s",
	       dp_proto_err_str(e));
	b = DP_CTX_KIND_LAST + 1;
	e = patch_at(DP_APP_DEFINE_PROBE_EXT, 149, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "an unknown context kind is refused in "
	       "DEFINE_PROBE_EXT: %s", dp_proto_err_str(e));
	/* The first context's recipe: after walker at 149 + 44, loc(1) flags(1)
	 * nops(4), the first op at 149 + 51. */
	b = 0;
	e = patch_at(DP_APP_DEFINE_PROBE_EXT, 149 + 51, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a recipe op 0 is refused: %s", dp_proto_err_str(e));
	b = DP_VALUE_LOC_PIECES + 1;
	e = patch_at(DP_APP_DEFINE_PROBE_EXT, 149 + 45, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "an unknown recipe result is refused: %s",
	       dp_proto_err_str(e));
	put_u32(u32_big, DP_VALUE_MAX_OPS + 1);
	e = patch_at(DP_APP_DEFINE_PROBE_EXT, 149 + 47, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS || e == DP_PROTO_ERR_TRUNCATED,
	       "a recipe of %u ops is refused: %s", DP_VALUE_MAX_OPS + 1, dp_proto_err_str(e));

	/* kind(1) name("field0": 2 + 6) reg(1) width(1) shift(1) tname("t0": 2 + 2)
	 * type(1) size(1), is_signed at 149 + 18. */
	b = 2;
	e = patch_at(DP_APP_DEFINE_PROBE, 149 + 18, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a boolean of 2 is refused: %s", dp_proto_err_str(e));

	/* ... hex(1) base(1) deref(1) offset(8) offset2(8), maxlen at 149 + 38. */
	put_u32(u32_big, DP_CTX_STRING_MAX + 1);
	e = patch_at(DP_APP_DEFINE_PROBE, 149 + 38, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "a string context of %u bytes is refused: %s",
	       DP_CTX_STRING_MAX + 1, dp_proto_err_str(e));

	/* NOTE_INSTALLED: site(8) method(1) len(1). */
	b = 3;
	e = patch_at(DP_APP_NOTE_INSTALLED, 8, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "an unknown patch method is refused: %s",
	       dp_proto_err_str(e));
	b = DP_APP_MAX_ORIG + 1;
	e = patch_at(DP_APP_NOTE_INSTALLED, 9, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS || e == DP_PROTO_ERR_TRUNCATED,
	       "%u original bytes are refused: %s", DP_APP_MAX_ORIG + 1, dp_proto_err_str(e));
	b = 0;
	e = patch_at(DP_APP_NOTE_INSTALLED, 9, &b, 1, &m);
	tap_ok(e != DP_PROTO_ERR_NONE, "a patch of 0 bytes is refused: %s", dp_proto_err_str(e));
	/* ... orig(len), then hop(8) and hop_len(1). */
	b = DP_APP_HOP_LEN + 1;
	e = patch_at(DP_APP_NOTE_INSTALLED, 10 + sample_note_len() + 8, &b, 1, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "a hop of %u bytes is refused: %s", DP_APP_HOP_LEN + 1,
	       dp_proto_err_str(e));
	put_u32(u32_big, 0x1000);
	e = patch_at(DP_APP_NOTE_INSTALLED, 10 + sample_note_len(), u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a hop on an int3 patch is refused: %s",
	       dp_proto_err_str(e));

	/* ALLOC_CODE: near(8) size(4). */
	put_u32(u32_big, DP_APP_MAX_CODE + 1);
	e = patch_at(DP_APP_ALLOC_CODE, 8, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "ALLOC_CODE of %u bytes is refused: %s",
	       DP_APP_MAX_CODE + 1, dp_proto_err_str(e));
	put_u32(u32_big, 0);
	e = patch_at(DP_APP_ALLOC_CODE, 8, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "ALLOC_CODE of 0 bytes is refused");

	/* A reply's status is 0 or -errno. */
	put_u32(u32_big, 5);
	e = patch_at(DP_APP_NOTE_REMOVED_REPLY, 0, u32_big, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "a positive status is refused: %s", dp_proto_err_str(e));
}

/* The payload length of a sample frame. */
static size_t sample_payload_len(uint16_t type)
{
	size_t len = 0;
	uint8_t *frame = sample_frame(type, &len);

	free(frame);
	return len - DP_FRAME_HDR_LEN;
}

/* Whether a message is sent (0) or refused (-EINVAL), released after. */
static int encode_release(struct dp_app_msg *m)
{
	struct dp_wbuf w;
	int ret = dp_app_encode(m, &w);

	dp_wbuf_release(&w);
	dp_app_msg_release(m);
	return ret;
}

/* The batches (minor 3): their counts, class indexes and patches are
 * checked as their single messages' are. */
static void test_batches(void)
{
	struct dp_app_msg m;
	uint8_t u32[4];
	enum dp_proto_err e;
	size_t end;

	/* DEFINE_PROBES ends with the last probe: id(4) site(8) class(4). */
	end = sample_payload_len(DP_APP_DEFINE_PROBES);
	put_u32(u32, 3);
	e = patch_at(DP_APP_DEFINE_PROBES, end - 4, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "DEFINE_PROBES: a probe of class 3 of 3 is refused: %s",
	       dp_proto_err_str(e));
	put_u32(u32, 0);
	e = patch_at(DP_APP_DEFINE_PROBES, end - 16, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "DEFINE_PROBES: probe id 0 is refused: %s",
	       dp_proto_err_str(e));
	put_u32(u32, DP_APP_MAX_BATCH + 1);
	e = patch_at(DP_APP_DEFINE_PROBES, 0, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "DEFINE_PROBES: %u classes are refused: %s",
	       DP_APP_MAX_BATCH + 1, dp_proto_err_str(e));
	{
		uint32_t nc;
		struct dp_wbuf w;

		sample_msg(&m, DP_APP_DEFINE_PROBES);
		nc = m.define_probes.nclasses;
		m.define_probes.nclasses = 0;
		tap_ok(dp_app_encode(&m, &w) == -EINVAL, "DEFINE_PROBES: no class is refused");
		dp_wbuf_release(&w);
		m.define_probes.nclasses = nc;
		dp_app_msg_release(&m);
	}
	/* The first class: flags(4) at 4, a flag no probe has. */
	put_u32(u32, 2);
	e = patch_at(DP_APP_DEFINE_PROBES, 4, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "DEFINE_PROBES: an unknown probe flag is refused: %s",
	       dp_proto_err_str(e));
	sample_msg(&m, DP_APP_DEFINE_PROBES);
	m.define_probes.probes[5].cls = 7;
	tap_ok(encode_release(&m) == -EINVAL, "DEFINE_PROBES: the sender refuses a class "
	       "out of range too");
	sample_msg(&m, DP_APP_DEFINE_PROBES);
	m.define_probes.classes[2].ctx[0].kind = DP_CTX_KIND_LAST + 1;
	tap_ok(encode_release(&m) == -EINVAL, "DEFINE_PROBES: the sender refuses an unknown "
	       "context kind in a class");

	/* The reply: status first, then the handles. */
	put_u32(u32, 5);
	e = patch_at(DP_APP_DEFINE_PROBES_REPLY, 0, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_VALUE, "DEFINE_PROBES_REPLY: a positive status is refused: %s",
	       dp_proto_err_str(e));
	end = sample_payload_len(DP_APP_DEFINE_PROBES_REPLY);
	put_u32(u32, DP_APP_MAX_BATCH + 1);
	e = patch_at(DP_APP_DEFINE_PROBES_REPLY, end - 77 * 8 - 4, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "DEFINE_PROBES_REPLY: %u handles are refused: %s",
	       DP_APP_MAX_BATCH + 1, dp_proto_err_str(e));

	/* NOTE_INSTALLED_MANY: npatches(4), then each patch as NOTE_INSTALLED's:
	 * site(8) method(1). */
	{
		uint8_t b = 3;

		e = patch_at(DP_APP_NOTE_INSTALLED_MANY, 4 + 8, &b, 1, &m);
		tap_ok(e == DP_PROTO_ERR_VALUE, "NOTE_INSTALLED_MANY: an unknown patch method is "
		       "refused: %s", dp_proto_err_str(e));
	}
	sample_msg(&m, DP_APP_NOTE_INSTALLED_MANY);
	m.note_many.npatches = 0;
	tap_ok(encode_release(&m) == -EINVAL, "NOTE_INSTALLED_MANY: no patch is refused");
	put_u32(u32, DP_APP_MAX_BATCH + 1);
	e = patch_at(DP_APP_NOTE_INSTALLED_MANY, 0, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_BOUNDS, "NOTE_INSTALLED_MANY: %u patches are refused: %s",
	       DP_APP_MAX_BATCH + 1, dp_proto_err_str(e));
	sample_msg(&m, DP_APP_NOTE_INSTALLED_MANY);
	m.note_many.patches[39].nprobes = 0;
	tap_ok(encode_release(&m) == -EINVAL, "NOTE_INSTALLED_MANY: the sender refuses a "
	       "patch with no probe, even the last");

	/* NOTE_REMOVED_MANY: nsites(4), sites. */
	sample_msg(&m, DP_APP_NOTE_REMOVED_MANY);
	m.removed_many.nsites = 0;
	tap_ok(encode_release(&m) == -EINVAL, "NOTE_REMOVED_MANY: no site is refused");
	/* ... and a receiver refuses it as well: a frame of just the count. */
	{
		uint8_t frame[DP_FRAME_HDR_LEN + 4] = { 0 };
		struct dp_frame_hdr h = {
			.magic = DP_APP_MAGIC, .major = DP_APP_MAJOR, .minor = DP_APP_MINOR,
			.type = DP_APP_NOTE_REMOVED_MANY, .len = 4, .seq = 1,
		};

		dp_frame_hdr_encode(&h, frame);
		e = decode_err(frame, sizeof(frame), &m);
		tap_ok(e == DP_PROTO_ERR_BOUNDS, "NOTE_REMOVED_MANY of 0 sites is refused by a "
		       "receiver: %s", dp_proto_err_str(e));
		dp_app_msg_release(&m);
	}
	put_u32(u32, 34);
	e = patch_at(DP_APP_NOTE_REMOVED_MANY, 0, u32, 4, &m);
	tap_ok(e == DP_PROTO_ERR_TRUNCATED, "NOTE_REMOVED_MANY: 34 sites in the bytes of 33 "
	       "are refused: %s", dp_proto_err_str(e));

	/* The largest batches fit in a frame. */
	memset(&m, 0, sizeof(m));
	m.type = DP_APP_DEFINE_PROBES;
	sample_define_probes(&m.define_probes, 1, DP_APP_MAX_BATCH);
	{
		struct dp_wbuf w;
		int ret = dp_app_encode(&m, &w);

		tap_ok(!ret && w.len <= DP_FRAME_HDR_LEN + DP_APP_MAX_PAYLOAD,
		       "DEFINE_PROBES of %u probes fits in a frame: %zu bytes", DP_APP_MAX_BATCH,
		       w.len);
		dp_wbuf_release(&w);
	}
	dp_app_msg_release(&m);
	memset(&m, 0, sizeof(m));
	m.type = DP_APP_NOTE_INSTALLED_MANY;
	m.note_many.npatches = DP_APP_MAX_BATCH;
	m.note_many.patches = calloc(DP_APP_MAX_BATCH, sizeof(struct dp_app_patch));
	for (uint32_t i = 0; i < DP_APP_MAX_BATCH; i++) {
		sample_patch(&m.note_many.patches[i], i);
		m.note_many.patches[i].nprobes = DP_APP_MAX_PATCH_PROBES;
		for (uint32_t k = 0; k < DP_APP_MAX_PATCH_PROBES; k++)
			m.note_many.patches[i].probes[k] = 1 + k;
	}
	{
		struct dp_wbuf w;
		int ret = dp_app_encode(&m, &w);

		tap_ok(!ret && w.len <= DP_FRAME_HDR_LEN + DP_APP_MAX_PAYLOAD,
		       "NOTE_INSTALLED_MANY of %u patches of %u probes fits in a frame: %zu bytes",
		       DP_APP_MAX_BATCH, DP_APP_MAX_PATCH_PROBES, w.len);
		dp_wbuf_release(&w);
	}
	dp_app_msg_release(&m);
}

/* Whether the NOTE_INSTALLED in m is sent (0) or refused (-EINVAL). */
static int encode_patch(const struct dp_app_msg *m)
{
	struct dp_wbuf w;
	int ret = dp_app_encode(m, &w);

	dp_wbuf_release(&w);
	return ret;
}

/* Hops the receiver could not undo or that lead nowhere a rel8 reaches. */
static void test_hop_refusals(struct dp_app_msg *m)
{
	struct dp_app_patch *p = &m->note_installed;
	struct dp_app_patch good;

	p->method = DP_APP_METHOD_JUMP;
	p->len = 3;
	p->resume = 0;
	p->hop = p->site + 2 - 128;
	p->hop_len = DP_APP_HOP_LEN;
	good = *p;
	tap_ok(!encode_patch(m), "a 3-byte jump with a hop 128 bytes back is sent");
	{
		struct dp_app_msg d;
		enum dp_proto_err why;
		struct dp_wbuf w;
		int ret = dp_app_encode(m, &w);

		ret = ret ? ret : dp_app_decode_frame(w.data, w.len, &d, &why);
		tap_ok(!ret && eq_patch(&d.note_installed, p),
		       "and its hop's address, length and bytes come back");
		if (!ret)
			dp_app_msg_release(&d);
		dp_wbuf_release(&w);
	}
	p->hop = p->site + 2 - 129;
	tap_ok(encode_patch(m) == -EINVAL, "a hop out of a rel8's reach back is not sent");
	p->hop = p->site + 2 + 128;
	tap_ok(encode_patch(m) == -EINVAL, "a hop out of a rel8's reach on is not sent");
	p->hop = p->site + 1;
	tap_ok(encode_patch(m) == -EINVAL, "a hop over the window's bytes is not sent");
	*p = good;
	p->hop_len = DP_APP_HOP_LEN - 1;
	tap_ok(encode_patch(m) == -EINVAL, "a hop of %u bytes is not sent", DP_APP_HOP_LEN - 1);
	*p = good;
	p->len = 5;
	tap_ok(encode_patch(m) == -EINVAL, "a 5-byte jump with a hop is not sent");
	*p = good;
	p->len = 1;
	tap_ok(encode_patch(m) == -EINVAL, "a 1-byte jump with a hop is not sent");
	*p = good;
	p->method = DP_APP_METHOD_INT3;
	p->resume = 0x7f0010000000ull;
	tap_ok(encode_patch(m) == -EINVAL, "an int3 patch with a hop is not sent");
	*p = good;
	p->hop_len = 0;
	p->len = 5;
	tap_ok(encode_patch(m) == -EINVAL, "a hop address without its bytes is not sent");
	*p = good;
}

static void test_encoder_refuses(void)
{
	struct dp_app_msg m;
	struct dp_wbuf w;
	int ret;

	sample_msg(&m, DP_APP_DEFINE_PROBE);
	memset(m.define_probe.event, 'z', sizeof(m.define_probe.event));	/* no NUL */
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an unterminated event name is not sent: %d", ret);
	dp_wbuf_release(&w);
	m.define_probe.event[0] = '\0';
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an empty event name is not sent: %d", ret);
	dp_wbuf_release(&w);
	dp_app_msg_release(&m);

	sample_msg(&m, DP_APP_NOTE_INSTALLED);
	m.note_installed.method = DP_APP_METHOD_JUMP;
	m.note_installed.len = 4;
	m.note_installed.tramp = 0x7f0010000000ull;
	m.note_installed.tramp_len = 200;
	m.note_installed.resume = 0;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a 4-byte jump patch without a hop is not sent: %d", ret);
	dp_wbuf_release(&w);
	test_hop_refusals(&m);

	dp_app_msg_release(&m);
	sample_msg(&m, DP_APP_NOTE_WRITES);
	m.leds.leds[2].writes[0].kind = 9;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a led write of an unknown kind is not sent: %d", ret);
	dp_wbuf_release(&w);
	m.leds.leds[2].writes[0].kind = DP_APP_WRITE_HOP;
	m.leds.leds[2].writes[0].len = 4;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a hop of 4 bytes is not sent: %d", ret);
	dp_wbuf_release(&w);
	m.leds.leds[2].writes[0].kind = DP_APP_WRITE_BRANCH;
	m.leds.leds[1].patch.hop = m.leds.leds[1].patch.site + 20;
	m.leds.leds[1].patch.hop_len = DP_APP_HOP_LEN;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a redirect with a hop of its own is not sent: %d", ret);
	dp_wbuf_release(&w);
	m.leds.leds[1].patch.hop = 0;
	m.leds.leds[1].patch.hop_len = 0;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == 0, "fixed, it is: %d", ret);
	dp_wbuf_release(&w);
	dp_app_msg_release(&m);
	sample_msg(&m, DP_APP_NOTE_INSTALLED);
	m.note_installed.method = DP_APP_METHOD_REDIRECT;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "a redirect is never a NOTE_INSTALLED (only a led): %d", ret);
	dp_wbuf_release(&w);

	m.type = 0x0077;
	ret = dp_app_encode(&m, &w);
	tap_ok(ret == -EINVAL, "an unknown type is not sent: %d", ret);
	dp_wbuf_release(&w);
}

/* REFUSE and UNSUPPORTED, byte for byte: their layout is the same in every
 * protocol and version (frame.h). */
static void test_common_bytes(void)
{
	static const uint8_t refuse[] = {
		0x44, 0x50, 0x41, 0x50, DP_APP_MAJOR, DP_APP_MINOR, 0xff, 0xff,	/* "DPAP" */
		6, 0, 0, 0, 0x04, 0x03, 0x02, 0x01,				/* length, seq */
		2, 3, 2, 0, 'n', 'o',						/* 2.3, "no" */
	};
	static const uint8_t unsupported[] = {
		0x44, 0x50, 0x41, 0x50, DP_APP_MAJOR, DP_APP_MINOR, 0xfe, 0xff,
		2, 0, 0, 0, 0x04, 0x03, 0x02, 0x01,
		0x42, 0x00,
	};
	struct dp_app_msg m = { .type = DP_APP_REFUSE, .seq = 0x01020304 };
	struct dp_wbuf w;
	int ret;

	m.refuse.major = 2;
	m.refuse.minor = 3;
	strcpy(m.refuse.reason, "no");
	ret = dp_app_encode(&m, &w);
	tap_ok(!ret && w.len == sizeof(refuse) && !memcmp(w.data, refuse, sizeof(refuse)),
	       "a REFUSE is encoded byte for byte as specified");
	dp_wbuf_release(&w);
	m = (struct dp_app_msg){ .type = DP_APP_UNSUPPORTED, .seq = 0x01020304,
				 .unsupported = 0x0042 };
	ret = dp_app_encode(&m, &w);
	tap_ok(!ret && w.len == sizeof(unsupported) &&
	       !memcmp(w.data, unsupported, sizeof(unsupported)),
	       "an UNSUPPORTED is encoded byte for byte as specified");
	dp_wbuf_release(&w);
}

static void test_ctx_layout(void)
{
	/* The codec writes struct dp_ctx field by field: when the struct
	 * grows, the new field needs its place on the wire. */
	tap_ok(sizeof(struct dp_ctx) == 432 && sizeof(struct dp_field_desc) == 68 &&
	       sizeof(struct dp_value) == 264 && sizeof(struct dp_value_op) == 16,
	       "struct dp_ctx has the fields the codec encodes (sizeof %zu, dp_field_desc %zu, "
	       "dp_value %zu)", sizeof(struct dp_ctx), sizeof(struct dp_field_desc),
	       sizeof(struct dp_value));
}

/* Random input: pure noise, noise behind a valid header, and mutated
 * valid frames.  A decoder that accepts something must have produced a
 * message that encodes again. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the printed seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_fuzz(void)
{
	const char *env = getenv("DP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
	unsigned iters = 60000, accepted = 0, reencode_bad = 0;
	uint8_t buf[4096];

	if (!seed)
		seed = 1;
	rng_state = seed;
	tap_diag("fuzz seed: DP_TEST_SEED=%" PRIu64, seed);
	for (unsigned i = 0; i < iters; i++) {
		struct dp_app_msg m;
		size_t len;
		enum dp_proto_err e;

		if (i % 3 == 0) {
			len = rnd() % sizeof(buf);
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)rnd();
		} else {
			uint16_t type = all_types[rnd() % NTYPES];
			size_t flen = 0;
			uint8_t *frame = sample_frame(type, &flen);
			unsigned flips = 1 + rnd() % 4;

			len = flen < sizeof(buf) ? flen : sizeof(buf);
			memcpy(buf, frame, len);
			free(frame);
			if (i % 3 == 1) {
				/* A valid header, noise after it. */
				for (size_t k = DP_FRAME_HDR_LEN; k < len; k++)
					buf[k] = (uint8_t)rnd();
			} else {
				for (unsigned f = 0; f < flips && len; f++)
					buf[rnd() % len] = (uint8_t)rnd();
				if (rnd() % 4 == 0 && len)
					len = rnd() % len;
			}
			/* Keep the header's length honest half of the time, so
			 * that payload decoding is reached. */
			if (len >= DP_FRAME_HDR_LEN && rnd() % 2)
				put_u32(buf + 8, (uint32_t)(len - DP_FRAME_HDR_LEN));
		}
		e = decode_err(buf, len, &m);
		if (e == DP_PROTO_ERR_NONE) {
			struct dp_wbuf w;

			accepted++;
			if (dp_app_encode(&m, &w))
				reencode_bad++;
			dp_wbuf_release(&w);
		}
		dp_app_msg_release(&m);
	}
	tap_ok(reencode_bad == 0,
	       "%u random and mutated frames: no crash, %u accepted, all of them valid", iters,
	       accepted);
}

int main(void)
{
	test_ctx_layout();
	test_round_trips();
	test_common_bytes();
	test_largest_state();
	test_truncations();
	test_headers();
	test_bounds();
	test_batches();
	test_encoder_refuses();
	test_fuzz();
	return tap_done();
}
