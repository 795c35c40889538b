/*
 * What spec-resolve.c and spec-names.c share (not part of the folder's
 * contract): the functions C++ and Rust names mean in an object.
 */
#ifndef DP_SPEC_INTERNAL_H
#define DP_SPEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct dp_object;
struct dp_function;

/* A growing list of functions, each once, ascending by start. */
struct fn_set {
	const struct dp_function **v;
	size_t n, cap;
};

/*
 * Adds to set the functions name means as written: those whose demangled
 * name, with or without its parameter list, is name (a compiler's clone
 * only by its full name, "f(int) [clone .part.0]").  0 (maybe none added),
 * or -errno.
 */
int spec_names_exact(struct dp_object *obj, const char *name, struct fn_set *set);

/*
 * Adds to set the functions whose symbol or demangled name (with or
 * without parameters) pattern matches (fnmatch(3)), .cold parts left out.
 */
int spec_names_match(struct dp_object *obj, const char *pattern, struct fn_set *set);

/* Adds fn (NULL: nothing).  0 or -ENOMEM. */
int fn_set_add(struct fn_set *set, const struct dp_function *fn);

/* Sorts set by start and drops repeats. */
void fn_set_finish(struct fn_set *set);

/*
 * How users see a function in lists: its demangled name, followed by
 * " [SYMBOL]" when another function of set has the same demangled name
 * (a constructor's variants).
 */
void spec_names_format(const struct fn_set *set, size_t i, char *buf, size_t size);

/* Every name of obj's functions, for suggestions: visit(arg, compare,
 * shown) for each symbol, and each demangled name with and without its
 * parameter list. */
typedef void (*spec_name_visit)(void *arg, const char *compare, const char *shown);
void spec_names_each(struct dp_object *obj, spec_name_visit visit, void *arg);

#endif /* DP_SPEC_INTERNAL_H */
