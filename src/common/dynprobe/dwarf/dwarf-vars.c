/*
 * Variables by name at a probe site (see dwarf-var.h): the scopes around
 * the PC, the name looked up innermost first, the access path applied to
 * its location and type, and the result as a value recipe.  Also `args`,
 * the typed return value, and the listing of what is visible at a site.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf-var-internal.h"
#include "spec/ctx.h"

#define MAX_SCOPES 48

/* The scopes containing a PC, outermost (the function) first; the CU
 * apart. */
struct scopes {
	Dwarf_Die cu;
	int n;
	Dwarf_Die v[MAX_SCOPES];
};

static bool is_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_inlined_subroutine;
}

static void descend(Dwarf_Die *parent, uint64_t pc, struct scopes *s)
{
	Dwarf_Die c;

	if (dwarf_child(parent, &c))
		return;
	do {
		int tag = dwarf_tag(&c);

		if (is_scope(tag) && dwarf_haspc(&c, pc) > 0) {
			if (s->n < MAX_SCOPES)
				s->v[s->n++] = c;
			descend(&s->v[s->n - 1], pc, s);
			return;
		}
		if (tag == DW_TAG_namespace || tag == DW_TAG_module)
			descend(&c, pc, s);
	} while (dwarf_siblingof(&c, &c) == 0);
}

static int scopes_at(const struct dp_dwarf_at *at, struct scopes *s, struct dp_err *err)
{
	memset(s, 0, sizeof(*s));
	if (!vi_cu_of(at->dbg, at->pc, &s->cu))
		return dp_err_set(err, -ENOENT, "no DWARF describes the code at 0x%" PRIx64
				  " (the object's debug information does not cover it)", at->pc);
	/* The function from the index (a walk of the CU's DIEs for each site
	 * was quadratic over a pattern), its inner scopes by walking it. */
	if (vi_scope_of(at->dbg, &s->cu, at->pc, &s->v[0])) {
		s->n = 1;
		descend(&s->v[0], at->pc, s);
	}
	return 0;
}

/* The innermost subprogram (its frame base) and the innermost function-like
 * scope (a subprogram or an inlined copy: whose parameters `args` means). */
static Dwarf_Die *innermost(struct scopes *s, bool inlined_too)
{
	for (int i = s->n - 1; i >= 0; i--) {
		int tag = dwarf_tag(&s->v[i]);

		if (tag == DW_TAG_subprogram || (inlined_too && tag == DW_TAG_inlined_subroutine))
			return &s->v[i];
	}
	return NULL;
}

static bool is_var(int tag)
{
	return tag == DW_TAG_variable || tag == DW_TAG_formal_parameter;
}

