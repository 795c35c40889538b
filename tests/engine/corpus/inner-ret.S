/* A ret that both falls through from the instruction before it and is the
 * target of a je rel8 just before, a branch target right after it, and no
 * fill within a rel8's reach (glibc's memrchr-avx2 shape): no hop serves
 * the je, so the window starts at the je itself, whose copy in the
 * trampoline goes to the ret's copy.
 * long dp_c_inner_ret(long x): 180 for x >= 100 (unsigned), else x + 108
 * for x even, 2x + 108 for x odd */
#include "corpus.h"
FUNC(dp_c_inner_ret)
	mov rax, rdi
	.rept 36
	add rax, 3
	.endr
	cmp rdi, 100
	jae 2f
	test dil, 1
	je 1f
	add rax, rdi
1:	ret
2:	xor eax, eax
	.rept 36
	add rax, 5
	.endr
	ret
END(dp_c_inner_ret)
	.fill 16, 1, 0xcc
