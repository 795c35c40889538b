/* cmp of a RIP-relative operand with an imm32 first: the disp32 is relative
 * to the end of the instruction, after the immediate.
 * long dp_c_riprel_cmp_imm(void): dp_c_cmp_flag < 1000 (signed) */
#include "corpus.h"
FUNC(dp_c_riprel_cmp_imm)
	cmp dword ptr [rip + dp_c_cmp_flag], 1000
	setl al
	movzx eax, al
	ret
END(dp_c_riprel_cmp_imm)

	.data
	.p2align 2
	.globl dp_c_cmp_flag
dp_c_cmp_flag:
	.long 0
