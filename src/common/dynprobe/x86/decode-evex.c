/*
 * EVEX validity rules: what the 62 payload may say for a given form
 * (vector length, masking, zeroing, broadcast, rounding).  None of them
 * changes an instruction's length; they decide whether it is valid at all.
 */
#include <errno.h>

#include "x86/insn.h"
#include "x86/opcodes.h"

int dp_evex_check(const struct dp_insn *insn, const struct dp_opform *f)
{
	bool rc = insn->evex_b && insn->mod == 3;

	if (insn->l == 3 && !rc)
		return -EINVAL;
	if (insn->evex_b && !(f->flags & (insn->mod == 3 ? DP_OF_EVEX_ER : DP_OF_EVEX_B)))
		return -EINVAL;
	if (insn->aaa && !(f->flags & (DP_OF_EVEX_K | DP_OF_EVEX_KREQ)))
		return -EINVAL;
	if (!insn->aaa && (f->flags & DP_OF_EVEX_KREQ))
		return -EINVAL;
	if (insn->evex_z && !(f->flags & DP_OF_EVEX_Z))
		return -EINVAL;
	return 0;
}
