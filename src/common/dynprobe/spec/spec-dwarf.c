/*
 * Source lines and inlined copies, from DWARF to probe sites: which
 * addresses a FILE:LINE means, and where each inlined copy of a function
 * is entered and left.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "spec/spec.h"
#include "x86/insn.h"

static int get_dwarf(struct dp_object *obj, struct dp_dwarf **dw, struct dp_err *err)
{
	struct dp_elf *elf = dp_object_elf(obj);

	if (!elf)
		return dp_err_set(err, -EINVAL, "no ELF object");
	return dp_dwarf_get(elf, dw, err);
}

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p ? p : "?";
}

int dp_spec_source_file(struct dp_object *obj, const char *path, const char *name,
			const char **file, struct dp_err *err)
{
	struct dp_dwarf *dw;
	const char **files;
	size_t n;
	int ret = get_dwarf(obj, &dw, err);

	if (!ret)
		ret = dp_dwarf_files(dw, name, &files, &n, err);
	if (ret)
		return ret;
	if (n > 1) {
		char list[DP_ERR_MAX / 2];
		size_t used = 0;

		list[0] = '\0';
		for (size_t i = 0; i < n && used + 1 < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 i ? ", " : "", files[i]);
		free(files);
		return dp_err_set(err, -EINVAL, "source file '%s' is ambiguous in %s: %zu files "
				  "match (%s); give more of its path", name, path, n, list);
	}
	*file = files[0];
	free(files);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "line 42 of F has no code ...: the nearest lines with code are 40 and 44" */
static int no_code(struct dp_dwarf *dw, const char *file, uint32_t line, struct dp_err *err)
{
	const struct dp_dwarf_row *rows;
	size_t n;
	uint32_t below = 0, above = 0;
	char near[96] = "";

	if (line > 1 && !dp_dwarf_file_rows(dw, file, 1, line - 1, &rows, &n, NULL) && n)
		below = rows[n - 1].line;
	if (!dp_dwarf_file_rows(dw, file, line + 1, UINT32_MAX, &rows, &n, NULL) && n)
		above = rows[0].line;
	if (below && above)
		snprintf(near, sizeof(near), "the nearest lines with code are %" PRIu32 " and %"
			 PRIu32, below, above);
	else if (below || above)
		snprintf(near, sizeof(near), "the nearest line with code is %" PRIu32,
			 below ? below : above);
	else
		snprintf(near, sizeof(near), "no line of it has code");
	return dp_err_set(err, -ENOENT, "line %" PRIu32 " of %s has no code (no statement starts "
			  "there, or the compiler removed it): %s (lttng list -u --path P --lines "
			  "%s lists them)", line, file, near, base(file));
}

/* Other lines sharing addr, appended to note. */
static void shared_note(struct dp_dwarf *dw, const char *file, uint32_t line, uint64_t addr,
			char *note, size_t size)
{
	const struct dp_dwarf_row **at;
	size_t n, used = strlen(note);

	if (!note || dp_dwarf_rows_at(dw, addr, &at, &n))
		return;
	for (size_t i = 0; i < n && used + 1 < size; i++) {
		bool dup = false;

		if (at[i]->file == file && at[i]->line == line)
			continue;
		for (size_t k = 0; k < i; k++)
			dup |= at[k]->file == at[i]->file && at[k]->line == at[i]->line;
		if (dup)
			continue;
		used += (size_t)snprintf(note + used, size - used, "%s0x%" PRIx64 " is also line %"
					 PRIu32 " of %s", used ? "; " : "", addr, at[i]->line,
					 base(at[i]->file));
	}
	free(at);
}

int dp_spec_line_resolve(struct dp_object *obj, const char *path, const struct dp_location *loc,
			 uint64_t **addrs, size_t *nout, char *note, size_t note_size,
			 struct dp_err *err)
{
	const struct dp_dwarf_row *rows;
	struct dp_dwarf *dw;
	const char *file;
	uint64_t *v;
	size_t n, k = 0, kept = 0;
	int ret;

