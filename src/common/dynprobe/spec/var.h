/*
 * Variables by name: the `var:EXPR[:TYPE]` and `args` context specs
 * (spec/ctx.h), parsed into access paths.  The daemon compiles a path into
 * a value recipe (spec/value.h) from the DWARF of the probed object at each
 * probe site (dwarf/dwarf-var.h); the CLI checks the syntax with the same
 * parser before any object is open.
 *
 *   var:EXPR              the value of EXPR at the probe site, typed from DWARF
 *   var:EXPR:TYPE         ... recorded as TYPE instead: an integer type of
 *                         the memory contexts (int8 ... uint64, hex8 ...
 *                         hex64, int, uint, long, ulong, hex) or string
 *   args                  every parameter of the function around the site
 *
 * EXPR is a C access path from a name in scope at the site:
 *   EXPR   := '*'* PATH
 *   PATH   := NAME ( '.' NAME | '->' NAME | '[' NUMBER ']' )*
 * `*` applies to the whole PATH, as in C (`*p->q` is `*(p->q)`); indexes are
 * constants (octal, decimal or hex).
 *
 * The field is named after EXPR: its names and indexes joined by '_', each
 * leading '*' a "deref_" in front: `len` -> len, `req->len` -> req_len,
 * `cfg.opts[2]` -> cfg_opts_2, `*p` -> deref_p.  A name longer than a
 * memory context's field name may be is refused.
 */
#ifndef DP_SPEC_VAR_H
#define DP_SPEC_VAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "spec/field.h"

#define DP_VAR_NAME_MAX 128	/* one identifier of EXPR */
#define DP_VAR_MAX_STEPS 16	/* members, indexes and derefs of one EXPR */

enum dp_var_step_kind {
	DP_VAR_MEMBER,		/* .NAME */
	DP_VAR_ARROW,		/* ->NAME */
	DP_VAR_INDEX,		/* [N] */
	DP_VAR_DEREF,		/* a leading '*', applied after the path */
};

struct dp_var_step {
	uint8_t kind;			/* enum dp_var_step_kind */
	int64_t index;			/* DP_VAR_INDEX */
	char name[DP_VAR_NAME_MAX];	/* DP_VAR_MEMBER, DP_VAR_ARROW */
};

/* What a var: context asks for. */
struct dp_var_expr {
	char root[DP_VAR_NAME_MAX];	/* the name looked up in scope */
	uint32_t nsteps;
	struct dp_var_step steps[DP_VAR_MAX_STEPS];	/* in evaluation order */
	char field[DP_FIELD_NAME_MAX];	/* the field's name */
	bool typed;			/* a :TYPE overrides DWARF's type */
	bool string;			/* ... string */
	struct dp_field_desc type;	/* ... an integer type (DP_FT_INT) */
};

/* Whether a spec is a `var:` one, and whether it is `args`. */
bool dp_var_is_var(const char *spec);
bool dp_var_is_args(const char *spec);

/*
 * Parses "var:EXPR[:TYPE]".  0, or -EINVAL with the reason in err (which
 * does not repeat the spec).
 */
int dp_var_parse(const char *spec, struct dp_var_expr *out, struct dp_err *err);

/* EXPR as C spells it again ("cfg.opts[2]"), for messages; snprintf's
 * return convention. */
int dp_var_format(const struct dp_var_expr *e, char *buf, size_t size);

#endif /* DP_SPEC_VAR_H */
