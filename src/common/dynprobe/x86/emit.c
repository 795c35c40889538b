/*
 * x86-64 code emitter: encodings of the forms in emit.h.
 *
 * Each function assembles its whole instruction in a small local buffer and
 * hands it to put(), so an instruction is either written entirely or not at
 * all, and the capacity check lives in one place.
 */
#include <errno.h>
#include <string.h>

#include "x86/emit.h"

struct ibuf {
	uint8_t b[24];
	unsigned n;
};

static void ib_u8(struct ibuf *ib, uint8_t v)
{
	ib->b[ib->n++] = v;
}

static void ib_u16(struct ibuf *ib, uint16_t v)
{
	ib_u8(ib, v & 0xff);
	ib_u8(ib, v >> 8);
}

static void ib_u32(struct ibuf *ib, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		ib_u8(ib, (v >> (8 * i)) & 0xff);
}

static void ib_u64(struct ibuf *ib, uint64_t v)
{
	ib_u32(ib, (uint32_t)v);
	ib_u32(ib, (uint32_t)(v >> 32));
}

static void fail(struct dp_emit *e, int err)
{
	if (!e->err)
		e->err = err;
}

/* Room for n more bytes (taken), or NULL with -ENOSPC recorded: nothing is
 * ever written past the capacity, nor after an error. */
static uint8_t *take(struct dp_emit *e, size_t n)
{
	uint8_t *at;

	if (e->err)
		return NULL;
	if (n > e->cap - e->len) {
		fail(e, -ENOSPC);
		return NULL;
	}
	at = e->code + e->len;
	e->len += n;
	return at;
}

/* Writes the instruction, or records -ENOSPC and writes nothing. */
static bool put(struct dp_emit *e, const struct ibuf *ib)
{
	uint8_t *at = take(e, ib->n);

	if (at)
		memcpy(at, ib->b, ib->n);
	return at != NULL;
}

/* Records a fix-up for the rel field that ends the instruction just put. */
static void fixup(struct dp_emit *e, int label, unsigned size)
{
	if (e->err)
		return;
	if (label < 0 || (unsigned)label >= e->nlabels) {
		fail(e, -EINVAL);
		return;
	}
	if (e->nfixups == DP_EMIT_MAX_FIXUPS) {
		fail(e, -E2BIG);
		return;
	}
	e->fixups[e->nfixups++] = (struct dp_emit_fixup){
		.at = e->len - size, .size = size, .label = label,
	};
}

void dp_emit_init(struct dp_emit *e, void *buf, size_t cap, uint64_t pc)
{
	memset(e, 0, sizeof(*e));
	e->code = buf;
	e->cap = cap;
	e->pc = pc;
}

int dp_emit_finish(struct dp_emit *e)
{
	for (unsigned i = 0; i < e->nfixups && !e->err; i++) {
		const struct dp_emit_fixup *f = &e->fixups[i];
		int64_t to = e->label_off[f->label];
		int64_t rel = to - (int64_t)(f->at + f->size);

		if (to < 0) {
			fail(e, -EINVAL);
		} else if (f->size == 1) {
			if (rel < INT8_MIN || rel > INT8_MAX)
				fail(e, -ERANGE);
			else
				e->code[f->at] = (uint8_t)rel;
		} else {
			uint32_t v = (uint32_t)(int32_t)rel;

			memcpy(e->code + f->at, &v, 4);
		}
	}
	e->nfixups = 0;
	return e->err;
}

bool dp_rel32_reaches(uint64_t from, uint64_t to)
{
	int64_t d = (int64_t)(to - from);

	return d >= INT32_MIN && d <= INT32_MAX;
}

int dp_emit_label(struct dp_emit *e)
{
	if (e->nlabels == DP_EMIT_MAX_LABELS) {
		fail(e, -E2BIG);
		return -1;
	}
	e->label_off[e->nlabels] = -1;
	return e->nlabels++;
}

void dp_emit_bind(struct dp_emit *e, int label)
{
	if (label < 0 || (unsigned)label >= e->nlabels)
		fail(e, -EINVAL);
	else
		e->label_off[label] = e->len;
}

void dp_emit_bytes(struct dp_emit *e, const void *bytes, size_t n)
{
	uint8_t *at = take(e, n);

	if (at)
		memcpy(at, bytes, n);
}

/* ---- control flow ---------------------------------------------------- */

/* An opcode followed by a rel32 to an absolute target. */
static void put_rel32(struct dp_emit *e, const uint8_t *op, unsigned oplen, uint64_t target)
{
	struct ibuf ib = { .n = 0 };
	uint64_t next = dp_emit_pc(e) + oplen + 4;

	if (!dp_rel32_reaches(next, target)) {
		fail(e, -ERANGE);
		return;
	}
	for (unsigned i = 0; i < oplen; i++)
		ib_u8(&ib, op[i]);
	ib_u32(&ib, (uint32_t)(target - next));
	put(e, &ib);
}

