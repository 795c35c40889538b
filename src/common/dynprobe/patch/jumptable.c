/*
 * Jump tables: from an indirect jmp back to the table it reads, for the
 * forms gcc and clang emit on x86-64, then the table's entries.
 *
 *   PIC:      lea T(%rip),%rB; movslq (%rB,%rI,4),%rX; add %rB,%rX; jmp *%rX
 *             (entries are int32 offsets from the lea's address; hand-written
 *             code may add with lea (%rB,%rX),%rX)
 *   absolute: jmp *T(,%rI,8)   or   mov T(,%rI,8),%rX; jmp *%rX
 *             (entries are 64-bit addresses; a zero-extending 32-bit load
 *             reads 32-bit addresses)
 *   one entry: movslq T(%rip),%rX; lea T(%rip),%rB; add %rB,%rX; jmp *%rX
 *             (a PIC table whose index was a constant: one entry to read)
 *
 * Values are found by walking back from a use to the instructions that may
 * define the register, across blocks: a block's predecessors are the
 * instruction before it when that one falls through and every local direct
 * branch to it, so a table base hoisted out of a loop is still found.  All
 * definitions must agree, except that some may be constant code addresses
 * (glibc's printf jumps to a default label or through a table): those are
 * targets too.  The walk budget and its visited set live in struct an_walk.
 *
 * Two facts about compiled code shape the walk.  A register a call clobbers
 * cannot be live across it, so a path where a call clobbers the register
 * being followed either never returns (a noreturn call before the next
 * block) or keeps it (gcc's -fipa-ra knows its callee): either way the walk
 * goes on past the call; only rax, the return value, is defined by it.  And
 * a block no direct branch reaches is entered from an indirect jmp (a case
 * of the very switch, when it sits in a loop) or never (padding after a
 * ret): it adds nothing.
 *
 * Paths that meet may read the same table at different places (Python's
 * interpreter loop dispatches from many): a table value keeps every load.
 *
 * The bound on the index is jtbound.c's, the largest over the loads.  With
 * one, every entry must land on an instruction boundary of the function or
 * of another (a .cold part, a table of functions), or in code no symbol
 * describes, or the table is not trusted at all.  Without one, entries are
 * read while they land on an instruction boundary of some function, and
 * never past the next address an instruction of the object names: the next
 * table begins there, and relative entries read against the wrong base land
 * on instructions often enough to go on forever.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

#define JT_DEFS 32		/* definitions of one register merged */
#define JT_DEPTH 6		/* nested value evaluations */

/* ---- walks ------------------------------------------------------------- */

bool an_insn_at(const struct an_func_ctx *ctx, uint32_t i, struct dp_insn *in)
{
	uint32_t off = ctx->off[i];

	return dp_insn_decode(ctx->code + off, ctx->size - off, in) == 0;
}

static bool falls_through(const struct dp_insn *in)
{
	switch (in->flow) {
	case DP_FLOW_JMP:
	case DP_FLOW_JMP_IND:
	case DP_FLOW_RET:
	case DP_FLOW_FAR:
	case DP_FLOW_UD:
	case DP_FLOW_INT:
	case DP_FLOW_TRAP:
		return false;
	default:
		return true;
	}
}

unsigned an_preds_of(struct an_walk *w, uint32_t i)
{
	const struct an_func_ctx *ctx = w->ctx;
	struct an_pred *p = an_walk_top(w);
	unsigned max = AN_WALK_POOL - w->npool, n = 0;
	uint32_t off = ctx->off[i];
	size_t lo;
	struct dp_insn prev;

	/* Not across a gap: instruction i - 1 may be another part's last. */
	if (i > 0 && an_insn_at(ctx, i - 1, &prev) && ctx->off[i - 1] + prev.len == off &&
	    falls_through(&prev) &&
	    !an_call_noreturn(ctx->obj, &prev, ctx->start + ctx->off[i - 1])) {
		if (n == max)
			return max + 1;
		p[n].idx = i - 1;
		p[n++].taken = false;
	}
	lo = DP_BOUND(ctx->edges, ctx->nedges, target, off, DP_BOUND_LOWER);
	for (; lo < ctx->nedges && ctx->edges[lo].target == off; lo++) {
		if (n == max)
			return max + 1;
		p[n].idx = ctx->edges[lo].src;
		p[n++].taken = true;
	}
	return n;
}

