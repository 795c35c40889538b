/*
 * Locations resolved against an ELF object: the file address of ADDR |
 * SYMBOL | SYMBOL+OFFSET, checked to be an instruction boundary of a known
 * function, and the functions a --function location names (C++ and Rust
 * names through spec-names.c).  Errors name the file and say what would
 * work instead: close names (symbols and demangled) for a typo, "data, not
 * code" for a variable, the list of functions an overloaded name means,
 * the neighbouring boundaries for an offset inside an instruction.
 */
#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis.h"
#include "sorted.h"
#include "x86/insn.h"
#include "spec/spec-internal.h"
#include "spec/spec.h"

#define SUGGEST_MAX 3

int dp_spec_function_format(const struct dp_function *fn, char *buf, size_t size)
{
	/* C++ and Rust functions by the name their authors wrote. */
	if (fn->name && !dp_elf_demangle(fn->name, buf, size))
		return (int)strlen(buf);
	if (fn->name)
		return snprintf(buf, size, "%s", fn->name);
	return snprintf(buf, size, "the function at 0x%" PRIx64, fn->start);
}

/* Edit distance of a and b, or more than `bound` (cut short: only whether a
 * name is close matters). */
static size_t distance(const char *a, const char *b, size_t bound)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[DP_SPEC_SYMBOL_MAX + 1];

	if (la > DP_SPEC_SYMBOL_MAX || lb > DP_SPEC_SYMBOL_MAX)
		return bound + 1;
	if ((la > lb ? la - lb : lb - la) > bound)
		return bound + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0], best;

		row[0] = i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > bound)
			return bound + 1;
	}
	return row[lb];
}

/* The closest names so far. */
struct close_names {
	const char *name;
	size_t len, bound, n;
	const char *best[SUGGEST_MAX];
	size_t bestd[SUGGEST_MAX];
};

static void close_visit(void *arg, const char *cand, const char *shown)
{
	struct close_names *c = arg;
	size_t d, k;

	d = distance(c->name, cand, c->bound);
	/* A prefix match counts as close: "deflate" for "deflate_fast". */
	if (d > c->bound && !strncmp(cand, c->name, c->len) && strlen(cand) - c->len <= 12)
		d = c->bound;
	if (d > c->bound)
		return;
	for (k = 0; k < c->n; k++)
		if (!strcmp(c->best[k], shown))
			return;
	for (k = c->n; k > 0 && c->bestd[k - 1] > d; k--) {
		if (k < SUGGEST_MAX) {
			c->best[k] = c->best[k - 1];
			c->bestd[k] = c->bestd[k - 1];
		}
	}
	if (k < SUGGEST_MAX) {
		c->best[k] = shown;
		c->bestd[k] = d;
		if (c->n < SUGGEST_MAX)
			c->n++;
	}
}

void spec_suggest(const char *name, spec_name_each each, void *arg, char *buf, size_t size)
{
	struct close_names c = { .name = name, .len = strlen(name) };
	int used;

	c.bound = c.len < 4 ? 1 : c.len < 8 ? 2 : 3;
	buf[0] = '\0';
	each(close_visit, &c, arg);
	if (!c.n)
		return;
	used = snprintf(buf, size, " (did you mean");
	for (size_t k = 0; k < c.n && used > 0 && (size_t)used < size; k++)
		used += snprintf(buf + used, size - used, "%s '%s'", k ? "," : "", c.best[k]);
	if (used > 0 && (size_t)used < size)
		snprintf(buf + used, size - used, "?)");
}

static void names_each(spec_name_visit visit, void *visit_arg, void *obj)
{
	spec_names_each(obj, visit, visit_arg);
}

/* Appends " (did you mean 'a', 'b'?)" for names close to `name`: symbols,
 * and C++ and Rust names as written. */
static void suggest(struct dp_object *obj, const char *name, char *buf, size_t size)
{
	spec_suggest(name, names_each, obj, buf, size);
}