void dp_emit_jmp_rel32(struct dp_emit *e, uint64_t target)
{
	put_rel32(e, (const uint8_t[]){ 0xe9 }, 1, target);
}

void dp_emit_jmp_rel8(struct dp_emit *e, uint64_t target)
{
	struct ibuf ib = { .b = { 0xeb }, .n = 1 };
	int64_t rel = (int64_t)(target - (dp_emit_pc(e) + 2));

	if (rel < INT8_MIN || rel > INT8_MAX) {
		fail(e, -ERANGE);
		return;
	}
	ib_u8(&ib, (uint8_t)(int8_t)rel);
	put(e, &ib);
}

void dp_emit_jmp_abs(struct dp_emit *e, uint64_t target)
{
	struct ibuf ib = { .b = { 0xff, 0x25, 0, 0, 0, 0 }, .n = 6 };

	ib_u64(&ib, target);
	put(e, &ib);
}

void dp_emit_jmp(struct dp_emit *e, uint64_t target)
{
	if (dp_rel32_reaches(dp_emit_pc(e) + 5, target))
		dp_emit_jmp_rel32(e, target);
	else
		dp_emit_jmp_abs(e, target);
}

void dp_emit_jmp_label(struct dp_emit *e, int label)
{
	struct ibuf ib = { .b = { 0xe9, 0, 0, 0, 0 }, .n = 5 };

	if (put(e, &ib))
		fixup(e, label, 4);
}

void dp_emit_jcc_rel32(struct dp_emit *e, enum dp_cc cc, uint64_t target)
{
	put_rel32(e, (const uint8_t[]){ 0x0f, 0x80 | (cc & 15) }, 2, target);
}

void dp_emit_jcc(struct dp_emit *e, enum dp_cc cc, uint64_t target)
{
	if (dp_rel32_reaches(dp_emit_pc(e) + 6, target)) {
		dp_emit_jcc_rel32(e, cc, target);
		return;
	}
	/* The inverse condition skips the 14-byte absolute jump. */
	struct ibuf ib = { .b = { 0x70 | ((cc ^ 1) & 15), 14 }, .n = 2 };

	put(e, &ib);
	dp_emit_jmp_abs(e, target);
}

void dp_emit_jcc_label(struct dp_emit *e, enum dp_cc cc, int label)
{
	struct ibuf ib = { .b = { 0x0f, 0x80 | (cc & 15), 0, 0, 0, 0 }, .n = 6 };

	if (put(e, &ib))
		fixup(e, label, 4);
}

void dp_emit_jcc8_label(struct dp_emit *e, enum dp_cc cc, int label)
{
	struct ibuf ib = { .b = { 0x70 | (cc & 15), 0 }, .n = 2 };

	if (put(e, &ib))
		fixup(e, label, 1);
}

void dp_emit_jmp8_label(struct dp_emit *e, int label)
{
	struct ibuf ib = { .b = { 0xeb, 0 }, .n = 2 };

	if (put(e, &ib))
		fixup(e, label, 1);
}

void dp_emit_loop8_label(struct dp_emit *e, uint8_t opcode, bool addr32, int label)
{
	struct ibuf ib = { .n = 0 };

	if (opcode < 0xe0 || opcode > 0xe3) {
		fail(e, -EINVAL);
		return;
	}
	if (addr32)
		ib_u8(&ib, 0x67);
	ib_u8(&ib, opcode);
	ib_u8(&ib, 0);
	if (put(e, &ib))
		fixup(e, label, 1);
}

void dp_emit_call_reg(struct dp_emit *e, enum dp_reg reg)
{
	struct ibuf ib = { .n = 0 };

	if (reg >= 8)
		ib_u8(&ib, 0x41);
	ib_u8(&ib, 0xff);
	ib_u8(&ib, 0xd0 | (reg & 7));
	put(e, &ib);
}

void dp_emit_ret_imm16(struct dp_emit *e, uint16_t pop)
{
	struct ibuf ib = { .b = { 0xc2 }, .n = 1 };

	ib_u16(&ib, pop);
	put(e, &ib);
}

void dp_emit_int3(struct dp_emit *e, size_t n)
{
	uint8_t *at = take(e, n);

	if (at)
		memset(at, 0xcc, n);
}

/* ---- stack, flags, general registers ---------------------------------- */

static void put_opreg(struct dp_emit *e, uint8_t base, enum dp_reg reg)
{
	struct ibuf ib = { .n = 0 };

	if (reg >= 8)
		ib_u8(&ib, 0x41);
	ib_u8(&ib, base | (reg & 7));
	put(e, &ib);
}

void dp_emit_push_reg(struct dp_emit *e, enum dp_reg reg)
{
	put_opreg(e, 0x50, reg);
}

