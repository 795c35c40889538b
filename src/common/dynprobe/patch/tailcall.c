/*
 * Tail calls through pointers: which indirect jmps that no jump table
 * explains leave their function for good.  A function whose only such jmps
 * are tail calls is not DP_FN_INDIRECT: windows of displaced instructions
 * are as safe in it as anywhere else.
 *
 * A jmp cannot land inside its own function, but on a branch target, when
 * both of these hold:
 *
 *  - It jumps to a pointer: one it reads from memory itself, or one a load
 *    from memory left in its register on every path (through register
 *    copies, conditional moves, and glibc's pointer demangling: a rotation
 *    by a constant and a xor with the thread's guard, fs:[...]).  When the
 *    frame is torn down at the jmp (rsp back at its value on entry, as
 *    after `pop rbx; jmp rax`), also the value of an argument register on
 *    entry or the value a call returned: a function handed to us.  Never the
 *    result of arithmetic: a base plus an offset read from a table is how
 *    relative jump tables and label-difference tables reach the inside of a
 *    function.
 *  - No address inside the function but its start exists in the object as
 *    a value (coderefs.c): a function no RIP-relative operand and no
 *    dynamic relocation names inside (nor, in a position-dependent
 *    executable, any immediate, absolute displacement or data word) has no
 *    label a pointer could hold, whatever code stored it.  Computed gotos
 *    (gcc's &&label) always leave one behind: a RIP-relative lea or a mov
 *    of the label, or a table of labels, relocated or plain.
 *
 * Return addresses are pointers too, but they point after calls, which are
 * targets already.  Code no function covers is not decoded: hand-written
 * code without symbols or unwind entries could name a label that no
 * reference shows.
 *
 * A function and its .cold parts are one function here.  A part is a
 * range no symbol names (but gcc's local `fn.cold`) that no pointer, call,
 * table or fall-through enters, only jmps and jccs of the function or of
 * the part itself.  Their code is walked as one, from the function's entry
 * (or entries: a part two functions share joins them): the value a tail
 * call in a part jumps to, and the blocks of the function a part comes
 * back into, are known as well as the function's own.
 *
 * Each function with such jmps is classified once every branch target is
 * known.  The walks back from a jmp follow the function's own control flow,
 * its jump tables included (a case block is entered from every table jmp of
 * the function); a block another function, a table elsewhere, the unwinder
 * or a pointer enters brings values the walk cannot know, and one nothing
 * enters (padding after a ret, code after a call that never returns) brings
 * none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "sorted.h"

#define TC_DEPTH 4		/* nested register copies followed */
#define TC_EXTRA_PREDS 64	/* table jmps of one function taken as predecessors */
#define TC_DEFS 32		/* definitions of one register merged */
#define TC_PARTS 8		/* a function and its parts walked as one */

/* ---- one function ----------------------------------------------------- */

int an_entered_push(struct dp_object *obj, uint64_t src, uint64_t target, bool jump)
{
	const struct dp_function *fn = an_function_at(obj, target);
	struct an_keys *k = &obj->entered;

	/* Within the function that holds the target: its own control flow. */
	if (fn && src - fn->start < fn->size)
		return 0;
	if (DP_ARRAY_RESERVE(k->v, k->cap, k->n, 64))
		return -ENOMEM;
	k->v[k->n++] = target;
	if (!jump)
		return 0;
	if (DP_ARRAY_RESERVE(obj->jumped, obj->jumped_cap, obj->njumped, 64))
		return -ENOMEM;
	obj->jumped[obj->njumped++] = (struct an_jump){ target, src };
	return 0;
}

static bool keys_has(const struct an_keys *k, uint64_t addr)
{
	size_t lo = DP_BOUND_KEYS(k->v, k->n, addr, DP_BOUND_LOWER);

	return lo < k->n && k->v[lo] == addr;
}

/* How many ways in from other functions `entered` holds for addr. */
static size_t keys_count(const struct an_keys *k, uint64_t addr)
{
	return DP_BOUND_KEYS(k->v, k->n, addr, DP_BOUND_UPPER) -
	       DP_BOUND_KEYS(k->v, k->n, addr, DP_BOUND_LOWER);
}

