/*
 * Relocation of one instruction (see reloc.h for the rules).
 */
#include <errno.h>
#include <string.h>

#include "x86/reloc.h"

/* The red zone a borrowed register must not be pushed into. */
#define RED_ZONE 128

enum dp_reason dp_reloc_check(const struct dp_insn *insn, bool *last_only)
{
	*last_only = false;
	if (insn->attr & DP_ATTR_VENDOR_AMBIGUOUS)
		return DP_REASON_INSN_AMBIGUOUS;
	if (insn->attr & DP_ATTR_PRIVILEGED)
		return DP_REASON_INSN_SYSTEM;
	switch (insn->flow) {
	case DP_FLOW_INT:
	case DP_FLOW_UD:
	case DP_FLOW_TRAP:
		return DP_REASON_INSN_TRAP;
	case DP_FLOW_FAR:
		return DP_REASON_INSN_FAR;
	case DP_FLOW_XBEGIN:
		return DP_REASON_INSN_XBEGIN;
	case DP_FLOW_SYSCALL:
		/* Only syscall itself (0f 05): the others fault in user mode. */
		if (insn->map != DP_MAP_0F || insn->opcode != 0x05)
			return DP_REASON_INSN_SYSTEM;
		*last_only = true;
		return DP_REASON_NONE;
	case DP_FLOW_CALL:
		*last_only = true;
		return DP_REASON_NONE;
	case DP_FLOW_CALL_IND:
		*last_only = true;
		/* The pushed return address would shift an rsp-based operand. */
		if (insn->mod != 3 && (insn->base == DP_REG_RSP))
			return DP_REASON_INSN_STACK_OPERAND;
		if (insn->mod == 3 && (insn->rm & 15) == DP_REG_RSP)
			return DP_REASON_INSN_STACK_OPERAND;
		break;
	default:
		break;
	}
	if ((insn->attr & DP_ATTR_RIPREL) && (insn->prefixes & DP_PFX_ADSIZE))
		return DP_REASON_INSN_EIPREL;
	return DP_REASON_NONE;
}

/* The condition of a jcc: the low nibble of 7x and of 0f 8x. */
static enum dp_cc insn_cc(const struct dp_insn *insn)
{
	return (enum dp_cc)(insn->opcode & 15);
}

/* Offset of the byte that holds REX.B, or of the VEX/EVEX/XOP byte with B̄. */
static int rex_b_byte(const struct dp_insn *insn)
{
	if (insn->enc == DP_ENC_LEGACY || insn->enc == DP_ENC_3DNOW)
		return insn->rex ? insn->nprefixes : -1;
	if (insn->vex_size >= 3)
		return insn->nprefixes + 1;
	return -1;
}

/*
 * Copies the instruction with its [rip + disp32] turned into [reg + 0]:
 * ModRM mod 00 -> 10 keeps the length, and B is cleared so that reg is one
 * of rax..rdi.
 */
static void copy_with_base(uint8_t *out, const struct dp_insn *insn, const uint8_t *bytes,
			   enum dp_reg reg)
{
	int b = rex_b_byte(insn);

	memcpy(out, bytes, insn->len);
	out[insn->modrm_off] = 0x80 | (bytes[insn->modrm_off] & 0x38) | (reg & 7);
	memset(out + insn->disp_off, 0, 4);
	if (b >= 0) {
		if (insn->enc == DP_ENC_LEGACY || insn->enc == DP_ENC_3DNOW)
			out[b] &= ~0x01;	/* REX.B = 0 */
		else
			out[b] |= 0x20;		/* B̄ = 1 */
	}
}

/* A free register among rax..rdi (never rsp: it would need a SIB byte). */
static int pick_scratch(const struct dp_insn *insn)
{
	uint16_t used = dp_insn_regs_used(insn);

	for (int r = DP_REG_RAX; r <= DP_REG_RDI; r++)
		if (r != DP_REG_RSP && !(used & (1u << r)))
			return r;
	return -1;
}

/*
 * jmp [abs] without a register: two pushes below the red zone, the pointer
 * loaded into the upper one, rax restored, and `ret 128` both jumps and
 * gives the red zone back.
 */
static void emit_jmp_through(struct dp_emit *e, uint64_t slot)
{
	dp_emit_lea_rsp(e, -RED_ZONE);
	dp_emit_push_reg(e, DP_REG_RAX);
	dp_emit_push_reg(e, DP_REG_RAX);
	dp_emit_mov_reg_imm64(e, DP_REG_RAX, slot);
	dp_emit_load(e, DP_REG_RAX, DP_REG_RAX, 0);
	dp_emit_store(e, DP_REG_RSP, 8, DP_REG_RAX);
	dp_emit_pop_reg(e, DP_REG_RAX);
	dp_emit_ret_imm16(e, RED_ZONE);
}

