/*
 * Jump-table bounds: how many entries the index of a table load can select,
 * from the unsigned bounds check the compiler put on every path to it:
 *
 *   cmp $N,%eI; ja default    (falls through: index <= N)
 *   cmp $N,%eI; jae default   (index < N)
 *   cmp $N,%eI; jbe dispatch  (taken: index <= N), jb likewise
 *
 * Walking back from the load, the index is followed through register copies
 * (mov, movzx, movsxd), and through a load from memory to a compare of that
 * same memory (cmpb $N,8(%rdx); ja; movzbl 8(%rdx),%ecx), as long as nothing
 * between them may change the memory or its address.  A jcc waits for the
 * next instruction that writes the flags: the bound holds only if that is a
 * compare of the index.  Along one path every compare holds: of two, the
 * tighter bounds the index.  At a join every path must give a bound and the
 * largest one wins: the table serves every path.
 */
#include "patch/analysis-internal.h"

/* Condition codes of jcc (low nibble of 7x and 0F 8x). */
#define CC_B 0x2
#define CC_AE 0x3
#define CC_BE 0x6
#define CC_A 0x7

#define BOUND_UNKNOWN 0
#define BOUND_CYCLE UINT64_MAX

/* A memory operand, with a RIP-relative one as its absolute address. */
struct memop {
	bool on;
	bool rip;
	uint8_t base, index, scale, seg;
	uint8_t width;		/* bytes the load read */
	uint64_t disp;		/* displacement, or the address when rip */
};

/*
 * What the walk carries: where the index is (a register, or the memory it
 * was loaded from), the narrowest compare that bounds it (a byte compare
 * only counts once a movzbl widened that byte), and whether a jcc seen below
 * waits for its compare: index <= N (pend 1), index < N (pend 0), none (-1).
 * A compare that does not settle it is kept as a candidate: a compare of
 * another register bounds the index when, further back, the index turns out
 * to be a copy of it (mov %ebp,%edi; cmp $12,%ebp; ja), and a compare of
 * only the low byte of the index (cmp $6,%al) bounds it when, further back,
 * the index turns out to be zero-extended from that byte (movzbl ...,%eax).
 */
struct bstate {
	uint8_t reg;
	uint8_t width;
	int8_t pend;
	struct memop m;
	uint8_t cand_reg;	/* DP_REG_NONE, or a register bounded by cand */
	uint8_t cand_width;	/* the bytes of cand_reg the compare saw */
	uint32_t cand;
};

static uint64_t bstate_key(const struct bstate *s, bool taken)
{
	uint64_t k = (uint64_t)s->reg | (uint64_t)s->width << 8 | (uint64_t)(uint8_t)s->pend << 16 |
		     (uint64_t)taken << 24 | (uint64_t)s->m.on << 25 |
		     (uint64_t)s->cand_reg << 26 | (uint64_t)s->cand_width << 31 |
		     (uint64_t)s->cand << 35;

	if (s->m.on)
		k ^= s->m.disp * UINT64_C(0xff51afd7ed558ccd) ^
		     ((uint64_t)s->m.base << 32 | (uint64_t)s->m.index << 40 |
		      (uint64_t)s->m.scale << 48 | (uint64_t)s->m.width << 52 |
		      (uint64_t)s->m.rip << 56 | (uint64_t)s->m.seg << 57);
	return k;
}

static uint64_t insn_addr(const struct an_walk *w, uint32_t j)
{
	return w->ctx->start + w->ctx->off[j];
}

static struct memop memop_of(const struct dp_insn *in, uint64_t addr, unsigned width)
{
	struct memop m = {
		.on = true,
		.rip = in->attr & DP_ATTR_RIPREL,
		.base = in->base,
		.index = in->index,
		.scale = in->index == DP_REG_NONE ? 0 : in->scale,
		.seg = in->seg,
		.width = (uint8_t)width,
		.disp = (uint64_t)in->disp,
	};