void an_walk_reset(struct an_walk *w)
{
	while (w->nused)
		w->seen[w->used[--w->nused]] = 0;
	w->steps = AN_WALK_STEPS;
	w->npool = 0;
}

bool an_walk_step(struct an_walk *w)
{
	if (!w->steps || !w->budget)
		return false;
	w->steps--;
	w->budget--;
	return true;
}

/* True the first time (i, state) is seen by this walk. */
bool an_walk_visit(struct an_walk *w, uint32_t i, uint64_t state)
{
	uint64_t key = (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15) ^
		       state * UINT64_C(0xc2b2ae3d27d4eb4f);
	size_t h;

	key ^= key >> 31;
	key |= 1;		/* 0 marks a free slot */
	h = (size_t)(key >> 7) & (AN_WALK_SLOTS - 1);
	/* At most one key per step goes in: free slots always remain. */
	while (w->seen[h] && w->seen[h] != key)
		h = (h + 1) & (AN_WALK_SLOTS - 1);
	if (w->seen[h])
		return false;
	if (w->nused > AN_WALK_STEPS) {
		/* Not reached (one key per step), but never say "seen" wrongly. */
		w->steps = 0;
		return true;
	}
	w->seen[h] = key;
	w->used[w->nused++] = (uint16_t)h;
	return true;
}

bool an_writes_reg(const struct dp_insn *in, unsigned reg)
{
	if (in->flow == DP_FLOW_CALL || in->flow == DP_FLOW_CALL_IND)
		return reg == DP_REG_RAX;
	return in->regs_written >> reg & 1;
}

/* ---- definitions --------------------------------------------------------- */

struct defs {
	uint32_t v[JT_DEFS];
	unsigned n;
};

static bool defs_add(struct defs *d, uint32_t i)
{
	return an_set_add(d->v, &d->n, JT_DEFS, i);
}

static bool defs_from(struct an_walk *w, uint32_t j, unsigned reg, struct defs *d);

/* The definitions along the np predecessors on top of the pool. */
static bool defs_join(struct an_walk *w, unsigned np, unsigned reg, struct defs *d)
{
	struct an_pred *p = an_walk_top(w);
	bool ok = true;

	w->npool += np;
	for (unsigned k = 0; k < np && ok; k++)
		ok = defs_from(w, p[k].idx, reg, d);
	w->npool -= np;
	return ok;
}

/*
 * Follows the paths back from instruction j (included) to the writes of
 * reg: a straight line is walked in place, only joins recurse.
 */
static bool defs_from(struct an_walk *w, uint32_t j, unsigned reg, struct defs *d)
{
	struct dp_insn in;
	unsigned np;

	for (;;) {
		if (!an_walk_visit(w, j, reg))
			return true;
		if (!an_walk_step(w) || !an_insn_at(w->ctx, j, &in))
			return false;
		if (an_writes_reg(&in, reg))
			return defs_add(d, j);
		np = an_preds_of(w, j);
		/* The entry: reg holds what the caller left, unknown. */
		if (np == 0)
			return j != 0;
		if (!an_preds_fit(w, np))
			return false;
		if (np > 1)
			return defs_join(w, np, reg, d);
		j = an_walk_top(w)[0].idx;
	}
}

/* The instructions that may last write reg before instruction `at` runs. */
static bool defs_before(struct an_walk *w, uint32_t at, unsigned reg, struct defs *d)
{
	unsigned np = an_preds_of(w, at);

	if (np == 0 || !an_preds_fit(w, np))
		return false;
	return defs_join(w, np, reg, d);
}

/* ---- values ------------------------------------------------------------ */

enum av_kind {
	AV_UNKNOWN,
	AV_CONST,		/* c */
	AV_ENTRY,		/* an entry of the table at `table` */
	AV_SUM,			/* c + a signed 32-bit entry */
	AV_SCALED,		/* an index times c (gcc -O0 scales apart) */
};

/*
 * An abstract value.  A table entry remembers the loads that read it (the
 * instruction and its index register): paths that meet may have read the
 * same table at different places (Python's interpreter loop).
 */
