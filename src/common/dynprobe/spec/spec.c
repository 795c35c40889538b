/*
 * Parsing of what users type: numbers, locations, event names and the outer
 * syntax of context types (see spec.h for the grammar).  Pure string work:
 * nothing here opens a file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/chars.h"
#include "spec/spec.h"

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

	if (!*s)
		return dp_err_set(err, -EINVAL, "a number is missing");
	if (*s == '-' || *s == '+')
		return dp_err_set(err, -EINVAL, "'%s' is not a number: no sign is allowed here", s);
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!*p)
			return dp_err_set(err, -EINVAL, "'%s' is not a number: hex digits must "
					  "follow 0x", s);
	} else if (p[0] == '0' && p[1]) {
		base = 8;
		p++;
	}
	for (; *p; p++) {
		int d = digit_value(*p);

		if (d < 0 || (unsigned)d >= base) {
			if (base == 8 && d >= 0 && d < 10 && strspn(s, "0123456789") == strlen(s))
				return dp_err_set(err, -EINVAL, "'%s' is not a number: a leading "
						  "0 makes it octal, and '%c' is not an octal "
						  "digit (drop the 0 for decimal, or write 0x for "
						  "hex)", s, *p);
			if (base == 10 && d >= 10)
				return dp_err_set(err, -EINVAL, "'%s' is not a number: '%c' is "
						  "not a decimal digit (hex numbers start with 0x)",
						  s, *p);
			return dp_err_set(err, -EINVAL, "'%s' is not a number: '%c' is not a %s "
					  "digit", s, *p, base_name(base));
		}
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return dp_err_set(err, -ERANGE, "'%s' does not fit in 64 bits", s);
		v = v * base + (unsigned)d;
	}
	*out = v;
	return 0;
}

/*
 * A name as its author wrote it (C++, Rust): a scope ("::"), a parameter or
 * template argument list, a destructor or an operator.  No C symbol has
 * any of these, so C names keep their strict grammar below.
 */
static bool source_name(const char *s)
{
	return strstr(s, "::") || strpbrk(s, "(<~") ||
	       (!strncmp(s, "operator", 8) && !ident_char(s[8]));
}

/*
 * Whether a source name is a pattern: '?' anywhere, '*' and '[' unless the
 * name's own (operator*, operator->*, operator[], new[], a pointer type
 * after a type inside a parameter list: "f(char*)").  Resolution tries a
 * pattern as an exact name first, so an odd case still means itself.
 */
static bool source_wildcards(const char *s)
{
	int depth = 0;
	char prev = '\0';

	for (const char *p = s; *p; p++) {
		if (!strncmp(p, "operator", 8) && strchr("*[-", p[8]) && p[8]) {
			/* operator*, operator*=, operator[], operator->*, operator-- */
			p += 8;
			while (p[1] && strchr("*[]->=", p[1]))
				p++;
			prev = *p;
			continue;
		}
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth)
			depth--;
		if (*p == '?' || (*p == '[' && p[1] != ']') ||
		    (*p == '*' && !(depth && (ident_char(prev) || strchr("*&>) ", prev)))))
			return true;
		if (*p != ' ' || prev == '\0')
			prev = *p;
	}
	return false;
}

/* The trailing "+OFFSET" of a source name, or NULL: a '+' then a digit,
 * and nothing after that closes a list ("operator+=", "f<1+2>" have none). */
static const char *source_offset(const char *s)
{
	const char *plus = strrchr(s, '+');

	if (!plus || plus[1] < '0' || plus[1] > '9' || strpbrk(plus, ")>] "))
		return NULL;
	return plus;
}

static int offset_parse(const char *s, const char *plus, struct dp_location *loc,
			struct dp_err *err)
{
	struct dp_err nerr;
	int ret;

	if (!plus)
		return 0;
	ret = dp_spec_number(plus + 1, &loc->offset, &nerr);
	if (ret)
		return dp_err_set(err, ret, "bad offset in '%s': %s", s, nerr.msg);
	loc->has_offset = true;
	return 0;
}

static int symbol_copy(const char *s, size_t len, struct dp_location *loc, struct dp_err *err)
{
	if (len >= sizeof(loc->symbol))
		return dp_err_set(err, -ENAMETOOLONG, "'%.40s...': %s longer than %zu bytes", s,
				  loc->pattern ? "pattern" : "symbol name",
				  sizeof(loc->symbol) - 1);
	memcpy(loc->symbol, s, len);
	loc->symbol[len] = '\0';
	return 0;
}