static int jump_cmp(const void *a, const void *b)
{
	const struct an_jump *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

/* A function being classified: its control flow beyond direct branches. */
struct tc_fn {
	struct an_func_ctx ctx;
	const struct dp_function *parts[TC_PARTS];	/* the function and its
							   parts, ascending */
	unsigned nparts;
	uint32_t *off;			/* owned: ctx.off, for more than one part */
	struct an_edge *edges;		/* owned: ctx.edges */
	uint32_t tables[TC_EXTRA_PREDS];	/* its jump-table jmps */
	unsigned ntables;
	bool tables_overflow;
	uint8_t *entry;			/* per instruction: enum tc_entry bits */
	int64_t *rsp;			/* per instruction: rsp from its entry value
					   (stack_heights), once asked for */
	bool rsp_done;
};

enum tc_entry {
	TC_CASE = 1u << 0,	/* a jump-table target: entered from the table jmps */
	TC_FOREIGN = 1u << 1,	/* entered from elsewhere: other functions, the unwinder */
	TC_ENTRY = 1u << 2,	/* a function's entry */
};

static int edge_cmp(const void *a, const void *b)
{
	const struct an_edge *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

static bool is_unexplained(const struct dp_function *fn, uint64_t addr)
{
	for (uint32_t r = 0; r < fn->nrets; r++)
		if (fn->rets[r].addr == addr && fn->rets[r].kind == DP_RET_TAIL_INDIRECT)
			return true;
	return false;
}

/* ---- a function and its parts ------------------------------------------ */

/* The part holding addr, or NULL. */
static const struct dp_function *part_at(const struct tc_fn *tf, uint64_t addr)
{
	for (unsigned k = 0; k < tf->nparts; k++)
		if (addr - tf->parts[k]->start < tf->parts[k]->size)
			return tf->parts[k];
	return NULL;
}

/* The jmps, jccs and loops from other functions to addr: [*lo, return). */
static size_t jumps_to(const struct dp_object *obj, uint64_t addr, size_t *lo)
{
	*lo = DP_BOUND(obj->jumped, obj->njumped, target, addr, DP_BOUND_LOWER);
	return DP_BOUND(obj->jumped, obj->njumped, target, addr, DP_BOUND_UPPER);
}

/* Whether code before g runs on into its start. */
static bool fallen_into(const struct dp_object *obj, const struct dp_function *g)
{
	const struct dp_function *h = an_function_at(obj, g->start - 1);
	struct dp_insn in;
	const uint8_t *code;
	uint32_t off;

	if (!h || h == g || !h->ninsns)
		return false;
	/* g nested in h: h's code may run on into it anywhere. */
	if (g->start - h->start < h->size)
		return true;
	off = h->insn_off[h->ninsns - 1];
	code = dp_elf_code(obj->elf, h->start + off, h->size - off);
	if (!code || dp_insn_decode(code, h->size - off, &in))
		return true;
	if (h->start + off + in.len != g->start)
		return false;
	return in.flow != DP_FLOW_JMP && in.flow != DP_FLOW_JMP_IND && in.flow != DP_FLOW_RET &&
	       !an_call_noreturn(obj, &in, h->start + off);
}

/* gcc's name for the part of fn it moves out: `fn.cold`, or `fn.cold.N`. */
static bool cold_name(const char *name)
{
	const char *c = strstr(name, ".cold");

	if (!c || c == name)
		return false;
	c += strlen(".cold");
	if (*c == '.' && c[1])
		for (c++; *c >= '0' && *c <= '9'; c++)
			;
	return !*c;
}

/* Whether g is a part: unnamed, entered from other functions by direct
 * jmps, jccs and loops alone, and by nothing else. */
static bool is_part(const struct dp_object *obj, const struct dp_function *g)
{
	size_t lo, hi = jumps_to(obj, g->start, &lo);

	return (!g->name || cold_name(g->name)) && !keys_has(&obj->code_refs, g->start) &&
	       !(an_target_kind(obj, g->start) & ~(DP_TGT_DIRECT | DP_TGT_FUNCTION)) &&
	       keys_count(&obj->entered, g->start) == hi - lo && !fallen_into(obj, g);
}

static bool part_add(struct tc_fn *tf, const struct dp_function *g)
{
	if (!g || part_at(tf, g->start))
		return true;
	if (tf->nparts == TC_PARTS)
		return false;
	tf->parts[tf->nparts++] = g;
	return true;
}

/*
 * Gathers fn's parts and the functions they belong to (fn itself, or those
 * that jump into fn when fn is a part): the parts any of them jumps into,
 * and whoever jumps into a part.  False when there are too many, or no
 * function but parts.
 */
static bool parts_find(struct tc_fn *tf, const struct dp_object *obj, const struct dp_function *fn)
{
	unsigned whole = 0;

	tf->parts[0] = fn;
	tf->nparts = 1;
	for (unsigned m = 0; m < tf->nparts; m++) {
		const struct dp_function *g = tf->parts[m];
		const uint8_t *code = dp_elf_code(obj->elf, g->start, g->size);
		size_t lo, hi;

		if (!code || (g->flags & DP_FN_UNDECODED))
			return false;
		for (uint32_t i = 0; i < g->ninsns; i++) {
			const struct dp_function *h;
			struct dp_insn in;
			uint64_t t;

			if (dp_insn_decode(code + g->insn_off[i], g->size - g->insn_off[i], &in) ||
			    !(in.attr & DP_ATTR_REL) ||
			    (in.flow != DP_FLOW_JMP && in.flow != DP_FLOW_JCC && in.flow != DP_FLOW_LOOP))
				continue;
			t = dp_insn_target(&in, g->start + g->insn_off[i]);
			h = an_function_at(obj, t);
			if (h && h->start == t && h != g && is_part(obj, h) && !part_add(tf, h))
				return false;
		}
		if (!is_part(obj, g))
			continue;
		for (jumps_to(obj, g->start, &lo), hi = lo; hi < obj->njumped; hi++) {
			if (obj->jumped[hi].target - g->start >= g->size)
				break;
			if (!part_add(tf, an_function_at(obj, obj->jumped[hi].src)))
				return false;
		}
	}
	for (unsigned m = 0; m < tf->nparts; m++)
		whole += !is_part(obj, tf->parts[m]);
	return whole > 0;
}

static int part_cmp(const void *a, const void *b)
{
	const struct dp_function *x = *(const struct dp_function *const *)a;
	const struct dp_function *y = *(const struct dp_function *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Sets up the walk over fn, and over its parts with it when it has any
 * (their instructions as one list, offsets from the first part's start).
 * 0 or -ENOMEM.
 */
static int tc_fn_parts(struct tc_fn *tf, const struct dp_object *obj, const struct dp_function *fn)
{
	struct an_func_ctx *ctx = &tf->ctx;
	const struct dp_function *last;
	uint32_t n = 0;

	tf->parts[0] = fn;
	tf->nparts = 1;
	ctx->start = fn->start;
	ctx->size = fn->size;
	ctx->off = fn->insn_off;
	ctx->n = fn->ninsns;
	ctx->code = dp_elf_code(obj->elf, fn->start, fn->size);
	if (!parts_find(tf, obj, fn) || tf->nparts == 1) {
		tf->nparts = 1;
		return 0;
	}
	qsort(tf->parts, tf->nparts, sizeof(tf->parts[0]), part_cmp);
	last = tf->parts[tf->nparts - 1];
	for (unsigned m = 0; m + 1 < tf->nparts; m++)
		if (tf->parts[m]->start + tf->parts[m]->size > tf->parts[m + 1]->start ||
		    n > UINT32_MAX - tf->parts[m]->ninsns)
			goto alone;
		else
			n += tf->parts[m]->ninsns;
	if (last->start + last->size - tf->parts[0]->start > UINT32_MAX ||
	    !dp_elf_code(obj->elf, tf->parts[0]->start, last->start + last->size - tf->parts[0]->start))
		goto alone;
	n += last->ninsns;
	tf->off = malloc((n ? n : 1) * sizeof(*tf->off));
	if (!tf->off)
		return -ENOMEM;
	ctx->start = tf->parts[0]->start;
	ctx->size = last->start + last->size - ctx->start;
	ctx->code = dp_elf_code(obj->elf, ctx->start, ctx->size);
	ctx->off = tf->off;
	ctx->n = 0;
	for (unsigned m = 0; m < tf->nparts; m++) {
		const struct dp_function *g = tf->parts[m];

		for (uint32_t i = 0; i < g->ninsns; i++)
			tf->off[ctx->n++] = (uint32_t)(g->start - ctx->start) + g->insn_off[i];
	}
	return 0;
alone:
	tf->parts[0] = fn;
	tf->nparts = 1;
	return 0;
}

/*
 * How instruction i, at addr, is entered: TC_ENTRY at the start of fn (or
 * of a function a part of fn's belongs to), TC_FOREIGN from outside the
 * walk.
 */
static unsigned entered_how(const struct tc_fn *tf, const struct dp_object *obj, uint32_t i,
			    uint64_t addr)
{
	unsigned kind = an_target_kind(obj, addr);
	const struct dp_function *g = part_at(tf, addr);
	size_t lo, hi, own = 0;

	if (tf->nparts == 1 ? i == 0 : g->start == addr && !is_part(obj, g))
		return TC_ENTRY;
	if (kind & (DP_TGT_LANDING_PAD | DP_TGT_ADDRESS))
		return TC_FOREIGN;
	if ((tf->nparts == 1 || g->start != addr) && (kind & DP_TGT_FUNCTION))
		return TC_FOREIGN;
	/* Every way in from another function, but those from the parts. */
	for (hi = jumps_to(obj, addr, &lo); tf->nparts > 1 && lo < hi; lo++)
		own += part_at(tf, obj->jumped[lo].src) != NULL;
	return keys_count(&obj->entered, addr) > own ? TC_FOREIGN : 0;
}

/* The local direct branches (by target), the table jmps, how each
 * instruction may be entered.  0 or -ENOMEM. */
static int tc_fn_init(struct tc_fn *tf, const struct dp_object *obj, const struct dp_function *fn)
{
	struct an_func_ctx *ctx = &tf->ctx;
	size_t n = 0, cap = 0;
	int err = tc_fn_parts(tf, obj, fn);

	if (err)
		return err;
	tf->entry = calloc(ctx->n ? ctx->n : 1, 1);
	if (!tf->entry)
		return -ENOMEM;
	for (uint32_t i = 0; i < ctx->n; i++) {
		uint64_t addr = ctx->start + ctx->off[i], t;
		struct dp_insn in;

		if (an_target_kind(obj, addr) & DP_TGT_JUMP_TABLE)
			tf->entry[i] |= TC_CASE;
		tf->entry[i] |= (uint8_t)entered_how(tf, obj, i, addr);
		if (!an_insn_at(ctx, i, &in))
			continue;
		if (in.flow == DP_FLOW_JMP_IND && !is_unexplained(part_at(tf, addr), addr)) {
			if (tf->ntables < TC_EXTRA_PREDS)
				tf->tables[tf->ntables++] = i;
			else
				tf->tables_overflow = true;
		}
		if (!(in.attr & DP_ATTR_REL) || in.flow == DP_FLOW_CALL)
			continue;
		t = dp_insn_target(&in, addr);
		if (t - ctx->start >= ctx->size || an_insn_index(ctx->off, ctx->n, t - ctx->start) < 0)
			continue;
		if (DP_ARRAY_RESERVE(tf->edges, cap, n, 64))
			return -ENOMEM;
		tf->edges[n].target = (uint32_t)(t - ctx->start);
		tf->edges[n++].src = i;
	}
	if (n > 1)
		qsort(tf->edges, n, sizeof(*tf->edges), edge_cmp);
	ctx->edges = tf->edges;
	ctx->nedges = n;
	return 0;
}

static void tc_fn_release(struct tc_fn *tf)
{
	free(tf->off);
	free(tf->edges);
	free(tf->entry);
	free(tf->rsp);
}

/*
 * The predecessors of instruction at, on top of the walk's pool: those of
 * an_preds_of, and every table jmp for a case.  How many, or -1 when at is
 * entered from somewhere unknown (or the pool is full).  *entry is set at
 * the function's entry.
 */
static int tc_preds(struct tc_fn *tf, uint32_t at, bool *entry)
{
	struct an_walk *w = tf->ctx.walk;
	unsigned np = an_preds_of(w, at);
	struct an_pred *p = an_walk_top(w);

	*entry = tf->entry[at] & TC_ENTRY;
	if (tf->entry[at] & TC_FOREIGN)
		return -1;
	if (tf->entry[at] & TC_CASE) {
		if (!tf->ntables || tf->tables_overflow || !an_preds_fit(w, np + tf->ntables))
			return -1;
		for (unsigned k = 0; k < tf->ntables; k++) {
			p[np].idx = tf->tables[k];
			p[np++].taken = true;
		}
	}
	return an_preds_fit(w, np) ? (int)np : -1;
}

/* ---- where the jumped-to value comes from ------------------------------ */

enum origin {
	ORG_POINTER = 1u << 0,	/* loaded from memory */
	ORG_HANDED = 1u << 1,	/* an argument on entry, or what a call returned */
	ORG_OTHER = 1u << 2,	/* anything else: arithmetic, constants, unknown */
};

struct tc_defs {
	uint32_t v[TC_DEFS];
	unsigned n;
	bool entry;		/* some path reaches the entry with reg unwritten */
};

static bool tc_defs_add(struct tc_defs *d, uint32_t i)
{
	return an_set_add(d->v, &d->n, TC_DEFS, i);
}

static bool tc_defs_from(struct tc_fn *tf, uint32_t j, unsigned reg, struct tc_defs *d);

/*
 * The writes of reg on the paths into instruction at.  Unlike the jump-table
 * walks, a path that comes from somewhere unknown fails; a block nothing
 * enters adds nothing.
 */
static bool tc_defs_before(struct tc_fn *tf, uint32_t at, unsigned reg, struct tc_defs *d)
{
	struct an_walk *w = tf->ctx.walk;
	struct an_pred *p = an_walk_top(w);
	bool entry, ok = true;
	int np = tc_preds(tf, at, &entry);

	if (np < 0)
		return false;
	d->entry |= entry;
	w->npool += (unsigned)np;
	for (int k = 0; k < np && ok; k++)
		ok = tc_defs_from(tf, p[k].idx, reg, d);
	w->npool -= (unsigned)np;
	return ok;
}

/* The same from instruction j, included. */
static bool tc_defs_from(struct tc_fn *tf, uint32_t j, unsigned reg, struct tc_defs *d)
{
	struct an_walk *w = tf->ctx.walk;
	struct dp_insn in;

	if (!an_walk_visit(w, j, reg))
		return true;
	if (!an_walk_step(w) || !an_insn_at(&tf->ctx, j, &in))
		return false;
	if (an_writes_reg(&in, reg))
		return tc_defs_add(d, j);
	return tc_defs_before(tf, j, reg, d);
}

static unsigned reg_origin(struct tc_fn *tf, uint32_t at, unsigned reg, unsigned depth);

static bool is_arg_reg(unsigned reg)
{
	return reg == DP_REG_RDI || reg == DP_REG_RSI || reg == DP_REG_RDX ||
	       reg == DP_REG_RCX || reg == DP_REG_R8 || reg == DP_REG_R9;
}

/* What instruction j, which writes reg, leaves in it. */
static unsigned def_origin(struct tc_fn *tf, uint32_t j, unsigned reg, unsigned depth)
{
	struct dp_insn in;

	if (!an_insn_at(&tf->ctx, j, &in))
		return ORG_OTHER;
	if (in.flow == DP_FLOW_CALL || in.flow == DP_FLOW_CALL_IND)
		return reg == DP_REG_RAX ? ORG_HANDED : ORG_OTHER;
	if (in.enc != DP_ENC_LEGACY || in.opsize != 8 || !in.has_modrm)
		return ORG_OTHER;
	if (in.map == DP_MAP_0F && in.opcode >= 0x40 && in.opcode <= 0x4f) {
		/* cmovcc: what it moves, or what the register held. */
		if (in.reg != reg)
			return ORG_OTHER;
		return (in.mod != 3 ? ORG_POINTER : reg_origin(tf, j, in.rm, depth + 1)) |
		       reg_origin(tf, j, reg, depth + 1);
	}
	if (in.map != DP_MAP_1BYTE)
		return ORG_OTHER;
	switch (in.opcode) {
	case 0x8b:		/* mov r64, r/m64 */
		if (in.reg != reg)
			return ORG_OTHER;
		return in.mod != 3 ? ORG_POINTER : reg_origin(tf, j, in.rm, depth + 1);
	case 0x89:		/* mov r/m64, r64 */
		if (in.mod != 3 || in.rm != reg)
			return ORG_OTHER;
		return reg_origin(tf, j, in.reg, depth + 1);
	case 0xc1:		/* rol/ror r64, imm8: pointer demangling */
	case 0xd1:		/* rol/ror r64, 1 */
		if (in.mod != 3 || in.rm != reg || (in.reg & 7) > 1)
			return ORG_OTHER;
		return reg_origin(tf, j, reg, depth + 1);
	case 0x33:		/* xor r64, fs:[...]: the pointer guard */
		if (in.mod == 3 || in.reg != reg || in.seg != 0x64)
			return ORG_OTHER;
		return reg_origin(tf, j, reg, depth + 1);
	default:
		return ORG_OTHER;
	}
}

/* Where the value of reg comes from when instruction `at` starts. */
static unsigned reg_origin(struct tc_fn *tf, uint32_t at, unsigned reg, unsigned depth)
{
	struct tc_defs d = { .n = 0 };
	unsigned org = 0;

	if (depth > TC_DEPTH || reg > 15)
		return ORG_OTHER;
	an_walk_reset(tf->ctx.walk);
	if (!tc_defs_before(tf, at, reg, &d))
		return ORG_OTHER;
	if (d.entry)
		org |= is_arg_reg(reg) ? ORG_HANDED : ORG_OTHER;
	/* The definitions are known: following their operands may reuse the walk. */
	for (unsigned k = 0; k < d.n && !(org & ORG_OTHER); k++)
		org |= def_origin(tf, d.v[k], reg, depth);
	return org ? org : ORG_OTHER;
}

/* ---- stack height ------------------------------------------------------ */

/*
 * rsp relative to its value on entry, at each instruction, by a forward
 * pass over the local control flow: pushes, pops, add/sub/lea on rsp, and a
 * frame pointer set by `mov rbp, rsp` and undone by `leave` or `mov rsp,
 * rbp`.  Paths that disagree, and anything else that moves rsp, make it
 * unknown.  Blocks entered only from tables or other functions get none.
 */
#define SH_UNSET INT64_MAX
#define SH_UNKNOWN INT64_MIN

struct sh_state {
	int64_t rsp, rbp;	/* offsets from the entry's rsp */
};

static bool sh_known(int64_t v)
{
	return v != SH_UNSET && v != SH_UNKNOWN;
}

static int64_t sh_add(int64_t v, int64_t d)
{
	return sh_known(v) && d > -(INT64_C(1) << 32) && d < (INT64_C(1) << 32) ? v + d
										: SH_UNKNOWN;
}

/* The state after instruction in. */
static struct sh_state sh_step(const struct dp_insn *in, struct sh_state s)
{
	bool legacy = in->enc == DP_ENC_LEGACY && in->map == DP_MAP_1BYTE;
	bool rsp_rm = in->has_modrm && in->mod == 3 && in->rm == DP_REG_RSP;
	uint8_t op = in->opcode;

	if (in->regs_written & (1u << DP_REG_RBP))
		s.rbp = SH_UNKNOWN;
	if (in->flow == DP_FLOW_CALL || in->flow == DP_FLOW_CALL_IND)
		return s;	/* the callee pops its return address */
	if (legacy && in->opsize == 8 &&
	    ((op >= 0x50 && op <= 0x57) || op == 0x68 || op == 0x6a || op == 0x9c ||
	     (op == 0xff && (in->reg & 7) == 6))) {
		s.rsp = sh_add(s.rsp, -8);
		return s;
	}
	if (legacy && in->opsize == 8 &&
	    ((op >= 0x58 && op <= 0x5f) || op == 0x9d || (op == 0x8f && (in->reg & 7) == 0))) {
		if (op >= 0x58 && op <= 0x5f && ((op & 7) | (in->rex & 1) << 3) == DP_REG_RSP)
			s.rsp = SH_UNKNOWN;	/* pop rsp */
		else
			s.rsp = sh_add(s.rsp, 8);
		return s;
	}
	if (legacy && op == 0xc9) {		/* leave: rsp = rbp, pop rbp */
		s.rsp = sh_add(s.rbp, 8);
		s.rbp = SH_UNKNOWN;
		return s;
	}
	if (legacy && in->opsize == 8 && (op == 0x83 || op == 0x81) && rsp_rm &&
	    ((in->reg & 7) == 0 || (in->reg & 7) == 5)) {
		s.rsp = sh_add(s.rsp, (in->reg & 7) == 0 ? in->imm : -in->imm);
		return s;
	}
	if (legacy && in->opsize == 8 && op == 0x8d && in->reg == DP_REG_RSP &&
	    in->index == DP_REG_NONE && !(in->attr & DP_ATTR_RIPREL)) {
		if (in->base == DP_REG_RSP)
			s.rsp = sh_add(s.rsp, in->disp);
		else if (in->base == DP_REG_RBP)
			s.rsp = sh_add(s.rbp, in->disp);
		else
			s.rsp = SH_UNKNOWN;
		return s;
	}
	if (legacy && in->opsize == 8 && in->has_modrm && in->mod == 3 &&
	    (op == 0x89 || op == 0x8b)) {
		unsigned dst = op == 0x89 ? in->rm : in->reg, src = op == 0x89 ? in->reg : in->rm;

		if (dst == DP_REG_RBP && src == DP_REG_RSP) {
			s.rbp = s.rsp;
			return s;
		}
		if (dst == DP_REG_RSP) {
			s.rsp = src == DP_REG_RBP && sh_known(s.rbp) ? s.rbp : SH_UNKNOWN;
			return s;
		}
	}
	if ((in->attr & DP_ATTR_STACK) || (in->regs_written & (1u << DP_REG_RSP)))
		s.rsp = SH_UNKNOWN;
	return s;
}

static int64_t sh_meet(int64_t a, int64_t b)
{
	if (a == SH_UNSET)
		return b;
	return a == b ? a : SH_UNKNOWN;
}

/* Where control may go after instruction i, but to the cases of a table. */
static unsigned sh_succs(const struct tc_fn *tf, uint32_t i, const struct dp_insn *in,
			 uint32_t succ[2])
{
	const struct an_func_ctx *ctx = &tf->ctx;
	unsigned n = 0;

	if ((in->flow == DP_FLOW_JMP || in->flow == DP_FLOW_JCC || in->flow == DP_FLOW_LOOP) &&
	    (in->attr & DP_ATTR_REL)) {
		uint64_t t = dp_insn_target(in, ctx->start + ctx->off[i]);
		long k = t - ctx->start < ctx->size ? an_insn_index(ctx->off, ctx->n, t - ctx->start)
						    : -1;

		if (k >= 0)
			succ[n++] = (uint32_t)k;
	}
	/* Not across a gap: instruction i + 1 may be another part's first. */
	if (i + 1 < ctx->n && ctx->off[i] + in->len == ctx->off[i + 1] &&
	    in->flow != DP_FLOW_JMP && in->flow != DP_FLOW_JMP_IND && in->flow != DP_FLOW_RET && in->flow != DP_FLOW_FAR && in->flow != DP_FLOW_UD &&
	    in->flow != DP_FLOW_INT && in->flow != DP_FLOW_TRAP &&
	    !an_call_noreturn(ctx->obj, in, ctx->start + ctx->off[i]))
		succ[n++] = i + 1;
	return n;
}

/* Merges `out` into instruction k's state; queues k when it changed. */
static void sh_flow(struct sh_state *st, uint32_t *work, size_t *nwork, uint8_t *queued,
		    uint32_t k, struct sh_state out)
{
	struct sh_state m = { sh_meet(st[k].rsp, out.rsp), sh_meet(st[k].rbp, out.rbp) };

	if (m.rsp == st[k].rsp && m.rbp == st[k].rbp)
		return;
	st[k] = m;
	if (!queued[k]) {
		queued[k] = 1;
		work[(*nwork)++] = k;
	}
}

/* Runs the pass over the function once: tf->rsp, or NULL when out of memory. */
static void stack_heights(struct tc_fn *tf)
{
	const struct an_func_ctx *ctx = &tf->ctx;
	struct sh_state *st = malloc(ctx->n * sizeof(*st));
	uint32_t *work = malloc(ctx->n * sizeof(*work));
	uint32_t *cases = malloc(ctx->n * sizeof(*cases));
	uint8_t *queued = calloc(ctx->n, 1);
	const struct sh_state unknown = { SH_UNKNOWN, SH_UNKNOWN };
	size_t nwork = 0, ncases = 0;

	tf->rsp_done = true;
	if (!st || !work || !cases || !queued || !ctx->n)
		goto out;
	for (uint32_t i = 0; i < ctx->n; i++) {
		st[i].rsp = st[i].rbp = SH_UNSET;
		if (tf->entry[i] & TC_CASE)
			cases[ncases++] = i;
		/* An entry starts at 0; an instruction entered from elsewhere
		 * with a stack this pass does not see. */
		if (tf->entry[i] & TC_ENTRY)
			sh_flow(st, work, &nwork, queued, i, (struct sh_state){ 0, SH_UNKNOWN });
		else if (tf->entry[i] & TC_FOREIGN)
			sh_flow(st, work, &nwork, queued, i, unknown);
	}
	/* Each value only goes from unset to known to unknown, and an
	 * instruction waits in the list at most once: the pass ends. */
	while (nwork) {
		uint32_t i = work[--nwork], succ[2];
		struct sh_state out;
		struct dp_insn in;
		unsigned nsucc;

		queued[i] = 0;
		if (!an_insn_at(ctx, i, &in))
			continue;
		out = sh_step(&in, st[i]);
		nsucc = sh_succs(tf, i, &in, succ);
		for (unsigned k = 0; k < nsucc; k++)
			sh_flow(st, work, &nwork, queued, succ[k], out);
		/* A table jmp may go to any case of the function. */
		for (unsigned t = 0; in.flow == DP_FLOW_JMP_IND && t < tf->ntables; t++)
			for (size_t c = 0; tf->tables[t] == i && c < ncases; c++)
				sh_flow(st, work, &nwork, queued, cases[c],
					tf->tables_overflow ? unknown : out);
	}
	tf->rsp = malloc(ctx->n * sizeof(*tf->rsp));
	for (uint32_t i = 0; tf->rsp && i < ctx->n; i++)
		tf->rsp[i] = st[i].rsp;
out:
	free(st);
	free(work);
	free(cases);
	free(queued);
}

/* Whether rsp at instruction `at` is its entry value on every path. */
static bool frame_torn_down(struct tc_fn *tf, uint32_t at)
{
	if (!tf->rsp_done)
		stack_heights(tf);
	return tf->rsp && tf->rsp[at] == 0;
}

/* ---- the jmps --------------------------------------------------------- */

static bool tail_call(struct tc_fn *tf, uint32_t i)
{
	struct dp_insn in;
	unsigned org;

	if (!an_insn_at(&tf->ctx, i, &in) || in.flow != DP_FLOW_JMP_IND)
		return false;
	/* jmp [mem]: the target is a pointer held in memory. */
	if (in.mod != 3)
		return true;
	tf->ctx.walk->ctx = &tf->ctx;
	org = reg_origin(tf, i, in.rm, 0);
	if (org & ORG_OTHER)
		return false;
	return !(org & ORG_HANDED) || frame_torn_down(tf, i);
}

/*
 * Whether every indirect jmp of fn that no table explains is a tail call,
 * and no label inside fn or its parts is held anywhere (a jmp in a part
 * may go back into the function).
 */
static int all_tail_calls(struct dp_object *obj, struct an_walk *walk,
			  const struct dp_function *fn, bool *all)
{
	struct tc_fn tf = { .ctx = { .obj = obj, .walk = walk } };
	int err;

	*all = false;
	if (!dp_elf_code(obj->elf, fn->start, fn->size) || !fn->ninsns ||
	    (fn->flags & DP_FN_UNDECODED))
		return 0;
	err = tc_fn_init(&tf, obj, fn);
	*all = !err;
	for (unsigned m = 0; m < tf.nparts && *all; m++)
		*all = !an_code_named_inside(obj, tf.parts[m]);
	for (uint32_t r = 0; r < fn->nrets && *all; r++) {
		long i;

		if (fn->rets[r].kind != DP_RET_TAIL_INDIRECT)
			continue;
		i = an_insn_index(tf.ctx.off, tf.ctx.n, fn->rets[r].addr - tf.ctx.start);
		*all = i >= 0 && tail_call(&tf, (uint32_t)i);
	}
	tc_fn_release(&tf);
	return err;
}

static bool has_unexplained_jmp(const struct dp_function *fn)
{
	for (uint32_t r = 0; r < fn->nrets; r++)
		if (fn->rets[r].kind == DP_RET_TAIL_INDIRECT)
			return true;
	return false;
}

int an_tail_calls_settle(struct dp_object *obj)
{
	struct an_walk *walk = NULL;
	uint64_t ninsns = 0;
	bool any = false;
	int err;

	for (size_t f = 0; f < obj->nfns; f++) {
		ninsns += obj->fns[f].ninsns;
		any = any || has_unexplained_jmp(&obj->fns[f]);
	}
	if (!any)
		return 0;
	/* Who enters where, once for the object: each way in counts. */
	err = an_u64_sort(obj->entered.v, obj->entered.n);
	if (!err && obj->njumped > 1)
		qsort(obj->jumped, obj->njumped, sizeof(*obj->jumped), jump_cmp);
	if (!err && obj->code_refs_known && !(walk = calloc(1, sizeof(*walk))))
		err = -ENOMEM;
	if (err)
		return err;
	/* Hostile code full of indirect jmps gets linear time, not more. */
	if (walk)
		walk->budget = ninsns * AN_WALK_PER_INSN + AN_WALK_SLACK;
	for (size_t f = 0; f < obj->nfns && !err; f++) {
		struct dp_function *fn = &obj->fns[f];
		bool all = false;

		if (!has_unexplained_jmp(fn))
			continue;
		if (walk)
			err = all_tail_calls(obj, walk, fn, &all);
		if (!all)
			fn->flags |= DP_FN_INDIRECT;
	}
	free(walk);
	return err;
}