struct av {
	enum av_kind kind;
	uint64_t c;
	uint64_t table;
	uint8_t esize;
	bool esigned;
	uint8_t nloads;
	uint8_t idx[JT_DEFS];
	uint32_t load[JT_DEFS];
};

static void av_const(struct av *v, uint64_t c)
{
	memset(v, 0, sizeof(*v));
	v->kind = AV_CONST;
	v->c = c;
}

/* Merges b into a: the same value, entries possibly read by other loads. */
static bool av_merge(struct av *a, const struct av *b)
{
	if (a->kind != b->kind || a->c != b->c || a->table != b->table ||
	    a->esize != b->esize || a->esigned != b->esigned)
		return false;
	for (unsigned k = 0; k < b->nloads; k++) {
		unsigned j = 0;

		while (j < a->nloads && (a->load[j] != b->load[k] || a->idx[j] != b->idx[k]))
			j++;
		if (j < a->nloads)
			continue;
		if (a->nloads == JT_DEFS)
			return false;
		a->load[a->nloads] = b->load[k];
		a->idx[a->nloads++] = b->idx[k];
	}
	return true;
}

static void eval_reg(struct an_walk *w, uint32_t at, unsigned reg, unsigned depth, struct av *out);

/* The address of a memory operand [base + index*s + disp] when it is constant. */
static bool mem_table(struct an_walk *w, uint32_t at, const struct dp_insn *in, unsigned depth,
		      uint64_t *table)
{
	struct av b;

	if (in->mod == 3 || (in->attr & DP_ATTR_RIPREL) || in->index == DP_REG_NONE ||
	    in->adsize != 8 || in->seg == 0x64 || in->seg == 0x65)
		return false;
	if (in->base == DP_REG_NONE) {
		*table = (uint64_t)in->disp;
		return true;
	}
	eval_reg(w, at, in->base, depth + 1, &b);
	if (b.kind != AV_CONST)
		return false;
	*table = b.c + (uint64_t)in->disp;
	return true;
}

/*
 * Reads of an entry: a table load with the entry size as its scale, or
 * (gcc -O0) a load from table + index scaled by a lea or shl before.
 */
static void eval_load(struct an_walk *w, uint32_t j, const struct dp_insn *in, unsigned depth,
		      unsigned esize, bool esigned, struct av *out)
{
	struct av a, b;
	uint64_t table;

	if ((1u << in->scale) == esize && mem_table(w, j, in, depth, &table)) {
		memset(out, 0, sizeof(*out));
		out->nloads = 1;
		out->idx[0] = in->index;
		out->load[0] = j;
	} else if (esize == 4 && esigned && (in->attr & DP_ATTR_RIPREL) &&
		   in->index == DP_REG_NONE && in->adsize == 8 && !in->seg) {
		/* One relative entry read at a constant place: a table whose
		 * index the compiler knew (glibc's resolver dispatches so).  A
		 * pointer read so is no table: its value is the run time's. */
		memset(out, 0, sizeof(*out));
		table = w->ctx->start + w->ctx->off[j] + in->len + (uint64_t)in->disp;
		out->nloads = 1;
		out->idx[0] = DP_REG_NONE;
		out->load[0] = j;
	} else if (in->scale == 0 && in->base != DP_REG_NONE && in->index != DP_REG_NONE &&
		   in->mod != 3 && !(in->attr & DP_ATTR_RIPREL) && in->adsize == 8) {
		eval_reg(w, j, in->base, depth + 1, &a);
		eval_reg(w, j, in->index, depth + 1, &b);
		if (a.kind == AV_SCALED) {
			struct av t = a;

			a = b;
			b = t;
		}
		if (a.kind != AV_CONST || b.kind != AV_SCALED || b.c != esize)
			return;
		table = a.c + (uint64_t)in->disp;
		*out = b;
	} else {
		return;
	}
	out->kind = AV_ENTRY;
	out->c = 0;
	out->table = table;
	out->esize = (uint8_t)esize;
	out->esigned = esigned;
}

/* An index times 2^shift, computed at instruction j from register idx. */
static void av_scaled(struct av *v, unsigned shift, unsigned idx, uint32_t j)
{
	memset(v, 0, sizeof(*v));
	v->kind = AV_SCALED;
	v->c = UINT64_C(1) << shift;
	v->nloads = 1;
	v->idx[0] = (uint8_t)idx;
	v->load[0] = j;
}