/* "shop::Cart::add(int)+0x4", "std::vector<int>::*", "shop::Cart::operator+=". */
static int source_parse(const char *s, struct dp_location *loc, struct dp_err *err)
{
	const char *plus = source_offset(s);
	size_t len = plus ? (size_t)(plus - s) : strlen(s);
	int ret;

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return dp_err_set(err, -EINVAL, "'%s': a function name holds no control "
					  "characters", s);
	loc->source = true;
	ret = symbol_copy(s, len, loc, err);
	if (ret)
		return ret;
	loc->pattern = source_wildcards(loc->symbol);
	if (loc->pattern && plus)
		return dp_err_set(err, -EINVAL, "'%s': a pattern names whole functions and takes "
				  "no offset", s);
	return offset_parse(s, plus, loc, err);
}

/* FILE:LINE: digits after the last ':', which does not end a "::". */
static bool line_form(const char *s)
{
	const char *colon = strrchr(s, ':');

	if (!colon || colon == s || colon[-1] == ':' || !colon[1])
		return false;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static int line_parse(const char *s, struct dp_location *loc, struct dp_err *err)
{
	const char *colon = strrchr(s, ':');
	size_t len = (size_t)(colon - s);
	uint64_t line;

	loc->kind = DP_LOC_LINE;
	if (len >= sizeof(loc->symbol))
		return dp_err_set(err, -ENAMETOOLONG, "'%s': the file name is longer than %zu "
				  "bytes", s, sizeof(loc->symbol) - 1);
	memcpy(loc->symbol, s, len);
	loc->symbol[len] = '\0';
	if (strlen(colon + 1) > 9 || sscanf(colon + 1, "%" SCNu64, &line) != 1 || !line)
		return dp_err_set(err, -EINVAL, "'%s': a line number is decimal, from 1 (expected "
				  "FILE:LINE)", s);
	loc->line = (uint32_t)line;
	return 0;
}

int dp_spec_location_parse(const char *s, struct dp_location *loc, struct dp_err *err)
{
	const char *plus;
	size_t len;
	int ret;

	memset(loc, 0, sizeof(*loc));
	if (!*s)
		return dp_err_set(err, -EINVAL, "empty location: expected ADDR, SYMBOL or "
				  "SYMBOL+OFFSET");
	if (line_form(s))
		return line_parse(s, loc, err);
	if (*s >= '0' && *s <= '9') {
		loc->kind = DP_LOC_ADDR;
		if (strpbrk(s, "+-"))
			return dp_err_set(err, -EINVAL, "'%s': an address takes no offset (write "
					  "the sum, or SYMBOL+OFFSET)", s);
		ret = dp_spec_number(s, &loc->addr, err);
		return ret;
	}
	loc->kind = DP_LOC_SYMBOL;
	if (source_name(s))
		return source_parse(s, loc, err);
	/* A pattern of function names (fnmatch(3)) takes no offset, and its
	 * own characters besides a symbol's. */
	loc->pattern = strpbrk(s, "*?[") != NULL;
	plus = strchr(s, '+');
	if (loc->pattern && plus)
		return dp_err_set(err, -EINVAL, "'%s': a pattern names whole functions and takes "
				  "no offset", s);
	len = plus ? (size_t)(plus - s) : strlen(s);
	if (!len)
		return dp_err_set(err, -EINVAL, "'%s': a symbol is missing before '+' (expected "
				  "SYMBOL+OFFSET)", s);
	for (size_t i = 0; i < len; i++) {
		if (loc->pattern && strchr("*?[]!^-", s[i]))
			continue;
		if (s[i] == '-')
			return dp_err_set(err, -EINVAL, "'%s': offsets go forward from the "
					  "symbol: write SYMBOL+OFFSET", s);
		if (!symbol_char(s[i]))
			return dp_err_set(err, -EINVAL, "'%s': '%c' cannot be part of a %s", s,
					  s[i], loc->pattern ? "pattern of function names" :
					  "symbol name (expected ADDR, SYMBOL or SYMBOL+OFFSET; "
					  "C++ and Rust names as NAMESPACE::NAME)");
	}
	ret = symbol_copy(s, len, loc, err);
	if (ret)
		return ret;
	if (plus && strchr(plus + 1, '+'))
		return dp_err_set(err, -EINVAL, "'%s': one offset at most (SYMBOL+OFFSET)", s);
	return offset_parse(s, plus, loc, err);
}

int dp_spec_location_format(const struct dp_location *loc, char *buf, size_t size)
{
	if (loc->kind == DP_LOC_ADDR)
		return snprintf(buf, size, "0x%" PRIx64, loc->addr);
	if (loc->kind == DP_LOC_LINE)
		return snprintf(buf, size, "%s:%" PRIu32, loc->symbol, loc->line);
	if (loc->has_offset || loc->offset)
		return snprintf(buf, size, "%s+0x%" PRIx64, loc->symbol, loc->offset);
	return snprintf(buf, size, "%s", loc->symbol);
}

int dp_spec_sdt_probe_parse(const char *s, char *path, size_t path_size, char *probe,
			    size_t probe_size, struct dp_err *err)
{
	const char *body = s + 4, *name, *sep;
	size_t n = 0;

	if (strncmp(s, "sdt:", 4))
		return dp_err_set(err, -EINVAL, "'%s': expected sdt:PATH:PROVIDER:NAME", s);
	/* From the right: provider and name hold no ':', a path may. */
	name = strrchr(body, ':');
	for (sep = name ? name - 1 : NULL; sep && sep >= body && *sep != ':'; sep--)
		;
	if (!name || !name[1] || !sep || sep <= body || sep + 1 == name || sep[-1] == '\\')
		return dp_err_set(err, -EINVAL, "'%s': expected sdt:PATH:PROVIDER:NAME (a ':' "
				  "in PATH written \\:)", s);
	if (strlen(sep + 1) >= probe_size)
		return dp_err_set(err, -ENAMETOOLONG, "'%s': provider and name longer than %zu "
				  "bytes", s, probe_size - 1);
	snprintf(probe, probe_size, "%s", sep + 1);
	for (const char *c = body; c < sep; c++) {
		if (c[0] == '\\' && c[1] == ':')
			c++;
		if (n + 1 >= path_size)
			return dp_err_set(err, -ENAMETOOLONG, "'%s': path longer than %zu bytes", s,
					  path_size - 1);
		path[n++] = *c;
	}
	path[n] = '\0';
	return 0;
}

int dp_spec_userspace_probe_parse(const char *s, char *path, size_t path_size,
				  struct dp_location *loc, struct dp_err *err)
{
	const char *colon;
	size_t len;

	if (!strncmp(s, "sdt:", 4))
		return dp_err_set(err, -ENOTSUP, "'%s': an SDT probe (sdt:PATH:PROVIDER:NAME), "
				  "not elf:PATH:SYMBOL", s);
	if (strncmp(s, "elf:", 4) != 0)
		return dp_err_set(err, -EINVAL, "'%s': expected elf:PATH:SYMBOL", s);
	s += 4;
	/* The first colon after the path: a C++ or Rust name has its own. */
	colon = strchr(s, ':');
	if (!colon || colon == s || !colon[1])
		return dp_err_set(err, -EINVAL, "'elf:%s': expected elf:PATH:SYMBOL", s);
	len = colon - s;
	if (len >= path_size)
		return dp_err_set(err, -ENAMETOOLONG, "'elf:%s': path longer than %zu bytes", s,
				  path_size - 1);
	memcpy(path, s, len);
	path[len] = '\0';
	return dp_spec_location_parse(colon + 1, loc, err);
}

/* Checks one part of an event name: a C identifier. */
static int check_ident(const char *full, const char *s, size_t len, const char *what,
		       struct dp_err *err)
{
	if (!len)
		return dp_err_set(err, -EINVAL, "bad event name '%s': the %s name is empty "
				  "(expected NAME or PROVIDER:EVENT)", full, what);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '*')
			return dp_err_set(err, -EINVAL, "bad event name '%s': a dynamic probe's "
					  "event has one exact name, no wildcard", full);
		if (!ident_char(s[i]) || (!i && !ident_start(s[i])))
			return dp_err_set(err, -EINVAL, "bad event name '%s': the %s name must be "
					  "a C identifier (letters, digits and '_', not starting "
					  "with a digit)", full, what);
	}
	return 0;
}

