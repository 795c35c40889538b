/*
 * Variables by name (see var.h): the parser of `var:EXPR[:TYPE]`, the
 * field-name rule and the spelling back.  Pure string work: what the names
 * mean is the DWARF's (dwarf/dwarf-var.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/chars.h"
#include "spec/ctx.h"
#include "spec/spec.h"
#include "spec/var.h"

/* A var: field also gets "_NAME_error" when its recipe reads memory. */
#define VAR_FIELD_MAX (DP_FIELD_NAME_MAX - 1 - 7)

bool dp_var_is_var(const char *spec)
{
	return !strncmp(spec, "var:", 4) || !strcmp(spec, "var");
}

bool dp_var_is_args(const char *spec)
{
	return !strncmp(spec, "args", 4) && (!spec[4] || spec[4] == ':');
}

/* An identifier at *p into name: advances *p. */
static int ident(const char **p, char *name, struct dp_err *err)
{
	const char *s = *p, *q = s;

	if (!ident_start(*q))
		return dp_err_set(err, -EINVAL, "expected a name at '%s' (var:EXPR: a C access "
				  "path such as len, req->len, cfg.opts[2] or *p)", s);
	while (ident_char(*q))
		q++;
	if ((size_t)(q - s) >= DP_VAR_NAME_MAX)
		return dp_err_set(err, -EINVAL, "the name '%.*s' is too long", (int)(q - s), s);
	memcpy(name, s, q - s);
	name[q - s] = '\0';
	*p = q;
	return 0;
}

static int add_step(struct dp_var_expr *e, uint8_t kind, struct dp_err *err)
{
	if (e->nsteps >= DP_VAR_MAX_STEPS)
		return dp_err_set(err, -EINVAL, "more than %d members, indexes and '*' in one "
				  "expression", DP_VAR_MAX_STEPS);
	memset(&e->steps[e->nsteps], 0, sizeof(e->steps[0]));
	e->steps[e->nsteps].kind = kind;
	e->nsteps++;
	return 0;
}

static int index_step(const char **p, struct dp_var_expr *e, struct dp_err *err)
{
	const char *s = *p + 1, *end = strchr(s, ']');
	char buf[32];
	uint64_t v;
	int ret;

	if (!end)
		return dp_err_set(err, -EINVAL, "no closing ']'");
	if (end == s || (size_t)(end - s) >= sizeof(buf))
		return dp_err_set(err, -EINVAL, "expected a number between '[' and ']'");
	memcpy(buf, s, end - s);
	buf[end - s] = '\0';
	if (dp_spec_number(buf, &v, NULL) || v > (uint64_t)INT32_MAX)
		return dp_err_set(err, -EINVAL, "bad index '%s': a constant from 0 to %d", buf,
				  INT32_MAX);
	ret = add_step(e, DP_VAR_INDEX, err);
	if (ret)
		return ret;
	e->steps[e->nsteps - 1].index = (int64_t)v;
	*p = end + 1;
	return 0;
}