/* a + b where one is a constant and the other a signed 32-bit entry. */
static void eval_add(struct an_walk *w, uint32_t j, unsigned ra, unsigned rb, unsigned depth,
		     struct av *out)
{
	struct av a, b;
	const struct av *c, *e;

	eval_reg(w, j, ra, depth + 1, &a);
	eval_reg(w, j, rb, depth + 1, &b);
	c = a.kind == AV_CONST ? &a : &b;
	e = c == &a ? &b : &a;
	if (c->kind != AV_CONST || e->kind != AV_ENTRY || e->esize != 4 || !e->esigned)
		return;
	*out = *e;
	out->kind = AV_SUM;
	out->c = c->c;
}

/* The value instruction j, which writes reg, leaves in it. */
static void eval_def(struct an_walk *w, uint32_t j, unsigned reg, unsigned depth, struct av *out)
{
	const struct an_func_ctx *ctx = w->ctx;
	struct dp_insn in;
	struct av a;

	memset(out, 0, sizeof(*out));
	if (depth > JT_DEPTH || !an_insn_at(ctx, j, &in) || in.enc != DP_ENC_LEGACY ||
	    in.map != DP_MAP_1BYTE)
		return;
	switch (in.opcode) {
	case 0x8d:		/* lea */
		if (in.reg != reg || in.opsize != 8)
			return;
		if (in.attr & DP_ATTR_RIPREL) {
			av_const(out, ctx->start + ctx->off[j] + in.len + (uint64_t)in.disp);
		} else if (in.index == DP_REG_NONE && in.base != DP_REG_NONE) {
			eval_reg(w, j, in.base, depth + 1, &a);
			if (a.kind == AV_CONST)
				av_const(out, a.c + (uint64_t)in.disp);
		} else if (in.base != DP_REG_NONE && in.scale == 0 && !in.disp) {
			eval_add(w, j, in.base, in.index, depth, out);
		} else if (in.base == DP_REG_NONE && in.index != DP_REG_NONE && !in.disp &&
			   in.scale) {
			av_scaled(out, in.scale, in.index, j);
		}
		return;
	case 0xc1:		/* shl r, imm8 */
		if (in.mod == 3 && (in.reg & 7) == 4 && in.rm == reg && in.opsize == 8 &&
		    in.imm >= 1 && in.imm <= 3)
			av_scaled(out, (unsigned)in.imm, reg, j);
		return;
	case 0x98:		/* cltq: sign-extends eax */
		if (reg != DP_REG_RAX || in.opsize != 8)
			return;
		eval_reg(w, j, DP_REG_RAX, depth + 1, &a);
		if (a.kind == AV_ENTRY && a.esize == 4 && !a.esigned) {
			*out = a;
			out->esigned = true;
		}
		return;
	case 0xb8: case 0xb9: case 0xba: case 0xbb:
	case 0xbc: case 0xbd: case 0xbe: case 0xbf:	/* mov r, imm */
		if ((unsigned)((in.opcode & 7) | (in.rex & 1) << 3) == reg)
			av_const(out, in.opsize == 8 ? (uint64_t)in.imm : (uint32_t)in.imm);
		return;
	case 0xc7:		/* mov r/m, imm32 */
		if (in.mod == 3 && in.rm == reg && in.opsize != 2)
			av_const(out, in.opsize == 8 ? (uint64_t)in.imm : (uint32_t)in.imm);
		return;
	case 0x89:		/* mov r/m, r */
	case 0x8b:		/* mov r, r/m */
		if (in.mod == 3) {
			unsigned dst = in.opcode == 0x89 ? in.rm : in.reg;
			unsigned src = in.opcode == 0x89 ? in.reg : in.rm;

			if (dst != reg || in.opsize == 2)
				return;
			eval_reg(w, j, src, depth + 1, &a);
			if (in.opsize == 8 || (a.kind == AV_ENTRY && a.esize == 4 && !a.esigned))
				*out = a;
			else if (a.kind == AV_CONST)
				av_const(out, (uint32_t)a.c);
			return;
		}
		if (in.opcode == 0x8b && in.reg == reg && in.opsize != 2)
			eval_load(w, j, &in, depth, in.opsize, false, out);
		return;
	case 0x63:		/* movsxd r64, r/m32 */
		if (in.reg != reg || in.opsize != 8)
			return;
		if (in.mod != 3) {
			eval_load(w, j, &in, depth, 4, true, out);
			return;
		}
		eval_reg(w, j, in.rm, depth + 1, &a);
		if (a.kind == AV_ENTRY && a.esize == 4 && !a.esigned) {
			*out = a;
			out->esigned = true;
		}
		return;
	case 0x01:		/* add r/m, r */
	case 0x03:		/* add r, r/m */
		if (in.mod == 3 && in.opsize == 8 && (in.opcode == 0x01 ? in.rm : in.reg) == reg)
			eval_add(w, j, in.rm, in.reg, depth, out);
		return;
	default:
		return;
	}
}

