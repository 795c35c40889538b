/*
 * The scope index of a cached DWARF (see dwarf-var-internal.h): what a
 * variable, `args` or a typed ret at a site needs found without walking
 * whole units.  A --function pattern over a program of one large CU asks
 * once per function; walking the CU's top-level DIEs each time made that
 * quadratic (10,000 functions: some 5e7 DIEs read).
 *
 * Built lazily and kept with the DWARF (dwarf-open.c's cache, keyed by
 * build-id or file identity): the CU offsets and ranges at the first query,
 * each CU's table of top-level scopes (address spans -> DIE) and top-level
 * variables (name -> DIE) at the first query into that CU, the defined
 * external variables of every CU at the first global looked up.  Each
 * answer is the one the unit walks gave: the first DIE in DIE order.
 * A Dwarf that is not the cache's, or memory that runs out, falls back to
 * those walks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "dwarf/dwarf-internal.h"
#include "dwarf/dwarf-var-internal.h"
#include "sorted.h"

/* An address span of a DIE: [lo, hi). */
struct dp_dwarf_span {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/* A named DIE. */
struct dp_dwarf_named {
	const char *name;	/* libdw's string (valid while the DWARF is open) */
	Dwarf_Off die;
};

/* Spans sorted by lo, with the highest hi of each prefix: the spans that
 * hold an address are found by walking down from the last one starting at
 * or below it, while a prefix may still reach it. */
struct spans {
	struct dp_dwarf_span *v;
	uint64_t *maxhi;
	size_t n, cap;
};

struct dp_dwarf_cuix {
	Dwarf_Off off;		/* the CU DIE's offset */
	bool done;
	int err;
	struct spans scopes;	/* top-level scopes (through namespaces) */
	struct dp_dwarf_named *vars;	/* first variable of each name, by name */
	size_t nvars;
};

struct dp_dwarf_index {
	struct dp_dwarf_cuix *cus;	/* by offset */
	size_t ncus;
	struct spans cu_spans;		/* every CU's ranges */
	bool globals_done;
	int globals_err;
	struct dp_dwarf_named *globals;	/* defined externals, the first CU's, by name */
	size_t nglobals;
};

static void spans_free(struct spans *s)
{
	free(s->v);
	free(s->maxhi);
	memset(s, 0, sizeof(*s));
}

static int spans_add(struct spans *s, uint64_t lo, uint64_t hi, Dwarf_Off die)
{
	if (lo >= hi)
		return 0;
	if (DP_ARRAY_RESERVE(s->v, s->cap, s->n, 64))
		return -ENOMEM;
	s->v[s->n++] = (struct dp_dwarf_span){ lo, hi, die };
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct dp_dwarf_span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->die < y->die ? -1 : x->die > y->die;
}

static int spans_seal(struct spans *s)
{
	qsort(s->v, s->n, sizeof(*s->v), span_cmp);
	s->maxhi = malloc((s->n ? s->n : 1) * sizeof(*s->maxhi));
	if (!s->maxhi)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		s->maxhi[i] = i && s->maxhi[i - 1] > s->v[i].hi ? s->maxhi[i - 1] : s->v[i].hi;
	return 0;
}

/* The first DIE (lowest offset) of the spans holding pc: true found. */
static bool spans_find(const struct spans *s, uint64_t pc, Dwarf_Off *die)
{
	size_t i = DP_BOUND(s->v, s->n, lo, pc, DP_BOUND_UPPER);
	bool found = false;

	while (i-- > 0 && s->maxhi[i] > pc) {
		if (pc < s->v[i].hi && (!found || s->v[i].die < *die)) {
			*die = s->v[i].die;
			found = true;
		}
	}
	return found;
}

/* Every range of die into s. */
static int spans_add_die(struct spans *s, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	Dwarf_Off at = dwarf_dieoffset(die);

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (spans_add(s, lo, hi, at))
			return -ENOMEM;
	return 0;
}

static int named_cmp(const void *a, const void *b)
{
	const struct dp_dwarf_named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->die < y->die ? -1 : x->die > y->die;
}

/* Sorted by name then DIE order, the first of each name kept. */
static void named_seal(struct dp_dwarf_named *v, size_t *n)
{
	size_t k = 0;

	qsort(v, *n, sizeof(*v), named_cmp);
	for (size_t i = 0; i < *n; i++)
		if (!k || strcmp(v[k - 1].name, v[i].name))
			v[k++] = v[i];
	*n = k;
}

static const struct dp_dwarf_named *named_find(const struct dp_dwarf_named *v, size_t n,
					       const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v[mid].name, name);

