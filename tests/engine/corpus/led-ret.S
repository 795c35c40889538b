/* A ret that both falls through from the instruction before it and is the
 * target of jccs (glibc's iswalnum shape), a branch target right after it:
 * a window of 5 bytes must hold the ret past its first byte.  Its jccs,
 * rel8s, are led through a hop in the fill after the function to the ret's
 * relocated copy in the trampoline, before the window is written.
 * long dp_c_led_ret(long x): x + 1000 for -5, 0 for x >= 100 (unsigned)
 * or x even, (x >> 2) & 7 otherwise */
#include "corpus.h"
FUNC(dp_c_led_ret)
	xor eax, eax
	cmp rdi, -5
	je 2f
	cmp rdi, 100
	jae 1f
	test dil, 1
	je 1f
	mov rax, rdi
	shr rax, 2
	and eax, 7
1:	ret
2:	lea rax, [rdi + 1000]
	ret
END(dp_c_led_ret)
	.fill 16, 1, 0xcc
