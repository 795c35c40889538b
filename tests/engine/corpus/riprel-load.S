/* A RIP-relative load is the first instruction: its disp32 must be re-aimed
 * from the trampoline.  long dp_c_riprel_load(long x): x + dp_c_load_val */
#include "corpus.h"
FUNC(dp_c_riprel_load)
	mov rax, qword ptr [rip + dp_c_load_val]
	add rax, rdi
	ret
END(dp_c_riprel_load)

	.data
	.p2align 3
	.globl dp_c_load_val
dp_c_load_val:
	.quad 0x123456789abcdef