		if (!c)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool is_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_inlined_subroutine;
}

static bool is_var(int tag)
{
	return tag == DW_TAG_variable || tag == DW_TAG_formal_parameter;
}

/* ---- building ---------------------------------------------------------- */

static struct dp_dwarf_index *index_of(Dwarf *dbg)
{
	struct dp_dwarf *dw = dp_dwarf_of_handle(dbg);
	struct dp_dwarf_index *ix;
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	if (!dw)
		return NULL;
	if (dw->index || dw->index_err)
		return dw->index;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		goto fail;
	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu)) {
			if (DP_ARRAY_RESERVE(ix->cus, cap, ix->ncus, 64) ||
			    spans_add_die(&ix->cu_spans, &cu))
				goto fail;
			memset(&ix->cus[ix->ncus], 0, sizeof(ix->cus[0]));
			ix->cus[ix->ncus++].off = off + hsize;
		}
		off = next;
	}
	/* In file order already: binary searched by offset. */
	if (spans_seal(&ix->cu_spans))
		goto fail;
	dw->index = ix;
	return ix;
fail:
	dw->index_err = -ENOMEM;
	if (ix) {
		dw->index = ix;
		dp_dwarf_index_free(dw);
	}
	return NULL;
}

static int cu_walk(Dwarf_Die *parent, struct dp_dwarf_cuix *c, size_t *vcap, bool top)
{
	Dwarf_Die d;

	if (dwarf_child(parent, &d))
		return 0;
	do {
		int tag = dwarf_tag(&d);
		const char *name;

		if (is_scope(tag)) {
			if (spans_add_die(&c->scopes, &d))
				return -ENOMEM;
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
			if (cu_walk(&d, c, vcap, false))
				return -ENOMEM;
		} else if (top && is_var(tag) && (name = dwarf_diename(&d))) {
			if (DP_ARRAY_RESERVE(c->vars, *vcap, c->nvars, 32))
				return -ENOMEM;
			c->vars[c->nvars++] = (struct dp_dwarf_named){ name, dwarf_dieoffset(&d) };
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

static void cuix_free(struct dp_dwarf_cuix *c)
{
	spans_free(&c->scopes);
	free(c->vars);
	c->vars = NULL;
	c->nvars = 0;
}

/* The table of the CU at cu, built at its first query. */
static struct dp_dwarf_cuix *cuix_of(Dwarf *dbg, Dwarf_Die *cu)
{
	struct dp_dwarf_index *ix = index_of(dbg);
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct dp_dwarf_cuix *c;
	size_t i, vcap = 0;

	if (!ix)
		return NULL;
	i = DP_BOUND(ix->cus, ix->ncus, off, off, DP_BOUND_LOWER);
	if (i == ix->ncus || ix->cus[i].off != off)
		return NULL;
	c = &ix->cus[i];
	if (c->done)
		return c->err ? NULL : c;
	c->done = true;
	if (cu_walk(cu, c, &vcap, true) || spans_seal(&c->scopes)) {
		cuix_free(c);
		c->err = -ENOMEM;
		return NULL;
	}
	named_seal(c->vars, &c->nvars);
	return c;
}

/* ---- the walks, for a DWARF without an index ---------------------------- */

static bool walk_cu_of(Dwarf *dbg, uint64_t pc, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dbg, off + hsize, cu) && dwarf_haspc(cu, pc) > 0)
			return true;
		off = next;
	}
	return false;
}

