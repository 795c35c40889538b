/*
 * The record path of events.c, white-box, against fake lttng-ust events:
 * the per-class callbacks (thunks) and what they let through, the exact
 * payload bytes and size handed to the ring buffer, the filter
 * interpreter's stack layout, notifications with captures, and event types
 * this code does not know.  No session daemon: events.c is included here,
 * and the events are built by hand with lttng-ust's public structures.
 */
#include "events.c"

#include "tap.h"

typedef void (*dp_cb_fn)(void *event, const struct dpa_class *caller, uint64_t ip,
			 const struct dpa_value *values);

/* What the fake ring buffer and fake filter saw. */
static struct {
	unsigned reserves, commits, notifications, filters;
	size_t data_size;
	void *ip;
	uint8_t bytes[1024];
	size_t n;
	char stack[2 * sizeof(unsigned long) * DPA_CLASS_MAX_FIELDS];
	int filter_result;
} seen;

static int fake_reserve(struct lttng_ust_ring_buffer_ctx *ctx)
{
	seen.reserves++;
	seen.data_size = ctx->data_size;
	seen.ip = ctx->probe_ctx->ip;
	seen.n = 0;
	return 0;
}

static void fake_write(struct lttng_ust_ring_buffer_ctx *ctx, const void *src, size_t len,
		       size_t alignment)
{
	if (seen.n + len <= sizeof(seen.bytes))
		memcpy(seen.bytes + seen.n, src, len);
	seen.n += len;
}

/* As lttng-ust's: at most len - 1 bytes, stopping at a NUL, padded, NUL. */
static void fake_strcpy(struct lttng_ust_ring_buffer_ctx *ctx, const char *src, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i]; i++)
		seen.bytes[seen.n + i] = (uint8_t)src[i];
	for (; i + 1 < len; i++)
		seen.bytes[seen.n + i] = '#';
	seen.bytes[seen.n + i] = 0;
	seen.n += len;
}

static void fake_commit(struct lttng_ust_ring_buffer_ctx *ctx)
{
	seen.commits++;
}

static int fake_filter(const struct lttng_ust_event_common *event, const char *stack_data,
		       struct lttng_ust_probe_ctx *probe_ctx, void *filter_ctx)
{
	seen.filters++;
	memcpy(seen.stack, stack_data, sizeof(seen.stack));
	return seen.filter_result;
}

static void fake_notify(const struct lttng_ust_event_notifier *notifier, const char *stack_data,
			struct lttng_ust_probe_ctx *probe_ctx,
			struct lttng_ust_notification_ctx *notif_ctx)
{
	seen.notifications++;
	seen.ip = probe_ctx->ip;
	if (notif_ctx->eval_capture)
		memcpy(seen.stack, stack_data, sizeof(seen.stack));
}

/* A recorder event in a session, and a notifier event. */
static struct lttng_ust_session session = { .struct_size = sizeof(session), .active = 1 };
static struct lttng_ust_channel_common chan_common = {
	.struct_size = sizeof(chan_common), .enabled = 1, .session = &session,
};
static struct lttng_ust_channel_buffer_ops ops = {
	.struct_size = sizeof(ops), .event_reserve = fake_reserve, .event_commit = fake_commit,
	.event_write = fake_write, .event_strcpy = fake_strcpy,
};
static struct lttng_ust_channel_buffer chan = {
	.struct_size = sizeof(chan), .parent = &chan_common, .ops = &ops,
};
static struct lttng_ust_event_common rec_common;
static struct lttng_ust_event_recorder recorder = {
	.struct_size = sizeof(recorder), .parent = &rec_common, .chan = &chan,
};
static struct lttng_ust_event_common rec_common = {
	.struct_size = sizeof(rec_common), .type = LTTNG_UST_EVENT_TYPE_RECORDER,
	.child = &recorder, .enabled = 1, .run_filter = fake_filter,
};
static struct lttng_ust_event_common notif_common;
static struct lttng_ust_event_notifier notifier = {
	.struct_size = sizeof(notifier), .parent = &notif_common,
	.notification_send = fake_notify,
};
static struct lttng_ust_event_common notif_common = {
	.struct_size = sizeof(notif_common), .type = LTTNG_UST_EVENT_TYPE_NOTIFIER,
	.child = &notifier, .enabled = 1, .run_filter = fake_filter,
};

