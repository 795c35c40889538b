/*
 * Inlined copies: every DW_TAG_inlined_subroutine of every CU, indexed by
 * the name its abstract origin leads to (libdw's dwarf_func_inline_instances
 * walks one CU only: a copy in another CU, with LTO, would be missed).  The
 * index holds names and DIE offsets; a copy's ranges, entry and call site
 * are read when a query first names it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf-internal.h"

#define MAX_DEPTH 256

struct walk {
	struct dp_dwarf_icopy *v;
	size_t n, cap;
	int err;
};

static bool descend(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_module:
		return true;
	default:
		return false;
	}
}

static const char *linkage_of(Dwarf_Die *die)
{
	Dwarf_Attribute at;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at))
		return dwarf_formstring(&at);
	if (dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		return dwarf_formstring(&at);
	return NULL;
}

static void add(struct walk *w, Dwarf_Die *die, Dwarf_Off caller)
{
	struct dp_dwarf_icopy *c;
	const char *name = dwarf_diename(die);

	if (!name)
		return;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct dp_dwarf_icopy *v = realloc(w->v, cap * sizeof(*v));

		if (!v) {
			w->err = -ENOMEM;
			return;
		}
		w->v = v;
		w->cap = cap;
	}
	c = &w->v[w->n++];
	c->name = name;
	c->linkage = linkage_of(die);
	c->die = dwarf_dieoffset(die);
	c->caller = caller;
	c->full = NULL;
}

/* The children of parent; fn is the innermost function around them. */
static void walk_children(struct walk *w, Dwarf_Die *parent, Dwarf_Off fn, int depth)
{
	Dwarf_Die child;

	if (depth > MAX_DEPTH || dwarf_child(parent, &child))
		return;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Off inner = fn;

		if (tag == DW_TAG_inlined_subroutine)
			add(w, &child, fn);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			inner = dwarf_dieoffset(&child);
		if (descend(tag) && dwarf_haschildren(&child))
			walk_children(w, &child, inner, depth + 1);
	} while (!w->err && !dwarf_siblingof(&child, &child));
}

static int by_name(const void *a, const void *b)
{
	const struct dp_dwarf_icopy *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->die < y->die ? -1 : x->die > y->die;
}

static int build(struct dp_dwarf *dw)
{
	struct walk w = { 0 };
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (!w.err && !dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw->dbg, off + hsize, &cu))
			walk_children(&w, &cu, 0, 0);
		off = next;
	}
	if (w.err) {
		free(w.v);
		return w.err;
	}
	if (w.n)
		qsort(w.v, w.n, sizeof(*w.v), by_name);
	dw->copies = w.v;
	dw->ncopies = w.n;
	return 0;
}

void dp_dwarf_inlines_free(struct dp_dwarf *dw)
{
	for (size_t i = 0; i < dw->ncopies; i++)
		if (dw->copies[i].full) {
			free((void *)dw->copies[i].full->ranges);
			free(dw->copies[i].full);
		}
	free(dw->copies);
}

/* ---- a copy's details -------------------------------------------------- */

static const char *call_file(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Word idx;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_attr(die, DW_AT_call_file, &at) || dwarf_formudata(&at, &idx) ||
	    !dwarf_diecu(die, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) ||
	    idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static int details(struct dp_dwarf *dw, struct dp_dwarf_icopy *c)
{
	struct dp_dwarf_inline *d;
	struct dp_dwarf_range *r = NULL;
	Dwarf_Addr base, lo, hi, low = UINT64_MAX;
	Dwarf_Attribute at;
	Dwarf_Word line;
	Dwarf_Die die, caller;
	ptrdiff_t off = 0;
	size_t n = 0, cap = 0;

	if (!dwarf_offdie(dw->dbg, c->die, &die))
		return -ELIBBAD;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->name = c->name;
	d->linkage = c->linkage;
	d->die = c->die;
	if (c->caller && dwarf_offdie(dw->dbg, c->caller, &caller)) {
		d->caller = dwarf_diename(&caller);
		d->caller_linkage = linkage_of(&caller);
	}
	d->call_file = call_file(&die);
	if (dwarf_attr(&die, DW_AT_call_line, &at) && !dwarf_formudata(&at, &line))
		d->call_line = (uint32_t)line;
	d->listed = dwarf_hasattr(&die, DW_AT_ranges);
	while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (n == cap) {
			struct dp_dwarf_range *v;

			cap = cap ? cap * 2 : 4;
			v = realloc(r, cap * sizeof(*v));
			if (!v) {
				free(r);
				free(d);
				return -ENOMEM;
			}
			r = v;
		}
		r[n++] = (struct dp_dwarf_range){ lo, hi };
		if (lo < low)
			low = lo;
	}
	d->ranges = r;
	d->nranges = (uint32_t)n;
	if (dwarf_attr(&die, DW_AT_entry_pc, &at)) {
		Dwarf_Addr a;
		Dwarf_Word k;

		if (!dwarf_formaddr(&at, &a) && a) {
			d->entry = a;
			d->entry_pc = true;
		} else if (n && !dwarf_formudata(&at, &k)) {
			/* DWARF 5: an offset from the copy's beginning */
			d->entry = low + k;
			d->entry_pc = true;
		}
	}
	if (!d->entry_pc && n)
		d->entry = r[0].lo;
	c->full = d;
	return 0;
}