/* The value of reg when instruction `at` starts; every path must agree. */
static void eval_reg(struct an_walk *w, uint32_t at, unsigned reg, unsigned depth, struct av *out)
{
	struct defs d = { .n = 0 };

	memset(out, 0, sizeof(*out));
	if (depth > JT_DEPTH || reg > 15)
		return;
	an_walk_reset(w);
	if (!defs_before(w, at, reg, &d) || !d.n)
		return;
	/* The definitions are known: their own operands may reuse the walk. */
	for (unsigned k = 0; k < d.n; k++) {
		struct av v;

		eval_def(w, d.v[k], reg, depth, &v);
		if (v.kind == AV_UNKNOWN || (k && !av_merge(out, &v))) {
			memset(out, 0, sizeof(*out));
			return;
		}
		if (!k)
			*out = v;
	}
}

/* ---- the jmp ----------------------------------------------------------- */

struct table {
	uint64_t addr;		/* first entry */
	uint64_t base;		/* added to signed entries */
	unsigned esize;
	bool esigned;
	uint64_t count;		/* entries, 0 when no bound was found */
};

/* Where an indirect jmp may go: a table, constants, or both. */
struct jmp_dests {
	bool has_table;
	struct av tab;		/* AV_ENTRY or AV_SUM, with its loads */
	struct table t;
	uint64_t consts[JT_DEFS];
	unsigned nconsts;
};

static bool dests_take(struct jmp_dests *r, const struct av *v)
{
	if (v->kind == AV_CONST) {
		r->consts[r->nconsts++] = v->c;
		return true;
	}
	if ((v->kind != AV_SUM && v->kind != AV_ENTRY) || (v->kind == AV_ENTRY && v->esigned))
		return false;
	if (r->has_table)
		return av_merge(&r->tab, v);
	r->has_table = true;
	r->tab = *v;
	return true;
}

static bool jmp_dests_find(struct an_walk *w, uint32_t i, struct jmp_dests *r)
{
	struct defs d = { .n = 0 };
	struct dp_insn in;

	if (!an_insn_at(w->ctx, i, &in) || in.flow != DP_FLOW_JMP_IND)
		return false;
	if (in.mod != 3) {
		if (in.opsize != 8)
			return false;
		eval_load(w, i, &in, 0, 8, false, &r->tab);
		r->has_table = r->tab.kind == AV_ENTRY;
		return r->has_table;
	}
	an_walk_reset(w);
	if (!defs_before(w, i, in.rm, &d) || !d.n)
		return false;
	for (unsigned k = 0; k < d.n; k++) {
		struct av v;

		eval_def(w, d.v[k], in.rm, 0, &v);
		if (!dests_take(r, &v))
			return false;
	}
	return true;
}

/* The entries every load of the table may select: 0 when one is unbounded. */
static uint64_t dests_bound(struct an_walk *w, const struct av *tab)
{
	uint64_t best = 0;

	for (unsigned k = 0; k < tab->nloads; k++) {
		uint64_t b = tab->idx[k] == DP_REG_NONE ? 1 : an_jt_bound(w, tab->load[k], tab->idx[k]);

		if (!b)
			return 0;
		if (b > best)
			best = b;
	}
	return best;
}

/* ---- the targets ------------------------------------------------------- */

static bool entry_read(struct dp_object *obj, const struct table *t, uint64_t k, uint64_t *target)
{
	uint64_t addr = t->addr + k * t->esize, v = 0;
	const uint8_t *p = dp_elf_bytes(obj->elf, addr, t->esize);

	if (!p || addr < t->addr)
		return false;
	for (unsigned b = 0; b < t->esize; b++)
		v |= (uint64_t)p[b] << (8 * b);
	*target = t->esigned ? t->base + (uint64_t)(int64_t)(int32_t)(uint32_t)v : v;
	return true;
}