	*addrs = NULL;
	*nout = 0;
	if (note && note_size)
		note[0] = '\0';
	ret = get_dwarf(obj, &dw, err);
	if (!ret)
		ret = dp_spec_source_file(obj, path, loc->symbol, &file, err);
	if (!ret)
		ret = dp_dwarf_file_rows(dw, file, loc->line, loc->line, &rows, &n, err);
	if (ret)
		return ret;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return dp_err_set(err, -ENOMEM, "out of memory");
	/* A block of the line table ends where its function does too: the
	 * .cold parts of three callers can follow each other in one sequence. */
	for (size_t i = 0; i < n; i++)
		if (rows[i].block || (i && dp_object_function_at(obj, rows[i].addr) !=
					     dp_object_function_at(obj, rows[i - 1].addr)))
			v[k++] = rows[i].addr;
	qsort(v, k, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < k; i++) {
		const struct dp_function *fn;

		if (kept && v[kept - 1] == v[i])
			continue;
		fn = dp_object_function_at(obj, v[i]);
		/* Code no function holds, or not at an instruction (a row of
		 * a discarded section): nothing to probe there. */
		if (!fn || dp_function_insn_index(fn, v[i]) < 0)
			continue;
		v[kept++] = v[i];
	}
	if (!kept) {
		free(v);
		return no_code(dw, file, loc->line, err);
	}
	if (note)
		for (size_t i = 0; i < kept; i++)
			shared_note(dw, file, loc->line, v[i], note, note_size);
	*addrs = v;
	*nout = kept;
	return 0;
}

/* ---- inlined copies ---------------------------------------------------- */

int dp_spec_copy_format(const struct dp_dwarf_inline *inl, char *buf, size_t size)
{
	char caller[DP_SPEC_SYMBOL_MAX];
	const char *who = inl && inl->caller ? inl->caller : "?";

	if (!inl)
		return snprintf(buf, size, "out of line");
	/* A C++ or Rust caller by its qualified name. */
	if (inl->caller_linkage &&
	    !dp_elf_demangle_base(inl->caller_linkage, caller, sizeof(caller)))
		who = caller;
	if (inl->call_file && inl->call_line)
		return snprintf(buf, size, "inlined into %s at %s:%" PRIu32, who,
				base(inl->call_file), inl->call_line);
	return snprintf(buf, size, "inlined into %s", who);
}

const char *dp_spec_ret_how_str(uint8_t how)
{
	switch (how) {
	case DP_SPEC_RET_AFTER: return "first instruction after the copy";
	case DP_SPEC_RET_INSN: return "the instruction that leaves";
	case DP_SPEC_RET_STEPPED: return "last instruction of a range";
	}
	return "?";
}

/* Whether addr lies in one of the copy's ranges. */
static bool in_copy(const struct dp_dwarf_inline *inl, uint64_t addr)
{
	for (uint32_t r = 0; r < inl->nranges; r++)
		if (addr >= inl->ranges[r].lo && addr < inl->ranges[r].hi)
			return true;
	return false;
}

/*
 * Whether addr is in the copy's body: one of its ranges, but not one that
 * lies before the entry in the entry's function (code the compiler moved
 * ahead of the entry, which the next call runs before entering).
 */
static bool in_body(struct dp_object *obj, const struct dp_dwarf_inline *inl, uint64_t addr)
{
	const struct dp_function *fe = dp_object_function_at(obj, inl->entry);

	for (uint32_t r = 0; r < inl->nranges; r++) {
		const struct dp_dwarf_range *rg = &inl->ranges[r];

		if (addr < rg->lo || addr >= rg->hi)
			continue;
		return !(rg->hi <= inl->entry && fe && rg->lo >= fe->start &&
			 rg->lo < fe->start + fe->size);
	}
	return false;
}

/* Whether addr starts an instruction of a known function. */
static bool boundary(struct dp_object *obj, uint64_t addr, const struct dp_function **fnp)
{
	const struct dp_function *fn = dp_object_function_at(obj, addr);

	if (fnp)
		*fnp = fn;
	return fn && dp_function_insn_index(fn, addr) >= 0;
}

/* ---- a bounded walk over instructions ---- */

#define WALK_MAX 16384

struct walk {
	uint64_t *todo, *seen;		/* seen: open addressing, 0 = free */
	size_t ntodo, cap;
};

