/* A .cold part (an unwind entry, no symbol) packed against the next
 * function, entered only by a jcc rel32 of its hot part, a tail jcc that is
 * itself a return site with a window of its own; 144 bytes of code on
 * either side keep fill out of a rel8's reach.  No window or hop fits the
 * cold part's `xor eax, eax; pop rbx; ret`.  Redirected: the relocated jcc
 * in the hot part's trampoline leads to the cold part's; the site is the
 * cold ret, the cold part's one return site, its window the whole part.
 * long dp_c_redirect_cold(long x): 0 for x < 0, x + 24 * 0x1234 otherwise
 * long dp_c_redirect_next(long x): x + 24 * 0x1234 */
#include "corpus.h"
FUNC(dp_c_redirect_cold)
	push rbx
	mov rbx, rdi
	mov rax, rdi
	.rept 24
	add rax, 0x1234
	.endr
	test rbx, rbx
	.byte 0x0f, 0x88	/* js rel32 */
	.long .Lcold - (. + 4)
	pop rbx
	ret
END(dp_c_redirect_cold)
.Lcold:
	.cfi_startproc
	xor eax, eax
	pop rbx
	ret
	.cfi_endproc
	.globl dp_c_redirect_next
	.type dp_c_redirect_next, @function
dp_c_redirect_next:
	mov rax, rdi
	.rept 24
	add rax, 0x1234
	.endr
	ret
END(dp_c_redirect_next)
