/* A RIP-relative store first: the relocated copy must write the original
 * variable.  long dp_c_riprel_store(long x): stores x to dp_c_store_slot,
 * returns 3x */
#include "corpus.h"
FUNC(dp_c_riprel_store)
	mov qword ptr [rip + dp_c_store_slot], rdi
	lea rax, [rdi + rdi * 2]
	ret
END(dp_c_riprel_store)

	.bss
	.p2align 3
	.globl dp_c_store_slot
dp_c_store_slot:
	.zero 8