static int walk_init(struct walk *w)
{
	w->cap = 2 * WALK_MAX;
	w->ntodo = 0;
	w->todo = malloc(WALK_MAX * sizeof(*w->todo));
	w->seen = calloc(w->cap, sizeof(*w->seen));
	return w->todo && w->seen ? 0 : -ENOMEM;
}

static void walk_release(struct walk *w)
{
	free(w->todo);
	free(w->seen);
}

/* Marks addr seen: true when it was not. */
static bool walk_see(struct walk *w, uint64_t addr, size_t *nseen)
{
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (w->cap - 1);

	while (w->seen[i]) {
		if (w->seen[i] == addr)
			return false;
		i = (i + 1) & (w->cap - 1);
	}
	w->seen[i] = addr;
	(*nseen)++;
	return true;
}

static void walk_push(struct walk *w, uint64_t addr)
{
	if (w->ntodo < WALK_MAX)
		w->todo[w->ntodo++] = addr;
}

/* The instruction at addr and where control goes after it: next[0..n)
 * (fall-through last).  -errno when it cannot be decoded. */
static int successors(struct dp_object *obj, uint64_t addr, struct dp_insn *insn, uint64_t next[2],
		      size_t *n, bool *falls)
{
	const struct dp_function *fn = dp_object_function_at(obj, addr);
	const uint8_t *bytes;
	uint64_t avail;

	*n = 0;
	*falls = false;
	if (!fn)
		return -ENOENT;
	avail = fn->start + fn->size - addr;
	avail = avail > 15 ? 15 : avail;
	bytes = dp_elf_code(dp_object_elf(obj), addr, avail);
	if (!bytes || dp_insn_decode(bytes, avail, insn))
		return -EINVAL;
	switch (insn->flow) {
	case DP_FLOW_JMP:
		next[(*n)++] = dp_insn_target(insn, addr);
		break;
	case DP_FLOW_JCC:
	case DP_FLOW_LOOP:
	case DP_FLOW_XBEGIN:
		next[(*n)++] = dp_insn_target(insn, addr);
		next[(*n)++] = addr + insn->len;
		*falls = true;
		break;
	case DP_FLOW_RET:
	case DP_FLOW_JMP_IND:
	case DP_FLOW_FAR:
	case DP_FLOW_UD:
	case DP_FLOW_INT:
	case DP_FLOW_TRAP:
		break;
	default:
		next[(*n)++] = addr + insn->len;
		*falls = true;
		break;
	}
	return 0;
}

/*
 * Whether control that left the copy for `from` can come back into it
 * without a new entry: a walk over the code from there (fall-through and
 * direct branches, stopping at the copy's entry and at returns) meets its
 * body (in_body); each place it comes back to is pushed on the copy's own
 * walk.  A partially inlined function leaves its copy to set up
 * the call of its .part and comes back for the call: that is no exit.
 * Unsure (the walk too long, code that does not decode): no.
 */
static bool reenters(struct dp_object *obj, const struct dp_dwarf_inline *inl, uint64_t from,
		     struct walk *copy)
{
	struct walk w;
	size_t nseen = 0;
	bool back = false;

	if (walk_init(&w)) {
		walk_release(&w);
		return false;
	}
	walk_push(&w, from);
	while (w.ntodo && nseen < WALK_MAX) {
		uint64_t a = w.todo[--w.ntodo], next[2];
		struct dp_insn insn;
		size_t n;
		bool falls;

		if (a == inl->entry || !walk_see(&w, a, &nseen))
			continue;
		if (in_body(obj, inl, a)) {
			/* The copy's walk goes on from where control comes back. */
			walk_push(copy, a);
			back = true;
			continue;
		}
		if (successors(obj, a, &insn, next, &n, &falls))
			continue;
		for (size_t k = 0; k < n; k++)
			walk_push(&w, next[k]);
	}
	walk_release(&w);
	return back;
}