/* A RIP-relative instruction: re-aimed disp32, or through a scratch register. */
static int reloc_riprel(struct dp_emit *e, const struct dp_insn *insn, const uint8_t *bytes,
			uint64_t orig, enum dp_reason *why)
{
	uint64_t abs = orig + insn->len + insn->disp;
	uint64_t here = dp_emit_pc(e);
	uint8_t out[DP_INSN_MAX_LEN];
	int scratch;

	if (dp_rel32_reaches(here + insn->len, abs)) {
		int32_t d = (int32_t)(abs - (here + insn->len));

		memcpy(out, bytes, insn->len);
		memcpy(out + insn->disp_off, &d, 4);
		dp_emit_bytes(e, out, insn->len);
		return e->err;
	}

	/* jmp/call [rip + x]: no register needed. */
	if (insn->flow == DP_FLOW_JMP_IND) {
		emit_jmp_through(e, abs);
		return e->err;
	}
	if (insn->flow == DP_FLOW_CALL_IND) {
		dp_emit_push_imm64(e, orig + insn->len);
		emit_jmp_through(e, abs);
		return e->err;
	}
	if ((dp_insn_regs_used(insn) & (1u << DP_REG_RSP)) || (insn->attr & DP_ATTR_STACK)) {
		*why = DP_REASON_INSN_RIPREL_STACK;
		return -ENOTSUP;
	}
	scratch = pick_scratch(insn);
	if (scratch < 0) {
		*why = DP_REASON_INSN_NO_SCRATCH;
		return -ENOTSUP;
	}
	/* The instruction does not use rsp, so moving the stack is invisible to it. */
	copy_with_base(out, insn, bytes, scratch);
	dp_emit_lea_rsp(e, -RED_ZONE);
	dp_emit_push_reg(e, scratch);
	dp_emit_mov_reg_imm64(e, scratch, abs);
	dp_emit_bytes(e, out, insn->len);
	dp_emit_pop_reg(e, scratch);
	dp_emit_lea_rsp(e, RED_ZONE);
	return e->err;
}

int dp_reloc_insn(struct dp_emit *e, const struct dp_insn *insn, const uint8_t *bytes,
		  uint64_t orig, enum dp_reason *why)
{
	uint64_t next = orig + insn->len;
	uint64_t target = dp_insn_target(insn, orig);
	bool last_only;
	int taken, done;

	*why = dp_reloc_check(insn, &last_only);
	if (*why != DP_REASON_NONE)
		return -ENOTSUP;

	switch (insn->flow) {
	case DP_FLOW_JMP:
		dp_emit_jmp(e, target);
		return e->err;
	case DP_FLOW_JCC:
		dp_emit_jcc(e, insn_cc(insn), target);
		return e->err;
	case DP_FLOW_LOOP:
		/* No rel32 form: loop to a local jump, fall through past it. */
		taken = dp_emit_label(e);
		done = dp_emit_label(e);
		dp_emit_loop8_label(e, insn->opcode, insn->prefixes & DP_PFX_ADSIZE, taken);
		dp_emit_jmp8_label(e, done);
		dp_emit_bind(e, taken);
		dp_emit_jmp(e, target);
		dp_emit_bind(e, done);
		return e->err;
	case DP_FLOW_CALL:
		dp_emit_push_imm64(e, next);
		dp_emit_jmp(e, target);
		return e->err;
	case DP_FLOW_CALL_IND:
		if (insn->attr & DP_ATTR_RIPREL)
			return reloc_riprel(e, insn, bytes, orig, why);
		else {
			/* call r/m -> push the return address, jmp r/m (ModRM.reg 2 -> 4). */
			uint8_t out[DP_INSN_MAX_LEN];

			memcpy(out, bytes, insn->len);
			out[insn->modrm_off] = (bytes[insn->modrm_off] & ~0x38) | (4 << 3);
			dp_emit_push_imm64(e, next);
			dp_emit_bytes(e, out, insn->len);
			return e->err;
		}
	default:
		break;
	}
	if (insn->attr & DP_ATTR_RIPREL)
		return reloc_riprel(e, insn, bytes, orig, why);
	dp_emit_bytes(e, bytes, insn->len);
	return e->err;
}

int dp_reloc_branch_label(struct dp_emit *e, const struct dp_insn *insn, int label)
{
	if (!(insn->attr & DP_ATTR_REL))
		return -ENOTSUP;
	if (insn->flow == DP_FLOW_JMP)
		dp_emit_jmp_label(e, label);
	else if (insn->flow == DP_FLOW_JCC)
		dp_emit_jcc_label(e, insn_cc(insn), label);
	else
		return -ENOTSUP;
	return e->err;
}