int dp_spec_event_name(const char *name, const char *suffix, char *out, size_t size,
		       struct dp_err *err)
{
	const char *colon = strchr(name, ':');
	const char *event = name;
	int n, ret;

	if (!*name)
		return dp_err_set(err, -EINVAL, "the event name is empty (expected NAME or "
				  "PROVIDER:EVENT)");
	if (strchr(name, ','))
		return dp_err_set(err, -EINVAL, "bad event name '%s': a dynamic probe takes one "
				  "event name, not a list", name);
	if (colon) {
		if (strchr(colon + 1, ':'))
			return dp_err_set(err, -EINVAL, "bad event name '%s': one ':' at most "
					  "(PROVIDER:EVENT)", name);
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
	if (n < 0 || (size_t)n >= size || (size_t)n >= DP_SPEC_EVENT_MAX)
		return dp_err_set(err, -ENAMETOOLONG, "bad event name '%s': too long (at most %d "
				  "bytes with its provider%s)", name, DP_SPEC_EVENT_MAX - 1,
				  *suffix ? " and suffix" : "");
	return 0;
}

/* Builds a C identifier out of words: separators collapse into one '_'. */
struct ident_buf {
	char v[4 * DP_SPEC_SYMBOL_MAX];
	size_t len;
	bool sep;		/* a separator is due before the next character */
};

static void ident_put(struct ident_buf *b, char c)
{
	if (b->len + 2 >= sizeof(b->v))
		return;
	if (b->sep && b->len)
		b->v[b->len++] = '_';
	b->sep = false;
	b->v[b->len++] = c;
	b->v[b->len] = '\0';
}

static void ident_word(struct ident_buf *b, const char *w)
{
	b->sep = true;
	for (; *w; w++)
		ident_put(b, *w);
	b->sep = true;
}

/* The word of an operator's symbol, or NULL. */
static const char *operator_word(char c)
{
	static const char *const words[][2] = {
		{ "+", "plus" }, { "-", "minus" }, { "*", "star" }, { "/", "slash" },
		{ "%", "percent" }, { "^", "caret" }, { "&", "amp" }, { "|", "bar" },
		{ "~", "tilde" }, { "!", "not" }, { "=", "eq" }, { "<", "lt" },
		{ ">", "gt" }, { ",", "comma" },
	};

	for (size_t i = 0; c && i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i][0][0] == c)
			return words[i][1];
	return NULL;
}