static int add_ret(struct dp_spec_copy *c, uint64_t addr, uint8_t how)
{
	for (uint32_t k = 0; k < c->nrets; k++)
		if (c->rets[k] == addr)
			return 0;
	if (c->nrets == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 4;
		uint64_t *rets = realloc(c->rets, cap * sizeof(*rets));
		uint8_t *hows;

		if (!rets)
			return -ENOMEM;
		c->rets = rets;
		hows = realloc(c->how, cap * sizeof(*hows));
		if (!hows)
			return -ENOMEM;
		c->how = hows;
		c->cap = cap;
	}
	c->rets[c->nrets] = addr;
	c->how[c->nrets++] = how;
	return 0;
}

/*
 * The exits of a copy, from a walk of its code from the entry: a ret, a
 * jmp that leaves for good (the jmp itself), a taken branch that leaves
 * (its target), a fall-through off a range's end (the caller's next
 * instruction, or the copy's last one when the range ends its function).
 * 0, or -errno when the walk cannot be made (the caller then uses the
 * ranges' ends).
 */
static int exits(struct dp_object *obj, struct dp_spec_copy *c)
{
	const struct dp_dwarf_inline *inl = c->inl;
	struct walk w;
	size_t nseen = 0;
	int ret = walk_init(&w);

	if (!ret)
		walk_push(&w, inl->entry);
	while (!ret && w.ntodo) {
		uint64_t a = w.todo[--w.ntodo], next[2];
		const struct dp_function *fa, *fn;
		struct dp_insn insn;
		size_t n;
		bool falls;

		if (!walk_see(&w, a, &nseen))
			continue;
		if (nseen >= WALK_MAX) {
			ret = -E2BIG;
			break;
		}
		ret = successors(obj, a, &insn, next, &n, &falls);
		if (ret)
			break;
		if (insn.flow == DP_FLOW_RET) {
			ret = add_ret(c, a, DP_SPEC_RET_INSN);
			continue;
		}
		fa = dp_object_function_at(obj, a);
		for (size_t k = 0; k < n && !ret; k++) {
			uint64_t t = next[k];
			bool fall = falls && k == n - 1;

			if (in_copy(inl, t)) {
				walk_push(&w, t);
				continue;
			}
			if (reenters(obj, inl, t, &w))
				continue;
			if (insn.flow == DP_FLOW_JMP)
				ret = add_ret(c, a, DP_SPEC_RET_INSN);
			else if (boundary(obj, t, &fn) && (!fall || fn == fa))
				ret = add_ret(c, t, DP_SPEC_RET_AFTER);
			else
				ret = add_ret(c, a, fall ? DP_SPEC_RET_STEPPED : DP_SPEC_RET_INSN);
		}
	}
	walk_release(&w);
	return ret;
}

/* The last instruction of fn starting in [lo, hi), or 0. */
static uint64_t last_insn(const struct dp_function *fn, uint64_t lo, uint64_t hi)
{
	uint64_t best = 0;

	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t a = fn->start + fn->insn_off[i];

		if (a >= hi)
			break;
		if (a >= lo)
			best = a;
	}
	return best;
}

/* kinst's rules, when the code cannot be walked: per range, its end, or
 * its last instruction when the end is not the same function's, for the
 * last range of a DW_AT_ranges list, and for low/high pc bounds. */
static int range_ends(struct dp_object *obj, struct dp_spec_copy *c)
{
	const struct dp_dwarf_inline *inl = c->inl;
	int ret = 0;

	c->nrets = 0;
	for (uint32_t r = 0; r < inl->nranges && !ret; r++) {
		uint64_t lo = inl->ranges[r].lo, hi = inl->ranges[r].hi, at = hi;
		const struct dp_function *rf = dp_object_function_at(obj, lo);
		bool step;

		if (!rf || in_copy(inl, hi))
			continue;	/* falls into another range of the copy */
		step = !inl->listed || r + 1 == inl->nranges || hi >= rf->start + rf->size ||
		       dp_function_insn_index(rf, hi) < 0;
		if (step)
			at = last_insn(rf, lo, hi);
		if (at)
			ret = add_ret(c, at, step ? DP_SPEC_RET_STEPPED : DP_SPEC_RET_AFTER);
	}
	return ret;
}

