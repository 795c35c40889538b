/*
 * Trampoline layout (see tramp.h): the save/call/restore block around each
 * hook, and the relocated instructions.
 */
#include <cpuid.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "patch/tramp.h"
#include "x86/reloc.h"

#define RED_ZONE 128

/* struct dp_regs as pushed: rflags first, then rip, r15 ... rax. */
#define REGS_SIZE ((int32_t)sizeof(struct dp_regs))

/* The moves of one vector register to and from the save area, by width. */
static const struct {
	void (*store)(struct dp_emit *e, int32_t disp, unsigned reg);
	void (*load)(struct dp_emit *e, unsigned reg, int32_t disp);
} vec_moves[] = {
	[DP_VEC_SSE] = { dp_emit_movups_store, dp_emit_movups_load },
	[DP_VEC_AVX] = { dp_emit_vmovdqu_store, dp_emit_vmovdqu_load },
	[DP_VEC_AVX512] = { dp_emit_vmovdqu64_store, dp_emit_vmovdqu64_load },
	[DP_VEC_AVX512_LOW] = { dp_emit_vmovdqu64_store, dp_emit_vmovdqu64_load },
};

/* The registers a save moves (the layout may have room for more). */
static unsigned saved_regs(enum dp_vec_save vec, const struct dp_vec_layout *l)
{
	return vec == DP_VEC_AVX512_LOW ? 16 : l->nregs;
}

static unsigned saved_masks(enum dp_vec_save vec, const struct dp_vec_layout *l)
{
	return vec == DP_VEC_AVX512_LOW ? 0 : l->nmask;
}

static void vec_save(struct dp_emit *e, enum dp_vec_save vec, const struct dp_vec_layout *l)
{
	for (unsigned i = 0; i < saved_regs(vec, l); i++)
		vec_moves[vec].store(e, i * l->regsize, i);
	for (unsigned i = 0; i < saved_masks(vec, l); i++)
		dp_emit_kmovq_store(e, l->mask_off + i * 8, i);
	dp_emit_stmxcsr(e, l->mxcsr_off);
	dp_emit_fnstcw(e, l->fcw_off);
	/* Saved: legacy-SSE code in the handler must not pay for dirty upper halves. */
	if (vec != DP_VEC_SSE)
		dp_emit_vzeroupper(e);
}

static void vec_restore(struct dp_emit *e, enum dp_vec_save vec, const struct dp_vec_layout *l)
{
	dp_emit_fldcw(e, l->fcw_off);
	dp_emit_ldmxcsr(e, l->mxcsr_off);
	for (unsigned i = 0; i < saved_masks(vec, l); i++)
		dp_emit_kmovq_load(e, i, l->mask_off + i * 8);
	for (unsigned i = 0; i < saved_regs(vec, l); i++)
		vec_moves[vec].load(e, i, i * l->regsize);
}

/*
 * Whether sahf works in 64-bit mode (CPUID 0x80000001 ECX bit 0: every
 * x86-64 CPU but the first AMD K8 and Intel EM64T steppings).
 */
static bool have_sahf(void)
{
	/* Asked once: CPUID traps to the hypervisor in a virtual machine
	 * (~20 us each), and a whole program's install builds tens of
	 * thousands of trampolines. */
	static int known = -1;
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
	unsigned a, b, c, d;

	if (v < 0) {
		v = __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & 1);
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v;
}

/*
 * Puts back the flags saved in the regs at rsp, with rax free: DF (the
 * handler returns with DF clear, as the ABI wants), then OF by an add that
 * overflows exactly when it was set, then SF ZF AF PF CF by sahf.  popfq
 * would do it in one instruction, but costs ~3 ns here (it may change IF,
 * AC, TF...: microcoded); the handler changes no other flag (the C ABI code
 * it is never executes popf), so these are all that can differ.
 */