/* A variable named name among the children of scope: 1 found. */
static int child_named(Dwarf_Die *scope, const char *name, Dwarf_Die *var)
{
	Dwarf_Die c;

	if (dwarf_child(scope, &c))
		return 0;
	do {
		const char *n;

		if (!is_var(dwarf_tag(&c)))
			continue;
		n = dwarf_diename(&c);
		if (n && !strcmp(n, name)) {
			*var = c;
			return 1;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static bool defines(Dwarf_Die *v)
{
	return !dwarf_hasattr(v, DW_AT_declaration) &&
	       (dwarf_hasattr(v, DW_AT_location) || dwarf_hasattr_integrate(v, DW_AT_const_value));
}

/* Appends the names of scope's variables to buf (each once). */
static void scope_names(Dwarf_Die *scope, char *buf, size_t size, size_t *used)
{
	Dwarf_Die c;

	if (dwarf_child(scope, &c))
		return;
	do {
		const char *n = is_var(dwarf_tag(&c)) ? dwarf_diename(&c) : NULL;
		char quoted[DP_VAR_NAME_MAX + 4];

		if (!n || *used >= size)
			continue;
		snprintf(quoted, sizeof(quoted), "%s,", n);
		if (strstr(buf, quoted) == buf || (strstr(buf, quoted) && strstr(buf, quoted)[-1] == ' '))
			continue;
		*used += (size_t)snprintf(buf + *used, size - *used, "%s%s,", *used ? " " : "", n);
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* name's DIE in the scopes of s, innermost first, then the CU, then every
 * CU's globals.  -ENOENT listing the names in scope. */
static int lookup(const struct dp_dwarf_at *at, struct scopes *s, const char *name,
		  Dwarf_Die *var, struct dp_err *err)
{
	char names[700] = "";
	size_t used = 0;

	for (int i = s->n - 1; i >= 0; i--) {
		Dwarf_Attribute a;
		Dwarf_Die origin;

		if (child_named(&s->v[i], name, var))
			return 0;
		/* A parameter of an inlined copy left without a concrete DIE: the
		 * abstract one says it exists (and has no location here). */
		if (dwarf_attr(&s->v[i], DW_AT_abstract_origin, &a) &&
		    dwarf_formref_die(&a, &origin) && child_named(&origin, name, var))
			return 0;
	}
	if (vi_cu_var(at->dbg, &s->cu, name, var) && defines(var))
		return 0;
	if (vi_global_var(at->dbg, name, var))
		return 0;
	for (int i = s->n - 1; i >= 0; i--)
		scope_names(&s->v[i], names, sizeof(names), &used);
	if (used && names[used - 1] == ',')
		names[used - 1] = '\0';
	return dp_err_set(err, -ENOENT, "no variable '%s' at 0x%" PRIx64 " (in scope there: %s; "
			  "or a static or global variable)", name, at->pc,
			  used ? names : "no local variable or parameter");
}

/* ---- the access path -------------------------------------------------- */

struct vcur {
	struct vloc loc;	/* one part (size 0: whole), or pieces not chosen yet */
	Dwarf_Die type;		/* the type of what the path names so far */
	char what[256];		/* the path so far, for messages */
};

/* Narrows a value in pieces to a part of it that spans several (a struct
 * member that is itself a struct or an array): the pieces inside it, their
 * offsets from its start. */
static int cur_subpieces(struct vcur *c, uint64_t off, uint64_t size, struct dp_err *err)
{
	struct vloc sub = { 0 };

	for (uint32_t i = 0; i < c->loc.nparts; i++) {
		struct vpart *p = &c->loc.parts[i];
		uint64_t end = (uint64_t)p->off + p->size;

		if (end <= off || p->off >= off + size)
			continue;
		if (p->off < off || end > off + size)
			return dp_err_set(err, -EOPNOTSUPP, "'%s' lies across pieces of its "
					  "location (parts in different registers)", c->what);
		sub.parts[sub.nparts] = *p;
		sub.parts[sub.nparts++].off = (uint32_t)(p->off - off);
	}
	if (!sub.nparts)
		return dp_err_set(err, -ENODATA, "'%s' is optimized out here (no piece of its "
				  "location holds it)", c->what);
	c->loc = sub;
	return 0;
}

/* Narrows c to the bytes [off, off+size) of what it names. */
static int cur_select(struct vcur *c, uint64_t off, uint64_t size, struct dp_err *err)
{
	struct vpart *p = &c->loc.parts[0];
	uint64_t delta = off;

	if (c->loc.nparts > 1 || p->size) {
		uint32_t i;

		for (i = 0; i < c->loc.nparts; i++) {
			p = &c->loc.parts[i];
			if (p->off <= off && off + size <= (uint64_t)p->off + p->size)
				break;
		}
		if (i == c->loc.nparts)
			return cur_subpieces(c, off, size, err);
		if (p->kind == VPART_NONE)
			return dp_err_set(err, -ENODATA, "'%s' is optimized out here (that part of "
					  "the variable has no location)", c->what);
		if (p->kind == VPART_BAD)
			return dp_err_set(err, -EOPNOTSUPP, "'%s': %s", c->what, p->why);
		delta = off - p->off;
		c->loc.parts[0] = *p;
		c->loc.nparts = 1;
		p = &c->loc.parts[0];
		p->size = 0;
	}
	if (p->kind == VPART_ADDR)
		return delta ? vx_push(p, DP_VOP_ADDC, 0, (int64_t)delta, err) : 0;
	if (delta + size > 8)
		return dp_err_set(err, -EOPNOTSUPP, "'%s' is held in a register and lies beyond "
				  "its first 8 bytes", c->what);
	return delta ? vx_push(p, DP_VOP_SHR, (uint8_t)(delta * 8), 0, err) : 0;
}

/* Leaves the pointer c names as an address: c then names the pointee. */
static int cur_through(struct vcur *c, Dwarf_Die *pointee, struct dp_err *err)
{
	struct vpart *p;
	int ret = cur_select(c, 0, 8, err);

	if (ret)
		return ret;
	p = &c->loc.parts[0];
	if (p->kind == VPART_ADDR) {
		ret = vx_push(p, DP_VOP_DEREF, 8, 0, err);
		if (ret)
			return ret;
	}
	p->kind = VPART_ADDR;
	c->type = *pointee;
	return 0;
}

static int pointee_of(struct vcur *c, Dwarf_Die *t, Dwarf_Die *pointee, const char *doing,
		      struct dp_err *err)
{
	int tag = dwarf_tag(t);

	if (tag != DW_TAG_pointer_type && tag != DW_TAG_reference_type &&
	    tag != DW_TAG_rvalue_reference_type)
		return dp_err_set(err, -EINVAL, "'%s' is not a pointer: it cannot be %s", c->what,
				  doing);
	if (vt_type_of(t, pointee))
		return dp_err_set(err, -EINVAL, "'%s' is a void pointer: it cannot be %s",
				  c->what, doing);
	return 0;
}

/* Narrows c to a bit-field: the bytes holding it read (or the register
 * holding the struct), shifted to its first bit, extended from its width
 * as its type is signed or not.  c is a value then. */
static int cur_bits(struct vcur *c, Dwarf_Die *stype, uint64_t bitpos, uint32_t bits,
		    Dwarf_Die *mtype, struct dp_err *err)
{
	uint64_t first = bitpos / 8, need = (bitpos % 8 + bits + 7) / 8, size = 1, ssize;
	struct dp_field_desc fd;
	enum vt_kind kind;
	uint8_t flags;
	uint32_t maxlen;
	struct vpart *p;
	int ret;

	while (size < need)
		size *= 2;
	/* Never read past the struct: the bytes before the field will do. */
	if (!vt_size(stype, &ssize) && first + size > ssize && ssize >= size)
		first = ssize - size;
	if (vt_scalar(mtype, c->what, &kind, &fd, &flags, &maxlen, err) || kind != VT_INT)
		return dp_err_set(err, -EOPNOTSUPP, "'%s' is a bit-field of a type that cannot "
				  "be recorded", c->what);
	ret = cur_select(c, first, size, err);
	if (ret)
		return ret;
	p = &c->loc.parts[0];
	if (p->kind == VPART_ADDR)
		ret = vx_push(p, DP_VOP_DEREF, (uint8_t)size, 0, err);
	p->kind = VPART_VALUE;
	if (!ret && bitpos - first * 8)
		ret = vx_push(p, DP_VOP_SHR, (uint8_t)(bitpos - first * 8), 0, err);
	if (!ret)
		ret = vx_push(p, DP_VOP_BITS, (uint8_t)bits, fd.is_signed, err);
	return ret;
}

static int step_member(struct vcur *c, const struct dp_var_step *s, struct dp_err *err)
{
	Dwarf_Die t = c->type, mt;
	uint64_t off, msize, bitpos;
	uint32_t bits;
	int ret;

	vt_peel(&t);
	if (s->kind == DP_VAR_ARROW) {
		Dwarf_Die pointee;

		ret = pointee_of(c, &t, &pointee, "followed with ->", err);
		if (!ret)
			ret = cur_through(c, &pointee, err);
		if (ret)
			return ret;
		t = c->type;
		vt_peel(&t);
	} else if (dwarf_tag(&t) == DW_TAG_pointer_type) {
		return dp_err_set(err, -EINVAL, "'%s' is a pointer: write %s->%s", c->what,
				  c->what, s->name);
	}
	ret = vt_member(&t, s->name, c->what, &off, &mt, &bitpos, &bits, err);
	if (ret)
		return ret;
	if (bits) {
		ret = cur_bits(c, &t, bitpos, bits, &mt, err);
		c->type = mt;
		return ret;
	}
	if (vt_size(&mt, &msize)) {
		Dwarf_Die p = mt;

		vt_peel(&p);
		if (vt_size(&p, &msize))
			msize = 1;
	}
	ret = cur_select(c, off, msize, err);
	c->type = mt;
	return ret;
}

static int step_index(struct vcur *c, const struct dp_var_step *s, struct dp_err *err)
{
	Dwarf_Die t = c->type, elem;
	uint64_t elsize;
	int64_t count;
	int ret;

	vt_peel(&t);
	if (dwarf_tag(&t) == DW_TAG_array_type) {
		ret = vt_array(&t, &elem, &elsize, &count, err);
		if (ret)
			return ret;
		if (count >= 0 && s->index >= count)
			return dp_err_set(err, -EINVAL, "'%s' has %" PRId64 " elements: index %"
					  PRId64 " is past its end", c->what, count, s->index);
		ret = cur_select(c, (uint64_t)s->index * elsize, elsize, err);
		c->type = elem;
		return ret;
	}
	ret = pointee_of(c, &t, &elem, "indexed", err);
	if (!ret && vt_size(&elem, &elsize)) {
		Dwarf_Die p = elem;

		vt_peel(&p);
		if (vt_size(&p, &elsize))
			return dp_err_set(err, -EINVAL, "'%s' points to elements of unknown size",
					  c->what);
	}
	if (!ret)
		ret = cur_through(c, &elem, err);
	if (!ret && s->index)
		ret = vx_push(&c->loc.parts[0], DP_VOP_ADDC, 0, (int64_t)(s->index * elsize), err);
	return ret;
}

static int apply_path(struct vcur *c, const struct dp_var_expr *e, struct dp_err *err)
{
	size_t len = strlen(c->what);
	int ret = 0;

	for (uint32_t i = 0; i < e->nsteps && !ret; i++) {
		const struct dp_var_step *s = &e->steps[i];
		Dwarf_Die t = c->type, pointee;

		switch (s->kind) {
		case DP_VAR_MEMBER:
		case DP_VAR_ARROW:
			ret = step_member(c, s, err);
			len += (size_t)snprintf(c->what + len, sizeof(c->what) - len, "%s%s",
						s->kind == DP_VAR_MEMBER ? "." : "->", s->name);
			break;
		case DP_VAR_INDEX:
			ret = step_index(c, s, err);
			len += (size_t)snprintf(c->what + len, sizeof(c->what) - len, "[%" PRId64
						"]", s->index);
			break;
		case DP_VAR_DEREF:
			vt_peel(&t);
			ret = pointee_of(c, &t, &pointee, "dereferenced", err);
			if (!ret)
				ret = cur_through(c, &pointee, err);
			memmove(c->what + 1, c->what, len < sizeof(c->what) - 1 ? len + 1 : len);
			c->what[0] = '*';
			c->what[sizeof(c->what) - 1] = '\0';
			len++;
			break;
		}
		if (len >= sizeof(c->what))
			len = sizeof(c->what) - 1;
	}
	return ret;
}

/* ---- the recipe ------------------------------------------------------- */

static int emit_ops(struct dp_value *v, const struct vpart *p, struct dp_err *err)
{
	for (uint32_t i = 0; i < p->nops; i++) {
		int ret = dp_value_push(v, p->ops[i].op, p->ops[i].arg, p->ops[i].imm);

		if (ret)
			return dp_err_set(err, ret, "its location takes more than %d steps",
					  DP_VALUE_MAX_OPS);
	}
	return 0;
}

/* A value in pieces, whole: each part, then its PIECE. */
static int emit_pieces(struct dp_value *v, const struct vcur *c, struct dp_err *err)
{
	for (uint32_t i = 0; i < c->loc.nparts; i++) {
		const struct vpart *p = &c->loc.parts[i];
		int ret;

		if (p->kind == VPART_NONE)
			return dp_err_set(err, -ENODATA, "'%s' is partly optimized out here (a "
					  "piece of it has no location)", c->what);
		if (p->kind == VPART_BAD)
			return dp_err_set(err, -EOPNOTSUPP, "'%s': %s", c->what, p->why);
		if (p->off + p->size > 8)
			return dp_err_set(err, -EOPNOTSUPP, "'%s' is held in pieces over more than "
					  "8 bytes", c->what);
		ret = emit_ops(v, p, err);
		if (!ret && p->kind == VPART_ADDR) {
			if (p->size != 1 && p->size != 2 && p->size != 4 && p->size != 8)
				return dp_err_set(err, -EOPNOTSUPP, "'%s' has a piece of %u bytes in "
						  "memory", c->what, p->size);
			ret = dp_value_push(v, DP_VOP_DEREF, (uint8_t)p->size, 0);
		}
		if (!ret)
			ret = dp_value_push(v, DP_VOP_PIECE, (uint8_t)p->size, p->off);
		if (ret)
			return ret == -E2BIG ? dp_err_set(err, ret, "its location takes more than "
							  "%d steps", DP_VALUE_MAX_OPS) : ret;
	}
	v->loc = DP_VALUE_LOC_PIECES;
	return 0;
}

/* The string c names starts at the top of the stack: a pointer's value, or
 * an array in place. */
static int emit_string(struct dp_value *v, struct vcur *c, bool array, struct dp_err *err)
{
	struct vpart *p;
	int ret = cur_select(c, 0, array ? 1 : 8, err);

	if (ret)
		return ret;
	p = &c->loc.parts[0];
	if (array && p->kind != VPART_ADDR)
		return dp_err_set(err, -EOPNOTSUPP, "'%s' is an array held in registers: it has "
				  "no address to read a string at", c->what);
	ret = emit_ops(v, p, err);
	if (!ret && !array && p->kind == VPART_ADDR)
		ret = dp_value_push(v, DP_VOP_DEREF, 8, 0);
	v->loc = DP_VALUE_LOC_VALUE;
	return ret;
}

static int emit_scalar(struct dp_value *v, struct vcur *c, struct dp_err *err)
{
	if (c->loc.nparts > 1 || c->loc.parts[0].size)
		return emit_pieces(v, c, err);
	v->loc = c->loc.parts[0].kind == VPART_ADDR ? DP_VALUE_LOC_ADDR : DP_VALUE_LOC_VALUE;
	return emit_ops(v, &c->loc.parts[0], err);
}

/* The cursor's value as a context (its type, or the expression's). */
static int cur_ctx(struct vcur *c, const struct dp_var_expr *e, const char *field,
		   struct dp_ctx *out, struct dp_err *err)
{
	enum vt_kind kind = VT_INT;
	struct dp_field_desc fd;
	uint8_t flags = 0;
	uint32_t maxlen = 0;
	Dwarf_Die t = c->type;
	int ret;

	memset(out, 0, sizeof(*out));
	vt_peel(&t);
	if (e && e->typed) {
		if (e->string) {
			fd = (struct dp_field_desc){ .type = DP_FT_STRING };
			maxlen = DP_CTX_STRING_DEFAULT;
			kind = dwarf_tag(&t) == DW_TAG_array_type ? VT_STRING_ARRAY : VT_STRING_PTR;
		} else {
			fd = e->type;
		}
	} else {
		ret = vt_scalar(&t, c->what, &kind, &fd, &flags, &maxlen, err);
		if (ret)
			return ret;
	}
	out->kind = DP_CTX_VALUE;
	snprintf(out->name, sizeof(out->name), "%s", field);
	out->type = fd;
	out->maxlen = maxlen;
	out->value.flags = flags;
	if (kind == VT_STRING_PTR || kind == VT_STRING_ARRAY)
		ret = emit_string(&out->value, c, kind == VT_STRING_ARRAY, err);
	else
		ret = emit_scalar(&out->value, c, err);
	if (!ret)
		ret = dp_value_check(&out->value, &out->type, out->maxlen, err);
	return ret;
}

/* A variable's DIE at the site into c. */
static int cur_start(const struct dp_dwarf_at *at, struct scopes *s, Dwarf_Die *var,
		     const char *name, struct vcur *c, struct dp_err *err)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->what, sizeof(c->what), "%s", name);
	if (vt_type_of(var, &c->type))
		return dp_err_set(err, -EINVAL, "'%s' has no type in the DWARF", name);
	return vx_location(at, var, innermost(s, false), name, &c->loc, err);
}

int dp_dwarf_var_compile(const struct dp_dwarf_at *at, const struct dp_var_expr *e,
			 struct dp_ctx *out, struct dp_err *err)
{
	struct scopes *s = malloc(sizeof(*s));
	struct vcur c;
	Dwarf_Die var;
	int ret;

	if (!s)
		return dp_err_set(err, -ENOMEM, "out of memory");
	ret = scopes_at(at, s, err);
	if (!ret)
		ret = lookup(at, s, e->root, &var, err);
	if (!ret)
		ret = cur_start(at, s, &var, e->root, &c, err);
	if (!ret)
		ret = apply_path(&c, e, err);
	if (!ret)
		ret = cur_ctx(&c, e, e->field, out, err);
	free(s);
	return ret;
}

int dp_dwarf_args_compile(const struct dp_dwarf_at *at, struct dp_ctx *out, size_t max,
			  size_t *n, struct dp_err *err)
{
	struct scopes *s = malloc(sizeof(*s));
	Dwarf_Die *fn, c;
	int ret;

	*n = 0;
	if (!s)
		return dp_err_set(err, -ENOMEM, "out of memory");
	ret = scopes_at(at, s, err);
	fn = ret ? NULL : innermost(s, true);
	if (!ret && !fn)
		ret = dp_err_set(err, -ENOENT, "no function in the DWARF contains 0x%" PRIx64,
				 at->pc);
	if (!ret && dwarf_child(fn, &c) == 0) {
		do {
			const char *name = dwarf_diename(&c);
			char field[DP_FIELD_NAME_MAX];
			struct vcur cur;

			if (dwarf_tag(&c) != DW_TAG_formal_parameter)
				continue;
			if (*n >= max) {
				ret = dp_err_set(err, -E2BIG, "more than %zu parameters", max);
				break;
			}
			snprintf(field, sizeof(field), "%s", name ? name : "");
			if (!name || strlen(name) > DP_FIELD_NAME_MAX - 8)
				snprintf(field, sizeof(field), "arg%zu", *n + 1);
			ret = cur_start(at, s, &c, field, &cur, err);
			if (!ret)
				ret = cur_ctx(&cur, NULL, field, &out[*n], err);
			if (ret) {
				dp_err_prefix(err, "args: parameter %zu: ", *n + 1);
				break;
			}
			(*n)++;
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	free(s);
	return ret;
}

int dp_dwarf_ret_compile(const struct dp_dwarf_at *at, struct dp_ctx *out, struct dp_err *err)
{
	struct scopes *s = malloc(sizeof(*s));
	struct dp_field_desc fd;
	enum vt_kind kind;
	uint8_t flags;
	uint32_t maxlen;
	Dwarf_Die *fn, t;
	int ret;

	if (!s)
		return dp_err_set(err, -ENOMEM, "out of memory");
	ret = scopes_at(at, s, err);
	fn = ret ? NULL : innermost(s, true);
	if (!ret && (!fn || vt_type_of(fn, &t)))
		ret = -ENOENT;
	if (!ret && vt_scalar(&t, "the return value", &kind, &fd, &flags, &maxlen, NULL))
		ret = -ENOENT;
	free(s);
	if (ret)
		return ret == -ENOENT ? dp_err_set(err, -ENOENT, "no typed return value") : ret;
	memset(out, 0, sizeof(*out));
	out->kind = DP_CTX_VALUE;
	snprintf(out->name, sizeof(out->name), "ret");
	if (kind == VT_STRING_PTR || kind == VT_STRING_ARRAY)
		fd = (struct dp_field_desc){ .type = DP_FT_INT, .size = 8, .hex = true };
	out->type = fd;
	out->value.flags = flags;
	out->value.loc = DP_VALUE_LOC_VALUE;
	dp_value_push(&out->value, DP_VOP_REG, kind == VT_FLOAT ? DP_VALUE_XMM0 : 0, 0);
	return dp_value_check(&out->value, &out->type, 0, err);
}

/* ---- listing ---------------------------------------------------------- */

struct vlist {
	struct dp_dwarf_var_info *v;
	size_t n, cap;
};

/* A location's parts as text: "rbx, piece 0-4; rbp, piece 4-8". */
static int location_text(const struct vloc *l, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < l->nparts && used < size; k++) {
		const struct vpart *p = &l->parts[k];
		struct dp_value v = { .loc = p->kind == VPART_ADDR ? DP_VALUE_LOC_ADDR
								 : DP_VALUE_LOC_VALUE };
		char one[128] = "optimized out";

		if (p->kind == VPART_BAD)
			snprintf(one, sizeof(one), "cannot be read");
		else if (p->kind != VPART_NONE) {
			memcpy(v.ops, p->ops, p->nops * sizeof(p->ops[0]));
			v.nops = p->nops;
			dp_value_format(&v, one, sizeof(one));
		}
		if (p->size)
			used += (size_t)snprintf(buf + used, size - used, "%s%s, piece %u-%u",
						 k ? "; " : "", one, p->off, p->off + p->size);
		else
			used += (size_t)snprintf(buf + used, size - used, "%s", one);
	}
	return 0;
}

static void list_one(const struct dp_dwarf_at *at, struct scopes *s, Dwarf_Die *var,
		     const char *scope, struct vlist *l)
{
	const char *name = dwarf_diename(var);
	struct dp_dwarf_var_info *i;
	struct dp_err err = DP_ERR_INIT;
	struct dp_ctx ctx;
	struct vcur c;
	Dwarf_Die t;

	if (!name)
		return;
	for (size_t k = 0; k < l->n; k++)
		if (!strcmp(l->v[k].name, name))
			return;		/* hidden by an inner one */
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct dp_dwarf_var_info *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	i = &l->v[l->n++];
	memset(i, 0, sizeof(*i));
	snprintf(i->name, sizeof(i->name), "%s", name);
	snprintf(i->scope, sizeof(i->scope), "%s", scope);
	if (vt_type_of(var, &t))
		snprintf(i->type, sizeof(i->type), "void");
	else
		vt_name(&t, i->type, sizeof(i->type));
	if (cur_start(at, s, var, name, &c, &err)) {
		snprintf(i->where, sizeof(i->where), "%s", err.msg);
		return;
	}
	if (cur_ctx(&c, NULL, "v", &ctx, &err)) {
		/* A struct or an array: where it lives, member by member later. */
		if (err.code == -EINVAL && location_text(&c.loc, i->where, sizeof(i->where)) == 0) {
			i->available = true;
			return;
		}
		snprintf(i->where, sizeof(i->where), "%s", err.msg);
		return;
	}
	i->available = true;
	dp_value_format(&ctx.value, i->where, sizeof(i->where));
}

static void list_children(const struct dp_dwarf_at *at, struct scopes *s, Dwarf_Die *scope,
			  const char *label, bool cu, struct vlist *l)
{
	Dwarf_Die c;
	char buf[128];

	if (dwarf_child(scope, &c))
		return;
	do {
		int tag = dwarf_tag(&c);

		if (!is_var(tag) || (cu && !defines(&c)))
			continue;
		if (cu)
			label = dwarf_hasattr_integrate(&c, DW_AT_external) ? "global" : "CU static";
		else if (tag == DW_TAG_formal_parameter)
			snprintf(buf, sizeof(buf), "parameter%s", label);
		else
			snprintf(buf, sizeof(buf), "local%s", label);
		list_one(at, s, &c, cu ? label : buf, l);
	} while (dwarf_siblingof(&c, &c) == 0);
}

int dp_dwarf_vars_list(const struct dp_dwarf_at *at, struct dp_dwarf_var_info **v, size_t *n,
		       struct dp_err *err)
{
	struct scopes *s = malloc(sizeof(*s));
	struct vlist l = { 0 };
	int ret;

	*v = NULL;
	*n = 0;
	if (!s)
		return dp_err_set(err, -ENOMEM, "out of memory");
	ret = scopes_at(at, s, err);
	for (int i = s->n - 1; i >= 0 && !ret; i--) {
		char label[128] = "";
		int tag = dwarf_tag(&s->v[i]);

		if (tag == DW_TAG_lexical_block)
			snprintf(label, sizeof(label), " (block)");
		else if (tag == DW_TAG_inlined_subroutine)
			snprintf(label, sizeof(label), " of inlined %s",
				 dwarf_diename(&s->v[i]) ? dwarf_diename(&s->v[i]) : "?");
		list_children(at, s, &s->v[i], label, false, &l);
	}
	if (!ret)
		list_children(at, s, &s->cu, "", true, &l);
	free(s);
	*v = l.v;
	*n = l.n;
	return ret;
}
