/* A ret that only a jcc rel8 reaches, boxed between fill after another ret
 * and a branch target (gzip's shape): no window fits it, not even the 2
 * bytes of a hop's rel8.  Redirected: the jcc's rel8 leads to a hop in the
 * fill, the hop to the trampoline; the ret's own byte stays as it was.
 * The ret is the function's second return site: no symbol names it (a
 * label whose address the program takes would be a target of its own).
 * long dp_c_redirect_ret(long x): -1 for x < 0, 2x for 0..100, 2x + 1 above */
#include "corpus.h"
FUNC(dp_c_redirect_ret)
	mov rax, -1
	test rdi, rdi
	js 1f
	lea rax, [rdi + rdi]
	cmp rdi, 100
	ja 2f
	ret
	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopw: fill nothing runs */
1:	ret
2:	add rax, 1
	ret
END(dp_c_redirect_ret)