/* An instruction boundary of the function itself. */
static bool lands_inside(const struct an_func_ctx *ctx, uint64_t target)
{
	return target - ctx->start < ctx->size &&
	       an_insn_index(ctx->off, ctx->n, target - ctx->start) >= 0;
}

/*
 * An instruction boundary of this function or, setting *leaves, of another
 * (a .cold part, a function a table of pointers names).  Outside every
 * function, code the symbols do not describe is accepted when `loose`.
 */
static bool lands_in_code(const struct an_func_ctx *ctx, uint64_t target, bool loose,
			  bool *leaves)
{
	const struct dp_function *fn;
	const struct an_scn *s;

	if (target - ctx->start < ctx->size)
		return lands_inside(ctx, target);
	*leaves = true;
	fn = an_function_at(ctx->obj, target);
	if (fn)
		return dp_function_insn_index(fn, target) >= 0;
	s = an_scn_find(ctx->obj, target);
	return loose && s && s->exec;
}

/* A destination of the jmp at instruction i is a target, entered from there. */
static int dest_push(const struct an_func_ctx *ctx, uint32_t i, uint64_t target)
{
	int err = an_keys_push(&ctx->obj->keys, target, DP_TGT_JUMP_TABLE);

	return err ? err : an_entered_push(ctx->obj, ctx->start + ctx->off[i], target, false);
}

/* Checks every destination of the jmp at i, then pushes them all: 0, 1, 2 or -errno. */
static int dests_push(const struct an_func_ctx *ctx, uint32_t i, struct jmp_dests *r)
{
	struct dp_object *obj = ctx->obj;
	uint64_t n = 0, target;
	bool leaves = false;
	int err;

	for (unsigned k = 0; k < r->nconsts; k++)
		if (!lands_in_code(ctx, r->consts[k], true, &leaves))
			return 0;
	if (r->has_table && r->t.count) {
		for (n = 0; n < r->t.count; n++)
			if (!entry_read(obj, &r->t, n, &target) ||
			    !lands_in_code(ctx, target, true, &leaves))
				return 0;
	} else if (r->has_table) {
		/*
		 * Without a bound, the table ends at the first entry that lands
		 * nowhere, or where data some instruction names begins (the next
		 * table: its entries would land on instructions too).
		 */
		uint64_t end = an_ref_after(obj, r->t.addr), max = AN_JT_MAX_ENTRIES;

		if (end != UINT64_MAX && (end - r->t.addr) / r->t.esize < max)
			max = (end - r->t.addr) / r->t.esize;
		for (; n < max && entry_read(obj, &r->t, n, &target); n++) {
			bool out = false;

			if (!lands_in_code(ctx, target, false, &out))
				break;
			leaves |= out;
		}
		if (!n)
			return 0;
	}
	for (unsigned k = 0; k < r->nconsts; k++) {
		err = dest_push(ctx, i, r->consts[k]);
		if (err)
			return err;
	}
	for (uint64_t k = 0; k < n; k++) {
		entry_read(obj, &r->t, k, &target);
		err = dest_push(ctx, i, target);
		if (err)
			return err;
	}
	/* Its entries are explained: coderefs.c need not count them. */
	if (n) {
		err = an_table_note(obj, r->t.addr, r->t.addr + n * r->t.esize);
		if (err)
			return err;
	}
	return leaves ? 2 : 1;
}

int an_jump_table_resolve(struct an_func_ctx *ctx, uint32_t i)
{
	struct an_walk *w = ctx->walk;
	struct jmp_dests r;

	w->ctx = ctx;
	memset(&r, 0, sizeof(r));
	if (!jmp_dests_find(w, i, &r))
		return 0;
	if (r.has_table) {
		r.t.addr = r.tab.table;
		r.t.base = r.tab.kind == AV_SUM ? r.tab.c : 0;
		r.t.esize = r.tab.esize;
		r.t.esigned = r.tab.esigned;
		r.t.count = dests_bound(w, &r.tab);
	}
	return dests_push(ctx, i, &r);
}