	if (m.rip)
		m.disp += addr + in->len;
	return m;
}

static bool memop_eq(const struct memop *a, const struct memop *b)
{
	return a->rip == b->rip && a->base == b->base && a->index == b->index &&
	       a->scale == b->scale && a->seg == b->seg && a->disp == b->disp;
}

/* Instructions that leave the flags alone (a safe subset). */
static bool keeps_flags(const struct dp_insn *in)
{
	uint8_t o = in->opcode;

	if (in->enc != DP_ENC_LEGACY)
		return false;
	if (in->map == DP_MAP_1BYTE)
		return (o >= 0x88 && o <= 0x8b) || o == 0x8d || o == 0x63 || o == 0x90 ||
		       o == 0xc6 || o == 0xc7 || (o >= 0xb0 && o <= 0xbf) ||
		       (o >= 0x50 && o <= 0x5f) || (o >= 0x70 && o <= 0x7f) || o == 0xe9 ||
		       o == 0xeb;
	if (in->map == DP_MAP_0F)
		return o == 0xb6 || o == 0xb7 || o == 0xbe || o == 0xbf || o == 0x1e || o == 0x1f ||
		       (o >= 0x40 && o <= 0x4f) || (o >= 0x80 && o <= 0x9f);
	return false;
}

/*
 * A plain store (mov to memory) beside the index's memory: same base, no
 * index, bytes that do not overlap.  gcc schedules such stores between the
 * compare and the load of the index.
 */
static bool store_beside(const struct dp_insn *in, const struct memop *m)
{
	uint8_t o = in->opcode;
	unsigned width;
	int64_t a, b;

	if (in->enc != DP_ENC_LEGACY || in->map != DP_MAP_1BYTE || in->mod == 3 ||
	    (o != 0x88 && o != 0x89 && o != 0xc6 && o != 0xc7) ||
	    ((o == 0xc6 || o == 0xc7) && (in->reg & 7)))
		return false;
	if (m->rip || (in->attr & DP_ATTR_RIPREL) || m->base == DP_REG_NONE ||
	    m->index != DP_REG_NONE || in->index != DP_REG_NONE || in->base != m->base ||
	    in->seg != m->seg)
		return false;
	width = o == 0x88 || o == 0xc6 ? 1 : in->opsize;
	a = in->disp;
	b = (int64_t)m->disp;
	return a + (int64_t)width <= b || b + (int64_t)m->width <= a;
}

/*
 * Instructions that certainly write no memory (a safe subset): while the
 * index lives in memory, anything else may change it.
 */
static bool writes_no_memory(const struct dp_insn *in)
{
	uint8_t o = in->opcode;

	/* Calls, and push, pop and the like, store to the stack. */
	if (in->flow == DP_FLOW_CALL || in->flow == DP_FLOW_CALL_IND ||
	    (in->regs_written >> DP_REG_RSP & 1))
		return false;
	if (!(in->attr & DP_ATTR_MEM)) {
		/* movs, stos and maskmov store through rdi without a memory operand. */
		if (in->enc == DP_ENC_LEGACY && in->map == DP_MAP_1BYTE &&
		    (o == 0xa4 || o == 0xa5 || o == 0xaa || o == 0xab))
			return false;
		return !(in->enc == DP_ENC_LEGACY && in->map == DP_MAP_0F && o == 0xf7) &&
		       !(in->enc == DP_ENC_VEX && in->map == DP_MAP_0F && o == 0xf7);
	}
	if (in->enc != DP_ENC_LEGACY)
		return false;
	if (in->map == DP_MAP_1BYTE) {
		switch (o) {
		case 0x02: case 0x03: case 0x0a: case 0x0b: case 0x12: case 0x13:
		case 0x1a: case 0x1b: case 0x22: case 0x23: case 0x2a: case 0x2b:
		case 0x32: case 0x33: case 0x38: case 0x39: case 0x3a: case 0x3b:
		case 0x84: case 0x85: case 0x8a: case 0x8b: case 0x8d: case 0x63:
		case 0x69: case 0x6b:
			return true;	/* the memory operand is a source */
		case 0x80: case 0x81: case 0x83:
			return (in->reg & 7) == 7;	/* cmp */
		case 0xf6: case 0xf7:
			return (in->reg & 7) <= 1;	/* test */
		default:
			return false;
		}
	}
	if (in->map == DP_MAP_0F)
		return o == 0xb6 || o == 0xb7 || o == 0xbe || o == 0xbf || o == 0xaf || o == 0x18 ||
		       o == 0x1f || (o >= 0x40 && o <= 0x4f);
	return false;
}

