/*
 * What spec-resolve.c and spec-names.c share (not part of the folder's
 * contract): the functions C++ and Rust names mean in an object; and what
 * sdt.c borrows from ctx.c (register names) and spec-resolve.c (close
 * names for suggestions).
 */
#ifndef DP_SPEC_INTERNAL_H
#define DP_SPEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/*
 * A register name of s[0..len) (ctx.c's: rax..r15 and their 32-, 16- and
 * 8-bit views, rip, rflags...): its number (enum dp_ctx_reg), the width
 * the name reads and the bit it starts at (8 for ah..bh).
 */
bool spec_reg_lookup(const char *s, size_t len, uint8_t *reg, uint8_t *width, uint8_t *shift);

/* The 64-bit name of a register number (0..15, DP_CTX_REG_RIP). */
const char *spec_reg_name(unsigned reg);

/*
 * Writes " (did you mean 'a', 'b'?)" into buf for the names close to name
 * among those each(visit, visit_arg, arg) visits, "" when none is.
 */
typedef void (*spec_name_each)(spec_name_visit visit, void *visit_arg, void *arg);
void spec_suggest(const char *name, spec_name_each each, void *arg, char *buf, size_t size);

#endif /* DP_SPEC_INTERNAL_H */