/* "foo+0x4" or "0x401134" for an address inside fn. */
static void format_in(const struct dp_function *fn, uint64_t vaddr, char *buf, size_t size)
{
	int n;

	if (!fn->name) {
		snprintf(buf, size, "0x%" PRIx64, vaddr);
		return;
	}
	n = dp_spec_function_format(fn, buf, size);
	if (n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n, "+0x%" PRIx64, vaddr - fn->start);
}

static int check_boundary(const struct dp_function *fn, const char *what, uint64_t vaddr,
			  struct dp_err *err)
{
	char fname[DP_SPEC_SYMBOL_MAX + 32], prev[DP_SPEC_SYMBOL_MAX + 32];
	char next[DP_SPEC_SYMBOL_MAX + 32];
	uint64_t off = vaddr - fn->start;
	size_t lo;

	if (dp_function_insn_index(fn, vaddr) >= 0)
		return 0;
	dp_spec_function_format(fn, fname, sizeof(fname));
	/* Past the first byte that did not decode, nothing is known. */
	if (!fn->ninsns ||
	    ((fn->flags & DP_FN_UNDECODED) && off > fn->insn_off[fn->ninsns - 1]))
		return dp_err_set(err, -EINVAL, "%s is in a part of %s that does not decode as "
				  "instructions: no probe can go there", what, fname);
	lo = DP_BOUND_KEYS(fn->insn_off, fn->ninsns, off, DP_BOUND_LOWER);
	/* insn_off[lo] is the first boundary after off (lo > 0: off 0 is one). */
	format_in(fn, fn->start + fn->insn_off[lo - 1], prev, sizeof(prev));
	if (lo < fn->ninsns) {
		format_in(fn, fn->start + fn->insn_off[lo], next, sizeof(next));
		return dp_err_set(err, -EINVAL, "%s is inside an instruction of %s: the nearest "
				  "instructions start at %s and %s", what, fname, prev, next);
	}
	return dp_err_set(err, -EINVAL, "%s is inside the last instruction of %s, which starts at "
			  "%s", what, fname, prev);
}