void dp_emit_pop_reg(struct dp_emit *e, enum dp_reg reg)
{
	put_opreg(e, 0x58, reg);
}

static void put1(struct dp_emit *e, uint8_t op)
{
	struct ibuf ib = { .b = { op }, .n = 1 };

	put(e, &ib);
}

void dp_emit_pushfq(struct dp_emit *e)
{
	put1(e, 0x9c);
}

void dp_emit_popfq(struct dp_emit *e)
{
	put1(e, 0x9d);
}

void dp_emit_cld(struct dp_emit *e)
{
	put1(e, 0xfc);
}

void dp_emit_push_imm64(struct dp_emit *e, uint64_t value)
{
	struct ibuf ib = { .b = { 0x68 }, .n = 1 };

	/* push imm32 sign-extends; fix the high half in place when needed. */
	ib_u32(&ib, (uint32_t)value);
	if ((uint64_t)(int64_t)(int32_t)value != value) {
		ib_u8(&ib, 0xc7);
		ib_u8(&ib, 0x44);
		ib_u8(&ib, 0x24);
		ib_u8(&ib, 0x04);
		ib_u32(&ib, (uint32_t)(value >> 32));
	}
	put(e, &ib);
}

/* REX.W op modrm(mod 10, reg, base) [SIB] disp32: a [base + disp32] operand. */
static void put_mem(struct dp_emit *e, uint8_t rex, const uint8_t *op, unsigned oplen,
		    unsigned reg, enum dp_reg base, int32_t disp)
{
	struct ibuf ib = { .n = 0 };

	rex |= ((reg >> 3) & 1) << 2 | ((base >> 3) & 1);
	if (rex)
		ib_u8(&ib, 0x40 | rex);
	for (unsigned i = 0; i < oplen; i++)
		ib_u8(&ib, op[i]);
	ib_u8(&ib, 0x80 | (reg & 7) << 3 | (base & 7));
	if ((base & 7) == DP_REG_RSP)
		ib_u8(&ib, 0x24);
	ib_u32(&ib, (uint32_t)disp);
	put(e, &ib);
}

void dp_emit_lea_rsp(struct dp_emit *e, int32_t off)
{
	put_mem(e, 0x08, (const uint8_t[]){ 0x8d }, 1, DP_REG_RSP, DP_REG_RSP, off);
}

void dp_emit_lea_reg_rsp(struct dp_emit *e, enum dp_reg dst, int32_t off)
{
	put_mem(e, 0x08, (const uint8_t[]){ 0x8d }, 1, dst, DP_REG_RSP, off);
}

void dp_emit_mov_reg_imm64(struct dp_emit *e, enum dp_reg reg, uint64_t value)
{
	struct ibuf ib = { .n = 0 };

	if (value <= UINT32_MAX) {
		/* mov r32, imm32 zero-extends. */
		if (reg >= 8)
			ib_u8(&ib, 0x41);
		ib_u8(&ib, 0xb8 | (reg & 7));
		ib_u32(&ib, (uint32_t)value);
	} else {
		ib_u8(&ib, 0x48 | (reg >= 8));
		ib_u8(&ib, 0xb8 | (reg & 7));
		ib_u64(&ib, value);
	}
	put(e, &ib);
}

void dp_emit_mov_reg_reg(struct dp_emit *e, enum dp_reg dst, enum dp_reg src)
{
	struct ibuf ib = { .n = 0 };

	ib_u8(&ib, 0x48 | ((src >> 3) & 1) << 2 | ((dst >> 3) & 1));
	ib_u8(&ib, 0x89);
	ib_u8(&ib, 0xc0 | (src & 7) << 3 | (dst & 7));
	put(e, &ib);
}

void dp_emit_load(struct dp_emit *e, enum dp_reg dst, enum dp_reg base, int32_t disp)
{
	put_mem(e, 0x08, (const uint8_t[]){ 0x8b }, 1, dst, base, disp);
}

void dp_emit_store(struct dp_emit *e, enum dp_reg base, int32_t disp, enum dp_reg src)
{
	put_mem(e, 0x08, (const uint8_t[]){ 0x89 }, 1, src, base, disp);
}

void dp_emit_align_rsp(struct dp_emit *e, unsigned align)
{
	struct ibuf ib = { .b = { 0x48, 0x83, 0xe4 }, .n = 3 };

	if (!align || (align & (align - 1)) || align > 128) {
		fail(e, -EINVAL);
		return;
	}
	ib_u8(&ib, (uint8_t)-(int)align);
	put(e, &ib);
}

void dp_emit_sub_rsp(struct dp_emit *e, uint32_t n)
{
	struct ibuf ib = { .b = { 0x48, 0x81, 0xec }, .n = 3 };

	ib_u32(&ib, n);
	put(e, &ib);
}

