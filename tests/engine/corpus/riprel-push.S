/* push of a RIP-relative memory operand first: it reads memory and writes
 * the stack.  long dp_c_riprel_push(long x): dp_c_push_val + x */
#include "corpus.h"
FUNC(dp_c_riprel_push)
	push qword ptr [rip + dp_c_push_val]
	pop rax
	add rax, rdi
	ret
END(dp_c_riprel_push)

	.data
	.p2align 3
	.globl dp_c_push_val
dp_c_push_val:
	.quad 0x5151515151