/* A byte register as the instruction names it: false for ah..bh. */
static bool byte_reg_ok(const struct dp_insn *in, unsigned r)
{
	return in->rex || r < 4 || r >= 8;
}

/* The immediate of a compare, as the unsigned number of `width` bytes. */
static uint64_t cmp_limit(const struct dp_insn *in, unsigned width)
{
	if (width >= 8)
		return (uint64_t)in->imm;
	return (uint64_t)in->imm & ((UINT64_C(1) << (8 * width)) - 1);
}

/* `cmp $imm, %reg`: the register, the compare's width and imm, unsigned. */
static bool cmp_reg_imm(const struct dp_insn *in, unsigned *reg, unsigned *width,
			uint64_t *limit)
{
	if (in->enc != DP_ENC_LEGACY || in->map != DP_MAP_1BYTE)
		return false;
	switch (in->opcode) {
	case 0x80: case 0x81: case 0x83:
		if ((in->reg & 7) != 7 || in->mod != 3)
			return false;
		*width = in->opcode == 0x80 ? 1 : in->opsize;
		if (*width == 1 && !byte_reg_ok(in, in->rm))
			return false;
		*reg = in->rm;
		break;
	case 0x3c:
		*width = 1;
		*reg = DP_REG_RAX;
		break;
	case 0x3d:
		*width = in->opsize;
		*reg = DP_REG_RAX;
		break;
	default:
		return false;
	}
	*limit = cmp_limit(in, *width);
	return true;
}

/* `cmp $imm, <the memory the index was loaded from>`. */
static bool cmp_mem_imm(const struct dp_insn *in, uint64_t addr, const struct bstate *s,
			uint64_t *limit)
{
	unsigned width;
	struct memop m;

	if (!s->m.on || in->enc != DP_ENC_LEGACY || in->map != DP_MAP_1BYTE ||
	    (in->opcode != 0x80 && in->opcode != 0x81 && in->opcode != 0x83) ||
	    (in->reg & 7) != 7 || in->mod == 3)
		return false;
	width = in->opcode == 0x80 ? 1 : in->opsize;
	m = memop_of(in, addr, width);
	if (!memop_eq(&m, &s->m) || width < s->m.width)
		return false;
	*limit = cmp_limit(in, width);
	return true;
}

/*
 * The instruction writes the index register: follows a copy back to its
 * source, or a load to its memory.  False when the index is computed.
 */
static bool index_source(const struct dp_insn *in, uint64_t addr, struct bstate *s)
{
	uint8_t o = in->opcode;

	if (in->enc != DP_ENC_LEGACY)
		return false;
	if (in->map == DP_MAP_1BYTE && (o == 0x89 || o == 0x8b) && in->mod == 3) {
		unsigned dst = o == 0x89 ? in->rm : in->reg;

		if (dst != s->reg || in->opsize < 4)
			return false;
		s->reg = o == 0x89 ? in->reg : in->rm;
		if (in->opsize == 4 && s->width > 4)
			s->width = 4;
		return true;
	}
	if (in->map == DP_MAP_1BYTE && o == 0x8b && in->reg == s->reg && in->opsize >= 4) {
		s->m = memop_of(in, addr, in->opsize);
		return true;
	}
	if (in->map == DP_MAP_1BYTE && o == 0x63 && in->opsize == 8 && in->reg == s->reg) {
		if (in->mod != 3)
			s->m = memop_of(in, addr, 4);
		else
			s->reg = in->rm;
		s->width = 4;
		return true;
	}
	if (in->map == DP_MAP_0F && (o == 0xb6 || o == 0xb7) && in->reg == s->reg) {
		unsigned width = o == 0xb6 ? 1 : 2;

		if (in->mod != 3) {
			s->m = memop_of(in, addr, width);
			return true;
		}
		if (width == 1 && !byte_reg_ok(in, in->rm))
			return false;
		s->reg = in->rm;
		s->width = (uint8_t)width;
		return true;
	}
	return false;
}