/* "operator" and its symbols as words; returns what follows them. */
static const char *operator_put(struct ident_buf *b, const char *p)
{
	ident_word(b, "operator");
	p += 8;
	while (*p == ' ')
		p++;
	if ((p[0] == '(' && p[1] == ')') || (p[0] == '[' && p[1] == ']')) {
		ident_word(b, p[0] == '(' ? "call" : "index");
		return p + 2;
	}
	for (; operator_word(*p); p++)
		ident_word(b, operator_word(*p));
	return p;
}

/* FNV-1a: a short, stable tag for names cut to fit. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The room a NAME has in "dynprobe:NAME_return". */
#define SOURCE_EVENT_ROOM (DP_SPEC_EVENT_MAX - 1 - sizeof(DP_SPEC_PROVIDER_DEFAULT) - \
			   sizeof("_return") + 1)

static int source_event_name(const struct dp_location *loc, char *out, size_t size)
{
	struct ident_buf b = { .len = 0 };
	size_t room = size - 1 < SOURCE_EVENT_ROOM ? size - 1 : SOURCE_EVENT_ROOM;
	char tail[32];

	for (const char *p = loc->symbol; *p;) {
		bool word_start = p == loc->symbol || !ident_char(p[-1]);

		if (word_start && !strncmp(p, "operator", 8) && !ident_char(p[8])) {
			p = operator_put(&b, p);
		} else if (*p == '~') {
			ident_word(&b, "dtor");
			p++;
		} else if (p[0] == '(' && p[1] == ')') {
			ident_word(&b, "void");
			p += 2;
		} else {
			if (ident_char(*p))
				ident_put(&b, *p);
			else
				b.sep = true;
			p++;
		}
	}
	if (loc->offset) {
		snprintf(tail, sizeof(tail), "%" PRIx64, loc->offset);
		ident_word(&b, tail);
	}
	if (!b.len)
		ident_word(&b, "function");
	if (b.len > room) {
		/* Cut, and tagged with the whole name's hash. */
		snprintf(tail, sizeof(tail), "_%08" PRIx32, name_hash(loc->symbol));
		b.len = room - strlen(tail);
		memcpy(b.v + b.len, tail, strlen(tail) + 1);
		b.len += strlen(tail);
	}
	if (size < 2 || b.len + 1 + !ident_start(b.v[0]) > size)
		return -ENAMETOOLONG;
	snprintf(out, size, "%s%s", ident_start(b.v[0]) ? "" : "_", b.v);
	return 0;
}

int dp_spec_location_event_name(const struct dp_location *loc, char *out, size_t size)
{
	int n;

	if (loc->source && !loc->pattern)
		return source_event_name(loc, out, size);
	if (loc->kind == DP_LOC_LINE) {
		const char *base = strrchr(loc->symbol, '/');

		n = snprintf(out, size, "%s_%" PRIu32, base ? base + 1 : loc->symbol, loc->line);
	} else if (loc->pattern) {
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
