/*
 * Parsing of what users type: numbers, locations, event names and the outer
 * syntax of context types (see spec.h for the grammar).  Pure string work:
 * nothing here opens a file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "spec/spec.h"

__attribute__((format(printf, 2, 3)))
static void fail(struct dp_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static const char *base_name(unsigned base)
{
	return base == 16 ? "hex" : base == 8 ? "octal" : "decimal";
}

int dp_spec_number(const char *s, uint64_t *out, struct dp_err *err)
{
	const char *p = s;
	unsigned base = 10;
	uint64_t v = 0;

	if (!*s) {
		fail(err, "a number is missing");
		return -EINVAL;
	}
	if (*s == '-' || *s == '+') {
		fail(err, "'%s' is not a number: no sign is allowed here", s);
		return -EINVAL;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!*p) {
			fail(err, "'%s' is not a number: hex digits must follow 0x", s);
			return -EINVAL;
		}
	} else if (p[0] == '0' && p[1]) {
		base = 8;
		p++;
	}
	for (; *p; p++) {
		int d = digit_value(*p);

		if (d < 0 || (unsigned)d >= base) {
			if (base == 8 && d >= 0 && d < 10 && strspn(s, "0123456789") == strlen(s))
				fail(err, "'%s' is not a number: a leading 0 makes it octal, and '%c' "
				     "is not an octal digit (drop the 0 for decimal, or write 0x for hex)",
				     s, *p);
			else if (base == 10 && d >= 10)
				fail(err, "'%s' is not a number: '%c' is not a decimal digit "
				     "(hex numbers start with 0x)", s, *p);
			else
				fail(err, "'%s' is not a number: '%c' is not a %s digit", s, *p,
				     base_name(base));
			return -EINVAL;
		}
		if (v > (UINT64_MAX - (unsigned)d) / base) {
			fail(err, "'%s' does not fit in 64 bits", s);
			return -ERANGE;
		}
		v = v * base + (unsigned)d;
	}
	*out = v;
	return 0;
}

/* Characters of a symbol: C identifiers, plus what compilers and linkers add
 * (foo.cold, foo.part.0, memcpy@@GLIBC_2.14, $x). */
static bool symbol_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '@' || c == '$';
}