static void flags_restore(struct dp_emit *e)
{
	const int32_t at = offsetof(struct dp_regs, rflags);
	uint8_t b[] = {
		0x48, 0x8b, 0x84, 0x24, 0, 0, 0, 0,	/* mov rax, [rsp+at] */
		0xa9, 0x00, 0x04, 0x00, 0x00,		/* test eax, 0x400 (DF) */
		0x74, 0x01,				/* jz 1f */
		0xfd,					/* std */
		0x88, 0xc4,				/* 1: mov ah, al */
		0x8a, 0x84, 0x24, 0, 0, 0, 0,		/* mov al, [rsp+at+1] */
		0xc0, 0xe8, 0x03,			/* shr al, 3 */
		0x24, 0x01,				/* and al, 1: OF */
		0x04, 0x7f,				/* add al, 0x7f: OF set iff al was 1 */
		0x9e,					/* sahf */
	};
	int32_t at1 = at + 1;

	memcpy(b + 4, &at, 4);
	memcpy(b + 21, &at1, 4);
	dp_emit_bytes(e, b, sizeof(b));
}

/* Pushed in this order, so that rax ends lowest, as in struct dp_regs. */
static const enum dp_reg push_order[16] = {
	DP_REG_R15, DP_REG_R14, DP_REG_R13, DP_REG_R12, DP_REG_R11, DP_REG_R10, DP_REG_R9,
	DP_REG_R8, DP_REG_RDI, DP_REG_RSI, DP_REG_RBP, DP_REG_RSP, DP_REG_RBX, DP_REG_RDX,
	DP_REG_RCX, DP_REG_RAX,
};

static void emit_hook(struct dp_emit *e, const struct dp_tramp_hook *h, dp_handler_fn handler,
		      enum dp_vec_save vec, bool sahf)
{
	struct dp_vec_layout l = dp_vec_layout(vec);

	dp_emit_lea_rsp(e, -RED_ZONE);
	dp_emit_pushfq(e);
	dp_emit_cld(e);
	dp_emit_push_imm64(e, h->addr);
	for (unsigned i = 0; i < 16; i++)
		dp_emit_push_reg(e, push_order[i]);
	/* The rsp slot holds the rsp of the probed code. */
	dp_emit_lea_reg_rsp(e, DP_REG_RAX, REGS_SIZE + RED_ZONE);
	dp_emit_store(e, DP_REG_RSP, offsetof(struct dp_regs, rsp), DP_REG_RAX);
	/* rbx (callee-saved) keeps the regs pointer across the call. */
	dp_emit_mov_reg_reg(e, DP_REG_RBX, DP_REG_RSP);
	dp_emit_align_rsp(e, 64);
	dp_emit_sub_rsp(e, l.size);
	vec_save(e, vec, &l);

	dp_emit_mov_reg_imm64(e, DP_REG_RDI, (uint64_t)(uintptr_t)h->arg);
	dp_emit_mov_reg_reg(e, DP_REG_RSI, DP_REG_RBX);
	dp_emit_mov_reg_imm64(e, DP_REG_RAX, (uint64_t)(uintptr_t)handler);
	dp_emit_call_reg(e, DP_REG_RAX);

	vec_restore(e, vec, &l);
	dp_emit_mov_reg_reg(e, DP_REG_RSP, DP_REG_RBX);
	if (sahf)
		flags_restore(e);
	/* From here on nothing changes the flags: pops and lea. */
	for (int i = 15; i >= 0; i--) {
		if (push_order[i] == DP_REG_RSP)
			dp_emit_lea_rsp(e, 8);
		else
			dp_emit_pop_reg(e, push_order[i]);
	}
	if (sahf) {
		dp_emit_lea_rsp(e, 16 + RED_ZONE);	/* rip, rflags */
		return;
	}
	dp_emit_lea_rsp(e, 8);		/* rip */
	dp_emit_popfq(e);
	dp_emit_lea_rsp(e, RED_ZONE);
}

size_t dp_tramp_max_len(size_t nhooks, enum dp_vec_save vec)
{
	struct dp_vec_layout l = dp_vec_layout(vec);
	/* Per hook: a fixed part of ~210 bytes (bounded by 256 here), at most
	 * 11 bytes per vector register and 10 per mask register moved, both
	 * ways; per instruction at most ~45 bytes (an out-of-reach RIP-relative
	 * operand or call through memory), bounded by 64. */
	size_t hook = 256 + 2 * (l.nregs * 11 + l.nmask * 10);

	return nhooks * hook + DP_WINDOW_MAX_INSNS * 64 + 16;
}