static struct dp_field_desc fd(const char *name, enum dp_ftype type, unsigned size,
			       bool is_signed, bool hex)
{
	struct dp_field_desc f = { .type = (uint8_t)type, .size = (uint8_t)size,
				   .is_signed = is_signed, .hex = hex };

	snprintf(f.name, sizeof(f.name), "%s", name);
	return f;
}

static void fire(const struct dpa_class *self, void *event, const struct dpa_class *caller,
		 uint64_t ip, const struct dpa_value *v)
{
	((dp_cb_fn)(void *)self->cb)(event, caller, ip, v);
}

static int64_t stack_i64(size_t off)
{
	int64_t v;

	memcpy(&v, seen.stack + off, sizeof(v));
	return v;
}

int main(void)
{
	const struct dp_field_desc f[] = {
		fd("i8", DP_FT_INT, 1, true, false), fd("u16", DP_FT_INT, 2, false, false),
		fd("seq", DP_FT_SEQ_U64, 0, false, true), fd("s", DP_FT_STRING, 0, false, false),
		fd("i32", DP_FT_INT, 4, true, false), fd("d", DP_FT_DOUBLE, 0, false, false),
		fd("u64", DP_FT_INT, 8, false, true),
	};
	const struct dp_field_desc g[] = { fd("v", DP_FT_INT, 8, false, false) };
	const uint64_t seq[] = { 0x1122334455667788ull, 2 };
	const struct dpa_value v[] = {
		{ .u = (uint64_t)-2 }, { .u = 0x12345 }, { .seq = { seq, 2 } },
		{ .str = { "abc", 3 } }, { .u = (uint64_t)-70000 }, { .d = 1.5 },
		{ .u = 0x0102030405060708ull },
	};
	/* The payload, packed, little-endian, in field order. */
	const uint8_t expected[] = {
		0xfe,					/* i8 -2 */
		0x45, 0x23,				/* u16: the low bytes of 0x12345 */
		2, 0, 0, 0,				/* _seq_length */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 2, 0, 0, 0, 0, 0, 0, 0,
		'a', 'b', 'c', 0,			/* s */
		0x90, 0xee, 0xfe, 0xff,			/* i32 -70000 */
		0, 0, 0, 0, 0, 0, 0xf8, 0x3f,		/* d 1.5 */
		8, 7, 6, 5, 4, 3, 2, 1,			/* u64 */
	};
	struct dpa_class *a, *b, *many[300];
	struct dp_err err = DP_ERR_INIT;
	const char *sp;
	double d;
	bool ok;

	a = dpa_class_get("rec:a", f, sizeof(f) / sizeof(f[0]), &err);
	b = dpa_class_get("rec:a", g, 1, &err);
	if (!tap_ok(a && b, "classes made (%s)", a && b ? "ok" : err.msg))
		return tap_done();
	tap_ok(a->cb && b->cb && a->cb != b->cb, "each class has its own callback");
	tap_ok(a->tp_class.probe_callback == a->cb, "the callback is the one lttng-ust connects");
	tap_ok(a->tp_class.nr_fields == 8, "lttng-ust sees 8 fields: 7, and a sequence's length");
	tap_ok(!strcmp(a->ufields[2]->name, "_seq_length") && a->ufields[2]->nofilter &&
	       !strcmp(a->ufields[3]->name, "seq"), "the length field comes right before its sequence");

	/* The recorder path, through the thunk. */
	fire(a, &rec_common, a, 0x1234, v);
	tap_ok(seen.reserves == 1 && seen.commits == 1, "the callback records its own class's event");
	tap_ok(seen.ip == (void *)0x1234, "with the given ip");
	tap_ok(seen.data_size == sizeof(expected), "reserving the exact payload size (%zu)",
	       seen.data_size);
	tap_ok(seen.n == sizeof(expected) && !memcmp(seen.bytes, expected, sizeof(expected)),
	       "writing the exact payload bytes");
	fire(a, &rec_common, b, 0x1234, v);
	fire(b, &rec_common, a, 0x1234, v);
	tap_ok(seen.reserves == 1, "a callback ignores calls for another class of the same name");

	/* Nothing when the session, channel or event is off. */
	session.active = 0;
	fire(a, &rec_common, a, 1, v);
	session.active = 1;
	chan_common.enabled = 0;
	fire(a, &rec_common, a, 1, v);
	chan_common.enabled = 1;
	rec_common.enabled = 0;
	fire(a, &rec_common, a, 1, v);
	rec_common.enabled = 1;
	tap_ok(seen.reserves == 1, "nothing is recorded while the session, channel or event is off");

	/* An event type newer than this code. */
	rec_common.type = (enum lttng_ust_event_type)7;
	fire(a, &rec_common, a, 1, v);
	rec_common.type = LTTNG_UST_EVENT_TYPE_RECORDER;
	tap_ok(seen.reserves == 1 && seen.filters == 0, "an unknown event type is ignored");

	/* The filter's stack: int64 per integer, the sequence's length and
	 * pointer (not its length field), a string pointer, a double. */
	rec_common.eval_filter = 1;
	seen.filter_result = LTTNG_UST_EVENT_FILTER_REJECT;
	fire(a, &rec_common, a, 1, v);
	tap_ok(seen.filters == 1 && seen.reserves == 1, "a rejecting filter records nothing");
	memcpy(&sp, seen.stack + 32, sizeof(sp));
	memcpy(&d, seen.stack + 48, sizeof(d));
	ok = stack_i64(0) == -2 && stack_i64(8) == 0x2345 && stack_i64(16) == 2 &&
	     stack_i64(24) == (int64_t)(uintptr_t)seq && sp == v[3].str.ptr &&
	     stack_i64(40) == -70000 && d == 1.5 && stack_i64(56) == 0x0102030405060708ll;
	tap_ok(ok, "the filter stack holds the values, sign- or zero-extended from their size");
	seen.filter_result = LTTNG_UST_EVENT_FILTER_ACCEPT;
	fire(a, &rec_common, a, 1, v);
	tap_ok(seen.filters == 2 && seen.reserves == 2, "an accepting filter records");
	rec_common.eval_filter = 0;

	/* Notifications, with and without captures. */
	fire(a, &notif_common, a, 0x5678, v);
	tap_ok(seen.notifications == 1 && seen.ip == (void *)0x5678, "a notifier event notifies");
	memset(seen.stack, 0, sizeof(seen.stack));
	notifier.eval_capture = 1;
	fire(a, &notif_common, a, 0x5678, v);
	tap_ok(seen.notifications == 2 && stack_i64(0) == -2 && stack_i64(40) == -70000,
	       "captures get the values' stack");
	notifier.eval_capture = 0;
	notif_common.eval_filter = 1;
	seen.filter_result = LTTNG_UST_EVENT_FILTER_REJECT;
	fire(a, &notif_common, a, 0x5678, v);
	tap_ok(seen.notifications == 2, "a trigger's filter can reject");
	notif_common.eval_filter = 0;

	/* Many classes: several pages of thunks, each still its class's own. */
	ok = true;
	for (unsigned i = 0; i < 300; i++) {
		char name[32];

		snprintf(name, sizeof(name), "many:e%u", i);
		many[i] = dpa_class_get(name, g, 1, &err);
		ok = ok && many[i];
	}
	tap_ok(ok, "300 classes made");
	for (unsigned i = 0; ok && i < 300; i++) {
		unsigned before = seen.reserves;
		struct dpa_value one = { .u = i };

		fire(many[i], &rec_common, many[(i + 1) % 300], 1, &one);
		ok = seen.reserves == before;
		fire(many[i], &rec_common, many[i], 1, &one);
		ok = ok && seen.reserves == before + 1 && seen.n == 8 &&
		     !memcmp(seen.bytes, &one.u, 8);
	}
	tap_ok(ok, "each of them fires for its own class only, with its own value");
	return tap_done();
}