/*
 * Whether the instruction sets reg to a value of at most `width` low bytes,
 * zero-extended: movzx from a byte or a word, or a 32-bit mov.
 */
static bool zero_extends(const struct dp_insn *in, unsigned reg, unsigned width)
{
	uint8_t o = in->opcode;

	if (in->enc != DP_ENC_LEGACY)
		return false;
	if (in->map == DP_MAP_0F && (o == 0xb6 || o == 0xb7) && in->reg == reg)
		return (o == 0xb6 ? 1u : 2u) <= width;
	if (in->map == DP_MAP_1BYTE && in->opsize == 4 && width >= 4 &&
	    ((o == 0x8b && in->reg == reg) || (o == 0x89 && in->mod == 3 && in->rm == reg)))
		return true;
	return false;
}

/* What a jcc says about the index, reached by falling through or taken. */
static void jcc_note(const struct dp_insn *in, bool taken, struct bstate *s)
{
	unsigned cc = in->opcode & 0xf;

	/* Taken jbe/jb and fall-through ja/jae bound from above; their opposites do not. */
	if (cc == (taken ? CC_BE : CC_A))
		s->pend = 1;
	else if (cc == (taken ? CC_B : CC_AE))
		s->pend = 0;
	else if (cc == CC_A || cc == CC_AE || cc == CC_BE || cc == CC_B)
		s->pend = -1;
}

/*
 * One instruction of the walk.  Returns true with *bound set when the walk
 * ends here (a bound, or BOUND_UNKNOWN), false to go on to the predecessors.
 */
static bool bound_step(struct an_walk *w, uint32_t j, bool taken, struct bstate *s,
		       uint64_t *bound)
{
	uint64_t addr = insn_addr(w, j), limit;
	unsigned reg, width;
	struct dp_insn in;

	*bound = BOUND_UNKNOWN;
	if (!an_walk_step(w) || !an_insn_at(w->ctx, j, &in))
		return true;
	if (in.flow == DP_FLOW_JCC) {
		jcc_note(&in, taken, s);
		return false;
	}
	if (s->pend >= 0 && cmp_mem_imm(&in, addr, s, &limit))
		goto found;
	if (s->pend >= 0 && !s->m.on && cmp_reg_imm(&in, &reg, &width, &limit)) {
		if (reg == s->reg && width >= s->width)
			goto found;
		if ((width >= 4 || reg == s->reg) &&
		    limit + (uint64_t)s->pend <= AN_JT_MAX_ENTRIES) {
			uint32_t c = (uint32_t)(limit + (uint64_t)s->pend);

			/* Two compares of the same bytes on one path both hold:
			 * the tighter one stays. */
			if (s->cand_reg != reg || s->cand_width != width || c < s->cand) {
				s->cand_reg = (uint8_t)reg;
				s->cand_width = (uint8_t)width;
				s->cand = c;
			}
		}
	}
	if (!s->m.on && an_writes_reg(&in, s->reg)) {
		/* The index is zero-extended from the bytes a compare saw. */
		if (s->cand_reg == s->reg && zero_extends(&in, s->reg, s->cand_width)) {
			*bound = s->cand;
			return true;
		}
		if (!index_source(&in, addr, s))
			return true;
		if (s->reg == s->cand_reg && !s->m.on && s->width >= 4 && s->cand_width >= 4) {
			*bound = s->cand;
			return true;
		}
	} else if (s->m.on) {
		if ((s->m.base != DP_REG_NONE && an_writes_reg(&in, s->m.base)) ||
		    (s->m.index != DP_REG_NONE && an_writes_reg(&in, s->m.index)) ||
		    (!writes_no_memory(&in) && !store_beside(&in, &s->m)))
			return true;
	}
	if (s->cand_reg != DP_REG_NONE && an_writes_reg(&in, s->cand_reg))
		s->cand_reg = DP_REG_NONE;
	/* A jcc below tested what this instruction computed, not the index. */
	if (s->pend >= 0 && !keeps_flags(&in))
		s->pend = -1;
	return false;
found:
	if (limit + (uint64_t)s->pend > AN_JT_MAX_ENTRIES)
		return true;
	*bound = limit + (uint64_t)s->pend;
	/* A value this bound keeps within the low bytes a compare nearer the
	 * load saw is those bytes: that compare bounds it too
	 * (cmp $9,%esi; ja; ...; cmp $6,%sil; ja). */
	if (!s->m.on && s->cand_reg == s->reg && s->cand_width < 8 &&
	    *bound <= UINT64_C(1) << (8 * s->cand_width) && s->cand < *bound)
		*bound = s->cand;
	return true;
}