/*
 * Whether the instruction does nothing at all: 0x90 alone (with REX.B it is
 * xchg r8, rax; with F3 it is pause) or 0F 1F /0, whose memory operand is
 * never accessed.  The trampoline need not copy it.
 */
static bool is_nop(const struct dp_insn *insn, const uint8_t *bytes)
{
	if (insn->len == 1)
		return bytes[0] == 0x90;
	return insn->enc == DP_ENC_LEGACY && insn->map == DP_MAP_0F &&
	       insn->opcode == 0x1f && insn->has_modrm && (insn->reg & 7) == 0 &&
	       !(insn->prefixes & ~(unsigned)(DP_PFX_OPSIZE | DP_PFX_ADSIZE | DP_PFX_SEG));
}

/*
 * The instruction of w that window instruction i, a jmp or jcc, goes to
 * when that is one of w's own past the first (a branch inside a window the
 * planner made around it, patch/redirect.c), else -1.  Its relocated copy
 * goes to that instruction's copy, hooks included: the original is
 * overwritten.  A branch to the first instruction keeps its target: the
 * patch leads there, to the same place.
 */
static int inner_target(const struct dp_window *w, unsigned i)
{
	const struct dp_insn *in = &w->insns[i];
	uint64_t t;

	if (!(in->attr & DP_ATTR_REL) || (in->flow != DP_FLOW_JMP && in->flow != DP_FLOW_JCC))
		return -1;
	t = dp_insn_target(in, w->addr + w->off[i]);
	for (unsigned m = 1; m < w->ninsns; m++)
		if (t == w->addr + w->off[m])
			return (int)m;
	return -1;
}

unsigned dp_window_inner_branches(const struct dp_window *w)
{
	unsigned n = 0;

	for (unsigned i = 0; i < w->ninsns; i++)
		n += inner_target(w, i) >= 0;
	return n;
}

int dp_tramp_build(struct dp_emit *e, const struct dp_window *w,
		   const struct dp_tramp_hook *hooks, size_t nhooks, dp_handler_fn handler,
		   enum dp_vec_save vec, struct dp_tramp *out, enum dp_reason *why)
{
	bool sahf = have_sahf();
	int inner[DP_WINDOW_MAX_INSNS], label[DP_WINDOW_MAX_INSNS];
	size_t placed = 0;
	int ret;

	*why = DP_REASON_NONE;
	out->entry = dp_emit_pc(e);
	for (unsigned i = 0; i < w->ninsns; i++)
		label[i] = -1;
	for (unsigned i = 0; i < w->ninsns; i++) {
		inner[i] = inner_target(w, i);
		if (inner[i] >= 0 && label[inner[i]] < 0)
			label[inner[i]] = dp_emit_label(e);
	}
	for (unsigned i = 0; i < w->ninsns; i++) {
		uint64_t at = w->addr + w->off[i];
		/* The lead's nops ran in place: their hooks come first. */
		uint64_t from = i ? at : at - w->lead;

		/* A thread moved here still runs the hooks of this instruction. */
		out->insn_at[i] = dp_emit_pc(e);
		if (label[i] >= 0)
			dp_emit_bind(e, label[i]);
		for (size_t h = 0; h < nhooks; h++) {
			if (hooks[h].addr >= from && hooks[h].addr <= at) {
				emit_hook(e, &hooks[h], handler, vec, sahf);
				placed++;
			}
		}
		if (is_nop(&w->insns[i], w->bytes + w->off[i]))
			continue;
		if (inner[i] >= 0)
			ret = dp_reloc_branch_label(e, &w->insns[i], label[inner[i]]);
		else
			ret = dp_reloc_insn(e, &w->insns[i], w->bytes + w->off[i], at, why);
		if (ret)
			return ret;
	}
	if (placed != nhooks)
		return -EINVAL;
	dp_emit_jmp(e, w->addr + w->len);
	ret = dp_emit_finish(e);
	out->len = dp_emit_pc(e) - out->entry;
	return ret;
}
