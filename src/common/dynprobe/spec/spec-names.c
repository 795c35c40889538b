/*
 * C++ and Rust names resolved against an object: which functions
 * "shop::Cart::add", "shop::Cart::add(int)" or 'shop::*' mean, through the
 * demangled names elf/ indexes once per object (dp_elf_names).  A name
 * without its parameter list means every overload, and every variant of a
 * constructor or destructor (C1/C2, D0/D1/D2), each function once.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "sorted.h"
#include "spec/spec-internal.h"
#include "spec/spec.h"

/* The analysed function of a symbol's range (the first at its start when
 * no range is equal: an FDE may have been merged). */
static const struct dp_function *function_of(struct dp_object *obj, uint64_t start,
					     uint64_t size)
{
	const struct dp_function *fns, *first = NULL;
	size_t n, lo;

	if (dp_object_functions(obj, &fns, &n))
		return NULL;
	lo = DP_BOUND(fns, n, start, start, DP_BOUND_LOWER);
	for (; lo < n && fns[lo].start == start; lo++) {
		if (fns[lo].size == size)
			return &fns[lo];
		if (!first)
			first = &fns[lo];
	}
	return first;
}

int fn_set_add(struct fn_set *set, const struct dp_function *fn)
{
	if (!fn)
		return 0;
	if (DP_ARRAY_RESERVE(set->v, set->cap, set->n, 16))
		return -ENOMEM;
	set->v[set->n++] = fn;
	return 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct dp_function *x = *(const struct dp_function *const *)a;
	const struct dp_function *y = *(const struct dp_function *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y;
}

void fn_set_finish(struct fn_set *set)
{
	size_t k = 0;

	if (!set->n)
		return;
	qsort(set->v, set->n, sizeof(*set->v), fn_cmp);
	/* One per start: aliases and a range's several names count once. */
	for (size_t i = 0; i < set->n; i++)
		if (!k || set->v[k - 1]->start != set->v[i]->start)
			set->v[k++] = set->v[i];
	set->n = k;
}

int spec_names_exact(struct dp_object *obj, const char *name, struct fn_set *set)
{
	const struct dp_elf_name *names;
	size_t n;
	int ret = dp_elf_names(dp_object_elf(obj), &names, &n);

	for (size_t i = 0; !ret && i < n; i++) {
		const struct dp_elf_name *e = &names[i];

		if (strcmp(e->full, name) && (e->clone || strcmp(e->base, name)))
			continue;
		ret = fn_set_add(set, function_of(obj, e->start, e->size));
	}
	return ret;
}

int spec_names_match(struct dp_object *obj, const char *pattern, struct fn_set *set)
{
	const struct dp_function *fns;
	const struct dp_elf_name *names;
	size_t n, nnames;
	int ret = dp_object_functions(obj, &fns, &n);

	if (!ret)
		ret = dp_elf_names(dp_object_elf(obj), &names, &nnames);
	for (size_t i = 0; !ret && i < n; i++)
		if (fns[i].name && !strstr(fns[i].name, ".cold") && !fnmatch(pattern, fns[i].name, 0))
			ret = fn_set_add(set, &fns[i]);
	for (size_t i = 0; !ret && i < nnames; i++) {
		const struct dp_elf_name *e = &names[i];

		if (strstr(e->symbol, ".cold") ||
		    (fnmatch(pattern, e->full, 0) && fnmatch(pattern, e->base, 0)))
			continue;
		ret = fn_set_add(set, function_of(obj, e->start, e->size));
	}
	return ret;
}

static void name_of(const struct dp_function *fn, char *buf, size_t size)
{
	if (dp_spec_function_format(fn, buf, size) < 0 && size)
		buf[0] = '\0';
}

void spec_names_format(const struct fn_set *set, size_t i, char *buf, size_t size)
{
	char other[DP_SPEC_SYMBOL_MAX];
	size_t len;

	name_of(set->v[i], buf, size);
	if (!set->v[i]->name || !strcmp(buf, set->v[i]->name))
		return;
	for (size_t k = 0; k < set->n; k++) {
		if (k == i)
			continue;
		name_of(set->v[k], other, sizeof(other));
		if (strcmp(other, buf))
			continue;
		len = strlen(buf);
		snprintf(buf + len, size - len, " [%s]", set->v[i]->name);
		return;
	}
}

void spec_names_each(struct dp_object *obj, spec_name_visit visit, void *arg)
{
	const struct dp_function *fns;
	const struct dp_elf_name *names;
	size_t n;

	if (dp_object_functions(obj, &fns, &n))
		return;
	for (size_t i = 0; i < n; i++)
		if (fns[i].name && (fns[i].flags & DP_FN_NAMED))
			visit(arg, fns[i].name, fns[i].name);
	if (dp_elf_names(dp_object_elf(obj), &names, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		if (names[i].clone)
			continue;
		visit(arg, names[i].base, names[i].base);
		visit(arg, names[i].full, names[i].full);
	}
}