int dp_spec_location_parse(const char *s, struct dp_location *loc, struct dp_err *err)
{
	const char *plus;
	size_t len;
	int ret;

	memset(loc, 0, sizeof(*loc));
	if (!*s) {
		fail(err, "empty location: expected ADDR, SYMBOL or SYMBOL+OFFSET");
		return -EINVAL;
	}
	if (*s >= '0' && *s <= '9') {
		loc->kind = DP_LOC_ADDR;
		if (strpbrk(s, "+-")) {
			fail(err, "'%s': an address takes no offset (write the sum, or "
			     "SYMBOL+OFFSET)", s);
			return -EINVAL;
		}
		ret = dp_spec_number(s, &loc->addr, err);
		return ret;
	}
	loc->kind = DP_LOC_SYMBOL;
	/* A pattern of function names (fnmatch(3)) takes no offset, and its
	 * own characters besides a symbol's. */
	loc->pattern = strpbrk(s, "*?[") != NULL;
	plus = strchr(s, '+');
	if (loc->pattern && plus) {
		fail(err, "'%s': a pattern names whole functions and takes no offset", s);
		return -EINVAL;
	}
	len = plus ? (size_t)(plus - s) : strlen(s);
	if (!len) {
		fail(err, "'%s': a symbol is missing before '+' (expected SYMBOL+OFFSET)", s);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (loc->pattern && strchr("*?[]!^-", s[i]))
			continue;
		if (s[i] == '-') {
			fail(err, "'%s': offsets go forward from the symbol: write "
			     "SYMBOL+OFFSET", s);
			return -EINVAL;
		}
		if (!symbol_char(s[i])) {
			fail(err, "'%s': '%c' cannot be part of a %s", s, s[i],
			     loc->pattern ? "pattern of function names" :
			     "symbol name (expected ADDR, SYMBOL or SYMBOL+OFFSET)");
			return -EINVAL;
		}
	}
	if (len >= sizeof(loc->symbol)) {
		fail(err, "'%.40s...': %s longer than %zu bytes", s,
		     loc->pattern ? "pattern" : "symbol name", sizeof(loc->symbol) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(loc->symbol, s, len);
	loc->symbol[len] = '\0';
	if (plus) {
		struct dp_err nerr;

		if (strchr(plus + 1, '+')) {
			fail(err, "'%s': one offset at most (SYMBOL+OFFSET)", s);
			return -EINVAL;
		}
		ret = dp_spec_number(plus + 1, &loc->offset, &nerr);
		if (ret) {
			fail(err, "bad offset in '%s': %s", s, nerr.msg);
			return ret;
		}
		loc->has_offset = true;
	}
	return 0;
}

int dp_spec_location_format(const struct dp_location *loc, char *buf, size_t size)
{
	if (loc->kind == DP_LOC_ADDR)
		return snprintf(buf, size, "0x%" PRIx64, loc->addr);
	if (loc->has_offset || loc->offset)
		return snprintf(buf, size, "%s+0x%" PRIx64, loc->symbol, loc->offset);
	return snprintf(buf, size, "%s", loc->symbol);
}

int dp_spec_userspace_probe_parse(const char *s, char *path, size_t path_size,
				  struct dp_location *loc, struct dp_err *err)
{
	const char *colon;
	size_t len;

	if (!strncmp(s, "sdt:", 4)) {
		fail(err, "'%s': SDT probes are not dynamic probes: use elf:PATH:SYMBOL, or "
		     "--probe/--function with --path", s);
		return -ENOTSUP;
	}
	if (strncmp(s, "elf:", 4) != 0) {
		fail(err, "'%s': expected elf:PATH:SYMBOL", s);
		return -EINVAL;
	}
	s += 4;
	colon = strrchr(s, ':');
	if (!colon || colon == s || !colon[1]) {
		fail(err, "'elf:%s': expected elf:PATH:SYMBOL", s);
		return -EINVAL;
	}
	len = colon - s;
	if (len >= path_size) {
		fail(err, "'elf:%s': path longer than %zu bytes", s, path_size - 1);
		return -ENAMETOOLONG;
	}
	memcpy(path, s, len);
	path[len] = '\0';
	return dp_spec_location_parse(colon + 1, loc, err);
}

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

/* Checks one part of an event name: a C identifier. */
static int check_ident(const char *full, const char *s, size_t len, const char *what,
		       struct dp_err *err)
{
	if (!len) {
		fail(err, "bad event name '%s': the %s name is empty (expected NAME or "
		     "PROVIDER:EVENT)",
		     full, what);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '*') {
			fail(err, "bad event name '%s': a dynamic probe's event has one "
			     "exact name, no wildcard", full);
			return -EINVAL;
		}
		if (!ident_char(s[i]) || (!i && !ident_start(s[i]))) {
			fail(err, "bad event name '%s': the %s name must be a C identifier "
			     "(letters, digits and '_', not starting with a digit)", full, what);
			return -EINVAL;
		}
	}
	return 0;
}

int dp_spec_event_name(const char *name, const char *suffix, char *out, size_t size,
		       struct dp_err *err)
{
	const char *colon = strchr(name, ':');
	const char *event = name;
	int n, ret;

	if (!*name) {
		fail(err, "the event name is empty (expected NAME or PROVIDER:EVENT)");
		return -EINVAL;
	}
	if (strchr(name, ',')) {
		fail(err, "bad event name '%s': a dynamic probe takes one event name, "
		     "not a list", name);
		return -EINVAL;
	}
	if (colon) {
		if (strchr(colon + 1, ':')) {
			fail(err, "bad event name '%s': one ':' at most (PROVIDER:EVENT)", name);
			return -EINVAL;
		}
		ret = check_ident(name, name, colon - name, "provider", err);
		if (ret)
			return ret;
		event = colon + 1;
	}
	ret = check_ident(name, event, strlen(event), "event", err);
	if (ret)
		return ret;
	if (colon)
		n = snprintf(out, size, "%s%s", name, suffix);
	else
		n = snprintf(out, size, "%s:%s%s", DP_SPEC_PROVIDER_DEFAULT, name, suffix);
	if (n < 0 || (size_t)n >= size || (size_t)n >= DP_SPEC_EVENT_MAX) {
		fail(err, "bad event name '%s': too long (at most %d bytes with its "
		     "provider%s)", name, DP_SPEC_EVENT_MAX - 1,
		     *suffix ? " and suffix" : "");
		return -ENAMETOOLONG;
	}
	return 0;
}

int dp_spec_location_event_name(const struct dp_location *loc, char *out, size_t size)
{
	int n;

	if (loc->pattern) {
		/* Its name characters alone: "dp_fn_1???" -> "dp_fn_1". */
		size_t k = 0;

		for (const char *p = loc->symbol; *p && k + 1 < size; p++)
			if (ident_char(*p))
				out[k++] = *p;
		out[k] = '\0';
		n = k ? (int)k : snprintf(out, size, "functions");
	} else if (loc->kind == DP_LOC_ADDR)
		n = snprintf(out, size, "addr_%" PRIx64, loc->addr);
	else if (loc->offset)
		n = snprintf(out, size, "%s_%" PRIx64, loc->symbol, loc->offset);
	else
		n = snprintf(out, size, "%s", loc->symbol);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	for (char *p = out; *p; p++)
		if (!ident_char(*p))
			*p = '_';
	if (!ident_start(out[0])) {
		if ((size_t)n + 1 >= size)
			return -ENAMETOOLONG;
		memmove(out + 1, out, n + 1);
		out[0] = '_';
	}
	return 0;
}

/* Integer types of TYPE:NAME:ADDR, as the agent knows them (context.h). */
static const char *const int_types[] = {
	"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"hex8", "hex16", "hex32", "hex64", "int", "uint", "long", "ulong", "hex",
};

/* The kind word: the type up to its first ':'. */
static size_t kind_len(const char *type)
{
	const char *colon = strchr(type, ':');

	return colon ? (size_t)(colon - type) : strlen(type);
}

static bool kind_is(const char *type, const char *kind)
{
	return kind_len(type) == strlen(kind) && !strncmp(type, kind, strlen(kind));
}

static bool kind_is_int(const char *type)
{
	for (size_t i = 0; i < sizeof(int_types) / sizeof(int_types[0]); i++)
		if (kind_is(type, int_types[i]))
			return true;
	return false;
}

bool dp_spec_context_is_dynamic(const char *type)
{
	return kind_is(type, "regs") || kind_is(type, "reg") || kind_is(type, "backtrace") ||
	       kind_is(type, "retval") || kind_is(type, "string") || kind_is_int(type);
}

/* The agent's bounds (context.h, events.h): a field name of at most 63 bytes,
 * of which a memory context's `_NAME_error` takes 7 more. */
#define FIELD_NAME_MAX 63
#define MEM_NAME_MAX (FIELD_NAME_MAX - 7)
#define STRING_MAX 4096
#define BACKTRACE_MAX 128

static int check_field(const char *type, const char *s, size_t len, size_t max,
		       struct dp_err *err)
{
	if (!len) {
		fail(err, "'%s': the field name is empty", type);
		return -EINVAL;
	}
	if (len > max) {
		fail(err, "'%s': the field name is longer than %zu bytes", type, max);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (!ident_char(s[i]) || (!i && !ident_start(s[i]))) {
			fail(err, "'%s': the field name must be a C identifier (letters, digits "
			     "and '_', not starting with a digit)", type);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_backtrace(const char *type, struct dp_err *err)
{
	const char *p = type + strlen("backtrace");
	bool depth = false, walker = false;

	while (*p == ':') {
		const char *part = ++p;
		size_t len = strcspn(part, ":");
		char buf[32];
		uint64_t v;
		struct dp_err nerr;

		p += len;
		if ((len == 2 && !strncmp(part, "fp", 2)) || (len == 3 && !strncmp(part, "cfi", 3))) {
			if (walker) {
				fail(err, "'%s': one walker at most (fp or cfi)", type);
				return -EINVAL;
			}
			walker = true;
			continue;
		}
		if (depth || walker || len >= sizeof(buf)) {
			fail(err, "'%s': expected backtrace[:DEPTH][:fp|:cfi]", type);
			return -EINVAL;
		}
		memcpy(buf, part, len);
		buf[len] = '\0';
		if (dp_spec_number(buf, &v, &nerr)) {
			fail(err, "'%s': bad depth: %s", type, nerr.msg);
			return -EINVAL;
		}
		if (v < 1 || v > BACKTRACE_MAX) {
			fail(err, "'%s': the depth must be 1 to %d", type, BACKTRACE_MAX);
			return -EINVAL;
		}
		depth = true;
	}
	if (*p) {
		fail(err, "'%s': expected backtrace[:DEPTH][:fp|:cfi]", type);
		return -EINVAL;
	}
	return 0;
}

int dp_spec_context_check(const char *type, struct dp_err *err)
{
	const char *name, *addr, *max;
	size_t len;

	if (kind_is(type, "regs") || kind_is(type, "retval")) {
		if (type[kind_len(type)]) {
			fail(err, "'%s': %.*s takes no argument", type, (int)kind_len(type), type);
			return -EINVAL;
		}
		return 0;
	}
	if (kind_is(type, "backtrace"))
		return check_backtrace(type, err);
	if (kind_is(type, "reg")) {
		name = type + 4;
		if (!type[3] || !*name || strchr(name, ':')) {
			fail(err, "'%s': expected reg:NAME (a register such as rax, edi, r8w "
			     "or rip)", type);
			return -EINVAL;
		}
		return check_field(type, name, strlen(name), FIELD_NAME_MAX, err);
	}
	if (!kind_is(type, "string") && !kind_is_int(type)) {
		fail(err, "'%s': not a dynamic context type", type);
		return -EINVAL;
	}
	if (!type[kind_len(type)]) {
		fail(err, "'%s': expected %s:NAME:ADDR", type, type);
		return -EINVAL;
	}
	name = type + kind_len(type) + 1;
	addr = strchr(name, ':');
	if (!addr || !addr[1]) {
		fail(err, "'%s': the address is missing (expected %.*s:NAME:ADDR)", type,
		     (int)kind_len(type), type);
		return -EINVAL;
	}
	if (check_field(type, name, addr - name, MEM_NAME_MAX, err))
		return -EINVAL;
	addr++;
	max = strchr(addr, ':');
	if (max && !kind_is(type, "string")) {
		fail(err, "'%s': an integer context is TYPE:NAME:ADDR (only string takes a "
		     "maximum length)", type);
		return -EINVAL;
	}
	if (max) {
		uint64_t v;
		struct dp_err nerr;

		len = max - addr;
		if (!len || strchr(max + 1, ':')) {
			fail(err, "'%s': expected string:NAME:ADDR[:MAX]", type);
			return -EINVAL;
		}
		if (dp_spec_number(max + 1, &v, &nerr)) {
			fail(err, "'%s': bad maximum length: %s", type, nerr.msg);
			return -EINVAL;
		}
		if (v < 1 || v > STRING_MAX) {
			fail(err, "'%s': the maximum length must be 1 to %d", type, STRING_MAX);
			return -EINVAL;
		}
	}
	return 0;
}