static bool walk_scope_of(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *scope)
{
	Dwarf_Die c;

	if (dwarf_child(parent, &c))
		return false;
	do {
		int tag = dwarf_tag(&c);

		if (is_scope(tag) && dwarf_haspc(&c, pc) > 0) {
			*scope = c;
			return true;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_module) &&
		    walk_scope_of(&c, pc, scope))
			return true;
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

static bool walk_var_of(Dwarf_Die *scope, const char *name, Dwarf_Die *var)
{
	Dwarf_Die c;

	if (dwarf_child(scope, &c))
		return false;
	do {
		const char *n;

		if (!is_var(dwarf_tag(&c)))
			continue;
		n = dwarf_diename(&c);
		if (n && !strcmp(n, name)) {
			*var = c;
			return true;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/* ---- queries ------------------------------------------------------------ */

bool vi_cu_of(Dwarf *dbg, uint64_t pc, Dwarf_Die *cu)
{
	struct dp_dwarf_index *ix;
	Dwarf_Off off;

	if (dwarf_addrdie(dbg, pc, cu))
		return true;
	ix = index_of(dbg);
	if (!ix)
		return walk_cu_of(dbg, pc, cu);
	return spans_find(&ix->cu_spans, pc, &off) && dwarf_offdie(dbg, off, cu);
}

bool vi_scope_of(Dwarf *dbg, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *scope)
{
	struct dp_dwarf_cuix *c = cuix_of(dbg, cu);
	Dwarf_Off off;

	if (!c)
		return walk_scope_of(cu, pc, scope);
	return spans_find(&c->scopes, pc, &off) && dwarf_offdie(dbg, off, scope);
}

bool vi_cu_var(Dwarf *dbg, Dwarf_Die *cu, const char *name, Dwarf_Die *var)
{
	struct dp_dwarf_cuix *c = cuix_of(dbg, cu);
	const struct dp_dwarf_named *v;

	if (!c)
		return walk_var_of(cu, name, var);
	v = named_find(c->vars, c->nvars, name);
	return v && dwarf_offdie(dbg, v->die, var);
}

static bool defines(Dwarf_Die *v)
{
	return !dwarf_hasattr(v, DW_AT_declaration) &&
	       (dwarf_hasattr(v, DW_AT_location) || dwarf_hasattr_integrate(v, DW_AT_const_value));
}

/* What a global's lookup finds in one CU: its first variable of the name,
 * when that one is a defined external. */
static bool cu_global(Dwarf *dbg, Dwarf_Die *cu, const char *name, Dwarf_Die *var)
{
	return vi_cu_var(dbg, cu, name, var) && defines(var) &&
	       dwarf_hasattr_integrate(var, DW_AT_external);
}

static int globals_build(Dwarf *dbg, struct dp_dwarf_index *ix)
{
	size_t cap = 0;

	for (size_t i = 0; i < ix->ncus; i++) {
		struct dp_dwarf_cuix *c;
		Dwarf_Die cu, var;

		if (!dwarf_offdie(dbg, ix->cus[i].off, &cu) || !(c = cuix_of(dbg, &cu)))
			return -ENOMEM;
		for (size_t k = 0; k < c->nvars; k++) {
			if (!dwarf_offdie(dbg, c->vars[k].die, &var) || !defines(&var) ||
			    !dwarf_hasattr_integrate(&var, DW_AT_external))
				continue;
			if (DP_ARRAY_RESERVE(ix->globals, cap, ix->nglobals, 64))
				return -ENOMEM;
			ix->globals[ix->nglobals++] = c->vars[k];
		}
	}
	/* CUs in file order: the first CU's definition sorts first. */
	named_seal(ix->globals, &ix->nglobals);
	return 0;
}

bool vi_global_var(Dwarf *dbg, const char *name, Dwarf_Die *var)
{
	struct dp_dwarf_index *ix = index_of(dbg);
	const struct dp_dwarf_named *v;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	if (ix && !ix->globals_done) {
		ix->globals_done = true;
		ix->globals_err = globals_build(dbg, ix);
	}
	if (ix && !ix->globals_err) {
		v = named_find(ix->globals, ix->nglobals, name);
		return v && dwarf_offdie(dbg, v->die, var);
	}
	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dbg, off + hsize, &cu) && cu_global(dbg, &cu, name, var))
			return true;
		off = next;
	}
	return false;
}

void dp_dwarf_index_free(struct dp_dwarf *dw)
{
	struct dp_dwarf_index *ix = dw->index;

	if (!ix)
		return;
	for (size_t i = 0; i < ix->ncus; i++)
		cuix_free(&ix->cus[i]);
	free(ix->cus);
	spans_free(&ix->cu_spans);
	free(ix->globals);
	free(ix);
	dw->index = NULL;
}
