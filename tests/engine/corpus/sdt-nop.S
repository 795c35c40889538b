/* Classic SDT sites: a single nop (what <sys/sdt.h> writes) followed by
 * ordinary code.
 *
 * dp_c_sdt_nop: the nop, then a RIP-relative load and a jcc out of the
 * window: the jump displaces them with the nop.
 * long dp_c_sdt_nop(long x): x + 11 when x > 0, else x - dp_c_sdt_k (3)
 *
 * dp_c_sdt_nop_tgt: the nop is a loop head and so is the instruction after
 * it: no window can start at the nop, nor earlier (the nop is a target),
 * and two bytes do not fit either: an int3.
 * long dp_c_sdt_nop_tgt(long n): 3n for n >= 0 (n + 1 runs of the nop) */
#include "corpus.h"
FUNC(dp_c_sdt_nop)
	mov rax, rdi
SITE(dp_c_sdt_nop_site)
	nop
	mov rdx, [rip + dp_c_sdt_k]
	test rax, rax
	jle 1f
	add rax, 11
	ret
1:	sub rax, rdx
	ret
END(dp_c_sdt_nop)

FUNC(dp_c_sdt_nop_tgt)
	xor eax, eax
	mov rcx, rdi
	jmp 2f
1:	add rax, 3
	dec rcx
SITE(dp_c_sdt_nop_tgt_site)
2:	nop
3:	test rcx, rcx
	jg 1b
	cmp rcx, -100
	jl 3b
	ret
END(dp_c_sdt_nop_tgt)

	.section .rodata
	.p2align 3
dp_c_sdt_k:
	.quad 3
