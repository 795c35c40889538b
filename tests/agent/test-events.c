/*
 * The runtime event classes without a session daemon: layout validation,
 * the (name, layout) cache, and that recording a class no session wants is
 * a no-op.
 */
#include <errno.h>
#include <string.h>

#include "events.h"
#include "tap.h"

static struct dp_field_desc fld(const char *name, enum dp_ftype type, unsigned size,
				bool is_signed, bool hex)
{
	struct dp_field_desc f = { .type = (uint8_t)type, .size = (uint8_t)size,
				   .is_signed = is_signed, .hex = hex };

	strncpy(f.name, name, sizeof(f.name) - 1);
	return f;
}

/* dpa_class_get must fail with EINVAL and a message. */
static void check_refused(const char *what, const char *name, const struct dp_field_desc *f,
			  size_t n)
{
	struct dp_err err = DP_ERR_INIT;
	struct dpa_class *cls;

	errno = 0;
	cls = dpa_class_get(name, f, n, &err);
	tap_ok(!cls && errno == EINVAL && err.msg[0], "refused: %s (%s)", what,
	       err.msg[0] ? err.msg : "no message");
}

int main(void)
{
	const struct dp_field_desc one[] = { fld("v", DP_FT_INT, 8, false, false) };
	const struct dp_field_desc two[] = { fld("v", DP_FT_INT, 4, false, false) };
	struct dp_field_desc bad[DPA_CLASS_MAX_FIELDS + 1];
	struct dp_field_desc f;
	struct dpa_class *a, *b, *c, *d;
	struct dp_err err = DP_ERR_INIT;
	char longname[DP_NAME_MAX + 8];

	/* Names. */
	check_refused("no provider", "event", one, 1);
	check_refused("empty provider", ":event", one, 1);
	check_refused("empty event", "prov:", one, 1);
	check_refused("space in name", "prov:ev ent", one, 1);
	check_refused("quote in name", "prov:ev\"", one, 1);
	check_refused("glob in name", "prov:ev*", one, 1);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	longname[4] = ':';
	check_refused("name too long", longname, one, 1);
	check_refused("NULL name", NULL, one, 1);

	/* Fields. */
	f = fld("v", DP_FT_INT, 3, false, false);
	check_refused("integer of 3 bytes", "t:e", &f, 1);
	f = fld("v", DP_FT_INT, 16, false, false);
	check_refused("integer of 16 bytes", "t:e", &f, 1);
	f = fld("v", 77, 8, false, false);
	check_refused("unknown type", "t:e", &f, 1);
	f = fld("1v", DP_FT_INT, 4, false, false);
	check_refused("field name starting with a digit", "t:e", &f, 1);
	f = fld("a-b", DP_FT_INT, 4, false, false);
	check_refused("field name with '-'", "t:e", &f, 1);
	f = fld("", DP_FT_INT, 4, false, false);
	check_refused("empty field name", "t:e", &f, 1);
	f = fld("v", DP_FT_INT, 4, false, false);
	memset(f.name, 'x', sizeof(f.name));	/* no NUL within the array */
	check_refused("unterminated field name", "t:e", &f, 1);
	bad[0] = fld("v", DP_FT_INT, 4, false, false);
	bad[1] = fld("v", DP_FT_STRING, 0, false, false);
	check_refused("duplicate field names", "t:e", bad, 2);
	bad[0] = fld("s", DP_FT_SEQ_U64, 0, false, false);
	bad[1] = fld("_s_length", DP_FT_INT, 4, false, false);
	check_refused("field named like a sequence's length", "t:e", bad, 2);
	for (size_t i = 0; i < DPA_CLASS_MAX_FIELDS + 1; i++) {
		bad[i] = fld("f", DP_FT_INT, 1, false, false);
		bad[i].name[1] = (char)('a' + i / 26);
		bad[i].name[2] = (char)('a' + i % 26);
	}
	check_refused("too many fields", "t:e", bad, DPA_CLASS_MAX_FIELDS + 1);
	a = dpa_class_get("t:max", bad, DPA_CLASS_MAX_FIELDS, &err);
	tap_ok(a != NULL, "%d fields are accepted (%s)", DPA_CLASS_MAX_FIELDS, a ? "ok" : err.msg);

	/* The cache: one class per (name, layout). */
	a = dpa_class_get("t:cache", one, 1, &err);
	b = dpa_class_get("t:cache", one, 1, &err);
	c = dpa_class_get("t:cache", two, 1, &err);
	d = dpa_class_get("t:other", one, 1, &err);
	tap_ok(a != NULL && c != NULL && d != NULL, "classes are created");
	tap_ok(a == b, "the same name and layout give the same class");
	tap_ok(a != c, "the same name with another layout gives another class");
	tap_ok(a != d && c != d, "another name gives another class");
	/* Attributes that do not apply to a type do not make another layout. */
	f = fld("s", DP_FT_STRING, 0, false, false);
	a = dpa_class_get("t:norm", &f, 1, &err);
	f = fld("s", DP_FT_STRING, 4, true, false);
	b = dpa_class_get("t:norm", &f, 1, &err);
	tap_ok(a && a == b, "a string's size and signedness are ignored");
	f = fld("s", DP_FT_STRING, 0, false, true);
	b = dpa_class_get("t:norm", &f, 1, &err);
	tap_ok(a && a == b, "a string's hex flag is ignored");
	f = fld("d", DP_FT_DOUBLE, 8, false, false);
	a = dpa_class_get("t:norm", &f, 1, &err);
	f = fld("d", DP_FT_DOUBLE, 0, true, true);
	b = dpa_class_get("t:norm", &f, 1, &err);
	tap_ok(a && a == b, "a double's size, signedness and hex flag are ignored");
	f = fld("q", DP_FT_SEQ_U64, 0, false, true);
	a = dpa_class_get("t:norm", &f, 1, &err);
	f = fld("q", DP_FT_SEQ_U64, 0, false, false);
	b = dpa_class_get("t:norm", &f, 1, &err);
	tap_ok(a && b && a != b, "a sequence's base is part of its layout");
	a = dpa_class_get("t:empty", NULL, 0, &err);
	tap_ok(a != NULL, "a class without fields is accepted");

	/* No session: never enabled, and recording does nothing. */
	c = dpa_class_get("t:cache", two, 1, &err);
	tap_ok(c && !dpa_class_enabled(c), "a class no session wants is not enabled");
	if (c) {
		struct dpa_value v = { .u = 1 };

		dpa_events_thread_init();
		dpa_class_record(c, 0x1000, &v);	/* must return, and not crash */
	}
	return tap_done();
}