/* The path after the root name, up to the end of expr. */
static int parse_path(const char *p, struct dp_var_expr *e, struct dp_err *err)
{
	int ret;

	while (*p) {
		if (*p == '[') {
			ret = index_step(&p, e, err);
		} else if (*p == '.' || (p[0] == '-' && p[1] == '>')) {
			uint8_t kind = *p == '.' ? DP_VAR_MEMBER : DP_VAR_ARROW;

			p += kind == DP_VAR_MEMBER ? 1 : 2;
			ret = add_step(e, kind, err);
			if (!ret)
				ret = ident(&p, e->steps[e->nsteps - 1].name, err);
		} else {
			return dp_err_set(err, -EINVAL, "unexpected '%s' (after a name: .MEMBER, "
					  "->MEMBER or [INDEX])", p);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* The field name from the expression (var.h's rule). */
static int field_name(struct dp_var_expr *e, unsigned derefs, struct dp_err *err)
{
	char buf[512];
	size_t len = 0;

	for (unsigned i = 0; i < derefs; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "deref_");
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s", e->root);
	for (uint32_t i = 0; i < e->nsteps && len < sizeof(buf); i++) {
		const struct dp_var_step *s = &e->steps[i];

		if (s->kind == DP_VAR_INDEX)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "_%" PRId64, s->index);
		else if (s->kind != DP_VAR_DEREF)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "_%s", s->name);
	}
	if (len > VAR_FIELD_MAX)
		return dp_err_set(err, -EINVAL, "its field name '%s' would be longer than %d bytes: "
				  "shorten the expression", buf, VAR_FIELD_MAX);
	memcpy(e->field, buf, len + 1);
	return 0;
}

/* :TYPE, an integer type of the memory contexts or string. */
static int parse_type(const char *t, struct dp_var_expr *e, struct dp_err *err)
{
	char probe[96];
	struct dp_ctx ctx;

	e->typed = true;
	if (!strcmp(t, "string")) {
		e->string = true;
		return 0;
	}
	/* The memory contexts' parser knows the integer types: ask it. */
	if (snprintf(probe, sizeof(probe), "%s:x:0", t) < (int)sizeof(probe) &&
	    !strchr(t, ':') && !dp_var_is_var(t) &&
	    !dp_ctx_parse(probe, NULL, NULL, &ctx, NULL) && ctx.kind == DP_CTX_MEM) {
		e->type = ctx.type;
		return 0;
	}
	return dp_err_set(err, -EINVAL, "unknown type '%s' (int8 ... int64, uint8 ... uint64, "
			  "hex8 ... hex64, int, uint, long, ulong, hex or string)", t);
}

int dp_var_parse(const char *spec, struct dp_var_expr *out, struct dp_err *err)
{
	char expr[256];
	const char *p, *colon;
	unsigned derefs = 0;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	if (strncmp(spec, "var:", 4) || !spec[4])
		return dp_err_set(err, -EINVAL, "expected var:EXPR[:TYPE] (EXPR such as len, "
				  "req->len, cfg.opts[2] or *p)");
	p = spec + 4;
	colon = strchr(p, ':');
	len = colon ? (size_t)(colon - p) : strlen(p);
	if (len >= sizeof(expr))
		return dp_err_set(err, -EINVAL, "the expression is too long");
	memcpy(expr, p, len);
	expr[len] = '\0';
	if (colon) {
		ret = parse_type(colon + 1, out, err);
		if (ret)
			return ret;
	}
	p = expr;
	while (*p == '*') {
		derefs++;
		p++;
	}
	ret = ident(&p, out->root, err);
	if (!ret)
		ret = parse_path(p, out, err);
	for (unsigned i = 0; i < derefs && !ret; i++)
		ret = add_step(out, DP_VAR_DEREF, err);
	if (!ret)
		ret = field_name(out, derefs, err);
	return ret;
}

int dp_var_format(const struct dp_var_expr *e, char *buf, size_t size)
{
	char path[512];
	size_t len = 0, derefs = 0;

	len += (size_t)snprintf(path, sizeof(path), "%s", e->root);
	for (uint32_t i = 0; i < e->nsteps && len < sizeof(path); i++) {
		const struct dp_var_step *s = &e->steps[i];

		switch (s->kind) {
		case DP_VAR_MEMBER:
			len += (size_t)snprintf(path + len, sizeof(path) - len, ".%s", s->name);
			break;
		case DP_VAR_ARROW:
			len += (size_t)snprintf(path + len, sizeof(path) - len, "->%s", s->name);
			break;
		case DP_VAR_INDEX:
			len += (size_t)snprintf(path + len, sizeof(path) - len, "[%" PRId64 "]",
						s->index);
			break;
		default:
			derefs++;
			break;
		}
	}
	return snprintf(buf, size, "%.*s%s", (int)derefs, "****************", path);
}