static int place(struct dp_object *obj, struct dp_spec_copy *c)
{
	const struct dp_dwarf_inline *inl = c->inl;
	const struct dp_function *fn;
	int ret;

	if (!inl->nranges) {
		snprintf(c->why, sizeof(c->why), "no address: the copy was optimized away");
		return 0;
	}
	if (!inl->entry) {
		snprintf(c->why, sizeof(c->why), "no entry address");
		return 0;
	}
	if (!boundary(obj, inl->entry, &fn)) {
		snprintf(c->why, sizeof(c->why), fn ? "its entry 0x%" PRIx64 " is inside an "
			 "instruction" : "its entry 0x%" PRIx64 " is in no known function",
			 inl->entry);
		return 0;
	}
	c->entry = inl->entry;
	ret = exits(obj, c);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		c->walked = false;
		return range_ends(obj, c);
	}
	c->walked = true;
	return 0;
}

static int by_die(const void *a, const void *b)
{
	const struct dp_dwarf_inline *x = *(const struct dp_dwarf_inline *const *)a;
	const struct dp_dwarf_inline *y = *(const struct dp_dwarf_inline *const *)b;

	return x->die < y->die ? -1 : x->die > y->die;
}

/*
 * The copies a C++ or Rust name as written means: those of every linkage
 * name whose demangled name, with or without its parameter list, is it.
 */
static int source_copies(struct dp_dwarf *dw, const char *name,
			 const struct dp_dwarf_inline ***out, size_t *nout, struct dp_err *err)
{
	const struct dp_dwarf_inline **all = NULL, **v, **grown;
	const char **names;
	size_t nnames, n, total = 0;
	char full[DP_SPEC_SYMBOL_MAX * 2], base_name[DP_SPEC_SYMBOL_MAX * 2];
	int ret = dp_dwarf_inline_linkage_names(dw, &names, &nnames, err);

	for (size_t i = 0; !ret && i < nnames; i++) {
		if (dp_elf_demangle(names[i], full, sizeof(full)) ||
		    dp_elf_demangle_base(names[i], base_name, sizeof(base_name)) ||
		    (strcmp(full, name) && strcmp(base_name, name)))
			continue;
		ret = dp_dwarf_inlines(dw, names[i], &v, &n, err);
		if (ret)
			break;
		grown = n ? realloc(all, (total + n) * sizeof(*all)) : all;
		if (n && !grown) {
			free(v);
			ret = dp_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		all = grown;
		if (n)
			memcpy(all + total, v, n * sizeof(*v));
		total += n;
		free(v);
	}
	free(names);
	if (ret) {
		free(all);
		return ret;
	}
	if (total)
		qsort(all, total, sizeof(*all), by_die);
	*out = all;
	*nout = total;
	return 0;
}

int dp_spec_inline_copies(struct dp_object *obj, const char *path, const char *name,
			  struct dp_spec_copies *out, struct dp_err *err)
{
	const struct dp_dwarf_inline **v;
	struct dp_location loc;
	struct dp_dwarf *dw;
	size_t n;
	int ret;

	(void)path;
	memset(out, 0, sizeof(*out));
	ret = get_dwarf(obj, &dw, err);
	if (ret)
		return ret;
	if (!dp_spec_location_parse(name, &loc, NULL) && loc.kind == DP_LOC_SYMBOL &&
	    loc.source && !loc.pattern && !loc.has_offset)
		ret = source_copies(dw, loc.symbol, &v, &n, err);
	else
		ret = dp_dwarf_inlines(dw, name, &v, &n, err);
	if (ret)
		return ret;
	if (!n) {
		free(v);
		return 0;
	}
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v) {
		free(v);
		return dp_err_set(err, -ENOMEM, "out of memory");
	}
	out->n = n;
	for (size_t i = 0; i < n && !ret; i++) {
		out->v[i].inl = v[i];
		ret = place(obj, &out->v[i]);
	}
	free(v);
	if (ret) {
		dp_spec_copies_release(out);
		return dp_err_set(err, ret, "out of memory");
	}
	return 0;
}

void dp_spec_copies_release(struct dp_spec_copies *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].rets);
		free(c->v[i].how);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* ---- what --function probes -------------------------------------------- */