/* ---- vector and control state at [rsp + disp32] ------------------------ */

static void put_sse(struct dp_emit *e, uint8_t op, unsigned xmm, int32_t disp)
{
	put_mem(e, 0, (const uint8_t[]){ 0x0f, op }, 2, xmm, DP_REG_RSP, disp);
}

void dp_emit_movups_store(struct dp_emit *e, int32_t disp, unsigned xmm)
{
	put_sse(e, 0x11, xmm, disp);
}

void dp_emit_movups_load(struct dp_emit *e, unsigned xmm, int32_t disp)
{
	put_sse(e, 0x10, xmm, disp);
}

/* A VEX or EVEX prefix, the opcode, then modrm(mod 10, reg, rsp) SIB(24)
 * disp32: the vector and mask moves to and from the save area. */
static void put_vex_rsp(struct dp_emit *e, const uint8_t *prefix, unsigned plen, uint8_t op,
			unsigned reg, int32_t disp)
{
	struct ibuf ib = { .n = 0 };

	for (unsigned i = 0; i < plen; i++)
		ib_u8(&ib, prefix[i]);
	ib_u8(&ib, op);
	ib_u8(&ib, 0x84 | (reg & 7) << 3);
	ib_u8(&ib, 0x24);
	ib_u32(&ib, (uint32_t)disp);
	put(e, &ib);
}

/* VEX.256.F3.0F 6F/7F: vmovdqu ymm. */
static void put_vmovdqu(struct dp_emit *e, uint8_t op, unsigned ymm, int32_t disp)
{
	const uint8_t vex[] = { 0xc5, (ymm < 8 ? 0x80 : 0) | 0x7e };

	put_vex_rsp(e, vex, sizeof(vex), op, ymm, disp);
}

void dp_emit_vmovdqu_store(struct dp_emit *e, int32_t disp, unsigned ymm)
{
	put_vmovdqu(e, 0x7f, ymm, disp);
}

void dp_emit_vmovdqu_load(struct dp_emit *e, unsigned ymm, int32_t disp)
{
	put_vmovdqu(e, 0x6f, ymm, disp);
}

/* EVEX.512.F3.0F.W1 6F/7F: vmovdqu64 zmm.  disp32 is never scaled. */
static void put_vmovdqu64(struct dp_emit *e, uint8_t op, unsigned zmm, int32_t disp)
{
	const uint8_t evex[] = {
		0x62, (!(zmm & 8)) << 7 | 0x60 | (!(zmm & 16)) << 4 | 0x01, 0xfe, 0x48,
	};

	put_vex_rsp(e, evex, sizeof(evex), op, zmm, disp);
}

void dp_emit_vmovdqu64_store(struct dp_emit *e, int32_t disp, unsigned zmm)
{
	put_vmovdqu64(e, 0x7f, zmm, disp);
}

void dp_emit_vmovdqu64_load(struct dp_emit *e, unsigned zmm, int32_t disp)
{
	put_vmovdqu64(e, 0x6f, zmm, disp);
}

/* VEX.L0.0F.W1 90/91: kmovq. */
static void put_kmovq(struct dp_emit *e, uint8_t op, unsigned k, int32_t disp)
{
	static const uint8_t vex[] = { 0xc4, 0xe1, 0xf8 };

	put_vex_rsp(e, vex, sizeof(vex), op, k & 7, disp);
}

void dp_emit_kmovq_store(struct dp_emit *e, int32_t disp, unsigned k)
{
	put_kmovq(e, 0x91, k, disp);
}

void dp_emit_kmovq_load(struct dp_emit *e, unsigned k, int32_t disp)
{
	put_kmovq(e, 0x90, k, disp);
}

static void put_group(struct dp_emit *e, const uint8_t *op, unsigned oplen, unsigned ext,
		      int32_t disp)
{
	put_mem(e, 0, op, oplen, ext, DP_REG_RSP, disp);
}

void dp_emit_stmxcsr(struct dp_emit *e, int32_t disp)
{
	put_group(e, (const uint8_t[]){ 0x0f, 0xae }, 2, 3, disp);
}

void dp_emit_ldmxcsr(struct dp_emit *e, int32_t disp)
{
	put_group(e, (const uint8_t[]){ 0x0f, 0xae }, 2, 2, disp);
}

void dp_emit_fnstcw(struct dp_emit *e, int32_t disp)
{
	put_group(e, (const uint8_t[]){ 0xd9 }, 1, 7, disp);
}

void dp_emit_fldcw(struct dp_emit *e, int32_t disp)
{
	put_group(e, (const uint8_t[]){ 0xd9 }, 1, 5, disp);
}

void dp_emit_vzeroupper(struct dp_emit *e)
{
	struct ibuf ib = { .b = { 0xc5, 0xf8, 0x77 }, .n = 3 };

	put(e, &ib);
}
