/* lea of a RIP-relative address first: the address, not a load, must be the
 * original one.  long dp_c_riprel_lea(long i): table[i & 7] */
#include "corpus.h"
FUNC(dp_c_riprel_lea)
	lea rax, [rip + table]
	and rdi, 7
	mov rax, qword ptr [rax + rdi * 8]
	ret
END(dp_c_riprel_lea)

	.section .rodata
	.p2align 3
table:
	.quad 3, 1, 4, 1, 5, 9, 2, 6