int dp_spec_symbol_find(struct dp_object *obj, const char *name, uint64_t *value, bool *code)
{
	Elf *e = dp_elf_handle(dp_object_elf(obj));

	if (!e)
		return -ENOENT;
	/* .symtab first: it has the local symbols .dynsym lacks. */
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			size_t n;

			if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB))
				continue;
			d = elf_getdata(scn, NULL);
			if (!d)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 1; i < n; i++) {
				GElf_Sym sym;
				const char *s;

				if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
					continue;
				s = elf_strptr(e, sh.sh_link, sym.st_name);
				if (!s || strcmp(s, name))
					continue;
				*value = sym.st_value;
				*code = dp_elf_code(dp_object_elf(obj), sym.st_value, 1) != NULL;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* Why no function has this name: data, or a typo (with close names). */
static int no_function(struct dp_object *obj, const char *path, const char *name,
		       struct dp_err *err)
{
	char hint[3 * DP_SPEC_SYMBOL_MAX];
	uint64_t value;
	bool code;

	if (!dp_spec_symbol_find(obj, name, &value, &code) && !code)
		return dp_err_set(err, -EINVAL, "symbol '%s' of %s is not executable (data at "
				  "0x%" PRIx64 "): probes go on functions", name, path, value);
	suggest(obj, name, hint, sizeof(hint));
	return dp_err_set(err, -ENOENT, "no function '%s' in %s%s", name, path,
			  hint[0] ? hint : " (none has a close name: nm lists the file's symbols)");
}

/* The functions a C++ or Rust name means as written, or a pattern (plain
 * or not) matches when no name is exactly it. */
static int names_collect(struct dp_object *obj, const char *path,
			 const struct dp_location *loc, struct fn_set *set, struct dp_err *err)
{
	const struct dp_function *fn;
	int ret = 0;

	if (loc->source) {
		fn = dp_object_function_by_name(obj, loc->symbol);
		ret = fn ? fn_set_add(set, fn) : spec_names_exact(obj, loc->symbol, set);
	}
	if (!ret && !set->n && loc->pattern)
		ret = spec_names_match(obj, loc->symbol, set);
	if (ret)
		return dp_err_set(err, ret, "cannot analyse %s: %s", path, strerror(-ret));
	fn_set_finish(set);
	return 0;
}

int dp_spec_functions_match(struct dp_object *obj, const char *path,
			    const struct dp_location *loc, const struct dp_function ***out,
			    size_t *nout, struct dp_err *err)
{
	struct fn_set set = { 0 };
	const struct dp_function *fn;
	int ret;

	*out = NULL;
	*nout = 0;
	/* One function: a symbol, an address, a name with an offset. */
	if (!loc->pattern && (!loc->source || loc->has_offset)) {
		ret = dp_spec_function_entry(obj, path, loc, &fn, err);
		if (ret)
			return ret;
		*out = malloc(sizeof(**out));
		if (!*out)
			return dp_err_set(err, -ENOMEM, "out of memory");
		(*out)[0] = fn;
		*nout = 1;
		return 0;
	}
	ret = names_collect(obj, path, loc, &set, err);
	if (ret)
		return ret;
	if (!set.n) {
		free(set.v);
		if (!loc->pattern)
			return no_function(obj, path, loc->symbol, err);
		return dp_err_set(err, -ENOENT, "no function of %s matches '%s' (lttng list -u "
				  "--path %s --functions lists them)", path, loc->symbol, path);
	}
	*out = set.v;
	*nout = set.n;
	return 0;
}

/* "'shop::Cart::add' names 2 functions of P: a, b: ..." */
static int ambiguous(const char *path, const struct dp_location *loc, const struct fn_set *set,
		     struct dp_err *err)
{
	char list[DP_ERR_MAX / 2], one[DP_SPEC_SYMBOL_MAX + 64];
	size_t used = 0;

	list[0] = '\0';
	for (size_t i = 0; i < set->n && used + 1 < sizeof(list); i++) {
		spec_names_format(set, i, one, sizeof(one));
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", one);
	}
	return dp_err_set(err, -EINVAL, "'%s' names %zu functions of %s: %s; give one with its "
			  "parameter list, or its symbol, or use --function for all",
			  loc->symbol, set->n, path, list);
}

/* The one function a C++ or Rust name means. */
static int source_find(struct dp_object *obj, const char *path, const struct dp_location *loc,
		       const struct dp_function **fnp, struct dp_err *err)
{
	struct fn_set set = { 0 };
	int ret = names_collect(obj, path, loc, &set, err);

	if (ret)
		return ret;
	if (set.n == 1)
		*fnp = set.v[0];
	else if (set.n > 1 && !loc->pattern)
		ret = ambiguous(path, loc, &set, err);
	else if (loc->pattern)
		ret = dp_err_set(err, -EINVAL, "'%s' is a pattern: it names functions for "
				 "--function, not one place (give a name, NAME+OFFSET or an "
				 "address)", loc->symbol);
	else
		ret = no_function(obj, path, loc->symbol, err);
	free(set.v);
	return ret;
}

int dp_spec_function_find(struct dp_object *obj, const char *path,
			  const struct dp_location *loc, const struct dp_function **fnp,
			  struct dp_err *err)
{
	char what[DP_SPEC_SYMBOL_MAX + 32];
	const struct dp_function *fn;
	int e;

	if (loc->kind == DP_LOC_LINE)
		return dp_err_set(err, -EINVAL, "'%s:%" PRIu32 "' is a source line: it goes with "
				  "--probe, not where a function is expected", loc->symbol,
				  loc->line);
	if (loc->source)
		return source_find(obj, path, loc, fnp, err);
	if (loc->pattern)
		return dp_err_set(err, -EINVAL, "'%s' is a pattern: it names functions for "
				  "--function, not one place (give a symbol, SYMBOL+OFFSET or an "
				  "address)", loc->symbol);

	if (loc->kind == DP_LOC_SYMBOL)
		fn = dp_object_function_by_name(obj, loc->symbol);
	else
		fn = dp_object_function_at(obj, loc->addr);
	if (fn) {
		*fnp = fn;
		return 0;
	}
	e = errno;
	if (e != ENOENT)
		return dp_err_set(err, -e, "cannot analyse %s: %s", path, strerror(e));
	if (loc->kind == DP_LOC_SYMBOL)
		return no_function(obj, path, loc->symbol, err);
	dp_spec_location_format(loc, what, sizeof(what));
	if (!dp_elf_code(dp_object_elf(obj), loc->addr, 1))
		return dp_err_set(err, -ENOENT, "%s is not inside any function of %s: it is not "
				  "executable (in no code section); addresses are the file's, as "
				  "nm prints them", what, path);
	return dp_err_set(err, -ENOENT, "%s is not inside any function of %s (addresses are the "
			  "file's, as nm prints them)", what, path);
}

int dp_spec_location_resolve(struct dp_object *obj, const char *path,
			     const struct dp_location *loc, uint64_t *vaddr,
			     const struct dp_function **fnp, struct dp_err *err)
{
	char what[DP_SPEC_SYMBOL_MAX + 32], fname[DP_SPEC_SYMBOL_MAX + 32];
	const struct dp_function *fn;
	uint64_t addr;
	int ret;

	ret = dp_spec_function_find(obj, path, loc, &fn, err);
	if (ret)
		return ret;
	dp_spec_location_format(loc, what, sizeof(what));
	if (loc->kind == DP_LOC_SYMBOL) {
		if (loc->offset >= fn->size) {
			dp_spec_function_format(fn, fname, sizeof(fname));
			return dp_err_set(err, -ERANGE, "%s is past the end of %s (%" PRIu64 " bytes: "
					  "offsets 0 to 0x%" PRIx64 ")", what, fname, fn->size,
					  fn->size - 1);
		}
		addr = fn->start + loc->offset;
	} else {
		addr = loc->addr;
	}
	if (check_boundary(fn, what, addr, err))
		return -EINVAL;
	*vaddr = addr;
	if (fnp)
		*fnp = fn;
	return 0;
}

int dp_spec_function_entry(struct dp_object *obj, const char *path,
			   const struct dp_location *loc, const struct dp_function **fnp,
			   struct dp_err *err)
{
	char what[DP_SPEC_SYMBOL_MAX + 32], fname[DP_SPEC_SYMBOL_MAX + 32];
	const struct dp_function *fn;
	uint64_t vaddr;
	int ret;

	ret = dp_spec_location_resolve(obj, path, loc, &vaddr, &fn, err);
	if (ret)
		return ret;
	if (vaddr != fn->start) {
		dp_spec_location_format(loc, what, sizeof(what));
		dp_spec_function_format(fn, fname, sizeof(fname));
		return dp_err_set(err, -EINVAL, "--function %s is not the start of a function (it "
				  "is inside %s): name the function, or use --probe", what, fname);
	}
	*fnp = fn;
	return 0;
}

bool dp_spec_return_leaves(struct dp_object *obj, const struct dp_function *fn,
			   const struct dp_ret_site *r)
{
	const struct dp_function *to;
	const uint8_t *b;
	struct dp_insn in;
	size_t len;

	if (r->kind != DP_RET_TAIL_JCC && r->kind != DP_RET_TAIL_JMP)
		return true;
	b = dp_elf_code(dp_object_elf(obj), r->addr, r->len);
	if (!fn->name || !b || dp_insn_decode(b, r->len, &in) || !(in.attr & DP_ATTR_REL))
		return true;
	to = dp_object_function_at(obj, dp_insn_target(&in, r->addr));
	len = strlen(fn->name);
	/* gcc names the cold part of f "f.cold" (and "f.part.0.cold"...). */
	return !to || !to->name || strncmp(to->name, fn->name, len) || to->name[len] != '.' ||
	       !strstr(to->name + len, ".cold");
}
