/*
 * EVEX validity rules: what the 62 payload may say for a given form
 * (vector length, masking, zeroing, broadcast, rounding, register ranges).
 * None of them changes an instruction's length; they decide whether it is
 * valid at all.
 *
 * The payload fields arrive decoded in struct dp_insn: l is L'L, evex_b is
 * EVEX.b, aaa and evex_z the masking, reg includes EVEX.R and R', vvvv
 * includes V', rm includes EVEX.B and (register forms) EVEX.X, and a VSIB
 * index includes EVEX.X and V'.
 */
#include <errno.h>

#include "x86/insn.h"
#include "x86/opcodes.h"

/* True when one of the form's explicit operands is a general register in ModRM.reg. */
static bool reg_is_gpr(const struct dp_opform *f)
{
	for (unsigned i = 0; i < 4; i++) {
		if (DP_OP_SRC(f->ops[i]) == DP_OPS_REG && (f->ops[i] & DP_OP_GPR))
			return true;
	}
	return false;
}

int dp_evex_check(const struct dp_insn *insn, const struct dp_opform *f)
{
	bool reg_form = insn->mod == 3;
	/* EVEX.b in a register form: L'L is rounding control, not a length. */
	bool rc = insn->evex_b && reg_form;

	/* Broadcast needs a memory operand that allows it; rounding/SAE a register form. */
	if (insn->evex_b && !(f->flags & (reg_form ? DP_OF_EVEX_ER : DP_OF_EVEX_B)))
		return -EINVAL;
	/* L'L = 3 is no vector length, even where the length is ignored. */
	if (insn->l == 3 && !rc)
		return -EINVAL;
	if ((f->flags & DP_OF_EVEX_SAE512) && !rc && insn->l != 2)
		return -EINVAL;

	/* Masking: k0 means none; `kz` forms merge too; zeroing needs a real mask. */
	if (insn->aaa && !(f->flags & (DP_OF_EVEX_K | DP_OF_EVEX_Z | DP_OF_EVEX_KREQ)))
		return -EINVAL;
	if (!insn->aaa && (f->flags & DP_OF_EVEX_KREQ))
		return -EINVAL;
	if (insn->evex_z && (!(f->flags & DP_OF_EVEX_Z) || !insn->aaa))
		return -EINVAL;

	/* Register ranges: k0-k7 in ModRM.reg, no R' for a general register. */
	if ((f->flags & DP_OF_EVEX_REGK) && insn->reg > 7)
		return -EINVAL;
	if ((insn->reg & 16) && reg_is_gpr(f))
		return -EINVAL;

	/* Forms whose destination may not overlap a source (gathers, complex FP16). */
	if (f->flags & DP_OF_EVEX_DISTINCT) {
		if ((insn->attr & DP_ATTR_VSIB) && insn->reg == insn->index)
			return -EINVAL;
		if ((f->flags & DP_OF_VVVV) && insn->reg == insn->vvvv)
			return -EINVAL;
		if (reg_form && insn->reg == insn->rm)
			return -EINVAL;
	}
	return 0;
}