static void note_add(char *note, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note_add(char *note, size_t size, const char *fmt, ...)
{
	size_t used = strlen(note);
	va_list ap;

	if (used + 3 >= size)
		return;
	if (used) {
		memcpy(note + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(note + used, size - used, fmt, ap);
	va_end(ap);
}

void dp_spec_fn_sites_release(struct dp_spec_fn_sites *s)
{
	free(s->fns);
	dp_spec_copies_release(&s->copies);
	memset(s, 0, sizeof(*s));
}

int dp_spec_function_sites(struct dp_object *obj, const char *path, const struct dp_location *loc,
			   enum dp_spec_copies_sel sel, struct dp_spec_fn_sites *out,
			   struct dp_err *err)
{
	struct dp_err fn_err = DP_ERR_INIT, dw_err = DP_ERR_INIT;
	bool plain = loc->kind == DP_LOC_SYMBOL && !loc->pattern && !loc->has_offset &&
		     !loc->offset;
	char where[DP_SPEC_SYMBOL_MAX + 128];
	int fret = 0, dret = 0;

	memset(out, 0, sizeof(*out));
	if (loc->kind == DP_LOC_LINE)
		return dp_spec_function_find(obj, path, loc, NULL, err);
	if (sel != DP_SPEC_COPIES_INLINED) {
		fret = dp_spec_functions_match(obj, path, loc, &out->fns, &out->nfns, &fn_err);
		if (fret && (fret != -ENOENT || !plain || sel == DP_SPEC_COPIES_OUTLINE))
			return dp_err_set(err, fret, "%s", fn_err.msg);
	}
	if (sel == DP_SPEC_COPIES_OUTLINE)
		return 0;
	if (!plain) {
		if (sel == DP_SPEC_COPIES_INLINED)
			return dp_err_set(err, -EINVAL, "'%s': inlined copies are found by a "
					  "function's name, not a pattern, an address or an offset",
					  loc->symbol);
		return 0;
	}
	dret = dp_spec_inline_copies(obj, path, loc->symbol, &out->copies, &dw_err);
	if (dret) {
		if (sel == DP_SPEC_COPIES_INLINED || !out->nfns) {
			dp_spec_fn_sites_release(out);
			if (fret && dret == -ENOENT)
				return dp_err_set(err, fret, "%s (and %s)", fn_err.msg, dw_err.msg);
			return dp_err_set(err, dret, "%s", dw_err.msg);
		}
		/* The body alone, as without DWARF: the copies are said missing. */
		if (dret == -ENOENT)
			snprintf(out->note, sizeof(out->note), "%.200s has no DWARF: the inlined "
				 "copies of %.100s were not looked for (lttng list -u --path P "
				 "--inlines NAME says where DWARF was looked for)", path,
				 loc->symbol);
		else
			snprintf(out->note, sizeof(out->note), "the inlined copies of %.100s were "
				 "not looked for: %.300s", loc->symbol, dw_err.msg);
		return 0;
	}
	for (size_t i = 0; i < out->copies.n; i++) {
		const struct dp_spec_copy *c = &out->copies.v[i];

		if (c->entry) {
			out->nplaced++;
			continue;
		}
		dp_spec_copy_format(c->inl, where, sizeof(where));
		note_add(out->note, sizeof(out->note), "the copy of %s %s is not probed: %s",
			 loc->symbol, where, c->why);
	}
	if (!out->nfns && !out->copies.n) {
		dp_spec_fn_sites_release(out);
		if (sel == DP_SPEC_COPIES_INLINED && !fret)
			return dp_err_set(err, -ENOENT, "%s has no inlined copy in %s (its "
					  "out-of-line body: --copies=out-of-line)", loc->symbol,
					  path);
		return dp_err_set(err, fret ? fret : -ENOENT, "%s", fret ? fn_err.msg :
				  "no inlined copy");
	}
	if (!out->nfns && !out->nplaced) {
		int ret = dp_err_set(err, -ENOTSUP, "no copy of %s in %s can be probed: %s",
				     loc->symbol, path, out->note);

		dp_spec_fn_sites_release(out);
		return ret;
	}
	return 0;
}