/* ---- queries ----------------------------------------------------------- */

static int by_die(const void *a, const void *b)
{
	const struct dp_dwarf_inline *x = *(const struct dp_dwarf_inline *const *)a;
	const struct dp_dwarf_inline *y = *(const struct dp_dwarf_inline *const *)b;

	return x->die < y->die ? -1 : x->die > y->die;
}

/* A C++ (Itanium) or Rust (v0) mangled name. */
static bool mangled(const char *s)
{
	return s && s[0] == '_' && (s[1] == 'Z' || s[1] == 'R');
}

static int ensure(struct dp_dwarf *dw, struct dp_err *err)
{
	if (!dw->inl_done) {
		dw->inl_done = true;
		dw->inl_err = build(dw);
	}
	if (dw->inl_err)
		return dp_err_set(err, dw->inl_err, "reading the inlined functions of %s: %s",
				  dw->path, strerror(-dw->inl_err));
	return 0;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int dp_dwarf_inline_linkage_names(struct dp_dwarf *dw, const char ***names, size_t *n,
				  struct dp_err *err)
{
	const char **v;
	size_t k = 0, kept = 0;
	int ret = ensure(dw, err);

	*names = NULL;
	*n = 0;
	if (ret)
		return ret;
	v = malloc((dw->ncopies ? dw->ncopies : 1) * sizeof(*v));
	if (!v)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < dw->ncopies; i++)
		if (dw->copies[i].linkage)
			v[k++] = dw->copies[i].linkage;
	qsort(v, k, sizeof(*v), by_str);
	for (size_t i = 0; i < k; i++)
		if (!kept || strcmp(v[kept - 1], v[i]))
			v[kept++] = v[i];
	*names = v;
	*n = kept;
	return 0;
}

int dp_dwarf_inlines(struct dp_dwarf *dw, const char *name,
		     const struct dp_dwarf_inline ***out, size_t *n, struct dp_err *err)
{
	const struct dp_dwarf_inline **v;
	size_t lo = 0, hi, k = 0, nmatch = 0;
	int ret;

	*out = NULL;
	*n = 0;
	ret = ensure(dw, err);
	if (ret)
		return ret;
	hi = dw->ncopies;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(dw->copies[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + nmatch < dw->ncopies && !strcmp(dw->copies[lo + nmatch].name, name))
		nmatch++;
	/* A linkage name (C++, Rust): the index is by DW_AT_name, so scan. */
	if (!nmatch)
		for (size_t i = 0; i < dw->ncopies; i++)
			if (dw->copies[i].linkage && !strcmp(dw->copies[i].linkage, name))
				k++;
	v = malloc((nmatch + k + 1) * sizeof(*v));
	if (!v)
		return dp_err_set(err, -ENOMEM, "out of memory");
	k = 0;
	for (size_t i = 0; i < dw->ncopies; i++) {
		struct dp_dwarf_icopy *c = &dw->copies[i];

		if (nmatch && i < lo)
			i = lo, c = &dw->copies[i];
		if (nmatch && i >= lo + nmatch)
			break;
		if (!nmatch && !(c->linkage && !strcmp(c->linkage, name)))
			continue;
		/* A C++ member's DW_AT_name is unqualified ("add"): a function
		 * with a mangled linkage name is named by it alone.  (A C
		 * function's asm label, glibc's __GI_ names, is no mangling.) */
		if (nmatch && mangled(c->linkage) && strcmp(c->linkage, name))
			continue;
		if (!c->full && (ret = details(dw, c))) {
			free(v);
			return dp_err_set(err, ret, "reading an inlined copy of %s in %s: %s", name,
					  dw->path, strerror(-ret));
		}
		v[k++] = c->full;
	}
	qsort(v, k, sizeof(*v), by_die);
	*out = v;
	*n = k;
	return 0;
}