static uint64_t bound_from(struct an_walk *w, uint32_t j, bool taken, struct bstate s);

/*
 * The bound over the np paths on top of the pool: one unknown path makes it
 * unknown, otherwise the largest wins (the table serves every path).
 */
static uint64_t bound_join(struct an_walk *w, unsigned np, const struct bstate *s)
{
	struct an_pred *p = an_walk_top(w);
	uint64_t best = BOUND_CYCLE;

	w->npool += np;
	for (unsigned k = 0; k < np; k++) {
		uint64_t b = bound_from(w, p[k].idx, p[k].taken, *s);

		if (b == BOUND_UNKNOWN) {
			best = BOUND_UNKNOWN;
			break;
		}
		if (b != BOUND_CYCLE && (best == BOUND_CYCLE || b > best))
			best = b;
	}
	w->npool -= np;
	return best;
}

/*
 * The bound along the paths into instruction j (included), reached through
 * its branch when `taken`; BOUND_CYCLE when every path loops back or comes
 * from a block no direct branch reaches.  A straight line is walked in
 * place, only joins recurse.
 */
static uint64_t bound_from(struct an_walk *w, uint32_t j, bool taken, struct bstate s)
{
	uint64_t bound;
	unsigned np;

	for (;;) {
		if (!an_walk_visit(w, j, bstate_key(&s, taken)))
			return BOUND_CYCLE;
		if (bound_step(w, j, taken, &s, &bound))
			return bound;
		np = an_preds_of(w, j);
		if (np == 0)
			return j ? BOUND_CYCLE : BOUND_UNKNOWN;
		if (!an_preds_fit(w, np))
			return BOUND_UNKNOWN;
		if (np > 1)
			return bound_join(w, np, &s);
		j = an_walk_top(w)[0].idx;
		taken = an_walk_top(w)[0].taken;
	}
}

uint64_t an_jt_bound(struct an_walk *w, uint32_t load, unsigned idx)
{
	struct bstate s = { .reg = (uint8_t)idx, .width = 4, .pend = -1, .cand_reg = DP_REG_NONE };
	unsigned np;
	uint64_t b;

	an_walk_reset(w);
	np = an_preds_of(w, load);
	if (np == 0 || !an_preds_fit(w, np))
		return BOUND_UNKNOWN;
	b = bound_join(w, np, &s);
	return b == BOUND_CYCLE ? BOUND_UNKNOWN : b;
}
